"""Grade every learner of a class in one run: one lane per idle core (hooked.grader.engine), each
taking the next learner and grading all of their lessons, as grading that learner alone would.
Each learner's lessons run in a fresh worker: on Linux a fork of a warm process that imported
torch once per lane and has run no learner code; elsewhere a new process."""

import queue
import threading
import time

from hooked.feedback.verdict import Result
from hooked.grader.engine import Lane
from hooked.grader.plan import worker_count
from hooked.lesson_files.learner_lesson import load_lesson_source


# Imported by each lane's zygote before it forks: every learner's lesson 13 builds a
# DistributedDataParallel, which imports torch._dynamo on first use (as an optimizer and lesson 09's
# checkpoint do): a slow import, paid once per lane instead of once per learner.
_IMPORTED_ONCE = ("torch._dynamo",)


def _not_submitted(learner, lesson):
    return [Result(lesson.name, exercise, "not_attempted",
                   f"not attempted: {learner.id} handed in no {lesson.name}.py or .ipynb.")
            for exercise in lesson.exercise_names()]


def grade_learner(lane, learner, lessons):
    """[Result, ...] of `learner` for every exercise of `lessons`, in order, on `lane`."""
    lane.move_to(learner.folder)
    results = []
    for lesson in lessons:
        if lesson.name not in learner.lessons:
            results += _not_submitted(learner, lesson)
            continue
        source = load_lesson_source(learner.folder, lesson.name)
        results += [lane.grade(source, exercise) for exercise in lesson.exercise_names()]
    return results


class _Failure:
    """A course bug in a lane's thread, raised again in the caller's."""

    def __init__(self):
        self.error = None


def grade_class(learners, lessons, time_limit, on_graded=lambda learner, results, seconds: None):
    """{learner id: [Result, ...]} for every learner and every exercise of `lessons`.
    on_graded(learner, results, seconds) is called as each learner is done (from a lane's thread)."""
    todo = queue.Queue()
    for learner in learners:
        todo.put(learner)
    lanes = [Lane(learners[0].folder, time_limit, _IMPORTED_ONCE)
             for _ in range(worker_count(len(learners)))] if learners else []
    graded, failure, lock = {}, _Failure(), threading.Lock()

    def work(lane):
        try:
            while failure.error is None:
                try:
                    learner = todo.get_nowait()
                except queue.Empty:
                    return
                started = time.perf_counter()
                results = grade_learner(lane, learner, lessons)
                with lock:
                    graded[learner.id] = results
                    on_graded(learner, results, time.perf_counter() - started)
        except BaseException as error:  # noqa: BLE001  (the course's bug, or Ctrl-C in a callback)
            failure.error = failure.error or error

    threads = [threading.Thread(target=work, args=(lane,), daemon=True) for lane in lanes]
    try:
        for lane in lanes:
            lane.start()  # every lane's torch imports at once
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)  # in slices, so that Ctrl-C is seen at once
    finally:
        for lane in lanes:
            lane.close()
    if failure.error is not None:
        raise failure.error
    return {learner.id: graded[learner.id] for learner in learners}
