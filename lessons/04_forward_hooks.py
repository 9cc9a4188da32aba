# %% [markdown]
# # Lesson 04 — Forward hooks
#
# A forward hook is a function that a module calls right after its `forward` has run. It sees the
# module, the positional inputs and the output. It can read the output (to record activations or
# statistics) or replace it (to change what the model computes), without editing the model's code.
#
# After this lesson you will be able to:
#
# - register a hook with `register_forward_hook` and say exactly when it fires and what it receives;
# - replace a module's output by returning a value from the hook;
# - see keyword arguments with `with_kwargs=True`, and run a hook even when `forward` raises with
#   `always_call=True`;
# - say when hooks fire (under `no_grad`, in `eval()` mode, once per call of a shared module) and
#   when they don't (calling `module.forward(x)` directly);
# - capture activations and statistics by layer name, and avoid the two traps of storing outputs:
#   a kept autograd graph that grows memory, and a `detach()`ed value that a later in-place
#   operation overwrites.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_04_forward_hooks.py` (add `-k clamp_output` for one exercise; plain `pytest`
# grades every lesson).

# %%
import gc
import warnings
import weakref

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from hooked.notebook import check, hint, try_it

# %% [markdown]
# ## When a forward hook fires and what it receives
#
# `module.register_forward_hook(hook)` registers `hook`. Each time you call `module(x)`, the module
# runs its `forward` and then calls `hook(module, args, output)`:
#
# - `module` is the module itself;
# - `args` is the tuple of the positional arguments `forward` received, the same objects;
# - `output` is what `forward` returned, the same object the caller gets (unless a hook replaces it).
#
# The cell below prints from inside `forward` and from inside the hook, so the order is visible.

# %%
class Doubler(nn.Module):
    def forward(self, x):
        print("  forward runs")
        return 2 * x


events = []


def show(module, args, output):
    print("  hook runs")
    events.append((module, args, output))


doubler = Doubler()
handle = doubler.register_forward_hook(show)
x = torch.tensor([1.0, 2.0])
print("calling doubler(x):")
y = doubler(x)
module_seen, args_seen, output_seen = events[0]
print("module is doubler:", module_seen is doubler)
print("args:", type(args_seen).__name__, "of length", len(args_seen), "| args[0] is x:", args_seen[0] is x)
print("output is y:", output_seen is y, "| y =", y)
assert module_seen is doubler and args_seen == (x,) and args_seen[0] is x
assert output_seen is y and torch.equal(y, torch.tensor([2.0, 4.0]))
handle.remove()

# %% [markdown]
# ## A return value replaces the output
#
# If the hook returns `None` (as `show` did), the output stays as it is. If it returns anything
# else, that value becomes the module's output: the caller, and the next layer of a model, get the
# hook's value instead. PyTorch does not check the value: a different shape, or even a different
# type, goes through. With several hooks on one module, each one receives the output left by the
# hooks before it.

# %%
torch.manual_seed(0)
layer = nn.Linear(3, 2)
x = torch.randn(4, 3)
plain = layer(x)

stack = nn.Sequential(layer, nn.Linear(2, 1))
with layer.register_forward_hook(lambda module, args, output: torch.zeros_like(output)):
    print("returning torch.zeros_like(output) gives", layer(x).tolist())
    assert torch.equal(layer(x), torch.zeros(4, 2))
    print("so the next layer of a Sequential gets zeros, and gives its bias:", stack(x).flatten().tolist(),
          "| bias:", stack[1].bias.item())
    assert torch.equal(stack(x), stack[1].bias.detach().expand(4, 1))

with layer.register_forward_hook(lambda module, args, output: output.sum()):
    summed = layer(x)
    print("returning output.sum() gives a tensor of shape", tuple(summed.shape), "— unchecked")
    assert summed.shape == () and torch.allclose(summed, plain.sum())

with layer.register_forward_hook(lambda module, args, output: (output, "a note")):
    pair = layer(x)
    print("returning (output, 'a note') gives a", type(pair).__name__, "— also unchecked")
    assert isinstance(pair, tuple) and pair[1] == "a note"

with layer.register_forward_hook(lambda module, args, output: output + 1), \
        layer.register_forward_hook(lambda module, args, output: output * 10):
    chained = layer(x)
    print("hooks '+ 1' then '* 10' give (output + 1) * 10:", torch.allclose(chained, (plain + 1) * 10))
    assert torch.allclose(chained, (plain + 1) * 10)

# %% [markdown]
# ## Keyword arguments: `with_kwargs=True`
#
# `args` holds the positional arguments only. An argument passed by keyword is not in it. With
# `register_forward_hook(hook, with_kwargs=True)`, the hook is called as
# `hook(module, args, kwargs, output)` and sees the keyword arguments as a dict.

# %%
class Scale(nn.Module):
    def forward(self, x, factor=1.0):
        return x * factor


scale = Scale()
seen = {}


def without_kwargs(module, args, output):
    seen["plain"] = args


def with_kwargs(module, args, kwargs, output):
    seen["with_kwargs"] = (args, kwargs, output)


with scale.register_forward_hook(without_kwargs), \
        scale.register_forward_hook(with_kwargs, with_kwargs=True):
    scale(torch.ones(2), factor=3.0)
print("plain hook, args:", seen["plain"])
args, kwargs, output = seen["with_kwargs"]
print("with_kwargs hook, args:", args, "| kwargs:", kwargs, "| output:", output)
assert len(seen["plain"]) == 1
assert kwargs == {"factor": 3.0} and torch.equal(output, torch.full((2,), 3.0))

with scale.register_forward_hook(lambda module, args, kwargs, output: -output, with_kwargs=True):
    replaced = scale(torch.ones(2), factor=3.0)
print("a with_kwargs hook returning -output: the call gives", replaced)
assert torch.equal(replaced, torch.full((2,), -3.0))

# %% [markdown]
# ## `always_call=True`: a hook that runs even when `forward` raises
#
# If `forward` raises, the ordinary forward hooks do not run: there is no output. A hook registered
# with `always_call=True` still runs, with `output=None`, and then the exception goes on to the
# caller; what the hook returns is ignored (below it returns a tensor, and the caller still gets
# the exception). When `forward` succeeds, it is an ordinary forward hook: it gets the output, and
# a value it returns replaces it. That is the place for cleanup that must happen after every call,
# such as stopping a timer or closing a profiling range.

# %%
class Fails(nn.Module):
    def forward(self, x):
        raise ValueError("forward failed on purpose")


fails = Fails()
calls = []
fails.register_forward_hook(lambda module, args, output: calls.append(("plain", output)))


def cleanup(module, args, output):
    calls.append(("always_call", output))
    return torch.zeros(1)  # ignored: forward raised


fails.register_forward_hook(cleanup, always_call=True)
try:
    result = fails(torch.ones(1))
    outcome = f"returned {result}"
except ValueError as error:
    outcome = f"raised {type(error).__name__}: {error}"
print("the call", outcome)
print("hooks that ran:", calls)
assert outcome == "raised ValueError: forward failed on purpose"
assert calls == [("always_call", None)]

doubler = Doubler()
doubler.register_forward_hook(lambda module, args, output: output + 1, always_call=True)
print("the same kind of hook on a forward that succeeds, returning output + 1:", doubler(torch.ones(2)))
assert torch.equal(doubler(torch.ones(2)), torch.full((2,), 3.0))

# %% [markdown]
# ## When hooks fire, and when they don't
#
# Hooks belong to the call `module(x)`, not to the gradient machinery or the training mode: they
# fire under `torch.no_grad()` and in `eval()` mode. But they are run by `nn.Module.__call__`, so
# calling `module.forward(x)` directly skips them. Write `module(x)`, never `module.forward(x)`.

# %%
torch.manual_seed(0)
layer = nn.Linear(3, 2)
fired = []
layer.register_forward_hook(lambda module, args, output: fired.append(output.requires_grad))
x = torch.randn(1, 3)

layer(x)
with torch.no_grad():
    layer(x)
layer.eval()
layer(x)
print("layer(x), under no_grad, in eval(): the hook fired", len(fired), "times;",
      "output.requires_grad each time:", fired)
assert fired == [True, False, True]

layer.forward(x)
print("after layer.forward(x): still", len(fired), "calls")
assert len(fired) == 3

# %% [markdown]
# A module used twice in one forward pass (shared weights) fires its hooks once per call. A hook
# that stores `acts[name] = output` keeps only the last call; one that appends keeps both.

# %%
class TwiceThrough(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(3, 3)

    def forward(self, x):
        return self.shared(self.shared(x).relu())


torch.manual_seed(0)
model = TwiceThrough()
last, every = {}, []


def keep_last(module, args, output):
    last["shared"] = output.detach().clone()


def keep_every(module, args, output):
    every.append(output.detach().clone())


model.shared.register_forward_hook(keep_last)
model.shared.register_forward_hook(keep_every)
out = model(torch.randn(2, 3))
print("calls recorded by the appending hook:", len(every))
print("the dict holds the second call:", torch.equal(last["shared"], every[1]),
      "| the first call:", torch.equal(last["shared"], every[0]))
assert len(every) == 2 and torch.equal(last["shared"], every[1]) and torch.equal(every[1], out)
assert not torch.equal(every[0], every[1])

# %% [markdown]
# ## Finding layers by name
#
# To hook a layer you need the module object. `model.named_modules()` lists every submodule at
# every depth with its dotted name, the names `state_dict()` keys start with: `features.2.0` is
# child `0` of child `2` of the attribute `features`. The model itself comes first, under the name
# `""`. `model.named_children()` lists only the direct children.

# %%
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 8), nn.ReLU(),
                                      nn.Sequential(nn.Linear(8, 8), nn.ReLU()))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.features(x))


net = Net()
all_names = [name for name, module in net.named_modules()]
child_names = [name for name, module in net.named_children()]
print("named_modules():", all_names)
print("named_children():", child_names)
assert all_names == ["", "features", "features.0", "features.1", "features.2", "features.2.0",
                     "features.2.1", "head"]
assert child_names == ["features", "head"]
assert dict(net.named_modules())["features.2.0"] is net.features[2][0]
print("state_dict() keys start with the same names:", list(net.state_dict())[:4])
assert "features.2.0.weight" in net.state_dict()
assert net.get_submodule("") is net and net.get_submodule("features.2.0") is net.features[2][0]

# %% [markdown]
# A module reachable under two names (a layer reused in a `Sequential`, or one module assigned to
# two attributes) is listed *once*, under its first name. `named_modules(remove_duplicate=False)`
# lists every name, and `get_submodule(name)` accepts any of them; `state_dict()` has keys under
# both names too. Tied weights are another case: two modules that share one weight `Parameter` are
# two modules, both listed; it is `named_parameters()` that lists the shared weight once.

# %%
reused = nn.Linear(3, 3)
twice = nn.Sequential(reused, nn.Tanh(), reused)
once_names = [name for name, module in twice.named_modules()]
every_name = [name for name, module in twice.named_modules(remove_duplicate=False)]
print("named_modules():                      ", once_names)
print("named_modules(remove_duplicate=False):", every_name)
print("get_submodule('2') is the reused layer:", twice.get_submodule("2") is reused,
      "| state_dict():", list(twice.state_dict()))
assert once_names == ["", "0", "1"] and every_name == ["", "0", "1", "2"]
assert twice.get_submodule("2") is twice.get_submodule("0") is reused
assert list(twice.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]

encoder, decoder = nn.Linear(3, 3), nn.Linear(3, 3)
decoder.weight = encoder.weight  # tied weights: one Parameter, two modules
tied = nn.Sequential(encoder, decoder)
tied_modules = [name for name, module in tied.named_modules()]
tied_parameters = [name for name, parameter in tied.named_parameters()]
print("tied weights: named_modules():", tied_modules, "| named_parameters():", tied_parameters)
assert tied_modules == ["", "0", "1"] and tied_parameters == ["0.weight", "0.bias", "1.bias"]

# %% [markdown]
# **A trap when you register hooks in a loop.** A hook defined inside the loop that uses the loop
# variable `name` looks `name` up when it *runs*, after the loop has ended: every hook then sees the
# last name. Bind the value when you make the hook, with a factory function (or a default
# argument, `def hook(module, args, output, name=name)`).

# %%
linear_names = [name for name, module in net.named_modules() if isinstance(module, nn.Linear)]
x = torch.randn(2, 4)

late = {}
handles = []
for name in linear_names:
    def late_hook(module, args, output):
        late[name] = output.detach().clone()  # `name` is read when the hook runs
    handles.append(dict(net.named_modules())[name].register_forward_hook(late_hook))
net(x)
for h in handles:
    h.remove()
print("keys with the late-binding hook:", list(late))
assert list(late) == ["head"]


def make_store_hook(store, name):
    def hook(module, args, output):
        store[name] = output.detach().clone()
    return hook


bound = {}
handles = [dict(net.named_modules())[name].register_forward_hook(make_store_hook(bound, name))
           for name in linear_names]
net(x)
for h in handles:
    h.remove()
print("keys with a factory function:  ", list(bound))
assert list(bound) == linear_names == ["features.0", "features.2.0", "head"]

by_default = {}
handles = []
for name in linear_names:
    def default_hook(module, args, output, name=name):  # the default is evaluated now, in the loop
        by_default[name] = output.detach().clone()
    handles.append(dict(net.named_modules())[name].register_forward_hook(default_hook))
net(x)
for h in handles:
    h.remove()
print("keys with a default argument:  ", list(by_default))
assert list(by_default) == linear_names

# %% [markdown]
# The cells above remove their handles after the forward pass. If that pass raised, a plain loop
# after it would never run and the hooks would stay; in a `finally:` block they go in any case.

# %%
handles = [dict(net.named_modules())[name].register_forward_hook(make_store_hook(bound, name))
           for name in linear_names]
try:
    net(torch.randn(2, 5))  # 5 features instead of 4: the first Linear raises
except RuntimeError as error:
    forward_error = str(error)
finally:
    for h in handles:
        h.remove()
print("the forward pass raised:", forward_error)
print("forward hooks left after the finally block:", sum(len(m._forward_hooks) for m in net.modules()))
assert "mat1 and mat2 shapes cannot be multiplied" in forward_error
assert sum(len(m._forward_hooks) for m in net.modules()) == 0

# %% [markdown]
# ## Trap 1: storing outputs without `detach()` keeps the graph alive
#
# A module's output, computed while gradients are on, carries its autograd graph: `output.grad_fn`
# links back through every earlier layer. For the backward pass, autograd *saves* tensors in that
# graph: a `Linear` saves its input, a `ReLU` its output. Keep the output and you keep all of them.

# %%
torch.manual_seed(0)
small = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
x = torch.randn(5, 3)
small_out = small(x)


def graph_nodes(node):
    """The names of the autograd nodes reachable from `node`, first met first."""
    names, todo = [], [node]
    while todo:
        node = todo.pop(0)
        if node is not None and type(node).__name__ != "AccumulateGrad":  # AccumulateGrad: a parameter
            names.append(type(node).__name__)
            todo += [next_node for next_node, index in node.next_functions]
    return names


print("nodes reachable from the output's grad_fn:", graph_nodes(small_out.grad_fn))
assert graph_nodes(small_out.grad_fn) == ["AddmmBackward0", "ReluBackward0", "TBackward0", "AddmmBackward0",
                                          "TBackward0"]  # TBackward0: the weights' transposes
last_linear = small_out.grad_fn  # the second Linear (addmm: bias + input @ weight.T)
relu_node = last_linear.next_functions[1][0]
first_linear = relu_node.next_functions[0][0]
print("the first Linear saved its input x:", first_linear._saved_mat1 is x,
      "| the ReLU saved its output, which the second Linear saved as its input:",
      torch.equal(relu_node._saved_result, last_linear._saved_mat1))
assert first_linear._saved_mat1 is x
assert torch.equal(relu_node._saved_result, small[1](small[0](x)))
assert torch.equal(last_linear._saved_mat1, relu_node._saved_result)

# %% [markdown]
# The classic case is collecting features batch after batch by appending the output of the last
# layer to a list. To measure what that keeps, `torch.autograd.graph.saved_tensors_hooks` shows us
# every tensor autograd saves. We keep only a *weak* reference to each one (which does not keep it
# alive), and after each batch we add up the bytes of those still alive, leaving out the
# parameters, which live anyway.

# %%
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
parameter_pointers = {p.data_ptr() for p in mlp.parameters()}
saved_by_autograd = []  # (weak reference, bytes)


def pack(tensor):
    # Return a detached alias (same memory); returning `tensor` itself leaks (shown after the figure).
    alias = tensor.detach()
    if tensor.data_ptr() not in parameter_pointers:
        saved_by_autograd.append((weakref.ref(alias), tensor.untyped_storage().nbytes()))
    return alias


def unpack(alias):
    return alias


def still_alive():
    """{storage address: (bytes, shape)} of the saved tensors still alive; a ReLU output that two
    layers saved counts once."""
    alive = {}
    for ref, nbytes in saved_by_autograd:
        tensor = ref()
        if tensor is not None:
            alive[tensor.untyped_storage().data_ptr()] = (nbytes, tuple(tensor.shape))
    return alive


def collect_features(detach, batches=8):
    """Append the last layer's output for each batch. Returns the features, the KiB of saved
    tensors alive after each batch, and the shapes of those alive after the first batch."""
    saved_by_autograd.clear()
    features, kib_alive, first_shapes = [], [], None

    def keep(module, args, output):
        features.append(output.detach() if detach else output)

    with mlp[4].register_forward_hook(keep), torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        for batch in range(batches):
            mlp(torch.randn(64, 256))  # the output is dropped: only the hook keeps anything
            alive = still_alive().values()
            kib_alive.append(sum(nbytes for nbytes, shape in alive) / 1024)
            if batch == 0:
                first_shapes = sorted(shape for nbytes, shape in alive)
    return features, kib_alive, first_shapes


features_raw, kept_graph, shapes_after_one_batch = collect_features(detach=False)
print("kept alive after one batch, without detach():", shapes_after_one_batch)
assert shapes_after_one_batch == [(64, 256), (64, 1024), (64, 1024)]  # the input, the two ReLU outputs
features_detached, kept_detached, nothing = collect_features(detach=True)
feature_kib = features_raw[0].untyped_storage().nbytes() / 1024
print(f"one batch of features is {feature_kib:.1f} KiB")
print("KiB kept alive by autograd, without detach():", kept_graph)
print("KiB kept alive by autograd, with detach():   ", kept_detached)
print("the first stored output still has a graph:", type(features_raw[0].grad_fn).__name__)
print(f"kept per batch / stored per batch: {kept_graph[0] / feature_kib:.0f}")
assert feature_kib == 2.5 and kept_graph[0] == 576.0
assert kept_graph == [576.0 * (batch + 1) for batch in range(8)]
assert kept_detached == [0.0] * 8 and nothing == []
assert features_raw[0].grad_fn is not None and features_detached[0].grad_fn is None

# %% [markdown]
# Without `detach()`, every batch adds 576 KiB that autograd holds for a backward pass that never
# comes: the input batch and both ReLU outputs, 230 times the 2.5 KiB of features actually wanted.
# With `detach()` nothing is held beyond the features. The picture shows the measured figures.

# %%
batches = range(1, len(kept_graph) + 1)
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.plot(batches, kept_graph, "o-", color="tab:red", label="features.append(output)")
ax.plot(batches, kept_detached, "o-", color="tab:green", label="features.append(output.detach())")
ax.set_xlabel("batches collected")
ax.set_ylabel("KiB saved by autograd, still alive")
ax.set_title("Memory held by stored outputs (measured with saved_tensors_hooks)")
ax.legend(loc="upper left", frameon=False)
plt.tight_layout()
plt.show()

# %% [markdown]
# Why `pack` above returns `tensor.detach()` and not `tensor`: a ReLU saves its own output, so a
# `pack` that returns the tensor itself makes the output hold its graph and the graph hold the
# output. Python's garbage collector does not free that pair: the output leaks, as the weak
# reference below shows after `del` and `gc.collect()`.

# %%
def output_outlives_gc(pack_returns_itself):
    """Whether a ReLU's output, saved through `pack`, is still alive after `del` and gc.collect()."""
    def pack_itself(tensor):
        return tensor

    def pack_alias(tensor):
        return tensor.detach()

    pack = pack_itself if pack_returns_itself else pack_alias
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda saved: saved):
        relu_output = torch.relu(torch.randn(1000, requires_grad=True))
    output_ref = weakref.ref(relu_output)
    del relu_output
    gc.collect()
    return output_ref() is not None


alive_itself, alive_alias = output_outlives_gc(True), output_outlives_gc(False)
print("pack returns tensor:          output alive after del and gc.collect():", alive_itself)
print("pack returns tensor.detach(): output alive after del and gc.collect():", alive_alias)
assert alive_itself and not alive_alias

# %% [markdown]
# ## Trap 2: `detach()` alone shares memory with the output
#
# `output.detach()` is a new tensor without a graph, but it uses the *same memory* as `output`. If
# a later layer changes that memory in place, the value you stored changes too. `ReLU(inplace=True)`
# does exactly that: it writes `max(x, 0)` into its input. Below, the hook on the `Linear` stores
# `output.detach()` and `output.detach().clone()`; after the forward pass the first one has lost
# its negative values.

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 2))
stored = {}


def store_both(module, args, output):
    stored["detach"] = output.detach()
    stored["detach_clone"] = output.detach().clone()
    stored["output_pointer"] = output.data_ptr()


net[0].register_forward_hook(store_both)
x = torch.randn(3, 4)
net(x)
true_output = F.linear(x, net[0].weight, net[0].bias).detach()  # what the Linear really produced
print("output.detach() uses the output's memory:", stored["detach"].data_ptr() == stored["output_pointer"],
      "| the clone has its own:", stored["detach_clone"].data_ptr() != stored["output_pointer"])
assert stored["detach"].data_ptr() == stored["output_pointer"] != stored["detach_clone"].data_ptr()
print(f"the Linear's real output: min {true_output.min():.4f}")
print(f"stored output.detach():         min {stored['detach'].min():.4f}  <- overwritten by the ReLU")
print(f"stored output.detach().clone(): min {stored['detach_clone'].min():.4f}")
assert true_output.min() < 0 and stored["detach"].min() == 0
assert torch.equal(stored["detach"], true_output.relu())
assert torch.equal(stored["detach_clone"], true_output)

# %% [markdown]
# So store `output.detach().clone()`: no graph, and memory of its own.
#
# ## Exercise 1: `capture_activations` · medium · about 20 min
#
# Write `capture_activations(model, layer_names)`. It registers a forward hook on each submodule
# named in `layer_names` and returns `(activations, handles)`. A name is any name under which
# `model` reaches a submodule, as `model.named_modules(remove_duplicate=False)` lists them: at any
# depth, `""` for the model itself, and both names of a layer reused under two names (if both are
# asked for, each gets its own entry).
#
# - `activations` is a new dict. Each call of a named layer (under `torch.no_grad()` and in
#   `eval()` mode too) stores, under that name, a new tensor: its output detached and cloned, of the
#   output's dtype. The latest call wins (a layer called twice in one forward pass keeps its second
#   output, as `keep_last` did above);
# - `handles` is a list of the handles of the hooks this call registered; removing them all stops
#   the capture.
#
# If a name in `layer_names` is not a submodule of `model`, raise `KeyError` with that name in its
# message, and leave no hook of this call registered: the simplest way is to check every name before
# registering any hook.
#
# Traps: storing `output` (Trap 1) or `output.detach()` (Trap 2); the late-binding loop variable;
# looking only at `named_children()`, which misses nested layers, or at `named_modules()`, which
# lists a reused layer under one name only; a dict or list kept between calls (at module level, or
# a default argument such as `handles=[]`), which mixes in what earlier calls registered.
#
# Check: run `check(capture_activations)` below, or
# `pytest tests/test_04_forward_hooks.py -k capture_activations`.

# %% tags=["exercise"]
# Exercise: capture_activations — write your code in this cell.


def capture_activations(model, layer_names):
    """Capture the outputs of the submodules of `model` named in `layer_names`, and of no others.

    Names are those of `model.named_modules(remove_duplicate=False)`: at any depth
    (such as "features.2.0"), "" for the model itself, and every name of a module that the model
    reaches under two names.
    Returns `(activations, handles)`.
    `activations` is a new dict that each call of a named layer updates (under torch.no_grad()
    and in eval() mode too): `activations[name] = <its output, detached and cloned>`, a new
    tensor each time, of the output's dtype.
    The latest call wins, also over an earlier call in the same forward pass (a shared layer).
    `handles` is a list (or tuple) of the RemovableHandles of the hooks this call registered;
    removing them all stops the capture.
    The hooks return None, so the model computes what it computed before.
    An unknown name raises KeyError naming it, and no hook of this call stays registered.
    The named layers return tensors.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("capture_activations is not written yet")


# %%
check(capture_activations)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Look every name up first and raise before you register anything. Then register one forward
# hook per name; each hook writes its layer's output into a shared dict under its own name, so a
# later call overwrites the value of an earlier one.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `dict(model.named_modules(remove_duplicate=False))` maps every dotted name, at any depth (a
# reused layer under each of its names), to its module.
# `module.register_forward_hook(hook)` returns the handle; `hook(module, args, output)`.
# `output.detach().clone()` gives a copy without a graph, in memory of its own.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# modules = dict(model.named_modules(remove_duplicate=False))
# for name in layer_names:
#     if name not in modules:
#         raise KeyError(name)
# activations = {}
#
# def make_hook(name):
#     def hook(module, args, output):
#         ...  # store the detached clone under `name`
#     return hook
# ```
#
# Then register `make_hook(name)` on `modules[name]` for each name, and return the dict and the
# list of handles.
#
# </details>

# %% [markdown]
# Your function at work on the `Net` from above, once `capture_activations` is done: the model's
# own output (name `""`) and two nested layers captured, then the handles removed, then an unknown
# name refused with a `KeyError` that leaves no hook behind.

# %%
with try_it():
    torch.manual_seed(0)
    net = Net()
    activations, handles = capture_activations(net, ["", "features.1", "features.2.0"])
    net(torch.randn(5, 4))
    print({name: tuple(value.shape) for name, value in activations.items()})
    assert {name: tuple(value.shape) for name, value in activations.items()} == {
        "": (5, 3), "features.1": (5, 8), "features.2.0": (5, 8)}
    assert not any(value.requires_grad for value in activations.values())
    for h in handles:
        h.remove()
    print("hooks left:", sum(len(m._forward_hooks) for m in net.modules()))
    assert sum(len(m._forward_hooks) for m in net.modules()) == 0

    try:
        capture_activations(net, ["head", "features.9"])
    except KeyError as error:
        print(f"unknown name: KeyError: {error}")
    print("hooks left after the KeyError:", sum(len(m._forward_hooks) for m in net.modules()))
    assert sum(len(m._forward_hooks) for m in net.modules()) == 0

# %% [markdown]
# ## Statistics from hooks: the zero fraction of ReLUs
#
# A hook does not have to store the output: it can reduce it to a few numbers. Where a ReLU outputs
# 0, it passes no gradient back either (the cell below shows it). Zeros are normal: for any one
# input, many units of a layer are inactive. A unit that is zero for *every* input is called
# *dead*: no gradient ever reaches the weights that feed it. Two numbers per call summarise a
# ReLU's output: its mean and its *zero fraction*, the fraction of its elements that are exactly 0.
#
# `.item()` turns a one-element tensor into a Python float. A float keeps nothing alive (a tensor
# statistic of an output that requires grad has a `grad_fn`, and so keeps the graph) and is easy to
# print, compare and plot. To find the ReLUs, ask `isinstance(module, nn.ReLU)`: the class name is
# no guide, since `nn.ReLU6` and `nn.LeakyReLU` are not kinds of `nn.ReLU`, while a subclass of
# `nn.ReLU` is one, whatever its name (`type(module) is nn.ReLU` misses it).

# %%
pre_activation = torch.tensor([[-1.0, 1.5], [0.0, 0.5]], requires_grad=True)
out = torch.relu(pre_activation)
(relu_gradient,) = torch.autograd.grad(out.sum(), pre_activation)
print("ReLU output:", out.tolist(), "| gradient it passes back:", relu_gradient.tolist())
assert relu_gradient.tolist() == [[0.0, 1.0], [0.0, 1.0]]  # 0 wherever the output is 0
print("out.mean() as a tensor has a grad_fn:", type(out.mean().grad_fn).__name__)
assert out.mean().grad_fn is not None
mean, zero_fraction = out.mean().item(), (out == 0).float().mean().item()
print("mean:", mean, type(mean).__name__, "| zero fraction:", zero_fraction, type(zero_fraction).__name__)
assert (mean, zero_fraction) == (0.5, 0.5) and type(mean) is float and type(zero_fraction) is float
lookalikes = [nn.ReLU6(), nn.LeakyReLU()]
print("isinstance(..., nn.ReLU):", {type(m).__name__: isinstance(m, nn.ReLU) for m in [nn.ReLU()] + lookalikes})
assert isinstance(nn.ReLU(), nn.ReLU) and not any(isinstance(m, nn.ReLU) for m in lookalikes)


class Rectifier(nn.ReLU):
    pass


print("Rectifier, a subclass: isinstance(..., nn.ReLU):", isinstance(Rectifier(), nn.ReLU),
      "| type(...) is nn.ReLU:", type(Rectifier()) is nn.ReLU)
assert isinstance(Rectifier(), nn.ReLU) and type(Rectifier()) is not nn.ReLU

# %% [markdown]
# ## Exercise 2: `track_relu_stats` · medium · about 15 min
#
# Write `track_relu_stats(model)`. It registers a forward hook on every `nn.ReLU` in `model`, at
# any depth (the model itself too, if it is an `nn.ReLU`: its name is `""`), and returns
# `(stats, handles)`:
#
# - `stats` is a new dict from the ReLU's name (as `named_modules()` gives it: a ReLU reused under
#   two names is tracked once, under its first name) to a list. Each call of that ReLU (under
#   `torch.no_grad()` and in `eval()` mode too) appends `{"mean": ..., "zero_fraction": ...}`: the
#   mean of its output and the fraction of its output elements that are exactly zero, both Python
#   floats. A ReLU called twice in one forward pass gets two entries;
# - `handles` is a list of the handles of the hooks this call registered; removing them all stops
#   the tracking.
#
# Traps: `model.children()` sees only the top level; a class name that contains "ReLU" (`ReLU6`)
# does not make an `nn.ReLU`, and `type(module) is nn.ReLU` misses a subclass of `nn.ReLU`; a
# tensor (`output.mean()`) is not a float; the late-binding loop variable; a dict or list kept
# between calls.
#
# Check: run `check(track_relu_stats)` below, or `pytest tests/test_04_forward_hooks.py -k track_relu_stats`.

# %% tags=["exercise"]
# Exercise: track_relu_stats — write your code in this cell.
from torch import nn


def track_relu_stats(model):
    """Record the mean and zero fraction of every nn.ReLU's output in `model`, at any depth.

    Every module that is an instance of nn.ReLU (subclasses too), the model itself included
    (name ""), is tracked once, under the name `model.named_modules()` gives it (a ReLU reachable
    under two names: its first name).
    Returns `(stats, handles)`, `stats` a new dict. Each call of a ReLU named `name` (under
    torch.no_grad() and in eval() mode too) appends `{"mean": m, "zero_fraction": z}` to
    `stats[name]`: `m` is the mean of the ReLU's output, `z` the fraction of its output elements
    that are exactly 0, both Python floats.
    `handles` is a list (or tuple) of the RemovableHandles of the hooks this call registered;
    removing them all stops the tracking.
    The hooks return None, so the model computes what it computed before.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("track_relu_stats is not written yet")


# %%
check(track_relu_stats)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Walk over every submodule with its name, keep the ones that are ReLUs, and give each its own
# list. Its hook reduces the output to two numbers and appends them, so every call adds an entry.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.named_modules()` visits every depth; `isinstance(module, nn.ReLU)` picks the ReLUs.
# `output.mean().item()` is a Python float; `(output == 0)` marks the elements that are exactly
# zero, and its mean (after `.float()`) is their fraction.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# stats, handles = {}, []
#
# def make_hook(entries):
#     def hook(module, args, output):
#         entries.append({"mean": ..., "zero_fraction": ...})
#     return hook
#
# for name, module in model.named_modules():
#     if isinstance(module, nn.ReLU):
#         ...
# ```
#
# </details>

# %% [markdown]
# Your function at work: a stack of six `Linear` + `ReLU` layers, measured twice on one batch of
# 256 inputs, once with every bias set to 0 and once with every bias set to -0.05. Once
# `track_relu_stats` is done, the cell prints the mean output and the zero fraction of each ReLU
# and draws the zero fractions. With zero biases, about half of each layer's outputs are zero: the
# ordinary sparsity of a ReLU network at initialisation, almost all of it from units that are 0 for
# some inputs and not for others (a cell further down counts the dead ones). The mean output
# shrinks from layer to layer (PyTorch's default initialisation does not keep the scale of the
# activations). So the small negative bias, which looks harmless, makes the zero fraction grow with
# depth, until in the last two ReLUs every output is 0 for all 256 inputs: as far as this batch can
# tell, every unit there is dead.

# %%
def deep_stack(bias):
    """A fresh 6-layer Linear + ReLU stack whose biases are all `bias`, and a batch of 256 inputs."""
    torch.manual_seed(0)
    layers = []
    for depth in range(6):
        linear = nn.Linear(32, 32)
        nn.init.constant_(linear.bias, bias)
        layers += [linear, nn.ReLU()]
    return nn.Sequential(*layers), torch.randn(256, 32)


def relu_stats(bias):
    """Names, zero fractions and means of the ReLUs of `deep_stack(bias)`, on its batch."""
    deep, batch = deep_stack(bias)
    stats, handles = track_relu_stats(deep)
    try:
        deep(batch)
    finally:  # the hooks go, even if the forward pass raises
        for h in handles:
            h.remove()
    names = [name for name, entries in stats.items() if entries]
    assert names == ["1", "3", "5", "7", "9", "11"]
    assert all(type(entries[0]["zero_fraction"]) is float for entries in stats.values())
    return (names, [stats[name][0]["zero_fraction"] for name in names],
            [stats[name][0]["mean"] for name in names])


with try_it():
    relu_names, zeros_zero_bias, mean_zero_bias = relu_stats(0.0)
    relu_names, zeros_negative_bias, mean_negative_bias = relu_stats(-0.05)
    print("ReLU:                     ", relu_names)
    print("mean output, bias 0:      ", [round(m, 4) for m in mean_zero_bias])
    print("zero fraction, bias 0:    ", [round(z, 3) for z in zeros_zero_bias])
    print("zero fraction, bias -0.05:", [round(z, 3) for z in zeros_negative_bias])
    assert mean_zero_bias == sorted(mean_zero_bias, reverse=True)
    assert all(0.4 < z < 0.6 for z in zeros_zero_bias)
    assert zeros_negative_bias == sorted(zeros_negative_bias) and zeros_negative_bias[-2:] == [1.0, 1.0]
    assert all(z < 1.0 for z in zeros_negative_bias[:-2])

    fig, ax = plt.subplots(figsize=(7, 3.2))
    positions = range(len(relu_names))
    ax.bar([p - 0.2 for p in positions], zeros_zero_bias, 0.4, color="tab:blue", label="bias 0")
    ax.bar([p + 0.2 for p in positions], zeros_negative_bias, 0.4, color="tab:red", label="bias -0.05")
    ax.set_xticks(list(positions), relu_names)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("ReLU (its name in named_modules())")
    ax.set_ylabel("fraction of outputs exactly 0")
    ax.set_title("Zero fraction of each ReLU's output (measured by track_relu_stats)")
    ax.legend(loc="upper left", frameon=False)
    plt.tight_layout()
    plt.show()

# %% [markdown]
# Dead is a property of a unit, not of one output. The cell below needs no exercise: it runs the
# same two stacks on the same batch layer by layer and counts, for each ReLU, the units (of 32)
# whose output is 0 for all 256 inputs. With zero biases there are a few, only in the last three
# ReLUs; with a bias of -0.05 their number grows with depth, until all 32 units of the last two
# ReLUs are dead. Then it shows what being dead costs: a loss computed from the third ReLU's output
# sends no gradient at all to the weights and the bias that feed its dead unit, and some to those
# of every other unit.

# %%
def dead_units(bias):
    """For each ReLU of `deep_stack(bias)`, how many of its 32 units are 0 for every input of the batch."""
    deep, batch = deep_stack(bias)
    counts, hidden = [], batch
    with torch.no_grad():
        for layer in deep:
            hidden = layer(hidden)
            if isinstance(layer, nn.ReLU):
                counts.append(int((hidden == 0).all(dim=0).sum()))
    return counts


dead_zero_bias, dead_negative_bias = dead_units(0.0), dead_units(-0.05)
print("units zero for all 256 inputs, bias 0:    ", dead_zero_bias)
print("units zero for all 256 inputs, bias -0.05:", dead_negative_bias)
assert dead_zero_bias[:3] == [0, 0, 0] and 0 < sum(dead_zero_bias) and max(dead_zero_bias) <= 2
assert dead_negative_bias == sorted(dead_negative_bias) and dead_negative_bias[-2:] == [32, 32]

deep, batch = deep_stack(-0.05)
third_relu_output = deep[:6](batch)  # Linear, ReLU, Linear, ReLU, Linear "4", ReLU "5"
dead = (third_relu_output == 0).all(dim=0)
third_relu_output.sum().backward()
weight_grad, bias_grad = deep[4].weight.grad, deep[4].bias.grad
print("dead units of ReLU '5':", dead.nonzero().flatten().tolist(),
      "| largest gradient reaching their weights:", weight_grad[dead].abs().max().item(),
      "| their bias gradient:", bias_grad[dead].tolist())
print("every other unit's weights get some gradient:", bool((weight_grad[~dead].abs().sum(dim=1) > 0).all()))
assert dead.sum() == dead_negative_bias[2] == 1
assert (weight_grad[dead] == 0).all() and (bias_grad[dead] == 0).all()
assert (weight_grad[~dead].abs().sum(dim=1) > 0).all()

# %% [markdown]
# ## Changing outputs
#
# A hook that returns a value changes the model without touching its code. Build the new value
# out of place (`output.clamp(...)`, `output * 2`), and return it. Editing `output` in place
# (`output.clamp_(...)`, `output[mask] = ...`) changes a tensor that the module, or the caller, may
# still hold: below, a module keeps its last output in `self.last`, and an in-place edit in the hook
# changes that record too.

# %%
class Remembers(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        self.last = 3 * x
        return self.last


remembers = Remembers()
x = torch.tensor([-2.0, 0.5, 2.0])
with remembers.register_forward_hook(lambda module, args, output: output.clamp_(-1, 1)):
    remembers(x)
print("in-place clamp_ in the hook: module.last =", remembers.last)
assert torch.equal(remembers.last, torch.tensor([-1.0, 1.0, 1.0]))


def zero_negatives(module, args, output):
    output[output < 0] = 0.0  # assignment into the output: in place too


with remembers.register_forward_hook(zero_negatives):
    remembers(x)
print("output[output < 0] = 0 in the hook: module.last =", remembers.last)
assert torch.equal(remembers.last, torch.tensor([0.0, 1.5, 6.0]))
with remembers.register_forward_hook(lambda module, args, output: output.clamp(-1, 1)):
    returned = remembers(x)
print("out-of-place clamp returned: module.last =", remembers.last, "| output =", returned)
assert torch.equal(remembers.last, torch.tensor([-6.0, 1.5, 6.0]))
assert torch.equal(returned, torch.tensor([-1.0, 1.0, 1.0]))

# %% [markdown]
# The gradient must flow through the replacement too. `torch.clamp` passes the gradient on
# unchanged where the value was strictly inside the range, and passes 0 where it was clipped.
# Exactly on a bound the clamp has a corner, and what torch passes there changed: until torch 2.13
# `torch.clamp` passes the gradient on there (the bounds belong to the range); from torch 2.14 it
# passes 0 with number bounds and half with tensor bounds. Other ways to compute the same values
# differ there too: `F.hardtanh` passes 0; `torch.maximum`/`torch.minimum` pass half (they split
# the gradient between two equal values); and `torch.where` passes 0 wherever it picks the constant
# bound instead of `t`, so its conditions decide: with `t <= -1` and `t >= 1` it picks the constant
# also at the bounds (gradient 0 there), with `t < -1` and `t > 1` it keeps `t` there (gradient 1).
# Inside the range and beyond it, every one of them agrees. The cell asserts what your torch does.

# %%
t = torch.tensor([-2.0, -1.0, 0.3, 1.0, 2.0], requires_grad=True)
low, high = torch.tensor(-1.0), torch.tensor(1.0)
same_values = {
    "t.clamp(-1, 1)": t.clamp(-1, 1),
    "t.clamp(low, high)": t.clamp(low, high),
    "F.hardtanh(t, -1, 1)": F.hardtanh(t, -1, 1),
    "torch.minimum(torch.maximum(t, low), high)": torch.minimum(torch.maximum(t, low), high),
    "torch.where(t <= -1, -1.0, torch.where(t >= 1, 1.0, t))": torch.where(t <= -1, -1.0, torch.where(t >= 1, 1.0, t)),
    "torch.where(t < -1, -1.0, torch.where(t > 1, 1.0, t))": torch.where(t < -1, -1.0, torch.where(t > 1, 1.0, t)),
}
print("torch", torch.__version__, "| t =", t.tolist())
gradients = {}
for text, value in same_values.items():
    assert torch.equal(value, same_values["t.clamp(-1, 1)"])
    (gradients[text],) = torch.autograd.grad(value.sum(), t)
    print(f"gradient of {text}.sum(): {gradients[text].tolist()}")
    assert gradients[text][[0, 2, 4]].tolist() == [0.0, 1.0, 0.0]  # beyond, inside, beyond: all agree
if torch.__version__ >= "2.14":  # torch.clamp's gradient exactly on a bound changed in torch 2.14
    assert gradients["t.clamp(-1, 1)"].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
    assert gradients["t.clamp(low, high)"].tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]
else:  # until torch 2.13
    assert gradients["t.clamp(-1, 1)"].tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]
    assert gradients["t.clamp(low, high)"].tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]
assert gradients["F.hardtanh(t, -1, 1)"].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
assert gradients["torch.minimum(torch.maximum(t, low), high)"].tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]
assert gradients["torch.where(t <= -1, -1.0, torch.where(t >= 1, 1.0, t))"].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]
assert gradients["torch.where(t < -1, -1.0, torch.where(t > 1, 1.0, t))"].tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]

# %% [markdown]
# A replacement built from `output.detach()`, or under `torch.no_grad()`, cuts the graph at the
# hooked layer. Inside a network that is silent: `backward()` runs (the layers after the cut still
# need gradients), but the parameters before the cut get none: their `.grad` stays `None`, with no
# error and no warning. Only when the cut output is the whole model's output does `backward()`
# fail, since nothing in the loss requires grad any more.

# %%
def clamp_detached(module, args, output):
    return output.detach().clamp(-0.5, 0.5)


def clamp_without_grad(module, args, output):
    with torch.no_grad():
        return output.clamp(-0.5, 0.5)


x = torch.randn(2, 3)
for cutting_hook in (clamp_detached, clamp_without_grad):
    torch.manual_seed(0)
    two_layers = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    with two_layers[0].register_forward_hook(cutting_hook), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        two_layers(x).sum().backward()  # no error
    print(f"{cutting_hook.__name__} on the first of two Linears: backward ran, warnings: {len(caught)}; "
          f"first layer's weight.grad: {two_layers[0].weight.grad}; second layer's weight.grad is set:",
          two_layers[1].weight.grad is not None)
    assert caught == []
    assert two_layers[0].weight.grad is None and two_layers[0].bias.grad is None
    assert two_layers[1].weight.grad is not None and two_layers[1].bias.grad is not None

    layer = nn.Linear(3, 4)
    with layer.register_forward_hook(cutting_hook):
        cut = layer(x)
    try:
        cut.sum().backward()
        backward_error = "none, backward ran"
    except RuntimeError as error:
        backward_error = f"RuntimeError: {error}"
    print(f"{cutting_hook.__name__} on the model's last layer: requires_grad = {cut.requires_grad}; "
          f"backward: {backward_error}")
    assert backward_error.startswith("RuntimeError: ")
    assert "element 0 of tensors does not require grad and does not have a grad_fn" in backward_error
    assert not cut.requires_grad and layer.weight.grad is None

# %% [markdown]
# ## Exercise 3: `clamp_output` · easy · about 10 min
#
# Write `clamp_output(module, min_value, max_value)`. It registers a forward hook on `module` that
# replaces the output of every call (under `torch.no_grad()` and in `eval()` mode too) by the
# output clamped to `[min_value, max_value]` (of the output's dtype), and returns its handle.
#
# - Don't change the original output in place: the module (or a hook before yours) may still hold it.
# - Each call adds a hook of its own, with its own bounds, and leaves the other hooks alone: two
#   calls on one module chain (the second clamps what the first returned).
# - The gradient passes unchanged where the output was strictly inside the bounds, and is 0 where
#   it was beyond them. Exactly on a bound it is not graded: torch's own answer there changed in
#   torch 2.14 (above), so `output.clamp(...)`, `F.hardtanh` and both `torch.where` forms pass.
#
# Traps: `clamp_` or assignment into `output` (in place); forgetting to return the new value (the
# output then stays unclamped); `.detach()` or `torch.no_grad()` in the hook (no gradient, and no
# error from `backward()` inside a network); clamped values with the unclamped gradient
# (`output + (clamped - output).detach()`, which passes the gradient on also where the output was
# clipped); a handle or the bounds kept outside the hook (in a global, or on the module), which a
# later call replaces.
#
# Check: run `check(clamp_output)` below, or `pytest tests/test_04_forward_hooks.py -k clamp_output`.

# %% tags=["exercise"]
# Exercise: clamp_output — write your code in this cell.


def clamp_output(module, min_value, max_value):
    """Clamp the output of `module` to `[min_value, max_value]` with a forward hook.

    Every call's output is clamped, under torch.no_grad() and in eval() mode too.
    The hook returns a new tensor, the output clamped (of the output's dtype), so that it
    replaces the output; the original output is not changed in place. The gradient passes
    unchanged where the output was strictly inside the bounds, and is 0 where it was beyond
    them; where the output was exactly on a bound it is not graded (torch.clamp's own
    gradient there changed in torch 2.14).
    Each call registers a hook of its own, with its own bounds, and leaves other hooks alone
    (two on one module chain).
    Returns the RemovableHandle of the hook.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("clamp_output is not written yet")


# %%
check(clamp_output)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A forward hook that returns something replaces the module's output with it. Return a new,
# clamped tensor built from the output, without touching the output itself.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `output.clamp(min_value, max_value)` (or `torch.clamp`) returns a new tensor and keeps the graph;
# `clamp_` works in place. `module.register_forward_hook(hook)` returns the handle.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def hook(module, args, output):
#     ...  # return the clamped copy
#
# return module.register_forward_hook(hook)
# ```
#
# </details>

# %% [markdown]
# Your function at work, once `clamp_output` is done: a layer's output clamped to `[-0.5, 0.5]`.
# The cell prints both output ranges and the bias gradient: the gradient reaches the weights only
# through the outputs that were inside the range, so each unit's bias gradient is its number of
# unclipped outputs. After `handle.remove()` the output is the plain one again.

# %%
with try_it():
    torch.manual_seed(0)
    layer = nn.Linear(3, 4)
    x = 2 * torch.randn(5, 3)
    plain = layer(x)
    handle = clamp_output(layer, -0.5, 0.5)
    clamped = layer(x)
    print(f"output range: plain [{plain.min():.3f}, {plain.max():.3f}], "
          f"clamped [{clamped.min():.3f}, {clamped.max():.3f}]")
    assert torch.equal(clamped, plain.clamp(-0.5, 0.5))
    assert plain.min() < -0.5 and plain.max() > 0.5
    clamped.sum().backward()
    inside = ((plain >= -0.5) & (plain <= 0.5)).float()
    print("bias gradient = number of unclipped outputs per unit:", layer.bias.grad.tolist())
    assert torch.equal(layer.bias.grad, inside.sum(0))
    handle.remove()
    assert torch.equal(layer(x), plain)

# %% [markdown]
# ## Exercise 4: `predict_shared_module_calls` · easy · about 5 min
#
# **Predict before you run.** The cell below defines `shared_module_events(log)`: a model whose
# forward calls one layer, `shared`, twice (`self.shared(self.shared(x))`) and then a layer `head`,
# with hooks that log an event each time they fire. Nothing runs yet: the cell only defines the
# function. The events:
#
# - `"pre:model"`, `"pre:shared"`: that module's forward pre-hook fired;
# - `"fwd:model"`, `"fwd:shared"`, `"fwd:head"`: that module's forward hook fired.
#
# Write `predict_shared_module_calls()`: it returns the list of events in the order you expect
# them to fire, an event as many times as it fires. Spelling: case does not matter, nor spaces
# around a name or around the `:`; `forward` may stand for `fwd`, and `prehook`, `pre-hook` or
# `pre_hook` for `pre`.
#
# Check: run `check(predict_shared_module_calls)` below (a wrong prediction is told the first event
# where it parts from what fires, and the rule;
# after three different wrong predictions in one session, `check` shows the whole log), or
# `pytest tests/test_04_forward_hooks.py -k predict_shared_module_calls`. Once it passes, the cell
# after the hints prints the log, recorded as it runs.

# %% tags=["prediction"]
import torch
from torch import nn


def shared_module_events(log):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared, self.head = nn.Linear(2, 2), nn.Linear(2, 1)

        def forward(self, x):
            return self.head(self.shared(self.shared(x)))

    model = Model()
    model.register_forward_pre_hook(lambda module, args: log("pre:model"))
    model.register_forward_hook(lambda module, args, output: log("fwd:model"))
    model.shared.register_forward_pre_hook(lambda module, args: log("pre:shared"))
    model.shared.register_forward_hook(lambda module, args, output: log("fwd:shared"))
    model.head.register_forward_hook(lambda module, args, output: log("fwd:head"))
    model(torch.zeros(1, 2))


# %% tags=["exercise"]
# Exercise: predict_shared_module_calls — write your code in this cell.


def predict_shared_module_calls():
    """Return the events that `shared_module_events` logs, in the order they fire.

    Each event is one of the names the cell above logs, e.g. "pre:model".
    """
    # TODO: return ["...", ...]: the events, in the order you expect them to fire
    raise NotImplementedError("predict_shared_module_calls is not written yet")


# %%
check(predict_shared_module_calls)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Hooks belong to calls, not to modules: count the calls in `forward`, and follow them from the
# inside out, as Python evaluates `self.head(self.shared(self.shared(x)))`.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# Each `module(...)` call runs that module's pre-hooks, then its `forward`, then its forward hooks.
# The model's forward hook can only fire once the model's `forward` has returned.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Seven events, starting with `"pre:model"` and ending with `"fwd:model"`; `shared` fires its pair of
# hooks twice, and each call finishes before the next one starts.
#
# </details>

# %% [markdown]
# Once your prediction is right, this cell prints what fires, recorded as it runs (until then it
# says what to do).

# %%
from hooked.notebook import reveal

reveal(predict_shared_module_calls)

# %% [markdown]
# ## Summary
#
# | Registration | the hook is called as | a non-None return | fires |
# |---|---|---|---|
# | `m.register_forward_hook(hook)` | `hook(module, args, output)` | replaces the output (unchecked) | after each `m(...)`, also under `no_grad` and in `eval()`; not for `m.forward(...)` |
# | `..., with_kwargs=True` | `hook(module, args, kwargs, output)` | replaces the output | the same |
# | `..., always_call=True` | as above; `output` is `None` if `forward` raised | replaces the output; ignored if `forward` raised | also when `forward` raises |
#
# Rules of thumb: find layers by their `named_modules()` names (`remove_duplicate=False` for every
# name of a reused layer); bind the name when you make a hook in a loop; store
# `output.detach().clone()` (without `detach()` the graph stays alive, without `clone()` an
# in-place layer overwrites your copy); keep statistics as Python floats; replace outputs out of
# place, with operations that keep the graph (a cut graph inside a network raises no error); remove
# the handles in a `finally:` block, so that they go even when the forward pass raises.
#
# Next, lesson 05 covers backward hooks on modules, which see the gradients flowing back through a
# module.
