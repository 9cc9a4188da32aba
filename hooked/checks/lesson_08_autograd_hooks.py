"""Checks for lesson 08, autograd-level hooks.

fuse_sgd_into_backward is compared with SGD steps computed by hand on a copy of the model
(gradients from torch.autograd.grad, p - lr * g), never with torch.optim (its first step
imports torch._dynamo). call_when_all_grads_ready is watched through tensor hooks of the
check's own, registered before the learner's, so they fire first in every pass.

HalfPrecisionSaver is compared with the check's own pack and unpack (_ReferenceSaver, which also
plays the known-wrong variants): the gradients, the dtype and shape of every saved tensor as
unpack gives it back (read through the graph's `_saved_...` attributes), bytes_saved, and the
memory the graph really keeps: the storages of the tensors made in the forward pass that are
still alive, each counted once (gc.freeze hides the older objects, so this is cheap)."""

import contextlib
import copy
import gc
import random
import warnings
import weakref

import torch
from torch import nn

from hooked.checks.check_api import calling, capitalized, check_of, fail
from hooked.checks.event_predictions import END, EventPrediction, Rule, prediction_check
from hooked.checks.handles import MISTAKES as HANDLE_MISTAKES, handle_list, remove_handles, single_handle
from hooked.checks.seeding import seeded
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints

_ERROR_HINTS = (  # (text in torch's error, the slug of the mistake, what it means for these exercises)
    ("a leaf Variable that requires grad is being used in an in-place operation", "no-grad-missing",
     "Under backward(create_graph=True) grad mode is on inside the hooks, so autograd refuses to change a "
     "parameter in place: change the parameter inside a torch.no_grad() block."),
    ("post accumulate grad hooks should return None", "hook-returns-value",
     "A post-accumulate-grad hook must return None: change the parameter in place and return nothing (an "
     "in-place method such as param.sub_(...) returns the tensor; do not return its result)."),
    ("doesn't require gradient", "hooks-frozen-parameter",
     "A hook cannot be registered on a tensor that does not require grad: skip the frozen parameters "
     "(param.requires_grad is False); they need no update."),
    ("cannot be registered on non-leaf tensors", "hook-on-non-leaf",
     "Post-accumulate-grad hooks go on leaf tensors, such as the parameters themselves (model.parameters())."),
    ("NoneType", "reads-grad-when-none",
     "param.grad was None when your hook read it. Read the gradient before you set param.grad to None; and use the "
     "parameter the hook receives: a hook defined in a loop that uses the loop variable (not its argument) sees the "
     "loop's last parameter, whose gradient may be cleared already or not written yet."),
)
_ERROR_MISTAKES = {
    "no-grad-missing": "changes a parameter in place with grad mode on (no torch.no_grad() block), which autograd "
                       "refuses under backward(create_graph=True)",
    "hook-returns-value": "returns a value from the post-accumulate-grad hook, which must return None",
    "hooks-frozen-parameter": "registers a hook on a frozen parameter (one that does not require grad)",
    "hook-on-non-leaf": "registers the post-accumulate-grad hook on a tensor made from the parameter, not a leaf",
    "reads-grad-when-none": "reads param.grad when it is None: after freeing it, or through the loop variable "
                            "instead of the parameter the hook receives",
}

# Grad mode left changed by the learner's code, which _hinted_call looks for after each call it wraps (in the
# checks of fuse_sgd_into_backward, call_when_all_grads_ready and HalfPrecisionSaver).
GRAD_MODE_MISTAKES = {
    "grad-mode-left-changed": "turns grad mode off (or on) with torch.set_grad_enabled and leaves it so",
}


def _grad_mode_kept(doing, before):
    if torch.is_grad_enabled() != before:
        state = "on" if not before else "off"
        fail(f"{capitalized(doing)} turned grad mode {state} and left it {state} (torch.is_grad_enabled() "
             f"is {not before} afterwards); expected grad mode as it was. Turn grad mode off only inside a "
             "`with torch.no_grad()` block, never with torch.set_grad_enabled.", "grad-mode-left-changed")


_MULTI_ERROR_HINTS = (  # call_when_all_grads_ready: `tensors` holds a non-leaf tensor
    ("cannot be registered on non-leaf tensors", "post-accumulate-hook-on-non-leaf",
     "`tensors` may hold tensors that are not leaves (h = tanh(2 * a) here), and a post-accumulate-grad hook goes on "
     "leaves only (nor does a non-leaf get a .grad to read): watch the gradients themselves, which "
     "torch.autograd.graph.register_multi_grad_hook (or a tensor hook, register_hook) receives for any tensor that "
     "requires grad."),
)


@contextlib.contextmanager
def _hinted_call(doing, hints=_ERROR_HINTS):
    """`calling(doing)`, with the meaning of torch's errors that these exercises run into; and grad
    mode must be as it was afterwards."""
    before = torch.is_grad_enabled()
    with calling_with_hints(doing, hints):
        yield
    _grad_mode_kept(doing, before)

# ---------------------------------------------------------------- fuse_sgd_into_backward

class _TiedReused(nn.Module):
    """Uses `layer` twice (its parameters get one summed gradient), a bare parameter, a weight tied
    to `layer`'s (one parameter under two names: layer.weight and mirror.weight), and a parameter
    `spare` that only the passes with `use_spare` set reach (in the others it gets no gradient)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.randn(4))
        self.mirror = nn.Linear(4, 4)
        self.mirror.weight = self.layer.weight
        self.spare = nn.Parameter(torch.randn(4))
        self.out = nn.Linear(4, 2)
        self.use_spare = False

    def forward(self, x):
        h = torch.tanh(self.mirror(torch.tanh(self.layer(torch.tanh(self.layer(x)))))) * self.scale
        return self.out(h * self.spare if self.use_spare else h)


def _frozen_first():
    model = nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3))
    model[0].requires_grad_(False)
    return model


def _frozen_bias():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
    model[2].bias.requires_grad_(False)
    return model


_MODEL_TEXT = {_frozen_first: "nn.Sequential(Linear(5, 6), Tanh, Linear(6, 3)) with its first Linear frozen",
               _TiedReused: "a model that uses its Linear `layer` twice, ties mirror.weight to layer.weight (one "
                            "parameter under two names), multiplies by a bare parameter `scale`, and uses a parameter "
                            "`spare` only in some passes",
               _frozen_bias: "a 3-Linear nn.Sequential whose middle Linear's bias is frozen"}


def _loss(model, x, weight):
    return (model(x) * weight).sum()


def _named_trainable(model):
    return [(name, p) for name, p in model.named_parameters() if p.requires_grad]


class _Observer:
    """The check's own post-accumulate-grad hook on each parameter, registered after the learner's, so
    that it runs right after them: whether the parameter had taken its step and freed its .grad by then."""

    def __init__(self, model):
        self.before, self.seen = {}, {}
        self.handles = [param.register_post_accumulate_grad_hook(lambda param, name=name: self.look(name, param))
                        for name, param in _named_trainable(model)]

    def new_pass(self, before):
        self.before, self.seen = before, {}

    def look(self, name, param):
        self.seen[name] = (not torch.equal(param.detach(), self.before[name]), param.grad is None)

    def remove(self):
        for handle in self.handles:
            handle.remove()


# The mistakes of handle_list(...) as fuse_sgd_into_backward's check calls it (no plain_list, no iterator_allowed).
_FUSE_HANDLE_MISTAKES = ("handles-not-a-list", "handles-as-dict", "handles-as-generator", "not-handles")
FUSE_MISTAKES = {
    **_ERROR_MISTAKES, **GRAD_MODE_MISTAKES, **{slug: HANDLE_MISTAKES[slug] for slug in _FUSE_HANDLE_MISTAKES},
    "missing-handles": "returns fewer handles than there are parameters that require grad",
    "hooks-shared-parameter-twice": "registers two hooks on a parameter reachable twice (a tied weight), which then "
                                    "takes two steps",
    "steps-in-tensor-hook": "takes the step in a tensor hook (register_hook), which torch.autograd.grad fires too",
    "hook-left-registered": "registers a hook whose handle it does not return, so removing the handles leaves it",
    "steps-frozen-parameter": "changes a parameter that does not require grad",
    "unfreezes-parameters": "makes the frozen parameters require grad (to register a hook on them)",
    "replaces-parameter-data": "takes the right step into new memory (param.data = ...) instead of in place",
    "steps-after-all-grads": "takes every step once all gradients are written, not each in its own hook",
    "grad-zeroed-not-freed": "zeroes .grad instead of setting it to None",
    "grad-not-freed": "leaves .grad set after the step instead of setting it to None",
    "grad-freed-late": "sets .grad to None later than right after the parameter's own step",
    "skips-step-under-grad-mode": "takes no step when grad mode is on in the hooks (backward(create_graph=True))",
    "rebinds-local-name": "rebinds a local name (param = param - ...) instead of changing the parameter in place",
    "uses-loop-variable": "steps the loop's last parameter (the loop variable) instead of the hook's argument",
    "steps-by-parameter": "subtracts lr * the parameter itself, the hook's argument, instead of lr * its gradient",
    "adds-gradient": "adds lr * gradient instead of subtracting it",
    "step-twice-as-large": "takes a step twice as large (applied twice, or another learning rate)",
    "wrong-step-value": "changes the parameter by a step that no diagnosis explains",
}


def _judge_step(model, before, expected, lr, said, create_graph, addresses, observer):
    """Every parameter equals `expected` after a fused step, in its own memory (`addresses`), its .grad
    None, and both done in its own hook (`observer`); frozen ones unchanged."""
    for name, param in model.named_parameters():
        if not param.requires_grad and not torch.equal(param.detach(), before[name]):
            fail(f"{said}: the frozen parameter {name!r} changed. Leave parameters that do not require grad alone.",
                 "steps-frozen-parameter")
    wrong = [name for name, param in _named_trainable(model) if not close(param.detach(), expected[name])]
    if wrong:
        _diagnose_wrong_step(model, before, expected, lr, said, create_graph, wrong)
    moved = [name for name, param in _named_trainable(model) if param.data_ptr() != addresses[name]]
    if moved:
        fail(f"{said}: the parameters {moved} took the right step, but into new memory (their data_ptr() "
             "changed); expected each one updated in place. `param.data = param - lr * param.grad` makes a new "
             "tensor each step, and views of the parameter (weight.t()) or an optimizer's reference to it keep "
             "the old values: change it in place, with an in-place method such as sub_ inside torch.no_grad().",
             "replaces-parameter-data")
    late = [name for name, (stepped, _) in observer.seen.items()
            if not stepped and not torch.equal(expected[name], before[name])]
    if late:
        fail(f"{said}: every parameter took the right step, but {late} had not taken it yet when its own hook had "
             "run (a hook of the check's, registered after yours, looked right after it); expected each parameter "
             "to take its step in its own hook, as soon as backward has written its gradient. Waiting for the "
             "other parameters keeps every gradient alive until the last one, which the fused step is there to "
             "avoid.", "steps-after-all-grads")
    _judge_grads_freed(model, said)
    kept = [name for name, (_, freed) in observer.seen.items() if not freed]
    if kept:
        fail(f"{said}: every .grad is None after backward, but {kept} still had theirs when their own hook had run "
             "(a hook of the check's, registered after yours, looked right after it); expected each hook to set "
             "its parameter's .grad to None right after the step, so that one gradient at a time is alive.",
             "grad-freed-late")


def _diagnose_wrong_step(model, before, expected, lr, said, create_graph, wrong):
    """Fail on the parameters `wrong`, whose values after the step are not `expected`, naming the mistake."""
    unchanged = [name for name, param in _named_trainable(model) if torch.equal(param.detach(), before[name])
                 and not torch.equal(expected[name], before[name])]  # (not `spare` in a pass that skips it)
    if unchanged and len(unchanged) == len(wrong):
        _diagnose_no_step(model, before, expected, said, create_graph, unchanged)
    name = wrong[0]
    param = dict(model.named_parameters())[name].detach()
    if torch.equal(expected[name], before[name]):
        # (only another parameter's hook can change it, and no mistake a learner is known to make does: it names none)
        fail(f"{said}: {name} changed, to {describe(param)}, although this pass does not reach it (it gets no "
             "gradient); expected it unchanged. Step a parameter only in its own hook, when backward has written its "
             "gradient.", None)
    message = (f"{said}: {name} is {describe(param)}; expected {describe(expected[name])}, its value before the "
               f"step minus lr * its gradient.")
    gradient = (before[name] - expected[name]) / lr
    known_steps = (  # (the value a known mistake gives, its slug, what to say)
        (before[name] - lr * before[name], "steps-by-parameter",
         "You subtracted lr * the parameter itself: the hook receives the parameter, not its gradient; read the "
         "gradient from param.grad."),
        (before[name] + lr * gradient, "adds-gradient", "You added lr * gradient; SGD subtracts it."),
        (before[name] - lr * 2 * gradient, "step-twice-as-large",
         "Your step was twice as large: the update was applied twice, or with a learning rate other than lr."),
    )
    for value, slug, hint in known_steps:
        if close(param, value):
            fail(f"{message} {hint}", slug)
    fail(message, "wrong-step-value")


def _diagnose_no_step(model, before, expected, said, create_graph, unchanged):
    """Fail on the parameters `unchanged`, which took no step although the pass reaches them."""
    everything = len(unchanged) == sum(not torch.equal(expected[name], before[name])
                                       for name, _ in _named_trainable(model))
    if everything and create_graph:
        fail(f"{said}: no parameter changed, although the earlier backward() passes did update them; expected "
             "every parameter that requires grad to take the step param - lr * param.grad. Under "
             "backward(create_graph=True) grad mode is on inside the hooks: take the step there too, inside a "
             "torch.no_grad() block.", "skips-step-under-grad-mode")
    expected_step = "expected every parameter that requires grad to take the step param - lr * param.grad. "
    if everything:
        fail(f"{said}: no parameter changed; {expected_step}Change the parameter in place (an in-place method such "
             "as sub_, with grad mode off): `param = param - ...` only rebinds a local name.", "rebinds-local-name")
    fail(f"{said}: the parameters {unchanged} did not change; {expected_step}A hook defined in a loop that uses the "
         "loop variable instead of its argument updates the last parameter only: use the parameter the hook "
         "receives.", "uses-loop-variable")


def _judge_grads_freed(model, said):
    for name, param in _named_trainable(model):
        if param.grad is None:
            continue
        if not param.grad.any():
            fail(f"{said}: {name}.grad is a tensor of zeros after backward; expected None. Set the parameter's "
                 ".grad to None in the hook: zeros still hold the memory the fused step is there to free.",
                 "grad-zeroed-not-freed")
        fail(f"{said}: {name}.grad is still {describe(param.grad)} after backward; expected None. Set the "
             "parameter's .grad to None in the hook after the update, or the gradient stays in memory and the next "
             "backward adds to it.", "grad-not-freed")


# (model factory, lr, input shape, output features, backward passes): the cases, seeds 800, 810, 820
_FUSE_CASES = [(_frozen_first, 0.1, (6, 5), 3, 3), (_TiedReused, 0.05, (5, 4), 2, 3), (_frozen_bias, 0.3, (4, 3), 2, 2)]


@check_of("fuse_sgd_into_backward", mistakes=FUSE_MISTAKES)
def check_fuse_sgd_into_backward(fuse_sgd_into_backward):
    for number, (factory, lr, shape, features, steps) in enumerate(_FUSE_CASES):
        seed = 800 + 10 * number
        model = seeded(seed, factory)
        reference = copy.deepcopy(model)
        call_text = f"fuse_sgd_into_backward(model, lr={lr}) on {_MODEL_TEXT[factory]}"
        handles, observer = _fused(fuse_sgd_into_backward, model, lr, call_text)
        _judge_no_step_in_autograd_grad(model, seed, shape, features, call_text)
        for step in range(steps):
            _run_fused_pass(model, reference, lr, (seed, shape, features), step, steps, call_text, observer)
        observer.remove()
        _judge_handles_remove_hooks(model, handles, seed, shape, features, call_text)


def _fused(fuse_sgd_into_backward, model, lr, call_text):
    """Call the learner's function on `model`; (its handles, the check's observer of its hooks)."""
    frozen = [name for name, param in model.named_parameters() if not param.requires_grad]
    with _hinted_call(f"calling {call_text}"):
        result = fuse_sgd_into_backward(model, lr)
    unfrozen = [name for name in frozen if model.get_parameter(name).requires_grad]
    if unfrozen:
        fail(f"{call_text} made the frozen parameters {unfrozen} require grad; expected them left frozen, with no "
             "hook: parameters that do not require grad need no update (skip them, do not unfreeze them to register "
             "a hook).", "unfreezes-parameters")
    handles = handle_list(result, call_text, "a handle, the one that registering the hooks returned",
                          "the handles of the hooks it registered")
    observer = _Observer(model)
    trainable = len(_named_trainable(model))
    if len(handles) != trainable:
        fail(f"{call_text} returned {len(handles)} handles; expected {trainable}, one per parameter that requires "
             "grad (model.parameters() gives each parameter once, even one used twice or reachable under two "
             "names, as a tied weight is: a second hook on it would take a second step).",
             "hooks-shared-parameter-twice" if len(handles) > trainable else "missing-handles")
    return handles, observer


def _judge_no_step_in_autograd_grad(model, seed, shape, features, call_text):
    """torch.autograd.grad only looks at gradients: it must not step, nor write .grad."""
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    x, weight = random_tensor(seed + 1, shape), random_tensor(seed + 2, (shape[0], features))
    with _hinted_call(f"calling torch.autograd.grad on the loss of {call_text}"):
        torch.autograd.grad(_loss(model, x, weight), [p for _, p in _named_trainable(model)], allow_unused=True)
    moved = [name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])]
    if moved:
        fail(f"{call_text}, then torch.autograd.grad(loss, parameters): the parameters {moved} changed. "
             "torch.autograd.grad fires tensor hooks (register_hook) but not post-accumulate-grad hooks: take "
             "the step in a hook registered with register_post_accumulate_grad_hook, which runs only when "
             "backward writes .grad.", "steps-in-tensor-hook")


def _run_fused_pass(model, reference, lr, inputs, step, steps, call_text, observer):
    """Backward pass number `step` on `model` against an SGD step computed by hand on `reference`; the
    last pass with create_graph=True (grad mode is on inside hooks then)."""
    seed, shape, features = inputs
    create_graph = step == steps - 1
    for m in (model, reference):
        if isinstance(m, _TiedReused):
            m.use_spare = step == 1  # spare gets a gradient in the second pass only
    x = random_tensor(seed + 3 + step, shape)
    weight = random_tensor(seed + 6 + step, (shape[0], features))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    addresses = {name: p.data_ptr() for name, p in model.named_parameters()}
    observer.new_pass(before)
    ref_params = [p for _, p in _named_trainable(reference)]
    grads = torch.autograd.grad(_loss(reference, x, weight), ref_params, allow_unused=True)
    with torch.no_grad():
        for p, g in zip(ref_params, grads):
            if g is not None:  # a parameter the pass does not reach takes no step
                p.sub_(lr * g)
    expected = {name: p.detach() for name, p in reference.named_parameters()}
    how = "backward(create_graph=True)" if create_graph else "backward()"
    said = f"{call_text}, then {step + 1} {how} pass{'es' if step else ''}"
    with _hinted_call(f"running {how} number {step + 1} after {call_text}"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_graph=True warns about the .grad reference cycle
        _loss(model, x, weight).backward(create_graph=create_graph)
    _judge_step(model, before, expected, lr, said, create_graph, addresses, observer)


def _judge_handles_remove_hooks(model, handles, seed, shape, features, call_text):
    """Removing the handles turns the fused step off, and leaves no hook on any parameter."""
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    remove_handles(handles, f"removing the handles that {call_text} returned")
    with _hinted_call(f"running backward after removing the handles that {call_text} returned"):
        _loss(model, random_tensor(seed + 9, shape), random_tensor(seed + 8, (shape[0], features))).backward()
    moved = [name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])]
    if moved:
        fail(f"{call_text}: after removing every returned handle, a backward pass still changed {moved}. Return "
             "the handle of every hook you registered, and register no hook whose handle you do not return.",
             "hook-left-registered")
    for name, param in model.named_parameters():
        left = len(param._post_accumulate_grad_hooks or {}) + len(param._backward_hooks or {})
        if left:
            fail(f"{call_text}: after removing every returned handle, {name} still has {left} hook(s) on it; "
                 "expected none. Return the handle of every hook you registered (a hook whose handle is dropped "
                 "can never be removed).", "hook-left-registered")


# ---------------------------------------------------------------- call_when_all_grads_ready

class _GradientWatch:
    """The check's own tensor hooks: the gradient of each tensor in the current pass."""

    def __init__(self, tensors):
        self.grads = [None] * len(tensors)
        self.handles = [t.register_hook(lambda grad, i=i: self.seen(i, grad)) for i, t in enumerate(tensors)]

    def seen(self, i, grad):
        self.grads[i] = grad.detach().clone()

    def new_pass(self):
        self.grads = [None] * len(self.grads)

    def remove(self):
        for handle in self.handles:
            handle.remove()


class _CallbackRecorder:
    """The callback given to the learner's function: each call, with what was known then."""

    def __init__(self, watch):
        self.watch = watch
        self.calls = []  # (the argument, copies of the check's gradients known at that moment)

    def __call__(self, *args):
        grads = args[0] if len(args) == 1 else None
        # (the entries at the moment of the call, to tell whether the sequence changed after it)
        at_call = list(grads) if isinstance(grads, (list, tuple)) else None
        self.calls.append((args, list(self.watch.grads), at_call))


def _grads_text(grads):
    return "(" + ", ".join(describe(g) for g in grads) + ")"


# The one of torch's errors above that call_when_all_grads_ready can run into (the others are about parameters:
# fuse_sgd_into_backward's)
_CALLBACK_HINTS = tuple(hint for hint in _ERROR_HINTS if hint[1] == "reads-grad-when-none")
CALLBACK_MISTAKES = {
    **GRAD_MODE_MISTAKES,
    "reads-grad-when-none": "reads a tensor's .grad, which is None when the gradients are known (a non-leaf's, or "
                            "not written yet)",
    "post-accumulate-hook-on-non-leaf": "registers a post-accumulate-grad hook, which only leaves take, on a tensor "
                                        "that is not a leaf",
    "handle-in-a-list": "returns the handles of its hooks in a list or tuple instead of one handle",
    "no-handle": HANDLE_MISTAKES["no-handle"],
    "calls-back-while-registering": "calls callback while registering, before any backward pass",
    "not-called-in-a-pass": "does not call callback in a backward pass that reaches some of the tensors (calls back "
                            "once ever, or waits for a gradient of every tensor)",
    "called-per-tensor": "calls callback more than once in one backward pass (once per tensor)",
    "gradients-unpacked": "calls callback with the gradients as separate arguments instead of one sequence",
    "passes-one-tensor": "calls callback with one gradient tensor instead of a sequence (mode='any')",
    "called-before-all-known": "calls callback before every gradient of the pass is known (mode='any')",
    "sequence-changed-after-call": "gives callback a buffer that it changes after the call",
    "not-one-entry-per-tensor": "gives callback something other than a sequence of one entry per tensor (drops the "
                                "None entries)",
    "gradient-from-earlier-pass": "gives an earlier pass's gradient (.grad) for a tensor this pass does not reach",
    "value-instead-of-none": "gives a value (zeros) instead of None for a tensor this pass does not reach",
    "none-for-reached-tensor": "gives None for a tensor the pass reaches (reads .grad, or watches only the leaves)",
    "gradients-out-of-order": "gives the gradients in another order than `tensors`",
    "wrong-gradients": "gives gradients whose values no diagnosis explains",
    "remove-leaves-hooks": "returns a handle whose remove() leaves hooks registered",
}


def _judge_call(recorder, watch, said, reached, tensors):
    """The calls of callback in one backward pass: none when it reaches none of `tensors`, otherwise one, with a
    sequence of their gradients."""
    calls = recorder.calls
    if not calls:
        if any(g is not None for g in watch.grads):
            partial = " reaches only some of the tensors, and" if None in watch.grads else ""
            fail(f"{said}: callback was not called; expected one call, since this pass{partial} computes the "
                 f"gradients of {reached}. Call back once in every backward pass (not once ever), with None for the "
                 "tensors the pass does not reach: autograd's multi-grad hook knows which gradients a pass computes.",
                 "not-called-in-a-pass")
        return
    if all(g is None for g in watch.grads):
        # (no hook on the tensors fires in such a pass, so no mistake a learner is known to make gets here: it names
        # none)
        fail(f"{said}: callback was called, but this pass reaches none of the tensors; expected no call.", None)
    if len(calls) > 1:
        fail(f"{said}: callback was called {len(calls)} times in one backward pass; expected once, after all the "
             "gradients of the pass are known. Hooks on each tensor call back once per tensor.", "called-per-tensor")
    args, known, at_call = calls[0]
    if len(args) != 1:
        fail(f"{said}: callback was called with {len(args)} arguments; expected one, the sequence of gradients.",
             "gradients-unpacked")
    grads = args[0]
    if isinstance(grads, torch.Tensor):
        fail(f"{said}: callback received {describe(grads)}, one tensor; expected a list or tuple with one gradient "
             "per tensor. mode='any' calls back with the first gradient only; use mode='all' (the default).",
             "passes-one-tensor")
    if known != watch.grads and any(k is None and g is not None for k, g in zip(known, watch.grads)):
        fail(f"{said}: callback was called before every gradient of the pass was known (the gradients of "
             f"{[i for i, k in enumerate(known) if k is None and watch.grads[i] is not None]} came later). mode='any' "
             "calls back at the first gradient; mode='all' waits for all of them.", "called-before-all-known")
    _judge_sequence(grads, at_call, watch, said, tensors)


def _judge_sequence(grads, at_call, watch, said, tensors):
    """What callback received: unchanged since the call, one entry per tensor, each its gradient in this pass."""
    changed = at_call is not None and (len(at_call) != len(grads)
                                       or any(then is not now for then, now in zip(at_call, grads)))
    if changed:
        fail(f"{said}: callback received a {type(grads).__name__} that changed after the call (its entries then: "
             f"{_grads_text(at_call)}; once the pass was over: {_grads_text(grads)}); expected it left as it was, "
             "since callback may keep it. Give callback a new list or tuple in each pass (e.g. tuple(buffer)), not a "
             "buffer that you reset or fill later.", "sequence-changed-after-call")
    if not isinstance(grads, (list, tuple)) or len(grads) != len(watch.grads):
        fail(f"{said}: callback received {describe(grads)}; expected a list or tuple of {len(watch.grads)} entries, "
             "one per tensor, in order.", "not-one-entry-per-tensor")
    for i, (got, want) in enumerate(zip(grads, watch.grads)):
        if want is None and got is not None:
            _diagnose_unreached_entry(got, i, tensors, said)
        if want is not None and got is None:
            fail(f"{said}: entry {i} is None; expected {describe(want)}, since this pass computes the gradient of "
                 f"tensor {i}. Pass on the gradients the pass computes, not .grad: .grad may not be written yet when "
                 "they are all known, and a tensor that is not a leaf (made by an operation) gets no .grad, yet has a "
                 "gradient in the pass. Watch every one of `tensors`, not only the leaves.", "none-for-reached-tensor")
        if want is not None and not close(got, want):
            fail(f"{said}: callback received {_grads_text(grads)}; expected {_grads_text(watch.grads)}, the "
                 "gradients of the tensors in this pass, in the order of `tensors`.",
                 "gradients-out-of-order" if _reordered(grads, watch.grads) else "wrong-gradients")


def _judge_kept(kept, said):
    """What callback received in earlier passes is as it was then: a sequence reused in a later pass is not."""
    for number, grads, at_call in kept:
        if at_call is not None and (len(at_call) != len(grads) or any(a is not b for a, b in zip(at_call, grads))):
            fail(f"{said}: the {type(grads).__name__} that callback received in pass {number} changed in a later "
                 f"pass (its entries then: {_grads_text(at_call)}; now: {_grads_text(grads)}); expected it left as "
                 "it was, since callback may keep it. Give callback a new list or tuple in each pass (e.g. "
                 "tuple(buffer)), not one sequence that every pass fills again.", "sequence-changed-after-call")


def _diagnose_unreached_entry(got, i, tensors, said):
    """Fail on entry `i`, `got`, where the pass does not reach tensor i and None was expected."""
    stale = tensors[i].grad if tensors[i].is_leaf else None
    if stale is not None and got.shape == stale.shape and close(got, stale):
        fail(f"{said}: entry {i} is {describe(got)}; expected None, since this pass does not reach tensor {i}. "
             f"That is tensor {i}'s gradient from an earlier pass (its .grad holds it): give the gradients of this "
             "pass, None for a tensor it does not reach; not .grad, nor a buffer left from the pass before.",
             "gradient-from-earlier-pass")
    fail(f"{said}: entry {i} is {describe(got)}; expected None, since this pass does not reach tensor {i}. "
         "Pass None on as it is (zeros would say the gradient was computed and is zero).", "value-instead-of-none")


def _reordered(grads, wanted):
    """Whether `grads` holds the gradients `wanted`, each once, in another order."""
    given = [g for g in grads if isinstance(g, torch.Tensor)]
    expected = [w for w in wanted if w is not None]
    return len(given) == len(expected) and all(
        sum(close(g, w) for g in given) == sum(close(other, w) for other in expected) for w in expected)


def _graph(seed):
    """Leaves a, b and a non-leaf h made from a; the check's tensors are [a, h, b]."""
    rng = random.Random(seed)
    n, m = rng.randint(2, 5), rng.randint(2, 5)
    a = random_tensor(seed, (n,)).requires_grad_()
    b = random_tensor(seed + 1, (m,)).requires_grad_()
    h = torch.tanh(a * 2)
    return a, h, b


def _passes(a, h, b, seed):
    """[(what the loss uses, the loss)] of the backward passes of a case."""
    other = torch.ones(3, requires_grad=True)
    wa, wh, wb = (random_tensor(seed + k, t.shape) for k, t in zip((2, 3, 4), (a, h, b)))
    return [
        ("a, h and b", lambda: (a * wa).sum() + (h * wh).sum() + (b * wb).sum()),
        ("b only", lambda: (b * wb).sum()),
        ("none of them", lambda: (other * 3).sum()),
        ("a, h and b again", lambda: (h * wh * b.sum()).sum()),
        ("h only (and a through it)", lambda: (h * wh).sum()),
        ("a, h and b, with backward(create_graph=True)", lambda: (a * wa * b.sum()).sum() + (h * wh).sum()),
    ]


@check_of("call_when_all_grads_ready", mistakes=CALLBACK_MISTAKES)
def check_call_when_all_grads_ready(call_when_all_grads_ready):
    for number in range(2):
        seed = 850 + 10 * number
        a, h, b = _graph(seed)
        tensors = [a, h, b] if number == 0 else [b, a]
        names = ["a", "h", "b"] if number == 0 else ["b", "a"]
        passes = _passes(a, h, b, seed)
        watch = _GradientWatch(tensors)
        recorder = _CallbackRecorder(watch)
        call_text = (f"call_when_all_grads_ready([{', '.join(names)}], callback), where a and b are leaves and "
                     "h = tanh(2 * a)" if number == 0 else
                     f"call_when_all_grads_ready([{', '.join(names)}], callback) with two leaves")
        handle = _registered_callback(call_when_all_grads_ready, tensors, recorder, call_text)
        kept = []  # (pass number, what callback received, its entries then): callback may keep them
        for count, (uses, loss) in enumerate(passes):
            watch.new_pass()
            recorder.calls.clear()
            with _hinted_call(f"running backward pass {count + 1} (its loss uses {uses}) after {call_text}",
                              _CALLBACK_HINTS), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # create_graph=True warns about the .grad reference cycle
                loss().backward(retain_graph=True, create_graph="create_graph" in uses)
            reached = [name for name, g in zip(names, watch.grads) if g is not None]
            _judge_call(recorder, watch, f"{call_text}, then backward pass {count + 1}, whose loss uses {uses}",
                        reached, tensors)
            kept += [(count + 1, args[0], at_call) for args, _, at_call in recorder.calls]
            _judge_kept(kept, f"{call_text}, then backward pass {count + 1}")
        _judge_removed(handle, watch, recorder, passes[0][1], list(zip(names, tensors)), call_text)


def _registered_callback(call_when_all_grads_ready, tensors, recorder, call_text):
    """Call the learner's function with the check's callback; the one handle it returns."""
    with _hinted_call(f"calling {call_text}", _MULTI_ERROR_HINTS + _CALLBACK_HINTS):
        handle = call_when_all_grads_ready(tensors, recorder)
    if isinstance(handle, (list, tuple)):
        fail(f"{call_text} returned a {type(handle).__name__} of {len(handle)}; expected one handle with a remove() "
             "method that stops the calls (register_multi_grad_hook returns one for all the tensors; a list's own "
             "remove() takes an argument, and removes nothing).", "handle-in-a-list")
    single_handle(handle, call_text, "a handle with a remove() method")
    if recorder.calls:
        fail(f"{call_text} called callback while registering, before any backward pass; expected no call until a "
             "backward pass computes the gradient of one of the tensors.", "calls-back-while-registering")
    return handle


def _judge_removed(handle, watch, recorder, loss, named_tensors, call_text):
    """After handle.remove(), no call in a pass that reaches every tensor, and no hook left on them."""
    with calling(f"calling remove() on the handle that {call_text} returned"):
        handle.remove()
    watch.new_pass()
    recorder.calls.clear()
    with _hinted_call(f"running backward after removing the handle that {call_text} returned", _CALLBACK_HINTS):
        loss().backward()
    if recorder.calls:
        fail(f"{call_text}: after handle.remove(), a backward pass still called callback; expected no call. "
             "Return a handle whose remove() removes every hook you registered (the one handle that "
             "register_multi_grad_hook returns does).", "remove-leaves-hooks")
    watch.remove()
    left = [name for name, t in named_tensors if t._backward_hooks or getattr(t, "_post_accumulate_grad_hooks", None)]
    if left:
        fail(f"{call_text}: after handle.remove(), the tensors {left} still have hooks on them; expected none. "
             "remove() must remove every hook you registered: a hook whose handle is dropped can never be removed.",
             "remove-leaves-hooks")


# ---------------------------------------------------------------- HalfPrecisionSaver

_CONVERTED = (torch.float32, torch.float64)
_SHAPE_HINT = ("Backward got a saved tensor of another shape than the one saved: unpack must give back each tensor "
               "in its original shape. (A cache keyed by data_ptr() gives a view that starts at the same address, "
               "h.t() next to h, the copy of the other tensor: key it by the tensor, id(tensor).)")
_UNPACK_ERROR_HINTS = (  # (text in torch's error, slug, hint): the first text found in the error wins
    ("out of bounds", "converts-tensor-kept-as-is",
     "Backward got an index out of range: an integer tensor that autograd saved (here the indices that torch.sort "
     "keeps) came back changed. float16 holds integers exactly only up to 2048. An integer tensor never requires "
     "grad, so it is a leaf: store leaves as they are."),
    ("dtype", "wrong-dtype-unpacked",
     "Backward got a saved tensor of another dtype than the one saved: unpack must give back each tensor in its "
     "original dtype (keep the dtype next to the float16 tensor, e.g. as a pair, and convert back)."),
    ("must be a matrix", "wrong-shape-unpacked", _SHAPE_HINT),
    ("shape", "wrong-shape-unpacked", _SHAPE_HINT),
    ("size", "wrong-shape-unpacked", _SHAPE_HINT),
    ("pack_hook", "no-super-init",
     "A subclass of torch.autograd.graph.saved_tensors_hooks must call super().__init__(pack, unpack) in its "
     "__init__: that is where saved_tensors_hooks keeps the two hooks it installs on entering."),
    ("tls.stack.empty()", "no-super-enter",
     "Leaving the block removed hooks that were never installed: an __enter__ of your own in a subclass of "
     "saved_tensors_hooks must call super().__enter__() (and __exit__ super().__exit__(...))."),
    ("Boolean value of Tensor", "tensor-compared-by-value",
     "A tensor was compared with ==, which compares its values, not the objects: a weakref.WeakKeyDictionary (or a "
     "list searched with `in`) does that with its keys. Key a cache by id(tensor), or use "
     "torch.utils.weak.WeakTensorKeyDictionary, which compares tensors by identity."),
)


def _hinted_saver_call(doing):
    return _hinted_call(doing, _UNPACK_ERROR_HINTS)


class _BodyError(ValueError):
    """Raised by the check inside a `with saver:` block."""


class _Case:
    """A forward pass: `make(seed)` gives its objects (leaf tensors, or a model and its input),
    `loss(objects)` the loss, `trainable(objects)` the tensors whose .grad backward writes."""

    def __init__(self, text, make, loss, trainable=None, create_graph=False):
        self.text, self.make, self.loss = text, make, loss
        self.trainable = trainable or (lambda objects: [t for t in objects if t.requires_grad])
        self.create_graph = create_graph
        # Whether to measure the memory the graph keeps: create_graph=True keeps the saved tensors
        # in the gradients' graph, so nothing is freed after backward.
        self.measure = not create_graph


def _mlp_params(seed):
    rng = random.Random(seed)
    n, m = rng.randint(3, 6), rng.randint(3, 6)
    return [random_tensor(seed + k, shape).requires_grad_(k > 0) for k, shape in
            enumerate([(rng.randint(2, 5), n), (n, m), (m,), (m, 2)])]


def _mlp_loss(params):
    """tanh's output is saved twice: by tanh, and by the matrix product that uses it."""
    x, w1, b1, w2 = params
    return (torch.tanh(x @ w1 + b1) @ w2).pow(2).sum()


class _LinearNet(nn.Module):
    """nn.Linear layers (they save weight.t(), a view of the weight), the middle one frozen, and the
    last one's weight tied to the first one's (one parameter under two names)."""

    def __init__(self, n):
        super().__init__()
        self.first, self.frozen, self.last = nn.Linear(n, n), nn.Linear(n, n), nn.Linear(n, n)
        self.frozen.requires_grad_(False)
        self.last.weight = self.first.weight

    def forward(self, x):
        return self.last(torch.tanh(self.frozen(torch.tanh(self.first(x))))).pow(2).sum()


def _linear_objects(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 6)
    model = seeded(seed, lambda: _LinearNet(n))
    return [model, random_tensor(seed + 1, (rng.randint(2, 5), n))]


def _linear_loss(objects):
    model, x = objects
    return model(x)


def _linear_trainable(objects):
    return [p for p in objects[0].parameters() if p.requires_grad]


def _mixed_params(seed):
    rng = random.Random(seed)
    n, m = rng.randint(3, 6), 2 * rng.randint(2, 4)
    x = random_tensor(seed, (rng.randint(2, 5), n), dtype=torch.float64)
    w = random_tensor(seed + 1, (n, m), dtype=torch.float64).requires_grad_()
    # Beyond float16's range (65504): converted to float16, it would become inf.
    scale = random_tensor(seed + 2, (m // 2,), dtype=torch.bfloat16, scale=1e6).requires_grad_()
    return [x, w, scale]


def _mixed_loss(params):
    """float64 activations, int64 indices saved by sort, a bfloat16 product, and a float32 activation
    saved last (each converted tensor has a dtype of its own to be given back in).
    (sort, not max_pool1d: max_pool1d costs some 15 ms a call here, sort well under 1 ms.)"""
    x, w, scale = params
    ordered = torch.tanh(x @ w).sort(dim=-1).values[:, ::2]
    low = ordered.bfloat16()
    big = low * scale  # a bfloat16 activation beyond float16's range, which the next product saves
    single = torch.tanh(ordered.float())
    return ordered.pow(2).sum() + (big * low).double().sum() + (single * single).sum()


def _long_sort_params(seed):
    return [random_tensor(seed, (1, 2100)).requires_grad_()]


def _long_sort_loss(params):
    """sort saves int64 indices up to 2099; float16 cannot hold odd integers above 2048 (2099 becomes
    2100, out of range)."""
    ordered = params[0].sort(dim=-1).values
    return (ordered * torch.arange(ordered.shape[-1], dtype=torch.float32)).sum()


def _chain_params(seed):
    rng = random.Random(seed)
    n, m = rng.randint(8, 12), rng.randint(4096, 4200)  # 64 KiB tensors: a freed one's memory is soon reused
    return [random_tensor(seed, (4, n)), random_tensor(seed + 1, (n, m)).requires_grad_()]


def _chain_loss(params):
    """Each tanh output is freed once the next one exists, so later tensors get the memory (and
    often the id) of earlier ones: a cache that does not check its tensor is still alive mixes them up.
    (Whether a freed tensor's memory goes to a later one depends on the allocator and on what the
    heap holds: with 16 steps of 64 KiB tensors a cache keyed by data_ptr, shape and stride was caught
    on 58 to 60 of 60 seeds in a fresh process, but in about half of the runs inside a long pytest
    process; so it is not in the mistake catalogue, whose verdicts must not depend on luck.)"""
    x, w = params
    h = torch.tanh(x @ w)
    for _ in range(16):
        h = torch.tanh(h)
    return (h @ h.t()).pow(2).sum()  # h and h.t(): two tensors at one address


_CASES = [_Case("a small network in float32 (x @ w1 + b1, tanh, @ w2: tanh's output is saved by two operations)",
                _mlp_params, _mlp_loss),
          _Case("a model of nn.Linear layers (they save weight.t(), a view of the weight), its middle layer frozen and "
                "its last weight tied to its first (one parameter under two names)",
                _linear_objects, _linear_loss, _linear_trainable),
          _Case("a pass with float64 activations, torch.sort (it saves int64 indices), a bfloat16 product and a "
                "float32 activation",
                _mixed_params, _mixed_loss),
          _Case("torch.sort over 2100 numbers (it saves int64 indices up to 2099)", _long_sort_params,
                _long_sort_loss),
          _Case("a chain of 17 tanh on (4, m) tensors, each output freed once the next exists, then h @ h.t(), "
                "with backward(create_graph=True)",
                _chain_params, _chain_loss, create_graph=True)]


def _stored_as_is(tensor, leaves=True, views=True, converted=_CONVERTED):
    base = tensor if tensor._base is None or not views else tensor._base
    return (leaves and base.is_leaf) or tensor.dtype not in converted


class _ReferenceSaver:
    """The check's own pack and unpack: the contract's saver, or a known-wrong variant of it.
    `leaves=False` converts leaves too, `views=False` converts views of leaves (weight.t()),
    `once=False` converts a tensor again each time an operation saves it, `inputs=False` converts
    the leaves that do not require grad (inputs), `params=False` the leaves that do and their views
    (a saver that asks requires_grad, not is_leaf); `again_as_is=True` stores the later saves of a
    converted tensor as they are, `all_views=True` every view (of an activation too) as it is;
    `floats=True` converts float16 and bfloat16 activations too, `bfloat16=True` stores its copies as
    bfloat16 instead of float16."""

    def __init__(self, leaves=True, views=True, once=True, inputs=True, params=True, again_as_is=False,
                 all_views=False, floats=False, bfloat16=False):
        self.leaves, self.views, self.once, self.inputs, self.params = leaves, views, once, inputs, params
        self.again_as_is, self.all_views = again_as_is, all_views
        self.converted = (*_CONVERTED, torch.float16, torch.bfloat16) if floats else _CONVERTED
        self.bfloat16 = bfloat16
        self.bytes_saved = 0
        self.copies = {}
        self.saves = []  # (dtype, numel, element size, "as is" / "converted" / "again") of each save
        self.storages = []  # (numel, storage bytes) of each tensor converted

    def pack(self, tensor):
        save = [tensor.dtype, tensor.numel(), tensor.element_size(), "as is"]
        self.saves.append(save)
        keep = tensor.dtype not in self.converted or (tensor.requires_grad and self.params) \
            or (not tensor.requires_grad and self.inputs)
        if (_stored_as_is(tensor, self.leaves, self.views, self.converted) and keep) \
                or (self.all_views and tensor._base is not None):
            return tensor, None
        key = id(tensor)
        if self.once and key in self.copies:
            save[3] = "again"
            return (tensor, None) if self.again_as_is else (self.copies[key], tensor.dtype)
        save[3] = "converted"
        self.storages.append((tensor.numel(), tensor.untyped_storage().nbytes()))
        half = tensor.bfloat16() if self.bfloat16 else tensor.half()
        if self.once:
            self.copies[key] = half
            weakref.finalize(tensor, self.copies.pop, key, None)
        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)
        return half, tensor.dtype

    def unpack(self, packed):
        return packed[0] if packed[1] is None else packed[0].to(packed[1])

    def run(self, case, seed, measure=False):
        """(gradients, bytes the graph holds when `measure`, this reference) of the case's forward
        pass under these hooks."""
        objects = case.make(seed)
        with _watching_new_objects() if measure else contextlib.nullcontext():
            with torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack):
                loss = case.loss(objects)
            held = _new_bytes(_own_tensors(objects) + [loss]) if measure else None
        self.unpacked = _unpacked(loss)
        loss.backward()
        return [t.grad for t in case.trainable(objects)], held, self


@contextlib.contextmanager
def _watching_new_objects():
    """Inside the block, gc.get_objects() lists only the objects made in it (gc.freeze moves every
    older object out of the collector's view), so that _new_bytes looks at a few objects, not at
    every object of the process."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _new_bytes(besides=()):
    """Bytes of the storages of the tensors made inside _watching_new_objects() that are still alive
    (each storage counted once), less the storages of the tensors `besides` (a case's own
    parameters and inputs, whose views such as weight.t() are new tensors; the loss; gradients)."""
    gc.collect()
    skip = {t.untyped_storage().data_ptr() for t in besides}
    found = {}
    for obj in gc.get_objects():
        if issubclass(type(obj), torch.Tensor):
            try:
                storage = obj.untyped_storage()
            except (RuntimeError, NotImplementedError):
                continue
            if storage.data_ptr() and storage.data_ptr() not in skip:
                found[storage.data_ptr()] = storage.nbytes()
    return sum(found.values())


def _own_tensors(objects):
    """The tensors a case made before its forward pass: its leaf tensors, a model's parameters and buffers."""
    own = []
    for obj in objects:
        own += [*obj.parameters(), *obj.buffers()] if isinstance(obj, nn.Module) else [obj]
    return own


def _unpacked(loss):
    """(node, attribute, dtype, shape) of every saved tensor of the graph of `loss`, as backward would
    get it: reading a node's `_saved_...` attribute calls the unpack hook."""
    found, seen, todo = [], set(), [loss.grad_fn]
    while todo:
        node = todo.pop(0)
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in sorted(dir(node)):
            if name.startswith("_saved_"):
                value = getattr(node, name)
                for tensor in value if isinstance(value, (list, tuple)) else [value]:
                    if isinstance(tensor, torch.Tensor):
                        found.append((node.name(), name.removeprefix("_saved_"), tensor.dtype, tuple(tensor.shape)))
        todo += [next_node for next_node, _ in node.next_functions]
    return found


def _judge_unpacked(got, want, said):
    for (node, name, dtype, shape), (_, _, want_dtype, want_shape) in zip(got, want):
        what = f"{said}: the tensor that {node} saved as {name!r} came back from unpack as"
        if dtype != want_dtype:
            fail(f"{what} {str(dtype).removeprefix('torch.')}; expected {str(want_dtype).removeprefix('torch.')}, "
                 "its original dtype (keep the dtype next to the float16 tensor, e.g. as a pair, and convert back to "
                 "it: .float() turns float64 into float32).", "wrong-dtype-unpacked")
        if shape != want_shape:
            fail(f"{what} shape {shape}; expected {want_shape}, its original shape. (A cache keyed by data_ptr() gives a "
                 "view that starts at the same address, h.t() next to h, the copy of the other tensor: key it by the "
                 "tensor, id(tensor).)", "wrong-shape-unpacked")


def _judge_bytes(bytes_saved, reference, said):
    """bytes_saved against the contract's count for the saves `reference` recorded."""
    expected = reference.bytes_saved
    if isinstance(bytes_saved, bool) or not isinstance(bytes_saved, (int, float)) or bytes_saved != expected:
        saves = reference.saves
        converted = [(numel, size) for dtype, numel, size, kind in saves if kind == "converted"]
        text = ", ".join(f"{str(dtype).removeprefix('torch.')} x {numel} ({kind})" for dtype, numel, _, kind in saves)
        message = (f"{said}: bytes_saved is {describe(bytes_saved)}; expected {expected}. Autograd saved {text} "
                   "(dtype x numel); each distinct tensor stored as float16 saves numel * (element_size - 2) bytes.")
        # (a storage holds only the tensor's own numbers unless it is a view: so before 'every byte', which
        # a count of every byte already fails on a pass without views)
        if bytes_saved == sum(storage - numel * 2 for numel, storage in reference.storages):
            fail(f"{message} You counted the bytes of each tensor's storage (untyped_storage().nbytes()): a view's "
                 "storage can be larger than the view (torch.sort(...).values[:, ::2] holds every other number of "
                 "its storage). Count the tensor's own numbers, tensor.numel() * (tensor.element_size() - 2).",
                 "counts-storage-bytes")
        if bytes_saved == sum(numel * size for numel, size in converted):
            fail(f"{message} You counted every byte of those tensors; count only what float16 saves.",
                 "counts-every-byte")
        if bytes_saved == sum(numel * 2 for numel, size in converted):
            fail(f"{message} You counted 2 bytes a number: that is what float16 stores, and what float32 saves, but "
                 "a float64 number takes 8 bytes, so float16 saves 6 (element_size() - 2).", "counts-2-bytes-a-number")
        if bytes_saved == sum(numel for numel, size in converted):
            fail(f"{message} You counted numbers, not bytes.", "counts-numbers")
        if bytes_saved == sum(numel * size // 2 for numel, size in converted):
            fail(f"{message} You counted half of each tensor's bytes: float16 halves a float32 tensor, but a float64 "
                 "number goes from 8 bytes to 2, and saves 6 (element_size() - 2).", "counts-half-the-bytes")
        if bytes_saved == sum(numel * (size - 2) for dtype, numel, size, kind in saves if kind != "as is"):
            fail(f"{message} You counted a tensor that two operations save twice: it is converted once, so it saves "
                 "its bytes once.", "counts-each-save")
        if bytes_saved == sum(numel * (size - 2) for dtype, numel, size, kind in saves):
            fail(f"{message} You counted tensors that stay as they are (leaves, integer or bfloat16 tensors) too.",
                 "counts-unconverted-tensors")
        fail(message, "wrong-count")


def _learner_run(saver, case, objects, said, measure=False):
    """Forward inside `with saver:`, backward after it. Returns (gradients, bytes_saved after forward,
    bytes the graph held after forward and bytes still alive once backward has freed the graph,
    when `measure`)."""
    own = _own_tensors(objects)
    with _watching_new_objects() if measure else contextlib.nullcontext():
        with _hinted_saver_call(f"running the forward pass of {case.text} inside `with saver:`"):
            with saver:
                loss = case.loss(objects)
                held = _new_bytes(own + [loss]) if measure else None  # inside the block: nothing kept till its end
                with calling("reading saver.bytes_saved"):
                    inside = saver.bytes_saved
        with calling("reading saver.bytes_saved"):
            counted = saver.bytes_saved
        if counted != inside:
            fail(f"{said}: bytes_saved was {describe(inside)} inside the block, right after the forward pass, and "
                 f"{describe(counted)} once the block was left; expected the count of the pass already inside the "
                 "block: count in the pack hook, when each tensor is stored, not when the block ends.",
                 "counts-when-block-ends")
        with _hinted_saver_call(f"reading the saved tensors of {case.text} (which calls unpack)"):
            unpacked = _unpacked(loss)
        with _hinted_saver_call(f"running backward (after the `with` block) for {case.text}"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_graph=True warns about the .grad reference cycle
            loss.backward(create_graph=case.create_graph)
        grads = [t.grad for t in case.trainable(objects)]
        del loss
        left = _new_bytes(own + [g for g in grads if g is not None]) if measure else None
    with calling("reading saver.bytes_saved"):
        after_backward = saver.bytes_saved
    if after_backward != counted:
        if isinstance(after_backward, (int, float)) and isinstance(counted, (int, float)) \
                and after_backward < counted:
            fail(f"{said}: bytes_saved was {describe(counted)} after the forward pass and {describe(after_backward)} "
                 "after backward, once the graph and its float16 copies were freed; expected it unchanged. It counts "
                 "the bytes saved by each conversion, as it happens, and never goes down: add to a number in the pack "
                 "hook, do not add up the copies alive now.", "count-goes-down")
        fail(f"{said}: bytes_saved was {describe(counted)} after the forward pass and {describe(after_backward)} "
             "after backward; expected it to change only while tensors are stored, in forward (count in the pack "
             "hook, not in unpack: a tensor is stored once it is saved, whether or not backward ever runs).",
             "counts-in-unpack")
    return grads, counted, held, left, unpacked


def _training_step_inside(saver, case, objects):
    """Forward and backward inside one `with saver:` block. Returns the bytes of the tensors made in
    the block that are still alive before it ends, once backward has freed the graph."""
    own = _own_tensors(objects)
    with _watching_new_objects():
        with _hinted_saver_call(f"running the forward and the backward pass of {case.text} inside one `with saver:` "
                                "block"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_graph=True warns about the .grad reference cycle
            with saver:
                loss = case.loss(objects)
                loss.backward()
                del loss
                grads = [t.grad for t in case.trainable(objects)]
                left = _new_bytes(own + [g for g in grads if g is not None])
    return left


def _all_close(got, want, tolerance=1e-4):
    return all(g is not None and close(g, w, tolerance) for g, w in zip(got, want))


def _same_grads(got, want):
    """Whether `got` are the gradients of a saver that computes as the one that gave `want`: also where both
    overflow (a bfloat16 activation beyond float16's range gives inf, then nan, in the same places)."""
    return all(isinstance(g, torch.Tensor) and g.shape == w.shape for g, w in zip(got, want)) and _all_close(
        [torch.nan_to_num(g.detach()) for g in got], [torch.nan_to_num(w.detach()) for w in want])


# The savers that typical mistakes make (their _ReferenceSaver keywords), most specific first, each with the slug of
# its mistake, what to say when the learner's gradients are that saver's, and when the bytes the graph holds are
# (None: not looked for there).
_SAVER_MISTAKES = (
    (dict(once=False), "converts-each-save",
     None,
     "You converted a tensor each time an operation saved it (tanh's output is saved by tanh and by the next "
     "operation), so the graph holds two float16 copies of it: convert each tensor once, and store that one copy "
     "for every save."),
    (dict(views=False), "converts-parameter-views",
     "You converted the weight.t() that nn.Linear saves: a view of a parameter (its `_base` is a leaf) is stored as "
     "it is, like the parameter itself.",
     "You copied the weight.t() that nn.Linear saves: a view of a parameter is stored as it is, since the parameter "
     "stays alive anyway."),
    (dict(inputs=False), "converts-inputs",
     "You converted a leaf that does not require grad (the input): every leaf is stored as it is, parameters or "
     "not. Whoever made it keeps it, so a float16 copy only adds memory (and rounds the input the weights' "
     "gradients are computed from).",
     "You copied a leaf that does not require grad (the input), which stays alive anyway: store every leaf as it is."),
    (dict(again_as_is=True), "later-saves-as-is",
     "You stored the second save of a tensor as it is, in full precision (tanh's output is saved by tanh and by the "
     "next operation): that keeps the original alive next to its copy. Store the one float16 copy for every save of "
     "the tensor.",
     None),
    (dict(all_views=True), "views-of-activations-as-is",
     None,
     "You stored a view of an activation as it is (the torch.sort(...).values[:, ::2] here; its _base is not a "
     "leaf): it keeps its base, a full-precision activation, alive. Only views of leaves are stored as they are."),
    (dict(params=False), "converts-parameters",
     "You converted the parameters (leaves that require grad) and their views: a leaf is stored as it is, whether "
     "it requires grad or not. requires_grad does not tell an activation from a parameter (both require grad); "
     "is_leaf and _base do.",
     "You copied the parameters (leaves that require grad) and their views, which stay alive anyway: a leaf is "
     "stored as it is, whether it requires grad or not."),
    (dict(leaves=False), "converts-leaves",
     "You converted leaf tensors (the parameters, the input): store leaves as they are. They stay alive anyway, so "
     "a float16 copy only adds memory, and rounds the weights the gradients are computed with.",
     "You copied leaf tensors (parameters, inputs), which stay alive anyway: store leaves as they are."),
    (dict(floats=True), "converts-low-precision",
     "You converted bfloat16 (and float16) activations too: bfloat16 and float16 tensors keep their values, stored "
     "and given back as they are (float16 holds nothing beyond 65504, where bfloat16 goes on to about 3e38).",
     None),
    (dict(bfloat16=True), "copies-as-bfloat16",
     "You stored the copies as bfloat16: the saved tensors are stored as float16 (tensor.half()), whose 10-bit "
     "mantissa keeps more of each number than bfloat16's 7 bits.",
     None),
)

_SAVER_WHAT = {  # what each saver of _SAVER_MISTAKES does, in one line
    "converts-each-save": "converts a tensor again each time an operation saves it",
    "converts-parameter-views": "converts views of parameters (the weight.t() that nn.Linear saves)",
    "converts-inputs": "converts leaves that do not require grad (the input)",
    "later-saves-as-is": "stores the later saves of a converted tensor in full precision",
    "views-of-activations-as-is": "stores every view as it is, also a view of an activation",
    "converts-parameters": "converts the parameters and their views (asks requires_grad, not is_leaf)",
    "converts-leaves": "converts leaf tensors (parameters, inputs)",
    "converts-low-precision": "converts float16 and bfloat16 activations too, which stay as they are",
    "copies-as-bfloat16": "stores the copies as bfloat16 instead of float16",
}
SAVER_MISTAKES = {
    **GRAD_MODE_MISTAKES,
    "not-a-context-manager": "makes an object without __enter__ and __exit__",
    "count-not-starting-at-0": "starts bytes_saved at another value than 0 (a count shared by every saver)",
    "wrong-dtype-unpacked": "gives a saved tensor back from unpack in another dtype than its own",
    "wrong-shape-unpacked": "gives a saved tensor back from unpack in another shape (stored flat, or a cache keyed "
                            "by data_ptr())",
    "no-super-init": "subclasses saved_tensors_hooks without calling super().__init__(pack, unpack)",
    "no-super-enter": "writes its own __enter__ without calling saved_tensors_hooks' own",
    "tensor-compared-by-value": "keys a cache by the tensors themselves (a WeakKeyDictionary), which compares them by "
                                "value",
    "not-stored-as-float16": "stores the saved tensors in full precision (or in another format than float16)",
    **_SAVER_WHAT,
    "wrong-gradients": "gives gradients that no diagnosis explains",
    "converts-tensor-kept-as-is": "converts a tensor that stays as it is to float16 (an integer tensor such as "
                                  "torch.sort's indices, a bfloat16 tensor)",
    "keeps-too-much": "keeps more alive than one float16 copy of each activation (a cache holding the tensors it "
                      "converts)",
    "counts-storage-bytes": "counts the bytes of each tensor's storage instead of the tensor's own numbers",
    "counts-every-byte": "counts every byte of a converted tensor, not the bytes float16 saves",
    "counts-2-bytes-a-number": "counts 2 bytes saved per number, whatever the dtype",
    "counts-numbers": "counts numbers, not bytes",
    "counts-half-the-bytes": "counts half of each tensor's bytes",
    "counts-each-save": "counts a tensor that two operations save twice",
    "counts-unconverted-tensors": "counts the tensors that stay as they are too",
    "wrong-count": "counts bytes_saved in a way that no diagnosis explains",
    "counts-when-block-ends": "adds to bytes_saved when the block ends instead of in the pack hook",
    "count-goes-down": "counts the copies alive now instead of adding up each conversion",
    "counts-in-unpack": "counts in the unpack hook (in backward) instead of in the pack hook",
    "keeps-copies-alive": "keeps float16 copies alive after the tensors they were made from are freed",
    "forgets-copies-at-block-end": "forgets its float16 copies when the block ends, not when their tensor is freed",
    "count-reset-on-enter": "resets bytes_saved to 0 when a block begins",
    "swallowed-exception": "swallows an exception raised inside the `with saver:` block",
    "hooks-left-after-block": "leaves its hooks installed after the block (also one left by an exception)",
}


def _judge_grads(grads, half, case, seed, said):
    for i, (got, want) in enumerate(zip(grads, half)):
        # (autograd itself gives every parameter of the graph a gradient of its own dtype, whatever the saver
        # does: no learner's mistake is known to get here, so these name none)
        if got is None:
            fail(f"{said}: parameter {i} got no gradient.", None)
        if got.dtype != want.dtype:
            fail(f"{said}: the gradient of parameter {i} is {describe(got)}; expected dtype "
                 f"{str(want.dtype).removeprefix('torch.')}.", None)
    if _all_close(grads, half):
        return
    i = next(i for i, (got, want) in enumerate(zip(grads, half)) if not close(got, want, 1e-4))
    message = (f"{said}: the gradient of parameter {i} is {describe(grads[i])}; expected {describe(half[i])}, the "
               "gradient computed with the non-leaf float32 and float64 saved tensors stored as float16.")
    exact_objects = case.make(seed)
    case.loss(exact_objects).backward()
    if _all_close(grads, [t.grad for t in case.trainable(exact_objects)], 1e-6):
        fail(f"{message} Yours is the full-precision gradient: the saved tensors were not stored as float16.",
             "not-stored-as-float16")
    for options, slug, hint, _ in _SAVER_MISTAKES:
        if hint and _same_grads(grads, _ReferenceSaver(**options).run(case, seed)[0]):
            fail(f"{message} {hint}", slug)
    fail(f"{message} Store non-leaf float32 and float64 tensors as float16 (tensor.half()), each tensor once, and "
         "every other tensor unchanged (bfloat16 and float16 tensors keep their values). A cache must check that "
         "its tensor is still alive: a freed tensor's id and memory are given to later tensors.", "wrong-gradients")


def _judge_held(held, case, seed, expected, said):
    """The bytes of tensors made in the forward pass that the graph holds: one float16 copy of each activation."""
    if held == expected:
        return
    message = (f"{said}: after the forward pass the graph holds {held} bytes of tensors made in it; expected "
               f"{expected}.")
    for options, slug, _, hint in _SAVER_MISTAKES:
        if hint and held == _ReferenceSaver(**options).run(case, seed, measure=True)[1]:
            fail(f"{message} {hint}", slug)
    if held < expected:
        fail(f"{message} Your saver stored something smaller than the contract says: a tensor that stays as it is "
             "converted to float16 (a leaf, such as the int64 indices that torch.sort saves: an integer tensor never "
             "requires grad, so it is a leaf; or a bfloat16 tensor).", "converts-tensor-kept-as-is")
    fail(f"{message} Your saver keeps more alive than one float16 copy of each non-leaf activation: a copy "
         "made twice, a leaf copied, or the original tensor kept next to its copy (a cache that holds the "
         "tensors it converts keeps them alive, even if it is cleared when the block ends: hold them by a weak "
         "reference, or by id() only).", "keeps-too-much")


@check_of("HalfPrecisionSaver", mistakes=SAVER_MISTAKES)
def check_HalfPrecisionSaver(HalfPrecisionSaver):
    for number, case in enumerate(_CASES):
        seed = 880 + 10 * number
        saver = _new_saver(HalfPrecisionSaver)
        said = f"saver = HalfPrecisionSaver(), then {case.text} run inside `with saver:`"
        after_first = _judge_first_block(saver, case, seed, said)
        counted = _judge_second_block(saver, case, seed, said, after_first)
        if number == 0:  # a training step inside one block: the copies go with the graph, not at the block's end
            _judge_training_step(saver, case, seed, said)
            # A block left by an exception is left too: the hooks go, and the exception goes on.
            counted = _judge_block_left_by_error(saver, said)
        _judge_nothing_outside(saver, case, seed, said, counted, left_by_error=number == 0)


def _new_saver(HalfPrecisionSaver):
    """A new saver, a context manager whose count starts at 0."""
    with calling("calling HalfPrecisionSaver()"):
        saver = HalfPrecisionSaver()
    for method in ("__enter__", "__exit__"):
        if not hasattr(saver, method):
            fail(f"HalfPrecisionSaver() gave {describe(saver)}, which has no {method}; expected a context manager "
                 "(subclass torch.autograd.graph.saved_tensors_hooks, or write __enter__ and __exit__).",
                 "not-a-context-manager")
    with calling("reading saver.bytes_saved"):
        start = saver.bytes_saved
    if start != 0 or isinstance(start, bool):
        fail(f"HalfPrecisionSaver().bytes_saved is {describe(start)}; expected 0 before any forward pass.",
             "count-not-starting-at-0")
    return saver


def _judge_first_block(saver, case, seed, said):
    """A first forward pass in a block, against the contract's saver: what unpack gives back, the gradients, the
    memory held, the count, and nothing left alive after backward. Returns bytes_saved after it."""
    measure = case.measure
    half, held_expected, first_reference = _ReferenceSaver().run(case, seed, measure)
    grads, after_first, held, left, unpacked = _learner_run(saver, case, case.make(seed), said, measure)
    _judge_unpacked(unpacked, first_reference.unpacked, said)
    _judge_grads(grads, half, case, seed, said)
    if measure:
        _judge_held(held, case, seed, held_expected, said)
    _judge_bytes(after_first, first_reference, said)
    if measure and left:
        fail(f"{said}: once backward had run and the graph was freed, {left} bytes of tensors made in the "
             "forward pass were still alive; expected none. The saver must keep no float16 copy alive after "
             "the tensor it was made from is freed: a cache of copies must forget them (e.g. "
             "weakref.finalize(tensor, ...) or a WeakValueDictionary), or it holds the memory it was there "
             "to save.", "keeps-copies-alive")
    return after_first


def _judge_second_block(saver, case, seed, said, after_first):
    """A second forward in a new block adds to the count. Returns bytes_saved after it."""
    counted = _learner_run(saver, case, case.make(seed + 1), said)[1]
    second = _ReferenceSaver().run(case, seed + 1)[2]
    said_again = f"{said}, then a second forward pass in a second `with saver:` block"
    if after_first and counted == second.bytes_saved:
        fail(f"{said_again}: bytes_saved is {describe(counted)}, the bytes of the second pass only; expected "
             f"{after_first + counted}. bytes_saved starts at 0 when the saver is made and keeps growing: do not "
             "reset it when a block begins.", "count-reset-on-enter")
    _judge_bytes(counted - after_first, second, f"{said_again} (counting its increase)")
    return counted


def _judge_training_step(saver, case, seed, said):
    """Forward and backward in one block: the copies go when backward frees the graph."""
    left = _training_step_inside(saver, case, case.make(seed + 3))
    if left:
        fail(f"{said}, then a forward and a backward pass both inside one `with saver:` block (a training "
             f"step): once backward had freed the graph, {left} bytes of tensors made in the block were still "
             "alive before the block ended; expected none. The saver must forget a float16 copy when the "
             "tensor it was made from is freed, not when the block ends: a training loop inside one block "
             "would keep the copies of every step (weakref.finalize(tensor, ...) removes an entry when its "
             "tensor is freed).", "forgets-copies-at-block-end")
    with calling("reading saver.bytes_saved"):
        return saver.bytes_saved


def _judge_block_left_by_error(saver, said):
    """An exception raised inside the block comes out of it. Returns bytes_saved after it."""
    propagated = False
    with calling("running a `with saver:` block whose body raises ValueError"):
        try:
            with saver:
                raise _BodyError("raised inside the block")
        except _BodyError:
            propagated = True
    if not propagated:
        fail(f"{said}, then a `with saver:` block whose body raised ValueError: the exception did not come "
             "out of the block; expected it to propagate (__exit__ must return False, or what "
             "saved_tensors_hooks' own __exit__ returns).", "swallowed-exception")
    with calling("reading saver.bytes_saved"):
        return saver.bytes_saved


def _judge_nothing_outside(saver, case, seed, said, counted, left_by_error):
    """A pass after the blocks is neither counted nor stored in float16."""
    outside = case.make(seed + 2)
    with _hinted_saver_call(f"running {case.text} after the `with saver:` blocks"):
        case.loss(outside).backward()
    exact_objects = case.make(seed + 2)
    case.loss(exact_objects).backward()
    exact = [t.grad for t in case.trainable(exact_objects)]
    outside_grads = [t.grad for t in case.trainable(outside)]
    with calling("reading saver.bytes_saved"):
        grew = saver.bytes_saved != counted
    if grew or not _all_close(outside_grads, exact, 1e-6):
        after = " (the last one left by an exception raised in its body)" if left_by_error else ""
        fail(f"{said}: after the `with` blocks{after}, a forward pass outside them was still "
             f"{'counted' if grew else 'stored in float16'}. Leaving the block must remove the hooks, also when "
             "an exception leaves it (use saved_tensors_hooks' own __exit__, or call it from yours whatever the "
             "exception).", "hooks-left-after-block")


LEAF_BACKWARD_ORDER = EventPrediction(
    exercise="predict_leaf_backward_order", lesson="08_autograd_hooks", code="leaf_backward_events",
    events=("tensor:h", "tensor:w", "node-pre:w", "node:w", "post:w", "grad:w"),
    aliases=(("nodepre", "node-pre"), ("node_pre", "node-pre"), ("prehook", "node-pre"), ("hook", "node"),
             ("node_hook", "node"), ("post-accumulate", "post"), ("post_accumulate", "post"),
             ("tensor-hook", "tensor")),
    rules=(
        Rule("backward runs from the loss toward the leaves: h lies between the loss and w, so h's gradient is "
             "ready, and its tensor hook fires, before w's.", fired=("tensor:h",), mistake="leaf-hooks-before-h"),
        Rule("w is used twice, but its hooks fire once per backward, with the summed gradient: autograd adds "
             "both of w's gradients before w's AccumulateGrad node runs.", predicted=("tensor:w",),
             fired=("node-pre:w", "grad:w", "post:w", "node:w", END), mistake="used-twice-fires-twice"),
        Rule("there is one backward pass: each hook fires once, and .grad is written once.", repeated=True,
             mistake="event-repeated"),
        Rule("a tensor hook on a leaf fires first among the leaf's hooks, before the AccumulateGrad node's "
             "pre-hook and before .grad is written (its return could still change the gradient).",
             fired=("tensor:w",), mistake="tensor-hook-not-first"),
        Rule("the AccumulateGrad node's pre-hook runs before the node writes .grad.", fired=("node-pre:w",),
             mistake="node-pre-hook-after-grad"),
        Rule("the post-accumulate hook runs right after .grad is written, inside the AccumulateGrad node, before "
             "that node's own hook.", fired=("post:w",), mistake="post-hook-out-of-place"),
        Rule(".grad is written by the AccumulateGrad node, after its pre-hook and before the post-accumulate "
             "hook.", fired=("grad:w",), mistake="grad-written-out-of-place"),
    ),
    rule="a leaf's hooks fire in autograd's order, not the order they were registered: tensor hook, node "
         "pre-hook, .grad written, post-accumulate hook, node hook.")

check_predict_leaf_backward_order = prediction_check(LEAF_BACKWARD_ORDER)
