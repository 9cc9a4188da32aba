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


class _Add(nn.Module):
    def forward(self, x, y):
        return x + y


class _AddPair(nn.Module):
    def forward(self, pair):
        a, b = pair
        return a + b


@canary("a pre-hook's return that is not a tuple (a tensor, a list) is wrapped into a 1-tuple, and a tuple replaces "
        "all positional arguments: returning only the new x drops y ('missing 1 required positional argument: "
        "'y''), and a module whose single argument is a tuple gets it spread ('takes 2 positional arguments but 3 "
        "were given')",
        ("03", "What a return value does"))
def test_a_pre_hooks_return_replaces_all_positional_arguments(pin):
    a, b = torch.ones(2), torch.full((2,), 5.0)
    linear = nn.Linear(2, 2)
    with linear.register_forward_pre_hook(lambda module, args: torch.zeros(1, 2)):
        pin.holds(torch.equal(linear(torch.ones(1, 2)), linear.bias.detach().unsqueeze(0)),
                  "a returned bare tensor was not used as the only argument")
    for returned in (lambda module, args: args[0] * 2, lambda module, args: [args[0] * 2, *args[1:]]):
        add = _Add()
        add.register_forward_pre_hook(returned)
        error = error_of(lambda: add(a, b))
        pin.holds(isinstance(error, TypeError) and "missing 1 required positional argument: 'y'" in str(error),
                  described(error))
    add_pair = _AddPair()
    add_pair.register_forward_pre_hook(lambda module, args: (args[0][0] * 2, args[0][1]))
    error = error_of(lambda: add_pair((a, b)))
    pin.holds(isinstance(error, TypeError) and "takes 2 positional arguments but 3 were given" in str(error),
              described(error))


class _Scale(nn.Module):
    def forward(self, x, scale=1.0):
        return x * scale


@canary("with with_kwargs=True a pre-hook must return None or a pair: returning a 1-tuple raises 'forward pre-hook "
        "must return None or a tuple of (new_args, new_kwargs)'; any pair passes that check and is unpacked as "
        "(new_args, new_kwargs) (a wrong one fails in forward, 'argument after ** must be a mapping', or not at "
        "all); the kwargs dict holds only the keywords the caller passed",
        ("03", "Keyword arguments: `with_kwargs=True`"),
        ("03", "Use 4: fixing a keyword argument"),
        ("03", "Exercise 4: `force_kwarg`"))
def test_a_with_kwargs_pre_hook_must_return_none_or_a_pair(pin):
    scale = _Scale()
    with scale.register_forward_pre_hook(lambda module, args, kwargs: args, with_kwargs=True):
        error = error_of(lambda: scale(torch.ones(2), scale=3.0))
    pin.holds(isinstance(error, RuntimeError) and str(error).startswith(
        "forward pre-hook must return None or a tuple of (new_args, new_kwargs)"), described(error))
    add = _Add()
    with add.register_forward_pre_hook(lambda module, args, kwargs: args, with_kwargs=True):
        error = error_of(lambda: add(torch.ones(2), torch.ones(2)))
    pin.holds(isinstance(error, TypeError) and str(error).endswith("argument after ** must be a mapping, not Tensor"),
              described(error))
    with scale.register_forward_pre_hook(lambda module, args, kwargs: (args[0], kwargs), with_kwargs=True):
        spread = scale(torch.tensor([2.0, 3.0]))
    pin.holds(spread.shape == () and spread.item() == 6.0, f"(args[0], kwargs) on [2, 3] gave {spread}")
    seen = []
    with scale.register_forward_pre_hook(lambda module, args, kwargs: seen.append(dict(kwargs)), with_kwargs=True):
        scale(torch.ones(2))
        scale(torch.ones(2), scale=2.0)
    pin.holds(seen == [{}, {"scale": 2.0}], f"the kwargs the hook received: {seen}")


@canary("torch.normal(x, std) cuts the gradient: the gradient with respect to x is zero; x + noise passes it on",
        ("03", "Use 1: noise for data augmentation"),
        ("03", "Exercise 1: `add_input_noise`"))
def test_torch_normal_gives_no_gradient_to_its_mean(pin):
    x = torch.ones(4, requires_grad=True)
    torch.normal(x, 0.1).sum().backward()
    pin.holds(torch.equal(x.grad, torch.zeros(4)), f"gradient through torch.normal(x, std): {x.grad.tolist()}")


@canary("channel statistics of shape (C,) broadcast against the last dimension: 'The size of tensor a (8) must match "
        "the size of tensor b (3) at non-singleton dimension 3' for (N, 3, 8, 8) images",
        ("03", "Use 2: preprocessing the input"),
        ("03", "Exercise 2: `normalize_input`"))
def test_channel_statistics_broadcast_against_the_last_dimension(pin):
    error = error_of(lambda: torch.randn(2, 3, 8, 8) - torch.zeros(3))
    pin.holds(isinstance(error, RuntimeError) and str(error) == "The size of tensor a (8) must match the size of "
              "tensor b (3) at non-singleton dimension 3", described(error))


@canary("view() on a non-contiguous tensor (a permuted channels-last batch) raises 'view size is not compatible with "
        "input tensor's size and stride'; reshape copies it and equals flatten(1)",
        ("03", "Use 3: changing the input on a condition"),
        ("03", "Exercise 3: `flatten_images`"))
def test_view_of_a_permuted_batch_raises_and_reshape_copies(pin):
    images = torch.randn(4, 8, 8, 3).permute(0, 3, 1, 2)
    error = error_of(lambda: images.view(4, -1))
    pin.holds(isinstance(error, RuntimeError) and str(error).startswith(
        "view size is not compatible with input tensor's size and stride"), described(error))
    flat = images.reshape(4, -1)
    pin.holds(flat.data_ptr() != images.data_ptr() and torch.equal(flat, images.flatten(1)),
              "reshape no longer copies a permuted batch, or differs from flatten(1)")


class _Add(nn.Module):
    def forward(self, x, y):
        return x + y


@canary("a with_kwargs=True pre-hook that returns args (two tensors) or (kwargs, args) makes the call raise TypeError "
        "ending 'Add.forward() argument after ** must be a mapping, not Tensor' and 'Add.forward() argument after ** "
        "must be a mapping, not tuple': torch takes the pair as (new_args, new_kwargs) and Python unpacks the second",
        ("03", "Keyword arguments: `with_kwargs=True`"))
def test_a_with_kwargs_pre_hook_that_returns_the_wrong_pair_raises_type_error(pin):
    a, b = torch.ones(2), torch.ones(2)
    for hook, ending in ((lambda module, args, kwargs: args,
                          "Add.forward() argument after ** must be a mapping, not Tensor"),
                         (lambda module, args, kwargs: (kwargs, args),
                          "Add.forward() argument after ** must be a mapping, not tuple")):
        add = _Add()
        add.register_forward_pre_hook(hook, with_kwargs=True)
        error = error_of(lambda: add(a, b))
        pin.holds(isinstance(error, TypeError) and str(error).endswith(ending), described(error))
