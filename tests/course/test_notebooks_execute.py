"""Every lesson runs top to bottom as a notebook: the learner's version with each
check saying "not attempted yet", the solved version with each check passing."""

import time

import jupytext
import nbclient
import pytest

from hooked.course import lessons


def _execute(path):
    notebook = jupytext.read(path)
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=120,
                                     resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    client.execute()
    return notebook, time.perf_counter() - started


def _check_cell_outputs(notebook):
    """{exercise: what its check cell printed}."""
    printed = {}
    for cell in notebook.cells:
        source = cell.source.strip()
        if cell.cell_type == "code" and source.startswith("check(") and source.endswith(")"):
            printed[source[len("check("):-1]] = "".join(
                output.get("text", "") for output in cell.outputs if output.output_type == "stream")
    return printed


@pytest.mark.parametrize("lesson", lessons(), ids=lambda lesson: lesson.name)
def test_learner_version_runs_and_every_check_says_not_attempted(lesson):
    notebook, seconds = _execute(lesson.lesson_path)
    printed = _check_cell_outputs(notebook)
    assert list(printed) == lesson.exercise_names(), "one check cell per exercise, in order"
    for exercise, text in printed.items():
        assert f"{exercise}: not attempted yet" in text, text
        assert "of its notebook cell" in text and "ipykernel_" not in text, text  # no kernel temp paths
    print(f"{lesson.name} (lessons/) executed in {seconds:.1f} s")


@pytest.mark.parametrize("lesson", lessons(), ids=lambda lesson: lesson.name)
def test_solved_version_runs_and_every_check_passes(lesson):
    notebook, seconds = _execute(lesson.solution_path)
    printed = _check_cell_outputs(notebook)
    assert list(printed) == lesson.exercise_names(), "one check cell per exercise, in order"
    for exercise, text in printed.items():
        assert f"{exercise}: passed" in text, text
    assert not any("Not done yet" in output.get("text", "")
                   for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs)
    print(f"{lesson.name} (solutions/) executed in {seconds:.1f} s")
