"""`hooked` / `hooked status`: every exercise's status, the totals and the next exercise,
graded as pytest grades them."""

import re

import pytest

from hooked_cli import environment, hooked, make_course, write_lesson


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("course"))


def definition_line(path, name):
    """The line of `def name` or `class name` in the lesson file: the line given for the exercise."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if re.match(rf"(?:def|class) {name}\b", line))


def _status_of(output, exercise):
    line = next(line for line in output.splitlines() if f" {exercise} " in line)
    return line.split(exercise, 1)[1].strip()


def test_a_fresh_course_shows_every_exercise_not_attempted_and_the_first_one_next(course):
    completed = hooked(course, env=environment(PYTHONPROFILEIMPORTTIME="1"))  # no command: the status
    assert completed.returncode == 0, completed.stderr
    imported = [line.rsplit("|", 1)[1].strip() for line in completed.stderr.splitlines()]
    assert "rich" in imported and "torch" not in imported  # torch is imported by the grading worker only
    output = completed.stdout
    for exercise in ("double_grad", "make_scale_hook", "make_clip_hook", "record_grads",
                     "grad_with_temporary_hook", "HookGroup", "register_named_hook"):
        assert _status_of(output, exercise) == "not attempted"
    assert "01_tensor_hooks     0 / 4   lessons/01_tensor_hooks.py" in output
    assert "total               0 / 7" in output
    line = definition_line(course / "lessons" / "01_tensor_hooks.py", "double_grad")
    assert f"next: double_grad, lessons/01_tensor_hooks.py line {line} (not attempted)" in output
    assert "`hooked hint 01 double_grad` gives a hint" in output
    assert "\x1b[" not in output


def test_solved_and_broken_exercises_are_counted_and_the_first_unsolved_is_next(tmp_path):
    course = make_course(tmp_path)
    write_lesson(course, "01_tensor_hooks", solved={"double_grad", "make_scale_hook", "record_grads"},
                 replacements={'raise NotImplementedError("make_clip_hook is not written yet")':
                               "return lambda grad: grad  # never clips"})
    write_lesson(course, "02_removing_hooks", solved={"HookGroup"})
    completed = hooked(course, "status")
    output = completed.stdout
    assert completed.returncode == 0, completed.stderr
    assert [_status_of(output, name) for name in ("double_grad", "make_scale_hook", "record_grads", "HookGroup")] \
        == ["passed"] * 4
    assert _status_of(output, "make_clip_hook") == "failed"
    assert _status_of(output, "grad_with_temporary_hook") == "not attempted"
    assert "01_tensor_hooks     3 / 4" in output and "02_removing_hooks   1 / 3" in output
    assert "total               4 / 7" in output
    line = definition_line(course / "lessons" / "01_tensor_hooks.py", "make_clip_hook")
    assert f"next: make_clip_hook, lessons/01_tensor_hooks.py line {line} (failed)" in output


def test_a_lesson_where_everything_passes_says_so(course):
    completed = hooked(course, "status", "2", "--lessons-dir", "solutions")
    assert completed.returncode == 0, completed.stderr
    assert "02_removing_hooks   3 / 3   solutions/02_removing_hooks.py" in completed.stdout
    assert "01_tensor_hooks" not in completed.stdout
    assert "every exercise passes" in completed.stdout
    assert "next:" not in completed.stdout
