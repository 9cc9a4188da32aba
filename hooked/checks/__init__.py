"""One module of checks per lesson, `lesson_NN_slug.py` (the manifest's `Lesson.checks_module`),
each with a dict `CHECKS = {exercise name: check function}` in the order the lesson teaches
them; tests/course/test_course_manifest.py holds CHECKS to the manifest's exercises."""

import importlib

from hooked import course
from hooked.check_runner import run_check
from hooked.verdict import Result


def checks_for_lesson(lesson):
    """The CHECKS of the lesson named `lesson` ("01_tensor_hooks")."""
    return importlib.import_module(course.lesson_named(lesson).checks_module).CHECKS


def run_exercise_check(lesson, exercise, obj, where=None):
    return run_check(lesson, exercise, checks_for_lesson(lesson)[exercise], obj, where)


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
