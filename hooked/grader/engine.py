"""Grade exercises of a folder of lessons. Learner code runs in a separate
process (hooked.grader.worker) so that a loop that never ends can be stopped
after a time limit, on any operating system, and the rest of the run goes on."""

import collections
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from hooked.course import ROOT
from hooked.lesson_files.display_paths import display_path
from hooked.grader.plan import assign, worker_count
from hooked.lesson_files.learner_lesson import load_lesson_source
from hooked.feedback.verdict import Result
from hooked.grader.check_runner import named_mistake

_STARTUP_LIMIT = 300.0  # importing torch on a cold, busy machine


class _Timeout(Exception):
    pass


class _Stopped(Exception):
    pass


class _Worker:
    """One grading process, and the threads that read what it says. It runs in the
    lessons folder (as Jupyter does) and in a process group of its own, so that
    stopping it also stops any process the learner's code started."""

    def __init__(self, lessons_dir):
        # No bytecode files: importing a helper module beside the lessons must not write there.
        # The course's own modules may keep theirs, as in this process (hooked.grader.worker).
        env = dict(os.environ, PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1",
                   HOOKED_DISPLAY_ROOT=os.getcwd(), HOOKED_COURSE_BYTECODE="0" if sys.dont_write_bytecode else "1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        if os.name == "nt":
            group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        else:
            group = {"start_new_session": True}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hooked.grader.worker"], env=env, cwd=lessons_dir,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", errors="replace", **group)
        self.replies = queue.Queue()
        self.stderr_tail = collections.deque(maxlen=20)
        self.lesson = None
        self.ready = False
        threading.Thread(target=self._read_replies, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_replies(self):
        for line in self.process.stdout:
            self.replies.put(json.loads(line))
        self.replies.put(None)

    def _read_stderr(self):
        for line in self.process.stderr:
            self.stderr_tail.append(line.rstrip())

    def send(self, message):
        if not self.ready:
            self.receive(_STARTUP_LIMIT)  # the "ready" event
            self.ready = True
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except OSError as error:
            raise _Stopped() from error

    def receive(self, timeout):
        try:
            reply = self.replies.get(timeout=timeout)
        except queue.Empty:
            raise _Timeout() from None
        if reply is None:
            self.process.wait()
            raise _Stopped()
        return reply

    def stop(self):
        if os.name != "nt":
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # the worker and whatever it started
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


class _Closed(Exception):
    """The grader was closed while a lane was grading (Ctrl-C, the end of the run)."""


class _Lane:
    """One worker process and what it has loaded: grades exercises one after another,
    each with its time limit, and replaces its worker when it hangs or dies. Lanes share
    nothing, so a loop that never ends in one lesson costs only that lesson its limit."""

    def __init__(self, lessons_dir, time_limit):
        self.lessons_dir = lessons_dir
        self.time_limit = time_limit
        self.lock = threading.RLock()  # one request at a time: planned ones and asked ones
        self.closed = False
        self._spawn_lock = threading.Lock()  # close() and a restart never cross: no worker is left behind
        self._load_outcomes = {}  # lesson -> ("ok", cell_errors, output) | ("problem", message)
        self._stopped_cells = {}  # lesson -> {cell index: why it was stopped}
        self._worker = None

    def start(self):
        with self._spawn_lock:
            if self.closed:
                raise _Closed()
            if self._worker is None:
                self._worker = _Worker(self.lessons_dir)

    def close(self):
        with self._spawn_lock:
            self.closed = True
            worker = self._worker
        if worker is not None:
            worker.stop()

    def forget(self, lesson):
        for cache in (self._load_outcomes, self._stopped_cells):
            cache.pop(lesson, None)

    def grade(self, source, exercise):
        with self.lock:
            return self._grade(source, exercise)

    def _grade(self, source, exercise):
        lesson = source.lesson
        shown = display_path(source.graded_file)

        location = ""

        def result(status, message, output="", mistake=None):
            return Result(lesson, exercise, status, message, source.graded_file, output, location,
                          named_mistake(lesson, exercise, mistake))

        if source.problem:
            return result("error", source.problem)
        if source.syntax_error:
            return result("error", f"{shown} has a syntax error, so its exercises cannot be graded: "
                                   f"{source.syntax_error}")
        cell = source.cell_defining(exercise)
        if cell is None:
            return result("error", _missing_message(source, exercise, shown))
        location = f"{display_path(cell.filename)} line {cell.defines[exercise]}"
        outcome = self._load(lesson, source)
        if outcome[0] == "problem":
            return result("error", outcome[1])
        _, cell_errors, load_output = outcome
        index = str(source.cells.index(cell))
        if index in cell_errors:
            return result("error", f"running the exercise cell that defines {exercise} {cell_errors[index]}",
                          load_output)
        try:
            self._worker.send({"op": "check", "exercise": exercise, "where": location})
            reply = self._worker.receive(self.time_limit)
        except _Timeout:
            self._restart()
            return result("failed", f"{exercise} took longer than {self.time_limit:g} s to check and was stopped. "
                                    "Look for a loop that never ends (or a very slow computation) in your code; "
                                    "the limit can be raised with --time-limit SECONDS.", mistake="timed-out")
        except _Stopped:
            tail = self._restart()
            return result("failed", f"the grading process stopped while checking {exercise}: your code may have "
                                    f"ended the interpreter (os._exit) or crashed it.{tail}", mistake="crashed")
        message = reply["message"]
        elsewhere = source.untagged_definitions.get(exercise)
        if elsewhere and reply["status"] != "passed":
            message += (f" Note: {elsewhere} also defines {exercise}, but it is not an exercise cell, so the "
                        "grader does not run it; write your code in the exercise cell.")
        return Result(lesson, exercise, reply["status"], message, source.graded_file, reply["output"], location,
                      reply.get("mistake"))

    def _load(self, lesson, source):
        """Run the lesson's exercise cells in the worker (once per worker). A cell that
        runs too long, or ends the process, is stopped and skipped; the rest still run."""
        if lesson in self._load_outcomes and self._worker and self._worker.lesson == lesson:
            return self._load_outcomes[lesson]
        self.start()
        cells = [{"source": cell.source, "filename": cell.filename, "first_line": cell.first_line}
                 for cell in source.cells]
        stopped = self._stopped_cells.setdefault(lesson, {})  # cell index -> what happened; never rerun
        while True:
            current = None
            try:
                self._worker.send({"op": "load", "lesson": lesson, "cells": cells, "skip": sorted(stopped)})
                while True:
                    reply = self._worker.receive(self.time_limit)
                    if reply["event"] == "cell":
                        current = reply["index"]
                    elif reply["event"] == "loaded":
                        break
            except _Timeout:
                self._restart()
                if current is None:
                    return ("problem", f"the grading process did not answer within {self.time_limit:g} s.")
                stopped[current] = (f"took longer than {self.time_limit:g} s and was stopped. Look for a loop "
                                    "that never ends at the top level of that cell.")
                continue
            except _Stopped:
                tail = self._restart()
                if current is None:
                    return ("problem", f"the grading process stopped before running the exercise cells of "
                                       f"{display_path(source.graded_file)}.{tail}")
                stopped[current] = ("stopped the grading process: it ended the interpreter (os._exit) or "
                                    f"crashed it.{tail}")
                continue
            break
        self._worker.lesson = lesson
        cell_errors = dict(reply["cell_errors"], **{str(index): text for index, text in stopped.items()})
        self._load_outcomes[lesson] = ("ok", cell_errors, reply["output"])
        return self._load_outcomes[lesson]

    def _restart(self):
        """Replace a stopped or stuck worker; return what it last printed on stderr."""
        tail = ""
        if self._worker is not None:
            self._worker.stop()
            time.sleep(0.05)  # let the stderr reader drain
            if self._worker.stderr_tail:
                tail = "\nIts last words:\n  " + "\n  ".join(self._worker.stderr_tail)
        with self._spawn_lock:
            if self.closed:
                raise _Closed()
            self._worker = _Worker(self.lessons_dir)
        return tail


def _missing_message(source, exercise, shown):
    where = source.untagged_definitions.get(exercise)
    if where:
        return (f"{exercise} is defined in {where}, which is not an exercise cell; the grader runs only "
                f"cells tagged 'exercise'. Write {exercise} in its exercise cell (it starts with "
                "'# Exercise:').")
    return (f"{exercise} is missing: no exercise cell of {shown} defines it at the top level. "
            f"Was it renamed or deleted? Keep the name {exercise} and its signature.")


class _Pending:
    """The result of a planned grade, which a lane's thread fills in."""

    def __init__(self, lesson, exercise):
        self.lesson, self.exercise = lesson, exercise
        self.cancelled = False  # the lesson was saved again: graded afresh when asked for
        self._done = threading.Event()
        self._result = self._error = None

    def set(self, result=None, error=None):
        self._result, self._error = result, error
        self._done.set()

    def wait(self):
        while not self._done.wait(0.5):  # in slices, so that Ctrl-C is seen at once on every system
            pass
        if self._error is not None:
            raise self._error
        return self._result


class Grader:
    """grade(lesson, exercise) -> Result, for the lessons in `lessons_dir`, each exercise's code
    stopped after `time_limit` seconds (the front ends read it from --time-limit).

    start(plan) with the (lesson, exercise) pairs about to be asked for, in order, starts one
    worker per core (hooked.grader.plan), gives each worker whole lessons so that they finish
    together, and grades ahead: grade() then waits for its result. The results, their
    messages and the order they are asked for are the same with one worker as with many."""

    def __init__(self, lessons_dir, time_limit):
        self.lessons_dir = lessons_dir
        self.time_limit = time_limit
        self._sources = {}
        self._sources_lock = threading.Lock()
        self._lanes = []
        self._planned = False
        self._lane_of = {}   # lesson -> the lane that grades it
        self._pending = {}   # (lesson, exercise) -> _Pending, for the plan's pairs not yet asked for

    def prestart(self, workers):
        """Start `workers` workers before the plan is known (pytest, before it collects);
        start(plan) keeps those it needs and stops the others."""
        if not self._lanes:
            self._lanes = [_Lane(self.lessons_dir, self.time_limit) for _ in range(max(1, workers))]
            for lane in self._lanes:
                lane.start()

    def start(self, plan=None):
        """Start the workers now, so that torch imports while other work goes on; with a
        `plan`, grade its pairs ahead, each lesson on one of the workers."""
        if self._planned:
            return
        self._planned = True
        plan = list(dict.fromkeys(plan or []))
        lessons = list(dict.fromkeys(lesson for lesson, _ in plan))
        # As many workers as were started before the plan was known (decided once, at that
        # moment's load), or as worker_count says now; never more than there are lessons.
        workers = min(len(self._lanes), len(lessons)) if self._lanes else worker_count(len(lessons))
        shares = assign(plan, max(1, workers)) if plan else [[]]
        for lane in self._lanes[len(shares):]:  # started before the plan was known, and not needed
            lane.close()
        self._lanes = self._lanes[:len(shares)]
        self._lanes += [_Lane(self.lessons_dir, self.time_limit) for _ in shares[len(self._lanes):]]
        pendings_of_lanes = []
        for lane, share in zip(self._lanes, shares):
            lane.start()
            pendings_of_lanes.append([])
            for lesson, exercise in share:
                self._lane_of[lesson] = lane
                self._pending[(lesson, exercise)] = _Pending(lesson, exercise)
                pendings_of_lanes[-1].append(self._pending[(lesson, exercise)])
        for lane, pendings in zip(self._lanes, pendings_of_lanes):
            if pendings:
                threading.Thread(target=self._grade_ahead, args=(lane, pendings), daemon=True).start()

    def _grade_ahead(self, lane, pendings):
        for pending in pendings:
            if pending.cancelled:
                continue
            try:
                pending.set(lane.grade(self.source(pending.lesson), pending.exercise))
            except _Closed:
                return
            except BaseException as error:  # a bug in the course: the test that asks for it shows it
                pending.set(error=error)

    def close(self):
        for lane in self._lanes:
            lane.close()
        self._lanes, self._lane_of, self._pending = [], {}, {}
        self._planned = False  # a grade after close starts afresh

    def forget(self, lesson):
        """Read and run `lesson` afresh at its next grade (it was saved again); the workers,
        with torch imported, are kept."""
        with self._sources_lock:
            self._sources.pop(lesson, None)
        for key in [key for key in self._pending if key[0] == lesson]:
            self._pending.pop(key).cancelled = True
        for lane in self._lanes:
            lane.forget(lesson)

    def source(self, lesson):
        with self._sources_lock:
            if lesson not in self._sources:
                self._sources[lesson] = load_lesson_source(self.lessons_dir, lesson)
            return self._sources[lesson]

    def grade(self, lesson, exercise):
        pending = self._pending.pop((lesson, exercise), None)
        if pending is not None:
            return pending.wait()
        if not self._planned:
            self.start()
        lane = self._lane_of.get(lesson, self._lanes[0])
        return lane.grade(self.source(lesson), exercise)
