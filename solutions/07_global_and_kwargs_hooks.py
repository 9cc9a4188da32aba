# %% [markdown]
# # Lesson 07 — Hooks everywhere: global hooks, keyword arguments, `prepend`, `always_call`
#
# The hooks of lessons 03–05 belong to one module. PyTorch also has *global* module hooks: one
# registration, and the hook fires for every module called anywhere in the process. With them a
# tool sees a whole model without knowing its layers: PyTorch's own `ModuleTracker`
# (`torch.utils.module_tracker`, which `FlopCounterMode` uses to count FLOPs per module) is built
# on them.
#
# After this lesson you will be able to:
#
# - register the global hooks of `torch.nn.modules.module` (forward pre, forward, full backward
#   pre, full backward) and say when they fire relative to a module's own hooks;
#   say why not to use the deprecated `register_module_backward_hook`;
# - say in which order the hooks of a parent and its children fire (calls *start* parent first and
#   *finish* children first; in backward the nesting stays and the order of siblings reverses);
# - say which of the options of lessons 03 and 04 (`with_kwargs=True`, `prepend=True`,
#   `always_call=True`) the global hooks take and how they combine with them, including a bug of
#   global hooks that combine `with_kwargs` and `always_call`;
# - remove global hooks every time, also when the forward pass raises (`with handle:` or
#   `try`/`finally`);
# - build a model summary and a NaN/Inf locator from hooks.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_07_global_and_kwargs_hooks.py` (add `-k summarize_model` for one exercise;
# plain `pytest` grades every lesson).

# %%
import warnings

import matplotlib.pyplot as plt
import torch
import torch.nn.modules.module as module_hooks
from torch import nn

from hooked.notebook import check, hint, try_it

print("torch", torch.__version__)

# %% [markdown]
# ## A global hook fires for every module
#
# `torch.nn.modules.module.register_module_forward_hook(hook)` takes the same
# `hook(module, args, output)` as `module.register_forward_hook`, but it is not attached to a
# module: it fires after the `forward` of *every* module called, in every model of the process,
# including the modules inside containers and the containers themselves. It returns a
# `RemovableHandle`, like every registration. The cell also reads torch's source to show that
# `ModuleTracker` registers the global forward pre-hook and forward hook, and that
# `FlopCounterMode` makes a `ModuleTracker`.

# %%
torch.manual_seed(0)
small = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
other = nn.Linear(2, 2)  # a different model
seen = []

handle = module_hooks.register_module_forward_hook(
    lambda module, args, output: seen.append(type(module).__name__))
small(torch.randn(1, 3))
other(torch.randn(1, 2))
handle.remove()
print("modules seen by one global hook:", seen)
print("the registration returned a", type(handle).__name__)
assert seen == ["Linear", "ReLU", "Sequential", "Linear"]
assert isinstance(handle, torch.utils.hooks.RemovableHandle)

import inspect

from torch.utils.flop_counter import FlopCounterMode
from torch.utils.module_tracker import ModuleTracker

tracker_source = inspect.getsource(ModuleTracker)
uses = [name for name in ("register_module_forward_pre_hook(", "register_module_forward_hook(")
        if name in tracker_source]
print("ModuleTracker calls:", uses, "| FlopCounterMode makes a ModuleTracker:",
      "ModuleTracker()" in inspect.getsource(FlopCounterMode))
assert len(uses) == 2 and "ModuleTracker()" in inspect.getsource(FlopCounterMode)

# %% [markdown]
# That is also the danger. A global hook that is never removed keeps firing, for every model,
# until the process ends. Below a forgotten counter keeps counting the calls of a model it was
# never meant for.

# %%
calls = {"count": 0}


def count_call(module, args, output):
    calls["count"] += 1


forgotten = module_hooks.register_module_forward_hook(count_call)
small(torch.randn(1, 3))
print("after one pass through `small`:", calls["count"], "calls counted")
other(torch.randn(1, 2))
print("after a pass through an unrelated model:", calls["count"])
assert calls["count"] == 4
forgotten.remove()
other(torch.randn(1, 2))
print("after forgotten.remove():", calls["count"])
assert calls["count"] == 4

# %% [markdown]
# So always remove a global hook, and remove it even when the forward pass raises. A handle is a
# context manager: `with handle:` removes the hook when the block ends, however it ends. Several
# handles fit in one `with a, b:` statement, or `try`/`finally` removes them. The cell makes the
# forward pass raise and counts the global hooks after each form.

# %%
class Broken(nn.Module):
    def forward(self, x, scale=1.0):
        raise RuntimeError("this layer is broken")


def hooks_registered():
    """How many global forward pre-hooks and forward hooks are registered right now."""
    return len(module_hooks._global_forward_pre_hooks) + len(module_hooks._global_forward_hooks)


broken_model = nn.Sequential(nn.Linear(3, 3), Broken())
print("global hooks before:", hooks_registered())
try:
    with module_hooks.register_module_forward_hook(count_call):
        broken_model(torch.randn(1, 3))
except RuntimeError as error:
    print("the forward pass raised:", error)
print("global hooks after the with-block:", hooks_registered())
assert hooks_registered() == 0

pre = module_hooks.register_module_forward_pre_hook(lambda module, args: None)
post = module_hooks.register_module_forward_hook(count_call)
try:
    broken_model(torch.randn(1, 3))
except RuntimeError:
    pass
finally:
    pre.remove()
    post.remove()
print("global hooks after try/finally:", hooks_registered())
assert hooks_registered() == 0

try:
    with module_hooks.register_module_forward_pre_hook(lambda module, args: None), \
            module_hooks.register_module_forward_hook(count_call):
        broken_model(torch.randn(1, 3))
except RuntimeError:
    pass
print("global hooks after `with a, b:`:", hooks_registered())
assert hooks_registered() == 0

# %% [markdown]
# ## The four global hooks, and when they fire
#
# | Function in `torch.nn.modules.module` | the hook | like this module method |
# |---|---|---|
# | `register_module_forward_pre_hook(hook)` | `hook(module, args)` | `register_forward_pre_hook` |
# | `register_module_forward_hook(hook, *, with_kwargs, always_call)` | `hook(module, args, output)` | `register_forward_hook` |
# | `register_module_full_backward_pre_hook(hook)` | `hook(module, grad_output)` | `register_full_backward_pre_hook` |
# | `register_module_full_backward_hook(hook)` | `hook(module, grad_input, grad_output)` | `register_full_backward_hook` |
#
# Return values work as for the module's own hooks, for every module: a global forward hook's
# return replaces each module's output, a global forward pre-hook's return replaces the
# arguments (a single tensor is wrapped into a 1-tuple), a global full backward hook's return
# replaces `grad_input`. The global forward pre-hook has no `with_kwargs`, and none of them has
# `prepend`:

# %%
with module_hooks.register_module_forward_hook(lambda module, args, output: torch.zeros_like(output)):
    zeroed = small(torch.randn(1, 3))
print("with a global hook returning torch.zeros_like(output):", zeroed)
assert torch.equal(zeroed, torch.zeros(1, 4))

lone = nn.Linear(2, 2)
with module_hooks.register_module_forward_pre_hook(lambda module, args: torch.zeros(1, 2)):
    from_zeros = lone(torch.ones(1, 2))
print("with a global pre-hook returning a zero input: the output is the bias", from_zeros)
assert torch.equal(from_zeros, lone.bias.detach().unsqueeze(0))

x = torch.ones(1, 2, requires_grad=True)
with module_hooks.register_module_full_backward_hook(lambda module, grad_input, grad_output:
                                                     (torch.full_like(grad_input[0], 7.0),)):
    lone(x).sum().backward()
print("with a global backward hook returning 7s: x.grad =", x.grad)
assert torch.equal(x.grad, torch.full((1, 2), 7.0))

for name in ("register_module_forward_pre_hook", "register_module_forward_hook",
             "register_module_full_backward_pre_hook", "register_module_full_backward_hook"):
    options = [p for p in inspect.signature(getattr(module_hooks, name)).parameters if p != "hook"]
    print(f"{name}: options {options}")
assert list(inspect.signature(module_hooks.register_module_forward_hook).parameters) == [
    "hook", "with_kwargs", "always_call"]
assert list(inspect.signature(module_hooks.register_module_forward_pre_hook).parameters) == ["hook"]
assert list(inspect.signature(module_hooks.register_module_full_backward_pre_hook).parameters) == ["hook"]
assert list(inspect.signature(module_hooks.register_module_full_backward_hook).parameters) == ["hook"]

# %% [markdown]
# For one module, every global hook fires *before* the module's own hook of the same kind, even
# when the module's own hook was registered earlier and with `prepend=True` (which only puts it
# first among the module's own hooks). The cell registers the own hooks first, with
# `prepend=True`, then the global ones, and runs a forward and a backward pass.

# %%
order = []
layer = nn.Linear(2, 2)
handles = [  # the module's own hooks first, then the global ones
    layer.register_forward_pre_hook(lambda m, args: order.append("own forward pre"), prepend=True),
    layer.register_forward_hook(lambda m, args, out: order.append("own forward"), prepend=True),
    layer.register_full_backward_pre_hook(lambda m, gout: order.append("own backward pre"), prepend=True),
    layer.register_full_backward_hook(lambda m, gin, gout: order.append("own backward"), prepend=True),
    module_hooks.register_module_forward_pre_hook(lambda m, args: order.append("global forward pre")),
    module_hooks.register_module_forward_hook(lambda m, args, out: order.append("global forward")),
    module_hooks.register_module_full_backward_pre_hook(lambda m, gout: order.append("global backward pre")),
    module_hooks.register_module_full_backward_hook(lambda m, gin, gout: order.append("global backward")),
]
try:
    layer(torch.randn(1, 2, requires_grad=True)).sum().backward()
finally:
    for h in handles:
        h.remove()
for event in order:
    print(" ", event)
assert order == ["global forward pre", "own forward pre", "global forward", "own forward",
                 "global backward pre", "own backward pre", "global backward", "own backward"]

# %% [markdown]
# ### Parents and children: calls start parent first and finish children first
#
# A container's `forward` calls its children, so its forward pre-hook fires before theirs and its
# forward hook fires *after* theirs: a forward hook fires when a call returns, and the parent
# returns last. Backward keeps the nesting: the parent's backward pre-hook fires first (the
# gradient of its output is the first to exist) and its backward hook last (the gradient of its
# input is the last). What reverses is the order of siblings: the child that ran last in forward
# gets its gradient first. Keep this in mind whenever you want "the first module that ...": first
# to start and first to finish are different modules. The input below requires grad. The cell
# then runs the model again on an input that does not: the model itself, whose input then needs
# no gradient, fires its backward hook right after its pre-hook, before any child's, with a
# warning (lesson 05).

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh()))
names = {module: name or "(root)" for name, module in net.named_modules()}
timeline = []
with module_hooks.register_module_forward_pre_hook(lambda m, a: timeline.append(("start", names[m]))), \
        module_hooks.register_module_forward_hook(lambda m, a, o: timeline.append(("finish", names[m]))), \
        module_hooks.register_module_full_backward_pre_hook(
            lambda m, go: timeline.append(("backward pre", names[m]))), \
        module_hooks.register_module_full_backward_hook(lambda m, gi, go: timeline.append(("backward", names[m]))):
    net(torch.randn(2, 3, requires_grad=True)).sum().backward()
for what, name in timeline:
    print(f"  {what:12} {name}")
starts = [name for what, name in timeline if what == "start"]
finishes = [name for what, name in timeline if what == "finish"]
assert starts == ["(root)", "0", "1", "1.0", "1.1"]
assert finishes == ["0", "1.0", "1.1", "1", "(root)"]
backward_events = [event for event in timeline if event[0].startswith("backward")]
assert backward_events == [("backward pre", "(root)"), ("backward pre", "1"),
                           ("backward pre", "1.1"), ("backward", "1.1"),
                           ("backward pre", "1.0"), ("backward", "1.0"),
                           ("backward", "1"),
                           ("backward pre", "0"), ("backward", "0"),
                           ("backward", "(root)")]
# nesting kept: each parent's backward pre-hook before its children's, its backward hook after them
for parent, children in (("(root)", ["0", "1"]), ("1", ["1.0", "1.1"])):
    for child in children:
        assert backward_events.index(("backward pre", parent)) < backward_events.index(("backward pre", child))
        assert backward_events.index(("backward", child)) < backward_events.index(("backward", parent))

no_grad_input = []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with module_hooks.register_module_full_backward_pre_hook(
            lambda m, go: no_grad_input.append(("backward pre", names[m]))), \
            module_hooks.register_module_full_backward_hook(
                lambda m, gi, go: no_grad_input.append(("backward", names[m]))):
        net(torch.randn(2, 3)).sum().backward()
print("input without grad:", no_grad_input[:3], "...")
print("warning:", str(caught[0].message)[:80], "...")
assert no_grad_input[:3] == [("backward pre", "(root)"), ("backward", "(root)"), ("backward pre", "1")]
assert str(caught[0].message).startswith("Full backward hook is firing when gradients are computed with respect "
                                         "to module outputs")

# %% [markdown]
# The picture draws the same measurement: each module's call as a bar from the event where its
# forward pre-hook fired to the event where its forward hook fired. The bars nest: a parent's bar
# encloses its children's, so the parent starts first and finishes last.

# %%
spans = {}
for step, (what, name) in enumerate(timeline):
    if what in ("start", "finish"):
        spans.setdefault(name, []).append(step)
fig, ax = plt.subplots(figsize=(7, 2.6))
for row, (name, (start, finish)) in enumerate(spans.items()):
    ax.barh(row, finish - start, left=start, height=0.5, color="tab:blue")
    ax.text(start - 0.15, row, "start", ha="right", va="center", fontsize=8)
    ax.text(finish + 0.15, row, "finish", ha="left", va="center", fontsize=8)
ax.set_yticks(range(len(spans)), list(spans))
ax.invert_yaxis()
ax.set_xlim(-1.5, len(starts) + len(finishes) + 0.5)
ax.set_xlabel("hook event number (forward pass)")
ax.set_title("When each call starts (pre-hook) and finishes (forward hook)")
plt.tight_layout()
plt.show()
assert all(spans["(root)"][0] < spans[name][0] and spans[name][1] < spans["(root)"][1]
           for name in spans if name != "(root)")

# %% [markdown]
# ### Registration hooks, briefly
#
# Three more global hooks fire while modules are *built*, not called:
# `register_module_parameter_registration_hook`, `register_module_buffer_registration_hook` and
# `register_module_module_registration_hook`. Each hook is called as `hook(module, name, value)`
# when a parameter, buffer or submodule is registered, by `register_parameter` and friends or
# simply by assigning an attribute, in `__init__` or later (the cell also assigns a
# parameter to a Sequential already built). A non-None return replaces the value registered.
# They suit tools that must see (or wrap) every parameter as it is created.

# %%
registered = []
with module_hooks.register_module_parameter_registration_hook(
        lambda m, name, value: registered.append(("parameter", type(m).__name__, name))), \
        module_hooks.register_module_buffer_registration_hook(
            lambda m, name, value: registered.append(("buffer", type(m).__name__, name))), \
        module_hooks.register_module_module_registration_hook(
            lambda m, name, value: registered.append(("module", type(m).__name__, name))):
    built = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    built.offset = nn.Parameter(torch.zeros(3))  # a plain attribute assignment registers a parameter too
    registered_when_built = len(registered)
    built(torch.randn(4, 2))  # calling the model registers nothing
for entry in registered:
    print(" ", entry)
print("registrations seen while the model was called:", len(registered) - registered_when_built)
assert len(registered) == registered_when_built
assert ("parameter", "Linear", "weight") in registered and ("parameter", "Linear", "bias") in registered
assert ("buffer", "BatchNorm1d", "running_mean") in registered
assert ("module", "Sequential", "0") in registered and ("module", "Sequential", "1") in registered
assert registered[-1] == ("parameter", "Sequential", "offset")

# A non-None return replaces what is registered: here every new parameter is created frozen.
with module_hooks.register_module_parameter_registration_hook(
        lambda m, name, value: nn.Parameter(value.detach(), requires_grad=False)):
    frozen_from_birth = nn.Linear(2, 3)
print("a Linear built under the hook: requires_grad",
      {name: p.requires_grad for name, p in frozen_from_birth.named_parameters()})
assert not any(p.requires_grad for p in frozen_from_birth.parameters())

# %% [markdown]
# ### The deprecated `register_module_backward_hook`: do not use it
#
# There is one more global backward hook, `torch.nn.modules.module.register_module_backward_hook`,
# the global form of the deprecated `register_backward_hook` of lesson 05. Two reasons not to use
# it. First, torch lets a process use global backward hooks of one kind only, full or deprecated,
# and remembers which kind came first for the rest of the process, even after `remove()`. This
# notebook registered `register_module_full_backward_hook` above, so the deprecated one now
# raises; the cell registers and removes a full one first to show that removing does not help.
# The call raises before it registers anything, so the notebook is left as it was.

# %%
global_backward_before = len(module_hooks._global_backward_hooks)
assert global_backward_before == 0  # every full global backward hook of the cells above was removed
module_hooks.register_module_full_backward_hook(lambda m, grad_input, grad_output: None).remove()
try:
    module_hooks.register_module_backward_hook(lambda m, grad_input, grad_output: None)
    mixing_error = None
except RuntimeError as error:
    mixing_error = str(error)
print("register_module_backward_hook after a full one was registered and removed:")
print("  RuntimeError:", mixing_error)
assert mixing_error == ("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                        "Please use only one of them.")
assert len(module_hooks._global_backward_hooks) == global_backward_before  # nothing was left registered

# %% [markdown]
# It works the other way round too: one deprecated global hook, registered once by any library,
# blocks `register_module_full_backward_hook` for everyone until the process ends. And the
# deprecated hook reports the wrong gradients: like `register_backward_hook`, its `grad_input`
# belongs to the *last operation* of the module's forward, not to the module's inputs, and torch
# warns about it with a `FutureWarning`. Since this would block full global hooks in this
# notebook for good, the cell runs the demonstration in a fresh Python process (started with
# `subprocess`) and prints what that process reported.
# The module computes `x * 2 + 1`, so the true gradient with respect to `x` is 2 everywhere.

# %%
import json
import subprocess
import sys

FRESH_PROCESS = """
import json, warnings
import torch
import torch.nn.modules.module as module_hooks
from torch import nn

class DoubleThenAddOne(nn.Module):
    def forward(self, x):
        return x * 2 + 1

model, x, seen = DoubleThenAddOne(), torch.ones(3, requires_grad=True), []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with module_hooks.register_module_backward_hook(
            lambda m, grad_input, grad_output: seen.append(grad_input)):
        model(x).sum().backward()
try:
    module_hooks.register_module_full_backward_hook(lambda m, grad_input, grad_output: None)
    error = None
except RuntimeError as raised:
    error = str(raised)
print(json.dumps({
    "warnings": [(w.category.__name__, str(w.message)) for w in caught],
    "grad_input": [None if g is None else g.tolist() for g in seen[0]],
    "x.grad": x.grad.tolist(),
    "full hook afterwards": error}))
"""
report = json.loads(subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True,
                                   check=True, timeout=60).stdout)
for key, value in report.items():
    print(f"{key}: {value}")
assert report["warnings"] == [["FutureWarning", "Using a non-full backward hook when the forward contains multiple "
                               "autograd Nodes is deprecated and will be removed in future versions. This hook "
                               "will be missing some grad_input. Please use register_full_backward_hook to get "
                               "the documented behavior."]]
assert report["grad_input"] == [[1.0, 1.0, 1.0], None]  # the gradient at `x * 2` (and the constant 1), not at x
assert report["x.grad"] == [2.0, 2.0, 2.0]
assert report["full hook afterwards"] == mixing_error

# %% [markdown]
# ## `with_kwargs=True` on global hooks
#
# A reminder from lessons 03 and 04: `args` holds the positional arguments only, so a tensor
# passed by keyword, `block(x, mask=m)`, is invisible to a hook without `with_kwargs`. With
# `with_kwargs=True`, a forward pre-hook is called as `hook(module, args, kwargs)` (and must
# return `None` or a pair `(args, kwargs)`), a forward hook as `hook(module, args, kwargs, output)`.
# What is new here: the global forward hook takes `with_kwargs` too; the global forward pre-hook
# does not, so it never sees keyword arguments.

# %%
class Masked(nn.Module):
    def forward(self, x, mask=None):
        return x if mask is None else x * mask


masked = Masked()
x, mask = torch.ones(3), torch.tensor([1.0, 0.0, 1.0])
seen = {}
with masked.register_forward_pre_hook(lambda m, args: seen.update(pre=args)), \
        masked.register_forward_pre_hook(lambda m, args, kwargs: seen.update(pre_kwargs=(args, kwargs)),
                                         with_kwargs=True), \
        module_hooks.register_module_forward_pre_hook(lambda m, args: seen.update(global_pre=args)), \
        module_hooks.register_module_forward_hook(lambda m, args, out: seen.update(global_plain=args)), \
        module_hooks.register_module_forward_hook(
            lambda m, args, kwargs, out: seen.update(global_kwargs=(args, kwargs)), with_kwargs=True):
    masked(x, mask=mask)
print("global pre-hook:          args =", seen["global_pre"])
print("pre-hook, plain:          args =", seen["pre"])
print("pre-hook, with_kwargs:    args, kwargs =", seen["pre_kwargs"])
print("global hook, plain:       args =", seen["global_plain"])
print("global hook, with_kwargs: args, kwargs =", seen["global_kwargs"])
assert len(seen["pre"]) == 1 and len(seen["global_plain"]) == 1 and len(seen["global_pre"]) == 1
assert seen["pre_kwargs"][1]["mask"] is mask and seen["global_kwargs"][1]["mask"] is mask


# %% [markdown]
# As in lesson 03, a pre-hook with `with_kwargs=True` can also change a keyword argument, by
# returning the pair `(new_args, new_kwargs)`. A return that is not `None` and not a tuple of two
# elements raises a `RuntimeError` at once: here `args` alone, a tuple of one element. Any tuple of
# two elements is taken for the pair, right or wrong (lesson 03 shows what a wrong pair does).

# %%
def drop_mask(module, args, kwargs):
    return args, {key: value for key, value in kwargs.items() if key != "mask"}


with masked.register_forward_pre_hook(drop_mask, with_kwargs=True):
    print("masked(x, mask=mask) with the mask dropped:", masked(x, mask=mask))
    assert torch.equal(masked(x, mask=mask), x)
print("and without the hook:                       ", masked(x, mask=mask))
assert torch.equal(masked(x, mask=mask), mask)

try:
    with masked.register_forward_pre_hook(lambda module, args, kwargs: args, with_kwargs=True):
        masked(x, mask=mask)
    bad_return = None
except RuntimeError as error:
    bad_return = str(error)
print(f"a with_kwargs pre-hook returning only args, a tuple of {len(seen['pre_kwargs'][0])} element:", bad_return)
assert len(seen["pre_kwargs"][0]) == 1
assert bad_return.startswith("forward pre-hook must return None or a tuple of (new_args, new_kwargs)")

# %% [markdown]
# ## `prepend=True`: only among a module's own hooks
#
# A module's hooks run in the order they were registered; `prepend=True` (lesson 03) puts the new
# hook at the front instead. It exists on the module's own `register_forward_pre_hook`,
# `register_forward_hook`, `register_full_backward_pre_hook` and `register_full_backward_hook`,
# not on the global `register_module_forward_pre_hook` or `register_module_forward_hook`; as shown
# above, it never moves a hook in front of the global ones.

# %%
ran = []
square = nn.Identity()
with square.register_forward_hook(lambda m, a, o: ran.append("first registered")), \
        square.register_forward_hook(lambda m, a, o: ran.append("second registered")), \
        square.register_forward_hook(lambda m, a, o: ran.append("registered last, prepend=True"), prepend=True):
    square(torch.ones(1))
print(ran)
assert ran == ["registered last, prepend=True", "first registered", "second registered"]
for method in ("register_forward_pre_hook", "register_forward_hook", "register_full_backward_pre_hook",
               "register_full_backward_hook"):
    print(f"nn.Module.{method} takes prepend:", "prepend" in inspect.signature(getattr(nn.Module, method)).parameters)
    assert "prepend" in inspect.signature(getattr(nn.Module, method)).parameters
for function in ("register_module_forward_pre_hook", "register_module_forward_hook"):
    print(f"{function} takes prepend:", "prepend" in inspect.signature(getattr(module_hooks, function)).parameters)
    assert "prepend" not in inspect.signature(getattr(module_hooks, function)).parameters

# %% [markdown]
# ## `always_call=True` on global hooks and parents
#
# Lesson 04 showed a module's own forward hook registered with `always_call=True`: it runs even
# when `forward` raises, with `output=None`, and then the exception goes on to the caller. A
# global forward hook takes `always_call` too. Since the exception passes through every
# enclosing module, the parents' always-call hooks run as well, child first.

# %%
broken_model = nn.Sequential(nn.Linear(3, 3), Broken())
names = {module: name or "(root)" for name, module in broken_model.named_modules()}
after_error = []
with module_hooks.register_module_forward_hook(
        lambda m, args, out: after_error.append(("global", names[m], out)), always_call=True), \
        broken_model[1].register_forward_hook(
            lambda m, args, out: after_error.append(("own", names[m], out)), always_call=True), \
        broken_model[1].register_forward_hook(lambda m, args, out: after_error.append(("plain", names[m], out))):
    try:
        broken_model(torch.randn(1, 3))
    except RuntimeError as error:
        print("the call raised:", error)
for entry in after_error[1:]:
    print(" ", entry)
print("  (the first entry is the Linear, which returned normally)")
assert after_error[0][:2] == ("global", "0") and after_error[0][2] is not None
assert after_error[1:] == [("global", "1", None), ("own", "1", None), ("global", "(root)", None)]

# %% [markdown]
# ### A bug: a global hook with `with_kwargs=True` *and* `always_call=True`
#
# When `forward` succeeds, such a hook is called as `hook(module, args, kwargs, output)`, as asked.
# When `forward` raises, torch 2.13 calls it as `hook(module, args, output)` (in
# `Module._call_impl`, the exception path calls global always-call hooks without looking at
# `with_kwargs`; the module's own hooks are handled right). A hook written for four arguments
# then raises a `TypeError`, which torch turns into a warning: the hook never runs. The cell shows
# it, next to a module's own hook with the same options, which runs; first a call that succeeds,
# then one that raises; and it reads the exception path of `Module._call_impl`.

# %%
calls_seen = []


def note_call(module, args, kwargs, output):
    calls_seen.append((type(module).__name__, kwargs, output))


with module_hooks.register_module_forward_hook(note_call, with_kwargs=True, always_call=True):
    masked(x, mask=mask)
print("forward succeeds, the global hook ran:", calls_seen[0][:2])
assert calls_seen[0][0] == "Masked" and calls_seen[0][1]["mask"] is mask and calls_seen[0][2] is not None
calls_seen.clear()

broken = Broken()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with module_hooks.register_module_forward_hook(note_call, with_kwargs=True, always_call=True), \
            broken.register_forward_hook(note_call, with_kwargs=True, always_call=True):
        try:
            broken(torch.ones(1), scale=2.0)
        except RuntimeError as error:
            print("the call raised:", error)
print("forward raises, hooks that ran:", calls_seen)
print("warning:", caught[0].message)
assert calls_seen == [("Broken", {"scale": 2.0}, None)]  # only the module's own hook
call_impl = inspect.getsource(nn.Module._call_impl)
exception_path = call_impl[call_impl.index("except Exception:"):]
global_loop = exception_path[:exception_path.index("for hook_id, hook in self._forward_hooks.items()")]
print("the exception path calls a global hook as:", global_loop[global_loop.index("hook(self"):].split("  #")[0])
assert "hook(self, args, result)" in global_loop and "with_kwargs" not in global_loop
assert "if hook_id in self._forward_hooks_with_kwargs:" in exception_path  # the module's own hooks: looked up
assert "global module forward hook with ``always_call=True`` raised an exception" in str(caught[0].message)
assert "missing 1 required positional argument: 'output'" in str(caught[0].message)

# %% [markdown]
# Until that is fixed, a global hook that needs both options can accept either call:
# `hook(module, args, *rest)`, where `rest` is `(kwargs, output)` normally and `(output,)` after
# an error (the keyword arguments are then not available).

# %%
tolerant_calls = []


def tolerant(module, args, *rest):
    kwargs, output = rest if len(rest) == 2 else (None, rest[0])
    tolerant_calls.append((type(module).__name__, kwargs, output))


with module_hooks.register_module_forward_hook(tolerant, with_kwargs=True, always_call=True):
    masked(x, mask=mask)
    try:
        broken(torch.ones(1), scale=2.0)
    except RuntimeError:
        pass
print(tolerant_calls[0][:2], "| after the error:", tolerant_calls[1])
assert tolerant_calls[0][1]["mask"] is mask and tolerant_calls[1] == ("Broken", None, None)

# %% [markdown]
# ## Exercise 1: `summarize_model` · hard · about 40 min
#
# Tools like `torchinfo` print a table of a model: every layer, its output shape, its parameters.
# Build one from hooks. Write `summarize_model(model, *inputs, **kwargs)`. It calls
# `model(*inputs, **kwargs)` once and returns `(output, rows)`: `output` is the object the model
# returned, itself (not a copy), and `rows` is a list with one dict per *call* of a module of
# `model`, in the order the calls **start** (a parent before its children, as torchinfo lists
# them), each with these four keys and no others:
#
# - `"name"`: the module's name in `model.named_modules()` (the model itself is `""`; a module
#   registered under two names, `self.b = self.a`, is listed once there, under its first name,
#   and that is its name);
# - `"type"`: the name of its class, `type(module).__name__` (e.g. `"Linear"`);
# - `"output_shape"`: for a tensor output, `tuple(output.shape)`; for a tuple or list output, a
#   list with one entry per item, the shape tuple of each tensor item and `None` for any other
#   item (a tuple inside the tuple too: do not look inside it); for any other output, `None`. A
#   named tuple, such as what `torch.max(x, dim)` returns, is a tuple;
# - `"params"`: the number of elements of the module's **own** parameters, those registered on it
#   directly (`module.parameters(recurse=False)`), trainable or frozen; a container that only
#   holds layers has 0, a parameter shared by two modules (tied weights) counts for both, and
#   buffers (a BatchNorm's running mean) are not parameters.
#
# A module called twice gets two rows. Modules that are not in `model.named_modules()` (created
# in `forward`, or held in a plain list) get no row. The model runs as the caller has it: in its
# train or eval mode, and in the caller's grad mode, so that the output has its graph when
# gradients are on (no `torch.no_grad()` here); both modes are as they were afterwards. Every hook
# you register is removed before `summarize_model` returns, and also when the forward pass raises;
# that exception reaches the caller unchanged.
#
# Traps: rows in the order calls *finish* (that is when a forward hook fires); a dict keyed by
# name (a shared module's second call is lost); `named_modules(remove_duplicate=False)`, which
# lists a shared module under each of its names; recursive parameter counts; dropping the root,
# whose name `""` is falsy; lists as well as tuples; global hooks left behind when `forward` raises;
# a list of rows made outside the function, which the next call finds still full; hooks attached
# with `model.apply()`, which reaches a module that sits in two containers once from each.
#
# Check: run `check(summarize_model)` below, or
# `pytest tests/test_07_global_and_kwargs_hooks.py -k summarize_model`.
#
# The details behind those rules, measured: a BatchNorm's running statistics are buffers, not
# parameters; a module registered under two names is listed once by `named_modules()` and under
# both names with `remove_duplicate=False`; a module that sits in two containers is listed once
# by `named_modules()` but reached twice by `model.apply()`; a parameter shared by two modules is
# an own parameter of each, but `model.named_parameters()` lists it once; what `torch.max(x, dim)`
# returns is a named tuple, an instance of `tuple` whose type is not `tuple`.

# %%
norm = nn.BatchNorm1d(3)
print("BatchNorm1d parameters:", [name for name, p in norm.named_parameters(recurse=False)],
      "| buffers:", [name for name, b in norm.named_buffers(recurse=False)])
assert [name for name, p in norm.named_parameters(recurse=False)] == ["weight", "bias"]
assert "running_mean" in dict(norm.named_buffers(recurse=False))

twice = nn.Module()
twice.first = nn.Linear(2, 2, bias=False)
twice.second = twice.first  # one module, two names
print("named_modules():", [name for name, m in twice.named_modules()],
      "| remove_duplicate=False:", [name for name, m in twice.named_modules(remove_duplicate=False)])
assert [name for name, m in twice.named_modules()] == ["", "first"]
assert [name for name, m in twice.named_modules(remove_duplicate=False)] == ["", "first", "second"]

act = nn.Tanh()
two_containers = nn.Sequential(nn.Sequential(nn.Linear(2, 2), act), nn.Sequential(act))  # one Tanh in both
reached = []
two_containers.apply(reached.append)
print("the Tanh: in named_modules()", sum(m is act for name, m in two_containers.named_modules()), "time,",
      "reached by apply()", sum(m is act for m in reached), "times")
assert sum(m is act for name, m in two_containers.named_modules()) == 1 and sum(m is act for m in reached) == 2

tied = nn.Module()
tied.encode, tied.decode = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
tied.decode.weight = tied.encode.weight  # tied weights: one parameter, own to both layers
print("own parameters of encode and decode:", len(list(tied.encode.parameters(recurse=False))),
      len(list(tied.decode.parameters(recurse=False))),
      "| model.named_parameters():", [name for name, p in tied.named_parameters()])
assert list(tied.decode.parameters(recurse=False))[0] is tied.encode.weight
assert [name for name, p in tied.named_parameters()] == ["encode.weight"]

top = torch.max(torch.randn(2, 3), dim=-1)
print(f"torch.max(x, dim) returns a {type(top).__module__}.{type(top).__name__}:",
      "isinstance(top, tuple) =", isinstance(top, tuple), "| type(top) is tuple =", type(top) is tuple)
assert isinstance(top, tuple) and type(top) is not tuple and len(top) == 2

# %% tags=["exercise"]
# Exercise: summarize_model — write your code in this cell.
import torch
import torch.nn.modules.module as module_hooks


def summarize_model(model, *inputs, **kwargs):
    """Run `model(*inputs, **kwargs)` once and summarize every module call, like torchinfo.

    Returns `(output, rows)`: `output` is the object the model returned, itself (not a copy);
    `rows` is a list of dicts, one per call of a module of `model`, in the order the calls start
    (a parent before its children; a module called twice gets two rows), each with these four keys
    and no others, `{"name": str, "type": str, "output_shape": ..., "params": int}`:
    - name: the module's name in model.named_modules() ("" for the model itself; a module
      registered under two names has only the first, the one named_modules() lists);
    - type: type(module).__name__;
    - output_shape: tuple(output.shape) for a tensor; for a tuple or list, a list with the shape
      tuple of each tensor item and None for any other item, a tuple or list item included (a
      named tuple, such as what torch.max(x, dim) returns, is a tuple); None for anything else;
    - params: the number of elements of the module's own parameters (recurse=False), frozen
      ones and ones shared with another module included, buffers not.
    Modules not in model.named_modules() get no row. The model runs as the caller has it, in its
    train or eval mode and in the caller's grad mode (so the output has its graph when gradients
    are on); both modes are as they were afterwards. All hooks are removed before returning,
    also when the forward pass raises (the exception propagates unchanged).
    """
    # BEGIN SOLUTION
    names = {module: name for name, module in model.named_modules()}
    rows, open_rows = [], []

    def shape_of(value):
        if isinstance(value, torch.Tensor):
            return tuple(value.shape)
        if isinstance(value, (tuple, list)):
            return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]
        return None

    def starts(module, args):
        if module in names:
            row = {"name": names[module], "type": type(module).__name__, "output_shape": None,
                   "params": sum(p.numel() for p in module.parameters(recurse=False))}
            rows.append(row)
            open_rows.append(row)

    def finishes(module, args, output):
        if module in names:
            open_rows.pop()["output_shape"] = shape_of(output)

    with module_hooks.register_module_forward_pre_hook(starts), \
            module_hooks.register_module_forward_hook(finishes):
        output = model(*inputs, **kwargs)
    return output, rows
    # END SOLUTION


# %%
check(summarize_model)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A forward pre-hook fires when a call starts, so it is the one that appends the row, in the
# right order. The output is known only when the call finishes, in the forward hook: it fills in
# the shape of the row its pre-hook opened. Calls nest, so the row to fill is the most recently
# opened one that is still open: a stack.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `module_hooks.register_module_forward_pre_hook(hook)` and
# `module_hooks.register_module_forward_hook(hook)` (with `import torch.nn.modules.module as
# module_hooks`) see every module; a dict `{module: name for name, module in
# model.named_modules()}` gives names and tells you which modules are the model's.
# `module.parameters(recurse=False)` and `p.numel()` count own parameters. Use the handles in a
# `with` statement so they are removed however the call ends.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# names = {module: name for name, module in model.named_modules()}
# rows, open_rows = [], []
#
# def starts(module, args):
#     if module in names:
#         row = {"name": names[module], "type": ..., "output_shape": None, "params": ...}
#         rows.append(row)
#         open_rows.append(row)
#
# def finishes(module, args, output):
#     if module in names:
#         open_rows.pop()["output_shape"] = ...
#
# with module_hooks.register_module_forward_pre_hook(starts), \
#         module_hooks.register_module_forward_hook(finishes):
#     output = model(*inputs, **kwargs)
# ```
#
# </details>

# %% [markdown]
# Your function at work: a small model with a layer it calls twice (the second time through a
# second attribute, `self.again = self.shared`, the same module), a frozen layer and a keyword
# argument. Once `summarize_model` passes, the cell prints one row per call: the model itself
# first (its name `""` is printed as `(root)`), `shared` twice (`again` is not a name of
# `named_modules()`), and the frozen `head` with its 27 parameters, then that the output it
# returned has its graph (`requires_grad` is True: the model ran with gradients on); until then it
# prints "Not done yet".

# %%
class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.shared = nn.Linear(8, 8)
        self.again = self.shared  # the same module, registered a second time
        self.head = nn.Linear(8, 3)
        self.head.requires_grad_(False)

    def forward(self, x, *, temperature=1.0):
        h = self.again(torch.tanh(self.shared(self.encoder(x))))
        return self.head(h) / temperature


torch.manual_seed(0)
tower = Tower()
x = torch.randn(5, 6)
print("named_modules():", [name for name, module in tower.named_modules()])
assert [name for name, module in tower.named_modules()] == ["", "encoder", "encoder.0", "encoder.1", "shared", "head"]
assert tower.again is tower.shared

with try_it():
    output, rows = summarize_model(tower, x, temperature=2.0)
    print(f"{'name':10} {'type':12} {'output shape':14} {'params':>6}")
    for row in rows:
        print(f"{row['name'] or '(root)':10} {row['type']:12} {str(row['output_shape']):14} {row['params']:>6}")
    assert [row["name"] for row in rows] == ["", "encoder", "encoder.0", "encoder.1", "shared", "shared", "head"]
    assert [row["params"] for row in rows] == [0, 0, 56, 0, 72, 72, 27]
    print("the output returned: requires_grad =", output.requires_grad)
    assert output.requires_grad and output.grad_fn is not None
    assert torch.equal(output, tower(x, temperature=2.0)) and hooks_registered() == 0

# %% [markdown]
# ## Exercise 2: `find_first_nonfinite` · medium · about 25 min
#
# A loss turns into `nan`, and you want the layer where it started. Once a NaN or an infinity
# appears, it usually spreads to every layer after it and to every parent, so "the first module
# whose output is not finite" is the one to look at. Write `find_first_nonfinite(model, *inputs)`:
#
# - it runs `model(*inputs)` once, under `torch.no_grad()` (it only looks), in the model's own
#   train or eval mode (no `model.eval()`); the model's mode and the grad mode are as they were
#   afterwards;
# - it watches every module of `model.named_modules()`: the layers inside containers, the
#   containers and the model itself; modules not in it are ignored;
# - it returns the name (as in `model.named_modules()`: `""` for the model itself, the first name
#   of a module registered under two) of the first
#   module call, in the order the calls **return**, whose output holds a NaN, `+inf` or `-inf`;
#   or `None` if every output is finite. Since a parent returns after its children, a parent is
#   the answer only when none of its children that ran before its own return produced a
#   non-finite output;
# - an output counts when it is a tensor with a non-finite element, or a tuple or list with such a
#   tensor among its items (a named tuple, such as what `torch.sort(x, dim)` returns, is a tuple);
#   other outputs count as finite (a dict, or a tuple inside the tuple, whatever it holds);
# - every hook is removed before it returns, also when the forward pass raises; that exception
#   reaches the caller unchanged.
#
# Traps: `torch.isnan` misses infinities (the cell below shows it); the last non-finite module is
# the model itself (the parent finishes last); a pre-hook sees inputs, not outputs; tuple and list
# outputs, named tuples among them (`type(output) in (tuple, list)` misses those; the cell below
# shows one); hooks on `model.children()` only miss the layers inside them; the root's name is
# `""`, which is falsy but is not `None`; an answer kept in a variable outside the function.
#
# Check: run `check(find_first_nonfinite)` below, or
# `pytest tests/test_07_global_and_kwargs_hooks.py -k find_first_nonfinite`.

# %%
values = torch.tensor([1.0, float("inf"), float("-inf"), float("nan")])
print("values:            ", values)
print("torch.isnan:       ", torch.isnan(values))
print("torch.isfinite:    ", torch.isfinite(values))
logs = torch.log(torch.tensor([0.0, -1.0]))
print("torch.log of 0 and of -1:", logs)
assert logs[0].item() == float("-inf") and torch.isnan(logs[1])
assert torch.isnan(values).tolist() == [False, False, False, True]
assert torch.isfinite(values).tolist() == [True, False, False, False]
ordered = torch.sort(values, dim=-1)
print("torch.sort returns a", type(ordered).__name__, "| isinstance(..., (tuple, list)):",
      isinstance(ordered, (tuple, list)), "| type(...) in (tuple, list):", type(ordered) in (tuple, list))
assert isinstance(ordered, (tuple, list)) and type(ordered) not in (tuple, list)

# %% tags=["exercise"]
# Exercise: find_first_nonfinite — write your code in this cell.
import torch
import torch.nn.modules.module as module_hooks


def find_first_nonfinite(model, *inputs):
    """Name of the first module of `model` whose output is not finite, or None.

    Runs model(*inputs) once under torch.no_grad(), in the model's own train or eval mode;
    afterwards the model's mode and torch's grad mode are as they were. Every module of
    model.named_modules() is watched, containers and the model itself included; modules not in it
    are ignored. Returns the name (as in model.named_modules(): "" for the model itself, and a
    module registered under two names has only the first) of the first module call, in the order
    the calls return, whose output contains NaN, +inf or -inf: a tensor with such an element, or
    a tuple or list with such a tensor among its items (a named tuple, such as what
    torch.sort(x, dim) returns, is a tuple). Any other output (a dict, a tuple inside the tuple)
    counts as finite. Returns None if there is none. All hooks are removed before
    returning, also when the forward pass raises (the exception propagates unchanged).
    """
    # BEGIN SOLUTION
    names = {module: name for name, module in model.named_modules()}
    found = []

    def not_finite(value):
        if isinstance(value, torch.Tensor):
            return not torch.isfinite(value).all()
        if isinstance(value, (tuple, list)):
            return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))
        return False

    def hook(module, args, output):
        if not found and module in names and not_finite(output):
            found.append(names[module])

    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):
        model(*inputs)
    return found[0] if found else None
    # END SOLUTION


# %%
check(find_first_nonfinite)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A forward hook fires when a call returns, so the order in which forward hooks fire is exactly
# the order asked for. Keep the first name whose output is not finite and ignore everything
# after it.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `torch.isfinite(t).all()` is False when `t` holds a NaN or an infinity (`torch.isnan` sees only
# NaN). `module_hooks.register_module_forward_hook(hook)` sees every module; a dict
# `{module: name for name, module in model.named_modules()}` names them. Compare the result with
# `is None`, not by truth value: the model's own name is `""`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# names = {module: name for name, module in model.named_modules()}
# found = []
#
# def hook(module, args, output):
#     if not found and module in names and ...:  # a tensor, or a tuple/list of them
#         found.append(names[module])
#
# with torch.no_grad(), module_hooks.register_module_forward_hook(hook):
#     model(*inputs)
# ```
#
# </details>

# %% [markdown]
# Your function at work: a model that takes a logarithm of values that can be negative. The cell
# first runs the layers one by one: the NaN appears in `body.1` (the log) and is in every output
# from there on, `body.2`, `body` (the parent), `head` and the model's. Once
# `find_first_nonfinite` passes, it then prints `'body.1'`, and `None` for a model whose log only
# gets positive values; until then it prints "Not done yet".

# %%
class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


class Pipeline(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), Log(), nn.Linear(4, 4))
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.body(x))


torch.manual_seed(0)
pipeline = Pipeline()
x = torch.randn(3, 4)
with torch.no_grad():
    outputs = {"body.0": pipeline.body[0](x)}
    outputs["body.1"] = pipeline.body[1](outputs["body.0"])
    outputs["body.2"] = pipeline.body[2](outputs["body.1"])
    outputs["body"] = pipeline.body(x)
    outputs["head"] = pipeline.head(outputs["body"])
    outputs["(root)"] = pipeline(x)
nan_in = {name: bool(torch.isnan(out).any()) for name, out in outputs.items()}
print("NaN in the output of:", nan_in)
assert nan_in == {"body.0": False, "body.1": True, "body.2": True, "body": True, "head": True, "(root)": True}

with try_it():
    first = find_first_nonfinite(pipeline, x)
    print("find_first_nonfinite(pipeline, x) =", repr(first))
    assert first == "body.1"
    print("with positive inputs to the log:", find_first_nonfinite(nn.Sequential(nn.Softplus(), Log()), x))
    assert find_first_nonfinite(nn.Sequential(nn.Softplus(), Log()), x) is None
    assert hooks_registered() == 0

# %% [markdown]
# ## Exercise 3: `predict_global_and_prepend` · medium · about 5 min
#
# **Predict before you run.** The cell below defines `global_and_prepend_events(log)`: a layer with
# two forward pre-hooks and two forward hooks of its own (the second of each registered with
# `prepend=True`), then a global forward pre-hook and a global forward hook, registered last; one
# call of the layer, and every handle removed in a `finally:` block. Nothing runs yet: the cell only
# defines the function. The events:
#
# - `"pre:own"`, `"pre:own, prepend"`, `"pre:global"`: that forward pre-hook fired;
# - `"forward"`: the layer's `forward` ran;
# - `"fwd:own"`, `"fwd:own, prepend"`, `"fwd:global"`: that forward hook fired.
#
# Write `predict_global_and_prepend()`: it returns the list of events in the order you expect them
# to fire. Spelling: case does not matter, nor spaces around a name, around the `:` or after the
# comma; `forward` may stand for `fwd` before a `:`, and `prehook`, `pre-hook` or `pre_hook` for
# `pre`.
#
# Check: run `check(predict_global_and_prepend)` below (a wrong prediction is told the first event
# where it parts from what fires, and the rule;
# after three different wrong predictions in one session, `check` shows the whole log), or
# `pytest tests/test_07_global_and_kwargs_hooks.py -k predict_global_and_prepend`. Once it passes,
# the cell after the hints prints the log, recorded as it runs.

# %% tags=["prediction"]
import torch
import torch.nn.modules.module as module_hooks
from torch import nn


def global_and_prepend_events(log):
    class Layer(nn.Module):
        def forward(self, x):
            log("forward")
            return x

    layer = Layer()
    handles = [
        layer.register_forward_pre_hook(lambda module, args: log("pre:own")),
        layer.register_forward_hook(lambda module, args, output: log("fwd:own")),
        layer.register_forward_pre_hook(lambda module, args: log("pre:own, prepend"), prepend=True),
        layer.register_forward_hook(lambda module, args, output: log("fwd:own, prepend"), prepend=True),
        module_hooks.register_module_forward_pre_hook(lambda module, args: log("pre:global")),
        module_hooks.register_module_forward_hook(lambda module, args, output: log("fwd:global")),
    ]
    try:
        layer(torch.zeros(1))
    finally:
        for handle in handles:
            handle.remove()


# %% tags=["exercise"]
# Exercise: predict_global_and_prepend — write your code in this cell.


def predict_global_and_prepend():
    """Return the events that `global_and_prepend_events` logs, in the order they fire.

    Each event is one of the names the cell above logs, e.g. "pre:own".
    """
    # BEGIN SOLUTION: return ["...", ...]: the events, in the order you expect them to fire
    return ["pre:global", "pre:own, prepend", "pre:own", "forward",
            "fwd:global", "fwd:own, prepend", "fwd:own"]
    # END SOLUTION


# %%
check(predict_global_and_prepend)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Two questions: where do the global hooks stand next to the layer's own, on each side of
# `forward`? And what can `prepend=True` move a hook in front of?
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `prepend=True` exists only on a module's own registration methods, not on
# `register_module_forward_pre_hook` or `register_module_forward_hook`, and orders the hooks in that
# module's own dict; the global hooks live in dicts of their own, which `Module.__call__` reads first.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Seven events with `"forward"` in the middle; each side starts with its global hook, whenever it
# was registered.
#
# </details>

# %% [markdown]
# Once your prediction is right, this cell prints what fires, recorded as it runs (until then it
# says what to do).

# %%
from hooked.notebook import reveal

reveal(predict_global_and_prepend)

# %% [markdown]
# ## Exercise 4: `predict_always_call` · hard · about 10 min
#
# **Predict before you run.** The cell below defines `always_call_events(log)`: a `Sequential` named
# `model` of two children, `ok`, which returns its input, and `broken`, whose `forward` raises a
# `ValueError`. `model` and `broken` each get a forward pre-hook, a plain forward hook and a forward
# hook with `always_call=True`; a global forward hook with `always_call=True` logs every module it
# fires for. The call is made inside `try:`, the error caught, and every handle removed. Nothing
# runs yet: the cell only defines the function. The events:
#
# - `"pre:model"`, `"pre:broken"`: that module's forward pre-hook fired;
# - `"fwd:model"`, `"fwd:broken"`: that module's plain forward hook fired;
# - `"always:model"`, `"always:broken"`: that module's `always_call=True` forward hook fired;
# - `"global:model"`, `"global:ok"`, `"global:broken"`: the global hook fired for that module;
# - `"caught"`: the `except ValueError:` block ran.
#
# Write `predict_always_call()`: it returns the list of events in the order you expect them to
# fire. Spelling: case does not matter, nor spaces around a name or around the `:`; `forward` may
# stand for `fwd`, `always_call` or `always-call` for `always`, and `prehook`, `pre-hook` or
# `pre_hook` for `pre`.
#
# Check: run `check(predict_always_call)` below (a wrong prediction is told the first event where it
# parts from what fires, and the rule;
# after three different wrong predictions in one session, `check` shows the whole log), or
# `pytest tests/test_07_global_and_kwargs_hooks.py -k predict_always_call`. Once it passes, the cell
# after the hints prints the log, recorded as it runs.

# %% tags=["prediction"]
import torch
import torch.nn.modules.module as module_hooks
from torch import nn


def always_call_events(log):
    class Ok(nn.Module):
        def forward(self, x):
            return x

    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("forward failed on purpose")

    model = nn.Sequential(Ok(), Broken())
    names = {model: "model", model[0]: "ok", model[1]: "broken"}
    handles = []
    for module in (model, model[1]):
        name = names[module]
        handles += [
            module.register_forward_pre_hook(lambda m, args, name=name: log(f"pre:{name}")),
            module.register_forward_hook(lambda m, args, output, name=name: log(f"fwd:{name}")),
            module.register_forward_hook(lambda m, args, output, name=name: log(f"always:{name}"),
                                         always_call=True),
        ]
    handles.append(module_hooks.register_module_forward_hook(
        lambda m, args, output: log(f"global:{names[m]}"), always_call=True))
    try:
        model(torch.zeros(1))
    except ValueError:
        log("caught")
    finally:
        for handle in handles:
            handle.remove()


# %% tags=["exercise"]
# Exercise: predict_always_call — write your code in this cell.


def predict_always_call():
    """Return the events that `always_call_events` logs, in the order they fire.

    Each event is one of the names the cell above logs, e.g. "pre:model".
    """
    # BEGIN SOLUTION: return ["...", ...]: the events, in the order you expect them to fire
    return ["pre:model", "global:ok", "pre:broken", "global:broken",
            "always:broken", "global:model", "always:model", "caught"]
    # END SOLUTION


# %%
check(predict_always_call)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Follow the exception: it starts in `broken.forward` and travels out through `broken`'s call, then
# `model`'s, to the `except`. Which hooks run on that way out, and which need an output to run?
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# When `forward` raises, `Module.__call__` runs only the forward hooks registered with
# `always_call=True` (the global ones before the module's own), then lets the exception go on. `ok`
# returns normally before that, and a global forward hook fires for every module.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Eight events, from `"pre:model"` to `"caught"`; no plain `fwd:` event fires, and `broken`'s
# hooks come before `model`'s on the way out.
#
# </details>

# %% [markdown]
# Once your prediction is right, this cell prints what fires, recorded as it runs (until then it
# says what to do).

# %%
from hooked.notebook import reveal

reveal(predict_always_call)

# %% [markdown]
# ## Summary
#
# | Hook | registered by | called as | fires |
# |---|---|---|---|
# | global forward pre | `module_hooks.register_module_forward_pre_hook(hook)` | `hook(module, args)` | when any module's call starts, before its own pre-hooks |
# | global forward | `module_hooks.register_module_forward_hook(hook, *, with_kwargs, always_call)` | `hook(module, args, output)` | when any module's call returns, before its own forward hooks |
# | global backward pre | `module_hooks.register_module_full_backward_pre_hook(hook)` | `hook(module, grad_output)` | before any module's backward, before its own |
# | global backward | `module_hooks.register_module_full_backward_hook(hook)` | `hook(module, grad_input, grad_output)` | after any module's input gradients exist, before its own |
# | deprecated global backward | `module_hooks.register_module_backward_hook(hook)` | do not use | its `grad_input` is the last operation's; it cannot be mixed with the full global backward hooks in one process |
# | registration | `module_hooks.register_module_{parameter,buffer,module}_registration_hook(hook)` | `hook(module, name, value)` | when a parameter, buffer or submodule is registered |
#
# Options: `with_kwargs=True` shows keyword arguments (`hook(module, args, kwargs[, output])`);
# `prepend=True` runs a module's own hook before its other own hooks (never before global ones);
# `always_call=True` runs a forward hook also when `forward` raises, with `output=None` (on torch
# 2.13, not a global hook that also has `with_kwargs=True`). Calls start parent first and finish
# children first; in backward a parent's pre-hook fires before its children's and its backward
# hook after theirs, and siblings come in reverse order. Global hooks fire for every module in the
# process: remove them with `with handle:` or `try`/`finally`, every time.
#
# Next, lesson 08 goes below modules, to hooks on autograd itself.
