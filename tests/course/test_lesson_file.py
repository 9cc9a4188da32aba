"""Reading a learner's lesson file: which file, which cells, what they define (the names a cell
defines, and its magics, are the format's: test_lesson_format.py)."""

import os

from hooked.lesson_files.learner_lesson import load_lesson_source

LESSON = '''# %% [markdown]
# # A lesson

# %% tags=["exercise"]
# Exercise: double_grad — write your code in this cell.
%time pass
!pip --version
double_grad = lambda grad: 2 * grad

# %%
def helper():
    pass
'''


def test_exercise_cells_are_found_with_their_lines_in_the_file(tmp_path):
    (tmp_path / "01_x.py").write_text(LESSON, encoding="utf-8")
    source = load_lesson_source(tmp_path, "01_x")
    assert not source.problem and not source.syntax_error
    (cell,) = source.cells
    assert cell.defines == {"double_grad": 8}
    assert source.untagged_definitions == {"helper": "cell 3 of 01_x.py"}


def test_a_newer_notebook_that_cannot_be_read_says_what_to_do(tmp_path):
    (tmp_path / "01_x.py").write_text(LESSON, encoding="utf-8")
    (tmp_path / "01_x.ipynb").write_text('{"cells": [', encoding="utf-8")
    later = os.stat(tmp_path / "01_x.py").st_mtime + 10
    os.utime(tmp_path / "01_x.ipynb", (later, later))
    source = load_lesson_source(tmp_path, "01_x")
    assert "could not read" in source.problem and "delete it to grade the .py" in source.problem


def test_a_file_in_another_encoding_asks_for_utf8(tmp_path):
    (tmp_path / "01_x.py").write_bytes(LESSON.replace("—", "-").encode() + "# café\n".encode("latin-1"))
    assert "Save it as UTF-8" in load_lesson_source(tmp_path, "01_x").problem
