"""Whatever a learner's code does to torch's global state during a check is undone."""

import random

import torch

from hooked.grader.check_runner import run_exercise_check


def test_global_state_changed_by_learner_code_is_restored_after_each_check():
    hooks = torch.nn.modules.module._global_forward_hooks
    before = (torch.is_grad_enabled(), torch.get_default_dtype(), len(hooks),
              torch.get_rng_state().clone(), random.getstate())

    def double_grad(grad):
        torch.set_grad_enabled(False)
        torch.set_default_dtype(torch.float64)
        torch.nn.modules.module.register_module_forward_hook(lambda module, args, output: None)
        torch.manual_seed(1234)
        random.seed(1234)
        return 2 * grad

    result = run_exercise_check("01_tensor_hooks", "double_grad", double_grad)
    after = (torch.is_grad_enabled(), torch.get_default_dtype(), len(hooks),
             torch.get_rng_state(), random.getstate())
    assert result.status in ("passed", "failed")
    assert after[:3] == before[:3]
    assert torch.equal(after[3], before[3]) and after[4] == before[4]


def test_a_check_that_passes_is_not_disturbed_by_state_an_earlier_check_leaked():
    def make_scale_hook(factor):
        torch.set_grad_enabled(False)
        return lambda grad: grad * factor

    run_exercise_check("01_tensor_hooks", "make_scale_hook", make_scale_hook)
    assert torch.is_grad_enabled()

    def double_grad(grad):
        return grad + grad

    # double_grad's check runs a backward pass, which needs grad mode on.
    assert run_exercise_check("01_tensor_hooks", "double_grad", double_grad).status == "passed"


def test_a_legacy_global_backward_hook_does_not_block_full_ones_in_later_checks():
    module_globals = torch.nn.modules.module

    def double_grad(grad):
        # The deprecated global hook marks the process as using legacy global backward hooks.
        module_globals.register_module_backward_hook(lambda module, grad_input, grad_output: None)
        return 2 * grad

    run_exercise_check("01_tensor_hooks", "double_grad", double_grad)
    handle = module_globals.register_module_full_backward_hook(lambda module, grad_input, grad_output: None)
    handle.remove()


def test_checks_find_a_global_hook_of_every_kind_in_the_dicts_isolation_restores():
    # hooks_left reads the same dicts that isolation restores, each named by the function that fills it.
    import torch.nn.modules.module as module_globals

    from hooked.checks.hooks_left import GLOBAL_MODULE_HOOKS, global_hook_registrar, global_hooks, global_hooks_added
    from hooked.checks.isolation import GLOBAL_HOOK_DICTS, torch_state_restored

    assert all(any(hooks is restored for restored in GLOBAL_HOOK_DICTS) for hooks in GLOBAL_MODULE_HOOKS.values())
    for name in GLOBAL_MODULE_HOOKS:
        register = getattr(module_globals, global_hook_registrar(name))
        with torch_state_restored():
            before = global_hooks()
            handle = register(lambda *args: None)
            assert global_hooks_added(before) == [name]
            handle.remove()
            assert global_hooks_added(before) == []
