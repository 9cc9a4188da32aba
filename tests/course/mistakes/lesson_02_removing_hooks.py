"""Mistake catalogue for lesson 02, removing hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py; CLAUSES and NOT_CLAUSES, the clause → check table, in
tests/course/test_contract_clauses.py."""

from mistakes import edited, reference

CLAUSES = {
    "grad_with_temporary_hook": {
        "computed-with-hook": "computed with `hook` on `x`",
        "leaf-or-not": "x: a tensor that requires grad (a leaf or not).",
        "register-on-x": "Register it with `x.register_hook(hook)`.",
        "hook-return": "If it returns a tensor, that tensor is the gradient returned here",
        "hook-none": "if it returns None, the gradient is returned as autograd computed it",
        "shape": "Returns a tensor with the shape of `x`.",
        "grad-kept": "`x.grad` keeps the value it had before the call (None stays None).",
        "no-other-grad": "No other `.grad` is written either",
        "retains-grad": "and `x.retains_grad` is unchanged.",
        "removed-on-return": "When the function returns",
        "removed-on-raise": "or raises, the hook it registered is removed from `x`",
        "others-stay": "hooks that were on `x` before the call stay",
        "propagate": "Exceptions raised by `loss_fn`, by `hook` or by autograd propagate unchanged.",
    },
    "HookGroup": {
        "exit-removes": "calls `group.remove()` when the block exits",
        "exit-removes-on-error": "also when an exception leaves the block",
        "not-swallowed": "the exception is not swallowed",
        "own-handles": "Each HookGroup holds its own handles: adding to or removing one group does not affect another.",
        "starts-empty": "Start with no handles.",
        "add-returns": "Hold `handle` (a RemovableHandle) and return it unchanged.",
        "len": "The number of handles held.",
        "remove-all": "Remove every held handle",
        "remove-empties": "and empty the group",
        "others-stay": "hooks it does not hold stay registered.",
        "remove-repeat": "Safe to call repeatedly.",
        "binds": "Return the group itself",
    },
    "register_named_hook": {
        "forward-hook": "Register `hook` as a forward hook on `module` under `name`;",
        "returns-handle": "return its RemovableHandle.",
        "registered-as-is": "is registered with `module.register_forward_hook(hook)`",
        "replaces-same-name": "If a hook was registered earlier through this function on the same `module` under the "
                              "same `name`, it is removed first",
        "names-coexist": "Hooks under different names on one module coexist.",
        "modules-separate": "The same name on different modules does not interfere.",
        "others-alone": "Hooks registered on the module by other means are left alone.",
        "attributes-stay": "The module's own attributes stay as they are, whatever `name` is",
        "survives-rerun": "What the function remembers survives running its own cell again",
        "no-keep-alive": "it keeps no module alive once the caller has let go of it.",
    },
}

NOT_CLAUSES = {
    "grad_with_temporary_hook": {
        "hook: a tensor hook, `hook(grad) -> Tensor | None`.": "describes the input the checker passes",
        "loss_fn: a function that takes `x` and returns a scalar tensor.": "describes the input the checker passes",
    },
    "HookGroup": {
        "Holds RemovableHandles and removes them together, for example "
        "`handle = group.add(layer.register_forward_hook(fn))`.":
            "the title and an example of use; the method docstrings say exactly what each call does",
    },
}

ENTRIES = [
    # ------------------------------------------------------------------ grad_with_temporary_hook
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="never removes the hook",
         mistake="02.grad_with_temporary_hook.hook-left-registered", clause="removed-on-return",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):\n"
                        "        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)",
                        "    x.register_hook(hook)\n"
                        "    loss = loss_fn(x)\n"
                        "    (grad,) = torch.autograd.grad(loss, x)")),
         expect=["after it returned", "still registered"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="removes the hook only on success",
         mistake="02.grad_with_temporary_hook.hook-left-after-exception", clause="removed-on-raise",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):\n"
                        "        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)",
                        "    handle = x.register_hook(hook)\n"
                        "    loss = loss_fn(x)\n"
                        "    grad = torch.autograd.grad(loss, x)[0]\n"
                        "    handle.remove()")),
         expect=["after the exception", "still registered", "try/finally"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="uses backward and leaves x.grad set",
         mistake="02.grad_with_temporary_hook.wrote-x-grad", clause="grad-kept",
         source=edited(reference("grad_with_temporary_hook"),
                       ("        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)\n"
                        "    return grad",
                        "        loss_fn(x).backward()\n"
                        "    return x.grad")),
         expect=["x.grad was None before the call", "must stay None"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="uses backward and zeroes x.grad afterwards",
         mistake="02.grad_with_temporary_hook.wrote-x-grad", clause="grad-kept",
         source=edited(reference("grad_with_temporary_hook"),
                       ("        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)",
                        "        loss_fn(x).backward()\n"
                        "    grad = x.grad.clone()\n"
                        "    x.grad.zero_()")),
         expect=["must stay None"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="swallows the exception",
         mistake="02.grad_with_temporary_hook.swallowed-exception", clause="propagate",
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
         mistake="02.grad_with_temporary_hook.changed-exception", clause="propagate",
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
         mistake="02.grad_with_temporary_hook.hook-on-loss", clause="register-on-x",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):\n"
                        "        loss = loss_fn(x)",
                        "    loss = loss_fn(x)\n"
                        "    with loss.register_hook(hook):")),
         expect=["not on the loss"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="computes the gradient after removing the hook",
         mistake="02.grad_with_temporary_hook.hook-never-called", clause="computed-with-hook",
         source=edited(reference("grad_with_temporary_hook"),
                       ("        (grad,) = torch.autograd.grad(loss, x)",
                        "    (grad,) = torch.autograd.grad(loss, x)")),
         expect=["never called", "while it is registered"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="returns the tuple from autograd.grad",
         mistake="02.grad_with_temporary_hook.not-a-tensor", clause="shape",
         source=edited(reference("grad_with_temporary_hook"),
                       ("        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)\n"
                        "    return grad",
                        "        return torch.autograd.grad(loss_fn(x), x)")),
         expect=["returned tuple", "expected the gradient"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="calls the hook by hand and ignores its result",
         mistake="02.grad_with_temporary_hook.hook-called-by-hand", clause="register-on-x",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):\n"
                        "        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)",
                        "    (grad,) = torch.autograd.grad(loss_fn(x), x)\n"
                        "    hook(grad)")),
         expect=["called it yourself", "register it with x.register_hook(hook)"]),
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
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="backward(inputs=[x]) with x.grad saved and restored",
         mistake="02.grad_with_temporary_hook.retained-grad", clause="retains-grad",
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
         expect=['x.retains_grad is true', 'retain_grad()', 'torch.autograd.grad']),
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
         mistake="02.HookGroup.shared-handle-list", clause="starts-empty",
         source=edited(reference("HookGroup"),
                       ("    def __init__(self):", "    _handles = []\n\n    def __init__(self):"),
                       ("        self._handles = []", "        pass")),
         expect=["second HookGroup()", "already holds 3", "not a class attribute"]),
    dict(exercise="HookGroup", kind="wrong", why="remove does not empty the group",
         mistake="02.HookGroup.not-emptied", clause="remove-empties",
         source=edited(reference("HookGroup"),
                       ("        handles, self._handles = self._handles, []\n"
                        "        for handle in reversed(handles):\n"
                        "            handle.remove()",
                        "        for handle in self._handles:\n"
                        "            handle.remove()")),
         expect=["len(group) is 3", "must be emptied"]),
    dict(exercise="HookGroup", kind="wrong", why="removes from the list while iterating over it",
         mistake="02.HookGroup.hooks-not-removed", clause="remove-all",
         source=edited(reference("HookGroup"),
                       ("        handles, self._handles = self._handles, []\n"
                        "        for handle in reversed(handles):\n"
                        "            handle.remove()",
                        "        for handle in self._handles:\n"
                        "            handle.remove()\n"
                        "            self._handles.remove(handle)")),
         expect=["1 of the 3 hooks still fired", "every held handle"]),
    dict(exercise="HookGroup", kind="wrong", why="second remove fails",
         mistake="02.HookGroup.remove-breaks-group", clause="remove-repeat",
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
         mistake="02.HookGroup.enter-not-self", clause="binds",
         source=edited(reference("HookGroup"), ("        return self\n", "        pass\n")),
         expect=["bound group to None", "__enter__ must return the group itself"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ returns True and swallows the exception",
         mistake="02.HookGroup.exit-swallows-exception", clause="not-swallowed",
         source=edited(reference("HookGroup"), ("        return False", "        return True")),
         expect=["exception was swallowed", "return False or None"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ does not remove",
         mistake="02.HookGroup.exit-not-removing", clause="exit-removes",
         source=edited(reference("HookGroup"),
                       ("        self.remove()\n        return False", "        return False")),
         expect=["the with block ended", "still registered"]),
    dict(exercise="HookGroup", kind="wrong", why="add returns None",
         mistake="02.HookGroup.add-returns-other", clause="add-returns",
         source=edited(reference("HookGroup"),
                       ("        self._handles.append(handle)\n"
                        "        return handle",
                        "        self._handles.append(handle)")),
         expect=["group.add(handle) returned None", "the handle it was given"]),
    dict(exercise="HookGroup", kind="wrong", why="no __len__", mistake="02.HookGroup.no-len", clause="len",
         source=edited(reference("HookGroup"),
                       ("    def __len__(self):\n"
                        '        """The number of handles held."""\n'
                        "        return len(self._handles)\n"
                        "\n",
                        "")),
         expect=["len(group) on a new group raised TypeError", "has no len()"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ without the exception arguments",
         mistake="02.HookGroup.exit-signature", clause="exit-removes",
         source=edited(reference("HookGroup"),
                       ("def __exit__(self, exc_type, exc_value, traceback):", "def __exit__(self):")),
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
    dict(exercise="HookGroup", kind="wrong", why="an ExitStack subclass whose inherited __exit__ skips remove()",
         mistake="02.HookGroup.exit-not-emptying", clause="exit-removes",
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
         expect=['len(group) is 2; expected 0', "__exit__ must call the group's remove()"]),

    # ------------------------------------------------------------------ register_named_hook
    dict(exercise="register_named_hook", kind="wrong", why="one dict keyed by name for all modules",
         mistake="02.register_named_hook.one-registry-for-all-modules", clause="modules-separate",
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
         mistake="02.register_named_hook.same-name-stacks", clause="replaces-same-name",
         source=edited(reference("register_named_hook"),
                       ("    if previous is not None:\n        previous.remove()\n", "")),
         expect=["ran it 3 times", "remove the hook registered earlier under the same name"]),
    dict(exercise="register_named_hook", kind="wrong", why="registers a forward pre-hook",
         mistake="02.register_named_hook.not-a-forward-hook", clause="forward-hook",
         source=edited(reference("register_named_hook"),
                       ("handle = module.register_forward_hook(hook)",
                        "handle = module.register_forward_pre_hook(hook)")),
         expect=["called with 2 arguments", "not register_forward_pre_hook"]),
    dict(exercise="register_named_hook", kind="wrong", why="returns None",
         mistake="02.register_named_hook.no-handle", clause="returns-handle",
         source=edited(reference("register_named_hook"),
                       ("    registry[name] = handle\n    return handle", "    registry[name] = handle")),
         expect=["returned None", "expected the handle"]),
    dict(exercise="register_named_hook", kind="wrong", why="keeps one hook per module whatever the name",
         mistake="02.register_named_hook.names-interfere", clause="names-coexist",
         source=edited(reference("register_named_hook"),
                       ("registry.pop(name, None)", 'registry.pop("hook", None)'),
                       ("    registry[name] = handle", '    registry["hook"] = handle')),
         expect=["different names must coexist"]),
    dict(exercise="register_named_hook", kind="wrong", why="clears every forward hook of the module",
         mistake="02.register_named_hook.removed-other-hooks", clause="others-alone",
         source='''
def register_named_hook(module, name, hook):
    module._forward_hooks.clear()
    return module.register_forward_hook(hook)
''',
         expect=["other means"]),
    dict(exercise="register_named_hook", kind="wrong", why="keeps the handle on the hook function",
         mistake="02.register_named_hook.old-hook-not-replaced", clause="replaces-same-name",
         source='''
def register_named_hook(module, name, hook):
    previous = getattr(hook, "handle", None)
    if previous is not None:
        previous.remove()
    hook.handle = module.register_forward_hook(hook)
    return hook.handle
''',
         expect=["the new hook replaces the old", "keyed by the name"]),
    dict(exercise="register_named_hook", kind="wrong", why="a WeakKeyDictionary made in the cell",
         mistake="02.register_named_hook.registry-lost-on-rerun", clause="survives-rerun",
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
         expect=['exercise cell was run a second time', 'keep it on the module itself']),
    dict(exercise="register_named_hook", kind="wrong", why="dict keyed by id(module) and name",
         mistake="02.register_named_hook.registry-lost-on-rerun", clause="survives-rerun",
         source='''
registry = {}


def register_named_hook(module, name, hook):
    key = (id(module), name)
    if key in registry:
        registry.pop(key).remove()
    registry[key] = module.register_forward_hook(hook)
    return registry[key]
''',
         expect=['exercise cell was run a second time', 'a global dict']),
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
    # ------------------------------------------------------------------ added for the clause table
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="registers a wrapper that drops the hook's return",
         mistake="02.grad_with_temporary_hook.hook-result-lost",
         clause="hook-return",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):",
                        "    def observe(grad):\n"
                        "        hook(grad)\n"
                        "\n"
                        "    with x.register_hook(observe):")),
         expect=["returned w", "before the hook changed it"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="returns what the hook returned",
         mistake="02.grad_with_temporary_hook.returned-hook-result", clause="hook-none",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    seen = {}

    def capture(grad):
        seen["grad"] = hook(grad)
        return seen["grad"]

    with x.register_hook(capture):
        torch.autograd.grad(loss_fn(x), x)
    return seen["grad"]
''',
         expect=["the hook returned none", "return the gradient autograd computed"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="reads x.grad after backward, also on a non-leaf",
         mistake="02.grad_with_temporary_hook.read-non-leaf-grad",
         clause="leaf-or-not",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    saved = x.grad
    x.grad = None
    handle = x.register_hook(hook)
    try:
        loss_fn(x).backward()
        grad = x.grad
    finally:
        handle.remove()
        x.grad = saved
    return grad
''',
         expect=["non-leaf", "backward() does not fill its .grad", "torch.autograd.grad"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="empties x._backward_hooks afterwards",
         mistake="02.grad_with_temporary_hook.removed-callers-hook",
         clause="others-stay",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    x.register_hook(hook)
    try:
        return torch.autograd.grad(loss_fn(x), x)[0]
    finally:
        x._backward_hooks.clear()
''',
         expect=["x already had another hook", "remove only the hook you registered"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="turns autograd's RuntimeError into zeros",
         mistake="02.grad_with_temporary_hook.swallowed-exception",
         clause="propagate",
         source=edited(reference("grad_with_temporary_hook"),
                       ("        (grad,) = torch.autograd.grad(loss, x)",
                        "        try:\n"
                        "            (grad,) = torch.autograd.grad(loss, x)\n"
                        "        except RuntimeError:\n"
                        "            return torch.zeros_like(x)")),
         expect=["autograd raises runtimeerror", "returned normally", "not be swallowed"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="clears x.grad to start clean",
         mistake="02.grad_with_temporary_hook.wrote-x-grad", clause="grad-kept",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):", "    x.grad = None\n    with x.register_hook(hook):")),
         expect=["before the call and None after", "must keep its value"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="registers the hook a second time",
         mistake="02.grad_with_temporary_hook.registered-twice", clause="register-on-x",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):",
                        "    x.register_hook(hook)\n"
                        "    with x.register_hook(hook):")),
         expect=["the hook ran twice", "register it once"]),
    dict(exercise="grad_with_temporary_hook", kind="right", why="removes in an except clause and re-raises",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    handle = x.register_hook(hook)
    try:
        (grad,) = torch.autograd.grad(loss_fn(x), x)
    except BaseException:
        handle.remove()
        raise
    handle.remove()
    return grad
''',
         expect=[]),

    dict(exercise="HookGroup", kind="wrong", why="a default argument list",
         mistake="02.HookGroup.shared-handle-list", clause="starts-empty",
         source=edited(reference("HookGroup"),
                       ("    def __init__(self):", "    def __init__(self, handles=[]):"),
                       ("        self._handles = []", "        self._handles = handles")),
         expect=["already holds 3", "default argument"]),
    dict(exercise="HookGroup", kind="wrong", why="remove goes through a list shared by all groups",
         mistake="02.HookGroup.shared-handle-list", clause="own-handles",
         source=edited(reference("HookGroup"),
                       ("    def __init__(self):",
                        "    every_handle = []  # so that remove() can clean up everything\n"
                        "\n"
                        "    def __init__(self):"),
                       ("        self._handles.append(handle)",
                        "        self._handles.append(handle)\n"
                        "        HookGroup.every_handle.append(handle)"),
                       ("        handles, self._handles = self._handles, []\n"
                        "        for handle in reversed(handles):\n"
                        "            handle.remove()",
                        "        for handle in HookGroup.every_handle:\n"
                        "            handle.remove()\n"
                        "        HookGroup.every_handle.clear()\n"
                        "        self._handles.clear()")),
         expect=["removing one hookgroup removed the hooks of another group"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ removes only when no exception",
         mistake="02.HookGroup.exit-not-removing", clause="exit-removes-on-error",
         source=edited(reference("HookGroup"),
                       ("        self.remove()\n"
                        "        return False",
                        "        if exc_type is None:\n"
                        "            self.remove()\n"
                        "        return False")),
         expect=["after an exception left the with block", "still registered"]),
    dict(exercise="HookGroup", kind="right", why="__exit__ returns self, which is false once empty",
         source=edited(reference("HookGroup"), ("        return False", "        return self")),
         expect=[]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ returns from a finally clause",
         mistake="02.HookGroup.exit-swallows-exception", clause="not-swallowed",
         source=edited(reference("HookGroup"),
                       ("        self.remove()\n"
                        "        return False",
                        "        try:\n"
                        "            self.remove()\n"
                        "        finally:\n"
                        "            return True")),
         expect=["exception was swallowed", "return false or none"]),
    dict(exercise="HookGroup", kind="wrong", why="remove removes only the last handle",
         mistake="02.HookGroup.hooks-not-removed", clause="remove-all",
         source=edited(reference("HookGroup"),
                       ("        handles, self._handles = self._handles, []\n"
                        "        for handle in reversed(handles):\n"
                        "            handle.remove()",
                        "        if self._handles:\n"
                        "            self._handles.pop().remove()\n"
                        "        self._handles = []")),
         expect=["2 of the 3 hooks still fired", "every held handle"]),
    dict(exercise="HookGroup", kind="wrong", why="remove without calling handle.remove",
         mistake="02.HookGroup.hooks-not-removed", clause="remove-all",
         source=edited(reference("HookGroup"), ("            handle.remove()", "            handle.remove")),
         expect=["3 of the 3 hooks still fired", "every held handle"]),
    dict(exercise="HookGroup", kind="wrong", why="__enter__ returns the list of handles",
         mistake="02.HookGroup.enter-not-self", clause="binds",
         source=edited(reference("HookGroup"), ("        return self\n", "        return self._handles\n")),
         expect=["bound group to list", "return self"]),
    dict(exercise="HookGroup", kind="wrong", why="add returns the group for chaining",
         mistake="02.HookGroup.add-returns-other", clause="add-returns",
         source=edited(reference("HookGroup"),
                       ("        self._handles.append(handle)\n"
                        "        return handle",
                        "        self._handles.append(handle)\n"
                        "        return self")),
         expect=["group.add(handle) returned HookGroup", "the handle it was given"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ forgets the handles without removing them",
         mistake="02.HookGroup.exit-not-removing", clause="exit-removes",
         source=edited(reference("HookGroup"),
                       ("        self.remove()\n"
                        "        return False",
                        "        self._handles.clear()\n"
                        "        return False")),
         expect=["the with block ended", "still registered"]),
    dict(exercise="HookGroup", kind="wrong", why="len counts every handle ever added",
         mistake="02.HookGroup.not-emptied", clause="remove-empties",
         source=edited(reference("HookGroup"),
                       ("        self._handles.append(handle)",
                        "        self._handles.append(handle)\n"
                        "        self.count = getattr(self, 'count', 0) + 1"),
                       ("        return len(self._handles)", "        return getattr(self, 'count', 0)")),
         expect=["len(group) is 3", "must be emptied"]),
    dict(exercise="HookGroup", kind="right", why="__exit__ without a return statement",
         source=edited(reference("HookGroup"),
                       ("        self.remove()\n        return False", "        self.remove()")),
         expect=[]),

    dict(exercise="register_named_hook", kind="wrong", why="registers with with_kwargs=True",
         mistake="02.register_named_hook.with-kwargs", clause="registered-as-is",
         source=edited(reference("register_named_hook"),
                       ("handle = module.register_forward_hook(hook)",
                        "handle = module.register_forward_hook(hook, with_kwargs=True)")),
         expect=["4 arguments", "with_kwargs=True"]),
    dict(exercise="register_named_hook", kind="wrong", why="wraps the hook and drops its return",
         mistake="02.register_named_hook.output-lost", clause="registered-as-is",
         source=edited(reference("register_named_hook"),
                       ("    handle = module.register_forward_hook(hook)",
                        "    def call(module, inputs, output):\n"
                        "        hook(module, inputs, output)\n"
                        "\n"
                        "    handle = module.register_forward_hook(call)")),
         expect=["its return value was lost", "returns what the hook returns"]),
    dict(exercise="register_named_hook", kind="wrong", why="registers with prepend=True",
         mistake="02.register_named_hook.prepended", clause="registered-as-is",
         source=edited(reference("register_named_hook"),
                       ("handle = module.register_forward_hook(hook)",
                        "handle = module.register_forward_hook(hook, prepend=True)")),
         expect=["ran before a hook registered on the module earlier", "prepend=True"]),
    dict(exercise="register_named_hook", kind="wrong", why="returns the earlier handle when it replaces one",
         mistake="02.register_named_hook.returned-earlier-handle",
         clause="returns-handle",
         source=edited(reference("register_named_hook"), ("    return handle", "    return previous or handle")),
         expect=["replaced an earlier hook", "not the earlier one"]),
    dict(exercise="register_named_hook", kind="wrong", why="deletes the old entry of _forward_hooks itself",
         mistake="02.register_named_hook.removed-handle-breaks-name",
         clause="replaces-same-name",
         source=edited(reference("register_named_hook"),
                       ("        previous.remove()", "        del module._forward_hooks[previous.id]")),
         expect=["removing its handle by hand", "raised KeyError"]),
    dict(exercise="register_named_hook", kind="wrong", why="one registry keyed by class name and name",
         mistake="02.register_named_hook.one-registry-for-all-modules",
         clause="modules-separate",
         source='''
registry = {}


def register_named_hook(module, name, hook):
    key = f"{type(module).__name__}.{name}"
    if key in registry:
        registry[key].remove()
    registry[key] = module.register_forward_hook(hook)
    return registry[key]
''',
         expect=["on a second module", "one registry per module"]),
    dict(exercise="register_named_hook", kind="wrong", why="removes the earlier hook only when it is the same function",
         mistake="02.register_named_hook.old-hook-not-replaced",
         clause="replaces-same-name",
         source=edited(reference("register_named_hook"),
                       ("    if previous is not None:\n"
                        "        previous.remove()",
                        "    if previous is not None and previous[1] is hook:\n"
                        "        previous[0].remove()"),
                       ("    registry[name] = handle", "    registry[name] = (handle, hook)")),
         expect=["the new hook replaces the old"]),
    dict(exercise="register_named_hook", kind="right", why="a wrapper that returns the hook's result",
         source='''
def register_named_hook(module, name, hook):
    names = getattr(module, "hook_names", None)
    if names is None:
        names = module.hook_names = {}
    if name in names:
        names.pop(name).remove()

    def call(*args):
        return hook(*args)

    names[name] = module.register_forward_hook(call)
    return names[name]
''',
         expect=[]),
    # ------------------------------------------------------------------ written from the docstrings alone
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="torch.func.grad, which does not run the hook",
         mistake="02.grad_with_temporary_hook.hook-never-called",
         clause="computed-with-hook",
         source=edited(reference("grad_with_temporary_hook"),
                       ("import torch", "import torch\nimport torch.func"),
                       ("        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)\n"
                        "    return grad",
                        "        return torch.func.grad(loss_fn)(x)")),
         expect=["never called", "torch.func.grad does not run tensor hooks"]),
    dict(exercise="HookGroup", kind="wrong", why="remove deletes the list",
         mistake="02.HookGroup.remove-breaks-group", clause="remove-empties",
         source=edited(reference("HookGroup"),
                       ("        handles, self._handles = self._handles, []\n"
                        "        for handle in reversed(handles):\n"
                        "            handle.remove()",
                        "        for handle in self._handles:\n"
                        "            handle.remove()\n"
                        "        del self._handles")),
         expect=["len(group) after group.remove() raised AttributeError"]),
    dict(exercise="HookGroup", kind="right", why="holds the bound remove methods",
         source='''
class HookGroup:
    def __init__(self):
        self.removers = []

    def add(self, handle):
        self.removers.append(handle.remove)
        return handle

    def __len__(self):
        return len(self.removers)

    def remove(self):
        removers, self.removers = self.removers, []
        for remove in removers:
            remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()
        return False
''',
         expect=[]),
    dict(exercise="register_named_hook", kind="wrong", why="returns the handle's id",
         mistake="02.register_named_hook.no-handle", clause="returns-handle",
         source=edited(reference("register_named_hook"), ("    return handle", "    return handle.id")),
         expect=["returned int", "expected the handle"]),
    dict(exercise="register_named_hook", kind="right", why="one attribute per name on the module",
         source='''
def register_named_hook(module, name, hook):
    attribute = f"_named_hook_{name}"
    old = getattr(module, attribute, None)
    if old is not None:
        old.remove()
    handle = module.register_forward_hook(hook)
    setattr(module, attribute, handle)
    return handle
''',
         expect=[]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="removes every registration of the hook",
         mistake="02.grad_with_temporary_hook.removed-callers-hook",
         clause="others-stay",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    x.register_hook(hook)
    try:
        return torch.autograd.grad(loss_fn(x), x)[0]
    finally:
        for key, registered in list(x._backward_hooks.items()):
            if registered is hook:
                del x._backward_hooks[key]
''',
         expect=["had registered the same hook", "expected once", "only the registration you made"]),
    dict(exercise="HookGroup", kind="wrong", why="a list subclass whose remove keeps the handles",
         mistake="02.HookGroup.not-emptied", clause="remove-empties",
         source='''
class HookGroup(list):
    def add(self, handle):
        self.append(handle)
        return handle

    def remove(self):
        for handle in self:
            handle.remove()

    def __enter__(self, *args):
        return self

    def __exit__(self, *args):
        self.remove()
''',
         expect=["len(group) is 3", "must be emptied"]),
    # ------------------------------------------------------------------ review: written from the docstrings alone
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="backward with a capturing hook, x.grad restored",
         mistake="02.grad_with_temporary_hook.wrote-other-leaf-grad",
         clause="no-other-grad",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    seen = []
    saved = None if x.grad is None else x.grad.clone()
    with x.register_hook(hook), x.register_hook(lambda grad: seen.append(grad)):
        loss_fn(x).backward()
    x.grad = saved
    return seen[0]
''',
         expect=["the leaf that x was computed from", "backward() wrote into it", "torch.autograd.grad"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="retain_grad on a non-leaf, x.grad restored",
         mistake="02.grad_with_temporary_hook.retained-grad",
         clause="retains-grad",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):",
                        "    saved = x.grad\n"
                        "    x.grad = None\n"
                        "    if not x.is_leaf:\n"
                        "        x.retain_grad()\n"
                        "    with x.register_hook(hook):"),
                       ("        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)",
                        "        loss_fn(x).backward(inputs=[x])\n"
                        "    grad, x.grad = x.grad, saved")),
         expect=["x.retains_grad is true", "every later backward"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="hook on a detached copy of x",
         mistake="02.grad_with_temporary_hook.hook-on-other-tensor", clause="register-on-x",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):\n"
                        "        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)",
                        "    copy = x.detach().requires_grad_()\n"
                        "    with copy.register_hook(hook):\n"
                        "        loss = loss_fn(copy)\n"
                        "        (grad,) = torch.autograd.grad(loss, copy)")),
         expect=["autograd ran the hook", "registered on another tensor", "register it on x itself"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="returns the hook's value from a finally clause",
         mistake="02.grad_with_temporary_hook.swallowed-exception",
         clause="propagate",
         source='''
import torch


def grad_with_temporary_hook(x, hook, loss_fn):
    handle = x.register_hook(hook)
    grad = None
    try:
        (grad,) = torch.autograd.grad(loss_fn(x), x)
    finally:
        handle.remove()
        return grad
''',
         expect=["returned normally", "not be swallowed"]),
    dict(exercise="grad_with_temporary_hook", kind="right", why="a wrapper around the hook, keyword arguments",
         source=edited(reference("grad_with_temporary_hook"),
                       ("with x.register_hook(hook):", "with x.register_hook(lambda grad: hook(grad)):"),
                       ("torch.autograd.grad(loss, x)", "torch.autograd.grad(outputs=loss, inputs=[x])")),
         expect=[]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ removes the handles without emptying the group",
         mistake="02.HookGroup.exit-not-emptying",
         clause="exit-removes",
         source=edited(reference("HookGroup"),
                       ("        self.remove()\n"
                        "        return False",
                        "        for handle in self._handles:\n"
                        "            handle.remove()\n"
                        "        return False")),
         expect=["len(group) is 2; expected 0", "__exit__ must call the group's remove()"]),
    dict(exercise="HookGroup", kind="right", why="an ExitStack subclass whose __exit__ calls remove",
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
        super().__exit__(None, None, None)  # runs the callbacks; close() would call self.__exit__

    def __exit__(self, exc_type, exc_value, traceback):
        self.remove()
        return False
''',
         expect=[]),
    dict(exercise="register_named_hook", kind="wrong", why="the handle stored as an attribute named after the hook",
         mistake="02.register_named_hook.name-as-attribute",
         clause="attributes-stay",
         source='''
def register_named_hook(module, name, hook):
    old = getattr(module, name, None)
    if hasattr(old, "remove"):
        old.remove()
    handle = module.register_forward_hook(hook)
    setattr(module, name, handle)
    return handle
''',
         expect=["register_named_hook(module, 'weight', hook)", "cannot assign"]),
    dict(exercise="register_named_hook", kind="wrong", why="the handle stored in the module's __dict__ under the name",
         mistake="02.register_named_hook.name-as-attribute",
         clause="attributes-stay",
         source='''
def register_named_hook(module, name, hook):
    old = module.__dict__.get(name)
    if hasattr(old, "remove"):
        old.remove()
    handle = module.register_forward_hook(hook)
    module.__dict__[name] = handle
    return handle
''',
         expect=["changed module.weight", "any name is safe"]),
    dict(exercise="register_named_hook", kind="wrong", why="a registry kept on torch, keyed by the module",
         mistake="02.register_named_hook.keeps-module-alive",
         clause="no-keep-alive",
         source='''
import torch.utils.hooks


def register_named_hook(module, name, hook):
    if not hasattr(torch.utils.hooks, "course_named_hooks"):
        torch.utils.hooks.course_named_hooks = {}
    names = torch.utils.hooks.course_named_hooks.setdefault(module, {})
    if name in names:
        names.pop(name).remove()
    names[name] = module.register_forward_hook(hook)
    return names[name]
''',
         expect=["the module stayed alive", "keep the registry on the module itself"]),
    dict(exercise="register_named_hook", kind="wrong", why="a registry in a default argument",
         mistake="02.register_named_hook.registry-lost-on-rerun", clause="survives-rerun",
         source='''
def register_named_hook(module, name, hook, _registry={}):
    names = _registry.setdefault(id(module), {})
    if name in names:
        names.pop(name).remove()
    names[name] = module.register_forward_hook(hook)
    return names[name]
''',
         expect=["exercise cell was run a second time", "a default argument"]),
    dict(exercise="register_named_hook", kind="right", why="the registry set with object.__setattr__",
         source='''
def register_named_hook(module, name, hook):
    registry = vars(module).get("_hooks_by_name")
    if registry is None:
        registry = {}
        object.__setattr__(module, "_hooks_by_name", registry)
    if name in registry:
        registry.pop(name).remove()
    registry[name] = handle = module.register_forward_hook(hook)
    return handle
''',
         expect=[]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="hook on a view of x",
         mistake="02.grad_with_temporary_hook.hook-on-other-tensor", clause="register-on-x",
         source=edited(reference("grad_with_temporary_hook"),
                       ("    with x.register_hook(hook):\n"
                        "        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)",
                        "    view = x.view_as(x)\n"
                        "    with view.register_hook(hook):\n"
                        "        loss = loss_fn(view)\n"
                        "        (grad,) = torch.autograd.grad(loss, view)")),
         expect=["autograd ran the hook", "a view or a copy of x"]),
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="torch.autograd.functional.vjp",
         mistake="02.grad_with_temporary_hook.hook-never-called", clause="computed-with-hook",
         source=edited(reference("grad_with_temporary_hook"),
                       ("        loss = loss_fn(x)\n"
                        "        (grad,) = torch.autograd.grad(loss, x)",
                        "        _, grad = torch.autograd.functional.vjp(loss_fn, x)")),
         expect=["never called", "torch.autograd.functional differentiates a copy of x"]),
    dict(exercise="HookGroup", kind="wrong", why="__exit__ returns what remove() returns, True",
         mistake="02.HookGroup.exit-swallows-exception", clause="not-swallowed",
         source=edited(reference("HookGroup"),
                       ("            handle.remove()", "            handle.remove()\n        return True"),
                       ("        self.remove()\n        return False", "        return self.remove()")),
         expect=["exception was swallowed", "return false or none"]),
    dict(exercise="register_named_hook", kind="wrong", why="a manager object made in the cell",
         mistake="02.register_named_hook.registry-lost-on-rerun", clause="survives-rerun",
         source='''
class NamedHooks:
    def __init__(self):
        self.handles = {}

    def register(self, module, name, hook):
        key = (id(module), name)
        if key in self.handles:
            self.handles.pop(key).remove()
        self.handles[key] = module.register_forward_hook(hook)
        return self.handles[key]


manager = NamedHooks()


def register_named_hook(module, name, hook):
    return manager.register(module, name, hook)
''',
         expect=["exercise cell was run a second time", "made anew when the cell runs again"]),
    dict(exercise="HookGroup", kind="wrong", why="remove empties the dicts the handles point to",
         mistake="02.HookGroup.removed-other-hooks", clause="others-stay",
         source=edited(reference("HookGroup"),
                       ("            handle.remove()",
                        "            hooks = handle.hooks_dict_ref()\n"
                        "            if hooks is not None:\n"
                        "                hooks.clear()")),
         expect=["never added to the group was gone too", "only the handles the group holds"]),
    dict(exercise="HookGroup", kind="right", why="pops each handle's own entry from its dict",
         source=edited(reference("HookGroup"),
                       ("            handle.remove()",
                        "            hooks = handle.hooks_dict_ref()\n"
                        "            if hooks is not None:\n"
                        "                hooks.pop(handle.id, None)")),
         expect=[]),
    # ------------------------------------------------------------------ one for each named mistake
    dict(exercise="grad_with_temporary_hook", kind="wrong", why="returns the negative gradient, the descent direction",
         mistake="02.grad_with_temporary_hook.wrong-value", clause="hook-return",
         source=edited(reference("grad_with_temporary_hook"), ("    return grad", "    return -grad")),
         expect=["it returned tensor of shape", "(3 * w)"]),
    dict(exercise="HookGroup", kind="wrong", why="starts with a placeholder None",
         mistake="02.HookGroup.not-empty-at-start",
         clause="starts-empty",
         source=edited(reference("HookGroup"), ("self._handles = []", "self._handles = [None]")),
         expect=["a new HookGroup() holds 1 handle(s)", "it must start empty"]),
    dict(exercise="HookGroup", kind="wrong", why="len says whether it holds any", mistake="02.HookGroup.wrong-length",
         clause="len",
         source=edited(reference("HookGroup"), ("return len(self._handles)", "return int(bool(self._handles))")),
         expect=["after adding 2 handle(s), len(group) is 1"]),
    dict(exercise="register_named_hook", kind="wrong", why="registers the hook twice",
         mistake="02.register_named_hook.not-registered-once", clause="registered-as-is",
         source=edited(reference("register_named_hook"),
                       ("    handle = module.register_forward_hook(hook)",
                        "    module.register_forward_hook(hook)\n"
                        "    handle = module.register_forward_hook(hook)")),
         expect=["one forward call ran the hook 2 times; expected once"]),
    dict(exercise="register_named_hook", kind="wrong", why="one registration per hook function, whatever the name",
         mistake="02.register_named_hook.keyed-by-hook", clause="names-coexist",
         source=edited(reference("register_named_hook"),
                       ("    previous = registry.pop(name, None)",
                        "    for other in [key for key, kept in registry.items() if kept.hook is hook]:\n"
                        "        registry.pop(other).remove()\n"
                        "    previous = registry.pop(name, None)"),
                       ("    registry[name] = handle", "    handle.hook = hook\n    registry[name] = handle")),
         expect=["under 'count' and under 'again' fired 1 time(s)", "keyed by the name, not by the hook function"]),
    dict(exercise="register_named_hook", kind="wrong", why="returns a handle of its own that only forgets the name",
         mistake="02.register_named_hook.handle-does-not-remove", clause="returns-handle",
         source=edited(reference("register_named_hook"),
                       ("def register_named_hook(", "import types\n\n\ndef register_named_hook("),
                       ("    return handle",
                        "    return types.SimpleNamespace(remove=lambda: registry.pop(name, None))")),
         expect=["removing the handle returned by register_named_hook did not stop the hook"]),
    dict(exercise="register_named_hook", kind="wrong", why="skips names that are attributes of the module",
         mistake="02.register_named_hook.attribute-names-fail", clause="attributes-stay",
         source=edited(reference("register_named_hook"),
                       ("    registry = getattr(module, \"_named_forward_hook_handles\", None)",
                        "    if hasattr(module, name):\n"
                        "        return None  # a name that is taken\n"
                        "    registry = getattr(module, \"_named_forward_hook_handles\", None)")),
         expect=["after registering hooks under 'weight' and 'forward'", "expected once each"]),
    dict(exercise="register_named_hook", kind="wrong", why="returns the handle in a list",
         mistake="02.register_named_hook.handle-in-a-list", clause="returns-handle",
         source=edited(reference("register_named_hook"), ("    return handle", "    return [handle]")),
         expect=["not in a list"]),
]
