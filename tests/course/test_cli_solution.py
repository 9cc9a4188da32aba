"""`hooked solution LESSON EXERCISE`: the reference solution, only once the learner's passes
(or with --force)."""

from hooked_cli import hooked, make_course, write_lesson

REFERENCE_LINE = "return grad * 2"  # the body of double_grad in solutions/01_tensor_hooks.py


def test_the_solution_is_withheld_while_the_exercise_does_not_pass(tmp_path):
    course = make_course(tmp_path)
    completed = hooked(course, "solution", "01", "double_grad")
    assert completed.returncode == 1
    assert REFERENCE_LINE not in completed.stdout
    assert "not attempted yet: double_grad is not written yet" in completed.stdout
    assert "shown once your double_grad passes" in completed.stdout
    assert "`hooked solution 01 double_grad --force` shows the solution anyway" in completed.stdout


def test_the_solution_is_shown_once_the_exercise_passes_without_the_markers(tmp_path):
    course = make_course(tmp_path)
    write_lesson(course, "01_tensor_hooks", solved={"double_grad"})
    completed = hooked(course, "solution", "01", "double_grad")
    assert completed.returncode == 0, completed.stdout
    assert "The reference solution of double_grad, from solutions/01_tensor_hooks.py line " in completed.stdout
    assert "def double_grad(grad):" in completed.stdout and REFERENCE_LINE in completed.stdout
    assert "SOLUTION" not in completed.stdout and "def make_scale_hook" not in completed.stdout


def test_force_shows_the_solution_of_an_exercise_not_done(tmp_path):
    course = make_course(tmp_path)
    completed = hooked(course, "solution", "removing_hooks", "HookGroup", "--force")
    assert completed.returncode == 0, completed.stderr
    assert "class HookGroup:" in completed.stdout and "self._handles = []" in completed.stdout
