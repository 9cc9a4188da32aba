"""Mistake catalogue for lesson 05, backward hooks on modules. The format of an entry is
described in tests/course/test_mistake_catalogue.py."""

ENTRIES = [
    # ------------------------------------------------------------------ record_grad_output_norms
    dict(exercise="record_grad_output_norms", kind="wrong", why="uses the deprecated register_backward_hook",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_backward_hook(hook))
    return norms, handles
''',
         expect=["deprecated register_backward_hook", "use register_full_backward_hook"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="records grad_input[0]",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_input[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["norms of grad_input[0]", "record grad_output[0]"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="stores tensors, not floats",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["expected Python floats", ".item()"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="only the direct children",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_children():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["nested", "named_modules() goes through every depth"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="ignores layer_types",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["blocks.0.act", "layer_types, the tuple you are given"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="exact type instead of isinstance",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if type(module) in layer_types:
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["classifier", "isinstance", "subclasses"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="keeps only the latest norm",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            def hook(module, grad_input, grad_output, name=name):
                norms[name] = [grad_output[0].norm().item()]

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["1 entries; expected 2", "append a new entry"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="hook in a loop without binding the name",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["stayed empty", "loop variable", "bind the name"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="squared norm",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].pow(2).sum().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["squared norms"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="returns only the last handle",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms = {}
    handle = None
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handle = module.register_full_backward_hook(hook)
    return norms, [handle]
''',
         expect=["after removing every returned handle", "handles of all hooks"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="returns the pair the other way round",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return handles, norms
''',
         expect=["other way round", "(norms, handles)"]),
    dict(exercise="record_grad_output_norms", kind="right", why="pre-hook, defaultdict, vector_norm, float()",
         source='''
import collections
import functools

import torch
from torch import nn


def _remember(norms, name, module, grad_output):
    norms[name].append(float(torch.linalg.vector_norm(grad_output[0])))


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms = collections.defaultdict(list)
    handles = [module.register_full_backward_pre_hook(functools.partial(_remember, norms, name))
               for name, module in model.named_modules() if isinstance(module, layer_types)]
    return norms, handles
''',
         expect=[]),
    dict(exercise="record_grad_output_norms", kind="right", why="a class whose instances are the hooks",
         source='''
import torch
from torch import nn


class NormRecorder:
    def __init__(self, store):
        self.store = store

    def __call__(self, module, grad_input, grad_output):
        self.store.append(grad_output[0].detach().pow(2).sum().sqrt().item())


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, tuple(layer_types)):
            handles.append(module.register_full_backward_hook(NormRecorder(norms.setdefault(name, []))))
    return norms, handles
''',
         expect=[]),
    dict(exercise="record_grad_output_norms", kind="right", why="forward hooks that put a tensor hook on the output",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    """The lesson's fix for in-place ReLUs: the output's tensor hook receives grad_output[0] too."""
    norms, handles = {}, []
    names = {module: name for name, module in model.named_modules() if isinstance(module, layer_types)}

    def forward_hook(module, args, output):
        name = names[module]
        output.register_hook(lambda grad: norms.setdefault(name, []).append(grad.norm().item()))

    for module in names:
        handles.append(module.register_forward_hook(forward_hook))
    return norms, handles
''',
         expect=[]),

    # ------------------------------------------------------------------ clip_grad_input
    dict(exercise="clip_grad_input", kind="wrong", why="calls norm() on None entries",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return tuple(g * (max_norm / g.norm()) if g.norm() > max_norm else g for g in grad_input)

    return module.register_full_backward_hook(clip)
''',
         expect=["'NoneType' object has no attribute 'norm'", "keep them as None"]),
    dict(exercise="clip_grad_input", kind="wrong", why="drops the None entries",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        kept = [g for g in grad_input if g is not None]
        return tuple(g * (max_norm / g.norm()) if g.norm() > max_norm else g for g in kept)

    return module.register_full_backward_hook(clip)
''',
         expect=["invalid number of grad_input", "as long as the one it received", "do not drop entries"]),
    dict(exercise="clip_grad_input", kind="wrong", why="rescales in place with mul_",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        for g in grad_input:
            if g is not None and g.norm() > max_norm:
                g.mul_(max_norm / g.norm())
        return grad_input

    return module.register_full_backward_hook(clip)
''',
         expect=["changed in place", "not in-place operations"]),
    dict(exercise="clip_grad_input", kind="wrong", why="always rescales",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return tuple(None if g is None or g.norm() == 0 else g * (max_norm / g.norm()) for g in grad_input)

    return module.register_full_backward_hook(clip)
''',
         expect=["already at most max_norm", "keep it unchanged"]),
    dict(exercise="clip_grad_input", kind="wrong", why="one norm over all entries, as clip_grad_norm_",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        tensors = [g for g in grad_input if g is not None]
        if not tensors:
            return None
        total = torch.sqrt(sum(g.pow(2).sum() for g in tensors))
        scale = min(1.0, (max_norm / total).item())
        return tuple(None if g is None else g * scale for g in grad_input)

    return module.register_full_backward_hook(clip)
''',
         expect=["one norm for all entries", "its own norm"]),
    dict(exercise="clip_grad_input", kind="wrong", why="clamps each element",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return tuple(None if g is None else g.clamp(-max_norm, max_norm) for g in grad_input)

    return module.register_full_backward_hook(clip)
''',
         expect=["clipped each element", "L2 norm of the whole tensor"]),
    dict(exercise="clip_grad_input", kind="wrong", why="uses the deprecated register_backward_hook",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return tuple(g * (max_norm / g.norm()) if g is not None and g.norm() > max_norm else g for g in grad_input)

    return module.register_backward_hook(clip)
''',
         expect=["deprecated register_backward_hook", "register_full_backward_hook"]),
    dict(exercise="clip_grad_input", kind="wrong", why="computes the clipped tuple but returns nothing",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        clipped = tuple(g * (max_norm / g.norm()) if g is not None and g.norm() > max_norm else g
                        for g in grad_input)

    return module.register_full_backward_hook(clip)
''',
         expect=["grad_input unchanged", "return the new tuple"]),
    dict(exercise="clip_grad_input", kind="wrong", why="clips grad_output in a pre-hook",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_output):
        return tuple(g * (max_norm / g.norm()) if g is not None and g.norm() > max_norm else g
                     for g in grad_output)

    return module.register_full_backward_pre_hook(clip)
''',
         expect=["parameter", "clipping grad_output in a backward pre-hook"]),
    dict(exercise="clip_grad_input", kind="wrong", why="forgets to return the handle",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return tuple(g * (max_norm / g.norm()) if g is not None and g.norm() > max_norm else g for g in grad_input)

    module.register_full_backward_hook(clip)
''',
         expect=["returned None", "expected the handle"]),
    dict(exercise="clip_grad_input", kind="wrong", why="returns a list",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return [g * (max_norm / g.norm()) if g is not None and g.norm() > max_norm else g for g in grad_input]

    return module.register_full_backward_hook(clip)
''',
         expect=["should always return None or None for all gradients", "return a tuple (not a list)"]),
    dict(exercise="clip_grad_input", kind="right", why="clamped scale with an epsilon",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        out = []
        for g in grad_input:
            if g is None:
                out.append(None)
            else:
                scale = torch.clamp(max_norm / (torch.linalg.vector_norm(g) + 1e-12), max=1.0)
                out.append(g * scale)
        return tuple(out)

    return module.register_full_backward_hook(clip)
''',
         expect=[]),
    dict(exercise="clip_grad_input", kind="right", why="a callable class, clones small gradients",
         source='''
import torch


class ClipInput:
    def __init__(self, max_norm):
        self.max_norm = max_norm

    def _one(self, grad):
        if grad is None:
            return None
        size = grad.pow(2).sum().sqrt().item()
        return grad.clone() if size <= self.max_norm else grad.mul(self.max_norm / size)

    def __call__(self, module, grad_input, grad_output):
        return tuple(map(self._one, grad_input))


def clip_grad_input(module, max_norm):
    return module.register_full_backward_hook(ClipInput(max_norm))
''',
         expect=[]),

    # ------------------------------------------------------------------ add_grad_noise
    dict(exercise="add_grad_noise", kind="wrong", why="scales the noise by the variance",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return tuple(None if g is None else g + std ** 2 * torch.randn(g.shape, generator=generator)
                     for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["std squared", "not by std ** 2"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise on the first entry only",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        first = grad_output[0] + std * torch.randn(grad_output[0].shape, generator=generator)
        return (first,) + tuple(grad_output[1:])

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["but not to grad_output[1]", "every tensor of grad_output"]),
    dict(exercise="add_grad_noise", kind="wrong", why="ignores the generator",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return tuple(None if g is None else g + std * torch.randn_like(g) for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["seeded alike", "from the generator you were given"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise on grad_input in a full backward hook",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_input, grad_output):
        return tuple(None if g is None else g + std * torch.randn(g.shape, generator=generator)
                     for g in grad_input)

    return module.register_full_backward_hook(add_noise)
''',
         expect=["added the noise to grad_input", "never reaches the module's parameters", "pre-hook"]),
    dict(exercise="add_grad_noise", kind="wrong", why="adds the noise in place",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        for g in grad_output:
            if g is not None:
                g.add_(std * torch.randn(g.shape, generator=generator))
        return grad_output

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["changed in place", "not in-place operations"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise proportional to the gradient",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return tuple(None if g is None else g * (1 + std * torch.randn(g.shape, generator=generator))
                     for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["depends on grad", "grad + noise"]),
    dict(exercise="add_grad_noise", kind="wrong", why="uniform noise",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        # uniform on [-a, a] with a = std * sqrt(3) has standard deviation std
        return tuple(None if g is None else g + std * 3 ** 0.5 * (2 * torch.rand(g.shape, generator=generator) - 1)
                     for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["normal distribution", "not the uniform one"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise drawn once and reused",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    cache = {}

    def add_noise(module, grad_output):
        noisy = []
        for i, g in enumerate(grad_output):
            if g is None:
                noisy.append(None)
                continue
            if i not in cache:
                cache[i] = std * torch.randn(g.shape, generator=generator)
            noisy.append(g + cache[i])
        return tuple(noisy)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["exactly the same noise", "new noise on every call"]),
    dict(exercise="add_grad_noise", kind="wrong", why="a generator of its own with a fixed seed",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    own = torch.Generator().manual_seed(0)

    def add_noise(module, grad_output):
        return tuple(None if g is None else g + std * torch.randn(g.shape, generator=own) for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["gave identical noise", "not from a generator of your own"]),
    dict(exercise="add_grad_noise", kind="wrong", why="adds noise to None entries",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return tuple(g + std * torch.randn(g.shape, generator=generator) for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["NoneType", "keep them as None"]),
    dict(exercise="add_grad_noise", kind="wrong", why="returns a tensor instead of a tuple",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        g = grad_output[0]
        return g + std * torch.randn(g.shape, generator=generator)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["invalid number of grad_output", "return a tuple even for one entry"]),
    dict(exercise="add_grad_noise", kind="right", why="torch.normal, returns a list",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return [None if g is None else g + torch.normal(0.0, std, size=g.shape, generator=generator).to(g.dtype)
                for g in grad_output]

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=[]),
    dict(exercise="add_grad_noise", kind="right", why="randn_like with the generator",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        noisy = []
        for g in grad_output:
            noisy.append(g if g is None else torch.add(g, torch.randn_like(g, generator=generator), alpha=std))
        return tuple(noisy)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=[]),
    dict(exercise="add_grad_noise", kind="right", why="normal_ on a new tensor",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return tuple(None if g is None else g + g.new_empty(g.shape).normal_(0.0, std, generator=generator)
                     for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=[]),
]
