"""An exception the check makes happen inside the learner's code (a model whose forward raises,
a block that raises) must come out of it unchanged: hooks are removed in a `finally` or a
`with` block, never by catching the exception. The check looks at the hooks left afterwards."""

from hooked.checks.check_api import LearnerCodeRaised, calling, fail
from hooked.checks.torch_error_hints import fail_with_hint, hint_for


def planted_exception_comes_through(doing, call, planted, returned_normally, hints=()):
    """Run `call()` inside calling(doing) and return the exception that came out of it, when
    `planted(error)` says it is the one the check made. When `call()` returned normally, fail with
    `returned_normally(what it returned)`; when another exception came out, fail with the first of
    `hints` (as calling_with_hints takes them) that fits it, or else as learner code that raised."""
    try:
        with calling(doing):
            returned = call()
    except LearnerCodeRaised as raised:
        if planted(raised.error):
            return raised.error
        hint = hint_for(raised.error, hints)
        if hint:
            fail_with_hint(doing, raised.error, hint)
        raise
    fail(returned_normally(returned))
