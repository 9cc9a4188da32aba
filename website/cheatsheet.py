"""The hooks cheat sheet: one row per hook API of the PyTorch versions the course supports (torch 2.13 to 2.15).

The site renders this table (website/hooks.py) and course tests check every row against the
installed torch: tests/course/test_hooks_cheatsheet.py that the API exists and the parameters
in `call` are exactly its signature, tests/course/test_hooks_cheatsheet_behaviour.py that
`fires` and `returns` say what running the hook shows.

`lesson` is the slug of the lesson that teaches the API (the site links it once the
lesson file exists, and says "coming" until then), or None with `planned` naming the
later lesson's topic. A row for an API that a newer torch added has `since` (its first version, "2.14"),
says so in `fires`, and is checked only on that torch or newer."""

MODULE = "torch.nn.modules.module"
GRAPH = "torch.autograd.graph"
OPTIM = "torch.optim.optimizer"

ROWS = [
    # --- tensor hooks
    dict(group="Tensor", api="torch.Tensor.register_hook",
         call="t.register_hook(hook)",
         hook="hook(grad)",
         fires="In backward, once per pass with the gradient of `t` summed over all its uses; "
               "before it is accumulated into `t.grad`.",
         returns="A tensor of the same shape and dtype replaces the gradient (another shape or dtype "
                 "raises `RuntimeError`); `None` keeps it.",
         lesson="01_tensor_hooks"),
    dict(group="Tensor", api="torch.Tensor.register_post_accumulate_grad_hook",
         call="t.register_post_accumulate_grad_hook(hook)",
         hook="hook(t): the tensor, not its gradient",
         fires="Leaf tensors only: after the gradient has been accumulated into `t.grad`. "
               "Not fired by `torch.autograd.grad`.",
         returns="`None`. Another tensor raises `RuntimeError` (`... should return None`); "
                 "returning the tensor itself is let through.",
         lesson="08_autograd_hooks"),
    # --- module hooks
    dict(group="Module", api="torch.nn.Module.register_forward_pre_hook",
         call="m.register_forward_pre_hook(hook, *, prepend=False, with_kwargs=False)",
         hook="hook(module, args), or hook(module, args, kwargs) with `with_kwargs=True`",
         fires="On `m(...)`, before `forward` runs (not when `m.forward(...)` is called directly).",
         returns="`None` keeps the inputs; a tuple replaces `args` (a non-tuple is wrapped in a 1-tuple); "
                 "with `with_kwargs=True`, a pair `(args, kwargs)`.",
         lesson="03_forward_pre_hooks"),
    dict(group="Module", api="torch.nn.Module.register_forward_hook",
         call="m.register_forward_hook(hook, *, prepend=False, with_kwargs=False, always_call=False)",
         hook="hook(module, args, output), or hook(module, args, kwargs, output) with `with_kwargs=True`",
         fires="On `m(...)`, after `forward` returns, also under `no_grad` and in `eval()`; "
               "with `always_call=True` also when `forward` raises (with `output=None`).",
         returns="Any value other than `None` replaces the output, unchecked.",
         lesson="04_forward_hooks"),
    dict(group="Module", api="torch.nn.Module.register_full_backward_pre_hook",
         call="m.register_full_backward_pre_hook(hook, prepend=False)",
         hook="hook(module, grad_output)",
         fires="In backward, when the gradients with respect to the module's outputs are ready, "
               "before the module's own backward.",
         returns="A tuple of the same length replaces `grad_output` (another length raises "
                 "`RuntimeError`); `None` keeps it.",
         lesson="05_backward_hooks"),
    dict(group="Module", api="torch.nn.Module.register_full_backward_hook",
         call="m.register_full_backward_hook(hook, prepend=False)",
         hook="hook(module, grad_input, grad_output)",
         fires="In backward, once the gradients with respect to the module's positional inputs exist; "
               "if no input requires grad, earlier, with `grad_input` all `None`. A parameter's `.grad` "
               "can still be pending (a weight shared with an earlier layer). Not installed under `no_grad`.",
         returns="A tuple of `len(grad_input)` replaces `grad_input` (another length raises "
                 "`RuntimeError`); `None` keeps it.",
         lesson="05_backward_hooks"),
    dict(group="Module", api="torch.nn.Module.register_backward_hook",
         call="m.register_backward_hook(hook)",
         hook="hook(module, grad_input, grad_output)",
         fires="**Deprecated.** On the module's *last operation* only, so `grad_input` holds that "
               "operation's input gradients, not the module's.",
         returns="Do not use it: use `register_full_backward_hook`.",
         lesson="05_backward_hooks"),
    dict(group="Module state dict", api="torch.nn.Module.register_state_dict_pre_hook",
         call="m.register_state_dict_pre_hook(hook)",
         hook="hook(module, prefix, keep_vars)",
         fires="In `state_dict()`, before this module adds its entries.",
         returns="Ignored.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Module state dict", api="torch.nn.Module.register_state_dict_post_hook",
         call="m.register_state_dict_post_hook(hook)",
         hook="hook(module, state_dict, prefix, local_metadata). On torch 2.13 a bound method cannot be "
              "registered (`AttributeError: 'method' object has no attribute '_from_public_api'`): register "
              "`functools.partial(method)` or a function.",
         fires="In `state_dict()`, after this module's whole subtree has added its entries, so children's "
               "post-hooks run before their parent's.",
         returns="Must return `None` (else `state_dict post-hook must return None`): edit `state_dict` in place.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Module state dict", api="torch.nn.Module.register_load_state_dict_pre_hook",
         call="m.register_load_state_dict_pre_hook(hook)",
         hook="hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)",
         fires="In `load_state_dict()`, before this module loads its entries (parents before children).",
         returns="Ignored: edit `state_dict` in place.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Module state dict", api="torch.nn.Module.register_load_state_dict_post_hook",
         call="m.register_load_state_dict_post_hook(hook)",
         hook="hook(module, incompatible_keys)",
         fires="In `load_state_dict()`, after loading (children before parents).",
         returns="Must return `None` (else an `AssertionError`): edit `incompatible_keys` in place.",
         lesson="10_state_dict_and_optimizer_hooks"),
    # --- global module hooks
    dict(group="Global module", api=f"{MODULE}.register_module_forward_pre_hook",
         call=f"{MODULE}.register_module_forward_pre_hook(hook)",
         hook="hook(module, args)",
         fires="Like a forward pre-hook, for every module, before the module's own pre-hooks.",
         returns="As for `register_forward_pre_hook`.",
         lesson="07_global_and_kwargs_hooks"),
    dict(group="Global module", api=f"{MODULE}.register_module_forward_hook",
         call=f"{MODULE}.register_module_forward_hook(hook, *, with_kwargs=False, always_call=False)",
         hook="hook(module, args, output), or hook(module, args, kwargs, output) with `with_kwargs=True` "
              "(on torch 2.13, combined with `always_call=True` it is called wrongly when forward raises)",
         fires="Like a forward hook, for every module, before the module's own forward hooks.",
         returns="As for `register_forward_hook`.",
         lesson="07_global_and_kwargs_hooks"),
    dict(group="Global module", api=f"{MODULE}.register_module_full_backward_pre_hook",
         call=f"{MODULE}.register_module_full_backward_pre_hook(hook)",
         hook="hook(module, grad_output)",
         fires="Like a full backward pre-hook, for every module, before the module's own.",
         returns="As for `register_full_backward_pre_hook`.",
         lesson="07_global_and_kwargs_hooks"),
    dict(group="Global module", api=f"{MODULE}.register_module_full_backward_hook",
         call=f"{MODULE}.register_module_full_backward_hook(hook)",
         hook="hook(module, grad_input, grad_output)",
         fires="Like a full backward hook, for every module, before the module's own.",
         returns="As for `register_full_backward_hook`.",
         lesson="07_global_and_kwargs_hooks"),
    dict(group="Global module", api=f"{MODULE}.register_module_backward_hook",
         call=f"{MODULE}.register_module_backward_hook(hook)",
         hook="hook(module, grad_input, grad_output)",
         fires="**Deprecated**, like `register_backward_hook`, for every module. Once a global hook of "
               "one backward kind (full or deprecated) is registered, registering the other raises "
               "`RuntimeError` for the rest of the process, even after `remove()`.",
         returns="Do not use it: use `register_module_full_backward_hook`.",
         lesson="07_global_and_kwargs_hooks"),
    dict(group="Global module", api=f"{MODULE}.register_module_parameter_registration_hook",
         call=f"{MODULE}.register_module_parameter_registration_hook(hook)",
         hook="hook(module, name, param)",
         fires="When any module registers a parameter, also by attribute assignment (`self.w = nn.Parameter(...)`).",
         returns="A value other than `None` is registered instead.",
         lesson="07_global_and_kwargs_hooks"),
    dict(group="Global module", api=f"{MODULE}.register_module_buffer_registration_hook",
         call=f"{MODULE}.register_module_buffer_registration_hook(hook)",
         hook="hook(module, name, buffer)",
         fires="When any module registers a buffer: `register_buffer`, assigning an `nn.Buffer`, "
               "or assigning to an existing buffer's name.",
         returns="A value other than `None` is registered instead.",
         lesson="07_global_and_kwargs_hooks"),
    dict(group="Global module", api=f"{MODULE}.register_module_module_registration_hook",
         call=f"{MODULE}.register_module_module_registration_hook(hook)",
         hook="hook(module, name, submodule)",
         fires="When any module registers a submodule, also by attribute assignment.",
         returns="A value other than `None` is registered instead.",
         lesson="07_global_and_kwargs_hooks"),
    # --- autograd graph
    dict(group="Autograd node", api="torch.autograd.graph.Node.register_prehook",
         call="t.grad_fn.register_prehook(fn)",
         hook="fn(grad_outputs)",
         fires="In backward, before the node (the operation that made `t`) runs.",
         returns="A tuple of the same length replaces `grad_outputs`; `None` keeps them.",
         lesson="08_autograd_hooks"),
    dict(group="Autograd node", api="torch.autograd.graph.Node.register_hook",
         call="t.grad_fn.register_hook(fn)",
         hook="fn(grad_inputs, grad_outputs)",
         fires="In backward, after the node has computed the gradients of its inputs.",
         returns="A tuple of `len(grad_inputs)` replaces `grad_inputs`; `None` keeps them.",
         lesson="08_autograd_hooks"),
    dict(group="Autograd node", api=f"{GRAPH}.node_creation_hook", since="2.14",
         call=f"with {GRAPH}.node_creation_hook(hook):",
         hook="hook(node): each autograd node made inside the block",
         fires="Since torch 2.14. Inside the block, once for each node that an operation on tensors that require "
               "grad creates (a leaf's `AccumulateGrad` too), once the node is complete; not under `no_grad`. "
               "Nested blocks: every hook, outermost first.",
         returns="`None`; another value raises `RuntimeError` (`node creation hook must return None, ...`), and so "
                 "does creating a node inside the hook.",
         lesson=None, planned="lesson 08, once the course's oldest torch has it (2.14)"),
    dict(group="Multi-grad", api=f"{GRAPH}.register_multi_grad_hook",
         call=f"{GRAPH}.register_multi_grad_hook(tensors, fn, *, mode='all')",
         hook="fn(grads): one entry per tensor, `None` where none was computed; "
              "with `mode='any'`, fn(grad) with the first gradient computed",
         fires="In backward, once per pass: `'all'` after the last of the tensors' gradients that "
               "the pass computes (`None` for the others), `'any'` at the first of them; also under "
               "`torch.autograd.grad`, except that with `mode='all'` a hooked leaf among its `inputs` makes it "
               "raise `RuntimeError` (`A leaf node was passed to _will_engine_execute_node ...`, "
               "pytorch/pytorch#131753).",
         returns="Ignored.",
         lesson="08_autograd_hooks"),
    dict(group="Saved tensors", api=f"{GRAPH}.saved_tensors_hooks",
         call=f"with {GRAPH}.saved_tensors_hooks(pack_hook, unpack_hook):",
         hook="pack_hook(tensor), unpack_hook(packed)",
         fires="`pack_hook` in forward, whenever autograd saves a tensor for backward; `unpack_hook` in "
               "backward, when that tensor is used. The innermost pair wins.",
         returns="`pack_hook`'s value is stored instead of the tensor; `unpack_hook` must return "
                 "a tensor with the original's values, shape and dtype (a wrong one may raise in backward, or "
                 "give a silently wrong gradient).",
         lesson="08_autograd_hooks"),
    dict(group="Saved tensors", api=f"{GRAPH}.save_on_cpu",
         call=f"with {GRAPH}.save_on_cpu(pin_memory=False, device_type='cuda'):",
         hook="(a ready-made pack/unpack pair)",
         fires="Like `saved_tensors_hooks`: saved tensors move to the CPU in forward and back in backward.",
         returns="—",
         lesson="08_autograd_hooks"),
    dict(group="Saved tensors", api=f"{GRAPH}.disable_saved_tensors_hooks",
         call=f"with {GRAPH}.disable_saved_tensors_hooks(error_message):",
         hook="—",
         fires="Inside the block, using `saved_tensors_hooks` raises `RuntimeError(error_message)`.",
         returns="—",
         lesson="08_autograd_hooks"),
    # --- optimizer
    dict(group="Optimizer", api="torch.optim.Optimizer.register_step_pre_hook",
         call="opt.register_step_pre_hook(hook)",
         hook="hook(optimizer, args, kwargs): `args` starts with the optimizer, `(opt,)` for `opt.step()`",
         fires="Before every `opt.step()`.",
         returns="`None`, or a pair `(args, kwargs)` that `step` is called with instead (`args` still "
                 "starting with the optimizer). Anything but `None` or a tuple of two raises `RuntimeError`; "
                 "a wrong pair such as `(1, 2)` passes that test and fails when `step` is called "
                 "(`TypeError: ... argument after ** must be a mapping`).",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Optimizer", api="torch.optim.Optimizer.register_step_post_hook",
         call="opt.register_step_post_hook(hook)",
         hook="hook(optimizer, args, kwargs)",
         fires="After every `opt.step()`, with the `args` and `kwargs` that `step` was called with.",
         returns="Ignored.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Optimizer", api="torch.optim.Optimizer.register_state_dict_pre_hook",
         call="opt.register_state_dict_pre_hook(hook, prepend=False)",
         hook="hook(optimizer)",
         fires="In `opt.state_dict()`, before it is built.",
         returns="Ignored.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Optimizer", api="torch.optim.Optimizer.register_state_dict_post_hook",
         call="opt.register_state_dict_post_hook(hook, prepend=False)",
         hook="hook(optimizer, state_dict)",
         fires="In `opt.state_dict()`, after it is built.",
         returns="A returned dict is the state dict instead; `None` keeps it.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Optimizer", api="torch.optim.Optimizer.register_load_state_dict_pre_hook",
         call="opt.register_load_state_dict_pre_hook(hook, prepend=False)",
         hook="hook(optimizer, state_dict)",
         fires="In `opt.load_state_dict()`, before loading.",
         returns="A returned dict is loaded instead; `None` keeps it.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Optimizer", api="torch.optim.Optimizer.register_load_state_dict_post_hook",
         call="opt.register_load_state_dict_post_hook(hook, prepend=False)",
         hook="hook(optimizer)",
         fires="In `opt.load_state_dict()`, after loading.",
         returns="Ignored.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Global optimizer", api=f"{OPTIM}.register_optimizer_step_pre_hook",
         call="register_optimizer_step_pre_hook(hook)  # import it from torch.optim.optimizer",
         hook="hook(optimizer, args, kwargs)",
         fires="Before every optimizer's `step()`, before its own pre-hooks.",
         returns="As for `register_step_pre_hook`.",
         lesson="10_state_dict_and_optimizer_hooks"),
    dict(group="Global optimizer", api=f"{OPTIM}.register_optimizer_step_post_hook",
         call="register_optimizer_step_post_hook(hook)  # import it from torch.optim.optimizer",
         hook="hook(optimizer, args, kwargs)",
         fires="After every optimizer's `step()`, after its own post-hooks.",
         returns="Ignored.",
         lesson="10_state_dict_and_optimizer_hooks"),
]

# Names with "hook" in them that are not hook APIs, so the completeness test skips them.
NOT_HOOK_APIS = {
    "torch.optim.Optimizer.profile_hook_step",  # a decorator that profiles `step`
    "torch.optim.optimizer.hooks",  # the module torch.utils.hooks, imported there
}


def params_of(call):
    """'m.register_forward_hook(hook, *, prepend=False)' -> '(hook, *, prepend=False)'"""
    return call[call.index("("):call.rindex(")") + 1]
