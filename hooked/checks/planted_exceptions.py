"""An exception the check makes happen inside the learner's code (a model whose forward raises,
a block that raises) must come out of it unchanged: hooks are removed in a `finally` or a
`with` block, never by catching the exception. The check looks at the hooks left afterwards."""

from hooked.checks.check_api import LearnerCodeRaised, calling, fail
from hooked.checks.torch_error_hints import fail_with_hint, hint_for


def planted_exception_comes_through(doing, call, planted, returned_normally, hints=()):
    """Run `call()` inside calling(doing) and return the exception that came out of it, when
    `planted(error)` says it is the one the check made. When `call()` returned normally, fail with
    `returned_normally(what it returned)` (a message, or (message, slug); the slug defaults to
    "swallowed-exception", which the exercise's check_of must then name); when another exception came out, fail with the first of
    `hints` (as calling_with_hints takes them) that fits it, or else as learner code that raised."""
    try:
        with calling(doing):
            returned = call()
    except LearnerCodeRaised as raised:
        if planted(raised.error):
            return raised.error
        found = hint_for(raised.error, hints)
        if found:
            fail_with_hint(doing, raised.error, found[1], found[0])
        raise
    fail(*_message_and_mistake(returned_normally(returned)))


def _message_and_mistake(said):
    """`returned_normally`'s answer: a message, or (message, slug of the named mistake)."""
    return said if isinstance(said, tuple) else (said, "swallowed-exception")
