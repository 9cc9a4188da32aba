"""Checks for lesson 07, global hooks, keyword arguments, prepend and always_call."""

import contextlib
import numbers
import random

import torch
from torch import nn

from hooked.checks.check_api import LearnerCodeRaised, calling, check_of, fail
from hooked.checks.event_predictions import EventPrediction, Rule, prediction_check
from hooked.checks.hooks_left import (CALL_HOOK_KINDS, MODULE_HOOK_DICTS, global_hook_registrar, global_hooks,
                                     global_hooks_added)
from hooked.checks.planted_exceptions import planted_exception_comes_through
from hooked.checks.tensors import close, describe, random_tensor
from hooked.checks.torch_error_hints import calling_with_hints

# ---------------------------------------------------------------- shared helpers

_OWN_HOOKS = tuple(MODULE_HOOK_DICTS[kind] for kind in CALL_HOOK_KINDS)


def _check_nothing_left(before, modules, call_text, how):
    """Fail if a global hook registered since `before`, or any own hook of `modules`, is still there."""
    left = [global_hook_registrar(name) for name in global_hooks_added(before)]
    if left:
        fail(f"After {call_text} {how}, global hooks were still registered (by {', '.join(left)}). A global hook "
             "fires for every module in the process until it is removed: remove it before returning, with "
             "`with handle:` or try/finally, so that it goes also when the forward pass raises.")
    hooked = sorted({name or "''" for name, module in modules for kind in _OWN_HOOKS if getattr(module, kind)})
    if hooked:
        fail(f"After {call_text} {how}, hooks were still registered on the modules {hooked}. Remove every hook you "
             "register before returning, also when the forward pass raises (`with handle:` or try/finally).")


def _module_key_error_hint(error):
    if isinstance(error, KeyError) and error.args and isinstance(error.args[0], nn.Module):
        return (f"The KeyError is a {type(error.args[0]).__name__} module. A global hook fires for every module "
                "called, also for modules that are not in model.named_modules() (this model calls one it keeps in "
                "a plain list); skip those instead of looking them up.")
    return None


def _call_learner(function, call_text, args, kwargs=None):
    with calling_with_hints(f"calling {call_text}", (_module_key_error_hint,)):
        return function(*args, **(kwargs or {}))


def _modes(model):
    return [(name, module.training) for name, module in model.named_modules()]


def _check_modes_kept(modes_before, model, call_text, how, grad_advice):
    """Fail if the call left grad mode off or changed the train/eval mode of a module (both are put back first,
    so that the checks after this one see the state they expect)."""
    if not torch.is_grad_enabled():
        torch.set_grad_enabled(True)
        fail(f"After {call_text} {how}, gradients were off: it left torch's grad mode changed (as "
             f"torch.set_grad_enabled(False) does until it is set back). {grad_advice}")
    changed = [name or "''" for (name, was), (_, now) in zip(modes_before, _modes(model)) if was != now]
    if changed:
        for (name, was), module in zip(modes_before, model.modules()):
            module.training = was
        fail(f"After {call_text} {how}, the modules {changed} were in {'eval' if modes_before[0][1] else 'train'} "
             "mode: it left the model's mode changed (model.eval() sets it for good). Leave the model's train or "
             "eval mode as the caller had it.")


@contextlib.contextmanager
def _watching_the_model(model):
    """Whether the model itself was called through __call__ (model.forward(...) skips its hooks), seen by a
    pre-hook the checker removes before it looks for hooks left behind."""
    called = []
    handle = model.register_forward_pre_hook(lambda module, args: called.append(True))
    try:
        yield called
    finally:
        handle.remove()


class _Ghost(nn.Module):
    """Called by the models below but not registered in them (kept in a plain list)."""

    def forward(self, x):
        return x * 1.0


# ---------------------------------------------------------------- summarize_model

class Split(nn.Module):
    """Returns a tuple: the first `k` features, the sum of the rest, the int k, and a tuple holding the rest (a
    tuple inside the tuple: its entry in output_shape is None)."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, h):
        return h[..., :self.k], h[..., self.k:].sum(-1), self.k, (h[..., self.k:],)


class Top(nn.Module):
    """Returns h.max(dim=-1), a torch.return_types.max: a named tuple (values, indices), so a tuple."""

    def forward(self, h):
        return h.max(dim=-1)


class Stats(nn.Module):
    """Returns a dict (neither a tensor nor a tuple or list): its output_shape is None."""

    def forward(self, h):
        return {"mean": h.mean(-1), "max": h.amax(-1)}


class Tower(nn.Module):
    """Own parameter on the root, a frozen layer registered first, a layer called twice and registered under
    two names, a tuple, a named tuple, a list and a dict output, buffers, a parameter shared by two layers (one without
    bias), an unregistered module, and a keyword-only argument. Keeps what its forward returned, and the
    train mode and grad mode of each of its calls."""

    class Halves(nn.Module):
        """Returns a list of two tensors. A nested class: its __qualname__ is not its __name__."""

        def forward(self, h):
            return [h[..., :1], h[..., 1:]]

    def __init__(self, width, hidden, k, out):
        super().__init__()
        self.frozen = nn.Linear(k, out)
        self.frozen.requires_grad_(False)
        self.encoder = nn.Sequential(nn.Linear(width, hidden), nn.ReLU())
        self.shared = nn.Linear(hidden, hidden)
        self.alias = self.shared  # the same module under a second name: named_modules() lists 'shared' only
        self.split = Split(k)
        self.norm = nn.BatchNorm1d(k)
        self.halves = Tower.Halves()
        self.stats = Stats()
        self.top = Top()
        self.proj = nn.Linear(k, out)
        self.tied = nn.Linear(k, out, bias=False)
        self.tied.weight = self.proj.weight  # one parameter, own to both 'proj' and 'tied'
        self.scale = nn.Parameter(torch.rand(out) + 0.5)
        self.helpers = [_Ghost()]
        self.calls = 0
        self.returned = None
        self.modes = []  # (self.training, torch.is_grad_enabled()) of each call

    def forward(self, x, *, shift):
        self.calls += 1
        self.modes.append((self.training, torch.is_grad_enabled()))
        h = self.alias(self.helpers[0](torch.tanh(self.shared(self.encoder(x)))))
        first, rest, k, _ = self.split(h)
        first = self.norm(first)
        low, high = self.halves(h)
        stats = self.stats(first)
        top = self.top(h)
        self.returned = ((self.frozen(first) + self.proj(first) + self.tied(first)) * self.scale + shift
                         + rest.unsqueeze(-1) + stats["mean"].unsqueeze(-1) + low + top.values.unsqueeze(-1))
        return self.returned


class Raises(nn.Module):
    def forward(self, x):
        raise ValueError("the checker's layer raised on purpose")


def _tower(rng):
    width, hidden = rng.randint(3, 6), rng.randint(5, 8)
    k, out = rng.randint(2, hidden - 2), rng.randint(2, 4)
    batch = (rng.randint(2, 4),)
    return Tower(width, hidden, k, out), [batch + (width,)], {"shift": round(rng.uniform(-1, 1), 3)}


def _nested(rng):
    width, hidden, out = rng.randint(3, 6), rng.randint(3, 6), rng.randint(2, 4)
    model = nn.Sequential(nn.Linear(width, hidden),
                          nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()),
                          nn.Linear(hidden, out))
    return model, [(rng.randint(2, 3), rng.randint(2, 3), width)], {}


class Pair(nn.Module):
    """Two positional inputs, each through its own layer, then a nested Sequential. One Tanh sits in two
    containers, 'left' and 'body.0': named_modules() lists it once, as 'left.1', and a walk over
    named_children() reaches it twice."""

    def __init__(self, width, hidden, out):
        super().__init__()
        act = nn.Tanh()
        self.left = nn.Sequential(nn.Linear(width, hidden), act)
        self.right = nn.Linear(width, hidden)
        self.body = nn.Sequential(nn.Sequential(nn.Linear(hidden, hidden), act), nn.Linear(hidden, out))

    def forward(self, x, y):
        return self.body(self.left(x) + self.right(y))


def _pair(rng):
    width, hidden, out = rng.randint(3, 6), rng.randint(3, 6), rng.randint(2, 4)
    batch = rng.randint(2, 4)
    return Pair(width, hidden, out), [(batch, width), (batch, width)], {}


_SUMMARY_CASES = ((701, _tower), (702, _nested), (703, _pair))


def _shape_of(value):
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if isinstance(value, (tuple, list)):
        return [tuple(item.shape) if isinstance(item, torch.Tensor) else None for item in value]
    return None


def _output_kind(value):
    if isinstance(value, torch.Tensor):
        return "tensor"
    return type(value).__name__


def _reference_rows(model, inputs, kwargs):
    """Rows in start order, with extra keys for the hints: what recursive, trainable, buffer and deduplicated
    counts would give, the input shape, and the kind of output."""
    rows, open_rows, finished = [], [], []
    # what counting through model.named_parameters() (which lists a shared parameter once) gives each module
    deduplicated = {}
    for name, parameter in model.named_parameters():
        owner = name.rpartition(".")[0]
        deduplicated[owner] = deduplicated.get(owner, 0) + parameter.numel()

    counted = set()  # the parameters that an earlier row counted

    def starts(module, args):
        own = sum(p.numel() for p in module.parameters(recurse=False))
        not_yet_counted = sum(p.numel() for p in module.parameters(recurse=False) if id(p) not in counted)
        counted.update(id(p) for p in module.parameters(recurse=False))
        row = {"name": name_of[module], "type": type(module).__name__, "output_shape": None,
               "input_shape": _shape_of(args[0]) if args else None,
               "params": own,
               "recursive": sum(p.numel() for p in module.parameters()),
               "trainable": sum(p.numel() for p in module.parameters(recurse=False) if p.requires_grad),
               "with_buffers": own + sum(b.numel() for b in module.buffers(recurse=False)),
               "deduplicated": deduplicated.get(name_of[module], 0),
               "not_yet_counted": not_yet_counted,
               "weight_and_bias": sum(t.numel() for t in (getattr(module, "weight", None),
                                                          getattr(module, "bias", None))
                                      if isinstance(t, nn.Parameter)),
               "other_parameters": [name for name, p in module.named_parameters(recurse=False)
                                    if name not in ("weight", "bias")],
               "qualname": type(module).__qualname__}
        rows.append(row)
        open_rows.append(row)

    def finishes(module, args, output):
        row = open_rows.pop()
        row["output_shape"] = _shape_of(output)
        row["output_kind"] = _output_kind(output)
        row["named_tuple"] = isinstance(output, tuple) and type(output) is not tuple
        row["output_type"] = f"{type(output).__module__}.{type(output).__qualname__}"
        row["nested_items"] = [number for number, item in enumerate(output) if isinstance(item, (tuple, list))] \
            if isinstance(output, (tuple, list)) else []
        finished.append(row)

    name_of = {}
    handles = []
    for name, module in model.named_modules():
        name_of[module] = name
        handles += [module.register_forward_pre_hook(starts), module.register_forward_hook(finishes)]
    try:
        with torch.no_grad():
            output = model(*[x.clone() for x in inputs], **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return output, rows, finished


_KEYS = ("name", "type", "output_shape", "params")


def _is_shape(got):
    """A shape as the contract gives it: a tuple of ints (a torch.Size is one)."""
    return isinstance(got, tuple) and all(isinstance(n, int) and not isinstance(n, bool) for n in got)


def _same_shape(got, expected):
    if expected is None:
        return got is None
    if isinstance(expected, tuple):
        return _is_shape(got) and tuple(got) == expected
    return isinstance(got, list) and len(got) == len(expected) \
        and all(_same_shape(g, e) for g, e in zip(got, expected))


def _loosely_same_shape(got, expected):
    """The same numbers, whatever the containers (tuple, list or torch.Size)."""
    if expected is None:
        return got is None
    if isinstance(expected, tuple):
        return isinstance(got, (tuple, list)) and list(got) == list(expected)
    return isinstance(got, (tuple, list)) and len(got) == len(expected) \
        and all(_loosely_same_shape(g, e) for g, e in zip(got, expected))


def _names(rows):
    return [row.get("name") if isinstance(row, dict) else row for row in rows]


def _aliases(model):
    """{second name: the name named_modules() gives} for every module registered under more than one name."""
    first = {module: name for name, module in model.named_modules()}
    return {name: first[module] for name, module in model.named_modules(remove_duplicate=False)
            if first.get(module) != name and module in first}


def _visits(model):
    """How many times model.apply() (a walk over children(), each container visiting its own) reaches each
    module: more than once for a module that sits in two containers."""
    visits = {}

    def walk(module):
        for child in module.children():
            walk(child)
        visits[module] = visits.get(module, 0) + 1

    walk(model)
    return visits


def _alias_hint(got_names, aliases):
    seen = sorted({name for name in got_names if name in aliases})
    if not seen:
        return ""
    name = seen[0]
    return (f" {name!r} is not a name of named_modules(): it is the module {aliases[name]!r}, registered a second "
            f"time under the name {name!r}. named_modules() lists a module once, under its first name, so every "
            f"call of it gets the name {aliases[name]!r}, and one row per call (not one per name: with "
            "named_modules(remove_duplicate=False), or a walk over named_children() that reaches it from two "
            "containers, it would get a hook per name).")


def _check_rows(rows, expected, finished, model, call_text, model_called):
    said = f"{call_text} returned rows"
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        fail(f"{call_text} returned {describe(rows)} as rows; expected a list of dicts, one per module call, with "
             f"the keys {list(_KEYS)}.")
    for number, row in enumerate(rows):
        missing_keys = [key for key in _KEYS if key not in row]
        if missing_keys:
            fail(f"{said} where rows[{number}] is {row}; it lacks the keys {missing_keys}. Each row is a dict with "
                 f"the keys {list(_KEYS)}.")
        extra_keys = [key for key in row if key not in _KEYS]
        if extra_keys:
            fail(f"{said} where rows[{number}] is {row}; it has the extra keys {extra_keys}. Each row has exactly "
                 f"the four keys {list(_KEYS)} and no others.")
        if not isinstance(row["name"], str):
            fail(f"{said} where rows[{number}] is {row}; its 'name' should be a str, the module's name in "
                 "model.named_modules() ('' for the model itself).")
        if not isinstance(row["params"], numbers.Integral) or isinstance(row["params"], bool):
            fail(f"{said} where rows[{number}] is {row}; its 'params' is {describe(row['params'])}, and should be "
                 "an int, the number of elements: sum(p.numel() for p in module.parameters(recurse=False)) "
                 "(p.numel() is an int; a tensor such as torch.prod(...) is not).")
    got_names, want_names = _names(rows), [row["name"] for row in expected]
    if got_names != want_names:
        model_names = [name for name, module in model.named_modules()]
        aliases = _aliases(model)
        hint = _alias_hint(got_names, aliases)
        if hint:
            pass
        elif len(got_names) > len(want_names) and got_names == [
                row["name"] for row in expected for _ in range(_visits(model)[model.get_submodule(row["name"])])]:
            twice = sorted({name for name, module in model.named_modules() if _visits(model)[module] > 1})
            hint = (f" Each call of {', '.join(map(repr, twice))} got two rows: that module sits in two containers, "
                    "and a walk over children() such as model.apply() reaches it once from each, so it got two "
                    "hooks. Hook each module of model.named_modules() once (or use global hooks).")
        elif len(got_names) > len(want_names) and got_names[-len(want_names):] == want_names:
            hint = (f" The last {len(want_names)} rows are this call's; the {len(got_names) - len(want_names)} "
                    "before them are left from an earlier call of summarize_model (checked on another model "
                    "first). Make a new list of rows inside the function, on every call: a list made outside it "
                    "is shared by every call.")
        elif sorted(got_names, key=str) == sorted(want_names, key=str):
            if got_names == [row["name"] for row in finished]:
                hint = (" Those are the names in the order the calls finish, which is when a forward hook fires: a "
                        "parent finishes after its children. List them in the order the calls start, with a row "
                        "made in a forward pre-hook.")
            else:
                hint = " List the rows in the order the calls start."
        elif "" not in got_names and got_names == [name for name in want_names if name != ""] and not model_called:
            hint = (" The model itself is missing, and its hooks never fired: model.forward(...) runs the forward "
                    "without the hooks of the model itself. Call the model, model(*inputs, **kwargs).")
        elif "" not in got_names and got_names == [name for name in want_names if name != ""]:
            hint = (" The model itself is missing: its name in named_modules() is '', which is falsy; test "
                    "`module in names`, not the name's truth value.")
        elif got_names[1:] == want_names[1:] and got_names[:1] != [""]:
            hint = (f" The model itself is named {got_names[0]!r}: its name in named_modules() is '', the empty "
                    "string; give its row that name.")
        elif got_names == [name for name in model_names if name in want_names]:
            hint = (" That is named_modules() order, one row per module. Record the calls as they happen, with "
                    "hooks: the order of the calls, and a row for every call.")
        elif len(set(got_names)) == len(got_names) and sorted(set(want_names), key=str) == sorted(got_names, key=str):
            hint = (" A module the model calls twice ('shared') must get a row per call; a dict keyed by the name "
                    "keeps only one. Append a row on every call.")
        elif got_names == [row["name"] for row in expected if not list(model.get_submodule(row["name"]).children())]:
            containers = [name for name in want_names if name not in got_names]
            hint = (f" Those are the layers without children only; the calls of the containers {containers} are "
                    "module calls too, and each gets its row.")
        elif len(got_names) == len(want_names) and sum(name not in model_names for name in got_names) > 1:
            hint = (" The names are not those of model.named_modules(): a module's name there is the path of "
                    "attributes that leads to it ('encoder.0'), not its class or a counter.")
        elif any(name not in model_names for name in got_names):
            hint = (" There are rows for modules that are not in model.named_modules() (a global hook also fires "
                    "for the module this model keeps in a plain list); give them no row.")
        fail(f"{said} with the names {got_names}; expected {want_names}, one per call in the order the calls start "
             f"('' is the model itself).{hint}")
    for number, (row, want) in enumerate(zip(rows, expected)):
        where = f"{said} where rows[{number}] (name {want['name']!r}) is {row}"
        if row["type"] != want["type"]:
            hint = ""
            if row["type"] == want["qualname"]:
                hint = (f" {row['type']!r} is its __qualname__, which names the class it is nested in too; the "
                        "type is its __name__.")
            fail(f"{where}; its 'type' should be {want['type']!r}, the class's name, type(module).__name__.{hint}")
        if row["params"] != want["params"]:
            hint = ""
            if row["params"] == want["recursive"]:
                hint = (" That counts the parameters of its submodules too; count only its own, "
                        "module.parameters(recurse=False).")
            elif row["params"] == want["trainable"]:
                hint = " That leaves out the frozen parameters (requires_grad False); count them too."
            elif row["params"] == want["with_buffers"]:
                hint = (" That counts its buffers too (a BatchNorm's running mean and variance are buffers, not "
                        "parameters); count module.parameters(recurse=False) only.")
            elif row["params"] == want["deduplicated"]:
                hint = (" This module shares a parameter with another one (tied weights), and model.named_parameters() "
                        "lists a shared parameter once, under the first module; it is an own parameter of both: "
                        "count module.parameters(recurse=False) of each module.")
            elif want["other_parameters"] and row["params"] == want["weight_and_bias"]:
                hint = (f" That counts only the parameters named weight and bias; this module has others too "
                        f"({', '.join(want['other_parameters'])}). Count every own parameter, "
                        "module.parameters(recurse=False).")
            elif row["params"] == want["not_yet_counted"]:
                hint = (" That leaves out the parameters an earlier row already counted (the same module called "
                        "again, or a weight tied to another module's): every row counts all of its module's own "
                        "parameters, module.parameters(recurse=False), whatever other rows counted.")
            elif want["params"] and row["params"] == len(list(model.get_submodule(want["name"]).parameters(
                    recurse=False))):
                hint = " That is the number of parameter tensors; count their elements, p.numel()."
            fail(f"{where}; its 'params' should be {want['params']}, the number of elements of the module's own "
                 f"parameters, frozen ones included.{hint}")
        if not _same_shape(row["output_shape"], want["output_shape"]):
            hint = ""
            kind = want["output_kind"]
            if isinstance(want["output_shape"], tuple) and isinstance(row["output_shape"], (tuple, list)) \
                    and len(row["output_shape"]) == len(want["output_shape"]) > 0 and row["output_shape"][0] == -1 \
                    and list(row["output_shape"][1:]) == list(want["output_shape"][1:]):
                hint = (" The first number is the batch size, and here it is the real one: give the whole shape, "
                        "tuple(output.shape), not -1 for the batch dimension (as torchsummary prints it).")
            elif _loosely_same_shape(row["output_shape"], want["output_shape"]):
                if isinstance(want["output_shape"], tuple):
                    hint = " The numbers are right; give the shape as a tuple, tuple(output.shape)."
                else:
                    hint = (f" The numbers are right; for a {kind} output give a list, with the shape of each tensor "
                            "item as a tuple (and None for any other item).")
            elif isinstance(want["output_shape"], list) and want["named_tuple"] and row["output_shape"] is None:
                hint = (f" The module returned a {want['output_type']}, a named tuple: that is a tuple too "
                        "(isinstance(output, tuple) is True, although type(output) is not tuple). Test "
                        "isinstance(output, (tuple, list)).")
            elif isinstance(want["output_shape"], list) and want["nested_items"] \
                    and isinstance(row["output_shape"], list) \
                    and len(row["output_shape"]) == len(want["output_shape"]) \
                    and all(_same_shape(got, expected) for number, (got, expected)
                            in enumerate(zip(row["output_shape"], want["output_shape"]))
                            if number not in want["nested_items"]):
                items = ", ".join(str(number) for number in want["nested_items"])
                hint = (f" The module returned a {kind} whose item {items} is itself a tuple (a tuple inside the "
                        "tuple), not a tensor: like any other item that is not a tensor, its entry is None. Do not "
                        "look inside it.")
            elif isinstance(want["output_shape"], list):
                hint = (f" The module returned a {kind}: give a list with the shape tuple of each tensor item and None "
                        "for each other item.")
            elif want["output_shape"] is None and kind != "NoneType":
                hint = (f" The module returned a {kind}, which is neither a tensor nor a tuple or list: its "
                        "output_shape is None.")
            elif _same_shape(row["output_shape"], want["input_shape"]):
                hint = (" That is the shape of the module's input. The output exists only when the call finishes: "
                        "take its shape in a forward hook.")
            elif any(_same_shape(row["output_shape"], other["output_shape"]) for other in expected if other is not want):
                hint = (" That is the output shape of another call. Fill in the row its own call opened: calls nest, "
                        "so a forward hook belongs to the most recently started call that has not finished.")
            fail(f"{where}; its 'output_shape' should be {want['output_shape']}.{hint}")


@check_of("summarize_model")
def check_summarize_model(summarize_model):
    for seed, build in _SUMMARY_CASES:
        rng = random.Random(seed)
        torch.manual_seed(seed)
        model, shapes, kwargs = build(rng)
        inputs = [random_tensor(seed + number, shape) for number, shape in enumerate(shapes)]
        expected_output, expected, finished = _reference_rows(model, inputs, kwargs)
        if hasattr(model, "modes"):
            model.modes.clear()  # the reference's call
        modes_before = _modes(model)
        shown = ", ".join([f"{'xyz'[number]} of shape {shape}" for number, shape in enumerate(shapes)]
                          + [f"{key}={value}" for key, value in kwargs.items()])
        call_text = f"summarize_model(model, {shown})"
        before = global_hooks()
        modules = list(model.named_modules()) + [("(an unregistered module the model calls)", m)
                                                for m in getattr(model, "helpers", [])]
        try:
            with _watching_the_model(model) as model_called:
                result = _call_learner(summarize_model, call_text, (model, *[x.clone() for x in inputs]), kwargs)
        except LearnerCodeRaised as error:
            if isinstance(error.error, TypeError) and "missing 1 required positional argument: 'y'" in str(error.error):
                fail(f"{call_text} raised TypeError: {error.error}. Pass every positional input on to the model: "
                     "model(*inputs, **kwargs), not only the first.")
            if isinstance(error.error, TypeError) and "shift" in str(error.error):
                fail(f"{call_text} raised TypeError: {error.error}. Pass the keyword arguments on to the model: "
                     "model(*inputs, **kwargs).")
            if isinstance(error.error, TypeError) and "not tuple" in str(error.error):
                fail(f"{call_text} raised TypeError: {error.error}. `inputs` is a tuple of the positional "
                     "arguments: unpack it, model(*inputs, **kwargs).")
            raise
        _check_nothing_left(before, modules, call_text, "returned")
        _check_modes_kept(modes_before, model, call_text, "returned",
                          "Leave the grad mode alone: the model runs in the caller's grad mode.")
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            fail(f"{call_text} returned {describe(result)}; expected a pair (output, rows).")
        output, rows = result
        calls = getattr(model, "calls", 2) - 1  # the reference ran it once (a model without a counter: as if once)
        if calls != 1:
            fail(f"{call_text} ran the model {calls} times; run it once, with the hooks registered, and return that "
                 "call's output with the rows it recorded.")
        for training, grad_enabled in getattr(model, "modes", []):
            if not training:
                fail(f"{call_text} ran the model in eval mode; the model was in train mode. Run it in the mode the "
                     "caller has it (model.eval() changes what BatchNorm and Dropout compute).")
            if not grad_enabled:
                fail(f"{call_text} ran the model with gradients off (under torch.no_grad() or "
                     "torch.inference_mode()), so the output it returns has no graph: the caller could not "
                     "backpropagate through it. Run the model in the caller's grad mode; hooks fire in either.")
        returned = getattr(model, "returned", None)
        if returned is not None and output is not returned:
            if close(output, expected_output) and close(returned, expected_output):
                fail(f"{call_text} returned {describe(output)} as the output: the values the model returns, but "
                     "not the tensor the model returned (a copy, or a detached tensor). Return that object itself, "
                     "what model(*inputs, **kwargs) gave, unchanged, and let the hooks return None.")
            fail(f"{call_text} returned {describe(output)} as the output; the model returns "
                 f"{describe(expected_output)}. Return what model(*inputs, **kwargs) returned, itself, and let the "
                 "hooks return None so that they change nothing.")
        if not close(output, expected_output):
            fail(f"{call_text} returned {describe(output)} as the output; the model returns "
                 f"{describe(expected_output)}. Return what model(*inputs, **kwargs) returned, and let the hooks "
                 "return None so that they change nothing.")
        _check_rows(rows, expected, finished, model, call_text, model_called)
    _check_raising(summarize_model, "summarize_model")


def _check_raising(function, exercise):
    """The model's exception reaches the caller unchanged, and every hook is gone afterwards: a ValueError of the
    checker's, then the RuntimeError torch raises for a shape mismatch (a submission that stops the pass early
    with a RuntimeError of its own and catches RuntimeError would swallow it)."""
    torch.manual_seed(709)
    width = random.Random(709).randint(3, 6)
    models = [(nn.Sequential(nn.Linear(width, width), nn.Sequential(nn.ReLU(), Raises())), ValueError,
               "raises ValueError", "on purpose"),
              (nn.Sequential(nn.Linear(width, width + 1), nn.Sequential(nn.ReLU(), nn.Linear(width, 2))),
               RuntimeError, "gets an input of the wrong size, so torch raises RuntimeError", "cannot be multiplied")]
    for model, kind, what, words in models:
        name = kind.__name__
        call_text = f"{exercise}(model, x of shape (2, {width})) on a model whose layer '1.1' {what}"
        own_stop = (" If you stop the pass early by raising an exception of your own, raise and catch a class of "
                    "your own, not RuntimeError, which torch itself raises.") if kind is RuntimeError else ""
        def is_the_models(error, kind=kind, words=words):
            return isinstance(error, kind) and words in str(error)

        def made_from_the_models(error, name=name):
            if is_the_models(error.__cause__ or error.__context__):
                return (f"It was made from the model's {name}: the model's {name} must reach the caller unchanged. "
                        "Don't catch it: a `with handle:` block or try/finally removes the hooks and lets the "
                        "exception go on.")
            return None

        before = global_hooks()
        planted_exception_comes_through(
            f"calling {call_text}", lambda: function(model, random_tensor(709, (2, width))), is_the_models,
            lambda returned: (f"{call_text} returned normally (it gave {describe(returned)}); the model's {name} must "
                              "reach the caller unchanged. Don't catch it: a `with handle:` block or try/finally "
                              f"removes the hooks and lets the exception go on.{own_stop}"),
            hints=(made_from_the_models,))
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


class LogList(nn.Module):
    """Returns a list [x, log(x)]: only the second item holds NaN (where x < 0)."""

    def forward(self, x):
        return [x, torch.log(x)]


class Huge(nn.Module):
    """Finite outputs between 1e38 and float32's largest number (3.4e38): a sum of them overflows to inf."""

    def forward(self, x):
        return 1e38 + 1e37 * torch.tanh(x).abs()


class GradProbe(nn.Module):
    """Records whether gradients were on, and its train mode, when it was called."""

    def __init__(self):
        super().__init__()
        self.grad_enabled = []
        self.training_seen = []

    def forward(self, x):
        self.grad_enabled.append(torch.is_grad_enabled())
        self.training_seen.append(self.training)
        return x


class Packed(nn.Module):
    """Returns a dict {"x": x, "log": log(x)}: a dict output counts as finite, whatever it holds."""

    def forward(self, x):
        return {"x": x, "log": torch.log(x)}


class Nest(nn.Module):
    """Takes Packed's dict, returns (x, (log(x),)): a tuple inside the tuple counts as finite."""

    def forward(self, packed):
        return packed["x"], (packed["log"],)


class Unnest(nn.Module):
    """Takes Nest's tuple, returns the tensor log(x) itself: the first output that counts as non-finite."""

    def forward(self, nested):
        return nested[1][0]


class LogOfMean(nn.Module):
    """Returns a 0-d tensor, like a loss: the log of (mean - 10), NaN for this model's small values."""

    def forward(self, x):
        return torch.log(x.mean() - 10.0)


class Scaled(nn.Module):
    """A container that multiplies its layer's output by a 0-d tensor: 'scale' (a LogOfMean) makes the NaN, a
    single element, and the container's own output is NaN everywhere."""

    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.scale = LogOfMean()

    def forward(self, x):
        h = self.linear(x)
        return h * self.scale(h)


class SortedLog(nn.Module):
    """Returns torch.sort(log(x), dim=-1), a torch.return_types.sort: a named tuple (values, indices), so a
    tuple, whose values hold NaN (where x < 0)."""

    def forward(self, x):
        return torch.sort(torch.log(x), dim=-1)


class EmptySlice(nn.Module):
    """Returns an empty tensor, x[..., :0]: a tensor without elements has no non-finite element."""

    def forward(self, x):
        return x[..., :0]


class WithEmpty(nn.Module):
    """Returns (x, its EmptySlice layer's empty tensor): an empty tensor as an output and as a tuple's item."""

    def __init__(self):
        super().__init__()
        self.empty = EmptySlice()

    def forward(self, x):
        return x, self.empty(x)


class Big(nn.Module):
    """float64 outputs between 1 and about 7e86: finite, but past float32's largest number (3.4e38)."""

    def forward(self, x):
        return torch.exp(100.0 * torch.tanh(x) + 100.0)


class NaNBlock(nn.Module):
    """A container whose own forward makes the NaN, after its layers returned finite outputs."""

    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.act = nn.Tanh()

    def forward(self, x):
        return torch.sqrt(self.act(self.linear(x)) - 2.0)  # tanh is at most 1: the root of a negative number


class Reuse(nn.Module):
    """Calls `shared` twice, with a Log between; `again` is `shared` registered a second time, under another
    name, and the second call goes through it."""

    def __init__(self, width, shared):
        super().__init__()
        self.lead = nn.Linear(width, width)
        self.shared = shared
        self.log = Log()
        self.again = self.shared

    def forward(self, x):
        return self.again(self.log(self.shared(self.lead(x))))


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
        if isinstance(h, (tuple, list)):
            h = h[0]
        out = self.head(self.helpers[0](self.probe(h)))
        return torch.sqrt(out - 100.0) if self.root_sqrt else out


class PairChain(Chain):
    """A Chain that takes two positional inputs and adds them first."""

    inputs = 2

    def forward(self, x, y):
        return super().forward(x + y)


def _pair_case(width):
    return PairChain(nn.Sequential(nn.Linear(width, width), Log(), nn.Tanh()), width)


def _nan_case(width):
    # the log makes NaN in some elements only; the Tanh keeps them where they are, the head spreads them to all
    return Chain(nn.Sequential(nn.Linear(width, width), Log(), nn.Tanh()), width)


def _inf_case(width):
    # exp of large values is +inf; the Linear after it mixes +inf and -inf weights into NaN
    body = nn.Sequential(nn.Linear(width, width), Exp(), nn.Linear(width, width))
    with torch.no_grad():
        body[0].weight.mul_(200.0)
    return Chain(body, width)


def _neg_inf_case(width):
    # the ReLU makes zeros, the log of zero is -inf: no NaN and no +inf in the culprit's output
    return Chain(nn.Sequential(nn.Linear(width, width), nn.ReLU(), Log(), nn.Linear(width, width)), width)


def _tuple_case(width):
    return Chain(nn.Sequential(nn.Linear(width, width), Triple()), width)


def _list_case(width):
    return Chain(nn.Sequential(nn.Linear(width, width), LogList()), width)


def _finite_case(width):
    # Huge's outputs are finite; the Tanh after it brings them back to at most 1; the last layer adds an
    # empty tensor to its output
    return Chain(nn.Sequential(nn.Linear(width, width), Huge(), nn.Tanh(), WithEmpty()), width)


def _other_outputs_case(width):
    # the log's NaN is first in a dict (counts as finite), then in a tuple inside a tuple (counts as finite), then
    # in a tensor: 'body.3'
    return Chain(nn.Sequential(nn.Linear(width, width), Packed(), Nest(), Unnest()), width)


def _scalar_case(width):
    # the culprit 'body.scale' returns a 0-d tensor (one element) that is NaN
    return Chain(Scaled(width), width)


def _named_tuple_case(width):
    # the culprit returns a named tuple (torch.return_types.sort), a tuple whose values hold NaN
    return Chain(nn.Sequential(nn.Linear(width, width), SortedLog()), width)


def _dirty_input_case(width):
    # the input itself holds +inf and -inf (set by the checker), which the Hardtanh clamps: every output is finite
    model = Chain(nn.Sequential(nn.Hardtanh(), nn.Linear(width, width), nn.Tanh()), width)
    model.dirty_input = True
    return model


def _float64_case(width):
    # a float64 model whose Big layer returns finite values past float32's range; the Tanh brings them back to 1
    return Chain(nn.Sequential(nn.Linear(width, width), Big(), nn.Tanh()), width).double()


def _train_only_case(width):
    # in train mode the Dropout (p=1) zeros everything and the log of zero is -inf, in 'body.3'; in eval mode the
    # Dropout passes the Softplus's positive values on and every output is finite
    return Chain(nn.Sequential(nn.Linear(width, width), nn.Softplus(), nn.Dropout(p=1.0), Log()), width)


def _root_case(width):
    return Chain(nn.Sequential(nn.Linear(width, width), nn.Tanh()), width, root_sqrt=True)


def _ghost_case(width):
    # the first NaN comes from a module the model holds in a plain list, not in named_modules()
    return Chain(nn.Sequential(nn.Linear(width, width), nn.Tanh()), width, ghost=Log())


def _block_case(width):
    # a container is the answer: its own forward makes the NaN after its layers returned finite outputs
    return Chain(NaNBlock(width), width)


def _reused_case(width):
    # 'body.shared' is called twice: finite the first time, NaN the second, after 'body.log' made the NaN
    return Chain(Reuse(width, nn.Linear(width, width)), width)


def _alias_case(width):
    # the culprit is registered under two names, 'body.shared' and 'body.again'; its first call makes the inf
    body = Reuse(width, Exp())
    with torch.no_grad():
        body.lead.weight.mul_(200.0)
    return Chain(body, width)


_NONFINITE_CASES = ((711, _nan_case), (712, _inf_case), (721, _neg_inf_case), (713, _tuple_case), (717, _list_case),
                    (714, _finite_case), (715, _root_case), (716, _ghost_case), (718, _block_case),
                    (719, _reused_case), (720, _alias_case), (722, _pair_case), (723, _other_outputs_case),
                    (724, _dirty_input_case), (725, _float64_case), (726, _train_only_case),
                    (727, _named_tuple_case), (728, _scalar_case))


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [item for item in value if isinstance(item, torch.Tensor)]
    return []


def _all_tensors(value, dicts=True):
    """Every tensor in `value`, also inside nested tuples and lists and (if `dicts`) dicts: what a deeper search
    finds."""
    if isinstance(value, torch.Tensor):
        return [value]
    if dicts and isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [tensor for item in value for tensor in _all_tensors(item, dicts)]
    return []


def _answers(model, inputs):
    """The right answer and what typical mistakes would give, from one pass with per-module hooks."""
    name_of = {module: name for name, module in model.named_modules()}
    leaves = {name for module, name in name_of.items() if not list(module.children())}
    children = {name for name, child in model.named_children()}
    calls, open_calls = [], []  # calls in start order; each gets its finish index when it returns

    def pre(module, args):
        call = {"name": name_of[module], "start": len(calls), "inputs": [t.clone() for t in _tensors(args)]}
        calls.append(call)
        open_calls.append(call)

    def post(module, args, output):
        call = open_calls.pop()
        call.update(finish=sum("finish" in c for c in calls), outputs=[t.clone() for t in _tensors(output)],
                    deep=[t.clone() for t in _all_tensors(output)],
                    nested=[t.clone() for t in _all_tensors(output, dicts=False)],
                    kind=type(output).__name__ if not isinstance(output, torch.Tensor) else "tensor",
                    named_tuple=isinstance(output, tuple) and type(output) is not tuple,
                    output_type=f"{type(output).__module__}.{type(output).__qualname__}")

    handles = []
    for module in name_of:
        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    try:
        with torch.no_grad():
            model(*[x.clone() for x in inputs])
    finally:
        for handle in handles:
            handle.remove()
    model.probe.grad_enabled.clear()
    model.probe.training_seen.clear()
    finished = sorted(calls, key=lambda call: call["finish"])

    def first(records, test, key="outputs", only=lambda call: True):
        for call in records:
            if only(call) and any(test(t) for t in call[key]):
                return call["name"]
        return None

    not_finite = lambda t: not torch.isfinite(t).all()  # noqa: E731
    bad = [call["name"] for call in finished if any(not_finite(t) for t in call["outputs"])]
    by_name = {}  # a dict keyed by name: placed at its first return, judged by its last
    for call in finished:
        by_name[call["name"]] = any(not_finite(t) for t in call["outputs"])
    right = first(finished, not_finite)
    culprit = next((call for call in finished if call["name"] == right), None)
    return {
        "right": right,
        "culprit_kind": culprit["kind"] if culprit else None,
        "culprit_numel": min((t.numel() for t in culprit["outputs"]), default=None) if culprit else None,
        "two_or_more": first(finished, lambda t: t.numel() >= 2 and not torch.isfinite(t).all()),
        "culprit_named_tuple": culprit["output_type"] if culprit and culprit["named_tuple"] else None,
        "exact_types": first(finished, not_finite, only=lambda call: call["kind"] in ("tensor", "tuple", "list")),
        "nan_only": first(finished, lambda t: torch.isnan(t).any()),
        "no_minus_inf": first(finished, lambda t: torch.isnan(t).any() or (t == float("inf")).any()),
        "all_bad": first(finished, lambda t: not torch.isfinite(t).any()),
        "by_sum": first(finished, lambda t: not torch.isfinite(t.sum())),
        "tensor_only": first(finished, not_finite, only=lambda call: call["kind"] == "tensor"),
        "tuple_only": first(finished, not_finite, only=lambda call: call["kind"] in ("tensor", "tuple")),
        "last": bad[-1] if bad else None,
        "by_start": first(calls, not_finite),
        "by_input": first(calls, not_finite, key="inputs"),
        "input_nonfinite": any(not_finite(x) for x in inputs),
        "input_or_output": next((call["name"] for call in finished
                                 if any(not_finite(t) for t in call["outputs"] + call["inputs"])), None),
        "deep": first(finished, not_finite, key="deep"),
        "nested": first(finished, not_finite, key="nested"),
        "as_float32": first(finished, lambda t: t.dtype == torch.float64 and not torch.isfinite(t.float()).all()
                            or not torch.isfinite(t).all()),
        "kinds": {call["name"]: call["kind"] for call in finished},
        "children_only": first(finished, not_finite, only=lambda call: call["name"] in children),
        "leaves_only": first(finished, not_finite, only=lambda call: call["name"] in leaves),
        "by_name": next((name for name, is_bad in by_name.items() if is_bad), None),
        "aliases": _aliases(model),
        "types": {name: type(module).__name__ for module, name in name_of.items()},
        "finish_order": [call["name"] for call in finished],
        "unregistered": "head" in bad and not any(not_finite(t) for call in finished
                                                 if call["name"].startswith("body") for t in call["outputs"]),
    }


def _nonfinite_hint(got, answers, right):
    if isinstance(got, nn.Module):
        return (" That is the module itself; return its name in model.named_modules() (a str, '' for the model "
                "itself).")
    if got is not None and not isinstance(got, str):
        return (" Return the name of the module, a str ('' for the model itself), or None when every output is "
                "finite.")
    if got is not None and got in (answers["deep"], answers["nested"]) and got != right:
        return (f" {got!r} returned a {answers['kinds'].get(got)}: only a tensor, or a tensor directly among the items "
                "of a tuple or list, counts. Any other output, a dict or a tuple inside a tuple, counts as finite "
                f"whatever it holds; the non-finite values count where they come out as a tensor, in {right!r}.")
    if answers["input_nonfinite"] and got is not None and got != right \
            and got in (answers["input_or_output"], answers["by_input"]):
        return (f" The model's input itself holds inf and -inf, so {got!r} received them, but its output is finite "
                "(a Hardtanh clamps them). Only outputs count: look at what each module returns, not at what it "
                "gets.")
    if got is not None and got == answers["as_float32"] and got != right:
        return (f" The outputs of {got!r} are float64 and finite (up to about 7e86); only converted to float32 do "
                "they overflow to inf. Test each tensor in its own dtype, torch.isfinite(t).all().")
    if answers["culprit_numel"] is not None and answers["culprit_numel"] < 2 and got != right \
            and got == answers["two_or_more"]:
        return (f" The culprit {right!r} returns a tensor with a single element (a 0-d tensor, like a loss), which "
                "is NaN: it counts like any other tensor, whatever its size.")
    if answers["unregistered"] and got is None:
        return (" The first NaN comes from a module the model keeps in a plain list, not in named_modules(): "
                "ignore that module and keep looking; the next module of the model is the answer.")
    if right == "" and got is None:
        return (" The model itself is the first: its own forward makes the NaN, after every submodule returned "
                "finite outputs. Hook the model too, not only its layers; and its name in named_modules() is '', "
                "which is falsy: compare with `is None` (or keep a flag), not by truth value.")
    if right is None and got == "":
        return (" '' is the name of the model itself; when no output is non-finite, return None, not ''.")
    if right is not None and got in answers["aliases"] and answers["aliases"][got] == right:
        return (f" {got!r} is the same module as {right!r}, registered a second time under another name. "
                f"named_modules() lists a module once, under its first name: return {right!r}.")
    if got is not None and got == answers["children_only"] and got != right:
        return (f" {got!r} is a direct child of the model and a parent of the culprit: it looks as if only "
                "model.children() were watched. The culprit is a layer inside it; watch every module of "
                "model.named_modules() (a global forward hook sees them all), the model itself included.")
    if got is not None and got == answers["leaves_only"] and got != right and right is not None:
        return (f" {got!r} comes after the culprit {right!r}, a container whose own forward made the NaN after "
                "its layers returned finite outputs. Watch containers too, every module of model.named_modules(), "
                "not only the layers without children.")
    if got == answers["by_name"] and got != right:
        return (f" {got!r} is called twice: its first call returned a finite output, and only its second call, "
                f"after {right!r}, a non-finite one. Judge each call when it returns (a dict keyed by name keeps "
                "the place of the first call and the verdict of the last).")
    if got == answers["last"] and got != right:
        return (" That is the last module with a non-finite output: the model (or a parent) returns after its "
                "children, so its forward hook fires later. Keep the first one found, in the order the forward "
                "hooks fire (not the order the calls start, nor the order of named_modules(), where the model "
                "itself comes first), and ignore the rest.")
    if right is None and got == answers["by_sum"]:
        return (f" The output of {got!r} is finite, only large (over 1e38): a sum or a norm of it overflows to inf. "
                "Test the elements themselves, torch.isfinite(t).all().")
    if got is not None and got == answers["all_bad"] and got != right:
        return (" That is the first output in which *every* element is non-finite; one NaN or inf is enough. "
                "torch.isfinite(t).all() is False as soon as one element is not finite. (Or, if you watch only "
                f"some kinds of layers: the culprit {right!r} is a {answers['types'].get(right)}, and every module "
                "counts, whatever its class.)")
    if got == answers["no_minus_inf"] and got != right:
        return (" The culprit's output holds -inf (the log of 0), and no NaN or +inf: test for both infinities, "
                "torch.isinf(t) or torch.isfinite(t).all(), not only t == inf.")
    if got == answers["nan_only"] and got != right:
        return (" The culprit's output holds infinities but no NaN: torch.isnan misses them; test "
                "torch.isfinite(...).all().")
    if answers["culprit_named_tuple"] and got != right and \
            got in (answers["exact_types"], answers["tensor_only"], answers["tuple_only"]):
        return (f" The culprit {right!r} returns a {answers['culprit_named_tuple']}, a named tuple: that is a tuple "
                "too (isinstance(output, tuple) is True, although type(output) is not tuple), with the non-finite "
                "tensor among its items. Test isinstance(output, (tuple, list)) and look at every tensor item.")
    if got == answers["tensor_only"] and got != right or got == answers["tuple_only"] and got != right:
        return (f" The culprit returns a {answers['culprit_kind']}, with the non-finite tensor among its items: "
                "look at every tensor in a tuple or list output.")
    if got == answers["by_input"] and got != right:
        return (" That is the first module whose *input* is not finite, the one after the culprit. Look at "
                "outputs, in a forward hook (a pre-hook sees only the inputs).")
    if right is not None and isinstance(got, str) and got == answers["types"].get(right):
        return (" That is the class of the module; return its name in model.named_modules(), which says where it "
                "is in the model.")
    if got == answers["by_start"] and got != right:
        return (" That is the first call to *start* whose output is not finite: a parent starts before its "
                "children. Take the order in which the calls return, the order forward hooks fire.")
    if right is not None and got is not None and right.startswith(f"{got}.") or (got == "" and right):
        return (" That is a parent of the culprit: a parent's output holds its children's NaN too, but it returns "
                "after them. Keep the first output found, in the order the forward hooks fire.")
    if right is not None and got in answers["finish_order"] and \
            answers["finish_order"].index(got) > answers["finish_order"].index(right):
        return (f" {got!r} returns after the culprit {right!r}, a {answers['types'].get(right)} whose output was "
                "already non-finite: it looks as if the culprit was not watched. Every module of "
                "model.named_modules() counts, whatever its class.")
    return ""


def _answer_outlives_the_call(find_first_nonfinite, got):
    """Whether find_first_nonfinite returns `got` again for a model without a module of that name (an answer kept
    from an earlier call)."""
    probe = nn.Sequential(nn.Tanh())
    try:
        with calling("calling find_first_nonfinite(nn.Sequential(nn.Tanh()), x)"):
            again = find_first_nonfinite(probe, torch.zeros(2, 3))
    except LearnerCodeRaised:
        return False
    finally:
        torch.set_grad_enabled(True)
    return isinstance(again, str) and again == got and got not in dict(probe.named_modules())


@check_of("find_first_nonfinite")
def check_find_first_nonfinite(find_first_nonfinite):
    earlier = []  # the answers of the cases before
    for seed, build in _NONFINITE_CASES:
        rng = random.Random(seed)
        width, batch = rng.randint(3, 6), rng.randint(3, 5)
        torch.manual_seed(seed)
        model = build(width)
        inputs = [random_tensor(seed + number, (batch, width)) for number in range(getattr(model, "inputs", 1))]
        if model.head.weight.dtype == torch.float64:
            inputs = [x.double() for x in inputs]
        if getattr(model, "dirty_input", False):
            inputs[0][0, 0], inputs[0][-1, -1] = float("inf"), float("-inf")
        answers = _answers(model, inputs)
        right = answers["right"]
        shown = ", ".join(f"{'xy'[number]} of shape {(batch, width)}" for number in range(len(inputs)))
        if inputs[0].dtype == torch.float64:
            shown += ", float64 (and so is the model)"
        if answers["input_nonfinite"]:
            shown += ", holding inf and -inf"
        call_text = f"find_first_nonfinite(model, {shown})"
        modes_before = _modes(model)
        before = global_hooks()
        modules = list(model.named_modules()) + [("(an unregistered module the model calls)", model.helpers[0])]
        with _watching_the_model(model) as model_called:
            try:
                got = _call_learner(find_first_nonfinite, call_text, (model, *[x.clone() for x in inputs]))
            except LearnerCodeRaised as error:
                if isinstance(error.error, TypeError) and "missing 1 required positional argument" in str(error.error):
                    fail(f"{call_text} raised TypeError: {error.error}. Pass every positional input on to the "
                         "model (unpack `inputs` with a star), not only the first.")
                if build is _finite_case and ("numel() == 0" in str(error.error)
                                              or "empty" in str(error.error).lower()):
                    fail(f"{call_text} raised {type(error.error).__name__}: {str(error.error).rstrip('.')}. A layer of "
                         "this model returns an empty tensor (no elements), and another one returns it in a tuple; an "
                         "empty tensor has no non-finite "
                         "element, so it counts as finite. Test the elements, torch.isfinite(t).all(), which is "
                         "True for an empty tensor.")
                raise
        _check_nothing_left(before, modules, call_text, "returned")
        _check_modes_kept(modes_before, model, call_text, "returned",
                          "Use `with torch.no_grad():`, which puts the caller's grad mode back when the block ends, "
                          "however it ends.")
        if not all(model.probe.training_seen):
            fail(f"{call_text} ran the model in eval mode; the model was in train mode, in which its output differs "
                 "(a Dropout, for one, only drops in train mode). Run the model in the mode the caller has it: "
                 "torch.no_grad() turns gradients off and leaves the mode alone.")
        if type(got) is not type(right) or got != right:
            hint = _nonfinite_hint(got, answers, right)
            if right == "" and got is None and not model_called:
                hint = (" The model itself is the first: its own forward makes the NaN, after every submodule "
                        "returned finite outputs. But its hooks never fired: model.forward(...) runs the forward "
                        "without the hooks of the model itself. Call the model itself, model(...), as a function.")
            if not hint and isinstance(got, str) and got in earlier and _answer_outlives_the_call(
                    find_first_nonfinite, got):
                hint = (f" {got!r} is what an earlier call of find_first_nonfinite found (the checker runs it on "
                        f"several models), and it returns {got!r} again for nn.Sequential(nn.Tanh()), which has no "
                        "module of that name: keep what a call finds in a variable made inside the function, on "
                        "every call, not in one that outlives the call.")
            fail(f"{call_text} returned {describe(got)}; expected {right!r}"
                 f"{', since every output is finite' if right is None else ''}.{hint}")
        earlier.append(right)
        if len(model.probe.grad_enabled) > 1:
            fail(f"{call_text} ran the model {len(model.probe.grad_enabled)} times; run it once, with the hook "
                 "registered, and take the answer from that pass.")
        if any(model.probe.grad_enabled):
            fail(f"{call_text} ran the model with gradients on; run it under torch.no_grad() (forward hooks fire "
                 "there too, and no graph is built).")
    _check_raising(find_first_nonfinite, "find_first_nonfinite")


GLOBAL_AND_PREPEND = EventPrediction(
    exercise="predict_global_and_prepend", lesson="07_global_and_kwargs_hooks", code="global_and_prepend_events",
    events=("pre:own", "pre:own, prepend", "pre:global", "forward", "fwd:own", "fwd:own, prepend", "fwd:global"),
    aliases=(("forward", "fwd"), ("prehook", "pre"), ("pre-hook", "pre"), ("pre_hook", "pre")),
    rules=(
        Rule("the layer is called once: each hook fires once, and forward runs once.", repeated=True),
        Rule("forward runs after every pre-hook, global and own, and before every forward hook.",
             fired=("pre:global", "pre:own, prepend", "pre:own"), predicted=("forward",)),
        Rule("prepend=True only reorders a module's own hooks: global hooks run before all of them, prepended or "
             "not.", fired=("pre:global",), predicted=("pre:own, prepend",)),
        Rule("a global forward pre-hook fires before the module's own pre-hooks, whenever it was registered.",
             fired=("pre:global",)),
        Rule("a global forward hook fires before the module's own forward hooks too, prepended or not: global "
             "hooks do not wrap around the module's own, they come first on both sides of forward.",
             fired=("fwd:global",)),
        Rule("prepend=True puts the hook in front of the module's own hooks registered before it.",
             fired=("pre:own, prepend", "fwd:own, prepend")),
        Rule("forward runs after every pre-hook, global and own, and before every forward hook.",
             fired=("forward",)),
    ),
    rule="on each side of forward the global hook comes first, then the module's own hooks, a prepended one in "
         "front of those registered before it.")

ALWAYS_CALL = EventPrediction(
    exercise="predict_always_call", lesson="07_global_and_kwargs_hooks", code="always_call_events",
    events=("pre:model", "pre:broken", "fwd:model", "fwd:broken", "always:model", "always:broken", "global:model",
            "global:ok", "global:broken", "caught"),
    aliases=(("forward", "fwd"), ("always_call", "always"), ("always-call", "always"), ("prehook", "pre"), ("pre-hook", "pre"), ("pre_hook", "pre")),
    rules=(
        Rule("model, ok and broken are each called once: each hook fires at most once, and the except block runs "
             "once.", repeated=True),
        Rule("when forward raises, a forward hook registered without always_call=True does not run: there is "
             "no output to give it.", predicted=("fwd:broken", "fwd:model")),
        Rule("the exception passes out through model's call too: model's forward does not catch it, so model's "
             "always-call hooks run as well, after broken's and before the except block.",
             fired=("global:model", "always:model"), predicted=("caught",)),
        Rule("a hook registered with always_call=True runs even when forward raises, before the exception "
             "reaches the caller.", predicted=("caught",)),
        Rule("the exception leaves the innermost module first: broken's always-call hooks run, then model's, as "
             "the exception passes out through each call.", fired=("global:broken", "always:broken"),
             predicted=("global:model", "always:model")),
        Rule("global forward hooks run before the module's own, on the exception path too.",
             fired=("global:broken", "global:model"), predicted=("always:broken", "always:model")),
        Rule("a global forward hook fires for every module call: first for ok, which returned normally before "
             "broken was called.", fired=("global:ok",)),
        Rule("model's pre-hook fires when model is called, before its forward calls ok and broken.",
             fired=("pre:model",)),
    ),
    rule="a call that raises runs only the always-call forward hooks, the global one first, and the exception "
         "passes out through each enclosing call, innermost first, before the except block runs.")

check_predict_global_and_prepend = prediction_check(GLOBAL_AND_PREPEND)
check_predict_always_call = prediction_check(ALWAYS_CALL)
