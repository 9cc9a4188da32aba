"""Mistake catalogue for lesson 06, a CNN's feature maps and Grad-CAM. The format of an entry is
described in tests/course/test_mistake_catalogue.py. An entry that is the reference solution with one
mistake says so: `edited(reference(exercise), (old, new), ...)`; the others are submissions of their own."""

from mistakes import edited, reference


ENTRIES = [
    # ------------------------------------------------------------------ get_activation
    dict(exercise="get_activation", kind="wrong", clause="not-changed-later", why="detach without clone, overwritten by the in-place ReLU",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()', 'captured["output"] = output.detach()')),
         expect=["after the in-place relu", "shares memory", "clone()"],
         mistake="06.get_activation.not-cloned"),
    dict(exercise="get_activation", kind="wrong", clause="removed-on-raise", why="hook left behind when the forward raises",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():',
                        'handle = layer.register_forward_hook(hook)\n    with torch.no_grad():'),
                       ('return captured["output"]', 'handle.remove()\n    return captured["output"]')),
         expect=["valueerror came through", "hooks were left", "finally"],
         mistake="06.get_activation.hook-left-on-exception"),
    dict(exercise="get_activation", kind="wrong", clause="removed", why="never removes the hook",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():',
                        'layer.register_forward_hook(hook)\n    with torch.no_grad():')),
         expect=["hooks were still registered", "forward_hooks"],
         mistake="06.get_activation.hook-left-registered"),
    dict(exercise="get_activation", kind="wrong", clause="no-graph", why="forward with grad mode on",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():',
                        'with layer.register_forward_hook(hook):')),
         expect=["grad mode on", "torch.no_grad()"],
         mistake="06.get_activation.forward-with-grad"),
    dict(exercise="get_activation", kind="wrong", clause="detached", why="returns the output still attached to the graph",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()', 'captured["output"] = output.clone()'),
                       ('with layer.register_forward_hook(hook), torch.no_grad():',
                        'with layer.register_forward_hook(hook):')),
         expect=["autograd graph", "detached"],
         mistake="06.get_activation.not-detached"),
    dict(exercise="get_activation", kind="wrong", clause="propagates", why="swallows the exception of the forward pass",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():\n        model(x)',
                        'handle = layer.register_forward_hook(hook)\n'
                        '    try:\n'
                        '        with torch.no_grad():\n'
                        '            model(x)\n'
                        '    except Exception:\n'
                        '        pass\n'
                        '    finally:\n'
                        '        handle.remove()')),
         expect=["returned", "but model(x) raised valueerror", "don't catch it"],
         mistake="06.get_activation.exception-swallowed"),
    dict(exercise="get_activation", kind="wrong", clause="mode", why="switches the model to eval mode",
         source=edited(reference("get_activation"), ('captured = {}', 'model.eval()\n    captured = {}')),
         expect=["left the model in eval mode", "it was in train mode"],
         mistake="06.get_activation.mode-changed"),
    dict(exercise="get_activation", kind="wrong", clause="output-of-layer", why="captures the layer's input",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()', 'captured["output"] = args[0].detach().clone()')),
         expect=["the layer's input", "expected its output"],
         mistake="06.get_activation.layer-input"),
    dict(exercise="get_activation", kind="right", why="inference_mode, try/finally and a hook class",
         source='''
import torch


class Keep:
    value = None

    def __call__(self, module, args, output):
        self.value = output.clone()


def get_activation(model, layer, x):
    keep = Keep()
    handle = layer.register_forward_hook(keep)
    try:
        with torch.inference_mode():
            model(x)
    finally:
        handle.remove()
    return keep.value
''',
         expect=[]),
    dict(exercise="get_activation", kind="right", why="set_grad_enabled(False), copy into a list, always_call",
         source='''
import torch


def get_activation(model, layer, x):
    seen = []

    def hook(module, args, output):
        if output is not None:
            seen.append(torch.empty_like(output).copy_(output))

    with torch.set_grad_enabled(False), layer.register_forward_hook(hook, always_call=True):
        model(x)
    return seen[-1].detach()
''',
         expect=[]),

    dict(exercise="get_activation", kind="wrong", clause="during-model", why="calls the layer on x instead of running the model",
         source='''
import torch


def get_activation(model, layer, x):
    with torch.no_grad():
        return layer(x).detach().clone()
''',
         expect=["never ran the model's forward pass", "model(x)", "forward hook"],
         mistake="06.get_activation.model-not-run"),
    dict(exercise="get_activation", kind="wrong", clause="not-changed-later", why="clones after the forward pass, too late",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()', 'captured["output"] = output')),
         expect=["after the in-place relu", "detach().clone()"],
         mistake="06.get_activation.not-cloned"),
    dict(exercise="get_activation", kind="wrong", clause="grad-mode", why="switches grad mode off for good",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():',
                        'torch.set_grad_enabled(False)\n    with layer.register_forward_hook(hook):')),
         expect=["grad mode was left off", "torch.no_grad()"],
         mistake="06.get_activation.grad-mode-left-off"),
    dict(exercise="get_activation", kind="wrong", clause="propagates", why="replaces the forward's exception with its own",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():\n        model(x)',
                        'handle = layer.register_forward_hook(hook)\n'
                        '    try:\n'
                        '        with torch.no_grad():\n'
                        '            model(x)\n'
                        '    except Exception as error:\n'
                        '        raise RuntimeError("the forward pass failed") from error\n'
                        '    finally:\n'
                        '        handle.remove()')),
         expect=["raised runtimeerror", "valueerror to reach the caller unchanged"],
         mistake="06.get_activation.exception-replaced"),
    dict(exercise="get_activation", kind="wrong", clause="removed", why="hooks every module and removes only one hook",
         source='''
import torch


def get_activation(model, layer, x):
    captured = {}
    handles = [module.register_forward_hook(
        lambda module, args, output: captured.update({module: output.detach().clone()}))
        for module in model.modules()]
    try:
        with torch.no_grad():
            model(x)
    finally:
        handles[0].remove()
    return captured[layer]
''',
         expect=["hooks were still registered", "remove every hook"],
         mistake="06.get_activation.hook-left-registered"),
    dict(exercise="get_activation", kind="wrong", clause="output-of-layer", why="hooks the model instead of the layer",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():',
                        'with model.register_forward_hook(hook), torch.no_grad():')),
         expect=["the model's output", "forward hook on that layer"],
         mistake="06.get_activation.model-output"),
    dict(exercise="get_activation", kind="right", why="no_grad decorator, ExitStack, clone then detach",
         source='''
import contextlib

import torch


@torch.no_grad()
def get_activation(model, layer, x):
    kept = []
    with contextlib.ExitStack() as stack:
        hook = lambda module, args, output: kept.append(output.clone().detach())  # noqa: E731
        stack.enter_context(layer.register_forward_hook(hook))
        model(x)
    return kept[-1]
''',
         expect=[]),
    dict(exercise="get_activation", kind="right", why="the hook hands the model a copy, keeps the original",
         source=edited(reference("get_activation"),
                       ('captured = {}', 'kept = []'),
                       ('captured["output"] = output.detach().clone()',
                        'kept.append(output)\n'
                        '        return output.clone()  # the in-place ReLU changes the copy, not the kept output'),
                       ('return captured["output"]', 'return kept[-1]')),
         expect=[]),
    dict(exercise="get_activation", kind="right", why="grad mode saved and restored by hand in finally",
         source='''
import torch


def get_activation(model, layer, x):
    kept = []
    was_enabled = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    handle = layer.register_forward_hook(lambda module, args, output: kept.append(output.detach().clone()))
    try:
        model(x)
    finally:
        handle.remove()
        torch.set_grad_enabled(was_enabled)
    return kept[-1]
''',
         expect=[]),

    # ------------------------------------------------------------------ grad_cam
    dict(exercise="grad_cam", kind="wrong", clause="relu", why="missing ReLU",
         source=edited(reference("grad_cam"),
                       ('cam = torch.relu((weights[:, None, None] * activation).sum(dim=0))',
                        'cam = (weights[:, None, None] * activation).sum(dim=0)')),
         expect=["before the relu", "torch.relu"],
         mistake="06.grad_cam.no-relu"),
    dict(exercise="grad_cam", kind="wrong", clause="normalize", why="missing normalization",
         source=edited(reference("grad_cam"),
                       ('cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]\n'
                        '    if cam.max() > 0:\n'
                        '        cam = cam / cam.max()\n'
                        '    return cam',
                        'return F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]')),
         expect=["not normalized", "divide", "maximum"],
         mistake="06.grad_cam.not-normalized"),
    dict(exercise="grad_cam", kind="wrong", clause="zero-map", why="divides by a zero maximum",
         source=edited(reference("grad_cam"),
                       ('if cam.max() > 0:\n        cam = cam / cam.max()\n    return cam', 'return cam / cam.max()')),
         expect=["nan", "only when it is positive"],
         mistake="06.grad_cam.divided-by-zero-maximum"),
    dict(exercise="grad_cam", kind="wrong", clause="weights", why="weights from the activations instead of the gradients",
         source=edited(reference("grad_cam"),
                       ('weights = gradient.mean(dim=(1, 2))', 'weights = activation.mean(dim=(1, 2))')),
         expect=["means of the activations", "gradient g"],
         mistake="06.grad_cam.activation-means-as-weights"),
    dict(exercise="grad_cam", kind="wrong", clause="in-place-relu", why="module full backward hook with an in-place ReLU",
         source=edited(reference("grad_cam"),
                       ('        output.register_hook(lambda grad: saved.update(gradient=grad.detach()))\n', ''),
                       ('    with layer.register_forward_hook(hook):\n'
                        '        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers\n'
                        '    score.backward()',
                        '    def backward_hook(module, grad_input, grad_output):\n'
                        '        saved["gradient"] = grad_output[0]\n'
                        '\n'
                        '    with layer.register_forward_hook(hook), layer.register_full_backward_hook(backward_hook):\n'
                        '        score = model(x)[0, target]\n'
                        '        score.backward()')),
         expect=["inplace=true", "full backward hook", "output.register_hook"],
         mistake="06.grad_cam.full-backward-hook"),
    dict(exercise="grad_cam", kind="wrong", clause="A-as-produced", why="activation detached but not cloned",
         source=edited(reference("grad_cam"),
                       ('saved["activation"] = output.detach().clone()', 'saved["activation"] = output.detach()')),
         expect=["overwrote it", "detach().clone()"],
         mistake="06.grad_cam.activation-after-relu"),
    dict(exercise="grad_cam", kind="wrong", clause="G", why="retain_grad gives the gradient after the in-place ReLU",
         source=edited(reference("grad_cam"),
                       ('output.register_hook(lambda grad: saved.update(gradient=grad.detach()))',
                        'output.retain_grad()\n        saved["output"] = output'),
                       ('saved["gradient"][0]\n', 'saved["output"].grad[0]\n')),
         expect=["in-place relu's result", "retain_grad", "tensor hook"],
         mistake="06.grad_cam.gradient-after-relu"),
    dict(exercise="grad_cam", kind="wrong", clause="no-hook", why="hook left behind",
         source=edited(reference("grad_cam"),
                       ('with layer.register_forward_hook(hook):\n'
                        '        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'layer.register_forward_hook(hook)\n'
                        '    score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers')),
         expect=["hooks were still registered", "remove every hook"],
         mistake="06.grad_cam.hook-left-registered"),
    dict(exercise="grad_cam", kind="wrong", clause="upsample", why="no upsampling",
         source=edited(reference("grad_cam"),
                       ('    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]\n',
                        '')),
         expect=["the layer's spatial size", "upsample", "f.interpolate"],
         mistake="06.grad_cam.not-upsampled"),
    dict(exercise="grad_cam", kind="wrong", clause="mode", why="mode changed to eval",
         source=edited(reference("grad_cam"), ('    saved = {}', '    model.eval()\n    saved = {}')),
         expect=["left the model in eval mode", "was in train mode"],
         mistake="06.grad_cam.mode-changed"),
    dict(exercise="grad_cam", kind="wrong", clause="upsample", why="align_corners=True",
         source=edited(reference("grad_cam"),
                       ('cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]',
                        'cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=True)[0, 0]')),
         expect=["align_corners=true", "use align_corners=false"],
         mistake="06.grad_cam.align-corners-true"),
    dict(exercise="grad_cam", kind="wrong", clause="normalize", why="min-max scaling",
         source=edited(reference("grad_cam"),
                       ('if cam.max() > 0:\n        cam = cam / cam.max()\n    return cam',
                        'span = cam.max() - cam.min()\n    return (cam - cam.min()) / span if span > 0 else cam')),
         expect=["min-max", "divide by the maximum only"],
         mistake="06.grad_cam.min-max-scaling"),
    dict(exercise="grad_cam", kind="wrong", clause="shape", why="keeps the batch and channel dimensions",
         source=edited(reference("grad_cam"), ('align_corners=False)[0, 0]', 'align_corners=False)')),
         expect=["2-d", "drop the batch and channel dimensions"],
         mistake="06.grad_cam.batch-and-channel-kept"),
    dict(exercise="grad_cam", kind="right", why="hook returns a clone, autograd.grad, einsum, nn.Upsample",
         source='''
import torch
from torch import nn


def grad_cam(model, layer, x, target):
    kept = {}

    def hook(module, args, output):
        kept["A"] = output
        return output.clone()  # the model goes on with the copy; an in-place ReLU changes the copy

    with layer.register_forward_hook(hook):
        score = model(x.clone().requires_grad_(True))[0, target]  # a graph through frozen layers too
    A = kept["A"]
    (G,) = torch.autograd.grad(score, A)
    weights = G[0].sum(dim=(1, 2)) / (G.shape[2] * G.shape[3])
    cam = torch.einsum("k,khw->hw", weights, A[0].detach()).clamp(min=0)
    upsample = nn.Upsample(size=tuple(x.shape[2:]), mode="bilinear", align_corners=False)
    cam = upsample(cam.unsqueeze(0).unsqueeze(0)).squeeze()
    return cam / cam.max().clamp(min=1e-12)
''',
         expect=[]),
    dict(exercise="grad_cam", kind="right", why="try/finally removal, zero_grad first, torch.where guard",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    activations, gradients = [], []

    def hook(module, args, output):
        activations.append(output.detach().clone())
        output.register_hook(gradients.append)

    handle = layer.register_forward_hook(hook)
    try:
        model.zero_grad()
        model(torch.autograd.Variable(x, requires_grad=True))[0, target].backward()  # an old spelling of a copy
    finally:
        handle.remove()
    A, G = activations[0].squeeze(0), gradients[0].squeeze(0)
    cam = F.relu((G.mean(dim=(-2, -1), keepdim=True) * A).sum(0, keepdim=True))
    cam = F.interpolate(cam.unsqueeze(0), size=(x.shape[2], x.shape[3]), mode="bilinear", align_corners=False)
    cam = cam[0, 0]
    peak = cam.max()
    return torch.where(peak > 0, cam / torch.where(peak > 0, peak, torch.ones_like(peak)), cam)
''',
         expect=[]),
    dict(exercise="grad_cam", kind="wrong", clause="relu", why="absolute value instead of ReLU",
         source=edited(reference("grad_cam"), ('cam = torch.relu(', 'cam = torch.abs(')),
         expect=["absolute value", "torch.relu"],
         mistake="06.grad_cam.abs-instead-of-relu"),
    dict(exercise="grad_cam", kind="wrong", clause="target", why="the predicted class instead of target",
         source=edited(reference("grad_cam"),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = model(x)[0].max()')),
         expect=["the one the model predicts", "passed as `target`"],
         mistake="06.grad_cam.predicted-class"),
    dict(exercise="grad_cam", kind="wrong", clause="upsample", why="nearest-neighbour upsampling",
         source=edited(reference("grad_cam"), ('mode="bilinear", align_corners=False', 'mode="nearest"')),
         expect=["nearest-neighbour", "mode='bilinear'"],
         mistake="06.grad_cam.nearest-upsampling"),
    dict(exercise="grad_cam", kind="wrong", clause="relu", why="ReLU after the upsampling",
         source=edited(reference("grad_cam"),
                       ('cam = torch.relu((weights[:, None, None] * activation).sum(dim=0))\n'
                        '    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]',
                        'cam = (weights[:, None, None] * activation).sum(dim=0)\n'
                        '    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0].relu()')),
         expect=["after the upsampling", "then upsample"],
         mistake="06.grad_cam.relu-after-upsampling"),
    dict(exercise="grad_cam", kind="wrong", clause="grad-mode", why="switches grad mode off for good",
         source=edited(reference("grad_cam"),
                       ('if cam.max() > 0:', 'torch.set_grad_enabled(False)\n    if cam.max() > 0:')),
         expect=["grad mode was left off"],
         mistake="06.grad_cam.grad-mode-left-off"),
    dict(exercise="grad_cam", kind="wrong", clause="mode", why="switches an eval model to train mode",
         source=edited(reference("grad_cam"), ('    saved = {}', '    model.train()\n    saved = {}')),
         expect=["left the model in train mode", "was in eval mode"],
         mistake="06.grad_cam.mode-changed"),
    dict(exercise="grad_cam", kind="wrong", clause="G", why="tensor hook registered after the forward pass",
         source=edited(reference("grad_cam"),
                       ('output.register_hook(lambda grad: saved.update(gradient=grad.detach()))',
                        'saved["output"] = output'),
                       ('score.backward()',
                        'saved["output"].register_hook(lambda grad: saved.update(gradient=grad.detach()))\n'
                        '    score.backward()')),
         expect=["in-place relu's result", "inside the forward hook"],
         mistake="06.grad_cam.gradient-after-relu"),
    dict(exercise="grad_cam", kind="wrong", clause="G", why="autograd.grad on the output the ReLU overwrote",
         source=edited(reference("grad_cam"),
                       ('output.register_hook(lambda grad: saved.update(gradient=grad.detach()))',
                        'saved["output"] = output'),
                       ('    score.backward()\n',
                        '    saved["gradient"], = torch.autograd.grad(score, saved["output"])\n')),
         expect=["in-place relu's result", "torch.autograd.grad on the captured output"],
         mistake="06.grad_cam.gradient-after-relu"),
    dict(exercise="grad_cam", kind="wrong", clause="in-place-relu", why="full backward pre-hook with an in-place ReLU",
         source=edited(reference("grad_cam"),
                       ('        output.register_hook(lambda grad: saved.update(gradient=grad.detach()))\n', ''),
                       ('with layer.register_forward_hook(hook):',
                        'with layer.register_forward_hook(hook), layer.register_full_backward_pre_hook(\n'
                        '            lambda module, grad_output: saved.update(gradient=grad_output[0])):')),
         expect=["full backward hook (or pre-hook)", "output.register_hook"],
         mistake="06.grad_cam.full-backward-hook"),
    dict(exercise="grad_cam", kind="wrong", clause="no-hook", why="leaves a tensor hook on a parameter",
         source=edited(reference("grad_cam"),
                       ('    score.backward()',
                        '    next(model.parameters()).register_hook(lambda grad: grad)\n    score.backward()')),
         expect=["tensor hook", "remove every hook"],
         mistake="06.grad_cam.hook-left-registered"),
    dict(exercise="grad_cam", kind="right",
         why="weights summed, not averaged: the same map once divided by the maximum",
         source=edited(reference("grad_cam"),
                       ('weights = gradient.mean(dim=(1, 2))', 'weights = gradient.sum(dim=(1, 2))')),
         expect=[]),
    dict(exercise="grad_cam", kind="right", why="scale_factor when the sizes divide, einsum, clamp",
         source="""
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.__setitem__("G", grad))

    with layer.register_forward_hook(hook):
        model(x.detach().requires_grad_())[0, target].backward()
    cam = torch.einsum("bk,bkhw->bhw", saved["G"].mean(dim=(2, 3)), saved["A"]).clamp(min=0)[:, None]
    (H, W), (h, w) = x.shape[-2:], cam.shape[-2:]
    if H % h == 0 and W % w == 0:
        cam = F.interpolate(cam, scale_factor=(H // h, W // w), mode="bilinear", align_corners=False)
    else:
        cam = F.interpolate(cam, size=(H, W), mode="bilinear")
    cam = cam.squeeze()
    top = cam.max()
    return cam / top if top > 0 else torch.zeros_like(cam)
""",
         expect=[]),
    dict(exercise="grad_cam", kind="right", why="on a copy of the model without in-place ReLUs",
         source="""
import copy

import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    name = next(name for name, module in model.named_modules() if module is layer)
    twin = copy.deepcopy(model).requires_grad_(True)  # the copy may be unfrozen; the model stays frozen
    for module in twin.modules():
        if hasattr(module, "inplace"):
            module.inplace = False
    kept = {}
    twin.get_submodule(name).register_forward_hook(lambda module, args, output: kept.update(A=output))
    (G,) = torch.autograd.grad(twin(x)[0, target], kept["A"])
    A, G = kept["A"].detach()[0], G[0]
    cam = F.relu((G.mean((1, 2)).view(-1, 1, 1) * A).sum(0))
    cam = F.interpolate(cam.view(1, 1, *cam.shape), size=tuple(x.shape[2:]), mode="bilinear", align_corners=False)
    cam = cam.view(x.shape[2], x.shape[3])
    return cam / cam.max() if cam.max() > 0 else cam
""",
         expect=[]),
    dict(exercise="grad_cam", kind="right", why="eval during the call, every module's mode put back, double precision",
         source="""
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    modes = {module: module.training for module in model.modules()}
    frozen = [p for p in model.parameters() if not p.requires_grad]
    activations, gradients = [], []

    def hook(module, args, output):
        activations.append(output.detach().clone().double())
        output.register_hook(lambda grad: gradients.append(grad.double()))

    handle = layer.register_forward_hook(hook)
    try:
        model.eval()
        for p in frozen:
            p.requires_grad_(True)
        with torch.enable_grad():
            model(x)[0, target].backward()
    finally:
        handle.remove()
        for module, training in modes.items():
            module.training = training
        for p in frozen:
            p.requires_grad_(False)
            p.grad = None
    A, G = activations[0][0], gradients[0][0]
    cam = torch.maximum(torch.tensordot(G.mean(dim=(1, 2)), A, dims=1), torch.zeros(()).double())
    cam = F.interpolate(cam[None, None], size=x.shape[2:], mode="bilinear", align_corners=False)[0][0]
    return (cam.div(cam.max()) if cam.max().item() > 0 else cam).float()
""",
         expect=[]),
]

# The clause → check table (tests/course/test_contract_clauses.py): words quoted from each docstring.
CLAUSES = {
    "get_activation": {
        "output-of-layer": "The output of `layer`",
        "during-model": "during `model(x)`",
        "removed": "Captured with a forward hook on `layer` that is removed before returning",
        "removed-on-raise": "also when the forward pass raises",
        "propagates": "(the exception propagates)",
        "no-graph": "The forward pass runs without building an autograd graph.",
        "detached": "The result is detached",
        "not-changed-later": "in-place operations later in the model (such as an in-place ReLU after `layer`) do not "
                             "change it.",
        "root": "`layer` may be `model` itself.",
        "callers-hooks": "Hooks registered before the call stay.",
        "shared-last": "If `layer` runs more than once during `model(x)` (a module used twice), the result is the output "
                       "of its last call.",
        "mode": "The model and each of its modules keep their train/eval mode",
        "grad-mode": "grad mode is as it was once the function returns.",
    },
    "grad_cam": {
        "target": "Grad-CAM of class `target`",
        "layer": "at `layer`",
        "A-as-produced": "With A the output of `layer` as the layer produced it",
        "G": "G the gradient of `model(x)[0, target]` with respect to A",
        "weights": "w_k = mean of G over its spatial dims",
        "relu": "cam = relu(sum_k w_k * A_k)",
        "upsample": "upsampled bilinearly (align_corners=False) to (H, W)",
        "normalize": "divided by its maximum",
        "zero-map": "when that is positive",
        "shape": "Returns a tensor of shape (H, W).",
        "in-place-relu": "Works when `layer` is followed by an in-place ReLU",
        "frozen": "and on a frozen model (no parameter requires grad)",
        "requires-grad-kept": "leaving every parameter's requires_grad as it was",
        "no-hook": "Leaves no hook on any module",
        "no-hook-on-raise": "also when the forward pass raises",
        "propagates": "(the exception propagates)",
        "callers-hooks": "keeps the hooks registered before the call",
        "mode": "every module of the model in its train/eval mode",
        "grad-mode": "grad mode on (it is called with grad mode on)",
        "x-unchanged": "`x` is left as it was: its values, and it does not require grad.",
    },
}

ENTRIES += [
    # ------------------------------------------------------------------ get_activation: clauses, adversary
    dict(exercise="get_activation", kind="wrong", clause="root", why="looks for the layer among the model's submodules only",
         source='''
import torch


def get_activation(model, layer, x):
    captured = {}
    handles = [module.register_forward_hook(lambda m, args, output: captured.update(out=output.detach().clone()))
               for name, module in model.named_modules() if name and module is layer]  # skip the container
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return captured["out"]
''',
         expect=["layer is the model itself", "keyerror"],
         mistake="06.get_activation.root-not-hooked"),
    dict(exercise="get_activation", kind="wrong", clause="grad-mode", why="turns grad mode back on, whatever it was",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():\n        model(x)',
                        'torch.set_grad_enabled(False)\n'
                        '    try:\n'
                        '        with layer.register_forward_hook(hook):\n'
                        '            model(x)\n'
                        '    finally:\n'
                        '        torch.set_grad_enabled(True)')),
         expect=["called with grad mode off and left it on"],
         mistake="06.get_activation.grad-mode-turned-on"),
    dict(exercise="get_activation", kind="wrong", clause="no-graph", why="no_grad inside the hook, not around the forward",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()\n'
                        '\n'
                        '    with layer.register_forward_hook(hook), torch.no_grad():',
                        'with torch.no_grad():\n'
                        '            captured["output"] = output.detach().clone()\n'
                        '\n'
                        '    with layer.register_forward_hook(hook):')),
         expect=["grad mode on", "torch.no_grad()"],
         mistake="06.get_activation.forward-with-grad"),
    dict(exercise="get_activation", kind="wrong", clause="removed", why="removes the hook only when the forward raises",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():\n        model(x)',
                        'handle = layer.register_forward_hook(hook)\n'
                        '    try:\n'
                        '        with torch.no_grad():\n'
                        '            model(x)\n'
                        '    except Exception:\n'
                        '        handle.remove()\n'
                        '        raise')),
         expect=["hooks were still registered", "remove every hook"],
         mistake="06.get_activation.hook-left-registered"),
    dict(exercise="get_activation", kind="wrong", clause="mode", why="eval for the forward, then train()",
         source=edited(reference("get_activation"),
                       ('return captured["output"]', 'model.train()\n    return captured["output"]')),
         expect=["left the model in train mode", "it was in eval mode"],
         mistake="06.get_activation.mode-changed"),
    dict(exercise="get_activation", kind="wrong", clause="output-of-layer", why="keeps the first sample only",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()',
                        'captured["output"] = output[0].detach().clone()')),
         expect=["first sample only", "whole batch"],
         mistake="06.get_activation.first-sample-only"),
    dict(exercise="get_activation", kind="wrong", clause="output-of-layer", why="a forward pre-hook keeps the layer's input",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()', 'captured["output"] = args[0].detach().clone()')),
         expect=["the layer's input", "expected its output"],
         mistake="06.get_activation.layer-input"),
    dict(exercise="get_activation", kind="wrong", clause="not-changed-later", why="output.data shares memory too",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()', 'captured["output"] = output.data')),
         expect=["after the in-place relu", "clone()"],
         mistake="06.get_activation.not-cloned"),
    dict(exercise="get_activation", kind="right", why="a with_kwargs forward hook and deepcopy",
         source='''
import copy

import torch


def get_activation(model, layer, x):
    kept = []
    hook = layer.register_forward_hook(lambda m, args, kwargs, output: kept.append(copy.deepcopy(output)),
                                       with_kwargs=True)
    try:
        with torch.no_grad():
            model(x)
    finally:
        hook.remove()
    return kept[-1]
''',
         expect=[]),

    # ------------------------------------------------------------------ grad_cam: clauses, adversary
    dict(exercise="grad_cam", kind="wrong", clause="layer", why="always the last Conv2d of the model",
         source=edited(reference("grad_cam"),
                       ('saved = {}',
                        'layer = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)][-1]\n    saved = {}')),
         expect=["not at the layer passed in", "on `layer` itself"],
         mistake="06.grad_cam.other-layer"),
    dict(exercise="grad_cam", kind="wrong", clause="G", why="the gradient of the softmax probability",
         source=edited(reference("grad_cam"),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = F.softmax(model(x), dim=1)[0, target]')),
         expect=["softmax probability", "raw score"],
         mistake="06.grad_cam.softmax-score"),
    dict(exercise="grad_cam", kind="wrong", clause="G", why="backward from the cross-entropy loss",
         source=edited(reference("grad_cam"),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = F.cross_entropy(model(x), torch.tensor([target]))')),
         expect=["cross-entropy loss", "not from a loss"],
         mistake="06.grad_cam.loss-instead-of-score"),
    dict(exercise="grad_cam", kind="wrong", clause="G", why="the gradient of the log-probability",
         source=edited(reference("grad_cam"),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = model(x).log_softmax(dim=1)[0, target]')),
         expect=["softmax probability", "or of its log", "raw score"],
         mistake="06.grad_cam.softmax-score"),
    dict(exercise="grad_cam", kind="wrong", clause="G", why="forward pass under torch.no_grad()",
         source=edited(reference("grad_cam"),
                       ('    with layer.register_forward_hook(hook):',
                        '    with layer.register_forward_hook(hook), torch.no_grad():')),
         expect=["built no autograd graph", "grad mode on"],
         mistake="06.grad_cam.no-graph"),
    dict(exercise="grad_cam", kind="wrong", clause="shape", why="returns a NumPy array",
         source=edited(reference("grad_cam"),
                       ('if cam.max() > 0:\n        cam = cam / cam.max()\n    return cam',
                        'return (cam / cam.max() if cam.max() > 0 else cam).numpy()')),
         expect=["returned ndarray", "expected a tensor"],
         mistake="06.grad_cam.not-a-tensor"),
    dict(exercise="grad_cam", kind="wrong", clause="weights", why="gradient averaged over the channels",
         source=edited(reference("grad_cam"),
                       ('weights = gradient.mean(dim=(1, 2))\n'
                        '    cam = torch.relu((weights[:, None, None] * activation).sum(dim=0))',
                        'weights = gradient.mean(dim=0)\n    cam = torch.relu((weights * activation).sum(dim=0))')),
         expect=["averaged g over its channels", "one weight w_k per channel"],
         mistake="06.grad_cam.mean-over-channels"),
    dict(exercise="grad_cam", kind="wrong", clause="normalize", why="divides by the maximum before upsampling",
         source=edited(reference("grad_cam"),
                       ('cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]\n'
                        '    if cam.max() > 0:\n'
                        '        cam = cam / cam.max()\n'
                        '    return cam',
                        'cam = cam / cam.max() if cam.max() > 0 else cam\n'
                        '    return F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]')),
         expect=["before the upsampling", "upsample first"],
         mistake="06.grad_cam.normalized-before-upsampling"),
    dict(exercise="grad_cam", kind="right", why="the target column summed, weights as keepdim means",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    store = {}

    def hook(module, args, output):
        store["A"] = output.detach().clone()
        output.register_hook(lambda grad: store.setdefault("G", grad))

    image = x.detach().clone()
    image.requires_grad = True
    with layer.register_forward_hook(hook):
        out = model(image)
    out[:, target].sum().backward()
    A, G = store["A"], store["G"]
    cam = F.relu((G.mean(dim=(2, 3), keepdim=True) * A).sum(dim=1, keepdim=True))
    cam = F.interpolate(cam, size=x.shape[2:], mode="bilinear", align_corners=False).squeeze(0).squeeze(0)
    peak = cam.max()
    return cam / peak if peak > 0 else cam
''',
         expect=[]),
]

# Patterns of public Grad-CAM code (register_backward_hook, a map resized to the activation's own size, a
# one-hot gradient given to backward), each alone.
ENTRIES += [
    # Behaviour, not spelling: the deprecated hook sits on the layer's last autograd node, whose grad_output is
    # the gradient of the value the layer produced (a one-op layer here), so the map is right; lesson 05 says
    # why the course does not teach it.
    dict(exercise="grad_cam", kind="right", why="the deprecated register_backward_hook gives the right grad_output",
         source=edited(reference("grad_cam"),
                       ('        output.register_hook(lambda grad: saved.update(gradient=grad.detach()))\n', ''),
                       ('    with layer.register_forward_hook(hook):\n'
                        '        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers\n'
                        '    score.backward()',
                        '    with layer.register_forward_hook(hook), layer.register_backward_hook(\n'
                        '            lambda module, grad_input, grad_output: saved.update(gradient=grad_output[0])):\n'
                        '        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers\n'
                        '        score.backward()')),
         expect=[]),
    dict(exercise="grad_cam", kind="wrong", clause="upsample", why="resized to the activation's own size",
         source=edited(reference("grad_cam"), ('size=x.shape[-2:]', 'size=activation.shape[-2:]')),
         expect=["the layer's spatial size", "upsample it to the input's size"],
         mistake="06.grad_cam.not-upsampled"),
    dict(exercise="grad_cam", kind="right", why="a one-hot gradient given to backward",
         source=edited(reference("grad_cam"),
                       ('def hook(module, args, output):',
                        "x = x.detach().requires_grad_()  # a graph also through a frozen model; the caller's x does not change\n"
                        '    def hook(module, args, output):'),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers\n'
                        '    score.backward()',
                        'scores = model(x)\n'
                        '    one_hot = torch.zeros_like(scores)\n'
                        '    one_hot[0, target] = 1\n'
                        '    scores.backward(gradient=one_hot)')),
         expect=[]),
]

# Second round, written from the docstrings alone.
ENTRIES += [
    dict(exercise="get_activation", kind="wrong", clause="mode", why="eval for the forward, then model.train(was)",
         source=edited(reference("get_activation"),
                       ('    with layer.register_forward_hook(hook), torch.no_grad():\n        model(x)\n',
                        '    was_training = model.training\n'
                        '    model.eval()\n'
                        '    with layer.register_forward_hook(hook), torch.no_grad():\n'
                        '        model(x)\n'
                        '    model.train(was_training)\n')),
         expect=["changed the mode of submodules", "pool (was eval, now train)", "each module's own mode"],
         mistake="06.get_activation.submodule-modes-changed"),
    dict(exercise="grad_cam", kind="wrong", clause="mode", why="eval for the call, then model.train(was)",
         source=edited(reference("grad_cam"),
                       ('    saved = {}', '    was_training = model.training\n    model.eval()\n    saved = {}'),
                       ('    score.backward()', '    score.backward()\n    model.train(was_training)')),
         expect=["changed the mode of submodules", "each module's own mode"],
         mistake="06.grad_cam.submodule-modes-changed"),
    dict(exercise="grad_cam", kind="wrong", clause="G", why="autograd.grad with respect to the hook's clone",
         source=edited(reference("grad_cam"),
                       ('output.register_hook(lambda grad: saved.update(gradient=grad.detach()))',
                        'saved["copy"] = output.clone()'),
                       ('    score.backward()\n',
                        '    saved["gradient"], = torch.autograd.grad(score, saved["copy"])\n')),
         expect=["not on the way to the score", "output.register_hook"],
         mistake="06.grad_cam.hooked-a-copy"),
    dict(exercise="grad_cam", kind="wrong", clause="upsample", why="bicubic upsampling",
         source=edited(reference("grad_cam"), ('mode="bilinear"', 'mode="bicubic"')),
         expect=["bicubic", "mode='bilinear'"],
         mistake="06.grad_cam.bicubic-upsampling"),
]

ENTRIES += [
    dict(exercise="grad_cam", kind="wrong", clause="x-unchanged", why="sets requires_grad on the caller's image",
         source=edited(reference("grad_cam"), ('    saved = {}', '    x.requires_grad_()\n    saved = {}')),
         expect=["x requires grad", "no x.requires_grad_()"],
         mistake="06.grad_cam.input-made-to-require-grad"),
    dict(exercise="grad_cam", kind="right", why="a copy of the image that requires grad",
         source=edited(reference("grad_cam"),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = model(x.clone().requires_grad_())[0, target]')),
         expect=[]),
]

ENTRIES += [
    dict(exercise="get_activation", kind="wrong", clause="output-of-layer", why="hooks every module of the layer's type",
         source='''
import torch


def get_activation(model, layer, x):
    captured = []
    handles = [module.register_forward_hook(lambda m, a, output: captured.append(output.detach().clone()))
               for module in model.modules() if type(module) is type(layer)]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return captured[-1]
''',
         expect=["first of the model's two convs", "the output of model.features[2]", "hook `layer` itself"],
         mistake="06.get_activation.other-layer"),
]
ENTRIES += [
    dict(exercise="grad_cam", kind="wrong", clause="A-as-produced", why="a ReLU applied to the kept activation",
         source=edited(reference("grad_cam"),
                       ('saved["activation"] = output.detach().clone()',
                        'saved["activation"] = output.detach().clone().relu()')),
         expect=["with a relu applied", "or your code applied one", "what the layer produced"],
         mistake="06.grad_cam.activation-after-relu"),
]

# Review of issue 12: hooks the caller had, a module used twice, a forward that raises before the layer,
# a frozen model.
ENTRIES += [
    dict(exercise="get_activation", kind="wrong", clause="callers-hooks", why="empties the layer's forward-hook dict",
         source=edited(reference("get_activation"),
                       ('with layer.register_forward_hook(hook), torch.no_grad():\n        model(x)',
                        'layer.register_forward_hook(hook)\n'
                        '    try:\n'
                        '        with torch.no_grad():\n'
                        '            model(x)\n'
                        '    finally:\n'
                        '        layer._forward_hooks.clear()')),
         expect=["removed hooks that the caller had registered", "only the hook you registered"],
         mistake="06.get_activation.callers-hooks-removed"),
    dict(exercise="get_activation", kind="wrong", clause="shared-last", why="keeps the first call of a module used twice",
         source=edited(reference("get_activation"),
                       ('        captured["output"] = output.detach().clone()',
                        '        if "output" not in captured:\n'
                        '            captured["output"] = output.detach().clone()')),
         expect=["the output of call 1 of 2", "its last call"],
         mistake="06.get_activation.earlier-call-kept"),
    dict(exercise="get_activation", kind="wrong", clause="shared-last", why="a list of the outputs of every call",
         source=edited(reference("get_activation"),
                       ('captured = {}', 'outputs = []'),
                       ('captured["output"] = output.detach().clone()', 'outputs.append(output.detach().clone())'),
                       ('return captured["output"]', 'return outputs[0] if len(outputs) == 1 else outputs')),
         expect=["returned a list of 2", "runs 2 times", "its last call"],
         mistake="06.get_activation.every-call-kept"),
    dict(exercise="get_activation", kind="wrong", clause="removed-on-raise", why="a hook that removes itself when it fires",
         source=edited(reference("get_activation"),
                       ('        captured["output"] = output.detach().clone()\n',
                        '        captured["output"] = output.detach().clone()\n'
                        '        captured["handle"].remove()\n'),
                       ('with layer.register_forward_hook(hook), torch.no_grad():',
                        'captured["handle"] = layer.register_forward_hook(hook)\n    with torch.no_grad():')),
         expect=["raises valueerror before model.conv runs", "hooks were left", "finally"],
         mistake="06.get_activation.hook-left-on-exception"),
    dict(exercise="get_activation", kind="wrong", clause="output-of-layer", why="a float64 copy of the output",
         source=edited(reference("get_activation"), ('output.detach().clone()', 'output.detach().double()')),
         expect=["in its dtype torch.float32", "without converting it"],
         mistake="06.get_activation.dtype-changed"),
    dict(exercise="get_activation", kind="wrong", clause="not-changed-later", why="a lambda hook that returns its copy",
         source=edited(reference("get_activation"),
                       ('        captured["output"] = output.detach().clone()',
                        '        return captured.setdefault("output", output.detach().clone())')),
         expect=["your forward hook returned a value", "replaces the layer's output", "return none"],
         mistake="06.get_activation.hook-returned-a-value"),
    dict(exercise="grad_cam", kind="wrong", clause="frozen", why="the model run on x itself, no graph when frozen",
         source=edited(reference("grad_cam"),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = model(x)[0, target]')),
         expect=["frozen", "not part of any autograd graph", "x.detach().requires_grad_()"],
         mistake="06.grad_cam.frozen-layers-no-graph"),
    dict(exercise="grad_cam", kind="wrong", clause="frozen", why="a copy of x that requires grad only when every parameter is frozen",
         source=edited(reference("grad_cam"),
                       ('def hook(module, args, output):',
                        'if not any(p.requires_grad for p in model.parameters()):\n'
                        '        x = x.detach().requires_grad_()\n'
                        '    def hook(module, args, output):'),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = model(x)[0, target]')),
         expect=["model.conv frozen, the head trainable", "not part of any autograd graph"],
         mistake="06.grad_cam.frozen-layers-no-graph"),
    dict(exercise="grad_cam", kind="wrong", clause="requires-grad-kept", why="unfreezes the model and leaves it so",
         source=edited(reference("grad_cam"),
                       ('def hook(module, args, output):',
                        'model.requires_grad_(True)\n    def hook(module, args, output):')),
         expect=["requires_grad had changed", "conv.weight (was false, now true)", "must stay frozen"],
         mistake="06.grad_cam.requires-grad-changed"),
    dict(exercise="grad_cam", kind="wrong", clause="no-hook-on-raise", why="removes the hook after backward, no finally",
         source=edited(reference("grad_cam"),
                       ('with layer.register_forward_hook(hook):\n'
                        '        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'handle = layer.register_forward_hook(hook)\n'
                        '    score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers'),
                       ('activation, gradient = saved["activation"][0], saved["gradient"][0]',
                        'handle.remove()\n    activation, gradient = saved["activation"][0], saved["gradient"][0]')),
         expect=["the valueerror came through, but hooks were left", "finally"],
         mistake="06.grad_cam.hook-left-on-exception"),
    dict(exercise="grad_cam", kind="wrong", clause="propagates", why="an empty map when the forward pass raises",
         source=edited(reference("grad_cam"),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'try:\n'
                        '            score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers\n'
                        '        except Exception:\n'
                        '            return torch.zeros(x.shape[-2:])')),
         expect=["but model(x) raised valueerror", "don't catch it"],
         mistake="06.grad_cam.exception-swallowed"),
    dict(exercise="grad_cam", kind="wrong", clause="callers-hooks", why="empties the layer's forward-hook dict",
         source=edited(reference("grad_cam"),
                       ('with layer.register_forward_hook(hook):', 'layer.register_forward_hook(hook)\n    try:'),
                       ('score.backward()', 'finally:\n        layer._forward_hooks.clear()\n    score.backward()')),
         expect=["removed hooks that the caller had registered", "only the hook you registered"],
         mistake="06.grad_cam.callers-hooks-removed"),
    dict(exercise="grad_cam", kind="wrong", clause="requires-grad-kept",
         why="unfreezes for the call and puts the flags back, but not when forward raises",
         source=edited(reference("grad_cam"),
                       ('def hook(module, args, output):',
                        'flags = [(p, p.requires_grad) for p in model.parameters()]\n'
                        '    model.requires_grad_(True)\n'
                        '    def hook(module, args, output):'),
                       ('activation, gradient = saved["activation"][0], saved["gradient"][0]',
                        'for p, flag in flags:\n'
                        '        p.requires_grad_(flag)\n'
                        '    activation, gradient = saved["activation"][0], saved["gradient"][0]')),
         expect=["the valueerror came through, but parameters' requires_grad had changed", "also when forward raises"],
         mistake="06.grad_cam.requires-grad-changed-on-exception"),
    dict(exercise="grad_cam", kind="right", why="the parameters unfrozen for the call, each flag put back",
         source=edited(reference("grad_cam"),
                       ('def hook(module, args, output):',
                        'flags = [(p, p.requires_grad) for p in model.parameters()]\n'
                        '    def hook(module, args, output):'),
                       ('with layer.register_forward_hook(hook):\n'
                        '        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers\n'
                        '    score.backward()',
                        'try:\n'
                        '        for p, _ in flags:\n'
                        '            p.requires_grad_(True)\n'
                        '        with layer.register_forward_hook(hook):\n'
                        '            score = model(x)[0, target]\n'
                        '        score.backward()\n'
                        '    finally:\n'
                        '        for p, flag in flags:\n'
                        '            p.requires_grad_(flag)')),
         expect=[]),
]

NOT_CLAUSES = {
    "grad_cam": {
        "`layer` runs once during `model(x)`.": "a precondition, not a promise: a module used twice has one A and "
                                                "one G per call, and Grad-CAM of one layer names one of each; "
                                                "nothing is asked of grad_cam for such a module",
    },
}

ENTRIES += [
    dict(exercise="grad_cam", kind="wrong", clause="frozen",
         why="unfreezes the layer's own parameters for the call, none at a pool",
         source=edited(reference("grad_cam"),
                       ('def hook(module, args, output):',
                        'flags = [(p, p.requires_grad) for p in layer.parameters()]\n'
                        '    def hook(module, args, output):'),
                       ('with layer.register_forward_hook(hook):\n'
                        '        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers\n'
                        '    score.backward()',
                        'try:\n'
                        '        for p, _ in flags:\n'
                        '            p.requires_grad_(True)\n'
                        '        with layer.register_forward_hook(hook):\n'
                        '            score = model(x)[0, target]\n'
                        '        score.backward()\n'
                        '    finally:\n'
                        '        for p, flag in flags:\n'
                        '            p.requires_grad_(flag)')),
         expect=["grad_cam(model, model.pool", "a frozen model", "not part of any autograd graph"],
         mistake="06.grad_cam.frozen-layers-no-graph"),
    dict(exercise="grad_cam", kind="wrong", clause="x-unchanged",
         why="requires_grad set on the caller's x and reset after backward",
         source=edited(reference("grad_cam"),
                       ('def hook(module, args, output):',
                        'x.requires_grad_(True)\n    def hook(module, args, output):'),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = model(x)[0, target]')),
         expect=["the caller's x requires grad (or has a .grad)", "leave x as it was"],
         mistake="06.grad_cam.input-made-to-require-grad"),
]

# Public Grad-CAM code for frozen models: the layer's output made to require grad in the forward hook
# (CLIP Grad-CAM notebooks), and the tensor hook skipped when the output needs no grad (pytorch-grad-cam).
ENTRIES += [
    dict(exercise="grad_cam", kind="wrong", clause="frozen", why="the layer's output made to require grad in the hook",
         source=edited(reference("grad_cam"),
                       ('saved["activation"] = output.detach().clone()',
                        'if not output.requires_grad:\n'
                        '            output.requires_grad_(True)\n'
                        '        saved["activation"] = output.detach().clone()'),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = model(x)[0, target]')),
         expect=["a frozen model", "leaf that requires grad", "x.detach().requires_grad_()"],
         mistake="06.grad_cam.output-made-a-leaf"),
    dict(exercise="grad_cam", kind="wrong", clause="frozen", why="no tensor hook when the output needs no grad",
         source=edited(reference("grad_cam"),
                       ('output.register_hook(lambda grad: saved.update(gradient=grad.detach()))',
                        'if output.requires_grad:\n'
                        '            output.register_hook(lambda grad: saved.update(gradient=grad.detach()))'),
                       ('score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers',
                        'score = model(x)[0, target]')),
         expect=["a frozen model", "not part of any autograd graph", "x.detach().requires_grad_()"],
         mistake="06.grad_cam.frozen-layers-no-graph"),
]

# A global module hook (lesson 07) works as well, if it is removed; one left registered is a hook left.
ENTRIES += [
    dict(exercise="get_activation", kind="wrong", clause="removed", why="a global forward hook, never removed",
         source='''
import torch
from torch.nn.modules.module import register_module_forward_hook


def get_activation(model, layer, x):
    kept = {}

    def hook(module, args, output):
        if module is layer:
            kept["out"] = output.detach().clone()

    register_module_forward_hook(hook)
    with torch.no_grad():
        model(x)
    return kept["out"]
''',
         expect=["hooks were still registered", "the global module hooks"],
         mistake="06.get_activation.hook-left-registered"),
    dict(exercise="get_activation", kind="right", why="a global forward hook that picks the layer, removed in finally",
         source='''
import torch
from torch.nn.modules.module import register_module_forward_hook


def get_activation(model, layer, x):
    kept = {}

    def hook(module, args, output):
        if module is layer:
            kept["out"] = output.detach().clone()

    handle = register_module_forward_hook(hook)
    try:
        with torch.no_grad():
            model(x)
    finally:
        handle.remove()
    return kept["out"]
''',
         expect=[]),
    # Each named mistake of the checks made by one entry (the ids a check can give).
    dict(exercise="get_activation", kind="wrong", clause="no-graph",
         why="freezes the parameters too, and restores them after the forward pass without finally",
         source=edited(reference("get_activation"),
                       ("    with layer.register_forward_hook(hook), torch.no_grad():\n        model(x)\n",
                        "    flags = [p.requires_grad for p in model.parameters()]\n"
                        "    model.requires_grad_(False)\n"
                        "    with layer.register_forward_hook(hook), torch.no_grad():\n"
                        "        model(x)\n"
                        "    for p, flag in zip(model.parameters(), flags):\n"
                        "        p.requires_grad_(flag)\n")),
         expect=["the valueerror came through", "requires_grad had changed"],
         mistake="06.get_activation.requires-grad-changed-on-exception"),
    dict(exercise="get_activation", kind="wrong", clause="output-of-layer", why="returns a NumPy array",
         source=edited(reference("get_activation"), ('return captured["output"]', 'return captured["output"].numpy()')),
         expect=["expected the layer's output", "return the tensor your hook captured"],
         mistake="06.get_activation.not-a-tensor"),
    dict(exercise="get_activation", kind="wrong", clause="output-of-layer", why="flattens the output",
         source=edited(reference("get_activation"),
                       ('captured["output"] = output.detach().clone()',
                        'captured["output"] = output.detach().clone().flatten(1)')),
         expect=["expected the layer's output"],
         mistake="06.get_activation.wrong-activation-value"),
    dict(exercise="grad_cam", kind="wrong", clause="propagates", why="wraps the forward's exception in its own",
         source=edited(reference("grad_cam"),
                       ("        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers",
                        "        try:\n"
                        "            score = model(x.detach().requires_grad_())[0, target]\n"
                        "        except ValueError as error:\n"
                        '            raise RuntimeError(f"grad_cam failed: {error}") from error')),
         expect=["reach the caller unchanged"],
         mistake="06.grad_cam.exception-replaced"),
    dict(exercise="grad_cam", kind="wrong", clause="x-unchanged", why="centres x in place",
         source=edited(reference("grad_cam"), ("    saved = {}\n", "    saved = {}\n    x -= x.mean()\n")),
         expect=["the caller's x has changed", "no in-place operation on it"],
         mistake="06.grad_cam.input-changed"),
    dict(exercise="grad_cam", kind="wrong", clause="shape", why="upsampled to a square of the input's height",
         source=edited(reference("grad_cam"), ("size=x.shape[-2:]", "size=(x.shape[-2], x.shape[-2])")),
         expect=["the input's height and width"],
         mistake="06.grad_cam.wrong-shape"),
    dict(exercise="grad_cam", kind="wrong", clause="relu", why="the square root of the weighted sum instead of its ReLU",
         source=edited(reference("grad_cam"),
                       ("cam = torch.relu((weights[:, None, None] * activation).sum(dim=0))",
                        "cam = (weights[:, None, None] * activation).sum(dim=0).sqrt()")),
         expect=["nan values"],
         mistake="06.grad_cam.nan-in-map"),
    dict(exercise="grad_cam", kind="wrong", clause="G",
         why="retain_grad on the kept output, detached without a clone",
         source=edited(reference("grad_cam"),
                       ('saved["activation"] = output.detach().clone()', 'saved["activation"] = output.detach()'),
                       ('output.register_hook(lambda grad: saved.update(gradient=grad.detach()))',
                        'output.retain_grad()\n        saved["output"] = output'),
                       ('saved["gradient"][0]\n', 'saved["output"].grad[0]\n')),
         expect=["in-place relu's result", "output.detach().clone()"],
         mistake="06.grad_cam.activation-and-gradient-after-relu"),
    dict(exercise="grad_cam", kind="wrong", clause="weights", why="sums gradient times activation place by place",
         source=edited(reference("grad_cam"),
                       ("cam = torch.relu((weights[:, None, None] * activation).sum(dim=0))",
                        "cam = torch.relu((gradient * activation).sum(dim=0))")),
         expect=["one weight w_k per channel"],
         mistake="06.grad_cam.gradient-times-activation"),
    dict(exercise="grad_cam", kind="wrong", clause="weights", why="weights from the gradient's maximum instead of its mean",
         source=edited(reference("grad_cam"),
                       ("weights = gradient.mean(dim=(1, 2))", "weights = gradient.amax(dim=(1, 2))")),
         expect=["cam = relu(sum_k mean(g_k) * a_k)"],
         mistake="06.grad_cam.wrong-cam-value"),
]
