"""Checks for lesson 12, a transformer looked at with hooks: on small random transformers from fixed
seeds (d_model 16, 2 heads, 2 layers, sequences of 5 or 6 tokens: a forward pass costs a fraction of
a millisecond), and once on the lesson's trained model (hooked.checks.trained_tiny_transformer, read
once per grading process). The references are computed here, with the checks' own hooks; the
references of known mistakes are computed only when an answer is wrong, to name the mistake."""

import collections

import torch
from torch.utils.hooks import RemovableHandle

from hooked.checks.check_api import LearnerCodeRaised, calling, check_of, fail
from hooked.checks import trained_tiny_transformer
from hooked.checks.hooks_left import GLOBAL_MODULE_HOOKS
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.seeding import seeded
from hooked.checks.tensors import describe, first_difference
from hooked.checks.torch_error_hints import calling_with_hints
from hooked.checks.trained_tiny_transformer import Block, TinyTransformer

_SMALL = dict(vocab=10, d_model=16, n_heads=2, n_layers=2, max_len=6)
_HOOK_KINDS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


# ---------------------------------------------------------------- models and tokens

class _InPlaceBlock(Block):
    """A block that adds the attention to the residual stream in place: the tensor that
    hook_resid_pre saw is changed after the hook ran (a cache that kept it without a copy changes)."""

    def forward(self, x):
        x = self.hook_resid_pre(x.clone())
        x += self.attn(x)
        return self.hook_resid_post(x)


def _small(seed, in_place=False):
    def build():
        model = TinyTransformer(**_SMALL)
        if in_place:
            for index, block in enumerate(model.blocks):
                replacement = _InPlaceBlock(_SMALL["d_model"], _SMALL["n_heads"])
                replacement.load_state_dict(block.state_dict())
                model.blocks[index] = replacement
        return model.eval()
    return seeded(seed, build)


def _tokens(seed, batch, seq, vocab=_SMALL["vocab"]):
    return torch.randint(vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _metric_for(answer, other):
    """The lesson's logit difference at the last position, summed over the batch: a 0-dim tensor."""
    def metric(logits):
        return (logits[:, -1, answer] - logits[:, -1, other]).sum()
    return metric


def _handles_made():
    """How many hook handles torch has made so far. Every registration (a module's forward hook or pre-hook,
    a global hook, a tensor hook) makes a RemovableHandle, which numbers it: the difference counts them."""
    return RemovableHandle.next_id


# ---------------------------------------------------------------- hooks left and kept

def _hook_ids(model):
    ids = {(name, kind, key) for name, module in model.named_modules() for kind in _HOOK_KINDS
           for key in getattr(module, kind)}
    ids |= {(None, kind, key) for kind, hooks in GLOBAL_MODULE_HOOKS.items() for key in hooks}
    return ids


def _where(ids):
    return sorted({f"{'the global hooks' if name is None else name or 'the model'} ({kind.strip('_')})"
                   for name, kind, _ in ids})


def _check_hooks(model, before, call_text, when="", left="hooks-left"):
    """No hook of the model's from before the call went, and none of the call's stayed; `left` is the slug
    of hooks left behind (after a forward pass that raised: "hooks-left-on-raise")."""
    after = _hook_ids(model)
    if before - after:
        fail(f"{call_text}{when} removed hooks that were on the model before the call, on {_where(before - after)}. "
             "Remove only the hooks you registered, through their handles (a `with` block, or handle.remove()); "
             "clearing a module's _forward_hooks takes the model's own hooks too.", "removed-own-hooks")
    if after - before:
        fail(f"After {call_text}{when}, hooks were still registered on {_where(after - before)}. Remove every hook "
             "you register before returning, also when the forward pass raises: register them in a `with` block "
             "(a handle is a context manager; contextlib.ExitStack holds several), or remove them in a `finally:`.",
             left)


def _own_hook(model, name):
    """A forward hook of the model's own on hook point `name`, which returns None: it must stay."""
    return model.hook_points()[name].register_forward_hook(lambda module, args, output: None)


def _planted_at_logits(model):
    """A forward hook of the check's on hook_logits that raises ValueError: the forward pass fails after
    every other hook point has run. Returns its handle."""
    def raise_on_purpose(module, args, output):
        raise ValueError("the forward pass failed, on purpose")
    return model.hook_logits.register_forward_hook(raise_on_purpose)


def _planted(error):
    return isinstance(error, ValueError) and "on purpose" in str(error)


def _check_raise(model, call_text, call):
    """`call()` runs `model` whose forward raises ValueError after every hook point but the logits'
    hook ran: the ValueError comes through, and no hook of the call is left; the planted hook stays."""
    planted = _planted_at_logits(model)
    before = _hook_ids(model)
    planted_exception_comes_through(
        f"calling {call_text} with a model whose forward pass raises ValueError", call, _planted,
        lambda returned: (f"{call_text} returned {describe(returned)}, but the model's forward pass raised "
                          "ValueError: let the exception reach the caller (don't catch it)."),
        hints=(lambda error: ("exception-replaced", "Let the model's own ValueError through, unchanged: remove the "
                              "hooks in a `finally:` or a `with` block, without catching the exception."),))
    _check_hooks(model, before, call_text, " (whose forward pass raised ValueError)", left="hooks-left-on-raise")
    planted.remove()


def _check_key_error(model, call_text, call, unknown):
    """`call()` names `unknown`, not a hook point: it raises KeyError before registering any hook."""
    before, made = _hook_ids(model), _handles_made()
    raised, returned = _call_expecting(call_text, call, KeyError, f"expected KeyError, since {unknown!r} is not a "
                                       "hook point of the model: look each name up in model.hook_points() "
                                       "(get_submodule raises AttributeError) and raise KeyError before registering "
                                       "any hook.", "unknown-name-wrong-error")
    if not raised and unknown in dict(model.named_modules()):
        fail(f"{call_text} returned {describe(returned)}; {unknown!r} is not a hook point of the model "
             "(a key of model.hook_points()), so it must raise KeyError, before registering any hook. It is a module "
             "of the model, but not a hook point: look names up in model.hook_points(), not in named_modules() or "
             "with get_submodule.", "module-taken-for-hook-point")
    if not raised:
        fail(f"{call_text} returned {describe(returned)}; {unknown!r} is not a hook point of the model "
             "(a key of model.hook_points()), so it must raise KeyError, before registering any hook.",
             "unknown-name-accepted")
    count = _handles_made() - made
    if count:
        fail(f"{call_text} raised KeyError, but only after it had registered {count} hook(s) (forward hooks, "
             f"pre-hooks or global hooks). Check every name first ({unknown!r} is not a hook point), and register "
             "hooks only when all names are known.", "registers-before-key-error")
    _check_hooks(model, before, call_text, " (which raised KeyError)", left="hooks-left-on-raise")


def _call_expecting(call_text, call, error_type, expected, mistake):
    """(True, None) when `call()` raised `error_type`, (False, what it returned) when it returned; fails when it
    raised another error, `expected` saying what it should have raised, `mistake` naming the mistake."""
    try:
        with calling(f"calling {call_text}"):
            returned = call()
    except LearnerCodeRaised as raised:
        if not isinstance(raised.error, error_type):
            fail(f"{call_text} raised {type(raised.error).__name__}: {raised.error}; {expected}", mistake)
        return True, None
    return False, returned


def _check_metric_raise(model, call_text, call):
    """`call(metric)` runs the learner's table with a metric that raises ValueError: the ValueError comes
    through, and no hook of the call is left (the patch's and the cache's hooks go too)."""
    def failing_metric(logits):
        raise ValueError("the metric failed, on purpose")

    before = _hook_ids(model)
    planted_exception_comes_through(
        f"calling {call_text} with a metric that raises ValueError", lambda: call(failing_metric), _planted,
        lambda returned: (f"{call_text} returned {describe(returned)}, but the metric raised ValueError: let the "
                          "exception reach the caller (don't catch it)."),
        hints=(lambda error: ("exception-replaced", "Let the metric's ValueError through, unchanged: remove the hooks "
                              "in a `finally:` or a `with` block, without catching the exception."),))
    _check_hooks(model, before, call_text, " (whose metric raised ValueError)", left="hooks-left-on-raise")


# ---------------------------------------------------------------- references

def _activations(model, tokens, names=None, replace=None):
    """(logits, {name: activation copy}) of one forward pass, with `replace` {name: fn(output)} applied
    by the check's own hooks."""
    points = model.hook_points()
    found = {}
    handles = []
    for name in names if names is not None else points:
        def hook(module, args, output, name=name):
            if replace and name in replace:
                output = replace[name](output)
            found[name] = output.detach().clone()
            return output
        handles.append(points[name].register_forward_hook(hook))
    try:
        with torch.no_grad():
            logits = model(tokens)
    finally:
        for handle in handles:
            handle.remove()
    return logits, found


def _embed_gradient(model, tokens, replace):
    """The gradient of logits.sum() with respect to the position embedding's weight, with `replace`
    {name: fn(output)} applied by the check's own hooks: what a learner's hooks must let through."""
    points = model.hook_points()
    handles = [points[name].register_forward_hook(lambda module, args, output, fn=fn: fn(output))
               for name, fn in replace.items()]
    try:
        logits = model(tokens)
    finally:
        for handle in handles:
            handle.remove()
    return torch.autograd.grad(logits.sum(), model.pos.weight)[0]


def _check_gradient(logits, model, expected, call_text, detached, hints=(), guesses=()):
    """`logits`, computed by the learner's code with gradients on, must carry the gradient `expected`
    (of their sum, with respect to model.pos.weight, whose every row the check's tokens use); `detached`
    is (slug, words) of a gradient that no guess explains; `hints` name what an error of the backward
    pass means (calling_with_hints); `guesses` ((gradient, slug, words)) the gradients of known mistakes."""
    if not isinstance(logits, torch.Tensor) or not logits.requires_grad:
        fail(f"{call_text}, with gradients on, gave {describe(logits)} with no autograd graph (requires_grad=False): "
             "gradients must flow as in any forward pass. Don't wrap the forward pass (or the caller's block) in "
             "torch.no_grad(), and return what it computed, not a detached copy.", "logits-without-graph")
    with calling_with_hints(f"backward from the logits of {call_text}", hints):
        gradient = torch.autograd.grad(logits.sum(), model.pos.weight, allow_unused=True)[0]
    if gradient is None or not _close(gradient, expected, 1e-4):
        compared = (f"{call_text}: the gradient of the logits' sum with respect to the position embedding's weight is "
                    f"{describe(gradient)}; expected {describe(expected)}.{first_difference(gradient, expected, 1e-4)}")
        for guess, slug, words in guesses:
            if _close(gradient, guess(), 1e-4):
                fail(f"{compared} {words}", slug)
        slug, words = detached
        fail(f"{compared} {words}", slug)


def _close(actual, expected, tolerance=1e-5):
    return (isinstance(actual, torch.Tensor) and actual.shape == expected.shape
            and torch.allclose(actual.detach().float(), expected.float(), rtol=tolerance, atol=tolerance))


def _logits_check(logits, expected, call_text, guesses=(), wrong="wrong-logits"):
    """`logits` must be `expected`; else fail with the first of `guesses` ((tensor, slug, words)) it equals,
    or as `wrong`, the slug of the clause these logits break."""
    if not isinstance(logits, torch.Tensor):
        fail(f"{call_text} returned {describe(logits)}; expected the logits, {describe(expected)}.",
             "logits-not-a-tensor")
    if _close(logits, expected):
        return
    compared = (f"{call_text} returned {describe(logits)}; expected {describe(expected)}."
                f"{first_difference(logits, expected)}")
    for guess, slug, words in guesses:
        if _close(logits, guess()):
            fail(f"{compared} {words}", slug)
    fail(compared, wrong)


# ---------------------------------------------------------------- named mistakes

# What the shared pieces above recognize, merged into the check_of of each exercise that can reach them.
_HOOKS_LEFT = {
    "hooks-left": "leaves a hook it registered on the model after returning",
    "removed-own-hooks": "removes hooks the model had before the call (clears a module's _forward_hooks)",
}
_EXCEPTION = {
    "swallowed-exception": "catches the exception raised inside the call and returns instead of letting it through",
    "hooks-left-on-raise": "leaves its hooks on the model when the call raises: removes them after the forward "
                           "pass, not in a finally or a with block",
}
_EXCEPTION_REPLACED = {
    "exception-replaced": "lets another exception out instead of the one raised inside the call",
}
_KEY_ERROR = {
    "unknown-name-accepted": "skips or ignores a name that is not a hook point instead of raising KeyError",
    "module-taken-for-hook-point": "accepts a module that is not a hook point (looks names up in named_modules)",
    "unknown-name-wrong-error": "raises another error than KeyError for a name that is not a hook point",
    "registers-before-key-error": "registers hooks before it finds the unknown name and raises KeyError",
}
_LOGITS = {
    "logits-not-a-tensor": "returns something other than a tensor as the logits",
    "wrong-logits": "returns logits that differ from the expected ones in a way no diagnosis explains",
}
_GRAPH = {
    "logits-without-graph": "gives logits with no autograd graph (no_grad, or a detached copy)",
}
_TABLE = {
    "table-not-a-tensor": "returns something other than a tensor as the table",
    "wrong-table-shape": "returns a table of another shape than (len(names), seq)",
    "table-not-float": "returns a table of integers or booleans instead of floats",
    "wrong-table-value": "returns a table whose values differ in a way no diagnosis explains",
}

RUN_WITH_CACHE_MISTAKES = {
    **_HOOKS_LEFT, **_EXCEPTION, **_EXCEPTION_REPLACED, **_KEY_ERROR, **_LOGITS, **_GRAPH,
    "not-a-pair": "returns something other than the pair (logits, cache)",
    "cache-not-a-dict": "returns a cache that is not a dict",
    "wrong-gradient": "returns logits whose gradient differs from the model's own",
    "runs-model-again": "runs the model more than once (or not at all) for one cache",
    "late-binding": "makes hooks in a loop that read the loop's variable when they run: every hook uses the last name",
    "caches-unasked-names": "caches hook points that were not asked for",
    "caches-modules": "caches modules that are not hook points (asks names(name) of every module)",
    "wrong-names": "caches another set of names than the ones asked for",
    "cached-not-a-tensor": "stores something other than a tensor in the cache",
    "cache-not-detached": "stores activations still attached to the autograd graph (no detach)",
    "first-sequence-only": "stores the first sequence of the batch only (output[0])",
    "not-cloned": "stores output.detach() without clone(): the cache shares memory with the activations",
    "wrong-activation": "stores a value at a name that is not the activation there, in a way no diagnosis explains",
    "cache-kept-between-calls": "keeps one cache dict between calls (module level or a default argument)",
    "own-hooks-disabled": "keeps the model's own hooks registered but stops them from running during the call",
    "iterable-read-as-predicate": "takes a tuple or a generator of names for a predicate (tests isinstance(names, "
                                  "list))",
    "tuple-read-as-one-name": "takes a tuple of names for one name",
    "generator-read-twice": "reads a generator of names twice, so that nothing is left to register",
    "string-read-as-names": "takes a bare string for a list of names (its characters)",
    "predicate-read-as-names": "takes a predicate for a list of names (iterates over the function)",
    "last-position-logits": "returns the logits of the last position only",
}

RUN_WITH_HOOKS_MISTAKES = {
    **_HOOKS_LEFT, **_EXCEPTION, **_EXCEPTION_REPLACED, **_KEY_ERROR, **_LOGITS, **_GRAPH,
    "tensor-truth-value": "writes `fn(output, name) or output`, asking a tensor for its truth value",
    "fn-called-with-hook-keyword": "calls fn(activation, hook=...) as TransformerLens does, not fn(activation, name)",
    "wrong-fn-arguments": "calls fn with other arguments than (activation, name)",
    "pairs-read-as-dict": "reads fwd_hooks as a dict (fwd_hooks.items()), not a list of (name, fn) pairs",
    "late-binding": "makes hooks in a loop that read the loop's variables when they run: every hook uses the last pair",
    "wrong-fn-calls": "calls the pairs' functions another number of times, or with other names, than once each",
    "wrong-activation-passed": "passes fn something other than the hook point's activation",
    "replacement-ignored": "ignores what fn returns: the activations are not replaced",
    "reverse-order": "runs the functions of one hook point in the reverse order of the list",
    "one-fn-per-name": "keeps one function per hook point (a dict by name): only the last one runs",
    "first-fn-per-name-only": "runs only the first function of a hook point named twice",
    "none-restores-original": "takes None to mean the hook point's original value, not what the function was given",
    "activation-detached": "passes fn a detached activation, or detaches the replacement: the gradient stops there",
    "own-hooks-disabled": "keeps the model's own hooks registered but stops them from running during the call",
    "forward-called-directly": "calls model.forward(tokens), which skips the hooks on the model itself",
}

ABLATE_HEADS_MISTAKES = {
    **_HOOKS_LEFT, **_EXCEPTION, **_EXCEPTION_REPLACED, **_LOGITS,
    "ablation-not-returned": "zeroes or replaces a copy of z without returning it from the hook",
    "position-taken-for-head": "indexes the position axis instead of the head axis of hook_z (z[:, head])",
    "layer-and-head-swapped": "reads each pair as (head, layer)",
    "layer-ignored": "ablates the heads in the last layer whatever the layer given",
    "some-heads-only": "ablates only some of the heads given (one per layer, or the last)",
    "whole-layer-ablated": "ablates every head of each layer named",
    "last-position-only": "ablates the heads at the last position only",
    "batch-mean-for-zero": "replaces each head by its mean over the batch where kind='zero' asks for zeros",
    "mean-of-ablated-batch": "takes the mean over the batch being ablated, not over the reference run's cache",
    "mean-over-positions": "averages the reference run over the positions too",
    "mean-over-everything": "averages the reference run over everything: one number per head",
    "reference-sequence-for-mean": "takes one sequence of the reference run instead of its mean over the batch",
    "zero-for-mean": "zeroes the heads where kind='mean' asks for the reference run's mean",
    "kind-chosen-by-cache": "chooses the ablation by whether mean_cache is given, not by kind",
    "missing-cache-accepted": "does not raise ValueError for kind='mean' without a mean_cache",
    "other-kind-accepted": "does not raise ValueError for a kind other than 'zero' or 'mean'",
    "kind-checked-in-hook": "checks kind only inside the hook, so a wrong kind with no heads passes",
}

PATCHING_TABLE_MISTAKES = {
    **_HOOKS_LEFT, **_EXCEPTION, **_EXCEPTION_REPLACED, **_TABLE,
    "changes-parameters": "changes the model's parameters",
    "runs-swapped": "runs the model on clean with activations from corrupted",
    "position-off-by-one": "patches position p + 1 or p - 1 in column p",
    "patches-accumulate": "patches the same activation again each run, so earlier positions stay patched",
    "late-binding": "makes hooks in a loop that read the loop's variable when they run: every row patches one name",
    "all-positions-at-once": "patches every position at once in each run",
    "first-sequence-only": "patches the first sequence of the batch only",
    "share-restored": "returns the share of the clean metric restored, not the metric",
    "clean-run-metric": "returns the clean run's metric everywhere (runs the model on clean)",
    "patch-not-returned": "patches a copy without returning it from the hook: every run is the corrupted one",
    "change-not-metric": "returns the change a patch makes, not the patched run's metric",
    "all-names-at-once": "patches every name at once in each run",
    "feature-axis-patched": "indexes the feature axis instead of the position axis (activation[..., p])",
    "first-clean-sequence-copied": "copies the first clean sequence into every sequence of the batch",
    "clean-batch-mean": "patches in the mean of the clean batch instead of each sequence's own value",
    "positions-skipped": "never patches some positions, leaving their column 0",
}

ATTRIBUTION_TABLE_MISTAKES = {
    **_HOOKS_LEFT, **_EXCEPTION, **_EXCEPTION_REPLACED, **_TABLE,
    "graph-cut-at-hook": "returns a detached copy from the forward hook, which cuts the graph at the hook point",
    "retain-grad": "reads the gradients with retain_grad() instead of tensor hooks",
    "wrong-number-of-runs": "runs the model another number of times than twice",
    "wrong-number-of-backwards": "runs backward another number of times than once",
    "gradient-of-clean-run": "takes the gradient of the clean run instead of the corrupted run's",
    "sign-flipped": "takes R - C instead of C - R",
    "metric-left-out": "leaves M out: returns the change alone",
    "summed-over-positions": "sums over the positions too",
    "first-sequence-only": "sums over the first sequence of the batch only",
    "activation-change-left-out": "sums the gradient alone, without the change C - R",
    "activation-for-gradient": "multiplies C - R by the corrupted activation instead of the gradient",
    "position-off-by-one": "puts the estimate of position p + 1 or p - 1 in column p",
    "metric-of-clean-run": "takes M from the run on clean",
}

STEER_MISTAKES = {
    **_HOOKS_LEFT, **_EXCEPTION,
    "not-a-context-manager": "returns something a with statement cannot use",
    "registered-on-call": "registers the hook when steer is called, not when the block is entered",
    "vector-changed": "scales vector in place",
    "addition-not-returned": "adds to a copy without returning it from the hook: nothing is steered",
    "alpha-ignored": "adds vector without alpha",
    "last-position-only": "adds alpha * vector at the last position only",
    "first-sequence-only": "adds alpha * vector to the first sequence of the batch only",
    "wrong-addition": "changes the activation inside the block in a way no diagnosis explains",
    "not-every-forward-pass": "adds alpha * vector on the first forward pass only, or more each pass",
    "steering-left-after-block": "keeps steering after the block ends",
    "added-in-place": "adds to the activation in place, which breaks backward through the attention pattern",
    "added-through-data": "adds through output.data, behind autograd's back: the gradient is wrong",
    "steered-detached": "adds alpha * vector to a detached activation: the gradient stops at the hook point",
    "logits-without-graph": "turns gradients off inside the block",
    "removes-other-hooks": "removes hooks another block registered when its own block ends",
    "default-alpha-wrong": "does nothing with alpha left to its default (a default other than 1.0)",
    "wrong-nested-steering": "nests blocks whose additions do not add up, inside the inner block or after it, in a "
                             "way no diagnosis explains",
    "own-hooks-disabled": "stops the model's own hooks from running inside the block",
}


# ---------------------------------------------------------------- run_with_cache

_LATE_BINDING = ("A hook made in a loop reads the loop's variable when it runs, not when it was made")


def _check_cache(call_text, result, model, tokens, expected_names, in_place=False):
    """`result` must be (logits, cache) of one forward pass of `model` on `tokens`, the cache holding a
    detached copy of the activation at each of `expected_names`. `in_place`: the model's blocks add to
    the residual stream in place (a cache without a copy changes)."""
    if not isinstance(result, tuple) or len(result) != 2:
        fail(f"{call_text} returned {describe(result)}; expected a pair (logits, cache).", "not-a-pair")
    logits, cache = result
    expected_logits, expected = _activations(model, tokens)
    if not isinstance(cache, dict):
        fail(f"{call_text} returned {describe(cache)} as the cache; expected a dict, hook-point name -> activation.",
             "cache-not-a-dict")
    _logits_check(logits, expected_logits, f"{call_text}, as its logits,", guesses=[
        (lambda: expected_logits[:, -1], "last-position-logits", "That is the logits of the last position only: "
         "return the logits of every position, as the model returned them."),
    ])
    _check_cache_names(call_text, cache, expected_names, expected, dict(model.named_modules()))
    _check_cache_values(call_text, cache, expected_names, expected, in_place)
    _check_cache_copies(call_text, cache, expected_names, logits)
    return logits, cache


def _check_cache_names(call_text, cache, expected_names, expected, modules):
    """The cache's keys are `expected_names`, no more, no fewer (`expected`: every hook point's activation;
    `modules`: the model's named modules)."""
    missing = [name for name in expected_names if name not in cache]
    extra = [name for name in cache if name not in expected_names]
    if len(cache) == 1 and len(expected_names) > 1 and not extra:
        fail(f"{call_text} returned a cache with one name, {list(cache)}, of the {len(expected_names)} asked for. "
             f"{_LATE_BINDING}: every hook stored under the last name. Make each hook in a function of its own (def "
             "hook_for(name): ...), or bind the name as a default argument (name=name).", "late-binding")
    if extra and not missing and set(extra) <= set(expected):
        fail(f"{call_text} cached {extra}, which were not asked for (asked: {expected_names}).", "caches-unasked-names")
    if extra and not missing and all(name in modules for name in extra):
        fail(f"{call_text} cached {extra}, modules that are not hook points: names(name) is asked only of the "
             "hook points' names, the keys of model.hook_points(), not of every module in named_modules().",
             "caches-modules")
    if missing or extra:
        fail(f"{call_text} returned a cache with the names {list(cache)}; expected {expected_names} "
             f"(missing {missing}, not asked for or not hook points {extra}).", "wrong-names")


def _check_cache_values(call_text, cache, expected_names, expected, in_place):
    """Each cached value is the activation at its name, detached, of the whole batch."""
    values = [cache[name] for name in expected_names]
    if len(values) > 1 and all(value is values[0] for value in values):
        fail(f"{call_text} returned a cache whose every name holds the same tensor object. {_LATE_BINDING}: make "
             "each hook in a function of its own (def hook_for(name): ...), or bind the name as a default argument "
             "(name=name).", "late-binding")
    for name in expected_names:
        value = cache[name]
        if not isinstance(value, torch.Tensor):
            fail(f"{call_text} returned cache[{name!r}] = {describe(value)}; expected the activation there, "
                 f"{describe(expected[name])}.", "cached-not-a-tensor")
        if value.requires_grad or value.grad_fn is not None:
            fail(f"{call_text} returned cache[{name!r}] still part of the autograd graph (requires_grad="
                 f"{value.requires_grad}); store it detached: output.detach().clone().", "cache-not-detached")
        if not _close(value, expected[name]):
            _diagnose_cached_value(call_text, name, value, expected, expected_names, in_place)


def _diagnose_cached_value(call_text, name, value, expected, expected_names, in_place):
    """Fail for cache[name] = `value`, not the activation there, naming the mistake that explains it."""
    late = [other for other in expected_names if other != name and _close(value, expected[other])]
    if len(expected[name]) > 1 and _close(value, expected[name][0]):
        fail(f"{call_text} returned cache[{name!r}] = {describe(value)}, the activation of the first sequence only "
             f"(output[0]); expected the whole batch, {describe(expected[name])}.", "first-sequence-only")
    if in_place and name.endswith("hook_resid_pre") and _close(value, expected[name.replace("pre", "post")]):
        fail(f"{call_text} (on a model whose blocks add the attention to the residual stream in place, "
             f"`x += attn(x)`) returned cache[{name!r}] = {describe(value)}: the residual stream after that "
             f"in-place addition; at the hook point it was {describe(expected[name])}. output.detach() shares "
             "memory with the activation, so the cache changes with it: store output.detach().clone().", "not-cloned")
    if late:
        fail(f"{call_text} returned cache[{name!r}] = {describe(value)}, the activation at {late[0]!r}. A hook "
             "made in a loop reads the loop's variable when it runs: every hook then stores under (or reads) "
             "the last name. Make each hook in a function of its own, or bind the name as a default argument.",
             "late-binding")
    fail(f"{call_text} returned cache[{name!r}] = {describe(value)}; expected the activation there, "
         f"{describe(expected[name])}.", "wrong-activation")


def _check_cache_copies(call_text, cache, expected_names, logits):
    """No cached tensor shares memory with the logits or with another cached tensor."""
    if "hook_logits" in cache and cache["hook_logits"].data_ptr() == logits.data_ptr():
        fail(f"{call_text} returned cache['hook_logits'] in the same memory as the logits it returned "
             "(output.detach() without clone()): an in-place change of the logits by the caller changes the cache "
             "too. Store output.detach().clone().", "not-cloned")
    storages = collections.Counter(cache[name].untyped_storage().data_ptr() for name in expected_names)
    shared = [name for name in expected_names if storages[cache[name].untyped_storage().data_ptr()] > 1]
    if shared:
        fail(f"{call_text} returned cached tensors that share memory: {shared}. An in-place change of one (by the "
             "model, or by the caller) changes the others; store output.detach().clone() at each hook point.",
             "not-cloned")


def _cached(run_with_cache, model, tokens, call, doing=None, hints=(), **names):
    """What run_with_cache(model, tokens, **names) returned; `call` says so (`doing`: what the check was doing,
    when it says more)."""
    with calling_with_hints(doing or f"calling {call}", hints):
        return run_with_cache(model, tokens, **names)


@check_of("run_with_cache", mistakes=RUN_WITH_CACHE_MISTAKES)
def check_run_with_cache(run_with_cache):
    model, tokens = _small(1201), _tokens(1202, 2, 6)
    first_cache = _check_every_hook_point(run_with_cache, model, tokens)
    _check_names_asked_for(run_with_cache, model, tokens, first_cache)
    _check_cache_of_in_place_model(run_with_cache, tokens)
    _check_own_hook_kept(run_with_cache, model, tokens)
    unknown = ["hook_embed", "blocks.0.hook_resid_pre", "blocks.7.hook_resid_pre"]
    _check_key_error(model, f"run_with_cache(model, tokens, names={unknown})",
                     lambda: run_with_cache(model, tokens, names=unknown), "blocks.7.hook_resid_pre")
    _check_key_error(model, "run_with_cache(model, tokens, names=['hook_embed', 'blocks.0.attn'])",
                     lambda: run_with_cache(model, tokens, names=["hook_embed", "blocks.0.attn"]), "blocks.0.attn")
    _check_raise(model, "run_with_cache(model, tokens)", lambda: run_with_cache(model, tokens))
    _check_other_iterables(run_with_cache, model, tokens, _LISTED)
    # The lesson's trained model: its patterns are those of the induction heads.
    trained = trained_tiny_transformer.load()
    periodic = torch.arange(8).repeat(3)[None] * 3 % 32
    call = "run_with_cache(trained, tokens, names=['blocks.1.attn.hook_pattern'])"
    result = _cached(run_with_cache, trained, periodic, call, f"calling {call} on the lesson's trained model",
                     names=["blocks.1.attn.hook_pattern"])
    _check_cache(call, result, trained, periodic, ["blocks.1.attn.hook_pattern"])


_LISTED = ["blocks.1.attn.hook_z", "hook_embed", "blocks.0.hook_resid_post"]


def _check_every_hook_point(run_with_cache, model, tokens):
    """names=None: one forward pass caches every hook point, and the logits keep their graph."""
    call = "run_with_cache(model, tokens)"
    counts = _Counts(model)
    try:
        result = _cached(run_with_cache, model, tokens, call, f"calling {call} with tokens of shape (2, 6)")
    finally:
        counts.remove()
    if counts.forward != 1:
        fail(f"{call} ran the model {counts.forward} times; run it once, with every hook registered before that "
             "one forward pass.", "runs-model-again")
    _check_cache(call, result, model, tokens, list(model.hook_points()))
    _check_gradient(result[0], model, _embed_gradient(model, tokens, {}), f"{call}, as its logits",
                    ("wrong-gradient", "Return the logits as the model returned them: only the cache is detached."))
    return result[1]


def _check_names_asked_for(run_with_cache, model, tokens, first_cache):
    """A list (a new dict each call, not `first_cache`, what the call before returned), an empty list, and
    predicates, one of which modules that are not hook points would pass too (blocks.1, blocks.1.attn, ...)."""
    call = f"run_with_cache(model, tokens, names={_LISTED})"
    result = _cached(run_with_cache, model, tokens, call, names=_LISTED)
    if isinstance(result, tuple) and len(result) == 2 and result[1] is first_cache:
        fail(f"{call} returned the same dict object as the call before it: a dict kept between calls (at module "
             "level, or a default argument such as cache={}) mixes in what earlier calls cached. Make a new dict "
             "in each call.", "cache-kept-between-calls")
    _check_cache(call, result, model, tokens, _LISTED)
    call = "run_with_cache(model, tokens, names=[])"
    _check_cache(call, _cached(run_with_cache, model, tokens, call, names=[]), model, tokens, [])
    all_names = list(model.hook_points())
    for text, predicate in (("name.endswith('hook_pattern')", lambda name: name.endswith("hook_pattern")),
                            ("name.startswith('blocks.1')", lambda name: name.startswith("blocks.1"))):
        call = f"run_with_cache(model, tokens, names=lambda name: {text})"
        result = _cached(run_with_cache, model, tokens, call, hints=_NOT_ITERABLE, names=predicate)
        _check_cache(call, result, model, tokens,
                     [name for name in all_names if predicate(name)])


def _check_cache_of_in_place_model(run_with_cache, tokens):
    """A model that changes its residual stream in place after the hook point: the cache must not change;
    under no_grad too, where the activations need no detach but still need their copy."""
    model_in_place = _small(1203, in_place=True)
    call = "run_with_cache(model, tokens)"
    doing = f"calling {call} on a model whose blocks add to the residual stream in place"
    result = _cached(run_with_cache, model_in_place, tokens, call, doing)
    _check_cache(call, result, model_in_place, tokens, list(model_in_place.hook_points()), in_place=True)
    with torch.no_grad():
        result = _cached(run_with_cache, model_in_place, tokens, call, doing.replace(
            "on a model", "under torch.no_grad() on a model"))
    _check_cache(f"{call} under torch.no_grad()", result, model_in_place, tokens,
                 list(model_in_place.hook_points()), in_place=True)


def _check_own_hook_kept(run_with_cache, model, tokens):
    """The model's own hooks stay, and still run."""
    fired = []
    own = model.blocks[0].hook_resid_post.register_forward_hook(lambda module, args, output: fired.append(1))
    before = _hook_ids(model)
    _cached(run_with_cache, model, tokens, "", "calling run_with_cache(model, tokens) on a model with a forward hook "
            "of its own")
    _check_hooks(model, before, "run_with_cache(model, tokens)", " (on a model with a hook of its own)")
    if not fired:
        fail("run_with_cache(model, tokens) kept the model's own forward hook on blocks.0.hook_resid_post "
             "registered, but it did not run during the call. Leave the model's hooks alone.", "own-hooks-disabled")
    own.remove()


_NOT_ITERABLE = (("object is not iterable", "predicate-read-as-names", "names may be a function: test callable(names) "
                  "first, and cache the hook points for which names(name) returns True."),)
_NOT_CALLABLE = (("object is not callable", "iterable-read-as-predicate", "names may be any iterable of names, a "
                  "tuple too: test callable(names) for a function, rather than isinstance(names, list)."),)
_ONE_TUPLE = (lambda error: ("tuple-read-as-one-name", "names may be any iterable of names: a tuple holds several "
                             "names, as a list does (only a bare string is one name). Read anything that is neither a "
                             "string nor a function with list(names), rather than testing isinstance(names, list).")
              if isinstance(error, KeyError) else None,)


def _check_other_iterables(run_with_cache, model, tokens, listed):
    """names as any iterable: a tuple, a generator (which can be read only once); and a bare string, one name."""
    call = f"run_with_cache(model, tokens, names={tuple(listed)})"
    result = _cached(run_with_cache, model, tokens, call, hints=_NOT_CALLABLE + _ONE_TUPLE, names=tuple(listed))
    _check_cache(call, result, model, tokens, listed)
    call = f"run_with_cache(model, tokens, names=(name for name in {listed}))"
    result = _cached(run_with_cache, model, tokens, call, hints=_NOT_CALLABLE, names=(name for name in listed))
    if isinstance(result, tuple) and len(result) == 2 and result[1] == {}:
        fail(f"{call} returned an empty cache. A generator can be read only once: checking the names read it to "
             "the end, and nothing was left to register. Make a list of the names first (list(names)).",
             "generator-read-twice")
    _check_cache(call, result, model, tokens, listed)
    name = "blocks.0.hook_resid_post"
    call = f"run_with_cache(model, tokens, names={name!r})"
    one_name = (f"names={name!r} is one name, a bare string: cache that hook point alone. A string is an iterable "
                "of its characters (list('hook_embed') is ['h', 'o', ...]): test isinstance(names, str) first, and "
                "make it a list of one name.")
    result = _cached(run_with_cache, model, tokens, call, hints=(lambda error: ("string-read-as-names", one_name),),
                     names=name)
    if isinstance(result, tuple) and len(result) == 2 and result[1] == {}:
        fail(f"{call} returned an empty cache. {one_name}", "string-read-as-names")
    _check_cache(call, result, model, tokens, [name])


# ---------------------------------------------------------------- run_with_hooks

_TRUTH_VALUE = (("Boolean value of Tensor", "tensor-truth-value", "A tensor has no truth value: `fn(output, name) or "
                 "output` asks for one. Test for None instead: `new = fn(output, name)`, then `output if new is None "
                 "else new` (or return fn's result as it is: a forward hook that returns None keeps the output)."),
                ("unexpected keyword argument 'hook'", "fn-called-with-hook-keyword", "Call fn(output, name), both "
                 "positional, the name a string: TransformerLens calls fn(activation, hook=hook_point) with the "
                 "HookPoint, this exercise does not."),
                ("object has no attribute 'items'", "pairs-read-as-dict", "fwd_hooks is a list of (name, fn) pairs, "
                 "not a dict: it has no .items(); unpack each pair as you loop over the list (a list may name one hook "
                 "point twice, as a dict cannot)."),)


def _own_hooks_on(model, fired):
    """Hooks of the model's own, registered before the call: on the model itself a forward pre-hook that
    changes the tokens and a forward hook that shifts the logits, and on hook_embed and on the hook point
    the call names forward hooks that only record. `fired` records which ran. Returns their handles."""
    def shift_tokens(module, args):
        fired.append("forward pre-hook")
        return ((args[0] + 1) % _SMALL["vocab"],)

    def shift_logits(module, args, output):
        fired.append("forward hook")
        return output + 1

    return [model.register_forward_pre_hook(shift_tokens), model.register_forward_hook(shift_logits),
            model.hook_embed.register_forward_hook(lambda module, args, output: fired.append("hook_embed")),
            model.get_submodule(_OWN_HOOKED_POINT).register_forward_hook(
                lambda module, args, output: fired.append(_OWN_HOOKED_POINT))]


_OWN_HOOKED_POINT = "blocks.0.hook_resid_post"  # a hook point with a hook of the model's own, which the call names too


def _check_own_hooks_run(run_with_hooks, model, tokens):
    """The model's own hooks, on the model itself and on a hook point, are still registered after the
    call, and ran during it with their effect kept."""
    fired = []
    handles = _own_hooks_on(model, fired)
    try:
        double = {"blocks.0.hook_resid_post": lambda a: 2 * a}
        expected, _ = _activations(model, tokens, list(double), replace=double)
        fired.clear()
        before = _hook_ids(model)
        call = "run_with_hooks(model, tokens, [('blocks.0.hook_resid_post', double)])"
        with calling(f"calling {call} on a model with hooks of its own: a forward pre-hook and a forward hook on the "
                     "model itself, and forward hooks on hook_embed and blocks.0.hook_resid_post"):
            logits = run_with_hooks(model, tokens, [("blocks.0.hook_resid_post", lambda a, name: 2 * a)])
        _check_hooks(model, before, call, " (on a model with hooks of its own)")
        for point in ("hook_embed", _OWN_HOOKED_POINT):
            if point not in fired:
                fail(f"{call} kept the model's own forward hook on {point} registered, but it did not run during "
                     "the call. Leave the model's hooks alone.", "own-hooks-disabled")
        skipped = [kind for kind in ("forward pre-hook", "forward hook") if kind not in fired]
        if skipped:
            fail(f"{call} kept the hooks on the model itself registered, but its {' and its '.join(skipped)} did not "
                 "run during the call (the one on hook_embed did). model.forward(tokens) runs the model's code "
                 "without the hooks on the model itself; model(tokens) runs them, as a call of any module does: "
                 "call the model, not its forward.", "forward-called-directly")
        _logits_check(logits, expected, f"{call} (on a model with hooks of its own)")
    finally:
        for handle in handles:
            handle.remove()


def _check_same_hook_point(run_with_hooks, model, tokens, plain):
    """Pairs that name one hook point run in the list's order, each on what the one before returned; a
    None after a replacement keeps that replacement. `plain`: the model's own logits."""
    point = "blocks.1.hook_resid_pre"

    def replaced(fn):
        return _activations(model, tokens, [point], replace={point: fn})[0]

    call = f"run_with_hooks(model, tokens, [({point!r}, times_two), ({point!r}, plus_one)])"
    with calling(f"calling {call}"):
        logits = run_with_hooks(model, tokens, [(point, lambda a, name: 2 * a), (point, lambda a, name: a + 1)])
    _logits_check(logits, replaced(lambda a: 2 * a + 1), call, guesses=[
        (lambda: replaced(lambda a: 2 * (a + 1)), "reverse-order",
         "The functions ran in the reverse order (2 * (a + 1)); run them in the list's order, each on what the one "
         "before returned (register the hooks in that order, without prepend=True)."),
        (lambda: replaced(lambda a: a + 1), "one-fn-per-name",
         "Only the last function of that hook point took effect (a dict by name keeps one function per name)."),
        (lambda: replaced(lambda a: 2 * a), "first-fn-per-name-only",
         "Only the first function of that hook point took effect."),
    ])

    call = f"run_with_hooks(model, tokens, [({point!r}, times_two), ({point!r}, keep)])"
    with calling_with_hints(f"calling {call}", _TRUTH_VALUE):
        logits = run_with_hooks(model, tokens, [(point, lambda a, name: 2 * a), (point, lambda a, name: None)])
    _logits_check(logits, replaced(lambda a: 2 * a), call, guesses=[
        (lambda: plain, "none-restores-original",
                        "keep returned None after times_two had replaced the activation: None keeps the activation "
                        "keep was given, times_two's replacement, not the hook point's original value. On None, keep "
                        "what the function was given (a forward hook that returns None keeps the output it "
                        "received), not the value from before the first function (such as args[0])."),
    ])


def _recording_fns(seen):
    """double, keep and plus_one: functions of (activation, name) that record their call in `seen`."""
    def called_with(activation, name):
        if not isinstance(activation, torch.Tensor) or not isinstance(name, str):
            fail(f"run_with_hooks called a pair's function as fn({describe(activation)}, {describe(name)}); expected "
                 "fn(activation, name): the activation (the hook's output) first, then the hook point's name.",
                 "wrong-fn-arguments")
        seen.append((name, activation.detach().clone()))

    def double(activation, name):
        called_with(activation, name)
        return 2 * activation

    def keep(activation, name):
        called_with(activation, name)
        return None

    def plus_one(activation, name):
        called_with(activation, name)
        return activation + 1
    return double, keep, plus_one


@check_of("run_with_hooks", mistakes=RUN_WITH_HOOKS_MISTAKES)
def check_run_with_hooks(run_with_hooks):
    model, tokens = _small(1211), _tokens(1212, 2, 6)
    plain = _check_three_pairs(run_with_hooks, model, tokens)
    _check_same_hook_point(run_with_hooks, model, tokens, plain)
    # Gradients flow through the activations and their replacements, as in any forward pass.
    call = "run_with_hooks(model, tokens, [('blocks.0.hook_resid_post', double)])"
    expected_gradient = _embed_gradient(model, tokens, {"blocks.0.hook_resid_post": lambda a: 2 * a})
    with calling(f"calling {call} with gradients on"):
        logits = run_with_hooks(model, tokens, [("blocks.0.hook_resid_post", lambda a, name: 2 * a)])
    _check_gradient(logits, model, expected_gradient, call,
                    ("activation-detached", "The gradient stopped at the hook point: pass fn the activation itself, "
                     "not activation.detach(), and return its replacement as it is."))
    # The model's own hooks stay and run; temporary hooks go also when forward raises; unknown names.
    _check_own_hooks_run(run_with_hooks, model, tokens)
    _check_key_error(model, "run_with_hooks(model, tokens, [('hook_embed', keep), ('blocks.0.hook_missing', keep)])",
                     lambda: run_with_hooks(model, tokens, [("hook_embed", lambda a, name: None),
                                                            ("blocks.0.hook_missing", lambda a, name: None)]),
                     "blocks.0.hook_missing")
    _check_key_error(model, "run_with_hooks(model, tokens, [('blocks.0.attn', keep)])",
                     lambda: run_with_hooks(model, tokens, [("blocks.0.attn", lambda a, name: None)]), "blocks.0.attn")
    _check_raise(model, "run_with_hooks(model, tokens, [('blocks.0.hook_resid_post', double)])",
                 lambda: run_with_hooks(model, tokens, [("blocks.0.hook_resid_post", lambda a, name: 2 * a)]))


def _check_three_pairs(run_with_hooks, model, tokens):
    """Three pairs on three hook points: each fn called once with (activation, name), its return replacing the
    activation (None keeping it), and no hook left. Returns the model's own logits."""
    seen = []
    double, keep, plus_one = _recording_fns(seen)
    pairs = [("blocks.0.hook_resid_post", double), ("hook_embed", keep), ("blocks.1.attn.hook_z", plus_one)]
    call = "run_with_hooks(model, tokens, [('blocks.0.hook_resid_post', double), ('hook_embed', keep), " \
           "('blocks.1.attn.hook_z', plus_one)])"
    before = _hook_ids(model)
    with calling_with_hints(f"calling {call}", _TRUTH_VALUE):
        logits = run_with_hooks(model, tokens, pairs)
    _check_hooks(model, before, call)
    expected, _ = _activations(model, tokens, ["blocks.0.hook_resid_post", "blocks.1.attn.hook_z"],
                               replace={"blocks.0.hook_resid_post": lambda a: 2 * a,
                                        "blocks.1.attn.hook_z": lambda a: a + 1})
    _check_names_seen(call, [name for name, _ in seen], pairs)
    plain, activations = _activations(model, tokens)
    for name, activation in seen:
        if name == "hook_embed" and not _close(activation, activations[name]):
            fail(f"{call} called keep(activation, 'hook_embed') with {describe(activation)}; expected the "
                 f"activation at hook_embed, {describe(activations[name])}: pass the hook's output.",
                 "wrong-activation-passed")
    _logits_check(logits, expected, call, guesses=[
        (lambda: plain, "replacement-ignored", "That is the model's output without the replacements: a forward "
                        "hook's return replaces the output, so return what fn returned (None keeps the activation)."),
        (lambda: _activations(model, tokens, ["blocks.1.attn.hook_z"],
                              replace={"blocks.1.attn.hook_z": lambda a: a + 1})[0],
         "late-binding", "Only the last replacement took effect: a lambda made in a loop reads the loop's variables "
         "when it runs; make each hook in a function of its own."),
    ])
    return plain


def _check_names_seen(call, names_seen, pairs):
    """Each pair's function was called once, with its own name."""
    if sorted(names_seen) == sorted(name for name, _ in pairs):
        return
    if len(set(names_seen)) == 1 and len(names_seen) == len(pairs):
        fail(f"{call} called every function with the name {names_seen[0]!r}. A lambda made in a loop reads the "
             "loop's variables when it runs, not when it was made: make each hook in a function of its own "
             "(def hook_for(name, fn): ...), or bind them as default arguments (name=name, fn=fn).", "late-binding")
    fail(f"{call} called the functions with the names {names_seen}; expected each pair's function called "
         "once, with its own name: fn(activation, name).", "wrong-fn-calls")


# ---------------------------------------------------------------- ablate_heads

def _ablated(model, tokens, heads, value, head_axis=2):
    """Logits with each (layer, head) of `heads` set to value(layer, head) (broadcast) at hook_z."""
    replace = {}
    for layer in {layer for layer, _ in heads}:
        chosen = [head for each, head in heads if each == layer]

        def fn(z, layer=layer, chosen=chosen):
            z = z.clone()
            for head in chosen:
                index = (slice(None),) * head_axis + (head,)
                z[index] = value(layer, head, z)
            return z
        replace[f"blocks.{layer}.attn.hook_z"] = fn
    return _activations(model, tokens, list(replace), replace)[0]


def _some_heads_only(model, tokens, heads):
    """Guesses for a submission that ablated only some of `heads` (one per layer, the last, ...)."""
    subsets = [[pair for bit, pair in enumerate(heads) if mask >> bit & 1] for mask in range(1, 2 ** len(heads) - 1)]
    return [(lambda subset=subset: _ablated(model, tokens, subset, lambda layer, head, z: 0), "some-heads-only",
             f"Only {subset} of {heads} were ablated: ablate every (layer, head) pair in heads, also several heads "
             "of one layer together (collect them per layer, or register one hook per pair).") for subset in subsets]


def _ablated_last_position(model, tokens, heads):
    def last_only(layer, head, z):
        value = z[:, :, head].clone()
        value[:, -1] = 0
        return value
    return _ablated(model, tokens, heads, last_only)


def _ablate_call(ablate_heads, model, tokens, heads, kind, mean_cache, call):
    with calling(f"calling {call}"):
        return ablate_heads(model, tokens, heads, kind=kind, mean_cache=mean_cache)


def _check_value_error(model, call, call_it, first, why, mistake):
    """`call_it()` must raise ValueError (`first`: what to check before any forward pass; `why`: why it
    raises; `mistake`: the slug of not raising it), and leave no hook."""
    before = _hook_ids(model)
    raised, returned = _call_expecting(call, call_it, ValueError, f"expected ValueError, before any forward pass: "
                                       f"{first}.", mistake)
    if not raised:
        fail(f"{call} returned {describe(returned)}; expected ValueError: {why}.", mistake)
    _check_hooks(model, before, call, " (which raised ValueError)", left="hooks-left-on-raise")


def _zero_ablation_mistakes(model, tokens, heads, plain):
    """(logits, slug, words) of the known mistakes of kind='zero', each computed only when asked for."""
    def zero(layer, head, z):
        return 0
    layers = {layer for layer, _ in heads}
    return [
        (lambda: plain, "ablation-not-returned", "That is the model's output with no head ablated: return the zeroed "
                        "copy of z from the hook (a forward hook's return replaces the output)."),
        (lambda: _ablated(model, tokens, heads, zero, head_axis=1), "position-taken-for-head",
         "You zeroed a position instead of a head: hook_z is (batch, seq, head, d_head), so a head is z[:, :, head]."),
        (lambda: _ablated(model, tokens, [(h, l) for l, h in heads], zero), "layer-and-head-swapped",
         "You swapped layer and head: each pair is (layer, head)."),
        (lambda: _ablated(model, tokens, [(_SMALL["n_layers"] - 1, h) for _, h in heads], zero), "layer-ignored",
         "You ablated the heads in the last layer whatever their layer: each pair is (layer, head), at "
         "blocks.{layer}.attn.hook_z."),
        *_some_heads_only(model, tokens, heads),
        (lambda: _ablated(model, tokens, [(layer, h) for layer in layers for h in range(_SMALL["n_heads"])], zero),
         "whole-layer-ablated", "You ablated every head of each layer named in heads; ablate only the (layer, head) "
         "pairs given, and leave the other heads of the layer as they were."),
        (lambda: _ablated_last_position(model, tokens, heads), "last-position-only",
         "You ablated the heads at the last position only; ablate them at every position, z[:, :, head]."),
        (lambda: _ablated(model, tokens, heads, lambda layer, head, z: z[:, :, head].mean(dim=0)),
         "batch-mean-for-zero", "You replaced each head by its mean over the batch; kind='zero' replaces it by zeros."),
    ]


def _mean_ablation_mistakes(model, tokens, heads, plain, mean_cache, reference_mean):
    """(logits, slug, words) of the known mistakes of kind='mean', each computed only when asked for."""
    return [
        (lambda: _ablated(model, tokens, heads, lambda layer, head, z: z[:, :, head].mean(dim=0)),
         "mean-of-ablated-batch", "You replaced each head by its mean over the batch being ablated; use the mean of "
         "the reference run, mean_cache[name][:, :, head].mean(dim=0), which the caller gave for that."),
        (lambda: _ablated(model, tokens, heads, lambda layer, head, z:
                          mean_cache[f"blocks.{layer}.attn.hook_z"][:, :, head].mean(dim=(0, 1))),
         "mean-over-positions", "You averaged over the positions too: keep one mean per position, .mean(dim=0) only."),
        (lambda: _ablated(model, tokens, heads, lambda layer, head, z: 0), "zero-for-mean",
         "That is zero ablation; kind='mean' replaces each head by the reference run's mean."),
        (lambda: plain, "ablation-not-returned", "That is the model's output with no head ablated."),
        (lambda: _ablated(model, tokens, [(layer, h) for layer in {layer for layer, _ in heads}
                                          for h in range(_SMALL["n_heads"])], reference_mean),
         "whole-layer-ablated", "You ablated every head of each layer named in heads; ablate only the (layer, head) "
         "pairs given, and leave the other heads of the layer as they were."),
        (lambda: _ablated(model, tokens, heads, lambda layer, head, z:
                          mean_cache[f"blocks.{layer}.attn.hook_z"][-1, :, head]), "reference-sequence-for-mean",
         "You took one sequence of the reference run (the last); use its mean over the batch, "
         "mean_cache[name][:, :, head].mean(dim=0)."),
        (lambda: _ablated(model, tokens, heads, lambda layer, head, z:
                          mean_cache[f"blocks.{layer}.attn.hook_z"][:, :, head].mean()), "mean-over-everything",
         "You averaged over everything, one number per head: keep one mean per position and feature, "
         ".mean(dim=0) only."),
    ]


@check_of("ablate_heads", mistakes=ABLATE_HEADS_MISTAKES)
def check_ablate_heads(ablate_heads):
    model, tokens = _small(1221), _tokens(1222, 3, 6)
    plain = _activations(model, tokens)[0]
    for heads in ([(1, 0)], [(0, 1), (1, 0), (1, 1)]):
        call = f"ablate_heads(model, tokens, {heads}, kind='zero')"
        own = _own_hook(model, "blocks.1.attn.hook_z")
        before = _hook_ids(model)
        logits = _ablate_call(ablate_heads, model, tokens, heads, "zero", None, call)
        _check_hooks(model, before, call, " (on a model with a hook of its own on blocks.1.attn.hook_z)")
        own.remove()
        _logits_check(logits, _ablated(model, tokens, heads, lambda layer, head, z: 0), call,
                      guesses=_zero_ablation_mistakes(model, tokens, heads, plain))
    mean_cache = _check_mean_ablation(ablate_heads, model, tokens, plain)
    _check_value_error(model, "ablate_heads(model, tokens, [(1, 0)], kind='mean') without a mean_cache",
                       lambda: ablate_heads(model, tokens, [(1, 0)], kind="mean"),
                       "check `mean_cache is None` first", "mean ablation needs the reference run's cache",
                       "missing-cache-accepted")
    _check_value_error(model, "ablate_heads(model, tokens, [(1, 0)], kind='max', mean_cache=cache of a reference run)",
                       lambda: ablate_heads(model, tokens, [(1, 0)], kind="max", mean_cache=mean_cache),
                       "check that kind is 'zero' or 'mean' first",
                       "kind is 'zero' or 'mean', and any other kind raises ValueError: a misspelt kind must not "
                       "run as another ablation", "other-kind-accepted")
    _check_value_error(model, "ablate_heads(model, tokens, [], kind='max')",
                       lambda: ablate_heads(model, tokens, [], kind="max"), "check that kind is 'zero' or 'mean' first",
                       "any other kind raises ValueError, also with no heads to ablate: check kind before anything "
                       "else, not inside a hook (with no heads, no hook runs)", "kind-checked-in-hook")
    _check_raise(model, "ablate_heads(model, tokens, [(1, 0)], kind='zero')",
                 lambda: ablate_heads(model, tokens, [(1, 0)], kind="zero"))


def _check_mean_ablation(ablate_heads, model, tokens, plain):
    """Mean ablation with the cache of a reference run (another batch, of another size); then kind='zero'
    with that cache given (the lesson passes one to both kinds): still zeros. Returns the cache."""
    _, mean_cache = _activations(model, _tokens(1223, 5, 6))
    heads = [(0, 0), (1, 1)]
    call = f"ablate_heads(model, tokens, {heads}, kind='mean', mean_cache=cache of a reference run of 5 sequences)"

    def reference_mean(layer, head, z):
        return mean_cache[f"blocks.{layer}.attn.hook_z"][:, :, head].mean(dim=0)

    before = _hook_ids(model)
    logits = _ablate_call(ablate_heads, model, tokens, heads, "mean", mean_cache, call)
    _check_hooks(model, before, call)
    _logits_check(logits, _ablated(model, tokens, heads, reference_mean), call,
                  guesses=_mean_ablation_mistakes(model, tokens, heads, plain, mean_cache, reference_mean))
    call = f"ablate_heads(model, tokens, {heads}, kind='zero', mean_cache=cache of a reference run of 5 sequences)"
    logits = _ablate_call(ablate_heads, model, tokens, heads, "zero", mean_cache, call)
    _logits_check(logits, _ablated(model, tokens, heads, lambda layer, head, z: 0), call, guesses=[
        (lambda: _ablated(model, tokens, heads, reference_mean), "kind-chosen-by-cache",
         "That is mean ablation: kind='zero' replaces each head by zeros, even when a mean_cache is given; "
         "choose by kind, not by whether mean_cache is None."),
    ])
    return mean_cache


# ---------------------------------------------------------------- patching_table

def _at_position(output, stored, q):
    output[:, q] = stored[:, q]


# The patches of known mistakes, as _at_position: each sets position q of a copy of the activation.
def _up_to_position(output, stored, q):  # the patches of earlier positions stay in later runs
    output[:, :q + 1] = stored[:, :q + 1]


def _first_sequence_only(output, stored, q):
    output[:1, q] = stored[:1, q]


def _along_features(output, stored, q):  # q taken as an index of the last axis, the features
    output[..., q] = stored[..., q]


def _first_clean_sequence(output, stored, q):  # the first clean sequence copied into every sequence
    output[:, q] = stored[0, q]


def _clean_batch_mean(output, stored, q):  # the mean of the clean batch copied into every sequence
    output[:, q] = stored[:, q].mean(dim=0)


def _patched_table(model, source, target, metric, names, shift=0, patch=_at_position):
    """The check's patching table: run `target` with position p of each name from the run on `source`.
    `shift` (column p patches p + shift) and `patch`: the tables of known mistakes."""
    _, stored = _activations(model, source, names)
    seq = target.shape[1]
    table = torch.zeros(len(names), seq)
    point = model.hook_points()
    for i, name in enumerate(names):
        for p in range(seq):
            q = p + shift
            if not 0 <= q < seq:
                table[i, p] = float("nan")
                continue

            def patched(module, args, output, q=q):
                output = output.clone()
                patch(output, stored[name], q)
                return output
            with point[name].register_forward_hook(patched), torch.no_grad():
                table[i, p] = float(metric(model(target)))
    return table


def _all_names_at_once(model, clean, corrupted, metric, names):
    """The table when each run patches position p at every name together: all its rows are the same."""
    _, stored = _activations(model, clean, names)
    row = []
    for p in range(corrupted.shape[1]):
        def patched(output, name, p=p):
            output = output.clone()
            _at_position(output, stored[name], p)
            return output
        replace = {name: (lambda output, name=name: patched(output, name)) for name in names}
        row.append(float(metric(_activations(model, corrupted, names, replace)[0])))
    return torch.tensor(row).expand(len(names), -1)


def _all_positions(model, clean, corrupted, metric, names):
    _, stored = _activations(model, clean, names)
    rows = []
    for name in names:
        logits = _activations(model, corrupted, [name], {name: lambda output, name=name: stored[name].clone()})[0]
        rows.append(torch.full((corrupted.shape[1],), float(metric(logits))))
    return torch.stack(rows)


def _table_matches(table, expected, tolerance=1e-4):
    keep = ~expected.isnan()
    return torch.allclose(table.float()[keep], expected[keep], rtol=tolerance, atol=tolerance)


def _shifted(table, shift):
    """`table` whose column p holds column p + shift, NaN where there is none (ignored when compared): the
    table of positions off by one."""
    shifted = torch.full_like(table, float("nan"))
    if shift > 0:
        shifted[:, :-shift] = table[:, shift:]
    else:
        shifted[:, -shift:] = table[:, :shift]
    return shifted


def _check_table(table, expected, call_text, what, guesses):
    if not isinstance(table, torch.Tensor):
        fail(f"{call_text} returned {describe(table)}; expected a float tensor of shape {tuple(expected.shape)}, "
             f"{what}.", "table-not-a-tensor")
    if tuple(table.shape) != tuple(expected.shape):
        hint = " (one row per name, one column per position)" if table.dim() == 2 else ""
        fail(f"{call_text} returned {describe(table)}; expected shape {tuple(expected.shape)}{hint}.",
             "wrong-table-shape")
    if not table.dtype.is_floating_point:
        fail(f"{call_text} returned {describe(table)}; expected a float tensor (the metric is a float).",
             "table-not-float")
    if _table_matches(table.detach(), expected):
        return
    differ = first_difference(table, expected, 1e-4)
    for guess, slug, words in guesses:
        if _table_matches(table.detach(), guess()):
            fail(f"{call_text} returned {describe(table)}; expected {describe(expected)}.{differ} {words}", slug)
    fail(f"{call_text} returned {describe(table)}; expected {describe(expected)}, {what}.{differ}", "wrong-table-value")


def _patching_mistakes(model, clean, corrupted, metric, names, expected):
    """(table, slug, words) of the known mistakes of patching_table, each table computed only when asked for."""
    def unpatched(tokens):
        return float(metric(_activations(model, tokens)[0]))

    return [
        (lambda: _patched_table(model, corrupted, clean, metric, names), "runs-swapped",
         "You patched the wrong run: that is the run on `clean` with activations from `corrupted`. Run on "
         "`corrupted`, with each activation copied from the run on `clean`."),
        (lambda: _patched_table(model, clean, corrupted, metric, names, shift=1), "position-off-by-one",
         "Column p holds the patch of position p + 1: positions are off by one."),
        (lambda: _patched_table(model, clean, corrupted, metric, names, shift=-1), "position-off-by-one",
         "Column p holds the patch of position p - 1: positions are off by one."),
        (lambda: _patched_table(model, clean, corrupted, metric, names, patch=_up_to_position), "patches-accumulate",
         "Column p patches positions 0 to p, not p alone: the patch of earlier positions stays in later runs. "
         "Patch a fresh copy of the corrupted activation in each run (output.clone(), then set position p)."),
        (lambda: _patched_table(model, clean, corrupted, metric, names[:1] * len(names)), "late-binding",
         f"Every row is the patch of {names[0]!r}: patch names[i] in row i (a hook made in a loop reads the loop's "
         "variable when it runs; make each patch in a function of its own, or bind name as a default argument)."),
        (lambda: _all_positions(model, clean, corrupted, metric, names), "all-positions-at-once",
         "Every column patches all the positions at once: patch one position, p, in each run."),
        (lambda: _patched_table(model, clean, corrupted, metric, names, patch=_first_sequence_only),
         "first-sequence-only",
         "You patched only the first sequence of the batch: patch activation[:, p], all of the batch."),
        (lambda: (expected - unpatched(corrupted)) / (unpatched(clean) - unpatched(corrupted)), "share-restored",
         "That is the share of the clean metric restored, (metric - corrupted) / (clean - corrupted), which the "
         "lesson draws; the table holds the metric of each patched run itself."),
        (lambda: torch.full_like(expected, unpatched(clean)), "clean-run-metric",
         "Every entry is the metric of the run on `clean`: run the model on `corrupted`, with one activation "
         "copied from the clean run."),
        (lambda: torch.full_like(expected, unpatched(corrupted)), "patch-not-returned",
         "Every entry is the metric of the corrupted run without any patch: the patch did not take effect (return "
         "the patched copy from the forward hook: its return replaces the output)."),
        (lambda: expected - unpatched(corrupted), "change-not-metric",
         "Every entry is off by the corrupted run's metric: you returned the change a patch makes (the patched "
         "metric minus the corrupted run's); the table holds metric(logits) of each patched run itself."),
        (lambda: _all_names_at_once(model, clean, corrupted, metric, names), "all-names-at-once",
         "Every row is the same: each run patched position p at every name in names at once. Row i patches "
         "names[i] alone: one hook, on names[i], in each run."),
        (lambda: _patched_table(model, clean, corrupted, metric, names, patch=_along_features), "feature-axis-patched",
         "You patched along the feature axis (activation[..., p]): the position is dimension 1, so position p is "
         "activation[:, p], all of the batch and every feature."),
        (lambda: _patched_table(model, clean, corrupted, metric, names, patch=_first_clean_sequence),
         "first-clean-sequence-copied",
         "You copied the first clean sequence into every sequence of the corrupted batch (clean_activation[0, p]): "
         "each sequence takes its own clean value, activation[:, p] = clean_activation[:, p]."),
        (lambda: _patched_table(model, clean, corrupted, metric, names, patch=_clean_batch_mean), "clean-batch-mean",
         "You patched in the mean of the clean batch (clean_activation[:, p].mean(dim=0)): each sequence takes its "
         "own clean value, activation[:, p] = clean_activation[:, p]."),
    ]


def _never_patched(table, expected):
    """The guess of a table whose columns were left 0 (positions never patched): expected with them 0."""
    if not (isinstance(table, torch.Tensor) and table.shape == expected.shape):
        return []
    empty = [p for p in range(expected.shape[1]) if not table[:, p].any() and expected[:, p].any()]
    filled = expected.clone()
    filled[:, empty] = 0
    return [(lambda: filled, "positions-skipped",
             f"Column(s) {empty} hold 0: those positions were never patched. Patch every position p "
             "in range(seq), with seq = corrupted.shape[1].")] if empty else []


@check_of("patching_table", mistakes=PATCHING_TABLE_MISTAKES)
def check_patching_table(patching_table):
    model = _small(1231)
    clean, corrupted = _tokens(1232, 2, 5), _tokens(1233, 2, 5)
    metric = _metric_for(3, 7)
    names = ["blocks.0.hook_resid_pre", "blocks.1.attn.hook_z", "blocks.1.hook_resid_post"]
    call = f"patching_table(model, clean, corrupted, metric, {names}) with tokens of shape (2, 5)"
    own = _own_hook(model, names[0])
    before = _hook_ids(model)
    parameters = [p.detach().clone() for p in model.parameters()]
    with calling(f"calling {call}"):
        table = patching_table(model, clean, corrupted, metric, names)
    _check_hooks(model, before, call)
    if not all(torch.equal(p, q) for p, q in zip(model.parameters(), parameters)):
        fail(f"{call} changed the model's parameters; patching only replaces activations, through hooks.",
             "changes-parameters")
    own.remove()
    expected = _patched_table(model, clean, corrupted, metric, names)
    _check_table(table, expected, call, "the metric of each patched run on `corrupted`",
                 guesses=_patching_mistakes(model, clean, corrupted, metric, names, expected)
                 + _never_patched(table, expected))

    # One hook point, on a batch of one: the lesson's case.
    clean, corrupted = _tokens(1234, 1, 6), _tokens(1235, 1, 6)
    call = "patching_table(model, clean, corrupted, metric, ['hook_embed']) with tokens of shape (1, 6)"
    with calling(f"calling {call}"):
        table = patching_table(model, clean, corrupted, metric, ["hook_embed"])
    _check_table(table, _patched_table(model, clean, corrupted, metric, ["hook_embed"]), call,
                 "the metric of each patched run on `corrupted`", guesses=[])
    _check_metric_raise(model, "patching_table(model, clean, corrupted, failing_metric, ['hook_embed'])",
                        lambda failing: patching_table(model, clean, corrupted, failing, ["hook_embed"]))


# ---------------------------------------------------------------- attribution_table

def _gradients(model, tokens, metric, names):
    """({name: activation}, {name: gradient of metric w.r.t. it}, metric value) of one run."""
    points = model.hook_points()
    outputs = {}
    handles = [points[name].register_forward_hook(lambda module, args, output, name=name: outputs.update({name: output}))
               for name in names]
    try:
        value = metric(model(tokens))
    finally:
        for handle in handles:
            handle.remove()
    gradients = torch.autograd.grad(value, [outputs[name] for name in names])
    return ({name: outputs[name].detach() for name in names}, dict(zip(names, gradients)), value.item())


def _the_estimate_term(clean, corrupted, gradient):
    return (clean - corrupted) * gradient


def _estimate(model, clean, corrupted, metric, names, gradient_run="corrupted", sign=1, base=True, over="position",
              term=_the_estimate_term, first_only=False):
    """The check's attribution table. The other arguments give the tables of known mistakes: the gradient of
    the clean run, R - C, no M, a sum over the positions too, another `term` of (C, R, G) than (C - R) * G,
    the first sequence of the batch only."""
    clean_acts, clean_grads, _ = _gradients(model, clean, metric, names)
    corrupted_acts, corrupted_grads, value = _gradients(model, corrupted, metric, names)
    grads = corrupted_grads if gradient_run == "corrupted" else clean_grads
    rows = []
    for name in names:
        change = sign * term(clean_acts[name], corrupted_acts[name], grads[name])
        change = change[:1] if first_only else change
        per_position = change.transpose(0, 1).reshape(change.shape[1], -1).sum(dim=1)
        if over == "all":
            per_position = per_position.sum().expand_as(per_position)
        rows.append(per_position + (value if base else 0))
    return torch.stack(rows).detach()


def _estimate_cut(model, clean, corrupted, metric, names):
    """The estimate when each hook point's forward hook returned a fresh leaf: only the gradient at the last
    name in forward order reaches it; the others' gradients are those seen through fresh leaves."""
    points = model.hook_points()
    leaves = {}

    def cut(module, args, output, name):
        leaves[name] = output.detach().requires_grad_()
        return leaves[name]
    handles = [points[name].register_forward_hook(lambda m, a, o, name=name: cut(m, a, o, name)) for name in names]
    try:
        value = metric(model(corrupted))
    finally:
        for handle in handles:
            handle.remove()
    gradients = torch.autograd.grad(value, [leaves[name] for name in names], allow_unused=True)
    _, clean_acts = _activations(model, clean, names)
    _, corrupted_acts = _activations(model, corrupted, names)
    rows = []
    for name, gradient in zip(names, gradients):
        gradient = torch.zeros_like(leaves[name]) if gradient is None else gradient
        change = (clean_acts[name] - corrupted_acts[name]) * gradient
        rows.append(change.transpose(0, 1).reshape(change.shape[1], -1).sum(dim=1) + value.item())
    return torch.stack(rows).detach()


def _no_gradient_hint(names):
    def hint(error):
        if isinstance(error, KeyError) and error.args and error.args[0] in names:
            return ("graph-cut-at-hook",
                    f"No gradient reached the activation at {error.args[0]!r}: its tensor hook never ran. A forward "
                    "hook that returns a copy (output.detach().requires_grad_()) cuts the graph there, so nothing "
                    "flows back to the hook points before it. Read the gradient with output.register_hook(...) and "
                    "return None from the forward hook.")
        return None
    return hint


class _Counts:
    """Counts the model's forward passes (a pre-hook on the root) and the backward passes through its
    logits (a tensor hook put on the output by a forward hook); keeps the hook points' outputs."""

    def __init__(self, model):
        self.forward, self.backward, self.outputs = 0, 0, []
        self.handles = [model.register_forward_pre_hook(self._count_forward),
                        model.register_forward_hook(self._watch_output)]
        self.handles += [point.register_forward_hook(lambda module, args, output: self.outputs.append(output))
                         for point in model.hook_points().values()]

    def _count_forward(self, module, args):
        self.forward += 1

    def _watch_output(self, module, args, output):
        if output.requires_grad:
            output.register_hook(self._count_backward)

    def _count_backward(self, grad):
        self.backward += 1

    def remove(self):
        for handle in self.handles:
            handle.remove()


@check_of("attribution_table", mistakes=ATTRIBUTION_TABLE_MISTAKES)
def check_attribution_table(attribution_table):
    model = _small(1241)
    model.requires_grad_(True)
    clean, corrupted = _tokens(1242, 2, 5), _tokens(1243, 2, 5)
    metric = _metric_for(2, 5)
    names = ["hook_embed", "blocks.0.hook_resid_post", "blocks.1.attn.hook_z"]
    call = f"attribution_table(model, clean, corrupted, metric, {names}) with tokens of shape (2, 5)"
    counts = _Counts(model)
    before = _hook_ids(model)
    try:
        with calling_with_hints(f"calling {call}", (_no_gradient_hint(names),)):
            table = attribution_table(model, clean, corrupted, metric, names)
        _check_hooks(model, before, call)
    finally:
        counts.remove()
    retained = sum(bool(getattr(output, "retains_grad", False)) for output in counts.outputs)
    if retained:
        fail(f"{call} called retain_grad() on {retained} of the model's activations. Read each gradient with a tensor "
             "hook instead, registered from the forward hook on the activation: output.register_hook(fn), as in "
             "lesson 06.", "retain-grad")
    if counts.forward != 2:
        fail(f"{call} ran the model {counts.forward} times; attribution patching runs it exactly twice, once on "
             "`clean` and once on `corrupted` (the whole table comes from those two runs and one backward pass).",
             "wrong-number-of-runs")
    if counts.backward != 1:
        fail(f"{call} ran backward through the model's logits {counts.backward} times; expected once, from the "
             "metric of the run on `corrupted`.", "wrong-number-of-backwards")
    model.zero_grad()
    expected = _estimate(model, clean, corrupted, metric, names)
    _check_table(table, expected, call, "M + sum((C - R) * G) at each name and position",
                 guesses=_attribution_mistakes(model, clean, corrupted, metric, names, expected))
    _check_metric_raise(model, f"attribution_table(model, clean, corrupted, failing_metric, {names})",
                        lambda failing: attribution_table(model, clean, corrupted, failing, names))


def _attribution_mistakes(model, clean, corrupted, metric, names, expected):
    """(table, slug, words) of the known mistakes of attribution_table, each computed only when asked for. (Real
    patching is no guess here: it runs the model more than twice, which the check has refused already.)"""
    return [
        (lambda: _estimate(model, clean, corrupted, metric, names, gradient_run="clean"), "gradient-of-clean-run",
         "You used the gradient of the clean run; G is the gradient of the corrupted run's metric, at the "
         "corrupted activations (the run being patched)."),
        (lambda: _estimate(model, clean, corrupted, metric, names, sign=-1), "sign-flipped",
         "You took R - C; the change a patch makes is clean minus corrupted, C - R."),
        (lambda: _estimate(model, clean, corrupted, metric, names, base=False), "metric-left-out",
         "You left out M: the table estimates the patched run's metric, M + the change, not the change alone."),
        (lambda: _estimate(model, clean, corrupted, metric, names, over="all"), "summed-over-positions",
         "You summed over the positions too: keep one entry per position, summing over the batch and the features."),
        (lambda: _shifted(expected, 1), "position-off-by-one",
         "Column p holds the estimate of position p + 1: positions are off by one."),
        (lambda: _shifted(expected, -1), "position-off-by-one",
         "Column p holds the estimate of position p - 1: positions are off by one."),
        (lambda: _estimate(model, clean, corrupted, metric, names) - float(metric(_activations(model, corrupted)[0]))
         + float(metric(_activations(model, clean)[0])), "metric-of-clean-run",
         "You took M from the run on `clean`; M is the metric of the run on `corrupted`, the run being patched."),
        (lambda: _estimate_cut(model, clean, corrupted, metric, names), "graph-cut-at-hook",
         "The gradient at the earlier hook points is zero: a forward hook that returns a copy (output.detach()"
         ".requires_grad_(), or a clone of a detached tensor) cuts the graph there, so nothing flows back to the hook "
         "points before it. Read the gradient with output.register_hook(...) and return None from the forward hook."),
        (lambda: _estimate(model, clean, corrupted, metric, names, first_only=True), "first-sequence-only",
         "That is the estimate of the first sequence of the batch only: sum over the whole batch, and every feature."),
        (lambda: _estimate(model, clean, corrupted, metric, names, term=lambda c, r, g: g),
         "activation-change-left-out",
         "You summed the gradient alone: each term is the change a patch makes, C - R, times the gradient G."),
        (lambda: _estimate(model, clean, corrupted, metric, names, term=lambda c, r, g: (c - r) * r),
         "activation-for-gradient", "You multiplied C - R by the corrupted activation R; the estimate is "
         "M + sum((C - R) * G), with G the gradient of the metric with respect to R."),
    ]


# ---------------------------------------------------------------- steer

def _steered(model, tokens, additions):
    """Logits with each (name, vector) of `additions` added at its hook point (the check's own hooks)."""
    replace = collections.defaultdict(list)
    for name, vector in additions:
        replace[name].append(vector)
    return _activations(model, tokens, list(replace),
                        {name: (lambda a, vs=vs: a + sum(vs)) for name, vs in replace.items()})[0]


def _enter(steer, model, name, vector, alpha, call):
    with calling(f"calling {call}"):
        manager = steer(model, name, vector) if alpha is None else steer(model, name, vector, alpha)
    if not (hasattr(manager, "__enter__") and hasattr(manager, "__exit__")):
        fail(f"{call} returned {describe(manager)}, which a `with` statement cannot use; expected a context manager "
             "(decorate a generator with @contextlib.contextmanager, or write a class with __enter__ and __exit__).",
             "not-a-context-manager")
    return manager


_IN_PLACE = (("modified by an inplace operation", "added-in-place",
              "The steering hook changed the activation in place (output += ..., output.add_(...)). The attention "
              "pattern is the output of a softmax, which autograd keeps to compute the gradient, so backward fails "
              "there. Return output + alpha * vector, a new tensor."),)


def _added_behind_autograd(activation, delta):
    """What a hook that adds through activation.data does: autograd sees neither the addition nor a change."""
    activation.data.add_(delta)
    return activation


_BEHIND_AUTOGRAD = ("The steering hook changed the activation through output.data, where autograd does not see it: the "
                    "attention pattern is a softmax's output, which backward uses as it was, so the gradient is wrong "
                    "without an error. Return output + alpha * vector, a new tensor.")


def _check_steered_gradients(steer, model, tokens, original, before):
    """With gradients on, the logits of a steered forward pass carry its gradient: steering the residual
    stream, and the attention pattern, a softmax's output that backward needs as it was (adding to it in
    place breaks backward)."""
    on_pattern = torch.randn(tokens.shape[1], generator=torch.Generator().manual_seed(1255))
    for name, vector in (("blocks.0.hook_resid_post", original), ("blocks.0.attn.hook_pattern", on_pattern)):
        call = f"steer(model, {name!r}, vector, 3.0)"
        expected = _embed_gradient(model, tokens, {name: lambda a, vector=vector: a + 3.0 * vector})
        with calling(f"calling model(tokens) inside `with {call}:`, with gradients on"):
            with steer(model, name, vector.clone(), 3.0):
                logits = model(tokens)
        behind = (lambda name=name, vector=vector: _embed_gradient(
            model, tokens, {name: lambda a: _added_behind_autograd(a, 3.0 * vector)}), "added-through-data",
            _BEHIND_AUTOGRAD)
        _check_gradient(logits, model, expected, f"model(tokens) inside `with {call}:`",
                        ("steered-detached", "The gradient stopped at the hook point: add alpha * vector to the output "
                         "itself, not to output.detach(), nor under torch.no_grad()."), hints=_IN_PLACE,
                        guesses=(behind,))
        _check_hooks(model, before, f"the `with {call}:` block, run with gradients on")


@check_of("steer", mistakes=STEER_MISTAKES)
def check_steer(steer):
    model, tokens = _small(1251), _tokens(1252, 2, 6)
    plain = _activations(model, tokens)[0]
    vector = torch.randn(16, generator=torch.Generator().manual_seed(1253))
    original = vector.clone()
    name, other = "blocks.0.hook_resid_post", "hook_embed"
    second = torch.randn(16, generator=torch.Generator().manual_seed(1254))
    # The references, computed before the learner's code runs (a hook it leaves would change them).
    references = dict(
        plain=plain,
        expected=_steered(model, tokens, [(name, 3.0 * original)]),
        without_alpha=_steered(model, tokens, [(name, original)]),
        last_only=_activations(model, tokens, [name], {name: lambda a: torch.cat(
            [a[:, :-1], a[:, -1:] + 3.0 * original], dim=1)})[0],
        first_only=_activations(model, tokens, [name], {name: lambda a: torch.cat([a[:1] + 3.0 * original, a[1:]])})[0],
        both=_steered(model, tokens, [(other, 2.0 * second), (name, original)]),
        outer_alone=_steered(model, tokens, [(other, 2.0 * second)]))
    before = _hook_ids(model)
    _check_one_block(steer, model, tokens, name, vector, original, references, before)
    _check_steered_gradients(steer, model, tokens, original, before)
    _check_nested_blocks(steer, model, tokens, name, other, vector, second, references)
    _check_nested_on_one_point(steer, model, tokens, name, vector, second, original, references["plain"])
    _check_block_that_raises(steer, model, name, vector)


def _check_one_block(steer, model, tokens, name, vector, original, references, before):
    """`with steer(model, name, vector, 3.0):` adds 3.0 * vector at `name` inside the block only."""
    plain, expected = references["plain"], references["expected"]
    call = f"steer(model, {name!r}, vector, 3.0)"
    manager = _enter(steer, model, name, vector, 3.0, call)
    with torch.no_grad():
        early = model(tokens)
    if not _close(early, plain):
        fail(f"{call} changed the model's output before its `with` block began (the call itself registered the hook). "
             "Register the hook when the block is entered (in __enter__, or after the call in a generator "
             "decorated with @contextlib.contextmanager), so that the model runs as before outside the block.",
             "registered-on-call")
    with calling(f"entering `with {call}:`"):
        manager.__enter__()
    try:
        with torch.no_grad(), calling(f"calling model(tokens) inside `with {call}:`"):
            inside = model(tokens)
            again = model(tokens)
    finally:
        with calling(f"leaving `with {call}:`"):
            manager.__exit__(None, None, None)
    if not torch.equal(vector, original):
        fail(f"{call} changed `vector` (it now holds {describe(vector)}, it held {describe(original)}): it scaled "
             "it in place. Compute alpha * vector as a new tensor.", "vector-changed")
    _logits_check(inside, expected, f"model(tokens) inside `with {call}:`", wrong="wrong-addition", guesses=[
        (lambda: plain, "addition-not-returned",
         "That is the model's output without steering: the forward hook's return replaces the activation, so give "
         "back output + alpha * vector from it (a hook that returns None keeps the output)."),
        (lambda: references["without_alpha"], "alpha-ignored", "The vector was added without alpha."),
        (lambda: references["last_only"], "last-position-only",
         "alpha * vector was added at the last position only; add it at every batch element and position "
         "(output + alpha * vector broadcasts)."),
        (lambda: references["first_only"], "first-sequence-only",
         "alpha * vector was added to the first sequence of the batch only; add it at every batch element and "
         "position (output + alpha * vector broadcasts)."),
    ])
    if not _close(again, expected):
        fail(f"Inside `with {call}:`, the second forward pass gave {describe(again)}, the first {describe(inside)}: "
             "every forward pass inside the block must add alpha * vector once (a hook that removes itself, or "
             "that adds to a running total, does not).", "not-every-forward-pass")
    with torch.no_grad():
        after = model(tokens)
    if not _close(after, plain):
        fail(f"After the `with {call}:` block, the model still computed {describe(after)}, not its own output "
             f"{describe(plain)}: the steering stayed after the block.{first_difference(after, plain)} Remove the hook "
             "when the block ends.", "steering-left-after-block")
    _check_hooks(model, before, f"the `with {call}:` block")


def _nested_blocks(steer, model, tokens, outer_name, name, vector, second):
    """(what the check calls it, the logits inside both blocks, the logits after the inner block inside the
    outer one) of `with steer(model, name, vector):` inside `with steer(model, outer_name, second, 2.0):`."""
    call = f"steer(model, {name!r}, vector) inside `with steer(model, {outer_name!r}, second, 2.0):`"
    outer = _enter(steer, model, outer_name, second, 2.0, f"steer(model, {outer_name!r}, second, 2.0)")
    with calling(f"entering {call}"), outer:
        inner = _enter(steer, model, name, vector, None, f"steer(model, {name!r}, vector)")
        with inner, torch.no_grad():
            nested = model(tokens)
        with torch.no_grad():
            outer_only = model(tokens)
    return call, nested, outer_only


def _check_nested_blocks(steer, model, tokens, name, other, vector, second, references):
    """alpha defaults to 1.0; blocks nest, and their additions add up."""
    call, nested, outer_only = _nested_blocks(steer, model, tokens, other, name, vector, second)
    _logits_check(nested, references["both"], call, wrong="wrong-nested-steering", guesses=[
        (lambda: references["without_alpha"], "removes-other-hooks",
         "Only the inner block's vector was added: a block must not remove hooks it did not register."),
        (lambda: references["outer_alone"], "default-alpha-wrong",
         "Only the outer block's vector was added: the inner steer (alpha left to its default, 1.0) did nothing."),
    ])
    _logits_check(outer_only, references["outer_alone"],
                  f"model(tokens) after the inner block, inside `with steer(model, {other!r}, second, 2.0):`",
                  wrong="wrong-nested-steering")


def _check_nested_on_one_point(steer, model, tokens, name, vector, second, original, plain):
    """Two blocks on the same hook point, and a hook of the caller's own there: only the block's own hook goes."""
    twice = _steered(model, tokens, [(name, 2.0 * second), (name, original)])
    outer_same = _steered(model, tokens, [(name, 2.0 * second)])
    fired = []
    own = model.hook_points()[name].register_forward_hook(lambda module, args, output: fired.append(1))
    before = _hook_ids(model)
    call, nested, outer_only = _nested_blocks(steer, model, tokens, name, name, vector, second)
    _logits_check(nested, twice, call, wrong="wrong-nested-steering")
    _logits_check(outer_only, outer_same,
                  f"model(tokens) after the inner block, inside `with steer(model, {name!r}, second, 2.0):` (both on "
                  "the same hook point)", wrong="wrong-nested-steering", guesses=[
        (lambda: plain, "removes-other-hooks",
                        "The inner block's end removed the outer block's hook too: remove only the hook this block "
                        "registered, through its handle (not by clearing the hook point's _forward_hooks)."),
    ])
    _check_hooks(model, before, f"two nested steer blocks on {name!r}")
    if len(fired) != 2:
        fail(f"The caller's own forward hook on {name!r} ran {len(fired)} times during the two forward passes inside "
             "the steer blocks: leave the model's own hooks alone.", "own-hooks-disabled")
    own.remove()


def _check_block_that_raises(steer, model, name, vector):
    """Steering goes also when the block raises, and the exception comes through."""
    call = f"with steer(model, {name!r}, vector, 3.0): raise ValueError"
    before = _hook_ids(model)

    def block_that_raises():
        with steer(model, name, vector, 3.0):
            raise ValueError("the block failed, on purpose")

    planted_exception_comes_through(
        f"running `{call}`", block_that_raises, _planted,
        lambda returned: f"`{call}` ended without the block's ValueError: let it reach the caller (a context "
                         "manager whose __exit__ returns True, or a generator that catches it, swallows it).")
    _check_hooks(model, before, f"`{call}`", left="hooks-left-on-raise")
