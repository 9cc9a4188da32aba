"""What a lesson notebook imports: `check` grades an exercise on the live object,
`hint` shows its hints one level at a time, `try_it` lets a demonstration cell run
before its exercise is written, `reveal` prints the log a prediction exercise predicts, once it
is right."""

import contextlib
import gc

from hooked.checks.event_predictions import after_wrong_try, reveal_text
from hooked.course import exercise_named, lesson_named, lessons
from hooked.grader.check_registry import checks_for_lesson
from hooked.grader.check_runner import run_check_for_object
from hooked.feedback.hints import HINT_COUNT, exercise_hints
from hooked.feedback.learner_tracebacks import learner_raised_not_implemented


def check(exercise):
    """Grade `exercise` (the function or class you wrote) and print the verdict."""
    with grading_settings():
        result = run_check_for_object(exercise)
        text = result.notebook_text() + after_wrong_try(exercise, result, _prediction_of(result))
    print(text)


@contextlib.contextmanager
def grading_settings():
    """The grading worker's settings, for the duration of a check only, the kernel's own as
    they were afterwards: torch with one thread (checks use small tensors, for which a second
    thread only costs), optimizers that do not import torch._dynamo to mark their methods
    (about 1 s), and no cyclic garbage collection: a full pass goes through every object of
    torch and of the kernel, which is not the check's work (the worker sets those objects
    aside once); it runs when the kernel next allocates."""
    import torch  # both only when a check runs: importing this module stays light
    from hooked.checks.optimizers import skip_dynamo_import_in_optimizers_for_the_block
    threads, collecting = torch.get_num_threads(), gc.isenabled()
    torch.set_num_threads(1)
    gc.disable()
    try:
        with skip_dynamo_import_in_optimizers_for_the_block():
            yield
    finally:
        torch.set_num_threads(threads)
        if collecting:
            gc.enable()


def reveal(prediction):
    """Print the events that the code of `prediction` (a `predict_...` exercise) logs, recorded
    now, once your prediction is right; until then, say what to do, never the log."""
    print(revealed(prediction))


def revealed(prediction):
    """What `reveal(prediction)` prints."""
    result = run_check_for_object(prediction)
    return reveal_text(prediction, result, _prediction_of(result))


def _prediction_of(result):
    """The EventPrediction of the exercise `result` is about, or None when it is not a prediction."""
    if result.lesson not in {lesson.name for lesson in lessons()}:
        return None
    return getattr(checks_for_lesson(result.lesson).get(result.exercise), "prediction", None)


_levels_shown = {}  # exercise name -> the last hint level shown in this session


def hint(exercise, level=None):
    """Show the next hint for `exercise` (the function or class, or its name): the idea,
    then the API to use, then almost the solution. `level=N` shows hint N."""
    name = exercise if isinstance(exercise, str) else getattr(exercise, "__name__", repr(exercise))
    hints = exercise_hints(name)
    if not hints:
        print(f"hint() was given {name!r}, which is not an exercise with hints. Pass the exercise itself, "
              'e.g. hint(double_grad), or its name, e.g. hint("double_grad") (needed when it was written '
              "as a lambda, whose name is <lambda>).")
        return
    if level is None:
        level = _levels_shown.get(name, 0) + 1
        if level > len(hints):
            lesson = lesson_named(exercise_named(name).lesson)
            print(f"That was the last hint for {name} ({len(hints)} of {len(hints)}); hint({name}, level=N) "
                  f"shows one again. Once {name} passes, `hooked solution {lesson.short} {name}` shows the "
                  "reference solution.")
            return
    if not 1 <= level <= len(hints):
        print(f"{name} has hints 1 to {len(hints)}; there is no hint {level}.")
        return
    _levels_shown[name] = level
    more = (f"\n\n*Run `hint({name})` again for hint {level + 1}.*" if level < len(hints) else "")
    _show_markdown(hints[level - 1].markdown(HINT_COUNT) + more)


def _show_markdown(text):
    """Rendered in Jupyter; the plain markdown text elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(Markdown(text))
    else:
        print(text)


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
