"""Mistake catalogue for lesson 01, tensor hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py; CLAUSES and NOT_CLAUSES, the clause → check table, in
tests/course/test_contract_clauses.py."""

from mistakes import edited, reference

CLAUSES = {
    "double_grad": {
        "new-tensor": "Returns a new tensor",
        "same-shape": "with the same shape",
        "same-dtype": "and dtype",
        "value": "equal to `2 * grad`",
        "not-in-place": "Must not change `grad` in place.",
        "differentiable": "Under `create_graph=True` the result stays differentiable",
    },
    "make_scale_hook": {
        "returns-function": "Returns a function `hook(grad)`",
        "new-tensor": "returns a new tensor",
        "value": "equal to `grad * factor`",
        "same-shape": "with the same shape",
        "same-dtype": "and dtype as `grad`",
        "own-factor": "Each returned hook keeps its own `factor`: later calls of make_scale_hook do not change it.",
        "not-in-place": "The hook must not change `grad` in place.",
        "differentiable": "Under `create_graph=True` its result stays differentiable",
    },
    "make_clip_hook": {
        "returns-function": "Returns a function `hook(grad)`.",
        "l2-all-elements": "Let `norm` be the L2 norm of `grad` over all its elements.",
        "new-tensor": "the hook returns a new tensor",
        "rescale": "`grad * (max_norm / norm)`, whose norm is `max_norm`",
        "unchanged-below": "Otherwise it returns `grad` unchanged",
        "zero-stays-zero": "(a zero gradient stays zero)",
        "same-shape": "The result has the same shape",
        "same-dtype": "and dtype as `grad`",
        "not-in-place": "The hook must not change `grad` in place.",
        "own-max-norm": "Each returned hook keeps its own `max_norm`: later calls of make_clip_hook do not change it.",
    },
    "record_grads": {
        "one-hook": "Registers one hook on `tensor`.",
        "appends": "Each time the hook fires it appends to `store`",
        "incoming": "of the incoming gradient",
        "clone-same-dtype": "a detached clone",
        "each-call": "Each call registers its own hook: a recording that an earlier call started on the same tensor "
                     "goes on.",
        "detached": "no graph attached, even under `create_graph=True`",
        "cloned": "not changed by later backward passes",
        "unchanged": "leaves the gradient unchanged (returns None)",
        "handle": "Returns the `RemovableHandle` from `register_hook`",
        "remove-stops": "after `handle.remove()` nothing more is appended",
        "not-modify-grad": "Must not modify the gradient",
        "not-modify-tensor": "or `tensor`.",
    },
}

NOT_CLAUSES = {
    "double_grad": {
        "Tensor hook that doubles the gradient.": "the title; the Returns sentence says exactly what comes back",
        "Receives `grad`, a tensor (the gradient autograd passes to a tensor hook).":
            "describes the input the checker passes; it promises nothing about the hook",
    },
    "make_scale_hook": {
        "Build a tensor hook that scales the gradient by `factor`.":
            "the title; the Returns sentence says exactly what the hook returns",
        "Receives `factor`, a Python number.": "describes the input; it promises nothing",
    },
    "make_clip_hook": {
        "Build a tensor hook that clips the gradient's L2 norm to `max_norm`.":
            "the title; the sentences after it say exactly what the hook returns",
        "Receives `max_norm`, a positive Python number.": "describes the input; it promises nothing",
    },
    "record_grads": {
        "Record every gradient that reaches `tensor`.": "the title; the sentences after it say exactly what happens",
        "Receives `tensor`, a tensor that requires grad, and `store`, a list.":
            "describes the inputs (the checker passes a leaf and a non-leaf); it promises nothing",
    },
}

ENTRIES = [
    # ------------------------------------------------------------------ double_grad
    dict(exercise="double_grad", kind="wrong", why="changes grad in place with mul_",
         mistake="01.double_grad.in-place", clause="not-in-place",
         source=edited(reference("double_grad"), ("    return grad * 2", "    grad.mul_(2)\n    return grad")),
         expect=["changed `grad` in place", "not an in-place"]),
    dict(exercise="double_grad", kind="wrong", why="changes grad in place with *=",
         mistake="01.double_grad.in-place", clause="not-in-place",
         source=edited(reference("double_grad"), ("    return grad * 2", "    grad *= 2\n    return grad")),
         expect=["in place"]),
    dict(exercise="double_grad", kind="wrong", why="returns None",
         mistake="01.double_grad.returned-none", clause="value",
         source=edited(reference("double_grad"), ("return grad * 2", "doubled = grad * 2")),
         expect=["returned None"]),
    dict(exercise="double_grad", kind="wrong", why="returns grad unchanged",
         mistake="01.double_grad.returned-grad-unchanged", clause="value",
         source=edited(reference("double_grad"), ("grad * 2", "grad")),
         expect=["gradient unchanged", "double it"]),
    dict(exercise="double_grad", kind="wrong", why="returns grad squared",
         mistake="01.double_grad.squared-grad", clause="value",
         source=edited(reference("double_grad"), ("return grad * 2", "return grad * grad")),
         expect=["grad squared"]),
    dict(exercise="double_grad", kind="wrong", why="halves instead of doubling",
         mistake="01.double_grad.halved-grad", clause="value",
         source=edited(reference("double_grad"), ("return grad * 2", "return grad / 2")),
         expect=["half the gradient"]),
    dict(exercise="double_grad", kind="wrong", why="hard-coded for one example",
         mistake="01.double_grad.wrong-shape", clause="same-shape",
         source=edited(reference("double_grad"), ("grad * 2", "torch.tensor([2.0, 4.0])")),
         expect=["shape (2,)", "the gradient's own shape"]),
    dict(exercise="double_grad", kind="wrong", why="changes the dtype",
         mistake="01.double_grad.wrong-dtype", clause="same-dtype",
         source=edited(reference("double_grad"), ("grad * 2", "(grad * 2).double()")),
         expect=["dtype torch.float64", "the gradient's own dtype"]),
    dict(exercise="double_grad", kind="wrong", why="returns a Python list",
         mistake="01.double_grad.not-a-tensor", clause="new-tensor",
         source=edited(reference("double_grad"), ("grad * 2", "(grad * 2).tolist()")),
         expect=["returned list", "expected a tensor"]),
    dict(exercise="double_grad", kind="right", why="adds grad to itself",
         source=edited(reference("double_grad"), ("return grad * 2", "return grad + grad")),
         expect=[]),
    dict(exercise="double_grad", kind="right", why="torch.mul",
         source=edited(reference("double_grad"), ("grad * 2", "torch.mul(grad, 2)")),
         expect=[]),
    dict(exercise="double_grad", kind="right", why="in place on a clone",
         source=edited(reference("double_grad"),
                       ("    return grad * 2", "    copy = grad.clone()\n    copy.mul_(2)\n    return copy")),
         expect=[]),

    # ------------------------------------------------------------------ make_scale_hook
    dict(exercise="make_scale_hook", kind="wrong", why="hook changes grad in place",
         mistake="01.make_scale_hook.in-place", clause="not-in-place",
         source=edited(reference("make_scale_hook"),
                       ("        return grad * factor", "        grad.mul_(factor)\n        return grad")),
         expect=["changed `grad` in place"]),
    dict(exercise="make_scale_hook", kind="wrong", why="factor shared through a global",
         mistake="01.make_scale_hook.shared-factor", clause="own-factor",
         source=edited(reference("make_scale_hook"),
                       ("import torch", "import torch\n\ncurrent_factor = 1.0"),
                       ("    def hook(grad):",
                        "    global current_factor\n"
                        "    current_factor = factor\n"
                        "\n"
                        "    def hook(grad):"),
                       ("return grad * factor", "return grad * current_factor")),
         expect=["own factor"]),
    dict(exercise="make_scale_hook", kind="wrong", why="factor shared through a class attribute",
         mistake="01.make_scale_hook.shared-factor", clause="own-factor",
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
         mistake="01.make_scale_hook.returned-none", clause="value",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "scaled = grad * factor")),
         expect=["returned None"]),
    dict(exercise="make_scale_hook", kind="wrong", why="ignores factor: hard-codes 2",
         mistake="01.make_scale_hook.ignores-factor", clause="value",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return grad * 2")),
         expect=["the result does not change with factor", "grad times 2 whatever the factor"]),
    dict(exercise="make_scale_hook", kind="wrong", why="hook returns grad unchanged",
         mistake="01.make_scale_hook.ignores-factor", clause="value",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return grad")),
         expect=["gradient unchanged", "multiply it by the factor"]),
    dict(exercise="make_scale_hook", kind="wrong", why="returns a tensor instead of a function",
         mistake="01.make_scale_hook.not-a-function", clause="returns-function",
         source='''
import torch


def make_scale_hook(factor):
    return torch.tensor(factor)
''',
         expect=["expected a function"]),
    dict(exercise="make_scale_hook", kind="wrong", why="forgets to return the hook",
         mistake="01.make_scale_hook.not-a-function", clause="returns-function",
         source=edited(reference("make_scale_hook"), ("    return hook", "")),
         expect=["returned None", "expected a function"]),
    dict(exercise="make_scale_hook", kind="wrong", why="calls the hook instead of returning it",
         mistake="01.make_scale_hook.raised", clause="returns-function",
         source=edited(reference("make_scale_hook"), ("return hook", "return hook()")),
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
         mistake="01.make_clip_hook.clamped-elements", clause="l2-all-elements",
         source=edited(reference("make_clip_hook"),
                       ("        norm = grad.norm()\n"
                        "        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)\n"
                        "        return grad",
                        "        return grad.clamp(-max_norm, max_norm)")),
         expect=["each element", "L2 norm over all elements"]),
    dict(exercise="make_clip_hook", kind="wrong", why="always rescales",
         mistake="01.make_clip_hook.rescaled-below-max-norm", clause="unchanged-below",
         source=edited(reference("make_clip_hook"),
                       ("        norm = grad.norm()\n"
                        "        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)\n"
                        "        return grad",
                        "        return grad * (max_norm / grad.norm())")),
         expect=["already below max_norm", "unchanged"]),
    dict(exercise="make_clip_hook", kind="wrong", why="divides by a zero norm",
         mistake="01.make_clip_hook.not-finite", clause="zero-stays-zero",
         source=edited(reference("make_clip_hook"),
                       ("        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)\n"
                        "        return grad",
                        "        return grad / norm * torch.clamp(norm, max=max_norm)")),
         expect=["nan", "zero gradient"]),
    dict(exercise="make_clip_hook", kind="wrong", why="norm of each row",
         mistake="01.make_clip_hook.norm-along-dim", clause="l2-all-elements",
         source=edited(reference("make_clip_hook"),
                       ("        norm = grad.norm()\n"
                        "        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)\n"
                        "        return grad",
                        "        norms = grad.norm(dim=-1, keepdim=True)\n"
                        "        return torch.where(norms > max_norm, grad * (max_norm / norms), grad)")),
         expect=["along one dimension", "over all elements"]),
    dict(exercise="make_clip_hook", kind="wrong", why="rescales grad in place",
         mistake="01.make_clip_hook.in-place", clause="not-in-place",
         source=edited(reference("make_clip_hook"), ("return grad * (max_norm / norm)", "grad *= max_norm / norm")),
         expect=["changed `grad` in place"]),
    dict(exercise="make_clip_hook", kind="wrong", why="forgets to return the hook",
         mistake="01.make_clip_hook.not-a-function", clause="returns-function",
         source=edited(reference("make_clip_hook"), ("    return hook", "")),
         expect=["returned None", "expected a function"]),
    dict(exercise="make_clip_hook", kind="right", why="returns None when the gradient is small enough",
         source=edited(reference("make_clip_hook"),
                       ("grad.norm()", "torch.linalg.vector_norm(grad)"),
                       ("        return grad\n",
                        "        return None  # a tensor hook's None keeps the gradient as it is\n")),
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
         mistake="01.record_grads.not-cloned", clause="cloned",
         source=edited(reference("record_grads"),
                       ("store.append(grad.detach().clone())", "store.append(grad.detach())")),
         expect=["changed after the second backward", "accumulate into it in place", "clone it"]),
    dict(exercise="record_grads", kind="wrong", why="stores grad itself",
         mistake="01.record_grads.stored-with-graph", clause="detached",
         source='''
import torch


def record_grads(tensor, store):
    return tensor.register_hook(store.append)
''',
         # The stored reference keeps PyTorch from reusing the tensor as x.grad, so only the
         # graph it carries under create_graph=True gives it away.
         expect=["create_graph=True", "still requires grad", "detach it"]),
    dict(exercise="record_grads", kind="wrong", why="clone without detach",
         mistake="01.record_grads.stored-with-graph", clause="detached",
         source=edited(reference("record_grads"),
                       ("store.append(grad.detach().clone())", "store.append(grad.clone())")),
         expect=["create_graph=True", "still requires grad", "detach it"]),
    dict(exercise="record_grads", kind="wrong", why="does not return the handle",
         mistake="01.record_grads.no-handle", clause="handle",
         source=edited(reference("record_grads"),
                       ("return tensor.register_hook(hook)", "tensor.register_hook(hook)")),
         expect=["returned None", "expected the handle"]),
    dict(exercise="record_grads", kind="wrong", why="appends to a list of its own",
         mistake="01.record_grads.appended-elsewhere", clause="appends",
         source=edited(reference("record_grads"),
                       ("import torch", "import torch\n\nrecorded = []"),
                       ("store.append(grad.detach().clone())", "recorded.append(grad.detach().clone())")),
         expect=["store holds 0 gradient(s)", "the list passed as `store`"]),
    dict(exercise="record_grads", kind="wrong", why="hook returns a modified gradient",
         mistake="01.record_grads.replaced-grad", clause="unchanged",
         source=edited(reference("record_grads"),
                       ("        store.append(grad.detach().clone())",
                        "        store.append(grad.detach().clone())\n"
                        "        return torch.zeros_like(grad)")),
         expect=["must leave the gradient unchanged"]),
    dict(exercise="record_grads", kind="wrong", why="reads tensor.grad instead of the incoming gradient",
         mistake="01.record_grads.raised", clause="incoming",
         source=edited(reference("record_grads"),
                       ("store.append(grad.detach().clone())", "store.append(tensor.grad.detach().clone())")),
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
    # ------------------------------------------------------------------ added for the clause table
    dict(exercise="double_grad", kind="wrong", why="returns one reused buffer",
         mistake="01.double_grad.reused-buffer", clause="new-tensor",
         source=edited(reference("double_grad"),
                       ("import torch", "import torch\n\n_buffers = {}"),
                       ("    return grad * 2",
                        "    key = (tuple(grad.shape), grad.dtype)\n"
                        "    if key not in _buffers:\n"
                        "        _buffers[key] = torch.empty_like(grad)\n"
                        "    return torch.mul(grad, 2, out=_buffers[key])")),
         expect=["changed when it was called again", "not a buffer kept between calls"]),
    dict(exercise="double_grad", kind="wrong", why="doubles in place, returns a clone",
         mistake="01.double_grad.in-place", clause="not-in-place",
         source=edited(reference("double_grad"),
                       ("    return grad * 2", "    grad.mul_(2)\n    return grad.clone()")),
         expect=["changed `grad` in place"]),
    dict(exercise="double_grad", kind="wrong", why="flattens the result",
         mistake="01.double_grad.wrong-shape", clause="same-shape",
         source=edited(reference("double_grad"), ("grad * 2", "(grad * 2).flatten()")),
         expect=["shape (20,)", "the gradient's own shape"]),
    dict(exercise="double_grad", kind="wrong", why="casts to float32 first",
         mistake="01.double_grad.wrong-dtype", clause="same-dtype",
         source=edited(reference("double_grad"), ("grad * 2", "grad.float() * 2")),
         expect=["returned dtype torch.float32", "expected torch.float64"]),
    dict(exercise="double_grad", kind="wrong", why="doubles grad.detach()",
         mistake="01.double_grad.result-detached", clause="differentiable",
         source=edited(reference("double_grad"), ("grad * 2", "grad.detach() * 2")),
         expect=["create_graph=True", "no longer requires grad", "grad.detach()"]),
    dict(exercise="double_grad", kind="wrong", why="doubles grad.data",
         mistake="01.double_grad.result-detached", clause="differentiable",
         source=edited(reference("double_grad"), ("grad * 2", "grad.data * 2")),
         expect=["create_graph=True", "grad.data"]),
    dict(exercise="double_grad", kind="wrong", why="doubles under torch.no_grad",
         mistake="01.double_grad.result-detached", clause="differentiable",
         source=edited(reference("double_grad"),
                       ("    return grad * 2", "    with torch.no_grad():\n        return grad * 2")),
         expect=["create_graph=True", "torch.no_grad()"]),
    dict(exercise="double_grad", kind="wrong", why="rebuilds the tensor from its list of values",
         mistake="01.double_grad.wrong-dtype", clause="same-dtype",
         source=edited(reference("double_grad"), ("grad * 2", "torch.tensor(grad.tolist()) * 2")),
         expect=["returned dtype torch.float32", "the gradient's own dtype"]),
    dict(exercise="double_grad", kind="right", why="multiplies by a 0-dim tensor",
         source=edited(reference("double_grad"), ("grad * 2", "grad * torch.tensor(2.0)")),
         expect=[]),

    dict(exercise="make_scale_hook", kind="wrong", why="writes into one preallocated output",
         mistake="01.make_scale_hook.reused-buffer", clause="new-tensor",
         source=edited(reference("make_scale_hook"),
                       ("    def hook(grad):", "    out = {}\n\n    def hook(grad):"),
                       ("        return grad * factor",
                        '        if "buffer" not in out or out["buffer"].shape != grad.shape or out["buffer"].dtype != grad.dtype:\n'
                        '            out["buffer"] = torch.empty_like(grad)\n'
                        '        return torch.mul(grad, factor, out=out["buffer"])')),
         expect=["changed when it was called again", "not a buffer kept between calls"]),
    dict(exercise="make_scale_hook", kind="wrong", why="flattens the result",
         mistake="01.make_scale_hook.wrong-shape", clause="same-shape",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return (grad * factor).reshape(-1)")),
         expect=["shape (20,)", "the gradient's own shape"]),
    dict(exercise="make_scale_hook", kind="wrong", why="scales in float32",
         mistake="01.make_scale_hook.wrong-dtype", clause="same-dtype",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return grad.float() * factor")),
         expect=["returned dtype torch.float32", "expected torch.float64"]),
    dict(exercise="make_scale_hook", kind="wrong", why="scales grad.data",
         mistake="01.make_scale_hook.result-detached", clause="differentiable",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return grad.data * factor")),
         expect=["create_graph=True", "no longer requires grad"]),
    dict(exercise="make_scale_hook", kind="wrong", why="default argument read from a global at call time",
         mistake="01.make_scale_hook.shared-factor",
         clause="own-factor",
         source=edited(reference("make_scale_hook"),
                       ("import torch", "import torch\n\nFACTOR = None"),
                       ("    def hook(grad):\n"
                        "        return grad * factor",
                        "    global FACTOR\n"
                        "    FACTOR = factor\n"
                        "\n"
                        "    def hook(grad, scale=None):\n"
                        "        return grad * (FACTOR if scale is None else scale)")),
         expect=["another hook's factor", "own factor"]),
    dict(exercise="make_scale_hook", kind="wrong", why="scales in place, returns a copy",
         mistake="01.make_scale_hook.in-place", clause="not-in-place",
         source=edited(reference("make_scale_hook"),
                       ("        return grad * factor", "        grad.mul_(factor)\n        return grad.clone()")),
         expect=["changed `grad` in place"]),
    dict(exercise="make_scale_hook", kind="wrong", why="adds the factor",
         mistake="01.make_scale_hook.added-factor", clause="value",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return grad + factor")),
         expect=["grad + factor", "multiply by the factor"]),
    dict(exercise="make_scale_hook", kind="right", why="default argument binds the factor",
         source=edited(reference("make_scale_hook"),
                       ("    def hook(grad):\n"
                        "        return grad * factor",
                        "    def hook(grad, factor=factor):\n"
                        "        return factor * grad")),
         expect=[]),

    dict(exercise="make_clip_hook", kind="wrong", why="L1 norm",
         mistake="01.make_clip_hook.l1-norm", clause="l2-all-elements",
         source=edited(reference("make_clip_hook"), ("grad.norm()", "grad.norm(p=1)")),
         expect=["L1 norm", "use the L2 norm"]),
    dict(exercise="make_clip_hook", kind="wrong", why="largest element as the norm",
         mistake="01.make_clip_hook.max-element-norm", clause="l2-all-elements",
         source=edited(reference("make_clip_hook"), ("grad.norm()", "grad.abs().max()")),
         expect=["largest element", "L2 norm over all elements"]),
    dict(exercise="make_clip_hook", kind="wrong", why="keeps the norm of the first gradient",
         mistake="01.make_clip_hook.norm-kept-between-calls", clause="l2-all-elements",
         source=edited(reference("make_clip_hook"),
                       ("    def hook(grad):", "    state = {}\n\n    def hook(grad):"),
                       ("        norm = grad.norm()",
                        '        if "norm" not in state:\n'
                        '            state["norm"] = grad.norm()\n'
                        '        norm = state["norm"]')),
         expect=["three times", "measure the norm of the gradient it receives"]),
    dict(exercise="make_clip_hook", kind="wrong", why="normalises to norm 1",
         mistake="01.make_clip_hook.rescaled-to-norm-one", clause="rescale",
         source=edited(reference("make_clip_hook"), ("return grad * (max_norm / norm)", "return grad / norm")),
         expect=["to norm 1", "grad * (max_norm / norm)"]),
    dict(exercise="make_clip_hook", kind="wrong", why="multiplies by max_norm only",
         mistake="01.make_clip_hook.times-max-norm", clause="rescale",
         source=edited(reference("make_clip_hook"), ("return grad * (max_norm / norm)", "return grad * max_norm")),
         expect=["without dividing by the norm"]),
    dict(exercise="make_clip_hook", kind="wrong", why="inverted ratio",
         mistake="01.make_clip_hook.inverted-ratio", clause="rescale",
         source=edited(reference("make_clip_hook"),
                       ("return grad * (max_norm / norm)", "return grad * (norm / max_norm)")),
         expect=["norm / max_norm", "makes the gradient larger"]),
    dict(exercise="make_clip_hook", kind="wrong", why="rescales in float32",
         mistake="01.make_clip_hook.wrong-dtype", clause="same-dtype",
         source=edited(reference("make_clip_hook"),
                       ("            return grad * (max_norm / norm)",
                        "            return grad.float() * (max_norm / norm.float())")),
         expect=["returned dtype torch.float32", "expected torch.float64"]),
    dict(exercise="make_clip_hook", kind="wrong", why="returns the flattened gradient when rescaling",
         mistake="01.make_clip_hook.wrong-shape", clause="same-shape",
         source=edited(reference("make_clip_hook"),
                       ("        norm = grad.norm()", "        flat = grad.flatten()\n        norm = flat.norm()"),
                       ("return grad * (max_norm / norm)", "return flat * (max_norm / norm)")),
         expect=["shape (6,)", "the gradient's own shape"]),
    dict(exercise="make_clip_hook", kind="wrong", why="rescales into a reused buffer",
         mistake="01.make_clip_hook.reused-buffer", clause="new-tensor",
         source=edited(reference("make_clip_hook"),
                       ("    def hook(grad):", "    buffers = {}\n\n    def hook(grad):"),
                       ("            return grad * (max_norm / norm)",
                        "            key = (tuple(grad.shape), grad.dtype)\n"
                        "            out = buffers.setdefault(key, torch.empty_like(grad))\n"
                        "            return torch.mul(grad, max_norm / norm, out=out)")),
         expect=["changed when it was called again", "not a buffer kept between calls"]),
    dict(exercise="make_clip_hook", kind="right", why="the coefficient of clip_grad_norm_",
         source='''
import torch


def make_clip_hook(max_norm):
    def hook(grad):
        coefficient = max_norm / (torch.linalg.vector_norm(grad, 2.0) + 1e-6)
        return grad * torch.clamp(coefficient, max=1.0)

    return hook
''',
         expect=[]),

    dict(exercise="record_grads", kind="wrong", why="passes on a detached gradient",
         mistake="01.record_grads.passed-on-detached", clause="unchanged",
         source=edited(reference("record_grads"),
                       ("        store.append(grad.detach().clone())",
                        "        store.append(grad.detach().clone())\n"
                        "        return grad.detach()")),
         expect=["create_graph=True", "lost its graph", "return None"]),
    dict(exercise="record_grads", kind="wrong", why="uses a post-accumulate-grad hook",
         mistake="01.record_grads.recorded-accumulated-grad", clause="incoming",
         source=edited(reference("record_grads"),
                       ("    def hook(grad):\n"
                        "        store.append(grad.detach().clone())",
                        "    def hook(param):\n"
                        "        store.append(param.grad.detach().clone())"),
                       ("tensor.register_hook(hook)", "tensor.register_post_accumulate_grad_hook(hook)")),
         expect=["accumulated x.grad", "the gradient the hook receives"]),
    dict(exercise="record_grads", kind="wrong", why="registers the hook twice",
         mistake="01.record_grads.registered-twice", clause="one-hook",
         source=edited(reference("record_grads"),
                       ("    return tensor.register_hook(hook)",
                        "    tensor.register_hook(hook)\n"
                        "    return tensor.register_hook(hook)")),
         expect=["registered 2 hooks on x", "register one hook, once"]),
    dict(exercise="record_grads", kind="wrong", why="puts the newest gradient first",
         mistake="01.record_grads.newest-first", clause="appends",
         source=edited(reference("record_grads"),
                       ("store.append(grad.detach().clone())", "store.insert(0, grad.detach().clone())")),
         expect=["newest first", "at the end of the list"]),
    dict(exercise="record_grads", kind="wrong", why="keeps only the latest gradient",
         mistake="01.record_grads.store-overwritten", clause="appends",
         source=edited(reference("record_grads"),
                       ("store.append(grad.detach().clone())", "store[:] = [grad.detach().clone()]")),
         expect=["store holds 1 gradient(s); expected 2", "append each incoming gradient"]),
    dict(exercise="record_grads", kind="wrong", why="returns the first handle of a shared list",
         mistake="01.record_grads.wrong-handle", clause="remove-stops",
         source=edited(reference("record_grads"),
                       ("import torch", "import torch\n\nhandles = []"),
                       ("    return tensor.register_hook(hook)",
                        "    handles.append(tensor.register_hook(hook))\n"
                        "    return handles[0]")),
         expect=["after handle.remove(), recording went on", "the handle of the hook you registered"]),
    dict(exercise="record_grads", kind="wrong", why="returns the hook function",
         mistake="01.record_grads.no-handle", clause="handle",
         source=edited(reference("record_grads"),
                       ("    return tensor.register_hook(hook)", "    tensor.register_hook(hook)\n    return hook")),
         expect=["returned function", "RemovableHandle"]),
    dict(exercise="record_grads", kind="wrong", why="clips the gradient in place after recording it",
         mistake="01.record_grads.in-place",
         clause="not-modify-grad",
         source=edited(reference("record_grads"),
                       ("        store.append(grad.detach().clone())",
                        "        store.append(grad.detach().clone())\n"
                        "        grad.clamp_(-1.0, 1.0)")),
         expect=["changed the gradient in place", "leave the gradient itself alone"]),
    dict(exercise="record_grads", kind="wrong", why="clears tensor.grad to start fresh",
         mistake="01.record_grads.changed-tensor-grad", clause="not-modify-tensor",
         source=edited(reference("record_grads"),
                       ("    return tensor.register_hook(hook)",
                        "    tensor.grad = None\n"
                        "    return tensor.register_hook(hook)")),
         expect=["changed the .grad of the tensor", "leave the tensor alone"]),
    dict(exercise="record_grads", kind="wrong", why="calls retain_grad on the tensor",
         mistake="01.record_grads.retained-grad", clause="not-modify-tensor",
         source=edited(reference("record_grads"),
                       ("    return tensor.register_hook(hook)",
                        "    if not tensor.is_leaf:\n"
                        "        tensor.retain_grad()\n"
                        "    return tensor.register_hook(hook)")),
         expect=["retain_grad()", "changes h"]),
    dict(exercise="record_grads", kind="right", why="lambda returning the gradient itself",
         source='''
import torch


def record_grads(tensor, store):
    return tensor.register_hook(lambda grad: store.append(grad.detach().clone()) or grad)
''',
         expect=[]),
    # ------------------------------------------------------------------ written from the docstrings alone
    dict(exercise="double_grad", kind="wrong", why="copies through torch.tensor",
         mistake="01.double_grad.result-detached", clause="differentiable",
         source=edited(reference("double_grad"), ("    return grad * 2", "    return torch.tensor(2 * grad)")),
         expect=["create_graph=True", "no longer requires grad"]),
    dict(exercise="double_grad", kind="wrong", why="doubles the detached result of mul",
         mistake="01.double_grad.result-detached", clause="differentiable",
         source=edited(reference("double_grad"), ("grad * 2", "grad.mul(2).detach()")),
         expect=["create_graph=True", "no longer requires grad"]),
    dict(exercise="make_clip_hook", kind="wrong", why="torch.renorm",
         mistake="01.make_clip_hook.norm-along-dim", clause="l2-all-elements",
         source=edited(reference("make_clip_hook"),
                       ("        norm = grad.norm()\n"
                        "        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)\n"
                        "        return grad",
                        "        return grad.renorm(2, 0, max_norm)")),
         expect=["norm along one dimension", "over all elements"]),
    dict(exercise="make_clip_hook", kind="wrong", why="clip_grad_norm_ on the gradient",
         mistake="01.make_clip_hook.returned-none", clause="rescale",
         source=edited(reference("make_clip_hook"),
                       ("        norm = grad.norm()\n"
                        "        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)\n"
                        "        return grad",
                        "        torch.nn.utils.clip_grad_norm_([grad], max_norm)")),
         expect=["returned none", "return the new gradient"]),
    dict(exercise="record_grads", kind="wrong", why="cpu() taken for a copy",
         mistake="01.record_grads.stored-with-graph", clause="detached",
         source=edited(reference("record_grads"), ("grad.detach().clone()", "grad.cpu()")),
         expect=["create_graph=True", "still requires grad", "detach it"]),
    dict(exercise="record_grads", kind="wrong", why="detach().cpu() is no copy on the CPU",
         mistake="01.record_grads.not-cloned", clause="cloned",
         source=edited(reference("record_grads"), ("grad.detach().clone()", "grad.detach().cpu()")),
         expect=["changed after the second backward", "clone it"]),
    dict(exercise="record_grads", kind="wrong", why="stores grad.data",
         mistake="01.record_grads.not-cloned", clause="cloned",
         source=edited(reference("record_grads"), ("grad.detach().clone()", "grad.data")),
         expect=["changed after the second backward", "clone it"]),
    dict(exercise="record_grads", kind="right", why="detach().to(copy=True)",
         source=edited(reference("record_grads"), ("grad.detach().clone()", "grad.detach().to('cpu', copy=True)")),
         expect=[]),
    # ------------------------------------------------------------------ review: written from the docstrings alone
    dict(exercise="make_clip_hook", kind="wrong", why="max_norm kept in a global",
         mistake="01.make_clip_hook.shared-max-norm", clause="own-max-norm",
         source=edited(reference("make_clip_hook"),
                       ("import torch", "import torch\n\nLIMIT = None"),
                       ("    def hook(grad):", "    global LIMIT\n    LIMIT = max_norm\n\n    def hook(grad):"),
                       ("        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)",
                        "        if norm > LIMIT:\n"
                        "            return grad * (LIMIT / norm)")),
         expect=["clipped to 2.0, the max_norm of another hook", "keep its own max_norm"]),
    dict(exercise="make_clip_hook", kind="wrong", why="max_norm kept on the class of a callable",
         mistake="01.make_clip_hook.shared-max-norm", clause="own-max-norm",
         source='''
import torch


class Clipper:
    max_norm = 1.0

    def __call__(self, grad):
        norm = grad.norm()
        if norm > Clipper.max_norm:
            return grad * (Clipper.max_norm / norm)
        return grad


def make_clip_hook(max_norm):
    Clipper.max_norm = max_norm
    return Clipper()
''',
         expect=["the max_norm of another hook", "not in a global or class attribute"]),
    dict(exercise="make_clip_hook", kind="wrong", why="clamps in place, as public clipping hooks do",
         mistake="01.make_clip_hook.in-place", clause="not-in-place",
         source=edited(reference("make_clip_hook"),
                       ("        norm = grad.norm()\n"
                        "        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)\n"
                        "        return grad",
                        "        return grad.clamp_(-max_norm, max_norm)")),
         expect=["changed `grad` in place"]),
    dict(exercise="record_grads", kind="wrong", why="stores a float32 copy",
         mistake="01.record_grads.converted-dtype", clause="clone-same-dtype",
         source=edited(reference("record_grads"), ("grad.detach().clone()", "grad.detach().clone().float()")),
         expect=["float64 gradient was recorded", "keeps the gradient's dtype"]),
    dict(exercise="record_grads", kind="wrong", why="stores copy.deepcopy(grad)",
         mistake="01.record_grads.stored-with-graph", clause="detached",
         source=edited(reference("record_grads"),
                       ("import torch", "import copy\n\nimport torch"),
                       ("grad.detach().clone()", "copy.deepcopy(grad)")),
         expect=["create_graph=True", "deepcopy protocol"]),
    dict(exercise="record_grads", kind="wrong", why="keeps every gradient in a list of its own too",
         mistake="01.record_grads.appended-elsewhere", clause="appends",
         source=edited(reference("record_grads"),
                       ("import torch", "import torch\n\nSEEN = []"),
                       ("        store.append(grad.detach().clone())",
                        "        SEEN.append(grad.detach().clone())\n"
                        "        store[:] = SEEN")),
         expect=["the new list passed as store holds", "not to a list of your own"]),
    dict(exercise="double_grad", kind="wrong", why="doubles through numpy",
         mistake="01.double_grad.computed-outside-autograd", clause="differentiable",
         source=edited(reference("double_grad"),
                       ("    return grad * 2", "    return torch.from_numpy(grad.numpy() * 2)")),
         expect=["create_graph=True", "can't call numpy() on tensor that requires grad"]),
    dict(exercise="double_grad", kind="wrong", why="writes into an out= tensor",
         mistake="01.double_grad.computed-outside-autograd", clause="differentiable",
         source=edited(reference("double_grad"),
                       ("    return grad * 2", "    return torch.mul(grad, 2, out=torch.empty_like(grad))")),
         expect=["create_graph=True", "out=... arguments don't support automatic differentiation"]),
    dict(exercise="make_clip_hook", kind="right", why="min of 1 and the ratio",
         source=edited(reference("make_clip_hook"),
                       ("        norm = grad.norm()\n"
                        "        if norm > max_norm:\n"
                        "            return grad * (max_norm / norm)\n"
                        "        return grad",
                        "        return grad * min(1.0, max_norm / grad.norm())")),
         expect=[]),
    dict(exercise="record_grads", kind="wrong", why="stores a clone with requires_grad_()",
         mistake="01.record_grads.stored-requires-grad", clause="detached",
         source=edited(reference("record_grads"),
                       ("grad.detach().clone()", "grad.detach().clone().requires_grad_()")),
         expect=["requires_grad=True", "without requires_grad_()"]),
    dict(exercise="double_grad", kind="wrong", why="adds a detached copy to grad",
         mistake="01.double_grad.wrong-second-derivative", clause="differentiable",
         source=edited(reference("double_grad"), ("    return grad * 2", "    return grad + grad.detach()")),
         expect=["second derivative", "differentiable function of grad"]),
    dict(exercise="record_grads", kind="wrong", why="removes the recording an earlier call started",
         mistake="01.record_grads.stops-earlier-recording", clause="each-call",
         source='''
import torch


def record_grads(tensor, store):
    earlier = getattr(tensor, "recording", None)
    if earlier is not None:
        earlier.remove()  # no stacked hooks, as in lesson 02 -- but the earlier recording stops
    tensor.recording = tensor.register_hook(lambda grad: store.append(grad.detach().clone()))
    return tensor.recording
''',
         expect=["first holds 0 gradient(s) and second 1", "each call registers its own hook"]),
    dict(exercise="record_grads", kind="wrong", why="returns the cached handle of an earlier call",
         mistake="01.record_grads.stops-earlier-recording", clause="each-call",
         source='''
import torch

HANDLES = {}


def record_grads(tensor, store):
    if id(tensor) not in HANDLES:
        HANDLES[id(tensor)] = tensor.register_hook(lambda grad: store.append(grad.detach().clone()))
    return HANDLES[id(tensor)]
''',
         expect=["and second 0; expected 1 each", "each call registers its own hook"]),
    dict(exercise="record_grads", kind="wrong", why="registers in a with block, which removes the hook",
         mistake="01.record_grads.hook-removed-before-return", clause="one-hook",
         source=edited(reference("record_grads"),
                       ("    return tensor.register_hook(hook)",
                        "    with tensor.register_hook(hook) as handle:\n"
                        "        pass\n"
                        "    return handle")),
         expect=["no hook of its own left on x", "a `with` block around register_hook"]),
    # ------------------------------------------------------------------ one for each named mistake
    dict(exercise="double_grad", kind="wrong", why="returns a sparse tensor", mistake="01.double_grad.not-dense",
         clause="new-tensor",
         source=edited(reference("double_grad"), ("grad * 2", "(grad * 2).to_sparse()")),
         expect=["sparse", "dense"]),
    dict(exercise="double_grad", kind="wrong", why="adds 2 instead of multiplying",
         mistake="01.double_grad.wrong-value",
         clause="value",
         source=edited(reference("double_grad"), ("grad * 2", "grad + 2")),
         expect=["expected tensor of shape"]),
    dict(exercise="double_grad", kind="wrong", why="doubles only with grad mode on, which backward turns off",
         mistake="01.double_grad.wrong-grad-in-backward", clause="value",
         source=edited(reference("double_grad"), ("grad * 2", "grad * 2 if torch.is_grad_enabled() else grad")),
         expect=["with double_grad registered on x, x.grad became", "expected twice the gradient"]),
    dict(exercise="make_scale_hook", kind="wrong", why="hook returns a Python list",
         mistake="01.make_scale_hook.not-a-tensor", clause="new-tensor",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return (grad * factor).tolist()")),
         expect=["returned list", "expected a tensor"]),
    dict(exercise="make_scale_hook", kind="wrong", why="hook returns a sparse tensor",
         mistake="01.make_scale_hook.not-dense", clause="new-tensor",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return (grad * factor).to_sparse()")),
         expect=["sparse", "dense"]),
    dict(exercise="make_scale_hook", kind="wrong", why="squares the factor", mistake="01.make_scale_hook.wrong-value",
         clause="value",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return grad * factor ** 2")),
         expect=["the hook from make_scale_hook(0.5)", "expected tensor of shape"]),
    dict(exercise="make_scale_hook", kind="wrong", why="takes a factor of 0 for 1 (factor or 1)",
         mistake="01.make_scale_hook.returned-grad-unchanged", clause="value",
         source=edited(reference("make_scale_hook"), ("return grad * factor", "return grad * (factor or 1)")),
         expect=["make_scale_hook(0.0)", "gradient unchanged"]),
    dict(exercise="make_scale_hook", kind="wrong", why="scales only with grad mode on, which backward turns off",
         mistake="01.make_scale_hook.wrong-grad-in-backward", clause="value",
         source=edited(reference("make_scale_hook"),
                       ("return grad * factor", "return grad * factor if torch.is_grad_enabled() else grad")),
         expect=["with make_scale_hook(3.0) on y = 2 * x", "expected 6 everywhere"]),
    dict(exercise="make_scale_hook", kind="wrong", why="scales a detached copy and adds grad",
         mistake="01.make_scale_hook.wrong-second-derivative", clause="differentiable",
         source=edited(reference("make_scale_hook"),
                       ("return grad * factor", "return grad + grad.detach() * (factor - 1)")),
         expect=["second derivative", "differentiable function of grad"]),
    dict(exercise="make_clip_hook", kind="wrong", why="returns a Python list when rescaling",
         mistake="01.make_clip_hook.not-a-tensor", clause="new-tensor",
         source=edited(reference("make_clip_hook"),
                       ("return grad * (max_norm / norm)", "return (grad * (max_norm / norm)).tolist()")),
         expect=["returned list", "expected a tensor"]),
    dict(exercise="make_clip_hook", kind="wrong", why="returns a sparse tensor when rescaling",
         mistake="01.make_clip_hook.not-dense", clause="new-tensor",
         source=edited(reference("make_clip_hook"),
                       ("return grad * (max_norm / norm)", "return (grad * (max_norm / norm)).to_sparse()")),
         expect=["sparse", "dense"]),
    dict(exercise="make_clip_hook", kind="wrong", why="squared norm, without the square root",
         mistake="01.make_clip_hook.squared-norm", clause="l2-all-elements",
         source=edited(reference("make_clip_hook"), ("grad.norm()", "grad.pow(2).sum()")),
         expect=["sum of its squares", "take its square root"]),
    dict(exercise="make_clip_hook", kind="wrong", why="mean absolute value as the norm",
         mistake="01.make_clip_hook.wrong-value", clause="l2-all-elements",
         source=edited(reference("make_clip_hook"), ("grad.norm()", "grad.abs().mean()")),
         expect=["the hook from make_clip_hook(1.0)", "expected tensor of shape"]),
    dict(exercise="record_grads", kind="wrong", why="appends each gradient twice",
         mistake="01.record_grads.appended-twice",
         clause="appends",
         source=edited(reference("record_grads"),
                       ("        store.append(grad.detach().clone())",
                        "        store.append(grad.detach().clone())\n"
                        "        store.append(grad.detach().clone())")),
         expect=["each backward appended two"]),
    dict(exercise="record_grads", kind="wrong", why="records the magnitude of the gradient",
         mistake="01.record_grads.wrong-recorded-value", clause="incoming",
         source=edited(reference("record_grads"), ("grad.detach().clone()", "grad.detach().clone().abs()")),
         expect=["gradient number 1 was recorded as"]),
    dict(exercise="record_grads", kind="wrong", why="zeroes the tensor to start fresh",
         mistake="01.record_grads.changed-tensor", clause="not-modify-tensor",
         source=edited(reference("record_grads"),
                       ("    return tensor.register_hook(hook)",
                        "    with torch.no_grad():\n"
                        "        tensor.zero_()\n"
                        "    return tensor.register_hook(hook)")),
         expect=["changed the tensor it was given", "leave the tensor alone"]),
    dict(exercise="record_grads", kind="wrong", why="returns the handle in a list",
         mistake="01.record_grads.handle-in-a-list", clause="handle",
         source=edited(reference("record_grads"),
                       ("    return tensor.register_hook(hook)", "    return [tensor.register_hook(hook)]")),
         expect=["not in a list"]),
    dict(exercise="record_grads", kind="wrong", why="returns an object of its own with remove()",
         mistake="01.record_grads.not-a-removable-handle", clause="handle",
         source=edited(reference("record_grads"),
                       ("import torch", "import types\n\nimport torch"),
                       ("    return tensor.register_hook(hook)",
                        "    handle = tensor.register_hook(hook)\n"
                        "    return types.SimpleNamespace(remove=handle.remove)")),
         expect=["an object with a remove() method", "RemovableHandle"]),
    dict(exercise="make_scale_hook", kind="wrong", why="scales through numpy", clause="differentiable",
         mistake="01.make_scale_hook.computed-outside-autograd",
         source=edited(reference("make_scale_hook"),
                       ("return grad * factor", "return torch.from_numpy(grad.numpy() * factor)")),
         expect=["create_graph=True", "can't call numpy() on tensor that requires grad"]),
]
