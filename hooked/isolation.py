"""Save and restore the global state torch keeps, so that one learner's code
cannot change how the next check or lesson behaves."""

import contextlib
import random
import sys

import torch
import torch.nn.modules.module as module_globals
import torch.optim.optimizer as optimizer_globals

# Every dict in which torch keeps hooks registered for all modules or optimizers.
_GLOBAL_HOOK_DICTS = [
    getattr(module_globals, name) for name in sorted(dir(module_globals))
    if name.startswith("_global_") and isinstance(getattr(module_globals, name), dict)
] + [
    getattr(optimizer_globals, name) for name in sorted(dir(optimizer_globals))
    if name.startswith("_global_") and isinstance(getattr(optimizer_globals, name), dict)
]


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
        "hooks": [dict(hooks) for hooks in _GLOBAL_HOOK_DICTS],
    }


def _restore(state):
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
    for hooks, saved in zip(_GLOBAL_HOOK_DICTS, state["hooks"]):
        hooks.clear()
        hooks.update(saved)


@contextlib.contextmanager
def torch_state_restored():
    """Whatever the block does to torch's global state is undone on exit."""
    state = _snapshot()
    try:
        yield
    finally:
        _restore(state)
