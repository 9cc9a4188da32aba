"""Mistake catalogue for lesson 04, forward hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py."""

ENTRIES = [
    # ------------------------------------------------------------------ capture_activations
    dict(exercise="capture_activations", kind="wrong", why="stores the output without detach",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations = {}

    def make_hook(name):
        def hook(module, args, output):
            activations[name] = output.clone()
        return hook

    return activations, [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]
''',
         expect=["still requires grad", "graph alive", "detach"]),
    dict(exercise="capture_activations", kind="wrong", why="detach without clone, overwritten by an in-place ReLU",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations = {}

    def make_hook(name):
        def hook(module, args, output):
            activations[name] = output.detach()
        return hook

    return activations, [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]
''',
         expect=["in-place relu", "shares memory", "clone()"]),
    dict(exercise="capture_activations", kind="wrong", why="appends every forward pass to a list",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations = {}

    def make_hook(name):
        def hook(module, args, output):
            activations.setdefault(name, []).append(output.detach().clone())
        return hook

    return activations, [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]
''',
         expect=["is a list", "latest forward pass"]),
    dict(exercise="capture_activations", kind="wrong", why="keeps the first forward pass",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations = {}

    def make_hook(name):
        def hook(module, args, output):
            if name not in activations:
                activations[name] = output.detach().clone()
        return hook

    return activations, [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]
''',
         expect=["output of the first forward pass", "latest forward pass must win"]),
    dict(exercise="capture_activations", kind="wrong", why="raises KeyError after registering some hooks",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, output, name=name):
            activations[name] = output.detach().clone()
        handles.append(modules[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=["left forward hooks registered", "before registering any hook"]),
    dict(exercise="capture_activations", kind="wrong", why="looks names up in named_children",
         source='''
def capture_activations(model, layer_names):
    children = dict(model.named_children())
    for name in layer_names:
        if name not in children:
            raise KeyError(name)
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, output, name=name):
            activations[name] = output.detach().clone()
        handles.append(children[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=["raised keyerror", "named_modules()", "nested layers"]),
    dict(exercise="capture_activations", kind="wrong", why="get_submodule raises AttributeError",
         source='''
def capture_activations(model, layer_names):
    modules = [model.get_submodule(name) for name in layer_names]
    activations, handles = {}, []
    for name, module in zip(layer_names, modules):
        def hook(module, args, output, name=name):
            activations[name] = output.detach().clone()
        handles.append(module.register_forward_hook(hook))
    return activations, handles
''',
         expect=["raised AttributeError", "expected KeyError"]),
    dict(exercise="capture_activations", kind="wrong", why="late-binding loop variable",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, output):
            activations[name] = output.detach().clone()
        handles.append(modules[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=["no entry for", "bind the name"]),
    dict(exercise="capture_activations", kind="wrong", why="KeyError that does not name the layer",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    if any(name not in modules for name in layer_names):
        raise KeyError("unknown layer")
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, output, name=name):
            activations[name] = output.detach().clone()
        handles.append(modules[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=["must name the unknown layer"]),
    dict(exercise="capture_activations", kind="wrong", why="hook returns the stored copy and replaces the output",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, output, name=name):
            activations[name] = output.detach().clone()
            return activations[name]
        handles.append(modules[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=["output changed", "must return none"]),
    dict(exercise="capture_activations", kind="wrong", why="hooks every module and filters by name",
         source='''
def capture_activations(model, layer_names):
    names = {module: name for name, module in model.named_modules()}
    for name in layer_names:
        if name not in names.values():
            raise KeyError(name)
    activations = {}

    def hook(module, args, output):
        activations[names[module]] = output.detach().clone()

    return activations, [module.register_forward_hook(hook) for module in model.modules()]
''',
         expect=["registered forward hooks on", "none elsewhere"]),
    dict(exercise="capture_activations", kind="right", why="get_submodule checked first, partial hooks, tuple",
         source='''
import functools


def _store(activations, name, module, args, output):
    activations[name] = output.clone().detach()


def capture_activations(model, layer_names):
    modules = []
    for name in layer_names:
        try:
            modules.append(model.get_submodule(name))
        except AttributeError:
            raise KeyError(f"no layer called {name}") from None
    activations = {}
    handles = tuple(module.register_forward_hook(functools.partial(_store, activations, name))
                    for name, module in zip(layer_names, modules))
    return activations, handles
''',
         expect=[]),
    dict(exercise="capture_activations", kind="right", why="registers as it goes and rolls back on an unknown name",
         source='''
import torch


def capture_activations(model, layer_names):
    by_name = dict(model.named_modules())
    activations, handles = {}, []
    for name in layer_names:
        if name not in by_name:
            for handle in handles:
                handle.remove()
            raise KeyError(name)

        def hook(module, args, output, key=name):
            with torch.no_grad():
                activations[key] = output.detach().clone()

        handles.append(by_name[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=[]),

    dict(exercise="capture_activations", kind="wrong", why="stores the layer's input",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations = {}

    def make_hook(name):
        def hook(module, args, output):
            activations[name] = args[0].detach().clone()
        return hook

    return activations, [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]
''',
         expect=["the layer's input", "expected its output"]),
    dict(exercise="capture_activations", kind="wrong", why="output.data shares memory like detach",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, output, name=name):
            activations[name] = output.data
        handles.append(modules[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=["in-place relu", "shares memory", "clone()"]),
    dict(exercise="capture_activations", kind="wrong", why="keeps the first call of a shared layer in each pass",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations, done = {}, set()
    handles = [model.register_forward_pre_hook(lambda module, args: done.clear())]
    for name in layer_names:
        def hook(module, args, output, name=name):
            if name not in done:  # once per forward pass, it seems
                done.add(name)
                activations[name] = output.detach().clone()
        handles.append(modules[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=["earlier call of that layer", "same forward pass", "latest call must win"]),
    dict(exercise="capture_activations", kind="wrong", why="ValueError for an unknown name",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise ValueError(f"unknown layer {name}")
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, output, name=name):
            activations[name] = output.detach().clone()
        handles.append(modules[name].register_forward_hook(hook))
    return activations, handles
''',
         expect=["raised ValueError", "expected KeyError naming"]),
    dict(exercise="capture_activations", kind="wrong", why="returns the handles as a generator",
         source='''
def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    for name in layer_names:
        if name not in modules:
            raise KeyError(name)
    activations = {}

    def make_hook(name):
        def hook(module, args, output):
            activations[name] = output.detach().clone()
        return hook

    return activations, (modules[name].register_forward_hook(make_hook(name)) for name in layer_names)
''',
         expect=["generator", "registered no hook", "return a list"]),
    dict(exercise="capture_activations", kind="right", why="a hook class, copy under no_grad, names checked at once",
         source='''
import torch


class Capture:
    def __init__(self, store, name):
        self.store, self.name = store, name

    def __call__(self, module, args, output):
        with torch.no_grad():
            self.store[self.name] = output.clone()


def capture_activations(model, layer_names):
    table = {name: module for name, module in model.named_modules()}
    unknown = [name for name in layer_names if name not in table]
    if unknown:
        raise KeyError(f"unknown layers: {unknown}")
    activations = {}
    return activations, [table[name].register_forward_hook(Capture(activations, name)) for name in layer_names]
''',
         expect=[]),
    dict(exercise="capture_activations", kind="right", why="deepcopy of the detached output, with_kwargs and always_call",
         source='''
import copy


def capture_activations(model, layer_names):
    modules = dict(model.named_modules())
    missing = sorted(set(layer_names) - set(modules))
    if missing:
        raise KeyError(*missing)
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, kwargs, output, name=name):
            activations[name] = copy.deepcopy(output.detach())
        handles.append(modules[name].register_forward_hook(hook, with_kwargs=True, always_call=True))
    return activations, handles
''',
         expect=[]),

    # ------------------------------------------------------------------ track_relu_stats
    dict(exercise="track_relu_stats", kind="wrong", why="only top-level ReLUs via children",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_children():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output.mean().item(),
                                "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["no entries for", "nested", "named_modules() visits every depth"]),
    dict(exercise="track_relu_stats", kind="wrong", why="tensors instead of Python floats",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output.mean(), "dead_fraction": (output == 0).float().mean()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["is a tensor", "python float", ".item()"]),
    dict(exercise="track_relu_stats", kind="wrong", why="replaces the entries on every call",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            def hook(module, args, output, name=name):
                stats[name] = [{"mean": output.mean().item(),
                                "dead_fraction": (output == 0).float().mean().item()}]
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["has 1 entry;", "ran 2 times", "called twice"]),
    dict(exercise="track_relu_stats", kind="wrong", why="late-binding loop variable",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output):
                stats[name].append({"mean": output.mean().item(),
                                    "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["raised keyerror", "not a relu", "when the loop ended", "bind the name"]),
    dict(exercise="track_relu_stats", kind="wrong", why="late-binding loop variable with a defaultdict",
         source='''
import collections

from torch import nn


def track_relu_stats(model):
    stats, handles = collections.defaultdict(list), []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            def hook(module, args, output):
                stats[name].append({"mean": output.mean().item(),
                                    "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["not nn.relu modules", "bind the name"]),
    dict(exercise="track_relu_stats", kind="wrong", why="late-binding loop variable over the ReLUs only",
         source='''
from torch import nn


def track_relu_stats(model):
    relus = [(name, module) for name, module in model.named_modules() if isinstance(module, nn.ReLU)]
    stats = {name: [] for name, module in relus}
    handles = []
    for name, module in relus:
        def hook(module, args, output):
            stats[name].append({"mean": output.mean().item(),
                                "dead_fraction": (output == 0).float().mean().item()})
        handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["no entries for", "more entries than that relu ran", "bind the name"]),
    dict(exercise="track_relu_stats", kind="wrong", why="counts near-zero values as dead",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output.mean().item(),
                                "dead_fraction": (output < 1e-3).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["exactly 0", "small positive values", "output == 0"]),
    dict(exercise="track_relu_stats", kind="wrong", why="mean of the input",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": args[0].mean().item(),
                                "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["mean of the relu's input", "its output"]),
    dict(exercise="track_relu_stats", kind="wrong", why="number of zeros instead of the fraction",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output.mean().item(),
                                "dead_fraction": float((output == 0).sum())})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["number of zeros", "divide by the number of elements"]),
    dict(exercise="track_relu_stats", kind="wrong", why="matches ReLU in the class name, so LeakyReLU too",
         source='''
def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if "ReLU" in type(module).__name__:
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output.mean().item(),
                                "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["not nn.relu modules", "leakyrelu"]),
    dict(exercise="track_relu_stats", kind="wrong", why="keyed by the module object",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for module in model.modules():
        if isinstance(module, nn.ReLU):
            stats[module] = []

            def hook(module, args, output):
                stats[module].append({"mean": output.mean().item(),
                                      "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["has keys", "names from model.named_modules()"]),
    dict(exercise="track_relu_stats", kind="right", why="defaultdict, factory function, count over numel",
         source='''
import collections

import torch


def track_relu_stats(model):
    stats = collections.defaultdict(list)

    def make_hook(name):
        def hook(module, args, output):
            zeros = torch.count_nonzero(output == 0).item()
            stats[name].append({"dead_fraction": zeros / output.numel(), "mean": float(output.detach().mean())})
        return hook

    handles = [module.register_forward_hook(make_hook(name))
               for name, module in model.named_modules() if type(module) is torch.nn.ReLU]
    return stats, handles
''',
         expect=[]),
    dict(exercise="track_relu_stats", kind="right", why="float64 statistics, output.eq(0), a tuple of handles",
         source='''
from torch import nn


def track_relu_stats(model):
    relus = {name: module for name, module in model.named_modules() if isinstance(module, nn.ReLU)}
    stats = {name: [] for name in relus}

    def hook_for(entries):
        def hook(module, args, output):
            values = output.detach().double()
            entries.append({"mean": values.mean().item(), "dead_fraction": values.eq(0).double().mean().item()})
        return hook

    return stats, tuple(module.register_forward_hook(hook_for(stats[name])) for name, module in relus.items())
''',
         expect=[]),

    dict(exercise="track_relu_stats", kind="wrong", why="class name starts with ReLU, so ReLU6 too",
         source='''
def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if type(module).__name__.startswith("ReLU"):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output.mean().item(),
                                "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["not nn.relu modules", "relu6", "isinstance(module, nn.relu)"]),
    dict(exercise="track_relu_stats", kind="wrong", why="dead fraction from the inputs below zero",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output.mean().item(),
                                "dead_fraction": (args[0] < 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["inputs below 0", "exactly 0", "zeros of the output"]),
    dict(exercise="track_relu_stats", kind="wrong", why="mean of the non-zero outputs only",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output[output > 0].mean().item(),
                                "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["non-zero elements only", "zeros included"]),
    dict(exercise="track_relu_stats", kind="wrong", why="records only while gradients are on",
         source='''
import torch
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                if torch.is_grad_enabled():
                    entries.append({"mean": output.mean().item(),
                                    "dead_fraction": (output == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["torch.no_grad()", "added no entry", "hooks fire under no_grad"]),
    dict(exercise="track_relu_stats", kind="wrong", why="torch.isclose to zero counts tiny outputs as dead",
         source='''
import torch
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                dead = torch.isclose(output, torch.zeros_like(output))
                entries.append({"mean": output.mean().item(), "dead_fraction": dead.float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["exactly 0", "1e-30", "torch.isclose", "output == 0"]),
    dict(exercise="track_relu_stats", kind="wrong", why="divides by the batch size",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            stats[name] = []

            def hook(module, args, output, entries=stats[name]):
                entries.append({"mean": output.mean().item(),
                                "dead_fraction": (output == 0).sum().item() / len(output)})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''',
         expect=["divided by the batch size", "output.numel()"]),
    dict(exercise="track_relu_stats", kind="right", why="functools.partial, sums over numel, <= 0",
         source='''
import functools

import torch


def _record(entries, module, args, output):
    size = output.numel()
    entries.append(dict(mean=float(output.detach().sum()) / size, dead_fraction=int((output <= 0).sum()) / size))


def track_relu_stats(model):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ReLU):
            handles.append(module.register_forward_hook(functools.partial(_record, stats.setdefault(name, []))))
    return stats, handles
''',
         expect=[]),
    dict(exercise="track_relu_stats", kind="right", why="a hook class with_kwargs, count_nonzero",
         source='''
from torch import nn


class Recorder:
    def __init__(self, entries):
        self.entries = entries

    def __call__(self, module, args, kwargs, output):
        alive = output.count_nonzero().item()
        self.entries.append({"mean": output.mean().item(), "dead_fraction": 1.0 - alive / output.numel()})


def track_relu_stats(model):
    modules = dict(model.named_modules())
    stats = {name: [] for name, module in modules.items() if isinstance(module, nn.ReLU)}
    return stats, [modules[name].register_forward_hook(Recorder(stats[name]), with_kwargs=True) for name in stats]
''',
         expect=[]),

    # ------------------------------------------------------------------ clamp_output
    dict(exercise="clamp_output", kind="wrong", why="clamp_ in place",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return output.clamp_(min_value, max_value)
    return module.register_forward_hook(hook)
''',
         expect=["in place", "clamp_"]),
    dict(exercise="clamp_output", kind="wrong", why="masked assignment into the output",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        output[output < min_value] = min_value
        output[output > max_value] = max_value
        return output
    return module.register_forward_hook(hook)
''',
         expect=["in place", "assignment into the output"]),
    dict(exercise="clamp_output", kind="wrong", why="clamps .data in place and returns None",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        output.data.clamp_(min_value, max_value)
    return module.register_forward_hook(hook)
''',
         expect=["in place", ".data"]),
    dict(exercise="clamp_output", kind="wrong", why="forgets to return the clamped tensor",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        clamped = output.clamp(min_value, max_value)
    return module.register_forward_hook(hook)
''',
         expect=["unclamped", "returns none", "return the clamped tensor"]),
    dict(exercise="clamp_output", kind="wrong", why="clamps a detached output",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return output.detach().clamp(min_value, max_value)
    return module.register_forward_hook(hook)
''',
         expect=["cut off from the autograd graph", "no gradient reaches"]),
    dict(exercise="clamp_output", kind="wrong", why="clamps under no_grad",
         source='''
import torch


def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        with torch.no_grad():
            return torch.clamp(output, min_value, max_value)
    return module.register_forward_hook(hook)
''',
         expect=["cut off from the autograd graph", "torch.no_grad()"]),
    dict(exercise="clamp_output", kind="wrong", why="straight-through: clamped values, unclamped gradient",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return output + (output.clamp(min_value, max_value) - output).detach()
    return module.register_forward_hook(hook)
''',
         expect=["gradient without any clamp", "gradient of 0"]),
    dict(exercise="clamp_output", kind="wrong", why="Python min and max on a tensor",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return max(min_value, min(output, max_value))
    return module.register_forward_hook(hook)
''',
         expect=["raised RuntimeError", "ambiguous"]),
    dict(exercise="clamp_output", kind="wrong", why="torch.max and torch.min with a number",
         source='''
import torch


def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return torch.max(torch.min(output, max_value), min_value)
    return module.register_forward_hook(hook)
''',
         expect=["raised TypeError", "invalid combination of arguments"]),
    dict(exercise="clamp_output", kind="wrong", why="a pre-hook that clamps the input",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args):
        return args[0].clamp(min_value, max_value)
    return module.register_forward_pre_hook(hook)
''',
         expect=["input was changed", "register_forward_pre_hook"]),
    dict(exercise="clamp_output", kind="right", why="nested torch.where",
         source='''
import torch


def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        low = torch.where(output < min_value, torch.full_like(output, min_value), output)
        return torch.where(low > max_value, torch.full_like(output, max_value), low)
    return module.register_forward_hook(hook)
''',
         expect=[]),
    dict(exercise="clamp_output", kind="wrong", why="torch.minimum and torch.maximum split the gradient at the bounds",
         source='''
import torch


def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        low = torch.tensor(min_value, dtype=output.dtype)
        high = torch.tensor(max_value, dtype=output.dtype)
        return torch.minimum(torch.maximum(output, low), high)
    return module.register_forward_hook(hook)
''',
         expect=["exactly equal to a bound", "half of it", "torch.maximum"]),
    dict(exercise="clamp_output", kind="wrong", why="hardtanh passes no gradient at the bounds",
         source='''
import torch.nn.functional as F


def clamp_output(module, min_value, max_value):
    def hook(module, args, kwargs, output):
        return F.hardtanh(output, min_value, max_value)
    return module.register_forward_hook(hook, with_kwargs=True)
''',
         expect=["exactly equal to a bound", "passed 0 there", "f.hardtanh"]),
    dict(exercise="clamp_output", kind="wrong", why="torch.where masks with <= and >=",
         source='''
import torch


def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        low = torch.where(output <= min_value, torch.full_like(output, min_value), output)
        return torch.where(low >= max_value, torch.full_like(output, max_value), low)
    return module.register_forward_hook(hook)
''',
         expect=["exactly equal to a bound", "passed 0 there", "<= or >="]),
    dict(exercise="clamp_output", kind="wrong", why="clamps with ReLUs",
         source='''
import torch.nn.functional as F


def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return max_value - F.relu(max_value - min_value - F.relu(output - min_value))
    return module.register_forward_hook(hook)
''',
         expect=["exactly equal to a bound", "relu-based"]),
    dict(exercise="clamp_output", kind="wrong", why="only the lower bound",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return output.clamp(min=min_value)
    return module.register_forward_hook(hook)
''',
         expect=["only the lower bound", "both bounds"]),
    dict(exercise="clamp_output", kind="wrong", why="does not return the handle",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return output.clamp(min_value, max_value)
    module.register_forward_hook(hook)
''',
         expect=["returned None", "removablehandle"]),
    dict(exercise="clamp_output", kind="wrong", why="returns the handle in a list",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return output.clamp(min_value, max_value)
    return [module.register_forward_hook(hook)]
''',
         expect=["returned list", "not in a list"]),
    dict(exercise="clamp_output", kind="right", why="clamp_ on a clone",
         source='''
def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return output.clone().clamp_(min_value, max_value)
    return module.register_forward_hook(hook)
''',
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="torch.clamp with keywords",
         source='''
import torch


def clamp_output(module, min_value, max_value):
    def hook(module, args, output):
        return torch.clamp(output, min=min_value, max=max_value)
    return module.register_forward_hook(hook)
''',
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="a lambda with clamp_min and clamp_max, always_call",
         source='''
def clamp_output(module, min_value, max_value):
    return module.register_forward_hook(lambda m, args, out: out.clamp_min(min_value).clamp_max(max_value),
                                        always_call=True)
''',
         expect=[]),
]
