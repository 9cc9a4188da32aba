"""Canaries of lesson 13 (hooks in distributed training): DDP's buckets and when its comm hook runs, what a
comm hook must be and return, what torch's own hooks lose, and what gloo allows. The ranks run on threads
(hooked/two_ranks.py), as the lesson's cells and checks do; what FSDP2's hooks see needs two spawned processes
(seconds each) and has no canary (the lesson's cell asserts it). A comm hook that returns None crashes its process,
so that canary runs it in a new Python, one rank alone."""

import functools
import inspect
import multiprocessing
import os
import signal
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from canary_pins import canary, described, error_of
from hooked.two_ranks import run_on_ranks

_BUCKETS = ("13", "How DDP averages gradients: buckets")
_RETURNS = ("13", "What a comm hook must return")
_FIRST_PASS = ("13", "DDP's first backward pass, and the first bucket after it")
_TORCH_HOOKS = ("13", "Torch's own hooks: fp16 compression and PowerSGD")


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
    buckets and the events in order; what register_comm_hook returned; and DDP's bucket_bytes_cap."""
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
        return passes, returned, ddp.bucket_bytes_cap
    return _two_ranks(run)[0]


@canary("register_comm_hook returns None (no handle: DDP keeps one comm hook for good)", _BUCKETS)
def test_register_comm_hook_returns_none(pin):
    returned = _two_backward_passes()[1]
    pin.holds(returned is None, f"register_comm_hook returned {returned!r}")


@canary("after the first backward pass DDP's buckets follow the order gradients become ready: bucket 0 holds the "
        "last layer's parameters; bucket_cap_mb=0.0001 is a cap of 104 bytes, and a bucket takes parameters until "
        "its size reaches the cap, never splitting one, so buckets exceed it (104, 256 and 160 bytes); only the "
        "last bucket's is_last() is true",
        _BUCKETS)
def test_rebuilt_buckets_follow_the_order_gradients_become_ready(pin):
    cap = _two_backward_passes()[2]
    pin.holds(cap == 104, f"DDP(..., bucket_cap_mb=0.0001).bucket_bytes_cap is {cap}")
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


@canary("with DDP's defaults (find_unused_parameters=False, static_graph=False) the first backward pass puts every "
        "parameter in one bucket with no size limit (130 elements against a cap of 104 bytes), in the order of "
        "model.parameters(), and then DDP rebuilds its buckets in the order the gradients became ready, so a bucket "
        "index can name another, smaller bucket from the second pass on",
        _FIRST_PASS, ("13", "Exercise 3: `topk_error_feedback_hook`"))
def test_the_first_backward_pass_uses_one_bucket_in_parameter_order(pin):
    first, second = (buckets for buckets, _ in _two_backward_passes()[0])
    # all 130 elements, (4*8 + 8) + (8*8 + 8) + (8*2 + 2), in one bucket
    pin.holds(first == [(0, 130, ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"], True)],
              f"the first pass's buckets (index, elements, parameters, is_last): {first}")
    pin.holds(len(second) == 3 and second[0][1] < first[0][1], f"the second pass's buckets: {second}")


@canary("the first bucket DDP rebuilds after the first pass is capped at dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB) "
        "when bucket_cap_mb is left at its default, and at bucket_cap_mb when it is passed, even 25: a model of three "
        "512x512 layers gives buckets of 1 and 2 layers by default, one of 3 layers with bucket_cap_mb=25, and one of "
        "3 layers in the first pass either way",
        _FIRST_PASS)
def test_the_first_rebuilt_bucket_is_capped_at_1_mib_only_by_default(pin):
    def sizes(**options):
        def run(rank, group):
            ddp = DDP(nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512), nn.Linear(512, 512)),
                      process_group=group, **options)
            passes = []

            def hook(state, bucket):
                passes[-1].append(bucket.buffer().numel())
                return default_hooks.allreduce_hook(state, bucket)

            ddp.register_comm_hook(group, hook)
            for step in range(2):
                passes.append([])
                ddp(torch.randn(2, 512)).sum().backward()
            return passes
        return _two_ranks(run)[0]

    layer = 512 * 512 + 512
    pin.holds(dist._DEFAULT_FIRST_BUCKET_BYTES == 1024 ** 2,
              f"dist._DEFAULT_FIRST_BUCKET_BYTES is {dist._DEFAULT_FIRST_BUCKET_BYTES}")
    default, passed_25 = sizes(), sizes(bucket_cap_mb=25)
    pin.holds(default == [[3 * layer], [layer, 2 * layer]], f"default cap, elements per bucket per pass: {default}")
    pin.holds(passed_25 == [[3 * layer], [3 * layer]], f"bucket_cap_mb=25, elements per bucket per pass: {passed_25}")


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


@canary("DDP reads a comm hook's signature: a second parameter not named `bucket` raises KeyError: 'bucket' (the "
        "lesson prints it as \"register_comm_hook: KeyError: 'bucket'\")",
        _RETURNS)
def test_a_comm_hook_second_parameter_must_be_named_bucket(pin):
    error = _error_of_registering_and_stepping(_second_parameter_named_b)
    pin.holds(isinstance(error, KeyError) and str(error) == "'bucket'", described(error))


_RETURNS_NONE = """
import torch, torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
ddp = DDP(nn.Linear(2, 2))

def hook(state, bucket):
    future = torch.futures.Future()
    future.set_result(bucket.buffer())

ddp.register_comm_hook(None, hook)
print("backward", flush=True)
ddp(torch.randn(3, 2)).sum().backward()
print("backward returned", flush=True)
"""


@canary("a comm hook that returns None (no `return`) crashes the whole process in backward, a segmentation fault "
        "on torch 2.13 with nothing to catch (the checks stop a hook's None before DDP sees it)",
        _RETURNS)
def test_a_comm_hook_returning_none_crashes_the_process(pin):
    child = subprocess.run([sys.executable, "-c", _RETURNS_NONE], capture_output=True, text=True, timeout=300)
    crashed = child.returncode == -signal.SIGSEGV if os.name == "posix" else child.returncode != 0
    pin.holds(child.stdout == "backward\n" and crashed,
              f"the process printed {child.stdout!r} and ended with return code {child.returncode}; "
              f"its stderr ends {child.stderr[-300:]!r}")


def _registration_error(hook):
    """On rank 0: what registering `hook` on a DDP model raised, or None."""
    def run(rank, group):
        ddp = DDP(nn.Linear(2, 2), process_group=group)
        try:
            ddp.register_comm_hook(group, hook)
        except Exception as error:
            return error
        return None
    return _two_ranks(run)[0]


def _accepts_bf16():
    """DDP's own test of bf16_compress_hook (DistributedDataParallel._check_comm_hook): how torch was built."""
    return (bool(torch.version.cuda or torch.version.hip) and dist.is_nccl_available()
            and torch.cuda.nccl.version() >= (2, 10) or dist.is_xccl_available() and torch.xpu.is_available())


@canary("bf16_compress_hook is refused when it is registered by a CPU build of torch, with TypeError \"BF16 all "
        "reduce communication hook required CUDA 11+ and NCCL 2.10+\" (the lesson prints it as \"register_comm_hook: "
        "TypeError: BF16 all reduce communication hook required CUDA 11+ and NCCL 2.10+\"; DDP tests the build's CUDA and NCCL, not the "
        "device: a CUDA build with NCCL accepts it); fp16_compress_hook works on gloo",
        _RETURNS, _TORCH_HOOKS)
def test_bf16_compress_hook_is_refused_by_a_cpu_build_and_fp16_is_not(pin):
    error = _registration_error(default_hooks.bf16_compress_hook)
    if _accepts_bf16():
        pin.holds(error is None, f"a build with CUDA {torch.version.cuda} and NCCL refused it: {described(error)}")
    else:
        pin.holds(isinstance(error, TypeError)
                  and str(error).startswith("BF16 all reduce communication hook required CUDA 11+ and NCCL 2.10+"),
                  f"a CPU build, registering: {described(error)}")
    error = _error_of_registering_and_stepping(default_hooks.fp16_compress_hook)
    pin.holds(error is None, f"fp16_compress_hook on gloo: {described(error)}")


class _FixedGradient(nn.Module):
    def __init__(self, wanted):
        super().__init__()
        self.wanted = wanted
        self.weight = nn.Parameter(torch.zeros(len(wanted)))

    def forward(self):
        return (self.weight * self.wanted).sum()


def _mean_gradient(hook, wanted):
    """The gradient after one backward pass with `hook` registered, both ranks' own gradient being `wanted`."""
    def run(rank, group):
        ddp = DDP(_FixedGradient(wanted), process_group=group)
        ddp.register_comm_hook(group, hook)
        ddp().backward()
        return ddp.module.weight.grad.clone()
    return _two_ranks(run)[0]


def _bf16_under_another_name(state, bucket):
    return default_hooks.bf16_compress_hook(state, bucket)


@canary("fp16_compress_hook casts the bucket to float16 before dividing it by the number of ranks: on two ranks the "
        "gradient [1e-8, 1e-6, 1e5, 1] becomes [0, 9.54e-7 (2**-20), inf, 1]; bf16_compress_hook under another name "
        "runs on gloo and keeps the range, within 2**-8 of each value",
        _TORCH_HOOKS)
def test_fp16_compress_hook_underflows_and_overflows(pin):
    wanted = torch.tensor([1e-8, 1e-6, 1e5, 1.0])
    fp16 = _mean_gradient(default_hooks.fp16_compress_hook, wanted)
    pin.holds(torch.equal(fp16, torch.tensor([0.0, 2.0 ** -20, float("inf"), 1.0])), f"fp16_compress_hook gave {fp16}")
    bf16 = _mean_gradient(_bf16_under_another_name, wanted)
    pin.holds(bool(((bf16 - wanted).abs() / wanted < 2.0 ** -8).all()), f"bf16_compress_hook, renamed, gave {bf16}")


@canary("PowerSGD compresses only the gradients where a rank-1 approximation sends more than min_compression_rate "
        "(2) times fewer numbers: of a Linear(16, 32), ReLU, Linear(32, 1) model's 577, it sends 113 per step (the first "
        "weight as 48, its bias and the last layer whole), and nothing is compressed before start_powerSGD_iter",
        _TORCH_HOOKS)
def test_power_sgd_compresses_only_the_matrices_where_it_pays(pin):
    def run(rank, group):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
        ddp = DDP(model, process_group=group)
        state = powerSGD_hook.PowerSGDState(process_group=group, matrix_approximation_rank=1, start_powerSGD_iter=2)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
        stats = []
        for step in range(3):
            ddp(torch.randn(4, 16)).sum().backward()
            stats.append(state.compression_stats()[1:])
        return stats
    stats = _two_ranks(run)[0]
    pin.holds(stats == [(0, 0), (0, 0), (577, 113)], f"(numbers before, numbers sent) after each step: {stats}")


@canary("PowerSGD's state refuses start_powerSGD_iter=1 with its default error feedback: ValueError \"Expect "
        "`start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled\"",
        _TORCH_HOOKS)
def test_power_sgd_refuses_to_start_before_the_rebuilt_buckets(pin):
    error = error_of(lambda: powerSGD_hook.PowerSGDState(process_group=None, start_powerSGD_iter=1))
    pin.holds(isinstance(error, ValueError) and str(error).startswith(
        "Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is enabled"), described(error))


@canary("the ranks here (threads of one process, hooked/two_ranks.py) have no default process group: "
        "dist.get_world_size() and dist.all_reduce(tensor) without group= raise ValueError \"Default process group "
        "has not been initialized\"",
        ("13", "What a comm hook must return"))
def test_the_ranks_have_no_default_process_group(pin):
    def run(rank, group):
        return [error_of(dist.get_world_size), error_of(lambda: dist.all_reduce(torch.ones(1)))]
    errors = _two_ranks(run)[0]
    pin.holds(all(isinstance(error, ValueError)
                  and str(error).startswith("Default process group has not been initialized") for error in errors),
              f"without a group: {[described(error) for error in errors]}")


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


@canary("torch's mp.start_processes and mp.spawn default to the spawn start method on every system; "
        "mp.get_start_method is Python's multiprocessing.get_start_method (Python's default, fork on Linux up to 3.13)",
        ("13", "FSDP2 and real processes"))
def test_torch_multiprocessing_defaults_to_spawn(pin):
    defaults = [inspect.signature(function).parameters["start_method"].default
                for function in (mp.start_processes, mp.spawn)]
    pin.holds(defaults == ["spawn", "spawn"], f"the start_method defaults of start_processes and spawn: {defaults}")
    pin.holds(mp.get_start_method is multiprocessing.get_start_method,
              f"torch.multiprocessing.get_start_method is {mp.get_start_method!r}")


_PICKLE_A_FUNCTION_OF_MAIN = "import pickle, sys\ndef worker_in_main(rank):\n    pass\nsys.stdout.buffer.write(pickle.dumps(worker_in_main))"
_UNPICKLE = "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"


@canary("a spawned process finds its target by importing the target's module, so a function defined in __main__ "
        "(a notebook) cannot be unpickled in a new Python: AttributeError: Can't get attribute 'worker_in_main'",
        ("13", "FSDP2 and real processes"))
def test_a_function_of_main_cannot_be_unpickled_in_a_new_python(pin):
    pickled = subprocess.run([sys.executable, "-c", _PICKLE_A_FUNCTION_OF_MAIN], capture_output=True, check=True).stdout
    child = subprocess.run([sys.executable, "-c", _UNPICKLE], input=pickled, capture_output=True)
    lines = child.stderr.decode().strip().splitlines()
    last_line = lines[-1] if lines else ""
    pin.holds(child.returncode == 1 and last_line.startswith("AttributeError: Can't get attribute 'worker_in_main'"),
              f"exit code {child.returncode}, last line {last_line!r}")


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
