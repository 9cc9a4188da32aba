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
from hooked.checks.handles import handle_list, remove_handles
from hooked.checks.isolation import torch_state_restored
from hooked.checks.hooks_left import (MODULE_HOOK_DICTS, PARAMETER_HOOK_DICTS, global_hook_registrar, global_hooks,
                                     global_hooks_added, registered_hooks)
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.seeding import seeded
from hooked.checks.tensors import describe, random_tensor
from hooked.checks.torch_error_hints import fail_with_hint
from hooked.feedback.learner_tracebacks import describe_learner_error, learner_raised_not_implemented

_KEYS = ("mean", "std", "zero_fraction")
_LOOP_VARIABLE = ("If the records all landed under one name, the hook reads the loop variable when it runs: bind the "
                  "name when you make the hook (a function that returns the hook, or a default argument).")


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
                 "graph. Store a number: .item(), or compute on a detached tensor (.detach()).")
        if value.dim() != 0:
            fail(f"{where} is {describe(value)}; expected one number, a Python float or a 0-dim tensor "
                 "(.item() gives the float).")
        return value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        fail(f"{where} is {describe(value)}; expected a number (a Python float or a 0-dim tensor).")
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
        fail(f"{call_text} returned {describe(result)}; expected a pair {what}.")
    records, handles = result
    if not isinstance(records, Mapping) and isinstance(handles, Mapping):
        fail(f"{call_text} returned (a {type(records).__name__}, a {type(handles).__name__}): the records come "
             f"second; expected the pair {what}, in that order.")
    if not isinstance(records, Mapping):
        fail(f"{call_text} returned {describe(records)} as its records; expected a dict from name to list.")
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
             "Return the handle of every hook you registered.")


def _lists(records, call_text, said):
    """The records as {key: list}, with keys whose list is empty left out."""
    result = {}
    for key, entries in records.items():
        if not isinstance(entries, (list, tuple)):
            fail(f"{said} the entry {key!r} of what {call_text} recorded is {describe(entries)}; expected a list "
                 "with one entry per call.")
        if entries:
            result[key] = list(entries)
    return result


def _check_keys(recorded, expected, said, what, duplicates, explain_missing=None, explain_unexpected=None):
    """`duplicates` maps a second name of a shared object to its first name; `explain_missing(missing)`
    says why names may lack records, `explain_unexpected(names)` why names may have records that should
    not be there."""
    names = [key for key in recorded if not isinstance(key, str) or key not in expected]
    objects = [key for key in names if isinstance(key, (nn.Module, torch.Tensor))]
    if objects and len(objects) == len(names):
        fail(f"{said} the records are keyed by the {what} objects themselves (keys of type "
             f"{type(objects[0]).__name__}); expected the {what}'s names as named_{what}s() gives them, "
             f"{sorted(expected)}: a name is what a reader finds in the model and a plot can label.")
    by_type = [key for key in names if isinstance(key, type) or isinstance(getattr(nn, str(key), None), type)]
    if by_type:
        fail(f"{said} the records are keyed by {by_type}; expected the {what}'s names as "
             f"named_{what}s() gives them, {sorted(expected)}: keyed by type, two layers of one type "
             "mix their records.")
    numbered = [key for key in names if isinstance(key, int)]
    if numbered and len(numbered) == len(names):
        fail(f"{said} the records are keyed by numbers, {sorted(numbered)}; expected the {what}'s names as "
             f"named_{what}s() gives them, {sorted(expected)}: a position in {what}s() names nothing a reader "
             "can find.")
    shared = [key for key in names if key in duplicates]
    if shared:
        fail(f"{said} there are records under {shared}, a second name of the same {what} object as "
             f"{[duplicates[key] for key in shared]}: named_{what}s() lists a shared {what} once, under its first "
             f"name. Listing with remove_duplicate=False hooks it twice.")
    missing = [name for name in expected if name not in recorded]
    why = explain_missing(missing) if explain_missing else ""
    if not why and len(recorded) == 1 and missing:
        why = _LOOP_VARIABLE
    if not why and missing:
        why = f"Register a hook on every {what} that the contract names, as named_{what}s() lists them."
    if names:
        unexpected = explain_unexpected(names) if explain_unexpected else ""
        fail(f"{said} there are records under {names}, which should not be recorded; expected names "
             f"{sorted(expected)}." + (f" {unexpected}" if unexpected else "")
             + (f" Nothing was recorded for {missing}. {why}" if missing else ""))
    if missing and not recorded:
        fail(f"{said} nothing was recorded at all; expected records for {sorted(expected)}. Register a hook on "
             f"each {what} and return the dict that the hooks fill.")
    if missing:
        fail(f"{said} nothing was recorded for {missing} (records hold {sorted(map(str, recorded))}). {why}")


def _check_fresh(records, call_text, before_what):
    """The records a call returns hold nothing yet: each call makes its own dict."""
    if any(isinstance(entries, (list, tuple)) and entries for entries in records.values()):
        fail(f"{call_text} returned records that already hold entries, before {before_what}: "
             f"{sorted(map(str, records))}. Those come from an earlier call: make a new dict in each call (not one "
             "at module level, or a default argument), or the records of two models mix.")


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
        fail(f"{where} is {describe(entry)}; expected a dict with the keys {list(_KEYS)}.")
    missing = [key for key in _KEYS if key not in entry]
    if missing:
        fail(f"{where} has the keys {sorted(map(str, entry))}; it lacks {missing}. Expected exactly "
             f"{list(_KEYS)}.")
    expected = _stats_of(output)
    values = {key: _number(entry[key], f"{where}[{key!r}]") for key in _KEYS}
    first_item = (f" The module returned a {kind}; {_TUPLE_RULE.lower()}, {describe(output)}, and only that "
                  "item." if kind in ("tuple", "list") else "")
    if not _near(values["mean"], expected["mean"]):
        of_input = module_input is not None and _near(values["mean"], module_input.mean().item())
        fail(f"{where}['mean'] is {values['mean']:.6g}; the module's output, {describe(output)}, has mean "
             f"{expected['mean']:.6g} over all its elements."
             + (" That is the mean of the module's input: record its output (a forward hook's third argument)."
                if of_input else "") + first_item)
    if not _near(values["std"], expected["std"]):
        if _near(values["std"], expected["population std"]):
            fail(f"{where}['std'] is {values['std']:.6g}, the population standard deviation (dividing by n, "
                 f"correction=0, as numpy's std does); expected torch's default, output.std(), which divides by "
                 f"n - 1 (correction=1): {expected['std']:.6g}.")
        variance = (" That is the variance, output.var(); the std is its square root."
                    if _near(values["std"], expected["std"] ** 2) else "")
        fail(f"{where}['std'] is {values['std']:.6g}; the module's output, {describe(output)}, has "
             f"output.std() {expected['std']:.6g} over all its elements." + (variance or first_item))
    if not _near(values["zero_fraction"], expected["zero_fraction"]):
        zeros = int((output == 0).sum())
        # Near zeros first: the checker's inputs hold a few (1e-5, 1e-9), and their count can happen to equal
        # that of the non-zero elements.
        if any(_near(values["zero_fraction"], (output.abs() <= near).float().mean().item()) and (
                (output.abs() <= near) & (output != 0)).any() for near in (1e-3, 1e-4, 1e-6, 1e-8)):
            hint = (" That counts elements near 0 too (|x| below a threshold); count only the elements exactly "
                    "equal to 0 (output == 0).")
        elif _near(values["zero_fraction"], 1 - expected["zero_fraction"]):
            hint = " That is the fraction of non-zero elements."
        elif _near(values["zero_fraction"], (output <= 0).float().mean().item()):
            hint = (" That is the fraction of elements <= 0, which counts the negative elements too; count only "
                    "the elements exactly equal to 0 (output == 0).")
        elif _near(values["zero_fraction"], zeros):
            hint = " That is the number of zeros; divide by the number of elements."
        else:
            hint = first_item
        fail(f"{where}['zero_fraction'] is {values['zero_fraction']:.6g}; {zeros} of the output's "
             f"{output.numel()} elements are exactly 0, a fraction of {expected['zero_fraction']:.6g}.{hint}")


def _entry_matches(entry, output, module_input):
    try:
        _check_entry(entry, output, "", module_input)
    except CheckFailed:
        return False
    return True


def _why_modules_missing(model, layer_types, kinds):
    """Says why modules of `model` may have no records: the mistakes that skip modules."""
    modules = dict(model.named_modules())

    def explain(missing):
        structured = [f"{name!r} returns a {kinds[name]}" for name in missing if name in kinds]
        if structured and any("whose first item" in kinds[name] for name in missing if name in kinds):
            return (f"Module {', '.join(structured)}: {_TUPLE_RULE.lower()}, and {_FIRST_OF_FIRST}, so it has one "
                    "entry per call too.")
        if structured:
            return (f"Module {', '.join(structured)}: {_TUPLE_RULE.lower()} (a list as well as a tuple), so it "
                    "has one entry per call too.")
        if "" in missing:
            return (f"Module '' is the model itself, a {type(model).__name__}, so one of the layer types: "
                    "named_modules() lists it first, under the name '', and it gets a hook too.")
        subclassed = [f"{name!r} is a {type(modules[name]).__name__}" for name in missing
                      if name in modules and type(modules[name]) not in layer_types]
        if subclassed and len(subclassed) == len(missing):
            return (f"Module {', '.join(subclassed)}, a subclass of one of the layer types: isinstance(module, "
                    "layer_types) counts it, comparing type(module) does not.")
        if all("." in name for name in missing):
            return ("Those are nested modules: named_children() lists only the model's direct children, "
                    "named_modules() walks every module inside.")
        return ""
    return explain


def _why_unexpected(kinds):
    def explain(names):
        other = [f"{name!r} returned a {kinds[name]}" for name in names if name in kinds]
        if other:
            return f"Module {', '.join(other)}: {_OTHER_RULE}."
        return ""
    return explain


def _compare_stats(stats, reference, call_text, said, duplicates, explain_missing=None):
    recorded = _lists(stats, call_text, said)
    _check_keys(recorded, reference.outputs, said, "module", duplicates, explain_missing,
                _why_unexpected(reference.kinds))
    for name, outputs in reference.outputs.items():
        entries = recorded[name]
        if len(entries) == 1 < len(outputs):
            fail(f"{said} stats[{name!r}] holds 1 entry; the module was called {len(outputs)} times so far. Append "
                 "one entry per call to the module's list instead of replacing the list.")
        if len(entries) != len(outputs):
            twice = len(entries) == 2 * len(outputs)
            fail(f"{said} stats[{name!r}] holds {len(entries)} entries; the module was called {len(outputs)} "
                 f"time(s) so far, one entry per call."
                 + (" Twice as many: is a hook registered twice on it (a cell run twice, or the module found "
                    "under two names)?" if twice else
                    " A module called twice in one forward pass fires its hook twice: one entry per call."
                    if len(entries) < len(outputs) else ""))
        inputs = reference.inputs[name]
        in_order = all(_entry_matches(entry, output, module_input)
                       for entry, output, module_input in zip(entries, outputs, inputs))
        if not in_order and len(entries) > 1 and all(
                _entry_matches(entry, output, module_input)
                for entry, output, module_input in zip(entries[::-1], outputs, inputs)):
            fail(f"{said} stats[{name!r}] holds the entries of the module's {len(outputs)} calls in reverse order; "
                 "expected them in the order of the calls: append each new entry at the end.")
        for index, (entry, output) in enumerate(zip(entries, outputs)):
            _check_entry(entry, output, f"{said} stats[{name!r}][{index}]", inputs[index], reference.kinds.get(name))


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


@check_of("record_activation_stats", budget_ms=50,
          why="its contract covers the outputs of nn.LSTM, and torch's first nn.LSTM call in a process sets "
              "up oneDNN's LSTM kernel: 23 ms once (0.4 ms the next call), paid by the first check that runs "
              "an LSTM; warm, the check costs 19 ms")
def check_record_activation_stats(record_activation_stats):
    for seed, build in _STATS_CASES:
        case = seeded(seed, build, random.Random(seed))
        model, layer_types, duplicates, note = case["model"], case["layer_types"], case["duplicates"], case["note"]
        reference_model = copy.deepcopy(model)
        reference = _OutputRecorder(reference_model, layer_types)
        names = "(" + ", ".join(t.__name__ for t in layer_types) + ",)"
        call_text = f"record_activation_stats(model, {names})"
        globals_before = global_hooks()
        stats, handles = _unpack(_run(f"calling {call_text}", record_activation_stats, model, layer_types),
                                 call_text, "(stats, handles)")
        _check_fresh(stats, call_text, "the model ran")
        kept = None
        # Pass 1 trains with grad mode on, pass 2 runs under torch.no_grad(), pass 3 in eval mode.
        for step, (grad_mode, training) in enumerate(((True, True), (False, True), (True, False)), start=1):
            x = random_tensor(seed * 10 + step, case["shape"])
            x.view(-1)[:2] = 1e-5  # near 0, not 0: still not a zero after a ReLU
            x.view(-1)[2] = 1e-9  # closer still: torch.isclose(x, 0) (atol 1e-8) takes it for 0
            for copy_ in (model, reference_model):
                copy_.train(training)
            with torch.set_grad_enabled(grad_mode):
                expected = reference_model(x)
                doing = f"running model(x) after {call_text}"
                try:
                    output = _run(doing, model, x)
                except LearnerCodeRaised as raised:
                    if not note:
                        raise
                    fail_with_hint(doing, raised.error, note)
                if torch.is_grad_enabled() != grad_mode:
                    fail(f"After {call_text}, running model(x) with grad mode {'on' if grad_mode else 'off'} left "
                         f"grad mode {'on' if torch.is_grad_enabled() else 'off'}: a hook changed torch's global "
                         "grad mode (torch.set_grad_enabled(...) called as a statement?). Use `with "
                         "torch.no_grad():` or output.detach(), which change nothing outside the hook.")
            if not torch.equal(output.detach(), expected.detach()) or output.requires_grad != expected.requires_grad:
                how = _how_output_changed(model, layer_types, x, grad_mode)
                why = ("A hook changed a module's output in place (an in-place operation such as sub_() or abs_() on "
                       "the output, or on output.detach(), which shares its memory): compute out of place, or on "
                       "output.detach().clone(), and return None." if how == "in place" else
                       "A forward hook that returns a value replaces the output, a detached one cuts training off: "
                       "return None.")
                fail(f"After {call_text}, model(x) returned {describe(output)} (requires_grad "
                     f"{output.requires_grad}); without your hooks it returns {describe(expected)} (requires_grad "
                     f"{expected.requires_grad}). {why}")
            mode = ("with grad mode on" if grad_mode else "under torch.no_grad()") + ("" if training else ", in eval mode")
            said = f"After {call_text} and forward pass {step} ({mode}),"
            now = {key: list(entries) for key, entries in stats.items() if isinstance(entries, (list, tuple))}
            unchanged = kept is not None and now.keys() == kept.keys() and all(
                len(now[key]) == len(kept[key]) and all(a is b for a, b in zip(now[key], kept[key])) for key in now)
            if not grad_mode and any(now.values()) and unchanged:
                fail(f"{said} the records are exactly as they were before that pass: the hooks recorded nothing "
                     "under torch.no_grad(). Forward hooks fire under torch.no_grad() too; record there as well "
                     "(a test of torch.is_grad_enabled() or output.requires_grad skips it).")
            if not training and any(now.values()) and unchanged:
                fail(f"{said} the records are exactly as they were before that pass: the hooks recorded nothing "
                     "in eval mode. Forward hooks fire after model.eval() too, and every call of the module adds "
                     "an entry (a test of module.training skips them).")
            kept = now
            _compare_stats(stats, reference, call_text, said, duplicates,
                           _why_modules_missing(model, layer_types, reference.kinds))
        for copy_ in (model, reference_model):
            copy_.train()
        _remove_all(handles, call_text, model, globals_before)


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
        return "Those are biases: hook every parameter that requires grad, the biases too."
    return ""


def _why_unexpected_parameters(never, module_names):
    def explain(names):
        idle = [name for name in names if name in never]
        if idle:
            return (f"No backward pass computed a gradient for {idle} (never used in forward): a pass that computes "
                    "no gradient for a parameter adds no entry for it.")
        if all(name in module_names for name in names):
            return ("Those are module names: record per parameter, with a tensor hook on each parameter, under its "
                    "named_parameters() name.")
        return ""
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
    computed a gradient for `name`; `skipped[name]`: the passes that computed none for it."""
    recorded = _lists(norms, call_text, said)
    misnamed = _misnamed(recorded, reference)
    if misnamed:
        fail(f"{said} norms[{misnamed[0]!r}] holds the norms of the gradients of {misnamed[1]!r}: each name must go "
             "with its own parameter. Take both from named_parameters() together (for name, parameter in "
             "model.named_parameters()); names zipped with parameters() drift apart once one is skipped.")
    frozen = [name for name in recorded if name in frozen_names]
    _check_keys({k: v for k, v in recorded.items() if k not in frozen}, reference.grads, said, "parameter",
                duplicates, _why_parameters_missing, _why_unexpected_parameters(never, module_names))
    if frozen:
        fail(f"{said} there are records for {frozen}, parameters that do not require grad (or got no gradient); "
             "expected none.")
    skipped = skipped or {}
    for name, grads in reference.grads.items():
        entries = recorded[name]
        if len(entries) == 1 < len(grads):
            fail(f"{said} norms[{name!r}] holds 1 entry; {len(grads)} backward passes computed a gradient for "
                 "that parameter. Append one entry per backward pass instead of replacing the list.")
        if len(entries) > len(grads) and skipped.get(name):
            fail(f"{said} norms[{name!r}] holds {len(entries)} entries; {len(grads)} backward passes computed a "
                 f"gradient for that parameter, and pass(es) {skipped[name]} computed none (its branch did not "
                 "run). A backward pass that computes no gradient for a parameter adds no entry for it.")
        if len(entries) != len(grads):
            fail(f"{said} norms[{name!r}] holds {len(entries)} entries; {len(grads)} backward pass(es) computed "
                 "a gradient for that parameter, one entry each. A tensor hook fires once per backward pass, "
                 "with the gradient summed over every use of the parameter.")
        values = [_number(entry, f"{said} norms[{name!r}][{index}]") for index, entry in enumerate(entries)]
        expected_norms = [grad.norm().item() for grad in grads]
        if len(values) > 1 and not all(map(_near, values, expected_norms)) \
                and all(map(_near, values[::-1], expected_norms)):
            fail(f"{said} norms[{name!r}] holds the norms of the {len(grads)} backward passes in reverse order; "
                 "expected them in the order of the passes: append each new norm at the end.")
        for index, (value, expected) in enumerate(zip(values, expected_norms)):
            where = f"{said} norms[{name!r}][{index}]"
            if _near(value, expected):
                continue
            if not math.isfinite(expected) and math.isfinite(value):
                fail(f"{where} is {value:.6g}; the gradient that backward pass computed for {name!r} holds inf or NaN, "
                     f"and its L2 norm is {expected:.6g}. Record the norm of the gradient as it is (a "
                     "torch.nan_to_num() or a filter of the non-finite elements hides the very values a monitor is "
                     "for).")
            if _near(value, accumulated[name][index]):
                fail(f"{where} is {value:.6g}, the norm of .grad after that backward pass, which holds the "
                     f"sum of the gradients of every backward pass since the last zero_grad(); that pass's own "
                     f"gradient has norm {expected:.6g}. Under gradient accumulation a post-accumulate-grad hook "
                     "(or .grad) sees the running sum: use a tensor hook, parameter.register_hook, and the "
                     "gradient it receives.")
            if stale and _near(value, stale[name][index]):
                fail(f"{where} is {value:.6g}, the norm of .grad before that backward pass (0 when .grad was "
                     f"None); that pass's own gradient has norm {expected:.6g}. A tensor hook runs before .grad is "
                     "updated: take the norm of the gradient the hook receives.")
            if _near(value, expected ** 2):
                fail(f"{where} is {value:.6g}, the squared norm; expected the L2 norm {expected:.6g} "
                     "(grad.norm(), the square root of the sum of squares).")
            if index in clipped.get(name, {}) and _near(value, clipped[name][index]):
                fail(f"{where} is {value:.6g}, the norm after clip_grad_norm_ scaled .grad; expected the gradient "
                     f"backward computed, before clipping: {expected:.6g}.")
            fail(f"{where} is {value:.6g}; the gradient that backward pass computed for {name!r} has L2 norm "
                 f"{expected:.6g}.")


def _requires_grad(model):
    return {name: parameter.requires_grad for name, parameter in model.named_parameters()}


def _check_training_modes(model, before, after_what):
    changed = [repr(name) + (" (the model itself)" if name == "" else "") for name, module in model.named_modules()
               if module.training != before[name]]
    if changed:
        fail(f"{after_what}, the training mode changed for {_listed(changed)} (model.train() or model.eval() "
             "called?): the monitor must leave the model as it found it, and a model in eval mode behaves "
             "differently (dropout, batch norm).")


def _check_requires_grad(model, before, after_what):
    changed = [name for name, flag in _requires_grad(model).items() if before.get(name) != flag]
    if changed:
        fail(f"{after_what}, requires_grad changed for {changed} (it was {[before.get(name) for name in changed]}): "
             "a frozen parameter must stay frozen, or it trains. Give it no hook instead "
             "(if parameter.requires_grad: ...).")


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


@check_of("track_grad_norms")
def check_track_grad_norms(track_grad_norms):
    for seed, build in _NORM_CASES:
        model, width, duplicates = seeded(seed, build, random.Random(seed))
        reference_model = copy.deepcopy(model)
        reference = _GradRecorder(reference_model)
        call_text = "track_grad_norms(model)"
        globals_before = global_hooks()
        norms, handles = _unpack(_run(f"calling {call_text}", track_grad_norms, model), call_text,
                                 "(norms, handles)")
        _check_fresh(norms, call_text, "any backward pass")
        _check_requires_grad(model, _requires_grad(reference_model), f"After {call_text}")
        accumulated, clipped, stale, skipped = {}, {}, {}, {}
        trainable = [name for name, parameter in reference_model.named_parameters() if parameter.requires_grad]
        frozen = [name for name, parameter in model.named_parameters() if not parameter.requires_grad]
        for step, (what, then) in enumerate(_NORM_PLAN, start=1):
            x = random_tensor(seed * 10 + step, (4, width))
            create_graph = then == "create_graph"
            scale = 1000.0 if then == "clip" else 1.0
            before_grad = {name: 0.0 if parameter.grad is None else parameter.grad.norm().item()
                           for name, parameter in reference_model.named_parameters()}
            before_count = {name: len(reference.grads.get(name, [])) for name in trainable}
            for trained in (model, reference_model):
                _set_pass(trained, step)
            nonfinite = then == "nonfinite"
            loss_text = ("(1000 * model(x).pow(2).mean())" if scale != 1 else
                         "(model(x) * g).sum(), g holding an inf," if nonfinite else "model(x).pow(2).mean()")
            _run(f"running {loss_text}.backward({'create_graph=True' if create_graph else ''}) after "
                 f"{call_text}", _backward, model, x, create_graph, scale, nonfinite)
            _backward(reference_model, x, create_graph, scale, nonfinite)
            for name, parameter in reference_model.named_parameters():
                if name not in trainable:
                    continue
                if len(reference.grads.get(name, [])) > before_count[name]:
                    stale.setdefault(name, []).append(before_grad[name])
                    accumulated.setdefault(name, []).append(parameter.grad.norm().item())
                else:
                    skipped.setdefault(name, []).append(step)
            said = f"After {call_text} and {what},"
            for (name, parameter), reference_parameter in zip(model.named_parameters(), reference_model.parameters()):
                mine, theirs = parameter.grad, reference_parameter.grad
                if not _same(mine, theirs):
                    fail(f"{said} {name}.grad is {describe(mine)}; without your hooks it is "
                         f"{describe(theirs)}. The hooks must only look: return None, and change "
                         "neither the gradient in place nor .grad.")
                if mine is not None and mine.requires_grad != theirs.requires_grad:
                    fail(f"{said} {name}.grad has requires_grad {mine.requires_grad}; without your hooks it has "
                         f"{theirs.requires_grad}: under backward(create_graph=True) the gradient carries the graph "
                         "of the backward pass, for a second derivative, and a hook that returns grad.detach() "
                         "cuts it. The hooks must only look: return None.")
            if then == "clip":
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-3)
                torch.nn.utils.clip_grad_norm_(reference_model.parameters(), max_norm=1e-3)
                for name, parameter in reference_model.named_parameters():
                    if name in trainable and step not in skipped.get(name, []):
                        clipped.setdefault(name, {})[len(accumulated[name]) - 1] = parameter.grad.norm().item()
            never = [name for name in trainable if name not in reference.grads]
            _compare_norms(norms, reference, accumulated, clipped, call_text, said, duplicates, frozen, stale,
                           skipped, never, [name for name, _ in model.named_modules()])
            if then == "step":
                for trained in (model, reference_model):
                    _sgd_step(trained, lr=0.1)
            if then in ("step", "create_graph"):
                for trained in (model, reference_model):
                    trained.zero_grad()  # .grad = None; after create_graph=True this breaks the reference cycle
        _remove_all(handles, call_text, model, globals_before)


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
                 "grad_norms and first_nonfinite.")


def _new_monitor(TrainingMonitor, model, call_text):
    monitor = _run(f"calling {call_text}", TrainingMonitor, model, (nn.ReLU,))
    left = _hooks_left(model)
    if left:
        fail(f"{call_text} registered hooks already ({_listed(left)}); the constructor registers nothing, attach() does.")
    for name in ("activation_stats", "grad_norms"):
        value = _attribute(monitor, name, f"reading monitor.{name} after {call_text}")
        if not isinstance(value, Mapping) or any(value.values()):
            fail(f"after {call_text}, monitor.{name} is {describe(value)}; expected an empty dict.")
    first = _attribute(monitor, "first_nonfinite", f"reading monitor.first_nonfinite after {call_text}")
    if first is not None:
        fail(f"after {call_text}, monitor.first_nonfinite is {first!r}; expected None.")
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
             f"{describe(expected)}. {_ONLY_LOOK}")
    for (name, parameter), reference in zip(model.named_parameters(), reference_model.parameters()):
        if not _same(parameter.grad, reference.grad):
            fail(f"{said} {name}.grad is {describe(parameter.grad)}; without the monitor it is "
                 f"{describe(reference.grad)}. {_ONLY_LOOK}")


def _train_step(model, x):
    loss = model(x).pow(2).mean()
    model.zero_grad()
    loss.backward()
    _sgd_step(model, lr=0.05)


def _check_attach_train_remove(TrainingMonitor):
    seed = 131
    model, width = seeded(seed, _mlp, random.Random(seed))
    reference_model = copy.deepcopy(model)
    outputs, grads = _OutputRecorder(reference_model, (nn.ReLU,)), _GradRecorder(reference_model)
    call_text = "TrainingMonitor(model, (nn.ReLU,))"
    globals_before = global_hooks()
    monitor = _new_monitor(TrainingMonitor, model, call_text)
    # The caller's own hooks, registered before attach(): remove() must leave them.
    seen_by_caller = []

    def callers_forward_hook(module, args, output):
        seen_by_caller.append("forward")

    def callers_tensor_hook(grad):
        seen_by_caller.append("gradient")

    callers = (callers_forward_hook, callers_tensor_hook)
    model[1].register_forward_hook(callers_forward_hook)
    model[2].weight.register_hook(callers_tensor_hook)
    returned = _run("calling monitor.attach()", monitor.attach)
    if returned is not monitor:
        fail(f"monitor.attach() returned {describe(returned)}; expected the monitor itself (return self), so that "
             "`monitor = TrainingMonitor(model, types).attach()` works.")
    if not _hooks_left(model, callers):
        fail("after monitor.attach(), no hook is registered on the model; attach() registers the hooks.")

    # And the caller's hooks registered while the monitor is attached: remove() must leave them too.
    def callers_later_forward_hook(module, args, output):
        seen_by_caller.append("later forward")

    def callers_later_tensor_hook(grad):
        seen_by_caller.append("later gradient")

    callers += (callers_later_forward_hook, callers_later_tensor_hook)
    model[0].register_forward_hook(callers_later_forward_hook)
    model[2].bias.register_hook(callers_later_tensor_hook)
    flags = _requires_grad(reference_model)
    modes = {name: module.training for name, module in reference_model.named_modules()}
    _check_requires_grad(model, flags, "After monitor.attach()")
    _check_training_modes(model, modes, "After monitor.attach()")
    for step in (1, 2):
        x = random_tensor(seed * 10 + step, (3, width))
        doing = "running a training step (forward, zero_grad, backward, step) with the monitor attached"
        try:
            _run(doing, _train_step, model, x)
        except LearnerCodeRaised as raised:
            if isinstance(raised.error, TypeError) and "must be Tensor" in str(raised.error):
                fail_with_hint(doing, raised.error, f"A module received something that is not a tensor. {_ONLY_LOOK}")
            raise
        _train_step(reference_model, x)
    said = "After attach() and two training steps,"
    changed = [name for (name, parameter), reference in zip(model.named_parameters(), reference_model.parameters())
               if not torch.equal(parameter, reference)]
    if changed:
        fail(f"{said} the parameters {_listed(changed)} differ from those of the same model trained without a "
             f"monitor: the outputs or the gradients changed. {_ONLY_LOOK}")
    stats = _attribute(monitor, "activation_stats", "reading monitor.activation_stats")
    norms = _attribute(monitor, "grad_norms", "reading monitor.grad_norms")
    for attribute, records, function in (("activation_stats", stats, "record_activation_stats"),
                                         ("grad_norms", norms, "track_grad_norms")):
        if isinstance(records, Mapping) and not _lists(records, f"monitor.{attribute}", said):
            fail(f"{said} monitor.{attribute} holds no record. It must be the dict that the hooks fill, the one "
                 f"{function} returns, and not a copy made in attach(): a copy misses what the hooks add later.")
    _compare_stats(stats, outputs, "monitor.activation_stats", said + " in monitor.activation_stats", {})
    frozen = [name for name, parameter in model.named_parameters() if not parameter.requires_grad]
    _compare_norms(norms, grads, {name: [math.nan] * 2 for name in grads.grads}, {}, "monitor.grad_norms",
                   said + " in monitor.grad_norms", {}, frozen)
    first = _attribute(monitor, "first_nonfinite", "reading monitor.first_nonfinite")
    if first is not None:
        fail(f"{said} monitor.first_nonfinite is {first!r}, but every output and gradient was finite; expected None.")
    _run("calling monitor.remove()", monitor.remove)
    left = _hooks_left(model, callers) + _global_hooks_left(globals_before)
    if left:
        fail(f"after monitor.remove(), hooks were still registered: {_listed(left)}. remove() must remove every hook the "
             "monitor registered: keep each handle, those your two functions return included.")
    gone = [where for where, hooks, hook in (
                ("a forward hook on module '1', registered before attach()", model[1]._forward_hooks, callers[0]),
                ("a tensor hook on parameter '2.weight', registered before attach()", model[2].weight._backward_hooks,
                 callers[1]),
                ("a forward hook on module '0', registered while the monitor was attached", model[0]._forward_hooks,
                 callers[2]),
                ("a tensor hook on parameter '2.bias', registered while the monitor was attached",
                 model[2].bias._backward_hooks, callers[3]))
            if all(registered is not hook for registered in (hooks or {}).values())]
    if gone:
        fail(f"monitor.remove() also removed hooks that the monitor did not register: {'; '.join(gone)}, by the "
             "caller. Remove only the monitor's own hooks, by the handles it kept, not by clearing the model's hook "
             "dicts or restoring them as they were at attach().")
    _run("calling monitor.remove() a second time", monitor.remove)
    _check_requires_grad(model, flags, "After monitor.remove()")
    _check_training_modes(model, modes, "After monitor.remove()")
    _check_global_modes("After monitor.remove()")
    added = sorted(set(model.state_dict()) - set(reference_model.state_dict()))
    if added:
        fail(f"After monitor.remove(), model.state_dict() has the keys {added}, which the same model without a "
             "monitor has not (a buffer registered on it?): a checkpoint saved now would not load into the "
             "model as it was. Keep what the monitor records on the monitor.")
    kept = _attribute(monitor, "activation_stats", "reading monitor.activation_stats after monitor.remove()")
    counts = {name: len(entries) for name, entries in kept.items()}
    if not any(counts.values()) or not any(_attribute(monitor, "grad_norms", "reading monitor.grad_norms").values()):
        fail("after monitor.remove(), monitor.activation_stats or monitor.grad_norms is empty; the recorded data "
             "must stay.")
    x = random_tensor(seed * 10 + 3, (3, width))
    if not torch.equal(model(x), reference_model(x)):
        fail("after monitor.remove(), model(x) differs from the same model that never had a monitor.")
    if {name: len(entries) for name, entries in monitor.activation_stats.items()} != counts:
        fail("after monitor.remove(), a forward pass still added to monitor.activation_stats; remove() must stop "
             "the recording.")


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
             "attach() calls: add each call's handles to the list the monitor keeps instead of replacing the list.")


def _overflow(model):
    """Two biases of the second Linear set to +inf: its output has +inf there and no NaN (its inputs are
    finite), and the next Linear's output mixes +inf and -inf into NaN."""
    with torch.no_grad():
        model[1][0].bias[:2] = math.inf


def _check_first(first, watch, nan_only, said, what):
    """`watch`: the checker's _NonfiniteWatch on a copy that ran the same steps."""
    if first == watch.first:
        return
    if first is None:
        fail(f"{said} monitor.first_nonfinite is None; {what}")
    if first == nan_only:
        fail(f"{said} monitor.first_nonfinite is {first!r}, the first place with a NaN; {what} "
             "Look for inf and -inf too: torch.isfinite.")
    if not isinstance(first, str) or first not in watch.names:
        fail(f"{said} monitor.first_nonfinite is {describe(first)}, which is neither a named_modules() nor a "
             f"named_parameters() name of the model; {what}")
    holder = watch.first in watch.parameter_names and isinstance(first, str) and first in watch.names \
        and first not in watch.parameter_names and (first == "" or watch.first.startswith(first + "."))
    if holder:
        fail(f"{said} monitor.first_nonfinite is {first!r}, the module that holds {watch.first!r}; {what} A gradient "
             "is named by its parameter's named_parameters() name.")
    if first in watch.seen:
        how = ("watch the gradient of every parameter that requires grad (a tensor hook) for inf as well as NaN "
               "(torch.isfinite)" if watch.first in watch.parameter_names else
               "watch every module that named_modules() lists, by its output (a forward hook, not a pre-hook)")
        fail(f"{said} monitor.first_nonfinite is {first!r}; {what} {first!r} saw a non-finite value too, but "
             f"after {watch.first!r}: {how}, and keep the first name once set.")
    fail(f"{said} monitor.first_nonfinite is {first!r}, where every value was finite; {what}")


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
                     "__enter__ must return the monitor (after attaching it).")
            if not _hooks_left(model):
                fail("inside `with TrainingMonitor(model, (nn.ReLU,)) as monitor:` no hook is registered; "
                     "__enter__ must attach the monitor.")
            output = model(x)
            output.pow(2).mean().backward()
            inside = getattr(bound, "first_nonfinite", None)
    left = _hooks_left(model)
    if left:
        fail(f"after the with block, hooks were still registered: {_listed(left)}; __exit__ must remove them.")
    if inside == watch.first and bound.first_nonfinite != inside:
        fail(f"{said} monitor.first_nonfinite was {inside!r} inside the with block and is "
             f"{describe(bound.first_nonfinite)} after it: removing the hooks must keep what was recorded.")
    _check_first(bound.first_nonfinite, watch, nan_watch.first, said,
                 f"expected {watch.first!r}, the first module (in the order the forward hooks fire) whose output "
                 "contained inf.")
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
                 "for NaN, inf and -inf alike.")


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
                 "each element: torch.isfinite(t).all(), not a sum or a norm.")
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
                 "sums overflow to inf. Test each element: torch.isfinite(grad).all(), not a norm or a sum.")


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
                 "contained inf or NaN. The watch covers the gradients of the parameters too.")
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
                     "the model included, not only the layers.")
    _run("running model(x).sum().backward() with the monitor attached", lambda: output.sum().backward())
    _run("calling monitor.remove()", monitor.remove)
    first = monitor.first_nonfinite
    if first != "":
        fail(f"{said} monitor.first_nonfinite was '' after the forward pass and is {describe(first)} after the "
             "backward pass, whose gradients were not finite either: it must never change once set. '' (the model "
             "itself) is falsy but it is a name: test `self.first_nonfinite is None`, not "
             "`not self.first_nonfinite`.")


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
            fail_with_hint(doing, raised.error, f"{described}: {rule}.")
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
                 f"finite; expected None.{number}")
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
                         f"expected {holder!r}: {rule}.")


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
                          "returned a true value). Return None from __exit__ so the exception goes on."))
    left = _hooks_left(model)
    if left:
        fail(f"{doing}: after the exception left the block, hooks were still registered: {_listed(left)}. "
             "__exit__ runs on an exception too: remove the hooks there.")


# ---------------------------------------------------------------- TrainingMonitor after the earlier exercises

# The grader runs all exercise cells of a lesson in one namespace, so a monitor usually calls the learner's
# own functions: when one of them is unfinished or wrong, the monitor's failure is not the monitor's.
_EARLIER = {"record_activation_stats": "Exercise 1", "track_grad_norms": "Exercise 2"}
_EARLIER_CHECKS = {"record_activation_stats": check_record_activation_stats,
                   "track_grad_norms": check_track_grad_norms}


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


def _finish_first(name, why, seen):
    exercise = _EARLIER[name]
    fail(f"TrainingMonitor uses your {name}, from {exercise}, which {why}. Finish {exercise} first (until "
         f"check({name}) passes), then check TrainingMonitor again." + (f" What this check saw: {seen}" if seen else ""))


def _blame_earlier_exercise(TrainingMonitor, error, seen):
    """Fails naming the earlier exercise to finish when the monitor's failure comes from one; returns otherwise."""
    learner_error = error.error if isinstance(error, LearnerCodeRaised) else error
    if learner_raised_not_implemented(learner_error):
        frames = [frame for frame, _ in traceback.walk_tb(learner_error.__traceback__)]
        if frames[-1].f_code.co_name in _EARLIER:
            _finish_first(frames[-1].f_code.co_name, "still raises NotImplementedError (it is not written yet)", "")
        return
    if isinstance(learner_error, NameError) and getattr(learner_error, "name", None) in _EARLIER:
        _finish_first(learner_error.name, "is not defined: run its exercise cell (once it is written)", "")
    functions = _code_of(TrainingMonitor)
    used = set().union(*(_names_used(function.__code__) for function in functions)) if functions else set()
    namespace = functions[0].__globals__ if functions else {}
    for name in _EARLIER:
        if name in used and callable(namespace.get(name)):
            if not _passes_its_check(name, namespace[name]):
                _finish_first(name, "does not pass its own check yet", seen)


def _passes_its_check(name, learner_object):
    """Whether the learner's earlier exercise `name` passes its own check, run as the grader runs one:
    torch's global state restored afterwards. Any way of not passing (a failure, an error, a stub) counts."""
    try:
        with torch_state_restored():
            _EARLIER_CHECKS[name](learner_object)
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
             "NaN. The monitor watches with its hooks only, and leaves torch's global modes as they were.")
    if not grad_mode:
        fail(f"{after_what}, grad mode is off (torch.set_grad_enabled(False) called?): the monitor must leave "
             "torch's global modes as they were.")


@check_of("TrainingMonitor")
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
        raise
    except NotImplementedError as error:
        _blame_earlier_exercise(TrainingMonitor, error, "")
        raise
    finally:
        torch.autograd.set_detect_anomaly(anomaly)
