"""Canaries of lesson 01 (tensor hooks): its traps."""

import warnings

import torch

from canary_pins import canary, described, error_of


@canary("the backward of sum() hands a tensor hook an expanded gradient (stride (0,)), and an in-place write "
        "to it raises 'more than one element of the written-to tensor refers to a single memory location'",
        ("01", "Trap: changing the gradient in place"),
        ("01", "Exercise 1: `double_grad`"), ("01", "Exercise 2: `make_scale_hook`"),
        ("01", "Exercise 3: `make_clip_hook`"))
def test_an_in_place_write_to_the_expanded_gradient_of_sum_raises(pin):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y, strides = 2 * x, []

    def scale_in_place(grad):
        strides.append(grad.stride())
        grad.mul_(10)

    y.register_hook(scale_in_place)
    error = error_of(lambda: y.sum().backward())
    pin.holds(strides == [(0,)], f"the hook's gradient has stride {strides}")
    pin.holds(isinstance(error, RuntimeError) and "more than one element of the written-to tensor refers to a "
              "single memory location" in str(error), described(error))


@canary("the backward of a + b hands a and b the same gradient memory, so an in-place edit in a hook on a "
        "silently changes b.grad (no error, no warning)",
        ("01", "Trap: changing the gradient in place"))
def test_an_in_place_edit_of_a_shared_gradient_silently_changes_the_sibling(pin):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)

    def times_100_in_place(grad):
        grad.mul_(100)

    a.register_hook(times_100_in_place)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ((a + b) * torch.tensor([1.0, 2.0])).sum().backward()
    pin.holds(torch.equal(b.grad, torch.tensor([100.0, 200.0])), f"b.grad is {b.grad.tolist()} (the true one is "
              "[1.0, 2.0]; the lesson shows [100.0, 200.0])")
    pin.holds(not caught, f"warnings: {[str(w.message) for w in caught]}")
    a, b = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0], requires_grad=True)
    a.register_hook(lambda grad: grad * 100)
    ((a + b) * torch.tensor([1.0, 2.0])).sum().backward()
    pin.holds(torch.equal(b.grad, torch.tensor([1.0, 2.0])), f"with a returned tensor, b.grad is {b.grad.tolist()}")


@canary("a gradient recorded with .detach() alone shares its memory with the leaf's .grad, so the next backward "
        "(without zeroing) changes the recorded value; under create_graph=True the hook's gradient has a graph",
        ("01", "Recording gradients: two more traps"),
        ("01", "Exercise 4: `record_grads`"))
def test_a_detached_recorded_gradient_changes_with_the_next_backward(pin):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    recorded = []
    x.register_hook(lambda grad: recorded.append(grad.detach()))
    (2 * x).sum().backward()
    pin.holds(recorded[0].data_ptr() == x.grad.data_ptr(), "the recorded gradient no longer shares x.grad's memory")
    (3 * x).sum().backward()
    pin.holds(torch.equal(recorded[0], torch.full((3,), 5.0)), f"after the second backward the first recorded "
              f"gradient is {recorded[0].tolist()} (the lesson shows [5.0, 5.0, 5.0])")
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    stored = []
    x.register_hook(stored.append)
    torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    pin.holds(stored[0].requires_grad and stored[0].grad_fn is not None,
              "under create_graph=True the gradient a hook receives has no graph")


@canary("a hook's replacement gradient must keep the shape and dtype: backward raises \"hook '<lambda>' has changed "
        "the size of value\" or \"hook 'to_double' has changed the type of value\", with the hook's name",
        ("01", "The returned tensor must keep the shape and dtype"))
def test_a_replacement_gradient_of_another_shape_or_dtype_is_rejected(pin):
    def to_double(grad):
        return grad.double()

    for hook, expected in ((lambda grad: grad.sum(), "hook '<lambda>' has changed the size of value"),
                           (to_double, "hook 'to_double' has changed the type of value")):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.register_hook(hook)
        error = error_of(lambda: (x * x).sum().backward())
        pin.holds(isinstance(error, RuntimeError) and expected in str(error), f"expected {expected!r}: "
                  f"{described(error)}")


@canary("registering a hook on a tensor that does not require grad raises 'cannot register a hook on a tensor that "
        "doesn't require gradient' (also a frozen model's conv output in Grad-CAM)",
        ("01", "Only tensors that require grad can be hooked"),
        ("01", "Leaf and non-leaf tensors"),
        ("06", "Grad-CAM: where is the model looking?"),
        ("06", "Exercise 2: `grad_cam`"), ("11", "Gradient norms: which hook, and when"))
def test_a_tensor_that_needs_no_grad_cannot_be_hooked(pin):
    error = error_of(lambda: torch.ones(3).register_hook(lambda grad: grad))
    pin.holds(isinstance(error, RuntimeError) and str(error) == "cannot register a hook on a tensor that doesn't "
              "require gradient", described(error))


@canary("on a non-leaf, .grad is None (reading it warns '... not a leaf Tensor ...') unless retain_grad(), and "
        "then it holds the gradient after the hook's change, whether retain_grad() came before or after the hook",
        ("01", "Leaf and non-leaf tensors"))
def test_retain_grad_shows_the_hooks_change_in_either_order(pin):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = 2 * x
    (h * h).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h_grad = h.grad
    pin.holds(h_grad is None and any("not a leaf Tensor" in str(w.message) for w in caught),
              f"h.grad {h_grad}, warnings {[str(w.message) for w in caught]}")
    for retain_first in (True, False):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = 2 * x
        if retain_first:
            h.retain_grad()
        h.register_hook(lambda grad: grad * 0.5)
        if not retain_first:
            h.retain_grad()
        (h * h).sum().backward()
        pin.holds(torch.equal(h.grad, torch.tensor([2.0, 4.0, 6.0])), f"retain_grad() {'before' if retain_first else 'after'} "
                  f"the hook: h.grad = {h.grad.tolist()} (the lesson shows [2.0, 4.0, 6.0])")
