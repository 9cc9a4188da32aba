"""Mistake catalogue for lesson 09, pitfalls and debugging. The format of an entry is described in
tests/course/test_mistake_catalogue.py."""

from mistakes import edited, reference

# Someone's own remover, right in two ways.
_APPLY_REMOVER = """
MODULE_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks",
                "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")
FLAG_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
PARAMETER_DICTS = ("_backward_hooks", "_post_accumulate_grad_hooks")


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
"""


ENTRIES = [
    # ------------------------------------------------------------------ grad_before_inplace_relu
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="the broken code as given",
         clause="inplace-relu",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    grads = []\n"
                        "\n"
                        "    def register_tensor_hook(module, args, output):\n"
                        "        output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged\n"
                        "\n"
                        "    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n"
                        "    return grads[0]\n"
                        "    # Broken: a full backward hook fails in forward here, and stays registered when it does.\n",
                        "")),
         mistake="09.grad_before_inplace_relu.full-backward-hook",
         expect=["BackwardHookFunction", "fails in forward", "tensor hook"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a full backward pre-hook instead",
         clause="inplace-relu",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    def register_tensor_hook(module, args, output):\n"
                        "        output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged\n"
                        "\n"
                        "    with layer.register_forward_hook(register_tensor_hook):",
                        "    with layer.register_full_backward_pre_hook(lambda module, grad_output: grads.append(grad_output[0])):")),
         mistake="09.grad_before_inplace_relu.full-backward-hook",
         expect=["backward pre-hook", "fails in forward", "output.register_hook"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="retain_grad on the stored output",
         clause="layer-output-grad",
         source=edited(reference("grad_before_inplace_relu"),
                       ("output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged",
                        "output.retain_grad()\n"
                        "        grads.append(output)"),
                       ("    return grads[0]\n    # Broken", "    return grads[0].grad\n    # Broken")),
         mistake="09.grad_before_inplace_relu.gradient-after-relu",
         expect=["gradient at the output of the in-place relu", "retain_grad()"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="autograd.grad on the stored output",
         clause="layer-output-grad",
         source='''
import torch


def grad_before_inplace_relu(model, layer, x):
    outputs = []
    with layer.register_forward_hook(lambda module, args, output: outputs.append(output)):
        score = model(x).sum()
    grad = torch.autograd.grad(score, outputs[0], retain_graph=True)[0]
    score.backward()
    return grad
''',
         mistake="09.grad_before_inplace_relu.gradient-after-relu",
         expect=["gradient at the output of the in-place relu", "torch.autograd.grad"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="switches inplace off for good",
         clause="inplace-kept",
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
         mistake="09.grad_before_inplace_relu.changes-inplace-settings",
         expect=["in-place settings changed", "set each inplace back"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="never removes the forward hook",
         clause="no-hook-left",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    layer.register_forward_hook(register_tensor_hook)\n"
                        "    model(x).sum().backward()\n"),
                       ("    return grads[0]\n    # Broken", "    return grads[-1]\n    # Broken")),
         mistake="09.grad_before_inplace_relu.hook-left-registered",
         expect=["still registered", "(name, kind)"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="removes the hook only when nothing raised",
         clause="on-forward-error",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    handle = layer.register_forward_hook(register_tensor_hook)\n"
                        "    model(x).sum().backward()\n"
                        "    handle.remove()\n")),
         mistake="09.grad_before_inplace_relu.hook-left-registered",
         expect=["the exception reached the caller", "still registered", "finally"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a lambda forward hook returns the tensor hook's handle",
         clause="record-only",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    def register_tensor_hook(module, args, output):\n"
                        "        output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged\n"
                        "\n"
                        "    with layer.register_forward_hook(register_tensor_hook):",
                        "    with layer.register_forward_hook(lambda module, args, output: output.register_hook(grads.append)):")),
         mistake="09.grad_before_inplace_relu.forward-hook-returns-handle",
         expect=["returned the handle", "replaces the module's output"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="returns the list of gradients",
         clause="tensor-shape",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    return grads[0]\n    # Broken", "    return grads\n    # Broken")),
         mistake="09.grad_before_inplace_relu.returned-a-list",
         expect=["returned a list of 1 item", "the gradient itself"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="swallows the exception",
         clause="exception-reaches-caller",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        try:\n"
                        "            model(x).sum().backward()\n"
                        "        except Exception:\n"
                        "            return None\n")),
         mistake="09.grad_before_inplace_relu.swallowed-exception",
         expect=["returned normally", "must reach the caller"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="runs backward twice",
         clause="backward-once",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n"
                        "        model(x).sum().backward()\n")),
         mistake="09.grad_before_inplace_relu.backward-twice",
         expect=["twice the gradient of one backward pass", "backward() once"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="the tensor hook returns a replacement gradient",
         clause="record-only",
         source=edited(reference("grad_before_inplace_relu"),
                       ("def grad_before_inplace_relu(model, layer, x):",
                        "import torch\n"
                        "\n"
                        "\n"
                        "def grad_before_inplace_relu(model, layer, x):"),
                       ("output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged",
                        "output.register_hook(lambda grad: grads.append(grad) or torch.zeros_like(grad))")),
         mistake="09.grad_before_inplace_relu.parameter-grads-changed",
         expect=["hooks changed the gradients", "return none"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a global forward hook never removed",
         clause="no-global-hook-left",
         source=edited(reference("grad_before_inplace_relu"),
                       ("def grad_before_inplace_relu(model, layer, x):",
                        "import torch\n"
                        "\n"
                        "\n"
                        "def grad_before_inplace_relu(model, layer, x):"),
                       ("        output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged",
                        "        if module is layer:\n"
                        "            output.register_hook(grads.append)"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    torch.nn.modules.module.register_module_forward_hook(register_tensor_hook)\n"
                        "    model(x).sum().backward()\n")),
         mistake="09.grad_before_inplace_relu.global-hook-left-registered",
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
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a pre-hook on the next entry of model.modules()",
         clause="any-depth",
         source='''
def grad_before_inplace_relu(model, layer, x):
    modules = list(model.modules())
    following = modules[modules.index(layer) + 1]  # the in-place ReLU, when layer is a single module
    grads = []

    def on_input(module, args):
        args[0].register_hook(lambda grad: grads.append(grad))

    with following.register_forward_pre_hook(on_input):
        model(x).sum().backward()
    return grads[0]
''',
         mistake="09.grad_before_inplace_relu.assumes-layer-is-a-child",
         expect=["worked when layer was a direct child", "at any depth", "3 levels down"]),
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
         clause="depth",
         source=edited(reference("find_registered_hooks"),
                       ("for name, module in model.named_modules():", 'for name, module in [("", model)]:')),
         mistake="09.find_registered_hooks.root-module-only",
         expect=["only module hooks of the model itself", "named_modules()"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="named_children, one level deep",
         clause="depth",
         source=edited(reference("find_registered_hooks"),
                       ("for name, module in model.named_modules():",
                        'for name, module in [("", model), *model.named_children()]:')),
         mistake="09.find_registered_hooks.missed-hooks",
         expect=["missed", "every module in model.named_modules()"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="forgets backward pre-hooks",
         clause="kinds",
         source=edited(reference("find_registered_hooks"), ('"backward_pre": "_backward_pre_hooks", ', "")),
         mistake="09.find_registered_hooks.missed-hooks",
         expect=["backward_pre (registered with register_full_backward_pre_hook", "_backward_pre_hooks"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="module hooks only, no parameter hooks",
         clause="parameters",
         source=edited(reference("find_registered_hooks"),
                       ("for name, parameter in model.named_parameters():", "for name, parameter in []:")),
         mistake="09.find_registered_hooks.missed-hooks",
         expect=["tensor (registered with parameter.register_hook", "post_accumulate_grad"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="parameter dicts read without handling None",
         clause="parameters",
         source=edited(reference("find_registered_hooks"),
                       ("hooks = getattr(parameter, attribute, None) or {}",
                        "hooks = getattr(parameter, attribute)")),
         mistake="09.find_registered_hooks.parameter-dict-none",
         expect=["None until a hook is registered"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="every attribute with 'hook' in its name",
         clause="hook",
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
         mistake="09.find_registered_hooks.reports-flags",
         expect=["is not a hook", "flags"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="counts global hooks as the model's",
         clause="globals",
         source=edited(reference("find_registered_hooks"),
                       ("def find_registered_hooks(model):",
                        "import torch.nn.modules.module as module_globals\n"
                        "\n"
                        "\n"
                        "def find_registered_hooks(model):"),
                       ("found += [(name, kind, hook) for hook in getattr(module, attribute).values()]",
                        "found += [(name, kind, hook) for hook in getattr(module, attribute).values()]\n"
                        '            found += [(name, kind, hook) for hook in getattr(module_globals, "_global" + attribute, {}).values()]')),
         mistake="09.find_registered_hooks.reports-global-hooks",
         expect=["a global hook", "not registered on the model"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="class names instead of module names",
         clause="module-name",
         source=edited(reference("find_registered_hooks"),
                       ("for name, module in model.named_modules():",
                        "for name, module in [(type(module).__name__, module) for module in model.modules()]:")),
         mistake="09.find_registered_hooks.wrong-name",
         expect=["under the name", "named_modules()"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="with_kwargs hooks counted twice",
         clause="per-registration",
         source=edited(reference("find_registered_hooks"),
                       ("found += [(name, kind, hook) for hook in getattr(module, attribute).values()]",
                        "found += [(name, kind, hook) for hook in getattr(module, attribute).values()]\n"
                        '            found += [(name, "forward", module._forward_hooks[key]) for key in module._forward_hooks_with_kwargs if kind == "forward"]')),
         mistake="09.find_registered_hooks.reports-hook-twice",
         expect=["more often than it is registered", "one triple per registration"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="removes the hooks it reports",
         clause="unchanged",
         source=edited(reference("find_registered_hooks"),
                       ("found += [(name, kind, hook) for hook in getattr(module, attribute).values()]",
                        "found += [(name, kind, hook) for hook in getattr(module, attribute).values()]\n"
                        "            getattr(module, attribute).clear()")),
         mistake="09.find_registered_hooks.changes-hooks",
         expect=["changed the hooks registered", "only report them"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="a set drops a function registered twice",
         clause="per-registration",
         source=edited(reference("find_registered_hooks"),
                       ("    found = []\n", "    found = set()\n"),
                       ("found += [(name, kind, hook) for hook in getattr(module, attribute).values()]",
                        "found |= {(name, kind, hook) for hook in getattr(module, attribute).values()}"),
                       ("found += [(name, kind, hook) for hook in hooks.values()]",
                        "found |= {(name, kind, hook) for hook in hooks.values()}"),
                       ("    return found", "    return list(found)")),
         mistake="09.find_registered_hooks.drops-duplicates",
         expect=["registered 2 times", "do not remove duplicates"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="every parameter hook reported as tensor",
         clause="kinds",
         source=edited(reference("find_registered_hooks"),
                       ("for kind, attribute in parameter_dicts.items():",
                        "for attribute in parameter_dicts.values():"),
                       ("found += [(name, kind, hook) for hook in hooks.values()]",
                        'found += [(name, "tensor", hook) for hook in hooks.values()]')),
         mistake="09.find_registered_hooks.wrong-kind",
         expect=["as kind 'tensor'", "expected 'post_accumulate_grad'"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="each module's own parameters: a tied weight twice",
         clause="shared",
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
         mistake="09.find_registered_hooks.reports-second-name",
         expect=["under the name 'tail.weight' too", "tied weight", "named_parameters()"]),
    dict(exercise="find_registered_hooks", kind="right", why="a generator of lists",
         source='''
MODULE_DICTS = {"forward_pre": "_forward_pre_hooks", "forward": "_forward_hooks",
                "backward_pre": "_backward_pre_hooks", "backward": "_backward_hooks",
                "state_dict_pre": "_state_dict_pre_hooks", "state_dict": "_state_dict_hooks",
                "load_state_dict_pre": "_load_state_dict_pre_hooks",
                "load_state_dict_post": "_load_state_dict_post_hooks"}
PARAMETER_DICTS = {"tensor": "_backward_hooks", "post_accumulate_grad": "_post_accumulate_grad_hooks"}


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
         clause="depth",
         source=edited(reference("remove_all_hooks"), ("for module in model.modules():", "for module in [model]:")),
         mistake="09.remove_all_hooks.hooks-still-fire",
         expect=["still fired", "every submodule"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="named_children, one level deep",
         clause="depth",
         source=edited(reference("remove_all_hooks"),
                       ("for module in model.modules():", "for module in [model, *model.children()]:")),
         mistake="09.remove_all_hooks.hooks-still-fire",
         expect=["still fired", "every submodule and parameter"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="sets the parameter dicts to None",
         clause="parameters",
         source=edited(reference("remove_all_hooks"),
                       ("                hooks.clear()", "                setattr(parameter, attribute, None)")),
         mistake="09.remove_all_hooks.replaces-parameter-dicts",
         expect=["clear method", "leaves the hook attached"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="leaves parameter hooks",
         clause="parameters",
         source=edited(reference("remove_all_hooks"),
                       ("            hooks = getattr(parameter, attribute, None)\n"
                        "            if hooks:\n"
                        "                removed += len(hooks)\n"
                        "                hooks.clear()",
                        "            pass")),
         mistake="09.remove_all_hooks.hooks-still-fire",
         expect=["still fired", "tensor_hook"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="leaves the flag dicts",
         clause="flags",
         source=edited(reference("remove_all_hooks"),
                       ("        for attribute in flag_dicts:\n"
                        "            getattr(module, attribute).clear()\n",
                        "")),
         mistake="09.remove_all_hooks.flags-left",
         expect=["flag dicts still hold entries", "clear those too"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="counts the flags as hooks",
         clause="count",
         source=edited(reference("remove_all_hooks"),
                       ("        for attribute in flag_dicts:\n",
                        "        for attribute in flag_dicts:\n"
                        "            removed += len(getattr(module, attribute))\n")),
         mistake="09.remove_all_hooks.counts-too-many",
         expect=["expected the number of hooks it removed", "flag entries do not count"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="returns nothing",
         clause="count",
         source=edited(reference("remove_all_hooks"), ("return removed", "removed = None")),
         mistake="09.remove_all_hooks.wrong-count",
         expect=["returned None", "the number of hooks it removed"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="also clears the global hooks",
         clause="globals",
         source=edited(reference("remove_all_hooks"),
                       ("hooks.clear()",
                        "hooks.clear()\n"
                        "    import torch.nn.modules.module as module_globals\n"
                        "    module_globals._global_forward_hooks.clear()")),
         mistake="09.remove_all_hooks.removes-global-hooks",
         expect=["global forward hook", "leave them registered"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="sets the module dicts to None",
         clause="in-place",
         source=edited(reference("remove_all_hooks"),
                       ("            getattr(module, attribute).clear()\n"
                        "        for attribute in flag_dicts:",
                        "            setattr(module, attribute, None)\n"
                        "        for attribute in flag_dicts:"),
                       ("        for attribute in flag_dicts:\n"
                        "            getattr(module, attribute).clear()",
                        "        for attribute in flag_dicts:\n"
                        "            setattr(module, attribute, None)")),
         mistake="09.remove_all_hooks.breaks-model",
         expect=["no longer runs", "dict.clear()"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="new empty dicts for modules, pops parameter hooks",
         clause="in-place",
         source=edited(reference("remove_all_hooks"),
                       ("def remove_all_hooks(model):",
                        "from collections import OrderedDict\n"
                        "\n"
                        "\n"
                        "def remove_all_hooks(model):"),
                       ("            getattr(module, attribute).clear()\n"
                        "        for attribute in flag_dicts:",
                        "            setattr(module, attribute, OrderedDict())\n"
                        "        for attribute in flag_dicts:"),
                       ("        for attribute in flag_dicts:\n"
                        "            getattr(module, attribute).clear()",
                        "        for attribute in flag_dicts:\n"
                        "            setattr(module, attribute, OrderedDict())"),
                       ("            if hooks:\n"
                        "                removed += len(hooks)\n"
                        "                hooks.clear()",
                        "            for key in list(hooks or {}):\n"
                        "                del hooks[key]\n"
                        "                removed += 1")),
         mistake="09.remove_all_hooks.rebinds-hook-dicts",
         expect=["is another object than before", "rebound the attribute", "in place"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="counts distinct functions, not registrations",
         clause="count",
         source=edited(reference("remove_all_hooks"),
                       ("removed += len(getattr(module, attribute))",
                        "removed += len(set(getattr(module, attribute).values()))")),
         mistake="09.remove_all_hooks.wrong-count",
         expect=["expected the number of hooks it removed", "one per registration"]),
    dict(exercise="remove_all_hooks", kind="right", why="model.apply, sets each parameter's dicts to new ones",
         source=_APPLY_REMOVER,
         expect=[]),
    dict(exercise="remove_all_hooks", kind="right", why="model.apply, each module's own parameters, cleared",
         source=edited(_APPLY_REMOVER, ("setattr(parameter, attribute, {})", "getattr(parameter, attribute).clear()")),
         expect=[]),
    dict(exercise="remove_all_hooks", kind="right", why="the right remover, written by the helper",
         source=edited(reference("remove_all_hooks"),
                       ("hooks = getattr(parameter, attribute, None)", "hooks = getattr(parameter, attribute)")),
         expect=[]),

    # ------------------------------------------------------------------ grad_before_inplace_relu: more clauses
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="torch.autograd.grad only, no backward",
         clause="backward-once",
         source="""
import torch


def grad_before_inplace_relu(model, layer, x):
    outputs = []

    def keep_and_clone(module, args, output):
        outputs.append(output)
        return output.clone()  # the ReLU overwrites the clone, not the layer's output

    with layer.register_forward_hook(keep_and_clone):
        score = model(x).sum()
    return torch.autograd.grad(score, outputs[0])[0]
""",
         mistake="09.grad_before_inplace_relu.no-backward",
         expect=[".grad is None", ".backward() on model(x).sum() once"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="sets every ReLU back to inplace=True",
         clause="inplace-kept",
         source="""
from torch import nn


def grad_before_inplace_relu(model, layer, x):
    relus = [module for module in model.modules() if isinstance(module, nn.ReLU)]
    grads = []
    for relu in relus:
        relu.inplace = False
    try:
        with layer.register_full_backward_hook(lambda module, grad_input, grad_output: grads.append(grad_output[0])):
            model(x.detach().requires_grad_()).sum().backward()
    finally:
        for relu in relus:
            relu.inplace = True
    return grads[0]
""",
         mistake="09.grad_before_inplace_relu.changes-inplace-settings",
         expect=["in-place settings changed", "its own value"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="guards only the forward pass",
         clause="on-backward-error",
         source="""
from torch import nn


def grad_before_inplace_relu(model, layer, x):
    relus = [module for module in model.modules() if isinstance(module, nn.ReLU) and module.inplace]
    grads = []
    handle = layer.register_full_backward_hook(lambda module, grad_input, grad_output: grads.append(grad_output[0]))
    for relu in relus:
        relu.inplace = False
    try:
        score = model(x.detach().requires_grad_()).sum()
    except Exception:
        handle.remove()
        raise
    finally:
        for relu in relus:
            relu.inplace = True
    score.backward()
    handle.remove()
    return grads[0]
""",
         mistake="09.grad_before_inplace_relu.hook-left-registered",
         expect=["raises in the backward pass", "still registered", "finally"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="sets inplace back only when nothing raised",
         clause="on-forward-error",
         source="""
from torch import nn


def grad_before_inplace_relu(model, layer, x):
    relus = [module for module in model.modules() if isinstance(module, nn.ReLU) and module.inplace]
    grads = []
    for relu in relus:
        relu.inplace = False
    with layer.register_full_backward_hook(lambda module, grad_input, grad_output: grads.append(grad_output[0])):
        model(x.detach().requires_grad_()).sum().backward()
    for relu in relus:
        relu.inplace = True
    return grads[0]
""",
         mistake="09.grad_before_inplace_relu.changes-inplace-settings",
         expect=["raises in the forward pass", "in-place settings changed", "finally"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a full backward hook on the ReLU itself",
         clause="inplace-relu",
         source="""
def grad_before_inplace_relu(model, layer, x):
    modules = list(model.modules())
    relu = modules[modules.index(layer) + 1]
    grads = []
    with relu.register_full_backward_hook(lambda module, grad_input, grad_output: grads.append(grad_input[0])):
        model(x).sum().backward()
    return grads[0]
""",
         mistake="09.grad_before_inplace_relu.full-backward-hook",
         expect=["BackwardHookFunction", "in-place relu itself", "tensor hook"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="reads output.grad without retain_grad",
         clause="tensor-shape",
         source=edited(reference("grad_before_inplace_relu"),
                       ("output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged",
                        "grads.append(output)"),
                       ("    return grads[0]\n    # Broken", "    return grads[0].grad\n    # Broken")),
         mistake="09.grad_before_inplace_relu.not-a-tensor",
         expect=["returned None", "expected the gradient"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a tensor hook on the input x",
         clause="layer-output-grad",
         source="""
def grad_before_inplace_relu(model, layer, x):
    grads = []
    x = x.detach().requires_grad_()
    x.register_hook(grads.append)
    model(x).sum().backward()
    return grads[0]
""",
         mistake="09.grad_before_inplace_relu.wrong-gradient",
         expect=["expected the gradient of model(x).sum() with respect to the layer's output"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="the gradient of the first call, cached",
         clause="layer-output-grad",
         source=edited(reference("grad_before_inplace_relu"),
                       ("def grad_before_inplace_relu(model, layer, x):",
                        "_grads = []\n"
                        "\n"
                        "\n"
                        "def grad_before_inplace_relu(model, layer, x):"),
                       ('    """\n    grads = []\n', '    """\n    grads = _grads\n')),
         mistake="09.grad_before_inplace_relu.wrong-gradient",
         expect=["expected the gradient of model(x).sum() with respect to the layer's output"]),
    dict(exercise="grad_before_inplace_relu", kind="right", why="a tensor hook that returns the grad unchanged",
         source=edited(reference("grad_before_inplace_relu"),
                       ("output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged",
                        "output.register_hook(keep)"),
                       ("    def register_tensor_hook(",
                        "    def keep(grad):\n"
                        "        grads.append(grad)\n"
                        "        return grad  # the same gradient: nothing replaced\n"
                        "\n"
                        "    def register_tensor_hook(")),
         expect=[]),

    # ------------------------------------------------------------------ find_registered_hooks: more clauses
    dict(exercise="find_registered_hooks", kind="wrong", why="skips the model itself",
         clause="root",
         source=edited(reference("find_registered_hooks"),
                       ("for name, module in model.named_modules():",
                        "for name, module in [(name, module) for name, module in model.named_modules() if name]:")),
         mistake="09.find_registered_hooks.skips-model-itself",
         expect=["registered on the model itself", "do not skip it"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="parameter hooks under the local parameter name",
         clause="parameter-name",
         source=edited(reference("find_registered_hooks"),
                       ("for name, parameter in model.named_parameters():",
                        "for name, parameter in [(local, parameter) for module in model.modules() for local, parameter in module.named_parameters(recurse=False)]:")),
         mistake="09.find_registered_hooks.wrong-name",
         expect=["under the name", "model.named_parameters() for a parameter"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="reports the handle ids, not the hooks",
         clause="hook",
         source=edited(reference("find_registered_hooks"),
                       ("found += [(name, kind, hook) for hook in getattr(module, attribute).values()]",
                        "found += [(name, kind, key) for key in getattr(module, attribute)]"),
                       ("found += [(name, kind, hook) for hook in hooks.values()]",
                        "found += [(name, kind, key) for key in hooks]")),
         mistake="09.find_registered_hooks.reports-handle-ids",
         expect=["is not a hook", "the dict's values"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="its own walk over named_children",
         clause="shared",
         source=edited(reference("find_registered_hooks"),
                       ("def find_registered_hooks(model):",
                        "def _walk(module, name):\n"
                        "    yield name, module\n"
                        "    for child_name, child in module.named_children():\n"
                        '        yield from _walk(child, f"{name}.{child_name}" if name else child_name)\n'
                        "\n"
                        "\n"
                        "def find_registered_hooks(model):"),
                       ("for name, module in model.named_modules():", 'for name, module in _walk(model, ""):')),
         mistake="09.find_registered_hooks.reports-second-name",
         expect=["under the name 'twin' too", "shared module", "named_children()"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="named_modules(remove_duplicate=False)",
         clause="shared",
         source=edited(reference("find_registered_hooks"),
                       ("for name, module in model.named_modules():",
                        "for name, module in model.named_modules(remove_duplicate=False):"),
                       ("for name, parameter in model.named_parameters():",
                        "for name, parameter in model.named_parameters(remove_duplicate=False):")),
         mistake="09.find_registered_hooks.reports-second-name",
         expect=["too", "same module", "list it once"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="returns None when nothing is registered",
         clause="empty",
         source=edited(reference("find_registered_hooks"), ("return found", "return found or None")),
         mistake="09.find_registered_hooks.not-a-list",
         expect=["a model with no hooks", "returned None", "expected a list"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="returns a dict from (name, kind) to hooks",
         clause="returns-list",
         source=edited(reference("find_registered_hooks"),
                       ("return found",
                        "grouped = {}\n"
                        "    for name, kind, hook in found:\n"
                        "        grouped.setdefault((name, kind), []).append(hook)\n"
                        "    return grouped")),
         mistake="09.find_registered_hooks.not-a-list",
         expect=["returned dict", "expected a list of (name, kind, hook) triples"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="names from named_modules(prefix='model')",
         clause="module-name",
         source=edited(reference("find_registered_hooks"),
                       ("for name, module in model.named_modules():",
                        'for name, module in model.named_modules(prefix="model"):')),
         mistake="09.find_registered_hooks.wrong-name",
         expect=["under the name 'model", "named_modules()"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="reports every global dict under the name ''",
         clause="globals",
         source=edited(reference("find_registered_hooks"),
                       ("def find_registered_hooks(model):",
                        "import torch.nn.modules.module as module_globals\n"
                        "\n"
                        "\n"
                        "def find_registered_hooks(model):"),
                       ("found += [(name, kind, hook) for hook in hooks.values()]",
                        "found += [(name, kind, hook) for hook in hooks.values()]\n"
                        "    for attribute, hooks in vars(module_globals).items():\n"
                        '        if attribute.startswith("_global_") and attribute.endswith("_hooks") and "always" not in attribute \\\n'
                        '                and "kwargs" not in attribute and "registration" not in attribute:\n'
                        '            kind = attribute[len("_global_"):-len("_hooks")]\n'
                        '            found += [("", kind, hook) for hook in hooks.values()]')),
         mistake="09.find_registered_hooks.reports-global-hooks",
         expect=["a global hook", "leave them out"]),
    dict(exercise="find_registered_hooks", kind="right", why="each module's own parameters, a tied weight once",
         source="""
def find_registered_hooks(model):
    kinds = ["forward_pre", "forward", "backward_pre", "backward", "state_dict_pre", "load_state_dict_pre",
             "load_state_dict_post"]
    found, seen = [], set()
    for module_name, module in model.named_modules():
        for kind in kinds:
            for hook in getattr(module, f"_{kind}_hooks").values():
                found.append((module_name, kind, getattr(hook, "hook", hook)))
        found.extend((module_name, "state_dict", hook) for hook in module._state_dict_hooks.values())
        for parameter_name, parameter in module.named_parameters(recurse=False):
            if id(parameter) in seen:
                continue  # a tied weight: already listed under its first name
            seen.add(id(parameter))
            full_name = f"{module_name}.{parameter_name}" if module_name else parameter_name
            for hook in (parameter._backward_hooks or {}).values():
                found.append((full_name, "tensor", hook))
            for hook in (parameter._post_accumulate_grad_hooks or {}).values():
                found.append((full_name, "post_accumulate_grad", hook))
    return found[::-1]
""",
         expect=[]),

    # ------------------------------------------------------------------ remove_all_hooks: more clauses
    dict(exercise="remove_all_hooks", kind="wrong", why="skips the model itself",
         clause="root",
         source=edited(reference("remove_all_hooks"),
                       ("for module in model.modules():",
                        "for module in [module for name, module in model.named_modules() if name]:")),
         mistake="09.remove_all_hooks.skips-model-itself",
         expect=["the model's own hooks", "model.modules() gives it first"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="forward and backward hooks only",
         clause="kinds",
         source=edited(reference("remove_all_hooks"),
                       ('"_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",\n'
                        '                    "_load_state_dict_post_hooks")',
                        "\n"
                        "                    )")),
         mistake="09.remove_all_hooks.hooks-still-fire",
         expect=["still fired", "state_dict", "ten kinds"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="clears every global dict too",
         clause="globals",
         source=edited(reference("remove_all_hooks"),
                       ("hooks.clear()",
                        "hooks.clear()\n"
                        "    import torch.nn.modules.module as module_globals\n"
                        "    for attribute, value in vars(module_globals).items():\n"
                        '        if attribute.startswith("_global_") and isinstance(value, dict) and "forward" not in attribute:\n'
                        "            value.clear()")),
         mistake="09.remove_all_hooks.removes-global-hooks",
         expect=["torch.nn.modules.module._global_", "changed", "leave them registered"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="counts first, over each module's own parameters",
         clause="count-shared",
         source="""
MODULE_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks",
                "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")
FLAG_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
PARAMETER_DICTS = ("_backward_hooks", "_post_accumulate_grad_hooks")


def remove_all_hooks(model):
    removed = 0
    for module in model.modules():
        removed += sum(len(getattr(module, attribute)) for attribute in MODULE_DICTS)
        for parameter in module.parameters(recurse=False):
            removed += sum(len(getattr(parameter, attribute) or {}) for attribute in PARAMETER_DICTS)
    for module in model.modules():
        for attribute in MODULE_DICTS + FLAG_DICTS:
            getattr(module, attribute).clear()
        for parameter in module.parameters(recurse=False):
            for attribute in PARAMETER_DICTS:
                if getattr(parameter, attribute) is not None:
                    getattr(parameter, attribute).clear()
    return removed
""",
         mistake="09.remove_all_hooks.counts-shared-twice",
         expect=["expected the number of hooks it removed", "tied weight", "count their hooks once"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="resets _is_full_backward_hook to False",
         clause="afterwards",
         source=edited(reference("remove_all_hooks"),
                       ("hooks.clear()",
                        "hooks.clear()\n"
                        "    for module in model.modules():\n"
                        "        module._is_full_backward_hook = False  # no backward hook any more")),
         mistake="09.remove_all_hooks.breaks-new-hooks",
         expect=["registering a backward hook", "must take new hooks as before"]),
    dict(exercise="remove_all_hooks", kind="right", why="pops every key of every dict",
         source="""
MODULE_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks",
                "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")
FLAG_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
PARAMETER_DICTS = ("_backward_hooks", "_post_accumulate_grad_hooks")


def _empty(hooks):
    count = 0
    while hooks:
        hooks.popitem()
        count += 1
    return count


def remove_all_hooks(model):
    removed = 0
    for module in model.modules():
        removed += sum(_empty(getattr(module, attribute)) for attribute in MODULE_DICTS)
        for attribute in FLAG_DICTS:
            _empty(getattr(module, attribute))
    for parameter in model.parameters():
        removed += sum(_empty(getattr(parameter, attribute) or {}) for attribute in PARAMETER_DICTS)
    return removed
""",
         expect=[]),

    # ------------------------------------------------------------------ more wrong ways, seen in public code
    dict(exercise="remove_all_hooks", kind="wrong", why="a recursive walk over model._modules",
         clause="root",
         source="""
MODULE_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks",
                "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")
FLAG_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")


def remove_all_hooks(model):
    removed = 0
    for name, child in model._modules.items():
        if child is not None:
            for attribute in MODULE_DICTS:
                removed += len(getattr(child, attribute))
                getattr(child, attribute).clear()
            for attribute in FLAG_DICTS:
                getattr(child, attribute).clear()
            for parameter in child.parameters(recurse=False):
                for attribute in ("_backward_hooks", "_post_accumulate_grad_hooks"):
                    hooks = getattr(parameter, attribute)
                    if hooks:
                        removed += len(hooks)
                        hooks.clear()
            removed += remove_all_hooks(child)
    return removed
""",
         mistake="09.remove_all_hooks.skips-model-itself",
         expect=["the model's own hooks", "model._modules starts below it"]),
    dict(exercise="remove_all_hooks", kind="wrong", why="counts each dict after clearing it",
         clause="count",
         source=edited(reference("remove_all_hooks"),
                       ("            removed += len(getattr(module, attribute))\n"
                        "            getattr(module, attribute).clear()",
                        "            getattr(module, attribute).clear()\n"
                        "            removed += len(getattr(module, attribute))"),
                       ("                removed += len(hooks)\n"
                        "                hooks.clear()",
                        "                hooks.clear()\n"
                        "                removed += len(hooks)")),
         mistake="09.remove_all_hooks.wrong-count",
         expect=["returned int 0", "the number of hooks it removed"]),
    dict(exercise="find_registered_hooks", kind="wrong", why="named_parameters() of every module",
         clause="per-registration",
         source="""
KINDS = {"forward_pre": "_forward_pre_hooks", "forward": "_forward_hooks", "backward_pre": "_backward_pre_hooks",
         "backward": "_backward_hooks", "state_dict_pre": "_state_dict_pre_hooks", "state_dict": "_state_dict_hooks",
         "load_state_dict_pre": "_load_state_dict_pre_hooks", "load_state_dict_post": "_load_state_dict_post_hooks"}


def find_registered_hooks(model):
    found = []
    for name, module in model.named_modules():
        for kind, attribute in KINDS.items():
            found += [(name, kind, hook) for hook in getattr(module, attribute).values()]
        for pname, parameter in module.named_parameters(prefix=name):
            for hook in (parameter._backward_hooks or {}).values():
                found.append((pname, "tensor", hook))
            for hook in (parameter._post_accumulate_grad_hooks or {}).values():
                found.append((pname, "post_accumulate_grad", hook))
    return found
""",
         mistake="09.find_registered_hooks.parameters-per-module",
         expect=["more often than they are registered", "once more for each module above it"]),
    dict(exercise="find_registered_hooks", kind="right", why="kinds made from the attribute names",
         source="""
def find_registered_hooks(model):
    found = []
    for name, module in model.named_modules():
        for attribute in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks",
                          "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                          "_load_state_dict_post_hooks"):
            kind = attribute.strip("_").removesuffix("_hooks")
            found += [(name, kind, hook) for hook in getattr(module, attribute).values()]
    for name, parameter in model.named_parameters():
        for kind, attribute in (("tensor", "_backward_hooks"), ("post_accumulate_grad", "_post_accumulate_grad_hooks")):
            found += [(name, kind, hook) for hook in (getattr(parameter, attribute) or {}).values()]
    return found
""",
         expect=[]),

    dict(exercise="grad_before_inplace_relu", kind="wrong", why="clears the layer's forward hooks in finally",
         clause="others-kept",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    layer.register_forward_hook(register_tensor_hook)\n"
                        "    try:\n"
                        "        model(x).sum().backward()\n"
                        "    finally:\n"
                        "        layer._forward_hooks.clear()\n")),
         mistake="09.grad_before_inplace_relu.removes-others-hooks",
         expect=["registered on the model before the call were gone", "only the hooks you registered"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="registers the tensor hook after the forward pass",
         clause="layer-output-grad",
         source="""
def grad_before_inplace_relu(model, layer, x):
    outputs, grads = [], []
    with layer.register_forward_hook(lambda module, args, output: outputs.append(output)):
        score = model(x).sum()
    outputs[0].register_hook(grads.append)
    score.backward()
    return grads[0]
""",
         mistake="09.grad_before_inplace_relu.gradient-after-relu",
         expect=["gradient at the output of the in-place relu", "inside a forward hook"]),
    dict(exercise="grad_before_inplace_relu", kind="right", why="a global forward hook, removed in finally",
         source=edited(reference("grad_before_inplace_relu"),
                       ("def grad_before_inplace_relu(model, layer, x):",
                        "import torch\n"
                        "\n"
                        "\n"
                        "def grad_before_inplace_relu(model, layer, x):"),
                       ("        output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged",
                        "        if module is layer:\n"
                        "            output.register_hook(grads.append)"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    handle = torch.nn.modules.module.register_module_forward_hook(register_tensor_hook)\n"
                        "    try:\n"
                        "        model(x).sum().backward()\n"
                        "    finally:\n"
                        "        handle.remove()\n")),
         expect=[]),

    dict(exercise="remove_all_hooks", kind="right", why="also resets _is_full_backward_hook to None, as Lightning does",
         source="""
MODULE_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks",
                "_state_dict_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                "_forward_hooks_always_called")


def remove_all_hooks(model):
    removed = 0
    for module in model.modules():
        for attribute in MODULE_DICTS:
            if not attribute.endswith(("kwargs", "called")):
                removed += len(getattr(module, attribute))
            getattr(module, attribute).clear()
        module._is_full_backward_hook = None  # as before any backward hook
    for parameter in model.parameters():
        for attribute in ("_backward_hooks", "_post_accumulate_grad_hooks"):
            hooks = getattr(parameter, attribute)
            if hooks is not None:
                removed += len(hooks)
                hooks.clear()
    return removed
""",
         expect=[]),
    dict(exercise="remove_all_hooks", kind="wrong", why="deletes the parameter dicts",
         clause="parameters",
         source=edited(reference("remove_all_hooks"),
                       ("                hooks.clear()", "                delattr(parameter, attribute)")),
         mistake="09.remove_all_hooks.deletes-parameter-dicts",
         expect=["deletion of _backwards_hooks not allowed"]),

    dict(exercise="find_registered_hooks", kind="wrong", why="unwraps the load pre-hooks in their dict",
         clause="unchanged",
         source=edited(reference("find_registered_hooks"),
                       ("        for kind, attribute in module_dicts.items():\n",
                        "        wrapped = module._load_state_dict_pre_hooks\n"
                        "        for key, hook in wrapped.items():\n"
                        '            wrapped[key] = getattr(hook, "hook", hook)  # store the learner\'s function itself\n'
                        "        for kind, attribute in module_dicts.items():\n")),
         mistake="09.find_registered_hooks.changes-hooks",
         expect=["changed the hooks registered", "not remove, add or replace any"]),

    dict(exercise="find_registered_hooks", kind="wrong", why="skips parameters that do not require grad",
         clause="parameters",
         source=edited(reference("find_registered_hooks"),
                       ("    for name, parameter in model.named_parameters():\n",
                        "    for name, parameter in model.named_parameters():\n"
                        "        if not parameter.requires_grad:\n"
                        "            continue  # a frozen parameter gets no gradient, so no gradient hook\n")),
         mistake="09.find_registered_hooks.skips-frozen-parameters",
         expect=["frozen (requires_grad_(false)) after that hook was registered", "whether or not it requires grad"]),
    # ---- grad_before_inplace_relu: a layer at any depth, one pass, dtype, mode and x kept
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="finds the ReLU as the next child of the model",
         clause="any-depth",
         source='''
def grad_before_inplace_relu(model, layer, x):
    children = list(model.children())
    relu = children[children.index(layer) + 1]
    relu.inplace = False
    grads = []
    try:
        with layer.register_full_backward_hook(lambda module, grad_input, grad_output: grads.append(grad_output[0])):
            model(x).sum().backward()
    finally:
        relu.inplace = True
    return grads[0]
''',
         mistake="09.grad_before_inplace_relu.assumes-layer-is-a-child",
         expect=["raised ValueError", "worked when layer was a direct child", "at any depth"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="a first pass under no_grad to learn the shape",
         clause="one-pass",
         source='''
import torch


def grad_before_inplace_relu(model, layer, x):
    shapes = []
    with torch.no_grad(), layer.register_forward_hook(lambda module, args, output: shapes.append(output.shape) and None):
        model(x)
    result = torch.zeros(shapes[0])

    def on_output(module, args, output):
        def copy(grad):
            result.copy_(grad)

        output.register_hook(copy)

    with layer.register_forward_hook(on_output):
        model(x).sum().backward()
    return result
''',
         mistake="09.grad_before_inplace_relu.extra-forward-pass",
         expect=["ran the model 2 times", "expected exactly one"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="backward with create_graph=True",
         clause="no-create-graph",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward(create_graph=True)\n")),
         mistake="09.grad_before_inplace_relu.create-graph-used",
         expect=["requires grad", "create_graph=True", "without create_graph"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="adds the gradient into a float32 zeros tensor",
         clause="tensor-dtype",
         source=edited(reference("grad_before_inplace_relu"),
                       ("def grad_before_inplace_relu(model, layer, x):",
                        "import torch\n"
                        "\n"
                        "\n"
                        "def grad_before_inplace_relu(model, layer, x):"),
                       ("output.register_hook(grads.append)  # list.append returns None: the gradient is unchanged",
                        "grads.append(torch.zeros(output.shape))\n"
                        "\n"
                        "        def add(grad):\n"
                        "            grads[0] += grad\n"
                        "\n"
                        "        output.register_hook(add)")),
         mistake="09.grad_before_inplace_relu.wrong-dtype",
         expect=["right values as float32", "float64 here", "shape and dtype"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="calls model.train() first",
         clause="mode-kept",
         source=edited(reference("grad_before_inplace_relu"),
                       ('    """\n'
                        "    grads = []\n",
                        '    """\n'
                        "    model.train()  # gradients are for training\n"
                        "    grads = []\n")),
         mistake="09.grad_before_inplace_relu.changes-train-mode",
         expect=["train/eval mode changed", "it was eval", "model.train()"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="x.requires_grad_() on the caller's x",
         clause="x-unchanged",
         source=edited(reference("grad_before_inplace_relu"),
                       ('    """\n'
                        "    grads = []\n",
                        '    """\n'
                        "    x.requires_grad_()  # so that every module's backward runs\n"
                        "    grads = []\n")),
         mistake="09.grad_before_inplace_relu.changes-input",
         expect=["caller's x was changed", "requires grad now", "x.clone().requires_grad_()"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", why="torch.autograd.grad for every parameter, .grad set by hand",
         clause="backward-once",
         source=edited(reference("grad_before_inplace_relu"),
                       ("def grad_before_inplace_relu(model, layer, x):",
                        "import torch\n"
                        "\n"
                        "\n"
                        "def grad_before_inplace_relu(model, layer, x):"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        score = model(x).sum()\n"
                        "    parameters = list(model.parameters())\n"
                        "    for parameter, grad in zip(parameters, torch.autograd.grad(score, parameters)):\n"
                        "        parameter.grad = grad\n")),
         mistake="09.grad_before_inplace_relu.differentiates-frozen-parameters",
         expect=["does not require grad"]),
    dict(exercise="grad_before_inplace_relu", kind="right", why="every ReLU off and back to its own value, full backward hook",
         source='''
from torch import nn


def grad_before_inplace_relu(model, layer, x):
    saved = {module: module.inplace for module in model.modules() if isinstance(module, nn.ReLU)}
    grads = []
    try:
        for module in saved:
            module.inplace = False
        with layer.register_full_backward_hook(
                lambda module, grad_input, grad_output: grads.append(grad_output[0].detach().clone())):
            model(x).sum().backward()
    finally:
        for module, inplace in saved.items():
            module.inplace = inplace
    return grads[0]
''',
         expect=[]),
    dict(exercise="grad_before_inplace_relu", kind="right", why="the forward hook removed before backward",
         source=edited(reference("grad_before_inplace_relu"),
                       ("    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        model(x).sum().backward()\n",
                        "    with layer.register_forward_hook(register_tensor_hook):\n"
                        "        score = model(x).sum()\n"
                        "    score.backward()  # the tensor hook outlives the forward hook\n")),
         expect=[]),
    # ---- find_registered_hooks and remove_all_hooks: a generator returned, a public cleaner
    dict(exercise="find_registered_hooks", kind="wrong", why="returns a generator of triples",
         clause="returns-list",
         source=edited(reference("find_registered_hooks"),
                       ("    found = []\n", ""),
                       ("found += [(name, kind, hook) for hook in getattr(module, attribute).values()]",
                        "for hook in getattr(module, attribute).values():\n"
                        "                yield name, kind, hook"),
                       ("found += [(name, kind, hook) for hook in hooks.values()]",
                        "for hook in hooks.values():\n"
                        "                yield name, kind, hook"),
                       ("\n    return found", "")),
         mistake="09.find_registered_hooks.iterable-not-a-list",
         expect=["returned a generator, not a list", "is not [] even when it holds nothing"]),
    dict(exercise="remove_all_hooks", kind="wrong",
         why="model.apply over three dicts, as public debugging snippets do",
         clause="kinds",
         source='''
def remove_all_hooks(model):
    removed = [0]

    def remove_hooks(module):
        for attribute in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
            hooks = getattr(module, attribute, None)
            if hooks:
                removed[0] += len(hooks)
                hooks.clear()

    model.apply(remove_hooks)
    return removed[0]
''',
         mistake="09.remove_all_hooks.hooks-still-fire",
         expect=["still in their dicts", "backward_pre", "post_accumulate_grad"]),
    dict(exercise="remove_all_hooks", kind="right", why="clears every dict whose name has hook in it, counts the *_hooks ones",
         source='''
def remove_all_hooks(model):
    removed = 0
    for module in model.modules():
        for name, value in list(vars(module).items()):
            if "hook" in name and isinstance(value, dict):
                if name.endswith("hooks"):  # the flag dicts end in _with_kwargs and _always_called
                    removed += len(value)
                value.clear()
    for parameter in model.parameters():
        for attribute in ("_backward_hooks", "_post_accumulate_grad_hooks"):
            hooks = getattr(parameter, attribute)
            if hooks is not None:
                removed += len(hooks)
                hooks.clear()
    return removed
''',
         expect=[]),
    dict(exercise="remove_all_hooks", kind="wrong", why="a removal counter kept between calls",
         clause="count",
         source=edited(reference("remove_all_hooks"),
                       ("def remove_all_hooks(model):",
                        "REMOVED = [0]  # hooks removed so far\n"
                        "\n"
                        "\n"
                        "def remove_all_hooks(model):"),
                       ("    removed = 0\n", ""),
                       ("removed += len(getattr(module, attribute))",
                        "REMOVED[0] += len(getattr(module, attribute))"),
                       ("removed += len(hooks)", "REMOVED[0] += len(hooks)"),
                       ("    return removed", "    return REMOVED[0]")),
         mistake="09.remove_all_hooks.count-kept-between-calls",
         expect=["plus the 37 of the call before", "kept between calls", "count from 0 in each call"]),
]


CLAUSES = {
    "grad_before_inplace_relu": {
        "any-depth": "`layer` is a submodule of `model` at any depth",
        "inplace-relu": "followed by `nn.ReLU(inplace=True)`",
        "one-pass": "one forward pass and one backward pass",
        "no-create-graph": "without `create_graph`",
        "tensor-dtype": "shape and dtype",
        "mode-kept": "and its train/eval mode too",
        "x-unchanged": "`x` is not changed",
        "backward-once": "Runs `model(x).sum().backward()` once, so the parameters' `.grad` hold that pass's "
                         "gradients",
        "record-only": "Your hooks only record: they replace no output and no gradient",
        "layer-output-grad": "Returns the gradient with respect to the value `layer` produced (before the ReLU "
                             "overwrote it)",
        "tensor-shape": "a tensor of the layer output's shape",
        "no-hook-left": "no hook of yours left on its modules or parameters",
        "others-kept": "hooks registered before stay",
        "no-global-hook-left": "nor a global module hook",
        "inplace-kept": "every module's `inplace` setting as it was",
        "on-forward-error": "also when the forward pass raises",
        "on-backward-error": "also when the backward pass raises",
        "exception-reaches-caller": "the exception reaches the caller",
    },
    "find_registered_hooks": {
        "root": "List every hook registered on `model`",
        "depth": "its submodules at any depth",
        "parameters": "and their parameters",
        "returns-list": "Returns a list of `(name, kind, hook)` triples",
        "per-registration": "one per registration",
        "module-name": '`name` is the module\'s name in `model.named_modules()` ("" for the model itself)',
        "parameter-name": "for a parameter's hook, the parameter's name in `model.named_parameters()`",
        "kinds": "`kind` is one of",
        "hook": "`hook` is the registered function",
        "shared": "A module or parameter reachable under two names (a shared module, tied weights) is listed "
                  "once, under the name those two methods give it",
        "globals": "Global hooks (those of `torch.nn.modules.module`) are not included",
        "empty": "A model without hooks gives []",
        "unchanged": "The model is not changed",
    },
    "remove_all_hooks": {
        "root": "Remove every hook registered on `model`",
        "depth": "its submodules at any depth",
        "parameters": "and their parameters",
        "kinds": "Removes the hooks of the ten kinds of `find_registered_hooks`",
        "in-place": "each module dict emptied in place (the same dict object, not a new one or None)",
        "flags": "clears the flag dicts",
        "count": "Returns the number of hooks removed, one per registration (flags do not count",
        "count-shared": "a module or parameter reachable under two names counts once",
        "globals": "Global hooks (those of `torch.nn.modules.module`) stay registered",
        "afterwards": "Hooks registered afterwards work as usual",
    },
}

NOT_CLAUSES = {
    "grad_before_inplace_relu": {
        "Return the gradient of `model(x).sum()` with respect to the output of `layer`.":
            "the summary line; the clause layer-output-grad says which value's gradient",
    },
    "find_registered_hooks": {
        "in any order": "a freedom, not a duty: the right entry that returns its list reversed passes",
    },
}

# predict_checkpoint_recompute: a prediction of the events a piece of code logs (hooked/checks/event_predictions.py)
from mistakes import predicted  # noqa: E402

CLAUSES["predict_checkpoint_recompute"] = {
    "events": "Return the events that `checkpoint_events` logs",
    "order": "in the order they fire",
    "names": "one of the names the cell above logs",
}
_REENTRANT = ["forward:reentrant", "fwd:first", "fwd:last", "backward:reentrant", "fwd:first", "fwd:last",
              "grad:x"]
_NON_REENTRANT = ["forward:non-reentrant", "fwd:first", "fwd:last", "backward:non-reentrant", "fwd:first",
                  "grad:x"]
ENTRIES += [
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="order", why="no recomputation in backward",
         source=predicted("predict_checkpoint_recompute", _REENTRANT[:4] + ["grad:x"] + _NON_REENTRANT[:4]
                          + ["grad:x"]),
         mistake="09.predict_checkpoint_recompute.no-recomputation",
         expect=["at index 4", "you predicted 'grad:x'", "'fwd:first' fires there",
                 "the forward hooks of its layers fire again during that recomputation"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="order", why="only the reentrant mode recomputes",
         source=predicted("predict_checkpoint_recompute", _REENTRANT + _NON_REENTRANT[:4] + ["grad:x"]),
         mistake="09.predict_checkpoint_recompute.no-recomputation",
         expect=["at index 11", "in both modes"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="order", why="the whole block again in both modes",
         source=predicted("predict_checkpoint_recompute", _REENTRANT + _NON_REENTRANT[:5] + ["fwd:last", "grad:x"]),
         mistake="09.predict_checkpoint_recompute.non-reentrant-recomputes-all",
         expect=["at index 12", "recomputation stops as soon as the last tensor that backward saved is recomputed"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="order", why="recomputation in reverse order",
         source=predicted("predict_checkpoint_recompute", _REENTRANT[:4] + ["fwd:last", "fwd:first", "grad:x"]
                          + _NON_REENTRANT),
         mistake="09.predict_checkpoint_recompute.recomputes-in-reverse",
         expect=["at index 4", "it runs the block from its start, first before last"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="events", why="only the reentrant mode",
         source=predicted("predict_checkpoint_recompute", _REENTRANT),
         mistake="09.predict_checkpoint_recompute.wrong-order",
         expect=["you predicted 7 events, but more fire", "'forward:non-reentrant' is next"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="names", why="a recompute event of its own",
         source=predicted("predict_checkpoint_recompute", _REENTRANT[:4] + ["recompute:first"] + _REENTRANT[4:]
                          + _NON_REENTRANT),
         mistake="09.predict_checkpoint_recompute.unknown-event",
         expect=["'recompute:first' at index 4, which is not an event this code logs"]),
    dict(exercise="predict_checkpoint_recompute", kind="right", why="fwd, bwd and tensor spellings",
         source=predicted("predict_checkpoint_recompute", ["fwd:reentrant", "forward:first", "FWD:last", "bwd:reentrant",
                                                            "Forward : First", "fwd:last", "tensor:x",
                                                            "fwd:Non-Reentrant", "fwd:first", "fwd:last",
                                                            "BWD:non-reentrant", "fwd:first", " grad:x "]),
         expect=[]),
]
# The adversary pass on predict_checkpoint_recompute: no hooks in the checkpointed forward, an early stop in the
# reentrant mode, a mode logged twice, a spelling that is not one the exercise gives.
ENTRIES += [
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="order", why="no hooks in the checkpointed forward",
         source=predicted("predict_checkpoint_recompute", ["forward:reentrant", "backward:reentrant", "fwd:first",
                                                            "fwd:last", "grad:x", "forward:non-reentrant",
                                                            "backward:non-reentrant", "fwd:first", "grad:x"]),
         mistake="09.predict_checkpoint_recompute.checkpoint-skips-hooks",
         expect=["at index 1", "you predicted 'backward:reentrant'",
                 "the checkpointed forward runs the block as usual"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="order", why="the reentrant mode stops early too",
         source=predicted("predict_checkpoint_recompute", _REENTRANT[:5] + _REENTRANT[6:] + _NON_REENTRANT),
         mistake="09.predict_checkpoint_recompute.reentrant-stops-early",
         expect=["at index 5", "'fwd:last' fires there", "use_reentrant=true recomputes by running the whole block"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="events", why="the reentrant forward logged twice",
         source=predicted("predict_checkpoint_recompute", _REENTRANT[:1] + _REENTRANT + _NON_REENTRANT),
         mistake="09.predict_checkpoint_recompute.event-repeated",
         expect=["at index 1", "the loop runs each mode once"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="names", why="non_reentrant with an underscore",
         source=predicted("predict_checkpoint_recompute", _REENTRANT + ["forward:non_reentrant"] + _NON_REENTRANT[1:]),
         mistake="09.predict_checkpoint_recompute.unknown-event",
         expect=["'forward:non_reentrant' at index 7, which is not an event this code logs"]),
]

# Entries that name the mistakes no entry above makes (each one a diagnosis of the check's own).
ENTRIES += [
    dict(exercise="grad_before_inplace_relu", kind="wrong", clause="layer-output-grad",
         why="the tensor hook on the model's output instead of the layer's",
         source=edited(reference("grad_before_inplace_relu"),
                       ("with layer.register_forward_hook(register_tensor_hook):",
                        "with model.register_forward_hook(register_tensor_hook):")),
         mistake="09.grad_before_inplace_relu.gradient-of-output",
         expect=["returned all ones", "the gradient of the sum with respect to the model's output"]),
    dict(exercise="grad_before_inplace_relu", kind="wrong", clause="backward-once",
         why="zeroes every parameter's .grad before backward, the frozen ones too",
         source=edited(reference("grad_before_inplace_relu"),
                       ("        model(x).sum().backward()\n    return grads[0]",
                        "        for parameter in model.parameters():\n"
                        "            parameter.grad = parameter.detach() * 0\n"
                        "        model(x).sum().backward()\n    return grads[0]")),
         mistake="09.grad_before_inplace_relu.frozen-grad-written",
         expect=["is frozen", "leaves its .grad none", "do not write .grad yourself"]),
    dict(exercise="find_registered_hooks", kind="wrong", clause="returns-list", why="reports (name, hook) pairs",
         source=edited(reference("find_registered_hooks"),
                       ("found += [(name, kind, hook) for hook in getattr(module, attribute).values()]",
                        "found += [(name, hook) for hook in getattr(module, attribute).values()]")),
         mistake="09.find_registered_hooks.not-triples",
         expect=["every item must be a triple (name, kind, hook)"]),
    dict(exercise="find_registered_hooks", kind="wrong", clause="kinds", why="the attribute names as kinds",
         source=edited(reference("find_registered_hooks"),
                       ("found += [(name, kind, hook) for hook in getattr(module, attribute).values()]",
                        "found += [(name, attribute, hook) for hook in getattr(module, attribute).values()]")),
         mistake="09.find_registered_hooks.unknown-kind",
         expect=["reported the kind(s) ['_", "the kinds are exactly"]),
    dict(exercise="find_registered_hooks", kind="wrong", clause="per-registration",
         why="a default list kept between calls",
         source=edited(reference("find_registered_hooks"),
                       ("def find_registered_hooks(model):", "def find_registered_hooks(model, found=[]):"),
                       ("    found = []\n", "")),
         mistake="09.find_registered_hooks.reports-unregistered-hooks",
         expect=["that are not registered on the model", "did you report removed hooks"]),
    dict(exercise="remove_all_hooks", kind="wrong", clause="parameters",
         why="skips the parameters that do not require grad",
         source=edited(reference("remove_all_hooks"),
                       ("    for parameter in model.parameters():\n",
                        "    for parameter in (p for p in model.parameters() if p.requires_grad):\n")),
         mistake="09.remove_all_hooks.hooks-left",
         expect=["the model still holds hooks", "heads.aux.bias"]),
]

# Every prediction exercise's own mistakes of form: no list, a string, another type, items that are no events.
ENTRIES += [
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="events", why="a missing return",
         source="def predict_checkpoint_recompute():\n    events = ['forward:reentrant', 'fwd:first', 'fwd:last']\n",
         mistake="09.predict_checkpoint_recompute.returned-none", expect=["returned None", "is the `return` missing?"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="events", why="the events joined into one string",
         source=predicted("predict_checkpoint_recompute", "forward:reentrant, fwd:first, fwd:last"),
         mistake="09.predict_checkpoint_recompute.returned-string", expect=["returned a string", "not the events joined"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="events", why="the number of events",
         source=predicted("predict_checkpoint_recompute", 6),
         mistake="09.predict_checkpoint_recompute.not-a-list", expect=["returned an int", "return a list (or a tuple)"]),
    dict(exercise="predict_checkpoint_recompute", kind="wrong", clause="names", why="event numbers instead of names",
         source=predicted("predict_checkpoint_recompute", [0, 1, 2]),
         mistake="09.predict_checkpoint_recompute.not-event-names", expect=["item 0 is int 0", "not an event name"]),
]
