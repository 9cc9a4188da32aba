"""Every exercise of every lesson has its three hints (the idea, the API, almost there),
in the hints cell after its check cell in solutions/; an exercise's hints are found by
its name alone."""

import pytest

from hooked.course import lessons
from hooked.feedback.hints import exercise_hints, lesson_hints, parse_hints_cell


@pytest.mark.parametrize("lesson", lessons(), ids=lambda lesson: lesson.name)
def test_every_exercise_has_exactly_three_hints_numbered_1_to_3(lesson):
    hints = lesson_hints(lesson.name)
    assert list(hints) == lesson.exercise_names()
    for exercise, levels in hints.items():
        assert [hint.level for hint in levels] == [1, 2, 3], f"{lesson.name} {exercise}: want 'Hint N of 3' levels 1, 2, 3"
        for hint in levels:
            assert hint.title and hint.text, f"{lesson.name} {exercise}: hint {hint.level} is empty"
            assert "<details" not in hint.text and "</summary>" not in hint.text


def test_each_exercise_has_its_own_hints():
    firsts = [hints[0].text for lesson in lessons() for hints in lesson_hints(lesson.name).values()]
    assert len(set(firsts)) == len(firsts), "two exercises show the same first hint"


def test_the_hints_of_an_exercise_are_found_by_its_name():
    assert exercise_hints("HookGroup") == lesson_hints("02_removing_hooks")["HookGroup"]
    assert exercise_hints("not_an_exercise") == []


def test_the_last_hint_in_the_notebook_names_the_solution_command(capsys):
    from hooked.notebook import hint
    for _ in range(4):
        hint("register_named_hook")
    assert "`hooked solution 02 register_named_hook` shows the reference solution" in capsys.readouterr().out


def test_a_hints_cell_is_read_level_by_level():
    cell = ('<details class="tip"><summary>Hint 1 of 3: the idea</summary>\n\nIdea *here*.\n\n</details>\n\n'
            '<details class="tip"><summary>Hint 2 of 3: the API</summary>\n\n`x.register_hook`\n\n</details>\n')
    hints = parse_hints_cell(cell)
    assert [(hint.level, hint.title, hint.text) for hint in hints] == [
        (1, "the idea", "Idea *here*."), (2, "the API", "`x.register_hook`")]
    assert hints[0].markdown() == "**Hint 1 of 3: the idea**\n\nIdea *here*."
