"""What the tests of the `hooked` command share: a temporary copy of the course, and
running `python -m hooked ...` in it as a learner would (output piped, no colour
settings inherited from whoever runs the tests)."""

import concurrent.futures
import os
import shutil
import subprocess
import sys

from hooked.course import ROOT, lesson_named, lesson_names
from hooked.lesson_files.solution_markers import lesson_text_from_solution

# Lessons 01 and 02 are finished; copying only them keeps these tests independent of
# lessons that are still being written.
LESSONS = ("01_tensor_hooks", "02_removing_hooks")
_COLOUR_SETTINGS = ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "TERM")


def make_course(folder):
    """A copy of the course with lessons 01 and 02, fresh, in `folder`."""
    other_checks = [f"lesson_{lesson}.py" for lesson in lesson_names() if lesson not in LESSONS]
    shutil.copytree(ROOT / "hooked", folder / "hooked",
                    ignore=shutil.ignore_patterns("__pycache__", *other_checks))
    for part in ("solutions", "lessons", "tests"):
        (folder / part).mkdir(parents=True)
    for lesson in map(lesson_named, LESSONS):
        shutil.copy(lesson.solution_path, folder / "solutions")
        shutil.copy(lesson.test_path, folder / "tests")
        write_lesson(folder, lesson.name)
    shutil.copy(ROOT / "pyproject.toml", folder)
    return folder


def lesson_text(lesson, solved=(), replacements=None):
    """The learner's lesson as the generator makes it, with the exercises named in
    `solved` written as in the solution, and then `replacements` ({old: new}) applied."""
    record = lesson_named(lesson)
    exercises = {exercise.name: exercise for exercise in record.exercises}
    assert set(solved) <= exercises.keys(), set(solved) - exercises.keys()
    text = record.solution_path.read_text(encoding="utf-8")
    for name in solved:
        text = text.replace(exercises[name].solution_cell, exercises[name].reference)
    text = lesson_text_from_solution(text)
    for old, new in (replacements or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def write_lesson(course, lesson, solved=(), replacements=None, suffix=".py"):
    path = course / "lessons" / f"{lesson}{suffix}"
    text = lesson_text(lesson, solved, replacements)
    if suffix == ".ipynb":
        import jupytext
        jupytext.write(jupytext.reads(text, fmt="py:percent"), path)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def environment(**changes):
    env = {name: value for name, value in os.environ.items() if name not in _COLOUR_SETTINGS}
    env.update(HOOKED_INNER_RUN="1", **changes)
    return env


def hooked(course, *arguments, env=None, timeout=180):
    """Run `python -m hooked ARGUMENTS` in `course`; the CompletedProcess, output as text."""
    return subprocess.run([sys.executable, "-m", "hooked", *arguments], cwd=course, capture_output=True,
                          text=True, timeout=timeout, env=env or environment())


def start_hooked(course, *arguments, env=None, **options):
    """Start `python -m hooked ARGUMENTS` in `course` and return the Popen."""
    return subprocess.Popen([sys.executable, "-m", "hooked", *arguments], cwd=course,
                            env=env or environment(), **options)


def pytest_in(course, *arguments):
    """Run the course's pytest in `course` (the learner's other way to grade)."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments], cwd=course,
                          capture_output=True, text=True, timeout=300, env=environment())


def concurrently(*calls):
    """Call each function in a thread of its own; their results, in order. (Grading runs
    mostly wait for torch to import, so two at once take little longer than one.)"""
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]
