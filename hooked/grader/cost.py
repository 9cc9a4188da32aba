"""What grading each lesson costs, and the budget it must meet so that grading stays
near the floor (`import torch`) as the course grows.

A lesson's cost is its load (reading its exercise cells and running them, as the grading
worker does) plus each of its exercises' checks, measured in CPU time of the process on
one core (torch with one thread, as in the worker; all of the process's threads count, since
lesson 13's ranks run on threads of their own), so that other work on the machine
weighs little on it. Every lesson of the manifest is measured: a new lesson is held to the
budget without a change here. benchmarks/grading_time.py prints the table and the check.

The budget judges what a grading run pays: each lesson's load and each exercise's FIRST check
in a fresh worker (cold), where a one-time cost inside a check (an import, a model built
once) falls. Warm figures (the median of a few more gradings in that process) are printed
beside them, to tell such a cost from the check's own work. Cold is measured twice: with
an empty cache of recorded prediction logs (hooked.checks.recorded_logs: a learner's first run) and
with the cache that run left (every later run); the budget judges the later runs."""

import dataclasses
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from hooked import course

LOAD_BUDGET_MS = 100  # reading and running a lesson's exercise cells
CHECK_BUDGET_MS = 30  # one exercise's check, unless its check_of gives a budget_ms of its own


@dataclasses.dataclass
class LessonCost:
    lesson: str
    load_ms: float
    checks_ms: dict  # exercise -> ms, in the manifest's order
    statuses: dict   # exercise -> the status its check gave (solutions: all "passed")
    cold_load_ms: float = 0.0  # the load and each exercise's first check in a fresh worker,
    cold_checks_ms: dict = dataclasses.field(default_factory=dict)  # the cache of logs kept
    first_run_checks_ms: dict = dataclasses.field(default_factory=dict)  # cold, with no cache yet

    @property
    def total_ms(self):
        return self.load_ms + sum(self.checks_ms.values())

    @property
    def cold_total_ms(self):
        return self.cold_load_ms + sum(self.cold_checks_ms.values())


def budget_exceptions():
    """{(lesson, exercise): (ms, why)} of the checks allowed more than CHECK_BUDGET_MS, as they are
    registered (`@check_of(exercise, budget_ms=..., why=...)`); the README's Speed paragraph gives the
    same figures. Imports every lesson's checks (a draft lesson without any has none)."""
    from hooked.grader.check_registry import registrations_for_lesson
    return {(lesson.name, exercise): (registered.budget_ms, registered.why)
            for lesson in course.lessons() if importlib.util.find_spec(lesson.checks_module)
            for exercise, registered in registrations_for_lesson(lesson.name).items() if registered.budget_ms}


def check_budget_ms(lesson, exercise):
    return budget_exceptions().get((lesson, exercise), (CHECK_BUDGET_MS, ""))[0]


def _grade_each_lesson(lessons_dir, missing_checks):
    """Grade every lesson of `lessons_dir` once, as the worker does: {lesson: CPU seconds of its
    load}, {(lesson, exercise): CPU seconds of its check}, {(lesson, exercise): status}."""
    from hooked.grader.worker import check_exercise, run_cells
    from hooked.lesson_files.learner_lesson import load_lesson_source

    loads, checks, statuses = {}, {}, {}
    for record in course.lessons():
        started = time.process_time()
        source = load_lesson_source(lessons_dir, record.name)
        cells = [{"source": cell.source, "filename": cell.filename, "first_line": cell.first_line}
                 for cell in source.cells]
        namespace, _, _ = run_cells(record.name, cells)
        loads[record.name] = time.process_time() - started
        for exercise in record.exercise_names():
            started = time.process_time()
            result, _ = check_exercise(record.name, exercise, namespace, None, missing_checks)
            checks[(record.name, exercise)] = time.process_time() - started
            statuses[(record.name, exercise)] = result.status
    return loads, checks, statuses


def _cold(lessons_dir, cache_dir=None):
    """({lesson: load ms}, {(lesson, exercise): check ms}) of one grading in a fresh process,
    with the cache of recorded logs in `cache_dir` (None: the course's own)."""
    from hooked.checks.recorded_logs import CACHE_VARIABLE
    env = dict(os.environ, **({CACHE_VARIABLE: str(cache_dir)} if cache_dir else {}))
    output = subprocess.run([sys.executable, "-m", "hooked.grader.cost", str(lessons_dir)], env=env,
                            capture_output=True, text=True, check=True).stdout
    measured = json.loads(output.splitlines()[-1])
    return ({lesson: 1000 * spent for lesson, spent in measured["loads"].items()},
            {tuple(key.split("/", 1)): 1000 * spent for key, spent in measured["checks"].items()})


def measure(lessons_dir=course.SOLUTIONS_DIR, repeat=3):
    """[LessonCost per lesson of the manifest]: cold, the first grading of the lessons in
    `lessons_dir` in a fresh process (with no cache of recorded logs, then with the one that
    run left); warm, the median of `repeat` gradings after one not counted. Imports torch."""
    from hooked.grader.worker import prepare

    with tempfile.TemporaryDirectory(prefix="hooked-cost-") as cache:
        _, first_run_checks = _cold(lessons_dir, cache)
    cold_loads, cold_checks = _cold(lessons_dir)
    missing_checks = prepare()
    loads, checks, statuses = {}, {}, {}
    for round_ in range(repeat + 1):
        round_loads, round_checks, statuses = _grade_each_lesson(lessons_dir, missing_checks)
        if round_:
            for lesson, spent in round_loads.items():
                loads.setdefault(lesson, []).append(spent)
            for key, spent in round_checks.items():
                checks.setdefault(key, []).append(spent)
    return [LessonCost(record.name, 1000 * statistics.median(loads[record.name]),
                       {exercise: 1000 * statistics.median(checks[(record.name, exercise)])
                        for exercise in record.exercise_names()},
                       {exercise: statuses[(record.name, exercise)] for exercise in record.exercise_names()},
                       cold_loads[record.name],
                       {exercise: cold_checks[(record.name, exercise)] for exercise in record.exercise_names()},
                       {exercise: first_run_checks[(record.name, exercise)] for exercise in record.exercise_names()})
            for record in course.lessons()]


def over_budget(costs):
    """One line for each load and each check whose cold cost (what a grading run pays, the
    cache of logs kept) is over its budget."""
    lines = []
    for cost in costs:
        if cost.cold_load_ms > LOAD_BUDGET_MS:
            lines.append(f"{cost.lesson}: loading its exercise cells costs {cost.cold_load_ms:.0f} ms cold, "
                         f"over the budget of {LOAD_BUDGET_MS} ms")
        for exercise, spent in cost.cold_checks_ms.items():
            budget = check_budget_ms(cost.lesson, exercise)
            if spent > budget:
                lines.append(f"{cost.lesson}: the check of {exercise} costs {spent:.0f} ms cold (its first call in a "
                             f"fresh worker; {cost.checks_ms.get(exercise, 0):.0f} ms warm), over the budget of "
                             f"{budget} ms (build its models once per lesson, keep them small, train few steps, "
                             "import nothing slow)")
    return lines


def table_lines(costs):
    """The cost of each lesson (load plus checks) and of each of its exercises: cold, a learner's
    first run (no recorded logs kept yet) and warm."""
    lines = [f"{'lesson / exercise':<44} {'cold':>7} {'1st run':>7} {'warm':>7}  budget (judges cold)"]
    for cost in costs:
        first = cost.cold_load_ms + sum(cost.first_run_checks_ms.values())
        lines.append(f"{cost.lesson:<44} {cost.cold_total_ms:>7.1f} {first:>7.1f} {cost.total_ms:>7.1f}  "
                     f"(load {cost.cold_load_ms:.1f} ms cold, {cost.load_ms:.1f} warm, <= {LOAD_BUDGET_MS})")
        for exercise, spent in cost.checks_ms.items():
            budget = check_budget_ms(cost.lesson, exercise)
            cold = cost.cold_checks_ms.get(exercise, 0.0)
            mark = "" if cold <= budget else "  OVER"
            lines.append(f"  {exercise:<42} {cold:>7.1f} {cost.first_run_checks_ms.get(exercise, 0.0):>7.1f} "
                         f"{spent:>7.1f}  <= {budget}{mark}")
    lines.append(f"{'all lessons':<44} {sum(cost.cold_total_ms for cost in costs):>7.1f} "
                 f"{sum(cost.cold_load_ms + sum(cost.first_run_checks_ms.values()) for cost in costs):>7.1f} "
                 f"{sum(cost.total_ms for cost in costs):>7.1f}")
    return lines


if __name__ == "__main__":  # one cold grading, in this fresh process: what _cold reads
    from hooked.grader.worker import prepare as _prepare
    _loads, _checks, _ = _grade_each_lesson(sys.argv[1], _prepare())
    print(json.dumps({"loads": _loads, "checks": {f"{lesson}/{exercise}": spent
                                                  for (lesson, exercise), spent in _checks.items()}}))
