# %% [markdown]
# # Lesson 01 — Tensor hooks
#
# A tensor hook is a function that autograd calls with the gradient of one tensor during the
# backward pass. It can read that gradient, record it, or replace it.
#
# After this lesson you will be able to:
#
# - register a hook with `Tensor.register_hook` and say exactly when it fires and what it receives;
# - change the gradient that flows on by returning a new tensor, and chain several hooks;
# - tell what a hook does on a leaf tensor and on an intermediate (non-leaf) tensor;
# - stop a hook with the handle that `register_hook` returns;
# - avoid two traps: editing the gradient in place, and storing gradients without
#   `.detach().clone()`.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_01_tensor_hooks.py` (add `-k double_grad` for one exercise; plain `pytest`
# grades every lesson).

# %%
import warnings

import torch

from hooked.notebook import check, hint, try_it

print(torch.__version__)

# %% [markdown]
# ## What a tensor hook is
#
# `t.register_hook(fn)` attaches `fn` to the tensor `t`. During a backward pass, autograd calls
# `fn(grad)`, where `grad` is the gradient of the loss with respect to `t` (same shape as `t`).
# The hook returns either `None` (leave the gradient as it is) or a tensor (use this gradient
# instead). Only a tensor that requires grad can be hooked (shown further down).

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
calls = []


def show(grad):
    calls.append(grad.clone())
    print("hook called with", grad)


x.register_hook(show)
loss = (x * x).sum()  # d loss / dx = 2 * x
print("forward done, hook calls so far:", len(calls))
assert len(calls) == 0
loss.backward()
print("after backward, hook calls:", len(calls), "| x.grad =", x.grad)
assert len(calls) == 1
assert torch.equal(x.grad, torch.tensor([2.0, 4.0, 6.0]))

# %% [markdown]
# Nothing happens at `register_hook` time or during the forward pass: the hook runs inside
# `backward()`.
#
# ## When it fires: once per backward, with the summed gradient
#
# If a tensor is used several times in the graph, autograd adds up the gradient contributions of
# all its uses first, and then calls the hook **once** with that sum.

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
calls = []
x.register_hook(lambda grad: calls.append(grad.clone()))

loss = (2 * x).sum() + (3 * x).sum()  # x is used twice: contributions 2 and 3
loss.backward()
print("number of calls:", len(calls))
print("gradient the hook saw:", calls[0])
assert len(calls) == 1
assert torch.equal(calls[0], torch.full((3,), 5.0))

# %% [markdown]
# ## It fires before the gradient reaches `.grad`
#
# A *leaf* is a tensor with no `grad_fn`: autograd recorded no operation that made it. `x`
# here is a leaf, and so is every parameter of a model. For a leaf, the hook runs before autograd
# writes into `x.grad`. On the first backward `x.grad` is still `None` inside the hook; on a later
# backward (without zeroing) it still holds the old value, and the new gradient is added after
# the hook has run.

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
grad_attr_inside_hook = []


def peek(grad):
    grad_attr_inside_hook.append(None if x.grad is None else x.grad.clone())
    print("hook: incoming grad =", grad, "| x.grad right now =", x.grad)


x.register_hook(peek)
(2 * x).sum().backward()
print("after 1st backward, x.grad =", x.grad)
(3 * x).sum().backward()
print("after 2nd backward, x.grad =", x.grad)

assert x.is_leaf and x.grad_fn is None
assert all(p.is_leaf for p in torch.nn.Linear(3, 2).parameters())  # a model's parameters are leaves too
assert grad_attr_inside_hook[0] is None
assert torch.equal(grad_attr_inside_hook[1], torch.full((3,), 2.0))
assert torch.equal(x.grad, torch.full((3,), 5.0))

# %% [markdown]
# The picture below is one real backward pass through `x` (leaf) → `h = x * 2` → `loss = (h * h).sum()`.
# Each point was recorded by a hook at the moment it happened: the first two by a tensor hook on `h`
# and one on `x`, the third by `x.register_post_accumulate_grad_hook` (lesson 08), which autograd
# calls right after it has written `x.grad`. Autograd reaches `h` first, then `x`, and writes
# `x.grad` only after both tensor hooks have run.

# %%
import matplotlib.pyplot as plt

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
h = x * 2
events = []  # (event, the gradient it saw or wrote, x.grad at that moment)


def on_h(grad):
    events.append(("hook on h", grad.clone(), None if x.grad is None else x.grad.clone()))


def on_x(grad):
    events.append(("hook on x", grad.clone(), None if x.grad is None else x.grad.clone()))


def on_x_grad_written(tensor):  # receives x itself, once x.grad has been written
    events.append(("x.grad written", tensor.grad.clone(), tensor.grad.clone()))


h.register_hook(on_h)
x.register_hook(on_x)
x.register_post_accumulate_grad_hook(on_x_grad_written)
(h * h).sum().backward()  # d loss / dh = 2h = [4, 8, 12]; d loss / dx = 2 * (d loss / dh)

def as_text(t):
    return "None" if t is None else "[" + ", ".join(f"{v:g}" for v in t.tolist()) + "]"


for name, grad, x_grad in events:
    print(f"{name:15} gradient: {as_text(grad):13} | x.grad at that moment: {as_text(x_grad)}")
assert [name for name, _, _ in events] == ["hook on h", "hook on x", "x.grad written"]
assert events[0][2] is None and events[1][2] is None  # x.grad was still None inside both hooks
assert torch.equal(events[0][1], torch.tensor([4.0, 8.0, 12.0]))
assert torch.equal(events[1][1], torch.tensor([8.0, 16.0, 24.0]))
assert torch.equal(events[2][2], torch.tensor([8.0, 16.0, 24.0]))


fig, ax = plt.subplots(figsize=(7, 2.5))
steps = range(len(events))
ax.annotate("", xy=(len(events) - 0.5, 0), xytext=(-0.5, 0),
            arrowprops=dict(arrowstyle="->", color="0.5"), zorder=1)
for step, (name, grad, x_grad) in zip(steps, events):
    is_hook = name.startswith("hook")
    ax.scatter(step, 0, s=120, color="tab:blue" if is_hook else "tab:green", zorder=2)
    ax.annotate(f"{step + 1}. {name}", (step, 0), xytext=(0, 14), textcoords="offset points",
                ha="center", fontsize=11, fontweight="bold")
    detail = (f"grad seen: {as_text(grad)}\nx.grad: {as_text(x_grad)}" if is_hook
              else f"x.grad = {as_text(x_grad)}")
    ax.annotate(detail, (step, 0), xytext=(0, -16), textcoords="offset points",
                ha="center", va="top", fontsize=10)
ax.set_xlim(-0.6, len(events) - 0.4)
ax.set_ylim(-0.8, 0.6)
ax.axis("off")
ax.text(len(events) - 0.5, -0.75, "time →", ha="right", va="bottom", color="0.4")
ax.set_title("One backward pass, in the order autograd did it")
plt.tight_layout()
plt.show()

# %% [markdown]
# Hooks also fire under `torch.autograd.grad`, which returns gradients instead of writing them
# into `.grad`.

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
seen = []
x.register_hook(lambda grad: seen.append(grad.clone()))

(gx,) = torch.autograd.grad((x * x).sum(), x)
print("hook saw:", seen, "| autograd.grad returned:", gx, "| x.grad:", x.grad)
assert len(seen) == 1 and torch.equal(seen[0], gx)
assert x.grad is None

# %% [markdown]
# ## What the return value does
#
# If the hook returns a tensor, that tensor replaces the gradient: it is what flows further back,
# and for a leaf it is what lands in `.grad`. If the hook returns `None`, the gradient is
# unchanged.

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
x.register_hook(lambda grad: torch.tensor([7.0, 8.0, 9.0]))
(x * x).sum().backward()  # the real gradient would be [2, 4, 6]
print("returned a tensor -> x.grad =", x.grad)
assert torch.equal(x.grad, torch.tensor([7.0, 8.0, 9.0]))

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
x.register_hook(lambda grad: None)
(x * x).sum().backward()
print("returned None     -> x.grad =", x.grad)
assert torch.equal(x.grad, torch.tensor([2.0, 4.0, 6.0]))

# %% [markdown]
# ## Exercise 1: `double_grad` · easy · about 5 min
#
# Write the hook `double_grad(grad)`: it returns a **new** tensor equal to `2 * grad`.
#
# Trap: do not change `grad` in place (no `grad.mul_(2)`, no `grad *= 2`). The same gradient
# tensor can be shared with other parts of the graph; a later section shows what goes wrong.
# An expression such as `grad * 2` already builds a new tensor (the cell below shows it), and it
# keeps the gradient differentiable: do not `.detach()` the result or compute it from `grad.data`,
# which would break `create_graph=True` (the section "Recording gradients" shows why).
#
# Check: run `check(double_grad)` below, or `pytest tests/test_01_tensor_hooks.py -k double_grad`.

# %%
g = torch.tensor([1.0, 2.0, 3.0])
doubled = g * 2
print("g * 2 =", doubled, "| its own memory:", doubled.data_ptr() != g.data_ptr(), "| g after:", g)
assert doubled.data_ptr() != g.data_ptr() and torch.equal(g, torch.tensor([1.0, 2.0, 3.0]))
for dtype in (torch.float32, torch.float64):  # same shape and dtype as the tensor it came from
    g_typed = torch.ones(2, 3, dtype=dtype)
    print(f"{dtype}: (g * 2).shape = {tuple((g_typed * 2).shape)}, (g * 2).dtype = {(g_typed * 2).dtype}")
    assert (g_typed * 2).shape == g_typed.shape and (g_typed * 2).dtype == dtype

# %% tags=["exercise"]
# Exercise: double_grad — write your code in this cell.
import torch


def double_grad(grad):
    """Tensor hook that doubles the gradient.

    Receives `grad`, a tensor (the gradient autograd passes to a tensor hook).
    Returns a new tensor with the same shape and dtype, equal to `2 * grad`.
    Must not change `grad` in place.
    Under `create_graph=True` the result stays differentiable: it is computed from `grad`
    itself, not from `grad.detach()` or `grad.data`.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("double_grad is not written yet")


# %%
check(double_grad)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A tensor hook replaces the gradient with the tensor it returns. So `double_grad` only has
# to build a tensor worth twice `grad` and return it. Build a *new* tensor: the `grad` you receive
# may be shared with other parts of the graph, so it must stay as it was.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# Arithmetic operators on tensors, such as `*` and `+`, make a new tensor with the same shape
# and dtype. Their in-place forms (`mul_`, `add_`, `*=`, `+=`) write into the tensor they are
# called on: that is the trap this exercise warns about.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# The whole body is one `return` line: `grad` multiplied by the number `2`, written with the
# `*` operator (not `*=`, not `mul_`). Nothing needs registering or storing.
#
# </details>

# %% [markdown]
# Once `double_grad` is written, this cell shows it at work (until then it prints "Not done yet"):
# the gradient of `x * x` is `2 * x`; with `double_grad` registered, `x.grad` becomes `4 * x`.

# %%
with try_it():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.register_hook(double_grad)
    (x * x).sum().backward()
    print("x.grad =", x.grad)
    assert torch.equal(x.grad, torch.tensor([4.0, 8.0, 12.0]))

# %% [markdown]
# ## Several hooks chain, in registration order
#
# With several hooks on one tensor, each receives what the previous one returned (or the
# unchanged gradient if the previous one returned `None`). The order is the order of
# registration, so it matters when the hooks do not commute.

# %%
log = []


def times_ten(grad):
    log.append(("times_ten", grad.tolist()))
    return grad * 10


def only_look(grad):
    log.append(("only_look", grad.tolist()))  # returns None


def plus_one(grad):
    log.append(("plus_one", grad.tolist()))
    return grad + 1


x = torch.tensor([1.0, 1.0], requires_grad=True)
for hook in (times_ten, only_look, plus_one):
    x.register_hook(hook)
x.sum().backward()  # the true gradient is [1, 1]
print("order times_ten, only_look, plus_one:", log, "-> x.grad =", x.grad)
assert log == [("times_ten", [1.0, 1.0]), ("only_look", [10.0, 10.0]), ("plus_one", [10.0, 10.0])]
assert torch.equal(x.grad, torch.tensor([11.0, 11.0]))  # 1 * 10 + 1

log.clear()
x = torch.tensor([1.0, 1.0], requires_grad=True)
for hook in (plus_one, times_ten):
    x.register_hook(hook)
x.sum().backward()
print("order plus_one, times_ten:", log, "-> x.grad =", x.grad)
assert log == [("plus_one", [1.0, 1.0]), ("times_ten", [2.0, 2.0])]
assert torch.equal(x.grad, torch.tensor([20.0, 20.0]))  # (1 + 1) * 10

# %% [markdown]
# ## The returned tensor must keep the shape and dtype
#
# A replacement gradient with another shape or dtype is rejected during `backward()`, with the
# hook's name in the message (a `lambda` is named `<lambda>`).

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
x.register_hook(lambda grad: grad.sum())  # shape [] instead of [3]
try:
    (x * x).sum().backward()
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}")
    assert "hook '<lambda>' has changed the size of value" in str(e)


def to_double(grad):
    return grad.double()  # float64 instead of float32


x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
x.register_hook(to_double)
try:
    (x * x).sum().backward()
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}")
    assert "hook 'to_double' has changed the type of value" in str(e)

# %% [markdown]
# ## Exercise 2: `make_scale_hook` · easy · about 5 min
#
# Write `make_scale_hook(factor)`. It returns a hook: a function that takes `grad` and returns
# `grad * factor` as a new tensor. This is a function that builds and returns another function;
# define the hook as a nested `def` inside `make_scale_hook` and return it (do not call it).
#
# Traps: hooks that share one factor. After `h2 = make_scale_hook(2)` and
# `h3 = make_scale_hook(3)`, `h2` must still multiply by 2: keep `factor` in the nested function
# (its closure), not in a global variable or a class attribute. And, as before, no in-place
# change of `grad`, and no `.detach()` or `.data`.
#
# Check: run `check(make_scale_hook)` below, or
# `pytest tests/test_01_tensor_hooks.py -k make_scale_hook`.

# %% tags=["exercise"]
# Exercise: make_scale_hook — write your code in this cell.
import torch


def make_scale_hook(factor):
    """Build a tensor hook that scales the gradient by `factor`.

    Receives `factor`, a Python number.
    Returns a function `hook(grad)` that returns a new tensor equal to `grad * factor`,
    with the same shape and dtype as `grad`.
    Each returned hook keeps its own `factor`: later calls of make_scale_hook do not change it.
    The hook must not change `grad` in place.
    Under `create_graph=True` its result stays differentiable: it is computed from `grad`
    itself, not from `grad.detach()` or `grad.data`.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("make_scale_hook is not written yet")


# %%
check(make_scale_hook)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# `make_scale_hook` does not touch any gradient itself: it builds a hook and hands it back.
# The hook built for factor 2 must still multiply by 2 after another call has built a hook for
# factor 3, so each hook has to carry its own `factor`. A function defined inside another
# function does exactly that: it remembers the variables of the call that created it (a closure).
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# Define `def hook(grad): ...` *inside* `make_scale_hook`. Its body can read `factor`, and
# returns a new tensor made with `*`, as in `double_grad`. Then return the function object
# itself, `hook`, without calling it (no parentheses).
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def make_scale_hook(factor):
#     def hook(grad):
#         return ...   # grad times factor, as a new tensor
#     return ...       # the nested function, not a call of it
# ```
#
# </details>

# %% [markdown]
# Once `make_scale_hook` is written, the second part of this cell shows it at work on an
# intermediate tensor: `h = 3 * x`, so `x.grad` would be `[3, 3]` (the first part shows it); a scale
# hook with factor `-1` on `h` flips the sign of everything that flows back through `h`.

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
(3 * x).sum().backward()
print("without a hook, x.grad =", x.grad)
assert torch.equal(x.grad, torch.tensor([3.0, 3.0]))

with try_it():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    h = 3 * x
    h.register_hook(make_scale_hook(-1.0))
    h.sum().backward()
    print("x.grad =", x.grad)
    assert torch.equal(x.grad, torch.tensor([-3.0, -3.0]))

# %% [markdown]
# ## Only tensors that require grad can be hooked
#
# A tensor with `requires_grad=False` gets no gradient, so there is nothing to hook; registering
# fails at once.

# %%
t = torch.ones(3)  # requires_grad=False
try:
    t.register_hook(lambda grad: grad)
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}")
    assert "cannot register a hook on a tensor that doesn't require gradient" in str(e)

# %% [markdown]
# ## Leaf and non-leaf tensors
#
# On both kinds of tensor the hook receives the gradient of the loss with respect to that tensor.
# What differs is where a returned tensor goes and what `.grad` holds:
#
# | | leaf (no `grad_fn`, e.g. a parameter) | non-leaf (made by an operation autograd recorded, has a `grad_fn`) |
# |---|---|---|
# | a returned tensor | is stored in `.grad` | flows further back and changes the leaves' `.grad` |
# | `.grad` after backward | filled | `None`, unless you call `retain_grad()` |
#
# A tensor computed from others is a leaf too when autograd recorded nothing: under
# `torch.no_grad()`, or when none of its inputs requires grad. It has no `grad_fn` and does not
# require grad, so no hook can be registered on it (the section above).

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
with torch.no_grad():
    under_no_grad = 2 * x
from_plain_inputs = 2 * torch.ones(3)
for name, tensor in (("2 * x under no_grad()", under_no_grad), ("2 * torch.ones(3)", from_plain_inputs)):
    print(f"{name}: is_leaf = {tensor.is_leaf} | grad_fn = {tensor.grad_fn} | requires_grad = {tensor.requires_grad}")
    assert tensor.is_leaf and tensor.grad_fn is None and not tensor.requires_grad
    try:
        tensor.register_hook(lambda grad: grad)
        raise AssertionError("the hook was registered")
    except RuntimeError as error:
        assert str(error) == "cannot register a hook on a tensor that doesn't require gradient"

# %% [markdown]
# Below, `h = 2 * x` is a non-leaf. The hook on `h` halves its gradient, and `x.grad` shows the
# halved value. `h.grad` is `None` (PyTorch warns when you read it).

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
h = 2 * x
seen = []


def halve(grad):
    seen.append(grad.clone())
    return grad * 0.5


h.register_hook(halve)
(h * h).sum().backward()  # d/dh = 2h = [4, 8, 12]; d/dx = 2 * (d/dh)
print("x.is_leaf =", x.is_leaf, "| h.is_leaf =", h.is_leaf)
print("h.grad_fn =", type(h.grad_fn).__name__)
assert x.is_leaf and x.grad_fn is None and not h.is_leaf and h.grad_fn is not None
print("hook on h saw:", seen[0])
print("x.grad =", x.grad, "(would be [8, 16, 24] without the hook)")
assert torch.equal(seen[0], torch.tensor([4.0, 8.0, 12.0]))
assert torch.equal(x.grad, torch.tensor([4.0, 8.0, 12.0]))

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    h_grad = h.grad
print("h.grad =", h_grad)
print("warning:", str(caught[0].message).split(". ")[0])
assert h_grad is None
assert "not a leaf Tensor" in str(caught[0].message)

# %% [markdown]
# With `retain_grad()`, the non-leaf keeps a `.grad`. It holds the gradient *after* the hook's
# change (`[2, 4, 6]`, not `[4, 8, 12]`), whether `retain_grad()` is called before or after the hook
# is registered.

# %%
for retain_first in (True, False):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = 2 * x
    if retain_first:
        h.retain_grad()
    h.register_hook(lambda grad: grad * 0.5)
    if not retain_first:
        h.retain_grad()
    (h * h).sum().backward()
    order = "before" if retain_first else "after"
    print(f"retain_grad() {order:6} the hook: h.grad = {h.grad} | x.grad = {x.grad}")
    assert torch.equal(h.grad, torch.tensor([2.0, 4.0, 6.0]))
    assert torch.equal(x.grad, torch.tensor([4.0, 8.0, 12.0]))

# %% [markdown]
# ## The handle: stopping a hook
#
# `register_hook` returns a *handle*, a `torch.utils.hooks.RemovableHandle`. Calling
# `handle.remove()` unregisters the hook; later backward passes no longer call it. Lesson 02
# covers handles in depth.

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
count = [0]


def count_calls(grad):
    count[0] += 1


handle = x.register_hook(count_calls)
print(type(handle))
assert isinstance(handle, torch.utils.hooks.RemovableHandle)

x.sum().backward()
print("calls after 1st backward:", count[0])
handle.remove()
x.sum().backward()
print("calls after remove and 2nd backward:", count[0])
assert count[0] == 1

# %% [markdown]
# ## Trap: changing the gradient in place
#
# The tensor your hook receives is not necessarily private to it. Two real cases:
#
# 1. The backward of `sum()` hands out an *expanded* gradient: one stored number seen as many
#    elements (stride `0`). An in-place write to it is refused.

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = 2 * x
strides = []


def scale_in_place(grad):
    strides.append(grad.stride())
    print("grad =", grad, "| stride =", grad.stride())
    grad.mul_(10)  # wrong: in place


y.register_hook(scale_in_place)
try:
    y.sum().backward()
    raise AssertionError("expected a RuntimeError")
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}")
    assert "more than one element of the written-to tensor refers to a single memory location" in str(e)
assert strides == [(0,)]

# %% [markdown]
# 2. The backward of `a + b` passes the **same** gradient tensor to `a` and to `b`. An in-place
#    edit in a hook on `a` silently changes `b.grad` too. Returning a new tensor does not.

# %%
def times_100_in_place(grad):
    grad.mul_(100)  # wrong: in place


def times_100(grad):
    return grad * 100  # right: a new tensor


w = torch.tensor([1.0, 2.0])

a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([3.0, 4.0], requires_grad=True)
addresses = {}
a.register_hook(lambda grad: addresses.update(a=grad.data_ptr()))
b.register_hook(lambda grad: addresses.update(b=grad.data_ptr()))
((a + b) * w).sum().backward()
print("a and b receive the same gradient memory:", addresses["a"] == addresses["b"])
assert addresses["a"] == addresses["b"]

for hook in (times_100_in_place, times_100):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    a.register_hook(hook)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ((a + b) * w).sum().backward()  # true gradients: a.grad = b.grad = w = [1, 2]
    print(f"{hook.__name__:>18}: a.grad = {a.grad}, b.grad = {b.grad} | warnings: {len(caught)}")
    assert not caught  # silently: no error, no warning
    assert torch.equal(a.grad, torch.tensor([100.0, 200.0]))
    if hook is times_100_in_place:
        assert torch.equal(b.grad, torch.tensor([100.0, 200.0]))  # corrupted
    else:
        assert torch.equal(b.grad, torch.tensor([1.0, 2.0]))  # correct

# %% [markdown]
# ## Exercise 3: `make_clip_hook` · easy · about 10 min
#
# Write `make_clip_hook(max_norm)`. It returns a hook that limits the size of the gradient:
#
# - compute the L2 norm of the gradient over all its elements (`grad.norm()`);
# - if that norm is larger than `max_norm`, return the gradient rescaled so that its norm is
#   exactly `max_norm` (multiply by `max_norm / norm`; the direction stays the same);
# - otherwise return the gradient unchanged.
#
# Traps: a zero gradient has norm 0 and must stay zero. Do not divide by the norm unless you are
# rescaling: dividing by a zero norm gives `nan` (the cell below shows it). No in-place change
# of `grad` (no `grad.mul_`, no `grad *= ...`). And, as in `make_scale_hook`, each hook keeps its own
# `max_norm` in its closure.
#
# Check: run `check(make_clip_hook)` below, or
# `pytest tests/test_01_tensor_hooks.py -k make_clip_hook`.

# %%
zero = torch.zeros(3)
print("zero * (1.0 / zero.norm()) =", zero * (1.0 / zero.norm()))
assert torch.isnan(zero * (1.0 / zero.norm())).all()

# %% tags=["exercise"]
# Exercise: make_clip_hook — write your code in this cell.
import torch


def make_clip_hook(max_norm):
    """Build a tensor hook that clips the gradient's L2 norm to `max_norm`.

    Receives `max_norm`, a positive Python number.
    Returns a function `hook(grad)`. Let `norm` be the L2 norm of `grad` over all its elements.
    If `norm > max_norm`, the hook returns a new tensor `grad * (max_norm / norm)`, whose norm
    is `max_norm`. Otherwise it returns `grad` unchanged (a zero gradient stays zero).
    The result has the same shape and dtype as `grad`. The hook must not change `grad` in place.
    Each returned hook keeps its own `max_norm`: later calls of make_clip_hook do not change it.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("make_clip_hook is not written yet")


# %%
check(make_clip_hook)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Measure the size of the whole gradient with its L2 norm. Only when that norm is larger than
# `max_norm`, shrink the gradient: multiplying by `max_norm / norm` keeps its direction and makes its
# norm exactly `max_norm`. Otherwise hand the gradient back as it is. Divide only on the shrinking
# path: a zero gradient never gets there, so it is never divided by zero.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `grad.norm()` is the L2 norm over all elements, a 0-dimensional tensor that you can compare
# with a Python number in an `if`. `grad * (max_norm / norm)` is a new tensor with the same shape
# and dtype. As in `make_scale_hook`, the hook is a nested function that remembers `max_norm`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def make_clip_hook(max_norm):
#     def hook(grad):
#         norm = ...       # the L2 norm of grad
#         if ...:          # only when the gradient is too large
#             return ...   # grad rescaled to norm max_norm, a new tensor
#         return grad
#     return hook
# ```
#
# </details>

# %% [markdown]
# Clipping the gradient of a leaf. With `loss = (w * x).sum()` the gradient of `x` is
# `w = [3, 4]`, whose norm is 5 (the first part of the cell shows it). Once `make_clip_hook` is
# written, the second part shows it at work: with `max_norm=1` the gradient becomes `[0.6, 0.8]`;
# with `max_norm=10` it is left alone.

# %%
w = torch.tensor([3.0, 4.0])
x = torch.tensor([1.0, 1.0], requires_grad=True)
(w * x).sum().backward()
print("without a hook, x.grad =", x.grad, "| norm:", x.grad.norm())
assert torch.equal(x.grad, w) and x.grad.norm() == 5.0
assert x.grad.norm().dim() == 0 and bool(x.grad.norm() > 1)  # a 0-dim tensor, comparable with a number

with try_it():
    for max_norm, expected in ((1.0, torch.tensor([0.6, 0.8])), (10.0, w)):
        x = torch.tensor([1.0, 1.0], requires_grad=True)
        x.register_hook(make_clip_hook(max_norm))
        (w * x).sum().backward()
        print(f"max_norm={max_norm}: x.grad = {x.grad}, norm = {x.grad.norm():.4f}")
        assert torch.allclose(x.grad, expected)

# %% [markdown]
# ## Recording gradients: two more traps
#
# A common use of a hook is to save gradients for later inspection. Two things go wrong if you
# append `grad` as it is.
#
# **The gradient can carry a graph.** Under `create_graph=True` (used for higher-order
# derivatives), the gradient passed to the hook itself requires grad and has a `grad_fn`. Storing
# it keeps that graph alive: below, the stored gradient `3 * x**2` can still be differentiated
# back to `x`. `.detach()` drops the graph.

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
stored = []
x.register_hook(lambda grad: stored.append(grad))
torch.autograd.grad((x**3).sum(), x, create_graph=True)
print("stored:", stored[0], "| requires_grad:", stored[0].requires_grad)
(second,) = torch.autograd.grad(stored[0].sum(), x)  # d/dx of sum(3 * x**2) = 6 * x
print("the graph is still there: d/dx of the stored gradient =", second)
print("detached:", stored[0].detach(), "| requires_grad:", stored[0].detach().requires_grad)
assert stored[0].requires_grad and stored[0].grad_fn is not None
assert torch.equal(second, torch.tensor([6.0, 12.0]))
assert not stored[0].detach().requires_grad and stored[0].detach().grad_fn is None
assert stored[0].detach().data_ptr() == stored[0].data_ptr()  # detach() shares the memory

# %% [markdown]
# The same graph is why a hook that *returns* a gradient must build it from `grad` itself. Under
# `create_graph=True` the returned tensor is the gradient that `autograd.grad` hands back; if the
# hook used `grad.detach()` or `grad.data`, the graph is gone and a second derivative fails. With
# `grad * 2` it works: `g = 2 * 3x² = 6x²`, and differentiating `g.sum()` gives `12x`, doubled once
# more (`24x`) because the hook on `x` fires again in the second pass.

# %%
for name, returned in (("grad * 2", lambda grad: grad * 2),
                       ("grad.detach() * 2", lambda grad: grad.detach() * 2),
                       ("grad.data * 2", lambda grad: grad.data * 2)):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    fired = []
    x.register_hook(lambda grad, returned=returned: fired.append(1) or returned(grad))
    (g,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
    assert torch.equal(g, torch.tensor([6.0, 24.0]))
    try:
        (second,) = torch.autograd.grad(g.sum(), x)
        print(f"{name:18} g = {g.detach()} | second derivative = {second} | hook calls: {len(fired)}")
        assert name == "grad * 2" and torch.equal(second, torch.tensor([24.0, 48.0])) and len(fired) == 2
    except RuntimeError as e:
        print(f"{name:18} g.requires_grad = {g.requires_grad} | RuntimeError: {e}")
        assert name != "grad * 2" and "does not require grad" in str(e)

# %% [markdown]
# **`.detach()` alone is not enough.** `detach()` returns a tensor that shares memory with the
# gradient. On the first backward, PyTorch may store that very gradient memory as the leaf's
# `.grad`; the next backward then adds into `.grad` in place, and your stored copy changes with
# it. Below, the first recorded gradient should stay `[2, 2, 2]`, but after the second backward it
# reads `[5, 5, 5]`.

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
recorded = []
x.register_hook(lambda grad: recorded.append(grad.detach()))

(2 * x).sum().backward()
print("after 1st backward: recorded[0] =", recorded[0])
print("recorded[0] shares memory with x.grad:", recorded[0].data_ptr() == x.grad.data_ptr())
assert recorded[0].data_ptr() == x.grad.data_ptr()
(3 * x).sum().backward()  # no zero_grad: x.grad accumulates to 5
print("after 2nd backward: recorded =", recorded, "| x.grad =", x.grad)
assert torch.equal(recorded[0], torch.full((3,), 5.0))  # corrupted: should be 2

# %% [markdown]
# The fix is `.detach().clone()`: a copy in its own memory, with no graph.

# %%
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
recorded = []
x.register_hook(lambda grad: recorded.append(grad.detach().clone()))

(2 * x).sum().backward()
print("recorded[0] shares memory with x.grad:", recorded[0].data_ptr() == x.grad.data_ptr())
assert recorded[0].data_ptr() != x.grad.data_ptr()
(3 * x).sum().backward()
print("recorded =", recorded, "| x.grad =", x.grad)
assert not any(r.requires_grad for r in recorded)
assert torch.equal(recorded[0], torch.full((3,), 2.0))
assert torch.equal(recorded[1], torch.full((3,), 3.0))

# %% [markdown]
# ## Exercise 4: `record_grads` · easy · about 10 min
#
# Write `record_grads(tensor, store)`. It registers a hook on `tensor` that appends each incoming
# gradient to the list `store`, and returns the handle from `register_hook`.
#
# - Append a copy that is detached (no graph, even under `create_graph=True`) and cloned (safe
#   from later in-place accumulation): `grad.detach().clone()`.
# - The hook leaves the gradient unchanged: it returns `None`.
# - Removing the returned handle stops the recording.
# - Each call registers its own hook: a second call on the same tensor, with another list, starts
#   a second recording, and the first goes on.
#
# Traps: storing `grad` itself or `grad.detach()` (the two demonstrations above).
#
# Check: run `check(record_grads)` below, or `pytest tests/test_01_tensor_hooks.py -k record_grads`.

# %% tags=["exercise"]
# Exercise: record_grads — write your code in this cell.
import torch


def record_grads(tensor, store):
    """Record every gradient that reaches `tensor`.

    Receives `tensor`, a tensor that requires grad, and `store`, a list.
    Registers one hook on `tensor`. Each time the hook fires it appends to `store` a detached
    clone of the incoming gradient (no graph attached, even under `create_graph=True`; not
    changed by later backward passes), and leaves the gradient unchanged (returns None).
    Returns the `RemovableHandle` from `register_hook`; after `handle.remove()` nothing more
    is appended. Must not modify the gradient or `tensor`.
    Each call registers its own hook: a recording that an earlier call started on the same tensor
    goes on.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("record_grads is not written yet")


# %%
check(record_grads)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# The hook only looks: it keeps a private copy of each gradient in `store` and changes nothing.
# The copy must neither carry autograd's graph nor share memory with a tensor that autograd may
# still add into. `record_grads` registers that hook and returns the handle, so that the caller
# can stop the recording.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `tensor.register_hook(fn)` returns a `RemovableHandle`. `grad.detach()` drops the graph and
# `.clone()` copies the memory; you need both. A nested `def hook(grad):` can append to `store`
# (a closure), and a hook that has no `return` statement returns `None`, which leaves the
# gradient unchanged.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def record_grads(tensor, store):
#     def hook(grad):
#         store.append(...)   # a copy of grad: no graph, its own memory
#         # no return: the gradient goes on unchanged
#     return ...              # what registering hook on tensor gives back
# ```
#
# </details>

# %% [markdown]
# Once `record_grads` is written, this cell shows it at work: two backward passes are recorded
# separately and correctly, the gradient itself is unchanged, and after `handle.remove()` a third
# backward is not recorded.

# %%
with try_it():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    store = []
    handle = record_grads(x, store)
    (2 * x).sum().backward()
    (3 * x).sum().backward()
    print("store =", store, "| x.grad =", x.grad)
    handle.remove()
    (4 * x).sum().backward()
    print("after remove: len(store) =", len(store), "| x.grad =", x.grad)
    assert len(store) == 2
    assert torch.equal(store[0], torch.full((3,), 2.0))
    assert torch.equal(store[1], torch.full((3,), 3.0))
    assert torch.equal(x.grad, torch.full((3,), 9.0))

# %% [markdown]
# ## Summary
#
# | API | receives | returns | fires when |
# |---|---|---|---|
# | `t.register_hook(fn)` | `fn(grad)`: the gradient of `t`, summed over all uses of `t` | `None` (keep `grad`) or a new tensor of the same shape and dtype (replace it) | once per backward pass (`backward()` or `torch.autograd.grad`), before the gradient reaches a leaf's `.grad` |
# | `handle = t.register_hook(fn)` | — | a `torch.utils.hooks.RemovableHandle` | `handle.remove()` stops later calls |
#
# Rules of thumb: return a new tensor instead of editing `grad` in place, computed from `grad`
# itself (not `grad.detach()` or `grad.data`, so that `create_graph=True` still works); store
# `grad.detach().clone()`; several hooks on one tensor run in registration order; a returned
# tensor on a non-leaf changes the gradients of everything behind it.
#
# Next, lesson 02 goes deeper into removing hooks with their handles.
