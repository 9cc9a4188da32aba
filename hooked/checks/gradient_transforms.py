"""The part every "hook that returns a new gradient" check shares: call the hook
on random gradients and judge what comes back, naming the usual mistakes."""

import torch

from hooked.checks.check_api import calling, fail
from hooked.checks.tensors import close, describe, first_difference

# The named mistakes check_returns_new_gradient recognizes, for the check_of of an exercise that uses it.
MISTAKES = {
    "in-place": "changes the gradient it receives in place instead of returning a new tensor",
    "returned-none": "returns None where a new gradient is expected",
    "not-a-tensor": "returns something other than a tensor",
    "not-dense": "returns a sparse tensor, or one on another device",
    "wrong-shape": "returns a tensor of another shape than the gradient",
    "wrong-dtype": "returns a tensor of another dtype than the gradient",
    "not-finite": "returns inf or nan where the expected gradient is finite",
    "wrong-value": "returns a tensor of the right shape and dtype whose values no diagnosis explains",
}


def check_returns_new_gradient(hook, call_text, grad, expected, known_mistakes=(), nan_hint=""):
    """Call `hook(grad)` and require a new tensor equal to `expected`, with
    `grad` untouched. `known_mistakes` is a list of (wrong result, slug, hint): when the
    result matches a wrong result, its hint is the message and `slug` (a named mistake of the
    exercise's check_of) the mistake. When `expected` is
    `grad` itself, returning None is right too: a hook's None keeps the gradient."""
    original = grad.clone()
    with calling(f"calling {call_text} with grad = {describe(grad)}"):
        result = hook(grad)
    said = f"Called {call_text} with grad = {describe(original)}.\nIt"
    if not torch.equal(grad, original):
        fail(f"{said} changed `grad` in place (it became {describe(grad)}). "
             "A hook must not modify the gradient it receives: the same tensor may be shared "
             "with other parts of the graph. Return a new tensor: use an out-of-place operation, not an in-place "
             "one such as `mul_` or `*=`.", "in-place")
    if result is None and torch.equal(expected, original):
        return original
    if result is None:
        fail(f"{said} returned None. A tensor hook that returns None leaves the gradient unchanged; "
             f"return the new gradient ({describe(expected)}).", "returned-none")
    if not isinstance(result, torch.Tensor):
        fail(f"{said} returned {describe(result)}; expected a tensor ({describe(expected)}).", "not-a-tensor")
    if result.layout != torch.strided or result.device != expected.device:
        fail(f"{said} returned a {result.layout} tensor on {result.device}; expected an ordinary (dense) "
             f"tensor on {expected.device}, like the gradient it received.", "not-dense")
    if result.shape != expected.shape:
        fail(f"{said} returned a tensor of shape {tuple(result.shape)}; expected shape {tuple(expected.shape)}, "
             "the gradient's own shape (PyTorch refuses a hook that changes the size of the gradient).", "wrong-shape")
    if result.dtype != expected.dtype:
        fail(f"{said} returned dtype {result.dtype}; expected {expected.dtype}, the gradient's own dtype "
             "(PyTorch refuses a hook that changes the type of the gradient).", "wrong-dtype")
    if close(result, expected):
        return result
    compared = f"{said} returned {describe(result)}; expected {describe(expected)}.{first_difference(result, expected)}"
    if nan_hint and not torch.isfinite(result).all() and torch.isfinite(expected).all():
        fail(f"{compared} {nan_hint}", "not-finite")
    for wrong, slug, hint in known_mistakes:
        if close(result, wrong):
            fail(f"{compared} {hint}", slug)
    fail(compared, "wrong-value")
