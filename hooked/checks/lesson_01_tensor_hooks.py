"""Checks for lesson 01, tensor hooks."""

import torch

from hooked.checks import gradient_transforms
from hooked.checks.check_api import calling, check_of, fail
from hooked.checks.gradient_transforms import check_returns_new_gradient
from hooked.checks.handles import MISTAKES as HANDLE_MISTAKES, single_handle
from hooked.checks.tensors import close, describe, random_leaf, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints

SEEDS = (11, 12, 13)

# What check_returns_new_gradient names, less "not-finite": only a hook given a nan_hint can be told it.
NEW_GRADIENT_MISTAKES = {slug: what for slug, what in gradient_transforms.MISTAKES.items() if slug != "not-finite"}
# What _check_fresh_each_call and _check_keeps_graph name.
FRESH_RESULT_MISTAKES = {
    "reused-buffer": "returns one buffer kept between calls and overwritten, not a new tensor on every call",
}
GRAPH_MISTAKES = {
    "result-detached": "returns a result cut off from grad's graph (grad.detach(), grad.data, torch.no_grad, a copy)",
    "wrong-second-derivative": "returns a result that is not a plain differentiable function of grad "
                               "(a detached part mixed in)",
    "computed-outside-autograd": "computes the result with something autograd cannot follow (numpy, an out= tensor)",
}
# torch's refusals when a hook computes outside autograd a gradient that requires grad.
OUTSIDE_AUTOGRAD = tuple((text, "computed-outside-autograd", "Under create_graph=True the gradient requires grad, and "
                          f"{what} cannot take part in autograd: compute the result from grad with torch's own "
                          "operations, out of place.")
                         for text, what in (("numpy() on Tensor that requires grad", "numpy"),
                                            ("arguments don't support automatic differentiation", "an out= tensor")))
NOT_A_FUNCTION = {"not-a-function": "returns something other than a function (the hook)"}


def _check_fresh_each_call(hook, call_text, grads, expected):
    """Call `hook` on two gradients of one shape: the first result must not change
    when the hook runs again (a buffer kept between calls and overwritten)."""
    results = []
    for grad in grads:
        with calling(f"calling {call_text} with grad = {describe(grad)}"):
            results.append(hook(grad.clone()))
        if len(results) == 1 and isinstance(results[0], torch.Tensor):
            first = results[0].detach().clone()
    if not isinstance(results[0], torch.Tensor) or not close(first, expected[0]):
        return  # judged by the value checks
    if not close(results[0], first):
        fail(f"Called {call_text} twice, on two gradients of shape {tuple(grads[0].shape)}. The tensor it "
             f"returned the first time changed when it was called again: it was {describe(first)} and now reads "
             f"{describe(results[0])}. Return a new tensor on every call, not a buffer kept between calls and "
             "overwritten: PyTorch may keep a returned gradient as a leaf's .grad.", "reused-buffer")


def _check_keeps_graph(hook, call_text, factor):
    """Under create_graph=True the hook's result must stay differentiable: with the
    hook on x and loss sum(x**3), autograd.grad gives factor * 3x**2, and its own
    derivative is factor * 6x, times factor again (the hook fires in the second pass too)."""
    x = random_leaf(61)
    with calling_with_hints(f"running torch.autograd.grad((x ** 3).sum(), x, create_graph=True) with {call_text} "
                            f"registered on x ({describe(x)})", OUTSIDE_AUTOGRAD):
        x.register_hook(hook)
        (first,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    if first.grad_fn is None:
        fail(f"Under create_graph=True, with {call_text} registered on x, the gradient that "
             "torch.autograd.grad returned no longer requires grad: the hook's result carries no graph, so a "
             "second derivative fails (\"element 0 of tensors does not require grad\"). Compute the result from "
             "grad itself: not from grad.detach() or grad.data, and not under torch.no_grad().", "result-detached")
    with calling(f"differentiating that gradient again, with {call_text} still registered on x"):
        (second,) = torch.autograd.grad(first.sum(), x)
    expected = factor * factor * 6 * x.detach()
    if not close(second, expected):
        fail(f"Under create_graph=True, with {call_text} registered on x and loss sum(x ** 3), the second "
             f"derivative came out as {describe(second)}; expected {describe(expected)} ({factor} * 6x, times "
             f"{factor} again as the hook fires in the second pass). The hook's result must be an ordinary "
             "differentiable function of grad.", "wrong-second-derivative")


def _check_doubles_in_backward(double_grad):
    """As a real hook: x feeds the loss twice, so its hook sees the summed gradient."""
    x = random_leaf(21)
    weight = random_tensor(22, x.shape)
    with calling(f"running backward with double_grad registered on a leaf x ({describe(x)})"):
        x.register_hook(double_grad)
        (x * weight + x).sum().backward()
    expected = 2 * (weight + 1)
    if not close(x.grad, expected):
        fail(f"with double_grad registered on x, x.grad became {describe(x.grad)}; expected twice the "
             f"gradient, {describe(expected)}.", "wrong-grad-in-backward")


DOUBLE_GRAD_MISTAKES = {
    "returned-grad-unchanged": "returns the gradient unchanged",
    "squared-grad": "returns grad * grad, the gradient squared",
    "halved-grad": "returns grad / 2, half the gradient",
    "wrong-grad-in-backward": "doubles the gradient when called, but not when backward calls it as a hook",
}


@check_of("double_grad", mistakes={**NEW_GRADIENT_MISTAKES, **DOUBLE_GRAD_MISTAKES, **FRESH_RESULT_MISTAKES,
                                   **GRAPH_MISTAKES})
def check_double_grad(double_grad):
    for seed in SEEDS:
        dtype = torch.float64 if seed == SEEDS[-1] else torch.float32
        grad = random_tensor(seed, dtype=dtype)
        check_returns_new_gradient(double_grad, "double_grad(grad)", grad, 2 * grad, [
            (grad, "returned-grad-unchanged", "That is the gradient unchanged; double it."),
            (grad * grad, "squared-grad", "That is grad squared (grad * grad); double it instead (2 * grad)."),
            (grad / 2, "halved-grad", "That is half the gradient; multiply by 2 instead."),
        ])
    grads = [random_tensor(seed, (3, 4)) for seed in (14, 15)]
    _check_fresh_each_call(double_grad, "double_grad(grad)", grads, [2 * grad for grad in grads])
    _check_doubles_in_backward(double_grad)
    _check_keeps_graph(double_grad, "double_grad", 2.0)


def _scale_hook(make_scale_hook, factor):
    with calling(f"calling make_scale_hook({factor})"):
        hook = make_scale_hook(factor)
    if not callable(hook):
        fail(f"make_scale_hook({factor}) returned {describe(hook)}; expected a function, the hook, "
             "that PyTorch calls later with the gradient.", "not-a-function")
    return hook


def _what_ignores_factor(result, grad):
    """The hint for a result that is the same whatever the factor."""
    if close(result, grad):
        return "That is the gradient unchanged; multiply it by the factor."
    multiple = ((result.detach().double() * grad.double()).sum() / grad.double().pow(2).sum()).item()
    if close(result, multiple * grad):
        return (f"That is grad times {multiple:.4g} whatever the factor: multiply by `factor`, the argument of "
                "make_scale_hook, not by a fixed number.")
    return "Compute the result from `factor`, the argument of make_scale_hook: grad * factor."


def _check_uses_factor(make_scale_hook):
    """Two hooks, each called right after it is made (so a factor shared between hooks
    still differs), on one gradient: a hook that ignores factor returns the same twice."""
    grad = random_tensor(17)
    results = []
    for factor in (0.5, -3.0):
        hook = _scale_hook(make_scale_hook, factor)
        with calling(f"calling the hook from make_scale_hook({factor}) with grad = {describe(grad)}"):
            results.append(hook(grad.clone()))
    first, second = results
    dense = all(isinstance(result, torch.Tensor) and result.layout == torch.strided for result in results)
    if not (dense and close(first, second)):
        return  # the result changes with factor, or is no dense tensor: judged by the value checks
    fail(f"Called the hooks from make_scale_hook(0.5) and make_scale_hook(-3.0), each right after it was made, "
         f"with the same grad = {describe(grad)}.\nBoth returned {describe(first)}: the result does not change with "
         f"factor. Expected {describe(0.5 * grad)} and {describe(-3.0 * grad)}. {_what_ignores_factor(first, grad)}",
         "ignores-factor")


def _scale_mistakes(grad, factor, others):
    """(wrong result, slug, hint) of a hook from make_scale_hook(factor) called with `grad`;
    `others`: the factors of the other hooks made before it was called."""
    return [
        (grad, "returned-grad-unchanged", "That is the gradient unchanged; multiply it by the factor."),
        (grad + factor, "added-factor", "That is grad + factor; multiply by the factor instead (grad * factor)."),
        *[(other * grad, "shared-factor", f"That is grad times {other}, another hook's factor: each hook must keep "
                                          "its own factor (keep it in the closure, not in a global or class "
                                          "attribute).")
          for other in others],
    ]


def _check_scales_in_backward(make_scale_hook):
    """As a real hook on an intermediate tensor: it scales what flows back to the leaf."""
    x = random_leaf(31)
    with calling("running backward with make_scale_hook(3.0) registered on y = 2 * x"):
        y = 2 * x
        y.register_hook(make_scale_hook(3.0))
        y.sum().backward()
    if not close(x.grad, torch.full_like(x, 6.0)):
        fail(f"with make_scale_hook(3.0) on y = 2 * x, x.grad became {describe(x.grad)}; expected 6 everywhere.",
             "wrong-grad-in-backward")


SCALE_MISTAKES = {
    "ignores-factor": "returns a hook whose result does not change with factor (a fixed number, or none)",
    "returned-grad-unchanged": "returns a hook that gives the gradient back unchanged",
    "added-factor": "adds the factor to the gradient instead of multiplying by it",
    "shared-factor": "keeps the factor where every hook shares it (a global, a class attribute): "
                     "a later make_scale_hook changes the earlier hooks",
    "wrong-grad-in-backward": "returns a hook that scales when called, but not when backward calls it",
}


@check_of("make_scale_hook", mistakes={**NOT_A_FUNCTION, **NEW_GRADIENT_MISTAKES, **SCALE_MISTAKES,
                                       **FRESH_RESULT_MISTAKES, **GRAPH_MISTAKES})
def check_make_scale_hook(make_scale_hook):
    _check_uses_factor(make_scale_hook)
    factors = (0.5, -3.0, 0.0, 2.5)
    hooks = [_scale_hook(make_scale_hook, factor) for factor in factors]
    # Call every hook after all were made, so hooks that share one factor are found out.
    for seed, factor, hook in zip(SEEDS + (14,), factors, hooks):
        dtype = torch.float64 if seed == SEEDS[-1] else torch.float32
        grad = random_tensor(seed, dtype=dtype)
        others = [other for other in factors if other != factor]
        check_returns_new_gradient(hook, f"the hook from make_scale_hook({factor})", grad, factor * grad,
                                   _scale_mistakes(grad, factor, others))
    grads = [random_tensor(seed, (3, 4)) for seed in (15, 16)]
    _check_fresh_each_call(hooks[1], f"the hook from make_scale_hook({factors[1]})", grads,
                           [factors[1] * grad for grad in grads])
    _check_scales_in_backward(make_scale_hook)
    with calling("calling make_scale_hook(-3.0)"):
        hook = make_scale_hook(-3.0)
    _check_keeps_graph(hook, "the hook from make_scale_hook(-3.0)", -3.0)


def _clip(grad, max_norm, norm):
    return grad * (max_norm / norm) if norm > max_norm else grad.clone()


# The cases of make_clip_hook: (max_norm, seed, scale of the gradient, dtype).
CLIP_CASES = [
    (1.0, 41, 10.0, torch.float32),   # too large: rescaled
    (0.5, 42, 0.01, torch.float32),   # small: unchanged
    (3, 43, 50.0, torch.float64),     # an int max_norm, a float64 gradient
    (2.0, 44, 0.0, torch.float32),    # zero stays zero
]
ZERO_NORM_HINT = ("Dividing by the norm of a zero gradient (0) gives nan; return a gradient whose norm is not above "
                  "max_norm unchanged.")


def _clip_hook(make_clip_hook, max_norm):
    with calling(f"calling make_clip_hook({max_norm})"):
        hook = make_clip_hook(max_norm)
    if not callable(hook):
        fail(f"make_clip_hook({max_norm}) returned {describe(hook)}; expected a function, the hook.", "not-a-function")
    return hook


def _clip_mistakes(grad, max_norm, norm):
    """(wrong result, slug, hint) of a hook from make_clip_hook(max_norm) called with `grad` of norm `norm`,
    in the order they are tried: the first that matches names the mistake."""
    wrong = [(grad.clamp(-max_norm, max_norm), "clamped-elements",
              "You clipped each element to [-max_norm, max_norm]; clip the L2 norm over all elements "
              "instead: if grad.norm() > max_norm, return grad * (max_norm / grad.norm()).")]
    if norm > 0:
        wrong += [
            (grad * (max_norm / norm), "rescaled-below-max-norm", "You rescaled a gradient whose norm "
             f"({norm.item():.4g}) was already below max_norm; return it unchanged in that case."),
            (_clip(grad, max_norm, grad.abs().sum()), "l1-norm", "You measured the gradient with the sum of "
             "absolute values (the L1 norm); use the L2 norm, grad.norm()."),
            (_clip(grad, max_norm, grad.abs().max()), "max-element-norm", "You measured the gradient by its "
             "largest element (the max norm); use the L2 norm over all elements, grad.norm()."),
            (_clip(grad, max_norm, grad.pow(2).sum()), "squared-norm", "You measured the gradient with the sum of "
             "its squares, the squared L2 norm; take its square root: grad.norm()."),
            (grad / norm, "rescaled-to-norm-one", "You rescaled the gradient to norm 1 (grad / norm); rescale it "
             "to norm max_norm: grad * (max_norm / norm)."),
            (grad * (norm / max_norm), "inverted-ratio", "You multiplied by norm / max_norm, which makes the "
             "gradient larger; multiply by max_norm / norm."),
            (grad * max_norm, "times-max-norm", "You multiplied by max_norm without dividing by the norm; "
             "multiply by max_norm / norm."),
        ]
    for other in {other for other, _, _, _ in CLIP_CASES if other != max_norm}:
        if norm > min(max_norm, other):
            wrong.append((_clip(grad, other, norm), "shared-max-norm", f"That is the gradient clipped to {other}, "
                          "the max_norm of another hook: each hook must keep its own max_norm (keep it in the "
                          "closure, not in a global or class attribute)."))
    if grad.dim() > 1:
        row_norms = grad.norm(dim=-1, keepdim=True)
        wrong.append((grad * torch.clamp(max_norm / row_norms, max=1.0), "norm-along-dim",
                      "You took the norm along one dimension; take it over all elements (grad.norm())."))
    return wrong


def _check_clips_each_case(make_clip_hook):
    hooks = [_clip_hook(make_clip_hook, max_norm) for max_norm, _, _, _ in CLIP_CASES]
    # Call every hook after all were made, so hooks that share one max_norm are found out.
    for (max_norm, seed, scale, dtype), hook in zip(CLIP_CASES, hooks):
        shape = (2, 3) if seed != 43 else None
        grad = random_tensor(seed, shape, dtype=dtype, scale=scale)
        norm = grad.norm()
        check_returns_new_gradient(hook, f"the hook from make_clip_hook({max_norm})", grad,
                                   _clip(grad, max_norm, norm), _clip_mistakes(grad, max_norm, norm),
                                   nan_hint=ZERO_NORM_HINT)


def _check_measures_each_call(make_clip_hook):
    """One hook, called on a large gradient, then a small one, then a large one of the same shape:
    each call measures the gradient it receives."""
    with calling("calling make_clip_hook(1.0)"):
        hook = make_clip_hook(1.0)
    grads = [random_tensor(45, (3, 4), scale=5.0), random_tensor(46, (3, 4), scale=0.01),
             random_tensor(47, (3, 4), scale=20.0)]
    _check_fresh_each_call(hook, "the hook from make_clip_hook(1.0)", [grads[0], grads[2]],
                           [_clip(grad, 1.0, grad.norm()) for grad in (grads[0], grads[2])])
    results = []
    for grad in grads:
        with calling(f"calling the hook from make_clip_hook(1.0) again, with grad = {describe(grad)}"):
            result = hook(grad.clone())
        # a copy at once: a result overwritten by a later call was judged just above
        results.append(grad.clone() if result is None else
                       result.detach().clone() if isinstance(result, torch.Tensor) else result)
    for number, (grad, result) in enumerate(zip(grads, results), start=1):
        expected = _clip(grad, 1.0, grad.norm())
        if isinstance(result, torch.Tensor) and result.shape == grad.shape and not close(result, expected):
            fail(f"Called one hook from make_clip_hook(1.0) three times, on gradients of norm "
                 f"{', '.join(f'{g.norm().item():.4g}' for g in grads)}. Call number {number} returned "
                 f"{describe(result)}; expected {describe(expected)}. Each call must measure the norm of the "
                 "gradient it receives, not one kept from an earlier call.", "norm-kept-between-calls")


CLIP_MISTAKES = {
    "not-finite": "divides by the norm of a zero gradient, which gives nan",
    "clamped-elements": "clamps each element to [-max_norm, max_norm] instead of clipping the norm",
    "rescaled-below-max-norm": "rescales a gradient whose norm is already below max_norm",
    "l1-norm": "measures the gradient with the L1 norm (sum of absolute values)",
    "max-element-norm": "measures the gradient by its largest element",
    "squared-norm": "measures the gradient by the sum of its squares, the L2 norm without its square root",
    "rescaled-to-norm-one": "rescales to norm 1 (grad / norm) instead of to max_norm",
    "inverted-ratio": "multiplies by norm / max_norm instead of max_norm / norm",
    "times-max-norm": "multiplies by max_norm without dividing by the norm",
    "shared-max-norm": "keeps max_norm where every hook shares it (a global, a class attribute)",
    "norm-along-dim": "takes the norm along one dimension instead of over all elements",
    "norm-kept-between-calls": "measures the norm once and keeps it for later calls",
}


@check_of("make_clip_hook", mistakes={**NOT_A_FUNCTION, **NEW_GRADIENT_MISTAKES, **CLIP_MISTAKES,
                                      **FRESH_RESULT_MISTAKES})
def check_make_clip_hook(make_clip_hook):
    _check_clips_each_case(make_clip_hook)
    _check_measures_each_call(make_clip_hook)


def _witnesses(tensor, seen):
    """Two checker hooks around the learner's: `before` (registered first) notes the
    incoming gradient, `after` (registered last) compares what the learner's hook
    passed on. Neither keeps a reference to a gradient."""

    def before(grad):
        seen["in"] = (grad.data_ptr(), grad.detach().clone())

    def after(grad):
        seen["out"] = (grad.data_ptr(), grad.detach().clone(), grad.grad_fn is not None)

    return before, after


def _check_passed_on(seen, what):
    pointer, incoming = seen["in"]
    out_pointer, outgoing, _ = seen["out"]
    if close(outgoing, incoming):
        return
    if out_pointer == pointer:
        fail(f"{what}, the hook changed the gradient in place: it received {describe(incoming)} and the "
             f"same tensor then read {describe(outgoing)}. Record a copy and leave the gradient itself alone.",
             "in-place")
    fail(f"{what}, the hook replaced the gradient: it received {describe(incoming)} and passed on "
         f"{describe(outgoing)}. The hook must leave the gradient unchanged: return None (or the gradient itself).",
         "replaced-grad")


def _check_one_hook_left(x):
    """After record_grads(x, store) returned: one hook of its own on x, and its handle."""
    added = len(x._backward_hooks or {}) - 1
    if added > 1:
        fail(f"record_grads(x, store) registered {added} hooks on x (x._backward_hooks grew by {added}); expected "
             "one. Register one hook, once.", "registered-twice")
    if added == 0 and not getattr(x, "_post_accumulate_grad_hooks", None):
        fail("record_grads(x, store) returned with no hook of its own left on x (x._backward_hooks did not grow): "
             "the hook was removed before the function returned, for instance by a `with` block around "
             "register_hook, which removes it at the end of the block. Register it and return the handle; the "
             "caller removes it.", "hook-removed-before-return")


def _check_store_length(store, step):
    if len(store) == 2 * step:
        fail(f"after {step} backward pass(es) through x, store holds {len(store)} gradients; expected {step}: "
             "each backward appended two. Register one hook, once.", "appended-twice")
    if len(store) != step:
        fail(f"after {step} backward pass(es) through x, store holds {len(store)} gradient(s); expected {step}. "
             "Append each incoming gradient to the list passed as `store`.",
             "appended-elsewhere" if not store else "store-overwritten")


def _diagnose_two_records(store, weights, x_grad):
    """Which mistake explains what store holds after two passes whose incoming gradients were `weights`."""
    total = weights[0] + weights[1]
    if not close(x_grad, total):
        fail(f"with record_grads registered, x.grad became {describe(x_grad)}; expected {describe(total)}. "
             "The hook must leave the gradient unchanged: return None (or the gradient itself).", "replaced-grad")
    if close(store[0], total) and not close(weights[0], total):
        fail("the first recorded gradient changed after the second backward pass: it now reads "
             f"{describe(store[0])}, the accumulated x.grad, instead of {describe(weights[0])}. PyTorch may keep "
             "the very gradient tensor as x.grad and accumulate into it in place. Store a copy with memory of its own "
             "(clone it), not only a detached view.", "not-cloned")
    if close(store[0], weights[1]) and close(store[1], weights[0]):
        fail(f"store holds the two gradients newest first ({describe(store[0])} is the gradient of the second "
             "backward pass); append each one at the end of the list.", "newest-first")
    if close(store[1], total):
        fail(f"gradient number 2 was recorded as {describe(store[1])}, the accumulated x.grad (the sum of both "
             f"passes), instead of the incoming gradient {describe(weights[1])}. Record the gradient the hook "
             "receives from register_hook, not tensor.grad (a post-accumulate-grad hook sees .grad).",
             "recorded-accumulated-grad")
    for step, (stored, weight) in enumerate(zip(store, weights), start=1):
        if not close(stored, weight):
            fail(f"gradient number {step} was recorded as {describe(stored)}; expected {describe(weight)}.",
                 "wrong-recorded-value")


def _check_records_two_passes(record_grads):
    """Between two witness hooks on a leaf x, two backward passes: one record each, the gradient passed on."""
    x = random_leaf(51)
    store = []
    seen = {}
    before, after = _witnesses(x, seen)
    weights = [random_tensor(52, x.shape), random_tensor(53, x.shape)]
    x.register_hook(before)
    with calling(f"calling record_grads(x, store) with x = {describe(x)}"):
        handle = record_grads(x, store)
    _check_one_hook_left(x)
    x.register_hook(after)
    single_handle(handle, "record_grads(x, store)",
                  "the handle that x.register_hook(...) returns (a torch.utils.hooks.RemovableHandle)",
                  removable_handle=True)
    for step, weight in enumerate(weights, start=1):
        seen.clear()
        with calling(f"running backward number {step} with record_grads registered on x"):
            (x * weight).sum().backward()
        _check_passed_on(seen, f"During backward number {step} through x")
        _check_store_length(store, step)
    _diagnose_two_records(store, weights, x.grad)
    return x


def _check_float64_copy(record_grads):
    """A float64 gradient: a clone keeps the dtype, and with it the values."""
    d = random_tensor(59, (4,), dtype=torch.float64).requires_grad_()
    weight = random_tensor(60, (4,), dtype=torch.float64) / 3
    recorded = []
    with calling(f"calling record_grads(d, store) with d = {describe(d)} and running backward"):
        record_grads(d, recorded)
        (d * weight).sum().backward()
    if len(recorded) == 1 and isinstance(recorded[0], torch.Tensor) and recorded[0].dtype != weight.dtype:
        fail(f"a float64 gradient was recorded as {describe(recorded[0])}, in {recorded[0].dtype}: a clone keeps "
             "the gradient's dtype, and its values with it. Store grad.detach().clone() without converting it.",
             "converted-dtype")
    if len(recorded) == 1 and not (isinstance(recorded[0], torch.Tensor) and torch.equal(recorded[0], weight)):
        fail(f"a float64 gradient {describe(weight)} was recorded as {describe(recorded[0])}; expected an exact "
             "copy of it.", "wrong-recorded-value")
    return d


# torch's refusal to deepcopy a gradient that is part of a graph: the copy was not detached first.
DEEPCOPY_OF_GRAPH = (("support the deepcopy protocol", "stored-with-graph", "Under create_graph=True the gradient is "
                      "part of a graph, and copy.deepcopy refuses a tensor that is not a leaf: store "
                      "grad.detach().clone()."),)


def _check_under_create_graph(record_grads):
    """Under create_graph=True the gradient itself carries a graph; the record must not, and the
    gradient that flows on must keep it."""
    y = random_leaf(54)
    kept = []
    with calling_with_hints("calling record_grads(y, store) and torch.autograd.grad(..., create_graph=True)",
                            DEEPCOPY_OF_GRAPH):
        record_grads(y, kept)
        (gradient,) = torch.autograd.grad((y ** 3).sum(), y, create_graph=True)
    if len(kept) != 1:
        fail(f"after one torch.autograd.grad through y, the new list passed as store holds {len(kept)} gradients; "
             "expected 1. Append each incoming gradient to the list passed as `store`, not to a list of your own.",
             "appended-elsewhere")
    if kept[0].grad_fn is not None:
        fail("under create_graph=True the recorded gradient still requires grad (grad_fn "
             f"{type(kept[0].grad_fn).__name__}), which keeps the whole graph alive. Detach it before storing it.",
             "stored-with-graph")
    if kept[0].requires_grad:
        fail("the recorded gradient requires grad (requires_grad=True; it has no graph, but it is a new leaf that "
             "autograd would track): a detached clone does not. Store grad.detach().clone(), without requires_grad_().",
             "stored-requires-grad")
    if gradient.grad_fn is None:
        fail("under create_graph=True, the gradient that torch.autograd.grad returned lost its graph: the hook "
             "passed on a detached gradient. Store the detached copy, but leave the gradient itself unchanged: "
             "return None.", "passed-on-detached")
    if not close(gradient, 3 * y.detach() ** 2):
        fail(f"under create_graph=True, torch.autograd.grad returned {describe(gradient)} with record_grads on y; "
             f"expected {describe(3 * y.detach() ** 2)}. The hook must leave the gradient unchanged.", "replaced-grad")
    return y


def _check_leaves_tensor_alone(record_grads):
    """It must not change the tensor: its value, its .grad, whether it keeps a .grad."""
    t = random_leaf(57)
    t.grad = random_tensor(58, t.shape)
    value, old_grad = t.detach().clone(), t.grad.clone()
    h = t * 2
    with calling("calling record_grads(t, store) on a leaf t that has a .grad, and on h = t * 2"):
        handles = [record_grads(t, []), record_grads(h, [])]
    if t.grad is None or not close(t.grad, old_grad):
        fail(f"record_grads changed the .grad of the tensor it was given: it was {describe(old_grad)} and is now "
             f"{describe(t.grad)}. Register the hook and leave the tensor alone.", "changed-tensor-grad")
    if not torch.equal(t.detach(), value) or not t.requires_grad:
        fail("record_grads changed the tensor it was given (its values or requires_grad). Register the hook and "
             "leave the tensor alone.", "changed-tensor")
    if h.retains_grad:
        fail("record_grads made the intermediate tensor h keep its .grad (h.retain_grad()), which changes h and "
             "keeps every gradient in memory. The hook records the gradient; nothing else is needed.", "retained-grad")
    for each in handles:
        if hasattr(each, "remove"):
            each.remove()
    return t, h


def _check_each_call_records(record_grads):
    """Two recordings of one tensor, each into its own list: both go on."""
    w = random_leaf(56)
    first, second = [], []
    with calling("calling record_grads(w, first), then record_grads(w, second), and running one backward"):
        record_grads(w, first)
        record_grads(w, second)
        (w * 2).sum().backward()
    if len(first) != 1 or len(second) != 1:
        fail(f"record_grads(w, first) and then record_grads(w, second) on the same w: after one backward, first "
             f"holds {len(first)} gradient(s) and second {len(second)}; expected 1 each. Each call registers its own "
             "hook, and a recording that an earlier call started goes on until its handle is removed.",
             "stops-earlier-recording")
    return w


def _check_removed_on_intermediate(record_grads):
    """On an intermediate tensor, then removed."""
    z = random_leaf(55)
    seen = []
    with calling("calling record_grads on an intermediate tensor h = z * 3"):
        h = z * 3
        handle = record_grads(h, seen)
        h.sum().backward(retain_graph=True)
        handle.remove()
        h.sum().backward()
    if len(seen) != 1:
        fail(f"after handle.remove(), recording went on: store holds {len(seen)} gradients after two backward "
             "passes with the handle removed between them; expected 1. Return the handle of the hook you registered.",
             "wrong-handle")
    if not close(seen[0], torch.ones_like(h)):
        fail(f"on h = z * 3, the recorded gradient is {describe(seen[0])}; expected ones (d sum(h) / dh).",
             "wrong-recorded-value")


RECORD_MISTAKES = {
    "registered-twice": "registers more than one hook on the tensor",
    "hook-removed-before-return": "removes the hook before returning (a with block around register_hook)",
    "in-place": "changes the gradient in place inside the hook",
    "replaced-grad": "returns a new gradient from the hook instead of None, changing what flows on",
    "appended-twice": "appends two records for each gradient",
    "appended-elsewhere": "appends to a list of its own instead of the list passed as store",
    "store-overwritten": "replaces what store holds instead of appending to it",
    "not-cloned": "stores a detached view (detach(), .data) that later passes overwrite, not a clone",
    "newest-first": "puts each new gradient at the front of store",
    "recorded-accumulated-grad": "records tensor.grad, the accumulated sum, instead of the incoming gradient",
    "wrong-recorded-value": "records values other than the incoming gradient's",
    "converted-dtype": "stores the gradient converted to another dtype",
    "stored-with-graph": "stores the gradient with its graph (not detached)",
    "stored-requires-grad": "stores a copy that requires grad (requires_grad_())",
    "passed-on-detached": "returns a detached gradient from the hook, cutting the graph under create_graph=True",
    "changed-tensor-grad": "changes or clears the .grad of the tensor it was given",
    "changed-tensor": "changes the tensor it was given (its values or requires_grad)",
    "retained-grad": "calls retain_grad() on the tensor",
    "stops-earlier-recording": "stops or reuses the recording an earlier call started on the same tensor",
    "wrong-handle": "returns a handle other than its own hook's (one of an earlier call)",
}


@check_of("record_grads", mistakes={**RECORD_MISTAKES, **{slug: HANDLE_MISTAKES[slug] for slug in (
    "handle-in-a-list", "no-handle", "not-a-removable-handle")}})
def check_record_grads(record_grads):
    # Each case gives back the tensors it made, kept alive to the end: no two tensors of the check share
    # an id(), so a record_grads that keys its state by id(tensor) meets only the tensors it was given.
    alive = [_check_records_two_passes(record_grads), _check_float64_copy(record_grads),
             _check_under_create_graph(record_grads), _check_leaves_tensor_alone(record_grads),
             _check_each_call_records(record_grads)]
    _check_removed_on_intermediate(record_grads)
    del alive
