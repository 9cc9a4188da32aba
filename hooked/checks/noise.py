"""Judging random noise by its statistics, so that every correct way of drawing it
passes (torch.randn(..., generator=g) * std, torch.normal, x.new_empty(...).normal_(...)).

Two kinds of checks:
- `check_noise_sample(noise, std, what, input=None)`: one sample of noise, e.g. the output
  of a noisy layer minus its clean output. Mean 0, standard deviation `std`, normal
  (not uniform), every element drawn anew (not one value repeated along a dimension),
  and, when `input` is given, unrelated to it.
- `check_seeded_noise(draw, what)` and `check_new_noise_each_call(draw, what)`: the
  noise comes from the generator it is given, and is fresh on each call.
- `check_generator_advanced(generator, state_before, what, hook_name)`: the noise was
  drawn from the caller's generator itself (so it advanced), not from a copy of it.

Each statistical test allows `Z` standard errors of its estimate, computed from the
sample size: a correct answer fails with a probability around 1e-8 per test, and a
sample of a few thousand elements still tells std from variance for std far from 1.
All raise CheckFailed; `what` names the sample for the message, e.g. "the noise that
add_input_noise(module, 0.3) added to an input of shape (64, 8, 8)".

Seed the noise (torch.manual_seed, generators) apart from the inputs: torch.randn from a
generator seeded 301 draws the very values random_tensor(301, ...) holds, and noise equal
to a multiple of the input is (rightly) judged dependent on it.
"""

import math

import torch

from hooked.checks.check_api import fail
from hooked.checks.tensors import describe

# The named mistakes these checks recognize, for the check_of of an exercise that adds noise.
MISTAKES = {
    "noise-not-finite": "adds noise holding inf or nan",
    "noise-constant": "adds the same number everywhere instead of random noise",
    "noise-not-centred": "adds noise whose mean is not 0",
    "noise-uniform": "draws uniform noise (torch.rand) instead of normal noise",
    "noise-std-squared": "scales the noise by std squared, the variance",
    "noise-sqrt-std": "scales the noise by the square root of std",
    "noise-unscaled": "adds standard normal noise without scaling it by std",
    "noise-wrong-std": "adds noise of another standard deviation than std",
    "noise-broadcast": "draws a smaller noise tensor broadcast along a dimension",
    "noise-depends-on-input": "adds noise that depends on the input (scales it, or derives it from it)",
    "noise-not-from-generator": "draws the noise from torch's global random state, not the generator given",
    "noise-own-generator": "draws the noise from a generator of its own with a fixed seed",
    "noise-repeated": "adds the same noise on every call (stored, or reseeded each call)",
    "generator-not-advanced": "leaves the given generator where it was (draws from a copy, or elsewhere)",
}

Z = 6.0
MIN_SAMPLE = 1000
# Of normal samples, this fraction lies within one standard deviation of the mean.
WITHIN_ONE_STD = math.erf(1 / math.sqrt(2))


def check_noise_sample(noise, std, what, input=None, input_name=None):
    """Require `noise` (a tensor of at least MIN_SAMPLE elements, each dimension of
    size 1 or at least 2) to look like i.i.d. normal values of mean 0 and standard
    deviation `std` > 0; with `input`, also independent of it (`input_name`: see
    check_independent_of)."""
    if noise.numel() < MIN_SAMPLE:
        raise ValueError(f"a noise sample needs at least {MIN_SAMPLE} elements, not {noise.numel()}")
    values = noise.detach().double().flatten()
    if not torch.isfinite(values).all():
        fail(f"{what} contains inf or nan: {describe(noise)}.", "noise-not-finite")
    n = values.numel()
    measured_std = values.std().item()
    # Nearly rather than exactly: one number added to x and subtracted again varies by rounding.
    if measured_std <= 1e-3 * std:
        fail(f"{what} is the same number everywhere (about {values.mean().item():.4g}); expected normal noise of "
             f"standard deviation {std}, a new random value for every element.", "noise-constant")
    # Dependence first: it also distorts the mean and spread, and its message is the clearer one.
    _check_elements_independent(noise.detach().double(), what)
    if input is not None:
        check_independent_of(noise, input, what, input_name)
    mean = values.mean().item()
    if abs(mean) > Z * std / math.sqrt(n):
        fail(f"{what} has mean {mean:.4g} over {n} elements; expected mean 0 (normal noise centred on 0, such as "
             f"torch.randn(...) * std), within {Z * std / math.sqrt(n):.2g}.", "noise-not-centred")
    _check_std(measured_std, std, n, what)
    within = ((values.abs() < std).double().mean()).item()
    if abs(within - WITHIN_ONE_STD) > Z * math.sqrt(WITHIN_ONE_STD * (1 - WITHIN_ONE_STD) / n):
        fail(f"{what} has the right mean and standard deviation, but {within:.1%} of its values lie within one "
             f"standard deviation of 0; normal noise has {WITHIN_ONE_STD:.1%} there. Draw from the normal "
             "distribution (torch.randn, torch.normal), not the uniform one (torch.rand).", "noise-uniform")


def _check_std(measured, std, n, what):
    # The sample standard deviation has a relative standard error of about 1 / sqrt(2n).
    if abs(measured / std - 1) <= Z / math.sqrt(2 * n):
        return
    said = f"{what} has standard deviation {measured:.4g} over {n} elements; expected {std}."

    def near(value):
        return abs(measured / value - 1) <= Z / math.sqrt(2 * n)

    if near(std ** 2):
        fail(f"{said} That is std squared, the variance: scale standard normal noise by std itself, "
             "not by std ** 2.", "noise-std-squared")
    if near(math.sqrt(std)):
        fail(f"{said} That is the square root of std: `std` is already the standard deviation, not the variance; "
             "scale standard normal noise by std itself.", "noise-sqrt-std")
    if near(1.0):
        fail(f"{said} That is the standard deviation of torch.randn itself: scale the noise by std.", "noise-unscaled")
    fail(said, "noise-wrong-std")


def _check_elements_independent(noise, what):
    """Neighbours along every dimension must be uncorrelated: noise drawn with a
    smaller shape and broadcast (one value per sample, or the same for every sample)
    repeats values along a dimension."""
    for dim, size in enumerate(noise.shape):
        if size < 2:
            continue
        first, second = noise.narrow(dim, 0, size - 1), noise.narrow(dim, 1, size - 1)
        correlation = _correlation(first, second)
        if correlation > Z / math.sqrt(first.numel()):
            fail(f"{what} repeats itself along dimension {dim}: neighbouring values have correlation "
                 f"{correlation:.3f}, expected about 0. Draw one independent value per element, with the full "
                 f"shape of the tensor ({tuple(noise.shape)}), not a smaller tensor broadcast along a dimension.", "noise-broadcast")


def check_independent_of(noise, input, what, input_name=None):
    """The noise must not grow or shrink with `input` (as x * torch.randn(...) * std does):
    neither its values nor their squares may correlate with those of the input.
    `input_name` names the input in the message ("grad" for noise added to a gradient);
    None calls it "the input" and x."""
    said, symbol = ("the input", "x") if input_name is None else (input_name, input_name)
    noise, input = noise.detach().double().flatten(), input.detach().double().flatten()
    tolerance = Z / math.sqrt(noise.numel())
    for name, a, b in (("values", noise, input), ("squared values", noise ** 2, input ** 2)):
        correlation = _correlation(a, b)
        if abs(correlation) > tolerance:
            fail(f"{what} depends on {said}: the {name} of noise and {said.removeprefix('the ')} have correlation "
                 f"{correlation:.3f}, expected about 0. Add noise that does not depend on {symbol} ({symbol} + noise), "
                 f"rather than scaling {symbol} by it or deriving it from {symbol}.", "noise-depends-on-input")


def _correlation(a, b):
    a, b = a.flatten() - a.mean(), b.flatten() - b.mean()
    denominator = (a.norm() * b.norm()).item()
    return 0.0 if denominator == 0 else (a @ b).item() / denominator


def check_seeded_noise(draw, what, seed=1234):
    """`draw(generator)` runs the learner's noisy code with `generator` and returns
    a result that contains the noise. Equally seeded generators must give equal
    results, differently seeded ones different results."""
    first = draw(torch.Generator().manual_seed(seed))
    again = draw(torch.Generator().manual_seed(seed))
    if not torch.equal(first, again):
        fail(f"{what}: two generators seeded alike ({seed}) gave different noise; expected identical noise. "
             "Draw the noise from the generator you were given (generator=generator), not from torch's global "
             "random state.", "noise-not-from-generator")
    other = draw(torch.Generator().manual_seed(seed + 1))
    if torch.equal(first, other):
        fail(f"{what}: generators seeded {seed} and {seed + 1} gave identical noise; expected different noise. "
             "Draw the noise from the generator you were given, not from a generator of your own with a fixed seed.", "noise-own-generator")


def check_new_noise_each_call(draw, what):
    """`draw()` runs the learner's noisy code once; two runs must give different
    results (each call draws new noise, nothing is cached or reseeded)."""
    first, second = draw(), draw()
    if torch.equal(first, second):
        fail(f"{what}: two calls gave exactly the same noise; expected new noise on every call. Draw it anew inside "
             "the hook, from the generator's (or torch's) running random state: do not store it, and do not reseed "
             "a generator on each call.", "noise-repeated")


def check_generator_advanced(generator, state_before, what, hook_name):
    """After noise was added, the caller's `generator` must have moved on from
    `state_before`: noise drawn from a copy of it, or from torch's global random state
    after seeding from it, leaves it where it was, and the caller's next draws repeat."""
    if torch.equal(generator.get_state(), state_before):
        fail(f"{what}\nThe generator given to {hook_name} is in the same state as before the call: the noise was not drawn "
             "from it (but from torch's global random state, or a copy of the generator). Draw it from the "
             "generator itself (generator=generator), so that it advances with every draw.", "generator-not-advanced")
