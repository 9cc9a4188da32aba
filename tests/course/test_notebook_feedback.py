"""What a notebook's check(...) prints: the verdict and its message first, then, discreetly, the id
of the named mistake the check recognized (the id an instructor's report counts)."""

from hooked import notebook


def test_a_recognized_mistake_is_named_after_the_message(capsys):
    def double_grad(grad):  # the exercise's name: check() grades it
        return grad.mul_(2)
    notebook.check(double_grad)
    printed = capsys.readouterr().out
    assert printed.startswith("❌ double_grad: ") and "in place" in printed
    assert printed.rstrip().endswith("\n(mistake 01.double_grad.in-place)"), printed


def test_a_passing_or_unwritten_exercise_names_no_mistake(capsys):
    def double_grad(grad):
        return 2 * grad

    def make_scale_hook(factor):
        raise NotImplementedError("make_scale_hook is not written yet")
    notebook.check(double_grad)
    notebook.check(make_scale_hook)
    printed = capsys.readouterr().out
    assert "double_grad: passed" in printed and "not attempted yet" in printed and "(mistake" not in printed
