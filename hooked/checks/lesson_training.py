"""Run a lesson's code cells up to the one that trains its model, for the modules that rebuild
a trained model the checks grade on (`python -m hooked.checks.trained_... --write`; authors only)."""

import os


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
