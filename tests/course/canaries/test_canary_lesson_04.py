"""Canaries of lesson 04 (forward hooks): always_call, when hooks fire, its traps, the error texts its cells
assert, and the gradients of the clamps of "Changing outputs" (torch.clamp's on a bound changed in torch 2.14)."""

import torch
import torch.nn.functional as F
from torch import nn

from canary_pins import canary, described, error_of, on_this_torch

_CHANGING_OUTPUTS = ("04", "Changing outputs")
_CLAMP_OUTPUT = ("04", "Exercise 3: `clamp_output`")

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
        ("09", "Pitfall 3: storing outputs without `detach()` keeps the graph alive"),
        ("04", "Exercise 1: `capture_activations`"))
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
        ("09", "Pitfall 2: `detach()` shares memory; `clone()` copies"),
        ("04", "Exercise 1: `capture_activations`"), ("06", "Exercise 1: `get_activation`"),
        ("12", "Exercise 1: `run_with_cache`"))
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


@canary("named_modules() lists a module reachable under two names once, under its first name; "
        "named_modules(remove_duplicate=False) and state_dict() list both names, and get_submodule() takes either; "
        "two modules tied to one weight are both listed while named_parameters() lists the weight once; children() "
        "lists the top level only; a hook defined in a loop that reads the loop variable sees its last value when it "
        "runs",
        ("04", "Finding layers by name"), ("04", "Exercise 1: `capture_activations`"),
        ("04", "Exercise 2: `track_relu_stats`"), ("12", "Exercise 1: `run_with_cache`"),
        ("12", "Exercise 2: `run_with_hooks`"))
def test_named_modules_lists_a_reused_module_once_and_a_loop_hook_sees_the_last_name(pin):
    reused = nn.Linear(3, 3)
    twice = nn.Sequential(reused, nn.Tanh(), reused)
    once = [name for name, _ in twice.named_modules()]
    every = [name for name, _ in twice.named_modules(remove_duplicate=False)]
    pin.holds(once == ["", "0", "1"] and every == ["", "0", "1", "2"], f"named_modules(): {once}, with "
              f"remove_duplicate=False: {every}")
    pin.holds(twice.get_submodule("2") is twice.get_submodule("0") is reused
              and list(twice.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"],
              f"get_submodule('2') is the reused layer: {twice.get_submodule('2') is reused}; state_dict(): "
              f"{list(twice.state_dict())}")
    encoder, decoder = nn.Linear(3, 3), nn.Linear(3, 3)
    decoder.weight = encoder.weight
    tied = nn.Sequential(encoder, decoder)
    modules, parameters = [n for n, _ in tied.named_modules()], [n for n, _ in tied.named_parameters()]
    pin.holds(modules == ["", "0", "1"] and parameters == ["0.weight", "0.bias", "1.bias"],
              f"tied weights: named_modules() {modules}, named_parameters() {parameters}")
    children = list(nn.Sequential(nn.Sequential(nn.Linear(2, 2)), nn.ReLU()).children())
    pin.holds([type(child).__name__ for child in children] == ["Sequential", "ReLU"],
              f"children() of a nested Sequential: {children}")
    net, late = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)), {}
    for name, module in net.named_children():
        def late_hook(module, args, output):
            late[name] = output  # noqa: B023  (the lesson's trap: `name` is read when the hook runs)
        module.register_forward_hook(late_hook)
    net(torch.randn(1, 2))
    pin.holds(list(late) == ["1"], f"the loop's hooks stored under {list(late)}")


_T = [-2.0, -1.0, 0.3, 1.0, 2.0]


def _clamp_gradients():
    """The gradient of each clamp of "Changing outputs" for t = _T clamped to [-1, 1]."""
    t = torch.tensor(_T, requires_grad=True)
    low, high = torch.tensor(-1.0), torch.tensor(1.0)
    clamps = {
        "number bounds": t.clamp(-1, 1),
        "tensor bounds": t.clamp(low, high),
        "F.hardtanh": F.hardtanh(t, -1, 1),
        "maximum/minimum": torch.minimum(torch.maximum(t, low), high),
        "where <= >=": torch.where(t <= -1, -1.0, torch.where(t >= 1, 1.0, t)),
        "where < >": torch.where(t < -1, -1.0, torch.where(t > 1, 1.0, t)),
    }
    return {name: torch.autograd.grad(value.sum(), t)[0].tolist() for name, value in clamps.items()}


@canary("for t = [-2, -1, 0.3, 1, 2] clamped to [-1, 1], torch.clamp's gradient exactly on a bound changed: until "
        "torch 2.13 [0, 1, 1, 1, 0] with number or tensor bounds; from torch 2.14 [0, 0, 1, 0, 0] with number bounds "
        "and [0, 0.5, 1, 0.5, 0] with tensor bounds (pytorch/pytorch#184572, #184574); on every torch F.hardtanh "
        "and torch.where with <= and >= give [0, 0, 1, 0, 0], torch.maximum/minimum [0, 0.5, 1, 0.5, 0] and "
        "torch.where with < and > [0, 1, 1, 1, 0]",
        _CHANGING_OUTPUTS, _CLAMP_OUTPUT)
def test_the_gradient_of_a_clamp_on_its_bounds(pin):
    on_bound = on_this_torch({"2.13": {"number bounds": [0.0, 1.0, 1.0, 1.0, 0.0],
                                       "tensor bounds": [0.0, 1.0, 1.0, 1.0, 0.0]},
                              "2.14": {"number bounds": [0.0, 0.0, 1.0, 0.0, 0.0],
                                       "tensor bounds": [0.0, 0.5, 1.0, 0.5, 0.0]}})
    expected = {**on_bound, "F.hardtanh": [0.0, 0.0, 1.0, 0.0, 0.0], "maximum/minimum": [0.0, 0.5, 1.0, 0.5, 0.0],
                "where <= >=": [0.0, 0.0, 1.0, 0.0, 0.0], "where < >": [0.0, 1.0, 1.0, 1.0, 0.0]}
    gradients = _clamp_gradients()
    pin.holds(gradients == expected, f"the gradients: {gradients}")


@canary("a Linear(4, 3) given 5 features raises RuntimeError with 'mat1 and mat2 shapes cannot be multiplied' in its "
        "text",
        ("04", "Finding layers by name"))
def test_a_linear_given_the_wrong_width_raises_mat1_and_mat2(pin):
    error = error_of(lambda: nn.Linear(4, 3)(torch.randn(2, 5)))
    pin.holds(isinstance(error, RuntimeError) and "mat1 and mat2 shapes cannot be multiplied" in str(error),
              described(error))


@canary("backward() from an output with no grad_fn raises RuntimeError with 'element 0 of tensors does not require "
        "grad and does not have a grad_fn' in its text",
        _CHANGING_OUTPUTS)
def test_backward_from_a_cut_output_raises_element_0(pin):
    with torch.no_grad():
        cut = nn.Linear(3, 4)(torch.randn(2, 3))
    error = error_of(lambda: cut.sum().backward())
    pin.holds(isinstance(error, RuntimeError)
              and "element 0 of tensors does not require grad and does not have a grad_fn" in str(error),
              described(error))
