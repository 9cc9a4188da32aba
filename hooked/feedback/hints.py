"""The hints of every exercise, read from their one source: in solutions/NN_slug.py,
the markdown cell tagged `hints` after an exercise belongs to the nearest exercise
cell above it, and holds three collapsed levels (the idea, the API, almost there):

    <details class="tip"><summary>Hint 1 of 3: the idea</summary>

    ...markdown...

    </details>

`hooked hint` and the notebook's `hint(...)` read them from here (the website shows the
cells themselves, collapsed as written)."""

import dataclasses
import re

from hooked.course import exercise_named, lesson_named
from hooked.lesson_files.learner_lesson import read_notebook
from hooked.lesson_files.lesson_format import EXERCISE_TAG, defined_names

HINTS_TAG = "hints"
HINT_COUNT = 3  # hints per exercise: 1 the idea, 2 the API, 3 almost there

_DETAILS = re.compile(r"<details\b[^>]*>\s*<summary>(?P<summary>.*?)</summary>(?P<body>.*?)</details>", re.DOTALL)
_SUMMARY = re.compile(r"Hint (?P<level>\d+) of (?P<levels>\d+):\s*(?P<title>.*)")


@dataclasses.dataclass
class Hint:
    level: int
    title: str      # "the idea", "the API", "almost there"
    text: str       # markdown

    def heading(self, levels=HINT_COUNT):
        return f"Hint {self.level} of {levels}: {self.title}"

    def markdown(self, levels=HINT_COUNT):
        return f"**{self.heading(levels)}**\n\n{self.text}"


def parse_hints_cell(markdown):
    """[Hint, ...] from the text of a hints cell, in the order written."""
    hints = []
    for position, details in enumerate(_DETAILS.finditer(markdown), start=1):
        summary = details["summary"].strip()
        numbered = _SUMMARY.fullmatch(summary)
        level, title = (int(numbered["level"]), numbered["title"]) if numbered else (position, summary)
        hints.append(Hint(level, title.strip(), details["body"].strip()))
    return hints


def lesson_hints(lesson):
    """{exercise: [Hint, ...]} for every exercise of the lesson named `lesson`, in the
    manifest's order (an exercise without a hints cell has an empty list). Reads the
    lesson with jupytext, so only when hints are asked for."""
    record = lesson_named(lesson)
    hints, current = {name: [] for name in record.exercise_names()}, None
    for cell in read_notebook(record.solution_path).cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and EXERCISE_TAG in tags:
            current = next((name for name in defined_names(cell.source) if name in hints), None)
        elif cell.cell_type == "markdown" and HINTS_TAG in tags and current is not None:
            hints[current].extend(parse_hints_cell(cell.source))
    return hints


def exercise_hints(name):
    """[Hint, ...] of the exercise called `name`, whichever lesson holds it; [] when no
    exercise has that name or it has no hints yet."""
    exercise = exercise_named(name)
    return lesson_hints(exercise.lesson)[name] if exercise is not None else []
