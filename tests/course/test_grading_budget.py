"""The grading budget (hooked.grader.cost): every lesson of the manifest is measured and
held to it, the README gives every exception (a check's own budget_ms, from its check_of), and the
grading plan reads the same exceptions from the checks' text. (The costs themselves are measured by
benchmarks/grading_time.py, not asserted here: a timed test would flake on a busy machine.)"""

import re

from hooked import course
from hooked.grader import cost as grading_cost
from hooked.course import ROOT
from hooked.grader.cost import CHECK_BUDGET_MS, LOAD_BUDGET_MS, LessonCost, budget_exceptions
from hooked.grader.plan import declared_budgets_of


def _speed_paragraph():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme[readme.index("### Speed"):].split("\n## ", 1)[0]


def test_every_lesson_and_exercise_of_the_manifest_is_measured_and_its_solution_passes():
    costs = grading_cost.measure(repeat=1)
    assert [cost.lesson for cost in costs] == course.lesson_names()
    for cost, lesson in zip(costs, course.lessons()):
        assert list(cost.checks_ms) == lesson.exercise_names()
        assert set(cost.statuses.values()) == {"passed"}, cost.statuses
        assert cost.load_ms > 0 and all(spent > 0 for spent in cost.checks_ms.values())
        assert cost.cold_load_ms > 0
        for measured in (cost.cold_checks_ms, cost.first_run_checks_ms):
            assert list(measured) == lesson.exercise_names() and all(spent > 0 for spent in measured.values())
    table = "\n".join(grading_cost.table_lines(costs))
    assert all(name in table for lesson in course.lessons() for name in [lesson.name, *lesson.exercise_names()])


def test_a_load_or_a_check_cold_over_its_budget_is_reported_and_one_within_it_is_not():
    lesson, exercise = next(iter(budget_exceptions()))
    allowed = grading_cost.check_budget_ms(lesson, exercise)
    costs = [LessonCost("01_tensor_hooks", 1, {"double_grad": 1, "make_scale_hook": 1}, {},
                        LOAD_BUDGET_MS + 1, {"double_grad": CHECK_BUDGET_MS + 1, "make_scale_hook": CHECK_BUDGET_MS}),
             LessonCost(lesson, LOAD_BUDGET_MS, {exercise: allowed}, {}, LOAD_BUDGET_MS, {exercise: allowed})]
    over = grading_cost.over_budget(costs)
    assert len(over) == 2
    assert "01_tensor_hooks: loading its exercise cells costs 101 ms cold" in over[0]
    assert "the check of double_grad costs 31 ms cold (its first call in a fresh worker; 1 ms warm), " \
           "over the budget of 30 ms" in over[1]
    costs[1].cold_checks_ms[exercise] = allowed + 1
    assert f"the check of {exercise} costs {allowed + 1} ms cold" in grading_cost.over_budget(costs)[-1]


def test_the_budget_judges_the_cold_cost_not_the_warm_one():
    """A one-time cost inside a check (an import on its first call) shows cold only."""
    within_warm = LessonCost("09_pitfalls", 1, {"predict_checkpoint_recompute": 0.3}, {},
                             1, {"predict_checkpoint_recompute": 700.0})
    assert "predict_checkpoint_recompute costs 700 ms cold" in grading_cost.over_budget([within_warm])[0]
    within_cold = LessonCost("09_pitfalls", LOAD_BUDGET_MS + 50, {"predict_checkpoint_recompute": 700.0}, {},
                             1, {"predict_checkpoint_recompute": 1.0})
    assert grading_cost.over_budget([within_cold]) == []


def test_each_budget_exception_is_an_exercise_and_the_readme_gives_it_with_its_reason():
    speed = _speed_paragraph()
    assert f"{LOAD_BUDGET_MS} ms" in speed and f"{CHECK_BUDGET_MS} ms" in speed
    for (lesson, exercise), (allowed, why) in budget_exceptions().items():
        assert exercise in course.lesson_named(lesson).exercise_names()
        assert allowed > CHECK_BUDGET_MS and why
        assert re.search(rf"`{exercise}`[^.]*\b{allowed} ms", speed), (exercise, allowed)


def test_the_grading_plan_reads_each_budget_exception_from_the_text_of_the_checks():
    exceptions = budget_exceptions()
    assert exceptions, "no check has a budget of its own: is check_of's budget_ms still read?"
    for lesson in course.lessons():
        registered = {exercise: allowed for (name, exercise), (allowed, _) in exceptions.items() if name == lesson.name}
        assert declared_budgets_of(lesson.name) == registered, (
            f"{lesson.checks_module}: the grading plan reads {declared_budgets_of(lesson.name)} from its text, the "
            f"checks register {registered}; write a budget as @check_of(\"name\", budget_ms=N, why=\"...\"), "
            "all on the decorator's first line up to budget_ms")
