"""Make the race of a comm hook that touches its tensor while the all-reduce runs show every time.

With gloo on one machine, an all-reduce started with async_op=True often completes before the
hook's next line runs, so a hook that divides the buffer in place after starting the all-reduce,
or reads the tensor it is reducing before the future completes, gets the right numbers in about
half the runs. While `exposed()` is active, `torch.distributed.all_reduce(..., async_op=True)`
started on a rank other than 0 waits a little before it starts and returns only once the
reduction has completed: rank 0's reduction therefore completes only after its hook has gone on
for those milliseconds (a write to its tensor then lands during the reduction), and another
rank's hook always finds its tensor already reduced (a read then sees the sum, not its own)."""

import contextlib
import threading
import time

import torch.distributed as dist

PEER_DELAY = 0.003  # seconds a rank other than 0 waits before it starts its all-reduce

_real_all_reduce = dist.all_reduce
_ranks = threading.local()  # whether this thread is a rank of the check (hooked.two_ranks)


def _all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    if not async_op or group is None or not getattr(_ranks, "active", False) or group.rank() == 0:
        return _real_all_reduce(tensor, op=op, group=group, async_op=async_op)
    time.sleep(PEER_DELAY)
    work = _real_all_reduce(tensor, op=op, group=group, async_op=True)
    work.wait()
    return work


@contextlib.contextmanager
def exposed():
    """Within: dist.all_reduce as described above, for the threads that call `as_rank()`."""
    dist.all_reduce = _all_reduce
    try:
        yield
    finally:
        dist.all_reduce = _real_all_reduce


def as_rank():
    """Mark the calling thread as a rank of the check's run."""
    _ranks.active = True
