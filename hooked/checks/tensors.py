"""Random inputs from fixed seeds, and tensors described in plain words for messages."""

import random

import torch


def random_shape(rng, max_dims=3, max_size=5):
    return tuple(rng.randint(1, max_size) for _ in range(rng.randint(1, max_dims)))


def random_tensor(seed, shape=None, dtype=torch.float32, scale=1.0):
    """A tensor of normal values; shape drawn from the seed when not given."""
    rng = random.Random(seed)
    shape = random_shape(rng) if shape is None else shape
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=dtype) * scale


def random_leaf(seed, shape=None, dtype=torch.float32):
    """random_tensor(...) as a leaf that requires grad, for a check that watches its gradient."""
    return random_tensor(seed, shape, dtype).requires_grad_()


def describe(value):
    """'tensor of shape (2, 3), float32' with values when there are few."""
    if not isinstance(value, torch.Tensor):
        if value is None:
            return "None"
        text = repr(value)
        return f"{type(value).__name__} {text if len(text) <= 80 else text[:77] + '...'}"
    dtype = str(value.dtype).removeprefix("torch.")
    text = f"tensor of shape {tuple(value.shape)}, {dtype}"
    if value.layout != torch.strided or value.device.type == "meta":
        return f"{text}, {value.layout} on {value.device}"
    numbers = [f"{number:.4g}" for number in value.detach().flatten()[:6].tolist()]
    more = ", ..." if value.numel() > 6 else ""
    return text + f", values [{', '.join(numbers)}{more}]"


def close(actual, expected, tolerance=1e-5):
    return (isinstance(actual, torch.Tensor) and actual.shape == expected.shape
            and torch.allclose(actual.detach().to(expected.dtype), expected, rtol=tolerance, atol=tolerance))
