"""Checks for lesson 13, hooks in distributed training. Every check trains fresh small models with
DDP on real gloo process groups, one rank per thread (hooked.two_ranks), and compares what the
learner's comm hook produced with a reference computed by hand, one rank at a time, without DDP."""

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from hooked.checks.check_api import LearnerCodeRaised, calling, check_of, fail
from hooked.checks import all_reduce_race
from hooked.checks.hooks_left import registered_hooks
from hooked.checks.tensors import describe
from hooked.checks.torch_error_hints import fail_with_hint
from hooked.feedback.learner_tracebacks import learner_raised_not_implemented
from hooked.two_ranks import EXTRA_WAIT, GLOO_TIMEOUT, run_on_ranks

TINY_BUCKETS = 0.0001  # bucket_cap_mb of 104 bytes (int(0.0001 * 2**20)): several buckets for a small model
_GLOO_WAITING = ("Timed out waiting", "Connection closed by peer", "Connection reset by peer")


def _new_model():
    # 83 parameters; one bucket in the first backward pass (DDP's first pass has one bucket, whatever the
    # cap), then with TINY_BUCKETS bucket 0 = 2.bias, 2.weight (27 elements: a bucket closes once it
    # reaches 104 bytes) and bucket 1 = 0.bias, 0.weight (56)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))


class _ScaledLayers(nn.Sequential):
    """The 2-layer model with a parameter on the root module itself, `scale`: named_modules() gives
    the root the prefix "", so a join prefix + "." + name gives ".scale". And a buffer, `shift`, so
    that state_dict()'s keys are not the parameters' names. With TINY_BUCKETS, one bucket in the
    first backward pass, then scale, 2.bias, 2.weight (30 elements) and 0.bias, 0.weight (56)."""

    def __init__(self):
        super().__init__(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
        self.scale = nn.Parameter(torch.ones(3))
        self.register_buffer("shift", torch.zeros(3))

    def forward(self, inputs):
        return super().forward(inputs) * self.scale + self.shift


_STARTS = {}  # build function -> its fixed start (a state dict)


def _model(build=_new_model):
    """A fresh model from `build` with the checks' fixed start for it. The start is drawn from a
    generator of its own: ranks building models on threads at once would draw from torch's one
    global generator in turn and start from weights that differ from run to run."""
    if build not in _STARTS:
        generator = torch.Generator().manual_seed(0)
        _STARTS[build] = {name: torch.randn(value.shape, generator=generator) * 0.4
                          for name, value in build().state_dict().items()}
    model = build()
    model.load_state_dict(_STARTS[build])
    return model


def _batch(rank, step):
    generator = torch.Generator().manual_seed(1000 + 10 * step + rank)
    return torch.randn(4, 6, generator=generator), torch.randn(4, 3, generator=generator)


def _local_gradients(model, rank, step):
    """This rank's own gradients (no averaging), by plain autograd on a copy."""
    _backward_pass(model, model, rank, step)
    return {name: parameter.grad.clone() for name, parameter in model.named_parameters()}


class _HookCalls:
    """Wraps a comm hook: records each call's bucket (index, numel, parameter names, is_last) and
    what the hook returned; keeps the futures so that the harness can fail one never completed.
    Anything but a Future the hook returns is stopped here, before DDP sees it: torch 2.13's DDP
    crashes the whole process (a segmentation fault) when a comm hook returns None."""

    def __init__(self, names, pending):
        self.names = names
        self.pending = pending
        self.calls = []  # per call: dict(index, numel, names, is_last, returned)

    def wrap(self, hook, ddp):
        """`hook` wrapped, for `ddp.register_comm_hook`. DDP sees only the wrapper, so its tests of
        the hook are made here, as register_comm_hook makes them: the signature (a parameter named
        `bucket`, the annotations), bf16_compress_hook by name, and the __qualname__ it logs."""
        ddp._check_comm_hook(hook)
        hook.__qualname__  # noqa: B018 (register_comm_hook reads it: an object without one raises AttributeError)

        def checked_hook(state, bucket):
            call = {"index": bucket.index(), "numel": bucket.buffer().numel(),
                    "names": [self.names[parameter] for parameter in bucket.parameters()],
                    "is_last": bucket.is_last(), "buffer": bucket.buffer().clone()}
            self.calls.append(call)
            returned = hook(state, bucket)
            call["returned"] = returned
            if not isinstance(returned, torch._C.Future):
                raise TypeError(f"the comm hook returned {type(returned).__name__}, not a torch.futures.Future")
            self.pending.append(returned)

            def value_checked(future):
                value = future.value()
                if not isinstance(value, torch.Tensor):
                    call["value"] = value
                    return call["buffer"]  # let DDP finish; the check fails on call["value"]
                return value
            return returned.then(value_checked)
        return checked_hook


def _run(rank_function, world_size=2):
    """run_on_ranks with the futures list; returns (outcomes, pending futures)."""
    pending = []

    def on_rank(rank, group):
        all_reduce_race.as_rank(rank)
        return rank_function(rank, group, pending)

    with all_reduce_race.exposed(world_size, GLOO_TIMEOUT):
        return run_on_ranks(on_rank, world_size=world_size, pending_futures=pending)


# The named mistakes of any comm hook the checks run: what it returned, a rank that hung or whose collective
# waited in vain, and the errors a comm hook typically raises.
COMM_HOOK_MISTAKES = {
    "returned-none": "returns None from the comm hook instead of a Future (a missing return, or set_result's None)",
    "returned-tensor": "returns the tensor itself from the comm hook instead of a Future of it",
    "not-a-future": "returns something other than a torch.futures.Future from the comm hook",
    "future-of-a-list": "returns the collective's future itself, whose value is a list, not a tensor",
    "future-not-of-a-tensor": "returns a Future whose value is something other than a tensor",
    "rank-stuck": "hangs a rank: a Future never completed, a loop, or a collective started on one rank only",
    "bucket-parameter-misnamed": "names the comm hook's second parameter something other than `bucket`",
    "collectives-differ-by-rank": "starts different collectives on different ranks, so a peer waits in vain",
    "default-group-used": "calls torch.distributed without group=, which looks for a default process group",
    "all-reduce-not-async": "uses what dist.all_reduce returns without async_op=True (None)",
    "none-as-group": "uses a state of None as the group (torch's hooks' dist.group.WORLD, which is None here)",
    "method-not-called": "uses a method (size, buffer, index, is_last) without calling it",
    "wrong-annotation": "annotates the comm hook with types register_comm_hook refuses",
}


def _returned_problem(calls, what):
    """(failure message, slug) when the hook returned something other than a Future of a tensor; else None."""
    for call in calls:
        returned = call.get("returned")
        if "returned" in call and not isinstance(returned, torch._C.Future):
            if returned is None:
                return (f"{what} returned None for bucket {call['index']}: a `return` is missing, or it returns what a "
                        "call that gives None gave (future.set_result(...) returns None: set the result, then return "
                        "the future). A comm hook must return a torch.futures.Future whose value is the bucket's new "
                        "tensor. On torch 2.13 DDP crashes the whole process (a segmentation fault) when a comm hook "
                        "returns None; the check stopped it before DDP saw it.", "returned-none")
            if isinstance(returned, torch.Tensor):
                return (f"{what} returned a tensor ({describe(returned)}) for bucket {call['index']}; a comm hook must "
                        "return a torch.futures.Future whose value is the tensor: DDP waits on it. Start the all_reduce "
                        "with async_op=True and chain .then() on its future, with a callback that takes the tensor out "
                        "of the future's list (value()[0]).", "returned-tensor")
            return (f"{what} returned {describe(returned)} for bucket {call['index']}; a comm hook must return a "
                    "torch.futures.Future whose value is the bucket's new tensor.", "not-a-future")
        if "value" in call:
            value = call["value"]
            list_hint = (" It is the list that the collective's future holds: chain .then() on that future, with a "
                         "callback that takes the tensor out of the list (value()[0])."
                         if isinstance(value, (list, tuple)) else "")
            return (f"{what} returned a Future whose value is {describe(value)} for bucket {call['index']}; its value "
                    f"must be a tensor, the bucket's new gradients.{list_hint}",
                    "future-of-a-list" if list_hint else "future-not-of-a-tensor")
    return None


def _judge_outcomes(outcomes, calls_per_rank, what, doing, group, hint_for_rank=lambda rank: None):
    """Fail on what went wrong on a rank: a non-Future return, a rank stuck, an error (with
    hint_for_rank(rank) after it, when that gives a hint, or what a missing default group means;
    `group` names the group the learner's code is given)."""
    for calls in calls_per_rank:
        problem = _returned_problem(calls, what)
        if problem:
            fail(*problem)
    stuck = [outcome.rank for outcome in outcomes if outcome.stuck]
    if stuck:
        fail(f"While {doing}, rank{'s' if len(stuck) > 1 else ''} {', '.join(map(str, stuck))} did not finish within "
             f"{GLOO_TIMEOUT + EXTRA_WAIT:g} s and {'were' if len(stuck) > 1 else 'was'} stopped. A comm hook hangs when "
             "it returns a Future that is never completed (torch.futures.Future() made by hand), when it loops, or "
             "when it starts a collective on one rank only: every rank must make the same collective calls.",
             "rank-stuck")
    errors = [outcome for outcome in outcomes if outcome.error is not None]
    if not errors:
        return
    # A rank that raised an error of its own comes first; its peer then timed out waiting for it.
    own = [outcome for outcome in errors if not any(text in str(outcome.error) for text in _GLOO_WAITING)]
    if own:
        first = own[0]
        if isinstance(first.error, KeyError) and str(first.error) == "'bucket'":
            fail(f"Registering {what} with register_comm_hook raised KeyError: 'bucket'. DDP reads the hook's "
                 "signature: name its parameters (process_group, bucket), or (state, bucket).",
                 "bucket-parameter-misnamed")
        found = hint_for_rank(first.rank) or _error_hint(first.error, group)
        if found:
            slug, hint = found
            fail_with_hint(f"{doing} (on rank {first.rank})", first.error, hint, slug)
        with calling(f"{doing} (on rank {first.rank})"):
            raise first.error
    fail(f"While {doing}, rank {errors[0].rank}'s collective gave up waiting for the other rank "
         f"({str(errors[0].error).splitlines()[0][:160]}). Every rank must start the same collectives, in the same "
         "order: a hook that all-reduces on one rank only, or skips a bucket on one rank, leaves its peer waiting.",
         "collectives-differ-by-rank")


def _error_hint(error, group):
    """(slug, what it means) of an error the learner's hook raised, for the errors a comm hook typically
    meets; None for others. `group` names the group the hook is given."""
    text = str(error)
    if text.startswith("Collective mismatch:"):
        return "collectives-differ-by-rank", ("The ranks' collectives parted ways: each rank must all-reduce the same "
                                              "buckets, of the same size, in the same order.")
    if "Default process group has not been initialized" in text:
        return "default-group-used", (
            "The ranks here have no default process group (nothing called dist.init_process_group), and "
            "torch.distributed's calls without a group look for it and raise: dist.all_reduce(tensor) without "
            f"group=, dist.get_world_size(). Use the group the hook is given, {group}: dist.all_reduce(tensor, "
            "group=..., async_op=True), and the group's .size().")
    if isinstance(error, AttributeError) and text.startswith("'NoneType' object has no attribute") and any(
            name in text for name in ("'get_future'", "'wait'", "'then'")):
        return "all-reduce-not-async", (
            "dist.all_reduce returns None unless it is started with async_op=True (without it, it reduces "
            "before it returns and there is no work object): dist.all_reduce(tensor, group=..., async_op=True)"
            ".get_future().")
    if isinstance(error, AttributeError) and text in ("'NoneType' object has no attribute 'size'",
                                                      "'NoneType' object has no attribute 'rank'"):
        return "none-as-group", (
            "The group was None. Given None as the state, torch's own hooks (allreduce_hook, fp16_compress_hook) "
            "use dist.group.WORLD, the default process group, and the ranks here have none (nothing called "
            f"dist.init_process_group): it is None too. Use the group the hook is given, {group}: register the "
            "hook with the group as its state.")
    if isinstance(error, TypeError) and ("'method'" in text or text.endswith("not method")):
        return "method-not-called", (
            "A method was used without being called: process_group.size, bucket.buffer, bucket.index and "
            "bucket.is_last are methods; call them (process_group.size() is the number of ranks).")
    if isinstance(error, ValueError) and text.startswith("Communication hook:") and "annotation" in text:
        return "wrong-annotation", (
            "DDP's register_comm_hook reads the hook's annotations: `bucket` may be annotated dist.GradBucket "
            "and the return torch.futures.Future[torch.Tensor], exactly, or not at all.")
    return None


def _names(model):
    return {parameter: name for name, parameter in model.named_parameters()}


def _ddp_on_rank(rank, group, pending, calls_per_rank, bucket_cap_mb=TINY_BUCKETS, build=_new_model):
    """A fresh model (from `build`), DDP around it on this rank's group, and the _HookCalls that will
    record its comm hook's calls (kept in calls_per_rank[rank], for the check to read after the run)."""
    model = _model(build)
    calls = _HookCalls(_names(model), pending)
    calls_per_rank[rank] = calls.calls
    return model, DDP(model, process_group=group, bucket_cap_mb=bucket_cap_mb), calls


def _backward_pass(model, forward, rank, step):
    """One backward pass of `model` through `forward` (its DDP, or the model itself): this rank's
    batch of `step`, its MSE loss, the gradients zeroed first."""
    model.zero_grad()
    inputs, targets = _batch(rank, step)
    nn.functional.mse_loss(forward(inputs), targets).backward()


def _ddp_gradients(hook, world_size=2, bucket_cap_mb=TINY_BUCKETS, steps=1):
    """Each rank's gradients after `steps` backward passes of DDP with `hook` registered (no
    optimizer step), with the hook's calls on each rank."""
    calls_per_rank = [None] * world_size

    def rank_function(rank, group, pending):
        model, ddp, calls = _ddp_on_rank(rank, group, pending, calls_per_rank, bucket_cap_mb)
        ddp.register_comm_hook(group, calls.wrap(hook, ddp))
        grads = []
        for step in range(steps):
            _backward_pass(model, ddp, rank, step)
            grads.append({name: parameter.grad.clone() for name, parameter in model.named_parameters()})
        return grads

    outcomes = _run(rank_function, world_size)
    return outcomes, [calls or [] for calls in calls_per_rank]


def _mean_reference(world_size, steps=1, build=_new_model):
    """The mean over ranks of each rank's own gradients, per step; and each rank's own."""
    model = _model(build)
    local = [[_local_gradients(model, rank, step) for rank in range(world_size)] for step in range(steps)]
    mean = [{name: sum(grads[name] for grads in per_rank) / world_size for name in per_rank[0]} for per_rank in local]
    return mean, local


def _same(first, second, tolerance=1e-5):
    return all(torch.allclose(first[name], second[name], rtol=tolerance, atol=tolerance) for name in second)


def _max_difference(first, second):
    return max((first[name] - second[name]).abs().max().item() for name in second)


# ---------------------------------------------------------------- mean_allreduce_hook

def _stop_if_not_written(exercise, name, arguments):
    """Call the learner's function once with placeholder `arguments` before any DDP is built, and
    report the stub as not attempted: building the first DDP of a run imports torch._dynamo
    (0.73 s), which grading a fresh lesson need not pay. Whatever else the call does or raises
    is left to the check itself."""
    try:
        exercise(*arguments)
    except NotImplementedError as error:
        if learner_raised_not_implemented(error):
            raise LearnerCodeRaised(f"calling {name}", error) from None
    except Exception:  # a written function meets placeholders: the check proper judges it
        pass


MEAN_MISTAKES = {
    "sum-not-mean": "returns the sum over the ranks, not the mean",
    "divided-by-two": "divides by 2 instead of by the number of ranks",
    "not-all-reduced": "returns the rank's own gradients: no all-reduce, or a future that does not wait for it",
    "compressed": "all-reduces the bucket in float16 or bfloat16, losing precision",
    "divided-by-parameter-count": "divides by the number of parameters in the bucket, not the number of ranks",
    "divided-twice": "divides by the number of ranks twice (or divides and uses ReduceOp.AVG)",
    "wrong-divisor": "divides the sum by another number than the number of ranks",
    "reduced-with-max": "all-reduces with ReduceOp.MAX, the largest over the ranks, not the sum",
    "returned-zeros": "returns a Future of zeros (a new tensor) instead of the averaged bucket",
    "wrong-gradients": "gives gradients that are no one number's division of the sum (a race with the all-reduce)",
}


@check_of("mean_allreduce_hook", budget_ms=800,
          why="the first check to build a DistributedDataParallel in a process: DDP's constructor reads "
              "torch._dynamo.utils.get_optimize_ddp_mode(), which imports torch._dynamo (0.73 s, once); the "
              "check itself costs 3 ms warm, and the lesson's other checks share the import",
          mistakes={**COMM_HOOK_MISTAKES, **MEAN_MISTAKES})
def check_mean_allreduce_hook(mean_allreduce_hook):
    _stop_if_not_written(mean_allreduce_hook, "mean_allreduce_hook", (None, object()))
    deferred = None  # on 2 ranks, a sum divided by 4: told apart on 3 ranks (9: the size twice) first
    for world_size in (2, 3):
        doing = (f"training a fresh 2-layer model with DDP on {world_size} ranks (gloo, one backward pass, "
                 f"buckets of {TINY_BUCKETS} MB) with mean_allreduce_hook registered")
        outcomes, calls_per_rank = _ddp_gradients(mean_allreduce_hook, world_size)
        _judge_outcomes(outcomes, calls_per_rank, "mean_allreduce_hook", doing, "process_group")
        mean, local = _mean_reference(world_size)
        for outcome in outcomes:
            got = outcome.value[0]
            if _same(got, mean[0]):
                continue
            message, slug = _mean_diagnosis(got, mean[0], local[0], outcome.rank, world_size,
                                            calls_per_rank[outcome.rank], doing)
            if world_size == 2 and slug == "divided-by-four":
                deferred = message
                break
            fail(message, slug)
    if deferred:
        fail(deferred, "wrong-divisor")


def _mean_diagnosis(got, mean, local, rank, world_size, calls, doing):
    """(message, slug) of the gradients `got` on `rank` where `mean` was expected (`local`: each rank's own).
    "divided-by-four" is no named mistake: on 2 ranks it is the size twice or another 4, told apart on 3."""
    said = f"{doing}: rank {rank}'s gradients"
    total = {name: value * world_size for name, value in mean.items()}
    if _same(got, total):
        return (f"{said} are {world_size} times DDP's own: the sum over the ranks, not the mean. Divide by "
                "process_group.size() (before or after the all-reduce).", "sum-not-mean")
    if world_size == 3 and _same(got, {name: value * 3 / 2 for name, value in mean.items()}):
        return (f"{said} are the sum over the 3 ranks divided by 2. Divide by process_group.size(), the number of "
                "ranks, not by 2.", "divided-by-two")
    if _same(got, local[rank]) or _same(got, {name: value / world_size for name, value in local[rank].items()}):
        return (f"{said} are its own, not averaged with the other ranks': the hook returned the buffer without "
                "all-reducing it, or before its all-reduce had completed (a Future completed by hand with "
                "set_result does not wait for an all-reduce started with async_op=True). Start "
                "dist.all_reduce(buffer, group=process_group, async_op=True) and return its future of the tensor.",
                "not-all-reduced")
    compressed = _compressed_to(got, mean, local)
    if compressed:
        return (f"{said} are DDP's own rounded to {compressed}: every value is a {compressed} number, within "
                f"{compressed}'s rounding of the mean (they differ by up to {_max_difference(got, mean):.3g}). The "
                f"hook lost precision by compressing the bucket to {compressed}, as torch's fp16_compress_hook and "
                "bf16_compress_hook do; the exercise asks for the mean itself: all-reduce the buffer in its own "
                "dtype.", "compressed")
    divisor = _uniform_divisor(got, total)
    if divisor is not None:
        return _divisor_diagnosis(divisor, said, world_size, calls)
    return _sum_diagnosis(got, mean, local, said, world_size) or (
        f"{said} differ from DDP's own (the mean over the ranks) by up to {_max_difference(got, mean):.3g}, and "
        "are not the sum divided by any one number. Every rank must divide by process_group.size(), the same on "
        "every rank, and the all-reduce must sum what was divided: if the hook divides the buffer in place after "
        "starting the all-reduce, gloo may already be reading it: divide first, or in the .then() callback.",
        "wrong-gradients")


def _sum_diagnosis(got, mean, local, said, world_size):
    """(message, slug) of gradients that are not the sum of what each rank sent, divided: the largest over the
    ranks, or zeros; None for others."""
    largest = {name: torch.stack([grads[name] for grads in local]).amax(0) for name in mean}
    if _same(got, largest):
        return (f"{said} differ from DDP's own (the mean over the ranks): each is the largest of the ranks' "
                "gradients, element by element, as ReduceOp.MAX gives. All-reduce with the default op, "
                "ReduceOp.SUM, and divide by process_group.size().", "reduced-with-max")
    if all(not value.any() for value in got.values()):
        return (f"{said} differ from DDP's own (the mean over the ranks): they are all zero. DDP copies the value "
                "of the hook's future into the gradients: it must be the averaged bucket, the all-reduce's result, "
                "not a new tensor.", "returned-zeros")
    # Not told: a sum of which only some ranks' gradients were divided. A buffer divided in place after its
    # all-reduce started gives the same numbers when gloo read it first on one rank, so the generic message,
    # which names both, stays.
    return None


def _divisor_diagnosis(divisor, said, world_size, calls):
    """(message, slug) of gradients that are the sum over the ranks divided by `divisor`."""
    message = (f"{said} are the sum over the {world_size} ranks divided by {divisor:.4g}, where the mean divides it "
               f"by process_group.size(), {world_size}.")
    if world_size == 2 and abs(divisor - 4) < 1e-3:
        return message, "divided-by-four"
    parameters = {len(call["names"]) for call in calls}
    if parameters == {round(divisor)} and abs(divisor - round(divisor)) < 1e-3:
        return (message + f" {round(divisor)} is the number of parameters in the bucket (len(bucket.parameters())), "
                "not the number of ranks.", "divided-by-parameter-count")
    if abs(divisor - world_size ** 2) < 1e-3:
        return (message + f" That is process_group.size() twice, {world_size} × {world_size}: divide once "
                "(ReduceOp.AVG divides too).", "divided-twice")
    return message, "wrong-divisor"


def _uniform_divisor(got, total):
    """The one number c with `got` = `total` / c (every gradient, within tolerance), or None."""
    got_flat = torch.cat([got[name].reshape(-1) for name in total])
    total_flat = torch.cat([total[name].reshape(-1) for name in total])
    if not got_flat.abs().max() > 0:
        return None
    divisor = (total_flat.dot(total_flat) / total_flat.dot(got_flat)).item()
    if not divisor > 0 or not _same(got, {name: value / divisor for name, value in total.items()}):
        return None
    return divisor


def _compressed_to(got, mean, local):
    """"bfloat16" or "float16" when every gradient in `got` is a number of that dtype, no further from
    `mean` than a few of its rounding steps of the ranks' own gradients (`local`), as a hook that
    all-reduces in that dtype gives; else None. Rounding, not a race: a race gives float32 numbers."""
    for dtype in (torch.bfloat16, torch.float16):
        if all(_rounded_to(dtype, got[name], mean[name], [grads[name] for grads in local]) for name in mean):
            return str(dtype).replace("torch.", "")
    return None


def _rounded_to(dtype, value, mean, own):
    info = torch.finfo(dtype)
    scale = sum(tensor.abs() for tensor in own) / len(own)  # what each rank cast, divided by the ranks
    return torch.equal(value, value.to(dtype).to(value.dtype)) and bool(
        ((value - mean).abs() <= 4 * info.eps * scale + info.smallest_normal).all())


# ---------------------------------------------------------------- record_buckets

RECORD_MISTAKES = {
    "store-not-used": "appends the records to a list of its own, not to the `store` it is given",
    "returns-a-value": "returns something from record_buckets, which returns None",
    "other-hooks-registered": "registers other hooks on the model besides the comm hook",
    "no-comm-hook": "registers no comm hook on the DDP model",
    "comm-hook-registered-twice": "registers a comm hook twice on the DDP model, which DDP refuses",
    "compressed": "reduces the buckets in float16 or bfloat16, changing the gradients",
    "sum-not-mean": "gives the gradients summed over the ranks, not averaged",
    "gradients-changed": "changes the gradients: the hook no longer averages each bucket over the ranks",
    "store-not-lists": "fills the store with something other than one list of records per backward pass",
    "same-list-each-pass": "appends the same list to the store for every backward pass",
    "empty-pass-list": "leaves a pass's list empty (a list opened and not filled, or a pass counter outside)",
    "store-shared-by-ranks": "keeps the records in one list both ranks write to (at module level)",
    "wrong-pass-count": "splits the records into another number of passes than the backward passes",
    "wrong-record-count": "records another number of buckets in a pass than DDP called the hook",
    "wrong-record-keys": "records something other than dicts with the keys index, numel, names, is_last",
    "names-joined-to-root": "joins a root parameter's name to the root's empty prefix ('.scale')",
    "names-from-state-dict": "takes the names from state_dict(), which lists buffers too",
    "wrong-names": "records other names than the bucket's parameters' in named_parameters()",
    "wrong-numel": "records another numel than bucket.buffer().numel()",
    "wrong-is-last": "records another is_last than bucket.is_last(), a bool",
    "wrong-index": "records another index than bucket.index()",
}


@check_of("record_buckets", mistakes={**COMM_HOOK_MISTAKES, **RECORD_MISTAKES})
def check_record_buckets(record_buckets):
    _stop_if_not_written(record_buckets, "record_buckets", (object(), []))
    _check_recording(record_buckets, _ScaledLayers, 2, (
        f"calling record_buckets(ddp_model, store) on each of 2 ranks (a fresh model of 2 layers, a parameter "
        f"`scale` and a buffer `shift` on the root module itself, buckets of {TINY_BUCKETS} MB), then 2 backward "
        "passes"))


def _check_recording(record_buckets, build, steps, doing):
    """Run record_buckets on a DDP of `build`'s model on 2 ranks for `steps` backward passes, and fail
    on what it got wrong: the run itself, what it returned, hooks left, the records, the gradients."""
    world_size = 2
    calls_per_rank = [None] * world_size
    stores = [[] for _ in range(world_size)]  # each rank's own, as record_buckets receives it
    left = {}

    def rank_function(rank, group, pending):
        model, ddp, calls = _ddp_on_rank(rank, group, pending, calls_per_rank, build=build)
        registered = []
        real_register = ddp.register_comm_hook

        def register_comm_hook(state, hook):
            registered.append(hook)
            real_register(state, calls.wrap(hook, ddp))

        ddp.register_comm_hook = register_comm_hook
        before = {id(hook) for _, _, hook in registered_hooks(ddp)}  # DDP's own state-dict hooks among them
        returned = record_buckets(ddp, stores[rank])
        left[rank] = [(name or "ddp_model", kind) for name, kind, hook in registered_hooks(ddp) if id(hook) not in before]
        grads = []
        for step in range(steps):
            _backward_pass(model, ddp, rank, step)
            grads.append({name: parameter.grad.clone() for name, parameter in model.named_parameters()})
        return {"returned": returned, "registered": registered, "store": stores[rank], "grads": grads}

    outcomes = _run(rank_function, world_size)
    calls_per_rank = [calls or [] for calls in calls_per_rank]

    def shared_list_hint(rank):
        # Ranks that share one list of the learner's own (they are threads here) can break each other's
        # records mid-append, an IndexError: then the empty store is what to say, not only the error.
        if "can only be called once" in str(outcomes[rank].error):
            return "comm-hook-registered-twice", ("DDP takes one comm hook: register_comm_hook once, with the hook "
                                                  "that records and averages.")
        if stores[rank] or not isinstance(outcomes[rank].error, IndexError):
            return None
        return "store-not-used", f"Rank {rank}'s store is empty. {_APPEND_TO_STORE}"

    _judge_outcomes(outcomes, calls_per_rank, "the hook that record_buckets registered", doing,
                    "its state (the group it was registered with, ddp_model.process_group)", shared_list_hint)
    mean, local = _mean_reference(world_size, steps, build)
    for outcome in outcomes:
        _judge_recording(outcome.rank, outcome.value, left[outcome.rank], calls_per_rank[outcome.rank], mean, local,
                         doing)


def _judge_recording(rank, result, left, calls, mean, local, doing):
    if result["returned"] is not None:
        fail(f"{doing}: record_buckets returned {describe(result['returned'])}; it must return None (the "
             "records go into `store`).", "returns-a-value")
    if left:
        fail(f"{doing}: record_buckets left hooks on the model besides its comm hook: {left[:4]} "
             "((parameter or module name under ddp_model, kind)). Record everything from the comm hook's bucket; "
             "register no other hook.", "other-hooks-registered")
    if not result["registered"]:
        fail(f"{doing}: record_buckets registered no comm hook on ddp_model (ddp_model.register_comm_hook).",
             "no-comm-hook")
    _compare_records(result["store"], _expected_records(calls, len(mean)), rank, doing)
    for step, step_mean in enumerate(mean):
        if not _same(result["grads"][step], step_mean):
            compressed = _compressed_to(result["grads"][step], step_mean, local[step])
            if compressed:
                fail(f"{doing}: after backward pass {step + 1}, rank {rank}'s gradients are DDP's own rounded to "
                     f"{compressed} (every value is a {compressed} number, within its rounding of the mean): the hook "
                     f"reduces the bucket in {compressed}, as torch's fp16_compress_hook and bf16_compress_hook do. "
                     "It must average each bucket as DDP does, in the buffer's own dtype (as mean_allreduce_hook "
                     "does), so that the gradients do not change.", "compressed")
            if _same(result["grads"][step], {name: value * len(local[step]) for name, value in step_mean.items()}):
                fail(f"{doing}: after backward pass {step + 1}, rank {rank}'s gradients differ from DDP's own (the "
                     f"mean over the ranks): they are {len(local[step])} times it, the sum over the ranks. The hook "
                     "must still average each bucket over the ranks, as mean_allreduce_hook does: divide by the "
                     "group's size().", "sum-not-mean")
            fail(f"{doing}: after backward pass {step + 1}, rank {rank}'s gradients differ from DDP's own (the "
                 f"mean over the ranks) by up to {_max_difference(result['grads'][step], step_mean):.3g}. The "
                 "hook must still average each bucket over the ranks, as mean_allreduce_hook does.",
             "gradients-changed")


_APPEND_TO_STORE = ("Append to the `store` passed to record_buckets (this rank's own list), not to a list of your "
                    "own: one made in the function, or one at module level (which both ranks would share here, where "
                    "they are threads of one process).")


def _expected_records(calls, steps):
    expected, current = [], None
    for call in calls:
        if current is None or current[-1]["is_last"]:
            current = []
            expected.append(current)
        current.append({key: call[key] for key in ("index", "numel", "names", "is_last")})
    assert len(expected) == steps, "the checker's own record of the buckets has the wrong number of steps"
    return expected


def _compare_records(store, expected, rank, doing):
    if not isinstance(store, list) or any(not isinstance(step, list) for step in store):
        fail(f"{doing}: rank {rank}'s store holds {describe(store)}; expected a list with one list of records per "
             "backward pass.", "store-not-lists")
    if not store:
        fail(f"{doing}: rank {rank}'s store is empty after {len(expected)} backward passes. {_APPEND_TO_STORE}",
             "store-not-used")
    for step, records in enumerate(store):
        again = [later for later in range(step + 1, len(store)) if store[later] is records]
        if again:
            fail(f"{doing}: rank {rank}'s store[{step}] and store[{again[0]}] are one list, appended twice: the "
                 f"hook appended the same list for each backward pass (it holds {len(records)} records now). After a "
                 "bucket whose is_last() is True, start a new list for the next pass (a new [] appended to `store`, "
                 "not the old one cleared or kept).", "same-list-each-pass")
    empty = [step for step, records in enumerate(store) if isinstance(records, list) and not records]
    if empty:
        fail(f"{doing}: rank {rank}'s store[{empty[0]}] is an empty list: the hook opened a list for a backward pass "
             "and recorded no bucket in it, or emptied it later. Each pass's list gets that pass's records; a count "
             "of passes kept outside record_buckets (at module level) is shared by both ranks here, where they are "
             "threads of one process, and counts both ranks' passes.", "empty-pass-list")
    if len(store) != len(expected):
        flat = sum(len(step) for step in store)
        more = (" It holds twice as many records as this rank's buckets: are both ranks writing to one list (a "
                "list at module level is shared here, where the ranks are threads of one process)?"
                if flat == 2 * sum(len(step) for step in expected) else "")
        fail(f"{doing}: rank {rank}'s store holds {len(store)} lists; expected {len(expected)}, one per backward pass "
             f"(a pass starts at the first bucket after one whose is_last() was True).{more}",
             "store-shared-by-ranks" if more else "wrong-pass-count")
    for step, (got_step, want_step) in enumerate(zip(store, expected)):
        if len(got_step) != len(want_step):
            fail(f"{doing}: rank {rank}'s store[{step}] holds {len(got_step)} records; DDP called the hook "
                 f"{len(want_step)} times in that backward pass, once per bucket.", "wrong-record-count")
        for got, want in zip(got_step, want_step):
            if not isinstance(got, dict) or set(got) != set(want):
                fail(f"{doing}: rank {rank}'s store[{step}] holds {describe(got)}; expected dicts with the keys "
                     f"{sorted(want)}.", "wrong-record-keys")
            for key in ("index", "numel", "names", "is_last"):
                value = got[key]
                if isinstance(value, torch.Tensor) or type(value) is not type(want[key]) or value != want[key]:
                    slug, hint = _record_hint(key, value, want[key])
                    fail(f"{doing}: rank {rank}'s store[{step}] has {key}={describe(value)} where DDP's bucket "
                         f"{want['index']} gives {describe(want[key])}.{hint}", slug)


def _record_hint(key, value, wanted):
    """(slug, hint) of a record's wrong `value` for `key`."""
    if key == "names" and _joined_to_root(value, wanted):
        return "names-joined-to-root", _NAMES_JOINED_TO_ROOT
    if key == "names" and isinstance(value, list) and "shift" in value:
        return "names-from-state-dict", _NAMES_FROM_STATE_DICT
    return {"names": ("wrong-names", " Use the names of ddp_model.module.named_parameters() (without DDP's 'module.' "
                                     "prefix), in bucket.parameters()' order."),
            "numel": ("wrong-numel", " numel is bucket.buffer().numel(), the number of elements."),
            "is_last": ("wrong-is-last", " is_last is bucket.is_last(), a bool."),
            "index": ("wrong-index", "")}[key]


_NAMES_FROM_STATE_DICT = (" 'shift' is not a parameter but a buffer of the root module: the names were taken from "
                          "state_dict(), which holds buffers too, so its keys are not the parameters' names, in order. "
                          "Take them from ddp_model.module.named_parameters().")
_NAMES_JOINED_TO_ROOT = (" A name starts with '.': that parameter sits on the root module, whose prefix in "
                         "named_modules() is '', and prefix + '.' + name gives '.scale'. Take the names from "
                         "ddp_model.module.named_parameters(), which joins only non-empty prefixes (or join with '.' "
                         "only when the prefix is not empty).")


def _joined_to_root(names, expected):
    """Whether `names` are the expected names with a '.' before those of the root module's parameters."""
    return (isinstance(names, list) and len(names) == len(expected)
            and any(name == "." + want for name, want in zip(names, expected) if "." not in want)
            and all(name in (want, "." + want) for name, want in zip(names, expected)))


# ---------------------------------------------------------------- topk_error_feedback_hook

_TOPK_K = 28  # more than bucket 0's 27 elements (k = min(state.k, numel) matters), half of bucket 1's 56
_TOPK_STEPS = 4
_TOPK_LR = 0.2


def _topk_reference(calls, world_size, *, divide=True, feedback="once", absolute=True, largest=True,
                    sent_from="corrected", reduce=True):
    """Each rank's parameters after _TOPK_STEPS SGD steps of two ranks under the lesson's rules,
    computed by hand per rank, and each rank's residuals; `calls` (rank 0's hook calls) say which
    parameters each bucket held, per step. The keyword arguments make the variants that name a
    mistake (with reduce=False each rank keeps its own `sent`, and the ranks part ways)."""
    models = [_model() for _ in range(world_size)]
    residuals = [{} for _ in range(world_size)]
    steps = _split_steps(calls)
    for step, buckets in enumerate(steps):
        local = [_local_gradients(models[rank], rank, step) for rank in range(world_size)]
        new = [{} for _ in range(world_size)]
        for bucket in buckets:
            sent, correcteds = [], []
            for rank in range(world_size):
                flat = torch.cat([local[rank][name].reshape(-1) for name in bucket["names"]])
                residual = residuals[rank].get(bucket["index"])
                if residual is not None and residual.numel() != flat.numel():
                    residual = None  # the buckets were rebuilt: this index names another bucket now
                if residual is None or feedback == "none":
                    corrected = flat.clone()
                else:
                    corrected = flat + (2 * residual if feedback == "twice" else residual)
                k = min(_TOPK_K, corrected.numel())
                keep = (corrected.abs() if absolute else corrected).topk(k, largest=largest).indices
                kept = torch.zeros_like(corrected)
                kept[keep] = (flat if sent_from == "buffer" else corrected)[keep]
                if feedback == "accumulate" and residual is not None:
                    residuals[rank][bucket["index"]] = residual + (corrected - kept)
                elif feedback == "from-buffer":
                    residuals[rank][bucket["index"]] = flat - kept
                else:
                    residuals[rank][bucket["index"]] = corrected - kept
                sent.append(kept)
                correcteds.append(corrected)
            total = sum(sent) / (world_size if divide else 1)
            for rank in range(world_size):
                reduced = total if reduce else sent[rank] / (world_size if divide else 1)
                if feedback == "from-mean":  # as PowerSGD's error feedback: what this rank had, less the mean
                    residuals[rank][bucket["index"]] = correcteds[rank] - reduced
                offset = 0
                for name in bucket["names"]:
                    size = local[0][name].numel()
                    new[rank][name] = reduced[offset:offset + size].reshape(local[0][name].shape)
                    offset += size
        with torch.no_grad():
            for rank, model in enumerate(models):
                for name, parameter in model.named_parameters():
                    parameter -= _TOPK_LR * new[rank][name]
    return [{name: parameter.detach().clone() for name, parameter in model.named_parameters()}
            for model in models], residuals


def _split_steps(calls):
    steps, current = [], None
    for call in calls:
        if current is None or current[-1]["is_last"]:
            current = []
            steps.append(current)
        current.append(call)
    return steps


# Each typical mistake: its slug, the options of _topk_reference that make it, and how the parameters moved with
# it (after "the parameters moved as"), most specific first.
_TOPK_VARIANTS = [
    ("sum-not-mean", dict(divide=False),
     "with the SUM of `sent` over the ranks: divide by state.process_group.size() (the mean)."),
    ("no-error-feedback", dict(feedback="none"),
     "top-k WITHOUT error feedback: the residual was never added to the next step's gradient. Store corrected - "
     "sent in state.residuals[bucket.index()] and add it to the next buffer; compute it before anything changes "
     "`corrected` in place (after sent is cut out of corrected itself, corrected - sent is zero)."),
    ("residual-added-twice", dict(feedback="twice"),
     "if the residual were added twice (buffer + 2 * residual): add it once, to a new tensor, not also to the "
     "buffer in place."),
    ("residual-accumulated", dict(feedback="accumulate"),
     "if each new residual were added to the old one (residual += corrected - sent): corrected already holds the "
     "old residual, so the new residual is corrected - sent, replacing the old."),
    ("residual-from-buffer", dict(feedback="from-buffer"),
     "if the new residual were buffer - sent: it is corrected - sent, what this step had to send (its gradient and "
     "the old residual) less what it sent."),
    ("largest-not-absolute", dict(absolute=False),
     "if the k LARGEST values were kept, not the k of largest ABSOLUTE value: choose with corrected.abs().topk(k)."),
    ("smallest-kept", dict(largest=False),
     "if the k entries of SMALLEST |corrected| were kept: keep the k of largest absolute value "
     "(corrected.abs().topk(k) gives them; argsort and sort are ascending unless told descending=True)."),
    ("residual-from-mean", dict(feedback="from-mean"),
     "if the new residual were corrected minus the mean over the ranks (the all-reduce's result), as PowerSGD's "
     "error feedback computes it: here it is corrected - sent, with this rank's own sent, stored before the "
     "all-reduce."),
    ("not-all-reduced", dict(reduce=False),
     "if each rank used the mean of its own `sent` only, without the other ranks': the hook did not all-reduce it, "
     "or returned a future that does not wait for the all-reduce. Start dist.all_reduce(sent, "
     "group=state.process_group, async_op=True) and return its future of the tensor."),
    ("own-sum-not-all-reduced", dict(reduce=False, divide=False),
     "if each rank used its own `sent`, without the other ranks': the hook did not all-reduce it. Return the mean "
     "of sent over the ranks of state.process_group: all-reduce it, divided by its size()."),
    ("sent-from-buffer", dict(sent_from="buffer"),
     "if `sent` held the BUFFER's entries at the chosen positions: it holds corrected's (the buffer plus the "
     "residual), so that the residual is sent too."),
]


TOPK_MISTAKES = {
    "sum-not-mean": "sends the sum of `sent` over the ranks, not the mean",
    "no-error-feedback": "never adds the residual to the next step's gradient (or computes it as zero)",
    "residual-added-twice": "adds the residual twice (to a new tensor and to the buffer in place)",
    "residual-accumulated": "adds each new residual to the old one instead of replacing it",
    "residual-from-buffer": "computes the residual as buffer - sent, not corrected - sent",
    "largest-not-absolute": "keeps the k largest values, not the k of largest absolute value",
    "smallest-kept": "keeps the k entries of smallest absolute value (an ascending sort)",
    "residual-from-mean": "computes the residual as corrected minus the all-reduced mean, as PowerSGD",
    "not-all-reduced": "uses the rank's own `sent`, divided, without all-reducing it",
    "own-sum-not-all-reduced": "uses the rank's own `sent`, not all-reduced nor divided",
    "sent-from-buffer": "sends the buffer's entries at the chosen positions, not corrected's",
    "k-not-capped": "keeps state.k entries of a bucket that holds fewer (k not capped by the bucket's size)",
    "residual-of-rebuilt-bucket": "adds a residual kept from before DDP rebuilt its buckets, of another size",
    "wrong-parameters": "moves the parameters in a way no diagnosis explains",
    "residuals-not-by-index": "keys the residuals by something other than bucket.index()",
    "residuals-not-in-state": "keeps the residuals elsewhere than state.residuals (module level, the function)",
    "wrong-residual": "leaves another residual in state.residuals than corrected - sent",
}


@check_of("topk_error_feedback_hook", mistakes={**COMM_HOOK_MISTAKES, **TOPK_MISTAKES})
def check_topk_error_feedback_hook(topk_error_feedback_hook):
    _stop_if_not_written(topk_error_feedback_hook, "topk_error_feedback_hook", (object(), object()))
    world_size = 2
    doing = (f"training a fresh 2-layer model (83 parameters; buckets of {TINY_BUCKETS} MB: one of 83 elements in the "
             "first backward pass, then buckets of 27 and 56) "
             f"with DDP on 2 ranks for {_TOPK_STEPS} SGD steps (lr {_TOPK_LR}), each rank with "
             f"TopKState(process_group, k={_TOPK_K}) and topk_error_feedback_hook registered")
    calls_per_rank = [None] * world_size
    states = [None] * world_size

    def rank_function(rank, group, pending):
        model, ddp, calls = _ddp_on_rank(rank, group, pending, calls_per_rank)
        states[rank] = _TopKState(group, _TOPK_K)
        ddp.register_comm_hook(states[rank], calls.wrap(topk_error_feedback_hook, ddp))
        for step in range(_TOPK_STEPS):
            _backward_pass(model, ddp, rank, step)
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter -= _TOPK_LR * parameter.grad
        return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}

    outcomes = _run(rank_function, world_size)
    calls_per_rank = [calls or [] for calls in calls_per_rank]
    _judge_outcomes(outcomes, calls_per_rank, "topk_error_feedback_hook", doing, "state.process_group",
                    lambda rank: _topk_error_hint(outcomes[rank].error))
    for rank, state in enumerate(states):
        _check_residuals_kept(state, rank, [call["index"] for call in calls_per_rank[rank]], doing)
    expected, residuals = _topk_reference(calls_per_rank[0], world_size)
    # Ranks that all-reduced agree; the variants without an all-reduce part them (a hook that sends zeros
    # on one rank also leaves rank 0 with its own `sent`, divided, but the ranks agree).
    ranks_agree = all(_same(outcome.value, outcomes[0].value) for outcome in outcomes)
    for outcome in outcomes:
        got = outcome.value
        if _same(got, expected[outcome.rank]):
            continue
        for slug, variant, message in _TOPK_VARIANTS:
            if ranks_agree and variant.get("reduce") is False:
                continue
            if _same(got, _topk_reference(calls_per_rank[0], world_size, **variant)[0][outcome.rank]):
                fail(f"{doing}: on rank {outcome.rank}, the parameters moved as {message}", slug)
        fail(f"{doing}: rank {outcome.rank}'s parameters differ from those the rules give, computed by hand, by up "
             f"to {_max_difference(got, expected[outcome.rank]):.3g}. Check each rule: corrected = buffer + residual; "
             "keep the k entries of largest |corrected|; residual = corrected - sent; the future's value is the mean "
             "of sent over the ranks.", "wrong-parameters")
    for rank, state in enumerate(states):
        _check_residuals(state, residuals[rank], rank, doing)


def _topk_error_hint(error):
    """(slug, what it means) of an error that a top-k hook's own mistake raises; None for others."""
    text = str(error)
    if "selected index k out of range" in text:
        return "k-not-capped", ("A bucket may hold fewer than state.k elements (bucket 0 holds 27 here): keep "
                                "k = min(state.k, buffer.numel()) entries.")
    if "must match the size of tensor" in text:
        return "residual-of-rebuilt-bucket", (
            "DDP rebuilds its buckets after the first backward pass (one bucket of 83 elements, then 27 and 56): a "
            "residual kept under an index from before the rebuild has another size than the buffer. Start afresh, "
            "without a residual, when the sizes differ.")
    return None


def _check_residuals_kept(state, rank, indices, doing):
    held = state.residuals
    if isinstance(held, dict) and held and not set(held) <= set(indices):
        fail(f"{doing}: rank {rank}'s state.residuals has the keys {sorted(map(repr, held))[:4]}; DDP's buckets "
             f"were {sorted(set(indices))}. Key each residual by bucket.index(), which stays the same from step to "
             "step (the GradBucket object does not).", "residuals-not-by-index")
    if not isinstance(held, dict) or not held:
        fail(f"{doing}: rank {rank}'s state.residuals is {describe(held)} after {_TOPK_STEPS} steps; the hook must "
             "keep each bucket's residual there, under bucket.index(). State kept anywhere else (at module "
             "level, on the function object, in a default argument) is shared by both ranks here (they are threads "
             "of one process) and would mix their residuals.", "residuals-not-in-state")


def _check_residuals(state, expected, rank, doing):
    held = state.residuals
    for index, residual in expected.items():
        value = held.get(index)
        if not isinstance(value, torch.Tensor) or value.shape != residual.shape or not torch.allclose(
                value, residual, atol=1e-5):
            fail(f"{doing}: rank {rank}'s state.residuals[{index}] is {describe(value)}; the rules give "
                 f"{describe(residual)} (corrected - sent of that bucket's last step, on this rank).", "wrong-residual")


class _TopKState:
    """The lesson's TopKState (the checker's own copy, so that a changed one in the cell changes nothing)."""

    def __init__(self, process_group, k):
        self.process_group = process_group
        self.k = k
        self.residuals = {}
