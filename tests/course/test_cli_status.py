"""`hooked` / `hooked status`: every exercise's status with its level and usual time, the
totals with the time left, and the next exercise, graded as pytest grades them."""

import re

import pytest

from hooked import course as manifest
from hooked.course import DIFFICULTIES, ROOT, exercise_named, lesson_named
from hooked.feedback.progress import duration
from hooked_cli import LESSONS, environment, hooked, make_course, write_lesson


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("course"))


def definition_line(path, name):
    """The line of `def name` or `class name` in the lesson file: the line given for the exercise."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if re.match(rf"(?:def|class) {name}\b", line))


def _row_of(output, exercise):
    """The line of `exercise` in the status list."""
    return next(line for line in output.splitlines() if f" {exercise} " in line)


def _status_of(output, exercise):
    return re.split(r"\s+\d+ min\s+", _row_of(output, exercise).split(exercise, 1)[1], maxsplit=1)[1].strip()


def _minutes(*names):
    return sum(exercise_named(name).minutes for name in names)


def test_a_fresh_course_shows_every_exercise_not_attempted_and_the_first_one_next(course):
    completed = hooked(course, env=environment(PYTHONPROFILEIMPORTTIME="1"))  # no command: the status
    assert completed.returncode == 0, completed.stderr
    imported = [line.rsplit("|", 1)[1].strip() for line in completed.stderr.splitlines()]
    assert "rich" in imported and "torch" not in imported  # torch is imported by the grading worker only
    output = completed.stdout
    for exercise in ("double_grad", "make_scale_hook", "make_clip_hook", "record_grads",
                     "grad_with_temporary_hook", "HookGroup", "register_named_hook"):
        assert _status_of(output, exercise) == "not attempted"
    lesson_01 = _minutes(*lesson_named("01_tensor_hooks").exercise_names())
    left = duration(sum(_minutes(*lesson_named(lesson).exercise_names()) for lesson in LESSONS))
    assert f"01_tensor_hooks     0 / 4   {duration(lesson_01):>10}  lessons/01_tensor_hooks.py" in output
    assert f"total               0 / 7   {left:>10}" in output
    line = definition_line(course / "lessons" / "01_tensor_hooks.py", "double_grad")
    assert f"next: double_grad, lessons/01_tensor_hooks.py line {line} (not attempted)" in output
    assert "`hooked hint 01 double_grad` gives a hint" in output
    assert "\x1b[" not in output


def test_each_exercise_shows_its_level_and_time_in_aligned_columns(course):
    output = hooked(course, "status").stdout
    lines = output.splitlines()
    header = lines[0]
    assert re.fullmatch(r"lesson +exercise +level +time  status", header), header
    rows = lines[1:1 + 7]
    for row, (lesson, name) in zip(rows, [(lesson, name) for lesson in LESSONS
                                          for name in lesson_named(lesson).exercise_names()]):
        exercise = exercise_named(name)
        assert exercise.level in DIFFICULTIES and exercise.minutes >= 1
        assert row[header.index("exercise"):].split()[:4] == [name, exercise.level, str(exercise.minutes), "min"], row
        # each column starts where its heading does; the time is aligned on its right
        assert row[header.index("level"):].startswith(exercise.level), row
        assert row[header.index("status"):] == "not attempted", row
        assert row[:header.index("status")].rstrip().endswith(f" {exercise.minutes} min"), row
        assert len(row[:header.index("status")].rstrip()) == header.index("time") + len("time"), row
    table = lines[lines.index("") + 1:]
    assert re.fullmatch(r"lesson +passed +time left  graded file", table[0]), table[0]
    graded_at, left_ends = table[0].index("graded file"), table[0].index("time left") + len("time left")
    for row in table[1:4]:  # the two lessons and the total
        assert row[:left_ends].endswith(" min") and row[left_ends:].strip() in ("", row[graded_at:]), row
        assert row.startswith("total") or row[graded_at:].startswith("lessons/"), row


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
    # the time left counts the exercises that have not passed: failed and not attempted alike
    left_01 = _minutes("make_clip_hook")
    left_02 = _minutes("grad_with_temporary_hook", "register_named_hook")
    width = len(duration(left_01 + left_02))
    assert f"01_tensor_hooks     3 / 4   {duration(left_01):>{max(width, 9)}}  lessons/" in output
    assert f"02_removing_hooks   1 / 3   {duration(left_02):>{max(width, 9)}}  lessons/" in output
    assert f"total               4 / 7   {duration(left_01 + left_02):>{max(width, 9)}}" in output
    line = definition_line(course / "lessons" / "01_tensor_hooks.py", "make_clip_hook")
    assert f"next: make_clip_hook, lessons/01_tensor_hooks.py line {line} (failed)" in output


def test_the_time_left_counts_every_exercise_of_a_lesson_that_cannot_run(tmp_path):
    course = make_course(tmp_path)
    write_lesson(course, "01_tensor_hooks", solved=set(lesson_named("01_tensor_hooks").exercise_names()))
    write_lesson(course, "02_removing_hooks", solved={"HookGroup"}, replacements={
        'raise NotImplementedError("register_named_hook is not written yet")': "return ((  # a syntax error"})
    output = hooked(course, "status").stdout
    names = lesson_named("02_removing_hooks").exercise_names()
    assert [_status_of(output, name) for name in names] == ["error"] * 3, output
    left = duration(_minutes(*names))  # the solved HookGroup too: the lesson does not run, nothing in it passes
    assert f"01_tensor_hooks     4 / 4   {'0 min':>9}  lessons/" in output, output
    assert f"02_removing_hooks   0 / 3   {left:>9}  lessons/" in output, output
    assert f"total               4 / 7   {left:>9}" in output, output


def test_a_lesson_where_everything_passes_says_so(course):
    completed = hooked(course, "status", "2", "--lessons-dir", "solutions")
    assert completed.returncode == 0, completed.stderr
    assert "02_removing_hooks   3 / 3       0 min  solutions/02_removing_hooks.py" in completed.stdout
    assert "total               3 / 3       0 min" in completed.stdout
    assert "01_tensor_hooks" not in completed.stdout
    assert "every exercise passes" in completed.stdout
    assert "next:" not in completed.stdout


@pytest.mark.parametrize("minutes, words", [(0, "0 min"), (5, "5 min"), (59, "59 min"), (60, "1 h"),
                                            (65, "1 h 5 min"), (575, "9 h 35 min")])
def test_a_time_is_given_in_minutes_or_hours_and_minutes(minutes, words):
    assert duration(minutes) == words


def test_the_readme_shows_each_exercise_with_its_level_and_time_and_their_sum():
    """The README's `hooked status` on a fresh copy gives the manifest's level and minutes."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sample = readme.split("On a fresh copy:\n\n```\n", 1)[1].split("```", 1)[0]
    rows = [line.split() for line in sample.splitlines() if line.endswith("  not attempted")]
    listed = [(row[-6], row[-5], int(row[-4])) for row in rows]  # name, level, minutes
    assert [name for name, _, _ in listed] == [name for lesson in manifest.lessons() for name in lesson.exercise_names()], \
        "the README's sample lists every exercise of the course, in order: paste a fresh `hooked status`"
    assert listed == [(name, exercise_named(name).level, exercise_named(name).minutes) for name, _, _ in listed]
    total = next(line for line in sample.splitlines() if line.startswith("total "))
    assert total.endswith(f"  {duration(sum(minutes for _, _, minutes in listed))}"), total
