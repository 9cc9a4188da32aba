"""Checks for lesson 09, pitfalls and debugging."""

import collections
import copy
import random

import torch
import torch.nn.modules.module as module_globals
from torch import nn

from hooked.checks.check_api import LearnerCodeRaised, calling, check_of, fail
from hooked.checks.event_predictions import END, EventPrediction, Rule, prediction_check
from hooked.checks.hooks_left import (MODULE_HOOK_DICTS, PARAMETER_HOOK_DICTS, global_hooks, global_hooks_added,
                                     registered_hooks)
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints
from hooked.checks.isolation import GLOBAL_MODULE_HOOK_DICTS
from hooked.feedback.learner_tracebacks import learner_frame

KINDS = (*MODULE_HOOK_DICTS, *PARAMETER_HOOK_DICTS)
_FLAG_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
_REGISTERED_WITH = {"forward_pre": "register_forward_pre_hook", "forward": "register_forward_hook",
                    "backward_pre": "register_full_backward_pre_hook", "backward": "register_full_backward_hook",
                    "state_dict_pre": "register_state_dict_pre_hook",
                    "state_dict": "register_state_dict_post_hook",
                    "load_state_dict_pre": "register_load_state_dict_pre_hook",
                    "load_state_dict_post": "register_load_state_dict_post_hook",
                    "tensor": "parameter.register_hook",
                    "post_accumulate_grad": "parameter.register_post_accumulate_grad_hook"}


def _hooks_left_message(model, after, globals_before, before=()):
    """Fails if a hook was left on the model or globally, or if a hook registered before (`before`, from
    registered_hooks) is gone."""
    now = registered_hooks(model)
    gone = [(name, kind) for name, kind, hook in before if not any(hook is other for _, _, other in now)]
    if gone:
        fail(f"{after}, hooks that were registered on the model before the call were gone: {gone} as (name, kind). "
             "Remove only the hooks you registered, through their handles; clearing a module's hook dicts also "
             "removes everybody else's.", "removes-others-hooks")
    left = [(name, kind) for name, kind, hook in now if not any(hook is other for _, _, other in before)]
    if left:
        fail(f"{after}, hooks were still registered on the model: {left} as (name, kind). Remove every hook you "
             "registered, also when the forward or backward pass raises: register it in a `with` block, or "
             "remove its handle in a `finally`.", "hook-left-registered")
    added = global_hooks_added(globals_before)
    if added:
        fail(f"{after}, a global module hook was still registered (torch.nn.modules.module.{added[0]} holds a new "
             "one): it fires for every module of every model from now on. Remove every hook you registered, also "
             "when the forward or backward pass raises: register it in a `with` block, or remove its handle in "
             "a `finally`.", "global-hook-left-registered")


# ---------------------------------------------------------------- grad_before_inplace_relu

class _Planted(Exception):
    """Raised by the checker's own module, to test cleanup on errors."""


class _Raises(nn.Module):
    def forward(self, x):
        raise _Planted("the checker's module raised this on purpose")


class _RaiseInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise _Planted("the checker's module raised this on purpose, in backward")


class _RaisesInBackward(nn.Module):
    """Forward passes its input on; the backward pass raises."""

    def forward(self, x):
        return _RaiseInBackward.apply(x)


def _linear_case(rng):
    width, hidden, out = rng.randint(3, 6), rng.randint(4, 8), rng.randint(2, 4)
    model = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, out))
    return model, "0", "1", (rng.randint(2, 5), width)


def _nested_case(rng):
    """The layer between two ReLUs, one of them not in place (its setting must stay False); the first Linear
    frozen (its .grad must stay None)."""
    width, hidden, out = rng.randint(3, 6), rng.randint(4, 8), rng.randint(2, 4)
    model = nn.Sequential(nn.Sequential(nn.Linear(width, hidden), nn.ReLU(inplace=False)),
                          nn.Linear(hidden, hidden), nn.ReLU(inplace=True), nn.Linear(hidden, out))
    model[0][0].requires_grad_(False)
    return model, "1", "2", (rng.randint(2, 5), width)


class _Body(nn.Module):
    """A block (two Linears) followed by an in-place ReLU, one level below the model."""

    def __init__(self, width, hidden):
        super().__init__()
        self.stages = nn.Sequential(nn.Sequential(nn.Linear(width, hidden), nn.Linear(hidden, hidden)),
                                    nn.ReLU(inplace=True))

    def forward(self, x):
        return self.stages(x)


def _deep_case(rng):
    """The layer three levels down (a block, model[1].stages[0]), its in-place ReLU beside it."""
    width, hidden, out = rng.randint(3, 6), rng.randint(4, 8), rng.randint(2, 4)
    model = nn.Sequential(nn.Linear(width, width), _Body(width, hidden), nn.Linear(hidden, out))
    return model, "1.stages.0", "1.stages.1", (rng.randint(2, 5), width)


def _conv_case(rng):
    channels, maps, size, out = rng.randint(1, 3), rng.randint(2, 4), rng.randint(3, 5), rng.randint(2, 3)
    model = nn.Sequential(nn.Conv2d(channels, maps, 3, padding=1), nn.ReLU(inplace=True), nn.Flatten(),
                          nn.Linear(maps * size * size, out)).double().eval()  # float64, in eval mode: both stay
    return model, "0", "1", (rng.randint(1, 3), channels, size, size)


_GRAD_CASES = ((91, _linear_case), (92, _nested_case), (93, _conv_case), (96, _deep_case))
_DEEP_SEED = 96


def _reference_grads(model, layer_name, relu_name, x):
    """(gradient at the layer's output, gradient at the ReLU's output, {parameter name: gradient}), on a copy
    without in-place ReLUs."""
    copied = copy.deepcopy(model)
    for module in copied.modules():
        if isinstance(module, nn.ReLU):
            module.inplace = False
    modules, outputs = dict(copied.named_modules()), {}
    for name in (layer_name, relu_name):
        modules[name].register_forward_hook(lambda module, args, output, name=name: outputs.update({name: output}))
    score = copied(x).sum()
    names, parameters = zip(*[(name, p) for name, p in copied.named_parameters() if p.requires_grad])
    grads = torch.autograd.grad(score, [outputs[layer_name], outputs[relu_name], *parameters])
    return grads[0], grads[1], dict(zip(names, grads[2:]))


def _check_parameter_grads(model, parameter_grads, text):
    """The parameters' .grad must be those of one plain backward pass of model(x).sum()."""
    for name, parameter in model.named_parameters():
        if name not in parameter_grads:  # frozen
            if parameter.grad is not None:
                fail(f"After {text} returned, {name}.grad is {describe(parameter.grad)}; {name} is frozen "
                     "(requires_grad=False), and one backward pass of model(x).sum() leaves its .grad None. Do not "
                     "write .grad yourself: let one backward pass fill the .grad of the others.", "frozen-grad-written")
            continue
        expected = parameter_grads[name]
        if parameter.grad is not None and (parameter.grad.requires_grad or parameter.grad.grad_fn is not None):
            fail(f"After {text} returned, {name}.grad requires grad (it has an autograd graph): backward ran with "
                 "create_graph=True, which keeps a graph in every .grad (and a reference cycle). Call backward() "
                 "on the sum without create_graph.", "create-graph-used")
        if parameter.grad is None:
            fail(f"After {text} returned, {name}.grad is None: call .backward() on model(x).sum() once, as the "
                 "broken code does (torch.autograd.grad does not fill .grad).", "no-backward")
        if close(parameter.grad, expected):
            continue
        if close(parameter.grad, 2 * expected):
            fail(f"After {text} returned, {name}.grad is twice the gradient of one backward pass: run "
                 "model(x).sum().backward() once.", "backward-twice")
        fail(f"After {text} returned, {name}.grad is {describe(parameter.grad)}; one backward pass of "
             f"model(x).sum() gives {describe(expected)}. Your hooks changed the gradients: a tensor hook that "
             "returns a tensor replaces the gradient; return None from it (only record the gradient).",
             "parameter-grads-changed")


def _inplace_settings(model):
    return {name: module.inplace for name, module in model.named_modules() if hasattr(module, "inplace")}


_GRAD_ERROR_HINTS = (  # (text in the error, slug, what it means for grad_before_inplace_relu)
    ("RemovableHandle", "forward-hook-returns-handle",
     "Your forward hook returned the handle of output.register_hook(...) (a lambda returns what its expression "
     "gives), and a forward hook's non-None return replaces the module's output. Write the forward hook with def, so "
     "that it returns None."),
    ("BackwardHookFunction", "full-backward-hook",
     "A full backward hook (or backward pre-hook) on a module followed by an in-place ReLU fails in forward, and so "
     "does one on the in-place ReLU itself. Use a forward hook on the layer that registers a tensor hook on its "
     "output (output.register_hook)."),
    ("One of the differentiated Tensors does not require grad", "differentiates-frozen-parameters",
     "A frozen parameter (requires_grad=False) has no gradient to ask torch.autograd.grad for. Call "
     "model(x).sum().backward() once: it fills the .grad of the parameters that require grad and leaves the frozen "
     "ones None."),
)


def _call_grad(fn, model, layer, layer_name, x):
    text = f"grad_before_inplace_relu(model, model.get_submodule({layer_name!r}), x) with x of shape {tuple(x.shape)}"
    with calling_with_hints(f"calling {text}", _GRAD_ERROR_HINTS):
        return fn(model, layer, x), text


def _check_grad_result(value, expected, at_relu, text, relu_name, deep=""):
    if isinstance(value, (list, tuple)):
        fail(f"{text} returned a {type(value).__name__} of {len(value)} item(s); expected the gradient itself, a "
             f"tensor of shape {tuple(expected.shape)}.", "returned-a-list")
    if not isinstance(value, torch.Tensor):
        fail(f"{text} returned {describe(value)}; expected the gradient, a tensor of shape {tuple(expected.shape)}.",
             "not-a-tensor")
    if close(value, expected):
        if value.dtype != expected.dtype:
            fail(f"{text} returned the right values as {str(value.dtype).removeprefix('torch.')}; the layer's "
                 f"output is {str(expected.dtype).removeprefix('torch.')} here, and so is its gradient: return the "
                 "gradient autograd gives (a tensor of the output's shape and dtype), not a tensor you made.",
                 "wrong-dtype")
        if value.requires_grad or value.grad_fn is not None:
            fail(f"{text} returned a gradient that requires grad (grad_fn {type(value.grad_fn).__name__}): "
                 "backward ran with create_graph=True. Call backward() on the sum without create_graph.",
                 "create-graph-used")
        return
    if deep:
        fail(f"{text} returned {describe(value)}; expected the gradient at the layer's output, {describe(expected)}. "
             f"It worked when layer was a direct child of model; {deep}", "assumes-layer-is-a-child")
    if close(value, at_relu):
        fail(f"{text} returned {describe(value)}, the gradient at the output of the in-place ReLU "
             f"({relu_name!r}); expected the gradient at the layer's own output, {describe(expected)}, which is 0 "
             "where the ReLU cut. The ReLU overwrote the layer's output tensor, so retain_grad() or "
             "torch.autograd.grad on the stored output see the ReLU's gradient. Register a tensor hook on the "
             "output inside a forward hook: it receives the gradient of the value the layer produced.",
             "gradient-after-relu")
    if close(value, torch.ones_like(value)):  # of any shape: the model's output is not the layer's
        fail(f"{text} returned all ones, the gradient of the sum with respect to the model's output; expected the "
             f"gradient at the layer's output, {describe(expected)}.", "gradient-of-output")
    fail(f"{text} returned {describe(value)}; expected the gradient of model(x).sum() with respect to the "
         f"layer's output, {describe(expected)}.", "wrong-gradient")


def _bystander(module, args, output):
    """A forward hook registered before the learner's call, as a learner's own monitor would be: it must stay."""
    return None


def _modes(model):
    return {name or "(model)": module.training for name, module in model.named_modules()}


def _deep_note(layer_name):
    depth = layer_name.count(".") + 1
    return (f"here layer is {depth} levels down, model.get_submodule({layer_name!r}) (a block of its own), and its "
            "in-place ReLU is its neighbour inside another submodule. `layer` may sit at any depth: do not look it "
            "(or its ReLU) up among model.children(), by index, or as the next entry of model.modules(); hook "
            "`layer` itself with a forward hook that registers a tensor hook on its output.")


# What _hooks_left_message names.
HOOKS_LEFT_MISTAKES = {
    "removes-others-hooks": "removes hooks that were registered before the call (clears a module's hook dicts)",
    "hook-left-registered": "leaves a hook of its own registered on the model (also when the pass raises)",
    "global-hook-left-registered": "leaves a global module hook of its own registered",
}
GRAD_MISTAKES = {
    **HOOKS_LEFT_MISTAKES,
    "full-backward-hook": "uses a full backward hook (or backward pre-hook) next to the in-place ReLU, which fails in "
                          "forward",
    "forward-hook-returns-handle": "returns the tensor hook's handle from the forward hook (a lambda), which replaces "
                                   "the layer's output",
    "assumes-layer-is-a-child": "finds the layer (or its ReLU) among the model's children, by index or next entry, "
                                "so a layer deeper down fails",
    "returned-a-list": "returns the gradient inside a list or tuple",
    "not-a-tensor": "returns something other than a tensor",
    "wrong-dtype": "returns the right values in another dtype than the layer's output (a tensor of its own)",
    "create-graph-used": "runs backward with create_graph=True",
    "gradient-after-relu": "returns the gradient at the in-place ReLU's output (retain_grad or autograd.grad on the "
                           "overwritten output)",
    "gradient-of-output": "returns the gradient with respect to the model's output (all ones)",
    "wrong-gradient": "returns a gradient that no diagnosis explains (the input's, a cached one)",
    "frozen-grad-written": "writes the .grad of a frozen parameter",
    "no-backward": "runs no backward pass, so the parameters' .grad stay None",
    "differentiates-frozen-parameters": "asks torch.autograd.grad for the gradients of frozen parameters too",
    "backward-twice": "runs backward twice, so the parameters' .grad are doubled",
    "parameter-grads-changed": "changes the parameters' gradients (a tensor hook that returns a new gradient)",
    "extra-forward-pass": "runs the model more than once",
    "changes-input": "changes the caller's x (requires_grad_ or in place)",
    "changes-train-mode": "changes the model's train/eval mode",
    "changes-inplace-settings": "changes a ReLU's inplace setting and leaves it changed (also when a pass raises)",
    "swallowed-exception": "catches the exception the model raised instead of letting it reach the caller",
}


@check_of("grad_before_inplace_relu", mistakes=GRAD_MISTAKES)
def check_grad_before_inplace_relu(fn):
    for seed, build in _GRAD_CASES:
        torch.manual_seed(seed)
        rng = random.Random(seed)
        model, layer_name, relu_name, shape = build(rng)
        layer, settings = model.get_submodule(layer_name), _inplace_settings(model)
        deep = _deep_note(layer_name) if seed == _DEEP_SEED else ""
        if seed == 93:
            layer.register_forward_hook(_bystander)  # registered before the call: it must stay
        passes = []
        model.register_forward_pre_hook(lambda module, args: passes.append(None))  # the checker's: it stays
        before, modes = registered_hooks(model), _modes(model)
        for call in range(2):  # a second call must report its own gradient, not the first one's
            x = random_tensor(seed * 10 + call, shape, dtype=next(model.parameters()).dtype)
            x_before = x.clone()
            expected, at_relu, parameter_grads = _reference_grads(model, layer_name, relu_name, x)
            model.zero_grad(set_to_none=True)
            globals_before = global_hooks()
            passes.clear()
            try:
                value, text = _call_grad(fn, model, layer, layer_name, x)
            except LearnerCodeRaised as raised:
                if deep:
                    fail(f"grad_before_inplace_relu(model, model.get_submodule({layer_name!r}), x) raised "
                         f"{type(raised.error).__name__}: {_short(raised.error)}. It worked when layer was a direct "
                         f"child of model; {deep}{_learner_line(raised.error)}", "assumes-layer-is-a-child")
                raise
            _check_grad_result(value, expected, at_relu, text, relu_name, deep)
            _check_parameter_grads(model, parameter_grads, text)
            if len(passes) != 1:
                fail(f"{text} ran the model {len(passes)} times (forward passes of model); expected exactly one, "
                     "the one that backward() runs through. Each extra pass changes what a model keeps between passes "
                     "(BatchNorm's running statistics, a dropout's random numbers): take the output's shape and the "
                     "gradient from that one pass, in the hooks.", "extra-forward-pass")
            _hooks_left_message(model, f"After {text} returned", globals_before, before)
            if x.requires_grad or not torch.equal(x, x_before):
                fail(f"After {text} returned, the caller's x was changed ("
                     f"{'it requires grad now' if x.requires_grad else 'its values differ'}): leave x as it was "
                     "(x.clone().requires_grad_() makes a copy of your own, if you need one).", "changes-input")
            if _modes(model) != modes:
                changed = {name: flag for name, flag in _modes(model).items() if flag != modes[name]}
                fail(f"After {text} returned, the model's train/eval mode changed: {changed} (name: training; it "
                     f"was {'training' if modes['(model)'] else 'eval'}). Leave the mode as it was: do not call "
                     "model.train() or model.eval().", "changes-train-mode")
            _check_inplace_settings_kept(model, settings, f"After {text} returned",
                                         "Leave the model as it was: set each inplace back to its own value")
    _check_cleanup_on_error(fn)


def _learner_line(error):
    frame = learner_frame(error)
    return "" if frame is None else f"\n  your code, line {frame[1]}:\n      {frame[2]}"


def _short(error):
    text = " ".join(str(error).split())
    return text if len(text) <= 120 else text[:117] + "..."


def _check_inplace_settings_kept(model, settings, after, advice):
    changed = {name: flag for name, flag in _inplace_settings(model).items() if flag != settings[name]}
    if changed:
        fail(f"{after}, the model's in-place settings changed: {changed} (name: inplace; they were {settings}). "
             f"{advice}, or better, keep the in-place ReLU and capture the gradient with a forward hook that "
             "registers a tensor hook.", "changes-inplace-settings")


def _check_cleanup_on_error(fn):
    for seed, where, model in (
            (94, "forward", nn.Sequential(nn.Linear(4, 5), nn.ReLU(inplace=True), nn.ReLU(inplace=False), _Raises())),
            (95, "backward", nn.Sequential(nn.Linear(4, 5), nn.ReLU(inplace=True), nn.ReLU(inplace=False),
                                           _RaisesInBackward(), nn.Linear(5, 2)))):
        torch.manual_seed(seed)
        model.zero_grad(set_to_none=True)
        settings = _inplace_settings(model)
        text = (f"grad_before_inplace_relu(model, model[0], x) on a model whose module model[3] raises in the "
                f"{where} pass")
        globals_before = global_hooks()
        planted_exception_comes_through(
            f"calling {text}", lambda: fn(model, model[0], random_tensor(seed, (3, 4))),
            lambda error: isinstance(error, _Planted),
            lambda returned: f"{text} returned normally; the exception the model raised in the {where} pass must "
                             "reach the caller.",
            hints=(("BackwardHookFunction", "full-backward-hook",
                    "A full backward hook on a module followed by an in-place ReLU fails in forward. Use a forward "
                    "hook that registers a tensor hook on the output."),))
        _hooks_left_message(model, f"After {text} (the exception reached the caller)", globals_before)
        _check_inplace_settings_kept(model, settings, f"After {text} (the exception reached the caller)",
                                     f"Leave the model as it was also when the {where} pass raises: set inplace "
                                     "back in a `finally`")


# ---------------------------------------------------------------- find_registered_hooks

class _Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return torch.tanh(self.norm(self.linear(x)))


class _Net(nn.Module):
    """Submodules inside nn.ModuleList and nn.ModuleDict, a module reachable under two names (`blocks.0`,
    also `twin`), a weight reachable under two names (`stem.weight`, also `tail.weight`), and a forward
    pass that uses them all."""

    def __init__(self, width, depth):
        super().__init__()
        self.stem = nn.Linear(3, width)
        self.blocks = nn.ModuleList([_Block(width) for _ in range(depth)])
        self.heads = nn.ModuleDict({"main": nn.Linear(width, 2), "aux": nn.Linear(width, 1)})
        self.twin = self.blocks[0]  # a shared module: named_modules() lists it once, as "blocks.0"
        self.tail = nn.Linear(3, width)
        self.tail.weight = self.stem.weight  # tied: named_parameters() lists it once, as "stem.weight"

    def forward(self, x):
        h = self.stem(x) + self.tail(x)
        for block in self.blocks:
            h = block(h)
        h = self.twin(h)
        return self.heads["main"](h).sum() + self.heads["aux"](h).sum()


# A parameter that gets a hook and is frozen afterwards.
_FROZEN_LATER = "heads.aux.bias"

# Where the shared module and the tied weight are registered from: their second names.
_SECOND_NAMES = {"twin": "blocks.0", "tail.weight": "stem.weight"}


def _aliases(model):
    """{every name of a module or parameter: the name named_modules() / named_parameters() gives it}."""
    canonical = {}
    for walk, first in ((model.named_modules(remove_duplicate=False), dict(model.named_modules())),
                        (model.named_parameters(remove_duplicate=False), dict(model.named_parameters()))):
        first_name = {id(value): name for name, value in first.items()}
        canonical.update({name: first_name[id(value)] for name, value in walk})
    return canonical


def _hookable_model(rng):
    return _Net(rng.randint(2, 4), rng.randint(2, 3))


def _new_hook(kind, index, log=None):
    """A distinct function per registration, named for messages; it appends its name to `log`."""
    def hook(*args, **kwargs):
        if log is not None:
            log.append(hook.__name__)
        return None
    hook.__name__ = hook.__qualname__ = f"{kind}_hook_{index}"
    return hook


def _register(model, rng, kind, name, index, log=None, hook=None):
    """Register `hook` (default: a fresh one) as a hook of `kind` on module or parameter `name`;
    returns (handle, hook)."""
    hook = hook or _new_hook(kind, index, log)
    if kind in PARAMETER_HOOK_DICTS:
        parameter = model.get_parameter(name)
        method = parameter.register_hook if kind == "tensor" else parameter.register_post_accumulate_grad_hook
        return method(hook), hook
    module = model.get_submodule(name)
    register = getattr(module, _REGISTERED_WITH[kind])
    options = {}
    if kind in ("forward_pre", "forward"):
        options = {"with_kwargs": rng.random() < 0.5, "prepend": rng.random() < 0.3}
        if kind == "forward":
            options["always_call"] = rng.random() < 0.5
    elif kind in ("backward_pre", "backward"):
        options = {"prepend": rng.random() < 0.3}
    return register(hook, **options), hook


def _hooked_model(seed, log=None):
    """A model with every kind of hook, on the root, inside ModuleList and ModuleDict, some removed again;
    each hook appends its name to `log` when it fires. Returns (model, expected [(name, kind, hook)], handles)."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    model = _hookable_model(rng)
    module_names = [name for name, _ in model.named_modules()]
    deep = [name for name in module_names if name.count(".") >= 1]
    parameter_names = [name for name, _ in model.named_parameters()]
    expected, handles, index = [], [], 0
    for kind in KINDS:
        places = parameter_names if kind in PARAMETER_HOOK_DICTS else module_names
        chosen = [rng.choice([name for name in places if name.count(".") >= 2])]
        if kind not in PARAMETER_HOOK_DICTS:
            chosen += [rng.choice(deep), ""]
        chosen.append(rng.choice(places))
        for number, name in enumerate(chosen):
            handle, hook = _register(model, rng, kind, name, index, log)
            index += 1
            if number == len(chosen) - 1 and rng.random() < 0.5:
                handle.remove()  # a removed hook is not registered any more
                continue
            expected.append((name, kind, hook))
            handles.append(handle)
    # The same function registered twice in one place (a re-run cell) is two registrations.
    for kind in ("forward", "tensor"):
        name, _, hook = next(item for item in expected if item[1] == kind)
        handles.append(_register(model, rng, kind, name, index, log, hook=hook)[0])
        expected.append((name, kind, hook))
    # Hooks registered through the second name of the shared module and of the tied weight: they are
    # found under the first name.
    for kind, second in (("forward_pre", "twin"), ("tensor", "tail.weight")):
        index += 1
        handle, hook = _register(model, rng, kind, second, index, log)
        handles.append(handle)
        expected.append((_SECOND_NAMES[second], kind, hook))
    # A parameter frozen after a hook was registered on it (a fine-tuning script freezing a layer): the hook stays.
    index += 1
    handle, hook = _register(model, rng, "post_accumulate_grad", _FROZEN_LATER, index, log)
    model.get_parameter(_FROZEN_LATER).requires_grad_(False)
    handles.append(handle)
    expected.append((_FROZEN_LATER, "post_accumulate_grad", hook))
    return model, expected, handles


def _hook_counts(model):
    """What the model's hook and flag dicts hold: every (key, the object stored) of each, by identity."""
    dicts = [getattr(module, attribute) for module in model.modules()
             for attribute in (*MODULE_HOOK_DICTS.values(), *_FLAG_DICTS)]
    dicts += [getattr(parameter, attribute, None) for parameter in model.parameters()
              for attribute in PARAMETER_HOOK_DICTS.values()]
    return [None if hooks is None else (id(hooks), [(key, id(value)) for key, value in hooks.items()])
            for hooks in dicts]


def _call_finder(fn, model, what):
    text = f"find_registered_hooks(model) on {what}"
    before = _hook_counts(model)
    with calling(f"calling {text}"):
        try:
            result = fn(model)
        except (AttributeError, TypeError) as error:
            if "NoneType" in str(error):
                fail(f"{text} raised {type(error).__name__}: {error}. A parameter's _backward_hooks (and "
                     "_post_accumulate_grad_hooks) is None until a hook is registered on it: treat None as no "
                     "hooks (getattr(parameter, attribute) or {}).", "parameter-dict-none")
            raise
    if _hook_counts(model) != before:
        fail(f"{text} changed the hooks registered on the model (their dicts now hold other entries, or are other "
             "dicts); it must only report them, not remove, add or replace any.", "changes-hooks")
    if isinstance(result, (str, bytes, dict, torch.Tensor)) or not hasattr(result, "__iter__"):
        fail(f"{text} returned {describe(result)}; expected a list of (name, kind, hook) triples.", "not-a-list")
    if not isinstance(result, list):
        fail(f"{text} returned a {type(result).__name__}, not a list; expected a list of (name, kind, hook) "
             "triples. A generator or a tuple is not [] even when it holds nothing (so `find_registered_hooks(model) "
             "== []` is False for a clean model), and a generator can be read only once: return a list "
             "(list(...) of it).", "iterable-not-a-list")
    for item in result:
        if not isinstance(item, (tuple, list)) or len(item) != 3:
            fail(f"{text} returned a list holding {describe(item)}; every item must be a triple (name, kind, hook).",
                 "not-triples")
    return result, text


def _normalized(kind, hook):
    wrapped = getattr(hook, "hook", None) if kind == "load_state_dict_pre" else None
    return wrapped if callable(wrapped) else hook


def _hook_label(hook):
    return getattr(hook, "__name__", type(hook).__name__)


def _compare_found(result, expected, text, global_hooks=(), aliases=None):
    _judge_reported_values(result, text, global_hooks)
    got = collections.Counter((name, kind, id(_normalized(kind, hook))) for name, kind, hook in result)
    want = collections.Counter((name, kind, id(hook)) for name, kind, hook in expected)
    labels = {id(hook): _hook_label(hook) for name, kind, hook in expected}
    if got == want:
        return
    missing, extra = want - got, got - want
    aliases = aliases or {}
    # Hooks of the shared module or tied weight reported under its second name: told last, so that a walk that
    # also misses other hooks hears about those first.
    shared = [(name, kind, key) for name, kind, key in extra
              if aliases.get(name, name) != name and (aliases[name], kind, key) in want]
    explained = {(aliases[name], kind, key) for name, kind, key in shared if (aliases[name], kind, key) in missing}
    extra = extra - collections.Counter(shared)
    missing = missing - collections.Counter(explained)
    _diagnose_misplaced(missing, extra, got, want, labels, text)
    if extra:
        _diagnose_extra(extra, want, expected, text)
    if missing:
        _missed(result, list(missing), expected, labels, text)
    name, kind, key = shared[0]
    what = "weight" if kind in PARAMETER_HOOK_DICTS else "module"
    also = "too" if (aliases[name], kind, key) in got else f"instead of {aliases[name]!r}"
    fail(f"{text} reported the {kind} hook {labels[key]} under the name {name!r} {also}. {name!r} and "
         f"{aliases[name]!r} are the same {what} (a shared module or tied weight, reachable under two names): "
         f"list it once, under the name model.named_{'parameters' if what == 'weight' else 'modules'}() gives "
         f"it, {aliases[name]!r}. named_modules() and named_parameters() skip the second name; a walk of your "
         "own over named_children() does not.", "reports-second-name")


def _judge_reported_values(result, text, global_hooks):
    """Each reported triple holds a hook (not a flag, nor a key), one of the kinds, and no global hook."""
    flags = [item for item in result if isinstance(item[2], bool)]
    if flags:
        fail(f"{text} reported {[(name, kind, flag) for name, kind, flag in flags][:3]}: {flags[0][2]} is not a hook. "
             "_forward_hooks_with_kwargs, _forward_hooks_always_called and _forward_pre_hooks_with_kwargs hold "
             "flags ({id: True}) for hooks that are already in _forward_hooks or _forward_pre_hooks; read only "
             "the hook dicts.", "reports-flags")
    not_hooks = [item for item in result if not callable(item[2])]
    if not_hooks:
        name, kind, value = not_hooks[0]
        fail(f"{text} reported {(name, kind, value)!r}: {describe(value)} is not a hook. A hook dict maps the "
             "handle's id (its key, an int) to the hook (its value): report the registered function, the dict's "
             "values.", "reports-handle-ids")
    unknown = sorted({str(kind) for name, kind, hook in result if kind not in KINDS})
    if unknown:
        fail(f"{text} reported the kind(s) {unknown}; the kinds are exactly {list(KINDS)}.", "unknown-kind")
    globals_reported = [item for item in result if any(item[2] is hook for hook in global_hooks)]
    if globals_reported:
        fail(f"{text} reported {[(name, kind, _hook_label(hook)) for name, kind, hook in globals_reported][:3]}, "
             "a global hook (torch.nn.modules.module.register_module_*_hook): global hooks fire for every "
             "module but are not registered on the model; leave them out.", "reports-global-hooks")


def _diagnose_misplaced(missing, extra, got, want, labels, text):
    """A hook missed in one place and reported in another: under another name, as another kind; or reported
    fewer times than it is registered."""
    by_hook = {(kind, key): name for name, kind, key in extra}
    kind_by_hook = {(name, key): kind for name, kind, key in extra}
    for name, kind, key in missing:
        if (kind, key) in by_hook:
            fail(f"{text} reported the {kind} hook {labels[key]} under the name {by_hook[(kind, key)]!r}; expected "
                 f"{name!r}, its name in model.named_modules() (or model.named_parameters() for a parameter), "
                 "with \"\" for the model itself.", "wrong-name")
        if (name, key) in kind_by_hook:
            fail(f"{text} reported the hook {labels[key]} on {name!r} as kind {kind_by_hook[(name, key)]!r}; "
                 f"expected {kind!r}: each hook dict has its own kind (see the table of the lesson).", "wrong-kind")
        if not extra and (name, kind, key) in got:
            fail(f"{text} reported the {kind} hook {labels[key]} on {name!r} {got[(name, kind, key)]} time(s); it is "
                 f"registered {want[(name, kind, key)]} times there (the same function registered again, as a "
                 "re-run cell does). One triple per registration: do not remove duplicates.", "drops-duplicates")


def _diagnose_extra(extra, want, expected, text):
    """Fail on the triples `extra`, reported more often than they are registered, or not registered at all."""
    repeated = [(name, kind) for name, kind, key in extra if (name, kind, key) in want]
    if repeated and all(kind in PARAMETER_HOOK_DICTS for name, kind in repeated):
        fail(f"{text} reported the parameter hooks {repeated[:3]} (name, kind) more often than they are "
             "registered: one triple per registration. module.named_parameters() goes down into submodules, so "
             "calling it on every module lists a parameter once more for each module above it; read the "
             "parameters once, with model.named_parameters().", "parameters-per-module")
    if repeated:
        fail(f"{text} reported {repeated[:3]} (name, kind) more often than it is registered: one triple per "
             "registration. A with_kwargs or always_call hook sits once in _forward_hooks (or "
             "_forward_pre_hooks); the flag dicts only mark it.", "reports-hook-twice")
    fail(f"{text} reported {len(extra)} hook(s) that are not registered on the model, e.g. "
         f"{[(name, kind) for name, kind, key in extra][:3]} (name, kind); expected only {len(expected)} "
         "hooks. Did you report removed hooks, or the same module twice?", "reports-unregistered-hooks")


def _missed(result, missing, expected, labels, text):
    frozen = [(name, kind, labels[key]) for name, kind, key in missing if name == _FROZEN_LATER]
    if frozen and len(frozen) == len(missing):
        fail(f"{text} missed {frozen}: {_FROZEN_LATER} was frozen (requires_grad_(False)) after that hook was "
             "registered on it, and the hook is still registered. Read the hook dicts of every parameter, whether "
             "or not it requires grad.", "skips-frozen-parameters")
    kinds_missed = sorted({kind for name, kind, key in missing}, key=KINDS.index)
    module_items = [(name, kind) for name, kind, hook in result if kind in MODULE_HOOK_DICTS]
    missed_below = [(name, kind) for name, kind, key in missing if name and kind in MODULE_HOOK_DICTS]
    if module_items and all(name == "" for name, kind in module_items) and missed_below:
        fail(f"{text} reported only module hooks of the model itself (name \"\"), and missed those of its "
             f"submodules, e.g. {missed_below[:3]}. Visit every submodule at every depth "
             "(inside nn.ModuleList and nn.ModuleDict too) with model.named_modules(), and every parameter with "
             "model.named_parameters().", "root-module-only")
    if all(name == "" for name, kind, key in missing):
        fail(f"{text} missed the {len(missing)} hook(s) registered on the model itself, e.g. "
             f"{[(name, kind, labels[key]) for name, kind, key in missing][:3]}: the model is a module too. "
             "model.named_modules() gives it first, under the name \"\"; do not skip it.", "skips-model-itself")
    hints = []
    for kind in kinds_missed:
        where = ("the parameter's " if kind in PARAMETER_HOOK_DICTS else "the module's ") + \
                (PARAMETER_HOOK_DICTS.get(kind) or MODULE_HOOK_DICTS[kind])
        hints.append(f"{kind} (registered with {_REGISTERED_WITH[kind]}, kept in {where})")
    fail(f"{text} missed {len(missing)} of the {len(expected)} hooks registered, e.g. "
         f"{[(name, kind, labels[key]) for name, kind, key in missing][:3]}. Kinds missed: {'; '.join(hints)}. "
         "Read every hook dict of every module in model.named_modules() and every parameter in "
         "model.named_parameters().", "missed-hooks")


def _register_global_hooks(log=None):
    """One global hook of each kind of torch.nn.modules.module; returns (hooks, handles)."""
    hooks, handles = [], []
    for index, (register, options) in enumerate((
            ("register_module_forward_pre_hook", {}), ("register_module_forward_hook", {"always_call": True}),
            ("register_module_full_backward_pre_hook", {}), ("register_module_full_backward_hook", {}),
            ("register_module_buffer_registration_hook", {}), ("register_module_module_registration_hook", {}),
            ("register_module_parameter_registration_hook", {}))):
        hook = _new_hook("global_" + register[len("register_module_"):-len("_hook")], index, log)
        hooks.append(hook)
        handles.append(getattr(module_globals, register)(hook, **options))
    return hooks, handles


FIND_MISTAKES = {
    "parameter-dict-none": "reads a parameter's hook dict without handling None (no hook registered yet)",
    "changes-hooks": "changes the hooks registered (removes, adds or replaces some)",
    "not-a-list": "returns something other than a list of triples (None, a dict)",
    "iterable-not-a-list": "returns a generator or a tuple instead of a list",
    "not-triples": "returns a list holding something other than (name, kind, hook) triples",
    "reports-flags": "reports the flags of the with_kwargs and always_call dicts as hooks",
    "reports-handle-ids": "reports the hook dicts' keys (the handles' ids) instead of the hooks",
    "unknown-kind": "reports a kind that is not one of the ten",
    "reports-global-hooks": "reports global module hooks as the model's",
    "wrong-name": "reports a hook under another name than named_modules() or named_parameters() gives",
    "wrong-kind": "reports a hook as another kind than its dict's",
    "drops-duplicates": "reports a function registered twice in one place once",
    "parameters-per-module": "reads named_parameters() of every module, so a parameter comes once per module above it",
    "reports-hook-twice": "reports a hook more often than it is registered (a with_kwargs hook through its flag too)",
    "reports-unregistered-hooks": "reports hooks that are not registered (removed ones, a module twice)",
    "reports-second-name": "reports the hooks of a shared module or tied weight under its second name",
    "skips-frozen-parameters": "skips the parameters that do not require grad",
    "root-module-only": "reads the hooks of the model itself only",
    "skips-model-itself": "skips the hooks registered on the model itself",
    "missed-hooks": "misses hooks of some kinds or places",
}


@check_of("find_registered_hooks", mistakes=FIND_MISTAKES)
def check_find_registered_hooks(fn):
    for seed in (95, 96, 97):
        rng = random.Random(seed)
        torch.manual_seed(seed)
        clean = _hookable_model(rng)
        result, text = _call_finder(fn, clean, "a model with no hooks")
        _compare_found(result, [], text)

        global_hooks, global_handles = _register_global_hooks()
        try:
            result, text = _call_finder(fn, clean, "a model with no hooks, while a global hook of each kind is "
                                                   "registered (torch.nn.modules.module.register_module_*_hook)")
        finally:
            for handle in global_handles:
                handle.remove()
        _compare_found(result, [], text, global_hooks=global_hooks)

        model, expected, handles = _hooked_model(seed)
        what = (f"a model with {len(expected)} hooks registered (on the model itself, on modules at every depth, "
                "on a module shared under two names, and on parameters, one of them tied under two names)")
        result, text = _call_finder(fn, model, what)
        _compare_found(result, expected, text, aliases=_aliases(model))

        for handle in handles:
            handle.remove()
        result, text = _call_finder(fn, model, "the same model after every hook's handle was removed")
        _compare_found(result, [], text)


# ---------------------------------------------------------------- remove_all_hooks

_REMOVE_ERROR_HINTS = (  # (text in the error, slug, what it means for remove_all_hooks)
    ("Deletion of", "deletes-parameter-dicts",
     "A parameter's hook dicts cannot be deleted (autograd keeps them): empty each one in place with its clear "
     "method."),
)
REMOVE_MISTAKES = {
    "deletes-parameter-dicts": "deletes a parameter's hook dict (del parameter._backward_hooks), which torch refuses",
    "breaks-model": "leaves the model unable to run (hook dicts set to None or deleted)",
    "skips-model-itself": "removes the hooks of the submodules but not those of the model itself",
    "replaces-parameter-dicts": "sets a parameter's hook dict to None (or a new dict), which leaves the hooks attached",
    "hooks-still-fire": "leaves hooks that still fire (kinds or places it does not visit)",
    "rebinds-hook-dicts": "gives a module a new hook dict instead of emptying the old one in place",
    "removes-global-hooks": "removes or changes the global module hooks, which are not the model's",
    "hooks-left": "leaves hooks in the model's dicts",
    "flags-left": "leaves the entries of the with_kwargs and always_call flag dicts",
    "count-kept-between-calls": "keeps its count between calls",
    "counts-shared-twice": "counts the hooks of the shared module and of the tied weight twice",
    "counts-too-many": "returns a count above the number of hooks registered",
    "wrong-count": "returns something other than the number of registrations removed",
    "breaks-new-hooks": "leaves the model unable to take new hooks as before",
}



def _exercise_model(model, seed):
    """Forward, backward, state_dict and load_state_dict: every kind of hook gets its chance to fire."""
    model.zero_grad(set_to_none=True)
    model(random_tensor(seed, (2, 3)).requires_grad_()).backward()
    model.load_state_dict(model.state_dict())


def _dicts_of(model):
    """[(owner, where, attribute, dict)] for every hook and flag dict of the model's modules and parameters
    (each object once; a parameter's dict only when it is not None)."""
    found = []
    for name, module in model.named_modules():
        for attribute in (*MODULE_HOOK_DICTS.values(), *_FLAG_DICTS):
            found.append((module, f"model.{name}" if name else "model", attribute, getattr(module, attribute)))
    for name, parameter in model.named_parameters():
        for attribute in PARAMETER_HOOK_DICTS.values():
            if getattr(parameter, attribute, None) is not None:
                found.append((parameter, f"model.{name}", attribute, getattr(parameter, attribute)))
    return found


def _global_dicts_with_copies():
    """{name: (the dict, a copy of its entries)} of torch's dicts of global module hooks and flags."""
    return {name: (value, dict(value)) for name, value in GLOBAL_MODULE_HOOK_DICTS.items()}


def _check_in_place(before, text):
    for owner, where, attribute, hooks in before:
        if not isinstance(owner, nn.Module):
            continue  # autograd holds a parameter's dicts: given a new dict, it uses that one and frees the old
        if hooks and getattr(owner, attribute, None) is not hooks:
            fail(f"After {text}, {where}.{attribute} is another object than before, and the dict it held still "
                 f"holds {len(hooks)} hook(s): you rebound the attribute (to a new dict, or None) instead of "
                 "emptying the dict in place. Everything else that holds the old dict still has those hooks (a "
                 "handle, a shallow copy of the module such as copy.copy makes, which shares its hook dicts); empty "
                 "each module dict in place with its clear method.", "rebinds-hook-dicts")


def _check_new_hooks_work(model, seed, text):
    """A hook of each kind registered again (on model.stem and model.stem.bias) fires once."""
    log, handles = [], []
    rng = random.Random(seed)
    try:
        for index, kind in enumerate(KINDS):
            name = "stem.bias" if kind in PARAMETER_HOOK_DICTS else "stem"
            doing = f"registering a {kind} hook on model.{name} after {text}"
            try:
                handles.append(_register(model, rng, kind, name, 100 + index, log)[0])
            except Exception as error:
                fail(f"{doing} raised {type(error).__name__}: {error} The model must take new hooks as before: "
                     "empty the hook dicts and flag dicts, and change nothing else (such as _is_full_backward_hook).",
                     "breaks-new-hooks")
        _exercise_model(model, seed)
    finally:
        for handle in handles:
            handle.remove()
    counts = collections.Counter(name.rsplit("_hook_", 1)[0] for name in log)
    wrong = {kind: counts.get(kind, 0) for kind in KINDS if counts.get(kind, 0) != 1}
    if wrong:
        fail(f"After {text}, hooks registered again on model.stem (and model.stem.bias) fired {wrong} times (kind: "
             "firings) when the model ran forward, backward and load_state_dict(state_dict()); expected once each: "
             "the model must take new hooks as before.", "breaks-new-hooks")


@check_of("remove_all_hooks", mistakes=REMOVE_MISTAKES)
def check_remove_all_hooks(fn):
    previous = None  # the count the call before returned
    for seed in (98, 99):
        log, global_log = [], []
        model, expected, handles = _hooked_model(seed, log)
        dicts_before = _dicts_of(model)
        text = (f"remove_all_hooks(model) on a model with {len(expected)} hooks (on the model itself, on modules at "
                "every depth, on a module shared under two names, and on parameters, one of them tied under two "
                "names)")
        count, globals_before, globals_after, fired_globally = _remove_and_run(fn, model, seed, text, global_log)
        _judge_nothing_fired(model, log, text)
        _check_in_place(dicts_before, text)
        _judge_globals_kept(globals_before, globals_after, fired_globally, text)
        _judge_nothing_left(model, text)
        _judge_count(count, expected, previous, text)
        previous = count
        try:
            for handle in handles:
                handle.remove()  # the handles kept from before still work: they find nothing to remove
        except Exception as error:  # (a handle finds its dict by a weak reference: no known mistake gets here)
            fail(f"After {text}, removing a hook through a handle kept from before raised {type(error).__name__}: "
                 f"{error}. Empty the hook dicts; leave them dicts.", None)
        _check_new_hooks_work(model, seed, text)


def _remove_and_run(fn, model, seed, text, global_log):
    """Call remove_all_hooks(model) while a global hook of each kind is registered, then run the model.
    Returns (its count, the global dicts before and after the call, whether the global forward hook fired)."""
    global_hooks, global_handles = _register_global_hooks(global_log)
    globals_before = _global_dicts_with_copies()
    try:
        with calling_with_hints(f"calling {text}", _REMOVE_ERROR_HINTS):
            count = fn(model)
        globals_after = _global_dicts_with_copies()
        try:
            _exercise_model(model, seed)
        except Exception as error:
            fail(f"After {text}, the model no longer runs: forward, backward or load_state_dict raised "
                 f"{type(error).__name__}: {error}. Empty the hook dicts in place (dict.clear()); do not replace "
                 "them with None or delete them.", "breaks-model")
        fired_globally = "global_forward_hook_1" in global_log
    finally:
        for handle in global_handles:
            handle.remove()
    return count, globals_before, globals_after, fired_globally


def _judge_nothing_fired(model, log, text):
    """No hook of the model fired when it ran after the call."""
    if not log:
        return
    fired = sorted(set(log))
    left = registered_hooks(model)
    if left and all(name == "" for name, kind, hook in left):
        fail(f"After {text}, the model's own hooks (registered on the model itself, name \"\") still fired "
             f"when the model ran: {fired[:5]}. The model is a module too: model.modules() gives it first, "
             "while a walk over model.children() or model._modules starts below it.", "skips-model-itself")
    on_parameters = [name for name in fired if name.startswith(tuple(PARAMETER_HOOK_DICTS))]
    kinds_left = sorted({kind for _, kind, _ in left}, key=KINDS.index)
    still_held = [kind for kind in kinds_left if kind in PARAMETER_HOOK_DICTS]
    hint = ""
    if kinds_left:
        hint += (f" Still in their dicts: hooks of the kind(s) {kinds_left} (kept in "
                 f"{', '.join(sorted({(MODULE_HOOK_DICTS | PARAMETER_HOOK_DICTS)[kind] for kind in kinds_left}))}).")
    replaced = on_parameters and not still_held  # a parameter's dict replaced: autograd still holds the old one
    if replaced:
        hint += (" Empty a parameter's hook dicts with the dict's clear method: setting "
                 "parameter._post_accumulate_grad_hooks to None leaves the hook attached (autograd keeps the "
                 "old dict).")
    fail(f"After {text}, these hooks still fired when the model ran forward, backward and "
         f"load_state_dict(state_dict()): {fired[:5]}. Remove every hook of the ten kinds, on the model "
         f"itself and on every submodule and parameter.{hint}",
         "replaces-parameter-dicts" if replaced else "hooks-still-fire")


def _judge_globals_kept(globals_before, globals_after, fired_globally, text):
    """Global hooks are not the model's: they stay registered, and torch's global dicts unchanged."""
    if not fired_globally:
        fail(f"After {text}, a global forward hook (torch.nn.modules.module.register_module_forward_hook) no "
             "longer fired: global hooks are not the model's; leave them registered.", "removes-global-hooks")
    changed = [name for name, (hooks, entries) in globals_before.items()
               if globals_after[name][0] is not hooks or globals_after[name][1] != entries]
    if changed:
        counts = ", ".join(f"torch.nn.modules.module.{name} (it held {len(globals_before[name][1])}, then "
                           f"{len(globals_after[name][1])})" for name in changed)
        fail(f"After {text}, torch's global hook dicts changed: {counts}. Global hooks are not the model's; "
             "leave them registered, and leave torch's global dicts alone.", "removes-global-hooks")


def _judge_nothing_left(model, text):
    """No hook, and no flag entry, left in the model's dicts."""
    left = registered_hooks(model)
    if left:
        fail(f"After {text}, the model still holds hooks: {[(name, kind) for name, kind, hook in left][:4]} "
             "(name, kind).", "hooks-left")
    flags = [(name, attribute) for name, module in model.named_modules() for attribute in _FLAG_DICTS
             if getattr(module, attribute)]
    if flags:
        fail(f"After {text}, flag dicts still hold entries for removed hooks: {flags[:3]} (module, dict). A "
             "with_kwargs or always_call forward hook also leaves an {id: True} entry there; clear those too.",
             "flags-left")


def _judge_count(count, expected, previous, text):
    """The count returned: one per registration removed (`previous`: what the call before returned)."""
    if not isinstance(count, bool) and isinstance(count, int) and count == len(expected):
        return
    why, slug = "", "wrong-count"
    if isinstance(count, int) and not isinstance(count, bool) and count > len(expected):
        why, slug = _diagnose_count_too_high(count, expected, previous)
    fail(f"{text} returned {describe(count)}; expected the number of hooks it removed, {len(expected)} "
         f"(one per registration; the flag entries do not count).{why}", slug)


def _diagnose_count_too_high(count, expected, previous):
    """(what to add to the message, slug) for a count above the number of registrations."""
    on_shared = sum(1 for name, _, _ in expected if name == "blocks.0" or name.startswith("blocks.0."))
    on_tied = sum(1 for name, _, _ in expected if name == "stem.weight")
    if previous is not None and count == previous + len(expected):
        return (f" That is this call's {len(expected)} plus the {previous} of the call before: the count is kept "
                "between calls (in a global or an attribute). Count from 0 in each call.", "count-kept-between-calls")
    if count - len(expected) in {on_shared, on_tied, on_shared + on_tied}:
        return (" The shared module (model.blocks.0, also model.twin) and the tied weight (model.stem.weight, "
                "also model.tail.weight) are one object each: count their hooks once.", "counts-shared-twice")
    return " That is more hooks than were registered.", "counts-too-many"


# Recording this log costs 0.75-0.85 s of CPU the first time in a process (then 2 ms): on torch
# 2.13 checkpoint() itself is @torch._disable_dynamo, which imports torch._dynamo on its first
# call, in both modes; with that wrapper skipped as the optimizers' is (hooked/checks/optimizers.py)
# the reentrant mode costs 235 ms and imports nothing, but the non-reentrant one still imports
# torch._dynamo (739 ms): it reads torch._dynamo.config.error_on_nested_fx_trace whatever the caller
# does, which no supported setting avoids short of faking torch's modules. So the recorded log is
# kept between runs (hooked.checks.recorded_logs): a learner's first run pays the import, later ones do
# not, and only for a prediction of known events (a stub or a malformed one records nothing).
CHECKPOINT_RECOMPUTE = EventPrediction(
    exercise="predict_checkpoint_recompute", lesson="09_pitfalls", code="checkpoint_events",
    events=("forward:reentrant", "backward:reentrant", "forward:non-reentrant", "backward:non-reentrant",
            "fwd:first", "fwd:last", "grad:x"),
    aliases=(("fwd", "forward"), ("bwd", "backward"), ("tensor", "grad")),
    rules=(
        Rule("with use_reentrant=False, recomputation stops as soon as the last tensor that backward saved is "
             "recomputed (early stop, the default): that happens inside the last layer's forward, before it "
             "returns, so the last layer's forward hook does not fire again.", fired=("grad:x",),
             predicted=("fwd:last",), after=("backward:non-reentrant",), mistake="non-reentrant-recomputes-all"),
        Rule("the loop runs each mode once: each forward: and backward: line logs once per mode, the tensor hook "
             "on x fires once per backward, and each forward hook at most once per run of the block, in forward or "
             "in recomputation.", repeated=True, mistake="event-repeated"),
        Rule("checkpoint keeps no activations: backward runs the checkpointed block again to recompute them, "
             "and the forward hooks of its layers fire again during that recomputation, in both modes "
             "(pytorch/pytorch#81296).", fired=("fwd:first",), predicted=("grad:x", "forward:non-reentrant", END),
             mistake="no-recomputation"),
        Rule("use_reentrant=True recomputes by running the whole block again, so every layer's forward hook fires "
             "again, the last one's too; only use_reentrant=False stops early.", fired=("fwd:last",),
             predicted=("grad:x",), after=("backward:reentrant",), before=("forward:non-reentrant",),
             mistake="reentrant-stops-early"),
        Rule("recomputation is a forward pass: it runs the block from its start, first before last.",
             fired=("fwd:first",), predicted=("fwd:last",), mistake="recomputes-in-reverse"),
        Rule("the checkpointed forward runs the block as usual, hooks and all, in both modes.",
             fired=("fwd:first", "fwd:last"), predicted=("backward:reentrant", "backward:non-reentrant", "grad:x"),
             mistake="checkpoint-skips-hooks"),
    ),
    rule="checkpoint runs the block in forward, then again in backward to recompute what it did not keep: the "
         "reentrant mode runs all of it, the non-reentrant mode stops once every saved tensor is back.")

check_predict_checkpoint_recompute = prediction_check(CHECKPOINT_RECOMPUTE)
