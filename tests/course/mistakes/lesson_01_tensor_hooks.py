"""Mistake catalogue for lesson 01, tensor hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py."""

ENTRIES = [
    # ------------------------------------------------------------------ double_grad
    dict(exercise="double_grad", kind="wrong", why="changes grad in place with mul_",
         source='''
import torch


def double_grad(grad):
    grad.mul_(2)
    return grad
''',
         expect=["changed `grad` in place", "not an in-place"]),
    dict(exercise="double_grad", kind="wrong", why="changes grad in place with *=",
         source='''
import torch


def double_grad(grad):
    grad *= 2
    return grad
''',
         expect=["in place"]),
    dict(exercise="double_grad", kind="wrong", why="returns None",
         source='''
import torch


def double_grad(grad):
    doubled = grad * 2
''',
         expect=["returned None"]),
    dict(exercise="double_grad", kind="wrong", why="returns grad unchanged",
         source='''
import torch


def double_grad(grad):
    return grad
''',
         expect=["gradient unchanged", "double it"]),
    dict(exercise="double_grad", kind="wrong", why="returns grad squared",
         source='''
import torch


def double_grad(grad):
    return grad * grad
''',
         expect=["grad squared"]),
    dict(exercise="double_grad", kind="wrong", why="halves instead of doubling",
         source='''
import torch


def double_grad(grad):
    return grad / 2
''',
         expect=["half the gradient"]),
    dict(exercise="double_grad", kind="wrong", why="hard-coded for one example",
         source='''
import torch


def double_grad(grad):
    return torch.tensor([2.0, 4.0])
''',
         expect=["shape (2,)", "the gradient's own shape"]),
    dict(exercise="double_grad", kind="wrong", why="changes the dtype",
         source='''
import torch


def double_grad(grad):
    return (grad * 2).double()
''',
         expect=["dtype torch.float64", "the gradient's own dtype"]),
    dict(exercise="double_grad", kind="wrong", why="returns a Python list",
         source='''
import torch


def double_grad(grad):
    return (grad * 2).tolist()
''',
         expect=["returned list", "expected a tensor"]),
    dict(exercise="double_grad", kind="right", why="adds grad to itself",
         source='''
import torch


def double_grad(grad):
    return grad + grad
''',
         expect=[]),
    dict(exercise="double_grad", kind="right", why="torch.mul",
         source='''
import torch


def double_grad(grad):
    return torch.mul(grad, 2)
''',
         expect=[]),
    dict(exercise="double_grad", kind="right", why="in place on a clone",
         source='''
import torch


def double_grad(grad):
    copy = grad.clone()
    copy.mul_(2)
    return copy
''',
         expect=[]),

    # ------------------------------------------------------------------ make_scale_hook
    dict(exercise="make_scale_hook", kind="wrong", why="hook changes grad in place",
         source='''
import torch


def make_scale_hook(factor):
    def hook(grad):
        grad.mul_(factor)
        return grad

    return hook
''',
         expect=["changed `grad` in place"]),
    dict(exercise="make_scale_hook", kind="wrong", why="factor shared through a global",
         source='''
import torch

current_factor = 1.0


def make_scale_hook(factor):
    global current_factor
    current_factor = factor

    def hook(grad):
        return grad * current_factor

    return hook
''',
         expect=["own factor"]),
    dict(exercise="make_scale_hook", kind="wrong", why="factor shared through a class attribute",
         source='''
import torch


class ScaleHook:
    factor = 1.0

    def __call__(self, grad):
        return grad * ScaleHook.factor


def make_scale_hook(factor):
    ScaleHook.factor = factor
    return ScaleHook()
''',
         expect=["own factor", "class attribute"]),
    dict(exercise="make_scale_hook", kind="wrong", why="hook returns None",
         source='''
import torch


def make_scale_hook(factor):
    def hook(grad):
        scaled = grad * factor

    return hook
''',
         expect=["returned None"]),
    dict(exercise="make_scale_hook", kind="wrong", why="hook returns grad unchanged",
         source='''
import torch


def make_scale_hook(factor):
    def hook(grad):
        return grad

    return hook
''',
         expect=["gradient unchanged", "multiply it by the factor"]),
    dict(exercise="make_scale_hook", kind="wrong", why="returns a tensor instead of a function",
         source='''
import torch


def make_scale_hook(factor):
    return torch.tensor(factor)
''',
         expect=["expected a function"]),
    dict(exercise="make_scale_hook", kind="wrong", why="forgets to return the hook",
         source='''
import torch


def make_scale_hook(factor):
    def hook(grad):
        return grad * factor
''',
         expect=["returned None", "expected a function"]),
    dict(exercise="make_scale_hook", kind="wrong", why="calls the hook instead of returning it",
         source='''
import torch


def make_scale_hook(factor):
    def hook(grad):
        return grad * factor

    return hook()
''',
         expect=["calling make_scale_hook(0.5) raised TypeError", "return hook()"]),
    dict(exercise="make_scale_hook", kind="right", why="returns a lambda",
         source='''
import torch


def make_scale_hook(factor):
    return lambda grad: torch.mul(grad, factor)
''',
         expect=[]),
    dict(exercise="make_scale_hook", kind="right", why="callable object with the factor on the instance",
         source='''
import torch


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, grad):
        return self.factor * grad


def make_scale_hook(factor):
    return Scale(factor)
''',
         expect=[]),
    dict(exercise="make_scale_hook", kind="right", why="functools.partial",
         source='''
import functools

import torch


def make_scale_hook(factor):
    return functools.partial(torch.mul, other=factor)
''',
         expect=[]),

    # ------------------------------------------------------------------ make_clip_hook
    dict(exercise="make_clip_hook", kind="wrong", why="clamps each element",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        return grad.clamp(-max_norm, max_norm)

    return hook
''',
         expect=["each element", "L2 norm over all elements"]),
    dict(exercise="make_clip_hook", kind="wrong", why="always rescales",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        return grad * (max_norm / grad.norm())

    return hook
''',
         expect=["already below max_norm", "unchanged"]),
    dict(exercise="make_clip_hook", kind="wrong", why="divides by a zero norm",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        norm = grad.norm()
        return grad / norm * torch.clamp(norm, max=max_norm)

    return hook
''',
         expect=["nan", "zero gradient"]),
    dict(exercise="make_clip_hook", kind="wrong", why="norm of each row",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        norms = grad.norm(dim=-1, keepdim=True)
        return torch.where(norms > max_norm, grad * (max_norm / norms), grad)

    return hook
''',
         expect=["along one dimension", "over all elements"]),
    dict(exercise="make_clip_hook", kind="wrong", why="rescales grad in place",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        norm = grad.norm()
        if norm > max_norm:
            grad *= max_norm / norm
        return grad

    return hook
''',
         expect=["changed `grad` in place"]),
    dict(exercise="make_clip_hook", kind="wrong", why="forgets to return the hook",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        norm = grad.norm()
        if norm > max_norm:
            return grad * (max_norm / norm)
        return grad
''',
         expect=["returned None", "expected a function"]),
    dict(exercise="make_clip_hook", kind="right", why="returns None when the gradient is small enough",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        norm = torch.linalg.vector_norm(grad)
        if norm > max_norm:
            return grad * (max_norm / norm)
        return None  # a tensor hook's None keeps the gradient as it is

    return hook
''',
         expect=[]),
    dict(exercise="make_clip_hook", kind="right", why="clamped scale with an epsilon",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        scale = torch.clamp(max_norm / (grad.norm() + 1e-12), max=1.0)
        return grad * scale

    return hook
''',
         expect=[]),
    dict(exercise="make_clip_hook", kind="right", why="linalg.vector_norm and torch.where",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        total = torch.linalg.vector_norm(grad.flatten())
        return torch.where(total > max_norm, grad * (max_norm / total), grad)

    return hook
''',
         expect=[]),
    dict(exercise="make_clip_hook", kind="right", why="callable object returning a clone",
         source='''
import torch


class Clip:
    def __init__(self, max_norm):
        self.max_norm = max_norm

    def __call__(self, grad):
        size = grad.pow(2).sum().sqrt().item()
        if size <= self.max_norm:
            return grad.clone()
        return grad.mul(self.max_norm / size)


def make_clip_hook(max_norm):
    return Clip(max_norm)
''',
         expect=[]),

    # ------------------------------------------------------------------ record_grads
    dict(exercise="record_grads", kind="wrong", why="detach without clone",
         source='''
import torch


def record_grads(tensor, store):
    def hook(grad):
        store.append(grad.detach())

    return tensor.register_hook(hook)
''',
         expect=["changed after the second backward", "accumulate into it in place", "clone it"]),
    dict(exercise="record_grads", kind="wrong", why="stores grad itself",
         source='''
import torch


def record_grads(tensor, store):
    return tensor.register_hook(store.append)
''',
         # The stored reference keeps PyTorch from reusing the tensor as x.grad, so only the
         # graph it carries under create_graph=True gives it away.
         expect=["create_graph=True", "still requires grad", "detach it"]),
    dict(exercise="record_grads", kind="wrong", why="clone without detach",
         source='''
import torch


def record_grads(tensor, store):
    def hook(grad):
        store.append(grad.clone())

    return tensor.register_hook(hook)
''',
         expect=["create_graph=True", "still requires grad", "detach it"]),
    dict(exercise="record_grads", kind="wrong", why="does not return the handle",
         source='''
import torch


def record_grads(tensor, store):
    def hook(grad):
        store.append(grad.detach().clone())

    tensor.register_hook(hook)
''',
         expect=["returned None", "expected the handle"]),
    dict(exercise="record_grads", kind="wrong", why="appends to a list of its own",
         source='''
import torch

recorded = []


def record_grads(tensor, store):
    def hook(grad):
        recorded.append(grad.detach().clone())

    return tensor.register_hook(hook)
''',
         expect=["store holds 0 gradient(s)", "the list passed as `store`"]),
    dict(exercise="record_grads", kind="wrong", why="hook returns a modified gradient",
         source='''
import torch


def record_grads(tensor, store):
    def hook(grad):
        store.append(grad.detach().clone())
        return torch.zeros_like(grad)

    return tensor.register_hook(hook)
''',
         expect=["must leave the gradient unchanged"]),
    dict(exercise="record_grads", kind="wrong", why="reads tensor.grad instead of the incoming gradient",
         source='''
import torch


def record_grads(tensor, store):
    def hook(grad):
        store.append(tensor.grad.detach().clone())

    return tensor.register_hook(hook)
''',
         expect=["raised AttributeError", "tensor.grad"]),
    dict(exercise="record_grads", kind="right", why="lambda with torch.clone of the data",
         source='''
import torch


def record_grads(tensor, store):
    handle = tensor.register_hook(lambda grad: store.append(torch.clone(grad.data)))
    return handle
''',
         expect=[]),
    dict(exercise="record_grads", kind="right", why="copy under no_grad, returns grad itself",
         source='''
import torch


def record_grads(tensor, store):
    def remember(grad):
        with torch.no_grad():
            copy = torch.empty_like(grad).copy_(grad)
        store.append(copy.detach())
        return grad

    return tensor.register_hook(remember)
''',
         expect=[]),
]
