"""The course manifest: where the course lives on disk, which lessons it has and which
exercises each lesson holds, read once from solutions/ (the single source). Everything
that needs a lesson or an exercise asks here: the command line, hints, the check
registry, the pytest plugin, the website, the benchmarks and the export.

Each exercise's heading in solutions/ gives its difficulty and the time it usually takes:
    # ## Exercise 2: `make_scale_hook` · easy · about 5 min
(Exercise.level and Exercise.minutes); a heading written otherwise stops the manifest with
a HeadingError that says which exercise, which line, and what is accepted.

Read as text, without jupytext (which costs more than the rest of `hooked status`), and
without importing torch."""

import ast
import dataclasses
import functools
import pathlib
import re

from hooked.lesson_files.exercise_headings import departures, headings_outside_fences
from hooked.lesson_files.solution_markers import lesson_text_from_solution, without_markers

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOLUTIONS_DIR = ROOT / "solutions"
LESSONS_DIR = ROOT / "lessons"
TESTS_DIR = ROOT / "tests"

LESSON_FILE = re.compile(r"^(?P<number>\d\d)_(?P<slug>[a-z0-9_]+)\.(?:py|ipynb)$")
# A percent-format cell tagged `exercise`: its header line, then its source up to the next cell.
_EXERCISE_CELL = re.compile(r'^# %% tags=\["exercise"\]\n(.*?)(?=^# %%|\Z)', re.MULTILINE | re.DOTALL)
_TITLE = re.compile(r"^# # (?P<title>.+)$", re.MULTILINE)

DIFFICULTIES = ("easy", "medium", "hard")  # an exercise's <level> in its heading
HEADING_FORMAT = "# ## Exercise N: `name` · <level> · about M min"
_HEADING = re.compile(r"^# ## Exercise (?P<number>\d+): `(?P<name>[^`]+)` · (?P<level>\S+) · about (?P<minutes>\d+) min$")
# The same heading without the level and time, to say what is missing.
_BARE_HEADING = re.compile(r"^# ## Exercise (?P<number>\d+): `(?P<name>[^`]+)`$")


class HeadingError(ValueError):
    """An exercise's heading in solutions/ lacks its level and time, or has them in another form."""


@dataclasses.dataclass(frozen=True)
class Exercise:
    name: str           # "double_grad": the function or class the learner writes
    lesson: str         # "01_tensor_hooks"
    solution_cell: str = dataclasses.field(repr=False)  # its text in solutions/, with the markers
    level: str = ""     # "easy", "medium" or "hard", from its heading
    minutes: int = 0    # the minutes a learner usually takes, from its heading

    @property
    def line(self):
        """The line of its `def`/`class` in the generated lessons/ file (0 if none). Found
        on first use: generating a lesson's text costs three quarters of reading them all,
        and the pytest plugin, which reads the manifest before grading starts, needs no line."""
        return _definition_lines(self.lesson).get(self.name, 0)

    @property
    def reference(self):
        """The reference solution: the solution cell without its marker lines."""
        return without_markers(self.solution_cell)


@dataclasses.dataclass(frozen=True)
class Lesson:
    name: str           # "01_tensor_hooks"
    number: int         # 1
    slug: str           # "tensor_hooks"
    title: str          # "Lesson 01 — Tensor hooks"
    exercises: tuple    # (Exercise, ...) in the order the lesson teaches them

    @property
    def short(self):
        """"01": how the command line names the lesson in the commands it suggests."""
        return f"{self.number:02d}"

    @property
    def short_title(self):
        """"Tensor hooks": the title without "Lesson 01 — ", as the README's lesson table has it."""
        return self.title.removeprefix(f"Lesson {self.short} — ")

    @property
    def solution_path(self):
        return SOLUTIONS_DIR / f"{self.name}.py"

    @property
    def lesson_path(self):
        return LESSONS_DIR / f"{self.name}.py"

    @property
    def checks_module(self):
        return checks_module_name(self.name)

    @property
    def test_path(self):
        return TESTS_DIR / f"test_{self.name}.py"

    def exercise_names(self):
        return [exercise.name for exercise in self.exercises]


def _defined_names(source):
    """The top-level def and class names of a cell, in order (a cell that does not
    parse defines nothing here; the course tests catch that)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def fresh_lesson_text(lesson):
    """The learner's version of `lesson`, as the generator writes it to lessons/."""
    return lesson_text_from_solution((SOLUTIONS_DIR / f"{lesson}.py").read_text(encoding="utf-8"),
                                     f"solutions/{lesson}.py")


@functools.lru_cache(maxsize=None)
def _definition_lines(lesson):
    """{name: line} of every top-level def and class in the lesson file that solutions/ generates."""
    text = fresh_lesson_text(lesson)
    return {match["name"]: text.count("\n", 0, match.start()) + 1
            for match in re.finditer(r"^(?:async\s+)?(?:def|class)\s+(?P<name>\w+)", text, re.MULTILINE)}


def _line_of(text, position):
    return text.count("\n", 0, position) + 1


def _level_and_minutes(text, name, start, end, filename):
    """(level, minutes) from the heading of exercise `name`: the last exercise heading in
    text[start:end], the part of the file between the previous exercise cell and its own (a
    heading shown in a code fence is not one)."""
    headings = headings_outside_fences(text, start, end)
    if not headings:
        raise HeadingError(f"{filename} line {_line_of(text, end)}: exercise {name} has no heading before its "
                           f"exercise cell; write one that reads '{HEADING_FORMAT}', with <level> one of "
                           f"{', '.join(DIFFICULTIES)} and M the minutes a learner usually takes.")
    line, where = headings[-1].group(0), f"{filename} line {_line_of(text, headings[-1].start())}"
    expected = (f"it must read '{HEADING_FORMAT.replace('name', name)}', with <level> one of "
                f"{', '.join(DIFFICULTIES)} and M the minutes a learner usually takes (a whole number)")
    match = _HEADING.match(line)
    if match is None:
        wrong = departures(line)
        missing = "has no level and time" if _BARE_HEADING.match(line) else "is not in the heading format"
        if wrong and not _BARE_HEADING.match(line):
            missing += f" ({'; '.join(wrong)})"
        raise HeadingError(f"{where}: the heading of exercise {name} {missing}: {line!r}; {expected}.")
    if match["name"] != name:
        raise HeadingError(f"{where}: the heading names `{match['name']}`, but the exercise cell after it "
                           f"defines {name}: {line!r}; {expected}.")
    if match["level"] not in DIFFICULTIES:
        raise HeadingError(f"{where}: the heading of exercise {name} gives the level {match['level']!r}, "
                           f"which is not one of {', '.join(DIFFICULTIES)}: {line!r}; {expected}.")
    if int(match["minutes"]) < 1:
        raise HeadingError(f"{where}: the heading of exercise {name} gives {match['minutes']} minutes: {line!r}; "
                           f"{expected}, at least 1.")
    return match["level"], int(match["minutes"])


def read_lesson(path):
    """The Lesson that the solution file at `path` holds (HeadingError if an exercise's heading
    lacks its level and time)."""
    path = pathlib.Path(path)
    text = path.read_text(encoding="utf-8")
    match = LESSON_FILE.match(path.name)
    title = _TITLE.search(text)
    filename = f"solutions/{path.name}"
    exercises, after_previous = [], 0
    for cell in _EXERCISE_CELL.finditer(text):
        for name in _defined_names(without_markers(cell.group(1))):
            level, minutes = _level_and_minutes(text, name, after_previous, cell.start(), filename)
            exercises.append(Exercise(name, path.stem, cell.group(1), level, minutes))
        after_previous = cell.end()
    return Lesson(path.stem, int(match["number"]), match["slug"], title["title"].strip() if title else path.stem,
                  tuple(exercises))


@functools.lru_cache(maxsize=None)
def lessons():
    """(Lesson, ...) of the course, in the order of their number."""
    paths = sorted(path for path in SOLUTIONS_DIR.glob("*.py") if LESSON_FILE.match(path.name))
    return tuple(read_lesson(path) for path in paths)


def lesson_names():
    """['01_tensor_hooks', '02_removing_hooks', ...]"""
    return [lesson.name for lesson in lessons()]


def lesson_named(name):
    """The Lesson called exactly `name` ("01_tensor_hooks"), or None; for the forms a learner
    types (01, 1, tensor_hooks, a path) see lesson_meant_by."""
    return next((lesson for lesson in lessons() if lesson.name == name), None)


def lesson_meant_by(text):
    """The Lesson that `text`, as a learner types it, means: 01_tensor_hooks, 01, 1, tensor_hooks
    or lessons/01_tensor_hooks.py (also .ipynb); None when none does."""
    name = pathlib.PurePath(text).name.removesuffix(".py").removesuffix(".ipynb")
    for lesson in lessons():
        if name in (lesson.name, lesson.slug) or (name.isdigit() and int(name) == lesson.number):
            return lesson
    return None


def exercise_named(name):
    """The Exercise called `name` in any lesson, or None."""
    return next((exercise for lesson in lessons() for exercise in lesson.exercises if exercise.name == name), None)


def checks_module_name(lesson):
    """"hooked.checks.lesson_01_tensor_hooks": the module of the checks of the lesson named `lesson`."""
    return f"hooked.checks.lesson_{lesson}"
