"""Mistake catalogue for lesson 04, forward hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py; the clause table in tests/course/test_contract_clauses.py."""

from mistakes import edited, reference

CLAUSES = {
    "capture_activations": {
        "outputs": "Capture the outputs of the submodules of `model` named in `layer_names`",
        "only-named": "and of no others",
        "any-depth": "at any depth",
        "root": '"" for the model itself',
        "alias": "every name of a module that the model reaches under two names",
        "pair": "Returns `(activations, handles)`.",
        "grad-mode": "each call of a named layer updates (under torch.no_grad()",
        "eval": "and in eval() mode too): `activations[name]",
        "fresh-dict": "`activations` is a new dict",
        "by-name": "`activations[name] =",
        "detached": "<its output, detached",
        "cloned": "and cloned>",
        "new-tensor": "a new tensor each time",
        "dtype": "of the output's dtype",
        "latest": "The latest call wins",
        "shared-layer": "also over an earlier call in the same forward pass (a shared layer)",
        "handles": "`handles` is a list (or tuple) of the RemovableHandles of the hooks this call registered",
        "removal": "removing them all stops the capture",
        "return-none": "The hooks return None, so the model computes what it computed before.",
        "keyerror": "An unknown name raises KeyError",
        "keyerror-names-it": "naming it",
        "no-hook-left": "and no hook of this call stays registered",
    },
    "track_relu_stats": {
        "any-depth": "every nn.ReLU's output in `model`, at any depth",
        "relu-only": "Every module that is an instance of nn.ReLU",
        "subclasses": "(subclasses too)",
        "root": 'the model itself included (name "")',
        "once": "is tracked once",
        "names": "under the name `model.named_modules()` gives it",
        "first-name": "(a ReLU reachable under two names: its first name)",
        "pair": "Returns `(stats, handles)`",
        "fresh-dict": "`stats` a new dict",
        "every-call": "Each call of a ReLU named `name`",
        "grad-mode": "(under torch.no_grad()",
        "eval": "and in eval() mode too) appends",
        "keys": 'appends `{"mean": m, "zero_fraction": z}` to `stats[name]`',
        "mean": "`m` is the mean of the ReLU's output",
        "zero-fraction": "`z` the fraction of its output elements that are exactly 0",
        "floats": "both Python floats",
        "handles": "`handles` is a list (or tuple) of the RemovableHandles of the hooks this call registered",
        "removal": "removing them all stops the tracking",
        "return-none": "The hooks return None, so the model computes what it computed before.",
    },
    "clamp_output": {
        "bounds": "Clamp the output of `module` to `[min_value, max_value]`",
        "forward-hook": "with a forward hook",
        "every-call": "Every call's output is clamped",
        "grad-mode": "under torch.no_grad()",
        "eval": "and in eval() mode too.",
        "replaces": "The hook returns a new tensor, the output clamped",
        "dtype": "(of the output's dtype)",
        "not-in-place": "the original output is not changed in place",
        "inside-gradient": "The gradient passes unchanged where the output was strictly inside the bounds",
        "outside-gradient": "and is 0 where it was beyond them",
        "own-hook": "Each call registers a hook of its own, with its own bounds",
        "others-alone": "and leaves other hooks alone (two on one module chain)",
        "handle": "Returns the RemovableHandle of the hook.",
    },
}

NOT_CLAUSES = {
    "capture_activations": {
        "The named layers return tensors.": "a precondition on the model the caller passes, not a promise of the "
                                            "function: the checker's named layers all return tensors",
    },
    "clamp_output": {
        "where the output was exactly on a bound it is not graded (torch.clamp's own gradient there changed in "
        "torch 2.14).": "a freedom, not a promise: the check sends no gradient back through outputs exactly on a "
                        "bound, so whatever a clamp passes there (1, 0 or half) is right",
    },
}

# A learner's own track_relu_stats with one global hook (right), which a wrong entry changes.
_GLOBAL_RELU_STATS = '''
from torch import nn
from torch.nn.modules.module import register_module_forward_hook


def track_relu_stats(model):
    names = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            names.setdefault(module, name)
    stats = {name: [] for name in names.values()}

    def hook(module, args, output):
        name = names.get(module)
        if name is not None:
            stats[name].append({"mean": output.mean().item(), "zero_fraction": (output == 0).float().mean().item()})

    return stats, [register_module_forward_hook(hook)]
'''

ENTRIES = [
    # ------------------------------------------------------------------ capture_activations
    dict(exercise="capture_activations", kind="wrong", why="stores the output without detach", clause="detached",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()", "activations[name] = output.clone()")),
         expect=["still requires grad", "graph alive", "detach"],
         mistake="04.capture_activations.not-detached"),
    dict(exercise="capture_activations", kind="wrong", why="detach without clone, overwritten by an in-place ReLU", clause="cloned",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()", "activations[name] = output.detach()")),
         expect=["in-place relu", "shares memory", "clone()"],
         mistake="04.capture_activations.not-cloned"),
    dict(exercise="capture_activations", kind="wrong", why="appends every forward pass to a list", clause="latest",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "activations.setdefault(name, []).append(output.detach().clone())")),
         expect=["is a list", "latest forward pass"],
         mistake="04.capture_activations.every-pass-kept"),
    dict(exercise="capture_activations", kind="wrong", why="keeps the first forward pass", clause="latest",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "if name not in activations:\n"
                        "                activations[name] = output.detach().clone()")),
         expect=["output of the first forward pass", "latest forward pass must win"],
         mistake="04.capture_activations.first-pass-kept"),
    dict(exercise="capture_activations", kind="wrong", why="raises KeyError after registering some hooks", clause="no-hook-left",
         source=edited(reference("capture_activations"),
                       ("    for name in layer_names:\n"
                        "        if name not in modules:\n"
                        '            raise KeyError(f"{name!r} is not a submodule name of the model")\n\n',
                        "")),
         expect=["left forward hooks registered", "before registering any hook"],
         mistake="04.capture_activations.hooks-left-on-keyerror"),
    dict(exercise="capture_activations", kind="wrong", why="looks names up in named_children", clause="any-depth",
         source=edited(reference("capture_activations"),
                       ("dict(model.named_modules(remove_duplicate=False))", "dict(model.named_children())")),
         expect=["raised keyerror", "named_modules(remove_duplicate=false)", "nested layers"],
         mistake="04.capture_activations.nested-name-refused"),
    dict(exercise="capture_activations", kind="wrong", why="get_submodule raises AttributeError", clause="keyerror",
         source=edited(reference("capture_activations"),
                       ("    modules = dict(model.named_modules(remove_duplicate=False))\n"
                        "    for name in layer_names:\n"
                        "        if name not in modules:\n"
                        '            raise KeyError(f"{name!r} is not a submodule name of the model")',
                        "    modules = {name: model.get_submodule(name) for name in layer_names}")),
         expect=["raised AttributeError", "expected KeyError"],
         mistake="04.capture_activations.not-a-keyerror"),
    dict(exercise="capture_activations", kind="wrong", why="late-binding loop variable", clause="by-name",
         source=edited(reference("capture_activations"),
                       ("def make_hook(name):\n"
                        "        def hook(module, args, output):\n"
                        "            activations[name] = output.detach().clone()\n"
                        "        return hook\n\n"
                        "    handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]",
                        "handles = []\n"
                        "    for name in layer_names:\n"
                        "        def hook(module, args, output):\n"
                        "            activations[name] = output.detach().clone()\n"
                        "        handles.append(modules[name].register_forward_hook(hook))")),
         expect=["no entry for", "bind the name"],
         mistake="04.capture_activations.late-binding"),
    dict(exercise="capture_activations", kind="wrong", why="KeyError that does not name the layer", clause="keyerror-names-it",
         source=edited(reference("capture_activations"),
                       ('raise KeyError(f"{name!r} is not a submodule name of the model")',
                        'raise KeyError("unknown layer")')),
         expect=["must name the unknown layer"],
         mistake="04.capture_activations.keyerror-without-the-name"),
    dict(exercise="capture_activations", kind="wrong", why="hook returns the stored copy and replaces the output", clause="return-none",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "activations[name] = output.detach().clone()\n"
                        "            return activations[name]")),
         expect=["output changed", "must return none"],
         mistake="04.capture_activations.output-detached"),
    dict(exercise="capture_activations", kind="wrong", why="hooks every module and filters by name", clause="only-named",
         source=edited(reference("capture_activations"),
                       ("def make_hook(name):\n"
                        "        def hook(module, args, output):\n"
                        "            activations[name] = output.detach().clone()\n"
                        "        return hook\n\n"
                        "    handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]",
                        "names = {module: name for name, module in modules.items()}\n\n"
                        "    def hook(module, args, output):\n"
                        "        activations[names[module]] = output.detach().clone()\n\n"
                        "    handles = [module.register_forward_hook(hook) for module in model.modules()]")),
         expect=["registered forward hooks on", "none elsewhere"],
         mistake="04.capture_activations.hooks-on-other-layers"),
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
    by_name = dict(model.named_modules(remove_duplicate=False))
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

    dict(exercise="capture_activations", kind="wrong", why="stores the layer's input", clause="outputs",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()", "activations[name] = args[0].detach().clone()")),
         expect=["the layer's input", "expected its output"],
         mistake="04.capture_activations.stored-input"),
    dict(exercise="capture_activations", kind="wrong", why="output.data shares memory like detach", clause="cloned",
         source=edited(reference("capture_activations"), ("output.detach().clone()", "output.data")),
         expect=["in-place relu", "shares memory", "clone()"],
         mistake="04.capture_activations.not-cloned"),
    dict(exercise="capture_activations", kind="wrong", why="keeps the first call of a shared layer in each pass", clause="shared-layer",
         source=edited(reference("capture_activations"),
                       ("activations = {}", "activations, done = {}, set()"),
                       ("            activations[name] = output.detach().clone()",
                        "            if name not in done:  # once per forward pass, it seems\n"
                        "                done.add(name)\n"
                        "                activations[name] = output.detach().clone()"),
                       ("handles = [modules",
                        "handles = [model.register_forward_pre_hook(lambda module, args: done.clear())]\n"
                        "    handles += [modules")),
         expect=["earlier call of that layer", "same forward pass", "latest call must win"],
         mistake="04.capture_activations.earlier-call-kept"),
    dict(exercise="capture_activations", kind="wrong", why="ValueError for an unknown name", clause="keyerror",
         source=edited(reference("capture_activations"),
                       ('raise KeyError(f"{name!r} is not a submodule name of the model")',
                        'raise ValueError(f"unknown layer {name}")')),
         expect=["raised ValueError", "expected KeyError naming"],
         mistake="04.capture_activations.not-a-keyerror"),
    dict(exercise="capture_activations", kind="wrong", why="returns the handles as a generator", clause="handles",
         source=edited(reference("capture_activations"),
                       ("handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]",
                        "handles = (modules[name].register_forward_hook(make_hook(name)) for name in layer_names)")),
         expect=["generator", "registered no hook", "return a list"],
         mistake="04.capture_activations.handles-as-generator"),
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
    table = {name: module for name, module in model.named_modules(remove_duplicate=False)}
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
    modules = dict(model.named_modules(remove_duplicate=False))
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
    dict(exercise="track_relu_stats", kind="wrong", why="only top-level ReLUs via children", clause="any-depth",
         source=edited(reference("track_relu_stats"), ("model.named_modules():", "model.named_children():")),
         expect=["no entries for", "nested", "named_modules() visits every depth"],
         mistake="04.track_relu_stats.nested-relus-skipped"),
    dict(exercise="track_relu_stats", kind="wrong", why="tensors instead of Python floats", clause="floats",
         source=edited(reference("track_relu_stats"),
                       ('"mean": output.mean().item()', '"mean": output.mean()'),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": (output == 0).float().mean()')),
         expect=["is a tensor", "python float", ".item()"],
         mistake="04.track_relu_stats.tensor-not-float"),
    dict(exercise="track_relu_stats", kind="wrong", why="replaces the entries on every call", clause="every-call",
         source=edited(reference("track_relu_stats"),
                       ("entries.append({", "entries[:] = [{"),
                       ('"zero_fraction": (output == 0).float().mean().item()})',
                        '"zero_fraction": (output == 0).float().mean().item()}]')),
         expect=["has 1 entry;", "ran 2 times", "called twice"],
         mistake="04.track_relu_stats.entry-per-call-missing"),
    dict(exercise="track_relu_stats", kind="wrong", why="late-binding loop variable", clause="names",
         source=edited(reference("track_relu_stats"), ("entries.append({", "stats[name].append({")),
         expect=["raised keyerror", "not a relu", "when the loop ended", "bind the name"],
         mistake="04.track_relu_stats.late-binding"),
    dict(exercise="track_relu_stats", kind="wrong", why="late-binding loop variable with a defaultdict", clause="names",
         source=edited(reference("track_relu_stats"),
                       ("from torch import nn", "import collections\n\nfrom torch import nn"),
                       ("stats, handles = {}, []", "stats, handles = collections.defaultdict(list), []"),
                       ("entries.append({", "stats[name].append({")),
         expect=["not nn.relu modules", "bind the name"],
         mistake="04.track_relu_stats.late-binding"),
    dict(exercise="track_relu_stats", kind="wrong", why="late-binding loop variable over the ReLUs only", clause="names",
         source=edited(reference("track_relu_stats"),
                       ("entries.append({", "stats[name].append({"),
                       ("in model.named_modules():",
                        "in [(n, m) for n, m in model.named_modules() if isinstance(m, nn.ReLU)]:")),
         expect=["no entries for", "more entries than that relu ran", "bind the name"],
         mistake="04.track_relu_stats.late-binding"),
    dict(exercise="track_relu_stats", kind="wrong", why="counts near-zero values as zeros", clause="zero-fraction",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": (output < 1e-3).float().mean().item()')),
         expect=["exactly 0", "small positive values", "output == 0"],
         mistake="04.track_relu_stats.zeros-with-tolerance"),
    dict(exercise="track_relu_stats", kind="wrong", why="mean of the input", clause="mean",
         source=edited(reference("track_relu_stats"),
                       ('"mean": output.mean().item()', '"mean": args[0].mean().item()')),
         expect=["mean of the relu's input", "its output"],
         mistake="04.track_relu_stats.mean-of-input"),
    dict(exercise="track_relu_stats", kind="wrong", why="number of zeros instead of the fraction", clause="zero-fraction",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": float((output == 0).sum())')),
         expect=["number of zeros", "divide by the number of elements"],
         mistake="04.track_relu_stats.zero-count"),
    dict(exercise="track_relu_stats", kind="wrong", why="matches ReLU in the class name, so LeakyReLU too", clause="relu-only",
         source=edited(reference("track_relu_stats"),
                       ("if isinstance(module, nn.ReLU):", 'if "ReLU" in type(module).__name__:')),
         expect=["not nn.relu modules", "leakyrelu"],
         mistake="04.track_relu_stats.not-only-relus"),
    dict(exercise="track_relu_stats", kind="wrong", why="keyed by the module object", clause="names",
         source=edited(reference("track_relu_stats"),
                       ("stats[name] = []", "stats[module] = []"),
                       ("make_hook(stats[name])", "make_hook(stats[module])")),
         expect=["has keys", "names from model.named_modules()"],
         mistake="04.track_relu_stats.keys-not-names"),
    dict(exercise="track_relu_stats", kind="right", why="defaultdict, factory function, count over numel",
         source='''
import collections

import torch


def track_relu_stats(model):
    stats = collections.defaultdict(list)

    def make_hook(name):
        def hook(module, args, output):
            zeros = torch.count_nonzero(output == 0).item()
            stats[name].append({"zero_fraction": zeros / output.numel(), "mean": float(output.detach().mean())})
        return hook

    handles = [module.register_forward_hook(make_hook(name))
               for name, module in model.named_modules() if isinstance(module, torch.nn.ReLU)]
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
            entries.append({"mean": values.mean().item(), "zero_fraction": values.eq(0).double().mean().item()})
        return hook

    return stats, tuple(module.register_forward_hook(hook_for(stats[name])) for name, module in relus.items())
''',
         expect=[]),

    dict(exercise="track_relu_stats", kind="wrong", why="class name starts with ReLU, so ReLU6 too", clause="relu-only",
         source=edited(reference("track_relu_stats"),
                       ("if isinstance(module, nn.ReLU):", 'if type(module).__name__.startswith("ReLU"):')),
         expect=["not nn.relu modules", "relu6", "isinstance(module, nn.relu)"],
         mistake="04.track_relu_stats.not-only-relus"),
    dict(exercise="track_relu_stats", kind="wrong", why="zero fraction from the inputs below zero", clause="zero-fraction",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": (args[0] < 0).float().mean().item()')),
         expect=["inputs below 0", "exactly 0", "zeros of the output"],
         mistake="04.track_relu_stats.negative-inputs-fraction"),
    dict(exercise="track_relu_stats", kind="wrong", why="mean of the non-zero outputs only", clause="mean",
         source=edited(reference("track_relu_stats"),
                       ('"mean": output.mean().item()', '"mean": output[output > 0].mean().item()')),
         expect=["non-zero elements only", "zeros included"],
         mistake="04.track_relu_stats.mean-of-nonzero"),
    dict(exercise="track_relu_stats", kind="wrong", why="records only while gradients are on", clause="grad-mode",
         source=edited(reference("track_relu_stats"),
                       ("from torch import nn", "import torch\nfrom torch import nn"),
                       ("def hook(module, args, output):",
                        "def hook(module, args, output):\n"
                        "            if not torch.is_grad_enabled():\n"
                        "                return")),
         expect=["torch.no_grad()", "added no entry", "hooks fire under no_grad"],
         mistake="04.track_relu_stats.skipped-under-no-grad"),
    dict(exercise="track_relu_stats", kind="wrong", why="torch.isclose to zero counts tiny outputs as zeros", clause="zero-fraction",
         source=edited(reference("track_relu_stats"),
                       ("from torch import nn", "import torch\nfrom torch import nn"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": torch.isclose(output, torch.zeros_like(output)).float().mean().item()')),
         expect=["exactly 0", "1e-30", "torch.isclose", "output == 0"],
         mistake="04.track_relu_stats.zeros-with-tolerance"),
    dict(exercise="track_relu_stats", kind="wrong", why="divides by the batch size", clause="zero-fraction",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": (output == 0).sum().item() / len(output)')),
         expect=["divided by the batch size", "output.numel()"],
         mistake="04.track_relu_stats.zeros-over-batch-size"),
    dict(exercise="track_relu_stats", kind="right", why="functools.partial, sums over numel, <= 0",
         source='''
import functools

import torch


def _record(entries, module, args, output):
    size = output.numel()
    entries.append(dict(mean=float(output.detach().sum()) / size, zero_fraction=int((output <= 0).sum()) / size))


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
        self.entries.append({"mean": output.mean().item(), "zero_fraction": 1.0 - alive / output.numel()})


def track_relu_stats(model):
    modules = dict(model.named_modules())
    stats = {name: [] for name, module in modules.items() if isinstance(module, nn.ReLU)}
    return stats, [modules[name].register_forward_hook(Recorder(stats[name]), with_kwargs=True) for name in stats]
''',
         expect=[]),

    # ------------------------------------------------------------------ clamp_output
    dict(exercise="clamp_output", kind="wrong", why="clamp_ in place", clause="not-in-place",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "return output.clamp_(min_value, max_value)")),
         expect=["in place", "clamp_"],
         mistake="04.clamp_output.in-place"),
    dict(exercise="clamp_output", kind="wrong", why="masked assignment into the output", clause="not-in-place",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "output[output < min_value] = min_value\n"
                        "        output[output > max_value] = max_value\n"
                        "        return output")),
         expect=["in place", "assignment into the output"],
         mistake="04.clamp_output.in-place"),
    dict(exercise="clamp_output", kind="wrong", why="clamps .data in place and returns None", clause="not-in-place",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "output.data.clamp_(min_value, max_value)")),
         expect=["in place", ".data"],
         mistake="04.clamp_output.in-place"),
    dict(exercise="clamp_output", kind="wrong", why="forgets to return the clamped tensor", clause="replaces",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "clamped = output.clamp(min_value, max_value)")),
         expect=["unclamped", "returns none", "return the clamped tensor"],
         mistake="04.clamp_output.clamp-not-returned"),
    dict(exercise="clamp_output", kind="wrong", why="clamps a detached output", clause="inside-gradient",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return output.detach().clamp(min_value, max_value)")),
         expect=["cut off from the autograd graph", "no gradient reaches"],
         mistake="04.clamp_output.cut-off-from-graph"),
    dict(exercise="clamp_output", kind="wrong", why="clamps under no_grad", clause="inside-gradient",
         source=edited(reference("clamp_output"),
                       ("def clamp_output", "import torch\n\n\ndef clamp_output"),
                       ("        return output.clamp(min_value, max_value)",
                        "        with torch.no_grad():\n"
                        "            return output.clamp(min_value, max_value)")),
         expect=["cut off from the autograd graph", "torch.no_grad()"],
         mistake="04.clamp_output.cut-off-from-graph"),
    dict(exercise="clamp_output", kind="wrong", why="straight-through: clamped values, unclamped gradient", clause="outside-gradient",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return output + (output.clamp(min_value, max_value) - output).detach()")),
         expect=["gradient without any clamp", "gradient of 0"],
         mistake="04.clamp_output.unclamped-gradient"),
    dict(exercise="clamp_output", kind="wrong", why="a detached clamp plus output * 0: no gradient inside the bounds",
         clause="inside-gradient",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return output.detach().clamp(min_value, max_value) + 0 * output")),
         expect=["0 everywhere", "inside the bounds"],
         mistake="04.clamp_output.no-gradient-inside"),
    dict(exercise="clamp_output", kind="wrong", why="Python min and max on a tensor", clause="bounds",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "return max(min_value, min(output, max_value))")),
         expect=["raised RuntimeError", "ambiguous"],
         mistake="04.clamp_output.tensor-as-a-bool"),
    dict(exercise="clamp_output", kind="wrong", why="torch.max and torch.min with a number", clause="bounds",
         source=edited(reference("clamp_output"),
                       ("def clamp_output", "import torch\n\n\ndef clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return torch.max(torch.min(output, max_value), min_value)")),
         expect=["raised TypeError", "invalid combination of arguments"],
         mistake="04.clamp_output.torch-min-max-with-a-number"),
    dict(exercise="clamp_output", kind="wrong", why="a pre-hook that clamps the input", clause="forward-hook",
         source=edited(reference("clamp_output"),
                       ("def hook(module, args, output):\n"
                        "        return output.clamp(min_value, max_value)",
                        "def hook(module, args):\n"
                        "        return args[0].clamp(min_value, max_value)"),
                       ("register_forward_hook(hook)", "register_forward_pre_hook(hook)")),
         expect=["input was changed", "register_forward_pre_hook"],
         mistake="04.clamp_output.input-clamped"),
    dict(exercise="clamp_output", kind="right", why="nested torch.where",
         source=edited(reference("clamp_output"),
                       ("def clamp_output(module, min_value, max_value):",
                        "import torch\n\n\ndef clamp_output(module, min_value, max_value):"),
                       ("return output.clamp(min_value, max_value)",
                        "low = torch.where(output < min_value, torch.full_like(output, min_value), output)\n"
                        "        return torch.where(low > max_value, torch.full_like(output, max_value), low)")),
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="torch.minimum and torch.maximum (half the gradient on a bound)",
         source=edited(reference("clamp_output"),
                       ("def clamp_output(module, min_value, max_value):",
                        "import torch\n\n\ndef clamp_output(module, min_value, max_value):"),
                       ("return output.clamp(min_value, max_value)",
                        "low = torch.tensor(min_value, dtype=output.dtype)\n"
                        "        high = torch.tensor(max_value, dtype=output.dtype)\n"
                        "        return torch.minimum(torch.maximum(output, low), high)")),
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="F.hardtanh (no gradient on a bound)",
         source=edited(reference("clamp_output"),
                       ("def clamp_output", "import torch.nn.functional as F\n\n\ndef clamp_output"),
                       ("def hook(module, args, output):\n"
                        "        return output.clamp(min_value, max_value)",
                        "def hook(module, args, kwargs, output):\n"
                        "        return F.hardtanh(output, min_value, max_value)"),
                       ("register_forward_hook(hook)", "register_forward_hook(hook, with_kwargs=True)")),
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="torch.where masks with <= and >= (no gradient on a bound)",
         source=edited(reference("clamp_output"),
                       ("def clamp_output(module, min_value, max_value):",
                        "import torch\n\n\ndef clamp_output(module, min_value, max_value):"),
                       ("return output.clamp(min_value, max_value)",
                        "low = torch.where(output <= min_value, torch.full_like(output, min_value), output)\n"
                        "        return torch.where(low >= max_value, torch.full_like(output, max_value), low)")),
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="clamps with ReLUs (no gradient on a bound)",
         source=edited(reference("clamp_output"),
                       ("def clamp_output(module, min_value, max_value):",
                        "import torch.nn.functional as F\n\n\n"
                        "def clamp_output(module, min_value, max_value):"),
                       ("return output.clamp(min_value, max_value)",
                        "return max_value - F.relu(max_value - min_value - F.relu(output - min_value))")),
         expect=[]),
    dict(exercise="clamp_output", kind="wrong", why="only the lower bound", clause="bounds",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "return output.clamp(min=min_value)")),
         expect=["only the lower bound", "both bounds"],
         mistake="04.clamp_output.lower-bound-only"),
    dict(exercise="clamp_output", kind="wrong", why="does not return the handle", clause="handle",
         source=edited(reference("clamp_output"),
                       ("return module.register_forward_hook(hook)", "module.register_forward_hook(hook)")),
         expect=["returned None", "removablehandle"],
         mistake="04.clamp_output.no-handle"),
    dict(exercise="clamp_output", kind="wrong", why="returns the handle in a list", clause="handle",
         source=edited(reference("clamp_output"),
                       ("return module.register_forward_hook(hook)", "return [module.register_forward_hook(hook)]")),
         expect=["returned list", "not in a list"],
         mistake="04.clamp_output.handle-in-a-list"),
    dict(exercise="clamp_output", kind="right", why="clamp_ on a clone",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return output.clone().clamp_(min_value, max_value)")),
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="torch.clamp with keywords",
         source=edited(reference("clamp_output"),
                       ("def clamp_output(module, min_value, max_value):",
                        "import torch\n\n\ndef clamp_output(module, min_value, max_value):"),
                       ("return output.clamp(min_value, max_value)",
                        "return torch.clamp(output, min=min_value, max=max_value)")),
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="a lambda with clamp_min and clamp_max, always_call",
         source='''
def clamp_output(module, min_value, max_value):
    return module.register_forward_hook(lambda m, args, out: out.clamp_min(min_value).clamp_max(max_value),
                                        always_call=True)
''',
         expect=[]),

    # ------------------------------------------------------------------ one entry per clause not broken above,
    # and submissions written from the docstring alone, as a stranger would (shapes of public code included)
    dict(exercise="capture_activations", kind="wrong", clause="root", why="leaves the root module out of the lookup",
         source=edited(reference("capture_activations"),
                       ("modules = dict(model.named_modules(remove_duplicate=False))",
                        "modules = {name: module for name, module in "
                        "model.named_modules(remove_duplicate=False) if name}")),
         expect=["'' is the model itself", "the root included"],
         mistake="04.capture_activations.root-name-refused"),
    dict(exercise="capture_activations", kind="wrong", clause="alias",
         why="named_modules() lists a reused layer under its first name only",
         source=edited(reference("capture_activations"),
                       ("dict(model.named_modules(remove_duplicate=False))", "dict(model.named_modules())")),
         expect=["the same module as '0'", "reused under a second name", "remove_duplicate=false"],
         mistake="04.capture_activations.second-name-refused"),
    dict(exercise="capture_activations", kind="wrong", clause="pair", why="returns the dict only",
         source=edited(reference("capture_activations"), ("return activations, handles", "return activations")),
         expect=["expected a pair (activations, handles)"],
         mistake="04.capture_activations.not-a-pair"),
    dict(exercise="capture_activations", kind="wrong", clause="grad-mode", why="stores only outputs that require grad",
         source=edited(reference("capture_activations"),
                       ("            activations[name] = output.detach().clone()",
                        "            if output.requires_grad:\n"
                        "                activations[name] = output.detach().clone()")),
         expect=["under torch.no_grad()", "did not update it", "whatever the grad mode"],
         mistake="04.capture_activations.skipped-under-no-grad"),
    dict(exercise="capture_activations", kind="wrong", clause="grad-mode", why="stores only while grad mode is on",
         source=edited(reference("capture_activations"),
                       ("            activations[name] = output.detach().clone()",
                        "            if torch.is_grad_enabled():  # training passes only\n"
                        "                activations[name] = output.detach().clone()"),
                       ("def capture_activations", "import torch\n\n\ndef capture_activations")),
         expect=["under torch.no_grad()", "did not update it", "whatever the grad mode"],
         mistake="04.capture_activations.skipped-under-no-grad"),
    dict(exercise="capture_activations", kind="wrong", clause="handles", why="returns the hook functions, not handles",
         source=edited(reference("capture_activations"),
                       ("    handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]\n",
                        "    handles = [make_hook(name) for name in layer_names]\n"
                        "    for name, hook in zip(layer_names, handles):\n"
                        "        modules[name].register_forward_hook(hook)\n")),
         expect=["each must be the removablehandle"],
         mistake="04.capture_activations.not-handles"),
    dict(exercise="capture_activations", kind="wrong", clause="handles", why="returns the handles in a dict by name",
         source=edited(reference("capture_activations"),
                       ("handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]",
                        "handles = {name: modules[name].register_forward_hook(make_hook(name)) for name in layer_names}")),
         expect=["as its handles", "expected a list of the removablehandles"],
         mistake="04.capture_activations.handles-as-dict"),
    dict(exercise="capture_activations", kind="wrong", clause="removal", why="returns only the last handle",
         source=edited(reference("capture_activations"),
                       ("    handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]\n",
                        "    for name in layer_names:\n"
                        "        handle = modules[name].register_forward_hook(make_hook(name))\n"
                        "    handles = [handle]\n")),
         expect=["still registered on", "return the handle of every hook"],
         mistake="04.capture_activations.handle-not-returned"),
    dict(exercise="capture_activations", kind="wrong", clause="cloned", why="detach().cpu() copies nothing on the CPU",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()", "activations[name] = output.detach().cpu()")),
         expect=["shares memory", "output.detach().clone()"],
         mistake="04.capture_activations.not-cloned"),
    dict(exercise="capture_activations", kind="wrong", clause="by-name", why="keyed by the module object",
         source=edited(reference("capture_activations"),
                       ("            activations[name] = output.detach().clone()",
                        "            activations[module] = output.detach().clone()")),
         expect=["has no entry for", "under its layer's name"],
         mistake="04.capture_activations.entry-not-under-its-name"),
    dict(exercise="capture_activations", kind="wrong", clause="any-depth", why="checks names with hasattr",
         source=edited(reference("capture_activations"),
                       ("        if name not in modules:", "        if not hasattr(model, name) and name:")),
         expect=["raised keyerror", "nested layers"],
         mistake="04.capture_activations.nested-name-refused"),
    dict(exercise="capture_activations", kind="right", why="output.data.clone() and a generator of names checked",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()", "activations[name] = output.data.clone()"),
                       ("    for name in layer_names:\n"
                        "        if name not in modules:\n"
                        '            raise KeyError(f"{name!r} is not a submodule name of the model")\n',
                        "    unknown = next((name for name in layer_names if name not in modules), None)\n"
                        "    if unknown is not None:\n"
                        "        raise KeyError(unknown)\n")),
         expect=[]),

    dict(exercise="track_relu_stats", kind="wrong", clause="subclasses", why="type(module) is nn.ReLU misses a subclass",
         source=edited(reference("track_relu_stats"),
                       ("if isinstance(module, nn.ReLU):", "if type(module) is nn.ReLU:")),
         expect=["subclass of nn.relu", "isinstance(module, nn.relu) includes subclasses"],
         mistake="04.track_relu_stats.subclass-skipped"),
    dict(exercise="track_relu_stats", kind="wrong", clause="once", why="a reused ReLU tracked under each of its names",
         source=edited(reference("track_relu_stats"),
                       ("model.named_modules():", "model.named_modules(remove_duplicate=False):")),
         expect=["second names of the relus", "track each relu once"],
         mistake="04.track_relu_stats.second-name-tracked"),
    dict(exercise="track_relu_stats", kind="wrong", clause="first-name", why="a reused ReLU tracked under its last name",
         source=edited(reference("track_relu_stats"),
                       ("    for name, module in model.named_modules():\n"
                        "        if isinstance(module, nn.ReLU):\n",
                        "    last_name = {module: name for name, module in "
                        "model.named_modules(remove_duplicate=False)}\n"
                        "    for module in model.modules():\n"
                        "        name = last_name[module]\n"
                        "        if isinstance(module, nn.ReLU):\n")),
         expect=["second names of the relus", "under its first name"],
         mistake="04.track_relu_stats.second-name-tracked"),
    dict(exercise="track_relu_stats", kind="wrong", clause="pair", why="returns the stats only",
         source=edited(reference("track_relu_stats"), ("return stats, handles", "return stats")),
         expect=["expected a pair (stats, handles)"],
         mistake="04.track_relu_stats.not-a-pair"),
    dict(exercise="track_relu_stats", kind="wrong", clause="keys", why="the key dead_fraction",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0)', '"dead_fraction": (output == 0)')),
         expect=["exactly the keys 'mean' and 'zero_fraction'"],
         mistake="04.track_relu_stats.wrong-entry-keys"),
    dict(exercise="track_relu_stats", kind="wrong", clause="zero-fraction", why="fraction of non-zero outputs",
         source=edited(reference("track_relu_stats"),
                       ("(output == 0).float().mean().item()", "(output > 0).float().mean().item()")),
         expect=["exactly 0", "the fraction of elements that are not zero"],
         mistake="04.track_relu_stats.nonzero-fraction"),
    dict(exercise="track_relu_stats", kind="wrong", clause="mean", why="sum divided by the batch size",
         source=edited(reference("track_relu_stats"),
                       ('"mean": output.mean().item()', '"mean": output.sum().item() / output.shape[0]')),
         expect=["sum divided by the batch size", "output.numel()"],
         mistake="04.track_relu_stats.mean-over-batch-size"),
    dict(exercise="track_relu_stats", kind="wrong", clause="handles", why="returns the handles in a dict by name",
         source=edited(reference("track_relu_stats"),
                       ("stats, handles = {}, []", "stats, handles = {}, {}"),
                       ("handles.append(module.register_forward_hook(make_hook(stats[name])))",
                        "handles[name] = module.register_forward_hook(make_hook(stats[name]))")),
         expect=["as its handles", "expected a list of the removablehandles"],
         mistake="04.track_relu_stats.handles-as-dict"),
    dict(exercise="track_relu_stats", kind="wrong", clause="removal", why="handles list made again in the loop",
         source=edited(reference("track_relu_stats"),
                       ("handles.append(module.register_forward_hook(make_hook(stats[name])))",
                        "handles = [module.register_forward_hook(make_hook(stats[name]))]")),
         expect=["still registered on", "return the handle of every hook"],
         mistake="04.track_relu_stats.handle-not-returned"),
    dict(exercise="track_relu_stats", kind="wrong", clause="return-none", why="the hook returns the output detached",
         source=edited(reference("track_relu_stats"),
                       ('                            "zero_fraction": (output == 0).float().mean().item()})\n'
                        "        return hook",
                        '                            "zero_fraction": (output == 0).float().mean().item()})\n'
                        "            return output.detach()  # keep the graph out of the statistics\n"
                        "        return hook")),
         expect=["output changed", "requires_grad=false", "must return none"],
         mistake="04.track_relu_stats.output-detached"),
    dict(exercise="track_relu_stats", kind="wrong", clause="floats", why="statistics as one-element lists",
         source=edited(reference("track_relu_stats"),
                       ('"mean": output.mean().item()', '"mean": output.mean().reshape(1).tolist()')),
         expect=["expected a python float"],
         mistake="04.track_relu_stats.not-a-float"),
    dict(exercise="track_relu_stats", kind="right", why="a seen set over modules(), tolist() floats",
         source='''
import torch


def track_relu_stats(model):
    stats, handles, seen = {}, [], set()
    for name, module in model.named_modules(remove_duplicate=False):
        if isinstance(module, torch.nn.ReLU) and id(module) not in seen:
            seen.add(id(module))
            entries = stats[name] = []
            handles.append(module.register_forward_hook(
                lambda module, args, output, entries=entries: entries.append(
                    {"mean": output.mean().tolist(), "zero_fraction": output.eq(0).float().mean().tolist()})))
    return stats, handles
''',
         expect=[]),

    dict(exercise="clamp_output", kind="wrong", clause="grad-mode", why="clamps only outputs that require grad",
         source=edited(reference("clamp_output"),
                       ("        return output.clamp(min_value, max_value)",
                        "        if output.requires_grad:  # training only\n"
                        "            return output.clamp(min_value, max_value)")),
         expect=["under torch.no_grad()", "whatever the grad mode"],
         mistake="04.clamp_output.skipped-under-no-grad"),
    dict(exercise="clamp_output", kind="wrong", clause="not-in-place", why="torch.clamp with out=output",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return torch.clamp(output, min_value, max_value, out=output)"),
                       ("def clamp_output", "import torch\n\n\ndef clamp_output")),
         expect=["raised runtimeerror", "out="],
         mistake="04.clamp_output.clamp-with-out"),
    dict(exercise="clamp_output", kind="wrong", clause="inside-gradient", why="a detached copy made to require grad again",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return output.clamp(min_value, max_value).detach().requires_grad_()")),
         expect=["cut off from the autograd graph", "requires_grad=true"],
         mistake="04.clamp_output.cut-off-from-graph"),
    dict(exercise="clamp_output", kind="wrong", clause="bounds", why="the bounds swapped",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "return output.clamp(max_value, min_value)")),
         expect=["expected the output clamped to [-0.5, 0.5]"],
         mistake="04.clamp_output.wrong-clamp-value"),
    dict(exercise="clamp_output", kind="wrong", clause="replaces", why="returns the clamped output in a tuple",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "return (output.clamp(min_value, max_value),)")),
         expect=["returned tuple", "expected the clamped output"],
         mistake="04.clamp_output.not-a-tensor"),
    dict(exercise="clamp_output", kind="right", why="torch.where with <= and >=, written with scalars",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return torch.where(output >= max_value, max_value,\n"
                        "                           torch.where(output <= min_value, min_value, output))"),
                       ("def clamp_output", "import torch\n\n\ndef clamp_output")),
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="torch.where with < and >, prepend=True",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return torch.where(output > max_value, max_value,\n"
                        "                           torch.where(output < min_value, min_value, output))"),
                       ("register_forward_hook(hook)", "register_forward_hook(hook, prepend=True)"),
                       ("def clamp_output", "import torch\n\n\ndef clamp_output")),
         expect=[]),

    dict(exercise="capture_activations", kind="wrong", clause="eval", why="stores only in training mode",
         source=edited(reference("capture_activations"),
                       ("            activations[name] = output.detach().clone()",
                        "            if module.training:\n"
                        "                activations[name] = output.detach().clone()")),
         expect=["in eval() mode", "did not update it", "no test of module.training"],
         mistake="04.capture_activations.skipped-in-eval"),
    dict(exercise="capture_activations", kind="wrong", clause="detached", why="a detached clone made to require grad",
         source=edited(reference("capture_activations"),
                       ("output.detach().clone()", "output.detach().clone().requires_grad_()")),
         expect=["requires grad, with no graph", "without requires_grad_()"],
         mistake="04.capture_activations.made-to-require-grad"),
    dict(exercise="track_relu_stats", kind="wrong", clause="eval", why="records only in training mode",
         source=edited(reference("track_relu_stats"),
                       ("            entries.append({",
                        "            if module.training:\n                entries.append({")),
         expect=["ran in eval() mode and added no entry", "no test of module.training"],
         mistake="04.track_relu_stats.skipped-in-eval"),
    dict(exercise="track_relu_stats", kind="right", why="stats lists made on first call with setdefault",
         source=edited(reference("track_relu_stats"),
                       ("            stats[name] = []\n", ""),
                       ("make_hook(stats[name])", "make_hook(stats.setdefault(name, []))")),
         expect=[]),
    dict(exercise="clamp_output", kind="wrong", clause="eval", why="clamps only in training mode",
         source=edited(reference("clamp_output"),
                       ("        return output.clamp(min_value, max_value)",
                        "        if module.training:\n"
                        "            return output.clamp(min_value, max_value)")),
         expect=["in eval() mode returned", "no test of module.training"],
         mistake="04.clamp_output.skipped-in-eval"),
    dict(exercise="clamp_output", kind="wrong", clause="every-call", why="clamps the first call only",
         source=edited(reference("clamp_output"),
                       ("    def hook(module, args, output):\n"
                        "        return output.clamp(min_value, max_value)\n",
                        "    calls = []\n\n"
                        "    def hook(module, args, output):\n"
                        "        calls.append(1)\n"
                        "        if len(calls) == 1:\n"
                        "            return output.clamp(min_value, max_value)\n")),
         expect=["a second call returned", "clamp every call's output, not only the first"],
         mistake="04.clamp_output.first-call-only"),
    dict(exercise="clamp_output", kind="right", why="tensor bounds to torch.clamp",
         source=edited(reference("clamp_output"),
                       ("output.clamp(min_value, max_value)",
                        "torch.clamp(output, torch.tensor(min_value), torch.tensor(max_value))"),
                       ("def clamp_output", "import torch\n\n\ndef clamp_output")),
         expect=[]),
    dict(exercise="capture_activations", kind="wrong", clause="cloned", why="detach().cpu().numpy(), as forum code does",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "activations[name] = output.detach().cpu().numpy()")),
         expect=["a numpy array", "shares memory", "output.detach().clone()"],
         mistake="04.capture_activations.numpy-array"),
    dict(exercise="capture_activations", kind="wrong", clause="alias", why="matches the names named_modules() gives",
         source=edited(reference("capture_activations"),
                       ("    handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]",
                        "    handles = [module.register_forward_hook(make_hook(name))\n"
                        "               for name, module in model.named_modules() if name in layer_names]")),
         expect=["registered forward hooks on ['3']", "under two names", "only its first name"],
         mistake="04.capture_activations.second-name-not-hooked"),
    dict(exercise="track_relu_stats", kind="wrong", clause="relu-only", why="skips in-place ReLUs",
         source=edited(reference("track_relu_stats"),
                       ("if isinstance(module, nn.ReLU):", "if isinstance(module, nn.ReLU) and not module.inplace:")),
         expect=["no entries for the relus ['body.1']", "inplace=true", "track them as well"],
         mistake="04.track_relu_stats.in-place-relu-skipped"),
    dict(exercise="track_relu_stats", kind="wrong", clause="zero-fraction", why="fraction of units zero for the whole batch",
         source=edited(reference("track_relu_stats"),
                       ("(output == 0).float().mean().item()", "(output == 0).all(0).float().mean().item()")),
         expect=["units that are 0 for every input of the batch", "each input separately"],
         mistake="04.track_relu_stats.dead-units-fraction"),
    dict(exercise="track_relu_stats", kind="wrong", clause="floats", why="a NumPy mean",
         source=edited(reference("track_relu_stats"),
                       ('"mean": output.mean().item()', '"mean": output.detach().numpy().mean()')),
         expect=["np.float32", "expected a python float"],
         mistake="04.track_relu_stats.not-a-float"),
    dict(exercise="clamp_output", kind="right", why="shift, clamp below 0, shift back, clamp above",
         source=edited(reference("clamp_output"),
                       ("output.clamp(min_value, max_value)",
                        "(output - min_value).clamp(min=0).add(min_value).clamp(max=max_value)")),
         expect=[]),
    dict(exercise="capture_activations", kind="wrong", clause="return-none", why="detach_() detaches the output itself",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()", "activations[name] = output.detach_().clone()")),
         expect=["output changed", "the graph is gone", "output.detach_()"],
         mistake="04.capture_activations.output-detached"),
    dict(exercise="capture_activations", kind="right", why="a clone under torch.inference_mode()",
         source=edited(reference("capture_activations"),
                       ("            activations[name] = output.detach().clone()",
                        "            with torch.inference_mode():\n"
                        "                activations[name] = output.clone()"),
                       ("def capture_activations", "import torch\n\n\ndef capture_activations")),
         expect=[]),
    dict(exercise="track_relu_stats", kind="wrong", clause="keys", why="entries as (mean, fraction) tuples",
         source=edited(reference("track_relu_stats"),
                       ('entries.append({"mean": output.mean().item(),\n'
                        '                            "zero_fraction": (output == 0).float().mean().item()})',
                        "entries.append((output.mean().item(), (output == 0).float().mean().item()))")),
         expect=["is tuple", "exactly the keys 'mean' and 'zero_fraction'"],
         mistake="04.track_relu_stats.wrong-entry-keys"),
    dict(exercise="clamp_output", kind="right", why="an nn.Hardtanh module made in the hook",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return nn.Hardtanh(min_value, max_value)(output)"),
                       ("def clamp_output", "from torch import nn\n\n\ndef clamp_output")),
         expect=[]),
    # ------------------------------------------------------------------ review: gaps found by submissions
    # written from the docstrings alone (each passed, or was told of a mistake it did not make, before)
    dict(exercise="capture_activations", kind="wrong", clause="alias",
         why="one hook per module object, so a reused layer's second name gets nothing",
         source=edited(reference("capture_activations"),
                       ("    handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]",
                        "    handles, seen = [], set()\n"
                        "    for name in layer_names:\n"
                        "        if id(modules[name]) not in seen:  # hook each module once\n"
                        "            seen.add(id(modules[name]))\n"
                        "            handles.append(modules[name].register_forward_hook(make_hook(name)))")),
         expect=["which name the same module as ['0']", "each name in layer_names gets its own entry"],
         mistake="04.capture_activations.one-entry-per-module"),
    dict(exercise="capture_activations", kind="wrong", clause="new-tensor",
         why="copies each new output into the tensor stored before (a preallocated buffer)",
         source=edited(reference("capture_activations"),
                       ("            activations[name] = output.detach().clone()",
                        "            old = activations.get(name)\n"
                        "            if old is not None and old.shape == output.shape:\n"
                        "                old.copy_(output.detach())  # no new allocation\n"
                        "            else:\n"
                        "                activations[name] = output.detach().clone()")),
         expect=["changed the tensor that activations", "store a new clone on every call"],
         mistake="04.capture_activations.written-into-old-tensor"),
    dict(exercise="capture_activations", kind="wrong", clause="dtype", why="stores a float32 copy of a float64 output",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "activations[name] = output.detach().float().clone()")),
         expect=["has dtype torch.float32", "has dtype torch.float64", "keeps its dtype"],
         mistake="04.capture_activations.dtype-changed"),
    dict(exercise="capture_activations", kind="wrong", clause="cloned",
         why="detach().cpu().float(), as public block-capture hooks write it (no copy of a float32 CPU tensor)",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "activations[name] = output.detach().cpu().float()")),
         expect=["in-place relu", "shares memory", "output.detach().clone()"],
         mistake="04.capture_activations.not-cloned"),
    dict(exercise="capture_activations", kind="wrong", clause="handles", why="a mutable default argument handles=[]",
         source=edited(reference("capture_activations"),
                       ("def capture_activations(model, layer_names):",
                        "def capture_activations(model, layer_names, handles=[]):"),
                       ("    handles = [modules[name].register_forward_hook(make_hook(name)) for name in layer_names]",
                        "    handles.extend(modules[name].register_forward_hook(make_hook(name)) for name in layer_names)")),
         expect=["no longer registered", "default argument", "make a new list in each call"],
         mistake="04.capture_activations.stale-handles"),
    dict(exercise="capture_activations", kind="wrong", clause="fresh-dict", why="one activations dict at module level",
         source=edited(reference("capture_activations"),
                       ("\ndef capture_activations(model, layer_names):",
                        "\nactivations = {}\n\n\ndef capture_activations(model, layer_names):"),
                       ("\n    activations = {}\n", "\n")),
         expect=["before any forward pass", "already holds values", "make a new dict in each call"],
         mistake="04.capture_activations.dict-kept-between-calls"),
    dict(exercise="capture_activations", kind="right", why="a hook class, prepend=True, unknown names by set difference",
         source='''
class Saver:
    def __init__(self, store, name):
        self.store, self.name = store, name

    def __call__(self, module, args, output):
        self.store[self.name] = output.detach().clone()


def capture_activations(model, layer_names):
    names = dict(model.named_modules(remove_duplicate=False))
    unknown = set(layer_names) - set(names)
    if unknown:
        raise KeyError(", ".join(sorted(unknown)))
    store = {}
    handles = [names[name].register_forward_hook(Saver(store, name), prepend=True) for name in layer_names]
    return store, handles
''',
         expect=[]),
    dict(exercise="capture_activations", kind="right", why="with_kwargs, a default argument, copy_ into a fresh empty_like",
         source='''
import torch


def capture_activations(model, layer_names):
    table = {name: module for name, module in model.named_modules(remove_duplicate=False)}
    missing = [name for name in layer_names if name not in table]
    if missing:
        raise KeyError(missing[0])
    activations, handles = {}, []
    for name in layer_names:
        def hook(module, args, kwargs, output, name=name):
            copy = torch.empty_like(output, requires_grad=False)
            copy.copy_(output.detach())
            activations[name] = copy
        handles.append(table[name].register_forward_hook(hook, with_kwargs=True))
    return activations, handles
''',
         expect=[]),

    dict(exercise="track_relu_stats", kind="wrong", clause="root", why="skips the empty name, as public activation hooks do",
         source=edited(reference("track_relu_stats"),
                       ("if isinstance(module, nn.ReLU):",
                        "if name and isinstance(module, nn.ReLU):  # skip top-level model")),
         expect=["no entries for the relus ['']", "'' is the model itself", "don't skip the empty name"],
         mistake="04.track_relu_stats.root-skipped"),
    dict(exercise="track_relu_stats", kind="wrong", clause="handles", why="one handles list at module level",
         source=edited(reference("track_relu_stats"),
                       ("\ndef track_relu_stats(model):", "\nhandles = []\n\n\ndef track_relu_stats(model):"),
                       ("    stats, handles = {}, []", "    stats = {}")),
         expect=["no longer registered", "make a new list in each call"],
         mistake="04.track_relu_stats.stale-handles"),
    dict(exercise="track_relu_stats", kind="wrong", clause="fresh-dict", why="one stats dict at module level, setdefault",
         source=edited(reference("track_relu_stats"),
                       ("\ndef track_relu_stats(model):", "\nstats = {}\n\n\ndef track_relu_stats(model):"),
                       ("    stats, handles = {}, []", "    handles = []"),
                       ("            stats[name] = []\n", "            stats.setdefault(name, [])\n")),
         expect=["before any forward pass", "already holds values", "make a new dict in each call"],
         mistake="04.track_relu_stats.dict-kept-between-calls"),
    dict(exercise="track_relu_stats", kind="wrong", clause="zero-fraction", why="zero fraction of the first input only",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": (output[0] == 0).float().mean().item()')),
         expect=["first input of the batch only"],
         mistake="04.track_relu_stats.first-input-only"),
    dict(exercise="track_relu_stats", kind="wrong", clause="zero-fraction", why="a threshold of 1e-6 on the absolute value",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": (output.abs() < 1e-6).float().mean().item()')),
         expect=["a tolerance", "output == 0"],
         mistake="04.track_relu_stats.zeros-with-tolerance"),
    dict(exercise="track_relu_stats", kind="right", why="model.apply with a first-name table, float64 means, a tuple",
         source='''
import torch
from torch import nn


def track_relu_stats(model):
    names = {}
    for name, module in model.named_modules():
        names.setdefault(module, name)
    stats, handles = {}, []

    def visit(module):
        if isinstance(module, nn.ReLU) and names[module] not in stats:
            entries = stats[names[module]] = []

            def hook(mod, inp, out):
                with torch.no_grad():
                    entries.append({"mean": out.double().mean().item(), "zero_fraction": out.eq(0).double().mean().item()})
            handles.append(module.register_forward_hook(hook))

    model.apply(visit)
    return stats, tuple(handles)
''',
         expect=[]),

    dict(exercise="clamp_output", kind="wrong", clause="others-alone", why="one handle at module level, removed by the next call",
         source=edited(reference("clamp_output"),
                       ("def clamp_output", "_handle = None\n\n\ndef clamp_output"),
                       ("    def hook(module, args, output):",
                        "    global _handle\n"
                        "    if _handle is not None:\n"
                        "        _handle.remove()  # only one clamp at a time\n\n"
                        "    def hook(module, args, output):"),
                       ("return module.register_forward_hook(hook)",
                        "_handle = module.register_forward_hook(hook)\n    return _handle")),
         expect=["second(x) returned", "it is not clamped at all", "leaves the others alone"],
         mistake="04.clamp_output.other-hooks-disturbed"),
    dict(exercise="clamp_output", kind="wrong", clause="own-hook", why="the bounds kept on the module, read by the hook",
         source=edited(reference("clamp_output"),
                       ("    def hook(module, args, output):",
                        "    module.clamp_range = (min_value, max_value)\n\n"
                        "    def hook(module, args, output):"),
                       ("return output.clamp(min_value, max_value)",
                        "low, high = module.clamp_range\n"
                        "        return output.clamp(low, high)")),
         expect=["clamped to [0.0, 1.0] only", "the last call's bounds", "its own bounds"],
         mistake="04.clamp_output.bounds-shared-between-calls"),
    dict(exercise="clamp_output", kind="wrong", clause="dtype", why="returns a float32 clamp of a float64 output",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return output.clamp(min_value, max_value).float()")),
         expect=["the module's output has dtype torch.float64", "keeps the output's dtype"],
         mistake="04.clamp_output.dtype-changed"),
    dict(exercise="clamp_output", kind="right", why="strict torch.where with output * 0 + bound",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return torch.where(output < min_value, output * 0 + min_value,\n"
                        "                           torch.where(output > max_value, output * 0 + max_value, output))"),
                       ("def clamp_output", "import torch\n\n\ndef clamp_output")),
         expect=[]),
    dict(exercise="clamp_output", kind="right", why="torch.clip with bounds as tensors of the output's dtype, with_kwargs",
         source='''
import torch


def clamp_output(module, min_value, max_value):
    def hook(module, args, kwargs, output):
        low = torch.tensor(min_value, dtype=output.dtype)
        high = torch.tensor(max_value, dtype=output.dtype)
        return torch.clip(output, min=low, max=high)

    return module.register_forward_hook(hook, with_kwargs=True)
''',
         expect=[]),
    dict(exercise="clamp_output", kind="wrong", clause="forward-hook",
         why="wraps module.forward and returns an object with remove()",
         source='''
class Undo:
    def __init__(self, module, forward):
        self.module, self.forward = module, forward

    def remove(self):
        self.module.forward = self.forward


def clamp_output(module, min_value, max_value):
    original = module.forward
    module.forward = lambda *args, **kwargs: original(*args, **kwargs).clamp(min_value, max_value)
    return Undo(module, original)
''',
         expect=["has no forward hook", "replaced module.forward", "register_forward_hook"],
         mistake="04.clamp_output.forward-replaced"),
    dict(exercise="track_relu_stats", kind="right", why="one global forward hook and a module-to-name table",
         source=_GLOBAL_RELU_STATS,
         expect=[]),
    dict(exercise="capture_activations", kind="right", why="clone() then detach()",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()", "activations[name] = output.clone().detach()")),
         expect=[]),
    dict(exercise="track_relu_stats", kind="wrong", clause="zero-fraction",
         why="one minus the units alive for some input (sum over the batch > 0), as public dead-ReLU trackers count",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": 1 - (output.detach().sum(dim=0) > 0).float().mean().item()')),
         expect=["units that are 0 for every input of the batch", "each input separately"],
         mistake="04.track_relu_stats.dead-units-fraction"),
    dict(exercise="track_relu_stats", kind="wrong", clause="zero-fraction",
         why="running totals of zeros and elements over every call so far",
         source=edited(reference("track_relu_stats"),
                       ("    def make_hook(entries):\n"
                        "        def hook(module, args, output):\n",
                        "    def make_hook(entries):\n"
                        "        totals = [0, 0]\n\n"
                        "        def hook(module, args, output):\n"
                        "            totals[0] += int((output == 0).sum())\n"
                        "            totals[1] += output.numel()\n"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": totals[0] / totals[1]')),
         expect=["over this call and the", "without running totals"],
         mistake="04.track_relu_stats.running-zero-fraction"),
    dict(exercise="capture_activations", kind="wrong", clause="only-named",
         why="an empty layer_names taken to mean every layer, as public feature extractors default",
         source=edited(reference("capture_activations"),
                       ("    for name in layer_names:\n        if name not in modules:",
                        "    if not layer_names:\n"
                        "        layer_names = [name for name in modules if name]\n"
                        "    for name in layer_names:\n"
                        "        if name not in modules:")),
         expect=["capture_activations(model, [])", "registers no hook and captures nothing"],
         mistake="04.capture_activations.no-names-means-all"),
]

# predict_shared_module_calls: a prediction of the events a piece of code logs (hooked/checks/event_predictions.py)
from mistakes import predicted  # noqa: E402

CLAUSES["predict_shared_module_calls"] = {
    "events": "Return the events that `shared_module_events` logs",
    "order": "in the order they fire",
    "names": "one of the names the cell above logs",
}
_SHARED = ["pre:model", "pre:shared", "fwd:shared", "pre:shared", "fwd:shared", "fwd:head", "fwd:model"]
ENTRIES += [
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="order", why="hooks once per module",
         source=predicted("predict_shared_module_calls", ["pre:model", "pre:shared", "fwd:shared", "fwd:head",
                                                           "fwd:model"]),
         expect=["at index 3", "you predicted 'fwd:head'", "'pre:shared' fires there",
                 "a module called twice fires its hooks twice"],
         mistake="04.predict_shared_module_calls.shared-called-once"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="order", why="the parent's forward hook first",
         source=predicted("predict_shared_module_calls", ["pre:model", "fwd:model"] + _SHARED[1:-1]),
         expect=["at index 1", "the model's forward hook comes last"],
         mistake="04.predict_shared_module_calls.parent-forward-hook-early"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="order", why="both calls' pre-hooks first",
         source=predicted("predict_shared_module_calls", ["pre:model", "pre:shared", "pre:shared", "fwd:shared",
                                                           "fwd:shared", "fwd:head", "fwd:model"]),
         expect=["at index 2", "the inner call self.shared(x) finishes"],
         mistake="04.predict_shared_module_calls.outer-call-before-inner"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="events", why="returns None",
         source="def predict_shared_module_calls():\n    events = ['pre:model', 'fwd:model']\n",
         expect=["returned none", "is the `return` missing?"],
         mistake="04.predict_shared_module_calls.returned-none"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="names", why="a hook the code never registers",
         source=predicted("predict_shared_module_calls", ["pre:model", "pre:shared", "fwd:shared", "pre:shared",
                                                           "fwd:shared", "pre:head", "fwd:head", "fwd:model"]),
         expect=["'pre:head' at index 5, which is not an event this code logs"],
         mistake="04.predict_shared_module_calls.unknown-event"),
    dict(exercise="predict_shared_module_calls", kind="right", why="forward and pre-hook spellings, upper case",
         source=predicted("predict_shared_module_calls", ["PRE:MODEL", "pre-hook:shared", "forward:shared",
                                                           "pre_hook : shared", "Forward:Shared", " fwd:head",
                                                           "forward:model "]),
         expect=[]),
]
# The adversary pass on predict_shared_module_calls: the order Python calls in, and a module called once too often.
ENTRIES += [
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="order", why="head called before shared",
         source=predicted("predict_shared_module_calls", ["pre:model", "fwd:head"] + _SHARED[1:5] + ["fwd:model"]),
         expect=["at index 1", "you predicted 'fwd:head'", "from the inside out", "head is called last"],
         mistake="04.predict_shared_module_calls.head-before-shared"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="events", why="shared called three times",
         source=predicted("predict_shared_module_calls", _SHARED[:5] + _SHARED[3:5] + _SHARED[5:]),
         expect=["at index 5", "you predicted 'pre:shared'", "calls shared exactly twice"],
         mistake="04.predict_shared_module_calls.event-repeated"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="events", why="the model's forward hook twice",
         source=predicted("predict_shared_module_calls", _SHARED + ["fwd:model"]),
         expect=["at index 7", "the log ends before it", "no event fires more often than that"],
         mistake="04.predict_shared_module_calls.event-repeated"),
]
# Each named mistake of the checks made by one entry (the ids a check can give, tests/course/test_mistake_catalogue.py).
ENTRIES += [
    dict(exercise="capture_activations", kind="wrong", clause="pair", why="returns the activations' values as a list",
         source=edited(reference("capture_activations"),
                       ("return activations, handles", "return list(activations.values()), handles")),
         expect=["as activations", "expected a dict from layer name"],
         mistake="04.capture_activations.activations-not-a-dict"),
    dict(exercise="capture_activations", kind="wrong", clause="only-named",
         why="also stores each output under its layer's class name",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "activations[name] = output.detach().clone()\n"
                        "            activations[type(module).__name__] = activations[name]")),
         expect=["also holds", "which were not asked for"],
         mistake="04.capture_activations.extra-entries"),
    dict(exercise="capture_activations", kind="wrong", clause="outputs", why="stores the mean of the output",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "activations[name] = output.detach().clone().mean().item()")),
         expect=["expected the layer's output tensor"],
         mistake="04.capture_activations.not-a-tensor"),
    dict(exercise="capture_activations", kind="wrong", clause="outputs", why="stores the first sample of the batch only",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()", "activations[name] = output[0].detach().clone()")),
         expect=["expected the layer's output"],
         mistake="04.capture_activations.wrong-activation-value"),
    dict(exercise="capture_activations", kind="wrong", clause="return-none",
         why="the hook returns the stored copy scaled, replacing the output",
         source=edited(reference("capture_activations"),
                       ("activations[name] = output.detach().clone()",
                        "activations[name] = output.detach().clone()\n"
                        "            return output * 2")),
         expect=["output changed", "must return none"],
         mistake="04.capture_activations.hook-returned-a-value"),
    dict(exercise="capture_activations", kind="wrong", clause="removal",
         why="a global forward hook besides the layers' hooks, its handle not returned",
         source="import torch\n" + edited(
             reference("capture_activations"),
             ("    return activations, handles",
              "    torch.nn.modules.module.register_module_forward_hook(\n"
              "        lambda module, args, output: activations.update(\n"
              "            {name: output.detach().clone() for name in layer_names if modules[name] is module}))\n"
              "    return activations, handles")),
         expect=["after every handle was removed", "still changed activations"],
         mistake="04.capture_activations.captures-after-removal"),
    dict(exercise="capture_activations", kind="wrong", clause="keyerror", why="skips unknown names silently",
         source=edited(reference("capture_activations"),
                       ('raise KeyError(f"{name!r} is not a submodule name of the model")',
                        "layer_names = [known for known in layer_names if known in modules]")),
         expect=["returned normally", "raise KeyError naming it"],
         mistake="04.capture_activations.unknown-name-accepted"),
    dict(exercise="capture_activations", kind="wrong", clause="handles", why="returns the first handle only, not in a list",
         source=edited(reference("capture_activations"), ("return activations, handles", "return activations, handles[0]")),
         expect=["as its handles", "expected a list of the removablehandles"],
         mistake="04.capture_activations.handles-not-a-list"),
    dict(exercise="track_relu_stats", kind="wrong", clause="return-none",
         why="the hook returns the ReLU's input, as a pre-hook returns its args",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()})',
                        '"zero_fraction": (output == 0).float().mean().item()})\n'
                        "            return args[0]")),
         expect=["output changed", "must return none"],
         mistake="04.track_relu_stats.hook-returned-a-value"),
    dict(exercise="track_relu_stats", kind="wrong", clause="pair", why="returns the lists without their names",
         source=edited(reference("track_relu_stats"), ("return stats, handles", "return list(stats.values()), handles")),
         expect=["as stats", "expected a dict from relu name"],
         mistake="04.track_relu_stats.stats-not-a-dict"),
    dict(exercise="track_relu_stats", kind="wrong", clause="any-depth", why="tracks ReLUs at most one level deep",
         source=edited(reference("track_relu_stats"),
                       ("if isinstance(module, nn.ReLU):", 'if isinstance(module, nn.ReLU) and name.count(".") < 2:')),
         expect=["no entries for the relus"],
         mistake="04.track_relu_stats.relu-skipped"),
    dict(exercise="track_relu_stats", kind="wrong", clause="every-call", why="entries as a growing tuple per ReLU",
         source='''
from torch import nn


def track_relu_stats(model):
    stats, handles = {}, []

    def make_hook(name):
        def hook(module, args, output):
            entry = {"mean": output.mean().item(), "zero_fraction": (output == 0).float().mean().item()}
            stats[name] = stats.get(name, ()) + (entry,)
        return hook

    for name, module in model.named_modules():
        if isinstance(module, nn.ReLU):
            handles.append(module.register_forward_hook(make_hook(name)))
    return stats, handles
''',
         expect=["expected a list with one entry per call"],
         mistake="04.track_relu_stats.entries-not-a-list"),
    dict(exercise="track_relu_stats", kind="wrong", clause="mean", why="the median instead of the mean",
         source=edited(reference("track_relu_stats"), ('"mean": output.mean().item()', '"mean": output.median().item()')),
         expect=["['mean'] is", "the mean of the relu's output over all its elements"],
         mistake="04.track_relu_stats.wrong-mean"),
    dict(exercise="track_relu_stats", kind="wrong", clause="zero-fraction", why="zeros divided by the number of units",
         source=edited(reference("track_relu_stats"),
                       ('"zero_fraction": (output == 0).float().mean().item()',
                        '"zero_fraction": (output == 0).float().sum().item() / output.shape[-1]')),
         expect=["['zero_fraction'] is", "exactly 0"],
         mistake="04.track_relu_stats.wrong-zero-fraction"),
    dict(exercise="track_relu_stats", kind="wrong", clause="removal",
         why="one global forward hook whose handle is not returned",
         source=edited(_GLOBAL_RELU_STATS, ("    return stats, [register_module_forward_hook(hook)]",
                                            "    register_module_forward_hook(hook)\n    return stats, []")),
         expect=["after every handle was removed", "still appended"],
         mistake="04.track_relu_stats.tracks-after-removal"),
    dict(exercise="track_relu_stats", kind="wrong", clause="handles", why="returns the first handle only, not in a list",
         source=edited(reference("track_relu_stats"), ("return stats, handles", "return stats, handles[0]")),
         expect=["as its handles", "expected a list of the removablehandles"],
         mistake="04.track_relu_stats.handles-not-a-list"),
    dict(exercise="track_relu_stats", kind="wrong", clause="handles", why="returns the handles as a generator",
         source=edited(reference("track_relu_stats"),
                       ("return stats, handles", "return stats, (handle for handle in handles)")),
         expect=["generator", "return a list"],
         mistake="04.track_relu_stats.handles-as-generator"),
    dict(exercise="track_relu_stats", kind="wrong", clause="handles", why="returns the hooks instead of their handles",
         source=edited(reference("track_relu_stats"),
                       ("handles.append(module.register_forward_hook(make_hook(stats[name])))",
                        "handles.append(make_hook(stats[name]))\n"
                        "            module.register_forward_hook(handles[-1])")),
         expect=["each must be the removablehandle"],
         mistake="04.track_relu_stats.not-handles"),
    dict(exercise="clamp_output", kind="wrong", clause="forward-hook",
         why="clamps the gradient with a full backward hook instead of the output",
         source=edited(reference("clamp_output"),
                       ("    def hook(module, args, output):\n        return output.clamp(min_value, max_value)\n\n"
                        "    return module.register_forward_hook(hook)",
                        "    def hook(module, grad_input, grad_output):\n"
                        "        return tuple(grad.clamp(min_value, max_value) for grad in grad_input)\n\n"
                        "    return module.register_full_backward_hook(hook)")),
         expect=["has no forward hook", "register_forward_hook"],
         mistake="04.clamp_output.no-forward-hook"),
    dict(exercise="clamp_output", kind="wrong", clause="bounds", why="only the upper bound",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "return output.clamp(max=max_value)")),
         expect=["only the upper bound", "both bounds"],
         mistake="04.clamp_output.upper-bound-only"),
    dict(exercise="clamp_output", kind="wrong", clause="inside-gradient",
         why="a detached correction that doubles the gradient inside the bounds",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)",
                        "return 2 * output.clamp(min_value, max_value) - output.clamp(min_value, max_value).detach()")),
         expect=["the gradient with respect to", "strictly inside the bounds"],
         mistake="04.clamp_output.wrong-gradient"),
    dict(exercise="clamp_output", kind="wrong", clause="handle", why="registers the hook twice and returns one handle",
         source=edited(reference("clamp_output"),
                       ("    return module.register_forward_hook(hook)",
                        "    module.register_forward_hook(hook)\n    return module.register_forward_hook(hook)")),
         expect=["after handle.remove()", "still clamped"],
         mistake="04.clamp_output.clamps-after-removal"),
    dict(exercise="clamp_output", kind="wrong", clause="others-alone",
         why="each hook clamps a fresh forward(*args), not the output it gets, and is prepended",
         source=edited(reference("clamp_output"),
                       ("return output.clamp(min_value, max_value)", "return module.forward(*args).clamp(min_value, max_value)"),
                       ("return module.register_forward_hook(hook)", "return module.register_forward_hook(hook, prepend=True)")),
         expect=["first(x) returned", "the forward hooks of one module chain"],
         mistake="04.clamp_output.hooks-not-chained"),
    dict(exercise="clamp_output", kind="wrong", clause="handle", why="returns a namespace holding the handle's remove",
         source="import types\n" + edited(reference("clamp_output"),
                                          ("return module.register_forward_hook(hook)",
                                           "return types.SimpleNamespace(remove=module.register_forward_hook(hook).remove)")),
         expect=["an object with a remove() method", "itself"],
         mistake="04.clamp_output.not-a-removable-handle"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="order", why="a child's pre-hook before the model's",
         source=predicted("predict_shared_module_calls", ["pre:shared", "pre:model"] + _SHARED[2:]),
         expect=["at index 0", "the model's pre-hook fires before its forward calls any child"],
         mistake="04.predict_shared_module_calls.parent-pre-hook-late"),
]
# The mistakes every prediction exercise names (hooked/checks/event_predictions.py), each made once here.
ENTRIES += [
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="events", why="the events joined into one string",
         source=predicted("predict_shared_module_calls", ", ".join(_SHARED)),
         expect=["returned a string", "not the events joined into one string"],
         mistake="04.predict_shared_module_calls.returned-string"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="order", why="a set of events",
         source="def predict_shared_module_calls():\n    return set(" + repr(_SHARED) + ")\n",
         expect=["returned a set", "a set has no order"],
         mistake="04.predict_shared_module_calls.not-a-list"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="names", why="events as (kind, module) pairs",
         source=predicted("predict_shared_module_calls", [tuple(event.split(":")) for event in _SHARED]),
         expect=["is tuple", "not an event name"],
         mistake="04.predict_shared_module_calls.not-event-names"),
    dict(exercise="predict_shared_module_calls", kind="wrong", clause="events", why="shared's forward hooks left out",
         source=predicted("predict_shared_module_calls", ["pre:model", "pre:shared", "fwd:head", "fwd:model"]),
         expect=["at index 2", "you predicted 'fwd:head'", "'fwd:shared' fires there"],
         mistake="04.predict_shared_module_calls.wrong-order"),
]
