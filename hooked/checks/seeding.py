"""Building a check's model from a fixed seed without touching the random state the learner's
code draws from."""

import torch


def seeded(seed, build, *args):
    """build(*args) with torch's global random state seeded with `seed` (the parameters a module
    draws when it is made), and left as it was afterwards: the learner's own draws (noise, dropout)
    must not come out the same in every check because the check reseeded torch."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build(*args)
