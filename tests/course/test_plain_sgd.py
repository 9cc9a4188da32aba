"""PlainSGD, the optimizer checks use, steps like torch.optim.SGD and runs step hooks;
the grading worker's shortcut leaves optimizers working and torch._dynamo unimported."""

import subprocess
import sys

import torch

from hooked.checks.optimizers import PlainSGD


def _trained(optimizer_class, steps=3):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = optimizer_class(model.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(5, 4)).pow(2).sum().backward()
        optimizer.step()
    return model, optimizer


def test_plain_sgd_matches_torch_sgd():
    plain, _ = _trained(PlainSGD)
    reference, _ = _trained(torch.optim.SGD)
    for mine, theirs in zip(plain.parameters(), reference.parameters()):
        torch.testing.assert_close(mine, theirs)


def test_plain_sgd_runs_step_pre_and_post_hooks():
    _, optimizer = _trained(PlainSGD, steps=0)
    calls = []
    optimizer.register_step_pre_hook(lambda opt, args, kwargs: calls.append("pre"))
    optimizer.register_step_post_hook(lambda opt, args, kwargs: calls.append("post"))
    optimizer.step()
    assert calls == ["pre", "post"]


def test_optimizers_work_without_importing_dynamo_after_the_shortcut():
    code = (
        "import sys, torch\n"
        "from hooked.checks.optimizers import PlainSGD, skip_dynamo_import_in_optimizers_for_good\n"
        "skip_dynamo_import_in_optimizers_for_good()\n"
        "p = torch.nn.Parameter(torch.ones(2))\n"
        "opt = PlainSGD([p], lr=0.5)\n"
        "p.sum().backward(); opt.step(); opt.load_state_dict(opt.state_dict()); opt.zero_grad()\n"
        "assert p.tolist() == [0.5, 0.5] and p.grad is None, p\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "False"
