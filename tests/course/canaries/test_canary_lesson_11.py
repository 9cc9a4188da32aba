"""Canaries of lesson 11 (the training monitor): which hook sees which gradient under accumulation."""

import warnings

import torch
from torch import nn

from canary_pins import canary, described, error_of


@canary("with gradient accumulation (backward twice without zeroing) a tensor hook on a parameter sees each "
        "backward's own gradient, before .grad is written, while a post-accumulate-grad hook sees .grad, the running "
        "sum",
        ("11", "Gradient norms: which hook, and when"),
        ("11", "Exercise 2: `track_grad_norms`"))
def test_a_post_accumulate_hook_sees_the_running_sum_and_a_tensor_hook_each_gradient(pin):
    weight = nn.Parameter(torch.tensor([3.0, 4.0]))
    own, accumulated = [], []
    weight.register_hook(lambda grad: own.append(grad.clone()))
    weight.register_post_accumulate_grad_hook(lambda parameter: accumulated.append(parameter.grad.clone()))
    for factor in (1.0, 2.0):
        (factor * weight).sum().backward()
    pin.holds([g.tolist() for g in own] == [[1.0, 1.0], [2.0, 2.0]], f"the tensor hook saw {own}")
    pin.holds([g.tolist() for g in accumulated] == [[1.0, 1.0], [3.0, 3.0]], f"the post-accumulate hook saw {accumulated}")


@canary("nn.LSTM returns a tuple (output, (h_n, c_n)), and a forward hook that calls output.detach() on it raises "
        "inside the module's call ('tuple' object has no attribute 'detach')",
        ("11", "Outputs that are not a tensor"),
        ("11", "Exercise 1: `record_activation_stats`"), ("11", "Exercise 3: `TrainingMonitor`"))
def test_an_lstm_returns_a_tuple_that_a_tensor_hook_cannot_detach(pin):
    lstm = nn.LSTM(input_size=3, hidden_size=4, batch_first=True)
    result = lstm(torch.randn(2, 5, 3))
    pin.holds(isinstance(result, tuple) and list(result[0].shape) == [2, 5, 4]
              and [list(state.shape) for state in result[1]] == [[1, 2, 4]] * 2,
              f"nn.LSTM returned {type(result).__name__}")
    lstm.register_forward_hook(lambda module, args, output: output.detach())
    error = error_of(lambda: lstm(torch.randn(2, 5, 3)))
    pin.holds(isinstance(error, AttributeError) and "'tuple' object has no attribute 'detach'" in str(error),
              described(error))


@canary("backward(create_graph=True) through a parameter's tensor hook warns of a reference cycle, with 'to None "
        "after use to break the cycle' in its text, and grad.norm() in the hook requires grad",
        ("11", "Gradient norms: which hook, and when"))
def test_create_graph_through_a_parameter_warns_of_a_reference_cycle(pin):
    cube, norms = nn.Parameter(torch.tensor([1.0, 2.0])), []
    cube.register_hook(lambda grad: norms.append(grad.norm()))
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # torch gives this warning once per process: an earlier test may have had it
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (cube ** 3).sum().backward(create_graph=True)
    finally:
        torch.set_warn_always(warn_always)
    cube.grad = None  # breaks the cycle
    messages = [str(w.message) for w in caught]
    pin.holds(any("reference cycle" in m and "to None after use to break the cycle" in m for m in messages),
              f"warnings: {messages}")
    pin.holds(norms[0].requires_grad, "grad.norm() in the hook does not require grad")
