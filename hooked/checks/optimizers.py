"""Optimizers for checks that need one, without the cost of torch's own.

A torch.optim optimizer imports torch._dynamo (about 1 s, as long as `import torch`) the
first time it adds a parameter group or takes a step, only to mark those methods as
not-to-be-compiled. Grading never compiles, so the grading worker calls
`skip_dynamo_import_in_optimizers_for_good` once (a notebook, for each check only:
`skip_dynamo_import_in_optimizers_for_the_block`), and checks use `PlainSGD`, a real
`torch.optim.Optimizer` (with its step pre- and post-hooks) whose step needs no dynamo."""

import contextlib

import torch
from torch.optim import Optimizer

# Optimizer methods wrapped by torch._disable_dynamo, which imports torch._dynamo on first call.
_DYNAMO_DISABLED_METHODS = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def skip_dynamo_import_in_optimizers_for_good():
    """Let these methods run as they are instead of importing torch._dynamo to wrap them, from
    now on in this process (the grading worker's). Outside torch.compile the wrapper only calls
    the method, so behaviour is unchanged."""
    for name in _DYNAMO_DISABLED_METHODS:
        method = getattr(Optimizer, name).__wrapped__
        method.__dynamo_disable = method  # torch._compile caches the wrapper under this name


@contextlib.contextmanager
def skip_dynamo_import_in_optimizers_for_the_block():
    """What skip_dynamo_import_in_optimizers_for_good does, undone when the block ends (each
    method's cached wrapper as it was): in a notebook the learner's own optimizers may run
    under torch.compile, where the wrapper matters."""
    missing = object()
    methods = [getattr(Optimizer, name).__wrapped__ for name in _DYNAMO_DISABLED_METHODS]
    before = [method.__dict__.get("__dynamo_disable", missing) for method in methods]
    skip_dynamo_import_in_optimizers_for_good()
    try:
        yield
    finally:
        for method, value in zip(methods, before):
            if value is missing:
                method.__dict__.pop("__dynamo_disable", None)
            else:
                method.__dynamo_disable = value


class PlainSGD(Optimizer):
    """Stochastic gradient descent, p <- p - lr * direction(p.grad), nothing else (no momentum).
    A subclass that overrides `direction` is another optimizer with the same machinery."""

    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @staticmethod
    def direction(grad):
        return grad

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for parameter in group["params"]:
                if parameter.grad is not None:
                    parameter.add_(self.direction(parameter.grad), alpha=-group["lr"])
