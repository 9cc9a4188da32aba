"""Canaries of lesson 13 (hooks in distributed training): DDP's buckets and when its comm hook runs, what a
comm hook must be and return, and what gloo allows. The ranks run on threads (hooked/two_ranks.py), as the
lesson's cells and checks do; FSDP2's section needs two spawned processes (seconds each) and has no canary."""

import functools

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from canary_pins import canary, described
from hooked.two_ranks import run_on_ranks

_BUCKETS = ("13", "How DDP averages gradients: buckets")
_RETURNS = ("13", "What a comm hook must return")


def _two_ranks(function):
    """function(rank, group) on ranks 0 and 1 (threads); their results, or raise what a rank raised."""
    outcomes = run_on_ranks(function, deadline=30)
    for outcome in outcomes:
        if outcome.stuck:
            raise TimeoutError(f"rank {outcome.rank} did not finish within 30 s")
        if outcome.error is not None:
            raise outcome.error
    return [outcome.value for outcome in outcomes]


def _bucket_record(bucket, names):
    return bucket.index(), bucket.buffer().numel(), [names[p] for p in bucket.parameters()], bucket.is_last()


@functools.cache
def _two_backward_passes():
    """Rank 0's record of the lesson's bucket cell: a 3-layer model with tiny buckets, a comm hook that records
    each bucket, tensor hooks on the weights and full backward hooks on layers 2 and 4; per backward pass the
    buckets and the events in order; and what register_comm_hook returned."""
    def run(rank, group):
        torch.manual_seed(0)  # the same start on both ranks is not needed: DDP broadcasts rank 0's weights
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
        names = {parameter: name for name, parameter in model.named_parameters()}
        ddp = DDP(model, process_group=group, bucket_cap_mb=0.0001)
        passes = []

        def recording_hook(state, bucket):
            passes[-1][0].append(_bucket_record(bucket, names))
            passes[-1][1].append(f"comm hook, bucket {bucket.index()}")
            return default_hooks.allreduce_hook(state, bucket)

        returned = ddp.register_comm_hook(group, recording_hook)
        for index in (0, 2, 4):
            model[index].weight.register_hook(lambda grad, index=index: passes[-1][1].append(f"tensor hook {index}.weight"))
        for index in (2, 4):
            model[index].register_full_backward_hook(lambda *args, index=index: passes[-1][1].append(f"module hook {index}"))
        for step in range(2):
            passes.append(([], []))
            ddp(torch.randn(3, 4)).sum().backward()
        return passes, returned
    return _two_ranks(run)[0]


@canary("register_comm_hook returns None (no handle: DDP keeps one comm hook for good)", _BUCKETS)
def test_register_comm_hook_returns_none(pin):
    returned = _two_backward_passes()[1]
    pin.holds(returned is None, f"register_comm_hook returned {returned!r}")


@canary("after the first backward pass DDP's buckets follow the order gradients become ready: bucket 0 holds the "
        "last layer's parameters, a bucket takes parameters until it is full (26 elements with bucket_cap_mb=0.0001), "
        "a parameter is never split, and only the last bucket's is_last() is true",
        _BUCKETS)
def test_rebuilt_buckets_follow_the_order_gradients_become_ready(pin):
    buckets = _two_backward_passes()[0][1][0]
    pin.holds(buckets == [(0, 26, ["4.bias", "4.weight", "2.bias"], False), (1, 64, ["2.weight"], False),
                          (2, 40, ["0.bias", "0.weight"], True)],
              f"the second pass's buckets (index, elements, parameters, is_last): {buckets}")


@canary("a bucket's comm hook runs as soon as every gradient in it is ready: after the tensor hooks of its "
        "parameters, in the middle of backward, before the module hooks of earlier layers",
        _BUCKETS)
def test_a_comm_hook_runs_between_tensor_hooks_and_earlier_module_hooks(pin):
    events = _two_backward_passes()[0][1][1]
    pin.holds(events == ["tensor hook 4.weight", "module hook 4", "comm hook, bucket 0", "tensor hook 2.weight",
                         "comm hook, bucket 1", "module hook 2", "tensor hook 0.weight", "comm hook, bucket 2"],
              f"the second pass's events: {events}")


@canary("DDP's first backward pass uses one first bucket of up to dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB) whatever "
        "bucket_cap_mb says, in the order of model.parameters(), and then rebuilds its buckets in the order the "
        "gradients became ready, so a bucket index can name another, smaller bucket from the second pass on",
        ("13", "Exercise 2: `record_buckets`"), ("13", "Exercise 3: `topk_error_feedback_hook`"))
def test_the_first_backward_pass_uses_one_bucket_in_parameter_order(pin):
    first, second = (buckets for buckets, _ in _two_backward_passes()[0])
    pin.holds(dist._DEFAULT_FIRST_BUCKET_BYTES == 1024 ** 2,
              f"dist._DEFAULT_FIRST_BUCKET_BYTES is {dist._DEFAULT_FIRST_BUCKET_BYTES}")
    # all 130 elements, (4*8 + 8) + (8*8 + 8) + (8*2 + 2), in one bucket
    pin.holds(first == [(0, 130, ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"], True)],
              f"the first pass's buckets (index, elements, parameters, is_last): {first}")
    pin.holds(len(second) == 3 and second[0][1] < first[0][1], f"the second pass's buckets: {second}")


def _error_of_registering_and_stepping(hook):
    """On rank 0: "Type: text" of what registering `hook` on a DDP model and one backward pass raised, or None."""
    def run(rank, group):
        torch.manual_seed(0)
        ddp = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), process_group=group)
        try:
            ddp.register_comm_hook(group, hook)
            ddp(torch.randn(3, 4)).sum().backward()
        except Exception as error:
            return error
        return None
    return _two_ranks(run)[0]


def _returns_the_tensor(state, bucket):
    return bucket.buffer()


def _second_parameter_named_b(state, b):
    return default_hooks.allreduce_hook(state, b)


@canary("a comm hook that returns the bucket's tensor instead of a Future makes backward raise RuntimeError "
        "ending \"DDP communication hook's callback must return a torch.futures.Future object, but got torch.Tensor\"",
        _RETURNS)
def test_a_comm_hook_returning_a_tensor_raises_runtime_error(pin):
    error = _error_of_registering_and_stepping(_returns_the_tensor)
    pin.holds(isinstance(error, RuntimeError) and str(error).endswith(
        "DDP communication hook's callback must return a torch.futures.Future object, but got torch.Tensor"),
        described(error))


@canary("DDP reads a comm hook's signature: a second parameter not named `bucket` raises KeyError: 'bucket'",
        _RETURNS)
def test_a_comm_hook_second_parameter_must_be_named_bucket(pin):
    error = _error_of_registering_and_stepping(_second_parameter_named_b)
    pin.holds(isinstance(error, KeyError) and str(error) == "'bucket'", described(error))


@canary("bf16_compress_hook is refused when it is registered on CPU and gloo, with TypeError \"BF16 all reduce "
        "communication hook required CUDA 11+ and NCCL 2.10+\"; fp16_compress_hook works on gloo",
        _RETURNS, ("13", "Torch's own hooks: fp16 compression and PowerSGD"))
def test_bf16_compress_hook_is_refused_on_gloo_and_fp16_is_not(pin):
    error = _error_of_registering_and_stepping(default_hooks.bf16_compress_hook)
    pin.holds(isinstance(error, TypeError)
              and str(error).startswith("BF16 all reduce communication hook required CUDA 11+ and NCCL 2.10+"),
              described(error))
    error = _error_of_registering_and_stepping(default_hooks.fp16_compress_hook)
    pin.holds(error is None, f"fp16_compress_hook on gloo: {described(error)}")


@canary("gloo has ReduceOp.AVG on this torch, so a mean_allreduce_hook may average with it (the catalogue's right "
        "solution 'ReduceOp.AVG, which gloo has on this torch')",
        ("13", "Exercise 1: `mean_allreduce_hook`"))
def test_gloo_averages_with_reduce_op_avg(pin):
    def run(rank, group):
        value = torch.tensor([float(rank), 10.0 * rank])
        dist.all_reduce(value, op=dist.ReduceOp.AVG, group=group)
        return value.tolist()
    results = _two_ranks(run)
    pin.holds(results == [[0.5, 5.0], [0.5, 5.0]], f"all_reduce with ReduceOp.AVG gave {results}")


@canary("under DDP each rank runs the whole model on its own batch: a forward hook on a layer of one rank sees that "
        "rank's examples only, never both ranks'",
        ("13", "A hook under DDP sees its own rank's data only"))
def test_a_forward_hook_under_ddp_sees_its_own_ranks_batch_only(pin):
    def run(rank, group):
        torch.manual_seed(0)
        ddp = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), process_group=group)
        seen = []
        ddp.module[0].register_forward_hook(lambda module, args, output: seen.append(args[0].clone()))
        inputs = torch.randn(3, 4, generator=torch.Generator().manual_seed(rank))
        ddp(inputs).sum().backward()
        return seen, inputs
    (seen0, inputs0), (seen1, inputs1) = _two_ranks(run)
    pin.holds(len(seen0) == len(seen1) == 1, f"the hook fired {len(seen0)} and {len(seen1)} times")
    pin.holds(torch.equal(seen0[0], inputs0) and torch.equal(seen1[0], inputs1),
              f"the hooks saw shapes {tuple(seen0[0].shape)} and {tuple(seen1[0].shape)}, not their rank's batch")
