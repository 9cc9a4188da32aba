"""Read the exercise cells of a learner's lesson, from its .py or, when the
learner last edited it in Jupyter, from its paired .ipynb; the format itself is read
by hooked/lesson_files/lesson_format.py. Nothing here runs learner code or writes to
the learner's files."""

import dataclasses
import functools
import pathlib
import sys

from hooked.lesson_files.display_paths import display_path
from hooked.lesson_files.lesson_format import EXERCISE_TAG, defined_names, read_percent_script, without_magics


@dataclasses.dataclass
class Cell:
    source: str
    filename: str      # what tracebacks show: the .py path, or "x.ipynb (cell 7)"
    first_line: int    # line of the cell's first source line in `filename`
    defines: dict      # top-level def and class names in the cell -> their line in `filename`


@dataclasses.dataclass
class LessonSource:
    lesson: str
    graded_file: str = ""
    cells: list = dataclasses.field(default_factory=list)
    problem: str = ""  # set when the lesson cannot be graded at all
    syntax_error: str = ""  # "file line N: message" of the first cell that does not compile
    untagged_cells: list = dataclasses.field(default_factory=list)  # (where, source) of the other code cells

    @functools.cached_property
    def untagged_definitions(self):
        """{name: where} of what the code cells not tagged exercise define: parsed only when
        feedback asks, since an exercise that passes never needs them."""
        found = {}
        for where, source in self.untagged_cells:
            for name in defined_names(source):
                found.setdefault(name, where)
        return found

    def cell_defining(self, name):
        for cell in self.cells:
            if name in cell.defines:
                return cell
        return None


def read_notebook(path):
    """The cells of a lesson's .py or .ipynb (each with cell_type, source and metadata)."""
    path = pathlib.Path(path)
    if path.suffix == ".py":
        script = read_percent_script(path.read_text(encoding="utf-8"))
        if script is not None:
            return script
    # jupytext reads both formats (and a .py the fast reader leaves to it). jsonschema, which
    # nbformat imports, spends more than a second at import time compiling a grammar for IRI
    # checks (rfc3987_syntax) that we never use; hiding that optional module keeps grading fast.
    sys.modules.setdefault("rfc3987_syntax", None)
    import jupytext
    return jupytext.read(path)


def _exercise_cells(notebook):
    code = [(index, cell) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    tagged = [(index, cell) for index, cell in code if EXERCISE_TAG in cell.metadata.get("tags", [])]
    untagged = [(index, cell) for index, cell in code if EXERCISE_TAG not in cell.metadata.get("tags", [])]
    return tagged, untagged


def _line_of(lines, source_lines, start):
    """1-based line at which `source_lines` stand in `lines`, searching from `start`."""
    size = len(source_lines)
    for index in range(start, len(lines) - size + 1):
        if lines[index:index + size] == source_lines:
            return index + 1
    return None


def choose_graded_file(lesson_dir, lesson):
    """The .py, unless the paired .ipynb is newer (the learner last saved in Jupyter)."""
    script = pathlib.Path(lesson_dir) / f"{lesson}.py"
    notebook = pathlib.Path(lesson_dir) / f"{lesson}.ipynb"
    if not notebook.exists():
        return script
    if not script.exists() or notebook.stat().st_mtime > script.stat().st_mtime:
        return notebook
    return script


def load_lesson_source(lesson_dir, lesson):
    """The exercise cells of `lesson` in `lesson_dir`, ready to compile and run."""
    result = LessonSource(lesson)
    path = choose_graded_file(lesson_dir, lesson)
    result.graded_file = str(path)
    if not path.exists():
        result.problem = (f"no lesson file {path} (nor {path.with_suffix('.ipynb').name}); "
                          f"the grader expects {lesson}.py in {lesson_dir}.")
        return result
    try:
        notebook = read_notebook(path)
    except Exception as error:  # a notebook broken by hand, a file saved in another encoding
        advice = ("Save it as UTF-8." if isinstance(error, UnicodeDecodeError) else
                  f"It is newer than {path.stem}.py, so it is what would be graded: fix it in Jupyter, or "
                  "delete it to grade the .py." if path.suffix == ".ipynb" else "")
        result.problem = f"could not read {display_path(str(path))}: {type(error).__name__}: {error}. {advice}"
        return result
    tagged, untagged = _exercise_cells(notebook)
    lines = path.read_text(encoding="utf-8").splitlines() if path.suffix == ".py" else []
    search_from = 0
    for index, cell in tagged:
        source_lines = cell.source.splitlines()
        first = _line_of(lines, source_lines, search_from) if lines else None
        if first is None:
            filename, first = f"{path} (cell {index + 1})", 1
        else:
            filename, search_from = str(path), first - 1 + len(source_lines)
        names = {name: first + line - 1 for name, line in defined_names(cell.source).items()}
        result.cells.append(Cell(cell.source, filename, first, names))
    result.untagged_cells = [(f"cell {index + 1} of {path.name}", cell.source) for index, cell in untagged]
    result.syntax_error = syntax_error_in(result.cells)
    return result


def syntax_error_in(cells):
    """'file line N: message' for the first cell that does not compile, else ''."""
    for cell in cells:
        try:
            compile_cell(cell)
        except SyntaxError as error:
            line = f"\n      {error.text.strip()}" if error.text else ""
            return f"{display_path(cell.filename)} line {error.lineno}: {error.msg}{line}"
        except (ValueError, MemoryError, RecursionError) as error:  # null bytes, absurd nesting
            return f"{display_path(cell.filename)}, the cell from line {cell.first_line}: {error}"
    return ""


def _padded(cell):
    """The cell's source with blank lines before it, so that line numbers match the file."""
    return "\n" * (cell.first_line - 1) + without_magics(cell.source)


def compile_cell(cell):
    return compile(_padded(cell), cell.filename, "exec", dont_inherit=True)
