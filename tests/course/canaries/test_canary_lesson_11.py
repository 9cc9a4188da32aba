"""Canaries of lesson 11 (the training monitor): which hook sees which gradient under accumulation."""

import torch
from torch import nn

from canary_pins import canary


@canary("with gradient accumulation (backward twice without zeroing) a tensor hook on a parameter sees each "
        "backward's own gradient, before .grad is written, while a post-accumulate-grad hook sees .grad, the running "
        "sum",
        ("11", "Gradient norms: which hook, and when"))
def test_a_post_accumulate_hook_sees_the_running_sum_and_a_tensor_hook_each_gradient(pin):
    weight = nn.Parameter(torch.tensor([3.0, 4.0]))
    own, accumulated = [], []
    weight.register_hook(lambda grad: own.append(grad.clone()))
    weight.register_post_accumulate_grad_hook(lambda parameter: accumulated.append(parameter.grad.clone()))
    for factor in (1.0, 2.0):
        (factor * weight).sum().backward()
    pin.holds([g.tolist() for g in own] == [[1.0, 1.0], [2.0, 2.0]], f"the tensor hook saw {own}")
    pin.holds([g.tolist() for g in accumulated] == [[1.0, 1.0], [3.0, 3.0]], f"the post-accumulate hook saw {accumulated}")
