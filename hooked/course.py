"""Where the course lives on disk and which lessons it has. The lessons are the
files in solutions/ (the single source), in the order of their number."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOLUTIONS_DIR = ROOT / "solutions"
LESSONS_DIR = ROOT / "lessons"

_LESSON_FILE = re.compile(r"^\d\d_[a-z0-9_]+\.py$")


def lesson_names():
    """['01_tensor_hooks', '02_removing_hooks', ...]"""
    return sorted(path.stem for path in SOLUTIONS_DIR.glob("*.py") if _LESSON_FILE.match(path.name))


def checks_module_name(lesson):
    return f"hooked.checks.lesson_{lesson}"
