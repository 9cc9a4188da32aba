"""`hooked export`: Gradescope's autograder results.json, and the grader's own JSON report
(the same as `pytest --report` writes)."""

import json
import numbers
import os

import pytest

from hooked.course import exercise_named
from hooked_cli import concurrently, hooked, make_course, pytest_in, write_lesson

# Gradescope's autograder "Output format", as documented at
# https://gradescope-autograders.readthedocs.io/en/latest/specs/ (sections "Output format",
# "Controlling Test Case Visibility", "Test case status" and "Output String Formatting").
TOP_LEVEL_FIELDS = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                    "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
               "visibility", "extra_data"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
STATUSES = {"passed", "failed"}
FORMATS = {"text", "simple_format", "html", "md", "ansi"}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = make_course(tmp_path_factory.mktemp("course"))
    write_lesson(course, "01_tensor_hooks", solved={"double_grad", "record_grads"},
                 replacements={'raise NotImplementedError("make_clip_hook is not written yet")':
                               "return lambda grad: grad  # never clips"})
    return course


def test_gradescope_results_have_only_documented_fields_one_test_per_exercise(course):
    completed = hooked(course, "export", "--format", "gradescope", "--out", "results.json")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "wrote results.json: 2 of 7 exercises pass."
    results = json.loads((course / "results.json").read_text(encoding="utf-8"))

    assert set(results) <= TOP_LEVEL_FIELDS
    assert isinstance(results["score"], numbers.Number) and isinstance(results["execution_time"], numbers.Number)
    assert results["visibility"] in VISIBILITIES and results["stdout_visibility"] in VISIBILITIES
    assert results["output_format"] in FORMATS and isinstance(results["output"], str)
    for test in results["tests"]:
        assert set(test) <= TEST_FIELDS, test
        assert {"score", "max_score", "name", "output", "status"} <= set(test)  # score: required without a top-level one
        assert isinstance(test["score"], numbers.Number) and isinstance(test["max_score"], numbers.Number)
        assert test["status"] in STATUSES and test["visibility"] in VISIBILITIES
        assert test["output_format"] in FORMATS
        assert isinstance(test["number"], str) and all(isinstance(tag, str) for tag in test["tags"])

    by_name = {test["name"]: test for test in results["tests"]}
    assert list(by_name) == [f"01_tensor_hooks: {name}" for name in
                             ("double_grad", "make_scale_hook", "make_clip_hook", "record_grads")] + \
                            [f"02_removing_hooks: {name}" for name in
                             ("grad_with_temporary_hook", "HookGroup", "register_named_hook")]
    assert [test["score"] for test in results["tests"]] == [1, 0, 0, 1, 0, 0, 0]
    assert results["score"] == 2 == sum(test["score"] for test in results["tests"])
    assert {test["max_score"] for test in results["tests"]} == {1}
    clip = by_name["01_tensor_hooks: make_clip_hook"]
    assert clip["status"] == "failed" and clip["output"].startswith("make_clip_hook (lessons/01_tensor_hooks.py line ")
    # The failed test's tags end with the id of the mistake its check recognized; the others have none.
    assert clip["tags"][:2] == ["01_tensor_hooks", "failed"] and clip["tags"][2] in _named_mistakes(course, "01")
    assert len(clip["tags"]) == 3 and clip["tags"][2].startswith("01.make_clip_hook.")
    assert by_name["01_tensor_hooks: double_grad"]["tags"] == ["01_tensor_hooks", "passed"]
    assert by_name["02_removing_hooks: HookGroup"]["tags"] == ["02_removing_hooks", "not_attempted"]
    assert "not attempted yet" in by_name["02_removing_hooks: HookGroup"]["output"]
    assert [test["number"] for test in results["tests"]][:5] == ["1.1", "1.2", "1.3", "1.4", "2.1"]
    for name, test in by_name.items():  # each exercise's level and usual time, as its heading gives them
        exercise = exercise_named(name.split(": ", 1)[1])
        assert test["extra_data"] == {"level": exercise.level, "minutes": exercise.minutes}, name


def test_json_export_of_a_lesson_is_the_report_pytest_writes_for_it(course, tmp_path):
    graded_by_pytest, exported = concurrently(
        lambda: pytest_in(course, "--report", str(tmp_path / "pytest.json"), "tests/test_01_tensor_hooks.py"),
        lambda: hooked(course, "export", "--format", "json", "tensor_hooks"))
    assert exported.returncode == 0, exported.stderr
    report = json.loads(exported.stdout)
    assert [entry["status"] for entry in report["exercises"]] == ["passed", "not_attempted", "failed", "passed"]
    for entry in report["exercises"]:
        exercise = exercise_named(entry["exercise"])
        assert (entry["level"], entry["minutes"]) == (exercise.level, exercise.minutes), entry
        assert set(entry) == {"lesson", "exercise", "status", "message", "mistake", "level", "minutes"}
    mistakes = [entry["mistake"] for entry in report["exercises"]]
    assert mistakes[:2] + mistakes[3:] == [None, None, None]  # passed or not attempted: no mistake
    assert mistakes[2] in _named_mistakes(course, "01") and mistakes[2].startswith("01.make_clip_hook.")
    assert report == json.loads((tmp_path / "pytest.json").read_text(encoding="utf-8")), graded_by_pytest.stdout


def _named_mistakes(course, lesson):
    """The ids `hooked mistakes LESSON --format json` lists."""
    listed = hooked(course, "mistakes", lesson, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    return {mistake["id"] for mistake in json.loads(listed.stdout)}


def test_a_lesson_named_twice_is_exported_once(course):
    completed = hooked(course, "export", "--format", "gradescope", "01", "tensor_hooks", "1")
    assert completed.returncode == 0, completed.stderr
    results = json.loads(completed.stdout)
    assert [test["number"] for test in results["tests"]] == ["1.1", "1.2", "1.3", "1.4"]
    assert results["score"] == 2


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full, a file that refuses every write")
def test_a_results_file_that_cannot_be_written_is_an_error_without_a_traceback(course):
    completed = hooked(course, "export", "02", "--out", "/dev/full")
    assert completed.returncode == 2
    assert completed.stderr.startswith("hooked: error: could not write /dev/full: No space left on device")
    assert "Traceback" not in completed.stderr
