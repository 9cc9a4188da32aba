"""Checks for lesson 05, backward hooks on modules.

The checks watch the learner's hooks through hooks of their own, registered with the
public API around the learner's: a full backward (pre-)hook registered before the
learner's sees the gradients autograd computed, one registered after it sees what the
learner's hook returned (module hooks chain, each receiving the previous one's result)."""

import contextlib
import copy
import math
import warnings
from collections.abc import Mapping

import torch
from torch import nn

from hooked.checks.check_api import calling, check_of, fail
from hooked.checks.event_predictions import EventPrediction, Rule, prediction_check
from hooked.checks import handles, noise
from hooked.checks.handles import handle_list, remove_handles, single_handle
from hooked.checks.hooks_left import modules_with_hooks
from hooked.checks.noise import (Z, check_generator_advanced, check_new_noise_each_call, check_noise_sample,
                                 check_seeded_noise)
from hooked.checks.seeding import seeded
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints

_MIXED_HOOKS = "Cannot use both regular backward hooks and full backward hooks"
_DEPRECATED = ("That is what torch says when a module gets both the deprecated register_backward_hook and a full "
               "backward hook (the check registers full backward hooks of its own to watch yours). The deprecated "
               "hook reports the gradients of the module's last operation, not of the module; use "
               "register_full_backward_hook (or register_full_backward_pre_hook).")
_HANDLE = "the handle that register_full_backward_hook returned"
_HANDLES = "the handles that register_full_backward_hook returned"
_TOO_EARLY = "Full backward hook is firing"
_LENGTH = ("A backward hook must return a tuple as long as the one it received (grad_input for a full backward hook, "
           "grad_output for a pre-hook), with None where it has None: do not drop entries, and return a tuple even "
           "for one entry.")
_SHAPE = ("Your hook returned a tensor of another shape than the gradient it replaces: entry i of the returned tuple "
          "replaces entry i of the tuple the hook received (grad_input for a full backward hook, grad_output for a "
          "pre-hook) and must have its shape.")
_NO_INPUT_GRAD = ("When no input of a module requires grad, grad_input is all None, and torch accepts only None or a "
                  "tuple of None back: return a tuple (not a list), with None kept as None.")
_NONE_ENTRY = ("An entry of grad_input or grad_output can be None: for an argument or output that is not a tensor, "
               "and every entry of grad_input when no input of the module requires grad. Skip None entries (keep "
               "them as None). And a parameter's .grad is None until autograd writes it, which may be after a full "
               "backward hook fires (always for a module called twice in one forward pass).")
_DTYPE = ("Your hook returned a tensor of another dtype than the gradient it replaces: each returned tensor must have "
          "the same dtype as the entry it replaces (draw noise with dtype=grad.dtype, or torch.randn_like(grad)).")
_GENERATOR = ("Your hook returned a generator: a comprehension in parentheses, (... for g in ...), is a generator "
              "expression, not a tuple, and torch needs its length. Return a tuple: tuple(... for g in ...).")
_AMBIGUOUS = ("A norm taken along some dimensions (per row, or per matrix as torch.linalg.matrix_norm does on a tensor "
              "of more than two dimensions) gives several values, which cannot be compared with max_norm. Take the "
              "L2 norm over all elements: grad.norm() or torch.linalg.vector_norm(grad).")
_NOT_A_TENSOR = ("Each entry of the tuple a backward hook returns must be a tensor (or None where the tuple it "
                 "received has None): not a list, a number or a NumPy array.")
_NUMPY = ("In a backward with create_graph=True (as torch.autograd.grad(..., create_graph=True) runs it, for a "
          "gradient penalty) the gradients a hook receives require grad, and .numpy() refuses them. Take the norm "
          "with torch (tensor.norm()), then .item().")


# ---------------------------------------------------------------- shared helpers

# (text in torch's error, the slug of the mistake, what it means for these exercises), the first that matches applies
_BACKWARD_ERROR_HINTS = (
    (_MIXED_HOOKS, "deprecated-backward-hook", _DEPRECATED),
    ("returned an invalid number of grad_", "wrong-tuple-length", _LENGTH),
    ("has changed the size of value", "wrong-grad-shape", _SHAPE),
    ("has changed the type of value", "wrong-grad-dtype", _DTYPE),
    ("object of type 'generator' has no len()", "returned-generator", _GENERATOR),
    ("Boolean value of Tensor with more than one value is ambiguous", "norm-over-some-dims", _AMBIGUOUS),
    ("Can't call numpy() on Tensor that requires grad", "numpy-in-backward", _NUMPY),
    ("should always return None or None for all gradients", "not-none-without-input-grad", _NO_INPUT_GRAD),
    ("but hook returned", "entry-not-a-tensor", _NOT_A_TENSOR),
    ("NoneType", "none-entry-not-skipped", _NONE_ENTRY),
)
# The named mistakes those hints recognize, in every exercise whose calls run under them.
_HINT_MISTAKES = {
    "deprecated-backward-hook": "registers the deprecated register_backward_hook instead of a full backward hook",
    "wrong-tuple-length": "returns a tuple of another length than the one the hook received (drops entries)",
    "wrong-grad-shape": "returns a tensor of another shape than the gradient it replaces",
    "wrong-grad-dtype": "returns a tensor of another dtype than the gradient it replaces",
    "returned-generator": "returns a generator expression instead of a tuple",
    "norm-over-some-dims": "takes a norm along some dimensions, which gives several values, and compares it",
    "numpy-in-backward": "calls .numpy() on a gradient, which requires grad under create_graph=True",
    "not-none-without-input-grad": "returns a list (or tensors) where no input requires grad and torch accepts "
                                   "only None or a tuple of None",
    "none-entry-not-skipped": "uses an entry of grad_input or grad_output (or a .grad) that is None as a tensor",
    "entry-not-a-tensor": "returns something other than a tensor (a list, a number) for a tensor entry",
}
# add_grad_noise's pre-hook takes no norm, never runs under create_graph, and its modules' inputs require grad.
_NOISE_HINTS = tuple(hint for hint in _BACKWARD_ERROR_HINTS
                     if hint[1] not in ("norm-over-some-dims", "numpy-in-backward", "not-none-without-input-grad"))
# What _judge_returned_tuple recognizes, for the hooks that return a new tuple.
_TUPLE_MISTAKES = {
    "in-place": "changes a tensor of the gradient tuple the hook received in place",
    "none-replaced": "returns a tensor where the received tuple has None",
    "wrong-tuple-length": _HINT_MISTAKES["wrong-tuple-length"],
}
# What single_handle recognizes, for the exercises that return one handle.
_ONE_HANDLE_MISTAKES = {slug: handles.MISTAKES[slug] for slug in ("handle-in-a-list", "no-handle")}


def _hinted_call(doing, hints=_BACKWARD_ERROR_HINTS):
    """`calling(doing)`, with the meaning of torch's backward-hook errors; torch's refusal to mix the
    deprecated backward hook with full ones comes in the learner's call or in the check's own
    registration, which runs inside this block too."""
    return calling_with_hints(doing, hints)


def _noise_call(doing):
    """`calling(doing)`, with the meaning of the errors add_grad_noise's pre-hook can meet."""
    return calling_with_hints(doing, _NOISE_HINTS)


@contextlib.contextmanager
def _quiet():
    """Silence the warning torch gives when a hooked module's inputs need no grad (on purpose here)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_TOO_EARLY)
        yield


class _Seen:
    """A hook for the check: records the tuple it receives (the tensors themselves and
    copies of them) and changes nothing."""

    def __init__(self):
        self.calls = []      # per call: the tuple as received
        self.copies = []     # per call: clones, to find in-place changes later
        self.weight_grad_norms = []  # per call of input_hook: the norm of module.weight.grad then, or None
        self.output_norms = []  # per call of input_hook: the norm of grad_output[0], or None

    def record(self, grads):
        self.calls.append(tuple(grads))
        # what is not a tensor is kept as it is: torch refuses it after the last hook, with its own message
        self.copies.append(tuple(g.detach().clone() if isinstance(g, torch.Tensor) else g for g in grads))

    def pre_hook(self, module, grad_output):
        self.record(grad_output)

    def input_hook(self, module, grad_input, grad_output):
        self.record(grad_input)
        weight = getattr(module, "weight", None)
        self.weight_grad_norms.append(_norm(weight.grad) if isinstance(weight, torch.Tensor) else None)
        self.output_norms.append(_norm(grad_output[0]))

    def changed_in_place(self):
        """The (call, position) of a received tensor whose values changed since it was received."""
        for call, (grads, copies) in enumerate(zip(self.calls, self.copies)):
            for position, (grad, copy_) in enumerate(zip(grads, copies)):
                if grad is not None and not torch.equal(grad.detach(), copy_):
                    return call, position
        return None


def _judge_returned_tuple(said, before, after, tuple_name, hook_name, new_example, in_place_ops):
    """What every hook that returns a new grad_input or grad_output owes: the received tensors
    untouched, the same length, None kept in place. `before` and `after` are the check's hooks
    registered around the learner's. Returns (copies of what was received, what was returned)."""
    where = before.changed_in_place()
    if where is not None:
        fail(f"{said}: {tuple_name}[{where[1]}] was changed in place (the check kept a copy of it). Build new tensors "
             f"({new_example}), not in-place operations such as {in_place_ops}: the tensors in {tuple_name} may be "
             "shared with other parts of the graph, whose gradients would silently change too.", "in-place")
    received, returned = before.copies[0], after.calls[0]
    if len(returned) != len(received):
        fail(f"{said}: the {hook_name} returned {len(returned)} entries for a {tuple_name} of {len(received)}; keep "
             f"the length, with None where {tuple_name} has None.", "wrong-tuple-length")
    for position, (grad, result) in enumerate(zip(received, returned)):
        if grad is None and result is not None:
            fail(f"{said}: {tuple_name}[{position}] is None, and your {hook_name} returned {describe(result)} there; "
                 "keep None in place.", "none-replaced")
    return received, returned


def _no_deprecated_hook(module, call_text):
    """torch refuses to mix the deprecated hook with full backward hooks, but not with full backward
    pre-hooks: so look at the module itself."""
    if getattr(module, "_is_full_backward_hook", None) is False:
        fail(f"{call_text} registered a hook with the deprecated register_backward_hook.\n{_DEPRECATED}",
             "deprecated-backward-hook")


# ---------------------------------------------------------------- record_grad_output_norms

class Block(nn.Module):
    """A residual block: a module type of the check's own, holding a Linear."""

    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.act = nn.Tanh()

    def forward(self, x):
        return self.act(self.linear(x)) + x


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(6, 8)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.head = nn.Sequential(nn.Tanh(), nn.Linear(8, 3))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


class _ScaledLinear(nn.Linear):
    """A subclass of nn.Linear: it is an nn.Linear for isinstance."""

    def forward(self, x):
        return super().forward(x) * 0.5


class _SmallCNN(nn.Module):
    """Its middle convolution, features.0, is frozen: backward goes through it to `conv`, which trains."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.features = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU())
        self.features[0].requires_grad_(False)
        self.flatten = nn.Flatten()
        self.classifier = _ScaledLinear(4 * 4 * 4, 5)

    def forward(self, x):
        return self.classifier(self.flatten(self.features(torch.relu(self.conv(x)))))


class _Shared(nn.Module):
    """Uses `layer` twice in one forward pass, the second time under a second name, `again`
    (named_modules() yields it once, as `layer`)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(5, 5)
        self.again = self.layer
        self.out = nn.Linear(5, 2)

    def forward(self, x):
        return self.out(torch.tanh(self.again(torch.tanh(self.layer(x)))))


class TwoBranches(nn.Module):
    """A module type of the check's own that returns two tensors, so grad_output has two entries."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 6)
        self.second = nn.Linear(4, 3)

    def forward(self, x):
        return self.first(x), torch.tanh(self.second(x))


class _TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.split = TwoBranches()
        self.head = nn.Linear(9, 2)

    def forward(self, x):
        return self.head(torch.cat(self.split(x), dim=1))


def _watch_norms(model, layer_types):
    """The check's own record: {name: _Seen} of grad_output and grad_input per wanted module,
    from hooks that run before the learner's (prepend), whenever the learner registered them."""
    watchers = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            outputs, inputs = _Seen(), _Seen()
            handles.append(module.register_full_backward_pre_hook(outputs.pre_hook, prepend=True))
            handles.append(module.register_full_backward_hook(inputs.input_hook, prepend=True))
            watchers[name] = (outputs, inputs)
    return watchers, handles


def _norm(grad):
    return None if grad is None else grad.norm().item()


def _has_entries(values):
    try:
        return len(values) > 0
    except TypeError:  # a single number
        return True


def _compare_norms(norms, watchers, module_names, call_text, situation, passes, aliases=None, frozen=(),
                   eval_mode=False):
    """Every wanted module has one float per backward through it, equal to the norm of grad_output[0].
    `module_names`: every name that model.named_modules() gives; `aliases`: {other name: the name
    named_modules() gives} for modules reachable under several names; `frozen`: the names of wanted
    modules whose parameters are all frozen; `eval_mode`: the model ran in eval mode."""
    if not isinstance(norms, Mapping):
        fail(f"{call_text} returned {describe(norms)} as norms; expected a dict from module name to a list of "
             "floats.", "norms-not-a-dict")
    recorded = {name: values for name, values in norms.items() if _has_entries(values)}
    said = f"{call_text}, then {situation}"
    _judge_names(_NamesSeen(norms, recorded, watchers, module_names, aliases or {}, frozen, eval_mode), said)
    expected_names = sorted(watchers)
    lists = [(name, recorded[name]) for name in expected_names if isinstance(recorded[name], list)]
    for (name, values), (other, other_values) in zip(lists, lists[1:]):
        if values is other_values:
            fail(f"{said}: norms[{name!r}] and norms[{other!r}] are one and the same list object, so every hook "
                 "appends to it. Give each name a list of its own (dict.fromkeys(names, []) and [[]] * n share one "
                 "list; {name: [] for name in names} does not).", "shared-list")
    for name in expected_names:
        _judge_module_norms(name, recorded[name], watchers[name], said, passes)


class _NamesSeen:
    """The names under which norms holds entries, against the names of the modules the check watched."""

    def __init__(self, norms, recorded, watchers, module_names, aliases, frozen, eval_mode):
        self.norms, self.recorded, self.watchers = norms, recorded, watchers
        self.module_names, self.aliases, self.frozen, self.eval_mode = module_names, aliases, frozen, eval_mode
        self.expected = sorted(watchers)
        self.unexpected = sorted(set(map(str, recorded)) - set(self.expected))
        self.missing = [name for name in self.expected if name not in recorded]
        self.emptied = [name for name in self.missing if name in norms]  # a key with an empty list


def _judge_names(seen, said):
    """norms has entries for exactly the watched modules, or the diagnosis says which mistake left others."""
    if not seen.missing and not seen.unexpected:
        return
    slug, hint = _diagnose_names(seen)
    fail(f"{said}: norms has entries for {sorted(map(str, seen.recorded)) or 'no module'}; expected entries for "
         f"exactly {seen.expected}.{hint}", slug)


def _diagnose_names(seen):
    """(slug, hint) of the mistake that left norms with the wrong names, the first that fits."""
    missing, unexpected, emptied, watchers = seen.missing, seen.unexpected, seen.emptied, seen.watchers
    overfull = [name for name, values in seen.recorded.items() if name in watchers
                and not isinstance(values, (int, float)) and len(values) > len(watchers[name][0].calls)]
    # modules whose grad_input[0] was None at every call (an empty record counts only beside one that fired)
    skipped = [name for name in emptied if all(grads[0] is None for grads in watchers[name][1].calls)]
    went_through = [name for name in skipped if watchers[name][1].calls]
    twins = [name for name in unexpected if name in seen.aliases]
    strangers = [name for name in unexpected if name not in seen.module_names]
    if emptied and overfull:
        return "late-bound-name", (
            f" The lists of {emptied} stayed empty while others got too many entries: a hook defined in a loop looks "
            "the loop variable up when it fires, so every hook used the last name. Bind the name when you define "
            "the hook, e.g. as a default argument.")
    if went_through:
        return "skips-none-grad-input", (
            f" Backward went through {skipped}, but the lists stayed empty: there grad_input[0] is None (the "
            "module's input needs no grad), and your hook recorded nothing. Record the norm of grad_output[0] "
            "whatever grad_input holds.")
    if missing and set(missing) <= set(seen.frozen):
        return "skips-frozen-modules", (
            f" The parameters of {missing} are frozen (requires_grad=False), but backward still goes through them "
            "on its way to the layers before them: hook every module of layer_types, frozen or not.")
    if seen.eval_mode and emptied and set(emptied) == set(missing) and not unexpected:
        return "skips-eval-mode", (
            " The model is in eval mode (model.eval()) here, and backward goes through its modules as in training: "
            "record in both modes (do not test module.training).")
    if twins:
        return "shared-module-under-two-names", (
            f" {twins[0]!r} is the same module as {seen.aliases[twins[0]]!r}, reachable under two names: "
            "model.named_modules() yields each module once, under the first name it finds, so hook it once, under "
            "that name (named_modules(remove_duplicate=False) would hook it twice).")
    if "" in missing:
        return "skips-root-module", (
            " The model itself is an instance of layer_types here, and model.named_modules() yields it first, named "
            "'' (the empty string): hook it too, under the name ''.")
    if any(not isinstance(name, str) for name in seen.recorded):
        return "names-not-strings", (
            " Use the names that model.named_modules() gives (strings such as 'blocks.0.linear') as keys.")
    if strangers:
        example = next((name for name in seen.expected if name), "''")
        return "unknown-module-names", (
            f" No submodule of the model is named {strangers[0]!r}: use as keys the names that model.named_modules() "
            f"gives, such as {example!r}.")
    return _diagnose_missing_modules(seen)


def _diagnose_missing_modules(seen):
    """(slug, hint) for names that are the model's, but not those of layer_types at every depth."""
    missing, unexpected = seen.missing, seen.unexpected
    if missing and seen.recorded and all("." in name for name in missing) and \
            not any("." in str(name) for name in seen.recorded):
        return "first-level-only", (
            " The missing modules are nested inside other modules: model.named_modules() goes through every depth, "
            "model.named_children() and model.children() only through the first.")
    if missing and not unexpected:
        return "misses-layer-types", (
            " Keep every module that is an instance of one of layer_types (isinstance(module, layer_types) also "
            "accepts subclasses); use the layer_types you are given, not a fixed list.")
    return "extra-modules", " Record only modules that are instances of layer_types, the tuple you are given."


def _judge_module_norms(name, recorded, watcher, said, passes):
    """norms[name] is a list of floats, one per backward through the module, each the norm of grad_output[0]."""
    outputs, inputs = watcher
    values = list(recorded) if not isinstance(recorded, (int, float)) else None
    if values is None:
        fail(f"{said}: norms[{name!r}] is {describe(recorded)}; expected a list with one float per "
             "backward through the module (append to the list; do not store a single number).", "number-not-list")
    for value in values:
        if isinstance(value, torch.Tensor):
            fail(f"{said}: norms[{name!r}] holds {describe(value)}; expected Python floats. Turn the norm into "
                 "a number with .item() (a tensor also keeps memory and, with create_graph, the graph alive).",
                 "tensor-not-float")
        if not isinstance(value, float):
            fail(f"{said}: norms[{name!r}] holds {describe(value)}; expected Python floats (tensor.norm().item()).",
                 "not-a-float")
    wanted = [_norm(grads[0]) for grads in outputs.copies]  # the copies: as received, before any change
    if len(values) != len(wanted):
        twice = (" This module is used twice in each forward pass, so each backward goes through it twice."
                 if len(wanted) > passes else "")
        fail(f"{said}: norms[{name!r}] has {len(values)} entries; expected {len(wanted)}, one per backward "
             f"through the module. Append a new entry each time the hook fires; do not replace the list."
             f"{twice}", "wrong-entry-count")
    if _all_close(values, wanted, abs_tol=1e-7):
        return
    shown = ", ".join(f"{v:.5g}" for v in values)
    expected = ", ".join(f"{w:.5g}" for w in wanted)
    slug, hint = _diagnose_norm_values(values, wanted, outputs, inputs)
    fail(f"{said}: norms[{name!r}] is [{shown}]; expected [{expected}], the L2 norm of grad_output[0].{hint}", slug)


def _all_close(values, others, abs_tol=0.0):
    return all(math.isclose(v, w, rel_tol=1e-4, abs_tol=abs_tol) for v, w in zip(values, others))


def _diagnose_norm_values(values, wanted, outputs, inputs):
    """(slug, hint) of the norm that was recorded instead of that of grad_output[0], the first that fits."""
    input_norms = [_norm(grads[0]) for grads in inputs.copies]
    if None not in input_norms and _all_close(values, input_norms):
        return "grad-input-norm", (" Those are the norms of grad_input[0], the gradient of the module's input; "
                                   "record grad_output[0], the gradient of its output.")
    if _all_close(values, [w * w for w in wanted], abs_tol=1e-9):
        return "squared-norm", " Those are the squared norms; take the norm itself (tensor.norm())."
    weight_norms = inputs.weight_grad_norms
    if None not in weight_norms and len(weight_norms) == len(values) and _all_close(values, weight_norms):
        return "weight-grad-norm", (
            " Those are the norms of the module's weight gradient (weight.grad) when the hook fired; record "
            "grad_output[0], the gradient of the module's output. (And weight.grad may not be written yet when a "
            "full backward hook fires: it is None at the first firing of a module called twice.)")
    several = len(outputs.calls[0]) > 1
    together = [math.sqrt(sum(_norm(g) ** 2 for g in grads if g is not None)) for grads in outputs.calls]
    if several and _all_close(values, together):
        return "norm-over-all-outputs", (
            " That is one norm over all entries of grad_output together; this module returns several tensors, and "
            "only grad_output[0], the gradient of its first output, counts.")
    last = [_norm(grads[-1]) for grads in outputs.calls]
    if several and None not in last and _all_close(values, last):
        return "last-grad-output", (" Those are the norms of the last entry of grad_output; this module returns "
                                    "several tensors: record grad_output[0], the first.")
    if _all_close(values, list(reversed(wanted))):
        return "wrong-order", " The values are there in the wrong order: append each one when its backward happens."
    received = [grads[0] for grads in outputs.copies]
    if None not in received:
        for slug, norm_of, hint in _OTHER_NORMS:
            if _all_close(values, [norm_of(grad).item() for grad in received]):
                return slug, hint
    return "wrong-norm-value", ""


# Other measures of a gradient than its L2 norm: (slug, the measure, hint).
_OTHER_NORMS = (
    ("l1-norm", lambda grad: grad.abs().sum(),
     " Those are L1 norms (the sum of the absolute values); take the L2 norm, grad.norm()."),
    ("rms-norm", lambda grad: grad.pow(2).mean().sqrt(),
     " Those are root-mean-square values (the L2 norm divided by the square root of the number of elements); take "
     "the L2 norm itself, grad.norm()."),
    ("max-abs-norm", lambda grad: grad.abs().max(),
     " Those are the largest absolute values (the infinity norm); take the L2 norm over all elements, grad.norm()."),
    ("mean-row-norm", lambda grad: grad.norm(dim=-1).mean(),
     " Those are means of per-row norms (norm(dim=-1)); take one L2 norm over all elements, grad.norm()."),
)


def _run_passes(model, shape, features, needs_grad, passes, seed, create_graph_last, doing):
    """`passes` backward passes through `model`, each on new inputs; the last one with create_graph=True
    (through torch.autograd.grad) when asked. Returns, per pass, the gradients of the input and of
    every parameter (clones)."""
    results = []
    parameters = [p for p in model.parameters() if p.requires_grad]  # frozen ones get no gradient
    for step in range(passes):
        x = random_tensor(seed + step + 1, shape).requires_grad_(needs_grad)
        weight = random_tensor(seed + step + 5, (shape[0], features))
        create_graph = create_graph_last and step == passes - 1
        what = (f"running torch.autograd.grad(loss, ..., create_graph=True) as backward number {step + 1}"
                if create_graph else f"running backward number {step + 1}")
        with _record_call(f"{what} through {doing}"), _quiet():
            loss = (model(x) * weight).sum()
            if create_graph:
                grads = torch.autograd.grad(loss, ([x] if needs_grad else []) + parameters, create_graph=True)
                grads = [g.detach().clone() for g in grads]
            else:
                model.zero_grad(set_to_none=True)
                loss.backward()
                grads = ([x.grad.clone()] if needs_grad else []) + [p.grad.clone() for p in parameters]
        results.append(grads)
    return results


_RECORD_MISTAKES = {
    "norms-not-a-dict": "returns something other than a dict as norms",
    "late-bound-name": "uses the loop variable inside a hook defined in a loop, so every hook records the last name",
    "skips-none-grad-input": "records nothing when grad_input[0] is None (the module's input needs no grad)",
    "skips-frozen-modules": "hooks only modules whose parameters require grad",
    "skips-eval-mode": "records only in training mode (tests module.training)",
    "shared-module-under-two-names": "hooks a module reachable under two names twice, under both names",
    "skips-root-module": "leaves out the model itself (named ''), an instance of layer_types",
    "names-not-strings": "uses something other than the names of named_modules() (the modules, numbers) as keys",
    "unknown-module-names": "uses keys that are no module's name in model.named_modules()",
    "first-level-only": "hooks only the model's direct children (named_children), not nested modules",
    "misses-layer-types": "leaves out modules of layer_types (a fixed list of types, or an exact type test)",
    "extra-modules": "records modules that are not instances of layer_types",
    "shared-list": "gives every name one and the same list (dict.fromkeys(names, []), [[]] * n)",
    "number-not-list": "stores a single number per name instead of a list with one per backward",
    "tensor-not-float": "records tensors instead of Python floats (no .item())",
    "not-a-float": "records something other than Python floats",
    "wrong-entry-count": "records another number of entries than one per backward through the module",
    "grad-input-norm": "records the norm of grad_input[0] instead of grad_output[0]",
    "squared-norm": "records the squared norm",
    "weight-grad-norm": "records the norm of the module's weight.grad instead of grad_output[0]",
    "norm-over-all-outputs": "records one norm over every entry of grad_output together",
    "last-grad-output": "records the norm of the last entry of grad_output instead of the first",
    "wrong-order": "records the norms in the wrong order",
    "l1-norm": "records the L1 norm (the sum of absolute values) instead of the L2 norm",
    "rms-norm": "records the root mean square instead of the L2 norm",
    "max-abs-norm": "records the largest absolute value (the infinity norm) instead of the L2 norm",
    "mean-row-norm": "records the mean of per-row norms instead of one L2 norm over all elements",
    "wrong-norm-value": "records norms whose values no diagnosis explains",
    "not-a-pair": "returns something other than a pair (norms, handles)",
    "pair-swapped": "returns (handles, norms) instead of (norms, handles)",
    "shared-dict": "returns one norms dict kept between calls (made outside the function)",
    "in-place": "changes a gradient it receives in place while taking its norm",
    "changes-gradients": "changes the gradients (its hooks return something)",
    "recording-hook-not-returned": "does not return the handle of a hook that records norms",
    "hook-left-registered": "registers a hook whose handle it does not return",
    "state-shared-between-calls": "shares state between calls (lists on the module, a mark that it is hooked)",
    "handles-of-other-call": "hooks of one call stop (or keep running) when another call's handles are removed",
    "handles-not-a-list": handles.MISTAKES["handles-not-a-list"],
    "not-handles": handles.MISTAKES["not-handles"],
    "tensor-hook-on-output": "registers a tensor hook on the module's output in a forward hook, which fails on a "
                             "module that returns a tuple",
}
# A tensor hook registered on a module's output in a forward hook fails on a module that returns a tuple.
_TENSOR_HOOK_ON_TUPLE = ("A module's output is not always one tensor: this one returns a tuple of two, which has no "
                         "register_hook. A full backward pre-hook (register_full_backward_pre_hook) receives "
                         "grad_output, a tuple with the gradient of each output, whatever the module returns.")
# A recording hook that returns something: torch takes it as a new gradient, and refuses most values.
_RETURNS_SOMETHING = ("Your hook returned a value, which torch takes as the new gradient and checks as one. A recording "
                      "hook changes no gradient: end it without a `return` (it returns None).")
# The hints of the errors a recording hook can meet: any returned value is a gradient changed.
_RECORD_HINTS = tuple(hint for hint in _BACKWARD_ERROR_HINTS if hint[1] in ("deprecated-backward-hook",
                                                                            "numpy-in-backward")) + (
    ("'tuple' object has no attribute 'register_hook'", "tensor-hook-on-output", _TENSOR_HOOK_ON_TUPLE),
    *((text, "changes-gradients", _RETURNS_SOMETHING) for text, slug, _ in _BACKWARD_ERROR_HINTS
      if slug in ("wrong-tuple-length", "wrong-grad-shape", "wrong-grad-dtype", "returned-generator",
                  "not-none-without-input-grad", "entry-not-a-tensor")),
    _BACKWARD_ERROR_HINTS[-1])  # "NoneType", the catch-all, last


def _record_call(doing):
    """`calling(doing)`, with the meaning of the errors a recording hook can meet."""
    return calling_with_hints(doing, _RECORD_HINTS)
_DEFAULT_TYPES = (nn.Linear, nn.Conv2d)
_RECORD_CASES = [  # (model factory, layer_types or None for the default, input shape, output features,
    #                 input needs grad, backward passes, the last one with create_graph=True, in eval mode)
    (_Encoder, None, (7, 6), 3, True, 2, True, False),
    (_SmallCNN, None, (3, 2, 6, 6), 5, False, 1, False, False),
    (_Encoder, (Block, nn.Tanh), (4, 6), 3, True, 1, False, False),
    (_Shared, None, (6, 5), 2, True, 2, True, False),
    (_TwoHeads, (TwoBranches,), (5, 4), 2, True, 1, False, True),
    (lambda: nn.Linear(6, 3), None, (4, 6), 3, True, 1, False, False),
]


@check_of("record_grad_output_norms", mistakes={**{slug: _HINT_MISTAKES[slug] for _, slug, _ in _RECORD_HINTS
                                                     if slug in _HINT_MISTAKES}, **_RECORD_MISTAKES})
def check_record_grad_output_norms(record_grad_output_norms):
    previous_norms = None
    for number, case in enumerate(_RECORD_CASES):
        previous_norms = _check_record_case(record_grad_output_norms, number, case, previous_norms)
    _check_two_calls(record_grad_output_norms)


def _types_text(layer_types):
    """", (Block, nn.Tanh)": the layer_types argument as the call shows it ("" for the default)."""
    if layer_types is None:
        return ""
    names = ", ".join(("nn." if t.__module__.startswith("torch.nn") else "") + t.__name__ for t in layer_types)
    return ", (" + names + (",)" if len(layer_types) == 1 else ")")


def _call_record(record_grad_output_norms, model, layer_types, call_text, previous_norms):
    """The learner's (norms, handles) for `model`, the handles as a list."""
    with _record_call(f"calling {call_text}"):
        result = (record_grad_output_norms(model) if layer_types is None
                  else record_grad_output_norms(model, layer_types))
    if not isinstance(result, tuple) or len(result) != 2:
        fail(f"{call_text} returned {describe(result)}; expected a pair (norms, handles).", "not-a-pair")
    norms, handles = result
    if isinstance(norms, list) and isinstance(handles, Mapping):
        fail(f"{call_text} returned (list, dict); expected them the other way round: (norms, handles).",
             "pair-swapped")
    if norms is previous_norms and norms is not None:
        fail(f"{call_text} returned the same norms dict as its call on the previous model, so it holds that "
             "model's names and entries too. Make a new dict in each call (a dict made once, outside the "
             "function, is shared by every call).", "shared-dict")
    return norms, handle_list(handles, call_text, _HANDLE, _HANDLES, plain_list=True)


def _check_record_case(record_grad_output_norms, number, case, previous_norms):
    """One model: the learner's hooks record the right norms, change nothing, and go with their handles.
    Returns the norms dict, which the next case's call must not return again."""
    factory, layer_types, shape, features, needs_grad, passes, create_graph, eval_mode = case
    seed = 500 + 10 * number
    model = seeded(seed, factory)
    if eval_mode:
        model.eval()
    clean = copy.deepcopy(model)
    call_text = f"record_grad_output_norms(model{_types_text(layer_types)}) on {_model_text(model)}"
    norms, handles = _call_record(record_grad_output_norms, model, layer_types, call_text, previous_norms)
    with _record_call(f"registering the check's own full backward hooks on {_model_text(model)}, after "
                      f"{call_text}"):
        watchers, own_handles = _watch_norms(model, _DEFAULT_TYPES if layer_types is None else layer_types)
    grads = _run_passes(model, shape, features, needs_grad, passes, seed, create_graph, _model_text(model))
    clean_grads = _run_passes(clean, shape, features, needs_grad, passes, seed, create_graph, "a copy")
    situation = f"{passes} backward pass{'es' if passes > 1 else ''}" + \
        (" (the last one with create_graph=True)" if create_graph else "") + \
        (" in eval mode (model.eval())" if eval_mode else "") + \
        ("" if needs_grad else " with an input that needs no grad (so grad_input[0] of the first layer is None)")
    _judge_gradients_unchanged(watchers, grads, clean_grads, f"{call_text}, then {situation}")
    aliases = {}
    for name, module in model.named_modules(remove_duplicate=False):
        first = next(first for first, other in model.named_modules() if other is module)
        if name != first:
            aliases[name] = first
    frozen = [name for name, module in model.named_modules() if name in watchers
              and list(module.parameters()) and not any(p.requires_grad for p in module.parameters())]
    _compare_norms(norms, watchers, [name for name, _ in model.named_modules()], call_text, situation, passes,
                   aliases, frozen, eval_mode)
    for handle in own_handles:
        handle.remove()
    _check_record_removal(model, norms, handles, call_text, shape, needs_grad, seed)
    return norms


def _judge_gradients_unchanged(watchers, grads, clean_grads, said):
    """The hooks only watch: no received gradient changed in place, and backward's results are a hook-free copy's."""
    for name, (outputs, inputs) in watchers.items():
        for seen, tuple_name in ((outputs, "grad_output"), (inputs, "grad_input")):
            where = seen.changed_in_place()
            if where is not None:
                fail(f"{said}: {tuple_name}[{where[1]}] of {name!r} was changed in place after the check's own "
                     "hook received it (it kept a copy). The hooks change no gradient: compute the norm with "
                     "out-of-place operations (tensor.norm()), never pow_, mul_ or the like on a gradient.", "in-place")
    for step, (got, want) in enumerate(zip(grads, clean_grads)):
        if not all(close(g, w, tolerance=1e-4) for g, w in zip(got, want)):
            fail(f"{said}: your hooks changed the gradients of backward number {step + 1} (they differ from "
                 "those of an identical model without hooks). The hooks change no gradient: record the norm "
                 "and return None.", "changes-gradients")


def _check_record_removal(model, norms, handles, call_text, shape, needs_grad, seed):
    """Removing the handles stops the recording and leaves no hook of the learner's behind."""
    before = {name: len(values) for name, values in norms.items()}
    remove_handles(handles, "removing every handle that record_grad_output_norms returned")
    with _record_call(f"running backward through {_model_text(model)} after removing the handles"), _quiet():
        model(random_tensor(seed + 9, shape).requires_grad_(needs_grad)).sum().backward()
    after = {name: len(values) for name, values in norms.items()}
    if after != before:
        grew = sorted(name for name in after if after[name] != before.get(name))
        fail(f"{call_text}: after removing every returned handle, a backward pass still added entries for "
             f"{grew}. Return the handles of all hooks you registered.", "recording-hook-not-returned")
    left = [name or "(the model itself)" for name in modules_with_hooks(model)]
    if left:
        fail(f"{call_text}: after removing every returned handle, hooks are still registered on {left}. Return "
             "the handle of every hook you registered, and register only hooks whose handle you return.",
             "hook-left-registered")


def _check_two_calls(record_grad_output_norms):
    """Two calls on one model: each returns a dict of its own, filled by hooks of its own."""
    model = seeded(590, _Encoder)
    text = _model_text(model)
    call_text = f"record_grad_output_norms(model) called twice on {text}"
    results = []
    for which in ("first", "second"):
        with _record_call(f"calling record_grad_output_norms(model) a {which} time on {text}"):
            result = record_grad_output_norms(model)
        if not isinstance(result, tuple) or len(result) != 2:
            fail(f"record_grad_output_norms(model), called a {which} time on {text}, returned {describe(result)}; "
                 "expected a pair (norms, handles).", "not-a-pair")
        handles = handle_list(result[1], f"record_grad_output_norms(model) ({which} call)", _HANDLE, _HANDLES,
                              plain_list=True)
        results.append((result[0], handles))
    (first, first_handles), (second, second_handles) = results
    if first is second:
        fail(f"{call_text} returned the same norms dict both times; expected a new dict from each call, so that "
             "two calls record independently (a dict made once, outside the function, is shared by every call).",
             "shared-dict")
    watchers, own_handles = _watch_norms(model, (nn.Linear, nn.Conv2d))
    _run_passes(model, (5, 6), 3, True, 1, 590, False, text)
    wanted = {name: len(outputs.calls) for name, (outputs, _) in watchers.items()}
    counts = []
    for norms in (first, second):
        if not isinstance(norms, Mapping):
            fail(f"{call_text} returned {describe(norms)} as norms; expected a dict from module name to a list of "
                 "floats.", "norms-not-a-dict")
        counts.append({name: len(values) if isinstance(values, list) else values for name, values in norms.items()
                       if not isinstance(values, list) or values})  # empty lists count as no entry, as above
    if counts[0] != wanted or counts[1] != wanted:
        fail(f"{call_text}, then 1 backward pass: the first call's norms hold {counts[0] or 'no entries'} and the "
             f"second call's {counts[1] or 'no entries'} (entries per name); expected {wanted} in each. Each call "
             "must register hooks of its own that append to the lists of its own dict; nothing may be shared "
             "between calls or left on the modules (a list kept as an attribute of the module, or a mark that the "
             "module is hooked already, is).", "state-shared-between-calls")
    for norms, which in ((first, "first"), (second, "second")):
        _compare_norms(norms, watchers, [name for name, _ in model.named_modules()],
                       f"{call_text} (the {which} call's norms)", "1 backward pass", 1)
    for handle in own_handles:
        handle.remove()
    remove_handles(first_handles, "removing the handles that the first call returned")
    with _record_call(f"running backward through {text} after removing the first call's handles"), _quiet():
        model(random_tensor(599, (5, 6)).requires_grad_()).sum().backward()
    grew = [name for name, values in first.items() if len(values) != wanted.get(name, 0)]
    still = [name for name, values in second.items() if len(values) != 2 * wanted.get(name, 0)]
    if grew or still:
        fail(f"{call_text}: after removing the first call's handles, a backward pass changed the first call's lists "
             f"of {grew} and did not add one entry to the second call's lists of {still}. Removing one call's "
             "handles must stop that call's hooks only.", "handles-of-other-call")


def _model_text(model):
    return {_Encoder: "a model with nested blocks (stem, blocks.0, blocks.1, head)",
            _SmallCNN: "a small CNN (conv, features.0 with frozen parameters, classifier, a subclass of nn.Linear)",
            _Shared: "a model that uses its submodule `layer` twice in one forward pass, the second time under a "
                     "second name, `again`",
            _TwoHeads: "a model whose submodule `split` returns two tensors (grad_output has two entries)",
            nn.Linear: "a bare nn.Linear(6, 3), which is the model itself"}[type(model)]


# ---------------------------------------------------------------- clip_grad_input

class _Mix(nn.Module):
    """forward(a, b, scale): two tensor inputs and a number, so grad_input has a None."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, a, b, scale):
        return self.linear(a) * b * scale


def _clip_reference(grad, max_norm):
    if grad is None:
        return None
    norm = grad.norm()
    return grad * (max_norm / norm) if norm > max_norm else grad


def _registered_between_ours(module, call, text, kind, register, hints=_BACKWARD_ERROR_HINTS):
    """Run `register()`, the learner's call that registers a full backward hook (`kind` "hook") or
    pre-hook on `module`, and put a hook of the check's own before it (prepend, so also before one
    registered with prepend=True) and one after it. Returns (the learner's handle, ours before, ours after)."""
    before, after = _Seen(), _Seen()
    with _hinted_call(f"calling {call} on {text}", hints):
        handle = register()
    single_handle(handle, call, "the handle of the hook it registered")
    _no_deprecated_hook(module, call)
    pre = kind == "pre-hook"
    register_ours = module.register_full_backward_pre_hook if pre else module.register_full_backward_hook
    with _hinted_call(f"registering the check's own full backward {kind} before yours on {text}", hints):
        register_ours(before.pre_hook if pre else before.input_hook, prepend=True)
    with _hinted_call(f"registering a full backward {kind} after yours on {text}", hints):
        register_ours(after.pre_hook if pre else after.input_hook)
    return handle, before, after


def _run_clip_case(clip_grad_input, case):
    """Register the learner's hook between two of ours, run one backward, and return what was seen."""
    module = seeded(case["seed"], case["factory"])
    clean = copy.deepcopy(module)
    inputs = case["inputs"]()
    call = f"clip_grad_input(module, {case['max_norm']})"
    handle, before, after = _registered_between_ours(module, call, case["text"], "hook",
                                                     lambda: clip_grad_input(module, case["max_norm"]))
    weight = random_tensor(case["seed"] + 7, case["out_shape"])
    with _hinted_call(f"running backward through {case['text']} with {call} registered "
                      f"(grad_input = {case['grad_input_text']})"), _quiet():
        (module(*inputs) * weight).sum().backward()
    clean_inputs = [t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t
                    for t in inputs]
    with _quiet():
        (clean(*clean_inputs) * weight).sum().backward()
    return dict(module=module, clean=clean, inputs=inputs, clean_inputs=clean_inputs, before=before, after=after,
                call=call, handle=handle)


def _judge_clip_case(case, seen):
    max_norm = case["max_norm"]
    # The case must exercise what it is meant to (a checker bug otherwise, not the learner's).
    tensors = [t for t in seen["clean_inputs"] if isinstance(t, torch.Tensor)]
    any_grad = any(t.requires_grad for t in tensors)  # if none, grad_input is all None
    kinds = tuple(None if not isinstance(t, torch.Tensor) or not any_grad else "clip" if t.grad is not None and
                  t.grad.norm() > max_norm else "keep" for t in seen["clean_inputs"])
    assert kinds == case["kinds"], f"clip case {case['text']}: grad_input is {kinds}, not {case['kinds']}"
    said = f"Ran backward through {case['text']} with {seen['call']} registered"
    received, returned = _judge_returned_tuple(said, seen["before"], seen["after"], "grad_input", "hook",
                                               "grad * factor", "mul_ or *=")
    for position, (grad, result) in enumerate(zip(received, returned)):
        if grad is None:
            continue
        expected = _clip_reference(grad, max_norm)
        if not isinstance(result, torch.Tensor):
            fail(f"{said}: grad_input[{position}] was {describe(grad)}, and your hook returned {describe(result)} "
                 f"there; expected {describe(expected)}.", "entry-not-a-tensor")
        if close(result, expected):
            continue
        norm = grad.norm().item()
        message = (f"{said}: grad_input[{position}] was {describe(grad)} (norm {norm:.4g}, max_norm {max_norm}); "
                   f"your hook returned {describe(result)}; expected {describe(expected)}.")
        clipped = _Clipped(grad, result, expected, max_norm, position, seen, received)
        slug, hint = next(found for diagnose in _CLIP_DIAGNOSES if (found := diagnose(clipped)))
        fail(f"{message}{hint}", slug)
    _judge_clip_reached(seen, said, returned)


def _judge_clip_reached(seen, said, returned):
    """The parameters' gradients are a hook-free copy's; each input received what the hook returned for it."""
    module, clean, inputs = seen["module"], seen["clean"], seen["inputs"]
    for (name, parameter), (_, clean_parameter) in zip(module.named_parameters(), clean.named_parameters()):
        if not close(parameter.grad, clean_parameter.grad, tolerance=1e-4):
            fail(f"{said}: the gradient of the module's parameter {name!r} changed ({describe(parameter.grad)} instead "
                 f"of {describe(clean_parameter.grad)}). Clipping grad_input in a full backward hook leaves the "
                 "module's own parameter gradients alone; clipping grad_output in a backward pre-hook would not.",
                 "changes-parameter-grads")
    for position, (tensor, result) in enumerate(zip(inputs, returned)):
        if isinstance(tensor, torch.Tensor) and tensor.requires_grad and not close(tensor.grad, result, 1e-4):
            fail(f"{said}: input {position} received the gradient {describe(tensor.grad)}; expected what your "
                 f"hook returned for it, {describe(result)}.", "input-grad-differs")


class _Clipped:
    """One entry of grad_input that the learner's hook clipped wrongly: what it was, returned, should have returned."""

    def __init__(self, grad, result, expected, max_norm, position, seen, received):
        self.grad, self.result, self.expected, self.max_norm = grad, result, expected, max_norm
        self.position, self.seen, self.received = position, seen, received
        self.norm = grad.norm().item()

    def rescaled_by(self, norm):
        """Whether the result is the gradient rescaled to max_norm as if its norm were `norm`."""
        return close(self.result, self.grad * (self.max_norm / norm))


# Each diagnosis of a wrongly clipped entry gives (slug, hint) or None; the first that fits names the mistake.

def _clip_gave_nan(c):
    if not torch.isfinite(c.result).all() and torch.isfinite(c.expected).all():
        return "nan-on-zero-grad", (" Dividing by the norm of a zero gradient gives nan: leave a gradient whose norm "
                                    "is not above max_norm unchanged.")


def _clip_left_unchanged(c):
    if not close(c.result, c.grad):
        return None
    tensor = c.seen["inputs"][c.position]
    if isinstance(tensor, torch.Tensor) and tensor.requires_grad and close(tensor.grad, c.expected):
        return "clipped-after-backward-hooks", (
            " The input did receive the clipped gradient, but only after the module's full backward hooks ran (a "
            "tensor hook on the input, registered by a forward pre-hook, for example), so a full backward hook "
            "registered after yours sees grad_input unclipped. Register a full backward hook "
            "(register_full_backward_hook) whose return value is the new grad_input tuple.")
    if c.position > 0:  # earlier cases showed the hook's tuple does reach the inputs
        return "clips-first-entry-only", (
            f" Your hook left grad_input[{c.position}] as it was, although its norm is above max_norm: clip every "
            "tensor of grad_input, not only the first.")
    return "returns-grad-input-unchanged", (
        " That is grad_input unchanged: the hook must return the new tuple (a backward hook that returns None keeps "
        "the gradients as they are; torch.nn.utils.clip_grad_norm_ rescales the .grad of the tensors it is given, "
        "not the tensors themselves).")


def _clip_rescaled_small(c):
    if not (0 < c.norm <= c.max_norm and c.rescaled_by(c.norm)):
        return None
    if c.norm * c.norm > c.max_norm:
        return "compares-squared-norm", (
            f" You rescaled a gradient whose norm was already at most max_norm; keep it unchanged. Its squared norm, "
            f"{c.norm * c.norm:.4g}, is above max_norm: compare the norm itself, not its square.")
    return "rescales-small-grads", (" You rescaled a gradient whose norm was already at most max_norm; keep it "
                                    "unchanged.")


def _clip_clamped(c):
    if close(c.result, c.grad.clamp(-c.max_norm, c.max_norm)):
        return "clamps-elements", " You clipped each element; clip the L2 norm of the whole tensor instead."


def _clip_spectral(c):
    spectral = torch.linalg.matrix_norm(c.grad, ord=2).item() if c.grad.dim() == 2 else 0.0
    if spectral > c.max_norm and c.rescaled_by(spectral):
        return "spectral-norm", (
            f" You rescaled by the spectral norm ({spectral:.4g}, the largest singular value, which "
            "torch.linalg.norm(grad, ord=2) gives for a matrix); judge and rescale by the L2 norm over all elements: "
            "grad.norm() or torch.linalg.vector_norm(grad).")


def _clip_largest_element(c):
    largest = c.grad.abs().max().item()
    if largest > c.max_norm and c.rescaled_by(largest):
        return "max-element-norm", (f" You rescaled by the largest element (the infinity norm, {largest:.4g}); judge "
                                    "and rescale by the L2 norm over all elements, grad.norm().")


def _clip_by_grad_output(c):
    output_norm = c.seen["before"].output_norms[0]
    if output_norm and close(c.result, c.grad * min(1.0, c.max_norm / output_norm)):
        return "grad-output-norm", (
            f" You judged and rescaled it by the norm of grad_output[0] ({output_norm:.4g}), the gradient of the "
            "module's output; judge each tensor of grad_input by its own norm.")


def _clip_per_row(c):
    if c.grad.dim() < 2:
        return None
    rows = c.grad.flatten(1).norm(dim=1).view(-1, *[1] * (c.grad.dim() - 1))
    if close(c.result, c.grad * (c.max_norm / rows).clamp(max=1.0)):
        return "per-row-norm", (" You clipped each row (each sample of the batch) by its own norm; clip the L2 norm "
                                "of the whole tensor instead, over all its elements.")


def _clip_one_norm_for_all(c):
    tensors = [g for g in c.received if g is not None]
    total = torch.sqrt(sum(g.pow(2).sum() for g in tensors))
    if len(tensors) > 1 and close(c.result, c.grad * min(1.0, (c.max_norm / total).item())):
        return "one-norm-for-all", (" You used one norm for all entries together (as clip_grad_norm_ does); clip each "
                                    "entry by its own norm.")


def _clip_to_unit_norm(c):
    if c.norm > c.max_norm and close(c.result, c.grad / c.norm):
        return "clips-to-unit-norm", (" You rescaled it to norm 1; rescale it to norm max_norm: "
                                      "grad * (max_norm / grad.norm()).")


_CLIP_DIAGNOSES = (_clip_gave_nan, _clip_left_unchanged, _clip_rescaled_small, _clip_clamped, _clip_spectral,
                   _clip_largest_element, _clip_by_grad_output, _clip_per_row, _clip_one_norm_for_all,
                   _clip_to_unit_norm, lambda c: ("wrong-clipped-value", ""))


def _check_clip_keeps_the_graph(clip_grad_input, case):
    """In a backward with create_graph=True, the clipped gradient is still part of the graph."""
    module = seeded(case["seed"], case["factory"])
    clean = copy.deepcopy(module)
    call = f"clip_grad_input(module, {case['max_norm']})"
    with _hinted_call(f"calling {call} on {case['text']}"):
        clip_grad_input(module, case["max_norm"])
    x = case["inputs"]()[0]
    weight = random_tensor(case["seed"] + 7, case["out_shape"])
    doing = (f"running torch.autograd.grad(loss, x, create_graph=True) through {case['text']} with {call} "
             "registered")
    with _hinted_call(doing), _quiet():
        grad_x, = torch.autograd.grad((module(x) * weight).sum(), x, create_graph=True)
    with _quiet():
        clean_grad, = torch.autograd.grad((clean(x) * weight).sum(), x, create_graph=True)
    said = f"Ran torch.autograd.grad(loss, x, create_graph=True) through {case['text']} with {call} registered"
    expected = _clip_reference(clean_grad.detach(), case["max_norm"])
    if not close(grad_x.detach(), expected):
        fail(f"{said}: the input's gradient is {describe(grad_x)}; expected {describe(expected)}, clipped as in an "
             "ordinary backward.", "wrong-value-with-create-graph")
    if not grad_x.requires_grad:
        fail(f"{said}: the input's gradient does not require grad, so it is not part of the graph that "
             "create_graph=True builds, and a second backward through it (a gradient penalty) cannot reach the "
             "parameters. Compute the clipped tensors with ordinary operations on grad_input: no detach(), no "
             "torch.no_grad() in the hook (autograd already turns grad mode off in an ordinary backward).",
             "detaches-grad")


def _check_clip_every_backward(seen, case):
    """After the first backward of `seen` (from _run_clip_case), a second one in training mode and a
    third in eval mode: the hook clips each time."""
    module, weight = seen["module"], random_tensor(case["seed"] + 7, case["out_shape"])
    for number, mode in ((2, "training"), (3, "eval")):
        module.train(mode == "training")
        for watcher in (seen["before"], seen["after"]):
            watcher.calls.clear()
            watcher.copies.clear()
        with _hinted_call(f"running backward number {number}, in {mode} mode, through {case['text']} with "
                          f"{seen['call']} registered"), _quiet():
            (module(*case["inputs"]()) * weight).sum().backward()
        received, returned = seen["before"].copies[0], seen["after"].calls[0]
        for position, (grad, result) in enumerate(zip(received, returned)):
            expected = _clip_reference(grad, case["max_norm"])
            if grad is not None and not (isinstance(result, torch.Tensor) and close(result, expected)):
                mode_text = ("the model is in eval mode (module.eval()) here, and backward goes through the "
                             "module as in training: clip in both modes (do not test module.training)"
                             if mode == "eval" else "the hook must clip at every backward, not only the first")
                fail(f"Ran backward number {number}, in {mode} mode, through {case['text']} with {seen['call']} "
                     f"registered: grad_input[{position}] was {describe(grad)} (norm {grad.norm().item():.4g}), "
                     f"and your hook returned {describe(result)}; expected {describe(expected)}. The first backward "
                     f"was clipped; {mode_text}.", "skips-eval-mode" if mode == "eval" else "clips-first-backward-only")
    module.train()


def _check_clip_own_max_norm(clip_grad_input):
    """Two modules clipped at once, each with its own max_norm: each hook keeps its own."""
    first = seeded(661, lambda: nn.Linear(5, 3))
    second = copy.deepcopy(first)
    with _hinted_call("calling clip_grad_input(first, 1.0), then clip_grad_input(second, 2.0)"):
        clip_grad_input(first, 1.0)
        clip_grad_input(second, 2.0)
    weight = random_tensor(668, (8, 3))
    for module, max_norm, name in ((first, 1.0, "first"), (second, 2.0, "second")):
        x = (random_tensor(662, (8, 5)) * 10.0).requires_grad_()
        with _hinted_call(f"running backward through the {name} module, after clip_grad_input(first, 1.0) and "
                          "clip_grad_input(second, 2.0)"), _quiet():
            (module(x) * weight).sum().backward()
        norm = x.grad.norm().item()
        if not math.isclose(norm, max_norm, rel_tol=1e-3):
            other = 3.0 - max_norm
            shared = math.isclose(norm, other, rel_tol=1e-3)
            hint = (f" That is the max_norm of the other call ({other}): each hook must keep the max_norm given to "
                    "its own call (bind it in a closure, not in a variable shared by every call)." if shared else "")
            fail(f"clip_grad_input(first, 1.0), then clip_grad_input(second, 2.0), on two copies of nn.Linear(5, 3): "
                 f"backward through the {name} one sent its input a gradient of norm {norm:.4g}; expected "
                 f"{max_norm} (the gradient's norm is above both).{hint}",
                 "shared-max-norm" if shared else "wrong-clipped-value")


_CLIP_MISTAKES = {
    "nan-on-zero-grad": "divides by the norm of a zero gradient, which gives nan",
    "clipped-after-backward-hooks": "clips with a tensor hook on the input, after the module's full backward hooks",
    "clips-first-entry-only": "clips only grad_input[0], not every tensor of grad_input",
    "returns-grad-input-unchanged": "returns grad_input unchanged (or None, or clips .grad with clip_grad_norm_)",
    "compares-squared-norm": "compares the squared norm with max_norm, and so rescales gradients already below it",
    "rescales-small-grads": "rescales every gradient to max_norm, also those whose norm is already below it",
    "clamps-elements": "clamps each element to [-max_norm, max_norm] instead of clipping the L2 norm",
    "spectral-norm": "judges and rescales by the spectral norm (ord=2 of a matrix) instead of the L2 norm",
    "max-element-norm": "judges and rescales by the largest element (the infinity norm)",
    "grad-output-norm": "judges and rescales by the norm of grad_output[0] instead of each entry's own",
    "per-row-norm": "clips each row (each sample) by its own norm",
    "one-norm-for-all": "clips by one norm over all entries together, as clip_grad_norm_ does",
    "clips-to-unit-norm": "rescales a gradient above max_norm to norm 1 instead of max_norm",
    "wrong-clipped-value": "returns a clipped tensor whose values no diagnosis explains",
    "changes-parameter-grads": "changes the gradients of the module's parameters (clips grad_output)",
    "input-grad-differs": "the inputs receive another gradient than the one the hook returned",
    "wrong-value-with-create-graph": "clips wrongly in a backward with create_graph=True",
    "detaches-grad": "detaches the clipped gradient (or computes it under no_grad), which leaves the graph",
    "clips-first-backward-only": "clips at the first backward only",
    "skips-eval-mode": "clips only in training mode (tests module.training)",
    "shared-max-norm": "keeps max_norm in a variable shared by every call, so the last call's applies to all",
    "handle-not-of-hook": "returns a handle other than that of the hook that clips",
}


@check_of("clip_grad_input", mistakes={**_HINT_MISTAKES, **_TUPLE_MISTAKES, **_ONE_HANDLE_MISTAKES, **_CLIP_MISTAKES})
def check_clip_grad_input(clip_grad_input):
    def leaf(seed, shape, scale=1.0, needs_grad=True):
        return (random_tensor(seed, shape) * scale).requires_grad_(needs_grad)

    cases = [  # kinds: what the reference does to each entry of grad_input
        dict(factory=lambda: nn.Linear(5, 3), seed=601, max_norm=1.0, out_shape=(8, 3), kinds=("clip",),
             inputs=lambda: (leaf(602, (8, 5), 10.0),), text="nn.Linear(5, 3) with an input of shape (8, 5)",
             grad_input_text="(one tensor, norm above max_norm)"),
        dict(factory=lambda: nn.Linear(5, 3), seed=611, max_norm=50.0, out_shape=(4, 3), kinds=("keep",),
             inputs=lambda: (leaf(612, (4, 5)),), text="nn.Linear(5, 3) with an input of shape (4, 5)",
             grad_input_text="(one tensor, norm below max_norm)"),
        dict(factory=_Mix, seed=621, max_norm=5.0, out_shape=(6, 4), kinds=("clip", "keep", None),
             inputs=lambda: (leaf(622, (6, 4), 0.1), leaf(623, (6, 4), 3.0), 2.0),
             text="a module forward(a, b, scale) called with tensors a, b and the number 2.0",
             grad_input_text="(tensor, tensor, None)"),
        dict(factory=_Mix, seed=631, max_norm=0.5, out_shape=(3, 4), kinds=("clip", "keep", None),
             inputs=lambda: (leaf(632, (3, 4)), leaf(633, (3, 4), needs_grad=False), 1.5),
             text="a module forward(a, b, scale) where b needs no grad",
             grad_input_text="(tensor, zeros, None)"),
        dict(factory=_Mix, seed=651, max_norm=5.0, out_shape=(5, 4), kinds=("keep", "clip", None),
             inputs=lambda: (leaf(652, (5, 4), 2.0), leaf(653, (5, 4), 0.9), 2.0),
             text="a module forward(a, b, scale) whose second input gets the large gradient",
             grad_input_text="(tensor, tensor, None)"),
        dict(factory=lambda: nn.Linear(5, 3), seed=641, max_norm=1.0, out_shape=(4, 3), kinds=(None,),
             inputs=lambda: (leaf(642, (4, 5), needs_grad=False),),
             text="nn.Linear(5, 3) whose input needs no grad", grad_input_text="(None,)"),
        dict(factory=lambda: nn.Conv2d(2, 3, 3), seed=671, max_norm=2.0, out_shape=(4, 3, 3, 3), kinds=("clip",),
             inputs=lambda: (leaf(672, (4, 2, 5, 5)),), text="nn.Conv2d(2, 3, 3) with an input of shape (4, 2, 5, 5)",
             grad_input_text="(one 4-dimensional tensor, norm above max_norm)"),
    ]
    for case in cases:
        seen = _run_clip_case(clip_grad_input, case)
        _judge_clip_case(case, seen)
        if case is cases[2]:  # (tensor, tensor, None): clipped at every backward, in training and eval mode
            _check_clip_every_backward(seen, case)

    _check_clip_keeps_the_graph(clip_grad_input, cases[0])
    _check_clip_own_max_norm(clip_grad_input)

    # Removing the handle stops the clipping.
    case = cases[0]
    seen = _run_clip_case(clip_grad_input, case)
    with calling("removing the handle that clip_grad_input returned"):
        seen["handle"].remove()
    x = case["inputs"]()[0]
    with _hinted_call("running backward after removing the handle"):
        (seen["module"](x) * random_tensor(case["seed"] + 7, case["out_shape"])).sum().backward()
    if x.grad.norm() <= case["max_norm"] * 1.001:
        fail(f"after handle.remove(), the gradient of the input is still clipped (norm {x.grad.norm():.4g}); "
             "return the handle of the hook you registered.", "handle-not-of-hook")


# ---------------------------------------------------------------- add_grad_noise

class _TwoOutputs(nn.Module):
    """Returns (y, tanh(y), a number): grad_output is (tensor, tensor, None)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 48)

    def forward(self, x):
        y = self.linear(x)
        return y, torch.tanh(y), 3


_NOISE_CASES = [  # (factory, input shape, std, with a generator, description)
    (lambda: nn.Linear(6, 40), (50, 6), 0.3, True, "nn.Linear(6, 40) with an input of shape (50, 6)"),
    (_TwoOutputs, (32, 8), 2.0, True, "a module returning (y, tanh(y), 3), so grad_output is (tensor, tensor, None)"),
    (lambda: nn.Linear(6, 40), (50, 6), 0.05, False, "nn.Linear(6, 40), with generator=None"),
    (lambda: nn.Linear(6, 40).double(), (50, 6), 0.3, True, "nn.Linear(6, 40) in float64 (module.double())"),
]


def _outputs_and_loss(module, x, seed):
    """Run the module; the loss weighs each tensor output by fixed random weights."""
    outputs = module(x)
    tensors = [outputs] if isinstance(outputs, torch.Tensor) else [o for o in outputs if isinstance(o, torch.Tensor)]
    weights = [random_tensor(seed + i, t.shape) for i, t in enumerate(tensors)]
    return tensors, weights, sum((t * w).sum() for t, w in zip(tensors, weights))


def _noisy_backward(add_grad_noise, factory, shape, std, generator, seed, text):
    """A fresh module with the learner's pre-hook between two of ours, after one backward."""
    module = seeded(seed, factory)
    clean = copy.deepcopy(module)
    call = f"add_grad_noise(module, {std}{', generator' if generator is not None else ''})"
    handle, before, after = _registered_between_ours(
        module, call, text, "pre-hook",
        lambda: add_grad_noise(module, std, generator) if generator is not None else add_grad_noise(module, std),
        _NOISE_HINTS)
    dtype = next(module.parameters()).dtype
    x = random_tensor(seed + 1, shape).to(dtype).requires_grad_()
    with _noise_call(f"running backward through {text} with {call} registered"):
        _, _, loss = _outputs_and_loss(module, x, seed + 2)
        loss.backward()
    return dict(module=module, clean=clean, before=before, after=after, x=x, call=call, handle=handle)


def _grads(run):
    return torch.cat([run["x"].grad.flatten()] + [p.grad.flatten() for p in run["module"].parameters()])


def _judge_noise(run, std, text):
    before, after, call = run["before"], run["after"], run["call"]
    said = f"Ran backward through {text} with {call} registered"
    received, returned = _judge_returned_tuple(said, before, after, "grad_output", "pre-hook", "grad + noise",
                                               "add_ or +=")
    noises = {}
    for position, (grad, result) in enumerate(zip(received, returned)):
        if grad is None:
            continue
        if not isinstance(result, torch.Tensor) or result.shape != grad.shape:
            fail(f"{said}: grad_output[{position}] was {describe(grad)}, and your pre-hook returned {describe(result)} "
                 "there; expected a tensor of the same shape with noise added.", "entry-not-a-tensor")
        noises[position] = (result - grad).detach()
    quiet = [position for position, noise in noises.items() if not noise.any()]
    if len(quiet) == len(noises):
        slug, hint = _diagnose_no_noise(run, received)
        fail(f"{said}: grad_output reached the module's backward unchanged; expected noise added to it.{hint}", slug)
    if quiet:
        fail(f"{said}: noise was added to grad_output[{min(noises)}] but not to grad_output[{quiet[0]}]; add new noise "
             "to every tensor of grad_output, not only the first.", "noise-on-first-entry-only")
    for position, noise in noises.items():
        what = f"the noise that {call} on {text} added to grad_output[{position}] of shape {tuple(noise.shape)}"
        check_noise_sample(noise, std, what, input=received[position], input_name="grad")
    _check_entries_drawn_apart(noises, said)
    # The noisy grad_output reached the parameters and the input, through the module's backward.
    expected_x, expected_parameters = _clean_grads(run, returned)
    for (name, parameter), expected in zip(run["module"].named_parameters(), expected_parameters):
        if not close(parameter.grad, expected, tolerance=1e-4):
            fail(f"{said}: the gradient of the module's parameter {name!r} is {describe(parameter.grad)}; expected "
                 f"{describe(expected)}, computed from the noisy grad_output your pre-hook returned.",
                 "wrong-parameter-grad")
    if not close(run["x"].grad, expected_x, tolerance=1e-4):
        fail(f"{said}: the input's gradient is {describe(run['x'].grad)}; expected {describe(expected_x)}, computed "
             "from the noisy grad_output your pre-hook returned.", "wrong-input-grad")


def _diagnose_no_noise(run, received):
    """(slug, hint) of where the noise went, when grad_output reached the module's backward without it."""
    clean_x, clean_parameters = _clean_grads(run, received)
    x_changed = not close(run["x"].grad, clean_x, tolerance=1e-6)
    parameters_changed = not all(close(p.grad, c, tolerance=1e-6)
                                 for p, c in zip(run["module"].parameters(), clean_parameters))
    if x_changed and parameters_changed:
        return "noise-after-pre-hooks", (
            " The gradients of the module's parameters and input did change: the noise was added after the module's "
            "backward pre-hooks ran (by a tensor hook on the module's output, for example), so a backward pre-hook "
            "registered after yours sees grad_output without it. Add it in a full backward pre-hook "
            "(register_full_backward_pre_hook) whose return value is the new grad_output tuple.")
    if x_changed:
        return "noise-on-grad-input", (
            " The input's gradient did change: you added the noise to grad_input in a full backward hook, after the "
            "module's backward, so it never reaches the module's parameters. Add it to grad_output in a full "
            "backward pre-hook.")
    if len(run["module"]._backward_pre_hooks) > 2:  # the check's two and the learner's
        return "returns-grad-output-unchanged", (
            " Your full backward pre-hook ran, but returned grad_output unchanged (or None): return the new tuple, "
            "with noise added, at every call.")
    return "no-pre-hook", (" Register a full backward pre-hook (register_full_backward_pre_hook) whose return value "
                           "is the new grad_output tuple.")


def _check_entries_drawn_apart(noises, said):
    """The noise of each entry of grad_output is a draw of its own, not one draw added to all."""
    positions = sorted(noises)
    for first, second in zip(positions, positions[1:]):
        a, b = noises[first].flatten().double(), noises[second].flatten().double()
        if a.numel() != b.numel():
            continue
        correlation = torch.corrcoef(torch.stack([a, b]))[0, 1].item()
        if abs(correlation) > Z / math.sqrt(a.numel()):
            fail(f"{said}: the noise added to grad_output[{first}] and the noise added to grad_output[{second}] have "
                 f"correlation {correlation:.3f}, expected about 0: the same noise went into both. Draw new noise for "
                 "each entry of grad_output.", "same-noise-for-entries")


def _clean_grads(run, grad_outputs):
    """The input's and the parameters' gradients of a hook-free copy, given these gradients of its outputs."""
    clean = copy.deepcopy(run["clean"])
    x = run["x"].detach().clone().requires_grad_()
    outputs = clean(x)
    outputs = (outputs,) if isinstance(outputs, torch.Tensor) else outputs
    # sum(o * g) has gradient g with respect to o (and needs no torch.autograd.backward with
    # grad_tensors, whose first call imports sympy: a second of grading time).
    sum((o * g.detach()).sum() for o, g in zip(outputs, grad_outputs)
        if isinstance(o, torch.Tensor) and g is not None).backward()
    return x.grad, [p.grad for p in clean.parameters()]


_NOISE_MISTAKES = {
    "noise-after-pre-hooks": "adds the noise after the module's backward pre-hooks (a tensor hook on the output)",
    "noise-on-grad-input": "adds the noise to grad_input in a full backward hook, so it never reaches the parameters",
    "returns-grad-output-unchanged": "registers a pre-hook that returns grad_output unchanged (or None)",
    "no-pre-hook": "registers no full backward pre-hook that adds noise",
    "noise-on-first-entry-only": "adds noise to grad_output[0] only, not to every tensor entry",
    "wrong-parameter-grad": "the parameters' gradients are not those of the noisy grad_output the pre-hook returned",
    "wrong-input-grad": "the input's gradient is not that of the noisy grad_output the pre-hook returned",
    "same-noise-for-entries": "adds one draw of noise to every entry of grad_output",
    "noise-skipped-sometimes": "adds noise only with some probability, not at every call",
    "noise-first-backward-only": "adds noise at the first backward only",
    "handle-not-of-hook": "returns a handle other than that of the pre-hook that adds noise",
    "noise-not-from-global-state": "without a generator, draws from a generator of its own, not torch's global state",
    "shared-std": "keeps std in a variable shared by every call, so the last call's applies to all",
    "shared-generator": "keeps the generator in a variable shared by every call, so the last call's applies to all",
}
_EVERY_CALL_PASSES = 40  # a hook that skips the noise at random one call in ten passes them all with chance 1.5%


@check_of("add_grad_noise", mistakes={**{slug: _HINT_MISTAKES[slug] for _, slug, _ in _NOISE_HINTS}, **_TUPLE_MISTAKES,
                                      **_ONE_HANDLE_MISTAKES, **noise.MISTAKES, **_NOISE_MISTAKES})
def check_add_grad_noise(add_grad_noise):
    unused_generator = None
    for number, case in enumerate(_NOISE_CASES):
        unused_generator = _check_noise_case(add_grad_noise, number, case) or unused_generator
    _check_noise_reproducible(add_grad_noise)
    if unused_generator:
        check_generator_advanced(*unused_generator, "add_grad_noise")
    _check_noise_own_arguments(add_grad_noise)


def _check_noise_case(add_grad_noise, number, case):
    """One module: the noise of the first backward, of the next ones, and none after handle.remove(). Returns
    (generator, its state before, what ran) when the generator given did not advance, for a later failure."""
    factory, shape, std, with_generator, text = case
    seed = 700 + 10 * number
    # Noise seeded apart from the module and inputs (a generator seeded like random_tensor's draws its values).
    generator = torch.Generator().manual_seed(seed + 5000) if with_generator else None
    generator_state = None if generator is None else generator.get_state()
    run = _noisy_backward(add_grad_noise, factory, shape, std, generator, seed, text)
    _judge_noise(run, std, text)
    unused_generator = None
    if generator is not None and torch.equal(generator.get_state(), generator_state):
        # reported after the reproducibility check, whose hints are more specific
        unused_generator = (generator, generator_state, f"Ran backward through {text} with {run['call']} registered.")
    module, x = run["module"], run["x"]

    def again():
        module.zero_grad()
        with _noise_call(f"running another backward through {text}"), _quiet():
            _outputs_and_loss(module, x.detach(), seed + 2)[2].backward()
        return torch.cat([p.grad.flatten() for p in module.parameters()])

    _check_noise_again(run, again, std, text, every_call=number == 0)
    # Removing the handle stops the noise.
    with calling("removing the handle that add_grad_noise returned"):
        run["handle"].remove()
    for seen in (run["before"], run["after"]):
        seen.calls.clear()
    again()
    if not all(torch.equal(b, a) for b, a in zip(run["before"].calls[0], run["after"].calls[0]) if b is not None):
        fail(f"after handle.remove(), {run['call']} still changes grad_output; return the handle of the pre-hook "
             "you registered.", "handle-not-of-hook")
    return unused_generator


def _check_noise_again(run, again, std, text, every_call):
    """Each backward draws new noise of the same distribution (none drawn once and reused, no schedule that
    shrinks it); with `every_call`, none skipped at random either."""
    again()
    for position, grad in enumerate(run["before"].copies[1]):
        if grad is None:
            continue
        noise = (run["after"].calls[1][position] - grad).detach()
        what = f"the noise that {run['call']} on {text} added to grad_output[{position}] on the second backward"
        if not noise.any():  # noise at the first backward (judged already), none at the second
            fail(f"{what} is the same number everywhere (0): no noise was added, after noise on the first backward. "
                 "Add new noise at every call of the hook, not only at the first.", "noise-first-backward-only")
        check_noise_sample(noise, std, what)
    check_new_noise_each_call(again, f"{run['call']} on {text}, over two backward passes")
    if not every_call:
        return
    for _ in range(_EVERY_CALL_PASSES):
        first_call = len(run["before"].calls)
        again()
        received, returned = run["before"].copies[first_call], run["after"].calls[first_call]
        if torch.equal(returned[0].detach(), received[0]):
            fail(f"Ran {first_call + 1} backward passes through {text} with {run['call']} registered: on "
                 f"backward number {first_call + 1} grad_output reached the module's backward without noise. "
                 "Add noise at every call of the hook (not only with some probability).", "noise-skipped-sometimes")


def _check_noise_reproducible(add_grad_noise):
    """Equally seeded generators give the same noisy gradients, other seeds others; without a generator, fresh
    modules get different noise, from torch's global random state (so torch.manual_seed makes it repeat)."""
    factory, shape, std, _, text = _NOISE_CASES[0]
    check_seeded_noise(
        lambda generator: _grads(_noisy_backward(add_grad_noise, factory, shape, std, generator, 790, text)),
        f"add_grad_noise(module, {std}, generator) on {text}")
    check_new_noise_each_call(
        lambda: _grads(_noisy_backward(add_grad_noise, factory, shape, std, None, 795, text)),
        f"add_grad_noise(module, {std}) without a generator, on two fresh modules")

    def after_manual_seed():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(4321)
            return _grads(_noisy_backward(add_grad_noise, factory, shape, std, None, 796, text))

    if not torch.equal(after_manual_seed(), after_manual_seed()):
        fail(f"add_grad_noise(module, {std}) without a generator, on {text}: two runs, each after "
             "torch.manual_seed(4321), gave different noise. Without a generator, draw from torch's global random "
             "state (torch.randn(..., generator=None)), so that torch.manual_seed makes the noise repeat; not from a "
             "generator of your own seeded by the clock or by torch.seed().", "noise-not-from-global-state")


def _check_noise_own_arguments(add_grad_noise):
    """Two modules with noise at once, each with its own std and generator: each hook keeps its own."""
    factory, shape, _, _, text = _NOISE_CASES[0]
    first, second = seeded(760, factory), seeded(760, factory)
    generators = [torch.Generator().manual_seed(5761), torch.Generator().manual_seed(5762)]
    states = [generator.get_state() for generator in generators]
    call_text = ("add_grad_noise(first, 0.3, first_generator), then add_grad_noise(second, 2.0, second_generator), "
                 f"on two copies of {text}")
    with _noise_call(f"calling {call_text}"):
        add_grad_noise(first, 0.3, generators[0])
        add_grad_noise(second, 2.0, generators[1])
    seen = _Seen()
    with _noise_call(f"registering a full backward pre-hook after yours on the first module, after {call_text}"):
        first.register_full_backward_pre_hook(seen.pre_hook)
    x = random_tensor(761, shape).requires_grad_()
    with _noise_call(f"running backward through the first module, after {call_text}"), _quiet():
        (first(x) * random_tensor(762, (shape[0], 40))).sum().backward()
    noise = (seen.calls[0][0] - random_tensor(762, (shape[0], 40))).detach().double()
    measured = noise.std().item()
    if math.isclose(measured, 2.0, rel_tol=0.15):
        fail(f"{call_text}: backward through the first module added noise of standard deviation {measured:.3g}, the "
             "std of the second call; expected 0.3. Each hook must keep the std given to its own call (bind it in a "
             "closure, not in a variable shared by every call).", "shared-std")
    if torch.equal(generators[0].get_state(), states[0]) and not torch.equal(generators[1].get_state(), states[1]):
        fail(f"{call_text}: backward through the first module drew its noise from second_generator, the generator "
             "of the second call; expected first_generator. Each hook must keep the generator given to its own call "
             "(bind it in a closure, not in a variable shared by every call).", "shared-generator")


_LAYER_EVENTS = ("bpre:0", "bpre:1", "bpre:2", "bwd:0", "bwd:1", "bwd:2")
MODULE_BACKWARD_ORDER = EventPrediction(
    exercise="predict_module_backward_order", lesson="05_backward_hooks", code="module_backward_events",
    events=_LAYER_EVENTS + ("grad:x",),
    aliases=(("backward", "bwd"), ("backward_pre", "bpre"), ("backward-pre", "bpre"), ("pre", "bpre"),
             ("tensor", "grad")),
    rules=(
        Rule("each layer is called once in forward, so backward goes through it once: each of its hooks fires "
             "once, and so does the tensor hook on x.", repeated=True, mistake="hook-fires-twice"),
        Rule("backward reaches the last layer first: the gradient flows from the loss back through layer 2, "
             "then 1, then 0, the reverse of forward.", fired=("bpre:2",),
             predicted=("bpre:0", "bwd:0", "bpre:1", "bwd:1"), mistake="forward-order"),
        Rule("a layer's full backward pre-hook fires before that layer's backward (it gets grad_output), its "
             "full backward hook after it (it gets grad_input).", predicted=("bwd:0", "bwd:1", "bwd:2"),
             fired=("bpre:0", "bpre:1", "bpre:2"), mistake="hook-before-pre-hook"),
        Rule("a layer's full backward hook fires as soon as that layer's input gradients exist, before backward "
             "moves on to the layer below: each layer's pre-hook and hook come as a pair.",
             fired=("bwd:0", "bwd:1", "bwd:2"), predicted=("bpre:0", "bpre:1", "bpre:2"),
             mistake="pre-hooks-all-first"),
        Rule("x is layer 0's input: its gradient is the grad_input of layer 0, so the tensor hook on x fires "
             "after layer 0's full backward hook, last.", predicted=("grad:x",), mistake="tensor-hook-too-early"),
        Rule("layer 1 is the Tanh: it has no parameters, but it is a module with hooks of its own, and backward "
             "goes through it between layer 2 and layer 0.", fired=("bpre:1",), predicted=("bpre:0", "bwd:0"),
             mistake="skips-parameterless-layer"),
        Rule("backward goes back through the layers in the reverse of the forward order, 2 before 1 before 0.",
             fired=("bpre:1", "bwd:1", "bpre:0", "bwd:0"), mistake="misses-earlier-layers"),
    ),
    rule="backward runs from the loss back to the input: for each layer, last first, its full backward pre-hook, "
         "then its full backward hook; the input's gradient comes last.")

check_predict_module_backward_order = prediction_check(MODULE_BACKWARD_ORDER)
