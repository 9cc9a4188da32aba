# %% [markdown]
# # Lesson 12 — Looking inside a transformer with hooks
#
# Most hooks written today are written to look inside transformers: to cache what each layer
# computes, to switch attention heads off, to copy an activation from one run into another and see
# what it restores, and to steer a model by adding a vector to its residual stream. Libraries such
# as TransformerLens (`HookPoint`, `run_with_cache`, `run_with_hooks`) and baukit (`Trace`,
# `TraceDict`) do this for you, with the plain forward and backward hooks of lessons 01 to 07
# underneath. Here you write them yourself, on a tiny transformer trained in this notebook in a few
# seconds, with no download.
#
# After this lesson you will be able to:
#
# - say why interpretability code names its places with identity modules (hook points) instead of
#   hooking the modules a model happens to have, and what hooks on PyTorch's own attention modules
#   can and cannot see;
# - cache activations, and run a model with temporary hooks that are removed also when it raises;
# - find induction heads by their attention pattern, and ablate heads (zero and mean ablation);
# - make an activation-patching table, its first-order estimate (attribution patching) from one
#   backward pass, and say where the estimate fails;
# - steer a model with a vector added by a hook that lasts exactly one `with` block.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_12_transformer_interpretability.py` (add `-k steer` for one exercise; plain
# `pytest` grades every lesson).

# %%
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.module import register_module_forward_hook

from hooked.notebook import check, hint, try_it

torch.set_num_threads(1)  # small tensors; one thread is also fastest when the cores are busy

# %% [markdown]
# ## Why not hook PyTorch's own attention modules?
#
# PyTorch has attention modules: `nn.MultiheadAttention` and `nn.TransformerEncoderLayer`. Hooking
# them is the first idea, and it goes wrong in three ways. First, `nn.MultiheadAttention` has a
# submodule `out_proj`, the output projection, but a forward hook or pre-hook on it never fires:
# the attention's forward passes `out_proj.weight` to a function (`F.multi_head_attention_forward`)
# instead of calling the module.

# %%
torch.manual_seed(0)
attention = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
fired = []
attention.out_proj.register_forward_hook(lambda module, args, output: fired.append("out_proj"))
attention.out_proj.register_forward_pre_hook(lambda module, args: fired.append("out_proj, pre-hook"))
x = torch.randn(1, 5, 8)
output, weights = attention(x, x, x)
print("out_proj's hooks fired:", fired, "| output", list(output.shape), "| weights", list(weights.shape))
per_head = attention(x, x, x, average_attn_weights=False)[1]
assert fired == [] and list(weights.shape) == [1, 5, 5]
assert torch.allclose(weights, per_head.mean(dim=1))  # the weights are averaged over the 2 heads

# %% [markdown]
# Second, `nn.TransformerEncoderLayer` in eval mode can take a fused "fast path": one C++ call
# instead of its submodules. It takes it only when every condition of a list holds (its `forward`
# keeps the first that fails in `why_not_sparsity_fast_path`). Among other conditions: no forward
# hook or pre-hook is on the layer or on any of its submodules, there is no gradient to compute
# (`torch.no_grad()`, or neither the input nor any parameter requires one), and its number of heads
# is even. So attaching a hook changes which code runs. A global forward hook (lesson 07) is not
# among the things it checks: on the fast path, the global hook sees the layer but none of its
# submodules. The cell shows these conditions, one at a time.

# %%
layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True).eval()
one_head = nn.TransformerEncoderLayer(d_model=8, nhead=1, dim_feedforward=16, batch_first=True).eval()
names = {module: name or "the layer" for each in (layer, one_head) for name, module in each.named_modules()}


def modules_run(run):
    """The modules a global forward hook sees while `run()` runs."""
    ran = []
    with register_module_forward_hook(lambda module, args, output: ran.append(names[module])):
        run()
    return ran


with torch.no_grad():
    fast = modules_run(lambda: layer(x))
    with layer.linear1.register_forward_hook(lambda module, args, output: None):
        with_a_hook = modules_run(lambda: layer(x))
    odd_heads = modules_run(lambda: one_head(x))
with_gradients = modules_run(lambda: layer(x))
layer.requires_grad_(False)
frozen = modules_run(lambda: layer(x))
input_requiring_grad = modules_run(lambda: layer(x.clone().requires_grad_()))
layer.requires_grad_(True)
print("eval, no_grad, a global hook only:           ", fast)
print("the same, with a hook on linear1:            ", with_a_hook)
print("the same, with one head instead of two:      ", odd_heads)
print("gradients on:                                ", with_gradients)
print("gradients on, no parameter requiring them:   ", frozen)
print("the same, with an input that requires one:   ", input_requiring_grad)
slow = ["self_attn", "dropout1", "norm1", "linear1", "dropout", "linear2", "dropout2", "norm2", "the layer"]
assert fast == frozen == ["the layer"]
assert with_a_hook == odd_heads == with_gradients == input_requiring_grad == slow

# %% [markdown]
# Third, what a hook on the stock attention sees of each head. Inside the encoder layer, the
# attention is called with `need_weights=False`, so its output is `(attended, None)`: no pattern at
# all. A pre-hook with `with_kwargs=True` (lesson 03) can ask for the per-head patterns
# (`need_weights=True, average_attn_weights=False`), but each head's *output* is never visible: the
# heads are concatenated and projected inside one function call.

# %%
seen = {}
attention = layer.self_attn
with attention.register_forward_hook(lambda module, args, kwargs, output: seen.update(plain=output),
                                     with_kwargs=True), torch.no_grad():
    layer(x)


def per_head_weights(module, args, kwargs):
    kwargs.update(need_weights=True, average_attn_weights=False)
    return args, kwargs


with attention.register_forward_pre_hook(per_head_weights, with_kwargs=True), \
        attention.register_forward_hook(lambda module, args, output: seen.update(asked=output)), torch.no_grad():
    layer(x)
print("plain: output", list(seen["plain"][0].shape), "| weights", seen["plain"][1])
print("asked for per-head weights:", list(seen["asked"][1].shape), "(batch, heads, query, key)")
assert seen["plain"][1] is None and list(seen["asked"][1].shape) == [1, 2, 5, 5]

# %% [markdown]
# So interpretability libraries write their own model, with an identity module at each place worth
# looking at. TransformerLens calls it `HookPoint`: its forward returns its input, so the model
# computes what it computed before, and a hook on it sees (and may replace) exactly that value,
# under a name of its own.
#
# ## A tiny transformer with hook points
#
# Attention only, two layers of four heads, `d_model` 32. The hook points, by their names in
# `named_modules()`:
#
# - `hook_embed`: the token embedding, `(batch, seq, d_model)` (the position embedding is added after it);
# - `blocks.L.hook_resid_pre` and `blocks.L.hook_resid_post`: the residual stream before and after layer `L`;
# - `blocks.L.attn.hook_pattern`: the attention pattern, `(batch, head, query, key)`;
# - `blocks.L.attn.hook_z`: each head's output before the output projection, `(batch, seq, head, d_head)`;
#   the projection has no bias, so zeros there remove the head's contribution exactly;
# - `hook_logits`: the logits, `(batch, seq, vocab)`.
#
# `model.hook_points()` gives them as a dict, name → module; the exercises use it.

# %%
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


torch.manual_seed(0)
shapes = {}
untrained = TinyTransformer()
for name, point in untrained.hook_points().items():
    point.register_forward_hook(lambda module, args, output, name=name: shapes.update({name: list(output.shape)}))
untrained(torch.zeros(2, 7, dtype=torch.long))
for name, shape in shapes.items():
    print(f"{name:<26} {shape}")
assert shapes["blocks.1.attn.hook_pattern"] == [2, 4, 7, 7] and shapes["blocks.1.attn.hook_z"] == [2, 7, 4, 8]
assert len(shapes) == 10 and shapes["hook_logits"] == [2, 7, 32]

# %% [markdown]
# ## The task: continue a sequence that repeats
#
# Each sequence is a block of distinct random tokens, of a random period from 2 to 8, repeated to
# 24 tokens. Once a whole period has been seen, the next token is known: it is the token that
# followed the previous occurrence of the current token. That rule needs an *induction*
# mechanism: one head that notes at each position which token came before, and one in a later layer
# that looks for the position whose previous token is the current token, and copies the token found
# there. The model is trained (Adam, 400 steps of 64 sequences) to predict each next token, scored
# only at the positions where it is known.

# %%
VOCAB, SEQ = 32, 24


def repeated_tokens(n, periods, generator):
    """(tokens (n, SEQ), period (n,)): for each sequence, distinct random tokens of a period drawn from
    `periods`, repeated."""
    periods = torch.tensor(list(periods))
    period = periods[torch.randint(len(periods), (n,), generator=generator)]
    blocks = torch.rand(n, VOCAB, generator=generator).argsort(dim=1)
    return blocks.gather(1, torch.arange(SEQ) % period[:, None]), period


def known(period, length=SEQ - 1):
    """(n, length) True where the next token is known: a whole period has been seen."""
    return torch.arange(length) + 1 >= period[:, None]


def accuracy(model, tokens, period):
    with torch.no_grad():
        predicted = model(tokens[:, :-1]).argmax(dim=-1)
    return (predicted == tokens[:, 1:])[known(period)].float().mean().item()


def train(periods, steps=400, seed=0):
    torch.manual_seed(seed)
    model = TinyTransformer()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = torch.Generator().manual_seed(seed + 1)
    for step in range(steps):
        tokens, period = repeated_tokens(64, periods, data)
        logits = model(tokens[:, :-1])
        mask = known(period)
        loss = F.cross_entropy(logits[mask], tokens[:, 1:][mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


started = time.perf_counter()
model = train(periods=range(2, 9))
training_seconds = time.perf_counter() - started
test_tokens, test_period = repeated_tokens(1000, range(2, 9), torch.Generator().manual_seed(99))
trained_accuracy = accuracy(model, test_tokens, test_period)
print(f"trained in {training_seconds:.1f} s; accuracy on 1,000 new sequences: {trained_accuracy:.3f} "
      f"(chance: {1 / VOCAB:.3f})")
assert trained_accuracy > 0.9

# %% [markdown]
# ## A fixed period teaches a shortcut instead
#
# Train the same model on sequences that all have period 5. It does not need to look at the
# tokens to know where to copy from: the next token is always 5 places back. The cell measures both
# models on each period; then, with plain forward hooks on the attention patterns, how much each
# head's pattern (averaged over 300 sequences) changes between sequences of period 5 and of period 7,
# as the total variation distance (0: the same pattern, 1: no overlap), averaged over the queries.

# %%
started = time.perf_counter()
shortcut = train(periods=[5], steps=300)
shortcut_seconds = time.perf_counter() - started
by_period = {}
for period in range(2, 9):
    tokens, periods = repeated_tokens(300, [period], torch.Generator().manual_seed(100 + period))
    by_period[period] = (accuracy(model, tokens, periods), accuracy(shortcut, tokens, periods))
print(f"fixed period 5, trained in {shortcut_seconds:.1f} s")
print("period:          ", "  ".join(f"{p:>5}" for p in by_period))
print("variable periods:", "  ".join(f"{a:5.2f}" for a, _ in by_period.values()))
print("fixed period 5:  ", "  ".join(f"{b:5.2f}" for _, b in by_period.values()))
assert by_period[5][1] > 0.95 and all(by_period[p][1] < 0.5 for p in (2, 3, 4, 6, 7, 8))
assert all(a > 0.9 for a, _ in by_period.values())


def mean_patterns(net, tokens):
    """(layer, head, query, key): each head's attention pattern, averaged over the sequences."""
    found = {}
    handles = [block.attn.hook_pattern.register_forward_hook(
        lambda module, args, output, i=i: found.update({i: output.mean(dim=0)})) for i, block in enumerate(net.blocks)]
    try:
        with torch.no_grad():
            net(tokens)
    finally:
        for handle in handles:
            handle.remove()
    return torch.stack([found[i] for i in range(len(net.blocks))])


five, seven = (repeated_tokens(300, [p], torch.Generator().manual_seed(p))[0] for p in (5, 7))
change = {}
for label, net in (("variable periods", model), ("fixed period 5", shortcut)):
    distance = (mean_patterns(net, five) - mean_patterns(net, seven)).abs().sum(dim=-1).mean(dim=-1) / 2
    change[label] = distance
    print(f"{label}: pattern change from period 5 to 7, per head, layer 0 {[round(d, 2) for d in distance[0].tolist()]}, "
          f"layer 1 {[round(d, 2) for d in distance[1].tolist()]}")
assert change["fixed period 5"].max() < 0.1 and change["variable periods"][1].min() > 0.4

# %% [markdown]
# The fixed-period model is right almost every time on its own period (over 95%) and fails on the
# others (under 50%), and its heads attend
# to the same places whatever the period: it learned a rule of positions, not of tokens. The
# induction heads of the other model move their attention with the period. A model can score well on its training data with a mechanism you did
# not expect, and looking inside it is how you find out. From here on we look inside the model
# trained on variable periods.
#
# ## Exercise 1: `run_with_cache` · medium · about 15 min
#
# Write `run_with_cache(model, tokens, names=None)`. It runs `model(tokens)` once and returns
# `(logits, cache)`, where `cache` maps hook-point names to the activation there:
#
# - all the model's hook points (`model.hook_points()`) when `names` is None, the names in a list
#   (or in any other iterable of names: a tuple, a generator), one name given as a bare string (a
#   string is one name, as TransformerLens's `names_filter` takes it, not the characters it iterates
#   over), or the hook points for which a function `names(name)` returns True;
# - gradients flow as in any forward pass: `logits` keep their autograd graph, as TransformerLens's
#   `run_with_cache` returns them (only the cache is detached);
# - each cached tensor is detached and a copy of its own: in-place operations, later in the
#   forward pass or by the caller, do not change it;
# - a name in the list that is not a hook point raises `KeyError` before any hook is registered;
# - every hook is removed before returning, also when the forward pass raises (the exception goes
#   on to the caller); hooks the model had before stay.
#
# Traps: `output.detach()` without `clone()` (it shares memory); a hook left behind when forward
# raises; the late-binding loop variable (every hook storing under the last name); `list(names)` of a
# string (its characters); `torch.no_grad()` around the forward pass (the logits lose their graph).
#
# Check: run `check(run_with_cache)` below, or `pytest tests/test_12_transformer_interpretability.py -k run_with_cache`.

# %% tags=["exercise"]
# Exercise: run_with_cache — write your code in this cell.
import contextlib


def run_with_cache(model, tokens, names=None):
    """Run `model(tokens)` once and return `(logits, cache)`, `logits` what the model returned.

    `cache` maps hook-point names (the keys of `model.hook_points()`) to the activation there:
    every hook point when `names` is None, the names in a list (or any other iterable of names: a
    tuple, a generator), the name given as a bare string (one name, not its characters), or the hook
    points for which `names(name)` returns True.
    Gradients flow as in any forward pass: `logits` keep their autograd graph (only the cache is
    detached).
    Each cached tensor is detached and a copy: later in-place operations, in the forward pass or by
    the caller, do not change it.
    A name in the list that is not a hook point raises KeyError before any hook is registered.
    Every hook is removed before returning, also when the forward pass raises (the exception
    propagates); hooks the model had before stay.
    """
    # BEGIN SOLUTION
    points = model.hook_points()
    if isinstance(names, str):  # one name, not the characters a string iterates over
        names = [names]
    if names is None:
        chosen = list(points)
    elif callable(names):
        chosen = [name for name in points if names(name)]
    else:
        chosen = list(names)
        unknown = [name for name in chosen if name not in points]
        if unknown:
            raise KeyError(f"not hook points of the model: {unknown}")
    cache = {}

    def hook_for(name):
        def hook(module, args, output):
            cache[name] = output.detach().clone()
        return hook

    with contextlib.ExitStack() as stack:
        for name in chosen:
            stack.enter_context(points[name].register_forward_hook(hook_for(name)))
        logits = model(tokens)
    return logits, cache
    # END SOLUTION


# %%
check(run_with_cache)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Decide the list of names first (and raise for an unknown one before touching the model), then one
# forward hook per name that stores a copy of the output under its name, then one forward pass,
# with every hook removed however it ends.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.hook_points()` (a dict, name → module); `callable(names)`; `module.register_forward_hook`;
# `output.detach().clone()`; `contextlib.ExitStack()` and `stack.enter_context(handle)` remove a
# whole list of handles when the `with` block ends, also on an exception. Make each hook in a
# function of its own (`def hook_for(name): ...`), so that each one keeps its own name.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def hook_for(name):
#     def hook(module, args, output):
#         cache[name] = ...
#     return hook
#
# with contextlib.ExitStack() as stack:
#     for name in chosen:
#         stack.enter_context(points[name].register_forward_hook(hook_for(name)))
#     logits = model(tokens)
# ```
#
# </details>

# %% [markdown]
# Once `run_with_cache` is written, this cell caches every hook point of the trained model on 100
# test sequences and weighs the cache against the model (until then it prints "Not done yet"). Then
# it shows that a failing forward pass leaves no hook behind: a token id the embedding does not have
# makes it raise.

# %%
with try_it():
    logits, cache = run_with_cache(model, test_tokens[:100])
    cache_bytes = sum(value.numel() * value.element_size() for value in cache.values())
    model_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"{len(cache)} hook points cached; the cache holds {cache_bytes / 1e3:.0f} kB for 100 sequences, "
          f"the model's parameters {model_bytes / 1e3:.0f} kB")
    assert len(cache) == 10 and cache_bytes > 10 * model_bytes
    try:
        run_with_cache(model, torch.full((1, 5), VOCAB))
        raise AssertionError("expected an IndexError")
    except IndexError as error:
        print(f"{type(error).__name__}: {error}")
    left = sum(len(point._forward_hooks) for point in model.hook_points().values())
    print("hooks left on the hook points after the error:", left)
    assert left == 0

# %% [markdown]
# The cache grows with the batch and the sequence: the attention patterns alone are
# `batch × heads × seq × seq` per layer. Caching only what you need (a list of names, or a
# function such as `lambda name: name.endswith("hook_pattern")`) keeps it small.
#
# ## Induction heads, found by their pattern
#
# On a sequence of period 8, an induction head at position `t` attends to position `t − 7`: the
# token after the previous occurrence of the current token. Its *induction score* is the mean
# attention on that diagonal, over the queries of the second and third periods (`t ≥ 8`). Once
# `run_with_cache` is written, the cell below computes the score of every head, and the
# previous-token score (the mean attention on the diagonal `t − 1`) over all queries and over the
# queries `t ≥ 8`, then where the heads of layer 1 look in each period, and draws the pattern of the
# best induction head.

# %%
periodic = repeated_tokens(50, [8], torch.Generator().manual_seed(8))[0]


def diagonal_score(pattern, offset, first_query=8):
    """Mean attention of each head on key t - offset, over the queries t >= first_query: (head,)."""
    diagonal = pattern.diagonal(offset=-offset, dim1=-2, dim2=-1)  # [..., j] is query j + offset
    return diagonal[..., max(first_query - offset, 0):].mean(dim=(0, -1))


def on_diagonal(pattern, offset, queries):
    """Mean attention of each head on key t - offset, over the queries t in `queries`: (head,)."""
    queries = torch.tensor(list(queries))
    return pattern[:, :, queries, queries - offset].mean(dim=(0, 2))


with try_it():
    _, patterns = run_with_cache(model, periodic, names=lambda name: name.endswith("hook_pattern"))
    induction = torch.stack([diagonal_score(patterns[f"blocks.{i}.attn.hook_pattern"], 7) for i in (0, 1)])
    previous = torch.stack([diagonal_score(patterns["blocks.0.attn.hook_pattern"], 1, first_query)
                            for first_query in (1, 8)])
    for i in (0, 1):
        print(f"layer {i}: induction score {[round(s, 2) for s in induction[i].tolist()]}")
    print(f"layer 0: previous-token score, all queries {[round(s, 2) for s in previous[0].tolist()]}, "
          f"queries t >= 8 {[round(s, 2) for s in previous[1].tolist()]}")
    layer_1 = patterns["blocks.1.attn.hook_pattern"]
    looks = {"second period, on t - 7": on_diagonal(layer_1, 7, range(8, 16)),
             "third period, on t - 7": on_diagonal(layer_1, 7, range(16, 24)),
             "third period, on t - 15": on_diagonal(layer_1, 15, range(16, 24))}
    for label, share in looks.items():
        print(f"layer 1, queries of the {label}: {[round(s, 2) for s in share.tolist()]}")
    best = int(induction[1].argmax())
    fig, ax = plt.subplots(figsize=(4.2, 3.8), dpi=80)
    ax.imshow(patterns["blocks.1.attn.hook_pattern"][0, best], cmap="viridis")
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
    ax.set_title(f"Layer 1, head {best}: attention on a sequence of period 8", fontsize=9)
    plt.show()
    assert (induction[1] > 0.3).all() and (induction[0] < 0.2).all()
    assert previous[0].max() > 0.3 and previous[1].max() < 0.2
    assert (looks["second period, on t - 7"] > 0.6).all() and (looks["third period, on t - 7"] < 0.1).all()
    assert (looks["third period, on t - 15"] > 0.5).all()

# %% [markdown]
# Once `run_with_cache` is done, the cell shows that every head of layer 1 is an induction head, of
# a kind of its own: in the second period its stripe sits seven places left of the diagonal (`t − 7`,
# the token after the previous occurrence of the current token), but in the third period it sits
# fifteen places left (`t − 15`, the token after the *first* occurrence), with almost nothing left on
# `t − 7`. The heads copy from the first period, and the induction score, which counts only `t − 7`,
# averages the two periods. Layer 0 has heads that
# attend to the previous token, but only early in the sequence; from the second period on their
# attention spreads over the earlier positions, so this model's layer 0 is not the clean
# previous-token head of the textbook story. Scores show what a head does, not why.
#
# ## Exercise 2: `run_with_hooks` · easy · about 10 min
#
# Write `run_with_hooks(model, tokens, fwd_hooks)`, which returns `model(tokens)` computed with
# temporary forward hooks. `fwd_hooks` is a list of pairs `(name, fn)`: `name` is a hook point's
# name, `fn(activation, name)` returns a replacement for the activation there, or None to keep it.
# (TransformerLens's `run_with_hooks` takes such pairs too but calls `fn(activation, hook=hook_point)`
# with the `HookPoint` itself, whose name is `hook.name`; here the function gets the name, a string.)
#
# - Pairs may name the same hook point; their functions then run in the list's order, each on what
#   the one before returned.
# - A name that is not a hook point raises `KeyError` before any hook is registered.
# - The hooks are removed before returning, also when the forward pass raises (the exception goes on
#   to the caller); hooks the model had before stay, and run as before: those on the model itself
#   too, which run only when the model is called, `model(tokens)`, not on `model.forward(tokens)`
#   (lesson 04).
# - Gradients flow as in any forward pass: the logits keep their autograd graph, through each
#   activation and its replacement.
#
# Traps: a lambda made in a loop that reads the loop's variables when it runs, not when it was made;
# removing hooks by clearing a module's `_forward_hooks` (it takes the model's own hooks too); a
# function that returns None after another replaced the activation keeps that replacement, not the
# original.
#
# Check: run `check(run_with_hooks)` below, or `pytest tests/test_12_transformer_interpretability.py -k run_with_hooks`.

# %% tags=["exercise"]
# Exercise: run_with_hooks — write your code in this cell.
import contextlib


def run_with_hooks(model, tokens, fwd_hooks):
    """Return `model(tokens)` computed with temporary forward hooks.

    `fwd_hooks` is a list of `(name, fn)`: `name` a hook point's name (a key of
    `model.hook_points()`), `fn(activation, name)` returns a replacement for the activation, or None
    to keep it.
    Pairs that name the same hook point run in the list's order, each on what the one before returned.
    A name that is not a hook point raises KeyError before any hook is registered.
    The hooks are removed before returning, also when the forward pass raises (the exception
    propagates); hooks the model had before stay, and run as before.
    Gradients flow as in any forward pass: the logits keep their autograd graph, through each
    activation and its replacement.
    """
    # BEGIN SOLUTION
    points = model.hook_points()
    unknown = [name for name, _ in fwd_hooks if name not in points]
    if unknown:
        raise KeyError(f"not hook points of the model: {unknown}")

    def hook_for(name, fn):
        return lambda module, args, output: fn(output, name)

    with contextlib.ExitStack() as stack:
        for name, fn in fwd_hooks:
            stack.enter_context(points[name].register_forward_hook(hook_for(name, fn)))
        return model(tokens)
    # END SOLUTION


# %%
check(run_with_hooks)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A forward hook whose return is not None replaces the module's output (lesson 04): so each pair
# becomes one forward hook that calls `fn(output, name)` and returns what it returns. Check the
# names first; remove the hooks however the forward pass ends.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.hook_points()`; `register_forward_hook` (hooks on one module run in the order they were
# registered); `contextlib.ExitStack` with `stack.enter_context(handle)`; a function that makes each
# hook (`def hook_for(name, fn): return lambda module, args, output: ...`) so that each keeps its pair.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# with contextlib.ExitStack() as stack:
#     for name, fn in fwd_hooks:
#         stack.enter_context(points[name].register_forward_hook(hook_for(name, fn)))
#     return model(tokens)
# ```
#
# </details>

# %% [markdown]
# Once it is written, this cell runs the trained model with the token embedding multiplied by zero
# at `hook_embed`: without its tokens, only positions are left, and the accuracy falls to about
# chance (1 in 32). The model itself keeps no hook afterwards.

# %%
with try_it():
    blind = run_with_hooks(model, test_tokens[:200, :-1], [("hook_embed", lambda activation, name: 0 * activation)])
    blind_accuracy = (blind.argmax(dim=-1) == test_tokens[:200, 1:])[known(test_period[:200])].float().mean().item()
    print(f"accuracy without the token embedding: {blind_accuracy:.3f} (chance: {1 / VOCAB:.3f}); hooks left on "
          f"the model: {sum(len(m._forward_hooks) for m in model.modules())}")
    assert abs(blind_accuracy - 1 / VOCAB) < 0.05 and not any(m._forward_hooks for m in model.modules())

# %% [markdown]
# ## Exercise 3: `ablate_heads` · medium · about 15 min
#
# Ablating a head means removing its contribution and seeing what the model loses. Write
# `ablate_heads(model, tokens, heads, kind="zero", mean_cache=None)`. It returns the logits of
# `model(tokens)` with the output of each head in `heads` (a list of `(layer, head)` pairs) replaced
# at its layer's `blocks.{layer}.attn.hook_z`, at every position, and every other head as it was:
#
# - `kind="zero"`: by zeros;
# - `kind="mean"`: by its mean over the batch of `mean_cache[name]` (the cache of a reference run,
#   from `run_with_cache`), one mean per position; without a `mean_cache`, raise `ValueError`;
# - any other `kind` (a misspelt one too): raise `ValueError`.
#
# No hook is left on the model, also when the forward pass raises (the exception goes on to the
# caller), and hooks the model had before stay.
#
# Traps: the mean of the batch being ablated instead of the reference's; a mean over the positions
# too; the head's axis (`hook_z` is `(batch, seq, head, d_head)`); several heads of one layer.
#
# Check: run `check(ablate_heads)` below, or `pytest tests/test_12_transformer_interpretability.py -k ablate_heads`.

# %% tags=["exercise"]
# Exercise: ablate_heads — write your code in this cell.
import contextlib


def ablate_heads(model, tokens, heads, kind="zero", mean_cache=None):
    """Return the logits of `model(tokens)` with the output of each head in `heads`, a list of
    `(layer, head)` pairs, replaced at `blocks.{layer}.attn.hook_z` (shape (batch, seq, head, d_head)),
    at every position; every other head is left as it was.

    kind="zero": replaced by zeros.
    kind="mean": replaced by its mean over the batch of `mean_cache[name]` (the cache of a reference
    run), one mean per position; with no `mean_cache`, raises ValueError.
    Any other `kind` raises ValueError.
    No hook is left on the model, also when the forward pass raises (the exception propagates); hooks
    the model had before stay.
    """
    # BEGIN SOLUTION
    if kind not in ("zero", "mean"):
        raise ValueError(f"kind is 'zero' or 'mean', not {kind!r}")
    if kind == "mean" and mean_cache is None:
        raise ValueError("kind='mean' needs the mean_cache of a reference run")
    by_layer = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)

    def hook_for(name, chosen):
        def hook(module, args, z):
            z = z.clone()
            if kind == "zero":
                z[:, :, chosen] = 0
            else:
                z[:, :, chosen] = mean_cache[name][:, :, chosen].mean(dim=0)
            return z
        return hook

    with contextlib.ExitStack() as stack:
        for layer, chosen in by_layer.items():
            name = f"blocks.{layer}.attn.hook_z"
            stack.enter_context(model.get_submodule(name).register_forward_hook(hook_for(name, chosen)))
        return model(tokens)
    # END SOLUTION


# %%
check(ablate_heads)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# One forward hook per layer that appears in `heads`, on that layer's `hook_z`, returning a copy of
# `z` in which the chosen heads' slices are overwritten. The mean comes from the reference cache,
# never from the `z` the hook receives.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.get_submodule(f"blocks.{layer}.attn.hook_z")`; `z.clone()`; `z[:, :, heads_of_layer] = 0`
# (a list of head indices works as an index); `mean_cache[name][:, :, heads_of_layer].mean(dim=0)` has
# shape `(seq, heads, d_head)` and broadcasts over the batch.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def hook(module, args, z):
#     z = z.clone()
#     if kind == "zero":
#         z[:, :, chosen] = 0
#     else:
#         z[:, :, chosen] = ...  # the reference's mean over dim 0
#     return z
# ```
#
# </details>

# %% [markdown]
# Once `ablate_heads` is written, this cell measures what each induction head of layer 1 is worth:
# the accuracy with each one ablated alone, then with all four, with zeros and with the mean of a
# reference batch of other sequences (until then it prints "Not done yet").

# %%
reference_tokens = repeated_tokens(200, range(2, 9), torch.Generator().manual_seed(5))[0][:, :-1]
inputs, targets, mask = test_tokens[:300, :-1], test_tokens[:300, 1:], known(test_period[:300])


def accuracy_of(logits):
    return (logits.argmax(dim=-1) == targets)[mask].float().mean().item()


with try_it():
    _, reference = run_with_cache(model, reference_tokens, names=["blocks.1.attn.hook_z"])
    ablated = {}
    for kind in ("zero", "mean"):
        for heads in [[(1, h)] for h in range(4)] + [[(1, h) for h in range(4)]]:
            with torch.no_grad():
                logits = ablate_heads(model, inputs, heads, kind=kind, mean_cache=reference)
            ablated[kind, len(heads), heads[0][1]] = accuracy_of(logits)
    with torch.no_grad():
        intact = accuracy_of(model(inputs))
    print(f"intact: {intact:.3f}")
    for kind in ("zero", "mean"):
        alone = [ablated[kind, 1, h] for h in range(4)]
        print(f"{kind} ablation, one head of layer 1 at a time: {[round(a, 3) for a in alone]}; "
              f"all four: {ablated[kind, 4, 0]:.3f}")
        assert min(alone) > intact - 0.05 and ablated[kind, 4, 0] < 0.3

# %% [markdown]
# Once `ablate_heads` is done, the numbers show that the four heads are redundant: each one alone
# costs less than five points of accuracy, while all four together break the task. An ablation study that removes one head
# at a time would conclude that no head matters.
#
# ## Exercise 4: `patching_table` · medium · about 20 min
#
# Activation patching asks *where* the information that decides an output sits. Take a clean prompt
# and a corrupted one that differs in one token, and a metric of the logits (here the logit
# difference between the clean answer and the corrupted one). Run the corrupted prompt, but with the
# activation at one hook point and one position copied from the clean run: the metric shows how much
# of the clean answer that one activation brings back.
#
# Write `patching_table(model, clean, corrupted, metric, names)`. `clean` and `corrupted` are token
# tensors of the same shape `(batch, seq)`; `names` are hook points whose activations are
# `(batch, seq, ...)`; `metric(logits)` returns a 0-dim tensor. It returns a float tensor of shape
# `(len(names), seq)`: `table[i, p]` is the metric of the run on `corrupted` in which the activation
# at `names[i]`, position `p` (`activation[:, p]`, all of the batch and every feature), is replaced by
# its value in the run on `clean`, everything else as in the corrupted run. No hook is left on the
# model, also when `metric` raises (the exception goes on to the caller), and hooks the model had
# before stay.
#
# Traps: patching the clean run with the corrupted activations (the wrong way round); positions off
# by one; keeping the patch of earlier positions in later runs.
#
# Check: run `check(patching_table)` below, or `pytest tests/test_12_transformer_interpretability.py -k patching_table`.

# %% tags=["exercise"]
# Exercise: patching_table — write your code in this cell.
import contextlib

import torch


def patching_table(model, clean, corrupted, metric, names):
    """Activation patching: a float tensor of shape (len(names), seq) whose entry [i, p] is
    `metric(logits)` of the run on `corrupted` in which the activation at hook point `names[i]`,
    position p (`activation[:, p]`: all of the batch, every feature), is replaced by its value in the
    run on `clean`, and everything else is as in the corrupted run.

    `clean` and `corrupted` are token tensors of the same shape (batch, seq); each hook point in
    `names` has an activation of shape (batch, seq, ...); `metric` returns a 0-dim tensor.
    No hook is left on the model, also when `metric` raises (the exception propagates), and hooks the
    model had before stay.
    """
    # BEGIN SOLUTION
    points = model.hook_points()
    clean_activations = {}
    with contextlib.ExitStack() as stack, torch.no_grad():
        for name in names:
            stack.enter_context(points[name].register_forward_hook(
                lambda module, args, output, name=name: clean_activations.update({name: output.clone()})))
        model(clean)
    table = torch.zeros(len(names), corrupted.shape[1])
    for i, name in enumerate(names):
        for position in range(corrupted.shape[1]):
            def patch(module, args, output):
                output = output.clone()
                output[:, position] = clean_activations[name][:, position]
                return output

            with points[name].register_forward_hook(patch), torch.no_grad():
                table[i, position] = float(metric(model(corrupted)))
    return table
    # END SOLUTION


# %%
check(patching_table)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# First one run on `clean` that keeps a copy of the activation at each name. Then, for each name and
# each position, one run on `corrupted` with a forward hook that returns a copy of the activation in
# which position `p` holds the clean value; the metric of that run is the table's entry.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.hook_points()[name].register_forward_hook(...)` used as a context manager, one per patched
# run; `output.clone()` then `patched[:, p] = clean_activation[:, p]`; `float(metric(logits))`;
# `torch.no_grad()` (no run here needs a graph).
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# for i, name in enumerate(names):
#     for position in range(seq):
#         def patch(module, args, output):
#             output = output.clone()
#             output[:, position] = ...
#             return output
#         with points[name].register_forward_hook(patch), torch.no_grad():
#             table[i, position] = float(metric(model(corrupted)))
# ```
#
# </details>

# %% [markdown]
# The prompts: a block of 8 tokens repeated to 23 tokens, so that the answer at the last position is
# the block's last token, `A`, found by induction from its earlier occurrences at positions 7 and 15.
# The corrupted prompt has another token, `Z`, at those two positions: its answer is `Z`. The metric
# is `logit(A) − logit(Z)` at the last position. Once `patching_table` is written, the cell below
# makes the table at the residual stream before each layer and after the last one, as the share of
# the clean metric restored (0: as corrupted, 1: as clean), and draws it.

# %%
block = repeated_tokens(1, [8], torch.Generator().manual_seed(3))[0][0, :8]
clean_prompt = block.repeat(3)[None, :23]
answer, other = int(block[7]), int(next(t for t in range(VOCAB) if t not in block.tolist()))
corrupted_prompt = clean_prompt.clone()
corrupted_prompt[0, [7, 15]] = other
residual = ["blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre", "blocks.1.hook_resid_post"]


def logit_difference(logits):
    return logits[0, -1, answer] - logits[0, -1, other]


with torch.no_grad():
    clean_metric = logit_difference(model(clean_prompt)).item()
    corrupted_metric = logit_difference(model(corrupted_prompt)).item()
print(f"logit(A) - logit(Z): clean {clean_metric:.2f}, corrupted {corrupted_metric:.2f}")
assert clean_metric > 2 and corrupted_metric < -2

with try_it():
    table = patching_table(model, clean_prompt, corrupted_prompt, logit_difference, residual)
    restored = (table - corrupted_metric) / (clean_metric - corrupted_metric)
    fig, ax = plt.subplots(figsize=(8, 2.2), dpi=80)
    picture = ax.imshow(restored, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    ax.set_yticks(range(len(residual)), ["resid before layer 0", "resid before layer 1", "resid after layer 1"])
    ax.set_xticks(range(23))
    ax.set_xlabel("position patched")
    fig.colorbar(picture, ax=ax)
    ax.set_title("Share of the clean logit difference restored by patching one position", fontsize=9)
    plt.show()
    strong = {(residual[i], p) for i, p in (restored.abs() > 0.5).nonzero().tolist()}
    print("cells that restore more than half:", sorted(strong, key=lambda cell: (residual.index(cell[0]), cell[1])))
    assert strong == {(residual[0], 7), (residual[1], 7), (residual[2], 22)} and restored[:2, 15].max() < 0.1

# %% [markdown]
# Once `patching_table` is done, read the table it draws. Before each layer, the patch matters at
# position 7, the first occurrence of `A`, and hardly at all at position 15, its second: this model
# reads the answer from the first period. After layer 1 only the last position matters: the answer
# has been copied there by the induction heads.
#
# ## Exercise 5: `attribution_table` · hard · about 25 min
#
# Patching needs one forward pass per cell. *Attribution patching* estimates the whole table from
# one forward pass on `clean` and one forward and one backward pass on `corrupted`, with the first
# order of a Taylor expansion: the metric changes by about the change of the activation times the
# metric's gradient with respect to it.
#
# Write `attribution_table(model, clean, corrupted, metric, names)`, with the arguments of
# `patching_table`. It returns a float tensor of shape `(len(names), seq)`:
# `table[i, p] = M + sum((C[:, p] − R[:, p]) * G[:, p])`, where `M` is the metric of the corrupted
# run, `C` and `R` the activations at `names[i]` in the clean and corrupted runs, `G` the gradient
# of the corrupted run's metric with respect to `R`, and the sum is over the batch and every feature.
#
# - The model runs exactly twice (`clean`, then or before that `corrupted`) and backward once.
# - Gradients are read without `retain_grad()` on the model's tensors: with tensor hooks registered
#   from forward hooks, as in lesson 06 (or `torch.autograd.grad` on the activations the forward hooks
#   kept).
# - No hook is left on the model, also when `metric` raises (the exception goes on to the caller),
#   and hooks the model had before stay. (A `backward()` that also fills the parameters' `.grad` is
#   allowed.)
#
# Traps: the gradient of the clean run instead of the corrupted one; `C − R` the wrong way round;
# forgetting `M`; summing over the positions too.
#
# Check: run `check(attribution_table)` below, or `pytest tests/test_12_transformer_interpretability.py -k attribution_table`.

# %% tags=["exercise"]
# Exercise: attribution_table — write your code in this cell.
import contextlib

import torch


def attribution_table(model, clean, corrupted, metric, names):
    """Attribution patching: the first-order estimate of patching_table(model, clean, corrupted,
    metric, names), a float tensor of shape (len(names), seq).

    table[i, p] = M + sum((C[:, p] - R[:, p]) * G[:, p]), with M the metric of the run on `corrupted`,
    C and R the activations at `names[i]` in the runs on `clean` and `corrupted`, G the gradient of M
    with respect to R, and the sum over the batch and every feature.
    The model runs exactly twice (once on each prompt) and backward runs once.
    Gradients are read without retain_grad() on the model's tensors (with tensor hooks registered from
    forward hooks, for example).
    No hook is left on the model, also when `metric` raises (the exception propagates), and hooks the
    model had before stay. (A backward() that also fills the parameters' .grad is allowed.)
    """
    # BEGIN SOLUTION
    points = model.hook_points()
    clean_activations, corrupted_activations, gradients = {}, {}, {}

    def keep(store, name, grads=None):
        def hook(module, args, output):
            store[name] = output.detach().clone()
            if grads is not None:
                output.register_hook(lambda grad: grads.update({name: grad}))
        return hook

    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(points[name].register_forward_hook(keep(clean_activations, name)))
        with torch.no_grad():
            model(clean)
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(points[name].register_forward_hook(keep(corrupted_activations, name, gradients)))
        value = metric(model(corrupted))
    value.backward()
    rows = []
    for name in names:
        change = (clean_activations[name] - corrupted_activations[name]) * gradients[name]
        rows.append(value.item() + change.transpose(0, 1).reshape(change.shape[1], -1).sum(dim=1))
    return torch.stack(rows)
    # END SOLUTION


# %%
check(attribution_table)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A clean run that keeps copies of the activations; a corrupted run whose forward hooks keep copies
# too and put a tensor hook on each activation; one backward from the corrupted metric fills in the
# gradients. The rest is arithmetic: multiply, then sum over every dimension but the position.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# Inside a forward hook, `output.register_hook(lambda grad: ...)` (lesson 06); `value = metric(model(corrupted))`
# then `value.backward()`; `change.transpose(0, 1).reshape(seq, -1).sum(dim=1)` sums all but the position;
# `torch.stack(rows)`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def keep(store, name, grads=None):
#     def hook(module, args, output):
#         store[name] = output.detach().clone()
#         if grads is not None:
#             output.register_hook(lambda grad: grads.update({name: grad}))
#     return hook
# ```
#
# </details>

# %% [markdown]
# Once `attribution_table` is written, this cell draws its estimate against the real patching, cell
# by cell, for two corruptions: the one above (the answer `A` replaced at positions 7 and 15), and a
# second that replaces the token *before* it (positions 6 and 14), which changes where the induction
# heads look rather than what they copy. It measures where the estimate and patching differ (until
# then it prints "Not done yet").

# %%
corrupted_before = clean_prompt.clone()
corrupted_before[0, [6, 14]] = other

with try_it():
    errors = {}
    for label, corrupted in (("answer replaced", corrupted_prompt), ("token before it replaced", corrupted_before)):
        with torch.no_grad():
            base = logit_difference(model(corrupted)).item()
        scale = clean_metric - base
        patched = (patching_table(model, clean_prompt, corrupted, logit_difference, residual) - base) / scale
        estimated = (attribution_table(model, clean_prompt, corrupted, logit_difference, residual) - base) / scale
        errors[label] = (patched, estimated)
        worst = (estimated - patched).abs().argmax().item()
        print(f"{label}: largest error at {residual[worst // 23]}, position {worst % 23}: patching restores "
              f"{patched.flatten()[worst]:.2f}, the estimate says {estimated.flatten()[worst]:.2f}")
    # the figure is made once there is something to draw: an exercise not written yet leaves no empty chart
    fig, ax = plt.subplots(figsize=(4.4, 4), dpi=80)
    for label, (patched, estimated) in errors.items():
        ax.scatter(patched.flatten(), estimated.flatten(), s=14, label=label)
    ax.plot([-0.2, 2.4], [-0.2, 2.4], color="grey", linewidth=0.8)
    ax.set_xlabel("share restored by patching")
    ax.set_ylabel("share estimated by attribution")
    ax.legend(fontsize=8)
    ax.set_title("Attribution patching against patching, cell by cell", fontsize=9)
    plt.show()
    patched, estimated = errors["answer replaced"]
    assert (estimated - patched).abs().max() < 0.1
    patched, estimated = errors["token before it replaced"]
    assert patched[0, 6] > 0.9 and estimated[0, 6] > 2 * patched[0, 6]
    small = patched.abs() < 0.05
    assert (estimated - patched)[small].abs().max() < 0.05

# %% [markdown]
# Why the two corruptions differ, measured with a plain forward hook on the layer-1 patterns: how much
# attention the last position gives to position 7 (the key whose previous token is the current
# token), averaged over the four heads, in each run.

# %%
def attention_to_7(tokens):
    seen = {}
    with model.blocks[1].attn.hook_pattern.register_forward_hook(
            lambda module, args, output: seen.update(pattern=output)), torch.no_grad():
        model(tokens)
    return seen["pattern"][0, :, -1, 7].mean().item()


looks = {label: attention_to_7(tokens) for label, tokens in
         (("clean", clean_prompt), ("answer replaced", corrupted_prompt), ("token before it replaced", corrupted_before))}
print("layer 1, attention of the last position to position 7:", {label: round(v, 2) for label, v in looks.items()})
assert abs(looks["answer replaced"] - looks["clean"]) < 0.1 and looks["token before it replaced"] < looks["clean"] - 0.3

# %% [markdown]
# Replacing the answer leaves the induction heads looking where they looked: only what they copy
# changes, and that goes on to the logits through the value path, which is linear. Replacing the
# token before it moves their attention, through a softmax that is far from linear over the change of
# a whole token. Once `attribution_table` is done, the scatter above shows what that does to the
# estimate: where patching changes little, the estimate agrees; when the answer is replaced it is
# close everywhere; when the token before it is replaced, patching it back restores the metric but the
# estimate says more than twice that, since the gradient of the corrupted run knows only small
# changes. So attribution patching is a cheap map of where to look, and real patching is the
# measurement.
#
# ## Exercise 6: `steer` · easy · about 10 min
#
# Steering changes what a model does by adding a vector to an activation. Write `steer(model, name,
# vector, alpha=1.0)`, a context manager: inside `with steer(model, name, vector, alpha):`, every
# forward pass of `model` adds `alpha * vector` to the activation at hook point `name` (at every
# batch element and position; `vector` has the size of the activation's last dimension).
#
# - Outside the block the model runs as before: the hook is removed when the block ends, also when
#   it raises (the exception goes on to the caller).
# - `vector` is not changed.
# - Blocks may nest: the additions then add up.
# - Gradients flow as in any forward pass: the steered activation keeps its autograd graph.
#
# Traps: registering the hook but never removing it; removing it only when the block ends without an
# error; scaling `vector` in place.
#
# Check: run `check(steer)` below, or `pytest tests/test_12_transformer_interpretability.py -k steer`.

# %% tags=["exercise"]
# Exercise: steer — write your code in this cell.
import contextlib


@contextlib.contextmanager
def steer(model, name, vector, alpha=1.0):
    """A context manager: inside `with steer(model, name, vector, alpha):` every forward pass of
    `model` adds `alpha * vector` to the activation at hook point `name` (every batch element and
    position; `vector` has the size of the activation's last dimension).

    Outside the block the model runs as before: the hook is removed when the block ends, also when
    it raises (the exception propagates).
    `vector` is not changed.
    Blocks may nest: the additions add up.
    Gradients flow as in any forward pass: the steered activation keeps its autograd graph.
    """
    # BEGIN SOLUTION
    point = model.hook_points()[name]
    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):
        yield
    # END SOLUTION


# %%
check(steer)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A generator decorated with `@contextlib.contextmanager`: register a forward hook that returns
# `output + alpha * vector`, `yield` while the block runs, and remove the hook however the block ends.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `@contextlib.contextmanager`; `model.hook_points()[name].register_forward_hook(...)`; the handle
# is itself a context manager, and a `yield` inside `with handle:` (or inside `try: ... finally:
# handle.remove()`) removes it also when the block raises.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# @contextlib.contextmanager
# def steer(model, name, vector, alpha=1.0):
#     point = model.hook_points()[name]
#     with point.register_forward_hook(lambda module, args, output: ...):
#         ...
# ```
#
# </details>

# %% [markdown]
# Once `steer` is written, this cell steers the trained model towards one token, `Z`, by adding the
# direction of `Z`'s row of the unembedding to the residual stream after layer 1, with growing
# `alpha`: it measures how often the model then predicts `Z`, and its accuracy; after the blocks, the
# model computes what it computed before.

# %%
with try_it():
    direction = model.unembed.weight[other].detach()
    direction = direction / direction.norm()
    with torch.no_grad():
        before = model(inputs)
        effects = {}
        for alpha in (0.0, 8.0, 16.0, 32.0):
            with steer(model, "blocks.1.hook_resid_post", direction, alpha):
                logits = model(inputs)
            effects[alpha] = ((logits.argmax(dim=-1) == other).float().mean().item(), accuracy_of(logits))
        after = model(inputs)
    for alpha, (share, steered_accuracy) in effects.items():
        print(f"alpha {alpha:>4}: predicts Z at {share:.1%} of the positions, accuracy {steered_accuracy:.3f}")
    print("the model after the blocks computes what it computed before:", torch.equal(before, after))
    assert torch.equal(before, after) and effects[32.0][0] > 0.5 and effects[0.0][0] < 0.1
    assert effects[0.0][0] < effects[8.0][0] < effects[16.0][0] < effects[32.0][0]

# %% [markdown]
# ## Summary
#
# - On `nn.MultiheadAttention`, a hook on `out_proj` never fires; `nn.TransformerEncoderLayer` in
#   eval mode takes a fused path only when, among other conditions, no hook is attached to it or a
#   submodule (a global hook does not count: it sees only the layer), there is no gradient to
#   compute and its number of heads is even; the stock attention never shows a head's output. Name
#   the places yourself, with identity modules.
# - A cache stores `output.detach().clone()`, and every temporary hook goes in a `with` block (or an
#   `ExitStack`), so that it is removed also when the forward pass raises.
# - A forward hook's return replaces the activation: that is ablation, patching and steering.
# - Induction heads show in their pattern; redundant heads hide from one-at-a-time ablation.
# - Patching measures, one forward pass per cell; attribution patching estimates the whole table from
#   one backward pass (tensor hooks registered from forward hooks). Here it matched patching where a
#   patch changed what the heads copy, and said more than twice the real effect where a patch moved
#   where they look.
# - A model that scores well may have learned a shortcut (a fixed period taught a rule of positions):
#   look inside before you trust it.
