"""Canaries of lesson 02 (removing hooks): the leaks it shows."""

import torch
import torch.nn.functional as F
from torch import nn

from canary_pins import canary


@canary("a hook whose handle.remove() is skipped by an exception stays registered and keeps firing "
        "(F.cross_entropy raises IndexError 'Target 5 is out of bounds' for 2 classes)",
        ("02", "What an exception does without cleanup"),
        ("02", "Exercise 1: `grad_with_temporary_hook`"), ("06", "Exercise 1: `get_activation`"))
def test_a_hook_left_by_an_exception_keeps_firing(pin):
    layer, calls = nn.Linear(4, 2), []
    handle = layer.register_forward_hook(lambda module, args, output: calls.append(1))
    try:
        F.cross_entropy(layer(torch.randn(1, 4)), torch.tensor([5]))
        handle.remove()
        error = None
    except IndexError as raised:
        error = raised
    pin.holds(error is not None and "Target 5 is out of bounds" in str(error), f"the loss raised {error!r}")
    calls.clear()
    layer(torch.randn(1, 4))
    pin.holds(len(layer._forward_hooks) == 1 and calls == [1], f"{len(layer._forward_hooks)} hooks left, "
              f"{len(calls)} firings")


@canary("registering the same hook three times (a cell run three times) makes it fire three times per forward "
        "pass, and the last handle removes only the last registration",
        ("02", "The notebook pitfall: re-running a cell stacks hooks"),
        ("09", "Pitfall 4: a re-run cell stacks hooks"))
def test_a_hook_registered_three_times_fires_three_times(pin):
    layer, calls = nn.Linear(2, 2), []
    for run in range(3):
        handle = layer.register_forward_hook(lambda module, args, output: calls.append(1))
    layer(torch.randn(1, 2))
    pin.holds(len(calls) == 3, f"{len(calls)} firings in one forward pass")
    handle.remove()
    calls.clear()
    layer(torch.randn(1, 2))
    pin.holds(len(calls) == 2, f"after the last handle's remove(): {len(calls)} firings")


@canary("a handle is a context manager: the hook is removed when the with-block ends, also when an exception leaves "
        "it, and the exception still reaches the caller",
        ("02", "A handle is a context manager"))
def test_a_handle_used_as_a_context_manager_removes_its_hook_even_on_an_exception(pin):
    layer, calls = nn.Linear(2, 2), []
    with layer.register_forward_hook(lambda module, args, output: calls.append(1)):
        layer(torch.randn(1, 2))
    pin.holds(len(layer._forward_hooks) == 0 and calls == [1], f"after the block: {len(layer._forward_hooks)} hooks")
    arrived = None
    try:
        with layer.register_forward_hook(lambda module, args, output: calls.append(1)):
            raise ValueError("something failed inside the block")
    except ValueError as error:
        arrived = error
    pin.holds(arrived is not None and len(layer._forward_hooks) == 0,
              f"after a failed block: the exception arrived {arrived is not None}, {len(layer._forward_hooks)} hooks")
