"""What a check is written with.

A check is a function `check_x(x)` that calls the learner's object `x` inside
`with calling("what the check is doing"):`, and raises `CheckFailed` (through `fail(...)`)
with a plain-words message when the behaviour is wrong.
"""

import contextlib

from hooked.feedback.learner_tracebacks import learner_raised_not_implemented


class CheckFailed(Exception):
    """The learner's code behaved wrongly; the message says how."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class LearnerCodeRaised(Exception):
    """The learner's code raised while a check was calling it."""

    def __init__(self, doing, error):
        super().__init__(doing)
        self.doing = doing
        self.error = error


def fail(message):
    raise CheckFailed(message)


@contextlib.contextmanager
def calling(doing):
    """Wrap a call into learner code; `doing` says what the check was doing,
    e.g. "calling double_grad(grad) with grad of shape (2, 3)"."""
    try:
        yield
    except (CheckFailed, LearnerCodeRaised):
        raise
    except NotImplementedError as error:
        if learner_raised_not_implemented(error):
            raise
        raise LearnerCodeRaised(doing, error) from error
    except Exception as error:
        raise LearnerCodeRaised(doing, error) from error


def capitalized(text):
    """`doing` at the start of a sentence: "calling f(x)" -> "Calling f(x)"."""
    return text[:1].upper() + text[1:]
