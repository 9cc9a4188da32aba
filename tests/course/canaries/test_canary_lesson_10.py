"""Canaries of lesson 10 (state-dict and optimizer hooks): the bound-method bug of torch 2.13, what load
pre-hooks receive, what returns do, and where the global optimizer hooks are imported from."""

import functools
import importlib

import torch
from torch import nn

from canary_pins import canary, described, error_of


class _NoteWriter:
    def write(self, module, state_dict, prefix, local_metadata):
        state_dict[prefix + "note"] = torch.tensor(1.0)


@canary("on torch 2.13 register_state_dict_post_hook raises AttributeError \"'method' object has no attribute "
        "'_from_public_api'\" for a bound method, and registers nothing; functools.partial works, and a state_dict "
        "pre-hook takes a bound method",
        ("10", "What a return value does in a `state_dict` hook"), ("10", "Summary"))
def test_a_bound_method_cannot_be_a_state_dict_post_hook(pin):
    layer, writer = nn.Linear(3, 2), _NoteWriter()
    error = error_of(lambda: layer.register_state_dict_post_hook(writer.write))
    pin.holds(isinstance(error, AttributeError) and "'method' object has no attribute '_from_public_api'" in str(error),
              f"a bound method as a post-hook: {described(error)}")
    pin.holds(not layer._state_dict_hooks, f"left registered: {layer._state_dict_hooks}")
    with layer.register_state_dict_post_hook(functools.partial(_NoteWriter.write, writer)):
        pin.holds(list(layer.state_dict()) == ["weight", "bias", "note"], "functools.partial did not work")
    error = error_of(lambda: layer.register_state_dict_pre_hook(writer.write).remove())
    pin.holds(error is None, f"a bound method as a pre-hook: {described(error)}")


@canary("a state_dict post-hook that returns a value raises 'state_dict post-hook must return None'; a load "
        "post-hook that returns one raises an AssertionError ('are not expected to return new values')",
        ("10", "What a return value does in a `state_dict` hook"),
        ("10", "A load post-hook edits `incompatible_keys` in place"))
def test_state_dict_and_load_post_hooks_must_return_none(pin):
    layer = nn.Linear(3, 2)
    with layer.register_state_dict_post_hook(lambda module, state_dict, prefix, meta: {}):
        error = error_of(layer.state_dict)
    pin.holds(isinstance(error, RuntimeError) and str(error) == "state_dict post-hook must return None",
              described(error))
    with layer.register_load_state_dict_post_hook(lambda module, incompatible_keys: incompatible_keys):
        error = error_of(lambda: layer.load_state_dict(layer.state_dict()))
    pin.holds(isinstance(error, AssertionError) and "are not expected to return new values" in str(error),
              described(error))


@canary("on torch 2.13 a load pre-hook receives strict=True even when the caller passed strict=False",
        ("10", "`load_state_dict` hooks"))
def test_a_load_pre_hook_receives_strict_true_for_strict_false(pin):
    layer, strict_seen = nn.Linear(3, 2), []
    with layer.register_load_state_dict_pre_hook(lambda module, state_dict, prefix, meta, strict, *rest:
                                                 strict_seen.append(strict)):
        result = layer.load_state_dict(dict(layer.state_dict(), extra=torch.tensor(1.0)), strict=False)
    pin.holds(strict_seen == [True], f"strict received for strict=False: {strict_seen}")
    pin.holds(result.unexpected_keys == ["extra"], f"strict=False returned {result}")


@canary("a load pre-hook receives a copy of the caller's dict: an edit in place is what the module loads and the "
        "caller's dict stays as it was; rebinding the name or returning a new dict changes nothing",
        ("10", "A load pre-hook edits the dict in place"),
        ("10", "Exercise 1: `migrate_checkpoint_keys`"))
def test_a_load_pre_hook_edits_a_copy_in_place_and_its_return_is_ignored(pin):
    old_checkpoint = {"w": torch.ones(2, 3), "bias": torch.zeros(2)}

    def rename_in_place(module, state_dict, prefix, *rest):
        state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")

    def rename_by_returning(module, state_dict, prefix, *rest):
        return {key.replace("w", "weight"): value for key, value in state_dict.items()}

    layer = nn.Linear(3, 2)
    with layer.register_load_state_dict_pre_hook(rename_by_returning):
        error = error_of(lambda: layer.load_state_dict(old_checkpoint))
    pin.holds(isinstance(error, RuntimeError) and 'Missing key(s) in state_dict: "weight"' in str(error),
              f"a hook that returns a renamed dict: {described(error)}")
    with layer.register_load_state_dict_pre_hook(rename_in_place):
        error = error_of(lambda: layer.load_state_dict(old_checkpoint))
    pin.holds(error is None and torch.equal(layer.weight, torch.ones(2, 3)), f"an edit in place: {described(error)}")
    pin.holds(list(old_checkpoint) == ["w", "bias"], f"the caller's dict became {list(old_checkpoint)}")


@canary("on torch 2.13 the package torch.optim deletes its attribute optimizer, so "
        "torch.optim.optimizer.register_optimizer_step_pre_hook raises AttributeError \"module 'torch.optim' has no "
        "attribute 'optimizer'\", even after import torch.optim.optimizer; from torch.optim.optimizer import ... works",
        ("10", "Optimizer step hooks"))
def test_torch_optim_has_no_attribute_optimizer(pin):
    module = importlib.import_module("torch.optim.optimizer")
    pin.holds(not hasattr(torch.optim, "optimizer"), "torch.optim has an attribute optimizer now")
    pin.holds(hasattr(module, "register_optimizer_step_pre_hook") and hasattr(module, "register_optimizer_step_post_hook"),
              "torch.optim.optimizer has no register_optimizer_step_pre_hook / post_hook")


@canary("around one step: global pre-hooks, the optimizer's pre-hooks, the step, the optimizer's post-hooks, global "
        "post-hooks, whatever the order of registration; a step hook gets args == (optimizer,) and kwargs == {}",
        ("10", "Optimizer step hooks"),
        ("10", "Exercise 2: `attach_weight_ema`"))
def test_optimizer_step_hooks_run_global_first_and_global_last(pin):
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    layer, order, seen = nn.Linear(2, 1), [], []
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    layer(torch.randn(1, 2)).sum().backward()
    handles = [optimizer.register_step_post_hook(lambda opt, args, kwargs: order.append("own post")),
               optimizer.register_step_pre_hook(lambda opt, args, kwargs: order.append("own pre") or seen.append(
                   (args, kwargs)) and None),
               register_optimizer_step_post_hook(lambda opt, args, kwargs: order.append("global post")),
               register_optimizer_step_pre_hook(lambda opt, args, kwargs: order.append("global pre"))]
    try:
        optimizer.step()
    finally:
        for handle in handles:
            handle.remove()
    pin.holds(order == ["global pre", "own pre", "own post", "global post"], f"order: {order}")
    pin.holds(seen == [((optimizer,), {})], f"a step pre-hook got {seen}")


@canary("state_dict() calls a parent's pre-hook before its children's and its post-hook after theirs, with prefixes "
        "'', 'body.', 'body.fc.'; load_state_dict calls load pre-hooks parent first and load post-hooks child first",
        ("10", "`state_dict` hooks: what they receive and in which order they run"),
        ("10", "`load_state_dict` hooks"))
def test_state_dict_hooks_run_parent_first_and_post_hooks_child_first(pin):
    model = nn.Sequential()
    model.add_module("body", nn.Sequential())
    model.body.add_module("fc", nn.Linear(2, 2))
    calls, handles = [], []
    for name, module in model.named_modules():
        handles += [module.register_state_dict_pre_hook(lambda m, prefix, keep_vars, name=name: calls.append(
                        ("pre", name, prefix))),
                    module.register_state_dict_post_hook(lambda m, sd, prefix, meta, name=name: calls.append(
                        ("post", name, prefix))),
                    module.register_load_state_dict_pre_hook(lambda m, sd, prefix, *rest, name=name: calls.append(
                        ("load pre", name, prefix))),
                    module.register_load_state_dict_post_hook(lambda m, keys, name=name: calls.append(
                        ("load post", name, None)))]
    model.load_state_dict(model.state_dict())
    for handle in handles:
        handle.remove()
    pin.holds(calls == [("pre", "", ""), ("pre", "body", "body."), ("pre", "body.fc", "body.fc."),
                        ("post", "body.fc", "body.fc."), ("post", "body", "body."), ("post", "", ""),
                        ("load pre", "", ""), ("load pre", "body", "body."), ("load pre", "body.fc", "body.fc."),
                        ("load post", "body.fc", None), ("load post", "body", None), ("load post", "", None)],
              f"calls: {calls}")


@canary("an optimizer's state-dict hooks: pre-hook(optimizer) and load post-hook(optimizer) returns ignored; "
        "post-hook(optimizer, state_dict) may return a dict that replaces the state dict; unlike a module's, the load "
        "pre-hook(optimizer, state_dict) may return a dict that is loaded instead (the caller's dict unchanged)",
        ("10", "The optimizer's own state-dict hooks"))
def test_an_optimizers_state_dict_hooks_may_return_a_new_dict(pin):
    layer = nn.Linear(3, 1)
    adam = torch.optim.Adam(layer.parameters(), lr=0.01)
    layer(torch.randn(4, 3)).sum().backward()
    adam.step()
    calls = []

    def set_lr(optimizer, state_dict):
        calls.append("load pre")
        return dict(state_dict, param_groups=[dict(group, lr=0.5) for group in state_dict["param_groups"]])

    handles = [adam.register_state_dict_pre_hook(lambda optimizer: calls.append("pre") or "ignored"),
               adam.register_state_dict_post_hook(lambda optimizer, state_dict: calls.append("post")),
               adam.register_load_state_dict_pre_hook(set_lr),
               adam.register_load_state_dict_post_hook(lambda optimizer: calls.append("load post") or "ignored")]
    saved = adam.state_dict()
    adam.load_state_dict(saved)
    for handle in handles:
        handle.remove()
    pin.holds(calls == ["pre", "post", "load pre", "load post"], f"calls: {calls}")
    pin.holds(adam.param_groups[0]["lr"] == 0.5 and saved["param_groups"][0]["lr"] == 0.01,
              f"after a load pre-hook returned lr 0.5: the optimizer's lr {adam.param_groups[0]['lr']}, the caller's "
              f"dict's {saved['param_groups'][0]['lr']}")
    with adam.register_state_dict_post_hook(lambda optimizer, state_dict: {"replaced": True}):
        replaced = adam.state_dict()
    pin.holds(replaced == {"replaced": True}, f"a post-hook that returns a dict: state_dict() gave {list(replaced)}")


def _load_error(module, state_dict, *hooks):
    """The text of the RuntimeError a strict load_state_dict raises with `hooks` as load pre-hooks, or None."""
    for hook in hooks:
        module.register_load_state_dict_pre_hook(hook)
    error = error_of(lambda: module.load_state_dict(state_dict))
    return " ".join(str(error).split()) if isinstance(error, RuntimeError) else described(error)


def _rename_by_rebinding(module, state_dict, prefix, *rest):
    state_dict = {key.replace("w", "weight"): value for key, value in state_dict.items()}  # noqa: F841 (the trap)


@canary("a strict load_state_dict raises RuntimeError naming 'Unexpected key(s) in state_dict: \"extra\"' for a key "
        "the module lacks, and 'Missing key(s) in state_dict: \"weight\"' with 'Unexpected key(s) in state_dict: "
        "\"w\"' for an old checkpoint a pre-hook renamed only by rebinding its dict; without a load post-hook, "
        "'Unexpected key(s) in state_dict: \"note\"'",
        ("10", "`load_state_dict` hooks"), ("10", "A load pre-hook edits the dict in place"),
        ("10", "A load post-hook edits `incompatible_keys` in place"))
def test_load_state_dict_names_missing_and_unexpected_keys(pin):
    layer = nn.Linear(3, 2)
    text = _load_error(layer, dict(layer.state_dict(), extra=torch.tensor(1.0)))
    pin.holds('Unexpected key(s) in state_dict: "extra"' in text, text)
    text = _load_error(nn.Linear(3, 2), dict(layer.state_dict(), note=torch.tensor(1.0)))
    pin.holds('Unexpected key(s) in state_dict: "note"' in text, text)
    text = _load_error(nn.Linear(3, 2), {"w": torch.ones(2, 3), "bias": torch.zeros(2)}, _rename_by_rebinding)
    pin.holds('Missing key(s) in state_dict: "weight"' in text and 'Unexpected key(s) in state_dict: "w"' in text, text)


@canary("an optimizer step pre-hook that returns 5, a list or a tuple of three makes step() raise RuntimeError with "
        "'must return None or a tuple of (new_args, new_kwargs), but got' in its text; returning (1, 2) raises "
        "TypeError ending 'argument after ** must be a mapping, not int'",
        ("10", "Optimizer step hooks"))
def test_a_step_pre_hook_must_return_none_or_a_pair(pin):
    parameter = nn.Parameter(torch.ones(2))
    parameter.grad = torch.ones(2)
    optimizer = torch.optim.SGD([parameter], lr=0.1)
    for returned in (5, [(optimizer,), {}], ((optimizer,), {}, None)):
        with optimizer.register_step_pre_hook(lambda opt, args, kwargs: returned):
            error = error_of(optimizer.step)
        pin.holds(isinstance(error, RuntimeError)
                  and "must return None or a tuple of (new_args, new_kwargs), but got" in str(error),
                  f"returning {returned!r}: {described(error)}")
    with optimizer.register_step_pre_hook(lambda opt, args, kwargs: (1, 2)):
        error = error_of(optimizer.step)
    pin.holds(isinstance(error, TypeError) and str(error).endswith("argument after ** must be a mapping, not int"),
              f"returning (1, 2): {described(error)}")
