"""Notice when learner code changes the grading machinery, and put it back.

A grading process captures its guard after torch and the checks are imported and before any learner
code runs: private references to the namespaces a verdict goes through (every hooked module and
its classes, the torch modules and classes the checks call, builtins, and json, which writes the
reply), the code and defaults of their functions, their sys.modules entries and the registry of
checks. changes() then names, one line each, what was replaced, deleted or added since; restore()
puts the captured objects back. What learner code may change is left alone: the contents of
dicts and lists (global hooks, caches), attributes of its own objects, and torch's global state
(isolation restores those).
"""

import builtins
import functools
import importlib
import itertools
import json
import json.encoder
import operator
import sys
import types

# Where checks and the reply go through torch: the modules and classes whose attributes they call.
_TORCH_MODULES = ("torch", "torch.nn", "torch.nn.functional", "torch.nn.modules.module", "torch.autograd",
                  "torch.autograd.graph", "torch.autograd.function", "torch._tensor", "torch.testing",
                  "torch.utils.hooks", "torch.linalg", "torch.optim", "torch.optim.optimizer", "torch.random")
_TORCH_CLASSES = (("torch", "Tensor"), ("torch.nn", "Module"), ("torch.nn", "Parameter"),
                  ("torch.utils.hooks", "RemovableHandle"), ("torch.optim", "Optimizer"),
                  ("torch.autograd", "Function"))
# Names that torch rebinds itself when learner code uses it as meant: which kind of global backward
# hook is registered, and the counter of hook handles.
_REBOUND_BY_TORCH = {("torch.nn.modules.module", "_global_is_full_backward_hook"),
                     ("torch.utils.hooks.RemovableHandle", "next_id")}
# torch's own wrappers, which it puts in place of a function the first time it is used: (the module and
# function that make one, the variable through which it calls the function it wraps).
_TORCH_WRAPPERS = (("torch._compile", "_disable_dynamo", "fn"),  # as torch._dynamo is imported
                   ("torch.optim.optimizer", "Optimizer.profile_hook_step", "func"))  # a class's first optimizer

_is = operator.is_
_code = operator.attrgetter("__code__")
_defaults = operator.attrgetter("__defaults__")
_kwdefaults = operator.attrgetter("__kwdefaults__")
_cell_contents = operator.attrgetter("cell_contents")


def _same(current, saved):
    """Whether two sequences hold the very same objects: by identity, as an object's own __eq__
    could claim anything."""
    return len(current) == len(saved) and all(map(_is, current, saved))


def _benign_addition(name, value):
    # A submodule imported later, and the warnings module's record of warnings already shown.
    return isinstance(value, types.ModuleType) or name == "__warningregistry__"


def _wrapped_by_torch(value):
    """The function that `value` calls, when `value` is one of torch's own wrappers; else None."""
    code = getattr(value, "__code__", None)
    variable = _torch_wrapper_codes().get(code) if isinstance(value, types.FunctionType) else None
    if variable is None:
        return None
    return _contents(value.__closure__[code.co_freevars.index(variable)])


@functools.cache
def _torch_wrapper_codes():
    """{code of a wrapper that torch makes: the variable through which it calls what it wraps}."""
    codes = {}
    for module_name, qualified_name, variable in _TORCH_WRAPPERS:
        try:
            maker = operator.attrgetter(qualified_name)(importlib.import_module(module_name))
        except (ImportError, AttributeError):  # another torch: its wrappers, if any, look like tampering
            continue
        codes.update((constant, variable) for constant in maker.__code__.co_consts
                     if isinstance(constant, types.CodeType) and variable in constant.co_freevars)
    return codes


class _Namespace:
    """The attributes of one module, class or registered check, as captured."""

    def __init__(self, label, owner, mapping, kind):
        self.label, self.owner, self.mapping, self.kind = label, owner, mapping, kind
        ignored = {name for owner_label, name in _REBOUND_BY_TORCH if owner_label == label}
        self.saved = {name: value for name, value in mapping.items() if name not in ignored}
        self.keys = tuple(self.saved)
        self.values = tuple(self.saved.values())
        self.size = len(mapping)
        self.ignored = frozenset(ignored)
        # An itemgetter of one name returns the value itself, not a tuple of one: asked for it twice.
        keys = self.keys * 2 if len(self.keys) == 1 else self.keys
        self.look_up = operator.itemgetter(*keys) if keys else lambda mapping: ()
        self.expected = self.values * 2 if len(self.keys) == 1 else self.values

    def differences(self):
        """[(name, what happened)] for names replaced, deleted or added (a harmless addition aside)."""
        found = []
        for name, value in self.saved.items():
            if name not in self.mapping:
                found.append((name, "deleted"))
            elif self.mapping[name] is not value and _wrapped_by_torch(self.mapping[name]) is not value:
                found.append((name, "replaced"))
        for name in self.mapping.keys() - self.saved.keys() - self.ignored:
            if not _benign_addition(name, self.mapping[name]):
                found.append((name, "added"))
        return found

    def restore(self):
        for name, what in self.differences():
            if what == "added":
                self._delete(name)
            else:
                self._set(name, self.saved[name])

    def _set(self, name, value):
        if self.kind == "class":
            type.__setattr__(self.owner, name, value)
        else:
            self.mapping[name] = value  # a module's or a frozen dataclass's own __dict__

    def _delete(self, name):
        if self.kind == "class":
            type.__delattr__(self.owner, name)
        else:
            del self.mapping[name]


class _Functions:
    """The code, defaults and closure contents of Python functions, as captured."""

    def __init__(self, labelled):
        self.labels = tuple(labelled.values())
        self.functions = tuple(labelled)
        self.codes = tuple(map(_code, self.functions))
        self.defaults = tuple(map(_defaults, self.functions))
        self.kwdefaults = tuple(map(_kwdefaults, self.functions))
        self.cells = tuple((cell, label) for function, label in labelled.items()
                           for cell in function.__closure__ or () if _filled(cell))
        self.contents = tuple(cell.cell_contents for cell, _ in self.cells)
        self.bare_cells = tuple(cell for cell, _ in self.cells)

    def unchanged(self):
        try:
            contents = map(_cell_contents, self.bare_cells)
            return (all(map(_is, map(_code, self.functions), self.codes))
                    and all(map(_is, map(_defaults, self.functions), self.defaults))
                    and all(map(_is, map(_kwdefaults, self.functions), self.kwdefaults))
                    and all(map(_is, contents, self.contents)))
        except ValueError:  # a cell emptied
            return False

    def differences(self):
        found = []
        for function, label, code, defaults, kwdefaults in zip(self.functions, self.labels, self.codes,
                                                               self.defaults, self.kwdefaults):
            if function.__code__ is not code:
                found.append(f"the code of {label} was replaced")
            if function.__defaults__ is not defaults or function.__kwdefaults__ is not kwdefaults:
                found.append(f"the default arguments of {label} were replaced")
        for (cell, label), content in zip(self.cells, self.contents):
            if _contents(cell) is not content:
                found.append(f"a variable that {label} closes over was replaced")
        return found

    def restore(self):
        for function, code, defaults, kwdefaults in zip(self.functions, self.codes, self.defaults, self.kwdefaults):
            function.__code__, function.__defaults__, function.__kwdefaults__ = code, defaults, kwdefaults
        for (cell, _), content in zip(self.cells, self.contents):
            cell.cell_contents = content


_EMPTY = object()


def _filled(cell):
    return _contents(cell) is not _EMPTY


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: a name its function's scope has not bound (or deleted)
        return _EMPTY


class TamperGuard:
    """capture() once, before learner code; then changes() and restore() after each exercise."""

    def __init__(self):
        self._namespaces, self._functions, self._modules, self._registry = (), _Functions({}), {}, ([], ())
        self._mappings, self._sizes, self._look_ups, self._expected = (), [], (), ()
        self._grown = []  # [(mapping, its names)] of namespaces grown harmlessly since capture

    def capture(self, also=()):
        """Capture the grading machinery of this process: the hooked modules imported so far and
        `also`, more modules (the worker's own, which runs as __main__)."""
        from hooked.checks import check_api

        modules = _machinery_modules(also)
        _wrap_optimizer_steps_as_torch_would(modules)
        self._modules = dict(modules)
        self._namespaces = tuple(_namespaces_of(modules))
        self._mappings = tuple(namespace.mapping for namespace in self._namespaces)
        self._sizes = [namespace.size for namespace in self._namespaces]
        self._grown = []
        self._look_ups = tuple(namespace.look_up for namespace in self._namespaces)
        self._expected = tuple(itertools.chain.from_iterable(namespace.expected for namespace in self._namespaces))
        self._functions = _Functions(_functions_in(self._namespaces))
        self._registry = (check_api._REGISTERED, tuple(check_api._REGISTERED))

    def changes(self):
        """One line for each thing learner code changed since capture(): [] when nothing did."""
        if self._untouched():
            return []
        found = []
        for index, namespace in enumerate(self._namespaces):
            differences = namespace.differences()
            found += [f"{namespace.label}.{name} was {what}" for name, what in differences]
            if not differences and len(namespace.mapping) != self._sizes[index]:
                self._accept_growth(index, namespace.mapping)
        found += self._functions.differences()
        found += [f"sys.modules[{name!r}] was {'deleted' if name not in sys.modules else 'replaced'}"
                  for name, module in self._modules.items() if sys.modules.get(name) is not module]
        registry, saved = self._registry
        if not _same(tuple(registry), saved):
            found.append("the registry of checks (hooked.checks.check_api) was changed")
        return found

    def _accept_growth(self, index, mapping):
        """Expect the namespace at `index` to have the names it now has, harmless additions among them:
        so that the next changes() takes its quick way (a warning shown adds __warningregistry__)."""
        self._sizes[index] = len(mapping)
        self._grown = [(grown, names) for grown, names in self._grown if grown is not mapping]
        self._grown.append((mapping, frozenset(mapping)))

    def _untouched(self):
        # All in C but for this function and the namespaces that grew: this runs thrice an exercise.
        registry, saved = self._registry
        try:
            current = itertools.chain.from_iterable(map(operator.call, self._look_ups, self._mappings))
            values_kept = list(map(len, self._mappings)) == self._sizes and all(map(_is, current, self._expected))
        except KeyError:  # a name deleted
            return False
        return (values_kept and all(mapping.keys() == names for mapping, names in self._grown)
                and self._functions.unchanged()
                and all(sys.modules.get(name) is module for name, module in self._modules.items())
                and _same(tuple(registry), saved))

    def restore(self):
        """Put back everything changes() would name."""
        for namespace in self._namespaces:
            namespace.restore()
        self._functions.restore()
        sys.modules.update(self._modules)
        registry, saved = self._registry
        registry[:] = saved


def _machinery_modules(also):
    """{name in sys.modules: module} of what a verdict goes through."""
    modules = {name: module for name, module in sys.modules.items()
               if name == "hooked" or name.startswith("hooked.")}
    modules.update((name, sys.modules[name]) for name in _TORCH_MODULES if name in sys.modules)
    modules.update({"builtins": builtins, "json": json, "json.encoder": json.encoder})
    for module in also:
        modules[next(name for name, value in sys.modules.items() if value is module)] = module
    return {name: module for name, module in modules.items() if module is not None}


def _wrap_optimizer_steps_as_torch_would(modules):
    """torch wraps the step of an optimizer's class when it makes the first optimizer of that class
    (adding it to a subclass that inherits its step): done now for the course's own optimizers."""
    from torch.optim import Optimizer

    wrap_step = getattr(Optimizer, "_patch_step_function", None)  # torch's own, as of torch 2.13
    if wrap_step is None:
        return
    optimizers = {value for name, module in modules.items() if name.startswith("hooked")
                  for value in vars(module).values() if isinstance(value, type) and issubclass(value, Optimizer)}
    for optimizer in sorted(optimizers - {Optimizer}, key=lambda cls: len(cls.__mro__)):  # bases first
        wrap_step(object.__new__(optimizer))


def _namespaces_of(modules):
    """A _Namespace for each module, each class a hooked module defines, the torch classes the
    checks call, and each registered check's record."""
    from hooked.checks.check_api import registered_checks

    for name, module in modules.items():
        yield _Namespace(name, module, vars(module), "module")
        if name.startswith("hooked") or name == "__main__" or module.__name__.startswith("hooked"):
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__module__ == module.__name__:
                    yield _Namespace(f"{name}.{value.__qualname__}", value, value.__dict__, "class")
    for module_name, class_name in _TORCH_CLASSES:
        if module_name in modules:
            cls = getattr(modules[module_name], class_name)
            yield _Namespace(f"{module_name}.{class_name}", cls, cls.__dict__, "class")
    for registered in registered_checks():
        yield _Namespace(f"the registration of {registered.name}", registered, vars(registered), "record")


def _functions_in(namespaces):
    """{Python function: its name for messages} of the functions the namespaces hold."""
    found = {}
    for namespace in namespaces:
        for name, value in namespace.saved.items():
            value = getattr(value, "__func__", value) if isinstance(value, (staticmethod, classmethod)) else value
            if isinstance(value, types.FunctionType) and value not in found:
                found[value] = f"{namespace.label}.{name}"
    return found
