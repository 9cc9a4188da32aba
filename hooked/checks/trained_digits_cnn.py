"""Lesson 06's CNN, built by make_cnn() as the lesson's own cell in solutions/06_cnn_activations.py
defines it (the single source), trained on the course's digits (hooked/digits.py), stored with a few
of its test digits in data/trained_digits_cnn.pt, so that the checks of lesson 06 grade on a trained
model without training one (seconds: far too slow for a check).

    python -m hooked.checks.trained_digits_cnn --write   # regenerate the file (course authors)

Writing executes the lesson's code cells in order, up to and including the cell that trains the
model, and keeps that model and a few test digits. Training may give other weights on another
machine or torch build, so the stored file is NOT compared with a fresh run;
tests/course/test_trained_digits_cnn.py checks that it is trained.
"""

import pathlib

import torch

from hooked import course
from hooked.checks.grad_cam_reference import activation_and_gradient, cam_of
from hooked.checks.lesson_training import (definitions_from_lesson, float_copy, run_cells_until_trained, save,
                                          write_command)

PATH = pathlib.Path(__file__).resolve().parent / "data" / "trained_digits_cnn.pt"
LESSON_NAME = "06_cnn_activations"

# The lesson's make_cnn(), from its cell: the stored state_dict is that model's.
make_cnn, = definitions_from_lesson(LESSON_NAME, ("make_cnn",), __name__)


def load():
    """(the trained model in eval mode, digits (N, 1, 28, 28), their labels (N,)), new on each call."""
    stored = torch.load(PATH, weights_only=True)
    model = make_cnn()
    model.load_state_dict(stored["state_dict"])
    return model.eval(), stored["images"], stored["labels"]


# ---------------------------------------------------------------- writing the file (authors only)

def _clear_sign(pre_relu):
    """The map before Grad-CAM's ReLU is clearly positive somewhere, or clearly <= 0 everywhere:
    rounding can't decide whether the map is empty, so every right solution agrees on it."""
    top = pre_relu.max().abs()
    return bool(top > 1e-3 * pre_relu.abs().max()) or bool(pre_relu.abs().max() == 0)


def _choose(model, images, labels, test_idx, plain=4, empty=2):
    """Test digits the model gets right: the first `plain` whose map at the pool for the true class is
    not empty and the first `empty` whose map is (as the lesson counts), all maps of clear sign."""
    plain_found, empty_found = [], []
    for index in test_idx.tolist():
        x = images[index:index + 1]
        with torch.no_grad():
            top = model(x)[0].topk(2).indices.tolist()
        if top[0] != labels[index]:
            continue
        maps = {(name, target): _weighted_sum(model, name, x, target) for name in ("0", "2") for target in top}
        if not all(_clear_sign(value) for value in maps.values()):
            continue
        wanted = empty_found if maps["2", top[0]].max() <= 0 else plain_found
        if len(wanted) < (empty if wanted is empty_found else plain):
            wanted.append(index)
        if len(plain_found) == plain and len(empty_found) == empty:
            return sorted(plain_found + empty_found)
    raise SystemExit(f"found only {plain_found} and {empty_found} among the test digits")


def _weighted_sum(model, name, x, target):
    """sum_k w_k * A_k at layer `name` ("0" the conv, "2" the pool), before the ReLU: the checks' reference."""
    found = activation_and_gradient(model, name, "1" if name == "0" else None, x, target)
    return cam_of(found["A"], found["G"], size=None, relu=False, normalize=None)


def write():
    namespace = run_cells_until_trained(course.lesson_named(LESSON_NAME).solution_path)
    model, images, labels = namespace["model"], namespace["images"], namespace["labels"]
    chosen = torch.tensor(_choose(model, images, labels, namespace["test_idx"]))
    stored = {"state_dict": float_copy(model.state_dict()), "images": images[chosen].float().clone(),
              "labels": labels[chosen].clone()}
    save(stored, PATH, f"test accuracy {namespace['trained_accuracy']:.3f}, digits {stored['labels'].tolist()}")


if __name__ == "__main__":
    write_command(__doc__, write)
