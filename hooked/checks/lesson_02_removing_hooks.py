"""Checks for lesson 02, removing hooks and keeping them tidy."""

import contextlib
import gc
import io
import linecache
import os
import sys
import types
import warnings
import weakref

import torch
from torch import nn

from hooked.checks.check_api import calling, check_of, fail
from hooked.checks.handles import MISTAKES as HANDLE_MISTAKES, single_handle
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints
from hooked.lesson_files.lesson_format import split_cells, without_magics


class _CountingTensorHook:
    """A tensor hook that counts its calls, notes the gradient shapes it saw and
    returns the gradient times `factor` (None: returns None; "resize": a gradient of
    another shape, which autograd refuses). It notes, each call, how many hooks were
    registered on `tensor` beyond `baseline`."""

    def __init__(self, factor=3.0, error=None, tensor=None, baseline=0):
        self.factor, self.error, self.calls, self.shapes = factor, error, 0, []
        self.tensor, self.baseline, self.registered, self.by_autograd = tensor, baseline, [], []

    def __call__(self, grad):
        self.calls += 1
        self.by_autograd.append(_inside_autograd())
        self.shapes.append(tuple(grad.shape))
        if self.tensor is not None:
            self.registered.append(_hook_count(self.tensor) > self.baseline)
        if self.error is not None:
            raise self.error
        if self.factor is None:
            return None
        if self.factor == "resize":
            return grad.sum()
        return grad * self.factor


def _inside_autograd():
    """Is a backward pass running (autograd's engine is started from torch/autograd/)? Then a hook
    was called by autograd, directly or from a hook of the learner's, not by hand."""
    frame = sys._getframe(1)
    while frame is not None:
        if os.path.join("torch", "autograd") in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


class _WatchingTensorHook:
    """A hook the caller had registered on x before the call: it only counts."""

    def __init__(self):
        self.calls = 0

    def __call__(self, grad):
        self.calls += 1


def _grad_of(tensor):
    """tensor.grad, without the warning PyTorch gives when it is read on a non-leaf."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return tensor.grad


def _hook_count(tensor):
    return len(tensor._backward_hooks or {})


class _CountingForwardHook:
    """A module hook that counts its calls and remembers how many arguments it got."""

    def __init__(self):
        self.calls, self.argument_counts = 0, []

    def __call__(self, *arguments):
        self.calls += 1
        self.argument_counts.append(len(arguments))


def _still_registered_after(x, hook):
    """Did `hook` fire on a fresh backward through x (so it is still registered)?"""
    before = hook.calls
    hook.error = None
    hook.factor = 3.0
    torch.autograd.grad((x * 1.0).sum(), x)
    return hook.calls > before


def _input(seed, leaf):
    """A tensor that requires grad, a leaf or computed from one (a non-leaf), and that leaf."""
    base = random_tensor(seed).requires_grad_()
    return (base if leaf else base * 1.5), base


# The cases of grad_with_temporary_hook: (seed, x has a .grad before the call, what the hook returns, x is a leaf).
# Seed 62: the caller has registered a hook of its own on x; seed 67: the loss's weight is a leaf that requires
# grad too, whose .grad must stay None.
TEMPORARY_HOOK_CASES = ((61, False, 3.0, True), (62, True, 3.0, True), (63, False, None, True),
                        (65, False, 3.0, False), (67, False, 3.0, True))


def _run_temporary_hook_case(grad_with_temporary_hook, seed, had_grad, factor, leaf):
    """Call grad_with_temporary_hook on the case's x, hook and loss; what the judgement needs to know."""
    case = types.SimpleNamespace(seed=seed, had_grad=had_grad, factor=factor, leaf=leaf)
    x, base = _input(seed, leaf)
    case.x, case.base = x, base
    case.weight = weight = random_tensor(seed + 100, x.shape)
    case.weight_leaf = weight_leaf = weight.clone().requires_grad_() if seed == 67 else weight
    case.previous = previous = random_tensor(seed + 200, x.shape) if had_grad else None
    x.grad = previous.clone() if had_grad else None
    case.watcher = _WatchingTensorHook()
    if seed == 62:  # a hook the caller registered earlier must stay
        x.register_hook(case.watcher)
    case.hook = hook = _CountingTensorHook(factor=factor, tensor=x, baseline=_hook_count(x))
    kind = "a leaf" if leaf else "a non-leaf (x = leaf * 1.5)"
    what = "triples the gradient" if factor else "returns None"
    loss_text = "(x * w).sum()" + (", w a leaf that requires grad" if weight_leaf is not weight else "")
    doing = f"calling grad_with_temporary_hook(x, hook, loss_fn) with x {kind} ({describe(x)}), a hook that " \
            f"{what}, and loss_fn(x) = {loss_text}"
    with calling(doing):
        case.result = grad_with_temporary_hook(x, hook, lambda t: (t * weight_leaf).sum())
    case.said = f"Called grad_with_temporary_hook(x, hook, loss_fn), x {kind}, a hook that {what}, loss {loss_text}."
    return case


def _judge_hook_ran_on_x(case):
    """The hook was called by autograd, on x's gradient, while registered on x."""
    hook, said, x = case.hook, case.said, case.x
    if hook.calls == 0:
        fail(f"{said}\nThe hook was never called. Register it on x (x.register_hook(hook)) and compute the "
             "gradient with torch.autograd.grad while it is registered (torch.func.grad does not run tensor hooks, "
             "and torch.autograd.functional differentiates a copy of x).", "hook-never-called")
    if hook.shapes[0] != tuple(x.shape):
        fail(f"{said}\nThe hook received a gradient of shape {hook.shapes[0]}, not x's shape {tuple(x.shape)}: "
             "register it on x itself, not on the loss.", "hook-on-loss")
    if not any(hook.registered) and all(hook.by_autograd):
        fail(f"{said}\nAutograd ran the hook, but while nothing of yours was registered on x: it was registered "
             "on another tensor (a view or a copy of x, such as x.view_as(x) or x.detach().requires_grad_(), is "
             "not x). Register it on x "
             "itself with x.register_hook(hook), and compute the gradient with respect to x.", "hook-on-other-tensor")
    if not any(hook.registered):
        fail(f"{said}\nThe hook was called while nothing of yours was registered on x: you called it yourself. "
             "Register it with x.register_hook(hook), so that autograd calls it while computing the gradient.",
             "hook-called-by-hand")


def _judge_returned_gradient(case):
    """What came back: the gradient of the loss with the hook applied (3 * w), or w for a hook returning None."""
    result, factor, said, weight = case.result, case.factor, case.said, case.weight
    if result is None and factor is None:
        fail(f"{said}\nThe hook returned None, and so did your function. When the hook returns None, "
             "return the gradient autograd computed (torch.autograd.grad's result), not the hook's return value.",
             "returned-hook-result")
    if result is None and not case.leaf:
        fail(f"{said}\nIt returned None. x is a non-leaf: backward() does not fill its .grad (only leaves get "
             "one). Use torch.autograd.grad(loss, x), which returns the gradient for any x.", "read-non-leaf-grad")
    if not isinstance(result, torch.Tensor):
        fail(f"{said}\nIt returned {describe(result)}; expected the gradient, a tensor shaped like x.", "not-a-tensor")
    expected = weight if factor is None else 3 * weight
    if case.hook.calls > 1 and factor is not None and close(result, 9 * weight):
        fail(f"{said}\nIt returned 9 * w: the hook ran twice, so it was registered twice on x. Register it "
             "once, with the handle you then remove.", "registered-twice")
    if factor is not None and close(result, weight):
        fail(f"{said}\nIt returned w, the gradient before the hook changed it; expected 3 * w, the gradient "
             "the hook returned. Compute the gradient while the hook is registered.", "hook-result-lost")
    if not close(result, expected):
        fail(f"{said}\nIt returned {describe(result)}; expected {describe(expected)}"
             f"{' (w: a hook that returns None leaves the gradient as it is)' if factor is None else ' (3 * w)'}.",
             "wrong-value")


def _judge_grads_untouched(case):
    """No .grad written: not x's (kept as it was), not the leaf's behind a non-leaf x, not w's."""
    said, x, previous = case.said, case.x, case.previous
    grad_after = _grad_of(x)
    if case.had_grad and not close(grad_after, previous):
        fail(f"{said}\nx.grad was {describe(previous)} before the call and {describe(grad_after)} after; it must "
             "keep its value. torch.autograd.grad returns the gradient without touching .grad.", "wrote-x-grad")
    if not case.had_grad and grad_after is not None:
        fail(f"{said}\nx.grad was None before the call and {describe(grad_after)} after; it must stay None. "
             "Use torch.autograd.grad, which returns the gradient without writing .grad, or restore .grad.",
             "wrote-x-grad")
    if not case.leaf and x.retains_grad:
        fail(f"{said}\nAfterwards x.retains_grad is True: the call switched on x.retain_grad(), so every later "
             "backward through x fills x.grad. Leave x as it was: torch.autograd.grad(loss, x) returns the "
             "gradient of a non-leaf without retain_grad().", "retained-grad")
    if not case.leaf and case.base.grad is not None:
        fail(f"{said}\nThe leaf that x was computed from had no .grad before the call and has "
             f"{describe(case.base.grad)} after: backward() wrote into it. Write no .grad at all: "
             "torch.autograd.grad(loss, x) returns the gradient and fills no .grad.", "wrote-other-leaf-grad")
    if case.weight_leaf is not case.weight and case.weight_leaf.grad is not None:
        fail(f"{said}\nw had no .grad before the call and has "
             f"{describe(case.weight_leaf.grad)} after: backward() fills the .grad of every leaf behind the loss. "
             "Write no .grad at all: torch.autograd.grad(loss, x) returns the gradient of x only "
             "(backward(inputs=[x]) would also limit it to x).", "wrote-other-leaf-grad")


def _judge_hooks_after(case):
    """Its own hook gone; the caller's stays."""
    if _still_registered_after(case.x, case.hook):
        fail(f"{case.said}\nAfter it returned, the hook was still registered on x (it fired on a later backward). "
             "Remove it before returning: use the handle that register_hook returns, as a context manager or with "
             "try/finally.", "hook-left-registered")
    if case.seed == 62 and not _still_registered_after(case.x, case.watcher):
        fail(f"{case.said}\nx already had another hook, registered by the caller before the call; after the call it "
             "was gone. Remove only the hook you registered, with its handle (not by emptying x._backward_hooks).",
             "removed-callers-hook")


def _check_callers_registration_stays(grad_with_temporary_hook):
    """The caller had registered the same hook on x already: only the call's own registration goes."""
    x = random_tensor(66).requires_grad_()
    weight = random_tensor(166, x.shape)
    hook = _CountingTensorHook(factor=None)
    x.register_hook(hook)
    with calling("calling grad_with_temporary_hook(x, hook, loss_fn) where the caller had already registered "
                 "the same hook on x"):
        grad_with_temporary_hook(x, hook, lambda t: (t * weight).sum())
    before = hook.calls
    torch.autograd.grad((x * 1.0).sum(), x)
    if hook.calls - before != 1:
        fail("Called grad_with_temporary_hook(x, hook, loss_fn) where the caller had registered the same hook on x "
             f"before the call. After the call, a backward through x ran that hook {hook.calls - before} time(s); "
             "expected once: the caller's registration stays. Remove only the registration you made, with its handle "
             "(not every entry of x._backward_hooks that is this hook).", "removed-callers-hook")
    return x


# The exceptions the check makes happen inside the call: (the part that raises, what the message calls it).
FAILING_PARTS = (("loss_fn", "a loss_fn that raises ValueError"), ("hook", "a hook that raises ValueError"),
                 ("autograd", "a hook that returns a gradient of the wrong shape, so that autograd raises "
                              "RuntimeError"))


def _check_removed_when_raising(grad_with_temporary_hook, failing_part, described):
    """The planted exception comes out unchanged, and the hook is gone all the same."""
    x = random_tensor(64).requires_grad_()
    error = ValueError(f"raised on purpose by the checker's {failing_part}")
    hook = _CountingTensorHook(error=error if failing_part == "hook" else None,
                               factor="resize" if failing_part == "autograd" else 3.0)

    def loss_fn(t):
        if failing_part == "loss_fn":
            raise error
        return t.sum()

    def is_planted(raised):
        if failing_part == "autograd":
            return isinstance(raised, RuntimeError) and "has changed the size of value" in str(raised)
        return raised is error or (isinstance(raised, ValueError) and str(raised) == str(error))

    planted = ("autograd's RuntimeError (\"hook ... has changed the size of value\")" if failing_part == "autograd"
               else "the ValueError itself")
    said = f"Called grad_with_temporary_hook(x, hook, loss_fn) with {described}."
    planted_exception_comes_through(
        f"calling grad_with_temporary_hook(x, hook, loss_fn) with {described}",
        lambda: grad_with_temporary_hook(x, hook, loss_fn), is_planted,
        lambda returned: f"{said}\nIt returned normally; the exception must propagate to the caller, not be "
                         "swallowed.",
        hints=(lambda raised: ("changed-exception", f"Expected {planted} to propagate unchanged."),))
    if _still_registered_after(x, hook):
        fail(f"{said}\nAfter the exception the hook was still registered on x (it fired on a later backward). "
             "Remove it also when an exception leaves: use the handle as a context manager, or try/finally.",
             "hook-left-after-exception")
    return x


TEMPORARY_HOOK_MISTAKES = {
    "hook-never-called": "never has autograd call the hook (not registered, or a gradient that runs no tensor hooks)",
    "hook-on-loss": "registers the hook on the loss instead of on x",
    "hook-on-other-tensor": "registers the hook on another tensor than x (a view or a copy of it)",
    "hook-called-by-hand": "calls the hook itself instead of registering it",
    "returned-hook-result": "returns what the hook returned instead of the gradient",
    "read-non-leaf-grad": "reads x.grad after backward(), which a non-leaf x does not get",
    "not-a-tensor": "returns something other than a tensor",
    "registered-twice": "registers the hook twice, so it runs twice",
    "hook-result-lost": "returns the gradient without the hook's change (computed while the hook was not "
                        "registered, or through a wrapper that drops what the hook returns)",
    "wrong-value": "returns a gradient that no diagnosis explains",
    "wrote-x-grad": "writes or changes x.grad (backward() instead of torch.autograd.grad)",
    "retained-grad": "switches on x.retain_grad()",
    "wrote-other-leaf-grad": "fills the .grad of other leaves behind the loss (backward())",
    "hook-left-registered": "leaves the hook registered after returning",
    "removed-callers-hook": "removes hooks the caller registered on x (empties x._backward_hooks, or every "
                            "registration of the hook)",
    "swallowed-exception": "catches an exception raised inside and returns normally",
    "changed-exception": "lets another exception out in place of the one raised inside",
    "hook-left-after-exception": "leaves the hook registered when an exception leaves (no finally or with)",
}


@check_of("grad_with_temporary_hook", mistakes=TEMPORARY_HOOK_MISTAKES)
def check_grad_with_temporary_hook(grad_with_temporary_hook):
    # `latest` holds each case's x until the next case has made its own: no two cases share an id(x).
    latest = None
    for seed, had_grad, factor, leaf in TEMPORARY_HOOK_CASES:
        latest = case = _run_temporary_hook_case(grad_with_temporary_hook, seed, had_grad, factor, leaf)
        _judge_hook_ran_on_x(case)
        _judge_returned_gradient(case)
        _judge_grads_untouched(case)
        _judge_hooks_after(case)
    latest = _check_callers_registration_stays(grad_with_temporary_hook)
    for failing_part, described in FAILING_PARTS:
        latest = _check_removed_when_raising(grad_with_temporary_hook, failing_part, described)


def _module_with_hooks(count):
    module = nn.Linear(3, 2)
    hooks = [_CountingForwardHook() for _ in range(count)]
    handles = [module.register_forward_hook(hook) for hook in hooks]
    return module, hooks, handles


def _fire(module):
    with torch.no_grad():
        module(torch.ones(1, module.in_features))




# What an error of the learner's HookGroup means, where the check calls it.
NO_LEN = (("has no len()", "no-len", "Give HookGroup a __len__ method that returns how many handles it holds."),)
EXIT_SIGNATURE = (("__exit__() takes", "exit-signature", "Python calls __exit__ with the exception's type, value and "
                   "traceback (None, None, None when none left the block): def __exit__(self, exc_type, exc, tb)."),)
# Any error here comes of what remove() left behind.
REMOVE_BREAKS_GROUP = (lambda error: ("remove-breaks-group", "remove() must leave an empty group that works as a new "
                                      "one does, and can be removed again: empty the list of handles, do not delete "
                                      "it or set it to None."),)


def _check_adds_and_counts(group):
    """Three handles added one by one: add() hands each back, len() counts them."""
    module, hooks, handles = _module_with_hooks(3)
    outsider = _CountingForwardHook()  # on the same module, never added to the group
    module.register_forward_hook(outsider)
    for number, handle in enumerate(handles, start=1):
        with calling("calling group.add(handle)"):
            returned = group.add(handle)
        if returned is not handle:
            fail(f"group.add(handle) returned {describe(returned)}; expected the handle it was given, so that "
                 "`h = group.add(module.register_forward_hook(fn))` keeps the handle.", "add-returns-other")
        with calling("calling len(group)"):
            size = len(group)
        if size != number:
            fail(f"after adding {number} handle(s), len(group) is {size}; expected {number}.", "wrong-length")
    return module, hooks, outsider


def _second_group(HookGroup, group):
    """A second group, made while the first holds 3 handles, with one handle of its own."""
    with calling("calling HookGroup() a second time, and len() of the new group"):
        other_group = HookGroup()
        size = len(other_group)
    if size != 0:
        fail(f"a second HookGroup(), just created while the first holds 3 handles, already holds {size}: each group "
             "must start empty, with a list of its own created in __init__ (not a class attribute, not a default "
             "argument such as handles=[], which Python creates once and shares).", "shared-handle-list")
    other_module, other_hooks, other_handles = _module_with_hooks(1)
    other_group.add(other_handles[0])
    if len(group) != 3:
        fail(f"adding a handle to a second HookGroup changed len() of the first to {len(group)}; each group must "
             "keep its own handles (create the list in __init__, not as a class attribute).", "shared-handle-list")
    return other_module, other_hooks


def _check_remove(group, module, hooks, outsider):
    """remove() removes the group's handles, only those, and empties the group."""
    with calling("calling group.remove()"):
        group.remove()
    _fire(module)
    if any(hook.calls for hook in hooks) or len(module._forward_hooks) > 1:
        fail(f"after group.remove(), {sum(hook.calls > 0 for hook in hooks)} of the 3 hooks still fired. "
             "remove() must call .remove() on every held handle.", "hooks-not-removed")
    if outsider.calls != 1:
        fail("after group.remove(), a hook on the same module that was never added to the group was gone too: "
             "remove() must remove only the handles the group holds (the remove() method of each), not empty the "
             "module's whole dict of hooks.", "removed-other-hooks")
    with calling_with_hints("calling len(group) after group.remove()", REMOVE_BREAKS_GROUP):
        size = len(group)
    if size != 0:
        fail(f"after group.remove(), len(group) is {size}; expected 0: the group must be emptied.", "not-emptied")


def _check_as_context_manager(HookGroup, with_error):
    """`with HookGroup() as group:`, the block ending normally or by an exception."""
    module, hooks, handles = _module_with_hooks(2)
    manager, bound, raised = HookGroup(), None, None
    error = ValueError("raised on purpose inside the with block")
    with calling_with_hints("using `with HookGroup() as group:`", EXIT_SIGNATURE):
        try:
            with manager as group:
                bound = group
                if group is manager:
                    for handle in handles:
                        group.add(handle)
                if with_error:
                    raise error
        except ValueError as caught:
            raised = caught
    if bound is not manager:
        fail(f"`with HookGroup() as group:` bound group to {describe(bound)}; __enter__ must return "
             "the group itself (return self).", "enter-not-self")
    leaving = "an exception left the with block" if with_error else "the with block ended"
    if with_error and raised is not error:
        fail(f"when {leaving}, the exception was swallowed: __exit__ must return False or None, "
             "so that the exception propagates.", "exit-swallows-exception")
    _fire(module)
    if any(hook.calls for hook in hooks) or module._forward_hooks:
        fail(f"after {leaving}, hooks added to the group were still registered; __exit__ must remove every "
             "held handle, as remove() does.", "exit-not-removing")
    with calling(f"calling len(group) after {leaving}"):
        size = len(manager)
    if size != 0:
        fail(f"after {leaving}, the hooks were removed but len(group) is {size}; expected 0. __exit__ must call "
             "the group's remove(), which also empties the group, not remove the handles by itself.",
             "exit-not-emptying")
    return module


GROUP_MISTAKES = {
    "not-empty-at-start": "makes a new group that already holds handles",
    "no-len": "gives HookGroup no __len__ method",
    "add-returns-other": "returns something other than the handle from add()",
    "wrong-length": "counts the handles wrongly in len()",
    "shared-handle-list": "keeps the handles in a list every group shares (a class attribute, a default argument)",
    "hooks-not-removed": "leaves hooks of the group registered after remove()",
    "removed-other-hooks": "removes hooks the group does not hold (empties the module's dict of hooks)",
    "not-emptied": "keeps the handles in the group after remove()",
    "remove-breaks-group": "leaves the group unusable after remove() (its list deleted or set to None)",
    "enter-not-self": "returns something other than the group from __enter__",
    "exit-signature": "defines __exit__ without the exception's type, value and traceback arguments",
    "exit-swallows-exception": "swallows the exception in __exit__ (returns True)",
    "exit-not-removing": "leaves the hooks registered when the with block ends",
    "exit-not-emptying": "removes the handles in __exit__ without emptying the group",
}


@check_of("HookGroup", mistakes=GROUP_MISTAKES)
def check_HookGroup(HookGroup):
    with calling("calling HookGroup()"):
        group = HookGroup()
    with calling_with_hints("calling len(group) on a new group", NO_LEN):
        size = len(group)
    if size != 0:
        fail(f"a new HookGroup() holds {size} handle(s) before anything was added; it must start empty.",
             "not-empty-at-start")
    module, hooks, outsider = _check_adds_and_counts(group)
    other_module, other_hooks = _second_group(HookGroup, group)
    _check_remove(group, module, hooks, outsider)
    with calling_with_hints("calling group.remove() a second time", REMOVE_BREAKS_GROUP):
        group.remove()
    _fire(other_module)
    if other_hooks[0].calls != 1:
        fail("removing one HookGroup removed the hooks of another group too; each group must hold its own handles.",
             "shared-handle-list")
    # As a context manager, with and without an exception leaving the block; each case's module is
    # held until the next has made its own, as the modules above are.
    for with_error in (False, True):
        module = _check_as_context_manager(HookGroup, with_error)


NAMED_HOOK_MISTAKES = {
    "not-registered-once": "registers the hook so that one forward call runs it other than once",
    "with-kwargs": "registers the hook with with_kwargs=True",
    "not-a-forward-hook": "registers another kind of hook than a forward hook (a forward pre-hook)",
    "same-name-stacks": "adds a hook under a name already taken without removing the earlier one",
    "old-hook-not-replaced": "keeps the earlier hook when another hook is registered under its name",
    "removed-other-hooks": "removes hooks registered on the module by other means",
    "names-interfere": "lets hooks under different names on one module remove or double each other",
    "one-registry-for-all-modules": "keeps one registry for every module, so a name on one module touches another",
    "keyed-by-hook": "keys the registry by the hook function instead of the name",
    "handle-does-not-remove": "returns a handle whose remove() does not stop the hook",
    "returned-earlier-handle": "returns the handle of the hook it replaced instead of the new one",
    "removed-handle-breaks-name": "fails to register a name again once its handle was removed by hand",
    "prepended": "registers the hook with prepend=True, before the module's earlier hooks",
    "output-lost": "registers a wrapper that drops what the hook returns",
    "registry-lost-on-rerun": "keeps the registry where a second run of the cell makes it anew (a global)",
    "keeps-module-alive": "keeps the module alive from its registry (a dict keyed by the module)",
    "name-as-attribute": "stores the handle as an attribute of the module named by the name",
    "attribute-names-fail": "fails to register names that are also attributes of the module ('weight', 'forward')",
}


@check_of("register_named_hook", mistakes={**NAMED_HOOK_MISTAKES, **{slug: HANDLE_MISTAKES[slug] for slug in (
    "handle-in-a-list", "no-handle")}})
def check_register_named_hook(register_named_hook):
    module = nn.Linear(4, 3)
    first, second = _CountingForwardHook(), _CountingForwardHook()
    _check_named_hook_is_a_forward_hook(register_named_hook, module, first)
    _check_same_name_replaces(register_named_hook, module, first, second)
    _check_names_apart(register_named_hook, module, second)
    _check_named_hook_handles(register_named_hook, module)
    _check_named_hook_order_and_output(register_named_hook)
    _check_named_hook_leaves_attributes(register_named_hook)
    _check_named_hook_registry_lives_on(register_named_hook)


def _register_and_fire(register_named_hook, module, name, hook, call_text, counted=()):
    """register_named_hook(module, name, hook), as `call_text` says; then the hooks `counted` start
    counting from 0, and one forward call of the module runs."""
    with calling(f"calling {call_text}"):
        register_named_hook(module, name, hook)
    for counting in counted:
        counting.calls = 0
    _fire(module)


def _removing_stops(handle, hook, module):
    """Whether, once `handle` is removed, one forward call of `module` no longer runs `hook`."""
    handle.remove()
    hook.calls = 0
    _fire(module)
    return not hook.calls


def _check_named_hook_is_a_forward_hook(register_named_hook, module, first):
    with calling("calling register_named_hook(module, 'count', hook)"):
        handle = register_named_hook(module, "count", first)
    single_handle(handle, "register_named_hook(module, 'count', hook)", "the handle of the forward hook")
    with calling("calling the module after register_named_hook(module, 'count', hook)"):
        _fire(module)
    if first.calls != 1:
        fail(f"after register_named_hook(module, 'count', hook), one forward call ran the hook {first.calls} "
             "times; expected once. Register it with module.register_forward_hook(hook).", "not-registered-once")
    if first.argument_counts[0] == 4:
        fail("the hook was called with 4 arguments (module, args, kwargs, output): it was registered with "
             "with_kwargs=True. Register it with module.register_forward_hook(hook), which calls it with 3.",
             "with-kwargs")
    if first.argument_counts[0] != 3:
        fail(f"the hook was called with {first.argument_counts[0]} arguments; a forward hook gets 3 "
             "(module, args, output). Use register_forward_hook, not register_forward_pre_hook.", "not-a-forward-hook")


def _check_same_name_replaces(register_named_hook, module, first, second):
    """Re-running the cell: the same name replaces the earlier hook."""
    with calling("calling register_named_hook(module, 'count', hook) again (as a re-run cell does)"):
        register_named_hook(module, "count", first)
        register_named_hook(module, "count", first)
    first.calls = 0
    _fire(module)
    if first.calls != 1:
        fail(f"after registering the same hook under 'count' 3 times, one forward call ran it {first.calls} times; "
             "expected once. Remove the hook registered earlier under the same name before adding the new one.",
             "same-name-stacks")
    _register_and_fire(register_named_hook, module, "count", second,
                       "register_named_hook(module, 'count', another_hook)", counted=[first])
    if first.calls or second.calls != 1:
        fail("after registering another hook under the same name 'count', the old hook fired "
             f"{first.calls} time(s) and the new one {second.calls}; expected 0 and 1: the new hook replaces the old. "
             "Keep each module's handles in a registry keyed by the name.", "old-hook-not-replaced")


def _check_names_apart(register_named_hook, module, second):
    """Different names coexist; the same name on another module does not interfere; hooks registered
    by other means stay; one hook function under two names is two registrations."""
    outsider, other = _CountingForwardHook(), _CountingForwardHook()
    module.register_forward_hook(outsider)
    _register_and_fire(register_named_hook, module, "stats", other, "register_named_hook(module, 'stats', hook)",
                       counted=[second, other])
    if outsider.calls != 1:
        fail("register_named_hook removed a hook that was registered on the module by other means; remove only "
             "the hook it registered earlier under the same name.", "removed-other-hooks")
    if other.calls != 1 or second.calls != 1:
        fail(f"after adding a hook under 'stats' next to one under 'count' on the same module, one forward call ran "
             f"them {other.calls} and {second.calls} time(s); expected once each: different names must coexist "
             "(remove only the earlier hook of the same name).", "names-interfere")
    other_module = nn.Linear(4, 3)
    elsewhere = _CountingForwardHook()
    with calling("calling register_named_hook(other_module, 'count', hook)"):
        other_handle = register_named_hook(other_module, "count", elsewhere)
    second.calls = 0
    _fire(module)
    _fire(other_module)
    if second.calls != 1 or elsewhere.calls != 1:
        fail("registering 'count' on a second module removed or doubled the 'count' hook of the first "
             f"(it fired {second.calls} time(s), the second module's {elsewhere.calls}); keep one registry per "
             "module, e.g. a dict stored on the module.", "one-registry-for-all-modules")
    _register_and_fire(register_named_hook, module, "again", second,
                       "register_named_hook(module, 'again', the hook already under 'count')", counted=[second])
    if second.calls != 2:
        fail(f"the same hook registered under 'count' and under 'again' fired {second.calls} time(s) per forward "
             "call; expected 2. Keep each module's handles in a registry keyed by the name, not by the hook function.",
             "keyed-by-hook")
    if not _removing_stops(other_handle, elsewhere, other_module):  # the handle it returns is the hook's own
        fail("removing the handle returned by register_named_hook did not stop the hook; return the handle "
             "that module.register_forward_hook gave you.", "handle-does-not-remove")


# Any error here comes of a handle removed already, by hand, before its name is registered again.
REMOVED_BY_HAND = (lambda error: ("removed-handle-breaks-name", "The handle under that name had been removed by hand "
                                  "already: remove an earlier hook with its handle's remove(), which does nothing the "
                                  "second time, not by deleting it from the module's dicts of hooks yourself."),)


def _check_named_hook_handles(register_named_hook, module):
    """The handle it returns is the new hook's own, also when it replaces an earlier hook; a handle
    removed by hand is harmless: registering under its name again works, once."""
    replacement = _CountingForwardHook()
    with calling("calling register_named_hook(module, 'count', a third hook), replacing the one under 'count'"):
        replacement_handle = register_named_hook(module, "count", replacement)
    single_handle(replacement_handle, "register_named_hook(module, 'count', a third hook), when it replaced an earlier "
                  "hook,", "the handle of the new forward hook")
    if not _removing_stops(replacement_handle, replacement, module):
        fail("when register_named_hook replaced an earlier hook, removing the handle it returned did not stop the "
             "new hook: return the handle of the hook just registered, not the earlier one.", "returned-earlier-handle")

    fresh = nn.Linear(4, 3)
    again = _CountingForwardHook()
    with calling_with_hints("calling register_named_hook(module, 'count', hook), removing its handle by hand, "
                            "then calling register_named_hook(module, 'count', hook) again", REMOVED_BY_HAND):
        register_named_hook(fresh, "count", again).remove()
        register_named_hook(fresh, "count", again)
    _fire(fresh)
    if again.calls != 1:
        fail(f"after a hook's handle was removed by hand and the name registered again, one forward call ran the "
             f"hook {again.calls} time(s); expected once.", "removed-handle-breaks-name")


def _check_named_hook_order_and_output(register_named_hook):
    """Registered with module.register_forward_hook(hook): its return replaces the output, and it runs
    after hooks registered before it."""
    order = []
    ordered = nn.Linear(4, 3)
    ordered.register_forward_hook(lambda module, args, output: order.append("registered first"))

    def replace_output(module, args, output):
        order.append("named")
        return torch.full_like(output, 7.0)

    with calling("calling register_named_hook(module, 'replace', a hook that returns a new output)"):
        register_named_hook(ordered, "replace", replace_output)
    with torch.no_grad():
        output = ordered(torch.ones(1, 4))
    if order and order[0] == "named":
        fail("the hook registered by register_named_hook ran before a hook registered on the module earlier: it was "
             "registered with prepend=True. Register it with module.register_forward_hook(hook), which appends it.",
             "prepended")
    if not torch.equal(output, torch.full_like(output, 7.0)):
        fail("a hook registered through register_named_hook returned a new output (all 7), but the module's output "
             f"was {describe(output)}: its return value was lost. Register the hook itself, or a wrapper that returns "
             "what the hook returns.", "output-lost")


_RERUNNING = []  # set while a cell runs again: a check() inside that cell must not run it once more


def _run_cell_again(function):
    """Run the cell that defined `function` once more, as re-running it in a notebook does, in a
    copy of its namespace (so that the learner's own namespace is untouched), and return the
    function that the new run defines. None when the cell cannot be found or run again: the
    function comes from an imported module (importing again does not run it again), its source is
    not available, or the cell raises."""
    code = getattr(function, "__code__", None)
    name = getattr(function, "__name__", None)
    namespace = getattr(function, "__globals__", None)
    if code is None or not isinstance(name, str) or not isinstance(namespace, dict):
        return None
    module = sys.modules.get(namespace.get("__name__"))
    if module is not None and getattr(module, "__file__", None) == code.co_filename:
        return None
    line = code.co_firstlineno
    cell = next((cell for cell in split_cells("".join(linecache.getlines(code.co_filename)))
                 if cell.first_line <= line < cell.first_line + len(cell.lines)), None)
    if cell is None:
        return None
    text = "\n" * (cell.first_line - 1) + without_magics(cell.text)
    again = dict(namespace)
    if _RERUNNING:
        return None
    _RERUNNING.append(name)
    try:  # silently: what the cell prints was seen when it ran the first time
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(text, code.co_filename, "exec", dont_inherit=True), again)
    except Exception:
        return None
    finally:
        _RERUNNING.clear()
    rerun = again.get(name)
    return rerun if callable(rerun) and rerun is not function else None


def _check_named_hook_registry_lives_on(register_named_hook):
    """The registry must survive a second run of the exercise cell, and must not keep a module alive."""
    module = nn.Linear(4, 3)
    before, after = _CountingForwardHook(), _CountingForwardHook()
    with calling("calling register_named_hook(module, 'count', hook)"):
        register_named_hook(module, "count", before)
    rerun = _run_cell_again(register_named_hook)
    if rerun is not None:
        with calling("running the exercise cell again (as re-running it in the notebook does), then calling "
                     "register_named_hook(module, 'count', another_hook) with the new definition"):
            rerun(module, "count", after)
        _fire(module)
        if before.calls:
            fail("after the exercise cell was run a second time (as when you re-run it in the notebook), "
                 "register_named_hook(module, 'count', another_hook) did not find the hook registered under 'count' "
                 f"before: both fired ({before.calls} and {after.calls} time(s)). A registry made by the cell (a "
                 "global dict, a WeakKeyDictionary, a default argument, an attribute of the function) is made anew "
                 "when the cell runs again; keep it on the module itself.", "registry-lost-on-rerun")

    let_go = nn.Linear(4, 3)
    with calling("calling register_named_hook(module, 'count', hook) on a module the caller then deletes"):
        register_named_hook(let_go, "count", _CountingForwardHook())
    alive = weakref.ref(let_go)
    del let_go
    if alive() is not None:  # not freed at once: only a reference cycle can hold it, which the collector frees
        gc.collect()  # (a full collection with torch loaded costs about 80 ms, so only when needed)
    if alive() is not None:
        fail("after register_named_hook(module, 'count', hook), the caller deleted its module, and the module stayed "
             "alive: something that register_named_hook keeps (a dict keyed by the module?) still refers to it. "
             "Keep the registry on the module itself, so that it goes away with the module.", "keeps-module-alive")


# torch's refusal to set a parameter or submodule to a handle: the name was used as an attribute.
NAME_AS_ATTRIBUTE = (("cannot assign", "name-as-attribute", "The name was used as an attribute of the module; keep the "
                      "handles in one dict of your own, keyed by name, so that any name is safe."),)


def _check_named_hook_leaves_attributes(register_named_hook):
    """A name that is also an attribute of the module ("weight", "forward") changes no attribute."""
    module = nn.Linear(4, 3)
    weight, forward = module.weight, module.forward
    hooks = {name: _CountingForwardHook() for name in ("weight", "forward")}
    for name, hook in hooks.items():
        with calling_with_hints(f"calling register_named_hook(module, {name!r}, hook) on an nn.Linear",
                                NAME_AS_ATTRIBUTE):
            register_named_hook(module, name, hook)
    if module.weight is not weight or "forward" in vars(module) or module.forward != forward:
        changed = "weight" if module.weight is not weight else "forward"
        fail(f"register_named_hook(module, {changed!r}, hook) changed module.{changed}, which is now "
             f"{describe(getattr(module, changed))}: the name was used as an attribute of the module. Keep the "
             "handles in one dict of your own, keyed by name, so that any name is safe.", "name-as-attribute")
    with calling("calling the module after register_named_hook(module, 'weight', ...) and (module, 'forward', ...)"):
        _fire(module)
    if any(hook.calls != 1 for hook in hooks.values()):
        fail("after registering hooks under 'weight' and 'forward', one forward call ran them "
             f"{hooks['weight'].calls} and {hooks['forward'].calls} time(s); expected once each.",
             "attribute-names-fail")
