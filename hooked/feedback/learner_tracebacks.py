"""Reading a traceback for the learner's part of it: which frames are the learner's
code, which line raised, and the error told with that line."""

import linecache
import os
import sysconfig
import traceback

from hooked.lesson_files.display_paths import place

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # hooked/, whose frames are the course's
_LIBRARY_DIRS = tuple(
    os.path.abspath(path) + os.sep
    for path in {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)


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
        text += f"\n  your code, {place(filename, lineno)}:\n      {line}"
    return text
