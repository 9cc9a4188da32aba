# %% [markdown]
# # Lesson 02 — Removing hooks and keeping them tidy
#
# A hook stays registered until you remove it. A hook you forgot keeps firing on every later call
# and keeps doing whatever it does: counting, storing tensors, changing outputs or gradients. This
# lesson is about removing hooks reliably.
#
# After this lesson you will be able to:
#
# - use the handle that registering a hook returns, and see whether a hook is still registered;
# - remove a hook automatically with a `with` block or `try`/`finally`, even when an exception is raised;
# - avoid stacked hooks when you re-run a notebook cell;
# - group many handles so you can remove them together.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_02_removing_hooks.py` (add `-k HookGroup` for one exercise; plain `pytest`
# grades every lesson).

# %%
import torch
import torch.nn.functional as F
from torch import nn

from hooked.notebook import check, hint, try_it

# %% [markdown]
# ## Every registration returns a handle
#
# This lesson's examples use module forward hooks, which lesson 04 explains. All you need here:
# after `layer.register_forward_hook(hook)`, each call `layer(x)` runs `forward` and then calls
# `hook(module, args, output)`: the module, its positional arguments as a tuple, and what `forward`
# returned.
#
# `register_forward_hook` returns a `torch.utils.hooks.RemovableHandle`. The module keeps its forward
# hooks in a dict, `module._forward_hooks`, keyed by `handle.id`. The name starts with an underscore
# because the dict is private: read it to see what is registered, but don't change it in real code.
# `handle.remove()` deletes the hook's entry. After that the hook no longer fires, and calling
# `remove()` a second time does nothing.

# %%
torch.manual_seed(0)
layer = nn.Linear(4, 2)
x = torch.randn(1, 4)

calls = []


def count_call(module, args, output):
    calls.append((module, args, output))


handle = layer.register_forward_hook(count_call)
print("type:", type(handle))
print("handle.id:", handle.id)
print("registered:", {key: hook.__name__ for key, hook in layer._forward_hooks.items()})
out = layer(x)
print("calls after one forward:", len(calls), "| the hook got (module, args, output) =", calls[0])
assert isinstance(handle, torch.utils.hooks.RemovableHandle)
assert list(layer._forward_hooks) == [handle.id]
assert len(calls) == 1
assert calls[0][0] is layer and len(calls[0][1]) == 1 and calls[0][1][0] is x and calls[0][2] is out

handle.remove()
print("registered after remove():", dict(layer._forward_hooks))
layer(x)
print("calls after another forward:", len(calls))
assert len(layer._forward_hooks) == 0 and len(calls) == 1

handle.remove()  # a second remove() is safe
print("second remove() raised nothing; registered:", dict(layer._forward_hooks))
assert len(layer._forward_hooks) == 0

# %% [markdown]
# The other hook-registration methods return the same kind of handle. The loop below finds every
# `register_..._hook` method of a module and of a tensor by name. It registers a do-nothing hook with
# each one, prints the type of what comes back, and removes the hook again. It leaves out
# `register_backward_hook`: that method is deprecated (its documentation says so; use
# `register_full_backward_hook`), and this course does not use it. `Tensor.register_hook` is the
# method from lesson 01; the other tensor method is not needed in this lesson.

# %%
leaf = torch.ones(3, requires_grad=True)
for owner in (layer, leaf):
    for method_name in sorted(dir(owner)):
        if not (method_name.startswith("register_") and method_name.endswith("_hook")):
            continue
        if method_name == "register_backward_hook":  # deprecated
            continue
        h = getattr(owner, method_name)(lambda *args: None)
        print(f"{type(owner).__name__}.{method_name:34} -> {type(h).__name__}")
        assert isinstance(h, torch.utils.hooks.RemovableHandle)
        h.remove()

doc = " ".join(nn.Module.register_backward_hook.__doc__.split())
deprecation = doc[doc.index("This function is deprecated"):].replace(":meth:`~torch.nn.Module.", "")
deprecation = deprecation.replace("`", "").split(". ")[0]
print("register_backward_hook documentation:", deprecation)
assert deprecation.startswith("This function is deprecated in favor of register_full_backward_hook")

# %% [markdown]
# ## A handle is a context manager
#
# In `with module.register_forward_hook(fn) as handle:`, the hook is registered when the `with` line
# runs and removed when the block exits. This also happens when an exception leaves the block, and
# the exception still propagates.

# %%
calls.clear()
with layer.register_forward_hook(count_call) as handle:
    layer(x)
    print("inside the block, registered:", len(layer._forward_hooks))
    assert len(layer._forward_hooks) == 1
print("after the block, registered:", len(layer._forward_hooks))
layer(x)
print("calls (one forward inside, one after):", len(calls))
assert len(layer._forward_hooks) == 0 and len(calls) == 1

try:
    with layer.register_forward_hook(count_call):
        layer(x)
        raise ValueError("something failed inside the block")
except ValueError as e:
    print(f"the exception still arrives: {type(e).__name__}: {e}")
print("after the failed block, registered:", len(layer._forward_hooks))
assert len(layer._forward_hooks) == 0

# %% [markdown]
# ## What an exception does without cleanup
#
# The tempting pattern is to register the hook, do the work, then call `handle.remove()` at the end.
# If anything in between raises, the last line never runs. Below, the loss raises because the target
# class 5 does not exist for a layer with 2 outputs. The hook stays registered and keeps counting on
# every later forward pass.

# %%
def step_without_cleanup(model, inputs, target):
    handle = model.register_forward_hook(count_call)
    output = model(inputs)
    loss = F.cross_entropy(output, target)  # raises for a bad target
    handle.remove()                         # never reached then
    return loss


calls.clear()
bad_target = torch.tensor([5])
try:
    step_without_cleanup(layer, x, bad_target)
    raise AssertionError("expected an IndexError")
except IndexError as e:
    print(f"{type(e).__name__}: {e}")
    assert "Target 5 is out of bounds" in str(e)
print("registered after the error:", len(layer._forward_hooks))
calls.clear()
layer(x)
layer(x)
print("calls during two later forward passes:", len(calls))
assert len(layer._forward_hooks) == 1 and len(calls) == 2

layer._forward_hooks.clear()  # undo the leak for the rest of the lesson (see "Rescue" below)

# %% [markdown]
# `try`/`finally` gives the same guarantee as the `with` block: the `finally` clause runs whether
# the `try` body returns or raises. It is the general form, for cleanup that is not a single
# context manager (several handles, or other things to undo as well).

# %%
def step_with_cleanup(model, inputs, target):
    handle = model.register_forward_hook(count_call)
    try:
        output = model(inputs)
        return F.cross_entropy(output, target)
    finally:
        handle.remove()


loss = step_with_cleanup(layer, x, torch.tensor([1]))
print(f"returned loss {loss.item():.4f}; registered after the return:", len(layer._forward_hooks))
assert len(layer._forward_hooks) == 0

try:
    step_with_cleanup(layer, x, bad_target)
    raise AssertionError("expected an IndexError")
except IndexError as e:
    print(f"{type(e).__name__}: {e}")
print("registered after the error:", len(layer._forward_hooks))
calls.clear()
layer(x)
layer(x)
print("calls during two later forward passes:", len(calls))
assert len(layer._forward_hooks) == 0 and len(calls) == 0

# %% [markdown]
# ## The notebook pitfall: re-running a cell stacks hooks
#
# Suppose a cell contains `handle = layer.register_forward_hook(count_call)`. Each time you run the
# cell, it registers one more hook, and the previous handle is overwritten. The loop below runs
# that line three times, as if you had run the cell three times. Now the hook fires three times per
# forward pass. `handle.remove()` removes only the last registration.

# %%
layer = nn.Linear(4, 2)  # a fresh layer, so that this demonstration starts from no hooks

for rerun in range(3):  # the same cell, run three times
    handle = layer.register_forward_hook(count_call)

print("registered:", len(layer._forward_hooks))
calls.clear()
layer(x)
print("calls for one forward:", len(calls))
assert len(layer._forward_hooks) == 3 and len(calls) == 3

remaining = list(layer._forward_hooks)
handle.remove()
print("registered after handle.remove():", len(layer._forward_hooks))
assert len(layer._forward_hooks) == 2
assert list(layer._forward_hooks) == [key for key in remaining if key != handle.id] and handle.id == remaining[-1]

# %% [markdown]
# **Rescue.** When the handles are lost, what is left is to build the module again or to empty the
# private dict. Emptying it removes *every* forward hook on that module, including hooks that a
# library registered. It is a last resort for an interactive session, not something for real code.

# %%
layer._forward_hooks.clear()
calls.clear()
layer(x)
print("registered:", len(layer._forward_hooks), "| calls for one forward:", len(calls))
assert len(layer._forward_hooks) == 0 and len(calls) == 0

# %% [markdown]
# **Fix.** Keep the handle in a variable that exists before the cell runs, and remove the old hook
# before you register a new one. The same cell can then run any number of times:

# %%
handle = None  # in an earlier cell

for rerun in range(3):  # the cell below, run three times
    if handle is not None:
        handle.remove()
    handle = layer.register_forward_hook(count_call)

calls.clear()
layer(x)
print("registered:", len(layer._forward_hooks), "| calls for one forward:", len(calls))
assert len(layer._forward_hooks) == 1 and len(calls) == 1
handle.remove()

# %% [markdown]
# The picture below measures both versions of the cell, run 1 to 5 times on a fresh layer, and
# counts how many times the hook fires in one forward pass: without the fix the count grows with
# every run, with the fix it stays at 1.

# %%
import matplotlib.pyplot as plt


def calls_in_one_forward(runs, remove_old_first):
    """Run the registering cell `runs` times on a fresh layer; count hook calls in one forward."""
    fresh = nn.Linear(4, 2)
    fired = []
    old_handle = None
    for rerun in range(runs):  # the same cell, run `runs` times
        if remove_old_first and old_handle is not None:
            old_handle.remove()
        old_handle = fresh.register_forward_hook(lambda module, inputs, output: fired.append(1))
    fresh(torch.ones(1, 4))  # one forward pass
    return len(fired)


runs = [1, 2, 3, 4, 5]
stacked = [calls_in_one_forward(k, remove_old_first=False) for k in runs]
fixed = [calls_in_one_forward(k, remove_old_first=True) for k in runs]
print("times the cell was run:      ", runs)
print("plain register, calls:       ", stacked)
print("remove old first, calls:     ", fixed)
assert stacked == [1, 2, 3, 4, 5]
assert fixed == [1, 1, 1, 1, 1]

fig, ax = plt.subplots(figsize=(7, 3.2))
width = 0.38
bars_stacked = ax.bar([k - width / 2 for k in runs], stacked, width, color="tab:red",
                      label="plain register_forward_hook each run")
bars_fixed = ax.bar([k + width / 2 for k in runs], fixed, width, color="tab:green",
                    label="old handle removed before registering")
ax.bar_label(bars_stacked, padding=2)
ax.bar_label(bars_fixed, padding=2)
ax.set_xticks(runs)
ax.set_ylim(0, max(stacked) + 1)
ax.set_xlabel("times the cell was run")
ax.set_ylabel("hook calls in one forward")
ax.set_title("Hook calls per forward after re-running the cell")
ax.legend(loc="upper left", frameon=False)
plt.tight_layout()
plt.show()

# %% [markdown]
# Exercise 3 turns this fix into a function, so that you don't need a variable for each hook.
#
# ## A hook can remove itself
#
# A hook can call `remove()` on its own handle, as long as it can see the handle. Here is a forward
# hook that fires only on the first call:

# %%
calls.clear()


def fire_once(module, inputs, output):
    calls.append(1)
    once_handle.remove()


once_handle = layer.register_forward_hook(fire_once)
layer(x)
layer(x)
print("calls during two forward passes:", len(calls), "| registered:", len(layer._forward_hooks))
assert len(calls) == 1 and len(layer._forward_hooks) == 0

# %% [markdown]
# ## Tensor hooks have the same handles
#
# A tensor keeps the hooks from `Tensor.register_hook` in its own private dict,
# `tensor._backward_hooks`, and the handle works in a `with` block like any other. Below, the hook
# multiplies the gradient by 10 while `torch.autograd.grad` computes the gradient of
# `(x_leaf ** 2).sum()`. As lesson 01 showed, `torch.autograd.grad` runs the tensor's hooks and
# returns the gradient without writing `.grad`, whereas `backward()` adds into `.grad`.

# %%
x_leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

with x_leaf.register_hook(lambda grad: grad * 10) as tensor_handle:
    print("registered on the tensor:", list(x_leaf._backward_hooks) == [tensor_handle.id])
    assert list(x_leaf._backward_hooks) == [tensor_handle.id]
    (grad,) = torch.autograd.grad((x_leaf ** 2).sum(), x_leaf)
print("autograd.grad returned:", grad)
print("x_leaf.grad:", x_leaf.grad)
print("registered after the block:", len(x_leaf._backward_hooks))
assert torch.equal(grad, 10 * 2 * x_leaf.detach())
assert x_leaf.grad is None and len(x_leaf._backward_hooks) == 0

# %% [markdown]
# `backward()` differs in two more ways. It fills the `.grad` of every leaf the loss depends on, not
# only of the tensor you care about. And on a non-leaf it fills `.grad` only after `retain_grad()`,
# which stays switched on for every later backward; `backward(inputs=[h])` switches it on by itself.
# `torch.autograd.grad(loss, h)` writes no `.grad` at all:

# %%
base = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
weight = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = base * 2  # a non-leaf
(grad_h,) = torch.autograd.grad((h * weight).sum(), h)
print("autograd.grad returned", grad_h, "| base.grad:", base.grad, "| weight.grad:", weight.grad)
assert torch.equal(grad_h, weight.detach()) and base.grad is None and weight.grad is None

h.retain_grad()
(h * weight).sum().backward()
print("backward after h.retain_grad(): h.grad:", h.grad, "| base.grad:", base.grad, "| weight.grad:", weight.grad)
print("h.retains_grad afterwards:", h.retains_grad)
assert torch.equal(h.grad, weight.detach()) and torch.equal(base.grad, 2 * weight.detach())
assert torch.equal(weight.grad, h.detach()) and h.retains_grad

h_other = base * 2
print("before backward(inputs=[h_other]): h_other.retains_grad =", h_other.retains_grad)
(h_other * weight).sum().backward(inputs=[h_other])
print("after it: h_other.retains_grad =", h_other.retains_grad, "| h_other.grad:", h_other.grad)
assert h_other.retains_grad and torch.equal(h_other.grad, weight.detach())

# %% [markdown]
# ## Exercise 1: `grad_with_temporary_hook` · medium · about 15 min
#
# Write `grad_with_temporary_hook(x, hook, loss_fn)`. It returns the gradient of the scalar
# `loss_fn(x)` with respect to `x` (a leaf or not), computed while `hook` is registered on `x`. If the
# hook returns a tensor, that tensor is the gradient you return; if it returns `None`, you return the
# gradient as autograd computed it. `x.grad` must be the same afterwards as before (`None` stays
# `None`, a tensor keeps its value), no other tensor's `.grad` may change, and the hook you
# registered must be gone from `x` when the function returns *or raises*. Hooks that were on `x`
# before the call stay.
#
# Traps: (1) calling `.backward()`: it writes into `x.grad` and into the `.grad` of every leaf behind
# the loss, and on a non-leaf it needs `x.retain_grad()` (which `backward(inputs=[x])` turns on by
# itself), a change to `x` that lasts for every later backward (the cell above shows all three);
# (2) removing the hook on a line that an exception can skip. Exceptions from `loss_fn`, from `hook`
# or from autograd must reach the caller unchanged, so don't catch them.
#
# Check: run `check(grad_with_temporary_hook)` below, or
# `pytest tests/test_02_removing_hooks.py -k grad_with_temporary_hook`.

# %% tags=["exercise"]
# Exercise: grad_with_temporary_hook — write your code in this cell.
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    """Return the gradient of `loss_fn(x)` with respect to `x`, computed with `hook` on `x`.

    x: a tensor that requires grad (a leaf or not).
    hook: a tensor hook, `hook(grad) -> Tensor | None`. Register it with `x.register_hook(hook)`.
        If it returns a tensor, that tensor is the gradient returned here; if it returns None,
        the gradient is returned as autograd computed it.
    loss_fn: a function that takes `x` and returns a scalar tensor.

    Returns a tensor with the shape of `x`.
    `x.grad` keeps the value it had before the call (None stays None).
    No other `.grad` is written either (not those of the leaves that `x` or the loss depend on),
    and `x.retains_grad` is unchanged.
    When the function returns or raises, the hook it registered is removed from `x`; hooks that
    were on `x` before the call stay.
    Exceptions raised by `loss_fn`, by `hook` or by autograd propagate unchanged.
    """
    # BEGIN SOLUTION
    with x.register_hook(hook):
        loss = loss_fn(x)
        (grad,) = torch.autograd.grad(loss, x)
    return grad
    # END SOLUTION


# %%
check(grad_with_temporary_hook)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Two things: get the gradient handed back to you instead of added into `x.grad`, and keep the
# hook registered only while the gradient is computed, in a way that removes it even when
# `loss_fn`, the hook or autograd raises. Let such exceptions pass; don't catch them.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `torch.autograd.grad(loss, x)` returns a tuple with the gradient of `loss` with respect to `x`;
# it runs the hooks on `x` and leaves `x.grad` alone, unlike `loss.backward()`. The handle from
# `x.register_hook(hook)` is a context manager: `with x.register_hook(hook):` removes the hook when
# the block is left, by a return or by an exception (`try`/`finally` with `handle.remove()` works too).
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# with ...:               # register hook on x, as a context manager
#     loss = ...          # loss_fn applied to x
#     (grad,) = ...       # torch.autograd.grad of loss with respect to x
# return grad
# ```
#
# </details>

# %% [markdown]
# Once `grad_with_temporary_hook` is written, this cell shows it at work (until then it prints
# "Not done yet"): a hook that doubles the gradient of `(x ** 2).sum()`, which is `2 * x`.

# %%
with try_it():
    x_demo = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    g = grad_with_temporary_hook(x_demo, lambda grad: grad * 2, lambda t: (t ** 2).sum())
    print("gradient:", g, "| x_demo.grad:", x_demo.grad, "| hooks left:", len(x_demo._backward_hooks))
    assert torch.equal(g, torch.tensor([4.0, 8.0, 12.0]))
    assert x_demo.grad is None and len(x_demo._backward_hooks) == 0

# %% [markdown]
# ## Exercise 2: `HookGroup` · easy · about 15 min
#
# When you hook every layer of a model, you get one handle per layer. Write a class `HookGroup` that
# holds handles and removes them together:
#
# - `group.add(handle)` stores the handle and returns it;
# - `len(group)` is the number of handles held;
# - `group.remove()` removes every held handle (and no hook it does not hold) and empties the
#   group. Calling it again is safe;
# - `with HookGroup() as group:` gives the group and removes everything on exit, also when an
#   exception leaves the block;
# - each group holds its own handles: adding to or removing one group does not touch another.
#
# Traps: (1) a list created as a class attribute, or as a default argument
# (`def __init__(self, handles=[])`), is shared by every group; create it in `__init__`.
# (2) If `__exit__` returns a true value, Python swallows the exception that left the block; return
# `False` or `None`. (3) `remove()` must really empty the group, so that `len(group)` is 0 afterwards.
# The cell below shows traps (1) and (2) on two small classes.
#
# Check: run `check(HookGroup)` below, or `pytest tests/test_02_removing_hooks.py -k HookGroup`.

# %%
class SharedList:
    items = []  # a class attribute: one list for every instance


class SharedDefault:
    def __init__(self, items=[]):  # the default list is created once, when `def` runs
        self.items = items


for cls in (SharedList, SharedDefault):
    first, second = cls(), cls()
    first.items.append("a handle")
    print(f"{cls.__name__}: the second instance holds {second.items}")
    assert second.items == ["a handle"]


class Swallows:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return True  # a true value: Python drops the exception


with Swallows():
    raise ValueError("this exception never arrives")
print("the with block raised ValueError, and the next line ran anyway")

# %% tags=["exercise"]
# Exercise: HookGroup — write your code in this cell.


class HookGroup:
    """Holds RemovableHandles and removes them together, for example
    `handle = group.add(layer.register_forward_hook(fn))`.

    `with HookGroup() as group:` binds the group and calls `group.remove()` when the block exits,
    also when an exception leaves the block; the exception is not swallowed.
    Each HookGroup holds its own handles: adding to or removing one group does not affect another.
    """

    def __init__(self):
        """Start with no handles."""
        # BEGIN SOLUTION
        self._handles = []
        # END SOLUTION

    def add(self, handle):
        """Hold `handle` (a RemovableHandle) and return it unchanged."""
        # BEGIN SOLUTION
        self._handles.append(handle)
        return handle
        # END SOLUTION

    def __len__(self):
        """The number of handles held."""
        # BEGIN SOLUTION
        return len(self._handles)
        # END SOLUTION

    def remove(self):
        """Remove every held handle and empty the group; hooks it does not hold stay registered.
        Safe to call repeatedly."""
        # BEGIN SOLUTION
        handles, self._handles = self._handles, []
        for handle in reversed(handles):
            handle.remove()
        # END SOLUTION

    def __enter__(self):
        """Return the group itself, for `with HookGroup() as group:`."""
        # BEGIN SOLUTION
        return self
        # END SOLUTION

    def __exit__(self, exc_type, exc_value, traceback):
        """Call `self.remove()`, and return False (or None): the exception is not swallowed."""
        # BEGIN SOLUTION
        self.remove()
        return False
        # END SOLUTION


# %%
check(HookGroup)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A `HookGroup` is a list of handles with a few methods around it. Each group needs a list of its
# own. Removing the group means calling `remove()` on every handle it holds and then forgetting them,
# so that `len(group)` is 0 and a second `remove()` has nothing left to do. As a context manager,
# leaving the `with` block removes everything and lets an exception go on.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# Create the list in `__init__` (`self._handles = []`); a list written in the class body would be
# shared by every group. `__len__` returns a number, `__enter__` returns what `as` binds (the group),
# and `__exit__(self, exc_type, exc_value, traceback)` runs when the block is left: a true return
# value would swallow the exception, so return `False`. Every handle has a `remove()` method.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# `add` appends and returns the handle it was given; `__enter__` returns `self`. The other two:
#
# ```python
# def remove(self):
#     for handle in self._handles:
#         ...                 # unregister that hook
#     self._handles = ...     # nothing held any more
#
# def __exit__(self, exc_type, exc_value, traceback):
#     ...                     # remove everything
#     return False            # an exception leaving the block goes on
# ```
#
# </details>

# %% [markdown]
# Once `HookGroup` is written, this cell shows it at work: one forward hook on each of the three
# layers of a small model, all removed when the `with` block ends.

# %%
with try_it():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    shapes = {}

    def record_shape(name):
        def hook(module, inputs, output):
            shapes[name] = tuple(output.shape)
        return hook

    with HookGroup() as group:
        for name, child in model.named_children():
            group.add(child.register_forward_hook(record_shape(name)))
        model(torch.randn(5, 4))
        print("handles in the group:", len(group))
        assert len(group) == 3
    print("output shapes:", shapes)
    left = sum(len(child._forward_hooks) for child in model.children())
    print("hooks left after the block:", left, "| len(group):", len(group))
    assert shapes == {"0": (5, 8), "1": (5, 8), "2": (5, 2)}
    assert left == 0 and len(group) == 0

# %% [markdown]
# ## Exercise 3: `register_named_hook` · medium · about 15 min
#
# Write `register_named_hook(module, name, hook)`. It registers `hook` as a forward hook on `module`
# and returns the handle. If this function registered a hook on the same module under the same name
# before, it removes that hook first. Re-running a cell that calls
# `register_named_hook(layer, "count", count_call)` then replaces the hook instead of stacking
# another one. Different names on one module coexist, the same name on two modules does not
# interfere, and hooks registered on the module by other means (a direct `register_forward_hook`,
# a library) are left alone. A name may also be the name of one of the module's attributes, such as
# `"weight"`: the module's attributes stay as they are.
#
# Trap: where the names are remembered (the cell below shows both problems, and the checker tests
# both: it runs your exercise cell a second time, and it lets a module go).
#
# - A dict in the exercise cell's global scope is reset when you re-run that cell. After that, the
#   old hooks can no longer be found.
# - A plain dict keyed by module keeps every module alive for as long as the dict exists.
#
# A good place is the module itself: store a `{name: handle}` dict as an attribute on it. The
# registry then lives and dies with the module. A `weakref.WeakKeyDictionary` keyed by module
# avoids the memory leak, but, like any dict made in the cell, it is still reset when you re-run the
# cell (the cell shows that too). Removing a handle that was already removed is safe (the first
# section showed it), so the function does not need to track hooks that you removed by hand.
#
# Check: run `check(register_named_hook)` below, or
# `pytest tests/test_02_removing_hooks.py -k register_named_hook`.

# %%
import gc
import weakref

cell = "registry = {}\n"  # an exercise cell that keeps its registry in a global dict
namespace = {}
exec(cell, namespace)  # run the cell
namespace["registry"]["count"] = "the handle of a hook"
exec(cell, namespace)  # run the same cell again
print("the global registry after re-running its cell:", namespace["registry"])
assert namespace["registry"] == {}

kept_by_dict, kept_on_itself = nn.Linear(4, 2), nn.Linear(4, 2)
plain_registry = {kept_by_dict: {}}  # keyed by the module
kept_on_itself._named_hooks = {}  # stored on the module
alive = {"keyed by the module": weakref.ref(kept_by_dict), "stored on the module": weakref.ref(kept_on_itself)}
del kept_by_dict, kept_on_itself
gc.collect()
for where, ref in alive.items():
    print(f"registry {where}: the module is still alive after del: {ref() is not None}")
assert alive["keyed by the module"]() is not None and alive["stored on the module"]() is None
del plain_registry

weak_cell = "import weakref\nregistry = weakref.WeakKeyDictionary()\n"  # keyed by module, weakly
exec(weak_cell, namespace)
held = nn.Linear(4, 2)
namespace["registry"][held] = {"count": "the handle of a hook"}
held_ref = weakref.ref(held)
del held
gc.collect()
print("WeakKeyDictionary: the module is still alive after del:", held_ref() is not None,
      "| entries left:", len(namespace["registry"]))
assert held_ref() is None and len(namespace["registry"]) == 0
kept = nn.Linear(4, 2)
namespace["registry"][kept] = {"count": "the handle of a hook"}
exec(weak_cell, namespace)  # run the cell again
print("WeakKeyDictionary after re-running its cell, entries for a living module:", len(namespace["registry"]))
assert kept not in namespace["registry"]

# %% tags=["exercise"]
# Exercise: register_named_hook — write your code in this cell.


def register_named_hook(module, name, hook):
    """Register `hook` as a forward hook on `module` under `name`; return its RemovableHandle.

    `hook(module, inputs, output)` is registered with `module.register_forward_hook(hook)`.
    If a hook was registered earlier through this function on the same `module` under the same
    `name`, it is removed first, so calling this again (for example by re-running a notebook cell)
    replaces the hook instead of adding a second one.
    Hooks under different names on one module coexist. The same name on different modules does not
    interfere. Hooks registered on the module by other means are left alone.
    The module's own attributes stay as they are, whatever `name` is (also "weight" or "forward").
    What the function remembers survives running its own cell again, and it keeps no module alive
    once the caller has let go of it.
    """
    # BEGIN SOLUTION
    registry = getattr(module, "_named_forward_hook_handles", None)
    if registry is None:
        registry = {}
        module._named_forward_hook_handles = registry
    previous = registry.pop(name, None)
    if previous is not None:
        previous.remove()
    handle = module.register_forward_hook(hook)
    registry[name] = handle
    return handle
    # END SOLUTION


# %%
check(register_named_hook)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Remember, for each module and each name, the handle that the last registration returned.
# Before registering under a name that module already has, remove the old handle. Keep that memory
# on the module itself: it then survives re-running the cell, and it goes away with the module.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# You can set your own attribute on an `nn.Module`: `module._named_hooks = {}` stores it and
# `getattr(module, "_named_hooks", None)` reads it, or gives `None` when it was never set. In a dict
# `{name: handle}`, `registry.pop(name, None)` takes out the old handle if there is one.
# `module.register_forward_hook(hook)` returns the new handle, and removing a handle that was
# already removed is harmless.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# registry = getattr(module, "_named_hooks", None)
# if registry is None:
#     ...                        # make a new dict and store it on the module
# old = registry.pop(name, None)
# if old is not None:
#     ...                        # unregister the old hook
# registry[name] = ...           # register hook as a forward hook on module
# return registry[name]
# ```
#
# </details>

# %% [markdown]
# Once `register_named_hook` is written, this cell shows it at work: the registering line runs
# three times, as a re-run cell would, and the hook still fires once per forward. A second name adds
# a second hook, and a hook registered directly stays.

# %%
with try_it():
    named_layer = nn.Linear(4, 2)
    counted, out_shapes, direct = [], [], []
    for rerun in range(3):  # the same cell, run three times
        count_handle = register_named_hook(named_layer, "count", lambda m, args, out: counted.append(1))
    named_layer(torch.ones(1, 4))
    print("after three runs, registered:", len(named_layer._forward_hooks),
          "| count calls for one forward:", len(counted))
    assert len(named_layer._forward_hooks) == 1 and len(counted) == 1

    direct_handle = named_layer.register_forward_hook(lambda m, args, out: direct.append(1))
    shape_handle = register_named_hook(
        named_layer, "shape", lambda m, args, out: out_shapes.append(tuple(out.shape)))
    counted.clear()
    named_layer(torch.ones(1, 4))
    print("with a second name and a direct hook, registered:", len(named_layer._forward_hooks),
          "| count calls:", len(counted), "| shapes:", out_shapes, "| direct calls:", len(direct))
    assert len(named_layer._forward_hooks) == 3
    assert len(counted) == 1 and out_shapes == [(1, 2)] and len(direct) == 1
    for h in (count_handle, shape_handle, direct_handle):
        h.remove()

# %% [markdown]
# ## Summary
#
# - Registering a hook returns a `RemovableHandle`. `handle.remove()` unregisters the hook, and
#   calling it twice is safe. `module._forward_hooks` and `tensor._backward_hooks` show what is
#   registered. Read them, but don't write to them in real code.
# - For a hook that you need for one piece of work, use `with module.register_forward_hook(fn):`.
#   Use `try`/`finally` when a single block does not fit. Both remove the hook even if an exception
#   is raised. A `handle.remove()` at the end of a function is skipped by any exception before it.
# - For many hooks at once, put the handles in a group and remove the group (`HookGroup`).
# - In notebooks, a cell that registers a hook adds another hook each time it runs. Remove the old
#   handle first, or register by name (`register_named_hook`).
# - To get a gradient without touching `x.grad`, use `torch.autograd.grad`. It still runs the hooks
#   registered on `x`, and it writes no `.grad` at all, also not on the leaves behind the loss;
#   `backward()` writes them, and on a non-leaf it needs `retain_grad()`, which stays on.
#
# Next, lesson 03 covers forward pre-hooks, which see a module's inputs before `forward` runs and can
# replace them.
