# %% [markdown]
# # Lesson 08 — Autograd-level hooks
#
# Lessons 01 and 05 hooked a tensor's gradient and a module's backward. Autograd itself offers more
# hooks, below the level of modules: a hook that runs once a parameter's `.grad` has been written,
# a hook that waits for the gradients of several tensors at once, hooks on the nodes of the
# autograd graph, and hooks that decide how the tensors saved for backward are stored.
#
# After this lesson you will be able to:
#
# - use `Tensor.register_post_accumulate_grad_hook`, and say what it receives (the parameter, not
#   the gradient), where it may be registered (leaf tensors) and when it does not fire
#   (`torch.autograd.grad`);
# - put the hooks of one backward pass on a leaf in their order: tensor hook, node pre-hook,
#   `.grad` written, post-accumulate hook, node hook;
# - fuse an SGD step into backward, so that no gradient outlives its own update;
# - wait for the gradients of several tensors with `torch.autograd.graph.register_multi_grad_hook`,
#   in its modes `"all"` and `"any"`;
# - hook the nodes of the graph (`grad_fn.register_prehook`, `grad_fn.register_hook`);
# - change how activations are saved for backward with `torch.autograd.graph.saved_tensors_hooks`
#   and `save_on_cpu`, and forbid such hooks in a block with
#   `torch.autograd.graph.disable_saved_tensors_hooks`.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_08_autograd_hooks.py` (add `-k HalfPrecisionSaver` for one exercise;
# plain `pytest` grades every lesson).

# %%
import copy
import warnings
import weakref

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.autograd.graph import register_multi_grad_hook, save_on_cpu, saved_tensors_hooks

from hooked.notebook import check, hint, try_it

print(torch.__version__)

# %% [markdown]
# ## A hook after `.grad` is written: `register_post_accumulate_grad_hook`
#
# A tensor hook (lesson 01) receives the gradient *before* it is added into `.grad`. For a leaf
# tensor, such as a parameter, autograd then accumulates the gradient into `.grad`, and only after
# that calls the hooks registered with `tensor.register_post_accumulate_grad_hook(hook)`.
#
# Such a hook is called as `hook(tensor)`: it receives the **tensor itself**, not its gradient;
# the gradient is in `tensor.grad`, already written.

# %%
torch.manual_seed(0)
weight = torch.randn(3, requires_grad=True)
x = torch.randn(3)
received = {}


def after_accumulation(param):
    received["argument is the weight"] = param is weight
    received["grad at that moment"] = param.grad.clone()


weight.register_post_accumulate_grad_hook(after_accumulation)
(weight * x).sum().backward()
print("the hook received the weight itself:", received["argument is the weight"])
print("param.grad inside the hook:", received["grad at that moment"], "| x:", x)
assert received["argument is the weight"]
assert torch.equal(received["grad at that moment"], x)  # d/dw of sum(w * x) is x, already in .grad

# %% [markdown]
# Three rules, each shown below:
#
# - the hook returns `None`: it cannot replace the gradient (change `param.grad` instead), and a
#   returned tensor raises an error (in torch 2.13 only the tensor itself is let through);
# - it can only be registered on a **leaf** tensor (one you made, not the result of an operation);
# - `torch.autograd.grad` does not fire it, since `torch.autograd.grad` never writes `.grad`.

# %%
returns_something = torch.randn(3, requires_grad=True)
returns_something.register_post_accumulate_grad_hook(lambda param: param.grad * 2)
try:
    (returns_something * 2).sum().backward()
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"returning a tensor: {type(e).__name__}: {e}")
    assert str(e) == "Tensor post accumulate grad hooks should return None."

returns_itself = torch.randn(3, requires_grad=True)
returns_itself.register_post_accumulate_grad_hook(lambda param: param)
(returns_itself * 2).sum().backward()
print("returning the tensor itself: no error")

def times_ten(param):
    param.grad.mul_(10)  # changes .grad in place; returns None


changes_grad = torch.randn(3, requires_grad=True)
changes_grad.register_post_accumulate_grad_hook(times_ten)
(changes_grad * 2).sum().backward()
print("a hook that multiplies param.grad by 10 in place: .grad =", changes_grad.grad)
assert torch.equal(changes_grad.grad, torch.full((3,), 20.0))

leaf = torch.randn(3, requires_grad=True)
not_a_leaf = leaf * 2
try:
    not_a_leaf.register_post_accumulate_grad_hook(lambda param: None)
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"on a non-leaf tensor: {type(e).__name__}: {e}")
    assert str(e) == "post accumulate grad hooks cannot be registered on non-leaf tensors"

try:
    torch.randn(3).register_post_accumulate_grad_hook(lambda param: None)
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"on a tensor that does not require grad: {type(e).__name__}: {e}")
    assert str(e) == "cannot register a hook on a tensor that doesn't require gradient"

calls = []
leaf.register_post_accumulate_grad_hook(lambda param: calls.append("post-accumulate"))
leaf.register_hook(lambda grad: calls.append("tensor hook"))
gradient, = torch.autograd.grad((leaf * 3).sum(), leaf)
print("hooks fired by torch.autograd.grad:", calls, "| leaf.grad:", leaf.grad)
assert calls == ["tensor hook"] and leaf.grad is None

# %% [markdown]
# A parameter used twice in one forward pass gets one gradient, the sum of both uses, so its
# post-accumulate hook fires once per backward pass, after the sum is in `.grad`.

# %%
shared = torch.randn(3, requires_grad=True)
seen = []
shared.register_post_accumulate_grad_hook(lambda param: seen.append(param.grad.clone()))
(shared * 2 + shared * 5).sum().backward()
print("calls:", len(seen), "| grad seen:", seen[0])
assert len(seen) == 1 and torch.equal(seen[0], torch.full((3,), 7.0))

# %% [markdown]
# ## Hooks on the nodes of the graph
#
# Every tensor made by an operation has a `grad_fn`: the node of the autograd graph that computes
# the gradients of that operation's inputs during backward. A node takes two kinds of hook:
#
# - `node.register_prehook(fn)`: `fn(grad_outputs)` runs before the node, with the gradients of the
#   node's outputs (a tuple); a returned tuple replaces them;
# - `node.register_hook(fn)`: `fn(grad_inputs, grad_outputs)` runs after the node has computed the
#   gradients of its inputs; a returned tuple replaces `grad_inputs`.
#
# A leaf has no `grad_fn`. Its gradient goes into an `AccumulateGrad` node, which you reach from
# the node of the operation that used it, through `next_functions`.

# %%
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
x = torch.randn(3)
y = w * x
print("y.grad_fn:", type(y.grad_fn).__name__, "| w.grad_fn:", w.grad_fn)
accumulate = y.grad_fn.next_functions[0][0]
print("y.grad_fn.next_functions:", y.grad_fn.next_functions)
print("the AccumulateGrad node's variable is w:", accumulate.variable is w)
assert type(y.grad_fn).__name__ == "MulBackward0" and w.grad_fn is None
assert type(accumulate).__name__ == "AccumulateGrad" and accumulate.variable is w

seen = {}
y.grad_fn.register_prehook(lambda grad_outputs: seen.update(pre=grad_outputs))
y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.update(inputs=grad_inputs))
y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 10,))  # replaces grad_outputs
y.grad_fn.register_prehook(lambda grad_outputs: seen.update(after=grad_outputs))
(y * 2).sum().backward()
print("prehook got grad_outputs:", seen["pre"], "| the prehook after the one that returned:", seen["after"])
print("hook got grad_inputs:", seen["inputs"])
print("w.grad:", w.grad, "= 10 * 2 * x:", torch.allclose(w.grad, 20 * x))
assert torch.equal(seen["pre"][0], torch.full((3,), 2.0)) and torch.equal(seen["after"][0], torch.full((3,), 20.0))
assert len(seen["inputs"]) == 2 and seen["inputs"][1] is None  # x needs no grad
assert torch.allclose(w.grad, 20 * x)  # the second prehook's return reached the gradient

w.grad = None
y = w * x
y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (torch.ones(3), None))  # replaces grad_inputs
(y * 2).sum().backward()
print("after a node hook returned (ones, None): w.grad =", w.grad)
assert torch.equal(w.grad, torch.ones(3))

# %% [markdown]
# Hooks on a node run in the order they were registered, and a pre-hook's return is what the next
# pre-hook sees: the first pre-hook above saw `2`, the second one multiplied by 10, and the third
# saw `20`.
#
# ## The order of the hooks on a leaf, in one backward pass
#
# Now every hook at once on one leaf `w`: a tensor hook, a pre-hook and a hook on its
# `AccumulateGrad` node, and a post-accumulate hook. Each one records its name and whether
# `w.grad` is written yet.

# %%
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
y = w * torch.randn(3)
accumulate = y.grad_fn.next_functions[0][0]
order = []


def note(name):
    order.append((name, w.grad is not None))


w.register_post_accumulate_grad_hook(lambda param: note("post-accumulate hook"))
accumulate.register_hook(lambda grad_inputs, grad_outputs: note("AccumulateGrad node hook"))
accumulate.register_prehook(lambda grad_outputs: note("AccumulateGrad node prehook"))
w.register_hook(lambda grad: note("tensor hook"))
y.sum().backward()
for name, written in order:
    print(f"{name:28} w.grad written: {written}")
assert order == [("tensor hook", False), ("AccumulateGrad node prehook", False),
                 ("post-accumulate hook", True), ("AccumulateGrad node hook", True)]

fig, ax = plt.subplots(figsize=(9, 2.4))
for step, (name, written) in enumerate(order):
    ax.scatter(step, 0, s=140, color="tab:green" if written else "tab:gray", zorder=2)
    ax.annotate(f"{step + 1}. " + name.replace(" hook", "\nhook").replace(" prehook", "\nprehook"), (step, 0),
                xytext=(0, 14), textcoords="offset points", ha="center", fontsize=10)
ax.axvline(1.5, color="tab:red", linestyle="--")
ax.text(1.5, -0.35, ".grad written here", color="tab:red", ha="center")
ax.scatter([], [], color="tab:gray", label="w.grad not written yet")
ax.scatter([], [], color="tab:green", label="w.grad written")
ax.legend(loc="lower left", frameon=False, ncol=2)
ax.set_xlim(-0.7, len(order) - 0.3)
ax.set_ylim(-0.5, 0.9)
ax.axis("off")
ax.set_title("The hooks of one leaf in one backward pass, in the order they fired (registered in reverse)")
plt.tight_layout()
plt.show()

# %% [markdown]
# The hooks were registered in the reverse order, so the order is autograd's, not ours: the tensor
# hook and the node pre-hook see the gradient on its way in, the post-accumulate hook and the node
# hook see it in `.grad`.
#
# ## Grad mode inside a backward hook
#
# While backward runs its hooks, grad mode is **off**, unless you called
# `backward(create_graph=True)` (to take gradients of gradients). Then it is on, and changing a
# parameter in place raises the error PyTorch gives for in-place changes of a leaf that requires
# grad. Inside `with torch.no_grad():` the change works in both cases.

# %%
def update_without_no_grad(param):
    modes.append(torch.is_grad_enabled())
    param.sub_(0.1 * param.grad)


def update_with_no_grad(param):
    with torch.no_grad():
        param.sub_(0.1 * param.grad)


for create_graph in (False, True):
    modes = []
    p = torch.ones(3, requires_grad=True)
    p.register_post_accumulate_grad_hook(update_without_no_grad)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_graph=True warns about a reference cycle .grad makes
            (p * p).sum().backward(create_graph=create_graph)
        print(f"create_graph={create_graph}: grad mode in the hook {modes[0]}, update worked: {p.tolist()}")
        assert not create_graph and not modes[0]
    except RuntimeError as e:
        print(f"create_graph={create_graph}: grad mode in the hook {modes[0]}, {type(e).__name__}: {e}")
        assert create_graph and modes[0]
        assert str(e) == "a leaf Variable that requires grad is being used in an in-place operation."

for create_graph in (False, True):
    p = torch.ones(3, requires_grad=True)
    p.register_post_accumulate_grad_hook(update_with_no_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (p * p).sum().backward(create_graph=create_graph)
    print(f"with torch.no_grad(), create_graph={create_graph}:", p.detach().tolist())
    assert torch.allclose(p.detach(), torch.full((3,), 0.8))

# %% [markdown]
# ## Use: the optimizer step inside backward
#
# A training step usually keeps every gradient until `optimizer.step()`: after `loss.backward()`
# all the `.grad` tensors exist at once, as many numbers as the model has parameters. With a
# post-accumulate hook each parameter can be updated as soon as its own gradient is ready, and its
# `.grad` freed right away (`param.grad = None`). Then at most one `.grad` is alive at a time. This
# is the idea of PyTorch's tutorial "How to save memory by fusing the optimizer step into the
# backward pass".
#
# The cell measures it. A hook on every parameter of a 6-layer network adds up the bytes of all
# `.grad` tensors alive at the moment each gradient has been written: once with plain backward,
# once with the update and `param.grad = None` done in a second hook on each parameter.

# %%
def grad_bytes(model):
    return sum(p.grad.nelement() * p.grad.element_size() for p in model.parameters() if p.grad is not None)


def measured_backward(model, fuse, lr=0.01):
    alive = []
    for param in model.parameters():
        param.register_post_accumulate_grad_hook(lambda param: alive.append(grad_bytes(model)))
        if fuse:
            param.register_post_accumulate_grad_hook(update_and_free)
    model(torch.randn(32, 64)).pow(2).mean().backward()
    return alive


def update_and_free(param, lr=0.01):
    with torch.no_grad():
        param.sub_(lr * param.grad)
    param.grad = None


torch.manual_seed(0)
network = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.Tanh()) for _ in range(6)])
plain_alive = measured_backward(copy.deepcopy(network), fuse=False)
fused_alive = measured_backward(copy.deepcopy(network), fuse=True)
largest = max(p.nelement() * p.element_size() for p in network.parameters())
total = sum(p.nelement() * p.element_size() for p in network.parameters())
print(f"plain backward: up to {max(plain_alive)} bytes of gradients alive (all parameters: {total})")
print(f"fused update:   up to {max(fused_alive)} bytes (the largest parameter: {largest})")
assert max(plain_alive) == total and max(fused_alive) == largest
assert plain_alive == sorted(plain_alive)  # plain backward: each gradient written adds to what is alive
sizes_of_one = {p.nelement() * p.element_size() for p in network.parameters()}
assert set(fused_alive) <= sizes_of_one  # fused: each time, exactly one parameter's gradient is alive

kept = copy.deepcopy(network)
for _ in range(2):
    kept(torch.ones(1, 64)).sum().backward()  # .grad not freed between the passes
once = copy.deepcopy(network)
once(torch.ones(1, 64)).sum().backward()
print("without param.grad = None, a second backward adds: .grad is twice one pass's:",
      torch.allclose(kept[0][0].bias.grad, 2 * once[0][0].bias.grad))
assert torch.allclose(kept[0][0].bias.grad, 2 * once[0][0].bias.grad)

fig, ax = plt.subplots(figsize=(7, 3.2))
ax.step(range(1, len(plain_alive) + 1), [b / 1024 for b in plain_alive], where="post", label="plain backward")
ax.step(range(1, len(fused_alive) + 1), [b / 1024 for b in fused_alive], where="post",
        label="update + free in a post-accumulate hook")
ax.set_xlabel("gradients written so far in this backward pass")
ax.set_ylabel("KiB of .grad alive")
ax.set_title("Gradient memory during one backward pass of a 6-layer network")
ax.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# In the figure, plain backward's line climbs with every gradient written, to the size of all the
# parameters; the fused update's line never goes above the largest single parameter.
#
# Two things matter in the hook: the update runs under `torch.no_grad()` (grad mode is on under
# `create_graph=True`, as shown above), and `param.grad = None` frees the gradient; leave it, and
# the next backward *adds* its gradient to the old one.
#
# A tensor hook (`register_hook`) would be the wrong place for the update: it fires before the
# gradient is accumulated, and it also fires under `torch.autograd.grad`, which is often used only
# to *look* at gradients. A post-accumulate hook is fired by nothing but a backward pass that
# writes `.grad`.
#
# ## Exercise 1: `fuse_sgd_into_backward` · medium · about 15 min
#
# Write `fuse_sgd_into_backward(model, lr)`. For every parameter of `model` that requires grad
# (`model.parameters()`), register a post-accumulate-grad hook that, each time backward has
# written the parameter's gradient:
#
# - updates the parameter in place, `param <- param - lr * param.grad`, under `torch.no_grad()`
#   (it must also work in `backward(create_graph=True)`, where grad mode is on);
# - then sets `param.grad = None`, so that after each backward every hooked parameter's `.grad` is
#   `None` and the next backward starts from nothing.
#
# Parameters that do not require grad (frozen) get no hook and never change. Return a list of the
# handles of the hooks you registered; removing them turns the fused update off. After `k`
# backward passes the parameters equal those that `torch.optim.SGD(params, lr=lr)` gives after
# `k` steps of `backward(); step(); zero_grad()`.
#
# Traps: the hook receives the parameter, not its gradient; a tensor hook updates too early and
# also under `torch.autograd.grad`; a `.grad` that is not cleared accumulates; `torch.no_grad()`
# forgotten fails under `create_graph=True`; a frozen parameter cannot take a hook (and needs no
# update); a hook defined in a loop that uses the loop variable instead of its argument sees the
# loop's last parameter in every call, whichever parameter's gradient is ready; and
# `param.data = param - lr * param.grad` gives the parameter new memory instead of updating it in
# place.
#
# Check: run `check(fuse_sgd_into_backward)` below, or
# `pytest tests/test_08_autograd_hooks.py -k fuse_sgd_into_backward`.

# %% tags=["exercise"]
# Exercise: fuse_sgd_into_backward — write your code in this cell.
import torch


def fuse_sgd_into_backward(model, lr):
    """Make every backward pass through `model` also take a plain SGD step.

    Receives `model`, an nn.Module, and `lr`, a positive Python number.
    For every parameter of `model` that requires grad (each one once, as model.parameters() gives
    it, also a parameter reachable under two names), registers a post-accumulate-grad hook that,
    once backward has written the parameter's gradient, updates the parameter in place under
    torch.no_grad(), param <- param - lr * param.grad, and then sets param.grad to None.
    Parameters that do not require grad get no hook.
    Returns a list of the handles of all hooks registered.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("fuse_sgd_into_backward is not written yet")


# %%
check(fuse_sgd_into_backward)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Each parameter gets one hook that fires right after its gradient is in `.grad`: the hook takes
# one SGD step for that parameter alone and then throws the gradient away.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `param.register_post_accumulate_grad_hook(hook)` calls `hook(param)` with the parameter;
# `param.requires_grad` tells frozen parameters apart; `param.sub_(...)` inside
# `with torch.no_grad():` changes it in place; `param.grad = None` frees the gradient.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Define one hook function with a parameter `param` (use it, not a loop variable): in a
# `torch.no_grad()` block subtract `lr` times `param.grad` from `param` in place, then set
# `param.grad` to `None`. Register it on each parameter whose `requires_grad` is true and return
# the list of what the registrations return.
#
# </details>

# %% [markdown]
# Your fused step next to `torch.optim.SGD` on two copies of the same network with a frozen first
# layer, for five steps of a regression. The fused copy never calls an optimizer. Once the exercise
# is done, the cell prints 2 hooks registered, a largest difference from `torch.optim.SGD` below
# 1e-6, every `.grad` `None`, and the frozen layer unchanged.

# %%
with try_it():
    torch.manual_seed(0)
    start = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    start[0].requires_grad_(False)  # frozen
    fused, classic = copy.deepcopy(start), copy.deepcopy(start)
    handles = fuse_sgd_into_backward(fused, lr=0.1)
    optimizer = torch.optim.SGD([p for p in classic.parameters() if p.requires_grad], lr=0.1)
    inputs, targets = torch.randn(16, 4), torch.randn(16, 1)
    for step in range(5):
        ((fused(inputs) - targets) ** 2).mean().backward()
        ((classic(inputs) - targets) ** 2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    largest_difference = max((a - b).abs().max().item() for a, b in zip(fused.parameters(), classic.parameters()))
    print("hooks registered:", len(handles), "| largest difference from torch.optim.SGD:", largest_difference)
    print("every .grad is None after backward:", all(p.grad is None for p in fused.parameters()))
    print("frozen layer unchanged:", torch.equal(fused[0].weight, start[0].weight))
    assert len(handles) == 2 and largest_difference < 1e-6
    assert all(p.grad is None for p in fused.parameters())
    assert torch.equal(fused[0].weight, start[0].weight)
    for handle in handles:
        handle.remove()

# %% [markdown]
# ## Waiting for several gradients: `register_multi_grad_hook`
#
# `torch.autograd.graph.register_multi_grad_hook(tensors, fn)` calls `fn` once per backward pass,
# after the gradients of all of `tensors` that this pass computes are known. `fn(grads)` receives a
# list with one entry per tensor, in order, and `None` for a tensor the pass does not reach. When
# the pass reaches none of them, `fn` is not called. The registration returns one handle for all
# the tensors, and what `fn` returns is ignored (the last lines of the cell show it).

# %%
torch.manual_seed(0)
a, b, c = (torch.randn(2, requires_grad=True) for _ in range(3))
calls = []


def describe_grads(grads):
    assert isinstance(grads, list)
    calls.append(["None" if g is None else g.tolist() for g in grads])


handle = register_multi_grad_hook((a, b, c), describe_grads)
(a * 2 + b * 3 + c * 4).sum().backward()
(a * 2 + b * 3).sum().backward()  # c is not reached
d = torch.randn(2, requires_grad=True)
(d * 5).sum().backward()  # none of a, b, c is reached
for call in calls:
    print(call)
assert calls == [[[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]], [[2.0, 2.0], [3.0, 3.0], "None"]]
handle.remove()
(a + b + c).sum().backward()
print("after handle.remove():", len(calls), "calls")
assert len(calls) == 2

a.grad = None
handle = register_multi_grad_hook((a,), lambda grads: tuple(torch.zeros_like(g) for g in grads))
(a * 2).sum().backward()
print("a.grad after fn returned zeros:", a.grad)
assert torch.equal(a.grad, torch.full((2,), 2.0))  # the return changed nothing
handle.remove()

# %% [markdown]
# With `mode="any"`, `fn(grad)` is called once per pass with **one** gradient, the first one of
# the tensors that autograd computes, instead of a list.

# %%
calls = []
handle = register_multi_grad_hook((a, b, c), lambda grad: calls.append(grad), mode="any")
(a * 2 + b * 3 + c * 4).sum().backward()
print("mode='any' received:", calls)
assert len(calls) == 1 and isinstance(calls[0], torch.Tensor) and calls[0].shape == (2,)
handle.remove()

# %% [markdown]
# `fn` may run **before** the gradients are accumulated into `.grad`. So read them from `grads`,
# not from `.grad`: in the cell below, when `fn` runs, one of the two leaves has its `.grad` and the
# other does not yet.

# %%
a.grad = b.grad = None
snapshot = []
handle = register_multi_grad_hook((a, b), lambda grads: snapshot.append((a.grad is None, b.grad is None)))
(a * 2 + b * 3).sum().backward()
print("inside fn: a.grad is None:", snapshot[0][0], "| b.grad is None:", snapshot[0][1])
assert snapshot == [(True, False)]
handle.remove()

# %% [markdown]
# Under `torch.autograd.grad` (which computes gradients without writing `.grad`) a multi-grad hook
# works too, with one exception in torch 2.13 (pytorch/pytorch#131753): in mode `"all"`, a hooked
# **leaf** among the `inputs` of `torch.autograd.grad` makes it raise. With the hooked leaves not
# among `inputs`, or in mode `"any"`, the hook fires. The cell shows the three cases.

# %%
calls = []
handle = register_multi_grad_hook((a, b), lambda grads: calls.append(grads))
try:
    torch.autograd.grad((a * 2 + b * 3).sum(), (a,))
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"mode 'all', the hooked leaf a among inputs: {type(e).__name__}: {e}")
    assert str(e).startswith("A leaf node was passed to _will_engine_execute_node but we are currently running "
                             "autograd.grad().")
handle.remove()

calls = []
h = a * 2  # not a leaf
handle = register_multi_grad_hook((h, b), lambda grads: calls.append(grads))
gradient, = torch.autograd.grad((h * b).sum(), (a,))  # b is a hooked leaf, but not among inputs
print("mode 'all', hooked leaf b not among inputs: fn got", [None if g is None else g.tolist() for g in calls[0]])
assert len(calls) == 1 and torch.equal(calls[0][0], b.detach()) and calls[0][1] is None
handle.remove()

calls = []
handle = register_multi_grad_hook((a, b), lambda grad: calls.append(grad), mode="any")
torch.autograd.grad((a * 2 + b * 3).sum(), (a, b))
print("mode 'any', hooked leaves among inputs: fn called", len(calls), "time")
assert len(calls) == 1
handle.remove()

# %% [markdown]
# ## Exercise 2: `call_when_all_grads_ready` · easy · about 10 min
#
# Write `call_when_all_grads_ready(tensors, callback)`. `tensors` is a list of tensors that require
# grad (leaves or not). In every backward pass that computes the gradient of at least one of them,
# call `callback(grads)` exactly once, after all of the gradients of `tensors` that this pass
# computes are known. `grads` is a sequence (a list or a tuple) with one entry per tensor, in the
# order of `tensors`: its gradient in this pass, or `None` for a tensor this pass does not reach.
# A pass that reaches none of them does not call `callback`, nor does registering it. `callback` may
# keep `grads`, so nothing changes it after the call. Return a handle whose `remove()` stops the
# calls and removes every hook you registered.
#
# Traps: `mode="any"` calls back at the first gradient, with one tensor; hooks on each tensor call
# back once per tensor; a flag that calls back once ever misses the later passes; counting until
# every tensor has a gradient never calls back in a pass that does not reach them all; a buffer list
# handed to `callback` and reset for the next pass changes what `callback` kept.
#
# Check: run `check(call_when_all_grads_ready)` below, or
# `pytest tests/test_08_autograd_hooks.py -k call_when_all_grads_ready`.

# %% tags=["exercise"]
# Exercise: call_when_all_grads_ready — write your code in this cell.
import torch


def call_when_all_grads_ready(tensors, callback):
    """Call `callback` once per backward pass, with the gradients of all `tensors`.

    Receives `tensors`, a list of tensors that require grad (leaves or not), and `callback`, a
    function.
    In every backward pass that computes the gradient of at least one of `tensors`, calls
    callback(grads) exactly once, after every gradient of `tensors` that this pass computes is
    known; `grads` is a list or tuple with one entry per tensor, in order: the gradient, or None
    for a tensor this pass does not reach. callback may keep `grads`: it is not changed after the call.
    It is never called otherwise: not while registering, nor in a pass that computes none of them.
    Returns a handle whose remove() stops the calls and removes every hook registered.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("call_when_all_grads_ready is not written yet")


# %%
check(call_when_all_grads_ready)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Counting gradients yourself is hard: you do not know how many of the tensors a pass will reach.
# Autograd knows, and offers a hook that waits for exactly the gradients a pass computes.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `torch.autograd.graph.register_multi_grad_hook(tensors, fn, mode="all")` calls `fn(grads)` once
# per pass with one entry per tensor (`None` where the pass computed none), and returns one handle.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# The multi-grad hook in its default mode `"all"` already calls its function with exactly the
# `grads` this exercise asks for, once per pass, and never in a pass that reaches none of the
# tensors: no counting and no flags are needed. Think about which function it should call, and
# what your function must return for `remove()` to work.
#
# </details>

# %% [markdown]
# Your function at work (once the exercise is done, the cell prints two norms, one per backward
# pass): the gradient norm of a whole network, once per backward pass, from the
# gradients of its parameters. Only the head is reached in the second pass.

# %%
with try_it():
    torch.manual_seed(0)
    body, head = nn.Linear(3, 4), nn.Linear(4, 1)
    params = list(body.parameters()) + list(head.parameters())
    norms = []

    def total_norm(grads):
        norms.append(torch.sqrt(sum(g.pow(2).sum() for g in grads if g is not None)).item())

    handle = call_when_all_grads_ready(params, total_norm)
    head(body(torch.randn(5, 3))).sum().backward()
    head(torch.randn(5, 4)).sum().backward()
    print("one norm per backward pass:", [round(n, 4) for n in norms])
    assert len(norms) == 2
    handle.remove()

# %% [markdown]
# ## What autograd saves for backward, and how: `saved_tensors_hooks`
#
# To compute gradients later, the forward pass keeps tensors: the inputs of a matrix product, the
# output of `tanh`, and so on. These *saved tensors* (mostly activations) can take much of a
# training step's memory (lesson 04 showed that a stored output keeps its graph, and with it these
# tensors, alive). Inside `with torch.autograd.graph.saved_tensors_hooks(pack, unpack):`,
# autograd calls `pack(tensor)` each time it saves a tensor, and stores what `pack` returns
# instead; in backward it calls `unpack(stored)` and uses what comes back.

# %%
torch.manual_seed(0)
x = torch.randn(4, 3, requires_grad=True)
w = torch.randn(3, 2, requires_grad=True)
log = []


def pack(tensor):
    log.append(f"pack {tuple(tensor.shape)}" + (" (w)" if tensor is w else " (x)" if tensor is x else ""))
    return tensor


def unpack(stored):
    log.append(f"unpack {tuple(stored.shape)}")
    return stored


with saved_tensors_hooks(pack, unpack):
    y = torch.tanh(x @ w)
log.append("forward done")
y.sum().backward()
print(log)
assert log[:4] == ["pack (3, 2) (w)", "pack (4, 3) (x)", "pack (4, 2)", "forward done"]
assert log[4] == "unpack (4, 2)"  # tanh's backward runs first, then the matrix product's
assert sorted(log[5:]) == ["unpack (3, 2)", "unpack (4, 3)"]

# %% [markdown]
# The matrix product saved both of its inputs and `tanh` its output (its gradient is
# `1 - tanh²`). Backward unpacks them in its own order: `tanh` first, since it is nearer the
# loss. The hooks act on the forward passes run inside the `with` block; backward may run later,
# outside it, as above. Nested blocks do not combine: the innermost pair wins.

# %%
log = []
with saved_tensors_hooks(lambda t: (log.append("outer"), t)[1], lambda t: t):
    with saved_tensors_hooks(lambda t: (log.append("inner"), t)[1], lambda t: t):
        torch.exp(x)
print(log)
assert log == ["inner"]

# %% [markdown]
# `pack` may store anything: a copy on another device, a compressed tensor, a file name. `unpack`
# must give back a tensor with the original's values, dtype and shape. Nothing checks that it
# does. A tensor of another dtype or shape may make backward fail, as here in the matrix
# product's backward:

# %%
for name, pack_fn, unpack_fn, error in (
        ("stored as float16, given back as float16", lambda t: t.half(), lambda t: t,
         "expected m1 and m2 to have the same dtype, but got: c10::Half != float"),
        ("given back flattened", lambda t: t, lambda t: t.flatten(), "self must be a matrix")):
    with saved_tensors_hooks(pack_fn, unpack_fn):
        y = (x * 2.0) @ w
    try:
        y.sum().backward()
        raise AssertionError("expected a RuntimeError")
    except RuntimeError as e:
        print(f"{name}: {type(e).__name__}: {e}")
        assert error in str(e)  # the stable part of torch's text

# %% [markdown]
# Or backward runs and the gradient is silently wrong. `x ** 2` saves `x`; an unpack that gives
# back `t[:1]` (one number instead of three) broadcasts in the backward formula `2 * x * grad`.
# And `tanh`, whose backward reads its saved output, takes a `float16` tensor without a word: the
# gradient comes out `float32`, computed from rounded values.

# %%
v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
with saved_tensors_hooks(lambda t: t, lambda t: t[:1]):
    y = v ** 2
y.sum().backward()
print("x ** 2 with unpack giving back t[:1]: v.grad =", v.grad.tolist(), "| the right gradient is [2, 4, 6]")
assert v.grad.tolist() == [2.0, 2.0, 2.0]

u = torch.tensor([0.1, 0.5, 1.7], requires_grad=True)
with saved_tensors_hooks(lambda t: t.half(), lambda t: t):  # float16 given back to a float32 backward
    y = torch.tanh(u)
y.sum().backward()
exact = 1 - torch.tanh(u.detach()) ** 2
print("tanh with a float16 saved output: u.grad =", u.grad.tolist(), u.grad.dtype, "| exact:", exact.tolist())
assert u.grad.dtype == torch.float32 and not torch.equal(u.grad, exact) and torch.allclose(u.grad, exact, atol=1e-3)

# %% [markdown]
# `torch.autograd.graph.save_on_cpu()` is a ready-made pair: saved tensors move to the CPU (pinned
# memory with `pin_memory=True`) in forward and back to their device in backward, so that a GPU
# keeps less memory for activations (so PyTorch's documentation says; this course runs on a CPU,
# where the cell can only show that the gradients stay exact).

# %%
x.grad = w.grad = None
with save_on_cpu():
    torch.tanh(x @ w).sum().backward()
with_hooks = (x.grad.clone(), w.grad.clone())
x.grad = w.grad = None
torch.tanh(x @ w).sum().backward()
print("same gradients with save_on_cpu:", torch.equal(with_hooks[0], x.grad) and torch.equal(with_hooks[1], w.grad))
assert torch.equal(with_hooks[0], x.grad) and torch.equal(with_hooks[1], w.grad)

# %% [markdown]
# ## Forbidding saved-tensor hooks: `disable_saved_tensors_hooks`
#
# Some code cannot work if its saved tensors are packed by someone else's hooks (PyTorch's
# documentation: "a feature that does not work with saved tensors default hooks"). It can forbid
# them for a block: inside `with torch.autograd.graph.disable_saved_tensors_hooks(error_message):`,
# entering `saved_tensors_hooks` (or `save_on_cpu`, which is built on it) raises
# `RuntimeError(error_message)`, with your text as the whole message. Entering the block while
# such hooks are already active raises the same error, before the block's body runs. Autograd itself
# works as usual inside, and after the block the hooks are allowed again.

# %%
message = "this block keeps its saved tensors as they are"
x.grad = None
with torch.autograd.graph.disable_saved_tensors_hooks(message):
    torch.tanh(x @ w).sum().backward()
    print("backward inside the block works: x.grad is set:", x.grad is not None)
    assert x.grad is not None
    for name, make_hooks in (("saved_tensors_hooks", lambda: saved_tensors_hooks(lambda t: t, lambda t: t)),
                             ("save_on_cpu", save_on_cpu)):
        try:
            with make_hooks():
                pass
            raise AssertionError("expected a RuntimeError")
        except RuntimeError as e:
            print(f"entering {name} inside it: {type(e).__name__}: {e}")
            assert str(e) == message

body_ran = []
with saved_tensors_hooks(lambda t: t, lambda t: t):
    try:
        with torch.autograd.graph.disable_saved_tensors_hooks(message):
            body_ran.append(True)
        raise AssertionError("expected a RuntimeError")
    except RuntimeError as e:
        print(f"entering it while saved_tensors_hooks is active: {type(e).__name__}: {e} | body ran: {bool(body_ran)}")
        assert str(e) == message and not body_ran

packed = []
with saved_tensors_hooks(lambda t: (packed.append(t.shape), t)[1], lambda t: t):
    torch.tanh(x)
print("after the block, pack hooks run again:", packed)
assert packed == [x.shape]

# %% [markdown]
# ## Use: saving activations in half precision
#
# A `float32` number takes 4 bytes, a `float16` number 2. A pack hook that stores the saved tensors
# as `float16`, with an unpack hook that turns them back into their dtype, should keep less memory
# for backward, at the price of rounding in the gradients. Whether it does is a matter of
# measuring: the memory kept for backward is the storage of the tensors that the forward pass
# leaves alive. The helper below counts it: every tensor alive in Python after the forward pass
# whose storage was not alive before, each storage once (a tensor and its views share one
# storage). It finds the tensors that the graph keeps when they are Python objects: everything a
# pack hook returns, and, in the network below, every activation (each was returned to Python by a
# layer).

# %%
import gc


def storages_alive():
    """{storage address: bytes} of every tensor alive in Python."""
    gc.collect()
    return {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
            for t in gc.get_objects() if issubclass(type(t), torch.Tensor)}


def bytes_kept(forward):
    """The bytes of the storages that forward() leaves alive, its result's own not counted; and the result."""
    before = storages_alive()
    result = forward()
    own = result.untyped_storage().data_ptr()
    return sum(size for address, size in storages_alive().items() if address not in before and address != own), result


sizes = {str(dtype): torch.empty(0, dtype=dtype).element_size()
         for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16)}
print("bytes a number:", sizes)
assert list(sizes.values()) == [4, 8, 2, 2]

torch.manual_seed(0)
deep = nn.Sequential(*[nn.Sequential(nn.Linear(128, 128), nn.Tanh()) for _ in range(4)])
inputs = torch.randn(64, 128)


def every_float_to_half(tensor):
    return (tensor.half(), tensor.dtype) if tensor.dtype == torch.float32 else (tensor, None)


def back_to_dtype(packed):
    return packed[0] if packed[1] is None else packed[0].to(packed[1])


def forward_with_naive_hooks():
    with saved_tensors_hooks(every_float_to_half, back_to_dtype):
        return deep(inputs).pow(2).mean()


plain, _ = bytes_kept(lambda: deep(inputs).pow(2).mean())
naive, _ = bytes_kept(forward_with_naive_hooks)
print(f"kept for backward: {plain // 1024} KiB without hooks, {naive // 1024} KiB with every float32 tensor "
      "stored as float16")
assert plain == 4 * 64 * 128 * 4 and naive == 240 * 1024  # four 64 x 128 tanh outputs; then more, not less

# %% [markdown]
# More, not less: 240 KiB instead of 128. `pack` makes a new tensor each time it is called, and it is
# called with more than the activations. The next cell lists what it receives in one
# `Linear → Tanh → Linear` pass:
#
# - the input batch, a **leaf** (no recorded operation made it), which the caller keeps alive
#   (here as `x_batch`);
# - the second layer's `weight.t()`, which `nn.Linear` saves: a **view** of a parameter (its `_base`
#   is the weight), which stays alive anyway; a float16 copy of it only adds memory;
# - the tanh output **twice**, the same tensor object: `tanh` saves its output (its gradient is
#   `1 - tanh²`), and the next matrix product saves its input. Packed twice, it is copied twice.
#
# So a saver should convert only the activations that nothing else keeps alive, each once.
# Exercise 3 tells them apart by a simple rule: a leaf, or a view of one, is stored as it is. The
# rule never copies a parameter or an input, but a leaf is not always kept alive by someone else:
# the output of a frozen layer is a leaf too (nothing was recorded: lesson 01), and once the
# forward pass is over, only the graph holds it. The second cell below shows it; the rule leaves
# such an output in float32. The cell after the exercise measures what the saver keeps.

# %%
torch.manual_seed(0)
first, second = nn.Linear(3, 4), nn.Linear(4, 2)
x_batch = torch.randn(5, 3)
received = []
with saved_tensors_hooks(lambda t: (received.append(t), t)[1], lambda t: t):
    second(torch.tanh(first(x_batch)))
for t in received:
    what = ("the input batch" if t is x_batch else "a view of second.weight" if t._base is second.weight
            else "the tanh output")
    print(f"{str(tuple(t.shape)):7} leaf: {t.is_leaf!s:5} _base is a leaf: "
          f"{t._base is not None and t._base.is_leaf!s:5} -> {what}")
assert received[0] is x_batch and received[0].is_leaf
assert received[1] is received[2] and not received[1].is_leaf  # one tensor, saved by tanh and by the product
assert received[3]._base is second.weight and not received[3].is_leaf
assert len(received) == 4  # first.weight is not saved: its input needs no gradient

# %%
frozen = nn.Linear(3, 4).requires_grad_(False)
received, freed = [], []
with saved_tensors_hooks(lambda t: (received.append(t), t)[1], lambda t: t):
    output = second(frozen(x_batch))
print("saved:", [(tuple(t.shape), f"leaf: {t.is_leaf}", f"grad_fn: {t.grad_fn}") for t in received])
assert len(received) == 1 and received[0].is_leaf  # the frozen layer's output, second's input
frozen_output = received.pop()
weakref.finalize(frozen_output, freed.append, "the frozen layer's output was freed")
del frozen_output
print("only the graph holds it:", freed)
assert freed == []
del output
print("the graph deleted:", freed)
assert freed == ["the frozen layer's output was freed"]

# %% [markdown]
# Not every saved tensor is a float32 activation either. Integer tensors (the indices that
# `max_pool1d` and `sort` save) never require grad, so they are leaves, and float16 holds integers
# exactly only up to 2048. And float16 has a small **range**: its largest number is 65504, and
# from 65520 up a number becomes `inf`, which then runs through the gradients. `bfloat16` takes 2
# bytes too, with nearly float32's range (its largest number is 3.39e38, float32's 3.40e38) and
# fewer digits (exact integers only up to 256): an activation that float32 holds practically never
# overflows in it. That is why it is the usual 2-byte type for training where the hardware has it;
# `torch.autocast` on the CPU uses it by default, while float16 training multiplies the loss by a
# scale that it adjusts as it goes (`torch.amp.GradScaler` starts at 65536, halves the scale after a
# step whose gradients overflowed, and doubles it after 2000 steps without) to keep the gradients
# in float16's range. The
# cell shows each of these facts; the exercise below stores float16, and `.bfloat16()` in place of
# `.half()` would make it a bfloat16 saver.

# %%
signal = torch.randn(1, 1, 8, requires_grad=True)
for name, forward in (("max_pool1d", lambda: nn.functional.max_pool1d(signal, 2)),
                      ("sort", lambda: signal.sort(dim=-1))):
    kept = []
    with saved_tensors_hooks(lambda t: (kept.append((t.dtype, t.is_leaf)), t)[1], lambda t: t):
        forward()
    print(f"{name} saves (dtype, is a leaf):", kept)
    assert (torch.int64, True) in kept

indices = torch.tensor([2047, 2049, 4199])
print("indices", indices.tolist(), "through float16:", indices.half().long().tolist())
assert indices.half().long().tolist() == [2047, 2048, 4200]  # float16 holds integers exactly up to 2048

big = torch.tensor([60000.0, 65504.0, 65510.0, 65520.0, 70000.0])
print("largest float16:", torch.finfo(torch.float16).max, "| bfloat16:", torch.finfo(torch.bfloat16).max,
      "| float32:", torch.finfo(torch.float32).max)
assert 3.38e38 < torch.finfo(torch.bfloat16).max < torch.finfo(torch.float32).max < 3.41e38
print(big.tolist(), "as float16:", big.half().tolist(), "| as bfloat16:", big.bfloat16().tolist())
assert torch.finfo(torch.float16).max == 65504 and big.half().tolist() == [60000, 65504, 65504, *[float("inf")] * 2]
assert big.bfloat16().isfinite().all()
print("257 as bfloat16:", torch.tensor(257.0).bfloat16().item(), "| as float16:", torch.tensor(257.0).half().item())
assert torch.tensor(257.0).bfloat16().item() == 256 and torch.tensor(257.0).half().item() == 257

activation = torch.tensor([300.0, 2.0], requires_grad=True)
for dtype in (torch.float16, torch.bfloat16):
    activation.grad = None
    with saved_tensors_hooks(lambda t: (t.to(dtype), t.dtype), back_to_dtype):
        loss = (activation * activation * activation).sum()  # saves activation and activation ** 2 (90000)
    loss.backward()
    print(f"saved as {str(dtype).removeprefix('torch.')}: activation.grad = {activation.grad.tolist()}")
    assert activation.grad[0].isinf() == (dtype == torch.float16)  # the right value is 3 * 300 ** 2 = 270000
print("torch.autocast's dtype on the CPU:", torch.get_autocast_dtype("cpu"))
assert torch.get_autocast_dtype("cpu") == torch.bfloat16
scaler = torch.amp.GradScaler("cpu")
print("GradScaler's first scale:", scaler.get_scale(), "| a loss of 2.0 scaled:", scaler.scale(torch.tensor(2.0)).item())
assert scaler.get_scale() == 65536.0 and scaler.scale(torch.tensor(2.0)).item() == 131072.0
print("GradScaler after an overflow multiplies its scale by", scaler.get_backoff_factor(), "| after",
      scaler.get_growth_interval(), "steps without, by", scaler.get_growth_factor())
assert (scaler.get_backoff_factor(), scaler.get_growth_interval(), scaler.get_growth_factor()) == (0.5, 2000, 2.0)

h = torch.randn(3, 4)
print("h.t() starts at h's address:", h.t().data_ptr() == h.data_ptr())
assert h.t().data_ptr() == h.data_ptr()
freed = []
t = torch.ones(3)
weakref.finalize(t, freed.append, "t was freed")
del t
print("weakref.finalize:", freed)
assert freed == ["t was freed"]
ids = []
for _ in range(10):
    t = torch.ones(3)
    ids.append(id(t))
    del t
addresses = []
for _ in range(10):
    t = torch.ones(100_000)
    addresses.append(t.data_ptr())
    del t
print("ten tensors, each freed before the next is made, had", len(set(ids)), "different ids; ten of",
      "100,000 numbers had", len(set(addresses)), "different addresses")
assert len(set(ids)) < 10 and len(set(addresses)) < 10  # a freed tensor's id and memory go to later tensors
print("saved_tensors_hooks is a class:", isinstance(saved_tensors_hooks, type))
assert isinstance(saved_tensors_hooks, type)

# %% [markdown]
# `saved_tensors_hooks` is a class, so a context manager with state of its own can be a subclass
# that hands two of its methods to `super().__init__(pack, unpack)`, or any class with `__enter__`
# and `__exit__` that enters a `saved_tensors_hooks` block.
#
# ## Exercise 3: `HalfPrecisionSaver` · hard · about 45 min
#
# Write a class `HalfPrecisionSaver`, used as `with saver:` where `saver = HalfPrecisionSaver()`.
# Inside the block, and for the backward of every forward pass run inside it (even when backward
# runs after the block), for each tensor that autograd saves:
#
# - a leaf tensor (a parameter, frozen or not, the input, an integer tensor) or a view of one
#   (`tensor._base` is a leaf, like the `weight.t()` that `nn.Linear` saves) is stored as it is;
# - any other `float32` or `float64` tensor is stored as `torch.float16`, and given back in backward
#   with its original dtype and shape. A tensor that several operations save (the same tensor
#   object) is converted once, and its one copy stored for each of them;
# - any other tensor (`float16`, `bfloat16`) is stored and given back as it is.
#
# The saver itself keeps no tensor alive: not the tensors it converts (a cache of them would keep
# them), and no float16 copy once the tensor it was made from is freed (a cache that never forgets
# holds the memory it was to save). `weakref.finalize(tensor, callback)` calls `callback()` when
# `tensor` is freed.
#
# `saver.bytes_saved` is `0` when the saver is made, and grows each time a tensor is converted (once
# per tensor) by `tensor.numel() * (tensor.element_size() - 2)` (2 bytes a number for `float32`, 6
# for `float64`). One saver can be used in several `with saver:` blocks, one after the other;
# `bytes_saved` keeps growing across them (it is never reset). It counts in forward: after a forward
# pass inside the block, `bytes_saved` already holds that pass's count, and backward does not change
# it. Outside the blocks nothing changes, also after a block that an exception left (and the
# exception goes on).
#
# Traps: converting parameters, views of them, or inputs; converting a tensor twice; a cache keyed
# by `data_ptr()` (a view such as `h.t()` starts at the same address as `h`; and with the shape and
# strides in the key, a freed tensor's memory may go to a later tensor, as in the cell above), or by
# `id()` without forgetting freed tensors (a later tensor gets the same id); a cache that
# forgets only when the block ends (a training loop inside one block keeps every step's copies); an
# unpack hook that gives back `float16` or another shape; converting integer tensors.
#
# Check: run `check(HalfPrecisionSaver)` below, or
# `pytest tests/test_08_autograd_hooks.py -k HalfPrecisionSaver`.

# %% tags=["exercise"]
# Exercise: HalfPrecisionSaver — write your code in this cell.
import weakref

import torch


class HalfPrecisionSaver(torch.autograd.graph.saved_tensors_hooks):
    """A context manager that stores the activations saved for backward in float16.

    Inside `with saver:`, for each tensor that autograd saves:
    - a leaf tensor (a parameter, frozen or not, an input, an integer tensor: any tensor that no
      recorded operation made), or a view of one (its `_base` is a leaf, like the `weight.t()` that
      nn.Linear saves), is stored as it is, not copied;
    - any other tensor whose dtype is float32 or float64 is stored as float16 and given back in
      backward with its original dtype and shape; a tensor that several operations save (the same
      tensor object) is converted once, and that one float16 copy is stored for each of them;
    - any other tensor (float16, bfloat16) is stored and given back as it is.
    The saver itself keeps no tensor alive: not a tensor it converts, and no float16 copy once the
    tensor it was made from is freed.
    `bytes_saved` starts at 0 and grows by `tensor.numel() * (tensor.element_size() - 2)` for each
    tensor converted to float16 (once per tensor), in forward (backward leaves it alone); one saver
    may be used in several `with` blocks, and the count keeps growing across them.
    Outside the blocks nothing changes, also after a block that an exception left (the exception
    goes on).
    """

    def __init__(self):
        # TODO: write this, as its docstring says.
        raise NotImplementedError("HalfPrecisionSaver.__init__ is not written yet")

    def pack(self, tensor):
        """Called in forward with each tensor autograd saves; returns what to store instead."""
        # TODO: write this, as its docstring says.
        raise NotImplementedError("HalfPrecisionSaver.pack is not written yet")

    def unpack(self, packed):
        """Called in backward with what pack returned; returns the tensor for backward to use."""
        # TODO: write this, as its docstring says.
        raise NotImplementedError("HalfPrecisionSaver.unpack is not written yet")


# %%
check(HalfPrecisionSaver)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# The pack hook decides per tensor: a leaf, or a view of one, is kept as it is (the rule that
# spares parameters and inputs);
# a non-leaf `float32` or `float64` tensor is stored smaller, together with what is needed to
# restore it, and counted; anything else is kept as it is. Remember the copy of each tensor you
# converted, so that a second save of the same tensor gets the same copy, and forget it when the
# tensor is freed. The unpack hook reverses exactly what pack did.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# Subclass `torch.autograd.graph.saved_tensors_hooks` and call `super().__init__(pack, unpack)`
# with two bound methods. `tensor.is_leaf` and `tensor._base` (the tensor a view was made from, or
# `None`) find leaves and their views; `tensor.half()` and `tensor.to(dtype)` convert;
# `tensor.numel()` and `tensor.element_size()` count. A dict keyed by `id(tensor)` remembers the
# copies, and `weakref.finalize(tensor, the_dict.pop, key, None)` removes an entry when its tensor
# is freed.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# In `__init__`, set the counter and an empty dict before calling `super().__init__`. In `pack`,
# take `base = tensor._base` when it is not `None` (else the tensor itself); if `base.is_leaf` or
# the dtype is neither float32 nor float64, return `(tensor, None)`. Otherwise, the first time you
# see `id(tensor)`, store `tensor.half()` under it, register the `finalize` and add
# `numel() * (element_size() - 2)`; return `(the stored copy, tensor.dtype)`. `unpack` takes the
# pair apart and converts back when there is a dtype.
#
# </details>

# %% [markdown]
# Your saver on the 4-layer network of the measurement above, measured the same way. Once the
# exercise is done, the cell shows 64 KiB kept for backward (half of the 128 KiB without hooks,
# and the 240 KiB of the naive hooks), `bytes_saved` of 65536, and the largest relative error of a
# parameter's gradient next to full precision, about 2e-4.

# %%
with try_it():
    deep.zero_grad()
    deep(inputs).pow(2).mean().backward()
    full = [p.grad.clone() for p in deep.parameters()]
    deep.zero_grad()
    saver = HalfPrecisionSaver()

    def forward_with_saver():
        with saver:
            return deep(inputs).pow(2).mean()

    kept, loss = bytes_kept(forward_with_saver)
    loss.backward()
    largest_error = max(((p.grad - g).norm() / g.norm()).item() for p, g in zip(deep.parameters(), full))
    print(f"kept for backward: {plain // 1024} KiB without hooks, {naive // 1024} KiB with the naive hooks, "
          f"{kept // 1024} KiB with your saver; saver.bytes_saved: {saver.bytes_saved}")
    print(f"largest relative error of a parameter's gradient: {largest_error:.1e}")
    assert kept == plain // 2 == saver.bytes_saved
    assert 0 < largest_error < 1e-3

# %% [markdown]
# ## Exercise 4: `predict_leaf_backward_order` · medium · about 10 min
#
# **Predict before you run.** The cell below defines `leaf_backward_events(log)`: a leaf `w`, a
# non-leaf `h = w * 2`, and a loss that uses `w` twice, once through `h` and once directly:
# `(h * w).sum()`. It puts a tensor hook on `h`, and on `w` a tensor hook, a pre-hook and a hook on
# its `AccumulateGrad` node and a post-accumulate hook, registered in this order: post-accumulate,
# node hook, node pre-hook, tensor hook. Then it calls `backward()`. Nothing runs yet: the cell only
# defines the function. The events:
#
# - `"tensor:h"`, `"tensor:w"`: the tensor hook (`register_hook`) on that tensor fired;
# - `"node-pre:w"`, `"node:w"`: the pre-hook, or the hook, of `w`'s `AccumulateGrad` node fired;
# - `"post:w"`: the post-accumulate hook of `w` fired;
# - `"grad:w"`: logged once, by the first hook that finds `w.grad` written, just before its own
#   event: it stands where `.grad` gets written.
#
# Write `predict_leaf_backward_order()`: it returns the list of events in the order you expect
# them to fire, an event as many times as it fires. Spelling: case does not matter, nor spaces
# around a name or around the `:`; `nodepre`, `node_pre` or `prehook` may stand for `node-pre`;
# `hook` or `node_hook` for `node`; `post-accumulate` or `post_accumulate` for `post`; and
# `tensor-hook` for `tensor`.
#
# Check: run `check(predict_leaf_backward_order)` below (a wrong prediction is told the first event
# where it parts from what fires, and the rule;
# after three different wrong predictions in one session, `check` shows the whole log), or
# `pytest tests/test_08_autograd_hooks.py -k predict_leaf_backward_order`. Once it passes, the cell
# after the hints prints the log, recorded as it runs.

# %% tags=["prediction"]
import torch


def leaf_backward_events(log):
    w = torch.ones(3, requires_grad=True)
    h = w * 2
    loss = (h * w).sum()
    accumulate = h.grad_fn.next_functions[0][0]  # w's AccumulateGrad node
    written = []

    def note(event):
        if w.grad is not None and not written:
            written.append(True)
            log("grad:w")
        log(event)

    w.register_post_accumulate_grad_hook(lambda param: note("post:w"))
    accumulate.register_hook(lambda grad_inputs, grad_outputs: note("node:w"))
    accumulate.register_prehook(lambda grad_outputs: note("node-pre:w"))
    w.register_hook(lambda grad: note("tensor:w"))
    h.register_hook(lambda grad: note("tensor:h"))
    loss.backward()


# %% tags=["exercise"]
# Exercise: predict_leaf_backward_order — write your code in this cell.


def predict_leaf_backward_order():
    """Return the events that `leaf_backward_events` logs, in the order they fire.

    Each event is one of the names the cell above logs, e.g. "tensor:w".
    """
    # TODO: return ["...", ...]: the events, in the order you expect them to fire
    raise NotImplementedError("predict_leaf_backward_order is not written yet")


# %%
check(predict_leaf_backward_order)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Two questions before the order on the leaf: which gradient can autograd compute first, `h`'s or
# `w`'s? And does `w`, used twice, get its gradient once or twice?
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# Autograd adds up every gradient that flows into a leaf before its `AccumulateGrad` node runs;
# the order on a leaf is the one this lesson showed, whatever order the hooks were registered in.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Six events, each once; `"tensor:h"` is one end, and `"grad:w"` stands between the node's
# pre-hook and the post-accumulate hook.
#
# </details>

# %% [markdown]
# Once your prediction is right, this cell prints what fires, recorded as it runs (until then it
# says what to do).

# %%
from hooked.notebook import reveal

reveal(predict_leaf_backward_order)

# %% [markdown]
# ## Summary
#
# | Hook | registered by | called as | fires | its return |
# |---|---|---|---|---|
# | post-accumulate-grad | `leaf.register_post_accumulate_grad_hook(hook)` | `hook(tensor)` | after `.grad` is written; not under `torch.autograd.grad` | `None` (another tensor raises) |
# | node pre-hook | `t.grad_fn.register_prehook(fn)` | `fn(grad_outputs)` | before the node runs | a tuple replaces `grad_outputs` |
# | node hook | `t.grad_fn.register_hook(fn)` | `fn(grad_inputs, grad_outputs)` | after the node ran | a tuple replaces `grad_inputs` |
# | multi-grad | `torch.autograd.graph.register_multi_grad_hook(tensors, fn, mode="all")` | `fn(grads)`, `None` for a tensor not reached; `fn(grad)` with `mode="any"` | once per pass that reaches any of `tensors` (under `torch.autograd.grad`, mode `"all"` raises with a hooked leaf among `inputs`) | ignored |
# | saved tensors | `with torch.autograd.graph.saved_tensors_hooks(pack, unpack):` | `pack(tensor)` in forward, `unpack(stored)` in backward | each time autograd saves / uses a tensor | `unpack` must give back the original's values, dtype and shape (unchecked: a wrong one may raise, or give a wrong gradient) |
#
# On a leaf, one backward pass runs: tensor hook, `AccumulateGrad` pre-hook, `.grad` written,
# post-accumulate hook, `AccumulateGrad` hook. Grad mode is off in backward hooks unless
# `create_graph=True`, so update parameters under `torch.no_grad()`. A float16 pack hook saves
# memory only if it stores what stays alive anyway (parameters and inputs, and their views) as it is
# and converts each activation once: measure what the graph keeps. Not every leaf stays alive
# anyway: a frozen layer's output is a leaf that only the graph holds. `save_on_cpu()` is a ready-made pack/unpack pair, and
# `disable_saved_tensors_hooks(message)` forbids such hooks in a block.
#
# Next, lesson 09 gathers the ways hooks go wrong, and how to find hooks that were left behind.
