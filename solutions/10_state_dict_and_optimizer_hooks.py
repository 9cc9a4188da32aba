# %% [markdown]
# # Lesson 10 — State-dict and optimizer hooks
#
# Forward and backward hooks watch a model compute. Two other places in a training program take
# hooks too: saving and loading (`state_dict()` and `load_state_dict()`), and the optimizer's
# `step()`. They are how a library renames the keys of old checkpoints, adds its own entries to a
# saved file, or keeps an average of the weights without touching the training loop.
#
# After this lesson you will be able to:
#
# - register `state_dict` pre- and post-hooks and `load_state_dict` pre- and post-hooks on a
#   module, say what each receives, in which order a parent's and a child's hooks run, and what a
#   return value does;
# - make an old checkpoint load into a renamed module, wherever that module sits in a bigger model,
#   by editing the keys in a `load_state_dict` pre-hook;
# - register step pre- and post-hooks on an optimizer, and global ones for every optimizer, and
#   say in which order they run and what they receive;
# - keep an exponential moving average of the weights, updated by a step post-hook;
# - know the optimizer's own state-dict hooks.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_10_state_dict_and_optimizer_hooks.py` (add `-k attach_weight_ema` for one
# exercise; plain `pytest` grades every lesson).

# %%
import functools

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from hooked.notebook import check, hint, try_it

print("torch", torch.__version__)

# %% [markdown]
# ## `state_dict` hooks: what they receive and in which order they run
#
# `model.state_dict()` walks the model from the top. For each module it calls the module's
# **pre-hooks** as `hook(module, prefix, keep_vars)`, then adds the module's own parameters and
# buffers, then walks its children, and last calls the module's **post-hooks** as
# `hook(module, state_dict, prefix, local_metadata)`. `prefix` is the module's place in the model:
# `""` for the model itself, `"body."` for its child `body`, `"body.fc."` below that. Every key the
# module owns is `prefix + local name` (`"body.fc.weight"`).
#
# So a parent's pre-hook runs before its children's, and its post-hook after theirs: a post-hook
# sees the entries of the module's whole subtree already in the dict. The cell records every call.

# %%
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Block()
        self.head = nn.Linear(2, 1)


torch.manual_seed(0)
model = Model()
calls = []
handles = []
for name, module in model.named_modules():
    def pre(module, prefix, keep_vars, name=name):
        calls.append(("pre ", name or "(model)", prefix))

    def post(module, state_dict, prefix, local_metadata, name=name):
        calls.append(("post", name or "(model)", prefix, f"{len(state_dict)} keys in the dict so far"))

    handles += [module.register_state_dict_pre_hook(pre), module.register_state_dict_post_hook(post)]

saved = model.state_dict()
for call in calls:
    print(*call)
print("keys:", list(saved))
assert [call[:2] for call in calls] == [
    ("pre ", "(model)"), ("pre ", "body"), ("pre ", "body.fc"), ("post", "body.fc"), ("post", "body"),
    ("pre ", "head"), ("post", "head"), ("post", "(model)")]
assert [call[2] for call in calls if call[0] == "pre "] == ["", "body.", "body.fc.", "head."]
assert [call[2] for call in calls if call[1] == "body.fc"] == ["body.fc.", "body.fc."]
# Each post-hook sees its whole subtree's entries: body.fc's 2 keys, still 2 after body, 4 after head and the model.
assert [call[3] for call in calls if call[0] == "post"] == [f"{n} keys in the dict so far" for n in (2, 2, 4, 4)]
assert list(saved) == ["body.fc.weight", "body.fc.bias", "head.weight", "head.bias"]
for handle in handles:
    handle.remove()

# %% [markdown]
# ## What a return value does in a `state_dict` hook
#
# A post-hook changes the result by editing the dict it receives, in place: it may add, remove or
# change entries. It must return `None`; returning anything else (even a dict) raises. A
# pre-hook's return value is ignored.

# %%
layer = nn.Linear(3, 2)


def add_note(module, state_dict, prefix, local_metadata):
    state_dict[prefix + "note"] = torch.tensor(7.0)  # an extra entry, saved with the weights
    del state_dict[prefix + "bias"]  # an entry removed
    state_dict[prefix + "weight"] = state_dict[prefix + "weight"] * 0  # an entry changed


with layer.register_state_dict_post_hook(add_note):
    edited_dict = layer.state_dict()
print("edited in place:", list(edited_dict), "| weight saved as", edited_dict["weight"].unique().tolist())
assert list(edited_dict) == ["weight", "note"] and edited_dict["weight"].unique().tolist() == [0.0]
assert layer.weight.abs().sum() > 0  # the module's own weight is untouched

with layer.register_state_dict_post_hook(lambda module, state_dict, prefix, meta: {"only": torch.zeros(1)}):
    try:
        layer.state_dict()
    except RuntimeError as error:
        print("returning a dict: RuntimeError:", error)
        assert str(error) == "state_dict post-hook must return None"

with layer.register_state_dict_pre_hook(lambda module, prefix, keep_vars: "ignored"):
    print("a pre-hook's return is ignored:", list(layer.state_dict()))
    assert list(layer.state_dict()) == ["weight", "bias"]

# %% [markdown]
# **A pitfall in torch 2.13: a bound method cannot be a `state_dict` post-hook.** Registering one
# raises `AttributeError` at once, because `register_state_dict_post_hook` sets an attribute on the
# function it receives, and a bound method takes no attributes. Wrap the method in
# `functools.partial` (or a plain function). The cell shows the error and the workaround on the
# pinned torch, and that a `state_dict` pre-hook does take a bound method.

# %%
class NoteWriter:
    def __init__(self, value):
        self.value = value

    def write(self, module, state_dict, prefix, local_metadata):
        state_dict[prefix + "note"] = torch.tensor(self.value)


writer = NoteWriter(3.0)
try:
    layer.register_state_dict_post_hook(writer.write)
except AttributeError as error:
    print("bound method: AttributeError:", error)
    assert "'method' object has no attribute '_from_public_api'" in str(error)
assert not layer._state_dict_hooks  # nothing was registered

with layer.register_state_dict_post_hook(functools.partial(NoteWriter.write, writer)):
    print("through functools.partial:", list(layer.state_dict()))
    assert list(layer.state_dict()) == ["weight", "bias", "note"]

with layer.register_state_dict_pre_hook(writer.write):  # a pre-hook takes a bound method
    print("a bound method as a pre-hook registers fine:", len(layer._state_dict_pre_hooks), "hook")
    assert len(layer._state_dict_pre_hooks) == 1

# %% [markdown]
# ## `load_state_dict` hooks
#
# `model.load_state_dict(state_dict)` walks the model the same way. For each module it calls:
#
# - the **load pre-hooks**, as `hook(module, state_dict, prefix, local_metadata, strict,
#   missing_keys, unexpected_keys, error_msgs)`, *before* the module copies its own parameters
#   and buffers out of `state_dict`; then the children are loaded;
# - the **load post-hooks**, as `hook(module, incompatible_keys)`, once the module and its whole
#   subtree are loaded. `incompatible_keys` holds the lists `missing_keys` and `unexpected_keys`.
#
# So a parent's load pre-hook runs before any child's, and a child's load post-hook before its
# parent's, as the next cell records.

# %%
calls = []
handles = []
for name, module in model.named_modules():
    def load_pre(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs, name=name):
        calls.append(("pre ", name or "(model)", prefix))

    def load_post(module, incompatible_keys, name=name):
        calls.append(("post", name or "(model)"))

    handles += [module.register_load_state_dict_pre_hook(load_pre),
                module.register_load_state_dict_post_hook(load_post)]

result = model.load_state_dict(saved)
for call in calls:
    print(*call)
print("load_state_dict returned:", result)
assert [call[:2] for call in calls] == [
    ("pre ", "(model)"), ("pre ", "body"), ("pre ", "body.fc"), ("post", "body.fc"), ("post", "body"),
    ("pre ", "head"), ("post", "head"), ("post", "(model)")]
assert [call[2] for call in calls if call[0] == "pre "] == ["", "body.", "body.fc.", "head."]
for handle in handles:
    handle.remove()

# %% [markdown]
# The `strict` argument a load pre-hook receives is `True` on torch 2.13 even when the caller
# passed `strict=False`: the loader always collects the missing and unexpected keys, and only at
# the end does the caller's `strict` decide whether they raise (`strict=False` returns them, as
# below; `strict=True` raises them). So a hook must do the same work for both kinds of load.

# %%
strict_seen = []
with_extra = dict(layer.state_dict(), extra=torch.tensor(1.0))  # a key the layer does not have
with layer.register_load_state_dict_pre_hook(lambda module, state_dict, prefix, meta, strict, *rest:
                                             strict_seen.append(strict)):
    result = layer.load_state_dict(with_extra, strict=False)
    try:
        layer.load_state_dict(with_extra, strict=True)
        raise AssertionError("expected a RuntimeError")
    except RuntimeError as error:
        strict_error = " ".join(str(error).split())
print("strict received for strict=False, then strict=True:", strict_seen)
print("strict=False returned:", result)
print("strict=True raised, at the end: RuntimeError:", strict_error)
assert strict_seen == [True, True]
assert result.unexpected_keys == ["extra"] and 'Unexpected key(s) in state_dict: "extra"' in strict_error

# %% [markdown]
# ### A load pre-hook edits the dict in place
#
# The `state_dict` a load pre-hook receives is not the caller's dict. On torch 2.13,
# `load_state_dict` first makes a shallow copy for the model; then, for each child, it builds a new
# dict holding only the keys that start with the child's prefix, taken from its parent's dict
# *after* the parent's pre-hooks ran. So a module's hook sees its own keys (and its subtree's),
# already edited by the hooks above it. An edit made in place (`state_dict[new] =
# state_dict.pop(old)`) is what the module and its children then load; the caller's own dict
# stays as it was. Rebinding the name (`state_dict = {...}`) or returning a new dict changes
# nothing: the hook's return value is ignored, and the loader keeps using its dict.
#
# The example: a checkpoint saved when `Linear`'s weight was called `"w"` (an old name).

# %%
old_checkpoint = {"w": torch.ones(2, 3), "bias": torch.zeros(2)}


def rename_by_rebinding(module, state_dict, prefix, *rest):
    state_dict = {key.replace("w", "weight"): value for key, value in state_dict.items()}
    return state_dict  # ignored


def rename_in_place(module, state_dict, prefix, *rest):
    if prefix + "w" in state_dict:
        state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")


layer = nn.Linear(3, 2)
with layer.register_load_state_dict_pre_hook(rename_by_rebinding):
    try:
        layer.load_state_dict(old_checkpoint)
    except RuntimeError as error:
        print("rebinding: RuntimeError:", " ".join(str(error).split()))
        assert 'Missing key(s) in state_dict: "weight"' in str(error)
        assert 'Unexpected key(s) in state_dict: "w"' in str(error)

with layer.register_load_state_dict_pre_hook(rename_in_place):
    print("in place:", layer.load_state_dict(old_checkpoint))
print("the weight loaded:", layer.weight.tolist())
print("the caller's dict is unchanged:", list(old_checkpoint))
assert torch.equal(layer.weight, torch.ones(2, 3)) and list(old_checkpoint) == ["w", "bias"]

# %%
# Each module's hook gets a dict of its own keys, built after the hooks above it ran.
seen = {}


def rename_child_key(module, state_dict, prefix, *rest):  # on the model: edits a key of body.fc
    seen["model"] = list(state_dict)
    state_dict["body.fc.weight"] = state_dict.pop("body.fc.old_weight")


model = Model()
given = model.state_dict()
given["body.fc.old_weight"] = given.pop("body.fc.weight")
with model.register_load_state_dict_pre_hook(rename_child_key), \
        model.body.fc.register_load_state_dict_pre_hook(lambda module, state_dict, *rest: seen.update(fc=list(state_dict))):
    print(model.load_state_dict(given))
print("the model's hook saw:", seen["model"])
assert sorted(seen["model"]) == sorted(given)  # the model's hook gets every key
print("body.fc's hook saw:  ", seen["fc"])
print("the caller's dict still has:", [key for key in given if key.startswith("body.fc.")])
assert seen["fc"] == ["body.fc.bias", "body.fc.weight"]
assert "body.fc.old_weight" in given and "body.fc.weight" not in given

# %% [markdown]
# ### A load post-hook edits `incompatible_keys` in place
#
# A load post-hook may change the lists in `incompatible_keys` in place: with `strict=True`, the
# error is raised after the post-hooks, from what the lists hold then. So a post-hook can forgive
# a key it knows to be harmless. Returning a value raises an `AssertionError`.

# %%
layer = nn.Linear(3, 2)
with_extra = dict(layer.state_dict(), note=torch.tensor(1.0))


def forgive_note(module, incompatible_keys):
    if "note" in incompatible_keys.unexpected_keys:
        incompatible_keys.unexpected_keys.remove("note")


try:
    layer.load_state_dict(with_extra)
except RuntimeError as error:
    print("without the hook:", " ".join(str(error).split()))
    assert 'Unexpected key(s) in state_dict: "note"' in str(error)
with layer.register_load_state_dict_post_hook(forgive_note):
    result = layer.load_state_dict(with_extra)
    print("with the hook:", result)
    assert result.missing_keys == [] and result.unexpected_keys == []

with layer.register_load_state_dict_post_hook(lambda module, incompatible_keys: incompatible_keys):
    try:
        layer.load_state_dict(layer.state_dict())
    except AssertionError as error:
        print("returning a value: AssertionError:", error)
        assert "are not expected to return new values" in str(error)

# %% [markdown]
# ## Exercise 1: `migrate_checkpoint_keys` · medium · about 20 min
#
# A module was refactored: its layer `fc` is now called `classifier`, its `bn` is now `norm`. Old
# checkpoints still use the old names. Write `migrate_checkpoint_keys(module, renames)`, which
# registers a load pre-hook on `module` so that those checkpoints load, and returns its handle.
#
# - `renames` maps old keys to new keys, both **local to `module`**: the names
#   `module.state_dict()` would use, such as `{"fc.weight": "classifier.weight"}`.
# - Whenever `module` is loaded, whether by `module.load_state_dict(...)` itself or as part of a
#   bigger model (`model.load_state_dict(...)`, where `module` sits at a prefix such as
#   `"encoder."`), every key `prefix + old` present in the dict is moved to `prefix + new`: the
#   old key is removed, so `strict=True` loads see no unexpected key.
# - Renames whose old key is absent are skipped, so a checkpoint that already uses the new names
#   loads too. Keys outside the module (other prefixes) are never touched.
# - A dict that holds both `prefix + old` and `prefix + new` loads the old key's value: it is moved
#   over the new key's, and no old key is left over.
# - Removing the handle stops the renaming.
# - Each call registers a hook of its own: two calls on one module, with two sets of renames,
#   both apply.
#
# Traps: ignoring `prefix` (works only when `module` is loaded by itself), or keeping the one of
# the first load (the same module may be loaded at another place later); building a new dict
# instead of editing the given one in place; renaming keys of other modules that end with the same
# text; copying instead of moving (the old key is then unexpected); relying on the order of keys;
# skipping a rename because the new key is there already (the old key is then unexpected).
#
# Check: run `check(migrate_checkpoint_keys)` below, or
# `pytest tests/test_10_state_dict_and_optimizer_hooks.py -k migrate_checkpoint_keys`.

# %% tags=["exercise"]
# Exercise: migrate_checkpoint_keys — write your code in this cell.


def migrate_checkpoint_keys(module, renames):
    """Let checkpoints that use old key names load into `module`.

    `renames` maps old keys to new keys, both local to `module` (as in `module.state_dict()`),
    such as {"fc.weight": "classifier.weight"}. Registers a load_state_dict pre-hook on `module`
    that, each time `module` is loaded (alone, or inside a bigger model at some `prefix`), moves
    every present `prefix + old` key of the state dict to `prefix + new`, editing the dict in
    place: the old key is removed. When the dict holds both keys, the old key's value replaces
    the new key's. Absent old keys are skipped; other keys are left alone. Each call registers a
    hook of its own: two calls on one module (with two sets of renames) both apply.
    Returns the RemovableHandle of the hook.
    """
    # BEGIN SOLUTION
    def rename(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
               error_msgs):
        for old, new in renames.items():
            if prefix + old in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)

    return module.register_load_state_dict_pre_hook(rename)
    # END SOLUTION


# %%
check(migrate_checkpoint_keys)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# A load pre-hook runs before `module` copies its parameters out of the state dict. There, move
# each old key to its new name. The keys in the dict are full keys: the module's own keys start
# with the `prefix` the hook receives.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `module.register_load_state_dict_pre_hook(hook)` returns the handle; the hook is called as
# `hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
# error_msgs)`. `state_dict[key_b] = state_dict.pop(key_a)` moves an entry in place.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# def rename(module, state_dict, prefix, *rest):
#     for old, new in renames.items():
#         if ... in state_dict:       # the full old key: prefix + old
#             ...                     # move it to the full new key
# ```
#
# Register `rename` on `module` and return the handle. Don't return anything from `rename`.
#
# </details>

# %% [markdown]
# Your function at work: an old encoder checkpoint, saved when the encoder's layers were called
# `fc` and `bn`, loaded into a new model where the renamed encoder sits under `"encoder."` next to
# a decoder that has its own `fc`. Once `migrate_checkpoint_keys` is done, the cell prints a load
# with no missing and no unexpected key, and then a checkpoint that holds both names of the
# classifier's weight (5.0 under the old key, 0.0 under the new one) loading the old key's 5.0.

# %%
class OldEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)


class NewEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.classifier = nn.Linear(4, 3)
        self.norm = nn.BatchNorm1d(3)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)


class Autoencoder(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = Decoder()


with try_it():
    torch.manual_seed(1)
    old_model = Autoencoder(OldEncoder())
    checkpoint = old_model.state_dict()
    print("old keys:", list(checkpoint))
    new_model = Autoencoder(NewEncoder())
    renames = {f"fc.{name}": f"classifier.{name}" for name in ("weight", "bias")}
    renames.update({f"bn.{name}": f"norm.{name}"
                    for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")})
    handle = migrate_checkpoint_keys(new_model.encoder, renames)
    print(new_model.load_state_dict(checkpoint))
    assert torch.equal(new_model.encoder.classifier.weight, old_model.encoder.fc.weight)
    assert torch.equal(new_model.decoder.fc.weight, old_model.decoder.fc.weight)
    both = dict(new_model.state_dict())
    both["encoder.classifier.weight"] = torch.zeros(3, 4)
    both["encoder.fc.weight"] = torch.full((3, 4), 5.0)
    print("both keys:", new_model.load_state_dict(both), "| classifier.weight is now",
          new_model.encoder.classifier.weight.unique().tolist())
    assert new_model.encoder.classifier.weight.unique().tolist() == [5.0]
    handle.remove()

# %% [markdown]
# ## Optimizer step hooks
#
# An optimizer calls its **step pre-hooks** just before `step()` runs and its **step post-hooks**
# just after, each as `hook(optimizer, args, kwargs)`. `args` and `kwargs` are the arguments of
# the `step` call *including the optimizer itself*: `optimizer.step()` gives `args == (optimizer,)`
# and `kwargs == {}`; `optimizer.step(closure)` gives a pair. Register them with
# `optimizer.register_step_pre_hook(hook)` and `optimizer.register_step_post_hook(hook)`.
#
# `register_optimizer_step_pre_hook(hook)` and `register_optimizer_step_post_hook(hook)`, from the
# module `torch.optim.optimizer`, register **global** hooks, called for every optimizer in the
# program. The order around one step, whatever the order of registration: global pre-hooks, the
# optimizer's pre-hooks, the step, the optimizer's post-hooks, global post-hooks. (The cell below
# registers them in the opposite order.)
#
# Import them with `from torch.optim.optimizer import ...`: on torch 2.13 the package `torch.optim`
# deletes its attribute `optimizer`, so `torch.optim.optimizer.register_optimizer_step_pre_hook`
# raises `AttributeError`, even after `import torch.optim.optimizer`.

# %%
import torch.optim.optimizer  # loads the module, yet torch.optim gets no attribute for it

print("hasattr(torch.optim, 'optimizer'):", hasattr(torch.optim, "optimizer"))
assert not hasattr(torch.optim, "optimizer")
try:
    torch.optim.optimizer.register_optimizer_step_pre_hook
    raise AssertionError("expected an AttributeError")
except AttributeError as error:
    print("torch.optim.optimizer.register_optimizer_step_pre_hook: AttributeError:", error)
    assert str(error) == "module 'torch.optim' has no attribute 'optimizer'"

torch.manual_seed(0)
layer = nn.Linear(3, 1)
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
calls = []


def recorder(label):
    def hook(opt, args, kwargs):
        calls.append((label, opt is optimizer, args, kwargs))
    return hook


handles = [
    optimizer.register_step_post_hook(recorder("optimizer post")),
    register_optimizer_step_post_hook(recorder("global post")),
    optimizer.register_step_pre_hook(recorder("optimizer pre")),
    register_optimizer_step_pre_hook(recorder("global pre")),
]
layer(torch.randn(4, 3)).sum().backward()
optimizer.step()
for label, is_optimizer, args, kwargs in calls:
    print(f"{label:15} opt is optimizer: {is_optimizer}  args == (optimizer,): {args == (optimizer,)}  "
          f"kwargs: {kwargs}")
assert [call[0] for call in calls] == ["global pre", "optimizer pre", "optimizer post", "global post"]
assert all(call[1] and call[2] == (optimizer,) and call[3] == {} for call in calls)
calls.clear()
optimizer.step(lambda: None)
print("step(closure): args has length", len(calls[0][2]))
assert len(calls[0][2]) == 2 and calls[0][2][0] is optimizer
for handle in handles:
    handle.remove()

# %% [markdown]
# The post-hook runs after the parameters have changed; the pre-hook still sees the old values.
# A step post-hook's return is ignored. A step pre-hook may return `None` or a new
# `(args, kwargs)` pair, which `step` is then called with (below, a closure that SGD runs; a global
# pre-hook's return counts the same way). Torch checks only that the return is a tuple of two
# items: anything else (`5`, a list `[args, kwargs]`, a tuple of three) raises `RuntimeError`. A
# tuple of two that is not `(a tuple of arguments, a dict of keyword arguments)` passes that check
# and fails only when `step` is called with it: `(1, 2)` raises `TypeError` (`argument after **
# must be a mapping, not int`).

# %%
before_after = {}
layer = nn.Linear(3, 1)
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
layer(torch.randn(4, 3)).sum().backward()
start = layer.weight.detach().clone()
with optimizer.register_step_pre_hook(lambda opt, args, kwargs: before_after.update(pre=layer.weight.detach().clone())), \
        optimizer.register_step_post_hook(lambda opt, args, kwargs: before_after.update(post=layer.weight.detach().clone())):
    optimizer.step()
print("pre-hook saw the old weight:", torch.equal(before_after["pre"], start),
      "| post-hook saw the new one:", torch.equal(before_after["post"], start - 0.1 * layer.weight.grad))
assert torch.equal(before_after["pre"], start)
assert torch.allclose(before_after["post"], start - 0.1 * layer.weight.grad)

start = layer.weight.detach().clone()
with optimizer.register_step_post_hook(lambda opt, args, kwargs: "ignored"):
    optimizer.step()
print("a post-hook returning a string: the step ran normally:",
      torch.allclose(layer.weight, start - 0.1 * layer.weight.grad))
assert torch.allclose(layer.weight, start - 0.1 * layer.weight.grad)

ran = []


def add_closure(opt, args, kwargs):
    return args, {"closure": lambda: ran.append("closure")}


with optimizer.register_step_pre_hook(add_closure):
    optimizer.step()
print("step() called with the pre-hook's kwargs; the closure ran:", ran)
assert ran == ["closure"]
with register_optimizer_step_pre_hook(add_closure):  # a global pre-hook's return is used the same way
    optimizer.step()
print("the same from a global pre-hook:", ran)
assert ran == ["closure", "closure"]

returns = {"5": 5, "a list [args, kwargs]": [(optimizer,), {}], "a tuple of three": ((optimizer,), {}, None)}
for label, returned in returns.items():
    with optimizer.register_step_pre_hook(lambda opt, args, kwargs: returned):
        try:
            optimizer.step()
            raise AssertionError("expected a RuntimeError")
        except RuntimeError as error:
            print(f"a pre-hook returning {label}: RuntimeError: ... must return None or a tuple of (new_args, "
                  "new_kwargs), but got ...")
            assert "must return None or a tuple of (new_args, new_kwargs), but got" in str(error)

with optimizer.register_step_pre_hook(lambda opt, args, kwargs: (1, 2)):
    try:
        optimizer.step()
        raise AssertionError("expected a TypeError")
    except TypeError as error:
        print("a pre-hook returning (1, 2): TypeError:", error)
        assert str(error).endswith("argument after ** must be a mapping, not int")

# %% [markdown]
# ## Exercise 2: `attach_weight_ema` · medium · about 25 min
#
# An exponential moving average (EMA) of the weights is a smoothed copy of the model that many
# training recipes evaluate instead of the raw weights. After every optimizer step each average
# moves a little towards the new weight:
#
# $$\text{ema} \leftarrow \text{decay}\cdot\text{ema} + (1-\text{decay})\cdot\text{param}$$
#
# Write `attach_weight_ema(model, optimizer, decay)`. It returns `(ema, handle)`:
#
# - `ema` is a dict from each name of `model.named_parameters()` to a tensor: at attach time a copy
#   of that parameter's value (not the parameter itself, and not requiring grad). Frozen
#   parameters (`requires_grad=False`) have an entry too; buffers, such as BatchNorm's running
#   statistics, have none (they are not parameters); a parameter reachable under two names (tied
#   weights) has one entry, under the name `named_parameters()` gives it;
# - after each `optimizer.step()`, every entry is updated with the formula above, from the
#   parameter's value after the step; entries are plain tensors without grad or graph. That
#   includes the entries of parameters that got no gradient in that step, or that are in no
#   parameter group (frozen ones): the average still moves toward their value, which it lags
#   behind. (A frozen parameter that nothing changes keeps its value, so its entry stays at that
#   value.) The hook only reads the parameters: it never changes them;
# - `handle` is the handle of a step post-hook registered on `optimizer`; once it is removed, steps
#   no longer change `ema`;
# - each call makes an `ema` of its own: two averages, of two models or of one model with two
#   decays, can run at once.
#
# It must work for any `torch.optim.Optimizer`, with all of its parameter groups.
#
# Traps: a step pre-hook (the average then lags one step behind); `ema` entries that are the
# parameters themselves (no copy); `decay` and `1 - decay` swapped; averages that keep autograd
# history; a hook on the model (a forward hook) instead of the optimizer; a global hook that every
# optimizer in the program would call; only the first parameter group; updating only the
# parameters that have a gradient, or only the optimizer's; `model.state_dict()` instead of
# `model.named_parameters()` (it holds the buffers too, and, as lesson 09 showed, a tied weight
# under both names); computing the SGD step yourself instead of reading the value after the step;
# one `ema` dict (or `decay`) kept at module level or on the optimizer, which the next call replaces.
#
# Check: run `check(attach_weight_ema)` below, or
# `pytest tests/test_10_state_dict_and_optimizer_hooks.py -k attach_weight_ema`.

# %% tags=["exercise"]
# Exercise: attach_weight_ema — write your code in this cell.
import torch


def attach_weight_ema(model, optimizer, decay):
    """Keep an exponential moving average of the parameters of `model`.

    Returns `(ema, handle)`. `ema` maps each name of `model.named_parameters()` (frozen ones
    included, buffers not, a tied parameter once) to a tensor that starts as a copy of the
    parameter's value (no grad). A step post-hook registered on `optimizer` (whose handle is
    `handle`) updates every entry after each `optimizer.step()`, also those of parameters that
    got no gradient or are in no parameter group: ema = decay * ema + (1 - decay) * parameter
    (its value after the step), without autograd, leaving the parameters unchanged. It works for
    any `torch.optim.Optimizer`, with all of its parameter groups. Each call makes an `ema` of its
    own, so that two averages (of two models, or of one model with two decays) can run at once.
    """
    # BEGIN SOLUTION
    parameters = dict(model.named_parameters())
    ema = {name: parameter.detach().clone() for name, parameter in parameters.items()}

    @torch.no_grad()
    def update(optimizer, args, kwargs):
        for name, parameter in parameters.items():
            ema[name].mul_(decay).add_(parameter, alpha=1 - decay)

    return ema, optimizer.register_step_post_hook(update)
    # END SOLUTION


# %%
check(attach_weight_ema)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Copy every parameter once, when attaching. Then, after each step (a step *post*-hook on the
# optimizer), move each copy towards its parameter's new value. Keep the parameters themselves
# (`dict(model.named_parameters())`) so the hook can read them.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `optimizer.register_step_post_hook(hook)` returns the handle; `hook(optimizer, args, kwargs)`.
# `parameter.detach().clone()` copies a value without grad. Inside `with torch.no_grad():`,
# `ema[name].mul_(decay).add_(parameter, alpha=1 - decay)` updates in place without a graph.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# parameters = dict(model.named_parameters())
# ema = {name: ... for name, p in parameters.items()}   # copies
#
# def update(optimizer, args, kwargs):
#     with torch.no_grad():
#         for name, p in parameters.items():
#             ...                                      # decay * ema + (1 - decay) * p
# ```
#
# Register `update` as a step post-hook on `optimizer`; return `ema` and the handle.
#
# </details>

# %% [markdown]
# Your function at work: a weight trained by SGD on noisy targets jumps around its best value; its
# average, updated by your hook after each step, is smoother. It starts from the weight's value at
# attach time, so in the first steps it trails behind the weight. Once `attach_weight_ema` is
# done, the cell prints how far each moved over the last 40 steps (the average less), the first
# five values of both, and draws the two paths.

# %%
with try_it():
    torch.manual_seed(0)
    layer = nn.Linear(1, 1, bias=False)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.3)
    ema, handle = attach_weight_ema(layer, optimizer, decay=0.9)
    raw_path, ema_path = [], []
    for step in range(60):
        x = torch.randn(8, 1)
        target = 2.0 * x + 0.8 * torch.randn(8, 1)  # the best weight is 2
        optimizer.zero_grad()
        ((layer(x) - target) ** 2).mean().backward()
        optimizer.step()
        raw_path.append(layer.weight.item())
        ema_path.append(ema["weight"].item())
    handle.remove()
    jumps = lambda path: sum(abs(b - a) for a, b in zip(path[20:], path[21:]))
    print(f"total movement over the last 40 steps: weight {jumps(raw_path):.2f}, average {jumps(ema_path):.2f}")
    assert jumps(ema_path) < jumps(raw_path)
    print("first 5 steps, weight: ", [round(value, 2) for value in raw_path[:5]])
    print("first 5 steps, average:", [round(value, 2) for value in ema_path[:5]], "(it trails behind)")
    assert all(average < weight for average, weight in zip(ema_path[:10], raw_path[:10]))
    plt.figure(figsize=(6, 2.5))
    plt.plot(raw_path, label="weight after each step")
    plt.plot(ema_path, label="its EMA (decay 0.9)")
    plt.axhline(2.0, color="gray", linestyle=":", label="best weight")
    plt.xlabel("optimizer step")
    plt.ylabel("value of the weight")
    plt.title("A noisy weight and its EMA, updated by a step post-hook")
    plt.legend()
    plt.show()

# %% [markdown]
# Frozen parameters and buffers: below, a frozen BatchNorm (its weight and bias do not require
# grad, and the optimizer holds only the Linear's parameters). Once `attach_weight_ema` is done,
# the cell shows: its weight and bias get entries that stay at their value; its running
# statistics are buffers, which `named_parameters()` does not list, so `ema` has no entry for
# them, although the forward pass changed them. Then a step in which the Linear's weight gets no
# gradient: SGD leaves the weight as it was, and its entry still moves toward it, the distance
# shrinking by the factor `decay` (0.9). (The loss is not a plain sum of BatchNorm's output: in
# training mode that sum does not depend on the Linear's weight at all, as the first lines show.)

# %%
probe = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
plain_sum_grad = torch.autograd.grad(probe(torch.randn(8, 3)).sum(), probe[0].weight)[0]
print(f"gradient of a plain sum of BatchNorm's output w.r.t. the Linear's weight: at most "
      f"{plain_sum_grad.abs().max().item():.1e} (0 up to rounding)")
assert plain_sum_grad.abs().max() < 1e-5

with try_it():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    net[1].requires_grad_(False)
    optimizer = torch.optim.SGD(net[0].parameters(), lr=0.1)
    ema, handle = attach_weight_ema(net, optimizer, decay=0.9)
    mean_before, linear_entry_before = net[1].running_mean.clone(), ema["0.weight"].clone()
    (net(torch.randn(8, 3)) * torch.randn(8, 3)).sum().backward()  # not a plain sum: see the first lines
    optimizer.step()
    moved = (ema["0.weight"] - linear_entry_before).abs().max().item()
    print("buffers:", [name for name, _ in net.named_buffers()])
    print("ema keys:", list(ema))
    print("the forward pass changed running_mean:", not torch.equal(net[1].running_mean, mean_before))
    print("the frozen weight's entry kept its value:", torch.allclose(ema["1.weight"], net[1].weight))
    print(f"the Linear's weight entry moved by up to {moved:.4f}")
    assert list(ema) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert not torch.equal(net[1].running_mean, mean_before)
    assert torch.allclose(ema["1.weight"], net[1].weight) and torch.allclose(ema["1.bias"], net[1].bias)
    assert moved > 1e-3

    weight_before = net[0].weight.detach().clone()
    gap_before = (ema["0.weight"] - net[0].weight).abs().max().item()
    optimizer.zero_grad()  # every .grad is None now
    net[0].bias.grad = torch.ones_like(net[0].bias)  # a gradient for the bias only
    optimizer.step()
    handle.remove()
    gap_after = (ema["0.weight"] - net[0].weight).abs().max().item()
    print(f"a step without a gradient for the weight: the weight stayed as it was: "
          f"{torch.equal(net[0].weight, weight_before)}; its entry's distance to it went from {gap_before:.5f} to "
          f"{gap_after:.5f} (x {gap_after / gap_before:.3f})")
    assert torch.equal(net[0].weight, weight_before) and gap_before > 1e-3
    assert abs(gap_after / gap_before - 0.9) < 1e-4

# %% [markdown]
# ## The optimizer's own state-dict hooks
#
# An optimizer has a `state_dict()` too (its per-parameter state, such as Adam's moving averages,
# and its `param_groups`), with four hooks of its own. Their signatures differ from a module's:
#
# | Hook | Called as | Its return |
# |---|---|---|
# | `register_state_dict_pre_hook` | `hook(optimizer)` | ignored |
# | `register_state_dict_post_hook` | `hook(optimizer, state_dict)` | a dict replaces the state dict; `None` keeps it (edited in place) |
# | `register_load_state_dict_pre_hook` | `hook(optimizer, state_dict)` | a dict replaces the dict to load |
# | `register_load_state_dict_post_hook` | `hook(optimizer)` | ignored |
#
# So, unlike a module's load pre-hook, an optimizer's load pre-hook *may* return a new dict. The
# cell shows each call and both kinds of return.

# %%
torch.manual_seed(0)
layer = nn.Linear(3, 1)
adam = torch.optim.Adam(layer.parameters(), lr=0.01)
layer(torch.randn(4, 3)).sum().backward()
adam.step()
calls = []


def tag_saved(opt, state_dict):
    calls.append("post")
    state_dict["saved_by"] = "lesson 10"  # edited in place, returns None


def set_lr(opt, state_dict):
    calls.append("load pre")
    changed = dict(state_dict)
    changed.pop("saved_by")
    changed["param_groups"] = [dict(group, lr=0.5) for group in state_dict["param_groups"]]
    return changed  # used instead of the dict given


def record(label):
    def hook(opt):
        calls.append(label)
        return "ignored"
    return hook


handles = [adam.register_state_dict_pre_hook(record("pre")),
           adam.register_state_dict_post_hook(tag_saved),
           adam.register_load_state_dict_pre_hook(set_lr),
           adam.register_load_state_dict_post_hook(record("load post"))]
saved = adam.state_dict()
print("saved keys:", list(saved))
adam.load_state_dict(saved)
print("calls:", calls, "| lr after loading:", adam.param_groups[0]["lr"])
assert list(saved) == ["state", "param_groups", "saved_by"]
assert calls == ["pre", "post", "load pre", "load post"] and adam.param_groups[0]["lr"] == 0.5
assert saved["param_groups"][0]["lr"] == 0.01  # the caller's dict is unchanged
for handle in handles:
    handle.remove()

with adam.register_state_dict_post_hook(lambda opt, state_dict: {"replaced": True}):
    print("a state_dict post-hook returning a dict:", adam.state_dict())
    assert adam.state_dict() == {"replaced": True}

# %% [markdown]
# ## Summary
#
# | Hook | Called as | Order | A return value |
# |---|---|---|---|
# | `module.register_state_dict_pre_hook` | `(module, prefix, keep_vars)` | parent first | ignored |
# | `module.register_state_dict_post_hook` | `(module, state_dict, prefix, local_metadata)` | child first | must be `None` (edit in place); no bound methods on 2.13 |
# | `module.register_load_state_dict_pre_hook` | `(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)` | parent first | ignored: edit the dict in place |
# | `module.register_load_state_dict_post_hook` | `(module, incompatible_keys)` | child first | must be `None`; may edit the key lists |
# | `optimizer.register_step_pre_hook` | `(optimizer, args, kwargs)`, `args == (optimizer,)` | after global pre-hooks | `None` or a new `(args, kwargs)` tuple; anything but a tuple of two raises `RuntimeError` |
# | `optimizer.register_step_post_hook` | `(optimizer, args, kwargs)` | before global post-hooks | ignored |
# | `register_optimizer_step_pre_hook` / `_post_hook` (from `torch.optim.optimizer`) | `(optimizer, args, kwargs)` | around every optimizer's own hooks | as the optimizer's |
#
# Every `register_*` call returns a handle; remove it when the hook's job is done.
#
# Next, lesson 11 puts the hooks of the course to work together: a training monitor.
