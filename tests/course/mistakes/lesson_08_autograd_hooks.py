"""Mistake catalogue for lesson 08, autograd-level hooks. The format of an entry is
described in tests/course/test_mistake_catalogue.py. Most wrong entries are one change to
a right cell, written with `edited`, which insists that the change applies."""

from mistakes import edited

_FUSED = '''
import torch


def fuse_sgd_into_backward(model, lr):
    def step(param):
        with torch.no_grad():
            param.sub_(lr * param.grad)
        param.grad = None

    handles = []
    for param in model.parameters():
        if param.requires_grad:
            handles.append(param.register_post_accumulate_grad_hook(step))
    return handles
'''

_MULTI = '''
import torch


def call_when_all_grads_ready(tensors, callback):
    return torch.autograd.graph.register_multi_grad_hook(tensors, callback)
'''


_SAVER = '''
import torch


class HalfPrecisionSaver(torch.autograd.graph.saved_tensors_hooks):
    def __init__(self):
        self.bytes_saved = 0
        super().__init__(self.pack, self.unpack)

    def pack(self, tensor):
        if tensor.dtype not in (torch.float32, torch.float64):
            return tensor, None
        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)
        return tensor.half(), tensor.dtype

    def unpack(self, packed):
        tensor, dtype = packed
        return tensor if dtype is None else tensor.to(dtype)
'''


def _fused(old, new):
    return edited(_FUSED, (old, new))


def _saver(old, new):
    return edited(_SAVER, (old, new))


ENTRIES = [
    # ------------------------------------------------------------------ fuse_sgd_into_backward
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="steps in a tensor hook",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    handles = []
    for param in model.parameters():
        if param.requires_grad:
            def step(grad, param=param):
                with torch.no_grad():
                    param.sub_(lr * grad)
            handles.append(param.register_hook(step))
    return handles
''',
         expect=["torch.autograd.grad fires tensor hooks", "register_post_accumulate_grad_hook"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="forgets torch.no_grad",
         source=_fused("""        with torch.no_grad():
            param.sub_(lr * param.grad)""", """        param.sub_(lr * param.grad)"""),
         expect=["create_graph=True", "torch.no_grad()"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="does not clear the gradient",
         source=_fused("        param.grad = None\n", ""),
         expect=["grad is still", "set the parameter's .grad to none"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="zeroes the gradient instead of freeing it",
         source=_fused("        param.grad = None\n", "        param.grad.zero_()\n"),
         expect=["tensor of zeros", "expected none"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="takes the hook's argument for the gradient",
         source=_fused("param.sub_(lr * param.grad)", "param.sub_(lr * param)"),
         expect=["receives the parameter, not its", "param.grad"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="hooks frozen parameters too",
         source=_fused("        if param.requires_grad:\n            handles", "        handles"),
         expect=["does not require grad", "skip the frozen parameters"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="returns the new value, as a tensor hook would",
         source=_fused("""        with torch.no_grad():
            param.sub_(lr * param.grad)
        param.grad = None""", """        with torch.no_grad():
            return param - lr * param.grad"""),
         expect=["must return none"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="rebinds a local name instead of updating in place",
         source=_fused("param.sub_(lr * param.grad)", "param = param - lr * param.grad"),
         expect=["no parameter", "in place", "rebinds a local name"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="adds the gradient",
         source=_fused("param.sub_(lr * param.grad)", "param.add_(lr * param.grad)"),
         expect=["added lr * gradient"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="uses the loop variable in the hook",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    handles = []
    for param in model.parameters():
        if param.requires_grad:
            def step(_):
                with torch.no_grad():
                    param.sub_(lr * param.grad)
                param.grad = None
            handles.append(param.register_post_accumulate_grad_hook(step))
    return handles
''',
         expect=["loop variable", "use the parameter the hook receives"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="loop variable, guarded against None",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    handles = []
    for param in model.parameters():
        if param.requires_grad:
            def step(_):
                if param.grad is not None:
                    with torch.no_grad():
                        param.sub_(lr * param.grad)
                    param.grad = None
            handles.append(param.register_post_accumulate_grad_hook(step))
    return handles
''',
         expect=["did not change", "loop variable", "updates the last parameter only"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="returns one handle only",
         source=_fused("    return handles\n", "    return handles[-1:]\n"),
         expect=["returned 1 handles", "one per parameter that requires grad"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="turns grad mode off for good",
         source=_fused("""    handles = []
""", """    torch.set_grad_enabled(False)
    handles = []
"""),
         expect=["turned grad mode off and left it off", "torch.no_grad()"]),
    dict(exercise="fuse_sgd_into_backward", kind="right", why="through .data, with add_ and alpha",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    def sgd(p):
        p.data.add_(p.grad.data, alpha=-lr)
        p.grad = None

    return [p.register_post_accumulate_grad_hook(sgd) for p in model.parameters() if p.requires_grad]
''',
         expect=[]),
    dict(exercise="fuse_sgd_into_backward", kind="right", why="one torch.optim.SGD per parameter, as PyTorch's tutorial",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    optimizers = {p: torch.optim.SGD([p], lr=lr) for p in model.parameters() if p.requires_grad}

    def step(p):
        optimizers[p].step()
        optimizers[p].zero_grad()  # sets .grad to None

    return [p.register_post_accumulate_grad_hook(step) for p in optimizers]
''',
         expect=[]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="returns a generator of handles",
         source=_fused("""    handles = []
    for param in model.parameters():
        if param.requires_grad:
            handles.append(param.register_post_accumulate_grad_hook(step))
    return handles""", """    return (param.register_post_accumulate_grad_hook(step)
            for param in model.parameters() if param.requires_grad)"""),
         expect=["an iterator", "registers nothing until it is read", "build a list"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="a hard-coded learning rate",
         source=_fused("param.sub_(lr * param.grad)", "param.sub_(0.1 * param.grad)"),
         expect=["lr=0.05", "learning rate other than lr"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="skips the step when grad mode is on",
         source=_fused("""        with torch.no_grad():
            param.sub_(lr * param.grad)""", """        if torch.is_grad_enabled():
            return
        param.sub_(lr * param.grad)"""),
         expect=["create_graph=True", "no parameter changed", "torch.no_grad()"]),
    dict(exercise="fuse_sgd_into_backward", kind="right", why="a callable class, in-place -=, del .grad, a tuple",
         source='''
import torch


class SgdStep:
    def __init__(self, lr):
        self.lr = lr

    def __call__(self, param):
        with torch.no_grad():
            param -= self.lr * param.grad
        del param.grad


def fuse_sgd_into_backward(model, lr):
    step = SgdStep(lr)
    return tuple(p.register_post_accumulate_grad_hook(step) for _, p in model.named_parameters() if p.requires_grad)
''',
         expect=[]),

    # ------------------------------------------------------------------ call_when_all_grads_ready
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="mode any",
         source=edited(_MULTI, ("(tensors, callback)\n", "(tensors, callback, mode=\"any\")\n")),
         expect=["one tensor", "mode='any'"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="a tensor hook on each tensor",
         source='''
import torch


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def call_when_all_grads_ready(tensors, callback):
    grads = [None] * len(tensors)

    def make_hook(i):
        def hook(grad):
            grads[i] = grad
            callback(tuple(grads))
        return hook

    return Handles([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         expect=["times in one backward pass", "once per tensor"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="calls back once ever",
         source='''
import torch


def call_when_all_grads_ready(tensors, callback):
    done = []

    def once(grads):
        if not done:
            done.append(True)
            callback(grads)

    return torch.autograd.graph.register_multi_grad_hook(tensors, once)
''',
         expect=["not called", "not once ever"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="counts until every tensor has a gradient",
         source='''
import torch


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def call_when_all_grads_ready(tensors, callback):
    grads = {}

    def make_hook(i):
        def hook(grad):
            grads[i] = grad
            if len(grads) == len(tensors):
                callback(tuple(grads[j] for j in range(len(tensors))))
                grads.clear()
        return hook

    return Handles([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         expect=["reaches only some of the tensors", "none for the"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="zeros instead of None",
         source='''
import torch


def call_when_all_grads_ready(tensors, callback):
    def fill(grads):
        callback(tuple(torch.zeros_like(t) if g is None else g for t, g in zip(tensors, grads)))

    return torch.autograd.graph.register_multi_grad_hook(tensors, fill)
''',
         expect=["expected none", "pass none on"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="gradients in reverse order",
         source='''
import torch


def call_when_all_grads_ready(tensors, callback):
    return torch.autograd.graph.register_multi_grad_hook(tensors, lambda grads: callback(grads[::-1]))
''',
         expect=["in the order of `tensors`"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="callback gets the gradients unpacked",
         source='''
import torch


def call_when_all_grads_ready(tensors, callback):
    return torch.autograd.graph.register_multi_grad_hook(tensors, lambda grads: callback(*grads))
''',
         expect=["arguments; expected one"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="returns no handle",
         source='''
import torch


def call_when_all_grads_ready(tensors, callback):
    torch.autograd.graph.register_multi_grad_hook(tensors, callback)
''',
         expect=["returned none", "remove()"]),
    dict(exercise="call_when_all_grads_ready", kind="right", why="a wrapper that passes a tuple",
         source='''
from torch.autograd.graph import register_multi_grad_hook


def call_when_all_grads_ready(tensors, callback):
    def all_ready(grads):
        callback(tuple(grads))

    return register_multi_grad_hook(list(tensors), all_ready, mode="all")
''',
         expect=[]),
    dict(exercise="call_when_all_grads_ready", kind="right", why="a class with a remove method",
         source='''
import torch


class Watcher:
    def __init__(self, tensors, callback):
        self.callback = callback
        self.handle = torch.autograd.graph.register_multi_grad_hook(tensors, self.fire)

    def fire(self, grads):
        self.callback([g for g in grads])

    def remove(self):
        self.handle.remove()


def call_when_all_grads_ready(tensors, callback):
    return Watcher(tensors, callback)
''',
         expect=[]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="drops the None entries",
         source='''
import torch


def call_when_all_grads_ready(tensors, callback):
    def reached(grads):
        callback([g for g in grads if g is not None])

    return torch.autograd.graph.register_multi_grad_hook(tensors, reached)
''',
         expect=["backward pass 2", "3 entries, one per tensor"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="reads .grad instead of the gradients received",
         source='''
import warnings

import torch


def call_when_all_grads_ready(tensors, callback):
    def from_grad(grads):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # .grad of a non-leaf
            callback([t.grad for t in tensors])

    return torch.autograd.graph.register_multi_grad_hook(tensors, from_grad)
''',
         expect=["entry 0 is none", ".grad may not be written yet"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="watches the leaves only",
         source='''
import torch


def call_when_all_grads_ready(tensors, callback):
    leaves = [i for i, t in enumerate(tensors) if t.is_leaf]

    def spread(grads):
        every = [None] * len(tensors)
        for i, grad in zip(leaves, grads):
            every[i] = grad
        callback(every)

    return torch.autograd.graph.register_multi_grad_hook([tensors[i] for i in leaves], spread)
''',
         expect=["entry 1 is none", "not a leaf", "not only the leaves"]),
    dict(exercise="call_when_all_grads_ready", kind="right", why="tensor hooks and a callback queued for the end of backward",
         source='''
from torch.autograd import Variable


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def call_when_all_grads_ready(tensors, callback):
    pending = {}

    def deliver():
        grads = pending.pop("grads")
        callback(grads)

    def make_hook(i):
        def hook(grad):
            if "grads" not in pending:
                pending["grads"] = [None] * len(tensors)
                Variable._execution_engine.queue_callback(deliver)  # runs when this backward pass ends
            pending["grads"][i] = grad
        return hook

    return Handles([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         expect=[]),
    # ------------------------------------------------------------------ HalfPrecisionSaver
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="unpack gives back float16",
         source=_saver("return tensor if dtype is None else tensor.to(dtype)", "return tensor"),
         expect=["original dtype"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="stores flattened, gives back flat",
         source=_saver("return tensor.half(), tensor.dtype", "return tensor.half().flatten(), tensor.dtype"),
         expect=["original shape"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="converts integer and bfloat16 tensors too",
         source=_saver("if tensor.dtype not in (torch.float32, torch.float64):",
                       "if tensor.dtype in (torch.float16,):"),
         expect=["every other tensor unchanged"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="converts integer tensors too",
         source=_saver("""            return tensor, None
        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)""", """            if tensor.is_floating_point():
                return tensor, None
        else:
            self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)"""),
         expect=["sort over 4200", "index out of range", "integer and bfloat16 tensors keep their values"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="converts bfloat16 tensors too",
         source=_saver("if tensor.dtype not in (torch.float32, torch.float64):",
                       "if not tensor.is_floating_point():"),
         expect=["bfloat16 tensors keep their values"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="stores in full precision",
         source=_saver("return tensor.half(), tensor.dtype", "return tensor, tensor.dtype"),
         expect=["full-precision gradient", "not stored as float16"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts every byte of the tensor",
         source=_saver("tensor.numel() * (tensor.element_size() - 2)", "tensor.numel() * tensor.element_size()"),
         expect=["counted every byte"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts 2 bytes a number",
         source=_saver("tensor.numel() * (tensor.element_size() - 2)", "tensor.numel() * 2"),
         expect=["float64 number takes 8 bytes"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts numbers",
         source=_saver("tensor.numel() * (tensor.element_size() - 2)", "tensor.numel()"),
         expect=["numbers, not bytes"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts tensors that stay as they are",
         source=_saver("""        if tensor.dtype not in (torch.float32, torch.float64):
            return tensor, None
        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)""",
                       """        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)
        if tensor.dtype not in (torch.float32, torch.float64):
            return tensor, None"""),
         expect=["tensors that stay as they are"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="resets the count on entering",
         source=_SAVER + '''
    def __enter__(self):
        self.bytes_saved = 0
        return super().__enter__()
''',
         expect=["second `with saver:` block", "do not reset it"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="never leaves the hooks",
         source='''
import torch


class HalfPrecisionSaver:
    def __init__(self):
        self.bytes_saved = 0

    def pack(self, tensor):
        if tensor.dtype not in (torch.float32, torch.float64):
            return tensor, None
        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)
        return tensor.half(), tensor.dtype

    def unpack(self, packed):
        tensor, dtype = packed
        return tensor if dtype is None else tensor.to(dtype)

    def __enter__(self):
        torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack).__enter__()
        return self

    def __exit__(self, *exc):
        return False
''',
         expect=["after the `with` block", "remove the hooks"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts in unpack",
         source=_saver("""        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)
        return tensor.half(), tensor.dtype""", """        return tensor.half(), tensor.dtype""").replace(
             """        return tensor if dtype is None else tensor.to(dtype)""",
             """        if dtype is None:
            return tensor
        restored = tensor.to(dtype)
        self.bytes_saved += restored.numel() * (restored.element_size() - 2)
        return restored"""),
         expect=["after the forward pass", "count in the pack hook"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="stores bfloat16 instead of float16",
         source=_saver("return tensor.half(), tensor.dtype", "return tensor.bfloat16(), tensor.dtype"),
         expect=["stored as float16", "tensor.half()"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="forgets super().__init__",
         source=_saver("        super().__init__(self.pack, self.unpack)\n", ""),
         expect=["pack_hook", "must call super().__init__(pack, unpack)"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="a count shared by every saver",
         source=_saver("        self.bytes_saved = 0\n", "").replace(
             "saved_tensors_hooks):\n", "saved_tensors_hooks):\n    bytes_saved = 0\n\n").replace(
             "self.bytes_saved +=", "type(self).bytes_saved +="),
         expect=["expected 0 before any forward pass"]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="a context manager that enters saved_tensors_hooks",
         source='''
import torch


class HalfPrecisionSaver:
    def __init__(self):
        self.bytes_saved = 0
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _pack(self, t):
        if t.is_floating_point() and t.element_size() > 2 and t.dtype != torch.bfloat16:
            self.bytes_saved += t.numel() * t.element_size() - t.numel() * 2
            return {"data": t.to(torch.float16), "dtype": t.dtype}
        return {"data": t, "dtype": t.dtype}

    def _unpack(self, stored):
        return stored["data"].to(stored["dtype"])

    def __enter__(self):
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        return self._hooks.__exit__(*exc)
''',
         expect=[]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="closures instead of methods",
         source='''
import torch
from torch.autograd.graph import saved_tensors_hooks


class HalfPrecisionSaver(saved_tensors_hooks):
    def __init__(self):
        self.bytes_saved = 0

        def pack(tensor):
            if tensor.dtype in (torch.float32, torch.float64):
                small = tensor.to(torch.half)
                self.bytes_saved += tensor.nelement() * tensor.element_size() - small.nelement() * small.element_size()
                return small, tensor.dtype
            return tensor, tensor.dtype

        super().__init__(pack, lambda packed: packed[0].to(packed[1]))
''',
         expect=[]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="a new saved_tensors_hooks on each entry, kept on a stack",
         source='''
import torch


class HalfPrecisionSaver:
    def __init__(self):
        self.bytes_saved = 0
        self._entered = []

    def _pack(self, t):
        if t.dtype in (torch.float32, torch.float64):
            self.bytes_saved += t.numel() * (t.element_size() - 2)
            return t.to(torch.float16), t.dtype
        return t, t.dtype

    def __enter__(self):
        hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda packed: packed[0].to(packed[1]))
        hooks.__enter__()
        self._entered.append(hooks)
        return self

    def __exit__(self, *exc):
        return self._entered.pop().__exit__(*exc)
''',
         expect=[]),
]
