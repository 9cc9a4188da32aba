"""One module of checks per lesson, `lesson_NN_slug.py`, each with a dict
`CHECKS = {exercise name: check function}` in the order the lesson teaches them."""

import importlib

from hooked.check_runner import run_check
from hooked.course import checks_module_name, lesson_names
from hooked.verdict import Result


def checks_for_lesson(lesson):
    return importlib.import_module(checks_module_name(lesson)).CHECKS


def find_lesson_of(exercise):
    for lesson in lesson_names():
        if exercise in checks_for_lesson(lesson):
            return lesson
    return None


def run_exercise_check(lesson, exercise, obj, where=None):
    return run_check(lesson, exercise, checks_for_lesson(lesson)[exercise], obj, where)


def run_check_for_object(obj):
    """Grade a live function or class by its name (what a notebook's `check(x)` does)."""
    name = getattr(obj, "__name__", None)
    lesson = find_lesson_of(name) if isinstance(name, str) else None
    if lesson is None:
        known = ", ".join(name for lesson in lesson_names() for name in checks_for_lesson(lesson))
        given = f"a function named {name!r}" if isinstance(name, str) else f"{type(obj).__name__} {obj!r:.60}"
        return Result("?", name if isinstance(name, str) else "check", "error",
                      f"check() was given {given}, which is not one of the exercises. Pass the exercise itself, "
                      f"defined with `def` or `class` under its own name, e.g. check(double_grad). "
                      f"The exercises: {known}.")
    return run_exercise_check(lesson, name, obj)
