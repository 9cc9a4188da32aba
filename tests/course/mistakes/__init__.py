"""The mistake catalogue, one file per lesson (the entry format is described in
tests/course/test_mistake_catalogue.py), and what its files share: the reference
solution read from solutions/, and the edit that turns it into one entry."""

from hooked.course import exercise_named


def reference(exercise):
    """The reference solution of `exercise`: its cell in solutions/ without the solution
    markers, read by the course manifest (the same parsing the generator uses)."""
    found = exercise_named(exercise)
    assert found is not None, f"no exercise {exercise!r} in solutions/"
    return found.reference


def edited(source, *changes):
    """`source` with each (old, new) change made: one mistake, or one other right way.
    Each `old` must occur exactly once, so that a change can neither miss nor hit twice."""
    for old, new in changes:
        assert source.count(old) == 1, f"{old!r} is not once in the source"
        source = source.replace(old, new)
    return source


def predicted(exercise, returned):
    """The cell of a prediction exercise that returns `returned` (a list of events, or any
    other value a learner might return): a learner's own answer, written out whole."""
    return f"def {exercise}():\n    return {returned!r}\n"
