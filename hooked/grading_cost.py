"""What grading each lesson costs, and the budget it must meet so that grading stays
near the floor (`import torch`) as the course grows.

A lesson's cost is its load (reading its exercise cells and running them, as the grading
worker does) plus each of its exercises' checks, measured in CPU time of this thread on
one core (torch with one thread, as in the worker), so that other work on the machine
weighs little on it. Every lesson of the manifest is measured: a new lesson is held to the
budget without a change here. benchmarks/grading_time.py prints the table and the check."""

import dataclasses
import statistics
import time

from hooked import course

LOAD_BUDGET_MS = 100  # reading and running a lesson's exercise cells
CHECK_BUDGET_MS = 30  # one exercise's check

# A check allowed more than CHECK_BUDGET_MS, with the reason; the README's Speed paragraph
# gives the same figures. {(lesson, exercise): (ms, why)}
CHECK_BUDGET_EXCEPTIONS = {
    ("06_cnn_activations", "grad_cam"): (
        45, "31 Grad-CAM cases, 18 of them on the trained CNN's 6 stored digits, each graded against the checks' "
            "own Grad-CAM on a fresh copy of the model (about 1.2 ms a case); a copy kept from case to case would "
            "grade a grad_cam that changes the weights in place against weights it no longer has"),
}


@dataclasses.dataclass
class LessonCost:
    lesson: str
    load_ms: float
    checks_ms: dict  # exercise -> ms, in the manifest's order
    statuses: dict   # exercise -> the status its check gave (solutions: all "passed")

    @property
    def total_ms(self):
        return self.load_ms + sum(self.checks_ms.values())


def check_budget_ms(lesson, exercise):
    return CHECK_BUDGET_EXCEPTIONS.get((lesson, exercise), (CHECK_BUDGET_MS, ""))[0]


def measure(lessons_dir=course.SOLUTIONS_DIR, repeat=3):
    """[LessonCost per lesson of the manifest]: the median of `repeat` gradings of the
    lessons in `lessons_dir`, after one grading of them all to warm torch up (the workers
    share that first-call cost among the lessons they grade). Imports torch."""
    from hooked.grading_worker import check_exercise, prepare, run_cells
    from hooked.lesson_file import load_lesson_source

    missing_checks = prepare()
    loads, checks, statuses = {}, {}, {}
    for round_ in range(repeat + 1):
        for record in course.lessons():
            started = time.thread_time()
            source = load_lesson_source(lessons_dir, record.name)
            cells = [{"source": cell.source, "filename": cell.filename, "first_line": cell.first_line}
                     for cell in source.cells]
            namespace, _, _ = run_cells(record.name, cells)
            spent = time.thread_time() - started
            if round_:
                loads.setdefault(record.name, []).append(spent)
            for exercise in record.exercise_names():
                started = time.thread_time()
                result, _ = check_exercise(record.name, exercise, namespace, None, missing_checks)
                spent = time.thread_time() - started
                if round_:
                    checks.setdefault((record.name, exercise), []).append(spent)
                statuses[(record.name, exercise)] = result.status
    return [LessonCost(record.name, 1000 * statistics.median(loads[record.name]),
                       {exercise: 1000 * statistics.median(checks[(record.name, exercise)])
                        for exercise in record.exercise_names()},
                       {exercise: statuses[(record.name, exercise)] for exercise in record.exercise_names()})
            for record in course.lessons()]


def over_budget(costs):
    """One line for each load and each check over its budget."""
    lines = []
    for cost in costs:
        if cost.load_ms > LOAD_BUDGET_MS:
            lines.append(f"{cost.lesson}: loading its exercise cells costs {cost.load_ms:.0f} ms, "
                         f"over the budget of {LOAD_BUDGET_MS} ms")
        for exercise, spent in cost.checks_ms.items():
            budget = check_budget_ms(cost.lesson, exercise)
            if spent > budget:
                lines.append(f"{cost.lesson}: the check of {exercise} costs {spent:.0f} ms, over the budget of "
                             f"{budget} ms (build its models once per lesson, keep them small, train few steps)")
    return lines


def table_lines(costs):
    """The cost of each lesson (load plus checks) and of each of its exercises."""
    lines = [f"{'lesson / exercise':<44} {'ms':>7}  budget"]
    for cost in costs:
        lines.append(f"{cost.lesson:<44} {cost.total_ms:>7.1f}  (load {cost.load_ms:.1f} ms, "
                     f"<= {LOAD_BUDGET_MS})")
        for exercise, spent in cost.checks_ms.items():
            budget = check_budget_ms(cost.lesson, exercise)
            mark = "" if spent <= budget else "  OVER"
            lines.append(f"  {exercise:<42} {spent:>7.1f}  <= {budget}{mark}")
    total = sum(cost.total_ms for cost in costs)
    lines.append(f"{'all lessons':<44} {total:>7.1f}")
    return lines
