"""Checks for lesson 06, a CNN's feature maps and Grad-CAM: on small random CNNs from fixed seeds,
then on the lesson's CNN as trained in the lesson (stored, with a few test digits, by
hooked.checks.trained_digits_cnn: training in a check would be too slow). The references are
computed on copies of the models."""

import collections
import random

import torch
import torch.nn.functional as F
from torch import nn

from hooked.checks.check_api import LearnerCodeRaised, calling, check_of, fail
from hooked.checks import trained_digits_cnn
from hooked.checks.grad_cam_reference import activation_and_gradient, cam_of, twin_without_in_place
from hooked.checks.hooks_left import GLOBAL_MODULE_HOOKS, MODULE_HOOK_DICTS
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints


# ---------------------------------------------------------------- models

class _GradModeProbe(nn.Module):
    """Passes its input on and records whether grad mode was on when it ran."""

    def __init__(self):
        super().__init__()
        self.grad_mode = []

    def forward(self, x):
        self.grad_mode.append(torch.is_grad_enabled())
        return x


def _flat_size(channels, height, width, padding, pool):
    height, width = height + 2 * padding - 2, width + 2 * padding - 2
    if pool:
        height, width = height // 2, width // 2
    return channels * height * width


def _small_cnn(rng, height, width, padding):
    """probe -> conv -> in-place ReLU -> max-pool -> flatten -> linear, named as in the lesson's stack."""
    in_channels, channels, classes = rng.randint(1, 3), rng.randint(3, 6), rng.randint(3, 5)
    model = nn.Sequential(collections.OrderedDict(
        probe=_GradModeProbe(),
        conv=nn.Conv2d(in_channels, channels, kernel_size=3, padding=padding),
        relu=nn.ReLU(inplace=True),
        pool=nn.MaxPool2d(2, 2),
        flatten=nn.Flatten(),
        head=nn.Linear(_flat_size(channels, height, width, padding, pool=True), classes),
    ))
    return model, in_channels, classes


def _lesson_cnn(rng, height, width, padding):
    """The lesson's stack: Conv2d(1, 16, 3, padding=1) -> in-place ReLU -> MaxPool2d(2, 2) -> a linear head."""
    model = nn.Sequential(collections.OrderedDict(
        probe=_GradModeProbe(),
        conv=nn.Conv2d(1, 16, kernel_size=3, padding=padding),
        relu=nn.ReLU(inplace=True),
        pool=nn.MaxPool2d(2, 2),
        flatten=nn.Flatten(),
        head=nn.Linear(_flat_size(16, height, width, padding, pool=True), 10),
    ))
    return model, 1, 10


def _nested_cnn(rng, height, width, padding):
    """Two conv blocks inside `features`, each conv followed by an in-place ReLU."""
    in_channels, channels, classes = rng.randint(1, 3), rng.randint(3, 5), rng.randint(3, 5)
    features = nn.Sequential(nn.Conv2d(in_channels, channels, 3, padding=1), nn.ReLU(inplace=True),
                             nn.Conv2d(channels, channels, 3, padding=padding), nn.ReLU(inplace=True))
    model = nn.Sequential(collections.OrderedDict(
        probe=_GradModeProbe(), features=features, flatten=nn.Flatten(),
        head=nn.Linear(_flat_size(channels, height, width, padding, pool=False), classes)))
    return model, in_channels, classes


def _shared_cnn(rng, height, width, padding):
    """One conv used twice (the same object under two names), each call followed by an in-place ReLU."""
    channels, classes = rng.randint(2, 4), rng.randint(3, 5)
    conv = nn.Conv2d(channels, channels, 3, padding=1)
    model = nn.Sequential(collections.OrderedDict(
        probe=_GradModeProbe(), conv=conv, relu=nn.ReLU(inplace=True), again=conv, relu2=nn.ReLU(inplace=True),
        flatten=nn.Flatten(), head=nn.Linear(channels * height * width, classes)))
    return model, channels, classes


class _FailsBeforeLayer(nn.Module):
    """Raises before its conv runs (as a model does when x has the wrong number of channels for an
    earlier layer)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3, padding=1)

    def forward(self, x):
        raise ValueError("forward failed before the layer, on purpose")


class _FailsAfterLayer(nn.Module):
    """Runs its conv, then raises."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        self.relu(self.conv(x))
        raise ValueError("forward failed after the layer, on purpose")


# (seed, build, (height, width), padding, layer name, the in-place ReLU after the layer or None, train mode)
_CASES = (
    (601, _small_cnn, (8, 10), 1, "conv", "relu", True),
    (602, _small_cnn, (11, 10), 0, "pool", None, False),  # 4x4 maps upsampled to 11x10
    (603, _nested_cnn, (7, 9), 0, "features.2", "features.3", True),
    (604, _small_cnn, (9, 7), 1, "relu", None, False),  # the in-place ReLU itself
    (613, _lesson_cnn, (28, 28), 1, "conv", "relu", False),
)


def _build(seed, build, size, padding, train):
    torch.manual_seed(seed)
    model, in_channels, classes = build(random.Random(seed), *size, padding)
    model.train(train)
    return model, in_channels, classes


def _layer_text(name):
    """How the learner writes the layer: model.conv, model.features[2], model[0]; model for the root."""
    return "model" + "".join(f"[{part}]" if part.isdigit() else f".{part}" for part in name.split(".") if part)


_TRAINED = "the lesson's CNN, trained"


_HOOK_KINDS = tuple(MODULE_HOOK_DICTS[kind] for kind in ("forward", "forward_pre", "backward", "backward_pre"))


def _registered_hooks(model):
    """{(module name, kind): {hook id: hook}} of every module's hook dicts, and {(None, kind): ...} of the
    global module hooks (torch.nn.modules.module.register_module_forward_hook and the like)."""
    found = {(name, kind): dict(getattr(module, kind)) for name, module in model.named_modules() for kind in _HOOK_KINDS}
    found.update({(None, kind): dict(hooks) for kind, hooks in GLOBAL_MODULE_HOOKS.items()})
    return found


def _hooks_left(model, before=None):
    """Names (and kinds) of modules that hold hooks of any kind not in `before` (the caller's own,
    from _registered_hooks), and of parameters that hold tensor hooks."""
    before = before or {}
    left = [f"the global module hooks ({kind.strip('_')}, e.g. register_module_forward_hook)"
            for kind, hooks in GLOBAL_MODULE_HOOKS.items() if set(hooks) - set(before.get((None, kind), {}))]
    for name, module in model.named_modules():
        for kind in _HOOK_KINDS:
            if set(getattr(module, kind)) - set(before.get((name, kind), {})):
                left.append(f"{name or 'the model'} ({kind.strip('_')})")
    left += [f"parameter {name} (tensor hook)" for name, parameter in model.named_parameters()
             if parameter._backward_hooks]
    return left


def _check_callers_hooks_kept(model, before, call_text):
    """The hooks the caller had registered (`before`) are all still there, the same objects."""
    gone = [f"{'the global module hooks' if name is None else name or 'the model'} ({kind.strip('_')})"
            for (name, kind), hooks in before.items() for key, hook in hooks.items()
            if (GLOBAL_MODULE_HOOKS[kind] if name is None else getattr(model.get_submodule(name), kind)).get(key)
            is not hook]
    if gone:
        fail(f"{call_text} removed hooks that the caller had registered before the call, on {gone}. Remove only "
             "the hook you registered, through its handle (handle.remove(), or the handle as a context manager); "
             "emptying a module's hook dict (module._forward_hooks.clear()) takes the caller's hooks too.",
             "callers-hooks-removed")


def _modes(model):
    return [module.training for module in model.modules()]


def _mode_name(training):
    return "train" if training else "eval"


def _check_clean(model, modes, call_text, before=None):
    if before:
        _check_callers_hooks_kept(model, before, call_text)
    left = _hooks_left(model, before)
    if left:
        fail(f"After {call_text}, hooks were still registered on {left}. Remove every hook you register before "
             "returning: the handle is a context manager (register the hook in a `with` statement), or call "
             "handle.remove() in a `finally:` block.", "hook-left-registered")
    if model.training != modes[0]:
        fail(f"{call_text} left the model in {_mode_name(model.training)} mode; it was in {_mode_name(modes[0])} "
             "mode. Leave the model's mode as it was: don't call model.eval() or model.train() (or put the old "
             "mode back before returning).", "mode-changed")
    if _modes(model) != modes:
        changed = [f"{name} (was {_mode_name(was)}, now {_mode_name(module.training)})"
                   for (name, module), was in zip(model.named_modules(), modes) if module.training != was]
        fail(f"{call_text} changed the mode of submodules: {', '.join(changed)}. The model's modules were not all in "
             "the same mode, and model.train(mode) sets every submodule to one mode. Leave the modes alone (no "
             "model.eval() / model.train()), or put back each module's own mode.", "submodule-modes-changed")


# ---------------------------------------------------------------- get_activation

_CLEAN_MISTAKES = {
    "callers-hooks-removed": "removes hooks the caller had registered (emptying a module's hook dict)",
    "hook-left-registered": "leaves its hook registered after returning",
    "mode-changed": "leaves the model in another mode (model.eval() or model.train() without putting it back)",
    "submodule-modes-changed": "sets every submodule to one mode, changing those that were in another",
}
_RAISING_FORWARD_MISTAKES = {
    "exception-swallowed": "catches the exception the model's forward raised instead of letting it through",
    "exception-replaced": "lets an exception other than the model's own reach the caller",
    "hook-left-on-exception": "leaves its hook registered when the model's forward raises",
    "requires-grad-changed-on-exception": "changes the parameters' requires_grad and leaves them so when forward "
                                          "raises",
}
_ACTIVATION_MISTAKES = {
    **_CLEAN_MISTAKES, **_RAISING_FORWARD_MISTAKES,
    "every-call-kept": "returns a list of every call's output of a layer that runs twice, instead of the last",
    "not-a-tensor": "returns something other than the captured tensor",
    "not-detached": "returns a tensor that is still part of an autograd graph",
    "dtype-changed": "returns the output converted to another dtype",
    "earlier-call-kept": "returns the output of an earlier call of a layer that runs twice, instead of the last",
    "hook-returned-a-value": "the forward hook returns its copy, which replaces the layer's output",
    "not-cloned": "keeps output.detach() without cloning it, so the in-place ReLU after the layer overwrites it",
    "first-sample-only": "returns the output of the first sample of the batch only",
    "layer-input": "returns the layer's input instead of its output",
    "model-output": "returns the model's output instead of the layer's",
    "other-layer": "returns the output of another layer (the last of its kind, say)",
    "wrong-activation-value": "returns a value that is not the layer's output",
    "grad-mode-left-off": "leaves grad mode off after returning",
    "grad-mode-turned-on": "turns grad mode on when it was called with grad mode off",
    "root-not-hooked": "leaves the model itself out when `layer` is the model, so nothing is captured",
    "model-not-run": "never runs the model's forward pass (calls the layer itself)",
    "forward-with-grad": "runs the forward pass with grad mode on, building a graph it never uses",
}



def _true_activation(model, name, x):
    """What the layer produced, on a copy whose ReLUs are not in place."""
    twin = twin_without_in_place(model)
    kept = {}
    calls = []
    twin.get_submodule(name).register_forward_hook(lambda module, args, output: calls.append(
        (args[0].detach().clone(), output.detach().clone())))
    with torch.no_grad():
        out = twin(x)
    kept.update(inputs=calls[-1][0], output=calls[-1][1], outputs=[output for _, output in calls])
    return kept["output"], kept["inputs"], out, kept["outputs"]


def _outputs_of_modules(model, x):
    """{name: output} of every module of a copy of the model whose ReLUs are not in place."""
    twin = twin_without_in_place(model)
    outputs = {}
    for name, module in twin.named_modules():
        module.register_forward_hook(lambda m, args, output, name=name: outputs.setdefault(
            name, output.detach().clone() if isinstance(output, torch.Tensor) else output))
    with torch.no_grad():
        twin(x)
    return outputs


def _check_activation_value(value, expected, layer_input, model_output, relu_after, said, others=dict, calls=(),
                            replaced=False):
    """What get_activation returned against the layer's output (`expected`), then the diagnoses of a wrong one."""
    if isinstance(value, (list, tuple)) and len(calls) > 1:
        fail(f"{said} returned a {type(value).__name__} of {len(value)} element(s); `layer` runs {len(calls)} times "
             "during model(x) here (one module used twice), and the result is one tensor: the output of its last "
             "call. Keep only the latest output in the hook (overwrite it on each call).", "every-call-kept")
    if not isinstance(value, torch.Tensor):
        fail(f"{said} returned {describe(value)}; expected the layer's output, {describe(expected)}. Return the "
             "tensor your hook captured.", "not-a-tensor")
    if value.requires_grad or value.grad_fn is not None:
        fail(f"{said} returned a tensor that is still part of an autograd graph (requires_grad="
             f"{value.requires_grad}); return it detached, from a forward pass run under torch.no_grad().",
             "not-detached")
    if close(value, expected):
        if value.dtype != expected.dtype:
            fail(f"{said} returned {describe(value)}; expected the layer's output as it is, {describe(expected)}, in "
                 f"its dtype {expected.dtype}: keep output.detach().clone(), without converting it.", "dtype-changed")
        return
    _diagnose_wrong_activation(value, expected, layer_input, model_output, relu_after, said, others, calls, replaced)


def _diagnose_wrong_activation(value, expected, layer_input, model_output, relu_after, said, others, calls, replaced):
    """Fail for `value`, a detached tensor that is not the layer's output: which mistake gives it."""
    if len(calls) > 1 and any(close(value, output) for output in calls[:-1]):
        first = next(number for number, output in enumerate(calls, start=1) if close(value, output))
        fail(f"{said} returned {describe(value)}, the output of call {first} of {len(calls)}: `layer` runs "
             f"{len(calls)} times during model(x) here (one module used twice), and the result is the output of "
             "its last call. Overwrite what the hook keeps on every call (don't keep only the first, and don't "
             "remove the hook once it has fired).", "earlier-call-kept")
    if relu_after and replaced and close(value, expected.relu()):
        fail(f"{said} returned {describe(value)}: the layer's output after the in-place ReLU that follows the "
             f"layer; the layer produced {describe(expected)}. Your forward hook returned a value (a lambda whose "
             "expression gives a tensor, such as dict.setdefault(...)), and a forward hook's return replaces the "
             "layer's output: the model went on with your copy, and the in-place ReLU overwrote it. Make the hook "
             "return None (a def whose body stores the copy).", "hook-returned-a-value")
    if relu_after and close(value, expected.relu()):
        fail(f"{said} returned {describe(value)}: the layer's output after the in-place ReLU that follows the "
             f"layer overwrote it; the layer produced {describe(expected)}. output.detach() shares memory with "
             "the output: keep output.detach().clone().", "not-cloned")
    if expected.dim() > 1 and len(expected) > 1 and close(value, expected[0]):
        fail(f"{said} returned {describe(value)}, the output for the first sample only; expected the layer's output "
             f"for the whole batch, {describe(expected)}. Keep the output as the hook receives it (no [0]).",
             "first-sample-only")
    if close(value, layer_input):
        fail(f"{said} returned {describe(value)}, the layer's input (args[0]); expected its output, "
             f"{describe(expected)}.", "layer-input")
    if close(value, model_output):
        fail(f"{said} returned {describe(value)}, the model's output; expected the output of `layer`, "
             f"{describe(expected)}, captured by a forward hook on that layer.", "model-output")
    for other, output in others().items():
        if isinstance(output, torch.Tensor) and close(value, output):
            fail(f"{said} returned {describe(value)}, the output of {_layer_text(other)}; expected the output of the "
                 f"layer passed in, {describe(expected)}. Hook `layer` itself, not the modules of its kind.",
                 "other-layer")
    fail(f"{said} returned {describe(value)}; expected the layer's output, {describe(expected)}.",
         "wrong-activation-value")


def _check_raising_forward(get_activation):
    torch.manual_seed(605)
    x = random_tensor(606, (1, 1, 5, 6))
    for model, when in ((_FailsAfterLayer(), "after model.conv"), (_FailsBeforeLayer(), "before model.conv runs")):
        _check_raises_and_cleans(get_activation, model, x,
                                 f"get_activation(model, model.conv, x) with a model whose forward raises ValueError "
                                 f"{when}")


def _other_exception_hint(error):
    """(slug, hint) for an exception other than the model's own ValueError."""
    if isinstance(error, ValueError):
        return "exception-replaced", ("That is not the model's own ValueError; let the exception of the forward "
                                      "pass through as it is.")
    return "exception-replaced", ("Expected the model's ValueError to reach the caller unchanged. Don't catch the "
                                  "exception; remove the hook in a `finally:` block (or a `with` block) and let it "
                                  "go on.")


def _check_raises_and_cleans(function, model, x, call_text, *more):
    """`function(model, model.conv, x, *more)` lets the model's own ValueError through, leaves no hook and
    leaves each parameter's requires_grad as it was."""
    requires_grad, before = [p.requires_grad for p in model.parameters()], _registered_hooks(model)
    planted_exception_comes_through(
        f"calling {call_text}", lambda: function(model, model.conv, x, *more),
        planted=lambda error: isinstance(error, ValueError) and "on purpose" in str(error),
        returned_normally=lambda result: (f"{call_text} returned {describe(result)}, but model(x) raised ValueError; "
                                          "let the exception reach the caller (don't catch it).",
                                          "exception-swallowed"),
        hints=(_other_exception_hint,))
    left = _hooks_left(model, before)
    if left:
        fail(f"{call_text}: the ValueError came through, but hooks were left on {left}. When forward raises, "
             "the lines after model(x) don't run (and a hook that removes itself when it fires never fires if "
             "forward raises before the layer): remove the hook in a `finally:` block, or register it in a "
             "`with` statement (the handle is a context manager).", "hook-left-on-exception")
    if [p.requires_grad for p in model.parameters()] != requires_grad:
        fail(f"{call_text}: the ValueError came through, but parameters' requires_grad had changed (the model's "
             "parameters were frozen). Leave each parameter's requires_grad as it was, also when forward raises.",
             "requires-grad-changed-on-exception")


def _nothing_captured_at_the_root(error):
    """(slug, hint) for a lookup that failed when `layer` is the model itself: its hook never fired."""
    if isinstance(error, (LookupError, UnboundLocalError)):
        return "root-not-hooked", (
            "`layer` is the model itself here, which named_modules() lists first under the name '': a forward hook on "
            "it fires too, once the model's forward has returned. Did your code leave the model out (skipping the "
            "name '', say), so that nothing was captured? Hook `layer` itself, whatever module it is.")
    return None


_ROOT_HINTS = (_nothing_captured_at_the_root,)


def _activation_case(get_activation, model, name, relu_after, x, what="", grad_mode=True):
    expected, layer_input, model_output, calls = _true_activation(model, name, x)
    modes, before = _modes(model), _registered_hooks(model)
    call_text = f"get_activation(model, {_layer_text(name)}, x) with x of shape {tuple(x.shape)}{what}"
    # Where the in-place ReLU wrote: into the layer's own output, or into a tensor a hook returned instead.
    seen, probes = {}, []
    if relu_after:
        probes = [model.get_submodule(name).register_forward_hook(
                      lambda module, args, output: seen.update(produced=output.data_ptr()), prepend=True),
                  model.get_submodule(relu_after).register_forward_pre_hook(
                      lambda module, args: seen.update(overwritten=args[0].data_ptr()))]
        before = _registered_hooks(model)
    try:
        with calling_with_hints(f"calling {call_text}", _ROOT_HINTS if name == "" else ()), \
                torch.set_grad_enabled(grad_mode):
            value = get_activation(model, model.get_submodule(name), x)
            grad_mode_after = torch.is_grad_enabled()
    finally:
        for probe in probes:
            probe.remove()
    if probes:
        before = {key: {i: hook for i, hook in hooks.items() if all(i != probe.id for probe in probes)}
                  for key, hooks in before.items()}
    replaced = "overwritten" in seen and seen.get("produced") != seen["overwritten"]
    if grad_mode and not grad_mode_after:
        fail(f"After {call_text}, grad mode was left off for the code that runs next. Turn it off only for "
             "the forward pass, with `with torch.no_grad():`.", "grad-mode-left-off")
    if not grad_mode and grad_mode_after:
        fail(f"{call_text} was called with grad mode off and left it on. Leave grad mode as it was: "
             "`with torch.no_grad():` puts back whatever mode it found; torch.set_grad_enabled(True) afterwards "
             "does not.", "grad-mode-turned-on")
    probe = getattr(model, "probe", None)
    if probe is not None and not probe.grad_mode:
        fail(f"{call_text} never ran the model's forward pass (its first module did not run). Call model(x) "
             "with a forward hook on `layer`: the layer's output depends on the layers before it, so calling "
             "layer(x) yourself gives something else.", "model-not-run")
    _check_clean(model, modes, call_text, before)
    _check_activation_value(value, expected, layer_input, model_output, relu_after, call_text,
                            others=lambda: _outputs_of_modules(model, x), calls=calls, replaced=replaced)
    return call_text


@check_of("get_activation", mistakes=_ACTIVATION_MISTAKES)
def check_get_activation(get_activation):
    # torch.inference_mode() instead of torch.no_grad() passes: the contract asks for a forward pass
    # without an autograd graph and a detached result, and an inference tensor is both. (It cannot
    # enter autograd later, which no use of get_activation in the course needs.)
    for seed, build, size, padding, name, relu_after, train in _CASES:
        model, in_channels, classes = _build(seed, build, size, padding, train)
        x = random_tensor(seed + 10, (2, in_channels) + size)
        said = _activation_case(get_activation, model, name, relu_after, x)
        if any(model.probe.grad_mode):
            fail(f"{said} ran the model's forward pass with grad mode on (a module of the model saw "
                 "torch.is_grad_enabled() == True), so it built an autograd graph it never uses. Run the "
                 "forward pass under torch.no_grad().", "forward-with-grad")
    _check_raising_forward(get_activation)

    # The first of two modules of the same kind: the output of `layer` itself, not of the last Conv2d.
    model, in_channels, _ = _build(603, _nested_cnn, (7, 9), 0, True)
    _activation_case(get_activation, model, "features.0", "features.1", random_tensor(614, (2, in_channels, 7, 9)),
                     what=" (the first of the model's two convs)")

    # The root module: `layer` is the model itself, its output the model's output.
    seed, build, size, padding, *_ = _CASES[0]
    model, in_channels, _ = _build(seed, build, size, padding, True)
    _activation_case(get_activation, model, "", None, random_tensor(seed + 11, (2, in_channels) + size),
                     what=" (layer is the model itself, the root module)")
    # Mixed modes (a frozen part in eval mode inside a model in training mode): each module keeps its own.
    model, in_channels, _ = _build(seed, build, size, padding, True)
    model.pool.eval()
    _activation_case(get_activation, model, "conv", "relu", random_tensor(seed + 13, (2, in_channels) + size),
                     what=" (the model in train mode, its pool in eval mode)")
    # Hooks the caller registered before (on the layer, on the model) stay, and only they.
    model, in_channels, _ = _build(seed, build, size, padding, True)
    model.conv.register_forward_hook(lambda module, args, output: None)
    model.register_forward_pre_hook(lambda module, args: None)
    _activation_case(get_activation, model, "conv", "relu", random_tensor(seed + 14, (2, in_channels) + size),
                     what=" (the caller's own forward hook on model.conv and pre-hook on model registered before)")
    # A module used twice: the output of its last call.
    model, in_channels, _ = _build(615, _shared_cnn, (6, 7), 1, True)
    _activation_case(get_activation, model, "conv", "relu2", random_tensor(616, (2, in_channels, 6, 7)),
                     what=" (model.conv runs twice: model.again is the same module)")
    # Called with grad mode off (inside an evaluation loop, say): it stays off.
    model, in_channels, _ = _build(seed, build, size, padding, False)
    _activation_case(get_activation, model, "conv", "relu", random_tensor(seed + 12, (2, in_channels) + size),
                     what=", under torch.no_grad()", grad_mode=False)

    # The trained CNN on real digits: the conv (an in-place ReLU follows it) and the pool.
    model, digits, _ = trained_digits_cnn.load()
    for name, relu_after in (("0", "1"), ("2", None)):
        _activation_case(get_activation, model, name, relu_after, digits,
                         what=f" ({len(digits)} test digits, {_TRAINED})")


# ---------------------------------------------------------------- grad_cam

_NO_CLONE = ("The activation you used is the layer's output with a ReLU applied: the in-place ReLU that follows "
             "the layer overwrote it (output.detach() shares memory with the output), or your code applied one. "
             "A is what the layer produced: keep output.detach().clone() in the forward hook, as it is.")
_AFTER_RELU_GRADIENT = ("The gradient you used is the one with respect to the in-place ReLU's result (what "
                        "output.retain_grad(), or torch.autograd.grad on the captured output, gives after the "
                        "ReLU overwrote it), not with respect to the value the layer produced. Register a tensor "
                        "hook on the output inside the forward hook: it fires with the gradient of the value the "
                        "layer produced.")


# Typical mistakes: the options of cam_of that make the map each one gives, the slug of the named mistake, and
# its hint, most specific first.
_CAM_MISTAKES = (
    (dict(relu=False), "no-relu",
     "The map has the values of the weighted sum before the ReLU: apply torch.relu to sum_k w_k * A_k (Grad-CAM "
     "keeps only what raises the score)."),
    (dict(relu="abs"), "abs-instead-of-relu",
     "You took the absolute value of sum_k w_k * A_k; apply torch.relu instead: the places that lower the score "
     "must become 0, not count as bright."),
    (dict(normalize=None), "not-normalized",
     "It is not normalized: divide the upsampled map by its maximum when that maximum is positive."),
    (dict(normalize="min-max"), "min-max-scaling",
     "You subtracted the minimum before dividing (min-max scaling); divide by the maximum only."),
    (dict(weights="activation"), "activation-means-as-weights",
     "The weights w_k are the means of the activations; they must be the means of the gradient G over the spatial "
     "dimensions."),
    (dict(weights="product"), "gradient-times-activation",
     "You summed gradient times activation place by place; Grad-CAM first averages the gradient of each channel "
     "over its spatial dimensions (one weight w_k per channel), then weights A_k by it."),
    (dict(weights="channels"), "mean-over-channels",
     "You averaged G over its channels (dimension 1 of (1, K, h, w)), which gives one weight per place; average "
     "each channel over its spatial dimensions, gradient.mean(dim=(2, 3)), one weight w_k per channel."),
    (dict(align_corners=True), "align-corners-true",
     "The upsampling used align_corners=True; use align_corners=False."),
    (dict(mode="nearest"), "nearest-upsampling",
     "The upsampling was nearest-neighbour; use mode='bilinear' (with align_corners=False)."),
    (dict(mode="bicubic"), "bicubic-upsampling",
     "The upsampling was bicubic; use mode='bilinear' (with align_corners=False)."),
    (dict(relu_after_upsampling=True), "relu-after-upsampling",
     "The ReLU was applied after the upsampling; apply it to the h x w map, then upsample."),
    (dict(normalize_first=True), "normalized-before-upsampling",
     "The map was divided by its maximum before the upsampling; upsample first, then divide by the maximum of the "
     "upsampled map."),
)


def _variants(found, size):
    """(cam of a typical mistake, its slug, its hint), most specific first."""
    A, G = found["A"], found["G"]
    variants = [(cam_of(A, G, size, **options), slug, hint) for options, slug, hint in _CAM_MISTAKES]
    if "A_after" in found:
        variants = [
            (cam_of(found["A_after"], G, size), "activation-after-relu", _NO_CLONE),
            (cam_of(A, found["G_after"], size), "gradient-after-relu", _AFTER_RELU_GRADIENT),
            (cam_of(found["A_after"], found["G_after"], size), "activation-and-gradient-after-relu",
             _AFTER_RELU_GRADIENT + " " + _NO_CLONE),
        ] + variants
    return variants


def _frozen_up_to(model, name):
    """Whether no parameter of the layer `name`, or of the modules that run before it, requires grad: then
    the layer's output requires grad only if x does. (For the models of these checks, which run their
    modules in the order they are registered.)"""
    for other, module in model.named_modules():
        if any(p.requires_grad for p in module.parameters(recurse=False)):
            return False
        if other == name:
            return True
    return True


def _call_grad_cam(grad_cam, model, name, x, target, call_text):
    try:
        with calling(f"calling {call_text}"):
            return grad_cam(model, model.get_submodule(name), x, target)
    except LearnerCodeRaised as raised:
        no_graph = ("does not require grad and does not have a grad_fn", "cannot register a hook on a tensor that "
                    "doesn't require gradient")
        if (isinstance(raised.error, RuntimeError) and any(text in str(raised.error) for text in no_graph)
                and _frozen_up_to(model, name)):
            fail(f"{call_text} raised RuntimeError: {raised.error} No parameter of the layer or of the modules "
                 "before it requires grad (they are frozen), and x does not either, so the layer's output is not "
                 "part of any autograd graph: there is nothing to hook and no gradient to take. Run the model on a "
                 "copy of x that requires grad, model(x.detach().requires_grad_()), and leave the parameters' "
                 "requires_grad alone (x itself must not require grad afterwards).", "frozen-layers-no-graph")
        if (isinstance(raised.error, RuntimeError) and "a leaf Variable that requires grad is being used in an "
                "in-place operation" in str(raised.error) and _frozen_up_to(model, name)):
            fail(f"{call_text} raised RuntimeError: {raised.error} The layer and the modules before it are frozen, "
                 "so the layer's output was a tensor without a graph; making it require grad in the hook "
                 "(output.requires_grad_(), say) makes it a leaf that requires grad, and the in-place ReLU after the "
                 "layer may not change such a leaf. Give "
                 "the forward pass a graph from its start instead: run the model on a copy of x that requires "
                 "grad, model(x.detach().requires_grad_()).", "output-made-a-leaf")
        if isinstance(raised.error, RuntimeError) and any(text in str(raised.error) for text in no_graph):
            fail(f"{call_text} raised RuntimeError: {raised.error} The forward pass built no autograd graph, so "
                 "there is no gradient to take: run it with grad mode on (not under torch.no_grad() or "
                 "torch.inference_mode(), and without detaching the output before the score is taken).", "no-graph")
        if isinstance(raised.error, RuntimeError) and "appears to not have been used in the graph" in str(raised.error):
            fail(f"{call_text} raised RuntimeError: {raised.error} The tensor you take the gradient with respect to "
                 "is not on the way to the score: a copy made in the hook (output.clone()) is not what the model "
                 "goes on with. Register a tensor hook on the output itself, output.register_hook(...), inside "
                 "the forward hook.", "hooked-a-copy")
        if isinstance(raised.error, RuntimeError) and "BackwardHookFunction" in str(raised.error):
            fail(f"{call_text} raised RuntimeError: {str(raised.error)[:100]}... The layer is followed by "
                 "ReLU(inplace=True), and a full backward hook (or pre-hook) on a module fails when its output is "
                 "changed in place (lesson 05). Get the gradient with a tensor hook instead: in a forward hook on "
                 "the layer, call output.register_hook(...).", "full-backward-hook")
        raise


def _other_class(model, name, x, target, size):
    """(cam, slug, hint) for the class the model predicts, if that is not `target`: the cam of the wrong class."""
    with torch.no_grad():
        predicted = int(twin_without_in_place(model)(x)[0].argmax())
    if predicted == target:
        return []
    found = activation_and_gradient(model, name, None, x, predicted)
    return [(cam_of(found["A"], found["G"], size), "predicted-class",
             f"This is the map of class {predicted}, the one the model predicts (the argmax of model(x)[0]); "
             f"compute it for the class passed as `target`, {target}.")]


_OTHER_SCORES = (
    # (The log-probability's gradient is the probability's divided by the probability: the same map once
    # divided by its maximum.)
    (lambda output, target: F.softmax(output, dim=1)[0, target], "softmax-score",
     "This is the map of the gradient of the softmax probability of the class (or of its log, the same map once "
     "divided by its maximum); Grad-CAM uses the raw score, model(x)[0, target], before any softmax."),
    (lambda output, target: F.cross_entropy(output, torch.tensor([target])), "loss-instead-of-score",
     "This is the map of the gradient of the cross-entropy loss for the class; Grad-CAM uses the raw score, "
     "model(x)[0, target]: backward from that score, not from a loss."),
)


def _other_scores(model, name, x, target, size):
    """(cam, slug, hint) when the gradient is of a softmax, a log-probability or a loss instead of the score."""
    variants = []
    for score_of, slug, hint in _OTHER_SCORES:
        found = activation_and_gradient(model, name, None, x, target, score_of)
        variants.append((cam_of(found["A"], found["G"], size), slug, hint))
    return variants


def _other_layers(model, name, x, target, size):
    """(cam, slug, hint) at every other module of the model whose output is a batch of maps."""
    variants = []
    for other, module in model.named_modules():
        if other in ("", name) or isinstance(module, _GradModeProbe):
            continue
        if _maps_out(model, other, x):
            found = activation_and_gradient(model, other, None, x, target)
            variants.append((cam_of(found["A"], found["G"], size), "other-layer",
                             f"This is the Grad-CAM at {_layer_text(other)}, not at the layer passed in, "
                             f"{_layer_text(name)}: register the hooks on `layer` itself, whatever kind of module "
                             "it is (not on the last Conv2d you find, say)."))
    return variants


def _maps_out(model, name, x):
    """Whether module `name` of a copy of the model outputs a batch of 2-D maps (N, K, h, w)."""
    twin = twin_without_in_place(model)
    shapes = []
    twin.get_submodule(name).register_forward_hook(lambda m, args, output: shapes.append(getattr(output, "shape", ())))
    with torch.no_grad():
        twin(x)
    return bool(shapes) and len(shapes[0]) == 4


def _judge_cam(cam, expected, found, size, said, more_variants=list):
    if not isinstance(cam, torch.Tensor):
        fail(f"{said} returned {describe(cam)}; expected a tensor of shape {size}.", "not-a-tensor")
    cam = cam.detach()
    if tuple(cam.shape) != size:
        h, w = found["A"].shape[-2:]
        if cam.numel() == expected.numel() and tuple(cam.squeeze().shape) == size:
            fail(f"{said} returned a tensor of shape {tuple(cam.shape)}; expected shape {size}, 2-D: drop the "
                 "batch and channel dimensions that F.interpolate needs (e.g. [0, 0]).", "batch-and-channel-kept")
        if cam.squeeze().shape == (h, w):
            fail(f"{said} returned a map of shape {tuple(cam.shape)}, the layer's spatial size; upsample it to the "
                 f"input's size {size} with F.interpolate(..., size=..., mode='bilinear', align_corners=False).",
                 "not-upsampled")
        fail(f"{said} returned a tensor of shape {tuple(cam.shape)}; expected {size}, the input's height and width.",
             "wrong-shape")
    if cam.isnan().any():
        all_zero = expected.max() == 0
        hint = " The map before normalization was all zero here: divide by the maximum only when it is positive."
        fail(f"{said} returned a map with NaN values, {describe(cam)}.{hint if all_zero else ''}",
             "divided-by-zero-maximum" if all_zero else "nan-in-map")
    if close(cam, expected, tolerance=1e-4):
        return
    for variant, slug, hint in _variants(found, size) + more_variants():
        if close(cam, variant, tolerance=1e-4):
            fail(f"{said} returned {describe(cam)}; expected {describe(expected)}. {hint}", slug)
    fail(f"{said} returned {describe(cam)}; expected {describe(expected)}: with A the layer's output and G the "
         "gradient of model(x)[0, target] with respect to it, cam = relu(sum_k mean(G_k) * A_k), upsampled "
         "bilinearly (align_corners=False) to the input's size, divided by its maximum when positive.",
         "wrong-cam-value")


def _grad_cam_case(grad_cam, model, name, relu_after, x, target, what=""):
    size = tuple(x.shape[-2:])
    found = activation_and_gradient(model, name, relu_after, x, target)
    expected = cam_of(found["A"], found["G"], size)
    modes, before = _modes(model), _registered_hooks(model)
    requires_grad = [p.requires_grad for p in model.parameters()]
    call_text = f"grad_cam(model, {_layer_text(name)}, x, {target}) with x of shape {tuple(x.shape)}{what}"
    original = x.clone()
    cam = _call_grad_cam(grad_cam, model, name, x, target, call_text)
    changed = [f"{p_name} (was {was}, now {p.requires_grad})"
               for (p_name, p), was in zip(model.named_parameters(), requires_grad) if p.requires_grad != was]
    if changed:
        fail(f"After {call_text}, parameters' requires_grad had changed: {', '.join(changed)}. A frozen model must "
             "stay frozen: leave each parameter's requires_grad as it was (to get a graph through frozen layers, "
             "run the model on a copy of x that requires grad, x.detach().requires_grad_()).", "requires-grad-changed")
    if x.requires_grad or x.grad is not None:
        fail(f"After {call_text}, the caller's x requires grad (or has a .grad): grad_cam set requires_grad on it. "
             "Grad-CAM needs the gradient with respect to the layer's output, not the image; leave x as it was "
             "(no x.requires_grad_()).", "input-made-to-require-grad")
    if not torch.equal(x, original):
        fail(f"After {call_text}, the caller's x has changed: it was {describe(original)} and is now {describe(x)}. "
             "Leave x as it was: no in-place operation on it.", "input-changed")
    if not torch.is_grad_enabled():
        fail(f"After {call_text}, grad mode was left off for the code that runs next. Don't switch it off "
             "globally (torch.set_grad_enabled(False)); the backward pass needs it on.", "grad-mode-left-off")
    _check_clean(model, modes, call_text, before)
    _judge_cam(cam, expected, found, size, call_text,
               more_variants=lambda: _other_class(model, name, x, target, size)
               + _other_scores(model, name, x, target, size) + _other_layers(model, name, x, target, size))
    return expected


def _grad_cam_on_small_cnns(grad_cam):
    """The cases of _CASES; then a mixed-mode model, frozen models and a model with the caller's own hooks."""
    for seed, build, size, padding, name, relu_after, train in _CASES:
        model, in_channels, classes = _build(seed, build, size, padding, train)
        x = random_tensor(seed + 20, (1, in_channels) + size, scale=2.0)
        target = random.Random(seed).randrange(classes)
        expected = _grad_cam_case(grad_cam, model, name, relu_after, x, target)
        assert expected.max() == 1  # the cases are chosen so that the map is not empty

    # Mixed modes (a frozen part in eval mode inside a model in training mode): each module keeps its own.
    seed, build, size, padding, name, relu_after, _ = _CASES[0]
    model, in_channels, classes = _build(seed, build, size, padding, True)
    model.pool.eval()
    _grad_cam_case(grad_cam, model, name, relu_after, random_tensor(seed + 21, (1, in_channels) + size, scale=2.0),
                   random.Random(seed).randrange(classes), what=" (the model in train mode, its pool in eval mode)")

    # A frozen model (no parameter requires grad), a frozen layer under a head that is trained, and a
    # frozen model at a layer without parameters (the pool).
    for case, what, frozen in ((_CASES[0], " (a frozen model: no parameter requires grad)", lambda model: model),
                               (_CASES[0], " (model.conv frozen, the head trainable)", lambda model: model.conv),
                               (_CASES[1], " (a frozen model: no parameter requires grad)", lambda model: model)):
        case_seed, case_build, case_size, case_padding, case_name, case_relu_after, _ = case
        model, in_channels, classes = _build(case_seed, case_build, case_size, case_padding, False)
        frozen(model).requires_grad_(False)
        _grad_cam_case(grad_cam, model, case_name, case_relu_after,
                       random_tensor(case_seed + 22, (1, in_channels) + case_size, scale=2.0),
                       random.Random(case_seed).randrange(classes), what=what)

    # Hooks the caller registered before (on the layer, on the model) stay, and only they.
    model, in_channels, classes = _build(seed, build, size, padding, False)
    model.conv.register_forward_hook(lambda module, args, output: None)
    model.register_forward_pre_hook(lambda module, args: None)
    _grad_cam_case(grad_cam, model, name, relu_after, random_tensor(seed + 23, (1, in_channels) + size, scale=2.0),
                   random.Random(seed).randrange(classes),
                   what=" (the caller's own forward hook on model.conv and pre-hook on model registered before)")


def _grad_cam_raising_forward(grad_cam):
    """A forward pass that raises: the exception goes on to the caller, and no hook is left."""
    torch.manual_seed(617)
    x = random_tensor(618, (1, 1, 5, 6))
    for model, when in ((_FailsAfterLayer(), "after model.conv"), (_FailsBeforeLayer(), "before model.conv runs"),
                        (_FailsAfterLayer().requires_grad_(False), "after model.conv, its parameters frozen")):
        _check_raises_and_cleans(grad_cam, model, x,
                                 f"grad_cam(model, model.conv, x, 0) with a model whose forward raises ValueError "
                                 f"{when}", 0)


def _grad_cam_edge_maps(grad_cam):
    """Maps that are all zero, and a map that is > 0 everywhere."""
    # A layer whose output is all zero: the map is zero, and must stay zero (no division by 0).
    model, in_channels, classes = _build(607, _small_cnn, (6, 8), 1, True)
    with torch.no_grad():
        model.conv.weight.zero_()
        model.conv.bias.zero_()
    x = random_tensor(608, (1, in_channels, 6, 8))
    _grad_cam_case(grad_cam, model, "conv", "relu", x, 1, what=" (the conv's weights and bias are all zero)")

    # Activations >= 0 and a head whose weights are all negative: every w_k < 0, so relu leaves nothing.
    model, in_channels, classes = _build(609, _small_cnn, (8, 6), 1, False)
    with torch.no_grad():
        model.head.weight.copy_(-model.head.weight.abs())
    x = random_tensor(610, (1, in_channels, 8, 6))
    _grad_cam_case(grad_cam, model, "pool", None, x, 0,
                   what=" (the head's weights are all negative, so the weighted sum is <= 0 everywhere)")

    # Activations > 0 everywhere and a head whose weights are all positive: the map is > 0 everywhere,
    # so dividing by the maximum and min-max scaling differ.
    model, in_channels, classes = _build(611, _small_cnn, (7, 9), 1, True)
    with torch.no_grad():
        model.head.weight.copy_(model.head.weight.abs())
        model.conv.bias.add_(3.0)
    x = random_tensor(612, (1, in_channels, 7, 9))
    _grad_cam_case(grad_cam, model, "pool", None, x, 2,
                   what=" (the head's weights are all positive, so the map is > 0 everywhere)")


def _grad_cam_on_trained_digits(grad_cam):
    """The trained CNN on real digits: the true class at the conv (an in-place ReLU follows it), the true
    class and the runner-up at the pool, where some maps are all zero, as the lesson shows. (The
    runner-up at the conv adds little: there both classes light up the strokes.)"""
    model, digits, labels = trained_digits_cnn.load()
    with torch.no_grad():
        runners_up = model(digits).topk(2, dim=1).indices[:, 1].tolist()
    for digit, label, runner_up in zip(digits, labels.tolist(), runners_up):
        cases = (("0", "1", label, "its true class"), ("2", None, label, "its true class"),
                 ("2", None, runner_up, "the runner-up"))
        for name, relu_after, target, kind in cases:
            _grad_cam_case(grad_cam, model, name, relu_after, digit[None], target,
                           what=f" (a test digit {label}, {kind}; {_TRAINED})")


_GRAD_CAM_MISTAKES = {
    **_CLEAN_MISTAKES, **_RAISING_FORWARD_MISTAKES,
    "requires-grad-changed": "changes the parameters' requires_grad (unfreezes a frozen model)",
    "input-made-to-require-grad": "makes the caller's x require grad",
    "input-changed": "changes the caller's x in place",
    "grad-mode-left-off": "switches grad mode off globally",
    "frozen-layers-no-graph": "gives the forward pass of a frozen model no graph (x does not require grad either)",
    "output-made-a-leaf": "makes a frozen layer's output require grad in the hook, a leaf the in-place ReLU may not "
                          "change",
    "no-graph": "runs the forward pass without an autograd graph (no_grad, inference_mode, or a detached output)",
    "hooked-a-copy": "takes the gradient with respect to a copy made in the hook, which is not on the way to the score",
    "full-backward-hook": "uses a full backward hook on a layer followed by an in-place ReLU",
    "not-a-tensor": "returns something other than a tensor",
    "batch-and-channel-kept": "returns the map with the batch and channel dimensions F.interpolate needs",
    "not-upsampled": "returns the map at the layer's spatial size, not upsampled to the input's",
    "wrong-shape": "returns a map of another shape than the input's height and width",
    "divided-by-zero-maximum": "divides an all-zero map by its maximum, 0, giving NaN",
    "nan-in-map": "returns a map with NaN values",
    "activation-after-relu": "uses the layer's output with a ReLU applied (detached without a clone, so the in-place "
                             "ReLU overwrote it, or a ReLU of its own)",
    "gradient-after-relu": "uses the gradient with respect to the in-place ReLU's result (retain_grad)",
    "activation-and-gradient-after-relu": "uses both the activation and the gradient after the in-place ReLU",
    "no-relu": "leaves out the ReLU of the weighted sum",
    "abs-instead-of-relu": "takes the absolute value of the weighted sum instead of its ReLU",
    "not-normalized": "does not divide the map by its maximum",
    "min-max-scaling": "subtracts the minimum before dividing (min-max scaling)",
    "activation-means-as-weights": "weights the channels by the means of the activations instead of the gradient",
    "gradient-times-activation": "sums gradient times activation place by place, without one weight per channel",
    "mean-over-channels": "averages the gradient over its channels instead of its spatial dimensions",
    "align-corners-true": "upsamples with align_corners=True",
    "nearest-upsampling": "upsamples with mode='nearest' instead of 'bilinear'",
    "bicubic-upsampling": "upsamples with mode='bicubic' instead of 'bilinear'",
    "relu-after-upsampling": "applies the ReLU after upsampling instead of before",
    "normalized-before-upsampling": "divides by the maximum before upsampling instead of after",
    "predicted-class": "computes the map of the class the model predicts instead of `target`",
    "softmax-score": "takes the gradient of the softmax probability (or its log) instead of the raw score",
    "loss-instead-of-score": "takes the gradient of the cross-entropy loss instead of the raw score",
    "other-layer": "computes the map at another layer than the one passed in",
    "wrong-cam-value": "computes a map that is not Grad-CAM's",
}


@check_of("grad_cam", budget_ms=45,
          why="31 Grad-CAM cases, 18 of them on the trained CNN's 6 stored digits, each graded against the "
              "checks' own Grad-CAM on a fresh copy of the model (about 1.2 ms a case); a copy kept from "
              "case to case would grade a grad_cam that changes the weights in place against weights it no "
              "longer has", mistakes=_GRAD_CAM_MISTAKES)
def check_grad_cam(grad_cam):
    _grad_cam_on_small_cnns(grad_cam)
    _grad_cam_raising_forward(grad_cam)
    _grad_cam_edge_maps(grad_cam)
    _grad_cam_on_trained_digits(grad_cam)
