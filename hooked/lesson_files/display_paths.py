"""How a file and line of the learner's code are named in feedback."""

import os
import re

_IPYTHON_CELL = re.compile(r"/ipykernel_\d+/\d+\.py$")


def place(filename, lineno):
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
