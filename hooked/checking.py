"""What every check shares: the verdict, the ways a check fails, and turning
an exception raised by a learner's code into a message about the learner's line.

A check is a function `check_x(x)` that calls the learner's object `x`, and raises
`CheckFailed` with a plain-words message when the behaviour is wrong.
"""

import contextlib
import dataclasses
import linecache
import os
import re
import sysconfig
import traceback

STATUSES = ("passed", "failed", "not_attempted", "error")

_IPYTHON_CELL = re.compile(r"/ipykernel_\d+/\d+\.py$")

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_DIRS = tuple(
    os.path.abspath(path) + os.sep
    for path in {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)


@dataclasses.dataclass
class Result:
    lesson: str
    exercise: str
    status: str
    message: str
    graded_file: str = ""
    output: str = ""
    location: str = ""  # where the exercise is written, e.g. "lessons/01_tensor_hooks.py line 241"

    def as_report_entry(self):
        return {"lesson": self.lesson, "exercise": self.exercise,
                "status": self.status, "message": self.message}

    def notebook_text(self):
        mark = {"passed": "✅", "failed": "❌", "not_attempted": "⏳", "error": "⚠️"}[self.status]
        return f"{mark} {self.exercise}: {self.message}"


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


def is_learner_file(filename):
    """Learner code is anything that is neither this package, nor Python's or an
    installed library's code (lesson files, notebook cells, test snippets)."""
    if filename.startswith("<frozen"):
        return False
    path = os.path.abspath(filename)
    if path.startswith(_PACKAGE_DIR + os.sep):
        return False
    return not path.startswith(_LIBRARY_DIRS)


def learner_frame(error):
    """(filename, line number, source line) of the innermost learner frame in the
    traceback of `error`, or None when the error did not pass through learner code."""
    found = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        filename = frame.f_code.co_filename
        if is_learner_file(filename):
            found = (filename, lineno, linecache.getline(filename, lineno).strip())
    return found


def learner_raised_not_implemented(error):
    """True when the learner's own line raised a NotImplementedError (the stub does),
    not when torch raised one somewhere inside a call the learner made."""
    if not isinstance(error, NotImplementedError):
        return False
    frames = list(traceback.walk_tb(error.__traceback__))
    return bool(frames) and is_learner_file(frames[-1][0].f_code.co_filename)


_LONGEST_ERROR_TEXT = 1000


def error_text(error):
    """'ValueError: msg', also for exceptions whose message is huge or cannot be shown."""
    try:
        message = str(error)
    except Exception:
        message = "(its message could not be shown)"
    if len(message) > _LONGEST_ERROR_TEXT:
        message = message[:_LONGEST_ERROR_TEXT] + f"... ({len(message) - _LONGEST_ERROR_TEXT} more characters)"
    return f"{type(error).__name__}: {message}".rstrip(": ")


def describe_learner_error(error):
    """'ValueError: msg' followed by the learner's line, if there is one."""
    text = error_text(error)
    frame = learner_frame(error)
    if frame is not None:
        filename, lineno, line = frame
        text += f"\n  your code, {_place(filename, lineno)}:\n      {line}"
    return text


def _place(filename, lineno):
    """'lessons/01_tensor_hooks.py line 12', or, for code run in a Jupyter kernel
    (whose cells IPython names like /tmp/ipykernel_123/456.py), 'line 12 of its notebook cell'."""
    if _IPYTHON_CELL.search(filename.replace("\\", "/")):
        return f"line {lineno} of its notebook cell"
    return f"{display_path(filename)} line {lineno}"


def display_path(filename):
    """The path relative to where grading was started (the worker runs elsewhere)."""
    try:
        relative = os.path.relpath(filename, os.environ.get("HOOKED_DISPLAY_ROOT") or os.getcwd())
    except ValueError:  # another drive on Windows
        return filename
    return filename if relative.startswith("..") else relative


def run_check(lesson, exercise, check, obj, where=None):
    """Run `check(obj)` and turn what happened into a Result. Torch's global state
    is restored afterwards, whatever the learner's code did to it. `where` is the line that
    defines the exercise, as the grader shows it ("lessons/01_tensor_hooks.py line 241")."""
    from hooked.isolation import torch_state_restored

    def result(status, message):
        return Result(lesson, exercise, status, message)

    try:
        with torch_state_restored():
            check(obj)
    except CheckFailed as failure:
        return result("failed", failure.message)
    except LearnerCodeRaised as raised:
        if learner_raised_not_implemented(raised.error):
            return _not_attempted(result, exercise, raised.error, where)
        return result("failed", f"{_capitalized(raised.doing)} raised {describe_learner_error(raised.error)}")
    except NotImplementedError as error:
        if learner_raised_not_implemented(error):
            return _not_attempted(result, exercise, error, where)
        return _unexpected(result, exercise, error)
    except SystemExit as error:
        return result("failed", f"your code called sys.exit({error.code!r}) while {exercise} was checked; "
                                "an exercise should return or raise, never exit.")
    except Exception as error:
        return _unexpected(result, exercise, error)
    return result("passed", "passed.")


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
    definition = re.compile(rf"(?:async\s+def|def|class)\s+{re.escape(exercise)}\b")
    for number in range(lineno, 0, -1):
        if definition.match(linecache.getline(filename, number)):
            return _place(filename, number)
    return _place(filename, lineno)


def _unexpected(result, exercise, error):
    if learner_frame(error) is not None:
        return result("failed", f"while checking {exercise}, your code raised {describe_learner_error(error)}")
    # No learner frame: the checker itself broke. That is the course's bug; show everything.
    details = "".join(traceback.format_exception(error))
    return result("error", f"the checker for {exercise} failed (a bug in the course, please report it):\n{details}")


def _capitalized(text):
    return text[:1].upper() + text[1:]
