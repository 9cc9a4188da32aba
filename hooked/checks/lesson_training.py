"""What the modules that rebuild a trained model the checks grade on share (`python -m
hooked.checks.trained_... --write`; authors only): running a lesson's code cells up to the one that
trains its model, writing the file, and that command line."""

import argparse
import os

import torch


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
