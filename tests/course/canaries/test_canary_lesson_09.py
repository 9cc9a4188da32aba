"""Canaries of lesson 09 (pitfalls): torch.save, torch.compile's hook guards, where hooks are kept,
checkpoint recomputation, torch.func, vmap, copy.deepcopy and nn.DataParallel."""

import copy
import functools
import inspect
import io
import logging
import pickle
from collections import OrderedDict

import torch
from torch import nn
from torch.func import functional_call
from torch.func import grad as func_grad
from torch.func import vmap
from torch.nn.modules._functions import BackwardHookFunction
from torch.utils.checkpoint import checkpoint

from canary_pins import canary, described, error_of

COMPILE = "Pitfall 9: `torch.compile` and hooks"
_TOP_LEVEL_LAMBDA = lambda module, args, output: None  # noqa: E731  (as in a notebook; a local one fails otherwise)


@canary("torch.save(model) pickles the hooks with the module, so a lambda hook makes it raise a PicklingError "
        "\"Can't pickle <function <lambda>\"; a saved state_dict carries no hook",
        ("09", "Pitfall 8: `torch.save(model)` pickles the hooks"))
def test_torch_save_of_a_model_with_a_lambda_hook_raises_a_pickling_error(pin):
    net = nn.Sequential(nn.Linear(3, 2))
    net[0].register_forward_hook(_TOP_LEVEL_LAMBDA)
    error = error_of(lambda: torch.save(net, io.BytesIO()))
    pin.holds(isinstance(error, pickle.PicklingError) and "Can't pickle <function <lambda>" in str(error),
              described(error))
    error = error_of(lambda: torch.save(net.state_dict(), io.BytesIO()))
    pin.holds(error is None, f"torch.save(state_dict): {described(error)}")


class _HookFree(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        return self.linear(x).relu()


def _submodule_hook_firings(skip_guards, x):
    """Compile a hook-free model, then hook its submodule: [firings in a compiled call, in a plain call]."""
    torch._dynamo.reset()
    model, calls = _HookFree(), []
    with torch._dynamo.config.patch(skip_nnmodule_hook_guards=skip_guards):
        compiled = torch.compile(model, backend="eager")
        compiled(x)
        with model.linear.register_forward_hook(lambda module, args, output: calls.append(1)):
            compiled(x)
            firings = [len(calls)]
            model(x)
        firings.append(len(calls) - firings[0])
    return firings, model, compiled


@canary("torch._dynamo.config.skip_nnmodule_hook_guards is True by default, so a hook added after compiling on a "
        "submodule of a hook-free model is ignored by the compiled model (0 firings; the plain model fires it); "
        "it fires after torch._dynamo.reset() or with the flag False; a hook on the root module added after "
        "compiling fires; a hook registered before compiling fires on every compiled call",
        ("09", COMPILE), ("09", "Summary"))
def test_torch_compile_ignores_a_submodule_hook_added_after_compiling(pin):
    x = torch.randn(2, 3)
    trace_log = logging.getLogger("torch.__trace")
    trace_level = trace_log.level
    trace_log.setLevel(logging.WARNING)  # dynamo's trace records would fill a failure's captured log
    try:
        flag = torch._dynamo.config.skip_nnmodule_hook_guards
        pin.holds(flag is True, f"skip_nnmodule_hook_guards is {flag!r} by default")
        before, calls = nn.Sequential(nn.Linear(3, 3), nn.ReLU()), []
        before[0].register_forward_hook(lambda module, args, output: calls.append(1))
        compiled_before = torch.compile(before, backend="eager")
        for _ in range(3):
            compiled_before(x)
        pin.holds(len(calls) == 3, f"a hook registered before compiling fired {len(calls)} times in 3 compiled calls")
        firings, after, compiled_after = _submodule_hook_firings(True, x)
        pin.holds(firings == [0, 1], f"[compiled call, plain call] firings of a submodule hook added after "
                  f"compiling: {firings}")
        after_calls = []
        after.linear.register_forward_hook(lambda module, args, output: after_calls.append(1))
        torch._dynamo.reset()
        compiled_after(x)
        pin.holds(after_calls == [1], f"after torch._dynamo.reset(): {len(after_calls)} firings")
        root_calls = []
        after.register_forward_hook(lambda module, args, output: root_calls.append(1))
        compiled_after(x)
        pin.holds(root_calls == [1], f"a root hook added after compiling: {len(root_calls)} firings")
        firings, _, _ = _submodule_hook_firings(False, x)
        pin.holds(firings == [1, 1], f"with skip_nnmodule_hook_guards=False: {firings}")
    finally:
        torch._dynamo.reset()
        trace_log.setLevel(trace_level)


_KEPT_IN = {"register_forward_pre_hook": "_forward_pre_hooks", "register_forward_hook": "_forward_hooks",
            "register_full_backward_pre_hook": "_backward_pre_hooks", "register_full_backward_hook": "_backward_hooks",
            "register_state_dict_pre_hook": "_state_dict_pre_hooks", "register_state_dict_post_hook": "_state_dict_hooks",
            "register_load_state_dict_pre_hook": "_load_state_dict_pre_hooks",
            "register_load_state_dict_post_hook": "_load_state_dict_post_hooks"}


@canary("a module keeps each kind of hook in its own dict (the table: _forward_pre_hooks, _forward_hooks, "
        "_backward_pre_hooks, _backward_hooks, _state_dict_pre_hooks, _state_dict_hooks, _load_state_dict_pre_hooks "
        "holding a wrapper whose .hook is yours, _load_state_dict_post_hooks); with_kwargs and always_call put "
        "{id: True} into _forward_hooks_with_kwargs and _forward_hooks_always_called; global hooks live in "
        "torch.nn.modules.module; a parameter's _backward_hooks and _post_accumulate_grad_hooks are None until a "
        "hook is registered. Exercises 2 and 3 and their checks rely on these names",
        ("09", "Debugging: which hooks are still registered?"),
        ("09", "Exercise 2: `find_registered_hooks`"))
def test_each_kind_of_hook_is_kept_in_the_dict_the_lesson_names(pin):
    demo = nn.Linear(2, 2)
    for method, attribute in _KEPT_IN.items():
        registered = lambda *args: None  # noqa: E731
        handle = getattr(demo, method)(registered)
        holders = [name for name, value in vars(demo).items() if isinstance(value, dict) and handle.id in value]
        stored = getattr(demo, attribute, {}).get(handle.id)
        pin.holds(holders == [attribute], f"{method} keeps its hook in {holders}")
        wrapped = method == "register_load_state_dict_pre_hook"  # the one kind the lesson says is wrapped
        pin.holds((type(stored).__name__ == "_WrappedHook") is wrapped
                  and (getattr(stored, "hook", None) if wrapped else stored) is registered,
                  f"{method} stores {stored!r}")
        handle.remove()
    handle = demo.register_forward_hook(lambda module, args, kwargs, output: None, with_kwargs=True, always_call=True)
    holders = {name: value[handle.id] for name, value in vars(demo).items() if isinstance(value, dict)
               and handle.id in value}
    pin.holds(list(holders) == ["_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called"]
              and holders["_forward_hooks_with_kwargs"] is True, f"with_kwargs and always_call: {holders}")
    handle.remove()
    pin.holds(set(vars(nn.Module())) >= {"_forward_pre_hooks_with_kwargs"}, "a module has no "
              "_forward_pre_hooks_with_kwargs dict")
    pin.holds(all(hasattr(nn.modules.module, name) for name in (
        "_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_pre_hooks", "_global_backward_hooks")),
        "torch.nn.modules.module lost one of its _global_*_hooks dicts")
    pin.holds(demo.weight._backward_hooks is None and demo.weight._post_accumulate_grad_hooks is None,
              f"a fresh parameter's dicts: {demo.weight._backward_hooks}, {demo.weight._post_accumulate_grad_hooks}")


@canary("a parameter's post-accumulate dict set to None keeps its hook firing (autograd holds the old dict), "
        ".clear() stops it, a new dict replaces it; a module given a new hook dict stops firing the hook while a "
        "shallow copy that shares the old dict still fires it",
        ("09", "Exercise 3: `remove_all_hooks`"))
def test_only_clearing_a_hook_dict_in_place_removes_its_hooks_everywhere(pin):
    for how, expected in (("None", ["fired"]), ("clear", []), ("new dict", [])):
        layer, fired = nn.Linear(2, 1), []
        layer.weight.register_post_accumulate_grad_hook(lambda parameter: fired.append("fired"))
        if how == "None":
            layer.weight._post_accumulate_grad_hooks = None
        elif how == "clear":
            layer.weight._post_accumulate_grad_hooks.clear()
        else:
            layer.weight._post_accumulate_grad_hooks = OrderedDict()
        layer(torch.randn(3, 2)).sum().backward()
        pin.holds(fired == expected, f"a parameter's dict after {how}: the hook fired {fired}")
    layer, fired = nn.Linear(2, 1), []
    layer.register_forward_hook(lambda module, args, output: fired.append(module is layer))
    twin = copy.copy(layer)
    layer._forward_hooks = OrderedDict()
    layer(torch.randn(1, 2))
    twin(torch.randn(1, 2))
    pin.holds(fired == [False], f"after a module's dict was replaced, fired for [the layer?]: {fired}")


def _checkpoint_events(use_reentrant):
    """(events in forward, events in backward) of pre- and forward hooks on Linear, ReLU, Linear, checkpointed."""
    net, events = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)), []
    for index, module in enumerate(net):
        module.register_forward_pre_hook(lambda module, args, index=index: events.append(f"pre:{index}"))
        module.register_forward_hook(lambda module, args, output, index=index: events.append(f"fwd:{index}"))
    out = checkpoint(net, torch.randn(2, 3, requires_grad=True), use_reentrant=use_reentrant)
    in_forward = list(events)
    events.clear()
    out.sum().backward()
    return in_forward, events


@canary("torch.utils.checkpoint recomputes the forward pass in backward and so fires the forward pre-hooks and "
        "forward hooks again (pytorch/pytorch#81296): with use_reentrant=True every one; with use_reentrant=False "
        "the recomputation stops once the last saved tensor is recomputed (early stop, the default), so the last "
        "module's forward hook does not fire again while its pre-hook does",
        ("09", "Exercise 4: `predict_checkpoint_recompute`"))
def test_checkpoint_recomputation_fires_forward_hooks_again_in_backward(pin):
    everything = ["pre:0", "fwd:0", "pre:1", "fwd:1", "pre:2", "fwd:2"]
    in_forward, in_backward = _checkpoint_events(use_reentrant=True)
    pin.holds(in_forward == everything and in_backward == everything,
              f"use_reentrant=True: forward {in_forward}, backward {in_backward}")
    in_forward, in_backward = _checkpoint_events(use_reentrant=False)
    pin.holds(in_forward == everything and in_backward == everything[:-1],
              f"use_reentrant=False: forward {in_forward}, backward {in_backward}")


FUNC_ERROR = ("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), "
              "it must override the setup_context staticmethod.")


class _Traced(nn.Linear):
    def forward(self, x):
        self.ran = True
        return super().forward(x)


@canary("torch.func.grad of a model with a full backward hook or pre-hook raises in the forward pass 'In order to "
        "use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), it must override the "
        "setup_context staticmethod.' (BackwardHookFunction defines no setup_context): before forward runs with "
        "respect to the input, after it with respect to the parameters (functional_call); a forward hook that "
        "registers a tensor hook works under it",
        ("09", "Pitfall 10: `torch.func.grad` and full backward hooks"))
def test_torch_func_grad_raises_with_a_full_backward_hook(pin):
    x = torch.randn(3)
    pin.holds("setup_context" not in vars(BackwardHookFunction), "BackwardHookFunction defines setup_context now")
    for register in ("register_full_backward_hook", "register_full_backward_pre_hook"):
        for wrt in ("the input", "the parameters"):
            layer = _Traced(3, 1)
            getattr(layer, register)(lambda module, *grads: None)
            if wrt == "the input":
                error = error_of(lambda: func_grad(lambda x: layer(x).sum())(x))
            else:
                parameters = dict(layer.named_parameters())
                error = error_of(lambda: func_grad(lambda p: functional_call(layer, p, (x,)).sum())(parameters))
            ran = getattr(layer, "ran", False)
            pin.holds(isinstance(error, RuntimeError) and str(error).startswith(FUNC_ERROR)
                      and ran is (wrt == "the parameters"),
                      f"{register}, with respect to {wrt}: {described(error)}; forward ran first: {ran}")
    layer, seen = nn.Linear(3, 1), []
    layer.register_forward_hook(lambda module, args, output: output.register_hook(seen.append) and None)
    gradient = func_grad(lambda x: layer(x).sum())(x)
    pin.holds(len(seen) == 1 and torch._C._functorch.get_unwrapped(seen[0]).tolist() == [1.0]
              and torch.allclose(gradient, layer.weight[0]), f"the tensor hook got {seen}, grad {gradient}")


@canary("under torch.func.vmap (without torch.func.grad) a full backward hook does not raise and is lost: inside, the "
        "module's input and output report requires_grad=False (its weight True), and a backward() through the vmap "
        "call's output never calls the hook, while the weight's gradient is computed (pytorch/functorch#638)",
        ("09", "Pitfall 10: `torch.func.grad` and full backward hooks"))
def test_a_full_backward_hook_is_lost_under_vmap(pin):
    layer, calls, inside = nn.Linear(3, 1), [], {}
    layer.register_full_backward_hook(lambda module, grad_input, grad_output: calls.append(1))
    layer.register_forward_hook(lambda module, args, output: inside.update(
        input=args[0].requires_grad, output=output.requires_grad, weight=module.weight.requires_grad))
    error = error_of(lambda: vmap(layer)(torch.randn(5, 3, requires_grad=True)).sum().backward())
    pin.holds(error is None and inside == {"input": False, "output": False, "weight": True} and calls == []
              and layer.weight.grad is not None,
              f"vmap, then backward: {described(error)}; requires_grad inside {inside}, the hook "
              f"ran {len(calls)} times, weight.grad set: {layer.weight.grad is not None}")


@canary("under torch.func.vmap a forward hook sees one sample's shapes (input (3,), output (2,) for a batch (5, 3) "
        "through Linear(3, 2)) and stores a BatchedTensor that keeps that shape after the call; returned from the "
        "vmapped function, what it caught comes back as the batch (5, 2)",
        ("09", "Pitfall 11: under `torch.func.vmap`, a forward hook sees one sample"))
def test_a_forward_hook_under_vmap_sees_one_sample(pin):
    layer, caught = nn.Linear(3, 2), {}
    layer.register_forward_hook(lambda module, args, output: caught.update(input=args[0], output=output,
                                                                          weight=module.weight))
    batch = torch.randn(5, 3)
    vmap(layer)(batch)
    shapes = tuple(caught["input"].shape), tuple(caught["output"].shape), tuple(caught["weight"].shape)
    pin.holds(shapes == ((3,), (2,), (2, 3)), f"the hook saw input, output and weight shapes {shapes}")
    pin.holds(torch._C._functorch.is_batchedtensor(caught["output"]), "the stored output is not a BatchedTensor")
    _, activations = vmap(lambda x: (layer(x), caught["output"]))(batch)
    pin.holds(tuple(activations.shape) == (5, 2) and torch.allclose(activations, layer(batch)),
              f"returned from the vmapped function: shape {tuple(activations.shape)}")


@canary("copy.deepcopy(model) copies the hook dicts and keeps the same hook function, which then fires for the copy "
        "(with the copy as module); the original's handle removes the hook from the original only",
        ("09", "Pitfall 12: `copy.deepcopy` copies a module's hooks"))
def test_deepcopy_copies_a_modules_hooks(pin):
    original, modules = nn.Linear(3, 2), []
    hook = lambda module, args, output: modules.append(module)  # noqa: E731
    handle = original.register_forward_hook(hook)
    twin = copy.deepcopy(original)
    pin.holds(list(twin._forward_hooks.values()) == [hook], f"the copy's hooks: {twin._forward_hooks}")
    twin(torch.randn(1, 3))
    pin.holds(modules == [twin], f"the copy fired the hook for {modules}")
    handle.remove()
    pin.holds(len(original._forward_hooks) == 0 and len(twin._forward_hooks) == 1,
              f"after handle.remove(): {len(original._forward_hooks)} hooks on the original, "
              f"{len(twin._forward_hooks)} on the copy")


class _Recorder:
    def __init__(self):
        self.outputs = []

    def save(self, module, args, output):
        self.outputs.append(output)


def _save(store, module, args, output):
    store["output"] = output


@canary("copy.deepcopy copies a hook that is an object with what it holds: a functools.partial(save, store) writes, "
        "for the copy, into a copy of store, a bound method recorder.save into a copy of recorder",
        ("09", "Pitfall 12: `copy.deepcopy` copies a module's hooks"))
def test_deepcopy_copies_a_hook_object_with_what_it_holds(pin):
    store, recorder, original = {}, _Recorder(), nn.Linear(3, 2)
    original.register_forward_hook(functools.partial(_save, store))
    original.register_forward_hook(recorder.save)
    twin = copy.deepcopy(original)
    copied_partial, copied_method = twin._forward_hooks.values()
    twin(torch.randn(1, 3))
    pin.holds(copied_partial.args[0] is not store and store == {} and "output" in copied_partial.args[0],
              f"the partial's store is ours: {copied_partial.args[0] is store}; our store: {list(store)}")
    pin.holds(copied_method.__self__ is not recorder and recorder.outputs == [] and
              len(copied_method.__self__.outputs) == 1, f"the bound method's object is ours: "
              f"{copied_method.__self__ is recorder}; our recorder holds {len(recorder.outputs)} outputs")


@canary("without a GPU, nn.DataParallel sets device_ids = [] and forward calls the module itself ('if not "
        "self.device_ids: return self.module(*inputs, **kwargs)'), so a hook's state is kept, and so with one GPU; "
        "on several GPUs it replicates the module per call, and replicate() makes each replica with "
        "module._replicate_for_data_parallel(), which "
        "copies __dict__ shallowly ('replica.__dict__ = self.__dict__.copy()'): hooks shared, attributes set on the "
        "replica lost",
        ("09", "Pitfall 13: `nn.DataParallel` and state a hook sets on its module"))
def test_data_parallel_without_gpus_runs_the_module_itself_and_replicas_copy_dict_shallowly(pin):
    if not torch.cuda.is_available():  # with a GPU only the call without one is left out: the source is read anyway
        model = nn.Linear(3, 2)
        model.register_forward_hook(lambda module, args, output: setattr(module, "last_output", output))
        parallel = nn.DataParallel(model)
        parallel(torch.randn(4, 3))
        pin.holds(parallel.device_ids == [] and parallel.module is model and hasattr(model, "last_output"),
                  f"device_ids {parallel.device_ids}, module is the model: {parallel.module is model}, state kept: "
                  f"{hasattr(model, 'last_output')}")
    init = inspect.getsource(nn.DataParallel.__init__)
    pin.holds('if device_type is None or device_type == "mps":' in init and "self.device_ids = []" in init,
              "DataParallel.__init__ changed:\n" + init)
    forward = inspect.getsource(nn.DataParallel.forward)
    pin.holds("if not self.device_ids:\n                return self.module(*inputs, **kwargs)" in forward
              and "if len(self.device_ids) == 1:\n                return self.module(*inputs[0], **module_kwargs[0])"
              in forward and "replicas = self.replicate(self.module" in forward, "DataParallel.forward changed:\n" + forward)
    replicate = inspect.getsource(torch.nn.parallel.replicate)
    replica_of = inspect.getsource(nn.Module._replicate_for_data_parallel)
    pin.holds("replica = module._replicate_for_data_parallel()" in replicate, "replicate() changed:\n" + replicate)
    pin.holds("replica.__dict__ = self.__dict__.copy()" in replica_of,
              "Module._replicate_for_data_parallel changed:\n" + replica_of)
    fresh = nn.Sequential(nn.Linear(3, 2))  # no parameters of its own: replicate() gives a replica its copies
    fresh.register_forward_hook(lambda module, args, output: setattr(module, "last_output", output))
    replica = fresh._replicate_for_data_parallel()
    pin.holds(replica._forward_hooks is fresh._forward_hooks, "a replica no longer shares its module's hook dict")
    replica(torch.randn(2, 3))
    pin.holds(hasattr(replica, "last_output") and not hasattr(fresh, "last_output"),
              f"after a replica's call: set on the replica {hasattr(replica, 'last_output')}, on its module "
              f"{hasattr(fresh, 'last_output')}")


@canary("a forward hook written as a lambda that returns output.register_hook(...)'s handle replaces the output with "
        "the handle, and the next layer raises TypeError with 'must be Tensor, not RemovableHandle' in its text",
        ("09", "Pitfall 1: full backward hooks and in-place operations"))
def test_a_lambda_forward_hook_returning_a_handle_breaks_the_next_layer(pin):
    net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    net[0].register_forward_hook(lambda module, args, output: output.register_hook(print))
    error = error_of(lambda: net(torch.randn(3, 4)))
    pin.holds(isinstance(error, TypeError) and "must be Tensor, not RemovableHandle" in str(error), described(error))
