"""The judgement of lesson 11's records: a dict from name to a list of entries (activation statistics,
gradient norms) against what the checker's own hooks recorded on a copy of the model, clause by clause,
with the diagnoses that name a wrong entry's mistake. The checks of all three exercises share it."""

import math
from collections.abc import Mapping

import torch
from torch import nn

from hooked.checks.check_api import CheckFailed, fail
from hooked.checks.handles import handle_list, remove_handles
from hooked.checks.hooks_left import (MODULE_HOOK_DICTS, PARAMETER_HOOK_DICTS, global_hook_registrar,
                                     global_hooks_added, registered_hooks)
from hooked.checks.lesson_11_models import FIRST_OF_FIRST, OTHER_RULE, TUPLE_RULE
from hooked.checks.tensors import describe

_KEYS = ("mean", "std", "zero_fraction")
_LOOP_VARIABLE = ("If the records all landed under one name, the hook reads the loop variable when it runs: bind the "
                  "name when you make the hook (a function that returns the hook, or a default argument).")


# ---------------------------------------------------------------- records of either kind

def listed(places, shown=4):
    more = f" and {len(places) - shown} more" if len(places) > shown else ""
    return ", ".join(places[:shown]) + more


def hooks_left(model, ignore=()):
    """Where hooks of any kind are still registered on the model's modules and parameters (hooks in
    `ignore`, the checker's own, left out)."""
    kinds = ("forward", "forward_pre", "backward", "backward_pre", *PARAMETER_HOOK_DICTS)
    places = {(name, kind): None for name, kind, hook in registered_hooks(model, kinds)
              if all(hook is not mine for mine in ignore)}
    return [f"{MODULE_HOOK_DICTS[kind]} of module {name!r}" if kind in MODULE_HOOK_DICTS
            else f"{'tensor' if kind == 'tensor' else 'post-accumulate-grad'} hooks of parameter {name!r}"
            for name, kind in places]


def _number(value, where):
    """A recorded value as a float; fails for a tensor that keeps the autograd graph alive."""
    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            fail(f"{where} is {describe(value)} that requires grad (grad_fn {type(value.grad_fn).__name__}): "
                 "it keeps the autograd graph of that step alive, and one such value per step keeps every step's "
                 "graph. Store a number: .item(), or compute on a detached tensor (.detach()).", "value-requires-grad")
        if value.dim() != 0:
            fail(f"{where} is {describe(value)}; expected one number, a Python float or a 0-dim tensor "
                 "(.item() gives the float).", "value-not-one-number")
        return value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        fail(f"{where} is {describe(value)}; expected a number (a Python float or a 0-dim tensor).",
             "value-not-a-number")
    return float(value)


def described_tensor(output):
    """The tensor that record_activation_stats describes: the output, or a tuple's or list's first item, taken
    again while it is a tuple or list."""
    while isinstance(output, (tuple, list)) and output:
        output = output[0]
    return output if isinstance(output, torch.Tensor) else None


def _near(actual, expected):
    if math.isnan(expected):
        return math.isnan(actual)
    return math.isclose(actual, expected, rel_tol=1e-4, abs_tol=1e-5)


def unpack_pair(result, call_text, what):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{call_text} returned {describe(result)}; expected a pair {what}.", "not-a-pair")
    records, handles = result
    if not isinstance(records, Mapping) and isinstance(handles, Mapping):
        fail(f"{call_text} returned (a {type(records).__name__}, a {type(handles).__name__}): the records come "
             f"second; expected the pair {what}, in that order.", "pair-swapped")
    if not isinstance(records, Mapping):
        fail(f"{call_text} returned {describe(records)} as its records; expected a dict from name to list.",
             "records-not-a-dict")
    return records, handle_list(handles, call_text, "a RemovableHandle that a register_... call returned",
                                "RemovableHandles", iterator_allowed=True)


def global_hooks_left(before):
    return [f"a global {name.removeprefix('_global_').removesuffix('_hooks').replace('_', ' ')} hook "
            f"(torch.nn.modules.module.{global_hook_registrar(name)})" for name in global_hooks_added(before)]


def remove_all(handles, call_text, model, globals_before=frozenset()):
    remove_handles(handles, f"removing every handle returned by {call_text}")
    left = hooks_left(model) + global_hooks_left(globals_before)
    if left:
        fail(f"after removing every handle returned by {call_text}, hooks were still registered: {listed(left)}. "
             "Return the handle of every hook you registered.", "handle-not-returned")


def nonempty_lists(records, call_text, said):
    """The records as {key: list}, with keys whose list is empty left out."""
    result = {}
    for key, entries in records.items():
        if not isinstance(entries, (list, tuple)):
            fail(f"{said} the entry {key!r} of what {call_text} recorded is {describe(entries)}; expected a list "
                 "with one entry per call.", "entries-not-a-list")
        if entries:
            result[key] = list(entries)
    return result


def _check_keys(recorded, expected, said, what, duplicates, explain_missing=None, explain_unexpected=None):
    """`duplicates` maps a second name of a shared object to its first name; `explain_missing(missing)`
    says why names may lack records, `explain_unexpected(names)` why names may have records that should
    not be there: each gives (the explanation, the slug of its mistake), or None."""
    names = [key for key in recorded if not isinstance(key, str) or key not in expected]
    objects = [key for key in names if isinstance(key, (nn.Module, torch.Tensor))]
    if objects and len(objects) == len(names):
        fail(f"{said} the records are keyed by the {what} objects themselves (keys of type "
             f"{type(objects[0]).__name__}); expected the {what}'s names as named_{what}s() gives them, "
             f"{sorted(expected)}: a name is what a reader finds in the model and a plot can label.", "keyed-by-object")
    by_type = [key for key in names if isinstance(key, type) or isinstance(getattr(nn, str(key), None), type)]
    if by_type:
        fail(f"{said} the records are keyed by {by_type}; expected the {what}'s names as "
             f"named_{what}s() gives them, {sorted(expected)}: keyed by type, two layers of one type "
             "mix their records.", "keyed-by-type")
    numbered = [key for key in names if isinstance(key, int)]
    if numbered and len(numbered) == len(names):
        fail(f"{said} the records are keyed by numbers, {sorted(numbered)}; expected the {what}'s names as "
             f"named_{what}s() gives them, {sorted(expected)}: a position in {what}s() names nothing a reader "
             "can find.", "keyed-by-position")
    shared = [key for key in names if key in duplicates]
    if shared:
        fail(f"{said} there are records under {shared}, a second name of the same {what} object as "
             f"{[duplicates[key] for key in shared]}: named_{what}s() lists a shared {what} once, under its first "
             f"name. Listing with remove_duplicate=False hooks it twice.", "second-name-recorded")
    _check_names(recorded, expected, names, said, what, explain_missing, explain_unexpected)


def _check_names(recorded, expected, names, said, what, explain_missing, explain_unexpected):
    """Records under `names`, which should not be there, or none for some expected names."""
    missing = [name for name in expected if name not in recorded]
    why, why_slug = (explain_missing(missing) if explain_missing and missing else None) or ("", None)
    if not why and len(recorded) == 1 and missing:
        why, why_slug = _LOOP_VARIABLE, "name-from-loop-variable"
    if not why and missing:
        why, why_slug = (f"Register a hook on every {what} that the contract names, as named_{what}s() lists them.",
                         f"{what}s-missing")
    if names:
        # A record under one wrong name and none under the right ones: the missing names' explanation names it.
        named_by_missing = why_slug if why_slug == "name-from-loop-variable" else "unexpected-names"
        unexpected, slug = (explain_unexpected(names) if explain_unexpected else None) or ("", named_by_missing)
        fail(f"{said} there are records under {names}, which should not be recorded; expected names "
             f"{sorted(expected)}." + (f" {unexpected}" if unexpected else "")
             + (f" Nothing was recorded for {missing}. {why}" if missing else ""), slug)
    if missing and not recorded:
        fail(f"{said} nothing was recorded at all; expected records for {sorted(expected)}. Register a hook on "
             f"each {what} and return the dict that the hooks fill.", "nothing-recorded")
    if missing:
        fail(f"{said} nothing was recorded for {missing} (records hold {sorted(map(str, recorded))}). {why}", why_slug)


def check_fresh(records, call_text, before_what):
    """The records a call returns hold nothing yet: each call makes its own dict."""
    if any(isinstance(entries, (list, tuple)) and entries for entries in records.values()):
        fail(f"{call_text} returned records that already hold entries, before {before_what}: "
             f"{sorted(map(str, records))}. Those come from an earlier call: make a new dict in each call (not one "
             "at module level, or a default argument), or the records of two models mix.", "records-kept-between-calls")


# ---------------------------------------------------------------- activation statistics

def _kind(output):
    """The type of an output that is not a tensor, said so that an empty list or a tuple in a tuple shows."""
    kind = type(output).__name__
    if isinstance(output, (tuple, list)) and not output:
        return f"empty {kind}"
    if isinstance(output, (tuple, list)) and not isinstance(output[0], torch.Tensor):
        return f"{kind} whose first item is a {_kind(output[0])}"
    return kind


class OutputRecorder:
    """The checker's forward hooks on a copy: every described output (and first input) of every module of
    the chosen types; `kinds[name]` is the type of a module's output when it is not a tensor."""

    def __init__(self, model, layer_types):
        self.outputs, self.inputs, self.kinds = {}, {}, {}
        for name, module in model.named_modules():
            if isinstance(module, layer_types):
                module.register_forward_hook(lambda module, args, output, name=name: self.record(name, args, output))

    def record(self, name, args, output):
        if not isinstance(output, torch.Tensor):
            self.kinds[name] = _kind(output)
        described = described_tensor(output)
        if described is not None:
            self.outputs.setdefault(name, []).append(described.detach().clone())
            first_input = described_tensor(args)  # a PackedSequence's data too
            self.inputs.setdefault(name, []).append(None if first_input is None else first_input.detach().clone())


def _stats_of(output):
    return {"mean": output.mean().item(), "std": output.std().item(),
            "population std": output.std(correction=0).item(), "zero_fraction": (output == 0).float().mean().item()}


def _check_entry(entry, output, where, module_input, kind=None):
    if not isinstance(entry, Mapping):
        fail(f"{where} is {describe(entry)}; expected a dict with the keys {list(_KEYS)}.", "entry-not-a-dict")
    missing = [key for key in _KEYS if key not in entry]
    if missing:
        fail(f"{where} has the keys {sorted(map(str, entry))}; it lacks {missing}. Expected exactly "
             f"{list(_KEYS)}.", "entry-keys-missing")
    expected = _stats_of(output)
    values = {key: _number(entry[key], f"{where}[{key!r}]") for key in _KEYS}
    first_item = (f" The module returned a {kind}; {TUPLE_RULE.lower()}, {describe(output)}, and only that "
                  "item." if kind in ("tuple", "list") else "")
    _check_mean(values["mean"], expected, output, module_input, where, first_item)
    _check_std(values["std"], expected, output, where, first_item)
    _check_zero_fraction(values["zero_fraction"], expected, output, where, first_item)


def _check_mean(mean, expected, output, module_input, where, first_item):
    if _near(mean, expected["mean"]):
        return
    said = (f"{where}['mean'] is {mean:.6g}; the module's output, {describe(output)}, has mean "
            f"{expected['mean']:.6g} over all its elements.")
    if module_input is not None and _near(mean, module_input.mean().item()):
        fail(f"{said} That is the mean of the module's input: record its output (a forward hook's third argument)."
             + first_item, "stats-of-input")
    fail(said + first_item, "wrong-mean")


def _check_std(std, expected, output, where, first_item):
    if _near(std, expected["std"]):
        return
    if _near(std, expected["population std"]):
        fail(f"{where}['std'] is {std:.6g}, the population standard deviation (dividing by n, "
             f"correction=0, as numpy's std does); expected torch's default, output.std(), which divides by "
             f"n - 1 (correction=1): {expected['std']:.6g}.", "population-std")
    said = (f"{where}['std'] is {std:.6g}; the module's output, {describe(output)}, has "
            f"output.std() {expected['std']:.6g} over all its elements.")
    if _near(std, expected["std"] ** 2):
        fail(f"{said} That is the variance, output.var(); the std is its square root.", "variance-not-std")
    fail(said + first_item, "wrong-std")


def _counts_near_zero(value, output, expected=None):
    """Whether `value` is the fraction of elements within a threshold of 0, some of them not 0."""
    return any(_near(value, (output.abs() <= near).float().mean().item()) and (
        (output.abs() <= near) & (output != 0)).any() for near in (1e-3, 1e-4, 1e-6, 1e-8))


# What a wrong zero_fraction was computed as: (test of (value, output, expected), slug, hint). Near zeros
# first: the checker's inputs hold a few (1e-5, 1e-9), and their count can happen to equal that of the
# non-zero elements.
_ZERO_FRACTION_MISTAKES = (
    (_counts_near_zero, "counts-near-zero",
     " That counts elements near 0 too (|x| below a threshold); count only the elements exactly equal to 0 "
     "(output == 0)."),
    (lambda value, output, expected: _near(value, 1 - expected["zero_fraction"]), "nonzero-fraction",
     " That is the fraction of non-zero elements."),
    (lambda value, output, expected: _near(value, (output <= 0).float().mean().item()), "counts-negatives",
     " That is the fraction of elements <= 0, which counts the negative elements too; count only the elements "
     "exactly equal to 0 (output == 0)."),
    (lambda value, output, expected: _near(value, int((output == 0).sum())), "zero-count",
     " That is the number of zeros; divide by the number of elements."),
)


def _check_zero_fraction(value, expected, output, where, first_item):
    if _near(value, expected["zero_fraction"]):
        return
    said = (f"{where}['zero_fraction'] is {value:.6g}; {int((output == 0).sum())} of the output's "
            f"{output.numel()} elements are exactly 0, a fraction of {expected['zero_fraction']:.6g}.")
    for test, slug, hint in _ZERO_FRACTION_MISTAKES:
        if test(value, output, expected):
            fail(said + hint, slug)
    fail(said + first_item, "wrong-zero-fraction")


def _entry_matches(entry, output, module_input):
    try:
        _check_entry(entry, output, "", module_input)
    except CheckFailed:
        return False
    return True


def why_modules_missing(model, layer_types, kinds):
    """Says why modules of `model` may have no records, and the slug of the mistake that skips them."""
    modules = dict(model.named_modules())

    def explain(missing):
        structured = [f"{name!r} returns a {kinds[name]}" for name in missing if name in kinds]
        if structured and any("whose first item" in kinds[name] for name in missing if name in kinds):
            return (f"Module {', '.join(structured)}: {TUPLE_RULE.lower()}, and {FIRST_OF_FIRST}, so it has one "
                    "entry per call too.", "nested-first-item-skipped")
        if structured:
            return (f"Module {', '.join(structured)}: {TUPLE_RULE.lower()} (a list as well as a tuple), so it "
                    "has one entry per call too.", "tuple-output-skipped")
        if "" in missing:
            return (f"Module '' is the model itself, a {type(model).__name__}, so one of the layer types: "
                    "named_modules() lists it first, under the name '', and it gets a hook too.",
                    "model-itself-skipped")
        subclassed = [f"{name!r} is a {type(modules[name]).__name__}" for name in missing
                      if name in modules and type(modules[name]) not in layer_types]
        if subclassed and len(subclassed) == len(missing):
            return (f"Module {', '.join(subclassed)}, a subclass of one of the layer types: isinstance(module, "
                    "layer_types) counts it, comparing type(module) does not.", "exact-type-compared")
        if all("." in name for name in missing):
            return ("Those are nested modules: named_children() lists only the model's direct children, "
                    "named_modules() walks every module inside.", "nested-modules-skipped")
        return None
    return explain


def _why_unexpected(kinds):
    def explain(names):
        other = [f"{name!r} returned a {kinds[name]}" for name in names if name in kinds]
        if other:
            return f"Module {', '.join(other)}: {OTHER_RULE}.", "entry-without-tensor"
        return None
    return explain


def compare_stats(stats, reference, call_text, said, duplicates, explain_missing=None):
    recorded = nonempty_lists(stats, call_text, said)
    _check_keys(recorded, reference.outputs, said, "module", duplicates, explain_missing,
                _why_unexpected(reference.kinds))
    for name, outputs in reference.outputs.items():
        entries = recorded[name]
        _check_entry_count(len(entries), len(outputs), f"{said} stats[{name!r}]")
        inputs = reference.inputs[name]
        in_order = all(_entry_matches(entry, output, module_input)
                       for entry, output, module_input in zip(entries, outputs, inputs))
        if not in_order and len(entries) > 1 and all(
                _entry_matches(entry, output, module_input)
                for entry, output, module_input in zip(entries[::-1], outputs, inputs)):
            fail(f"{said} stats[{name!r}] holds the entries of the module's {len(outputs)} calls in reverse order; "
                 "expected them in the order of the calls: append each new entry at the end.", "reverse-order")
        for index, (entry, output) in enumerate(zip(entries, outputs)):
            _check_entry(entry, output, f"{said} stats[{name!r}][{index}]", inputs[index], reference.kinds.get(name))


def _check_entry_count(count, calls, where):
    """`where` ("... stats['0']") holds `count` entries of a module called `calls` times."""
    if count == calls:
        return
    if count == 1 < calls:
        fail(f"{where} holds 1 entry; the module was called {calls} times so far. Append one entry per call to the "
             "module's list instead of replacing the list.", "list-replaced")
    said = f"{where} holds {count} entries; the module was called {calls} time(s) so far, one entry per call."
    if count == 2 * calls:
        fail(f"{said} Twice as many: is a hook registered twice on it (a cell run twice, or the module found under "
             "two names)?", "hooked-twice")
    if count < calls:
        fail(f"{said} A module called twice in one forward pass fires its hook twice: one entry per call.",
             "calls-missed")
    if count != calls:
        fail(said, "too-many-entries")


# ---------------------------------------------------------------- gradient norms

class GradRecorder:
    """The checker's tensor hooks on a copy: each backward's gradient of each parameter."""

    def __init__(self, model):
        self.grads = {}
        for name, parameter in model.named_parameters():
            if parameter.requires_grad:
                parameter.register_hook(
                    lambda grad, name=name: self.grads.setdefault(name, []).append(grad.detach().clone()))


def _why_parameters_missing(missing):
    if missing and all(name.endswith("bias") for name in missing):
        return "Those are biases: hook every parameter that requires grad, the biases too.", "biases-skipped"
    return None


def _why_unexpected_parameters(never, module_names):
    def explain(names):
        idle = [name for name in names if name in never]
        if idle:
            return (f"No backward pass computed a gradient for {idle} (never used in forward): a pass that computes "
                    "no gradient for a parameter adds no entry for it.", "entry-without-gradient")
        if all(name in module_names for name in names):
            return ("Those are module names: record per parameter, with a tensor hook on each parameter, under its "
                    "named_parameters() name.", "module-names")
        return None
    return explain


def _misnamed(recorded, reference):
    """(name, other) when the norms recorded under `name` are those of parameter `other`, else None."""
    norms = {name: [grad.norm().item() for grad in grads] for name, grads in reference.grads.items()}

    def values(entries):
        try:
            return [_number(entry, "") for entry in entries]
        except CheckFailed:
            return None

    for name, entries in recorded.items():
        found = values(entries)
        if found is None or name not in norms or norms[name] == found or (
                len(found) == len(norms[name]) and all(map(_near, found, norms[name]))):
            continue
        for other, expected in norms.items():
            if other != name and len(found) == len(expected) and all(map(_near, found, expected)):
                return name, other
    return None


def compare_norms(norms, reference, accumulated, clipped, call_text, said, duplicates, frozen_names=(), stale=None,
                   skipped=None, never=(), module_names=()):
    """`accumulated[name][i]`, `stale[name][i]`: the norm of .grad after and before the i-th backward pass that
    computed a gradient for `name` (None: not known); `skipped[name]`: the passes that computed none for it."""
    recorded = nonempty_lists(norms, call_text, said)
    misnamed = _misnamed(recorded, reference)
    if misnamed:
        fail(f"{said} norms[{misnamed[0]!r}] holds the norms of the gradients of {misnamed[1]!r}: each name must go "
             "with its own parameter. Take both from named_parameters() together (for name, parameter in "
             "model.named_parameters()); names zipped with parameters() drift apart once one is skipped.",
             "names-misaligned")
    frozen = [name for name in recorded if name in frozen_names]
    _check_keys({k: v for k, v in recorded.items() if k not in frozen}, reference.grads, said, "parameter",
                duplicates, _why_parameters_missing, _why_unexpected_parameters(never, module_names))
    if frozen:
        fail(f"{said} there are records for {frozen}, parameters that do not require grad (or got no gradient); "
             "expected none.", "frozen-recorded")
    for name, grads in reference.grads.items():
        where = f"{said} norms[{name!r}]"
        entries = recorded[name]
        _check_norm_count(len(entries), len(grads), (skipped or {}).get(name), where)
        values = [_number(entry, f"{where}[{index}]") for index, entry in enumerate(entries)]
        expected_norms = [grad.norm().item() for grad in grads]
        if len(values) > 1 and not all(map(_near, values, expected_norms)) \
                and all(map(_near, values[::-1], expected_norms)):
            fail(f"{where} holds the norms of the {len(grads)} backward passes in reverse order; "
                 "expected them in the order of the passes: append each new norm at the end.", "reverse-order")
        for index, (value, expected) in enumerate(zip(values, expected_norms)):
            if not _near(value, expected):
                known = dict(accumulated=accumulated[name][index] if accumulated else None,
                             stale=stale[name][index] if stale else None,
                             clipped=clipped.get(name, {}).get(index))
                _diagnose_norm(value, expected, known, name, f"{where}[{index}]")


def _check_norm_count(count, passes, skipped, where):
    """`where` ("... norms['0.weight']") holds `count` entries of a parameter that `passes` backward passes
    computed a gradient for; `skipped`: the passes that computed none for it."""
    if count == 1 < passes:
        fail(f"{where} holds 1 entry; {passes} backward passes computed a gradient for that parameter. Append one "
             "entry per backward pass instead of replacing the list.", "list-replaced")
    if count > passes and skipped:
        fail(f"{where} holds {count} entries; {passes} backward passes computed a gradient for that parameter, "
             f"and pass(es) {skipped} computed none (its branch did not run). A backward pass that computes no "
             "gradient for a parameter adds no entry for it.", "entry-without-gradient")
    if count != passes:
        fail(f"{where} holds {count} entries; {passes} backward pass(es) computed a gradient for that parameter, "
             "one entry each. A tensor hook fires once per backward pass, with the gradient summed over every "
             "use of the parameter.", "wrong-entry-count")


# What a wrong norm was computed from: (test of (value, expected, known), slug, message after "{where} is
# {value}"). `known`: the norm of .grad after the pass ("accumulated"), before it ("stale", None when
# unknown) and after clipping ("clipped", None when the pass was not clipped).
_NORM_MISTAKES = (
    (lambda value, expected, known: not math.isfinite(expected) and math.isfinite(value), "nonfinite-hidden",
     "; the gradient that backward pass computed for {name!r} holds inf or NaN, and its L2 norm is {expected:.6g}. "
     "Record the norm of the gradient as it is (a torch.nan_to_num() or a filter of the non-finite elements hides "
     "the very values a monitor is for)."),
    (lambda value, expected, known: known["accumulated"] is not None and _near(value, known["accumulated"]),
     "accumulated-grad",
     ", the norm of .grad after that backward pass, which holds the sum of the gradients of every backward pass "
     "since the last zero_grad(); that pass's own gradient has norm {expected:.6g}. Under gradient accumulation a "
     "post-accumulate-grad hook (or .grad) sees the running sum: use a tensor hook, parameter.register_hook, and "
     "the gradient it receives."),
    (lambda value, expected, known: known["stale"] is not None and _near(value, known["stale"]), "grad-before-update",
     ", the norm of .grad before that backward pass (0 when .grad was None); that pass's own gradient has norm "
     "{expected:.6g}. A tensor hook runs before .grad is updated: take the norm of the gradient the hook receives."),
    (lambda value, expected, known: _near(value, expected ** 2), "squared-norm",
     ", the squared norm; expected the L2 norm {expected:.6g} (grad.norm(), the square root of the sum of "
     "squares)."),
    # No submission can record a norm after the checker's clip_grad_norm_ (its hooks run in backward, and a recorded
    # number does not change): a wrong norm that equals the clipped one is "wrong-norm", with this explanation.
    (lambda value, expected, known: known["clipped"] is not None and _near(value, known["clipped"]), "wrong-norm",
     ", the norm after clip_grad_norm_ scaled .grad; expected the gradient backward computed, before clipping: "
     "{expected:.6g}."),
)


def _diagnose_norm(value, expected, known, name, where):
    for test, slug, message in _NORM_MISTAKES:
        if test(value, expected, known):
            fail(f"{where} is {value:.6g}" + message.format(name=name, expected=expected), slug)
    fail(f"{where} is {value:.6g}; the gradient that backward pass computed for {name!r} has L2 norm "
         f"{expected:.6g}.", "wrong-norm")


def requires_grad(model):
    return {name: parameter.requires_grad for name, parameter in model.named_parameters()}


def check_training_modes(model, before, after_what):
    changed = [repr(name) + (" (the model itself)" if name == "" else "") for name, module in model.named_modules()
               if module.training != before[name]]
    if changed:
        fail(f"{after_what}, the training mode changed for {listed(changed)} (model.train() or model.eval() "
             "called?): the monitor must leave the model as it found it, and a model in eval mode behaves "
             "differently (dropout, batch norm).", "training-mode-changed")


def check_requires_grad(model, before, after_what):
    changed = [name for name, flag in requires_grad(model).items() if before.get(name) != flag]
    if changed:
        fail(f"{after_what}, requires_grad changed for {changed} (it was {[before.get(name) for name in changed]}): "
             "a frozen parameter must stay frozen, or it trains. Give it no hook instead "
             "(if parameter.requires_grad: ...).", "requires-grad-changed")


def same_tensors(a, b):
    """Equal tensors (or both None), NaN where the other has NaN."""
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and torch.equal(a.isnan(), b.isnan()) and torch.equal(a[~a.isnan()], b[~b.isnan()])
