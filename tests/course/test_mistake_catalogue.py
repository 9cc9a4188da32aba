"""The mistake catalogue (tests/course/mistakes/) proves that the checks give
targeted feedback: every typical wrong submission fails with the hint that names
its mistake, and every correct submission written differently from the reference
solution passes.

The catalogue of lesson `NN_slug` is tests/course/mistakes/lesson_NN_slug.py, a list
`ENTRIES` of dicts `dict(exercise=..., kind=..., why=..., source=..., expect=[...])`, each
`source` a complete replacement for one exercise cell:

- kind "wrong": a submission with one typical mistake. The check must fail it, its
  message must contain every phrase in `expect` (case-insensitive): the words that name
  this mistake, so that the learner gets the targeted hint and not just any failure; and
  the result must carry `mistake`, the id of the named mistake the check recognizes
  ("01.double_grad.in-place"; None where no diagnosis names it).
- kind "right": a correct submission written differently from the reference solution
  (`expect` is empty). The check must pass it.

Write an entry as the reference with one change, `source=edited(reference("<name>"), ("old", "new"))`
(tests/course/mistakes/__init__.py; each `old` occurs once in the reference): a catalogue file that
holds more than LONGEST_COPIED_RUN lines of a solution in a row fails, because a copy drifts from
solutions/. Only a submission of someone's own, not built on the reference, is written out whole.
Each wrong entry names the `clause` of the contract it breaks alone (tests/course/test_contract_clauses.py
requires one for every clause). Clauses hide in details: shared modules and tied weights, the root
module (""), lists as well as tuples, frozen or gradient-less parameters, hooks removed when
something raises, "unchanged", "in place". Then be the learner's adversary: write more wrong
submissions from the docstring alone, as a stranger would, and from public projects that use the
same pattern; each one that passes, or is told of a mistake it did not make, is a gap in a check.

An entry with `xfail="reason"` (the check does not yet give the expected verdict or hint)
or `xfail_leak="reason"` (the message shows a line of the reference solution) names a known
weakness of a check: its test is marked as strictly expected to fail. The files are loaded
by path, so no package is needed.
"""

import gc
import importlib.util
import linecache
import pathlib

import pytest

from hooked.grader.check_registry import checks_for_lesson

from hooked.grader.check_runner import run_exercise_check
from hooked.checks.check_api import RUNNER_MISTAKES
from hooked.grader.named_mistakes import declared_ids, named_mistakes
from hooked.course import SOLUTIONS_DIR, exercise_named, lesson_names, lessons
from hooked.lesson_files.solution_markers import solution_region_lines

MISTAKES_DIR = pathlib.Path(__file__).resolve().parent / "mistakes"
KINDS = ("wrong", "right")
KEYS = {"exercise", "kind", "why", "source", "expect"}
# `clause`: the clause of the exercise's contract that a wrong entry breaks (see
# tests/course/test_contract_clauses.py, which requires it of every wrong entry).
OPTIONAL_KEYS = {"xfail", "xfail_leak", "clause", "mistake"}
WRONG_PER_EXERCISE, RIGHT_PER_EXERCISE = 3, 1
# Reference lines this short ("return self", "return grad") say nothing of the solution.
MIN_REFERENCE_LINE = 13
# An entry states its change to the reference (edited(reference(...), ...)); a run this long of
# the reference's lines, in order, in a catalogue file is a copy that will drift from solutions/.
LONGEST_COPIED_RUN = 5


def _catalogue_path(lesson):
    return MISTAKES_DIR / f"lesson_{lesson}.py"


_LOADED = {}


def _load_module(lesson):
    """The catalogue module of `lesson`, loaded once by path."""
    if lesson not in _LOADED:
        spec = importlib.util.spec_from_file_location(f"mistake_catalogue_{lesson}", _catalogue_path(lesson))
        catalogue = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(catalogue)
        _LOADED[lesson] = catalogue
    return _LOADED[lesson]


def _load_entries(lesson):
    if not _catalogue_path(lesson).exists():
        return []
    return [dict(entry, lesson=lesson) for entry in _load_module(lesson).ENTRIES]


ENTRIES = [entry for lesson in lesson_names() for entry in _load_entries(lesson)]


def _entry_id(entry):
    return f"{entry['exercise']}-{entry['kind']}-{entry['why']}"


def _params(kind, xfail_key):
    params = []
    for entry in ENTRIES:
        if entry.get("kind") != kind:
            continue
        reason = entry.get(xfail_key)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(entry, id=_entry_id(entry), marks=marks))
    return params


@pytest.fixture(scope="module", autouse=True)
def imports_set_aside_from_the_garbage_collector():
    """As the grading worker does (hooked.grader.worker.prepare): once torch and the checks
    are imported, Python's cyclic collector leaves their objects alone, none of which is
    garbage; otherwise each full collection goes through all of them (60-80 ms each, over
    a thousand entries). What the entries and the checks make is collected as before."""
    for lesson in lesson_names():
        checks_for_lesson(lesson)
    gc.freeze()
    yield
    gc.unfreeze()


def _grade(entry):
    """Run the entry's cell in a fresh namespace, as if it were the learner's
    exercise cell, and grade the object it defines."""
    text = entry["source"]
    filename = f"<catalogue: {entry['exercise']}, {entry['why']}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    try:
        namespace = {"__name__": f"catalogue_{entry['exercise']}"}
        exec(compile(text, filename, "exec"), namespace)
        return run_exercise_check(entry["lesson"], entry["exercise"], namespace[entry["exercise"]])
    finally:
        linecache.cache.pop(filename, None)


def _reference_lines(lesson):
    """The stripped lines of the reference solution, between the markers."""
    text = (SOLUTIONS_DIR / f"{lesson}.py").read_text(encoding="utf-8")
    return [line.strip() for line in solution_region_lines(text) if len(line.strip()) >= MIN_REFERENCE_LINE]


def test_catalogue_entries_are_well_formed():
    assert ENTRIES, "the mistake catalogue is empty"
    ids = [_entry_id(entry) for entry in ENTRIES]
    assert len(ids) == len(set(ids)), f"entries share an id: {sorted(i for i in ids if ids.count(i) > 1)}"
    for entry in ENTRIES:
        keys = set(entry) - {"lesson"}
        assert KEYS <= keys <= KEYS | OPTIONAL_KEYS, f"{_entry_id(entry)}: keys {sorted(keys)}"
        assert entry["kind"] in KINDS, _entry_id(entry)
        exercise = exercise_named(entry["exercise"])
        assert exercise is not None and exercise.lesson == entry["lesson"], _entry_id(entry)
        if entry["kind"] == "wrong":
            assert entry["expect"], f"{_entry_id(entry)}: a wrong entry must name the words of its hint"
            assert "mistake" in entry, f"{_entry_id(entry)}: a wrong entry must state the id of its mistake (or None)"
        else:
            assert entry["expect"] == [] and "mistake" not in entry, \
                f"{_entry_id(entry)}: a right entry expects no hint and no mistake"


def test_every_named_mistake_is_the_mistake_of_a_wrong_entry():
    """Each entry's test holds that it produces its mistake, so every id a check declares is
    shown to be reachable (the runner's own, raised, timed-out, crashed and tampered, excepted)."""
    stated = {entry["mistake"] for entry in ENTRIES if entry["kind"] == "wrong"}
    unmade = [mistake.id for mistake in named_mistakes()
              if mistake.id.rsplit(".", 1)[1] not in RUNNER_MISTAKES and mistake.id not in stated]
    assert not unmade, f"no catalogue entry makes these named mistakes: add one for each, or drop it: {unmade}"


def test_every_exercise_has_three_wrong_and_one_right():
    missing = []
    for lesson in lessons():
        for exercise in lesson.exercise_names():
            kinds = [entry["kind"] for entry in ENTRIES
                     if entry["lesson"] == lesson.name and entry["exercise"] == exercise]
            wrong, right = kinds.count("wrong"), kinds.count("right")
            if wrong < WRONG_PER_EXERCISE or right < RIGHT_PER_EXERCISE:
                missing.append(f"{lesson.name} {exercise}: {wrong} wrong, {right} right "
                               f"(in {_catalogue_path(lesson.name).relative_to(MISTAKES_DIR.parent)})")
    assert not missing, "the mistake catalogue needs at least 3 wrong and 1 right entry per exercise:\n" \
        + "\n".join(missing)


@pytest.mark.parametrize("entry", _params("wrong", "xfail"))
def test_wrong_submission_fails_with_its_hint(entry):
    result = _grade(entry)
    assert result.status == "failed", f"expected failed, got {result.status}: {result.message!r}"
    message = result.message.lower()
    absent = [word for word in entry["expect"] if word.lower() not in message]
    assert not absent, f"the hint lacks {absent}; the message was:\n{result.message}"
    if "mistake" in entry:
        assert result.mistake == entry["mistake"], \
            f"expected mistake {entry['mistake']}, got {result.mistake}; the message was:\n{result.message}"
    assert result.mistake is None or result.mistake in declared_ids(entry["lesson"], entry["exercise"]), \
        f"{result.mistake} is not among the named mistakes its check_of declares"


@pytest.mark.parametrize("entry", _params("wrong", "xfail_leak"))
def test_feedback_never_shows_the_reference_solution(entry):
    result = _grade(entry)
    # A line the learner wrote too may be quoted back as theirs.
    own = {line.strip() for line in entry["source"].splitlines()}
    shown = [line for line in _reference_lines(entry["lesson"])
             if line not in own and line in result.message]
    assert not shown, f"the message shows reference lines {shown}; the message was:\n{result.message}"


@pytest.mark.parametrize("entry", _params("right", "xfail"))
def test_right_submission_written_differently_passes(entry):
    result = _grade(entry)
    assert result.status == "passed", f"expected passed, got {result.status}: {result.message}"


def _longest_copied_run(reference, text):
    """The most lines of `reference`, in a row, that `text` holds in a row (blank lines and
    indentation ignored), and the first of them."""
    ours = [line.strip() for line in reference.splitlines() if line.strip()]
    theirs = [line.strip() for line in text.splitlines() if line.strip()]
    where = {}
    for index, line in enumerate(theirs):
        where.setdefault(line, []).append(index)
    longest, first = 0, ""
    for start, line in enumerate(ours):
        for at in where.get(line, []):
            length = 0
            while start + length < len(ours) and at + length < len(theirs) \
                    and ours[start + length] == theirs[at + length]:
                length += 1
            if length > longest:
                longest, first = length, line
    return longest, first


@pytest.mark.parametrize("lesson", lessons(), ids=lambda lesson: lesson.name)
def test_catalogue_states_its_changes_instead_of_copying_the_solution(lesson):
    path = _catalogue_path(lesson.name)
    if not path.exists():
        pytest.skip("no catalogue")
    text = path.read_text(encoding="utf-8")
    for exercise in lesson.exercises:
        longest, first = _longest_copied_run(exercise.reference, text)
        assert longest <= LONGEST_COPIED_RUN, (
            f"{path.name} copies {longest} lines of {exercise.name}'s solution in a row, "
            f"from {first!r}: write the entry as edited(reference({exercise.name!r}), (old, new)) instead")
