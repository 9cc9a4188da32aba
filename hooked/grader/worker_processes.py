"""The processes that run learner code for the grader (hooked.grader.engine), and how they
start. On Linux a warm zygote (hooked.grader.zygote) imports torch and the checks once and forks
the workers: a fresh worker (another learner's, or one in place of a worker that hung or crashed)
costs a fork, not an import of torch. Elsewhere, where a fork after importing torch is not safe,
each worker is a new Python process (hooked.grader.worker) that imports torch itself. Either way
a worker grades the lessons of one folder, one after another.

Both kinds answer the same protocol (hooked.grader.worker) and have the same methods: send(),
receive(timeout), stop(), and `stderr_tail`, what the worker last wrote on stderr."""

import collections
import json
import os
import queue
import signal
import subprocess
import sys
import threading

from hooked.course import ROOT

STARTUP_LIMIT = 300.0  # importing torch on a cold, busy machine
_STOP_LIMIT = 30.0  # for the zygote to see a stopped child end
START_VARIABLE = "HOOKED_WORKER_START"  # "fork" or "spawn"; by default fork on Linux


class Timeout(Exception):
    """The worker gave no reply within the time limit."""


class Stopped(Exception):
    """The worker ended (or its pipe closed) before it replied."""


def forks_workers():
    wanted = os.environ.get(START_VARIABLE, "")
    if wanted in ("fork", "spawn"):
        return wanted == "fork"
    return sys.platform.startswith("linux")


class _Process:
    """A Python process running `module`, and the threads that read what it says. It runs in
    `folder` and in a process group of its own, so that stopping it also stops any process the
    learner's code started."""

    def __init__(self, module, folder, arguments=()):
        # No bytecode files: importing a helper module beside the lessons must not write there.
        # The course's own modules may keep theirs, as in this process (hooked.grader.worker).
        env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1",
                   HOOKED_DISPLAY_ROOT=os.environ.get("HOOKED_DISPLAY_ROOT") or os.getcwd(),
                   HOOKED_COURSE_BYTECODE="0" if sys.dont_write_bytecode else "1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        if os.name == "nt":
            group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        else:
            group = {"start_new_session": True}
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, *arguments], env=env, cwd=folder,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", errors="replace", **group)
        self.replies = queue.Queue()
        self.stderr_tail = collections.deque(maxlen=20)
        self.ready = False
        threading.Thread(target=self._read_replies, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_replies(self):
        for line in self.process.stdout:
            try:
                self.replies.put(json.loads(line))
            except ValueError:  # not the protocol's: a line the learner's code wrote on our pipe
                continue
        self.replies.put(None)

    def _read_stderr(self):
        for line in self.process.stderr:
            self.stderr_tail.append(line.rstrip())

    def send(self, message):
        if not self.ready:
            self.receive(STARTUP_LIMIT)  # the "ready" event
            self.ready = True
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (OSError, ValueError) as error:
            raise Stopped() from error

    def receive(self, timeout):
        try:
            reply = self.replies.get(timeout=timeout)
        except queue.Empty:
            raise Timeout() from None
        if reply is None:
            self.replies.put(None)  # for every later receive
            self.process.wait()
            raise Stopped()
        return reply

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        if os.name != "nt":
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # the process and whatever it started
            except (ProcessLookupError, PermissionError):
                pass
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        try:
            self.process.stdin.close()
        except OSError:
            pass
        # stdout and stderr are left to their reader threads: closing a pipe that
        # a thread is reading would wait for every process that still holds it.


class SpawnedWorkers:
    """Workers that are Python processes of their own, each importing torch."""

    def __init__(self):
        self._ahead = None  # a worker started before it was asked for, importing torch meanwhile

    def start(self, folder):
        if self._ahead is None:
            self._ahead = _Process("hooked.grader.worker", folder)

    def new_worker(self, folder):
        worker, self._ahead = self._ahead, None
        if worker is None or not worker.alive():
            worker = _Process("hooked.grader.worker", folder)
        return worker

    def close(self):
        if self._ahead is not None:
            self._ahead.stop()
            self._ahead = None

    def pids(self):
        return [self._ahead.pid] if self._ahead is not None else []


class _ForkedWorker:
    """A worker forked by a zygote; it talks through the zygote's pipes."""

    def __init__(self, zygote, folder):
        self.zygote = zygote
        self.stderr_tail = collections.deque(maxlen=20)
        self.pid = None
        self.ended = False
        zygote.send({"op": "fork", "folder": os.path.abspath(folder),
                     "display_root": os.environ.get("HOOKED_DISPLAY_ROOT") or os.getcwd()})
        self.pid = self.receive(STARTUP_LIMIT)["pid"]

    def send(self, message):
        if self.ended:
            raise Stopped()
        self.zygote.send(message)

    def receive(self, timeout):
        if self.ended:
            raise Stopped()
        reply = self.zygote.receive(timeout)
        if reply.get("event") == "ended":
            self.ended = True
            self.stderr_tail.extend(reply["last_words"])
            raise Stopped()
        return reply

    def stop(self):
        """Stop the child and whatever its code started, and wait for the zygote to see it end."""
        if self.pid is not None and not self.ended:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            while not self.ended:  # replies the child sent before it was stopped, then "ended"
                self.receive(_STOP_LIMIT)
        except Stopped:
            pass
        except Timeout:  # the zygote no longer answers: ForkedWorkers starts another
            self.zygote.stop()


class ForkedWorkers:
    """Workers forked by one warm zygote, which imports `imports` (module names) too before it
    forks any."""

    def __init__(self, imports=()):
        self._zygote = None
        self._imports = tuple(imports)

    def start(self, folder=None):
        if self._zygote is None or not self._zygote.alive():
            # The zygote runs no learner code; it starts in the course's folder.
            self._zygote = _Process("hooked.grader.zygote", str(ROOT), self._imports)

    def new_worker(self, folder):
        self.start()
        return _ForkedWorker(self._zygote, folder)

    def close(self):
        if self._zygote is not None:
            self._zygote.stop()
            self._zygote = None

    def pids(self):
        return [self._zygote.pid] if self._zygote is not None else []


def worker_source(imports=()):
    """Where workers come from; `imports`: modules a forked worker's zygote imports first."""
    return ForkedWorkers(imports) if forks_workers() else SpawnedWorkers()
