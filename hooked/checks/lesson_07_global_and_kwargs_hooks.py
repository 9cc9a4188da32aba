"""Checks for lesson 07, global hooks, keyword arguments, prepend and always_call."""

import random

import torch
import torch.nn.modules.module as module_hooks
from torch import nn

from hooked.checking import LearnerCodeRaised, calling, fail
from hooked.checks.tensors import close, describe, random_tensor

# ---------------------------------------------------------------- shared helpers

_GLOBAL_HOOKS = {
    "register_module_forward_pre_hook": module_hooks._global_forward_pre_hooks,
    "register_module_forward_hook": module_hooks._global_forward_hooks,
    "register_module_full_backward_pre_hook": module_hooks._global_backward_pre_hooks,
    "register_module_full_backward_hook": module_hooks._global_backward_hooks,
}
_OWN_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _global_hook_ids():
    return {kind: set(hooks) for kind, hooks in _GLOBAL_HOOKS.items()}


def _check_nothing_left(before, modules, call_text, how):
    """Fail if a global hook registered since `before`, or any own hook of `modules`, is still there."""
    left = [kind for kind, hooks in _GLOBAL_HOOKS.items() if set(hooks) - before[kind]]
    if left:
        fail(f"After {call_text} {how}, global hooks were still registered (by {', '.join(left)}). A global hook "
             "fires for every module in the process until it is removed: remove it before returning, with "
             "`with handle:` or try/finally, so that it goes also when the forward pass raises.")
    hooked = sorted({name or "''" for name, module in modules for kind in _OWN_HOOKS if getattr(module, kind)})
    if hooked:
        fail(f"After {call_text} {how}, hooks were still registered on the modules {hooked}. Remove every hook you "
             "register before returning, also when the forward pass raises (`with handle:` or try/finally).")


def _call_learner(function, call_text, args, kwargs=None):
    with calling(f"calling {call_text}"):
        try:
            return function(*args, **(kwargs or {}))
        except KeyError as error:
            if error.args and isinstance(error.args[0], nn.Module):
                fail(f"{call_text} raised KeyError: {type(error.args[0]).__name__} module. A global hook fires for "
                     "every module called, also for modules that are not in model.named_modules() (this model "
                     "calls one it keeps in a plain list); skip those instead of looking them up.")
            raise


class _Ghost(nn.Module):
    """Called by the models below but not registered in them (kept in a plain list)."""

    def forward(self, x):
        return x * 1.0


# ---------------------------------------------------------------- summarize_model

class Split(nn.Module):
    """Returns a tuple: the first `k` features, the sum of the rest, and the int k."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, h):
        return h[..., :self.k], h[..., self.k:].sum(-1), self.k


class Tower(nn.Module):
    """Own parameter on the root, a frozen layer registered first, a layer called twice, a tuple
    output, an unregistered module, and a keyword-only argument."""

    def __init__(self, width, hidden, k, out):
        super().__init__()
        self.frozen = nn.Linear(k, out)
        self.frozen.requires_grad_(False)
        self.encoder = nn.Sequential(nn.Linear(width, hidden), nn.ReLU())
        self.shared = nn.Linear(hidden, hidden)
        self.split = Split(k)
        self.scale = nn.Parameter(torch.rand(out) + 0.5)
        self.helpers = [_Ghost()]
        self.calls = 0

    def forward(self, x, *, shift):
        self.calls += 1
        h = self.shared(self.helpers[0](torch.tanh(self.shared(self.encoder(x)))))
        first, rest, k = self.split(h)
        return self.frozen(first) * self.scale + shift + rest.unsqueeze(-1)


class Raises(nn.Module):
    def forward(self, x):
        raise ValueError("the checker's layer raised on purpose")


def _tower(rng):
    width, hidden = rng.randint(3, 6), rng.randint(5, 8)
    k, out = rng.randint(2, hidden - 2), rng.randint(2, 4)
    batch = (rng.randint(2, 4),)
    return Tower(width, hidden, k, out), batch + (width,), {"shift": round(rng.uniform(-1, 1), 3)}


def _nested(rng):
    width, hidden, out = rng.randint(3, 6), rng.randint(3, 6), rng.randint(2, 4)
    model = nn.Sequential(nn.Linear(width, hidden),
                          nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()),
                          nn.Linear(hidden, out))
    return model, (rng.randint(2, 3), rng.randint(2, 3), width), {}


_SUMMARY_CASES = ((701, _tower), (702, _nested))


def _shape_of(value):
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if isinstance(value, (tuple, list)):
        return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]
    return None


def _reference_rows(model, x, kwargs):
    """Rows in start order, with extra keys for the hints: finish index, recursive and trainable counts."""
    rows, open_rows, finished = [], [], []

    def starts(module, args):
        row = {"name": name_of[module], "type": type(module).__name__, "output_shape": None,
               "input_shape": _shape_of(args[0]) if args else None,
               "params": sum(p.numel() for p in module.parameters(recurse=False)),
               "recursive": sum(p.numel() for p in module.parameters()),
               "trainable": sum(p.numel() for p in module.parameters(recurse=False) if p.requires_grad)}
        rows.append(row)
        open_rows.append(row)

    def finishes(module, args, output):
        row = open_rows.pop()
        row["output_shape"] = _shape_of(output)
        finished.append(row)

    name_of = {}
    handles = []
    for name, module in model.named_modules():
        name_of[module] = name
        handles += [module.register_forward_pre_hook(starts), module.register_forward_hook(finishes)]
    try:
        with torch.no_grad():
            output = model(x.clone(), **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return output, rows, finished


_KEYS = ("name", "type", "output_shape", "params")


def _same_shape(got, expected):
    if expected is None:
        return got is None
    if isinstance(expected, tuple):
        return isinstance(got, (tuple, list, torch.Size)) and all(isinstance(n, int) for n in got) \
            and tuple(got) == expected
    return isinstance(got, (tuple, list)) and len(got) == len(expected) \
        and all(_same_shape(g, e) for g, e in zip(got, expected))


def _names(rows):
    return [row.get("name") if isinstance(row, dict) else row for row in rows]


def _check_rows(rows, expected, finished, model, call_text):
    said = f"{call_text} returned rows"
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        fail(f"{call_text} returned {describe(rows)} as rows; expected a list of dicts, one per module call, with "
             f"the keys {list(_KEYS)}.")
    for number, row in enumerate(rows):
        missing_keys = [key for key in _KEYS if key not in row]
        if missing_keys:
            fail(f"{said} where rows[{number}] is {row}; it lacks the keys {missing_keys}. Each row is a dict with "
                 f"the keys {list(_KEYS)}.")
        if not isinstance(row["name"], str):
            fail(f"{said} where rows[{number}] is {row}; its 'name' should be a str, the module's name in "
                 "model.named_modules() ('' for the model itself).")
    got_names, want_names = _names(rows), [row["name"] for row in expected]
    if got_names != want_names:
        model_names = [name for name, module in model.named_modules()]
        hint = ""
        if sorted(got_names, key=str) == sorted(want_names, key=str):
            if got_names == [row["name"] for row in finished]:
                hint = (" Those are the names in the order the calls finish, which is when a forward hook fires: a "
                        "parent finishes after its children. List them in the order the calls start, with a row "
                        "made in a forward pre-hook.")
            else:
                hint = " List the rows in the order the calls start."
        elif "" not in got_names and got_names == [name for name in want_names if name != ""]:
            hint = (" The model itself is missing: its name in named_modules() is '', which is falsy; test "
                    "`module in names`, not the name's truth value.")
        elif got_names == [name for name in model_names if name in want_names]:
            hint = (" That is named_modules() order, one row per module. Record the calls as they happen, with "
                    "hooks: the order of the calls, and a row for every call.")
        elif len(set(got_names)) == len(got_names) and sorted(set(want_names), key=str) == sorted(got_names, key=str):
            hint = (" A module the model calls twice ('shared') must get a row per call; a dict keyed by the name "
                    "keeps only one. Append a row on every call.")
        elif any(name not in model_names for name in got_names):
            hint = (" There are rows for modules that are not in model.named_modules() (a global hook also fires "
                    "for the module this model keeps in a plain list); give them no row.")
        fail(f"{said} with the names {got_names}; expected {want_names}, one per call in the order the calls start "
             f"('' is the model itself).{hint}")
    for number, (row, want) in enumerate(zip(rows, expected)):
        where = f"{said} where rows[{number}] (name {want['name']!r}) is {row}"
        if row["type"] != want["type"]:
            fail(f"{where}; its 'type' should be {want['type']!r}, the class's name, type(module).__name__.")
        if row["params"] != want["params"]:
            hint = ""
            if row["params"] == want["recursive"]:
                hint = (" That counts the parameters of its submodules too; count only its own, "
                        "module.parameters(recurse=False).")
            elif row["params"] == want["trainable"]:
                hint = " That leaves out the frozen parameters (requires_grad False); count them too."
            elif want["params"] and row["params"] == len(list(model.get_submodule(want["name"]).parameters(
                    recurse=False))):
                hint = " That is the number of parameter tensors; count their elements, p.numel()."
            fail(f"{where}; its 'params' should be {want['params']}, the number of elements of the module's own "
                 f"parameters, frozen ones included.{hint}")
        if not _same_shape(row["output_shape"], want["output_shape"]):
            hint = ""
            if isinstance(want["output_shape"], list):
                hint = (" The module returned a tuple: give a list with the shape tuple of each tensor item and None "
                        "for each other item.")
            elif _same_shape(row["output_shape"], want["input_shape"]):
                hint = (" That is the shape of the module's input. The output exists only when the call finishes: "
                        "take its shape in a forward hook.")
            elif any(_same_shape(row["output_shape"], other["output_shape"]) for other in expected if other is not want):
                hint = (" That is the output shape of another call. Fill in the row its own call opened: calls nest, "
                        "so a forward hook belongs to the most recently started call that has not finished.")
            fail(f"{where}; its 'output_shape' should be {want['output_shape']}.{hint}")


def check_summarize_model(summarize_model):
    for seed, build in _SUMMARY_CASES:
        rng = random.Random(seed)
        torch.manual_seed(seed)
        model, shape, kwargs = build(rng)
        x = random_tensor(seed, shape)
        expected_output, expected, finished = _reference_rows(model, x, kwargs)
        shown = ", ".join([f"x of shape {shape}"] + [f"{key}={value}" for key, value in kwargs.items()])
        call_text = f"summarize_model(model, {shown})"
        before = _global_hook_ids()
        modules = list(model.named_modules()) + [("(an unregistered module the model calls)", m)
                                                for m in getattr(model, "helpers", [])]
        try:
            result = _call_learner(summarize_model, call_text, (model, x.clone()), kwargs)
        except LearnerCodeRaised as error:
            if isinstance(error.error, TypeError) and "shift" in str(error.error):
                fail(f"{call_text} raised TypeError: {error.error}. Pass the keyword arguments on to the model: "
                     "model(*inputs, **kwargs).")
            if isinstance(error.error, TypeError) and "not tuple" in str(error.error):
                fail(f"{call_text} raised TypeError: {error.error}. `inputs` is a tuple of the positional "
                     "arguments: unpack it, model(*inputs, **kwargs).")
            raise
        _check_nothing_left(before, modules, call_text, "returned")
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            fail(f"{call_text} returned {describe(result)}; expected a pair (output, rows).")
        output, rows = result
        calls = getattr(model, "calls", 2) - 1  # the reference ran it once (a model without a counter: as if once)
        if calls != 1:
            fail(f"{call_text} ran the model {calls} times; run it once, with the hooks registered, and return that "
                 "call's output with the rows it recorded.")
        if not close(output, expected_output):
            fail(f"{call_text} returned {describe(output)} as the output; the model returns "
                 f"{describe(expected_output)}. Return what model(*inputs, **kwargs) returned, and let the hooks "
                 "return None so that they change nothing.")
        _check_rows(rows, expected, finished, model, call_text)
    _check_raising(summarize_model)


def _check_raising(summarize_model):
    torch.manual_seed(709)
    width = random.Random(709).randint(3, 6)
    model = nn.Sequential(nn.Linear(width, width), nn.Sequential(nn.ReLU(), Raises()))
    call_text = f"summarize_model(model, x of shape (2, {width})) on a model whose layer '1.1' raises ValueError"
    before = _global_hook_ids()
    try:
        with calling(f"calling {call_text}"):
            summarize_model(model, random_tensor(709, (2, width)))
    except LearnerCodeRaised as error:
        raised = error.error
        if not isinstance(raised, ValueError) or "on purpose" not in str(raised):
            cause = raised.__cause__ or raised.__context__
            if isinstance(cause, ValueError) and "on purpose" in str(cause):
                fail(f"{call_text} raised {type(raised).__name__}: {raised}, made from the model's ValueError; the "
                     "model's ValueError must reach the caller unchanged. Don't catch it: a `with handle:` block or "
                     "try/finally removes the hooks and lets the exception go on.")
            raise
    else:
        fail(f"{call_text} returned normally; the model's ValueError must reach the caller unchanged. Don't catch "
             "it: a `with handle:` block or try/finally removes the hooks and lets the exception go on.")
    _check_nothing_left(before, list(model.named_modules()), call_text, "raised")


# ---------------------------------------------------------------- find_first_nonfinite

class Log(nn.Module):
    def forward(self, x):
        return torch.log(x)


class Exp(nn.Module):
    def forward(self, x):
        return torch.exp(x)


class Triple(nn.Module):
    """Returns (x, log(x), x): only the middle item holds NaN (where x < 0)."""

    def forward(self, x):
        return x, torch.log(x), x


class Huge(nn.Module):
    """Finite outputs between 1e38 and float32's largest number (3.4e38): a sum of them overflows to inf."""

    def forward(self, x):
        return 1e38 + 1e37 * torch.tanh(x).abs()


class GradProbe(nn.Module):
    """Records whether gradients were on when it was called."""

    def __init__(self):
        super().__init__()
        self.grad_enabled = []

    def forward(self, x):
        self.grad_enabled.append(torch.is_grad_enabled())
        return x


class Chain(nn.Module):
    """body (a Sequential with the culprit inside), then a probe, an unregistered module, a head; the
    root may finish with a square root of negative values, its own non-finite output."""

    def __init__(self, body, width, root_sqrt=False, ghost=None):
        super().__init__()
        self.body = body
        self.probe = GradProbe()
        self.head = nn.Linear(width, 2)
        self.helpers = [ghost or _Ghost()]
        self.root_sqrt = root_sqrt

    def forward(self, x):
        h = self.body(x)
        if isinstance(h, tuple):
            h = h[0]
        out = self.head(self.helpers[0](self.probe(h)))
        return torch.sqrt(out - 100.0) if self.root_sqrt else out


def _nan_case(width):
    # the log makes NaN in some elements only; the Tanh keeps them where they are, the head spreads them to all
    return Chain(nn.Sequential(nn.Linear(width, width), Log(), nn.Tanh()), width)


def _inf_case(width):
    # exp of large values is +inf; the Linear after it mixes +inf and -inf weights into NaN
    body = nn.Sequential(nn.Linear(width, width), Exp(), nn.Linear(width, width))
    with torch.no_grad():
        body[0].weight.mul_(200.0)
    return Chain(body, width)


def _tuple_case(width):
    return Chain(nn.Sequential(nn.Linear(width, width), Triple()), width)


def _finite_case(width):
    # Huge's outputs are finite; the Tanh after it brings them back to at most 1
    return Chain(nn.Sequential(nn.Linear(width, width), Huge(), nn.Tanh()), width)


def _root_case(width):
    return Chain(nn.Sequential(nn.Linear(width, width), nn.Tanh()), width, root_sqrt=True)


def _ghost_case(width):
    # the first NaN comes from a module the model holds in a plain list, not in named_modules()
    return Chain(nn.Sequential(nn.Linear(width, width), nn.Tanh()), width, ghost=Log())


_NONFINITE_CASES = ((711, _nan_case), (712, _inf_case), (713, _tuple_case), (714, _finite_case), (715, _root_case),
                    (716, _ghost_case))


def _answers(model, x):
    """The right answer and what typical mistakes would give, from one pass with per-module hooks."""
    name_of = {module: name for name, module in model.named_modules()}
    finished, started_inputs = [], []

    def tensors(value):
        if isinstance(value, torch.Tensor):
            return [value]
        if isinstance(value, (tuple, list)):
            return [item for item in value if isinstance(item, torch.Tensor)]
        return []

    def pre(module, args):
        started_inputs.append((name_of[module], [t.clone() for t in tensors(args)]))

    def post(module, args, output):
        finished.append((name_of[module], [t.clone() for t in tensors(output)], isinstance(output, torch.Tensor)))

    handles = []
    for module in name_of:
        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    try:
        with torch.no_grad():
            model(x.clone())
    finally:
        for handle in handles:
            handle.remove()
    model.probe.grad_enabled.clear()

    def first(records, test, tensor_only=False):
        for name, values, *rest in records:
            if tensor_only and not rest[0]:
                continue
            if any(test(t) for t in values):
                return name
        return None

    not_finite = lambda t: not torch.isfinite(t).all()  # noqa: E731
    bad = [name for name, values, is_tensor in finished if any(not_finite(t) for t in values)]
    return {
        "right": first(finished, not_finite),
        "nan_only": first(finished, lambda t: torch.isnan(t).any()),
        "all_bad": first(finished, lambda t: not torch.isfinite(t).any()),
        "by_sum": first(finished, lambda t: not torch.isfinite(t.sum())),
        "tensor_only": first(finished, not_finite, tensor_only=True),
        "last": bad[-1] if bad else None,
        "by_input": first(started_inputs, not_finite),
        "types": {name: type(module).__name__ for module, name in name_of.items()},
        "unregistered": "head" in bad and not any(not_finite(t) for name, values, is_tensor in finished
                                                 if name.startswith("body") for t in values),
    }


def _nonfinite_hint(got, answers, right):
    if answers["unregistered"] and got is None:
        return (" The first NaN comes from a module the model keeps in a plain list, not in named_modules(): "
                "ignore that module and keep looking; the next module of the model is the answer.")
    if right == "" and got is None:
        return (" The model itself is the first: its own forward makes the NaN, after every submodule returned "
                "finite outputs. Hook the model too, not only its layers; and its name in named_modules() is '', "
                "which is falsy: compare with `is None` (or keep a flag), not by truth value.")
    if got == answers["last"] and got != right:
        return (" That is the last module with a non-finite output: the model (or a parent) returns after its "
                "children, so its forward hook fires later. Keep the first one found, in the order the forward "
                "hooks fire (not the order of named_modules(), where the model itself comes first), and ignore "
                "the rest.")
    if right is None and got == answers["by_sum"]:
        return (f" The output of {got!r} is finite, only large (over 1e38): a sum or a norm of it overflows to inf. "
                "Test the elements themselves, torch.isfinite(t).all().")
    if got is not None and got == answers["all_bad"] and got != right:
        return (" That is the first output in which *every* element is non-finite; one NaN or inf is enough. "
                "torch.isfinite(t).all() is False as soon as one element is not finite.")
    if got == answers["nan_only"] and got != right:
        return (" The culprit's output holds infinities but no NaN: torch.isnan misses them; test "
                "torch.isfinite(...).all().")
    if got == answers["tensor_only"] and got != right:
        return (" The culprit returns a tuple, with the non-finite tensor among its items: look at every tensor in "
                "a tuple or list output.")
    if got == answers["by_input"] and got != right:
        return (" That is the first module whose *input* is not finite, the one after the culprit. Look at "
                "outputs, in a forward hook (a pre-hook sees only the inputs).")
    if right is not None and isinstance(got, str) and got == answers["types"].get(right):
        return (" That is the class of the module; return its name in model.named_modules(), which says where it "
                "is in the model.")
    if right is not None and got is not None and right.startswith(f"{got}.") or (got == "" and right):
        return (" That is a parent of the culprit: a parent's output holds its children's NaN too, but it returns "
                "after them. Keep the first output found, in the order the forward hooks fire.")
    return ""


def check_find_first_nonfinite(find_first_nonfinite):
    for seed, build in _NONFINITE_CASES:
        rng = random.Random(seed)
        width, batch = rng.randint(3, 6), rng.randint(3, 5)
        torch.manual_seed(seed)
        model = build(width)
        x = random_tensor(seed, (batch, width))
        answers = _answers(model, x)
        right = answers["right"]
        call_text = f"find_first_nonfinite(model, x of shape {(batch, width)})"
        before = _global_hook_ids()
        modules = list(model.named_modules()) + [("(an unregistered module the model calls)", model.helpers[0])]
        got = _call_learner(find_first_nonfinite, call_text, (model, x.clone()))
        _check_nothing_left(before, modules, call_text, "returned")
        if got != right or type(got) is not type(right):
            fail(f"{call_text} returned {describe(got)}; expected {right!r}"
                 f"{', since every output is finite' if right is None else ''}.{_nonfinite_hint(got, answers, right)}")
        if len(model.probe.grad_enabled) > 1:
            fail(f"{call_text} ran the model {len(model.probe.grad_enabled)} times; run it once, with the hook "
                 "registered, and take the answer from that pass.")
        if any(model.probe.grad_enabled):
            fail(f"{call_text} ran the model with gradients on; run it under torch.no_grad() (forward hooks fire "
                 "there too, and no graph is built).")


CHECKS = {
    "summarize_model": check_summarize_model,
    "find_first_nonfinite": check_find_first_nonfinite,
}
