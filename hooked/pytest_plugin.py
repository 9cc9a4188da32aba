"""The pytest side of grading: options, one test per exercise, the progress
table and the JSON report. Installed as a pytest plugin (entry point `pytest11`).

This module must not import torch: learner code and torch live in the grading
worker, and keeping them out of pytest's own process keeps a run fast."""

import pytest

from hooked import course
from hooked.command import shared_options
from hooked.feedback import progress
from hooked.grader.engine import Grader
from hooked.grader.plan import worker_count

_GRADER = pytest.StashKey()
_LESSON_FILES_GIVEN = pytest.StashKey()
_RESULTS = pytest.StashKey()


def pytest_addoption(parser):
    group = parser.getgroup("hooked", "Hooked course grading")
    _add(group, shared_options.LESSONS_DIR, default=None)
    group.addoption("--solutions", action="store_true",
                    help="grade solutions/ strictly: an exercise not attempted fails")
    _add(group, shared_options.REPORT, default=None)
    _add(group, shared_options.TIME_LIMIT, default=str(shared_options.DEFAULT_TIME_LIMIT))
    group.addoption("--course", action="store_true",
                    help="also run the course's own tests (tests/course): generator, notebooks, mistake catalogue")
    group.addoption("--site", action="store_true",
                    help="also run the course website's browser tests (tests/site; needs mkdocs, Playwright, Chromium)")


def _add(group, option, default):
    group.addoption(option.name, metavar=option.metavar, default=default, help=option.help)


def _read(config, option):
    """The value of `option`, read as `hooked` reads it; a mistake is a UsageError (no traceback)."""
    text = config.getoption(option.name)
    try:
        return None if text is None else option.read(text)
    except ValueError as error:
        raise pytest.UsageError(f"{option.name} {error}") from None


def _lessons_dir(config):
    # Without a path argument pytest's rootdir is the course (where pyproject.toml is).
    option = config.getoption("--lessons-dir")
    if config.getoption("--solutions"):
        if option is not None:
            raise pytest.UsageError("--solutions grades solutions/; it cannot be combined with --lessons-dir.")
        return config.rootpath / "solutions"
    if option is None:
        return config.rootpath / "lessons"
    return _read(config, shared_options.LESSONS_DIR)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line("markers", "exercise(lesson, name): grades one exercise of a lesson")
    lessons_dir = _lessons_dir(config)
    _read(config, shared_options.REPORT)  # a report that cannot be written is said now, before grading
    # pytest picks its root folder before it knows our options, so `--lessons-dir DIR`
    # can make DIR the root; then keep pytest's cache out of the learner's folder.
    if config.getoption("--lessons-dir") is not None and not (config.rootpath / "tests").is_dir():
        for name in ("cacheprovider", "lfplugin", "nfplugin"):  # the parts of it that write
            config.pluginmanager.set_blocked(name)
    try:
        course.lessons()  # an exercise heading out of format: the one line that says where, not a traceback
    except course.HeadingError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[_GRADER] = Grader(lessons_dir, _read(config, shared_options.TIME_LIMIT))
    config.stash[_RESULTS] = []
    # Torch starts importing in the workers now, while pytest collects; the plan (which lessons)
    # comes once it has. Not for the course's own tests, which mostly grade nothing.
    if not (config.getoption("--course") or config.getoption("--site") or config.getoption("collectonly")
            or config.getoption("help")):
        config.stash[_GRADER].prestart(worker_count(len(course.lessons())))


def pytest_ignore_collect(collection_path, config):
    if course.LESSON_FILE.match(collection_path.name):
        return True  # a lesson is not a test module
    # Not config.rootpath: pytest fixes the rootdir before it knows our options, so
    # `--lessons-dir /elsewhere` can move it; the course's own tests are recognised by shape.
    is_course_tests = (collection_path.parts[-2:] == ("tests", "course")
                       and (collection_path.parent.parent / "solutions").is_dir())
    if is_course_tests and not config.getoption("--course"):
        return True
    is_site_tests = (collection_path.parts[-2:] == ("tests", "site")
                     and (collection_path.parent.parent / "solutions").is_dir())
    if is_site_tests and not config.getoption("--site"):
        return True
    return None


class _LessonGivenAsTestFile(pytest.File):
    def collect(self):
        return []


def pytest_pycollect_makemodule(module_path, parent):
    """`pytest lessons/01_tensor_hooks.py` would import the lesson, demonstrations and all,
    as a test module; collect nothing and say how to grade it instead."""
    if course.LESSON_FILE.match(module_path.name):
        parent.config.stash.setdefault(_LESSON_FILES_GIVEN, []).append(module_path)
        return _LessonGivenAsTestFile.from_parent(parent, path=module_path)
    return None


def pytest_collection_finish(session):
    # The exercises in the order pytest will run them: the grader starts its workers (torch
    # imports while pytest goes on) and grades ahead; each test waits for its own result.
    plan = [tuple(marker.args) for marker in (item.get_closest_marker("exercise") for item in session.items)
            if marker is not None]
    if plan:
        session.config.stash[_GRADER].start(plan)


def pytest_unconfigure(config):
    if _GRADER in config.stash:
        config.stash[_GRADER].close()


def lesson_tests(lesson):
    """{"test_<exercise>": test, ...}: one test per exercise of the lesson named `lesson`,
    in the manifest's order. A grading file takes them with `globals().update(...)`, so
    that a test's id is tests/test_NN_slug.py::test_<exercise> (`pytest -k <exercise>`)."""
    found = course.lesson_named(lesson)
    if found is None:
        raise LookupError(f"lesson_tests({lesson!r}): solutions/ has no lesson {lesson}.py; "
                          f"the lessons are {', '.join(course.lesson_names())}.")
    return {f"test_{name}": _exercise_test(lesson, name) for name in found.exercise_names()}


def _exercise_test(lesson, exercise):
    """A test function that grades `exercise` of `lesson`."""

    @pytest.mark.exercise(lesson, exercise)
    def test(request):
        config = request.config
        result = config.stash[_GRADER].grade(lesson, exercise)
        config.stash[_RESULTS].append(result)
        if result.output:
            print(result.output)  # pytest shows it under "Captured stdout" when the test fails
        if result.status == "passed":
            return
        if result.status == "not_attempted" and not config.getoption("--solutions"):
            pytest.skip(result.message)
        pytest.fail(progress.feedback(result), pytrace=False)

    test.__name__ = f"test_{exercise}"
    return test


def pytest_terminal_summary(terminalreporter, config):
    results = config.stash.get(_RESULTS, [])
    if not results:
        for path in config.stash.get(_LESSON_FILES_GIVEN, []):
            terminalreporter.write_line(f"{path.name} is a lesson, not a test file; grade it with "
                                        f"`pytest tests/test_{path.stem}.py` from the course folder.")
        if not config.stash.get(_LESSON_FILES_GIVEN, []) and not (config.getoption("--course")
                                                                   or config.getoption("--site")):
            terminalreporter.write_line("No exercise was graded. Run `pytest` from the course folder (the one "
                                        "with README.md and tests/), or `pytest tests/test_01_tensor_hooks.py`.")
        return
    terminalreporter.section("Hooked progress")
    for line in progress.table_lines(results):
        terminalreporter.write_line(line)


def pytest_sessionfinish(session):
    path = session.config.getoption("--report")
    if path:
        progress.write_json(path, progress.report(session.config.stash.get(_RESULTS, [])))
