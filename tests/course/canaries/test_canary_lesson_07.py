"""Canaries of lesson 07 (global hooks): the signatures of the global registrations, the deprecated global
backward hook, and the with_kwargs + always_call bug of torch 2.13."""

import inspect
import json
import subprocess
import sys
import warnings

import torch
from torch import nn
from torch.nn.modules import module as module_hooks

from canary_pins import canary


class _Broken(nn.Module):
    def forward(self, x, scale=1.0):
        raise RuntimeError("this layer is broken")


class _Masked(nn.Module):
    def forward(self, x, mask=None):
        return x if mask is None else x * mask


@canary("of the global registrations, only register_module_forward_hook takes with_kwargs (and always_call); the "
        "global forward pre-hook has no with_kwargs, and none of them has prepend",
        ("07", "The four global hooks, and when they fire"),
        ("07", "`with_kwargs=True` on global hooks"))
def test_only_the_global_forward_hook_takes_with_kwargs_and_none_takes_prepend(pin):
    parameters = {name: set(inspect.signature(getattr(module_hooks, f"register_module_{name}")).parameters)
                  for name in ("forward_pre_hook", "forward_hook", "full_backward_pre_hook", "full_backward_hook")}
    pin.holds(parameters["forward_hook"] >= {"with_kwargs", "always_call"},
              f"register_module_forward_hook takes {sorted(parameters['forward_hook'])}")
    pin.holds(not any("with_kwargs" in p for name, p in parameters.items() if name != "forward_hook"),
              f"the global registrations take {parameters}")
    pin.holds(not any("prepend" in p for p in parameters.values()), f"the global registrations take {parameters}")


@canary("a module's own prepend=True hook still runs after the global hooks of the same kind",
        ("07", "`prepend=True`: only among a module's own hooks"))
def test_prepend_never_moves_a_hook_before_the_global_ones(pin):
    ran, layer = [], nn.Identity()
    with module_hooks.register_module_forward_hook(lambda module, args, output: ran.append("global")), \
            layer.register_forward_hook(lambda module, args, output: ran.append("own, prepend"), prepend=True):
        layer(torch.ones(1))
    pin.holds(ran == ["global", "own, prepend"], f"order: {ran}")


@canary("when forward raises, torch 2.13 calls a global forward hook registered with with_kwargs=True and "
        "always_call=True as hook(module, args, output), without kwargs (Module._call_impl's exception path does "
        "not look at with_kwargs), so a hook written for four arguments raises a TypeError (\"missing 1 required "
        "positional argument: 'output'\") that torch turns into "
        "the warning 'global module forward hook with ``always_call=True`` raised an exception'; the module's own "
        "hook with the same options runs",
        ("07", "A bug: a global hook with `with_kwargs=True` *and* `always_call=True`"),
        ("07", "Summary"))
def test_a_global_with_kwargs_always_call_hook_never_runs_when_forward_raises(pin):
    flags_before = dict(module_hooks._global_forward_hooks_with_kwargs)
    try:
        _global_with_kwargs_always_call_hook(pin)
    finally:  # removing a global with_kwargs hook leaves its flag behind on torch 2.13: drop what this test added
        module_hooks._global_forward_hooks_with_kwargs.clear()
        module_hooks._global_forward_hooks_with_kwargs.update(flags_before)


def _global_with_kwargs_always_call_hook(pin):
    calls = []

    def note_call(module, args, kwargs, output):
        calls.append((type(module).__name__, kwargs, output))

    with module_hooks.register_module_forward_hook(note_call, with_kwargs=True, always_call=True):
        _Masked()(torch.ones(3), mask=torch.ones(3))
    pin.holds(len(calls) == 1, f"when forward succeeds, the global hook ran {len(calls)} times")
    calls.clear()
    broken = _Broken()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with module_hooks.register_module_forward_hook(note_call, with_kwargs=True, always_call=True), \
                broken.register_forward_hook(note_call, with_kwargs=True, always_call=True):
            try:
                broken(torch.ones(1), scale=2.0)
            except RuntimeError:
                pass
    messages = [str(w.message) for w in caught]
    pin.holds(calls == [("_Broken", {"scale": 2.0}, None)], f"when forward raises, the hooks that ran: {calls} (the "
              "global hook is now called right, if it is in the list)")
    pin.holds(any("global module forward hook with ``always_call=True`` raised an exception" in m
                  and "missing 1 required positional argument: 'output'" in m for m in messages),
              f"warnings: {messages}")
    call_impl = inspect.getsource(nn.Module._call_impl)
    exception_path = call_impl[call_impl.index("except Exception:"):]
    global_loop = exception_path[:exception_path.index("for hook_id, hook in self._forward_hooks.items()")]
    pin.holds("hook(self, args, result)" in global_loop and "with_kwargs" not in global_loop,
              "Module._call_impl's exception path now calls global hooks differently:\n" + global_loop)


_FRESH_PROCESS = """
import json
import torch.nn.modules.module as module_hooks

def error_of(call):
    try:
        call()
    except RuntimeError as raised:
        return str(raised)

module_hooks.register_module_full_backward_hook(lambda m, grad_input, grad_output: None).remove()
after_full = error_of(lambda: module_hooks.register_module_backward_hook(lambda m, gi, go: None))
print(json.dumps({"deprecated after a full one was removed": after_full}))
"""

_FRESH_PROCESS_DEPRECATED_FIRST = """
import json, warnings
import torch
import torch.nn.modules.module as module_hooks
from torch import nn

class DoubleThenAddOne(nn.Module):
    def forward(self, x):
        return x * 2 + 1

model, x, seen = DoubleThenAddOne(), torch.ones(3, requires_grad=True), []
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with module_hooks.register_module_backward_hook(lambda m, grad_input, grad_output: seen.append(grad_input)):
        model(x).sum().backward()
try:
    module_hooks.register_module_full_backward_hook(lambda m, grad_input, grad_output: None)
    error = None
except RuntimeError as raised:
    error = str(raised)
print(json.dumps({"warnings": [(w.category.__name__, str(w.message)) for w in caught],
                  "grad_input": [None if g is None else g.tolist() for g in seen[0]],
                  "full after the deprecated one was removed": error}))
"""

_MIXING_ERROR = ("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                 "Please use only one of them.")


def _in_a_fresh_process(code):
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    if completed.returncode != 0:  # say what torch raised there, not only the exit status
        raise RuntimeError(f"the fresh process failed: {completed.stderr.strip().splitlines()[-1:]}")
    return json.loads(completed.stdout)


@canary("a process can use global backward hooks of one kind only, full or deprecated, and torch remembers which "
        "came first even after remove(): the other kind then raises 'Cannot use both regular backward hooks and "
        "full backward hooks as a global Module hook. Please use only one of them.'; the deprecated one warns "
        "with a FutureWarning and reports the last operation's grad_input ([1, 1, 1], None for x * 2 + 1)",
        ("07", "The deprecated `register_module_backward_hook`: do not use it"))
def test_global_backward_hooks_of_both_kinds_cannot_be_mixed_in_one_process(pin):
    report = _in_a_fresh_process(_FRESH_PROCESS)
    pin.holds(report["deprecated after a full one was removed"] == _MIXING_ERROR,
              f"the deprecated global hook after a full one was removed: {report}")
    report = _in_a_fresh_process(_FRESH_PROCESS_DEPRECATED_FIRST)
    pin.holds(report["full after the deprecated one was removed"] == _MIXING_ERROR,
              f"a full global hook after a deprecated one was removed: {report}")
    pin.holds([category for category, _ in report["warnings"]] == ["FutureWarning"]
              and report["warnings"][0][1].startswith("Using a non-full backward hook when the forward contains "
                                                      "multiple autograd Nodes is deprecated"),
              f"warnings: {report['warnings']}")
    pin.holds(report["grad_input"] == [[1.0, 1.0, 1.0], None], f"grad_input: {report['grad_input']}")


@canary("for one module every global hook fires before the module's own hook of the same kind (forward pre, "
        "forward, backward pre, backward), even one registered earlier with prepend=True",
        ("07", "The four global hooks, and when they fire"))
def test_global_hooks_fire_before_a_modules_own(pin):
    order, layer = [], nn.Linear(2, 2)
    handles = [layer.register_forward_pre_hook(lambda m, args: order.append("own forward pre"), prepend=True),
               layer.register_forward_hook(lambda m, args, out: order.append("own forward"), prepend=True),
               layer.register_full_backward_pre_hook(lambda m, gout: order.append("own backward pre"), prepend=True),
               layer.register_full_backward_hook(lambda m, gin, gout: order.append("own backward"), prepend=True),
               module_hooks.register_module_forward_pre_hook(lambda m, args: order.append("global forward pre")),
               module_hooks.register_module_forward_hook(lambda m, args, out: order.append("global forward")),
               module_hooks.register_module_full_backward_pre_hook(lambda m, gout: order.append("global backward pre")),
               module_hooks.register_module_full_backward_hook(lambda m, gin, gout: order.append("global backward"))]
    try:
        layer(torch.randn(1, 2, requires_grad=True)).sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    pin.holds(order == ["global forward pre", "own forward pre", "global forward", "own forward",
                        "global backward pre", "own backward pre", "global backward", "own backward"], f"order: {order}")


@canary("calls start parent first and finish children first; in backward a parent's backward pre-hook fires before "
        "its children's and its backward hook after theirs, while siblings come in reverse order",
        ("07", "Parents and children: calls start parent first and finish children first"),
        ("07", "Exercise 1: `summarize_model`"), ("07", "Exercise 2: `find_first_nonfinite`"))
def test_parents_start_first_and_finish_last_and_backward_reverses_siblings(pin):
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.Tanh()))
    names = {module: name or "(root)" for name, module in model.named_modules()}
    events = []
    handles = [module_hooks.register_module_forward_pre_hook(lambda m, args: events.append(("start", names[m]))),
               module_hooks.register_module_forward_hook(lambda m, args, out: events.append(("finish", names[m]))),
               module_hooks.register_module_full_backward_pre_hook(lambda m, gout: events.append(("bpre", names[m]))),
               module_hooks.register_module_full_backward_hook(lambda m, gin, gout: events.append(("b", names[m])))]
    try:
        model(torch.randn(1, 2, requires_grad=True)).sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    starts = [name for kind, name in events if kind == "start"]
    finishes = [name for kind, name in events if kind == "finish"]
    backward = [(kind, name) for kind, name in events if kind in ("bpre", "b")]
    pin.holds(starts == ["(root)", "0", "1", "1.0", "1.1"], f"forward pre-hooks fired for {starts}")
    pin.holds(finishes == ["0", "1.0", "1.1", "1", "(root)"], f"forward hooks fired for {finishes}")
    pin.holds(backward == [("bpre", "(root)"), ("bpre", "1"), ("bpre", "1.1"), ("b", "1.1"), ("bpre", "1.0"),
                           ("b", "1.0"), ("b", "1"), ("bpre", "0"), ("b", "0"), ("b", "(root)")],
              f"backward hooks fired: {backward}")


@canary("when forward raises, a global always_call forward hook runs for the failing module and then for each parent, "
        "child first, with output=None, after the failing module's own always_call hook's turn (global first, then "
        "own); a plain hook does not run",
        ("07", "`always_call=True` on global hooks and parents"))
def test_always_call_hooks_run_for_the_failing_module_and_its_parents_child_first(pin):
    model = nn.Sequential(nn.Linear(3, 3), _Broken())
    names = {module: name or "(root)" for name, module in model.named_modules()}
    ran = []
    with module_hooks.register_module_forward_hook(lambda m, args, out: ran.append(("global", names[m], out)),
                                                   always_call=True), \
            model[1].register_forward_hook(lambda m, args, out: ran.append(("own", names[m], out)), always_call=True), \
            model[1].register_forward_hook(lambda m, args, out: ran.append(("plain", names[m], out))):
        try:
            model(torch.randn(1, 3))
        except RuntimeError:
            pass
    pin.holds(ran[0][:2] == ("global", "0") and ran[0][2] is not None
              and ran[1:] == [("global", "1", None), ("own", "1", None), ("global", "(root)", None)],
              f"hooks that ran (kind, module, output is None): {[(k, n, o is None) for k, n, o in ran]}")


@canary("torch's ModuleTracker registers the global forward pre-hook and forward hook "
        "(register_module_forward_pre_hook, register_module_forward_hook), and FlopCounterMode makes a ModuleTracker",
        ("07", "A global hook fires for every module"))
def test_module_tracker_uses_the_global_forward_hooks_and_flop_counter_uses_it(pin):
    from torch.utils.flop_counter import FlopCounterMode
    from torch.utils.module_tracker import ModuleTracker

    tracker = inspect.getsource(ModuleTracker)
    uses = [name for name in ("register_module_forward_pre_hook(", "register_module_forward_hook(") if name in tracker]
    pin.holds(len(uses) == 2, f"ModuleTracker's source calls {uses}")
    pin.holds("ModuleTracker()" in inspect.getsource(FlopCounterMode),
              "FlopCounterMode no longer makes a ModuleTracker")


@canary("global full backward hooks on a net whose input needs no grad: torch warns 'Full backward hook is firing when "
        "gradients are computed with respect to module outputs', once the root's hooks have run",
        ("07", "Parents and children: calls start parent first and finish children first"))
def test_global_full_backward_hooks_warn_when_no_input_requires_grad(pin):
    net, events = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)), []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with module_hooks.register_module_full_backward_pre_hook(lambda m, go: events.append("pre")), \
                module_hooks.register_module_full_backward_hook(lambda m, gi, go: events.append("hook")):
            net(torch.randn(2, 3)).sum().backward()
    messages = [str(w.message) for w in caught]
    pin.holds(events[:2] == ["pre", "hook"], f"the first events: {events[:2]}")
    pin.holds(bool(messages) and messages[0].startswith("Full backward hook is firing when gradients are computed "
                                                         "with respect to module outputs"), f"warnings: {messages}")
