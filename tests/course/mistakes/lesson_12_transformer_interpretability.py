"""Mistake catalogue for lesson 12, a transformer looked at with hooks. The format of an entry is
described in tests/course/test_mistake_catalogue.py. An entry that is the reference solution with one
mistake says so: `edited(reference(exercise), (old, new), ...)`; the others are submissions of their own."""

from mistakes import edited, reference

CLAUSES = {
    "run_with_cache": {
        "once": "Run `model(tokens)` once",
        "pair": "return `(logits, cache)`",
        "logits": "`logits` what the model returned.",
        "names": "`cache` maps hook-point names (the keys of `model.hook_points()`) to the activation there",
        "all": "every hook point when `names` is None",
        "list": "the names in a list",
        "iterable": "(or any other iterable of names: a tuple, a generator)",
        "string": "the name given as a bare string (one name, not its characters)",
        "predicate": "or the hook points for which `names(name)` returns True.",
        "gradients": "Gradients flow as in any forward pass: `logits` keep their autograd graph (only the cache is "
                     "detached).",
        "detached": "Each cached tensor is detached",
        "copy": "and a copy: later in-place operations, in the forward pass or by the caller, do not change it.",
        "key-error": "A name in the list that is not a hook point raises KeyError",
        "key-error-first": "before any hook is registered.",
        "removed": "Every hook is removed before returning",
        "removed-on-raise": "also when the forward pass raises",
        "propagates": "(the exception propagates)",
        "own-hooks": "hooks the model had before stay.",
    },
    "run_with_hooks": {
        "returns": "Return `model(tokens)` computed with temporary forward hooks.",
        "pairs": "`fwd_hooks` is a list of `(name, fn)`: `name` a hook point's name (a key of `model.hook_points()`)",
        "fn-args": "`fn(activation, name)`",
        "replacement": "returns a replacement for the activation, or None to keep it.",
        "order": "Pairs that name the same hook point run in the list's order",
        "chain": "each on what the one before returned.",
        "key-error": "A name that is not a hook point raises KeyError",
        "key-error-first": "before any hook is registered.",
        "removed": "The hooks are removed before returning",
        "removed-on-raise": "also when the forward pass raises",
        "propagates": "(the exception propagates)",
        "own-hooks": "hooks the model had before stay",
        "own-hooks-run": "and run as before.",
        "gradients": "Gradients flow as in any forward pass: the logits keep their autograd graph, through each "
                     "activation and its replacement.",
    },
    "ablate_heads": {
        "logits": "Return the logits of `model(tokens)`",
        "each-head": "with the output of each head in `heads`, a list of `(layer, head)` pairs",
        "at-z": "replaced at `blocks.{layer}.attn.hook_z` (shape (batch, seq, head, d_head))",
        "every-position": "at every position;",
        "others": "every other head is left as it was.",
        "zero": 'kind="zero": replaced by zeros.',
        "mean-reference": 'kind="mean": replaced by its mean over the batch of `mean_cache[name]` (the cache of a '
                          'reference run)',
        "per-position": "one mean per position;",
        "value-error": "with no `mean_cache`, raises ValueError.",
        "other-kind": "Any other `kind` raises ValueError.",
        "no-hook": "No hook is left on the model",
        "no-hook-on-raise": "also when the forward pass raises",
        "propagates": "(the exception propagates)",
        "own-hooks": "hooks the model had before stay.",
    },
    "patching_table": {
        "shape": "a float tensor of shape (len(names), seq)",
        "metric": "whose entry [i, p] is `metric(logits)`",
        "corrupted-run": "of the run on `corrupted`",
        "position": "in which the activation at hook point `names[i]`, position p",
        "whole-batch": "(`activation[:, p]`: all of the batch, every feature)",
        "from-clean": "is replaced by its value in the run on `clean`",
        "rest-corrupted": "and everything else is as in the corrupted run.",
        "no-hook": "No hook is left on the model",
        "no-hook-on-raise": "also when `metric` raises",
        "propagates": "(the exception propagates)",
        "own-hooks": "hooks the model had before stay.",
    },
    "attribution_table": {
        "estimate": "the first-order estimate of patching_table(model, clean, corrupted, metric, names)",
        "shape": "a float tensor of shape (len(names), seq).",
        "formula": "table[i, p] = M + sum((C[:, p] - R[:, p]) * G[:, p])",
        "M": "with M the metric of the run on `corrupted`",
        "C-R": "C and R the activations at `names[i]` in the runs on `clean` and `corrupted`",
        "G": "G the gradient of M with respect to R",
        "sum": "and the sum over the batch and every feature.",
        "twice": "The model runs exactly twice (once on each prompt)",
        "backward-once": "and backward runs once.",
        "tensor-hooks": "Gradients are read without retain_grad() on the model's tensors",
        "no-hook": "No hook is left on the model",
        "no-hook-on-raise": "also when `metric` raises",
        "propagates": "(the exception propagates)",
        "own-hooks": "hooks the model had before stay.",
    },
    "steer": {
        "context-manager": "A context manager",
        "adds": "every forward pass of `model` adds `alpha * vector` to the activation at hook point `name`",
        "everywhere": "every batch element and position",
        "outside": "Outside the block the model runs as before",
        "removed": "the hook is removed when the block ends",
        "removed-on-raise": "also when it raises",
        "propagates": "(the exception propagates).",
        "unchanged": "`vector` is not changed.",
        "nest": "Blocks may nest: the additions add up.",
        "gradients": "Gradients flow as in any forward pass: the steered activation keeps its autograd graph.",
    },
}

NOT_CLAUSES = {
    "steer": {
        "`vector` has the size of the activation's last dimension).": "what the caller passes",
    },
    "patching_table": {
        "`clean` and `corrupted` are token tensors of the same shape (batch, seq);":
            "what the caller passes, not a promise of the function",
        "each hook point in `names` has an activation of shape (batch, seq, ...);":
            "what the caller passes: hook points whose position is dimension 1",
        "`metric` returns a 0-dim tensor.": "what the caller passes",
    },
    "attribution_table": {
        "(with tensor hooks registered from forward hooks, for example).": "a suggestion of how, not a promise",
        "(A backward() that also fills the parameters' .grad is allowed.)":
            "a freedom, not a promise: nothing is asked of the parameters' .grad",
    },
}

# A steer of its own, by module surgery: the hook point is replaced, for the block, by a module that adds
# alpha * vector to what it replaced (a hook point being an identity, to its input).
_MODULE_SURGERY_STEER = '''
import contextlib

import torch


class Added(torch.nn.Module):
    def __init__(self, inner, delta):
        super().__init__()
        self.inner, self.delta = inner, delta

    def forward(self, x):
        inner = self.inner(x) if isinstance(self.inner, Added) else x  # a hook point is an identity
        return inner + self.delta


@contextlib.contextmanager
def steer(model, name, vector, alpha=1.0):
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name)
    original = getattr(parent, child)
    setattr(parent, child, Added(original, alpha * vector))
    try:
        yield
    finally:
        setattr(parent, child, original)
'''

ENTRIES = [
    # ------------------------------------------------------------------ run_with_cache
    dict(exercise="run_with_cache", kind="wrong", clause="copy", why="detach without clone",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()", "cache[name] = output.detach()")),
         expect=["clone()", "in-place"], mistake="12.run_with_cache.not-cloned"),
    dict(exercise="run_with_cache", kind="wrong", clause="detached", why="clone without detach",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()", "cache[name] = output.clone()")),
         expect=["autograd graph", "detach"], mistake="12.run_with_cache.cache-not-detached"),
    dict(exercise="run_with_cache", kind="wrong", clause="removed", why="never removes its hooks",
         source=edited(reference("run_with_cache"),
                       ("    with contextlib.ExitStack() as stack:\n"
                        "        for name in chosen:\n"
                        "            stack.enter_context(points[name].register_forward_hook(hook_for(name)))\n"
                        "        logits = model(tokens)",
                        "    for name in chosen:\n"
                        "        points[name].register_forward_hook(hook_for(name))\n"
                        "    logits = model(tokens)")),
         expect=["hooks were still registered"], mistake="12.run_with_cache.hooks-left"),
    dict(exercise="run_with_cache", kind="wrong", clause="removed-on-raise", why="removes the hooks after forward, not in finally",
         source=edited(reference("run_with_cache"),
                       ("    with contextlib.ExitStack() as stack:\n"
                        "        for name in chosen:\n"
                        "            stack.enter_context(points[name].register_forward_hook(hook_for(name)))\n"
                        "        logits = model(tokens)",
                        "    handles = [points[name].register_forward_hook(hook_for(name)) for name in chosen]\n"
                        "    logits = model(tokens)\n"
                        "    for handle in handles:\n"
                        "        handle.remove()")),
         expect=["whose forward pass raised valueerror", "hooks were still registered", "finally"],
         mistake="12.run_with_cache.hooks-left-on-raise"),
    dict(exercise="run_with_cache", kind="wrong", clause="propagates", why="swallows the forward's exception",
         source=edited(reference("run_with_cache"),
                       ("        logits = model(tokens)",
                        "        try:\n            logits = model(tokens)\n        except Exception:\n"
                        "            logits = None")),
         expect=["let the exception reach the caller"], mistake="12.run_with_cache.swallowed-exception"),
    dict(exercise="run_with_cache", kind="wrong", clause="key-error", why="skips unknown names silently",
         source=edited(reference("run_with_cache"),
                       ("        if unknown:\n            raise KeyError(f\"not hook points of the model: {unknown}\")\n",
                        "        chosen = [name for name in chosen if name in points]\n")),
         expect=["must raise keyerror", "blocks.7.hook_resid_pre"], mistake="12.run_with_cache.unknown-name-accepted"),
    dict(exercise="run_with_cache", kind="wrong", clause="key-error-first", why="finds the unknown name while registering",
         source=edited(reference("run_with_cache"),
                       ("        unknown = [name for name in chosen if name not in points]\n"
                        "        if unknown:\n            raise KeyError(f\"not hook points of the model: {unknown}\")\n", ""),
                       ("            stack.enter_context(points[name].register_forward_hook(hook_for(name)))",
                        "            stack.enter_context(model.hook_points()[name].register_forward_hook(hook_for(name)))")),
         expect=["only after it had registered", "check every name first"],
         mistake="12.run_with_cache.registers-before-key-error"),
    dict(exercise="run_with_cache", kind="wrong", clause="own-hooks", why="clears every hook point's hooks at the end",
         source=edited(reference("run_with_cache"),
                       ("    return logits, cache",
                        "    for point in points.values():\n        point._forward_hooks.clear()\n"
                        "    return logits, cache")),
         expect=["removed hooks that were on the model before"], mistake="12.run_with_cache.removed-own-hooks"),
    dict(exercise="run_with_cache", kind="wrong", clause="all", why="names=None caches every module, not only hook points",
         source=edited(reference("run_with_cache"),
                       ("    if names is None:\n        chosen = list(points)",
                        "    if names is None:\n        points = dict(model.named_modules())\n        chosen = list(points)")),
         expect=["not hook points"], mistake="12.run_with_cache.caches-modules"),
    dict(exercise="run_with_cache", kind="wrong", clause="list", why="caches everything whatever the list",
         source=edited(reference("run_with_cache"),
                       ("        stack.enter_context(points[name].register_forward_hook(hook_for(name)))\n        logits",
                        "        pass\n        for name in points:\n"
                        "            stack.enter_context(points[name].register_forward_hook(hook_for(name)))\n"
                        "        logits")),
         expect=["which were not asked for"], mistake="12.run_with_cache.caches-unasked-names"),
    dict(exercise="run_with_cache", kind="wrong", clause="predicate", why="a predicate read as a list of names",
         source=edited(reference("run_with_cache"),
                       ("    elif callable(names):\n        chosen = [name for name in points if names(name)]\n", "")),
         expect=["typeerror", "not iterable"], mistake="12.run_with_cache.predicate-read-as-names"),
    dict(exercise="run_with_cache", kind="wrong", clause="pair", why="returns the cache only",
         source=edited(reference("run_with_cache"), ("    return logits, cache", "    return cache")),
         expect=["expected a pair (logits, cache)"], mistake="12.run_with_cache.not-a-pair"),
    dict(exercise="run_with_cache", kind="wrong", clause="logits", why="returns the last position's logits",
         source=edited(reference("run_with_cache"), ("    return logits, cache", "    return logits[:, -1], cache")),
         expect=["as its logits", "shape (2, 6, 10)"], mistake="12.run_with_cache.last-position-logits"),
    dict(exercise="run_with_cache", kind="wrong", clause="once", why="one forward pass per hook point",
         source=edited(reference("run_with_cache"),
                       ("    with contextlib.ExitStack() as stack:\n"
                        "        for name in chosen:\n"
                        "            stack.enter_context(points[name].register_forward_hook(hook_for(name)))\n"
                        "        logits = model(tokens)",
                        "    logits = model(tokens)\n"
                        "    for name in chosen:\n"
                        "        with points[name].register_forward_hook(hook_for(name)):\n"
                        "            model(tokens)")),
         expect=["ran the model", "times", "run it once"], mistake="12.run_with_cache.runs-model-again"),
    dict(exercise="run_with_cache", kind="wrong", clause="names", why="late-binding loop variable in a lambda",
         source=edited(reference("run_with_cache"),
                       ("stack.enter_context(points[name].register_forward_hook(hook_for(name)))",
                        "stack.enter_context(points[name].register_forward_hook(\n"
                        "                lambda module, args, output: cache.update({name: output.detach().clone()})))")),
         expect=["loop's variable", "own"], mistake="12.run_with_cache.late-binding"),
    dict(exercise="run_with_cache", kind="right", why="try/finally over a list of handles, a filter function",
         source='''
def run_with_cache(model, tokens, names=None):
    points = model.hook_points()
    if names is None:
        wanted = points.keys()
    elif callable(names):
        wanted = list(filter(names, points))
    else:
        wanted = [names] if type(names) is str else list(names)  # a generator can be read only once
        for name in wanted:
            if name not in points:
                raise KeyError(name)
    cache, handles = {}, []
    for name in wanted:
        handles.append(points[name].register_forward_hook(
            lambda module, args, output, key=name: cache.__setitem__(key, output.clone().detach())))
    try:
        out = model(tokens)
    finally:
        for handle in handles:
            handle.remove()
    return out, cache
''',
         expect=[]),

    # ------------------------------------------------------------------ run_with_hooks
    dict(exercise="run_with_hooks", kind="wrong", clause="replacement", why="ignores what fn returns",
         source=edited(reference("run_with_hooks"),
                       ("        return lambda module, args, output: fn(output, name)",
                        "        def hook(module, args, output):\n            fn(output, name)\n        return hook")),
         expect=["without the replacements", "return what fn returned"],
         mistake="12.run_with_hooks.replacement-ignored"),
    dict(exercise="run_with_hooks", kind="wrong", clause="fn-args", why="calls fn(name, activation)",
         source=edited(reference("run_with_hooks"), ("fn(output, name)", "fn(name, output)")),
         expect=["fn(activation, name)", "activation (the hook's output) first"],
         mistake="12.run_with_hooks.wrong-fn-arguments"),
    dict(exercise="run_with_hooks", kind="wrong", clause="order", why="registers with prepend=True",
         source=edited(reference("run_with_hooks"),
                       ("register_forward_hook(hook_for(name, fn))", "register_forward_hook(hook_for(name, fn), prepend=True)")),
         expect=["reverse order", "list's order"], mistake="12.run_with_hooks.reverse-order"),
    dict(exercise="run_with_hooks", kind="wrong", clause="chain", why="a dict by name keeps one function per hook point",
         source=edited(reference("run_with_hooks"),
                       ("        for name, fn in fwd_hooks:\n",
                        "        for name, fn in dict(fwd_hooks).items():\n")),
         expect=["only the last function of that hook point"], mistake="12.run_with_hooks.one-fn-per-name"),
    dict(exercise="run_with_hooks", kind="wrong", clause="key-error", why="skips unknown names",
         source=edited(reference("run_with_hooks"),
                       ("        for name, fn in fwd_hooks:\n",
                        "        for name, fn in [(name, fn) for name, fn in fwd_hooks if name in points]:\n"),
                       ("    if unknown:\n        raise KeyError(f\"not hook points of the model: {unknown}\")\n", "")),
         expect=["must raise keyerror"], mistake="12.run_with_hooks.unknown-name-accepted"),
    dict(exercise="run_with_hooks", kind="wrong", clause="key-error-first", why="a KeyError from the lookup while registering",
         source=edited(reference("run_with_hooks"),
                       ("    if unknown:\n        raise KeyError(f\"not hook points of the model: {unknown}\")\n", "")),
         expect=["only after it had registered"], mistake="12.run_with_hooks.registers-before-key-error"),
    dict(exercise="run_with_hooks", kind="wrong", clause="removed", why="never removes its hooks",
         source=edited(reference("run_with_hooks"),
                       ("            stack.enter_context(points[name].register_forward_hook(hook_for(name, fn)))",
                        "            points[name].register_forward_hook(hook_for(name, fn))")),
         expect=["hooks were still registered"], mistake="12.run_with_hooks.hooks-left"),
    dict(exercise="run_with_hooks", kind="wrong", clause="removed-on-raise", why="removes after forward, not in finally",
         source=edited(reference("run_with_hooks"),
                       ("    with contextlib.ExitStack() as stack:\n"
                        "        for name, fn in fwd_hooks:\n"
                        "            stack.enter_context(points[name].register_forward_hook(hook_for(name, fn)))\n"
                        "        return model(tokens)",
                        "    handles = [points[name].register_forward_hook(hook_for(name, fn)) for name, fn in fwd_hooks]\n"
                        "    logits = model(tokens)\n"
                        "    for handle in handles:\n"
                        "        handle.remove()\n"
                        "    return logits")),
         expect=["whose forward pass raised valueerror", "hooks were still registered"],
         mistake="12.run_with_hooks.hooks-left-on-raise"),
    dict(exercise="run_with_hooks", kind="wrong", clause="propagates", why="returns None when forward raises",
         source=edited(reference("run_with_hooks"),
                       ("        return model(tokens)",
                        "        try:\n            return model(tokens)\n        except ValueError:\n            return None")),
         expect=["let the exception reach the caller"], mistake="12.run_with_hooks.swallowed-exception"),
    dict(exercise="run_with_hooks", kind="wrong", clause="own-hooks", why="clears the hook points' hooks afterwards",
         source=edited(reference("run_with_hooks"),
                       ("        return model(tokens)",
                        "        logits = model(tokens)\n"
                        "    for point in points.values():\n"
                        "        point._forward_hooks.clear()\n"
                        "    return logits")),
         expect=["removed hooks that were on the model before"], mistake="12.run_with_hooks.removed-own-hooks"),
    dict(exercise="run_with_hooks", kind="wrong", clause="own-hooks", why="clears the named hook points' hooks first",
         source=edited(reference("run_with_hooks"),
                       ("    def hook_for(name, fn):",
                        "    for name, _ in fwd_hooks:\n        points[name]._forward_hooks.clear()\n\n"
                        "    def hook_for(name, fn):")),
         expect=["removed hooks that were on the model before"], mistake="12.run_with_hooks.removed-own-hooks"),
    dict(exercise="run_with_hooks", kind="wrong", clause="own-hooks-run", why="puts the model's own hooks aside during the call",
         source=edited(reference("run_with_hooks"),
                       ("    with contextlib.ExitStack() as stack:\n",
                        "    saved = {name: dict(point._forward_hooks) for name, point in points.items()}\n"
                        "    for point in points.values():\n"
                        "        point._forward_hooks.clear()\n"
                        "    try:\n"
                        "        return _run(points, fwd_hooks, hook_for, model, tokens)\n"
                        "    finally:\n"
                        "        for name, point in points.items():\n"
                        "            point._forward_hooks.update(saved[name])\n"
                        "\n"
                        "\n"
                        "def _run(points, fwd_hooks, hook_for, model, tokens):\n"
                        "    with contextlib.ExitStack() as stack:\n")),
         expect=["did not run during the call"], mistake="12.run_with_hooks.own-hooks-disabled"),
    dict(exercise="run_with_hooks", kind="wrong", clause="returns", why="forgets to return the logits",
         source=edited(reference("run_with_hooks"), ("        return model(tokens)", "        model(tokens)")),
         expect=["returned none", "expected the logits"], mistake="12.run_with_hooks.logits-not-a-tensor"),
    dict(exercise="run_with_hooks", kind="wrong", clause="pairs", why="reads fwd_hooks as a dict",
         source=edited(reference("run_with_hooks"),
                       ("        for name, fn in fwd_hooks:\n", "        for name, fn in fwd_hooks.items():\n"),
                       ("    unknown = [name for name, _ in fwd_hooks if name not in points]",
                        "    unknown = [name for name in dict(fwd_hooks) if name not in points]")),
         expect=["attributeerror", "items"], mistake="12.run_with_hooks.pairs-read-as-dict"),
    dict(exercise="run_with_hooks", kind="right", why="try/finally, a def per pair, explicit None test",
         source='''
def run_with_hooks(model, tokens, fwd_hooks):
    points = model.hook_points()
    for name, _ in fwd_hooks:
        if name not in points:
            raise KeyError(name)
    handles = []

    def make(fn, name):
        def hook(module, args, output):
            new = fn(output, name)
            return output if new is None else new
        return hook

    try:
        for name, fn in fwd_hooks:
            handles.append(points[name].register_forward_hook(make(fn, name)))
        return model(tokens)
    finally:
        for handle in handles:
            handle.remove()
''',
         expect=[]),

    # ------------------------------------------------------------------ ablate_heads
    dict(exercise="ablate_heads", kind="wrong", clause="mean-reference", why="the batch's own mean",
         source=edited(reference("ablate_heads"),
                       ("z[:, :, chosen] = mean_cache[name][:, :, chosen].mean(dim=0)",
                        "z[:, :, chosen] = z[:, :, chosen].mean(dim=0)")),
         expect=["mean over the batch being ablated", "mean of the reference run"],
         mistake="12.ablate_heads.mean-of-ablated-batch"),
    dict(exercise="ablate_heads", kind="wrong", clause="per-position", why="a mean over the positions too",
         source=edited(reference("ablate_heads"),
                       ("mean_cache[name][:, :, chosen].mean(dim=0)", "mean_cache[name][:, :, chosen].mean(dim=(0, 1))")),
         expect=["over the positions too", "one mean per position"], mistake="12.ablate_heads.mean-over-positions"),
    dict(exercise="ablate_heads", kind="wrong", clause="at-z", why="indexes the positions instead of the heads",
         source=edited(reference("ablate_heads"),
                       ("                z[:, :, chosen] = 0", "                z[:, chosen] = 0")),
         expect=["zeroed a position instead of a head", "z[:, :, head]"],
         mistake="12.ablate_heads.position-taken-for-head"),
    dict(exercise="ablate_heads", kind="wrong", clause="each-head", why="one head per layer (a dict overwritten)",
         source=edited(reference("ablate_heads"),
                       ("        by_layer.setdefault(layer, []).append(head)", "        by_layer[layer] = [head]")),
         expect=["were ablated", "every (layer, head) pair"], mistake="12.ablate_heads.some-heads-only"),
    dict(exercise="ablate_heads", kind="wrong", clause="value-error", why="no check for a missing mean_cache",
         source=edited(reference("ablate_heads"),
                       ("    if kind == \"mean\" and mean_cache is None:\n"
                        "        raise ValueError(\"kind='mean' needs the mean_cache of a reference run\")\n", "")),
         expect=["expected valueerror"], mistake="12.ablate_heads.missing-cache-accepted"),
    dict(exercise="ablate_heads", kind="wrong", clause="no-hook", why="never removes its hooks",
         source=edited(reference("ablate_heads"),
                       ("            stack.enter_context(model.get_submodule(name).register_forward_hook(hook_for(name, chosen)))",
                        "            model.get_submodule(name).register_forward_hook(hook_for(name, chosen))")),
         expect=["hooks were still registered"], mistake="12.ablate_heads.hooks-left"),
    dict(exercise="ablate_heads", kind="wrong", clause="no-hook-on-raise", why="removes after forward, not in finally",
         source=edited(reference("ablate_heads"),
                       ("    with contextlib.ExitStack() as stack:\n"
                        "        for layer, chosen in by_layer.items():\n"
                        "            name = f\"blocks.{layer}.attn.hook_z\"\n"
                        "            stack.enter_context(model.get_submodule(name).register_forward_hook(hook_for(name, chosen)))\n"
                        "        return model(tokens)",
                        "    handles = []\n"
                        "    for layer, chosen in by_layer.items():\n"
                        "        name = f\"blocks.{layer}.attn.hook_z\"\n"
                        "        handles.append(model.get_submodule(name).register_forward_hook(hook_for(name, chosen)))\n"
                        "    logits = model(tokens)\n"
                        "    for handle in handles:\n"
                        "        handle.remove()\n"
                        "    return logits")),
         expect=["whose forward pass raised valueerror", "hooks were still registered"],
         mistake="12.ablate_heads.hooks-left-on-raise"),
    dict(exercise="ablate_heads", kind="wrong", clause="propagates", why="swallows the exception",
         source=edited(reference("ablate_heads"),
                       ("        return model(tokens)",
                        "        try:\n            return model(tokens)\n        except Exception:\n            return None")),
         expect=["let the exception reach the caller"], mistake="12.ablate_heads.swallowed-exception"),
    dict(exercise="ablate_heads", kind="wrong", clause="others", why="zeroes the whole layer's output",
         source=edited(reference("ablate_heads"),
                       ("                z[:, :, chosen] = 0", "                z[:] = 0")),
         expect=["every head of each layer", "leave the other heads"], mistake="12.ablate_heads.whole-layer-ablated"),
    dict(exercise="ablate_heads", kind="wrong", clause="every-position", why="ablates the last position only",
         source=edited(reference("ablate_heads"),
                       ("                z[:, :, chosen] = 0", "                z[:, -1, chosen] = 0")),
         expect=["last position only", "every position"], mistake="12.ablate_heads.last-position-only"),
    dict(exercise="ablate_heads", kind="wrong", clause="zero", why="kind='zero' read as the batch's mean",
         source=edited(reference("ablate_heads"),
                       ("                z[:, :, chosen] = 0", "                z[:, :, chosen] = z[:, :, chosen].mean(dim=0)")),
         expect=["kind='zero' replaces it by zeros"], mistake="12.ablate_heads.batch-mean-for-zero"),
    dict(exercise="ablate_heads", kind="wrong", clause="logits", why="modifies z but returns nothing from the function",
         source=edited(reference("ablate_heads"), ("        return model(tokens)", "        model(tokens)")),
         expect=["returned none", "expected the logits"], mistake="12.ablate_heads.logits-not-a-tensor"),
    dict(exercise="ablate_heads", kind="right", why="a pre-hook on the output projection, masks per layer",
         source='''
import torch


def ablate_heads(model, tokens, heads, kind="zero", mean_cache=None):
    if kind not in ("zero", "mean") or kind == "mean" and mean_cache is None:
        raise ValueError(f"cannot ablate with kind={kind!r} and this mean_cache")
    handles = []
    try:
        for layer in sorted({layer for layer, _ in heads}):
            attn = model.blocks[layer].attn
            mask = torch.zeros(attn.n_heads, dtype=torch.bool)
            for each, head in heads:
                if each == layer:
                    mask[head] = True

            def hook(module, args, output, mask=mask, layer=layer):
                if kind == "zero":
                    fill = torch.zeros_like(output)
                else:
                    fill = mean_cache[f"blocks.{layer}.attn.hook_z"].mean(dim=0).expand_as(output)
                return torch.where(mask[None, None, :, None], fill, output)

            handles.append(attn.hook_z.register_forward_hook(hook))
        return model(tokens)
    finally:
        for handle in handles:
            handle.remove()
''',
         expect=[]),

    # ------------------------------------------------------------------ patching_table
    dict(exercise="patching_table", kind="wrong", clause="corrupted-run", why="patches the clean run with corrupted values",
         source=edited(reference("patching_table"),
                       ("        model(clean)", "        model(corrupted)"),
                       ("table[i, position] = float(metric(model(corrupted)))",
                        "table[i, position] = float(metric(model(clean)))")),
         expect=["patched the wrong run"], mistake="12.patching_table.runs-swapped"),
    dict(exercise="patching_table", kind="wrong", clause="position", why="positions off by one",
         source=edited(reference("patching_table"),
                       ("                output[:, position] = clean_activations[name][:, position]",
                        "                output[:, position + 1:position + 2] = clean_activations[name][:, position + 1:position + 2]")),
         expect=["off by one"], mistake="12.patching_table.position-off-by-one"),
    dict(exercise="patching_table", kind="wrong", clause="rest-corrupted", why="patches into the same copy, so patches pile up",
         source=edited(reference("patching_table"),
                       ("    for i, name in enumerate(names):\n        for position in range(corrupted.shape[1]):\n",
                        "    for i, name in enumerate(names):\n        kept = {}\n"
                        "        for position in range(corrupted.shape[1]):\n"),
                       ("                output = output.clone()\n",
                        "                output = kept.setdefault(\"patched\", output.clone())\n")),
         expect=["patches positions 0 to p", "fresh copy"], mistake="12.patching_table.patches-accumulate"),
    dict(exercise="patching_table", kind="wrong", clause="whole-batch", why="patches the first sequence only",
         source=edited(reference("patching_table"),
                       ("output[:, position] = clean_activations[name][:, position]",
                        "output[0, position] = clean_activations[name][0, position]")),
         expect=["first sequence of the batch", "all of the batch"], mistake="12.patching_table.first-sequence-only"),
    dict(exercise="patching_table", kind="wrong", clause="metric", why="returns the share restored, as the lesson draws it",
         source=edited(reference("patching_table"),
                       ("    return table",
                        "    with torch.no_grad():\n"
                        "        low, high = float(metric(model(corrupted))), float(metric(model(clean)))\n"
                        "    return (table - low) / (high - low)")),
         expect=["share of the clean metric restored", "metric of each patched run itself"],
         mistake="12.patching_table.share-restored"),
    dict(exercise="patching_table", kind="wrong", clause="from-clean", why="forgets to return the patched copy",
         source=edited(reference("patching_table"),
                       ("                output[:, position] = clean_activations[name][:, position]\n"
                        "                return output\n",
                        "                output[:, position] = clean_activations[name][:, position]\n")),
         expect=["without any patch", "return the patched copy"], mistake="12.patching_table.patch-not-returned"),
    dict(exercise="patching_table", kind="wrong", clause="shape", why="positions down the rows",
         source=edited(reference("patching_table"), ("    return table", "    return table.T")),
         expect=["expected shape (3, 5)"], mistake="12.patching_table.wrong-table-shape"),
    dict(exercise="patching_table", kind="wrong", clause="no-hook", why="never removes the clean run's hooks",
         source=edited(reference("patching_table"),
                       ("            stack.enter_context(points[name].register_forward_hook(\n",
                        "            points[name].register_forward_hook(\n"),
                       ("clean_activations.update({name: output.clone()})))",
                        "clean_activations.update({name: output.clone()}))")),
         expect=["hooks were still registered"], mistake="12.patching_table.hooks-left"),
    dict(exercise="patching_table", kind="right", why="torch.where on a position mask, a run_with_hooks of its own",
         source='''
import torch


def patching_table(model, clean, corrupted, metric, names):
    points = model.hook_points()
    stored = {}
    handles = [points[name].register_forward_hook(
        lambda module, args, output, name=name: stored.__setitem__(name, output.detach().clone())) for name in names]
    try:
        model(clean)
    finally:
        for handle in handles:
            handle.remove()
    seq = clean.shape[1]
    rows = []
    for name in names:
        row = []
        for p in range(seq):
            at_p = (torch.arange(seq) == p).view(1, seq, *[1] * (stored[name].dim() - 2))
            handle = points[name].register_forward_hook(
                lambda module, args, output: torch.where(at_p, stored[name], output))
            try:
                row.append(metric(model(corrupted)).item())
            finally:
                handle.remove()
        rows.append(row)
    return torch.tensor(rows)
''',
         expect=[]),

    # ------------------------------------------------------------------ attribution_table
    dict(exercise="attribution_table", kind="wrong", clause="G", why="the gradient of the clean run",
         source=edited(reference("attribution_table"),
                       ("            stack.enter_context(points[name].register_forward_hook(keep(clean_activations, name)))\n"
                        "        with torch.no_grad():\n"
                        "            model(clean)",
                        "            stack.enter_context(points[name].register_forward_hook(keep(clean_activations, name, gradients)))\n"
                        "        clean_value = metric(model(clean))"),
                       ("            stack.enter_context(points[name].register_forward_hook(keep(corrupted_activations, name, gradients)))",
                        "            stack.enter_context(points[name].register_forward_hook(keep(corrupted_activations, name)))"),
                       ("    value.backward()", "    clean_value.backward()")),
         expect=["gradient of the clean run", "corrupted run's metric"],
         mistake="12.attribution_table.gradient-of-clean-run"),
    dict(exercise="attribution_table", kind="wrong", clause="C-R", why="corrupted minus clean",
         source=edited(reference("attribution_table"),
                       ("(clean_activations[name] - corrupted_activations[name])",
                        "(corrupted_activations[name] - clean_activations[name])")),
         expect=["r - c", "c - r"], mistake="12.attribution_table.sign-flipped"),
    dict(exercise="attribution_table", kind="wrong", clause="M", why="leaves out the corrupted run's metric",
         source=edited(reference("attribution_table"),
                       ("rows.append(value.item() + change", "rows.append(change")),
         expect=["left out m"], mistake="12.attribution_table.metric-left-out"),
    dict(exercise="attribution_table", kind="wrong", clause="sum", why="sums over the positions too",
         source=edited(reference("attribution_table"),
                       ("change.transpose(0, 1).reshape(change.shape[1], -1).sum(dim=1))",
                        "change.sum().expand(change.shape[1]))")),
         expect=["summed over the positions too"], mistake="12.attribution_table.summed-over-positions"),
    dict(exercise="attribution_table", kind="wrong", clause="tensor-hooks", why="retain_grad on the activations",
         source=edited(reference("attribution_table"),
                       ("                output.register_hook(lambda grad: grads.update({name: grad}))",
                        "                output.retain_grad()\n                grads[name] = output"),
                       ("* gradients[name]", "* gradients[name].grad")),
         expect=["retain_grad()", "tensor hook"], mistake="12.attribution_table.retain-grad"),
    dict(exercise="attribution_table", kind="wrong", clause="twice", why="a third forward pass for the metric",
         source=edited(reference("attribution_table"),
                       ("    value.backward()",
                        "    value.backward()\n    with torch.no_grad():\n        value = metric(model(corrupted))")),
         expect=["ran the model 3 times", "exactly twice"], mistake="12.attribution_table.wrong-number-of-runs"),
    dict(exercise="attribution_table", kind="wrong", clause="backward-once", why="one backward per name",
         source=edited(reference("attribution_table"),
                       ("    value.backward()", "    for name in names:\n        value.backward(retain_graph=True)")),
         expect=["ran backward through the model's logits 3 times", "expected once"],
         mistake="12.attribution_table.wrong-number-of-backwards"),
    dict(exercise="attribution_table", kind="wrong", clause="no-hook", why="never removes the clean run's hooks",
         source=edited(reference("attribution_table"),
                       ("            stack.enter_context(points[name].register_forward_hook(keep(clean_activations, name)))",
                        "            points[name].register_forward_hook(keep(clean_activations, name))")),
         expect=["hooks were still registered"], mistake="12.attribution_table.hooks-left"),
    dict(exercise="attribution_table", kind="wrong", clause="shape", why="rows as a list",
         source=edited(reference("attribution_table"), ("    return torch.stack(rows)", "    return rows")),
         expect=["expected a float tensor of shape (3, 5)"], mistake="12.attribution_table.table-not-a-tensor"),
    dict(exercise="attribution_table", kind="wrong", clause="formula", why="the change times the activation, not the gradient",
         source=edited(reference("attribution_table"),
                       ("* gradients[name]", "* corrupted_activations[name]")),
         expect=["m + sum((c - r) * g)"], mistake="12.attribution_table.activation-for-gradient"),
    dict(exercise="attribution_table", kind="wrong", clause="estimate", why="real patching instead of the estimate",
         source='''
import torch


def attribution_table(model, clean, corrupted, metric, names):
    points = model.hook_points()
    stored = {}
    with torch.no_grad():
        handles = [points[n].register_forward_hook(lambda m, a, o, n=n: stored.update({n: o.clone()})) for n in names]
        model(clean)
        for handle in handles:
            handle.remove()
        rows = []
        for n in names:
            row = []
            for p in range(clean.shape[1]):
                def patch(m, a, o, p=p, n=n):
                    o = o.clone()
                    o[:, p] = stored[n][:, p]
                    return o
                with points[n].register_forward_hook(patch):
                    row.append(float(metric(model(corrupted))))
            rows.append(row)
    return torch.tensor(rows)
''',
         expect=["ran the model", "exactly twice"], mistake="12.attribution_table.wrong-number-of-runs"),
    dict(exercise="attribution_table", kind="right", why="torch.autograd.grad with tensor hooks, einsum-free sums",
         source='''
import torch


def attribution_table(model, clean, corrupted, metric, names):
    points = model.hook_points()
    acts = {"clean": {}, "corrupted": {}}
    grads = {}

    def run(which, tokens):
        def make(name):
            def hook(module, args, output):
                acts[which][name] = output.detach()
                if which == "corrupted":
                    output.register_hook(lambda grad: grads.__setitem__(name, grad.detach()))
            return hook
        handles = [points[name].register_forward_hook(make(name)) for name in names]
        try:
            return model(tokens)
        finally:
            for handle in handles:
                handle.remove()

    with torch.no_grad():
        run("clean", clean)
    value = metric(run("corrupted", corrupted))
    value.backward()
    table = []
    for name in names:
        product = (acts["clean"][name] - acts["corrupted"][name]) * grads[name]
        dims = [d for d in range(product.dim()) if d != 1]
        table.append(product.sum(dim=dims) + value.detach())
    return torch.stack(table)
''',
         expect=[]),

    # ------------------------------------------------------------------ steer
    dict(exercise="steer", kind="wrong", clause="removed-on-raise", why="removes the hook after yield, not in finally",
         source=edited(reference("steer"),
                       ("    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):\n        yield",
                        "    handle = point.register_forward_hook(lambda module, args, output: output + alpha * vector)\n"
                        "    yield\n    handle.remove()")),
         expect=["hooks were still registered", "raise valueerror"], mistake="12.steer.hooks-left-on-raise"),
    dict(exercise="steer", kind="wrong", clause="removed", why="registers on entry, never removes",
         source=edited(reference("steer"),
                       ("    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):\n        yield",
                        "    point.register_forward_hook(lambda module, args, output: output + alpha * vector)\n    yield")),
         expect=["steering stayed after the block"], mistake="12.steer.steering-left-after-block"),
    dict(exercise="steer", kind="wrong", clause="outside", why="returns the handle: the hook is on from the call",
         source='''
def steer(model, name, vector, alpha=1.0):
    return model.hook_points()[name].register_forward_hook(lambda module, args, output: output + alpha * vector)
''',
         expect=["before its `with` block began"], mistake="12.steer.registered-on-call"),
    dict(exercise="steer", kind="wrong", clause="context-manager", why="a generator without @contextmanager",
         source=edited(reference("steer"), ("@contextlib.contextmanager\n", "")),
         expect=["which a `with` statement cannot use", "contextmanager"], mistake="12.steer.not-a-context-manager"),
    dict(exercise="steer", kind="wrong", clause="unchanged", why="scales the vector in place",
         source=edited(reference("steer"),
                       ("    point = model.hook_points()[name]\n",
                        "    point = model.hook_points()[name]\n    vector.mul_(alpha)\n"),
                       ("output + alpha * vector", "output + vector")),
         expect=["changed `vector`", "in place"], mistake="12.steer.vector-changed"),
    dict(exercise="steer", kind="wrong", clause="adds", why="forgets alpha",
         source=edited(reference("steer"), ("output + alpha * vector", "output + vector")),
         expect=["without alpha"], mistake="12.steer.alpha-ignored"),
    dict(exercise="steer", kind="wrong", clause="everywhere", why="adds at the last position only",
         source=edited(reference("steer"),
                       ("lambda module, args, output: output + alpha * vector",
                        "lambda module, args, output: torch.cat([output[:, :-1], output[:, -1:] + alpha * vector], dim=1)"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n")),
         expect=["last position only", "every batch element and position"], mistake="12.steer.last-position-only"),
    dict(exercise="steer", kind="wrong", clause="propagates", why="a class whose __exit__ swallows the exception",
         source='''
class steer:
    def __init__(self, model, name, vector, alpha=1.0):
        self.point, self.vector, self.alpha = model.hook_points()[name], vector, alpha

    def __enter__(self):
        self.handle = self.point.register_forward_hook(lambda module, args, output: output + self.alpha * self.vector)
        return self

    def __exit__(self, *exc):
        self.handle.remove()
        return True
''',
         expect=["without the block's valueerror", "swallows"], mistake="12.steer.swallowed-exception"),
    dict(exercise="steer", kind="wrong", clause="nest", why="clears the hook point's hooks on exit",
         source='''
import contextlib


@contextlib.contextmanager
def steer(model, name, vector, alpha=1.0):
    point = model.hook_points()[name]
    point.register_forward_hook(lambda module, args, output: output + alpha * vector)
    try:
        yield
    finally:
        for each in model.hook_points().values():
            each._forward_hooks.clear()
''',
         expect=["after the inner block"], mistake="12.steer.wrong-nested-steering"),
    dict(exercise="steer", kind="right", why="a class with a handle, try/finally-free __exit__",
         source='''
class steer:
    def __init__(self, model, name, vector, alpha=1.0):
        self.point = model.hook_points()[name]
        self.delta = alpha * vector

    def __enter__(self):
        self.handle = self.point.register_forward_hook(self.add)
        return self

    def add(self, module, args, output):
        return output + self.delta

    def __exit__(self, kind, error, traceback):
        self.handle.remove()
        return False
''',
         expect=[]),
]

# ---------------------------------------------------------------------- the adversary pass
# Wrong submissions written from the docstrings alone, as a stranger would, and from public projects that
# do the same: TransformerLens (its cache hook stored tensor.detach() without a copy; its run_with_hooks
# and run_with_cache ended with reset_hooks(), which took the model's own hooks too, issue #113, and did
# not remove hooks when a hook raised, PR #156), baukit's Trace and TraceDict (the output itself is
# kept unless clone=True).
ENTRIES += [
    # ------------------------------------------------------------------ run_with_cache
    dict(exercise="run_with_cache", kind="wrong", clause="copy", why="TransformerLens's detach().to(device), no copy",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()", "cache[name] = output.detach().to(output.device)")),
         expect=["clone()"], mistake="12.run_with_cache.not-cloned"),
    dict(exercise="run_with_cache", kind="wrong", clause="detached", why="baukit's default: the output itself",
         source=edited(reference("run_with_cache"), ("cache[name] = output.detach().clone()", "cache[name] = output")),
         expect=["autograd graph"], mistake="12.run_with_cache.cache-not-detached"),
    dict(exercise="run_with_cache", kind="wrong", clause="own-hooks", why="reset_hooks() at the end, in finally",
         source=edited(reference("run_with_cache"),
                       ("    return logits, cache",
                        "    for module in model.modules():\n        module._forward_hooks.clear()\n"
                        "    return logits, cache")),
         expect=["removed hooks that were on the model before"], mistake="12.run_with_cache.removed-own-hooks"),
    dict(exercise="run_with_cache", kind="wrong", clause="key-error", why="a list turned into a filter",
         source=edited(reference("run_with_cache"),
                       ("        chosen = list(names)\n", "        chosen = [name for name in points if name in names]\n"),
                       ("        unknown = [name for name in chosen if name not in points]\n"
                        "        if unknown:\n            raise KeyError(f\"not hook points of the model: {unknown}\")\n", "")),
         expect=["must raise keyerror"], mistake="12.run_with_cache.unknown-name-accepted"),
    dict(exercise="run_with_cache", kind="wrong", clause="names", why="remove_batch_dim: the first sequence only",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()", "cache[name] = output.detach().clone()[0]")),
         expect=["first sequence only", "whole batch"], mistake="12.run_with_cache.first-sequence-only"),
    dict(exercise="run_with_cache", kind="wrong", clause="pair", why="a cache dict kept as a default argument",
         source=edited(reference("run_with_cache"),
                       ("def run_with_cache(model, tokens, names=None):", "def run_with_cache(model, tokens, names=None, cache={}):"),
                       ("    cache = {}\n", "")),
         expect=["same dict object", "new dict in each call"], mistake="12.run_with_cache.cache-kept-between-calls"),
    dict(exercise="run_with_cache", kind="wrong", clause="list", why="an empty list read as 'all'",
         source=edited(reference("run_with_cache"),
                       ("    if names is None:\n        chosen = list(points)", "    if not names:\n        chosen = list(points)")),
         expect=["which were not asked for", "asked: []"], mistake="12.run_with_cache.caches-unasked-names"),
    dict(exercise="run_with_cache", kind="wrong", clause="key-error", why="looks names up with get_submodule",
         source=edited(reference("run_with_cache"),
                       ("        unknown = [name for name in chosen if name not in points]\n"
                        "        if unknown:\n            raise KeyError(f\"not hook points of the model: {unknown}\")\n",
                        "        points = {name: model.get_submodule(name) for name in chosen}\n")),
         expect=["raised attributeerror", "expected keyerror"], mistake="12.run_with_cache.unknown-name-wrong-error"),
    dict(exercise="run_with_cache", kind="wrong", clause="removed", why="removes only the last handle",
         source='''
def run_with_cache(model, tokens, names=None):
    points = model.hook_points()
    if names is None:
        names = list(points)
    elif callable(names):
        names = [name for name in points if names(name)]
    elif any(name not in points for name in names):
        raise KeyError(names)
    cache = {}
    for name in names:
        handle = points[name].register_forward_hook(
            lambda module, args, output, name=name: cache.update({name: output.detach().clone()}))
    try:
        logits = model(tokens)
    finally:
        handle.remove()
    return logits, cache
''',
         expect=["names=[]", "unboundlocalerror"], mistake="12.run_with_cache.raised"),
    dict(exercise="run_with_cache", kind="right", why="pre-hooks on the identity hook points",
         source='''
import contextlib


def run_with_cache(model, tokens, names=None):
    points = model.hook_points()
    picked = [n for n in points if names is None or (callable(names) and names(n))]
    if names is not None and not callable(names):
        names = (names,) if isinstance(names, str) else list(names)  # a generator can be read only once
        missing = set(names) - set(points)
        if missing:
            raise KeyError(sorted(missing))
        picked = list(names)
    cache = {}
    with contextlib.ExitStack() as stack:
        for n in picked:
            stack.enter_context(points[n].register_forward_pre_hook(
                lambda module, args, n=n: cache.__setitem__(n, args[0].detach().clone())))
        return model(tokens), cache
''',
         expect=[]),

    # ------------------------------------------------------------------ run_with_hooks
    dict(exercise="run_with_hooks", kind="wrong", clause="own-hooks", why="TransformerLens's reset_hooks() afterwards",
         source=edited(reference("run_with_hooks"),
                       ("        return model(tokens)",
                        "        try:\n            return model(tokens)\n        finally:\n"
                        "            for module in model.modules():\n                module._forward_hooks.clear()")),
         expect=["removed hooks that were on the model before"], mistake="12.run_with_hooks.removed-own-hooks"),
    dict(exercise="run_with_hooks", kind="wrong", clause="removed-on-raise", why="removes the hooks only when forward raises",
         source=edited(reference("run_with_hooks"),
                       ("    with contextlib.ExitStack() as stack:\n"
                        "        for name, fn in fwd_hooks:\n"
                        "            stack.enter_context(points[name].register_forward_hook(hook_for(name, fn)))\n"
                        "        return model(tokens)",
                        "    handles = [points[name].register_forward_hook(hook_for(name, fn)) for name, fn in fwd_hooks]\n"
                        "    try:\n"
                        "        return model(tokens)\n"
                        "    except Exception:\n"
                        "        for handle in handles:\n"
                        "            handle.remove()\n"
                        "        raise")),
         expect=["hooks were still registered"], mistake="12.run_with_hooks.hooks-left"),
    dict(exercise="run_with_hooks", kind="wrong", clause="replacement", why="`fn(...) or output` asks a tensor for its truth value",
         source=edited(reference("run_with_hooks"),
                       ("return lambda module, args, output: fn(output, name)",
                        "return lambda module, args, output: (fn(output, name) or output)")),
         expect=["no truth value", "test for none"], mistake="12.run_with_hooks.tensor-truth-value"),
    dict(exercise="run_with_hooks", kind="wrong", clause="fn-args", why="late-binding loop variables in a lambda",
         source=edited(reference("run_with_hooks"),
                       ("stack.enter_context(points[name].register_forward_hook(hook_for(name, fn)))",
                        "stack.enter_context(points[name].register_forward_hook(lambda module, args, output: fn(output, name)))")),
         expect=["loop's variables when it runs"], mistake="12.run_with_hooks.late-binding"),
    dict(exercise="run_with_hooks", kind="wrong", clause="replacement", why="passes fn a copy and drops its return",
         source=edited(reference("run_with_hooks"),
                       ("return lambda module, args, output: fn(output, name)",
                        "return lambda module, args, output: (fn(output.clone(), name), None)[1]")),
         expect=["without the replacements"], mistake="12.run_with_hooks.replacement-ignored"),
    dict(exercise="run_with_hooks", kind="wrong", clause="key-error", why="hooks any module, get_submodule for the names",
         source=edited(reference("run_with_hooks"),
                       ("    points = model.hook_points()\n    unknown = [name for name, _ in fwd_hooks if name not in points]\n"
                        "    if unknown:\n        raise KeyError(f\"not hook points of the model: {unknown}\")\n",
                        "    points = {name: model.get_submodule(name) for name, _ in fwd_hooks}\n")),
         expect=["raised attributeerror", "expected keyerror"], mistake="12.run_with_hooks.unknown-name-wrong-error"),
    dict(exercise="run_with_hooks", kind="wrong", clause="chain", why="each function on the original activation, last one wins",
         source=edited(reference("run_with_hooks"),
                       ("    with contextlib.ExitStack() as stack:\n"
                        "        for name, fn in fwd_hooks:\n"
                        "            stack.enter_context(points[name].register_forward_hook(hook_for(name, fn)))\n",
                        "    by_point = {}\n"
                        "    for name, fn in fwd_hooks:\n"
                        "        by_point.setdefault(name, []).append(fn)\n"
                        "\n"
                        "    def all_of(name, fns):\n"
                        "        def hook(module, args, output):\n"
                        "            results = [fn(output, name) for fn in fns]\n"
                        "            kept = [result for result in results if result is not None]\n"
                        "            return kept[-1] if kept else None\n"
                        "        return hook\n"
                        "\n"
                        "    with contextlib.ExitStack() as stack:\n"
                        "        for name, fns in by_point.items():\n"
                        "            stack.enter_context(points[name].register_forward_hook(all_of(name, fns)))\n")),
         expect=["only the last function of that hook point"], mistake="12.run_with_hooks.one-fn-per-name"),
    dict(exercise="run_with_hooks", kind="wrong", clause="removed", why="removes the hooks on error only, keeps them otherwise",
         source=edited(reference("run_with_hooks"),
                       ("    with contextlib.ExitStack() as stack:\n", "    stack = contextlib.ExitStack()\n    if True:\n"),
                       ("        return model(tokens)",
                        "        try:\n            return model(tokens)\n        except BaseException:\n"
                        "            stack.close()\n            raise")),
         expect=["hooks were still registered"], mistake="12.run_with_hooks.hooks-left"),
    dict(exercise="run_with_hooks", kind="right", why="pre-hooks that replace the identity's input",
         source='''
def run_with_hooks(model, tokens, fwd_hooks):
    points = model.hook_points()
    if any(name not in points for name, _ in fwd_hooks):
        raise KeyError([name for name, _ in fwd_hooks if name not in points])
    handles = []
    try:
        for name, fn in fwd_hooks:
            def pre(module, args, fn=fn, name=name):
                new = fn(args[0], name)
                return None if new is None else (new,)
            handles.append(points[name].register_forward_pre_hook(pre))
        return model(tokens)
    finally:
        while handles:
            handles.pop().remove()
''',
         expect=[]),

    # ------------------------------------------------------------------ ablate_heads
    dict(exercise="ablate_heads", kind="wrong", clause="mean-reference", why="the reference's last sequence, not its mean",
         source=edited(reference("ablate_heads"),
                       ("mean_cache[name][:, :, chosen].mean(dim=0)", "mean_cache[name][-1, :, chosen]")),
         expect=["expected"], mistake="12.ablate_heads.reference-sequence-for-mean"),
    dict(exercise="ablate_heads", kind="wrong", clause="others", why="mean ablation of every head of the layer",
         source=edited(reference("ablate_heads"),
                       ("                z[:, :, chosen] = mean_cache[name][:, :, chosen].mean(dim=0)",
                        "                z[:] = mean_cache[name].mean(dim=0)")),
         expect=["expected"], mistake="12.ablate_heads.whole-layer-ablated"),
    dict(exercise="ablate_heads", kind="wrong", clause="at-z", why="the last layer, whatever the layer",
         source=edited(reference("ablate_heads"),
                       ('            name = f"blocks.{layer}.attn.hook_z"',
                        '            name = f"blocks.{len(model.blocks) - 1}.attn.hook_z"')),
         expect=["last layer whatever their layer"], mistake="12.ablate_heads.layer-ignored"),
    dict(exercise="ablate_heads", kind="wrong", clause="value-error", why="raises only for an unknown kind",
         source=edited(reference("ablate_heads"),
                       ("    if kind == \"mean\" and mean_cache is None:\n", "    if kind not in (\"zero\", \"mean\"):\n")),
         expect=["expected valueerror"], mistake="12.ablate_heads.missing-cache-accepted"),
    dict(exercise="ablate_heads", kind="wrong", clause="each-head", why="one hook per layer, the first head only",
         source=edited(reference("ablate_heads"),
                       ("        by_layer.setdefault(layer, []).append(head)", "        by_layer.setdefault(layer, [head])")),
         expect=["were ablated", "every (layer, head) pair"], mistake="12.ablate_heads.some-heads-only"),
    dict(exercise="ablate_heads", kind="wrong", clause="own-hooks", why="clears hook_z's hooks instead of removing its own",
         source=edited(reference("ablate_heads"),
                       ("    with contextlib.ExitStack() as stack:\n", "    for layer in by_layer:\n"
                        "        model.get_submodule(f\"blocks.{layer}.attn.hook_z\")._forward_hooks.clear()\n"
                        "    with contextlib.ExitStack() as stack:\n"),
                       ("            stack.enter_context(model.get_submodule(name).register_forward_hook(hook_for(name, chosen)))",
                        "            model.get_submodule(name).register_forward_hook(hook_for(name, chosen))")),
         expect=["removed hooks that were on the model before"], mistake="12.ablate_heads.removed-own-hooks"),
    dict(exercise="ablate_heads", kind="wrong", clause="zero", why="zero ablation of the attention pattern's row made uniform",
         source=edited(reference("ablate_heads"),
                       ("                z[:, :, chosen] = 0",
                        "                z[:, :, chosen] = z[:, :, chosen].mean(dim=1, keepdim=True)")),
         expect=["expected"], mistake="12.ablate_heads.wrong-logits"),
    dict(exercise="ablate_heads", kind="wrong", clause="per-position", why="the reference's mean over everything",
         source=edited(reference("ablate_heads"),
                       ("mean_cache[name][:, :, chosen].mean(dim=0)", "mean_cache[name][:, :, chosen].mean()")),
         expect=["expected"], mistake="12.ablate_heads.mean-over-everything"),
    dict(exercise="ablate_heads", kind="right", why="zeroes the head's attention pattern, one hook per pair",
         source='''
import contextlib


def ablate_heads(model, tokens, heads, kind="zero", mean_cache=None):
    if kind == "mean" and mean_cache is None:
        raise ValueError("mean_cache is needed for mean ablation")
    if kind != "zero" and kind != "mean":
        raise ValueError(kind)
    with contextlib.ExitStack() as stack:
        for layer, head in heads:
            point = f"blocks.{layer}.attn.hook_z"

            def replace(module, args, z, head=head, point=point):
                z = z.clone()
                z[:, :, head] = 0 if kind == "zero" else mean_cache[point][:, :, head].mean(0)
                return z
            stack.enter_context(model.hook_points()[point].register_forward_hook(replace))
        return model(tokens)
''',
         expect=[]),

    # ------------------------------------------------------------------ patching_table
    dict(exercise="patching_table", kind="wrong", clause="position", why="every column patches all positions",
         source=edited(reference("patching_table"),
                       ("output[:, position] = clean_activations[name][:, position]",
                        "output[:] = clean_activations[name]")),
         expect=["all the positions at once"], mistake="12.patching_table.all-positions-at-once"),
    dict(exercise="patching_table", kind="wrong", clause="position", why="late-binding name in the patch",
         source=edited(reference("patching_table"),
                       ("    for i, name in enumerate(names):\n        for position in range(corrupted.shape[1]):\n",
                        "    for i, name in enumerate(names):\n        first = names[0]\n"
                        "        for position in range(corrupted.shape[1]):\n"),
                       ("output[:, position] = clean_activations[name][:, position]",
                        "output[:, position] = clean_activations[first][:, position]"),
                       ("            with points[name].register_forward_hook(patch), torch.no_grad():",
                        "            with points[first].register_forward_hook(patch), torch.no_grad():")),
         expect=["every row is the patch of"], mistake="12.patching_table.late-binding"),
    dict(exercise="patching_table", kind="wrong", clause="from-clean", why="clean activations captured without a copy, then patched in place",
         source=edited(reference("patching_table"),
                       ("clean_activations.update({name: output.clone()})", "clean_activations.update({name: output})"),
                       ("                output = output.clone()\n                output[:, position] = clean_activations[name][:, position]\n"
                        "                return output\n",
                        "                clean_activations[name][:, position + 1:] = output[:, position + 1:]\n"
                        "                clean_activations[name][:, :position] = output[:, :position]\n"
                        "                return clean_activations[name]\n")),
         expect=["expected"], mistake="12.patching_table.wrong-table-value"),
    dict(exercise="patching_table", kind="wrong", clause="corrupted-run", why="the metric of the clean run everywhere",
         source=edited(reference("patching_table"),
                       ("table[i, position] = float(metric(model(corrupted)))",
                        "table[i, position] = float(metric(model(clean)))")),
         expect=["metric of the run on `clean`"], mistake="12.patching_table.clean-run-metric"),
    dict(exercise="patching_table", kind="wrong", clause="shape", why="a list of lists",
         source=edited(reference("patching_table"), ("    return table", "    return table.tolist()")),
         expect=["expected a float tensor of shape (3, 5)"], mistake="12.patching_table.table-not-a-tensor"),
    dict(exercise="patching_table", kind="wrong", clause="whole-batch", why="patches the mean of the clean batch",
         source=edited(reference("patching_table"),
                       ("output[:, position] = clean_activations[name][:, position]",
                        "output[:, position] = clean_activations[name][:, position].mean(dim=0)")),
         expect=["expected"], mistake="12.patching_table.clean-batch-mean"),
    dict(exercise="patching_table", kind="wrong", clause="rest-corrupted", why="the last position is never patched",
         source=edited(reference("patching_table"),
                       ("        for position in range(corrupted.shape[1]):", "        for position in range(corrupted.shape[1] - 1):")),
         expect=["column(s) [4] hold 0", "never patched"], mistake="12.patching_table.positions-skipped"),
    dict(exercise="patching_table", kind="wrong", clause="own-hooks", why="removes the patches by clearing every hook point",
         source=edited(reference("patching_table"),
                       ("            with points[name].register_forward_hook(patch), torch.no_grad():\n"
                        "                table[i, position] = float(metric(model(corrupted)))",
                        "            points[name].register_forward_hook(patch)\n"
                        "            with torch.no_grad():\n"
                        "                table[i, position] = float(metric(model(corrupted)))\n"
                        "            points[name]._forward_hooks.clear()")),
         expect=["removed hooks that were on the model before"], mistake="12.patching_table.removed-own-hooks"),

    # ------------------------------------------------------------------ attribution_table
    dict(exercise="attribution_table", kind="wrong", clause="G", why="the forward hook returns a fresh leaf and reads its .grad",
         source=edited(reference("attribution_table"),
                       ("            store[name] = output.detach().clone()\n"
                        "            if grads is not None:\n"
                        "                output.register_hook(lambda grad: grads.update({name: grad}))",
                        "            store[name] = output.detach().clone()\n"
                        "            if grads is not None:\n"
                        "                leaf = output.detach().requires_grad_()\n"
                        "                leaf.register_hook(lambda grad: grads.update({name: grad}))\n"
                        "                return leaf")),
         expect=["no gradient reached", "cuts the graph"], mistake="12.attribution_table.graph-cut-at-hook"),
    dict(exercise="attribution_table", kind="wrong", clause="M", why="M from the clean run",
         source=edited(reference("attribution_table"),
                       ("        with torch.no_grad():\n            model(clean)",
                        "        with torch.no_grad():\n            clean_value = metric(model(clean))"),
                       ("rows.append(value.item() + change", "rows.append(clean_value.item() + change")),
         expect=["m from the run on `clean`"], mistake="12.attribution_table.metric-of-clean-run"),
    dict(exercise="attribution_table", kind="wrong", clause="sum", why="the first sequence of the batch only",
         source=edited(reference("attribution_table"),
                       ("change.transpose(0, 1).reshape(change.shape[1], -1).sum(dim=1))",
                        "change[0].reshape(change.shape[1], -1).sum(dim=1))")),
         expect=["expected"], mistake="12.attribution_table.first-sequence-only"),
    dict(exercise="attribution_table", kind="wrong", clause="twice", why="a backward per hook point, each with its own forward",
         source='''
import torch


def attribution_table(model, clean, corrupted, metric, names):
    points = model.hook_points()
    rows = []
    for name in names:
        seen = {}
        with points[name].register_forward_hook(lambda m, a, o: seen.update(clean=o.detach())), torch.no_grad():
            model(clean)
        with points[name].register_forward_hook(lambda m, a, o: seen.update(corrupted=o)):
            value = metric(model(corrupted))
        grad, = torch.autograd.grad(value, seen["corrupted"])
        change = (seen["clean"] - seen["corrupted"].detach()) * grad
        rows.append(value.item() + change.transpose(0, 1).flatten(1).sum(1))
    return torch.stack(rows)
''',
         expect=["ran the model 6 times", "exactly twice"], mistake="12.attribution_table.wrong-number-of-runs"),
    dict(exercise="attribution_table", kind="wrong", clause="tensor-hooks", why="retain_grad, kept in the forward hook",
         source='''
import torch


def attribution_table(model, clean, corrupted, metric, names):
    points = model.hook_points()
    kept = {"clean": {}, "corrupted": {}}
    for run, tokens in (("clean", clean), ("corrupted", corrupted)):
        def hook(module, args, output, run=run):
            name = next(n for n, p in points.items() if p is module)
            if run == "corrupted":
                output.retain_grad()
            kept[run][name] = output
        handles = [points[n].register_forward_hook(hook) for n in names]
        try:
            logits = model(tokens)
        finally:
            for h in handles:
                h.remove()
    value = metric(logits)
    value.backward()
    rows = []
    for n in names:
        change = (kept["clean"][n].detach() - kept["corrupted"][n].detach()) * kept["corrupted"][n].grad
        rows.append(value.item() + change.transpose(0, 1).flatten(1).sum(1))
    return torch.stack(rows)
''',
         expect=["retain_grad()"], mistake="12.attribution_table.retain-grad"),
    dict(exercise="attribution_table", kind="right", why="the clean activations kept without a copy (nothing changes them later)",
         source=edited(reference("attribution_table"),
                       ("            store[name] = output.detach().clone()", "            store[name] = output.detach()"),
                       ("        with torch.no_grad():\n            model(clean)", "        model(clean)")),
         expect=[]),
    dict(exercise="attribution_table", kind="wrong", clause="backward-once", why="autograd.grad per name with retain_graph",
         source=edited(reference("attribution_table"),
                       ("                output.register_hook(lambda grad: grads.update({name: grad}))",
                        "                grads[name] = output"),
                       ("    value.backward()\n",
                        "    for name in names:\n"
                        "        gradients[name], = torch.autograd.grad(value, gradients[name], retain_graph=True)\n")),
         expect=["ran backward through the model's logits 3 times"],
         mistake="12.attribution_table.wrong-number-of-backwards"),
    dict(exercise="attribution_table", kind="wrong", clause="formula", why="the gradient alone, no activation change",
         source=edited(reference("attribution_table"),
                       ("change = (clean_activations[name] - corrupted_activations[name]) * gradients[name]",
                        "change = gradients[name]")),
         expect=["expected"], mistake="12.attribution_table.activation-change-left-out"),

    # ------------------------------------------------------------------ steer
    dict(exercise="steer", kind="wrong", clause="outside", why="a class that registers in __init__",
         source='''
class steer:
    def __init__(self, model, name, vector, alpha=1.0):
        self.handle = model.hook_points()[name].register_forward_hook(
            lambda module, args, output: output + alpha * vector)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.remove()
''',
         expect=["before its `with` block began"], mistake="12.steer.registered-on-call"),
    dict(exercise="steer", kind="wrong", clause="nest", why="clears this hook point's hooks in finally",
         source=edited(reference("steer"),
                       ("    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):\n        yield",
                        "    point.register_forward_hook(lambda module, args, output: output + alpha * vector)\n"
                        "    try:\n        yield\n    finally:\n        point._forward_hooks.clear()")),
         expect=["removed the outer block's hook too"], mistake="12.steer.removes-other-hooks"),
    dict(exercise="steer", kind="wrong", clause="adds", why="a hook that removes itself after the first forward",
         source='''
import contextlib


@contextlib.contextmanager
def steer(model, name, vector, alpha=1.0):
    point = model.hook_points()[name]

    def once(module, args, output):
        handle.remove()
        return output + alpha * vector

    handle = point.register_forward_hook(once)
    try:
        yield
    finally:
        handle.remove()
''',
         expect=["every forward pass inside the block"], mistake="12.steer.not-every-forward-pass"),
    dict(exercise="steer", kind="wrong", clause="unchanged", why="vector *= alpha",
         source=edited(reference("steer"),
                       ("    point = model.hook_points()[name]\n", "    point = model.hook_points()[name]\n    vector *= alpha\n"),
                       ("output + alpha * vector", "output + vector")),
         expect=["changed `vector`"], mistake="12.steer.vector-changed"),
    dict(exercise="steer", kind="wrong", clause="propagates", why="a generator that catches the block's exception",
         source=edited(reference("steer"),
                       ("        yield", "        try:\n            yield\n        except Exception:\n            pass")),
         expect=["without the block's valueerror"], mistake="12.steer.swallowed-exception"),
    dict(exercise="steer", kind="wrong", clause="adds", why="a global forward hook that adds at every module",
         source='''
import contextlib

from torch.nn.modules.module import register_module_forward_hook


@contextlib.contextmanager
def steer(model, name, vector, alpha=1.0):
    with register_module_forward_hook(lambda module, args, output: output + alpha * vector
                                      if module in model.hook_points().values() else None):
        yield
''',
         expect=["size of tensor", "must match"], mistake="12.steer.raised"),
    dict(exercise="steer", kind="wrong", clause="removed", why="removes the hook only when the block raises",
         source=edited(reference("steer"),
                       ("    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):\n        yield",
                        "    handle = point.register_forward_hook(lambda module, args, output: output + alpha * vector)\n"
                        "    try:\n        yield\n    except BaseException:\n        handle.remove()\n        raise")),
         expect=["steering stayed after the block"], mistake="12.steer.steering-left-after-block"),
    dict(exercise="steer", kind="wrong", clause="everywhere", why="adds to the first sequence of the batch only",
         source=edited(reference("steer"),
                       ("lambda module, args, output: output + alpha * vector",
                        "lambda module, args, output: torch.cat([output[:1] + alpha * vector, output[1:]])"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n")),
         expect=["expected"], mistake="12.steer.first-sequence-only"),
    dict(exercise="steer", kind="right", why="a generator with try/finally and the vector scaled once",
         source='''
import contextlib


@contextlib.contextmanager
def steer(model, name, vector, alpha=1.0):
    delta = alpha * vector
    handle = model.hook_points()[name].register_forward_hook(lambda module, args, output: output.add(delta))
    try:
        yield handle
    finally:
        handle.remove()
''',
         expect=[]),
]

ENTRIES += [
    dict(exercise="attribution_table", kind="wrong", clause="own-hooks", why="clears every hook point's hooks at the end",
         source=edited(reference("attribution_table"),
                       ("    return torch.stack(rows)",
                        "    for point in points.values():\n        point._forward_hooks.clear()\n    return torch.stack(rows)")),
         expect=["removed hooks that were on the model before"], mistake="12.attribution_table.removed-own-hooks"),
]

# The second review: names in a tuple or a generator, a predicate asked of every module, a cache that
# aliases under no_grad, kind="zero" with a mean_cache, a hook left by the missing mean_cache's error,
# and gradients cut by torch.no_grad() or detach().
ENTRIES += [
    dict(exercise="run_with_cache", kind="wrong", clause="iterable", why="a tuple read as a predicate (isinstance list)",
         source=edited(reference("run_with_cache"), ("    elif callable(names):", "    elif not isinstance(names, list):")),
         expect=["tuple", "callable(names)"], mistake="12.run_with_cache.iterable-read-as-predicate"),
    dict(exercise="run_with_cache", kind="wrong", clause="iterable", why="a generator read twice, to check and to register",
         source=edited(reference("run_with_cache"), ("        chosen = list(names)", "        chosen = names")),
         expect=["generator", "list(names)"], mistake="12.run_with_cache.generator-read-twice"),
    dict(exercise="run_with_cache", kind="wrong", clause="predicate", why="a predicate asked of every module",
         source=edited(reference("run_with_cache"),
                       ("        chosen = [name for name in points if names(name)]",
                        "        points = dict(model.named_modules())\n"
                        "        chosen = [name for name in points if names(name)]")),
         expect=["not hook points", "model.hook_points()"], mistake="12.run_with_cache.caches-modules"),
    dict(exercise="run_with_cache", kind="wrong", clause="copy", why="a copy only of what requires grad",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()",
                        "cache[name] = output.detach().clone() if output.requires_grad else output")),
         expect=["under torch.no_grad()", "in-place", "clone()"], mistake="12.run_with_cache.not-cloned"),
    dict(exercise="run_with_cache", kind="right", why="one global forward hook that picks the chosen hook points",
         source='''
import torch
from torch.nn.modules.module import register_module_forward_hook


def run_with_cache(model, tokens, names=None):
    points = model.hook_points()
    if callable(names):
        chosen = [name for name in points if names(name)]
    else:
        chosen = list(points if names is None else names.split() if isinstance(names, str) else names)
        missing = [name for name in chosen if name not in points]
        if missing:
            raise KeyError(missing[0])
    wanted = {points[name]: name for name in chosen}
    cache = {}

    def keep(module, args, output):
        if module in wanted:
            cache[wanted[module]] = torch.clone(output).detach()

    with register_module_forward_hook(keep):
        return model(tokens), cache
''',
         expect=[]),
    dict(exercise="run_with_hooks", kind="wrong", clause="gradients", why="torch.no_grad() around the forward pass",
         source=edited(reference("run_with_hooks"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n"),
                       ("        return model(tokens)", "        with torch.no_grad():\n            return model(tokens)")),
         expect=["no autograd graph", "torch.no_grad()"], mistake="12.run_with_hooks.logits-without-graph"),
    dict(exercise="run_with_hooks", kind="wrong", clause="gradients", why="fn given activation.detach()",
         source=edited(reference("run_with_hooks"), ("fn(output, name)", "fn(output.detach(), name)")),
         expect=["gradient stopped", "detach()"], mistake="12.run_with_hooks.activation-detached"),
    dict(exercise="ablate_heads", kind="wrong", clause="zero", why="a mean_cache given means mean ablation, whatever kind",
         source=edited(reference("ablate_heads"), ('            if kind == "zero":', "            if mean_cache is None:")),
         expect=["kind='zero'", "mean_cache is none"], mistake="12.ablate_heads.kind-chosen-by-cache"),
    dict(exercise="ablate_heads", kind="wrong", clause="no-hook-on-raise",
         why="the missing mean_cache's ValueError raised inside the hook, no finally",
         source='''
def ablate_heads(model, tokens, heads, kind="zero", mean_cache=None):
    points = model.hook_points()
    handles = []
    for layer, head in heads:
        name = f"blocks.{layer}.attn.hook_z"

        def hook(module, args, z, head=head, name=name):
            z = z.clone()
            if kind == "zero":
                z[:, :, head] = 0
            else:
                if mean_cache is None:
                    raise ValueError("mean ablation needs a mean_cache")
                z[:, :, head] = mean_cache[name][:, :, head].mean(0)
            return z
        handles.append(points[name].register_forward_hook(hook))
    logits = model(tokens)
    for handle in handles:
        handle.remove()
    return logits
''',
         expect=["which raised valueerror", "still registered"], mistake="12.ablate_heads.hooks-left-on-raise"),
    dict(exercise="ablate_heads", kind="right", why="torch.where on a head mask, one hook per pair",
         source='''
import contextlib

import torch


def ablate_heads(model, tokens, heads, kind="zero", mean_cache=None):
    if {"zero": False, "mean": mean_cache is None}.get(kind, True):
        raise ValueError(f"kind={kind!r} with mean_cache={type(mean_cache).__name__}")
    points = model.hook_points()

    def make(layer, head):
        name = f"blocks.{layer}.attn.hook_z"

        def hook(module, args, z):
            mask = torch.zeros(z.shape[2], dtype=torch.bool)
            mask[head] = True
            if kind == "zero":
                value = torch.zeros_like(z)
            else:
                value = mean_cache[name].mean(dim=0, keepdim=True).expand_as(z)
            return torch.where(mask[None, None, :, None], value, z)
        return points[name], hook

    with contextlib.ExitStack() as stack:
        for layer, head in heads:
            point, hook = make(layer, head)
            stack.enter_context(point.register_forward_hook(hook))
        return model(tokens)
''',
         expect=[]),
    dict(exercise="steer", kind="wrong", clause="gradients", why="torch.no_grad() over the block",
         source=edited(reference("steer"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n"),
                       ("        yield", "        with torch.no_grad():\n            yield")),
         expect=["no autograd graph", "torch.no_grad()"], mistake="12.steer.logits-without-graph"),
    dict(exercise="steer", kind="wrong", clause="gradients", why="adds to output.detach()",
         source=edited(reference("steer"), ("output + alpha * vector)", "output.detach() + alpha * vector)")),
         expect=["gradient stopped", "output.detach()"], mistake="12.steer.steered-detached"),
    # Recorded as right until issue 23: at the attention pattern, a softmax's output, backward then fails.
    dict(exercise="steer", kind="wrong", clause="gradients", why="adds in place and returns None",
         source=edited(reference("steer"), ("lambda module, args, output: output + alpha * vector",
                                            "lambda module, args, output: [output.add_(alpha * vector), None][1]")),
         expect=["changed the activation in place", "modified by an inplace operation", "new tensor"],
         mistake="12.steer.added-in-place"),
    dict(exercise="attribution_table", kind="right",
         why="TransformerLens's way: full backward hooks on the hook points read grad_output",
         source='''
import contextlib
import torch

def attribution_table(model, clean, corrupted, metric, names):
    points = model.hook_points()
    C, R, G = {}, {}, {}
    def fwd(store, name):
        def hook(m, a, o):
            store[name] = o.detach().clone()
        return hook
    def bwd(name):
        def hook(m, grad_input, grad_output):
            G[name] = grad_output[0].detach()
        return hook
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(points[name].register_forward_hook(fwd(C, name)))
        with torch.no_grad():
            model(clean)
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(points[name].register_forward_hook(fwd(R, name)))
            stack.enter_context(points[name].register_full_backward_hook(bwd(name)))
        value = metric(model(corrupted))
        value.backward()
    rows = []
    for name in names:
        change = (C[name] - R[name]) * G[name]
        rows.append(value.item() + change.transpose(0, 1).flatten(1).sum(dim=1))
    return torch.stack(rows)
''',
         expect=[]),
    dict(exercise="patching_table", kind="wrong", clause="no-hook-on-raise", why="removes the patch after the metric, not in finally",
         source=edited(reference("patching_table"),
                       ("            with points[name].register_forward_hook(patch), torch.no_grad():\n"
                        "                table[i, position] = float(metric(model(corrupted)))",
                        "            handle = points[name].register_forward_hook(patch)\n"
                        "            with torch.no_grad():\n"
                        "                table[i, position] = float(metric(model(corrupted)))\n"
                        "            handle.remove()")),
         expect=["whose metric raised valueerror", "still registered"],
         mistake="12.patching_table.hooks-left-on-raise"),
    dict(exercise="patching_table", kind="wrong", clause="propagates", why="a metric that fails gives NaN",
         source=edited(reference("patching_table"),
                       ("                table[i, position] = float(metric(model(corrupted)))",
                        "                try:\n"
                        "                    table[i, position] = float(metric(model(corrupted)))\n"
                        "                except Exception:\n"
                        "                    table[i, position] = float('nan')")),
         expect=["the metric raised valueerror", "don't catch it"], mistake="12.patching_table.swallowed-exception"),
    dict(exercise="attribution_table", kind="wrong", clause="no-hook-on-raise",
         why="the corrupted run's hooks removed after the metric, not in finally",
         source=edited(reference("attribution_table"),
                       ("    with contextlib.ExitStack() as stack:\n        for name in names:\n"
                        "            stack.enter_context(points[name].register_forward_hook(keep(corrupted_activations, name, gradients)))\n"
                        "        value = metric(model(corrupted))",
                        "    handles = [points[name].register_forward_hook(keep(corrupted_activations, name, gradients))\n"
                        "               for name in names]\n"
                        "    value = metric(model(corrupted))\n"
                        "    for handle in handles:\n"
                        "        handle.remove()")),
         expect=["whose metric raised valueerror", "still registered"],
         mistake="12.attribution_table.hooks-left-on-raise"),
    dict(exercise="attribution_table", kind="wrong", clause="propagates", why="returns None when the metric fails",
         source=edited(reference("attribution_table"),
                       ("        value = metric(model(corrupted))",
                        "        try:\n            value = metric(model(corrupted))\n        except ValueError:\n"
                        "            return None")),
         expect=["the metric raised valueerror", "don't catch it"], mistake="12.attribution_table.swallowed-exception"),
    dict(exercise="attribution_table", kind="wrong", clause="formula", why="positions off by one (rolled)",
         source=edited(reference("attribution_table"),
                       (".reshape(change.shape[1], -1).sum(dim=1))", ".reshape(change.shape[1], -1).sum(dim=1).roll(1))")),
         expect=["position p - 1", "off by one"], mistake="12.attribution_table.position-off-by-one"),
    dict(exercise="patching_table", kind="right", why="pre-hooks on the hook points, positions in the outer loop, .item()",
         source='''
import torch


def patching_table(model, clean, corrupted, metric, names):
    points = model.hook_points()
    clean_acts = {}
    hs = [points[n].register_forward_pre_hook(lambda m, args, n=n: clean_acts.__setitem__(n, args[0].detach().clone())) for n in names]
    try:
        with torch.no_grad():
            model(clean)
    finally:
        for h in hs:
            h.remove()
    seq = clean.shape[1]
    rows = [[None] * seq for _ in names]
    for p in range(seq):
        for i, n in enumerate(names):
            def pre(m, args, n=n, p=p):
                x = args[0].clone()
                x[:, p] = clean_acts[n][:, p]
                return (x,)
            h = points[n].register_forward_pre_hook(pre)
            try:
                with torch.no_grad():
                    rows[i][p] = metric(model(corrupted)).item()
            finally:
                h.remove()
    return torch.tensor(rows)
''',
         expect=[]),
]

# Issue 23: the model's own hooks on the model itself, None after a replacement, in-place steering where
# backward needs the activation, the tables of four more patching mistakes, an unknown ablation kind, a bare
# string of names, and the logits' graph in run_with_cache.
ENTRIES += [
    dict(exercise="run_with_hooks", kind="wrong", clause="own-hooks-run",
         why="model.forward(tokens), as TransformerLens's run_with_hooks does",
         source=edited(reference("run_with_hooks"), ("        return model(tokens)", "        return model.forward(tokens)")),
         expect=["hooks on the model itself", "did not run", "model.forward(tokens)"],
         mistake="12.run_with_hooks.forward-called-directly"),
    dict(exercise="run_with_hooks", kind="wrong", clause="replacement", why="None falls back to the hook point's input",
         source=edited(reference("run_with_hooks"),
                       ("        return lambda module, args, output: fn(output, name)",
                        "        def hook(module, args, output):\n"
                        "            new = fn(output, name)\n"
                        "            return args[0] if new is None else new\n"
                        "        return hook")),
         expect=["keep returned none after times_two", "not the hook point's original value"],
         mistake="12.run_with_hooks.none-restores-original"),
    dict(exercise="run_with_hooks", kind="right", why="one hook per hook point that chains its functions itself",
         source='''
import collections
import contextlib


def run_with_hooks(model, tokens, fwd_hooks):
    points = model.hook_points()
    by_point = collections.defaultdict(list)
    for name, fn in fwd_hooks:
        if name not in points:
            raise KeyError(name)
        by_point[name].append(fn)

    def chain(name, fns):
        def hook(module, args, output):
            for fn in fns:
                new = fn(output, name)
                if new is not None:
                    output = new
            return output
        return hook

    with contextlib.ExitStack() as stack:
        for name, fns in by_point.items():
            stack.enter_context(points[name].register_forward_hook(chain(name, fns)))
        return model(tokens)
''',
         expect=[]),
    dict(exercise="steer", kind="right", why="adds in place to a copy of the activation",
         source=edited(reference("steer"), ("lambda module, args, output: output + alpha * vector",
                                            "lambda module, args, output: output.clone().add_(vector, alpha=alpha)")),
         expect=[]),
    dict(exercise="patching_table", kind="wrong", clause="metric",
         why="returns the change from the corrupted run's metric",
         source=edited(reference("patching_table"),
                       ("    table = torch.zeros(len(names), corrupted.shape[1])\n",
                        "    with torch.no_grad():\n        base = float(metric(model(corrupted)))\n"
                        "    table = torch.zeros(len(names), corrupted.shape[1])\n"),
                       ("table[i, position] = float(metric(model(corrupted)))",
                        "table[i, position] = float(metric(model(corrupted))) - base")),
         expect=["off by the corrupted run's metric", "the change a patch makes"],
         mistake="12.patching_table.change-not-metric"),
    dict(exercise="patching_table", kind="wrong", clause="position", why="every run patches every name at once",
         source=edited(reference("patching_table"),
                       ("import contextlib\n", "import contextlib\nimport functools\n"),
                       ("            def patch(module, args, output):",
                        "            def patch(module, args, output, name=name):"),
                       ("            with points[name].register_forward_hook(patch), torch.no_grad():\n",
                        "            with contextlib.ExitStack() as stack, torch.no_grad():\n"
                        "                for each in names:\n"
                        "                    hook = functools.partial(patch, name=each)\n"
                        "                    stack.enter_context(points[each].register_forward_hook(hook))\n")),
         expect=["every row is the same", "at every name in names at once"],
         mistake="12.patching_table.all-names-at-once"),
    dict(exercise="patching_table", kind="wrong", clause="position", why="patches along the feature axis",
         source=edited(reference("patching_table"),
                       ("output[:, position] = clean_activations[name][:, position]",
                        "output[..., position] = clean_activations[name][..., position]")),
         expect=["along the feature axis", "activation[:, p]"], mistake="12.patching_table.feature-axis-patched"),
    dict(exercise="patching_table", kind="wrong", clause="from-clean",
         why="the first clean sequence copied into every corrupted one",
         source=edited(reference("patching_table"),
                       ("output[:, position] = clean_activations[name][:, position]",
                        "output[:, position] = clean_activations[name][0, position]")),
         expect=["first clean sequence into every sequence", "its own clean value"],
         mistake="12.patching_table.first-clean-sequence-copied"),
    dict(exercise="ablate_heads", kind="wrong", clause="other-kind", why="any kind but 'zero' ablates by the mean",
         source=edited(reference("ablate_heads"),
                       ("    if kind not in (\"zero\", \"mean\"):\n"
                        "        raise ValueError(f\"kind is 'zero' or 'mean', not {kind!r}\")\n", "")),
         expect=["kind='max'", "expected valueerror", "any other kind raises valueerror"],
         mistake="12.ablate_heads.other-kind-accepted"),
    dict(exercise="run_with_cache", kind="wrong", clause="string", why="a bare string read as its characters",
         source=edited(reference("run_with_cache"),
                       ("    if isinstance(names, str):  # one name, not the characters a string iterates over\n"
                        "        names = [names]\n", "")),
         expect=["is one name, a bare string", "isinstance(names, str)"],
         mistake="12.run_with_cache.string-read-as-names"),
    dict(exercise="run_with_cache", kind="wrong", clause="gradients", why="torch.no_grad() around the forward pass",
         source=edited(reference("run_with_cache"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n"),
                       ("        logits = model(tokens)", "        with torch.no_grad():\n            logits = model(tokens)")),
         expect=["no autograd graph", "torch.no_grad()"], mistake="12.run_with_cache.logits-without-graph"),
    dict(exercise="run_with_cache", kind="wrong", clause="gradients", why="returns the logits detached, as the cache",
         source=edited(reference("run_with_cache"), ("    return logits, cache", "    return logits.detach(), cache")),
         expect=["no autograd graph", "not a detached copy"], mistake="12.run_with_cache.logits-without-graph"),
]

# An adversarial review of the six docstrings, with ways of TransformerLens, baukit, nnsight, ROME and steering-vectors:
# names that are modules but not hook points, hooks registered (pre-hooks, a global hook) before a name is found
# unknown, fn called with TransformerLens's hook= keyword, a tuple of names read as one name, an unknown kind with no
# heads, positions never patched, and steering added where autograd does not see it.
ENTRIES += [
    dict(exercise="run_with_cache", kind="wrong", clause="string",
         why="TransformerLens's first string filter: a lambda that compares with itself",
         source=edited(reference("run_with_cache"),
                       ("        names = [names]", "        names = lambda name: name == names")),
         expect=["returned an empty cache", "is one name, a bare string"],
         mistake="12.run_with_cache.string-read-as-names"),
    dict(exercise="run_with_cache", kind="wrong", clause="iterable", why="a list, or else one name: a tuple read as one name",
         source=edited(reference("run_with_cache"),
                       ("        chosen = list(names)", "        chosen = names if isinstance(names, list) else [names]")),
         expect=["raised keyerror", "a tuple holds several names", "list(names)"],
         mistake="12.run_with_cache.tuple-read-as-one-name"),
    dict(exercise="run_with_cache", kind="wrong", clause="copy", why="detach().cpu(), a copy only from a GPU",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()", "cache[name] = output.detach().cpu()")),
         expect=["same memory", "clone()"], mistake="12.run_with_cache.not-cloned"),
    dict(exercise="run_with_cache", kind="wrong", clause="copy", why="output.data, the activation's own memory",
         source=edited(reference("run_with_cache"), ("cache[name] = output.detach().clone()", "cache[name] = output.data")),
         expect=["same memory", "clone()"], mistake="12.run_with_cache.not-cloned"),
    dict(exercise="run_with_cache", kind="wrong", clause="logits",
         why="baukit's stop=True: the forward pass stopped once the cache is full",
         source=edited(reference("run_with_cache"),
                       ("            cache[name] = output.detach().clone()\n",
                        "            cache[name] = output.detach().clone()\n"
                        "            if len(cache) == len(chosen):\n                raise StopIteration\n"),
                       ("        logits = model(tokens)",
                        "        try:\n            logits = model(tokens)\n        except StopIteration:\n"
                        "            logits = None")),
         expect=["as its logits", "returned none"], mistake="12.run_with_cache.logits-not-a-tensor"),
    dict(exercise="run_with_cache", kind="wrong", clause="gradients", why="torch.inference_mode() around the forward pass",
         source=edited(reference("run_with_cache"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n"),
                       ("        logits = model(tokens)",
                        "        with torch.inference_mode():\n            logits = model(tokens)")),
         expect=["no autograd graph"], mistake="12.run_with_cache.logits-without-graph"),
    dict(exercise="run_with_cache", kind="wrong", clause="gradients", why="logits detached, then requires_grad_()",
         source=edited(reference("run_with_cache"),
                       ("    return logits, cache", "    return logits.detach().requires_grad_(), cache")),
         expect=["gradient", "is none", "as the model returned them"], mistake="12.run_with_cache.wrong-gradient"),
    dict(exercise="run_with_cache", kind="wrong", clause="once", why="the cache under no_grad, a second run for the logits",
         source=edited(reference("run_with_cache"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n"),
                       ("        logits = model(tokens)\n    return logits, cache",
                        "        with torch.no_grad():\n            model(tokens)\n    return model(tokens), cache")),
         expect=["ran the model 2 times"], mistake="12.run_with_cache.runs-model-again"),
    dict(exercise="run_with_cache", kind="wrong", clause="key-error", why="names looked up in named_modules()",
         source=edited(reference("run_with_cache"),
                       ("    points = model.hook_points()\n",
                        "    points = model.hook_points()\n    modules = dict(model.named_modules())\n"),
                       ("        unknown = [name for name in chosen if name not in points]",
                        "        unknown = [name for name in chosen if name not in modules]"),
                       ("stack.enter_context(points[name].register_forward_hook(hook_for(name)))",
                        "stack.enter_context(modules[name].register_forward_hook(hook_for(name)))")),
         expect=["'blocks.0.attn' is not a hook point", "not in named_modules()"],
         mistake="12.run_with_cache.module-taken-for-hook-point"),
    dict(exercise="run_with_cache", kind="right", why="torch.no_grad() only around the copy, in the hook",
         source=edited(reference("run_with_cache"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n"),
                       ("            cache[name] = output.detach().clone()",
                        "            with torch.no_grad():\n                cache[name] = output.clone()")),
         expect=[]),
    dict(exercise="run_with_cache", kind="right", why="clone() then detach(), a string as a tuple of one name",
         source=edited(reference("run_with_cache"),
                       ("        names = [names]", "        names = (names,)"),
                       ("cache[name] = output.detach().clone()", "cache[name] = output.clone().detach()")),
         expect=[]),

    dict(exercise="run_with_hooks", kind="wrong", clause="fn-args", why="TransformerLens's call, fn(activation, hook=module)",
         source=edited(reference("run_with_hooks"),
                       ("lambda module, args, output: fn(output, name)", "lambda module, args, output: fn(output, hook=module)")),
         expect=["unexpected keyword argument 'hook'", "call fn(output, name)"],
         mistake="12.run_with_hooks.fn-called-with-hook-keyword"),
    dict(exercise="run_with_hooks", kind="wrong", clause="fn-args", why="the hook point itself given as the name",
         source=edited(reference("run_with_hooks"),
                       ("lambda module, args, output: fn(output, name)", "lambda module, args, output: fn(output, module)")),
         expect=["hookpoint", "expected fn(activation, name)"], mistake="12.run_with_hooks.wrong-fn-arguments"),
    dict(exercise="run_with_hooks", kind="wrong", clause="replacement",
         why="one hook per hook point, each function's return taken without a None test",
         source='''
import collections
import contextlib


def run_with_hooks(model, tokens, fwd_hooks):
    points = model.hook_points()
    for name, _ in fwd_hooks:
        if name not in points:
            raise KeyError(name)
    grouped = collections.defaultdict(list)
    for name, fn in fwd_hooks:
        grouped[name].append(fn)

    def make(name, fns):
        def hook(module, args, output):
            for fn in fns:
                output = fn(output, name)
            return output
        return hook

    with contextlib.ExitStack() as stack:
        for name, fns in grouped.items():
            stack.enter_context(points[name].register_forward_hook(make(name, fns)))
        return model(tokens)
''',
         expect=["keep returned none after times_two", "not the hook point's original value"],
         mistake="12.run_with_hooks.none-restores-original"),
    dict(exercise="run_with_hooks", kind="wrong", clause="key-error-first",
         why="a global hook registered, then the names looked up inside its block",
         source='''
from torch.nn.modules.module import register_module_forward_hook


def run_with_hooks(model, tokens, fwd_hooks):
    points = model.hook_points()
    by_module = {}

    def hook(module, args, output):
        for name, fn in by_module.get(module, []):
            new = fn(output, name)
            if new is not None:
                output = new
        return output

    with register_module_forward_hook(hook):
        for name, fn in fwd_hooks:
            by_module.setdefault(points[name], []).append((name, fn))
        return model(tokens)
''',
         expect=["only after it had registered 1 hook(s)", "global hooks"],
         mistake="12.run_with_hooks.registers-before-key-error"),
    dict(exercise="run_with_hooks", kind="wrong", clause="key-error-first",
         why="pre-hooks on the hook points, each name looked up as it is registered",
         source='''
import contextlib


def run_with_hooks(model, tokens, fwd_hooks):
    points = model.hook_points()
    with contextlib.ExitStack() as stack:
        for name, fn in fwd_hooks:
            def pre(module, args, name=name, fn=fn):
                new = fn(args[0], name)
                return None if new is None else (new,)
            stack.enter_context(points[name].register_forward_pre_hook(pre))
        return model(tokens)
''',
         expect=["only after it had registered 1 hook(s)", "pre-hooks"],
         mistake="12.run_with_hooks.registers-before-key-error"),
    dict(exercise="run_with_hooks", kind="wrong", clause="key-error", why="names looked up in named_modules()",
         source=edited(reference("run_with_hooks"),
                       ("    points = model.hook_points()", "    points = dict(model.named_modules())")),
         expect=["'blocks.0.attn' is not a hook point", "not in named_modules()"],
         mistake="12.run_with_hooks.module-taken-for-hook-point"),
    dict(exercise="run_with_hooks", kind="right", why="one global forward hook that picks the hook points",
         source='''
from torch.nn.modules.module import register_module_forward_hook


def run_with_hooks(model, tokens, fwd_hooks):
    points = model.hook_points()
    by_module = {}
    for name, fn in fwd_hooks:
        by_module.setdefault(points[name], []).append((name, fn))

    def hook(module, args, output):
        for name, fn in by_module.get(module, ()):
            new = fn(output, name)
            if new is not None:
                output = new
        return output

    handle = register_module_forward_hook(hook)
    try:
        return model(tokens)
    finally:
        handle.remove()
''',
         expect=[]),
    dict(exercise="run_with_hooks", kind="right", why="hooks with_kwargs=True and always_call=True",
         source=edited(reference("run_with_hooks"),
                       ("lambda module, args, output: fn(output, name)", "lambda module, args, kwargs, output: fn(output, name)"),
                       ("register_forward_hook(hook_for(name, fn))",
                        "register_forward_hook(hook_for(name, fn), with_kwargs=True, always_call=True)")),
         expect=[]),

    dict(exercise="ablate_heads", kind="wrong", clause="other-kind", why="a dict of kinds: an unknown kind raises KeyError",
         source=edited(reference("ablate_heads"),
                       ("    if kind not in (\"zero\", \"mean\"):\n"
                        "        raise ValueError(f\"kind is 'zero' or 'mean', not {kind!r}\")\n",
                        "    {\"zero\": None, \"mean\": None}[kind]\n")),
         expect=["raised keyerror", "expected valueerror", "check that kind is 'zero' or 'mean' first"],
         mistake="12.ablate_heads.other-kind-accepted"),
    dict(exercise="ablate_heads", kind="wrong", clause="other-kind",
         why="the unknown kind's ValueError raised inside the hook, never with no heads",
         source=edited(reference("ablate_heads"),
                       ("    if kind not in (\"zero\", \"mean\"):\n"
                        "        raise ValueError(f\"kind is 'zero' or 'mean', not {kind!r}\")\n", ""),
                       ("            else:\n                z[:, :, chosen] = mean_cache",
                        "            elif kind != \"mean\":\n                raise ValueError(kind)\n"
                        "            else:\n                z[:, :, chosen] = mean_cache")),
         expect=["kind='max'", "also with no heads to ablate", "not inside a hook"],
         mistake="12.ablate_heads.kind-checked-in-hook"),
    dict(exercise="ablate_heads", kind="right", why="zeroes z in place in the hook and returns None",
         source=edited(reference("ablate_heads"), ("            z = z.clone()\n", ""), ("            return z\n", "")),
         expect=[]),

    dict(exercise="patching_table", kind="wrong", clause="position", why="position - 1: column 0 patches the last position",
         source=edited(reference("patching_table"),
                       ("output[:, position] = clean_activations[name][:, position]",
                        "output[:, position - 1] = clean_activations[name][:, position - 1]")),
         expect=["column p holds the patch of position p - 1", "off by one"],
         mistake="12.patching_table.position-off-by-one"),
    dict(exercise="patching_table", kind="wrong", clause="position", why="positions counted from 1: position 0 never patched",
         source=edited(reference("patching_table"),
                       ("        for position in range(corrupted.shape[1]):", "        for position in range(1, corrupted.shape[1]):")),
         expect=["column(s) [0] hold 0", "never patched"], mistake="12.patching_table.positions-skipped"),
    dict(exercise="patching_table", kind="wrong", clause="from-clean",
         why="ROME's layout: one clean sequence in the batch, copied into the corrupted ones",
         source='''
import torch


def patching_table(model, clean, corrupted, metric, names):
    batch = torch.cat([clean[:1], corrupted])
    points = model.hook_points()
    table = torch.zeros(len(names), corrupted.shape[1])
    for i, name in enumerate(names):
        for t in range(corrupted.shape[1]):
            def patch_rep(module, args, h, t=t):
                h = h.clone()
                h[1:, t] = h[0, t]
                return h
            with points[name].register_forward_hook(patch_rep), torch.no_grad():
                table[i, t] = metric(model(batch)[1:]).item()
    return table
''',
         expect=["first clean sequence into every sequence"], mistake="12.patching_table.first-clean-sequence-copied"),
    dict(exercise="patching_table", kind="right", why="nnsight's way: the corrupted activation patched in place",
         source=edited(reference("patching_table"), ("                output = output.clone()\n", ""),
                       ("                return output\n", "")),
         expect=[]),
    dict(exercise="patching_table", kind="right", why="no torch.no_grad(), .item(), a float64 table",
         source=edited(reference("patching_table"),
                       ("            with points[name].register_forward_hook(patch), torch.no_grad():\n"
                        "                table[i, position] = float(metric(model(corrupted)))",
                        "            with points[name].register_forward_hook(patch):\n"
                        "                table[i, position] = metric(model(corrupted)).item()"),
                       ("torch.zeros(len(names), corrupted.shape[1])",
                        "torch.zeros(len(names), corrupted.shape[1], dtype=torch.float64)")),
         expect=[]),

    dict(exercise="steer", kind="wrong", clause="gradients",
         why="steering-vectors' original[None] = original + delta, returning the output",
         source=edited(reference("steer"),
                       ("lambda module, args, output: output + alpha * vector",
                        "lambda module, args, output: output.__setitem__(None, output + alpha * vector) or output")),
         expect=["modified by an inplace operation", "changed the activation in place"],
         mistake="12.steer.added-in-place"),
    dict(exercise="steer", kind="wrong", clause="gradients", why="nnsight's output[:] += alpha * vector",
         source=edited(reference("steer"),
                       ("    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):",
                        "    def hook(module, args, output):\n        output[:] += alpha * vector\n\n"
                        "    with point.register_forward_hook(hook):")),
         expect=["modified by an inplace operation", "changed the activation in place"],
         mistake="12.steer.added-in-place"),
    dict(exercise="steer", kind="wrong", clause="gradients", why="adds through output.data, where autograd does not see it",
         source=edited(reference("steer"),
                       ("lambda module, args, output: output + alpha * vector",
                        "lambda module, args, output: (output.data.add_(alpha * vector), None)[1]")),
         expect=["through output.data", "gradient is wrong without an error"], mistake="12.steer.added-through-data"),
    dict(exercise="steer", kind="wrong", clause="gradients", why="the addition made under torch.no_grad() in the hook",
         source=edited(reference("steer"),
                       ("import contextlib\n", "import contextlib\n\nimport torch\n"),
                       ("    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):",
                        "    def hook(module, args, output):\n        with torch.no_grad():\n"
                        "            return output + alpha * vector\n\n    with point.register_forward_hook(hook):")),
         expect=["gradient", "is none", "nor under torch.no_grad()"], mistake="12.steer.steered-detached"),
    dict(exercise="steer", kind="right", why="a global forward hook that adds at the hook point only",
         source='''
import contextlib

from torch.nn.modules.module import register_module_forward_hook


@contextlib.contextmanager
def steer(model, name, vector, alpha=1.0):
    point = model.hook_points()[name]
    delta = alpha * vector

    def hook(module, args, output):
        if module is point:
            return output + delta

    handle = register_module_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()
''',
         expect=[]),
    dict(exercise="steer", kind="right", why="steering-vectors' shape: the vector as (1, 1, d), registered inside try",
         source='''
import contextlib


@contextlib.contextmanager
def steer(model, name, vector, alpha=1.0):
    handle = None
    try:
        delta = (alpha * vector).reshape(1, 1, -1)
        handle = model.hook_points()[name].register_forward_hook(lambda m, i, o: o + delta)
        yield
    finally:
        if handle is not None:
            handle.remove()
''',
         expect=[]),
    # ------------------------------------------------------------------ mistakes no entry above makes
    dict(exercise="run_with_cache", kind="wrong", clause="names", why="returns the cache's values as a list",
         source=edited(reference("run_with_cache"), ("    return logits, cache", "    return logits, list(cache.values())")),
         expect=["as the cache; expected a dict"], mistake="12.run_with_cache.cache-not-a-dict"),
    dict(exercise="run_with_cache", kind="wrong", clause="names", why="caches the activation as a nested list",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()", "cache[name] = output.detach().tolist()")),
         expect=["expected the activation there"], mistake="12.run_with_cache.cached-not-a-tensor"),
    dict(exercise="run_with_cache", kind="wrong", clause="names", why="caches the batch's mean activation",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()", "cache[name] = output.detach().mean(dim=0)")),
         expect=["expected the activation there"], mistake="12.run_with_cache.wrong-activation"),
    dict(exercise="run_with_cache", kind="wrong", clause="names", why="stores under the last part of the name",
         source=edited(reference("run_with_cache"),
                       ("cache[name] = output.detach().clone()", "cache[name.split('.')[-1]] = output.detach().clone()")),
         expect=["expected ['hook_embed'", "missing"], mistake="12.run_with_cache.wrong-names"),
    dict(exercise="run_with_cache", kind="wrong", clause="logits", why="returns the probabilities, not the logits",
         source=edited(reference("run_with_cache"), ("    return logits, cache", "    return logits.softmax(dim=-1), cache")),
         expect=["as its logits", "expected tensor of shape (2, 6, 10)"], mistake="12.run_with_cache.wrong-logits"),
    dict(exercise="run_with_cache", kind="wrong", clause="propagates", why="wraps the forward pass's exception in its own",
         source=edited(reference("run_with_cache"),
                       ("        logits = model(tokens)",
                        "        try:\n            logits = model(tokens)\n        except ValueError as error:\n"
                        "            raise RuntimeError(\"the forward pass failed\") from error")),
         expect=["raised runtimeerror", "let the model's own valueerror through"],
         mistake="12.run_with_cache.exception-replaced"),
    dict(exercise="run_with_cache", kind="wrong", clause="own-hooks", why="puts the hook points' own hooks aside during the call",
         source=edited(reference("run_with_cache"),
                       ("    cache = {}\n",
                        "    cache = {}\n    saved = [(point, dict(point._forward_hooks)) for point in points.values()]\n"
                        "    for point, _ in saved:\n        point._forward_hooks.clear()\n"),
                       ("    return logits, cache",
                        "    for point, hooks in saved:\n        point._forward_hooks.update(hooks)\n"
                        "    return logits, cache")),
         expect=["did not run during the call"], mistake="12.run_with_cache.own-hooks-disabled"),
    dict(exercise="run_with_hooks", kind="wrong", clause="propagates", why="wraps the forward pass's exception in its own",
         source=edited(reference("run_with_hooks"),
                       ("        return model(tokens)",
                        "        try:\n            return model(tokens)\n        except ValueError as error:\n"
                        "            raise RuntimeError(\"the forward pass failed\") from error")),
         expect=["raised runtimeerror", "let the model's own valueerror through"],
         mistake="12.run_with_hooks.exception-replaced"),
    dict(exercise="run_with_hooks", kind="wrong", clause="order", why="skips a hook point named a second time",
         source=edited(reference("run_with_hooks"),
                       ("        for name, fn in fwd_hooks:\n            stack.enter_context",
                        "        seen = set()\n        for name, fn in fwd_hooks:\n            if name in seen:\n"
                        "                continue\n            seen.add(name)\n            stack.enter_context")),
         expect=["only the first function of that hook point"], mistake="12.run_with_hooks.first-fn-per-name-only"),
    dict(exercise="run_with_hooks", kind="wrong", clause="pairs", why="returns inside the loop, after the first pair",
         source=edited(reference("run_with_hooks"),
                       ("hook_for(name, fn)))\n        return model(tokens)", "hook_for(name, fn)))\n            return model(tokens)")),
         expect=["called the functions with the names", "once, with its own name"],
         mistake="12.run_with_hooks.wrong-fn-calls"),
    dict(exercise="run_with_hooks", kind="wrong", clause="fn-args", why="passes fn the first sequence's activation, broadcast to the batch",
         source=edited(reference("run_with_hooks"), ("fn(output, name)", "fn(output[:1].expand_as(output), name)")),
         expect=["expected the activation at hook_embed"], mistake="12.run_with_hooks.wrong-activation-passed"),
    dict(exercise="run_with_hooks", kind="wrong", clause="returns", why="returns the last position's logits",
         source=edited(reference("run_with_hooks"), ("        return model(tokens)", "        return model(tokens)[:, -1]")),
         expect=["expected tensor of shape (2, 6, 10)"], mistake="12.run_with_hooks.wrong-logits"),
    dict(exercise="ablate_heads", kind="wrong", clause="propagates", why="wraps the forward pass's exception in its own",
         source=edited(reference("ablate_heads"),
                       ("        return model(tokens)",
                        "        try:\n            return model(tokens)\n        except ValueError as error:\n"
                        "            raise RuntimeError(\"the forward pass failed\") from error")),
         expect=["raised runtimeerror", "let the model's own valueerror through"],
         mistake="12.ablate_heads.exception-replaced"),
    dict(exercise="ablate_heads", kind="wrong", clause="zero", why="zeroes a copy of z and returns nothing from the hook",
         source=edited(reference("ablate_heads"), ("            return z\n", "")),
         expect=["no head ablated", "return the zeroed copy"], mistake="12.ablate_heads.ablation-not-returned"),
    dict(exercise="ablate_heads", kind="wrong", clause="each-head", why="reads each pair as (head, layer)",
         source=edited(reference("ablate_heads"), ("    for layer, head in heads:", "    for head, layer in heads:")),
         expect=["swapped layer and head"], mistake="12.ablate_heads.layer-and-head-swapped"),
    dict(exercise="ablate_heads", kind="wrong", clause="mean-reference", why="any kind zeroes (tests kind for truth)",
         source=edited(reference("ablate_heads"), ('            if kind == "zero":', "            if kind:")),
         expect=["that is zero ablation"], mistake="12.ablate_heads.zero-for-mean"),
    dict(exercise="patching_table", kind="wrong", clause="propagates", why="wraps the metric's exception in its own",
         source=edited(reference("patching_table"),
                       ("                table[i, position] = float(metric(model(corrupted)))",
                        "                try:\n                    table[i, position] = float(metric(model(corrupted)))\n"
                        "                except ValueError as error:\n"
                        "                    raise RuntimeError(\"the metric failed\") from error")),
         expect=["raised runtimeerror", "let the metric's valueerror through"],
         mistake="12.patching_table.exception-replaced"),
    dict(exercise="patching_table", kind="wrong", clause="shape", why="a table of the tokens' dtype",
         source=edited(reference("patching_table"),
                       ("    table = torch.zeros(len(names), corrupted.shape[1])",
                        "    table = torch.zeros(len(names), corrupted.shape[1], dtype=corrupted.dtype)")),
         expect=["expected a float tensor"], mistake="12.patching_table.table-not-float"),
    dict(exercise="patching_table", kind="wrong", clause="rest-corrupted",
         why="the patched runs in half precision, then the model back to float",
         source=edited(reference("patching_table"),
                       ("    table = torch.zeros(len(names), corrupted.shape[1])",
                        "    model.half()  # the patched runs in half precision, to save memory\n"
                        "    table = torch.zeros(len(names), corrupted.shape[1])"),
                       ("    return table", "    model.float()\n    return table")),
         expect=["changed the model's parameters"], mistake="12.patching_table.changes-parameters"),
    dict(exercise="attribution_table", kind="wrong", clause="propagates", why="wraps the metric's exception in its own",
         source=edited(reference("attribution_table"),
                       ("        value = metric(model(corrupted))",
                        "        try:\n            value = metric(model(corrupted))\n        except ValueError as error:\n"
                        "            raise RuntimeError(\"the metric failed\") from error")),
         expect=["raised runtimeerror", "let the metric's valueerror through"],
         mistake="12.attribution_table.exception-replaced"),
    dict(exercise="attribution_table", kind="wrong", clause="shape", why="the table in the tokens' dtype",
         source=edited(reference("attribution_table"), ("    return torch.stack(rows)", "    return torch.stack(rows).to(clean.dtype)")),
         expect=["expected a float tensor"], mistake="12.attribution_table.table-not-float"),
    dict(exercise="attribution_table", kind="wrong", clause="shape", why="positions down the rows",
         source=edited(reference("attribution_table"), ("    return torch.stack(rows)", "    return torch.stack(rows).T")),
         expect=["expected shape (3, 5)"], mistake="12.attribution_table.wrong-table-shape"),
    dict(exercise="attribution_table", kind="wrong", clause="sum", why="the mean over the batch and features, not the sum",
         source=edited(reference("attribution_table"),
                       ("reshape(change.shape[1], -1).sum(dim=1))", "reshape(change.shape[1], -1).mean(dim=1))")),
         expect=["m + sum((c - r) * g)"], mistake="12.attribution_table.wrong-table-value"),
    dict(exercise="steer", kind="wrong", clause="adds", why="computes the steered output and returns nothing from the hook",
         source=edited(reference("steer"),
                       ("    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):",
                        "    def hook(module, args, output):\n        output = output + alpha * vector\n\n"
                        "    with point.register_forward_hook(hook):")),
         expect=["without steering", "output + alpha * vector"], mistake="12.steer.addition-not-returned"),
    dict(exercise="steer", kind="wrong", clause="nest", why="alpha defaults to 0",
         source=edited(reference("steer"), ("alpha=1.0", "alpha=0.0")),
         expect=["the inner steer", "did nothing"], mistake="12.steer.default-alpha-wrong"),
    dict(exercise="steer", kind="wrong", clause="removed", why="switches its hook off at the end instead of removing it",
         source=edited(reference("steer"),
                       ("    with point.register_forward_hook(lambda module, args, output: output + alpha * vector):\n"
                        "        yield",
                        "    state = {\"on\": True}\n"
                        "    point.register_forward_hook(lambda module, args, output: output + alpha * vector if state[\"on\"] "
                        "else None)\n    yield\n    state[\"on\"] = False")),
         expect=["hooks were still registered"], mistake="12.steer.hooks-left"),
    dict(exercise="steer", kind="wrong", clause="adds", why="adds the vector normalized to length 1",
         source=edited(reference("steer"), ("output + alpha * vector", "output + alpha * vector / vector.norm()")),
         expect=["inside `with steer"], mistake="12.steer.wrong-addition"),
    dict(exercise="steer", kind="wrong", clause="outside",
         why="replaces the hook point by a module that adds, whose hooks then never run",
         source=_MODULE_SURGERY_STEER,
         expect=["the caller's own forward hook", "ran 0 times", "leave the model's own hooks alone"],
         mistake="12.steer.own-hooks-disabled"),
    dict(exercise="steer", kind="wrong", clause="outside",
         why="replaces the hook point by a module that adds, and clears the hooks of the one it replaced",
         source=edited(_MODULE_SURGERY_STEER, ("    original = getattr(parent, child)\n",
                                               "    original = getattr(parent, child)\n"
                                               "    original._forward_hooks.clear()  # its module is no longer called\n")),
         expect=["removed hooks that were on the model before the call"], mistake="12.steer.removed-own-hooks"),
]
