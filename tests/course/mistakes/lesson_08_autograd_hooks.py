"""Mistake catalogue for lesson 08, autograd-level hooks. The format of an entry is
described in tests/course/test_mistake_catalogue.py. An entry that is the reference solution with one
mistake says so: `edited(reference(exercise), (old, new), ...)`, which insists that each change
applies; the others are submissions of their own."""

from mistakes import edited, reference


ENTRIES = [
    # ------------------------------------------------------------------ fuse_sgd_into_backward
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="steps in a tensor hook", clause="post-accumulate",
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
         mistake="08.fuse_sgd_into_backward.steps-in-tensor-hook",
         expect=["torch.autograd.grad fires tensor hooks", "register_post_accumulate_grad_hook"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="forgets torch.no_grad", clause="no-grad",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('        with torch.no_grad():\n            param.sub_(lr * param.grad)',
                        '        param.sub_(lr * param.grad)')),
         mistake="08.fuse_sgd_into_backward.no-grad-missing",
         expect=["create_graph=True", "torch.no_grad()"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="does not clear the gradient", clause="grad-none",
         source=edited(reference("fuse_sgd_into_backward"), ('        param.grad = None\n', '')),
         mistake="08.fuse_sgd_into_backward.grad-not-freed",
         expect=["grad is still", "set the parameter's .grad to none"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="zeroes the gradient instead of freeing it", clause="grad-none",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('        param.grad = None\n', '        param.grad.zero_()\n')),
         mistake="08.fuse_sgd_into_backward.grad-zeroed-not-freed",
         expect=["tensor of zeros", "expected none"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="takes the hook's argument for the gradient", clause="update",
         source=edited(reference("fuse_sgd_into_backward"), ('param.sub_(lr * param.grad)', 'param.sub_(lr * param)')),
         mistake="08.fuse_sgd_into_backward.steps-by-parameter",
         expect=["receives the parameter, not its", "param.grad"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="hooks frozen parameters too", clause="frozen",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('return [param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad]',
                        'handles = []\n'
                        '    for param in model.parameters():\n'
                        '        handles.append(param.register_post_accumulate_grad_hook(step))\n'
                        '    return handles')),
         mistake="08.fuse_sgd_into_backward.hooks-frozen-parameter",
         expect=["does not require grad", "skip the frozen parameters"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="returns the new value, as a tensor hook would", clause="in-place",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('        with torch.no_grad():\n'
                        '            param.sub_(lr * param.grad)\n'
                        '        param.grad = None',
                        '        with torch.no_grad():\n            return param - lr * param.grad')),
         mistake="08.fuse_sgd_into_backward.hook-returns-value",
         expect=["must return none"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="rebinds a local name instead of updating in place", clause="in-place",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('param.sub_(lr * param.grad)', 'param = param - lr * param.grad')),
         mistake="08.fuse_sgd_into_backward.rebinds-local-name",
         expect=["no parameter", "in place", "rebinds a local name"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="adds the gradient", clause="update",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('param.sub_(lr * param.grad)', 'param.add_(lr * param.grad)')),
         mistake="08.fuse_sgd_into_backward.adds-gradient",
         expect=["added lr * gradient"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="uses the loop variable in the hook", clause="every-trainable",
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
         mistake="08.fuse_sgd_into_backward.reads-grad-when-none",
         expect=["loop variable", "use the parameter the hook receives"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="loop variable, guarded against None", clause="every-trainable",
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
         mistake="08.fuse_sgd_into_backward.uses-loop-variable",
         expect=["did not change", "loop variable", "updates the last parameter only"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="returns one handle only", clause="handles",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('return [param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad]',
                        'handles = []\n'
                        '    for param in model.parameters():\n'
                        '        if param.requires_grad:\n'
                        '            handles.append(param.register_post_accumulate_grad_hook(step))\n'
                        '    return handles[-1:]')),
         mistake="08.fuse_sgd_into_backward.missing-handles",
         expect=["returned 1 handles", "one per parameter that requires grad"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="turns grad mode off for good", clause="no-grad",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('return [param.register_post_accumulate_grad_hook(step)',
                        'torch.set_grad_enabled(False)\n    return [param.register_post_accumulate_grad_hook(step)')),
         mistake="08.fuse_sgd_into_backward.grad-mode-left-changed",
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
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="returns a generator of handles", clause="handles",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('return [param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad]',
                        'return (param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad)')),
         mistake="08.fuse_sgd_into_backward.handles-as-generator",
         expect=["an iterator", "registers nothing until it is read", "build a list"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="a hard-coded learning rate", clause="update",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('param.sub_(lr * param.grad)', 'param.sub_(0.1 * param.grad)')),
         mistake="08.fuse_sgd_into_backward.step-twice-as-large",
         expect=["lr=0.05", "learning rate other than lr"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", why="skips the step when grad mode is on", clause="no-grad",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('        with torch.no_grad():\n            param.sub_(lr * param.grad)',
                        '        if torch.is_grad_enabled():\n'
                        '            return\n'
                        '        param.sub_(lr * param.grad)')),
         mistake="08.fuse_sgd_into_backward.skips-step-under-grad-mode",
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
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="mode any", clause="sequence",
         source=edited(reference("call_when_all_grads_ready"),
                       ('(tensors, callback)\n', '(tensors, callback, mode="any")\n')),
         mistake="08.call_when_all_grads_ready.passes-one-tensor",
         expect=["one tensor", "mode='any'"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="a tensor hook on each tensor", clause="exactly-once",
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
         mistake="08.call_when_all_grads_ready.called-per-tensor",
         expect=["times in one backward pass", "once per tensor"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="calls back once ever", clause="every-pass",
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
         mistake="08.call_when_all_grads_ready.not-called-in-a-pass",
         expect=["not called", "not once ever"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="counts until every tensor has a gradient", clause="every-pass",
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
         mistake="08.call_when_all_grads_ready.not-called-in-a-pass",
         expect=["reaches only some of the tensors", "none for the"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="zeros instead of None", clause="none",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'def fill(grads):\n'
                        '        callback(tuple(torch.zeros_like(t) if g is None else g for t, g in zip(tensors, grads)))\n'
                        '\n'
                        '    return torch.autograd.graph.register_multi_grad_hook(tensors, fill)')),
         mistake="08.call_when_all_grads_ready.value-instead-of-none",
         expect=["expected none", "pass none on"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="gradients in reverse order", clause="order",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'return torch.autograd.graph.register_multi_grad_hook(tensors, lambda grads: callback(grads[::-1]))')),
         mistake="08.call_when_all_grads_ready.gradients-out-of-order",
         expect=["in the order of `tensors`"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="callback gets the gradients unpacked", clause="sequence",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'return torch.autograd.graph.register_multi_grad_hook(tensors, lambda grads: callback(*grads))')),
         mistake="08.call_when_all_grads_ready.gradients-unpacked",
         expect=["arguments; expected one"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="returns no handle", clause="handle",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'torch.autograd.graph.register_multi_grad_hook(tensors, callback)')),
         mistake="08.call_when_all_grads_ready.no-handle",
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
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="drops the None entries", clause="sequence",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'def reached(grads):\n'
                        '        callback([g for g in grads if g is not None])\n'
                        '\n'
                        '    return torch.autograd.graph.register_multi_grad_hook(tensors, reached)')),
         mistake="08.call_when_all_grads_ready.not-one-entry-per-tensor",
         expect=["backward pass 2", "3 entries, one per tensor"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="reads .grad instead of the gradients received", clause="gradient",
         source=edited(reference("call_when_all_grads_ready"),
                       ('import torch', 'import warnings\nimport torch'),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'def from_grad(grads):\n'
                        '        with warnings.catch_warnings():\n'
                        '            warnings.simplefilter("ignore")  # .grad of a non-leaf\n'
                        '            callback([t.grad for t in tensors])\n'
                        '\n'
                        '    return torch.autograd.graph.register_multi_grad_hook(tensors, from_grad)')),
         mistake="08.call_when_all_grads_ready.none-for-reached-tensor",
         expect=["entry 0 is none", ".grad may not be written yet"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="watches the leaves only", clause="any-tensor",
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
         mistake="08.call_when_all_grads_ready.none-for-reached-tensor",
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
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="unpack gives back float16", clause="dtype",
         source=edited(reference("HalfPrecisionSaver"),
                       ('return tensor if dtype is None else tensor.to(dtype)', 'return tensor')),
         mistake="08.HalfPrecisionSaver.wrong-dtype-unpacked",
         expect=["original dtype"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="stores flattened, gives back flat", clause="shape",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self._copies[key] = tensor.half()', 'self._copies[key] = tensor.half().flatten()')),
         mistake="08.HalfPrecisionSaver.wrong-shape-unpacked",
         expect=["original shape"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="converts bfloat16 and float16 activations too",
         clause="others",
         source=edited(reference("HalfPrecisionSaver"),
                       ('if base.is_leaf or tensor.dtype not in (torch.float32, torch.float64):',
                        'if base.is_leaf or not tensor.is_floating_point():')),
         mistake="08.HalfPrecisionSaver.converts-low-precision",
         expect=["bfloat16 and float16 tensors keep their values"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="converts integer tensors too (no leaf rule)",
         clause="leaves",
         source=edited(reference("HalfPrecisionSaver"),
                       ('if base.is_leaf or tensor.dtype not in (torch.float32, torch.float64):',
                        'if tensor.dtype in (torch.float16, torch.bfloat16) or (base.is_leaf and tensor.is_floating_point()):')),
         mistake="08.HalfPrecisionSaver.converts-tensor-kept-as-is",
         expect=["int64 indices that torch.sort saves", "integer tensor never requires grad", "so it is a leaf"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="stores in full precision", clause="float16",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self._copies[key] = tensor.half()', 'self._copies[key] = tensor.clone()')),
         mistake="08.HalfPrecisionSaver.not-stored-as-float16",
         expect=["full-precision gradient", "not stored as float16"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="stores bfloat16 instead of float16", clause="float16",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self._copies[key] = tensor.half()', 'self._copies[key] = tensor.bfloat16()')),
         mistake="08.HalfPrecisionSaver.copies-as-bfloat16",
         expect=["stored as float16", "tensor.half()"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts every byte of the tensor", clause="count",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)',
                        'self.bytes_saved += tensor.numel() * tensor.element_size()')),
         mistake="08.HalfPrecisionSaver.counts-every-byte",
         expect=["counted every byte"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts 2 bytes a number", clause="count",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)',
                        'self.bytes_saved += tensor.numel() * 2')),
         mistake="08.HalfPrecisionSaver.counts-2-bytes-a-number",
         expect=["float64 number takes 8 bytes"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts numbers", clause="count",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)',
                        'self.bytes_saved += tensor.numel()')),
         mistake="08.HalfPrecisionSaver.counts-numbers",
         expect=["numbers, not bytes"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts tensors that stay as they are", clause="count",
         source=edited(reference("HalfPrecisionSaver"),
                       ('            self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)\n', ''),
                       ('        base = tensor if',
                        '        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)\n'
                        '        base = tensor if')),
         mistake="08.HalfPrecisionSaver.counts-unconverted-tensors",
         expect=["tensors that stay as they are"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="resets the count on entering", clause="across-blocks",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    def __enter__(self):\n'
                        '        self.bytes_saved = 0\n'
                        '        return super().__enter__()\n')),
         mistake="08.HalfPrecisionSaver.count-reset-on-enter",
         expect=["second `with saver:` block", "do not reset it"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="never leaves the hooks", clause="outside",
         source=edited(reference("HalfPrecisionSaver"),
                       ('class HalfPrecisionSaver(torch.autograd.graph.saved_tensors_hooks):',
                        'class HalfPrecisionSaver:'),
                       ('        super().__init__(self.pack, self.unpack)\n', ''),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    def __enter__(self):\n'
                        '        torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack).__enter__()\n'
                        '        return self\n'
                        '\n'
                        '    def __exit__(self, *exc):\n'
                        '        return False\n')),
         mistake="08.HalfPrecisionSaver.hooks-left-after-block",
         expect=["after the `with` block", "remove the hooks"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="counts in unpack", clause="in-forward",
         source=edited(reference("HalfPrecisionSaver"),
                       ('            self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)\n', ''),
                       ('        return tensor if dtype is None else tensor.to(dtype)',
                        '        if dtype is None:\n'
                        '            return tensor\n'
                        '        restored = tensor.to(dtype)\n'
                        '        self.bytes_saved += restored.numel() * (restored.element_size() - 2)\n'
                        '        return restored')),
         mistake="08.HalfPrecisionSaver.counts-in-unpack",
         expect=["after the forward pass", "count in the pack hook"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="forgets super().__init__", clause="context-manager",
         source=edited(reference("HalfPrecisionSaver"), ('        super().__init__(self.pack, self.unpack)\n', '')),
         mistake="08.HalfPrecisionSaver.no-super-init",
         expect=["pack_hook", "must call super().__init__(pack, unpack)"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="a count shared by every saver", clause="starts-0",
         source=edited(reference("HalfPrecisionSaver"),
                       ('def __init__(self):', 'bytes_saved = 0\n    def __init__(self):'),
                       ('        self.bytes_saved = 0\n', ''),
                       ('self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)',
                        'type(self).bytes_saved += tensor.numel() * (tensor.element_size() - 2)')),
         mistake="08.HalfPrecisionSaver.count-not-starting-at-0",
         expect=["expected 0 before any forward pass"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="converts every float32 tensor, as the lesson's naive hooks",
         clause="leaves",
         source=edited(reference("HalfPrecisionSaver"),
                       ('base = tensor if tensor._base is None else tensor._base\n'
                        '        if base.is_leaf or tensor.dtype not in (torch.float32, torch.float64):',
                        'if tensor.dtype not in (torch.float32, torch.float64):'),
                       ('key = id(tensor)\n'
                        '        if key not in self._copies:\n'
                        '            self._copies[key] = tensor.half()\n'
                        '            weakref.finalize(tensor, self._copies.pop, key, None)  # forget the copy when the tensor dies\n'
                        '            self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)\n'
                        '        return self._copies[key], tensor.dtype',
                        'self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)\n'
                        '        return tensor.half(), tensor.dtype')),
         mistake="08.HalfPrecisionSaver.converts-leaves",
         expect=["converted leaf tensors", "store leaves as they are"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="skips nn.Parameter only, as activation-offloading code does",
         clause="leaves",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        base = tensor if tensor._base is None else tensor._base\n'
                        '        if base.is_leaf or',
                        '        if isinstance(tensor, torch.nn.Parameter) or')),
         mistake="08.HalfPrecisionSaver.converts-leaves",
         expect=["converted leaf tensors", "store leaves as they are"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="skips leaves that require grad only, converts the input",
         clause="leaves",
         source=edited(reference("HalfPrecisionSaver"),
                       ('if base.is_leaf or', 'if (base.is_leaf and base.requires_grad) or')),
         mistake="08.HalfPrecisionSaver.converts-inputs",
         expect=["leaf that does not require grad", "every leaf is stored as it is"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="skips leaves but not their views", clause="views",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        base = tensor if tensor._base is None else tensor._base\n'
                        '        if base.is_leaf or',
                        '        if tensor.is_leaf or')),
         mistake="08.HalfPrecisionSaver.converts-parameter-views",
         expect=["weight.t()", "view of a parameter is stored as it is"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="converts a tensor again at each save", clause="once",
         source=edited(reference("HalfPrecisionSaver"), ('if key not in self._copies:', 'if True:')),
         mistake="08.HalfPrecisionSaver.converts-each-save",
         expect=["each time an operation saved it", "convert each tensor once"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="a cache keyed by data_ptr", clause="once",
         source=edited(reference("HalfPrecisionSaver"), ('key = id(tensor)', 'key = tensor.data_ptr()')),
         mistake="08.HalfPrecisionSaver.wrong-shape-unpacked",
         expect=["h @ h.t()", "keyed by data_ptr()", "id(tensor)"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="converts once but counts every save", clause="count-once",
         source=edited(reference("HalfPrecisionSaver"),
                       ('            self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)\n'
                        '        return',
                        '        self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)\n        return')),
         mistake="08.HalfPrecisionSaver.counts-each-save",
         expect=["counted a tensor that two operations save twice"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="a cache that never forgets its copies", clause="forgets-copies",
         source=edited(reference("HalfPrecisionSaver"),
                       ('            weakref.finalize(tensor, self._copies.pop, key, None)  # forget the copy when the tensor dies\n',
                        '')),
         mistake="08.HalfPrecisionSaver.keeps-copies-alive",
         expect=["still alive", "keep no float16 copy alive", "weakref.finalize"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="keeps the original next to its copy",
         clause="keeps-none-converted",
         source=edited(reference("HalfPrecisionSaver"),
                       ('            self._copies[key] = tensor.half()\n',
                        '            self._copies[key] = tensor.half()\n'
                        "            self.originals = [*getattr(self, 'originals', []), tensor]\n")),
         mistake="08.HalfPrecisionSaver.keeps-too-much",
         expect=["original tensor kept next to its copy"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", why="a cache of the tensors themselves, cleared when the block ends",
         clause="keeps-none-converted",
         source=edited(reference("HalfPrecisionSaver"),
                       ('super().__init__(self.pack, self.unpack)',
                        'self._kept = []\n        super().__init__(self.pack, self.unpack)'),
                       ('weakref.finalize(tensor, self._copies.pop, key, None)  # forget the copy when the tensor dies',
                        'self._kept.append(tensor)  # so that its id stays its own'),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    def __exit__(self, *exc):\n'
                        '        self._copies.clear()\n'
                        '        self._kept.clear()\n'
                        '        return super().__exit__(*exc)\n')),
         mistake="08.HalfPrecisionSaver.keeps-too-much",
         expect=["even if it is cleared when the block ends"]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="a context manager, a WeakIdKeyDictionary of copies",
         source='''
import torch
from torch.utils.weak import WeakIdKeyDictionary


class HalfPrecisionSaver:
    def __init__(self):
        self.bytes_saved = 0
        self._half_of = WeakIdKeyDictionary()  # an entry lives as long as its tensor
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _pack(self, t):
        root = t._base if t._base is not None else t
        if root.is_leaf or not t.is_floating_point() or t.element_size() <= 2:
            return {"data": t, "dtype": t.dtype}
        if t not in self._half_of:
            self._half_of[t] = t.to(torch.float16)
            self.bytes_saved += t.numel() * t.element_size() - t.numel() * 2
        return {"data": self._half_of[t], "dtype": t.dtype}

    def _unpack(self, stored):
        return stored["data"].to(stored["dtype"])

    def __enter__(self):
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        return self._hooks.__exit__(*exc)
''',
         expect=[]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="closures, and a weak reference whose callback forgets",
         source='''
import weakref

import torch
from torch.autograd.graph import saved_tensors_hooks


class HalfPrecisionSaver(saved_tensors_hooks):
    def __init__(self):
        self.bytes_saved = 0
        copies = {}

        def pack(tensor):
            if tensor.is_leaf or (tensor._base is not None and tensor._base.is_leaf):
                return tensor, None
            if tensor.dtype not in (torch.float32, torch.float64):
                return tensor, None
            key = id(tensor)
            if key in copies and copies[key][0]() is tensor:
                return copies[key][1], tensor.dtype
            small = tensor.to(torch.half)
            copies[key] = (weakref.ref(tensor, lambda _, key=key: copies.pop(key, None)), small)
            self.bytes_saved += tensor.nelement() * tensor.element_size() - small.nelement() * small.element_size()
            return small, tensor.dtype

        super().__init__(pack, lambda packed: packed[0] if packed[1] is None else packed[0].to(packed[1]))
''',
         expect=[]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="a new saved_tensors_hooks on each entry, kept on a stack",
         source='''
import weakref

import torch


class HalfPrecisionSaver:
    def __init__(self):
        self.bytes_saved = 0
        self._entered = []
        self._copies = weakref.WeakValueDictionary()  # id -> copy, while the graph holds the copy
        self._alive = {}  # id -> weak reference to the tensor, to tell a reused id apart

    def _pack(self, t):
        base = t if t._base is None else t._base
        if base.is_leaf or t.dtype not in (torch.float32, torch.float64):
            return t, t.dtype
        copy, alive = self._copies.get(id(t)), self._alive.get(id(t))
        if copy is None or alive is None or alive() is not t:
            copy = t.to(torch.float16)
            self._copies[id(t)] = copy
            self._alive[id(t)] = weakref.ref(t, lambda _, key=id(t): self._alive.pop(key, None))
            self.bytes_saved += t.numel() * (t.element_size() - 2)
        return copy, t.dtype

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

ENTRIES += [
    # ------------------------------------------------------------------ fuse_sgd_into_backward, more
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="each-once",
         why="hooks a tied weight under each of its names",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('return [param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad]',
                        'handles = []\n'
                        '    for _, param in model.named_parameters(remove_duplicate=False):\n'
                        '        if param.requires_grad:\n'
                        '            handles.append(param.register_post_accumulate_grad_hook(step))\n'
                        '    return handles')),
         mistake="08.fuse_sgd_into_backward.hooks-shared-parameter-twice",
         expect=["returned 8 handles; expected 7", "reachable under two names", "second step"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="each-once",
         why="walks every module's own parameters",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('return [param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad]',
                        'handles = []\n'
                        '    for module in model.modules():\n'
                        '        for param in module.parameters(recurse=False):\n'
                        '            if param.requires_grad:\n'
                        '                handles.append(param.register_post_accumulate_grad_hook(step))\n'
                        '    return handles')),
         mistake="08.fuse_sgd_into_backward.hooks-shared-parameter-twice",
         expect=["expected 7, one per parameter", "tied weight"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="frozen",
         why="PyTorch's tutorial loop, without the requires_grad test",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    optimizer_dict = {p: torch.optim.SGD([p], lr=lr) for p in model.parameters()}

    def optimizer_hook(parameter):
        optimizer_dict[parameter].step()
        optimizer_dict[parameter].zero_grad()

    return [p.register_post_accumulate_grad_hook(optimizer_hook) for p in model.parameters()]
''',
         mistake="08.fuse_sgd_into_backward.hooks-frozen-parameter",
         expect=["does not require grad", "skip the frozen parameters"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="grad-none",
         why="optimizer's zero_grad(set_to_none=False)",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    optimizers = {p: torch.optim.SGD([p], lr=lr) for p in model.parameters() if p.requires_grad}

    def step(p):
        optimizers[p].step()
        optimizers[p].zero_grad(set_to_none=False)

    return [p.register_post_accumulate_grad_hook(step) for p in optimizers]
''',
         mistake="08.fuse_sgd_into_backward.grad-zeroed-not-freed",
         expect=["tensor of zeros", "expected none"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="post-accumulate",
         why="a full backward hook on the root module steps every parameter",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    params = [p for p in model.parameters() if p.requires_grad]

    def step_all(module, grad_input, grad_output):
        with torch.no_grad():
            for p in params:
                if p.grad is not None:
                    p.sub_(lr * p.grad)
                    p.grad = None

    return [model.register_full_backward_hook(step_all)]
''',
         mistake="08.fuse_sgd_into_backward.missing-handles",
         expect=["returned 1 handles", "one per parameter that requires grad"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="handles",
         why="also registers a logging hook whose handle it drops",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('return [param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad]',
                        'handles = []\n'
                        '    for param in model.parameters():\n'
                        '        if param.requires_grad:\n'
                        '            param.register_hook(lambda grad: None)  # log the gradient norm here, later\n'
                        '            handles.append(param.register_post_accumulate_grad_hook(step))\n'
                        '    return handles')),
         mistake="08.fuse_sgd_into_backward.hook-left-registered",
         expect=["still has 1 hook(s)", "return the handle of every hook you registered"]),
    dict(exercise="fuse_sgd_into_backward", kind="right", why="each hook steps every parameter that has a gradient",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    params = [p for p in model.parameters() if p.requires_grad]

    def step(_):
        with torch.no_grad():
            for p in params:  # only the parameter whose hook runs has a gradient now
                if p.grad is not None:
                    p.sub_(lr * p.grad)
                    p.grad = None

    return [p.register_post_accumulate_grad_hook(step) for p in params]
''',
         expect=[]),

    # ------------------------------------------------------------------ call_when_all_grads_ready, more
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="after-all",
         why="calls back at the first gradient of the pass, with the list it fills later",
         source='''
import torch


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def call_when_all_grads_ready(tensors, callback):
    passes = {}

    def make_hook(i):
        def hook(grad):
            grads = passes.setdefault(torch._C._current_graph_task_id(), [None] * len(tensors))
            first = all(g is None for g in grads)
            grads[i] = grad
            if first:
                callback(grads)
        return hook

    return Handles([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         mistake="08.call_when_all_grads_ready.called-before-all-known",
         expect=["called before every gradient of the pass was known", "mode='all' waits"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="after-all",
         why="mode any, its gradient put first in a list",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'def first(grad):\n'
                        '        callback([grad] + [None] * (len(tensors) - 1))\n'
                        '\n'
                        '    return torch.autograd.graph.register_multi_grad_hook(tensors, first, mode="any")')),
         mistake="08.call_when_all_grads_ready.called-before-all-known",
         expect=["called before every gradient of the pass was known"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="no-call",
         why="calls back once at registration, with no gradients yet",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'callback([None] * len(tensors))  # a first call, so that the callback can set itself up\n'
                        '    return torch.autograd.graph.register_multi_grad_hook(tensors, callback)')),
         mistake="08.call_when_all_grads_ready.calls-back-while-registering",
         expect=["while registering", "expected no call"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="exactly-once",
         why="one multi-grad hook per tensor",
         source='''
import torch


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def call_when_all_grads_ready(tensors, callback):
    def make(i):
        return lambda grads: callback([grads[0] if j == i else None for j in range(len(tensors))])

    return Handles([torch.autograd.graph.register_multi_grad_hook([t], make(i)) for i, t in enumerate(tensors)])
''',
         mistake="08.call_when_all_grads_ready.called-per-tensor",
         expect=["times in one backward pass", "expected once"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="handle",
         why="returns a list of handles",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'return [torch.autograd.graph.register_multi_grad_hook(tensors, callback)]')),
         mistake="08.call_when_all_grads_ready.handle-in-a-list",
         expect=["returned a list", "one handle", "register_multi_grad_hook returns one"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="sequence",
         why="passes a generator of the gradients",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'return torch.autograd.graph.register_multi_grad_hook(tensors, lambda grads: callback(g for g in grads))')),
         mistake="08.call_when_all_grads_ready.not-one-entry-per-tensor",
         expect=["expected a list or tuple", "one per tensor"]),
    dict(exercise="call_when_all_grads_ready", kind="right", why="detached copies of the gradients, in a tuple",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'def copies(grads):\n'
                        '        callback(tuple(None if g is None else g.detach().clone() for g in grads))\n'
                        '\n'
                        '    return torch.autograd.graph.register_multi_grad_hook(list(tensors), copies)')),
         expect=[]),

    # ------------------------------------------------------------------ HalfPrecisionSaver, more
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="once",
         why="a WeakValueDictionary of copies by id, without checking the tensor is the same",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self._copies = {}  # id(tensor) -> its float16 copy, while the tensor lives',
                        'self._copies = weakref.WeakValueDictionary()'),
                       ('key = id(tensor)\n'
                        '        if key not in self._copies:\n'
                        '            self._copies[key] = tensor.half()\n'
                        '            weakref.finalize(tensor, self._copies.pop, key, None)  # forget the copy when the tensor dies',
                        'copy = self._copies.get(id(tensor))  # alive while the graph holds it\n'
                        '        if copy is None:\n'
                        '            copy = tensor.half()\n'
                        '            self._copies[id(tensor)] = copy'),
                       ('return self._copies[key], tensor.dtype', 'return copy, tensor.dtype')),
         mistake="08.HalfPrecisionSaver.wrong-gradients",
         expect=["a cache must check that its tensor is still alive", "id and memory are given to later tensors"]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="pack returns the float16 tensor, its dtype kept on it",
         source=edited(reference("HalfPrecisionSaver"),
                       ('            return tensor, None\n', '            return tensor\n'),
                       ('            self._copies[key] = tensor.half()\n',
                        '            half = tensor.to(torch.float16, copy=True)\n'
                        '            half.original_dtype = tensor.dtype\n'
                        '            self._copies[key] = half\n'),
                       ('        return self._copies[key], tensor.dtype\n', '        return self._copies[key]\n'),
                       ('        tensor, dtype = packed\n'
                        '        return tensor if dtype is None else tensor.to(dtype)',
                        '        return packed.to(getattr(packed, "original_dtype", packed.dtype))')),
         expect=[]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="outside",
         why="leaves the hooks only when the block ends without an exception",
         source=edited(reference("HalfPrecisionSaver"),
                       ('class HalfPrecisionSaver(torch.autograd.graph.saved_tensors_hooks):',
                        'class HalfPrecisionSaver:'),
                       ('super().__init__(self.pack, self.unpack)',
                        'self._hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)'),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    def __enter__(self):\n'
                        '        self._hooks.__enter__()\n'
                        '        return self\n'
                        '\n'
                        '    def __exit__(self, exc_type, exc, tb):\n'
                        '        if exc_type is None:\n'
                        '            self._hooks.__exit__(exc_type, exc, tb)\n'
                        '        return False\n')),
         mistake="08.HalfPrecisionSaver.hooks-left-after-block",
         expect=["left by an exception", "also when an exception leaves it"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="outside", why="swallows an exception raised in the block",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    def __exit__(self, *exc):\n'
                        '        super().__exit__(*exc)\n'
                        '        return True\n')),
         mistake="08.HalfPrecisionSaver.swallowed-exception",
         expect=["did not come out of the block", "propagate"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="dtype", why="unpack gives back float32 with .float()",
         source=edited(reference("HalfPrecisionSaver"),
                       ('return tensor if dtype is None else tensor.to(dtype)',
                        'return tensor if dtype is None else tensor.float()')),
         mistake="08.HalfPrecisionSaver.wrong-dtype-unpacked",
         expect=["float32", "expected float64", "original dtype"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="in-forward", why="adds the count up when the block ends",
         source=edited(reference("HalfPrecisionSaver"),
                       ('super().__init__(self.pack, self.unpack)',
                        'self._pending = []\n        super().__init__(self.pack, self.unpack)'),
                       ('self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)',
                        'self._pending.append(tensor.numel() * (tensor.element_size() - 2))'),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    def __exit__(self, *exc):\n'
                        '        self.bytes_saved += sum(self._pending)\n'
                        '        self._pending.clear()\n'
                        '        return super().__exit__(*exc)\n')),
         mistake="08.HalfPrecisionSaver.counts-when-block-ends",
         expect=["inside the block", "not when the block ends"]),
]

ENTRIES += [
    # ------------------------------------------------------------------ fuse_sgd_into_backward, review
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="in-place",
         why="assigns param.data a new tensor each step",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('        with torch.no_grad():\n            param.sub_(lr * param.grad)',
                        '        param.data = param - lr * param.grad')),
         mistake="08.fuse_sgd_into_backward.replaces-parameter-data",
         expect=["into new memory", "data_ptr()", "in place"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="handles", why="returns a dict of handles by name",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('return [param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad]',
                        'return {name: param.register_post_accumulate_grad_hook(step)\n'
                        '            for name, param in model.named_parameters() if param.requires_grad}')),
         mistake="08.fuse_sgd_into_backward.handles-as-dict",
         expect=["a dict", "expected a list of the handles"]),
    dict(exercise="fuse_sgd_into_backward", kind="right", why="requires_grad_(False) around the update",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    def step(p):
        g, p.grad = p.grad, None
        p.requires_grad_(False)  # an in-place change of a leaf that needs no grad is allowed
        p.sub_(lr * g.detach())
        p.requires_grad_(True)

    return [p.register_post_accumulate_grad_hook(step) for p in model.parameters() if p.requires_grad]
''',
         expect=[]),

    # ------------------------------------------------------------------ call_when_all_grads_ready, review
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="kept",
         why="hands callback its buffer list, then resets it for the next pass",
         source='''
from torch.autograd import Variable


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def call_when_all_grads_ready(tensors, callback):
    buffer = [None] * len(tensors)
    queued = []

    def deliver():
        queued.clear()
        callback(buffer)
        for i in range(len(buffer)):
            buffer[i] = None  # ready for the next pass

    def make_hook(i):
        def hook(grad):
            if not queued:
                queued.append(True)
                Variable._execution_engine.queue_callback(deliver)
            buffer[i] = grad
        return hook

    return Handles([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         mistake="08.call_when_all_grads_ready.sequence-changed-after-call",
         expect=["changed after the call", "callback may keep it", "a new list or tuple in each pass"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", why="one list filled again in every pass",
         clause="kept",
         source=edited(reference("call_when_all_grads_ready"),
                       ("    return torch.autograd.graph.register_multi_grad_hook(tensors, callback)",
                        "    shared = [None] * len(tensors)\n\n"
                        "    def fill(grads):\n"
                        "        shared[:] = grads\n"
                        "        callback(shared)\n"
                        "    return torch.autograd.graph.register_multi_grad_hook(tensors, fill)")),
         mistake="08.call_when_all_grads_ready.sequence-changed-after-call",
         expect=["changed in a later pass", "callback may keep it", "a new list or tuple in each pass"]),
    dict(exercise="call_when_all_grads_ready", kind="right",
         why="hands callback a tuple of its buffer, then resets the buffer",
         source='''
from torch.autograd import Variable


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def call_when_all_grads_ready(tensors, callback):
    buffer = [None] * len(tensors)
    queued = []

    def deliver():
        queued.clear()
        callback(tuple(buffer))
        buffer[:] = [None] * len(buffer)

    def make_hook(i):
        def hook(grad):
            if not queued:
                queued.append(True)
                Variable._execution_engine.queue_callback(deliver)
            buffer[i] = grad
        return hook

    return Handles([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         expect=[]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="removes-all",
         why="also registers a logging hook on each tensor and drops its handle",
         source=edited(reference("call_when_all_grads_ready"),
                       ('    return torch.autograd.graph.register_multi_grad_hook(tensors, callback)\n',
                        '    for t in tensors:\n'
                        '        t.register_hook(lambda grad: None)  # log the norm here, later\n'
                        '    return torch.autograd.graph.register_multi_grad_hook(tensors, callback)\n')),
         mistake="08.call_when_all_grads_ready.remove-leaves-hooks",
         expect=["still have hooks on them", "remove every hook you registered"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="any-tensor",
         why="post-accumulate-grad hooks, which only leaves take",
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
        def hook(tensor):
            grads[i] = tensor.grad
            if all(g is not None for g in grads):
                callback(list(grads))
        return hook

    return Handles([t.register_post_accumulate_grad_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         mistake="08.call_when_all_grads_ready.post-accumulate-hook-on-non-leaf",
         expect=["not leaves", "register_multi_grad_hook"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="gradient",
         why="gives the .grad of the leaves, the pass's gradients for the others",
         source=edited(reference("call_when_all_grads_ready"),
                       ('return torch.autograd.graph.register_multi_grad_hook(tensors, callback)',
                        'def mixed(grads):\n'
                        '        callback([t.grad if t.is_leaf and t.grad is not None else g for t, g in zip(tensors, grads)])\n'
                        '\n'
                        '    return torch.autograd.graph.register_multi_grad_hook(tensors, mixed)')),
         mistake="08.call_when_all_grads_ready.gradient-from-earlier-pass",
         expect=["gradient from an earlier pass", "not .grad"]),

    # ------------------------------------------------------------------ HalfPrecisionSaver, review
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="forgets-copies",
         why="copies held with a weak reference to check their tensor, cleared when the block ends",
         source=edited(reference("HalfPrecisionSaver"),
                       ('key = id(tensor)\n'
                        '        if key not in self._copies:\n'
                        '            self._copies[key] = tensor.half()\n'
                        '            weakref.finalize(tensor, self._copies.pop, key, None)  # forget the copy when the tensor dies',
                        'ref, half = self._copies.get(id(tensor), (None, None))\n'
                        '        if ref is None or ref() is not tensor:\n'
                        '            half = tensor.half()\n'
                        '            self._copies[id(tensor)] = (weakref.ref(tensor), half)'),
                       ('return self._copies[key], tensor.dtype', 'return half, tensor.dtype'),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    def __exit__(self, *exc):\n'
                        '        self._copies.clear()\n'
                        '        return super().__exit__(*exc)\n')),
         mistake="08.HalfPrecisionSaver.forgets-copies-at-block-end",
         expect=["both inside one `with saver:` block", "not when the block ends"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="leaves",
         why="asks requires_grad, not is_leaf (parameters and their views converted)",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        base = tensor if tensor._base is None else tensor._base\n'
                        '        if base.is_leaf or',
                        '        if not tensor.requires_grad or')),
         mistake="08.HalfPrecisionSaver.converts-parameters",
         expect=["converted the parameters", "requires_grad does not tell an activation from a parameter"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="dtype",
         why="keeps the dtype to give back on the saver, not with each tensor",
         source=edited(reference("HalfPrecisionSaver"),
                       ('            return tensor, None\n',
                        '            return tensor, None\n        self._dtype = tensor.dtype\n'),
                       ('        return self._copies[key], tensor.dtype\n', '        return self._copies[key], True\n'),
                       ('return tensor if dtype is None else tensor.to(dtype)',
                        'return tensor if dtype is None else tensor.to(self._dtype)')),
         mistake="08.HalfPrecisionSaver.wrong-dtype-unpacked",
         expect=["came back from unpack as float32", "expected float64"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="in-forward",
         why="bytes_saved adds up the float16 copies alive now",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        self.bytes_saved = 0\n', ''),
                       ('super().__init__(self.pack, self.unpack)',
                        'self._saves = {}\n        super().__init__(self.pack, self.unpack)'),
                       ('weakref.finalize(tensor, self._copies.pop, key, None)  # forget the copy when the tensor dies',
                        'copy = self._copies[key]  # counted while the graph holds it\n'
                        '            self._saves[id(copy)] = tensor.numel() * (tensor.element_size() - 2)\n'
                        '            weakref.finalize(copy, self._saves.pop, id(copy), None)\n'
                        '            weakref.finalize(tensor, self._copies.pop, key, None)  # forget the copy when the tensor dies'),
                       ('            self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)\n', ''),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    @property\n'
                        '    def bytes_saved(self):\n'
                        '        return sum(self._saves.values())\n')),
         mistake="08.HalfPrecisionSaver.count-goes-down",
         expect=["never goes down", "after backward"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="count", why="counts half of each tensor's bytes",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)',
                        'self.bytes_saved += tensor.nbytes // 2')),
         mistake="08.HalfPrecisionSaver.counts-half-the-bytes",
         expect=["half of each tensor's bytes", "saves 6"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="count", why="counts the bytes of the tensor's storage",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)',
                        'self.bytes_saved += tensor.untyped_storage().nbytes() - 2 * tensor.numel()')),
         mistake="08.HalfPrecisionSaver.counts-storage-bytes",
         expect=["untyped_storage().nbytes()", "a view's storage can be larger"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="once", why="a weakref.WeakKeyDictionary keyed by the tensor",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self._copies = {}  # id(tensor) -> its float16 copy, while the tensor lives',
                        'self._copies = weakref.WeakKeyDictionary()'),
                       ('key = id(tensor)\n'
                        '        if key not in self._copies:\n'
                        '            self._copies[key] = tensor.half()\n'
                        '            weakref.finalize(tensor, self._copies.pop, key, None)  # forget the copy when the tensor dies',
                        'if tensor not in self._copies:\n            self._copies[tensor] = tensor.half()'),
                       ('return self._copies[key], tensor.dtype', 'return self._copies[tensor], tensor.dtype')),
         mistake="08.HalfPrecisionSaver.tensor-compared-by-value",
         expect=["boolean value of tensor", "WeakKeyDictionary", "WeakTensorKeyDictionary"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="context-manager",
         why="an __enter__ of its own that does not call super().__enter__()",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        return tensor if dtype is None else tensor.to(dtype)\n',
                        '        return tensor if dtype is None else tensor.to(dtype)\n'
                        '\n'
                        '    def __enter__(self):\n'
                        '        self._copies.clear()\n'
                        '        return self\n')),
         mistake="08.HalfPrecisionSaver.no-super-enter",
         expect=["must call super().__enter__()"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="float16", why="stores every view as it is",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        base = tensor if tensor._base is None else tensor._base\n'
                        '        if base.is_leaf or',
                        '        if tensor.is_leaf or tensor._base is not None or')),
         mistake="08.HalfPrecisionSaver.views-of-activations-as-is",
         expect=["a view of an activation as it is", "only views of leaves"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="once",
         why="converts at the first save, stores the later saves as they are",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        if key not in self._copies:\n            self._copies[key] = tensor.half()',
                        '        if key in self._copies:\n'
                        '            return tensor, None\n'
                        '        if True:\n'
                        '            self._copies[key] = tensor.half()')),
         mistake="08.HalfPrecisionSaver.later-saves-as-is",
         expect=["second save of a tensor as it is", "one float16 copy for every save"]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="stores a numpy float16 array",
         source=edited(reference("HalfPrecisionSaver"),
                       ('self._copies[key] = tensor.half()', 'self._copies[key] = tensor.detach().half().numpy()'),
                       ('return tensor if dtype is None else tensor.to(dtype)',
                        'return tensor if dtype is None else torch.from_numpy(tensor).to(dtype)')),
         expect=[]),
    dict(exercise="HalfPrecisionSaver", kind="right", why="a plain class with an ExitStack per block, empty + copy_",
         source='''
import contextlib
import weakref

import torch


class HalfPrecisionSaver:
    def __init__(self):
        self.bytes_saved = 0
        self._stacks = []
        self._cache = {}

    def __enter__(self):
        stack = contextlib.ExitStack()
        stack.enter_context(torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack))
        self._stacks.append(stack)
        return self

    def __exit__(self, *exc):
        return self._stacks.pop().__exit__(*exc)

    def _pack(self, t):
        owner = t if t._base is None else t._base
        if owner.grad_fn is None or t.dtype not in (torch.float32, torch.float64):
            return ("same", t)
        entry = self._cache.get(id(t))
        if entry is None:
            entry = torch.empty(t.shape, dtype=torch.float16).copy_(t)
            self._cache[id(t)] = entry
            weakref.finalize(t, self._cache.pop, id(t), None)
            self.bytes_saved += t.numel() * t.element_size() - entry.numel() * entry.element_size()
        return ("half", entry, t.dtype)

    def _unpack(self, packed):
        return packed[1] if packed[0] == "same" else packed[1].to(packed[2])
''',
         expect=[]),
]

ENTRIES += [
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="post-accumulate",
         why="waits for every parameter's hook, then steps them all",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    params = [p for p in model.parameters() if p.requires_grad]
    ready = []

    def step(param):
        ready.append(param)
        if len(ready) == len(params):  # every gradient is in: step them all
            with torch.no_grad():
                for p in ready:
                    p.sub_(lr * p.grad)
                    p.grad = None
            ready.clear()

    return [p.register_post_accumulate_grad_hook(step) for p in params]
''',
         mistake="08.fuse_sgd_into_backward.steps-after-all-grads",
         expect=["had not taken it yet when its own hook had run", "keeps every gradient alive"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="grad-none",
         why="frees every .grad in the hook of the parameter whose gradient comes last",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('def step(param):',
                        'params = [p for p in model.parameters() if p.requires_grad]\n    def step(param):'),
                       ('param.grad = None\n'
                        '\n'
                        '    return [param.register_post_accumulate_grad_hook(step)\n'
                        '            for param in model.parameters() if param.requires_grad]',
                        "if param is params[0]:  # the first layer's gradient comes last in backward\n"
                        '            for p in params:\n'
                        '                p.grad = None\n'
                        '\n'
                        '    return [p.register_post_accumulate_grad_hook(step) for p in params]')),
         mistake="08.fuse_sgd_into_backward.grad-freed-late",
         expect=["still had theirs when their own hook had run", "right after the step"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="grad-none", why="frees .grad before reading it",
         source=edited(reference("fuse_sgd_into_backward"),
                       ('with torch.no_grad():', 'param.grad = None\n        with torch.no_grad():')),
         mistake="08.fuse_sgd_into_backward.reads-grad-when-none",
         expect=["was none when your hook read it", "read the gradient before you set param.grad to none"]),
    dict(exercise="fuse_sgd_into_backward", kind="right", why="torch.no_grad as a decorator, add_ with alpha",
         source='''
import torch


def fuse_sgd_into_backward(model, lr):
    @torch.no_grad()
    def step(p):
        p.add_(p.grad, alpha=-lr)
        p.grad = None

    return [p.register_post_accumulate_grad_hook(step) for p in model.parameters() if p.requires_grad]
''',
         expect=[]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="handle",
         why="remove() removes the first tensor's hook only",
         source='''
from torch.autograd import Variable


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        self.handles[0].remove()


def call_when_all_grads_ready(tensors, callback):
    pending = {}

    def deliver():
        callback(tuple(pending.pop("grads")))

    def make_hook(i):
        def hook(grad):
            if "grads" not in pending:
                pending["grads"] = [None] * len(tensors)
                Variable._execution_engine.queue_callback(deliver)
            pending["grads"][i] = grad
        return hook

    return Handles([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         mistake="08.call_when_all_grads_ready.remove-leaves-hooks",
         expect=["still called callback", "removes every hook you registered"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="none",
         why="a buffer that keeps the gradients of the pass before",
         source='''
from torch.autograd import Variable


class Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()


def call_when_all_grads_ready(tensors, callback):
    grads = [None] * len(tensors)
    queued = []

    def deliver():
        queued.clear()
        callback(tuple(grads))

    def make_hook(i):
        def hook(grad):
            if not queued:
                queued.append(True)
                Variable._execution_engine.queue_callback(deliver)
            grads[i] = grad
        return hook

    return Handles([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])
''',
         mistake="08.call_when_all_grads_ready.gradient-from-earlier-pass",
         expect=["expected none", "nor a buffer left from the pass before"]),
]

ENTRIES += [
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="float16",
         why="stores the original next to its copy, to read its dtype in unpack",
         source=edited(reference("HalfPrecisionSaver"),
                       ('        return self._copies[key], tensor.dtype\n',
                        '        return self._copies[key], tensor\n'),
                       ('return tensor if dtype is None else tensor.to(dtype)',
                        'return tensor if dtype is None else tensor.to(dtype.dtype)')),
         mistake="08.HalfPrecisionSaver.keeps-too-much",
         expect=["graph holds", "the original tensor kept next to its copy"]),
]

CLAUSES = {
    "fuse_sgd_into_backward": {
        "every-trainable": "For every parameter of `model` that requires grad",
        "each-once": "each one once, as model.parameters() gives it, also a parameter reachable under two names",
        "post-accumulate": "registers a post-accumulate-grad hook that, once backward has written the parameter's "
                           "gradient",
        "in-place": "updates the parameter in place",
        "no-grad": "under torch.no_grad()",
        "update": "param <- param - lr * param.grad",
        "grad-none": "and then sets param.grad to None",
        "frozen": "Parameters that do not require grad get no hook.",
        "handles": "Returns a list of the handles of all hooks registered.",
    },
    "call_when_all_grads_ready": {
        "any-tensor": "a list of tensors that require grad (leaves or not)",
        "every-pass": "In every backward pass that computes the gradient of at least one of `tensors`",
        "exactly-once": "calls callback(grads) exactly once",
        "after-all": "after every gradient of `tensors` that this pass computes is known",
        "sequence": "`grads` is a list or tuple with one entry per tensor",
        "order": "in order",
        "gradient": "the gradient, or None",
        "none": "or None for a tensor this pass does not reach",
        "no-call": "It is never called otherwise: not while registering, nor in a pass that computes none of them.",
        "kept": "callback may keep `grads`: it is not changed after the call.",
        "handle": "Returns a handle whose remove() stops the calls",
        "removes-all": "and removes every hook registered.",
    },
    "HalfPrecisionSaver": {
        "context-manager": "A context manager that stores the activations saved for backward in float16.",
        "leaves": "a leaf tensor (a parameter, frozen or not, an input, an integer tensor: any tensor that no recorded "
                  "operation made)",
        "views": "or a view of one (its `_base` is a leaf, like the `weight.t()` that nn.Linear saves), is stored as "
                 "it is, not copied",
        "float16": "any other tensor whose dtype is float32 or float64 is stored as float16",
        "dtype": "given back in backward with its original dtype",
        "shape": "original dtype and shape",
        "once": "a tensor that several operations save (the same tensor object) is converted once, and that one "
                "float16 copy is stored for each of them",
        "others": "any other tensor (float16, bfloat16) is stored and given back as it is.",
        "keeps-none-converted": "The saver itself keeps no tensor alive: not a tensor it converts",
        "forgets-copies": "and no float16 copy once the tensor it was made from is freed",
        "starts-0": "`bytes_saved` starts at 0",
        "count": "grows by `tensor.numel() * (tensor.element_size() - 2)` for each tensor converted to float16",
        "count-once": "(once per tensor)",
        "in-forward": "in forward (backward leaves it alone)",
        "across-blocks": "one saver may be used in several `with` blocks, and the count keeps growing across them.",
        "outside": "Outside the blocks nothing changes, also after a block that an exception left (the exception "
                   "goes on).",
    },
}

_SUMMARY = "the one-line summary of the sentences below, each of which is a clause"
_PROTOCOL = ("describes when saved_tensors_hooks calls the method; what pack and unpack must do is in the class's "
             "clauses (a right answer may have no methods of these names)")
NOT_CLAUSES = {
    "fuse_sgd_into_backward": {
        "Make every backward pass through `model` also take a plain SGD step.": _SUMMARY,
        "Receives `model`, an nn.Module, and `lr`, a positive Python number.":
            "describes the arguments the check passes; a step with another rate breaks the clause 'update'",
    },
    "call_when_all_grads_ready": {
        "Call `callback` once per backward pass, with the gradients of all `tensors`.": _SUMMARY,
        "and `callback`, a function.": "describes the argument the check passes",
    },
    "HalfPrecisionSaver": {
        "Inside `with saver:`, for each tensor that autograd saves:":
            "introduces the three items below, each a clause; 'outside the blocks' is the clause 'outside'",
        "Called in forward with each tensor autograd saves": _PROTOCOL,
        "returns what to store instead.": _PROTOCOL,
        "Called in backward with what pack returned": _PROTOCOL,
        "returns the tensor for backward to use.": _PROTOCOL,
    },
}

# predict_leaf_backward_order: a prediction of the events a piece of code logs (hooked/checks/event_predictions.py)
from mistakes import predicted  # noqa: E402

CLAUSES["predict_leaf_backward_order"] = {
    "events": "Return the events that `leaf_backward_events` logs",
    "order": "in the order they fire",
    "names": "one of the names the cell above logs",
}
_LEAF = ["tensor:h", "tensor:w", "node-pre:w", "grad:w", "post:w", "node:w"]
ENTRIES += [
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="order", why="the leaf's hooks before h's",
         source=predicted("predict_leaf_backward_order", _LEAF[1:] + ["tensor:h"]),
         mistake="08.predict_leaf_backward_order.leaf-hooks-before-h",
         expect=["at index 0", "'tensor:h' fires there", "backward runs from the loss toward the leaves"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="order", why="registration order on the leaf",
         source=predicted("predict_leaf_backward_order", ["tensor:h", "grad:w", "post:w", "node:w", "node-pre:w",
                                                           "tensor:w"]),
         mistake="08.predict_leaf_backward_order.tensor-hook-not-first",
         expect=["at index 1", "a tensor hook on a leaf fires first among the leaf's hooks"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="order", why="w used twice fires twice",
         source=predicted("predict_leaf_backward_order", ["tensor:h", "tensor:w", "tensor:w"] + _LEAF[2:]),
         mistake="08.predict_leaf_backward_order.used-twice-fires-twice",
         expect=["at index 2", "its hooks fire once per backward, with the summed gradient"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="order", why="the node hook before post-accumulate",
         source=predicted("predict_leaf_backward_order", _LEAF[:4] + ["node:w", "post:w"]),
         mistake="08.predict_leaf_backward_order.post-hook-out-of-place",
         expect=["at index 4", "the post-accumulate hook runs right after .grad is written"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="order", why=".grad written before the node pre-hook",
         source=predicted("predict_leaf_backward_order", ["tensor:h", "tensor:w", "grad:w", "node-pre:w", "post:w",
                                                           "node:w"]),
         mistake="08.predict_leaf_backward_order.node-pre-hook-after-grad",
         expect=["at index 2", "pre-hook runs before the node writes .grad"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="events", why="a generator of events",
         source="def predict_leaf_backward_order():\n    return (name for name in ['tensor:h', 'tensor:w'])\n",
         mistake="08.predict_leaf_backward_order.not-a-list",
         expect=["returned a generator", "return a list (or a tuple) of event names"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="names", why="a tensor hook on the loss",
         source=predicted("predict_leaf_backward_order", ["tensor:loss"] + _LEAF),
         mistake="08.predict_leaf_backward_order.unknown-event",
         expect=["'tensor:loss' at index 0, which is not an event this code logs"]),
    dict(exercise="predict_leaf_backward_order", kind="right", why="hook, prehook and post-accumulate spellings",
         source=predicted("predict_leaf_backward_order", ["Tensor:H", "tensor-hook:w", "prehook:w", " GRAD:w",
                                                           "post-accumulate:w", "hook : w"]),
         expect=[]),
]
# The adversary pass on predict_leaf_backward_order: .grad too early, the post-accumulate hook too early, a repeat.
ENTRIES += [
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="order", why=".grad written before the tensor hook",
         source=predicted("predict_leaf_backward_order", ["tensor:h", "grad:w", "tensor:w", "node-pre:w", "post:w",
                                                           "node:w"]),
         mistake="08.predict_leaf_backward_order.tensor-hook-not-first",
         expect=["at index 1", "you predicted 'grad:w'", "before .grad is written (its return could still change"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="order", why="post-accumulate before .grad",
         source=predicted("predict_leaf_backward_order", _LEAF[:3] + ["post:w", "grad:w", "node:w"]),
         mistake="08.predict_leaf_backward_order.grad-written-out-of-place",
         expect=["at index 3", "you predicted 'post:w'", "before the post-accumulate hook"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="events", why="h's tensor hook twice",
         source=predicted("predict_leaf_backward_order", _LEAF[:1] + _LEAF),
         mistake="08.predict_leaf_backward_order.event-repeated",
         expect=["at index 1", "there is one backward pass: each hook fires once"]),
]

# Entries that name the mistakes no entry above makes (each one a diagnosis of the check's own).
ENTRIES += [
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="post-accumulate", why="hooks a clone of each parameter",
         source=edited(reference("fuse_sgd_into_backward"),
                       ("return [param.register_post_accumulate_grad_hook(step)",
                        "return [param.clone().register_post_accumulate_grad_hook(step)")),
         mistake="08.fuse_sgd_into_backward.hook-on-non-leaf",
         expect=["post-accumulate-grad hooks go on leaf tensors"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="handles", why="forgets to return the handles",
         source=edited(reference("fuse_sgd_into_backward"),
                       ("return [param.register_post_accumulate_grad_hook(step)",
                        "[param.register_post_accumulate_grad_hook(step)")),
         mistake="08.fuse_sgd_into_backward.handles-not-a-list",
         expect=["returned None as its handles", "expected a list"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="handles",
         why="returns the parameters it hooked instead of the handles",
         source=edited(reference("fuse_sgd_into_backward"),
                       ("return [param.register_post_accumulate_grad_hook(step)\n"
                        "            for param in model.parameters() if param.requires_grad]",
                        "hooked = [param for param in model.parameters() if param.requires_grad]\n"
                        "    for param in hooked:\n"
                        "        param.register_post_accumulate_grad_hook(step)\n"
                        "    return hooked")),
         mistake="08.fuse_sgd_into_backward.not-handles",
         expect=["each must be a handle", "remove() method"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="frozen",
         why="decays every parameter of the model in each hook, the frozen ones too",
         source=edited(reference("fuse_sgd_into_backward"),
                       ("            param.sub_(lr * param.grad)\n",
                        "            param.sub_(lr * param.grad)\n"
                        "            for other in model.parameters():\n"
                        "                other.mul_(1 - lr * 1e-4)\n")),
         mistake="08.fuse_sgd_into_backward.steps-frozen-parameter",
         expect=["the frozen parameter", "changed", "leave parameters that do not require grad alone"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="frozen",
         why="unfreezes the frozen parameters to hook them all",
         source=edited(reference("fuse_sgd_into_backward"),
                       ("return [param.register_post_accumulate_grad_hook(step)\n"
                        "            for param in model.parameters() if param.requires_grad]",
                        "return [param.requires_grad_().register_post_accumulate_grad_hook(step)\n"
                        "            for param in model.parameters()]")),
         mistake="08.fuse_sgd_into_backward.unfreezes-parameters",
         expect=["made the frozen parameters", "require grad", "do not unfreeze them"]),
    dict(exercise="fuse_sgd_into_backward", kind="wrong", clause="update", why="adds weight decay to the step",
         source=edited(reference("fuse_sgd_into_backward"),
                       ("param.sub_(lr * param.grad)", "param.sub_(lr * (param.grad + 0.01 * param))")),
         mistake="08.fuse_sgd_into_backward.wrong-step-value",
         expect=["its value before the step minus lr * its gradient"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="gradient", why="turns grad mode off for good",
         source=edited(reference("call_when_all_grads_ready"),
                       ("    return torch.autograd.graph.register_multi_grad_hook(",
                        "    torch.set_grad_enabled(False)\n    return torch.autograd.graph.register_multi_grad_hook(")),
         mistake="08.call_when_all_grads_ready.grad-mode-left-changed",
         expect=["turned grad mode off and left it off"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="gradient",
         why="gives callback copies of each tensor's .grad",
         source=edited(reference("call_when_all_grads_ready"),
                       ("register_multi_grad_hook(tensors, callback)",
                        "register_multi_grad_hook(tensors, lambda grads: callback([t.grad.clone() for t in tensors]))")),
         mistake="08.call_when_all_grads_ready.reads-grad-when-none",
         expect=["NoneType", "was None when your hook read it"]),
    dict(exercise="call_when_all_grads_ready", kind="wrong", clause="gradient",
         why="gives callback the tensors instead of their gradients",
         source=edited(reference("call_when_all_grads_ready"),
                       ("register_multi_grad_hook(tensors, callback)",
                        "register_multi_grad_hook(tensors, lambda grads: callback(list(tensors)))")),
         mistake="08.call_when_all_grads_ready.wrong-gradients",
         expect=["the gradients of the tensors in this pass"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="dtype", why="turns grad mode off in unpack for good",
         source=edited(reference("HalfPrecisionSaver"),
                       ("        tensor, dtype = packed\n",
                        "        torch.set_grad_enabled(False)  # no graph for the conversion back\n"
                        "        tensor, dtype = packed\n")),
         mistake="08.HalfPrecisionSaver.grad-mode-left-changed",
         expect=["turned grad mode off and left it off", "torch.no_grad()"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="context-manager",
         why="a plain class with pack and unpack, no context manager",
         source=edited(reference("HalfPrecisionSaver"),
                       ("class HalfPrecisionSaver(torch.autograd.graph.saved_tensors_hooks):", "class HalfPrecisionSaver:"),
                       ("        super().__init__(self.pack, self.unpack)\n", "")),
         mistake="08.HalfPrecisionSaver.not-a-context-manager",
         expect=["which has no __enter__", "expected a context manager"]),
    dict(exercise="HalfPrecisionSaver", kind="wrong", clause="count",
         why="counts numel * element_size - 2, the parentheses left out",
         source=edited(reference("HalfPrecisionSaver"),
                       ("self.bytes_saved += tensor.numel() * (tensor.element_size() - 2)",
                        "self.bytes_saved += tensor.numel() * tensor.element_size() - 2")),
         mistake="08.HalfPrecisionSaver.wrong-count",
         expect=["bytes_saved is", "saves numel * (element_size - 2) bytes"]),
]

# Every prediction exercise's own mistakes of form: no list, a string, another type, items that are no events.
ENTRIES += [
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="events", why="a missing return",
         source="def predict_leaf_backward_order():\n    events = ['tensor:h', 'tensor:w', 'node-pre:w', 'grad:w', 'post:w', 'node:w']\n",
         mistake="08.predict_leaf_backward_order.returned-none", expect=["returned None", "is the `return` missing?"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="events", why="the events joined into one string",
         source=predicted("predict_leaf_backward_order", "tensor:h, tensor:w, node-pre:w, grad:w, post:w, node:w"),
         mistake="08.predict_leaf_backward_order.returned-string", expect=["returned a string", "not the events joined"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="events", why="the number of events",
         source=predicted("predict_leaf_backward_order", 6),
         mistake="08.predict_leaf_backward_order.not-a-list", expect=["returned an int", "return a list (or a tuple)"]),
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="names", why="event numbers instead of names",
         source=predicted("predict_leaf_backward_order", [0, 1, 2]),
         mistake="08.predict_leaf_backward_order.not-event-names", expect=["item 0 is int 0", "not an event name"]),
]
ENTRIES += [
    dict(exercise="predict_leaf_backward_order", kind="wrong", clause="order", why="the node hook left out",
         source=predicted("predict_leaf_backward_order", _LEAF[:-1]),
         mistake="08.predict_leaf_backward_order.wrong-order", expect=["at index 5", "'node:w' is next"]),
]
