# %% [markdown]
# # Lesson 09 — Pitfalls and debugging
#
# Hooks fail in a few typical ways: an error in the *forward* pass caused by a *backward* hook, a
# stored activation that changes after you stored it, memory that grows batch after batch, a hook
# that fires three times, or not at all. This lesson reproduces each one on torch 2.13, shows the
# real error text or a measured number, and gives the fix.
#
# You met most of these traps once already, each in its own lesson: stacked hooks in lesson 02,
# `detach()` without `clone()`, the kept graph and `module.forward(x)` in lesson 04, the in-place
# ReLU and `no_grad` in lesson 05, both again in lesson 06's CNN. Here they are gathered in one
# place, each with a way to debug it; what is new is `torch.save`, `torch.compile`, the
# transforms of `torch.func`, `copy.deepcopy`, `nn.DataParallel`, and finding (and removing)
# every hook left on a model.
#
# After this lesson you will be able to:
#
# - fix the in-place error of full backward hooks (`... is a view and is being modified inplace`)
#   with a forward hook that registers a tensor hook;
# - choose between `detach()` and `detach().clone()`, and measure what a stored output keeps alive;
# - explain why a hook fires N times after a re-run cell, and not at all through `module.forward(x)`;
# - say what fires under `torch.no_grad()`, for a module called twice, after `torch.save`, and
#   under `torch.compile`;
# - say what becomes of hooks under `torch.func.grad` and `torch.func.vmap`, in a copy made by
#   `copy.deepcopy`, and under `nn.DataParallel`;
# - find every hook still registered anywhere in a model (a leak detector), and remove them all
#   when the handles are lost.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_09_pitfalls.py` (add `-k find_registered_hooks` for one exercise; plain
# `pytest` grades every lesson).

# %%
import copy
import functools
import io
import pickle
import time
import weakref
from collections import OrderedDict

import matplotlib.pyplot as plt
import torch
from torch import nn

from hooked.notebook import check, hint, try_it

print("torch", torch.__version__)

# %% [markdown]
# ## Pitfall 1: full backward hooks and in-place operations
#
# (Lessons 05 and 06.) `register_full_backward_hook` (and `register_full_backward_pre_hook`) work by wrapping the
# module's output in a special autograd function, `BackwardHookFunction`, whose output is a *view*
# of the real output. If the next layer modifies that view in place, as `nn.ReLU(inplace=True)`
# does, autograd refuses: the error comes **in the forward pass**, at the ReLU, although the hook
# you added is a backward hook.

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(inplace=True), nn.Linear(5, 2))
x = torch.randn(3, 4)

for register in ("register_full_backward_hook", "register_full_backward_pre_hook"):
    handle = getattr(net[0], register)(lambda module, *grads: None)
    try:
        net(x)
        raise AssertionError("expected a RuntimeError")
    except RuntimeError as error:
        message = str(error)
    finally:
        handle.remove()
    print(f"{register}: RuntimeError in forward:\n  {message[:120]}...\n  ...{message[-60:]}")
    assert message.startswith("Output 0 of BackwardHookFunction is a view and is being modified inplace.")
    assert "You can fix this by cloning the output of the custom Function." in message

# %% [markdown]
# The message suggests cloning the output of the custom Function, but that function is PyTorch's
# own hook machinery, not your code. Two fixes that work:
#
# 1. **A forward hook that registers a tensor hook on the output.** The forward hook runs right
#    after the layer, before the ReLU touches the output; `output.register_hook(fn)` then calls
#    `fn(grad)` in backward with the gradient with respect to the value the layer produced, the
#    same gradient a full backward hook would see in `grad_output[0]`.
# 2. **`inplace=False`** on the ReLU.
#
# Below, both give the same gradient; the reference is a copy of the network without in-place ReLU.

# %%
reference = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
reference.load_state_dict(net.state_dict())
outputs = {}
reference[0].register_forward_hook(lambda module, args, output: outputs.update(linear=output))
reference_grad = torch.autograd.grad(reference(x).sum(), outputs["linear"])[0]

seen = {}


def grad_of_output(module, args, output):
    output.register_hook(lambda grad: seen.update(grad=grad))  # the tensor hook; returns None


with net[0].register_forward_hook(grad_of_output):
    net(x).sum().backward()
print("forward hook + tensor hook, with ReLU(inplace=True):\n", seen["grad"])
assert torch.allclose(seen["grad"], reference_grad)

net[1].inplace = False
with net[0].register_full_backward_hook(lambda module, grad_input, grad_output: seen.update(full=grad_output[0])):
    net(x.clone().requires_grad_()).sum().backward()  # an input that requires grad avoids a warning
net[1].inplace = True
print("full backward hook, with ReLU(inplace=False): same gradient:", torch.allclose(seen["full"], reference_grad))
assert torch.allclose(seen["full"], reference_grad)
print("zeros where the ReLU cut the output:", torch.equal(seen["grad"] == 0, outputs["linear"] <= 0))
assert torch.equal(seen["grad"] == 0, outputs["linear"] <= 0)

# retain_grad() on the stored output: the ReLU overwrote that tensor, so .grad is the gradient at
# the ReLU's output (here each row is the last Linear's weight summed over its outputs), no zeros.
kept = {}


def keep_output(module, args, output):
    output.retain_grad()
    kept.update(output=output)


with net[0].register_forward_hook(keep_output):
    net(x).sum().backward()
print("retain_grad() on the stored output:\n", kept["output"].grad)
assert torch.allclose(kept["output"].grad, net[2].weight.sum(0).expand(3, 5))
assert not torch.allclose(kept["output"].grad, reference_grad)

# torch.autograd.grad on the stored output gives that same gradient at the ReLU's output.
with net[0].register_forward_hook(lambda module, args, output: kept.update(output=output)):
    score = net(x).sum()
at_stored = torch.autograd.grad(score, kept["output"])[0]
same = torch.allclose(at_stored, net[2].weight.sum(0).expand(3, 5))
print("torch.autograd.grad on the stored output: the same as retain_grad():", same)
assert same

# Written as a lambda, the forward hook returns register_hook's handle, which replaces the output:
try:
    with net[0].register_forward_hook(lambda module, args, output: output.register_hook(print)):
        net(x)
    raise AssertionError("expected a TypeError")
except TypeError as error:
    print("lambda forward hook:", error)
    assert "must be Tensor, not RemovableHandle" in str(error)

# %% [markdown]
# ## Exercise 1: `grad_before_inplace_relu` · medium · about 20 min
#
# The exercise cell below starts with **broken code**: it registers a full backward hook on
# `layer`, which is followed in the model by `nn.ReLU(inplace=True)`, so it fails in forward with
# the error above, and it leaves its hook registered when it fails. In your lesson file, the
# broken code sits under a `raise NotImplementedError` line: delete that line, then fix the code.
#
# `grad_before_inplace_relu(model, layer, x)` must:
#
# - work wherever `layer` sits in `model`, at any depth (inside blocks of blocks);
# - run `model(x).sum().backward()` once (one forward pass, one backward pass, no
#   `create_graph`), leaving in the parameters' `.grad` the gradients of that one pass (your hooks
#   only record: none may replace an output or a gradient);
# - return the gradient of that sum with respect to the output of `layer` as the layer produced
#   it (before the in-place ReLU overwrote it): a tensor of the output's shape and dtype;
# - leave the model as it was: no hook of yours left on any module or parameter (nor a global
#   module hook), while hooks registered before the call stay, every module's `inplace` setting
#   and the model's train/eval mode as they were, and `x` unchanged; also when the forward or the
#   backward pass raises (the exception goes on to the caller).
#
# Traps: reading the gradient *after* the in-place ReLU (with `retain_grad()` on the stored
# output, as shown above, or `torch.autograd.grad` on it: you get the gradient at the ReLU's
# output, not the layer's); finding the ReLU as the next entry of `model.children()` (true only
# when `layer` is a direct child); a first forward pass just to learn the output's shape;
# switching `inplace` off for good, or setting every ReLU back to
# `inplace=True` (some were not); removing the hook only when nothing raised; a forward hook
# written as a `lambda` that returns `output.register_hook(...)`'s handle (last line of the
# demonstration above); cleaning up with `layer._forward_hooks.clear()`, which also removes hooks
# that were there before.

# %% tags=["exercise"]
# Exercise: grad_before_inplace_relu — write your code in this cell.


def grad_before_inplace_relu(model, layer, x):
    """Return the gradient of `model(x).sum()` with respect to the output of `layer`.

    `layer` is a submodule of `model` at any depth, called once per forward pass and followed by
    `nn.ReLU(inplace=True)`. Runs `model(x).sum().backward()` once, so the parameters' `.grad`
    hold that pass's gradients: one forward pass and one backward pass, without `create_graph`.
    Your hooks only record: they replace no output and no gradient. Returns the gradient with
    respect to the value `layer` produced (before the ReLU overwrote it), a tensor of the layer
    output's shape and dtype. Leaves the model as it was: no hook of yours left on its modules or
    parameters (hooks registered before stay), nor a global module hook, every module's `inplace`
    setting as it was, and its train/eval mode too; `x` is not changed. That holds also when the
    forward pass raises, and also when the backward pass raises; the exception reaches the caller.
    """
    # TODO: the code below fails in forward; delete this raise, then fix the code below it
    raise NotImplementedError("grad_before_inplace_relu is not written yet")
    # Broken: a full backward hook fails in forward here, and stays registered when it does.
    grads = []
    handle = layer.register_full_backward_hook(
        lambda module, grad_input, grad_output: grads.append(grad_output[0]))
    model(x).sum().backward()
    handle.remove()
    return grads[0]


# %%
check(grad_before_inplace_relu)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Take hold of the layer's output tensor right after the layer, before the ReLU changes it, and
# ask autograd to call you with that tensor's gradient during backward. Then remove what you
# registered even if something raises.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `layer.register_forward_hook(hook)` gives you `output` inside `hook(module, args, output)`;
# `output.register_hook(fn)` calls `fn(grad)` in backward. A `RemovableHandle` works as a context
# manager: `with layer.register_forward_hook(hook): ...` removes it on the way out, also on errors.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Replace the full backward hook by a forward hook whose body is
# `output.register_hook(lambda grad: grads.append(grad))`, run `model(x).sum().backward()` inside
# `with layer.register_forward_hook(...):`, and return `grads[0]`.
#
# </details>

# %% [markdown]
# ## Pitfall 2: `detach()` shares memory; `clone()` copies
#
# (Lesson 04, Trap 2.) A forward hook that stores `output.detach()` stores a tensor without a graph but with the
# **same memory** as the output (same `data_ptr()`). A later in-place operation on the output
# changes the stored value too. `output.detach().clone()` has its own memory.

# %%
torch.manual_seed(1)
net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True))
stored = {}


def store(module, args, output):
    stored.update(detached=output.detach(), cloned=output.detach().clone(), pointer=output.data_ptr())


with net[0].register_forward_hook(store):
    net(torch.randn(3, 4))
print("detach() shares the output's memory:", stored["detached"].data_ptr() == stored["pointer"])
print(f"min of detach():         {stored['detached'].min():.4f}  <- the in-place ReLU zeroed the negatives")
print(f"min of detach().clone(): {stored['cloned'].min():.4f}")
assert stored["detached"].data_ptr() == stored["pointer"] != stored["cloned"].data_ptr()
assert stored["detached"].min() == 0 and stored["cloned"].min() < 0
assert torch.equal(stored["detached"], stored["cloned"].relu())

# %% [markdown]
# ## Pitfall 3: storing outputs without `detach()` keeps the graph alive
#
# (Lesson 04, Trap 1, measured it with saved-tensor hooks; here is a way to measure it afterwards,
# from the stored tensors alone.) An output computed with gradients on carries `output.grad_fn`, the start of its autograd graph,
# and the graph holds the tensors autograd saved for backward (a `Linear` saves its input, a
# `ReLU` its output). A hook that appends raw outputs to a list keeps all of them alive, batch
# after batch. To *debug* such a leak, walk the graph from the stored tensors and add up the
# saved tensors it holds: each node exposes them as attributes named `_saved_*`. We skip the
# parameters, which live anyway.

# %%
def bytes_held_by_graphs(tensors, skip):
    """Bytes of the distinct storages saved in the autograd graphs of `tensors`, except `skip`."""
    storages, seen, stack = {}, set(), [t.grad_fn for t in tensors if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for attribute in dir(node):
            value = getattr(node, attribute) if attribute.startswith("_saved_") else None
            if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() not in skip:
                storages[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
        stack.extend(child for child, _ in node.next_functions if child is not None)
    return sum(storages.values())


torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
parameter_storages = {p.untyped_storage().data_ptr() for p in mlp.parameters()}


def collect(detach, steps=10):
    """KiB held by the stored outputs' graphs after each step of collecting the last layer's output."""
    kept, kib = [], []
    with mlp[4].register_forward_hook(lambda module, args, output: kept.append(output.detach() if detach else output)):
        for step in range(steps):
            mlp(torch.randn(32, 128))
            kib.append(bytes_held_by_graphs(kept, parameter_storages) / 1024)
    return kib, kept[0].untyped_storage().nbytes() / 1024


raw_kib, feature_kib = collect(detach=False)
detached_kib, _ = collect(detach=True)
print("KiB held, output stored as is:    ", raw_kib)
print("KiB held, output.detach() stored: ", detached_kib)
print(f"per step: {raw_kib[0]:.0f} KiB held for {feature_kib:.2f} KiB of features wanted")
# One step saves the input (32x128) and both ReLU outputs (32x512), float32.
assert raw_kib == [(32 * 128 + 2 * 32 * 512) * 4 / 1024 * (step + 1) for step in range(10)]
assert detached_kib == [0.0] * 10

fig, ax = plt.subplots(figsize=(7, 3))
steps = range(1, len(raw_kib) + 1)
ax.plot(steps, raw_kib, "o-", color="tab:red", label="kept.append(output)")
ax.plot(steps, detached_kib, "o-", color="tab:green", label="kept.append(output.detach())")
ax.set_xlabel("forward passes")
ax.set_ylabel("KiB held by the graphs")
ax.set_title("Memory kept alive by stored outputs (measured by walking grad_fn)")
ax.legend(frameon=False)
plt.tight_layout()
plt.show()

# %% [markdown]
# The red line grows by the same amount with every forward pass: each stored output holds its own
# pass's saved tensors. The green line, `detach()`, stays at 0.
#
# ## Pitfall 4: a re-run cell stacks hooks
#
# (Lesson 02.) Every `register_*` call adds a hook; running the same notebook cell again does not replace the
# old one. The loop below stands for running a registering cell three times: the hook then fires
# three times per forward pass. Keep the handle and remove it before registering again (or
# register in a `with` block).

# %%
layer = nn.Linear(2, 2)
calls = []
for run in range(3):  # the same cell, run three times
    layer.register_forward_hook(lambda module, args, output: calls.append("fired"))
layer(torch.randn(1, 2))
print("hooks registered:", len(layer._forward_hooks), "| firings in one forward pass:", len(calls))
assert len(layer._forward_hooks) == 3 and len(calls) == 3

layer._forward_hooks.clear()  # only to reset this demonstration; keep handles in real code
handle = None
calls.clear()
for run in range(3):
    if handle is not None:
        handle.remove()
    handle = layer.register_forward_hook(lambda module, args, output: calls.append("fired"))
layer(torch.randn(1, 2))
print("removing the old handle first: firings in one forward pass:", len(calls))
assert len(calls) == 1
handle.remove()

# %% [markdown]
# ## Pitfall 5: `module.forward(x)` skips every hook
#
# (Lesson 04.) Hooks are run by `module.__call__`, which calls `forward` in between. Calling `forward` directly
# runs the computation and nothing else.

# %%
calls = []
with layer.register_forward_pre_hook(lambda module, args: calls.append("pre")), \
        layer.register_forward_hook(lambda module, args, output: calls.append("forward")):
    layer.forward(torch.randn(1, 2))
    print("after layer.forward(x):", calls)
    layer(torch.randn(1, 2))
    print("after layer(x):        ", calls)
assert calls == ["pre", "forward"]

# %% [markdown]
# ## Pitfall 6: under `torch.no_grad()`, forward hooks fire, full backward hooks are not installed
#
# (Lessons 04 and 05.) Forward hooks fire whatever the grad mode. A full backward hook works by wrapping the module's
# output in `BackwardHookFunction` (Pitfall 1), and it does so only when gradients are on: under
# `no_grad` the next layer receives the plain output, and the in-place error of Pitfall 1 does not
# happen either. So code that works in evaluation can fail in training. A pre-hook on the ReLU
# shows what it receives.

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 3), nn.ReLU(inplace=True))
fired, relu_input = [], []
handles = [net[0].register_forward_hook(lambda module, args, output: fired.append("forward hook")),
           net[0].register_full_backward_hook(lambda module, grad_input, grad_output: fired.append("backward hook")),
           net[1].register_forward_pre_hook(lambda module, args: relu_input.append(type(args[0].grad_fn).__name__))]
with torch.no_grad():
    net(torch.randn(2, 3))
print("under no_grad: fired", fired, "| the ReLU's input has grad_fn", relu_input[-1], "| no in-place error")
assert fired == ["forward hook"] and relu_input == ["NoneType"]

net[1].inplace = False  # with gradients on, the in-place ReLU would fail as in Pitfall 1
net(torch.randn(2, 3, requires_grad=True)).sum().backward()
print("with gradients on: fired", fired[1:], "| the ReLU's input has grad_fn", relu_input[-1])
assert fired[1:] == ["forward hook", "backward hook"] and relu_input[-1] == "BackwardHookFunctionBackward"
for handle in handles:
    handle.remove()

# %% [markdown]
# ## Pitfall 7: a module used twice fires its hooks twice
#
# Hooks belong to the module object, not to a place in the model. A module called twice in one
# forward pass (shared weights) fires its hooks on both calls. A hook that stores
# `activations[name] = output` keeps only the last call; append to a list to keep both.

# %%
class SharedTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(3, 3)

    def forward(self, x):
        return self.shared(torch.tanh(self.shared(x)))


model = SharedTwice()
by_name, every_call = {}, []


def record(module, args, output):
    by_name["shared"] = output.detach().clone()
    every_call.append(output.detach().clone())


with model.shared.register_forward_hook(record):
    out = model(torch.randn(2, 3))
print("firings in one forward pass:", len(every_call), "| the dict keeps", len(by_name), "entry: the last call")
assert len(every_call) == 2 and torch.equal(by_name["shared"], every_call[1]) and torch.equal(every_call[1], out)
assert not torch.equal(every_call[0], every_call[1])

# %% [markdown]
# ## Pitfall 8: `torch.save(model)` pickles the hooks
#
# `torch.save(model)` pickles the whole module object, hook dicts included. A hook defined with
# `lambda` cannot be pickled, so saving fails. Save the `state_dict()` instead: the parameters
# and buffers only, no hooks. Load it into a fresh model.

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 2))
net[0].register_forward_hook(lambda module, args, output: None)
try:
    torch.save(net, io.BytesIO())
    raise AssertionError("expected a PicklingError")
except pickle.PicklingError as error:
    print("torch.save(model):", type(error).__name__, "-", error)
    assert "Can't pickle <function <lambda>" in str(error)

buffer = io.BytesIO()
torch.save(net.state_dict(), buffer)
buffer.seek(0)
fresh = nn.Sequential(nn.Linear(3, 2))
fresh.load_state_dict(torch.load(buffer))
print("state_dict saved and loaded; same weights:", torch.equal(fresh[0].weight, net[0].weight),
      "| hooks on the fresh model:", len(fresh[0]._forward_hooks))
assert torch.equal(fresh[0].weight, net[0].weight) and len(fresh[0]._forward_hooks) == 0

# %% [markdown]
# ## Pitfall 9: `torch.compile` and hooks
#
# `torch.compile` traces the module, hooks included, when it first runs. On torch 2.13 (the
# `backend="eager"` below only skips code generation, to keep this cell fast):
#
# - hooks registered **before** compiling fire on every compiled call;
# - a hook added **after** compiling, on a *submodule* of a model that had no hooks, is silently
#   ignored by the compiled model, while calling the plain module still fires it. The cause is
#   torch's default `torch._dynamo.config.skip_nnmodule_hook_guards=True`: the compiled code does
#   not check submodules for new hooks. After `torch._dynamo.reset()`, which throws the compiled
#   code away, or with that flag set to `False`, the compiled model fires it too;
# - a hook added after compiling on the compiled model's own module (the root) did fire.
#
# So register hooks before compiling. Other torch versions may behave differently; the cell
# prints the version it ran on.

# %%
start = time.perf_counter()
torch.manual_seed(0)
x = torch.randn(2, 3)

before = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
before_calls = []
before[0].register_forward_hook(lambda module, args, output: before_calls.append("fired"))
compiled_before = torch.compile(before, backend="eager")
for _ in range(3):
    compiled_before(x)
print(f"torch {torch.__version__}: hook registered before compiling, 3 compiled calls ->", len(before_calls), "firings")
assert len(before_calls) == 3


class HookFree(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        return self.linear(x).relu()


def submodule_hook_firings(skip_guards):
    """Compile a hook-free model, then hook its submodule: [firings in a compiled call, in a plain call]."""
    torch._dynamo.reset()
    model, calls = HookFree(), []
    with torch._dynamo.config.patch(skip_nnmodule_hook_guards=skip_guards):
        compiled = torch.compile(model, backend="eager")
        compiled(x)
        with model.linear.register_forward_hook(lambda module, args, output: calls.append("fired")):
            compiled(x)
            firings = [len(calls)]
            model(x)
        firings.append(len(calls) - firings[0])
    return firings, model, compiled


print("skip_nnmodule_hook_guards by default:", torch._dynamo.config.skip_nnmodule_hook_guards)
assert torch._dynamo.config.skip_nnmodule_hook_guards is True
firings, after, compiled_after = submodule_hook_firings(skip_guards=True)
print("submodule hook added after compiling: compiled call ->", firings[0], "firings, plain call ->", firings[1])
assert firings == [0, 1]
after_calls = []
after.linear.register_forward_hook(lambda module, args, output: after_calls.append("fired"))
torch._dynamo.reset()
compiled_after(x)
print("after torch._dynamo.reset(): compiled call ->", len(after_calls), "firing")
assert after_calls == ["fired"]
root_calls = []
after.register_forward_hook(lambda module, args, output: root_calls.append("fired"))
compiled_after(x)
print("hook added after compiling on the root module: compiled call ->", len(root_calls), "firing")
assert root_calls == ["fired"]
firings, _, _ = submodule_hook_firings(skip_guards=False)
print("with skip_nnmodule_hook_guards=False: compiled call ->", firings[0], "firing")
assert firings == [1, 1]
seconds = time.perf_counter() - start
print(f"this cell took {seconds:.1f} s")
torch._dynamo.reset()  # free the compiled code

# %% [markdown]
# ## Pitfall 10: `torch.func.grad` and full backward hooks
#
# `torch.func.grad(f)(x)` differentiates the function `f` itself: no `backward()` is called, and
# inside `f` the tensors are wrapped for the transform. A full backward hook (or pre-hook) works
# by passing the module's tensors through `BackwardHookFunction`, a custom autograd function
# (Pitfall 1), and a custom function can run under the transforms of `torch.func` only if it
# defines a `setup_context` method, which `BackwardHookFunction` does not, on torch 2.13
# (pytorch/pytorch#99556). So `torch.func.grad` of a model with a full backward hook raises, and
# it raises in the **forward** pass, inside the module's call: before `forward` runs when the
# gradient is taken with respect to the input, and after it, before the call returns, when it is
# taken with respect to the parameters only (`torch.func.functional_call`, the way `torch.func`
# differentiates a model's parameters). Under `vmap` alone a full backward hook does not raise,
# and it is silently lost instead: inside `vmap` the module's input and output report
# `requires_grad=False` (its parameters still report `True`), so the hook's function is not
# applied, and a `backward()` through the output of the `vmap` call computes the parameters'
# gradients without calling the hook (pytorch/functorch#638). A forward hook that registers a
# tensor hook (the fix of Pitfall 1) works under `torch.func.grad`: the tensor hook is called with
# the gradient of the layer's output.

# %%
from torch.func import functional_call
from torch.func import grad as func_grad
from torch.func import vmap
from torch.nn.modules._functions import BackwardHookFunction

FUNC_ERROR = ("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), "
              "it must override the setup_context staticmethod.")
torch.manual_seed(0)
x = torch.randn(3)
for register in ("register_full_backward_hook", "register_full_backward_pre_hook"):
    layer, reached = nn.Linear(3, 1), []

    def loss_of(x):
        out = layer(x)
        reached.append("the layer returned")
        return out.sum()

    getattr(layer, register)(lambda module, *grads: None)
    try:
        func_grad(loss_of)(x)
        raise AssertionError("expected a RuntimeError")
    except RuntimeError as error:
        message = str(error)
    print(f"{register}: RuntimeError: {message}")
    print("  the layer returned before the error:", bool(reached))
    assert message.startswith(FUNC_ERROR) and reached == []
print("BackwardHookFunction defines setup_context:", "setup_context" in vars(BackwardHookFunction))
assert "setup_context" not in vars(BackwardHookFunction)


def runtime_error_of(call):
    try:
        call()
    except RuntimeError as error:
        return error
    raise AssertionError("expected a RuntimeError")


class Traced(nn.Linear):
    """A Linear that notes when its forward runs."""

    def forward(self, x):
        ran.append("forward")
        return super().forward(x)


traced, ran = Traced(3, 1), []
traced.register_full_backward_hook(lambda module, grad_input, grad_output: None)
on_input = runtime_error_of(lambda: func_grad(lambda x: traced(x).sum())(x))
print("with respect to the input: raised, and forward ran before the error:", ran == ["forward"])
assert str(on_input).startswith(FUNC_ERROR) and ran == []
parameters = dict(traced.named_parameters())
on_parameters = runtime_error_of(lambda: func_grad(lambda p: functional_call(traced, p, (x,)).sum())(parameters))
print("with respect to the parameters (functional_call): raised, and forward ran before the error:",
      ran == ["forward"])
assert str(on_parameters).startswith(FUNC_ERROR) and ran == ["forward"]

hooked_layer, backward_calls, inside = nn.Linear(3, 1), [], {}
hooked_layer.register_full_backward_hook(lambda module, grad_input, grad_output: backward_calls.append(1))
hooked_layer.register_forward_hook(lambda module, args, output: inside.update(
    input=args[0].requires_grad, output=output.requires_grad, weight=module.weight.requires_grad))
out = vmap(hooked_layer)(torch.randn(5, 3, requires_grad=True))
out.sum().backward()
print("vmap alone, with a full backward hook: output", tuple(out.shape), "| requires_grad inside vmap:", inside)
print("after out.sum().backward(): the hook ran", len(backward_calls), "times, weight.grad is set:",
      hooked_layer.weight.grad is not None)
assert tuple(out.shape) == (5, 1) and inside == {"input": False, "output": False, "weight": True} and out.requires_grad
assert backward_calls == [] and hooked_layer.weight.grad is not None

seen = []
layer = nn.Linear(3, 1)
layer.register_forward_hook(lambda module, args, output: output.register_hook(seen.append) and None)
gradient = func_grad(lambda x: layer(x).sum())(x)
print("forward hook + tensor hook under torch.func.grad: the tensor hook got", len(seen), "gradient,",
      "d sum / d output =", torch._C._functorch.get_unwrapped(seen[0]).tolist(), "| wrapped for the transform:",
      torch._C._functorch.is_gradtrackingtensor(seen[0]))
print("torch.func.grad returned the gradient with respect to x, the layer's weight:",
      torch.allclose(gradient, layer.weight[0]))
assert len(seen) == 1 and torch._C._functorch.get_unwrapped(seen[0]).tolist() == [1.0]
assert torch._C._functorch.is_gradtrackingtensor(seen[0])
assert torch.allclose(gradient, layer.weight[0])

# %% [markdown]
# The tensor hook's gradient is wrapped for the transform (a `GradTrackingTensor`, which
# `torch._C._functorch.get_unwrapped` opens above); use it inside the transform, as autograd gives it.
#
# ## Pitfall 11: under `torch.func.vmap`, a forward hook sees one sample
#
# `vmap(model)(batch)` runs `model` as if on **one** sample: inside, every tensor computed from
# the batch has the shape of a single sample (the parameters keep theirs), and what a hook
# receives is no exception (pytorch/functorch#488). A hook that checks `output.shape[0]` for the
# batch size, or stores `output` to look at later, gets the per-sample shape. What it stores is a
# `BatchedTensor`, a wrapper that belongs to the `vmap` call: after the call it still reports the
# per-sample shape. To get the activations of the whole batch, return them from the function that
# `vmap` runs: `vmap` then stacks them as it stacks the output.

# %%
torch.manual_seed(0)
layer = nn.Linear(3, 2)
caught = {}
layer.register_forward_hook(lambda module, args, output: caught.update(input=args[0], output=output,
                                                                      weight=module.weight))
batch = torch.randn(5, 3)
out = vmap(layer)(batch)
print("vmap(layer)(batch): batch", tuple(batch.shape), "-> output", tuple(out.shape))
print("the hook saw input", tuple(caught["input"].shape), "and output", tuple(caught["output"].shape),
      "| the weight", tuple(caught["weight"].shape), "(a BatchedTensor:",
      f"{torch._C._functorch.is_batchedtensor(caught['weight'])})")
print("the stored output, after the call: shape", tuple(caught["output"].shape), "| a BatchedTensor:",
      torch._C._functorch.is_batchedtensor(caught["output"]))
assert tuple(out.shape) == (5, 2)
assert tuple(caught["input"].shape) == (3,) and tuple(caught["output"].shape) == (2,)
assert tuple(caught["weight"].shape) == (2, 3) and not torch._C._functorch.is_batchedtensor(caught["weight"])
assert torch._C._functorch.is_batchedtensor(caught["output"])

layer(batch)
print("a plain call, layer(batch): the hook saw output", tuple(caught["output"].shape))
assert tuple(caught["output"].shape) == (5, 2)


def output_and_activation(x):
    return layer(x), caught["output"]  # what the hook caught, returned from the vmapped function


out, activations = vmap(output_and_activation)(batch)
print("returned from the vmapped function: activations", tuple(activations.shape), "| a BatchedTensor:",
      torch._C._functorch.is_batchedtensor(activations), "| equal to layer(batch):",
      torch.allclose(activations, layer(batch)))
assert tuple(activations.shape) == (5, 2) and not torch._C._functorch.is_batchedtensor(activations)
assert torch.allclose(activations, layer(batch))
layer._forward_hooks.clear()  # only to end this demonstration; keep handles in real code

# %% [markdown]
# ## Pitfall 12: `copy.deepcopy` copies a module's hooks
#
# `copy.deepcopy(model)` copies every attribute of every module, the hook dicts too. The copy
# fires the same hooks, with the copy as `module`. A hook that is a plain function (a `def`, a
# `lambda`, a closure) is not copied (Python copies a function as itself), so a hook function that
# writes into a dict or a list of yours writes into the same one for both models: the copy's
# activations overwrite the original's. A hook that is an object is copied, with what it holds: a
# `functools.partial(save, store)`, or a bound method `recorder.save`, writes, for the copy, into
# a copy of `store` (or of `recorder`), which none of your names reaches. The original's handle
# removes the hook from the original only; the copy keeps it, and no handle reaches it.
# Copy a model without hooks (remove them first, or register them on the copy afterwards); to
# find and remove what a copy carries, Exercises 2 and 3 below do just that.

# %%
torch.manual_seed(0)
original = nn.Sequential(nn.Linear(3, 2))
activations = {}
handle = original[0].register_forward_hook(lambda module, args, output: activations.update(linear=output,
                                                                                          module=module))
twin = copy.deepcopy(original)
print("hooks on the copy's layer:", len(twin[0]._forward_hooks), "| the same function:",
      list(twin[0]._forward_hooks.values())[0] is list(original[0]._forward_hooks.values())[0])
assert len(twin[0]._forward_hooks) == 1
assert list(twin[0]._forward_hooks.values())[0] is list(original[0]._forward_hooks.values())[0]

x = torch.randn(4, 3)
original(x)
twin(x + 1)
print("after original(x) then twin(x + 1), activations['linear'] is the copy's:",
      torch.equal(activations["linear"], twin[0](x + 1)))
assert torch.equal(activations["linear"], twin[0](x + 1))
print("the hook's `module` in that call is the copy's layer:", activations["module"] is twin[0])
assert activations["module"] is twin[0]

handle.remove()
activations.clear()
original(x)
twin(x)
print("after handle.remove(): hooks on the original", len(original[0]._forward_hooks), "| on the copy",
      len(twin[0]._forward_hooks), "| the copy still fired it:", "linear" in activations)
assert len(original[0]._forward_hooks) == 0 and len(twin[0]._forward_hooks) == 1 and "linear" in activations


def save(store, module, args, output):
    store["linear"] = output


class Recorder:
    def __init__(self):
        self.outputs = []

    def save(self, module, args, output):
        self.outputs.append(output)


store, recorder, saver = {}, Recorder(), nn.Linear(3, 2)
saver.register_forward_hook(functools.partial(save, store))
saver.register_forward_hook(recorder.save)
saver_twin = copy.deepcopy(saver)
copied_partial, copied_method = saver_twin._forward_hooks.values()
saver_twin(x)
print("a functools.partial hook, in the copy: wrote into our store:", "linear" in store,
      "| into a copy of it:", "linear" in copied_partial.args[0])
print("a bound method hook, in the copy: appended to our recorder:", len(recorder.outputs),
      "| to a copy of it:", len(copied_method.__self__.outputs))
assert copied_partial.args[0] is not store and store == {} and "linear" in copied_partial.args[0]
assert copied_method.__self__ is not recorder and recorder.outputs == [] and len(copied_method.__self__.outputs) == 1

# %% [markdown]
# ## Pitfall 13: `nn.DataParallel` and state a hook sets on its module
#
# `nn.DataParallel(model)` splits each batch across GPUs. On several GPUs, every call runs
# **replicas** of the model, made for that call and thrown away after it (pytorch/pytorch#11476):
# `DataParallel.forward` calls `self.replicate(self.module, ...)`, and `replicate`
# (`torch/nn/parallel/replicate.py`) makes each module's replica with
# `module._replicate_for_data_parallel()` (`torch/nn/modules/module.py`), which copies the module's
# `__dict__` with `self.__dict__.copy()`. That copy is shallow: the replica shares its module's hook
# dicts, so hooks fire on every replica, with the replica as `module`; but an attribute a hook
# sets on `module` (`module.last_output = output`, a counter) lands in the replica's own
# `__dict__` and is lost with it. What a hook writes into an object of yours (a dict, a list) is
# kept. The course runs on the CPU, so the lesson can only read that code, and run the first step
# of it on the CPU.
#
# Without a GPU, as this course runs, `DataParallel` makes no replica at all: on torch 2.13 its
# `__init__` finds no device type (or Apple's `mps`) and sets `device_ids = []`, and `forward`
# then calls the module itself (`if not self.device_ids: return self.module(*inputs, **kwargs)`);
# with one GPU it calls the module itself too (`if len(self.device_ids) == 1:`). The cell shows both: the call on this
# machine keeps the state; a replica made as `replicate` makes it does not.
#
# PyTorch itself recommends `DistributedDataParallel` (DDP, lesson 13) instead: a warning in
# `DataParallel`'s docstring says "It is recommended to use DistributedDataParallel, instead of
# this class, to do multi-GPU training, even if there is only a single node." DDP's forward calls
# its own module (`self.module(*inputs, **kwargs)`), not a replica made for the call, so what a
# hook sets on the module stays there. The cell checks both texts in torch's source.

# %%
import inspect


class Counted(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x)


def remember_output(module, args, output):
    module.last_output = output.detach()  # state set on the module
    shapes.append(tuple(output.shape))  # state written into a list of ours


torch.manual_seed(0)
model, shapes = Counted(), []
model.register_forward_hook(remember_output)
if torch.cuda.is_available():  # this lesson runs on the CPU; a CUDA machine would give DataParallel its GPUs
    print(f"{torch.cuda.device_count()} GPU(s) here: the call without a GPU is not shown")
else:
    parallel = nn.DataParallel(model)
    parallel(torch.randn(4, 3))
    print("GPUs:", torch.cuda.device_count(), "| DataParallel's device_ids:", parallel.device_ids,
          "| its module is the model:", parallel.module is model)
    print("after parallel(batch): model.last_output is set:", hasattr(model, "last_output"), "| shapes:", shapes)
    assert parallel.device_ids == [] and parallel.module is model
    assert hasattr(model, "last_output") and shapes == [(4, 2)]
init_source = inspect.getsource(nn.DataParallel.__init__)
assert "if device_type is None or device_type == \"mps\":" in init_source and "self.device_ids = []" in init_source
forward_source = inspect.getsource(nn.DataParallel.forward)
assert "if not self.device_ids:\n                return self.module(*inputs, **kwargs)" in forward_source
assert "if len(self.device_ids) == 1:\n                return self.module(*inputs[0], **module_kwargs[0])" in forward_source
assert "replicas = self.replicate(self.module" in forward_source

replicate_source = inspect.getsource(torch.nn.parallel.replicate)
replica_source = inspect.getsource(nn.Module._replicate_for_data_parallel)
print("replicate() makes each replica with:", "module._replicate_for_data_parallel()" in replicate_source,
      "| which copies the __dict__ with:", "replica.__dict__ = self.__dict__.copy()" in replica_source)
assert "replica = module._replicate_for_data_parallel()" in replicate_source
assert "replica.__dict__ = self.__dict__.copy()" in replica_source

fresh, shapes = Counted(), []
fresh.register_forward_hook(remember_output)
replica = fresh._replicate_for_data_parallel()  # the first step of replicate(), on the CPU
replica(torch.randn(2, 3))
print("a replica shares the hook dict:", replica._forward_hooks is fresh._forward_hooks,
      "| after replica(batch): replica.last_output set:", hasattr(replica, "last_output"),
      "| fresh.last_output set:", hasattr(fresh, "last_output"), "| shapes:", shapes)
assert replica._forward_hooks is fresh._forward_hooks
assert hasattr(replica, "last_output") and not hasattr(fresh, "last_output") and shapes == [(2, 2)]

recommendation = " ".join(nn.DataParallel.__doc__.split())
ddp_forward = inspect.getsource(nn.parallel.DistributedDataParallel._run_ddp_forward)
print("DataParallel's docstring:", recommendation[recommendation.index("It is recommended"):].split(" See:")[0])
assert ("It is recommended to use :class:`~torch.nn.parallel.DistributedDataParallel`, instead of this class, "
        "to do multi-GPU training, even if there is only a single node.") in recommendation
assert ddp_forward.count("return self.module(*inputs, **kwargs)") == 2 and "replicate" not in ddp_forward

# %% [markdown]
# ## Debugging: which hooks are still registered?
#
# A hook you forgot to remove keeps firing, keeps memory alive, and breaks `torch.save`. A
# module keeps its hooks in ordered dicts `{id: hook}`, one per kind. The table includes the four
# `state_dict` hooks, which lesson 10 teaches; for this lesson it is enough to know where they are
# kept. On torch 2.13:
#
# | registered with | kept in the module's dict | kind (for the exercise) |
# |---|---|---|
# | `register_forward_pre_hook` | `_forward_pre_hooks` | `"forward_pre"` |
# | `register_forward_hook` | `_forward_hooks` | `"forward"` |
# | `register_full_backward_pre_hook` | `_backward_pre_hooks` | `"backward_pre"` |
# | `register_full_backward_hook` | `_backward_hooks` | `"backward"` |
# | `register_state_dict_pre_hook` | `_state_dict_pre_hooks` | `"state_dict_pre"` |
# | `register_state_dict_post_hook` | `_state_dict_hooks` | `"state_dict"` |
# | `register_load_state_dict_pre_hook` | `_load_state_dict_pre_hooks` (a wrapper whose `.hook` is yours) | `"load_state_dict_pre"` |
# | `register_load_state_dict_post_hook` | `_load_state_dict_post_hooks` | `"load_state_dict_post"` |
#
# and a parameter keeps `param.register_hook` hooks in `param._backward_hooks` (None until the
# first one) and `register_post_accumulate_grad_hook` hooks in `param._post_accumulate_grad_hooks`.
# `with_kwargs=True` and `always_call=True` do **not** get dicts of their own: the hook goes into
# `_forward_hooks` (or `_forward_pre_hooks`), and the flag into a separate dict of `{id: True}`.
# Global hooks (`torch.nn.modules.module.register_module_forward_hook`) live in the module
# `torch.nn.modules.module`, not in any model. The cell below registers one hook of each kind and
# finds the dict that holds it.

# %%
where_kept = {"register_forward_pre_hook": "_forward_pre_hooks", "register_forward_hook": "_forward_hooks",
              "register_full_backward_pre_hook": "_backward_pre_hooks",
              "register_full_backward_hook": "_backward_hooks",
              "register_state_dict_pre_hook": "_state_dict_pre_hooks",
              "register_state_dict_post_hook": "_state_dict_hooks",
              "register_load_state_dict_pre_hook": "_load_state_dict_pre_hooks",
              "register_load_state_dict_post_hook": "_load_state_dict_post_hooks"}
demo = nn.Linear(2, 2)
for method, attribute in where_kept.items():
    registered = lambda *args: None  # noqa: E731
    handle = getattr(demo, method)(registered)
    holders = [name for name, value in vars(demo).items() if isinstance(value, dict) and handle.id in value]
    stored = getattr(demo, attribute)[handle.id]
    print(f"{method:35} -> {holders}, stored as {type(stored).__name__}")
    assert holders == [attribute]
    wrapped = method == "register_load_state_dict_pre_hook"  # a _WrappedHook keeps yours as .hook
    assert (type(stored).__name__ == "_WrappedHook") is wrapped and (stored.hook if wrapped else stored) is registered
    handle.remove()

handle = demo.register_forward_hook(lambda module, args, kwargs, output: None, with_kwargs=True, always_call=True)
holders = {name: value[handle.id] for name, value in vars(demo).items() if isinstance(value, dict) and handle.id in value}
print("with_kwargs=True, always_call=True ->", holders)
assert list(holders) == ["_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called"]
assert holders["_forward_hooks_with_kwargs"] is True and holders["_forward_hooks_always_called"] is True
handle.remove()

global_hook = lambda module, args, output: None  # noqa: E731
with torch.nn.modules.module.register_module_forward_hook(global_hook) as handle:
    holders = [name for name, value in vars(demo).items() if isinstance(value, dict) and handle.id in value]
    print("a global forward hook: in the model's dicts", holders, "| in torch.nn.modules.module._global_forward_hooks:",
          torch.nn.modules.module._global_forward_hooks[handle.id] is global_hook)
    assert holders == [] and torch.nn.modules.module._global_forward_hooks[handle.id] is global_hook

print("a parameter's _backward_hooks and _post_accumulate_grad_hooks before any hook:",
      demo.weight._backward_hooks, demo.weight._post_accumulate_grad_hooks)
assert demo.weight._backward_hooks is None and demo.weight._post_accumulate_grad_hooks is None
handle = demo.weight.register_hook(lambda grad: None)
print("after register_hook:", demo.weight._backward_hooks)
assert len(demo.weight._backward_hooks) == 1
handle.remove()
handle = demo.weight.register_post_accumulate_grad_hook(lambda parameter: None)
print("after register_post_accumulate_grad_hook:", demo.weight._post_accumulate_grad_hooks)
assert len(demo.weight._post_accumulate_grad_hooks) == 1
demo.weight.requires_grad_(False)  # frozen after the hook was registered: the hook stays in the dict
print("frozen afterwards, the parameter still holds", len(demo.weight._post_accumulate_grad_hooks), "hook")
assert len(demo.weight._post_accumulate_grad_hooks) == 1
demo.weight.requires_grad_(True)
handle.remove()

# %% [markdown]
# A module or a parameter can be reachable under two names: a module shared by two places of a
# model, or tied weights (one `Parameter` assigned to two modules, as language models tie their
# embedding and output layers). It is one object, with one set of hook dicts. `named_modules()`
# and `named_parameters()` list it once, under its first name; `remove_duplicate=False`,
# `state_dict()`, and a walk of your own down `named_children()` meet it under both names.

# %%
class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(3, 3)])
        self.again = self.blocks[0]  # the same module under a second name
        self.decoder = nn.Linear(3, 3)
        self.decoder.weight = self.blocks[0].weight  # tied: one Parameter, two names


def walk(module, name=""):
    """A walk of one's own, down named_children()."""
    yield name
    for child_name, child in module.named_children():
        yield from walk(child, f"{name}.{child_name}" if name else child_name)


tied = Tied()
print("named_modules():                      ", [name for name, _ in tied.named_modules()])
print("named_modules(remove_duplicate=False):", [name for name, _ in tied.named_modules(remove_duplicate=False)])
print("a walk down named_children():         ", list(walk(tied)))
print("named_parameters():", [name for name, _ in tied.named_parameters()])
print("state_dict():      ", list(tied.state_dict()))
assert [name for name, _ in tied.named_modules()] == ["", "blocks", "blocks.0", "decoder"]
assert [name for name, _ in tied.named_modules(remove_duplicate=False)] == ["", "blocks", "blocks.0", "again", "decoder"]
assert list(walk(tied)) == ["", "blocks", "blocks.0", "again", "decoder"]
assert [name for name, _ in tied.named_parameters()] == ["blocks.0.weight", "blocks.0.bias", "decoder.bias"]
assert list(tied.state_dict()) == ["blocks.0.weight", "blocks.0.bias", "again.weight", "again.bias",
                                   "decoder.weight", "decoder.bias"]
with tied.again.register_forward_hook(lambda module, args, output: None) as handle:
    print("a hook registered through tied.again sits in tied.blocks[0]'s dict:", handle.id in tied.blocks[0]._forward_hooks)
    assert handle.id in tied.blocks[0]._forward_hooks

# %% [markdown]
# ## Exercise 2: `find_registered_hooks` · medium · about 20 min
#
# Write `find_registered_hooks(model)`, a leak detector. It returns a list with one triple
# `(name, kind, hook)` for every hook registered on `model` or any of its submodules (at any
# depth, inside `nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict` alike) or their parameters:
#
# - `name`: the module's name as `model.named_modules()` gives it (`""` for `model` itself), or,
#   for a hook on a parameter, the parameter's name as `model.named_parameters()` gives it
#   (e.g. `"blocks.0.weight"`);
# - `kind`: one of the strings of the table above (`"forward_pre"`, `"forward"`,
#   `"backward_pre"`, `"backward"`, `"state_dict_pre"`, `"state_dict"`, `"load_state_dict_pre"`,
#   `"load_state_dict_post"`), or `"tensor"` for a parameter's `register_hook` hook and
#   `"post_accumulate_grad"` for its `register_post_accumulate_grad_hook` hook;
# - `hook`: the function registered (for `"load_state_dict_pre"`, PyTorch's wrapper around it is
#   accepted too).
#
# One triple per registration (a `with_kwargs=True` hook counts once; the same function
# registered twice on one module counts twice), in any order. A shared module or a tied weight is
# listed once, under the name `named_modules()` or `named_parameters()` gives it. A model with
# no hook gives `[]`; global hooks (of every kind, in `torch.nn.modules.module`) are not the
# model's. It must not change the model.
#
# Traps: looking only at the root module, or skipping it (the model's own hooks count too);
# forgetting backward pre-hooks or state-dict hooks; reporting the `with_kwargs`/`always_call`
# flag dicts as hooks; a parameter's `_backward_hooks` is `None` until a hook is registered;
# skipping parameters that do not require grad (one frozen after its hook was registered keeps
# the hook); a walk of your own over `named_children()`, or each module's own parameters, which
# meets a shared module or a tied weight twice.

# %% tags=["exercise"]
# Exercise: find_registered_hooks — write your code in this cell.


def find_registered_hooks(model):
    """List every hook registered on `model`, its submodules at any depth, and their parameters.

    Returns a list of `(name, kind, hook)` triples, one per registration, in any order:
    `name` is the module's name in `model.named_modules()` ("" for the model itself) or, for a
    parameter's hook, the parameter's name in `model.named_parameters()`; `kind` is one of
    "forward_pre", "forward", "backward_pre", "backward", "state_dict_pre", "state_dict",
    "load_state_dict_pre", "load_state_dict_post" (module hooks), "tensor" or
    "post_accumulate_grad" (parameter hooks); `hook` is the registered function (for
    "load_state_dict_pre", PyTorch's wrapper around it is accepted too). A module or parameter
    reachable under two names (a shared module, tied weights) is listed once, under the name
    those two methods give it. Global hooks (those of `torch.nn.modules.module`) are not
    included. A model without hooks gives []. The model is not changed.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("find_registered_hooks is not written yet")


# %%
check(find_registered_hooks)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Visit every submodule with its name, and for each one read the eight hook dicts of the table;
# then visit every parameter with its name and read its two tensor-hook dicts. Each value of a
# hook dict is one hook; the keys are handle ids.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.named_modules()` and `model.named_parameters()` give `(name, object)` pairs at every
# depth, the model itself first under `""`. A dict from kind to attribute name
# (`{"forward": "_forward_hooks", ...}`) with `getattr(module, attribute).values()` reads them all;
# a parameter's dicts may be `None`, so use `getattr(parameter, attribute) or {}`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# for name, module in model.named_modules():
#     for kind, attribute in module_dicts.items():
#         found += [(name, kind, hook) for hook in getattr(module, attribute).values()]
# ```
# and the same loop over `model.named_parameters()` with the two parameter dicts.
#
# </details>

# %% [markdown]
# With the detector, a leak shows up by name. Below, a helper registers hooks on a model and
# forgets one. Once `find_registered_hooks` is done, the cell prints the one hook left:
# `("1.0.weight", "tensor")`.

# %%
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ModuleList([nn.Linear(4, 4), nn.ReLU()]))


def leaky_capture(model):
    handles = [model[0].register_forward_hook(lambda module, args, output: None),
               model[1][0].register_full_backward_pre_hook(lambda module, grad_output: None)]
    model[1][0].weight.register_hook(lambda grad: None)  # its handle is dropped: a leak
    for handle in handles:
        handle.remove()


with try_it():
    leaky_capture(model)
    leaks = find_registered_hooks(model)
    print("still registered:", [(name, kind) for name, kind, hook in leaks])
    assert [(name, kind) for name, kind, hook in leaks] == [("1.0.weight", "tensor")]

# %% [markdown]
# ## Exercise 3: `remove_all_hooks` · medium · about 15 min
#
# When handles are lost, the hook dicts are the only way left to clean a model. Write
# `remove_all_hooks(model)`: it removes every hook of the ten kinds of Exercise 2 from `model`,
# its submodules at any depth and their parameters, clears the `with_kwargs`/`always_call` flag
# dicts (`_forward_pre_hooks_with_kwargs`, `_forward_hooks_with_kwargs`,
# `_forward_hooks_always_called`), and returns how many hooks it removed (one per registration;
# flags do not count; a shared module or a tied weight is one object, whose hooks count once).
# Global hooks stay registered. Afterwards no removed hook fires in forward, backward,
# `state_dict()` or `load_state_dict()`, and hooks registered again work as usual.
#
# Empty each dict in place with `.clear()`. Setting it to `None` is not the same thing: the cell
# below shows that a post-accumulate-grad hook still fires after
# `parameter._post_accumulate_grad_hooks = None`, and not after `.clear()`. Nor is setting a
# module's dict to a new empty dict: the module then stops firing the hook, but a shallow copy of
# the module (`copy.copy(module)`) shares its hook dicts and still has the hook; the handle, which
# keeps a weak reference to the dict it was registered in, reaches it too, as long as the copy
# keeps that dict alive. The second cell shows both, and that a parameter is different: autograd
# holds a parameter's dicts, and given a new dict it uses that one and frees the old. (After
# `.clear()`, a handle kept from before can still be removed: it finds nothing, and raises
# nothing.)

# %%
layer = nn.Linear(2, 1)
fired = []
layer.weight.register_post_accumulate_grad_hook(lambda parameter: fired.append("replaced"))
layer.weight._post_accumulate_grad_hooks = None
layer(torch.randn(3, 2)).sum().backward()
print("after setting the dict to None, the hook still fired:", fired)
assert fired == ["replaced"]

layer = nn.Linear(2, 1)
fired = []
layer.weight.register_post_accumulate_grad_hook(lambda parameter: fired.append("cleared"))
layer.weight._post_accumulate_grad_hooks.clear()
layer(torch.randn(3, 2)).sum().backward()
print("after .clear():", fired)
assert fired == []

# %%
for how in ("a new dict", ".clear()"):
    layer, fired = nn.Linear(2, 1), []
    handle = layer.register_forward_hook(lambda module, args, output: fired.append(
        "the layer" if module is layer else "its copy"))
    twin = copy.copy(layer)  # a shallow copy shares the layer's hook dicts
    assert twin._forward_hooks is layer._forward_hooks
    if how == "a new dict":
        layer._forward_hooks = OrderedDict()
    else:
        layer._forward_hooks.clear()
    layer(torch.randn(1, 2))
    twin(torch.randn(1, 2))
    assert isinstance(handle.hooks_dict_ref, weakref.ref)  # the handle's reference to the dict it was registered in
    print(f"after {how}: the hook fired for {fired}; the handle's dict holds {len(handle.hooks_dict_ref())} hook(s)")
    assert fired == (["its copy"] if how == "a new dict" else [])
    assert len(handle.hooks_dict_ref()) == (1 if how == "a new dict" else 0)
    handle.remove()  # an old handle's remove() still works: it removes the hook from its dict, if there

# A parameter's dicts are held by autograd. Given None, it keeps the old dict (the hook fired, in
# the cell above); given a new dict, it uses that one, and the old dict is freed.
layer, fired = nn.Linear(2, 1), []
handle = layer.weight.register_post_accumulate_grad_hook(lambda parameter: fired.append("fired"))
layer.weight._post_accumulate_grad_hooks = OrderedDict()
layer(torch.randn(3, 2)).sum().backward()
print("a parameter's dict set to a new dict: fired", fired, "| the handle's dict:", handle.hooks_dict_ref())
assert fired == [] and handle.hooks_dict_ref() is None


# %% tags=["exercise"]
# Exercise: remove_all_hooks — write your code in this cell.


def remove_all_hooks(model):
    """Remove every hook registered on `model`, its submodules at any depth, and their parameters.

    Removes the hooks of the ten kinds of `find_registered_hooks` (module dicts `_forward_pre_hooks`,
    `_forward_hooks`, `_backward_pre_hooks`, `_backward_hooks`, `_state_dict_pre_hooks`,
    `_state_dict_hooks`, `_load_state_dict_pre_hooks`, `_load_state_dict_post_hooks`, and parameter
    dicts `_backward_hooks`, `_post_accumulate_grad_hooks`), each module dict emptied in place (the
    same dict object, not a new one or None), and clears the flag dicts
    `_forward_pre_hooks_with_kwargs`, `_forward_hooks_with_kwargs` and
    `_forward_hooks_always_called`. Returns the number of hooks removed, one per registration
    (flags do not count, and a module or parameter reachable under two names counts once). Global hooks (those of `torch.nn.modules.module`) stay registered.
    Hooks registered afterwards work as usual.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("remove_all_hooks is not written yet")


# %%
check(remove_all_hooks)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Walk the same dicts as in Exercise 2, count their entries, then empty them where they are;
# also empty the three flag dicts of every module. Leave the global hook dicts alone.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.modules()` and `model.parameters()` visit everything at every depth (each object once).
# `len(d)` counts a dict's hooks and `d.clear()` empties it in place; a parameter's dict may be
# `None` (nothing to remove).
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# for module in model.modules():
#     for attribute in module_dicts:
#         removed += len(getattr(module, attribute))
#         getattr(module, attribute).clear()
# ```
# then the flag dicts (cleared, not counted), then each parameter's two dicts when they are not None.
#
# </details>

# %% [markdown]
# The leaky model from above, cleaned, and checked with the detector. Once both exercises are done,
# the cell prints `removed: 1` and an empty list.

# %%
with try_it():
    removed = remove_all_hooks(model)
    print("removed:", removed, "| still registered:", find_registered_hooks(model))
    assert removed == 1 and find_registered_hooks(model) == []

# %% [markdown]
# ## Exercise 4: `predict_checkpoint_recompute` · hard · about 10 min
#
# **Predict before you run.** Activation checkpointing, `torch.utils.checkpoint.checkpoint(block,
# x)`, saves memory: it keeps no activations of `block` in forward, and backward runs `block`
# again to recompute them. What does that do to forward hooks? The cell below defines
# `checkpoint_events(log)`: a block of three layers, `Linear` (`first`), `Tanh`, `Linear` (`last`),
# with a forward hook on each `Linear`; then, for each mode of checkpoint, `use_reentrant=True`
# (`reentrant`) and `use_reentrant=False` (`non-reentrant`, the one PyTorch recommends), a fresh
# input `x` with a tensor hook, one checkpointed forward and one backward. Nothing runs yet: the
# cell only defines the function. The events:
#
# - `"forward:reentrant"`, `"forward:non-reentrant"`: the checkpointed forward is about to start;
# - `"backward:reentrant"`, `"backward:non-reentrant"`: `backward()` is about to start;
# - `"fwd:first"`, `"fwd:last"`: that layer's forward hook fired;
# - `"grad:x"`: the tensor hook on `x` fired.
#
# Write `predict_checkpoint_recompute()`: it returns the list of events in the order you expect
# them to fire, an event as many times as it fires. Spelling: case does not matter, nor spaces
# around a name or around the `:`; `fwd` and `forward` are one word here (the names after the `:`
# tell the events apart), `bwd` may stand for `backward` and `tensor` for `grad`.
#
# Check: run `check(predict_checkpoint_recompute)` below (a wrong prediction is told the first event
# where it parts from what fires, and the rule;
# after three different wrong predictions in one session, `check` shows the whole log), or
# `pytest tests/test_09_pitfalls.py -k predict_checkpoint_recompute`. Once it passes, the cell after
# the hints prints the log, recorded as it runs.

# %% tags=["prediction"]
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


def checkpoint_events(log):
    block = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 2))
    block[0].register_forward_hook(lambda module, args, output: log("fwd:first"))
    block[2].register_forward_hook(lambda module, args, output: log("fwd:last"))
    for mode in ("reentrant", "non-reentrant"):
        x = torch.ones(1, 2, requires_grad=True)
        x.register_hook(lambda grad: log("grad:x"))
        log(f"forward:{mode}")
        out = checkpoint(block, x, use_reentrant=(mode == "reentrant"))
        log(f"backward:{mode}")
        out.sum().backward()


# %% tags=["exercise"]
# Exercise: predict_checkpoint_recompute — write your code in this cell.


def predict_checkpoint_recompute():
    """Return the events that `checkpoint_events` logs, in the order they fire.

    Each event is one of the names the cell above logs, e.g. "fwd:first".
    """
    # TODO: return ["...", ...]: the events, in the order you expect them to fire
    raise NotImplementedError("predict_checkpoint_recompute is not written yet")


# %%
check(predict_checkpoint_recompute)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Recomputing the activations means calling `block` again, hooks and all, during `backward()`.
# Then ask, for each mode: does the recomputation need to run all of `block`?
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `use_reentrant=True` runs the whole function again when backward reaches it. With
# `use_reentrant=False` the recomputation stops early by default: as soon as every tensor that
# backward saved is recomputed (`torch.utils.checkpoint.set_checkpoint_early_stop`).
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Thirteen events. The two modes agree in forward; in backward, the reentrant mode fires both
# forward hooks again before `"grad:x"`, the non-reentrant one fewer: its recomputation stops
# inside the layer that saves the last tensor, before that layer's forward returns.
#
# </details>

# %% [markdown]
# Once your prediction is right, this cell prints what fires, recorded as it runs (until then it
# says what to do).

# %%
from hooked.notebook import reveal

reveal(predict_checkpoint_recompute)

# %% [markdown]
# ## Summary
#
# | Symptom | Cause | Fix |
# |---|---|---|
# | `... BackwardHookFunction is a view and is being modified inplace` in **forward** | a full backward (pre-)hook before an in-place op | a forward hook that registers a tensor hook on the output, or `inplace=False` |
# | a stored activation changed after the fact | `detach()` shares memory | `detach().clone()` |
# | memory grows batch after batch | stored outputs keep their graphs | store `detach()`ed copies; walk `grad_fn` to measure |
# | a hook fires N times | a re-run cell registered it again | keep the handle and remove it first, or `with handle:` |
# | a hook does not fire | `module.forward(x)` instead of `module(x)`; a full backward hook under `no_grad` | call the module; run with gradients on |
# | a dict of activations holds one entry for two calls | a module called twice | append to a list |
# | `torch.save(model)` fails on a `lambda` | the hooks are pickled with the module | save `state_dict()` |
# | a hook added to a submodule after `torch.compile` is ignored | the compiled code does not check submodules for new hooks | register hooks before compiling, or `torch._dynamo.reset()` |
# | `In order to use an autograd.Function with functorch transforms ...` under `torch.func.grad` | a full backward (pre-)hook: its `BackwardHookFunction` has no `setup_context` | a forward hook that registers a tensor hook |
# | a full backward hook never runs after a `vmap` call | inside `vmap` the module's input and output report `requires_grad=False`: the hook is not installed | call the model without `vmap` where its backward hooks must run |
# | under `vmap`, a hook sees one sample, and what it stored has one sample's shape | `vmap` runs the model per sample, on `BatchedTensor`s | return what the hook caught from the vmapped function |
# | a copy of a model fires the original's hooks; its activations overwrite the original's (a hook function) or go to a copy of your dict (a `partial`, a bound method) | `copy.deepcopy` copies the hook dicts; it shares a hook function and copies a hook object | copy a model without hooks, or remove them from the copy |
# | an attribute a hook sets on `module` is lost under `nn.DataParallel` on several GPUs | the hook ran on a replica, a shallow copy of the module's `__dict__` made for one call (without a GPU, or with one, there is no replica) | write into an object of yours (a dict by layer name), not onto `module`; or use `DistributedDataParallel`, which PyTorch recommends over `DataParallel` |
# | hooks left behind, handles lost | | find them in the module's and parameters' hook dicts, and `.clear()` them |
#
# Next, lesson 10 leaves the forward and backward passes for two other places that take hooks:
# saving and loading (`state_dict`), and the optimizer's `step()`.
