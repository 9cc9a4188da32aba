"""Mistake catalogue for lesson 02, removing hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py."""

ENTRIES = [
    # ------------------------------------------------------------------ grad_with_temporary_hook
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="never removes the hook",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    x.register_hook(hook)
    loss = loss_fn(x)
    return torch.autograd.grad(loss, x)[0]
''',
         expect=["after it returned", "still registered"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="removes the hook only on success",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    handle = x.register_hook(hook)
    loss = loss_fn(x)
    grad = torch.autograd.grad(loss, x)[0]
    handle.remove()
    return grad
''',
         expect=["after the exception", "still registered", "try/finally"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="uses backward and leaves x.grad set",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    with x.register_hook(hook):
        loss_fn(x).backward()
    return x.grad
''',
         expect=["x.grad was None before the call", "must stay None"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="uses backward and zeroes x.grad afterwards",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    with x.register_hook(hook):
        loss_fn(x).backward()
    grad = x.grad.clone()
    x.grad.zero_()
    return grad
''',
         expect=["must stay None"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="swallows the exception",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    handle = x.register_hook(hook)
    try:
        return torch.autograd.grad(loss_fn(x), x)[0]
    except Exception:
        return torch.zeros_like(x)
    finally:
        handle.remove()
''',
         expect=["returned normally", "not be swallowed"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="replaces the exception with another",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    handle = x.register_hook(hook)
    try:
        return torch.autograd.grad(loss_fn(x), x)[0]
    except Exception as error:
        raise RuntimeError(f"gradient failed: {error}") from error
    finally:
        handle.remove()
''',
         expect=["raised RuntimeError", "propagate unchanged"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="registers the hook on the loss",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    loss = loss_fn(x)
    with loss.register_hook(hook):
        (grad,) = torch.autograd.grad(loss, x)
    return grad
''',
         expect=["not on the loss"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="computes the gradient after removing the hook",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    with x.register_hook(hook):
        loss = loss_fn(x)
    (grad,) = torch.autograd.grad(loss, x)
    return grad
''',
         expect=["never called", "before computing the gradient"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="returns the tuple from autograd.grad",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    with x.register_hook(hook):
        return torch.autograd.grad(loss_fn(x), x)
''',
         expect=["returned tuple", "expected the gradient"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="calls the hook by hand and ignores its result",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    (grad,) = torch.autograd.grad(loss_fn(x), x)
    hook(grad)
    return grad
''',
         expect=["returned w", "before the hook changed it"]),
    dict(exercise="grad_with_temporary_hook", kind="right", why="try-finally with handle.remove",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    handle = x.register_hook(hook)
    try:
        gradients = torch.autograd.grad(outputs=loss_fn(x), inputs=[x])
    finally:
        handle.remove()
    return gradients[0]
''',
         expect=[]),
    dict(exercise="grad_with_temporary_hook", kind="right", why="backward with x.grad saved and restored",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    saved = x.grad
    x.grad = None
    handle = x.register_hook(hook)
    try:
        loss_fn(x).backward(inputs=[x])
        return x.grad
    finally:
        handle.remove()
        x.grad = saved
''',
         expect=[]),
    dict(exercise="grad_with_temporary_hook", kind="right", why="contextlib.ExitStack",
         source='''
import contextlib

import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    with contextlib.ExitStack() as stack:
        stack.callback(x.register_hook(hook).remove)
        loss = loss_fn(x)
        return torch.autograd.grad(loss, x)[0]
''',
         expect=[]),

    # ------------------------------------------------------------------ HookGroup
    dict(exercise="HookGroup", kind="wrong", why="handles in a class-level list",
         source='''
class HookGroup:
    handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def __len__(self):
        return len(self.handles)

    def remove(self):
        while self.handles:
            self.handles.pop().remove()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
        return False
''',
         expect=["second HookGroup", "not as a class attribute"]),
    dict(exercise="HookGroup", kind="wrong", why="remove does not empty the group",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def __len__(self):
        return len(self.handles)

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
''',
         expect=["len(group) is 3", "must be emptied"]),
    dict(exercise="HookGroup", kind="wrong", why="removes from the list while iterating over it",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def __len__(self):
        return len(self.handles)

    def remove(self):
        for handle in self.handles:
            handle.remove()
            self.handles.remove(handle)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
''',
         expect=["1 of the 3 hooks still fired", "every held handle"]),
    dict(exercise="HookGroup", kind="wrong", why="second remove fails",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def __len__(self):
        return len(self.handles) if self.handles is not None else 0

    def remove(self):
        for handle in self.handles:
            handle.remove()
        self.handles = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
''',
         expect=["group.remove() a second time raised TypeError", "for handle in self.handles:"]),
    dict(exercise="HookGroup", kind="wrong", why="__enter__ returns None",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def __len__(self):
        return len(self.handles)

    def remove(self):
        while self.handles:
            self.handles.pop().remove()

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
''',
         expect=["bound group to None", "__enter__ must return the group itself"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ returns True and swallows the exception",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def __len__(self):
        return len(self.handles)

    def remove(self):
        while self.handles:
            self.handles.pop().remove()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
        return True
''',
         expect=["exception was swallowed", "return False or None"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ does not remove",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def __len__(self):
        return len(self.handles)

    def remove(self):
        while self.handles:
            self.handles.pop().remove()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return False
''',
         expect=["the with block ended", "still registered"]),
    dict(exercise="HookGroup", kind="wrong", why="add returns None",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)

    def __len__(self):
        return len(self.handles)

    def remove(self):
        while self.handles:
            self.handles.pop().remove()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
''',
         expect=["group.add(handle) returned None", "the handle it was given"]),
    dict(exercise="HookGroup", kind="wrong", why="no __len__",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def remove(self):
        while self.handles:
            self.handles.pop().remove()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
''',
         expect=["len(group) raised TypeError", "has no len()"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ without the exception arguments",
         source='''
class HookGroup:
    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)
        return handle

    def __len__(self):
        return len(self.handles)

    def remove(self):
        while self.handles:
            self.handles.pop().remove()

    def __enter__(self):
        return self

    def __exit__(self):
        self.remove()
''',
         expect=["`with HookGroup() as group:` raised TypeError", "__exit__()", "positional argument"]),
    dict(exercise="HookGroup", kind="right", why="dict keyed by handle id",
         source='''
class HookGroup:
    def __init__(self):
        self.by_id = {}

    def add(self, handle):
        self.by_id[handle.id] = handle
        return handle

    def __len__(self):
        return len(self.by_id)

    def remove(self):
        while self.by_id:
            _, handle = self.by_id.popitem()
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()
''',
         expect=[]),
    dict(exercise="HookGroup", kind="right", why="subclasses list",
         source='''
class HookGroup(list):
    def add(self, handle):
        self.append(handle)
        return handle

    def remove(self):
        while self:
            self.pop().remove()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
        return None
''',
         expect=[]),
    dict(exercise="HookGroup", kind="right", why="built on contextlib.ExitStack",
         source='''
import contextlib


class HookGroup(contextlib.ExitStack):
    def __init__(self):
        super().__init__()
        self.count = 0

    def add(self, handle):
        self.callback(handle.remove)
        self.count += 1
        return handle

    def __len__(self):
        return self.count

    def remove(self):
        self.count = 0
        self.close()
''',
         expect=[]),

    # ------------------------------------------------------------------ register_named_hook
    dict(exercise="register_named_hook", kind="wrong", why="one dict keyed by name for all modules",
         source='''
handles = {}


def register_named_hook(module, name, hook):
    if name in handles:
        handles[name].remove()
    handles[name] = module.register_forward_hook(hook)
    return handles[name]
''',
         expect=["on a second module", "one registry per module"]),
    dict(exercise="register_named_hook", kind="wrong", why="never removes the earlier hook",
         source='''
def register_named_hook(module, name, hook):
    registry = module.__dict__.setdefault("named_hooks", {})
    registry[name] = module.register_forward_hook(hook)
    return registry[name]
''',
         expect=["ran it 3 times", "remove the hook registered earlier under the same name"]),
    dict(exercise="register_named_hook", kind="wrong", why="registers a forward pre-hook",
         source='''
def register_named_hook(module, name, hook):
    registry = module.__dict__.setdefault("named_hooks", {})
    if name in registry:
        registry[name].remove()
    registry[name] = module.register_forward_pre_hook(hook)
    return registry[name]
''',
         expect=["called with 2 arguments", "not register_forward_pre_hook"]),
    dict(exercise="register_named_hook", kind="wrong", why="returns None",
         source='''
def register_named_hook(module, name, hook):
    registry = module.__dict__.setdefault("named_hooks", {})
    if name in registry:
        registry[name].remove()
    registry[name] = module.register_forward_hook(hook)
''',
         expect=["returned None", "expected the handle"]),
    dict(exercise="register_named_hook", kind="wrong", why="keeps one hook per module whatever the name",
         source='''
def register_named_hook(module, name, hook):
    previous = getattr(module, "named_hook", None)
    if previous is not None:
        previous.remove()
    module.named_hook = module.register_forward_hook(hook)
    return module.named_hook
''',
         expect=["different names must coexist"]),
    dict(exercise="register_named_hook", kind="wrong", why="clears every forward hook of the module",
         source='''
def register_named_hook(module, name, hook):
    module._forward_hooks.clear()
    return module.register_forward_hook(hook)
''',
         expect=["other means"]),
    dict(exercise="register_named_hook", kind="wrong", why="keeps the handle on the hook function",
         source='''
def register_named_hook(module, name, hook):
    previous = getattr(hook, "handle", None)
    if previous is not None:
        previous.remove()
    hook.handle = module.register_forward_hook(hook)
    return hook.handle
''',
         expect=["the new hook replaces the old", "keyed by the name"]),
    dict(exercise="register_named_hook", kind="right", why="WeakKeyDictionary of dicts",
         source='''
import weakref

registries = weakref.WeakKeyDictionary()


def register_named_hook(module, name, hook):
    names = registries.setdefault(module, {})
    old = names.get(name)
    if old is not None:
        old.remove()
    names[name] = new = module.register_forward_hook(hook)
    return new
''',
         expect=[]),
    dict(exercise="register_named_hook", kind="right", why="dict keyed by id(module) and name",
         source='''
registry = {}


def register_named_hook(module, name, hook):
    key = (id(module), name)
    if key in registry:
        registry.pop(key).remove()
    registry[key] = module.register_forward_hook(hook)
    return registry[key]
''',
         expect=[]),
    dict(exercise="register_named_hook", kind="right", why="handle removed unconditionally, registry via hasattr",
         source='''
def register_named_hook(module, name, hook):
    if not hasattr(module, "hooks_by_name"):
        module.hooks_by_name = {}
    handle = module.register_forward_hook(hook)
    old, module.hooks_by_name[name] = module.hooks_by_name.get(name), handle
    if old is not None:
        old.remove()
    return handle
''',
         expect=[]),
]
