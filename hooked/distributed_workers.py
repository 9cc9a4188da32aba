"""A rank worker that lesson 13 starts in real processes with the spawn start method.

It lives in a module, not in the notebook: a spawned process starts a fresh interpreter and
finds the function to run by importing its module, and a function defined in a notebook (in
`__main__`) cannot be found that way. Run it with

    torch.multiprocessing.start_processes(fsdp_shapes_worker, nprocs=2, start_method="spawn",
                                          args=(2, f"tcp://127.0.0.1:{port}", folder))

Each rank writes what it saw to `folder/rank<r>.pt`."""

import os
import pathlib

import torch
import torch.distributed as dist
from torch import nn


def fsdp_shapes_worker(rank, world_size, init_method, folder):
    """Shard a small model with FSDP2's fully_shard on gloo and record the weight's shape and type
    outside forward, in four hooks on model[0] registered after fully_shard (a forward pre-hook and
    a forward hook, each without and with prepend=True), and its gradient's after backward; and, in a
    forward hook on the root module, what model[2].weight (a parameter of the root's) is then."""
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)
    try:
        torch.manual_seed(0)
        from torch.distributed.fsdp import fully_shard
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        fully_shard(model[0])
        fully_shard(model)
        seen = {}

        def recorder(key, layer=model[0]):
            def hook(module, *args):
                seen[key] = (tuple(layer.weight.shape), type(layer.weight).__name__)
            return hook

        model[0].register_forward_pre_hook(recorder("pre_hook"))
        model[0].register_forward_pre_hook(recorder("prepended_pre_hook"), prepend=True)
        model[0].register_forward_hook(recorder("forward_hook"))
        model[0].register_forward_hook(recorder("prepended_forward_hook"), prepend=True)
        model.register_forward_hook(recorder("root_forward_hook", model[2]))
        seen["outside"] = (tuple(model[0].weight.shape), type(model[0].weight).__name__,
                           tuple(model[0].weight.to_local().shape))
        batch = torch.randn(3, 8, generator=torch.Generator().manual_seed(rank))
        model(batch).sum().backward()
        seen["grad"] = (tuple(model[0].weight.grad.shape), type(model[0].weight.grad).__name__)
        seen["pid"] = os.getpid()
        torch.save(seen, pathlib.Path(folder) / f"rank{rank}.pt")
        dist.barrier()  # both ranks have saved
    except BaseException:
        dist.destroy_process_group()
        raise
    # Leave without tearing gloo down: on torch 2.13 its teardown aborted the process now and then
    # (SIGABRT: "Resource deadlock avoided", 2 runs in 5 here), after the results were saved.
    os._exit(0)
