"""Checks for lesson 10, state-dict and optimizer hooks."""

import random

import torch
from torch import nn

from hooked.checks.check_api import LearnerCodeRaised, calling, check_of, fail
from hooked.checks import handles
from hooked.checks.handles import is_handle, single_handle
from hooked.checks.optimizers import PlainSGD
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints
from hooked.feedback.learner_tracebacks import learner_frame


# What single_handle recognizes, for the exercises that return one handle.
_ONE_HANDLE_MISTAKES = {slug: handles.MISTAKES[slug] for slug in ("handle-in-a-list", "no-handle")}


def _one_line(error):
    return " ".join(str(error).split())


# ---------------------------------------------------------------- migrate_checkpoint_keys

class _Inner(nn.Module):
    """Its child keeps the old name: its key `inner.<old>.weight` ends with the old key `<old>.weight`."""

    def __init__(self, width, child_name):
        super().__init__()
        self.add_module(child_name, nn.Linear(width, width))


class _Renamed(nn.Module):
    """The refactored module: its Linear and its BatchNorm under their new names."""

    def __init__(self, width, out, names):
        super().__init__()
        self.inner = _Inner(width, names.old_linear)
        self.add_module(names.new_linear, nn.Linear(width, out))
        self.add_module(names.new_norm, nn.BatchNorm1d(out))


class _Names:
    """Old and new child names of one case, and the renames they make (local keys)."""

    def __init__(self, old_linear, new_linear, old_norm, new_norm):
        self.old_linear, self.new_linear, self.old_norm, self.new_norm = old_linear, new_linear, old_norm, new_norm

    def renames(self):
        renames = {f"{self.old_linear}.{name}": f"{self.new_linear}.{name}" for name in ("weight", "bias")}
        if self.old_norm != self.new_norm:
            renames.update({f"{self.old_norm}.{name}": f"{self.new_norm}.{name}" for name in _BN_NAMES})
        return renames


_BN_NAMES = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")


class _Decoder(nn.Module):
    def __init__(self, width, child_name):
        super().__init__()
        self.add_module(child_name, nn.Linear(width, width))  # decoder.<old>.weight ends with an old key too


class _Parent(nn.Module):
    def __init__(self, module, width, names):
        super().__init__()
        self.stem = nn.Linear(width, width)
        self.encoder = module
        self.decoder = _Decoder(width, names.old_linear)


class _Deep(nn.Module):
    """The module three levels down, inside a ModuleList and a Sequential: blocks.1.0.encoder."""

    def __init__(self, module, width, names):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width), nn.Sequential(_Parent(module, width, names))])


def _randomized(module, seed):
    """Every parameter and buffer filled with values from the seed (BatchNorm's too)."""
    with torch.no_grad():
        for number, (name, tensor) in enumerate(module.state_dict(keep_vars=True).items()):
            if tensor.is_floating_point():
                tensor.copy_(random_tensor(seed + number, tuple(tensor.shape)).abs() + 0.1)
            else:
                tensor.fill_(seed + number)
    return module


def _old_checkpoint(source, prefix, renames, seed):
    """`source.state_dict()` with the migrated module's keys (under `prefix`) back at their old names,
    in a shuffled order; and the values each new key must receive."""
    new_to_old = {prefix + new: prefix + old for old, new in renames.items()}
    expected = {key: value.clone() for key, value in source.state_dict().items()}
    items = [(new_to_old.get(key, key), value) for key, value in expected.items()]
    random.Random(seed).shuffle(items)
    return dict(items), expected


def _module_and_models(seed, wrap, names):
    """The module, the model that is loaded (the module itself, or a model holding it), and another
    such model with other values, whose state dict is the checkpoint's."""
    rng = random.Random(seed)
    width, out = rng.randint(2, 5), rng.randint(2, 5)

    def make():
        module = _Renamed(width, out, names)
        return module, module if wrap is None else wrap(module, width, names)

    torch.manual_seed(seed)
    module, target = make()
    return module, target, _randomized(make()[1], seed + 100)


# (seed, how the module sits in the model that is loaded, its prefix there, the names that changed);
# in the last case the BatchNorm keeps its name, so only the Linear's keys are renamed.
_MIGRATE_CASES = (
    (201, None, "", _Names("fc", "classifier", "bn", "norm")),
    # "core" is made of letters of "encoder.": key.lstrip(prefix) eats it ("encoder.core.weight" -> "weight").
    (202, _Parent, "encoder.", _Names("core", "head", "bn", "bn_out")),
    (203, _Deep, "blocks.1.0.encoder.", _Names("fc", "out", "norm", "norm")),
)


def _call_migrate(migrate_checkpoint_keys, module, renames, where):
    call_text = f"migrate_checkpoint_keys(module, renames={renames}){where}"
    with calling(f"calling {call_text}"):
        handle = migrate_checkpoint_keys(module, dict(renames))
    single_handle(handle, call_text, "the RemovableHandle that register_load_state_dict_pre_hook returned")
    if not module._load_state_dict_pre_hooks:
        fail(f"{call_text} registered no load_state_dict pre-hook on the module; register one on the module "
             "itself with module.register_load_state_dict_pre_hook(hook).", "no-load-pre-hook")
    return handle, call_text


def _loads_alone(module, checkpoint, prefix):
    """Whether the module, loaded by itself (prefix ''), takes its part of the old checkpoint."""
    own = {key[len(prefix):]: value for key, value in checkpoint.items() if key.startswith(prefix)}
    try:
        result = module.load_state_dict(own, strict=False)
    except Exception:  # the learner's hook; the caller reports the nested failure instead
        return False
    return not result.missing_keys and not result.unexpected_keys


def _diagnose(result_keys, old_keys, new_keys, prefix, loading, loads_alone, earlier):
    missing, unexpected = result_keys
    said = f"{loading} left missing keys {missing} and unexpected keys {unexpected}."
    others = [key for key in missing if key not in new_keys]
    if others and not unexpected:
        fail(f"{said} The hook removed {others}, keys that `renames` does not list: leave every other key of the "
             "dict as it is.", "removes-other-keys")
    if others:
        fail(f"{said} {others} belong to the module but are not renamed keys: your hook renamed keys that only "
             "end with (or contain) an old name. Match the whole key, prefix + old, exactly.", "renames-by-suffix")
    if any(key in unexpected for key in old_keys) and not missing:
        fail(f"{said} The old keys are still in the dict beside the new ones: the hook copied them instead of "
             "moving them. Remove each old key (state_dict.pop(prefix + old)).", "copies-old-keys")
    elsewhere = [key for key in unexpected if key not in old_keys]
    if missing and elsewhere and not any(key in unexpected for key in old_keys):
        fail(f"{said} The old keys were moved, but to {elsewhere}, not to the new keys {missing}: move each "
             "prefix + old to exactly prefix + new, with the `prefix` the hook receives.", "moves-to-wrong-keys")
    if prefix and missing and not unexpected:
        fail(f"{said} The old keys were removed, but their values did not arrive at the new keys {missing}: the "
             f"module's keys start with {prefix!r} here, so the new key is prefix + new, not new alone.",
             "new-key-without-prefix")
    eaten = [key for key in old_keys if key.lstrip(prefix) != key[len(prefix):]]
    eaten_new = [new for old, new in zip(old_keys, new_keys) if old in eaten]
    if (prefix and eaten and len(eaten) < len(old_keys) and sorted(unexpected) == sorted(eaten)
            and sorted(missing) == sorted(eaten_new)):
        fail(f"{said} Exactly the old keys whose local part starts with letters of {prefix!r} were left: "
             f"{prefix!r} was removed from the keys with str.lstrip (or strip), which removes any of its characters "
             "from the start, not the prefix itself. Cut the prefix off with key[len(prefix):] after "
             "key.startswith(prefix), or build the full key prefix + old.", "lstrip-prefix")
    if prefix and any(key in unexpected for key in old_keys) and loads_alone():
        fail(f"{said} The module was loaded inside a bigger model, where its keys start with {prefix!r}: "
             f"the hook must rename prefix + old to prefix + new, with the `prefix` argument it receives "
             f"(it is '' only when the module itself is loaded, and it ends with its dot, {prefix!r}: the local key "
             "is key[len(prefix):]).", "ignores-prefix")
    if earlier:
        fail(f"{said} The same hook had renamed the keys {earlier}. It must rename at every load, with the "
             "`prefix` argument of that call (the same module may be loaded at another place): do not keep the "
             "prefix of an earlier call, and do not use up or change `renames`.", "renames-only-once")
    if any(key in unexpected for key in old_keys):
        fail(f"{said} The old keys of `renames` were not renamed in the dict the loader uses. Rename exactly the "
             "keys that `renames` lists, prefix + old to prefix + new. The hook's return value is ignored, and "
             "rebinding the name (state_dict = {...}) builds a dict nobody loads: edit the state_dict argument "
             "in place.", "old-keys-not-renamed")
    fail(f"{said} After the hook ran, every old key prefix + old must be at prefix + new and nothing else changed.",
         "wrong-keys-after-load")


def _absent_key_popped(error):
    """(slug, hint) for a KeyError in the learner's hook: it looked up an old key the dict does not hold."""
    if isinstance(error, KeyError) and learner_frame(error) is not None:
        return "pops-absent-key", ("The hook looked up a key the dict does not hold: an old key is absent from a "
                                   "checkpoint that already uses the new names (or holds only part of the module). "
                                   "Skip the renames whose old key is not in the dict: "
                                   "`if prefix + old in state_dict`.")
    return None


_MUTATED = ("The hook added and removed keys of state_dict while a loop went over it. Loop over a list of its keys "
            "(list(state_dict)), or over the items of `renames`, and change the dict inside that loop.")
# What an error raised while loading means for migrate_checkpoint_keys (torch_error_hints.calling_with_hints).
_LOAD_HINTS = (
    ("mutated during iteration", "changes-dict-while-iterating", _MUTATED),
    ("changed size during iteration", "changes-dict-while-iterating", _MUTATED),
    _absent_key_popped,
)


def _load(target, checkpoint, loading):
    """load_state_dict(strict=False); a size mismatch (a value at the wrong key) is reported as such."""
    try:
        with calling_with_hints(loading, _LOAD_HINTS):
            return target.load_state_dict(checkpoint, strict=False)
    except Exception as error:
        cause = getattr(error, "error", error)
        if isinstance(cause, RuntimeError) and "received <class 'NoneType'>" in str(cause):
            fail(f"{loading} raised RuntimeError: {_one_line(cause)[:300]} The hook stored None under a new key whose "
                 "old key was not in the dict: skip the renames whose old key is absent (leave the dict as it is for "
                 "them).", "none-for-absent-key")
        if isinstance(cause, RuntimeError) and "size mismatch" in str(cause):
            fail(f"{loading} raised RuntimeError: {_one_line(cause)} A tensor was moved to a key of another "
                 "shape: move each old key to the new key that `renames` gives for it, by name, whatever the order "
                 "of the keys in the checkpoint.", "values-at-wrong-keys")
        raise


def _check_loaded(target, expected, loading):
    loaded = target.state_dict()
    wrong = [key for key, value in expected.items() if not torch.equal(loaded[key], value)]
    if wrong:
        key = wrong[0]
        fail(f"{loading.rstrip(',')}: afterwards {key} holds {describe(loaded[key])}; the checkpoint had {describe(expected[key])} for it "
             f"(under its old name). Wrong keys: {wrong}. Move each old key's value to its own new key, by name, "
             "whatever the order of the keys in the checkpoint.", "values-at-wrong-keys")


class _Place:
    """One place the migrated module is loaded from: the model loaded (the module itself or a model
    holding it), the module's prefix there, and how the messages name that load."""

    def __init__(self, target, prefix, loaded):
        self.target, self.prefix, self.loaded = target, prefix, loaded

    def rekeyed(self, checkpoint, prefix):
        """`checkpoint`, whose keys start with `prefix`, with this place's prefix instead."""
        return {self.prefix + key[len(prefix):]: value for key, value in checkpoint.items() if key.startswith(prefix)}


def _other_place(module, place):
    """The same module loaded elsewhere: by itself if it sat in a model, else inside an nn.ModuleList."""
    if place.prefix:
        return _Place(module, "", "then the same module loaded by itself, module.load_state_dict")
    holder = nn.ModuleList([nn.ReLU(), module])
    return _Place(holder, "1.", "then the same module put at '1.' in an nn.ModuleList, holder.load_state_dict")


def _expect_migrated(module, place, checkpoint, expected, renames, call_text, earlier):
    """Load the old checkpoint at `place` with strict=False (judging what loaded) and then strict=True."""
    prefix = place.prefix
    old_keys, new_keys = [prefix + old for old in renames], [prefix + new for new in renames.values()]
    loading = (f"After {call_text}, {place.loaded}(old_checkpoint, strict=False), the old checkpoint having its "
               "keys in a shuffled order,")
    result = _load(place.target, checkpoint, loading)
    if result.missing_keys or result.unexpected_keys:
        _diagnose((result.missing_keys, result.unexpected_keys), old_keys, new_keys, prefix, loading,
                  lambda: _loads_alone(module, checkpoint, prefix), earlier)
    _check_loaded(place.target, expected, loading)
    strict_loading = f"After {call_text}, {place.loaded}(old_checkpoint) (strict=True)"
    try:
        with calling_with_hints(strict_loading, _LOAD_HINTS):
            place.target.load_state_dict(checkpoint)
    except LearnerCodeRaised as raised:
        if learner_frame(raised.error) is None and "Error(s) in loading state_dict" in str(raised.error):
            fail(f"{strict_loading} raised RuntimeError: {_one_line(raised.error)} The same load with strict=False "
                 "had just worked: the hook must rename at every load; do not use up or change `renames`, and "
                 "do not keep anything from an earlier call.", "renames-only-once")
        raise


def _expect_old_over_new(target, source, prefix, renames, seed, call_text, what):
    """A checkpoint that holds both the old and the new key of each rename loads the old key's value."""
    current = {key: value.clone() for key, value in _randomized(source, seed + 400).state_dict().items()}
    older = {key: value.clone() for key, value in _randomized(source, seed + 500).state_dict().items()}
    both, expected = dict(current), dict(current)
    for old, new in renames.items():
        both[prefix + old] = older[prefix + new]
        expected[prefix + new] = older[prefix + new]
    loading = (f"After {call_text}, {what}.load_state_dict(checkpoint, strict=False) with a checkpoint that holds "
               "both the old and the new key of each rename (other values under each),")
    result = _load(target, both, loading)
    old_keys = [prefix + old for old in renames]
    left = [key for key in result.unexpected_keys if key in old_keys]
    if left or result.missing_keys or result.unexpected_keys:
        fail(f"{loading} left missing keys {result.missing_keys} and unexpected keys {result.unexpected_keys}. "
             f"The old keys {left} stayed in the dict because the new key was there too: move every present old "
             "key to its new key all the same (its value replaces the new key's), so that no old key is left over.",
             "old-key-left-beside-new")
    loaded = target.state_dict()
    kept_new = [prefix + new for new in renames.values()
                if torch.equal(loaded[prefix + new], current[prefix + new])
                and not torch.equal(current[prefix + new], older[prefix + new])]
    old_of = {prefix + new: prefix + old for old, new in renames.items()}
    if kept_new:
        fail(f"{loading.rstrip(',')}: afterwards {kept_new[0]} holds the value the checkpoint had under the new key, "
             f"not the one under the old key {old_of[kept_new[0]]!r}. "
             "When both are present, the old key's value is moved over the new key's (pop the old key, and store its "
             "value under the new key, replacing what was there).", "keeps-new-over-old")
    _check_loaded(target, expected, loading)


def check_migrate_checkpoint_keys(migrate_checkpoint_keys):
    for seed, wrap, prefix, names in _MIGRATE_CASES:
        module, target, source = _module_and_models(seed, wrap, names)
        renames = names.renames()
        where = "" if not prefix else f", the module sitting at {prefix!r} in the model loaded"
        handle, call_text = _call_migrate(migrate_checkpoint_keys, module, renames, where)
        checkpoint, expected = _old_checkpoint(source, prefix, renames, seed)
        what = "module" if not prefix else "model"
        place = _Place(target, prefix, f"{what}.load_state_dict")
        _expect_migrated(module, place, checkpoint, expected, renames, call_text, earlier=None)

        # The same hook, the same module (its values scrambled), loaded at another prefix.
        other = _other_place(module, place)
        _randomized(module, seed + 200)
        _expect_migrated(module, other, other.rekeyed(checkpoint, prefix), other.rekeyed(expected, prefix), renames,
                         call_text, earlier=f"when the module was loaded at {prefix!r}")

        loading = f"After {call_text}, {what}.load_state_dict"
        _expect_new_names_unchanged(target, source, seed, loading)
        _expect_old_over_new(target, source, prefix, renames, seed, call_text, what)
        _expect_absent_and_unknown_keys(target, checkpoint, prefix, renames, loading)
        _expect_removed(module, target, handle, checkpoint, call_text, what)


def _expect_new_names_unchanged(target, source, seed, loading):
    """A checkpoint that already uses the new names loads unchanged."""
    current = _randomized(source, seed + 300).state_dict()
    loading_new = f"{loading}(new_checkpoint) with the new names only"
    result = _load(target, dict(current), loading_new)
    if result.missing_keys or result.unexpected_keys:
        fail(f"{loading_new} left missing keys {result.missing_keys} and unexpected keys "
             f"{result.unexpected_keys}; skip the renames whose old key is not in the dict.",
             "breaks-new-checkpoint")
    _check_loaded(target, current, loading_new)


def _expect_absent_and_unknown_keys(target, checkpoint, prefix, renames, loading):
    """A renamed entry under neither name is missing, and nothing else; a key that `renames` does not list and the
    module does not know stays, so that the load reports it."""
    dropped_old, dropped_new = next(iter(renames.items()))
    partial = {key: value for key, value in checkpoint.items() if key != prefix + dropped_old}
    loading_partial = (f"{loading}(checkpoint, strict=False) with a checkpoint that holds {prefix + dropped_old!r} "
                       "under neither name,")
    result = _load(target, partial, loading_partial)
    if result.missing_keys != [prefix + dropped_new] or result.unexpected_keys:
        fail(f"{loading_partial} left missing keys {result.missing_keys} and unexpected keys "
             f"{result.unexpected_keys}; expected only {prefix + dropped_new!r} missing. Skip the renames whose "
             "old key is absent: add no key for them.", "mishandles-absent-key")
    stale = prefix + "stale_scale"
    with_stale = dict(checkpoint, **{stale: torch.ones(1)})
    loading_stale = (f"{loading}(checkpoint, strict=False) with a checkpoint that also holds {stale!r}, a key of "
                     "the module that `renames` does not list,")
    result = _load(target, with_stale, loading_stale)
    if result.unexpected_keys != [stale] or result.missing_keys:
        fail(f"{loading_stale} left missing keys {result.missing_keys} and unexpected keys "
             f"{result.unexpected_keys}; expected only {stale!r} unexpected. The hook removed (or renamed) a key "
             "that `renames` does not list: leave every other key of the dict as it is, also the ones the module "
             "does not know, so that the load reports them.", "removes-other-keys")


def _expect_removed(module, target, handle, checkpoint, call_text, what):
    """handle.remove() takes the renaming away: no pre-hook left, and the old checkpoint's keys no longer found."""
    with calling(f"calling handle.remove() on the handle returned by {call_text}"):
        handle.remove()
    if module._load_state_dict_pre_hooks:
        fail(f"after handle.remove(), the module still has a load_state_dict pre-hook; return the handle of "
             "the hook you registered.", "hook-left-registered")
    result = target.load_state_dict(checkpoint, strict=False)
    if not result.missing_keys:
        fail(f"after handle.remove(), {what}.load_state_dict(old_checkpoint) still found every key: something "
             "other than the returned handle's hook keeps renaming them.", "renames-outside-hook")


# ---------------------------------------------------------------- attach_weight_ema

class _SignDescent(PlainSGD):
    """Another optimizer: p <- p - lr * sign(p.grad), to show the EMA works for any Optimizer."""

    direction = staticmethod(torch.sign)


def _model(rng):
    """Linear, BatchNorm1d (frozen: its weight and bias do not require grad; it has buffers), Tanh, Linear, Tanh,
    and a last Linear whose weight is tied to the Linear before (one parameter under two names, "3.weight" and
    "5.weight") and whose bias requires grad but is in no parameter group."""
    width, hidden = rng.randint(2, 5), rng.randint(2, 5)
    model = nn.Sequential(nn.Linear(width, hidden), nn.BatchNorm1d(hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                          nn.Tanh(), nn.Linear(hidden, hidden))
    model[1].requires_grad_(False)
    model[5].weight = model[3].weight
    return model


# In step 3 (every case has 3 steps or more), "0.bias" gets no gradient (the optimizer leaves it as it was) and the
# frozen "1.weight" is changed by hand before the step: every entry still follows its parameter.
_NO_GRAD_STEP, _NO_GRAD_NAME, _BY_HAND_NAME = 3, "0.bias", "1.weight"


def _two_groups(model, optimizer_class):
    """The first Linear in one parameter group, the second (whose weight is tied) in another, with other learning
    rates; the frozen BatchNorm and the last bias in none."""
    return optimizer_class([{"params": model[0].parameters(), "lr": 0.1},
                            {"params": model[3].parameters(), "lr": 0.3}], lr=0.05)


# (seed, optimizer, decay, steps)
_EMA_CASES = ((301, PlainSGD, 0.9, 4), (302, _SignDescent, 0.7, 3), (303, PlainSGD, 0.99, 3))


def _call_attach(attach_weight_ema, model, optimizer, decay):
    call_text = f"attach_weight_ema(model, optimizer, decay={decay}) with a {type(optimizer).__name__} optimizer"
    with calling(f"calling {call_text}"):
        result = attach_weight_ema(model, optimizer, decay)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{call_text} returned {describe(result)}; expected a pair (ema, handle).", "not-a-pair")
    ema, handle = result
    if not isinstance(ema, dict):
        fail(f"{call_text} returned {describe(ema)} as ema; expected a dict from parameter name to tensor.",
             "ema-not-a-dict")
    single_handle(handle, call_text, "the RemovableHandle that register_step_post_hook returned", returned_as="handle")
    return ema, handle, call_text


def _check_ema_keys(ema, model, optimizer, call_text):
    names = [name for name, _ in model.named_parameters()]
    keys = list(ema)
    if not all(isinstance(key, str) for key in keys):
        kinds = sorted({type(key).__name__ for key in keys})
        fail(f"{call_text} returned ema with keys of type {', '.join(kinds)}; expected the names of "
             f"model.named_parameters() (strings), {names}.", "keys-not-names")
    if sorted(keys) == sorted(names):
        return
    said = f"{call_text} returned ema with keys {sorted(keys)}; expected the names of model.named_parameters(), " \
           f"{sorted(names)}."
    buffers = [key for key in keys if key in dict(model.named_buffers())]
    if buffers:
        fail(f"{said} {buffers} are buffers (BatchNorm's running statistics), not parameters: ema averages the "
             "parameters only (model.named_parameters(), not model.state_dict()).", "averages-buffers")
    first_name = {id(p): name for name, p in model.named_parameters()}
    tied = [(key, first_name[id(p)]) for key, p in model.named_parameters(remove_duplicate=False)
            if key in keys and key not in names]
    if tied:
        fail(f"{said} {tied[0][0]!r} is the same parameter as {tied[0][1]!r} (tied weights: one parameter reachable "
             "under two names): it has one entry, under the name model.named_parameters() gives it. "
             "model.state_dict() and named_parameters(remove_duplicate=False) list it twice.", "tied-twice")
    frozen = [name for name, p in model.named_parameters() if not p.requires_grad and name not in keys]
    if frozen:
        fail(f"{said} {frozen} are frozen parameters (requires_grad=False, in no parameter group): they belong in "
             "ema too, as every name of model.named_parameters() does (their entries then keep their value).",
             "skips-frozen")
    in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
    outside = [name for name, p in model.named_parameters() if id(p) not in in_optimizer and name not in keys]
    if outside:
        fail(f"{said} {outside} are parameters of the model in no parameter group of the optimizer: they belong in "
             "ema too, as every name of model.named_parameters() does.", "skips-params-outside-optimizer")
    fail(said, "wrong-keys")


def _check_start(ema, parameters, call_text):
    for name, parameter in parameters.items():
        value = ema[name]
        if not isinstance(value, torch.Tensor):
            fail(f"Right after {call_text}, ema[{name!r}] is {describe(value)}; expected a tensor.",
                 "entry-not-a-tensor")
        if value is parameter or value.data_ptr() == parameter.data_ptr():
            fail(f"Right after {call_text}, ema[{name!r}] is the parameter itself (or shares its memory), so it "
                 "follows every step instead of averaging. Store a copy: parameter.detach().clone().",
                 "stores-the-parameter")
        if value.requires_grad:
            fail(f"Right after {call_text}, ema[{name!r}] requires grad; store a copy without autograd "
                 "(parameter.detach().clone()).", "start-requires-grad")
        if not close(value, parameter.detach()):
            fail(f"Right after {call_text}, ema[{name!r}] is {describe(value)}; expected a copy of the parameter's "
                 f"value at attach time, {describe(parameter.detach())}.", "wrong-start-value")


def _step(model, optimizer, seed, without_grad=()):
    """Gradients set by hand (the model never runs forward) on the optimizer's parameters, except those in
    `without_grad` (their .grad is None, so the step leaves them as they are), then one step. Returns the values
    the optimizer's step gives each of them, and those an SGD step would give (p - lr * grad)."""
    stepped, as_sgd = {}, {}
    for group in optimizer.param_groups:
        for number, parameter in enumerate(group["params"]):
            if any(parameter is other for other in without_grad):
                parameter.grad = None
                stepped[parameter] = as_sgd[parameter] = parameter.detach().clone()
                continue
            parameter.grad = random_tensor(seed + number + 10 * len(stepped), tuple(parameter.shape))
            stepped[parameter] = parameter.detach() - group["lr"] * optimizer.direction(parameter.grad)
            as_sgd[parameter] = parameter.detach() - group["lr"] * parameter.grad
    optimizer.step()
    return stepped, as_sgd


def _check_parameters(parameters, stepped, said):
    for name, parameter in parameters.items():
        expected = stepped.get(parameter)
        if expected is not None and not close(parameter.detach(), expected):
            fail(f"{said}, the parameter {name!r} is {describe(parameter.detach())}; the optimizer's step alone gives "
                 f"{describe(expected)}: your hook changed the model's parameters. Keep the average beside them, "
                 "in ema: update ema[name] from the parameter, never the parameter from ema.", "changes-parameters")


def _check_after_step(ema, parameters, references, groups, said, step, events=None, twice=None):
    expected, lagged, swapped, before, sgd = references
    twice = twice or {}
    events = events or {}
    for name, parameter in parameters.items():
        value = ema[name]
        if not isinstance(value, torch.Tensor):
            fail(f"{said}, ema[{name!r}] is {describe(value)}; expected a tensor.", "entry-not-a-tensor")
        if value.requires_grad or value.grad_fn is not None:
            fail(f"{said}, ema[{name!r}] requires grad (grad_fn {type(value.grad_fn).__name__}): the update keeps "
                 "an autograd graph that grows with every step. Update under torch.no_grad() (or from "
                 "parameter.detach()).", "update-keeps-graph")
        if close(value, expected[name]):
            continue
        if close(value, parameter.detach()) and not close(expected[name], parameter.detach()):
            fail(f"{said}, ema[{name!r}] equals the parameter's new value, {describe(value)}: it follows the "
                 "parameter instead of averaging. Expected decay * ema + (1 - decay) * parameter = "
                 f"{describe(expected[name])}.", "follows-parameter")
        if step == 1 and close(value, before[name]):
            continue  # after the first step, a pre-hook's average and no update look alike: the next step tells
        if close(value, before[name]) and name in events:
            fail(f"{said}, ema[{name!r}] did not change; expected {describe(expected[name])}. In this step "
                 f"{events[name]}: the average still moves toward the parameter's value, which it lags behind. "
                 "Update every entry after each step, whether or not its parameter has a gradient or is in the "
                 "optimizer.", "skips-params-without-grad")
        if close(value, lagged[name]):
            fail(f"{said}, ema[{name!r}] is {describe(value)}, the average of the parameter's values *before* "
                 f"each step; expected {describe(expected[name])}. The hook runs before the step: register it "
                 "with register_step_post_hook, which runs after the parameters changed.", "step-pre-hook")
        if name in sgd and close(value, sgd[name]) and not close(sgd[name], expected[name]):
            fail(f"{said}, ema[{name!r}] is {describe(value)}, the average an SGD step (p - lr * p.grad) would give; "
                 f"this optimizer is not SGD (it steps by lr * sign(grad)) and gives {describe(expected[name])}. "
                 "Do not compute the step yourself: read each parameter's value after the step, in a step "
                 "post-hook, so that it works for any optimizer.", "computes-sgd-step")
        if name in twice and close(value, twice[name][0]):
            fail(f"{said}, ema[{name!r}] is {describe(value)}, the entry updated twice in one step; expected "
                 f"{describe(expected[name])}. {name!r} is a tied parameter, also reachable as {twice[name][1]!r}: a "
                 "walk over each module's own parameters (or named_parameters(remove_duplicate=False)) meets it "
                 "twice. Update each entry once per step: loop over model.named_parameters().", "updates-tied-twice")
        if close(value, swapped[name]):
            fail(f"{said}, ema[{name!r}] is {describe(value)} = (1 - decay) * ema + decay * parameter; expected "
                 f"decay * ema + (1 - decay) * parameter = {describe(expected[name])}: decay and 1 - decay are "
                 "swapped.", "decay-swapped")
        if close(value, before[name]):
            group = groups[name]
            if group > 0 and all(close(ema[other], expected[other]) for other in parameters if groups[other] == 0):
                fail(f"{said}, ema[{name!r}] did not change, while the entries of parameter group 0 did. "
                     f"{name!r} is in parameter group {group}: update every parameter of the model (or of every "
                     "group in optimizer.param_groups), not only the first group's.", "first-group-only")
            fail(f"{said}, ema[{name!r}] did not change; expected {describe(expected[name])}. The update must run "
                 "after every optimizer.step(): register a step post-hook on the optimizer "
                 "(optimizer.register_step_post_hook). The checker steps without running the model, so a forward "
                 "hook never fires; and update the entries of the dict you returned.", "not-updated")
        fail(f"{said}, ema[{name!r}] is {describe(value)}; expected decay * ema + (1 - decay) * parameter = "
             f"{describe(expected[name])}.", "wrong-ema-value")


def _tied_names(model):
    """{second name: the name named_parameters() gives} of each parameter reachable under two names."""
    first = {id(p): name for name, p in model.named_parameters()}
    return {name: first[id(p)] for name, p in model.named_parameters(remove_duplicate=False) if first[id(p)] != name}


def _ema_copy(ema):
    return {name: value.detach().clone() for name, value in ema.items()}


_EMA_MISTAKES = {
    "not-a-pair": "returns something other than a pair (ema, handle)",
    "ema-not-a-dict": "returns something other than a dict as ema",
    "keys-not-names": "uses something other than the parameters' names (strings) as keys",
    "averages-buffers": "averages the buffers too (model.state_dict() instead of named_parameters())",
    "tied-twice": "gives a tied parameter two entries, under both of its names",
    "skips-frozen": "leaves out the frozen parameters",
    "skips-params-outside-optimizer": "leaves out the parameters in no parameter group of the optimizer",
    "wrong-keys": "has keys other than the names of model.named_parameters() that no diagnosis explains",
    "entry-not-a-tensor": "holds something other than a tensor in an entry",
    "stores-the-parameter": "stores the parameter itself (or a view sharing its memory) instead of a copy",
    "start-requires-grad": "starts from a copy that requires grad (no detach)",
    "wrong-start-value": "starts from another value than the parameter's at attach time",
    "changes-parameters": "changes the model's parameters (updates the parameter from ema)",
    "update-keeps-graph": "updates the average with autograd on, so its graph grows with every step",
    "follows-parameter": "copies the parameter's new value instead of averaging",
    "skips-params-without-grad": "updates only the entries whose parameter has a gradient or is in the optimizer",
    "step-pre-hook": "updates in a step pre-hook, before the parameters change, so the average lags one step",
    "computes-sgd-step": "computes an SGD step itself instead of reading the parameters after the step",
    "updates-tied-twice": "updates a tied parameter's entry twice per step",
    "decay-swapped": "swaps decay and 1 - decay",
    "first-group-only": "updates the parameters of the first parameter group only",
    "not-updated": "never updates the average after a step (no step post-hook on the optimizer)",
    "wrong-ema-value": "updates the average to values no diagnosis explains",
    "global-hook": "registers a global optimizer hook, which runs for every optimizer",
    "shared-ema-dict": "returns one dict kept at module level, which every call empties or refills",
    "second-call-not-own-pair": "a second call on the same model and optimizer does not return its own (ema, handle)",
    "shared-decay": "keeps the dict or decay in a global or attribute that the next call replaces",
    "wraps-step": "wraps or replaces optimizer.step instead of registering a step post-hook",
    "handle-not-of-hook": "returns a handle other than that of the hook that updates the average",
    "wrong-hook-signature": "defines the step post-hook with other parameters than (optimizer, args, kwargs)",
}


@check_of("attach_weight_ema", mistakes={**_ONE_HANDLE_MISTAKES, **_EMA_MISTAKES})
def check_attach_weight_ema(attach_weight_ema):
    for seed, optimizer_class, decay, steps in _EMA_CASES:
        torch.manual_seed(seed)
        model = _model(random.Random(seed))
        optimizer = _two_groups(model, optimizer_class)
        ema, handle, call_text = _call_attach(attach_weight_ema, model, optimizer, decay)
        _check_ema_keys(ema, model, optimizer, call_text)
        _check_start(ema, dict(model.named_parameters()), call_text)
        _check_ema_steps(ema, model, optimizer, decay, steps, seed, call_text)
        other_model, other = _check_other_optimizer(ema, seed, call_text)
        _check_second_average(attach_weight_ema, ema, other_model, other, decay, call_text)
        _check_two_averages_of_one_model(attach_weight_ema, ema, model, optimizer, decay, seed, call_text)
        _check_ema_handle(ema, handle, model, optimizer, seed, call_text)


def _hook_signature(error):
    """(slug, hint) for a hook that torch could not call with a step post-hook's arguments."""
    if isinstance(error, TypeError) and "positional argument" in str(error):
        return "wrong-hook-signature", ("The optimizer calls a step post-hook as hook(optimizer, args, kwargs): give "
                                        "the hook those three parameters.")
    return None


_STEP_HINTS = (_hook_signature,)


def _check_ema_steps(ema, model, optimizer, decay, steps, seed, call_text):
    """`steps` optimizer steps, each followed by the judgement of every entry against the average it should be,
    and against the averages that known mistakes give (lagging a step, decay swapped, an SGD step of its own)."""
    parameters = dict(model.named_parameters())
    groups = {name: next((index for index, group in enumerate(optimizer.param_groups)
                          if any(p is parameter for p in group["params"])), -1)
              for name, parameter in parameters.items()}  # -1: frozen, in no group
    expected = {name: p.detach().clone() for name, p in parameters.items()}
    lagged, swapped = dict(expected), dict(expected)
    for step in range(1, steps + 1):
        events, without_grad = _step_events(parameters, step)
        old_values = {name: p.detach().clone() for name, p in parameters.items()}
        before = _ema_copy(ema)
        with calling_with_hints(f"calling optimizer.step() (step {step}) after {call_text}", _STEP_HINTS):
            stepped, as_sgd = _step(model, optimizer, seed * 10 + step, without_grad)
        said = f"After {call_text} and {step} optimizer step{'s' if step > 1 else ''}"
        _check_parameters(parameters, stepped, said)
        for name, p in parameters.items():
            new = p.detach()
            expected[name] = decay * expected[name] + (1 - decay) * new
            lagged[name] = decay * lagged[name] + (1 - decay) * old_values[name]
            swapped[name] = (1 - decay) * swapped[name] + decay * new
        sgd = {name: decay * before[name] + (1 - decay) * as_sgd[p] for name, p in parameters.items() if p in as_sgd}
        twice = {name: (decay ** 2 * before[name] + (1 - decay ** 2) * parameters[name].detach(), other)
                 for other, name in _tied_names(model).items()}
        _check_after_step(ema, parameters, (expected, lagged, swapped, before, sgd), groups, said, step, events,
                          twice)


def _step_events(parameters, step):
    """In step _NO_GRAD_STEP, a frozen parameter changed by hand and one left without a gradient: ({name: what
    happened to it}, the parameters that get no gradient); in other steps, none."""
    if step != _NO_GRAD_STEP:
        return {}, ()
    with torch.no_grad():
        parameters[_BY_HAND_NAME].add_(0.5)
    events = {_BY_HAND_NAME: (f"the frozen {_BY_HAND_NAME!r} (requires_grad=False, in no parameter group) was changed "
                              "by hand just before the step"),
              _NO_GRAD_NAME: (f"{_NO_GRAD_NAME!r} got no gradient (its .grad was None), so the optimizer left it as "
                              "it was")}
    return events, (parameters[_NO_GRAD_NAME],)


def _check_other_optimizer(ema, seed, call_text):
    """Another optimizer of the program must not move this model's average. Returns that model and optimizer."""
    other_model = _model(random.Random(seed + 1))
    other = PlainSGD(other_model.parameters(), lr=0.1)
    before = _ema_copy(ema)
    with calling(f"stepping another optimizer after {call_text}"):
        _step(other_model, other, seed + 7)
    if any(not torch.equal(ema[name], before[name]) for name in ema):
        fail(f"After {call_text}, stepping another optimizer (of another model) changed ema: the hook is global "
             "(register_optimizer_step_post_hook runs for every optimizer). Register it on the optimizer given, "
             "with optimizer.register_step_post_hook.", "global-hook")
    return other_model, other


def _check_second_average(attach_weight_ema, ema, other_model, other, decay, call_text):
    """A second average, of another model, attached while the first is still attached: each keeps its own."""
    before = _ema_copy(ema)
    second_text = "a second attach_weight_ema(other_model, other_optimizer, decay) while the first is attached"
    with calling(f"calling {second_text}, after {call_text}"):
        second = attach_weight_ema(other_model, other, decay)
    second_ema = second[0] if isinstance(second, (tuple, list)) and len(second) == 2 else None
    if second_ema is ema or any(name not in ema or not torch.equal(ema[name], before[name]) for name in before):
        fail(f"After {call_text}, {second_text} changed the first ema (or returned the same dict): each call "
             "must make a dict of its own, in the function, not one kept at module level and emptied or "
             "refilled by each call.", "shared-ema-dict")
    if isinstance(second, (tuple, list)) and len(second) == 2 and is_handle(second[1]):
        second[1].remove()


def _check_two_averages_of_one_model(attach_weight_ema, ema, model, optimizer, decay, seed, call_text):
    """Two averages of one model, with two decays, on one optimizer: one step moves each by its own decay."""
    parameters = dict(model.named_parameters())
    other_decay = round(1 - (1 - decay) / 2, 4)
    same_text = (f"a second attach_weight_ema(model, optimizer, decay={other_decay}) on the same model and "
                 "optimizer, while the first is attached")
    with calling(f"calling {same_text}, after {call_text}"):
        second = attach_weight_ema(model, optimizer, other_decay)
    if (not isinstance(second, (tuple, list)) or len(second) != 2 or not isinstance(second[0], dict)
            or set(second[0]) != set(ema) or second[0] is ema):
        fail(f"After {call_text}, {same_text} returned {describe(second)}; expected its own (ema, handle) pair, "
             "with a new dict.", "second-call-not-own-pair")
    second_ema, second_handle = second
    starts, before = _ema_copy(second_ema), _ema_copy(ema)
    with calling(f"calling optimizer.step() after {same_text}"):
        _step(model, optimizer, seed * 10 + 8)
    for averages, rate, start, label in ((ema, decay, before, "first"), (second_ema, other_decay, starts, "second")):
        wrong = [name for name, p in parameters.items()
                 if not close(averages[name], rate * start[name] + (1 - rate) * p.detach())]
        if wrong:
            fail(f"After {call_text} and {same_text}, one optimizer step moved the {label} average's "
                 f"ema[{wrong[0]!r}] to {describe(averages[wrong[0]])}; expected "
                 f"{describe(rate * start[wrong[0]] + (1 - rate) * parameters[wrong[0]].detach())} = decay * ema + "
                 f"(1 - decay) * parameter with its own decay, {rate}. Each call keeps its own dict and its own "
                 "decay in its hook (a closure), not in a global or an attribute of the optimizer or model that "
                 "the next call replaces.", "shared-decay")
    if is_handle(second_handle):
        second_handle.remove()


def _check_ema_handle(ema, handle, model, optimizer, seed, call_text):
    """The handle is that of a step post-hook on the optimizer, and removing it stops the updates."""
    handle_id = getattr(handle, "id", None)
    if handle_id not in optimizer._optimizer_step_post_hooks and handle_id not in optimizer._optimizer_step_pre_hooks:
        # (A pre-hook's average lags one step, or computes the step itself: the value checks tell it.)
        wrapped = "step" in vars(optimizer)
        fail(f"After {call_text}, the handle returned is not that of a step post-hook registered on the optimizer "
             f"(optimizer._optimizer_step_post_hooks holds no hook under its id)"
             f"{'; optimizer.step was replaced by a function of yours' if wrapped else ''}. Register the update "
             "with optimizer.register_step_post_hook(hook) and return the handle it gives, instead of wrapping "
             "or replacing optimizer.step (which other code, or a second wrapper, may replace again).", "wraps-step")
    with calling(f"calling handle.remove() on the handle returned by {call_text}"):
        handle.remove()
    before = _ema_copy(ema)
    _step(model, optimizer, seed + 9)
    if any(not torch.equal(ema[name], before[name]) for name in ema):
        fail(f"After {call_text} and handle.remove(), an optimizer step still changed ema; return the handle of "
             "the hook that updates it.", "handle-not-of-hook")


def _check_two_calls(migrate_checkpoint_keys):
    """Two calls on one module, each with half of the renames: both hooks rename."""
    seed, wrap, prefix, names = _MIGRATE_CASES[0]
    module, target, source = _module_and_models(seed + 50, wrap, names)
    renames = names.renames()
    items = list(renames.items())
    halves = [dict(items[:len(items) // 2]), dict(items[len(items) // 2:])]
    text = (f"migrate_checkpoint_keys(module, {halves[0]}) and then migrate_checkpoint_keys(module, {halves[1]}) "
            "on the same module")
    handles = []
    for half in halves:
        with calling(f"calling {text}"):
            handles.append(migrate_checkpoint_keys(module, dict(half)))
    checkpoint, expected = _old_checkpoint(source, prefix, renames, seed + 50)
    loading = f"After {text}, module.load_state_dict(old_checkpoint, strict=False)"
    result = _load(target, checkpoint, loading)
    left = [key for key in result.unexpected_keys if key in renames]
    if result.missing_keys or result.unexpected_keys:
        first = [key for key in left if key in halves[0]]
        which = "the first call's" if first else "the second call's" if left else "some"
        fail(f"{loading} left missing keys {result.missing_keys} and unexpected keys {result.unexpected_keys}: "
             f"{which} renames were not applied. Each call registers a hook of its own, which keeps its own renames "
             "(in a closure): do not keep them on the module or in a global, and do not remove or replace the hook "
             "of an earlier call.", "renames-shared-between-calls")
    _check_loaded(target, expected, loading)
    for handle in handles:
        if is_handle(handle):
            handle.remove()


_MIGRATE_MISTAKES = {
    "no-load-pre-hook": "registers no load_state_dict pre-hook on the module",
    "removes-other-keys": "removes (or renames) keys of the dict that `renames` does not list",
    "renames-by-suffix": "renames keys that only end with (or contain) an old name, not prefix + old exactly",
    "copies-old-keys": "copies the old keys to the new ones instead of moving them",
    "moves-to-wrong-keys": "moves the old keys to keys other than prefix + new",
    "new-key-without-prefix": "stores the value under the new key without the prefix",
    "lstrip-prefix": "cuts the prefix off with str.lstrip (or strip), which removes characters, not the prefix",
    "ignores-prefix": "renames without the `prefix` of the load at hand (ignores it, keeps an earlier call's, or "
                      "cuts it wrongly)",
    "renames-only-once": "renames at the first load only (uses up or changes `renames`, or removes its hook)",
    "old-keys-not-renamed": "leaves the old keys of `renames` in the dict the loader uses (edits a copy, rebinds "
                            "the name, returns a new dict, or renames other keys)",
    "wrong-keys-after-load": "leaves keys missing or unexpected in a way no diagnosis explains",
    "none-for-absent-key": "stores None under a new key whose old key is not in the dict",
    "values-at-wrong-keys": "moves the values to the new keys by the order of the keys, not by name",
    "old-key-left-beside-new": "leaves an old key in the dict when its new key is there too",
    "keeps-new-over-old": "keeps the new key's value when both keys are present, instead of the old key's",
    "breaks-new-checkpoint": "changes a checkpoint that already uses the new names",
    "mishandles-absent-key": "adds or removes keys for a rename whose old key is absent",
    "hook-left-registered": "leaves a load_state_dict pre-hook registered whose handle it does not return",
    "renames-outside-hook": "renames the keys by something other than the hook of the returned handle",
    "renames-shared-between-calls": "keeps the renames on the module or in a global, so a second call's replace "
                                    "the first's",
    "changes-dict-while-iterating": "adds and removes keys of state_dict while looping over it",
    "pops-absent-key": "looks up (pops) an old key without testing that the dict holds it",
}


@check_of("migrate_checkpoint_keys", mistakes={**_ONE_HANDLE_MISTAKES, **_MIGRATE_MISTAKES})
def check_migrate_checkpoint_keys_all(migrate_checkpoint_keys):
    check_migrate_checkpoint_keys(migrate_checkpoint_keys)
    _check_two_calls(migrate_checkpoint_keys)
