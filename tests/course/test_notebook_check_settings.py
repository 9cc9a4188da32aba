"""A notebook's check(...) grades with the grading worker's settings (torch with one thread,
optimizers that do not import torch._dynamo, no cyclic garbage collection) for the duration of
the check only: the learner's kernel keeps its thread count, its collector's state and its
optimizers' torch.compile wrappers."""

import gc

import subprocess
import sys
import textwrap

import torch
from torch.optim import Optimizer

from hooked import notebook
from hooked.checks.optimizers import _DYNAMO_DISABLED_METHODS
from hooked.course import ROOT


def _cached_wrappers():
    return {name: getattr(Optimizer, name).__wrapped__.__dict__.get("__dynamo_disable", "absent")
            for name in _DYNAMO_DISABLED_METHODS}


def test_a_check_runs_torch_with_one_thread_and_the_kernels_count_is_back_afterwards(capsys):
    threads_seen = []

    def double_grad(grad):  # the exercise's name: check() grades it
        threads_seen.append(torch.get_num_threads())
        return 2 * grad
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        notebook.check(double_grad)
        assert threads_seen and set(threads_seen) == {1}
        assert torch.get_num_threads() == 2
        assert "double_grad: passed" in capsys.readouterr().out
    finally:
        torch.set_num_threads(before)


def test_a_check_runs_without_cyclic_collection_and_the_kernels_collector_is_as_it_was(capsys):
    seen = []

    def double_grad(grad):
        seen.append(gc.isenabled())
        return 2 * grad
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            notebook.check(double_grad)
            assert seen[-1] is False and gc.isenabled() is enabled
        finally:
            gc.enable()
    assert "double_grad: passed" in capsys.readouterr().out


def test_a_check_that_raises_inside_still_gives_the_kernel_its_thread_count_back(monkeypatch):
    def broken(obj):
        raise KeyboardInterrupt
    monkeypatch.setattr(notebook, "run_check_for_object", broken)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        try:
            notebook.check(len)
        except KeyboardInterrupt:
            pass
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_optimizers_torch_compile_wrappers_are_as_they_were_after_a_check(capsys):
    before = _cached_wrappers()
    seen = []

    def double_grad(grad):
        seen.append(_cached_wrappers())
        return 2 * grad
    notebook.check(double_grad)
    assert seen and all(value != "absent" for value in seen[0].values())
    assert _cached_wrappers() == before


def test_checking_attach_weight_ema_in_a_fresh_kernel_imports_no_dynamo_and_a_later_optimizer_still_can():
    script = textwrap.dedent("""
        import sys, torch
        from hooked.course import SOLUTIONS_DIR
        from hooked.lesson_files.learner_lesson import load_lesson_source, compile_cell
        from hooked.notebook import check
        namespace = {"__name__": "__main__"}
        for cell in load_lesson_source(SOLUTIONS_DIR, "10_state_dict_and_optimizer_hooks").cells:
            exec(compile_cell(cell), namespace)
        check(namespace["attach_weight_ema"])
        print("dynamo after check:", "torch._dynamo" in sys.modules)
        torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1).zero_grad()
        print("dynamo after the learner's optimizer:", "torch._dynamo" in sys.modules)
    """)
    output = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "attach_weight_ema: passed" in output
    assert "dynamo after check: False" in output
    # the learner's own optimizer is wrapped as torch does it, outside checks
    assert "dynamo after the learner's optimizer: True" in output
