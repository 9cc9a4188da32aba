"""The process that runs a learner's code. The grader (hooked.grader.engine) starts it,
sends it one JSON request per line and waits for its replies with a time limit;
when learner code never returns, the grader kills this process and starts
another, which works the same on Linux, macOS and Windows.

Requests:  {"op": "load", "lesson": ..., "cells": [{"source", "filename", "first_line"}, ...],
            "skip": [indices of cells not to run]}
           {"op": "check", "exercise": ..., "where": the line that defines it, as the grader shows it}
           {"op": "done"}: no more requests
Replies:   {"event": "ready"} once torch is imported; {"event": "cell", "index": k} before
           each cell runs; {"event": "loaded", "cell_errors": {k: "raised ..."}, "output": ...};
           {"event": "result", "status": ..., "message": ..., "mistake": ..., "output": ...}.
"""

import contextlib
import gc
import io
import json
import linecache
import os
import signal
import sys
import threading
import time

from hooked.grader.tamper_guard import TamperGuard


def _leads_its_group():
    return os.name != "nt" and os.getpgid(0) == os.getpid()  # as the grader starts it (start_new_session)


def _end_with_the_grader():
    """Stop this process, and whatever the learner's code started, when the grader that
    started it is gone (killed, so that it could not stop us): no worker outlives a run."""
    if not _leads_its_group():
        return
    grader = os.getppid()

    def watch():
        while os.getppid() == grader:
            time.sleep(1.0)
        os.killpg(os.getpid(), signal.SIGKILL)  # our own process group

    threading.Thread(target=watch, daemon=True).start()


# The grading machinery as prepare() left it; created here, not in prepare(), so that capturing it
# does not itself change this module. Grading processes forked after prepare() share it.
_TAMPER_GUARD = TamperGuard()
# The namespace that the last lesson's cells made, and what they changed in the grading machinery as
# they ran: every exercise of a lesson whose cells did is left ungraded, whichever is checked first.
_LAST_LOAD = {"namespace": None, "changes": []}


def prepare():
    """Import torch and every lesson's checks (before learner code can disturb imports);
    return {lesson: the checks module it lacks} for an author's draft without checks yet."""
    # No cyclic collection while torch and the checks are imported: the collections their
    # allocations set off cost about a tenth of the import (`python -c "import torch"` 1.30 s,
    # 1.15 s with the collector off; median of 5 here) and find little garbage (about 7,000 of
    # 256,000 objects, which the freeze below then keeps for the worker's life: collecting them
    # first would cost 0.13 s, what the change saves).
    collecting = gc.isenabled()
    gc.disable()
    try:
        missing_checks = _import_torch_and_checks()
        # Last, before any learner code: what check_exercise holds the grading machinery to.
        _TAMPER_GUARD.capture(also=[sys.modules[__name__]])
        return missing_checks
    finally:
        # Python's cyclic garbage collector would go through torch's hundreds of thousands of objects
        # at each full collection (60-80 ms each, at moments set by how much the checks allocate);
        # none of them is garbage, so they are set aside. What learner code and checks make is
        # collected as before. (Cold, lesson 04's checks cost 105 ms of CPU with them, 30 ms without.)
        gc.freeze()
        if collecting:
            gc.enable()


def _import_torch_and_checks():
    import torch  # the slow import, done once, before "ready"

    # Checks use small tensors, for which a second thread only costs: on a busy machine
    # (another process on the other core) two threads made a tiny forward and backward
    # 400 times slower (39 ms instead of 0.08 ms). Isolation restores this count after each check.
    torch.set_num_threads(1)

    # The course's own bytecode files may be written, in its package, if the grader's process
    # may write them: compiling its 10,000 lines of checks costs 80 ms at every start. Learner
    # code never may (the grader starts us with PYTHONDONTWRITEBYTECODE), nor torch (installed
    # with its bytecode).
    learner_setting = sys.dont_write_bytecode
    sys.dont_write_bytecode = learner_setting and os.environ.get("HOOKED_COURSE_BYTECODE") != "1"
    missing_checks = {}  # lesson name -> the checks module it lacks
    try:
        from hooked.checks.optimizers import skip_dynamo_import_in_optimizers_for_good
        skip_dynamo_import_in_optimizers_for_good()  # saves 1 s in checks that build an optimizer

        from hooked.grader.check_registry import checks_for_lesson
        from hooked.grader import named_mistakes  # noqa: F401  (serve() describes the mistakes found)
        from hooked.course import lessons
        # What run_cells and check_exercise use, imported here so that the tamper guard holds them too.
        import hooked.grader.check_runner  # noqa: F401
        import hooked.lesson_files.learner_lesson  # noqa: F401

        for record in lessons():
            try:
                checks_for_lesson(record.name)
            except ModuleNotFoundError as error:
                if error.name != record.checks_module:
                    raise
                missing_checks[record.name] = record.checks_module
    finally:
        sys.dont_write_bytecode = learner_setting
    return missing_checks


def run_cells(lesson, cells, skip=(), before_cell=lambda index: None):
    """Run a lesson's exercise cells ({"source", "filename", "first_line"} each) in a fresh
    namespace, torch's global state restored afterwards; return (namespace, {index: what
    went wrong}, what they printed). before_cell(index) is called before each cell runs."""
    # The course's modules are imported in prepare(), where their bytecode may be written; named here.
    from hooked.checks.isolation import torch_state_restored
    from hooked.feedback.learner_tracebacks import describe_learner_error
    from hooked.lesson_files.learner_lesson import Cell, compile_cell

    output = io.StringIO()
    namespace = {"__name__": f"lesson_{lesson}", "__builtins__": __builtins__}
    cell_errors = {}
    with torch_state_restored(), contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        for index, fields in enumerate(cells):
            if index in skip:
                continue
            before_cell(index)
            cell = Cell(fields["source"], fields["filename"], fields["first_line"], {})
            if not os.path.exists(cell.filename):  # a notebook cell: let tracebacks find its lines
                text = "\n" * (cell.first_line - 1) + cell.source + "\n"
                linecache.cache[cell.filename] = (len(text), None, text.splitlines(True), cell.filename)
            try:
                exec(compile_cell(cell), namespace)
            except SystemExit as error:
                cell_errors[index] = f"called sys.exit({error.code!r})"
            except BaseException as error:  # KeyboardInterrupt and the like are the learner's too
                cell_errors[index] = f"raised {describe_learner_error(error)}"
    return namespace, cell_errors, output.getvalue()


def check_exercise(lesson, exercise, namespace, where=None, missing_checks=None):
    """(Result, what was printed) of checking `exercise` as the lesson's cells defined it: "error", the
    mistake "tampered", when learner code changed the grading machinery, which is then put back."""
    load_changes = _tampering_of_load(namespace)  # first: the imports below go through the machinery
    # Imported in prepare() already, as in run_cells.
    from hooked.grader.check_runner import named_mistake
    from hooked.feedback.learner_tracebacks import describe_learner_error
    from hooked.feedback.verdict import Result

    if load_changes:
        return _tampered(lesson, exercise, load_changes, "as the lesson's exercise cells ran"), ""
    output = io.StringIO()
    changes = []
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            if lesson in (missing_checks or {}):
                result = Result(lesson, exercise, "error",
                                f"lesson {lesson} has no checks yet: the course lacks the module "
                                f"{missing_checks[lesson]} (README, 'Add a lesson', step 2).")
            else:
                result = _run_watched_check(lesson, exercise, namespace.get(exercise), where, changes)
        except BaseException as error:  # escaped the check: KeyboardInterrupt, a broken __str__, ...
            result = Result(lesson, exercise, "failed",
                            f"while checking {exercise}, your code raised {describe_learner_error(error)}",
                            mistake=named_mistake(lesson, exercise, "raised"))
    changes += [change for change in _TAMPER_GUARD.changes() if change not in changes]
    if changes:
        _TAMPER_GUARD.restore()
        return _tampered(lesson, exercise, changes, f"while {exercise} was checked"), output.getvalue()
    return result, output.getvalue()


def _run_watched_check(lesson, exercise, obj, where, changes):
    """run_exercise_check, adding to `changes` what the guard finds as the check ends: inside the
    check's torch_state_restored, which puts replaced torch functions back before the check returns."""
    from hooked.grader.check_registry import checks_for_lesson
    from hooked.grader.check_runner import run_check, run_exercise_check

    check = checks_for_lesson(lesson).get(exercise)
    if check is None:
        return run_exercise_check(lesson, exercise, obj, where)  # which says the course has no check

    def watched_check(learner_object):
        try:
            check(learner_object)
        finally:
            changes.extend(_TAMPER_GUARD.changes())
    return run_check(lesson, exercise, watched_check, obj, where)


def _tampering_of_load(namespace):
    """What the cells that made `namespace` changed in the grading machinery as they ran (then put
    back): looked for before its first exercise is checked; each check looks again as it ends."""
    if _LAST_LOAD["namespace"] is not namespace:
        changes = _TAMPER_GUARD.changes()
        if changes:
            _TAMPER_GUARD.restore()
        _LAST_LOAD.update(namespace=namespace, changes=changes)
    return _LAST_LOAD["changes"]


def _tampered(lesson, exercise, changes, when):
    from hooked.grader.check_runner import named_mistake
    from hooked.feedback.verdict import Result

    shown = "; ".join(changes[:5]) + (f"; and {len(changes) - 5} more" if len(changes) > 5 else "")
    return Result(lesson, exercise, "error",
                  f"your code changed the grading machinery {when}: {shown}. A verdict reached with changed "
                  f"checks, or changed torch functions that they rely on, cannot be trusted, so {exercise} is not "
                  "graded. Remove the code that replaces them.",
                  mistake=named_mistake(lesson, exercise, "tampered"))


def private_channels():
    """(the file descriptor of requests, replies): private copies of stdin and stdout for the
    protocol. The real ones then point elsewhere (stdin at nothing, stdout at stderr), so nothing
    the learner's code prints or reads can disturb the protocol."""
    requests = os.dup(0)
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.stdin = open(os.devnull, encoding="utf-8")
    return requests, replies


def serve(requests, send, missing_checks):
    """Answer "load" and "check" requests until "done" or the end of `requests`."""
    from hooked.grader.named_mistakes import described  # imported in prepare(), as in run_cells

    # Held here, before any learner code runs: code that rebinds the module's names (to forge a
    # verdict) does not change what this loop calls.
    load, check = run_cells, check_exercise
    lesson, namespace = None, {}
    for line in requests:
        request = json.loads(line)
        if request["op"] == "load":
            lesson = request["lesson"]
            namespace, cell_errors, output = load(
                lesson, request["cells"], request["skip"], lambda index: send({"event": "cell", "index": index}))
            send({"event": "loaded", "cell_errors": cell_errors, "output": output})
        elif request["op"] == "check":
            result, output = check(lesson, request["exercise"], namespace, request.get("where"), missing_checks)
            send({"event": "result", "status": result.status, "message": result.message,
                  "mistake": result.mistake, "mistake_what": described(lesson, result.exercise, result.mistake),
                  "output": output})
        elif request["op"] == "done":
            return


def sender(replies):
    def send(message):
        replies.write(json.dumps(message) + "\n")
        replies.flush()
    return send


def main():
    _end_with_the_grader()
    requests, replies = private_channels()
    requests = os.fdopen(requests, "r", encoding="utf-8")
    send = sender(replies)
    missing_checks = prepare()
    sys.path.insert(0, os.getcwd())  # the lessons folder: a learner's own helper modules import as in Jupyter

    send({"event": "ready"})
    serve(requests, send, missing_checks)
    # No more requests: the grader is done or gone. Whatever the learner's code started goes too.
    if _leads_its_group():
        os.killpg(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
