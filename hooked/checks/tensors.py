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
    more = ", ..." if value.numel() > _SHOWN else ""
    return text + f", values [{', '.join(_shown_values(value))}{more}]"


_SHOWN = 6  # describe() shows this many values of a tensor


def _shown_values(value):
    return [f"{number:.4g}" for number in value.detach().flatten()[:_SHOWN].tolist()]


def _plain(value):
    return value.layout == torch.strided and value.device.type != "meta"


def first_difference(actual, expected, tolerance=1e-5):
    """' They first differ at index (i, j): got X, expected Y.' when `actual` and `expected` are tensors
    of one shape whose values describe() shows are the same, yet that differ further on (beyond
    `tolerance`, the comparison's own); otherwise ''. Without it, a message would show the learner two
    equal-looking tensors and say they differ."""
    if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)) \
            or actual.shape != expected.shape or not (_plain(actual) and _plain(expected)):
        return ""
    if _shown_values(actual) != _shown_values(expected):
        return ""
    wide = torch.complex128 if actual.is_complex() or expected.is_complex() else torch.float64
    got, want = actual.detach().cpu().to(wide), expected.detach().cpu().to(wide)
    differs = ~torch.isclose(got, want, rtol=tolerance, atol=tolerance, equal_nan=True)
    if not differs.any():
        return ""
    index = tuple(differs.nonzero()[0].tolist())
    got_text, want_text = _told_apart(got[index].item(), want[index].item())
    if not index:
        return f" They differ beyond the digits shown: got {got_text}, expected {want_text}."
    where = index[0] if len(index) == 1 else f"({', '.join(map(str, index))})"
    return f" They first differ at index {where}: got {got_text}, expected {want_text}."


def _told_apart(got, want):
    """The two numbers with as few significant digits (4 or more) as it takes to tell them apart."""
    for digits in range(4, 18):
        texts = f"{got:.{digits}g}", f"{want:.{digits}g}"
        if texts[0] != texts[1]:
            return texts
    return texts


def close(actual, expected, tolerance=1e-5):
    return (isinstance(actual, torch.Tensor) and actual.shape == expected.shape
            and torch.allclose(actual.detach().to(expected.dtype), expected, rtol=tolerance, atol=tolerance))
