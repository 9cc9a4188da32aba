"""`hooked hint LESSON EXERCISE [--level N]` and the notebook's `hint(...)`: three levels,
revealed one at a time, read from the hints cell of the lesson's solution."""

import pytest

from hooked.feedback.hints import lesson_hints
from hooked_cli import hooked, make_course

HINTS = lesson_hints("01_tensor_hooks")["make_clip_hook"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("course"))


def _first_line(hint):
    return hint.text.splitlines()[0]


def test_without_a_level_the_first_hint_is_shown_and_how_to_see_the_next(course):
    completed = hooked(course, "hint", "01_tensor_hooks", "make_clip_hook")
    assert completed.returncode == 0, completed.stderr
    assert "Hint 1 of 3: the idea" in completed.stdout and _first_line(HINTS[0]) in completed.stdout
    assert "Hint 2 of 3" not in completed.stdout and _first_line(HINTS[1]) not in completed.stdout
    assert "hooked hint 01 make_clip_hook --level 2" in completed.stdout


def test_level_n_shows_hints_1_to_n_in_order_without_the_collapsing_markup(course):
    completed = hooked(course, "hint", "01_tensor_hooks", "make_clip_hook", "--level", "3")
    output = completed.stdout
    positions = [output.index(f"Hint {level} of 3") for level in (1, 2, 3)]
    assert positions == sorted(positions)
    assert all(hint.text.splitlines()[-1] in output for hint in HINTS)
    assert "<details" not in output and "<summary>" not in output
    assert "That was the last hint" in output and "hooked solution 01 make_clip_hook" in output
    level_two = hooked(course, "hint", "1", "make_clip_hook", "--level", "2").stdout
    assert "Hint 2 of 3" in level_two and "Hint 3 of 3" not in level_two


def test_a_short_lesson_name_works_on_the_command_line(course):
    completed = hooked(course, "hint", "tensor_hooks", "double_grad")
    assert completed.returncode == 0, completed.stderr
    assert _first_line(lesson_hints("01_tensor_hooks")["double_grad"][0]) in completed.stdout


def test_the_notebook_reveals_one_more_level_per_call(capsys):
    from hooked.notebook import hint

    def make_clip_hook(max_norm):
        raise NotImplementedError

    shown = []
    for _ in range(4):
        hint(make_clip_hook)
        shown.append(capsys.readouterr().out)
    assert [f"Hint {level} of 3" in shown[level - 1] for level in (1, 2, 3)] == [True] * 3
    assert "Hint 2 of 3" not in shown[0] and "hint(make_clip_hook)` again for hint 2" in shown[0]
    assert "That was the last hint" in shown[3]
    hint("make_clip_hook", level=2)
    assert _first_line(HINTS[1]) in capsys.readouterr().out
    hint("not_an_exercise")
    assert "not an exercise with hints" in capsys.readouterr().out


def test_the_notebook_tells_how_to_ask_for_an_exercise_written_as_a_lambda(capsys):
    from hooked.notebook import hint

    double_grad = lambda grad: 2 * grad  # noqa: E731 (a learner may write it so; the grader accepts it)
    hint(double_grad)
    assert "hint(\"double_grad\")" in capsys.readouterr().out
    hint("double_grad", level=1)
    assert "Hint 1 of 3: the idea" in capsys.readouterr().out
