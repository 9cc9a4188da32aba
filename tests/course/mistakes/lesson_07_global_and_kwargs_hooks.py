"""Mistake catalogue for lesson 07, global and keyword hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py."""

from mistakes import edited

# The reference shape of summarize_model; each wrong entry changes one thing in it.
_SUMMARY = '''
import torch
import torch.nn.modules.module as module_hooks


def summarize_model(model, *inputs, **kwargs):
    names = {module: name for name, module in model.named_modules()}
    rows, open_rows = [], []

    def shape_of(value):
        if isinstance(value, torch.Tensor):
            return tuple(value.shape)
        if isinstance(value, (tuple, list)):
            return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]
        return None

    def starts(module, args):
        if module in names:
            row = {"name": names[module], "type": type(module).__name__, "output_shape": None,
                   "params": sum(p.numel() for p in module.parameters(recurse=False))}
            rows.append(row)
            open_rows.append(row)

    def finishes(module, args, output):
        if module in names:
            open_rows.pop()["output_shape"] = shape_of(output)

    with module_hooks.register_module_forward_pre_hook(starts), \\
            module_hooks.register_module_forward_hook(finishes):
        output = model(*inputs, **kwargs)
    return output, rows
'''


def _summary(*replacements):
    return edited(_SUMMARY, *replacements)


_FIND = '''
import torch
import torch.nn.modules.module as module_hooks


def find_first_nonfinite(model, *inputs):
    names = {module: name for name, module in model.named_modules()}
    found = []

    def not_finite(value):
        if isinstance(value, torch.Tensor):
            return not torch.isfinite(value).all()
        if isinstance(value, (tuple, list)):
            return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))
        return False

    def hook(module, args, output):
        if not found and module in names and not_finite(output):
            found.append(names[module])

    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):
        model(*inputs)
    return found[0] if found else None
'''


def _find(*replacements):
    return edited(_FIND, *replacements)


ENTRIES = [
    # ------------------------------------------------------------------ summarize_model
    dict(exercise="summarize_model", kind="wrong", why="rows made in the forward hook, in finish order",
         source='''
import torch
import torch.nn.modules.module as module_hooks


def summarize_model(model, *inputs, **kwargs):
    names = {module: name for name, module in model.named_modules()}
    rows = []

    def finishes(module, args, output):
        if module in names:
            if isinstance(output, torch.Tensor):
                shape = tuple(output.shape)
            elif isinstance(output, (tuple, list)):
                shape = [tuple(o.shape) if isinstance(o, torch.Tensor) else None for o in output]
            else:
                shape = None
            rows.append({"name": names[module], "type": type(module).__name__, "output_shape": shape,
                         "params": sum(p.numel() for p in module.parameters(recurse=False))})

    with module_hooks.register_module_forward_hook(finishes):
        output = model(*inputs, **kwargs)
    return output, rows
''',
         expect=["order the calls finish", "pre-hook"]),
    dict(exercise="summarize_model", kind="wrong", why="rows kept in a dict keyed by name",
         source=_summary(('rows, open_rows = [], []', 'rows, open_rows = {}, []'),
                         ('rows.append(row)\n            open_rows', 'rows[row["name"]] = row\n            open_rows'),
                         ('return output, rows', 'return output, list(rows.values())')),
         expect=["calls twice", "row per call"]),
    dict(exercise="summarize_model", kind="wrong", why="counts parameters recursively",
         source=_summary(('module.parameters(recurse=False)', 'module.parameters()')),
         expect=["submodules too", "recurse=False"]),
    dict(exercise="summarize_model", kind="wrong", why="counts only trainable parameters",
         source=_summary(('p.numel() for p in module.parameters(recurse=False)',
                          'p.numel() for p in module.parameters(recurse=False) if p.requires_grad')),
         expect=["frozen"]),
    dict(exercise="summarize_model", kind="wrong", why="counts parameter tensors, not elements",
         source=_summary(('sum(p.numel() for p in module.parameters(recurse=False))',
                          'len(list(module.parameters(recurse=False)))')),
         expect=["number of parameter tensors", "numel"]),
    dict(exercise="summarize_model", kind="wrong", why="skips the root because its name is falsy",
         source=_summary(('    def starts(module, args):\n        if module in names:',
                          '    def starts(module, args):\n        if names.get(module):'),
                         ('    def finishes(module, args, output):\n        if module in names:',
                          '    def finishes(module, args, output):\n        if names.get(module):')),
         expect=["model itself is missing", "falsy"]),
    dict(exercise="summarize_model", kind="wrong", why="looks up modules that are not in the model",
         source=_summary(('    def starts(module, args):\n        if module in names:',
                          '    def starts(module, args):\n        if True:'),
                         ('    def finishes(module, args, output):\n        if module in names:',
                          '    def finishes(module, args, output):\n        if True:')),
         expect=["not in model.named_modules()", "plain list"]),
    dict(exercise="summarize_model", kind="wrong", why="keyword arguments not passed to the model",
         source=_summary(('output = model(*inputs, **kwargs)', 'output = model(*inputs)')),
         expect=["keyword arguments on to the model"]),
    dict(exercise="summarize_model", kind="wrong", why="tuple outputs get None",
         source=_summary(('            return [tuple(item.shape) if isinstance(item, torch.Tensor) else None '
                          'for item in value]\n', '            return None\n')),
         expect=["returned a tuple", "list with the shape tuple"]),
    dict(exercise="summarize_model", kind="wrong", why="global hooks never removed",
         source=_summary(('    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                          '            module_hooks.register_module_forward_hook(finishes):\n'
                          '        output = model(*inputs, **kwargs)',
                          '    module_hooks.register_module_forward_pre_hook(starts)\n'
                          '    module_hooks.register_module_forward_hook(finishes)\n'
                          '    output = model(*inputs, **kwargs)')),
         expect=["returned, global hooks were still registered", "fires for every module"]),
    dict(exercise="summarize_model", kind="wrong", why="hooks removed only when forward succeeds",
         source=_summary(('    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                          '            module_hooks.register_module_forward_hook(finishes):\n'
                          '        output = model(*inputs, **kwargs)',
                          '    pre = module_hooks.register_module_forward_pre_hook(starts)\n'
                          '    post = module_hooks.register_module_forward_hook(finishes)\n'
                          '    output = model(*inputs, **kwargs)\n'
                          '    pre.remove()\n'
                          '    post.remove()')),
         expect=["raised, global hooks were still registered", "try/finally"]),
    dict(exercise="summarize_model", kind="wrong", why="swallows the model's exception",
         source=_summary(('    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                          '            module_hooks.register_module_forward_hook(finishes):\n'
                          '        output = model(*inputs, **kwargs)',
                          '    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                          '            module_hooks.register_module_forward_hook(finishes):\n'
                          '        try:\n'
                          '            output = model(*inputs, **kwargs)\n'
                          '        except Exception:\n'
                          '            output = None')),
         expect=["returned normally", "reach the caller"]),
    dict(exercise="summarize_model", kind="wrong", why="per-module hooks left registered",
         source='''
import torch


def summarize_model(model, *inputs, **kwargs):
    rows, open_rows = [], []
    for name, module in model.named_modules():
        def starts(module, args, name=name):
            row = dict(name=name, type=type(module).__name__, output_shape=None,
                       params=sum(p.numel() for p in module.parameters(recurse=False)))
            rows.append(row)
            open_rows.append(row)

        def finishes(module, args, output):
            if isinstance(output, torch.Tensor):
                open_rows.pop()["output_shape"] = tuple(output.shape)
            else:
                open_rows.pop()["output_shape"] = [tuple(o.shape) if isinstance(o, torch.Tensor) else None
                                                   for o in output]

        module.register_forward_pre_hook(starts)
        module.register_forward_hook(finishes)
    return model(*inputs, **kwargs), rows
''',
         expect=["hooks were still registered on the modules"]),
    dict(exercise="summarize_model", kind="right", why="per-module hooks and try/finally",
         source='''
import torch


def summarize_model(model, *inputs, **kwargs):
    rows, stack, handles = [], [], []

    def make_hooks(name):
        def starts(module, args):
            stack.append(len(rows))
            rows.append({"name": name, "type": module.__class__.__name__, "output_shape": None,
                         "params": sum(p.numel() for p in module._parameters.values() if p is not None)})

        def finishes(module, args, output):
            if torch.is_tensor(output):
                shape = tuple(output.size())
            elif isinstance(output, (list, tuple)):
                shape = [tuple(o.size()) if torch.is_tensor(o) else None for o in output]
            else:
                shape = None
            rows[stack.pop()]["output_shape"] = shape
        return starts, finishes

    try:
        for name, module in model.named_modules():
            starts, finishes = make_hooks(name)
            handles.append(module.register_forward_pre_hook(starts))
            handles.append(module.register_forward_hook(finishes))
        output = model(*inputs, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return output, rows
''',
         expect=[]),
    dict(exercise="summarize_model", kind="right", why="global hooks, ExitStack, rows built as tuples then dicts",
         source='''
import contextlib

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook


def summarize_model(model, *inputs, **kwargs):
    names = dict((m, n) for n, m in model.named_modules())
    calls, pending = [], {}

    def pre(module, args):
        if module not in names:
            return
        pending.setdefault(module, []).append(len(calls))
        calls.append([names[module], type(module).__name__, None,
                      sum(p.numel() for _, p in module.named_parameters(recurse=False))])

    def post(module, args, output):
        if module not in names:
            return
        index = pending[module].pop()
        if isinstance(output, torch.Tensor):
            calls[index][2] = tuple(output.shape)
        elif isinstance(output, (tuple, list)):
            calls[index][2] = [tuple(o.shape) if isinstance(o, torch.Tensor) else None for o in output]

    with contextlib.ExitStack() as stack:
        stack.enter_context(register_module_forward_pre_hook(pre))
        stack.enter_context(register_module_forward_hook(post))
        output = model(*inputs, **kwargs)
    keys = ("name", "type", "output_shape", "params")
    return output, [dict(zip(keys, call)) for call in calls]
''',
         expect=[]),

    dict(exercise="summarize_model", kind="wrong", why="output taken from a second call without hooks",
         source=_summary(("    return output, rows", "    return model(*inputs, **kwargs), rows")),
         expect=["ran the model 2 times", "once"]),
    dict(exercise="summarize_model", kind="wrong", why="model run once per kind of hook",
         source=_summary(("""    with module_hooks.register_module_forward_pre_hook(starts), \\
            module_hooks.register_module_forward_hook(finishes):
        output = model(*inputs, **kwargs)""", """    with module_hooks.register_module_forward_pre_hook(starts):
        model(*inputs, **kwargs)
    open_rows[:] = list(reversed(rows))
    with module_hooks.register_module_forward_hook(finishes):
        output = model(*inputs, **kwargs)""")),
         expect=["ran the model 2 times"]),

    dict(exercise="summarize_model", kind="wrong", why="input shape taken in the pre-hook",
         source=_summary(('"output_shape": None,', '"output_shape": tuple(args[0].shape),'),
                         ('open_rows.pop()["output_shape"] = shape_of(output)', 'open_rows.pop()')),
         expect=["shape of the module's input", "forward hook"]),
    dict(exercise="summarize_model", kind="right",
         why="global hook with with_kwargs and always_call, torch.Size and list shapes, _parameters",
         source='''
import torch
import torch.nn.modules.module as module_hooks

def summarize_model(model, *inputs, **kwargs):
    names = {m: n for n, m in model.named_modules()}
    rows, stack = [], []
    def pre(m, args):
        if m in names:
            stack.append(len(rows))
            rows.append(dict(name=names[m], type=m.__class__.__name__, output_shape=None,
                             params=sum(p.numel() for p in m._parameters.values() if p is not None)))
    def post(m, args, kwargs, out):
        if m in names:
            i = stack.pop()
            if torch.is_tensor(out):
                rows[i]["output_shape"] = out.shape
            elif isinstance(out, (list, tuple)):
                rows[i]["output_shape"] = [list(o.shape) if torch.is_tensor(o) else None for o in out]
    h1 = module_hooks.register_module_forward_pre_hook(pre)
    h2 = module_hooks.register_module_forward_hook(post, with_kwargs=True, always_call=True)
    try:
        out = model(*inputs, **kwargs)
    finally:
        h1.remove(); h2.remove()
    return out, rows
''',
         expect=[]),

    dict(exercise="summarize_model", kind="wrong", why="wraps the model's exception in its own",
         source=_summary(("        output = model(*inputs, **kwargs)",
                          "        try:\n            output = model(*inputs, **kwargs)\n"
                          "        except Exception as error:\n"
                          "            raise RuntimeError('summary failed') from error")),
         expect=["made from the model's valueerror", "unchanged"]),
    dict(exercise="summarize_model", kind="wrong", why="inputs passed as one tuple",
         source=_summary(("output = model(*inputs, **kwargs)", "output = model(inputs, **kwargs)")),
         expect=["unpack it", "model(*inputs, **kwargs)"]),

    # ------------------------------------------------------------------ find_first_nonfinite
    dict(exercise="find_first_nonfinite", kind="wrong", why="looks only at the last item of a tuple",
         source=_find(('return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))',
                       'return bool(value) and not_finite(value[-1])')),
         expect=["returns a tuple", "every tensor"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="needs every element non-finite (any instead of all)",
         source=_find(('return not torch.isfinite(value).all()', 'return not torch.isfinite(value).any()')),
         expect=["every* element", "one nan or inf is enough"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="tests the sum, which overflows",
         source=_find(('return not torch.isfinite(value).all()', 'return not torch.isfinite(value.sum())')),
         expect=["overflows", "elements themselves"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="runs the model twice",
         source=_find(('        model(*inputs)\n', '        model(*inputs)\n        model(*inputs)\n')),
         expect=["ran the model 2 times", "once"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="returns the class name",
         source=_find(('found.append(names[module])', 'found.append(type(module).__name__)')),
         expect=["class", "named_modules"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="first in named_modules() order",
         source='''
import torch
def find_first_nonfinite(model, *inputs):
    bad = set()
    names = {m: n for n, m in model.named_modules()}
    def hook(m, a, o):
        if m in names and isinstance(o, torch.Tensor) and not torch.isfinite(o).all():
            bad.add(names[m])
    hs = [m.register_forward_hook(hook) for m in names]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in hs: h.remove()
    for n, m in model.named_modules():
        if n in bad: return n
    return None
''',
         expect=["not the order of named_modules()"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="checks only NaN",
         source=_find(('return not torch.isfinite(value).all()', 'return bool(torch.isnan(value).any())')),
         expect=["infinities", "isfinite"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="keeps the last non-finite module",
         source=_find(('if not found and module in names', 'if module in names'),
                      ('return found[0] if found else None', 'return found[-1] if found else None')),
         expect=["last module", "returns after its children"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="looks at inputs in a pre-hook",
         source=_find(('    def hook(module, args, output):\n        if not found and module in names and '
                       'not_finite(output):',
                       '    def hook(module, args):\n        if not found and module in names and not_finite(args):'),
                      ('module_hooks.register_module_forward_hook(hook)',
                       'module_hooks.register_module_forward_pre_hook(hook)')),
         expect=["input", "forward hook"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="ignores tuple outputs",
         source=_find(('return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))',
                       'return False')),
         expect=["returns a tuple", "every tensor"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="the root's empty name taken for no answer",
         source=_find(('return found[0] if found else None', 'return found[0] if found and found[0] else None')),
         expect=["model itself", "is none"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="global hook never removed",
         source=_find(('    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):',
                       '    module_hooks.register_module_forward_hook(hook)\n    with torch.no_grad():')),
         expect=["global hooks were still registered"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="runs with gradients on",
         source=_find(('    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):',
                       '    with module_hooks.register_module_forward_hook(hook):')),
         expect=["gradients on", "torch.no_grad()"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="looks up modules that are not in the model",
         source=_find(('if not found and module in names and not_finite(output):',
                       'if not found and not_finite(output):')),
         expect=["not in model.named_modules()"]),
    dict(exercise="find_first_nonfinite", kind="wrong", why="hooks only the direct children",
         source='''
import torch


def find_first_nonfinite(model, *inputs):
    found, handles = [], []
    for name, child in model.named_children():
        def hook(module, args, output, name=name):
            if not found and isinstance(output, torch.Tensor) and not torch.isfinite(output).all():
                found.append(name)
        handles.append(child.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return found[0] if found else None
''',
         expect=["parent of the culprit"]),
    dict(exercise="find_first_nonfinite", kind="right", why="per-module hooks, every call recorded",
         source='''
import torch


def find_first_nonfinite(model, *inputs):
    order, handles = [], []

    def bad(value):
        values = value if isinstance(value, (tuple, list)) else [value]
        return any(torch.is_tensor(v) and bool((torch.isnan(v) | torch.isinf(v)).any()) for v in values)

    for name, module in model.named_modules():
        handles.append(module.register_forward_hook(
            lambda module, args, output, name=name: order.append((name, bad(output)))))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return next((name for name, is_bad in order if is_bad), None)
''',
         expect=[]),
    dict(exercise="find_first_nonfinite", kind="right", why="global hook that stops the pass early",
         source='''
import torch
import torch.nn.modules.module as module_hooks


class _Found(Exception):
    pass


def find_first_nonfinite(model, *inputs):
    names = {id(m): n for n, m in model.named_modules()}

    def hook(module, args, output):
        items = list(output) if isinstance(output, (tuple, list)) else [output]
        if id(module) in names and any(isinstance(t, torch.Tensor) and not t.isfinite().all() for t in items):
            raise _Found(names[id(module)])

    handle = module_hooks.register_module_forward_hook(hook)
    try:
        with torch.no_grad():
            model(*inputs)
    except _Found as found:
        return found.args[0]
    finally:
        handle.remove()
    return None
''',
         expect=[]),
    dict(exercise="find_first_nonfinite", kind="right", why="per-module hooks, isinf or isnan, nonlocal",
         source='''
import torch
def find_first_nonfinite(model, *inputs):
    found = None
    handles = []
    def bad(v):
        ts = [v] if isinstance(v, torch.Tensor) else [t for t in v if isinstance(t, torch.Tensor)] if isinstance(v, (list, tuple)) else []
        return any(bool(torch.isinf(t).any() | torch.isnan(t).any()) for t in ts)
    for name, m in model.named_modules():
        def hook(m, a, o, name=name):
            nonlocal found
            if found is None and bad(o):
                found = name
        handles.append(m.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles: h.remove()
    return found
''',
         expect=[]),
]
