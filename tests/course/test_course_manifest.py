"""The course manifest (hooked/course.py) says what the lesson files say: every lesson of
solutions/, its title, its exercises in order with the line of their `def` in lessons/ and
the level and minutes of their heading; and the pieces that name exercises agree with it:
the checks registered with check_of (one per exercise, in the lesson's checks module) and each
lesson's grading file tests/test_NN_slug.py. (How a heading is read, and the errors for one out of
format, are tested with the format's reader: test_lesson_format.py.)"""

import importlib.util
import re
import subprocess
import sys

import jupytext
import pytest

from hooked import course
from hooked.checks import check_api
from hooked.checks.check_api import RegisteredCheck, check_of
from hooked.grader.check_registry import checks_for_lesson, mismatches, registry_problems
from hooked.grader.check_runner import run_exercise_check
from hooked.lesson_files.lesson_format import defined_names

LESSONS = course.lessons()
IDS = [lesson.name for lesson in LESSONS]


def _exercise_cells(path):
    """The exercise cells of a lesson file as jupytext reads it (not as the manifest does)."""
    return [cell for cell in jupytext.read(path).cells
            if cell.cell_type == "code" and "exercise" in cell.metadata.get("tags", [])]


def test_the_manifest_has_every_lesson_of_solutions_in_order():
    files = sorted(path.stem for path in course.SOLUTIONS_DIR.iterdir() if re.fullmatch(r"\d\d_\w+\.py", path.name))
    assert course.lesson_names() == files
    assert [lesson.number for lesson in LESSONS] == [int(name[:2]) for name in files]
    assert course.lesson_names()[:2] == ["01_tensor_hooks", "02_removing_hooks"]


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_a_lesson_has_the_paths_of_its_files(lesson):
    assert lesson.solution_path == course.ROOT / "solutions" / f"{lesson.name}.py"
    assert lesson.lesson_path == course.ROOT / "lessons" / f"{lesson.name}.py"
    assert lesson.test_path == course.ROOT / "tests" / f"test_{lesson.name}.py"
    for path in (lesson.solution_path, lesson.lesson_path, lesson.test_path):
        assert path.is_file(), path
    assert importlib.util.find_spec(lesson.checks_module) is not None, lesson.checks_module
    assert lesson.name == f"{lesson.short}_{lesson.slug}"


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_the_title_is_the_first_heading_of_the_lesson(lesson):
    first = jupytext.read(lesson.lesson_path).cells[0]
    assert first.cell_type == "markdown"
    assert first.source.splitlines()[0] == f"# {lesson.title}"
    assert lesson.title == f"Lesson {lesson.short} — {lesson.short_title}"


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_the_exercises_are_the_definitions_of_the_exercise_cells_in_order(lesson):
    cells = _exercise_cells(lesson.solution_path)
    assert lesson.exercise_names() == [name for cell in cells for name in defined_names(cell.source)]
    assert lesson.exercises, f"{lesson.name} has no exercise"
    for exercise, cell in zip(lesson.exercises, cells):
        assert exercise.lesson == lesson.name
        assert exercise.solution_cell.strip() == cell.source.strip()
        assert "# BEGIN SOLUTION" in exercise.solution_cell
        assert "SOLUTION" not in exercise.reference and f" {exercise.name}" in exercise.reference


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_each_exercise_line_is_its_def_in_the_generated_lesson(lesson):
    lines = lesson.lesson_path.read_text(encoding="utf-8").splitlines()
    for exercise in lesson.exercises:
        defined = [number for number, line in enumerate(lines, 1)
                   if re.match(rf"(?:def|class) {exercise.name}\b", line)]
        assert defined == [exercise.line], f"{lesson.name}: {exercise.name}"


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_each_exercise_heading_gives_its_level_and_minutes_in_the_lesson_too(lesson):
    solution = lesson.solution_path.read_text(encoding="utf-8").splitlines()
    learner = lesson.lesson_path.read_text(encoding="utf-8").splitlines()
    for exercise in lesson.exercises:
        assert exercise.level in course.DIFFICULTIES and isinstance(exercise.minutes, int) and exercise.minutes >= 1
        heading = [line for line in solution if line.startswith("# ## Exercise ") and f"`{exercise.name}`" in line]
        assert len(heading) == 1, f"{lesson.name}: {exercise.name}: {heading}"
        assert re.fullmatch(rf"# ## Exercise \d+: `{exercise.name}` · {exercise.level} · about {exercise.minutes} min",
                            heading[0]), heading[0]
        assert heading[0] in learner, f"{lesson.name}: the learner's lesson lacks {heading[0]!r}"


def test_the_course_has_every_level_and_rises_in_difficulty():
    levels = [exercise.level for lesson in LESSONS for exercise in lesson.exercises]
    assert set(levels) == set(course.DIFFICULTIES)
    assert {exercise.level for exercise in LESSONS[0].exercises} == {"easy"}  # lesson 01 starts gently

    def mean_level(lessons):
        ranks = [course.DIFFICULTIES.index(exercise.level) for lesson in lessons for exercise in lesson.exercises]
        return sum(ranks) / len(ranks)

    half = len(LESSONS) // 2
    assert mean_level(LESSONS[:half]) < mean_level(LESSONS[half:])


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_the_checks_are_the_exercises_in_order(lesson):
    assert list(checks_for_lesson(lesson.name)) == lesson.exercise_names()


def test_each_exercise_has_one_check_and_each_check_names_an_exercise_of_its_lesson():
    problems = registry_problems()
    assert not problems, "\n".join(problems)


def _check_a(x):
    pass


def _check_b(x):
    pass


def test_a_missing_check_a_check_of_no_exercise_and_a_second_check_are_each_named():
    lesson = LESSONS[0]
    module = lesson.checks_module
    registrations = [RegisteredCheck(name, _check_a, module) for name in lesson.exercise_names()[1:]]
    registrations += [RegisteredCheck("HookGroup", _check_a, module),
                      RegisteredCheck("not_an_exercise", _check_a, "hooked.checks.elsewhere"),
                      RegisteredCheck("make_scale_hook", _check_b, module)]
    assert mismatches([lesson], registrations) == [
        f"{module}._check_a is registered as the check of 'HookGroup', which is no exercise of lesson "
        f"01_tensor_hooks; its exercises are {', '.join(lesson.exercise_names())}",
        f"hooked.checks.elsewhere._check_a is registered as the check of 'not_an_exercise', but "
        "hooked.checks.elsewhere is the checks module of no lesson",
        "lesson 01_tensor_hooks: exercise double_grad has no check; hooked/checks/lesson_01_tensor_hooks.py registers "
        "none; write one there under @check_of(\"double_grad\") (README, 'Add a lesson', step 2)",
        f"exercise make_scale_hook has 2 checks, {module}._check_a, {module}._check_b; keep one",
    ]
    assert "(it is an exercise of lesson 02_removing_hooks)" in mismatches(LESSONS[:2], registrations)[0]


def test_an_exercise_without_a_check_is_graded_as_an_error_of_the_course(monkeypatch):
    checks_for_lesson("01_tensor_hooks")  # its module imported, its checks registered
    kept = [registered for registered in check_api.registered_checks() if registered.exercise != "double_grad"]
    monkeypatch.setattr(check_api, "_REGISTERED", kept)
    assert "double_grad" not in checks_for_lesson("01_tensor_hooks")
    result = run_exercise_check("01_tensor_hooks", "double_grad", lambda grad: 2 * grad)
    assert result.status == "error"
    assert result.message == ("the course has no check for double_grad yet: hooked/checks/lesson_01_tensor_hooks.py "
                              "registers none; write one there under @check_of(\"double_grad\") "
                              "(README, 'Add a lesson', step 2).")


def test_an_exercise_with_two_checks_stops_its_lessons_checks_with_both_named(monkeypatch):
    checks_for_lesson("01_tensor_hooks")
    monkeypatch.setattr(check_api, "_REGISTERED", list(check_api.registered_checks()))
    check_api.register_check("double_grad", _check_b, "hooked.checks.lesson_01_tensor_hooks")
    with pytest.raises(LookupError, match=r"exercise double_grad has 2 checks, hooked\.checks\.lesson_01_tensor_hooks"
                                          r"\.check_double_grad, hooked\.checks\.lesson_01_tensor_hooks\._check_b"):
        checks_for_lesson("01_tensor_hooks")


def test_a_check_gives_its_own_budget_with_the_reason_or_neither():
    for arguments in (dict(budget_ms=40), dict(why="slow")):
        with pytest.raises(ValueError, match="give budget_ms and why together"):
            check_of("double_grad", **arguments)


@pytest.mark.parametrize("lesson", LESSONS, ids=IDS)
def test_the_grading_file_has_one_test_per_exercise_in_order(lesson):
    spec = importlib.util.spec_from_file_location(f"grading_file_{lesson.name}", lesson.test_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [name for name in vars(module) if name.startswith("test_")]
    assert tests == [f"test_{name}" for name in lesson.exercise_names()]
    marks = [getattr(module, test).pytestmark[0].args for test in tests]
    assert marks == [(lesson.name, name) for name in lesson.exercise_names()]


def test_pytest_names_each_test_after_its_lesson_file_and_exercise():
    completed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "tests"], cwd=course.ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    collected = [line for line in completed.stdout.splitlines() if "::" in line]
    assert collected == [f"tests/test_{lesson.name}.py::test_{name}"
                         for lesson in LESSONS for name in lesson.exercise_names()]
    assert collected[0] == "tests/test_01_tensor_hooks.py::test_double_grad"  # as the README shows it


def test_check_finds_the_lesson_of_an_exercise_and_lists_the_exercises_for_anything_else():
    from hooked.grader.check_runner import run_check_for_object

    def HookGroup():  # noqa: N802 (named as the exercise, a class in the lesson)
        raise NotImplementedError

    assert run_check_for_object(HookGroup).lesson == "02_removing_hooks"
    every = ", ".join(name for lesson in LESSONS for name in lesson.exercise_names())
    for unknown, given in ((lambda grad: grad, "a function named '<lambda>'"), (3, "int 3")):
        result = run_check_for_object(unknown)
        assert result.status == "error"
        assert f"check() was given {given}, which is not one of the exercises" in result.message
        assert result.message.endswith(f"The exercises: {every}.")


def test_a_grading_file_for_a_lesson_that_does_not_exist_says_so():
    from hooked.pytest_plugin import lesson_tests
    with pytest.raises(LookupError, match=r"solutions/ has no lesson 12_draft\.py; the lessons are 01_tensor_hooks, "):
        lesson_tests("12_draft")


def test_exercise_names_are_unique_across_the_course():
    names = [exercise.name for lesson in LESSONS for exercise in lesson.exercises]
    assert len(names) == len(set(names))


def test_an_exercise_is_found_by_its_name_in_its_lesson():
    exercise = course.exercise_named("HookGroup")
    assert (exercise.lesson, exercise.name) == ("02_removing_hooks", "HookGroup")
    assert course.exercise_named("not_an_exercise") is None
    assert course.lesson_named("02_removing_hooks").exercises[1] is exercise
    assert course.lesson_named("02") is None  # exact names only; lesson_meant_by takes the short forms


@pytest.mark.parametrize("text", ["1", "01", "01_tensor_hooks", "tensor_hooks", "lessons/01_tensor_hooks.py",
                                  "lessons/01_tensor_hooks.ipynb", "/elsewhere/solutions/01_tensor_hooks.py"])
def test_a_lesson_is_called_by_its_number_name_slug_or_path(text):
    assert course.lesson_meant_by(text).name == "01_tensor_hooks"


@pytest.mark.parametrize("text", ["0", "98", "99_nothing", "tensor", "hooks", ""])
def test_a_text_that_names_no_lesson_gives_none(text):
    assert course.lesson_meant_by(text) is None


def test_the_lesson_file_pattern_takes_lessons_and_notebooks_only():
    for name in ("01_tensor_hooks.py", "11_training_monitor.ipynb"):
        assert course.LESSON_FILE.match(name), name
    for name in ("test_01_tensor_hooks.py", "1_tensor_hooks.py", "01_tensor_hooks.txt", "01_Tensor.py"):
        assert not course.LESSON_FILE.match(name), name
    assert course.LESSON_FILE.match("07_global_and_kwargs_hooks.py").group("number", "slug") == (
        "07", "global_and_kwargs_hooks")
