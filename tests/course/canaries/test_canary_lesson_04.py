"""Canaries of lesson 04 (forward hooks): always_call, when hooks fire, and its two traps."""

import torch
from torch import nn

from canary_pins import canary

_SHARED_MODULE = ("a module called twice in one forward pass fires its hooks twice, so a dict keyed by name "
                  "keeps only the second call")


class _Fails(nn.Module):
    def forward(self, x):
        raise ValueError("forward failed on purpose")


class _Doubler(nn.Module):
    def forward(self, x):
        return 2 * x


@canary("when forward raises, only a hook registered with always_call=True runs, with output=None, and what it "
        "returns is ignored (the caller gets the exception); when forward succeeds, its return replaces the output",
        ("04", "`always_call=True`: a hook that runs even when `forward` raises"))
def test_an_always_call_hook_runs_with_none_when_forward_raises(pin):
    fails, calls = _Fails(), []
    fails.register_forward_hook(lambda module, args, output: calls.append(("plain", output)))
    fails.register_forward_hook(lambda module, args, output: calls.append(("always_call", output)) or torch.zeros(1),
                                always_call=True)
    try:
        outcome = fails(torch.ones(1))
    except ValueError as error:
        outcome = error
    pin.holds(isinstance(outcome, ValueError), f"the call gave {outcome!r}")
    pin.holds(calls == [("always_call", None)], f"hooks that ran: {calls}")
    doubler = _Doubler()
    doubler.register_forward_hook(lambda module, args, output: output + 1, always_call=True)
    pin.holds(torch.equal(doubler(torch.ones(2)), torch.full((2,), 3.0)), "an always_call hook's return no longer "
              "replaces the output of a forward that succeeds")


@canary("forward hooks fire under torch.no_grad() and in eval() mode, and module.forward(x) skips them",
        ("04", "When hooks fire, and when they don't"),
        ("09", "Pitfall 5: `module.forward(x)` skips every hook"))
def test_forward_hooks_fire_under_no_grad_and_eval_but_not_through_forward(pin):
    layer, fired = nn.Linear(3, 2), []
    layer.register_forward_hook(lambda module, args, output: fired.append(output.requires_grad))
    x = torch.randn(1, 3)
    layer(x)
    with torch.no_grad():
        layer(x)
    layer.eval()
    layer(x)
    pin.holds(fired == [True, False, True], f"output.requires_grad in the hook for layer(x), under no_grad, in "
              f"eval(): {fired}")
    layer.forward(x)
    pin.holds(len(fired) == 3, "module.forward(x) fired the hook")


@canary(_SHARED_MODULE, ("04", "When hooks fire, and when they don't"),
        ("09", "Pitfall 7: a module used twice fires its hooks twice"))
def test_a_module_called_twice_fires_its_hooks_twice(pin):
    shared, every = nn.Linear(3, 3), []
    shared.register_forward_hook(lambda module, args, output: every.append(output))
    shared(shared(torch.randn(2, 3)).relu())
    pin.holds(len(every) == 2, f"{len(every)} firings for two calls")


@canary("a stored output computed with gradients on keeps its autograd graph, with the tensors saved for "
        "backward (Addmm, Relu, T, Addmm, T, ... reachable from its grad_fn); detach() drops it",
        ("04", "Trap 1: storing outputs without `detach()` keeps the graph alive"),
        ("09", "Pitfall 3: storing outputs without `detach()` keeps the graph alive"))
def test_a_stored_output_keeps_the_graph_and_its_saved_tensors(pin):
    small = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    out = small(torch.randn(5, 3))
    node, names = out.grad_fn, []
    todo = [node]
    while todo:
        node = todo.pop(0)
        if node is not None and type(node).__name__ != "AccumulateGrad":
            names.append(type(node).__name__)
            todo += [next_node for next_node, _ in node.next_functions]
    pin.holds(names[:4] == ["AddmmBackward0", "ReluBackward0", "TBackward0", "AddmmBackward0"],
              f"nodes reachable from the output's grad_fn: {names}")
    saved = [name for name in dir(out.grad_fn.next_functions[1][0]) if name.startswith("_saved_")]
    pin.holds(saved == ["_saved_result"], f"the ReLU node's saved attributes: {saved}")
    pin.holds(out.detach().grad_fn is None, "detach() kept a grad_fn")


@canary("output.detach() shares the output's memory, so a later in-place ReLU zeroes the stored negatives; "
        "detach().clone() keeps them",
        ("04", "Trap 2: `detach()` alone shares memory with the output"),
        ("06", "`detach()` alone is overwritten by the in-place ReLU"),
        ("09", "Pitfall 2: `detach()` shares memory; `clone()` copies"))
def test_a_detached_output_is_overwritten_by_a_later_in_place_relu(pin):
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True))
    stored = {}
    net[0].register_forward_hook(lambda module, args, output: stored.update(
        detached=output.detach(), cloned=output.detach().clone(), pointer=output.data_ptr()))
    net(torch.randn(3, 4))
    pin.holds(stored["detached"].data_ptr() == stored["pointer"], "detach() no longer shares the output's memory")
    pin.holds(stored["detached"].min() == 0 and stored["cloned"].min() < 0,
              f"min of detach() {stored['detached'].min():.4f}, of detach().clone() {stored['cloned'].min():.4f}")
