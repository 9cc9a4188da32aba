"""Mistake catalogue for lesson 11, the capstone training monitor. The format of an entry is
described in tests/course/test_mistake_catalogue.py."""

from mistakes import edited


_STATS = """
import torch


def record_activation_stats(model, layer_types):
    stats, handles = {}, []

    def make_hook(name):
        def hook(module, args, output):
            out = output.detach()
            stats.setdefault(name, []).append(
                {"mean": out.mean().item(), "std": out.std().item(), "zero_fraction": (out == 0).float().mean().item()})
        return hook

    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            handles.append(module.register_forward_hook(make_hook(name)))
    return stats, handles
"""

_NORMS = """
def track_grad_norms(model):
    norms, handles = {}, []

    def make_hook(name):
        def hook(grad):
            norms.setdefault(name, []).append(grad.norm().item())
        return hook

    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            handles.append(parameter.register_hook(make_hook(name)))
    return norms, handles
"""

# The grader runs a lesson's exercise cells in one namespace, so TrainingMonitor's cell uses the two
# functions above; a catalogue entry is run alone, so its source holds them too.
_MONITOR_CLASS = """


class TrainingMonitor:
    def __init__(self, model, layer_types):
        self.model, self.layer_types = model, layer_types
        self.activation_stats, self.grad_norms, self.first_nonfinite = {}, {}, None
        self.handles = []

    def see(self, name, value):
        if self.first_nonfinite is None and not torch.isfinite(value).all():
            self.first_nonfinite = name

    def attach(self):
        self.activation_stats, stats_handles = record_activation_stats(self.model, self.layer_types)
        self.grad_norms, norm_handles = track_grad_norms(self.model)
        self.handles += stats_handles + norm_handles
        for name, module in self.model.named_modules():
            self.handles.append(module.register_forward_hook(
                lambda module, args, output, name=name: self.see(name, output.detach())))
        for name, parameter in self.model.named_parameters():
            if parameter.requires_grad:
                self.handles.append(parameter.register_hook(lambda grad, name=name: self.see(name, grad)))
        return self

    def remove(self):
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def __enter__(self):
        return self.attach()

    def __exit__(self, *exception):
        self.remove()
"""
_MONITOR = _STATS + _NORMS + _MONITOR_CLASS

# The generated stubs of the first two exercises, as a learner who skipped them has them.
_STUB_STATS = """
def record_activation_stats(model, layer_types):
    raise NotImplementedError("record_activation_stats is not written yet")
"""
_STUB_NORMS = """
def track_grad_norms(model):
    raise NotImplementedError("track_grad_norms is not written yet")
"""


def _wrong(exercise, base, why, changes, expect):
    return dict(exercise=exercise, kind="wrong", why=why, source=edited(base, *changes), expect=expect)


ENTRIES = [
    # ------------------------------------------------------------------ record_activation_stats
    _wrong("record_activation_stats", _STATS, "stores tensors that keep the graph alive",
           [("out = output.detach()", "out = output"),
            ('out.mean().item(), "std": out.std().item(), "zero_fraction": (out == 0).float().mean().item()',
             'out.mean(), "std": out.std(), "zero_fraction": (out == 0).float().mean()')],
           ["requires grad", "keeps the autograd graph", ".item()"]),
    _wrong("record_activation_stats", _STATS, "keyed by module type",
           [("stats.setdefault(name, [])", "stats.setdefault(type(module).__name__, [])")],
           ["keyed by", "type"]),
    _wrong("record_activation_stats", _STATS, "keyed by the class itself",
           [("stats.setdefault(name, [])", "stats.setdefault(type(module), [])")],
           ["keyed by", "type"]),
    _wrong("record_activation_stats", _STATS, "population standard deviation",
           [("out.std().item()", "out.std(correction=0).item()")],
           ["population standard deviation", "correction=1"]),
    _wrong("record_activation_stats", _STATS, "numpy's std",
           [("out.std().item()", "float(out.numpy().std())")],
           ["population standard deviation"]),
    _wrong("record_activation_stats", _STATS, "a shared module hooked under both names",
           [("model.named_modules()", "model.named_modules(remove_duplicate=False)")],
           ["second name", "remove_duplicate=false"]),
    dict(exercise="record_activation_stats", kind="wrong", why="the name read from the loop variable when the hook runs",
         source='''
def record_activation_stats(model, layer_types):
    stats, handles = {}, []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            handles.append(module.register_forward_hook(lambda module, args, output: stats.setdefault(name, []).append(
                {"mean": output.mean().item(), "std": output.std().item(),
                 "zero_fraction": (output == 0).float().mean().item()})))
    return stats, handles
''', expect=["nothing was recorded", "loop variable"]),
    _wrong("record_activation_stats", _STATS, "fraction of non-zeros",
           [("(out == 0)", "(out != 0)")],
           ["non-zero"]),
    _wrong("record_activation_stats", _STATS, "the number of zeros, not a fraction",
           [("(out == 0).float().mean().item()", "(out == 0).sum().item()")],
           ["number of zeros"]),
    _wrong("record_activation_stats", _STATS, "replaces the list on every call",
           [("stats.setdefault(name, []).append(\n                ", "stats[name] = [\n                "),
            ('(out == 0).float().mean().item()})', '(out == 0).float().mean().item()}]')],
           ["append one entry per call"]),
    _wrong("record_activation_stats", _STATS, "the hook returns the detached output",
           [("        return hook\n", "        return lambda module, args, output: hook(module, args, output) "
                                      "or output.detach()\n")],
           ["replaces the output", "return none"]),
    _wrong("record_activation_stats", _STATS, "handles not returned",
           [("            handles.append(module.register_forward_hook(make_hook(name)))",
             "            module.register_forward_hook(make_hook(name))")],
           ["hooks were still registered"]),
    _wrong("record_activation_stats", _STATS, "stats of the module's input",
           [("out = output.detach()", "out = args[0].detach()")],
           ["mean of the module's input", "record its output"]),
    _wrong("record_activation_stats", _STATS, "named_children misses the nested modules",
           [("model.named_modules()", "model.named_children()")],
           ["nested modules", "named_modules()"]),
    _wrong("record_activation_stats", _STATS, "type(module) in layer_types misses a subclass",
           [("isinstance(module, layer_types)", "type(module) in layer_types")],
           ["subclass", "isinstance(module, layer_types)"]),
    _wrong("record_activation_stats", _STATS, "the hook turns grad mode off for good",
           [("out = output.detach()", "torch.set_grad_enabled(False)\n            out = output")],
           ["global grad mode", "torch.no_grad()"]),
    dict(exercise="record_activation_stats", kind="right", why="defaultdict, default-argument binding, std_mean",
         source='''
import collections

import torch


def record_activation_stats(model, layer_types):
    stats = collections.defaultdict(list)
    handles = []
    for name, module in model.named_modules():
        if not isinstance(module, tuple(layer_types)):
            continue

        def hook(module, args, output, key=name):
            with torch.no_grad():
                std, mean = torch.std_mean(output)
                stats[key].append(dict(mean=float(mean), std=float(std),
                                       zero_fraction=float(output.eq(0).sum()) / output.numel()))

        handles.append(module.register_forward_hook(hook))
    return stats, handles
''', expect=[]),
    dict(exercise="record_activation_stats", kind="right", why="0-dim detached tensors, every name listed up front",
         source='''
import functools


def _record(stats, name, module, args, output):
    output = output.detach()
    stats[name].append({"mean": output.mean(), "std": output.std(correction=1),
                        "zero_fraction": 1 - output.count_nonzero() / output.numel()})


def record_activation_stats(model, layer_types):
    chosen = [(name, module) for name, module in model.named_modules() if isinstance(module, layer_types)]
    stats = {name: [] for name, module in chosen}
    handles = [module.register_forward_hook(functools.partial(_record, stats, name)) for name, module in chosen]
    return stats, handles
''', expect=[]),

    # ------------------------------------------------------------------ track_grad_norms
    _wrong("track_grad_norms", _NORMS, "post-accumulate-grad hook reads the accumulated .grad",
           [("        def hook(grad):\n            norms.setdefault(name, []).append(grad.norm().item())",
             "        def hook(parameter):\n            norms.setdefault(name, []).append(parameter.grad.norm().item())"),
            ("parameter.register_hook(", "parameter.register_post_accumulate_grad_hook(")],
           ["post-accumulate-grad hook", "running sum", "register_hook"]),
    _wrong("track_grad_norms", _NORMS, "squared norm",
           [("grad.norm().item()", "grad.pow(2).sum().item()")],
           ["squared norm"]),
    _wrong("track_grad_norms", _NORMS, "L1 norm",
           [("grad.norm().item()", "grad.abs().sum().item()")],
           ["l2 norm"]),
    _wrong("track_grad_norms", _NORMS, "a tied weight hooked under both names",
           [("model.named_parameters()", "model.named_parameters(remove_duplicate=False)")],
           ["second name", "remove_duplicate=false"]),
    _wrong("track_grad_norms", _NORMS, "the name read from the loop variable when the hook runs",
           [("    def make_hook(name):\n        def hook(grad):\n",
             "    def make_hook(unused):\n        def hook(grad):\n")],
           ["nothing was recorded", "loop variable"]),
    _wrong("track_grad_norms", _NORMS, "replaces the list on every backward",
           [("norms.setdefault(name, []).append(grad.norm().item())", "norms[name] = [grad.norm().item()]")],
           ["append one entry per backward pass"]),
    _wrong("track_grad_norms", _NORMS, "hooks every parameter, frozen ones included",
           [("        if parameter.requires_grad:\n            handles", "        handles")],
           ["cannot register a hook on a tensor that doesn't require gradient"]),
    _wrong("track_grad_norms", _NORMS, "the hook returns a normalized gradient",
           [("            norms.setdefault(name, []).append(grad.norm().item())",
             "            norms.setdefault(name, []).append(grad.norm().item())\n            return grad / grad.norm()")],
           ["the hooks must only look", "return none"]),
    _wrong("track_grad_norms", _NORMS, "handles not returned",
           [("            handles.append(parameter.register_hook(make_hook(name)))",
             "            parameter.register_hook(make_hook(name))")],
           ["hooks were still registered"]),
    dict(exercise="track_grad_norms", kind="wrong", why="reads .grad inside the tensor hook",
         source='''
def track_grad_norms(model):
    norms, handles = {}, []
    for name, p in model.named_parameters():
        if p.requires_grad:
            def hook(grad, name=name, p=p):
                norms.setdefault(name, []).append(0.0 if p.grad is None else p.grad.norm().item())
            handles.append(p.register_hook(hook))
    return norms, handles
''', expect=["before .grad is updated", "the gradient the hook receives"]),
    _wrong("track_grad_norms", _NORMS, "the hook doubles the gradient in place",
           [("norms.setdefault(name, []).append(grad.norm().item())",
             "norms.setdefault(name, []).append(grad.norm().item())\n            grad.mul_(2)")],
           ["without your hooks", "in place"]),
    dict(exercise="track_grad_norms", kind="wrong", why="post-accumulate hook that empties .grad",
         source='''
def track_grad_norms(model):
    norms, handles = {}, []
    for name, p in model.named_parameters():
        if p.requires_grad:
            def hook(p, name=name):
                norms.setdefault(name, []).append(p.grad.norm().item())
                p.grad = None
            handles.append(p.register_post_accumulate_grad_hook(hook))
    return norms, handles
''', expect=[".grad is none", "nor .grad"]),
    dict(exercise="track_grad_norms", kind="wrong", why="registers nothing",
         source='''
def track_grad_norms(model):
    norms, handles = {}, []
    return norms, handles
''', expect=["nothing was recorded at all"]),
    dict(exercise="track_grad_norms", kind="right", why="0-dim tensors, linalg.vector_norm, default-argument binding",
         source='''
import torch


def track_grad_norms(model):
    norms = {name: [] for name, p in model.named_parameters() if p.requires_grad}
    handles = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            handles.append(p.register_hook(lambda g, name=name: norms[name].append(torch.linalg.vector_norm(g))))
    return norms, handles
''', expect=[]),
    dict(exercise="track_grad_norms", kind="right", why="a hook that returns the gradient unchanged, sqrt of squares",
         source='''
import collections
import math


def track_grad_norms(model):
    norms, handles = collections.defaultdict(list), []

    def make_hook(name):
        def hook(grad):
            norms[name].append(math.sqrt(grad.pow(2).sum().item()))
            return grad
        return hook

    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            handles.append(parameter.register_hook(make_hook(name)))
    return norms, handles
''', expect=[]),

    # ------------------------------------------------------------------ TrainingMonitor
    _wrong("TrainingMonitor", _MONITOR, "remove() forgets the handles of the two functions",
           [("self.handles += stats_handles + norm_handles", "pass")],
           ["hooks were still registered", "your two functions"]),
    _wrong("TrainingMonitor", _MONITOR, "first_nonfinite overwritten by later modules",
           [("if self.first_nonfinite is None and not torch.isfinite(value).all():",
             "if not torch.isfinite(value).all():")],
           ["keep the first name"]),
    _wrong("TrainingMonitor", _MONITOR, "watches for NaN only",
           [("not torch.isfinite(value).all()", "torch.isnan(value).any()")],
           ["torch.isfinite"]),
    _wrong("TrainingMonitor", _MONITOR, "no watch on the gradients",
           [("                self.handles.append(parameter.register_hook(lambda grad, name=name: self.see(name, grad)))",
             "                pass")],
           ["gradients of the parameters"]),
    _wrong("TrainingMonitor", _MONITOR, "__exit__ swallows the exception",
           [("    def __exit__(self, *exception):\n        self.remove()",
             "    def __exit__(self, *exception):\n        self.remove()\n        return True")],
           ["swallowed", "return none"]),
    _wrong("TrainingMonitor", _MONITOR, "attach() does not return the monitor",
           [("                self.handles.append(parameter.register_hook(lambda grad, name=name: self.see(name, grad)))\n"
             "        return self",
             "                self.handles.append(parameter.register_hook(lambda grad, name=name: self.see(name, grad)))")],
           ["return self"]),
    _wrong("TrainingMonitor", _MONITOR, "hooks registered in the constructor",
           [("        self.handles = []\n\n    def see", "        self.handles = []\n        self.attach()\n\n    def see")],
           ["constructor registers nothing"]),
    _wrong("TrainingMonitor", _MONITOR, "__enter__ returns None",
           [("        return self.attach()", "        self.attach()")],
           ["__enter__ must return the monitor"]),
    _wrong("TrainingMonitor", _MONITOR, "remove() throws the data away",
           [("        self.handles = []\n\n    def __enter__",
             "        self.handles = []\n        self.activation_stats, self.grad_norms = {}, {}\n\n    def __enter__")],
           ["the recorded data must stay"]),
    _wrong("TrainingMonitor", _MONITOR, "__exit__ does not remove the hooks",
           [("    def __exit__(self, *exception):\n        self.remove()",
             "    def __exit__(self, *exception):\n        pass")],
           ["after the with block, hooks were still registered", "__exit__ must remove them"]),
    _wrong("TrainingMonitor", _MONITOR, "watches the layers only, not the model itself",
           [("        for name, module in self.model.named_modules():\n            self.handles",
             "        for name, module in list(self.model.named_modules())[1:]:\n            self.handles")],
           ["expected ''", "the model included"]),
    dict(exercise="TrainingMonitor", kind="wrong", why="record_activation_stats still the stub",
         source=_STUB_STATS + _NORMS + _MONITOR_CLASS,
         expect=["record_activation_stats, from exercise 1", "not written yet", "finish exercise 1 first"]),
    dict(exercise="TrainingMonitor", kind="wrong", why="track_grad_norms still the stub",
         source=_STATS + _STUB_NORMS + _MONITOR_CLASS,
         expect=["track_grad_norms, from exercise 2", "not written yet", "finish exercise 2 first"]),
    dict(exercise="TrainingMonitor", kind="wrong", why="record_activation_stats keyed by type",
         source=edited(_STATS, ("stats.setdefault(name, [])", "stats.setdefault(type(module).__name__, [])"))
         + _NORMS + _MONITOR_CLASS,
         expect=["exercise 1", "does not pass its own check", "finish exercise 1 first", "keyed by"]),
    dict(exercise="TrainingMonitor", kind="wrong", why="track_grad_norms records the squared norm",
         source=_STATS + edited(_NORMS, ("grad.norm().item()", "grad.pow(2).sum().item()")) + _MONITOR_CLASS,
         expect=["exercise 2", "does not pass its own check", "finish exercise 2 first", "squared norm"]),
    dict(exercise="TrainingMonitor", kind="wrong", why="record_activation_stats not defined (its cell not run)",
         source=_NORMS + _MONITOR_CLASS,
         expect=["record_activation_stats, from exercise 1", "not defined", "run its exercise cell"]),
    _wrong("TrainingMonitor", _MONITOR, "watches only the model's own output",
           [("for name, module in self.model.named_modules():", "for name, module in [('', self.model)]:")],
           ["'' saw a non-finite value too, but after", "every module"]),
    _wrong("TrainingMonitor", _MONITOR, "watches inputs with forward pre-hooks",
           [("self.handles.append(module.register_forward_hook(\n"
             "                lambda module, args, output, name=name: self.see(name, output.detach())))",
             "self.handles.append(module.register_forward_pre_hook(\n"
             "                lambda module, args, name=name: self.see(name, args[0].detach())))")],
           ["saw a non-finite value too, but after", "not a pre-hook"]),
    _wrong("TrainingMonitor", _MONITOR, "watches gradients for NaN only",
           [("lambda grad, name=name: self.see(name, grad)",
             "lambda grad, name=name: self.see(name, grad) if torch.isnan(grad).any() else None")],
           ["saw a non-finite value too, but after", "inf as well as nan"]),
    _wrong("TrainingMonitor", _MONITOR, "names the module by its class",
           [("lambda module, args, output, name=name: self.see(name, output.detach())",
             "lambda module, args, output, name=name: self.see(type(module).__name__, output.detach())")],
           ["neither a named_modules() nor a named_parameters() name"]),
    _wrong("TrainingMonitor", _MONITOR, "remove() clears first_nonfinite",
           [("        self.handles = []\n\n    def __enter__",
             "        self.handles = []\n        self.first_nonfinite = None\n\n    def __enter__")],
           ["inside the with block", "must keep what was recorded"]),
    _wrong("TrainingMonitor", _MONITOR, "keeps a copy of the stats dict made in attach()",
           [("self.activation_stats, stats_handles = record_activation_stats(self.model, self.layer_types)",
             "stats, stats_handles = record_activation_stats(self.model, self.layer_types)\n"
             "        self.activation_stats = dict(stats)")],
           ["holds no record", "not a copy"]),
    _wrong("TrainingMonitor", _MONITOR, "watches frozen parameters too",
           [("            if parameter.requires_grad:\n                self.handles.append(parameter.register_hook(",
             "            if True:\n                self.handles.append(parameter.register_hook(")],
           ["cannot register a hook on a tensor that doesn't require gradient"]),
    dict(exercise="TrainingMonitor", kind="right", why="records on its own while the first two exercises are stubs",
         source=_STUB_STATS + _STUB_NORMS + '''
import torch


class TrainingMonitor:
    def __init__(self, model, layer_types):
        self.model, self.layer_types = model, layer_types
        self.activation_stats, self.grad_norms, self.first_nonfinite = {}, {}, None
        self.handles = []

    def _output(self, name, module, args, output):
        output = output.detach()
        if isinstance(module, self.layer_types):
            self.activation_stats.setdefault(name, []).append({
                "mean": output.mean().item(), "std": output.std().item(),
                "zero_fraction": (output == 0).float().mean().item()})
        self._see(name, output)

    def _gradient(self, name, grad):
        self.grad_norms.setdefault(name, []).append(grad.norm().item())
        self._see(name, grad)

    def _see(self, name, value):
        if self.first_nonfinite is None and not torch.isfinite(value).all():
            self.first_nonfinite = name

    def attach(self):
        for name, module in self.model.named_modules():
            self.handles.append(module.register_forward_hook(
                lambda module, args, output, name=name: self._output(name, module, args, output)))
        for name, parameter in self.model.named_parameters():
            if parameter.requires_grad:
                self.handles.append(parameter.register_hook(lambda grad, name=name: self._gradient(name, grad)))
        return self

    def remove(self):
        while self.handles:
            self.handles.pop().remove()

    def __enter__(self):
        return self.attach()

    def __exit__(self, *exception):
        self.remove()
''', expect=[]),
    dict(exercise="TrainingMonitor", kind="right", why="the gradient watch by post-accumulate-grad hooks",
         source=edited(_MONITOR, ("register_hook(lambda grad, name=name: self.see(name, grad))",
                                 "register_post_accumulate_grad_hook(lambda p, name=name: self.see(name, p.grad))")),
         expect=[]),
    dict(exercise="TrainingMonitor", kind="right", why="isnan or isinf, ExitStack, __exit__ returns False",
         source=_STATS + _NORMS + '''
import contextlib

import torch


class TrainingMonitor:
    def __init__(self, model, layer_types):
        self.model = model
        self.layer_types = layer_types
        self.activation_stats = {}
        self.grad_norms = {}
        self.first_nonfinite = None
        self._stack = contextlib.ExitStack()

    def _check(self, name, value):
        bad = bool(torch.isnan(value).any() or torch.isinf(value).any())
        if bad and self.first_nonfinite is None:
            self.first_nonfinite = name

    def attach(self):
        self.activation_stats, handles = record_activation_stats(self.model, self.layer_types)
        for handle in handles:
            self._stack.enter_context(handle)
        self.grad_norms, handles = track_grad_norms(self.model)
        for handle in handles:
            self._stack.enter_context(handle)
        for name, module in self.model.named_modules():
            hook = lambda module, args, output, name=name: self._check(name, output.detach())
            self._stack.enter_context(module.register_forward_hook(hook))
        for name, parameter in self.model.named_parameters():
            if parameter.requires_grad:
                self._stack.enter_context(parameter.register_hook(lambda grad, name=name: self._check(name, grad)))
        return self

    def remove(self):
        self._stack.close()

    def __enter__(self):
        return self.attach()

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
        return False
''', expect=[]),
    dict(exercise="TrainingMonitor", kind="right", why="functools.partial hooks, one list per kind of hook",
         source=_STATS + _NORMS + '''
import functools
import math

import torch


class TrainingMonitor:
    def __init__(self, model, layer_types):
        self.model, self.layer_types = model, layer_types
        self.activation_stats, self.grad_norms = {}, {}
        self.first_nonfinite = None
        self.watch_handles, self.record_handles = [], []

    def _note(self, name, value):
        if self.first_nonfinite is None and not math.isfinite(value.detach().abs().max().item()):
            self.first_nonfinite = name

    def _output(self, name, module, args, output):
        self._note(name, output)

    def attach(self):
        stats, a = record_activation_stats(self.model, self.layer_types)
        norms, b = track_grad_norms(self.model)
        self.activation_stats, self.grad_norms = stats, norms
        self.record_handles = a + b
        self.watch_handles = [m.register_forward_hook(functools.partial(self._output, n))
                              for n, m in self.model.named_modules()]
        self.watch_handles += [p.register_hook(functools.partial(self._note, n))
                               for n, p in self.model.named_parameters() if p.requires_grad]
        return self

    def remove(self):
        for handle in self.watch_handles + self.record_handles:
            handle.remove()

    def __enter__(self):
        self.attach()
        return self

    def __exit__(self, *args):
        self.remove()
''', expect=[]),
]
