"""hooked/two_ranks.py: ranks on threads meet reliably when their groups are made, and a collective still
gives up after its own short timeout."""

import sys
import threading
import time

import pytest
import torch

from hooked import two_ranks


@pytest.fixture
def fresh_loopback(monkeypatch):
    monkeypatch.setattr(two_ranks, "_LOOPBACK", [])
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to expose a race
    yield
    sys.setswitchinterval(previous)


def test_ranks_making_their_groups_at_once_share_one_loopback_device(fresh_loopback):
    # Ranks given different device lists never meet: "DistStoreError: Wait timeout" (seen in CI).
    for _ in range(30):
        two_ranks._LOOPBACK.clear()
        devices = [None] * 4

        def make(index):
            devices[index] = two_ranks._loopback_device()

        threads = [threading.Thread(target=make, args=(index,)) for index in range(len(devices))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(two_ranks._LOOPBACK) == 1
        assert all(device is two_ranks._LOOPBACK[0] for device in devices)


def test_a_rank_that_starts_late_still_meets_and_collectives_keep_their_timeout(monkeypatch):
    collective_timeout = 0.3
    make_group = two_ranks._gloo_group

    def late_rank_one(store, rank, world_size, timeout):
        if rank == 1:
            time.sleep(1.0)  # a loaded machine: longer than a collective may wait
        return make_group(store, rank, world_size, timeout)

    monkeypatch.setattr(two_ranks, "_gloo_group", late_rank_one)
    groups = two_ranks._new_groups(2, collective_timeout)
    try:
        start = time.perf_counter()
        with pytest.raises(RuntimeError, match="Timed out"):
            groups[0].allreduce([torch.ones(2)]).wait()  # rank 1 never joins
        assert time.perf_counter() - start < collective_timeout + 1.0
    finally:
        for group in groups:
            group.shutdown()


def test_a_rank_that_cannot_make_its_group_stops_the_setup_at_once_with_its_error(monkeypatch):
    make_group = two_ranks._gloo_group

    def rank_one_fails(store, rank, world_size, timeout):
        if rank == 1:
            raise OSError("no loopback here")
        return make_group(store, rank, world_size, timeout)

    monkeypatch.setattr(two_ranks, "_gloo_group", rank_one_fails)
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="could not set up") as raised:
        two_ranks._new_groups(2, 0.3)
    assert isinstance(raised.value.__cause__, OSError)
    assert time.perf_counter() - start < 2.0  # not SETUP_TIMEOUT
