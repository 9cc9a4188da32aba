"""Every canary points at a section that exists: each (lesson, heading) it names is a heading of that
lesson in solutions/, so that a renamed heading does not leave a canary pointing nowhere; every
section whose heading names a trap, a pitfall or a bug, or that holds a paragraph of traps in any
spelling (**Trap:**, Traps:, A pitfall ...), has a canary; and every error or warning text a cell
asserts is quoted by a canary of that cell's section."""

import ast
import importlib
import pathlib
import re

import pytest

from canary_pins import heading_line, lesson_numbered, on_this_torch
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
# A paragraph that starts with its traps, bold or not, one or several: "**Trap: ...**", "Traps: ...",
# "**A trap when ...**", "A pitfall in ...", "_Pitfalls:_".
_TRAP_PARAGRAPH = re.compile(r"^# (?:\*\*|__|\*|_)?(?:an? |the )?(?:traps?|pitfalls?)\b", re.IGNORECASE)

# Sections whose traps are mistakes of the learner's code under Python's or arithmetic's rules, and state
# nothing that torch does: no canary can pin them.
_TRAPS_WITHOUT_TORCH_BEHAVIOUR = {
    ("02", "Exercise 2: `HookGroup`"): "a class attribute shared by every instance, __exit__ returning a true value",
    ("02", "Exercise 3: `register_named_hook`"): "where the exercise's own code remembers names",
    ("12", "Exercise 3: `ablate_heads`"): "which batch's mean, which axis: the learner's arithmetic",
    ("12", "Exercise 4: `patching_table`"): "which run is patched, positions off by one: the learner's arithmetic",
    ("12", "Exercise 5: `attribution_table`"): "which run's gradient, C - R, M: the learner's arithmetic",
    ("12", "Exercise 6: `steer`"): "when the learner's code removes its hook, scaling its own vector in place",
}


def _sections_of(lines):
    """The heading of the section each line is in (None before the first heading)."""
    heading = None
    for line in lines:
        match = _HEADING.match(line)
        heading = match["text"].split(" · ")[0] if match else heading  # an exercise's without its level and time
        yield heading


def _trap_sections():
    """(lesson number, heading) of every section whose heading names a trap, a pitfall or a bug, or that holds a
    paragraph starting with its traps (**Trap: ...**, Traps: ..., **A pitfall ...**)."""
    for lesson in course.lessons():
        text = lesson.solution_path.read_text(encoding="utf-8")
        found = [match["text"] for match in _TRAP_HEADING.finditer(text)]
        lines = text.splitlines()
        for line, heading in zip(lines, _sections_of(lines)):
            if _TRAP_PARAGRAPH.match(line) and heading not in found:
                found.append(heading)
        yield from ((lesson.short, section) for section in found)


def test_a_traps_paragraph_is_recognized_in_any_spelling():
    spellings = ["# **Trap: a returned tuple.**", "# Traps: `clamp_` in place", "# Trap: where the names are",
                 "# **A trap when you register hooks in a loop.**", "# **A pitfall in torch 2.13: ...**",
                 "# _Pitfalls:_ two", "# The traps: ..."]
    assert all(_TRAP_PARAGRAPH.match(line) for line in spellings)
    assert not any(_TRAP_PARAGRAPH.match(line) for line in ["# Trapped gradients", "# The trapezoid", "# x = trap()"])


def test_the_canaries_cover_the_sections_that_name_traps_pitfalls_and_bugs():
    trap_sections = list(_trap_sections())
    assert len(trap_sections) >= 50  # the traps, pitfalls and bugs of every lesson and the traps of its exercises
    pinned = set(_pinned_sections())
    missing = [f"{number} {section}" for number, section in trap_sections
               if (number, section) not in pinned and (number, section) not in _TRAPS_WITHOUT_TORCH_BEHAVIOUR]
    assert not missing, ("these sections name a trap, a pitfall or a bug (in their heading or a paragraph of traps), "
                         "and no canary in tests/course/canaries pins them: " + "; ".join(missing))


def test_every_section_said_to_state_no_torch_behaviour_has_traps_and_no_canary():
    trap_sections, pinned = set(_trap_sections()), set(_pinned_sections())
    stale = [place for place in _TRAPS_WITHOUT_TORCH_BEHAVIOUR if place not in trap_sections or place in pinned]
    assert not stale, f"take these out of _TRAPS_WITHOUT_TORCH_BEHAVIOUR (renamed, no traps, or pinned): {stale}"


# An assert that compares a text with one of these names (or their attributes) asserts an error or a warning text.
_ERROR_NAMES = re.compile(r"error|message|caught|warn|outcome|raised", re.IGNORECASE)
_TYPE_PREFIX = re.compile(r"^(?:raised )?[A-Za-z]*(?:Error|Warning|Exception): ")


def _names_in(node):
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            yield child.id
        elif isinstance(child, ast.Attribute):
            yield child.attr


def _texts_in(node):
    """The string constants of `node` that read as sentences (three words or more), not subscript keys."""
    keys = {id(child.slice) for child in ast.walk(node) if isinstance(child, ast.Subscript)}
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str) and id(child) not in keys:
            if len(child.value.split()) >= 3:
                yield _TYPE_PREFIX.sub("", child.value)


def _loop_values(tree):
    """{name: [the nodes it takes]} for each name a `for a, b in ((..., ...), ...)` loop unpacks."""
    values = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.For) and isinstance(node.target, ast.Tuple)
                and isinstance(node.iter, (ast.Tuple, ast.List))):
            for index, target in enumerate(node.target.elts):
                if isinstance(target, ast.Name):
                    values[target.id] = [item.elts[index] for item in node.iter.elts if isinstance(item, ast.Tuple)]
    return values


def _asserted_error_texts(source):
    """(line, text) of every error or warning text an assert compares, also through a loop's variable; texts
    that the cell itself raises (its own planted errors) are not torch's."""
    tree = ast.parse(source)
    raised = {text for node in ast.walk(tree) if isinstance(node, ast.Raise) for text in _texts_in(node)}
    loops = _loop_values(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and any(_ERROR_NAMES.search(name) for name in _names_in(node.test)):
            nodes = [node.test] + [value for name in _names_in(node.test) for value in loops.get(name, [])]
            yield from ((node.lineno, text) for part in nodes for text in _texts_in(part) if text not in raised)


# Lesson 13, its checks and its canaries are reworked on another branch, which quotes these texts; strictly expected
# to fail until it is merged, then this test fails (XPASS): take the entry out.
_QUOTED_BY_ANOTHER_BRANCH = {}


def _error_text_cases():
    for lesson in course.lessons():
        lines = lesson.solution_path.read_text(encoding="utf-8").splitlines()
        sections = list(_sections_of(lines))
        for line, text in sorted(set(_asserted_error_texts("\n".join(lines)))):
            reason = _QUOTED_BY_ANOTHER_BRANCH.get(text)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(lesson.short, sections[line - 1], text, id=f"{lesson.short} line {line}", marks=marks)


def test_the_scan_finds_error_texts_in_asserts_and_loops_but_not_keys_or_planted_errors():
    cell = ("for name, error in ((\"a\", \"self must be a matrix\"),):\n    assert error in str(e)\n"
            "assert \"shapes cannot be multiplied\" in forward_error\n"
            "assert report[\"full hook afterwards\"] == mixing_error\n"
            "assert outcome == \"raised ValueError: forward failed on purpose\"\n"
            "raise ValueError(\"forward failed on purpose\")\n"
            "assert values == \"not an error text\"\n")
    assert [text for _, text in sorted(_asserted_error_texts(cell))] == ["self must be a matrix",
                                                                        "shapes cannot be multiplied"]


@pytest.mark.parametrize(("number", "section", "text"), list(_error_text_cases()))
def test_every_asserted_error_text_is_quoted_by_a_canary_of_its_section(number, section, text):
    quoting = [test for test in _canary_tests() if text in test.pin.says]
    naming = [test for test in quoting if (number, section) in test.pin.where]
    assert naming, (f"lesson {number}, section \"{section}\", asserts the text {text!r}, and no canary that names "
                    f"this section quotes it (canaries quoting it elsewhere: {[test.__name__ for test in quoting]})")


def test_every_canary_test_has_a_pin_with_a_section():
    tests = list(_canary_tests())
    assert len(tests) >= 40
    assert all(test.pin.where and test.pin.says for test in tests)


def test_a_pin_by_version_takes_the_newest_version_not_newer_than_the_installed_torch():
    pinned = {"2.13": "until 2.13", "2.14": "from 2.14"}
    assert [on_this_torch(pinned, installed) for installed in ("2.13.0+cpu", "2.14.0", "2.14.1+cu130", "2.15.0")] == [
        "until 2.13", "from 2.14", "from 2.14", "from 2.14"]
    with pytest.raises(ValueError, match="supports torch 2.13 and newer"):
        on_this_torch(pinned, "2.12.1")
