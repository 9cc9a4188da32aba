"""Mistake catalogue for lesson 13, hooks in distributed training. The format of an entry is described
in tests/course/test_mistake_catalogue.py; the clause table in tests/course/test_contract_clauses.py."""

from mistakes import edited, reference

CLAUSES = {
    "mean_allreduce_hook": {
        "averages": "averages each bucket across the ranks",
        "future": "Returns a torch.futures.Future whose value is a tensor",
        "sum": "the sum of `bucket.buffer()` over all ranks of `process_group`",
        "divided": "divided by `process_group.size()`",
        "every-rank": "every rank's gradients equal those of the same DDP run without a hook",
    },
    "record_buckets": {
        "registers": "Register a comm hook on `ddp_model`",
        "own-store": "`store` is a list, this rank's own.",
        "per-pass": "For each backward pass the hook appends to `store` one list",
        "per-bucket": "one dict per bucket, in the order DDP calls the hook",
        "index": '{"index": bucket.index()',
        "numel": '"numel": the number of elements of bucket.buffer()',
        "names": '"names": the names of bucket.parameters() as ddp_model.module.named_parameters() gives them',
        "names-order": "in the bucket's order",
        "is-last": '"is_last": bucket.is_last()}',
        "pass-start": "A backward pass starts with the first bucket after a bucket whose is_last() was True.",
        "averages": "The hook averages the bucket over the ranks as DDP does, so the gradients do not change.",
        "no-other-hook": "It registers no other hook (no module or tensor hook)",
        "returns-none": "and returns None",
    },
    "topk_error_feedback_hook": {
        "per-bucket": "per rank and per bucket index",
        "state-kept": "all the hook's state is kept there, none at module level",
        "corrected": "the hook computes `corrected = buffer + residual`",
        "zeros-first": "(zeros when absent",
        "size-reset": "and when its size differs from the buffer's",
        "abs": "the k entries of largest absolute value",
        "k-min": "`k = min(state.k, corrected.numel())`",
        "residual": "It stores `state.residuals[bucket.index()] = corrected - sent` for the next step.",
        "future": "It returns a torch.futures.Future",
        "sum-sent": "whose value is the sum of `sent` over the ranks of `state.process_group`",
        "divided": "divided by its size()",
    },
}

NOT_CLAUSES = {
    "mean_allreduce_hook": {
        "Register it with": "how the caller uses the hook, not a promise of the hook",
    },
    "topk_error_feedback_hook": {
        "`state` is this rank's TopKState": "what the caller passes; the hook's promise about it is the clause "
                                            "'state-kept'",
        "A DDP comm hook: top-k sparsification with error feedback": "the summary; its rules are the clauses below",
    },
}

_MEAN = "mean_allreduce_hook"
_RECORD = "record_buckets"
_TOPK = "topk_error_feedback_hook"

ENTRIES = [
    # ------------------------------------------------------------------ mean_allreduce_hook
    dict(exercise=_MEAN, kind="wrong", why="sums without dividing", clause="divided",
         source=edited(reference(_MEAN), ("bucket.buffer().div_(process_group.size())", "bucket.buffer()")),
         mistake="13.mean_allreduce_hook.sum-not-mean",
         expect=["2 times ddp's own", "the sum over the ranks, not the mean", "process_group.size()"]),
    dict(exercise=_MEAN, kind="wrong", why="divides by 2, not the world size", clause="divided",
         source=edited(reference(_MEAN), ("div_(process_group.size())", "div_(2)")),
         mistake="13.mean_allreduce_hook.divided-by-two",
         expect=["3 ranks divided by 2", "not by 2"]),
    dict(exercise=_MEAN, kind="wrong", why="returns the tensor instead of a future", clause="future",
         source=edited(reference(_MEAN), ("return work.get_future().then(lambda future: future.value()[0])",
                                          "work.wait()\n    return buffer")),
         mistake="13.mean_allreduce_hook.returned-tensor",
         expect=["returned a tensor", "must return a torch.futures.future"]),
    dict(exercise=_MEAN, kind="wrong", why="returns the collective's future of a list", clause="future",
         source=edited(reference(_MEAN), ("return work.get_future().then(lambda future: future.value()[0])",
                                          "return work.get_future()")),
         mistake="13.mean_allreduce_hook.future-of-a-list",
         expect=["future whose value is", "list", "value()[0]"]),
    dict(exercise=_MEAN, kind="right", why="ReduceOp.AVG, which gloo has on this torch",
         source=edited(reference(_MEAN), ("buffer = bucket.buffer().div_(process_group.size())", "buffer = bucket.buffer()"),
                       ("group=process_group, async_op=True)", "group=process_group, op=dist.ReduceOp.AVG, async_op=True)")),
         expect=[]),
    dict(exercise=_MEAN, kind="wrong", why="takes the largest over the ranks (ReduceOp.MAX)", clause="averages",
         source=edited(reference(_MEAN), ("buffer = bucket.buffer().div_(process_group.size())", "buffer = bucket.buffer()"),
                       ("group=process_group, async_op=True)", "group=process_group, op=dist.ReduceOp.MAX, async_op=True)")),
         mistake="13.mean_allreduce_hook.reduced-with-max",
         expect=["differ from ddp's own"]),
    dict(exercise=_MEAN, kind="wrong", why="never all-reduces", clause="sum",
         source=edited(reference(_MEAN), ("work = dist.all_reduce(buffer, group=process_group, async_op=True)\n"
                                          "    return work.get_future().then(lambda future: future.value()[0])",
                                          "future = torch.futures.Future()\n    future.set_result(buffer)\n"
                                          "    return future")).replace("import torch.distributed as dist",
                                                                       "import torch\nimport torch.distributed as dist"),
         mistake="13.mean_allreduce_hook.not-all-reduced",
         expect=["its own, not averaged", "dist.all_reduce"]),
    dict(exercise=_MEAN, kind="wrong", why="all-reduces a copy and returns the buffer", clause="sum",
         source=edited(reference(_MEAN), ("work = dist.all_reduce(buffer,", "work = dist.all_reduce(buffer.clone(),"),
                       ("return work.get_future().then(lambda future: future.value()[0])",
                        "return work.get_future().then(lambda future: buffer)")),
         mistake="13.mean_allreduce_hook.not-all-reduced",
         expect=["its own, not averaged"]),
    dict(exercise=_MEAN, kind="wrong", why="all-reduces on rank 0 only: rank 1 never joins", clause="every-rank",
         source=edited(reference(_MEAN), ("    work = dist.all_reduce(",
                                          "    if process_group.rank() == 1:\n"
                                          "        future = torch.futures.Future()\n"
                                          "        future.set_result(buffer)\n"
                                          "        return future\n"
                                          "    work = dist.all_reduce(")).replace(
                                              "import torch.distributed as dist", "import torch\nimport torch.distributed as dist"),
         mistake="13.mean_allreduce_hook.collectives-differ-by-rank",
         expect=["gave up waiting for the other rank", "every rank must start the same collectives"]),
    dict(exercise=_MEAN, kind="wrong", why="a future made by hand and never completed hangs both ranks", clause="future",
         source=edited(reference(_MEAN), ("return work.get_future().then(lambda future: future.value()[0])",
                                          "return torch.futures.Future()")).replace(
                                              "import torch.distributed as dist", "import torch\nimport torch.distributed as dist"),
         mistake="13.mean_allreduce_hook.rank-stuck",
         expect=["did not finish within", "never completed"]),
    dict(exercise=_MEAN, kind="wrong", why="loops for ever on rank 1", clause="every-rank",
         source=edited(reference(_MEAN), ("    buffer = bucket.buffer()",
                                          "    while process_group.rank() == 1:\n        pass\n    buffer = bucket.buffer()")),
         mistake="13.mean_allreduce_hook.rank-stuck",
         expect=["rank 1 did not finish within", "loops"]),
    dict(exercise=_MEAN, kind="wrong", why="raises on rank 0 only", clause="every-rank",
         source=edited(reference(_MEAN), ("    buffer = bucket.buffer()",
                                          "    if process_group.rank() == 0:\n"
                                          "        raise RuntimeError('rank 0 gives up')\n    buffer = bucket.buffer()")),
         mistake="13.mean_allreduce_hook.raised",
         expect=["on rank 0", "raised runtimeerror", "rank 0 gives up"]),
    dict(exercise=_MEAN, kind="wrong", why="second parameter not named bucket", clause="future",
         source=edited(reference(_MEAN), ("def mean_allreduce_hook(process_group, bucket):", "def mean_allreduce_hook(process_group, b):"),
                       ("buffer = bucket.buffer()", "buffer = b.buffer()")),
         mistake="13.mean_allreduce_hook.bucket-parameter-misnamed",
         expect=["keyerror: 'bucket'", "name its parameters"]),
    dict(exercise=_MEAN, kind="right", why="torch's own allreduce_hook",
         source="import torch.distributed as dist\n"
                "from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n\n\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    return default_hooks.allreduce_hook(process_group, bucket)\n",
         expect=[]),
    dict(exercise=_MEAN, kind="right", why="divides in the callback, waits in the hook",
         source="import torch\nimport torch.distributed as dist\n\n\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    total = bucket.buffer().clone()\n"
                "    dist.all_reduce(total, group=process_group)\n"
                "    future = torch.futures.Future()\n"
                "    future.set_result(total / process_group.size())\n"
                "    return future\n",
         expect=[]),
    # ------------------------------------------------------------------ record_buckets
    dict(exercise=_RECORD, kind="wrong", why="records into a list of its own", clause="own-store",
         source=edited(reference(_RECORD), ("    def hook(state, bucket):", "    store = []\n\n    def hook(state, bucket):")),
         mistake="13.record_buckets.store-not-used",
         expect=["store is empty", "append to the `store` passed"]),
    dict(exercise=_RECORD, kind="wrong", why="a module-level list shared by the ranks", clause="own-store",
         source="SHARED = []\n\n" + edited(reference(_RECORD),
                                            ("    def hook(state, bucket):", "    store = SHARED\n\n    def hook(state, bucket):")),
         mistake="13.record_buckets.store-not-used",
         expect=["store is empty", "at module level", "share"]),
    dict(exercise=_RECORD, kind="wrong", why="one flat list, no list per pass", clause="per-pass",
         source=edited(reference(_RECORD), ("        if not store or store[-1][-1][\"is_last\"]:\n"
                                            "            store.append([])\n        store[-1].append(",
                                            "        store.append(")),
         mistake="13.record_buckets.store-not-lists",
         expect=["expected a list with one list of records per backward pass"]),
    # DDP calls a pass's comm hooks in bucket index order, also when a later bucket's gradients are ready
    # first (a model whose layers swap places after the buckets were rebuilt: bucket 1 ready first, bucket 0
    # still hooked first), so bucket 0 opens every pass: the same records as the rule of the docstring.
    dict(exercise=_RECORD, kind="right", why="opens a new pass at bucket index 0 (DDP hooks buckets in index order)",
         source=edited(reference(_RECORD), ('if not store or store[-1][-1]["is_last"]:', "if bucket.index() == 0:")),
         expect=[]),
    dict(exercise=_RECORD, kind="wrong", why="opens a new pass at a bucket that is last", clause="pass-start",
         source=edited(reference(_RECORD), ('if not store or store[-1][-1]["is_last"]:', "if not store or bucket.is_last():")),
         mistake="13.record_buckets.wrong-record-count",
         expect=["records; ddp called the hook"]),
    dict(exercise=_RECORD, kind="wrong", why="records the buffer's shape, not its numel", clause="numel",
         source=edited(reference(_RECORD), ('"numel": bucket.buffer().numel()', '"numel": tuple(bucket.buffer().shape)')),
         mistake="13.record_buckets.wrong-numel",
         expect=["numel=", "number of elements"]),
    dict(exercise=_RECORD, kind="wrong", why="names with DDP's module. prefix", clause="names",
         source=edited(reference(_RECORD), ("in ddp_model.module.named_parameters()}", "in ddp_model.named_parameters()}")),
         mistake="13.record_buckets.wrong-names",
         expect=["names=", "without ddp's 'module.' prefix"]),
    dict(exercise=_RECORD, kind="wrong", why="names sorted, not in the bucket's order", clause="names-order",
         source=edited(reference(_RECORD), ('"names": [names[parameter] for parameter in bucket.parameters()]',
                                            '"names": sorted(names[parameter] for parameter in bucket.parameters())')),
         mistake="13.record_buckets.wrong-names",
         expect=["names=", "in bucket.parameters()' order"]),
    dict(exercise=_RECORD, kind="wrong", why="records the index as a tensor-free string", clause="index",
         source=edited(reference(_RECORD), ('append({"index": bucket.index()', 'append({"index": str(bucket.index())')),
         mistake="13.record_buckets.wrong-index",
         expect=["index="]),
    dict(exercise=_RECORD, kind="wrong", why="records is_last as the method", clause="is-last",
         source=edited(reference(_RECORD), ('"is_last": bucket.is_last()})', '"is_last": bucket.is_last})')),
         mistake="13.record_buckets.wrong-pass-count",
         expect=["is_last"]),
    dict(exercise=_RECORD, kind="wrong", why="records each bucket twice", clause="per-bucket",
         source=edited(reference(_RECORD), ("        buffer = bucket.buffer().div_", "        store[-1].append(dict(store[-1][-1]))\n        buffer = bucket.buffer().div_")),
         mistake="13.record_buckets.wrong-record-count",
         expect=["records; ddp called the hook"]),
    dict(exercise=_RECORD, kind="wrong", why="forgets to divide: the sum", clause="averages",
         source=edited(reference(_RECORD), ("buffer = bucket.buffer().div_(state.size())", "buffer = bucket.buffer()")),
         mistake="13.record_buckets.sum-not-mean",
         expect=["gradients differ from ddp's own", "average each bucket"]),
    dict(exercise=_RECORD, kind="wrong", why="counts passes with a forward hook left on the model", clause="no-other-hook",
         source=edited(reference(_RECORD), ("    ddp_model.register_comm_hook(group, hook)",
                                            "    ddp_model.module.register_forward_hook(lambda *args: None)\n"
                                            "    ddp_model.register_comm_hook(group, hook)")),
         mistake="13.record_buckets.other-hooks-registered",
         expect=["left hooks on the model besides its comm hook"]),
    dict(exercise=_RECORD, kind="wrong", why="returns the store", clause="returns-none",
         source=edited(reference(_RECORD), ("    ddp_model.register_comm_hook(group, hook)",
                                            "    ddp_model.register_comm_hook(group, hook)\n    return store")),
         mistake="13.record_buckets.returns-a-value",
         expect=["must return none"]),
    dict(exercise=_RECORD, kind="wrong", why="registers no comm hook", clause="registers",
         source=edited(reference(_RECORD), ("    ddp_model.register_comm_hook(group, hook)", "    pass")),
         mistake="13.record_buckets.no-comm-hook",
         expect=["registered no comm hook"]),
    dict(exercise=_RECORD, kind="wrong", why="one module-level list of records, put in each rank's store once",
         clause="own-store",
         source="RECORDS = []\n\n" + edited(reference(_RECORD), ('if not store or store[-1][-1]["is_last"]:\n'
                                                                  '            store.append([])\n',
                                                                  "if not store:\n            store.append(RECORDS)\n")),
         mistake="13.record_buckets.store-shared-by-ranks",
         expect=["twice as many records", "both ranks writing to one list"]),
    dict(exercise=_RECORD, kind="right", why="torch's allreduce_hook and a step counter in a closure",
         source="from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n\n\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {id(p): n for n, p in ddp_model.module.named_parameters()}\n"
                "    open_new = [True]\n\n"
                "    def hook(process_group, bucket):\n"
                "        if open_new[0]:\n"
                "            store.append([])\n"
                "        last = bool(bucket.is_last())\n"
                "        store[-1].append(dict(index=bucket.index(), numel=bucket.buffer().numel(),\n"
                "                              names=[names[id(p)] for p in bucket.parameters()], is_last=last))\n"
                "        open_new[0] = last\n"
                "        return default_hooks.allreduce_hook(process_group, bucket)\n\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         expect=[]),
    # ------------------------------------------------------------------ topk_error_feedback_hook
    dict(exercise=_TOPK, kind="wrong", why="no error feedback", clause="corrected",
         source=edited(reference(_TOPK), ("    corrected = buffer + residual\n", "    corrected = buffer.clone()\n")),
         mistake="13.topk_error_feedback_hook.no-error-feedback",
         expect=["without error feedback"]),
    dict(exercise=_TOPK, kind="wrong", why="residual taken after cutting sent out of corrected in place", clause="residual",
         source=edited(reference(_TOPK), ("    sent = torch.zeros_like(corrected)\n    sent[keep] = corrected[keep]\n",
                                          "    sent = corrected\n    mask = torch.ones_like(corrected, dtype=torch.bool)\n"
                                          "    mask[keep] = False\n    sent[mask] = 0\n")),
         mistake="13.topk_error_feedback_hook.no-error-feedback",
         expect=["without error feedback", "in place"]),
    dict(exercise=_TOPK, kind="wrong", why="residual added twice (also to the buffer in place)", clause="corrected",
         source=edited(reference(_TOPK), ("    corrected = buffer + residual\n", "    corrected = buffer.add_(residual) + residual\n")),
         mistake="13.topk_error_feedback_hook.residual-added-twice",
         expect=["added twice"]),
    dict(exercise=_TOPK, kind="wrong", why="accumulates residuals", clause="residual",
         source=edited(reference(_TOPK), ("\n    state.residuals[bucket.index()] = corrected - sent",
                                          "\n    state.residuals[bucket.index()] = corrected - sent + residual")),
         mistake="13.topk_error_feedback_hook.residual-accumulated",
         expect=["added to the old one"]),
    dict(exercise=_TOPK, kind="wrong", why="keeps the largest values, not absolute values", clause="abs",
         source=edited(reference(_TOPK), ("corrected.abs().topk(k)", "corrected.topk(k)")),
         mistake="13.topk_error_feedback_hook.largest-not-absolute",
         expect=["absolute value"]),
    dict(exercise=_TOPK, kind="wrong", why="k not capped by the bucket's size", clause="k-min",
         source=edited(reference(_TOPK), ("    k = min(state.k, corrected.numel())", "    k = state.k")),
         mistake="13.topk_error_feedback_hook.k-not-capped",
         expect=["raised runtimeerror", "out of range"]),
    dict(exercise=_TOPK, kind="wrong", why="sums without dividing", clause="divided",
         source=edited(reference(_TOPK), ("    sent.div_(state.process_group.size())\n", "")),
         mistake="13.topk_error_feedback_hook.sum-not-mean",
         expect=["sum of `sent` over the ranks", "divide by"]),
    dict(exercise=_TOPK, kind="wrong", why="residuals in a module-level dict shared by the ranks", clause="state-kept",
         source="RESIDUALS = {}\n\n" + edited(reference(_TOPK), ("    residual = state.residuals.get(", "    residual = RESIDUALS.get("),
                                                ("\n    state.residuals[bucket.index()]", "\n    RESIDUALS[bucket.index()]")),
         mistake="13.topk_error_feedback_hook.residuals-not-in-state",
         expect=["state.residuals is", "at module level", "shared by both ranks"]),
    dict(exercise=_TOPK, kind="wrong", why="one residual for all buckets", clause="per-bucket",
         source=edited(reference(_TOPK), ("    residual = state.residuals.get(bucket.index())", "    residual = state.residuals.get(0)"),
                       ("\n    state.residuals[bucket.index()] =", "\n    state.residuals[0] =")),
         mistake="13.topk_error_feedback_hook.no-error-feedback",
         expect=["without error feedback"]),
    dict(exercise=_TOPK, kind="wrong", why="first residual taken as the buffer itself", clause="zeros-first",
         source=edited(reference(_TOPK), ("    if residual is None or residual.shape != buffer.shape:\n"
                                          "        residual = torch.zeros_like(buffer)\n",
                                          "    if residual is None or residual.shape != buffer.shape:\n"
                                          "        residual = buffer.clone()\n")),
         mistake="13.topk_error_feedback_hook.wrong-parameters",
         expect=["differ from those the rules give"]),
    dict(exercise=_TOPK, kind="wrong", why="keeps a residual of the bucket before the rebuild", clause="size-reset",
         source=edited(reference(_TOPK), ("if residual is None or residual.shape != buffer.shape:", "if residual is None:")),
         mistake="13.topk_error_feedback_hook.residual-of-rebuilt-bucket",
         expect=["raised runtimeerror", "size of tensor"]),
    dict(exercise=_TOPK, kind="wrong", why="returns the sparse tensor", clause="future",
         source=edited(reference(_TOPK), ("return work.get_future().then(lambda future: future.value()[0])",
                                          "work.wait()\n    return sent")),
         mistake="13.topk_error_feedback_hook.returned-tensor",
         expect=["returned a tensor"]),
    dict(exercise=_TOPK, kind="wrong", why="keeps the residual with the opposite sign, sent - corrected, and subtracts "
                                           "it: the same steps, another tensor in state.residuals", clause="residual",
         source=edited(reference(_TOPK), ("    corrected = buffer + residual\n", "    corrected = buffer - residual\n"),
                       ("\n    state.residuals[bucket.index()] = corrected - sent",
                        "\n    state.residuals[bucket.index()] = sent - corrected")),
         mistake="13.topk_error_feedback_hook.wrong-residual",
         expect=["state.residuals[", "corrected - sent of that bucket's last step"]),
    dict(exercise=_TOPK, kind="wrong", why="all-reduces corrected, not sent", clause="sum-sent",
         source=edited(reference(_TOPK), ("    sent.div_(state.process_group.size())\n"
                                          "    work = dist.all_reduce(sent, group=state.process_group, async_op=True)",
                                          "    dense = corrected / state.process_group.size()\n"
                                          "    work = dist.all_reduce(dense, group=state.process_group, async_op=True)")),
         mistake="13.topk_error_feedback_hook.wrong-parameters",
         expect=["differ from those the rules give"]),
    dict(exercise=_TOPK, kind="right", why="mask by threshold and a completed future",
         source="import torch\nimport torch.distributed as dist\n\n\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    index = bucket.index()\n"
                "    residual = state.residuals.get(index)\n"
                "    fresh = residual is None or residual.numel() != bucket.buffer().numel()\n"
                "    corrected = bucket.buffer().clone() if fresh else bucket.buffer() + residual\n"
                "    k = min(state.k, corrected.numel())\n"
                "    mask = torch.zeros(corrected.numel(), dtype=torch.bool)\n"
                "    mask[torch.argsort(corrected.abs(), descending=True)[:k]] = True\n"
                "    sent = torch.where(mask, corrected, torch.zeros_like(corrected))\n"
                "    state.residuals[index] = torch.where(mask, torch.zeros_like(corrected), corrected)\n"
                "    total = sent.clone()\n"
                "    dist.all_reduce(total, group=state.process_group)\n"
                "    done = torch.futures.Future()\n"
                "    done.set_result(total / state.process_group.size())\n"
                "    return done\n",
         expect=[]),
    # ------------------------------------------------------------------ the adversary's pass
    # From the docstrings alone, and from public hooks: torch's default_hooks.py and powerSGD_hook.py,
    # top-k compressors with error feedback (GRACE, ConEF: all-gathered values and indices).
    dict(exercise=_MEAN, kind="wrong", why="divides the sum by 2 in the callback", clause="divided",
         source=edited(reference(_MEAN), ("bucket.buffer().div_(process_group.size())", "bucket.buffer()"),
                       ("future.value()[0])", "future.value()[0] / 2)")),
         mistake="13.mean_allreduce_hook.divided-by-two",
         expect=["3 ranks divided by 2"]),
    dict(exercise=_MEAN, kind="wrong", why="all-reduces on the default group", clause="sum",
         source=edited(reference(_MEAN), ("dist.all_reduce(buffer, group=process_group, async_op=True)",
                                          "dist.all_reduce(buffer, async_op=True)")),
         mistake="13.mean_allreduce_hook.default-group-used",
         expect=["raised", "default process group", "no default process group", "group the hook is given, process_group"]),
    dict(exercise=_MEAN, kind="wrong", why="divides by dist.get_world_size()", clause="divided",
         source=edited(reference(_MEAN), ("div_(process_group.size())", "div_(dist.get_world_size())")),
         mistake="13.mean_allreduce_hook.default-group-used",
         expect=["raised", "no default process group", "dist.get_world_size()", "group the hook is given, process_group"]),
    dict(exercise=_MEAN, kind="wrong", why="returns what wait() gives, a list", clause="future",
         source=edited(reference(_MEAN), ("return work.get_future().then(lambda future: future.value()[0])",
                                          "return work.get_future().wait()")),
         mistake="13.mean_allreduce_hook.not-a-future",
         expect=["returned list", "must return a torch.futures.future"]),
    dict(exercise=_MEAN, kind="wrong", why="returns collect_all of the future", clause="future",
         source=edited(reference(_MEAN), ("return work.get_future().then(lambda future: future.value()[0])",
                                          "return torch.futures.collect_all([work.get_future()])")).replace(
                                              "import torch.distributed as dist", "import torch\nimport torch.distributed as dist"),
         mistake="13.mean_allreduce_hook.future-of-a-list",
         expect=["future whose value is", "list"]),
    dict(exercise=_MEAN, kind="wrong", why="only rank 0 divides", clause="every-rank",
         source=edited(reference(_MEAN), ("buffer = bucket.buffer().div_(process_group.size())",
                                          "buffer = bucket.buffer()\n    if process_group.rank() == 0:\n"
                                          "        buffer.div_(process_group.size())")),
         mistake="13.mean_allreduce_hook.wrong-gradients",
         expect=["differ from ddp's own"]),
    dict(exercise=_MEAN, kind="wrong", why="divides twice (before and in the callback)", clause="divided",
         source=edited(reference(_MEAN), ("future.value()[0])", "future.value()[0] / process_group.size())")),
         mistake="13.mean_allreduce_hook.divided-twice",
         expect=["divided by 9", "process_group.size() twice"]),
    dict(exercise=_MEAN, kind="wrong", why="averages each gradient of the bucket but returns a new tensor of zeros", clause="every-rank",
         source=edited(reference(_MEAN), ("future.value()[0])", "future.value()[0] * 0)")),
         mistake="13.mean_allreduce_hook.returned-zeros",
         expect=["differ from ddp's own"]),
    dict(exercise=_MEAN, kind="right", why="the future of a clone, divided in the callback",
         source=edited(reference(_MEAN), ("buffer = bucket.buffer().div_(process_group.size())", "buffer = bucket.buffer().clone()"),
                       ("future.value()[0])", "future.value()[0] / process_group.size())")),
         expect=[]),
    dict(exercise=_MEAN, kind="wrong", why="compresses to float16, as fp16_compress_hook does", clause="every-rank",
         source=edited(reference(_MEAN), ("buffer = bucket.buffer().div_(process_group.size())",
                                          "buffer = bucket.buffer().to(torch.float16).div_(process_group.size())"),
                       ("future.value()[0])", "future.value()[0].to(bucket.buffer().dtype))")).replace(
                           "import torch.distributed as dist", "import torch\nimport torch.distributed as dist"),
         mistake="13.mean_allreduce_hook.compressed",
         expect=["rounded to float16", "every value is a float16 number", "lost precision by compressing the bucket "
                 "to float16"]),
    dict(exercise=_MEAN, kind="wrong", why="torch's fp16_compress_hook", clause="every-rank",
         source="from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n\n\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    return default_hooks.fp16_compress_hook(process_group, bucket)\n",
         mistake="13.mean_allreduce_hook.compressed",
         expect=["rounded to float16", "lost precision", "fp16_compress_hook"]),
    dict(exercise=_MEAN, kind="wrong", why="compresses to bfloat16 (torch's bf16 hook under its own name)",
         clause="every-rank",
         source="from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n\n\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    return default_hooks.bf16_compress_hook(process_group, bucket)\n",
         mistake="13.mean_allreduce_hook.compressed",
         expect=["rounded to bfloat16", "lost precision by compressing the bucket to bfloat16"]),
    dict(exercise=_RECORD, kind="wrong", why="names are positions, not parameter names", clause="names",
         source=edited(reference(_RECORD), ("names = {parameter: name for name, parameter in ddp_model.module.named_parameters()}",
                                            "names = {p: str(i) for i, p in enumerate(ddp_model.module.parameters())}")),
         mistake="13.record_buckets.wrong-names",
         expect=["names=", "named_parameters()"]),
    dict(exercise=_RECORD, kind="wrong", why="records the buffer instead of its numel", clause="numel",
         source=edited(reference(_RECORD), ('"numel": bucket.buffer().numel()', '"numel": bucket.buffer().clone()')),
         mistake="13.record_buckets.wrong-numel",
         expect=["numel=tensor"]),
    dict(exercise=_RECORD, kind="wrong", why="clears the store at each pass", clause="per-pass",
         source=edited(reference(_RECORD), ("            store.append([])", "            store.clear()\n            store.append([])")),
         mistake="13.record_buckets.wrong-pass-count",
         expect=["holds 1 lists; expected 2"]),
    dict(exercise=_RECORD, kind="wrong", why="is_last as an int", clause="is-last",
         source=edited(reference(_RECORD), ('"is_last": bucket.is_last()})', '"is_last": int(bucket.is_last())})')),
         mistake="13.record_buckets.wrong-is-last",
         expect=["is_last=int", "a bool"]),
    dict(exercise=_RECORD, kind="wrong", why="registers the hook twice", clause="registers",
         source=edited(reference(_RECORD), ("    ddp_model.register_comm_hook(group, hook)",
                                            "    ddp_model.register_comm_hook(group, hook)\n    ddp_model.register_comm_hook(group, hook)")),
         mistake="13.record_buckets.comm-hook-registered-twice",
         expect=["raised", "register_comm_hook"]),
    dict(exercise=_RECORD, kind="wrong", why="torch's allreduce_hook with state None", clause="averages",
         source=edited(reference(_RECORD), ("    ddp_model.register_comm_hook(group, hook)",
                                            "    ddp_model.register_comm_hook(None, hook)")),
         mistake="13.record_buckets.none-as-group",
         expect=["raised", "the group was none", "dist.group.world", "register the hook with the group"]),
    dict(exercise=_RECORD, kind="wrong", why="records shapes instead of names", clause="names",
         source=edited(reference(_RECORD), ('"names": [names[parameter] for parameter in bucket.parameters()]',
                                            '"names": [tuple(parameter.shape) for parameter in bucket.parameters()]')),
         mistake="13.record_buckets.wrong-names",
         expect=["names=", "named_parameters()"]),
    dict(exercise=_RECORD, kind="wrong", why="returns the buffer, not a future", clause="averages",
         source=edited(reference(_RECORD), ("        return dist.all_reduce(buffer, group=state, async_op=True).get_future().then(lambda f: f.value()[0])",
                                            "        dist.all_reduce(buffer, group=state)\n        return buffer")),
         mistake="13.record_buckets.returned-tensor",
         expect=["returned a tensor", "future"]),
    dict(exercise=_RECORD, kind="wrong", why="records with a forward pre-hook on the wrapped module too", clause="no-other-hook",
         source=edited(reference(_RECORD), ("    ddp_model.register_comm_hook(group, hook)",
                                            "    ddp_model.register_forward_pre_hook(lambda *args: None)\n"
                                            "    ddp_model.register_comm_hook(group, hook)")),
         mistake="13.record_buckets.other-hooks-registered",
         expect=["left hooks on the model besides its comm hook"]),
    dict(exercise=_RECORD, kind="wrong", why="names joined as prefix + '.' + name: '.scale' on the root module",
         clause="names",
         source=edited(reference(_RECORD), (
             "names = {parameter: name for name, parameter in ddp_model.module.named_parameters()}",
             "names = {parameter: prefix + '.' + name for prefix, module in ddp_model.module.named_modules()\n"
             "             for name, parameter in module.named_parameters(recurse=False)}")),
         mistake="13.record_buckets.names-joined-to-root",
         expect=["names=", "starts with '.'", "root module", "only when the prefix is not empty"]),
    dict(exercise=_RECORD, kind="right", why="names joined from named_modules, without a '.' for the root module",
         source=edited(reference(_RECORD), (
             "names = {parameter: name for name, parameter in ddp_model.module.named_parameters()}",
             "names = {parameter: f'{prefix}.{name}' if prefix else name\n"
             "             for prefix, module in ddp_model.module.named_modules()\n"
             "             for name, parameter in module.named_parameters(recurse=False)}")),
         expect=[]),
    dict(exercise=_RECORD, kind="wrong", why="divides by dist.get_world_size(): no default group here", clause="averages",
         source=edited(reference(_RECORD), ("div_(state.size())", "div_(dist.get_world_size())")),
         mistake="13.record_buckets.default-group-used",
         expect=["raised", "no default process group", "ddp_model.process_group"]),
    dict(exercise=_RECORD, kind="wrong", why="all-reduces without group=: no default group here", clause="averages",
         source=edited(reference(_RECORD), ("dist.all_reduce(buffer, group=state, async_op=True)",
                                            "dist.all_reduce(buffer, async_op=True)")),
         mistake="13.record_buckets.default-group-used",
         expect=["raised", "no default process group", "its state"]),
    dict(exercise=_TOPK, kind="wrong", why="all-reduces sent without group=: no default group here", clause="sum-sent",
         source=edited(reference(_TOPK), ("dist.all_reduce(sent, group=state.process_group, async_op=True)",
                                          "dist.all_reduce(sent, async_op=True)")),
         mistake="13.topk_error_feedback_hook.default-group-used",
         expect=["raised", "no default process group", "state.process_group"]),
    dict(exercise=_TOPK, kind="wrong", why="divides by dist.get_world_size(): no default group here", clause="divided",
         source=edited(reference(_TOPK), ("sent.div_(state.process_group.size())", "sent.div_(dist.get_world_size())")),
         mistake="13.topk_error_feedback_hook.default-group-used",
         expect=["raised", "no default process group", "dist.get_world_size()", "state.process_group"]),
    dict(exercise=_TOPK, kind="wrong", why="new residual from the buffer, not corrected", clause="residual",
         source=edited(reference(_TOPK), ("\n    state.residuals[bucket.index()] = corrected - sent",
                                          "\n    state.residuals[bucket.index()] = buffer - sent")),
         mistake="13.topk_error_feedback_hook.residual-from-buffer",
         expect=["buffer - sent", "corrected - sent"]),
    dict(exercise=_TOPK, kind="wrong", why="stores sent, not what was left", clause="residual",
         source=edited(reference(_TOPK), ("\n    state.residuals[bucket.index()] = corrected - sent",
                                          "\n    state.residuals[bucket.index()] = sent.clone()")),
         mistake="13.topk_error_feedback_hook.wrong-parameters",
         expect=["differ from those the rules give"]),
    dict(exercise=_TOPK, kind="wrong", why="residuals keyed by the bucket object", clause="per-bucket",
         source=edited(reference(_TOPK), ("    residual = state.residuals.get(bucket.index())", "    residual = state.residuals.get(id(bucket))"),
                       ("\n    state.residuals[bucket.index()] =", "\n    state.residuals[id(bucket)] =")),
         mistake="13.topk_error_feedback_hook.residuals-not-by-index",
         expect=["key each residual by bucket.index()"]),
    dict(exercise=_TOPK, kind="wrong", why="chooses by the buffer, sends corrected", clause="abs",
         source=edited(reference(_TOPK), ("corrected.abs().topk(k)", "buffer.abs().topk(k)")),
         mistake="13.topk_error_feedback_hook.wrong-parameters",
         expect=["differ from those the rules give"]),
    dict(exercise=_TOPK, kind="wrong", why="k as a fraction of the bucket", clause="k-min",
         source=edited(reference(_TOPK), ("    k = min(state.k, corrected.numel())", "    k = max(1, corrected.numel() // 2)")),
         mistake="13.topk_error_feedback_hook.wrong-parameters",
         expect=["differ from those the rules give"]),
    dict(exercise=_TOPK, kind="wrong", why="residual updated with the averaged values", clause="residual",
         source=edited(reference(_TOPK), ("\n    state.residuals[bucket.index()] = corrected - sent\n    sent.div_(state.process_group.size())\n",
                                          "\n    sent.div_(state.process_group.size())\n    state.residuals[bucket.index()] = corrected - sent\n")),
         mistake="13.topk_error_feedback_hook.wrong-parameters",
         expect=["differ from those the rules give"]),
    dict(exercise=_TOPK, kind="wrong", why="residuals on the function object, shared by the ranks", clause="state-kept",
         source=edited(reference(_TOPK), ("    residual = state.residuals.get(bucket.index())",
                                          "    store = topk_error_feedback_hook.__dict__.setdefault('residuals', {})\n"
                                          "    residual = store.get(bucket.index())"),
                       ("\n    state.residuals[bucket.index()] =", "\n    store[bucket.index()] =")),
         mistake="13.topk_error_feedback_hook.residuals-not-in-state",
         expect=["state.residuals is", "shared by both ranks"]),
    dict(exercise=_TOPK, kind="wrong", why="sends the top k of one rank's indices on both (broadcast mask)", clause="sum-sent",
         source=edited(reference(_TOPK), ("    sent[keep] = corrected[keep]\n",
                                          "    sent[keep] = corrected[keep]\n    sent[keep] += 0 * state.process_group.rank()\n"
                                          "    sent = sent if state.process_group.rank() == 0 else torch.zeros_like(sent)\n")),
         mistake="13.topk_error_feedback_hook.wrong-parameters",
         expect=["differ from those the rules give"]),
    dict(exercise=_TOPK, kind="right", why="all-gathers values and indices, as sparse compressors do",
         source="import torch\nimport torch.distributed as dist\n\n\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buffer, group = bucket.buffer(), state.process_group\n"
                "    old = state.residuals.get(bucket.index())\n"
                "    corrected = buffer + old if old is not None and old.numel() == buffer.numel() else buffer.clone()\n"
                "    _, indices = torch.topk(corrected.abs(), min(state.k, corrected.numel()))\n"
                "    values = corrected[indices]\n"
                "    left = corrected.clone()\n"
                "    left[indices] = 0\n"
                "    state.residuals[bucket.index()] = left\n"
                "    all_values = [torch.empty_like(values) for _ in range(group.size())]\n"
                "    all_indices = [torch.empty_like(indices) for _ in range(group.size())]\n"
                "    dist.all_gather(all_values, values, group=group)\n"
                "    dist.all_gather(all_indices, indices, group=group)\n"
                "    total = torch.zeros_like(corrected)\n"
                "    for v, i in zip(all_values, all_indices):\n"
                "        total.index_add_(0, i, v)\n"
                "    done = torch.futures.Future()\n"
                "    done.set_result(total / group.size())\n"
                "    return done\n",
         expect=[]),
    dict(exercise=_TOPK, kind="right", why="adds the residual to the buffer in place and divides before choosing",
         source=edited(reference(_TOPK), ("    corrected = buffer + residual\n", "    corrected = buffer.add_(residual).div_(state.process_group.size())\n"),
                       ("    sent.div_(state.process_group.size())\n", ""),
                       ("\n    state.residuals[bucket.index()] = corrected - sent",
                        "\n    state.residuals[bucket.index()] = (corrected - sent) * state.process_group.size()")),
         expect=[]),
    # ------------------------------------------------------------------ the reviewer's pass
    # The races: with gloo on one machine these got the right numbers in 5 and 6 of 12 gradings
    # until the check delayed the other ranks' all-reduce (hooked.checks.all_reduce_race).
    dict(exercise=_MEAN, kind="wrong", why="divides the buffer in place after starting the all-reduce", clause="sum",
         source=edited(reference(_MEAN), ("    buffer = bucket.buffer().div_(process_group.size())\n"
                                          "    work = dist.all_reduce(buffer, group=process_group, async_op=True)\n",
                                          "    buffer = bucket.buffer()\n"
                                          "    work = dist.all_reduce(buffer, group=process_group, async_op=True)\n"
                                          "    buffer.div_(process_group.size())\n")),
         mistake="13.mean_allreduce_hook.wrong-gradients",
         expect=["differ from ddp's own", "after starting the all-reduce"]),
    dict(exercise=_MEAN, kind="wrong", why="completes a future by hand without waiting for the all-reduce", clause="sum",
         source="import torch\nimport torch.distributed as dist\n\n\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    buffer = bucket.buffer()\n"
                "    dist.all_reduce(buffer, group=process_group, async_op=True)\n"
                "    future = torch.futures.Future()\n"
                "    future.set_result(buffer / process_group.size())\n"
                "    return future\n",
         mistake="13.mean_allreduce_hook.not-all-reduced",
         expect=["its own, not averaged", "set_result"]),
    dict(exercise=_MEAN, kind="right", why="the process group's own allreduce method",
         source="import torch\n\n\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    tensor = bucket.buffer() / process_group.size()\n"
                "    return process_group.allreduce([tensor]).get_future().then(lambda f: f.value()[0])\n",
         expect=[]),
    dict(exercise=_MEAN, kind="right", why="waits on the future inside its callback",
         source="import torch.distributed as dist\n\n\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    future = dist.all_reduce(bucket.buffer(), group=process_group, async_op=True).get_future()\n"
                "    return future.then(lambda done: done.wait()[0] / process_group.size())\n",
         expect=[]),
    dict(exercise=_RECORD, kind="wrong", why="records on rank 0 only", clause="own-store",
         source="import torch.distributed as dist\n\n\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {p: n for n, p in ddp_model.module.named_parameters()}\n\n"
                "    def hook(group, bucket):\n"
                "        if group.rank() == 0:\n"
                "            if not store or store[-1][-1][\"is_last\"]:\n"
                "                store.append([])\n"
                "            store[-1].append({\"index\": bucket.index(), \"numel\": bucket.buffer().numel(),\n"
                "                              \"names\": [names[p] for p in bucket.parameters()], \"is_last\": bucket.is_last()})\n"
                "        buffer = bucket.buffer().div_(group.size())\n"
                "        return dist.all_reduce(buffer, group=group, async_op=True).get_future().then(lambda f: f.value()[0])\n\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.store-not-used",
         expect=["rank 1's store is empty"]),
    dict(exercise=_RECORD, kind="right", why="numel summed over the parameters, torch's allreduce_hook",
         source="from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook\n\n\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = dict((p, n) for n, p in ddp_model.module.named_parameters())\n"
                "    new_pass = [True]\n\n"
                "    def hook(group, bucket):\n"
                "        if new_pass[0]:\n"
                "            store.append([])\n"
                "        parameters = bucket.parameters()\n"
                "        store[-1].append(dict(index=bucket.index(), numel=sum(p.numel() for p in parameters),\n"
                "                              names=[names[p] for p in parameters], is_last=bucket.is_last()))\n"
                "        new_pass[0] = bucket.is_last()\n"
                "        return allreduce_hook(group, bucket)\n\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         expect=[]),
    dict(exercise=_TOPK, kind="wrong", why="residual taken from sent after starting its all-reduce", clause="residual",
         source=edited(reference(_TOPK), ("    state.residuals[bucket.index()] = corrected - sent\n"
                                          "    sent.div_(state.process_group.size())\n"
                                          "    work = dist.all_reduce(sent, group=state.process_group, async_op=True)\n"
                                          "    return work.get_future().then(lambda future: future.value()[0])",
                                          "    work = dist.all_reduce(sent, group=state.process_group, async_op=True)\n"
                                          "    state.residuals[bucket.index()] = corrected - sent\n"
                                          "    return work.get_future().then(lambda future: future.value()[0] / state.process_group.size())")),
         mistake="13.topk_error_feedback_hook.wrong-parameters",
         expect=["differ from those the rules give"]),
    dict(exercise=_TOPK, kind="right", why="scatter and gather, the group's allreduce method",
         source="import torch\n\n\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buffer = bucket.buffer()\n"
                "    old = state.residuals.get(bucket.index())\n"
                "    corrected = buffer.clone() if old is None or old.numel() != buffer.numel() else buffer + old\n"
                "    _, chosen = corrected.abs().topk(min(state.k, corrected.numel()))\n"
                "    sent = torch.zeros_like(corrected).scatter_(0, chosen, corrected.gather(0, chosen))\n"
                "    state.residuals[bucket.index()] = corrected - sent\n"
                "    work = state.process_group.allreduce([sent])\n"
                "    return work.get_future().then(lambda f: f.value()[0].div(state.process_group.size()))\n",
         expect=[]),
    # Until the check compared the ranks' all-reduces, this one aborted the whole process (SIGABRT):
    # gloo throws on its network thread when rank 0's 56-element all-reduce meets rank 1's 27.
    dict(exercise=_TOPK, kind="wrong", why="skips bucket 1 on rank 1", clause="sum-sent",
         source=edited(reference(_TOPK), ("    buffer = bucket.buffer()  # this rank's gradients, flat\n",
                                          "    buffer = bucket.buffer()  # this rank's gradients, flat\n"
                                          "    if state.process_group.rank() == 1 and bucket.index() == 1:\n"
                                          "        skipped = torch.futures.Future()\n"
                                          "        skipped.set_result(buffer)\n"
                                          "        return skipped\n")),
         mistake="13.topk_error_feedback_hook.collectives-differ-by-rank",
         expect=["collective mismatch", "on one rank"]),
    # ------------------------------------------------------------------ the review of the lesson's fixes
    # Written from the docstrings alone and from torch's hooks (default_hooks.py: group.WORLD,
    # fp16_compress_wrapper; powerSGD_hook.py: error feedback from the aggregated result, the buffer
    # changed in place). A hook that returns None crashed the grading process until the check stopped
    # it (torch 2.13's DDP segfaults on None); the annotation entry passed until the check made DDP's
    # own tests of the hook.
    dict(exercise=_MEAN, kind="wrong", why="ReduceOp.AVG and a division: divided twice", clause="divided",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    t = bucket.buffer() / process_group.size()\n"
                "    fut = dist.all_reduce(t, op=dist.ReduceOp.AVG, group=process_group, async_op=True).get_future()\n"
                "    return fut.then(lambda f: f.value()[0])\n",
         mistake="13.mean_allreduce_hook.divided-twice",
         expect=["divided by 9", "process_group.size() twice", "reduceop.avg divides too"]),
    dict(exercise=_MEAN, kind="wrong", why="all_reduce without async_op=True, then get_future()", clause="future",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    t = bucket.buffer().div_(process_group.size())\n"
                "    work = dist.all_reduce(t, group=process_group)\n"
                "    return work.get_future().then(lambda f: f.value()[0])\n",
         mistake="13.mean_allreduce_hook.all-reduce-not-async",
         expect=["'nonetype' object has no attribute 'get_future'", "async_op=true"]),
    dict(exercise=_MEAN, kind="wrong", why="all-reduces on dist.group.WORLD, as torch's hooks do when given None", clause="sum",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    group = dist.group.WORLD\n"
                "    t = bucket.buffer().div_(process_group.size())\n"
                "    return dist.all_reduce(t, group=group, async_op=True).get_future().then(lambda f: f.value()[0])\n",
         mistake="13.mean_allreduce_hook.default-group-used",
         expect=["default process group", "group the hook is given, process_group"]),
    dict(exercise=_MEAN, kind="wrong", why="returns what set_result returns, None (DDP segfaults on None)", clause="future",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    t = bucket.buffer()\n"
                "    dist.all_reduce(t, group=process_group)\n"
                "    return torch.futures.Future().set_result(t / process_group.size())\n",
         mistake="13.mean_allreduce_hook.returned-none",
         expect=["returned none", "set_result(...) returns none", "segmentation fault"]),
    dict(exercise=_MEAN, kind="wrong", why="torch's fp16_compress_wrapper around allreduce_hook", clause="every-rank",
         source="from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n"
                "\n"
                "_hook = default_hooks.fp16_compress_wrapper(default_hooks.allreduce_hook)\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    return _hook(process_group, bucket)\n",
         mistake="13.mean_allreduce_hook.compressed",
         expect=["rounded to float16", "lost precision"]),
    dict(exercise=_MEAN, kind="wrong", why="annotates the return as torch.futures.Future, which DDP refuses", clause="future",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket: dist.GradBucket) -> torch.futures.Future:\n"
                "    t = bucket.buffer().div_(process_group.size())\n"
                "    return dist.all_reduce(t, group=process_group, async_op=True).get_future().then(lambda f: f.value()[0])\n",
         mistake="13.mean_allreduce_hook.wrong-annotation",
         expect=["return annotation should be torch.futures.future[torch.tensor]", "reads the hook's annotations"]),
    dict(exercise=_MEAN, kind="wrong", why="divides by process_group.size without calling it", clause="divided",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    t = bucket.buffer() / process_group.size\n"
                "    return dist.all_reduce(t, group=process_group, async_op=True).get_future().then(lambda f: f.value()[0])\n",
         mistake="13.mean_allreduce_hook.method-not-called",
         expect=["'method'", "used without being called", "process_group.size()"]),
    dict(exercise=_MEAN, kind="wrong", why="all-reduces a divided copy, returns the bucket's own buffer", clause="sum",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    t = bucket.buffer() / process_group.size()\n"
                "    return dist.all_reduce(t, group=process_group, async_op=True).get_future().then(lambda f: bucket.buffer())\n",
         mistake="13.mean_allreduce_hook.not-all-reduced",
         expect=["its own, not averaged"]),
    dict(exercise=_MEAN, kind="wrong", why="divides by the number of parameters in the bucket", clause="divided",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    t = bucket.buffer() / len(bucket.parameters())\n"
                "    return dist.all_reduce(t, group=process_group, async_op=True).get_future().then(lambda f: f.value()[0])\n",
         mistake="13.mean_allreduce_hook.divided-by-parameter-count",
         expect=["divided by 4", "number of parameters in the bucket"]),
    dict(exercise=_MEAN, kind="wrong", why="divides by its rank + 1: a different division on each rank", clause="every-rank",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    t = bucket.buffer() / (process_group.rank() + 1)\n"
                "    return dist.all_reduce(t, group=process_group, async_op=True).get_future().then(lambda f: f.value()[0])\n",
         mistake="13.mean_allreduce_hook.wrong-gradients",
         expect=["not the sum divided by any one number", "the same on every rank"]),
    dict(exercise=_MEAN, kind="right", why="dist.get_world_size(process_group), in the callback",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    fut = dist.all_reduce(bucket.buffer(), group=process_group, async_op=True).get_future()\n"
                "    return fut.then(lambda f: f.value()[0] / dist.get_world_size(process_group))\n",
         expect=[]),
    dict(exercise=_MEAN, kind="right", why="all_gather, then the mean of the stack in a completed future",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    mine = bucket.buffer()\n"
                "    everyone = [torch.empty_like(mine) for _ in range(process_group.size())]\n"
                "    dist.all_gather(everyone, mine, group=process_group)\n"
                "    fut = torch.futures.Future()\n"
                "    fut.set_result(torch.stack(everyone).mean(dim=0))\n"
                "    return fut\n",
         expect=[]),
    dict(exercise=_MEAN, kind="right", why="sums the buffer in place, divides it in the callback",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    buf = bucket.buffer()\n"
                "    work = dist.all_reduce(buf, group=process_group, async_op=True)\n"
                "    return work.get_future().then(lambda _: buf / process_group.size())\n",
         expect=[]),
    dict(exercise=_RECORD, kind="wrong", why="names in the model's order, found by identity", clause="names-order",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    def hook(group, bucket):\n"
                "        if not store or store[-1][-1]['is_last']:\n"
                "            store.append([])\n"
                "        params = bucket.parameters()\n"
                "        names = [n for n, p in ddp_model.module.named_parameters() if any(p is q for q in params)]\n"
                "        store[-1].append({'index': bucket.index(), 'numel': bucket.buffer().numel(), 'names': names,\n"
                "                          'is_last': bucket.is_last()})\n"
                "        t = bucket.buffer().div_(group.size())\n"
                "        return dist.all_reduce(t, group=group, async_op=True).get_future().then(lambda f: f.value()[0])\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.wrong-names",
         expect=["names=", "in bucket.parameters()' order"]),
    dict(exercise=_RECORD, kind="wrong", why="appends one list of its own at each is_last, never a new one", clause="per-pass",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {p: n for n, p in ddp_model.module.named_parameters()}\n"
                "    current = []\n"
                "    def hook(group, bucket):\n"
                "        current.append({'index': bucket.index(), 'numel': bucket.buffer().numel(),\n"
                "                        'names': [names[p] for p in bucket.parameters()], 'is_last': bucket.is_last()})\n"
                "        if bucket.is_last():\n"
                "            store.append(current)\n"
                "        t = bucket.buffer().div_(group.size())\n"
                "        return dist.all_reduce(t, group=group, async_op=True).get_future().then(lambda f: f.value()[0])\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.same-list-each-pass",
         expect=["one list, appended twice", "start a new list"]),
    dict(exercise=_RECORD, kind="wrong", why="appends its list at is_last, then clears it", clause="per-pass",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {p: n for n, p in ddp_model.module.named_parameters()}\n"
                "    current = []\n"
                "    def hook(group, bucket):\n"
                "        current.append({'index': bucket.index(), 'numel': bucket.buffer().numel(),\n"
                "                        'names': [names[p] for p in bucket.parameters()], 'is_last': bucket.is_last()})\n"
                "        if bucket.is_last():\n"
                "            store.append(current)\n"
                "            current.clear()\n"
                "        t = bucket.buffer().div_(group.size())\n"
                "        return dist.all_reduce(t, group=group, async_op=True).get_future().then(lambda f: f.value()[0])\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.same-list-each-pass",
         expect=["one list, appended twice", "not the old one cleared"]),
    dict(exercise=_RECORD, kind="wrong", why="a flag for a new pass, set at is_last and never cleared", clause="pass-start",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {p: n for n, p in ddp_model.module.named_parameters()}\n"
                "    state = {'new': True}\n"
                "    def hook(group, bucket):\n"
                "        if state['new']:\n"
                "            store.append([])\n"
                "        store[-1].append({'index': bucket.index(), 'numel': bucket.buffer().numel(),\n"
                "                          'names': [names[p] for p in bucket.parameters()], 'is_last': bucket.is_last()})\n"
                "        if bucket.is_last():\n"
                "            state['new'] = True\n"
                "        t = bucket.buffer().div_(group.size())\n"
                "        return dist.all_reduce(t, group=group, async_op=True).get_future().then(lambda f: f.value()[0])\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.wrong-pass-count",
         expect=["holds 3 lists; expected 2", "is_last() was true"]),
    dict(exercise=_RECORD, kind="wrong", why="counts passes in a module-level list, which both ranks increment", clause="per-pass",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "_STEP = [0]\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {p: n for n, p in ddp_model.module.named_parameters()}\n"
                "    def hook(group, bucket):\n"
                "        while len(store) <= _STEP[0]:\n"
                "            store.append([])\n"
                "        store[_STEP[0]].append({'index': bucket.index(), 'numel': bucket.buffer().numel(),\n"
                "                          'names': [names[p] for p in bucket.parameters()], 'is_last': bucket.is_last()})\n"
                "        if bucket.is_last():\n"
                "            _STEP[0] += 1\n"
                "        t = bucket.buffer().div_(group.size())\n"
                "        return dist.all_reduce(t, group=group, async_op=True).get_future().then(lambda f: f.value()[0])\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.empty-pass-list",
         expect=["is an empty list", "at module level", "counts both ranks' passes"]),
    dict(exercise=_RECORD, kind="wrong", why="records, then reduces with torch's fp16_compress_hook", clause="averages",
         source="from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {p: n for n, p in ddp_model.module.named_parameters()}\n"
                "    def hook(group, bucket):\n"
                "        if not store or store[-1][-1]['is_last']:\n"
                "            store.append([])\n"
                "        store[-1].append({'index': bucket.index(), 'numel': bucket.buffer().numel(),\n"
                "                          'names': [names[p] for p in bucket.parameters()], 'is_last': bucket.is_last()})\n"
                "        return default_hooks.fp16_compress_hook(group, bucket)\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.compressed",
         expect=["rounded to float16", "fp16_compress_hook"]),
    dict(exercise=_RECORD, kind="wrong", why="numel in bytes (numel * element_size)", clause="numel",
         source="from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {p: n for n, p in ddp_model.module.named_parameters()}\n"
                "    def hook(group, bucket):\n"
                "        if not store or store[-1][-1]['is_last']:\n"
                "            store.append([])\n"
                "        b = bucket.buffer()\n"
                "        store[-1].append({'index': bucket.index(), 'numel': b.numel() * b.element_size(),\n"
                "                          'names': [names[p] for p in bucket.parameters()], 'is_last': bucket.is_last()})\n"
                "        return default_hooks.allreduce_hook(group, bucket)\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.wrong-numel",
         expect=["numel=int 344", "number of elements"]),
    dict(exercise=_RECORD, kind="wrong", why="numel as the number of parameters", clause="numel",
         source="from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {p: n for n, p in ddp_model.module.named_parameters()}\n"
                "    def hook(group, bucket):\n"
                "        if not store or store[-1][-1]['is_last']:\n"
                "            store.append([])\n"
                "        store[-1].append({'index': bucket.index(), 'numel': len(bucket.parameters()),\n"
                "                          'names': [names[p] for p in bucket.parameters()], 'is_last': bucket.is_last()})\n"
                "        return default_hooks.allreduce_hook(group, bucket)\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         mistake="13.record_buckets.wrong-numel",
         expect=["numel=int 5", "number of elements"]),
    dict(exercise=_RECORD, kind="right", why="names looked up by identity in the hook, len(buffer)",
         source="from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    def hook(group, bucket):\n"
                "        if len(store) == 0 or store[-1][-1]['is_last'] is True:\n"
                "            store.append([])\n"
                "        found = []\n"
                "        for q in bucket.parameters():\n"
                "            found += [n for n, p in ddp_model.module.named_parameters() if p is q]\n"
                "        store[-1].append(dict(index=bucket.index(), numel=len(bucket.buffer()), names=found, is_last=bucket.is_last()))\n"
                "        return default_hooks.allreduce_hook(group, bucket)\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         expect=[]),
    dict(exercise=_RECORD, kind="right", why="a list per pass renewed with nonlocal, ReduceOp.AVG",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def record_buckets(ddp_model, store):\n"
                "    names = {id(p): n for n, p in ddp_model.module.named_parameters()}\n"
                "    current = []\n"
                "    def hook(group, bucket):\n"
                "        nonlocal current\n"
                "        if not current:\n"
                "            store.append(current)\n"
                "        current.append({'index': bucket.index(), 'numel': bucket.buffer().numel(),\n"
                "                        'names': [names[id(p)] for p in bucket.parameters()], 'is_last': bucket.is_last()})\n"
                "        if bucket.is_last():\n"
                "            current = []\n"
                "        t = bucket.buffer()\n"
                "        fut = dist.all_reduce(t, group=group, op=dist.ReduceOp.AVG, async_op=True).get_future()\n"
                "        return fut.then(lambda f: f.value()[0])\n"
                "    ddp_model.register_comm_hook(ddp_model.process_group, hook)\n",
         expect=[]),
    dict(exercise=_TOPK, kind="wrong", why="residual as corrected minus the mean over the ranks, as PowerSGD's", clause="residual",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buf = bucket.buffer()\n"
                "    i = bucket.index()\n"
                "    old = state.residuals.get(i)\n"
                "    corrected = buf + old if old is not None and old.shape == buf.shape else buf.clone()\n"
                "    k = min(state.k, corrected.numel())\n"
                "    idx = corrected.abs().topk(k).indices\n"
                "    sent = torch.zeros_like(corrected)\n"
                "    sent[idx] = corrected[idx]\n"
                "    size = state.process_group.size()\n"
                "    fut = dist.all_reduce(sent / size, group=state.process_group, async_op=True).get_future()\n"
                "    def done(f):\n"
                "        mean = f.value()[0]\n"
                "        state.residuals[i] = corrected - mean\n"
                "        return mean\n"
                "    return fut.then(done)\n",
         mistake="13.topk_error_feedback_hook.residual-from-mean",
         expect=["corrected minus the mean over the ranks", "powersgd"]),
    dict(exercise=_TOPK, kind="wrong", why="argsort ascending: the k smallest", clause="abs",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buf = bucket.buffer()\n"
                "    i = bucket.index()\n"
                "    old = state.residuals.get(i)\n"
                "    corrected = buf + old if old is not None and old.shape == buf.shape else buf.clone()\n"
                "    k = min(state.k, corrected.numel())\n"
                "    idx = corrected.abs().argsort()[:k]\n"
                "    sent = torch.zeros_like(corrected)\n"
                "    sent[idx] = corrected[idx]\n"
                "    state.residuals[i] = corrected - sent\n"
                "    fut = dist.all_reduce(sent / state.process_group.size(), group=state.process_group, async_op=True).get_future()\n"
                "    return fut.then(lambda f: f.value()[0])\n",
         mistake="13.topk_error_feedback_hook.smallest-kept",
         expect=["smallest |corrected|", "ascending"]),
    dict(exercise=_TOPK, kind="wrong", why="returns its own sent, never all-reduced", clause="sum-sent",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buf = bucket.buffer()\n"
                "    i = bucket.index()\n"
                "    old = state.residuals.get(i)\n"
                "    corrected = buf + old if old is not None and old.shape == buf.shape else buf.clone()\n"
                "    k = min(state.k, corrected.numel())\n"
                "    idx = corrected.abs().topk(k).indices\n"
                "    sent = torch.zeros_like(corrected)\n"
                "    sent[idx] = corrected[idx]\n"
                "    state.residuals[i] = corrected - sent\n"
                "    fut = torch.futures.Future()\n"
                "    fut.set_result(sent)\n"
                "    return fut\n",
         mistake="13.topk_error_feedback_hook.own-sum-not-all-reduced",
         expect=["its own `sent`", "did not all-reduce it"]),
    dict(exercise=_TOPK, kind="wrong", why="sent takes the buffer's values at the chosen positions", clause="corrected",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buf = bucket.buffer()\n"
                "    i = bucket.index()\n"
                "    old = state.residuals.get(i)\n"
                "    corrected = buf + old if old is not None and old.shape == buf.shape else buf.clone()\n"
                "    k = min(state.k, corrected.numel())\n"
                "    idx = corrected.abs().topk(k).indices\n"
                "    sent = torch.zeros_like(corrected)\n"
                "    sent[idx] = buf[idx]\n"
                "    state.residuals[i] = corrected - sent\n"
                "    fut = dist.all_reduce(sent / state.process_group.size(), group=state.process_group, async_op=True).get_future()\n"
                "    return fut.then(lambda f: f.value()[0])\n",
         mistake="13.topk_error_feedback_hook.sent-from-buffer",
         expect=["the buffer's entries", "corrected's"]),
    dict(exercise=_TOPK, kind="wrong", why="residuals in a mutable default argument", clause="state-kept",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def topk_error_feedback_hook(state, bucket, memory={}):\n"
                "    buf = bucket.buffer()\n"
                "    i = bucket.index()\n"
                "    old = memory.get(i)\n"
                "    corrected = buf + old if old is not None and old.shape == buf.shape else buf.clone()\n"
                "    k = min(state.k, corrected.numel())\n"
                "    idx = corrected.abs().topk(k).indices\n"
                "    sent = torch.zeros_like(corrected)\n"
                "    sent[idx] = corrected[idx]\n"
                "    memory[i] = corrected - sent\n"
                "    fut = dist.all_reduce(sent / state.process_group.size(), group=state.process_group, async_op=True).get_future()\n"
                "    return fut.then(lambda f: f.value()[0])\n",
         mistake="13.topk_error_feedback_hook.residuals-not-in-state",
         expect=["state.residuals is", "in a default argument"]),
    dict(exercise=_TOPK, kind="wrong", why="zeroes every residual at the last bucket of a pass", clause="residual",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buf = bucket.buffer()\n"
                "    i = bucket.index()\n"
                "    old = state.residuals.get(i)\n"
                "    corrected = buf + old if old is not None and old.shape == buf.shape else buf.clone()\n"
                "    k = min(state.k, corrected.numel())\n"
                "    idx = corrected.abs().topk(k).indices\n"
                "    sent = torch.zeros_like(corrected)\n"
                "    sent[idx] = corrected[idx]\n"
                "    state.residuals[i] = corrected - sent\n"
                "    if bucket.is_last():\n"
                "        for key in state.residuals:\n"
                "            state.residuals[key] = torch.zeros_like(state.residuals[key])\n"
                "    fut = dist.all_reduce(sent / state.process_group.size(), group=state.process_group, async_op=True).get_future()\n"
                "    return fut.then(lambda f: f.value()[0])\n",
         mistake="13.topk_error_feedback_hook.no-error-feedback",
         expect=["without error feedback"]),
    dict(exercise=_TOPK, kind="right", why="residual as corrected with the kept entries zeroed, ReduceOp.AVG",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buf = bucket.buffer()\n"
                "    old = state.residuals.get(bucket.index(), None)\n"
                "    if old is None or old.numel() != buf.numel():\n"
                "        old = torch.zeros_like(buf)\n"
                "    corrected = buf + old\n"
                "    _, idx = torch.topk(torch.abs(corrected), k=min(state.k, corrected.numel()))\n"
                "    left = corrected.clone()\n"
                "    left[idx] = 0.0\n"
                "    state.residuals[bucket.index()] = left\n"
                "    sent = corrected - left\n"
                "    fut = dist.all_reduce(sent, op=dist.ReduceOp.AVG, group=state.process_group, async_op=True).get_future()\n"
                "    return fut.then(lambda f: f.value()[0])\n",
         expect=[]),
    dict(exercise=_TOPK, kind="right", why="adds the residual into the buffer in place, as PowerSGD does, and masks",
         source="import torch\n"
                "import torch.distributed as dist\n"
                "\n"
                "\n"
                "def topk_error_feedback_hook(state, bucket):\n"
                "    buf = bucket.buffer()\n"
                "    key = bucket.index()\n"
                "    if key in state.residuals and state.residuals[key].numel() == buf.numel():\n"
                "        buf.add_(state.residuals[key])\n"
                "    k = min(state.k, buf.numel())\n"
                "    idx = buf.abs().topk(k, sorted=False).indices\n"
                "    mask = torch.zeros(buf.numel(), dtype=torch.bool)\n"
                "    mask[idx] = True\n"
                "    state.residuals[key] = buf.masked_fill(mask, 0)\n"
                "    buf.masked_fill_(~mask, 0).div_(state.process_group.size())\n"
                "    fut = dist.all_reduce(buf, group=state.process_group, async_op=True).get_future()\n"
                "    return fut.then(lambda f: f.value()[0])\n",
         expect=[]),
    # The check makes DDP's own tests of the hook (DistributedDataParallel._check_comm_hook): the annotations
    # torch's documentation gives a comm hook pass them.
    dict(exercise=_MEAN, kind="right", why="annotated as torch's documentation annotates a comm hook",
         source="import torch\nimport torch.distributed as dist\n\n\n"
                "def mean_allreduce_hook(process_group: dist.ProcessGroup,\n"
                "                        bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:\n"
                "    tensor = bucket.buffer().div_(process_group.size())\n"
                "    work = dist.all_reduce(tensor, group=process_group, async_op=True)\n"
                "    return work.get_future().then(lambda fut: fut.value()[0])\n",
         expect=[]),
    dict(exercise=_RECORD, kind="wrong", why="names zipped from state_dict()'s keys, which hold a buffer too",
         clause="names",
         source=edited(reference(_RECORD), (
             "names = {parameter: name for name, parameter in ddp_model.module.named_parameters()}",
             "names = dict(zip(ddp_model.module.parameters(), ddp_model.module.state_dict()))")),
         mistake="13.record_buckets.names-from-state-dict",
         expect=["names=", "'shift' is not a parameter but a buffer", "state_dict()"]),
    dict(exercise=_RECORD, kind="right", why="numel summed over bucket.gradients()",
         source=edited(reference(_RECORD), ('"numel": bucket.buffer().numel()',
                                            '"numel": sum(gradient.numel() for gradient in bucket.gradients())')),
         expect=[]),
]

# Entries for the named mistakes no entry above produced: what any comm hook can get wrong, in each exercise.
_WITH_TORCH = ("import torch.distributed as dist", "import torch\nimport torch.distributed as dist")
_RECORD_REDUCE = "return dist.all_reduce(buffer, group=state, async_op=True).get_future().then(lambda f: f.value()[0])"
_TOPK_RETURN = "return work.get_future().then(lambda future: future.value()[0])"
ENTRIES += [
    dict(exercise=_MEAN, kind="wrong", why="the callback's return forgotten", clause="future",
         source=edited(reference(_MEAN), ("    return work.get_future().then(lambda future: future.value()[0])",
                                          "    def done(future):\n        future.value()[0]\n\n"
                                          "    return work.get_future().then(done)")),
         mistake="13.mean_allreduce_hook.future-not-of-a-tensor", expect=["returned a future whose value is none"]),
    dict(exercise=_MEAN, kind="wrong", why="torch's allreduce_hook given None, as its docs register it",
         clause="averages",
         source="from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook\n\n\n"
                "def mean_allreduce_hook(process_group, bucket):\n"
                "    return allreduce_hook(None, bucket)\n",
         mistake="13.mean_allreduce_hook.none-as-group", expect=["the group was none", "dist.group.world"]),
    dict(exercise=_MEAN, kind="wrong", why="divides by 8, the number of GPUs it was written for", clause="divided",
         source=edited(reference(_MEAN), ("bucket.buffer().div_(process_group.size())", "bucket.buffer().div_(8)")),
         mistake="13.mean_allreduce_hook.wrong-divisor", expect=["divided by 8", "process_group.size(), 2"]),
    dict(exercise=_RECORD, kind="wrong", why="all_reduce without async_op=True, then get_future()", clause="averages",
         source=edited(reference(_RECORD), ("group=state, async_op=True)", "group=state)")),
         mistake="13.record_buckets.all-reduce-not-async", expect=["async_op=true"]),
    dict(exercise=_RECORD, kind="wrong", why="the hook's second parameter named grad_bucket", clause="registers",
         source=edited(reference(_RECORD), ("def hook(state, bucket):", "def hook(state, grad_bucket):")),
         mistake="13.record_buckets.bucket-parameter-misnamed", expect=["keyerror: 'bucket'"]),
    dict(exercise=_RECORD, kind="wrong", why="all-reduces on rank 0 only: rank 1 never joins", clause="averages",
         source=edited(reference(_RECORD), ("        " + _RECORD_REDUCE,
                                            "        if state.rank() == 1:\n"
                                            "            future = torch.futures.Future()\n"
                                            "            future.set_result(buffer)\n"
                                            "            return future\n"
                                            "        " + _RECORD_REDUCE), _WITH_TORCH),
         mistake="13.record_buckets.collectives-differ-by-rank", expect=["gave up waiting for the other rank"]),
    dict(exercise=_RECORD, kind="wrong", why="the callback prints the tensor instead of returning it", clause="averages",
         source=edited(reference(_RECORD), (".then(lambda f: f.value()[0])", ".then(lambda f: print(f.value()[0]))")),
         mistake="13.record_buckets.future-not-of-a-tensor", expect=["returned a future whose value is none"]),
    dict(exercise=_RECORD, kind="wrong", why="returns the collective's future of a list", clause="averages",
         source=edited(reference(_RECORD), (".get_future().then(lambda f: f.value()[0])", ".get_future()")),
         mistake="13.record_buckets.future-of-a-list", expect=["value()[0]"]),
    dict(exercise=_RECORD, kind="wrong", why="divides by state.size without calling it", clause="averages",
         source=edited(reference(_RECORD), ("div_(state.size())", "div_(state.size)")),
         mistake="13.record_buckets.method-not-called", expect=["without being called"]),
    dict(exercise=_RECORD, kind="wrong", why="returns what wait() gives", clause="averages",
         source=edited(reference(_RECORD), (".get_future().then(lambda f: f.value()[0])", ".wait()")),
         mistake="13.record_buckets.not-a-future", expect=["must return a torch.futures.future"]),
    dict(exercise=_RECORD, kind="wrong", why="a future made by hand and never completed", clause="averages",
         source=edited(reference(_RECORD), ("        " + _RECORD_REDUCE,
                                            "        dist.all_reduce(buffer, group=state)\n"
                                            "        return torch.futures.Future()"), _WITH_TORCH),
         mistake="13.record_buckets.rank-stuck", expect=["did not finish within"]),
    dict(exercise=_RECORD, kind="wrong", why="the hook's return forgotten", clause="averages",
         source=edited(reference(_RECORD), ("        " + _RECORD_REDUCE, "        " + _RECORD_REDUCE[len("return "):])),
         mistake="13.record_buckets.returned-none", expect=["returned none for bucket", "a `return` is missing"]),
    dict(exercise=_RECORD, kind="wrong", why="divides by the number of parameters in the bucket", clause="averages",
         source=edited(reference(_RECORD), ("div_(state.size())", "div_(len(bucket.parameters()))")),
         mistake="13.record_buckets.gradients-changed",
         expect=["gradients differ from ddp's own", "average each bucket"]),
    dict(exercise=_RECORD, kind="wrong", why="each record carries the rank too", clause="per-bucket",
         source=edited(reference(_RECORD), ('"is_last": bucket.is_last()})',
                                            '"is_last": bucket.is_last(), "rank": state.rank()})')),
         mistake="13.record_buckets.wrong-record-keys", expect=["expected dicts with the keys"]),
    dict(exercise=_RECORD, kind="wrong", why="annotates the hook's return as torch.futures.Future", clause="registers",
         source=edited(reference(_RECORD), ("def hook(state, bucket):",
                                            "def hook(state, bucket) -> torch.futures.Future:"), _WITH_TORCH),
         mistake="13.record_buckets.wrong-annotation", expect=["annotations"]),
    dict(exercise=_TOPK, kind="wrong", why="all_reduce without async_op=True, then get_future()", clause="future",
         source=edited(reference(_TOPK), ("group=state.process_group, async_op=True)", "group=state.process_group)")),
         mistake="13.topk_error_feedback_hook.all-reduce-not-async", expect=["async_op=true"]),
    dict(exercise=_TOPK, kind="wrong", why="the second parameter named grad_bucket", clause="future",
         source=edited(reference(_TOPK), ("def topk_error_feedback_hook(state, bucket):",
                                          "def topk_error_feedback_hook(state, grad_bucket):")),
         mistake="13.topk_error_feedback_hook.bucket-parameter-misnamed", expect=["keyerror: 'bucket'"]),
    dict(exercise=_TOPK, kind="wrong", why="the callback prints the tensor instead of returning it", clause="future",
         source=edited(reference(_TOPK), (".then(lambda future: future.value()[0])",
                                          ".then(lambda future: print(future.value()[0]))")),
         mistake="13.topk_error_feedback_hook.future-not-of-a-tensor", expect=["returned a future whose value is none"]),
    dict(exercise=_TOPK, kind="wrong", why="returns the collective's future of a list", clause="future",
         source=edited(reference(_TOPK), (_TOPK_RETURN, "return work.get_future()")),
         mistake="13.topk_error_feedback_hook.future-of-a-list", expect=["value()[0]"]),
    dict(exercise=_TOPK, kind="wrong", why="divides by the group's size without calling it", clause="divided",
         source=edited(reference(_TOPK), ("sent.div_(state.process_group.size())", "sent.div_(state.process_group.size)")),
         mistake="13.topk_error_feedback_hook.method-not-called", expect=["without being called"]),
    dict(exercise=_TOPK, kind="wrong", why="divides by dist.group.WORLD's size, as torch's hooks find their group",
         clause="divided",
         source=edited(reference(_TOPK), ("sent.div_(state.process_group.size())", "sent.div_(dist.group.WORLD.size())")),
         mistake="13.topk_error_feedback_hook.none-as-group", expect=["the group was none"]),
    dict(exercise=_TOPK, kind="wrong", why="returns the work object, not its future", clause="future",
         source=edited(reference(_TOPK), (_TOPK_RETURN, "return work")),
         mistake="13.topk_error_feedback_hook.not-a-future", expect=["must return a torch.futures.future"]),
    dict(exercise=_TOPK, kind="wrong", why="returns its own sent, divided, in a future completed by hand",
         clause="sum-sent",
         source=edited(reference(_TOPK), ("    work = dist.all_reduce(sent, group=state.process_group, async_op=True)\n"
                                          "    " + _TOPK_RETURN,
                                          "    done = torch.futures.Future()\n    done.set_result(sent)\n"
                                          "    return done")),
         mistake="13.topk_error_feedback_hook.not-all-reduced", expect=["without the other ranks'"]),
    dict(exercise=_TOPK, kind="wrong", why="a future made by hand and never completed", clause="future",
         source=edited(reference(_TOPK), (_TOPK_RETURN, "return torch.futures.Future()")),
         mistake="13.topk_error_feedback_hook.rank-stuck", expect=["did not finish within"]),
    dict(exercise=_TOPK, kind="wrong", why="the return forgotten", clause="future",
         source=edited(reference(_TOPK), (_TOPK_RETURN, _TOPK_RETURN[len("return "):])),
         mistake="13.topk_error_feedback_hook.returned-none", expect=["returned none for bucket"]),
    dict(exercise=_TOPK, kind="wrong", why="annotates the return as torch.futures.Future", clause="future",
         source=edited(reference(_TOPK), ("def topk_error_feedback_hook(state, bucket):",
                                          "def topk_error_feedback_hook(state, bucket) -> torch.futures.Future:")),
         mistake="13.topk_error_feedback_hook.wrong-annotation", expect=["annotations"]),
]
