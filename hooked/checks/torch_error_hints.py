"""Calling learner code with hints for the errors torch raises when a hook breaks its rules:
torch's own text ("returned an invalid number of grad_input") says what went wrong inside
torch, the hint says what it means for the exercise."""

import contextlib

from hooked.checks.check_api import LearnerCodeRaised, calling, capitalized, fail
from hooked.feedback.learner_tracebacks import describe_learner_error


def fail_with_hint(doing, error, hint, mistake=None):
    """Fail as the runner reports learner code that raised ("Calling f(x) raised ValueError: ...,
    your code, line ..."), with `hint` after it; `mistake` is the slug of the named mistake."""
    fail(f"{capitalized(doing)} raised {describe_learner_error(error)}\n{hint}", mistake)


def hint_for(error, hints):
    """(slug, hint) of the first of `hints` that fits `error`, or None. Each entry is a triple (a text
    that torch's message contains, the slug of the named mistake, the hint), or a function of the
    error that gives (slug, hint) or None."""
    for entry in hints:
        if callable(entry):
            found = entry(error)
        else:
            text, slug, hint = entry
            found = (slug, hint) if text in str(error) else None
        if found:
            return found
    return None


@contextlib.contextmanager
def calling_with_hints(doing, hints):
    """`calling(doing)`; when the learner's code raises an error that one of `hints` matches, the
    failure says what the error means after torch's own words."""
    try:
        with calling(doing):
            yield
    except LearnerCodeRaised as raised:
        found = hint_for(raised.error, hints)
        if found is None:
            raise
        slug, hint = found
        fail_with_hint(doing, raised.error, hint, slug)
