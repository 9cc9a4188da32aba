"""The mistake catalogue, one file per lesson (the entry format is described in
tests/course/test_mistake_catalogue.py), and the edit its files share."""


def edited(source, *changes):
    """`source` with each (old, new) change made: one mistake, or one other right way.
    Each `old` must occur exactly once, so that a change can neither miss nor hit twice."""
    for old, new in changes:
        assert source.count(old) == 1, f"{old!r} is not once in the source"
        source = source.replace(old, new)
    return source
