"""Checks for lesson 01, tensor hooks."""

import random

import torch

from hooked.checking import calling, fail
from hooked.checks.gradient_transforms import check_returns_new_gradient
from hooked.checks.tensors import close, describe, random_tensor

SEEDS = (11, 12, 13)


def _leaf(seed, shape=None):
    return random_tensor(seed, shape).requires_grad_()


def check_double_grad(double_grad):
    for seed in SEEDS:
        dtype = torch.float64 if seed == SEEDS[-1] else torch.float32
        grad = random_tensor(seed, dtype=dtype)
        check_returns_new_gradient(double_grad, "double_grad(grad)", grad, 2 * grad, [
            (grad, "That is the gradient unchanged; double it."),
            (grad * grad, "That is grad squared (grad * grad); double it instead (2 * grad)."),
            (grad / 2, "That is half the gradient; multiply by 2 instead."),
        ])
    # As a real hook: x feeds the loss twice, so its hook sees the summed gradient.
    x = _leaf(21)
    weight = random_tensor(22, x.shape)
    with calling(f"running backward with double_grad registered on a leaf x ({describe(x)})"):
        x.register_hook(double_grad)
        (x * weight + x).sum().backward()
    expected = 2 * (weight + 1)
    if not close(x.grad, expected):
        fail(f"with double_grad registered on x, x.grad became {describe(x.grad)}; expected twice the "
             f"gradient, {describe(expected)}.")


def check_make_scale_hook(make_scale_hook):
    factors = (0.5, -3.0, 0.0, 2.5)
    hooks = []
    for factor in factors:
        with calling(f"calling make_scale_hook({factor})"):
            hook = make_scale_hook(factor)
        if not callable(hook):
            fail(f"make_scale_hook({factor}) returned {describe(hook)}; expected a function, the hook, "
                 "that PyTorch calls later with the gradient.")
        hooks.append(hook)
    # Call every hook after all were made, so hooks that share one factor are found out.
    for seed, factor, hook in zip(SEEDS + (14,), factors, hooks):
        grad = random_tensor(seed)
        others = [other for other in factors if other != factor]
        check_returns_new_gradient(hook, f"the hook from make_scale_hook({factor})", grad, factor * grad, [
            (grad, "That is the gradient unchanged; multiply it by the factor."),
            *[(other * grad, f"That is grad times {other}, another hook's factor: each hook must keep its "
                             "own factor (keep it in the closure, not in a global or class attribute).")
              for other in others],
        ])
    # As a real hook on an intermediate tensor: it scales what flows back to the leaf.
    x = _leaf(31)
    with calling("running backward with make_scale_hook(3.0) registered on y = 2 * x"):
        y = 2 * x
        y.register_hook(make_scale_hook(3.0))
        y.sum().backward()
    if not close(x.grad, torch.full_like(x, 6.0)):
        fail(f"with make_scale_hook(3.0) on y = 2 * x, x.grad became {describe(x.grad)}; expected 6 everywhere.")


def check_make_clip_hook(make_clip_hook):
    cases = [  # (max_norm, seed, scale of the gradient)
        (1.0, 41, 10.0),   # too large: rescaled
        (0.5, 42, 0.01),   # small: unchanged
        (3.0, 43, 50.0),
        (2.0, 44, 0.0),    # zero stays zero
    ]
    for max_norm, seed, scale in cases:
        with calling(f"calling make_clip_hook({max_norm})"):
            hook = make_clip_hook(max_norm)
        if not callable(hook):
            fail(f"make_clip_hook({max_norm}) returned {describe(hook)}; expected a function, the hook.")
        grad = random_tensor(seed, (2, 3), scale=scale) if seed != 43 else random_tensor(seed, scale=scale)
        norm = grad.norm()
        expected = grad * (max_norm / norm) if norm > max_norm else grad.clone()
        wrong = [(grad.clamp(-max_norm, max_norm),
                  "You clipped each element to [-max_norm, max_norm]; clip the L2 norm over all elements "
                  "instead: if grad.norm() > max_norm, return grad * (max_norm / grad.norm()).")]
        if norm > 0:
            wrong.append((grad * (max_norm / norm), "You rescaled a gradient whose norm "
                          f"({norm.item():.4g}) was already below max_norm; return it unchanged in that case."))
        if grad.dim() > 1:
            row_norms = grad.norm(dim=-1, keepdim=True)
            wrong.append((grad * torch.clamp(max_norm / row_norms, max=1.0),
                          "You took the norm along one dimension; take it over all elements (grad.norm())."))
        check_returns_new_gradient(hook, f"the hook from make_clip_hook({max_norm})", grad, expected, wrong,
                                   nan_hint="Dividing by the norm of a zero gradient (0) gives nan; return a "
                                            "gradient whose norm is not above max_norm unchanged.")


def check_record_grads(record_grads):
    x = _leaf(51)
    store = []
    weights = [random_tensor(52, x.shape), random_tensor(53, x.shape)]
    with calling(f"calling record_grads(x, store) with x = {describe(x)}"):
        handle = record_grads(x, store)
    if not hasattr(handle, "remove"):
        fail(f"record_grads(x, store) returned {describe(handle)}; expected the handle that "
             "x.register_hook(...) returns, so the caller can remove the hook.")
    for step, weight in enumerate(weights, start=1):
        with calling(f"running backward number {step} with record_grads registered on x"):
            (x * weight).sum().backward()
        if len(store) != step:
            fail(f"after {step} backward pass(es) through x, store holds {len(store)} gradient(s); expected {step}. "
                 "Append each incoming gradient to the list passed as `store`.")
    total = weights[0] + weights[1]
    if not close(x.grad, total):
        fail(f"with record_grads registered, x.grad became {describe(x.grad)}; expected {describe(total)}. "
             "The hook must leave the gradient unchanged: return None (or the gradient itself).")
    if close(store[0], total) and not close(weights[0], total):
        fail("the first recorded gradient changed after the second backward pass: it now reads "
             f"{describe(store[0])}, the accumulated x.grad, instead of {describe(weights[0])}. PyTorch may keep "
             "the very gradient tensor as x.grad and accumulate into it in place. Store a copy with memory of its own "
             "(clone it), not only a detached view.")
    for step, (stored, weight) in enumerate(zip(store, weights), start=1):
        if not close(stored, weight):
            fail(f"gradient number {step} was recorded as {describe(stored)}; expected {describe(weight)}.")

    # Under create_graph=True the gradient itself carries a graph; the record must not.
    y = _leaf(54)
    kept = []
    with calling("calling record_grads(y, store) and torch.autograd.grad(..., create_graph=True)"):
        record_grads(y, kept)
        torch.autograd.grad((y ** 3).sum(), y, create_graph=True)
    if len(kept) != 1:
        fail(f"after one torch.autograd.grad through y, store holds {len(kept)} gradients; expected 1.")
    if kept[0].requires_grad or kept[0].grad_fn is not None:
        fail("under create_graph=True the recorded gradient still requires grad (grad_fn "
             f"{type(kept[0].grad_fn).__name__}), which keeps the whole graph alive. Detach it before storing it.")

    # On an intermediate tensor, then removed.
    z = _leaf(55)
    seen = []
    with calling("calling record_grads on an intermediate tensor h = z * 3"):
        h = z * 3
        handle = record_grads(h, seen)
        h.sum().backward(retain_graph=True)
        handle.remove()
        h.sum().backward()
    if len(seen) != 1:
        fail(f"after handle.remove(), recording went on: store holds {len(seen)} gradients after two backward "
             "passes with the handle removed between them; expected 1. Return the handle of the hook you registered.")
    if not close(seen[0], torch.ones_like(h)):
        fail(f"on h = z * 3, the recorded gradient is {describe(seen[0])}; expected ones (d sum(h) / dh).")


CHECKS = {
    "double_grad": check_double_grad,
    "make_scale_hook": check_make_scale_hook,
    "make_clip_hook": check_make_clip_hook,
    "record_grads": check_record_grads,
}
