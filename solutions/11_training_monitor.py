# %% [markdown]
# # Lesson 11 — Capstone: a training monitor
#
# The earlier lessons each showed one kind of hook. This one puts them to work together on a real
# (small) training run: a monitor that you attach to any model (its modules may return tensors,
# or tuples, lists and dicts of them, as `nn.LSTM` does), that records how every layer's
# activations and every parameter's gradient behave step by step, that names the first module
# whose output or gradient stopped being a finite number, and that leaves the model exactly as it
# found it when it is removed. The plots at the end are drawn only from what the monitor recorded.
#
# After this lesson you will be able to:
#
# - record per-layer activation statistics (mean, standard deviation, fraction of zeros, the sign
#   of dead ReLUs) with forward hooks, as plain numbers that keep no autograd graph alive, also for
#   modules that return a tuple, a list or a dict (`nn.LSTM`);
# - record per-parameter gradient norms with tensor hooks, and say what they show when gradients
#   are accumulated over several backward calls or clipped afterwards;
# - combine both into a monitor with `attach()`, `remove()` and a `with` block, that catches the
#   first NaN or Inf of a diverging run and names the module it came from.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses. The third
# exercise uses the first two.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_11_training_monitor.py` (add `-k track_grad_norms` for one exercise; plain
# `pytest` grades every lesson).

# %%
import math
import time
import warnings

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from hooked.digits import load_digits
from hooked.notebook import check, hint, try_it

print(torch.__version__)

# %% [markdown]
# ## The data and the model
#
# The handwritten digits of lesson 06 (`hooked.digits.load_digits`, no download), this time
# as they come: 1,797 images of 8×8 pixels, flattened to 64 numbers and scaled to [0, 1]. The same
# fixed split as lesson 06 keeps 360 digits for testing. The model is a small multilayer
# perceptron, 64 → 32 → 32 → 10, with a choice of activation, always from the same starting
# weights, and training is three passes over the training digits in batches of 64 (69 steps) of
# plain stochastic gradient descent written out by hand (it spares the import of `torch.optim`).
# `train` calls `after_step(step, loss)` after every step, so that a cell can watch the run, and
# stops early when that returns `True`. The tensors are tiny; torch works on one thread here.

# %%
torch.set_num_threads(1)
digits = load_digits()
inputs = torch.tensor(digits.data, dtype=torch.float32) / 16.0
labels = torch.tensor(digits.target)
order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
test_idx, train_idx = order[:360], order[360:]
steps = 3 * math.ceil(len(train_idx) / 64)
print("inputs:", list(inputs.shape), "| train:", len(train_idx), "| test:", len(test_idx), "| steps of 3 passes:", steps)
assert list(inputs.shape) == [1797, 64] and len(train_idx) == 1437 and steps == 69
assert inputs.min() == 0 and inputs.max() == 1


def make_mlp(activation=nn.ReLU):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 32), activation(), nn.Linear(32, 32), activation(), nn.Linear(32, 10))


def train(model, lr, epochs=3, after_step=None):
    """Plain SGD on the training digits, batches of 64; returns the loss of every step."""
    shuffle = torch.Generator().manual_seed(1)
    losses = []
    for epoch in range(epochs):
        for batch in train_idx[torch.randperm(len(train_idx), generator=shuffle)].split(64):
            loss = F.cross_entropy(model(inputs[batch]), labels[batch])
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.sub_(lr * parameter.grad)
            losses.append(loss.item())
            if after_step is not None and after_step(len(losses), loss.item()):
                return losses
    return losses


def accuracy(model):
    with torch.no_grad():
        return (model(inputs[test_idx]).argmax(dim=1) == labels[test_idx]).float().mean().item()

# %% [markdown]
# ## What to record about an activation, and how
#
# Three numbers per layer per step say a lot about a layer's health: the **mean** and the
# **standard deviation** of its output (do activations drift, grow or shrink?), and the **fraction
# of exact zeros** (for a ReLU: how many units were switched off; a ReLU that outputs zero for every
# input is "dead" and no gradient flows through it).
#
# Two details decide whether the numbers are right. First, the standard deviation: torch's
# `Tensor.std()` divides by `n - 1` by default (`correction=1`, the unbiased estimate), NumPy's
# `np.std` and `std(correction=0)` divide by `n` (the population standard deviation). This lesson
# uses **torch's default**, `output.std()`, and its checks say so when they get the other one.

# %%
values = torch.tensor([1.0, 2.0, 3.0, 4.0])
print(f"std() {values.std():.4f} | std(correction=1) {values.std(correction=1):.4f} | "
      f"std(correction=0) {values.std(correction=0):.4f} | numpy {values.numpy().std():.4f}")
assert torch.isclose(values.std(), torch.tensor(1.2910), atol=1e-4)
assert torch.isclose(values.std(correction=0), torch.tensor(1.1180), atol=1e-4)
assert abs(values.numpy().std() - values.std(correction=0).item()) < 1e-6

# %% [markdown]
# Second, what is stored. A forward hook runs while autograd records the forward pass, so
# `output.mean()` computed in the hook is a new node of the graph: it requires grad, and through
# its `grad_fn` it holds on to the graph behind the output, here the `Linear`'s node, which saved
# the layer's input. A list of such tensors, one per step, keeps every step's graph alive (lesson
# 04 measured the memory). `.item()` turns a 0-dim tensor into a Python float, which holds
# nothing; computing on `output.detach()` also cuts the graph. (Under `torch.no_grad()` nothing is
# recorded by autograd, but the hook still fires, as it does in eval mode: the cell checks both.)

# %%
kept = []
layer, layer_input = nn.Linear(4, 3), torch.randn(2, 4)
with layer.register_forward_hook(lambda module, args, output: kept.append(output.mean())):
    layer(layer_input)
behind = kept[0].grad_fn.next_functions[0][0]
print("stored:", kept[0], "| requires_grad:", kept[0].requires_grad, "| .item():", type(kept[0].item()).__name__)
print("the node behind it:", type(behind).__name__, "| it saved the layer's input:",
      torch.equal(behind._saved_mat1, layer_input))
assert kept[0].requires_grad and type(kept[0].grad_fn).__name__ == "MeanBackward0"
assert type(behind).__name__ == "AddmmBackward0" and torch.equal(behind._saved_mat1, layer_input)
assert isinstance(kept[0].item(), float) and not layer(layer_input).detach().mean().requires_grad
modes = []
with layer.register_forward_hook(lambda module, args, output: modes.append((torch.is_grad_enabled(), module.training))):
    with torch.no_grad():
        layer(layer_input)
    layer.eval()
    layer(layer_input)
    layer.train()
print("the hook fired with (grad mode, training):", modes)
assert modes == [(False, True), (True, False)]

# %% [markdown]
# Where the hooks go, and under which name. `named_modules()` gives each module's dotted name,
# which tells the two ReLUs of our model apart (`"1"` and `"3"`); keying by the type, `"ReLU"`,
# would mix them. It lists a module object **once**, under its first name, even when the model
# holds it under two names; `named_modules(remove_duplicate=False)` lists it under both, and
# hooking each entry would hook one module twice. And a module that a model calls twice in one
# forward pass fires its forward hook twice: two records per pass.

# %%
class TwoNames(nn.Module):
    """One ReLU held under two names, and called twice per forward pass."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.act = nn.ReLU()
        self.again = self.act  # the same object

    def forward(self, x):
        return self.again(self.linear(self.act(x)))


two = TwoNames()
print("named_modules():", [name for name, _ in two.named_modules()])
print("remove_duplicate=False:", [name for name, _ in two.named_modules(remove_duplicate=False)])
calls = []
with two.act.register_forward_hook(lambda module, args, output: calls.append("act")):
    two(torch.randn(2, 3))
print("hook calls in one forward pass:", calls)
assert [name for name, _ in two.named_modules()] == ["", "linear", "act"]
assert [name for name, _ in two.named_modules(remove_duplicate=False)] == ["", "linear", "act", "again"]
assert calls == ["act", "act"]
assert [name for name, module in make_mlp().named_modules() if isinstance(module, nn.ReLU)] == ["1", "3"]
both = [module.register_forward_hook(lambda module, args, output, name=name: calls.append(name))
        for name, module in two.named_modules(remove_duplicate=False) if name in ("act", "again")]
calls.clear()
two(torch.randn(2, 3))
for handle in both:
    handle.remove()
print("one hook per name of remove_duplicate=False, calls in one forward pass:", len(calls))
assert len(calls) == 4

# %% [markdown]
# ## Outputs that are not a tensor
#
# A forward hook receives whatever `forward` returned, and that is not always a tensor:
# `nn.LSTM` returns a tuple, `(output, (h_n, c_n))` (the output at every step, then the last
# hidden and cell states, in a tuple of their own); a module of your own may return a list, or a
# dict. A hook that calls `output.detach()` on a tuple raises, and since hooks run inside the
# module's call, the forward pass raises with it.

# %%
torch.manual_seed(0)
lstm = nn.LSTM(input_size=3, hidden_size=4, batch_first=True)
result = lstm(torch.randn(2, 5, 3))
print(type(result).__name__, "of", [type(item).__name__ for item in result], "| output:", list(result[0].shape),
      "| h_n and c_n:", [list(state.shape) for state in result[1]])
assert isinstance(result, tuple) and isinstance(result[0], torch.Tensor) and isinstance(result[1], tuple)
assert list(result[0].shape) == [2, 5, 4] and [list(state.shape) for state in result[1]] == [[1, 2, 4]] * 2
print("h_n is the output's last step:", torch.equal(result[1][0][0], result[0][:, -1]))
assert torch.equal(result[1][0][0], result[0][:, -1])


def detach_output(module, args, output):
    output.detach()


try:
    with lstm.register_forward_hook(detach_output):
        lstm(torch.randn(2, 5, 3))
except AttributeError as error:
    print("a hook that calls output.detach():", repr(error))
    assert str(error) == "'tuple' object has no attribute 'detach'"
else:
    raise AssertionError("the forward pass did not raise")
assert not lstm._forward_hooks

# %% [markdown]
# This lesson's records follow one rule for such outputs. The statistics of Exercise 1 describe
# the first item of a tuple or list (for an LSTM, its output sequence), taking the first item again
# while that is a tuple or list too, and skip an output that leads so to no tensor (a dict, `None`,
# an empty list). An LSTM fed a packed batch (`pack_padded_sequence`, for sequences of different
# lengths) needs the second step: it returns `(PackedSequence, (h_n, c_n))`, and a `PackedSequence`
# is a tuple whose first item, `data`, holds the outputs of every real time step (the cell below
# shows it). The non-finite watch of Exercise 3 looks at every tensor
# of an output, inside tuples, lists and dicts at any depth. The gradient norms of Exercise 2 come
# from tensor hooks on the parameters, which never see a module's output.

# %%
from torch.nn.utils.rnn import pack_padded_sequence

lengths = torch.tensor([5, 3])  # the second sequence has 3 real steps, then padding
packed_result = lstm(pack_padded_sequence(torch.randn(2, 5, 3), lengths, batch_first=True))
packed_output = packed_result[0]
print(type(packed_output).__name__, "is a tuple:", isinstance(packed_output, tuple),
      "| its first item, data:", type(packed_output[0]).__name__, list(packed_output[0].shape), "(5 + 3 real steps)")
assert type(packed_output).__name__ == "PackedSequence" and isinstance(packed_output, tuple)
assert packed_output[0] is packed_output.data and list(packed_output.data.shape) == [8, 4]

# %% [markdown]
# ## Exercise 1: `record_activation_stats` · medium · about 20 min
#
# Write `record_activation_stats(model, layer_types)`. It registers a forward hook on every module
# of `model` that is an instance of one of `layer_types` (a tuple of classes), one hook per module
# object, found with `model.named_modules()`, and returns `(stats, handles)`:
#
# - `stats` is a dict from the module's name (its `named_modules()` name) to a list with one entry
#   per call of that module, in the order of the calls: a dict `{"mean": ..., "std": ...,
#   "zero_fraction": ...}` of the output's mean, standard deviation (torch's default,
#   `output.std()`, unbiased) and fraction of elements exactly equal to 0, over all elements of the
#   output. The values are numbers: Python floats, or 0-dim tensors that do not require grad. A
#   module not called yet may be missing from `stats` or have an empty list.
# - An output that is a tuple or a list is described by its first item (`nn.LSTM` returns
#   `(output, (h_n, c_n))`: the entry describes `output`), and a first item that is a tuple or list
#   by its own first item, and so on (on a packed batch, `nn.LSTM` returns
#   `(PackedSequence(data, ...), (h_n, c_n))`: the entry describes `data`). A call whose output leads
#   so to no tensor (a dict, `None`, an empty list) adds no entry.
# - `handles` is a list of the `RemovableHandle`s; removing them all removes every hook.
#
# The hooks change nothing outside their records: the model's outputs and torch's grad mode stay
# as they were. They record under `torch.no_grad()` and in eval mode (`model.eval()`) too.
#
# Traps: stats that keep the graph alive (`output.mean()` without `.item()` or `detach()`); keying by
# type instead of name; the population standard deviation; a module shared under two names hooked
# twice; `output.detach()` on a tuple.
#
# Check: run `check(record_activation_stats)` below, or
# `pytest tests/test_11_training_monitor.py -k record_activation_stats`.

# %% tags=["exercise"]
# Exercise: record_activation_stats — write your code in this cell.
import torch


def record_activation_stats(model, layer_types):
    """Forward hooks on every module of `model` that is an instance of `layer_types` (a tuple of
    classes), one per module object (as `model.named_modules()` lists them).

    Returns (stats, handles). stats[name] (name from named_modules()) is a list with one entry per
    call of the module, in the order of the calls: {"mean": m, "std": s, "zero_fraction": z} for the
    module's output, over all its elements: its mean, its std as `output.std()` computes it
    (unbiased, correction=1), and the fraction of its elements exactly equal to 0. The values are
    Python floats or 0-dim tensors that do not require grad. An output that is a tuple or list is
    described by its first item (nn.LSTM returns (output, (h_n, c_n))), and a first item that is a
    tuple or list by its own first item, and so on (on a packed batch nn.LSTM returns
    (PackedSequence(data, ...), (h_n, c_n)): the entry describes data); a call whose output leads so
    to no tensor (a dict, None, an empty list) adds no entry.
    handles: the RemovableHandles; removing them all removes every hook. The hooks change neither
    the outputs nor torch's grad mode, and they record under torch.no_grad() and in eval mode too.
    """
    # BEGIN SOLUTION
    stats, handles = {}, []

    def make_hook(name):
        def hook(module, args, output):
            while isinstance(output, (tuple, list)) and output:
                output = output[0]
            if not isinstance(output, torch.Tensor):
                return
            output = output.detach()
            stats.setdefault(name, []).append({
                "mean": output.mean().item(),
                "std": output.std().item(),
                "zero_fraction": (output == 0).float().mean().item(),
            })
        return hook

    for name, module in model.named_modules():
        if isinstance(module, tuple(layer_types)):
            handles.append(module.register_forward_hook(make_hook(name)))
    return stats, handles
    # END SOLUTION


# %%
check(record_activation_stats)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Walk `model.named_modules()`; for each module of the right type, register a forward hook that
# knows the module's name and appends three numbers computed from the output to that name's list.
# Keep every handle.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `isinstance(module, tuple(layer_types))`; `module.register_forward_hook(hook)` with
# `hook(module, args, output)`; `isinstance(output, (tuple, list))` and `output[0]` in a `while`
# loop, `isinstance(output, torch.Tensor)`; `output.detach()`, `.mean()`, `.std()`, `(output == 0)`,
# `.float().mean()`, `.item()`; `stats.setdefault(name, []).append(...)`. Bind the name when you
# make the hook (a function that returns the hook, or a default argument), not from the loop
# variable when the hook runs.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def make_hook(name):
#     def hook(module, args, output):
#         while isinstance(output, (tuple, list)) and output:
#             output = output[0]
#         if not isinstance(output, torch.Tensor):
#             return
#         output = output.detach()
#         stats.setdefault(name, []).append({"mean": output.mean().item(), ...})
#     return hook
#
# for name, module in model.named_modules():
#     if isinstance(module, tuple(layer_types)):
#         handles.append(...)
# ```
#
# </details>

# %% [markdown]
# Once Exercise 1 is done, this cell shows your function at work on the demonstration module: its
# shared ReLU gets one hook, two records per forward pass, all under the name `"act"`.

# %%
with try_it():
    two_stats, two_handles = record_activation_stats(two, (nn.ReLU,))
    two(torch.randn(5, 3))
    for handle in two_handles:
        handle.remove()
    print({name: len(entries) for name, entries in two_stats.items()}, "| hooks left:", len(two.act._forward_hooks))
    assert {name: len(entries) for name, entries in two_stats.items() if entries} == {"act": 2}
    assert not two.act._forward_hooks

# %% [markdown]
# And on a model with an LSTM: the entry of the LSTM describes its output sequence, the first item
# of the tuple it returns. Once Exercise 1 is done, the cell prints that entry and asserts that its
# mean is the mean of that sequence; then it does the same with the LSTM of the cells above fed a
# packed batch, whose entry describes the `data` of the `PackedSequence` it returns: the outputs
# of the 8 real steps, and none of the padding.

# %%
class Reader(nn.Module):
    """An LSTM reads a sequence; a linear head classifies its last output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        sequence, (h_n, c_n) = self.lstm(x)
        return self.head(sequence[:, -1])


torch.manual_seed(0)
reader, sequences = Reader(), torch.randn(2, 5, 3)
with try_it():
    reader_stats, reader_handles = record_activation_stats(reader, (nn.LSTM, nn.Linear))
    reader(sequences)
    for handle in reader_handles:
        handle.remove()
    print("stats['lstm']:", reader_stats["lstm"])
    with torch.no_grad():
        expected_mean = reader.lstm(sequences)[0].mean().item()
    assert len(reader_stats["lstm"]) == len(reader_stats["head"]) == 1
    assert abs(float(reader_stats["lstm"][0]["mean"]) - expected_mean) < 1e-6
    packed_batch = pack_padded_sequence(torch.randn(2, 5, 3), lengths, batch_first=True)
    packed_stats, packed_handles = record_activation_stats(lstm, (nn.LSTM,))
    lstm(packed_batch)
    for handle in packed_handles:
        handle.remove()
    with torch.no_grad():
        packed_data = lstm(packed_batch)[0].data
    print("on a packed batch, stats['']:", packed_stats[""], "| the data's mean:", round(packed_data.mean().item(), 6))
    assert len(packed_stats[""]) == 1 and list(packed_data.shape) == [8, 4]
    assert abs(float(packed_stats[""][0]["mean"]) - packed_data.mean().item()) < 1e-6

# %% [markdown]
# ## Gradient norms: which hook, and when
#
# The size of each parameter's gradient, step by step, shows a run that is about to diverge
# (growing norms) or a layer that stopped learning (zero norms). Two hooks can see a parameter's
# gradient:
#
# - a **tensor hook**, `parameter.register_hook(hook)` (lesson 01), called with the gradient that
#   this backward pass computed for the parameter, before it is added into `.grad`;
# - a **post-accumulate-grad hook**, `parameter.register_post_accumulate_grad_hook(hook)` (lesson
#   08), called with the parameter itself after `.grad` was updated, so it sees `.grad`.
#
# They agree as long as `.grad` is zeroed before every backward. With **gradient accumulation**
# (several backward calls, one optimizer step), `.grad` is a running sum: the post-accumulate hook
# sees the sum so far, the tensor hook sees each backward's own gradient. The cell below shows all
# three: two backward calls without zeroing, then one after.

# %%
weight = nn.Parameter(torch.tensor([3.0, 4.0]))
own, accumulated, grad_when_hooked = [], [], []
weight.register_hook(lambda grad: own.append(grad.norm().item())
                     or grad_when_hooked.append(None if weight.grad is None else weight.grad.clone()))
weight.register_post_accumulate_grad_hook(lambda parameter: accumulated.append(parameter.grad.norm().item()))
for factor in (1.0, 2.0):  # two backward calls, no zero_grad in between
    (factor * weight).sum().backward()
print("tensor hook (each backward):", own, "| post-accumulate hook (.grad so far):", accumulated)
print(".grad when the tensor hook ran:", grad_when_hooked)
assert torch.allclose(torch.tensor(own), torch.tensor([1.0, 2.0]) * 2 ** 0.5)
assert torch.allclose(torch.tensor(accumulated), torch.tensor([1.0, 3.0]) * 2 ** 0.5)
assert grad_when_hooked[0] is None and torch.equal(grad_when_hooked[1], torch.ones(2))
weight.grad = None  # zeroed (as zero_grad() does): the two hooks agree again
(3.0 * weight).sum().backward()
print("after zeroing, one more backward:", own[-1], accumulated[-1])
assert own[-1] == accumulated[-1]

# %% [markdown]
# This lesson records the tensor hook's view, **each backward's own gradient**: under
# accumulation it gives one entry per backward call. Both hooks run during `backward()`, so both
# record the norm **before** any clipping: `torch.nn.utils.clip_grad_norm_` runs after
# `backward()` and scales `.grad` in place. It returns the total norm before clipping, the
# square root of the sum of the squared per-parameter norms the hooks saw.

# %%
torch.manual_seed(0)
small = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
seen = {}
handles = [p.register_hook(lambda grad, name=name: seen.update({name: grad.norm().item()}))
           for name, p in small.named_parameters()]
(10 * small(torch.randn(16, 4))).pow(2).sum().backward()
grads_before = [p.grad for p in small.parameters()]
total = torch.nn.utils.clip_grad_norm_(small.parameters(), max_norm=1.0)
after = sum(p.grad.norm() ** 2 for p in small.parameters()) ** 0.5
in_place = all(p.grad is grad for p, grad in zip(small.parameters(), grads_before))
for handle in handles:
    handle.remove()
print(f"total norm seen by the hooks {sum(v ** 2 for v in seen.values()) ** 0.5:.3f} | returned by "
      f"clip_grad_norm_ {total:.3f} | of .grad after clipping {after:.3f} | the same .grad tensors: {in_place}")
assert abs(sum(v ** 2 for v in seen.values()) ** 0.5 - total.item()) < 1e-3 * total.item() and in_place
assert abs(after.item() - 1.0) < 1e-4 < total.item() - 1.0

# %% [markdown]
# Five more cases the exercise meets. A parameter held under two names (tied weights: here two
# `Linear` layers share one weight) is listed once by `named_parameters()`, and its tensor hook
# fires once per backward pass with the gradient summed over both uses. A frozen parameter
# (`requires_grad=False`) takes no tensor hook: `register_hook` raises. And under
# `backward(create_graph=True)`, which records the backward pass itself for a second derivative,
# the gradient a hook receives requires grad: its norm is a node of that graph, so storing it
# needs `.item()` or `detach()` (backward warns about the reference cycle that `.grad` then holds;
# setting `.grad` to `None` after use breaks it). A parameter that a forward pass did not use (a
# branch that did not run) gets no gradient in that backward pass, and its tensor hook does not
# fire. Last, the norm of a gradient that holds an `inf` is `inf`, and `nan` when it holds a `NaN`:
# recorded as they are, these are the values that show a run diverging.

# %%
torch.manual_seed(0)
tied = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3))
tied[2].weight = tied[0].weight
untied = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3))
untied.load_state_dict({**tied.state_dict(), "2.weight": tied[0].weight.detach().clone()})
x_tied, received = torch.randn(4, 3), []
with tied[0].weight.register_hook(lambda grad: received.append(grad.clone())):
    tied(x_tied).pow(2).sum().backward()
untied(x_tied).pow(2).sum().backward()
print("named_parameters():", [name for name, _ in tied.named_parameters()], "| hook calls:", len(received))
print("the hook's gradient is the sum of the two uses' gradients:",
      torch.allclose(received[0], untied[0].weight.grad + untied[2].weight.grad))
assert [name for name, _ in tied.named_parameters()] == ["0.weight", "0.bias", "2.bias"] and len(received) == 1
assert torch.allclose(received[0], untied[0].weight.grad + untied[2].weight.grad)

frozen = nn.Linear(2, 2).requires_grad_(False)
try:
    frozen.weight.register_hook(lambda grad: None)
except RuntimeError as error:
    print("register_hook on a frozen parameter:", error)
    assert str(error) == "cannot register a hook on a tensor that doesn't require gradient"
else:
    raise AssertionError("register_hook did not raise")

cube, norms_seen = nn.Parameter(torch.tensor([1.0, 2.0])), []
with warnings.catch_warnings(record=True) as caught, cube.register_hook(lambda grad: norms_seen.append(grad.norm())):
    warnings.simplefilter("always")
    (cube ** 3).sum().backward(create_graph=True)
cube.grad = None  # breaks the reference cycle
print("under create_graph=True, grad.norm() requires grad:", norms_seen[0].requires_grad,
      "| grad_fn:", type(norms_seen[0].grad_fn).__name__, "| warned:", any("reference cycle" in str(w.message) for w in caught))
assert norms_seen[0].requires_grad and norms_seen[0].grad_fn is not None
assert any("reference cycle" in str(w.message) and "to None after use to break the cycle" in str(w.message)
           for w in caught)
assert not norms_seen[0].detach().requires_grad

used, unused, fired_for = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2)), []
with used.register_hook(lambda grad: fired_for.append("used")), unused.register_hook(lambda grad: fired_for.append("unused")):
    (2 * used).sum().backward()
print("tensor hooks that fired:", fired_for, "| unused.grad:", unused.grad)
assert fired_for == ["used"] and unused.grad is None

with_inf, with_nan = torch.tensor([float("inf"), 1.0]), torch.tensor([float("inf"), float("nan")])
print("norm with an inf:", with_inf.norm().item(), "| with an inf and a NaN:", with_nan.norm().item())
assert with_inf.norm() == float("inf") and torch.isnan(with_nan.norm())

# %% [markdown]
# ## Exercise 2: `track_grad_norms` · medium · about 15 min
#
# Write `track_grad_norms(model)`. It registers a tensor hook (`register_hook`) on every parameter
# of `model` that requires grad, as `model.named_parameters()` lists them (a parameter held under
# two names, as tied weights are, is listed once, under its first name), and returns
# `(norms, handles)`:
#
# - `norms` is a dict from the parameter's name to a list with one entry per backward pass that
#   computes a gradient for it, in the order of the passes: the L2 norm of the gradient that pass
#   computed (summed over every use of the parameter, and not `.grad`, which under gradient
#   accumulation is the sum so far; `inf` or `nan` when that gradient holds them), as a Python
#   float or a 0-dim tensor that does not require grad, also under `backward(create_graph=True)`.
#   A backward pass that computes no gradient for a parameter (its branch did not run) adds no
#   entry for it; a parameter that has had no gradient yet may be missing or have an empty list.
#   A frozen parameter (`requires_grad=False`) gets no hook: `register_hook` on it raises.
# - `handles` is a list of the `RemovableHandle`s.
#
# The hooks must not change the gradients, `.grad`, or which parameters require grad. Clipping
# after `backward()` does not change what was recorded.
#
# Traps: a post-accumulate-grad hook or `.grad` (wrong as soon as gradients accumulate); the squared
# norm; returning something from the hook; a shared parameter counted under two names; under
# `create_graph=True` the gradient itself requires grad, so `grad.norm()` keeps a graph.
#
# Check: run `check(track_grad_norms)` below, or `pytest tests/test_11_training_monitor.py -k track_grad_norms`.

# %% tags=["exercise"]
# Exercise: track_grad_norms — write your code in this cell.
def track_grad_norms(model):
    """Tensor hooks on every parameter of `model` that requires grad, as `model.named_parameters()`
    lists them: a parameter held under two names (tied weights) once, under its first name.

    Returns (norms, handles). norms[name] is a list with one entry per backward pass that computes
    a gradient for the parameter, in the order of the passes: the L2 norm of the gradient that pass
    computed (the sum over every use of the parameter, not the accumulated .grad), inf or NaN when
    that gradient holds inf or NaN. The values are
    Python floats or 0-dim tensors that do not require grad, also under backward(create_graph=True).
    A backward pass that computes no gradient for a parameter adds no entry for it, and a parameter
    that does not require grad gets no hook. handles: the RemovableHandles; removing them all
    removes every hook. The hooks change neither the gradients nor .grad nor any parameter's
    requires_grad.
    """
    # BEGIN SOLUTION
    norms, handles = {}, []

    def make_hook(name):
        def hook(grad):
            norms.setdefault(name, []).append(grad.norm().item())
        return hook

    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            handles.append(parameter.register_hook(make_hook(name)))
    return norms, handles
    # END SOLUTION


# %%
check(track_grad_norms)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A tensor hook on a parameter is called once per backward pass with exactly the gradient that
# pass computed. Record its norm under the parameter's name, and return nothing, so the gradient
# goes on unchanged.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.named_parameters()`, `parameter.requires_grad`, `parameter.register_hook(hook)` with
# `hook(grad)`; `grad.norm()` is the L2 norm over all elements; `.item()`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def make_hook(name):
#     def hook(grad):
#         norms.setdefault(name, []).append(...)
#     return hook
#
# for name, parameter in model.named_parameters():
#     if parameter.requires_grad:
#         handles.append(parameter.register_hook(make_hook(name)))
# ```
#
# </details>

# %% [markdown]
# Once Exercise 2 is done, this cell shows your function at work under gradient accumulation: two
# backward calls before one step give two entries per parameter. The `.grad` the step would use is
# the sum of the two gradients, so its norm is at most the sum of the two recorded norms.

# %%
with try_it():
    torch.manual_seed(0)
    small = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    norms, handles = track_grad_norms(small)
    for micro_batch in torch.randn(2, 16, 4):
        small(micro_batch).pow(2).mean().backward()
    for handle in handles:
        handle.remove()
    print({name: [round(float(v), 3) for v in values] for name, values in norms.items()})
    print({name: round(p.grad.norm().item(), 3) for name, p in small.named_parameters()}, "(.grad)")
    assert all(len(values) == 2 for values in norms.values()) and len(norms) == 4
    assert all(float(norms[name][0]) + float(norms[name][1]) >= p.grad.norm().item() - 1e-5
               for name, p in small.named_parameters())

# %% [markdown]
# ## Which module went NaN first?
#
# When a run diverges, the loss turns into `inf` or `nan`, and from then on every number in the
# model soon does too. The useful question is where it started. Forward hooks answer it, because
# of the order they fire in: a module's forward hook runs when its own `forward` returns, so the
# hooks of the modules inside a container fire before the container's, and those of earlier layers
# before later ones. The first forward hook to see a non-finite output names the module where it
# appeared (lesson 07's `find_first_nonfinite` used the same order, with a global hook).
# Gradients come in backward order, from the last layer to the first.
#
# `torch.isfinite` is `False` for `nan`, `inf` and `-inf`; `torch.isnan` only for `nan`. Overflow
# gives `inf` first, and `nan` comes one step later (`inf - inf`, `0 * inf`), so a watch that only
# looks for `nan` points at the wrong layer: below, the first layer overflows to `inf` and only the
# second one, which subtracts two infinities, outputs `nan`.

# %%
fired, gradients = [], []
nested = nn.Sequential(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), nn.Linear(3, 1))
handles = [module.register_forward_hook(lambda module, args, output, name=name: fired.append(name))
           for name, module in nested.named_modules()]
handles += [parameter.register_hook(lambda grad, name=name: gradients.append(name))
            for name, parameter in nested.named_parameters()]
nested(torch.randn(1, 3)).sum().backward()
for handle in handles:
    handle.remove()
print("forward hooks fired in the order:", fired)
print("parameter tensor hooks fired in the order:", gradients)
assert fired == ["0.0", "0.1", "0", "1", ""]
assert {gradients[0], gradients[1]} == {"1.weight", "1.bias"} and set(gradients[2:]) == {"0.0.weight", "0.0.bias"}

overflow = torch.tensor([3e38, -3e38, 1.0]) * 10
values = torch.cat([overflow, torch.tensor([float("nan")])])
print("values:", values.tolist(), "| isnan:", torch.isnan(values).tolist(), "| isfinite:", torch.isfinite(values).tolist())
print("next step: inf + -inf =", (overflow[0] + overflow[1]).item(), "| 0 * inf =", (0 * overflow[0]).item())
assert torch.isnan(values).tolist() == [False, False, False, True]
assert torch.isfinite(values).tolist() == [False, False, True, False]
assert torch.isnan(overflow[0] + overflow[1]) and torch.isnan(0 * overflow[0])

two_layers = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 1, bias=False))
with torch.no_grad():
    two_layers[0].weight.fill_(1e38)
    two_layers[1].weight.copy_(torch.tensor([[1.0, -1.0]]))
    first_output = two_layers[0](torch.tensor([[10.0, 10.0]]))
    second_output = two_layers[1](first_output)
print("layer 0:", first_output.tolist(), "| layer 1:", second_output.tolist())
assert torch.isinf(first_output).all() and not torch.isnan(first_output).any() and torch.isnan(second_output).all()

# %% [markdown]
# A forward hook sees modules only. An operation written in a parent's `forward` (here
# `torch.log`, which gives `nan` for negative numbers) is no module, so no hook fires when it
# returns: its `nan` is first seen in the output of the next module that takes it, or, when no
# module comes after it, in the parent's own output. The watch then names that module, or the
# parent (the model itself is `""`).

# %%
class LogInForward(nn.Module):
    def __init__(self, log_last):
        super().__init__()
        self.body, self.head, self.log_last = nn.Linear(4, 4), nn.Linear(4, 2), log_last

    def forward(self, x):
        if self.log_last:
            return torch.log(self.head(self.body(x)))
        return self.head(torch.log(self.body(x)))


def first_nonfinite_output(model, x):
    """The name of the first module whose forward hook sees a non-finite output, or None."""
    found = []
    handles = [module.register_forward_hook(
        lambda module, args, output, name=name: found.append(name) if not torch.isfinite(output).all() else None)
        for name, module in model.named_modules()]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return found[0] if found else None


torch.manual_seed(0)
x_log = torch.randn(8, 4)
for log_last in (False, True):
    torch.manual_seed(0)
    model = LogInForward(log_last)
    with torch.no_grad():
        body_finite = bool(torch.isfinite(model.body(x_log)).all())
        log_of_body_finite = bool(torch.isfinite(torch.log(model.body(x_log))).all())
    named = first_nonfinite_output(model, x_log)
    print(f"log {'after head' if log_last else 'between body and head'}: body's output finite: {body_finite}, "
          f"first module with a non-finite output: {named!r}")
    assert body_finite and named == ("" if log_last else "head")
    assert log_last or not log_of_body_finite

# %% [markdown]
# ## Exercise 3: `TrainingMonitor` · hard · about 45 min
#
# Write the class `TrainingMonitor(model, layer_types)` that combines the first two exercises and a
# watch for non-finite values:
#
# - `TrainingMonitor(model, layer_types)` registers nothing yet. It has the attributes
#   `activation_stats` and `grad_norms` (dicts, empty at first) and `first_nonfinite` (`None`).
# - `attach()` registers the hooks and returns the monitor itself: `record_activation_stats(model,
#   layer_types)` and `track_grad_norms(model)` (their dicts become `activation_stats` and
#   `grad_norms`), plus the watch: a forward hook on every module in `model.named_modules()`, the
#   model itself included (its name is `""`), and a tensor hook on every parameter that requires grad.
# - While attached, the hooks only look: they change neither the model's outputs nor its
#   gradients, so the model trains exactly as it would without the monitor.
# - `first_nonfinite` is `None` until a watched forward output or parameter gradient contains a NaN,
#   `inf` or `-inf` (as an element: finite elements whose norm or sum overflows do not count); it
#   is then the name of that module (its `named_modules()` name) or parameter
#   (its `named_parameters()` name), whichever the hooks saw first, and it never changes after.
#   The model's own name, `""`, is a name like the others (it is falsy, but it is not `None`).
# - A module's output counts when it is a tensor with such an element, or a tuple, list or dict
#   holding such a tensor at any depth (`nn.LSTM` returns `(output, (h_n, c_n))`); any other
#   output (`None`, a number) counts as finite.
# - `remove()` removes every hook the monitor registered, those of every `attach()` call, and no
#   other (a hook the caller registered before or while the monitor was attached stays); it is safe
#   to call twice; the model then behaves as before (which parameters require grad included). The
#   recorded data stays.
# - `with TrainingMonitor(model, layer_types) as monitor:` attaches on entry (binding the monitor)
#   and removes on exit, also when the block raises; the exception goes on.
#
# Traps: a hook that is not removed (a `remove()` that forgets some handles, or an `__exit__` that
# removes them only when nothing raised, or an `attach()` that replaces the list of handles of an
# earlier call); `first_nonfinite` overwritten by later modules, or by a test
# `if not self.first_nonfinite` that takes `""` for unset; a watch for NaN only; a watch hook that
# returns a value (its test's `True`/`False`, a `torch.nan_to_num(...)`), which replaces the output
# or the gradient; `output.detach()` on a tuple; an `__exit__` that returns `True` and swallows the
# exception.
#
# Finish exercises 1 and 2 first: when your monitor calls one that does not pass its own check yet,
# this check says which one to finish.
#
# Check: run `check(TrainingMonitor)` below, or `pytest tests/test_11_training_monitor.py -k TrainingMonitor`.

# %% tags=["exercise"]
# Exercise: TrainingMonitor — write your code in this cell.
import torch


class TrainingMonitor:
    """Activation stats, gradient norms and the first non-finite value of a training run.

    TrainingMonitor(model, layer_types) registers nothing. attach() registers
    record_activation_stats(model, layer_types), whose stats dict becomes monitor.activation_stats,
    track_grad_norms(model), whose norms dict becomes monitor.grad_norms, and the non-finite watch: a
    forward hook on every module of model.named_modules(), the model itself included (its name is
    ""), and a tensor hook on every parameter that requires grad. While attached, the hooks only look:
    they change neither the model's outputs nor its gradients.

    monitor.first_nonfinite is None until a watched value contains NaN, inf or -inf; it is then the
    name of that module (its named_modules() name) or parameter (its named_parameters() name), the
    first in the order the hooks fire, and it never changes after. A module's output counts when it
    is a tensor with such an element, or a tuple, list or dict holding such a tensor at any depth
    (nn.LSTM returns (output, (h_n, c_n))); any other output counts as finite.

    remove() removes every hook the monitor registered (by every attach() call), and no other (the
    caller's, registered before or while it was attached, stay), and is safe to call twice;
    the model then behaves as before (requires_grad included), and the recorded data stays. `with
    TrainingMonitor(model, layer_types) as monitor:` attaches on entry and binds the monitor, and
    removes the hooks on exit, also when the block raises; the exception goes on.
    """

    def __init__(self, model, layer_types):
        """Keep the model and layer types; activation_stats and grad_norms are empty dicts,
        first_nonfinite is None; no hooks yet."""
        # BEGIN SOLUTION
        self.model, self.layer_types = model, layer_types
        self.activation_stats, self.grad_norms, self.first_nonfinite = {}, {}, None
        self._handles = []
        # END SOLUTION

    def attach(self):
        """Register the stats, the gradient norms and the non-finite watch; return the monitor."""
        # BEGIN SOLUTION
        def tensors(value):
            if isinstance(value, torch.Tensor):
                return [value]
            items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
            return [tensor for item in items for tensor in tensors(item)]

        def watch(name, value):
            if self.first_nonfinite is None and any(not torch.isfinite(t).all() for t in tensors(value)):
                self.first_nonfinite = name

        self.activation_stats, stats_handles = record_activation_stats(self.model, self.layer_types)
        self.grad_norms, norm_handles = track_grad_norms(self.model)
        self._handles += stats_handles + norm_handles
        for name, module in self.model.named_modules():
            self._handles.append(module.register_forward_hook(
                lambda module, args, output, name=name: watch(name, output)))
        for name, parameter in self.model.named_parameters():
            if parameter.requires_grad:
                self._handles.append(parameter.register_hook(lambda grad, name=name: watch(name, grad)))
        return self
        # END SOLUTION

    def remove(self):
        """Remove every hook the monitor registered; safe to call twice."""
        # BEGIN SOLUTION
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()
        # END SOLUTION

    def __enter__(self):
        """Attach, and return the monitor."""
        # BEGIN SOLUTION
        return self.attach()
        # END SOLUTION

    def __exit__(self, exc_type, exc_value, traceback):
        """Remove every hook, also when the block raises; return None, so that the exception goes on."""
        # BEGIN SOLUTION
        self.remove()
        # END SOLUTION


# %%
check(TrainingMonitor)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Finish exercises 1 and 2 first (their checks pass): `attach()` calls them, and this check
# tells you when one of them is what fails. Keep every handle in one list: the ones your two
# functions return and the ones of the watch.
# The watch is one small function, "if nothing is recorded yet and this value is not all finite,
# record this name", called from a forward hook on every module and a tensor hook on every
# parameter.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `torch.isfinite(value).all()`; `model.named_modules()` includes the model itself as `""`
# (test `self.first_nonfinite is None`, not its truth value); `isinstance(value, (tuple, list))`,
# `isinstance(value, dict)` and `value.values()`, walked by a function that calls itself;
# `parameter.register_hook(hook)`. `__enter__` returns what `as` binds;
# `__exit__(self, exc_type, exc_value, traceback)` runs also when the block raised, and returning
# `None` lets the exception go on.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def attach(self):
#     def tensors(value):  # every tensor in value, through tuples, lists and dicts
#         if isinstance(value, torch.Tensor):
#             return [value]
#         ...
#
#     def watch(name, value):
#         if self.first_nonfinite is None and any(not torch.isfinite(t).all() for t in tensors(value)):
#             self.first_nonfinite = name
#
#     self.activation_stats, stats_handles = record_activation_stats(self.model, self.layer_types)
#     ...
#     for name, module in self.model.named_modules():
#         self._handles.append(module.register_forward_hook(
#             lambda module, args, output, name=name: watch(name, output)))
#     ...
#     return self
# ```
#
# </details>

# %% [markdown]
# The monitor on a model whose modules return a tuple (the LSTM) and a dict (a scorer that returns
# its scores and their scale). Once Exercise 3 is done, the cell shows the LSTM's entry (of its
# output sequence) and the gradient norm of one of its weights; then it sets the scorer's
# temperature to 0, which makes the dict's `"scale"` infinite while the scores, and the model's
# output, stay finite, and the monitor names the scorer.

# %%
class Scorer(nn.Module):
    """Returns a dict: the scores, and their scale divided by a temperature."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.register_buffer("temperature", torch.ones(()))

    def forward(self, h):
        scores = self.linear(h)
        return {"scores": scores, "scale": scores.abs().mean() / self.temperature}


class ScoredReader(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)
        self.scorer = Scorer()

    def forward(self, x):
        sequence, _ = self.lstm(x)
        return self.scorer(sequence[:, -1])["scores"]


with try_it():
    torch.manual_seed(0)
    scored = ScoredReader()
    with TrainingMonitor(scored, (nn.LSTM,)) as monitor:
        scored(sequences).pow(2).mean().backward()
    print("activation_stats:", monitor.activation_stats)
    print("grad_norms['lstm.weight_ih_l0']:", monitor.grad_norms["lstm.weight_ih_l0"],
          "| first_nonfinite:", monitor.first_nonfinite)
    assert list(monitor.activation_stats) == ["lstm"] and monitor.first_nonfinite is None
    scored.scorer.temperature.zero_()
    with TrainingMonitor(scored, (nn.LSTM,)) as monitor:
        scores = scored(sequences)
    print("temperature 0: the model's output is finite:", bool(torch.isfinite(scores).all()),
          "| first_nonfinite:", repr(monitor.first_nonfinite))
    assert torch.isfinite(scores).all() and monitor.first_nonfinite == "scorer"

# %% [markdown]
# ## The monitor on three real runs
#
# Once Exercise 3 is done, the cell below makes three runs of the same MLP from the same starting
# weights, each watched by a monitor from start to end; each stops at the first step after which
# the monitor reports a non-finite value:
#
# - **healthy**: ReLU, learning rate 0.5;
# - **too fast, ReLU**: learning rate 5;
# - **too fast, LeakyReLU(0.1)**: learning rate 5, with the ReLUs replaced by leaky ones.
#
# The monitor records in the hooks only; the loop knows nothing of it except `first_nonfinite`.

# %%
runs = {"healthy": (nn.ReLU, 0.5), "too fast, ReLU": (nn.ReLU, 5.0),
        "too fast, LeakyReLU": (lambda: nn.LeakyReLU(0.1), 5.0)}
monitors, run_losses, trained = {}, {}, {}
with try_it():
    started = time.perf_counter()
    for run, (activation, lr) in runs.items():
        model = make_mlp(activation)
        with TrainingMonitor(model, (nn.ReLU, nn.LeakyReLU)) as monitor:
            run_losses[run] = train(model, lr, after_step=lambda step, loss: monitor.first_nonfinite is not None)
        monitors[run], trained[run] = monitor, model
        assert not any(m._forward_hooks for m in model.modules())
        assert not any(p._backward_hooks for p in model.parameters())
        print(f"{run:>20}: {len(run_losses[run])} steps, loss {run_losses[run][0]:.3g} -> {run_losses[run][-1]:.3g}, "
              f"test accuracy {accuracy(model):.2f}, first non-finite: {monitor.first_nonfinite}")
    print(f"three monitored runs in {time.perf_counter() - started:.2f} s")
    assert len(run_losses["healthy"]) == len(run_losses["too fast, ReLU"]) == 3 * 23 == 69
    assert run_losses["healthy"][-1] < run_losses["healthy"][0] / 2
    assert monitors["healthy"].first_nonfinite is None and monitors["too fast, ReLU"].first_nonfinite is None
    assert monitors["too fast, LeakyReLU"].first_nonfinite is not None

# %% [markdown]
# Once Exercise 3 is done, the cell below draws what the monitor recorded: per run, the fraction of
# zeros of the two activation layers' outputs (top) and the gradient norm of the three weight
# matrices (bottom, on a log scale above 0.01 and a linear one below, so that a norm of exactly 0
# shows), step by step. Values that are `inf` or `nan` are left out.

# %%
with try_it():
    TrainingMonitor(nn.Linear(1, 1), ()).attach().remove()  # "Not done yet" until TrainingMonitor is written
    fig, axes = plt.subplots(2, 3, figsize=(10, 5.2), dpi=80, sharex="col")
    for column, (run, monitor) in enumerate(monitors.items()):
        for name, entries in monitor.activation_stats.items():
            axes[0, column].plot([float(entry["zero_fraction"]) for entry in entries], label=f"layer {name}")
        for name, values in monitor.grad_norms.items():
            if name.endswith("weight"):
                finite = [(step, float(value)) for step, value in enumerate(values) if math.isfinite(float(value))]
                axes[1, column].plot(*zip(*finite), label=name)
        axes[0, column].set_title(run, fontsize=10)
        axes[0, column].set_ylim(-0.05, 1.05)
        axes[1, column].set_yscale("symlog", linthresh=1e-2)  # log above 0.01, linear below: 0 is drawn
        axes[1, column].set_ylim(bottom=0)
        axes[1, column].set_xlabel("step")
    axes[0, 0].set_ylabel("fraction of zeros")
    axes[1, 0].set_ylabel("gradient norm")
    axes[0, 0].legend(fontsize=8)
    axes[1, 0].legend(fontsize=8)
    fig.suptitle("What the monitor recorded: activations (top) and gradient norms (bottom)", fontsize=11)
    plt.tight_layout()
    plt.show()

# %% [markdown]
# The records tell three different stories; once Exercise 3 is done, the cell below prints the
# figures and checks each statement:
#
# - **healthy**: at the last step, 30% to 60% of the ReLU outputs are zero, as expected of a ReLU;
#   the gradient norms grow as the network learns (over the last 20 steps they are more than 3
#   times those of the first 20) but stay within a factor of 100 and below 5.
# - **too fast, ReLU**: the learning rate kills the ReLUs within the first steps. From step 10 on,
#   more than 85% of the first ReLU layer's outputs are zeros. The second ReLU layer was partly
#   dead from the start: call a unit dead when it outputs 0 for every one of the 1,797 digits.
#   With the weights each step starts from (the cell replays the run to count them), 6 of its 32
#   units are dead at step 1, before any update, 27 at step 10 and 30 at step 35; from step 7 on,
#   never fewer than 22 (a few units come back and die again). The one loss spike of the run (a
#   loss above 3 ln 10) comes at step 38 and only finishes the layer off: 31 dead units at step
#   39, all 32 from step 41 on. From step 41 to the end the layer outputs only zeros, as the
#   monitor's fraction of zeros shows, and after training it outputs 0 for every digit. No
#   gradient flows through it: from step 41 on, the gradient norms of all three weight matrices
#   are exactly 0. Nothing is NaN: the run is broken without any error, and only the statistics
#   show it (from step 41 on, its loss stays within 0.25 of ln 10 ≈ 2.30, a uniform guess).
# - **too fast, LeakyReLU**: a leaky ReLU never stops the gradient (its slope below 0 is 0.1, not
#   0), and the gradient norms grow by orders of magnitude until the numbers overflow; the monitor
#   names where that happened first. (Its leaky ReLUs output no exact zero at any step: the top
#   plot stays at 0.)

# %%
def count_dead_units(model, lr):
    """Trains model as train() does; entry s - 1: the units of layer 3 that output 0 for all
    1,797 digits with the weights step s starts from."""
    counts = []

    def count(step=None, loss=None):
        with torch.no_grad():
            counts.append(int((model[:4](inputs) == 0).all(dim=0).sum()))

    count()
    train(model, lr, after_step=count)
    return counts[:-1]  # the last count is of the weights after the last step


with try_it():
    TrainingMonitor(nn.Linear(1, 1), ()).attach().remove()  # "Not done yet" until TrainingMonitor is written
    healthy, dead, leaky = monitors.values()
    final_zeros = {run: {name: entries[-1]["zero_fraction"] for name, entries in m.activation_stats.items()}
                   for run, m in monitors.items()}
    print("fraction of zeros at the last step:", final_zeros)
    print("dead ReLU run, last loss:", round(run_losses["too fast, ReLU"][-1], 3),
          "| weight-gradient norms at the last step:",
          {name: float(values[-1]) for name, values in dead.grad_norms.items() if name.endswith("weight")})
    healthy_norms = {name: [float(value) for value in values] for name, values in healthy.grad_norms.items()
                     if name.endswith("weight")}
    print("healthy run, smallest and largest weight-gradient norms:",
          {name: (round(min(values), 3), round(max(values), 3)) for name, values in healthy_norms.items()})
    assert all(0.3 < float(z) < 0.6 for z in final_zeros["healthy"].values())
    assert all(max(values) < 5 and max(values) < 100 * min(values) for values in healthy_norms.values())
    assert all(sum(values[-20:]) > 3 * sum(values[:20]) for values in healthy_norms.values())
    assert all(float(entry["zero_fraction"]) == 0 for entries in leaky.activation_stats.values() for entry in entries)
    assert torch.allclose(nn.LeakyReLU(0.1)(torch.tensor([-2.0, 3.0])), torch.tensor([-0.2, 3.0]))

    dead_zeros = {name: [float(entry["zero_fraction"]) for entry in entries]
                  for name, entries in dead.activation_stats.items()}
    dead_losses = run_losses["too fast, ReLU"]
    died = next((step for step in range(len(dead_zeros["3"])) if min(dead_zeros["3"][step:]) == 1.0), None)
    assert died is not None, "layer 3 of the dead ReLU run still has non-zero outputs at its last step"
    spikes = [step for step, loss in enumerate(dead_losses, start=1) if loss > 3 * math.log(10)]
    dead_units = count_dead_units(make_mlp(), 5.0)
    print(f"dead ReLU run: steps with a loss above 3 ln 10: {spikes} (loss {max(dead_losses):.1f}); "
          f"layer 3 outputs only zeros from step {died + 1} of {len(dead_losses)} on; "
          f"layer 1's smallest fraction of zeros from step 10 on: {min(dead_zeros['1'][9:]):.3f}")
    print("layer 3's dead units (of 32) at the start of each step:", dead_units)
    assert min(dead_zeros["1"][9:]) > 0.85
    assert spikes == [38]
    assert [dead_units[step - 1] for step in (1, 10, 35, 38, 39)] == [6, 27, 30, 30, 31]
    assert min(dead_units[6:]) == 22
    assert dead_units[39] < 32 and all(count == 32 for count in dead_units[40:]) and died + 1 == 41
    assert all(float(value) == 0 for name, values in dead.grad_norms.items() if name.endswith("weight")
               for value in values[died:])
    assert all(abs(loss - math.log(10)) < 0.25 for loss in dead_losses[died:])
    with torch.no_grad():
        dead_layer_3 = trained["too fast, ReLU"][:4](inputs)
    print("dead ReLU run after training, layer 3 on all", len(inputs), "digits: largest output", dead_layer_3.max().item())
    assert list(dead_layer_3.shape) == [1797, 32] and (dead_layer_3 == 0).all()
    growth = [float(value) for value in leaky.grad_norms["4.weight"]]
    print("LeakyReLU run, gradient norm of 4.weight per step:", [f"{value:.3g}" for value in growth])
    print("losses of its last three steps:", [f"{loss:.3g}" for loss in run_losses["too fast, LeakyReLU"][-3:]],
          "| first non-finite:", leaky.first_nonfinite)
    assert growth[-3] > 1e6 * growth[0]
    assert leaky.first_nonfinite in dict(model.named_modules())  # a module's output, not a gradient

# %% [markdown]
# Two things to read in those figures, once Exercise 3 is done. The monitor names module `"2"`,
# the second `Linear`: its output overflowed to `inf` in the forward pass of the last step, before
# the layers after it and the loss. And one step earlier, the norm of `4.weight`'s gradient as
# `grad.norm()` computes it, in float32, was already `inf` (and so is the recorded one, if your
# hook takes `grad.norm()`; a norm taken in float64 stays finite), yet the watch, which tests the
# gradient's elements, stayed quiet: every element was finite, but the sum of their squares passed
# float32's largest number (about 3.4e38). The cell below (also once Exercise 3 is done) confirms
# both without the monitor: it replays the run up to the step before the failure, looks at that
# step's gradient, and runs the failing batch's forward pass layer by layer. It also shows what a
# watch for NaN only would have named: module `"4"`, two layers after the overflow.

# %%
with try_it():
    TrainingMonitor(nn.Linear(1, 1), ()).attach().remove()  # "Not done yet" until TrainingMonitor is written
    failed_at = len(run_losses["too fast, LeakyReLU"])
    model = make_mlp(lambda: nn.LeakyReLU(0.1))
    train(model, 5.0, after_step=lambda step, loss: step == failed_at - 1)
    shuffle = torch.Generator().manual_seed(1)  # the batch order train() uses
    all_batches = [batch for epoch in range(3)
                   for batch in train_idx[torch.randperm(len(train_idx), generator=shuffle)].split(64)]
    value, finite = inputs[all_batches[failed_at - 1]], []
    last_gradient = model[4].weight.grad
    print(f"step {failed_at - 1}: 4.weight's gradient all finite: {bool(torch.isfinite(last_gradient).all())}, "
          f"largest element {last_gradient.abs().max():.3g} (its square {last_gradient.abs().max().item() ** 2:.3g}), "
          f"norm {last_gradient.norm():.3g} (in float64: {last_gradient.double().norm():.3g}); float32's largest "
          f"number: {torch.finfo(torch.float32).max:.3g}; the monitor recorded {growth[-2]:.3g}")
    assert torch.isfinite(last_gradient).all() and last_gradient.norm() == float("inf")
    assert last_gradient.double().norm() < torch.finfo(torch.float32).max
    assert growth[-2] == float("inf") or math.isclose(growth[-2], last_gradient.double().norm().item(), rel_tol=1e-4)
    with torch.no_grad():
        for index, layer in enumerate(model):
            value = layer(value)
            finite.append((str(index), bool(torch.isfinite(value).all()), bool(torch.isnan(value).any())))
    print(f"step {failed_at}, layer by layer, (layer, output finite, output has a NaN):", finite)
    first_bad = next(name for name, ok, nan in finite if not ok)
    first_nan = next((name for name, ok, nan in finite if nan), None)
    print("first non-finite output:", first_bad, "| first output with a NaN:", first_nan)
    assert first_bad == leaky.first_nonfinite == "2" and first_nan == "4"

# %% [markdown]
# ## Summary
#
# - Per-layer statistics: forward hooks on the layers chosen by type, keyed by their
#   `named_modules()` name (one hook per module object; a module called twice records twice),
#   stored as numbers (`.item()` or `detach()`), so no graph stays alive. `output.std()` is the
#   unbiased standard deviation (`correction=1`). A tuple or list output (`nn.LSTM`'s) is described
#   by its first item, taken again while it is a tuple or list (a `PackedSequence`'s `data`); other
#   outputs that lead to no tensor are skipped.
# - Per-parameter gradient norms: a tensor hook sees each backward's own gradient; a
#   post-accumulate-grad hook sees `.grad`, the sum so far under gradient accumulation. Both see
#   the gradient before `clip_grad_norm_`, which runs after `backward()`. Tied weights get one hook
#   and the summed gradient; frozen parameters take no hook; under `create_graph=True` the gradient
#   requires grad, so store `.item()`.
# - Non-finite values: `torch.isfinite` (not `isnan`: overflow makes `inf` first). Forward hooks
#   fire innermost and earliest first, so the first one to see a non-finite output names the module
#   where it appeared, or, for an operation written in a parent's `forward`, the next module after
#   it or the parent. The watch looks at every tensor of an output, through tuples, lists and dicts.
# - A monitor keeps all its handles and removes them in `remove()` and `__exit__`, so the model is
#   left as it was.
# - A too-high learning rate can fail silently (dead ReLUs, loss stuck at ln 10) or loudly (overflow);
#   the monitor's records show both.
