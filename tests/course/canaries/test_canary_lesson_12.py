"""Canaries of lesson 12 (transformer interpretability): why PyTorch's own attention modules are hard to
hook (out_proj's hooks never fire, the encoder layer's fused path, what the attention shows of each head)."""

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook

from canary_pins import canary

_WHY_NOT = ("12", "Why not hook PyTorch's own attention modules?")
_SUMMARY = ("12", "Summary")

_SLOW_PATH = ["self_attn", "dropout1", "norm1", "linear1", "dropout", "linear2", "dropout2", "norm2", "the layer"]


def _attention():
    torch.manual_seed(0)
    return nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)


def _encoder_layer():
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True).eval()


@canary("a forward hook or a forward pre-hook on nn.MultiheadAttention's out_proj never fires: the attention passes "
        "out_proj.weight to F.multi_head_attention_forward instead of calling the module",
        _WHY_NOT, _SUMMARY)
def test_hooks_on_multihead_attention_out_proj_never_fire(pin):
    attention, fired = _attention(), []
    attention.out_proj.register_forward_hook(lambda module, args, output: fired.append("forward hook"))
    attention.out_proj.register_forward_pre_hook(lambda module, args: fired.append("pre-hook"))
    x = torch.randn(1, 5, 8)
    attention(x, x, x)
    with torch.no_grad():
        attention.eval()(x, x, x)
    pin.holds(fired == [], f"out_proj's hooks fired: {fired}")


@canary("nn.MultiheadAttention returns its weights averaged over the heads, shape (batch, query, key), unless "
        "called with average_attn_weights=False, which gives (batch, heads, query, key)",
        _WHY_NOT)
def test_multihead_attention_averages_its_weights_over_heads_by_default(pin):
    attention, x = _attention(), torch.randn(1, 5, 8)
    weights = attention(x, x, x)[1]
    per_head = attention(x, x, x, average_attn_weights=False)[1]
    pin.holds(list(weights.shape) == [1, 5, 5], f"the default weights have shape {list(weights.shape)}")
    pin.holds(list(per_head.shape) == [1, 2, 5, 5], f"average_attn_weights=False gave shape {list(per_head.shape)}")
    pin.holds(torch.allclose(weights, per_head.mean(dim=1)), "the default weights are not the mean of the heads'")


def _modules_a_global_hook_sees(layer, extra_hook=None):
    """The names of the modules a global forward hook sees in one eval, no_grad forward of `layer`, with
    `extra_hook(layer)` (a context manager: a hook of the layer's own) around it."""
    names = {module: name or "the layer" for name, module in layer.named_modules()}
    ran = []
    with register_module_forward_hook(lambda module, args, output: ran.append(names[module])), torch.no_grad():
        if extra_hook is None:
            layer(torch.randn(1, 5, 8))
        else:
            with extra_hook(layer):
                layer(torch.randn(1, 5, 8))
    return ran


@canary("nn.TransformerEncoderLayer in eval mode under no_grad takes its fused fast path (one C++ call, no "
        "submodule is called), and a global forward hook does not make it leave: the global hook sees the layer and "
        "none of its submodules",
        _WHY_NOT, _SUMMARY)
def test_a_global_hook_does_not_take_the_encoder_layer_off_its_fast_path(pin):
    seen = _modules_a_global_hook_sees(_encoder_layer())
    pin.holds(seen == ["the layer"], f"the global hook saw {seen}")


@canary("nn.TransformerEncoderLayer leaves its fast path when a forward hook or a forward pre-hook is on it or on "
        "one of its submodules: then it calls self_attn, dropout1, norm1, linear1, dropout, linear2, dropout2, norm2",
        _WHY_NOT, _SUMMARY)
def test_a_hook_on_the_encoder_layer_or_a_submodule_takes_the_slow_path(pin):
    hooks = {
        "a forward hook on linear1": lambda layer: layer.linear1.register_forward_hook(lambda *args: None),
        "a forward pre-hook on linear1": lambda layer: layer.linear1.register_forward_pre_hook(lambda *args: None),
        "a forward hook on the layer": lambda layer: layer.register_forward_hook(lambda *args: None),
        "a forward pre-hook on the layer": lambda layer: layer.register_forward_pre_hook(lambda *args: None),
    }
    for what, hook in hooks.items():
        seen = _modules_a_global_hook_sees(_encoder_layer(), hook)
        pin.holds(seen == _SLOW_PATH, f"with {what}, the global hook saw {seen}")


@canary("nn.TransformerEncoderLayer in eval mode, with no hook on it or a submodule, also leaves its fast path when "
        "there is a gradient to compute (gradients on and a parameter, or the input, that requires one) and when its "
        "number of heads is odd; with gradients on and neither the parameters nor the input requiring one it stays",
        _WHY_NOT, _SUMMARY)
def test_a_gradient_to_compute_or_an_odd_number_of_heads_takes_the_slow_path(pin):
    def seen(layer, x):
        names = {module: name or "the layer" for name, module in layer.named_modules()}
        ran = []
        with register_module_forward_hook(lambda module, args, output: ran.append(names[module])):
            layer(x)
        return ran

    x = torch.randn(1, 5, 8)
    layer = _encoder_layer()
    pin.holds(seen(layer, x) == _SLOW_PATH, f"with gradients on, the global hook saw {seen(layer, x)}")
    layer.requires_grad_(False)
    pin.holds(seen(layer, x) == ["the layer"], f"with no parameter requiring grad, the global hook saw {seen(layer, x)}")
    wanting = x.clone().requires_grad_()
    pin.holds(seen(layer, wanting) == _SLOW_PATH,
              f"with no parameter requiring grad but the input requiring it, the global hook saw {seen(layer, wanting)}")
    torch.manual_seed(0)
    one_head = nn.TransformerEncoderLayer(d_model=8, nhead=1, dim_feedforward=16, batch_first=True).eval()
    with torch.no_grad():
        odd = seen(one_head, x)
    pin.holds(odd == _SLOW_PATH, f"with one head, under no_grad, the global hook saw {odd}")


@canary("inside nn.TransformerEncoderLayer the attention is called with need_weights=False, so a forward hook on "
        "self_attn sees (attended, None); a pre-hook with with_kwargs=True that sets need_weights=True, "
        "average_attn_weights=False gets per-head weights of shape (batch, heads, query, key)",
        _WHY_NOT)
def test_the_encoder_layer_asks_its_attention_for_no_weights_unless_a_pre_hook_does(pin):
    layer, seen = _encoder_layer(), {}
    attention, x = layer.self_attn, torch.randn(1, 5, 8)
    with attention.register_forward_hook(lambda module, args, output: seen.update(plain=output)), torch.no_grad():
        layer(x)
    pin.holds(seen["plain"][1] is None, f"the attention's weights inside the layer: {seen['plain'][1]}")

    def per_head_weights(module, args, kwargs):
        kwargs.update(need_weights=True, average_attn_weights=False)
        return args, kwargs

    with attention.register_forward_pre_hook(per_head_weights, with_kwargs=True), \
            attention.register_forward_hook(lambda module, args, output: seen.update(asked=output)), torch.no_grad():
        layer(x)
    asked = seen["asked"][1]
    pin.holds(asked is not None and list(asked.shape) == [1, 2, 5, 5],
              f"asked for per-head weights, got {None if asked is None else list(asked.shape)}")
