"""The course manifest: where the course lives on disk, which lessons it has and which
exercises each lesson holds, read once from solutions/ (the single source). Everything
that needs a lesson or an exercise asks here: the command line, hints, the check
registry, the pytest plugin, the website, the benchmarks and the export.

Each exercise's heading in solutions/ gives its difficulty and the time it usually takes:
    # ## Exercise 2: `make_scale_hook` · easy · about 5 min
(Exercise.level and Exercise.minutes); a heading written otherwise stops the manifest with
a HeadingError that says which exercise, which line, and what is accepted.

The files are read by hooked/lesson_files/lesson_format.py, as text: without jupytext (which
costs more than the rest of `hooked status`), and without importing torch."""

import dataclasses
import functools
import pathlib
import re

# Named through the manifest too: an Exercise's level is one of DIFFICULTIES; read_lesson raises HeadingError.
from hooked.lesson_files.lesson_format import DIFFICULTIES, HeadingError  # noqa: F401
from hooked.lesson_files.lesson_format import exercise_cells, exercise_definition_lines, lesson_title
from hooked.lesson_files.solution_markers import lesson_text_from_solution, without_markers

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOLUTIONS_DIR = ROOT / "solutions"
LESSONS_DIR = ROOT / "lessons"
TESTS_DIR = ROOT / "tests"

LESSON_FILE = re.compile(r"^(?P<number>\d\d)_(?P<slug>[a-z0-9_]+)\.(?:py|ipynb)$")


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


def fresh_lesson_text(lesson):
    """The learner's version of `lesson`, as the generator writes it to lessons/."""
    return lesson_text_from_solution((SOLUTIONS_DIR / f"{lesson}.py").read_text(encoding="utf-8"),
                                     f"solutions/{lesson}.py")


@functools.lru_cache(maxsize=None)
def _definition_lines(lesson):
    """{name: line} of every top-level def and class of the exercise cells in the lesson file
    that solutions/ generates."""
    return exercise_definition_lines(fresh_lesson_text(lesson))


def read_lesson(path):
    """The Lesson that the solution file at `path` holds (HeadingError if an exercise's heading
    lacks its level and time)."""
    path = pathlib.Path(path)
    text = path.read_text(encoding="utf-8")
    match = LESSON_FILE.match(path.name)
    exercises = tuple(Exercise(found.name, path.stem, found.cell.text, found.level, found.minutes)
                      for found in exercise_cells(text, f"solutions/{path.name}"))
    title = lesson_title(text)
    return Lesson(path.stem, int(match["number"]), match["slug"], path.stem if title is None else title, exercises)


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
