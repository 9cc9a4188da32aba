"""Every exercise of every lesson has its three hints (the idea, the API, almost there),
in the hints cell after its check cell in solutions/."""

import pytest

from hooked.course import SOLUTIONS_DIR, lesson_names
from hooked.hints import lesson_hints, parse_hints_cell
from hooked.lesson_file import load_lesson_source


@pytest.mark.parametrize("lesson", lesson_names())
def test_every_exercise_has_exactly_three_hints_numbered_1_to_3(lesson):
    hints = lesson_hints(lesson)
    assert list(hints) == [name for cell in load_lesson_source(SOLUTIONS_DIR, lesson).cells for name in cell.defines]
    for exercise, levels in hints.items():
        assert [hint.level for hint in levels] == [1, 2, 3], f"{lesson} {exercise}: want 'Hint N of 3' levels 1, 2, 3"
        for hint in levels:
            assert hint.title and hint.text, f"{lesson} {exercise}: hint {hint.level} is empty"
            assert "<details" not in hint.text and "</summary>" not in hint.text


def test_a_hints_cell_is_read_level_by_level():
    cell = ('<details class="tip"><summary>Hint 1 of 3: the idea</summary>\n\nIdea *here*.\n\n</details>\n\n'
            '<details class="tip"><summary>Hint 2 of 3: the API</summary>\n\n`x.register_hook`\n\n</details>\n')
    hints = parse_hints_cell(cell)
    assert [(hint.level, hint.title, hint.text) for hint in hints] == [
        (1, "the idea", "Idea *here*."), (2, "the API", "`x.register_hook`")]
    assert hints[0].markdown() == "**Hint 1 of 3: the idea**\n\nIdea *here*."
