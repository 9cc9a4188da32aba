"""The hooks registered anywhere on a model, and globally: what a check looks at to tell that
learner code removed every hook it registered, and only those."""

from hooked.checks.isolation import GLOBAL_MODULE_HOOK_DICTS

# kind -> the attribute of a module (or parameter) that holds hooks of that kind
MODULE_HOOK_DICTS = {"forward_pre": "_forward_pre_hooks", "forward": "_forward_hooks",
                     "backward_pre": "_backward_pre_hooks", "backward": "_backward_hooks",
                     "state_dict_pre": "_state_dict_pre_hooks", "state_dict": "_state_dict_hooks",
                     "load_state_dict_pre": "_load_state_dict_pre_hooks",
                     "load_state_dict_post": "_load_state_dict_post_hooks"}
PARAMETER_HOOK_DICTS = {"tensor": "_backward_hooks", "post_accumulate_grad": "_post_accumulate_grad_hooks"}
CALL_HOOK_KINDS = ("forward_pre", "forward", "backward_pre", "backward")  # the ones a module's call fires

# The global module hooks by dict name (register_module_forward_hook fills "_global_forward_hooks"):
# the isolation's own list, less the dicts of flags (_global_forward_hooks_with_kwargs, ...).
GLOBAL_MODULE_HOOKS = {name: hooks for name, hooks in GLOBAL_MODULE_HOOK_DICTS.items() if name.endswith("_hooks")}


def registered_hooks(model, kinds=(*MODULE_HOOK_DICTS, *PARAMETER_HOOK_DICTS)):
    """[(name, kind, hook)] of every hook of `kinds` on `model`'s modules and parameters."""
    found = []
    for name, module in model.named_modules():
        for kind in kinds:
            if kind in MODULE_HOOK_DICTS:
                found += [(name, kind, hook) for hook in getattr(module, MODULE_HOOK_DICTS[kind]).values()]
    for name, parameter in model.named_parameters():
        for kind in kinds:
            if kind in PARAMETER_HOOK_DICTS:
                hooks = getattr(parameter, PARAMETER_HOOK_DICTS[kind], None) or {}
                found += [(name, kind, hook) for hook in hooks.values()]
    return found


def modules_with_hooks(model, kinds=CALL_HOOK_KINDS, remove_duplicate=True):
    """The names of `model`'s modules that hold a hook of `kinds` ("" is the model itself)."""
    return [name for name, module in model.named_modules(remove_duplicate=remove_duplicate)
            if any(getattr(module, MODULE_HOOK_DICTS[kind]) for kind in kinds)]


def global_hooks():
    """{(dict name, hook id)} of the global module hooks registered now."""
    return {(name, key) for name, hooks in GLOBAL_MODULE_HOOKS.items() for key in hooks}


def global_hooks_added(before):
    """The names of the global hook dicts that hold a hook not in `before` (from global_hooks())."""
    return sorted({name for name, _ in global_hooks() - before})


def global_hook_registrar(name):
    """The function of torch.nn.modules.module that fills the global hook dict `name`:
    "_global_backward_hooks" -> "register_module_full_backward_hook"."""
    kind = name.removeprefix("_global_").removesuffix("_hooks")
    return f"register_module_{'full_' if kind.startswith('backward') else ''}{kind}_hook"
