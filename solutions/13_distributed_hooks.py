# %% [markdown]
# # Lesson 13 — Hooks in distributed training
#
# When a model trains on several processes ("ranks"), each rank computes gradients on its own
# part of the batch, and `DistributedDataParallel` (DDP) averages them across ranks during
# backward. DDP lets you replace that averaging with a function of your own, a **communication
# hook**; FSDP2 (`fully_shard`) gathers and frees parameters with hooks of its own around each
# module's forward and backward.
#
# After this lesson you will be able to:
#
# - say how DDP groups gradients into buckets, what a `GradBucket` holds, and when a comm hook
#   runs next to the tensor and module hooks of lessons 01-08;
# - write a comm hook that returns a `Future`, use torch's built-in ones (`fp16_compress_hook`,
#   PowerSGD), say what each loses, and why a CPU build of torch refuses `bf16_compress_hook`;
# - keep a hook's state per rank, record DDP's buckets, and compress gradients with error feedback;
# - say what a hook sees under FSDP2, and launch ranks with the spawn start method or `torchrun`.
#
# **Where your code goes.** Write all of your code in the exercise cells, the cells that begin
# with `# Exercise: ...`. The grader runs only those cells.
#
# **How to check your work.** Run the `check(...)` cell under each exercise, or
# `pytest tests/test_13_distributed_hooks.py` from the repository root.
#
# **Two ranks in one notebook.** Real training starts one process per rank. Starting a process
# that imports torch takes seconds, so most cells here run the two ranks on two *threads* of
# this notebook's process, each with a gloo process group of its own that talks to the other
# over 127.0.0.1 (`hooked.two_ranks.run_on_ranks`; the grader runs your hooks the same way). The
# collectives are gloo's own, as between two processes, but the threads share what a process
# holds once: torch's global random generator and every module-level variable. So the cells draw
# the models' starting weights before the ranks start (`fixed_start` below), and the exercises
# keep a hook's state in an object per rank. And no rank here has a *default* process group
# (nothing called `dist.init_process_group`): pass each collective its group. The last section
# starts two real processes.

# %%
import inspect
import multiprocessing
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from hooked.notebook import check, hint, try_it
from hooked.two_ranks import run_on_ranks

torch.set_num_threads(1)


def two_ranks(function):
    """Run function(rank, process_group) on ranks 0 and 1; return their results, or raise."""
    outcomes = run_on_ranks(function, deadline=60)
    for outcome in outcomes:
        if outcome.stuck:
            raise TimeoutError(f"rank {outcome.rank} did not finish within 60 s")
        if outcome.error is not None:
            raise outcome.error
    return [outcome.value for outcome in outcomes]


def fixed_start(build):
    """`build()` with the same weights every time. Drawn once, here: ranks on threads that seed
    and draw at once would share torch's one global generator, and start differently each run."""
    torch.manual_seed(0)
    start = build().state_dict()

    def make():
        model = build()
        model.load_state_dict(start)
        return model
    return make


small_model = fixed_start(lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
regression_model = fixed_start(lambda: nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))


def rank_batch(rank, step=0):
    """Each rank's own data: a different batch of 3 examples per rank and step."""
    generator = torch.Generator().manual_seed(100 * step + rank)
    return torch.randn(3, 4, generator=generator), torch.randn(3, 2, generator=generator)


# %% [markdown]
# ## How DDP averages gradients: buckets
#
# `DDP(model, process_group=group)` wraps the model. During backward, as gradients become ready,
# DDP copies them into flat **buckets** of about `bucket_cap_mb` megabytes each (25 by default)
# and all-reduces each full bucket while backward goes on. A comm hook,
# `ddp.register_comm_hook(state, hook)`, replaces that all-reduce: DDP calls `hook(state, bucket)`
# once per bucket, where `bucket` is a `dist.GradBucket`:
#
# - `bucket.index()`: the bucket's number; `bucket.buffer()`: the flat tensor of this rank's
#   gradients; `bucket.parameters()`: the parameters whose gradients it holds, in the buffer's
#   order; `bucket.is_last()`: whether it is the last bucket of this backward pass.
#
# The cell records the buckets of a 3-layer model with tiny buckets (`bucket_cap_mb=0.0001`: DDP
# keeps `int(0.0001 * 2**20)`, a cap of 104 bytes, in `ddp.bucket_bytes_cap`) in its second
# backward pass (the section after exercise 2 shows why not the first), and when the comm hook
# runs next to tensor hooks on the weights and full backward hooks on two layers.

# %%
def show_buckets(rank, group):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    names = {parameter: name for name, parameter in model.named_parameters()}
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.0001)
    events, buckets = [], []

    def recording_hook(state, bucket):
        buckets.append((bucket.index(), bucket.buffer().numel(), [names[p] for p in bucket.parameters()],
                        bucket.is_last()))
        events.append(f"comm hook, bucket {bucket.index()}")
        return default_hooks.allreduce_hook(state, bucket)

    assert DDP(nn.Linear(2, 2), process_group=group).bucket_bytes_cap == 25 * 1024 ** 2  # the default: 25 MiB
    assert ddp.bucket_bytes_cap == 104
    assert ddp.register_comm_hook(group, recording_hook) is None  # no handle: DDP keeps one comm hook for good
    for index in (0, 2, 4):
        model[index].weight.register_hook(lambda grad, index=index: events.append(f"tensor hook {index}.weight"))
    for index in (2, 4):  # (layer 0's input needs no gradient, so its module hook would fire early)
        model[index].register_full_backward_hook(lambda *args, index=index: events.append(f"module hook {index}"))
    for step in range(2):
        events.clear()
        buckets.clear()
        ddp(torch.randn(3, 4)).sum().backward()
    return buckets, events


buckets, events = two_ranks(show_buckets)[0]
for record in buckets:
    print("bucket %d: %3d elements, %s, is_last=%s" % record)
print(events)

# %% [markdown]
# Bucket 0 holds the **last** layer's parameters: DDP fills buckets in the order gradients
# become ready in backward, roughly the reverse of `model.parameters()`. A bucket takes parameters
# until its size reaches the cap, and a parameter is never split, so a bucket can be larger than
# the cap: bucket 0 closes at 26 float32 elements, exactly 104 bytes; bucket 1 is `2.weight` alone,
# 256 bytes; bucket 2 takes `0.bias` (32 bytes, under the cap), then `0.weight`, 160 bytes in all.
# Within a bucket, the buffer is the parameters' gradients one after the other. A
# bucket's comm hook runs as soon as every gradient in it is ready: after the tensor hooks of its
# parameters (a tensor hook can still change what goes into the bucket), and in the middle of
# backward, before the module hooks of earlier layers have run. The last bucket's `is_last()`
# is true.

# %%
assert [record[:2] for record in buckets] == [(0, 26), (1, 64), (2, 40)]
assert [4 * record[1] for record in buckets] == [104, 256, 160]  # bytes of float32, against a cap of 104
assert [record[2] for record in buckets] == [["4.bias", "4.weight", "2.bias"], ["2.weight"], ["0.bias", "0.weight"]]
assert [record[3] for record in buckets] == [False, False, True]
assert events == ["tensor hook 4.weight", "module hook 4", "comm hook, bucket 0", "tensor hook 2.weight",
                  "comm hook, bucket 1", "module hook 2", "tensor hook 0.weight", "comm hook, bucket 2"]


def bucket_after_a_tensor_hook(rank, group):
    """The bucket a comm hook receives when a tensor hook on the weight returns 7s for its gradient."""
    model = nn.Linear(3, 1, bias=False)
    ddp = DDP(model, process_group=group)
    received = []

    def recording_hook(state, bucket):
        received.append(bucket.buffer().clone())
        return default_hooks.allreduce_hook(state, bucket)

    ddp.register_comm_hook(group, recording_hook)
    model.weight.register_hook(lambda grad: torch.full_like(grad, 7.0))
    ddp(torch.ones(2, 3)).sum().backward()
    return received[0]


assert torch.equal(two_ranks(bucket_after_a_tensor_hook)[0], torch.full((3,), 7.0))  # the tensor hook's gradient

# %% [markdown]
# ## What a comm hook must return
#
# A comm hook returns a `torch.futures.Future` whose value, once complete, is the bucket's new
# buffer: the tensor DDP then copies into each parameter's `.grad`. Collectives started with
# `async_op=True` return a work object whose `.get_future()` gives a future of a *list* of
# tensors; `.then(callback)` makes a new future from the callback's return value. DDP also reads
# the hook's signature: the second parameter must be called `bucket`. The errors, on this torch:

# %%
def register_and_step(hook):
    """On rank 0, what registering `hook` and one backward pass raised, as "call: Type: text"; None if nothing."""
    def run(rank, group):
        ddp = DDP(small_model(), process_group=group)
        call = "register_comm_hook"
        try:
            ddp.register_comm_hook(group, hook)
            call = "backward"
            ddp(rank_batch(rank)[0]).sum().backward()
        except Exception as error:
            return f"{call}: {type(error).__name__}: {error}"
    return two_ranks(run)[0]


def returns_the_tensor(state, bucket):
    return bucket.buffer()


def second_parameter_named_b(state, b):
    return default_hooks.allreduce_hook(state, b)


tensor_error = register_and_step(returns_the_tensor)
name_error = register_and_step(second_parameter_named_b)
bf16_error = register_and_step(default_hooks.bf16_compress_hook)
for text in (tensor_error, name_error, bf16_error):
    print(text if text is None or len(text) < 150 else f"{text[:30]} ... {text[-110:]}")
assert tensor_error.startswith("backward: RuntimeError") and tensor_error.endswith(
    "DDP communication hook's callback must return a torch.futures.Future object, but got torch.Tensor")
assert name_error == "register_comm_hook: KeyError: 'bucket'"
# DDP's test of bf16_compress_hook (_check_comm_hook in torch/nn/parallel/distributed.py) reads how torch was built:
accepts_bf16 = (bool(torch.version.cuda or torch.version.hip) and dist.is_nccl_available()
                and torch.cuda.nccl.version() >= (2, 10) or dist.is_xccl_available() and torch.xpu.is_available())
print("torch.version.cuda:", torch.version.cuda, "| NCCL:", dist.is_nccl_available(), "| accepts bf16_compress_hook:",
      accepts_bf16)
if accepts_bf16:  # a CUDA build with NCCL: accepted, and run on gloo with this notebook's CPU tensors
    assert bf16_error is None
else:  # a CPU build of torch, as the course installs
    assert bf16_error.startswith("register_comm_hook: TypeError: BF16 all reduce communication hook required "
                                 "CUDA 11+ and NCCL 2.10+")

# %% [markdown]
# A CPU build of torch refuses `bf16_compress_hook` when it is registered. DDP tests the hook's
# name and how torch was built (`torch.version.cuda` or ROCm, with NCCL 2.10 or later; or XCCL
# with an Intel XPU present), not the device of the tensors: on a CUDA build with NCCL the same
# registration is accepted, also for CPU tensors on gloo, and the same function under another name
# runs on gloo here (next section). `fp16_compress_hook` works on gloo.
#
# The ranks here have no default process group, so a hook that calls `dist.get_world_size()`, or
# `dist.all_reduce(tensor)` without `group=`, raises: use the group DDP passes the hook
# (`process_group`, or `state.process_group` in a state of your own).

# %%
def errors_without_a_group(rank, group):
    errors = []
    for call in (dist.get_world_size, lambda: dist.all_reduce(torch.ones(1))):
        try:
            call()
        except ValueError as error:
            errors.append(str(error))
    return errors


no_default_group = two_ranks(errors_without_a_group)[0]
print(no_default_group)
assert len(no_default_group) == 2
assert all(text.startswith("Default process group has not been initialized") for text in no_default_group)

# %% [markdown]
# **A trap: a hook that returns nothing.** A comm hook without a `return`, or one that returns
# `future.set_result(...)` (which is `None`), raises nothing you could catch: on torch 2.13 DDP
# crashes the whole process, a segmentation fault in the middle of backward, and in a notebook the
# kernel dies. The cell runs such a hook in a new Python process (one rank alone, in a gloo group
# of one over an in-memory `HashStore`) and shows how that process ended. The grader's checks stop
# a hook that returns `None` before DDP sees it, and say so; the demonstration cells under each
# exercise run your hook under DDP itself, so make its `check` pass first.

# %%
forgets_to_return = """
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
ddp = DDP(nn.Linear(2, 2))

def hook(state, bucket):
    future = torch.futures.Future()
    future.set_result(bucket.buffer())  # and no return: the hook returns None

ddp.register_comm_hook(None, hook)
print("backward", flush=True)
ddp(torch.randn(3, 2)).sum().backward()
print("backward returned", flush=True)
"""
child = subprocess.run([sys.executable, "-c", forgets_to_return], capture_output=True, text=True, timeout=300)
ended = signal.Signals(-child.returncode).name if child.returncode < 0 else f"exit code {child.returncode}"
print("the process printed", child.stdout.split("\n")[:-1], "and ended by", ended)
assert child.stdout == "backward\n" and child.returncode != 0
if os.name == "posix":
    assert child.returncode == -signal.SIGSEGV

# %% [markdown]
# ## Exercise 1: `mean_allreduce_hook` · easy · about 10 min
#
# Write the hook DDP runs when you register none: average each bucket across ranks.
# Divide by `process_group.size()`, not by 2. The usual mistakes: returning the tensor, the
# collective's future itself (whose value is a list), or nothing (the trap above), and dividing
# the buffer in place *after* starting the all-reduce, while gloo may still be reading it.

# %% tags=["exercise"]
# Exercise: mean_allreduce_hook — write your code in this cell.
import torch.distributed as dist


def mean_allreduce_hook(process_group, bucket):
    """A DDP communication hook that averages each bucket across the ranks, as DDP does without a hook.

    Register it with `ddp_model.register_comm_hook(process_group, mean_allreduce_hook)`.
    Returns a torch.futures.Future whose value is a tensor: the sum of `bucket.buffer()` over all
    ranks of `process_group`, divided by `process_group.size()`.
    After backward, every rank's gradients equal those of the same DDP run without a hook.
    """
    # BEGIN SOLUTION
    buffer = bucket.buffer().div_(process_group.size())
    work = dist.all_reduce(buffer, group=process_group, async_op=True)
    return work.get_future().then(lambda future: future.value()[0])
    # END SOLUTION


# %%
check(mean_allreduce_hook)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Divide this rank's buffer by the number of ranks, then sum it over all ranks: the sum of the
# divided buffers is the mean. Return a future of that tensor, not the tensor.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `dist.all_reduce(tensor, group=process_group, async_op=True)` sums in place and returns a work
# object; `work.get_future()` is a future whose value is a list holding the tensor;
# `future.then(callback)` makes a future of what `callback(future)` returns.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# buffer = bucket.buffer().div_(process_group.size())
# work = dist.all_reduce(buffer, group=process_group, async_op=True)
# return ...  # a future of the tensor, from work.get_future()
# ```
#
# </details>

# %% [markdown]
# Once `mean_allreduce_hook` is done, this cell trains two ranks for 3 steps with it and
# without a hook and compares the gradients:

# %%
def gradients_after(hook):
    def run(rank, group):
        ddp = DDP(small_model(), process_group=group)
        if hook is not None:
            ddp.register_comm_hook(group, hook)
        inputs, targets = rank_batch(rank)
        nn.functional.mse_loss(ddp(inputs), targets).backward()
        return [parameter.grad.clone() for parameter in ddp.module.parameters()]
    return two_ranks(run)


with try_it():
    ours, default = gradients_after(mean_allreduce_hook), gradients_after(None)
    same = all(torch.allclose(a, b) for rank in range(2) for a, b in zip(ours[rank], default[rank]))
    print("gradients equal to DDP's own, on both ranks:", same)
    assert same

# %% [markdown]
# ## Torch's own hooks: fp16 compression and PowerSGD
#
# `default_hooks.fp16_compress_hook` sends the bucket as float16, half the bytes: it casts the
# buffer to float16, divides it by the number of ranks, all-reduces it and copies the result back
# into the float32 buffer (`_compress_hook` in torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py).
# Float16 keeps about 3 significant digits, and its range is narrow: its largest number is 65504,
# and below 6.1e-5 it keeps fewer digits, down to 0. Because the hook casts *before* dividing, a
# gradient entry over 65504 becomes `inf` even where the mean would fit, and a tiny one becomes 0
# or loses digits. The cell gives both ranks the gradient `[1e-8, 1e-6, 1e5, 1]`, so the mean is
# the same; then does the same with `bf16_compress_hook` under another name (which DDP does not
# refuse): bfloat16 has float32's range and fewer digits.

# %%
class FixedGradient(nn.Module):
    """A model whose one parameter gets the gradient `wanted` from `model().backward()`."""

    def __init__(self, wanted):
        super().__init__()
        self.wanted = wanted
        self.weight = nn.Parameter(torch.zeros(len(wanted)))

    def forward(self):
        return (self.weight * self.wanted).sum()


def mean_gradient(hook, wanted):
    """The gradient after one backward pass with `hook`, both ranks' gradients being `wanted`."""
    def run(rank, group):
        ddp = DDP(FixedGradient(wanted), process_group=group)
        ddp.register_comm_hook(group, hook)
        ddp().backward()
        return ddp.module.weight.grad.clone()
    return two_ranks(run)[0]


def bf16_under_another_name(state, bucket):
    return default_hooks.bf16_compress_hook(state, bucket)


wanted = torch.tensor([1e-8, 1e-6, 1e5, 1.0])
fp16_mean = mean_gradient(default_hooks.fp16_compress_hook, wanted)
bf16_mean = mean_gradient(bf16_under_another_name, wanted)
for name, values in [("both ranks' gradient", wanted), ("fp16_compress_hook", fp16_mean), ("bf16, renamed", bf16_mean)]:
    print(f"{name:21s}", "  ".join(f"{value:.4g}" for value in values.tolist()))
assert torch.finfo(torch.float16).max == 65504 and torch.finfo(torch.float16).smallest_normal == 2.0 ** -14
assert torch.equal(fp16_mean, torch.tensor([0.0, 2.0 ** -20, float("inf"), 1.0]))  # 1e-6 became 9.54e-7
assert ((bf16_mean - wanted).abs() / wanted < 2.0 ** -8).all()

# %% [markdown]
# PowerSGD (`powerSGD_hook.powerSGD_hook` with a `PowerSGDState`) views each parameter's gradient
# in the bucket as a matrix (a bias as a column) and sends a rank-1 approximation of it, two
# vectors, only where that sends more than `min_compression_rate` (2 by default) times fewer
# numbers: `(rows + columns) * 2 < rows * columns`. Every bias and small matrix it all-reduces
# uncompressed (`powerSGD_hook` in torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py).
# With error feedback (`use_error_feedback=True`, the default) each rank keeps what the
# approximation left out and adds it to the next step's gradient. It compresses nothing in its
# first `start_powerSGD_iter` steps. In the regression below, only the first layer's 32×16
# weight is compressed: a step sends 48 numbers for its 512, and its bias (32) and the 1×32 last
# layer with its bias (33) whole, 113 of 577. Below: the relative error of fp16's gradients, and
# the loss of 30 SGD steps of the regression with each hook, against no hook.

# %%
def training_losses(make_hook, steps=30):
    def run(rank, group):
        model = regression_model()
        ddp = DDP(model, process_group=group)
        if make_hook is not None:
            ddp.register_comm_hook(*make_hook(group))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        generator = torch.Generator().manual_seed(rank)
        teacher = torch.Generator().manual_seed(7)
        weights = torch.randn(16, 1, generator=teacher)
        losses = []
        for step in range(steps):
            inputs = torch.randn(16, 16, generator=generator)
            loss = nn.functional.mse_loss(ddp(inputs), inputs @ weights)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses, [parameter.grad.clone() for parameter in model.parameters()]
    return two_ranks(run)[0]


def fp16(group):
    return group, default_hooks.fp16_compress_hook


power_sgd_states = []  # one per rank
one_rank_at_a_time = threading.Lock()


def power_sgd(group):
    state = powerSGD_hook.PowerSGDState(process_group=group, matrix_approximation_rank=1, start_powerSGD_iter=2)
    power_sgd_states.append(state)

    def hook(state, bucket):
        # PowerSGD draws its first Q from torch's global generator, seeded alike on every rank. Our
        # ranks are threads sharing that one generator: without the lock their draws can interleave,
        # the ranks start from different Qs, and the losses change from run to run.
        with one_rank_at_a_time:
            return powerSGD_hook.powerSGD_hook(state, bucket)
    return state, hook


plain_losses, plain_grads = training_losses(None, steps=1)
_, fp16_grads = training_losses(fp16, steps=1)
relative = max(((a - b).norm() / b.norm()).item() for a, b in zip(fp16_grads, plain_grads))
print(f"fp16_compress_hook: largest relative error of a gradient after one step: {relative:.1e}")
assert 1e-5 < relative < 1e-2

losses = {name: training_losses(make)[0] for name, make in
          [("no hook", None), ("fp16", fp16), ("PowerSGD rank 1", power_sgd)]}
for name, values in losses.items():
    print(f"{name:16s} loss: step 1 {values[0]:.3f}, step 30 {values[-1]:.3f}")
assert abs(losses["fp16"][-1] - losses["no hook"][-1]) < 0.01 * losses["no hook"][0]
assert losses["PowerSGD rank 1"][-1] < 0.5 * losses["PowerSGD rank 1"][0]
assert losses["PowerSGD rank 1"][-1] < losses["no hook"][-1]  # here; see below
_, numbers_before, numbers_sent = power_sgd_states[0].compression_stats()  # summed over its compressed steps
print(f"PowerSGD sent {numbers_sent // 28} of {numbers_before // 28} numbers in each of its 28 compressed steps")
assert len(power_sgd_states) == 2
assert all(state.compression_stats()[1:] == (28 * 577, 28 * 113) for state in power_sgd_states)

try:  # why start_powerSGD_iter=2 above: PowerSGD's error feedback refuses to start before DDP's rebuilt buckets
    powerSGD_hook.PowerSGDState(process_group=None, start_powerSGD_iter=1)
except ValueError as error:
    start_error = str(error)
print(start_error)
assert start_error.startswith("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled")

# %% [markdown]
# These losses are one seed of a toy regression. That PowerSGD ends below no compression here
# says nothing about compression in general: what the runs show is that the compressed ones still
# train.

# %% [markdown]
# ## A hook under DDP sees its own rank's data only
#
# Each rank runs the whole model on its own batch: a forward hook on a layer of rank 0 sees rank
# 0's 3 examples, never the 6 of both. Only the gradients are averaged. So a statistic recorded
# by a module hook is a per-rank statistic; to get the global one, all-reduce it yourself. And
# state a hook keeps belongs to one rank: on real processes each rank has its own copy of every
# Python object, so a global dict is per rank; here, with ranks on threads, a module-level dict
# would be *shared* by both ranks, which is why the exercises keep state in an object per rank.

# %%
def batch_seen(rank, group):
    ddp = DDP(small_model(), process_group=group)
    seen = []
    ddp.module[0].register_forward_hook(lambda module, args, output: seen.append(args[0].clone()))
    inputs = rank_batch(rank)[0]
    ddp(inputs).sum().backward()
    return seen[0], inputs


(seen0, inputs0), (seen1, inputs1) = two_ranks(batch_seen)
print("rank 0's hook saw", tuple(seen0.shape), "| rank 1's hook saw", tuple(seen1.shape))
assert torch.equal(seen0, inputs0) and torch.equal(seen1, inputs1) and not torch.equal(seen0, seen1)

# %% [markdown]
# ## Exercise 2: `record_buckets` · medium · about 15 min
#
# Write `record_buckets(ddp_model, store)`: it registers a comm hook on `ddp_model` that records
# each bucket, step by step, and reduces the bucket as DDP would (the gradients must not change).
# A new step starts at the first bucket after one whose `is_last()` was true. `store` belongs to
# one rank: the check calls `record_buckets` once on each rank with a list of its own.

# %% tags=["exercise"]
# Exercise: record_buckets — write your code in this cell.
import torch.distributed as dist


def record_buckets(ddp_model, store):
    """Register a comm hook on `ddp_model` (a DistributedDataParallel) that records its buckets in `store`.

    `store` is a list, this rank's own. For each backward pass the hook appends to `store` one list,
    and to that list one dict per bucket, in the order DDP calls the hook:
    {"index": bucket.index(), "numel": the number of elements of bucket.buffer(),
    "names": the names of bucket.parameters() as ddp_model.module.named_parameters() gives them,
    in the bucket's order, "is_last": bucket.is_last()}.
    A backward pass starts with the first bucket after a bucket whose is_last() was True.
    The hook averages the bucket over the ranks as DDP does, so the gradients do not change.
    It registers no other hook (no module or tensor hook), and returns None.
    """
    # BEGIN SOLUTION
    names = {parameter: name for name, parameter in ddp_model.module.named_parameters()}
    group = ddp_model.process_group

    def hook(state, bucket):
        if not store or store[-1][-1]["is_last"]:
            store.append([])
        store[-1].append({"index": bucket.index(), "numel": bucket.buffer().numel(),
                          "names": [names[parameter] for parameter in bucket.parameters()],
                          "is_last": bucket.is_last()})
        buffer = bucket.buffer().div_(state.size())
        return dist.all_reduce(buffer, group=state, async_op=True).get_future().then(lambda f: f.value()[0])

    ddp_model.register_comm_hook(group, hook)
    # END SOLUTION


# %%
check(record_buckets)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Build a dict from each parameter to its name once, before registering. In the hook, open a new
# list in `store` when `store` is empty or its last list ended with an `is_last` bucket, append
# the record, then do what `mean_allreduce_hook` does.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `ddp_model.module.named_parameters()` gives the names; `ddp_model.process_group` is the group;
# `ddp_model.register_comm_hook(state, hook)` calls `hook(state, bucket)` per bucket, with
# `bucket.index()`, `bucket.buffer()`, `bucket.parameters()` and `bucket.is_last()`.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# names = {parameter: name for name, parameter in ddp_model.module.named_parameters()}
#
# def hook(state, bucket):
#     if not store or store[-1][-1]["is_last"]:
#         store.append([])
#     store[-1].append({...})
#     return ...  # the averaging of mean_allreduce_hook, with `state` as the group
# ```
#
# </details>

# %% [markdown]
# Once `record_buckets` is done: two backward passes of a model with tiny buckets, as rank 0
# recorded them.

# %%
with try_it():
    def recorded(rank, group):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        ddp = DDP(model, process_group=group, bucket_cap_mb=0.0001)
        store = []
        record_buckets(ddp, store)
        for step in range(2):
            ddp(rank_batch(rank, step)[0]).sum().backward()
        return store

    store = two_ranks(recorded)[0]
    for step, records in enumerate(store):
        print(f"step {step}:", [(r["index"], r["numel"], r["names"], r["is_last"]) for r in records])
    assert [[record["names"] for record in records] for records in store] == [
        [["0.weight", "0.bias", "2.weight", "2.bias"]], [["2.bias", "2.weight", "0.bias"], ["0.weight"]]]

# %% [markdown]
# ## DDP's first backward pass, and the first bucket after it
#
# Once your recorder runs, the first pass above shows one bucket of all 58 elements (232 bytes,
# against a cap of 104), in the order of `model.parameters()`. Before the first backward pass DDP
# does not know the order in which the gradients will be ready, so with its defaults
# (`find_unused_parameters=False`, `static_graph=False`) it puts every parameter in one bucket,
# with no size limit. After that pass it rebuilds its buckets in the order the gradients became
# ready. The first rebuilt bucket, which holds the gradients ready first, has a cap of its own:
# `dist._DEFAULT_FIRST_BUCKET_BYTES` (1 MiB) when `bucket_cap_mb` is left at its default, and
# `bucket_cap_mb` itself when you pass it, even `bucket_cap_mb=25`, the default's value. Below, a
# model of three 512×512 layers (262,656 elements, about 1 MiB, per layer) with four settings.
# (The bucket cell at the top printed a second pass.)

# %%
def bucket_sizes(**options):
    """The elements of each bucket, per backward pass, in two passes of a 3 MiB model under DDP(**options)."""
    def run(rank, group):
        model = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512), nn.Linear(512, 512))
        ddp = DDP(model, process_group=group, **options)
        passes = []

        def sizes_hook(state, bucket):
            passes[-1].append(bucket.buffer().numel())
            return default_hooks.allreduce_hook(state, bucket)

        ddp.register_comm_hook(group, sizes_hook)
        for step in range(2):
            passes.append([])
            ddp(torch.randn(2, 512)).sum().backward()
        return passes
    return two_ranks(run)[0]


layer = 512 * 512 + 512
sizes = {options: bucket_sizes(**dict(options)) for options in
         [(), (("bucket_cap_mb", 0.0001),), (("bucket_cap_mb", 2),), (("bucket_cap_mb", 25),)]}
for options, passes in sizes.items():
    print(f"{str(dict(options)):26s}", " | ".join(
        f"pass {step + 1}: " + ", ".join(f"{4 * numel / 2 ** 20:.3f} MiB" for numel in numels)
        for step, numels in enumerate(passes)))
assert dist._DEFAULT_FIRST_BUCKET_BYTES == 1024 ** 2
assert all(passes[0] == [3 * layer] for passes in sizes.values())  # the first pass: one bucket, whatever the cap
assert sizes[()][1] == [layer, 2 * layer]  # the first bucket closes once it reaches 1 MiB; the next one's cap is 25 MiB
assert sizes[(("bucket_cap_mb", 0.0001),)][1] == [512, 512 * 512] * 3  # each parameter alone
assert sizes[(("bucket_cap_mb", 2),)][1] == [2 * layer, layer]  # the first bucket's cap is 2 MiB too
assert sizes[(("bucket_cap_mb", 25),)][1] == [3 * layer]  # 25 passed: 25 MiB for the first bucket too

# %% [markdown]
# ## Exercise 3: `topk_error_feedback_hook` · hard · about 25 min
#
# Top-k sparsification sends only the k largest gradient entries (by absolute value) and
# zeros instead of the rest. Alone it loses the small entries for ever; with **error feedback**
# each rank keeps what it did not send and adds it to its next gradient, so every entry is sent
# eventually (PowerSGD above does the same with its low-rank approximation). The rules, per rank
# and per bucket index, at every step:
#
# 1. `corrected = buffer + residual` (the residual is zero the first time, and when its size is
#    not the buffer's: DDP rebuilds its buckets after the first backward pass, and bucket 0 may
#    then be another, smaller bucket; torch's PowerSGD waits for `start_powerSGD_iter`, at least 2,
#    for the same reason);
# 2. `sent` = `corrected` with all but its `k` entries of largest `|corrected|` set to 0
#    (`k = min(state.k, corrected.numel())`);
# 3. the new residual is `corrected - sent`, kept for this bucket index's next step;
# 4. the bucket's new buffer is the mean of `sent` over the ranks.
#
# The residual must be added exactly once, and computed before anything changes `corrected` in
# place. `state` is a `TopKState`, one per rank, holding the group, `k` and a dict for the
# residuals: keep all the hook's state there.

# %%
class TopKState:
    """The state of topk_error_feedback_hook on one rank: register with
    `ddp_model.register_comm_hook(TopKState(process_group, k), topk_error_feedback_hook)`."""

    def __init__(self, process_group, k):
        self.process_group = process_group
        self.k = k
        self.residuals = {}  # bucket index -> what this rank has not sent yet


# %% tags=["exercise"]
# Exercise: topk_error_feedback_hook — write your code in this cell.
import torch
import torch.distributed as dist


def topk_error_feedback_hook(state, bucket):
    """A DDP comm hook: top-k sparsification with error feedback, per rank and per bucket index.

    `state` is this rank's TopKState (`state.process_group`, `state.k`, `state.residuals`); all the
    hook's state is kept there, none at module level.
    With `buffer = bucket.buffer()` and `residual = state.residuals.get(bucket.index())`
    (zeros when absent, and when its size differs from the buffer's: DDP rebuilds its buckets after the
    first backward pass, so an index can then name another bucket), the hook computes
    `corrected = buffer + residual`,
    then `sent`: `corrected` with every entry set to 0 except the k entries of largest absolute value,
    where `k = min(state.k, corrected.numel())`.
    It stores `state.residuals[bucket.index()] = corrected - sent` for the next step.
    It returns a torch.futures.Future whose value is the sum of `sent` over the ranks of
    `state.process_group`, divided by its size(): the bucket's new gradients.
    """
    # BEGIN SOLUTION
    buffer = bucket.buffer()  # this rank's gradients, flat
    residual = state.residuals.get(bucket.index())
    if residual is None or residual.shape != buffer.shape:
        residual = torch.zeros_like(buffer)
    corrected = buffer + residual
    k = min(state.k, corrected.numel())
    keep = corrected.abs().topk(k).indices
    sent = torch.zeros_like(corrected)
    sent[keep] = corrected[keep]
    state.residuals[bucket.index()] = corrected - sent
    sent.div_(state.process_group.size())
    work = dist.all_reduce(sent, group=state.process_group, async_op=True)
    return work.get_future().then(lambda future: future.value()[0])
    # END SOLUTION


# %%
check(topk_error_feedback_hook)

# %% [markdown] tags=["hints"]
# <details class="tip"><summary>Hint 1 of 3: the idea</summary>
#
# Work on a new tensor, `corrected`, never on the bucket's buffer in place. Choose the k entries
# by `corrected.abs()`, build `sent` from them, store `corrected - sent` under the bucket's index,
# and average `sent` as `mean_allreduce_hook` averages the buffer.
#
# </details>
#
# <details class="tip"><summary>Hint 2 of 3: the API</summary>
#
# `tensor.abs().topk(k).indices` are the positions of the k largest; `torch.zeros_like(t)` and
# `sent[indices] = corrected[indices]` build the sparse tensor; `state.residuals.get(index)` is
# `None` the first time.
#
# </details>
#
# <details class="tip"><summary>Hint 3 of 3: almost there</summary>
#
# ```python
# buffer = bucket.buffer()
# residual = state.residuals.get(bucket.index())
# if residual is None or residual.shape != buffer.shape:
#     residual = torch.zeros_like(buffer)
# corrected = buffer + residual
# keep = corrected.abs().topk(min(state.k, corrected.numel())).indices
# sent = torch.zeros_like(corrected)
# sent[keep] = corrected[keep]
# state.residuals[bucket.index()] = ...
# # then divide `sent` by the group's size, all-reduce it, return the future of the tensor
# ```
#
# </details>

# %% [markdown]
# Once `topk_error_feedback_hook` is done, this cell trains the regression of the fp16 cell
# for 60 steps with k = 8 of its 577 gradient entries per step (1.4%), with and without the error
# feedback (a copy of the hook whose residuals are thrown away), next to 60 steps without
# compression. With error feedback the loss ends between the two here; that is one seed of a toy
# problem again, not a measure of top-k against other methods.

# %%
assert sum(parameter.numel() for parameter in regression_model().parameters()) == 577
plain_60 = training_losses(None, steps=60)[0]
print(f"no compression:               loss {plain_60[0]:.3f} -> {plain_60[-1]:.3f}")

with try_it():
    class NoMemory(TopKState):
        @property
        def residuals(self):
            return {}

        @residuals.setter
        def residuals(self, value):
            pass

    topk_losses = training_losses(lambda group: (TopKState(group, 8), topk_error_feedback_hook), steps=60)[0]
    lossy = training_losses(lambda group: (NoMemory(group, 8), topk_error_feedback_hook), steps=60)[0]
    print(f"top-8 with error feedback:    loss {topk_losses[0]:.3f} -> {topk_losses[-1]:.3f}")
    print(f"top-8 without error feedback: loss {lossy[0]:.3f} -> {lossy[-1]:.3f}")
    assert plain_60[-1] < topk_losses[-1] < lossy[-1]

# %% [markdown]
# ## FSDP2 and real processes
#
# FSDP2's `fully_shard(module)` splits each parameter of `module` across the ranks: outside
# forward, `module.weight` is a `DTensor` whose local part is this rank's shard. Around the
# module's forward FSDP gathers the full parameters, and frees them again, with hooks of its own:
# a forward pre-hook registered with `prepend=True`, so that it runs first, and a forward hook
# registered without it (`FSDPState.init` in torch/distributed/fsdp/_fully_shard/_fsdp_state.py).
# Whether that forward hook frees them is `fully_shard`'s `reshard_after_forward`: left at `None`,
# it is true for every sharded module but the root, which keeps its full parameters until
# backward. What a hook of yours sees depends on where it runs next to FSDP's. The cell below
# shards `model[0]` and then the root `model`, and registers four hooks on `model[0]` after
# `fully_shard`: a forward pre-hook runs after FSDP's all-gather and sees the full weight, an
# ordinary `Parameter`, but one registered with `prepend=True` runs before it and sees the
# `DTensor`; a forward hook runs after FSDP has freed the full weight and sees the `DTensor`, but
# one registered with `prepend=True` sees the `Parameter`. A forward hook on the root sees its
# parameters (those of `model[2]`) full: the root frees nothing after forward. Code outside
# forward sees the `DTensor`, and the gradient after backward is a `DTensor` too.
#
# This section starts two real processes with torch's `mp.start_processes`, whose default start
# method, like `mp.spawn`'s, is **spawn** on every system. A spawned process starts a fresh Python
# and finds the function to run by *importing its module*. A function defined in a notebook
# lives in `__main__`, which the new process does not have:

# %%
def worker_in_main(rank):
    print("rank", rank)


pickled = pickle.dumps(worker_in_main)  # what a spawned process receives: a reference, __main__.worker_in_main
child = subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                       input=pickled, capture_output=True)
spawn_error = child.stderr.decode().strip().splitlines()[-1]
print(spawn_error)
assert child.returncode == 1 and spawn_error.startswith("AttributeError: Can't get attribute 'worker_in_main'")

# %% [markdown]
# That is the error a spawned rank prints when its target was defined in the notebook: the
# pickled target names `__main__.worker_in_main`, and the child's `__main__` is not the
# notebook. (Above, a plain new Python unpickles the target, which is what a spawned process
# does first.) The fix: put the worker in a module and import it. The course's is
# `hooked/distributed_workers.py`; each rank joins a gloo group over 127.0.0.1, shards a small
# model with `fully_shard`, and writes what its hooks saw to a file. The port is one the
# operating system has just found free, so two runs at once do not collide.

# %%
import torch.multiprocessing as mp

from hooked.distributed_workers import fsdp_shapes_worker


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


started = time.perf_counter()
with tempfile.TemporaryDirectory() as folder:
    mp.start_processes(fsdp_shapes_worker, args=(2, f"tcp://127.0.0.1:{free_port()}", folder), nprocs=2,
                       start_method="spawn")
    seen = [torch.load(f"{folder}/rank{rank}.pt") for rank in range(2)]
print(f"two spawned ranks in {time.perf_counter() - started:.1f} s")
for rank, record in enumerate(seen):
    print(f"rank {rank}: outside forward {record['outside'][:2]}, local shard {record['outside'][2]}; "
          f"gradient {record['grad']}")
    for key in ("prepended_pre_hook", "pre_hook", "prepended_forward_hook", "forward_hook", "root_forward_hook"):
        print(f"    {key:23s} {record[key]}")
assert all(record["outside"] == ((16, 8), "DTensor", (8, 8)) for record in seen)
assert all(record["pre_hook"] == record["prepended_forward_hook"] == ((16, 8), "Parameter") for record in seen)
assert all(record["prepended_pre_hook"] == record["forward_hook"] == ((16, 8), "DTensor") for record in seen)
assert all(record["root_forward_hook"] == ((4, 16), "Parameter") for record in seen)  # model[2], on the root
assert all(record["grad"] == ((16, 8), "DTensor") for record in seen)
assert seen[0]["pid"] != seen[1]["pid"]

# %% [markdown]
# **Python's own default** start method, which `multiprocessing.Process` and `Pool` use and
# `mp.get_start_method()` reports (torch's `mp` re-exports Python's `multiprocessing`), is another
# matter: `fork` on Linux up to Python 3.13, which copies the notebook's process and so finds
# `__main__`'s functions; `spawn` on macOS and Windows. Torch's `mp.spawn` and `mp.start_processes`
# do not use it: their default is spawn on every system, so keep workers importable.

# %%
print("Python's default start method here:", mp.get_start_method(allow_none=False))
print("mp.start_processes' default:", inspect.signature(mp.start_processes).parameters["start_method"].default)
assert mp.get_start_method is multiprocessing.get_start_method
assert inspect.signature(mp.start_processes).parameters["start_method"].default == "spawn"
assert inspect.signature(mp.spawn).parameters["start_method"].default == "spawn"

# %% [markdown]
#
# **On several machines**, `torchrun` starts the processes and sets `RANK`, `WORLD_SIZE`,
# `MASTER_ADDR` and `MASTER_PORT` for each (PyTorch's documentation of `torchrun`); the worker
# calls `init_process_group("gloo")` (or `"nccl"` on GPUs) and the hooks work unchanged. For a
# training script `train.py`:
#
# ```bash
# torchrun --standalone --nproc-per-node 2 train.py                       # one machine
# torchrun --nnodes 2 --node-rank 0 --nproc-per-node 4 \
#          --master-addr 10.0.0.1 --master-port 29500 train.py            # on the first machine
# ```
#
# (and `--node-rank 1` on the second). This notebook does not run these commands.
