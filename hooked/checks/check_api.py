"""What a check is written with.

A check is a function `check_x(x)` that calls the learner's object `x` inside
`with calling("what the check is doing"):`, and raises `CheckFailed` (through `fail(...)`)
with a plain-words message when the behaviour is wrong. It is registered as the check of its
exercise, by the name the exercise's heading in solutions/ gives it, with the named mistakes
its diagnoses recognize: {slug: one line of what the learner did}.

    @check_of("double_grad", mistakes={"in-place": "changes grad in place instead of returning a new tensor"})
    def check_double_grad(double_grad):
        ...
        fail("... changed `grad` in place ...", "in-place")

A mistake's id is "<lesson number>.<exercise>.<slug>", e.g. "01.double_grad.in-place": stable, like a
public API (tests/course/mistake_ids.txt lists every id; renaming one is a change to document).

The grader (hooked.grader.check_runner) finds a lesson's checks by the module that registered them.
"""

import contextlib
import dataclasses
import re

from hooked.feedback.learner_tracebacks import learner_raised_not_implemented


class CheckFailed(Exception):
    """The learner's code behaved wrongly; the message says how, and `mistake`, the slug of a named
    mistake of the exercise, which mistake it is (None: a failure no diagnosis names)."""

    def __init__(self, message, mistake=None):
        super().__init__(message)
        self.message = message
        self.mistake = mistake


class LearnerCodeRaised(Exception):
    """The learner's code raised while a check was calling it."""

    def __init__(self, doing, error):
        super().__init__(doing)
        self.doing = doing
        self.error = error


def fail(message, mistake=None):
    """Fail the check with `message`; `mistake` is the slug of the named mistake it recognized."""
    raise CheckFailed(message, mistake)


# The named mistakes every exercise has: the runner's, not a diagnosis of a check.
RUNNER_MISTAKES = {
    "raised": "the learner's code raised an exception that no diagnosis explains while the check called it",
    "timed-out": "the check was stopped at the time limit: a loop that never ends, or a very slow computation",
    "crashed": "the learner's code ended the grading process (os._exit, sys.exit, or a crash)",
    "tampered": "the learner's code changed the grading machinery or the torch functions a check relies on",
}


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


@dataclasses.dataclass(frozen=True)
class RegisteredCheck:
    """A check and the exercise it grades, as `check_of` recorded them."""
    exercise: str       # "double_grad", as the exercise's heading in solutions/ names it
    check: object       # the function that grades the learner's object
    module: str         # the checks module that registered it: "hooked.checks.lesson_01_tensor_hooks"
    budget_ms: int = 0  # what its first call in a grading process may cost; 0: the course's budget
    why: str = ""       # why it may cost budget_ms
    mistakes: tuple = ()  # ((slug, one line of what the learner did), ...): the named mistakes it recognizes

    @property
    def name(self):
        """"hooked.checks.lesson_01_tensor_hooks.check_double_grad": where to find it, for messages."""
        return f"{self.module}.{self.check.__qualname__}"


_REGISTERED = []  # every RegisteredCheck, in the order the checks modules registered them


def check_of(exercise, budget_ms=0, why="", mistakes=None):
    """Register the decorated function as the check of `exercise`, with `mistakes`, {slug: one line},
    the named mistakes its diagnoses recognize. A check that cannot keep to the grading budget
    (hooked.grader.cost) gives what it may cost, `budget_ms`, and `why`, which the README's Speed
    paragraph repeats."""
    if bool(budget_ms) != bool(why):
        raise ValueError(f"check_of({exercise!r}): give budget_ms and why together, or neither")

    def register(check):
        register_check(exercise, check, check.__module__, budget_ms, why, mistakes)
        return check
    return register


_SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def register_check(exercise, check, module, budget_ms=0, why="", mistakes=None):
    """Record `check` as the check of `exercise` that the checks module named `module` gives. The
    same function registered again (its module imported once more) replaces its record."""
    mistakes = dict(mistakes or {})
    for slug, what in mistakes.items():
        if not _SLUG.fullmatch(slug) or slug in RUNNER_MISTAKES or not what.strip():
            raise ValueError(f"check_of({exercise!r}): mistake {slug!r} needs a slug of lower-case words joined "
                             "by '-', not one of the runner's, and a line saying what it is")
    record = RegisteredCheck(exercise, check, module, budget_ms, why, tuple(mistakes.items()))
    _REGISTERED[:] = [old for old in _REGISTERED if (old.exercise, old.name) != (exercise, record.name)]
    _REGISTERED.append(record)


def registered_checks():
    """(RegisteredCheck, ...) of every checks module imported so far."""
    return tuple(_REGISTERED)


# How a check's own budget is written, read from the source by the grading plan: its process never
# imports torch, so never the checks (tests/course/test_grading_budget.py holds it to the registry).
_DECLARED_BUDGET = re.compile(r'^@check_of\("(?P<exercise>\w+)", budget_ms=(?P<ms>\d+)', re.MULTILINE)


def declared_budgets(source):
    """{exercise: budget_ms} of the checks that the checks module `source` (its text) allows more than
    the course's budget, as its `@check_of(...)` lines say."""
    return {match["exercise"]: int(match["ms"]) for match in _DECLARED_BUDGET.finditer(source)}


def mistake_id(lesson_number, exercise, slug):
    """The stable id of a named mistake: "01.double_grad.in-place"."""
    return f"{lesson_number:02d}.{exercise}.{slug}"
