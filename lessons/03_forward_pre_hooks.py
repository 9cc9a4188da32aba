# %% [markdown]
# # Lesson 03 — Forward pre-hooks
#
# A forward pre-hook is a function that a module calls with its inputs just before its `forward`
# runs. It can read the inputs, or hand `forward` different ones. It is the place for work that
# belongs to the inputs of one layer: normalizing them, adding noise while training, or reshaping
# them when they arrive in the wrong form.
#
# After this lesson you will be able to:
#
# - register a hook with `register_forward_pre_hook` and say when it fires and what it receives;
# - replace the positional inputs by returning a tuple, and know what happens to a value that is not a tuple;
# - see and change keyword arguments with `with_kwargs=True`, and put a hook first with `prepend=True`;
# - write pre-hooks for preprocessing, noise augmentation and conditional reshaping;
# - avoid the traps: changing the caller's tensor in place, noise at evaluation time, noise that a
#   seeded generator cannot reproduce, statistics along the wrong dimension, and `view()` on
#   non-contiguous tensors.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Stuck? `hint(add_input_noise)` shows the
# next of three hints for an exercise. Or, from the repository root, run
# `pytest tests/test_03_forward_pre_hooks.py` (add `-k add_input_noise` for one exercise; plain
# `pytest` grades every lesson).

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from hooked.notebook import check, hint, try_it

# %% [markdown]
# ## When a pre-hook fires and what it receives
#
# `module.register_forward_pre_hook(hook)` registers `hook(module, args)`. When you call
# `module(...)`, PyTorch first calls each pre-hook and then `forward`. `args` is a tuple of the
# positional arguments of the call. Below, a small module takes a tensor and a keyword argument
# `scale`; both the hook and `forward` note when they run.

# %%
events = []


class Scale(nn.Module):
    """Multiplies its input by `scale`."""

    def forward(self, x, scale=1.0):
        events.append("forward")
        return x * scale


def show_inputs(module, args):
    events.append("pre-hook")
    assert module is scale_layer and type(args) is tuple
    print("the pre-hook got module", type(module).__name__, "and args of type", type(args).__name__,
          "with", len(args), "element(s):", args)


scale_layer = Scale()
handle = scale_layer.register_forward_pre_hook(show_inputs)
out = scale_layer(torch.tensor([1.0, 2.0]), scale=3.0)
print("order:", events, "| output:", out)
assert events == ["pre-hook", "forward"]
assert torch.equal(out, torch.tensor([3.0, 6.0]))
handle.remove()

# %% [markdown]
# `args` holds only the tensor: the keyword argument `scale=3.0` is not in it. A plain pre-hook
# cannot see keyword arguments at all (more on that below).
#
# A pre-hook fires on every call `module(...)`, also under `torch.no_grad()` and in `eval()` mode.
# It does **not** fire when code calls `module.forward(...)` directly, which skips the machinery
# that runs hooks.

# %%
events.clear()
calls = []
with scale_layer.register_forward_pre_hook(lambda module, args: calls.append("hook")):
    with torch.no_grad():
        scale_layer(torch.ones(2))
    scale_layer.eval()
    scale_layer(torch.ones(2))
    scale_layer.train()
    print("hook calls after a call under no_grad and one in eval mode:", len(calls))
    assert len(calls) == 2
    scale_layer.forward(torch.ones(2))
    print("hook calls after also calling forward() directly:", len(calls), "| forward ran", len(events), "times")
    assert len(calls) == 2 and len(events) == 3

# %% [markdown]
# ## What a return value does
#
# - `None` (or no `return`): `forward` gets the inputs unchanged.
# - A tuple: it **replaces** the positional arguments; `forward` is called as `forward(*returned)`.
# - Anything else, a list included: PyTorch wraps it into a 1-tuple, so `forward` gets it as its
#   only positional argument. Returning a tensor for a one-input module therefore works.

# %%
linear = nn.Linear(3, 2)
with torch.no_grad():
    linear.weight.copy_(torch.eye(2, 3))
    linear.bias.zero_()
x = torch.tensor([[1.0, 2.0, 3.0]])
print("no hook:                    ", linear(x))

with linear.register_forward_pre_hook(lambda module, args: None):
    print("hook returns None:          ", linear(x))
    assert torch.equal(linear(x), torch.tensor([[1.0, 2.0]]))
with linear.register_forward_pre_hook(lambda module, args: (args[0] * 10,)):
    print("hook returns a tuple:       ", linear(x))
    assert torch.equal(linear(x), torch.tensor([[10.0, 20.0]]))
with linear.register_forward_pre_hook(lambda module, args: args[0] * 10):
    print("hook returns a bare tensor: ", linear(x))
    assert torch.equal(linear(x), torch.tensor([[10.0, 20.0]]))

# %% [markdown]
# **Trap: a returned tuple replaces all positional arguments.** The wrapping rule bites in two
# ways. A hook that returns only the new first input drops the others: below, `forward(x, y)` then
# misses `y`; a list of all the arguments does the same, since a list is not a tuple. And for a
# module whose single argument *is* a tuple, returning that tuple unwrapped spreads it over several
# arguments.

# %%
class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class AddPair(nn.Module):
    def forward(self, pair):
        a, b = pair
        return a + b


a, b = torch.ones(2), torch.full((2,), 5.0)
add = Add()
add.register_forward_pre_hook(lambda module, args: args[0] * 2)  # returns only the new x
try:
    add(a, b)
except TypeError as error:
    dropped_error = str(error)
print("TypeError:", dropped_error)
assert "missing 1 required positional argument: 'y'" in dropped_error

add = Add()
add.register_forward_pre_hook(lambda module, args: [args[0] * 2, *args[1:]])  # a list, not a tuple
try:
    add(a, b)
except TypeError as error:
    list_error = str(error)
print("TypeError:", list_error)
assert "missing 1 required positional argument: 'y'" in list_error

add_pair = AddPair()
add_pair.register_forward_pre_hook(lambda module, args: (args[0][0] * 2, args[0][1]))  # the pair, unwrapped
try:
    add_pair((a, b))
except TypeError as error:
    spread_error = str(error)
print("TypeError:", spread_error)
assert "takes 2 positional arguments but 3 were given" in spread_error

# The fixes: keep the other arguments, and wrap a tuple argument in a 1-tuple.
add = Add()
add.register_forward_pre_hook(lambda module, args: (args[0] * 2, *args[1:]))
add_pair = AddPair()
add_pair.register_forward_pre_hook(lambda module, args: ((args[0][0] * 2, args[0][1]),))
print("fixed:", add(a, b), add_pair((a, b)))
assert torch.equal(add(a, b), torch.full((2,), 7.0)) and torch.equal(add_pair((a, b)), torch.full((2,), 7.0))

# %% [markdown]
# ## Keyword arguments: `with_kwargs=True`
#
# Keyword arguments go to `forward` past a plain pre-hook: it neither sees nor changes them. With
# `register_forward_pre_hook(hook, with_kwargs=True)` the hook is called as
# `hook(module, args, kwargs)`, where `kwargs` is a dict, and it must return either `None` or a
# pair `(new_args, new_kwargs)`.

# %%
seen = []
scale_layer = Scale()
with scale_layer.register_forward_pre_hook(lambda module, args: seen.append(len(args))):
    scale_layer(torch.ones(2), scale=3.0)
print("a plain pre-hook saw", seen[0], "positional argument(s), and nothing of scale=3.0")
assert seen == [1]


def halve_scale(module, args, kwargs):
    print("  with_kwargs hook: args has", len(args), "element(s), kwargs =", kwargs, "of type", type(kwargs).__name__)
    assert type(kwargs) is dict and kwargs == {"scale": 3.0} and len(args) == 1
    return args, {**kwargs, "scale": kwargs.get("scale", 1.0) / 2}


with scale_layer.register_forward_pre_hook(halve_scale, with_kwargs=True):
    out = scale_layer(torch.ones(2), scale=3.0)
print("output with scale=3.0 halved by the hook:", out)
assert torch.equal(out, torch.full((2,), 1.5))

# %% [markdown]
# **Trap: with `with_kwargs=True`, returning only the arguments is an error.** The wrapping rule
# does not apply here. PyTorch checks only that the return is `None` or a tuple of two elements;
# anything else raises a `RuntimeError` at once. Any tuple of two elements passes that check: PyTorch
# unpacks it as `new_args, new_kwargs` and calls `forward(*new_args, **new_kwargs)`, so a wrong pair
# is caught there if at all. Below: returning only `args` when the call had one positional argument
# (a tuple of one element: `RuntimeError`), the same for a call with two (a tuple of two elements,
# taken for the pair: `TypeError`), the pair in the wrong order (`TypeError`), and the tensor
# `args[0]` in place of the tuple `args`: `forward(*x)` spreads the tensor's elements over the
# arguments, and no error is raised at all.

# %%
with scale_layer.register_forward_pre_hook(lambda module, args, kwargs: args, with_kwargs=True):
    try:
        scale_layer(torch.ones(2), scale=3.0)
    except RuntimeError as error:
        pair_error = str(error)
print("only args, one positional argument -> RuntimeError:", pair_error)
assert pair_error.startswith("forward pre-hook must return None or a tuple of (new_args, new_kwargs)")

add = Add()
with add.register_forward_pre_hook(lambda module, args, kwargs: args, with_kwargs=True):
    try:
        add(a, b)  # args == (a, b): taken as new_args = a, new_kwargs = b
    except TypeError as error:
        two_args_error = str(error)
print("only args, two positional arguments -> TypeError:", two_args_error)
assert two_args_error.endswith("Add.forward() argument after ** must be a mapping, not Tensor")

with add.register_forward_pre_hook(lambda module, args, kwargs: (kwargs, args), with_kwargs=True):
    try:
        add(a, b)
    except TypeError as error:
        swapped_error = str(error)
print("(kwargs, args), the wrong order -> TypeError:", swapped_error)
assert swapped_error.endswith("Add.forward() argument after ** must be a mapping, not tuple")

with scale_layer.register_forward_pre_hook(lambda module, args, kwargs: (args[0], kwargs), with_kwargs=True):
    spread = scale_layer(torch.tensor([2.0, 3.0]))  # forward(tensor(2.), tensor(3.)): x = 2, scale = 3
print("(args[0], kwargs) on x = [2, 3] -> no error, output", spread, "of shape", tuple(spread.shape))
assert spread.shape == () and spread.item() == 6.0

# %% [markdown]
# ## Several pre-hooks: order and `prepend=True`
#
# Pre-hooks run in the order they were registered, and each one receives what the one before it
# returned. `prepend=True` puts a hook in front of those already registered.

# %%
order = []


def named_hook(name, factor):
    def hook(module, args):
        order.append(name)
        return args[0] * factor
    return hook


layer = nn.Identity()
layer.register_forward_pre_hook(named_hook("first", 2))
layer.register_forward_pre_hook(named_hook("second", 10))
print("2 then 10:", layer(torch.ones(1)), order)
assert order == ["first", "second"]
assert torch.equal(layer(torch.ones(1)), torch.tensor([20.0]))  # the second hook got the first one's 2

order.clear()
layer.register_forward_pre_hook(named_hook("added first", 0.5), prepend=True)
print("0.5, 2, then 10:", layer(torch.ones(1)), order)
assert order == ["added first", "first", "second"]
assert torch.equal(layer(torch.ones(1)), torch.tensor([10.0]))  # 1 * 0.5 * 2 * 10

# %% [markdown]
# Prepending matters when one hook must see the raw input: for example a hook that records what
# the caller passed, registered after hooks that change it.
#
# ## Trap: changing the caller's tensor in place
#
# `args[0]` is the caller's own tensor, not a copy. A pre-hook that edits it in place (`x += ...`,
# `x.mul_(...)`, `x[...] = ...`) changes the caller's data too: run the model twice on the same batch
# and the second run sees an input that the first one already changed. On a leaf tensor that
# requires grad (one created with `requires_grad=True`), PyTorch refuses.

# %%
def double_in_place(module, args):
    args[0].mul_(2)


layer = nn.Identity()
layer.register_forward_pre_hook(double_in_place)
batch = torch.tensor([1.0, 2.0, 3.0])
first, second = layer(batch).clone(), layer(batch).clone()
print("first call:", first, "| second call on the same batch:", second, "| the caller's batch now:", batch)
assert torch.equal(first, torch.tensor([2.0, 4.0, 6.0]))
assert torch.equal(second, torch.tensor([4.0, 8.0, 12.0])) and torch.equal(batch, second)

try:
    layer(torch.ones(3, requires_grad=True))
except RuntimeError as error:
    leaf_error = str(error)
print("RuntimeError:", leaf_error)
assert leaf_error == "a leaf Variable that requires grad is being used in an in-place operation."

# %% [markdown]
# The fix: compute a new tensor (`x * 2`, `x + noise`) and return it.
#
# ## Use 1: noise for data augmentation
#
# Adding a little random noise to a layer's input while training is a simple data augmentation: the
# model never sees exactly the same input twice. Three things make such a hook right:
#
# 1. **Only while training.** `model.eval()` sets `module.training = False` on every submodule, and
#    evaluation must be deterministic. The hook receives the module, so it can look at
#    `module.training` on each call.
# 2. **The right spread.** `torch.randn` draws standard normal values (standard deviation 1); times
#    `std` gives standard deviation `std`. Scaling by the variance `std ** 2` instead is a common
#    slip.
# 3. **Reproducible when asked.** Random functions take `generator=`; two generators seeded alike
#    give the same noise, whatever else draws from torch's global random state meanwhile.
#
# The demonstration hook below ignores point 1 on purpose.

# %%
torch.manual_seed(0)
std = 0.2
signal = torch.sin(torch.linspace(0, 4 * torch.pi, 10_000)).reshape(1, -1)


def noise_always(module, args):
    x = args[0]
    return x + torch.randn(x.shape) * std


noisy_layer = nn.Identity()
noisy_layer.register_forward_pre_hook(noise_always)
train_output = noisy_layer(signal)
measured = (train_output - signal).std().item()
print(f"measured standard deviation of the noise: {measured:.4f} (asked for {std})")
assert abs(measured - std) < 0.01

model = nn.Sequential(noisy_layer)
model.eval()  # what evaluation code calls on the whole model
print("after model.eval(), the inner layer's training flag:", noisy_layer.training)
assert noisy_layer.training is False
eval_outputs = [noisy_layer(signal) for _ in range(2)]
eval_difference = (eval_outputs[0] - eval_outputs[1]).abs().max().item()
print(f"in eval mode, two calls on the same input differ by up to {eval_difference:.3f}")
assert eval_difference > 0.5  # evaluation is not deterministic: the noise was added anyway

# %% [markdown]
# The variance slip, measured: scaling by `std ** 2` gives noise of standard deviation 0.04, five
# times too small.

# %%
slip = (torch.randn(10_000) * std ** 2).std().item()
print(f"randn * std ** 2 has standard deviation {slip:.4f}, not {std}")
assert abs(slip - std ** 2) < 0.002

# %% [markdown]
# **Trap: `torch.normal(x, std)` cuts the gradient.** It draws values around `x` with the right
# spread, but autograd treats the draw as a constant: the gradient with respect to `x` is zero
# (PyTorch defines it so). For a layer inside a network, no gradient would then reach the layers
# before it. `x + noise` passes the gradient on unchanged.

# %%
x = torch.ones(4, requires_grad=True)
torch.normal(x, std).sum().backward()
print("gradient through torch.normal(x, std):", x.grad)
assert torch.equal(x.grad, torch.zeros(4))
x.grad = None
(x + torch.randn(4) * std).sum().backward()
print("gradient through x + noise:           ", x.grad)
assert torch.equal(x.grad, torch.ones(4))

# %% [markdown]
# And reproducibility: a hook that draws from the global random state gives different noise for
# two equally seeded generators, because it never uses them. Drawing with `generator=` gives
# identical noise. Without a generator, the global random state decides: `torch.manual_seed` with the
# same seed right before each call gives identical noise again.

# %%
def noisy_output(draw_with_generator, seed):
    generator = torch.Generator().manual_seed(seed)
    layer = nn.Identity()

    def hook(module, args):
        g = generator if draw_with_generator else None
        return args[0] + torch.randn(args[0].shape, generator=g) * std

    layer.register_forward_pre_hook(hook)
    torch.randn(100)  # other code drawing from the global random state in between
    return layer(torch.zeros(5))


ignored = torch.equal(noisy_output(False, seed=7), noisy_output(False, seed=7))
used = torch.equal(noisy_output(True, seed=7), noisy_output(True, seed=7))
print("same seed, generator ignored -> identical noise:", ignored)
print("same seed, generator used    -> identical noise:", used)
assert not ignored and used
torch.manual_seed(11)
first_global = noisy_output(False, seed=7)
torch.manual_seed(11)
seeded_globally = torch.equal(first_global, noisy_output(False, seed=7))
print("generator ignored, torch.manual_seed(11) before each call -> identical noise:", seeded_globally)
assert seeded_globally

# %% [markdown]
# The picture shows the demonstration hook on a sine wave: the input, what the layer receives
# in training mode, and the measured noise against the normal density of standard deviation `std`.

# %%
part = slice(0, 10_000, 10)  # every 10th point, for a readable line
noise = (train_output - signal).flatten()
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2))
positions = torch.arange(10_000)[part]
left.plot(positions, train_output[0, part], color="tab:orange", linewidth=0.8,
          label="what forward receives (training)")
left.plot(positions, signal[0, part], color="black", linewidth=1.5, label="the caller's input")
left.set_xlabel("position in the signal")
left.set_title(f"Input noise, std = {std}")
left.legend(loc="lower left", fontsize=8, framealpha=0.9)
right.hist(noise, bins=60, density=True, color="tab:orange", alpha=0.6, label="measured noise")
grid = torch.linspace(-4 * std, 4 * std, 200)
density = torch.exp(-grid ** 2 / (2 * std ** 2)) / (std * (2 * torch.pi) ** 0.5)
right.plot(grid, density, color="black", label=f"normal density, std {std}")
right.set_xlabel("noise value")
right.set_title(f"Measured std {noise.std():.3f}, mean {noise.mean():+.4f}")
right.legend(frameon=False, fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Exercise 1: `add_input_noise` · medium · about 15 min
#
# Write `add_input_noise(module, std, generator=None)`. It registers a forward pre-hook on `module`
# and returns the handle. While the module is in training mode, each call replaces the first
# positional input `x` by `x + noise`: a fresh sample on every call, with independent normal values
# of mean 0 and standard deviation `std`, one per element of `x`, drawn from `generator` when one is
# given and from torch's global random state otherwise (so that `torch.manual_seed` reproduces it).
# In eval mode the inputs pass unchanged. The mode decides, not grad mode: under
# `torch.no_grad()` a module in training mode still gets noise. The caller's tensor is never changed
# in place, other positional arguments and all keyword arguments pass through unchanged, and the
# result keeps the shape and dtype of `x` (and lets gradients flow back to `x`).
#
# Traps: noise in eval mode (decide on every call, not when registering); scaling by `std ** 2`;
# drawing from the global random state when a generator is given; returning only the new `x`;
# `torch.normal(x, std)`, whose gradient with respect to `x` is zero.
#
# The check judges the noise by its statistics (mean, standard deviation, normal shape, independence
# from `x` and between elements), by reproducibility with equally seeded generators, and, without a
# generator, by the noise following `torch.manual_seed`, so any correct way of drawing normal noise
# passes.
#
# Check: run `check(add_input_noise)` below, or `pytest tests/test_03_forward_pre_hooks.py -k add_input_noise`.

# %% tags=["exercise"]
# Exercise: add_input_noise — write your code in this cell.
import torch


def add_input_noise(module, std, generator=None):
    """Register a forward pre-hook on `module` that adds normal noise to its first input; return the handle.

    In training mode (`module.training` is True at the time of the call), the first positional
    argument `x` is replaced by `x + noise`, where `noise` has the shape of `x` and holds independent
    normal values of mean 0 and standard deviation `std`, drawn anew on every call, from `generator`
    (a torch.Generator) when it is not None, and from torch's global random state when it is None.
    In eval mode the inputs pass unchanged.
    The mode decides, not grad mode: noise is added under torch.no_grad() too.
    The caller's tensor is not changed in place; other positional arguments and all keyword
    arguments pass through unchanged; the new input keeps the dtype of `x` and gradients flow back to `x`.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("add_input_noise is not written yet")


# %%
check(add_input_noise)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# The hook gets `(module, args)` before every call. When the module is training, build a new first
# argument `x + noise` and return all the arguments again, the first one replaced. When it is not
# training, return `None`.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `module.register_forward_pre_hook(hook)` returns the handle. `module.training` says the mode at
# call time. `torch.randn(shape, generator=generator, dtype=..., device=...)` draws standard normal
# values (`generator=None` uses the global random state); multiply them by `std`, not `std ** 2`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Define the hook inside `add_input_noise`, so it sees `std` and `generator`. Its first line returns
# `None` when the module it receives is not training. Otherwise it draws standard normal noise shaped
# like `args[0]` (passing `generator=generator` and the input's dtype), scales it by `std`, and returns
# a tuple: the noisy first argument followed by `args[1:]`. Register it and return the handle.
#
# </details>

# %% [markdown]
# Once `add_input_noise` is written, this cell shows it at work: noise in training mode, none in
# eval mode, and the same noise again from a generator seeded alike. Until then it prints
# "Not done yet".

# %%
with try_it():
    images = torch.zeros(2, 3, 16, 16)
    layer = nn.Identity()
    noise_handle = add_input_noise(layer, 0.5, generator=torch.Generator().manual_seed(0))
    noisy = layer(images)
    print(f"training: noise std {noisy.std():.3f}, caller's tensor still all zeros: {bool((images == 0).all())}")
    assert abs(noisy.std().item() - 0.5) < 0.05 and (images == 0).all()
    layer.eval()
    print("eval: input unchanged:", torch.equal(layer(images), images))
    assert torch.equal(layer(images), images)
    noise_handle.remove()

    again = nn.Identity()
    add_input_noise(again, 0.5, generator=torch.Generator().manual_seed(0))
    same = torch.equal(again(images), noisy)
    print("a generator seeded alike gives the same noise:", same)
    assert same

# %% [markdown]
# ## Use 2: preprocessing the input
#
# A model trained on normalized images expects every caller to normalize them the same way. A
# pre-hook on the model does it once, for every caller: `(x - mean[c]) / std[c]` for each channel
# `c`. Images come as `(N, C, H, W)`: the channel is dimension 1.
#
# **Trap: statistics along the wrong dimension.** A tensor of shape `(C,)` broadcasts against the
# *last* dimension of `x`, not against dimension 1. Usually that raises an error; when the last
# dimension happens to have `C` elements too, it runs and gives wrong numbers. The channel
# statistics must be shaped `(1, C, 1, 1)` (or `(C, 1, 1)`).

# %%
generator = torch.Generator().manual_seed(0)
channel_means, channel_stds = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([0.2, 1.0, 3.0])
channel_view = (1, 3, 1, 1)


def images_with_channel_stats(*shape):
    """Random images whose channels have the means and standard deviations above."""
    return torch.randn(shape, generator=generator) * channel_stds.view(channel_view) + channel_means.view(channel_view)


wide = images_with_channel_stats(64, 3, 8, 8)
try:
    (wide - channel_means) / channel_stds
except RuntimeError as error:
    broadcast_error = str(error)
print("RuntimeError:", broadcast_error)
assert broadcast_error == "The size of tensor a (8) must match the size of tensor b (3) at non-singleton dimension 3"

# Patches of 3 x 3 pixels: the last dimension has 3 elements, like the channels.
patches = images_with_channel_stats(256, 3, 3, 3)
patch_mean, patch_std = patches.mean(dim=(0, 2, 3)), patches.std(dim=(0, 2, 3))  # measured per channel
wrong_dim = (patches - patch_mean) / patch_std
right_dim = (patches - patch_mean.view(1, 3, 1, 1)) / patch_std.view(1, 3, 1, 1)
versions = {"before": patches, "normalized along dim 1": right_dim, "normalized along the last dim": wrong_dim}
per_channel = {name: (t.mean(dim=(0, 2, 3)), t.std(dim=(0, 2, 3))) for name, t in versions.items()}
for name, (m, s) in per_channel.items():
    print(f"{name:>29}: channel means {[round(v, 3) for v in m.tolist()]}, stds {[round(v, 3) for v in s.tolist()]}")
assert torch.allclose(per_channel["normalized along dim 1"][0], torch.zeros(3), atol=1e-5)
assert torch.allclose(per_channel["normalized along dim 1"][1], torch.ones(3), atol=1e-5)
assert (per_channel["normalized along the last dim"][0].abs() > 0.5).any()  # silently wrong
# (C, 1, 1) works too: broadcasting adds the missing leading dimension.
assert torch.equal((patches - patch_mean.view(3, 1, 1)) / patch_std.view(3, 1, 1), right_dim)

# %% [markdown]
# Measured per channel, before and after the two normalizations:

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
width = 0.27
for axis, (index, title) in zip(axes, ((0, "mean per channel"), (1, "standard deviation per channel"))):
    for offset, name, color in zip((-width, 0, width), versions, ("tab:gray", "tab:green", "tab:red")):
        values = per_channel[name][index]
        bars = axis.bar([c + offset for c in range(3)], values, width, color=color, label=name)
        axis.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
    axis.axhline(float(index), color="black", linewidth=0.8, linestyle=":")  # the target: mean 0, std 1
    axis.set_xticks(range(3), [f"channel {c}" for c in range(3)])
    axis.set_title(title)
    axis.margins(y=0.15)
axes[0].legend(loc="lower left", frameon=False, fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Exercise 2: `normalize_input` · medium · about 15 min
#
# Write `normalize_input(module, mean, std)`. It registers a forward pre-hook on `module` and returns
# the handle. The hook replaces the first positional input `x`, of shape `(N, C, ...)` with any number
# of trailing dimensions (also none: `(N, C)`), by `(x - mean[c]) / std[c]` for each channel `c` of
# dimension 1, on every call, in training and eval mode alike. `mean` and `std` are sequences (lists or
# tuples) of `C` numbers. The caller's tensor is unchanged, other positional arguments and all keyword
# arguments pass through, and the result keeps the dtype of `x` (and lets gradients flow back to `x`).
#
# Traps: shaping the statistics so they broadcast against dimension 1 for every number of dimensions;
# dividing by `std`, not by the variance; not changing `x` in place.
#
# Check: run `check(normalize_input)` below, or `pytest tests/test_03_forward_pre_hooks.py -k normalize_input`.

# %% tags=["exercise"]
# Exercise: normalize_input — write your code in this cell.
import torch


def normalize_input(module, mean, std):
    """Register a forward pre-hook on `module` that normalizes its first input per channel; return the handle.

    The first positional argument `x` has shape (N, C, ...), with any number of trailing dimensions
    (also none). It is replaced by (x - mean[c]) / std[c] for every channel c along dimension 1.
    `mean` and `std` are sequences (lists or tuples) of C numbers.
    This happens on every call, in training and eval mode alike.
    The caller's tensor is not changed in place; other positional arguments and all keyword
    arguments pass through unchanged; the result has the shape and dtype of `x`, and gradients flow
    back to `x`.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("normalize_input is not written yet")


# %%
check(normalize_input)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Turn `mean` and `std` into tensors whose `C` values lie along dimension 1 and whose other dimensions
# have size 1, as many as `x` has. Broadcasting then subtracts and divides channel by channel, for
# images, sequences and plain `(N, C)` batches alike.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `torch.as_tensor(mean, dtype=x.dtype)` makes a tensor of the sequence in the input's dtype.
# `.reshape(1, -1, *[1] * (x.dim() - 2))` (or `.view`) puts its values along dimension 1. Return a
# tuple of all positional arguments, the first one replaced.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# In the hook, take the first argument, build the shape `(1, -1)` followed by one `1` per dimension of
# `x` after the second, and reshape both statistics to it. Return a tuple: the normalized first
# argument, then `args[1:]`. Register the hook with `module.register_forward_pre_hook` and return the
# handle.
#
# </details>

# %% [markdown]
# Once `normalize_input` is written, this cell shows it at work on the 3 x 3 patches from above:
# every channel comes out with mean 0 and standard deviation 1. Until then it prints "Not done yet".

# %%
with try_it():
    layer = nn.Identity()
    with normalize_input(layer, patch_mean.tolist(), patch_std.tolist()):
        normalized = layer(patches)
    print("channel means:", normalized.mean(dim=(0, 2, 3)), "\nchannel stds: ", normalized.std(dim=(0, 2, 3)))
    assert torch.allclose(normalized.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5)
    assert torch.allclose(normalized.std(dim=(0, 2, 3)), torch.ones(3), atol=1e-5)

# %% [markdown]
# ## Use 3: changing the input on a condition
#
# A pre-hook may look at its input and change it only when needed. A classic case: a model that
# starts with `nn.Linear` needs flat vectors `(N, features)`, while images arrive as `(N, C, H, W)`.
# A pre-hook that flattens inputs with more than two dimensions lets callers pass either.
#
# **Trap: `view()` on a non-contiguous tensor.** `x.view(N, -1)` only reinterprets memory, so it
# fails when the elements are not laid out in order. That is common for images: a batch stored as
# `(N, H, W, C)` and permuted to `(N, C, H, W)` is not contiguous. `reshape` (copies when needed) and
# `flatten(1)` work for both.

# %%
channels_last = torch.randn(4, 8, 8, 3, generator=generator)
images = channels_last.permute(0, 3, 1, 2)  # (N, C, H, W), a view with permuted strides
print("shape:", tuple(images.shape), "| contiguous:", images.is_contiguous())
try:
    images.view(images.shape[0], -1)
except RuntimeError as error:
    view_error = str(error)
print("RuntimeError:", view_error)
assert not images.is_contiguous()
assert view_error.startswith("view size is not compatible with input tensor's size and stride")
flat = images.reshape(images.shape[0], -1)
print("reshape gives", tuple(flat.shape), "| same as flatten(1):", torch.equal(flat, images.flatten(1)))
assert flat.shape == (4, 192) and torch.equal(flat, images.flatten(1))
assert torch.equal(flat[0, :64], images[0, 0].flatten())  # channel 0 first, then channel 1, ...
copied = flat.data_ptr() != images.data_ptr()
shared = channels_last.reshape(4, -1).data_ptr() == channels_last.data_ptr()
print("reshape copied the non-contiguous images:", copied, "| shared the memory of a contiguous tensor:", shared)
assert copied and shared

# %% [markdown]
# ## Exercise 3: `flatten_images` · easy · about 10 min
#
# Write `flatten_images(module)`. It registers a forward pre-hook on `module` and returns the handle.
# If the first positional input has more than 2 dimensions, it becomes `(N, -1)`: every dimension
# but the first flattened, in the tensor's own element order, also for non-contiguous inputs. 1-D and
# 2-D inputs pass unchanged. The caller's tensor is not changed in place; other positional arguments and
# all keyword arguments pass through unchanged. This happens in training and eval mode alike, and
# gradients flow back to `x`.
#
# Traps: `view()` on non-contiguous tensors; flattening the batch dimension too; flattening inputs
# that have 1 or 2 dimensions.
#
# Check: run `check(flatten_images)` below, or `pytest tests/test_03_forward_pre_hooks.py -k flatten_images`.

# %% tags=["exercise"]
# Exercise: flatten_images — write your code in this cell.


def flatten_images(module):
    """Register a forward pre-hook on `module` that flattens inputs with more than 2 dims; return the handle.

    If the first positional argument `x` has more than 2 dimensions, it is replaced by `x` reshaped to
    (N, -1): all dimensions but the first flattened, in the tensor's own element order, also when `x`
    is not contiguous. 1-D and 2-D inputs pass unchanged. The caller's tensor is not changed in place;
    other positional arguments and all keyword arguments pass through unchanged.
    This happens in training and eval mode alike; gradients flow back to `x`.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("flatten_images is not written yet")


# %%
check(flatten_images)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Look at the number of dimensions of the first argument. Up to 2, return `None` so nothing changes.
# Above 2, keep the batch dimension and merge all others into one, with an operation that works
# whatever the memory layout.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `x.dim()` is the number of dimensions. `x.flatten(1)` (or `x.reshape(x.shape[0], -1)`) merges
# dimensions 1 to the last and copies when the tensor is not contiguous; `x.view(...)` does not.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# The hook returns `None` when the first argument has at most 2 dimensions. Otherwise it returns a
# tuple: the first argument flattened from dimension 1 on, followed by `args[1:]`. Register it with
# `module.register_forward_pre_hook` and return the handle.
#
# </details>

# %% [markdown]
# Once `flatten_images` is written, this cell shows it at work: one linear classifier that takes
# the permuted images as well as already flat vectors, with the same result. Until then it prints
# "Not done yet".

# %%
with try_it():
    classifier = nn.Linear(192, 10)
    with flatten_images(classifier):
        from_images, from_vectors = classifier(images), classifier(flat)
    print("from images:", tuple(from_images.shape), "| from vectors:", tuple(from_vectors.shape),
          "| equal:", torch.allclose(from_images, from_vectors))
    assert from_images.shape == (4, 10) and torch.allclose(from_images, from_vectors)

# %% [markdown]
# ## Use 4: fixing a keyword argument
#
# Some modules take options as keyword arguments, and code you don't control calls them. A
# `with_kwargs=True` pre-hook can set an option on every call. `nn.MultiheadAttention`, for example,
# takes `need_weights`: with `need_weights=False` it returns `None` in place of the attention weights.

# %%
torch.manual_seed(0)
attention = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
tokens = torch.randn(2, 5, 8)
output, weights = attention(tokens, tokens, tokens)
print("by default: weights of shape", tuple(weights.shape))
assert weights.shape == (2, 5, 5)
output, weights = attention(tokens, tokens, tokens, need_weights=False)
print("with need_weights=False: weights", weights)
assert weights is None

# %% [markdown]
# **Trap: a default is not an override.** `kwargs.setdefault(name, value)` adds the keyword only
# when the caller did not pass it; a caller's `need_weights=True` would win. To force a value, set it
# whatever the caller passed.

# %%
def need_weights_unless_told(module, args, kwargs):
    kwargs = dict(kwargs)
    kwargs.setdefault("need_weights", False)
    return args, kwargs


with attention.register_forward_pre_hook(need_weights_unless_told, with_kwargs=True):
    _, not_passed = attention(tokens, tokens, tokens)
    _, passed_true = attention(tokens, tokens, tokens, need_weights=True)
print("caller passed nothing -> weights", not_passed, "| caller passed True -> weights of shape",
      tuple(passed_true.shape))
assert not_passed is None and passed_true.shape == (2, 5, 5)

# %% [markdown]
# ## Exercise 4: `force_kwarg` · easy · about 10 min
#
# Write `force_kwarg(module, name, value)`. It registers a forward pre-hook on `module` and returns
# the handle. On every call, `forward` receives the keyword argument `name=value`: added when the
# caller did not pass that keyword, overridden when the caller did, in training and eval mode and under
# `torch.no_grad()` alike. Positional arguments and other keyword arguments pass through unchanged.
#
# Traps: a plain pre-hook cannot see or add keyword arguments; with `with_kwargs=True` the hook must
# return the pair `(args, kwargs)`; `setdefault` does not override.
#
# Check: run `check(force_kwarg)` below, or `pytest tests/test_03_forward_pre_hooks.py -k force_kwarg`.

# %% tags=["exercise"]
# Exercise: force_kwarg — write your code in this cell.


def force_kwarg(module, name, value):
    """Register a forward pre-hook on `module` that passes `name=value` to every call; return the handle.

    On every call of `module` (in training and eval mode, with grad mode on or off), `forward` receives
    the keyword argument `name` with the value `value`: added if the caller did not pass it, overridden
    if the caller did. Positional arguments and the other keyword arguments pass through unchanged.
    """
    # TODO: write this, as its docstring says.
    raise NotImplementedError("force_kwarg is not written yet")


# %%
check(force_kwarg)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Keyword arguments are only visible to a pre-hook registered with `with_kwargs=True`. Such a hook
# gets the keyword arguments as a dict and hands `forward` the arguments it returns; put `value` under
# `name` in that dict whether or not the key is already there.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `module.register_forward_pre_hook(hook, with_kwargs=True)` calls `hook(module, args, kwargs)`, which
# must return `None` or the pair `(new_args, new_kwargs)`. `{**kwargs, name: value}` is a new dict
# with `name` set (an existing entry is replaced).
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# The hook's body is one `return` of a pair: `args` as they came, and a new dict holding everything in
# `kwargs` plus `name` set to `value`. Register it with `with_kwargs=True` and return the handle.
#
# </details>

# %% [markdown]
# Once `force_kwarg` is written, this cell shows it at work: the attention layer returns no
# weights, whatever the caller asks for. Until then it prints "Not done yet".

# %%
with try_it():
    with force_kwarg(attention, "need_weights", False):
        _, not_passed = attention(tokens, tokens, tokens)
        _, passed_true = attention(tokens, tokens, tokens, need_weights=True)
    print("caller passed nothing -> weights", not_passed, "| caller passed True -> weights", passed_true)
    assert not_passed is None and passed_true is None

# %% [markdown]
# ## Exercise 5: `predict_nesting_order` · easy · about 5 min
#
# A new kind of exercise: **predict before you run**. The cell below defines
# `nesting_order_events(log)`, which builds a module `outer` with two children, `first` and
# `second`, puts pre-hooks on all three, and calls `outer` once. Nothing runs yet: the cell only
# defines the function. Every hook and every `forward` calls `log(...)` with the name of an event:
#
# - `"pre:outer"`, `"pre:first"`, `"pre:second"`: that module's pre-hook fired;
# - `"pre:outer, prepend"`: the pre-hook registered last on `outer`, with `prepend=True`;
# - `"forward:outer"`, `"forward:first"`, `"forward:second"`: that module's `forward` started.
#
# Read the code, then write `predict_nesting_order()`: it returns the list of events in the order
# you expect them to fire. Spelling: case does not matter, nor spaces around a name, around the
# `:` or after the comma; `fwd` may stand for `forward`, and `prehook`, `pre-hook` or `pre_hook`
# for `pre`.
#
# Check: run `check(predict_nesting_order)` below (a wrong prediction is told the first event where
# it parts from what fires, and the rule;
# after three different wrong predictions in one session, `check` shows the whole log), or
# `pytest tests/test_03_forward_pre_hooks.py -k predict_nesting_order`. Once it passes, the cell
# after the hints prints the log, recorded as it runs.

# %% tags=["prediction"]
import torch
from torch import nn


def nesting_order_events(log):
    class Step(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def forward(self, x):
            log(f"forward:{self.name}")
            return x + 1

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.second = Step("first"), Step("second")

        def forward(self, x):
            log("forward:outer")
            return self.second(self.first(x))

    outer = Outer()
    outer.register_forward_pre_hook(lambda module, args: log("pre:outer"))
    outer.first.register_forward_pre_hook(lambda module, args: log("pre:first"))
    outer.second.register_forward_pre_hook(lambda module, args: log("pre:second"))
    outer.register_forward_pre_hook(lambda module, args: log("pre:outer, prepend"), prepend=True)
    outer(torch.zeros(1))


# %% tags=["exercise"]
# Exercise: predict_nesting_order — write your code in this cell.


def predict_nesting_order():
    """Return the events that `nesting_order_events` logs, in the order they fire.

    Each event is one of the names the cell above logs, e.g. "pre:outer".
    """
    # TODO: return ["...", ...]: the events, in the order you expect them to fire
    raise NotImplementedError("predict_nesting_order is not written yet")


# %%
check(predict_nesting_order)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Follow the one call `outer(torch.zeros(1))` line by line: what does `outer(...)` do before it
# runs `outer.forward`, and where, inside that `forward`, are the children called?
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# A module's pre-hooks run in the order they were registered, except that `prepend=True` puts a
# hook in front of those registered before it; all of them run right before that module's
# `forward`, each time the module is called.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# Seven events. The first two are `outer`'s pre-hooks; `first`'s pre-hook cannot fire until
# `outer.forward` has started and calls `self.first`.
#
# </details>

# %% [markdown]
# Once your prediction is right, this cell prints what fires, recorded as it runs (until then it
# says what to do).

# %%
from hooked.notebook import reveal

reveal(predict_nesting_order)

# %% [markdown]
# ## Summary
#
# | API | hook receives | hook returns | fires |
# |---|---|---|---|
# | `module.register_forward_pre_hook(hook)` | `hook(module, args)`: the positional arguments as a tuple | `None` (keep them), a tuple (the new positional arguments) or any other value (the only positional argument) | before `forward`, on every `module(...)` call, also under `no_grad` and in eval mode; not on `module.forward(...)` |
# | `...(hook, with_kwargs=True)` | `hook(module, args, kwargs)` | `None` or the pair `(new_args, new_kwargs)`; a value that is not a tuple of two elements raises a `RuntimeError`, a wrong pair is caught, if at all, when `forward(*new_args, **new_kwargs)` is called | the same |
# | `...(hook, prepend=True)` | | | before the pre-hooks already registered |
#
# Rules of thumb: return new tensors instead of changing the caller's in place; return every
# positional argument, not only the one you changed; check `module.training` on each call for
# anything that must only happen while training; draw noise from the generator you are given;
# shape per-channel statistics to broadcast against dimension 1; use `reshape` or `flatten`, not
# `view`, on tensors that may not be contiguous.
#
# Next, lesson 04 covers forward hooks, which run after `forward` and see its output.
