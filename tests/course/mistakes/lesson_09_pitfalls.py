"""Mistake catalogue for lesson 09, pitfalls and debugging. The format of an entry is described in
tests/course/test_mistake_catalogue.py."""

_FINDER_DICTS = '''
MODULE_DICTS = {"forward_pre": "_forward_pre_hooks", "forward": "_forward_hooks",
                "backward_pre": "_backward_pre_hooks", "backward": "_backward_hooks",
                "state_dict_pre": "_state_dict_pre_hooks", "state_dict": "_state_dict_hooks",
                "load_state_dict_pre": "_load_state_dict_pre_hooks",
                "load_state_dict_post": "_load_state_dict_post_hooks"}
PARAMETER_DICTS = {"tensor": "_backward_hooks", "post_accumulate_grad": "_post_accumulate_grad_hooks"}
'''

def _finder(modules="model.named_modules()", skip_kind=None, parameters="model.named_parameters()",
            read_parameter_dict="getattr(parameter, attribute) or {}", extra_line=""):
    """A find_registered_hooks that differs from a right one in the way the arguments say."""
    kinds = "MODULE_DICTS" if skip_kind is None else \
        f"{{k: v for k, v in MODULE_DICTS.items() if k != {skip_kind!r}}}"
    extra = f"\n            {extra_line}" if extra_line else ""
    return _FINDER_DICTS + f"""
import torch.nn.modules.module as module_globals


def find_registered_hooks(model):
    found = []
    for name, module in {modules}:
        for kind, attribute in {kinds}.items():
            found += [(name, kind, hook) for hook in getattr(module, attribute).values()]{extra}
    for name, parameter in {parameters}:
        for kind, attribute in PARAMETER_DICTS.items():
            found += [(name, kind, hook) for hook in ({read_parameter_dict}).values()]
    return found
"""


_REMOVER_DICTS = '''
MODULE_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks",
                "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")
FLAG_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
PARAMETER_DICTS = ("_backward_hooks", "_post_accumulate_grad_hooks")
'''


def _remover(modules="model.modules()", flags=True, parameters="clear", count_flags=False):
    """A remove_all_hooks that differs from a right one in the way the arguments say."""
    flag_lines = """
        for attribute in FLAG_DICTS:
            removed += len(getattr(module, attribute)) if COUNT else 0
            getattr(module, attribute).clear()""".replace("COUNT", str(count_flags)) if flags else ""
    parameter_body = {
        "clear": """
            hooks = getattr(parameter, attribute)
            if hooks:
                removed += len(hooks)
                hooks.clear()""",
        "none": """
            hooks = getattr(parameter, attribute)
            if hooks:
                removed += len(hooks)
                setattr(parameter, attribute, None)""",
        "skip": """
            pass"""}[parameters]
    return _REMOVER_DICTS + f"""

def remove_all_hooks(model):
    removed = 0
    for module in {modules}:
        for attribute in MODULE_DICTS:
            removed += len(getattr(module, attribute))
            getattr(module, attribute).clear(){flag_lines}
    for parameter in model.parameters():
        for attribute in PARAMETER_DICTS:{parameter_body}
    return removed
"""


ENTRIES = [
    # ------------------------------------------------------------------ grad_before_inplace_relu
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="the broken code as given",
         source='''
def grad_before_inplace_relu(model, layer, x):
    grads = []
    handle = layer.register_full_backward_hook(
        lambda module, grad_input, grad_output: grads.append(grad_output[0]))
    model(x).sum().backward()
    handle.remove()
    return grads[0]
''',
         expect=["BackwardHookFunction", "fails in forward", "tensor hook"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a full backward pre-hook instead",
         source='''
def grad_before_inplace_relu(model, layer, x):
    grads = []
    with layer.register_full_backward_pre_hook(lambda module, grad_output: grads.append(grad_output[0])):
        model(x).sum().backward()
    return grads[0]
''',
         expect=["backward pre-hook", "fails in forward", "output.register_hook"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="retain_grad on the stored output",
         source='''
def grad_before_inplace_relu(model, layer, x):
    outputs = []

    def keep(module, args, output):
        output.retain_grad()
        outputs.append(output)

    with layer.register_forward_hook(keep):
        model(x).sum().backward()
    return outputs[0].grad
''',
         expect=["gradient at the output of the in-place relu", "retain_grad()"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="autograd.grad on the stored output",
         source='''
import torch


def grad_before_inplace_relu(model, layer, x):
    outputs = []
    with layer.register_forward_hook(lambda module, args, output: outputs.append(output)):
        score = model(x).sum()
    return torch.autograd.grad(score, outputs[0])[0]
''',
         expect=["gradient at the output of the in-place relu", "torch.autograd.grad"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="switches inplace off for good",
         source='''
from torch import nn


def grad_before_inplace_relu(model, layer, x):
    for module in model.modules():
        if isinstance(module, nn.ReLU):
            module.inplace = False
    grads = []
    with layer.register_full_backward_hook(lambda module, grad_input, grad_output: grads.append(grad_output[0])):
        model(x).sum().backward()
    return grads[0]
''',
         expect=["in-place settings changed", "set inplace back"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="never removes the forward hook",
         source='''
def grad_before_inplace_relu(model, layer, x):
    grads = []

    def on_output(module, args, output):
        output.register_hook(grads.append)

    layer.register_forward_hook(on_output)
    model(x).sum().backward()
    return grads[-1]
''',
         expect=["still registered", "(name, kind)"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="removes the hook only when nothing raised",
         source='''
def grad_before_inplace_relu(model, layer, x):
    grads = []

    def on_output(module, args, output):
        output.register_hook(grads.append)

    handle = layer.register_forward_hook(on_output)
    model(x).sum().backward()
    handle.remove()
    return grads[0]
''',
         expect=["the exception reached the caller", "still registered", "finally"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a lambda forward hook returns the tensor hook's handle",
         source='''
def grad_before_inplace_relu(model, layer, x):
    grads = []
    with layer.register_forward_hook(lambda module, args, output: output.register_hook(grads.append)):
        model(x).sum().backward()
    return grads[0]
''',
         expect=["returned the handle", "replaces the module's output"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="returns the list of gradients",
         source='''
def grad_before_inplace_relu(model, layer, x):
    grads = []

    def on_output(module, args, output):
        output.register_hook(grads.append)

    with layer.register_forward_hook(on_output):
        model(x).sum().backward()
    return grads
''',
         expect=["returned a list of 1 item", "the gradient itself"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="swallows the exception",
         source='''
def grad_before_inplace_relu(model, layer, x):
    grads = []

    def on_output(module, args, output):
        output.register_hook(grads.append)

    with layer.register_forward_hook(on_output):
        try:
            model(x).sum().backward()
        except Exception:
            return None
    return grads[0]
''',
         expect=["returned normally", "must reach the caller"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="runs backward twice",
         source='''
def grad_before_inplace_relu(model, layer, x):
    grads = []

    def on_output(module, args, output):
        output.register_hook(grads.append)

    with layer.register_forward_hook(on_output):
        model(x).sum().backward()
        model(x).sum().backward()
    return grads[0]
''',
         expect=["twice the gradient of one backward pass", "backward() once"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="the tensor hook returns a replacement gradient",
         source='''
import torch


def grad_before_inplace_relu(model, layer, x):
    grads = []

    def on_grad(grad):
        grads.append(grad)
        return torch.zeros_like(grad)

    def on_output(module, args, output):
        output.register_hook(on_grad)

    with layer.register_forward_hook(on_output):
        model(x).sum().backward()
    return grads[0]
''',
         expect=["hooks changed the gradients", "return none"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a global forward hook never removed",
         source='''
import torch


def grad_before_inplace_relu(model, layer, x):
    grads = []

    def on_output(module, args, output):
        if module is layer:
            output.register_hook(grads.append)

    torch.nn.modules.module.register_module_forward_hook(on_output)
    model(x).sum().backward()
    return grads[0]
''',
         expect=["global module hook was still registered", "_global_forward_hooks"]),
    dict(exercise="grad_before_inplace_relu", kind="right", why="inplace off for the call, set back in finally",
         source='''
from torch import nn


def grad_before_inplace_relu(model, layer, x):
    relus = [module for module in model.modules() if isinstance(module, nn.ReLU) and module.inplace]
    grads = []
    for relu in relus:
        relu.inplace = False
    handle = layer.register_full_backward_hook(lambda module, grad_input, grad_output: grads.append(grad_output[0]))
    try:
        model(x.detach().requires_grad_()).sum().backward()
    finally:
        handle.remove()
        for relu in relus:
            relu.inplace = True
    return grads[0]
''',
         expect=[]),
    dict(exercise="grad_before_inplace_relu", kind="right", why="handles removed in finally, the hook returns None",
         source='''
def grad_before_inplace_relu(model, layer, x):
    captured = {}

    def on_grad(grad):
        captured["grad"] = grad.clone()

    def on_output(module, args, output):
        output.register_hook(on_grad)

    handle = layer.register_forward_hook(on_output)
    try:
        loss = model(x).sum()
        loss.backward()
    finally:
        handle.remove()
    return captured["grad"]
''',
         expect=[]),
    dict(exercise="grad_before_inplace_relu", kind="right", why="a pre-hook on the next module hooks its input",
         source='''
def grad_before_inplace_relu(model, layer, x):
    modules = list(model.modules())
    following = modules[modules.index(layer) + 1]  # the in-place ReLU, in the models of this exercise
    grads = []

    def on_input(module, args):
        args[0].register_hook(lambda grad: grads.append(grad))

    with following.register_forward_pre_hook(on_input):
        model(x).sum().backward()
    return grads[0]
''',
         expect=[]),
    dict(exercise="grad_before_inplace_relu", kind="right", why="the forward hook hands the ReLU a clone",
         source='''
def grad_before_inplace_relu(model, layer, x):
    kept = []

    def keep_original(module, args, output):
        output.retain_grad()
        kept.append(output)
        return output.clone()  # the ReLU overwrites the clone; the layer's own output keeps its gradient

    with layer.register_forward_hook(keep_original):
        model(x).sum().backward()
    return kept[0].grad
''',
         expect=[]),

    # ------------------------------------------------------------------ find_registered_hooks
    dict(exercise="find_registered_hooks", kind="wrong", why="only the root module",
         source=_finder(modules='[("", model)]'),
         expect=["only module hooks of the model itself", "named_modules()"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="named_children, one level deep",
         source=_finder(modules='[("", model), *model.named_children()]'),
         expect=["missed", "every module in model.named_modules()"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="forgets backward pre-hooks",
         source=_finder(skip_kind="backward_pre"),
         expect=["backward_pre (registered with register_full_backward_pre_hook", "_backward_pre_hooks"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="module hooks only, no parameter hooks",
         source=_finder(parameters="[]"),
         expect=["tensor (registered with parameter.register_hook", "post_accumulate_grad"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="parameter dicts read without handling None",
         source=_finder(read_parameter_dict="getattr(parameter, attribute)"),
         expect=["None until a hook is registered"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="every attribute with 'hook' in its name",
         source='''
def find_registered_hooks(model):
    found = []
    for name, module in model.named_modules():
        for attribute, value in vars(module).items():
            if "hook" in attribute and isinstance(value, dict):
                kind = attribute.strip("_").removesuffix("_hooks")
                found += [(name, kind, hook) for hook in value.values()]
    return found
''',
         expect=["is not a hook", "flags"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="counts global hooks as the model's",
         source=_finder(extra_line='found += [(name, kind, hook) for hook in '
                                   'getattr(module_globals, "_global" + attribute, {}).values()]'),
         expect=["a global hook", "not registered on the model"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="class names instead of module names",
         source=_finder(modules="[(type(module).__name__, module) for module in model.modules()]"),
         expect=["under the name", "named_modules()"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="with_kwargs hooks counted twice",
         source=_finder(extra_line='found += [(name, "forward", module._forward_hooks[key]) '
                                   'for key in module._forward_hooks_with_kwargs if kind == "forward"]'),
         expect=["more often than it is registered", "one triple per registration"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="removes the hooks it reports",
         source=_finder(extra_line="getattr(module, attribute).clear()"),
         expect=["changed the hooks registered", "only report them"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="a set drops a function registered twice",
         source=_FINDER_DICTS + '''

def find_registered_hooks(model):
    found = set()
    for name, module in model.named_modules():
        for kind, attribute in MODULE_DICTS.items():
            found |= {(name, kind, hook) for hook in getattr(module, attribute).values()}
    for name, parameter in model.named_parameters():
        for kind, attribute in PARAMETER_DICTS.items():
            found |= {(name, kind, hook) for hook in (getattr(parameter, attribute) or {}).values()}
    return list(found)
''',
         expect=["registered 2 times", "do not remove duplicates"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="every parameter hook reported as tensor",
         source=_FINDER_DICTS + '''

def find_registered_hooks(model):
    found = []
    for name, module in model.named_modules():
        for kind, attribute in MODULE_DICTS.items():
            found += [(name, kind, hook) for hook in getattr(module, attribute).values()]
    for name, parameter in model.named_parameters():
        for attribute in PARAMETER_DICTS.values():
            found += [(name, "tensor", hook) for hook in (getattr(parameter, attribute) or {}).values()]
    return found
''',
         expect=["as kind 'tensor'", "expected 'post_accumulate_grad'"]),
    dict(exercise="find_registered_hooks", kind="right", why="walks modules and their own parameters, unwraps",
         source='''
def find_registered_hooks(model):
    kinds = ["forward_pre", "forward", "backward_pre", "backward", "state_dict_pre", "load_state_dict_pre",
             "load_state_dict_post"]
    found = []
    for module_name, module in model.named_modules():
        for kind in kinds:
            for hook in getattr(module, f"_{kind}_hooks").values():
                found.append((module_name, kind, getattr(hook, "hook", hook)))
        found.extend((module_name, "state_dict", hook) for hook in module._state_dict_hooks.values())
        for parameter_name, parameter in module.named_parameters(recurse=False):
            full_name = f"{module_name}.{parameter_name}" if module_name else parameter_name
            for hook in (parameter._backward_hooks or {}).values():
                found.append((full_name, "tensor", hook))
            for hook in (parameter._post_accumulate_grad_hooks or {}).values():
                found.append((full_name, "post_accumulate_grad", hook))
    return found[::-1]
''',
         expect=[]),
    dict(exercise="find_registered_hooks", kind="right", why="a generator of lists",
         source=_FINDER_DICTS + '''

def _walk(model):
    for name, module in model.named_modules():
        for kind, attribute in MODULE_DICTS.items():
            for hook in getattr(module, attribute).values():
                yield [name, kind, hook]
    for name, parameter in model.named_parameters():
        for kind, attribute in PARAMETER_DICTS.items():
            hooks = getattr(parameter, attribute, None)
            if hooks:
                for hook in hooks.values():
                    yield [name, kind, hook]


def find_registered_hooks(model):
    return list(_walk(model))
''',
         expect=[]),

    # ------------------------------------------------------------------ remove_all_hooks
    dict(exercise="remove_all_hooks", kind="wrong", why="only the root module",
         source=_remover(modules="[model]"),
         expect=["still fired", "every submodule"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="named_children, one level deep",
         source=_remover(modules="[model, *model.children()]"),
         expect=["still fired", "every submodule and parameter"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="sets the parameter dicts to None",
         source=_remover(parameters="none"),
         expect=["emptied in place", "leaves the hook attached"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="leaves parameter hooks",
         source=_remover(parameters="skip"),
         expect=["still fired", "tensor_hook"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="leaves the flag dicts",
         source=_remover(flags=False),
         expect=["flag dicts still hold entries", "clear those too"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="counts the flags as hooks",
         source=_remover(count_flags=True),
         expect=["expected the number of hooks it removed", "flag entries do not count"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="returns nothing",
         source=_remover().replace("    return removed\n", "    removed = None\n"),
         expect=["returned None", "the number of hooks it removed"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="also clears the global hooks",
         source=_remover().replace("    return removed\n", """    import torch.nn.modules.module as module_globals
    module_globals._global_forward_hooks.clear()
    return removed
"""),
         expect=["global forward hook", "leave them registered"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="sets the module dicts to None",
         source=_REMOVER_DICTS + """

def remove_all_hooks(model):
    removed = 0
    for module in model.modules():
        for attribute in MODULE_DICTS + FLAG_DICTS:
            removed += len(getattr(module, attribute)) if attribute in MODULE_DICTS else 0
            setattr(module, attribute, None)
    for parameter in model.parameters():
        for attribute in PARAMETER_DICTS:
            hooks = getattr(parameter, attribute)
            if hooks:
                removed += len(hooks)
                hooks.clear()
    return removed
""",
         expect=["no longer runs", "dict.clear()"]),
    dict(exercise="remove_all_hooks", kind="right", why="new empty dicts for modules, pops parameter hooks",
         source=_REMOVER_DICTS + """
from collections import OrderedDict


def remove_all_hooks(model):
    removed = 0
    for module in model.modules():
        removed += sum(len(getattr(module, attribute)) for attribute in MODULE_DICTS)
        for attribute in MODULE_DICTS + FLAG_DICTS:
            setattr(module, attribute, OrderedDict())
    for parameter in model.parameters():
        for attribute in PARAMETER_DICTS:
            hooks = getattr(parameter, attribute) or {}
            for key in list(hooks):
                del hooks[key]
                removed += 1
    return removed
""",
         expect=[]),
    dict(exercise="remove_all_hooks", kind="wrong", why="counts distinct functions, not registrations",
         source=_remover().replace("removed += len(getattr(module, attribute))",
                                   "removed += len(set(getattr(module, attribute).values()))"),
         expect=["expected the number of hooks it removed", "one per registration"]),
    dict(exercise="remove_all_hooks", kind="right", why="model.apply, each module's own parameters",
         source=_REMOVER_DICTS + """

def remove_all_hooks(model):
    removed = []

    def clean(module):
        for attribute in MODULE_DICTS:
            removed.extend(getattr(module, attribute).values())
            getattr(module, attribute).clear()
        for attribute in FLAG_DICTS:
            getattr(module, attribute).clear()
        for parameter in module.parameters(recurse=False):
            for attribute in PARAMETER_DICTS:
                if getattr(parameter, attribute) is not None:
                    removed.extend(getattr(parameter, attribute).values())
                    setattr(parameter, attribute, {})

    model.apply(clean)
    return len(removed)
""",
         expect=[]),
    dict(exercise="remove_all_hooks", kind="right", why="the right remover, written by the helper",
         source=_remover(),
         expect=[]),
]
