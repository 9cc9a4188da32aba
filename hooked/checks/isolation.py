"""Save and restore the global state torch keeps, so that one learner's code
cannot change how the next check or lesson behaves: modes and defaults, random
state, global hooks, entered-but-never-exited contexts (saved-tensor hooks,
torch function and dispatch modes), and attributes replaced on torch's main
modules and classes (a monkeypatched `torch.allclose` or `Tensor.register_hook`).
The grader wraps every check and a lesson's cells in it; a check that runs another
check (lesson 11's) does too."""

import contextlib
import random
import sys

import torch
import torch.autograd
import torch.nn.functional
import torch.nn.modules.module as module_globals
import torch.optim.optimizer as optimizer_globals


def _global_dicts(namespace):
    return {name: getattr(namespace, name) for name in sorted(dir(namespace))
            if name.startswith("_global_") and isinstance(getattr(namespace, name), dict)}


# Every dict in which torch keeps hooks registered for all modules or optimizers, by its name in
# torch.nn.modules.module ("_global_forward_hooks") or torch.optim.optimizer; the checks look in
# these same dicts for global hooks that learner code left behind.
GLOBAL_MODULE_HOOK_DICTS = _global_dicts(module_globals)
GLOBAL_OPTIMIZER_HOOK_DICTS = _global_dicts(optimizer_globals)
GLOBAL_HOOK_DICTS = [*GLOBAL_MODULE_HOOK_DICTS.values(), *GLOBAL_OPTIMIZER_HOOK_DICTS.values()]


# Namespaces whose attributes learner code might replace; restored by identity.
_PATCHABLE = [torch, torch.Tensor, torch.nn, torch.nn.Module, torch.nn.functional, torch.autograd]


def _pop_until(length, current_length, pop):
    while current_length() > length:
        pop()


def _saved_tensors_hooks_depth():
    """How many saved_tensors_hooks contexts are entered (torch keeps a stack)."""
    popped = []
    while torch._C._autograd._top_saved_tensors_default_hooks(True) is not None:
        popped.append(torch._C._autograd._top_saved_tensors_default_hooks(True))
        torch._C._autograd._pop_saved_tensors_default_hooks()
    for pack, unpack in reversed(popped):
        torch._C._autograd._push_saved_tensors_default_hooks(pack, unpack)
    return len(popped)


def _snapshot():
    numpy = sys.modules.get("numpy")
    return {
        "grad_enabled": torch.is_grad_enabled(),
        "default_dtype": torch.get_default_dtype(),
        "default_device": torch.get_default_device(),
        "anomaly": (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "num_threads": torch.get_num_threads(),
        "torch_rng": torch.get_rng_state(),
        "python_rng": random.getstate(),
        "numpy_rng": numpy.random.get_state() if numpy is not None else None,
        "hooks": [dict(hooks) for hooks in GLOBAL_HOOK_DICTS],
        # Which kind of global backward hook (full or legacy) is in use; once set, the other kind raises.
        "global_backward_kind": module_globals._global_is_full_backward_hook,
        "attributes": [dict(vars(namespace)) for namespace in _PATCHABLE],
        "function_modes": torch._C._len_torch_function_stack(),
        "dispatch_modes": torch._C._len_torch_dispatch_stack(),
        "saved_tensors_hooks": _saved_tensors_hooks_depth(),
        "recursion_limit": sys.getrecursionlimit(),
    }


def _restore(state):
    # Modes and patched attributes first: the calls below go through them.
    _pop_until(state["function_modes"], torch._C._len_torch_function_stack, torch._C._pop_torch_function_stack)
    _pop_until(state["dispatch_modes"], torch._C._len_torch_dispatch_stack, torch._C._pop_torch_dispatch_stack)
    _pop_until(state["saved_tensors_hooks"], _saved_tensors_hooks_depth,
               torch._C._autograd._pop_saved_tensors_default_hooks)
    for namespace, saved in zip(_PATCHABLE, state["attributes"]):
        _restore_attributes(namespace, saved)
    torch.set_grad_enabled(state["grad_enabled"])
    torch.set_default_dtype(state["default_dtype"])
    if torch.get_default_device() != state["default_device"]:
        torch.set_default_device(state["default_device"])
    torch.set_anomaly_enabled(*state["anomaly"])
    if torch.are_deterministic_algorithms_enabled() != state["deterministic"]:
        torch.use_deterministic_algorithms(state["deterministic"])
    if torch.get_num_threads() != state["num_threads"]:
        torch.set_num_threads(state["num_threads"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(state["python_rng"])
    numpy = sys.modules.get("numpy")
    if numpy is not None and state["numpy_rng"] is not None:
        numpy.random.set_state(state["numpy_rng"])
    for hooks, saved in zip(GLOBAL_HOOK_DICTS, state["hooks"]):
        hooks.clear()
        hooks.update(saved)
    module_globals._global_is_full_backward_hook = state["global_backward_kind"]
    sys.setrecursionlimit(state["recursion_limit"])


def _restore_attributes(namespace, saved):
    current = vars(namespace)
    for name in [name for name in current if name not in saved]:
        delattr(namespace, name)
    for name, value in saved.items():
        if current.get(name) is not value:
            setattr(namespace, name, value)


@contextlib.contextmanager
def torch_state_restored():
    """Whatever the block does to torch's global state is undone on exit."""
    state = _snapshot()
    try:
        yield
    finally:
        _restore(state)
