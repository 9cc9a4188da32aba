"""Every canary points at a section that exists: each (lesson, heading) it names is a heading of that
lesson in solutions/, so that a renamed heading does not leave a canary pointing nowhere; and every
section whose heading names a trap, a pitfall or a bug has a canary."""

import importlib
import pathlib
import re

import pytest

from canary_pins import heading_line, lesson_numbered
from hooked import course

_HERE = pathlib.Path(__file__).parent

# Sections that another branch of this session adds; strictly expected to be missing until it is merged,
# then this test fails (XPASS): take the entry out.
_ADDED_BY_ANOTHER_BRANCH = {}


def _canary_tests():
    for path in sorted(_HERE.glob("test_canary_lesson_*.py")):
        module = importlib.import_module(path.stem)
        yield from (test for test in vars(module).values() if hasattr(test, "pin"))


def _pinned_sections():
    return sorted({place for test in _canary_tests() for place in test.pin.where})


def _case(place):
    reason = _ADDED_BY_ANOTHER_BRANCH.get(place)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(*place, id=f"{place[0]} {place[1]}", marks=marks)


@pytest.mark.parametrize(("number", "section"), [_case(place) for place in _pinned_sections()])
def test_every_section_a_canary_names_is_a_heading_of_its_lesson(number, section):
    lesson = lesson_numbered(number)
    assert lesson is not None, f"a canary names lesson {number}, which does not exist"
    assert heading_line(lesson, section), (f'a canary names the section "{section}" of {lesson.name}, which has no '
                                           f"such heading now: point the canary at the renamed heading")


_TRAP_HEADING = re.compile(r"^# #{2,4} (?P<text>.*\b(?:[Tt]raps?|[Pp]itfalls?|[Bb]ug)\b.*)$", re.MULTILINE)


_HEADING = re.compile(r"^# #{2,4} (?P<text>.+)$")
_BOLD_TRAP = re.compile(r"^# \*\*(?:Trap|A trap|A pitfall|Pitfall)\b")


def _trap_sections():
    """(lesson number, heading) of every section whose heading names a trap, a pitfall or a bug, or that holds a
    paragraph starting with a bold **Trap: ...** or **A pitfall ...**."""
    for lesson in course.lessons():
        text = lesson.solution_path.read_text(encoding="utf-8")
        found = [match["text"] for match in _TRAP_HEADING.finditer(text)]
        heading = None
        for line in text.splitlines():
            match = _HEADING.match(line)
            heading = match["text"] if match else heading
            if _BOLD_TRAP.match(line) and heading not in found:
                found.append(heading)
        yield from ((lesson.short, section) for section in found)


def test_the_canaries_cover_the_sections_that_name_traps_pitfalls_and_bugs():
    trap_sections = list(_trap_sections())
    assert len(trap_sections) >= 20  # the traps, pitfalls and bugs of lessons 01-10
    pinned = set(_pinned_sections())
    missing = [f"{number} {section}" for number, section in trap_sections if (number, section) not in pinned]
    assert not missing, ("these sections name a trap, a pitfall or a bug (in their heading or a bold paragraph), "
                         "and no canary in tests/course/canaries pins them: " + "; ".join(missing))


def test_every_canary_test_has_a_pin_with_a_section():
    tests = list(_canary_tests())
    assert len(tests) >= 40
    assert all(test.pin.where and test.pin.says for test in tests)
