"""Checks for lesson 11, the capstone training monitor.

Each check runs the learner's hooks on a fresh seeded model and the same steps on a deep copy
watched by the checker's own hooks, and compares what the two recorded."""

import copy
import math
import random
import traceback
import warnings
from collections.abc import Mapping

import torch
from torch import nn

from hooked.checks.check_api import CheckFailed, LearnerCodeRaised, calling, check_of, fail
from hooked.checks.handles import MISTAKES as HANDLE_MISTAKES, handle_list, remove_handles
from hooked.checks.isolation import torch_state_restored
from hooked.checks.hooks_left import (MODULE_HOOK_DICTS, PARAMETER_HOOK_DICTS, global_hook_registrar, global_hooks,
                                     global_hooks_added, registered_hooks)
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.seeding import seeded
from hooked.checks.tensors import describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints, fail_with_hint, hint_for
from hooked.feedback.learner_tracebacks import describe_learner_error, learner_raised_not_implemented

_KEYS = ("mean", "std", "zero_fraction")
_LOOP_VARIABLE = ("If the records all landed under one name, the hook reads the loop variable when it runs: bind the "
                  "name when you make the hook (a function that returns the hook, or a default argument).")


# ---------------------------------------------------------------- named mistakes

# What the shared judgement of records (a dict from name to list, and handles) recognizes, in
# record_activation_stats and track_grad_norms alike.
_RECORDS_MISTAKES = {
    **{slug: HANDLE_MISTAKES[slug] for slug in ("handles-as-dict", "handles-not-a-list", "not-handles")},
    "not-a-pair": "returns something other than a pair (records, handles)",
    "pair-swapped": "returns the pair in the wrong order, (handles, records)",
    "records-not-a-dict": "returns records that are not a dict from name to list",
    "records-kept-between-calls": "keeps the records dict between calls (at module level, or a default argument)",
    "handle-not-returned": "leaves out of the handles it returns the handle of a hook it registered",
    "entries-not-a-list": "records a name's entries as something other than a list",
    "keyed-by-object": "keys the records by the module or parameter objects instead of their names",
    "keyed-by-type": "keys the records by the type of the module instead of its name",
    "keyed-by-position": "keys the records by position numbers instead of names",
    "second-name-recorded": "records a shared module or tied parameter under its second name too",
    "unexpected-names": "records under names that are not the ones expected",
    "nothing-recorded": "records nothing at all (no hook registered, or another dict returned)",
    "name-from-loop-variable": "reads the name from the loop variable when the hook runs: every record under one name",
    "value-requires-grad": "records a tensor that requires grad, keeping every step's graph alive",
    "value-not-one-number": "records a tensor of more than one element where one number is expected",
    "value-not-a-number": "records something other than a number",
    "list-replaced": "replaces a name's list on every call instead of appending to it",
    "reverse-order": "records the entries in reverse order (inserted at the front)",
}
_STATS_MISTAKES = {
    "modules-missing": "hooks only some of the modules of the layer types",
    "tuple-output-skipped": "skips a module whose output is a tuple or list instead of describing its first item",
    "nested-first-item-skipped": "skips a module whose output's first item is itself a tuple or list",
    "model-itself-skipped": "skips the model itself (named_modules()'s '') when it is of a layer type",
    "exact-type-compared": "compares type(module) instead of isinstance, skipping subclasses",
    "nested-modules-skipped": "walks named_children() instead of named_modules(), skipping nested modules",
    "entry-without-tensor": "adds an entry for an output that leads to no tensor (a dict, None, an empty list)",
    "entry-not-a-dict": "records an entry that is not a dict of statistics",
    "entry-keys-missing": "records an entry without the keys mean, std and zero_fraction",
    "stats-of-input": "describes the module's input instead of its output",
    "wrong-mean": "records a mean that is not the output's mean over all its elements",
    "population-std": "records the population std (correction=0, numpy's) instead of output.std()",
    "variance-not-std": "records the variance instead of the standard deviation",
    "wrong-std": "records a std that is not output.std() over all its elements",
    "counts-near-zero": "counts elements near 0 as zeros (a threshold) instead of those exactly 0",
    "nonzero-fraction": "records the fraction of non-zero elements",
    "counts-negatives": "counts the elements <= 0 instead of those exactly 0",
    "zero-count": "records the number of zeros instead of their fraction",
    "wrong-zero-fraction": "records a zero_fraction that is not the fraction of elements exactly 0",
    "hooked-twice": "registers two hooks on a module (a cell run twice, or a module found under two names)",
    "calls-missed": "records fewer entries than the module's calls (a module called twice recorded once)",
    "too-many-entries": "records more entries than the module's calls",
    "structured-output-raised": "assumes every output is a tensor: the hook raises on a tuple, list, dict or None",
    "grad-mode-changed": "changes torch's global grad mode inside a hook",
    "output-changed-in-place": "changes a module's output in place",
    "output-replaced": "returns a value from the forward hook, replacing the output",
    "skips-no-grad": "records nothing under torch.no_grad()",
    "skips-eval-mode": "records nothing in eval mode",
}
_NORMS_MISTAKES = {
    "parameters-missing": "hooks only some of the parameters that require grad",
    "biases-skipped": "hooks the weights only, not the biases",
    "entry-without-gradient": "adds an entry for a backward pass that computed no gradient for the parameter",
    "module-names": "records per module (a module backward hook) instead of per parameter",
    "names-misaligned": "pairs names and parameters that drift apart (names zipped with parameters())",
    "frozen-recorded": "records parameters that do not require grad",
    "wrong-entry-count": "records another number of entries than the backward passes that computed a gradient",
    "nonfinite-hidden": "records a finite norm for a gradient holding inf or NaN (nan_to_num, a filter)",
    "accumulated-grad": "records the norm of the accumulated .grad (a post-accumulate-grad hook) instead of the pass's gradient",
    "grad-before-update": "records the norm of .grad read inside the tensor hook, before it is updated",
    "squared-norm": "records the squared norm instead of the L2 norm",
    "clipped-norm": "records the norm after clip_grad_norm_ instead of the gradient backward computed",
    "wrong-norm": "records a value that is not the L2 norm of the pass's gradient",
    "requires-grad-changed": "changes a parameter's requires_grad",
    "grad-changed": "changes a gradient or .grad (returns a value from the hook, or edits in place)",
    "grad-detached": "returns grad.detach() from the hook, cutting the graph of backward(create_graph=True)",
    "frozen-hooked": "registers a tensor hook on a frozen parameter, which torch refuses",
}
# What TrainingMonitor's check can see go wrong in the records of a monitor that records on its own (one that
# uses the first two exercises is sent back to them when they fail their checks). Not the others: its cases
# have no output of a layer type that leads to no tensor, no module called twice in a pass, no output near 0,
# and no explanation of missing modules (two ReLUs: one missing is a name read from the loop variable).
_MONITOR_RECORDS_MISTAKES = {slug: {**_RECORDS_MISTAKES, **_STATS_MISTAKES, **_NORMS_MISTAKES}[slug] for slug in (
    "entries-not-a-list", "keyed-by-object", "keyed-by-type", "keyed-by-position", "unexpected-names",
    "nothing-recorded", "name-from-loop-variable", "value-requires-grad", "value-not-one-number", "value-not-a-number",
    "list-replaced", "reverse-order", "entry-not-a-dict",
    "entry-keys-missing", "stats-of-input", "wrong-mean", "population-std", "variance-not-std", "wrong-std",
    "nonzero-fraction", "counts-negatives", "zero-count", "wrong-zero-fraction", "hooked-twice",
    "too-many-entries", "parameters-missing", "biases-skipped", "names-misaligned", "frozen-recorded",
    "wrong-entry-count", "squared-norm", "wrong-norm", "requires-grad-changed", "grad-changed",
    "structured-output-raised", "frozen-hooked")}
_MONITOR_MISTAKES = {
    "attribute-missing": "has no attribute activation_stats, grad_norms or first_nonfinite",
    "constructor-registers": "registers hooks in the constructor instead of in attach()",
    "records-not-empty-dict": "starts activation_stats or grad_norms as something other than an empty dict",
    "first-nonfinite-not-none": "starts first_nonfinite as something other than None",
    "attach-returns-other": "returns something other than the monitor from attach()",
    "attach-registers-nothing": "registers no hook in attach()",
    "output-changed": "changes a module's output (a hook returns a value)",
    "output-replaced-by-non-tensor": "returns a value that is no tensor from a forward hook, replacing the output",
    "training-changed": "changes the outputs or gradients, so the model trains differently",
    "records-copied": "keeps a copy of the records, made in attach(), instead of the dicts the hooks fill",
    "finite-place-named": "sets first_nonfinite to a place where every value was finite",
    "hooks-left-after-remove": "leaves hooks registered after remove()",
    "callers-hooks-removed": "removes hooks it did not register (clears the hook dicts)",
    "state-dict-changed": "adds keys to the model's state_dict (a buffer registered on it)",
    "remove-clears-records": "clears what was recorded when it removes its hooks",
    "model-changed-after-remove": "leaves the model behaving differently after remove()",
    "records-after-remove": "keeps recording after remove()",
    "remove-twice-raises": "raises when remove() is called a second time",
    "training-mode-changed": "changes the training mode of the model or its modules",
    "anomaly-detection-left-on": "turns on autograd's anomaly detection and leaves it on",
    "grad-mode-left-off": "leaves torch's grad mode off",
    "handles-of-first-attach-lost": "replaces its list of handles on a second attach(), so remove() leaves the first hooks",
    "inf-not-watched": "looks for NaN only, not for inf and -inf",
    "not-a-name": "sets first_nonfinite to something other than a module's or parameter's name",
    "module-named-for-gradient": "names the module that holds the parameter whose gradient was not finite",
    "not-the-first": "names a later place than the first that saw a non-finite value (or overwrites the first)",
    "sum-tested": "tests a sum or a norm for finiteness, which overflows where every element is finite",
    "outputs-not-watched": "does not watch the modules' outputs for non-finite values",
    "nan-not-watched": "looks for inf only, not for NaN",
    "gradients-not-watched": "does not watch the parameters' gradients for non-finite values",
    "model-itself-not-watched": "does not watch the model itself (named_modules()'s '')",
    "empty-name-taken-for-none": "takes the model's own name '' for 'not set' (not self.first_nonfinite) and overwrites it",
    "number-output-counted": "counts an output that is a Python number (inf) as non-finite",
    "nested-outputs-not-watched": "does not look through tuples, lists and dicts at any depth for non-finite tensors",
    "enter-returns-other": "returns something other than the monitor from __enter__",
    "enter-not-attaching": "does not attach in __enter__",
    "exit-not-removing": "does not remove the hooks in __exit__",
    "exit-not-removing-on-error": "does not remove the hooks in __exit__ when the block raises",
    "swallowed-exception": "returns a true value from __exit__, swallowing the block's exception",
    "earlier-exercise-not-written": "uses record_activation_stats or track_grad_norms while it is still the stub",
    "earlier-exercise-not-run": "uses record_activation_stats or track_grad_norms whose cell was not run",
    "earlier-exercise-failing": "uses record_activation_stats or track_grad_norms that fails its own check",
}


# ---------------------------------------------------------------- shared helpers

def _listed(places, shown=4):
    more = f" and {len(places) - shown} more" if len(places) > shown else ""
    return ", ".join(places[:shown]) + more


def _hooks_left(model, ignore=()):
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
        fail(f"{where} is {describe(value)}; expected a number (a Python float or a 0-dim tensor).", "value-not-a-number")
    return float(value)


def _tensors(value):
    """Every tensor in `value`, through tuples, lists and dict values at any depth."""
    if isinstance(value, torch.Tensor):
        return [value]
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (tuple, list)) else ()
    return [tensor for item in items for tensor in _tensors(item)]


def _described(output):
    """The tensor that record_activation_stats describes: the output, or a tuple's or list's first item, taken
    again while it is a tuple or list."""
    while isinstance(output, (tuple, list)) and output:
        output = output[0]
    return output if isinstance(output, torch.Tensor) else None


def _near(actual, expected):
    if math.isnan(expected):
        return math.isnan(actual)
    return math.isclose(actual, expected, rel_tol=1e-4, abs_tol=1e-5)


def _unpack(result, call_text, what):
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


def _global_hooks_left(before):
    return [f"a global {name.removeprefix('_global_').removesuffix('_hooks').replace('_', ' ')} hook "
            f"(torch.nn.modules.module.{global_hook_registrar(name)})" for name in global_hooks_added(before)]


def _remove_all(handles, call_text, model, globals_before=frozenset()):
    remove_handles(handles, f"removing every handle returned by {call_text}")
    left = _hooks_left(model) + _global_hooks_left(globals_before)
    if left:
        fail(f"after removing every handle returned by {call_text}, hooks were still registered: {_listed(left)}. "
             "Return the handle of every hook you registered.", "handle-not-returned")


def _lists(records, call_text, said):
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


def _check_fresh(records, call_text, before_what):
    """The records a call returns hold nothing yet: each call makes its own dict."""
    if any(isinstance(entries, (list, tuple)) and entries for entries in records.values()):
        fail(f"{call_text} returned records that already hold entries, before {before_what}: "
             f"{sorted(map(str, records))}. Those come from an earlier call: make a new dict in each call (not one "
             "at module level, or a default argument), or the records of two models mix.", "records-kept-between-calls")


def _sgd_step(model, lr):
    """p <- p - lr * p.grad by hand: no optimizer, so the notebook's check() never imports torch._dynamo
    (a torch.optim optimizer, PlainSGD too, imports it on construction outside the grading worker)."""
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.grad is not None:
                parameter.sub_(lr * parameter.grad)


def _run(doing, function, *args):
    with calling(doing):
        return function(*args)


# torch's refusal of a tensor hook on a frozen parameter, and what it means here.
_FROZEN_HOOKED = (("cannot register a hook on a tensor that doesn't require gradient", "frozen-hooked",
                   "A parameter that does not require grad (a frozen one) takes no tensor hook: test its "
                   "requires_grad and give it none."),)


# ---------------------------------------------------------------- record_activation_stats

class _TwoNames(nn.Module):
    """A ReLU held under two names and called twice per forward pass."""

    def __init__(self, width, out):
        super().__init__()
        self.act = nn.ReLU()
        self.linear = nn.Linear(width, width)
        self.again = self.act
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.again(self.linear(self.act(x))))


class _Recurrent(nn.Module):
    """An LSTM, which returns (output, (h_n, c_n)), and a linear head on its last step."""

    def __init__(self, width, hidden, out):
        super().__init__()
        self.lstm = nn.LSTM(width, hidden, batch_first=True)
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        sequence, _ = self.lstm(x)
        return self.head(sequence[:, -1])


class _PackedReader(_Recurrent):
    """_Recurrent's layers, its LSTM fed a packed batch of sequences of lengths 4, 3 and 2: it returns
    (PackedSequence, (h_n, c_n)), and a PackedSequence is a tuple whose first item is data."""

    def forward(self, x):
        packed = nn.utils.rnn.pack_padded_sequence(x, torch.tensor([4, 3, 2]), batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return self.head(h_n[-1])


class _LinearInto(nn.Module):
    """A Linear whose output h the subclass's `pack(h)` returns in a container of its kind."""

    def __init__(self, width, hidden):
        super().__init__()
        self.linear = nn.Linear(width, hidden)

    def forward(self, x):
        return self.pack(self.linear(x))


class ListPair(_LinearInto):
    """Returns a list: [linear(x), tanh(linear(x))]."""

    def pack(self, h):
        return [h, torch.tanh(h)]


class _Paired(nn.Module):
    def __init__(self, width, hidden, out):
        super().__init__()
        self.pair = ListPair(width, hidden)
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        h, gate = self.pair(x)
        return self.head(h * gate)


class Table(_LinearInto):
    """Returns a dict: {"out": linear(x), "gate": sigmoid(linear(x))}."""

    def pack(self, h):
        return {"out": h, "gate": torch.sigmoid(h)}


class Probe(nn.Module):
    """Looks at its input and returns None."""

    def forward(self, x):
        self.last_mean = float(x.detach().mean())


class _Tabled(nn.Module):
    def __init__(self, width, hidden, out):
        super().__init__()
        self.table = Table(width, hidden)
        self.probe = Probe()
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        parts = self.table(x)
        self.probe(parts["out"])
        return self.head(parts["out"] * parts["gate"])


class NestedTuple(_LinearInto):
    """Returns a tuple whose first item is a tuple: ((h, tanh(h)), h)."""

    def pack(self, h):
        return (h, torch.tanh(h)), h


class Found(nn.Module):
    """Returns the list of its input's rows whose mean is above 10: an empty list here."""

    def forward(self, x):
        return [row for row in x if row.mean() > 10]


class _Odd(nn.Module):
    def __init__(self, width, hidden, out):
        super().__init__()
        self.nest = NestedTuple(width, hidden)
        self.found = Found()
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        (h, gate), _ = self.nest(x)
        self.found(h)
        return self.head(h * gate)


def _case(model, shape, layer_types, duplicates=None, note=""):
    return dict(model=model, shape=shape, layer_types=layer_types, duplicates=duplicates or {}, note=note)


def _sizes(rng):
    return rng.randint(3, 5), rng.randint(4, 6), rng.randint(2, 4)


def _two_relus(rng):
    width, hidden, out = _sizes(rng)
    model = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, out))
    return _case(model, (3, width), (nn.ReLU,))


def _nested(rng):
    width, hidden, out = _sizes(rng)
    # The last layer is a subclass of Linear (the one nn.MultiheadAttention uses for its out_proj).
    model = nn.Sequential(nn.Sequential(nn.Linear(width, hidden), nn.Tanh()),
                          nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()),
                          nn.modules.linear.NonDynamicallyQuantizableLinear(hidden, out))
    return _case(model, (3, width), (nn.Linear, nn.Tanh))


def _rooted(rng):
    width, hidden, out = _sizes(rng)
    model = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Sequential(nn.Linear(hidden, out), nn.Tanh()))
    return _case(model, (3, width), (nn.Sequential,))


def _shared(rng):
    width, hidden, out = _sizes(rng)
    return _case(_TwoNames(width, out), (3, width), (nn.ReLU, nn.Linear), {"again": "act"})


_TUPLE_RULE = "An output that is a tuple or list is described by its first item"
_FIRST_OF_FIRST = ("a first item that is a tuple or list is described by its own first item, and so on (nn.LSTM "
                   "on a packed batch returns (PackedSequence(data, ...), (h_n, c_n)), and a PackedSequence is a "
                   "tuple: its entry describes data)")
_OTHER_RULE = ("a call whose output leads so to no tensor (a dict, None, an empty list) adds no entry: the hook "
               "returns without recording")


def _recurrent(rng):
    width, hidden, out = _sizes(rng)
    return _case(_Recurrent(width, hidden, out), (3, 4, width), (nn.LSTM, nn.Linear),
                 note=f"Module 'lstm' is an nn.LSTM: it returns a tuple, (output, (h_n, c_n)), not a tensor. "
                      f"{_TUPLE_RULE}: the LSTM's entry describes its output sequence.")


def _packed(rng):
    width, hidden, out = _sizes(rng)
    return _case(_PackedReader(width, hidden, out), (3, 4, width), (nn.LSTM, nn.Linear),
                 note=f"Module 'lstm' is an nn.LSTM fed a packed batch: it returns (PackedSequence(data, ...), "
                      f"(h_n, c_n)). {_TUPLE_RULE}, and {_FIRST_OF_FIRST}.")


def _paired(rng):
    width, hidden, out = _sizes(rng)
    return _case(_Paired(width, hidden, out), (3, width), (ListPair, nn.Linear),
                 note=f"Module 'pair' returns a list, [h, tanh(h)], not a tensor. {_TUPLE_RULE} (a list as well "
                      "as a tuple): its entry describes h.")


def _tabled(rng):
    width, hidden, out = _sizes(rng)
    return _case(_Tabled(width, hidden, out), (3, width), (Table, Probe, nn.Linear),
                 note=f"Module 'table' returns a dict and module 'probe' returns None: {_OTHER_RULE}.")


def _odd(rng):
    width, hidden, out = _sizes(rng)
    return _case(_Odd(width, hidden, out), (3, width), (NestedTuple, Found, nn.Linear),
                 note=f"Module 'nest' returns a tuple whose first item is a tuple, ((h, tanh(h)), h): "
                      f"{_FIRST_OF_FIRST}, h here. Module 'found' returns an empty list: {_OTHER_RULE}.")


_STATS_CASES = ((111, _two_relus), (112, _nested), (113, _shared), (114, _recurrent), (119, _packed),
                (115, _paired), (116, _tabled), (117, _rooted), (118, _odd))


def _kind(output):
    """The type of an output that is not a tensor, said so that an empty list or a tuple in a tuple shows."""
    kind = type(output).__name__
    if isinstance(output, (tuple, list)) and not output:
        return f"empty {kind}"
    if isinstance(output, (tuple, list)) and not isinstance(output[0], torch.Tensor):
        return f"{kind} whose first item is a {_kind(output[0])}"
    return kind


class _OutputRecorder:
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
        described = _described(output)
        if described is not None:
            self.outputs.setdefault(name, []).append(described.detach().clone())
            first_input = _described(args)  # a PackedSequence's data too
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
    first_item = (f" The module returned a {kind}; {_TUPLE_RULE.lower()}, {describe(output)}, and only that "
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


def _why_modules_missing(model, layer_types, kinds):
    """Says why modules of `model` may have no records, and the slug of the mistake that skips them."""
    modules = dict(model.named_modules())

    def explain(missing):
        structured = [f"{name!r} returns a {kinds[name]}" for name in missing if name in kinds]
        if structured and any("whose first item" in kinds[name] for name in missing if name in kinds):
            return (f"Module {', '.join(structured)}: {_TUPLE_RULE.lower()}, and {_FIRST_OF_FIRST}, so it has one "
                    "entry per call too.", "nested-first-item-skipped")
        if structured:
            return (f"Module {', '.join(structured)}: {_TUPLE_RULE.lower()} (a list as well as a tuple), so it "
                    "has one entry per call too.", "tuple-output-skipped")
        if "" in missing:
            return (f"Module '' is the model itself, a {type(model).__name__}, so one of the layer types: "
                    "named_modules() lists it first, under the name '', and it gets a hook too.", "model-itself-skipped")
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
            return f"Module {', '.join(other)}: {_OTHER_RULE}.", "entry-without-tensor"
        return None
    return explain


def _compare_stats(stats, reference, call_text, said, duplicates, explain_missing=None):
    recorded = _lists(stats, call_text, said)
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


def _how_output_changed(model, layer_types, x, grad_mode):
    """How the learner's hooks changed a module's output, seen by one more forward pass between a checker's hook
    that runs before them (prepend) and one that runs after them: "in place" when the same object came back with
    other values, "returned" when another object came back, None when neither showed."""
    seen, found, handles = {}, [], []

    def before(name, output):
        described = _described(output)
        seen[name] = (output, None if described is None else described.detach().clone())

    def after(name, output):
        original, values = seen.pop(name, (None, None))
        if output is not original:
            found.append("returned")
        elif values is not None and not torch.equal(_described(output).detach(), values):
            found.append("in place")

    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            handles.append(module.register_forward_hook(
                lambda module, args, output, name=name: before(name, output), prepend=True))
            handles.append(module.register_forward_hook(lambda module, args, output, name=name: after(name, output)))
    try:
        with torch.set_grad_enabled(grad_mode):
            model(x)
    except Exception:
        pass
    finally:
        for handle in handles:
            handle.remove()
    return found[0] if found else None


# Pass 1 trains with grad mode on, pass 2 runs under torch.no_grad(), pass 3 in eval mode: (grad mode, training).
_STATS_PASSES = ((True, True), (False, True), (True, False))


def _stats_case(seed, build):
    """The case of `seed`: the learner's model, a deep copy watched by the checker's own hooks, and how the
    call is written."""
    case = seeded(seed, build, random.Random(seed))
    case["reference_model"] = copy.deepcopy(case["model"])
    case["reference"] = _OutputRecorder(case["reference_model"], case["layer_types"])
    names = "(" + ", ".join(t.__name__ for t in case["layer_types"]) + ",)"
    case["call_text"] = f"record_activation_stats(model, {names})"
    return case


def _stats_input(seed, step, shape):
    x = random_tensor(seed * 10 + step, shape)
    x.view(-1)[:2] = 1e-5  # near 0, not 0: still not a zero after a ReLU
    x.view(-1)[2] = 1e-9  # closer still: torch.isclose(x, 0) (atol 1e-8) takes it for 0
    return x


def _forward_with_stats(case, x, grad_mode):
    """model(x) with the learner's hooks, and the same without them, in `grad_mode`."""
    call_text = case["call_text"]
    with torch.set_grad_enabled(grad_mode):
        expected = case["reference_model"](x)
        doing = f"running model(x) after {call_text}"
        try:
            output = _run(doing, case["model"], x)
        except LearnerCodeRaised as raised:
            if not case["note"]:
                raise
            fail_with_hint(doing, raised.error, case["note"], "structured-output-raised")
        if torch.is_grad_enabled() != grad_mode:
            fail(f"After {call_text}, running model(x) with grad mode {'on' if grad_mode else 'off'} left "
                 f"grad mode {'on' if torch.is_grad_enabled() else 'off'}: a hook changed torch's global "
                 "grad mode (torch.set_grad_enabled(...) called as a statement?). Use `with "
                 "torch.no_grad():` or output.detach(), which change nothing outside the hook.", "grad-mode-changed")
    return output, expected


def _check_output_unchanged(case, x, grad_mode, output, expected):
    if torch.equal(output.detach(), expected.detach()) and output.requires_grad == expected.requires_grad:
        return
    said = (f"After {case['call_text']}, model(x) returned {describe(output)} (requires_grad {output.requires_grad}); "
            f"without your hooks it returns {describe(expected)} (requires_grad {expected.requires_grad}).")
    if _how_output_changed(case["model"], case["layer_types"], x, grad_mode) == "in place":
        fail(f"{said} A hook changed a module's output in place (an in-place operation such as sub_() or abs_() on "
             "the output, or on output.detach(), which shares its memory): compute out of place, or on "
             "output.detach().clone(), and return None.", "output-changed-in-place")
    fail(f"{said} A forward hook that returns a value replaces the output, a detached one cuts training off: "
         "return None.", "output-replaced")


def _check_recorded_in_pass(said, now, kept, grad_mode, training):
    """The pass under no_grad, or in eval mode, added entries: the records `now` are not those `kept` before it."""
    unchanged = kept is not None and now.keys() == kept.keys() and all(
        len(now[key]) == len(kept[key]) and all(a is b for a, b in zip(now[key], kept[key])) for key in now)
    if not grad_mode and any(now.values()) and unchanged:
        fail(f"{said} the records are exactly as they were before that pass: the hooks recorded nothing "
             "under torch.no_grad(). Forward hooks fire under torch.no_grad() too; record there as well "
             "(a test of torch.is_grad_enabled() or output.requires_grad skips it).", "skips-no-grad")
    if not training and any(now.values()) and unchanged:
        fail(f"{said} the records are exactly as they were before that pass: the hooks recorded nothing "
             "in eval mode. Forward hooks fire after model.eval() too, and every call of the module adds "
             "an entry (a test of module.training skips them).", "skips-eval-mode")


def _check_stats_case(record_activation_stats, seed, build):
    case = _stats_case(seed, build)
    model, reference_model, call_text = case["model"], case["reference_model"], case["call_text"]
    globals_before = global_hooks()
    stats, handles = _unpack(_run(f"calling {call_text}", record_activation_stats, model, case["layer_types"]),
                             call_text, "(stats, handles)")
    _check_fresh(stats, call_text, "the model ran")
    kept = None
    for step, (grad_mode, training) in enumerate(_STATS_PASSES, start=1):
        x = _stats_input(seed, step, case["shape"])
        for copy_ in (model, reference_model):
            copy_.train(training)
        output, expected = _forward_with_stats(case, x, grad_mode)
        _check_output_unchanged(case, x, grad_mode, output, expected)
        mode = ("with grad mode on" if grad_mode else "under torch.no_grad()") + ("" if training else ", in eval mode")
        said = f"After {call_text} and forward pass {step} ({mode}),"
        now = {key: list(entries) for key, entries in stats.items() if isinstance(entries, (list, tuple))}
        _check_recorded_in_pass(said, now, kept, grad_mode, training)
        kept = now
        _compare_stats(stats, case["reference"], call_text, said, case["duplicates"],
                       _why_modules_missing(model, case["layer_types"], case["reference"].kinds))
    for copy_ in (model, reference_model):
        copy_.train()
    _remove_all(handles, call_text, model, globals_before)


@check_of("record_activation_stats", budget_ms=50,
          why="its contract covers the outputs of nn.LSTM, and torch's first nn.LSTM call in a process sets "
              "up oneDNN's LSTM kernel: 23 ms once (0.4 ms the next call), paid by the first check that runs "
              "an LSTM; warm, the check costs 19 ms",
          mistakes={**_RECORDS_MISTAKES, **_STATS_MISTAKES})
def check_record_activation_stats(record_activation_stats):
    for seed, build in _STATS_CASES:
        _check_stats_case(record_activation_stats, seed, build)


# ---------------------------------------------------------------- track_grad_norms

class _TiedPair(nn.Module):
    """Two linear layers that share one weight (tied weights); `b.weight` is `a.weight`."""

    def __init__(self, width, out):
        super().__init__()
        self.a = nn.Linear(width, width)
        self.b = nn.Linear(width, width)
        self.b.weight = self.a.weight
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.b(torch.tanh(self.a(x))))


class _Gated(nn.Module):
    """`extra` runs only when `use_extra` is set (the check clears it for backward pass 2); `spare` never runs."""

    def __init__(self, width, out):
        super().__init__()
        self.a = nn.Linear(width, width)
        self.extra = nn.Linear(width, width)
        self.spare = nn.Linear(width, 1)
        self.head = nn.Linear(width, out)
        self.use_extra = True

    def forward(self, x):
        h = torch.tanh(self.a(x))
        if self.use_extra:
            h = h + self.extra(h)
        return self.head(h)


def _mlp_frozen(rng):
    width, hidden, out = rng.randint(3, 5), rng.randint(4, 6), rng.randint(2, 4)
    model = nn.Sequential(nn.Linear(width, hidden), nn.Tanh(), nn.Linear(hidden, out))
    model[0].bias.requires_grad_(False)
    return model, width, {}


def _tied(rng):
    width, out = rng.randint(3, 5), rng.randint(2, 4)
    return _TiedPair(width, out), width, {"b.weight": "a.weight"}


def _gated(rng):
    width, out = rng.randint(3, 5), rng.randint(2, 4)
    return _Gated(width, out), width, {}


_NORM_CASES = ((121, _mlp_frozen), (122, _tied), (123, _gated))
# (what the pass is, what follows it): "accumulate", "step", "clip" or "create_graph".
_NORM_PLAN = (("backward pass 1 of 2 accumulated", "accumulate"),
              ("backward pass 2 of 2 accumulated, then a step", "step"),
              ("backward pass 3, of a loss 1000 times larger, then clip_grad_norm_", "clip"),
              ("backward pass 4, run as backward(create_graph=True)", "create_graph"),
              ("backward pass 5, of a loss whose gradient holds inf, so that the parameters' gradients hold inf "
               "and NaN", "nonfinite"))


def _set_pass(model, step):
    if isinstance(model, _Gated):
        model.use_extra = step != 2


class _GradRecorder:
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


def _compare_norms(norms, reference, accumulated, clipped, call_text, said, duplicates, frozen_names=(), stale=None,
                   skipped=None, never=(), module_names=()):
    """`accumulated[name][i]`, `stale[name][i]`: the norm of .grad after and before the i-th backward pass that
    computed a gradient for `name` (None: not known); `skipped[name]`: the passes that computed none for it."""
    recorded = _lists(norms, call_text, said)
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
    (lambda value, expected, known: known["clipped"] is not None and _near(value, known["clipped"]), "clipped-norm",
     ", the norm after clip_grad_norm_ scaled .grad; expected the gradient backward computed, before clipping: "
     "{expected:.6g}."),
)


def _diagnose_norm(value, expected, known, name, where):
    for test, slug, message in _NORM_MISTAKES:
        if test(value, expected, known):
            fail(f"{where} is {value:.6g}" + message.format(name=name, expected=expected), slug)
    fail(f"{where} is {value:.6g}; the gradient that backward pass computed for {name!r} has L2 norm "
         f"{expected:.6g}.", "wrong-norm")


def _requires_grad(model):
    return {name: parameter.requires_grad for name, parameter in model.named_parameters()}


def _check_training_modes(model, before, after_what):
    changed = [repr(name) + (" (the model itself)" if name == "" else "") for name, module in model.named_modules()
               if module.training != before[name]]
    if changed:
        fail(f"{after_what}, the training mode changed for {_listed(changed)} (model.train() or model.eval() "
             "called?): the monitor must leave the model as it found it, and a model in eval mode behaves "
             "differently (dropout, batch norm).", "training-mode-changed")


def _check_requires_grad(model, before, after_what):
    changed = [name for name, flag in _requires_grad(model).items() if before.get(name) != flag]
    if changed:
        fail(f"{after_what}, requires_grad changed for {changed} (it was {[before.get(name) for name in changed]}): "
             "a frozen parameter must stay frozen, or it trains. Give it no hook instead "
             "(if parameter.requires_grad: ...).", "requires-grad-changed")


def _backward(model, x, create_graph, scale=1.0, nonfinite=False):
    """A loss of `scale` times the mean square of the output: scale 1000 gives gradients above 1, which a hook that
    clamps or clips them would change. With `nonfinite`, the output times a tensor with one inf, summed: the
    gradients hold inf and NaN, and so do their norms."""
    output = model(x)
    if nonfinite:
        upstream = torch.ones_like(output)
        upstream[0, 0] = math.inf
        loss = (output * upstream).sum()
    else:
        loss = scale * output.pow(2).mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # backward(create_graph=True) warns about the .grad reference cycle
        loss.backward(create_graph=create_graph)


class _NormRun:
    """One case of track_grad_norms: the learner's model, a deep copy watched by the checker's tensor hooks, and
    what the copy's .grad held around each backward pass: `accumulated[name][i]`, `stale[name][i]`, the norm of
    .grad after and before the i-th pass that computed a gradient for `name`; `clipped[name][i]` after clipping
    it; `skipped[name]`, the passes that computed none for it."""

    def __init__(self, seed, build):
        self.seed = seed
        self.model, self.width, self.duplicates = seeded(seed, build, random.Random(seed))
        self.reference_model = copy.deepcopy(self.model)
        self.reference = _GradRecorder(self.reference_model)
        self.accumulated, self.clipped, self.stale, self.skipped = {}, {}, {}, {}
        self.trainable = [name for name, parameter in self.reference_model.named_parameters()
                          if parameter.requires_grad]
        self.frozen = [name for name, parameter in self.model.named_parameters() if not parameter.requires_grad]

    def backward(self, step, then, call_text):
        """Backward pass `step` on both models, `then` saying which (_NORM_PLAN), and what it left in .grad."""
        x = random_tensor(self.seed * 10 + step, (4, self.width))
        create_graph, nonfinite = then == "create_graph", then == "nonfinite"
        scale = 1000.0 if then == "clip" else 1.0
        before_grad = {name: 0.0 if parameter.grad is None else parameter.grad.norm().item()
                       for name, parameter in self.reference_model.named_parameters()}
        before_count = {name: len(self.reference.grads.get(name, [])) for name in self.trainable}
        for trained in (self.model, self.reference_model):
            _set_pass(trained, step)
        loss_text = ("(1000 * model(x).pow(2).mean())" if scale != 1 else
                     "(model(x) * g).sum(), g holding an inf," if nonfinite else "model(x).pow(2).mean()")
        _run(f"running {loss_text}.backward({'create_graph=True' if create_graph else ''}) after "
             f"{call_text}", _backward, self.model, x, create_graph, scale, nonfinite)
        _backward(self.reference_model, x, create_graph, scale, nonfinite)
        for name, parameter in self.reference_model.named_parameters():
            if name not in self.trainable:
                continue
            if len(self.reference.grads.get(name, [])) > before_count[name]:
                self.stale.setdefault(name, []).append(before_grad[name])
                self.accumulated.setdefault(name, []).append(parameter.grad.norm().item())
            else:
                self.skipped.setdefault(name, []).append(step)

    def clip(self, step):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=1e-3)
        torch.nn.utils.clip_grad_norm_(self.reference_model.parameters(), max_norm=1e-3)
        for name, parameter in self.reference_model.named_parameters():
            if name in self.trainable and step not in self.skipped.get(name, []):
                self.clipped.setdefault(name, {})[len(self.accumulated[name]) - 1] = parameter.grad.norm().item()

    def compare(self, norms, call_text, said):
        never = [name for name in self.trainable if name not in self.reference.grads]
        _compare_norms(norms, self.reference, self.accumulated, self.clipped, call_text, said, self.duplicates,
                       self.frozen, self.stale, self.skipped, never, [name for name, _ in self.model.named_modules()])

    def after(self, then):
        if then == "step":
            for trained in (self.model, self.reference_model):
                _sgd_step(trained, lr=0.1)
        if then in ("step", "create_graph"):
            for trained in (self.model, self.reference_model):
                trained.zero_grad()  # .grad = None; after create_graph=True this breaks the reference cycle


def _check_grads_untouched(model, reference_model, said):
    """The learner's hooks left every .grad as the same model without them has it."""
    for (name, parameter), reference_parameter in zip(model.named_parameters(), reference_model.parameters()):
        mine, theirs = parameter.grad, reference_parameter.grad
        if not _same(mine, theirs):
            fail(f"{said} {name}.grad is {describe(mine)}; without your hooks it is "
                 f"{describe(theirs)}. The hooks must only look: return None, and change "
                 "neither the gradient in place nor .grad.", "grad-changed")
        if mine is not None and mine.requires_grad != theirs.requires_grad:
            fail(f"{said} {name}.grad has requires_grad {mine.requires_grad}; without your hooks it has "
                 f"{theirs.requires_grad}: under backward(create_graph=True) the gradient carries the graph "
                 "of the backward pass, for a second derivative, and a hook that returns grad.detach() "
                 "cuts it. The hooks must only look: return None.", "grad-detached")


@check_of("track_grad_norms", mistakes={**_RECORDS_MISTAKES, **_NORMS_MISTAKES})
def check_track_grad_norms(track_grad_norms):
    for seed, build in _NORM_CASES:
        run = _NormRun(seed, build)
        call_text = "track_grad_norms(model)"
        globals_before = global_hooks()
        with calling_with_hints(f"calling {call_text}", _FROZEN_HOOKED):
            returned = track_grad_norms(run.model)
        norms, handles = _unpack(returned, call_text, "(norms, handles)")
        _check_fresh(norms, call_text, "any backward pass")
        _check_requires_grad(run.model, _requires_grad(run.reference_model), f"After {call_text}")
        for step, (what, then) in enumerate(_NORM_PLAN, start=1):
            run.backward(step, then, call_text)
            said = f"After {call_text} and {what},"
            _check_grads_untouched(run.model, run.reference_model, said)
            if then == "clip":
                run.clip(step)
            run.compare(norms, call_text, said)
            run.after(then)
        _remove_all(handles, call_text, run.model, globals_before)


# ---------------------------------------------------------------- TrainingMonitor

def _mlp(rng):
    """Nested layers, and one frozen parameter (a tensor hook cannot be registered on it)."""
    width, hidden, out = rng.randint(3, 5), rng.randint(4, 6), rng.randint(2, 4)
    model = nn.Sequential(nn.Sequential(nn.Linear(width, hidden), nn.ReLU()),
                          nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU()), nn.Linear(hidden, out))
    model[0][0].bias.requires_grad_(False)
    return model, width


class _NonfiniteWatch:
    """The checker's non-finite watch on a copy, as the contract states it; `seen` lists every name
    that saw a non-finite value, in the order the hooks first saw one."""

    def __init__(self, model, outputs=True, gradients=True):
        self.first, self.seen = None, []
        self.parameter_names = [name for name, _ in model.named_parameters()]
        self.names = [name for name, _ in model.named_modules()] + self.parameter_names
        if outputs:
            for name, module in model.named_modules():
                module.register_forward_hook(lambda module, args, output, name=name: self.see(name, output))
        if gradients:
            for name, parameter in model.named_parameters():
                if parameter.requires_grad:
                    parameter.register_hook(lambda grad, name=name: self.see(name, grad))

    def see(self, name, value):
        if any(not torch.isfinite(tensor).all() for tensor in _tensors(value)):
            self.first = self.first if self.first is not None else name
            if name not in self.seen:
                self.seen.append(name)


def _attribute(monitor, name, doing):
    with calling(doing):
        try:
            return getattr(monitor, name)
        except AttributeError:
            fail(f"{doing}: the monitor has no attribute {name!r}. The contract names activation_stats, "
                 "grad_norms and first_nonfinite.", "attribute-missing")


def _new_monitor(TrainingMonitor, model, call_text):
    monitor = _run(f"calling {call_text}", TrainingMonitor, model, (nn.ReLU,))
    left = _hooks_left(model)
    if left:
        fail(f"{call_text} registered hooks already ({_listed(left)}); the constructor registers nothing, attach() does.",
             "constructor-registers")
    for name in ("activation_stats", "grad_norms"):
        value = _attribute(monitor, name, f"reading monitor.{name} after {call_text}")
        if not isinstance(value, Mapping) or any(value.values()):
            fail(f"after {call_text}, monitor.{name} is {describe(value)}; expected an empty dict.", "records-not-empty-dict")
    first = _attribute(monitor, "first_nonfinite", f"reading monitor.first_nonfinite after {call_text}")
    if first is not None:
        fail(f"after {call_text}, monitor.first_nonfinite is {first!r}; expected None.", "first-nonfinite-not-none")
    return monitor


def _same(a, b):
    """Equal tensors (or both None), NaN where the other has NaN."""
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and torch.equal(a.isnan(), b.isnan()) and torch.equal(a[~a.isnan()], b[~b.isnan()])


_ONLY_LOOK = ("The monitor's hooks only look: a forward hook that returns a value replaces the module's output, a "
              "tensor hook that returns one replaces the gradient (torch.nan_to_num(...), a clamp, the result of a "
              "test); return None from every hook.")


def _check_only_looked(model, reference_model, output, expected, said):
    """Fails when the monitored model's output or gradients differ from those of the same model without a monitor."""
    if not _same(output.detach(), expected.detach()):
        fail(f"{said} model(x) returned {describe(output)}; the same model without a monitor returns "
             f"{describe(expected)}. {_ONLY_LOOK}", "output-changed")
    for (name, parameter), reference in zip(model.named_parameters(), reference_model.parameters()):
        if not _same(parameter.grad, reference.grad):
            fail(f"{said} {name}.grad is {describe(parameter.grad)}; without the monitor it is "
                 f"{describe(reference.grad)}. {_ONLY_LOOK}", "grad-changed")


def _train_step(model, x):
    loss = model(x).pow(2).mean()
    model.zero_grad()
    loss.backward()
    _sgd_step(model, lr=0.05)


class _CallersHooks:
    """The caller's own hooks on the model of _check_attach_train_remove: two registered before attach(), two
    while the monitor is attached; remove() must leave all four."""

    def __init__(self, model):
        self.model, self.seen = model, []
        self.hooks = (lambda module, args, output: self.seen.append("forward"),
                      lambda grad: self.seen.append("gradient"),
                      lambda module, args, output: self.seen.append("later forward"),
                      lambda grad: self.seen.append("later gradient"))

    def register_before_attach(self):
        self.model[1].register_forward_hook(self.hooks[0])
        self.model[2].weight.register_hook(self.hooks[1])

    def register_while_attached(self):
        self.model[0].register_forward_hook(self.hooks[2])
        self.model[2].bias.register_hook(self.hooks[3])

    def gone(self):
        """Where a hook of the caller is no longer registered."""
        model = self.model
        return [where for where, hooks, hook in (
                    ("a forward hook on module '1', registered before attach()", model[1]._forward_hooks,
                     self.hooks[0]),
                    ("a tensor hook on parameter '2.weight', registered before attach()",
                     model[2].weight._backward_hooks, self.hooks[1]),
                    ("a forward hook on module '0', registered while the monitor was attached",
                     model[0]._forward_hooks, self.hooks[2]),
                    ("a tensor hook on parameter '2.bias', registered while the monitor was attached",
                     model[2].bias._backward_hooks, self.hooks[3]))
                if all(registered is not hook for registered in (hooks or {}).values())]


def _attach_between_callers(TrainingMonitor, model, callers):
    monitor = _new_monitor(TrainingMonitor, model, "TrainingMonitor(model, (nn.ReLU,))")
    callers.register_before_attach()
    returned = _run("calling monitor.attach()", monitor.attach)
    if returned is not monitor:
        fail(f"monitor.attach() returned {describe(returned)}; expected the monitor itself (return self), so that "
             "`monitor = TrainingMonitor(model, types).attach()` works.", "attach-returns-other")
    if not _hooks_left(model, callers.hooks):
        fail("after monitor.attach(), no hook is registered on the model; attach() registers the hooks.",
             "attach-registers-nothing")
    callers.register_while_attached()
    return monitor


def _train_monitored(model, reference_model, seed, width):
    """Two training steps of the monitored model and of the same model without a monitor."""
    for step in (1, 2):
        x = random_tensor(seed * 10 + step, (3, width))
        doing = "running a training step (forward, zero_grad, backward, step) with the monitor attached"
        try:
            _run(doing, _train_step, model, x)
        except LearnerCodeRaised as raised:
            if isinstance(raised.error, TypeError) and "must be Tensor" in str(raised.error):
                fail_with_hint(doing, raised.error, f"A module received something that is not a tensor. {_ONLY_LOOK}",
                               "output-replaced-by-non-tensor")
            raise
        _train_step(reference_model, x)
    changed = [name for (name, parameter), reference in zip(model.named_parameters(), reference_model.parameters())
               if not torch.equal(parameter, reference)]
    if changed:
        fail(f"After attach() and two training steps, the parameters {_listed(changed)} differ from those of the same "
             f"model trained without a monitor: the outputs or the gradients changed. {_ONLY_LOOK}", "training-changed")


def _check_monitor_records(monitor, model, outputs, grads):
    """After two training steps: the monitor's records against the checker's, and first_nonfinite still None."""
    said = "After attach() and two training steps,"
    stats = _attribute(monitor, "activation_stats", "reading monitor.activation_stats")
    norms = _attribute(monitor, "grad_norms", "reading monitor.grad_norms")
    for attribute, records, function in (("activation_stats", stats, "record_activation_stats"),
                                         ("grad_norms", norms, "track_grad_norms")):
        if isinstance(records, Mapping) and not _lists(records, f"monitor.{attribute}", said):
            fail(f"{said} monitor.{attribute} holds no record. It must be the dict that the hooks fill, the one "
                 f"{function} returns, and not a copy made in attach(): a copy misses what the hooks add later.",
                 "records-copied")
    _compare_stats(stats, outputs, "monitor.activation_stats", said + " in monitor.activation_stats", {})
    frozen = [name for name, parameter in model.named_parameters() if not parameter.requires_grad]
    _compare_norms(norms, grads, None, {}, "monitor.grad_norms",
                   said + " in monitor.grad_norms", {}, frozen)
    first = _attribute(monitor, "first_nonfinite", "reading monitor.first_nonfinite")
    if first is not None:
        fail(f"{said} monitor.first_nonfinite is {first!r}, but every output and gradient was finite; expected None.",
             "finite-place-named")


def _check_removed(monitor, model, callers, globals_before):
    _run("calling monitor.remove()", monitor.remove)
    left = _hooks_left(model, callers.hooks) + _global_hooks_left(globals_before)
    if left:
        fail(f"after monitor.remove(), hooks were still registered: {_listed(left)}. remove() must remove every hook the "
             "monitor registered: keep each handle, those your two functions return included.", "hooks-left-after-remove")
    gone = callers.gone()
    if gone:
        fail(f"monitor.remove() also removed hooks that the monitor did not register: {'; '.join(gone)}, by the "
             "caller. Remove only the monitor's own hooks, by the handles it kept, not by clearing the model's hook "
             "dicts or restoring them as they were at attach().", "callers-hooks-removed")
    doing = "calling monitor.remove() a second time"
    try:
        _run(doing, monitor.remove)
    except LearnerCodeRaised as raised:
        fail_with_hint(doing, raised.error, "remove() must be safe to call twice: the second call finds nothing left "
                       "to remove and does nothing.", "remove-twice-raises")


def _check_as_before_after_remove(monitor, model, reference_model, flags, modes, x):
    """After remove(): the model as the same model that never had a monitor, the records kept and no longer growing."""
    _check_requires_grad(model, flags, "After monitor.remove()")
    _check_training_modes(model, modes, "After monitor.remove()")
    _check_global_modes("After monitor.remove()")
    added = sorted(set(model.state_dict()) - set(reference_model.state_dict()))
    if added:
        fail(f"After monitor.remove(), model.state_dict() has the keys {added}, which the same model without a "
             "monitor has not (a buffer registered on it?): a checkpoint saved now would not load into the "
             "model as it was. Keep what the monitor records on the monitor.", "state-dict-changed")
    kept = _attribute(monitor, "activation_stats", "reading monitor.activation_stats after monitor.remove()")
    counts = {name: len(entries) for name, entries in kept.items()}
    if not any(counts.values()) or not any(_attribute(monitor, "grad_norms", "reading monitor.grad_norms").values()):
        fail("after monitor.remove(), monitor.activation_stats or monitor.grad_norms is empty; the recorded data "
             "must stay.", "remove-clears-records")
    if not torch.equal(model(x), reference_model(x)):
        fail("after monitor.remove(), model(x) differs from the same model that never had a monitor.",
             "model-changed-after-remove")
    if {name: len(entries) for name, entries in monitor.activation_stats.items()} != counts:
        fail("after monitor.remove(), a forward pass still added to monitor.activation_stats; remove() must stop "
             "the recording.", "records-after-remove")


def _check_attach_train_remove(TrainingMonitor):
    seed = 131
    model, width = seeded(seed, _mlp, random.Random(seed))
    reference_model = copy.deepcopy(model)
    outputs, grads = _OutputRecorder(reference_model, (nn.ReLU,)), _GradRecorder(reference_model)
    globals_before = global_hooks()
    callers = _CallersHooks(model)
    monitor = _attach_between_callers(TrainingMonitor, model, callers)
    flags = _requires_grad(reference_model)
    modes = {name: module.training for name, module in reference_model.named_modules()}
    _check_requires_grad(model, flags, "After monitor.attach()")
    _check_training_modes(model, modes, "After monitor.attach()")
    _train_monitored(model, reference_model, seed, width)
    _check_monitor_records(monitor, model, outputs, grads)
    _check_removed(monitor, model, callers, globals_before)
    _check_as_before_after_remove(monitor, model, reference_model, flags, modes, random_tensor(seed * 10 + 3, (3, width)))


def _check_attach_twice(TrainingMonitor):
    model, width = seeded(140, _mlp, random.Random(140))
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    try:
        _run("calling monitor.attach() a second time", monitor.attach)
    except LearnerCodeRaised:
        pass  # an attach() that refuses to attach twice is a design of its own; remove() must still remove all
    _run("calling monitor.remove()", monitor.remove)
    left = _hooks_left(model)
    if left:
        fail(f"after monitor.attach(), monitor.attach() again (a cell run twice) and monitor.remove(), hooks were "
             f"still registered: {_listed(left)}. remove() removes every hook the monitor registered, those of both "
             "attach() calls: add each call's handles to the list the monitor keeps instead of replacing the list.",
             "handles-of-first-attach-lost")


def _overflow(model):
    """Two biases of the second Linear set to +inf: its output has +inf there and no NaN (its inputs are
    finite), and the next Linear's output mixes +inf and -inf into NaN."""
    with torch.no_grad():
        model[1][0].bias[:2] = math.inf


def _check_first(first, watch, nan_only, said, what, missed, finite="finite-place-named"):
    """`watch`: the checker's _NonfiniteWatch on a copy that ran the same steps; `missed`, the slug of the case's
    mistake when first_nonfinite stayed None, `finite` when it names a place where every value was finite."""
    if first == watch.first:
        return
    if first is None:
        fail(f"{said} monitor.first_nonfinite is None; {what}", missed)
    if first == nan_only:
        fail(f"{said} monitor.first_nonfinite is {first!r}, the first place with a NaN; {what} "
             "Look for inf and -inf too: torch.isfinite.", "inf-not-watched")
    if not isinstance(first, str) or first not in watch.names:
        fail(f"{said} monitor.first_nonfinite is {describe(first)}, which is neither a named_modules() nor a "
             f"named_parameters() name of the model; {what}", "not-a-name")
    holder = watch.first in watch.parameter_names and isinstance(first, str) and first in watch.names \
        and first not in watch.parameter_names and (first == "" or watch.first.startswith(first + "."))
    if holder:
        fail(f"{said} monitor.first_nonfinite is {first!r}, the module that holds {watch.first!r}; {what} A gradient "
             "is named by its parameter's named_parameters() name.", "module-named-for-gradient")
    if first in watch.seen:
        how = ("watch the gradient of every parameter that requires grad (a tensor hook) for inf as well as NaN "
               "(torch.isfinite)" if watch.first in watch.parameter_names else
               "watch every module that named_modules() lists, by its output (a forward hook, not a pre-hook)")
        fail(f"{said} monitor.first_nonfinite is {first!r}; {what} {first!r} saw a non-finite value too, but "
             f"after {watch.first!r}: {how}, and keep the first name once set.", "not-the-first")
    fail(f"{said} monitor.first_nonfinite is {first!r}, where every value was finite; {what}", finite)


def _check_nonfinite_output(TrainingMonitor):
    seed = 132
    model, width = seeded(seed, _mlp, random.Random(seed))
    _overflow(model)
    reference_model, nan_model = copy.deepcopy(model), copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    nan_watch = _NonfiniteWatch(nan_model)
    nan_watch.see = lambda name, value: setattr(nan_watch, "first", nan_watch.first or (
        name if torch.isnan(value).any() else None))
    x = random_tensor(seed, (3, width)).abs() + 0.1
    reference_model(x).pow(2).mean().backward()
    nan_model(x).pow(2).mean().backward()
    said = "With `with TrainingMonitor(model, (nn.ReLU,)) as monitor:` around a training step in which the output " \
           "of one layer overflows to inf,"
    expected = copy.deepcopy(model)(x)
    bound = inside = output = None
    with calling("running `with TrainingMonitor(model, (nn.ReLU,)) as monitor:` around model(x).backward()"):
        with TrainingMonitor(model, (nn.ReLU,)) as bound:
            if not hasattr(bound, "first_nonfinite"):
                fail(f"`with TrainingMonitor(model, (nn.ReLU,)) as monitor:` bound {describe(bound)} to monitor; "
                     "__enter__ must return the monitor (after attaching it).", "enter-returns-other")
            if not _hooks_left(model):
                fail("inside `with TrainingMonitor(model, (nn.ReLU,)) as monitor:` no hook is registered; "
                     "__enter__ must attach the monitor.", "enter-not-attaching")
            output = model(x)
            output.pow(2).mean().backward()
            inside = getattr(bound, "first_nonfinite", None)
    left = _hooks_left(model)
    if left:
        fail(f"after the with block, hooks were still registered: {_listed(left)}; __exit__ must remove them.",
             "exit-not-removing")
    if inside == watch.first and bound.first_nonfinite != inside:
        fail(f"{said} monitor.first_nonfinite was {inside!r} inside the with block and is "
             f"{describe(bound.first_nonfinite)} after it: removing the hooks must keep what was recorded.",
             "remove-clears-records")
    _check_first(bound.first_nonfinite, watch, nan_watch.first, said,
                 f"expected {watch.first!r}, the first module (in the order the forward hooks fire) whose output "
                 "contained inf.", "outputs-not-watched")
    _check_only_looked(model, reference_model, output, expected, said)


def _check_nan_output(TrainingMonitor):
    seed = 138
    model, width = seeded(seed, _mlp, random.Random(seed))
    with torch.no_grad():
        model[1][0].bias[:1] = math.nan  # NaN from there on, and no inf anywhere
    reference_model = copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    x = random_tensor(seed, (3, width))
    reference_model(x).pow(2).mean().backward()
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    _run("running model(x).pow(2).mean().backward() with the monitor attached",
         lambda: model(x).pow(2).mean().backward())
    _run("calling monitor.remove()", monitor.remove)
    _check_first(monitor.first_nonfinite, watch, None,
                 "After a training step in which one layer's output holds NaN (and no value is inf),",
                 f"expected {watch.first!r}, the first module whose output contained NaN: torch.isfinite is False "
                 "for NaN, inf and -inf alike.", "nan-not-watched")


def _check_large_finite(TrainingMonitor):
    seed = 139
    model, width = seeded(seed, _mlp, random.Random(seed))
    with torch.no_grad():
        model[2].bias.fill_(2e38)  # every element finite; sums and norms of them overflow
    reference_model = copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    x = random_tensor(seed, (3, width))
    with torch.no_grad():
        reference_model(x)
    assert watch.first is None
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    with torch.no_grad():
        _run("running model(x) with the monitor attached", model, x)
    _run("calling monitor.remove()", monitor.remove)
    _check_first(monitor.first_nonfinite, watch, None,
                 "After a forward pass whose last layer outputs values near 2e38 (below float32's largest number, "
                 "3.4e38),",
                 "expected None: every element was finite, though their sum and their norm overflow to inf. Test "
                 "each element: torch.isfinite(t).all(), not a sum or a norm.", None, "sum-tested")
    # The same for gradients: each element finite, the norms and some sums beyond float32's largest number.
    model, width = seeded(seed, _mlp, random.Random(seed))
    reference_model = copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    (reference_model(x) * 5e37).sum().backward()
    assert watch.first is None and any(p.grad.norm() == math.inf for p in reference_model.parameters()
                                       if p.grad is not None)
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    _run("running (model(x) * 5e37).sum().backward() with the monitor attached",
         lambda: (model(x) * 5e37).sum().backward())
    _run("calling monitor.remove()", monitor.remove)
    _check_first(monitor.first_nonfinite, watch, None,
                 "After a backward pass whose gradients hold elements up to 1.5e38 (below float32's largest number, "
                 "3.4e38),",
                 "expected None: every element of every gradient was finite, though their norms and some of their "
                 "sums overflow to inf. Test each element: torch.isfinite(grad).all(), not a norm or a sum.", None,
                 "sum-tested")


def _check_nonfinite_gradient(TrainingMonitor):
    seed = 133
    model, width = seeded(seed, _mlp, random.Random(seed))
    reference_model, forward_only = copy.deepcopy(model), copy.deepcopy(model)
    watch, output_watch = _NonfiniteWatch(reference_model), _NonfiniteWatch(forward_only, gradients=False)
    x = random_tensor(seed, (3, width))
    upstream = torch.ones(3, model[2].out_features)
    upstream[0, 0] = math.inf
    # (output * upstream).sum() rather than output.backward(upstream): a gradient passed to backward makes
    # torch import sympy (1 s); the product lies outside the model, so every module's output stays finite.
    (reference_model(x) * upstream).sum().backward()
    (forward_only(x) * upstream).sum().backward()
    assert watch.first is not None and output_watch.first is None
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    expected = copy.deepcopy(model)(x)
    output = _run("running model(x) with the monitor attached", model, x)
    _run("running (model(x) * g).sum().backward() with the monitor attached, g containing inf",
         lambda: (output * upstream).sum().backward())
    _run("calling monitor.remove()", monitor.remove)
    said = "After a backward pass whose gradients contain inf (every output of the forward pass was finite),"
    _check_first(monitor.first_nonfinite, watch, None, said,
                 f"expected {watch.first!r}, the first parameter (in the order the tensor hooks fire) whose gradient "
                 "contained inf or NaN. The watch covers the gradients of the parameters too.", "gradients-not-watched")
    _check_only_looked(model, reference_model, output, expected, said)


class _ScaledOutput(nn.Module):
    """A model whose own forward (not a submodule) multiplies the output into overflow."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return self.body(x) * 1e38 * 1e38


def _check_nonfinite_in_model_itself(TrainingMonitor):
    seed = 135
    body, width = seeded(seed, _mlp, random.Random(seed))
    model = _ScaledOutput(body)
    x = random_tensor(seed, (3, width))
    reference_model = copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    reference_model(x).sum().backward()
    assert watch.first == "" and watch.seen[0] == "" and len(watch.seen) > 1
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    output = _run("running model(x) with the monitor attached", model, x)
    after_forward = _attribute(monitor, "first_nonfinite", "reading monitor.first_nonfinite")
    said = "With a model whose own forward multiplies every submodule's (finite) output into inf,"
    if after_forward != "":
        _run("calling monitor.remove()", monitor.remove)
        _check_first(after_forward, watch, None, said + " after the forward pass",
                     "expected '', the name named_modules() gives the model itself: watch every module it lists, "
                     "the model included, not only the layers.", "model-itself-not-watched")
    _run("running model(x).sum().backward() with the monitor attached", lambda: output.sum().backward())
    _run("calling monitor.remove()", monitor.remove)
    first = monitor.first_nonfinite
    if first != "":
        fail(f"{said} monitor.first_nonfinite was '' after the forward pass and is {describe(first)} after the "
             "backward pass, whose gradients were not finite either: it must never change once set. '' (the model "
             "itself) is falsy but it is a name: test `self.first_nonfinite is None`, not "
             "`not self.first_nonfinite`.", "empty-name-taken-for-none")


class _Nested(nn.Module):
    """Returns a list [h, [h * scale]]: the inner item is used nowhere else."""

    def __init__(self, width, hidden):
        super().__init__()
        self.linear = nn.Linear(width, hidden)
        self.register_buffer("scale", torch.ones(()))

    def forward(self, x):
        h = self.linear(x)
        return [h, [h * self.scale]]


class _Keyed(nn.Module):
    """Returns a dict {"out": h, "extra": {"scale": h * scale}}: the inner item is used nowhere else."""

    def __init__(self, hidden):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)
        self.register_buffer("scale", torch.ones(()))

    def forward(self, h):
        h = self.linear(h)
        return {"out": h, "extra": {"scale": h * self.scale}}


class Peak(nn.Module):
    """Returns a Python number, not a tensor: its input's largest magnitude times inf, so inf."""

    def forward(self, h):
        return float(h.detach().abs().max()) * math.inf


class _Structured(nn.Module):
    """An LSTM (a tuple output), a module returning a nested list, one returning a nested dict, and (with `probe`)
    one returning None and one returning a Python number (inf); every tensor is finite unless the check sets a
    `scale` buffer to inf."""

    def __init__(self, width, hidden, out, probe):
        super().__init__()
        self.lstm = nn.LSTM(width, hidden, batch_first=True)
        self.split = _Nested(hidden, hidden)
        self.keyed = _Keyed(hidden)
        self.probe = Probe() if probe else None
        self.peak = Peak() if probe else None
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        sequence, _ = self.lstm(x)
        h, _ = self.split(sequence[:, -1])
        h = self.keyed(h)["out"]
        if self.probe is not None:
            self.probe(h)
            self.peak(h)
        return self.head(h)


def _structured(rng, probe):
    width, hidden, out = rng.randint(3, 5), rng.randint(4, 6), rng.randint(2, 4)
    return _Structured(width, hidden, out, probe), width


_STRUCTURED = ("Its modules return a tuple ('lstm', an nn.LSTM: (output, (h_n, c_n))), a list holding a list "
               "('split'), a dict holding a dict ('keyed')")


def _check_structured_outputs(TrainingMonitor):
    for seed, probe in ((136, False), (137, True)):
        model, width = seeded(seed, lambda rng: _structured(rng, probe), random.Random(seed))
        x = random_tensor(seed, (3, 4, width))
        described = _STRUCTURED + (", None ('probe') and a Python number, inf ('peak')" if probe else "")
        rule = ("the watch looks at every tensor of an output, through tuples, lists and dicts at any depth, and "
                "counts any other output (None, a number) as finite" if probe else
                "the watch looks at every tensor of an output, through tuples, lists and dicts at any depth")
        reference_model = copy.deepcopy(model)
        outputs = _OutputRecorder(reference_model, (nn.LSTM,))
        call_text = "TrainingMonitor(model, (nn.LSTM,))"
        monitor = _run(f"calling {call_text}.attach()", lambda: TrainingMonitor(model, (nn.LSTM,)).attach())
        doing = "running a training step (forward, zero_grad, backward, step) with the monitor attached"
        try:
            _run(doing, _train_step, model, x)
        except LearnerCodeRaised as raised:
            fail_with_hint(doing, raised.error, f"{described}: {rule}.", "structured-output-raised")
        _train_step(reference_model, x)
        _run("calling monitor.remove()", monitor.remove)
        said = f"After {call_text}.attach() and a training step on a model whose modules return tuples, lists and dicts,"
        _compare_stats(_attribute(monitor, "activation_stats", "reading monitor.activation_stats"), outputs,
                       "monitor.activation_stats", said + " in monitor.activation_stats", {})
        first = _attribute(monitor, "first_nonfinite", "reading monitor.first_nonfinite")
        if first is not None:
            number = (" Module 'peak' returns a Python number, inf, which is no tensor: any other output than a "
                      "tensor or a tuple, list or dict of them counts as finite." if first == "peak" else "")
            fail(f"{said} monitor.first_nonfinite is {first!r}, but every tensor of every output and gradient was "
                 f"finite; expected None.{number}", "number-output-counted" if number else "finite-place-named")
        if probe:
            continue
        for holder, where in (("split", "inside the list in its list"), ("keyed", "inside the dict in its dict")):
            infinite, reference_model = copy.deepcopy(model), copy.deepcopy(model)
            for copied in (infinite, reference_model):
                getattr(copied, holder).scale.fill_(math.inf)
            watch = _NonfiniteWatch(reference_model)
            with torch.no_grad():
                reference_model(x)
            assert watch.first == holder, (watch.first, holder)
            monitor = _run(f"calling {call_text}.attach()", lambda: TrainingMonitor(infinite, (nn.LSTM,)).attach())
            _run("running model(x) with the monitor attached", infinite, x)
            _run("calling monitor.remove()", monitor.remove)
            _check_first(monitor.first_nonfinite, watch, None,
                         f"With module {holder!r} returning a tensor with inf {where} (every other output finite),",
                         f"expected {holder!r}: {rule}.", "nested-outputs-not-watched")


def _check_exception_in_block(TrainingMonitor):
    seed = 134
    model, width = seeded(seed, _mlp, random.Random(seed))
    doing = "running `with TrainingMonitor(model, (nn.ReLU,)):` around a block that raises ValueError"

    def block_that_raises():
        with TrainingMonitor(model, (nn.ReLU,)):
            raise ValueError("raised by the checker inside the with block")

    planted_exception_comes_through(
        doing, block_that_raises, lambda error: isinstance(error, ValueError),
        lambda returned: (f"{doing}: the ValueError did not come out of the with block; __exit__ swallowed it (it "
                          "returned a true value). Return None from __exit__ so the exception goes on.",
                          "swallowed-exception"))
    left = _hooks_left(model)
    if left:
        fail(f"{doing}: after the exception left the block, hooks were still registered: {_listed(left)}. "
             "__exit__ runs on an exception too: remove the hooks there.", "exit-not-removing-on-error")


# ---------------------------------------------------------------- TrainingMonitor after the earlier exercises

# The grader runs all exercise cells of a lesson in one namespace, so a monitor usually calls the learner's
# own functions: when one of them is unfinished or wrong, the monitor's failure is not the monitor's.
# {name of the earlier exercise: (its heading, its check)}
_EARLIER = {"record_activation_stats": ("Exercise 1", check_record_activation_stats),
            "track_grad_norms": ("Exercise 2", check_track_grad_norms)}


def _code_of(cls):
    """The functions defined in the class body (methods, static and class methods, properties)."""
    try:
        members = list(vars(cls).values())
    except TypeError:
        return []
    functions = []
    for member in members:
        for candidate in (member, getattr(member, "__func__", None), getattr(member, "fget", None)):
            if hasattr(candidate, "__code__") and hasattr(candidate, "__globals__"):
                functions.append(candidate)
    return functions


def _names_used(code):
    names = set(code.co_names)
    for constant in code.co_consts:
        if hasattr(constant, "co_names"):
            names |= _names_used(constant)
    return names


def _finish_first(name, why, seen, mistake):
    exercise, _ = _EARLIER[name]
    fail(f"TrainingMonitor uses your {name}, from {exercise}, which {why}. Finish {exercise} first (until "
         f"check({name}) passes), then check TrainingMonitor again." + (f" What this check saw: {seen}" if seen else ""),
         mistake)


def _blame_earlier_exercise(TrainingMonitor, error, seen):
    """Fails naming the earlier exercise to finish when the monitor's failure comes from one; returns otherwise."""
    learner_error = error.error if isinstance(error, LearnerCodeRaised) else error
    if learner_raised_not_implemented(learner_error):
        frames = [frame for frame, _ in traceback.walk_tb(learner_error.__traceback__)]
        if frames[-1].f_code.co_name in _EARLIER:
            _finish_first(frames[-1].f_code.co_name, "still raises NotImplementedError (it is not written yet)", "",
                          "earlier-exercise-not-written")
        return
    if isinstance(learner_error, NameError) and getattr(learner_error, "name", None) in _EARLIER:
        _finish_first(learner_error.name, "is not defined: run its exercise cell (once it is written)", "",
                      "earlier-exercise-not-run")
    functions = _code_of(TrainingMonitor)
    used = set().union(*(_names_used(function.__code__) for function in functions)) if functions else set()
    namespace = functions[0].__globals__ if functions else {}
    for name in _EARLIER:
        if name in used and callable(namespace.get(name)):
            if not _passes_its_check(name, namespace[name]):
                _finish_first(name, "does not pass its own check yet", seen, "earlier-exercise-failing")


def _passes_its_check(name, learner_object):
    """Whether the learner's earlier exercise `name` passes its own check, run as the grader runs one:
    torch's global state restored afterwards. Any way of not passing (a failure, an error, a stub) counts."""
    try:
        with torch_state_restored():
            _EARLIER[name][1](learner_object)
    except (Exception, SystemExit):
        return False
    return True


def _check_global_modes(after_what):
    """Fails when the learner's code left autograd's anomaly detection on or grad mode off (and puts them back,
    so that the checker's own backward passes run as they should)."""
    anomaly, grad_mode = torch.is_anomaly_enabled(), torch.is_grad_enabled()
    torch.autograd.set_detect_anomaly(False)
    torch.set_grad_enabled(True)
    if anomaly:
        fail(f"{after_what}, autograd's anomaly detection is on (torch.autograd.set_detect_anomaly(True) called?): "
             "a global switch, left on for every model, that slows every backward pass and makes it raise on a "
             "NaN. The monitor watches with its hooks only, and leaves torch's global modes as they were.",
             "anomaly-detection-left-on")
    if not grad_mode:
        fail(f"{after_what}, grad mode is off (torch.set_grad_enabled(False) called?): the monitor must leave "
             "torch's global modes as they were.", "grad-mode-left-off")


@check_of("TrainingMonitor", mistakes={**_MONITOR_RECORDS_MISTAKES, **_MONITOR_MISTAKES})
def check_TrainingMonitor(TrainingMonitor):
    anomaly = torch.is_anomaly_enabled()
    try:
        _check_attach_train_remove(TrainingMonitor)
        _check_attach_twice(TrainingMonitor)
        _check_nonfinite_output(TrainingMonitor)
        _check_nonfinite_gradient(TrainingMonitor)
        _check_nan_output(TrainingMonitor)
        _check_large_finite(TrainingMonitor)
        _check_nonfinite_in_model_itself(TrainingMonitor)
        _check_structured_outputs(TrainingMonitor)
        _check_exception_in_block(TrainingMonitor)
    except CheckFailed as failure:
        _blame_earlier_exercise(TrainingMonitor, failure, failure.message)
        raise
    except LearnerCodeRaised as raised:
        _blame_earlier_exercise(TrainingMonitor, raised,
                                f"{raised.doing} raised {describe_learner_error(raised.error)}")
        found = hint_for(raised.error, _FROZEN_HOOKED)
        if found:
            fail_with_hint(raised.doing, raised.error, found[1], found[0])
        raise
    except NotImplementedError as error:
        _blame_earlier_exercise(TrainingMonitor, error, "")
        raise
    finally:
        torch.autograd.set_detect_anomaly(anomaly)
