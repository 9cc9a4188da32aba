"""Two (or more) ranks of a real gloo process group on threads of this process.

Each rank gets a `torch.distributed.ProcessGroup` with a gloo backend of its own, bound to
127.0.0.1, meeting the others through an in-process HashStore: the collectives are gloo's
own, over loopback TCP, as between processes, without starting a process that imports torch
(2-4 s each). Nothing is registered with torch.distributed's global state (no
init_process_group), so nothing needs restoring afterwards.

A rank that raises, or a collective that never completes, cannot block the caller: gloo's
timeout ends a collective whose peer never comes, futures a hook returned are failed at the
deadline, and a rank still running Python code is interrupted.

The groups are made once and reused by every run that ends cleanly; a run in which a rank raised
or was stopped retires its groups (shut down, never used again) and the next run makes new ones.
No group is ever destroyed: its destructor joins gloo's threads, and run on a rank thread it can
deadlock on the GIL, run on one of gloo's own threads (where a hook's .then() callback runs Python
and may drop the last reference) it aborts the whole process ("terminate called after throwing an
instance of 'std::system_error', Resource deadlock avoided"), both seen here. A retired group
keeps its two worker threads, idle; only runs that fail retire groups (all groups share one gloo
device, so one TCP event loop thread)."""

import ctypes
import datetime
import gc
import threading
import time

import torch
import torch.distributed as dist
from torch.distributed import ProcessGroup

GLOO_TIMEOUT = 3.0  # seconds a collective waits for a peer
EXTRA_WAIT = 2.0  # seconds after GLOO_TIMEOUT before a rank counts as stuck
# Seconds the ranks may take to meet while their groups are made. Longer than a collective's wait:
# on a loaded machine a rank thread can start late, and that is slowness, not a hang.
SETUP_TIMEOUT = 60.0


_LOOPBACK = []  # the one gloo device (a TCP event loop thread) on 127.0.0.1 that every group shares
_LOOPBACK_LOCK = threading.Lock()


def _loopback_device():
    """The shared device, made once. create_device releases the GIL: without the lock, two rank
    threads could each make one, and ranks given different device lists never meet (gloo's
    "DistStoreError: Wait timeout" while the group is made)."""
    with _LOOPBACK_LOCK:
        if not _LOOPBACK:
            _LOOPBACK.append(dist.ProcessGroupGloo.create_device(hostname="127.0.0.1"))
        return _LOOPBACK[0]


def _gloo_group(store, rank, world_size, timeout):
    options = dist.ProcessGroupGloo._Options()
    options._devices = [_loopback_device()]
    options._timeout = datetime.timedelta(seconds=SETUP_TIMEOUT)
    # gloo's default of 2 worker threads: PowerSGD's .then() callback runs on one and waits for a
    # second all-reduce, which needs another (with 1 thread it deadlocks).
    options._threads = 2
    backend = dist.ProcessGroupGloo(store, rank, world_size, options)
    backend._set_default_timeout(datetime.timedelta(seconds=timeout))  # what each collective waits
    group = ProcessGroup(store, rank, world_size)
    group._register_backend(torch.device("cpu"), ProcessGroup.BackendType.GLOO, backend)
    group._set_default_backend(ProcessGroup.BackendType.GLOO)
    return group


_HEALTHY = {}  # (world size, timeout) -> the groups of the last clean run, one per rank


def _kept_forever(group):
    """Never let `group` be destroyed (see the module's docstring): one reference that is never dropped."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(group))
    return group


def _interrupt(thread):
    """Raise SystemExit in `thread` at its next Python instruction (a loop in a learner's hook)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(SystemExit))


class RankOutcome:
    """What one rank's function returned or raised, and whether it was stopped."""

    def __init__(self, rank):
        self.rank = rank
        self.value = None
        self.error = None
        self.stuck = False
        self.seconds = None


def warm_up():
    """DDP's constructor imports torch._dynamo (1-3 s, once per process); do it before any deadline."""
    import torch._dynamo.utils  # noqa: F401


def run_on_ranks(function, world_size=2, timeout=GLOO_TIMEOUT, pending_futures=None, deadline=None):
    """Call `function(rank, process_group)` on `world_size` threads, one per rank, and return
    their RankOutcomes (in rank order). `pending_futures`, a list the caller's hooks append the
    futures they return to, lets a rank waiting on a future that is never completed be released.
    `deadline`: the seconds the ranks may take in all (default: gloo's timeout and EXTRA_WAIT)."""
    collecting = gc.isenabled()
    gc.disable()  # no collection on gloo's threads while hooks run there, nor during the import (50 ms less)
    try:
        warm_up()
        return _run(function, world_size, timeout, pending_futures, deadline)
    finally:
        if collecting:
            gc.enable()


def _run(function, world_size, timeout, pending_futures, deadline):
    groups = _HEALTHY.pop((world_size, timeout), None) or _new_groups(world_size, timeout)
    outcomes = [RankOutcome(rank) for rank in range(world_size)]

    def run(outcome):
        start = time.perf_counter()
        try:
            outcome.value = function(outcome.rank, groups[outcome.rank])
        except BaseException as error:  # SystemExit from _interrupt, and the learner's own
            outcome.error = error
        outcome.seconds = time.perf_counter() - start

    threads = [threading.Thread(target=run, args=(outcome,), daemon=True) for outcome in outcomes]
    try:
        late = _wait(_started(threads), deadline if deadline is not None else timeout + EXTRA_WAIT)
        if late:
            for outcome, thread in zip(outcomes, threads):
                outcome.stuck = thread.is_alive()
            for future in pending_futures or []:
                if not future.done():
                    future.set_exception(RuntimeError("stopped by the check: this future was never completed"))
            for thread in late:
                _interrupt(thread)
            _wait(late, timeout + EXTRA_WAIT)
    finally:
        if all(outcome.error is None and not outcome.stuck for outcome in outcomes):
            _HEALTHY[(world_size, timeout)] = groups
        else:
            for group in groups:
                group.shutdown()  # retired: it may hold a collective that never matched
    return outcomes


def _new_groups(world_size, timeout):
    _loopback_device()
    store = dist.HashStore()
    groups = [None] * world_size
    errors = [None] * world_size

    def make_group(rank):
        try:
            groups[rank] = _kept_forever(_gloo_group(store, rank, world_size, timeout))
        except Exception as error:  # the others would wait SETUP_TIMEOUT for this rank: stop at once
            errors[rank] = error

    threads = _started([threading.Thread(target=make_group, args=(rank,), daemon=True) for rank in range(world_size)])
    deadline = time.monotonic() + SETUP_TIMEOUT + EXTRA_WAIT
    while _wait(threads, 0.05) and not any(errors) and time.monotonic() < deadline:
        pass
    if any(group is None for group in groups):
        cause = next((error for error in errors if error is not None), None)
        raise RuntimeError("could not set up the gloo process groups on 127.0.0.1") from cause
    return groups


def _started(threads):
    for thread in threads:
        thread.start()
    return threads


def _wait(threads, seconds):
    """Wait at most `seconds` in all for `threads`; return those still running."""
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread for thread in threads if thread.is_alive()]
