"""Mistake catalogue for lesson 06, a CNN's feature maps and Grad-CAM. The format of an entry is
described in tests/course/test_mistake_catalogue.py."""

ENTRIES = [
    # ------------------------------------------------------------------ get_activation
    dict(exercise="get_activation", kind="wrong", why="detach without clone, overwritten by the in-place ReLU",
         source='''
import torch


def get_activation(model, layer, x):
    captured = {}
    with layer.register_forward_hook(lambda module, args, output: captured.update(out=output.detach())), \\
            torch.no_grad():
        model(x)
    return captured["out"]
''',
         expect=["after the in-place relu", "shares memory", "clone()"]),
    dict(exercise="get_activation", kind="wrong", why="hook left behind when the forward raises",
         source='''
import torch


def get_activation(model, layer, x):
    captured = {}
    handle = layer.register_forward_hook(lambda module, args, output: captured.update(out=output.detach().clone()))
    with torch.no_grad():
        model(x)
    handle.remove()
    return captured["out"]
''',
         expect=["valueerror came through", "hooks were left", "finally"]),
    dict(exercise="get_activation", kind="wrong", why="never removes the hook",
         source='''
import torch


def get_activation(model, layer, x):
    captured = {}
    layer.register_forward_hook(lambda module, args, output: captured.update(out=output.detach().clone()))
    with torch.no_grad():
        model(x)
    return captured["out"]
''',
         expect=["hooks were still registered", "forward_hooks"]),
    dict(exercise="get_activation", kind="wrong", why="forward with grad mode on",
         source='''
def get_activation(model, layer, x):
    captured = {}
    with layer.register_forward_hook(lambda module, args, output: captured.update(out=output.detach().clone())):
        model(x)
    return captured["out"]
''',
         expect=["grad mode on", "torch.no_grad()"]),
    dict(exercise="get_activation", kind="wrong", why="returns the output still attached to the graph",
         source='''
def get_activation(model, layer, x):
    captured = {}
    with layer.register_forward_hook(lambda module, args, output: captured.update(out=output.clone())):
        model(x)
    return captured["out"]
''',
         expect=["autograd graph", "detached"]),
    dict(exercise="get_activation", kind="wrong", why="swallows the exception of the forward pass",
         source='''
import torch


def get_activation(model, layer, x):
    captured = {}
    handle = layer.register_forward_hook(lambda module, args, output: captured.update(out=output.detach().clone()))
    try:
        with torch.no_grad():
            model(x)
    except Exception:
        pass
    finally:
        handle.remove()
    return captured["out"]
''',
         expect=["returned", "but model(x) raised valueerror", "don't catch it"]),
    dict(exercise="get_activation", kind="wrong", why="switches the model to eval mode",
         source='''
import torch


def get_activation(model, layer, x):
    model.eval()
    captured = {}
    with layer.register_forward_hook(lambda module, args, output: captured.update(out=output.detach().clone())), \\
            torch.no_grad():
        model(x)
    return captured["out"]
''',
         expect=["left the model in eval mode", "it was in train mode"]),
    dict(exercise="get_activation", kind="wrong", why="captures the layer's input",
         source='''
import torch


def get_activation(model, layer, x):
    captured = {}
    with layer.register_forward_hook(lambda module, args, output: captured.update(out=args[0].detach().clone())), \\
            torch.no_grad():
        model(x)
    return captured["out"]
''',
         expect=["the layer's input", "expected its output"]),
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

    # ------------------------------------------------------------------ grad_cam
    dict(exercise="grad_cam", kind="wrong", why="missing ReLU",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = (weights[:, None, None] * saved["A"][0]).sum(dim=0)
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["before the relu", "torch.relu"]),
    dict(exercise="grad_cam", kind="wrong", why="missing normalization",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    return F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
''',
         expect=["not normalized", "divide", "maximum"]),
    dict(exercise="grad_cam", kind="wrong", why="divides by a zero maximum",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    return cam / cam.max()
''',
         expect=["nan", "only when it is positive"]),
    dict(exercise="grad_cam", kind="wrong", why="weights from the activations instead of the gradients",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["A"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["means of the activations", "gradient g"]),
    dict(exercise="grad_cam", kind="wrong", why="module full backward hook with an in-place ReLU",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def forward_hook(module, args, output):
        saved["A"] = output.detach().clone()

    def backward_hook(module, grad_input, grad_output):
        saved["G"] = grad_output[0]

    with layer.register_forward_hook(forward_hook), layer.register_full_backward_hook(backward_hook):
        score = model(x)[0, target]
        score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["inplace=true", "full backward hook", "output.register_hook"]),
    dict(exercise="grad_cam", kind="wrong", why="activation detached but not cloned",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["overwrote it", "detach().clone()"]),
    dict(exercise="grad_cam", kind="wrong", why="retain_grad gives the gradient after the in-place ReLU",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.retain_grad()
        saved["output"] = output

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["output"].grad[0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["in-place relu's result", "retain_grad", "tensor hook"]),
    dict(exercise="grad_cam", kind="wrong", why="hook left behind",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    layer.register_forward_hook(hook)
    score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["hooks were still registered", "remove every hook"]),
    dict(exercise="grad_cam", kind="wrong", why="no upsampling",
         source='''
import torch


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["the layer's spatial size", "upsample", "f.interpolate"]),
    dict(exercise="grad_cam", kind="wrong", why="mode changed to eval",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    model.eval()
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["left the model in eval mode", "was in train mode"]),
    dict(exercise="grad_cam", kind="wrong", why="align_corners=True",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=True)[0, 0]
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["align_corners=true", "use align_corners=false"]),
    dict(exercise="grad_cam", kind="wrong", why="min-max scaling",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    span = cam.max() - cam.min()
    return (cam - cam.min()) / span if span > 0 else cam
''',
         expect=["min-max", "divide by the maximum only"]),
    dict(exercise="grad_cam", kind="wrong", why="keeps the batch and channel dimensions",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    saved = {}

    def hook(module, args, output):
        saved["A"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(G=grad))

    with layer.register_forward_hook(hook):
        score = model(x)[0, target]
    score.backward()
    weights = saved["G"][0].mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * saved["A"][0]).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)
    return cam / cam.max() if cam.max() > 0 else cam
''',
         expect=["2-d", "drop the batch and channel dimensions"]),
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
        score = model(x)[0, target]
    A = kept["A"]
    (G,) = torch.autograd.grad(score, A)
    weights = G[0].sum(dim=(1, 2)) / (G.shape[2] * G.shape[3])
    cam = torch.einsum("k,khw->hw", weights, A[0].detach()).clamp(min=0)
    upsample = nn.Upsample(size=tuple(x.shape[2:]), mode="bilinear", align_corners=False)
    cam = upsample(cam.unsqueeze(0).unsqueeze(0)).squeeze()
    return cam / cam.max().clamp(min=1e-12)
''',
         expect=[]),
    dict(exercise="grad_cam", kind="right", why="try/finally removal, mode restored, torch.where guard",
         source='''
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    activations, gradients = [], []

    def hook(module, args, output):
        activations.append(output.detach().clone())
        output.register_hook(gradients.append)

    was_training = model.training
    handle = layer.register_forward_hook(hook)
    try:
        model.train(was_training)
        model.zero_grad()
        model(x)[0, target].backward()
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
]
