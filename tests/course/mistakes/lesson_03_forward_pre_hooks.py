"""Mistake catalogue for lesson 03, forward pre-hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py."""

ENTRIES = [
    # ------------------------------------------------------------------ add_input_noise
    dict(exercise="add_input_noise", kind="wrong", why="adds the noise to x in place",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if mod.training:
            x = args[0]
            x.add_(torch.randn(x.shape, generator=generator) * std)

    return module.register_forward_pre_hook(hook)
''',
         expect=["changed in place", "in-place operation"]),
    dict(exercise="add_input_noise", kind="wrong", why="adds noise in eval mode too",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        x = args[0]
        return (x + torch.randn(x.shape, generator=generator) * std, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["eval mode", "module.training"]),
    dict(exercise="add_input_noise", kind="wrong", why="looks at the mode once, when registering",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    training = module.training

    def hook(mod, args):
        if not training:
            return None
        x = args[0]
        return (x + torch.randn(x.shape, generator=generator) * std, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["on every call", "not once when the hook is registered"]),
    dict(exercise="add_input_noise", kind="wrong", why="ignores the generator",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x + torch.randn_like(x) * std, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["seeded alike", "generator=generator"]),
    dict(exercise="add_input_noise", kind="wrong", why="a fixed-seed generator of its own",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    own = torch.Generator().manual_seed(0)

    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x + torch.randn(x.shape, generator=own) * std, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["identical noise", "not from a generator of your own"]),
    dict(exercise="add_input_noise", kind="wrong", why="scales by the variance std ** 2",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x + torch.randn(x.shape, generator=generator) * std ** 2, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["standard deviation", "std squared, the variance"]),
    dict(exercise="add_input_noise", kind="wrong", why="treats std as the variance (square root)",
         source='''
import math

import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x + torch.randn(x.shape, generator=generator) * math.sqrt(std), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["square root of std", "not the variance"]),
    dict(exercise="add_input_noise", kind="wrong", why="forgets to scale by std",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x + torch.randn(x.shape, generator=generator), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["standard deviation of torch.randn itself"]),
    dict(exercise="add_input_noise", kind="wrong", why="uniform noise with the right spread",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        uniform = torch.rand(x.shape, generator=generator) - 0.5
        return (x + uniform * std * 12 ** 0.5, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["normal distribution", "not the uniform one"]),
    dict(exercise="add_input_noise", kind="wrong", why="multiplicative noise",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x * (1 + torch.randn(x.shape, generator=generator) * std), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["depends on the input"]),
    dict(exercise="add_input_noise", kind="wrong", why="one noise value per sample, broadcast",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        per_sample = torch.randn((x.shape[0],) + (1,) * (x.dim() - 1), generator=generator) * std
        return (x + per_sample, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["repeats itself along dimension", "full shape"]),
    dict(exercise="add_input_noise", kind="wrong", why="the same noise on every call",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    drawn = {}

    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        if x.shape not in drawn:
            drawn[x.shape] = torch.randn(x.shape, generator=generator) * std
        return (x + drawn[x.shape], *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["exactly the same noise", "new noise on every call"]),
    dict(exercise="add_input_noise", kind="wrong", why="returns only the noisy x",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return x + torch.randn(x.shape, generator=generator) * std

    return module.register_forward_pre_hook(hook)
''',
         expect=["1 positional argument", "replaces all positional arguments"]),
    dict(exercise="add_input_noise", kind="wrong", why="float64 noise changes the dtype",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        noise = torch.randn(x.shape, generator=generator, dtype=torch.float64) * std
        return (x + noise, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["dtype torch.float32 of x"]),
    dict(exercise="add_input_noise", kind="wrong", why="works on x.data and cuts the graph",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0].data
        return (x + torch.randn(x.shape, generator=generator, dtype=x.dtype) * std, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["cut off from autograd"]),
    dict(exercise="add_input_noise", kind="wrong", why="torch.normal around x has a zero gradient",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        return (torch.normal(args[0], std, generator=generator), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["all zero", "torch.normal(x, std)"]),
    dict(exercise="add_input_noise", kind="wrong", why="a forward hook instead of a pre-hook",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args, output):
        if not mod.training:
            return None
        return output + torch.randn(output.shape, generator=generator) * std

    return module.register_forward_hook(hook)
''',
         expect=["no noise was added", "use register_forward_pre_hook"]),
    dict(exercise="add_input_noise", kind="wrong", why="does not return the handle",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x + torch.randn(x.shape, generator=generator) * std, *args[1:])

    module.register_forward_pre_hook(hook)
''',
         expect=["returned None", "expected the handle"]),
    dict(exercise="add_input_noise", kind="right", why="torch.normal with a size",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return
        x, *rest = args
        noise = torch.normal(0.0, std, size=x.shape, generator=generator, dtype=x.dtype)
        return (x + noise, *rest)

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="add_input_noise", kind="right", why="new_empty().normal_() and a list of args",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if mod.training:
            new_args = list(args)
            x = new_args[0]
            new_args[0] = x + x.new_empty(x.shape).normal_(0.0, std, generator=generator)
            return tuple(new_args)
        return None

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="add_input_noise", kind="right", why="randn_like with the generator, closure's module",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(_, args):
        if not module.training:
            return args
        noisy = args[0] + std * torch.randn_like(args[0], generator=generator)
        return (noisy,) + args[1:]

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="add_input_noise", kind="wrong", why="noise only on the first sample of the batch",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0].clone()
        x[0] = x[0] + torch.randn(x[0].shape, generator=generator) * std
        return (x, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['exactly 0 at', 'got no noise', 'full shape of x']),
    dict(exercise="add_input_noise", kind="wrong", why="one noise value drawn when registering",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    noise = torch.randn(1, generator=generator) * std

    def hook(mod, args):
        if not mod.training:
            return None
        return (args[0] + noise, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['the same number everywhere']),
    dict(exercise="add_input_noise", kind="wrong", why="draws from a copy of the generator",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    own = None
    if generator is not None:
        own = torch.Generator()
        own.set_state(generator.get_state())  # leaves the caller's generator alone

    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x + torch.randn(x.shape, generator=own) * std, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['same state as before the call', 'a copy of the generator', 'generator=generator']),
    dict(exercise="add_input_noise", kind="wrong", why="seeds the global state from the generator",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    if generator is not None:
        torch.manual_seed(generator.initial_seed())

    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return (x + torch.randn(x.shape) * std, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['same state as before the call', 'global random state']),
    dict(exercise="add_input_noise", kind="wrong", why="returns a list of arguments",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        return [x + torch.randn(x.shape, generator=generator) * std, *args[1:]]

    return module.register_forward_pre_hook(hook)
''',
         expect=['1 positional argument', 'not a tuple becomes the only one']),
    dict(exercise="add_input_noise", kind="right", why="functools.partial and randn with a star shape",
         source='''
import functools

import torch


def _noisy(mod, args, std, generator):
    if not mod.training:
        return None
    x = args[0]
    return (x + std * torch.randn(*x.shape, generator=generator, dtype=x.dtype), *args[1:])


def add_input_noise(module, std, generator=None):
    return module.register_forward_pre_hook(functools.partial(_noisy, std=std, generator=generator))
''',
         expect=[]),
    dict(exercise="add_input_noise", kind="right", why="a lambda with torch.normal around zeros",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    return module.register_forward_pre_hook(
        lambda m, a: (a[0] + torch.normal(torch.zeros_like(a[0]), std, generator=generator), *a[1:])
        if m.training else None)
''',
         expect=[]),
    dict(exercise="add_input_noise", kind="right", why="Box-Muller from uniform draws",
         source='''
import math

import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        u1 = torch.rand(x.shape, generator=generator, dtype=torch.float64).clamp_min(1e-300)
        u2 = torch.rand(x.shape, generator=generator, dtype=torch.float64)
        normal = torch.sqrt(-2 * torch.log(u1)) * torch.cos(2 * math.pi * u2)
        return (x + (normal * std).to(x.dtype), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="add_input_noise", kind="right", why="adds in place to a clone",
         source='''
import torch


def add_input_noise(module, std, generator=None):
    def hook(mod, args):
        if not mod.training:
            return
        x = args[0].clone()
        x += torch.empty_like(x).normal_(mean=0.0, std=std, generator=generator)
        return (x,) + tuple(args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),

    # ------------------------------------------------------------------ normalize_input
    dict(exercise="normalize_input", kind="wrong", why="statistics broadcast against the last dimension",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        return ((x - torch.tensor(mean)) / torch.tensor(std), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["must match the size", "last dimension", "(1, C, 1, ...)"]),
    dict(exercise="normalize_input", kind="wrong", why="statistics along the last dimension, broadcast by luck",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        if x.shape[-1] == len(mean):
            return ((x - torch.tensor(mean, dtype=x.dtype)) / torch.tensor(std, dtype=x.dtype), *args[1:])
        shape = (1, -1) + (1,) * (x.dim() - 2)
        m = torch.tensor(mean, dtype=x.dtype).view(shape)
        s = torch.tensor(std, dtype=x.dtype).view(shape)
        return ((x - m) / s, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["normalized along the last dimension"]),
    dict(exercise="normalize_input", kind="wrong", why="normalizes x in place",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (1, -1) + (1,) * (x.dim() - 2)
        x.sub_(torch.tensor(mean, dtype=x.dtype).view(shape)).div_(torch.tensor(std, dtype=x.dtype).view(shape))

    return module.register_forward_pre_hook(hook)
''',
         expect=["changed in place"]),
    dict(exercise="normalize_input", kind="wrong", why="divides by the variance",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (1, -1) + (1,) * (x.dim() - 2)
        m = torch.tensor(mean, dtype=x.dtype).view(shape)
        s = torch.tensor(std, dtype=x.dtype).view(shape)
        return ((x - m) / s ** 2, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["std ** 2, the variance"]),
    dict(exercise="normalize_input", kind="wrong", why="only subtracts the mean",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (1, -1) + (1,) * (x.dim() - 2)
        return (x - torch.tensor(mean, dtype=x.dtype).view(shape), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["did not divide by std"]),
    dict(exercise="normalize_input", kind="wrong", why="statistics shaped for 4-D images only",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        m = torch.tensor(mean, dtype=x.dtype).view(1, -1, 1, 1)
        s = torch.tensor(std, dtype=x.dtype).view(1, -1, 1, 1)
        return ((x - m) / s, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["more dimensions than x", "trailing dimension"]),
    dict(exercise="normalize_input", kind="wrong", why="normalizes with the statistics of x",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        dims = [d for d in range(x.dim()) if d != 1]
        return ((x - x.mean(dim=dims, keepdim=True)) / x.std(dim=dims, keepdim=True), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["statistics of x itself"]),
    dict(exercise="normalize_input", kind="wrong", why="float64 statistics change the dtype",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (1, -1) + (1,) * (x.dim() - 2)
        m = torch.tensor(mean, dtype=torch.float64).view(shape)
        s = torch.tensor(std, dtype=torch.float64).view(shape)
        return ((x - m) / s, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["expected dtype torch.float32", "dtype=x.dtype"]),
    dict(exercise="normalize_input", kind="wrong", why="returns only the normalized x",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (1, -1) + (1,) * (x.dim() - 2)
        return (x - torch.tensor(mean).view(shape)) / torch.tensor(std).view(shape)

    return module.register_forward_pre_hook(hook)
''',
         expect=["replaces all positional arguments", "(new_x, *args[1:])"]),
    dict(exercise="normalize_input", kind="right", why="moves the channels last and back",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        channels_last = x.movedim(1, -1)
        m = torch.tensor(list(mean), dtype=x.dtype)
        s = torch.tensor(list(std), dtype=x.dtype)
        return (((channels_last - m) / s).movedim(-1, 1),) + tuple(args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="normalize_input", kind="right", why="channel by channel with torch.stack",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        channels = [(x[:, c] - mean[c]) / std[c] for c in range(x.shape[1])]
        return (torch.stack(channels, dim=1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="normalize_input", kind="wrong", why="statistics shaped on the first call and kept",
         source='''
import torch


def normalize_input(module, mean, std):
    cache = {}

    def hook(mod, args):
        x = args[0]
        if not cache:
            shape = (1, -1) + (1,) * (x.dim() - 2)
            cache["m"] = torch.tensor(mean, dtype=x.dtype).view(shape)
            cache["s"] = torch.tensor(std, dtype=x.dtype).view(shape)
        return ((x - cache["m"]) / cache["s"], *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['after calls with x of shape', 'more dimensions than x']),
    dict(exercise="normalize_input", kind="wrong", why="normalizes only in training mode",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        if not mod.training:
            return None
        x = args[0]
        shape = (1, -1) + (1,) * (x.dim() - 2)
        m = torch.tensor(mean, dtype=x.dtype).view(shape)
        s = torch.tensor(std, dtype=x.dtype).view(shape)
        return ((x - m) / s, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['in eval mode', 'eval mode too', 'x unchanged']),
    dict(exercise="normalize_input", kind="wrong", why="statistics along dimension 0",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (-1,) + (1,) * (x.dim() - 1)
        m = torch.tensor(mean, dtype=x.dtype).view(shape)
        s = torch.tensor(std, dtype=x.dtype).view(shape)
        return ((x - m) / s, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['must match the size', '(1, C, 1, ...)', '2 for this 4-D x']),
    dict(exercise="normalize_input", kind="wrong", why="statistics shaped for 2-D or 4-D inputs only",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (1, -1) if x.dim() == 2 else (1, -1, 1, 1)
        m = torch.tensor(mean, dtype=x.dtype).view(shape)
        s = torch.tensor(std, dtype=x.dtype).view(shape)
        return ((x - m) / s, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['must match the size', 'fit only 4-d inputs', '1 for this 3-D x']),
    dict(exercise="normalize_input", kind="wrong", why="returns the hook, not the handle",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (1, -1) + (1,) * (x.dim() - 2)
        m = torch.tensor(mean, dtype=x.dtype).view(shape)
        return ((x - m) / torch.tensor(std, dtype=x.dtype).view(shape), *args[1:])

    module.register_forward_pre_hook(hook)
    return hook
''',
         expect=['returned function', 'expected the handle']),
    dict(exercise="normalize_input", kind="right", why="einsum with the channel dimension named",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        m = torch.tensor(mean, dtype=x.dtype)
        s = torch.tensor(std, dtype=x.dtype)
        scaled = torch.einsum("nc...,c->nc...", x, 1 / s)
        shift = torch.einsum("nc...,c->nc...", torch.ones_like(x), m / s)
        return (scaled - shift, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="normalize_input", kind="right", why="statistics shaped (C, 1, ...) and .to(x)",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (-1,) + (1,) * (x.dim() - 2)
        m = torch.as_tensor(mean).to(x).reshape(shape)
        s = torch.as_tensor(std).to(x).reshape(shape)
        return (x.sub(m).div(s),) + args[1:]

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="normalize_input", kind="right", why="float32 statistics promote with x",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = (1, len(mean)) + (1,) * (x.dim() - 2)
        return ((x - torch.Tensor(mean).view(shape)) / torch.Tensor(std).view(shape), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),

    # ------------------------------------------------------------------ flatten_images
    dict(exercise="flatten_images", kind="wrong", why="view() fails on non-contiguous input",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2:
            return (x.view(x.shape[0], -1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["view size is not compatible", "not contiguous", "reshape"]),
    dict(exercise="flatten_images", kind="wrong", why="flattens the batch dimension too",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2:
            return (x.flatten(), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["flattened the batch dimension too"]),
    dict(exercise="flatten_images", kind="wrong", why="flattens 1-D inputs too (flatten(1) raises)",
         source='''
def flatten_images(module):
    def hook(mod, args):
        return (args[0].flatten(1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["dimension out of range", "1-D or 2-D input must pass unchanged"]),
    dict(exercise="flatten_images", kind="wrong", why="reshapes 1-D inputs to (N, 1)",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        return (x.reshape(x.shape[0], -1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["expected shape (7,)", "1-d input must pass unchanged"]),
    dict(exercise="flatten_images", kind="wrong", why="keeps the channels, flattens from dim 2",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2:
            return (x.flatten(2), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["from dimension 2"]),
    dict(exercise="flatten_images", kind="wrong", why="only 4-D inputs are flattened",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() == 4:
            return (x.flatten(1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["more than 2 dimensions, not only 4-D"]),
    dict(exercise="flatten_images", kind="wrong", why="moves the channels last before flattening",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2:
            return (x.movedim(1, -1).reshape(x.shape[0], -1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["right shape but with other values", "own element order"]),
    dict(exercise="flatten_images", kind="wrong", why="returns only the flattened x",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2:
            return x.flatten(1)

    return module.register_forward_pre_hook(hook)
''',
         expect=["replaces all positional arguments"]),
    dict(exercise="flatten_images", kind="right", why="contiguous().view()",
         source='''
def flatten_images(module):
    def hook(mod, args):
        first, *rest = args
        if first.ndim <= 2:
            return args
        return (first.contiguous().view(first.size(0), -1), *rest)

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="flatten_images", kind="right", why="torch.flatten with start_dim",
         source='''
import torch


def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if len(x.shape) > 2:
            args = (torch.flatten(x, start_dim=1),) + args[1:]
        return args

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="flatten_images", kind="wrong", why="a NumPy round trip cuts the graph",
         source='''
import torch


def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2:
            return (torch.from_numpy(x.detach().numpy().reshape(x.shape[0], -1)), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['cut off from autograd']),
    dict(exercise="flatten_images", kind="wrong", why="flattens only in training mode",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2 and mod.training:
            return (x.flatten(1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['unchanged in eval mode', 'in every mode']),
    dict(exercise="flatten_images", kind="wrong", why="skips non-contiguous inputs to avoid the view error",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2 and x.is_contiguous():
            return (x.view(x.shape[0], -1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['not contiguous', 'reshape']),
    dict(exercise="flatten_images", kind="wrong", why="flattens 2-D inputs completely",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() == 2:
            return (x.reshape(-1), *args[1:])
        if x.dim() > 2:
            return (x.flatten(1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=['2-D input must pass unchanged']),
    dict(exercise="flatten_images", kind="wrong", why="reshapes the caller's tensor through x.data",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2:
            x.data = x.data.reshape(x.shape[0], -1)

    return module.register_forward_pre_hook(hook)
''',
         expect=['changed in place', 'x.data']),
    dict(exercise="flatten_images", kind="wrong", why="does not return the handle",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() > 2:
            return (x.flatten(1), *args[1:])

    module.register_forward_pre_hook(hook)
''',
         expect=['returned None', 'expected the handle']),
    dict(exercise="flatten_images", kind="right", why="nn.Flatten in a lambda",
         source='''
from torch import nn


def flatten_images(module):
    flatten = nn.Flatten()
    return module.register_forward_pre_hook(lambda m, a: (flatten(a[0]), *a[1:]) if a[0].dim() > 2 else None)
''',
         expect=[]),
    dict(exercise="flatten_images", kind="right", why="2-D inputs through flatten(1), which keeps them",
         source='''
def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() >= 2:
            return (x.flatten(1), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
    dict(exercise="flatten_images", kind="right", why="math.prod of the trailing sizes",
         source='''
import math


def flatten_images(module):
    def hook(mod, args):
        x = args[0]
        if x.dim() < 3:
            return None
        return (x.reshape(x.shape[0], math.prod(x.shape[1:])), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),

    # ------------------------------------------------------------------ force_kwarg
    dict(exercise="force_kwarg", kind="wrong", why="setdefault does not override",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        kwargs = dict(kwargs)
        kwargs.setdefault(name, value)
        return args, kwargs

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=["the value the caller passed", "override the caller's value"]),
    dict(exercise="force_kwarg", kind="wrong", why="only overrides, never adds",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        if name in kwargs:
            kwargs[name] = value
        return args, kwargs

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=["without 'scale'", "add it then, too"]),
    dict(exercise="force_kwarg", kind="wrong", why="a plain pre-hook adds a positional argument",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args):
        return args + (value,)

    return module.register_forward_pre_hook(hook)
''',
         expect=["cannot add keyword arguments", "with_kwargs=True"]),
    dict(exercise="force_kwarg", kind="wrong", why="with_kwargs hook returns only the kwargs",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        return {**kwargs, name: value}

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=["forward pre-hook must return none or a tuple", "the pair (args, kwargs)"]),
    dict(exercise="force_kwarg", kind="wrong", why="drops the caller's other keyword arguments",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        return args, {name: value}

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=["other keyword arguments must pass through"]),
    dict(exercise="force_kwarg", kind="wrong", why="name and value kept in globals",
         source='''
forced = {}


def force_kwarg(module, name, value):
    forced["name"], forced["value"] = name, value

    def hook(mod, args, kwargs):
        return args, {**kwargs, forced["name"]: forced["value"]}

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=["another module", "its own name and value"]),
    dict(exercise="force_kwarg", kind="wrong", why="does not return the handle",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        return args, {**kwargs, name: value}

    module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=["expected the handle"]),
    dict(exercise="force_kwarg", kind="right", why="edits the kwargs dict in place and returns None",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        kwargs[name] = value

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=[]),
    dict(exercise="force_kwarg", kind="right", why="dict union, a hook class",
         source='''
class ForceKeyword:
    def __init__(self, name, value):
        self.name, self.value = name, value

    def __call__(self, module, args, kwargs):
        return args, kwargs | {self.name: self.value}


def force_kwarg(module, name, value):
    return module.register_forward_pre_hook(ForceKeyword(name, value), with_kwargs=True)
''',
         expect=[]),
    dict(exercise="force_kwarg", kind="wrong", why="a kwargs hook registered without with_kwargs",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        return args, {**kwargs, name: value}

    return module.register_forward_pre_hook(hook)
''',
         expect=['missing 1 required positional argument', 'with_kwargs=True']),
    dict(exercise="force_kwarg", kind="wrong", why="returns the pair the wrong way round",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        return {**kwargs, name: value}, args

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=['must be a mapping', 'in the order (args, kwargs)']),
    dict(exercise="force_kwarg", kind="wrong", why="one dict kept between calls",
         source='''
def force_kwarg(module, name, value):
    merged = {}

    def hook(mod, args, kwargs):
        merged.update(kwargs)
        merged[name] = value
        return args, merged

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=['an earlier call did', 'new dict on every call']),
    dict(exercise="force_kwarg", kind="wrong", why="the string 'name' as the key",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        return args, {**kwargs, "name": value}

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=["'name' in place of 'scale'", 'not a fixed string']),
    dict(exercise="force_kwarg", kind="wrong", why="a forward hook sets the keyword too late",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs, output):
        kwargs[name] = value

    return module.register_forward_hook(hook, with_kwargs=True)
''',
         expect=["without 'scale'", 'runs after forward', 'register_forward_pre_hook']),
    dict(exercise="force_kwarg", kind="right", why="functools.partial with keyword-only options",
         source='''
import functools


def _forced(mod, args, kwargs, *, name, value):
    new = dict(kwargs)
    new[name] = value
    return args, new


def force_kwarg(module, name, value):
    return module.register_forward_pre_hook(functools.partial(_forced, name=name, value=value), with_kwargs=True)
''',
         expect=[]),
    dict(exercise="force_kwarg", kind="right", why="a lambda merging with dict()",
         source='''
def force_kwarg(module, name, value):
    return module.register_forward_pre_hook(lambda m, a, k: (a, dict(k, **{name: value})), with_kwargs=True)
''',
         expect=[]),
    dict(exercise="force_kwarg", kind="right", why="update, a list of args, prepended",
         source='''
def force_kwarg(module, name, value):
    def hook(mod, args, kwargs):
        kwargs.update({name: value})
        return list(args), kwargs

    return module.register_forward_pre_hook(hook, with_kwargs=True, prepend=True)
''',
         expect=[]),
]
