"""What the modules that keep a lesson's trained model for the checks share: the lesson's model
definitions, taken from its own cells (the single source), and, to rebuild the stored model (`python
-m hooked.checks.trained_... --write`; authors only), running the lesson's code cells up to the one
that trains it, writing the file, and that command line."""

import argparse
import ast
import linecache
import os
import re

import torch

from hooked import course
from hooked.lesson_files import lesson_format


def definitions_from_lesson(lesson_name, names, module_name):
    """The top-level classes and functions `names` of the lesson's solution file, in that order, run
    with its imports of torch (not the rest of its cells), as module `module_name`'s. They run as the
    checks' code, not the learner's: an error raised inside them is never told as the learner's line
    (the lesson's lines, under a name in this package, still show in a traceback)."""
    path = course.lesson_named(lesson_name).solution_path
    text = path.read_text(encoding="utf-8")
    nodes = [node for tree in _cells_defining(text, names, str(path)) for node in tree.body]
    imports = [node for node in nodes if isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_torch(node)]
    definitions = [node for node in nodes if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name in names]
    found = [node.name for node in definitions]
    if sorted(found) != sorted(names):
        raise LookupError(f"{path} defines {found} at the top level of its cells; the checks build the model "
                          f"from {', '.join(names)}, each defined once")
    filename = f"{__file__}, the definitions of solutions/{path.name}"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)  # kept: no file to check
    namespace = {"__name__": module_name}
    exec(compile(ast.Module(body=imports + definitions, type_ignores=[]), filename, "exec"), namespace)
    return tuple(namespace[name] for name in names)


def _cells_defining(text, names, filename):
    """The parsed code cells of `text` that import torch or define one of `names` at their top level,
    with the file's line numbers: parsing only these keeps a check's first import quick."""
    wanted = re.compile(r"^(?:(?:class|def) (?:" + "|".join(map(re.escape, names)) + r")\b|import torch|from torch)",
                        re.MULTILINE)
    for cell in lesson_format.split_cells(text):
        if cell.marker.startswith("# %% [") or not wanted.search(cell.text):
            continue  # a markdown cell, or nothing wanted
        tree = ast.parse(cell.text, filename)
        ast.increment_lineno(tree, cell.marker_line)
        yield tree


def _imports_torch(node):
    modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    return all(module == "torch" or module.startswith("torch.") for module in modules)


def run_cells_until_trained(lesson):
    """The namespace of `lesson`'s code cells (a solutions/ file), run in its folder up to and
    including the cell that defines `trained_accuracy`, the training cell's result."""
    import jupytext
    import matplotlib
    matplotlib.use("Agg")
    namespace = {"__name__": "__main__"}
    folder = os.getcwd()
    os.chdir(lesson.parent)  # where the notebook runs
    try:
        for number, cell in enumerate(jupytext.read(lesson).cells):
            if cell.cell_type == "code":
                exec(compile(cell.source, f"{lesson.name}, cell {number}", "exec"), namespace)
                if "trained_accuracy" in namespace:
                    return namespace
    finally:
        os.chdir(folder)
    raise SystemExit(f"{lesson}: no code cell defines trained_accuracy; where does it train the model?")


def float_copy(state_dict):
    """The tensors of `state_dict` as float32 copies, cut from the graph: what a stored model keeps."""
    return {key: value.detach().float().clone() for key, value in state_dict.items()}


def save(stored, path, summary):
    """torch.save `stored` at `path` (making its folder), and say so: the size written, then `summary`."""
    path.parent.mkdir(exist_ok=True)
    torch.save(stored, path)
    print(f"wrote {path} ({path.stat().st_size:,} bytes): {summary}")


def write_command(description, write):
    """The command line of a module that keeps a trained model: `--write` calls write(), which trains as
    the lesson does and writes the file; without it, the help (`description`, the module's docstring)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="train as the lesson does and write the file")
    if parser.parse_args().write:
        write()
    else:
        parser.print_help()
