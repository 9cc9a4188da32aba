"""Checks for lesson 03, forward pre-hooks."""

import os
import traceback

import torch
from torch import nn

from hooked.checks.check_api import calling, check_of, fail
from hooked.checks.event_predictions import EventPrediction, Rule, prediction_check
from hooked.checks.handles import MISTAKES as HANDLES, single_handle
from hooked.checks.noise import MISTAKES as NOISE_SAMPLE_MISTAKES
from hooked.checks.noise import (check_generator_advanced, check_new_noise_each_call, check_noise_sample,
                                 check_seeded_noise)
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints

NOISE_SHAPE = (64, 8, 8)  # 4096 elements: enough for the statistical checks of hooked/checks/noise.py


class _Recorder(nn.Module):
    """Notes the positional and keyword arguments each call hands to forward; returns the first one."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def forward(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return args[0] if args else None


def _registered(register, call_text, module):
    """Call the learner's `register` (e.g. lambda m: add_input_noise(m, 0.3)) on `module` and
    require the handle back."""
    with calling(f"calling {call_text}"):
        handle = register(module)
    return single_handle(handle, call_text, "the handle that module.register_forward_pre_hook(...) returns")


def _call(module, said, args, kwargs=None, hint_for_error=None):
    """Call `module(*args, **kwargs)` and return the (args, kwargs) its forward received.
    `hint_for_error(error)` may add a targeted hint to an error raised on the way."""
    hints = (_hook_protocol_hint, hint_for_error) if hint_for_error else (_hook_protocol_hint,)
    with calling_with_hints(f"{said.removesuffix('.')}, calling the module", hints):
        module(*args, **(kwargs or {}))
    return module.calls[-1]


def _raised_calling(error):
    """True when `error` was raised by PyTorch's module call itself (calling a hook or forward with
    arguments that do not fit), not inside the learner's own functions."""
    frames = list(traceback.walk_tb(error.__traceback__))
    return bool(frames) and frames[-1][0].f_code.co_filename.endswith(os.path.join("nn", "modules", "module.py"))


def _hook_protocol_hint(error):
    """(slug, hint) for the errors PyTorch raises when a pre-hook breaks its calling convention."""
    text = str(error)
    if "forward pre-hook must return None or a tuple of (new_args, new_kwargs)" in text:
        return ("kwargs-hook-bad-return", "A pre-hook registered with with_kwargs=True must return None or the "
                "pair (args, kwargs): a tuple of the positional arguments and a dict of the keyword arguments.")
    if isinstance(error, TypeError) and "argument after ** must be a mapping" in text \
            and not ("not tuple" in text or "not list" in text):
        return ("kwargs-hook-bad-return", "A pre-hook registered with with_kwargs=True must return None or the "
                "pair (args, kwargs): it returned a pair whose second item, taken as the keyword arguments, is not "
                "a dict. Return a tuple of the positional arguments and a dict of the keyword arguments.")
    if isinstance(error, TypeError) and "argument after ** must be a mapping" in text:
        return ("kwargs-pair-reversed", "forward was called as forward(*new_args, **new_kwargs) with what your "
                "with_kwargs=True pre-hook returned, and new_kwargs was not a dict: return the pair in the order "
                "(args, kwargs).")
    if isinstance(error, TypeError) and "missing 1 required positional argument" in text and _raised_calling(error):
        return ("hook-signature", "PyTorch calls a pre-hook as hook(module, args); only one registered with "
                "register_forward_pre_hook(hook, with_kwargs=True) is called as hook(module, args, kwargs).")
    return None


def _described_args(args):
    return "(" + ", ".join(describe(arg) for arg in args) + ")"


def _described_kwargs(kwargs):
    return "{" + ", ".join(f"{key!r}: {describe(value)}" for key, value in kwargs.items()) + "}"


def _check_first_arg_replaced(received, args, said, kwargs=None):
    """The module received as many positional arguments as it was called with, the others
    unchanged, the keyword arguments `kwargs` (when given) unchanged, and a tensor first; return
    that tensor."""
    received_args, received_kwargs = received
    if kwargs is not None and (set(received_kwargs) != set(kwargs)
                               or any(received_kwargs[key] is not value for key, value in kwargs.items())):
        fail(f"{said}\nforward received the keyword arguments {_described_kwargs(received_kwargs)}; expected the "
             f"caller's {_described_kwargs(kwargs)}, unchanged. The hook changes only the first positional "
             "argument: keyword arguments pass by themselves past a plain pre-hook (return the positional "
             "arguments only); a with_kwargs=True hook must return the kwargs it received.", "changed-kwargs")
    if len(received_args) != len(args):
        fail(f"{said}\nforward received {len(received_args)} positional argument(s), "
             f"{_described_args(received_args)}; expected {len(args)}, like the call. A pre-hook's return "
             "replaces ALL positional arguments (a value that is not a tuple becomes the only one): return a tuple "
             "with the new first argument and the others, (new_x, *args[1:]).", "replaced-all-args")
    for position, (got, given) in enumerate(zip(received_args[1:], args[1:]), start=1):
        if got is not given:
            fail(f"{said}\npositional argument {position} reached forward as {describe(got)}; expected it "
                 f"unchanged ({describe(given)}). Change only the first argument.", "changed-other-arg")
    first = received_args[0]
    if not isinstance(first, torch.Tensor):
        fail(f"{said}\nforward received {describe(first)} as its first argument; expected a tensor.",
             "first-arg-not-a-tensor")
    return first


def _check_not_changed_in_place(x, original, said, new_tensor):
    """`new_tensor` names the tensor to compute instead, e.g. "x + noise"."""
    if x.shape != original.shape or not torch.equal(x, original):
        fail(f"{said}\nThe caller's tensor x changed in place: it was {describe(original)} and is now "
             f"{describe(x)}. Compute a new tensor ({new_tensor}) and return it, instead of modifying args[0] "
             "with an in-place operation (+=, add_, sub_, div_, [...] =) or by assigning to x.data.", "in-place")


def _check_gradient_reaches(x, received, expected_grad, said):
    """`received` was computed from the leaf `x`; its sum must send `expected_grad` back to x."""
    if not received.requires_grad:
        fail(f"{said}\nThe new input does not require grad although x does: it is cut off from autograd, so no "
             "gradient can reach x. Compute it from x with ordinary tensor operations (not x.data, .detach() "
             "or torch.no_grad()).", "input-detached")
    with calling(f"{said}, running backward from the new input"):
        received.sum().backward()
    if x.grad is not None and not x.grad.any():
        fail(f"{said}\nBackward from the sum of the new input gave x.grad = {describe(x.grad)}, all zero; expected "
             f"{describe(expected_grad)}. The new input hides x from autograd: torch.normal(x, std), for one, draws "
             "around x but has gradient zero with respect to x. Compute x + noise instead.", "gradient-hidden")
    if not close(x.grad, expected_grad):
        fail(f"{said}\nBackward from the sum of the new input gave x.grad = {describe(x.grad)}; expected "
             f"{describe(expected_grad)}.", "wrong-input-grad")


def _unchanged(module, slug):
    """The slug for an input that reached forward unchanged: `slug`, or the forward hook's that explains it."""
    return "forward-hook-not-pre-hook" if module._forward_hooks else slug


def _forward_hook_hint(module):
    if module._forward_hooks:
        return (" A forward hook (register_forward_hook) is registered on the module: it runs after forward, "
                "so forward never sees the change. Use register_forward_pre_hook.")
    return ""


# The named mistakes of the helpers above, for the check_of of each exercise that uses them.
ARGUMENT_MISTAKES = {  # _check_first_arg_replaced, _check_not_changed_in_place, _other_argument_hint
    "changed-kwargs": "changes the keyword arguments, which should pass unchanged",
    "replaced-all-args": "returns the new first argument alone, which replaces all positional arguments",
    "changed-other-arg": "changes a positional argument other than the first",
    "first-arg-not-a-tensor": "hands forward something other than a tensor as the first argument",
    "in-place": "changes the caller's x in place instead of computing a new tensor",
}
GRADIENT_MISTAKES = {  # _check_gradient_reaches
    "input-detached": "cuts the new input off from autograd (x.data, detach(), torch.no_grad())",
    "gradient-hidden": "computes the new input so that no gradient reaches x (torch.normal(x, std))",
    "wrong-input-grad": "computes the new input so that the wrong gradient reaches x",
}
HOOK_KIND_MISTAKES = {  # _hook_protocol_hint, _unchanged
    "kwargs-hook-bad-return": "returns something other than None or (args, kwargs) from a with_kwargs=True pre-hook",
    "kwargs-pair-reversed": "returns (kwargs, args) instead of (args, kwargs) from a with_kwargs=True pre-hook",
    "hook-signature": "defines the pre-hook with the wrong arguments for how it is registered",
    "forward-hook-not-pre-hook": "registers a forward hook, which runs after forward, instead of a pre-hook",
}
HANDLE_MISTAKES = {
    **{slug: HANDLES[slug] for slug in ("handle-in-a-list", "no-handle")},
    "wrong-handle": "returns a handle whose remove() does not remove the pre-hook",
}


# ---------------------------------------------------------------- add_input_noise


def _check_every_element_noisy(noise, what):
    """Normal noise is exactly 0 with probability 0 (x + noise rounds back to x for a noise
    below half a float32 step of x: about 1 in 10 million elements here)."""
    untouched = (noise == 0).sum().item()
    if untouched > noise.numel() // 100:
        fail(f"{what} is exactly 0 at {untouched} of its {noise.numel()} elements: those elements of x got no "
             "noise. Add noise to every element of x: draw it with the full shape of x.", "noise-on-some-elements")


def _noisy_input(module, x, said, extra=(), kwargs=None):
    received = _call(module, said, (x, *extra), kwargs)
    return _check_first_arg_replaced(received, (x, *extra), said, kwargs)


# The noise cases: (std, generator seed, seed of x).
NOISE_CASES = [(0.3, None, 301), (2.5, 8000, 303)]


def _register_noise_cases(add_input_noise):
    """Two modules registered before either is called, so that a std or generator kept in a
    shared place (a global, a default argument) shows: [(module, std, text, generator)], the handles."""
    modules, handles = [], []
    for std, generator_seed, _ in NOISE_CASES:
        generator = None if generator_seed is None else torch.Generator().manual_seed(generator_seed)
        text = f"add_input_noise(module, {std}" + (", generator)" if generator is not None else ")")
        module = _Recorder()
        handles.append(_registered(lambda m: add_input_noise(m, std, generator), text, module))
        modules.append((module, std, text, generator))
    return modules, handles


def _check_noise_case(module, std, text, generator, seed):
    """module(x, y, 7, mask=m, scale=1.5) in training mode: x + noise of std `std` reaches forward, the rest
    unchanged; new noise on the next call. Returns what check_generator_advanced needs when the generator
    did not move, judged later: the reproducibility check's hints are more specific."""
    x = random_tensor(seed, NOISE_SHAPE, scale=3.0)
    y, original = random_tensor(seed + 1, (3,)), x.clone()
    keywords = {"mask": random_tensor(seed + 2, (2,)), "scale": 1.5}
    said = f"Registered {text} on a module in training mode, called module(x, y, 7, mask=m, scale=1.5) " \
           f"with x = {describe(x)}."
    generator_state = None if generator is None else generator.get_state()
    received = _call(module, said, (x, y, 7), dict(keywords),
                     hint_for_error=_other_argument_hint(module, x, (y, 7), "adds noise to"))
    _check_not_changed_in_place(x, original, said, "x + noise")
    noisy = _check_first_arg_replaced(received, (x, y, 7), said, keywords)
    if noisy.shape != x.shape or noisy.dtype != x.dtype:
        fail(f"{said}\nforward received {describe(noisy)} as x; expected the shape {tuple(x.shape)} and "
             f"dtype {x.dtype} of x: noise with the shape of x (x.shape), in its dtype.",
             "wrong-shape" if noisy.shape != x.shape else "wrong-dtype")
    if torch.equal(noisy, original):
        fail(f"{said}\nforward received x unchanged: no noise was added. A new module is in training mode, "
             f"where x must become x + noise.{_forward_hook_hint(module)}", _unchanged(module, "no-noise-added"))
    what = f"The noise that {text} added to x of shape {tuple(x.shape)} (what forward received minus x)"
    _check_every_element_noisy(noisy - original, what)
    check_noise_sample(noisy - original, std, what, input=original)
    unused = generator is not None and torch.equal(generator.get_state(), generator_state)
    check_new_noise_each_call(
        lambda: _noisy_input(module, original, said) - original,
        f"{said} Called the module twice on the same x")
    return (generator, generator_state, said) if unused else None


def _seeded_draw(add_input_noise, generator):
    """Noise from a fresh module and `generator`, twice on the same x, with other draws from torch's global
    random state in between."""
    module = _Recorder()
    _registered(lambda m: add_input_noise(m, 0.5, generator), "add_input_noise(module, 0.5, generator)", module)
    x = random_tensor(311, (4, 5))
    said = f"Registered add_input_noise(module, 0.5, generator), called module(x) twice with x = {describe(x)}."
    torch.randn(3)  # other code drawing from torch's global random state before each call
    first = _noisy_input(module, x, said) - x
    torch.randn(3)
    return torch.stack([first, _noisy_input(module, x, said) - x])


NOISE_MISTAKES = {
    "wrong-shape": "hands forward an input of another shape than x",
    "wrong-dtype": "hands forward an input of another dtype than x (noise of another dtype promotes it)",
    "no-noise-added": "leaves x unchanged in training mode",
    "noise-on-some-elements": "adds noise to only some elements of x",
    "noise-not-from-global-state": "draws the noise, without a generator, from somewhere torch.manual_seed does "
                                   "not reset",
    "own-default-generator": "draws the noise, without a generator, from a torch.Generator() of its own",
    "training-decided-at-registration": "decides once, when the hook is registered, whether to add noise",
    "noise-in-eval": "adds noise in eval mode too",
    "no-noise-after-eval": "adds no noise once the module went back from eval to training mode",
    "noise-off-under-no-grad": "adds no noise under torch.no_grad() (looks at grad mode, not module.training)",
}


@check_of("add_input_noise", mistakes={**ARGUMENT_MISTAKES, **NOISE_MISTAKES, **NOISE_SAMPLE_MISTAKES,
                                       **GRADIENT_MISTAKES, **HOOK_KIND_MISTAKES, **HANDLE_MISTAKES})
def check_add_input_noise(add_input_noise):
    torch.manual_seed(7000)  # the same verdict on every run for noise drawn from the global state (restored afterwards)
    modules, handles = _register_noise_cases(add_input_noise)
    unused_generator = None
    for (module, std, text, generator), (_, _, seed) in zip(modules, NOISE_CASES):
        unused_generator = _check_noise_case(module, std, text, generator, seed) or unused_generator
    check_seeded_noise(lambda generator: _seeded_draw(add_input_noise, generator),
                       "add_input_noise(module, 0.5, generator) called twice, with a fresh module and generator each "
                       "time, on the same x")
    if unused_generator:
        check_generator_advanced(*unused_generator, "add_input_noise")
    _check_global_state_without_generator(add_input_noise)
    _check_noise_only_in_training(add_input_noise)
    _check_noise_keeps_dtype_and_gradient(add_input_noise)

    module, std, text, _ = modules[0]
    handles[0].remove()
    x = random_tensor(321, (3, 4))
    said = f"Registered {text}, then called handle.remove() and module(x)."
    if not torch.equal(_noisy_input(module, x, said), x):
        fail(f"{said}\nforward still received a changed x: removing the returned handle must remove the noise. "
             "Return the handle of the pre-hook you registered.", "wrong-handle")


def _check_global_state_without_generator(add_input_noise):
    """Without a generator the noise comes from torch's global random state: torch.manual_seed(s) before
    the call decides it."""
    x = random_tensor(351, (6, 7))
    noise = {}
    for seed in (7100, 7100, 7101):
        module = _Recorder()
        _registered(lambda m: add_input_noise(m, 0.5), "add_input_noise(module, 0.5)", module)
        said = (f"Registered add_input_noise(module, 0.5) on a fresh module, called torch.manual_seed({seed}) and "
                f"module(x) with x = {describe(x)}.")
        torch.manual_seed(seed)
        noise.setdefault(seed, []).append(_noisy_input(module, x, said) - x)
    if not torch.equal(*noise[7100]):
        fail("Registered add_input_noise(module, 0.5) (no generator) on two fresh modules and called each right "
             "after torch.manual_seed(7100): the two noises differ. Without a generator, draw from torch's global "
             "random state (generator=None), which torch.manual_seed resets.", "noise-not-from-global-state")
    if torch.equal(noise[7100][0], noise[7101][0]):
        fail("Registered add_input_noise(module, 0.5) (no generator) on fresh modules and called them right after "
             "torch.manual_seed(7100) and torch.manual_seed(7101): the same noise both times, so it does not come "
             "from torch's global random state (a torch.Generator() of your own, made when none is given, always "
             "starts from the same default seed). Pass generator=None on to torch.randn when no generator is "
             "given.", "own-default-generator")


def _check_noise_only_in_training(add_input_noise):
    x = random_tensor(331, (8, 6))
    late = _Recorder().eval()
    _registered(lambda m: add_input_noise(m, 1.0), "add_input_noise(module, 1.0)", late)
    late.train()
    said = "Registered add_input_noise(module, 1.0) while the module was in eval mode, then switched it to " \
           "train() and called module(x)."
    if torch.equal(_noisy_input(late, x, said), x):
        fail(f"{said}\nforward received x unchanged. Decide on every call, with the module's current "
             "module.training, not once when the hook is registered.", "training-decided-at-registration")

    module = _Recorder()
    _registered(lambda m: add_input_noise(m, 1.0), "add_input_noise(module, 1.0)", module)
    module.eval()
    said = f"Registered add_input_noise(module, 1.0), switched the module to eval(), called module(x) with x = " \
           f"{describe(x)}."
    if not torch.equal(_noisy_input(module, x, said), x):
        fail(f"{said}\nforward received a changed x; in eval mode the input must pass unchanged (evaluation "
             "must be deterministic). Check module.training in the hook and return None when it is False.",
             "noise-in-eval")
    module.train()
    said = "Registered add_input_noise(module, 1.0) in training mode, called module(x) in eval mode, then " \
           "switched back to train() and called module(x) again."
    if torch.equal(_noisy_input(module, x, said), x):
        fail(f"{said}\nThe second call received x unchanged; back in training mode, noise must be added again.",
             "no-noise-after-eval")
    said = "Registered add_input_noise(module, 1.0) on a module in training mode, called module(x) under " \
           "torch.no_grad()."
    with torch.no_grad():
        unchanged = torch.equal(_noisy_input(module, x, said), x)
    if unchanged:
        fail(f"{said}\nforward received x unchanged. The module's mode decides, not grad mode: a module in "
             "training mode gets noise also under torch.no_grad(). Look at module.training, not at "
             "torch.is_grad_enabled() or x.requires_grad.", "noise-off-under-no-grad")


def _check_noise_keeps_dtype_and_gradient(add_input_noise):
    for dtype in (torch.float64, torch.float16):  # float32 noise promotes float16 to float32
        x = random_tensor(341, (32, 40), dtype=dtype)
        module = _Recorder()
        _registered(lambda m: add_input_noise(m, 0.3), "add_input_noise(module, 0.3)", module)
        said = f"Registered add_input_noise(module, 0.3), called module(x) with x = {describe(x)}."
        noisy = _noisy_input(module, x, said)
        if noisy.dtype != x.dtype:
            fail(f"{said}\nforward received x as {describe(noisy)}; expected dtype {x.dtype}, the dtype of x. "
                 "Draw the noise in the dtype of x (dtype=x.dtype, or torch.randn_like / x.new_empty): noise of "
                 "another dtype promotes x to the wider of the two.", "wrong-dtype")
    x = random_tensor(341, (32, 40), dtype=torch.float64)
    module = _Recorder()
    _registered(lambda m: add_input_noise(m, 0.3), "add_input_noise(module, 0.3)", module)
    said = f"Registered add_input_noise(module, 0.3), called module(x) with x = {describe(x)}."
    check_noise_sample(_noisy_input(module, x, said) - x, 0.3, f"The noise added to x of shape {tuple(x.shape)}, "
                       "float64,", input=x)

    leaf = random_tensor(342, (3, 4)).requires_grad_()
    module = _Recorder()
    _registered(lambda m: add_input_noise(m, 0.3), "add_input_noise(module, 0.3)", module)
    said = f"Registered add_input_noise(module, 0.3), called module(x) with x = {describe(leaf)}, requiring grad."
    _check_gradient_reaches(leaf, _noisy_input(module, leaf, said), torch.ones_like(leaf), said)


# ---------------------------------------------------------------- normalize_input


def _normalized_position(module, x, extra):
    """The position of the positional argument the module's hooks change, found by calling it with
    copies of x in every position (so that any one of them can be changed without an error); None
    when that call fails too or changes none of them, or changes more than one."""
    copies = [x.clone() for _ in range(1 + len(extra))]
    try:
        module(*copies)
    except Exception:
        return None
    received = module.calls[-1][0]
    if len(received) != len(copies):
        return None
    changed = [i for i, (got, given) in enumerate(zip(received, copies))
               if not (isinstance(got, torch.Tensor) and got.shape == x.shape and torch.equal(got, x))]
    return changed[0] if len(changed) == 1 else None


def _other_argument_hint(module, x, extra, does):
    """A hint for an error raised when the hooks worked on a positional argument other than the first."""
    def hint(error):
        position = _normalized_position(module, x, extra)
        if not position:
            return None
        last = " (args[-1], the last one)" if position == len(extra) else ""
        return ("changed-other-arg",
                f"Your hook {does} positional argument {position}{last}, not the first: called with "
                f"{1 + len(extra)} copies of x, the module received argument {position} changed and the first "
                f"unchanged. Here argument {position} is {describe(extra[position - 1])}. Change x = args[0] and "
                "pass args[1:] on unchanged.")
    return hint


def _wrong_dim_hint(x, module=None, extra=()):
    def hint(error):
        if isinstance(error, (AttributeError, TypeError)) and ("'list'" in str(error) or "'tuple'" in str(error)):
            return ("stats-not-tensors", "mean and std are sequences of numbers, lists or tuples (both are "
                    "passed), not tensors: make tensors of them first, torch.as_tensor(mean, dtype=x.dtype), "
                    "whichever of the two they are.")
        if "must match the size of tensor" not in str(error):
            return None
        other = _other_argument_hint(module, x, extra, "normalizes")(error) if module is not None and extra else None
        if other:
            return other
        return ("stats-on-wrong-dim",
                f"mean and std hold one value per channel, dimension 1 of x. Broadcasting lines shapes up from the "
                "last dimension: statistics of shape (C,) meet the LAST dimension of x, and (C, 1, 1) or "
                "(1, C, 1, 1) fit only 4-D inputs. Reshape them to (1, C, 1, ...), with one 1 per dimension of x "
                f"after dimension 1 ({x.dim() - 2} for this {x.dim()}-D x).")
    return hint


def _normalization_mistakes(x, mean, std):
    """(wrong result, slug, hint) for the usual mistakes, in the order they are tried."""
    channels = len(mean)
    shape = (1, channels) + (1,) * (x.dim() - 2)
    m, s = torch.tensor(mean, dtype=x.dtype).view(shape), torch.tensor(std, dtype=x.dtype).view(shape)
    dims = tuple(d for d in range(x.dim()) if d != 1)
    mistakes = [
        ((x - m) / s ** 2, "divided-by-variance", "You divided by std ** 2, the variance; divide by std."),
        (x - m, "std-not-divided", "You subtracted the mean but did not divide by std."),
        ((x - m) * s, "multiplied-by-std", "You multiplied by std; divide by it."),
        ((x - m) / s.sqrt(), "divided-by-sqrt-std", "You divided by the square root of std, as if std were the "
                                                    "variance (F.batch_norm's running_var is a variance, for one); "
                                                    "divide by std itself."),
        (x / s - m, "divided-before-subtracting", "You divided first and subtracted the mean afterwards; compute "
                                                  "(x - mean) / std."),
        ((x - s) / m, "swapped-mean-std", "You swapped mean and std."),
        ((x - x.mean(dim=dims, keepdim=True)) / x.std(dim=dims, keepdim=True), "own-statistics",
         "You normalized with the statistics of x itself; use the given mean and std."),
    ]
    per_sample = x.clone()
    for i in range(min(len(x), channels)):
        per_sample[i] = (x[i] - mean[i]) / std[i]
    mistakes.append((per_sample, "per-sample-statistics",
                     "You normalized sample i with mean[i] and std[i]: iterating over x (zip(x, mean, "
                                 "std), say) walks along dimension 0, the batch. The channels are dimension 1 of "
                                 "(N, C, ...) (a torchvision transform sees one (C, H, W) image, where they come "
                                 "first)."))
    if x.shape[-1] == channels and x.dim() > 2:
        flat_m, flat_s = torch.tensor(mean, dtype=x.dtype), torch.tensor(std, dtype=x.dtype)
        mistakes.insert(0, ((x - flat_m) / flat_s, "stats-on-wrong-dim",
                            "You normalized along the LAST dimension: mean and std of shape (C,) broadcast against "
                            "it. The channels are dimension 1; reshape the statistics to (1, C, 1, ...)."))
    return mistakes


def _expected_normalized(x, mean, std):
    view = (1, x.shape[1]) + (1,) * (x.dim() - 2)
    return (x - torch.tensor(mean, dtype=x.dtype).view(view)) / torch.tensor(std, dtype=x.dtype).view(view)


def _check_normalized(module, x, mean, std, said, extra=(), kwargs=None):
    """Call `module(x, *extra, **kwargs)`; forward must receive x normalized and the other arguments
    as they were."""
    original = x.clone()
    received = _call(module, said, (x, *extra), kwargs, hint_for_error=_wrong_dim_hint(x, module, extra))
    _check_not_changed_in_place(x, original, said, "(x - mean) / std")
    result = _check_first_arg_replaced(received, (x, *extra), said, kwargs)
    half = x.dtype in (torch.float16, torch.bfloat16)  # judged against float64 numbers, to half precision
    expected = _expected_normalized(original.double() if half else original, mean, std)
    if result.shape != expected.shape:
        more = " Your statistics have more dimensions than x: shape them (1, C) followed by one 1 per trailing " \
               "dimension of x, as many as x has." if result.dim() > x.dim() else ""
        fail(f"{said}\nforward received {describe(result)} as x; expected the shape of x, {tuple(x.shape)}.{more}",
             "wrong-shape")
    if result.dtype != x.dtype:
        fail(f"{said}\nforward received x as {describe(result)}; expected dtype {x.dtype}, the dtype of x. "
             "Make the statistics tensors in the dtype of x (dtype=x.dtype): statistics of another dtype promote "
             "x to the wider of the two.", "wrong-dtype")
    if close(result, expected, tolerance=1e-2 if half else 1e-5):
        return result
    for wrong, slug, hint in _normalization_mistakes(original, list(mean), list(std)):
        if close(result, wrong):
            fail(f"{said}\nforward received {describe(result)}; expected {describe(expected)}. {hint}", slug)
    if torch.equal(result, original):
        fail(f"{said}\nforward received x unchanged; expected {describe(expected)}.{_forward_hook_hint(module)}",
             _unchanged(module, "input-unchanged" if module.training else "normalized-in-training-only"))
    fail(f"{said}\nforward received {describe(result)}; expected (x - mean[c]) / std[c] per channel c of "
         f"dimension 1, {describe(expected)}.", "wrong-value")


# The cases of normalize_input: (seed, shape, how the statistics are passed).
NORMALIZE_CASES = [
    (401, (6, 3, 5, 4), list),
    (402, (5, 4), tuple),
    (403, (4, 2, 7), list),
    (404, (3, 3, 2, 2, 3), list),  # the last dimension has C elements: the wrong dimension runs silently
    (405, (4, 5, 3, 3), tuple),
]


def _register_normalize_cases(normalize_input):
    """A module per case, all registered before any is called: [(seed, shape, mean, std, text, module, handle)]."""
    prepared = []
    for seed, shape, kind in NORMALIZE_CASES:
        channels = shape[1]
        mean = kind(round(v, 3) for v in random_tensor(seed + 10, (channels,), scale=2.0).tolist())
        std = kind(round(0.5 + v, 3) for v in random_tensor(seed + 20, (channels,)).abs().tolist())
        text = f"normalize_input(module, mean={mean!r}, std={std!r})"
        module = _Recorder()
        handle = _registered(lambda m: normalize_input(m, mean, std), text, module)
        prepared.append((seed, shape, mean, std, text, module, handle))
    return prepared


def _check_every_rank(mean, std, text, module):
    """One module, inputs of every rank in turn, in eval mode too: the statistics' shape follows each x."""
    done = []
    for seed, shape, mode in ((431, (2, 3, 4, 5), "train"), (432, (7, 3), "train"), (433, (2, 3, 6), "eval"),
                              (434, (3, 3, 2, 2), "eval")):
        getattr(module, mode)()
        x = random_tensor(seed, shape, scale=2.0)
        before = f", after calls with x of shape {', '.join(done)}" if done else ""
        said = f"Registered {text}, called module(x) with x = {describe(x)} in {mode} mode{before}."
        if mode == "eval":
            said += " Normalizing is preprocessing: it happens in eval mode too."
        _check_normalized(module, x, mean, std, said)
        done.append(str(shape))


def _check_half_precision(normalize_input):
    """The statistics follow x's dtype (float32 ones would make the result float32)."""
    module = _Recorder()
    _registered(lambda m: normalize_input(m, [0.5, -1.0, 2.0], [0.25, 2.0, 4.0]), "normalize_input(module, ...)",
                module)
    x = random_tensor(412, (4, 3, 5), dtype=torch.float16, scale=2.0)
    _check_normalized(module, x, [0.5, -1.0, 2.0], [0.25, 2.0, 4.0],
                      f"Registered normalize_input(module, mean=[0.5, -1.0, 2.0], std=[0.25, 2.0, 4.0]), called "
                      f"module(x) with x = {describe(x)}.")


def _check_normalized_gradient(normalize_input):
    leaf = random_tensor(411, (2, 3, 4)).requires_grad_()
    module = _Recorder()
    std = [0.5, 2.0, 4.0]
    _registered(lambda m: normalize_input(m, [0.0, 1.0, -1.0], std), "normalize_input(module, ...)", module)
    said = f"Registered normalize_input(module, mean=[0.0, 1.0, -1.0], std={std}), called module(x) with x = " \
           f"{describe(leaf)}, requiring grad."
    received = _call(module, said, (leaf,), hint_for_error=_wrong_dim_hint(leaf))
    result = _check_first_arg_replaced(received, (leaf,), said)
    _check_gradient_reaches(leaf, result, (1 / torch.tensor(std)).view(1, 3, 1).expand(2, 3, 4), said)


NORMALIZE_MISTAKES = {
    "stats-not-tensors": "computes with mean and std as the lists or tuples they are given as, not tensors",
    "stats-on-wrong-dim": "lines mean and std up with another dimension of x than dimension 1 (the last one, say)",
    "wrong-shape": "hands forward an input of another shape than x (statistics with more dimensions than x)",
    "wrong-dtype": "hands forward an input of another dtype than x (statistics of another dtype)",
    "divided-by-variance": "divides by std ** 2, the variance",
    "std-not-divided": "subtracts the mean without dividing by std",
    "multiplied-by-std": "multiplies by std instead of dividing",
    "divided-by-sqrt-std": "divides by the square root of std",
    "divided-before-subtracting": "divides by std before subtracting the mean",
    "swapped-mean-std": "swaps mean and std",
    "own-statistics": "normalizes with the statistics of x itself instead of the given ones",
    "per-sample-statistics": "normalizes sample i with mean[i] and std[i] (along the batch dimension)",
    "input-unchanged": "leaves x unchanged",
    "normalized-in-training-only": "normalizes in training mode only, not in eval mode",
    "wrong-value": "hands forward values that no diagnosis explains",
}


@check_of("normalize_input", mistakes={**ARGUMENT_MISTAKES, **NORMALIZE_MISTAKES, **GRADIENT_MISTAKES,
                                       **HOOK_KIND_MISTAKES, **HANDLE_MISTAKES})
def check_normalize_input(normalize_input):
    prepared = _register_normalize_cases(normalize_input)
    for seed, shape, mean, std, text, module, _ in prepared:
        dtype = torch.float64 if seed == 405 else torch.float32
        x = random_tensor(seed, shape, dtype=dtype, scale=2.0)
        y = random_tensor(seed + 1, (2,))
        _check_normalized(module, x, mean, std, f"Registered {text}, called module(x, y, mask=y) with x = "
                          f"{describe(x)}.", (y,), {"mask": y})
    _, _, mean, std, text, module, _ = prepared[0]
    _check_every_rank(mean, std, text, module)
    _check_half_precision(normalize_input)
    _check_normalized_gradient(normalize_input)

    *_, text, module, handle = prepared[0]
    module.train()
    handle.remove()
    x = random_tensor(421, (2, 3, 2, 2))
    said = f"Registered {text}, then called handle.remove() and module(x)."
    if not torch.equal(_check_first_arg_replaced(_call(module, said, (x,)), (x,), said), x):
        fail(f"{said}\nforward still received a changed x: return the handle of the pre-hook you registered.",
             "wrong-handle")


# ---------------------------------------------------------------- flatten_images


def _flatten_error_hint(x):
    def hint(error):
        text = str(error)
        if "view size is not compatible" in text:
            return ("view-on-non-contiguous",
                    "x was not contiguous (made by permute or slicing). view() only reinterprets memory laid "
                    "out in order; use x.reshape(N, -1) or x.flatten(1), which copy when needed.")
        if x.dim() <= 2:
            return ("flattened-low-rank", f"x had {x.dim()} dimension(s): a 1-D or 2-D input must pass unchanged; "
                    "look at x.dim() first.")
        if isinstance(error, IndexError):
            return ("only-4d-flattened",
                    f"x had {x.dim()} dimensions: flatten every input with more than 2 dimensions, whatever their "
                    "number, not only 4-D images: x.flatten(1) or x.reshape(x.shape[0], -1).")
        return None
    return hint


def _flattens_in_training_only(module, result, x):
    """Whether an x that passed unchanged in eval mode does get flattened in training mode."""
    if module.training or result.shape != x.shape or x.dim() <= 2:
        return False
    module.train()
    received = _call(module, "Called the module again in train mode", (x,))
    return received[0][0].shape != x.shape


def _diagnose_flatten_shape(module, result, x, expected, said):
    """Fail for a flattened input of the wrong shape, with the mistake that explains it."""
    hint = _forward_hook_hint(module).strip() if result.shape == x.shape else ""
    slug = "forward-hook-not-pre-hook" if hint else None
    if not hint:
        slug, hint = _flatten_mistake_hint(result, x, _flattens_in_training_only(module, result, x))
    fail(f"{said}\nforward received x of shape {tuple(result.shape)}; expected shape {tuple(expected.shape)}. "
         f"{hint}".rstrip(), slug)


def _flatten_mistake_hint(result, x, training_only):
    """(slug, hint) of the mistake that explains a result of the wrong shape."""
    n = x.shape[0]
    if x.dim() <= 2:
        return "flattened-low-rank", f"A {x.dim()}-D input must pass unchanged; flatten only inputs with more than " \
                                     "2 dimensions."
    if result.shape == (x.numel(),):
        return "flattened-batch", "You flattened the batch dimension too; keep dimension 0 and flatten the others: " \
                                  "shape (N, -1)."
    if n == 1 and result.shape == x.squeeze().shape:
        return ("squeezed-batch",
                "You squeezed x: a batch of one sample lost its batch dimension. Keep dimension 0 whatever its "
                "size and flatten the others: shape (N, -1).")
    if result.shape == (x.numel() // x.shape[-1], x.shape[-1]):
        return ("kept-last-dim",
                "You kept the LAST dimension and merged the others into the first; keep the first (batch) "
                "dimension and merge the others: shape (N, -1).")
    if x.dim() > 3 and result.shape == (n, x.shape[1], x[0, 0].numel()):
        return "flattened-from-dim-2", "You flattened from dimension 2 on; flatten every dimension but the first " \
                                       "(from dimension 1)."
    if training_only:
        return ("flattened-in-training-only",
                "x passed unchanged in eval mode, but is flattened in train mode: reshaping the input is no "
                "augmentation, do it in every mode.")
    if result.shape == x.shape and not x.is_contiguous():
        return ("skipped-non-contiguous",
                "x passed unchanged, but it has more than 2 dimensions. It is not contiguous (made by permute or "
                "slicing): flatten such inputs too, with x.reshape(N, -1) or x.flatten(1), which copy when needed.")
    if result.shape == x.shape and x.dim() == 4:
        return "input-unchanged", "x passed unchanged, but it has 4 dimensions, more than 2: flatten it to (N, -1)."
    if result.shape == x.shape:
        return ("only-4d-flattened",
                f"x passed unchanged, but it has {x.dim()} dimensions: flatten every input with more than 2 "
                "dimensions, not only 4-D images.")
    return "wrong-shape", ""


FLATTEN_MISTAKES = {
    "view-on-non-contiguous": "flattens with view(), which fails on a non-contiguous x",
    "flattened-low-rank": "changes a 1-D or 2-D input, which must pass unchanged",
    "only-4d-flattened": "flattens only 4-D inputs, not every input with more than 2 dimensions",
    "flattened-batch": "flattens the batch dimension too",
    "squeezed-batch": "squeezes x, so that a batch of one sample loses its batch dimension",
    "kept-last-dim": "keeps the last dimension and merges the others into the first",
    "flattened-from-dim-2": "flattens from dimension 2 on instead of from dimension 1",
    "flattened-in-training-only": "flattens only in training mode",
    "skipped-non-contiguous": "leaves a non-contiguous x unflattened",
    "input-unchanged": "leaves x unflattened",
    "wrong-shape": "hands forward an input of a shape no diagnosis explains",
    "moved-dimensions": "flattens in another element order than x's own (dimensions moved first)",
}


@check_of("flatten_images", mistakes={**ARGUMENT_MISTAKES, **FLATTEN_MISTAKES, **GRADIENT_MISTAKES,
                                      **HOOK_KIND_MISTAKES, **HANDLE_MISTAKES})
def check_flatten_images(flatten_images):
    permuted = random_tensor(503, (4, 6, 5, 3)).permute(0, 3, 1, 2)  # (4, 3, 6, 5), not contiguous
    sliced = random_tensor(504, (3, 2, 8, 4))[:, :, ::2]  # (3, 2, 4, 4), not contiguous
    inputs = [
        random_tensor(501, (5, 3, 4, 4)),
        random_tensor(502, (1, 2, 3)),
        permuted,
        sliced,
        random_tensor(505, (2, 3, 2, 2, 2), dtype=torch.float64),
        random_tensor(506, (6, 7)),
        random_tensor(507, (7,)),
    ]
    module = _Recorder()
    handle = _registered(flatten_images, "flatten_images(module)", module)
    for number, x in enumerate(inputs):
        y, original = random_tensor(509, (2,)), x.clone()
        layout = "" if x.is_contiguous() else ", not contiguous"
        mode = "eval" if number % 2 else "train"  # reshaping is no augmentation: it happens in both modes
        getattr(module, mode)()
        said = f"Registered flatten_images(module), called module(x, y, mask=y) with x = {describe(x)}{layout}, " \
               f"in {mode} mode."
        received = _call(module, said, (x, y), {"mask": y}, hint_for_error=_flatten_error_hint(x))
        _check_not_changed_in_place(x, original, said, "x.reshape(N, -1)")
        result = _check_first_arg_replaced(received, (x, y), said, {"mask": y})
        expected = original.reshape(original.shape[0], -1) if x.dim() > 2 else original
        if result.shape != expected.shape:
            _diagnose_flatten_shape(module, result, x, expected, said)
        if not torch.equal(result, expected):
            fail(f"{said}\nforward received {describe(result)}, of the right shape but with other values than x "
                 f"flattened ({describe(expected)}). Flatten in the tensor's own element order "
                 "(x.flatten(1) or x.reshape(N, -1)), without moving dimensions first.", "moved-dimensions")

    leaf = random_tensor(510, (2, 3, 2, 2)).requires_grad_()
    said = f"Registered flatten_images(module), called module(x) with x = {describe(leaf)}, requiring grad."
    flat = _check_first_arg_replaced(_call(module, said, (leaf,)), (leaf,), said)
    _check_gradient_reaches(leaf, flat, torch.ones_like(leaf), said)

    handle.remove()
    x = random_tensor(511, (2, 3, 2))
    said = "Registered flatten_images(module), then called handle.remove() and module(x) with a 3-D x."
    if _check_first_arg_replaced(_call(module, said, (x,)), (x,), said).shape != x.shape:
        fail(f"{said}\nforward still received a flattened x: return the handle of the pre-hook you registered.",
             "wrong-handle")


# ---------------------------------------------------------------- force_kwarg


def _check_received_kwargs(received, args, expected_kwargs, said, name, caller_kwargs, other_names, earlier_names):
    received_args, received_kwargs = received
    extended = len(received_args) > len(args) and all(got is given for got, given in zip(received_args, args))
    if not extended and (len(received_args) != len(args)
                         or any(got is not given for got, given in zip(received_args, args))):
        fail(f"{said}\nforward received the positional arguments {_described_args(received_args)}; expected "
             f"{_described_args(args)}, the caller's, unchanged. Return the positional arguments as the hook "
             "received them (args), with only the keyword arguments changed.", "changed-args")
    if extended:
        fail(f"{said}\nforward received the positional arguments {_described_args(received_args)}; expected "
             f"{_described_args(args)}, unchanged. A pre-hook without with_kwargs=True cannot add keyword "
             "arguments (returning a value there adds positional ones); register it with with_kwargs=True and "
             "return (args, kwargs).", "added-positional-arg")
    strangers = [other for other in other_names if other in received_kwargs and other not in caller_kwargs]
    if strangers:
        fail(f"{said}\nforward received the keyword arguments {received_kwargs!r}, with {strangers[0]!r}, the keyword "
             "that force_kwarg was given for ANOTHER module. Each call of force_kwarg must keep its own name and "
             "value: keep them in the hook's closure, not in a global or a class attribute.", "shared-name-and-value")
    stale = [key for key in received_kwargs if key in earlier_names and key != name and key not in caller_kwargs]
    if stale:
        fail(f"{said}\nforward received the keyword arguments {received_kwargs!r}, with {stale[0]!r}, which this call "
             "did not pass (an earlier call did). Build a new dict on every call from the kwargs the hook receives, "
             "instead of updating one dict kept between calls.", "kwargs-kept-between-calls")
    unasked = [key for key in received_kwargs if key != name and key not in caller_kwargs]
    if name not in received_kwargs and unasked:
        fail(f"{said}\nforward received the keyword arguments {received_kwargs!r}: {unasked[0]!r} in place of {name!r}. "
             "Use the value of the parameter `name` as the key (kwargs[name] = value), not a fixed string.",
             "fixed-key")
    if name not in received_kwargs:
        missing = f" The caller did not pass {name!r}: add it then, too, not only override it when passed." \
            if name not in caller_kwargs else ""
        fail(f"{said}\nforward received the keyword arguments {received_kwargs!r}, without {name!r}.{missing} Register "
             "the pre-hook with with_kwargs=True and return (args, kwargs) with kwargs[name] set to value.",
             "keyword-not-added")
    if not _same_argument(received_kwargs[name], expected_kwargs[name]):
        if name in caller_kwargs and _same_argument(received_kwargs[name], caller_kwargs[name]):
            fail(f"{said}\nforward received {name}={received_kwargs[name]!r}, the value the caller passed; expected "
                 f"{expected_kwargs[name]!r}. Override the caller's value; setdefault (or `if name not in kwargs`) "
                 "only adds a missing one.", "caller-value-kept")
        fail(f"{said}\nforward received {name}={received_kwargs[name]!r}; expected {expected_kwargs[name]!r}.",
             "wrong-value")
    if set(received_kwargs) != set(expected_kwargs) or not all(
            _same_argument(received_kwargs[key], value) for key, value in expected_kwargs.items()):
        fail(f"{said}\nforward received the keyword arguments {received_kwargs!r}; expected {expected_kwargs!r}: the "
             f"caller's other keyword arguments must pass through unchanged, with only {name!r} set.",
             "dropped-other-kwargs")


def _same_argument(a, b):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    return type(a) is type(b) and a == b


def _judge_forced(module, received, said, name, value, where, how, calls_made):
    """Before the keyword arguments are judged: what explains a keyword that is not forced at all."""
    if name not in received[1] and module._forward_hooks:
        fail(f"{said}\nforward received the keyword arguments {received[1]!r}, without {name!r}."
             f"{_forward_hook_hint(module)}", "forward-hook-not-pre-hook")
    forced = name in received[1] and _same_argument(received[1][name], value)
    if not forced and calls_made > 1 and not module._forward_pre_hooks:
        fail(f"{said}\nforward received the keyword arguments {received[1]!r}, and the module no longer has "
             "a forward pre-hook: it was removed after an earlier call. The keyword must be forced on EVERY "
             "call: leave the hook registered (only the caller removes it, with the handle).",
             "hook-removed-after-call")
    if not forced and how != "train":
        fail(f"{said}\nforward received the keyword arguments {received[1]!r}; expected {name}={describe(value)} "
             f"on every call, also{where} (the hook passed it in training mode with grad on). Don't look at "
             "module.training or grad mode: force the keyword on every call.", "forced-only-in-training")


def _check_forces_on_every_call(module, text, name, value, other_value, others):
    """Six calls of one module, with and without the keyword, other keywords, eval mode and no_grad."""
    x, y = random_tensor(611, (2, 3)), random_tensor(612, (3,))
    calls = [  # (positional, keyword arguments the caller passes, how the module is called)
        ((x,), {}, "train"),
        ((x,), {name: other_value}, "train"),
        ((x, y), {"keep": 3, name: other_value}, "train"),
        ((x, y), {"keep": "yes"}, "eval"),  # every call: in eval mode too
        ((x,), {name: other_value}, "no_grad"),  # and under torch.no_grad()
        ((x,), {}, "train"),  # after calls with other keywords: nothing of theirs may linger
    ]
    earlier, calls_made = set(), 0
    for args, kwargs, how in calls:
        shown = ", ".join(["x", "y"][:len(args)] + [f"{key}={describe(val)}" for key, val in kwargs.items()])
        where = {"train": "", "eval": " in eval mode", "no_grad": " under torch.no_grad()"}[how]
        after = f" (after {calls_made} earlier call(s))" if calls_made else ""
        said = f"Registered {text}, called module({shown}){where}{after}."
        module.train(how != "eval")
        with torch.set_grad_enabled(how != "no_grad"):
            received = _call(module, said, args, dict(kwargs))
        module.train()
        calls_made += 1
        _judge_forced(module, received, said, name, value, where, how, calls_made)
        _check_received_kwargs(received, args, {**kwargs, name: value}, said, name, kwargs, others, earlier)
        earlier.update(kwargs)


FORCE_MISTAKES = {
    "hook-removed-after-call": "removes the pre-hook after its first call",
    "forced-only-in-training": "forces the keyword only in training mode or with grad on",
    "changed-args": "changes the positional arguments",
    "added-positional-arg": "returns the keyword from a pre-hook without with_kwargs=True, which adds a positional "
                            "argument",
    "shared-name-and-value": "keeps name and value where every hook shares them (a global, a class attribute)",
    "kwargs-kept-between-calls": "updates one dict of keyword arguments kept between calls",
    "fixed-key": "uses a fixed string as the key instead of the value of `name`",
    "keyword-not-added": "does not add the keyword (only overrides it when the caller passed it)",
    "caller-value-kept": "keeps the caller's value (setdefault) instead of overriding it",
    "wrong-value": "hands forward another value for the keyword",
    "dropped-other-kwargs": "drops or changes the caller's other keyword arguments",
    "no-pre-hook": "passes the keyword by other means than a pre-hook (a replaced module.forward)",
}


@check_of("force_kwarg", mistakes={**FORCE_MISTAKES, **HOOK_KIND_MISTAKES, **HANDLE_MISTAKES})
def check_force_kwarg(force_kwarg):
    forced_mask = random_tensor(601, (2, 2))
    cases = [("scale", 2.5, 1.0), ("mode", "fast", "slow"), ("mask", None, forced_mask), ("weights", forced_mask, None)]
    prepared = []
    for name, value, _ in cases:  # register all before calling any
        text = f"force_kwarg(module, {name!r}, {describe(value)})"
        module = _Recorder()
        prepared.append((module, _registered(lambda m: force_kwarg(m, name, value), text, module), text))

    for (name, value, other_value), (module, _, text) in zip(cases, prepared):
        others = [case[0] for case in cases if case[0] != name]
        _check_forces_on_every_call(module, text, name, value, other_value, others)

    for module, _, text in prepared:
        if not module._forward_pre_hooks:
            fail(f"Registered {text}: forward received the keyword on every call, but the module has no forward "
                 "pre-hook (module._forward_pre_hooks is empty), so something else passed it (a replaced "
                 "module.forward, say). Register a pre-hook, module.register_forward_pre_hook(hook, "
                 "with_kwargs=True), and return its handle.", "no-pre-hook")

    module, handle, text = prepared[0]
    handle.remove()
    said = f"Registered {text}, then called handle.remove() and module(x, scale=1.0)."
    _, received_kwargs = _call(module, said, (random_tensor(621, (2,)),), {"scale": 1.0})
    if received_kwargs != {"scale": 1.0}:
        fail(f"{said}\nforward received {received_kwargs!r}; expected {{'scale': 1.0}}: removing the returned "
             "handle must remove the hook. Return the handle of the pre-hook you registered.", "wrong-handle")


_CHILDREN = ("pre:first", "forward:first", "pre:second", "forward:second")
NESTING_ORDER = EventPrediction(
    exercise="predict_nesting_order", lesson="03_forward_pre_hooks", code="nesting_order_events",
    events=("pre:outer", "pre:outer, prepend", "forward:outer") + _CHILDREN,
    aliases=(("fwd", "forward"), ("prehook", "pre"), ("pre-hook", "pre"), ("pre_hook", "pre")),
    rules=(
        Rule("each hook fires once per call of its module, and each module is called once here: an event that "
             "has fired does not fire again.", repeated=True, mistake="event-repeated"),
        Rule("a call starts at the outside: outer(x) runs outer's pre-hooks and then outer's forward, "
             "which calls the children; a child cannot run before the parent that calls it.",
             fired=("pre:outer, prepend", "pre:outer"), predicted=_CHILDREN, mistake="child-before-parent"),
        Rule("a pre-hook runs before its module's forward, every time the module is called: that is what "
             "'pre' means.", predicted=("forward:outer", "forward:first", "forward:second"),
             fired=("pre:outer, prepend", "pre:outer", "pre:first", "pre:second"), mistake="forward-before-pre-hook"),
        Rule("prepend=True puts a hook in front of the hooks the module already has; without it, a module's "
             "hooks run in the order they were registered.", fired=("pre:outer, prepend", "pre:outer"),
             mistake="prepend-ignored"),
        Rule("a child's pre-hook fires only when its parent's forward calls the child: outer's forward starts "
             "right after outer's own pre-hooks; hooks are not run for the whole model up front.",
             fired=("forward:outer",), mistake="child-hooks-up-front"),
    ),
    rule="each call module(x) runs that module's pre-hooks, then its forward; a child's call, with its own "
         "pre-hooks, happens inside its parent's forward, in the order forward calls the children.")

check_predict_nesting_order = prediction_check(NESTING_ORDER)
