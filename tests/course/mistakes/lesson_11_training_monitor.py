"""Mistake catalogue for lesson 11, the capstone training monitor. The format of an entry is
described in tests/course/test_mistake_catalogue.py; CLAUSES and NOT_CLAUSES in
tests/course/test_contract_clauses.py."""

from mistakes import edited, reference


CLAUSES = {
    "record_activation_stats": {
        "every-module": "Forward hooks on every module of `model`",
        "isinstance": "that is an instance of `layer_types`",
        "once-per-object": "one per module object (as `model.named_modules()` lists them)",
        "returns-pair": "Returns (stats, handles).",
        "keyed-by-name": "stats[name] (name from named_modules())",
        "entry-per-call": "is a list with one entry per call of the module",
        "call-order": "in the order of the calls",
        "keys": '{"mean": m, "std": s, "zero_fraction": z}',
        "of-output": "for the module's output",
        "all-elements": "over all its elements",
        "mean": "its mean",
        "unbiased-std": "its std as `output.std()` computes it (unbiased, correction=1)",
        "zero-fraction": "the fraction of its elements exactly equal to 0",
        "numbers": "The values are Python floats or 0-dim tensors that do not require grad.",
        "tuple-first": "An output that is a tuple or list is described by its first item",
        "first-of-first": "a first item that is a tuple or list by its own first item, and so on",
        "no-entry": "a call whose output leads so to no tensor (a dict, None, an empty list) adds no entry",
        "handles": "handles: the RemovableHandles; removing them all removes every hook.",
        "outputs-unchanged": "The hooks change neither the outputs",
        "grad-mode": "nor torch's grad mode",
        "under-no-grad": "they record under torch.no_grad()",
        "eval-mode": "and in eval mode too",
    },
    "track_grad_norms": {
        "every-parameter": "Tensor hooks on every parameter of `model` that requires grad",
        "tied-once": "a parameter held under two names (tied weights) once, under its first name",
        "returns-pair": "Returns (norms, handles).",
        "keyed-by-name": "norms[name]",
        "entry-per-pass": "is a list with one entry per backward pass that computes a gradient for the parameter",
        "pass-order": "in the order of the passes",
        "l2": "the L2 norm",
        "this-pass": "of the gradient that pass computed (the sum over every use of the parameter, not the "
                     "accumulated .grad)",
        "nonfinite-norm": "inf or NaN when that gradient holds inf or NaN",
        "numbers": "The values are Python floats or 0-dim tensors that do not require grad",
        "create-graph": "also under backward(create_graph=True)",
        "no-gradient": "A backward pass that computes no gradient for a parameter adds no entry for it",
        "frozen": "a parameter that does not require grad gets no hook",
        "handles": "handles: the RemovableHandles; removing them all removes every hook.",
        "gradients-unchanged": "The hooks change neither the gradients nor .grad",
        "requires-grad": "nor any parameter's requires_grad",
    },
    "TrainingMonitor": {
        "init-nothing": "TrainingMonitor(model, layer_types) registers nothing.",
        "init-state": "activation_stats and grad_norms are empty dicts, first_nonfinite is None",
        "attach-returns": "return the monitor",
        "stats": "attach() registers record_activation_stats(model, layer_types), whose stats dict becomes "
                 "monitor.activation_stats",
        "norms": "track_grad_norms(model), whose norms dict becomes monitor.grad_norms",
        "watch-modules": "a forward hook on every module of model.named_modules()",
        "watch-root": 'the model itself included (its name is "")',
        "watch-params": "a tensor hook on every parameter that requires grad",
        "only-look-outputs": "they change neither the model's outputs",
        "only-look-gradients": "nor its gradients",
        "nonfinite": "monitor.first_nonfinite is None until a watched value contains NaN, inf or -inf",
        "names": "the name of that module (its named_modules() name) or parameter (its named_parameters() name)",
        "first": "the first in the order the hooks fire, and it never changes after",
        "structured": "A module's output counts when it is a tensor with such an element, or a tuple, list or dict "
                      "holding such a tensor at any depth",
        "other-finite": "any other output counts as finite",
        "remove-all": "remove() removes every hook the monitor registered",
        "remove-all-attaches": "(by every attach() call)",
        "remove-only-own": "and no other",
        "remove-keeps-later": "the caller's, registered before or while it was attached, stay",
        "remove-twice": "safe to call twice",
        "as-before": "the model then behaves as before (requires_grad included)",
        "data-stays": "the recorded data stays",
        "with-enter": "attaches on entry and binds the monitor",
        "with-exit": "removes the hooks on exit",
        "with-raises": "also when the block raises",
        "propagates": "the exception goes on",
    },
}

NOT_CLAUSES = {
    "TrainingMonitor": {
        "Activation stats, gradient norms and the first non-finite value of a training run.":
            "the class's title: what it records, which the clauses below state one by one",
        "Keep the model and layer types;": "keeping its arguments is how attach() can use them; nothing to observe "
                                           "by itself",
        "no hooks yet.": "restates 'registers nothing' (clause init-nothing)",
        "Register the stats, the gradient norms and the non-finite watch;": "restates the class docstring's attach() "
                                                                            "sentence (clauses stats, norms, watch-*)",
        "Remove every hook the monitor registered;": "restates clause remove-all",
        "Attach, and return the monitor.": "restates clauses with-enter and attach-returns",
        "Remove every hook, also when the block raises;": "restates clauses with-exit and with-raises",
    },
}


# The grader runs a lesson's exercise cells in one namespace, so TrainingMonitor's cell uses the two
# functions before it; a catalogue entry is run alone, so its source holds them too.
_FIRST_TWO = reference("record_activation_stats") + reference("track_grad_norms")

# The generated stubs of the first two exercises, as a learner who skipped them has them.
_STUB_STATS = """
def record_activation_stats(model, layer_types):
    raise NotImplementedError("record_activation_stats is not written yet")
"""
_STUB_NORMS = """
def track_grad_norms(model):
    raise NotImplementedError("track_grad_norms is not written yet")
"""


# A monitor of a learner's own that records without the first two exercises (left as stubs): its check
# judges its records itself, so a mistake in them is named as in the first two exercises.
_OWN_MONITOR = _STUB_STATS + _STUB_NORMS + '''
import torch


class TrainingMonitor:
    def __init__(self, model, layer_types):
        self.model, self.layer_types = model, layer_types
        self.activation_stats, self.grad_norms, self.first_nonfinite = {}, {}, None
        self.handles = []

    def _output(self, name, module, args, output):
        first = output
        while isinstance(first, (tuple, list)) and first:
            first = first[0]
        if isinstance(module, self.layer_types) and isinstance(first, torch.Tensor):
            first = first.detach()
            self.activation_stats.setdefault(name, []).append({
                "mean": first.mean().item(), "std": first.std().item(),
                "zero_fraction": (first == 0).float().mean().item()})
        self._see(name, output)

    def _gradient(self, name, grad):
        self.grad_norms.setdefault(name, []).append(grad.norm().item())
        self._see(name, grad)

    def _see(self, name, value):
        if self.first_nonfinite is not None:
            return
        if isinstance(value, torch.Tensor):
            if not torch.isfinite(value).all():
                self.first_nonfinite = name
        elif isinstance(value, dict):
            self._see(name, list(value.values()))
        elif isinstance(value, (tuple, list)):
            for item in value:
                self._see(name, item)

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
'''

def _wrong(exercise, why, changes, expect, clause, mistake, before=""):
    """A wrong entry: the reference solution of `exercise` with `changes`, after the code `before`; `mistake`,
    the id of the named mistake its check must recognize."""
    return dict(exercise=exercise, kind="wrong", why=why, source=before + edited(reference(exercise), *changes),
                expect=expect, clause=clause, mistake=mistake)


def _stats(why, changes, expect, clause, mistake):
    return _wrong("record_activation_stats", why, changes, expect, clause, mistake)


def _norms(why, changes, expect, clause, mistake):
    return _wrong("track_grad_norms", why, changes, expect, clause, mistake)


def _monitor(why, changes, expect, clause, mistake):
    return _wrong("TrainingMonitor", why, changes, expect, clause, mistake, before=_FIRST_TWO)


ENTRIES = [
    # ------------------------------------------------------------------ record_activation_stats
    _stats("stores tensors that keep the graph alive",
           [("            output = output.detach()\n", ""),
            ('"mean": output.mean().item(),', '"mean": output.mean(),'),
            ('"std": output.std().item(),', '"std": output.std(),'),
            ('"zero_fraction": (output == 0).float().mean().item(),',
             '"zero_fraction": (output == 0).float().mean(),')],
           ["requires grad", "keeps the autograd graph", ".item()"], "numbers",
           mistake="11.record_activation_stats.value-requires-grad"),
    _stats("keyed by module type", [("stats.setdefault(name, [])", "stats.setdefault(type(module).__name__, [])")],
           ["keyed by", "type"], "keyed-by-name", mistake="11.record_activation_stats.keyed-by-type"),
    _stats("keyed by the class itself", [("stats.setdefault(name, [])", "stats.setdefault(type(module), [])")],
           ["keyed by", "type"], "keyed-by-name", mistake="11.record_activation_stats.keyed-by-type"),
    _stats("population standard deviation", [("output.std().item()", "output.std(correction=0).item()")],
           ["population standard deviation", "correction=1"], "unbiased-std",
           mistake="11.record_activation_stats.population-std"),
    _stats("numpy's std", [("output.std().item()", "float(output.numpy().std())")],
           ["population standard deviation"], "unbiased-std", mistake="11.record_activation_stats.population-std"),
    _stats("a shared module hooked under both names",
           [("for name, module in model.named_modules():",
             "for name, module in model.named_modules(remove_duplicate=False):")],
           ["second name", "remove_duplicate=false"], "once-per-object",
           mistake="11.record_activation_stats.second-name-recorded"),
    dict(exercise="record_activation_stats", kind="wrong", why="the name read from the loop variable when the hook runs",
         clause="keyed-by-name", source='''
import torch


def record_activation_stats(model, layer_types):
    stats, handles = {}, []

    def hook(module, args, output):
        if isinstance(output, (tuple, list)) and output:
            output = output[0]
        if isinstance(output, torch.Tensor):
            stats.setdefault(name, []).append({"mean": output.mean().item(), "std": output.std().item(),
                                               "zero_fraction": (output == 0).float().mean().item()})

    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''', expect=["nothing was recorded", "loop variable"], mistake="11.record_activation_stats.name-from-loop-variable"),
    _stats("fraction of non-zeros", [("(output == 0)", "(output != 0)")], ["non-zero"], "zero-fraction",
           mistake="11.record_activation_stats.nonzero-fraction"),
    _stats("the number of zeros, not a fraction", [("(output == 0).float().mean().item()",
                                                    "(output == 0).sum().item()")],
           ["number of zeros"], "zero-fraction", mistake="11.record_activation_stats.zero-count"),
    _stats("zeros counted as out <= 0, negatives included", [("(output == 0)", "(output <= 0)")],
           ["exactly 0", "negative"], "zero-fraction", mistake="11.record_activation_stats.counts-negatives"),
    _stats("zeros counted as |x| < 1e-3", [("(output == 0)", "(output.abs() < 1e-3)")],
           ["near 0", "exactly equal to 0"], "zero-fraction", mistake="11.record_activation_stats.counts-near-zero"),
    _stats("records only in training mode",
           [("            output = output.detach()",
             "            if not module.training:\n"
             "                return\n"
             "            output = output.detach()")],
           ["recorded nothing in eval mode", "every call of the module adds an entry"], "eval-mode",
           mistake="11.record_activation_stats.skips-eval-mode"),
    _stats("the variance instead of the standard deviation", [("output.std().item()", "output.var().item()")],
           ["['std'] is", "output.std()"], "unbiased-std", mistake="11.record_activation_stats.variance-not-std"),
    _stats("replaces the list on every call",
           [("stats.setdefault(name, []).append({", "stats[name] = [{"),
            ("            })\n", "            }]\n")],
           ["append one entry per call"], "entry-per-call", mistake="11.record_activation_stats.list-replaced"),
    _stats("the newest entry first",
           [("stats.setdefault(name, []).append({", "stats.setdefault(name, []).insert(0, {")],
           ["reverse order", "in the order of the calls"], "call-order",
           mistake="11.record_activation_stats.reverse-order"),
    _stats("the hook returns the detached output",
           [("        return hook\n",
             "        return lambda module, args, output: hook(module, args, output) or (output.detach() if isinstance(output, torch.Tensor) else output)\n")],
           ["replaces the output", "return none"], "outputs-unchanged",
           mistake="11.record_activation_stats.output-replaced"),
    _stats("handles not returned",
           [("            handles.append(module.register_forward_hook(make_hook(name)))",
             "            module.register_forward_hook(make_hook(name))")],
           ["hooks were still registered"], "handles", mistake="11.record_activation_stats.handle-not-returned"),
    _stats("the hook functions returned as the handles",
           [("            handles.append(module.register_forward_hook(make_hook(name)))",
             "            hook = make_hook(name)\n"
             "            module.register_forward_hook(hook)\n"
             "            handles.append(hook)")],
           ["each must be a removablehandle"], "handles", mistake="11.record_activation_stats.not-handles"),
    _stats("returns (handles, stats)", [("    return stats, handles", "    return handles, stats")],
           ["in that order", "(stats, handles)"], "returns-pair", mistake="11.record_activation_stats.pair-swapped"),
    _stats("stats of the module's input", [("output = output.detach()", "output = args[0].detach()")],
           ["mean of the module's input", "record its output"], "of-output",
           mistake="11.record_activation_stats.stats-of-input"),
    _stats("the stats of the first sample only", [("output = output.detach()", "output = output.detach()[0]")],
           ["over all its elements"], "all-elements", mistake="11.record_activation_stats.wrong-mean"),
    _stats("the mean of the absolute values", [('"mean": output.mean().item()',
                                                '"mean": output.abs().mean().item()')],
           ["['mean'] is", "has mean"], "mean", mistake="11.record_activation_stats.wrong-mean"),
    _stats("zero_fraction under another key", [('"zero_fraction": (output', '"zeros": (output')],
           ["lacks ['zero_fraction']"], "keys", mistake="11.record_activation_stats.entry-keys-missing"),
    _stats("named_children misses the nested modules", [("for name, module in model.named_modules():",
                                                         "for name, module in model.named_children():")],
           ["nested modules", "named_modules()"], "every-module",
           mistake="11.record_activation_stats.nested-modules-skipped"),
    _stats("type(module) in layer_types misses a subclass",
           [("isinstance(module, tuple(layer_types))", "type(module) in layer_types")],
           ["subclass", "isinstance(module, layer_types)"], "isinstance",
           mistake="11.record_activation_stats.exact-type-compared"),
    _stats("the hook turns grad mode off for good",
           [("output = output.detach()", "torch.set_grad_enabled(False)\n            output = output")],
           ["global grad mode", "torch.no_grad()"], "grad-mode",
           mistake="11.record_activation_stats.grad-mode-changed"),
    _stats("records only while grad mode is on",
           [("            output = output.detach()",
             "            if not torch.is_grad_enabled():\n"
             "                return\n"
             "            output = output.detach()")],
           ["recorded nothing under torch.no_grad()"], "under-no-grad",
           mistake="11.record_activation_stats.skips-no-grad"),
    _stats("assumes every output is a tensor (nn.LSTM returns a tuple)", [("\n"
                                                                           "            while isinstance(output, (tuple, list)) and output:\n"
                                                                           "                output = output[0]\n"
                                                                           "            if not isinstance(output, torch.Tensor):\n"
                                                                           "                return",
                                                                           "")],
           ["'tuple' object has no attribute 'detach'", "nn.lstm", "described by its first item"], "tuple-first",
           mistake="11.record_activation_stats.structured-output-raised"),
    _stats("takes the first item of a tuple, not of a list",
           [("while isinstance(output, (tuple, list)) and output:", "while isinstance(output, tuple) and output:")],
           ["returns a list", "a list as well as a tuple"], "tuple-first",
           mistake="11.record_activation_stats.tuple-output-skipped"),
    _stats("skips lists instead of describing their first item",
           [("while isinstance(output, (tuple, list)) and output:", "while isinstance(output, tuple):")],
           ["nothing was recorded for ['pair']", "returns a list", "described by its first item"], "tuple-first",
           mistake="11.record_activation_stats.tuple-output-skipped"),
    _stats("describes every tensor of a tuple together",
           [("while isinstance(output, (tuple, list)) and output:\n"
             "                output = output[0]",
             "if isinstance(output, (tuple, list)):\n"
             "                output = torch.cat([t.flatten() for t in output if isinstance(t, torch.Tensor)]\n"
             "                                   + [t.flatten() for item in output if isinstance(item, tuple)\n"
             "                                      for t in item])")],
           ["returned a tuple", "first item", "only that item"], "tuple-first",
           mistake="11.record_activation_stats.wrong-mean"),
    _stats("a dict output reaches output.detach()",
           [("            if not isinstance(output, torch.Tensor):\n                return\n", "")],
           ["'dict' object has no attribute 'detach'", "returns a dict", "adds no entry"], "no-entry",
           mistake="11.record_activation_stats.structured-output-raised"),
    _stats("a dict described by its first value",
           [("            if not isinstance(output, torch.Tensor):\n"
             "                return\n",
             "            if isinstance(output, dict) and output:\n"
             "                output = next(iter(output.values()))\n"
             "            if not isinstance(output, torch.Tensor):\n"
             "                return\n")],
           ["records under ['table']", "should not be recorded", "returned a dict", "adds no entry"], "no-entry",
           mistake="11.record_activation_stats.entry-without-tensor"),
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
            first = output
            while isinstance(first, (tuple, list)) and len(first):
                first = first[0]
            if not torch.is_tensor(first):
                return
            with torch.no_grad():
                std, mean = torch.std_mean(first)
                stats[key].append(dict(mean=float(mean), std=float(std),
                                       zero_fraction=float(first.eq(0).sum()) / first.numel()))

        handles.append(module.register_forward_hook(hook))
    return stats, handles
''', expect=[]),
    dict(exercise="record_activation_stats", kind="right", why="0-dim detached tensors, every name listed up front",
         source='''
import functools

import torch


def _record(stats, name, module, args, output):
    while isinstance(output, (list, tuple)):
        output = output[0] if output else None
    if isinstance(output, torch.Tensor):
        output = output.detach()
        stats[name].append({"mean": output.mean(), "std": output.std(correction=1),
                            "zero_fraction": 1 - output.count_nonzero() / output.numel()})


def record_activation_stats(model, layer_types):
    chosen = [(name, module) for name, module in model.named_modules() if isinstance(module, layer_types)]
    stats = {name: [] for name, module in chosen}
    handles = [module.register_forward_hook(functools.partial(_record, stats, name)) for name, module in chosen]
    return stats, handles
''', expect=[]),
    dict(exercise="record_activation_stats", kind="right", why=".data as fastai's ActivationStats does, try/except",
         source='''
def record_activation_stats(model, layer_types):
    stats, handles = {}, []

    def make_hook(name):
        def hook(module, args, output):
            try:
                while isinstance(output, (tuple, list)):
                    output = output[0]
                out = output.data
            except (AttributeError, IndexError):
                return
            stats.setdefault(name, []).append(
                {"mean": out.mean().item(), "std": out.std().item(), "zero_fraction": (out == 0).float().mean().item()})
        return hook

    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            handles.append(module.register_forward_hook(make_hook(name)))
    return stats, handles
''', expect=[]),

    dict(exercise="record_activation_stats", kind="right", why="one global forward hook that looks modules up by object",
         source='''
import torch
import torch.nn.modules.module as module_hooks


def record_activation_stats(model, layer_types):
    names = {module: name for name, module in model.named_modules() if isinstance(module, layer_types)}
    stats = {}

    def hook(module, args, output):
        name = names.get(module)
        if name is None:
            return
        first = output
        while isinstance(first, (tuple, list)) and first:
            first = first[0]
        if isinstance(first, torch.Tensor):
            first = first.detach()
            stats.setdefault(name, []).append({"mean": first.mean().item(), "std": first.std().item(),
                                               "zero_fraction": (first == 0).float().mean().item()})

    return stats, [module_hooks.register_module_forward_hook(hook)]
''', expect=[]),
    dict(exercise="record_activation_stats", kind="wrong", why="names from a counter per type", clause="keyed-by-name",
         source='''
import torch


def record_activation_stats(model, layer_types):
    stats, handles, counts = {}, [], {}
    for module in model.modules():
        if isinstance(module, layer_types):
            kind = type(module).__name__
            counts[kind] = counts.get(kind, 0) + 1
            name = f"{kind}_{counts[kind]}"

            def hook(module, args, output, name=name):
                out = output[0] if isinstance(output, (tuple, list)) else output
                if isinstance(out, torch.Tensor):
                    out = out.detach()
                    stats.setdefault(name, []).append({"mean": out.mean().item(), "std": out.std().item(),
                                                       "zero_fraction": (out == 0).float().mean().item()})
            handles.append(module.register_forward_hook(hook))
    return stats, handles
''', expect=["should not be recorded", "expected names"], mistake="11.record_activation_stats.unexpected-names"),

    # ------------------------------------------------------------------ track_grad_norms
    _norms("post-accumulate-grad hook reads the accumulated .grad",
           [("        def hook(grad):\n"
             "            norms.setdefault(name, []).append(grad.norm().item())",
             "        def hook(parameter):\n"
             "            norms.setdefault(name, []).append(parameter.grad.norm().item())"),
            ("parameter.register_hook(", "parameter.register_post_accumulate_grad_hook(")],
           ["post-accumulate-grad hook", "running sum", "register_hook"], "this-pass",
           mistake="11.track_grad_norms.accumulated-grad"),
    _norms("squared norm", [("grad.norm().item()", "grad.pow(2).sum().item()")], ["squared norm"], "l2",
           mistake="11.track_grad_norms.squared-norm"),
    _norms("L1 norm", [("grad.norm().item()", "grad.abs().sum().item()")], ["l2 norm"], "l2",
           mistake="11.track_grad_norms.wrong-norm"),
    _norms("a tied weight hooked under both names",
           [("for name, parameter in model.named_parameters():",
             "for name, parameter in model.named_parameters(remove_duplicate=False):")],
           ["second name", "remove_duplicate=false"], "tied-once", mistake="11.track_grad_norms.second-name-recorded"),
    dict(exercise="track_grad_norms", kind="wrong", why="a tied weight named by its last name", clause="tied-once",
         source='''
def track_grad_norms(model):
    names = {parameter: name for name, parameter in model.named_parameters(remove_duplicate=False)}
    norms, handles = {}, []
    for parameter, name in names.items():
        if parameter.requires_grad:
            handles.append(parameter.register_hook(
                lambda grad, name=name: norms.setdefault(name, []).append(grad.norm().item())))
    return norms, handles
''', expect=["second name", "['b.weight']", "first name"], mistake="11.track_grad_norms.second-name-recorded"),
    _norms("the name read from the loop variable when the hook runs",
           [("    def make_hook(name):\n"
             "        def hook(grad):\n",
             "    def make_hook(unused):\n"
             "        def hook(grad):\n")],
           ["nothing was recorded", "loop variable"], "keyed-by-name",
           mistake="11.track_grad_norms.name-from-loop-variable"),
    dict(exercise="track_grad_norms", kind="wrong", why="keyed by the parameter's position", clause="keyed-by-name",
         source='''
def track_grad_norms(model):
    norms, handles = {}, []
    for index, parameter in enumerate(model.parameters()):
        if parameter.requires_grad:
            handles.append(parameter.register_hook(
                lambda grad, index=index: norms.setdefault(index, []).append(grad.norm().item())))
    return norms, handles
''', expect=["keyed by numbers", "named_parameters()"], mistake="11.track_grad_norms.keyed-by-position"),
    _norms("replaces the list on every backward",
           [("norms.setdefault(name, []).append(grad.norm().item())", "norms[name] = [grad.norm().item()]")],
           ["append one entry per backward pass"], "entry-per-pass", mistake="11.track_grad_norms.list-replaced"),
    _norms("the newest norm first",
           [("norms.setdefault(name, []).append(grad.norm().item())",
             "norms.setdefault(name, []).insert(0, grad.norm().item())")],
           ["reverse order", "in the order of the passes"], "pass-order", mistake="11.track_grad_norms.reverse-order"),
    _norms("hooks every parameter, frozen ones included",
           [("        if parameter.requires_grad:\n            handles", "        handles")],
           ["cannot register a hook on a tensor that doesn't require gradient"], "frozen",
           mistake="11.track_grad_norms.frozen-hooked"),
    _norms("unfreezes the frozen parameters to hook them",
           [("        if parameter.requires_grad:\n"
             "            handles",
             "        parameter.requires_grad_(True)\n"
             "        if parameter.requires_grad:\n"
             "            handles")],
           ["requires_grad changed", "must stay frozen"], "requires-grad",
           mistake="11.track_grad_norms.requires-grad-changed"),
    _norms("the hook returns a normalized gradient",
           [("            norms.setdefault(name, []).append(grad.norm().item())",
             "            norms.setdefault(name, []).append(grad.norm().item())\n"
             "            return grad / grad.norm()")],
           ["the hooks must only look", "return none"], "gradients-unchanged",
           mistake="11.track_grad_norms.grad-changed"),
    _norms("handles not returned",
           [("            handles.append(parameter.register_hook(make_hook(name)))",
             "            parameter.register_hook(make_hook(name))")],
           ["hooks were still registered"], "handles", mistake="11.track_grad_norms.handle-not-returned"),
    _norms("returns (handles, norms)", [("    return norms, handles", "    return handles, norms")],
           ["in that order", "(norms, handles)"], "returns-pair", mistake="11.track_grad_norms.pair-swapped"),
    _norms("hooks the weights only", [("        if parameter.requires_grad:", "        if name.endswith('weight'):")],
           ["nothing was recorded for", "the biases too"], "every-parameter",
           mistake="11.track_grad_norms.biases-skipped"),
    dict(exercise="track_grad_norms", kind="wrong", why="reads .grad inside the tensor hook", clause="this-pass",
         source='''
def track_grad_norms(model):
    norms, handles = {}, []
    for name, p in model.named_parameters():
        if p.requires_grad:
            def hook(grad, name=name, p=p):
                norms.setdefault(name, []).append(0.0 if p.grad is None else p.grad.norm().item())
            handles.append(p.register_hook(hook))
    return norms, handles
''', expect=["before .grad is updated", "the gradient the hook receives"],
         mistake="11.track_grad_norms.grad-before-update"),
    _norms("the hook doubles the gradient in place",
           [("norms.setdefault(name, []).append(grad.norm().item())",
             "norms.setdefault(name, []).append(grad.norm().item())\n"
             "            grad.mul_(2)")],
           ["without your hooks", "in place"], "gradients-unchanged", mistake="11.track_grad_norms.grad-changed"),
    dict(exercise="track_grad_norms", kind="wrong", why="post-accumulate hook that empties .grad",
         clause="gradients-unchanged", source='''
def track_grad_norms(model):
    norms, handles = {}, []
    for name, p in model.named_parameters():
        if p.requires_grad:
            def hook(p, name=name):
                norms.setdefault(name, []).append(p.grad.norm().item())
                p.grad = None
            handles.append(p.register_post_accumulate_grad_hook(hook))
    return norms, handles
''', expect=[".grad is none", "nor .grad"], mistake="11.track_grad_norms.grad-changed"),
    dict(exercise="track_grad_norms", kind="wrong", why="registers nothing", clause="every-parameter", source='''
def track_grad_norms(model):
    norms, handles = {}, []
    return norms, handles
''', expect=["nothing was recorded at all"], mistake="11.track_grad_norms.nothing-recorded"),
    _norms("stores grad.norm(), which requires grad under create_graph=True",
           [("grad.norm().item()", "grad.norm()")], ["create_graph=true", "requires grad", ".item()"], "create-graph",
           mistake="11.track_grad_norms.value-requires-grad"),
    _norms("stores a numpy number", [("grad.norm().item()", "grad.detach().norm().numpy()")],
           ["expected a number"], "numbers", mistake="11.track_grad_norms.value-not-a-number"),
    dict(exercise="track_grad_norms", kind="wrong", why="one multi-grad hook that records 0 for a missing gradient",
         clause="no-gradient", source='''
import torch


def track_grad_norms(model):
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    norms = {name: [] for name, p in named}

    def record(grads):
        for (name, p), grad in zip(named, grads):
            norms[name].append(0.0 if grad is None else grad.norm().item())

    return norms, [torch.autograd.graph.register_multi_grad_hook([p for _, p in named], record)]
''', expect=["no backward pass computed a gradient", "adds no entry"],
         mistake="11.track_grad_norms.entry-without-gradient"),
    dict(exercise="track_grad_norms", kind="right", why="0-dim detached tensors, linalg.vector_norm, default-argument binding",
         source='''
import torch


def track_grad_norms(model):
    norms = {name: [] for name, p in model.named_parameters() if p.requires_grad}
    handles = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            handles.append(p.register_hook(lambda g, name=name: norms[name].append(torch.linalg.vector_norm(g.detach()))))
    return norms, handles
''', expect=[]),
    dict(exercise="track_grad_norms", kind="wrong", why="0-dim tensors from linalg.vector_norm, not detached",
         clause="create-graph", source='''
import torch


def track_grad_norms(model):
    norms = {name: [] for name, p in model.named_parameters() if p.requires_grad}
    handles = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            handles.append(p.register_hook(lambda g, name=name: norms[name].append(torch.linalg.vector_norm(g))))
    return norms, handles
''', expect=["create_graph=true", "requires grad"], mistake="11.track_grad_norms.value-requires-grad"),
    dict(exercise="track_grad_norms", kind="right", why="a hook that returns the gradient unchanged, sqrt of squares",
         source=edited(reference("track_grad_norms"),
                       ("def track_grad_norms(model):",
                        "import collections\n"
                        "import math\n"
                        "\n"
                        "\n"
                        "def track_grad_norms(model):"),
                       ("    norms, handles = {}, []", "    norms, handles = collections.defaultdict(list), []"),
                       ("            norms.setdefault(name, []).append(grad.norm().item())",
                        "            norms[name].append(math.sqrt(grad.pow(2).sum().item()))\n"
                        "            return grad")),
         expect=[]),
    dict(exercise="track_grad_norms", kind="right", why="frozen parameters skipped by catching the error, under no_grad",
         source='''
import torch


def track_grad_norms(model):
    norms, handles = {}, []
    for name, parameter in model.named_parameters():
        def hook(grad, name=name):
            with torch.no_grad():
                norms.setdefault(name, []).append(float(grad.norm(p=2)))
        try:
            handles.append(parameter.register_hook(hook))
        except RuntimeError:
            pass
    return norms, handles
''', expect=[]),

    dict(exercise="track_grad_norms", kind="wrong", why="names zipped with parameters(), frozen ones shift them",
         clause="keyed-by-name", source='''
def track_grad_norms(model):
    names = [name for name, p in model.named_parameters() if p.requires_grad]
    trainable = [p for p in model.parameters() if p.requires_grad or True]
    norms, handles = {}, []
    for name, p in zip(names, trainable):
        if p.requires_grad:
            handles.append(p.register_hook(lambda g, name=name: norms.setdefault(name, []).append(g.norm().item())))
    return norms, handles
''', expect=["holds the norms of the gradients of '2.weight'", "named_parameters() together"],
         mistake="11.track_grad_norms.names-misaligned"),

    dict(exercise="track_grad_norms", kind="wrong", why="full backward hooks on the modules, grad_output norms",
         clause="every-parameter", source='''
def track_grad_norms(model):
    norms, handles = {}, []
    for name, module in model.named_modules():
        if list(module.parameters(recurse=False)):
            def hook(module, grad_input, grad_output, name=name):
                norms.setdefault(name, []).append(sum(g.norm() ** 2 for g in grad_output if g is not None).sqrt().item())
            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''', expect=["should not be recorded", "those are module names", "tensor hook on each parameter"],
         mistake="11.track_grad_norms.module-names"),

    # ------------------------------------------------------------------ TrainingMonitor
    _monitor("remove() forgets the handles of the two functions", [("self._handles += stats_handles + norm_handles",
                                                                    "pass")],
             ["hooks were still registered", "your two functions"], "remove-all",
             mistake="11.TrainingMonitor.hooks-left-after-remove"),
    _monitor("first_nonfinite overwritten by later modules",
             [("if self.first_nonfinite is None and any(", "if any(")], ["keep the first name"], "first",
             mistake="11.TrainingMonitor.not-the-first"),
    _monitor("'' taken for unset: if not self.first_nonfinite",
             [("if self.first_nonfinite is None and any(", "if not self.first_nonfinite and any(")],
             ["never change once set", "falsy", "is none"], "first",
             mistake="11.TrainingMonitor.empty-name-taken-for-none"),
    _monitor("watches for NaN only",
             [("any(not torch.isfinite(t).all() for t in tensors(value))",
               "any(torch.isnan(t).any() for t in tensors(value))")],
             ["torch.isfinite"], "nonfinite", mistake="11.TrainingMonitor.inf-not-watched"),
    _monitor("watches for inf only",
             [("any(not torch.isfinite(t).all() for t in tensors(value))",
               "any(torch.isinf(t).any() for t in tensors(value))")],
             ["contained nan", "torch.isfinite"], "nonfinite", mistake="11.TrainingMonitor.nan-not-watched"),
    _monitor("tests the sum, which overflows for large finite values",
             [("any(not torch.isfinite(t).all() for t in tensors(value))",
               "any(not torch.isfinite(t.sum()) for t in tensors(value))")],
             ["every element was finite", "each element"], "nonfinite", mistake="11.TrainingMonitor.sum-tested"),
    _monitor("no watch on the gradients", [("                self._handles.append(parameter.register_hook(lambda grad, name=name: watch(name, grad)))",
                                            "                pass")],
             ["gradients of the parameters"], "watch-params", mistake="11.TrainingMonitor.gradients-not-watched"),
    _monitor("__exit__ swallows the exception",
             [("        self.remove()", "        self.remove()\n        return True")],
             ["swallowed", "return none"], "propagates", mistake="11.TrainingMonitor.swallowed-exception"),
    _monitor("__exit__ removes the hooks only when nothing raised",
             [("        self.remove()", "        if exc_type is None:\n            self.remove()")],
             ["after the exception left the block, hooks were still registered", "on an exception too"], "with-raises",
             mistake="11.TrainingMonitor.exit-not-removing-on-error"),
    _monitor("attach() does not return the monitor",
             [("                self._handles.append(parameter.register_hook(lambda grad, name=name: watch(name, grad)))\n"
               "        return self",
               "                self._handles.append(parameter.register_hook(lambda grad, name=name: watch(name, grad)))")], ["return self"], "attach-returns",
               mistake="11.TrainingMonitor.attach-returns-other"),
    _monitor("hooks registered in the constructor",
             [("        self._handles = []\n", "        self._handles = []\n        self.attach()\n")],
             ["constructor registers nothing"], "init-nothing", mistake="11.TrainingMonitor.constructor-registers"),
    _monitor("grad_norms first set in attach()",
             [("self.activation_stats, self.grad_norms, self.first_nonfinite = {}, {}, None",
               "self.activation_stats, self.first_nonfinite = {}, None")],
             ["no attribute 'grad_norms'"], "init-state", mistake="11.TrainingMonitor.attribute-missing"),
    _monitor("__enter__ returns None", [("        return self.attach()", "        self.attach()")],
             ["__enter__ must return the monitor"], "with-enter", mistake="11.TrainingMonitor.enter-returns-other"),
    _monitor("remove() throws the data away",
             [("            handle.remove()\n",
               "            handle.remove()\n"
               "        self.activation_stats, self.grad_norms = {}, {}\n")],
             ["the recorded data must stay"], "data-stays", mistake="11.TrainingMonitor.remove-clears-records"),
    _monitor("__exit__ does not remove the hooks",
             [("        self.remove()", "        pass")],
             ["after the with block, hooks were still registered", "__exit__ must remove them"], "with-exit",
             mistake="11.TrainingMonitor.exit-not-removing"),
    _monitor("remove() clears every hook of the model, the caller's too",
             [("        handles, self._handles = self._handles, []\n"
               "        for handle in handles:\n"
               "            handle.remove()",
               "        for module in self.model.modules():\n"
               "            module._forward_hooks.clear()\n"
               "        for parameter in self.model.parameters():\n"
               "            if parameter._backward_hooks:\n"
               "                parameter._backward_hooks.clear()\n"
               "        self._handles = []")],
             ["also removed hooks that the monitor did not register", "by the handles it kept"], "remove-only-own",
             mistake="11.TrainingMonitor.callers-hooks-removed"),
    _monitor("remove() cannot be called twice",
             [("        handles, self._handles = self._handles, []",
               "        handles = self._handles\n"
               "        del self._handles")],
             ["a second time", "attributeerror"], "remove-twice", mistake="11.TrainingMonitor.remove-twice-raises"),
    _monitor("watches the layers only, not the model itself",
             [("        for name, module in self.model.named_modules():\n"
               "            self._handles",
               "        for name, module in list(self.model.named_modules())[1:]:\n"
               "            self._handles")],
             ["expected ''", "the model included"], "watch-root",
             mistake="11.TrainingMonitor.model-itself-not-watched"),
    dict(exercise="TrainingMonitor", kind="wrong", why="record_activation_stats still the stub", clause="stats",
         source=_STUB_STATS + reference("track_grad_norms") + reference("TrainingMonitor"),
         expect=["record_activation_stats, from exercise 1", "not written yet", "finish exercise 1 first"],
         mistake="11.TrainingMonitor.earlier-exercise-not-written"),
    dict(exercise="TrainingMonitor", kind="wrong", why="track_grad_norms still the stub", clause="norms",
         source=reference("record_activation_stats") + _STUB_NORMS + reference("TrainingMonitor"),
         expect=["track_grad_norms, from exercise 2", "not written yet", "finish exercise 2 first"],
         mistake="11.TrainingMonitor.earlier-exercise-not-written"),
    dict(exercise="TrainingMonitor", kind="wrong", why="record_activation_stats keyed by type", clause="stats",
         source=edited(reference("record_activation_stats"),
                       ("stats.setdefault(name, [])", "stats.setdefault(type(module).__name__, [])"))
         + reference("track_grad_norms") + reference("TrainingMonitor"),
         expect=["exercise 1", "does not pass its own check", "finish exercise 1 first", "keyed by"],
         mistake="11.TrainingMonitor.earlier-exercise-failing"),
    dict(exercise="TrainingMonitor", kind="wrong", why="record_activation_stats assumes a tensor", clause="stats",
         source=edited(reference("record_activation_stats"),
                       ("            while isinstance(output, (tuple, list)) and output:\n"
                        "                output = output[0]\n"
                        "            if not isinstance(output, torch.Tensor):\n"
                        "                return\n",
                        "")) + reference("track_grad_norms") + reference("TrainingMonitor"),
         expect=["exercise 1", "does not pass its own check", "finish exercise 1 first", "'tuple' object"],
         mistake="11.TrainingMonitor.earlier-exercise-failing"),
    dict(exercise="TrainingMonitor", kind="wrong", why="track_grad_norms records the squared norm", clause="norms",
         source=reference("record_activation_stats") + edited(reference("track_grad_norms"),
                                                              ("grad.norm().item()", "grad.pow(2).sum().item()")) + reference("TrainingMonitor"),
         expect=["exercise 2", "does not pass its own check", "finish exercise 2 first", "squared norm"],
         mistake="11.TrainingMonitor.earlier-exercise-failing"),
    dict(exercise="TrainingMonitor", kind="wrong", why="record_activation_stats not defined (its cell not run)",
         clause="stats", source=reference("track_grad_norms") + reference("TrainingMonitor"),
         expect=["record_activation_stats, from exercise 1", "not defined", "run its exercise cell"],
         mistake="11.TrainingMonitor.earlier-exercise-not-run"),
    _monitor("watches only the model's own output",
             [("for name, module in self.model.named_modules():", "for name, module in [('', self.model)]:")],
             ["'' saw a non-finite value too, but after", "every module"], "watch-modules",
             mistake="11.TrainingMonitor.not-the-first"),
    _monitor("watches inputs with forward pre-hooks",
             [("self._handles.append(module.register_forward_hook(\n"
               "                lambda module, args, output, name=name: watch(name, output)))",
               "self._handles.append(module.register_forward_pre_hook(\n"
               "                lambda module, args, name=name: watch(name, args)))")],
             ["saw a non-finite value too, but after", "not a pre-hook"], "watch-modules",
             mistake="11.TrainingMonitor.not-the-first"),
    _monitor("watches gradients for NaN only",
             [("lambda grad, name=name: watch(name, grad)",
               "lambda grad, name=name: watch(name, grad) if torch.isnan(grad).any() else None")],
             ["saw a non-finite value too, but after", "inf as well as nan"], "nonfinite",
             mistake="11.TrainingMonitor.not-the-first"),
    _monitor("names the module by its class",
             [("lambda module, args, output, name=name: watch(name, output)",
               "lambda module, args, output, name=name: watch(type(module).__name__, output)")],
             ["neither a named_modules() nor a named_parameters() name"], "names",
             mistake="11.TrainingMonitor.not-a-name"),
    _monitor("remove() clears first_nonfinite",
             [("            handle.remove()\n",
               "            handle.remove()\n"
               "        self.first_nonfinite = None\n")],
             ["inside the with block", "must keep what was recorded"], "data-stays",
             mistake="11.TrainingMonitor.remove-clears-records"),
    _monitor("keeps the stats as a list of the records' items, not the dict the hooks fill",
             [("self.activation_stats, stats_handles = record_activation_stats(self.model, self.layer_types)",
               "stats, stats_handles = record_activation_stats(self.model, self.layer_types)\n"
               "        self.activation_stats = list(stats.items())")],
             ["monitor.activation_stats is list", "expected the dict"], "stats",
             mistake="11.TrainingMonitor.records-not-a-dict"),
    _monitor("keeps a copy of the stats dict made in attach()",
             [("self.activation_stats, stats_handles = record_activation_stats(self.model, self.layer_types)",
               "stats, stats_handles = record_activation_stats(self.model, self.layer_types)\n"
               "        self.activation_stats = dict(stats)")],
             ["holds no record", "not a copy"], "stats", mistake="11.TrainingMonitor.records-copied"),
    _monitor("keeps a copy of the norms dict made in attach()",
             [("self.grad_norms, norm_handles = track_grad_norms(self.model)",
               "norms, norm_handles = track_grad_norms(self.model)\n"
               "        self.grad_norms = dict(norms)")],
             ["monitor.grad_norms holds no record", "not a copy"], "norms",
             mistake="11.TrainingMonitor.records-copied"),
    _monitor("watches frozen parameters too",
             [("            if parameter.requires_grad:\n"
               "                self._handles.append(parameter.register_hook(",
               "            if True:\n"
               "                self._handles.append(parameter.register_hook(")],
             ["cannot register a hook on a tensor that doesn't require gradient"], "watch-params",
             mistake="11.TrainingMonitor.frozen-hooked"),
    _monitor("unfreezes the model to watch every parameter",
             [("        for name, parameter in self.model.named_parameters():\n"
               "            if parameter.requires_grad:",
               "        self.model.requires_grad_(True)\n"
               "        for name, parameter in self.model.named_parameters():\n"
               "            if parameter.requires_grad:")],
             ["after monitor.attach()", "requires_grad changed", "must stay frozen"], "as-before",
             mistake="11.TrainingMonitor.requires-grad-changed"),
    _monitor("attach() puts the model in eval mode",
             [("        self.grad_norms, norm_handles = track_grad_norms(self.model)\n",
               "        self.grad_norms, norm_handles = track_grad_norms(self.model)\n"
               "        self.model.eval()\n")],
             ["after monitor.attach()", "training mode changed", "as it found it"], "as-before",
             mistake="11.TrainingMonitor.training-mode-changed"),
    _monitor("the watch calls output.detach() (nn.LSTM returns a tuple)",
             [("lambda module, args, output, name=name: watch(name, output)",
               "lambda module, args, output, name=name: watch(name, output.detach())")],
             ["'tuple' object has no attribute 'detach'", "through tuples, lists and dicts"], "structured",
             mistake="11.TrainingMonitor.structured-output-raised"),
    _monitor("the watch looks one level into tuples and lists only",
             [("return [tensor for item in items for tensor in tensors(item)]",
               "return [item for item in items if isinstance(item, torch.Tensor)]")],
             ["expected 'split'", "at any depth"], "structured",
             mistake="11.TrainingMonitor.nested-outputs-not-watched"),
    _monitor("the watch skips dicts",
             [("items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()",
               "items = value if isinstance(value, (tuple, list)) else ()")],
             ["expected 'keyed'", "through tuples, lists and dicts"], "structured",
             mistake="11.TrainingMonitor.nested-outputs-not-watched"),
    _monitor("the watch iterates over any output that is not a tensor",
             [("items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()",
               "items = value.values() if isinstance(value, dict) else value")],
             ["nonetype", "none ('probe')", "any other output (none, a number) as finite"], "other-finite",
             mistake="11.TrainingMonitor.structured-output-raised"),
    _monitor("__enter__ does not attach", [("        return self.attach()", "        return self")],
             ["no hook is registered", "__enter__ must attach"], "with-enter",
             mistake="11.TrainingMonitor.enter-not-attaching"),
    _monitor("remove() removes from the list it walks, skipping every other handle",
             [("        handles, self._handles = self._handles, []\n"
               "        for handle in handles:\n"
               "            handle.remove()",
               "        for handle in self._handles:\n"
               "            self._handles.remove(handle)\n"
               "            handle.remove()")],
             ["hooks were still registered", "remove() must remove every hook"], "remove-all",
             mistake="11.TrainingMonitor.hooks-left-after-remove"),
    _monitor("watches only the modules of layer_types",
             [("        for name, module in self.model.named_modules():\n"
               "            self._handles",
               "        for name, module in self.model.named_modules():\n"
               "            if not isinstance(module, self.layer_types):\n"
               "                continue\n"
               "            self._handles")],
             ["saw a non-finite value too, but after", "every module"], "watch-modules",
             mistake="11.TrainingMonitor.not-the-first"),
    dict(exercise="TrainingMonitor", kind="right", why="__exit__ returns exc_type is None, handles popped",
         source=_FIRST_TWO + edited(reference("TrainingMonitor"),
                                    ("        self.remove()",
                                     "        self.remove()\n"
                                     "        return exc_type is None"),
                                    ("        handles, self._handles = self._handles, []\n"
                                     "        for handle in handles:\n"
                                     "            handle.remove()",
                                     "        while self._handles:\n"
                                     "            self._handles.pop().remove()")),
         expect=[]),
    dict(exercise="TrainingMonitor", kind="right", why="records on its own while the first two exercises are stubs",
         source=_OWN_MONITOR, expect=[]),
    dict(exercise="TrainingMonitor", kind="right", why="the gradient watch by post-accumulate-grad hooks",
         source=_FIRST_TWO + edited(reference("TrainingMonitor"),
                                    ("register_hook(lambda grad, name=name: watch(name, grad))",
                                     "register_post_accumulate_grad_hook(lambda p, name=name: watch(name, p.grad))")),
         expect=[]),
    dict(exercise="TrainingMonitor", kind="right", why="isnan or isinf, ExitStack, torch.utils._pytree, returns False",
         source=_FIRST_TWO + '''
import contextlib

import torch
import torch.utils._pytree as pytree


class TrainingMonitor:
    def __init__(self, model, layer_types):
        self.model = model
        self.layer_types = layer_types
        self.activation_stats = {}
        self.grad_norms = {}
        self.first_nonfinite = None
        self._stack = contextlib.ExitStack()

    def _check(self, name, value):
        leaves = [leaf for leaf in pytree.tree_leaves(value) if isinstance(leaf, torch.Tensor)]
        bad = any(bool(torch.isnan(leaf).any() or torch.isinf(leaf).any()) for leaf in leaves)
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
            hook = lambda module, args, output, name=name: self._check(name, output)
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
    dict(exercise="TrainingMonitor", kind="right", why="functools.partial hooks, one list per kind of hook, abs().max()",
         source=_FIRST_TWO + '''
import functools
import math

import torch


def _leaves(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list, dict)):
        for item in (value.values() if isinstance(value, dict) else value):
            yield from _leaves(item)


class TrainingMonitor:
    def __init__(self, model, layer_types):
        self.model, self.layer_types = model, layer_types
        self.activation_stats, self.grad_norms = {}, {}
        self.first_nonfinite = None
        self.watch_handles, self.record_handles = [], []

    def _note(self, name, value):
        for leaf in _leaves(value):
            if self.first_nonfinite is None and leaf.numel() and leaf.is_floating_point() \\
                    and not math.isfinite(leaf.detach().abs().max().item()):
                self.first_nonfinite = name

    def _output(self, name, module, args, output):
        self._note(name, output)

    def attach(self):
        stats, a = record_activation_stats(self.model, self.layer_types)
        norms, b = track_grad_norms(self.model)
        self.activation_stats, self.grad_norms = stats, norms
        self.record_handles += a + b
        self.watch_handles += [m.register_forward_hook(functools.partial(self._output, n))
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

# Found by writing submissions from the contracts alone: each of these passed, or got a message that named a
# mistake it did not make, before the check was fixed.
ENTRIES += [
    _stats("skips the model itself (its name is '')",
           [("if isinstance(module, tuple(layer_types)):", "if name and isinstance(module, tuple(layer_types)):")],
           ["module '' is the model itself", "named_modules() lists it first"], "every-module",
           mistake="11.record_activation_stats.model-itself-skipped"),
    _stats("takes output[0] of an empty list",
           [("while isinstance(output, (tuple, list)) and output:", "while isinstance(output, (tuple, list)):")],
           ["indexerror", "an empty list", "adds no entry"], "no-entry",
           mistake="11.record_activation_stats.structured-output-raised"),
    _stats("takes a tuple's first item, but not the first item of that",
           [("while isinstance(output, (tuple, list)) and output:",
             "if isinstance(output, (tuple, list)) and output:")],
           ["nothing was recorded for ['lstm']", "tuple whose first item is a packedsequence", "describes data"],
           "first-of-first", mistake="11.record_activation_stats.nested-first-item-skipped"),
    _stats("centers the detached output in place to compute the std",
           [('"std": output.std().item()',
             '"std": (output.sub_(output.mean()).pow(2).sum() / (output.numel() - 1)).sqrt().item()')],
           ["in place", "shares its memory", "return none"], "outputs-unchanged",
           mistake="11.record_activation_stats.output-changed-in-place"),
    _stats("counts zeros after abs_() on the detached output",
           [("(output == 0).float()", "(output.abs_() == 0).float()")],
           ["in place", "output.detach(), which shares its memory"], "outputs-unchanged",
           mistake="11.record_activation_stats.output-changed-in-place"),
    _stats("zeros counted with torch.isclose (atol 1e-8)",
           [("(output == 0).float()", "torch.isclose(output, torch.zeros_like(output)).float()")],
           ["counts elements near 0 too", "exactly equal to 0"], "zero-fraction",
           mistake="11.record_activation_stats.counts-near-zero"),
    dict(exercise="record_activation_stats", kind="right", why="0-dim tensors under no_grad, count over numel, prepend",
         source='''
import torch
from collections import defaultdict


def record_activation_stats(model, layer_types):
    stats, handles = defaultdict(list), []
    for name, module in model.named_modules():
        if not isinstance(module, tuple(layer_types)):
            continue

        def hook(module, args, output, name=name):
            while isinstance(output, (list, tuple)):
                if not output:
                    return
                output = output[0]
            if not torch.is_tensor(output):
                return
            with torch.no_grad():
                stats[name].append(dict(mean=output.mean(), std=torch.std(output),
                                        zero_fraction=(output == 0).sum() / output.numel()))

        handles.append(module.register_forward_hook(hook, prepend=True))
    return stats, handles
''', expect=[]),
    _norms("clamps the gradient it records",
           [("            norms.setdefault(name, []).append(grad.norm().item())\n",
             "            norms.setdefault(name, []).append(grad.norm().item())\n"
             "            return grad.clamp(-1, 1)\n")],
           ["1000 times larger", ".grad is", "without your hooks", "return none"], "gradients-unchanged",
           mistake="11.track_grad_norms.grad-changed"),
    _norms("the norm of the gradient with its non-finite elements set to numbers",
           [("grad.norm().item()", "torch.nan_to_num(grad).norm().item()"),
            ("def track_grad_norms(model):", "import torch\n\n\ndef track_grad_norms(model):")],
           ["holds inf or nan", "as it is", "nan_to_num"], "nonfinite-norm",
           mistake="11.track_grad_norms.nonfinite-hidden"),
    _norms("the norm of the finite elements only",
           [("grad.norm().item()", "grad[torch.isfinite(grad)].norm().item()"),
            ("def track_grad_norms(model):", "import torch\n\n\ndef track_grad_norms(model):")],
           ["holds inf or nan", "a filter of the non-finite elements"], "nonfinite-norm",
           mistake="11.track_grad_norms.nonfinite-hidden"),
    dict(exercise="track_grad_norms", kind="right", why="the norm taken in float64",
         source=edited(reference("track_grad_norms"), ("grad.norm().item()", "grad.detach().double().norm().item()")),
         expect=[]),
    _monitor("attach() replaces the list of handles of an earlier call",
             [("        self._handles += stats_handles + norm_handles",
               "        self._handles = stats_handles + norm_handles")],
             ["attach() again", "hooks were still registered", "instead of replacing the list"], "remove-all-attaches",
             mistake="11.TrainingMonitor.handles-of-first-attach-lost"),
    _monitor("remove() restores the hook dicts as they were at attach()",
             [("        self.activation_stats, stats_handles = record_activation_stats(",
               "        self.saved = [(m._forward_hooks, dict(m._forward_hooks)) for m in self.model.modules()]\n"
               "        self.saved += [(p._backward_hooks, dict(p._backward_hooks)) for p in self.model.parameters()\n"
               "                       if p._backward_hooks is not None]\n"
               "        self.activation_stats, stats_handles = record_activation_stats("),
              ("        handles, self._handles = self._handles, []\n",
               "        for hooks, saved in getattr(self, 'saved', []):\n"
               "            hooks.clear()\n"
               "            hooks.update(saved)\n"
               "        self.saved = []\n"
               "        handles, self._handles = self._handles, []\n")],
             ["registered while the monitor was attached", "restoring them"], "remove-keeps-later",
             mistake="11.TrainingMonitor.callers-hooks-removed"),
    _monitor("the output watch returns torch.nan_to_num(output)",
             [("lambda module, args, output, name=name: watch(name, output)",
               "lambda module, args, output, name=name: (watch(name, output), torch.nan_to_num(output) if isinstance(output, torch.Tensor) else None)[1]")],
             ["the same model without a monitor returns", "only look"], "only-look-outputs",
             mistake="11.TrainingMonitor.output-changed"),
    _monitor("the watch returns its test, True or False",
             [("                self.first_nonfinite = name\n",
               "                self.first_nonfinite = name\n"
               "            return self.first_nonfinite is not None\n")],
             ["must be tensor, not bool", "only look"], "only-look-outputs",
             mistake="11.TrainingMonitor.output-replaced-by-non-tensor"),
    _monitor("the gradient watch returns torch.nan_to_num(grad)",
             [("lambda grad, name=name: watch(name, grad)",
               "lambda grad, name=name: (watch(name, grad), torch.nan_to_num(grad))[1]")],
             [".grad is", "without the monitor", "only look"], "only-look-gradients",
             mistake="11.TrainingMonitor.grad-changed"),
    _monitor("the gradient watch clamps the gradient",
             [("lambda grad, name=name: watch(name, grad)",
               "lambda grad, name=name: (watch(name, grad), grad.clamp(-1e6, 1e6))[1]")],
             [".grad is", "without the monitor", "only look"], "only-look-gradients",
             mistake="11.TrainingMonitor.grad-changed"),
    _monitor("a gradient named by the module that holds the parameter",
             [("lambda grad, name=name: watch(name, grad)",
               "lambda grad, name=name: watch(name.rpartition('.')[0], grad)")],
             ["the module that holds", "named_parameters() name"], "names",
             mistake="11.TrainingMonitor.module-named-for-gradient"),
    dict(exercise="TrainingMonitor", kind="right", why="one global forward hook that skips modules of other models",
         source=_FIRST_TWO + edited(reference("TrainingMonitor"),
                                    ("        for name, module in self.model.named_modules():\n"
                                     "            self._handles.append(module.register_forward_hook(\n"
                                     "                lambda module, args, output, name=name: watch(name, output)))\n",
                                     "        names = {module: name for name, module in self.model.named_modules()}\n"
                                     "        self._handles.append(torch.nn.modules.module.register_module_forward_hook(\n"
                                     "            lambda module, args, output: watch(names[module], output) if module in names else None))\n")), expect=[]),
    _stats("the variance instead of the std", [("output.std().item()", "output.var().item()")],
           ["that is the variance", "square root"], "unbiased-std",
           mistake="11.record_activation_stats.variance-not-std"),
    _stats("the model hooked once more by hand, besides the loop",
           [("    return stats, handles",
             "    handles.append(model.register_forward_hook(make_hook('')))\n"
             "    return stats, handles")],
           ["records under ['']", "should not be recorded"], "isinstance",
           mistake="11.record_activation_stats.unexpected-names"),
    _monitor("the watch takes a Python number for a tensor",
             [("            items = value.values()",
               "            if isinstance(value, (int, float)):\n"
               "                return [torch.tensor(float(value))]\n"
               "            items = value.values()")],
             ["'peak' returns a python number", "counts as finite"], "other-finite",
             mistake="11.TrainingMonitor.number-output-counted"),
    _norms("the hook returns grad.detach(), which cuts create_graph's graph",
           [("            norms.setdefault(name, []).append(grad.norm().item())\n",
             "            grad = grad.detach()\n"
             "            norms.setdefault(name, []).append(grad.norm().item())\n"
             "            return grad\n")],
           ["create_graph=true", "requires_grad false", "returns grad.detach()"], "gradients-unchanged",
           mistake="11.track_grad_norms.grad-detached"),
    _monitor("the gradient watch tests the gradient's norm, which overflows",
             [("lambda grad, name=name: watch(name, grad)", "lambda grad, name=name: watch(name, grad.norm())")],
             ["elements up to 1.5e38", "test each element"], "nonfinite", mistake="11.TrainingMonitor.sum-tested"),
    _monitor("attach() switches on anomaly detection, and nothing switches it off",
             [("        self.grad_norms, norm_handles = track_grad_norms(self.model)\n",
               "        self.grad_norms, norm_handles = track_grad_norms(self.model)\n"
               "        torch.autograd.set_detect_anomaly(True)\n")],
             ["after monitor.remove()", "anomaly detection is on", "global modes as they were"], "as-before",
             mistake="11.TrainingMonitor.anomaly-detection-left-on"),
    _monitor("attach() registers a buffer on the model for its flag",
             [("        self.grad_norms, norm_handles = track_grad_norms(self.model)\n",
               "        self.grad_norms, norm_handles = track_grad_norms(self.model)\n"
               "        self.model.register_buffer('monitor_flag', torch.zeros(()))\n")],
             ["state_dict() has the keys ['monitor_flag']", "would not load"], "as-before",
             mistake="11.TrainingMonitor.state-dict-changed"),
    dict(exercise="record_activation_stats", kind="wrong", why="one global forward hook whose handle is not returned",
         clause="handles", source='''
import torch


def record_activation_stats(model, layer_types):
    stats = {}
    names = {module: name for name, module in model.named_modules() if isinstance(module, layer_types)}

    def hook(module, args, output):
        name = names.get(module)
        if name is None:
            return
        while isinstance(output, (tuple, list)) and output:
            output = output[0]
        if isinstance(output, torch.Tensor):
            out = output.detach()
            stats.setdefault(name, []).append(
                {"mean": out.mean().item(), "std": out.std().item(), "zero_fraction": (out == 0).float().mean().item()})

    torch.nn.modules.module.register_module_forward_hook(hook)
    return stats, []
''', expect=["hooks were still registered", "a global forward hook", "register_module_forward_hook",
                "return the handle"], mistake="11.record_activation_stats.handle-not-returned"),
    _monitor("one global forward hook for the watch, its handle not kept",
             [("        for name, module in self.model.named_modules():\n"
               "            self._handles.append(module.register_forward_hook(\n"
               "                lambda module, args, output, name=name: watch(name, output)))\n",
               "        names = {module: name for name, module in self.model.named_modules()}\n"
               "        torch.nn.modules.module.register_module_forward_hook(\n"
               "            lambda module, args, output: watch(names[module], output) if module in names else None)\n")],
             ["after monitor.remove(), hooks were still registered", "a global forward hook"], "remove-all",
             mistake="11.TrainingMonitor.hooks-left-after-remove"),
    _stats("one stats dict at module level, shared by every call",
           [("def record_activation_stats(model, layer_types):",
             "STATS = {}\n"
             "\n"
             "\n"
             "def record_activation_stats(model, layer_types):"),
            ("    stats, handles = {}, []", "    stats, handles = STATS, []")],
           ["already hold entries", "make a new dict in each call"], "entry-per-call",
           mistake="11.record_activation_stats.records-kept-between-calls"),
    _stats("keyed by the module objects", [("stats.setdefault(name, [])", "stats.setdefault(module, [])")],
           ["keyed by the module objects themselves", "named_modules()"], "keyed-by-name",
           mistake="11.record_activation_stats.keyed-by-object"),
    _norms("a default-argument dict, shared by every call",
           [("def track_grad_norms(model):", "def track_grad_norms(model, norms={}):"),
            ("    norms, handles = {}, []", "    handles = []")],
           ["already hold entries", "a default argument"], "entry-per-pass",
           mistake="11.track_grad_norms.records-kept-between-calls"),
    dict(exercise="track_grad_norms", kind="wrong", why="keyed by the parameter objects", clause="keyed-by-name",
         source='''
def track_grad_norms(model):
    norms, handles = {}, []
    for parameter in model.parameters():
        if parameter.requires_grad:
            handles.append(parameter.register_hook(
                lambda grad, parameter=parameter: norms.setdefault(parameter, []).append(grad.norm().item())))
    return norms, handles
''', expect=["keyed by the parameter objects themselves", "named_parameters()"],
         mistake="11.track_grad_norms.keyed-by-object"),
    dict(exercise="TrainingMonitor", kind="right", why="attach() does nothing when already attached",
         source=_FIRST_TWO + edited(reference("TrainingMonitor"),
                                    ("        def tensors(value):",
                                     "        if self._handles:\n"
                                     "            return self\n"
                                     "\n"
                                     "        def tensors(value):")), expect=[]),
    dict(exercise="TrainingMonitor", kind="right", why="attach() refuses to attach twice",
         source=_FIRST_TWO + edited(reference("TrainingMonitor"),
                                    ("        def tensors(value):",
                                     "        if self._handles:\n"
                                     "            raise RuntimeError('already attached')\n"
                                     "\n"
                                     "        def tensors(value):")),
         expect=[]),
    dict(exercise="record_activation_stats", kind="right", why="with_kwargs=True hooks, stats in float64",
         source=edited(reference("record_activation_stats"),
                       ("        def hook(module, args, output):",
                        "        def hook(module, args, kwargs, output):"),
                       ("module.register_forward_hook(make_hook(name))",
                        "module.register_forward_hook(make_hook(name), with_kwargs=True)"),
                       ("output = output.detach()", "output = output.detach().double()")), expect=[]),
]

# Entries for the named mistakes that no entry above produces.
ENTRIES += [
    _stats("the handles in a dict by name",
           [("    stats, handles = {}, []", "    stats, handles = {}, {}"),
            ("            handles.append(module.register_forward_hook(make_hook(name)))",
             "            handles[name] = module.register_forward_hook(make_hook(name))")],
           ["a dict", "list(....values())"], "handles", "11.record_activation_stats.handles-as-dict"),
    _stats("only the last handle returned", [("    return stats, handles", "    return stats, handles[-1]")],
           ["as its handles", "expected a list"], "handles", "11.record_activation_stats.handles-not-a-list"),
    _stats("returns the stats alone", [("    return stats, handles", "    return stats")],
           ["expected a pair (stats, handles)"], "returns-pair", "11.record_activation_stats.not-a-pair"),
    _stats("returns the lists of entries without their names",
           [("    return stats, handles", "    return list(stats.values()), handles")],
           ["as its records", "expected a dict from name to list"], "returns-pair",
           "11.record_activation_stats.records-not-a-dict"),
    _stats("keeps only the last entry, not a list",
           [("stats.setdefault(name, []).append({", "stats[name] = ({")],
           ["expected a list with one entry per call"], "entry-per-call",
           "11.record_activation_stats.entries-not-a-list"),
    _stats("keyed by the module's position in named_modules()",
           [("for name, module in model.named_modules():",
             "for name, (_, module) in enumerate(model.named_modules()):")],
           ["keyed by numbers", "named_modules()"], "keyed-by-name", "11.record_activation_stats.keyed-by-position"),
    _stats("returns a new dict, not the one the hooks fill", [("    return stats, handles", "    return {}, handles")],
           ["nothing was recorded at all", "return the dict that the hooks fill"], "keyed-by-name",
           "11.record_activation_stats.nothing-recorded"),
    _stats("the mean of each column, a tensor",
           [('"mean": output.mean().item(),', '"mean": output.mean(dim=0),')],
           ["expected one number"], "numbers", "11.record_activation_stats.value-not-one-number"),
    _stats("the mean as a numpy array", [('"mean": output.mean().item(),', '"mean": output.mean().numpy(),')],
           ["expected a number"], "numbers", "11.record_activation_stats.value-not-a-number"),
    _stats("each entry a tuple (mean, std, zero_fraction)",
           [("stats.setdefault(name, []).append({", "stats.setdefault(name, []).append(("),
            ('"mean": output.mean().item(),', "output.mean().item(),"),
            ('"std": output.std().item(),', "output.std().item(),"),
            ('"zero_fraction": (output == 0).float().mean().item(),', "(output == 0).float().mean().item(),"),
            ("            })\n", "            ))\n")],
           ["expected a dict with the keys"], "keys", "11.record_activation_stats.entry-not-a-dict"),
    _stats("the mean of the columns' standard deviations",
           [('"std": output.std().item(),', '"std": output.std(dim=0).mean().item(),')],
           ["['std'] is", "over all its elements"], "unbiased-std", "11.record_activation_stats.wrong-std"),
    _stats("the fraction of rows holding a zero",
           [("(output == 0).float().mean().item()", "(output == 0).any(dim=-1).float().mean().item()")],
           ["['zero_fraction'] is", "exactly 0"], "zero-fraction", "11.record_activation_stats.wrong-zero-fraction"),
    _stats("two hooks on every module",
           [("            handles.append(module.register_forward_hook(make_hook(name)))",
             "            handles.append(module.register_forward_hook(make_hook(name)))\n"
             "            handles.append(module.register_forward_hook(make_hook(name)))")],
           ["twice as many", "registered twice"], "entry-per-call", "11.record_activation_stats.hooked-twice"),
    _norms("the handles in a dict by name",
           [("    norms, handles = {}, []", "    norms, handles = {}, {}"),
            ("            handles.append(parameter.register_hook(make_hook(name)))",
             "            handles[name] = parameter.register_hook(make_hook(name))")],
           ["a dict", "list(....values())"], "handles", "11.track_grad_norms.handles-as-dict"),
    _norms("only the last handle returned", [("    return norms, handles", "    return norms, handles[-1]")],
           ["as its handles", "expected a list"], "handles", "11.track_grad_norms.handles-not-a-list"),
    _norms("the hook functions returned as the handles",
           [("            handles.append(parameter.register_hook(make_hook(name)))",
             "            hook = make_hook(name)\n"
             "            parameter.register_hook(hook)\n"
             "            handles.append(hook)")],
           ["each must be a removablehandle"], "handles", "11.track_grad_norms.not-handles"),
    _norms("returns the norms alone", [("    return norms, handles", "    return norms")],
           ["expected a pair (norms, handles)"], "returns-pair", "11.track_grad_norms.not-a-pair"),
    _norms("returns the lists of norms without their names",
           [("    return norms, handles", "    return list(norms.values()), handles")],
           ["as its records", "expected a dict from name to list"], "returns-pair",
           "11.track_grad_norms.records-not-a-dict"),
    _norms("keeps only the last norm, not a list",
           [("norms.setdefault(name, []).append(grad.norm().item())", "norms[name] = grad.norm().item()")],
           ["expected a list with one entry per call"], "entry-per-pass", "11.track_grad_norms.entries-not-a-list"),
    _norms("keyed by the parameter's type",
           [("parameter.register_hook(make_hook(name))", "parameter.register_hook(make_hook(type(parameter).__name__))")],
           ["keyed by", "keyed by type"], "keyed-by-name", "11.track_grad_norms.keyed-by-type"),
    _norms("names prefixed with 'model.'",
           [("parameter.register_hook(make_hook(name))", "parameter.register_hook(make_hook('model.' + name))")],
           ["should not be recorded", "expected names"], "keyed-by-name", "11.track_grad_norms.unexpected-names"),
    _norms("the norm of each column, a tensor",
           [("grad.norm().item()", "grad.detach().norm(dim=0)")],
           ["expected one number"], "numbers", "11.track_grad_norms.value-not-one-number"),
    _norms("skips the first parameter (a slice off by one)",
           [("for name, parameter in model.named_parameters():",
             "for name, parameter in list(model.named_parameters())[1:]:")],
           ["nothing was recorded for ['0.weight']", "every parameter"], "every-parameter",
           "11.track_grad_norms.parameters-missing"),
    _norms("two hooks on every parameter",
           [("            handles.append(parameter.register_hook(make_hook(name)))",
             "            handles.append(parameter.register_hook(make_hook(name)))\n"
             "            handles.append(parameter.register_hook(make_hook(name)))")],
           ["one entry each", "once per backward pass"], "entry-per-pass", "11.track_grad_norms.wrong-entry-count"),
    _monitor("activation_stats and grad_norms None until attach()",
             [("self.activation_stats, self.grad_norms, self.first_nonfinite = {}, {}, None",
               "self.activation_stats, self.grad_norms, self.first_nonfinite = None, None, None")],
             ["monitor.activation_stats is none", "expected an empty dict"], "init-state",
             "11.TrainingMonitor.records-not-empty-dict"),
    _monitor("first_nonfinite '' until set",
             [("self.activation_stats, self.grad_norms, self.first_nonfinite = {}, {}, None",
               "self.activation_stats, self.grad_norms, self.first_nonfinite = {}, {}, ''")],
             ["monitor.first_nonfinite is ''", "expected none"], "init-state",
             "11.TrainingMonitor.first-nonfinite-not-none"),
    _monitor("attach() returns before registering (an inverted already-attached test)",
             [("        def tensors(value):", "        if not self._handles:\n            return self\n\n"
               "        def tensors(value):")],
             ["no hook is registered", "attach() registers the hooks"], "stats",
             "11.TrainingMonitor.attach-registers-nothing"),
    _monitor("the gradient watch returns the gradient doubled",
             [("lambda grad, name=name: watch(name, grad)", "lambda grad, name=name: watch(name, grad) or grad * 2")],
             ["differ from those of the same model trained without a monitor", "return none from every hook"],
             "only-look-gradients", "11.TrainingMonitor.training-changed"),
    _monitor("the watch's test without its `not`",
             [("any(not torch.isfinite(t).all() for t in tensors(value))",
               "any(torch.isfinite(t).all() for t in tensors(value))")],
             ["every output and gradient was finite", "expected none"], "nonfinite",
             "11.TrainingMonitor.finite-place-named"),
    _monitor("remove() turns grad mode off",
             [("        handles, self._handles = self._handles, []",
               "        handles, self._handles = self._handles, []\n        torch.set_grad_enabled(False)")],
             ["grad mode is off", "global modes"], "as-before", "11.TrainingMonitor.grad-mode-left-off"),
    _monitor("no non-finite watch at all, only the two functions",
             [("        for name, module in self.model.named_modules():\n"
               "            self._handles.append(module.register_forward_hook(\n"
               "                lambda module, args, output, name=name: watch(name, output)))\n"
               "        for name, parameter in self.model.named_parameters():\n"
               "            if parameter.requires_grad:\n"
               "                self._handles.append(parameter.register_hook(lambda grad, name=name: watch(name, grad)))\n",
               "")],
             ["monitor.first_nonfinite is none", "whose output contained inf"], "watch-modules",
             "11.TrainingMonitor.outputs-not-watched"),
]


def _own(why, changes, expect, clause, mistake):
    """A wrong entry: the monitor that records on its own (_OWN_MONITOR) with `changes`."""
    return dict(exercise="TrainingMonitor", kind="wrong", why=why, source=edited(_OWN_MONITOR, *changes),
                expect=expect, clause=clause, mistake=mistake)


_STATS_LINE = "self.activation_stats.setdefault(name, []).append({"
_NORMS_LINE = "self.grad_norms.setdefault(name, []).append(grad.norm().item())"
_FORWARD_HOOK = ("            self.handles.append(module.register_forward_hook(\n"
                 "                lambda module, args, output, name=name: self._output(name, module, args, output)))\n")
_TENSOR_HOOK = ("                self.handles.append(parameter.register_hook(lambda grad, name=name: "
                "self._gradient(name, grad)))\n")

# The monitor's own records, judged as the first two exercises' are.
ENTRIES += [
    _own("its own norms: only the last norm, not a list", [(_NORMS_LINE, "self.grad_norms[name] = grad.norm().item()")],
         ["expected a list with one entry per call"], "norms", "11.TrainingMonitor.entries-not-a-list"),
    _own("its own stats keyed by the module objects",
         [(_STATS_LINE, "self.activation_stats.setdefault(module, []).append({")],
         ["keyed by the module objects themselves"], "stats", "11.TrainingMonitor.keyed-by-object"),
    _own("its own stats keyed by module type",
         [(_STATS_LINE, "self.activation_stats.setdefault(type(module).__name__, []).append({")],
         ["keyed by", "type"], "stats", "11.TrainingMonitor.keyed-by-type"),
    _own("its own hooks named by their position in named_modules()",
         [("for name, module in self.model.named_modules():",
           "for name, (_, module) in enumerate(self.model.named_modules()):")],
         ["keyed by numbers"], "stats", "11.TrainingMonitor.keyed-by-position"),
    _own("its own stats under names prefixed with 'model.'",
         [(_STATS_LINE, "self.activation_stats.setdefault('model.' + name, []).append({")],
         ["should not be recorded", "expected names"], "stats", "11.TrainingMonitor.unexpected-names"),
    _own("its own stats skip tuple outputs (nn.LSTM's)",
         [("        while isinstance(first, (tuple, list)) and first:\n            first = first[0]\n", "")],
         ["nothing was recorded at all"], "stats", "11.TrainingMonitor.nothing-recorded"),
    _own("its own forward hooks read the name from the loop variable",
         [("lambda module, args, output, name=name: self._output", "lambda module, args, output: self._output")],
         ["loop variable"], "stats", "11.TrainingMonitor.name-from-loop-variable"),
    _own("its own stats keep tensors that require grad",
         [("            first = first.detach()\n", ""), ('"mean": first.mean().item()', '"mean": first.mean()')],
         ["requires grad", "keeps the autograd graph"], "stats", "11.TrainingMonitor.value-requires-grad"),
    _own("its own stats: the mean of each column, a tensor",
         [('"mean": first.mean().item()', '"mean": first.mean(dim=0)')],
         ["expected one number"], "stats", "11.TrainingMonitor.value-not-one-number"),
    _own("its own stats: the mean as a numpy array",
         [('"mean": first.mean().item()', '"mean": first.mean().numpy()')],
         ["expected a number"], "stats", "11.TrainingMonitor.value-not-a-number"),
    _own("its own norms: the list replaced on every backward",
         [(_NORMS_LINE, "self.grad_norms[name] = [grad.norm().item()]")],
         ["append one entry per backward pass"], "norms", "11.TrainingMonitor.list-replaced"),
    _own("its own norms: the newest first",
         [(_NORMS_LINE, "self.grad_norms.setdefault(name, []).insert(0, grad.norm().item())")],
         ["reverse order"], "norms", "11.TrainingMonitor.reverse-order"),
    _own("its own stats: each entry a tuple",
         [(_STATS_LINE, "self.activation_stats.setdefault(name, []).append(("),
          ('"mean": first.mean().item(), "std": first.std().item(),', "first.mean().item(), first.std().item(),"),
          ('"zero_fraction": (first == 0).float().mean().item()})', "(first == 0).float().mean().item()))")],
         ["expected a dict with the keys"], "stats", "11.TrainingMonitor.entry-not-a-dict"),
    _own("its own stats: zero_fraction under another key",
         [('"zero_fraction": (first', '"zeros": (first')],
         ["lacks ['zero_fraction']"], "stats", "11.TrainingMonitor.entry-keys-missing"),
    _own("its own stats of the module's input",
         [("        first = output\n", "        first = args[0]\n")],
         ["mean of the module's input"], "stats", "11.TrainingMonitor.stats-of-input"),
    _own("its own stats of the first sample only",
         [('"mean": first.mean().item()', '"mean": first[0].mean().item()')],
         ["['mean'] is", "over all its elements"], "stats", "11.TrainingMonitor.wrong-mean"),
    _own("its own stats: the population std",
         [('"std": first.std().item()', '"std": first.std(correction=0).item()')],
         ["population standard deviation"], "stats", "11.TrainingMonitor.population-std"),
    _own("its own stats: the variance", [('"std": first.std().item()', '"std": first.var().item()')],
         ["that is the variance"], "stats", "11.TrainingMonitor.variance-not-std"),
    _own("its own stats: the mean of the columns' stds",
         [('"std": first.std().item()', '"std": first.std(dim=0).mean().item()')],
         ["['std'] is", "over all its elements"], "stats", "11.TrainingMonitor.wrong-std"),
    _own("its own stats: the fraction of non-zeros", [("(first == 0)", "(first != 0)")],
         ["non-zero"], "stats", "11.TrainingMonitor.nonzero-fraction"),
    _own("its own stats: zeros counted as first <= 0", [("(first == 0)", "(first <= 0)")],
         ["negative"], "stats", "11.TrainingMonitor.counts-negatives"),
    _own("its own stats: the number of zeros",
         [("(first == 0).float().mean().item()", "(first == 0).sum().item()")],
         ["number of zeros"], "stats", "11.TrainingMonitor.zero-count"),
    _own("its own stats: the fraction of rows holding a zero",
         [("(first == 0).float().mean().item()", "(first == 0).any(dim=-1).float().mean().item()")],
         ["['zero_fraction'] is", "exactly 0"], "stats", "11.TrainingMonitor.wrong-zero-fraction"),
    _own("its own forward hooks registered twice", [(_FORWARD_HOOK, _FORWARD_HOOK + _FORWARD_HOOK)],
         ["twice as many"], "stats", "11.TrainingMonitor.hooked-twice"),
    _own("its own tensor hooks on the weights only",
         [("            if parameter.requires_grad:\n", "            if parameter.requires_grad and 'weight' in name:\n")],
         ["those are biases"], "norms", "11.TrainingMonitor.biases-skipped"),
    _own("its own tensor hooks: the names of the trainable parameters zipped with parameters()",
         [("        for name, parameter in self.model.named_parameters():\n",
           "        for name, parameter in zip([n for n, p in self.model.named_parameters() if p.requires_grad],\n"
           "                                   self.model.parameters()):\n")],
         ["named_parameters() together"], "norms", "11.TrainingMonitor.names-misaligned"),
    _own("its own tensor hooks registered twice", [(_TENSOR_HOOK, _TENSOR_HOOK + _TENSOR_HOOK)],
         ["one entry each"], "norms", "11.TrainingMonitor.wrong-entry-count"),
    _own("its own norms squared", [(_NORMS_LINE, "self.grad_norms.setdefault(name, []).append(grad.norm().item() ** 2)")],
         ["squared norm"], "norms", "11.TrainingMonitor.squared-norm"),
    _own("its own norms: the L1 norm",
         [(_NORMS_LINE, "self.grad_norms.setdefault(name, []).append(grad.abs().sum().item())")],
         ["has l2 norm"], "norms", "11.TrainingMonitor.wrong-norm"),
]
ENTRIES += [
    _stats("records every tensor of a tuple or list, one entry each",
           [("            while isinstance(output, (tuple, list)) and output:\n                output = output[0]\n",
             "            if isinstance(output, (tuple, list)):\n"
             "                for item in output:\n"
             "                    hook(module, args, item)\n"
             "                return\n")],
           ["holds 3 entries", "one entry per call"], "tuple-first", "11.record_activation_stats.too-many-entries"),
    _own("its own stats: every tensor of a tuple or list, one entry each",
         [("        first = output\n        while isinstance(first, (tuple, list)) and first:\n            first = first[0]\n",
           "        if isinstance(output, (tuple, list)):\n"
           "            for item in output:\n"
           "                self._output(name, module, args, item)\n"
           "            return\n"
           "        first = output\n")],
         ["holds 3 entries", "one entry per call"], "stats", "11.TrainingMonitor.too-many-entries"),
    _own("its own tensor hooks skip the first parameter (a slice off by one)",
         [("        for name, parameter in self.model.named_parameters():\n",
           "        for name, parameter in list(self.model.named_parameters())[1:]:\n")],
         ["nothing was recorded for ['0.0.weight']"], "norms", "11.TrainingMonitor.parameters-missing"),
]
ENTRIES += [
    _monitor("remove() puts back the weights saved at attach()",
             [("        self._handles += stats_handles + norm_handles",
               "        self._handles += stats_handles + norm_handles\n"
               "        self._saved = {key: value.clone() for key, value in self.model.state_dict().items()}"),
              ("        handles, self._handles = self._handles, []",
               "        handles, self._handles = self._handles, []\n"
               "        if hasattr(self, '_saved'):\n"
               "            self.model.load_state_dict(self._saved)")],
             ["model(x) differs from the same model that never had a monitor"], "as-before",
             "11.TrainingMonitor.model-changed-after-remove"),
    # A declared diagnosis that no entry above reaches: one entry each.
    _stats("skips a module held under two names altogether, so as not to record it twice",
           [("    for name, module in model.named_modules():\n"
             "        if isinstance(module, tuple(layer_types)):",
             "    every = [module for _, module in model.named_modules(remove_duplicate=False)]\n"
             "    for name, module in model.named_modules():\n"
             "        if isinstance(module, tuple(layer_types)) and every.count(module) == 1:")],
           ["nothing was recorded for ['act']", "register a hook on every module"], "every-module",
           mistake="11.record_activation_stats.modules-missing"),
    _stats("keeps only the last 3 entries of each module (a bounded history), so a module called twice a pass "
           "loses entries from the second pass on",
           [("            })\n", "            })\n            del stats[name][:-3]\n")],
           ["holds 3 entries", "called 4 time(s)", "one entry per call"], "entry-per-call",
           mistake="11.record_activation_stats.calls-missed"),
    _norms("gives a frozen parameter no hook, but the norm 0.0 on every backward pass (a full backward hook on the "
           "model appends it)",
           [("            handles.append(parameter.register_hook(make_hook(name)))\n",
             "            handles.append(parameter.register_hook(make_hook(name)))\n"
             "        else:\n"
             "            handles.append(model.register_full_backward_hook(\n"
             "                lambda module, grad_input, grad_output, name=name: norms.setdefault(name, []).append(0.0)))\n")],
           ["records for ['0.bias']", "do not require grad"], "frozen",
           mistake="11.track_grad_norms.frozen-recorded"),
    _own("records for a frozen parameter the norm 0.0 on every backward pass (a full backward hook on the model)",
         [("                self.handles.append(parameter.register_hook(lambda grad, name=name: self._gradient(name, grad)))\n",
           "                self.handles.append(parameter.register_hook(lambda grad, name=name: self._gradient(name, grad)))\n"
           "            else:\n"
           "                self.handles.append(self.model.register_full_backward_hook(\n"
           "                    lambda module, grad_input, grad_output, name=name:\n"
           "                    self.grad_norms.setdefault(name, []).append(0.0)))\n")],
         ["records for ['0.0.bias']", "do not require grad"], "norms", "11.TrainingMonitor.frozen-recorded"),
    _own("records the outputs by wrapping each module's forward (module.forward = a wrapper), not by a forward "
         "hook; remove() removes the tensor hooks and leaves the wrappers, which go on recording",
         [("    def attach(self):\n",
           "    def _wrapped(self, name, module, forward):\n"
           "        def wrapper(*args, **kwargs):\n"
           "            output = forward(*args, **kwargs)\n"
           "            self._output(name, module, args, output)\n"
           "            return output\n"
           "        return wrapper\n\n"
           "    def attach(self):\n"),
          (_FORWARD_HOOK, "            module.forward = self._wrapped(name, module, module.forward)\n")],
         ["a forward pass still added to monitor.activation_stats", "remove() must stop the recording"],
         "remove-all", "11.TrainingMonitor.records-after-remove"),
]
