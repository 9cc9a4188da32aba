"""`hooked check [LESSON]`: the same verdicts and messages as pytest, and pytest's exit code."""

import json

from hooked_cli import concurrently, hooked, make_course, pytest_in, write_lesson
from test_cli_status import definition_line

WRONG = {
    # in place, and printing something on the way
    'raise NotImplementedError("double_grad is not written yet")': 'print("doubling")\n    return grad.mul_(2)',
    'raise NotImplementedError("make_clip_hook is not written yet")': "return lambda grad: grad  # never clips",
}


def test_check_reports_what_pytest_reports_with_its_messages_and_exit_code(tmp_path):
    course = make_course(tmp_path / "course")
    write_lesson(course, "01_tensor_hooks", solved={"make_scale_hook"}, replacements=WRONG)
    report = tmp_path / "report.json"
    graded_by_pytest, checked = concurrently(
        lambda: pytest_in(course, "-rs", "--report", str(report), "tests/test_01_tensor_hooks.py"),
        lambda: hooked(course, "check", "01"))
    assert checked.returncode == graded_by_pytest.returncode == 1, checked.stdout + graded_by_pytest.stdout
    lines = checked.stdout.splitlines()
    entries = json.loads(report.read_text(encoding="utf-8"))["exercises"]
    assert [entry["status"] for entry in entries] == ["failed", "passed", "failed", "not_attempted"]
    for entry, line in zip(entries, [line for line in lines if line.split("  ")[0].strip() in
                                     ("passed", "failed", "not attempted", "error")]):
        assert line.startswith(entry["status"].replace("_", " "))
        assert entry["exercise"] in line
        if entry["status"] != "passed":
            assert entry["message"].splitlines()[0] in line
            assert entry["message"].splitlines()[0] in graded_by_pytest.stdout
    assert "    your code printed:" in checked.stdout and "    doubling" in checked.stdout
    pytest_table = graded_by_pytest.stdout.split("Hooked progress", 1)[1].split("\n=")[0].splitlines()[1:]
    assert pytest_table[-1].startswith("next: double_grad")
    assert "\n".join(pytest_table) in checked.stdout


def test_check_of_a_lesson_with_nothing_wrong_exits_0(tmp_path):
    course = make_course(tmp_path)
    completed = hooked(course, "check", "removing_hooks")
    assert completed.returncode == 0, completed.stdout
    assert completed.stdout.count("not attempted  ") == 3
    assert "02_removing_hooks   0 / 3" in completed.stdout
    # One line per exercise: the not-attempted message and "next:" both give the `def` (or `class`)
    # line, not the line of the `raise NotImplementedError` inside it.
    lesson = course / "lessons" / "02_removing_hooks.py"
    for exercise in ("grad_with_temporary_hook", "HookGroup", "register_named_hook"):
        message = next(line for line in completed.stdout.splitlines()
                       if line.startswith(f"not attempted  {exercise}:"))
        assert f"(lessons/02_removing_hooks.py line {definition_line(lesson, exercise)})" in message, message
    line = definition_line(lesson, "grad_with_temporary_hook")
    assert (f"next: grad_with_temporary_hook, lessons/02_removing_hooks.py line {line} (not attempted)"
            in completed.stdout)
