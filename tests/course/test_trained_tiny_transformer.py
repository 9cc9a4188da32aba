"""The trained transformer lesson 12's checks use (hooked/checks/data/trained_tiny_transformer.pt) is
really trained: on new sequences of the lesson's task its accuracy is above the stated bar, and its
layer-1 heads are induction heads. Whether it equals a fresh run of
`python -m hooked.checks.trained_tiny_transformer --write` is not tested: training may give other
weights on another machine."""

import ast

import torch
from torch import nn

from hooked.checks import trained_tiny_transformer
from hooked.course import lesson_named

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


def _lesson_classes():
    """The model classes lesson 12 defines in solutions/, run on their own."""
    tree = ast.parse(lesson_named("12_transformer_interpretability").solution_path.read_text(encoding="utf-8"))
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)
               and node.name in ("HookPoint", "Attention", "Block", "TinyTransformer")]
    namespace = {"nn": nn, "torch": torch}
    exec(compile(ast.Module(body=classes, type_ignores=[]), "lesson 12's model", "exec"), namespace)
    return namespace


def test_checks_build_the_same_transformer_as_the_lesson():
    # The checks keep their own copy of the classes (checks never import a lesson): the same layers under
    # the same names, computing the same function, so the stored weights fit the lesson's model too.
    lesson_classes = _lesson_classes()
    for settings in ({}, dict(vocab=10, d_model=16, n_heads=2, n_layers=2, max_len=6)):
        torch.manual_seed(0)
        lesson = lesson_classes["TinyTransformer"](**settings)
        torch.manual_seed(0)
        checks = trained_tiny_transformer.TinyTransformer(**settings)
        assert repr(checks) == repr(lesson)
        assert list(checks.hook_points()) == list(lesson.hook_points())
        tokens = torch.randint(checks.embed.num_embeddings, (2, checks.pos.num_embeddings))
        with torch.no_grad():
            assert torch.equal(checks(tokens), lesson(tokens))
