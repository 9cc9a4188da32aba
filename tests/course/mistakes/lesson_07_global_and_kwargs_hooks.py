"""Mistake catalogue for lesson 07, global and keyword hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py. An entry that is the reference solution with one mistake
says so: `edited(reference(exercise), (old, new), ...)`; the others are submissions of their own."""

from mistakes import edited, reference


ENTRIES = [
    # ------------------------------------------------------------------ summarize_model
    dict(exercise="summarize_model", kind="wrong", clause="start-order", why="rows made in the forward hook, in finish order",
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
         mistake="07.summarize_model.finish-order",
         expect=["order the calls finish", "pre-hook"]),
    dict(exercise="summarize_model", kind="wrong", clause="row-per-call", why="rows kept in a dict keyed by name",
         source=edited(reference("summarize_model"),
                       ('rows, open_rows = [], []', 'rows, open_rows = {}, []'),
                       ('rows.append(row)\n            open_rows', 'rows[row["name"]] = row\n            open_rows'),
                       ('return output, rows', 'return output, list(rows.values())')),
         mistake="07.summarize_model.row-per-module",
         expect=["calls twice", "row per call"]),
    dict(exercise="summarize_model", kind="wrong", clause="params-own", why="counts parameters recursively",
         source=edited(reference("summarize_model"), ('module.parameters(recurse=False)', 'module.parameters()')),
         mistake="07.summarize_model.params-recursive",
         expect=["submodules too", "recurse=False"]),
    dict(exercise="summarize_model", kind="wrong", clause="params-frozen", why="counts only trainable parameters",
         source=edited(reference("summarize_model"),
                       ('p.numel() for p in module.parameters(recurse=False)',
                        'p.numel() for p in module.parameters(recurse=False) if p.requires_grad')),
         mistake="07.summarize_model.params-trainable-only",
         expect=["frozen"]),
    dict(exercise="summarize_model", kind="wrong", clause="params-own", why="counts parameter tensors, not elements",
         source=edited(reference("summarize_model"),
                       ('sum(p.numel() for p in module.parameters(recurse=False))',
                        'len(list(module.parameters(recurse=False)))')),
         mistake="07.summarize_model.params-tensor-count",
         expect=["number of parameter tensors", "numel"]),
    dict(exercise="summarize_model", kind="wrong", clause="root-name", why="skips the root because its name is falsy",
         source=edited(reference("summarize_model"),
                       ('    def starts(module, args):\n        if module in names:',
                        '    def starts(module, args):\n        if names.get(module):'),
                       ('    def finishes(module, args, output):\n        if module in names:',
                        '    def finishes(module, args, output):\n        if names.get(module):')),
         mistake="07.summarize_model.root-skipped-falsy-name",
         expect=["model itself is missing", "falsy"]),
    dict(exercise="summarize_model", kind="wrong", clause="unregistered", why="looks up modules that are not in the model",
         source=edited(reference("summarize_model"),
                       ('    def starts(module, args):\n        if module in names:',
                        '    def starts(module, args):\n        if True:'),
                       ('    def finishes(module, args, output):\n        if module in names:',
                        '    def finishes(module, args, output):\n        if True:')),
         mistake="07.summarize_model.unregistered-module-looked-up",
         expect=["not in model.named_modules()", "plain list"]),
    dict(exercise="summarize_model", kind="wrong", clause="arguments", why="keyword arguments not passed to the model",
         source=edited(reference("summarize_model"), ('output = model(*inputs, **kwargs)', 'output = model(*inputs)')),
         mistake="07.summarize_model.kwargs-dropped",
         expect=["keyword arguments on to the model"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-sequence", why="tuple outputs get None",
         source=edited(reference("summarize_model"),
                       ('            return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]\n',
                        '            return None\n')),
         mistake="07.summarize_model.sequence-shapes-wrong",
         expect=["returned a tuple", "list with the shape tuple"]),
    dict(exercise="summarize_model", kind="wrong", clause="hooks-removed", why="global hooks never removed",
         source=edited(reference("summarize_model"),
                       ('    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                        '            module_hooks.register_module_forward_hook(finishes):\n'
                        '        output = model(*inputs, **kwargs)',
                        '    module_hooks.register_module_forward_pre_hook(starts)\n'
                        '    module_hooks.register_module_forward_hook(finishes)\n'
                        '    output = model(*inputs, **kwargs)')),
         mistake="07.summarize_model.global-hooks-left",
         expect=["returned, global hooks were still registered", "fires for every module"]),
    dict(exercise="summarize_model", kind="wrong", clause="hooks-removed-raise", why="hooks removed only when forward succeeds",
         source=edited(reference("summarize_model"),
                       ('    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                        '            module_hooks.register_module_forward_hook(finishes):\n'
                        '        output = model(*inputs, **kwargs)',
                        '    pre = module_hooks.register_module_forward_pre_hook(starts)\n'
                        '    post = module_hooks.register_module_forward_hook(finishes)\n'
                        '    output = model(*inputs, **kwargs)\n'
                        '    pre.remove()\n'
                        '    post.remove()')),
         mistake="07.summarize_model.global-hooks-left-on-error",
         expect=["raised, global hooks were still registered", "try/finally"]),
    dict(exercise="summarize_model", kind="wrong", clause="exception-unchanged", why="swallows the model's exception",
         source=edited(reference("summarize_model"),
                       ('    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                        '            module_hooks.register_module_forward_hook(finishes):\n'
                        '        output = model(*inputs, **kwargs)',
                        '    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                        '            module_hooks.register_module_forward_hook(finishes):\n'
                        '        try:\n'
                        '            output = model(*inputs, **kwargs)\n'
                        '        except Exception:\n'
                        '            output = None')),
         mistake="07.summarize_model.swallowed-exception",
         expect=["returned normally", "reach the caller"]),
    dict(exercise="summarize_model", kind="wrong", clause="hooks-removed", why="per-module hooks left registered",
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
         mistake="07.summarize_model.module-hooks-left",
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

    dict(exercise="summarize_model", kind="wrong", clause="once", why="output taken from a second call without hooks",
         source=edited(reference("summarize_model"),
                       ('    return output, rows', '    return model(*inputs, **kwargs), rows')),
         mistake="07.summarize_model.model-not-run-once",
         expect=["ran the model 2 times", "once"]),
    dict(exercise="summarize_model", kind="wrong", clause="once", why="model run once per kind of hook",
         source=edited(reference("summarize_model"),
                       ('    with module_hooks.register_module_forward_pre_hook(starts), \\\n'
                        '            module_hooks.register_module_forward_hook(finishes):\n'
                        '        output = model(*inputs, **kwargs)',
                        '    with module_hooks.register_module_forward_pre_hook(starts):\n'
                        '        model(*inputs, **kwargs)\n'
                        '    open_rows[:] = list(reversed(rows))\n'
                        '    with module_hooks.register_module_forward_hook(finishes):\n'
                        '        output = model(*inputs, **kwargs)')),
         mistake="07.summarize_model.model-not-run-once",
         expect=["ran the model 2 times"]),

    dict(exercise="summarize_model", kind="wrong", clause="shape-tensor", why="input shape taken in the pre-hook",
         source=edited(reference("summarize_model"),
                       ('"output_shape": None,', '"output_shape": tuple(args[0].shape),'),
                       ('open_rows.pop()["output_shape"] = shape_of(output)', 'open_rows.pop()')),
         mistake="07.summarize_model.input-shape",
         expect=["shape of the module's input", "forward hook"]),
    dict(exercise="summarize_model", kind="right",
         why="global hook with with_kwargs and always_call, torch.Size shapes, _parameters",
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
                rows[i]["output_shape"] = [o.shape if torch.is_tensor(o) else None for o in out]
    h1 = module_hooks.register_module_forward_pre_hook(pre)
    h2 = module_hooks.register_module_forward_hook(post, with_kwargs=True, always_call=True)
    try:
        out = model(*inputs, **kwargs)
    finally:
        h1.remove(); h2.remove()
    return out, rows
''',
         expect=[]),

    dict(exercise="summarize_model", kind="wrong", clause="exception-unchanged", why="wraps the model's exception in its own",
         source=edited(reference("summarize_model"),
                       ('        output = model(*inputs, **kwargs)',
                        '        try:\n'
                        '            output = model(*inputs, **kwargs)\n'
                        '        except Exception as error:\n'
                        "            raise RuntimeError('summary failed') from error")),
         mistake="07.summarize_model.exception-replaced",
         expect=["made from the model's valueerror", "unchanged"]),
    dict(exercise="summarize_model", kind="wrong", clause="arguments", why="inputs passed as one tuple",
         source=edited(reference("summarize_model"),
                       ('output = model(*inputs, **kwargs)', 'output = model(inputs, **kwargs)')),
         mistake="07.summarize_model.inputs-not-unpacked",
         expect=["unpack it", "model(*inputs, **kwargs)"]),

    # ------------------------------------------------------------------ find_first_nonfinite
    dict(exercise="find_first_nonfinite", kind="wrong", clause="sequence", why="looks only at the last item of a tuple",
         source=edited(reference("find_first_nonfinite"),
                       ('return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))',
                        'return bool(value) and not_finite(value[-1])')),
         mistake="07.find_first_nonfinite.sequence-items-missed",
         expect=["returns a tuple", "every tensor"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="any-element", why="needs every element non-finite (any instead of all)",
         source=edited(reference("find_first_nonfinite"),
                       ('return not torch.isfinite(value).all()', 'return not torch.isfinite(value).any()')),
         mistake="07.find_first_nonfinite.every-element-required",
         expect=["every* element", "one nan or inf is enough"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="any-element", why="tests the sum, which overflows",
         source=edited(reference("find_first_nonfinite"),
                       ('return not torch.isfinite(value).all()', 'return not torch.isfinite(value.sum())')),
         mistake="07.find_first_nonfinite.sum-overflow",
         expect=["overflows", "elements themselves"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="once", why="runs the model twice",
         source=edited(reference("find_first_nonfinite"),
                       ('        model(*inputs)\n', '        model(*inputs)\n        model(*inputs)\n')),
         mistake="07.find_first_nonfinite.model-run-more-than-once",
         expect=["ran the model 2 times", "once"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="name", why="returns the class name",
         source=edited(reference("find_first_nonfinite"),
                       ('found.append(names[module])', 'found.append(type(module).__name__)')),
         mistake="07.find_first_nonfinite.class-name",
         expect=["class", "named_modules"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="return-order", why="first in named_modules() order",
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
         mistake="07.find_first_nonfinite.last-not-first",
         expect=["nor the order of named_modules()"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="infinities", why="checks only NaN",
         source=edited(reference("find_first_nonfinite"),
                       ('return not torch.isfinite(value).all()', 'return bool(torch.isnan(value).any())')),
         mistake="07.find_first_nonfinite.nan-only",
         expect=["infinities", "isfinite"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="return-order", why="keeps the last non-finite module",
         source=edited(reference("find_first_nonfinite"),
                       ('if not found and module in names', 'if module in names'),
                       ('return found[0] if found else None', 'return found[-1] if found else None')),
         mistake="07.find_first_nonfinite.last-not-first",
         expect=["last module", "returns after its children"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="output", why="looks at inputs in a pre-hook",
         source=edited(reference("find_first_nonfinite"),
                       ('    def hook(module, args, output):\n'
                        '        if not found and module in names and not_finite(output):',
                        '    def hook(module, args):\n'
                        '        if not found and module in names and not_finite(args):'),
                       ('module_hooks.register_module_forward_hook(hook)',
                        'module_hooks.register_module_forward_pre_hook(hook)')),
         mistake="07.find_first_nonfinite.inputs-not-outputs",
         expect=["input", "forward hook"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="sequence", why="ignores tuple outputs",
         source=edited(reference("find_first_nonfinite"),
                       ('return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))',
                        'return False')),
         mistake="07.find_first_nonfinite.sequence-items-missed",
         expect=["returns a tuple", "every tensor"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="root-name", why="the root's empty name taken for no answer",
         source=edited(reference("find_first_nonfinite"),
                       ('return found[0] if found else None', 'return found[0] if found and found[0] else None')),
         mistake="07.find_first_nonfinite.root-missed",
         expect=["model itself", "is none"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="hooks-removed", why="global hook never removed",
         source=edited(reference("find_first_nonfinite"),
                       ('    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):',
                        '    module_hooks.register_module_forward_hook(hook)\n    with torch.no_grad():')),
         mistake="07.find_first_nonfinite.global-hooks-left",
         expect=["global hooks were still registered"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="no-grad", why="runs with gradients on",
         source=edited(reference("find_first_nonfinite"),
                       ('    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):',
                        '    with module_hooks.register_module_forward_hook(hook):')),
         mistake="07.find_first_nonfinite.ran-with-grad",
         expect=["gradients on", "torch.no_grad()"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="unregistered", why="looks up modules that are not in the model",
         source=edited(reference("find_first_nonfinite"),
                       ('if not found and module in names and not_finite(output):',
                        'if not found and not_finite(output):')),
         mistake="07.find_first_nonfinite.unregistered-module-looked-up",
         expect=["not in model.named_modules()"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="every-module", why="hooks only the direct children",
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
         mistake="07.find_first_nonfinite.children-only",
         expect=["direct child of the model", "only model.children()", "every module of model.named_modules()"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="every-module",
         why="watches only the model's direct children that have no children of their own (the layers, not the "
             "containers): nothing inside 'body', where the culprit is, is watched",
         source=edited(reference("find_first_nonfinite"),
                       ("names = {module: name for name, module in model.named_modules()}",
                        "names = {module: name for name, module in model.named_children() if not list(module.children())}")),
         mistake="07.find_first_nonfinite.culprit-not-watched",
         expect=["returns after the culprit", "it looks as if the culprit was not watched"]),
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
    # ------------------------------------------------------------------ summarize_model: one entry per clause
    dict(exercise="summarize_model", kind="wrong", clause="pair", why="returns the rows only",
         source=edited(reference("summarize_model"), ('    return output, rows', '    return rows')),
         mistake="07.summarize_model.not-a-pair",
         expect=["expected a pair (output, rows)"]),
    dict(exercise="summarize_model", kind="wrong", clause="output-itself", why="returns the output detached",
         source=edited(reference("summarize_model"), ('    return output, rows', '    return output.detach(), rows')),
         mistake="07.summarize_model.output-copied",
         expect=["not the tensor the model returned", "itself"]),
    dict(exercise="summarize_model", kind="wrong", clause="output-itself", why="returns a copy of the output",
         source=edited(reference("summarize_model"), ('    return output, rows', '    return output.clone(), rows')),
         mistake="07.summarize_model.output-copied",
         expect=["not the tensor the model returned", "a copy"]),
    dict(exercise="summarize_model", kind="wrong", clause="keys", why="the shape under the key 'shape'",
         source=edited(reference("summarize_model"),
                       ('"output_shape": None,', '"shape": None,'),
                       ('open_rows.pop()["output_shape"] = shape_of(output)',
                        'open_rows.pop()["shape"] = shape_of(output)')),
         mistake="07.summarize_model.row-keys-missing",
         expect=["lacks the keys ['output_shape']"]),
    dict(exercise="summarize_model", kind="wrong", clause="name", why="torchinfo-style names, class and counter",
         source=edited(reference("summarize_model"),
                       ('    rows, open_rows = [], []', '    rows, open_rows, seen = [], [], {}'),
                       ('            row = {"name": names[module],',
                        '            seen[type(module).__name__] = seen.get(type(module).__name__, 0) + 1\n'
                        '            row = {"name": f"{type(module).__name__}-{seen[type(module).__name__]}",')),
         mistake="07.summarize_model.names-not-paths",
         expect=["not those of model.named_modules()", "path of attributes"]),
    dict(exercise="summarize_model", kind="wrong", clause="root-name", why="the model itself named '(root)'",
         source=edited(reference("summarize_model"),
                       ('row = {"name": names[module],', 'row = {"name": names[module] or "(root)",')),
         mistake="07.summarize_model.root-misnamed",
         expect=["model itself is named '(root)'", "empty string"]),
    dict(exercise="summarize_model", kind="wrong", clause="shared-name",
         why="names from named_modules(remove_duplicate=False): a shared module gets its last name",
         source=edited(reference("summarize_model"),
                       ('names = {module: name for name, module in model.named_modules()}',
                        'names = {module: name for name, module in model.named_modules(remove_duplicate=False)}')),
         mistake="07.summarize_model.alias-name",
         expect=["'alias' is not a name of named_modules()", "under its first name", "'shared'"]),
    dict(exercise="summarize_model", kind="wrong", clause="shared-name",
         why="per-module hooks on named_modules(remove_duplicate=False): two hooks on a shared module",
         source='''
import torch


def summarize_model(model, *inputs, **kwargs):
    rows, stack, handles = [], [], []

    def make_hooks(name):
        def starts(module, args):
            stack.append(len(rows))
            rows.append({"name": name, "type": type(module).__name__, "output_shape": None,
                         "params": sum(p.numel() for p in module.parameters(recurse=False))})

        def finishes(module, args, output):
            if isinstance(output, torch.Tensor):
                shape = tuple(output.shape)
            elif isinstance(output, (tuple, list)):
                shape = [tuple(o.shape) if isinstance(o, torch.Tensor) else None for o in output]
            else:
                shape = None
            rows[stack.pop()]["output_shape"] = shape
        return starts, finishes

    try:
        for name, module in model.named_modules(remove_duplicate=False):
            starts, finishes = make_hooks(name)
            handles.append(module.register_forward_pre_hook(starts))
            handles.append(module.register_forward_hook(finishes))
        output = model(*inputs, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return output, rows
''',
         mistake="07.summarize_model.alias-name",
         expect=["'alias' is not a name of named_modules()", "one row per call"]),
    dict(exercise="summarize_model", kind="wrong", clause="type", why="type as __qualname__",
         source=edited(reference("summarize_model"),
                       ('"type": type(module).__name__', '"type": type(module).__qualname__')),
         mistake="07.summarize_model.qualname-as-type",
         expect=["__qualname__", "type(module).__name__"]),
    dict(exercise="summarize_model", kind="wrong", clause="type", why="type as str(type(module))",
         source=edited(reference("summarize_model"), ('"type": type(module).__name__', '"type": str(type(module))')),
         mistake="07.summarize_model.wrong-type",
         expect=["its 'type' should be", "type(module).__name__"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-tensor", why="a tensor's shape as a list",
         source=edited(reference("summarize_model"),
                       ('            return tuple(value.shape)\n', '            return list(value.shape)\n')),
         mistake="07.summarize_model.shape-not-a-tuple",
         expect=["as a tuple, tuple(output.shape)"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-sequence", why="tuple outputs only, lists get None",
         source=edited(reference("summarize_model"),
                       ('if isinstance(value, (tuple, list)):', 'if isinstance(value, tuple):')),
         mistake="07.summarize_model.sequence-shapes-wrong",
         expect=["returned a list", "list with the shape tuple"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-sequence", why="item shapes as lists",
         source=edited(reference("summarize_model"), ('return [tuple(item.shape) if', 'return [list(item.shape) if')),
         mistake="07.summarize_model.item-shapes-not-a-list",
         expect=["the numbers are right", "as a tuple"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-sequence", why="a tuple output's shapes in a tuple",
         source=edited(reference("summarize_model"),
                       ('return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]',
                        'return tuple(tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value)')),
         mistake="07.summarize_model.item-shapes-not-a-list",
         expect=["the numbers are right", "give a list"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-sequence", why="non-tensor items dropped",
         source=edited(reference("summarize_model"),
                       ('return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]',
                        'return [tuple(item.shape) for item in value if isinstance(item, torch.Tensor)]')),
         mistake="07.summarize_model.sequence-shapes-wrong",
         expect=["returned a tuple", "none for each other item"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-other",
         why="a dict output gets the shapes of its values",
         source=edited(reference("summarize_model"),
                       ('        return None\n\n    def starts',
                        '        if isinstance(value, dict):\n'
                        '            return [tuple(v.shape) for v in value.values()]\n'
                        '        return None\n'
                        '\n'
                        '    def starts')),
         mistake="07.summarize_model.other-output-shaped",
         expect=["returned a dict", "output_shape is none"]),
    dict(exercise="summarize_model", kind="wrong", clause="params-no-buffers", why="counts buffers too",
         source=edited(reference("summarize_model"),
                       ('"params": sum(p.numel() for p in module.parameters(recurse=False))}',
                        '"params": sum(p.numel() for p in module.parameters(recurse=False))\n'
                        '                   + sum(b.numel() for b in module.buffers(recurse=False))}')),
         mistake="07.summarize_model.params-with-buffers",
         expect=["counts its buffers too"]),
    dict(exercise="summarize_model", kind="wrong", clause="params-shared",
         why="counts through model.named_parameters(), which lists a tied weight once",
         source=edited(reference("summarize_model"),
                       ('    rows, open_rows = [], []',
                        '    rows, open_rows = [], []\n'
                        '    owned = {}\n'
                        '    for full_name, p in model.named_parameters():\n'
                        '        owner = full_name.rpartition(".")[0]\n'
                        '        owned[owner] = owned.get(owner, 0) + p.numel()'),
                       ('"params": sum(p.numel() for p in module.parameters(recurse=False))}',
                        '"params": owned.get(names[module], 0)}')),
         mistake="07.summarize_model.params-deduplicated",
         expect=["shares a parameter", "own parameter of both"]),
    dict(exercise="summarize_model", kind="wrong", clause="params-own",
         why="_parameters values without the None of bias=False",
         source=edited(reference("summarize_model"),
                       ('sum(p.numel() for p in module.parameters(recurse=False))',
                        'sum(p.numel() for p in module._parameters.values())')),
         mistake="07.summarize_model.none-parameter-counted",
         expect=["'nonetype' object has no attribute 'numel'"]),
    dict(exercise="summarize_model", kind="wrong", clause="unregistered",
         why="unregistered modules get a row under their class name",
         source=edited(reference("summarize_model"),
                       ('    def starts(module, args):\n'
                        '        if module in names:\n'
                        '            row = {"name": names[module],',
                        '    def starts(module, args):\n'
                        '        if True:\n'
                        '            row = {"name": names.get(module, type(module).__name__),'),
                       ('    def finishes(module, args, output):\n        if module in names:',
                        '    def finishes(module, args, output):\n        if True:')),
         mistake="07.summarize_model.unregistered-module-rows",
         expect=["not in model.named_modules()", "give them no row"]),
    dict(exercise="summarize_model", kind="right", why="per-module hooks on each module of named_modules(), torch.Size, an index stack",
         source='''
import torch


def summarize_model(model, *inputs, **kwargs):
    names = {}
    for name, module in model.named_modules():
        names.setdefault(module, name)
    rows, stack, handles = [], [], []

    def pre(module, args):
        stack.append(len(rows))
        rows.append({"name": names[module], "type": type(module).__name__, "output_shape": None,
                     "params": sum(p.numel() for p in module.parameters(recurse=False))})

    def post(module, args, output):
        i = stack.pop()
        if torch.is_tensor(output):
            rows[i]["output_shape"] = output.size()
        elif isinstance(output, (tuple, list)):
            rows[i]["output_shape"] = [tuple(o.size()) if torch.is_tensor(o) else None for o in output]

    def attach(module):
        if module in names:
            handles.append(module.register_forward_pre_hook(pre))
            handles.append(module.register_forward_hook(post))

    for module in names:
        attach(module)
    try:
        return model(*inputs, **kwargs), rows
    finally:
        for h in handles:
            h.remove()
''',
         expect=[]),
    dict(exercise="summarize_model", kind="wrong", clause="row-per-call",
         why="per-module hooks attached with model.apply(), which reaches a module in two containers twice",
         source='''
import torch


def summarize_model(model, *inputs, **kwargs):
    names = {}
    for name, module in model.named_modules():
        names.setdefault(module, name)
    rows, stack, handles = [], [], []

    def pre(module, args):
        stack.append(len(rows))
        rows.append({"name": names[module], "type": type(module).__name__, "output_shape": None,
                     "params": sum(p.numel() for p in module.parameters(recurse=False))})

    def post(module, args, output):
        i = stack.pop()
        if torch.is_tensor(output):
            rows[i]["output_shape"] = output.size()
        elif isinstance(output, (tuple, list)):
            rows[i]["output_shape"] = [tuple(o.size()) if torch.is_tensor(o) else None for o in output]

    def attach(module):
        if module in names:
            handles.append(module.register_forward_pre_hook(pre))
            handles.append(module.register_forward_hook(post))

    model.apply(attach)
    try:
        return model(*inputs, **kwargs), rows
    finally:
        for h in handles:
            h.remove()
''',
         mistake="07.summarize_model.hooked-per-container",
         expect=["got two rows", "model.apply()", "hook each module of model.named_modules() once"]),

    # ------------------------------------------------------------------ find_first_nonfinite: one entry per clause
    dict(exercise="find_first_nonfinite", kind="wrong", clause="every-module",
         why="hooks only the layers without children, and the model",
         source=edited(reference("find_first_nonfinite"),
                       ('    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):',
                        '    leaves = {m for m in names if not list(m.children())} | {model}\n'
                        '    names = {m: n for m, n in names.items() if m in leaves}\n'
                        '    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):')),
         mistake="07.find_first_nonfinite.leaves-only",
         expect=["a container whose own forward made the nan", "not only the layers without children"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="unregistered",
         why="unregistered modules looked up with names.get",
         source=edited(reference("find_first_nonfinite"),
                       ('if not found and module in names and not_finite(output):',
                        'if not found and not_finite(output):'),
                       ('found.append(names[module])', 'found.append(names.get(module))')),
         mistake="07.find_first_nonfinite.stops-at-unregistered-module",
         expect=["plain list", "ignore that module"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="shared-name",
         why="names from named_modules(remove_duplicate=False): a shared module gets its last name",
         source=edited(reference("find_first_nonfinite"),
                       ('names = {module: name for name, module in model.named_modules()}',
                        'names = {module: name for name, module in model.named_modules(remove_duplicate=False)}')),
         mistake="07.find_first_nonfinite.alias-name",
         expect=["registered a second time under another name", "under its first name"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="return-order",
         why="a dict keyed by name: a module called twice is judged by its last call",
         source='''
import torch
import torch.nn.modules.module as module_hooks


def find_first_nonfinite(model, *inputs):
    names = {module: name for name, module in model.named_modules()}
    verdict = {}

    def hook(module, args, output):
        if module in names:
            items = output if isinstance(output, (tuple, list)) else [output]
            verdict[names[module]] = any(isinstance(t, torch.Tensor) and not torch.isfinite(t).all() for t in items)

    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):
        model(*inputs)
    return next((name for name, bad in verdict.items() if bad), None)
''',
         mistake="07.find_first_nonfinite.judged-by-name",
         expect=["is called twice", "judge each call when it returns"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="return-order",
         why="the first call to start whose output is bad",
         source='''
import torch
import torch.nn.modules.module as module_hooks


def find_first_nonfinite(model, *inputs):
    names = {module: name for name, module in model.named_modules()}
    started, bad = [], set()

    def pre(module, args):
        if module in names:
            started.append(module)

    def post(module, args, output):
        items = output if isinstance(output, (tuple, list)) else [output]
        if module in names and any(isinstance(t, torch.Tensor) and not torch.isfinite(t).all() for t in items):
            bad.add(module)

    with torch.no_grad(), module_hooks.register_module_forward_pre_hook(pre), \\
            module_hooks.register_module_forward_hook(post):
        model(*inputs)
    return next((names[module] for module in started if module in bad), None)
''',
         mistake="07.find_first_nonfinite.last-not-first",
         expect=["not the order the calls start", "the order the forward hooks fire"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="infinities", why="tests NaN and +inf, not -inf",
         source=edited(reference("find_first_nonfinite"),
                       ('return not torch.isfinite(value).all()',
                        'return bool(torch.isnan(value).any() or (value == float("inf")).any())')),
         mistake="07.find_first_nonfinite.minus-inf-missed",
         expect=["holds -inf", "both infinities"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="sequence", why="tuple outputs only, lists ignored",
         source=edited(reference("find_first_nonfinite"),
                       ('if isinstance(value, (tuple, list)):', 'if isinstance(value, tuple):')),
         mistake="07.find_first_nonfinite.sequence-items-missed",
         expect=["the culprit returns a list", "tuple or list output"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="none", why="returns '' when every output is finite",
         source=edited(reference("find_first_nonfinite"),
                       ('return found[0] if found else None', 'return found[0] if found else ""')),
         mistake="07.find_first_nonfinite.root-for-none",
         expect=["return none, not ''"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="hooks-removed-raise",
         why="hook removed only when forward succeeds",
         source=edited(reference("find_first_nonfinite"),
                       ('    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):\n'
                        '        model(*inputs)\n',
                        '    handle = module_hooks.register_module_forward_hook(hook)\n'
                        '    with torch.no_grad():\n'
                        '        model(*inputs)\n'
                        '    handle.remove()\n')),
         mistake="07.find_first_nonfinite.global-hooks-left-on-error",
         expect=["raised, global hooks were still registered", "try/finally"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="exception-unchanged",
         why="swallows the model's exception",
         source=edited(reference("find_first_nonfinite"),
                       ('        model(*inputs)\n',
                        '        try:\n            model(*inputs)\n        except Exception:\n            pass\n')),
         mistake="07.find_first_nonfinite.swallowed-exception",
         expect=["returned normally", "reach the caller unchanged"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="exception-unchanged",
         why="turns the model's exception into its own",
         source=edited(reference("find_first_nonfinite"),
                       ('        model(*inputs)\n',
                        '        try:\n'
                        '            model(*inputs)\n'
                        '        except Exception as error:\n'
                        '            raise RuntimeError("the model failed") from error\n')),
         mistake="07.find_first_nonfinite.exception-replaced",
         expect=["made from the model's valueerror"]),
    # ------------------------------------------------------------------ more mistakes a stranger makes
    dict(exercise="summarize_model", kind="wrong", clause="arguments", why="passes only the first input",
         source=edited(reference("summarize_model"),
                       ('output = model(*inputs, **kwargs)', 'output = model(inputs[0], **kwargs)')),
         mistake="07.summarize_model.positional-inputs-dropped",
         expect=["every positional input", "not only the first"]),
    dict(exercise="summarize_model", kind="wrong", clause="arguments", why="calls model.forward, skipping its hooks",
         source=edited(reference("summarize_model"),
                       ('output = model(*inputs, **kwargs)', 'output = model.forward(*inputs, **kwargs)')),
         mistake="07.summarize_model.model-forward-called",
         expect=["hooks never fired", "model.forward(...)"]),
    dict(exercise="summarize_model", kind="wrong", clause="every-call", why="rows for the layers without children only",
         source=edited(reference("summarize_model"),
                       ('    def starts(module, args):\n        if module in names:',
                        '    def starts(module, args):\n        if module in names and not list(module.children()):'),
                       ('    def finishes(module, args, output):\n        if module in names:',
                        '    def finishes(module, args, output):\n'
                        '        if module in names and not list(module.children()):')),
         mistake="07.summarize_model.containers-missing",
         expect=["layers without children only", "containers"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-tensor",
         why="the output shape written to the last row made, not the call's own",
         source=edited(reference("summarize_model"),
                       ('open_rows.pop()["output_shape"] = shape_of(output)',
                        'rows[-1]["output_shape"] = shape_of(output)')),
         mistake="07.summarize_model.another-calls-shape",
         expect=["output shape of another call", "most recently started call that has not finished"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="every-module",
         why="calls model.forward, so the model's own hook never fires",
         source=edited(reference("find_first_nonfinite"),
                       ('        model(*inputs)\n', '        model.forward(*inputs)\n')),
         mistake="07.find_first_nonfinite.model-forward-called",
         expect=["hooks never fired", "model.forward(...)"]),
    dict(exercise="summarize_model", kind="wrong", clause="keys", why="params as a tensor, torchsummary style",
         source=edited(reference("summarize_model"),
                       ('"params": sum(p.numel() for p in module.parameters(recurse=False))}',
                        '"params": sum(torch.prod(torch.LongTensor(list(p.size())))\n'
                        '                              for p in module.parameters(recurse=False))}')),
         mistake="07.summarize_model.params-not-an-int",
         expect=["should be an int", "p.numel()"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="arguments", why="passes only the first input",
         source=edited(reference("find_first_nonfinite"), ('        model(*inputs)\n', '        model(inputs[0])\n')),
         mistake="07.find_first_nonfinite.positional-inputs-dropped",
         expect=["every positional input", "not only the first"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="sequence",
         why="looks only at the first item of a tuple or list",
         source=edited(reference("find_first_nonfinite"),
                       ('return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))',
                        'return bool(value) and not_finite(value[0])')),
         mistake="07.find_first_nonfinite.sequence-items-missed",
         expect=["returns a tuple", "every tensor"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="every-module",
         why="watches only Linear, Conv and norm layers",
         source=edited(reference("find_first_nonfinite"),
                       ('if not found and module in names and not_finite(output):',
                        'if not found and module in names and isinstance(module, (torch.nn.Linear, torch.nn.Conv2d,\n'
                        '                torch.nn.LayerNorm, torch.nn.BatchNorm1d)) and not_finite(output):')),
         mistake="07.find_first_nonfinite.every-element-required",
         expect=["the culprit 'body.1' is a log", "every module counts, whatever its class"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="name", why="returns the module, not its name",
         source=edited(reference("find_first_nonfinite"), ('found.append(names[module])', 'found.append(module)')),
         mistake="07.find_first_nonfinite.returned-module",
         expect=["that is the module itself", "return its name"]),
    dict(exercise="find_first_nonfinite", kind="right", why="inference_mode, isinf | isnan, a flag for the root",
         source='''
import torch
from torch.nn.modules.module import register_module_forward_hook


def find_first_nonfinite(model, *inputs):
    names = dict((m, n) for n, m in model.named_modules())
    state = {"done": False, "name": None}

    def bad(t):
        return isinstance(t, torch.Tensor) and bool((t.isinf() | t.isnan()).any())

    def hook(module, args, output):
        if state["done"] or module not in names:
            return
        items = list(output) if isinstance(output, (tuple, list)) else [output]
        if any(bad(t) for t in items):
            state.update(done=True, name=names[module])

    handle = register_module_forward_hook(hook)
    try:
        with torch.inference_mode():
            model(*inputs)
    finally:
        handle.remove()
    return state["name"] if state["done"] else None
''',
         expect=[]),
    # ---- found in review: global state (grad mode, train mode, a list kept between calls), exact keys and
    # nested items, outputs that count as finite, inputs, dtypes, empty tensors, a non-str answer
    dict(exercise="summarize_model", kind="wrong", clause="grad-mode", why="runs the model under no_grad",
         source=edited(reference("summarize_model"),
                       ('        output = model(*inputs, **kwargs)',
                        '        with torch.no_grad():\n            output = model(*inputs, **kwargs)')),
         mistake="07.summarize_model.ran-without-grad",
         expect=["gradients off", "no graph", "caller's grad mode"]),
    dict(exercise="summarize_model", kind="wrong", clause="modes-kept", why="grad mode turned off and left off",
         source=edited(reference("summarize_model"),
                       ('        output = model(*inputs, **kwargs)',
                        '        output = model(*inputs, **kwargs)\n    torch.set_grad_enabled(False)')),
         mistake="07.summarize_model.grad-mode-left-off",
         expect=["gradients were off", "leave the grad mode alone"]),
    dict(exercise="summarize_model", kind="wrong", clause="model-mode", why="runs the model in eval mode, then back",
         source=edited(reference("summarize_model"),
                       ('        output = model(*inputs, **kwargs)',
                        '        was_training = model.training\n'
                        '        model.eval()\n'
                        '        output = model(*inputs, **kwargs)\n'
                        '        model.train(was_training)')),
         mistake="07.summarize_model.ran-in-eval-mode",
         expect=["ran the model in eval mode", "the mode the caller has it"]),
    dict(exercise="summarize_model", kind="wrong", clause="modes-kept", why="model.eval() left behind",
         source=edited(reference("summarize_model"),
                       ('        output = model(*inputs, **kwargs)',
                        '        model.eval()\n        output = model(*inputs, **kwargs)')),
         mistake="07.summarize_model.model-mode-changed",
         expect=["eval mode", "left the model's mode changed"]),
    dict(exercise="summarize_model", kind="wrong", clause="keys-only", why="an extra 'depth' key, torchinfo style",
         source=edited(reference("summarize_model"),
                       ('"output_shape": None,', '"output_shape": None, "depth": len(open_rows),')),
         mistake="07.summarize_model.row-keys-extra",
         expect=["extra keys ['depth']", "exactly the four keys"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-nested", why="shapes looked up inside nested tuples",
         source=edited(reference("summarize_model"),
                       ('            return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]',
                        '            return [shape_of(item) for item in value]')),
         mistake="07.summarize_model.nested-tuple-shaped",
         expect=["a tuple inside the tuple", "its entry is none"]),
    dict(exercise="summarize_model", kind="wrong", clause="every-call", why="a list of rows made outside the function",
         source=edited(reference("summarize_model"),
                       ('    rows, open_rows = [], []\n', '    open_rows = []\n'),
                       ('def summarize_model(model, *inputs, **kwargs):',
                        'rows = []\n\n\ndef summarize_model(model, *inputs, **kwargs):')),
         mistake="07.summarize_model.rows-kept-between-calls",
         expect=["left from an earlier call", "new list of rows inside the function"]),
    dict(exercise="summarize_model", kind="wrong", clause="params-shared", why="a parameter counted in one row only",
         source=edited(reference("summarize_model"),
                       ('    rows, open_rows = [], []\n', '    rows, open_rows, counted = [], [], set()\n'),
                       ('"params": sum(p.numel() for p in module.parameters(recurse=False))}',
                        '"params": sum(p.numel() for p in module.parameters(recurse=False)\n'
                        '                              if p not in counted and not counted.add(p))}')),
         mistake="07.summarize_model.params-not-recounted",
         expect=["an earlier row already counted", "every row counts all"]),
    dict(exercise="summarize_model", kind="right", why="open rows keyed by module, params counted when the call ends",
         source=edited(reference("summarize_model"),
                       ('    rows, open_rows = [], []\n', '    rows, open_rows = [], {}\n'),
                       ('"params": sum(p.numel() for p in module.parameters(recurse=False))}', '"params": 0}'),
                       ('            open_rows.append(row)', '            open_rows.setdefault(module, []).append(row)'),
                       ('            open_rows.pop()["output_shape"] = shape_of(output)',
                        '            row = open_rows[module].pop()\n'
                        '            row["output_shape"] = shape_of(output)\n'
                        '            row["params"] = sum(p.numel() for p in module.parameters(recurse=False))')),
         expect=[]),
    dict(exercise="summarize_model", kind="wrong", clause="params-own",
         why="counts weight and bias only, torchsummary style",
         source=edited(reference("summarize_model"),
                       ('"params": sum(p.numel() for p in module.parameters(recurse=False))}',
                        '"params": sum(t.numel() for t in (getattr(module, "weight", None),\n'
                        '                                                getattr(module, "bias", None))\n'
                        '                              if isinstance(t, torch.nn.Parameter))}')),
         mistake="07.summarize_model.params-weight-and-bias-only",
         expect=["named weight and bias", "module.parameters(recurse=false)"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-tensor", why="the batch dimension shown as -1",
         source=edited(reference("summarize_model"),
                       ('            return tuple(value.shape)', '            return (-1,) + tuple(value.shape)[1:]')),
         mistake="07.summarize_model.batch-as-minus-one",
         expect=["batch size", "not -1"]),
    dict(exercise="summarize_model", kind="right", why="the type parsed from str(module.__class__), torchsummary style",
         source=edited(reference("summarize_model"),
                       ('"type": type(module).__name__,',
                        '"type": str(module.__class__).split(".")[-1].split("\'")[0],')),
         expect=[]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="model-mode", why="runs the model in eval mode, then back",
         source=edited(reference("find_first_nonfinite"),
                       ('        model(*inputs)',
                        '        was_training = model.training\n'
                        '        model.eval()\n'
                        '        model(*inputs)\n'
                        '        model.train(was_training)')),
         mistake="07.find_first_nonfinite.ran-in-eval-mode",
         expect=["ran the model in eval mode", "leaves the mode alone"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="modes-kept",
         why="torch.set_grad_enabled(False) instead of a no_grad block",
         source=edited(reference("find_first_nonfinite"),
                       ('    with torch.no_grad(), module_hooks.register_module_forward_hook(hook):',
                        '    torch.set_grad_enabled(False)\n'
                        '    with module_hooks.register_module_forward_hook(hook):')),
         mistake="07.find_first_nonfinite.grad-mode-left-off",
         expect=["gradients were off", "with torch.no_grad():"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="modes-kept", why="model.eval() left behind",
         source=edited(reference("find_first_nonfinite"),
                       ('        model(*inputs)', '        model.eval()\n        model(*inputs)')),
         mistake="07.find_first_nonfinite.model-mode-changed",
         expect=["eval mode", "left the model's mode changed"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="other-finite", why="looks inside dicts and nested tuples",
         source=edited(reference("find_first_nonfinite"),
                       ('        if isinstance(value, (tuple, list)):\n'
                        '            return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))',
                        '        if isinstance(value, dict):\n'
                        '            return not_finite(list(value.values()))\n'
                        '        if isinstance(value, (tuple, list)):\n'
                        '            return any(not_finite(item) for item in value)')),
         mistake="07.find_first_nonfinite.nested-output-counted",
         expect=["returned a dict", "counts as finite"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="other-finite", why="looks inside nested tuples",
         source=edited(reference("find_first_nonfinite"),
                       ('            return any(not_finite(item) for item in value if isinstance(item, torch.Tensor))',
                        '            return any(not_finite(item) for item in value)')),
         mistake="07.find_first_nonfinite.nested-output-counted",
         expect=["returned a tuple", "a tuple inside a tuple, counts as finite"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="output", why="flags a module whose input is not finite",
         source=edited(reference("find_first_nonfinite"),
                       ('        if not found and module in names and not_finite(output):',
                        '        if not found and module in names and (not_finite(args) or not_finite(output)):')),
         mistake="07.find_first_nonfinite.input-counted",
         expect=["input itself holds inf", "only outputs count"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="any-element",
         why="tests the largest absolute value, which an empty tensor has not",
         source=edited(reference("find_first_nonfinite"),
                       ('            return not torch.isfinite(value).all()',
                        '            return not torch.isfinite(value.abs().max())')),
         mistake="07.find_first_nonfinite.empty-tensor-raised",
         expect=["empty tensor", "counts as finite"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="any-element", why="converts outputs to float32 first",
         source=edited(reference("find_first_nonfinite"),
                       ('            return not torch.isfinite(value).all()',
                        '            return not torch.isfinite(value.float()).all()')),
         mistake="07.find_first_nonfinite.float32-overflow",
         expect=["float64 and finite", "own dtype"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="return-order",
         why="the answer kept in a list made outside the function",
         source=edited(reference("find_first_nonfinite"),
                       ('    found = []\n', ''),
                       ('def find_first_nonfinite(model, *inputs):',
                        'found = []\n\n\ndef find_first_nonfinite(model, *inputs):')),
         mistake="07.find_first_nonfinite.answer-kept-between-calls",
         expect=["an earlier call", "outlives the call"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="name", why="returns a list of the names found",
         source=edited(reference("find_first_nonfinite"),
                       ('    return found[0] if found else None', '    return found[:1] or None')),
         mistake="07.find_first_nonfinite.not-a-name",
         expect=["a str", "or none"]),
    dict(exercise="summarize_model", kind="wrong", clause="shape-namedtuple", why="tests type(output) in (tuple, list)",
         source=edited(reference("summarize_model"),
                       ('        if isinstance(value, (tuple, list)):', '        if type(value) in (tuple, list):')),
         mistake="07.summarize_model.named-tuple-missed",
         expect=["torch.return_types.max, a named tuple", "isinstance(output, (tuple, list))"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="namedtuple", why="tests type(output) in (tuple, list)",
         source=edited(reference("find_first_nonfinite"),
                       ('        if isinstance(value, (tuple, list)):', '        if type(value) in (tuple, list):')),
         mistake="07.find_first_nonfinite.named-tuple-missed",
         expect=["torch.return_types.sort, a named tuple", "isinstance(output, (tuple, list))"]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="exception-unchanged",
         why="stops the pass with a RuntimeError of its own and catches every RuntimeError",
         source='''
import torch
import torch.nn.modules.module as module_hooks


def find_first_nonfinite(model, *inputs):
    names = {m: n for n, m in model.named_modules()}

    def bad(output):
        items = output if isinstance(output, (tuple, list)) else [output]
        return any(torch.is_tensor(t) and not torch.isfinite(t).all() for t in items)

    def hook(module, args, output):
        if module in names and bad(output):
            raise RuntimeError(names[module])  # stop at the first one

    try:
        with torch.no_grad(), module_hooks.register_module_forward_hook(hook):
            model(*inputs)
    except RuntimeError as stop:
        return stop.args[0]
    return None
''',
         mistake="07.find_first_nonfinite.swallowed-exception",
         expect=["runtimeerror must reach the caller unchanged", "a class of your own"]),
    dict(exercise="find_first_nonfinite", kind="right", why="stops the pass with StopIteration, a class torch does not raise",
         source='''
import torch
import torch.nn.modules.module as module_hooks


def find_first_nonfinite(model, *inputs):
    names = {m: n for n, m in model.named_modules()}

    def bad(output):
        items = output if isinstance(output, (tuple, list)) else [output]
        return any(torch.is_tensor(t) and not torch.isfinite(t).all() for t in items)

    def hook(module, args, output):
        if module in names and bad(output):
            raise StopIteration(names[module])

    try:
        with torch.no_grad(), module_hooks.register_module_forward_hook(hook):
            model(*inputs)
    except StopIteration as stop:
        return stop.args[0]
    return None
''',
         expect=[]),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="any-element",
         why="skips tensors of fewer than 2 elements, as fairseq's NanDetector does",
         source=edited(reference("find_first_nonfinite"),
                       ('            return not torch.isfinite(value).all()',
                        '            return value.numel() >= 2 and not torch.isfinite(value).all()')),
         mistake="07.find_first_nonfinite.single-element-ignored",
         expect=["a single element", "whatever its size"]),
    dict(exercise="summarize_model", kind="right", why="rows made when calls finish, sorted by their start index",
         source='''
import itertools
import torch
from torch.nn.modules import module as M

def summarize_model(model, *inputs, **kwargs):
    names = {}
    for n, m in model.named_modules():
        names.setdefault(m, n)
    counter = itertools.count()
    started, done = [], []
    def pre(m, a):
        if m in names:
            started.append(next(counter))
    def post(m, a, o):
        if m in names:
            i = started.pop()
            if isinstance(o, torch.Tensor):
                shape = tuple(o.shape)
            elif isinstance(o, (tuple, list)):
                shape = [tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in o]
            else:
                shape = None
            done.append((i, {"name": names[m], "type": type(m).__name__, "output_shape": shape,
                             "params": sum(p.numel() for p in m.parameters(recurse=False))}))
    handles = [M.register_module_forward_pre_hook(pre), M.register_module_forward_hook(post)]
    try:
        out = model(*inputs, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return out, [row for _, row in sorted(done, key=lambda pair: pair[0])]
''',
         expect=[]),
    dict(exercise="find_first_nonfinite", kind="right", why="every call logged, numpy's isfinite",
         source='''
import numpy as np
import torch

def find_first_nonfinite(model, *inputs):
    log = []
    handles = []
    def make(name):
        def hook(m, a, o):
            ts = [o] if torch.is_tensor(o) else [t for t in o if torch.is_tensor(t)] if isinstance(o, (tuple, list)) else []
            log.append((name, any(not np.isfinite(t.detach().cpu().numpy()).all() for t in ts)))
        return hook
    for name, m in model.named_modules():
        handles.append(m.register_forward_hook(make(name)))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    for name, bad in log:
        if bad:
            return name
    return None
''',
         expect=[]),
    dict(exercise="summarize_model", kind="wrong", clause="shared-name",
         why="its own walk over named_children(), which reaches a module in two containers twice",
         source='''
import torch

def summarize_model(model, *inputs, **kwargs):
    rows, stack, handles = [], [], []
    def attach(module, name):
        def pre(m, a):
            r = {"name": name, "type": type(m).__name__, "output_shape": None,
                 "params": sum(p.numel() for p in m.parameters(recurse=False))}
            rows.append(r); stack.append(r)
        def post(m, a, o):
            r = stack.pop()
            if torch.is_tensor(o):
                r["output_shape"] = tuple(o.shape)
            elif isinstance(o, (tuple, list)):
                r["output_shape"] = [tuple(t.shape) if torch.is_tensor(t) else None for t in o]
        handles.append(module.register_forward_pre_hook(pre))
        handles.append(module.register_forward_hook(post))
        for child_name, child in module.named_children():
            attach(child, f"{name}.{child_name}" if name else child_name)
    attach(model, "")
    try:
        out = model(*inputs, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return out, rows
''',
         mistake="07.summarize_model.alias-name",
         expect=["'body.0.1' is not a name of named_modules()", "a walk over named_children()"]),
    dict(exercise="find_first_nonfinite", kind="right", why="per-module hooks, nan_to_num compared, try/finally",
         source='''
import torch


def find_first_nonfinite(model, *inputs):
    found, handles = [], []

    def nonfinite(t):
        # nan_to_num changes exactly the NaN and infinite elements
        return torch.is_tensor(t) and not torch.equal(torch.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0), t)

    try:
        for name, module in model.named_modules():
            def hook(mod, args, output, name=name):
                items = output if isinstance(output, (tuple, list)) else [output]
                if not found and any(nonfinite(t) for t in items):
                    found.append(name)
            handles.append(module.register_forward_hook(hook))
        with torch.no_grad():
            model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return found[0] if found else None
''',
         expect=[]),
]

# Entries for the named mistakes no entry above produced.
_PER_MODULE_SUMMARY = '''
import torch


def summarize_model(model, *inputs, **kwargs):
    rows, stack, handles = [], [], []

    def make_hooks(name):
        def starts(module, args):
            stack.append(len(rows))
            rows.append({"name": name, "type": type(module).__name__, "output_shape": None,
                         "params": sum(p.numel() for p in module.parameters(recurse=False))})

        def finishes(module, args, output):
            if isinstance(output, torch.Tensor):
                shape = tuple(output.shape)
            elif isinstance(output, (tuple, list)):
                shape = [tuple(o.shape) if isinstance(o, torch.Tensor) else None for o in output]
            else:
                shape = None
            rows[stack.pop()]["output_shape"] = shape
        return starts, finishes

    for name, module in model.named_modules():
        starts, finishes = make_hooks(name)
        handles.append(module.register_forward_pre_hook(starts))
        handles.append(module.register_forward_hook(finishes))
    output = model(*inputs, **kwargs)
    for handle in handles:
        handle.remove()
    return output, rows
'''
_PER_MODULE_NONFINITE = '''
import torch


def find_first_nonfinite(model, *inputs):
    found, handles = [], []

    def bad(value):
        items = [value] if isinstance(value, torch.Tensor) else list(value) if isinstance(value, (tuple, list)) else []
        return any(isinstance(t, torch.Tensor) and not torch.isfinite(t).all() for t in items)

    for name, module in model.named_modules():
        def hook(module, args, output, name=name):
            if not found and bad(output):
                found.append(name)
        handles.append(module.register_forward_hook(hook))
    with torch.no_grad():
        model(*inputs)
    for handle in handles:
        handle.remove()
    return found[0] if found else None
'''
ENTRIES += [
    dict(exercise="summarize_model", kind="wrong", clause="hooks-removed-raise",
         why="per-module hooks removed only when forward succeeds", source=_PER_MODULE_SUMMARY,
         expect=["raised, hooks were still registered on the modules"],
         mistake="07.summarize_model.module-hooks-left-on-error"),
    dict(exercise="summarize_model", kind="wrong", clause="name", why="the name as a list of its path's parts",
         source=edited(reference("summarize_model"), ('row = {"name": names[module],',
                                                      'row = {"name": names[module].split("."),')),
         expect=["its 'name' should be a str"], mistake="07.summarize_model.name-not-a-str"),
    dict(exercise="summarize_model", kind="wrong", clause="row-per-call",
         why="a row per module, made up front in named_modules() order",
         source=edited(reference("summarize_model"),
                       ('rows, open_rows = [], []', 'rows, open_rows = {name: None for name in names.values()}, []'),
                       ('rows.append(row)\n            open_rows', 'rows[row["name"]] = row\n            open_rows'),
                       ('return output, rows', 'return output, [row for row in rows.values() if row]')),
         expect=["named_modules() order, one row per module"], mistake="07.summarize_model.named-modules-order"),
    dict(exercise="summarize_model", kind="wrong", clause="keys", why="rows as tuples of the values, a table's rows",
         source=edited(reference("summarize_model"),
                       ('return output, rows', 'return output, [tuple(row.values()) for row in rows]')),
         expect=["expected a list of dicts"], mistake="07.summarize_model.rows-not-dicts"),
    dict(exercise="summarize_model", kind="wrong", clause="start-order", why="rows sorted by name",
         source=edited(reference("summarize_model"),
                       ('return output, rows', 'return output, sorted(rows, key=lambda row: row["name"])')),
         expect=["in the order the calls start"], mistake="07.summarize_model.rows-out-of-order"),
    dict(exercise="summarize_model", kind="wrong", clause="every-call", why="rows only for modules with parameters",
         source=edited(reference("summarize_model"),
                       ('    def starts(module, args):\n        if module in names:',
                        '    def starts(module, args):\n'
                        '        if module in names and list(module.parameters(recurse=False)):'),
                       ('    def finishes(module, args, output):\n        if module in names:',
                        '    def finishes(module, args, output):\n'
                        '        if module in names and list(module.parameters(recurse=False)):')),
         expect=["one per call in the order the calls start"], mistake="07.summarize_model.wrong-names"),
    dict(exercise="summarize_model", kind="wrong", clause="pair", why="output and rows swapped",
         source=edited(reference("summarize_model"), ('return output, rows', 'return rows, output')),
         expect=["as the output; the model returns"], mistake="07.summarize_model.wrong-output"),
    dict(exercise="summarize_model", kind="wrong", clause="shape-tensor", why="shapes without the batch dimension",
         source=edited(reference("summarize_model"),
                       ('            return tuple(value.shape)\n', '            return tuple(value.shape[1:])\n')),
         expect=["its 'output_shape' should be"], mistake="07.summarize_model.wrong-output-shape"),
    dict(exercise="summarize_model", kind="wrong", clause="params-own", why="params in bytes, 4 per float32 element",
         source=edited(reference("summarize_model"),
                       ('sum(p.numel() for p in module.parameters(recurse=False))',
                        '4 * sum(p.numel() for p in module.parameters(recurse=False))')),
         expect=["its 'params' should be"], mistake="07.summarize_model.wrong-params"),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="hooks-removed", why="per-module hooks never removed",
         source=_PER_MODULE_NONFINITE.replace("    for handle in handles:\n        handle.remove()\n", ""),
         expect=["returned, hooks were still registered on the modules"],
         mistake="07.find_first_nonfinite.module-hooks-left"),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="hooks-removed-raise",
         why="per-module hooks removed only when forward succeeds", source=_PER_MODULE_NONFINITE,
         expect=["raised, hooks were still registered on the modules"],
         mistake="07.find_first_nonfinite.module-hooks-left-on-error"),
    dict(exercise="find_first_nonfinite", kind="wrong", clause="output", why="the test inverted: any finite element",
         source=edited(reference("find_first_nonfinite"),
                       ('return not torch.isfinite(value).all()', 'return torch.isfinite(value).any()')),
         expect=["expected 'body.1'"], mistake="07.find_first_nonfinite.wrong-module"),
]

CLAUSES = {
    "summarize_model": {
        "once": "Run `model(*inputs, **kwargs)` once",
        "arguments": "`model(*inputs, **kwargs)`",
        "pair": "Returns `(output, rows)`",
        "output-itself": "`output` is the object the model returned, itself (not a copy)",
        "every-call": "one per call of a module of `model`",
        "row-per-call": "a module called twice gets two rows",
        "start-order": "in the order the calls start (a parent before its children;",
        "keys": '`{"name": str, "type": str, "output_shape": ..., "params": int}`',
        "keys-only": "each with these four keys and no others",
        "name": "name: the module's name in model.named_modules()",
        "root-name": '"" for the model itself',
        "shared-name": "a module registered under two names has only the first, the one named_modules() lists",
        "type": "type: type(module).__name__",
        "shape-tensor": "output_shape: tuple(output.shape) for a tensor",
        "shape-sequence": "for a tuple or list, a list with the shape tuple of each tensor item and None for any "
                          "other item",
        "shape-nested": "a tuple or list item included",
        "shape-namedtuple": "a named tuple, such as what torch.max(x, dim) returns, is a tuple",
        "shape-other": "None for anything else",
        "params-own": "params: the number of elements of the module's own parameters (recurse=False)",
        "params-frozen": "frozen ones",
        "params-shared": "ones shared with another module included",
        "params-no-buffers": "buffers not",
        "unregistered": "Modules not in model.named_modules() get no row",
        "model-mode": "The model runs as the caller has it, in its train or eval mode",
        "grad-mode": "in the caller's grad mode (so the output has its graph when gradients are on)",
        "modes-kept": "both modes are as they were afterwards",
        "hooks-removed": "All hooks are removed before returning",
        "hooks-removed-raise": "also when the forward pass raises",
        "exception-unchanged": "(the exception propagates unchanged)",
    },
    "find_first_nonfinite": {
        "once": "Runs model(*inputs) once",
        "arguments": "model(*inputs)",
        "no-grad": "under torch.no_grad()",
        "model-mode": "in the model's own train or eval mode",
        "modes-kept": "afterwards the model's mode and torch's grad mode are as they were",
        "every-module": "Every module of model.named_modules() is watched, containers and the model itself included",
        "unregistered": "modules not in it are ignored",
        "name": "Returns the name (as in model.named_modules():",
        "root-name": '"" for the model itself',
        "shared-name": "a module registered under two names has only the first",
        "return-order": "of the first module call, in the order the calls return",
        "output": "whose output contains NaN, +inf or -inf",
        "infinities": "+inf or -inf",
        "any-element": "a tensor with such an element",
        "sequence": "or a tuple or list with such a tensor among its items",
        "namedtuple": "a named tuple, such as what torch.sort(x, dim) returns, is a tuple",
        "other-finite": "Any other output (a dict, a tuple inside the tuple) counts as finite",
        "none": "Returns None if there is none",
        "hooks-removed": "All hooks are removed before returning",
        "hooks-removed-raise": "also when the forward pass raises",
        "exception-unchanged": "(the exception propagates unchanged)",
    },
}

NOT_CLAUSES = {
    "find_first_nonfinite": {
        "Name of the first module of `model` whose output is not finite, or None.":
            "the summary line; the sentences after it state each of its parts as a clause",
    },
}

# predict_global_and_prepend: a prediction of the events a piece of code logs (hooked/checks/event_predictions.py)
from mistakes import predicted  # noqa: E402

CLAUSES["predict_global_and_prepend"] = {
    "events": "Return the events that `global_and_prepend_events` logs",
    "order": "in the order they fire",
    "names": "one of the names the cell above logs",
}
_GLOBAL = ["pre:global", "pre:own, prepend", "pre:own", "forward", "fwd:global", "fwd:own, prepend", "fwd:own"]
ENTRIES += [
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="order", why="prepend before the global hooks",
         source=predicted("predict_global_and_prepend", ["pre:own, prepend", "pre:global", "pre:own", "forward",
                                                          "fwd:own, prepend", "fwd:global", "fwd:own"]),
         mistake="07.predict_global_and_prepend.prepend-before-global",
         expect=["at index 0", "prepend=true only reorders a module's own hooks"]),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="order", why="registration order: global last",
         source=predicted("predict_global_and_prepend", ["pre:own", "pre:own, prepend", "pre:global", "forward",
                                                          "fwd:own", "fwd:own, prepend", "fwd:global"]),
         mistake="07.predict_global_and_prepend.global-pre-after-own",
         expect=["at index 0", "whenever it was registered"]),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="order", why="global hooks wrap the module's own",
         source=predicted("predict_global_and_prepend", _GLOBAL[:4] + ["fwd:own, prepend", "fwd:own", "fwd:global"]),
         mistake="07.predict_global_and_prepend.global-fwd-after-own",
         expect=["at index 4", "global hooks do not wrap around the module's own"]),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="order", why="prepend ignored among own hooks",
         source=predicted("predict_global_and_prepend", ["pre:global", "pre:own", "pre:own, prepend"] + _GLOBAL[3:]),
         mistake="07.predict_global_and_prepend.prepend-ignored",
         expect=["at index 1", "in front of the module's own hooks registered before it"]),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="events", why="a list of pairs",
         source=predicted("predict_global_and_prepend", [("pre", "global"), ("pre", "own, prepend")]),
         mistake="07.predict_global_and_prepend.not-event-names",
         expect=["item 0 is tuple", "not an event name"]),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="names", why="prepend spelled as prepended",
         source=predicted("predict_global_and_prepend", ["pre:global", "pre:own, prepended"] + _GLOBAL[2:]),
         mistake="07.predict_global_and_prepend.unknown-event",
         expect=["'pre:own, prepended' at index 1, which is not an event this code logs"]),
    dict(exercise="predict_global_and_prepend", kind="right", why="pre-hook and forward spellings, spaces, a tuple",
         source=predicted("predict_global_and_prepend", ("Pre-Hook:Global", "pre : own,prepend", "prehook:own",
                                                          " FORWARD ", "forward:global", "Forward:Own, Prepend",
                                                          "fwd:own")),
         expect=[]),
]

# predict_always_call: another prediction

CLAUSES["predict_always_call"] = {
    "events": "Return the events that `always_call_events` logs",
    "order": "in the order they fire",
    "names": "one of the names the cell above logs",
}
_ALWAYS = ["pre:model", "global:ok", "pre:broken", "global:broken", "always:broken", "global:model",
           "always:model", "caught"]
ENTRIES += [
    dict(exercise="predict_always_call", kind="wrong", clause="order", why="plain forward hooks run too",
         source=predicted("predict_always_call", _ALWAYS[:4] + ["fwd:broken"] + _ALWAYS[4:6] + ["fwd:model"]
                          + _ALWAYS[6:]),
         mistake="07.predict_always_call.forward-hook-on-raise",
         expect=["at index 4", "you predicted 'fwd:broken'", "'always:broken' fires there",
                 "a forward hook registered without always_call=true does not run"]),
    dict(exercise="predict_always_call", kind="wrong", clause="order", why="no forward hook runs once forward raises",
         source=predicted("predict_always_call", ["pre:model", "global:ok", "pre:broken", "caught"]),
         mistake="07.predict_always_call.caught-before-always-call",
         expect=["at index 3", "runs even when forward raises"]),
    dict(exercise="predict_always_call", kind="wrong", clause="order", why="the parent's hooks before the child's",
         source=predicted("predict_always_call", _ALWAYS[:3] + ["global:model", "always:model", "global:broken",
                                                                   "always:broken", "caught"]),
         mistake="07.predict_always_call.outer-module-first",
         expect=["at index 3", "the exception leaves the innermost module first"]),
    dict(exercise="predict_always_call", kind="wrong", clause="order", why="the module's own hook before the global",
         source=predicted("predict_always_call", _ALWAYS[:3] + ["always:broken", "global:broken", "always:model",
                                                                   "global:model", "caught"]),
         mistake="07.predict_always_call.own-before-global-on-raise",
         expect=["at index 3", "global forward hooks run before the module's own"]),
    dict(exercise="predict_always_call", kind="wrong", clause="order", why="no global hook for the module that worked",
         source=predicted("predict_always_call", _ALWAYS[:1] + _ALWAYS[2:]),
         mistake="07.predict_always_call.global-hook-misses-ok",
         expect=["at index 1", "a global forward hook fires for every module call"]),
    dict(exercise="predict_always_call", kind="wrong", clause="events", why="the events as one string",
         source=predicted("predict_always_call", " ".join(_ALWAYS)),
         mistake="07.predict_always_call.returned-string",
         expect=["returned a string"]),
    dict(exercise="predict_always_call", kind="wrong", clause="names", why="the exception as an event",
         source=predicted("predict_always_call", _ALWAYS[:3] + ["raise:broken"] + _ALWAYS[3:]),
         mistake="07.predict_always_call.unknown-event",
         expect=["'raise:broken' at index 3, which is not an event this code logs"]),
    dict(exercise="predict_always_call", kind="right", why="always_call and pre-hook spellings, upper case",
         source=predicted("predict_always_call", ["PRE-HOOK:model", "Global:OK", "pre_hook:broken", "global : broken",
                                                   "always_call:broken", "global:model", "always-call:model",
                                                   " Caught "]),
         expect=[]),
]
# The adversary pass on the two predictions: forward before its pre-hooks, the exception's way out, a repeat.
ENTRIES += [
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="order", why="forward before the pre-hooks",
         source=predicted("predict_global_and_prepend", ["forward"] + _GLOBAL[:3] + _GLOBAL[4:]),
         mistake="07.predict_global_and_prepend.forward-before-pre-hooks",
         expect=["at index 0", "you predicted 'forward'", "forward runs after every pre-hook, global and own"]),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="events", why="the global pre-hook twice",
         source=predicted("predict_global_and_prepend", _GLOBAL[:1] + _GLOBAL),
         mistake="07.predict_global_and_prepend.hook-fires-twice",
         expect=["at index 1", "the layer is called once: each hook fires once"]),
    dict(exercise="predict_always_call", kind="wrong", clause="order", why="only the module that raised runs hooks",
         source=predicted("predict_always_call", _ALWAYS[:5] + ["caught"]),
         mistake="07.predict_always_call.outer-always-call-missed",
         expect=["at index 5", "you predicted 'caught'", "the exception passes out through model's call too"]),
    dict(exercise="predict_always_call", kind="wrong", clause="events", why="the except block twice",
         source=predicted("predict_always_call", _ALWAYS + ["caught"]),
         mistake="07.predict_always_call.hook-fires-twice",
         expect=["at index 8", "the log ends before it", "the except block runs once"]),
]
# The named mistakes of the predictions that no entry above produced: the shared format mistakes, a rule each,
# and a divergence no rule explains.
ENTRIES += [
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="order",
         why="forward after the global forward hook",
         source=predicted("predict_global_and_prepend", _GLOBAL[:3] + ["fwd:global", "forward"] + _GLOBAL[5:]),
         expect=["at index 3", "you predicted 'fwd:global'", "before every forward hook"],
         mistake="07.predict_global_and_prepend.forward-hooks-before-forward"),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="events", why="the last forward hook left out",
         source=predicted("predict_global_and_prepend", _GLOBAL[:-1]),
         expect=["at index 6", "'fwd:own' is next"], mistake="07.predict_global_and_prepend.wrong-order"),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="events", why="the list printed, not returned",
         source="def predict_global_and_prepend():\n    print(" + repr(_GLOBAL) + ")\n",
         expect=["returned none"], mistake="07.predict_global_and_prepend.returned-none"),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="events", why="the events as one string",
         source=predicted("predict_global_and_prepend", ", ".join(_GLOBAL)),
         expect=["returned a string"], mistake="07.predict_global_and_prepend.returned-string"),
    dict(exercise="predict_global_and_prepend", kind="wrong", clause="order", why="the events as a set",
         source="def predict_global_and_prepend():\n    return set(" + repr(_GLOBAL) + ")\n",
         expect=["a set has no order"], mistake="07.predict_global_and_prepend.not-a-list"),
    dict(exercise="predict_always_call", kind="wrong", clause="order",
         why="the global hook of ok before model's pre-hook",
         source=predicted("predict_always_call", ["global:ok", "pre:model"] + _ALWAYS[2:]),
         expect=["at index 0", "model's pre-hook fires when model is called"],
         mistake="07.predict_always_call.model-pre-hook-misplaced"),
    dict(exercise="predict_always_call", kind="wrong", clause="events", why="the except block left out",
         source=predicted("predict_always_call", _ALWAYS[:-1]),
         expect=["at index 7", "'caught' is next"], mistake="07.predict_always_call.wrong-order"),
    dict(exercise="predict_always_call", kind="wrong", clause="events", why="the list printed, not returned",
         source="def predict_always_call():\n    print(" + repr(_ALWAYS) + ")\n",
         expect=["returned none"], mistake="07.predict_always_call.returned-none"),
    dict(exercise="predict_always_call", kind="wrong", clause="events", why="a dict of module to events",
         source=predicted("predict_always_call", {"model": ["pre:model", "global:model", "always:model"]}),
         expect=["returned a dict"], mistake="07.predict_always_call.not-a-list"),
    dict(exercise="predict_always_call", kind="wrong", clause="names", why="the events numbered as pairs",
         source=predicted("predict_always_call", list(enumerate(_ALWAYS))),
         expect=["item 0 is tuple"], mistake="07.predict_always_call.not-event-names"),
]
