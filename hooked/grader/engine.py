"""Grade exercises of a folder of lessons. Learner code runs in separate processes
(hooked.grader.worker_processes) so that a loop that never ends can be stopped after a
time limit, on any operating system, and the rest of the run goes on."""

import threading
import time

from hooked.grader.worker_processes import Stopped as _Stopped, Timeout as _Timeout, worker_source
from hooked.lesson_files.display_paths import display_path
from hooked.grader.plan import assign, worker_count
from hooked.lesson_files.learner_lesson import load_lesson_source
from hooked.feedback.verdict import Result
from hooked.checks.check_api import RUNNER_MISTAKES
from hooked.grader.check_runner import named_mistake


class _Closed(Exception):
    """The grader was closed while a lane was grading (Ctrl-C, the end of the run)."""


class Lane:
    """One worker at a time and what it has loaded: grades exercises one after another,
    each with its time limit, and replaces its worker when it hangs or dies. Lanes share
    nothing, so a loop that never ends in one lesson costs only that lesson its limit.
    Its workers grade the lessons of one folder; move_to() another folder starts a fresh one.
    Where workers are forked (hooked.grader.worker_processes), their zygote imports `imports`
    too before it forks any."""

    def __init__(self, lessons_dir, time_limit, imports=()):
        self.lessons_dir = lessons_dir
        self.time_limit = time_limit
        self.lock = threading.RLock()  # one request at a time: planned ones and asked ones
        self.closed = False
        self._spawn_lock = threading.Lock()  # close() and a restart never cross: no worker is left behind
        self._load_outcomes = {}  # lesson -> ("ok", cell_errors, output) | ("problem", message)
        self._stopped_cells = {}  # lesson -> {cell index: why it was stopped}
        self._workers = worker_source(imports)
        self._worker = None
        self._loaded = None  # the lesson the current worker has loaded

    def start(self):
        """Start a worker (or the zygote that forks them) now, so that torch imports meanwhile."""
        with self._spawn_lock:
            if self.closed:
                raise _Closed()
            self._workers.start(self.lessons_dir)

    def close(self):
        with self._spawn_lock:
            self.closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()
        self._workers.close()

    def pids(self):
        """The processes working for this lane: its worker, and the zygote that forked it."""
        worker = self._worker
        return self._workers.pids() + ([worker.pid] if worker is not None and worker.pid else [])

    def move_to(self, lessons_dir):
        """Grade the lessons of another folder (another learner's) from now on, in fresh workers."""
        with self.lock:
            self.lessons_dir = lessons_dir
            self._load_outcomes.clear()
            self._stopped_cells.clear()
            self._drop_worker()

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
                          named_mistake(lesson, exercise, mistake), RUNNER_MISTAKES.get(mistake))

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
        elsewhere = source.untagged_definitions.get(exercise) if reply["status"] != "passed" else None
        if elsewhere:
            message += (f" Note: {elsewhere} also defines {exercise}, but it is not an exercise cell, so the "
                        "grader does not run it; write your code in the exercise cell.")
        return Result(lesson, exercise, reply["status"], message, source.graded_file, reply["output"], location,
                      reply.get("mistake"), reply.get("mistake_what"))

    def _load(self, lesson, source):
        """Run the lesson's exercise cells in the worker (once per worker). A cell that
        runs too long, or ends the process, is stopped and skipped; the rest still run."""
        if lesson in self._load_outcomes and self._worker and self._loaded == lesson:
            return self._load_outcomes[lesson]
        cells = [{"source": cell.source, "filename": cell.filename, "first_line": cell.first_line}
                 for cell in source.cells]
        stopped = self._stopped_cells.setdefault(lesson, {})  # cell index -> what happened; never rerun
        while True:
            current = None
            try:
                if self._worker is None:
                    self._replace_worker()
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
        self._loaded = lesson
        cell_errors = dict(reply["cell_errors"], **{str(index): text for index, text in stopped.items()})
        self._load_outcomes[lesson] = ("ok", cell_errors, reply["output"])
        return self._load_outcomes[lesson]

    def _restart(self):
        """Replace a stopped or stuck worker; return what it last printed on stderr."""
        worker = self._drop_worker()
        if worker is None:
            return ""
        time.sleep(0.05)  # let the stderr reader drain
        return "\nIts last words:\n  " + "\n  ".join(worker.stderr_tail) if worker.stderr_tail else ""

    def _drop_worker(self):
        """Stop the current worker, if any, and return it; the next load starts another."""
        worker, self._worker, self._loaded = self._worker, None, None
        if worker is not None:
            worker.stop()
        return worker

    def _replace_worker(self):
        """A new worker in place of the current one, which is stopped."""
        with self._spawn_lock:
            if self.closed:
                raise _Closed()
            worker, self._worker, self._loaded = self._worker, None, None
        if worker is not None:
            worker.stop()
        for attempt in range(2):  # a zygote that died with its child is started again, once
            try:
                worker = self._workers.new_worker(self.lessons_dir)
                break
            except _Stopped:
                self._workers.close()
                if attempt:
                    raise
        with self._spawn_lock:
            if self.closed:
                worker.stop()
                raise _Closed()
            self._worker = worker


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

    def __init__(self, lessons_dir, time_limit, imports=()):
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
            self._lanes = [Lane(self.lessons_dir, self.time_limit) for _ in range(max(1, workers))]
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
        self._lanes += [Lane(self.lessons_dir, self.time_limit) for _ in shares[len(self._lanes):]]
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
