"""lessons/, the grading files tests/test_NN_slug.py and the rows of the README's lesson table are
generated from solutions/, the single source."""

import pytest

import hooked.command.generate as generate
from hooked.course import lessons
from hooked.command.generate import stale_files
from hooked.lesson_files.solution_markers import MarkerError, lesson_text_from_solution, solution_region_lines

SOLVED = '''# %% tags=["exercise"]
import torch


class Group:
    """Holds things."""

    def add(self, item):
        """Add item."""
        # BEGIN SOLUTION: append item to the list
        self.items.append(item)
        return item
        # END SOLUTION


def double(grad):
    """Return 2 * grad."""
    # BEGIN SOLUTION
    return 2 * grad
    # END SOLUTION
'''


def test_lessons_grading_files_and_the_readme_match_what_the_generator_makes():
    stale = [str(path.relative_to(generate.ROOT)) for path in stale_files()]
    assert stale == [], (f"{', '.join(stale)} differ from what solutions/ generates: run `python -m hooked generate` "
                         "and commit what it writes (never edit them by hand)")


def test_a_grading_file_makes_one_test_per_exercise_of_its_lesson():
    lesson = lessons()[0]
    text = generate.grading_file_text(lesson)
    assert text.endswith('\n\nglobals().update(lesson_tests("01_tensor_hooks"))\n')
    assert 'Grades lesson 01, "Tensor hooks"' in text and "python -m hooked generate" in text
    namespace = {}
    exec(text, namespace)
    tests = [name for name in namespace if name.startswith("test_")]
    assert tests == [f"test_{name}" for name in lesson.exercise_names()]


def test_stub_keeps_signature_and_docstring_and_raises_with_the_qualified_name():
    text = lesson_text_from_solution(SOLVED)
    assert "return 2 * grad" not in text and "self.items.append" not in text
    assert 'def add(self, item):\n        """Add item."""\n        # TODO: append item to the list\n' \
           '        raise NotImplementedError("Group.add is not written yet")\n' in text
    assert 'raise NotImplementedError("double is not written yet")' in text
    namespace = {}
    exec(text.split("\n", 1)[1], namespace)
    with pytest.raises(NotImplementedError, match="double is not written yet"):
        namespace["double"](1)


def test_the_solution_regions_are_the_lines_between_the_markers():
    assert solution_region_lines(SOLVED) == ["        self.items.append(item)", "        return item",
                                             "    return 2 * grad"]


@pytest.mark.parametrize("broken, problem", [
    ("def f():\n    # BEGIN SOLUTION\n    return 1\n", "line 2: BEGIN SOLUTION is never closed"),
    ("def f():\n    return 1\n    # END SOLUTION\n", "line 3: END SOLUTION without a BEGIN"),
    ("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n", "line 1: a solution region must sit inside a def"),
    ("def f():\n    # BEGIN SOLUTION\n    # BEGIN SOLUTION\n", "line 3: BEGIN SOLUTION inside the region"),
])
def test_malformed_markers_are_reported_with_their_line(broken, problem):
    with pytest.raises(MarkerError, match=problem):
        lesson_text_from_solution(broken, "solutions/x.py")


def test_regenerating_backs_up_a_changed_lesson_and_its_notebook(tmp_path, monkeypatch):
    lessons, backups = tmp_path / "lessons", tmp_path / "backups"
    lessons.mkdir()
    monkeypatch.setattr(generate, "LESSONS_DIR", lessons)
    monkeypatch.setattr(generate, "BACKUP_DIR", backups)
    monkeypatch.setattr(generate, "TESTS_DIR", tmp_path / "tests")
    monkeypatch.setattr(generate, "README", tmp_path / "README.md")  # none: no table to write
    lesson = generate.lesson_names()[0]
    (lessons / f"{lesson}.py").write_text("my work\n", encoding="utf-8")
    (lessons / f"{lesson}.ipynb").write_text("{}", encoding="utf-8")
    written = dict(generate.write_files([lesson]))
    backup = written[lessons / f"{lesson}.py"]
    assert (backup / f"{lesson}.py").read_text(encoding="utf-8") == "my work\n"
    assert (backup / f"{lesson}.ipynb").exists()
    assert (lessons / f"{lesson}.py").read_text(encoding="utf-8") != "my work\n"
    assert written[tmp_path / "tests" / f"test_{lesson}.py"] is None  # a grading file is the course's: no backup
    assert generate.write_files([lesson]) == []  # unchanged files are neither rewritten nor backed up
    assert not (tmp_path / "README.md").exists()
