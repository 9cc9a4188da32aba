"""dist.all_reduce as the checks of lesson 13 run it: races shown every time, mismatches refused.

Races. With gloo on one machine, an all-reduce started with async_op=True often completes before
the hook's next line runs, so a hook that divides the buffer in place after starting the
all-reduce, or reads the tensor it is reducing before the future completes, gets the right
numbers in about half the runs. Here an all-reduce started on a rank other than 0 waits a little
before it starts and returns only once the reduction has completed: rank 0's reduction therefore
completes only after its hook has gone on for those milliseconds (a write to its tensor then
lands during the reduction), and another rank's hook always finds its tensor already reduced (a
read then sees the sum, not its own).

Mismatches. When the ranks' n-th all-reduces differ in size (a hook that skips a bucket on one
rank), gloo throws on its own network thread and the whole process aborts ("terminate called
after throwing an instance of 'gloo::EnforceNotMet' ... Received data size doesn't match
expected size"). Here each rank's n-th all-reduce first waits for the other ranks' n-th and
compares them, and raises instead."""

import contextlib
import threading
import time

import torch.distributed as dist

PEER_DELAY = 0.003  # seconds a rank other than 0 waits before it starts its all-reduce

_real_all_reduce = dist.all_reduce
_ranks = threading.local()  # rank: this thread's rank in the check's run (hooked.two_ranks)
_run = {}  # the current run: "calls" (per rank, each all-reduce's description), "changed"


def _described(tensor, op):
    return f"{tuple(tensor.shape)} {str(tensor.dtype).replace('torch.', '')}, op {op}"


def _matched(rank, description, timeout):
    """Wait for every rank's all-reduce of the same number as this one; raise if one differs."""
    calls, changed = _run["calls"], _run["changed"]
    with changed:
        calls[rank].append(description)
        number = len(calls[rank])
        changed.notify_all()
        if not changed.wait_for(lambda: all(len(theirs) >= number for theirs in calls), timeout):
            raise RuntimeError(f"Timed out waiting for the other ranks' all_reduce number {number} (rank {rank}'s: "
                               f"{description}); ranks that do not join: "
                               f"{[other for other, theirs in enumerate(calls) if len(theirs) < number]}")
        different = [(other, theirs[number - 1]) for other, theirs in enumerate(calls) if theirs[number - 1] != description]
    if different:
        other, theirs = different[0]
        raise RuntimeError(f"Collective mismatch: rank {rank}'s all_reduce number {number} is of a tensor {description}, "
                           f"rank {other}'s of {theirs}. Every rank must all-reduce the same buckets in the same order "
                           "(a hook that skips a bucket, or sends something else, on one rank only); gloo itself would "
                           "abort the whole process here.")


def _all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    rank = getattr(_ranks, "rank", None)
    if group is None or rank is None or not _run:
        return _real_all_reduce(tensor, op=op, group=group, async_op=async_op)
    _matched(rank, _described(tensor, op), _run["timeout"])
    if not async_op or rank == 0:
        return _real_all_reduce(tensor, op=op, group=group, async_op=async_op)
    time.sleep(PEER_DELAY)
    work = _real_all_reduce(tensor, op=op, group=group, async_op=True)
    work.wait()
    return work


@contextlib.contextmanager
def exposed(world_size, timeout):
    """Within: dist.all_reduce as described above, for the threads that call `as_rank(rank)`;
    `timeout`, the seconds a rank waits for the others' all-reduce."""
    _run.update(calls=[[] for _ in range(world_size)], changed=threading.Condition(), timeout=timeout)
    dist.all_reduce = _all_reduce
    try:
        yield
    finally:
        dist.all_reduce = _real_all_reduce
        _run.clear()


def as_rank(rank):
    """Mark the calling thread as rank `rank` of the check's run."""
    _ranks.rank = rank
