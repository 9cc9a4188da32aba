"""What a lesson notebook imports: `check` grades an exercise on the live object,
`try_it` lets a demonstration cell run before its exercise is written."""

import contextlib

from hooked.checking import learner_raised_not_implemented
from hooked.checks import run_check_for_object


def check(exercise):
    """Grade `exercise` (the function or class you wrote) and print the verdict."""
    result = run_check_for_object(exercise)
    print(result.notebook_text())


@contextlib.contextmanager
def try_it():
    """Run a demonstration that uses an exercise; if the exercise is still the
    stub, say so instead of raising."""
    try:
        yield
    except NotImplementedError as error:
        if not learner_raised_not_implemented(error):
            raise
        print(f"Not done yet: {error}. Write it in its exercise cell, run that cell, then this one.")
