"""The README's lesson table (## Lessons) is the course manifest: one row per lesson, in
order, with its number, its title linked to lessons/NN_slug.py, and its exercises in order.
`python -m hooked generate` writes those rows; only what each lesson teaches ("You learn") is
the README's own."""

import re

from hooked import course
from hooked.command.generate import NEW_LESSON_LEARNS, TABLE_HEADER, TABLE_ROW, readme_with_lesson_table

_REGENERATE = "run `python -m hooked generate`, which writes the table's rows from solutions/"


def _lessons_section():
    text = (course.ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Lessons\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _table_rows(section):
    """The table's data rows: every line that starts with `|`, but the header and its rule."""
    lines = [line for line in section.splitlines() if line.startswith("|")]
    assert lines[0] == TABLE_HEADER and set(lines[1]) <= set("|-: "), lines[:2]
    return lines[2:]


def test_the_lesson_table_has_one_row_per_lesson_of_the_manifest_in_order():
    rows = _table_rows(_lessons_section())
    matched = [TABLE_ROW.match(row) for row in rows]
    assert all(matched), [row for row, match in zip(rows, matched) if not match]
    table = [(match["number"], match["title"], match["path"], re.findall(r"`([^`]+)`", match["exercises"]))
             for match in matched]
    manifest = [(lesson.short, lesson.short_title, lesson.lesson_path.relative_to(course.ROOT).as_posix(),
                 lesson.exercise_names()) for lesson in course.lessons()]
    assert table == manifest, _REGENERATE


def test_each_row_says_what_its_lesson_teaches():
    rows = [TABLE_ROW.match(row) for row in _table_rows(_lessons_section())]
    new = [match["number"] for match in rows if match and match["learns"] == NEW_LESSON_LEARNS]
    assert not new, (f"the README's lesson table does not yet say what lesson {', '.join(new)} teaches: write it "
                     f"in place of {NEW_LESSON_LEARNS!r}")


_README = f"""# Course

## Lessons

{TABLE_HEADER}
|---|--------|-----------|-----------|
| 01 | [Old title](lessons/01_tensor_hooks.py) | hooks on tensors | `double_grad` |
| 77 | [Gone](lessons/77_gone.py) | a lesson no longer in solutions/ | `gone` |

Text after the table.

## Quick start
"""


def test_the_generator_writes_each_row_from_the_manifest_and_keeps_what_it_teaches():
    lessons = course.lessons()
    written = readme_with_lesson_table(_README)
    rows = [line for line in written.splitlines() if TABLE_ROW.match(line)]
    assert len(rows) == len(lessons)
    first = lessons[0]
    assert rows[0] == (f"| 01 | [{first.short_title}](lessons/01_tensor_hooks.py) | hooks on tensors | "
                       + ", ".join(f"`{name}`" for name in first.exercise_names()) + " |")
    assert rows[1].startswith(f"| 02 | [{lessons[1].short_title}](lessons/02_removing_hooks.py) | "
                              f"{NEW_LESSON_LEARNS} | `")
    assert "77_gone" not in written
    assert written.startswith(_README[:_README.index("| 01 |")])
    assert written.endswith("\nText after the table.\n\n## Quick start\n")
    assert readme_with_lesson_table(written) == written


def test_the_generator_given_lessons_writes_their_rows_only():
    written = readme_with_lesson_table(_README, names=["02_removing_hooks"])
    rows = [line for line in written.splitlines() if TABLE_ROW.match(line)]
    assert rows[0] == "| 01 | [Old title](lessons/01_tensor_hooks.py) | hooks on tensors | `double_grad` |"
    assert rows[1].startswith("| 02 | ") and len(rows) == 2


def test_a_readme_without_the_table_is_left_as_it_is():
    assert readme_with_lesson_table("# Course\n\nNo lessons here.\n") == "# Course\n\nNo lessons here.\n"
