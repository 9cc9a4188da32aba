"""Which check grades which exercise: the checks that each lesson's checks module registers with
check_of (hooked.checks.check_api), in the manifest's order, and what stands between them and the
manifest's exercises (an exercise without a check, a check of no exercise, an exercise with two)."""

import importlib

from hooked import course
from hooked.checks.check_api import registered_checks


def registrations_for_lesson(lesson):
    """{exercise: RegisteredCheck} of the lesson named `lesson` ("01_tensor_hooks"), in the manifest's
    order: the checks that its checks module registers with check_of. An exercise without one is left
    out (run_exercise_check says so); one with two is an error."""
    record = course.lesson_named(lesson)
    importlib.import_module(record.checks_module)
    found = {}
    for registered in registered_checks():
        if registered.module == record.checks_module:
            found.setdefault(registered.exercise, []).append(registered)
    twice = [_registered_twice(name, found[name]) for name in record.exercise_names() if len(found.get(name, ())) > 1]
    if twice:
        raise LookupError("; ".join(twice))
    return {name: found[name][0] for name in record.exercise_names() if name in found}


def checks_for_lesson(lesson):
    """{exercise: check} of the lesson named `lesson` ("01_tensor_hooks"), in the manifest's order."""
    return {name: registered.check for name, registered in registrations_for_lesson(lesson).items()}


def _module_path(module):
    return module.replace(".", "/") + ".py"


def missing_check(lesson, exercise):
    return (f"{_module_path(lesson.checks_module)} registers none; write one there under "
            f"@check_of(\"{exercise}\") (README, 'Add a lesson', step 2)")


def _registered_twice(exercise, registrations):
    return (f"exercise {exercise} has {len(registrations)} checks, "
            f"{', '.join(registered.name for registered in registrations)}; keep one")


def registry_problems():
    """What stands between the manifest's exercises and the registered checks, one line each (see
    mismatches); [] when each exercise has one check. Imports every lesson's checks module."""
    problems, lessons = [], []
    for lesson in course.lessons():
        try:
            importlib.import_module(lesson.checks_module)
            lessons.append(lesson)
        except ModuleNotFoundError as error:
            if error.name != lesson.checks_module:
                raise
            problems.append(f"lesson {lesson.name} has no checks module: write {_module_path(lesson.checks_module)}")
    return problems + mismatches(lessons, registered_checks())


def mismatches(lessons, registrations):
    """One line for each exercise of `lessons` that its lesson's checks module gives no check, each
    registration that names no exercise of its module's lesson, and each exercise with two checks."""
    lesson_of = {lesson.checks_module: lesson for lesson in lessons}
    problems, by_exercise = [], {}
    for registered in registrations:
        by_exercise.setdefault(registered.exercise, []).append(registered)
        problems += _names_no_exercise(registered, lesson_of.get(registered.module), lessons)
    for lesson in lessons:
        for name in lesson.exercise_names():
            if not any(registered.module == lesson.checks_module for registered in by_exercise.get(name, ())):
                problems.append(f"lesson {lesson.name}: exercise {name} has no check; {missing_check(lesson, name)}")
    return problems + [_registered_twice(name, found) for name, found in by_exercise.items() if len(found) > 1]


def _names_no_exercise(registered, lesson, lessons):
    """[the problem] when `registered` names no exercise of the lesson whose checks module registered it."""
    if lesson is None:
        return [f"{registered.name} is registered as the check of {registered.exercise!r}, but "
                f"{registered.module} is the checks module of no lesson"]
    if registered.exercise in lesson.exercise_names():
        return []
    elsewhere = [other.name for other in lessons if registered.exercise in other.exercise_names()]
    where = f" (it is an exercise of lesson {elsewhere[0]})" if elsewhere else ""
    return [f"{registered.name} is registered as the check of {registered.exercise!r}, which is no exercise of "
            f"lesson {lesson.name}{where}; its exercises are {', '.join(lesson.exercise_names())}"]
