"""The README's lesson table (## Lessons) is the course manifest: one row per lesson, in
order, with its number, its title linked to lessons/NN_slug.py, and its exercises in order."""

import re

from hooked import course

# | 01 | [Tensor hooks](lessons/01_tensor_hooks.py) | You learn ... | `double_grad`, `make_scale_hook` |
_ROW = re.compile(r"^\| (?P<number>[^|]+?) \| \[(?P<title>.+?)\]\((?P<path>[^)]+)\) \| .+ \| (?P<exercises>[^|]+?) \|$")


def _lessons_section():
    text = (course.ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Lessons\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _table_rows(section):
    """The table's data rows: every line that starts with `|`, but the header and its rule."""
    lines = [line for line in section.splitlines() if line.startswith("|")]
    assert lines[0].startswith("| # | Lesson |") and set(lines[1]) <= set("|-: "), lines[:2]
    return lines[2:]


def test_the_lesson_table_has_one_row_per_lesson_of_the_manifest_in_order():
    rows = _table_rows(_lessons_section())
    matched = [_ROW.match(row) for row in rows]
    assert all(matched), [row for row, match in zip(rows, matched) if not match]
    table = [(match["number"], match["title"], match["path"], re.findall(r"`([^`]+)`", match["exercises"]))
             for match in matched]
    manifest = [(lesson.short, lesson.short_title, lesson.lesson_path.relative_to(course.ROOT).as_posix(),
                 lesson.exercise_names()) for lesson in course.lessons()]
    assert table == manifest

