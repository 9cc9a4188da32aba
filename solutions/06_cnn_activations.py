# %% [markdown]
# # Lesson 06 — Inside a CNN: feature maps and Grad-CAM
#
# The classic first use of hooks is to look inside a convolutional network: what each filter
# responds to, and which part of the image a decision depends on. This lesson does both on a small
# CNN trained on real handwritten digits, with the forward hooks of lesson 04 and the tensor hooks
# of lesson 01, and the traps of lessons 04 and 05 (`detach()` without `clone()`, a full backward
# hook next to an in-place ReLU) met on a real model.
#
# After this lesson you will be able to:
#
# - say, from the layers, what shape a CNN's activation has, and read the error when the channels
#   do not match;
# - capture a layer's feature maps with a forward hook that is removed afterwards, also when the
#   forward pass raises, and draw them;
# - compute Grad-CAM, "where is the model looking", from a layer's activation and its gradient,
#   even when an in-place ReLU follows the layer.
#
# **Where your code goes.** Write all of your code in the exercise cells: the cells that begin
# with the comment `# Exercise: ...` (they are tagged `exercise`). The grader runs only those
# cells, never the demonstration cells, so each exercise cell imports what it uses.
#
# **How to check your work.** Run the `check(...)` cell under each exercise: it prints a pass, a
# message that says what is wrong, or "not attempted yet". Or, from the repository root, run
# `pytest tests/test_06_cnn_activations.py` (add `-k grad_cam` for one exercise; plain `pytest`
# grades every lesson).

# %%
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from hooked.digits import load_digits
from hooked.notebook import check, hint, try_it

torch.set_num_threads(1)  # the tensors of this lesson are small; torch works on one thread here

# %% [markdown]
# ## The network, and the shapes of its activations
#
# The layers we look inside: a 3×3 convolution from 1 channel (a grey image) to 16 channels,
# padded by one pixel so that it keeps the image's height and width; a ReLU that works in place;
# a 2×2 max-pooling that halves height and width. A small classifier head (flatten, then one
# linear layer to 10 classes) makes it trainable. So a `1×1×28×28` image gives 16 maps of 28×28
# after the convolution and the ReLU, and 16 maps of 14×14 after the pooling.

# %%
def make_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1),  # 0: conv
        nn.ReLU(inplace=True),                       # 1: ReLU, in place
        nn.MaxPool2d(2, 2),                          # 2: max-pool
        nn.Flatten(),                                # 3
        nn.Linear(16 * 14 * 14, 10),                 # 4: the classifier head
    )


torch.manual_seed(0)
model = make_cnn()
image = torch.randn(1, 1, 28, 28)
shapes = {}
for index in (0, 1, 2, 4):
    model[index].register_forward_hook(
        lambda module, args, output, index=index: shapes.update({index: list(output.shape)}))
model(image)
for index, shape in shapes.items():
    print(f"{index}: {type(model[index]).__name__:<9} output {shape}")
assert shapes == {0: [1, 16, 28, 28], 1: [1, 16, 28, 28], 2: [1, 16, 14, 14], 4: [1, 10]}

# %% [markdown]
# A first convolution built for colour images, `Conv2d(3, 16, ...)`, refuses a grey image: its
# weight expects 3 input channels.

# %%
colour_conv = nn.Conv2d(3, 16, kernel_size=3, padding=1)
try:
    colour_conv(image)
    raise AssertionError("expected a RuntimeError")
except RuntimeError as error:
    print(f"{type(error).__name__}: {error}")
    assert "expected input[1, 1, 28, 28] to have 3 channels, but got 1 channels instead" in str(error)

# %% [markdown]
# And without the padding (and without the pooling), a 3×3 convolution loses one pixel on each
# side: 28×28 becomes 26×26.

# %%
unpadded = nn.Sequential(nn.Conv2d(1, 16, kernel_size=3), nn.ReLU(inplace=True))
print("unpadded conv + ReLU, no pooling:", list(unpadded(image).shape))
assert list(unpadded(image).shape) == [1, 16, 26, 26]

# %% [markdown]
# ## Train it first
#
# The activations of an untrained network mean little: its filters are random numbers, so its
# feature maps are the image seen through random filters, and its predictions are guesses. So we
# train it, on real data that ships with the course: 1,797 handwritten digits of 8×8 pixels
# (`hooked.digits.load_digits`, no download; the test set of the UCI repository's "Optical
# Recognition of Handwritten Digits" by E. Alpaydin and C. Kaynak, 1998, CC BY 4.0, as
# scikit-learn ships it), scaled to [0, 1] and upscaled to 28×28 with `F.interpolate`. A fixed
# seed splits them into 1,437 training and 360 test digits.

# %%
digits = load_digits()
print("digits:", digits.images.shape, "| pixel values from", digits.images.min(), "to", digits.images.max())
assert digits.images.shape == (1797, 8, 8) and digits.images.min() == 0 and digits.images.max() == 16
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
images = F.interpolate(images, size=(28, 28), mode="bilinear", align_corners=False)
labels = torch.tensor(digits.target)
order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
test_idx, train_idx = order[:360], order[360:]
print("images:", list(images.shape), f"in [{images.min():.0f}, {images.max():.0f}]", "| labels:", sorted(set(labels.tolist())))
assert list(images.shape) == [1797, 1, 28, 28] and images.min() >= 0 and images.max() <= 1
assert len(train_idx) == 1437 and len(test_idx) == 360


def accuracy(net, idx):
    with torch.no_grad():
        return (net(images[idx]).argmax(dim=1) == labels[idx]).float().mean().item()


# %% [markdown]
# Training is three passes over the training digits in batches of 32, with stochastic gradient
# descent with momentum, written out by hand (three lines, and it spares the import of
# `torch.optim`). The cell prints how long it took.

# %%
started = time.perf_counter()
torch.manual_seed(0)
model = make_cnn()
untrained = make_cnn()
untrained.load_state_dict(model.state_dict())  # a copy that stays untrained
velocity = [torch.zeros_like(p) for p in model.parameters()]
shuffle = torch.Generator().manual_seed(1)
for epoch in range(3):
    for batch in train_idx[torch.randperm(len(train_idx), generator=shuffle)].split(32):
        loss = F.cross_entropy(model(images[batch]), labels[batch])
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p, v in zip(model.parameters(), velocity):
                v.mul_(0.9).add_(p.grad)
                p.sub_(0.02 * v)
model.eval()
print(f"trained in {time.perf_counter() - started:.1f} s")
trained_accuracy, untrained_accuracy = accuracy(model, test_idx), accuracy(untrained, test_idx)
print(f"test accuracy: trained {trained_accuracy:.3f}, untrained {untrained_accuracy:.3f} (chance: 0.1)")
assert trained_accuracy > 0.9 and untrained_accuracy < 0.3

# %% [markdown]
# Why the untrained activations mean little, measured. Take every pair of the 360 test digits and
# compare their pooled maps by the cosine similarity of the flattened activations: the mean over
# the pairs of the same digit, the mean over the pairs of different digits, and the gap between
# the two (the larger the gap, the more the maps say which digit it is). The raw pixels are the
# yardstick. Random filters make the pairs look more alike (both means rise above the pixels') and
# shrink the gap below the pixels' own: they pass on how alike the pictures are, blurred. After
# training the gap is about twice the untrained one, and a little larger than the pixels': one
# trained layer of 16 filters separates the digits somewhat better than the pixels do, where random
# filters separate them worse.

# %%
def similarity_gap(features, digit_labels):
    """(mean cosine similarity of the pairs of the same digit, of the pairs of different digits)."""
    unit = F.normalize(features.flatten(1), dim=1)
    similarities = unit @ unit.T
    same = digit_labels[:, None] == digit_labels[None, :]
    not_itself = ~torch.eye(len(digit_labels), dtype=torch.bool)
    return similarities[same & not_itself].mean().item(), similarities[~same].mean().item()


test_images, test_labels = images[test_idx], labels[test_idx]
gaps, means = {}, {}
with torch.no_grad():
    for name, features in (("pixels", test_images), ("untrained", untrained[:3](test_images)),
                           ("trained", model[:3](test_images))):
        same, other = similarity_gap(features, test_labels)
        gaps[name], means[name] = same - other, (same, other)
        print(f"{name:>9}: same digit {same:.3f}, different digits {other:.3f}, gap {gaps[name]:.3f}")
assert all(u > p for u, p in zip(means["untrained"], means["pixels"]))  # both means rise
assert gaps["untrained"] < gaps["pixels"] < gaps["trained"]
assert gaps["trained"] > 1.5 * gaps["untrained"]

# %% [markdown]
# ## Feature maps with a forward hook
#
# A forward hook on the max-pool stores its output in a dictionary; the hook is removed right
# after the forward pass (with the handle as a context manager, lesson 02). One forward pass on
# three test digits gives three sets of 16 maps of 14×14.

# %%
feature_maps = {}


def store_pooled(module, args, output):
    feature_maps["pool"] = output.detach().clone()


shown = test_idx[:3]
with model[2].register_forward_hook(store_pooled), torch.no_grad():
    predictions = model(images[shown]).argmax(dim=1)
print("captured:", list(feature_maps["pool"].shape), "| hooks left on the pool:", len(model[2]._forward_hooks))
assert list(feature_maps["pool"].shape) == [3, 16, 14, 14] and not model[2]._forward_hooks

fig = plt.figure(figsize=(7.5, 4.2), dpi=80)
grids = fig.add_gridspec(3, 1 + 8, hspace=0.35)
for row, index in enumerate(shown):
    ax = fig.add_subplot(grids[row, 0])
    ax.imshow(images[index, 0], cmap="gray_r")
    ax.set_title(f"digit {labels[index].item()}", fontsize=9)
    ax.axis("off")
    inner = grids[row, 1:].subgridspec(2, 8, wspace=0.05, hspace=0.05)
    for channel in range(16):
        ax = fig.add_subplot(inner[channel // 8, channel % 8])
        ax.imshow(feature_maps["pool"][row, channel], cmap="viridis")
        ax.axis("off")
fig.suptitle("The 16 pooled feature maps (14×14) of the trained CNN, beside each digit", fontsize=10)
plt.show()
silent = (feature_maps["pool"].amax(dim=(2, 3)) == 0).all(dim=0)
print("predicted:", predictions.tolist(), "| true:", labels[shown].tolist())
print("maps that are zero everywhere, for all three digits:", silent.nonzero().flatten().tolist())
assert torch.equal(predictions, labels[shown]) and 0 < silent.sum() < 16
strokes = F.max_pool2d(images[shown], 2) > 0.3  # the strokes, at the maps' 14×14
on_strokes = (feature_maps["pool"] * strokes).sum(dim=(2, 3)) / strokes.sum(dim=(2, 3))
off_strokes = (feature_maps["pool"] * ~strokes).sum(dim=(2, 3)) / (~strokes).sum(dim=(2, 3))
switched_on = feature_maps["pool"].amax(dim=(2, 3)) > 0
brighter = int((switched_on & (on_strokes > off_strokes)).sum())
print(f"maps not all zero: {int(switched_on.sum())} (of 3 × 16); of them brighter on the strokes than off: {brighter}")
assert brighter > switched_on.sum() / 2

# %% [markdown]
# Each map is one filter's answer to the digit: most follow the strokes, each in its own way (of the
# maps that are not all zero, the cell counts those brighter on the strokes, the pixels above 0.3,
# than off them). All three digits were classified right. Some filters are silent: their ReLU let nothing through on
# any of the three digits, so those maps are all zero. The hook shows that without touching the
# model.
#
# ## `detach()` alone is overwritten by the in-place ReLU
#
# Lesson 04 showed it on a linear layer; here it is on the conv, the layer right before
# `ReLU(inplace=True)`. The hook stores `output.detach()` and `output.detach().clone()`. The ReLU
# then writes `max(x, 0)` into the conv's output, which the detached tensor shares.

# %%
stored = {}


def store_both(module, args, output):
    stored["detach()"] = output.detach()
    stored["detach().clone()"] = output.detach().clone()


digit = images[test_idx[0]].unsqueeze(0)
with model[0].register_forward_hook(store_both), torch.no_grad():
    model(digit)
    conv_output = F.conv2d(digit, model[0].weight, model[0].bias, padding=1)  # what the conv produced
for name, value in stored.items():
    print(f"{name:>17}: min {value.min():.3f}, equals the conv's output: {torch.equal(value, conv_output)}")
assert stored["detach()"].min() == 0 and torch.equal(stored["detach()"], conv_output.relu())
assert stored["detach().clone()"].min() < 0 and torch.equal(stored["detach().clone()"], conv_output)

negative, positive = (conv_output[0] < 0).sum(dim=(1, 2)), (conv_output[0] > 0).sum(dim=(1, 2))
channel = int(torch.minimum(negative, positive).argmax())  # a channel with many values of both signs
fig, axes = plt.subplots(1, 2, figsize=(6, 3), dpi=80)
limit = conv_output[0, channel].abs().max()
for ax, (name, value) in zip(axes, stored.items()):
    picture = ax.imshow(value[0, channel], cmap="RdBu_r", vmin=-limit, vmax=limit)
    ax.set_title(f"stored output.{name}\nmin {value[0, channel].min():.2f}", fontsize=9)
    ax.axis("off")
fig.colorbar(picture, ax=axes, shrink=0.8)
fig.suptitle(f"Conv channel {channel}: the negative values (blue) survive only in the clone", fontsize=10)
plt.show()

# %% [markdown]
# ## Exercise 1: `get_activation` · easy · about 10 min
#
# Write `get_activation(model, layer, x)`. It returns the output of `layer` (a submodule of
# `model`) during `model(x)`:
#
# - captured with a forward hook on `layer`, and the hook is removed before the function returns,
#   also when the forward pass raises (the exception goes on to the caller), whether it raises after
#   `layer` ran or before; hooks that were registered before the call stay;
# - the forward pass runs without building an autograd graph (it is only looked at);
# - the result is detached, and later in-place operations in the model (an in-place ReLU after
#   `layer`) do not change it;
# - `layer` may be any module of `model`, `model` itself included; if it runs more than once during
#   `model(x)` (one module used twice, under two names), the result is the output of its last call;
# - the model and each of its modules keep their train/eval mode, and grad mode is as it was once the
#   function returns.
#
# Traps: a hook left behind when the forward raises (lesson 02's `try/finally`, or the handle as
# a context manager); `detach()` without `clone()`; a forward pass that records a graph.
#
# Check: run `check(get_activation)` below, or `pytest tests/test_06_cnn_activations.py -k get_activation`.

# %% tags=["exercise"]
# Exercise: get_activation — write your code in this cell.
import torch


def get_activation(model, layer, x):
    """The output of `layer`, a submodule of `model`, during `model(x)`.

    Captured with a forward hook on `layer` that is removed before returning, also when the
    forward pass raises (the exception propagates). Hooks registered before the call stay.
    The forward pass runs without building an autograd graph. The result is detached, and
    in-place operations later in the model (such as an in-place ReLU after `layer`) do not change
    it. `layer` may be `model` itself. If `layer` runs more than once during `model(x)` (a module
    used twice), the result is the output of its last call.
    The model and each of its modules keep their train/eval mode, and grad mode is as it was once the
    function returns.
    """
    # BEGIN SOLUTION
    captured = {}

    def hook(module, args, output):
        captured["output"] = output.detach().clone()

    with layer.register_forward_hook(hook), torch.no_grad():
        model(x)
    return captured["output"]
    # END SOLUTION


# %%
check(get_activation)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Register a forward hook that copies the layer's output somewhere your function can read it,
# run the model once without gradients, remove the hook whatever happens, and return the copy.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `layer.register_forward_hook(hook)` returns a handle that is also a context manager: leaving a
# `with` block removes the hook, also on an exception. `torch.no_grad()` stops the graph.
# `output.detach().clone()` is a copy in memory of its own.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# captured = {}
#
# def hook(module, args, output):
#     captured["output"] = ...  # a copy that the in-place ReLU cannot reach
#
# with layer.register_forward_hook(hook), torch.no_grad():
#     ...
# ```
#
# </details>

# %% [markdown]
# Once `get_activation` is written, this cell shows it at work on the trained model: the conv's
# output keeps its negative values even though an in-place ReLU follows, the pool's has the shape
# drawn above, and no hook is left. Until then it prints "Not done yet".

# %%
with try_it():
    conv_maps = get_activation(model, model[0], digit)
    pool_maps = get_activation(model, model[2], digit)
    print("conv:", list(conv_maps.shape), f"min {conv_maps.min():.3f} | pool:", list(pool_maps.shape))
    assert torch.equal(conv_maps, conv_output) and list(pool_maps.shape) == [1, 16, 14, 14]
    assert not conv_maps.requires_grad and not any(m._forward_hooks for m in model.modules())

# %% [markdown]
# ## Grad-CAM: where is the model looking?
#
# Grad-CAM (Selvaraju et al., 2017) answers "which part of the image made the model score class
# `c`?" for one image and one layer with spatial maps:
#
# 1. Run the model, keeping the layer's output `A` (K maps of h×w) and the score `y = model(x)[0, c]`.
# 2. Compute `G`, the gradient of `y` with respect to `A`. Average each of its K maps: the weight
#    `w_k` says how much raising map `k` everywhere would raise the score.
# 3. `cam = relu(sum_k w_k * A_k)`, an h×w map: the places whose activations push the score up
#    (the ReLU drops those that push it down).
# 4. Upsample it to the image's size (bilinear) and divide by its maximum to get values in [0, 1].
#
# So we need a layer's output **and** its gradient. Lesson 05's full backward hook gives
# `grad_output`, but our conv is followed by `ReLU(inplace=True)`, and that fails, already in the
# forward pass:

# %%
with model[0].register_full_backward_hook(lambda module, grad_input, grad_output: None):
    try:
        model(digit)
        raise AssertionError("expected a RuntimeError")
    except RuntimeError as error:
        print(f"{type(error).__name__}: {error}")
        assert str(error).startswith("Output 0 of BackwardHookFunction is a view and is being modified inplace.")

# %% [markdown]
# The full backward hook passes the conv's output through an extra identity step, and PyTorch
# forbids changing that step's output in place, which the ReLU does. The fix from lesson 05: a
# **forward** hook that registers a **tensor** hook on the output. The tensor hook is attached to
# the value the conv produced, before the ReLU overwrites it, so it receives the gradient with
# respect to that value, as a model without the in-place ReLU would give. The cell compares with
# such a model (`nn.ReLU()`, not in place), where `torch.autograd.grad` gives the reference.
#
# Calling `output.retain_grad()` in the hook instead does not give that: after the in-place ReLU,
# the tensor `output` *is* the ReLU's result, and its retained gradient is the one with respect to
# that result, which lacks the ReLU's zeros where the conv's output was negative. The cell shows
# both.

# %%
caught = {}


def capture(module, args, output):
    caught["activation"] = output.detach().clone()
    output.register_hook(lambda grad: caught.update(gradient=grad))
    output.retain_grad()
    caught["output"] = output


target = labels[test_idx[0]].item()
with model[0].register_forward_hook(capture):
    model(digit)[0, target].backward()

no_in_place = make_cnn()
no_in_place.load_state_dict(model.state_dict())
no_in_place[1] = nn.ReLU()
with no_in_place[0].register_forward_hook(lambda module, args, output: caught.update(reference=output)):
    score = no_in_place(digit)[0, target]
reference_gradient, = torch.autograd.grad(score, caught["reference"])
print("after the forward pass, `output` holds the ReLU's result:",
      torch.equal(caught["output"].detach(), caught["activation"].relu()))
print("tensor hook's gradient equals the reference:", torch.allclose(caught["gradient"], reference_gradient))
print("retain_grad's gradient equals the reference:", torch.allclose(caught["output"].grad, reference_gradient))
print("zeros in the reference:", int((reference_gradient == 0).sum()),
      "| in retain_grad's:", int((caught["output"].grad == 0).sum()))
assert torch.equal(caught["output"].detach(), caught["activation"].relu())
assert torch.allclose(caught["gradient"], reference_gradient)
assert not torch.allclose(caught["output"].grad, reference_gradient)
assert torch.equal(caught["output"].grad * (caught["activation"] > 0), reference_gradient)
model.zero_grad()

# %% [markdown]
# **A frozen model.** Grad-CAM is often asked of a model whose parameters are frozen
# (`requires_grad=False` on every one, as for a pretrained backbone). Then nothing in the forward pass
# requires grad, the conv's output has no autograd graph, and `output.register_hook` raises. The graph
# comes back when the input requires grad: `x.detach().requires_grad_()` is a new tensor that shares
# the values of `x`, so the caller's `x` keeps `requires_grad=False`, and the parameters stay frozen.
# The gradient with respect to the conv's output is then the same as in the model that is not frozen.

# %%
frozen = make_cnn()
frozen.load_state_dict(model.state_dict())
frozen[1] = nn.ReLU()  # not in place, so that the output keeps what the conv produced
frozen.requires_grad_(False)
frozen_outputs = []
with frozen[0].register_forward_hook(lambda module, args, output: frozen_outputs.append(output)):
    frozen(digit)
    print("frozen model, x without grad: the conv's output requires grad:", frozen_outputs[0].requires_grad)
    try:
        frozen_outputs[0].register_hook(lambda grad: None)
        raise AssertionError("expected a RuntimeError")
    except RuntimeError as error:
        print(f"{type(error).__name__}: {error}")
        assert str(error) == "cannot register a hook on a tensor that doesn't require gradient"
    copy_of_digit = digit.detach().requires_grad_()
    frozen_score = frozen(copy_of_digit)[0, target]
frozen_gradient, = torch.autograd.grad(frozen_score, frozen_outputs[1])
print("with a copy of x that requires grad: the conv's output requires grad:", frozen_outputs[1].requires_grad,
      "| x requires grad:", digit.requires_grad, "| a parameter requires grad:",
      any(p.requires_grad for p in frozen.parameters()))
print("the gradient equals the one of the model that is not frozen:",
      torch.allclose(frozen_gradient, reference_gradient))
assert frozen_outputs[1].requires_grad and not digit.requires_grad
assert copy_of_digit.data_ptr() == digit.data_ptr()  # the same values, in the same memory
assert not any(p.requires_grad for p in frozen.parameters())
assert torch.allclose(frozen_gradient, reference_gradient)

# %% [markdown]
# ## Exercise 2: `grad_cam` · hard · about 35 min
#
# Write `grad_cam(model, layer, x, target)` for a single image `x` of shape `(1, C, H, W)`. It
# returns a 2-D tensor of shape `(H, W)`:
#
# - `A` is the output of `layer` as the layer produced it, `G` the gradient of
#   `model(x)[0, target]` with respect to `A` (as in the same model without in-place operations);
# - `w_k` is the mean of `G` over its spatial dimensions (one weight per channel `k`);
# - `cam = relu(sum_k w_k * A_k)`, upsampled bilinearly with `align_corners=False` to `(H, W)`,
#   then divided by its maximum when that maximum is positive (an all-zero map stays zero).
#
# It must work when `layer` is followed by `ReLU(inplace=True)`, and on a frozen model (no parameter
# requires grad, the case of the cell above) without unfreezing it: every parameter's `requires_grad` is
# left as it was. It leaves no hook on any module, also when the forward pass raises (the exception
# goes on to the caller), and hooks registered before the call stay; it leaves every module of the
# model in the train or eval mode it was in, and grad mode on (it is called with grad mode on, which
# its backward pass needs). The caller's `x` is left as it was: its values, and it does not require
# grad. (A `backward()` that also fills the parameters' `.grad` is allowed.) `layer` runs once during
# `model(x)`: a module used twice has one `A` and one `G` per call, and Grad-CAM of it is not asked.
#
# Traps: a full backward hook (fails with an in-place ReLU); `retain_grad()` or `detach()` without
# `clone()` (both read the value after the ReLU); weights from the activations instead of the
# gradients; forgetting the ReLU, the upsampling or the normalization; dividing by a zero maximum;
# a frozen model, whose layer output has no graph unless the input requires grad.
#
# Check: run `check(grad_cam)` below, or `pytest tests/test_06_cnn_activations.py -k grad_cam`.

# %% tags=["exercise"]
# Exercise: grad_cam — write your code in this cell.
import torch
import torch.nn.functional as F


def grad_cam(model, layer, x, target):
    """Grad-CAM of class `target` for the single image `x` (shape (1, C, H, W)) at `layer`.

    With A the output of `layer` as the layer produced it and G the gradient of
    `model(x)[0, target]` with respect to A: w_k = mean of G over its spatial dims,
    cam = relu(sum_k w_k * A_k), upsampled bilinearly (align_corners=False) to (H, W) and divided
    by its maximum when that is positive. Returns a tensor of shape (H, W).
    Works when `layer` is followed by an in-place ReLU, and on a frozen model (no parameter
    requires grad), leaving every parameter's requires_grad as it was. Leaves no hook on any module, also
    when the forward pass raises (the exception propagates), and keeps the hooks registered before the
    call. Leaves every module of the model in its train/eval mode, and grad mode on (it is called with
    grad mode on). `x` is left as it was: its values, and it does not require grad.
    `layer` runs once during `model(x)`.
    """
    # BEGIN SOLUTION
    saved = {}

    def hook(module, args, output):
        saved["activation"] = output.detach().clone()
        output.register_hook(lambda grad: saved.update(gradient=grad.detach()))

    with layer.register_forward_hook(hook):
        score = model(x.detach().requires_grad_())[0, target]  # a graph also through frozen layers
    score.backward()
    activation, gradient = saved["activation"][0], saved["gradient"][0]
    weights = gradient.mean(dim=(1, 2))
    cam = torch.relu((weights[:, None, None] * activation).sum(dim=0))
    cam = F.interpolate(cam[None, None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
    if cam.max() > 0:
        cam = cam / cam.max()
    return cam
    # END SOLUTION


# %%
check(grad_cam)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# One forward pass with a forward hook on `layer` that keeps a copy of the output and attaches a
# tensor hook to the output itself; then backward from the target's score fills in the gradient.
# Run it on a copy of `x` that requires grad, so that there is a graph even when the model is frozen.
# The rest is arithmetic on two tensors of shape (K, h, w).
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `output.register_hook(fn)` inside the forward hook (the handle of the forward hook as a context
# manager removes it); `output.detach().clone()`; `x.detach().requires_grad_()` (a new tensor: `x`
# itself does not change); `score.backward()`; `gradient.mean(dim=(1, 2))`;
# `torch.relu`; `F.interpolate(cam[None, None], size=..., mode="bilinear", align_corners=False)`
# wants a 4-D tensor.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# with layer.register_forward_hook(hook):
#     score = model(x.detach().requires_grad_())[0, target]
# score.backward()
# weights = gradient.mean(dim=(1, 2))                       # (K,)
# cam = torch.relu((weights[:, None, None] * activation).sum(dim=0))
# cam = F.interpolate(...)[0, 0]
# ...  # divide by the maximum only if it is positive
# ```
#
# </details>

# %% [markdown]
# Once `grad_cam` is written, this cell draws it at work on the trained model, for four test
# digits: the map for the true class and for the class the model ranks second, over the digit, at
# two layers. Until then it prints "Not done yet" and draws nothing. At the conv (the layer
# followed by the in-place ReLU, 28×28 maps), one layer into the network, both classes light up
# the strokes and the two maps are nearly the same: this layer has found strokes, not classes. At
# the max-pool (14×14 maps upsampled to 28×28) some maps are empty (all dark); the cell after this
# one says why. The cell measures how much brighter the conv's maps are on the strokes than off
# them, the mean difference between the two maps of each digit at each layer, and counts the empty
# maps at each layer.

# %%
with try_it():
    shown = test_idx[4:8]
    with torch.no_grad():
        runner_up = model(images[shown]).topk(2, dim=1).indices[:, 1]
    rows = []  # per digit: the digit, then (layer name, class, kind, cam) for each of the four maps
    for index, wrong_class in zip(shown, runner_up.tolist()):
        digit, true_class = images[index].unsqueeze(0), labels[index].item()
        maps = [(layer_name, target, kind, grad_cam(model, model[layer_index], digit, target))
                for layer_index, layer_name in ((0, "conv"), (2, "pool"))
                for kind, target in (("true", true_class), ("wrong", wrong_class))]
        rows.append((digit[0, 0], maps))
    assert all(cam.shape == (28, 28) and cam.min() >= 0 and cam.max() in (0, 1)
               for digit, maps in rows for *_, cam in maps)

    fig, axes = plt.subplots(len(rows), 5, figsize=(7, 6), dpi=80)
    for row, (digit, maps) in enumerate(rows):
        axes[row, 0].imshow(digit, cmap="gray_r")
        axes[row, 0].set_title(f"digit {maps[0][1]}", fontsize=9)
        for ax, (layer_name, target, kind, cam) in zip(axes[row, 1:], maps):
            ax.imshow(digit, cmap="gray_r")
            ax.imshow(cam.detach(), cmap="jet", alpha=0.5, vmin=0, vmax=1)  # a map may keep its graph
            ax.set_title(f"{layer_name}: {target} ({kind})", fontsize=9)
    for ax in axes.flat:
        ax.axis("off")
    fig.suptitle("Grad-CAM for the true class and the runner-up, at the conv and at the pool", fontsize=10)
    plt.tight_layout()
    plt.show()

    strokes = [digit > 0.3 for digit, maps in rows]
    on_off = [(maps[i][3][mask].mean().item(), maps[i][3][~mask].mean().item())
              for (digit, maps), mask in zip(rows, strokes) for i in (0, 1)]
    differences = {layer: [(maps[i][3] - maps[i + 1][3]).abs().mean().item() for digit, maps in rows]
                   for i, layer in ((0, "conv"), (2, "pool"))}
    empty_maps = {layer: sum(int(maps[i][3].max() == 0) for digit, maps in rows for i in (j, j + 1))
                  for j, layer in ((0, "conv"), (2, "pool"))}
    print("conv, true and runner-up class, mean of the map on / off the strokes:",
          [(round(on, 2), round(off, 2)) for on, off in on_off])
    print("mean |map(true) - map(wrong)|:", {layer: [round(d, 3) for d in values]
                                             for layer, values in differences.items()})
    print("empty maps, of 8 per layer:", empty_maps)
    assert all(on > 10 * off for on, off in on_off)
    assert max(differences["conv"]) < 0.1
    assert empty_maps["conv"] == 0 and empty_maps["pool"] > 0
    assert not any(m._forward_hooks or m._backward_hooks for m in model.modules()) and not model.training
    model.zero_grad()

# %% [markdown]
# Why maps at the max-pool can be empty: the head is one linear layer on the flattened maps, so
# the gradient at the pool is the head's weights for the class, a different number at each place.
# Grad-CAM averages it over each map into one weight `w_k`, which throws away *where* the head
# looks; the weighted sum can then be zero or negative everywhere, and the ReLU leaves nothing.
# It is also why `grad_cam` must keep an all-zero map as zeros rather than divide by its maximum.
# Once `grad_cam` is written, this cell counts the empty maps at the pool on 40 test digits, for the
# true class, and finds no NaN; until then it prints "Not done yet".

# %%
with try_it():
    pool_cams = [grad_cam(model, model[2], images[index].unsqueeze(0), labels[index].item())
                 for index in test_idx[:40]]
    empty = sum(int(cam.max() == 0) for cam in pool_cams)
    print(f"all-zero maps at the pool: {empty} of 40 test digits; NaN anywhere: "
          f"{any(cam.isnan().any().item() for cam in pool_cams)}")
    assert empty > 0 and not any(cam.isnan().any() for cam in pool_cams)
    model.zero_grad()

# %% [markdown]
# The reason, measured on the same 40 digits without `grad_cam`: for each digit the gradient of
# the score at the pool equals the head's weights for the class, reshaped to 16 maps of 14×14;
# for each digit whose map is empty, the weighted sum is at most 0 everywhere, and the cell counts
# the maps that are switched on (not all zero) and those among them whose weight `w_k` is positive.
# A head that first averages each map over space (global average pooling, as in ResNets) gives a
# gradient that is the same at every place of a map, so that average loses nothing: the last
# lines show it on a small such head.

# %%
head = model[4]
empty_digits = 0
for index in test_idx[:40].tolist():
    pool_output = model[:3](images[index:index + 1]).detach().requires_grad_()
    true_class = labels[index].item()
    gradient, = torch.autograd.grad(model[3:](pool_output)[0, true_class], pool_output)
    assert torch.equal(gradient[0], head.weight[true_class].view(16, 14, 14))
    weights = gradient[0].mean(dim=(1, 2))
    weighted_sum = (weights[:, None, None] * pool_output[0].detach()).sum(dim=0)
    if weighted_sum.max() <= 0:
        empty_digits += 1
        switched_on = pool_output[0].detach().amax(dim=(1, 2)) > 0
        print(f"test digit {index} ({true_class}): empty; maps switched on {int(switched_on.sum())}, "
              f"with w_k > 0: {int((switched_on & (weights > 0)).sum())}")
assert empty_digits > 0

torch.manual_seed(0)
gap_head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
maps = torch.randn(1, 16, 14, 14, requires_grad=True)
gap_gradient, = torch.autograd.grad(gap_head(maps)[0, 3], maps)
print("global average pooling head: gradient the same at every place of each map:",
      torch.allclose(gap_gradient, gap_gradient[:, :, :1, :1].expand_as(gap_gradient)))
assert torch.allclose(gap_gradient, gap_gradient[:, :, :1, :1].expand_as(gap_gradient))

# %% [markdown]
# ## Summary
#
# - `Conv2d(1, 16, 3, padding=1)` → `ReLU` → `MaxPool2d(2, 2)` turns `1×1×28×28` into
#   `1×16×14×14`; a first conv built for 3 channels refuses a 1-channel image; without padding
#   and pooling, 28×28 becomes 26×26.
# - Look inside a trained network: random filters show nothing learned; their maps tell the digits
#   apart less well than the pixels do.
# - Capture with a forward hook, removed whatever happens (a `with` block), under `no_grad`,
#   storing `output.detach().clone()`: the in-place ReLU overwrites a `detach()`ed output.
# - Grad-CAM at the first conv shows strokes for any class; at the pool, nearer the decision, a map
#   can be empty, which must stay zeros.
# - Grad-CAM needs a layer's output and its gradient. A full backward hook fails when an in-place
#   ReLU follows the layer, and `retain_grad()` then gives the gradient after the ReLU; a tensor
#   hook registered in a forward hook gives the gradient of the value the layer produced.
# - In a frozen model, with an input that does not require grad, a layer's output has no graph to hook
#   into: run the model on a copy of the input that requires grad, `x.detach().requires_grad_()`.
#
# Next, lesson 07 looks at global hooks, which apply to every module at once, and at how the options
# of lessons 03 and 04 (`with_kwargs`, `prepend`, `always_call`) work with them.
