"""Canaries of lesson 05 (module backward hooks): what torch 2.13 puts in grad_input, its warning, the
deprecated hook, and the traps."""

import warnings

import torch
from torch import nn

from canary_pins import canary, described, error_of, on_this_torch

IN_PLACE_ERROR = "Output 0 of BackwardHookFunction is a view and is being modified inplace."
EARLY_WARNING = ("Full backward hook is firing when gradients are computed with respect to module outputs since no "
                 "inputs require gradients.")


def _warnings_of(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught]


class _ScaledProduct(nn.Module):
    def forward(self, a, b, scale, offset=None):
        out = a * b * scale
        return out if offset is None else out + offset


@canary("grad_input has one entry per positional argument: None for a non-tensor, a tensor of zeros (on torch "
        "2.13) for a tensor that needs no grad next to one that does, nothing for keyword arguments",
        ("05", "What `grad_input` holds"))
def test_grad_input_holds_zeros_for_a_tensor_that_needs_no_grad(pin):
    seen, product = [], _ScaledProduct()
    product.register_full_backward_hook(lambda module, grad_input, grad_output: seen.append(grad_input))
    a, offset = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([5.0, 6.0], requires_grad=True)
    product(a, torch.tensor([3.0, 4.0]), 10.0, offset=offset).sum().backward()
    pin.holds(len(seen[0]) == 3, f"len(grad_input) is {len(seen[0])} for three positional arguments")
    pin.holds(isinstance(seen[0][1], torch.Tensor) and torch.equal(seen[0][1], torch.zeros(2)),
              f"the entry of the tensor that needs no grad is {seen[0][1]!r}")
    pin.holds(seen[0][2] is None, f"the entry of the number is {seen[0][2]!r}")


@canary("when no input requires grad, a full backward hook fires early with grad_input (None,), before the "
        "module's own backward (weight.grad still None), and torch warns 'Full backward hook is firing when "
        "gradients are computed with respect to module outputs since no inputs require gradients.'; a module with "
        "only a backward pre-hook warns too until torch 2.13, and from torch 2.14 it does not (pytorch/pytorch#189093)",
        ("05", "When no input requires grad"), ("05", "Exercise 1: `record_grad_output_norms`"))
def test_a_full_backward_hook_fires_early_and_warns_when_no_input_requires_grad(pin):
    layer, seen = nn.Linear(3, 2), []
    layer.register_full_backward_hook(lambda module, grad_input, grad_output: seen.append((grad_input, module.weight.grad)))
    data = torch.randn(4, 3)
    messages = _warnings_of(lambda: layer(data).sum().backward())
    pin.holds(seen[0][0] == (None,) and seen[0][1] is None, f"grad_input {seen[0][0]}, weight.grad inside the hook "
              f"{seen[0][1]}")
    pin.holds(bool(messages) and messages[0].startswith(EARLY_WARNING), f"warnings: {messages}")
    only_pre = nn.Linear(3, 2)
    only_pre.register_full_backward_pre_hook(lambda module, grad_output: None)
    messages = _warnings_of(lambda: only_pre(data).sum().backward())
    warns = on_this_torch({"2.13": True, "2.14": False})
    pin.holds(bool(messages) == warns and all(m.startswith("Full backward hook is firing") for m in messages),
              f"with only a backward pre-hook, warnings: {messages}")


def _in_place_add_one(module, grad_output):
    for grad in grad_output:
        grad.add_(1.0)


@canary("the tensors a backward pre-hook receives in grad_output are shared with another branch of the graph, "
        "so an in-place add_ changes the other branch's gradient (b.grad wrong), and returning a new tuple does not",
        ("05", "Trap: changing a gradient in place"),
        ("05", "Exercise 3: `add_grad_noise`"))
def test_grad_output_memory_is_shared_with_another_branch(pin):
    w = torch.randn(5)
    for hook in (_in_place_add_one, lambda module, grad_output: tuple(grad + 1.0 for grad in grad_output)):
        layer, addresses = nn.Linear(5, 5), {}
        a, b = torch.randn(5, requires_grad=True), torch.randn(5, requires_grad=True)
        layer.register_full_backward_pre_hook(lambda module, grad_output: addresses.update(
            layer=grad_output[0].data_ptr()))
        layer.register_full_backward_pre_hook(hook)
        h = 2 * b
        h.register_hook(lambda grad: addresses.update(h=grad.data_ptr()))
        ((layer(a) + h) * w).sum().backward()  # the true b.grad is 2 * w
        in_place = hook is _in_place_add_one
        pin.holds(addresses["layer"] == addresses["h"], "the two branches no longer receive the same gradient memory")
        pin.holds(torch.allclose(b.grad, 2 * w) is not in_place, f"{'add_' if in_place else 'a returned tuple'}: "
                  f"b.grad == 2 * w (the true one) is {torch.allclose(b.grad, 2 * w)}")


@canary("under torch.no_grad() a module's backward hooks are not installed: its output has no grad_fn (with "
        "grad on, BackwardHookFunctionBackward), and backward never reaches it",
        ("05", "No backward hook fires under `no_grad`"),
        ("09", "Pitfall 6: under `torch.no_grad()`, forward hooks fire, full backward hooks are not installed"))
def test_backward_hooks_are_not_installed_under_no_grad(pin):
    layer = nn.Linear(3, 4)
    layer.register_full_backward_hook(lambda module, grad_input, grad_output: None)
    with_grad = type(layer(torch.randn(2, 3)).grad_fn).__name__
    pin.holds(with_grad == "BackwardHookFunctionBackward", f"with grad on, the hooked output's grad_fn is {with_grad}")
    with torch.no_grad():
        out = layer(torch.randn(2, 3))
    pin.holds(out.grad_fn is None, f"under no_grad the output's grad_fn is {out.grad_fn}")


class _Squash(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        return 2 * torch.tanh(self.linear(x))


@canary("the deprecated register_backward_hook hooks the last operation of forward: for 2 * tanh(...) its "
        "grad_input is (2 everywhere, None), for a Linear (bias, input, weight transposed); it warns 'Using a "
        "non-full backward hook when the forward contains multiple autograd Nodes is deprecated'; a module cannot "
        "have it and a full backward hook ('Cannot use both regular backward hooks and full backward hooks on a "
        "single Module.'), but a full backward pre-hook next to it is accepted and fires",
        ("05", "Why `register_backward_hook` is deprecated"))
def test_the_deprecated_backward_hook_reports_the_last_operations_gradients(pin):
    squash, seen = _Squash(), []
    messages = _warnings_of(lambda: (
        squash.register_backward_hook(lambda module, grad_input, grad_output: seen.append(grad_input)),
        squash(torch.randn(2, 3, requires_grad=True)).sum().backward()))
    pin.holds(len(seen[0]) == 2 and seen[0][1] is None and torch.equal(seen[0][0], torch.full((2, 3), 2.0)),
              f"grad_input for 2 * tanh(...): {seen[0]}")
    pin.holds(any(m.startswith("Using a non-full backward hook when the forward contains multiple autograd Nodes "
                               "is deprecated") for m in messages), f"warnings: {messages}")
    linear, seen = nn.Linear(3, 2), []
    x = torch.randn(4, 3, requires_grad=True)
    _warnings_of(lambda: (linear.register_backward_hook(lambda module, grad_input, grad_output: seen.append(grad_input)),
                          linear(x).sum().backward()))
    shapes = [tuple(g.shape) for g in seen[0]]
    pin.holds(shapes == [(2,), (4, 3), (3, 2)], f"grad_input shapes for Linear(3, 2) on (4, 3): {shapes}")
    error = error_of(lambda: linear.register_full_backward_hook(lambda module, grad_input, grad_output: None))
    pin.holds(isinstance(error, RuntimeError) and str(error).startswith(
        "Cannot use both regular backward hooks and full backward hooks on a single Module."), described(error))
    pre_calls = []
    linear.register_full_backward_pre_hook(lambda module, grad_output: pre_calls.append(1))
    _warnings_of(lambda: linear(x).sum().backward())
    pin.holds(pre_calls == [1], "a full backward pre-hook next to the deprecated hook did not fire")


@canary("a full backward hook or pre-hook on a module followed by ReLU(inplace=True), or on the in-place ReLU "
        "itself, fails in the forward pass with 'Output 0 of BackwardHookFunction is a view and is being modified "
        "inplace. ... You can fix this by cloning the output of the custom Function.'",
        ("05", "Trap: an in-place ReLU"),
        ("06", "Grad-CAM: where is the model looking?"),
        ("09", "Pitfall 1: full backward hooks and in-place operations"),
        ("06", "Exercise 2: `grad_cam`"))
def test_a_full_backward_hook_before_an_in_place_relu_fails_in_forward(pin):
    for where, register in ((0, "register_full_backward_hook"), (0, "register_full_backward_pre_hook"),
                            (1, "register_full_backward_hook")):
        net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 1))
        getattr(net[where], register)(lambda module, *grads: None)
        error = error_of(lambda: net(torch.randn(2, 3, requires_grad=True)))
        pin.holds(isinstance(error, RuntimeError) and str(error).startswith(IN_PLACE_ERROR)
                  and "You can fix this by cloning the output of the custom Function." in str(error),
                  f"{register} on module {where} of Linear, ReLU(inplace=True), Linear: forward gave {described(error)}")


@canary("the fix for an in-place ReLU: a forward hook that registers a tensor hook on the output receives the "
        "gradient of the value the layer produced, the same as a full backward hook's grad_output[0] without "
        "the in-place ReLU",
        ("05", "Trap: an in-place ReLU"),
        ("09", "Pitfall 1: full backward hooks and in-place operations"),
        ("09", "Exercise 1: `grad_before_inplace_relu`"))
def test_a_tensor_hook_from_a_forward_hook_sees_the_gradient_before_the_in_place_relu(pin):
    torch.manual_seed(0)
    in_place = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 1))
    plain = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    plain.load_state_dict(in_place.state_dict())
    tensor_hook, full_hook = [], []
    in_place[0].register_forward_hook(lambda module, args, output: output.register_hook(tensor_hook.append) and None)
    plain[0].register_full_backward_hook(lambda module, grad_input, grad_output: full_hook.append(grad_output[0]))
    x = torch.randn(5, 3, requires_grad=True)
    in_place(x).sum().backward()
    plain(x).sum().backward()
    pin.holds(torch.allclose(tensor_hook[0], full_hook[0]), "the tensor hook's gradient differs from the full hook's")


@canary("in an ordinary backward a module's backward hooks run with grad mode off and gradients that need no grad; "
        "under create_graph=True grad mode is on inside them, the gradients require grad and .numpy() on them "
        "raises 'Can't call numpy() on Tensor that requires grad.'",
        ("05", "Gradients that require grad: `create_graph=True`"),
        ("05", "Exercise 1: `record_grad_output_norms`"), ("05", "Exercise 2: `clip_grad_input`"))
def test_backward_hooks_run_with_grad_mode_on_only_under_create_graph(pin):
    for create_graph in (False, True):
        layer, seen = nn.Linear(3, 2), {}

        def hook(module, grad_input, grad_output):
            seen.update(mode=torch.is_grad_enabled(), requires_grad=grad_output[0].requires_grad,
                        numpy=error_of(grad_output[0].numpy))

        layer.register_full_backward_hook(hook)
        x = torch.randn(4, 3, requires_grad=True)
        torch.autograd.grad((layer(x) ** 2).sum(), x, create_graph=create_graph)
        pin.holds(seen["mode"] is create_graph and seen["requires_grad"] is create_graph,
                  f"create_graph={create_graph}: grad mode {seen['mode']}, requires_grad {seen['requires_grad']}")
        numpy_ok = seen["numpy"] is None if not create_graph else str(seen["numpy"]).startswith(
            "Can't call numpy() on Tensor that requires grad.")
        pin.holds(numpy_ok, f"create_graph={create_graph}: .numpy() gave {described(seen['numpy'])}")


def _grads(layer, x):
    x = x.detach().requires_grad_()
    layer(x).pow(2).sum().backward()
    return layer.weight.grad, x.grad


@canary("a backward pre-hook's returned grad_output changes the gradients of the module's parameters and inputs; a "
        "full hook's returned grad_input changes the inputs' only",
        ("05", "What a returned value does"),
        ("05", "Exercise 3: `add_grad_noise`"))
def test_a_pre_hooks_return_reaches_the_parameters_and_a_full_hooks_only_the_inputs(pin):
    torch.manual_seed(0)
    plain, x = nn.Linear(3, 2), torch.randn(4, 3)
    by_pre, by_full = nn.Linear(3, 2), nn.Linear(3, 2)
    for layer in (by_pre, by_full):
        layer.load_state_dict(plain.state_dict())
    by_pre.register_full_backward_pre_hook(lambda module, grad_output: tuple(2 * g for g in grad_output))
    by_full.register_full_backward_hook(lambda module, grad_input, grad_output: tuple(2 * g for g in grad_input))
    weight, x_grad = _grads(plain, x)
    (pre_weight, pre_x), (full_weight, full_x) = _grads(by_pre, x), _grads(by_full, x)
    pin.holds(torch.allclose(pre_weight, 2 * weight) and torch.allclose(pre_x, 2 * x_grad),
              "a pre-hook that doubles grad_output no longer doubles weight.grad and x.grad")
    pin.holds(torch.allclose(full_weight, weight) and torch.allclose(full_x, 2 * x_grad),
              f"a full hook that doubles grad_input: weight.grad x{(full_weight / weight).mean():.2f}, "
              f"x.grad x{(full_x / x_grad).mean():.2f} (the lesson shows x1 and x2)")


@canary("a parameter's .grad is written once all its contributions are summed: for a module called twice it is None "
        "at its full backward hook's first firing and final at the second; for a module called once, final already",
        ("05", "What a returned value does"))
def test_weight_grad_is_none_at_the_first_firing_of_a_module_called_twice(pin):
    for calls in (1, 2):
        layer, at_firing = nn.Linear(3, 3), []
        layer.register_full_backward_hook(lambda module, grad_input, grad_output: at_firing.append(
            None if module.weight.grad is None else module.weight.grad.clone()))
        h = torch.randn(2, 3, requires_grad=True)
        for _ in range(calls):
            h = torch.tanh(layer(h))
        h.sum().backward()
        expected = [layer.weight.grad] if calls == 1 else [None, layer.weight.grad]
        pin.holds(len(at_firing) == calls and all(
            seen is None if want is None else seen is not None and torch.equal(seen, want)
            for seen, want in zip(at_firing, expected)),
            f"called {calls} time(s): weight.grad at each firing is None: {[seen is None for seen in at_firing]}")


@canary("a backward hook's returned tuple of another length is refused in backward ('Backward hook returned an invalid "
        "number of grad_input, got 2, but expected 3', 'Backward pre hook returned an invalid number of grad_output, "
        "got 4, but expected 1' for a bare tensor); a list is accepted while an input requires grad, refused when "
        "none does ('Backward hook for Modules where no input requires gradient should always return None or None for "
        "all gradients.'), where a tuple of None passes; a pre-hook's list passes in both cases",
        ("05", "What a returned value does"),
        ("05", "Exercise 2: `clip_grad_input`"))
def test_a_backward_hooks_return_of_the_wrong_length_or_a_list_is_refused(pin):
    product = _ScaledProduct()
    product.register_full_backward_hook(lambda module, grad_input, grad_output: tuple(
        2 * g for g in grad_input if g is not None))
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    error = error_of(lambda: product(a, torch.tensor([3.0, 4.0]), 10.0).sum().backward())
    pin.holds(isinstance(error, RuntimeError) and str(error) == "Backward hook returned an invalid number of "
              "grad_input, got 2, but expected 3", described(error))
    bare = nn.Linear(3, 2)
    bare.register_full_backward_pre_hook(lambda module, grad_output: grad_output[0])
    error = error_of(lambda: bare(torch.randn(4, 3, requires_grad=True)).sum().backward())
    pin.holds(isinstance(error, RuntimeError) and str(error) == "Backward pre hook returned an invalid number of "
              "grad_output, got 4, but expected 1", described(error))
    as_list = nn.Linear(3, 2)
    as_list.register_full_backward_hook(lambda module, grad_input, grad_output: list(grad_input))
    error = error_of(lambda: as_list(torch.randn(4, 3, requires_grad=True)).sum().backward())
    pin.holds(error is None, f"a list, with an input that requires grad: {described(error)}")
    error = error_of(lambda: _warnings_of(lambda: as_list(torch.randn(4, 3)).sum().backward()))
    pin.holds(isinstance(error, RuntimeError) and str(error) == "Backward hook for Modules where no input requires "
              "gradient should always return None or None for all gradients.",
              f"a list, with no input that requires grad: {described(error)}")
    as_tuple = nn.Linear(3, 2)
    as_tuple.register_full_backward_hook(lambda module, grad_input, grad_output: tuple(grad_input))
    error = error_of(lambda: _warnings_of(lambda: as_tuple(torch.randn(4, 3)).sum().backward()))
    pin.holds(error is None, f"a tuple of None, with no input that requires grad: {described(error)}")
    pre_list = nn.Linear(3, 2)
    pre_list.register_full_backward_pre_hook(lambda module, grad_output: list(grad_output))
    for needs_grad in (True, False):
        error = error_of(lambda: _warnings_of(lambda: pre_list(torch.randn(4, 3, requires_grad=needs_grad))
                                              .sum().backward()))
        pin.holds(error is None, f"a pre-hook's list, input requires grad {needs_grad}: {described(error)}")


@canary("a full backward hook on a head whose input comes from torch.no_grad() fires early: torch warns 'Full backward "
        "hook is firing' there too",
        ("05", "No backward hook fires under `no_grad`"))
def test_a_head_after_a_frozen_extractor_warns(pin):
    head = nn.Linear(4, 1)
    head.register_full_backward_hook(lambda module, grad_input, grad_output: None)
    with torch.no_grad():
        features = nn.Linear(3, 4)(torch.randn(5, 3))
    messages = _warnings_of(lambda: head(features).sum().backward())
    pin.holds(bool(messages) and messages[0].startswith("Full backward hook is firing"), f"warnings: {messages}")
