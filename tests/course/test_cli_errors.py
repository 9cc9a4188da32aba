"""Mistakes on the command line get one clear line, a non-zero exit and no traceback."""

import shutil

import pytest

from hooked.command import arguments, shared_options
from hooked_cli import hooked, make_course, pytest_in


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("course"))


@pytest.mark.parametrize("arguments, complaint", [
    (["hint", "07", "double_grad"], "no lesson 07; lessons are: 01_tensor_hooks, 02_removing_hooks"),
    (["check", "hooks"], "no lesson hooks; lessons are: 01_tensor_hooks, 02_removing_hooks"),
    (["reset", "lessons/09_nothing.py"], "no lesson lessons/09_nothing.py; lessons are: 01_tensor_hooks"),
    (["hint", "01", "nope"], "no exercise nope in lesson 01_tensor_hooks; its exercises are: double_grad, "
                             "make_scale_hook, make_clip_hook, record_grads"),
    (["hint", "01", "Double_Grad"], "did you mean double_grad?"),
    (["solution", "01", "HookGroup"], "HookGroup is an exercise of lesson 02_removing_hooks, not of 01_tensor_hooks"),
    (["hint", "01", "double_grad", "--level", "4"], "--level: 4: give 1 (the idea), 2 (the API) or 3"),
    (["hint", "01", "double_grad", "--level", "two"], "--level: two: give 1 (the idea), 2 (the API) or 3"),
    (["hint", "01", "double_grad", "--level", "0"], "--level: 0: give 1 (the idea), 2 (the API) or 3"),
    (["check", ""], "no lesson ''; lessons are: 01_tensor_hooks, 02_removing_hooks"),
    (["hint", "01"], "the following arguments are required: EXERCISE"),
    (["status", "--lessons-dir", "no/such/folder"], "--lessons-dir: no/such/folder: no such folder"),
    (["--lessons-dir", "no/such/folder"], "--lessons-dir: no/such/folder: no such folder"),
    (["check", "--time-limit", "soon"], "--time-limit: soon: give a positive number of seconds"),
    (["watch", "--time-limit", "-1"], "--time-limit: -1: give a positive number of seconds"),
    (["export", "--format", "csv"], "argument --format: invalid choice: 'csv'"),
    (["export", "--out", "no/such/folder/results.json"], "the folder no/such/folder does not exist"),
    (["export", "--out", "lessons"], "--out: lessons: that is a folder"),
    (["grade"], "argument COMMAND: invalid choice: 'grade'"),
])
def test_bad_input_says_what_is_wrong_without_a_traceback(course, arguments, complaint):
    completed = hooked(course, *arguments)
    assert completed.returncode == 2
    assert complaint in completed.stderr
    assert "Traceback" not in completed.stderr + completed.stdout


def test_an_export_to_a_folder_that_cannot_be_written_is_refused_before_grading(tmp_path, monkeypatch, capsys):
    # In-process, with os.access saying no: root (as in CI) may write into any folder.
    monkeypatch.setattr(shared_options.os, "access", lambda path, mode: False)
    with pytest.raises(SystemExit) as exit:
        arguments.parse(["export", "--out", str(tmp_path / "results.json")])
    assert exit.value.code == 2
    error = capsys.readouterr().err
    assert "argument --out: " in error and "is not writable; choose another place." in error


def test_a_missing_lessons_folder_is_named_with_how_to_make_it(tmp_path):
    course = make_course(tmp_path)
    shutil.rmtree(course / "lessons")
    for arguments in (["status"], ["watch", "01"], ["solution", "01", "double_grad"], ["reset", "01"]):
        completed = hooked(course, *arguments)
        assert completed.returncode == 2, completed.stdout + completed.stderr
        assert completed.stderr.startswith("hooked: error: there is no lessons folder lessons: "
                                           "`python -m hooked generate` writes it"), completed.stderr
    assert not (course / "lessons").exists()


def test_a_course_without_its_solutions_folder_says_how_to_install_it(tmp_path):
    course = make_course(tmp_path)
    for path in (course / "solutions").glob("*.py"):
        path.unlink()
    for arguments in (["status"], ["export"], ["hint", "01", "double_grad"]):
        completed = hooked(course, *arguments)
        assert completed.returncode == 2, completed.stdout + completed.stderr
        assert "no lessons in " in completed.stderr and "pip install -e ." in completed.stderr
        assert "Traceback" not in completed.stderr


def test_an_exercise_heading_without_level_and_time_is_an_error_that_names_it(tmp_path):
    course = make_course(tmp_path)
    solution = course / "solutions" / "02_removing_hooks.py"
    text = solution.read_text(encoding="utf-8")
    heading = next(line for line in text.splitlines() if line.startswith("# ## Exercise 2: `HookGroup` · "))
    solution.write_text(text.replace(heading, "# ## Exercise 2: `HookGroup` · tricky · about 15 min"), encoding="utf-8")
    line = text.splitlines().index(heading) + 1
    for arguments in (["status"], ["hint", "01", "double_grad"]):
        completed = hooked(course, *arguments)
        assert completed.returncode == 2, completed.stdout + completed.stderr
        assert completed.stderr.startswith(f"hooked: error: solutions/02_removing_hooks.py line {line}: the heading "
                                           "of exercise HookGroup gives the level 'tricky', which is not one of "
                                           "easy, medium, hard"), completed.stderr
        assert "Traceback" not in completed.stderr


def test_pytest_with_an_exercise_heading_out_of_format_says_where_in_one_line(tmp_path):
    course = make_course(tmp_path)
    solution = course / "solutions" / "01_tensor_hooks.py"
    text = solution.read_text(encoding="utf-8")
    heading = next(line for line in text.splitlines() if line.startswith("# ## Exercise 1: `double_grad` · "))
    solution.write_text(text.replace(heading, heading.replace(" · ", " - ")), encoding="utf-8")
    line = text.splitlines().index(heading) + 1
    completed = pytest_in(course)
    assert completed.returncode == 4, completed.stdout + completed.stderr  # pytest's exit code for a usage error
    assert completed.stderr.startswith(f"ERROR: solutions/01_tensor_hooks.py line {line}: the heading of exercise "
                                       "double_grad is not in the heading format (between the name and the level it "
                                       "has ' - ' where ' · ' is expected"), completed.stderr
    assert "Traceback" not in completed.stdout + completed.stderr and "No exercise was graded" not in completed.stdout


def test_a_lesson_without_checks_is_reported_alone_and_the_others_are_graded(tmp_path):
    course = make_course(tmp_path)
    draft = ("# %% [markdown]\n# ## Exercise 1: `draft` · easy · about 5 min\n\n"
             "# %% tags=[\"exercise\"]\n# Exercise: draft — write your code in this cell.\n\n\n"
             "def draft():\n    \"\"\"An author's exercise whose checks are not written yet.\"\"\"\n"
             "    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n")
    (course / "solutions" / "03_draft.py").write_text(draft, encoding="utf-8")
    (course / "lessons" / "03_draft.py").write_text(draft, encoding="utf-8")  # as if solved

    completed = hooked(course, "check")
    assert "Traceback" not in completed.stdout + completed.stderr
    assert "lesson 03_draft has no checks yet" in completed.stdout, completed.stdout + completed.stderr
    assert "0 / 4" in completed.stdout and "0 / 3" in completed.stdout  # lessons 01 and 02 still graded
