"""The trained transformer lesson 12's checks use (hooked/checks/data/trained_tiny_transformer.pt) is
really trained: on new sequences of the lesson's task its accuracy is above the stated bar, and its
layer-1 heads are induction heads. Whether it equals a fresh run of
`python -m hooked.checks.trained_tiny_transformer --write` is not tested: training may give other
weights on another machine. Its classes are the lesson's own, read from solutions/."""

import inspect
import linecache

import pytest
import torch

from hooked.checks import trained_tiny_transformer
from hooked.checks.lesson_training import definitions_from_lesson
from hooked.checks.trained_tiny_transformer import TinyTransformer
from hooked.course import lesson_named
from hooked.feedback.learner_tracebacks import is_learner_file

VOCAB, SEQ = 32, 24


def _repeated(n, periods, seed):
    """The lesson's task: distinct random tokens of a period drawn from `periods`, repeated to SEQ."""
    generator = torch.Generator().manual_seed(seed)
    periods = torch.tensor(list(periods))
    period = periods[torch.randint(len(periods), (n,), generator=generator)]
    blocks = torch.rand(n, VOCAB, generator=generator).argsort(dim=1)
    return blocks.gather(1, torch.arange(SEQ) % period[:, None]), period


def test_stored_model_continues_sequences_of_every_period_above_the_bar():
    model = trained_tiny_transformer.load()
    for period in range(2, 9):
        tokens, periods = _repeated(200, [period], seed=500 + period)
        with torch.no_grad():
            predicted = model(tokens[:, :-1]).argmax(dim=-1)
        known = torch.arange(SEQ - 1) + 1 >= periods[:, None]
        accuracy = (predicted == tokens[:, 1:])[known].float().mean().item()
        assert accuracy > trained_tiny_transformer.ACCURACY_BAR, (period, accuracy)


def test_stored_model_has_induction_heads_in_layer_1():
    model = trained_tiny_transformer.load()
    tokens, _ = _repeated(50, [8], seed=8)
    seen = {}
    with model.blocks[1].attn.hook_pattern.register_forward_hook(
            lambda module, args, output: seen.update(pattern=output)), torch.no_grad():
        model(tokens)
    induction = seen["pattern"].diagonal(offset=-7, dim1=-2, dim2=-1)[..., 1:].mean(dim=(0, -1))
    assert (induction > 0.3).all(), induction


def test_stored_file_is_small_float32_and_loads_with_weights_only():
    stored = torch.load(trained_tiny_transformer.PATH, weights_only=True)
    assert all(value.dtype == torch.float32 for value in stored.values())
    assert trained_tiny_transformer.PATH.stat().st_size < 60_000


def test_the_checks_build_the_model_from_the_lessons_own_classes():
    # One source: the lesson's cell in solutions/, run class by class (the cell's demonstration is not),
    # so that the checks' models and the stored weights are the lesson's model.
    path = lesson_named(trained_tiny_transformer.LESSON_NAME).solution_path
    text = path.read_text(encoding="utf-8")
    for name in trained_tiny_transformer.MODEL_CLASSES:
        model_class = getattr(trained_tiny_transformer, name)
        assert model_class.__module__ == trained_tiny_transformer.__name__
        code = model_class.forward.__code__
        assert inspect.getsource(model_class.forward) in text, name
        line = text.splitlines(True)[code.co_firstlineno - 1]
        assert linecache.getline(code.co_filename, code.co_firstlineno) == line  # a traceback shows the lesson's
        assert not is_learner_file(code.co_filename), code.co_filename  # an error inside is never the learner's line
    assert "untrained" not in TinyTransformer.forward.__globals__  # the cell's demonstration did not run
    model = TinyTransformer(vocab=10, d_model=16, n_heads=2, n_layers=2, max_len=6)
    assert list(model.hook_points())[:3] == ["hook_embed", "blocks.0.hook_resid_pre", "blocks.0.attn.hook_pattern"]


def test_a_model_class_the_lesson_no_longer_defines_is_named():
    names = ("HookPoint", "Attention", "Block", "Embedding")
    with pytest.raises(LookupError, match=r"12_transformer_interpretability\.py defines \['HookPoint', 'Attention', "
                                          r"'Block'\] at the top level of its cells; the checks build the model from "
                                          r"HookPoint, Attention, Block, Embedding, each defined once"):
        definitions_from_lesson(trained_tiny_transformer.LESSON_NAME, names, __name__)
