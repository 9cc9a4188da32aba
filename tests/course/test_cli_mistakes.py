"""`hooked mistakes`: every mistake the checks recognize by name, the ids that reports and
Gradescope's tags carry."""

import json

import pytest

from hooked_cli import LESSONS, hooked, make_course


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("course"))


def test_named_mistakes_are_listed_by_lesson_with_their_exercise_and_what_they_are(course):
    listed = json.loads(hooked(course, "mistakes", "02", "--format", "json").stdout)
    assert listed and all(set(mistake) == {"id", "lesson", "exercise", "what"} for mistake in listed)
    assert {mistake["lesson"] for mistake in listed} == {"02_removing_hooks"}
    assert [mistake["exercise"] for mistake in listed] == sorted(
        (mistake["exercise"] for mistake in listed),
        key=["grad_with_temporary_hook", "HookGroup", "register_named_hook"].index)  # the lesson's order
    for mistake in listed:
        number, exercise, slug = mistake["id"].split(".")
        assert number == "02" and exercise == mistake["exercise"] and slug and mistake["what"].strip()
    assert len({mistake["id"] for mistake in listed}) == len(listed)
    text = hooked(course, "mistakes", "removing_hooks")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == [mistake["id"] for mistake in listed]
    assert lines[-1].startswith(f"{len(listed)} named mistakes")
    every = json.loads(hooked(course, "mistakes", "--format", "json").stdout)  # the copy holds lessons 01 and 02
    assert {mistake["lesson"] for mistake in every} == set(LESSONS) and len(every) > len(listed)


def test_mistakes_of_an_unknown_lesson_or_format_is_an_error_without_a_traceback(course):
    for arguments in (("mistakes", "99"), ("mistakes", "--format", "yaml")):
        completed = hooked(course, *arguments)
        assert completed.returncode == 2, arguments
        assert "Traceback" not in completed.stderr and "error" in completed.stderr, completed.stderr
