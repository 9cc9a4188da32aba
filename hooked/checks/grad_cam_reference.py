"""The checks' own Grad-CAM, for lesson 06 and for choosing the digits stored with the trained
CNN (trained_digits_cnn.py): the activation and gradient of a layer, read on a copy of the model
whose ReLUs are not in place, and the map made from them, right or with a typical mistake."""

import copy

import torch
import torch.nn.functional as F
from torch import nn


def twin_without_in_place(model):
    """A copy of the model whose ReLUs are not in place: what each layer produced stays readable."""
    twin = copy.deepcopy(model)
    for module in twin.modules():
        if isinstance(module, nn.ReLU):
            module.inplace = False
    return twin


def activation_and_gradient(model, name, relu_after, x, target, score_of=None):
    """A and G as in a copy without in-place ReLUs; also A and G after the ReLU that follows the layer.
    `score_of(output, target)` is what the gradient is of (default: the raw score output[0, target])."""
    twin = twin_without_in_place(model).requires_grad_(True)  # a frozen model's twin too has a graph
    kept = {}
    twin.get_submodule(name).register_forward_hook(lambda module, args, output: kept.update(A=output))
    if relu_after:
        twin.get_submodule(relu_after).register_forward_hook(lambda module, args, output: kept.update(R=output))
    with torch.enable_grad():
        output = twin(x)
        score = output[0, target] if score_of is None else score_of(output, target)
    wanted = [kept["A"]] + ([kept["R"]] if relu_after else [])
    grads = torch.autograd.grad(score, wanted)
    found = {"A": kept["A"].detach()[0], "G": grads[0][0]}
    if relu_after:
        found.update(A_after=kept["R"].detach()[0], G_after=grads[1][0])
    return found


def cam_of(A, G, size, relu=True, weights="gradient", mode="bilinear", align_corners=False, normalize="max",
           relu_after_upsampling=False, normalize_first=False):
    """Grad-CAM's map from the activation A (K, h, w) and its gradient G: relu(sum_k w_k * A_k), w_k the
    mean of G_k, upsampled bilinearly to `size` and divided by its maximum; the other arguments make the
    map of a typical mistake instead (`relu=False`, `weights="activation"`, `mode="nearest"`, ...)."""
    w = G.mean(dim=(1, 2)) if weights == "gradient" else A.mean(dim=(1, 2))
    cam = (w[:, None, None] * A).sum(dim=0)
    if weights == "product":  # gradient times activation, summed over channels, without the means
        cam = (G * A).sum(dim=0)
    if weights == "channels":  # G averaged over its channels (one weight per place) instead of over space
        cam = (G.mean(dim=0, keepdim=True) * A).sum(dim=0)
    if relu == "abs":
        cam = cam.abs()
    elif relu and not relu_after_upsampling:
        cam = cam.relu()
    if normalize_first and cam.max() > 0:
        cam = cam / cam.max()
    if size is not None:
        options = {} if mode == "nearest" else {"align_corners": align_corners}
        cam = F.interpolate(cam[None, None], size=size, mode=mode, **options)[0, 0]
    if relu is True and relu_after_upsampling:
        cam = cam.relu()
    if normalize == "max" and cam.max() > 0 and not normalize_first:
        cam = cam / cam.max()
    if normalize == "min-max" and cam.max() > cam.min():
        cam = (cam - cam.min()) / (cam.max() - cam.min())
    return cam
