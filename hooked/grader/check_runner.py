"""Run one check on the learner's object and turn what happened into a Result:
passed, failed (with the check's message or the learner's error), not attempted
(the stub still raises), or error (the check itself broke)."""

import linecache
import traceback

from hooked import course
from hooked.checks.check_api import CheckFailed, LearnerCodeRaised, capitalized, mistake_id
from hooked.lesson_files.display_paths import place
from hooked.feedback.learner_tracebacks import describe_learner_error, error_text, learner_frame, learner_raised_not_implemented
from hooked.feedback.verdict import Result
from hooked.grader.check_registry import checks_for_lesson, missing_check
from hooked.lesson_files.lesson_format import definition_line_at_or_above


def run_check(lesson, exercise, check, obj, where=None):
    """Run `check(obj)` and turn what happened into a Result. Torch's global state
    is restored afterwards, whatever the learner's code did to it. `where` is the line that
    defines the exercise, as the grader shows it ("lessons/01_tensor_hooks.py line 241")."""
    from hooked.checks.isolation import torch_state_restored  # imports torch: only where checks run

    def result(status, message, mistake=None):
        return Result(lesson, exercise, status, message, mistake=named_mistake(lesson, exercise, mistake))

    try:
        with torch_state_restored():
            check(obj)
    except CheckFailed as failure:
        return result("failed", failure.message, failure.mistake)
    except LearnerCodeRaised as raised:
        if learner_raised_not_implemented(raised.error):
            return _not_attempted(result, exercise, raised.error, where)
        return result("failed", f"{capitalized(raised.doing)} raised {describe_learner_error(raised.error)}",
                      "raised")
    except NotImplementedError as error:
        if learner_raised_not_implemented(error):
            return _not_attempted(result, exercise, error, where)
        return _unexpected(result, exercise, error)
    except SystemExit as error:
        return result("failed", f"your code called sys.exit({error.code!r}) while {exercise} was checked; "
                                "an exercise should return or raise, never exit.", "crashed")
    except Exception as error:
        return _unexpected(result, exercise, error)
    return result("passed", "passed.")


def named_mistake(lesson, exercise, slug):
    """The id of the named mistake `slug` of `exercise` ("01.double_grad.in-place"); None for no slug."""
    return mistake_id(course.lesson_named(lesson).number, exercise, slug) if slug else None


def _not_attempted(result, exercise, error, where=None):
    # One line per exercise: its `def` (or `class`) line, the one "next:" gives, not the
    # line of the `raise` inside it.
    where = where or _definition_place(exercise, error)
    line = f" ({where})" if where else ""
    what = error_text(error).removeprefix("NotImplementedError: ")
    if what == "NotImplementedError":
        what = f"{exercise} still raises NotImplementedError"
    return result("not_attempted", f"not attempted yet: {what}{line}. Replace the `raise NotImplementedError` "
                                   "stub in its exercise cell with your code.")


def _definition_place(exercise, error):
    """Where `exercise` is defined, found from the learner's line that raised (a notebook's
    check() has no grader to say it): the nearest `def exercise` or `class exercise` at
    or above that line, else that line itself."""
    frame = learner_frame(error)
    if frame is None:
        return None
    filename, lineno, _ = frame
    text = "".join(linecache.getlines(filename))
    return place(filename, definition_line_at_or_above(text, exercise, lineno) or lineno)


def _unexpected(result, exercise, error):
    if learner_frame(error) is not None:
        return result("failed", f"while checking {exercise}, your code raised {describe_learner_error(error)}",
                      "raised")
    # No learner frame: the checker itself broke. That is the course's bug; show everything.
    details = "".join(traceback.format_exception(error))
    return result("error", f"the checker for {exercise} failed (a bug in the course, please report it):\n{details}")


def run_exercise_check(lesson, exercise, obj, where=None):
    check = checks_for_lesson(lesson).get(exercise)
    if check is None:
        return Result(lesson, exercise, "error", f"the course has no check for {exercise} yet: "
                                                 f"{missing_check(course.lesson_named(lesson), exercise)}.")
    return run_check(lesson, exercise, check, obj, where)


def run_check_for_object(obj):
    """Grade a live function or class by its name (what a notebook's `check(x)` does)."""
    name = getattr(obj, "__name__", None)
    exercise = course.exercise_named(name) if isinstance(name, str) else None
    if exercise is None:
        known = ", ".join(name for lesson in course.lessons() for name in lesson.exercise_names())
        given = f"a function named {name!r}" if isinstance(name, str) else f"{type(obj).__name__} {obj!r:.60}"
        return Result("?", name if isinstance(name, str) else "check", "error",
                      f"check() was given {given}, which is not one of the exercises. Pass the exercise itself, "
                      f"defined with `def` or `class` under its own name, e.g. check(double_grad). "
                      f"The exercises: {known}.")
    return run_exercise_check(exercise.lesson, name, obj)
