"""record_buckets' check: the empty-store hint comes with the error that ranks sharing one list cause
(an IndexError mid-append), and with no other error; a hook left as a stub is still not attempted."""

import torch

from hooked.grader.check_runner import run_check
from hooked.checks.lesson_13_distributed_hooks import check_record_buckets


def _grade(record_buckets):
    return run_check("13_distributed_hooks", "record_buckets", check_record_buckets, record_buckets)


def _registering(hook):
    def record_buckets(ddp_model, store):
        if isinstance(ddp_model, torch.nn.Module):
            ddp_model.register_comm_hook(ddp_model.process_group, hook)
    return record_buckets


def test_an_index_error_with_the_store_left_empty_gets_the_empty_store_hint():
    def hook(state, bucket):
        return [][-1]  # as when another rank appended an empty list to a shared one

    result = _grade(_registering(hook))
    assert result.status == "failed"
    assert "IndexError" in result.message and "store is empty" in result.message


def test_another_error_before_the_first_record_gets_no_empty_store_hint():
    def record_buckets(ddp_model, store):
        if isinstance(ddp_model, torch.nn.Module):
            ddp_model.register_comm_hook(lambda state, bucket: None)  # the state forgotten: a TypeError

    result = _grade(record_buckets)
    assert result.status == "failed"
    assert "TypeError" in result.message and "store is empty" not in result.message


def test_a_hook_left_as_a_stub_is_not_attempted():
    def hook(state, bucket):
        raise NotImplementedError("the hook is not written yet")

    assert _grade(_registering(hook)).status == "not_attempted"
