"""Lesson 12's tiny transformer: its classes (the same as the lesson's, so that the checks build
small random ones from fixed seeds) and the model as the lesson trains it, stored in
data/trained_tiny_transformer.pt so that checks can use it without training (seconds: far too slow
for a check). The stored weights are read once per grading process, when a check first asks.

    python -m hooked.checks.trained_tiny_transformer --write   # regenerate the file (course authors)

Writing executes the code cells of solutions/12_transformer_interpretability.py, the single source,
in order, up to and including the cell that trains the model, and keeps that model. Training may give
other weights on another machine or torch build, so the stored file is NOT compared with a fresh run;
tests/course/test_trained_tiny_transformer.py checks that it is trained.
"""

import functools
import pathlib

import torch
from torch import nn

from hooked.checks.lesson_training import float_copy, run_cells_until_trained, save, write_command

PATH = pathlib.Path(__file__).resolve().parent / "data" / "trained_tiny_transformer.pt"
LESSON = pathlib.Path(__file__).resolve().parents[2] / "solutions" / "12_transformer_interpretability.py"
ACCURACY_BAR = 0.9  # on new sequences of periods 2 to 8, at the positions where the next token is known


class HookPoint(nn.Module):
    """An identity module that names a place: a hook on it sees, and may replace, the value there."""

    def forward(self, x):
        return x


class Attention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.hook_pattern = HookPoint()  # (batch, head, query, key)
        self.hook_z = HookPoint()        # (batch, seq, head, d_head)

    def forward(self, x):
        batch, seq, d_model = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.n_heads, self.d_head).unbind(dim=2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / self.d_head ** 0.5
        future = torch.ones(seq, seq, dtype=torch.bool).triu(diagonal=1)
        pattern = self.hook_pattern(scores.masked_fill(future, float("-inf")).softmax(dim=-1))
        z = self.hook_z(torch.einsum("bhqk,bkhd->bqhd", pattern, v))
        return self.out(z.reshape(batch, seq, d_model))


class Block(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.hook_resid_pre = HookPoint()
        self.attn = Attention(d_model, n_heads)
        self.hook_resid_post = HookPoint()

    def forward(self, x):
        x = self.hook_resid_pre(x)
        return self.hook_resid_post(x + self.attn(x))


class TinyTransformer(nn.Module):
    def __init__(self, vocab=32, d_model=32, n_heads=4, n_layers=2, max_len=24):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.hook_embed = HookPoint()
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.unembed = nn.Linear(d_model, vocab)
        self.hook_logits = HookPoint()

    def forward(self, tokens):
        x = self.hook_embed(self.embed(tokens)) + self.pos.weight[:tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.hook_logits(self.unembed(x))

    def hook_points(self):
        """{name: HookPoint} of the model, in the order of named_modules()."""
        return {name: module for name, module in self.named_modules() if isinstance(module, HookPoint)}


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
    namespace = run_cells_until_trained(LESSON)
    save(float_copy(namespace["model"].state_dict()), PATH,
         f"accuracy {namespace['trained_accuracy']:.3f}, trained in {namespace['training_seconds']:.1f} s")


if __name__ == "__main__":
    write_command(__doc__, write)
