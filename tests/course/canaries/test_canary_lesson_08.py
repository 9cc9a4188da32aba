"""Canaries of lesson 08 (autograd-level hooks): the post-accumulate hook's rules, register_multi_grad_hook
under torch.autograd.grad (pytorch/pytorch#131753), and an unpack that is silently wrong."""

import warnings

import torch
from torch.autograd.graph import register_multi_grad_hook, saved_tensors_hooks

from canary_pins import canary, described, error_of


@canary("a post-accumulate-grad hook that returns a tensor raises 'Tensor post accumulate grad hooks should "
        "return None.' (on torch 2.13 only the tensor itself is let through); it cannot be registered on a "
        "non-leaf ('post accumulate grad hooks cannot be registered on non-leaf tensors'); torch.autograd.grad "
        "does not fire it",
        ("08", "A hook after `.grad` is written: `register_post_accumulate_grad_hook`"),
        ("08", "Exercise 1: `fuse_sgd_into_backward`"))
def test_a_post_accumulate_hook_must_return_none_and_is_for_leaves(pin):
    returns_something = torch.randn(3, requires_grad=True)
    returns_something.register_post_accumulate_grad_hook(lambda param: param.grad * 2)
    error = error_of(lambda: (returns_something * 2).sum().backward())
    pin.holds(isinstance(error, RuntimeError) and str(error) == "Tensor post accumulate grad hooks should return None.",
              f"a hook that returns a tensor: {described(error)}")
    returns_itself = torch.randn(3, requires_grad=True)
    returns_itself.register_post_accumulate_grad_hook(lambda param: param)
    error = error_of(lambda: (returns_itself * 2).sum().backward())
    pin.holds(error is None, f"a hook that returns the tensor itself: {described(error)}")
    leaf = torch.randn(3, requires_grad=True)
    error = error_of(lambda: (leaf * 2).register_post_accumulate_grad_hook(lambda param: None))
    pin.holds(isinstance(error, RuntimeError)
              and str(error) == "post accumulate grad hooks cannot be registered on non-leaf tensors",
              f"on a non-leaf: {described(error)}")
    calls = []
    leaf.register_post_accumulate_grad_hook(lambda param: calls.append("post-accumulate"))
    torch.autograd.grad((leaf * 3).sum(), leaf)
    pin.holds(calls == [], f"torch.autograd.grad fired: {calls}")


@canary("in mode 'all', a register_multi_grad_hook leaf among the inputs of torch.autograd.grad makes it raise "
        "'A leaf node was passed to _will_engine_execute_node but we are currently running autograd.grad().' "
        "(pytorch/pytorch#131753); in mode 'any' it works",
        ("08", "Waiting for several gradients: `register_multi_grad_hook`"),
        ("08", "Exercise 2: `call_when_all_grads_ready`"))
def test_a_multi_grad_hook_in_mode_all_breaks_autograd_grad_on_its_leaves(pin):
    a, b = torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True)
    with register_multi_grad_hook((a, b), lambda grads: None):
        error = error_of(lambda: torch.autograd.grad((a * 2 + b * 3).sum(), (a,)))
    pin.holds(isinstance(error, RuntimeError) and str(error).startswith(
        "A leaf node was passed to _will_engine_execute_node but we are currently running autograd.grad()."),
        f"mode 'all', the hooked leaf among inputs: {described(error)}")
    calls = []
    with register_multi_grad_hook((a, b), calls.append, mode="any"):
        torch.autograd.grad((a * 2 + b * 3).sum(), (a, b))
    pin.holds(len(calls) == 1, f"mode 'any': fn called {len(calls)} times")


@canary("a multi-grad hook's fn may run before the gradients are accumulated: for (a * 2 + b * 3).sum(), a.grad "
        "is still None inside fn while b.grad is written",
        ("08", "Waiting for several gradients: `register_multi_grad_hook`"))
def test_a_multi_grad_hook_runs_before_every_grad_is_accumulated(pin):
    a, b = torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True)
    snapshot = []
    with register_multi_grad_hook((a, b), lambda grads: snapshot.append((a.grad is None, b.grad is None))):
        (a * 2 + b * 3).sum().backward()
    pin.holds(snapshot == [(True, False)], f"(a.grad is None, b.grad is None) inside fn: {snapshot}")


@canary("an unpack hook that gives back a tensor of the wrong shape can make backward silently wrong: x ** 2 with "
        "unpack t[:1] gives x.grad [2, 2, 2] instead of [2, 4, 6]",
        ("08", "What autograd saves for backward, and how: `saved_tensors_hooks`"),
        ("08", "Exercise 3: `HalfPrecisionSaver`"))
def test_a_wrong_shape_unpack_gives_a_silently_wrong_gradient(pin):
    v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t[:1]):
        y = v ** 2
    error = error_of(lambda: y.sum().backward())
    pin.holds(error is None and v.grad.tolist() == [2.0, 2.0, 2.0],
              f"backward gave {described(error)}, v.grad {None if v.grad is None else v.grad.tolist()}")


@canary("on a leaf, one backward pass fires: the tensor hook, then the AccumulateGrad node's prehook (.grad not yet "
        "written), then the post-accumulate hook, then the node's hook (.grad written), whatever the order of "
        "registration",
        ("08", "The order of the hooks on a leaf, in one backward pass"))
def test_the_hooks_of_a_leaf_fire_in_autograds_order(pin):
    w = torch.randn(3, requires_grad=True)
    y = w * torch.randn(3)
    accumulate = y.grad_fn.next_functions[0][0]
    order = []
    w.register_post_accumulate_grad_hook(lambda param: order.append(("post-accumulate", w.grad is not None)))
    accumulate.register_hook(lambda grad_inputs, grad_outputs: order.append(("node hook", w.grad is not None)))
    accumulate.register_prehook(lambda grad_outputs: order.append(("node prehook", w.grad is not None)))
    w.register_hook(lambda grad: order.append(("tensor hook", w.grad is not None)))
    y.sum().backward()
    pin.holds(order == [("tensor hook", False), ("node prehook", False), ("post-accumulate", True), ("node hook", True)],
              f"(hook, .grad written) in the order they fired: {order}")


@canary("grad mode is off while backward runs its hooks, unless backward(create_graph=True): then it is on, and an "
        "in-place update of the parameter in a post-accumulate hook raises 'a leaf Variable that requires grad is "
        "being used in an in-place operation.'",
        ("08", "Grad mode inside a backward hook"))
def test_grad_mode_inside_a_backward_hook_is_on_only_under_create_graph(pin):
    for create_graph in (False, True):
        modes, p = [], torch.ones(3, requires_grad=True)

        def update(param):
            modes.append(torch.is_grad_enabled())
            param.sub_(0.1 * param.grad)

        p.register_post_accumulate_grad_hook(update)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_graph=True warns about a reference cycle .grad makes
            error = error_of(lambda: (p * p).sum().backward(create_graph=create_graph))
        pin.holds(modes == [create_graph], f"create_graph={create_graph}: grad mode in the hook {modes}")
        expected = (not create_graph and error is None) or (create_graph and isinstance(error, RuntimeError) and str(
            error) == "a leaf Variable that requires grad is being used in an in-place operation.")
        pin.holds(expected, f"create_graph={create_graph}: the in-place update gave {described(error)}")


@canary("inside disable_saved_tensors_hooks(message), entering saved_tensors_hooks raises RuntimeError(message), "
        "with the text as the whole message",
        ("08", "Forbidding saved-tensor hooks: `disable_saved_tensors_hooks`"))
def test_disable_saved_tensors_hooks_raises_its_own_message(pin):
    message = "this block packs its own saved tensors"
    with torch.autograd.graph.disable_saved_tensors_hooks(message):
        def enter():
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        error = error_of(enter)
    pin.holds(isinstance(error, RuntimeError) and str(error) == message, described(error))


@canary("a node's pre-hooks run in registration order, each seeing what the one before returned, and the returned "
        "tuple reaches the gradient; a node hook gets (grad_inputs, grad_outputs), None for an input that needs no "
        "grad, and its returned tuple replaces grad_inputs",
        ("08", "Hooks on the nodes of the graph"))
def test_node_pre_hooks_chain_their_returns_and_a_node_hook_replaces_grad_inputs(pin):
    w, x = torch.randn(3, requires_grad=True), torch.randn(3)
    y, seen = w * x, {}
    y.grad_fn.register_prehook(lambda grad_outputs: seen.update(pre=grad_outputs))
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.update(inputs=grad_inputs))
    y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 10,))
    y.grad_fn.register_prehook(lambda grad_outputs: seen.update(after=grad_outputs))
    (y * 2).sum().backward()
    pin.holds(torch.equal(seen["pre"][0], torch.full((3,), 2.0))
              and torch.equal(seen["after"][0], torch.full((3,), 20.0)) and torch.allclose(w.grad, 20 * x), f"pre-hooks saw {seen['pre'][0].tolist()} then "
              f"{seen['after'][0].tolist()}; w.grad / x = {(w.grad / x).tolist()}")
    pin.holds(len(seen["inputs"]) == 2 and seen["inputs"][1] is None, f"the node hook's grad_inputs: {seen['inputs']}")
    w.grad = None
    y = w * x
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (torch.ones(3), None))
    (y * 2).sum().backward()
    pin.holds(torch.equal(w.grad, torch.ones(3)), f"after a node hook returned (ones, None): w.grad {w.grad.tolist()}")


_FLOAT16_SAVED = "expected m1 and m2 to have the same dtype, but got: c10::Half != float"


@canary("an unpack hook that gives back a tensor of another dtype or shape makes the matrix product's backward raise "
        f"RuntimeError with '{_FLOAT16_SAVED}' (float16 saved and given back) or 'self must be a matrix' (given back "
        "flattened) in its text",
        ("08", "What autograd saves for backward, and how: `saved_tensors_hooks`"))
def test_an_unpack_of_another_dtype_or_shape_breaks_the_matrix_products_backward(pin):
    x, w = torch.randn(4, 3, requires_grad=True), torch.randn(3, 2, requires_grad=True)
    for pack, unpack, text in ((lambda t: t.half(), lambda t: t, _FLOAT16_SAVED),
                               (lambda t: t, lambda t: t.flatten(), "self must be a matrix")):
        with saved_tensors_hooks(pack, unpack):
            y = (x * 2.0) @ w
        error = error_of(lambda: y.sum().backward())
        pin.holds(isinstance(error, RuntimeError) and text in str(error), described(error))
