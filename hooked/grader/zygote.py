"""A warm process that forks grading workers. It imports torch and every lesson's checks once
(hooked.grader.worker.prepare), then, for each "fork" request, forks a child that answers the
worker's protocol (hooked.grader.worker.serve) on the same pipes, in the folder it is given and
in a session of its own. Each child is a copy of a process that has run no learner code, so
nothing one child's learner code does (a hook left behind, torch patched) reaches the next
child, and a child costs a fork instead of an import of torch. Started by hooked.grader.worker_processes,
on Linux only (elsewhere a fork after importing torch is not safe), as
`python -m hooked.grader.zygote [MODULE ...]`: the modules named are imported before any fork.

Requests:  {"op": "fork", "folder": ..., "display_root": ...}
Replies:   {"event": "ready"} once prepared; then the child's replies, the first of them
           {"event": "ready", "pid": ...}; then, when the child has ended,
           {"event": "ended", "last_words": [the last lines it wrote on stdout or stderr]}.
"""

import gc
import importlib
import json
import os
import signal
import sys
import tempfile
import traceback

from hooked.grader import worker

_LAST_WORDS = 20


def _read_line(fd):
    """One request, read a byte at a time: the zygote must not read ahead into requests that
    its next child will read from the same pipe."""
    data = bytearray()
    while True:
        byte = os.read(fd, 1)
        if not byte:
            return None
        if byte == b"\n":
            return data.decode("utf-8")
        data += byte


def _last_words(file):
    file.seek(0)
    lines = file.read().decode("utf-8", errors="replace").splitlines()
    return [line.rstrip() for line in lines[-_LAST_WORDS:]]


def _child(requests_fd, replies, last_words, request, missing_checks):
    """The forked worker: never returns."""
    try:
        os.setsid()  # stopping the child's session stops whatever its learner code started
        os.dup2(last_words.fileno(), 1)
        os.dup2(last_words.fileno(), 2)
        folder = request["folder"]
        os.chdir(folder)
        sys.path.insert(0, folder)  # the learner's own helper modules import as in Jupyter
        os.environ["HOOKED_DISPLAY_ROOT"] = request["display_root"]
        sys.dont_write_bytecode = True  # nothing written beside the learner's files
        worker._end_with_the_grader()  # here: the zygote, which ends with the grader
        send = worker.sender(replies)
        send({"event": "ready", "pid": os.getpid()})
        requests = os.fdopen(requests_fd, "r", encoding="utf-8", closefd=False)
        worker.serve(requests, send, missing_checks)
    except BaseException:  # the course's bug, or the end of the pipe: in its last words
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.killpg(os.getpid(), signal.SIGKILL)


def main():
    worker._end_with_the_grader()
    requests_fd, replies = worker.private_channels()  # read a byte at a time below, never buffered
    send = worker.sender(replies)
    missing_checks = worker.prepare()
    for module in sys.argv[1:]:  # what the checks (or learners' code) would import in every child
        importlib.import_module(module)
    gc.freeze()  # what those imports made is kept for good, as prepare() keeps torch
    send({"event": "ready"})
    while (line := _read_line(requests_fd)) is not None:
        request = json.loads(line)
        if request.get("op") != "fork":
            continue  # a request that the child before never read: it had ended
        with tempfile.TemporaryFile() as last_words:
            pid = os.fork()
            if pid == 0:
                _child(requests_fd, replies, last_words, request, missing_checks)
            os.waitpid(pid, 0)
            send({"event": "ended", "last_words": _last_words(last_words)})
    os.killpg(os.getpid(), signal.SIGKILL)  # the grader is done or gone


if __name__ == "__main__":
    main()
