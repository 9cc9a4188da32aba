"""The site's hooks cheat sheet (website/cheatsheet.yml, read by website/cheatsheet.py) shown by
running code: for every row, when the hook fires and what its return value does, on the installed torch.

One small test per claim, grouped in the order of the cheat sheet's rows. Each test registers
its hooks on fresh tensors, modules or optimizers and removes global hooks in `finally`."""

import warnings

import pytest
import torch
from torch import nn
from torch.autograd import graph
from torch.nn.modules import module as global_hooks
from torch.optim import optimizer as global_optimizer_hooks


def _leaf(*values):
    return torch.tensor(values, requires_grad=True)


class _Twice(nn.Module):
    def forward(self, x):
        return x * 2


class _AddTwo(nn.Module):
    """Two positional inputs, two ops (x * 3, then + y): enough to tell module from last op."""

    def forward(self, x, y):
        return x * 3 + y


# --- the page's prose around the table

def test_hooks_of_one_kind_run_in_registration_order_unless_prepended():
    m, order = _Twice(), []
    m.register_forward_hook(lambda module, args, output: order.append("first"))
    m.register_forward_hook(lambda module, args, output: order.append("second"))
    m.register_forward_hook(lambda module, args, output: order.append("prepended"), prepend=True)
    m(torch.ones(1))
    assert order == ["prepended", "first", "second"]
    m, x, order = _Twice(), _leaf(1.0), []
    m.register_full_backward_pre_hook(lambda module, grad_output: order.append("first"))
    m.register_full_backward_pre_hook(lambda module, grad_output: order.append("second"))
    m.register_full_backward_pre_hook(lambda module, grad_output: order.append("prepended"), prepend=True)
    x.register_hook(lambda grad: order.append("tensor first"))
    x.register_hook(lambda grad: order.append("tensor second"))
    m(x).sum().backward()
    assert order == ["prepended", "first", "second", "tensor first", "tensor second"]


def _registrations():
    """{row api: a function that registers a hook that does nothing on fresh objects, and returns what
    registering returned}"""
    t, m = _leaf(1.0), nn.Linear(1, 1)
    node = (t * 2).grad_fn
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    nothing = lambda *args, **kwargs: None
    tensor, module, node_api = "torch.Tensor.", "torch.nn.Module.", "torch.autograd.graph.Node."
    optim, module_globals = "torch.optim.Optimizer.", "torch.nn.modules.module."
    found = {f"{tensor}{name}": getattr(t, name) for name in ("register_hook", "register_post_accumulate_grad_hook")}
    found.update({f"{node_api}{name}": getattr(node, name) for name in ("register_hook", "register_prehook")})
    found["torch.autograd.graph.register_multi_grad_hook"] = lambda hook: graph.register_multi_grad_hook([t], hook)
    for name in dir(m):
        if name.startswith("register_") and "hook" in name:
            found[f"{module}{name}"] = getattr(m, name)
    for name in dir(opt):
        if name.startswith("register_") and "hook" in name:
            found[f"{optim}{name}"] = getattr(opt, name)
    for name in dir(global_hooks):
        if name.startswith("register_module_") and "hook" in name:
            found[f"{module_globals}{name}"] = getattr(global_hooks, name)
    for name in ("register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"):
        found[f"torch.optim.optimizer.{name}"] = getattr(global_optimizer_hooks, name)
    return {api: (lambda register=register: register(nothing)) for api, register in found.items()}


def test_every_register_call_returns_a_removable_handle_that_a_with_block_removes(monkeypatch):
    import importlib.util

    from hooked.course import ROOT
    from torch.utils.hooks import RemovableHandle

    spec = importlib.util.spec_from_file_location("hooked_site_cheatsheet", ROOT / "website" / "cheatsheet.py")
    cheatsheet = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cheatsheet)
    registering = [row["api"] for row in cheatsheet.ROWS if row["api"].rsplit(".", 1)[1].startswith("register")]
    registrations = _registrations()
    assert set(registering) <= set(registrations), sorted(set(registering) - set(registrations))
    for api in registering:
        # torch remembers, for the process, which kind of global backward hook was registered first
        monkeypatch.setattr(global_hooks, "_global_is_full_backward_hook", None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the deprecated backward hooks warn
            registrations = _registrations()  # fresh objects (a module takes one kind of backward hook), alive
            handle = registrations[api]()
        try:
            assert isinstance(handle, RemovableHandle), (api, type(handle))
            inner = getattr(handle, "handles", (handle,))  # a multi-grad hook's handle holds one per tensor
            assert all(h.id in h.hooks_dict_ref() for h in inner), api
            with handle:
                pass
            assert all(h.id not in h.hooks_dict_ref() for h in inner), api
        finally:
            handle.remove()  # (a global hook must not outlive the test, whatever failed)


def test_leaf_backward_order_is_tensor_hook_then_grad_written_then_post_accumulate_hook():
    t, order = _leaf(1.0), []
    t.register_post_accumulate_grad_hook(lambda tensor: order.append(("post-accumulate", tensor.grad.item())))
    t.register_hook(lambda grad: order.append(("tensor hook", t.grad)))
    (t * 3).sum().backward()
    assert order == [("tensor hook", None), ("post-accumulate", 3.0)]


# --- Tensor.register_hook

def test_tensor_hook_fires_once_with_the_gradient_summed_over_all_uses():
    t, seen = _leaf(1.0, 2.0), []
    t.register_hook(lambda grad: seen.append(grad.clone()))
    (t * 2 + t * 3).sum().backward()
    assert len(seen) == 1 and seen[0].tolist() == [5.0, 5.0]


def test_tensor_hook_fires_before_grad_is_accumulated_and_its_return_is_what_is_accumulated():
    t, grad_at_hook_time = _leaf(1.0, 2.0), []
    t.register_hook(lambda grad: grad_at_hook_time.append(t.grad) or grad * 10)
    t.sum().backward()
    assert grad_at_hook_time == [None]
    assert t.grad.tolist() == [10.0, 10.0]


def test_tensor_hook_returning_none_keeps_the_gradient():
    t = _leaf(1.0, 2.0)
    t.register_hook(lambda grad: None)
    (t * 3).sum().backward()
    assert t.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("replacement, message", [
    (torch.ones(3), "changed the size"),
    (torch.ones(2, dtype=torch.float64), "changed the type"),
])
def test_tensor_hook_return_of_another_shape_or_dtype_raises(replacement, message):
    t = _leaf(1.0, 2.0)
    t.register_hook(lambda grad: replacement)
    with pytest.raises(RuntimeError, match=message):
        t.sum().backward()


# --- Tensor.register_post_accumulate_grad_hook

def test_post_accumulate_grad_hook_receives_the_parameter_after_grad_is_written():
    t, seen = _leaf(1.0, 2.0), []
    t.register_post_accumulate_grad_hook(lambda tensor: seen.append((tensor, tensor.grad.clone())))
    (t * 4).sum().backward()
    assert len(seen) == 1 and seen[0][0] is t and seen[0][1].tolist() == [4.0, 4.0]


def test_post_accumulate_grad_hook_is_for_leaves_only():
    non_leaf = _leaf(1.0) * 2
    with pytest.raises(RuntimeError, match="leaf"):
        non_leaf.register_post_accumulate_grad_hook(lambda tensor: None)


def test_post_accumulate_grad_hook_is_not_fired_by_autograd_grad():
    t, calls = _leaf(1.0, 2.0), []
    t.register_post_accumulate_grad_hook(lambda tensor: calls.append(tensor))
    torch.autograd.grad((t * 2).sum(), t)
    assert calls == []


def test_post_accumulate_grad_hook_must_return_none():
    t = _leaf(1.0)
    t.register_post_accumulate_grad_hook(lambda tensor: torch.zeros(1))
    with pytest.raises(RuntimeError, match="should return None"):
        t.sum().backward()


def test_post_accumulate_grad_hook_may_return_the_tensor_itself():
    t = _leaf(1.0)
    t.register_post_accumulate_grad_hook(lambda tensor: tensor)
    t.sum().backward()
    assert t.grad.item() == 1.0


# --- Module forward pre-hooks and forward hooks

def test_forward_pre_hook_fires_on_call_but_not_on_calling_forward_directly():
    m, calls = _Twice(), []
    m.register_forward_pre_hook(lambda module, args: calls.append(args))
    m(torch.ones(1))
    m.forward(torch.ones(1))
    assert len(calls) == 1


def test_forward_pre_hook_tuple_return_replaces_args():
    m = _AddTwo()
    m.register_forward_pre_hook(lambda module, args: (args[1], args[0]))
    assert m(torch.tensor([1.0]), torch.tensor([10.0])).item() == 31.0  # 10 * 3 + 1


def test_forward_pre_hook_non_tuple_return_is_wrapped():
    m, received = _Twice(), []
    m.register_forward_pre_hook(lambda module, args: torch.tensor([5.0]))
    m.register_forward_pre_hook(lambda module, args: received.append(args))
    assert m(torch.tensor([1.0])).item() == 10.0
    assert isinstance(received[0], tuple) and len(received[0]) == 1


def test_forward_pre_hook_with_kwargs_returns_args_and_kwargs():
    m = _AddTwo()
    m.register_forward_pre_hook(lambda module, args, kwargs: (args, {"y": kwargs["y"] * 0}),
                                with_kwargs=True)
    assert m(torch.tensor([1.0]), y=torch.tensor([10.0])).item() == 3.0
    m = _AddTwo()
    m.register_forward_pre_hook(lambda module, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\)"):
        m(torch.tensor([1.0]), y=torch.tensor([10.0]))


def test_forward_hook_fires_after_forward_also_under_no_grad_and_in_eval():
    m, outputs = _Twice().eval(), []
    m.register_forward_hook(lambda module, args, output: outputs.append(output))
    with torch.no_grad():
        m(torch.tensor([1.0]))
    assert [output.item() for output in outputs] == [2.0]


def test_forward_hook_with_always_call_fires_when_forward_raises():
    class Fails(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m, calls = Fails(), []
    m.register_forward_hook(lambda module, args, output: calls.append("plain"))
    m.register_forward_hook(lambda module, args, output: calls.append(output), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(torch.ones(1))
    assert calls == [None]


def test_forward_hook_with_kwargs_receives_args_kwargs_and_output():
    m, seen = _AddTwo(), []
    m.register_forward_hook(
        lambda module, args, kwargs, output: seen.append((len(args), sorted(kwargs), output.item())) or output * 10,
        with_kwargs=True)
    assert m(torch.tensor([1.0]), y=torch.tensor([10.0])).item() == 130.0
    assert seen == [(1, ["y"], 13.0)]


def test_forward_hook_any_non_none_return_replaces_the_output_unchecked():
    m = _Twice()
    m.register_forward_hook(lambda module, args, output: "not a tensor")
    assert m(torch.ones(1)) == "not a tensor"


# --- Module full backward pre-hooks and full backward hooks

def test_full_backward_pre_hook_fires_before_the_module_backward_and_can_replace_grad_output():
    m, x, order = _Twice(), _leaf(1.0), []
    x.register_hook(lambda grad: order.append("input grad"))
    m.register_full_backward_pre_hook(lambda module, grad_output: order.append("pre") or (grad_output[0] * 10,))
    m(x).sum().backward()
    assert order == ["pre", "input grad"]
    assert x.grad.item() == 20.0


def test_full_backward_pre_hook_return_of_the_wrong_length_raises():
    m, x = _Twice(), _leaf(1.0)
    m.register_full_backward_pre_hook(lambda module, grad_output: (grad_output[0], grad_output[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_output"):
        m(x).sum().backward()


def test_full_backward_pre_hook_returning_none_keeps_grad_output():
    m, x = _Twice(), _leaf(1.0)
    m.register_full_backward_pre_hook(lambda module, grad_output: None)
    m(x).sum().backward()
    assert x.grad.item() == 2.0


def test_full_backward_hook_gets_the_module_input_gradients_and_can_replace_them():
    m, x, y, seen = _AddTwo(), _leaf(1.0), _leaf(1.0), []
    def hook(module, grad_input, grad_output):
        seen.append([grad.item() for grad in grad_input])
        return (grad_input[0] * 0, grad_input[1])
    m.register_full_backward_hook(hook)
    m(x, y).sum().backward()
    assert seen == [[3.0, 1.0]]  # both of the module's inputs, not just its last op's
    assert (x.grad.item(), y.grad.item()) == (0.0, 1.0)


def test_full_backward_hook_return_of_the_wrong_length_raises():
    m, x = _Twice(), _leaf(1.0)
    m.register_full_backward_hook(lambda module, grad_input, grad_output: (grad_input[0], grad_input[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input"):
        m(x).sum().backward()


def test_full_backward_hook_is_not_installed_under_no_grad():
    m, x, calls = _Twice(), _leaf(1.0), []
    m.register_full_backward_hook(lambda module, grad_input, grad_output: calls.append(1))
    with torch.no_grad():
        out = m(x)
    out.requires_grad_()  # a graph from here on, but the module's call is not in it
    (out * 3).sum().backward()
    assert calls == []
    out = m(x)  # the same module, called with grad on: installed
    out.sum().backward()
    assert calls == [1]


def test_full_backward_hook_sees_none_for_inputs_that_do_not_require_grad():
    m, x, seen = nn.Linear(2, 1), torch.ones(1, 2), []
    m.register_full_backward_hook(lambda module, grad_input, grad_output: seen.append(grad_input))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Full backward hook is firing when gradients are computed with respect to module outputs"
        m(x).sum().backward()
    assert seen == [(None,)]


def test_full_backward_hook_with_no_input_requiring_grad_fires_before_the_parameter_gradients():
    m, x, weight_grad_at_hook_time = nn.Linear(2, 1), torch.ones(1, 2), []
    m.register_full_backward_hook(
        lambda module, grad_input, grad_output: weight_grad_at_hook_time.append(module.weight.grad))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Full backward hook is firing when gradients are computed with respect to ..."
        m(x).sum().backward()
    assert weight_grad_at_hook_time == [None]  # the module's own backward had not run yet
    assert m.weight.grad is not None


def test_full_backward_hook_can_fire_before_a_shared_weight_grad_is_written():
    first, second = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    second.weight = first.weight
    x, weight_grad_at_hook_time = torch.ones(1, 2, requires_grad=True), []
    second.register_full_backward_hook(
        lambda module, grad_input, grad_output: weight_grad_at_hook_time.append(module.weight.grad))
    second(first(x)).sum().backward()
    assert weight_grad_at_hook_time == [None]  # first's use of the weight was still pending
    assert first.weight.grad is not None


def test_deprecated_backward_hook_sees_only_the_last_operation():
    m, x, y, seen = _AddTwo(), _leaf(1.0), _leaf(1.0), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation warnings are the point of the row
        m.register_backward_hook(lambda module, grad_input, grad_output: seen.append(grad_input))
        m(x, y).sum().backward()
    # the last op is `+`: its inputs are x * 3 and y, so x's gradient 3 is nowhere
    assert [grad.item() for grad in seen[0]] == [1.0, 1.0]


# --- Module state dict hooks

def test_state_dict_pre_hook_fires_before_entries_are_added_and_its_return_is_ignored():
    m, seen = nn.Linear(1, 1), []
    m.register_state_dict_pre_hook(lambda module, prefix, keep_vars: seen.append((prefix, keep_vars)) or "ignored")
    destination = {}
    m.register_state_dict_pre_hook(lambda module, prefix, keep_vars: seen.append(len(destination)))
    result = m.state_dict(destination=destination, prefix="net.")
    assert seen == [("net.", False), 0]
    assert list(result) == ["net.weight", "net.bias"]


def test_state_dict_post_hook_edits_the_dict_in_place_and_must_return_none():
    m = nn.Linear(1, 1)
    m.register_state_dict_post_hook(lambda module, state_dict, prefix, meta: state_dict.pop(prefix + "bias") and None)
    assert list(m.state_dict()) == ["weight"]
    m = nn.Linear(1, 1)
    m.register_state_dict_post_hook(lambda module, state_dict, prefix, meta: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()


def test_state_dict_post_hook_fires_after_its_whole_subtree_children_first():
    net, seen = nn.Sequential(nn.Sequential(nn.Linear(1, 1))), []
    for name, module in (("root", net), ("middle", net[0]), ("leaf", net[0][0])):
        module.register_state_dict_post_hook(
            lambda module, state_dict, prefix, meta, name=name: seen.append((name, sorted(state_dict))))
    net.state_dict()
    entries = ["0.0.bias", "0.0.weight"]
    assert seen == [("leaf", entries), ("middle", entries), ("root", entries)]


def test_state_dict_post_hook_rejects_a_bound_method_but_takes_a_partial():
    import functools

    class Counter:
        calls = 0

        def hook(self, module, state_dict, prefix, meta):
            self.calls += 1

    counter, m = Counter(), nn.Linear(1, 1)
    with pytest.raises(AttributeError, match="'method' object has no attribute '_from_public_api'"):
        m.register_state_dict_post_hook(counter.hook)
    m.register_state_dict_post_hook(functools.partial(counter.hook))
    m.state_dict()
    assert counter.calls == 1


def test_load_state_dict_pre_hook_runs_parents_first_and_in_place_edits_are_loaded():
    net, order = nn.Sequential(nn.Linear(1, 1)), []
    net.register_load_state_dict_pre_hook(lambda module, state_dict, prefix, *rest: order.append("parent"))
    def child_hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        order.append("child")
        state_dict[prefix + "weight"] = torch.full((1, 1), 7.0)
        return "ignored"
    net[0].register_load_state_dict_pre_hook(child_hook)
    net.load_state_dict({"0.weight": torch.zeros(1, 1), "0.bias": torch.zeros(1)})
    assert order == ["parent", "child"]
    assert net[0].weight.item() == 7.0


def test_load_state_dict_post_hook_runs_children_first_and_must_return_none():
    net, order = nn.Sequential(nn.Linear(1, 1)), []
    net.register_load_state_dict_post_hook(lambda module, keys: order.append("parent"))
    net[0].register_load_state_dict_post_hook(lambda module, keys: order.append("child"))
    net.load_state_dict(net.state_dict())
    assert order == ["child", "parent"]
    loaded = []
    net.register_load_state_dict_post_hook(lambda module, keys: loaded.append(module[0].weight.item()))
    net.load_state_dict({"0.weight": torch.full((1, 1), 7.0), "0.bias": torch.zeros(1)})
    assert loaded == [7.0]  # after loading: the module holds the new values
    m = nn.Linear(1, 1)
    m.register_load_state_dict_post_hook(lambda module, keys: keys.missing_keys.clear())  # in place: fine
    m.load_state_dict({}, strict=True)
    m.register_load_state_dict_post_hook(lambda module, keys: keys)
    with pytest.raises(AssertionError):
        m.load_state_dict(m.state_dict())


# --- Global module hooks

def test_global_forward_pre_hook_fires_for_every_module_before_its_own_and_can_replace_args():
    net, order = nn.Sequential(_Twice()), []
    net[0].register_forward_pre_hook(lambda module, args: order.append("own"))
    handle = global_hooks.register_module_forward_pre_hook(
        lambda module, args: order.append(type(module).__name__) or torch.tensor([5.0]))
    try:
        out = net(torch.tensor([1.0]))
    finally:
        handle.remove()
    assert order == ["Sequential", "_Twice", "own"]
    assert out.item() == 10.0  # a non-tuple return is wrapped, as for the module's own pre-hook


def test_global_forward_hook_fires_for_every_module_before_its_own_and_can_replace_the_output():
    m, order = _Twice(), []
    m.register_forward_hook(lambda module, args, output: order.append(("own", output.item())))
    handle = global_hooks.register_module_forward_hook(
        lambda module, args, output: order.append("global") or output + 1)
    try:
        out = m(torch.tensor([1.0]))
    finally:
        handle.remove()
    assert order == ["global", ("own", 3.0)]
    assert out.item() == 3.0


class _Raises(nn.Module):
    def forward(self, x):
        raise ValueError("forward failed")


def test_global_forward_hook_with_kwargs_and_always_call_is_not_run_when_forward_raises():
    calls = []
    handle = global_hooks.register_module_forward_hook(
        lambda module, args, kwargs, output: calls.append(output), with_kwargs=True, always_call=True)
    try:
        # torch 2.13 calls it without kwargs; the TypeError is turned into a warning.
        with pytest.warns(UserWarning, match="missing 1 required positional argument"):
            with pytest.raises(ValueError, match="forward failed"):
                _Raises()(torch.tensor([1.0]))
    finally:
        handle.remove()
    assert calls == []


@pytest.fixture
def fresh_global_backward_kind(monkeypatch):
    """torch remembers, for the whole process, whether a global full or a global deprecated
    backward hook was ever registered (removing it does not reset that); reset it per test."""
    monkeypatch.setattr(global_hooks, "_global_is_full_backward_hook", None)


def test_global_full_backward_hooks_fire_for_every_module_before_its_own(fresh_global_backward_kind):
    m, x, order = _Twice(), _leaf(1.0), []
    m.register_full_backward_pre_hook(lambda module, grad_output: order.append("own pre"))
    m.register_full_backward_hook(lambda module, grad_input, grad_output: order.append("own"))
    handles = [
        global_hooks.register_module_full_backward_pre_hook(
            lambda module, grad_output: order.append("global pre") or (grad_output[0] * 10,)),
        global_hooks.register_module_full_backward_hook(
            lambda module, grad_input, grad_output: order.append("global")),
    ]
    try:
        m(x).sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    assert order == ["global pre", "own pre", "global", "own"]
    assert x.grad.item() == 20.0


def test_global_full_backward_hook_return_replaces_grad_input(fresh_global_backward_kind):
    m, x = _Twice(), _leaf(1.0)
    handle = global_hooks.register_module_full_backward_hook(
        lambda module, grad_input, grad_output: (grad_input[0] * 0,))
    try:
        m(x).sum().backward()
    finally:
        handle.remove()
    assert x.grad.item() == 0.0


def test_global_deprecated_backward_hook_sees_only_the_last_operation(fresh_global_backward_kind):
    m, x, y, seen = _AddTwo(), _leaf(1.0), _leaf(1.0), []
    handle = global_hooks.register_module_backward_hook(
        lambda module, grad_input, grad_output: seen.append([grad.item() for grad in grad_input]))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(x, y).sum().backward()
    finally:
        handle.remove()
    assert seen == [[1.0, 1.0]]


def test_global_full_and_deprecated_backward_hooks_exclude_each_other_even_after_removal(
        fresh_global_backward_kind):
    global_hooks.register_module_full_backward_hook(lambda module, grad_input, grad_output: None).remove()
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        global_hooks.register_module_backward_hook(lambda module, grad_input, grad_output: None)


def test_global_deprecated_then_full_backward_hook_exclude_each_other_too(fresh_global_backward_kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        global_hooks.register_module_backward_hook(lambda module, grad_input, grad_output: None).remove()
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        global_hooks.register_module_full_backward_hook(lambda module, grad_input, grad_output: None)


def test_global_registration_hooks_fire_on_attribute_assignment_and_can_replace_the_value():
    replacement_param = nn.Parameter(torch.zeros(1))
    replacement_buffer = torch.zeros(1)
    replacement_module = nn.Identity()
    seen = []
    handles = [
        global_hooks.register_module_parameter_registration_hook(
            lambda module, name, param: seen.append(name) or replacement_param),
        global_hooks.register_module_buffer_registration_hook(
            lambda module, name, buffer: seen.append(name) or replacement_buffer),
        global_hooks.register_module_module_registration_hook(
            lambda module, name, submodule: seen.append(name) or replacement_module),
    ]
    try:
        m = nn.Module()
        m.w = nn.Parameter(torch.ones(1))
        m.register_buffer("b", torch.ones(1))
        m.child = _Twice()
    finally:
        for handle in handles:
            handle.remove()
    assert seen == ["w", "b", "child"]
    assert m.w is replacement_param and m.b is replacement_buffer and m.child is replacement_module


def test_buffer_registration_hook_fires_on_nn_buffer_and_existing_buffer_assignment_only():
    seen = []
    handle = global_hooks.register_module_buffer_registration_hook(lambda module, name, buffer: seen.append(name))
    try:
        m = nn.Module()
        m.register_buffer("b", torch.ones(1))
        m.b = torch.zeros(1)  # an existing buffer's name
        m.c = nn.Buffer(torch.ones(1))
        m.d = torch.ones(1)  # a plain tensor attribute, not a buffer
    finally:
        handle.remove()
    assert seen == ["b", "b", "c"]


# --- Autograd node hooks

def test_node_prehook_fires_before_the_node_and_can_replace_grad_outputs():
    x, order = _leaf(1.0), []
    y = x * 2
    x.register_hook(lambda grad: order.append("x grad"))
    y.grad_fn.register_prehook(lambda grad_outputs: order.append("prehook") or (grad_outputs[0] * 10,))
    y.sum().backward()
    assert order == ["prehook", "x grad"]
    assert x.grad.item() == 20.0


def test_node_hook_fires_after_the_node_and_can_replace_grad_inputs():
    x, y, seen = _leaf(3.0), _leaf(5.0), []
    z = x * y
    def hook(grad_inputs, grad_outputs):
        seen.append(([grad.item() for grad in grad_inputs], grad_outputs[0].item()))
        return (grad_inputs[0], grad_inputs[1] * 0)
    z.grad_fn.register_hook(hook)
    z.sum().backward()
    assert seen == [([5.0, 3.0], 1.0)]
    assert (x.grad.item(), y.grad.item()) == (5.0, 0.0)


def test_node_hooks_returning_none_keep_the_gradients():
    x = _leaf(1.0)
    y = x * 2
    y.grad_fn.register_prehook(lambda grad_outputs: None)
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: None)
    y.sum().backward()
    assert x.grad.item() == 2.0


# --- node_creation_hook (since torch 2.14)

_since_2_14 = pytest.mark.skipif(torch.__version__ < "2.14", reason="torch.autograd.graph.node_creation_hook: since 2.14")


@_since_2_14
def test_node_creation_hook_sees_each_complete_node_made_in_the_block_and_none_under_no_grad():
    a, seen = _leaf(1.0, 2.0), []
    with graph.node_creation_hook(lambda node: seen.append((node.name(), len(node.next_functions)))):
        (a * 2).sin()
        with torch.no_grad():
            a * 3
    a * 4  # after the block
    assert seen == [("torch::autograd::AccumulateGrad", 0), ("MulBackward0", 2), ("SinBackward0", 1)]


@_since_2_14
def test_node_creation_hooks_nest_outermost_first_and_may_hook_the_node():
    a, order, fired = _leaf(1.0), [], []
    with graph.node_creation_hook(lambda node: order.append("outer")), \
            graph.node_creation_hook(lambda node: order.append("inner")):
        a * 2
    assert order == ["outer", "inner", "outer", "inner"]  # AccumulateGrad, then MulBackward0
    with graph.node_creation_hook(lambda node: node.register_prehook(lambda grads: fired.append(node.name())) and None):
        y = (a * 2).sum()
    y.backward()
    assert fired == ["SumBackward0", "MulBackward0", "torch::autograd::AccumulateGrad"]


@_since_2_14
@pytest.mark.parametrize(("hook", "message"), [
    (lambda node: 5, "node creation hook must return None, got int"),
    (lambda node: torch.ones(1, requires_grad=True) * 2,
     "Creating a new autograd node from inside a node creation hook is not supported"),
])
def test_node_creation_hook_must_return_none_and_make_no_node(hook, message):
    a = _leaf(1.0)
    with pytest.raises(RuntimeError, match=message), graph.node_creation_hook(hook):
        a * 2


# --- Multi-grad hook

def test_multi_grad_hook_all_vs_any():
    a, b, c = _leaf(1.0), _leaf(1.0), _leaf(1.0)
    all_calls, any_calls = [], []
    graph.register_multi_grad_hook((a, b, c), lambda grads: all_calls.append(grads), mode="all")
    graph.register_multi_grad_hook((a, b, c), lambda grad: any_calls.append(grad), mode="any")
    (a * 2 + b * 3).sum().backward()  # c is not used: no gradient for it
    assert len(all_calls) == 1
    assert [None if grad is None else grad.item() for grad in all_calls[0]] == [2.0, 3.0, None]
    assert len(any_calls) == 1 and any_calls[0].item() in (2.0, 3.0)


def test_multi_grad_hook_all_fires_after_the_last_gradient_any_at_the_first():
    a, b, order = _leaf(1.0), _leaf(1.0), []
    a.register_hook(lambda grad: order.append("a"))
    b.register_hook(lambda grad: order.append("b"))
    graph.register_multi_grad_hook((a, b), lambda grads: order.append("all"), mode="all")
    graph.register_multi_grad_hook((a, b), lambda grad: order.append("any"), mode="any")
    (a * 2 + b * 3).sum().backward()
    first, last = order[0], [name for name in order if name in ("a", "b")][-1]
    assert order.index("any") == order.index(first) + 1  # right after the first gradient
    assert order.index("all") == order.index(last) + 1  # right after the last one
    assert order.count("any") == order.count("all") == 1


def test_multi_grad_hook_return_is_ignored():
    a, b = _leaf(1.0), _leaf(1.0)
    graph.register_multi_grad_hook((a, b), lambda grads: [torch.zeros(1)] * 2, mode="all")
    graph.register_multi_grad_hook((a, b), lambda grad: torch.zeros(1), mode="any")
    (a * 2 + b * 3).sum().backward()
    assert (a.grad.item(), b.grad.item()) == (2.0, 3.0)


def test_multi_grad_hook_all_raises_under_autograd_grad_when_a_hooked_leaf_is_an_input():
    a, b = _leaf(1.0), _leaf(1.0)
    graph.register_multi_grad_hook((a, b), lambda grads: None, mode="all")
    with pytest.raises(RuntimeError, match="A leaf node was passed to _will_engine_execute_node"):
        torch.autograd.grad((a * b).sum(), (a,))


def test_multi_grad_hook_all_fires_under_autograd_grad_when_no_hooked_leaf_is_an_input():
    a, b, calls = _leaf(1.0), _leaf(2.0), []
    h = a * 3
    graph.register_multi_grad_hook((h, b), lambda grads: calls.append(grads), mode="all")
    (grad_a,) = torch.autograd.grad((h * b).sum(), (a,))  # b is a hooked leaf, but not an input
    assert grad_a.item() == 6.0
    assert len(calls) == 1 and calls[0][0].item() == 2.0 and calls[0][1] is None


def test_multi_grad_hook_any_fires_under_autograd_grad_with_hooked_leaves_as_inputs():
    a, b, calls = _leaf(1.0), _leaf(2.0), []
    graph.register_multi_grad_hook((a, b), lambda grad: calls.append(grad), mode="any")
    torch.autograd.grad((a * b).sum(), (a, b))
    assert len(calls) == 1 and calls[0].item() in (1.0, 2.0)


# --- Saved-tensor hooks

def test_saved_tensors_hooks_pack_in_forward_unpack_in_backward():
    x, events = _leaf(1.0, 2.0), []
    def pack(tensor):
        events.append("pack")
        return ("stored", tensor)
    def unpack(packed):
        events.append("unpack")
        return packed[1]
    with graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()  # mul saves both operands
        assert events == ["pack", "pack"]
    y.backward()
    assert events == ["pack", "pack", "unpack", "unpack"]
    assert x.grad.tolist() == [2.0, 4.0]


def test_saved_tensors_hooks_innermost_pair_wins():
    x, used = _leaf(1.0), []
    with graph.saved_tensors_hooks(lambda t: used.append("outer") or t, lambda t: t):
        with graph.saved_tensors_hooks(lambda t: used.append("inner") or t, lambda t: t):
            x * x
    assert used == ["inner", "inner"]


def test_saved_tensors_hooks_wrong_unpack_gives_a_silently_wrong_gradient():
    x = _leaf(1.0, 2.0, 3.0)
    with graph.saved_tensors_hooks(lambda t: t, lambda t: torch.ones_like(t)):
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]  # the right gradient is [2, 4, 6]


def test_saved_tensors_hooks_unpack_of_another_shape_or_dtype_may_raise():
    x, w = _leaf(1.0, 2.0), torch.ones(2, 1, requires_grad=True)
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t.flatten()):
        y = (x.reshape(1, 2) * 2) @ w  # mm saves both matrices
    with pytest.raises(RuntimeError, match="must be a matrix"):
        y.sum().backward()
    with graph.saved_tensors_hooks(lambda t: t.half(), lambda t: t):
        y = (x.reshape(1, 2) * 2) @ w
    with pytest.raises(RuntimeError, match="same dtype"):
        y.sum().backward()


def test_saved_tensors_hooks_unpack_of_another_shape_or_dtype_may_run_silently():
    x = _leaf(1.0, 2.0, 3.0)
    with graph.saved_tensors_hooks(lambda t: t, lambda t: t[:1]):  # pow saves x; a 1-element x broadcasts
        y = (x ** 2).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]  # the right gradient is [2, 4, 6]
    x.grad = None
    with graph.saved_tensors_hooks(lambda t: t.half(), lambda t: t):  # tanh's backward takes a float16 output
        y = torch.tanh(x).sum()
    y.backward()
    assert x.grad.dtype == torch.float32


def test_save_on_cpu_is_a_pack_unpack_pair_that_stores_on_the_cpu():
    hooks = graph.save_on_cpu()
    assert isinstance(hooks, graph.saved_tensors_hooks)
    device, stored = hooks.pack_hook(torch.ones(2))
    assert stored.device.type == "cpu" and hooks.unpack_hook((device, stored)).device == device
    x = _leaf(1.0, 2.0)
    with graph.save_on_cpu():
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_disable_saved_tensors_hooks_makes_using_them_raise_the_message():
    with graph.disable_saved_tensors_hooks("no saved-tensor hooks here"):
        with pytest.raises(RuntimeError, match="no saved-tensor hooks here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass


# --- Optimizer hooks

def _sgd():
    weight = nn.Parameter(torch.tensor([1.0]))
    weight.grad = torch.tensor([1.0])
    return weight, torch.optim.SGD([weight], lr=0.5)


def test_optimizer_step_pre_hook_args_start_with_the_optimizer():
    _, opt = _sgd()
    seen = []
    opt.register_step_pre_hook(lambda optimizer, args, kwargs: seen.append((args, kwargs)))
    opt.step()
    assert seen == [((opt,), {})]


def test_optimizer_step_pre_hook_can_replace_args_and_kwargs():
    weight, opt = _sgd()
    closure_calls = []
    def closure():
        closure_calls.append(1)
        return torch.tensor(0.0)
    post_hook_saw = []
    opt.register_step_pre_hook(lambda optimizer, args, kwargs: (args, {"closure": closure}))
    opt.register_step_post_hook(lambda optimizer, args, kwargs: post_hook_saw.append((args, kwargs)))
    opt.step()
    assert closure_calls == [1] and weight.item() == 0.5
    assert post_hook_saw == [((opt,), {"closure": closure})]
    handle = opt.register_step_pre_hook(lambda optimizer, args, kwargs: "not a pair")
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\)"):
        opt.step()
    handle.remove()


def test_optimizer_step_pre_hook_wrong_pair_passes_the_check_and_fails_in_step():
    weight, opt = _sgd()
    opt.register_step_pre_hook(lambda optimizer, args, kwargs: (1, 2))
    with pytest.raises(TypeError, match=r"argument after \*\* must be a mapping, not int"):
        opt.step()
    assert weight.item() == 1.0  # step never ran


def test_optimizer_step_post_hook_fires_after_step_and_its_return_is_ignored():
    weight, opt = _sgd()
    seen = []
    opt.register_step_post_hook(lambda optimizer, args, kwargs: seen.append(weight.item()) or "ignored")
    assert opt.step() is None
    assert seen == [0.5]


def test_optimizer_state_dict_pre_hook_fires_before_it_is_built_and_its_return_is_ignored():
    _, opt = _sgd()
    opt.register_state_dict_pre_hook(lambda optimizer: optimizer.param_groups[0].update(lr=0.25) or {})
    assert opt.state_dict()["param_groups"][0]["lr"] == 0.25


def test_optimizer_state_dict_post_hook_return_replaces_the_state_dict():
    _, opt = _sgd()
    opt.register_state_dict_post_hook(lambda optimizer, state_dict: None)
    opt.register_state_dict_post_hook(lambda optimizer, state_dict: {"replaced": state_dict["param_groups"]})
    assert list(opt.state_dict()) == ["replaced"]


def test_optimizer_load_state_dict_pre_hook_return_is_loaded_instead():
    _, opt = _sgd()
    state = opt.state_dict()
    def hook(optimizer, state_dict):
        changed = {**state_dict, "param_groups": [dict(group, lr=0.125) for group in state_dict["param_groups"]]}
        return changed
    opt.register_load_state_dict_pre_hook(hook)
    opt.load_state_dict(state)
    assert opt.param_groups[0]["lr"] == 0.125 and state["param_groups"][0]["lr"] == 0.5


def test_optimizer_load_state_dict_post_hook_fires_after_loading_and_its_return_is_ignored():
    _, opt = _sgd()
    state = opt.state_dict()
    state["param_groups"][0]["lr"] = 0.125
    seen = []
    opt.register_load_state_dict_post_hook(lambda optimizer: seen.append(optimizer.param_groups[0]["lr"]) or {})
    opt.load_state_dict(state)
    assert seen == [0.125] and opt.param_groups[0]["lr"] == 0.125


def test_global_optimizer_step_hooks_wrap_the_optimizer_own_hooks():
    weight, opt = _sgd()
    order = []
    opt.register_step_pre_hook(lambda optimizer, args, kwargs: order.append("own pre"))
    opt.register_step_post_hook(lambda optimizer, args, kwargs: order.append("own post"))
    handles = [
        global_optimizer_hooks.register_optimizer_step_pre_hook(
            lambda optimizer, args, kwargs: order.append("global pre")),
        global_optimizer_hooks.register_optimizer_step_post_hook(
            lambda optimizer, args, kwargs: order.append(("global post", weight.item())) or "ignored"),
    ]
    try:
        opt.step()
    finally:
        for handle in handles:
            handle.remove()
    assert order == ["global pre", "own pre", "own post", ("global post", 0.5)]


def test_global_optimizer_step_pre_hook_return_is_checked_like_the_own_pre_hook():
    weight, opt = _sgd()
    handle = global_optimizer_hooks.register_optimizer_step_pre_hook(lambda optimizer, args, kwargs: "not a pair")
    try:
        with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\)"):
            opt.step()
    finally:
        handle.remove()
    assert weight.item() == 1.0
