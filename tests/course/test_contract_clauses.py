"""Every clause of every exercise's contract has a check that fails when only that clause
is broken: the clause → check table.

An exercise's contract is its docstring in solutions/ (for a class, the class's docstring
and its methods'). The catalogue file of each lesson (tests/course/mistakes/lesson_NN_slug.py)
holds the table:

    CLAUSES = {exercise: {clause id: "words quoted from the docstring", ...}, ...}
    NOT_CLAUSES = {exercise: {"words quoted from the docstring": "why they promise nothing", ...}}

and every wrong entry of the catalogue names the clause it breaks, alone: `clause="clause id"`.
The tests below hold the table to the contracts:

- every sentence of a docstring quotes a clause, or is explained in NOT_CLAUSES, so that a
  sentence added to a contract fails here until it has a clause;
- every quote is in its docstring, so that a contract reworded fails here until the table follows;
- every clause has at least one wrong entry (not an expected failure) that breaks it, whose
  `expect` words are the message that names that clause.

To add an exercise: write its docstring, list its clauses here, then write for each clause a
submission that breaks only that clause, and make the check fail it with a message that names it.
"""

import ast
import re

import pytest

from hooked.course import lesson_named, lessons

from test_mistake_catalogue import ENTRIES, _catalogue_path, _load_module

# A contract's sentences: split after . ; ! ? and before a bulleted line. Pieces of fewer
# than two words ("e.g.", "frozen.") are part of their neighbours, not sentences.
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+(?:[-*]\s+)?|\n\s*[-*]\s+")
MIN_SENTENCE_WORDS = 2


def _normalized(text):
    return " ".join(text.split())


def _docstrings(node):
    """The node's docstring and, for a class, its methods' docstrings."""
    texts = [ast.get_docstring(node) or ""]
    if isinstance(node, ast.ClassDef):
        texts += [ast.get_docstring(item) or "" for item in node.body
                  if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [text for text in texts if text]


def contracts(lesson):
    """{exercise: [docstring, ...]} of a lesson's exercises, read from their cells in solutions/."""
    found = {}
    for exercise in lesson_named(lesson).exercises:
        for node in ast.parse(exercise.reference).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == exercise.name:
                found[node.name] = _docstrings(node)
    return found


def sentences(docstring):
    pieces = [_normalized(piece) for piece in _SENTENCE_END.split(docstring)]
    return [piece for piece in pieces if len(piece.split()) >= MIN_SENTENCE_WORDS]


def _tables(lesson):
    path = _catalogue_path(lesson)
    catalogue = _load_module(lesson) if path.exists() else None
    return getattr(catalogue, "CLAUSES", {}), getattr(catalogue, "NOT_CLAUSES", {})


EXERCISES = [(lesson.name, exercise) for lesson in lessons() for exercise in lesson.exercise_names()]
IDS = [f"{lesson}-{exercise}" for lesson, exercise in EXERCISES]


@pytest.mark.parametrize(("lesson", "exercise"), EXERCISES, ids=IDS)
def test_every_exercise_has_a_clause_table(lesson, exercise):
    clauses, _ = _tables(lesson)
    assert clauses.get(exercise), (f"{exercise} has no clauses: add CLAUSES[{exercise!r}] to "
                                   f"{_catalogue_path(lesson).name}")


@pytest.mark.parametrize(("lesson", "exercise"), EXERCISES, ids=IDS)
def test_every_quote_is_in_the_contract(lesson, exercise):
    clauses, not_clauses = _tables(lesson)
    contract = _normalized(" ".join(contracts(lesson)[exercise]))
    quotes = list(clauses.get(exercise, {}).values()) + list(not_clauses.get(exercise, {}))
    missing = [quote for quote in quotes if _normalized(quote) not in contract]
    assert not missing, f"{exercise}: these quotes are not in its docstring (reworded?): {missing}"


@pytest.mark.parametrize(("lesson", "exercise"), EXERCISES, ids=IDS)
def test_every_sentence_of_the_contract_is_a_clause(lesson, exercise):
    clauses, not_clauses = _tables(lesson)
    quotes = [_normalized(quote) for quote in
              list(clauses.get(exercise, {}).values()) + list(not_clauses.get(exercise, {}))]
    uncovered = [sentence for docstring in contracts(lesson)[exercise] for sentence in sentences(docstring)
                 if not any(quote in sentence or sentence in quote for quote in quotes)]
    assert not uncovered, (f"{exercise}: these sentences of its contract quote no clause; add a clause "
                           f"(and a wrong entry that breaks it) or a NOT_CLAUSES reason: {uncovered}")


@pytest.mark.parametrize(("lesson", "exercise"), EXERCISES, ids=IDS)
def test_every_clause_has_a_wrong_submission_that_breaks_it(lesson, exercise):
    clauses, _ = _tables(lesson)
    broken = {entry.get("clause") for entry in ENTRIES
              if entry["lesson"] == lesson and entry["exercise"] == exercise
              and entry["kind"] == "wrong" and not entry.get("xfail")}
    unchecked = [clause for clause in clauses.get(exercise, {}) if clause not in broken]
    assert not unchecked, (f"{exercise}: no wrong catalogue entry breaks these clauses, so nothing "
                           f"shows that a check fails when only they are broken: {unchecked}")


def test_every_wrong_entry_names_a_clause_of_its_exercise():
    bad = []
    for entry in ENTRIES:
        if entry["kind"] != "wrong":
            continue
        clauses, _ = _tables(entry["lesson"])
        if entry.get("clause") not in clauses.get(entry["exercise"], {}):
            bad.append(f"{entry['lesson']} {entry['exercise']}: {entry['why']!r} "
                       f"(clause={entry.get('clause')!r})")
    assert not bad, "these wrong entries name no clause of their exercise's table:\n" + "\n".join(bad)
