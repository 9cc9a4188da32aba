"""Named mistakes' ids are a public API: reports, Gradescope's tags and an instructor's counts
across releases name them. tests/course/mistake_ids.txt lists every id the checks declare (the
runner's own excepted); an id that disappears (renamed or removed) fails here until the change is
documented in that file's "retired" section, with what replaces it.

Add the ids of a new lesson, or of a new diagnosis (never removes one):

    python tests/course/test_mistake_ids.py NN
"""

import pathlib
import sys

from hooked import course
from hooked.checks.check_api import RUNNER_MISTAKES
from hooked.grader.named_mistakes import named_mistakes

IDS = pathlib.Path(__file__).resolve().parent / "mistake_ids.txt"
RETIRED = "# retired: "  # "# retired: <old id> -> <the id that replaces it, or 'none'>: why"


def _declared(lessons=None):
    return [mistake.id for mistake in named_mistakes(lessons) if mistake.id.rsplit(".", 1)[1] not in RUNNER_MISTAKES]


def _listed():
    lines = IDS.read_text(encoding="utf-8").splitlines()
    current = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    retired = {line.removeprefix(RETIRED).split(" -> ")[0] for line in lines if line.startswith(RETIRED)}
    return current, retired


def test_no_named_mistake_is_renamed_or_removed_without_a_note():
    current, retired = _listed()
    declared = set(_declared())
    gone = [mistake for mistake in current if mistake not in declared and mistake not in retired]
    assert not gone, (f"these ids are listed in {IDS.name} but no check declares them any more: {gone}. Ids are a "
                      f"public API; if the change is meant, add a line '{RETIRED}<id> -> <new id>: why' for each")


def test_every_declared_mistake_is_listed():
    current, _ = _listed()
    new = [mistake for mistake in _declared() if mistake not in current]
    assert not new, f"add the new ids to {IDS.name}: python {pathlib.Path(__file__).relative_to(course.ROOT)} NN ({new})"
    assert len(current) == len(set(current)), "an id is listed twice"


def _add_ids(numbers):
    lessons = [lesson for lesson in course.lessons() if f"{lesson.number:02d}" in numbers] if numbers else None
    current, _ = _listed()
    new = [mistake for mistake in _declared(lessons) if mistake not in current]
    text = IDS.read_text(encoding="utf-8") if IDS.exists() else ""
    IDS.write_text(text + "".join(f"{mistake}\n" for mistake in new), encoding="utf-8")
    print(f"added {len(new)} ids to {IDS.relative_to(course.ROOT)}")


if __name__ == "__main__":
    _add_ids([f"{int(number):02d}" for number in sys.argv[1:]])
