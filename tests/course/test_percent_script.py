"""The fast reader of percent-format lessons (hooked.lesson_files.percent_script) gives the cells
jupytext gives, or leaves the file to jupytext."""

import jupytext
import pytest

from hooked import course
from hooked.lesson_files.percent_script import read_percent_script


def _cells(notebook):
    return [(cell.cell_type, cell.source, cell.metadata.get("tags", [])) for cell in notebook.cells]


def _jupytext_cells(text):
    return _cells(jupytext.reads(text, fmt="py:percent"))


def _course_files():
    return [path for lesson in course.lessons() for path in (lesson.solution_path, lesson.lesson_path)]


@pytest.mark.parametrize("path", _course_files(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_lesson_of_the_course_is_read_fast_with_jupytexts_cells(path):
    text = path.read_text(encoding="utf-8")
    script = read_percent_script(text)
    assert script is not None, "the fast reader left a lesson of the course to jupytext"
    assert _cells(script) == _jupytext_cells(text)


def test_a_lesson_saved_by_jupyter_with_a_header_is_read_fast(tmp_path):
    notebook = jupytext.read(course.lessons()[0].lesson_path)
    notebook.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    notebook.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    text = jupytext.writes(notebook, fmt="py:percent")
    assert text.startswith("# ---\n")
    script = read_percent_script(text)
    assert script is not None
    assert _cells(script) == _jupytext_cells(text)


CODE = "# %% [markdown]\n# Title\n\n# %% tags=[\"exercise\"]\n{body}\n\n# %%\nafter = 1\n"

# Cell bodies where jupytext does more than split at markers; the fast reader must then
# either agree or leave the file to jupytext.
TRICKY_BODIES = [
    "x = 1",
    "x = 1\n",
    "x = 1\n\n",
    "x = 1\n\n\n",
    "x = 1\n   \n",
    "\n\nx = 1",
    "# %time x = 1\ny = 2",
    "# !pip install torch",
    "# ls\nx = 1",
    "# files = !ls",
    "# len?",
    "# # %%\nx = 1",
    "# In[3]:\nx = 1",
    'x = """\n# %%\nstill a string\n"""',
    "x = '''\n# %%\n'''",
    'x = "a # %% not a marker"',
    'x = 1  # it\'s a comment with """ in it',
    "def f():\n    \"\"\"Docstring.\"\"\"\n    return 1",
    "x = (1 +\n     2)  # why?",
    "with a, \\\n        b:\n    pass",
    "   # %% indented marker\nx = 1",
    "# %% Title of a cell\nx = 1",
    "# %% [raw]\nraw text",
    "# %% tags=[\"exercise\", \"other\"]\nx = 1",
    "# %% [markdown]\n# ```python\n# # %%\n# ```\n\n# %%\nx = 1",
    "# %% [markdown]\n# ```python\n# %%\nx = 1",
]


@pytest.mark.parametrize("body", TRICKY_BODIES)
def test_a_tricky_cell_is_read_as_jupytext_reads_it_or_left_to_jupytext(body):
    text = CODE.format(body=body)
    script = read_percent_script(text)
    if script is not None:
        assert _cells(script) == _jupytext_cells(text)


def test_plain_cells_are_read_fast_and_magics_left_to_jupytext():
    assert read_percent_script(CODE.format(body="def f():\n    return 1  # it's fine")) is not None
    assert read_percent_script(CODE.format(body="# %time x = 1")) is None
    assert read_percent_script(CODE.format(body='x = """\n# %%\n"""')) is None
    assert read_percent_script("x = 1\n# %%\ny = 2\n") is None  # code before the first marker
