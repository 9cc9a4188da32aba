"""The one reader of the lesson format (hooked.lesson_files.lesson_format): it gives the cells
jupytext gives, or leaves the file to jupytext; the cells it splits carry their tags and their
lines in the file; it says which names a cell defines, and where a definition stands; it reads
each exercise's level and minutes from its heading, and says where a heading departs from the
format."""

import jupytext
import pytest

from hooked import course
from hooked.lesson_files.lesson_format import (EXERCISE_TAG, PREDICTION_TAG, HeadingError, code_cells_tagged,
                                               defined_names, definition_line_at_or_above, exercise_cells,
                                               exercise_definition_lines, read_percent_script, split_cells,
                                               without_magics)


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


@pytest.mark.parametrize("path", _course_files(), ids=lambda path: f"{path.parent.name}/{path.name}")
@pytest.mark.parametrize("tag", [EXERCISE_TAG, PREDICTION_TAG])
def test_tagged_cells_are_jupytexts_tagged_cells_at_their_lines_in_the_file(path, tag):
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    cells = code_cells_tagged(text, tag)
    assert [cell.text.strip() for cell in cells] == [
        cell.source.strip() for cell in jupytext.reads(text, fmt="py:percent").cells
        if cell.cell_type == "code" and tag in cell.metadata.get("tags", [])]
    for cell in cells:
        assert lines[cell.marker_line - 1] == f'# %% tags=["{tag}"]'
        assert lines[cell.first_line - 1:cell.first_line - 1 + len(cell.lines)] == list(cell.lines)


def test_a_cell_keeps_its_text_as_the_file_has_it_up_to_the_next_marker():
    text = '# %% [markdown]\n# Title\n\n# %% tags=["exercise"]\ndef f():\n    pass\n\n\n# %%\nafter = 1'
    title, exercise, after = split_cells(text)
    assert (title.kind, title.tags, title.marker_line, title.text) == ("markdown", (), 1, "# Title\n\n")
    assert (exercise.kind, exercise.tags, exercise.first_line) == ("code", ("exercise",), 5)
    assert exercise.text == "def f():\n    pass\n\n\n"
    assert (after.lines, after.text) == (("after = 1",), "after = 1")
    assert code_cells_tagged(text, EXERCISE_TAG) == [exercise]


def test_the_lines_before_the_first_marker_are_a_cell_without_a_marker():
    before, cell = split_cells("x = 1\n# %%\ny = 2\n")
    assert (before.marker, before.marker_line, before.first_line, before.kind) == ("", 0, 1, None)
    assert (cell.marker, cell.first_line, cell.lines) == ("# %%", 3, ("y = 2",))
    assert split_cells("") == ()


def test_magics_are_skipped_and_line_numbers_kept():
    source = "%%time\nx = 1\n  !ls\n"
    assert without_magics(source).splitlines() == [
        "pass  # IPython magic, skipped by the grader", "x = 1", "  pass  # IPython magic, skipped by the grader"]


def test_assignments_defs_and_classes_define_exercises():
    names = defined_names("import torch\nf = lambda: 1\ng: int = 2\ndef h():\n    pass\nclass K:\n    pass\n")
    assert names == {"f": 2, "g": 3, "h": 4, "K": 6}


def test_a_cell_with_magics_defines_its_names_and_one_that_does_not_parse_defines_none():
    assert defined_names("%time pass\n!pip --version\ndouble_grad = lambda grad: 2 * grad") == {"double_grad": 3}
    assert defined_names("def f(:\n    pass") == {}


def test_the_exercise_definition_lines_are_the_defs_and_classes_of_the_exercise_cells():
    text = ('# %%\ndef helper():\n    pass\n\n# %% tags=["exercise"]\n# Exercise: f\nLIMIT = 3\n\n\n'
            'def f():\n    pass\n\n\nclass G:\n    pass\n')
    assert exercise_definition_lines(text) == {"f": 10, "G": 14}


def test_the_definition_at_or_above_a_line_is_the_nearest_def_or_class_of_that_name():
    text = ("# %%\ndef f():\n    raise NotImplementedError\n\n\ndef f():\n    raise NotImplementedError\n"
            "# %%\ng = 1\nx = '''\ndef f():\n'''\n")
    assert definition_line_at_or_above(text, "f", 3) == 2
    assert definition_line_at_or_above(text, "f", 7) == 6
    assert definition_line_at_or_above(text, "f", 1) is None  # above every definition
    assert definition_line_at_or_above(text, "f", 12) == 6  # from a later cell; a `def` in a string is none
    assert definition_line_at_or_above(text, "g", 9) is None  # an assignment is not a def
    assert definition_line_at_or_above("\n\ndef f():\n    pass\n", "f", 4) == 3  # no marker: one cell
    assert definition_line_at_or_above("", "f", 4) is None


_DRAFT = """# %% [markdown]
# # Lesson 12 — Draft

# %% [markdown]
{heading}
#
# Write `twice(x)`.

# %% tags=["exercise"]
# Exercise: twice — write your code in this cell.
def twice(x):
    \"\"\"Twice x.\"\"\"
    # BEGIN SOLUTION
    return 2 * x
    # END SOLUTION
"""


def _exercises_of_draft(heading, text=_DRAFT):
    return exercise_cells(text.format(heading=heading), "solutions/12_draft.py")


def test_a_heading_in_the_format_gives_the_level_and_minutes():
    (exercise,) = _exercises_of_draft("# ## Exercise 1: `twice` · hard · about 40 min")
    assert (exercise.name, exercise.level, exercise.minutes) == ("twice", "hard", 40)


@pytest.mark.parametrize("heading, line, says", [
    ("# ## Exercise 1: `twice`", 5, "the heading of exercise twice has no level and time: '# ## Exercise 1: `twice`'"),
    ("# ## Exercise 1: `twice` · tricky · about 5 min", 5, "gives the level 'tricky', which is not one of easy, "
                                                           "medium, hard"),
    ("# ## Exercise 1: `twice` · easy · 5 min", 5, "the heading of exercise twice is not in the heading format"),
    ("# ## Exercise 1: `twice` - easy - about 5 min", 5, "is not in the heading format"),
    ("# ## Exercise 1: `twice` · easy · about 0 min", 5, "gives 0 minutes"),
    ("# ## Exercise 1: `thrice` · easy · about 5 min", 5, "the heading names `thrice`, but the exercise cell after "
                                                          "it defines twice"),
    ("# ## Write twice", 9, "exercise twice has no heading before its exercise cell"),
])
def test_a_heading_without_a_known_level_and_time_is_an_error_that_says_what_is_accepted(heading, line, says):
    with pytest.raises(HeadingError) as raised:
        _exercises_of_draft(heading)
    message = str(raised.value)
    assert message.startswith(f"solutions/12_draft.py line {line}: "), message
    assert says in message, message
    assert "'# ## Exercise N: `" in message and "easy, medium, hard" in message and "M the minutes" in message


@pytest.mark.parametrize("heading, says", [
    ("# ## Exercise 1: `twice` - easy - about 5 min", "between the name and the level it has ' - ' where ' · ' is "
                                                      "expected; between the level and 'about' it has ' - '"),
    ("# ## Exercise 1: `twice` . easy . about 5 min", "between the name and the level it has ' . ' where ' · '"),
    ("# ## Exercise 1: `twice` ·\u00a0easy · about 5 min", "between the name and the level it has ' ·\\xa0' "
                                                          "(U+00A0 NO-BREAK SPACE) where ' · ' is expected"),
    ("# ## Exercise 1:  `twice` · easy · about 5 min", "between the number and the name it has ':  ' where ': '"),
    ("# ## Exercise 1: `twice` · easy · about 5 min ", "it goes on after 'min' with ' '"),
    ("# ## Exercise 1: `twice` · easy · about 5 mins", "it gives the time in 'mins' where 'min' is expected"),
    ("# ## Exercise 1: `twice` · easy · 5 min", "between the level and the minutes it has ' · ' where ' · about '"),
    ("# ## Exercise 1: `twice` · easy ·\tabout 5 min", "' ·\\t' (U+0009 TAB) where ' · ' is expected"),
    ("# ## Exercise 1: twice · easy · about 5 min", "the name is not between backticks"),
])
def test_a_heading_out_of_format_is_an_error_that_names_what_differs(heading, says):
    with pytest.raises(HeadingError) as raised:
        _exercises_of_draft(heading)
    message = str(raised.value)
    assert message.startswith("solutions/12_draft.py line 5: the heading of exercise twice is not in the heading "
                              "format ("), message
    assert says in message, message


def test_a_heading_of_one_minute_is_one_minute():
    (exercise,) = _exercises_of_draft("# ## Exercise 1: `twice` · easy · about 1 min")
    assert (exercise.level, exercise.minutes) == ("easy", 1)


@pytest.mark.parametrize("fence", ["```", "```markdown", "~~~"])
def test_a_heading_shown_in_a_code_fence_is_not_the_exercises_heading(fence):
    example = f"#\n# {fence}\n# ## Exercise 7: `other` · hard · about 40 min\n# {fence[:3]}"
    heading = "# ## Exercise 1: `twice` · medium · about 15 min"
    (exercise,) = _exercises_of_draft(heading + "\n" + example)
    assert (exercise.name, exercise.level, exercise.minutes) == ("twice", "medium", 15)
    with pytest.raises(HeadingError) as raised:  # the example alone is no heading
        _exercises_of_draft("# ## Write twice\n" + example)
    assert "exercise twice has no heading before its exercise cell" in str(raised.value)


def test_a_class_exercise_takes_its_level_and_minutes_from_its_heading():
    text = (_DRAFT.replace("def twice(x):", "class Twice:\n    def __call__(self, x):")
            .replace("    \"\"\"Twice x.", "        \"\"\"Twice x.").replace("    # BEGIN", "        # BEGIN")
            .replace("    return 2", "        return 2").replace("    # END", "        # END")
            .replace("Exercise: twice", "Exercise: Twice"))
    (exercise,) = _exercises_of_draft("# ## Exercise 1: `Twice` · hard · about 45 min", text)
    assert (exercise.name, exercise.level, exercise.minutes) == ("Twice", "hard", 45)
