"""Mistake catalogue for lesson 05, backward hooks on modules. The format of an entry is
described in tests/course/test_mistake_catalogue.py; the clause tables CLAUSES and NOT_CLAUSES
in tests/course/test_contract_clauses.py."""

from mistakes import edited, reference

CLAUSES = {
    "record_grad_output_norms": {
        "any-depth": "nested submodules at any depth",
        "root": 'and `model` itself (named "")',
        "frozen": "modules whose parameters are frozen (`requires_grad=False`)",
        "types": "that is an instance of one of `layer_types`",
        "shared-name": "A module reachable under two names is hooked once, under the name `named_modules()` gives it.",
        "not-deprecated": "The hooks are not the deprecated `register_backward_hook`",
        "each-backward": "Each time backward goes through such a module (twice per backward for a module called "
                         "twice in one forward pass)",
        "grad-output-0": "appends the L2 norm of `grad_output[0]`",
        "float": "as a Python float",
        "name": "to `norms[name]`, where `name` is the module's name in `model.named_modules()`",
        "eval": "This holds also in eval mode",
        "create-graph": "for a backward with `create_graph=True`, where the gradients require grad.",
        "no-change": "The hooks change no gradient, neither in place nor by returning one.",
        "returns-pair": "Returns `(norms, handles)`: the dict of lists",
        "handles": "and a list of the handles of all hooks registered",
        "removes": "removing them removes every hook it registered.",
        "per-call": "Each call registers hooks of its own and returns a new dict, so that two calls on one model "
                    "record independently.",
    },
    "clip_grad_input": {
        "full-hook": "Registers a full backward hook on `module`",
        "params-unchanged": "so that the gradients of the module's own parameters stay as they are.",
        "tuple": "The hook returns a tuple (not a list: torch refuses a list when no input requires grad)",
        "length": "as long as `grad_input`",
        "clip-above": "each tensor whose L2 norm is above `max_norm` is replaced by a new tensor, rescaled to norm "
                      "`max_norm`",
        "own-norm": "each tensor is judged and rescaled by its own norm, not by one norm over all entries",
        "keep": "other tensors are kept unchanged",
        "none": "None entries stay None at their position.",
        "not-in-place": "The hook must not change the tensors of `grad_input` in place.",
        "create-graph": "In a backward with `create_graph=True` the tensors it returns stay part of the graph",
        "every-backward": "It clips at every backward through the module",
        "eval": "in training and in eval mode",
        "own-max-norm": "each hook with the `max_norm` given to its own call.",
        "handle": "Returns the handle of the hook.",
    },
    "add_grad_noise": {
        "pre-hook": "Registers a full backward pre-hook on `module`",
        "reaches": "so that the noise reaches the gradients of the module's parameters and of its inputs.",
        "length": "The hook returns a tuple (or a list) as long as `grad_output`",
        "adds": "each tensor entry plus noise",
        "shape-dtype": "of the same shape, returned in the entry's dtype",
        "none": "None entries stay None.",
        "normal": "The noise is normal",
        "iid": "i.i.d.",
        "mean-std": "mean 0, standard deviation `std`",
        "fresh": "drawn anew at every call",
        "separate": "separately for each entry.",
        "generator": "It is drawn from `generator` when one is given (so that equally seeded generators give the "
                     "same noise)",
        "global": "else from torch's global random state.",
        "not-in-place": "The hook must not change the tensors of `grad_output` in place.",
        "own-args": "Each hook uses the `std` and `generator` given to its own call.",
        "handle": "Returns the handle of the hook.",
    },
}

_SUMMARY = "the summary line; the sentences after it spell it out, each one a clause"
_ARGUMENTS = "describes the arguments the check passes; it asks nothing of the function"
NOT_CLAUSES = {
    "record_grad_output_norms": {
        "Record the norm of the gradient that reaches each layer of a given type.": _SUMMARY,
        "Receives `model`, an nn.Module, and `layer_types`, a tuple of module classes.": _ARGUMENTS,
    },
    "clip_grad_input": {
        "Clip each gradient that `module` sends back to its inputs to L2 norm `max_norm`.": _SUMMARY,
        "Receives `module`, an nn.Module, and `max_norm`, a positive Python number.": _ARGUMENTS,
    },
    "add_grad_noise": {
        "Add Gaussian noise to the gradient of the module's outputs.": _SUMMARY,
        "Receives `module`, an nn.Module, `std`, a positive Python number, and `generator`, a torch.Generator "
        "or None.": _ARGUMENTS,
        "In eval mode it may add noise or not.": "leaves eval mode to the learner on purpose: noise as a regulariser "
                                                  "is often meant for training only, and a hook that adds none in "
                                                  "eval mode is as right (catalogue: 'noise only while training')",
    },
}

ENTRIES = [
    # ------------------------------------------------------------------ record_grad_output_norms
    dict(exercise="record_grad_output_norms", kind="wrong", why="uses the deprecated register_backward_hook",
         clause="not-deprecated",
         source=edited(reference("record_grad_output_norms"),
                       ("register_full_backward_hook(hook)", "register_backward_hook(hook)")),
         mistake="05.record_grad_output_norms.deprecated-backward-hook",
         expect=["deprecated register_backward_hook", "use register_full_backward_hook"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="records grad_input[0]", clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_input[0].norm().item()")),
         mistake="05.record_grad_output_norms.grad-input-norm",
         expect=["norms of grad_input[0]", "record grad_output[0]"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="stores tensors, not floats", clause="float",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_output[0].norm()")),
         mistake="05.record_grad_output_norms.tensor-not-float",
         expect=["expected Python floats", ".item()"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="only the direct children", clause="any-depth",
         source=edited(reference("record_grad_output_norms"),
                       ("in model.named_modules():", "in model.named_children():")),
         mistake="05.record_grad_output_norms.first-level-only",
         expect=["nested", "named_modules() goes through every depth"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="ignores layer_types", clause="types",
         source=edited(reference("record_grad_output_norms"),
                       ("isinstance(module, layer_types)", "isinstance(module, (nn.Linear, nn.Conv2d))")),
         mistake="05.record_grad_output_norms.extra-modules",
         expect=["blocks.0.act", "layer_types, the tuple you are given"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="exact type instead of isinstance", clause="types",
         source=edited(reference("record_grad_output_norms"),
                       ("if not isinstance(module, layer_types):", "if type(module) not in layer_types:")),
         mistake="05.record_grad_output_norms.misses-layer-types",
         expect=["classifier", "isinstance", "subclasses"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="keeps only the latest norm", clause="each-backward",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name] = [grad_output[0].norm().item()]")),
         mistake="05.record_grad_output_norms.wrong-entry-count",
         expect=["1 entries; expected 2", "append a new entry"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="hook in a loop without binding the name",
         clause="name",
         source=edited(reference("record_grad_output_norms"),
                       ("def hook(module, grad_input, grad_output, name=name):",
                        "def hook(module, grad_input, grad_output):")),
         mistake="05.record_grad_output_norms.late-bound-name",
         expect=["stayed empty", "loop variable", "bind the name"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="squared norm", clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_output[0].pow(2).sum().item()")),
         mistake="05.record_grad_output_norms.squared-norm",
         expect=["squared norms"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="returns only the last handle", clause="handles",
         source=edited(reference("record_grad_output_norms"),
                       ("handles = []", "handle = None"),
                       ("handles.append(module.register_full_backward_hook(hook))",
                        "handle = module.register_full_backward_hook(hook)"),
                       ("return norms, handles", "return norms, [handle]")),
         mistake="05.record_grad_output_norms.recording-hook-not-returned",
         expect=["after removing every returned handle", "handles of all hooks"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="returns the pair the other way round",
         clause="returns-pair",
         source=edited(reference("record_grad_output_norms"), ("return norms, handles", "return handles, norms")),
         mistake="05.record_grad_output_norms.pair-swapped",
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
         clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()",
                        "torch.cat([g.flatten() for g in grad_output if g is not None]).norm().item()")),
         mistake="05.record_grad_output_norms.norm-over-all-outputs",
         expect=['over all entries of grad_output together', 'only grad_output[0]']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='norm of the last entry of grad_output',
         clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_output[-1].norm().item()")),
         mistake="05.record_grad_output_norms.last-grad-output",
         expect=['last entry of grad_output', 'record grad_output[0]']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='L1 norm', clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_output[0].abs().sum().item()")),
         mistake="05.record_grad_output_norms.l1-norm",
         expect=['the L2 norm of grad_output[0]']),
    dict(exercise="record_grad_output_norms", kind="wrong", why="one list shared by every name (dict.fromkeys)",
         clause="name",
         source=edited(reference("record_grad_output_norms"),
                       ("norms = {}",
                        "names = [name for name, module in model.named_modules() if isinstance(module, layer_types)]\n"
                        "    norms = dict.fromkeys(names, [])"),
                       ("        norms[name] = []\n", "")),
         mistake="05.record_grad_output_norms.shared-list",
         expect=["one and the same list object", "a list of its own"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="names made up from children() positions",
         clause="name",
         source=edited(reference("record_grad_output_norms"),
                       ("for name, module in model.named_modules():",
                        "for position, module in enumerate(model.children()):\n"
                        "        name = str(position)")),
         mistake="05.record_grad_output_norms.unknown-module-names",
         expect=["no submodule of the model is named '0'", "names that model.named_modules() gives"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="keeps only the first of layer_types", clause="types",
         source=edited(reference("record_grad_output_norms"),
                       ("isinstance(module, layer_types)", "isinstance(module, layer_types[0])")),
         mistake="05.record_grad_output_norms.misses-layer-types",
         expect=["'conv', 'features.0'", "instance of one of layer_types"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="norm of the output in a forward hook",
         clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("def hook(module, grad_input, grad_output, name=name):\n"
                        "            norms[name].append(grad_output[0].norm().item())",
                        "def hook(module, args, output, name=name):\n"
                        "            norms[name].append(output.norm().item())"),
                       ("register_full_backward_hook(hook)", "register_forward_hook(hook)")),
         mistake="05.record_grad_output_norms.wrong-norm-value",
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
    dict(exercise="clip_grad_input", kind="wrong", why="calls norm() on None entries", clause="none",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:", "if grad.norm() > max_norm:")),
         mistake="05.clip_grad_input.none-entry-not-skipped",
         expect=["'NoneType' object has no attribute 'norm'", "keep them as None"]),
    dict(exercise="clip_grad_input", kind="wrong", why="drops the None entries", clause="length",
         source=edited(reference("clip_grad_input"),
                       ("for grad in grad_input:", "for grad in [g for g in grad_input if g is not None]:")),
         mistake="05.clip_grad_input.wrong-tuple-length",
         expect=["invalid number of grad_input", "as long as the one it received", "do not drop entries"]),
    dict(exercise="clip_grad_input", kind="wrong", why="rescales in place with mul_", clause="not-in-place",
         source=edited(reference("clip_grad_input"),
                       ("grad = grad * (max_norm / grad.norm())", "grad.mul_(max_norm / grad.norm())")),
         mistake="05.clip_grad_input.in-place",
         expect=["changed in place", "not in-place operations"]),
    dict(exercise="clip_grad_input", kind="wrong", why="always rescales", clause="keep",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:",
                        "if grad is not None and grad.norm() != 0:")),
         mistake="05.clip_grad_input.rescales-small-grads",
         expect=["already at most max_norm", "keep it unchanged"]),
    dict(exercise="clip_grad_input", kind="wrong", why="one norm over all entries, as clip_grad_norm_",
         clause="own-norm",
         source=edited(reference("clip_grad_input"),
                       ("        clipped = []",
                        "        total = sum(g.pow(2).sum() for g in grad_input if g is not None) ** 0.5\n"
                        "        clipped = []"),
                       ("if grad is not None and grad.norm() > max_norm:",
                        "if grad is not None and total > max_norm:"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad * (max_norm / total)")),
         mistake="05.clip_grad_input.one-norm-for-all",
         expect=["one norm for all entries", "its own norm"]),
    dict(exercise="clip_grad_input", kind="wrong", why="clamps each element", clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:", "if grad is not None:"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad.clamp(-max_norm, max_norm)")),
         mistake="05.clip_grad_input.clamps-elements",
         expect=["clipped each element", "L2 norm of the whole tensor"]),
    dict(exercise="clip_grad_input", kind="wrong", why="uses the deprecated register_backward_hook", clause="full-hook",
         source=edited(reference("clip_grad_input"),
                       ("register_full_backward_hook(clip)", "register_backward_hook(clip)")),
         mistake="05.clip_grad_input.deprecated-backward-hook",
         expect=["deprecated register_backward_hook", "register_full_backward_hook"]),
    dict(exercise="clip_grad_input", kind="wrong", why="computes the clipped tuple but returns nothing",
         clause="clip-above",
         source=edited(reference("clip_grad_input"), ("return tuple(clipped)", "clipped = tuple(clipped)")),
         mistake="05.clip_grad_input.returns-grad-input-unchanged",
         expect=["grad_input unchanged", "return the new tuple"]),
    dict(exercise="clip_grad_input", kind="wrong", why="clips grad_output in a pre-hook", clause="params-unchanged",
         source=edited(reference("clip_grad_input"),
                       ("def clip(module, grad_input, grad_output):", "def clip(module, grad_output):"),
                       ("for grad in grad_input:", "for grad in grad_output:"),
                       ("register_full_backward_hook(clip)", "register_full_backward_pre_hook(clip)")),
         mistake="05.clip_grad_input.changes-parameter-grads",
         expect=["parameter", "clipping grad_output in a backward pre-hook"]),
    dict(exercise="clip_grad_input", kind="wrong", why="forgets to return the handle", clause="handle",
         source=edited(reference("clip_grad_input"),
                       ("return module.register_full_backward_hook(clip)", "module.register_full_backward_hook(clip)")),
         mistake="05.clip_grad_input.no-handle",
         expect=["returned None", "expected the handle"]),
    dict(exercise="clip_grad_input", kind="wrong", why="returns a list", clause="tuple",
         source=edited(reference("clip_grad_input"), ("return tuple(clipped)", "return clipped")),
         mistake="05.clip_grad_input.not-none-without-input-grad",
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

    dict(exercise="clip_grad_input", kind='wrong', why='clips only the first entry', clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:",
                        "if grad is not None and grad.norm() > max_norm and not clipped:")),
         mistake="05.clip_grad_input.clips-first-entry-only",
         expect=['left grad_input[1] as it was', 'not only the first']),
    dict(exercise="clip_grad_input", kind='wrong', why='compares the squared norm with max_norm', clause="keep",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:",
                        "if grad is not None and grad.pow(2).sum() > max_norm:")),
         mistake="05.clip_grad_input.compares-squared-norm",
         expect=['already at most max_norm', 'not its square']),
    dict(exercise="clip_grad_input", kind='wrong', why='rescales every entry once one is too large', clause="keep",
         source=edited(reference("clip_grad_input"),
                       ("        clipped = []",
                        "        too_large = any(g is not None and g.norm() > max_norm for g in grad_input)\n"
                        "        clipped = []"),
                       ("if grad is not None and grad.norm() > max_norm:", "if grad is not None and too_large:")),
         mistake="05.clip_grad_input.rescales-small-grads",
         expect=['already at most max_norm', 'keep it unchanged']),
    dict(exercise="clip_grad_input", kind='wrong', why='replaces None by zeros', clause="none",
         source=edited(reference("clip_grad_input"),
                       ("        for grad in grad_input:\n",
                        "        like = next((g for g in grad_input if g is not None), None)\n"
                        "        for grad in grad_input:\n"
                        "            if grad is None and like is not None:\n"
                        "                grad = torch.zeros_like(like)\n")),
         mistake="05.clip_grad_input.none-replaced",
         expect=['grad_input[2] is none', 'keep none in place']),
    dict(exercise="clip_grad_input", kind='wrong', why='rescales to norm 1', clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad / grad.norm()")),
         mistake="05.clip_grad_input.clips-to-unit-norm",
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
         clause="clip-above",
         source=edited(reference("clip_grad_input"), ("for grad in grad_input:", "for grad in grad_output:")),
         mistake="05.clip_grad_input.wrong-grad-shape",
         expect=["has changed the size of value", "must have its shape"]),

    # ------------------------------------------------------------------ add_grad_noise
    dict(exercise="add_grad_noise", kind="wrong", why="scales the noise by the variance", clause="mean-std",
         source=edited(reference("add_grad_noise"), ("grad + std * noise", "grad + std ** 2 * noise")),
         mistake="05.add_grad_noise.noise-std-squared",
         expect=["std squared", "not by std ** 2"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise on the first entry only", clause="adds",
         source=edited(reference("add_grad_noise"), ("if grad is not None:", "if grad is not None and not noisy:")),
         mistake="05.add_grad_noise.noise-on-first-entry-only",
         expect=["but not to grad_output[1]", "every tensor of grad_output"]),
    dict(exercise="add_grad_noise", kind="wrong", why="ignores the generator", clause="generator",
         source=edited(reference("add_grad_noise"), ("generator=generator, ", "")),
         mistake="05.add_grad_noise.noise-not-from-generator",
         expect=["seeded alike", "from the generator you were given"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise on grad_input in a full backward hook", clause="pre-hook",
         source=edited(reference("add_grad_noise"),
                       ("def add_noise(module, grad_output):", "def add_noise(module, grad_input, grad_output):"),
                       ("for grad in grad_output:", "for grad in grad_input:"),
                       ("register_full_backward_pre_hook(add_noise)", "register_full_backward_hook(add_noise)")),
         mistake="05.add_grad_noise.noise-on-grad-input",
         expect=["added the noise to grad_input", "never reaches the module's parameters", "pre-hook"]),
    dict(exercise="add_grad_noise", kind="wrong", why="adds the noise in place", clause="not-in-place",
         source=edited(reference("add_grad_noise"), ("grad = grad + std * noise", "grad.add_(std * noise)")),
         mistake="05.add_grad_noise.in-place",
         expect=["changed in place", "not in-place operations"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise proportional to the gradient", clause="adds",
         source=edited(reference("add_grad_noise"), ("grad = grad + std * noise", "grad = grad * (1 + std * noise)")),
         mistake="05.add_grad_noise.noise-depends-on-input",
         expect=["depends on grad", "grad + noise"]),
    dict(exercise="add_grad_noise", kind="wrong", why="uniform noise", clause="normal",
         source=edited(reference("add_grad_noise"),
                       ("noise = torch.randn(",
                        "# uniform on [-a, a] with a = sqrt(3) has standard deviation 1\n"
                        "                noise = 3 ** 0.5 * (2 * torch.rand("),
                       ("device=grad.device)", "device=grad.device) - 1)")),
         mistake="05.add_grad_noise.noise-uniform",
         expect=["normal distribution", "not the uniform one"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise drawn once and reused", clause="fresh",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    cache = {}\n\n    def add_noise(module, grad_output):\n"),
                       ("                noise = torch.randn(",
                        "                if len(noisy) not in cache:\n"
                        "                    cache[len(noisy)] = torch.randn("),
                       ("device=grad.device)", "device=grad.device)\n                noise = cache[len(noisy)]")),
         mistake="05.add_grad_noise.noise-repeated",
         expect=["exactly the same noise", "new noise on every call"]),
    dict(exercise="add_grad_noise", kind="wrong", why="a generator of its own with a fixed seed", clause="global",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    own = torch.Generator().manual_seed(0)\n\n"
                        "    def add_noise(module, grad_output):\n"),
                       ("generator=generator,", "generator=own,")),
         mistake="05.add_grad_noise.noise-own-generator",
         expect=["gave identical noise", "not from a generator of your own"]),
    dict(exercise="add_grad_noise", kind="wrong", why="adds noise to None entries", clause="none",
         source=edited(reference("add_grad_noise"),
                       ("            if grad is not None:\n", ""),
                       ("                noise = torch.randn(", "            noise = torch.randn("),
                       ("                grad = grad + std * noise", "            grad = grad + std * noise")),
         mistake="05.add_grad_noise.none-entry-not-skipped",
         expect=["NoneType", "keep them as None"]),
    dict(exercise="add_grad_noise", kind="wrong", why="returns a tensor instead of a tuple", clause="length",
         source=edited(reference("add_grad_noise"), ("return tuple(noisy)", "return noisy[0]")),
         mistake="05.add_grad_noise.wrong-tuple-length",
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
         source=edited(reference("add_grad_noise"),
                       ("noise = torch.randn(grad.shape, generator=generator, dtype=grad.dtype, device=grad.device)\n"
                        "                grad = grad + std * noise",
                        "grad = torch.add(grad, torch.randn_like(grad, generator=generator), alpha=std)")),
         expect=[]),
    dict(exercise="add_grad_noise", kind="right", why="normal_ on a new tensor",
         source=edited(reference("add_grad_noise"),
                       ("noise = torch.randn(grad.shape, generator=generator, dtype=grad.dtype, device=grad.device)\n"
                        "                grad = grad + std * noise",
                        "grad = grad + grad.new_empty(grad.shape).normal_(0.0, std, generator=generator)")),
         expect=[]),
    dict(exercise="add_grad_noise", kind='wrong', why='one noise tensor added to every entry', clause="separate",
         source=edited(reference("add_grad_noise"),
                       ("        noisy = []", "        noisy, noise = [], None"),
                       ("                noise = torch.randn(",
                        "                if noise is None:  # one draw for every entry\n"
                        "                    noise = torch.randn(")),
         mistake="05.add_grad_noise.same-noise-for-entries",
         expect=['the same noise went into both', 'new noise for each entry']),
    dict(exercise="add_grad_noise", kind='wrong', why='returns grad_output unchanged', clause="adds",
         source=edited(reference("add_grad_noise"), ("return tuple(noisy)", "return grad_output")),
         mistake="05.add_grad_noise.returns-grad-output-unchanged",
         expect=["reached the module's backward unchanged", "your full backward pre-hook ran, but returned "
                 "grad_output unchanged"]),
    dict(exercise="add_grad_noise", kind='wrong', why='noise broadcast over the batch', clause="iid",
         source=edited(reference("add_grad_noise"), ("torch.randn(grad.shape,", "torch.randn(grad.shape[1:],")),
         mistake="05.add_grad_noise.noise-broadcast",
         expect=['repeats itself along dimension 0', 'full shape']),
    dict(exercise="add_grad_noise", kind='wrong', why='reseeds torch on every call', clause="fresh",
         source=edited(reference("add_grad_noise"),
                       ("        noisy = []", "        torch.manual_seed(0)\n        noisy = []")),
         mistake="05.add_grad_noise.noise-repeated",
         expect=['exactly the same noise', 'do not reseed']),
    dict(exercise="add_grad_noise", kind='wrong', why='noise replaces the gradient', clause="adds",
         source=edited(reference("add_grad_noise"), ("grad = grad + std * noise", "grad = std * noise")),
         mistake="05.add_grad_noise.noise-depends-on-input",
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
         source=edited(reference("add_grad_noise"),
                       ("noise = torch.randn(grad.shape, generator=generator, dtype=grad.dtype, device=grad.device)\n"
                        "                grad = grad + std * noise",
                        "grad = torch.normal(grad, std, generator=generator)")),
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
    dict(exercise="add_grad_noise", kind="wrong", why="noise in the pre-hook and again on grad_input", clause="reaches",
         source=edited(reference("add_grad_noise"),
                       ("    return module.register_full_backward_pre_hook(add_noise)",
                        "    def after(module, grad_input, grad_output):\n"
                        "        return add_noise(module, grad_input)\n\n"
                        "    module.register_full_backward_hook(after)\n"
                        "    return module.register_full_backward_pre_hook(add_noise)")),
         mistake="05.add_grad_noise.wrong-input-grad",
         expect=["the input's gradient is", "computed from the noisy grad_output your pre-hook returned"]),
    dict(exercise="add_grad_noise", kind="wrong", why="a new generator from the given one's seed on every call",
         clause="fresh",
         source=edited(reference("add_grad_noise"),
                       ("        noisy = []",
                        "        fresh = None\n"
                        "        if generator is not None:\n"
                        "            fresh = torch.Generator().manual_seed(generator.initial_seed())\n"
                        "        noisy = []"),
                       ("generator=generator,", "generator=fresh,")),
         mistake="05.add_grad_noise.noise-repeated",
         expect=["exactly the same noise", "do not reseed a generator on each call"]),
    dict(exercise="add_grad_noise", kind="wrong", why="draws from a copy of the generator", clause="generator",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    own = None\n"
                        "    if generator is not None:\n"
                        "        own = torch.Generator()\n"
                        "        own.set_state(generator.get_state())  # leaves the caller's generator where it was\n\n"
                        "    def add_noise(module, grad_output):\n"),
                       ("generator=generator,", "generator=own,")),
         mistake="05.add_grad_noise.generator-not-advanced",
         expect=["same state as before the call", "a copy of the generator", "generator=generator"]),

    # ------------------------------------------------------------------ one clause broken at a time
    dict(exercise="record_grad_output_norms", kind="wrong", why="skips the model itself", clause="root",
         source=edited(reference("record_grad_output_norms"),
                       ("for name, module in model.named_modules():",
                        "for name, module in list(model.named_modules())[1:]:  # skip the model")),
         mistake="05.record_grad_output_norms.skips-root-module",
         expect=["''", "the model itself", "hook it too"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="skips the unnamed module", clause="root",
         source=edited(reference("record_grad_output_norms"),
                       ("if not isinstance(module, layer_types):",
                        "if not name or not isinstance(module, layer_types):")),
         mistake="05.record_grad_output_norms.skips-root-module",
         expect=["''", "the model itself"]),
    dict(exercise="record_grad_output_norms", kind="wrong",
         why="every name of a shared module (remove_duplicate=False)",
         clause="shared-name",
         source=edited(reference("record_grad_output_norms"),
                       ("model.named_modules():", "model.named_modules(remove_duplicate=False):")),
         mistake="05.record_grad_output_norms.shared-module-under-two-names",
         expect=["same module", "hook it once", "named_modules()"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="norm with numpy", clause="create-graph",
         source=edited(reference("record_grad_output_norms"),
                       ("import torch\n", "import numpy as np\nimport torch\n"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name].append(float(np.linalg.norm(grad_output[0].numpy())))")),
         mistake="05.record_grad_output_norms.numpy-in-backward",
         expect=["create_graph=True", "require grad", ".item()"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="squares grad_output in place to take its norm",
         clause="no-change",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name].append(grad_output[0].pow_(2).sum().sqrt().item())")),
         mistake="05.record_grad_output_norms.in-place",
         expect=["changed in place", "change no gradient"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="a pre-hook that returns the normalised gradient",
         clause="no-change",
         source=edited(reference("record_grad_output_norms"),
                       ("def hook(module, grad_input, grad_output, name=name):\n"
                        "            norms[name].append(grad_output[0].norm().item())",
                        "def hook(module, grad_output, name=name):\n"
                        "            norm = grad_output[0].norm()\n"
                        "            norms[name].append(norm.item())\n"
                        "            return (grad_output[0] / (norm + 1e-12),) + tuple(grad_output[1:])"),
                       ("register_full_backward_hook", "register_full_backward_pre_hook")),
         mistake="05.record_grad_output_norms.changes-gradients",
         expect=["changed the gradients", "change no gradient"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="returns grad_output from the full backward hook",
         clause="no-change",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name].append(grad_output[0].norm().item())\n            return grad_output")),
         mistake="05.record_grad_output_norms.changes-gradients",
         expect=["changed the size", "changes no gradient", "without a `return`"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="returns a generator of grad_input",
         clause="no-change",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name].append(grad_output[0].norm().item())\n            return (g for g in grad_input)")),
         mistake="05.record_grad_output_norms.changes-gradients",
         expect=["generator", "changes no gradient"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="handles in a dict by name", clause="handles",
         source=edited(reference("record_grad_output_norms"),
                       ("handles = []", "handles = {}"),
                       ("handles.append(module.register_full_backward_hook(hook))",
                        "handles[name] = module.register_full_backward_hook(hook)")),
         mistake="05.record_grad_output_norms.handles-not-a-list",
         expect=["expected a list of the handles"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="a call-counting forward hook left behind",
         clause="removes",
         source=edited(reference("record_grad_output_norms"),
                       ("        handles.append(module.register_full_backward_hook(hook))",
                        "        handles.append(module.register_full_backward_hook(hook))\n"
                        "        module.register_forward_hook(lambda module, args, output: None)  # calls")),
         mistake="05.record_grad_output_norms.hook-left-registered",
         expect=["hooks are still registered", "handle of every hook"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="modules as keys", clause="name",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name] = []", "norms[module] = []"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[module].append(grad_output[0].norm().item())")),
         mistake="05.record_grad_output_norms.names-not-strings",
         expect=["names that model.named_modules() gives"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="the norm of the weight's gradient",
         clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name].append(module.weight.grad.norm().item())")),
         mistake="05.record_grad_output_norms.weight-grad-norm",
         expect=["weight gradient", "may not be written yet", "record grad_output[0]"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="mean of per-row norms", clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_output[0].norm(dim=-1).mean().item()")),
         mistake="05.record_grad_output_norms.mean-row-norm",
         expect=["expected [", "the L2 norm of grad_output[0]"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="returns only the dict", clause="returns-pair",
         source=edited(reference("record_grad_output_norms"), ("return norms, handles", "return norms")),
         mistake="05.record_grad_output_norms.not-a-pair",
         expect=["expected a pair (norms, handles)"]),
    dict(exercise="record_grad_output_norms", kind="right", why="one global full backward hook and a name table",
         source="""
import torch
from torch import nn
from torch.nn.modules.module import register_module_full_backward_hook


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    names = {module: name for name, module in model.named_modules() if isinstance(module, layer_types)}
    norms = {name: [] for name in names.values()}

    def hook(module, grad_input, grad_output):
        if module in names:
            norms[names[module]].append(torch.linalg.vector_norm(grad_output[0]).item())

    return norms, [register_module_full_backward_hook(hook)]
""",
         expect=[]),
    dict(exercise="record_grad_output_norms", kind="right", why="hooks registered with prepend=True",
         source=edited(reference("record_grad_output_norms"),
                       ("module.register_full_backward_hook(hook)",
                        "module.register_full_backward_hook(hook, prepend=True)")),
         expect=[]),

    dict(exercise="clip_grad_input", kind="wrong", why="clips under torch.no_grad()", clause="create-graph",
         source=edited(reference("clip_grad_input"),
                       ("        clipped = []\n"
                        "        for grad in grad_input:\n"
                        "            if grad is not None and grad.norm() > max_norm:\n"
                        "                grad = grad * (max_norm / grad.norm())\n"
                        "            clipped.append(grad)\n",
                        "        clipped = []\n"
                        "        with torch.no_grad():\n"
                        "            for grad in grad_input:\n"
                        "                if grad is not None and grad.norm() > max_norm:\n"
                        "                    grad = grad * (max_norm / grad.norm())\n"
                        "                clipped.append(grad)\n")),
         mistake="05.clip_grad_input.detaches-grad",
         expect=["create_graph=True", "part of the graph", "torch.no_grad()"]),
    dict(exercise="clip_grad_input", kind="wrong", why="returns detached gradients", clause="create-graph",
         source=edited(reference("clip_grad_input"),
                       ("clipped.append(grad)", "clipped.append(None if grad is None else grad.detach())")),
         mistake="05.clip_grad_input.detaches-grad",
         expect=["create_graph=True", "part of the graph", "detach()"]),
    dict(exercise="clip_grad_input", kind="wrong", why="clip_grad_norm_ on the gradients", clause="clip-above",
         source="""
import torch


def clip_grad_input(module, max_norm):
    def clip(module, grad_input, grad_output):
        torch.nn.utils.clip_grad_norm_([g for g in grad_input if g is not None], max_norm)
        return grad_input

    return module.register_full_backward_hook(clip)
""",
         mistake="05.clip_grad_input.returns-grad-input-unchanged",
         expect=["grad_input unchanged", "clip_grad_norm_"]),
    dict(exercise="clip_grad_input", kind="wrong", why="a list built by assignment", clause="tuple",
         source=edited(reference("clip_grad_input"), ("return tuple(clipped)", "return clipped")),
         mistake="05.clip_grad_input.not-none-without-input-grad",
         expect=["return a tuple (not a list)"]),
    dict(exercise="clip_grad_input", kind="wrong", why="returns the handle of a second hook", clause="handle",
         source=edited(reference("clip_grad_input"),
                       ("return module.register_full_backward_hook(clip)",
                        "module.register_full_backward_hook(clip)\n"
                        "    return module.register_forward_hook(lambda module, args, output: None)")),
         mistake="05.clip_grad_input.handle-not-of-hook",
         expect=["after handle.remove()", "still clipped", "the handle of the hook you registered"]),
    dict(exercise="clip_grad_input", kind="right", why="registered with prepend=True",
         source=edited(reference("clip_grad_input"),
                       ("module.register_full_backward_hook(clip)",
                        "module.register_full_backward_hook(clip, prepend=True)")),
         expect=[]),
    dict(exercise="clip_grad_input", kind="right", why="torch.where on the two results",
         source=edited(reference("clip_grad_input"),
                       ("            if grad is not None and grad.norm() > max_norm:\n"
                        "                grad = grad * (max_norm / grad.norm())",
                        "            if grad is not None:\n"
                        "                norm = grad.norm()\n"
                        "                grad = torch.where(norm > max_norm, grad * max_norm / "
                        "norm.clamp_min(1e-30), grad)")),
         expect=[]),

    dict(exercise="add_grad_noise", kind="wrong", why="noise drawn in float64", clause="shape-dtype",
         source=edited(reference("add_grad_noise"), ("dtype=grad.dtype, ", "dtype=torch.float64, ")),
         mistake="05.add_grad_noise.wrong-grad-dtype",
         expect=["changed the type of value", "same dtype"]),
    dict(exercise="add_grad_noise", kind="wrong", why="drops the None entries", clause="length",
         source=edited(reference("add_grad_noise"),
                       ("            noisy.append(grad)\n", "                noisy.append(grad)\n")),
         mistake="05.add_grad_noise.wrong-tuple-length",
         expect=["invalid number of grad_output", "do not drop entries"]),
    dict(exercise="add_grad_noise", kind="wrong", why="torch.normal with mean and std swapped", clause="mean-std",
         source=edited(reference("add_grad_noise"),
                       ("torch.randn(grad.shape, generator=generator, dtype=grad.dtype, device=grad.device)",
                        "torch.normal(std, 1.0, grad.shape, generator=generator, dtype=grad.dtype)"),
                       ("grad = grad + std * noise", "grad = grad + noise")),
         mistake="05.add_grad_noise.noise-not-centred",
         expect=["expected mean 0"]),
    dict(exercise="add_grad_noise", kind="wrong", why="forgets to return the handle", clause="handle",
         source=edited(reference("add_grad_noise"),
                       ("    return module.register_full_backward_pre_hook(add_noise)",
                        "    module.register_full_backward_pre_hook(add_noise)")),
         mistake="05.add_grad_noise.no-handle",
         expect=["returned None", "expected the handle"]),
    dict(exercise="add_grad_noise", kind="wrong", why="uses the deprecated register_backward_hook", clause="pre-hook",
         source=edited(reference("add_grad_noise"),
                       ("def add_noise(module, grad_output):", "def add_noise(module, grad_input, grad_output):"),
                       ("for grad in grad_output:", "for grad in grad_input:"),
                       ("register_full_backward_pre_hook(add_noise)", "register_backward_hook(add_noise)")),
         mistake="05.add_grad_noise.deprecated-backward-hook",
         expect=["deprecated register_backward_hook", "register_full_backward_pre_hook"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise on the first row only", clause="iid",
         source=edited(reference("add_grad_noise"), ("grad = grad + std * noise", "grad = grad + std * noise[:1]")),
         mistake="05.add_grad_noise.noise-broadcast",
         expect=["repeats itself along dimension 0"]),
    dict(exercise="add_grad_noise", kind="right", why="registered with prepend=True",
         source=edited(reference("add_grad_noise"),
                       ("register_full_backward_pre_hook(add_noise)",
                        "register_full_backward_pre_hook(add_noise, prepend=True)")),
         expect=[]),
    dict(exercise="add_grad_noise", kind="right", why="noise only while training",
         source=edited(reference("add_grad_noise"),
                       ("            if grad is not None:", "            if grad is not None and module.training:")),
         expect=[]),

    # ------------------------------------------------------------------ patterns from public code
    dict(exercise="record_grad_output_norms", kind="wrong", why="a module-to-name table keeps the last name",
         clause="shared-name",
         source=edited(reference("record_grad_output_norms"),
                       ("    for name, module in model.named_modules():",
                        "    last_name = {module: name for name, module in "
                        "model.named_modules(remove_duplicate=False)}\n"
                        "    for module, name in last_name.items():")),
         mistake="05.record_grad_output_norms.shared-module-under-two-names",
         expect=["'again' is the same module as 'layer'", "hook it once"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why="hooks every module but containers (model.apply)",
         clause="types",
         source=edited(reference("record_grad_output_norms"),
                       ("if not isinstance(module, layer_types):", "if isinstance(module, nn.Sequential):")),
         mistake="05.record_grad_output_norms.extra-modules",
         expect=["record only modules that are instances of layer_types"]),
    dict(exercise="clip_grad_input", kind="wrong", why="clips each row by its own norm, as per-sample clipping",
         clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("            if grad is not None and grad.norm() > max_norm:\n"
                        "                grad = grad * (max_norm / grad.norm())\n",
                        "            if grad is not None:\n"
                        "                rows = grad.flatten(1).norm(dim=1).view(-1, *[1] * (grad.dim() - 1))\n"
                        "                grad = grad * (max_norm / rows).clamp(max=1.0)\n")),
         mistake="05.clip_grad_input.per-row-norm",
         expect=["clipped each row", "norm of the whole tensor"]),
    dict(exercise="add_grad_noise", kind="wrong", why="annealed noise, std / (1 + t) ** 0.55", clause="mean-std",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    calls = [0]\n\n"
                        "    def add_noise(module, grad_output):\n"
                        "        sigma = std / (1 + calls[0]) ** 0.55\n"
                        "        calls[0] += 1\n"),
                       ("grad + std * noise", "grad + sigma * noise")),
         mistake="05.add_grad_noise.noise-wrong-std",
         expect=["second backward", "standard deviation"]),
    dict(exercise="add_grad_noise", kind="wrong", why="noise scaled by the gradient's norm", clause="adds",
         source=edited(reference("add_grad_noise"),
                       ("grad = grad + std * noise", "grad = grad + std * grad.norm() * noise")),
         mistake="05.add_grad_noise.noise-wrong-std",
         expect=["standard deviation"]),

    dict(exercise="add_grad_noise", kind="wrong", why="a clock-seeded generator of its own when none is given",
         clause="global",
         source=edited(reference("add_grad_noise"),
                       ("def add_grad_noise(module, std, generator=None):\n",
                        "def add_grad_noise(module, std, generator=None):\n"
                        "    if generator is None:\n"
                        "        import time\n"
                        "        generator = torch.Generator().manual_seed(time.time_ns() % 2 ** 31)\n")),
         mistake="05.add_grad_noise.noise-not-from-global-state",
         expect=["torch.manual_seed", "global random state", "not from a generator of your own"]),
    dict(exercise="add_grad_noise", kind="right", why="falls back to torch.default_generator",
         source=edited(reference("add_grad_noise"),
                       ("generator=generator,", "generator=generator or torch.default_generator,")),
         expect=[]),
    dict(exercise="clip_grad_input", kind="wrong", why="renorm along the batch dimension", clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("            if grad is not None and grad.norm() > max_norm:\n"
                        "                grad = grad * (max_norm / grad.norm())\n",
                        "            if grad is not None:\n"
                        "                grad = grad.renorm(2, 0, max_norm)\n")),
         mistake="05.clip_grad_input.per-row-norm",
         expect=["clipped each row", "norm of the whole tensor"]),

    dict(exercise="record_grad_output_norms", kind="right", why="the hook returns equal copies of grad_input",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name].append(grad_output[0].norm().item())\n"
                        "            return tuple(None if g is None else g.clone() for g in grad_input)")),
         expect=[]),
    dict(exercise="record_grad_output_norms", kind="right", why="a pre-hook that returns grad_output as it came",
         source=edited(reference("record_grad_output_norms"),
                       ("def hook(module, grad_input, grad_output, name=name):",
                        "def hook(module, grad_output, name=name):"),
                       ("register_full_backward_hook(hook)", "register_full_backward_pre_hook(hook)"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name].append(grad_output[0].norm().item())\n"
                        "            return grad_output")),
         expect=[]),

    # ------------------------------------------------------------------ a stranger's submissions
    dict(exercise="record_grad_output_norms", kind="wrong", why='skips frozen layers', clause="frozen",
         source=edited(reference("record_grad_output_norms"),
                       ("            continue\n",
                        "            continue\n"
                        "        if not any(p.requires_grad for p in module.parameters()):\n"
                        "            continue  # frozen: nothing to monitor\n")),
         mistake="05.record_grad_output_norms.skips-frozen-modules",
         expect=['frozen (requires_grad=false)', 'hook every module of layer_types']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='module-level dict shared between calls',
         clause="per-call",
         source=edited(reference("record_grad_output_norms"),
                       ("def record_grad_output_norms", "NORMS = {}\n\n\ndef record_grad_output_norms"),
                       ("norms = {}", "norms = NORMS"),
                       ("norms[name] = []", "norms.setdefault(name, [])")),
         mistake="05.record_grad_output_norms.shared-dict",
         expect=['same norms dict', 'new dict in each call']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='lists stored on the modules, looked up at firing time',
         clause="per-call",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name] = []", "module.grad_norms = []\n        norms[name] = module.grad_norms"),
                       ("def hook(module, grad_input, grad_output, name=name):\n"
                        "            norms[name].append(",
                        "def hook(module, grad_input, grad_output):\n"
                        "            module.grad_norms.append(")),
         mistake="05.record_grad_output_norms.state-shared-between-calls",
         expect=['called twice', 'hooks of its own', 'a list kept as an attribute of the module']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='records only in training mode', clause="eval",
         source=edited(reference("record_grad_output_norms"),
                       ("            norms[name].append(grad_output[0].norm().item())",
                        "            if module.training:\n"
                        "                norms[name].append(grad_output[0].norm().item())")),
         mistake="05.record_grad_output_norms.skips-eval-mode",
         expect=['eval mode', 'do not test module.training']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='named_modules with a prefix', clause="name",
         source=edited(reference("record_grad_output_norms"),
                       ("in model.named_modules():", 'in model.named_modules(prefix="model"):')),
         mistake="05.record_grad_output_norms.unknown-module-names",
         expect=["no submodule of the model is named 'model.", "such as 'blocks.0.linear'"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why='RMS instead of the norm', clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_output[0].pow(2).mean().sqrt().item()")),
         mistake="05.record_grad_output_norms.rms-norm",
         expect=['[0.34029, 0.28235]', 'the l2 norm of grad_output[0]']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='handles as a tuple', clause="handles",
         source=edited(reference("record_grad_output_norms"),
                       ("return norms, handles", "return norms, tuple(handles)")),
         mistake="05.record_grad_output_norms.handles-not-a-list",
         expect=['returned tuple', 'expected a list of the handles']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='default layer_types Linear only', clause="types",
         source=edited(reference("record_grad_output_norms"),
                       ("layer_types=(nn.Linear, nn.Conv2d)", "layer_types=(nn.Linear,)")),
         mistake="05.record_grad_output_norms.misses-layer-types",
         expect=["entries for ['classifier']", 'use the layer_types you are given']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='class names as keys', clause="name",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name] = []", "name = module._get_name()\n        norms.setdefault(name, [])")),
         mistake="05.record_grad_output_norms.unknown-module-names",
         expect=["no submodule of the model is named 'linear'"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why='skips modules once seen via a flag on the module',
         clause="per-call",
         source=edited(reference("record_grad_output_norms"),
                       ("if not isinstance(module, layer_types):",
                        'if not isinstance(module, layer_types) or getattr(module, "_norm_hooked", False):'),
                       ("norms[name] = []", "module._norm_hooked = True\n        norms[name] = []")),
         mistake="05.record_grad_output_norms.state-shared-between-calls",
         expect=['called twice', "the second call's no entries", 'a mark that the module is hooked already']),
    dict(exercise="record_grad_output_norms", kind="wrong",
         why='registers a backward hook in a forward hook on every forward',
         clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("        def hook(module, grad_input, grad_output, name=name):\n"
                        "            norms[name].append(grad_output[0].norm().item())\n\n"
                        "        handles.append(module.register_full_backward_hook(hook))",
                        "        def hook(module, args, output, name=name):\n"
                        "            output.register_hook(lambda grad: norms[name].append(grad.norm().item()))\n\n"
                        "        handles.append(module.register_forward_hook(hook))")),
         mistake="05.record_grad_output_norms.tensor-hook-on-output",
         expect=["'tuple' object has no attribute 'register_hook'"]),
    dict(exercise="record_grad_output_norms", kind="wrong", why='only leaf modules', clause="types",
         source=edited(reference("record_grad_output_norms"),
                       ("if not isinstance(module, layer_types):",
                        "if not isinstance(module, layer_types) or list(module.children()):")),
         mistake="05.record_grad_output_norms.misses-layer-types",
         expect=["expected entries for exactly ['blocks.0', 'blocks.0.act'",
                 'keep every module that is an instance of one of layer_types']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='max abs instead of L2', clause="grad-output-0",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_output[0].abs().max().item()")),
         mistake="05.record_grad_output_norms.max-abs-norm",
         expect=['[1.2412, 0.66326]', 'the l2 norm of grad_output[0]']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='hooks only modules with a weight', clause="types",
         source=edited(reference("record_grad_output_norms"),
                       ("if not isinstance(module, layer_types):",
                        'if not isinstance(module, layer_types) or not hasattr(module, "weight"):')),
         mistake="05.record_grad_output_norms.misses-layer-types",
         expect=['entries for no module', 'keep every module that is an instance of one of layer_types']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='removes its own hook after the first firing',
         clause="each-backward",
         source=edited(reference("record_grad_output_norms"),
                       ("        def hook(module, grad_input, grad_output, name=name):\n"
                        "            norms[name].append(grad_output[0].norm().item())\n\n"
                        "        handles.append(module.register_full_backward_hook(hook))",
                        "        box = {}\n\n"
                        "        def hook(module, grad_input, grad_output, name=name, box=box):\n"
                        "            norms[name].append(grad_output[0].norm().item())\n"
                        '            box["h"].remove()\n\n'
                        '        box["h"] = module.register_full_backward_hook(hook)\n'
                        '        handles.append(box["h"])')),
         mistake="05.record_grad_output_norms.wrong-entry-count",
         expect=['has 1 entries; expected 2', 'append a new entry each time the hook fires']),
    dict(exercise="record_grad_output_norms", kind="right",
         why='functools.partial and torch.linalg.vector_norm, float()',
         source='''
import torch
from torch import nn


import functools

def _record(store, module, grad_input, grad_output):
    store.append(float(torch.linalg.vector_norm(grad_output[0])))

def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    wanted = [(n, m) for n, m in model.named_modules() if isinstance(m, layer_types)]
    norms = {n: [] for n, _ in wanted}
    handles = [m.register_full_backward_hook(functools.partial(_record, norms[n])) for n, m in wanted]
    return norms, handles
''',
         expect=[]),
    dict(exercise="record_grad_output_norms", kind="right", why='pre-hook, detach then double norm',
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles = {}, []
    def make(name):
        def pre(module, grad_output):
            norms.setdefault(name, []).append(grad_output[0].detach().double().norm().item())
        return pre
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            handles.append(module.register_full_backward_pre_hook(make(name)))
    return norms, handles
''',
         expect=[]),
    dict(exercise="record_grad_output_norms", kind="right", why='a monitor class with __call__ and id-keyed names',
         source='''
import torch
from torch import nn


class _Rec:
    def __init__(self, lst): self.lst = lst
    def __call__(self, module, grad_input, grad_output):
        with torch.no_grad():
            self.lst.append(grad_output[0].flatten().dot(grad_output[0].flatten()).sqrt().item())

def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms, handles, seen = {}, [], set()
    for name, module in model.named_modules(remove_duplicate=False):
        if id(module) in seen or not isinstance(module, layer_types):
            seen.add(id(module)); continue
        seen.add(id(module))
        norms[name] = []
        handles.append(module.register_full_backward_hook(_Rec(norms[name])))
    return norms, handles
''',
         expect=[]),
    dict(exercise="clip_grad_input", kind="wrong", why='returns a generator expression', clause="tuple",
         source=edited(reference("clip_grad_input"), ("return tuple(clipped)", "return (grad for grad in clipped)")),
         mistake="05.clip_grad_input.returned-generator",
         expect=['generator expression, not a tuple', 'return a tuple']),
    dict(exercise="clip_grad_input", kind="wrong", why='max_norm kept in a module-level global', clause="own-max-norm",
         source=edited(reference("clip_grad_input"),
                       ("def clip_grad_input", "MAX_NORM = None\n\n\ndef clip_grad_input"),
                       ("    def clip(module, grad_input, grad_output):\n",
                        "    global MAX_NORM\n"
                        "    MAX_NORM = max_norm\n\n"
                        "    def clip(module, grad_input, grad_output):\n"),
                       ("if grad is not None and grad.norm() > max_norm:",
                        "if grad is not None and grad.norm() > MAX_NORM:"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad * (MAX_NORM / grad.norm())")),
         mistake="05.clip_grad_input.shared-max-norm",
         expect=['that is the max_norm of the other call', 'its own call']),
    dict(exercise="clip_grad_input", kind="wrong", why='scale by max over elements (inf norm)', clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:",
                        "if grad is not None and grad.abs().max() > max_norm:"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad * (max_norm / grad.abs().max())")),
         mistake="05.clip_grad_input.max-element-norm",
         expect=['the infinity norm', 'l2 norm over all elements']),
    dict(exercise="clip_grad_input", kind="wrong", why='clips only the first time it fires', clause="every-backward",
         source=edited(reference("clip_grad_input"),
                       ("    def clip(module, grad_input, grad_output):\n",
                        '    state = {"done": False}\n\n'
                        "    def clip(module, grad_input, grad_output):\n"
                        '        if state["done"]:\n'
                        "            return None\n"
                        '        state["done"] = True\n')),
         mistake="05.clip_grad_input.clips-first-backward-only",
         expect=['backward number 2', 'clip at every backward']),
    dict(exercise="clip_grad_input", kind="wrong", why='clips only while training', clause="eval",
         source=edited(reference("clip_grad_input"),
                       ("    def clip(module, grad_input, grad_output):\n",
                        "    def clip(module, grad_input, grad_output):\n"
                        "        if not module.training:\n"
                        "            return None\n")),
         mistake="05.clip_grad_input.skips-eval-mode",
         expect=['in eval mode', 'do not test module.training']),
    dict(exercise="clip_grad_input", kind="wrong", why='copies the clipped values back with copy_',
         clause="not-in-place",
         source=edited(reference("clip_grad_input"),
                       ("grad = grad * (max_norm / grad.norm())", "grad.copy_(grad * (max_norm / grad.norm()))")),
         mistake="05.clip_grad_input.in-place",
         expect=['grad_input[0] was changed in place']),
    dict(exercise="clip_grad_input", kind="wrong", why="judges by grad_output's norm", clause="own-norm",
         source=edited(reference("clip_grad_input"),
                       ("        clipped = []", "        n = grad_output[0].norm()\n        clipped = []"),
                       ("if grad is not None and grad.norm() > max_norm:", "if grad is not None and n > max_norm:"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad * (max_norm / n)")),
         mistake="05.clip_grad_input.grad-output-norm",
         expect=['norm of grad_output[0]', 'judge each tensor of grad_input by its own norm']),
    dict(exercise="clip_grad_input", kind="wrong", why='rescales to max_norm squared', clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad * (max_norm ** 2 / grad.norm())")),
         mistake="05.clip_grad_input.wrong-clipped-value",
         expect=['(norm 9.985, max_norm 5.0)',
                 'values [3.492,',
                 'expected tensor of shape (6, 4), float32, values [0.6984,']),
    dict(exercise="clip_grad_input", kind="wrong", why='norm with .item() under create_graph into torch.tensor',
         clause="create-graph",
         source=edited(reference("clip_grad_input"),
                       ("grad = grad * (max_norm / grad.norm())",
                        "grad = torch.tensor(grad.tolist()) * (max_norm / grad.norm().item())")),
         mistake="05.clip_grad_input.detaches-grad",
         expect=['does not require grad', 'no detach()']),
    dict(exercise="clip_grad_input", kind="wrong",
         why='clips in a tensor hook on the input, registered by a forward pre-hook',
         clause="full-hook",
         source='''
import torch


def clip_grad_input(module, max_norm):
    def pre(m, args):
        for a in args:
            if isinstance(a, torch.Tensor) and a.requires_grad:
                a.register_hook(lambda g: g * (max_norm / g.norm()) if g.norm() > max_norm else g)
    return module.register_forward_pre_hook(pre)
''',
         mistake="05.clip_grad_input.clipped-after-backward-hooks",
         expect=["only after the module's full backward hooks ran", 'register_full_backward_hook']),
    dict(exercise="clip_grad_input", kind="wrong", why='normalises every tensor to max_norm', clause="keep",
         source=edited(reference("clip_grad_input"),
                       ("import torch", "import torch\nimport torch.nn.functional as F"),
                       ("if grad is not None and grad.norm() > max_norm:", "if grad is not None:"),
                       ("grad = grad * (max_norm / grad.norm())",
                        "grad = F.normalize(grad.flatten(), dim=0).view_as(grad) * max_norm")),
         mistake="05.clip_grad_input.rescales-small-grads",
         expect=['already at most max_norm; keep it unchanged']),
    dict(exercise="clip_grad_input", kind="wrong", why='division by norm plus one', clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad * (max_norm / (grad.norm() + 1.0))")),
         mistake="05.clip_grad_input.wrong-clipped-value",
         expect=['(norm 3.053, max_norm 1.0)',
                 'values [-0.09831,',
                 'expected tensor of shape (8, 5), float32, values [-0.1305,']),
    dict(exercise="clip_grad_input", kind="right", why='clone then mul_ on the copy, >=',
         source='''
import torch


def clip_grad_input(module, max_norm):
    def hook(m, grad_input, grad_output):
        out = list(grad_input)
        for i, g in enumerate(out):
            if g is None:
                continue
            norm = torch.linalg.vector_norm(g)
            if norm >= max_norm:
                out[i] = g.clone().mul_(max_norm / norm)
        return tuple(out)
    return module.register_full_backward_hook(hook)
''',
         expect=[]),
    dict(exercise="clip_grad_input", kind="right", why='F.normalize when above, functools.partial',
         source='''
import torch


import functools
import torch.nn.functional as F

def _clip(max_norm, module, grad_input, grad_output):
    return tuple(g if g is None or g.norm() <= max_norm else F.normalize(g.flatten(), dim=0).view_as(g) * max_norm
                 for g in grad_input)

def clip_grad_input(module, max_norm):
    return module.register_full_backward_hook(functools.partial(_clip, max_norm))
''',
         expect=[]),
    dict(exercise="add_grad_noise", kind="wrong", why='returns a generator expression', clause="length",
         source=edited(reference("add_grad_noise"), ("return tuple(noisy)", "return (grad for grad in noisy)")),
         mistake="05.add_grad_noise.returned-generator",
         expect=['generator expression, not a tuple', 'return a tuple']),
    dict(exercise="add_grad_noise", kind="wrong", why='std kept in a module-level global', clause="own-args",
         source=edited(reference("add_grad_noise"),
                       ("def add_grad_noise", "STD, GEN = None, None\n\n\ndef add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    global STD, GEN\n"
                        "    STD, GEN = std, generator\n\n"
                        "    def add_noise(module, grad_output):\n"),
                       ("grad + std * noise", "grad + STD * noise"),
                       ("generator=generator,", "generator=GEN,")),
         mistake="05.add_grad_noise.shared-std",
         expect=['the std of the second call', 'its own call']),
    dict(exercise="add_grad_noise", kind="right", why='noise only while training, a hook of its own',
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    def add_noise(module, grad_output):\n"
                        "        if not module.training:\n"
                        "            return None\n")),
         expect=[]),
    dict(exercise="add_grad_noise", kind="right", why='float32 noise for any gradient',
         source=edited(reference("add_grad_noise"), (", dtype=grad.dtype, device=grad.device", "")),
         expect=[]),
    dict(exercise="add_grad_noise", kind="wrong", why='numpy noise', clause="generator",
         source=edited(reference("add_grad_noise"),
                       ("import torch", "import numpy as np\nimport torch"),
                       ("torch.randn(grad.shape, generator=generator, dtype=grad.dtype, device=grad.device)",
                        "torch.from_numpy(np.random.normal(0, 1, grad.shape)).to(grad.dtype)")),
         mistake="05.add_grad_noise.noise-not-from-generator",
         expect=['two generators seeded alike', 'generator=generator']),
    dict(exercise="add_grad_noise", kind="wrong", why='std divided by the batch size, as DP-SGD', clause="mean-std",
         source=edited(reference("add_grad_noise"), ("grad + std * noise", "grad + (std / grad.shape[0]) * noise")),
         mistake="05.add_grad_noise.noise-wrong-std",
         expect=['has standard deviation 0.006031', 'expected 0.3']),
    dict(exercise="add_grad_noise", kind="wrong", why='generator created at registration when none given',
         clause="global",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    gen = generator if generator is not None else torch.Generator()\n\n"
                        "    def add_noise(module, grad_output):\n"),
                       ("generator=generator,", "generator=gen,")),
         mistake="05.add_grad_noise.noise-repeated",
         expect=['without a generator', 'two calls gave exactly the same noise']),
    dict(exercise="add_grad_noise", kind="wrong", why='noise accumulates (random walk)', clause="mean-std",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    state = {}\n\n    def add_noise(module, grad_output):\n"),
                       ("grad = grad + std * noise",
                        "state[len(noisy)] = state.get(len(noisy), 0) + std * noise\n"
                        "                grad = grad + state[len(noisy)]")),
         mistake="05.add_grad_noise.noise-wrong-std",
         expect=['on the second backward has standard deviation 0.4232', 'expected 0.3']),
    dict(exercise="add_grad_noise", kind="wrong", why='one-shot: noise on the first backward only', clause="fresh",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        '    state = {"n": 0}\n\n'
                        "    def add_noise(module, grad_output):\n"
                        '        state["n"] += 1\n'
                        '        if state["n"] > 1:\n'
                        "            return None\n")),
         mistake="05.add_grad_noise.noise-first-backward-only",
         expect=['on the second backward is the same number everywhere']),
    dict(exercise="add_grad_noise", kind="wrong", why='noise on the output in a forward hook', clause="pre-hook",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def fwd(m, args, out):
        if isinstance(out, torch.Tensor):
            return out + std * torch.randn(out.shape, generator=generator, dtype=out.dtype)
        return tuple(o + std * torch.randn(o.shape, generator=generator, dtype=o.dtype)
                     if isinstance(o, torch.Tensor) else o
                     for o in out)
    return module.register_forward_hook(fwd)
''',
         mistake="05.add_grad_noise.no-pre-hook",
         expect=["grad_output reached the module's backward unchanged", 'register a full backward pre-hook']),
    dict(exercise="add_grad_noise", kind="wrong", why='noise with std 1 (forgets std)', clause="mean-std",
         source=edited(reference("add_grad_noise"), ("grad + std * noise", "grad + noise")),
         mistake="05.add_grad_noise.noise-unscaled",
         expect=['scale the noise by std']),
    dict(exercise="add_grad_noise", kind="wrong", why='tensor hook on the output from a forward hook',
         clause="pre-hook",
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def fwd(m, args, out):
        outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]
        for o in outs:
            if o.requires_grad:
                o.register_hook(lambda g: g + std * torch.randn(g.shape, generator=generator, dtype=g.dtype))
    return module.register_forward_hook(fwd)
''',
         mistake="05.add_grad_noise.noise-after-pre-hooks",
         expect=["after the module's backward pre-hooks ran", "tensor hook on the module's output"]),
    dict(exercise="add_grad_noise", kind="right", why='randn_like with generator, normal_ fallback, list',
         source='''
import torch


def add_grad_noise(module, std, generator=None):
    def hook(m, grad_output):
        out = list(grad_output)
        for i, g in enumerate(out):
            if g is not None:
                out[i] = g + torch.randn_like(g, generator=generator).mul_(std)
        return tuple(out)
    return module.register_full_backward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="add_grad_noise", kind="right", why='class hook with torch.normal(0, std, size)',
         source='''
import torch


class _Noise:
    def __init__(self, std, generator):
        self.std, self.generator = std, generator
    def __call__(self, module, grad_output):
        return tuple(g if g is None else
                     g + torch.normal(0.0, self.std, size=g.shape, generator=self.generator, dtype=g.dtype)
                     for g in grad_output)

def add_grad_noise(module, std, generator=None):
    return module.register_full_backward_pre_hook(_Noise(std, generator))
''',
         expect=[]),
    dict(exercise="add_grad_noise", kind="wrong", why='sum converted to float32', clause="shape-dtype",
         source=edited(reference("add_grad_noise"),
                       ("grad = grad + std * noise", "grad = (grad + std * noise).float()")),
         mistake="05.add_grad_noise.wrong-grad-dtype",
         expect=['changed the type of value', 'dtype=grad.dtype']),
    dict(exercise="add_grad_noise", kind="wrong", why='generator kept in a module-level global', clause="own-args",
         source=edited(reference("add_grad_noise"),
                       ("def add_grad_noise", "_GENERATOR = None\n\n\ndef add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    global _GENERATOR\n"
                        "    _GENERATOR = generator\n\n"
                        "    def add_noise(module, grad_output):\n"),
                       ("generator=generator,", "generator=_GENERATOR,")),
         mistake="05.add_grad_noise.shared-generator",
         expect=['from second_generator', 'its own call']),
    dict(exercise="add_grad_noise", kind="wrong", why='noise with probability one half per call', clause="fresh",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    def add_noise(module, grad_output):\n"
                        "        if torch.rand(1, generator=generator).item() < 0.5:\n"
                        "            return None\n")),
         mistake="05.add_grad_noise.noise-skipped-sometimes",
         expect=['without noise', 'add noise at every call']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='dict kept on the model, looked up when the hook fires',
         clause="per-call",
         source=edited(reference("record_grad_output_norms"),
                       ("norms = {}", "model.grad_norms = {}\n    norms = model.grad_norms"),
                       ("            norms[name].append(", "            model.grad_norms[name].append(")),
         mistake="05.record_grad_output_norms.state-shared-between-calls",
         expect=['called twice', 'hooks of its own']),
    dict(exercise="record_grad_output_norms", kind="wrong", why='records nothing when grad_input[0] is None',
         clause="each-backward",
         source=edited(reference("record_grad_output_norms"),
                       ("if not isinstance(module, layer_types):",
                        "if not isinstance(module, layer_types) or isinstance(module, nn.Sequential):"),
                       ("            norms[name].append(grad_output[0].norm().item())",
                        "            if grad_output is not None and grad_output[0] is not None and "
                        "grad_input[0] is not None:\n"
                        "                norms[name].append(grad_output[0].detach().norm().item())")),
         mistake="05.record_grad_output_norms.skips-none-grad-input",
         expect=['grad_input[0] is none', 'whatever grad_input holds']),
    dict(exercise="clip_grad_input", kind="wrong", why='clips only while grad mode is off (torch.is_grad_enabled)',
         clause="create-graph",
         source=edited(reference("clip_grad_input"),
                       ("    def clip(module, grad_input, grad_output):\n",
                        "    def clip(module, grad_input, grad_output):\n"
                        "        if torch.is_grad_enabled():\n"
                        "            return None\n")),
         mistake="05.clip_grad_input.wrong-value-with-create-graph",
         expect=['create_graph=true', 'clipped as in an ordinary backward']),
    dict(exercise="add_grad_noise", kind="wrong", why='skips the noise one call in ten', clause="fresh",
         source=edited(reference("add_grad_noise"),
                       ("    def add_noise(module, grad_output):\n",
                        "    calls = [0]\n\n"
                        "    def add_noise(module, grad_output):\n"
                        "        calls[0] += 1\n"
                        "        if calls[0] % 10 == 0:\n"
                        "            return None\n")),
         mistake="05.add_grad_noise.noise-skipped-sometimes",
         expect=['on backward number 10', 'add noise at every call']),
    dict(exercise="clip_grad_input", kind="wrong", why='spectral norm: torch.linalg.norm(g, ord=2)',
         clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:",
                        "if grad is not None and torch.linalg.norm(grad, ord=2) > max_norm:"),
                       ("grad = grad * (max_norm / grad.norm())",
                        "grad = grad * (max_norm / torch.linalg.norm(grad, ord=2))")),
         mistake="05.clip_grad_input.spectral-norm",
         expect=['spectral norm', 'l2 norm over all elements']),
    dict(exercise="clip_grad_input", kind="wrong",
         why='torch.linalg.matrix_norm, per matrix on a 4-dimensional gradient',
         clause="clip-above",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:",
                        "if grad is not None and torch.linalg.matrix_norm(grad) > max_norm:"),
                       ("grad = grad * (max_norm / grad.norm())",
                        "grad = grad * (max_norm / torch.linalg.matrix_norm(grad))")),
         mistake="05.clip_grad_input.norm-over-some-dims",
         expect=['boolean value of tensor with more than one value is ambiguous', 'l2 norm over all elements']),
    dict(exercise="add_grad_noise", kind="wrong", why='one noise value per row, broadcast over the features',
         clause="iid",
         source=edited(reference("add_grad_noise"), ("torch.randn(grad.shape,", "torch.randn(grad.shape[0], 1,")),
         mistake="05.add_grad_noise.noise-broadcast",
         expect=['repeats itself along dimension 1', 'one independent value per element']),
    dict(exercise="add_grad_noise", kind="wrong", why="the generator's state restored before each entry",
         clause="separate",
         source=edited(reference("add_grad_noise"),
                       ("        for grad in grad_output:\n",
                        "        state = generator.get_state() if generator is not None else torch.get_rng_state()\n"
                        "        for grad in grad_output:\n"
                        "            if generator is not None:\n"
                        "                generator.set_state(state)\n"
                        "            else:\n"
                        "                torch.set_rng_state(state)\n")),
         mistake="05.add_grad_noise.same-noise-for-entries",
         expect=['the same noise went into both', 'draw new noise for each entry']),
    dict(exercise="record_grad_output_norms", kind="right",
         why='a list for every module name, hooks only on the wanted ones',
         source='''
import torch
from torch import nn


def record_grad_output_norms(model, layer_types=(nn.Linear, nn.Conv2d)):
    norms = {name: [] for name, _ in model.named_modules()}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            def hook(m, gi, go, out=norms[name]):
                out.append(go[0].norm().item())
            handles.append(module.register_full_backward_hook(hook))
    return norms, handles
''',
         expect=[]),
]

# predict_module_backward_order: a prediction of the events a piece of code logs (hooked/checks/event_predictions.py)
from mistakes import predicted  # noqa: E402

CLAUSES["predict_module_backward_order"] = {
    "events": "Return the events that `module_backward_events` logs",
    "order": "in the order they fire",
    "names": "one of the names the cell above logs",
}
ENTRIES += [
    dict(exercise="predict_module_backward_order", kind="wrong", clause="order", why="the forward order",
         source=predicted("predict_module_backward_order", ["bpre:0", "bwd:0", "bpre:1", "bwd:1", "bpre:2",
                                                             "bwd:2", "grad:x"]),
         mistake="05.predict_module_backward_order.forward-order",
         expect=["at index 0", "'bpre:2' fires there", "backward reaches the last layer first"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="order", why="every pre-hook first",
         source=predicted("predict_module_backward_order", ["bpre:2", "bpre:1", "bpre:0", "bwd:2", "bwd:1",
                                                             "bwd:0", "grad:x"]),
         mistake="05.predict_module_backward_order.pre-hooks-all-first",
         expect=["at index 1", "each layer's pre-hook and hook come as a pair"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="order", why="the hook before the pre-hook",
         source=predicted("predict_module_backward_order", ["bwd:2", "bpre:2", "bwd:1", "bpre:1", "bwd:0",
                                                             "bpre:0", "grad:x"]),
         mistake="05.predict_module_backward_order.hook-before-pre-hook",
         expect=["at index 0", "its full backward hook after it"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="order", why="x's gradient before layer 0's hook",
         source=predicted("predict_module_backward_order", ["bpre:2", "bwd:2", "bpre:1", "bwd:1", "bpre:0",
                                                             "grad:x", "bwd:0"]),
         mistake="05.predict_module_backward_order.tensor-hook-too-early",
         expect=["at index 5", "the tensor hook on x fires after layer 0's full backward hook"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="events", why="a set of events",
         source="def predict_module_backward_order():\n    return {'bpre:2', 'bwd:2', 'grad:x'}\n",
         mistake="05.predict_module_backward_order.not-a-list",
         expect=["returned a set (a set has no order)"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="names", why="the Tanh named by its class",
         source=predicted("predict_module_backward_order", ["bpre:2", "bwd:2", "bpre:tanh", "bwd:tanh", "bpre:0",
                                                             "bwd:0", "grad:x"]),
         mistake="05.predict_module_backward_order.unknown-event",
         expect=["'bpre:tanh' at index 2, which is not an event this code logs"]),
    dict(exercise="predict_module_backward_order", kind="right", why="backward, pre and tensor spellings, a tuple",
         source=predicted("predict_module_backward_order", ("pre:2", "backward:2", "backward_pre:1", "BWD:1",
                                                             "backward-pre : 0", "backward:0", "tensor:x")),
         expect=[]),
]
# The adversary pass on predict_module_backward_order: x first, the Tanh left out, an event once too often.
_BACKWARD = ["bpre:2", "bwd:2", "bpre:1", "bwd:1", "bpre:0", "bwd:0", "grad:x"]
ENTRIES += [
    dict(exercise="predict_module_backward_order", kind="wrong", clause="order", why="x's gradient first",
         source=predicted("predict_module_backward_order", _BACKWARD[-1:] + _BACKWARD[:-1]),
         mistake="05.predict_module_backward_order.tensor-hook-too-early",
         expect=["at index 0", "you predicted 'grad:x'",
                 "the tensor hook on x fires after layer 0's full backward hook, last"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="events", why="the Tanh has no hooks",
         source=predicted("predict_module_backward_order", _BACKWARD[:2] + _BACKWARD[4:]),
         mistake="05.predict_module_backward_order.skips-parameterless-layer",
         expect=["at index 2", "'bpre:1' fires there", "layer 1 is the tanh", "a module with hooks of its own"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="events", why="x's tensor hook twice",
         source=predicted("predict_module_backward_order", _BACKWARD + ["grad:x"]),
         mistake="05.predict_module_backward_order.hook-fires-twice",
         expect=["at index 7", "the log ends before it",
                 "each of its hooks fires once, and so does the tensor hook on x"]),
]
# Named mistakes that no entry above produced: one entry each, written as the reference with one change.
ENTRIES += [
    dict(exercise="record_grad_output_norms", kind="wrong", clause="per-call",
         why="handles that clear every backward hook of the module",
         source=edited(reference("record_grad_output_norms"),
                       ("def record_grad_output_norms(",
                        "class Clearer:\n"
                        "    def __init__(self, module):\n"
                        "        self.module = module\n\n"
                        "    def remove(self):\n"
                        "        self.module._backward_hooks.clear()\n\n\n"
                        "def record_grad_output_norms("),
                       ("handles.append(module.register_full_backward_hook(hook))",
                        "module.register_full_backward_hook(hook)\n        handles.append(Clearer(module))")),
         mistake="05.record_grad_output_norms.handles-of-other-call",
         expect=["after removing the first call's handles", "must stop that call's hooks only"]),
    dict(exercise="record_grad_output_norms", kind="wrong", clause="each-backward",
         why="skips a layer whose input gradient is all zeros",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "if grad_input[0].any():\n                norms[name].append(grad_output[0].norm().item())")),
         mistake="05.record_grad_output_norms.none-entry-not-skipped",
         expect=["NoneType", "skip None entries"]),
    dict(exercise="record_grad_output_norms", kind="wrong", clause="returns-pair",
         why="norms as a list of (name, list) pairs",
         source=edited(reference("record_grad_output_norms"),
                       ("return norms, handles", "return list(norms.items()), handles")),
         mistake="05.record_grad_output_norms.norms-not-a-dict",
         expect=["as norms; expected a dict from module name to a list of floats"]),
    dict(exercise="record_grad_output_norms", kind="wrong", clause="float", why="a NumPy value, detached first",
         source=edited(reference("record_grad_output_norms"),
                       ("grad_output[0].norm().item()", "grad_output[0].norm().detach().numpy()")),
         mistake="05.record_grad_output_norms.not-a-float",
         expect=["expected Python floats (tensor.norm().item())"]),
    dict(exercise="record_grad_output_norms", kind="wrong", clause="handles", why="the hook functions as handles",
         source=edited(reference("record_grad_output_norms"),
                       ("handles.append(module.register_full_backward_hook(hook))",
                        "module.register_full_backward_hook(hook)\n        handles.append(hook)")),
         mistake="05.record_grad_output_norms.not-handles",
         expect=["each must be", "remove() method"]),
    dict(exercise="record_grad_output_norms", kind="wrong", clause="each-backward",
         why="stores the latest norm instead of a list",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name] = grad_output[0].norm().item()")),
         mistake="05.record_grad_output_norms.number-not-list",
         expect=["expected a list with one float per backward", "do not store a single number"]),
    dict(exercise="record_grad_output_norms", kind="wrong", clause="each-backward",
         why="inserts each norm at the front",
         source=edited(reference("record_grad_output_norms"),
                       ("norms[name].append(grad_output[0].norm().item())",
                        "norms[name].insert(0, grad_output[0].norm().item())")),
         mistake="05.record_grad_output_norms.wrong-order",
         expect=["in the wrong order"]),
    dict(exercise="clip_grad_input", kind="wrong", clause="handle", why="returns the handle in a list",
         source=edited(reference("clip_grad_input"),
                       ("return module.register_full_backward_hook(clip)",
                        "return [module.register_full_backward_hook(clip)]")),
         mistake="05.clip_grad_input.handle-in-a-list",
         expect=["not in a list"]),
    dict(exercise="clip_grad_input", kind="wrong", clause="tuple", why="returns the clipped tensors as lists",
         source=edited(reference("clip_grad_input"),
                       ("clipped.append(grad)", "clipped.append(grad if grad is None else grad.tolist())")),
         mistake="05.clip_grad_input.entry-not-a-tensor",
         expect=["but hook returned", "must be a tensor"]),
    dict(exercise="clip_grad_input", kind="wrong", clause="clip-above",
         why="also clamps the input's gradient in a tensor hook",
         source=edited(reference("clip_grad_input"),
                       ("    return module.register_full_backward_hook(clip)",
                        "    def pre(module, args):\n"
                        "        for a in args:\n"
                        "            if isinstance(a, torch.Tensor) and a.requires_grad:\n"
                        "                a.register_hook(lambda g: g.clamp(-max_norm / 4, max_norm / 4))\n\n"
                        "    module.register_forward_pre_hook(pre)\n"
                        "    return module.register_full_backward_hook(clip)")),
         mistake="05.clip_grad_input.input-grad-differs",
         expect=["received the gradient", "expected what your hook returned for it"]),
    dict(exercise="clip_grad_input", kind="wrong", clause="keep", why="normalises, then scales by the clamped norm",
         source=edited(reference("clip_grad_input"),
                       ("if grad is not None and grad.norm() > max_norm:\n"
                        "                grad = grad * (max_norm / grad.norm())",
                        "if grad is not None:\n"
                        "                grad = grad / grad.norm() * grad.norm().clamp(max=max_norm)")),
         mistake="05.clip_grad_input.nan-on-zero-grad",
         expect=["dividing by the norm of a zero gradient gives nan"]),
    dict(exercise="clip_grad_input", kind="wrong", clause="create-graph", why="compares the norm through NumPy",
         source=edited(reference("clip_grad_input"),
                       ("grad.norm() > max_norm:", "grad.norm().numpy() > max_norm:")),
         mistake="05.clip_grad_input.numpy-in-backward",
         expect=["numpy()", "create_graph=True"]),
    dict(exercise="clip_grad_input", kind="wrong", clause="clip-above", why="the clipped tensor in float64",
         source=edited(reference("clip_grad_input"),
                       ("grad = grad * (max_norm / grad.norm())", "grad = grad.double() * (max_norm / grad.norm())")),
         mistake="05.clip_grad_input.wrong-grad-dtype",
         expect=["another dtype than the gradient it replaces"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="handle", why="returns the handle in a list",
         source=edited(reference("add_grad_noise"),
                       ("return module.register_full_backward_pre_hook(add_noise)",
                        "return [module.register_full_backward_pre_hook(add_noise)]")),
         mistake="05.add_grad_noise.handle-in-a-list",
         expect=["not in a list"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="handle", why="returns the handle of a second hook",
         source=edited(reference("add_grad_noise"),
                       ("    return module.register_full_backward_pre_hook(add_noise)",
                        "    module.register_full_backward_pre_hook(add_noise)\n"
                        "    return module.register_full_backward_pre_hook(lambda module, grad_output: None)")),
         mistake="05.add_grad_noise.handle-not-of-hook",
         expect=["after handle.remove()", "still changes grad_output"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="iid", why="one random number for the whole tensor",
         source=edited(reference("add_grad_noise"), ("torch.randn(grad.shape,", "torch.randn((),")),
         mistake="05.add_grad_noise.noise-constant",
         expect=["is the same number everywhere"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="normal", why="the log of normal noise",
         source=edited(reference("add_grad_noise"), ("grad = grad + std * noise", "grad = grad + std * noise.log()")),
         mistake="05.add_grad_noise.noise-not-finite",
         expect=["contains inf or nan"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="mean-std", why="std read as the variance",
         source=edited(reference("add_grad_noise"), ("grad = grad + std * noise", "grad = grad + std ** 0.5 * noise")),
         mistake="05.add_grad_noise.noise-sqrt-std",
         expect=["that is the square root of std"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="none", why="replaces None entries by zeros",
         source=edited(reference("add_grad_noise"),
                       ("            noisy.append(grad)", "            noisy.append(torch.zeros(()) if grad is None else grad)")),
         mistake="05.add_grad_noise.none-replaced",
         expect=["is none, and your pre-hook returned", "keep none in place"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="length", why="the noise as lists",
         source=edited(reference("add_grad_noise"),
                       ("            noisy.append(grad)", "            noisy.append(grad if grad is None else grad.tolist())")),
         mistake="05.add_grad_noise.entry-not-a-tensor",
         expect=["but hook returned", "must be a tensor"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="shape-dtype", why="noise added to the flattened gradient",
         source=edited(reference("add_grad_noise"),
                       ("noise = torch.randn(grad.shape,", "noise = torch.randn(grad.numel(),"),
                       ("grad = grad + std * noise", "grad = grad.flatten() + std * noise")),
         mistake="05.add_grad_noise.wrong-grad-shape",
         expect=["another shape than the gradient it replaces"]),
    dict(exercise="add_grad_noise", kind="wrong", clause="reaches", why="also noise on the parameters' gradients",
         source=edited(reference("add_grad_noise"),
                       ("    return module.register_full_backward_pre_hook(add_noise)",
                        "    for parameter in module.parameters():\n"
                        "        parameter.register_hook(lambda g: g + std * torch.randn(g.shape, generator=generator,\n"
                        "                                                                dtype=g.dtype))\n"
                        "    return module.register_full_backward_pre_hook(add_noise)")),
         mistake="05.add_grad_noise.wrong-parameter-grad",
         expect=["the gradient of the module's parameter", "computed from the noisy grad_output"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="events", why="returns nothing",
         source=predicted("predict_module_backward_order", None),
         mistake="05.predict_module_backward_order.returned-none",
         expect=["returned None"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="events", why="the events in one string",
         source=predicted("predict_module_backward_order", ", ".join(_BACKWARD)),
         mistake="05.predict_module_backward_order.returned-string",
         expect=["returned a string"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="events", why="the layers' numbers",
         source=predicted("predict_module_backward_order", [2, 1, 0]),
         mistake="05.predict_module_backward_order.not-event-names",
         expect=["not an event name"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="events", why="x's tensor hook left out",
         source=predicted("predict_module_backward_order", _BACKWARD[:-1]),
         mistake="05.predict_module_backward_order.wrong-order",
         expect=["'grad:x' is next"]),
    dict(exercise="predict_module_backward_order", kind="wrong", clause="order", why="backward stops at layer 1",
         source=predicted("predict_module_backward_order", _BACKWARD[:4]),
         mistake="05.predict_module_backward_order.misses-earlier-layers",
         expect=["'bpre:0' is next", "2 before 1 before 0"]),
]
