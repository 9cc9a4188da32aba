"""Checks for lesson 04, forward hooks."""

import collections
import copy
import math
import random
from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from hooked.checks.check_api import calling, check_of, fail
from hooked.checks.event_predictions import END, EventPrediction, Rule, prediction_check
from hooked.checks.handles import (MISTAKES as HANDLE_MISTAKES, check_handles_registered, handle_list,
                                   remove_handles, single_handle)
from hooked.checks.hooks_left import global_hooks, global_hooks_added, modules_with_hooks
from hooked.checks.seeding import seeded
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints


# ---------------------------------------------------------------- shared helpers

_HANDLE = "the RemovableHandle that register_forward_hook returned"
_HANDLES = "the RemovableHandles that register_forward_hook returned"


def _hooked_names(model):
    """The names of the modules holding a forward hook (a module reused under two names: both)."""
    return modules_with_hooks(model, ("forward",), remove_duplicate=False)


def _unpack_pair(result, call_text, what):
    """The two values of `(first, handles)`, or a failure saying what came back."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{call_text} returned {describe(result)}; expected a pair {what}.", "not-a-pair")
    return result


def _check_fresh(store, what, call_text):
    """Before any forward pass, `store` (the dict returned) must hold nothing recorded."""
    if not isinstance(store, Mapping):
        return
    held = [key for key, value in store.items() if value is not None and not (isinstance(value, list) and not value)]
    if held:
        fail(f"Right after {call_text}, before any forward pass, {what} already holds values under {held[:6]}: a "
             "dict kept between calls (at module level, or a default argument such as stats={}) also holds what "
             "earlier calls recorded. Make a new dict in each call.", "dict-kept-between-calls")


def _check_removal(model, handles, call_text):
    """Removing every handle returned leaves no forward hook on the model."""
    remove_handles(handles, f"removing every handle returned by {call_text}")
    left = _hooked_names(model)
    if left:
        fail(f"after removing every handle returned by {call_text}, forward hooks were still registered on "
             f"{left}. Return the handle of every hook you registered.", "handle-not-returned")


class _ReferenceOutputs:
    """Forward hooks on a copy of the model, recording what each module really produced."""

    def __init__(self, model, wanted, every_name=False):
        """`every_name`: a module reachable under two names is recorded under each (else once)."""
        self.model = copy.deepcopy(model)
        self.records = collections.defaultdict(list)
        for name, module in self.model.named_modules(remove_duplicate=not every_name):
            if wanted(name, module):
                module.register_forward_hook(self._recorder(name))

    def _recorder(self, name):
        def hook(module, args, output):
            self.records[name].append((args[0].detach().clone(), output.detach().clone()))
        return hook

    def __call__(self, x):
        return self.model(x)


_DETACHED_IN_PLACE = (" The values are right but the graph is gone: a hook returned a detached value, or detached "
                      "the output itself in place (output.detach_(), output.requires_grad_(False)). Take a "
                      "detached copy, output.detach(), and leave the output as it is.")


# ---------------------------------------------------------------- capture_activations

class _Encoded(nn.Module):
    """Named children: an encoder ending in tanh, an in-place ReLU after it, a head."""

    def __init__(self, width, out):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(width, width), nn.Tanh())
        self.act = nn.ReLU(inplace=True)
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.act(self.encoder(x)))


def _nested_sequential(rng):
    width, hidden, out = rng.randint(3, 6), rng.randint(4, 7), rng.randint(2, 4)
    model = nn.Sequential(nn.Sequential(nn.Linear(width, hidden), nn.ReLU(inplace=True)),
                          nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(inplace=True)),
                          nn.Linear(hidden, out))
    return model, width, ["0.0", "1", "2"]


def _with_root(rng):
    """The model itself (name "") among the names."""
    model, width, names = _nested_sequential(rng)
    return model, width, ["", "1.0"]


def _reused_in_sequential(rng):
    """One Linear at positions "0" and "2" of a Sequential: named_modules() lists it as "0" only."""
    width, out = rng.randint(3, 6), rng.randint(2, 4)
    reused = nn.Linear(width, width)
    return nn.Sequential(reused, nn.Tanh(), reused, nn.Linear(width, out)), width, ["2", "3"]


def _both_names_of_reused(rng):
    """Both names of the Linear reused as "0" and "2": each name gets its own entry, the latest call."""
    model, width, names = _reused_in_sequential(rng)
    return model, width, ["0", "2", "3"]


def _in_float64(rng):
    """The nested model in float64: a copy of the output keeps its dtype."""
    model, width, names = _nested_sequential(rng)
    return model.double(), width, names


def _named_children(rng):
    width, out = rng.randint(3, 6), rng.randint(2, 4)
    model = nn.Sequential(collections.OrderedDict(features=_Encoded(width, width), classifier=nn.Linear(width, out)))
    return model, width, ["features.encoder", "features.encoder.0", "classifier"]


class _SharedTwice(nn.Module):
    """One Linear called twice in each forward pass (shared weights)."""

    def __init__(self, width, out):
        super().__init__()
        self.shared = nn.Linear(width, width)
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.shared(torch.tanh(self.shared(x))))


def _shared_twice(rng):
    width, out = rng.randint(3, 6), rng.randint(2, 4)
    return _SharedTwice(width, out), width, ["shared", "head"]


# In-place ReLUs follow "0.0" and "features.encoder"; "2", "classifier", "head" and "" give the
# model's output; "shared" runs twice in each forward pass, so its second call is the latest; so does
# the Linear reused as "0" and "2", which named_modules() lists as "0" only (case 77 asks for both
# names); case 78 runs in float64.
_CAPTURE_CASES = ((71, _nested_sequential), (72, _named_children), (74, _shared_twice), (75, _with_root),
                  (76, _reused_in_sequential), (77, _both_names_of_reused), (78, _in_float64))
# (number, batch size, grad mode, training mode): pass 3 runs under no_grad, pass 4 in eval() mode;
# passes 1 and 2 have the same shape, so that writing into the tensor stored before would go unseen
# by the values alone.
_PASSES = ((1, 3, True, True), (2, 3, True, True), (3, 4, False, True), (4, 3, True, False))


def _mode_text(grad_mode, training):
    return "" if grad_mode and training else " (under torch.no_grad())" if training else " (in eval() mode)"


def _refused_name(error, names):
    """The name in `names` that a KeyError seems to be about, or None."""
    for name in names:
        if error.args[:1] == (name,) or repr(name) in str(error) or (name and name in str(error)):
            return name
    return None


def _known_name_refused(model, names, call_text, error):
    """Fail for a KeyError raised although every name in `names` is a layer of `model`: which lookup
    missed the name it refused."""
    refused = _refused_name(error, names)
    first_names = {id(module): name for name, module in reversed(list(model.named_modules()))}
    every_name = [name for name, _ in model.named_modules(remove_duplicate=False)]
    said = f"{call_text} raised KeyError: {error}, but every name asked for is a layer of the model"
    if refused == "":
        fail(f"{said}: '' is the model itself, which named_modules() lists first, under the name ''. "
             "Look the names up in dict(model.named_modules(remove_duplicate=False)), the root included.",
             "root-name-refused")
    if refused is not None and first_names.get(id(model.get_submodule(refused))) != refused:
        first = first_names[id(model.get_submodule(refused))]
        fail(f"{said}: {refused!r} is the same module as {first!r}, reused under a second name. "
             "named_modules() lists a module reachable under two names once, under its first name; "
             "named_modules(remove_duplicate=False) lists every name: look the names up in "
             "dict(model.named_modules(remove_duplicate=False)).", "second-name-refused")
    fail(f"{said}: named_modules(remove_duplicate=False) lists {every_name}. Look names up in "
         "dict(model.named_modules(remove_duplicate=False)), which includes nested layers such as '0.0', "
         "not in named_children().", "nested-name-refused")


def _call_capture(capture_activations, model, names):
    call_text = f"capture_activations(model, {names})"
    with calling(f"calling {call_text}"):
        try:
            result = capture_activations(model, names)
        except KeyError as error:
            _known_name_refused(model, names, call_text, error)
    activations, handles = _unpack_pair(result, call_text, "(activations, handles)")
    if not isinstance(activations, Mapping):
        fail(f"{call_text} returned {describe(activations)} as activations; expected a dict from layer name to "
             "the layer's latest output.", "activations-not-a-dict")
    return activations, handle_list(handles, call_text, _HANDLE, _HANDLES), call_text


def _missing_entries_mistake(activations, names):
    """The named mistake of entries missing: every hook wrote under one of the names, the last one the loop
    variable held (a late-binding hook), or the keys are something else (the module, say)."""
    late = len(names) > 1 and len(activations) == 1 and all(key in names for key in activations)
    return "late-binding" if late else "entry-not-under-its-name"


def _check_entries_named(activations, names, said, aliases):
    """activations holds an entry under each name asked for, and nothing else."""
    missing = [name for name in names if name not in activations]
    aliased = {name: other for name in missing for other in aliases[name] if other in activations}
    if aliased:
        fail(f"{said} activations has no entry for {sorted(aliased)}, which name the same module as "
             f"{sorted(set(aliased.values()))} (one layer reused under two names, and both names asked for). "
             "Each name in layer_names gets its own entry, updated by every call of that module: register a "
             "hook for every name, also when two names reach one module.", "one-entry-per-module")
    if missing:
        fail(f"{said} activations has no entry for {missing} (it holds {sorted(activations, key=str)}). Store each "
             "output under its layer's name, the name given in layer_names. If the values all landed under one "
             "name, the hook reads the loop variable when it runs: bind the name when you make the hook.",
             _missing_entries_mistake(activations, names))
    extra = [name for name in activations if name not in names]
    if extra:
        fail(f"{said} activations also holds {extra}, which were not asked for; hook only the layers named in "
             "layer_names.", "extra-entries")


def _check_entry_kind(value, expected, name, said):
    """activations[name] is a detached tensor of the output's dtype."""
    if isinstance(value, (list, tuple)):
        fail(f"{said} activations[{name!r}] is a {type(value).__name__} of {len(value)} item(s); expected a "
             "tensor: the output of the latest forward pass, which replaces the one before "
             f"(activations[name] = ...), not a collection of every pass.", "every-pass-kept")
    if type(value).__module__ == "numpy":
        fail(f"{said} activations[{name!r}] is {describe(value)}, a NumPy array; expected a tensor. "
             ".numpy() (after .detach().cpu()) shares memory with the output, so an in-place change reaches "
             "it too: store output.detach().clone(), a tensor with memory of its own.", "numpy-array")
    if not isinstance(value, torch.Tensor):
        fail(f"{said} activations[{name!r}] is {describe(value)}; expected the layer's output tensor.", "not-a-tensor")
    if value.requires_grad and value.grad_fn is None:
        fail(f"{said} activations[{name!r}] requires grad, with no graph (grad_fn None): a leaf made to "
             "require grad, not the output as it was. Store output.detach().clone() as it comes, without "
             "requires_grad_().", "made-to-require-grad")
    if value.requires_grad or value.grad_fn is not None:
        fail(f"{said} activations[{name!r}] still requires grad (grad_fn "
             f"{type(value.grad_fn).__name__}): it keeps the model's whole autograd graph alive. "
             "Store the output detached from autograd (output.detach()), and cloned; torch.no_grad() "
             "inside the hook does not detach a tensor that forward already made.", "not-detached")
    if value.dtype != expected.dtype:
        fail(f"{said} activations[{name!r}] has dtype {value.dtype}; the layer's output has dtype "
             f"{expected.dtype}. Store the output as it is, output.detach().clone(), which keeps its dtype "
             "(no .float(), .half() or .to(...)).", "dtype-changed")


def _diagnose_stale_entry(name, said, grad_mode, training):
    """Fail for activations[name] still holding the output of the forward pass before."""
    if not grad_mode:
        fail(f"{said} activations[{name!r}] still holds the output of the forward pass before: the "
             "pass under torch.no_grad() did not update it. Hooks fire under no_grad too; store the "
             "output on every call, whatever the grad mode (no test of output.requires_grad or "
             "torch.is_grad_enabled()).", "skipped-under-no-grad")
    if not training:
        fail(f"{said} activations[{name!r}] still holds the output of the forward pass before: the "
             "pass in eval() mode did not update it. Hooks fire in eval() mode too; store the output on "
             "every call, in training and in eval() mode alike (no test of module.training).", "skipped-in-eval")
    fail(f"{said} activations[{name!r}] still holds the output of the first forward pass; the latest "
         "forward pass must win: overwrite the entry on every call.", "first-pass-kept")


def _diagnose_wrong_entry(value, expected, name, calls, said):
    """Fail for activations[name], a tensor that is not the layer's latest output: which mistake gives it."""
    if len(calls) > 1 and any(close(value, output) for inputs, output in calls[:-1]):
        fail(f"{said} activations[{name!r}] holds the output of an earlier call of that layer in the same "
             f"forward pass: the model calls it {len(calls)} times per pass, and its hook fires on every call. "
             "The latest call must win: overwrite the entry on every call.", "earlier-call-kept")
    if any(close(value, inputs) for inputs, output in calls):
        fail(f"{said} activations[{name!r}] is {describe(value)}, the layer's input (args[0]); expected its "
             f"output, {describe(expected)}.", "stored-input")
    if close(value, expected.relu()):
        fail(f"{said} activations[{name!r}] reads {describe(value)}, the layer's output after the in-place "
             f"ReLU that follows the layer overwrote it; the layer produced {describe(expected)}. "
             "output.detach() shares memory with the output: store output.detach().clone().", "not-cloned")
    if close(value, torch.zeros_like(expected)):
        fail(f"{said} activations[{name!r}] became zeros when the checker zeroed the model's returned output "
             f"in place; the layer produced {describe(expected)}. output.detach() shares memory with the "
             "output: store output.detach().clone().", "not-cloned")
    fail(f"{said} activations[{name!r}] is {describe(value)}; expected the layer's output, "
         f"{describe(expected)}.", "wrong-activation-value")


def _check_captured(activations, names, records, step, grad_mode, training, earlier_outputs, call_text, aliases):
    """`records[name]` lists the (input, output) of each call of the layer in forward pass number `step`;
    `aliases[name]` the other names in `names` of the same module."""
    said = f"After {call_text} and forward pass number {step}{_mode_text(grad_mode, training)},"
    _check_entries_named(activations, names, said, aliases)
    for name in names:
        value, expected = activations[name], records[name][-1][1]
        _check_entry_kind(value, expected, name, said)
        if close(value, expected):
            continue
        if name in earlier_outputs and close(value, earlier_outputs[name]):
            _diagnose_stale_entry(name, said, grad_mode, training)
        _diagnose_wrong_entry(value, expected, name, records[name], said)


def _output_changed_mistake(out, ref_out):
    """The named mistake of hooks that changed the model's output: the same values without their graph
    (detached), or other values (a hook returned something)."""
    return "output-detached" if close(out, ref_out) else "hook-returned-a-value"


def _forward_and_compare(model, reference, activations, names, x, step, grad_mode, training, earlier, call_text,
                         aliases):
    done = {name: len(reference.records[name]) for name in names}  # calls in earlier passes
    model.train(training)
    reference.model.train(training)
    with calling(f"running forward pass number {step} of the model after {call_text}"), \
            torch.set_grad_enabled(grad_mode):
        out = model(x)
    with torch.set_grad_enabled(grad_mode):
        ref_out = reference(x.clone())
    if not close(out, ref_out) or (out.grad_fn is None) != (ref_out.grad_fn is None):
        fail(f"After {call_text}, the model's output changed: it became {describe(out)} "
             f"(requires_grad={out.requires_grad}) instead of {describe(ref_out)} (requires_grad="
             f"{ref_out.requires_grad}). The hooks must return None, so that the output stays as it was."
             f"{_DETACHED_IN_PLACE if close(out, ref_out) else ''}", _output_changed_mistake(out, ref_out))
    with torch.no_grad():
        out.zero_()  # a later in-place change by the caller must not reach what was captured
    records = {name: reference.records[name][done[name]:] for name in names}
    _check_captured(activations, names, records, step, grad_mode, training, earlier, call_text, aliases)
    return {name: calls[-1][1] for name, calls in records.items()}


def _check_hooked_layers(model, names, call_text):
    """Forward hooks on the modules named in `names`, and on no other module."""
    named = {id(model.get_submodule(name)) for name in names}
    hooked = {id(module) for module in model.modules() if module._forward_hooks}
    if hooked == named:
        return
    first_names = {id(module): name for name, module in model.named_modules()}
    unhooked = [name for name in names if id(model.get_submodule(name)) not in hooked]
    reused = [name for name in unhooked if first_names[id(model.get_submodule(name))] != name]
    if reused:
        fail(f"{call_text} registered forward hooks on {_hooked_names(model)}; expected them on the layers named in "
             f"layer_names, {names}, and none elsewhere. {reused} name a layer that the model reaches under two "
             f"names; named_modules() gives it only its first name, "
             f"{[first_names[id(model.get_submodule(name))] for name in reused]}: look the names up in "
             "dict(model.named_modules(remove_duplicate=False)) instead of matching the names named_modules() gives.",
             "second-name-not-hooked")
    fail(f"{call_text} registered forward hooks on {_hooked_names(model)}; expected them on the layers "
         f"named in layer_names, {names}, and none elsewhere.", "hooks-on-other-layers")


def _check_passes(model, reference, activations, names, width, seed, call_text, aliases):
    """Run the forward passes of _PASSES and judge activations after each; return the latest outputs."""
    dtype = next(model.parameters()).dtype
    latest, kept = {}, {}
    for step, batch, grad_mode, training in _PASSES:
        x = random_tensor(seed + step, (batch, width), dtype=dtype)
        latest = _forward_and_compare(model, reference, activations, names, x, step, grad_mode, training,
                                      latest, call_text, aliases)
        changed = [name for name, (value, values) in kept.items() if not torch.equal(value, values)]
        if changed:
            fail(f"After {call_text}, forward pass number {step} changed the tensor that "
                 f"activations[{changed[0]!r}] held after pass number {step - 1}: the new output was written "
                 "into the old tensor (copy_, slice assignment or another in-place operation) instead of "
                 "stored as a new one. Store a new clone on every call (output.detach().clone()), so that a "
                 "tensor taken out of activations earlier keeps its values.", "written-into-old-tensor")
        kept = {name: (activations[name], activations[name].clone()) for name in names}
    return latest


def _capture_case(capture_activations, seed, build):
    model, width, names = seeded(seed, build, random.Random(seed))
    reference = _ReferenceOutputs(model, lambda name, module: name in names, every_name=True)
    activations, handles, call_text = _call_capture(capture_activations, model, names)
    aliases = {name: [other for other in names if other != name
                      and model.get_submodule(other) is model.get_submodule(name)] for name in names}
    _check_hooked_layers(model, names, call_text)
    check_handles_registered(handles, call_text)
    _check_fresh(activations, "activations", call_text)
    latest = _check_passes(model, reference, activations, names, width, seed, call_text, aliases)
    _check_removal(model, handles, call_text)
    with calling("running the model after removing the handles"):
        model(random_tensor(seed + 9, (4, width), dtype=next(model.parameters()).dtype))
    for name in names:
        if not close(activations[name], latest[name]):
            fail(f"after every handle was removed, a forward pass still changed activations[{name!r}]; "
                 "return the handles of the hooks that write into activations.", "captures-after-removal")


def _check_no_names(capture_activations):
    """No names: no hook, nothing captured (an empty list is not "every layer")."""
    model, width, names = seeded(79, _nested_sequential, random.Random(79))
    activations, handles, call_text = _call_capture(capture_activations, model, [])
    hooked = _hooked_names(model)
    with calling(f"running the model after {call_text}"):
        model(random_tensor(80, (3, width)))
    if hooked or activations:
        fail(f"{call_text} registered forward hooks on {hooked} and captured {sorted(activations)}; with no names "
             "asked for, it registers no hook and captures nothing: an empty layer_names is not 'every layer'.",
             "no-names-means-all")
    for handle in handles:
        handle.remove()


def _check_unknown_name(capture_activations):
    """An unknown name: KeyError naming it, and no hook of the call left behind."""
    model, width, names = seeded(73, _named_children, random.Random(73))
    unknown = "features.encoder.7"
    asked = [names[0], "classifier", unknown]
    call_text = f"capture_activations(model, {asked})"
    raised = None
    try:
        capture_activations(model, asked)
    except Exception as error:  # the check is about which exception comes out
        raised = error
    if raised is None:
        fail(f"{call_text} returned normally, but the model has no submodule named {unknown!r}; raise KeyError "
             "naming it.", "unknown-name-accepted")
    if isinstance(raised, NotImplementedError):
        raise raised
    if not isinstance(raised, KeyError):
        fail(f"{call_text} raised {type(raised).__name__}: {raised}; expected KeyError naming {unknown!r} "
             "(model.get_submodule and getattr raise AttributeError: look the names up in "
             "dict(model.named_modules()) and raise KeyError yourself).", "not-a-keyerror")
    if unknown not in str(raised):
        fail(f"{call_text} raised KeyError: {raised}; its message must name the unknown layer, {unknown!r}.",
             "keyerror-without-the-name")
    left = _hooked_names(model)
    if left:
        fail(f"{call_text} raised KeyError but left forward hooks registered on {left}. Check every name "
             "before registering any hook, so that a bad name leaves the model as it was.", "hooks-left-on-keyerror")


_CAPTURE_MISTAKES = {
    "root-name-refused": "raises KeyError for '', the model itself, leaving the root out of the names it looks up",
    "second-name-refused": "raises KeyError for the second name of a reused module, looking names up in "
                           "named_modules(), which lists each module once",
    "nested-name-refused": "raises KeyError for a nested layer's name, looking names up among the top-level "
                           "children or attributes only",
    "activations-not-a-dict": "returns something other than a dict as activations",
    "one-entry-per-module": "stores one entry for a module reused under two names, both asked for",
    "late-binding": "hooks made in a loop read the loop variable when they run, so every output lands under the "
                    "last name",
    "entry-not-under-its-name": "stores outputs under keys other than their layers' names (the module, say)",
    "extra-entries": "stores outputs of layers that were not asked for",
    "every-pass-kept": "keeps a list of every pass's output instead of the latest output",
    "numpy-array": "stores a NumPy array, which shares memory with the output",
    "not-a-tensor": "stores something other than a tensor",
    "made-to-require-grad": "stores a detached copy made to require grad again",
    "not-detached": "stores the output without detaching it, keeping the autograd graph alive",
    "dtype-changed": "stores the output converted to another dtype",
    "skipped-under-no-grad": "stores nothing during a forward pass under torch.no_grad()",
    "skipped-in-eval": "stores nothing during a forward pass in eval() mode",
    "first-pass-kept": "keeps the output of the first forward pass instead of the latest",
    "earlier-call-kept": "keeps the output of an earlier call of a layer called twice in one forward pass",
    "stored-input": "stores the layer's input instead of its output",
    "not-cloned": "stores output.detach() (or .data) without cloning it, so later in-place changes reach it",
    "wrong-activation-value": "stores a value that is not the layer's output",
    "output-detached": "detaches the model's output itself (a hook returns a detached value, or detach_())",
    "hook-returned-a-value": "a hook returns a value, which replaces the layer's output",
    "second-name-not-hooked": "hooks the names named_modules() gives, missing the second name of a reused module",
    "hooks-on-other-layers": "registers forward hooks on layers that were not asked for",
    "written-into-old-tensor": "writes each new output into the tensor stored before, in place",
    "handle-not-returned": "does not return the handle of every hook it registered",
    "captures-after-removal": "keeps capturing after every returned handle is removed",
    "dict-kept-between-calls": "returns a dict kept between calls, holding what earlier calls recorded",
    "not-a-pair": "returns something other than the pair (activations, handles)",
    "no-names-means-all": "hooks layers (or captures outputs) when no names are asked for",
    "unknown-name-accepted": "returns normally for a name that is not a layer of the model",
    "not-a-keyerror": "raises an exception other than KeyError for an unknown name",
    "keyerror-without-the-name": "raises a KeyError whose message does not name the unknown layer",
    "hooks-left-on-keyerror": "leaves hooks registered when it raises KeyError for an unknown name",
}


@check_of("capture_activations", mistakes={**_CAPTURE_MISTAKES, **{slug: HANDLE_MISTAKES[slug] for slug in (
    "handles-not-a-list", "handles-as-dict", "handles-as-generator", "not-handles", "stale-handles")}})
def check_capture_activations(capture_activations):
    for seed, build in _CAPTURE_CASES:
        _capture_case(capture_activations, seed, build)
    _check_no_names(capture_activations)
    _check_unknown_name(capture_activations)


# ---------------------------------------------------------------- track_relu_stats

class _ReluTwice(nn.Module):
    """Calls one ReLU twice in its forward."""

    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.linear(self.relu(x)))


class _Rectifier(nn.ReLU):
    """A subclass of nn.ReLU, so an nn.ReLU, whose class name does not say ReLU."""


def _relu_model(rng):
    width, out = rng.randint(4, 7), rng.randint(2, 4)
    stem = nn.ReLU()  # sees the input itself, with values just above zero
    return nn.Sequential(collections.OrderedDict(
        stem=stem,
        proj=nn.Linear(width, width),
        body=nn.Sequential(nn.Linear(width, width), nn.ReLU(inplace=True), _ReluTwice(width)),
        leaky=nn.LeakyReLU(0.1),
        capped=nn.ReLU6(),  # a Hardtanh, not an nn.ReLU, despite its name
        mix=nn.Linear(width, width),
        rect=_Rectifier(),
        head=nn.Linear(width, out),
        again=stem,  # the ReLU "stem" reused: named_modules() lists it once, as "stem"
    )), width


def _bare_relu(rng):
    """The model is itself an nn.ReLU: named_modules() gives it the name ""."""
    return nn.ReLU(), rng.randint(4, 7)


def _relu_input(seed, batch, width):
    """Normal values, some replaced by tiny positive ones (near 1e-4 and 1e-30) and some by exact zeros;
    column 0 is all zeros (a unit that the ReLU "stem" gives 0 for every input)."""
    x = random_tensor(seed, (batch, width))
    x[:, 0] = 0.0
    pick = random_tensor(seed + 50, (batch, width))
    x = torch.where(pick > 1.0, x.abs() * 1e-4, x)
    x = torch.where((pick > 0.6) & (pick <= 1.0), x.abs() * 1e-30 + 1e-36, x)
    return torch.where(pick < -1.3, torch.zeros_like(x), x)


_LATE_BINDING = ("A hook that uses the loop variable reads it when it runs, after the loop ended, so every hook "
                 "sees the last name: bind the name (or the list) when you make each hook, with a factory "
                 "function or a default argument.")


def _expected_entry(output):
    return {"mean": output.mean().item(), "zero_fraction": (output == 0).float().mean().item()}


def _near(a, b):
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)


_TOLERANCE_HINT = (" It counts more elements than the exact zeros: the output has small positive values (near 1e-4 "
                   "and 1e-30), which are not zero, and a tolerance (torch.isclose, a threshold) counts them. Count "
                   "elements equal to 0 (output == 0).")


def _check_entry_form(entry, where):
    """The entry is a dict with exactly the keys 'mean' and 'zero_fraction', each a Python float."""
    if not isinstance(entry, Mapping) or set(entry) != {"mean", "zero_fraction"}:
        fail(f"{where} is {describe(entry)}; expected a dict with exactly the keys 'mean' and 'zero_fraction'.",
             "wrong-entry-keys")
    for key in ("mean", "zero_fraction"):
        value = entry[key]
        if isinstance(value, torch.Tensor):
            fail(f"{where}[{key!r}] is a tensor ({describe(value)}); expected a Python float: turn a one-element "
                 "tensor into a float with .item().", "tensor-not-float")
        if not isinstance(value, float):
            fail(f"{where}[{key!r}] is {describe(value)}; expected a Python float.", "not-a-float")


# Wrong means that a look-alike explains: (slug, what it computes from (inputs, output), its hint).
_MEAN_LOOKALIKES = (
    ("mean-of-input", lambda inputs, output: inputs.mean().item(),
     " That is the mean of the ReLU's input; take the mean of its output."),
    ("mean-of-nonzero", lambda inputs, output: output[output != 0].mean().item() if (output != 0).any() else None,
     " That is the mean of the non-zero elements only; average over all the elements, zeros included."),
    ("mean-over-batch-size", lambda inputs, output: output.sum().item() / len(output),
     " That is the sum divided by the batch size, len(output); divide by the number of elements, "
     "output.numel(), or use output.mean()."),
)


def _check_mean(mean, expected, where, inputs, output):
    if _near(mean, expected):
        return
    slug, hint = "wrong-mean", ""
    for lookalike, value_of, its_hint in _MEAN_LOOKALIKES:
        value = value_of(inputs, output)
        if value is not None and _near(mean, value):
            slug, hint = lookalike, its_hint
            break
    fail(f"{where}['mean'] is {mean:.6g}; expected {expected:.6g}, the mean of the ReLU's "
         f"output over all its elements.{hint}", slug)


def _check_entry(entry, where, inputs, output, others=(), before=()):
    """`others`: (zero fraction, inputs, output) of the other calls, to tell look-alikes apart; `before`: the
    outputs of this ReLU's earlier calls."""
    expected = _expected_entry(output)
    _check_entry_form(entry, where)
    _check_mean(entry["mean"], expected["mean"], where, inputs, output)
    if not _near(entry["zero_fraction"], expected["zero_fraction"]):
        zeros = entry["zero_fraction"]
        outputs = list(before) + [output]
        running = sum(float((each == 0).sum()) for each in outputs) / sum(each.numel() for each in outputs)
        if before and _near(zeros, running):
            slug, hint = "running-zero-fraction", (
                f" That is the fraction over this call and the {len(before)} before it: each entry describes its "
                "own call, so count the zeros of this output only, without running totals.")
        else:
            slug, hint = _zero_fraction_hint(zeros, inputs, output, others)
        fail(f"{where}['zero_fraction'] is {zeros:.6g}; expected {expected['zero_fraction']:.6g}, the fraction of "
             f"the output's elements that are exactly 0.{hint}", slug)


# The hints of the wrong zero fractions, by the slug of their named mistake.
_ZERO_FRACTION_HINTS = {
    "zero-count": " That is the number of zeros; divide by the number of elements.",
    "zeros-over-batch-size": " That is the number of zeros divided by the batch size, len(output); divide by "
                             "the number of elements, output.numel().",
    "nonzero-fraction": " That is the fraction of elements that are not zero.",
    "negative-inputs-fraction": " That is the fraction of the ReLU's inputs below 0, which leaves out the inputs "
                                "exactly 0 (they give outputs exactly 0 too). Count the zeros of the output.",
    "zeros-with-tolerance": _TOLERANCE_HINT,
    "dead-units-fraction": " That is the fraction of units that are 0 for every input of the batch (dead on this "
                           "batch); the zero fraction counts every element that is exactly 0, each input "
                           "separately: (output == 0) over the whole output.",
    "first-input-only": " That is the zero fraction of the first input of the batch only, output[0]; count over the "
                        "whole output.",
}


def _zero_fraction_lookalikes(inputs, output):
    """What known wrong ways of computing the zero fraction give for this call, each with its slug."""
    zeros = output == 0
    count = float(zeros.sum().item())
    found = [(count, "zero-count"),
             (count / len(output), "zeros-over-batch-size"),
             (1 - zeros.float().mean().item(), "nonzero-fraction"),
             ((inputs < 0).float().mean().item(), "negative-inputs-fraction"),
             (torch.isclose(output, torch.zeros_like(output)).float().mean().item(), "zeros-with-tolerance")]
    found += [((output < 10.0 ** -power).float().mean().item(), "zeros-with-tolerance") for power in range(1, 39)]
    # The last two do not apply to every call (value None there); their places stay the same.
    dead = zeros.all(0).float().mean().item() if output.dim() > 1 else None
    found.append((dead if dead is not None and 0 < dead < 1 else None, "dead-units-fraction"))
    found.append(((output[0] == 0).float().mean().item() if output.dim() > 1 else None, "first-input-only"))
    return found


def _zero_fraction_hint(zeros, inputs, output, others):
    """(slug, hint) of the one look-alike that gives `zeros` here and also the values given for `others`, a
    list of (zero fraction given, inputs, output) of the other calls; ("wrong-zero-fraction", "") when the
    look-alikes that remain disagree (two can agree on one call by chance)."""
    lookalikes = _zero_fraction_lookalikes(inputs, output)
    candidates = [index for index, (value, slug) in enumerate(lookalikes) if value is not None and _near(zeros, value)]
    for given, other_inputs, other_output in others:
        theirs = _zero_fraction_lookalikes(other_inputs, other_output)
        kept = [index for index in candidates if theirs[index][0] is None or _near(given, theirs[index][0])]
        candidates = kept or candidates
    slugs = {lookalikes[index][1] for index in candidates}
    if len(slugs) != 1:
        return "wrong-zero-fraction", ""
    slug = slugs.pop()
    return slug, _ZERO_FRACTION_HINTS[slug]


def _zero_fractions_given(stats, reference, relu_names):
    """(zero fraction, inputs, output) of every call whose entry is a dict with a float zero fraction."""
    given = []
    for name in relu_names:
        entries = stats.get(name)
        if isinstance(entries, list):
            for entry, (inputs, output) in zip(entries, reference.records[name]):
                if isinstance(entry, Mapping) and isinstance(entry.get("zero_fraction"), float):
                    given.append((entry["zero_fraction"], inputs, output))
    return given


def _check_stats_keys(stats, reference, relu_names, other_names, call_text, said):
    """stats is a dict whose keys are the ReLUs' names, each once, and no other module's."""
    if not isinstance(stats, Mapping):
        fail(f"{call_text} returned {describe(stats)} as stats; expected a dict from ReLU name to a list of entries.",
             "stats-not-a-dict")
    odd_keys = [key for key in stats if not isinstance(key, str)]
    if odd_keys:
        fail(f"{said} stats has keys {describe(odd_keys)}; expected the ReLUs' names from model.named_modules() "
             f"({relu_names}).", "keys-not-names")
    wrongly = [name for name in other_names if stats.get(name)]
    if wrongly:
        kinds = sorted({type(dict(reference.model.named_modules())[name]).__name__ for name in wrongly})
        # Classes named like a ReLU (LeakyReLU, ReLU6) tracked: a match on the class name; another module under
        # the name the loop ended with: a late-binding hook.
        by_class_name = all("relu" in kind.lower() for kind in kinds)
        late = not by_class_name and not all(stats.get(name) for name in relu_names)
        fail(f"{said} stats has entries for {wrongly}, which are not nn.ReLU modules (they are {kinds}; "
             f"nn.LeakyReLU and nn.ReLU6 are not subclasses of nn.ReLU): track only instances of nn.ReLU, "
             f"isinstance(module, nn.ReLU), not a match on the class name.{f' {_LATE_BINDING}' if late else ''}",
             "late-binding" if late else "not-only-relus")
    every_name = dict(reference.model.named_modules(remove_duplicate=False))
    first_names = {id(module): name for name, module in reference.model.named_modules()}
    second_names = [key for key in stats if key in every_name and key not in relu_names and key not in other_names]
    if any(stats[key] for key in second_names):
        pairs = {key: first_names[id(every_name[key])] for key in second_names}
        fail(f"{said} stats has entries under {second_names}, second names of the ReLUs {pairs} (the same module, "
             "reused). Track each ReLU once, under the name model.named_modules() gives it (a module reachable "
             "under two names is listed once, under its first name), not under every name that "
             "named_modules(remove_duplicate=False) lists: with two hooks, each call counts twice.",
             "second-name-tracked")
    unknown = [key for key in stats if key not in relu_names and key not in other_names and stats[key]]
    if unknown:
        fail(f"{said} stats has keys {unknown}; expected the ReLUs' names from model.named_modules(): {relu_names}.",
             "keys-not-names")


def _missing_relus_hint(stats, reference, relu_names, missing):
    """(slug, hint) of why the ReLUs `missing` have no entries."""
    modules = dict(reference.model.named_modules())
    nested = [name for name in missing if "." in name]
    crowded = [name for name in relu_names if stats.get(name) and len(stats[name]) > len(reference.records[name])]
    subclassed = [name for name in missing if type(modules[name]) is not nn.ReLU]
    if "" in missing:
        return "root-skipped", (" '' is the model itself, an nn.ReLU here: named_modules() yields it first, under "
                                "the name ''. Track it like any other ReLU (don't skip the empty name).")
    if crowded:
        return "late-binding", f" {crowded} holds more entries than that ReLU ran. {_LATE_BINDING}"
    if subclassed:
        kinds = sorted({type(modules[name]).__name__ for name in subclassed})
        return "subclass-skipped", (f" {subclassed} are instances of {kinds}, a subclass of nn.ReLU, so nn.ReLUs "
                                    "too: isinstance(module, nn.ReLU) includes subclasses; type(module) is nn.ReLU "
                                    "and a match on the class name don't.")
    if all(getattr(modules[name], "inplace", False) for name in missing):
        return "in-place-relu-skipped", (f" {missing} are ReLUs with inplace=True, nn.ReLUs too: a forward hook on "
                                         "them sees their output as on any other ReLU, so track them as well.")
    if nested and not any(stats.get(name) for name in relu_names if "." in name):
        return "nested-relus-skipped", (f" {nested} are nested inside other modules: model.children() and "
                                        "named_children() see only the top level; named_modules() visits every depth.")
    return "relu-skipped", ""


def _check_entry_count(entries, calls, name, said, step, grad_mode, training, calls_before):
    """The ReLU's entries are a list with one entry per call of that ReLU."""
    if not isinstance(entries, list):
        fail(f"{said} stats[{name!r}] is {describe(entries)}; expected a list with one entry per call.",
             "entries-not-a-list")
    if len(entries) == len(calls):
        return
    if not grad_mode and len(entries) == calls_before[name]:
        slug, hint = "skipped-under-no-grad", (
            f" Forward pass number {step} ran under torch.no_grad() and added no entry: hooks fire "
            "under no_grad too, and every call must append, whatever the grad mode.")
    elif not training and len(entries) == calls_before[name]:
        slug, hint = "skipped-in-eval", (
            f" Forward pass number {step} ran in eval() mode and added no entry: hooks fire in eval() "
            "mode too, and every call must append, in training and in eval() mode alike (no test of "
            "module.training).")
    elif len(calls) == 2 * step:
        slug, hint = "entry-per-call-missing", (" That ReLU is called twice in each forward pass; every call "
                                                "appends its own entry.")
    else:
        slug, hint = "entry-per-call-missing", " Append one entry per call; don't replace the list."
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    fail(f"{said} stats[{name!r}] has {count}; that ReLU ran {len(calls)} times.{hint}", slug)


def _check_stats(stats, reference, relu_names, other_names, call_text, step, grad_mode, training, calls_before):
    said = f"After {call_text} and {step} forward pass(es),"
    _check_stats_keys(stats, reference, relu_names, other_names, call_text, said)
    missing = [name for name in relu_names if not stats.get(name)]
    if missing:
        slug, hint = _missing_relus_hint(stats, reference, relu_names, missing)
        fail(f"{said} stats has no entries for the ReLUs {missing}.{hint}", slug)
    for name in relu_names:
        calls = reference.records[name]
        _check_entry_count(stats[name], calls, name, said, step, grad_mode, training, calls_before)
        for number, (entry, (inputs, output)) in enumerate(zip(stats[name], calls)):
            _check_entry(entry, f"{said} stats[{name!r}][{number}]", inputs, output,
                         _zero_fractions_given(stats, reference, relu_names), [out for _, out in calls[:number]])


def _relu_pass(model, reference, x, step, grad_mode, other_names, call_text):
    """Forward pass number `step` of the model and of the reference; fails when the model's output changed."""
    with calling(f"running forward pass number {step} of the model after {call_text}"), \
            torch.set_grad_enabled(grad_mode):
        try:
            out = model(x.clone())
        except KeyError as error:
            if error.args and error.args[0] in other_names:
                fail(f"Forward pass number {step} after {call_text} raised KeyError: {error} in a hook; "
                     f"{error.args[0]!r} is not a ReLU: it is the name the loop variable held when the loop ended. "
                     f"{_LATE_BINDING}", "late-binding")
            raise
    with torch.set_grad_enabled(grad_mode):
        ref_out = reference(x.clone())
    if not close(out, ref_out) or (out.grad_fn is None) != (ref_out.grad_fn is None):
        fail(f"After {call_text}, the model's output changed to {describe(out)} (requires_grad="
             f"{out.requires_grad}) instead of {describe(ref_out)} (requires_grad={ref_out.requires_grad}); "
             "the hooks must return None, so that the model computes what it computed before."
             f"{_DETACHED_IN_PLACE if close(out, ref_out) else ''}", _output_changed_mistake(out, ref_out))


def _track_relu_case(track_relu_stats, seed, build):
    torch.manual_seed(seed)
    model, width = build(random.Random(seed))
    relu_names = [name for name, module in model.named_modules() if isinstance(module, nn.ReLU)]
    other_names = [name for name, module in model.named_modules() if not isinstance(module, nn.ReLU)]
    reference = _ReferenceOutputs(model, lambda name, module: isinstance(module, nn.ReLU))
    call_text = "track_relu_stats(model)"
    with calling(f"calling {call_text}"):
        result = track_relu_stats(model)
    stats, handles = _unpack_pair(result, call_text, "(stats, handles)")
    handles = handle_list(handles, call_text, _HANDLE, _HANDLES)
    check_handles_registered(handles, call_text)
    _check_fresh(stats, "stats", call_text)
    # Pass 2 runs under no_grad and pass 3 in eval() mode: hooks fire there too.
    for step, batch, grad_mode, training in ((1, 5, True, True), (2, 3, False, True), (3, 4, True, False)):
        x = _relu_input(seed + step, batch, width)
        model.train(training)
        reference.model.train(training)
        calls_before = {name: len(reference.records[name]) for name in relu_names}
        _relu_pass(model, reference, x, step, grad_mode, other_names, call_text)
        _check_stats(stats, reference, relu_names, other_names, call_text, step, grad_mode, training, calls_before)
    _check_removal(model, handles, call_text)
    counts = {name: len(stats[name]) for name in relu_names}
    with calling("running the model after removing the handles"):
        model(_relu_input(seed + 9, 2, width))
    if any(len(stats[name]) != count for name, count in counts.items()):
        fail("after every handle was removed, a forward pass still appended to stats; return the handles of "
             "the hooks that append.", "tracks-after-removal")


_TRACK_MISTAKES = {
    "not-a-pair": "returns something other than the pair (stats, handles)",
    "dict-kept-between-calls": "returns a dict kept between calls, holding what earlier calls recorded",
    "late-binding": "hooks made in a loop read the loop variable when they run, so entries land under the last name",
    "output-detached": "detaches the model's output itself (a hook returns a detached value, or detach_())",
    "hook-returned-a-value": "a hook returns a value, which replaces the ReLU's output",
    "stats-not-a-dict": "returns something other than a dict as stats",
    "keys-not-names": "keys stats by something other than the ReLUs' names (the module object, say)",
    "not-only-relus": "tracks modules that are not nn.ReLU (a match on the class name: LeakyReLU, ReLU6)",
    "second-name-tracked": "tracks a reused ReLU under each of its names, or under a name other than its first",
    "root-skipped": "skips the model itself (name ''), an nn.ReLU",
    "subclass-skipped": "skips subclasses of nn.ReLU (type(module) is nn.ReLU, or a match on the class name)",
    "in-place-relu-skipped": "skips ReLUs with inplace=True",
    "nested-relus-skipped": "tracks only the top-level ReLUs (children() instead of modules())",
    "relu-skipped": "tracks no entries for some of the ReLUs",
    "entries-not-a-list": "stores something other than a list of entries for a ReLU",
    "skipped-under-no-grad": "appends nothing during a forward pass under torch.no_grad()",
    "skipped-in-eval": "appends nothing during a forward pass in eval() mode",
    "entry-per-call-missing": "appends other than one entry per call of a ReLU (replaces the list, or once per pass)",
    "wrong-entry-keys": "appends something other than a dict with exactly the keys 'mean' and 'zero_fraction'",
    "tensor-not-float": "stores the statistics as tensors instead of Python floats",
    "not-a-float": "stores the statistics as something other than Python floats",
    "mean-of-input": "takes the mean of the ReLU's input instead of its output",
    "mean-of-nonzero": "averages the non-zero outputs only",
    "mean-over-batch-size": "divides the sum of the output by the batch size instead of the number of elements",
    "wrong-mean": "computes the mean some other wrong way",
    "running-zero-fraction": "computes the zero fraction over this call and the earlier ones (a running total)",
    "zero-count": "gives the number of zeros instead of their fraction",
    "zeros-over-batch-size": "divides the number of zeros by the batch size instead of the number of elements",
    "nonzero-fraction": "gives the fraction of elements that are not zero",
    "negative-inputs-fraction": "counts the ReLU's inputs below 0, missing those exactly 0",
    "zeros-with-tolerance": "counts small positive values as zeros (torch.isclose, a threshold)",
    "dead-units-fraction": "gives the fraction of units that are 0 for the whole batch",
    "first-input-only": "counts the zeros of the first input of the batch only",
    "wrong-zero-fraction": "computes the zero fraction some other wrong way",
    "handle-not-returned": "does not return the handle of every hook it registered",
    "tracks-after-removal": "keeps appending to stats after every returned handle is removed",
}


@check_of("track_relu_stats", mistakes={**_TRACK_MISTAKES, **{slug: HANDLE_MISTAKES[slug] for slug in (
    "handles-not-a-list", "handles-as-dict", "handles-as-generator", "not-handles", "stale-handles")}})
def check_track_relu_stats(track_relu_stats):
    for seed, build in ((81, _relu_model), (82, _relu_model), (83, _bare_relu)):
        _track_relu_case(track_relu_stats, seed, build)


# ---------------------------------------------------------------- clamp_output

class _KeepsOutput(nn.Module):
    """A Linear that also keeps the tensor it returns, as some modules do."""

    def __init__(self, width, out):
        super().__init__()
        self.linear = nn.Linear(width, out)
        self.last = None

    def forward(self, x):
        self.last = self.linear(x)
        return self.last


_CLAMP_CASES = ((91, -0.5, 0.5, (4,), torch.float32), (92, 0.0, 1.0, (3, 2), torch.float32),
                (93, -2.0, 0.25, (2,), torch.float32), (94, -1.0, 0.75, (3,), torch.float64))

_GRADIENTS = ("the input x", "the weight", "the bias")

_CONTRACT = "unchanged where the output was strictly inside the bounds, 0 where it was beyond them"


def _put_outputs_on_the_bounds(linear, low, high):
    """Unit 0 always outputs exactly `low` and unit 1 exactly `high`: their values must be the bounds,
    and their gradient is not graded (torch.clamp's own changed there in torch 2.14)."""
    with torch.no_grad():
        linear.weight[:2] = 0.0
        linear.bias[0], linear.bias[1] = low, high


def _weighted(output, grad_out):
    """A scalar whose gradient with respect to `output` is `grad_out`. (Passing grad_outputs to
    torch.autograd.grad would do the same, but its first call imports sympy: half a second.)"""
    return (output * grad_out).sum()


def _zero_on_the_bounds(grad_out, raw, low, high):
    """The gradient the check sends back through the output, 0 where the output is exactly on a bound: the
    contract does not grade what passes there."""
    return grad_out.masked_fill((raw == low) | (raw == high), 0.0)


def _expected_gradients(raw, low, high, grad_out, params):
    """The contract's gradients, from the output before the clamp: grad_out where it was strictly inside the
    bounds, 0 beyond them (not torch.clamp's backward, whose answer on a bound changed in torch 2.14)."""
    inside = (raw > low) & (raw < high)
    return torch.autograd.grad(_weighted(raw, grad_out * inside), params, retain_graph=True)


def _gradient_hint(mine, which, raw, params, grad_out):
    """(slug, hint) of a wrong gradient, `mine`, with respect to params[which]."""
    if mine is None:
        return "wrong-gradient", ""
    if close(mine, torch.autograd.grad(_weighted(raw, grad_out), params, retain_graph=True)[which]):
        return "unclamped-gradient", (
            " That is the gradient without any clamp: where the output was clipped, a clamp passes a "
            "gradient of 0, but yours passed it on unchanged. Build the output with output.clamp(...), not by "
            "adding a detached correction.")
    if not mine.any():
        return "no-gradient-inside", (
            " That is 0 everywhere: no gradient passed even where the output was inside the bounds. Build the "
            "clamped tensor from the output itself, not from a detached copy.")
    return "wrong-gradient", ""


def _register_clamp(clamp_output, module, low, high, call_text):
    """Call clamp_output; a forward hook must be registered, and its handle returned."""
    globals_before = global_hooks()
    with calling(f"calling {call_text}"):
        handle = clamp_output(module, low, high)
    if (not module._forward_hooks and not module._forward_pre_hooks
            and "_global_forward_hooks" not in global_hooks_added(globals_before)):
        patched = "forward" in vars(module)
        fail(f"After {call_text}, the module has no forward hook (module._forward_hooks is empty)."
             f"{' It replaced module.forward instead.' if patched else ''} "
             "Register one with module.register_forward_hook(hook): a wrapped or replaced forward is not a "
             "hook (module.forward(x) would clamp too), and its handle is no RemovableHandle.",
             "forward-replaced" if patched else "no-forward-hook")
    return single_handle(handle, call_text, _HANDLE, removable_handle=True)


def _judge_clamped(out, kept, raw, expected, low, high, said):
    """What the module returned (`out`) and the tensor its forward made (`kept`), against the contract."""
    if isinstance(kept, torch.Tensor) and not close(kept, raw) and not close(kept, expected):
        fail(f"{said} computed {describe(kept)} in the module's forward, not {describe(raw)}: the "
             "module's input was changed. Clamp what forward returns, with register_forward_hook, not the "
             "input, as a register_forward_pre_hook would.", "input-clamped")
    if isinstance(kept, torch.Tensor) and not close(kept, raw):
        fail(f"{said} changed the module's own output in place: the tensor forward returned (and the module "
             f"kept) became {describe(kept)}, instead of staying {describe(raw)}. Return a new "
             "tensor (output.clamp(...)); don't use clamp_, .data or assignment into the output.", "in-place")
    if not isinstance(out, torch.Tensor):
        fail(f"{said} returned {describe(out)}; expected the clamped output, {describe(expected)}.", "not-a-tensor")
    if out.dtype != raw.dtype:
        fail(f"{said} returned {describe(out)}; the module's output has dtype {raw.dtype}. The clamped output "
             "keeps the output's dtype, as output.clamp(...) does (no .float(), .half() or .to(...)).",
             "dtype-changed")
    if close(out, raw):
        fail(f"{said} returned the output unclamped, {describe(out)}. A forward hook that returns None leaves "
             "the output as it was: return the clamped tensor.", "clamp-not-returned")
    if not close(out, expected):
        slug, hint = "wrong-clamp-value", ""
        if close(out, raw.clamp(min=low)):
            slug, hint = "lower-bound-only", f" Only the lower bound, {low}, was applied; clamp to both bounds."
        elif close(out, raw.clamp(max=high)):
            slug, hint = "upper-bound-only", f" Only the upper bound, {high}, was applied; clamp to both bounds."
        fail(f"{said} returned {describe(out)}; expected the output clamped to [{low}, {high}], "
             f"{describe(expected)}.{hint}", slug)


def _check_clamp_gradients(out, raw, x, module, low, high, seed, said, call_text):
    """The gradient passes where the output was strictly inside the bounds, and is 0 beyond them."""
    if out.grad_fn is None:
        fail(f"{said} returned a tensor cut off from the autograd graph (grad_fn None, requires_grad="
             f"{out.requires_grad}), so no gradient reaches the module's weights or its input. Build the clamped "
             "tensor from the output itself: no .detach(), .data or torch.no_grad() in the hook.", "cut-off-from-graph")
    params = (x, module.linear.weight, module.linear.bias)
    grad_out = _zero_on_the_bounds(random_tensor(seed + 2, tuple(out.shape)), raw, low, high)
    with calling(f"computing gradients through the module after {call_text}"):
        got = torch.autograd.grad(_weighted(out, grad_out), params, allow_unused=True)
    wanted = _expected_gradients(raw, low, high, grad_out, params)
    for which, (what, mine, theirs) in enumerate(zip(_GRADIENTS, got, wanted)):
        if mine is not None and close(mine, theirs):
            continue
        slug, hint = _gradient_hint(mine, which, raw, params, grad_out)
        fail(f"{said}: the gradient with respect to {what} was {describe(mine)}; expected {describe(theirs)}, "
             f"with the gradient of the output {_CONTRACT} (outputs exactly on a bound are not graded).{hint}", slug)


def _check_every_call_clamped(module, x, expected, said, call_text):
    """A second call, a call under torch.no_grad() and one in eval() mode are clamped too."""
    with calling(f"calling the module a second time after {call_text}"):
        again = module(x)
    if not isinstance(again, torch.Tensor) or not close(again, expected):
        fail(f"{said} was clamped, but a second call returned {describe(again)}; expected the clamped output "
             f"again, {describe(expected)}: clamp every call's output, not only the first.", "first-call-only")
    with calling(f"calling the module under torch.no_grad() after {call_text}"), torch.no_grad():
        quiet = module(x)
    if not isinstance(quiet, torch.Tensor) or not close(quiet, expected):
        fail(f"{said} under torch.no_grad() returned {describe(quiet)}; expected the clamped output, "
             f"{describe(expected)}. Hooks fire under no_grad too: clamp every call's output, "
             "whatever the grad mode (no test of output.requires_grad or torch.is_grad_enabled()).",
             "skipped-under-no-grad")
    module.eval()
    with calling(f"calling the module in eval() mode after {call_text}"):
        evaluated = module(x)
    module.train()
    if not isinstance(evaluated, torch.Tensor) or not close(evaluated, expected):
        fail(f"{said} in eval() mode returned {describe(evaluated)}; expected the clamped output, "
             f"{describe(expected)}. Hooks fire in eval() mode too: clamp every call's output, in "
             "training and in eval() mode alike (no test of module.training).", "skipped-in-eval")


def _min_max_with_a_number(error):
    """(slug, hint) for torch.min or torch.max given a Python number as its second argument."""
    if isinstance(error, TypeError) and any(f"{name}() received an invalid combination of arguments" in str(error)
                                            for name in ("min", "max")):
        return "torch-min-max-with-a-number", (
            "torch.min(output, other) and torch.max(output, other) take another tensor as `other`, not a Python "
            "number (the signatures above); output.clamp(min_value, max_value) takes the bounds as numbers.")
    return None


# What torch's errors in the hook mean for this exercise (hooked.checks.torch_error_hints).
_CLAMP_ERROR_HINTS = (
    ("Boolean value of Tensor with more than one value is ambiguous", "tensor-as-a-bool",
     "A tensor of several elements was used where Python needs one True or False: Python's min() and max() "
     "(or an `if` on a tensor) compare whole tensors. Clamp element by element: output.clamp(min_value, max_value)."),
    _min_max_with_a_number,
    ("functions with out=... arguments don't support automatic differentiation", "clamp-with-out",
     "out= writes the result into an existing tensor, in place, which autograd refuses for a tensor that "
     "requires grad; and the module's output must not be changed in place: return a new tensor, "
     "output.clamp(min_value, max_value), without out=."),
)


def _clamp_case(clamp_output, seed, low, high, batch, dtype):
    rng = random.Random(seed)
    width, out_width = rng.randint(3, 6), rng.randint(3, 6)
    torch.manual_seed(seed)
    module = _KeepsOutput(width, out_width).to(dtype)
    _put_outputs_on_the_bounds(module.linear, low, high)
    x = random_tensor(seed + 1, batch + (width,), dtype=dtype, scale=3.0).requires_grad_()
    raw = F.linear(x, module.linear.weight, module.linear.bias)
    expected = raw.clamp(low, high)
    call_text = f"clamp_output(module, {low}, {high})"
    handle = _register_clamp(clamp_output, module, low, high, call_text)
    with calling_with_hints(f"calling the module after {call_text}", _CLAMP_ERROR_HINTS):
        out = module(x)
    said = f"After {call_text}, a call of the module on x = {describe(x.detach())}"
    _judge_clamped(out, module.last, raw.detach(), expected.detach(), low, high, said)
    _check_clamp_gradients(out, raw, x, module, low, high, seed, said, call_text)
    _check_every_call_clamped(module, x, expected.detach(), said, call_text)
    with calling(f"calling handle.remove() on the handle returned by {call_text}"):
        handle.remove()
    with torch.no_grad():
        after = module(x)
    if module._forward_hooks or not close(after, raw.detach()):
        fail(f"after handle.remove(), the module's output is {describe(after)}, still clamped; return the "
             "handle of the hook that clamps.", "clamps-after-removal")


def _check_clamps_chain(clamp_output):
    """Several clamps at once: each call registers its own hook, with its own bounds, and leaves the others
    alone; two on one module chain, the second getting what the first returned."""
    torch.manual_seed(96)
    first, second = _KeepsOutput(4, 5), _KeepsOutput(4, 5)
    x = random_tensor(97, (3, 4), scale=3.0)
    with torch.no_grad():
        raw_first, raw_second = first(x), second(x)
    calls = "clamp_output(first, -0.5, 0.5), clamp_output(second, -1.0, 1.0), then clamp_output(first, 0.0, 1.0)"
    with calling(f"calling {calls}"):
        handles = [clamp_output(first, -0.5, 0.5), clamp_output(second, -1.0, 1.0), clamp_output(first, 0.0, 1.0)]
    with calling(f"calling the modules after {calls}"), torch.no_grad():
        got_first, got_second = first(x), second(x)
    want_first, want_second = raw_first.clamp(-0.5, 0.5).clamp(0.0, 1.0), raw_second.clamp(-1.0, 1.0)
    if not close(got_second, want_second):
        unclamped = " It is not clamped at all." if close(got_second, raw_second) else ""
        fail(f"After {calls}, second(x) returned {describe(got_second)}; expected its output clamped to "
             f"[-1.0, 1.0], {describe(want_second)}.{unclamped} A later call of clamp_output removed or changed the "
             "hook an earlier call registered (state kept between calls, such as a handle at module level): "
             "each call registers its own hook and leaves the others alone.", "other-hooks-disturbed")
    if not close(got_first, want_first):
        last_bounds = close(got_first, raw_first.clamp(0.0, 1.0))
        hint = (" That is the output clamped to [0.0, 1.0] only: the first call's hook is gone, or it clamps with "
                "the last call's bounds (bounds kept on the module or in a global, not in the hook itself).")
        fail(f"After {calls}, first(x) returned {describe(got_first)}; expected its output clamped to [-0.5, 0.5] "
             f"by the first hook and then to [0.0, 1.0] by the second, {describe(want_first)}: the forward hooks of "
             f"one module chain, each getting the output the one before returned.{hint if last_bounds else ''} "
             "Each call registers its own hook, with its own bounds.",
             "bounds-shared-between-calls" if last_bounds else "hooks-not-chained")
    for handle in handles:
        handle.remove()


_CLAMP_MISTAKES = {
    "forward-replaced": "replaces or wraps module.forward instead of registering a forward hook",
    "no-forward-hook": "registers no forward hook on the module",
    "tensor-as-a-bool": "uses a tensor where Python needs one True or False (Python's min() and max() on a tensor)",
    "torch-min-max-with-a-number": "passes a Python number as the second argument of torch.min or torch.max",
    "clamp-with-out": "clamps with out=output, writing into the output in place",
    "input-clamped": "clamps the module's input (a forward pre-hook) instead of its output",
    "in-place": "changes the module's own output in place (clamp_, .data, assignment into the output)",
    "not-a-tensor": "the hook returns something other than a tensor (a tuple, say)",
    "dtype-changed": "returns the clamped output converted to another dtype",
    "clamp-not-returned": "the hook does not return the clamped tensor, so the output stays unclamped",
    "lower-bound-only": "clamps to the lower bound only",
    "upper-bound-only": "clamps to the upper bound only",
    "wrong-clamp-value": "returns values other than the output clamped to the bounds (the bounds swapped, say)",
    "cut-off-from-graph": "returns a clamped tensor cut off from the autograd graph (detached, or under no_grad)",
    "unclamped-gradient": "passes the gradient unchanged also where the output was clipped (a straight-through clamp)",
    "no-gradient-inside": "passes no gradient even where the output was inside the bounds",
    "wrong-gradient": "passes a gradient other than the clamp's",
    "first-call-only": "clamps only the first call's output",
    "skipped-under-no-grad": "leaves the output unclamped under torch.no_grad()",
    "skipped-in-eval": "leaves the output unclamped in eval() mode",
    "clamps-after-removal": "returns the handle of another hook than the one that clamps",
    "other-hooks-disturbed": "removes or changes the hook an earlier call registered (state kept between calls)",
    "bounds-shared-between-calls": "clamps with the last call's bounds (bounds kept on the module or in a global)",
    "hooks-not-chained": "two clamps on one module do not chain, the second getting what the first returned",
}


@check_of("clamp_output", mistakes={**_CLAMP_MISTAKES, **{slug: HANDLE_MISTAKES[slug] for slug in (
    "handle-in-a-list", "no-handle", "not-a-removable-handle")}})
def check_clamp_output(clamp_output):
    for seed, low, high, batch, dtype in _CLAMP_CASES:
        _clamp_case(clamp_output, seed, low, high, batch, dtype)
    _check_clamps_chain(clamp_output)


SHARED_MODULE_CALLS = EventPrediction(
    exercise="predict_shared_module_calls", lesson="04_forward_hooks", code="shared_module_events",
    events=("pre:model", "pre:shared", "fwd:model", "fwd:shared", "fwd:head"),
    aliases=(("forward", "fwd"), ("prehook", "pre"), ("pre-hook", "pre"), ("pre_hook", "pre")),
    rules=(
        Rule("self.shared(self.shared(x)) calls shared exactly twice, and head and the model once: each call fires "
             "its module's hooks once, so no event fires more often than that.", repeated=True,
             mistake="event-repeated"),
        Rule("a module called twice fires its hooks twice, once per call: self.shared(self.shared(x)) is two "
             "calls of shared.", fired=("pre:shared",), predicted=("fwd:head", END), after=("fwd:shared",),
             mistake="shared-called-once"),
        Rule("Python evaluates self.head(self.shared(self.shared(x))) from the inside out: both calls of shared "
             "come first, and head is called last, with their result.", fired=("pre:shared",),
             predicted=("fwd:head",), mistake="head-before-shared"),
        Rule("a forward hook fires after its module's forward has returned, and the model's forward returns only "
             "after the calls of its children: the model's forward hook comes last.", predicted=("fwd:model",),
             mistake="parent-forward-hook-early"),
        Rule("the inner call self.shared(x) finishes, forward hook included, before the outer self.shared(...) "
             "starts: the outer call needs the inner call's output.", fired=("fwd:shared",),
             predicted=("pre:shared",), mistake="outer-call-before-inner"),
        Rule("each call is pre-hooks, forward, forward hooks; the model's pre-hook fires before its forward "
             "calls any child.", fired=("pre:model",),
             mistake="parent-pre-hook-late"),
    ),
    rule="each call module(x) runs that module's pre-hooks, its forward, then its forward hooks; the children's "
         "calls happen inside the parent's forward, in the order Python evaluates them.")

check_predict_shared_module_calls = prediction_check(SHARED_MODULE_CALLS)
