"""Mistake catalogue for lesson 03, forward pre-hooks. The format of an entry is described in
tests/course/test_mistake_catalogue.py."""

from mistakes import edited, reference

ENTRIES = [
    # ------------------------------------------------------------------ add_input_noise
    dict(exercise="add_input_noise", kind="wrong", clause="not-in-place", why="adds the noise to x in place",
         mistake="03.add_input_noise.in-place",
         source=edited(reference("add_input_noise"), ("return (x + noise, *args[1:])", "x.add_(noise)")),
         expect=["changed in place", "in-place operation"]),
    dict(exercise="add_input_noise", kind="wrong", clause="eval-unchanged", why="adds noise in eval mode too",
         mistake="03.add_input_noise.noise-in-eval",
         source=edited(reference("add_input_noise"),
                       ("        if not mod.training:\n            return None\n", "")),
         expect=["eval mode", "module.training"]),
    dict(exercise="add_input_noise", kind="wrong", clause="mode-at-call", why="looks at the mode once, when registering",
         mistake="03.add_input_noise.training-decided-at-registration",
         source=edited(reference("add_input_noise"),
                       ("    def hook(mod, args):", "    training = module.training\n\n    def hook(mod, args):"),
                       ("if not mod.training:", "if not training:")),
         expect=["on every call", "not once when the hook is registered"]),
    dict(exercise="add_input_noise", kind="wrong", clause="generator", why="ignores the generator",
         mistake="03.add_input_noise.noise-not-from-generator",
         source=edited(reference("add_input_noise"),
                       ("torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)",
                        "torch.randn_like(x)")),
         expect=["seeded alike", "generator=generator"]),
    dict(exercise="add_input_noise", kind="wrong", clause="generator", why="a fixed-seed generator of its own",
         mistake="03.add_input_noise.noise-own-generator",
         source=edited(reference("add_input_noise"),
                       ("    def hook(mod, args):",
                        "    own = torch.Generator().manual_seed(0)\n"
                        "\n"
                        "    def hook(mod, args):"),
                       ("generator=generator,", "generator=own,")),
         expect=["identical noise", "not from a generator of your own"]),
    dict(exercise="add_input_noise", kind="wrong", clause="std", why="scales by the variance std ** 2",
         mistake="03.add_input_noise.noise-std-squared",
         source=edited(reference("add_input_noise"), ("device=x.device) * std", "device=x.device) * std ** 2")),
         expect=["standard deviation", "std squared, the variance"]),
    dict(exercise="add_input_noise", kind="wrong", clause="std", why="treats std as the variance (square root)",
         mistake="03.add_input_noise.noise-sqrt-std",
         source=edited(reference("add_input_noise"),
                       ("import torch", "import math\n\nimport torch"),
                       ("device=x.device) * std", "device=x.device) * math.sqrt(std)")),
         expect=["square root of std", "not the variance"]),
    dict(exercise="add_input_noise", kind="wrong", clause="std", why="forgets to scale by std",
         mistake="03.add_input_noise.noise-unscaled",
         source=edited(reference("add_input_noise"), ("device=x.device) * std", "device=x.device)")),
         expect=["standard deviation of torch.randn itself"]),
    dict(exercise="add_input_noise", kind="wrong", clause="normal", why="uniform noise with the right spread",
         mistake="03.add_input_noise.noise-uniform",
         source=edited(reference("add_input_noise"),
                       ("torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * std",
                        "(torch.rand(x.shape, generator=generator, dtype=x.dtype, device=x.device) - 0.5) * std * 12 ** 0.5")),
         expect=["normal distribution", "not the uniform one"]),
    dict(exercise="add_input_noise", kind="wrong", clause="std", why="multiplicative noise",
         mistake="03.add_input_noise.noise-depends-on-input",
         source=edited(reference("add_input_noise"), ("return (x + noise", "return (x * (1 + noise)")),
         expect=["depends on the input"]),
    dict(exercise="add_input_noise", kind="wrong", clause="independent", why="one noise value per sample, broadcast",
         mistake="03.add_input_noise.noise-broadcast",
         source=edited(reference("add_input_noise"),
                       ("torch.randn(x.shape, generator",
                        "torch.randn((x.shape[0],) + (1,) * (x.dim() - 1), generator")),
         expect=["repeats itself along dimension", "full shape"]),
    dict(exercise="add_input_noise", kind="wrong", clause="anew", why="the same noise on every call",
         mistake="03.add_input_noise.noise-repeated",
         source=edited(reference("add_input_noise"),
                       ("    def hook(mod, args):", "    drawn = {}\n\n    def hook(mod, args):"),
                       ("        noise = torch.randn",
                        "        noise = drawn.get(x.shape)\n"
                        "        if noise is None:\n"
                        "            noise = drawn[x.shape] = torch.randn")),
         expect=["exactly the same noise", "new noise on every call"]),
    dict(exercise="add_input_noise", kind="wrong", clause="other-args", why="returns only the noisy x",
         mistake="03.add_input_noise.replaced-all-args",
         source=edited(reference("add_input_noise"), ("return (x + noise, *args[1:])", "return x + noise")),
         expect=["1 positional argument", "replaces all positional arguments"]),
    dict(exercise="add_input_noise", kind="wrong", clause="dtype", why="float64 noise changes the dtype",
         mistake="03.add_input_noise.wrong-dtype",
         source=edited(reference("add_input_noise"), ("dtype=x.dtype, device=x.device)", "dtype=torch.float64)")),
         expect=["dtype torch.float32 of x"]),
    dict(exercise="add_input_noise", kind="wrong", clause="gradient", why="works on x.data and cuts the graph",
         mistake="03.add_input_noise.input-detached",
         source=edited(reference("add_input_noise"), ("x = args[0]", "x = args[0].data")),
         expect=["cut off from autograd"]),
    dict(exercise="add_input_noise", kind="wrong", clause="gradient", why="torch.normal around x has a zero gradient",
         mistake="03.add_input_noise.gradient-hidden",
         source=edited(reference("add_input_noise"),
                       ("        x = args[0]\n"
                        "        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * std\n"
                        "        return (x + noise, *args[1:])",
                        "        return (torch.normal(args[0], std, generator=generator), *args[1:])")),
         expect=["all zero", "torch.normal(x, std)"]),
    dict(exercise="add_input_noise", kind="wrong", clause="pre-hook", why="a forward hook instead of a pre-hook",
         mistake="03.add_input_noise.forward-hook-not-pre-hook",
         source=edited(reference("add_input_noise"),
                       ("def hook(mod, args):", "def hook(mod, args, output):"),
                       ("        x = args[0]\n", "        x = output\n"),
                       ("return (x + noise, *args[1:])", "return x + noise"),
                       ("register_forward_pre_hook(hook)", "register_forward_hook(hook)")),
         expect=["no noise was added", "use register_forward_pre_hook"]),
    dict(exercise="add_input_noise", kind="wrong", clause="handle", why="does not return the handle",
         mistake="03.add_input_noise.no-handle",
         source=edited(reference("add_input_noise"),
                       ("    return module.register_forward_pre_hook(hook)",
                        "    module.register_forward_pre_hook(hook)")),
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
    dict(exercise="add_input_noise", kind="wrong", clause="shape", why="noise only on the first sample of the batch",
         mistake="03.add_input_noise.noise-on-some-elements",
         source=edited(reference("add_input_noise"),
                       ("torch.randn(x.shape, generator", "torch.randn(x[0].shape, generator"),
                       ("return (x + noise, *args[1:])",
                        "x = x.clone()\n"
                        "        x[0] = x[0] + noise\n"
                        "        return (x, *args[1:])")),
         expect=['exactly 0 at', 'got no noise', 'full shape of x']),
    dict(exercise="add_input_noise", kind="wrong", clause="shape", why="one noise value drawn when registering",
         mistake="03.add_input_noise.noise-constant",
         source=edited(reference("add_input_noise"),
                       ("    def hook(mod, args):",
                        "    noise = torch.randn(1, generator=generator) * std\n"
                        "\n"
                        "    def hook(mod, args):"),
                       ("        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * std\n",
                        "")),
         expect=['the same number everywhere']),
    dict(exercise="add_input_noise", kind="wrong", clause="generator", why="draws from a copy of the generator",
         mistake="03.add_input_noise.generator-not-advanced",
         source=edited(reference("add_input_noise"),
                       ("    def hook(mod, args):",
                        "    own = None\n"
                        "    if generator is not None:\n"
                        "        own = torch.Generator()\n"
                        "        own.set_state(generator.get_state())  # leaves the caller's generator alone\n"
                        "\n"
                        "    def hook(mod, args):"),
                       ("generator=generator,", "generator=own,")),
         expect=['same state as before the call', 'a copy of the generator', 'generator=generator']),
    dict(exercise="add_input_noise", kind="wrong", clause="generator", why="seeds the global state from the generator",
         mistake="03.add_input_noise.generator-not-advanced",
         source=edited(reference("add_input_noise"),
                       ("    def hook(mod, args):",
                        "    if generator is not None:\n"
                        "        torch.manual_seed(generator.initial_seed())\n"
                        "\n"
                        "    def hook(mod, args):"),
                       ("generator=generator, ", "")),
         expect=['same state as before the call', 'global random state']),
    dict(exercise="add_input_noise", kind="wrong", clause="other-args", why="returns a list of arguments",
         mistake="03.add_input_noise.replaced-all-args",
         source=edited(reference("add_input_noise"),
                       ("return (x + noise, *args[1:])", "return [x + noise, *args[1:]]")),
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
    dict(exercise="normalize_input", kind="wrong", clause="dim-1", why="statistics broadcast against the last dimension",
         mistake="03.normalize_input.stats-on-wrong-dim",
         source=edited(reference("normalize_input"), ("shape = (1, -1) + (1,) * (x.dim() - 2)", "shape = (-1,)")),
         expect=["must match the size", "last dimension", "(1, C, 1, ...)"]),
    dict(exercise="normalize_input", kind="wrong", clause="dim-1", why="statistics along the last dimension, broadcast by luck",
         mistake="03.normalize_input.stats-on-wrong-dim",
         source=edited(reference("normalize_input"),
                       ("shape = (1, -1) + (1,) * (x.dim() - 2)",
                        "shape = (-1,) if x.shape[-1] == len(mean) else (1, -1) + (1,) * (x.dim() - 2)")),
         expect=["normalized along the last dimension"]),
    dict(exercise="normalize_input", kind="wrong", clause="not-in-place", why="normalizes x in place",
         mistake="03.normalize_input.in-place",
         source=edited(reference("normalize_input"), ("return ((x - m) / s, *args[1:])", "x.sub_(m).div_(s)")),
         expect=["changed in place"]),
    dict(exercise="normalize_input", kind="wrong", clause="formula", why="divides by the variance",
         mistake="03.normalize_input.divided-by-variance",
         source=edited(reference("normalize_input"), ("(x - m) / s,", "(x - m) / s ** 2,")),
         expect=["std ** 2, the variance"]),
    dict(exercise="normalize_input", kind="wrong", clause="formula", why="only subtracts the mean",
         mistake="03.normalize_input.std-not-divided",
         source=edited(reference("normalize_input"), ("(x - m) / s,", "x - m,")),
         expect=["did not divide by std"]),
    dict(exercise="normalize_input", kind="wrong", clause="trailing-dims", why="statistics shaped for 4-D images only",
         mistake="03.normalize_input.wrong-shape",
         source=edited(reference("normalize_input"),
                       ("shape = (1, -1) + (1,) * (x.dim() - 2)", "shape = (1, -1, 1, 1)")),
         expect=["more dimensions than x", "trailing dimension"]),
    dict(exercise="normalize_input", kind="wrong", clause="formula", why="normalizes with the statistics of x",
         mistake="03.normalize_input.own-statistics",
         source=edited(reference("normalize_input"),
                       ("        m = torch.as_tensor(mean, dtype=x.dtype, device=x.device).reshape(shape)\n"
                        "        s = torch.as_tensor(std, dtype=x.dtype, device=x.device).reshape(shape)",
                        "        dims = [d for d in range(x.dim()) if d != 1]\n"
                        "        m = x.mean(dim=dims, keepdim=True)\n"
                        "        s = x.std(dim=dims, keepdim=True)")),
         expect=["statistics of x itself"]),
    dict(exercise="normalize_input", kind="wrong", clause="shape-dtype", why="float64 statistics change the dtype",
         mistake="03.normalize_input.wrong-dtype",
         source=edited(reference("normalize_input"),
                       ("(mean, dtype=x.dtype,", "(mean, dtype=torch.float64,"),
                       ("(std, dtype=x.dtype,", "(std, dtype=torch.float64,")),
         expect=["expected dtype torch.float32", "dtype=x.dtype"]),
    dict(exercise="normalize_input", kind="wrong", clause="other-args", why="returns only the normalized x",
         mistake="03.normalize_input.replaced-all-args",
         source=edited(reference("normalize_input"), ("return ((x - m) / s, *args[1:])", "return (x - m) / s")),
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
    dict(exercise="normalize_input", kind="wrong", clause="every-call", why="statistics shaped on the first call and kept",
         mistake="03.normalize_input.wrong-shape",
         source=edited(reference("normalize_input"),
                       ("    def hook(mod, args):", "    cache = {}\n\n    def hook(mod, args):"),
                       ("        shape = (1, -1) + (1,) * (x.dim() - 2)",
                        '        if "shape" not in cache:\n'
                        '            cache["shape"] = (1, -1) + (1,) * (x.dim() - 2)\n'
                        '        shape = cache["shape"]')),
         expect=['after calls with x of shape', 'more dimensions than x']),
    dict(exercise="normalize_input", kind="wrong", clause="both-modes", why="normalizes only in training mode",
         mistake="03.normalize_input.normalized-in-training-only",
         source=edited(reference("normalize_input"),
                       ("        x = args[0]",
                        "        if not mod.training:\n"
                        "            return None\n"
                        "        x = args[0]")),
         expect=['in eval mode', 'eval mode too', 'x unchanged']),
    dict(exercise="normalize_input", kind="wrong", clause="dim-1", why="statistics along dimension 0",
         mistake="03.normalize_input.stats-on-wrong-dim",
         source=edited(reference("normalize_input"),
                       ("shape = (1, -1) + (1,) * (x.dim() - 2)", "shape = (-1,) + (1,) * (x.dim() - 1)")),
         expect=['must match the size', '(1, C, 1, ...)', '2 for this 4-D x']),
    dict(exercise="normalize_input", kind="wrong", clause="trailing-dims", why="statistics shaped for 2-D or 4-D inputs only",
         mistake="03.normalize_input.stats-on-wrong-dim",
         source=edited(reference("normalize_input"),
                       ("shape = (1, -1) + (1,) * (x.dim() - 2)",
                        "shape = (1, -1) if x.dim() == 2 else (1, -1, 1, 1)")),
         expect=['must match the size', 'fit only 4-d inputs', '1 for this 3-D x']),
    dict(exercise="normalize_input", kind="wrong", clause="handle", why="returns the hook, not the handle",
         mistake="03.normalize_input.no-handle",
         source=edited(reference("normalize_input"),
                       ("    return module.register_forward_pre_hook(hook)",
                        "    module.register_forward_pre_hook(hook)\n"
                        "    return hook")),
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
    dict(exercise="normalize_input", kind="wrong", clause="shape-dtype",
         why="float32 statistics turn a float16 x into float32",
         mistake="03.normalize_input.wrong-dtype",
         source=edited(reference("normalize_input"),
                       ("torch.as_tensor(mean, dtype=x.dtype, device=x.device)", "torch.Tensor(mean)"),
                       ("torch.as_tensor(std, dtype=x.dtype, device=x.device)", "torch.Tensor(std)")),
         expect=["float16", "expected dtype torch.float16", "promote x"]),

    # ------------------------------------------------------------------ flatten_images
    dict(exercise="flatten_images", kind="wrong", clause="non-contiguous", why="view() fails on non-contiguous input",
         mistake="03.flatten_images.view-on-non-contiguous",
         source=edited(reference("flatten_images"), ("x.flatten(1)", "x.view(x.shape[0], -1)")),
         expect=["view size is not compatible", "not contiguous", "reshape"]),
    dict(exercise="flatten_images", kind="wrong", clause="all-but-first", why="flattens the batch dimension too",
         mistake="03.flatten_images.flattened-batch",
         source=edited(reference("flatten_images"), ("x.flatten(1)", "x.flatten()")),
         expect=["flattened the batch dimension too"]),
    dict(exercise="flatten_images", kind="wrong", clause="small-unchanged", why="flattens 1-D inputs too (flatten(1) raises)",
         mistake="03.flatten_images.flattened-low-rank",
         source=edited(reference("flatten_images"), ("        if x.dim() <= 2:\n            return None\n", "")),
         expect=["dimension out of range", "1-D or 2-D input must pass unchanged"]),
    dict(exercise="flatten_images", kind="wrong", clause="small-unchanged", why="reshapes 1-D inputs to (N, 1)",
         mistake="03.flatten_images.flattened-low-rank",
         source=edited(reference("flatten_images"),
                       ("        if x.dim() <= 2:\n            return None\n", ""),
                       ("x.flatten(1)", "x.reshape(x.shape[0], -1)")),
         expect=["expected shape (7,)", "1-d input must pass unchanged"]),
    dict(exercise="flatten_images", kind="wrong", clause="all-but-first", why="keeps the channels, flattens from dim 2",
         mistake="03.flatten_images.flattened-from-dim-2",
         source=edited(reference("flatten_images"), ("x.flatten(1)", "x.flatten(2)")),
         expect=["from dimension 2"]),
    dict(exercise="flatten_images", kind="wrong", clause="more-than-2", why="only 4-D inputs are flattened",
         mistake="03.flatten_images.only-4d-flattened",
         source=edited(reference("flatten_images"), ("if x.dim() <= 2:", "if x.dim() != 4:")),
         expect=["more than 2 dimensions, not only 4-D"]),
    dict(exercise="flatten_images", kind="wrong", clause="order", why="moves the channels last before flattening",
         mistake="03.flatten_images.moved-dimensions",
         source=edited(reference("flatten_images"), ("x.flatten(1)", "x.movedim(1, -1).reshape(x.shape[0], -1)")),
         expect=["right shape but with other values", "own element order"]),
    dict(exercise="flatten_images", kind="wrong", clause="other-args", why="returns only the flattened x",
         mistake="03.flatten_images.replaced-all-args",
         source=edited(reference("flatten_images"), ("return (x.flatten(1), *args[1:])", "return x.flatten(1)")),
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
    dict(exercise="flatten_images", kind="wrong", clause="gradient", why="a NumPy round trip cuts the graph",
         mistake="03.flatten_images.input-detached",
         source=edited(reference("flatten_images"),
                       ("def flatten_images(module):", "import torch\n\n\ndef flatten_images(module):"),
                       ("        if x.dim() <= 2:\n"
                        "            return None\n"
                        "        return (x.flatten(1), *args[1:])",
                        "        if x.dim() > 2:\n"
                        "            return (torch.from_numpy(x.detach().numpy().reshape(x.shape[0], -1)), *args[1:])")),
         expect=['cut off from autograd']),
    dict(exercise="flatten_images", kind="wrong", clause="both-modes", why="flattens only in training mode",
         mistake="03.flatten_images.flattened-in-training-only",
         source=edited(reference("flatten_images"), ("if x.dim() <= 2:", "if x.dim() <= 2 or not mod.training:")),
         expect=['unchanged in eval mode', 'in every mode']),
    dict(exercise="flatten_images", kind="wrong", clause="non-contiguous", why="skips non-contiguous inputs to avoid the view error",
         mistake="03.flatten_images.skipped-non-contiguous",
         source=edited(reference("flatten_images"),
                       ("if x.dim() <= 2:", "if x.dim() <= 2 or not x.is_contiguous():"),
                       ("x.flatten(1)", "x.view(x.shape[0], -1)")),
         expect=['not contiguous', 'reshape']),
    dict(exercise="flatten_images", kind="wrong", clause="small-unchanged", why="flattens 2-D inputs completely",
         mistake="03.flatten_images.flattened-low-rank",
         source=edited(reference("flatten_images"),
                       ("        if x.dim() <= 2:\n"
                        "            return None",
                        "        if x.dim() == 2:\n"
                        "            return (x.reshape(-1), *args[1:])\n"
                        "        if x.dim() < 2:\n"
                        "            return None")),
         expect=['2-D input must pass unchanged']),
    dict(exercise="flatten_images", kind="wrong", clause="not-in-place", why="reshapes the caller's tensor through x.data",
         mistake="03.flatten_images.in-place",
         source=edited(reference("flatten_images"),
                       ("        return (x.flatten(1), *args[1:])",
                        "        x.data = x.data.reshape(x.shape[0], -1)")),
         expect=['changed in place', 'x.data']),
    dict(exercise="flatten_images", kind="wrong", clause="handle", why="does not return the handle",
         mistake="03.flatten_images.no-handle",
         source=edited(reference("flatten_images"),
                       ("    return module.register_forward_pre_hook(hook)",
                        "    module.register_forward_pre_hook(hook)")),
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
         source=edited(reference("flatten_images"), ("if x.dim() <= 2:", "if x.dim() < 2:")),
         expect=[]),
    dict(exercise="flatten_images", kind="right", why="math.prod of the trailing sizes",
         source=edited(reference("flatten_images"),
                       ("def flatten_images(module):", "import math\n\n\ndef flatten_images(module):"),
                       ("if x.dim() <= 2:", "if x.dim() < 3:"),
                       ("x.flatten(1)", "x.reshape(x.shape[0], math.prod(x.shape[1:]))")),
         expect=[]),

    # ------------------------------------------------------------------ force_kwarg
    dict(exercise="force_kwarg", kind="wrong", clause="overridden", why="setdefault does not override",
         mistake="03.force_kwarg.caller-value-kept",
         source=edited(reference("force_kwarg"),
                       ("        return args, {**kwargs, name: value}",
                        "        kwargs = dict(kwargs)\n"
                        "        kwargs.setdefault(name, value)\n"
                        "        return args, kwargs")),
         expect=["the value the caller passed", "override the caller's value"]),
    dict(exercise="force_kwarg", kind="wrong", clause="added", why="only overrides, never adds",
         mistake="03.force_kwarg.keyword-not-added",
         source=edited(reference("force_kwarg"),
                       ("        return args, {**kwargs, name: value}",
                        "        if name in kwargs:\n"
                        "            kwargs[name] = value\n"
                        "        return args, kwargs")),
         expect=["without 'scale'", "add it then, too"]),
    dict(exercise="force_kwarg", kind="wrong", clause="registers", why="a plain pre-hook adds a positional argument",
         mistake="03.force_kwarg.added-positional-arg",
         source=edited(reference("force_kwarg"),
                       ("    def hook(mod, args, kwargs):\n"
                        "        return args, {**kwargs, name: value}",
                        "    def hook(mod, args):\n"
                        "        return args + (value,)"),
                       ("module.register_forward_pre_hook(hook, with_kwargs=True)",
                        "module.register_forward_pre_hook(hook)")),
         expect=["cannot add keyword arguments", "with_kwargs=True"]),
    dict(exercise="force_kwarg", kind="wrong", clause="name-value", why="with_kwargs hook returns only the kwargs",
         mistake="03.force_kwarg.kwargs-hook-bad-return",
         source=edited(reference("force_kwarg"), ("args, {**kwargs,", "{**kwargs,")),
         expect=["forward pre-hook must return none or a tuple", "the pair (args, kwargs)"]),
    dict(exercise="force_kwarg", kind="wrong", clause="other-kwargs", why="drops the caller's other keyword arguments",
         mistake="03.force_kwarg.dropped-other-kwargs",
         source=edited(reference("force_kwarg"), ("{**kwargs, name:", "{name:")),
         expect=["other keyword arguments must pass through"]),
    dict(exercise="force_kwarg", kind="wrong", clause="name-value", why="name and value kept in globals",
         mistake="03.force_kwarg.shared-name-and-value",
         source=edited(reference("force_kwarg"),
                       ("def force_kwarg(module, name, value):",
                        "forced = {}\n"
                        "\n"
                        "\n"
                        "def force_kwarg(module, name, value):"),
                       ("    def hook(mod, args, kwargs):",
                        '    forced["name"], forced["value"] = name, value\n'
                        "\n"
                        "    def hook(mod, args, kwargs):"),
                       ("name: value}", 'forced["name"]: forced["value"]}')),
         expect=["another module", "its own name and value"]),
    dict(exercise="force_kwarg", kind="wrong", clause="handle", why="does not return the handle",
         mistake="03.force_kwarg.no-handle",
         source=edited(reference("force_kwarg"),
                       ("return module.register_forward_pre_hook(hook,", "module.register_forward_pre_hook(hook,")),
         expect=["expected the handle"]),
    dict(exercise="force_kwarg", kind="right", why="edits the kwargs dict in place and returns None",
         source=edited(reference("force_kwarg"), ("return args, {**kwargs, name: value}", "kwargs[name] = value")),
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
    dict(exercise="force_kwarg", kind="wrong", clause="registers", why="a kwargs hook registered without with_kwargs",
         mistake="03.force_kwarg.hook-signature",
         source=edited(reference("force_kwarg"),
                       ("module.register_forward_pre_hook(hook, with_kwargs=True)",
                        "module.register_forward_pre_hook(hook)")),
         expect=['missing 1 required positional argument', 'with_kwargs=True']),
    dict(exercise="force_kwarg", kind="wrong", clause="name-value", why="returns the pair the wrong way round",
         mistake="03.force_kwarg.kwargs-pair-reversed",
         source=edited(reference("force_kwarg"), ("args, {**kwargs, name: value}", "{**kwargs, name: value}, args")),
         expect=['must be a mapping', 'in the order (args, kwargs)']),
    dict(exercise="force_kwarg", kind="wrong", clause="other-kwargs", why="one dict kept between calls",
         mistake="03.force_kwarg.kwargs-kept-between-calls",
         source=edited(reference("force_kwarg"),
                       ("    def hook(mod, args, kwargs):", "    merged = {}\n\n    def hook(mod, args, kwargs):"),
                       ("        return args, {**kwargs, name: value}",
                        "        merged.update(kwargs)\n"
                        "        merged[name] = value\n"
                        "        return args, merged")),
         expect=['an earlier call did', 'new dict on every call']),
    dict(exercise="force_kwarg", kind="wrong", clause="name-value", why="the string 'name' as the key",
         mistake="03.force_kwarg.fixed-key",
         source=edited(reference("force_kwarg"),
                       ("return args, {**kwargs, name: value}", 'return args, {**kwargs, "name": value}')),
         expect=["'name' in place of 'scale'", 'not a fixed string']),
    dict(exercise="force_kwarg", kind="wrong", clause="registers", why="a forward hook sets the keyword too late",
         mistake="03.force_kwarg.forward-hook-not-pre-hook",
         source=edited(reference("force_kwarg"),
                       ("    def hook(mod, args, kwargs):\n"
                        "        return args, {**kwargs, name: value}",
                        "    def hook(mod, args, kwargs, output):\n"
                        "        kwargs[name] = value"),
                       ("module.register_forward_pre_hook(hook,", "module.register_forward_hook(hook,")),
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
         source=edited(reference("force_kwarg"),
                       ("        return args, {**kwargs, name: value}",
                        "        kwargs.update({name: value})\n"
                        "        return list(args), kwargs"),
                       ("with_kwargs=True)", "with_kwargs=True, prepend=True)")),
         expect=[]),
]

# The clause → check table (tests/course/test_contract_clauses.py): words quoted from each docstring.
CLAUSES = {
    "add_input_noise": {
        "pre-hook": "Register a forward pre-hook on `module` that adds normal noise to its first input",
        "handle": "return the handle.",
        "mode-at-call": "(`module.training` is True at the time of the call)",
        "shape": "`noise` has the shape of `x`",
        "independent": "holds independent normal values",
        "normal": "normal values",
        "mean-0": "of mean 0",
        "std": "standard deviation `std`",
        "anew": "drawn anew on every call",
        "generator": "from `generator` (a torch.Generator) when it is not None",
        "global-state": "and from torch's global random state when it is None",
        "eval-unchanged": "In eval mode the inputs pass unchanged.",
        "grad-mode": "The mode decides, not grad mode: noise is added under torch.no_grad() too.",
        "not-in-place": "The caller's tensor is not changed in place",
        "other-args": "other positional arguments and all keyword arguments pass through unchanged",
        "dtype": "the new input keeps the dtype of `x`",
        "gradient": "gradients flow back to `x`",
    },
    "normalize_input": {
        "pre-hook": "Register a forward pre-hook on `module` that normalizes its first input per channel",
        "handle": "return the handle.",
        "trailing-dims": "with any number of trailing dimensions (also none)",
        "formula": "It is replaced by (x - mean[c]) / std[c]",
        "dim-1": "for every channel c along dimension 1",
        "sequences": "`mean` and `std` are sequences (lists or tuples) of C numbers.",
        "every-call": "This happens on every call",
        "both-modes": "in training and eval mode alike",
        "not-in-place": "The caller's tensor is not changed in place",
        "other-args": "other positional arguments and all keyword arguments pass through unchanged",
        "shape-dtype": "the result has the shape and dtype of `x`",
        "gradient": "gradients flow back to `x`",
    },
    "flatten_images": {
        "pre-hook": "Register a forward pre-hook on `module` that flattens inputs with more than 2 dims",
        "handle": "return the handle.",
        "more-than-2": "If the first positional argument `x` has more than 2 dimensions",
        "all-but-first": "it is replaced by `x` reshaped to (N, -1): all dimensions but the first flattened",
        "order": "in the tensor's own element order",
        "non-contiguous": "also when `x` is not contiguous",
        "small-unchanged": "1-D and 2-D inputs pass unchanged.",
        "not-in-place": "The caller's tensor is not changed in place",
        "other-args": "other positional arguments and all keyword arguments pass through unchanged",
        "both-modes": "This happens in training and eval mode alike",
        "gradient": "gradients flow back to `x`",
    },
    "force_kwarg": {
        "registers": "Register a forward pre-hook on `module` that passes `name=value` to every call",
        "handle": "return the handle.",
        "every-call": "On every call of `module` (in training and eval mode, with grad mode on or off)",
        "name-value": "`forward` receives the keyword argument `name` with the value `value`",
        "added": "added if the caller did not pass it",
        "overridden": "overridden if the caller did",
        "positional": "Positional arguments",
        "other-kwargs": "the other keyword arguments pass through unchanged",
    },
}

ENTRIES += [
    # ------------------------------------------------------------------ add_input_noise: clauses, adversary
    dict(exercise="add_input_noise", kind="wrong", clause="mean-0", why="noise centred on 1, as for multiplying",
         mistake="03.add_input_noise.noise-not-centred",
         source=edited(reference("add_input_noise"),
                       ("torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * std",
                        "torch.normal(1.0, std, size=x.shape, generator=generator, dtype=x.dtype, device=x.device)")),
         expect=["has mean", "expected mean 0"]),
    dict(exercise="add_input_noise", kind="wrong", clause="grad-mode", why="no noise under no_grad in training mode",
         mistake="03.add_input_noise.noise-off-under-no-grad",
         source=edited(reference("add_input_noise"),
                       ("if not mod.training:", "if not mod.training or not torch.is_grad_enabled():")),
         expect=["under torch.no_grad()", "not grad mode", "module.training"]),
    dict(exercise="add_input_noise", kind="wrong", clause="eval-unchanged", why="grad mode instead of the module's mode",
         mistake="03.add_input_noise.noise-in-eval",
         source=edited(reference("add_input_noise"), ("if not mod.training:", "if not torch.is_grad_enabled():")),
         expect=["in eval mode the input must pass unchanged", "module.training"]),
    dict(exercise="add_input_noise", kind="wrong", clause="other-args", why="a with_kwargs hook that drops the keywords",
         mistake="03.add_input_noise.changed-kwargs",
         source=edited(reference("add_input_noise"),
                       ("def hook(mod, args):", "def hook(mod, args, kwargs):"),
                       ("*args[1:])", "*args[1:]), {}"),
                       ("register_forward_pre_hook(hook)", "register_forward_pre_hook(hook, with_kwargs=True)")),
         expect=["keyword arguments", "unchanged", "must return the kwargs it received"]),
    dict(exercise="add_input_noise", kind="wrong", clause="other-args", why="noise on every tensor argument",
         mistake="03.add_input_noise.changed-other-arg",
         source=edited(reference("add_input_noise"),
                       ("        x = args[0]\n"
                        "        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * std\n"
                        "        return (x + noise, *args[1:])",
                        "        return tuple(a + torch.randn(a.shape, generator=generator, dtype=a.dtype) * std\n"
                        "                     if isinstance(a, torch.Tensor) else a for a in args)")),
         expect=["positional argument 1 reached forward", "change only the first argument"]),
    dict(exercise="add_input_noise", kind="wrong", clause="anew", why="a fresh default generator when none is given",
         mistake="03.add_input_noise.noise-repeated",
         source=edited(reference("add_input_noise"),
                       ("generator=generator, dtype", "generator=generator or torch.Generator(), dtype")),
         expect=["exactly the same noise", "do not reseed"]),
    dict(exercise="add_input_noise", kind="wrong", clause="anew", why="reseeds the given generator on every call",
         mistake="03.add_input_noise.noise-repeated",
         source=edited(reference("add_input_noise"),
                       ("        x = args[0]\n",
                        "        x = args[0]\n"
                        "        if generator is not None:\n"
                        "            generator.manual_seed(generator.initial_seed())\n")),
         expect=["exactly the same noise", "do not reseed"]),
    dict(exercise="add_input_noise", kind="wrong", clause="independent", why="one noise map shared by the whole batch",
         mistake="03.add_input_noise.noise-broadcast",
         source=edited(reference("add_input_noise"),
                       ("torch.randn(x.shape, generator", "torch.randn(x.shape[1:], generator")),
         expect=["repeats itself along dimension 0", "full shape"]),
    dict(exercise="add_input_noise", kind="wrong", clause="handle", why="returns the module for chaining",
         mistake="03.add_input_noise.no-handle",
         source=edited(reference("add_input_noise"),
                       ("    return module.register_forward_pre_hook(hook)",
                        "    module.register_forward_pre_hook(hook)\n"
                        "    return module")),
         expect=["returned _recorder", "expected the handle"]),
    dict(exercise="add_input_noise", kind="wrong", clause="gradient", why="noise drawn around a detached x",
         mistake="03.add_input_noise.input-detached",
         source=edited(reference("add_input_noise"), ("return (x + noise", "return (x.detach() + noise")),
         expect=["cut off from autograd"]),
    dict(exercise="add_input_noise", kind="right", why="a hook class, keyword arguments left alone",
         source='''
import torch


class InputNoise:
    def __init__(self, std, generator):
        self.std, self.generator = std, generator

    def __call__(self, module, args):
        if module.training:
            first, *rest = args
            noise = torch.empty_like(first).normal_(generator=self.generator) * self.std
            return (first + noise, *rest)


def add_input_noise(module, std, generator=None):
    return module.register_forward_pre_hook(InputNoise(std, generator))
''',
         expect=[]),

    # ------------------------------------------------------------------ normalize_input: clauses, adversary
    dict(exercise="normalize_input", kind="wrong", clause="sequences", why="makes a tensor of lists only",
         mistake="03.normalize_input.stats-not-tensors",
         source=edited(reference("normalize_input"),
                       ("    def hook(mod, args):",
                        "    if isinstance(mean, list):\n"
                        "        mean, std = torch.tensor(mean), torch.tensor(std)\n"
                        "\n"
                        "    def hook(mod, args):"),
                       ("        m = torch.as_tensor(mean, dtype=x.dtype, device=x.device).reshape(shape)\n"
                        "        s = torch.as_tensor(std, dtype=x.dtype, device=x.device).reshape(shape)",
                        "        m = mean.to(x.dtype).reshape(shape)\n"
                        "        s = std.to(x.dtype).reshape(shape)")),
         expect=["'tuple' object", "lists or tuples", "torch.as_tensor"]),
    dict(exercise="normalize_input", kind="wrong", clause="gradient", why="normalizes under torch.no_grad()",
         mistake="03.normalize_input.input-detached",
         source=edited(reference("normalize_input"),
                       ("        return ((x - m) / s, *args[1:])",
                        "        with torch.no_grad():\n"
                        "            return ((x - m) / s, *args[1:])")),
         expect=["cut off from autograd"]),
    dict(exercise="normalize_input", kind="wrong", clause="other-args", why="a with_kwargs hook that drops the keywords",
         mistake="03.normalize_input.changed-kwargs",
         source=edited(reference("normalize_input"),
                       ("def hook(mod, args):", "def hook(mod, args, kwargs):"),
                       ("*args[1:])", "*args[1:]), {}"),
                       ("register_forward_pre_hook(hook)", "register_forward_pre_hook(hook, with_kwargs=True)")),
         expect=["keyword arguments", "unchanged"]),
    dict(exercise="normalize_input", kind="wrong", clause="pre-hook", why="a forward hook normalizes the output",
         mistake="03.normalize_input.forward-hook-not-pre-hook",
         source=edited(reference("normalize_input"),
                       ("def hook(mod, args):\n"
                        "        x = args[0]",
                        "def hook(mod, args, output):\n"
                        "        x = output"),
                       ("return ((x - m) / s, *args[1:])", "return (x - m) / s"),
                       ("register_forward_pre_hook(hook)", "register_forward_hook(hook)")),
         expect=["x unchanged", "runs after forward", "register_forward_pre_hook"]),
    dict(exercise="normalize_input", kind="wrong", clause="trailing-dims", why="statistics shaped (C, 1, 1) as for images",
         mistake="03.normalize_input.wrong-shape",
         source=edited(reference("normalize_input"),
                       ("shape = (1, -1) + (1,) * (x.dim() - 2)", "shape = (-1, 1, 1)")),
         expect=["more dimensions than x"]),
    dict(exercise="normalize_input", kind="wrong", clause="formula", why="F.batch_norm with std as the running variance",
         mistake="03.normalize_input.divided-by-sqrt-std",
         source='''
import torch
import torch.nn.functional as F


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        m = torch.as_tensor(mean, dtype=x.dtype)
        s = torch.as_tensor(std, dtype=x.dtype)
        return (F.batch_norm(x, m, s, training=False, eps=0.0), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["square root of std", "divide by std itself"]),
    dict(exercise="normalize_input", kind="wrong", clause="other-args", why="normalizes every tensor argument",
         mistake="03.normalize_input.changed-other-arg",
         source=edited(reference("normalize_input"),
                       ("        return ((x - m) / s, *args[1:])",
                        "        rest = tuple(a / 1.0 if torch.is_tensor(a) else a for a in args[1:])\n"
                        "        return ((x - m) / s, *rest)")),
         expect=["positional argument 1 reached forward", "change only the first argument"]),
    dict(exercise="normalize_input", kind="wrong", clause="not-in-place", why="normalizes the caller's tensor through x.data",
         mistake="03.normalize_input.in-place",
         source=edited(reference("normalize_input"),
                       ("        return ((x - m) / s, *args[1:])",
                        "        x.data = (x.data - m) / s\n"
                        "        return (x, *args[1:])")),
         expect=["changed in place", "x.data"]),
    dict(exercise="normalize_input", kind="right", why="a list of args and F.batch_norm with the variance std ** 2",
         source='''
import torch
import torch.nn.functional as F


def normalize_input(module, mean, std):
    def hook(mod, args):
        new = list(args)
        x = new[0]
        m = torch.tensor(list(mean), dtype=x.dtype)
        var = torch.tensor(list(std), dtype=x.dtype) ** 2
        new[0] = F.batch_norm(x, m, var, training=False, eps=0.0)
        return tuple(new)

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),

    # ------------------------------------------------------------------ flatten_images: clauses, adversary
    dict(exercise="flatten_images", kind="wrong", clause="other-args", why="a with_kwargs hook that drops the keywords",
         mistake="03.flatten_images.changed-kwargs",
         source=edited(reference("flatten_images"),
                       ("def hook(mod, args):", "def hook(mod, args, kwargs):"),
                       ("*args[1:])", "*args[1:]), {}"),
                       ("register_forward_pre_hook(hook)", "register_forward_pre_hook(hook, with_kwargs=True)")),
         expect=["keyword arguments", "unchanged"]),
    dict(exercise="flatten_images", kind="wrong", clause="more-than-2", why="sizes of a 4-D image spelled out",
         mistake="03.flatten_images.only-4d-flattened",
         source=edited(reference("flatten_images"),
                       ("x.flatten(1)", "x.reshape(x.shape[0], x.shape[1] * x.shape[2] * x.shape[3])")),
         expect=["tuple index out of range", "not only 4-d images"]),
    dict(exercise="flatten_images", kind="wrong", clause="all-but-first", why="keeps the last dimension",
         mistake="03.flatten_images.kept-last-dim",
         source=edited(reference("flatten_images"), ("x.flatten(1)", "x.reshape(-1, x.shape[-1])")),
         expect=["kept the last dimension", "shape (n, -1)"]),
    dict(exercise="flatten_images", kind="wrong", clause="gradient", why="flattens a detached x",
         mistake="03.flatten_images.input-detached",
         source=edited(reference("flatten_images"), ("x.flatten(1)", "x.detach().flatten(1)")),
         expect=["cut off from autograd"]),
    dict(exercise="flatten_images", kind="wrong", clause="handle", why="returns the hook function",
         mistake="03.flatten_images.no-handle",
         source=edited(reference("flatten_images"),
                       ("    return module.register_forward_pre_hook(hook)",
                        "    module.register_forward_pre_hook(hook)\n"
                        "    return hook")),
         expect=["returned function", "expected the handle"]),
    dict(exercise="flatten_images", kind="wrong", clause="other-args", why="a list of all the arguments",
         mistake="03.flatten_images.replaced-all-args",
         source=edited(reference("flatten_images"),
                       ("return (x.flatten(1), *args[1:])", "return [x.flatten(1), *args[1:]]")),
         expect=["1 positional argument", "not a tuple becomes the only one"]),
    dict(exercise="flatten_images", kind="wrong", clause="pre-hook", why="a forward hook flattens the output",
         mistake="03.flatten_images.forward-hook-not-pre-hook",
         source=edited(reference("flatten_images"),
                       ("def hook(mod, args):\n"
                        "        x = args[0]",
                        "def hook(mod, args, output):\n"
                        "        x = output"),
                       ("return (x.flatten(1), *args[1:])", "return x.flatten(1)"),
                       ("register_forward_pre_hook(hook)", "register_forward_hook(hook)")),
         expect=["expected shape", "runs after forward", "register_forward_pre_hook"]),
    dict(exercise="flatten_images", kind="right", why="a with_kwargs hook that returns the keywords it got",
         source='''
def flatten_images(module):
    def hook(mod, args, kwargs):
        first, *rest = args
        if first.dim() > 2:
            first = first.reshape(len(first), -1)
        return (first, *rest), kwargs

    return module.register_forward_pre_hook(hook, with_kwargs=True)
''',
         expect=[]),

    # ------------------------------------------------------------------ force_kwarg: clauses, adversary
    dict(exercise="force_kwarg", kind="wrong", clause="every-call", why="a one-shot hook that removes itself",
         mistake="03.force_kwarg.hook-removed-after-call",
         source=edited(reference("force_kwarg"),
                       ("        return args, {**kwargs, name: value}",
                        "        handle.remove()\n"
                        "        return args, {**kwargs, name: value}"),
                       ("    return module.register_forward_pre_hook(hook, with_kwargs=True)",
                        "    handle = module.register_forward_pre_hook(hook, with_kwargs=True)\n"
                        "    return handle")),
         expect=["no longer has a forward pre-hook", "every call"]),
    dict(exercise="force_kwarg", kind="wrong", clause="every-call", why="only in training mode",
         mistake="03.force_kwarg.forced-only-in-training",
         source=edited(reference("force_kwarg"),
                       ("    def hook(mod, args, kwargs):\n",
                        "    def hook(mod, args, kwargs):\n"
                        "        if not mod.training:\n"
                        "            return None\n")),
         expect=["also in eval mode", "don't look at module.training"]),
    dict(exercise="force_kwarg", kind="wrong", clause="every-call", why="only while grad mode is on",
         mistake="03.force_kwarg.forced-only-in-training",
         source=edited(reference("force_kwarg"),
                       ("    def hook(mod, args, kwargs):\n",
                        "    import torch\n"
                        "\n"
                        "    def hook(mod, args, kwargs):\n"
                        "        if not torch.is_grad_enabled():\n"
                        "            return None\n")),
         expect=["under torch.no_grad()", "on every call"]),
    dict(exercise="force_kwarg", kind="wrong", clause="positional", why="keeps only the first positional argument",
         mistake="03.force_kwarg.changed-args",
         source=edited(reference("force_kwarg"),
                       ("return args, {**kwargs, name: value}", "return (args[0],), {**kwargs, name: value}")),
         expect=["positional arguments", "the caller's, unchanged", "as the hook received them"]),
    dict(exercise="force_kwarg", kind="wrong", clause="added", why="skips calls without keyword arguments",
         mistake="03.force_kwarg.keyword-not-added",
         source=edited(reference("force_kwarg"),
                       ("    def hook(mod, args, kwargs):\n",
                        "    def hook(mod, args, kwargs):\n"
                        "        if not kwargs:\n"
                        "            return None\n")),
         expect=["without 'scale'", "add it then, too"]),
    dict(exercise="force_kwarg", kind="wrong", clause="overridden", why="the caller's value wins through dict order",
         mistake="03.force_kwarg.caller-value-kept",
         source=edited(reference("force_kwarg"), ("{**kwargs, name: value}", "{name: value, **kwargs}")),
         expect=["the value the caller passed", "override the caller's value"]),
    dict(exercise="force_kwarg", kind="wrong", clause="name-value", why="the pair returned as a list",
         mistake="03.force_kwarg.kwargs-hook-bad-return",
         source=edited(reference("force_kwarg"),
                       ("return args, {**kwargs, name: value}", "return [args, {**kwargs, name: value}]")),
         expect=["forward pre-hook must return none or a tuple", "the pair (args, kwargs)"]),
    dict(exercise="force_kwarg", kind="right", why="a tuple of args rebuilt and a dict comprehension",
         source=edited(reference("force_kwarg"),
                       ("        return args, {**kwargs, name: value}",
                        "        merged = {key: val for key, val in kwargs.items() if key != name}\n"
                        "        merged[name] = value\n"
                        "        return tuple(args), merged")),
         expect=[]),
]

# Patterns of public normalization code (a per-image transform's zip loop, a multiplication by 1 / std).
ENTRIES += [
    dict(exercise="normalize_input", kind="wrong", clause="dim-1", why="zip over x walks along the batch",
         mistake="03.normalize_input.per-sample-statistics",
         source='''
def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0].clone()
        for t, m, s in zip(x, mean, std):
            t.sub_(m).div_(s)
        return (x, *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=["sample i with mean[i]", "dimension 0, the batch", "channels are dimension 1"]),
    dict(exercise="normalize_input", kind="right", why="a loop over the channels of a clone, times 1 / std",
         source='''
def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0].clone()
        for c, (m, s) in enumerate(zip(mean, std)):
            x[:, c] = (x[:, c] - m) * (1.0 / s)
        return (x,) + args[1:]

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
]

# Second round, written from the docstrings alone.
ENTRIES += [
    dict(exercise="flatten_images", kind="wrong", clause="more-than-2", why="flattens only for an nn.Linear",
         mistake="03.flatten_images.input-unchanged",
         source=edited(reference("flatten_images"),
                       ("        if x.dim() <= 2:", "        if x.dim() <= 2 or not isinstance(mod, nn.Linear):"),
                       ("def flatten_images(module):", "from torch import nn\n\n\ndef flatten_images(module):")),
         expect=["x passed unchanged", "4 dimensions, more than 2"]),
]
ENTRIES += [
    dict(exercise="add_input_noise", kind="wrong", clause="generator", why="the generator for the first call only",
         mistake="03.add_input_noise.noise-not-from-generator",
         source=edited(reference("add_input_noise"),
                       ("    def hook(mod, args):",
                        '    state = {"generator": generator}\n'
                        "\n"
                        "    def hook(mod, args):"),
                       ("        noise = torch.randn(x.shape, generator=generator,",
                        '        g, state["generator"] = state["generator"], None  # later calls: the global random state\n'
                        "        noise = torch.randn(x.shape, generator=g,")),
         expect=["called twice", "seeded alike", "generator=generator"]),
]
ENTRIES += [
    dict(exercise="flatten_images", kind="wrong", clause="all-but-first", why="squeezes x first",
         mistake="03.flatten_images.squeezed-batch",
         source=edited(reference("flatten_images"),
                       ("        x = args[0]\n", "        x = args[0].squeeze()\n"),
                       ("            return None\n", "            return (x, *args[1:])\n")),
         expect=["you squeezed x", "batch of one sample", "shape (n, -1)"]),
]

# Review of issue 12: half precision, the last positional argument, no generator, a replaced forward.
ENTRIES += [
    dict(exercise="add_input_noise", kind="wrong", clause="dtype", why="float32 noise turns a float16 x into float32",
         mistake="03.add_input_noise.wrong-dtype",
         source=edited(reference("add_input_noise"), ("dtype=x.dtype, device=x.device)", "device=x.device)")),
         expect=["float16", "expected dtype torch.float16", "promotes x"]),
    dict(exercise="add_input_noise", kind="wrong", clause="global-state",
         why="a generator of its own when none is given",
         mistake="03.add_input_noise.own-default-generator",
         source=edited(reference("add_input_noise"),
                       ("    def hook(mod, args):",
                        "    generator = generator if generator is not None else torch.Generator()\n"
                        "\n"
                        "    def hook(mod, args):")),
         expect=["torch.manual_seed(7101)", "the same noise both times", "global random state"]),
    dict(exercise="normalize_input", kind="wrong", clause="other-args", why="normalizes the last positional argument",
         mistake="03.normalize_input.changed-other-arg",
         source=edited(reference("normalize_input"),
                       ("x = args[0]", "x = args[-1]"),
                       ("return ((x - m) / s, *args[1:])", "return (*args[:-1], (x - m) / s)")),
         expect=["normalizes positional argument 1", "args[-1]", "change x = args[0]"]),
    dict(exercise="force_kwarg", kind="wrong", clause="registers", why="replaces module.forward instead of a hook",
         mistake="03.force_kwarg.no-pre-hook",
         source='''
def force_kwarg(module, name, value):
    forward = module.forward

    class Handle:
        def remove(self):
            module.forward = forward

    module.forward = lambda *args, **kwargs: forward(*args, **{**kwargs, name: value})
    return Handle()
''',
         expect=["no forward pre-hook", "with_kwargs=true"]),
]
ENTRIES += [
    dict(exercise="add_input_noise", kind="wrong", clause="other-args", why="noise on the last positional argument",
         mistake="03.add_input_noise.changed-other-arg",
         source=edited(reference("add_input_noise"),
                       ("x = args[0]", "x = args[-1]"),
                       ("return (x + noise, *args[1:])", "return (*args[:-1], x + noise)")),
         expect=["adds noise to positional argument 2", "args[-1]", "change x = args[0]"]),
]
ENTRIES += [
    dict(exercise="add_input_noise", kind="right", why="randn_like without a generator, randn with one",
         source=edited(reference("add_input_noise"),
                       ("        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * std\n"
                        "        return (x + noise, *args[1:])",
                        "        if generator is None:\n"
                        "            noise = torch.randn_like(x)\n"
                        "        else:\n"
                        "            noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)\n"
                        "        return (x + std * noise,) + args[1:]")),
         expect=[]),
    dict(exercise="normalize_input", kind="right", why="float32 arithmetic, the result cast back to the dtype of x",
         source='''
import torch


def normalize_input(module, mean, std):
    def hook(mod, args):
        x = args[0]
        shape = [1, -1] + [1] * (x.dim() - 2)
        out = (x.float() - torch.tensor(mean).reshape(shape)) / torch.tensor(std).reshape(shape)
        return (out.to(x.dtype), *args[1:])

    return module.register_forward_pre_hook(hook)
''',
         expect=[]),
]

# predict_nesting_order: a prediction of the events a piece of code logs (hooked/checks/event_predictions.py)
from mistakes import predicted  # noqa: E402

CLAUSES["predict_nesting_order"] = {
    "events": "Return the events that `nesting_order_events` logs",
    "order": "in the order they fire",
    "names": "one of the names the cell above logs",
}
_NESTING = ["pre:outer, prepend", "pre:outer", "forward:outer", "pre:first", "forward:first", "pre:second",
            "forward:second"]
ENTRIES += [
    dict(exercise="predict_nesting_order", kind="wrong", clause="order", why="every pre-hook of the model first",
         mistake="03.predict_nesting_order.child-hooks-up-front",
         source=predicted("predict_nesting_order", _NESTING[:2] + ["pre:first", "pre:second", "forward:outer",
                                                                   "forward:first", "forward:second"]),
         expect=["at index 2", "you predicted 'pre:first'", "'forward:outer' fires there",
                 "hooks are not run for the whole model up front"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="order", why="prepend ignored: registration order",
         mistake="03.predict_nesting_order.prepend-ignored",
         source=predicted("predict_nesting_order", ["pre:outer", "pre:outer, prepend"] + _NESTING[2:]),
         expect=["at index 0", "prepend=true puts a hook in front"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="order", why="children before their parent",
         mistake="03.predict_nesting_order.child-before-parent",
         source=predicted("predict_nesting_order", _NESTING[3:] + _NESTING[:3]),
         expect=["at index 0", "a child cannot run before the parent that calls it"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="order", why="forward before its pre-hooks",
         mistake="03.predict_nesting_order.forward-before-pre-hook",
         source=predicted("predict_nesting_order", ["forward:outer", "pre:outer, prepend", "pre:outer"]
                          + _NESTING[3:]),
         expect=["at index 0", "a pre-hook runs before its module's forward"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="events", why="the events joined into one string",
         mistake="03.predict_nesting_order.returned-string",
         source=predicted("predict_nesting_order", ", ".join(_NESTING)),
         expect=["returned a string", "return a list of strings, one per event"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="events", why="one event left out",
         mistake="03.predict_nesting_order.wrong-order",
         source=predicted("predict_nesting_order", _NESTING[:-1]),
         expect=["you predicted 6 events, but more fire", "the 6 events before it agree"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="names", why="an event the code never logs",
         mistake="03.predict_nesting_order.unknown-event",
         source=predicted("predict_nesting_order", _NESTING[:2] + ["forward:outer, prepend"] + _NESTING[3:]),
         expect=["'forward:outer, prepend' at index 2, which is not an event this code logs"]),
    dict(exercise="predict_nesting_order", kind="right", why="another spelling: case, spaces, fwd and prehook, a tuple",
         source=predicted("predict_nesting_order", ("PRE : Outer,prepend", " pre:outer ", "FWD:outer", "prehook:first",
                                                    "forward: first", "pre-hook:second", "Forward:Second")),
         expect=[]),
]
# The adversary pass on predict_nesting_order: a hook fired twice, and a spelling that is not one the exercise gives.
ENTRIES += [
    dict(exercise="predict_nesting_order", kind="wrong", clause="events", why="the prepended pre-hook twice",
         mistake="03.predict_nesting_order.event-repeated",
         source=predicted("predict_nesting_order", _NESTING[:1] + _NESTING),
         expect=["at index 1", "you predicted 'pre:outer, prepend'", "an event that has fired does not fire again"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="events",
         why="the parent's pre-hooks again for each child",
         mistake="03.predict_nesting_order.event-repeated",
         source=predicted("predict_nesting_order", _NESTING[:3] + _NESTING[:2] + _NESTING[3:]),
         expect=["at index 3", "each module is called once here"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="names", why="prepend without its comma",
         mistake="03.predict_nesting_order.unknown-event",
         source=predicted("predict_nesting_order", ["pre:outer prepend"] + _NESTING[1:]),
         expect=["'pre:outer prepend' at index 0, which is not an event this code logs"]),
]

# ---------------------------------------------------------------- one for each named mistake
_NOISE_LINE = "noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device) * std"


def _kwargs_hook(exercise, returned):
    """The reference turned into a with_kwargs=True pre-hook that returns `returned`."""
    return edited(reference(exercise), ("    def hook(mod, args):", "    def hook(mod, args, kwargs):"),
                  ("return module.register_forward_pre_hook(hook)",
                   "return module.register_forward_pre_hook(hook, with_kwargs=True)"),
                  (f"        return ({returned}, *args[1:])", f"        return {returned}, *args[1:]"))


def _kwargs_pair_reversed(exercise, returned):
    return edited(reference(exercise), ("    def hook(mod, args):", "    def hook(mod, args, kwargs):"),
                  ("return module.register_forward_pre_hook(hook)",
                   "return module.register_forward_pre_hook(hook, with_kwargs=True)"),
                  (f"        return ({returned}, *args[1:])", f"        return kwargs, ({returned}, *args[1:])"))


def _three_argument_hook(exercise):
    return edited(reference(exercise), ("    def hook(mod, args):", "    def hook(mod, args, kwargs):"))


def _handle_in_a_list(exercise, register="module.register_forward_pre_hook(hook)"):
    return edited(reference(exercise), (f"return {register}", f"return [{register}]"))


def _stand_in_handle(exercise, register="module.register_forward_pre_hook(hook)"):
    return edited(reference(exercise), (f"    return {register}",
                                        f"    {register}\n"
                                        "    return types.SimpleNamespace(remove=lambda: None)"),
                  (f"def {exercise}(", f"import types\n\n\ndef {exercise}("))


ENTRIES += [
    dict(exercise="add_input_noise", kind="wrong", why="hands forward a Python list", clause="shape",
         mistake="03.add_input_noise.first-arg-not-a-tensor",
         source=edited(reference("add_input_noise"), ("return (x + noise, *args[1:])",
                                                      "return ((x + noise).tolist(), *args[1:])")),
         expect=["as its first argument; expected a tensor"]),
    dict(exercise="add_input_noise", kind="wrong", why="noise with an extra leading dimension", clause="shape",
         mistake="03.add_input_noise.wrong-shape",
         source=edited(reference("add_input_noise"), ("torch.randn(x.shape,", "torch.randn((1, *x.shape),")),
         expect=["expected the shape (64, 8, 8)"]),
    dict(exercise="add_input_noise", kind="wrong", why="the training test inverted", clause="mode-at-call",
         mistake="03.add_input_noise.no-noise-added",
         source=edited(reference("add_input_noise"), ("if not mod.training:", "if mod.training:")),
         expect=["forward received x unchanged: no noise was added"]),
    dict(exercise="add_input_noise", kind="wrong", why="without a generator, a generator seeded from Python's random",
         clause="global-state", mistake="03.add_input_noise.noise-not-from-global-state",
         source=edited(reference("add_input_noise"),
                       ("def add_input_noise(", "import random\n\n\ndef add_input_noise("),
                       ("generator=generator,",
                        "generator=generator or torch.Generator().manual_seed(random.randrange(2 ** 31)),")),
         expect=["the two noises differ", "global random state"]),
    dict(exercise="add_input_noise", kind="wrong", why="turns the noise off for good once it sees eval mode",
         clause="mode-at-call", mistake="03.add_input_noise.no-noise-after-eval",
         source=edited(reference("add_input_noise"),
                       ("        if not mod.training:\n            return None",
                        "        if not mod.training or getattr(mod, \"noise_off\", False):\n"
                        "            mod.noise_off = True\n"
                        "            return None")),
         expect=["back in training mode, noise must be added again"]),
    dict(exercise="add_input_noise", kind="wrong", why="noise scaled up in float16, which overflows", clause="normal",
         mistake="03.add_input_noise.noise-not-finite",
         source=edited(reference("add_input_noise"),
                       (_NOISE_LINE, "noise = (torch.randn(x.shape, generator=generator, dtype=torch.float16) * 1e5"
                                     ").to(x.dtype) * (std / 1e5)")),
         expect=["contains inf or nan"]),
    dict(exercise="add_input_noise", kind="wrong", why="scales by 2 * std, the width of a band of one std",
         clause="std", mistake="03.add_input_noise.noise-wrong-std",
         source=edited(reference("add_input_noise"), ("device=x.device) * std", "device=x.device) * 2 * std")),
         expect=["has standard deviation", "expected 0.3"]),
    dict(exercise="add_input_noise", kind="wrong", why="adds x - x.detach() to keep a graph", clause="gradient",
         mistake="03.add_input_noise.wrong-input-grad",
         source=edited(reference("add_input_noise"), ("return (x + noise, *args[1:])",
                                                      "return (x + noise + (x - x.detach()), *args[1:])")),
         expect=["backward from the sum of the new input gave x.grad"]),
    dict(exercise="add_input_noise", kind="wrong", why="a with_kwargs hook returning the arguments alone",
         clause="pre-hook", mistake="03.add_input_noise.kwargs-hook-bad-return",
         source=_kwargs_hook("add_input_noise", "x + noise"),
         expect=["must return None or the pair (args, kwargs)"]),
    dict(exercise="add_input_noise", kind="wrong", why="a with_kwargs hook returning (kwargs, args)",
         clause="pre-hook", mistake="03.add_input_noise.kwargs-pair-reversed",
         source=_kwargs_pair_reversed("add_input_noise", "x + noise"),
         expect=["return the pair in the order (args, kwargs)"]),
    dict(exercise="add_input_noise", kind="wrong", why="a hook taking kwargs registered without with_kwargs",
         clause="pre-hook", mistake="03.add_input_noise.hook-signature",
         source=_three_argument_hook("add_input_noise"),
         expect=["called as hook(module, args, kwargs)"]),
    dict(exercise="add_input_noise", kind="wrong", why="returns the handle in a list", clause="handle",
         mistake="03.add_input_noise.handle-in-a-list", source=_handle_in_a_list("add_input_noise"),
         expect=["not in a list"]),
    dict(exercise="add_input_noise", kind="wrong", why="returns a stand-in handle whose remove does nothing",
         clause="handle", mistake="03.add_input_noise.wrong-handle", source=_stand_in_handle("add_input_noise"),
         expect=["removing the returned handle must remove the noise"]),

    dict(exercise="normalize_input", kind="wrong", why="hands forward a Python list", clause="shape-dtype",
         mistake="03.normalize_input.first-arg-not-a-tensor",
         source=edited(reference("normalize_input"), ("return ((x - m) / s, *args[1:])",
                                                      "return (((x - m) / s).tolist(), *args[1:])")),
         expect=["as its first argument; expected a tensor"]),
    dict(exercise="normalize_input", kind="wrong", why="multiplies by std", clause="formula",
         mistake="03.normalize_input.multiplied-by-std",
         source=edited(reference("normalize_input"), ("(x - m) / s", "(x - m) * s")),
         expect=["multiplied by std"]),
    dict(exercise="normalize_input", kind="wrong", why="divides before subtracting", clause="formula",
         mistake="03.normalize_input.divided-before-subtracting",
         source=edited(reference("normalize_input"), ("(x - m) / s", "x / s - m")),
         expect=["divided first"]),
    dict(exercise="normalize_input", kind="wrong", why="swaps mean and std", clause="formula",
         mistake="03.normalize_input.swapped-mean-std",
         source=edited(reference("normalize_input"), ("(x - m) / s", "(x - s) / m")),
         expect=["swapped mean and std"]),
    dict(exercise="normalize_input", kind="wrong", why="adds the mean", clause="formula",
         mistake="03.normalize_input.wrong-value",
         source=edited(reference("normalize_input"), ("(x - m) / s", "(x + m) / s")),
         expect=["expected (x - mean[c]) / std[c] per channel"]),
    dict(exercise="normalize_input", kind="wrong", why="computes the result but returns None", clause="every-call",
         mistake="03.normalize_input.input-unchanged",
         source=edited(reference("normalize_input"), ("        return ((x - m) / s, *args[1:])",
                                                      "        normalized = ((x - m) / s, *args[1:])")),
         expect=["forward received x unchanged"]),
    dict(exercise="normalize_input", kind="wrong", why="from x.detach(), with x * 0 to keep a graph", clause="gradient",
         mistake="03.normalize_input.gradient-hidden",
         source=edited(reference("normalize_input"), ("return ((x - m) / s, *args[1:])",
                                                      "return ((x.detach() - m) / s + x * 0, *args[1:])")),
         expect=["all zero"]),
    dict(exercise="normalize_input", kind="wrong", why="from x.detach(), with x - x.detach() to keep a graph",
         clause="gradient", mistake="03.normalize_input.wrong-input-grad",
         source=edited(reference("normalize_input"), ("return ((x - m) / s, *args[1:])",
                                                      "return ((x - m) / s + (x - x.detach()), *args[1:])")),
         expect=["backward from the sum of the new input gave x.grad"]),
    dict(exercise="normalize_input", kind="wrong", why="a with_kwargs hook returning the arguments alone",
         clause="pre-hook", mistake="03.normalize_input.kwargs-hook-bad-return",
         source=_kwargs_hook("normalize_input", "(x - m) / s"),
         expect=["must return None or the pair (args, kwargs)"]),
    dict(exercise="normalize_input", kind="wrong", why="a with_kwargs hook returning (kwargs, args)",
         clause="pre-hook", mistake="03.normalize_input.kwargs-pair-reversed",
         source=_kwargs_pair_reversed("normalize_input", "(x - m) / s"),
         expect=["return the pair in the order (args, kwargs)"]),
    dict(exercise="normalize_input", kind="wrong", why="a hook taking kwargs registered without with_kwargs",
         clause="pre-hook", mistake="03.normalize_input.hook-signature",
         source=_three_argument_hook("normalize_input"),
         expect=["called as hook(module, args, kwargs)"]),
    dict(exercise="normalize_input", kind="wrong", why="returns the handle in a list", clause="handle",
         mistake="03.normalize_input.handle-in-a-list", source=_handle_in_a_list("normalize_input"),
         expect=["not in a list"]),
    dict(exercise="normalize_input", kind="wrong", why="returns a stand-in handle whose remove does nothing",
         clause="handle", mistake="03.normalize_input.wrong-handle", source=_stand_in_handle("normalize_input"),
         expect=["forward still received a changed x"]),

    dict(exercise="flatten_images", kind="wrong", why="passes copies of the other arguments", clause="other-args",
         mistake="03.flatten_images.changed-other-arg",
         source=edited(reference("flatten_images"), ("return (x.flatten(1), *args[1:])",
                                                     "return (x.flatten(1), *[arg.clone() for arg in args[1:]])")),
         expect=["positional argument 1 reached forward as"]),
    dict(exercise="flatten_images", kind="wrong", why="hands forward a Python list", clause="all-but-first",
         mistake="03.flatten_images.first-arg-not-a-tensor",
         source=edited(reference("flatten_images"), ("x.flatten(1), *args", "x.flatten(1).tolist(), *args")),
         expect=["as its first argument; expected a tensor"]),
    dict(exercise="flatten_images", kind="wrong", why="transposes the flattened x", clause="all-but-first",
         mistake="03.flatten_images.wrong-shape",
         source=edited(reference("flatten_images"), ("x.flatten(1), *args", "x.flatten(1).t(), *args")),
         expect=["forward received x of shape (48, 5); expected shape (5, 48)"]),
    dict(exercise="flatten_images", kind="wrong", why="from x.detach(), with x * 0 to keep a graph", clause="gradient",
         mistake="03.flatten_images.gradient-hidden",
         source=edited(reference("flatten_images"), ("        return (x.flatten(1), *args[1:])",
                                                     "        return (x.detach().flatten(1) + x.flatten(1) * 0, "
                                                     "*args[1:])")),
         expect=["all zero"]),
    dict(exercise="flatten_images", kind="wrong", why="from x.detach(), with x - x.detach() to keep a graph",
         clause="gradient", mistake="03.flatten_images.wrong-input-grad",
         source=edited(reference("flatten_images"), ("        return (x.flatten(1), *args[1:])",
                                                     "        return (x.flatten(1) + (x - x.detach()).flatten(1), "
                                                     "*args[1:])")),
         expect=["backward from the sum of the new input gave x.grad"]),
    dict(exercise="flatten_images", kind="wrong", why="a with_kwargs hook returning the arguments alone",
         clause="pre-hook", mistake="03.flatten_images.kwargs-hook-bad-return",
         source=_kwargs_hook("flatten_images", "x.flatten(1)"),
         expect=["must return None or the pair (args, kwargs)"]),
    dict(exercise="flatten_images", kind="wrong", why="a with_kwargs hook returning (kwargs, args)",
         clause="pre-hook", mistake="03.flatten_images.kwargs-pair-reversed",
         source=_kwargs_pair_reversed("flatten_images", "x.flatten(1)"),
         expect=["return the pair in the order (args, kwargs)"]),
    dict(exercise="flatten_images", kind="wrong", why="a hook taking kwargs registered without with_kwargs",
         clause="pre-hook", mistake="03.flatten_images.hook-signature",
         source=_three_argument_hook("flatten_images"),
         expect=["called as hook(module, args, kwargs)"]),
    dict(exercise="flatten_images", kind="wrong", why="returns the handle in a list", clause="handle",
         mistake="03.flatten_images.handle-in-a-list", source=_handle_in_a_list("flatten_images"),
         expect=["not in a list"]),
    dict(exercise="flatten_images", kind="wrong", why="returns a stand-in handle whose remove does nothing",
         clause="handle", mistake="03.flatten_images.wrong-handle", source=_stand_in_handle("flatten_images"),
         expect=["forward still received a flattened x"]),

    dict(exercise="force_kwarg", kind="wrong", why="passes the value as a string", clause="name-value",
         mistake="03.force_kwarg.wrong-value",
         source=edited(reference("force_kwarg"), ("{**kwargs, name: value}", "{**kwargs, name: str(value)}")),
         expect=["forward received scale='2.5'; expected 2.5"]),
    dict(exercise="force_kwarg", kind="wrong", why="returns the handle in a list", clause="handle",
         mistake="03.force_kwarg.handle-in-a-list",
         source=_handle_in_a_list("force_kwarg", "module.register_forward_pre_hook(hook, with_kwargs=True)"),
         expect=["not in a list"]),
    dict(exercise="force_kwarg", kind="wrong", why="returns a stand-in handle whose remove does nothing",
         clause="handle", mistake="03.force_kwarg.wrong-handle",
         source=_stand_in_handle("force_kwarg", "module.register_forward_pre_hook(hook, with_kwargs=True)"),
         expect=["removing the returned handle must remove the hook"]),

    dict(exercise="predict_nesting_order", kind="wrong", clause="events", why="returns None",
         mistake="03.predict_nesting_order.returned-none", source=predicted("predict_nesting_order", None),
         expect=["returned None"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="order", why="a set of events, which has no order",
         mistake="03.predict_nesting_order.not-a-list",
         source=predicted("predict_nesting_order", {"pre:outer"}),
         expect=["returned a set (a set has no order)"]),
    dict(exercise="predict_nesting_order", kind="wrong", clause="names", why="numbers for the events",
         mistake="03.predict_nesting_order.not-event-names",
         source=predicted("predict_nesting_order", [1, 2, 3]),
         expect=["whose item 0 is int 1, not an event name"]),
]
