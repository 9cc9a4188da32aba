"""Checks for lesson 11, the capstone training monitor.

Each check runs the learner's hooks on a fresh seeded model and the same steps on a deep copy
watched by the checker's own hooks, and compares what the two recorded. The models of the cases
are in lesson_11_models, the judgement of the records (and its diagnoses) in lesson_11_records;
here are the named mistakes, the steps of each check and the monitor's own judgement."""

import copy
import math
import random
import traceback
import warnings
from collections.abc import Mapping

import torch
from torch import nn

from hooked.checks.check_api import CheckFailed, LearnerCodeRaised, calling, check_of, fail
from hooked.checks.handles import MISTAKES as HANDLE_MISTAKES
from hooked.checks.hooks_left import global_hooks
from hooked.checks.isolation import torch_state_restored
from hooked.checks.lesson_11_models import (NORM_CASES, NORM_PLAN, STATS_CASES, STRUCTURED, ScaledOutput, mlp,
                                           overflow, set_pass, structured_model)
from hooked.checks.lesson_11_records import (GradRecorder, OutputRecorder, check_fresh, check_requires_grad,
                                            check_training_modes, compare_norms, compare_stats, described_tensor,
                                            global_hooks_left, hooks_left, listed, nonempty_lists, remove_all,
                                            requires_grad, same_tensors, unpack_pair, why_modules_missing)
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.seeding import seeded
from hooked.checks.tensors import describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints, fail_with_hint, hint_for
from hooked.feedback.learner_tracebacks import describe_learner_error, learner_raised_not_implemented


# ---------------------------------------------------------------- named mistakes

# What the shared judgement of records (a dict from name to list, and handles) recognizes, in
# record_activation_stats and track_grad_norms alike.
_RECORDS_MISTAKES = {
    **{slug: HANDLE_MISTAKES[slug] for slug in ("handles-as-dict", "handles-not-a-list", "not-handles")},
    "not-a-pair": "returns something other than a pair (records, handles)",
    "pair-swapped": "returns the pair in the wrong order, (handles, records)",
    "records-not-a-dict": "returns records that are not a dict from name to list",
    "records-kept-between-calls": "keeps the records dict between calls (at module level, or a default argument)",
    "handle-not-returned": "leaves out of the handles it returns the handle of a hook it registered",
    "entries-not-a-list": "records a name's entries as something other than a list",
    "keyed-by-object": "keys the records by the module or parameter objects instead of their names",
    "keyed-by-type": "keys the records by the type of the module instead of its name",
    "keyed-by-position": "keys the records by position numbers instead of names",
    "second-name-recorded": "records a shared module or tied parameter under its second name too",
    "unexpected-names": "records under names that are not the ones expected",
    "nothing-recorded": "records nothing at all (no hook registered, or another dict returned)",
    "name-from-loop-variable": "reads the name from the loop variable when the hook runs: every record under one name",
    "value-requires-grad": "records a tensor that requires grad, keeping every step's graph alive",
    "value-not-one-number": "records a tensor of more than one element where one number is expected",
    "value-not-a-number": "records something other than a number",
    "list-replaced": "replaces a name's list on every call instead of appending to it",
    "reverse-order": "records the entries in reverse order (inserted at the front)",
}
_STATS_MISTAKES = {
    "modules-missing": "hooks only some of the modules of the layer types",
    "tuple-output-skipped": "skips a module whose output is a tuple or list instead of describing its first item",
    "nested-first-item-skipped": "skips a module whose output's first item is itself a tuple or list",
    "model-itself-skipped": "skips the model itself (named_modules()'s '') when it is of a layer type",
    "exact-type-compared": "compares type(module) instead of isinstance, skipping subclasses",
    "nested-modules-skipped": "walks named_children() instead of named_modules(), skipping nested modules",
    "entry-without-tensor": "adds an entry for an output that leads to no tensor (a dict, None, an empty list)",
    "entry-not-a-dict": "records an entry that is not a dict of statistics",
    "entry-keys-missing": "records an entry without the keys mean, std and zero_fraction",
    "stats-of-input": "describes the module's input instead of its output",
    "wrong-mean": "records a mean that is not the output's mean over all its elements",
    "population-std": "records the population std (correction=0, numpy's) instead of output.std()",
    "variance-not-std": "records the variance instead of the standard deviation",
    "wrong-std": "records a std that is not output.std() over all its elements",
    "counts-near-zero": "counts elements near 0 as zeros (a threshold) instead of those exactly 0",
    "nonzero-fraction": "records the fraction of non-zero elements",
    "counts-negatives": "counts the elements <= 0 instead of those exactly 0",
    "zero-count": "records the number of zeros instead of their fraction",
    "wrong-zero-fraction": "records a zero_fraction that is not the fraction of elements exactly 0",
    "hooked-twice": "registers two hooks on a module (a cell run twice, or a module found under two names)",
    "calls-missed": "records fewer entries than the module's calls (a module called twice recorded once)",
    "too-many-entries": "records more entries than the module's calls",
    "structured-output-raised": "assumes every output is a tensor: the hook raises on a tuple, list, dict or None",
    "grad-mode-changed": "changes torch's global grad mode inside a hook",
    "output-changed-in-place": "changes a module's output in place",
    "output-replaced": "returns a value from the forward hook, replacing the output",
    "skips-no-grad": "records nothing under torch.no_grad()",
    "skips-eval-mode": "records nothing in eval mode",
}
_NORMS_MISTAKES = {
    "parameters-missing": "hooks only some of the parameters that require grad",
    "biases-skipped": "hooks the weights only, not the biases",
    "entry-without-gradient": "adds an entry for a backward pass that computed no gradient for the parameter",
    "module-names": "records per module (a module backward hook) instead of per parameter",
    "names-misaligned": "pairs names and parameters that drift apart (names zipped with parameters())",
    "frozen-recorded": "records parameters that do not require grad",
    "wrong-entry-count": "records another number of entries than the backward passes that computed a gradient",
    "nonfinite-hidden": "records a finite norm for a gradient holding inf or NaN (nan_to_num, a filter)",
    "accumulated-grad": "records the norm of the accumulated .grad (a post-accumulate-grad hook), not the pass's "
                        "gradient",
    "grad-before-update": "records the norm of .grad read inside the tensor hook, before it is updated",
    "squared-norm": "records the squared norm instead of the L2 norm",
    "wrong-norm": "records a value that is not the L2 norm of the pass's gradient",
    "requires-grad-changed": "changes a parameter's requires_grad",
    "grad-changed": "changes a gradient or .grad (returns a value from the hook, or edits in place)",
    "grad-detached": "returns grad.detach() from the hook, cutting the graph of backward(create_graph=True)",
    "frozen-hooked": "registers a tensor hook on a frozen parameter, which torch refuses",
}
# What TrainingMonitor's check can see go wrong in the records of a monitor that records on its own (one that
# uses the first two exercises is sent back to them when they fail their checks). Not the others: its cases
# have no output of a layer type that leads to no tensor, no module called twice in a pass, no output near 0,
# and no explanation of missing modules (two ReLUs: one missing is a name read from the loop variable).
_MONITOR_RECORDS_MISTAKES = {slug: {**_RECORDS_MISTAKES, **_STATS_MISTAKES, **_NORMS_MISTAKES}[slug] for slug in (
    "records-not-a-dict", "entries-not-a-list", "keyed-by-object", "keyed-by-type", "keyed-by-position", "unexpected-names",
    "nothing-recorded", "name-from-loop-variable", "value-requires-grad", "value-not-one-number", "value-not-a-number",
    "list-replaced", "reverse-order", "entry-not-a-dict",
    "entry-keys-missing", "stats-of-input", "wrong-mean", "population-std", "variance-not-std", "wrong-std",
    "nonzero-fraction", "counts-negatives", "zero-count", "wrong-zero-fraction", "hooked-twice",
    "too-many-entries", "parameters-missing", "biases-skipped", "names-misaligned", "frozen-recorded",
    "wrong-entry-count", "squared-norm", "wrong-norm", "requires-grad-changed", "grad-changed",
    "structured-output-raised", "frozen-hooked")}
_MONITOR_MISTAKES = {
    "attribute-missing": "has no attribute activation_stats, grad_norms or first_nonfinite",
    "constructor-registers": "registers hooks in the constructor instead of in attach()",
    "records-not-empty-dict": "starts activation_stats or grad_norms as something other than an empty dict",
    "first-nonfinite-not-none": "starts first_nonfinite as something other than None",
    "attach-returns-other": "returns something other than the monitor from attach()",
    "attach-registers-nothing": "registers no hook in attach()",
    "output-changed": "changes a module's output (a hook returns a value)",
    "output-replaced-by-non-tensor": "returns a value that is no tensor from a forward hook, replacing the output",
    "training-changed": "changes the outputs or gradients, so the model trains differently",
    "records-copied": "keeps a copy of the records, made in attach(), instead of the dicts the hooks fill",
    "finite-place-named": "sets first_nonfinite to a place where every value was finite",
    "hooks-left-after-remove": "leaves hooks registered after remove()",
    "callers-hooks-removed": "removes hooks it did not register (clears the hook dicts)",
    "state-dict-changed": "adds keys to the model's state_dict (a buffer registered on it)",
    "remove-clears-records": "clears what was recorded when it removes its hooks",
    "model-changed-after-remove": "leaves the model behaving differently after remove()",
    "records-after-remove": "keeps recording after remove()",
    "remove-twice-raises": "raises when remove() is called a second time",
    "training-mode-changed": "changes the training mode of the model or its modules",
    "anomaly-detection-left-on": "turns on autograd's anomaly detection and leaves it on",
    "grad-mode-left-off": "leaves torch's grad mode off",
    "handles-of-first-attach-lost": "replaces its list of handles on a second attach(), so remove() leaves the "
                                    "first hooks",
    "inf-not-watched": "looks for NaN only, not for inf and -inf",
    "not-a-name": "sets first_nonfinite to something other than a module's or parameter's name",
    "module-named-for-gradient": "names the module that holds the parameter whose gradient was not finite",
    "not-the-first": "names a later place than the first that saw a non-finite value (or overwrites the first)",
    "sum-tested": "tests a sum or a norm for finiteness, which overflows where every element is finite",
    "outputs-not-watched": "does not watch the modules' outputs for non-finite values",
    "nan-not-watched": "looks for inf only, not for NaN",
    "gradients-not-watched": "does not watch the parameters' gradients for non-finite values",
    "model-itself-not-watched": "does not watch the model itself (named_modules()'s '')",
    "empty-name-taken-for-none": "takes the model's own name '' for 'not set' (not self.first_nonfinite) and "
                                 "overwrites it",
    "number-output-counted": "counts an output that is a Python number (inf) as non-finite",
    "nested-outputs-not-watched": "does not look through tuples, lists and dicts at any depth for non-finite tensors",
    "enter-returns-other": "returns something other than the monitor from __enter__",
    "enter-not-attaching": "does not attach in __enter__",
    "exit-not-removing": "does not remove the hooks in __exit__",
    "exit-not-removing-on-error": "does not remove the hooks in __exit__ when the block raises",
    "swallowed-exception": "returns a true value from __exit__, swallowing the block's exception",
    "earlier-exercise-not-written": "uses record_activation_stats or track_grad_norms while it is still the stub",
    "earlier-exercise-not-run": "uses record_activation_stats or track_grad_norms whose cell was not run",
    "earlier-exercise-failing": "uses record_activation_stats or track_grad_norms that fails its own check",
}


# ---------------------------------------------------------------- shared helpers

def _tensors(value):
    """Every tensor in `value`, through tuples, lists and dict values at any depth."""
    if isinstance(value, torch.Tensor):
        return [value]
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (tuple, list)) else ()
    return [tensor for item in items for tensor in _tensors(item)]


def _sgd_step(model, lr):
    """p <- p - lr * p.grad by hand: no optimizer, so the notebook's check() never imports torch._dynamo
    (a torch.optim optimizer, PlainSGD too, imports it on construction outside the grading worker)."""
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.grad is not None:
                parameter.sub_(lr * parameter.grad)


def _run(doing, function, *args):
    with calling(doing):
        return function(*args)


# torch's refusal of a tensor hook on a frozen parameter, and what it means here.
_FROZEN_HOOKED = (("cannot register a hook on a tensor that doesn't require gradient", "frozen-hooked",
                   "A parameter that does not require grad (a frozen one) takes no tensor hook: test its "
                   "requires_grad and give it none."),)


# ---------------------------------------------------------------- record_activation_stats

def _how_output_changed(model, layer_types, x, grad_mode):
    """How the learner's hooks changed a module's output, seen by one more forward pass between a checker's hook
    that runs before them (prepend) and one that runs after them: "in place" when the same object came back with
    other values, "returned" when another object came back, None when neither showed."""
    seen, found, handles = {}, [], []

    def before(name, output):
        described = described_tensor(output)
        seen[name] = (output, None if described is None else described.detach().clone())

    def after(name, output):
        original, values = seen.pop(name, (None, None))
        if output is not original:
            found.append("returned")
        elif values is not None and not torch.equal(described_tensor(output).detach(), values):
            found.append("in place")

    for name, module in model.named_modules():
        if isinstance(module, layer_types):
            handles.append(module.register_forward_hook(
                lambda module, args, output, name=name: before(name, output), prepend=True))
            handles.append(module.register_forward_hook(lambda module, args, output, name=name: after(name, output)))
    try:
        with torch.set_grad_enabled(grad_mode):
            model(x)
    except Exception:
        pass  # a pass only to see how the output changed: what it saw before raising is the answer
    finally:
        for handle in handles:
            handle.remove()
    return found[0] if found else None


# Pass 1 trains with grad mode on, pass 2 runs under torch.no_grad(), pass 3 in eval mode: (grad mode, training).
_STATS_PASSES = ((True, True), (False, True), (True, False))


def _stats_case(seed, build):
    """The case of `seed`: the learner's model, a deep copy watched by the checker's own hooks, and how the
    call is written."""
    case = seeded(seed, build, random.Random(seed))
    case["reference_model"] = copy.deepcopy(case["model"])
    case["reference"] = OutputRecorder(case["reference_model"], case["layer_types"])
    names = "(" + ", ".join(t.__name__ for t in case["layer_types"]) + ",)"
    case["call_text"] = f"record_activation_stats(model, {names})"
    return case


def _stats_input(seed, step, shape):
    x = random_tensor(seed * 10 + step, shape)
    x.view(-1)[:2] = 1e-5  # near 0, not 0: still not a zero after a ReLU
    x.view(-1)[2] = 1e-9  # closer still: torch.isclose(x, 0) (atol 1e-8) takes it for 0
    return x


def _forward_with_stats(case, x, grad_mode):
    """model(x) with the learner's hooks, and the same without them, in `grad_mode`."""
    call_text = case["call_text"]
    with torch.set_grad_enabled(grad_mode):
        expected = case["reference_model"](x)
        doing = f"running model(x) after {call_text}"
        try:
            output = _run(doing, case["model"], x)
        except LearnerCodeRaised as raised:
            if not case["note"]:
                raise
            fail_with_hint(doing, raised.error, case["note"], "structured-output-raised")
        if torch.is_grad_enabled() != grad_mode:
            fail(f"After {call_text}, running model(x) with grad mode {'on' if grad_mode else 'off'} left "
                 f"grad mode {'on' if torch.is_grad_enabled() else 'off'}: a hook changed torch's global "
                 "grad mode (torch.set_grad_enabled(...) called as a statement?). Use `with "
                 "torch.no_grad():` or output.detach(), which change nothing outside the hook.", "grad-mode-changed")
    return output, expected


def _check_output_unchanged(case, x, grad_mode, output, expected):
    if torch.equal(output.detach(), expected.detach()) and output.requires_grad == expected.requires_grad:
        return
    said = (f"After {case['call_text']}, model(x) returned {describe(output)} (requires_grad {output.requires_grad}); "
            f"without your hooks it returns {describe(expected)} (requires_grad {expected.requires_grad}).")
    if _how_output_changed(case["model"], case["layer_types"], x, grad_mode) == "in place":
        fail(f"{said} A hook changed a module's output in place (an in-place operation such as sub_() or abs_() on "
             "the output, or on output.detach(), which shares its memory): compute out of place, or on "
             "output.detach().clone(), and return None.", "output-changed-in-place")
    fail(f"{said} A forward hook that returns a value replaces the output, a detached one cuts training off: "
         "return None.", "output-replaced")


def _check_recorded_in_pass(said, now, kept, grad_mode, training):
    """The pass under no_grad, or in eval mode, added entries: the records `now` are not those `kept` before it."""
    unchanged = kept is not None and now.keys() == kept.keys() and all(
        len(now[key]) == len(kept[key]) and all(a is b for a, b in zip(now[key], kept[key])) for key in now)
    if not grad_mode and any(now.values()) and unchanged:
        fail(f"{said} the records are exactly as they were before that pass: the hooks recorded nothing "
             "under torch.no_grad(). Forward hooks fire under torch.no_grad() too; record there as well "
             "(a test of torch.is_grad_enabled() or output.requires_grad skips it).", "skips-no-grad")
    if not training and any(now.values()) and unchanged:
        fail(f"{said} the records are exactly as they were before that pass: the hooks recorded nothing "
             "in eval mode. Forward hooks fire after model.eval() too, and every call of the module adds "
             "an entry (a test of module.training skips them).", "skips-eval-mode")


def _check_stats_case(record_activation_stats, seed, build):
    case = _stats_case(seed, build)
    model, reference_model, call_text = case["model"], case["reference_model"], case["call_text"]
    globals_before = global_hooks()
    stats, handles = unpack_pair(_run(f"calling {call_text}", record_activation_stats, model, case["layer_types"]),
                             call_text, "(stats, handles)")
    check_fresh(stats, call_text, "the model ran")
    kept = None
    for step, (grad_mode, training) in enumerate(_STATS_PASSES, start=1):
        x = _stats_input(seed, step, case["shape"])
        for copy_ in (model, reference_model):
            copy_.train(training)
        output, expected = _forward_with_stats(case, x, grad_mode)
        _check_output_unchanged(case, x, grad_mode, output, expected)
        mode = ("with grad mode on" if grad_mode else "under torch.no_grad()") + ("" if training else ", in eval mode")
        said = f"After {call_text} and forward pass {step} ({mode}),"
        now = {key: list(entries) for key, entries in stats.items() if isinstance(entries, (list, tuple))}
        _check_recorded_in_pass(said, now, kept, grad_mode, training)
        kept = now
        compare_stats(stats, case["reference"], call_text, said, case["duplicates"],
                       why_modules_missing(model, case["layer_types"], case["reference"].kinds))
    for copy_ in (model, reference_model):
        copy_.train()
    remove_all(handles, call_text, model, globals_before)


@check_of("record_activation_stats", budget_ms=50,
          why="its contract covers the outputs of nn.LSTM, and torch's first nn.LSTM call in a process sets "
              "up oneDNN's LSTM kernel: 23 ms once (0.4 ms the next call), paid by the first check that runs "
              "an LSTM; warm, the check costs 19 ms",
          mistakes={**_RECORDS_MISTAKES, **_STATS_MISTAKES})
def check_record_activation_stats(record_activation_stats):
    for seed, build in STATS_CASES:
        _check_stats_case(record_activation_stats, seed, build)


# ---------------------------------------------------------------- track_grad_norms

def _backward(model, x, create_graph, scale=1.0, nonfinite=False):
    """A loss of `scale` times the mean square of the output: scale 1000 gives gradients above 1, which a hook that
    clamps or clips them would change. With `nonfinite`, the output times a tensor with one inf, summed: the
    gradients hold inf and NaN, and so do their norms."""
    output = model(x)
    if nonfinite:
        upstream = torch.ones_like(output)
        upstream[0, 0] = math.inf
        loss = (output * upstream).sum()
    else:
        loss = scale * output.pow(2).mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # backward(create_graph=True) warns about the .grad reference cycle
        loss.backward(create_graph=create_graph)


class _NormRun:
    """One case of track_grad_norms: the learner's model, a deep copy watched by the checker's tensor hooks, and
    what the copy's .grad held around each backward pass: `accumulated[name][i]`, `stale[name][i]`, the norm of
    .grad after and before the i-th pass that computed a gradient for `name`; `clipped[name][i]` after clipping
    it; `skipped[name]`, the passes that computed none for it."""

    def __init__(self, seed, build):
        self.seed = seed
        self.model, self.width, self.duplicates = seeded(seed, build, random.Random(seed))
        self.reference_model = copy.deepcopy(self.model)
        self.reference = GradRecorder(self.reference_model)
        self.accumulated, self.clipped, self.stale, self.skipped = {}, {}, {}, {}
        self.trainable = [name for name, parameter in self.reference_model.named_parameters()
                          if parameter.requires_grad]
        self.frozen = [name for name, parameter in self.model.named_parameters() if not parameter.requires_grad]

    def backward(self, step, then, call_text):
        """Backward pass `step` on both models, `then` saying which (NORM_PLAN), and what it left in .grad."""
        x = random_tensor(self.seed * 10 + step, (4, self.width))
        create_graph, nonfinite = then == "create_graph", then == "nonfinite"
        scale = 1000.0 if then == "clip" else 1.0
        before_grad = {name: 0.0 if parameter.grad is None else parameter.grad.norm().item()
                       for name, parameter in self.reference_model.named_parameters()}
        before_count = {name: len(self.reference.grads.get(name, [])) for name in self.trainable}
        for trained in (self.model, self.reference_model):
            set_pass(trained, step)
        loss_text = ("(1000 * model(x).pow(2).mean())" if scale != 1 else
                     "(model(x) * g).sum(), g holding an inf," if nonfinite else "model(x).pow(2).mean()")
        _run(f"running {loss_text}.backward({'create_graph=True' if create_graph else ''}) after "
             f"{call_text}", _backward, self.model, x, create_graph, scale, nonfinite)
        _backward(self.reference_model, x, create_graph, scale, nonfinite)
        for name, parameter in self.reference_model.named_parameters():
            if name not in self.trainable:
                continue
            if len(self.reference.grads.get(name, [])) > before_count[name]:
                self.stale.setdefault(name, []).append(before_grad[name])
                self.accumulated.setdefault(name, []).append(parameter.grad.norm().item())
            else:
                self.skipped.setdefault(name, []).append(step)

    def clip(self, step):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=1e-3)
        torch.nn.utils.clip_grad_norm_(self.reference_model.parameters(), max_norm=1e-3)
        for name, parameter in self.reference_model.named_parameters():
            if name in self.trainable and step not in self.skipped.get(name, []):
                self.clipped.setdefault(name, {})[len(self.accumulated[name]) - 1] = parameter.grad.norm().item()

    def compare(self, norms, call_text, said):
        never = [name for name in self.trainable if name not in self.reference.grads]
        compare_norms(norms, self.reference, self.accumulated, self.clipped, call_text, said, self.duplicates,
                       self.frozen, self.stale, self.skipped, never, [name for name, _ in self.model.named_modules()])

    def after(self, then):
        if then == "step":
            for trained in (self.model, self.reference_model):
                _sgd_step(trained, lr=0.1)
        if then in ("step", "create_graph"):
            for trained in (self.model, self.reference_model):
                trained.zero_grad()  # .grad = None; after create_graph=True this breaks the reference cycle


def _check_grads_untouched(model, reference_model, said):
    """The learner's hooks left every .grad as the same model without them has it."""
    for (name, parameter), reference_parameter in zip(model.named_parameters(), reference_model.parameters()):
        mine, theirs = parameter.grad, reference_parameter.grad
        if not same_tensors(mine, theirs):
            fail(f"{said} {name}.grad is {describe(mine)}; without your hooks it is "
                 f"{describe(theirs)}. The hooks must only look: return None, and change "
                 "neither the gradient in place nor .grad.", "grad-changed")
        if mine is not None and mine.requires_grad != theirs.requires_grad:
            fail(f"{said} {name}.grad has requires_grad {mine.requires_grad}; without your hooks it has "
                 f"{theirs.requires_grad}: under backward(create_graph=True) the gradient carries the graph "
                 "of the backward pass, for a second derivative, and a hook that returns grad.detach() "
                 "cuts it. The hooks must only look: return None.", "grad-detached")


@check_of("track_grad_norms", mistakes={**_RECORDS_MISTAKES, **_NORMS_MISTAKES})
def check_track_grad_norms(track_grad_norms):
    for seed, build in NORM_CASES:
        run = _NormRun(seed, build)
        call_text = "track_grad_norms(model)"
        globals_before = global_hooks()
        with calling_with_hints(f"calling {call_text}", _FROZEN_HOOKED):
            returned = track_grad_norms(run.model)
        norms, handles = unpack_pair(returned, call_text, "(norms, handles)")
        check_fresh(norms, call_text, "any backward pass")
        check_requires_grad(run.model, requires_grad(run.reference_model), f"After {call_text}")
        for step, (what, then) in enumerate(NORM_PLAN, start=1):
            run.backward(step, then, call_text)
            said = f"After {call_text} and {what},"
            _check_grads_untouched(run.model, run.reference_model, said)
            if then == "clip":
                run.clip(step)
            run.compare(norms, call_text, said)
            run.after(then)
        remove_all(handles, call_text, run.model, globals_before)


# ---------------------------------------------------------------- TrainingMonitor

class _NonfiniteWatch:
    """The checker's non-finite watch on a copy, as the contract states it; `seen` lists every name
    that saw a non-finite value, in the order the hooks first saw one."""

    def __init__(self, model, outputs=True, gradients=True):
        self.first, self.seen = None, []
        self.parameter_names = [name for name, _ in model.named_parameters()]
        self.names = [name for name, _ in model.named_modules()] + self.parameter_names
        if outputs:
            for name, module in model.named_modules():
                module.register_forward_hook(lambda module, args, output, name=name: self.see(name, output))
        if gradients:
            for name, parameter in model.named_parameters():
                if parameter.requires_grad:
                    parameter.register_hook(lambda grad, name=name: self.see(name, grad))

    def see(self, name, value):
        if any(not torch.isfinite(tensor).all() for tensor in _tensors(value)):
            self.first = self.first if self.first is not None else name
            if name not in self.seen:
                self.seen.append(name)


def _attribute(monitor, name, doing):
    with calling(doing):
        try:
            return getattr(monitor, name)
        except AttributeError:
            fail(f"{doing}: the monitor has no attribute {name!r}. The contract names activation_stats, "
                 "grad_norms and first_nonfinite.", "attribute-missing")


def _new_monitor(TrainingMonitor, model, call_text):
    monitor = _run(f"calling {call_text}", TrainingMonitor, model, (nn.ReLU,))
    left = hooks_left(model)
    if left:
        fail(f"{call_text} registered hooks already ({listed(left)}); the constructor registers nothing, attach() "
             "does.",
             "constructor-registers")
    for name in ("activation_stats", "grad_norms"):
        value = _attribute(monitor, name, f"reading monitor.{name} after {call_text}")
        if not isinstance(value, Mapping) or any(value.values()):
            fail(f"after {call_text}, monitor.{name} is {describe(value)}; expected an empty dict.",
                 "records-not-empty-dict")
    first = _attribute(monitor, "first_nonfinite", f"reading monitor.first_nonfinite after {call_text}")
    if first is not None:
        fail(f"after {call_text}, monitor.first_nonfinite is {first!r}; expected None.", "first-nonfinite-not-none")
    return monitor


_ONLY_LOOK = ("The monitor's hooks only look: a forward hook that returns a value replaces the module's output, a "
              "tensor hook that returns one replaces the gradient (torch.nan_to_num(...), a clamp, the result of a "
              "test); return None from every hook.")


def _check_only_looked(model, reference_model, output, expected, said):
    """Fails when the monitored model's output or gradients differ from those of the same model without a monitor."""
    if not same_tensors(output.detach(), expected.detach()):
        fail(f"{said} model(x) returned {describe(output)}; the same model without a monitor returns "
             f"{describe(expected)}. {_ONLY_LOOK}", "output-changed")
    for (name, parameter), reference in zip(model.named_parameters(), reference_model.parameters()):
        if not same_tensors(parameter.grad, reference.grad):
            fail(f"{said} {name}.grad is {describe(parameter.grad)}; without the monitor it is "
                 f"{describe(reference.grad)}. {_ONLY_LOOK}", "grad-changed")


def _train_step(model, x):
    loss = model(x).pow(2).mean()
    model.zero_grad()
    loss.backward()
    _sgd_step(model, lr=0.05)


class _CallersHooks:
    """The caller's own hooks on the model of _check_attach_train_remove: two registered before attach(), two
    while the monitor is attached; remove() must leave all four."""

    def __init__(self, model):
        self.model, self.seen = model, []
        self.hooks = (lambda module, args, output: self.seen.append("forward"),
                      lambda grad: self.seen.append("gradient"),
                      lambda module, args, output: self.seen.append("later forward"),
                      lambda grad: self.seen.append("later gradient"))

    def register_before_attach(self):
        self.model[1].register_forward_hook(self.hooks[0])
        self.model[2].weight.register_hook(self.hooks[1])

    def register_while_attached(self):
        self.model[0].register_forward_hook(self.hooks[2])
        self.model[2].bias.register_hook(self.hooks[3])

    def gone(self):
        """Where a hook of the caller is no longer registered."""
        model = self.model
        return [where for where, hooks, hook in (
                    ("a forward hook on module '1', registered before attach()", model[1]._forward_hooks,
                     self.hooks[0]),
                    ("a tensor hook on parameter '2.weight', registered before attach()",
                     model[2].weight._backward_hooks, self.hooks[1]),
                    ("a forward hook on module '0', registered while the monitor was attached",
                     model[0]._forward_hooks, self.hooks[2]),
                    ("a tensor hook on parameter '2.bias', registered while the monitor was attached",
                     model[2].bias._backward_hooks, self.hooks[3]))
                if all(registered is not hook for registered in (hooks or {}).values())]


def _attach_between_callers(TrainingMonitor, model, callers):
    monitor = _new_monitor(TrainingMonitor, model, "TrainingMonitor(model, (nn.ReLU,))")
    callers.register_before_attach()
    returned = _run("calling monitor.attach()", monitor.attach)
    if returned is not monitor:
        fail(f"monitor.attach() returned {describe(returned)}; expected the monitor itself (return self), so that "
             "`monitor = TrainingMonitor(model, types).attach()` works.", "attach-returns-other")
    if not hooks_left(model, callers.hooks):
        fail("after monitor.attach(), no hook is registered on the model; attach() registers the hooks.",
             "attach-registers-nothing")
    callers.register_while_attached()
    return monitor


def _train_monitored(model, reference_model, seed, width):
    """Two training steps of the monitored model and of the same model without a monitor."""
    for step in (1, 2):
        x = random_tensor(seed * 10 + step, (3, width))
        doing = "running a training step (forward, zero_grad, backward, step) with the monitor attached"
        try:
            _run(doing, _train_step, model, x)
        except LearnerCodeRaised as raised:
            if isinstance(raised.error, TypeError) and "must be Tensor" in str(raised.error):
                fail_with_hint(doing, raised.error, f"A module received something that is not a tensor. {_ONLY_LOOK}",
                               "output-replaced-by-non-tensor")
            raise
        _train_step(reference_model, x)
    changed = [name for (name, parameter), reference in zip(model.named_parameters(), reference_model.parameters())
               if not torch.equal(parameter, reference)]
    if changed:
        fail(f"After attach() and two training steps, the parameters {listed(changed)} differ from those of the same "
             f"model trained without a monitor: the outputs or the gradients changed. {_ONLY_LOOK}", "training-changed")


def _check_monitor_records(monitor, model, outputs, grads):
    """After two training steps: the monitor's records against the checker's, and first_nonfinite still None."""
    said = "After attach() and two training steps,"
    stats = _attribute(monitor, "activation_stats", "reading monitor.activation_stats")
    norms = _attribute(monitor, "grad_norms", "reading monitor.grad_norms")
    for attribute, records, function in (("activation_stats", stats, "record_activation_stats"),
                                         ("grad_norms", norms, "track_grad_norms")):
        if not isinstance(records, Mapping):  # replaced by what a record function returned: a list, a pair
            fail(f"{said} monitor.{attribute} is {describe(records)}; expected the dict from name to list that "
                 f"{function} returns and the hooks fill.", "records-not-a-dict")
        if not nonempty_lists(records, f"monitor.{attribute}", said):
            fail(f"{said} monitor.{attribute} holds no record. It must be the dict that the hooks fill, the one "
                 f"{function} returns, and not a copy made in attach(): a copy misses what the hooks add later.",
                 "records-copied")
    compare_stats(stats, outputs, "monitor.activation_stats", said + " in monitor.activation_stats", {})
    frozen = [name for name, parameter in model.named_parameters() if not parameter.requires_grad]
    compare_norms(norms, grads, None, {}, "monitor.grad_norms",
                   said + " in monitor.grad_norms", {}, frozen)
    first = _attribute(monitor, "first_nonfinite", "reading monitor.first_nonfinite")
    if first is not None:
        fail(f"{said} monitor.first_nonfinite is {first!r}, but every output and gradient was finite; expected None.",
             "finite-place-named")


def _check_removed(monitor, model, callers, globals_before):
    _run("calling monitor.remove()", monitor.remove)
    left = hooks_left(model, callers.hooks) + global_hooks_left(globals_before)
    if left:
        fail(f"after monitor.remove(), hooks were still registered: {listed(left)}. remove() must remove every hook "
             "the monitor registered: keep each handle, those your two functions return included.",
             "hooks-left-after-remove")
    gone = callers.gone()
    if gone:
        fail(f"monitor.remove() also removed hooks that the monitor did not register: {'; '.join(gone)}, by the "
             "caller. Remove only the monitor's own hooks, by the handles it kept, not by clearing the model's hook "
             "dicts or restoring them as they were at attach().", "callers-hooks-removed")
    doing = "calling monitor.remove() a second time"
    try:
        _run(doing, monitor.remove)
    except LearnerCodeRaised as raised:
        fail_with_hint(doing, raised.error, "remove() must be safe to call twice: the second call finds nothing left "
                       "to remove and does nothing.", "remove-twice-raises")


def _check_as_before_after_remove(monitor, model, reference_model, flags, modes, x):
    """After remove(): the model as the same model that never had a monitor, the records kept and no longer growing."""
    check_requires_grad(model, flags, "After monitor.remove()")
    check_training_modes(model, modes, "After monitor.remove()")
    _check_global_modes("After monitor.remove()")
    added = sorted(set(model.state_dict()) - set(reference_model.state_dict()))
    if added:
        fail(f"After monitor.remove(), model.state_dict() has the keys {added}, which the same model without a "
             "monitor has not (a buffer registered on it?): a checkpoint saved now would not load into the "
             "model as it was. Keep what the monitor records on the monitor.", "state-dict-changed")
    kept = _attribute(monitor, "activation_stats", "reading monitor.activation_stats after monitor.remove()")
    counts = {name: len(entries) for name, entries in kept.items()}
    if not any(counts.values()) or not any(_attribute(monitor, "grad_norms", "reading monitor.grad_norms").values()):
        fail("after monitor.remove(), monitor.activation_stats or monitor.grad_norms is empty; the recorded data "
             "must stay.", "remove-clears-records")
    if not torch.equal(model(x), reference_model(x)):
        fail("after monitor.remove(), model(x) differs from the same model that never had a monitor.",
             "model-changed-after-remove")
    if {name: len(entries) for name, entries in monitor.activation_stats.items()} != counts:
        fail("after monitor.remove(), a forward pass still added to monitor.activation_stats; remove() must stop "
             "the recording.", "records-after-remove")


def _check_attach_train_remove(TrainingMonitor):
    seed = 131
    model, width = seeded(seed, mlp, random.Random(seed))
    reference_model = copy.deepcopy(model)
    outputs, grads = OutputRecorder(reference_model, (nn.ReLU,)), GradRecorder(reference_model)
    globals_before = global_hooks()
    callers = _CallersHooks(model)
    monitor = _attach_between_callers(TrainingMonitor, model, callers)
    flags = requires_grad(reference_model)
    modes = {name: module.training for name, module in reference_model.named_modules()}
    check_requires_grad(model, flags, "After monitor.attach()")
    check_training_modes(model, modes, "After monitor.attach()")
    _train_monitored(model, reference_model, seed, width)
    _check_monitor_records(monitor, model, outputs, grads)
    _check_removed(monitor, model, callers, globals_before)
    _check_as_before_after_remove(monitor, model, reference_model, flags, modes,
                                  random_tensor(seed * 10 + 3, (3, width)))


def _check_attach_twice(TrainingMonitor):
    model, width = seeded(140, mlp, random.Random(140))
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    try:
        _run("calling monitor.attach() a second time", monitor.attach)
    except LearnerCodeRaised:
        pass  # an attach() that refuses to attach twice is a design of its own; remove() must still remove all
    _run("calling monitor.remove()", monitor.remove)
    left = hooks_left(model)
    if left:
        fail(f"after monitor.attach(), monitor.attach() again (a cell run twice) and monitor.remove(), hooks were "
             f"still registered: {listed(left)}. remove() removes every hook the monitor registered, those of both "
             "attach() calls: add each call's handles to the list the monitor keeps instead of replacing the list.",
             "handles-of-first-attach-lost")


def _check_first(first, watch, nan_only, said, what, missed, finite="finite-place-named"):
    """`watch`: the checker's _NonfiniteWatch on a copy that ran the same steps; `missed`, the slug of the case's
    mistake when first_nonfinite stayed None, `finite` when it names a place where every value was finite."""
    if first == watch.first:
        return
    if first is None:
        fail(f"{said} monitor.first_nonfinite is None; {what}", missed)
    if first == nan_only:
        fail(f"{said} monitor.first_nonfinite is {first!r}, the first place with a NaN; {what} "
             "Look for inf and -inf too: torch.isfinite.", "inf-not-watched")
    if not isinstance(first, str) or first not in watch.names:
        fail(f"{said} monitor.first_nonfinite is {describe(first)}, which is neither a named_modules() nor a "
             f"named_parameters() name of the model; {what}", "not-a-name")
    holder = watch.first in watch.parameter_names and isinstance(first, str) and first in watch.names \
        and first not in watch.parameter_names and (first == "" or watch.first.startswith(first + "."))
    if holder:
        fail(f"{said} monitor.first_nonfinite is {first!r}, the module that holds {watch.first!r}; {what} A gradient "
             "is named by its parameter's named_parameters() name.", "module-named-for-gradient")
    if first in watch.seen:
        how = ("watch the gradient of every parameter that requires grad (a tensor hook) for inf as well as NaN "
               "(torch.isfinite)" if watch.first in watch.parameter_names else
               "watch every module that named_modules() lists, by its output (a forward hook, not a pre-hook)")
        fail(f"{said} monitor.first_nonfinite is {first!r}; {what} {first!r} saw a non-finite value too, but "
             f"after {watch.first!r}: {how}, and keep the first name once set.", "not-the-first")
    fail(f"{said} monitor.first_nonfinite is {first!r}, where every value was finite; {what}", finite)


def _check_nonfinite_output(TrainingMonitor):
    seed = 132
    model, width = seeded(seed, mlp, random.Random(seed))
    overflow(model)
    reference_model, nan_model = copy.deepcopy(model), copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    nan_watch = _NonfiniteWatch(nan_model)
    nan_watch.see = lambda name, value: setattr(nan_watch, "first", nan_watch.first or (
        name if torch.isnan(value).any() else None))
    x = random_tensor(seed, (3, width)).abs() + 0.1
    reference_model(x).pow(2).mean().backward()
    nan_model(x).pow(2).mean().backward()
    said = "With `with TrainingMonitor(model, (nn.ReLU,)) as monitor:` around a training step in which the output " \
           "of one layer overflows to inf,"
    expected = copy.deepcopy(model)(x)
    bound = inside = output = None
    with calling("running `with TrainingMonitor(model, (nn.ReLU,)) as monitor:` around model(x).backward()"):
        with TrainingMonitor(model, (nn.ReLU,)) as bound:
            if not hasattr(bound, "first_nonfinite"):
                fail(f"`with TrainingMonitor(model, (nn.ReLU,)) as monitor:` bound {describe(bound)} to monitor; "
                     "__enter__ must return the monitor (after attaching it).", "enter-returns-other")
            if not hooks_left(model):
                fail("inside `with TrainingMonitor(model, (nn.ReLU,)) as monitor:` no hook is registered; "
                     "__enter__ must attach the monitor.", "enter-not-attaching")
            output = model(x)
            output.pow(2).mean().backward()
            inside = getattr(bound, "first_nonfinite", None)
    left = hooks_left(model)
    if left:
        fail(f"after the with block, hooks were still registered: {listed(left)}; __exit__ must remove them.",
             "exit-not-removing")
    if inside == watch.first and bound.first_nonfinite != inside:
        fail(f"{said} monitor.first_nonfinite was {inside!r} inside the with block and is "
             f"{describe(bound.first_nonfinite)} after it: removing the hooks must keep what was recorded.",
             "remove-clears-records")
    _check_first(bound.first_nonfinite, watch, nan_watch.first, said,
                 f"expected {watch.first!r}, the first module (in the order the forward hooks fire) whose output "
                 "contained inf.", "outputs-not-watched")
    _check_only_looked(model, reference_model, output, expected, said)


def _check_nan_output(TrainingMonitor):
    seed = 138
    model, width = seeded(seed, mlp, random.Random(seed))
    with torch.no_grad():
        model[1][0].bias[:1] = math.nan  # NaN from there on, and no inf anywhere
    reference_model = copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    x = random_tensor(seed, (3, width))
    reference_model(x).pow(2).mean().backward()
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    _run("running model(x).pow(2).mean().backward() with the monitor attached",
         lambda: model(x).pow(2).mean().backward())
    _run("calling monitor.remove()", monitor.remove)
    _check_first(monitor.first_nonfinite, watch, None,
                 "After a training step in which one layer's output holds NaN (and no value is inf),",
                 f"expected {watch.first!r}, the first module whose output contained NaN: torch.isfinite is False "
                 "for NaN, inf and -inf alike.", "nan-not-watched")


def _check_large_finite(TrainingMonitor):
    seed = 139
    model, width = seeded(seed, mlp, random.Random(seed))
    with torch.no_grad():
        model[2].bias.fill_(2e38)  # every element finite; sums and norms of them overflow
    reference_model = copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    x = random_tensor(seed, (3, width))
    with torch.no_grad():
        reference_model(x)
    assert watch.first is None
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    with torch.no_grad():
        _run("running model(x) with the monitor attached", model, x)
    _run("calling monitor.remove()", monitor.remove)
    _check_first(monitor.first_nonfinite, watch, None,
                 "After a forward pass whose last layer outputs values near 2e38 (below float32's largest number, "
                 "3.4e38),",
                 "expected None: every element was finite, though their sum and their norm overflow to inf. Test "
                 "each element: torch.isfinite(t).all(), not a sum or a norm.", None, "sum-tested")
    # The same for gradients: each element finite, the norms and some sums beyond float32's largest number.
    model, width = seeded(seed, mlp, random.Random(seed))
    reference_model = copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    (reference_model(x) * 5e37).sum().backward()
    assert watch.first is None and any(p.grad.norm() == math.inf for p in reference_model.parameters()
                                       if p.grad is not None)
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    _run("running (model(x) * 5e37).sum().backward() with the monitor attached",
         lambda: (model(x) * 5e37).sum().backward())
    _run("calling monitor.remove()", monitor.remove)
    _check_first(monitor.first_nonfinite, watch, None,
                 "After a backward pass whose gradients hold elements up to 1.5e38 (below float32's largest number, "
                 "3.4e38),",
                 "expected None: every element of every gradient was finite, though their norms and some of their "
                 "sums overflow to inf. Test each element: torch.isfinite(grad).all(), not a norm or a sum.", None,
                 "sum-tested")


def _check_nonfinite_gradient(TrainingMonitor):
    seed = 133
    model, width = seeded(seed, mlp, random.Random(seed))
    reference_model, forward_only = copy.deepcopy(model), copy.deepcopy(model)
    watch, output_watch = _NonfiniteWatch(reference_model), _NonfiniteWatch(forward_only, gradients=False)
    x = random_tensor(seed, (3, width))
    upstream = torch.ones(3, model[2].out_features)
    upstream[0, 0] = math.inf
    # (output * upstream).sum() rather than output.backward(upstream): a gradient passed to backward makes
    # torch import sympy (1 s); the product lies outside the model, so every module's output stays finite.
    (reference_model(x) * upstream).sum().backward()
    (forward_only(x) * upstream).sum().backward()
    assert watch.first is not None and output_watch.first is None
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    expected = copy.deepcopy(model)(x)
    output = _run("running model(x) with the monitor attached", model, x)
    _run("running (model(x) * g).sum().backward() with the monitor attached, g containing inf",
         lambda: (output * upstream).sum().backward())
    _run("calling monitor.remove()", monitor.remove)
    said = "After a backward pass whose gradients contain inf (every output of the forward pass was finite),"
    _check_first(monitor.first_nonfinite, watch, None, said,
                 f"expected {watch.first!r}, the first parameter (in the order the tensor hooks fire) whose gradient "
                 "contained inf or NaN. The watch covers the gradients of the parameters too.", "gradients-not-watched")
    _check_only_looked(model, reference_model, output, expected, said)


def _check_nonfinite_in_model_itself(TrainingMonitor):
    seed = 135
    body, width = seeded(seed, mlp, random.Random(seed))
    model = ScaledOutput(body)
    x = random_tensor(seed, (3, width))
    reference_model = copy.deepcopy(model)
    watch = _NonfiniteWatch(reference_model)
    reference_model(x).sum().backward()
    assert watch.first == "" and watch.seen[0] == "" and len(watch.seen) > 1
    monitor = _run("calling TrainingMonitor(model, (nn.ReLU,)).attach()",
                   lambda: TrainingMonitor(model, (nn.ReLU,)).attach())
    output = _run("running model(x) with the monitor attached", model, x)
    after_forward = _attribute(monitor, "first_nonfinite", "reading monitor.first_nonfinite")
    said = "With a model whose own forward multiplies every submodule's (finite) output into inf,"
    if after_forward != "":
        _run("calling monitor.remove()", monitor.remove)
        _check_first(after_forward, watch, None, said + " after the forward pass",
                     "expected '', the name named_modules() gives the model itself: watch every module it lists, "
                     "the model included, not only the layers.", "model-itself-not-watched")
    _run("running model(x).sum().backward() with the monitor attached", lambda: output.sum().backward())
    _run("calling monitor.remove()", monitor.remove)
    first = monitor.first_nonfinite
    if first != "":
        fail(f"{said} monitor.first_nonfinite was '' after the forward pass and is {describe(first)} after the "
             "backward pass, whose gradients were not finite either: it must never change once set. '' (the model "
             "itself) is falsy but it is a name: test `self.first_nonfinite is None`, not "
             "`not self.first_nonfinite`.", "empty-name-taken-for-none")


def _check_structured_outputs(TrainingMonitor):
    for seed, probe in ((136, False), (137, True)):
        model, width = seeded(seed, lambda rng: structured_model(rng, probe), random.Random(seed))
        x = random_tensor(seed, (3, 4, width))
        described = STRUCTURED + (", None ('probe') and a Python number, inf ('peak')" if probe else "")
        rule = ("the watch looks at every tensor of an output, through tuples, lists and dicts at any depth, and "
                "counts any other output (None, a number) as finite" if probe else
                "the watch looks at every tensor of an output, through tuples, lists and dicts at any depth")
        reference_model = copy.deepcopy(model)
        outputs = OutputRecorder(reference_model, (nn.LSTM,))
        call_text = "TrainingMonitor(model, (nn.LSTM,))"
        monitor = _run(f"calling {call_text}.attach()", lambda: TrainingMonitor(model, (nn.LSTM,)).attach())
        doing = "running a training step (forward, zero_grad, backward, step) with the monitor attached"
        try:
            _run(doing, _train_step, model, x)
        except LearnerCodeRaised as raised:
            fail_with_hint(doing, raised.error, f"{described}: {rule}.", "structured-output-raised")
        _train_step(reference_model, x)
        _run("calling monitor.remove()", monitor.remove)
        said = f"After {call_text}.attach() and a training step on a model whose modules return tuples, lists and dicts,"
        compare_stats(_attribute(monitor, "activation_stats", "reading monitor.activation_stats"), outputs,
                       "monitor.activation_stats", said + " in monitor.activation_stats", {})
        first = _attribute(monitor, "first_nonfinite", "reading monitor.first_nonfinite")
        if first is not None:
            number = (" Module 'peak' returns a Python number, inf, which is no tensor: any other output than a "
                      "tensor or a tuple, list or dict of them counts as finite." if first == "peak" else "")
            fail(f"{said} monitor.first_nonfinite is {first!r}, but every tensor of every output and gradient was "
                 f"finite; expected None.{number}", "number-output-counted" if number else "finite-place-named")
        if probe:
            continue
        for holder, where in (("split", "inside the list in its list"), ("keyed", "inside the dict in its dict")):
            infinite, reference_model = copy.deepcopy(model), copy.deepcopy(model)
            for copied in (infinite, reference_model):
                getattr(copied, holder).scale.fill_(math.inf)
            watch = _NonfiniteWatch(reference_model)
            with torch.no_grad():
                reference_model(x)
            assert watch.first == holder, (watch.first, holder)
            monitor = _run(f"calling {call_text}.attach()", lambda: TrainingMonitor(infinite, (nn.LSTM,)).attach())
            _run("running model(x) with the monitor attached", infinite, x)
            _run("calling monitor.remove()", monitor.remove)
            _check_first(monitor.first_nonfinite, watch, None,
                         f"With module {holder!r} returning a tensor with inf {where} (every other output finite),",
                         f"expected {holder!r}: {rule}.", "nested-outputs-not-watched")


def _check_exception_in_block(TrainingMonitor):
    seed = 134
    model, width = seeded(seed, mlp, random.Random(seed))
    doing = "running `with TrainingMonitor(model, (nn.ReLU,)):` around a block that raises ValueError"

    def block_that_raises():
        with TrainingMonitor(model, (nn.ReLU,)):
            raise ValueError("raised by the checker inside the with block")

    planted_exception_comes_through(
        doing, block_that_raises, lambda error: isinstance(error, ValueError),
        lambda returned: (f"{doing}: the ValueError did not come out of the with block; __exit__ swallowed it (it "
                          "returned a true value). Return None from __exit__ so the exception goes on.",
                          "swallowed-exception"))
    left = hooks_left(model)
    if left:
        fail(f"{doing}: after the exception left the block, hooks were still registered: {listed(left)}. "
             "__exit__ runs on an exception too: remove the hooks there.", "exit-not-removing-on-error")


# ---------------------------------------------------------------- TrainingMonitor after the earlier exercises

# The grader runs all exercise cells of a lesson in one namespace, so a monitor usually calls the learner's
# own functions: when one of them is unfinished or wrong, the monitor's failure is not the monitor's.
# {name of the earlier exercise: (its heading, its check)}
_EARLIER = {"record_activation_stats": ("Exercise 1", check_record_activation_stats),
            "track_grad_norms": ("Exercise 2", check_track_grad_norms)}


def _code_of(cls):
    """The functions defined in the class body (methods, static and class methods, properties)."""
    try:
        members = list(vars(cls).values())
    except TypeError:
        return []
    functions = []
    for member in members:
        for candidate in (member, getattr(member, "__func__", None), getattr(member, "fget", None)):
            if hasattr(candidate, "__code__") and hasattr(candidate, "__globals__"):
                functions.append(candidate)
    return functions


def _names_used(code):
    names = set(code.co_names)
    for constant in code.co_consts:
        if hasattr(constant, "co_names"):
            names |= _names_used(constant)
    return names


def _finish_first(name, why, seen, mistake):
    exercise, _ = _EARLIER[name]
    fail(f"TrainingMonitor uses your {name}, from {exercise}, which {why}. Finish {exercise} first (until "
         f"check({name}) passes), then check TrainingMonitor again." + (f" What this check saw: {seen}" if seen else ""),
         mistake)


def _blame_earlier_exercise(TrainingMonitor, error, seen):
    """Fails naming the earlier exercise to finish when the monitor's failure comes from one; returns otherwise."""
    learner_error = error.error if isinstance(error, LearnerCodeRaised) else error
    if learner_raised_not_implemented(learner_error):
        frames = [frame for frame, _ in traceback.walk_tb(learner_error.__traceback__)]
        if frames[-1].f_code.co_name in _EARLIER:
            _finish_first(frames[-1].f_code.co_name, "still raises NotImplementedError (it is not written yet)", "",
                          "earlier-exercise-not-written")
        return
    if isinstance(learner_error, NameError) and getattr(learner_error, "name", None) in _EARLIER:
        _finish_first(learner_error.name, "is not defined: run its exercise cell (once it is written)", "",
                      "earlier-exercise-not-run")
    functions = _code_of(TrainingMonitor)
    used = set().union(*(_names_used(function.__code__) for function in functions)) if functions else set()
    namespace = functions[0].__globals__ if functions else {}
    for name in _EARLIER:
        if name in used and callable(namespace.get(name)):
            if not _passes_its_check(name, namespace[name]):
                _finish_first(name, "does not pass its own check yet", seen, "earlier-exercise-failing")


def _passes_its_check(name, learner_object):
    """Whether the learner's earlier exercise `name` passes its own check, run as the grader runs one:
    torch's global state restored afterwards. Any way of not passing (a failure, an error, a stub) counts."""
    try:
        with torch_state_restored():
            _EARLIER[name][1](learner_object)
    except (Exception, SystemExit):
        return False
    return True


def _check_global_modes(after_what):
    """Fails when the learner's code left autograd's anomaly detection on or grad mode off (and puts them back,
    so that the checker's own backward passes run as they should)."""
    anomaly, grad_mode = torch.is_anomaly_enabled(), torch.is_grad_enabled()
    torch.autograd.set_detect_anomaly(False)
    torch.set_grad_enabled(True)
    if anomaly:
        fail(f"{after_what}, autograd's anomaly detection is on (torch.autograd.set_detect_anomaly(True) called?): "
             "a global switch, left on for every model, that slows every backward pass and makes it raise on a "
             "NaN. The monitor watches with its hooks only, and leaves torch's global modes as they were.",
             "anomaly-detection-left-on")
    if not grad_mode:
        fail(f"{after_what}, grad mode is off (torch.set_grad_enabled(False) called?): the monitor must leave "
             "torch's global modes as they were.", "grad-mode-left-off")


@check_of("TrainingMonitor", mistakes={**_MONITOR_RECORDS_MISTAKES, **_MONITOR_MISTAKES})
def check_TrainingMonitor(TrainingMonitor):
    anomaly = torch.is_anomaly_enabled()
    try:
        _check_attach_train_remove(TrainingMonitor)
        _check_attach_twice(TrainingMonitor)
        _check_nonfinite_output(TrainingMonitor)
        _check_nonfinite_gradient(TrainingMonitor)
        _check_nan_output(TrainingMonitor)
        _check_large_finite(TrainingMonitor)
        _check_nonfinite_in_model_itself(TrainingMonitor)
        _check_structured_outputs(TrainingMonitor)
        _check_exception_in_block(TrainingMonitor)
    except CheckFailed as failure:
        _blame_earlier_exercise(TrainingMonitor, failure, failure.message)
        raise
    except LearnerCodeRaised as raised:
        _blame_earlier_exercise(TrainingMonitor, raised,
                                f"{raised.doing} raised {describe_learner_error(raised.error)}")
        found = hint_for(raised.error, _FROZEN_HOOKED)
        if found:
            fail_with_hint(raised.doing, raised.error, found[1], found[0])
        raise
    except NotImplementedError as error:
        _blame_earlier_exercise(TrainingMonitor, error, "")
        raise
    finally:
        torch.autograd.set_detect_anomaly(anomaly)
