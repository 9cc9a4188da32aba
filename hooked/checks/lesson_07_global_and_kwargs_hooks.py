"""Checks for lesson 07, global hooks, keyword arguments, prepend and always_call."""

import contextlib
import random

import torch
from torch import nn

from hooked.checks.check_api import LearnerCodeRaised, calling, check_of, fail
from hooked.checks.event_predictions import EventPrediction, Rule, prediction_check
from hooked.checks.hooks_left import (CALL_HOOK_KINDS, MODULE_HOOK_DICTS, global_hook_registrar, global_hooks,
                                     global_hooks_added)
from hooked.checks.lesson_07_summary_rows import ROW_MISTAKES, aliases, check_rows
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints

# ---------------------------------------------------------------- shared helpers

_OWN_HOOKS = tuple(MODULE_HOOK_DICTS[kind] for kind in CALL_HOOK_KINDS)

# The named mistakes of what summarize_model and find_first_nonfinite share: hooks removed, the model's
# modes kept, the model's exception passed on, modules outside named_modules() skipped.
SHARED_MISTAKES = {
    "global-hooks-left": "leaves a global hook registered after it returns",
    "module-hooks-left": "leaves a hook registered on a module of the model after it returns",
    "global-hooks-left-on-error": "leaves a global hook registered when the model's forward raises (no finally)",
    "module-hooks-left-on-error": "leaves a hook on a module registered when the model's forward raises (no finally)",
    "grad-mode-left-off": "leaves torch's grad mode turned off after it returns",
    "model-mode-changed": "leaves the model in another train/eval mode than the caller had it",
    "ran-in-eval-mode": "runs the model in eval mode although the caller had it in train mode",
    "unregistered-module-looked-up": "looks up every module a global hook sees in named_modules(), also one the "
                                     "model keeps outside it (KeyError)",
    "positional-inputs-dropped": "passes only the first positional input on to the model",
    "swallowed-exception": "catches the model's exception and returns normally",
    "exception-replaced": "raises an exception of its own made from the model's instead of letting it through",
}


def _hooks_left(before, modules):
    """The registrars of the global hooks added since `before`, and the names of `modules` that still hold hooks."""
    left = [global_hook_registrar(name) for name in global_hooks_added(before)]
    hooked = sorted({name or "''" for name, module in modules for kind in _OWN_HOOKS if getattr(module, kind)})
    return left, hooked


def _check_nothing_left(before, modules, call_text, how):
    """Fail if a global hook registered since `before`, or any own hook of `modules`, is still there; `how` the
    call ended, "returned" or "raised" (then the hooks were not removed in a finally)."""
    left, hooked = _hooks_left(before, modules)
    on_error = "-on-error" if how == "raised" else ""
    if left:
        fail(f"After {call_text} {how}, global hooks were still registered (by {', '.join(left)}). A global hook "
             "fires for every module in the process until it is removed: remove it before returning, with "
             "`with handle:` or try/finally, so that it goes also when the forward pass raises.",
             f"global-hooks-left{on_error}")
    if hooked:
        fail(f"After {call_text} {how}, hooks were still registered on the modules {hooked}. Remove every hook you "
             "register before returning, also when the forward pass raises (`with handle:` or try/finally).",
             f"module-hooks-left{on_error}")


def _module_key_error_hint(error):
    if isinstance(error, KeyError) and error.args and isinstance(error.args[0], nn.Module):
        return ("unregistered-module-looked-up",
                f"The KeyError is a {type(error.args[0]).__name__} module. A global hook fires for every module "
                "called, also for modules that are not in model.named_modules() (this model calls one it keeps in "
                "a plain list); skip those instead of looking them up.")
    return None


def _call_learner(function, call_text, args, kwargs=None, hints=()):
    with calling_with_hints(f"calling {call_text}", (_module_key_error_hint, *hints)):
        return function(*args, **(kwargs or {}))


def _modes(model):
    return [(name, module.training) for name, module in model.named_modules()]


def _check_modes_kept(modes_before, model, call_text, how, grad_advice):
    """Fail if the call left grad mode off or changed the train/eval mode of a module (both are put back first,
    so that the checks after this one see the state they expect)."""
    if not torch.is_grad_enabled():
        torch.set_grad_enabled(True)
        fail(f"After {call_text} {how}, gradients were off: it left torch's grad mode changed (as "
             f"torch.set_grad_enabled(False) does until it is set back). {grad_advice}", "grad-mode-left-off")
    changed = [name or "''" for (name, was), (_, now) in zip(modes_before, _modes(model)) if was != now]
    if changed:
        for (name, was), module in zip(modes_before, model.modules()):
            module.training = was
        fail(f"After {call_text} {how}, the modules {changed} were in {'eval' if modes_before[0][1] else 'train'} "
             "mode: it left the model's mode changed (model.eval() sets it for good). Leave the model's train or "
             "eval mode as the caller had it.", "model-mode-changed")



@contextlib.contextmanager
def _watching_the_model(model):
    """Whether the model itself was called through __call__ (model.forward(...) skips its hooks), seen by a
    pre-hook the checker removes before it looks for hooks left behind."""
    called = []
    handle = model.register_forward_pre_hook(lambda module, args: called.append(True))
    try:
        yield called
    finally:
        handle.remove()


class _Ghost(nn.Module):
    """Called by the models below but not registered in them (kept in a plain list)."""

    def forward(self, x):
        return x * 1.0


# ---------------------------------------------------------------- summarize_model

class Split(nn.Module):
    """Returns a tuple: the first `k` features, the sum of the rest, the int k, and a tuple holding the rest (a
    tuple inside the tuple: its entry in output_shape is None)."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, h):
        return h[..., :self.k], h[..., self.k:].sum(-1), self.k, (h[..., self.k:],)


class Top(nn.Module):
    """Returns h.max(dim=-1), a torch.return_types.max: a named tuple (values, indices), so a tuple."""

    def forward(self, h):
        return h.max(dim=-1)


class Stats(nn.Module):
    """Returns a dict (neither a tensor nor a tuple or list): its output_shape is None."""

    def forward(self, h):
        return {"mean": h.mean(-1), "max": h.amax(-1)}


class Tower(nn.Module):
    """Own parameter on the root, a frozen layer registered first, a layer called twice and registered under
    two names, a tuple, a named tuple, a list and a dict output, buffers, a parameter shared by two layers (one without
    bias), an unregistered module, and a keyword-only argument. Keeps what its forward returned, and the
    train mode and grad mode of each of its calls."""

    class Halves(nn.Module):
        """Returns a list of two tensors. A nested class: its __qualname__ is not its __name__."""

        def forward(self, h):
            return [h[..., :1], h[..., 1:]]

    def __init__(self, width, hidden, k, out):
        super().__init__()
        self.frozen = nn.Linear(k, out)
        self.frozen.requires_grad_(False)
        self.encoder = nn.Sequential(nn.Linear(width, hidden), nn.ReLU())
        self.shared = nn.Linear(hidden, hidden)
        self.alias = self.shared  # the same module under a second name: named_modules() lists 'shared' only
        self.split = Split(k)
        self.norm = nn.BatchNorm1d(k)
        self.halves = Tower.Halves()
        self.stats = Stats()
        self.top = Top()
        self.proj = nn.Linear(k, out)
        self.tied = nn.Linear(k, out, bias=False)
        self.tied.weight = self.proj.weight  # one parameter, own to both 'proj' and 'tied'
        self.scale = nn.Parameter(torch.rand(out) + 0.5)
        self.helpers = [_Ghost()]
        self.calls = 0
        self.returned = None
        self.modes = []  # (self.training, torch.is_grad_enabled()) of each call

    def forward(self, x, *, shift):
        self.calls += 1
        self.modes.append((self.training, torch.is_grad_enabled()))
        h = self.alias(self.helpers[0](torch.tanh(self.shared(self.encoder(x)))))
        first, rest, k, _ = self.split(h)
        first = self.norm(first)
        low, high = self.halves(h)
        stats = self.stats(first)
        top = self.top(h)
        self.returned = ((self.frozen(first) + self.proj(first) + self.tied(first)) * self.scale + shift
                         + rest.unsqueeze(-1) + stats["mean"].unsqueeze(-1) + low + top.values.unsqueeze(-1))
        return self.returned


class Raises(nn.Module):
    def forward(self, x):
        raise ValueError("the checker's layer raised on purpose")


def _tower(rng):
    width, hidden = rng.randint(3, 6), rng.randint(5, 8)
    k, out = rng.randint(2, hidden - 2), rng.randint(2, 4)
    batch = (rng.randint(2, 4),)
    return Tower(width, hidden, k, out), [batch + (width,)], {"shift": round(rng.uniform(-1, 1), 3)}


def _nested(rng):
    width, hidden, out = rng.randint(3, 6), rng.randint(3, 6), rng.randint(2, 4)
    model = nn.Sequential(nn.Linear(width, hidden),
                          nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()),
                          nn.Linear(hidden, out))
    return model, [(rng.randint(2, 3), rng.randint(2, 3), width)], {}


class Pair(nn.Module):
    """Two positional inputs, each through its own layer, then a nested Sequential. One Tanh sits in two
    containers, 'left' and 'body.0': named_modules() lists it once, as 'left.1', and a walk over
    named_children() reaches it twice."""

    def __init__(self, width, hidden, out):
        super().__init__()
        act = nn.Tanh()
        self.left = nn.Sequential(nn.Linear(width, hidden), act)
        self.right = nn.Linear(width, hidden)
        self.body = nn.Sequential(nn.Sequential(nn.Linear(hidden, hidden), act), nn.Linear(hidden, out))

    def forward(self, x, y):
        return self.body(self.left(x) + self.right(y))


def _pair(rng):
    width, hidden, out = rng.randint(3, 6), rng.randint(3, 6), rng.randint(2, 4)
    batch = rng.randint(2, 4)
    return Pair(width, hidden, out), [(batch, width), (batch, width)], {}


_SUMMARY_CASES = ((701, _tower), (702, _nested), (703, _pair))


def _shape_of(value):
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if isinstance(value, (tuple, list)):
        return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]
    return None


def _output_kind(value):
    if isinstance(value, torch.Tensor):
        return "tensor"
    return type(value).__name__


def _reference_rows(model, inputs, kwargs):
    """Rows in start order, with extra keys for the hints: what recursive, trainable, buffer and deduplicated
    counts would give, the input shape, and the kind of output."""
    rows, open_rows, finished = [], [], []
    # what counting through model.named_parameters() (which lists a shared parameter once) gives each module
    deduplicated = {}
    for name, parameter in model.named_parameters():
        owner = name.rpartition(".")[0]
        deduplicated[owner] = deduplicated.get(owner, 0) + parameter.numel()

    counted = set()  # the parameters that an earlier row counted

    def starts(module, args):
        own = sum(p.numel() for p in module.parameters(recurse=False))
        not_yet_counted = sum(p.numel() for p in module.parameters(recurse=False) if id(p) not in counted)
        counted.update(id(p) for p in module.parameters(recurse=False))
        row = {"name": name_of[module], "type": type(module).__name__, "output_shape": None,
               "input_shape": _shape_of(args[0]) if args else None,
               "params": own,
               "recursive": sum(p.numel() for p in module.parameters()),
               "trainable": sum(p.numel() for p in module.parameters(recurse=False) if p.requires_grad),
               "with_buffers": own + sum(b.numel() for b in module.buffers(recurse=False)),
               "deduplicated": deduplicated.get(name_of[module], 0),
               "not_yet_counted": not_yet_counted,
               "weight_and_bias": sum(t.numel() for t in (getattr(module, "weight", None),
                                                          getattr(module, "bias", None))
                                      if isinstance(t, nn.Parameter)),
               "other_parameters": [name for name, p in module.named_parameters(recurse=False)
                                    if name not in ("weight", "bias")],
               "qualname": type(module).__qualname__}
        rows.append(row)
        open_rows.append(row)

    def finishes(module, args, output):
        row = open_rows.pop()
        row["output_shape"] = _shape_of(output)
        row["output_kind"] = _output_kind(output)
        row["named_tuple"] = isinstance(output, tuple) and type(output) is not tuple
        row["output_type"] = f"{type(output).__module__}.{type(output).__qualname__}"
        row["nested_items"] = [number for number, item in enumerate(output) if isinstance(item, (tuple, list))] \
            if isinstance(output, (tuple, list)) else []
        finished.append(row)

    name_of = {}
    handles = []
    for name, module in model.named_modules():
        name_of[module] = name
        handles += [module.register_forward_pre_hook(starts), module.register_forward_hook(finishes)]
    try:
        with torch.no_grad():
            output = model(*[x.clone() for x in inputs], **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return output, rows, finished


SUMMARY_MISTAKES = {
    "kwargs-dropped": "does not pass the keyword arguments on to the model",
    "inputs-not-unpacked": "passes the tuple of inputs to the model as one argument instead of unpacking it",
    "not-a-pair": "returns something other than the pair (output, rows)",
    "model-not-run-once": "runs the model more than once (or not at all)",
    "ran-without-grad": "runs the model with gradients off, so its output has no graph",
    "none-parameter-counted": "counts module._parameters.values(), which holds None for a missing bias",
    "output-copied": "returns a copy of the model's output (or a detached one), not the tensor the model returned",
    "wrong-output": "returns another output than the one the model returned (a hook changed it, or another value)",
}


def _summary_case(seed, build):
    """The model, inputs and keyword arguments of one case, with the reference's rows and the call's text."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    model, shapes, kwargs = build(rng)
    inputs = [random_tensor(seed + number, shape) for number, shape in enumerate(shapes)]
    reference = _reference_rows(model, inputs, kwargs)
    if hasattr(model, "modes"):
        model.modes.clear()  # the reference's call
    shown = ", ".join([f"{'xyz'[number]} of shape {shape}" for number, shape in enumerate(shapes)]
                      + [f"{key}={value}" for key, value in kwargs.items()])
    return model, inputs, kwargs, reference, f"summarize_model(model, {shown})"


# TypeErrors of a call that does not hand its arguments on to the model: (torch's words, slug, hint).
_ARGUMENT_ERRORS = (
    ("missing 1 required positional argument: 'y'", "positional-inputs-dropped",
     "Pass every positional input on to the model: model(*inputs, **kwargs), not only the first."),
    ("shift", "kwargs-dropped", "Pass the keyword arguments on to the model: model(*inputs, **kwargs)."),
    ("not tuple", "inputs-not-unpacked",
     "`inputs` is a tuple of the positional arguments: unpack it, model(*inputs, **kwargs)."),
)


def _none_parameter_hint(error):
    if isinstance(error, AttributeError) and "'NoneType' object has no attribute 'numel'" in str(error):
        return ("none-parameter-counted",
                "A module's _parameters dict holds None for a parameter it does not have (an nn.Linear with "
                "bias=False has _parameters['bias'] = None); module.parameters(recurse=False) skips those.")
    return None


def _call_summarize_model(summarize_model, model, inputs, kwargs, call_text):
    """What summarize_model returned, and whether the model itself was called through its hooks."""
    try:
        with _watching_the_model(model) as model_called:
            result = _call_learner(summarize_model, call_text, (model, *[x.clone() for x in inputs]), kwargs,
                                   hints=(_none_parameter_hint,))
    except LearnerCodeRaised as error:
        for words, slug, hint in _ARGUMENT_ERRORS:
            if isinstance(error.error, TypeError) and words in str(error.error):
                fail(f"{call_text} raised TypeError: {error.error}. {hint}", slug)
        raise
    return result, model_called


def _check_summary_run(model, call_text):
    """The model ran once, in the caller's train mode and grad mode."""
    calls = getattr(model, "calls", 2) - 1  # the reference ran it once (a model without a counter: as if once)
    if calls != 1:
        fail(f"{call_text} ran the model {calls} times; run it once, with the hooks registered, and return that "
             "call's output with the rows it recorded.", "model-not-run-once")
    for training, grad_enabled in getattr(model, "modes", []):
        if not training:
            fail(f"{call_text} ran the model in eval mode; the model was in train mode. Run it in the mode the "
                 "caller has it (model.eval() changes what BatchNorm and Dropout compute).", "ran-in-eval-mode")
        if not grad_enabled:
            fail(f"{call_text} ran the model with gradients off (under torch.no_grad() or "
                 "torch.inference_mode()), so the output it returns has no graph: the caller could not "
                 "backpropagate through it. Run the model in the caller's grad mode; hooks fire in either.",
                 "ran-without-grad")


def _check_summary_output(output, model, expected_output, call_text):
    """The output is what the model returned, itself."""
    returned = getattr(model, "returned", None)
    if returned is not None and output is not returned:
        if close(output, expected_output) and close(returned, expected_output):
            fail(f"{call_text} returned {describe(output)} as the output: the values the model returns, but "
                 "not the tensor the model returned (a copy, or a detached tensor). Return that object itself, "
                 "what model(*inputs, **kwargs) gave, unchanged, and let the hooks return None.", "output-copied")
        fail(f"{call_text} returned {describe(output)} as the output; the model returns "
             f"{describe(expected_output)}. Return what model(*inputs, **kwargs) returned, itself, and let the "
             "hooks return None so that they change nothing.", "wrong-output")
    if not close(output, expected_output):
        fail(f"{call_text} returned {describe(output)} as the output; the model returns "
             f"{describe(expected_output)}. Return what model(*inputs, **kwargs) returned, and let the hooks "
             "return None so that they change nothing.", "wrong-output")


@check_of("summarize_model", mistakes={**SHARED_MISTAKES, **SUMMARY_MISTAKES, **ROW_MISTAKES})
def check_summarize_model(summarize_model):
    for seed, build in _SUMMARY_CASES:
        model, inputs, kwargs, (expected_output, expected, finished), call_text = _summary_case(seed, build)
        modes_before = _modes(model)
        before = global_hooks()
        modules = list(model.named_modules()) + [("(an unregistered module the model calls)", m)
                                                for m in getattr(model, "helpers", [])]
        result, model_called = _call_summarize_model(summarize_model, model, inputs, kwargs, call_text)
        _check_nothing_left(before, modules, call_text, "returned")
        _check_modes_kept(modes_before, model, call_text, "returned",
                          "Leave the grad mode alone: the model runs in the caller's grad mode.")
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            fail(f"{call_text} returned {describe(result)}; expected a pair (output, rows).", "not-a-pair")
        output, rows = result
        _check_summary_run(model, call_text)
        _check_summary_output(output, model, expected_output, call_text)
        check_rows(rows, expected, finished, model, call_text, model_called)
    _check_raising(summarize_model, "summarize_model")


def _check_raising(function, exercise):
    """The model's exception reaches the caller unchanged, and every hook is gone afterwards: a ValueError of the
    checker's, then the RuntimeError torch raises for a shape mismatch (a submission that stops the pass early
    with a RuntimeError of its own and catches RuntimeError would swallow it)."""
    torch.manual_seed(709)
    width = random.Random(709).randint(3, 6)
    models = [(nn.Sequential(nn.Linear(width, width), nn.Sequential(nn.ReLU(), Raises())), ValueError,
               "raises ValueError", "on purpose"),
              (nn.Sequential(nn.Linear(width, width + 1), nn.Sequential(nn.ReLU(), nn.Linear(width, 2))),
               RuntimeError, "gets an input of the wrong size, so torch raises RuntimeError", "cannot be multiplied")]
    for model, kind, what, words in models:
        call_text = f"{exercise}(model, x of shape (2, {width})) on a model whose layer '1.1' {what}"
        before = global_hooks()
        _check_exception_comes_through(function, model, width, kind, words, call_text)
        _check_nothing_left(before, list(model.named_modules()), call_text, "raised")


def _check_exception_comes_through(function, model, width, kind, words, call_text):
    """Call `function` on `model`, whose forward raises `kind` with `words` in it: it must come out unchanged."""
    name = kind.__name__
    own_stop = (" If you stop the pass early by raising an exception of your own, raise and catch a class of "
                "your own, not RuntimeError, which torch itself raises.") if kind is RuntimeError else ""

    def is_the_models(error):
        return isinstance(error, kind) and words in str(error)

    def made_from_the_models(error):
        if is_the_models(error.__cause__ or error.__context__):
            return ("exception-replaced",
                    f"It was made from the model's {name}: the model's {name} must reach the caller unchanged. "
                    "Don't catch it: a `with handle:` block or try/finally removes the hooks and lets the "
                    "exception go on.")
        return None

    planted_exception_comes_through(
        f"calling {call_text}", lambda: function(model, random_tensor(709, (2, width))), is_the_models,
        lambda returned: (f"{call_text} returned normally (it gave {describe(returned)}); the model's {name} must "
                          "reach the caller unchanged. Don't catch it: a `with handle:` block or try/finally "
                          f"removes the hooks and lets the exception go on.{own_stop}", "swallowed-exception"),
        hints=(made_from_the_models,))


# ---------------------------------------------------------------- find_first_nonfinite

class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


class Exp(nn.Module):
    def forward(self, x):
        return torch.exp(x)


class Triple(nn.Module):
    """Returns (x, log(x), x): only the middle item holds NaN (where x < 0)."""

    def forward(self, x):
        return x, torch.log(x), x


class LogList(nn.Module):
    """Returns a list [x, log(x)]: only the second item holds NaN (where x < 0)."""

    def forward(self, x):
        return [x, torch.log(x)]


class Huge(nn.Module):
    """Finite outputs between 1e38 and float32's largest number (3.4e38): a sum of them overflows to inf."""

    def forward(self, x):
        return 1e38 + 1e37 * torch.tanh(x).abs()


class GradProbe(nn.Module):
    """Records whether gradients were on, and its train mode, when it was called."""

    def __init__(self):
        super().__init__()
        self.grad_enabled = []
        self.training_seen = []

    def forward(self, x):
        self.grad_enabled.append(torch.is_grad_enabled())
        self.training_seen.append(self.training)
        return x


class Packed(nn.Module):
    """Returns a dict {"x": x, "log": log(x)}: a dict output counts as finite, whatever it holds."""

    def forward(self, x):
        return {"x": x, "log": torch.log(x)}


class Nest(nn.Module):
    """Takes Packed's dict, returns (x, (log(x),)): a tuple inside the tuple counts as finite."""

    def forward(self, packed):
        return packed["x"], (packed["log"],)


class Unnest(nn.Module):
    """Takes Nest's tuple, returns the tensor log(x) itself: the first output that counts as non-finite."""

    def forward(self, nested):
        return nested[1][0]


class LogOfMean(nn.Module):
    """Returns a 0-d tensor, like a loss: the log of (mean - 10), NaN for this model's small values."""

    def forward(self, x):
        return torch.log(x.mean() - 10.0)


class Scaled(nn.Module):
    """A container that multiplies its layer's output by a 0-d tensor: 'scale' (a LogOfMean) makes the NaN, a
    single element, and the container's own output is NaN everywhere."""

    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.scale = LogOfMean()

    def forward(self, x):
        h = self.linear(x)
        return h * self.scale(h)


class SortedLog(nn.Module):
    """Returns torch.sort(log(x), dim=-1), a torch.return_types.sort: a named tuple (values, indices), so a
    tuple, whose values hold NaN (where x < 0)."""

    def forward(self, x):
        return torch.sort(torch.log(x), dim=-1)


class EmptySlice(nn.Module):
    """Returns an empty tensor, x[..., :0]: a tensor without elements has no non-finite element."""

    def forward(self, x):
        return x[..., :0]


class WithEmpty(nn.Module):
    """Returns (x, its EmptySlice layer's empty tensor): an empty tensor as an output and as a tuple's item."""

    def __init__(self):
        super().__init__()
        self.empty = EmptySlice()

    def forward(self, x):
        return x, self.empty(x)


class Big(nn.Module):
    """float64 outputs between 1 and about 7e86: finite, but past float32's largest number (3.4e38)."""

    def forward(self, x):
        return torch.exp(100.0 * torch.tanh(x) + 100.0)


class NaNBlock(nn.Module):
    """A container whose own forward makes the NaN, after its layers returned finite outputs."""

    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.act = nn.Tanh()

    def forward(self, x):
        return torch.sqrt(self.act(self.linear(x)) - 2.0)  # tanh is at most 1: the root of a negative number


class Reuse(nn.Module):
    """Calls `shared` twice, with a Log between; `again` is `shared` registered a second time, under another
    name, and the second call goes through it."""

    def __init__(self, width, shared):
        super().__init__()
        self.lead = nn.Linear(width, width)
        self.shared = shared
        self.log = Log()
        self.again = self.shared

    def forward(self, x):
        return self.again(self.log(self.shared(self.lead(x))))


class Chain(nn.Module):
    """body (a Sequential with the culprit inside), then a probe, an unregistered module, a head; the
    root may finish with a square root of negative values, its own non-finite output."""

    def __init__(self, body, width, root_sqrt=False, ghost=None):
        super().__init__()
        self.body = body
        self.probe = GradProbe()
        self.head = nn.Linear(width, 2)
        self.helpers = [ghost or _Ghost()]
        self.root_sqrt = root_sqrt

    def forward(self, x):
        h = self.body(x)
        if isinstance(h, (tuple, list)):
            h = h[0]
        out = self.head(self.helpers[0](self.probe(h)))
        return torch.sqrt(out - 100.0) if self.root_sqrt else out


class PairChain(Chain):
    """A Chain that takes two positional inputs and adds them first."""

    inputs = 2

    def forward(self, x, y):
        return super().forward(x + y)


def _pair_case(width):
    return PairChain(nn.Sequential(nn.Linear(width, width), Log(), nn.Tanh()), width)


def _nan_case(width):
    # the log makes NaN in some elements only; the Tanh keeps them where they are, the head spreads them to all
    return Chain(nn.Sequential(nn.Linear(width, width), Log(), nn.Tanh()), width)


def _inf_case(width):
    # exp of large values is +inf; the Linear after it mixes +inf and -inf weights into NaN
    body = nn.Sequential(nn.Linear(width, width), Exp(), nn.Linear(width, width))
    with torch.no_grad():
        body[0].weight.mul_(200.0)
    return Chain(body, width)


def _neg_inf_case(width):
    # the ReLU makes zeros, the log of zero is -inf: no NaN and no +inf in the culprit's output
    return Chain(nn.Sequential(nn.Linear(width, width), nn.ReLU(), Log(), nn.Linear(width, width)), width)


def _tuple_case(width):
    return Chain(nn.Sequential(nn.Linear(width, width), Triple()), width)


def _list_case(width):
    return Chain(nn.Sequential(nn.Linear(width, width), LogList()), width)


def _finite_case(width):
    # Huge's outputs are finite; the Tanh after it brings them back to at most 1; the last layer adds an
    # empty tensor to its output
    return Chain(nn.Sequential(nn.Linear(width, width), Huge(), nn.Tanh(), WithEmpty()), width)


def _other_outputs_case(width):
    # the log's NaN is first in a dict (counts as finite), then in a tuple inside a tuple (counts as finite), then
    # in a tensor: 'body.3'
    return Chain(nn.Sequential(nn.Linear(width, width), Packed(), Nest(), Unnest()), width)


def _scalar_case(width):
    # the culprit 'body.scale' returns a 0-d tensor (one element) that is NaN
    return Chain(Scaled(width), width)


def _named_tuple_case(width):
    # the culprit returns a named tuple (torch.return_types.sort), a tuple whose values hold NaN
    return Chain(nn.Sequential(nn.Linear(width, width), SortedLog()), width)


def _dirty_input_case(width):
    # the input itself holds +inf and -inf (set by the checker), which the Hardtanh clamps: every output is finite
    model = Chain(nn.Sequential(nn.Hardtanh(), nn.Linear(width, width), nn.Tanh()), width)
    model.dirty_input = True
    return model


def _float64_case(width):
    # a float64 model whose Big layer returns finite values past float32's range; the Tanh brings them back to 1
    return Chain(nn.Sequential(nn.Linear(width, width), Big(), nn.Tanh()), width).double()


def _train_only_case(width):
    # in train mode the Dropout (p=1) zeros everything and the log of zero is -inf, in 'body.3'; in eval mode the
    # Dropout passes the Softplus's positive values on and every output is finite
    return Chain(nn.Sequential(nn.Linear(width, width), nn.Softplus(), nn.Dropout(p=1.0), Log()), width)


def _root_case(width):
    return Chain(nn.Sequential(nn.Linear(width, width), nn.Tanh()), width, root_sqrt=True)


def _ghost_case(width):
    # the first NaN comes from a module the model holds in a plain list, not in named_modules()
    return Chain(nn.Sequential(nn.Linear(width, width), nn.Tanh()), width, ghost=Log())


def _block_case(width):
    # a container is the answer: its own forward makes the NaN after its layers returned finite outputs
    return Chain(NaNBlock(width), width)


def _reused_case(width):
    # 'body.shared' is called twice: finite the first time, NaN the second, after 'body.log' made the NaN
    return Chain(Reuse(width, nn.Linear(width, width)), width)


def _alias_case(width):
    # the culprit is registered under two names, 'body.shared' and 'body.again'; its first call makes the inf
    body = Reuse(width, Exp())
    with torch.no_grad():
        body.lead.weight.mul_(200.0)
    return Chain(body, width)


_NONFINITE_CASES = ((711, _nan_case), (712, _inf_case), (721, _neg_inf_case), (713, _tuple_case), (717, _list_case),
                    (714, _finite_case), (715, _root_case), (716, _ghost_case), (718, _block_case),
                    (719, _reused_case), (720, _alias_case), (722, _pair_case), (723, _other_outputs_case),
                    (724, _dirty_input_case), (725, _float64_case), (726, _train_only_case),
                    (727, _named_tuple_case), (728, _scalar_case))


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [item for item in value if isinstance(item, torch.Tensor)]
    return []


def _all_tensors(value, dicts=True):
    """Every tensor in `value`, also inside nested tuples and lists and (if `dicts`) dicts: what a deeper search
    finds."""
    if isinstance(value, torch.Tensor):
        return [value]
    if dicts and isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [tensor for item in value for tensor in _all_tensors(item, dicts)]
    return []


def _record_calls(model, inputs):
    """Every module call of one pass with per-module hooks, in start order: its name, start and finish index,
    the tensors it got and returned (also as deeper searches find them), and the kind of its output."""
    name_of = {module: name for name, module in model.named_modules()}
    calls, open_calls = [], []  # calls in start order; each gets its finish index when it returns

    def pre(module, args):
        call = {"name": name_of[module], "start": len(calls), "inputs": [t.clone() for t in _tensors(args)]}
        calls.append(call)
        open_calls.append(call)

    def post(module, args, output):
        call = open_calls.pop()
        call.update(finish=sum("finish" in c for c in calls), outputs=[t.clone() for t in _tensors(output)],
                    deep=[t.clone() for t in _all_tensors(output)],
                    nested=[t.clone() for t in _all_tensors(output, dicts=False)],
                    kind=type(output).__name__ if not isinstance(output, torch.Tensor) else "tensor",
                    named_tuple=isinstance(output, tuple) and type(output) is not tuple,
                    output_type=f"{type(output).__module__}.{type(output).__qualname__}")

    handles = []
    for module in name_of:
        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    try:
        with torch.no_grad():
            model(*[x.clone() for x in inputs])
    finally:
        for handle in handles:
            handle.remove()
    model.probe.grad_enabled.clear()
    model.probe.training_seen.clear()
    return calls


def _not_finite(t):
    return not torch.isfinite(t).all()


def _first(records, test, key="outputs", only=lambda call: True):
    """The name of the first of `records` (calls) that `only` admits and one of whose `key` tensors passes `test`."""
    for call in records:
        if only(call) and any(test(t) for t in call[key]):
            return call["name"]
    return None


def _answers(model, inputs):
    """The right answer and what typical mistakes would give, from one pass with per-module hooks."""
    calls = _record_calls(model, inputs)
    finished = sorted(calls, key=lambda call: call["finish"])
    right = _first(finished, _not_finite)
    culprit = next((call for call in finished if call["name"] == right), None)
    return {
        "right": right,
        "culprit_kind": culprit["kind"] if culprit else None,
        "culprit_numel": min((t.numel() for t in culprit["outputs"]), default=None) if culprit else None,
        "two_or_more": _first(finished, lambda t: t.numel() >= 2 and not torch.isfinite(t).all()),
        "culprit_named_tuple": culprit["output_type"] if culprit and culprit["named_tuple"] else None,
        "input_nonfinite": any(_not_finite(x) for x in inputs),
        **_mistaken_answers(model, inputs, calls, finished),
        "aliases": aliases(model),
        "types": {name: type(module).__name__ for name, module in model.named_modules()},
        "finish_order": [call["name"] for call in finished],
    }


def _mistaken_answers(model, inputs, calls, finished):
    """What each typical mistake would answer: another test of a tensor, another kind of output looked at,
    another order of the calls, or only some of the modules watched."""
    leaves = {name for name, module in model.named_modules() if not list(module.children())}
    children = {name for name, child in model.named_children()}
    bad = [call["name"] for call in finished if any(_not_finite(t) for t in call["outputs"])]
    by_name = {}  # a dict keyed by name: placed at its first return, judged by its last
    for call in finished:
        by_name[call["name"]] = any(_not_finite(t) for t in call["outputs"])
    return {
        "exact_types": _first(finished, _not_finite, only=lambda call: call["kind"] in ("tensor", "tuple", "list")),
        "nan_only": _first(finished, lambda t: torch.isnan(t).any()),
        "no_minus_inf": _first(finished, lambda t: torch.isnan(t).any() or (t == float("inf")).any()),
        "all_bad": _first(finished, lambda t: not torch.isfinite(t).any()),
        "by_sum": _first(finished, lambda t: not torch.isfinite(t.sum())),
        "tensor_only": _first(finished, _not_finite, only=lambda call: call["kind"] == "tensor"),
        "tuple_only": _first(finished, _not_finite, only=lambda call: call["kind"] in ("tensor", "tuple")),
        "last": bad[-1] if bad else None,
        "by_input": _first(calls, _not_finite, key="inputs"),
        "input_or_output": next((call["name"] for call in finished
                                 if any(_not_finite(t) for t in call["outputs"] + call["inputs"])), None),
        "deep": _first(finished, _not_finite, key="deep"),
        "nested": _first(finished, _not_finite, key="nested"),
        "as_float32": _first(finished, lambda t: t.dtype == torch.float64 and not torch.isfinite(t.float()).all()
                             or not torch.isfinite(t).all()),
        "kinds": {call["name"]: call["kind"] for call in finished},
        "children_only": _first(finished, _not_finite, only=lambda call: call["name"] in children),
        "leaves_only": _first(finished, _not_finite, only=lambda call: call["name"] in leaves),
        "by_name": next((name for name, is_bad in by_name.items() if is_bad), None),
        "unregistered": "head" in bad and not any(_not_finite(t) for call in finished
                                                 if call["name"].startswith("body") for t in call["outputs"]),
    }


NONFINITE_MISTAKES = {
    "empty-tensor-raised": "raises on an empty tensor, which has no non-finite element",
    "ran-with-grad": "runs the model with gradients on instead of under torch.no_grad()",
    "model-run-more-than-once": "runs the model more than once",
    "returned-module": "returns the module itself, not its name",
    "not-a-name": "returns something other than a name (a str) or None",
    "nested-output-counted": "looks inside a dict output or a tuple inside a tuple, which count as finite",
    "input-counted": "judges a module by the inputs it receives, which here hold inf",
    "float32-overflow": "converts float64 outputs to float32 before testing them, so large ones overflow",
    "single-element-ignored": "skips outputs with a single element (a 0-d tensor)",
    "stops-at-unregistered-module": "stops at a module outside named_modules() and gives up instead of going on",
    "root-missed": "misses the model itself: not hooked, or its name '' tested by truth value",
    "root-for-none": "returns '' (the model itself) when every output is finite, instead of None",
    "alias-name": "names the module by its second registered name, not the one named_modules() gives",
    "children-only": "watches only model.children(), not every module",
    "leaves-only": "watches only the layers without children, not the containers",
    "judged-by-name": "keeps the verdicts in a dict keyed by name: the first call's place, the last call's verdict",
    "last-not-first": "keeps the last module with a non-finite output, not the first",
    "sum-overflow": "tests a sum or norm of the output, which overflows for large finite values",
    "every-element-required": "counts an output as non-finite only when every element is",
    "minus-inf-missed": "tests for nan and +inf only, so -inf goes unseen",
    "nan-only": "tests for nan only (torch.isnan), so infinities go unseen",
    "named-tuple-missed": "misses a named tuple output (type(output) is tuple is False for it)",
    "sequence-items-missed": "looks only at tensor outputs, not at the tensors in a tuple or list output",
    "inputs-not-outputs": "judges each module by its inputs, in a pre-hook, not by its outputs",
    "class-name": "returns the module's class name, not its name in named_modules()",
    "culprit-not-watched": "misses the culprit (only some classes of modules watched) and returns a later module",
    "model-forward-called": "calls model.forward(...), which skips the model's own hooks",
    "answer-kept-between-calls": "keeps the answer in a variable that outlives the call",
    "wrong-module": "returns a module no diagnosis explains",
}


def _nonfinite_diagnosis(got, answers, right):
    """(slug, hint) of the wrong answer `got`: the first diagnosis that fits, in this order."""
    return (_answer_form_diagnosis(got, answers, right) or _modules_watched_diagnosis(got, answers, right)
            or _test_and_order_diagnosis(got, answers, right) or ("wrong-module", ""))


def _answer_form_diagnosis(got, answers, right):
    """Not a name, or a name found by looking in the wrong place (inside outputs, inputs, another dtype)."""
    if isinstance(got, nn.Module):
        return "returned-module", (" That is the module itself; return its name in model.named_modules() (a str, "
                                   "'' for the model itself).")
    if got is not None and not isinstance(got, str):
        return "not-a-name", (" Return the name of the module, a str ('' for the model itself), or None when every "
                              "output is finite.")
    if got is not None and got in (answers["deep"], answers["nested"]) and got != right:
        return "nested-output-counted", (
            f" {got!r} returned a {answers['kinds'].get(got)}: only a tensor, or a tensor directly among the items "
            "of a tuple or list, counts. Any other output, a dict or a tuple inside a tuple, counts as finite "
            f"whatever it holds; the non-finite values count where they come out as a tensor, in {right!r}.")
    if answers["input_nonfinite"] and got is not None and got != right \
            and got in (answers["input_or_output"], answers["by_input"]):
        return "input-counted", (
            f" The model's input itself holds inf and -inf, so {got!r} received them, but its output is finite (a "
            "Hardtanh clamps them). Only outputs count: look at what each module returns, not at what it gets.")
    if got is not None and got == answers["as_float32"] and got != right:
        return "float32-overflow", (
            f" The outputs of {got!r} are float64 and finite (up to about 7e86); only converted to float32 do they "
            "overflow to inf. Test each tensor in its own dtype, torch.isfinite(t).all().")
    if answers["culprit_numel"] is not None and answers["culprit_numel"] < 2 and got != right \
            and got == answers["two_or_more"]:
        return "single-element-ignored", (
            f" The culprit {right!r} returns a tensor with a single element (a 0-d tensor, like a loss), which is "
            "NaN: it counts like any other tensor, whatever its size.")
    return None


def _modules_watched_diagnosis(got, answers, right):
    """The model itself, an alias, or some modules missed or judged by name."""
    if answers["unregistered"] and got is None:
        return "stops-at-unregistered-module", (
            " The first NaN comes from a module the model keeps in a plain list, not in named_modules(): ignore "
            "that module and keep looking; the next module of the model is the answer.")
    if right == "" and got is None:
        return "root-missed", (
            " The model itself is the first: its own forward makes the NaN, after every submodule returned finite "
            "outputs. Hook the model too, not only its layers; and its name in named_modules() is '', which is "
            "falsy: compare with `is None` (or keep a flag), not by truth value.")
    if right is None and got == "":
        return "root-for-none", (" '' is the name of the model itself; when no output is non-finite, return None, "
                                 "not ''.")
    if right is not None and got in answers["aliases"] and answers["aliases"][got] == right:
        return "alias-name", (f" {got!r} is the same module as {right!r}, registered a second time under another "
                              f"name. named_modules() lists a module once, under its first name: return {right!r}.")
    if got is not None and got == answers["children_only"] and got != right:
        return "children-only", (
            f" {got!r} is a direct child of the model and a parent of the culprit: it looks as if only "
            "model.children() were watched. The culprit is a layer inside it; watch every module of "
            "model.named_modules() (a global forward hook sees them all), the model itself included.")
    if got is not None and got == answers["leaves_only"] and got != right and right is not None:
        return "leaves-only", (
            f" {got!r} comes after the culprit {right!r}, a container whose own forward made the NaN after its "
            "layers returned finite outputs. Watch containers too, every module of model.named_modules(), not only "
            "the layers without children.")
    if got == answers["by_name"] and got != right:
        return "judged-by-name", (
            f" {got!r} is called twice: its first call returned a finite output, and only its second call, after "
            f"{right!r}, a non-finite one. Judge each call when it returns (a dict keyed by name keeps the place of "
            "the first call and the verdict of the last).")
    if got == answers["last"] and got != right:
        return "last-not-first", (
            " That is the last module with a non-finite output: the model (or a parent) returns after its children, "
            "so its forward hook fires later. Keep the first one found, in the order the forward hooks fire (not "
            "the order the calls start, nor the order of named_modules(), where the model itself comes first), and "
            "ignore the rest.")
    return None


def _test_and_order_diagnosis(got, answers, right):
    """A test of the tensors that misses some non-finite values, or the calls taken in the wrong order."""
    if right is None and got == answers["by_sum"]:
        return "sum-overflow", (f" The output of {got!r} is finite, only large (over 1e38): a sum or a norm of it "
                                "overflows to inf. Test the elements themselves, torch.isfinite(t).all().")
    if got is not None and got == answers["all_bad"] and got != right:
        return "every-element-required", (
            " That is the first output in which *every* element is non-finite; one NaN or inf is enough. "
            "torch.isfinite(t).all() is False as soon as one element is not finite. (Or, if you watch only some "
            f"kinds of layers: the culprit {right!r} is a {answers['types'].get(right)}, and every module counts, "
            "whatever its class.)")
    if got == answers["no_minus_inf"] and got != right:
        return "minus-inf-missed", (" The culprit's output holds -inf (the log of 0), and no NaN or +inf: test for "
                                    "both infinities, torch.isinf(t) or torch.isfinite(t).all(), not only t == inf.")
    if got == answers["nan_only"] and got != right:
        return "nan-only", (" The culprit's output holds infinities but no NaN: torch.isnan misses them; test "
                            "torch.isfinite(...).all().")
    return _outputs_looked_at_diagnosis(got, answers, right) or _order_diagnosis(got, answers, right)


def _outputs_looked_at_diagnosis(got, answers, right):
    """Tuple, list and named-tuple outputs, or inputs, looked at instead of every tensor output."""
    if answers["culprit_named_tuple"] and got != right and \
            got in (answers["exact_types"], answers["tensor_only"], answers["tuple_only"]):
        return "named-tuple-missed", (
            f" The culprit {right!r} returns a {answers['culprit_named_tuple']}, a named tuple: that is a tuple too "
            "(isinstance(output, tuple) is True, although type(output) is not tuple), with the non-finite tensor "
            "among its items. Test isinstance(output, (tuple, list)) and look at every tensor item.")
    if got == answers["tensor_only"] and got != right or got == answers["tuple_only"] and got != right:
        return "sequence-items-missed", (f" The culprit returns a {answers['culprit_kind']}, with the non-finite "
                                         "tensor among its items: look at every tensor in a tuple or list output.")
    if got == answers["by_input"] and got != right:
        return "inputs-not-outputs", (" That is the first module whose *input* is not finite, the one after the "
                                      "culprit. Look at outputs, in a forward hook (a pre-hook sees only the "
                                      "inputs).")
    if right is not None and isinstance(got, str) and got == answers["types"].get(right):
        return "class-name", (" That is the class of the module; return its name in model.named_modules(), which "
                              "says where it is in the model.")
    return None


def _order_diagnosis(got, answers, right):
    """A module that returns after the culprit. (The first call to start with a non-finite output, when it is
    not the answer, is a parent of it that returns last of all: "last-not-first" names it, and says so.)"""
    # A parent of the culprit gets here only where no other diagnosis took it first (the model itself, when its
    # output is finite): an answer that fires too late, like "last-not-first", whose id it shares.
    if right is not None and got is not None and right.startswith(f"{got}.") or (got == "" and right):
        return "last-not-first", (" That is a parent of the culprit: a parent's output holds its children's NaN "
                                  "too, but it returns after them. Keep the first output found, in the order "
                                  "the forward hooks fire.")
    if right is not None and got in answers["finish_order"] and \
            answers["finish_order"].index(got) > answers["finish_order"].index(right):
        return "culprit-not-watched", (
            f" {got!r} returns after the culprit {right!r}, a {answers['types'].get(right)} whose output was "
            "already non-finite: it looks as if the culprit was not watched. Every module of model.named_modules() "
            "counts, whatever its class.")
    return None


def _answer_outlives_the_call(find_first_nonfinite, got):
    """Whether find_first_nonfinite returns `got` again for a model without a module of that name (an answer kept
    from an earlier call)."""
    probe = nn.Sequential(nn.Tanh())
    try:
        with calling("calling find_first_nonfinite(nn.Sequential(nn.Tanh()), x)"):
            again = find_first_nonfinite(probe, torch.zeros(2, 3))
    except LearnerCodeRaised:
        return False
    finally:
        torch.set_grad_enabled(True)
    return isinstance(again, str) and again == got and got not in dict(probe.named_modules())


def _nonfinite_case(seed, build):
    """The model and inputs of one case, the answers the reference's pass gives, and the call's text."""
    rng = random.Random(seed)
    width, batch = rng.randint(3, 6), rng.randint(3, 5)
    torch.manual_seed(seed)
    model = build(width)
    inputs = [random_tensor(seed + number, (batch, width)) for number in range(getattr(model, "inputs", 1))]
    if model.head.weight.dtype == torch.float64:
        inputs = [x.double() for x in inputs]
    if getattr(model, "dirty_input", False):
        inputs[0][0, 0], inputs[0][-1, -1] = float("inf"), float("-inf")
    answers = _answers(model, inputs)
    shown = ", ".join(f"{'xy'[number]} of shape {(batch, width)}" for number in range(len(inputs)))
    if inputs[0].dtype == torch.float64:
        shown += ", float64 (and so is the model)"
    if answers["input_nonfinite"]:
        shown += ", holding inf and -inf"
    return model, inputs, answers, f"find_first_nonfinite(model, {shown})"


def _call_find_first_nonfinite(find_first_nonfinite, model, inputs, call_text, build):
    """What find_first_nonfinite returned, and whether the model itself was called through its hooks."""
    with _watching_the_model(model) as model_called:
        try:
            got = _call_learner(find_first_nonfinite, call_text, (model, *[x.clone() for x in inputs]))
        except LearnerCodeRaised as error:
            if isinstance(error.error, TypeError) and "missing 1 required positional argument" in str(error.error):
                fail(f"{call_text} raised TypeError: {error.error}. Pass every positional input on to the "
                     "model (unpack `inputs` with a star), not only the first.", "positional-inputs-dropped")
            if build is _finite_case and ("numel() == 0" in str(error.error) or "empty" in str(error.error).lower()):
                fail(f"{call_text} raised {type(error.error).__name__}: {str(error.error).rstrip('.')}. A layer of "
                     "this model returns an empty tensor (no elements), and another one returns it in a tuple; an "
                     "empty tensor has no non-finite element, so it counts as finite. Test the elements, "
                     "torch.isfinite(t).all(), which is True for an empty tensor.", "empty-tensor-raised")
            raise
    return got, model_called


def _check_nonfinite_answer(find_first_nonfinite, got, answers, call_text, model_called, earlier):
    """The name returned is the first module whose output is not finite (None when every output is finite)."""
    right = answers["right"]
    if type(got) is type(right) and got == right:
        return
    slug, hint = _nonfinite_diagnosis(got, answers, right)
    if right == "" and got is None and not model_called:
        slug, hint = "model-forward-called", (
            " The model itself is the first: its own forward makes the NaN, after every submodule returned finite "
            "outputs. But its hooks never fired: model.forward(...) runs the forward without the hooks of the model "
            "itself. Call the model itself, model(...), as a function.")
    if not hint and isinstance(got, str) and got in earlier and _answer_outlives_the_call(find_first_nonfinite, got):
        slug, hint = "answer-kept-between-calls", (
            f" {got!r} is what an earlier call of find_first_nonfinite found (the checker runs it on several "
            f"models), and it returns {got!r} again for nn.Sequential(nn.Tanh()), which has no module of that name: "
            "keep what a call finds in a variable made inside the function, on every call, not in one that outlives "
            "the call.")
    fail(f"{call_text} returned {describe(got)}; expected {right!r}"
         f"{', since every output is finite' if right is None else ''}.{hint}", slug)


def _check_nonfinite_run(model, call_text, when):
    """`when` "before": the model ran in train mode; "after" the answer: it ran once, with gradients off."""
    if when == "before" and not all(model.probe.training_seen):
        fail(f"{call_text} ran the model in eval mode; the model was in train mode, in which its output differs "
             "(a Dropout, for one, only drops in train mode). Run the model in the mode the caller has it: "
             "torch.no_grad() turns gradients off and leaves the mode alone.", "ran-in-eval-mode")
    if when == "after" and len(model.probe.grad_enabled) > 1:
        fail(f"{call_text} ran the model {len(model.probe.grad_enabled)} times; run it once, with the hook "
             "registered, and take the answer from that pass.", "model-run-more-than-once")
    if when == "after" and any(model.probe.grad_enabled):
        fail(f"{call_text} ran the model with gradients on; run it under torch.no_grad() (forward hooks fire "
             "there too, and no graph is built).", "ran-with-grad")


@check_of("find_first_nonfinite", mistakes={**SHARED_MISTAKES, **NONFINITE_MISTAKES})
def check_find_first_nonfinite(find_first_nonfinite):
    earlier = []  # the answers of the cases before
    for seed, build in _NONFINITE_CASES:
        model, inputs, answers, call_text = _nonfinite_case(seed, build)
        modes_before = _modes(model)
        before = global_hooks()
        modules = list(model.named_modules()) + [("(an unregistered module the model calls)", model.helpers[0])]
        got, model_called = _call_find_first_nonfinite(find_first_nonfinite, model, inputs, call_text, build)
        _check_nothing_left(before, modules, call_text, "returned")
        _check_modes_kept(modes_before, model, call_text, "returned",
                          "Use `with torch.no_grad():`, which puts the caller's grad mode back when the block ends, "
                          "however it ends.")
        _check_nonfinite_run(model, call_text, "before")
        _check_nonfinite_answer(find_first_nonfinite, got, answers, call_text, model_called, earlier)
        earlier.append(answers["right"])
        _check_nonfinite_run(model, call_text, "after")
    _check_raising(find_first_nonfinite, "find_first_nonfinite")


GLOBAL_AND_PREPEND = EventPrediction(
    exercise="predict_global_and_prepend", lesson="07_global_and_kwargs_hooks", code="global_and_prepend_events",
    events=("pre:own", "pre:own, prepend", "pre:global", "forward", "fwd:own", "fwd:own, prepend", "fwd:global"),
    aliases=(("forward", "fwd"), ("prehook", "pre"), ("pre-hook", "pre"), ("pre_hook", "pre")),
    rules=(
        Rule("the layer is called once: each hook fires once, and forward runs once.", repeated=True,
             mistake="hook-fires-twice"),
        Rule("forward runs after every pre-hook, global and own, and before every forward hook.",
             fired=("pre:global", "pre:own, prepend", "pre:own"), predicted=("forward",),
             mistake="forward-before-pre-hooks"),
        Rule("prepend=True only reorders a module's own hooks: global hooks run before all of them, prepended or "
             "not.", fired=("pre:global",), predicted=("pre:own, prepend",), mistake="prepend-before-global"),
        Rule("a global forward pre-hook fires before the module's own pre-hooks, whenever it was registered.",
             fired=("pre:global",), mistake="global-pre-after-own"),
        Rule("a global forward hook fires before the module's own forward hooks too, prepended or not: global "
             "hooks do not wrap around the module's own, they come first on both sides of forward.",
             fired=("fwd:global",), mistake="global-fwd-after-own"),
        Rule("prepend=True puts the hook in front of the module's own hooks registered before it.",
             fired=("pre:own, prepend", "fwd:own, prepend"), mistake="prepend-ignored"),
        Rule("forward runs after every pre-hook, global and own, and before every forward hook.",
             fired=("forward",), mistake="forward-hooks-before-forward"),
    ),
    rule="on each side of forward the global hook comes first, then the module's own hooks, a prepended one in "
         "front of those registered before it.")

ALWAYS_CALL = EventPrediction(
    exercise="predict_always_call", lesson="07_global_and_kwargs_hooks", code="always_call_events",
    events=("pre:model", "pre:broken", "fwd:model", "fwd:broken", "always:model", "always:broken", "global:model",
            "global:ok", "global:broken", "caught"),
    aliases=(("forward", "fwd"), ("always_call", "always"), ("always-call", "always"), ("prehook", "pre"), ("pre-hook", "pre"), ("pre_hook", "pre")),
    rules=(
        Rule("model, ok and broken are each called once: each hook fires at most once, and the except block runs "
             "once.", repeated=True, mistake="hook-fires-twice"),
        Rule("when forward raises, a forward hook registered without always_call=True does not run: there is "
             "no output to give it.", predicted=("fwd:broken", "fwd:model"), mistake="forward-hook-on-raise"),
        Rule("the exception passes out through model's call too: model's forward does not catch it, so model's "
             "always-call hooks run as well, after broken's and before the except block.",
             fired=("global:model", "always:model"), predicted=("caught",), mistake="outer-always-call-missed"),
        Rule("a hook registered with always_call=True runs even when forward raises, before the exception "
             "reaches the caller.", predicted=("caught",), mistake="caught-before-always-call"),
        Rule("the exception leaves the innermost module first: broken's always-call hooks run, then model's, as "
             "the exception passes out through each call.", fired=("global:broken", "always:broken"),
             predicted=("global:model", "always:model"), mistake="outer-module-first"),
        Rule("global forward hooks run before the module's own, on the exception path too.",
             fired=("global:broken", "global:model"), predicted=("always:broken", "always:model"),
             mistake="own-before-global-on-raise"),
        Rule("a global forward hook fires for every module call: first for ok, which returned normally before "
             "broken was called.", fired=("global:ok",), mistake="global-hook-misses-ok"),
        Rule("model's pre-hook fires when model is called, before its forward calls ok and broken.",
             fired=("pre:model",), mistake="model-pre-hook-misplaced"),
    ),
    rule="a call that raises runs only the always-call forward hooks, the global one first, and the exception "
         "passes out through each enclosing call, innermost first, before the except block runs.")

check_predict_global_and_prepend = prediction_check(GLOBAL_AND_PREPEND)
check_predict_always_call = prediction_check(ALWAYS_CALL)
