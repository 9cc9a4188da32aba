"""Write what the course manifest (hooked.course, read from solutions/) determines: the learner's
lessons/ (hooked.lesson_files.solution_markers says how a solution becomes a stub), backing up any
lesson file it replaces (hooked.command.backups); each lesson's grading file tests/test_NN_slug.py;
and the rows of the README's lesson table. Nobody edits them by hand: `python -m hooked generate`
writes them, `--check` says which differ."""

import re
import textwrap

from hooked.command.backups import BACKUP_DIR, back_up
from hooked.course import LESSONS_DIR, ROOT, TESTS_DIR, fresh_lesson_text, lesson_names, lessons

README = ROOT / "README.md"
# | 01 | [Tensor hooks](lessons/01_tensor_hooks.py) | You learn ... | `double_grad`, `make_scale_hook` |
TABLE_ROW = re.compile(r"^\| (?P<number>[^|]+?) \| \[(?P<title>.+?)\]\((?P<path>[^)]+)\) \| (?P<learns>.+) "
                       r"\| (?P<exercises>[^|]+?) \|$")
TABLE_HEADER = "| # | Lesson | You learn | Exercises |"
NEW_LESSON_LEARNS = "(what a learner learns here: write it in README.md)"  # a new lesson's row, until then


def grading_file_text(lesson):
    """The text of the grading file tests/test_NN_slug.py of `lesson` (a course.Lesson)."""
    about = (f'Grades lesson {lesson.short}, "{lesson.short_title}": one test per exercise, in the course '
             f"manifest's order. Written by `python -m hooked generate` from solutions/{lesson.name}.py; "
             "change that, not this file.")
    return (f'"""{textwrap.fill(about, 100)}"""\n\nfrom hooked.pytest_plugin import lesson_tests\n\n'
            f'globals().update(lesson_tests("{lesson.name}"))\n')


def table_row(lesson, learns):
    """The README's row of `lesson`: its number, its title linked to its lesson file, what a learner
    learns (`learns`, the README's own words) and its exercises, in order."""
    path = lesson.lesson_path.relative_to(ROOT).as_posix()
    exercises = ", ".join(f"`{name}`" for name in lesson.exercise_names())
    return f"| {lesson.short} | [{lesson.short_title}]({path}) | {learns} | {exercises} |"


def readme_with_lesson_table(text, names=None):
    """The README `text` with the rows of its lesson table (under "## Lessons") made from the manifest,
    those of the lessons `names` only (None: all); each keeps what its "You learn" says. A text
    without the table is returned as it is."""
    section = text.find("\n## Lessons\n")
    header = text.find(f"\n{TABLE_HEADER}\n", section) if section >= 0 else -1
    if header < 0:
        return text
    rule = header + len(TABLE_HEADER) + 2
    rows_start = text.index("\n", rule) + 1
    rows_end = rows_start
    while text.startswith("|", rows_end):
        rows_end = text.index("\n", rows_end) + 1
    rows = {}
    for line in text[rows_start:rows_end].splitlines():
        match = TABLE_ROW.match(line)
        if match:
            rows[match["path"]] = (line, match["learns"])
    table = []
    for lesson in lessons():
        line, learns = rows.get(lesson.lesson_path.relative_to(ROOT).as_posix(), (None, NEW_LESSON_LEARNS))
        if names is None or lesson.name in names:
            line = table_row(lesson, learns)
        if line is not None:
            table.append(line + "\n")
    return text[:rows_start] + "".join(table) + text[rows_end:]


def expected_lessons():
    """{lesson file path: the text it should have}, for every lesson."""
    return {LESSONS_DIR / f"{lesson}.py": fresh_lesson_text(lesson) for lesson in lesson_names()}


def expected_files(names=None):
    """{path: the text it should have} of what the manifest determines for the lessons `names` (None:
    all): their lesson files and grading files, and the README (when the course has one)."""
    files = {path: text for path, text in expected_lessons().items() if names is None or path.stem in names}
    files.update({TESTS_DIR / f"test_{lesson.name}.py": grading_file_text(lesson)
                  for lesson in lessons() if names is None or lesson.name in names})
    if README.exists():
        files[README] = readme_with_lesson_table(README.read_text(encoding="utf-8"), names)
    return files


def write_files(names=None):
    """Regenerate lessons/, the grading files and the README's lesson table (or only what is of the
    lessons `names`). A lesson file that would change is backed up first, with its paired notebook,
    in BACKUP_DIR (it may hold a learner's work). Returns [(path, backup folder or None)]."""
    written = []
    for path, text in expected_files(names).items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        backup = back_up([path, path.with_suffix(".ipynb")], BACKUP_DIR) if path.parent == LESSONS_DIR else None
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append((path, backup))
    return written


def stale_files(names=None):
    """The files (lessons, grading files, the README) that differ from what the generator makes."""
    return [path for path, text in expected_files(names).items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]
