"""Canaries of lesson 03 (forward pre-hooks): its trap."""

import torch
from torch import nn

from canary_pins import canary, described, error_of


@canary("args[0] in a forward pre-hook is the caller's own tensor: an in-place edit changes the caller's batch, "
        "and on a leaf that requires grad raises 'a leaf Variable that requires grad is being used in an "
        "in-place operation.'",
        ("03", "Trap: changing the caller's tensor in place"))
def test_a_pre_hook_edits_the_callers_tensor_in_place(pin):
    def double_in_place(module, args):
        args[0].mul_(2)

    layer = nn.Identity()
    layer.register_forward_pre_hook(double_in_place)
    batch = torch.tensor([1.0, 2.0, 3.0])
    layer(batch)
    pin.holds(torch.equal(batch, torch.tensor([2.0, 4.0, 6.0])), f"the caller's batch is {batch.tolist()} after one "
              "call (the lesson shows it doubled)")
    error = error_of(lambda: layer(torch.ones(3, requires_grad=True)))
    pin.holds(isinstance(error, RuntimeError) and str(error) == "a leaf Variable that requires grad is being used "
              "in an in-place operation.", described(error))
