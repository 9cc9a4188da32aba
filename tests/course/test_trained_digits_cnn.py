"""The trained CNN the checks of lesson 06 grade on (hooked/checks/data/trained_digits_cnn.pt) is
really trained, and its stored digits are what the checks expect. Whether it equals a fresh run of
`python -m hooked.checks.trained_digits_cnn --write` is not tested: training may give other weights
on another machine. Its make_cnn is the lesson's own, read from solutions/."""

import inspect
import linecache

import torch
import torch.nn.functional as F

from hooked.checks import trained_digits_cnn
from hooked.checks.grad_cam_reference import activation_and_gradient, cam_of
from hooked.course import lesson_named
from hooked.digits import load_digits
from hooked.feedback.learner_tracebacks import is_learner_file


def test_stored_model_classifies_the_digits_it_was_not_trained_on():
    model, _, _ = trained_digits_cnn.load()
    digits = load_digits()  # the lesson's data and test split
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    images = F.interpolate(images, size=(28, 28), mode="bilinear", align_corners=False)
    labels = torch.tensor(digits.target)
    test_idx = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))[:360]
    with torch.no_grad():
        accuracy = (model(images[test_idx]).argmax(dim=1) == labels[test_idx]).float().mean().item()
    assert accuracy > 0.9


def test_stored_digits_are_single_channel_28x28_with_their_labels():
    model, images, labels = trained_digits_cnn.load()
    assert images.dtype == torch.float32 and images.shape[1:] == (1, 28, 28) and len(images) >= 4
    assert labels.shape == (len(images),) and 0 <= labels.min() and labels.max() <= 9
    with torch.no_grad():
        assert torch.equal(model(images).argmax(dim=1), labels)


def test_stored_digits_include_an_all_zero_grad_cam_map_at_the_pool():
    model, images, labels = trained_digits_cnn.load()
    maps = [cam_of(found["A"], found["G"], size=(28, 28))
            for found in (activation_and_gradient(model, "2", None, image[None], label)
                          for image, label in zip(images, labels.tolist()))]
    empty = [cam.max().item() == 0 for cam in maps]
    assert any(empty) and not all(empty)


def test_stored_file_is_small_float32_and_loads_with_weights_only():
    stored = torch.load(trained_digits_cnn.PATH, weights_only=True)
    assert all(value.dtype == torch.float32 for value in stored["state_dict"].values())
    assert trained_digits_cnn.PATH.stat().st_size < 200_000


def test_checks_build_the_cnn_from_the_lessons_own_cell():
    # One source: make_cnn is the lesson's definition in solutions/, run on its own (the cell's
    # demonstration is not), so that the stored state_dict is the lesson's model's.
    code = trained_digits_cnn.make_cnn.__code__
    text = lesson_named(trained_digits_cnn.LESSON_NAME).solution_path.read_text(encoding="utf-8")
    assert inspect.getsource(trained_digits_cnn.make_cnn) in text
    assert linecache.getline(code.co_filename, code.co_firstlineno) == text.splitlines(True)[code.co_firstlineno - 1]
    assert not is_learner_file(code.co_filename), code.co_filename  # an error inside is never the learner's line
    assert "shapes" not in trained_digits_cnn.make_cnn.__globals__  # the cell's demonstration did not run
