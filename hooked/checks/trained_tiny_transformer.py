"""Lesson 12's tiny transformer: its classes, read from the lesson's own cell in
solutions/12_transformer_interpretability.py (the single source: the lesson shows them whole, so that
its notebook stands alone), from which the checks build small random models from fixed seeds; and
the model as the lesson trains it, stored in data/trained_tiny_transformer.pt so that checks can use
it without training (seconds: far too slow for a check). The stored weights are read once per grading
process, when a check first asks.

    python -m hooked.checks.trained_tiny_transformer --write   # regenerate the file (course authors)

Writing executes the lesson's code cells in order, up to and including the cell that trains the model,
and keeps that model. Training may give other weights on another machine or torch build, so the stored
file is NOT compared with a fresh run; tests/course/test_trained_tiny_transformer.py checks that it is
trained.
"""

import functools
import pathlib

import torch

from hooked import course
from hooked.checks.lesson_training import (definitions_from_lesson, float_copy, run_cells_until_trained, save,
                                          write_command)

PATH = pathlib.Path(__file__).resolve().parent / "data" / "trained_tiny_transformer.pt"
LESSON_NAME = "12_transformer_interpretability"
MODEL_CLASSES = ("HookPoint", "Attention", "Block", "TinyTransformer")  # as the lesson names them
ACCURACY_BAR = 0.9  # on new sequences of periods 2 to 8, at the positions where the next token is known


# The classes as the lesson defines them, from its cell.
HookPoint, Attention, Block, TinyTransformer = definitions_from_lesson(LESSON_NAME, MODEL_CLASSES, __name__)


@functools.lru_cache(maxsize=1)
def _stored_state():
    return torch.load(PATH, weights_only=True)


def load():
    """The trained model in eval mode, a new one on each call (the file is read once)."""
    model = TinyTransformer()
    model.load_state_dict(_stored_state())
    return model.eval()


# ---------------------------------------------------------------- writing the file (authors only)

def write():
    namespace = run_cells_until_trained(course.lesson_named(LESSON_NAME).solution_path)
    save(float_copy(namespace["model"].state_dict()), PATH,
         f"accuracy {namespace['trained_accuracy']:.3f}, trained in {namespace['training_seconds']:.1f} s")


if __name__ == "__main__":
    write_command(__doc__, write)
