"""Grading end to end, as a learner runs it: `pytest` in a subprocess on a folder
of lessons, some of them broken on purpose. The run must finish, report every
exercise, and never touch the learner's files."""

import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import types

import jupytext
import pytest

from hooked import course, pytest_plugin
from hooked.command import shared_options
from hooked.course import LESSONS_DIR, ROOT, exercise_named
from hooked.lesson_files.lesson_format import defined_names

# These tests start pytest; a started pytest must never start them again.
if os.environ.get("HOOKED_INNER_RUN"):
    pytest.skip("inside a grading run started by these tests", allow_module_level=True)


def _solution_cell(lesson, exercise):
    """The reference solution of `exercise`, as a learner would write its cell."""
    found = exercise_named(exercise)
    assert found.lesson == lesson, (exercise, found.lesson)
    return found.reference


def make_lessons(folder, changes=None):
    """Copy the pristine lessons into `folder`, replacing the exercise cells named in
    `changes` ({lesson: {exercise: new cell source}})."""
    folder.mkdir(exist_ok=True)
    for lesson in course.lessons():
        notebook = jupytext.read(lesson.lesson_path)
        for exercise, source in (changes or {}).get(lesson.name, {}).items():
            cells = [cell for cell in notebook.cells if exercise in defined_names(cell.source)
                     and "exercise" in cell.metadata.get("tags", [])]
            cells[0].source = source
        jupytext.write(notebook, folder / lesson.lesson_path.name, fmt="py:percent")
    return folder


def grade(*arguments, cwd=ROOT):
    """Run the course's pytest, in two grading workers whatever the machine's load (everything
    here must hold with several); return (exit code, output, {exercise: report entry})."""
    completed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments],
                               cwd=cwd, capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, HOOKED_INNER_RUN="1", HOOKED_GRADING_WORKERS="2"))
    report = arguments[arguments.index("--report") + 1] if "--report" in arguments else None
    entries = {}
    if report and os.path.isfile(report):
        with open(report, encoding="utf-8") as file:
            entries = {entry["exercise"]: entry for entry in json.load(file)["exercises"]}
    return completed.returncode, completed.stdout + completed.stderr, entries


def _fingerprint(folder):
    return {path.name: (path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
            for path in sorted(folder.iterdir())}


def _definition_line(path, exercise):
    """The line of `def exercise` or `class exercise` in a lesson file."""
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if re.match(rf"(?:def|class) {exercise}\b", line))


def _exercise_count():
    return sum(len(lesson.exercises) for lesson in course.lessons())


def test_fresh_lessons_report_every_exercise_not_attempted_and_exit_0(tmp_path):
    code, output, entries = grade("--report", str(tmp_path / "r.json"))
    assert code == 0, output
    assert len(entries) == _exercise_count()
    assert {entry["status"] for entry in entries.values()} == {"not_attempted"}
    assert all(entry["message"].startswith("not attempted yet") for entry in entries.values())
    assert "Hooked progress" in output and "0 / 4" in output and "0 / 3" in output and "total" in output
    # One line per exercise: the message gives the `def` (or `class`) line, as "next:" does,
    # not the line of the `raise NotImplementedError` inside it.
    for entry in entries.values():
        line = exercise_named(entry["exercise"]).line
        assert f"(lessons/{entry['lesson']}.py line {line})." in entry["message"], entry["message"]
    first = course.lessons()[0].exercises[0]
    assert f"next: {first.name}, lessons/{first.lesson}.py line {first.line} (not attempted)" in output


def test_a_notebook_check_of_a_stub_gives_the_line_of_its_def_too(tmp_path):
    from hooked.grader.check_runner import run_check_for_object
    for lesson, exercise in (("01_tensor_hooks", "double_grad"), ("02_removing_hooks", "HookGroup")):
        cell = next(cell.source for cell in jupytext.read(LESSONS_DIR / f"{lesson}.py").cells
                    if exercise in defined_names(cell.source))
        path = tmp_path / f"{exercise}_cell.py"
        path.write_text("\n\n" + cell + "\n", encoding="utf-8")  # the def is not on the cell's first line
        namespace = {"__name__": "cell"}
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
        result = run_check_for_object(namespace[exercise])
        assert result.status == "not_attempted", result.message
        assert f"{exercise}_cell.py line {_definition_line(path, exercise)})." in result.message, result.message


def test_solutions_pass_every_exercise(tmp_path):
    code, output, entries = grade("--solutions", "--report", str(tmp_path / "r.json"))
    assert code == 0, output
    total = _exercise_count()
    assert len(entries) == total and {entry["status"] for entry in entries.values()} == {"passed"}
    assert f"{total} / {total}" in output


def test_solving_one_exercise_flips_exactly_that_one(tmp_path):
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {"double_grad": _solution_cell("01_tensor_hooks", "double_grad")}})
    code, output, entries = grade("--lessons-dir", str(lessons), "--report", str(tmp_path / "r.json"))
    assert code == 0, output
    assert entries.pop("double_grad")["status"] == "passed"
    assert {entry["status"] for entry in entries.values()} == {"not_attempted"}


def test_grading_another_folder_writes_nothing_into_it(tmp_path):
    lessons = make_lessons(tmp_path / "lessons")
    before = _fingerprint(lessons)
    # Without -p no:cacheprovider, as a learner runs it: pytest's cache must not land in the folder.
    completed = subprocess.run([sys.executable, "-m", "pytest", "--lessons-dir", str(lessons)], cwd=ROOT,
                               capture_output=True, text=True, timeout=300, env=dict(os.environ, HOOKED_INNER_RUN="1"))
    assert completed.returncode == 0, completed.stdout
    assert _fingerprint(lessons) == before


def test_broken_code_is_reported_per_exercise_and_the_run_finishes(tmp_path):
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {"make_scale_hook": "def make_scale_hook(factor)\n    return None\n"},
        "02_removing_hooks": {
            "grad_with_temporary_hook": _solution_cell("02_removing_hooks", "grad_with_temporary_hook"),
            "HookGroup": "import os\n\n\nclass HookGroup:\n    def __init__(self):\n        os._exit(3)\n",
            "register_named_hook": "def register_named_hook(module, name, hook):\n    while True:\n        pass\n",
        },
    })
    before = _fingerprint(lessons)
    code, output, entries = grade("--lessons-dir", str(lessons), "--time-limit", "2",
                                  "--report", str(tmp_path / "r.json"))
    assert code == 1, output
    for exercise in ("double_grad", "make_scale_hook", "make_clip_hook", "record_grads"):
        assert entries[exercise]["status"] == "error"
        assert "syntax error" in entries[exercise]["message"]
        assert "01_tensor_hooks.py line" in entries[exercise]["message"]
    assert entries["grad_with_temporary_hook"]["status"] == "passed"
    assert entries["HookGroup"]["status"] == "failed"
    assert "the grading process stopped while checking HookGroup" in entries["HookGroup"]["message"]
    assert entries["register_named_hook"]["status"] == "failed"
    assert "took longer than 2 s" in entries["register_named_hook"]["message"]
    # The runner names what it stopped; a syntax error is the status "error", no mistake of a check.
    assert entries["HookGroup"]["mistake"] == "02.HookGroup.crashed"
    assert entries["register_named_hook"]["mistake"] == "02.register_named_hook.timed-out"
    assert entries["grad_with_temporary_hook"]["mistake"] is None and entries["double_grad"]["mistake"] is None
    assert "Traceback" not in output
    assert _fingerprint(lessons) == before, "the grader changed the learner's files"


def test_load_errors_missing_exercises_and_leaked_global_state_stay_contained(tmp_path):
    leak = ("import torch\n"
            "torch.set_grad_enabled(False)\n"
            "torch.set_default_dtype(torch.float64)\n"
            "torch.nn.modules.module.register_module_forward_hook(lambda module, args, output: output * 0)\n")
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {
            "double_grad": leak + _solution_cell("01_tensor_hooks", "double_grad"),
            "make_scale_hook": "raise RuntimeError('my own message at load time')\n"
                               + _solution_cell("01_tensor_hooks", "make_scale_hook"),
            "record_grads": _solution_cell("01_tensor_hooks", "record_grads").replace(
                "def record_grads(", "def record_gradients("),
        },
        "02_removing_hooks": {name: _solution_cell("02_removing_hooks", name)
                              for name in ("grad_with_temporary_hook", "HookGroup", "register_named_hook")},
    })
    code, output, entries = grade("--lessons-dir", str(lessons), "--report", str(tmp_path / "r.json"))
    assert code == 1, output
    assert entries["double_grad"]["status"] == "passed"
    assert entries["make_scale_hook"]["status"] == "error"
    assert "my own message at load time" in entries["make_scale_hook"]["message"]
    assert "01_tensor_hooks.py line" in entries["make_scale_hook"]["message"]
    assert entries["record_grads"]["status"] == "error"
    assert "record_grads is missing" in entries["record_grads"]["message"]
    for exercise in ("grad_with_temporary_hook", "HookGroup", "register_named_hook"):
        assert entries[exercise]["status"] == "passed", entries[exercise]["message"]


def test_learner_code_that_misbehaves_in_other_ways_is_contained(tmp_path):
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {
            # a loop that never ends at the top of a cell stops only that cell
            "double_grad": "while True:\n    pass\n\n\ndef double_grad(grad):\n    return 2 * grad\n",
            # a magic works in Jupyter and is skipped here; an assignment defines the exercise
            "make_scale_hook": "%time pass\nmake_scale_hook = lambda factor: (lambda grad: grad * factor)\n",
            # a NotImplementedError raised inside torch is a failure, not "not attempted"
            "make_clip_hook": "import torch\n\n\ndef make_clip_hook(max_norm):\n"
                              "    return lambda grad: torch.nn.Module()(grad)\n",
            # KeyboardInterrupt from the learner's function; a monkeypatch that must not leak
            "record_grads": "import torch\ntorch.Tensor.register_hook = lambda self, hook: None\n\n\n"
                            "def record_grads(tensor, store):\n    raise KeyboardInterrupt\n",
        },
        "02_removing_hooks": {
            # a child process that outlives the grading process must not keep pytest waiting
            "grad_with_temporary_hook": "import subprocess\nimport sys\n"
                                        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
                                        + _solution_cell("02_removing_hooks", "grad_with_temporary_hook"),
            # a helper module beside the lesson imports, as it does in Jupyter
            "register_named_hook": "from my_helpers import MESSAGE\n"
                                   + _solution_cell("02_removing_hooks", "register_named_hook"),
        },
    })
    (lessons / "my_helpers.py").write_text("MESSAGE = 'hello'\n", encoding="utf-8")
    code, output, entries = grade("--lessons-dir", str(lessons), "--time-limit", "2",
                                  "--report", str(tmp_path / "r.json"))
    assert code == 1, output
    assert entries["double_grad"]["status"] == "error"
    assert "took longer than 2 s" in entries["double_grad"]["message"]
    assert entries["make_scale_hook"]["status"] == "passed", entries["make_scale_hook"]["message"]
    assert entries["make_clip_hook"]["status"] == "failed"
    assert "NotImplementedError" in entries["make_clip_hook"]["message"]
    assert entries["make_clip_hook"]["mistake"] == "01.make_clip_hook.raised"
    assert entries["record_grads"]["status"] == "failed"
    assert "KeyboardInterrupt" in entries["record_grads"]["message"]
    assert entries["record_grads"]["mistake"] == "01.record_grads.raised"
    assert "Traceback" not in output
    assert entries["grad_with_temporary_hook"]["status"] == "passed", entries["grad_with_temporary_hook"]["message"]
    assert entries["register_named_hook"]["status"] == "passed"
    assert sorted(path.name for path in lessons.iterdir()) == sorted(
        [lesson.lesson_path.name for lesson in course.lessons()] + ["my_helpers.py"])  # no __pycache__ either


def test_a_solution_in_an_untagged_cell_below_the_stub_is_pointed_at(tmp_path):
    lessons = make_lessons(tmp_path / "lessons")
    notebook = jupytext.read(lessons / "01_tensor_hooks.py")
    index = next(i for i, cell in enumerate(notebook.cells) if "double_grad" in defined_names(cell.source))
    extra = jupytext.reads("# %%\n" + _solution_cell("01_tensor_hooks", "double_grad"), fmt="py:percent").cells[0]
    notebook.cells.insert(index + 1, extra)
    jupytext.write(notebook, lessons / "01_tensor_hooks.py", fmt="py:percent")
    code, output, entries = grade("--lessons-dir", str(lessons), "--report", str(tmp_path / "r.json"))
    assert entries["double_grad"]["status"] == "not_attempted"
    assert "not an exercise cell" in entries["double_grad"]["message"]


def test_a_newer_notebook_with_other_code_is_graded_and_named(tmp_path):
    lessons = make_lessons(tmp_path / "lessons")
    notebook = jupytext.read(lessons / "02_removing_hooks.py")
    for cell in notebook.cells:
        if "HookGroup" in defined_names(cell.source):
            cell.source = _solution_cell("02_removing_hooks", "HookGroup")
    jupytext.write(notebook, lessons / "02_removing_hooks.ipynb")
    older = (lessons / "02_removing_hooks.ipynb").stat().st_mtime - 60
    os.utime(lessons / "02_removing_hooks.py", (older, older))
    code, output, entries = grade("--lessons-dir", str(lessons), "--report", str(tmp_path / "r.json"))
    assert code == 0, output
    assert entries["HookGroup"]["status"] == "passed"
    assert "02_removing_hooks.ipynb" in output and "newer" in output


def test_a_missing_lesson_file_is_reported_and_the_other_lessons_graded(tmp_path):
    lessons = make_lessons(tmp_path / "lessons", {
        "01_tensor_hooks": {"double_grad": _solution_cell("01_tensor_hooks", "double_grad")}})
    (lessons / "02_removing_hooks.py").unlink()
    code, output, entries = grade("--lessons-dir", str(lessons), "--report", str(tmp_path / "r.json"))
    assert code == 1, output
    assert entries["double_grad"]["status"] == "passed"
    for exercise in ("grad_with_temporary_hook", "HookGroup", "register_named_hook"):
        assert entries[exercise]["status"] == "error"
        assert "no lesson file" in entries[exercise]["message"]


def test_an_exercise_written_in_an_untagged_cell_is_pointed_at(tmp_path):
    lessons = make_lessons(tmp_path / "lessons")
    notebook = jupytext.read(lessons / "01_tensor_hooks.py")
    for cell in notebook.cells:
        if "double_grad" in defined_names(cell.source):
            cell.metadata["tags"] = []
    jupytext.write(notebook, lessons / "01_tensor_hooks.py", fmt="py:percent")
    code, output, entries = grade("--lessons-dir", str(lessons), "--report", str(tmp_path / "r.json"))
    assert entries["double_grad"]["status"] == "error"
    assert "not an exercise cell" in entries["double_grad"]["message"]


def test_solutions_mode_counts_a_stub_as_a_failure(tmp_path):
    copy = tmp_path / "course"
    for part in ("tests", "pyproject.toml"):
        source = ROOT / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, copy / part)
    shutil.copytree(LESSONS_DIR, copy / "solutions")
    code, output, entries = grade("--solutions", "--report", str(tmp_path / "r.json"),
                                  "tests/test_01_tensor_hooks.py", cwd=copy)
    assert code == 1, output
    assert {entry["status"] for entry in entries.values()} == {"not_attempted"}
    assert "4 failed" in output


def test_a_lesson_file_given_to_pytest_is_not_run_and_the_learner_is_told_how_to_grade_it():
    code, output, _ = grade("lessons/01_tensor_hooks.py")
    assert code == 5  # no tests ran: the lesson's demonstrations were not executed as a test module
    assert "grade it with `pytest tests/test_01_tensor_hooks.py`" in output


@pytest.mark.parametrize("arguments, complaint", [
    (["--lessons-dir", "no/such/folder"], "--lessons-dir no/such/folder: no such folder"),
    (["--time-limit", "-1"], "--time-limit -1: give a positive number of seconds"),
    (["--time-limit", "soon"], "--time-limit soon: give a positive number of seconds"),
    (["--solutions", "--lessons-dir", "lessons"], "cannot be combined"),
    (["--time-limit", "inf"], "--time-limit inf: give a positive number of seconds"),
    (["--report", "no/such/folder/r.json"], "the folder no/such/folder does not exist"),
    (["--report", "tests"], "--report tests: that is a folder"),
])
def test_bad_options_say_what_is_wrong_without_a_traceback(arguments, complaint):
    code, output, _ = grade(*arguments)
    assert code != 0
    assert complaint in output
    assert "Traceback" not in output


def test_a_report_in_a_folder_that_cannot_be_written_is_refused_before_grading(tmp_path, monkeypatch):
    # In-process, with os.access saying no: root (as in CI) may write into any folder.
    monkeypatch.setattr(shared_options.os, "access", lambda path, mode: False)
    config = types.SimpleNamespace(getoption={"--report": str(tmp_path / "r.json")}.get)
    with pytest.raises(pytest.UsageError, match=r"^--report .*r\.json: the folder .* is not writable; choose another"):
        pytest_plugin._read(config, shared_options.REPORT)


def test_a_helper_module_beside_the_lessons_gets_no_bytecode_file_where_python_may_write_them(tmp_path):
    lessons = make_lessons(tmp_path / "lessons", {
        "02_removing_hooks": {"register_named_hook": "from my_helpers import MESSAGE\n"
                                                     + _solution_cell("02_removing_hooks", "register_named_hook")}})
    (lessons / "my_helpers.py").write_text("MESSAGE = 'hello'\n", encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    completed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--lessons-dir", str(lessons),
                                "tests/test_02_removing_hooks.py"], cwd=ROOT, capture_output=True, text=True,
                               timeout=300, env=dict(env, HOOKED_INNER_RUN="1"))
    assert completed.returncode == 0, completed.stdout
    assert "1 passed" in completed.stdout
    assert not (lessons / "__pycache__").exists()
