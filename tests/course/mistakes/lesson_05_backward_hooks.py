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
        first = output[0] if isinstance(output, tuple) else output  # grad_output[0] is the first output's
        first.register_hook(lambda grad: norms.setdefault(name, []).append(grad.norm().item()))

    for module in names:
        handles.append(module.register_forward_hook(forward_hook))
    return norms, handles
''',
         expect=[]),

    dict(exercise="record_grad_output_norms", kind="wrong", why='one norm over all entries of grad_output',
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(torch.cat([g.flatten() for g in grad_output if g is not None]).norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=['over all entries of grad_output together', 'only grad_output[0]']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='norm of the last entry of grad_output',
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[-1].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=['last entry of grad_output', 'record grad_output[0]']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='L1 norm',
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].abs().sum().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=['the L2 norm of grad_output[0]']),
    dict(exercise="record_grad_output_norms", kind="wrong", why="one list shared by every name (dict.fromkeys)",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    names = [name for name, module in model.named_modules() if isinstance(module, layer_types)]
    norms = dict.fromkeys(names, [])
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["one and the same list object", "a list of its own"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="names made up from children() positions",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for position, module in enumerate(model.children()):
        if isinstance(module, layer_types):
            name = str(position)
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["no submodule of the model is named '0'", "names that model.named_modules() gives"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="keeps only the first of layer_types",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types[0]):
            norms[name] = []

            def hook(module, grad_input, grad_output, name=name):
                norms[name].append(grad_output[0].norm().item())

            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=["'conv', 'features.0'", "instance of one of layer_types"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="norm of the output in a forward hook",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            norms[name] = []

            def hook(module, args, output, name=name):
                norms[name].append(output.norm().item())

            handles.append(module.register_forward_hook(hook))
    return norms, handles
''',
         expect=["the L2 norm of grad_output[0]"]),
    dict(exercise="record_grad_output_norms", kind="right", why="filter loop, hook factory, torch.norm",
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    chosen = []
    for name, module in model.named_modules():
        if any(isinstance(module, kind) for kind in layer_types):
            chosen.append((name, module))
    norms = {name: [] for name, _ in chosen}

    def make_hook(name):
        def hook(module, grad_input, grad_output):
            norms[name].append(float(torch.norm(grad_output[0])))
        return hook

    handles = tuple(module.register_full_backward_hook(make_hook(name)) for name, module in chosen)
    return norms, list(handles)
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

    dict(exercise="clip_grad_input", kind='wrong', why='clips only the first entry',
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        first = grad_input[0]
        if first is not None and first.norm() > max_norm:
            first = first * (max_norm / first.norm())
        return (first,) + tuple(grad_input[1:])

    return module.register_full_backward_hook(clip)
''',
         expect=['left grad_input[1] as it was', 'not only the first']),
    dict(exercise="clip_grad_input", kind='wrong', why='compares the squared norm with max_norm',
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return tuple(g * (max_norm / g.norm()) if g is not None and g.pow(2).sum() > max_norm else g
                     for g in grad_input)

    return module.register_full_backward_hook(clip)
''',
         expect=['already at most max_norm', 'not its square']),
    dict(exercise="clip_grad_input", kind='wrong', why='rescales every entry once one is too large',
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        if any(g is not None and g.norm() > max_norm for g in grad_input):
            return tuple(None if g is None else g * (max_norm / g.norm()) for g in grad_input)
        return None

    return module.register_full_backward_hook(clip)
''',
         expect=['already at most max_norm', 'keep it unchanged']),
    dict(exercise="clip_grad_input", kind='wrong', why='replaces None by zeros',
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        if all(g is None for g in grad_input):
            return None
        like = next(g for g in grad_input if g is not None)
        out = []
        for g in grad_input:
            if g is None:
                out.append(torch.zeros_like(like))
            elif g.norm() > max_norm:
                out.append(g * (max_norm / g.norm()))
            else:
                out.append(g)
        return tuple(out)

    return module.register_full_backward_hook(clip)
''',
         expect=['grad_input[2] is none', 'keep none in place']),
    dict(exercise="clip_grad_input", kind='wrong', why='rescales to norm 1',
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return tuple(g / g.norm() if g is not None and g.norm() > max_norm else g for g in grad_input)

    return module.register_full_backward_hook(clip)
''',
         expect=['(norm 9.985, max_norm 5.0)', 'expected tensor of shape']),
    dict(exercise="clip_grad_input", kind='right', why='torch.where on the scale, list then tuple',
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        result = list(grad_input)
        for i, g in enumerate(result):
            if g is not None:
                norm = torch.linalg.vector_norm(g)
                result[i] = g * torch.where(norm > max_norm, max_norm / norm, torch.ones_like(norm))
        return tuple(result)

    return module.register_full_backward_hook(clip)
''',
         expect=[]),
    dict(exercise="clip_grad_input", kind='right', why='returns None when nothing needs clipping',
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        if all(g is None or g.norm() <= max_norm for g in grad_input):
            return None
        return tuple(g if g is None or g.norm() <= max_norm else g.mul(max_norm).div(g.norm()) for g in grad_input)

    return module.register_full_backward_hook(clip)
''',
         expect=[]),

    dict(exercise="clip_grad_input", kind="wrong", why="returns the clipped grad_output as grad_input",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        return tuple(g * (max_norm / g.norm()) if g is not None and g.norm() > max_norm else g for g in grad_output)

    return module.register_full_backward_hook(clip)
''',
         expect=["has changed the size of value", "must have its shape"]),

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
    dict(exercise="add_grad_noise", kind='wrong', why='one noise tensor added to every entry',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        shape = next(g.shape for g in grad_output if g is not None)
        shared = std * torch.randn(shape, generator=generator)
        return tuple(None if g is None else g + shared for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=['the same noise went into both', 'new noise for each entry']),
    dict(exercise="add_grad_noise", kind='wrong', why='returns grad_output unchanged',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return grad_output

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["reached the module's backward unchanged", 'register_full_backward_pre_hook']),
    dict(exercise="add_grad_noise", kind='wrong', why='noise broadcast over the batch',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return tuple(None if g is None else g + std * torch.randn(g.shape[1:], generator=generator)
                     for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=['repeats itself along dimension 0', 'full shape']),
    dict(exercise="add_grad_noise", kind='wrong', why='reseeds torch on every call',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        torch.manual_seed(0)
        return tuple(None if g is None else g + std * torch.randn(g.shape, generator=generator) for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=['exactly the same noise', 'do not reseed']),
    dict(exercise="add_grad_noise", kind='wrong', why='noise replaces the gradient',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return tuple(None if g is None else std * torch.randn(g.shape, generator=generator) for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=['depends on grad', 'grad + noise']),
    dict(exercise="add_grad_noise", kind='right', why='draws in reverse order, normal_ on empty_like',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        noises = {}
        for i in reversed(range(len(grad_output))):
            if grad_output[i] is not None:
                noises[i] = torch.empty_like(grad_output[i]).normal_(0.0, std, generator=generator)
        return tuple(None if g is None else g + noises[i] for i, g in enumerate(grad_output))

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=[]),
    dict(exercise="add_grad_noise", kind='right', why='torch.normal with the gradient as mean',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        return tuple(None if g is None else torch.normal(g, std, generator=generator) for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=[]),
    dict(exercise="add_grad_noise", kind='right', why='one draw for all entries, split',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        sizes = [g.numel() for g in grad_output if g is not None]
        flat = std * torch.randn(sum(sizes), generator=generator, dtype=torch.float64)
        out, start = [], 0
        for g in grad_output:
            if g is None:
                out.append(None)
                continue
            out.append(g + flat[start:start + g.numel()].view(g.shape).to(g.dtype))
            start += g.numel()
        return tuple(out)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=[]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise in the pre-hook and again on grad_input",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def before(module, grad_output):
        return tuple(None if g is None else g + std * torch.randn(g.shape, generator=generator) for g in grad_output)

    def after(module, grad_input, grad_output):
        return tuple(None if g is None else g + std * torch.randn(g.shape, generator=generator) for g in grad_input)

    module.register_full_backward_hook(after)
    return module.register_full_backward_pre_hook(before)
''',
         expect=["the input's gradient is", "computed from the noisy grad_output your pre-hook returned"]),
    dict(exercise="add_grad_noise", kind="wrong", why="a new generator from the given one's seed on every call",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def add_noise(module, grad_output):
        fresh = None if generator is None else torch.Generator().manual_seed(generator.initial_seed())
        return tuple(None if g is None else g + std * torch.randn(g.shape, generator=fresh) for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["exactly the same noise", "do not reseed a generator on each call"]),
    dict(exercise="add_grad_noise", kind="wrong", why="draws from a copy of the generator",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    own = None
    if generator is not None:
        own = torch.Generator()
        own.set_state(generator.get_state())  # leaves the caller's generator where it was

    def add_noise(module, grad_output):
        return tuple(None if g is None else g + std * torch.randn(g.shape, generator=own)
                     for g in grad_output)

    return module.register_full_backward_pre_hook(add_noise)
''',
         expect=["same state as before the call", "a copy of the generator", "generator=generator"]),
]
