# %% [markdown]
# # Lesson 05 — Backward hooks on modules
#
# Lesson 01 hooked the gradient of one tensor. A module has inputs, outputs and parameters, and
# PyTorch offers two hooks that see the gradients flowing back through a whole module: the
# *full backward pre-hook*, called with the gradient of the module's output before the module's
# own backward runs, and the *full backward hook*, called once the gradients of its inputs exist.
#
# After this lesson you will be able to:
#
# - register `register_full_backward_pre_hook` and `register_full_backward_hook`, and say when
#   each one fires, what `grad_output` and `grad_input` hold, and what a returned value changes;
# - explain, with numbers, why the old `register_backward_hook` is deprecated;
# - recognise the traps: hooks that never fire under `no_grad`, the warning when no input
#   requires grad, the error that an in-place ReLU causes (and its fix), and gradients changed
#   in place;
# - use backward hooks to monitor, clip and add noise to gradients.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_05_backward_hooks.py` (add `-k clip_grad_input` for one exercise; plain
# `pytest` grades every lesson).

# %%
import copy
import warnings

import matplotlib.pyplot as plt
import torch
from torch import nn

from hooked.notebook import check, hint, try_it

torch.set_num_threads(1)  # the tensors of this lesson are tiny; torch works on one thread here
print(torch.__version__)

# %% [markdown]
# ## The two backward hooks of a module
#
# Take a linear layer `y = layer(x)` inside a bigger computation that ends in a loss.
#
# - `layer.register_full_backward_pre_hook(hook)`: during backward, autograd calls
#   `hook(module, grad_output)` as soon as the gradient of the loss with respect to the module's
#   output is known, before the module's own backward runs. `grad_output` is a tuple with one
#   entry per output.
# - `layer.register_full_backward_hook(hook)`: autograd calls `hook(module, grad_input, grad_output)`
#   after the gradients with respect to the module's positional inputs have been computed.
#   `grad_input` is a tuple with one entry per positional input.
#
# Parameters are not inputs: the gradient of `layer.weight` is not in `grad_input`. The cell
# compares what the hooks receive with gradients computed directly by `torch.autograd.grad`.

# %%
torch.manual_seed(0)
layer = nn.Linear(3, 2)
x = torch.randn(4, 3, requires_grad=True)
target = torch.randn(4, 2)
received = {}


def pre_hook(module, grad_output):
    received["pre tuple"] = grad_output
    received["pre"] = [g.clone() for g in grad_output]
    received["weight.grad in pre-hook"] = module.weight.grad


def full_hook(module, grad_input, grad_output):
    received["grad_input tuple"] = grad_input
    received["grad_input"] = [g.clone() for g in grad_input]
    received["grad_output"] = [g.clone() for g in grad_output]


layer.register_full_backward_pre_hook(pre_hook)
layer.register_full_backward_hook(full_hook)
y = layer(x)
loss = ((y - target) ** 2).sum()
dloss_dy, dloss_dx = torch.autograd.grad(loss, (y, x), retain_graph=True)
loss.backward()

print("pre-hook grad_output shapes: ", [tuple(g.shape) for g in received["pre"]])
print("full hook grad_output shapes:", [tuple(g.shape) for g in received["grad_output"]])
print("full hook grad_input shapes: ", [tuple(g.shape) for g in received["grad_input"]])
print("grad_output[0] == d loss / d y:", torch.allclose(received["pre"][0], dloss_dy))
print("grad_input[0]  == d loss / d x:", torch.allclose(received["grad_input"][0], dloss_dx),
      "(and x.grad holds the same)")
print("layer.weight.grad inside the pre-hook:", received["weight.grad in pre-hook"])
print("types received:", type(received["pre tuple"]).__name__, type(received["grad_input tuple"]).__name__)
assert type(received["pre tuple"]) is tuple and type(received["grad_input tuple"]) is tuple
assert [tuple(g.shape) for g in received["pre"]] == [(4, 2)]
assert [tuple(g.shape) for g in received["grad_input"]] == [(4, 3)]
assert torch.allclose(received["pre"][0], dloss_dy) and torch.allclose(received["grad_output"][0], dloss_dy)
assert torch.allclose(received["grad_input"][0], dloss_dx) and torch.allclose(x.grad, dloss_dx)
assert received["weight.grad in pre-hook"] is None  # the module's backward has not run yet

# %% [markdown]
# Inside the pre-hook, `layer.weight.grad` is still `None`: the layer's own backward has not run.
#
# ## When they fire, layer by layer
#
# Backward runs from the loss towards the input. The picture below is one real backward pass
# through three linear layers (with `tanh` between them), each with both hooks. Each event was
# appended to a list at the moment its hook ran.

# %%
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
events = []
for name, module in mlp.named_modules():
    if isinstance(module, nn.Linear):
        module.register_full_backward_pre_hook(
            lambda m, grad_output, name=name: events.append(f"pre-hook {name}"))
        module.register_full_backward_hook(
            lambda m, grad_input, grad_output, name=name: events.append(f"hook {name}"))

out = mlp(torch.randn(2, 4, requires_grad=True))
events.append("forward done")
out.sum().backward()
print(events)
assert events == ["forward done", "pre-hook 4", "hook 4", "pre-hook 2", "hook 2", "pre-hook 0", "hook 0"]

fig, ax = plt.subplots(figsize=(8, 2.4))
backward_events = events[1:]
for step, event in enumerate(backward_events):
    kind, name = event.split(" ")
    ax.scatter(step, 0, s=140, color="tab:orange" if kind == "pre-hook" else "tab:blue", zorder=2)
    ax.annotate(f"{step + 1}. {kind}\nlayer {name}", (step, 0), xytext=(0, 14), textcoords="offset points",
                ha="center", fontsize=10)
ax.annotate("", xy=(len(backward_events) - 0.5, 0), xytext=(-0.5, 0),
            arrowprops=dict(arrowstyle="->", color="0.5"), zorder=1)
ax.scatter([], [], color="tab:orange", label="full backward pre-hook")
ax.scatter([], [], color="tab:blue", label="full backward hook")
ax.legend(loc="lower left", frameon=False, ncol=2)
ax.set_xlim(-0.7, len(backward_events) - 0.3)
ax.set_ylim(-0.5, 0.8)
ax.axis("off")
ax.text(len(backward_events) - 0.5, -0.4, "backward time →", ha="right", color="0.4")
ax.set_title("One backward pass through Linear 0 → Linear 2 → Linear 4, in the order the hooks fired")
plt.tight_layout()
plt.show()

# %% [markdown]
# For each layer the pre-hook comes first and the full hook right after it: the full hook of
# layer `4` has fired before anything happens in layer `2`.
#
# A module called twice in one forward pass is gone through twice in backward, so its hooks fire
# twice, the second call first. Each call gets its own `grad_output`.

# %%
torch.manual_seed(0)
shared = nn.Linear(3, 3)
seen = []
shared.register_full_backward_hook(
    lambda m, grad_input, grad_output: seen.append((grad_input[0].clone(), grad_output[0].clone())))
x = torch.randn(2, 3, requires_grad=True)
h = shared(x)  # first call
out = shared(torch.tanh(h))  # second call
dout_dh, = torch.autograd.grad(out.sum(), h, retain_graph=True)  # for comparison
print("firings during autograd.grad(out.sum(), h):", len(seen), "(only the second call lies between out and h)")
assert len(seen) == 1
seen.clear()
out.sum().backward()
print("hook calls in one backward:", len(seen))
print("grad_output of the 1st firing is d out / d out (ones):", torch.equal(seen[0][1], torch.ones(2, 3)))
print("grad_output of the 2nd firing is d out / d h:", torch.allclose(seen[1][1], dout_dh))
assert len(seen) == 2
assert torch.equal(seen[0][1], torch.ones(2, 3))  # the second call, nearer the loss, fires first
assert torch.allclose(seen[1][1], dout_dh)
assert torch.allclose(seen[1][0], x.grad)  # the first call's grad_input is the gradient of x

# %% [markdown]
# ## What `grad_input` holds
#
# `grad_input` has one entry per **positional** argument of `forward`, in order:
#
# - an argument that is not a tensor (a number, a flag) gets `None`;
# - a tensor argument that does not require grad, next to one that does, gets a tensor of zeros
#   (in torch 2.13);
# - keyword arguments are not in `grad_input` at all.

# %%
class ScaledProduct(nn.Module):
    def forward(self, a, b, scale, offset=None):
        out = a * b * scale
        return out if offset is None else out + offset


a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0])  # needs no grad
offset = torch.tensor([5.0, 6.0], requires_grad=True)  # passed by keyword
seen = []
product = ScaledProduct()
product.register_full_backward_hook(lambda m, grad_input, grad_output: seen.append(grad_input))
product(a, b, 10.0, offset=offset).sum().backward()
print("grad_input =", seen[0])
print("len(grad_input) =", len(seen[0]), "| a.grad =", a.grad, "| offset.grad =", offset.grad)
assert len(seen[0]) == 3  # a, b, scale: the keyword argument has no entry
assert torch.equal(seen[0][0], torch.tensor([30.0, 40.0]))  # d/da of a * b * 10
assert torch.equal(seen[0][1], torch.zeros(2))  # b needs no grad: zeros
assert seen[0][2] is None  # 10.0 is not a tensor
assert torch.equal(offset.grad, torch.ones(2))  # the keyword argument still gets its gradient

# %% [markdown]
# `grad_output` likewise has one entry per output of a module that returns a tuple, in order,
# with `None` for an output that is not a tensor.

# %%
class ThreeOutputs(nn.Module):
    def forward(self, x):
        return 2 * x, torch.tanh(x), "a label"


seen = []
three = ThreeOutputs()
three.register_full_backward_pre_hook(lambda m, grad_output: seen.append(grad_output))
doubled, squashed, label = three(torch.tensor([0.0, 1.0], requires_grad=True))
(3 * doubled + squashed).sum().backward()
print("grad_output =", seen[0])
assert len(seen[0]) == 3 and seen[0][2] is None
assert torch.equal(seen[0][0], torch.full((2,), 3.0)) and torch.equal(seen[0][1], torch.ones(2))

# %% [markdown]
# ### When no input requires grad
#
# The first layer of a network usually receives data that does not require grad, while its
# parameters do. Then there is no input gradient to wait for: the full hook fires as soon as
# `grad_output` is known, every entry of `grad_input` is `None`, and PyTorch warns. A module with
# only a backward **pre**-hook warns too until torch 2.13; from torch 2.14 it does not.

# %%
def caught_warnings(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught]


torch.manual_seed(0)
first_layer = nn.Linear(3, 2)
unhooked = copy.deepcopy(first_layer)
data = torch.randn(4, 3)  # requires_grad=False, as data usually is
seen = []
first_layer.register_full_backward_hook(
    lambda m, grad_input, grad_output: seen.append((grad_input, m.weight.grad)))
messages = caught_warnings(lambda: first_layer(data).sum().backward())
print("grad_input =", seen[0][0], "| weight.grad inside the hook:", seen[0][1])
print("warning:", messages[0])
assert seen[0][0] == (None,)
assert seen[0][1] is None  # the hook ran before the layer's own backward
unhooked(data).sum().backward()
print("weight.grad equals that of a copy without the hook:", torch.equal(first_layer.weight.grad, unhooked.weight.grad))
assert torch.equal(first_layer.weight.grad, unhooked.weight.grad)  # the gradients are right
assert messages[0].startswith("Full backward hook is firing when gradients are computed with respect to "
                              "module outputs since no inputs require gradients.")

only_pre = nn.Linear(3, 2)
only_pre.register_full_backward_pre_hook(lambda m, grad_output: None)
messages = caught_warnings(lambda: only_pre(data).sum().backward())
print(f"torch {torch.__version__}, with only a pre-hook:", [m[:60] + " ..." for m in messages])
if torch.__version__ >= "2.14":  # a module with only a pre-hook stopped warning in torch 2.14
    assert messages == []
else:  # until torch 2.13
    assert messages[0].startswith("Full backward hook is firing")


def silenced():
    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    first_layer(data).sum().backward()


messages = caught_warnings(silenced)  # the filter is set inside caught_warnings' catch_warnings() block
print("with the filter below, inside the block:", messages)
assert messages == []
messages = caught_warnings(lambda: first_layer(data).sum().backward())
print("after the block, the warning is back:", messages[0][:28], "...")
assert messages[0].startswith("Full backward hook is firing")

# %% [markdown]
# Inside the hook, `weight.grad` is still `None`: the hook ran before the layer's own backward.
# The gradients are right (the same as without the hook); the warning only says that the hook ran
# early. In a loop where you know why it happens, silence it with
# `warnings.filterwarnings("ignore", message="Full backward hook is firing")`, inside a
# `warnings.catch_warnings()` block so that the filter ends with the block (the end of the cell
# shows both).
#
# ## What a returned value does
#
# Both hooks may return a tuple of the same length as the one they received; it replaces it.
#
# - The pre-hook's return replaces `grad_output` **before** the module's backward, so it changes
#   the gradients of the module's parameters and of its inputs.
# - The full hook's return replaces `grad_input` **after** the module's backward, so it changes
#   only what flows on to the inputs (and to everything before them). The gradients of the
#   module's own parameters were computed from the original `grad_output`; the hook cannot change
#   them (but `.grad` may not be written yet when it fires, as the cell after this one shows).
#
# The cell doubles the gradient once with each hook and compares with a layer without hooks.

# %%
def grads_of(layer, x):
    x = x.detach().requires_grad_()
    layer(x).pow(2).sum().backward()
    return {"weight": layer.weight.grad, "x": x.grad}


torch.manual_seed(0)
plain = nn.Linear(3, 2)
x = torch.randn(4, 3)
reference = grads_of(plain, x)

doubled_output = copy.deepcopy(plain)
doubled_output.register_full_backward_pre_hook(lambda m, grad_output: tuple(2 * g for g in grad_output))
by_pre_hook = grads_of(doubled_output, x)

doubled_input = copy.deepcopy(plain)
doubled_input.register_full_backward_hook(lambda m, grad_input, grad_output: tuple(2 * g for g in grad_input))
by_full_hook = grads_of(doubled_input, x)

for what, grads in (("pre-hook doubles grad_output", by_pre_hook), ("full hook doubles grad_input", by_full_hook)):
    ratio_w = (grads["weight"] / reference["weight"]).mean().item()
    ratio_x = (grads["x"] / reference["x"]).mean().item()
    print(f"{what}: weight.grad x{ratio_w:.0f}, x.grad x{ratio_x:.0f}")
assert torch.allclose(by_pre_hook["weight"], 2 * reference["weight"])
assert torch.allclose(by_pre_hook["x"], 2 * reference["x"])
assert torch.allclose(by_full_hook["weight"], reference["weight"])  # the layer's own parameters: unchanged
assert torch.allclose(by_full_hook["x"], 2 * reference["x"])

# %% [markdown]
# Computed is not yet stored. Autograd writes a parameter's `.grad` once all of its contributions
# are summed. For a module called once (on an input that requires grad), `.grad` happens to be
# written already when the full hook fires; for a module called twice, it is still `None` at the
# first firing and holds the sum of both calls at the second. Read parameter gradients after
# `backward()` returns, not in a full backward hook (lesson 08 shows a hook that fires when
# `.grad` is written).

# %%
def weight_grad_at_each_firing(calls):
    torch.manual_seed(0)
    layer = nn.Linear(3, 3)
    at_firing = []
    layer.register_full_backward_hook(
        lambda m, grad_input, grad_output: at_firing.append(None if m.weight.grad is None else m.weight.grad.clone()))
    h = torch.randn(2, 3, requires_grad=True)
    for _ in range(calls):
        h = torch.tanh(layer(h))
    h.sum().backward()
    return at_firing, layer.weight.grad


at_firing, final = weight_grad_at_each_firing(calls=1)
print("called once:  weight.grad at the firing is the final one:", torch.equal(at_firing[0], final))
assert torch.equal(at_firing[0], final)
at_firing, final = weight_grad_at_each_firing(calls=2)
print("called twice: weight.grad at the 1st firing:", at_firing[0],
      "| at the 2nd, the final one:", torch.equal(at_firing[1], final))
assert at_firing[0] is None and torch.equal(at_firing[1], final)

# %% [markdown]
# A returned tuple of another length is refused during `backward()`. This matters when
# `grad_input` holds `None` entries: drop them and the length is wrong.

# %%
product = ScaledProduct()
product.register_full_backward_hook(
    lambda m, grad_input, grad_output: tuple(g * 2 for g in grad_input if g is not None))  # drops the None
try:
    product(a, b, 10.0).sum().backward()
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}")
    assert str(e) == "Backward hook returned an invalid number of grad_input, got 2, but expected 3"

pre_hooked = nn.Linear(3, 2)
pre_hooked.register_full_backward_pre_hook(lambda m, grad_output: grad_output[0])  # a tensor, not a tuple
try:
    pre_hooked(torch.randn(4, 3, requires_grad=True)).sum().backward()
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}")
    assert str(e) == "Backward pre hook returned an invalid number of grad_output, got 4, but expected 1"

# %% [markdown]
# The second error counts 4 because `len()` of a `(4, 2)` tensor is its first dimension: return
# `(new_grad,)`, a tuple, even for a single output.
#
# Return a tuple, not a list. A list is accepted while some input requires grad, but when none
# does (a first layer fed with data), a full hook may only return `None` or a tuple of `None`.
# (A pre-hook's list of `grad_output` is accepted in both cases.)

# %%
returns_list = nn.Linear(3, 2)
returns_list.register_full_backward_hook(lambda m, grad_input, grad_output: list(grad_input))
returns_list(torch.randn(4, 3, requires_grad=True)).sum().backward()
print("a list, with an input that requires grad: accepted")
try:
    caught_warnings(lambda: returns_list(torch.randn(4, 3)).sum().backward())
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"a list, with no input that requires grad: {type(e).__name__}: {e}")
    assert str(e) == ("Backward hook for Modules where no input requires gradient should always return None or "
                      "None for all gradients.")

returns_tuple = nn.Linear(3, 2)
returns_tuple.register_full_backward_hook(lambda m, grad_input, grad_output: tuple(grad_input))  # (None,)
caught_warnings(lambda: returns_tuple(torch.randn(4, 3)).sum().backward())
print("a tuple of None, with no input that requires grad: accepted")
assert returns_tuple.weight.grad is not None

pre_returns_list = nn.Linear(3, 2)
pre_returns_list.register_full_backward_pre_hook(lambda m, grad_output: list(grad_output))
for needs_grad in (True, False):
    caught_warnings(lambda: pre_returns_list(torch.randn(4, 3, requires_grad=needs_grad)).sum().backward())
print("a pre-hook's list, with and without an input that requires grad: accepted")
assert pre_returns_list.weight.grad is not None

# %% [markdown]
# ## Trap: changing a gradient in place
#
# As with tensor hooks (lesson 01), the tensors in `grad_output` and `grad_input` are not private
# to your hook. Below, the output of a linear layer is added to a second branch `h = 2 * b`; the
# backward of `+` hands the **same** gradient tensor to both branches. A pre-hook that adds 1 to
# `grad_output` in place (`add_`) also changes the gradient of the other branch, so `b.grad` is
# wrong. Returning a new tuple does not.

# %%
def add_one_in_place(module, grad_output):
    for grad in grad_output:
        grad.add_(1.0)  # wrong: in place


def add_one(module, grad_output):
    return tuple(grad + 1.0 for grad in grad_output)  # right: new tensors


torch.manual_seed(0)
w = torch.randn(5)
for hook in (add_one_in_place, add_one):
    torch.manual_seed(1)
    branch_layer = nn.Linear(5, 5)
    a = torch.randn(5, requires_grad=True)
    b = torch.randn(5, requires_grad=True)
    addresses = {}
    branch_layer.register_full_backward_pre_hook(
        lambda m, grad_output: addresses.update(layer=grad_output[0].data_ptr()))
    branch_layer.register_full_backward_pre_hook(hook)
    h = 2 * b
    h.register_hook(lambda grad: addresses.update(h=grad.data_ptr()))
    ((branch_layer(a) + h) * w).sum().backward()  # the true b.grad is 2 * w
    print(f"{hook.__name__:>16}: same gradient memory for both branches: {addresses['layer'] == addresses['h']}, "
          f"b.grad == 2 * w: {torch.allclose(b.grad, 2 * w)}")
    assert addresses["layer"] == addresses["h"]
    assert torch.allclose(b.grad, 2 * w) == (hook is add_one)

# %% [markdown]
# ## Gradients that require grad: `create_graph=True`
#
# In an ordinary backward, hooks run with grad mode off and the gradients they receive do not
# require grad. A backward with `create_graph=True` (used for gradient penalties and other
# second derivatives, here through `torch.autograd.grad`) records the backward pass itself as a
# graph: inside the hooks grad mode is on, the gradients require grad, `.numpy()` on them raises,
# and a tensor a hook returns is part of that graph only if the hook computed it with grad mode on.
# A full hook that doubles `grad_input` under `torch.no_grad()` cuts the input's gradient off the
# graph.

# %%
def inside_hooks(create_graph, hook_grad_mode=True):
    torch.manual_seed(0)
    layer = nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    seen = {}

    def hook(module, grad_input, grad_output):
        seen["grad mode"] = torch.is_grad_enabled()
        seen["grad_output[0].requires_grad"] = grad_output[0].requires_grad
        try:
            grad_output[0].numpy()
            seen[".numpy()"] = "works"
        except RuntimeError as e:
            seen[".numpy()"] = str(e)
        with torch.set_grad_enabled(hook_grad_mode and torch.is_grad_enabled()):
            return tuple(2 * g for g in grad_input)

    layer.register_full_backward_hook(hook)
    grad_x, = torch.autograd.grad((layer(x) ** 2).sum(), x, create_graph=create_graph)
    seen["x's gradient requires grad"] = grad_x.requires_grad
    return seen


ordinary, with_graph = inside_hooks(create_graph=False), inside_hooks(create_graph=True)
no_grad_hook = inside_hooks(create_graph=True, hook_grad_mode=False)
print("ordinary backward:  ", ordinary)
print("create_graph=True:  ", with_graph)
print("  hook under no_grad:", {"x's gradient requires grad": no_grad_hook["x's gradient requires grad"]})
assert ordinary == {"grad mode": False, "grad_output[0].requires_grad": False, ".numpy()": "works",
                    "x's gradient requires grad": False}
assert with_graph["grad mode"] and with_graph["grad_output[0].requires_grad"]
assert with_graph[".numpy()"].startswith("Can't call numpy() on Tensor that requires grad.")
assert with_graph["x's gradient requires grad"] and not no_grad_hook["x's gradient requires grad"]

# %% [markdown]
# ## No backward hook fires under `no_grad`
#
# Under `torch.no_grad()` the forward pass records no graph, so there is nothing for backward to
# go through, and the module's backward hooks are not even installed: with grad enabled, a hooked
# module's output comes out of an extra hook step (its `grad_fn` is `BackwardHookFunctionBackward`);
# under `no_grad` it has no `grad_fn` at all. A common case: a frozen
# feature extractor run under `no_grad`, followed by a trained head. Backward reaches the head,
# never the extractor.

# %%
torch.manual_seed(0)
extractor, head = nn.Linear(3, 4), nn.Linear(4, 1)
calls = []
extractor.register_full_backward_pre_hook(lambda m, grad_output: calls.append("extractor pre-hook"))
extractor.register_full_backward_hook(lambda m, grad_input, grad_output: calls.append("extractor hook"))
head.register_full_backward_hook(lambda m, grad_input, grad_output: calls.append("head hook"))

print("grad_fn of the extractor's output with grad enabled:", type(extractor(torch.randn(5, 3)).grad_fn).__name__)
with torch.no_grad():
    features = extractor(torch.randn(5, 3))
print("features.requires_grad:", features.requires_grad, "| features.grad_fn:", features.grad_fn)
messages = caught_warnings(lambda: head(features).sum().backward())
print("hooks that fired:", calls)
print("extractor.weight.grad:", extractor.weight.grad, "| head.weight.grad is set:", head.weight.grad is not None)
assert type(extractor(torch.randn(5, 3)).grad_fn).__name__ == "BackwardHookFunctionBackward"  # the hook step
assert not features.requires_grad and features.grad_fn is None  # no graph, no hook step in it
assert calls == ["head hook"]
assert messages[0].startswith("Full backward hook is firing")  # the head's input needs no grad
assert extractor.weight.grad is None and head.weight.grad is not None

# %% [markdown]
# ## Why `register_backward_hook` is deprecated
#
# The old `register_backward_hook` does not hook the module: it hooks the **last operation**
# inside `forward`. Its `grad_input` is the gradient with respect to that operation's inputs,
# which are not the module's inputs in general.
#
# The module below computes `2 * tanh(linear(x))`. Its last operation is the multiplication by 2,
# so the old hook reports the gradient with respect to `tanh(linear(x))`: 2 everywhere (the loss
# is a sum). The full hook reports the gradient with respect to `x`, the module's input, which is
# also what lands in `x.grad`.

# %%
class Squash(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        return 2 * torch.tanh(self.linear(x))


torch.manual_seed(0)
old_style = Squash()
full_style = copy.deepcopy(old_style)
x = torch.randn(2, 3)
old_seen, full_seen = [], []


def run_old():
    old_style.register_backward_hook(lambda m, grad_input, grad_output: old_seen.append(grad_input))
    old_style(x.clone().requires_grad_()).sum().backward()


messages = caught_warnings(run_old)
full_style.register_full_backward_hook(lambda m, grad_input, grad_output: full_seen.append(grad_input))
full_x = x.clone().requires_grad_()
full_style(full_x).sum().backward()


def first_rows(grads):
    return ["None" if g is None else "[" + ", ".join(f"{v:6.3f}" for v in g[0].tolist()) + "]" for g in grads]


print("old hook  grad_input:", ", ".join(first_rows(old_seen[0])), "  (first rows)")
print("full hook grad_input:", ", ".join(first_rows(full_seen[0])))
print("x.grad:              ", ", ".join(first_rows([full_x.grad])))
print("warning:", messages[0])
assert len(old_seen[0]) == 2 and old_seen[0][1] is None  # the inputs of `2 * t`: t, and the constant
assert torch.equal(old_seen[0][0], torch.full((2, 3), 2.0))  # d loss / d tanh(...), not d loss / d x
assert torch.allclose(full_seen[0][0], full_x.grad)
assert not torch.allclose(old_seen[0][0], full_x.grad)
assert messages[0].startswith("Using a non-full backward hook when the forward contains multiple autograd Nodes "
                              "is deprecated")

# %% [markdown]
# Even a single `nn.Linear` confuses it: its forward is one matrix operation with three inputs,
# so the old hook's `grad_input` has three entries, the gradients of the bias, of the input and of
# the *transposed* weight, instead of one entry for the one input. And a module cannot have both
# the old hook and a full backward hook (in either order); a full backward pre-hook is accepted
# next to the old hook, so that pair raises nothing that would warn you.

# %%
torch.manual_seed(0)
linear = nn.Linear(3, 2)
old_seen = []
caught_warnings(lambda: linear.register_backward_hook(
    lambda m, grad_input, grad_output: old_seen.append(grad_input)))
x = torch.randn(4, 3, requires_grad=True)
caught_warnings(lambda: linear(x).sum().backward())
bias_grad, input_grad, weight_t_grad = old_seen[0]
print("old hook on Linear(3, 2), input (4, 3): grad_input shapes", [tuple(g.shape) for g in old_seen[0]])
print("weight shape:", tuple(linear.weight.shape))
print("entries equal bias.grad, x.grad, weight.grad.T:", torch.equal(bias_grad, linear.bias.grad),
      torch.equal(input_grad, x.grad), torch.equal(weight_t_grad, linear.weight.grad.T))
assert [tuple(g.shape) for g in old_seen[0]] == [(2,), (4, 3), (3, 2)]
assert torch.equal(bias_grad, linear.bias.grad) and torch.equal(input_grad, x.grad)
assert torch.equal(weight_t_grad, linear.weight.grad.T)

try:
    linear.register_full_backward_hook(lambda m, grad_input, grad_output: None)
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}")
    assert str(e).startswith("Cannot use both regular backward hooks and full backward hooks on a single Module.")

full_first = nn.Linear(3, 2)
full_first.register_full_backward_hook(lambda m, grad_input, grad_output: None)
try:
    caught_warnings(lambda: full_first.register_backward_hook(lambda m, grad_input, grad_output: None))
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"the other order: {type(e).__name__}: {str(e)[:60]}...")
    assert str(e).startswith("Cannot use both regular backward hooks and full backward hooks on a single Module.")

pre_calls = []
linear.register_full_backward_pre_hook(lambda m, grad_output: pre_calls.append("pre-hook"))  # accepted
caught_warnings(lambda: linear(x).sum().backward())
print("a full backward pre-hook next to the old hook is accepted and fires:", pre_calls)
assert pre_calls == ["pre-hook"]

# %% [markdown]
# Use `register_full_backward_hook` and `register_full_backward_pre_hook`; never the old one.
#
# ## Trap: an in-place ReLU
#
# A full backward hook (or pre-hook) works by passing the module's inputs and outputs through an
# extra identity step that autograd can hook. PyTorch forbids changing that step's output in
# place. So a hooked module whose output goes into `nn.ReLU(inplace=True)`, or a hooked
# `nn.ReLU(inplace=True)` itself, fails, already in the **forward** pass.

# %%
IN_PLACE_ERROR = "Output 0 of BackwardHookFunction is a view and is being modified inplace."

for where, kind in (("the Linear before an in-place ReLU", "full hook"),
                    ("the Linear before an in-place ReLU", "pre-hook"),
                    ("the in-place ReLU itself", "full hook")):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 1))
    hooked_layer = net[0] if where.startswith("the Linear") else net[1]
    if kind == "full hook":
        hooked_layer.register_full_backward_hook(lambda m, grad_input, grad_output: None)
    else:
        hooked_layer.register_full_backward_pre_hook(lambda m, grad_output: None)
    try:
        out = net(torch.randn(2, 3, requires_grad=True))  # forward only
        raise AssertionError("expected a RuntimeError")
    except RuntimeError as e:
        print(f"{kind} on {where}, forward raised:\n  {type(e).__name__}: {e}\n")
        assert str(e).startswith(IN_PLACE_ERROR)

hooked_linear = nn.Linear(3, 4)
hooked_linear.register_full_backward_hook(lambda m, grad_input, grad_output: None)
try:
    hooked_linear(torch.randn(2, 3)).add_(1.0)  # any in-place operation on the output
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"output.add_(1.0) after a hooked Linear: {type(e).__name__}: {str(e)[:50]}...")
    assert str(e).startswith(IN_PLACE_ERROR)

# %% [markdown]
# Two fixes. Use `nn.ReLU(inplace=False)` (the default), if you may change the model. If you may
# not, skip the module hook: register a **forward** hook that registers a **tensor** hook on the
# output (lesson 01). The tensor hook receives the gradient with respect to the layer's output,
# the same as `grad_output[0]`, and it may return a replacement, as in lesson 01. The cell checks
# it against a full backward hook on an identical model without the in-place ReLU.

# %%
def watch_output_gradient(module, args, output):
    output.register_hook(lambda grad: from_tensor_hook.append(grad.detach().clone()))


torch.manual_seed(0)
in_place = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 1))
not_in_place = copy.deepcopy(in_place)
not_in_place[1] = nn.ReLU()
x = torch.randn(5, 3)

from_tensor_hook, from_full_hook = [], []
in_place[0].register_forward_hook(watch_output_gradient)
not_in_place[0].register_full_backward_hook(
    lambda m, grad_input, grad_output: from_full_hook.append(grad_output[0].clone()))
in_place(x).sum().backward()
caught_warnings(lambda: not_in_place(x).sum().backward())  # (its input needs no grad: it warns)
print("tensor hook (in-place model):", from_tensor_hook[0][0].tolist())
print("full hook (copy without it): ", from_full_hook[0][0].tolist())
assert torch.allclose(from_tensor_hook[0], from_full_hook[0])
assert torch.allclose(in_place[0].weight.grad, not_in_place[0].weight.grad)
assert nn.ReLU().inplace is False  # the default

# %% [markdown]
# ## Use 1: monitoring gradients
#
# The size of the gradient that reaches each layer tells you whether training is healthy: if it
# shrinks layer after layer towards the input (*vanishing gradients*), the first layers barely
# learn. A backward hook that records `grad_output[0].norm()` per layer measures it on every step,
# without touching the training loop. Below, a pre-hook records it in two networks with the same
# linear layers, one with sigmoid activations and one with tanh, trained for 60 steps of plain
# gradient descent on the same regression.

# %%
def make_network(activation):
    torch.manual_seed(0)  # the same linear layers for both activations
    return nn.Sequential(nn.Linear(16, 32), activation(), nn.Linear(32, 32), activation(),
                         nn.Linear(32, 32), activation(), nn.Linear(32, 1))


networks = {"sigmoid": make_network(nn.Sigmoid), "tanh": make_network(nn.Tanh)}
inputs = torch.randn(256, 16)
targets = torch.sin(inputs[:, :1]) * 0.5
target_variance = targets.var(unbiased=False).item()  # the loss of always predicting the targets' mean

histories, losses = {}, {}
for kind, network in networks.items():
    history = histories[kind] = {}
    for name, module in network.named_modules():
        if isinstance(module, nn.Linear):
            history[name] = []
            module.register_full_backward_pre_hook(
                lambda m, grad_output, history=history, name=name: history[name].append(grad_output[0].norm().item()))
    losses[kind] = []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")  # layer 0: data needs no grad
        for step in range(60):
            network.zero_grad()
            loss = ((network(inputs) - targets) ** 2).mean()
            loss.backward()
            with torch.no_grad():  # plain gradient descent, as torch.optim.SGD(lr=0.2) would do
                for parameter in network.parameters():
                    parameter -= 0.2 * parameter.grad
            losses[kind].append(loss.item())

# how many times larger the gradient reaching the last layer is than the one reaching the first, per step
shrink = {kind: [last / first for first, last in zip(history["0"], history["6"])]
          for kind, history in histories.items()}
start = make_network(nn.Identity)[0].weight  # the first layer before training, the same for both
with torch.no_grad():
    output_std = {kind: network(inputs).std().item() for kind, network in networks.items()}
    moved = {kind: ((network[0].weight - start).norm() / start.norm()).item() for kind, network in networks.items()}
print(f"targets: variance {target_variance:.4f}, std {targets.std().item():.3f}")
for kind in networks:
    print(f"{kind:>7}: loss {losses[kind][0]:.4f} -> {losses[kind][-1]:.4f}, output std {output_std[kind]:.3f}, "
          f"layer 6 gets {min(shrink[kind]):.1f} to {max(shrink[kind]):.1f} times layer 0's gradient, "
          f"layer 0's weight moved by {100 * moved[kind]:.1f}%")
late_change = max(max(norms[10:]) / min(norms[10:]) for norms in histories["sigmoid"].values())
jump = min(max(norms[:10]) / max(norms[10:]) for norms in histories["sigmoid"].values())
print(f"sigmoid, steps 10 to 59: each curve varies by at most {100 * (late_change - 1):.0f}%; "
      f"its peak in steps 0 to 9 is at least {jump:.0f} times its largest value after")
assert all(len(norms) == 60 for history in histories.values() for norms in history.values())
for history in histories.values():
    assert history["0"][0] < history["2"][0] < history["4"][0] < history["6"][0]  # shrinks towards the input
# sigmoid: the loss stalls at that of predicting the mean, the output barely varies
assert abs(losses["sigmoid"][-1] / target_variance - 1) < 0.02
assert output_std["sigmoid"] < 0.05 * targets.std().item()
assert min(shrink["sigmoid"]) > 40 and late_change < 1.15 and jump > 10
# tanh: the loss falls well below the variance, the gradient shrinks less than tenfold
assert losses["tanh"][-1] < 0.15 * target_variance
assert max(shrink["tanh"]) < 10
# the numbers the text below quotes
above = 100 * (losses["sigmoid"][-1] / target_variance - 1)
assert (f"{losses['sigmoid'][-1]:.4f}", f"{target_variance:.4f}", f"{above:.1f}") == ("0.1126", "0.1111", "1.4")
assert (f"{output_std['sigmoid']:.3f}", f"{targets.std().item():.3f}") == ("0.008", "0.334")
assert (f"{min(shrink['sigmoid']):.0f}", f"{max(shrink['sigmoid']):.0f}", f"{100 * (late_change - 1):.0f}") == \
    ("47", "418", "11")
assert (f"{min(shrink['tanh']):.1f}", f"{max(shrink['tanh']):.1f}", f"{losses['tanh'][-1]:.4f}") == \
    ("3.2", "9.6", "0.0115")
assert (f"{losses['tanh'][-1] / target_variance:.2f}", f"{100 * moved['sigmoid']:.1f}",
        f"{100 * moved['tanh']:.1f}") == ("0.10", "3.3", "13.5")

fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=True)
for ax, kind in zip(axes, networks):
    for name, norms in histories[kind].items():
        ax.plot(norms, label=f"Linear {name}")
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_title(f"{kind}: loss {losses[kind][0]:.3f} → {losses[kind][-1]:.3f}")
axes[0].set_ylabel("norm of grad_output[0]")
axes[1].legend()
fig.suptitle("Gradient reaching each layer: the same linear layers, two activations")
plt.tight_layout()
plt.show()

# %% [markdown]
# The sigmoid network stalls. Its loss ends at 0.1126, 1.4% above the variance of the targets
# (0.1111), which is the loss of always predicting their mean; its output barely varies (std
# 0.008, against 0.334 for the targets). That is the vanishing-gradient symptom the hooks reveal:
# at every step its first layer receives a gradient 47 to 418 times smaller than its last layer,
# and after a jump in the first steps (a peak more than ten times the later values) all four
# curves stay flat from step 10 on (within 11%). Its
# first layer's weights moved by 3.3% in 60 steps. With tanh the gradient shrinks by a factor of
# 3.2 to 9.6 only, the first layer's weights moved by 13.5%, and the loss falls to 0.0115, a tenth
# of the variance.
#
# What `model.named_modules()` yields, which the exercise relies on: the model itself first, named
# `""`, then every submodule at any depth, and a module reachable under two names only once, under
# the first (`named_modules(remove_duplicate=False)` yields both names).

# %%
tied = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Tanh(), nn.Linear(4, 4)))
tied.add_module("again", tied[0])  # the first layer, under a second name
names = [name for name, _ in tied.named_modules()]
print("named_modules():", names)
print("remove_duplicate=False:", [name for name, _ in tied.named_modules(remove_duplicate=False)])
assert names == ["", "0", "1", "1.0", "1.1"]
assert [name for name, _ in tied.named_modules(remove_duplicate=False)] == ["", "0", "1", "1.0", "1.1", "again"]

# %% [markdown]
# A layer whose parameters are frozen (`requires_grad=False`) is still gone through by backward,
# hooks included, when something before it needs a gradient; once nothing before it does, backward
# stops before it. Eval mode (`model.eval()`) changes nothing here: the same backward hooks fire.

# %%
torch.manual_seed(0)
partly_frozen = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
partly_frozen[2].requires_grad_(False)  # the middle layer is frozen
fired = []
for index in (0, 2):
    partly_frozen[index].register_full_backward_hook(
        lambda m, grad_input, grad_output, index=index: fired.append(index))
caught_warnings(lambda: partly_frozen(torch.randn(5, 3)).sum().backward())  # (layer 0's input needs no grad)
print("layer 2 frozen, layer 0 trains: full hooks fired on layers", fired)
assert fired == [2, 0]
partly_frozen.eval()
fired.clear()
caught_warnings(lambda: partly_frozen(torch.randn(5, 3)).sum().backward())
print("the same in eval mode:", fired)
assert fired == [2, 0]
partly_frozen.train()
partly_frozen[0].requires_grad_(False)  # now nothing before layer 4 needs a gradient
fired.clear()
partly_frozen(torch.randn(5, 3)).sum().backward()
print("layers 0 and 2 frozen: full hooks fired on layers", fired)
assert fired == []

# %% [markdown]
# ## Exercise 1: `record_grad_output_norms` · medium · about 15 min
#
# Write `record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d))`. It returns
# `(norms, handles)`:
#
# - register a full backward hook on every module of `model` that is an instance of one of
#   `layer_types`: `model.named_modules()` gives each one with its name, at any depth (e.g.
#   `"encoder.0"`), `model` itself first (named `""`), and a module reachable under two names
#   once, under the first; a module with frozen parameters is hooked too (backward goes through
#   it whenever something before it needs a gradient, as the cell above shows);
# - each time backward goes through such a module, in training and in eval mode, the hook appends
#   the L2 norm of `grad_output[0]`, as a Python `float`, to the list `norms[name]`, and changes
#   no gradient;
# - `handles` is a list of the handles of every hook you registered. Each call makes a new dict
#   and hooks of its own: two calls on one model record side by side.
#
# Traps: `grad_input[0]` is the gradient of the module's *input*, not of its output, and it is
# `None` for a first layer fed with data. A tensor is not a `float`. A module used twice in one
# forward pass is gone through twice in backward: two entries. A module that returns several
# tensors gets one `grad_output` entry per tensor; only the first counts here. And the old
# `register_backward_hook` is not the full backward hook. In a backward with `create_graph=True`
# the gradients require grad, so `.numpy()` on them raises: take the norm with torch, then
# `.item()`.
#
# Check: run `check(record_grad_output_norms)` below, or
# `pytest tests/test_05_backward_hooks.py -k record_grad_output_norms`.

# %% tags=["exercise"]
# Exercise: record_grad_output_norms — write your code in this cell.
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    """Record the norm of the gradient that reaches each layer of a given type.

    Receives `model`, an nn.Module, and `layer_types`, a tuple of module classes.
    Registers a hook on every module that `model.named_modules()` yields and that is an instance
    of one of `layer_types`: nested submodules at any depth, modules whose parameters are frozen
    (`requires_grad=False`), and `model` itself (named "").
    A module reachable under two names is hooked once, under the name `named_modules()` gives it.
    The hooks are not the deprecated `register_backward_hook`, which cannot be combined with full
    backward hooks on the same module.
    Each time backward goes through such a module (twice per backward for a module called twice
    in one forward pass), its hook appends the L2 norm of `grad_output[0]` as a Python float to
    `norms[name]`, where `name` is the module's name in `model.named_modules()`.
    This holds also in eval mode, and for a backward with `create_graph=True`, where the gradients
    require grad.
    The hooks change no gradient, neither in place nor by returning one.
    Returns `(norms, handles)`: the dict of lists, and a list of the handles of all hooks
    registered; removing them removes every hook it registered.
    Each call registers hooks of its own and returns a new dict, so that two calls on one model
    record independently.
    """
    # BEGIN SOLUTION
    norms = {}
    handles = []
    for name, module in model.named_modules():
        if not isinstance(module, layer_types):
            continue
        norms[name] = []

        def hook(module, grad_input, grad_output, name=name):
            norms[name].append(grad_output[0].norm().item())

        handles.append(module.register_full_backward_hook(hook))
    return norms, handles
    # END SOLUTION


# %%
check(record_grad_output_norms)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Walk over every submodule with its name, keep those of the wanted types, and give each one a
# full backward hook that knows its own name and appends one number per backward to that name's
# list.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `model.named_modules()` yields `(name, module)` pairs at every depth, the model itself first
# (named `""`) and each module once; `isinstance(module, layer_types)` accepts a tuple of classes;
# `module.register_full_backward_hook(hook)` calls `hook(module, grad_input, grad_output)`;
# `tensor.norm().item()` is a Python float.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Define the hook inside the loop. A plain closure would see the loop's *last* name when it
# fires; bind the current one as a default argument (`name=name` in the hook's parameters). The
# hook appends the float norm of the first entry of `grad_output` to `norms[name]`; collect every
# handle in a list.
#
# </details>

# %% [markdown]
# Your hooks at work on a small convolutional network with a nested block, for two backward
# passes. Once your exercise passes (until then the cell prints "Not done yet"), it prints two
# norms for each of the layers `0` and `2.1`, the names `named_modules()` gives them; `nn.ReLU` and
# `nn.Flatten` are not recorded, and removing the handles stops the recording.

# %%
with try_it():
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(),
                        nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 10)))
    images = torch.randn(8, 1, 8, 8, requires_grad=True)
    norms, handles = record_grad_output_norms(cnn)
    for step in range(2):
        cnn(images).logsumexp(dim=1).sum().backward()
    print({name: [round(n, 4) for n in values] for name, values in norms.items()})
    assert sorted(name for name, values in norms.items() if values) == ["0", "2.1"]
    assert all(len(values) == 2 and isinstance(values[0], float) for values in norms.values() if values)
    for handle in handles:
        handle.remove()
    cnn(images).sum().backward()
    print("after removing the handles:", {name: len(values) for name, values in norms.items()})
    assert all(len(values) == 2 for values in norms.values() if values)  # removed: nothing more

# %% [markdown]
# ## Use 2: clipping gradients
#
# A single bad batch can produce a huge gradient. `torch.nn.utils.clip_grad_norm_` clips the
# gradients of the parameters after backward. A full backward hook can clip the gradient that a
# module sends **back** to its inputs instead, during backward, so that an exploding gradient in
# one place does not spread to the layers before it.
#
# ## Exercise 2: `clip_grad_input` · medium · about 15 min
#
# Write `clip_grad_input(module, max_norm)`. It registers a full backward hook on `module` and
# returns its handle. The hook returns a new tuple built from `grad_input`:
#
# - a tensor whose L2 norm (over all its elements) is larger than `max_norm` is rescaled to norm
#   `max_norm`: `g * (max_norm / g.norm())`;
# - a tensor whose norm is at most `max_norm` is kept as it is (a zero gradient stays zero);
# - a `None` entry stays `None`, at the same position; the tuple keeps its length.
#
# It clips at every backward, in training and in eval mode, each hook with the `max_norm` of its
# own call. Each entry is clipped on its own, not with one norm over all entries together. As the section
# "What a returned value does" showed, this changes what reaches the module's inputs, not the
# gradients of the module's own parameters.
#
# Traps: calling `.norm()` on a `None` entry, dropping the `None` entries, returning a list (torch
# refuses it when no input requires grad), and changing a gradient in place (`g.mul_(...)`,
# `g *= ...`): return new tensors. And no `torch.no_grad()` or `detach()` in the hook: in a
# backward with `create_graph=True` the gradients are part of a graph that a second backward goes
# through (the section on `create_graph=True` showed what `torch.no_grad()` does there).
#
# Check: run `check(clip_grad_input)` below, or `pytest tests/test_05_backward_hooks.py -k clip_grad_input`.

# %% tags=["exercise"]
# Exercise: clip_grad_input — write your code in this cell.
import torch


def clip_grad_input(module, max_norm):
    """Clip each gradient that `module` sends back to its inputs to L2 norm `max_norm`.

    Receives `module`, an nn.Module, and `max_norm`, a positive Python number.
    Registers a full backward hook on `module`, so that the gradients of the module's own
    parameters stay as they are.
    The hook returns a tuple (not a list: torch refuses a list when no input requires grad) as
    long as `grad_input`:
    each tensor whose L2 norm is above `max_norm` is replaced by a new tensor, rescaled to norm
    `max_norm`; each tensor is judged and rescaled by its own norm, not by one norm over all
    entries; other tensors are kept unchanged; None entries stay None at their position.
    The hook must not change the tensors of `grad_input` in place.
    In a backward with `create_graph=True` the tensors it returns stay part of the graph (no
    `detach()`, no `torch.no_grad()`), so that a second backward can go through them.
    It clips at every backward through the module, in training and in eval mode, each hook with
    the `max_norm` given to its own call.
    Returns the handle of the hook.
    """
    # BEGIN SOLUTION
    def clip(module, grad_input, grad_output):
        clipped = []
        for grad in grad_input:
            if grad is not None and grad.norm() > max_norm:
                grad = grad * (max_norm / grad.norm())
            clipped.append(grad)
        return tuple(clipped)

    return module.register_full_backward_hook(clip)
    # END SOLUTION


# %%
check(clip_grad_input)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# The hook builds a new tuple of the same length as `grad_input`, one entry at a time: `None`
# stays `None`, a small gradient is kept, a large one is scaled down to norm `max_norm`.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `module.register_full_backward_hook(hook)` with `hook(module, grad_input, grad_output)`
# returning a tuple; `grad.norm()` is the L2 norm over all elements; `grad * factor` makes a new
# tensor, `grad.mul_(factor)` would not.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Loop over `grad_input` and fill a list. Test `is not None` first, then compare the norm with
# `max_norm`; only a gradient above it is multiplied, by `max_norm` divided by its norm. Every
# other entry goes into the list as it is. The hook returns the list as a tuple;
# `clip_grad_input` returns the handle.
#
# </details>

# %% [markdown]
# Your hook at work on the second layer of a small network, with a loss that makes gradients
# large. Once your exercise passes (until then the cell prints "Not done yet"), it shows that the
# gradient sent back to the first layer's output is clipped to norm 1, that the second layer's
# own weight gradient is unchanged, and that the first layer's weight gradient changes, since it
# is computed from the clipped gradient.

# %%
with try_it():
    torch.manual_seed(0)
    two_layers = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
    unclipped = copy.deepcopy(two_layers)
    x = torch.randn(16, 4)
    reaching = []  # the norm of the gradient that reaches the first layer's output

    def watch(module, args, output):  # returns None: a forward hook's return would replace the output
        output.register_hook(lambda grad: reaching.append(grad.norm().item()))

    two_layers[0].register_forward_hook(watch)
    handle = clip_grad_input(two_layers[1], max_norm=1.0)
    (100 * two_layers(x)).pow(2).sum().backward()
    (100 * unclipped(x)).pow(2).sum().backward()
    print(f"norm reaching layer 0: {reaching[0]:.4f}")
    print("layer 1 weight.grad unchanged:", torch.allclose(two_layers[1].weight.grad, unclipped[1].weight.grad))
    print("layer 0 weight.grad changed:  ", not torch.allclose(two_layers[0].weight.grad, unclipped[0].weight.grad))
    assert abs(reaching[0] - 1.0) < 1e-5
    assert torch.allclose(two_layers[1].weight.grad, unclipped[1].weight.grad)
    assert not torch.allclose(two_layers[0].weight.grad, unclipped[0].weight.grad)
    handle.remove()

# %% [markdown]
# ## Use 3: gradient noise
#
# Gaussian noise added to gradients is used to regularise training (Neelakantan et al., 2015,
# "Adding Gradient Noise Improves Learning for Very Deep Networks"). Noise added to a module's
# `grad_output` by a pre-hook flows through the module's backward, so it reaches both the
# gradients of its parameters and the gradient it sends back to its inputs.
#
# Clipping and noise are also the two steps of differentially private training (DP-SGD, Abadi et
# al., 2016, "Deep Learning with Differential Privacy"), but this lesson's exercises are not
# DP-SGD. DP-SGD clips each sample's gradient, the gradient of that one sample's loss with
# respect to all the parameters, to a norm bound, sums the clipped
# gradients of the batch, and adds Gaussian noise scaled to that bound to the sum: one sample
# changes the sum by at most the bound, and the noise hides that change.
# `clip_grad_input` clips the gradient of the whole batch's loss that one module sends back (the
# module's own weight gradient is not clipped at all, as the cell above showed), and
# `add_grad_noise` adds noise to `grad_output`: neither bounds what one sample contributes, so
# together they give no privacy guarantee. DP-SGD needs per-sample gradients, the subject of a
# later lesson.
#
# For reproducible experiments, draw the noise from a `torch.Generator` you are given:
# `torch.randn(shape, generator=generator)` and `torch.randn_like(grad, generator=generator)` use
# it, and two generators seeded alike give the same numbers. `randn_like` also copies the dtype of
# `grad` (here float64). With `generator=None` they draw from torch's global random state, which
# `torch.manual_seed` resets.

# %%
grad = torch.zeros(2, 3, dtype=torch.float64)
first = torch.randn(grad.shape, generator=torch.Generator().manual_seed(7), dtype=grad.dtype)
second = torch.randn_like(grad, generator=torch.Generator().manual_seed(7))
print("equally seeded generators draw the same noise:", torch.equal(first, second), "| dtype:", second.dtype)
assert torch.equal(first, second) and second.dtype == torch.float64
other = torch.randn_like(grad, generator=torch.Generator().manual_seed(8))
print("another seed draws other noise:", not torch.equal(first, other))
assert not torch.equal(first, other)
with torch.random.fork_rng(devices=[]):  # (leaves the global random state as it was)
    torch.manual_seed(7)
    global_draw = torch.randn(grad.shape, generator=None, dtype=grad.dtype)
    torch.manual_seed(7)
    global_again = torch.randn(grad.shape, dtype=grad.dtype)
print("generator=None, each time after torch.manual_seed(7): the same noise:", torch.equal(global_draw, global_again))
assert torch.equal(global_draw, global_again)

# %% [markdown]
# ## Exercise 3: `add_grad_noise` · medium · about 15 min
#
# Write `add_grad_noise(module, std, generator=None)`. It registers a full backward **pre**-hook
# on `module` and returns its handle. The hook returns a new tuple built from `grad_output`:
#
# - to each tensor entry it adds new noise of the same shape (the sum keeps the entry's dtype),
#   i.i.d. normal with mean 0 and standard deviation `std`, drawn anew at every call and
#   separately for each entry, from `generator` when one is given (else from torch's global
#   random state);
# - a `None` entry stays `None`; the tuple keeps its length.
#
# Each hook uses the `std` and `generator` of its own call. In eval mode it may add noise or not
# (noise as a regulariser is often meant for training only).
#
# Traps: noise on the first entry only; `std ** 2` (the variance) instead of `std`; ignoring
# `generator`; noise added to `grad_input` in a full backward hook, which never reaches the
# module's parameters; changing `grad_output` in place.
#
# Check: run `check(add_grad_noise)` below, or `pytest tests/test_05_backward_hooks.py -k add_grad_noise`.

# %% tags=["exercise"]
# Exercise: add_grad_noise — write your code in this cell.
import torch


def add_grad_noise(module, std, generator=None):
    """Add Gaussian noise to the gradient of the module's outputs.

    Receives `module`, an nn.Module, `std`, a positive Python number, and `generator`, a
    torch.Generator or None.
    Registers a full backward pre-hook on `module`, so that the noise reaches the gradients of
    the module's parameters and of its inputs.
    The hook returns a tuple (or a list) as long as `grad_output`:
    each tensor entry plus noise of the same shape, returned in the entry's dtype; None entries stay
    None.
    The noise is normal (i.i.d., mean 0, standard deviation `std`), drawn anew at every call and
    separately for each entry.
    It is drawn from `generator` when one is given (so that equally seeded generators give the
    same noise), else from torch's global random state.
    The hook must not change the tensors of `grad_output` in place.
    Each hook uses the `std` and `generator` given to its own call.
    In eval mode it may add noise or not.
    Returns the handle of the hook.
    """
    # BEGIN SOLUTION
    def add_noise(module, grad_output):
        noisy = []
        for grad in grad_output:
            if grad is not None:
                noise = torch.randn(grad.shape, generator=generator, dtype=grad.dtype, device=grad.device)
                grad = grad + std * noise
            noisy.append(grad)
        return tuple(noisy)

    return module.register_full_backward_pre_hook(add_noise)
    # END SOLUTION


# %%
check(add_grad_noise)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A backward pre-hook sees `grad_output` before the module's backward; returning a noisy copy of
# it makes the module compute every gradient from the noisy version. Build the new tuple entry by
# entry, keeping `None` as it is.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `module.register_full_backward_pre_hook(hook)` with `hook(module, grad_output)` returning a
# tuple; `torch.randn(shape, generator=..., dtype=...)` draws standard normal noise
# (`generator=None` means torch's global random state). Standard normal noise times `std` has
# standard deviation `std`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# For each entry that is not `None`, draw standard normal noise with the entry's shape and dtype
# from the given generator, multiply it by `std` (not `std ** 2`) and add it with `+`, which
# makes a new tensor. Put `None` entries in the list as they are, return the list as a tuple from
# the hook, and return the handle from `add_grad_noise`.
#
# </details>

# %% [markdown]
# Your hook at work on a linear layer: backward runs 200 times with the same input, and the bias
# gradient is compared with the noise-free one. The bias gradient sums `grad_output` over the 16
# rows of the batch, so its noise should have standard deviation `std * sqrt(16) = 4 * std`, 0.4
# for `std=0.1`. Once your exercise passes (until then the cell prints "Not done yet"), the cell
# measures it: mean about 0, standard deviation about 0.4.

# %%
with try_it():
    torch.manual_seed(0)
    noisy_layer = nn.Linear(5, 3)
    x = torch.randn(16, 5)
    noisy_layer(x).sum().backward()
    clean_bias_grad = noisy_layer.bias.grad.clone()
    handle = add_grad_noise(noisy_layer, std=0.1, generator=torch.Generator().manual_seed(0))
    differences = []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")  # x needs no grad
        for _ in range(200):
            noisy_layer.zero_grad()
            noisy_layer(x).sum().backward()
            differences.append(noisy_layer.bias.grad - clean_bias_grad)
    differences = torch.stack(differences)
    print(f"bias gradient noise: mean {differences.mean():.4f}, std {differences.std():.4f} (expected 0.4)")
    assert abs(differences.mean()) < 0.1 and abs(differences.std() - 0.4) < 0.05
    handle.remove()

# %% [markdown]
# ## Exercise 4: `predict_module_backward_order` · medium · about 5 min
#
# **Predict before you run.** The cell below defines `module_backward_events(log)`: a
# `Sequential` of three layers, named `0`, `1` and `2`, each with a full backward pre-hook and a full
# backward hook, and an input `x` that requires grad, with a tensor hook; then one forward pass and
# `backward()`. Nothing runs yet: the cell only defines the function. The events:
#
# - `"bpre:0"`, `"bpre:1"`, `"bpre:2"`: that layer's full backward pre-hook fired;
# - `"bwd:0"`, `"bwd:1"`, `"bwd:2"`: that layer's full backward hook fired;
# - `"grad:x"`: the tensor hook on `x` fired.
#
# Write `predict_module_backward_order()`: it returns the list of events in the order you expect
# them to fire. Spelling: case does not matter, nor spaces around a name or around the `:`;
# `backward` may stand for `bwd`; `backward_pre`, `backward-pre` or `pre` for `bpre`; and
# `tensor` for `grad`.
#
# Check: run `check(predict_module_backward_order)` below (a wrong prediction is told the first
# event where it parts from what fires, and the rule;
# after three different wrong predictions in one session, `check` shows the whole log), or
# `pytest tests/test_05_backward_hooks.py -k predict_module_backward_order`. Once it passes, the
# cell after the hints prints the log, recorded as it runs.

# %% tags=["prediction"]
import torch
from torch import nn


def module_backward_events(log):
    model = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 1))
    for name, layer in model.named_children():
        layer.register_full_backward_pre_hook(lambda module, grad_output, name=name: log(f"bpre:{name}"))
        layer.register_full_backward_hook(lambda module, grad_input, grad_output, name=name: log(f"bwd:{name}"))
    x = torch.ones(1, 2, requires_grad=True)
    x.register_hook(lambda grad: log("grad:x"))
    model(x).sum().backward()


# %% tags=["exercise"]
# Exercise: predict_module_backward_order — write your code in this cell.


def predict_module_backward_order():
    """Return the events that `module_backward_events` logs, in the order they fire.

    Each event is one of the names the cell above logs, e.g. "bwd:0".
    """
    # BEGIN SOLUTION: return ["...", ...]: the events, in the order you expect them to fire
    return ["bpre:2", "bwd:2", "bpre:1", "bwd:1", "bpre:0", "bwd:0",
            "grad:x"]
    # END SOLUTION


# %%
check(predict_module_backward_order)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Backward starts at the loss and goes back through the layers: which layer is nearest to the
# loss?
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# A full backward pre-hook gets `grad_output` before its layer's backward runs; a full backward hook
# gets `grad_input` once the layer's input gradients exist. The gradient of `x` is the input
# gradient of layer `0`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Seven events: a `bpre`/`bwd` pair for each layer, the layers in one order, and `"grad:x"` at one
# end.
#
# </details>

# %% [markdown]
# Once your prediction is right, this cell prints what fires, recorded as it runs (until then it
# says what to do).

# %%
from hooked.notebook import reveal

reveal(predict_module_backward_order)

# %% [markdown]
# ## Summary
#
# | API | hook signature | fires | a returned tuple |
# |---|---|---|---|
# | `module.register_full_backward_pre_hook(hook)` | `hook(module, grad_output)` | when the gradient of the module's outputs is known, before the module's backward | replaces `grad_output`: changes the parameters' and the inputs' gradients |
# | `module.register_full_backward_hook(hook)` | `hook(module, grad_input, grad_output)` | after the gradients of the module's positional inputs are computed | replaces `grad_input`: changes what flows on to the inputs only |
# | `module.register_backward_hook(hook)` | deprecated | after the module's *last operation* | misleading `grad_input`; do not use |
#
# - `grad_input` has one entry per positional argument: `None` for a non-tensor, zeros for a
#   tensor that needs no grad next to one that does, all `None` (with a warning) when no input
#   requires grad. A returned tuple must keep the length; build new tensors, never edit the
#   received ones in place.
# - A full hook's return cannot change the module's own parameter gradients; `.grad` may not be
#   written yet when it fires (a module called twice: `None` at the first firing).
# - Under `no_grad`, backward never goes through the module, so no backward hook fires. With
#   `create_graph=True`, the gradients in a hook require grad: compute what it returns with grad
#   mode on (no `torch.no_grad()`, no `detach()`); `.numpy()` on them raises.
# - An in-place operation on a hooked module's output (`nn.ReLU(inplace=True)`) raises in the
#   forward pass; use `inplace=False`, or a forward hook that registers a tensor hook on the output.
#
# Next, lesson 06 uses forward and backward hooks together on a CNN: feature maps and Grad-CAM.
