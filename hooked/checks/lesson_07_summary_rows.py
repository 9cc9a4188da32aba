"""The rows summarize_model (lesson 07) returns, judged against the reference's rows clause by clause: the
row's form, the names in the order the calls start, then each row's type, params and output_shape. Each
wrong clause is explained by the first diagnosis that recognizes what the learner did."""

import numbers

from hooked.checks.check_api import fail
from hooked.checks.tensors import describe

KEYS = ("name", "type", "output_shape", "params")

# The named mistakes check_rows recognizes.
ROW_MISTAKES = {
    "rows-not-dicts": "returns the rows as something other than a list of dicts",
    "row-keys-missing": "gives a row without one of the keys name, type, output_shape, params",
    "row-keys-extra": "gives a row keys beyond name, type, output_shape, params",
    "name-not-a-str": "gives a row's name as something other than a str",
    "params-not-an-int": "gives params as something other than an int (a tensor, a float)",
    "alias-name": "names a module by its second registered name, not the one named_modules() gives",
    "hooked-per-container": "hooks a module once per container it sits in (a walk over children()), so it gets two "
                            "rows a call",
    "rows-kept-between-calls": "keeps the rows in a list made outside the function, shared by every call",
    "finish-order": "lists the rows in the order the calls finish (rows made in a forward hook)",
    "rows-out-of-order": "lists the right rows in another order than the calls start",
    "model-forward-called": "calls model.forward(...), which skips the model's own hooks, so the model has no row",
    "root-skipped-falsy-name": "skips the model itself because its name '' is falsy",
    "root-misnamed": "gives the model itself another name than ''",
    "named-modules-order": "gives one row per module of named_modules() instead of one per call",
    "row-per-module": "keeps one row per module (a dict keyed by name), not one per call",
    "containers-missing": "gives rows to layers without children only, not to the containers",
    "names-not-paths": "names the modules by class or counter, not by their path in named_modules()",
    "unregistered-module-rows": "gives rows to modules the model calls that are not in named_modules()",
    "wrong-names": "gives rows whose names no diagnosis explains",
    "qualname-as-type": "gives the class's __qualname__ as the type, not its __name__",
    "wrong-type": "gives another type than the class's name",
    "params-recursive": "counts the parameters of submodules too",
    "params-trainable-only": "leaves frozen parameters out of params",
    "params-with-buffers": "counts buffers as parameters",
    "params-deduplicated": "counts a tied parameter only under the first module (model.named_parameters())",
    "params-weight-and-bias-only": "counts only the parameters named weight and bias",
    "params-not-recounted": "leaves out parameters that an earlier row already counted",
    "params-tensor-count": "counts parameter tensors instead of their elements",
    "wrong-params": "gives a params count no diagnosis explains",
    "batch-as-minus-one": "gives -1 for the batch dimension, as torchsummary prints it",
    "shape-not-a-tuple": "gives a tensor's shape with the right numbers in another container than a tuple",
    "item-shapes-not-a-list": "gives a tuple or list output's shapes with the right numbers in the wrong containers",
    "named-tuple-missed": "gives None for a named tuple's output (type(output) is tuple is False for it)",
    "nested-tuple-shaped": "looks inside a tuple that is an item of the output instead of giving it None",
    "sequence-shapes-wrong": "gives a tuple or list output something other than the shape of each tensor item",
    "other-output-shaped": "gives a shape to an output that is neither a tensor nor a tuple or list (a dict)",
    "input-shape": "gives the shape of the module's input, not of its output",
    "another-calls-shape": "fills in the output shape of another call's row",
    "wrong-output-shape": "gives an output shape no diagnosis explains",
}


def is_shape(got):
    """A shape as the contract gives it: a tuple of ints (a torch.Size is one)."""
    return isinstance(got, tuple) and all(isinstance(n, int) and not isinstance(n, bool) for n in got)


def same_shape(got, expected):
    if expected is None:
        return got is None
    if isinstance(expected, tuple):
        return is_shape(got) and tuple(got) == expected
    return isinstance(got, list) and len(got) == len(expected) \
        and all(same_shape(g, e) for g, e in zip(got, expected))


def loosely_same_shape(got, expected):
    """The same numbers, whatever the containers (tuple, list or torch.Size)."""
    if expected is None:
        return got is None
    if isinstance(expected, tuple):
        return isinstance(got, (tuple, list)) and list(got) == list(expected)
    return isinstance(got, (tuple, list)) and len(got) == len(expected) \
        and all(loosely_same_shape(g, e) for g, e in zip(got, expected))


def aliases(model):
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


def check_rows(rows, expected, finished, model, call_text, model_called):
    """Judge `rows` against the reference's `expected` rows (in start order; `finished`: in finish order)."""
    said = f"{call_text} returned rows"
    _check_row_form(rows, said, call_text)
    got_names, want_names = [row.get("name") for row in rows], [row["name"] for row in expected]
    if got_names != want_names:
        slug, hint = _names_diagnosis(got_names, want_names, expected, finished, model, model_called)
        fail(f"{said} with the names {got_names}; expected {want_names}, one per call in the order the calls start "
             f"('' is the model itself).{hint}", slug)
    for number, (row, want) in enumerate(zip(rows, expected)):
        where = f"{said} where rows[{number}] (name {want['name']!r}) is {row}"
        if row["type"] != want["type"]:
            slug, hint = (("qualname-as-type", f" {row['type']!r} is its __qualname__, which names the class it is "
                           "nested in too; the type is its __name__.") if row["type"] == want["qualname"]
                          else ("wrong-type", ""))
            fail(f"{where}; its 'type' should be {want['type']!r}, the class's name, type(module).__name__.{hint}",
                 slug)
        if row["params"] != want["params"]:
            slug, hint = _params_diagnosis(row["params"], want, model)
            fail(f"{where}; its 'params' should be {want['params']}, the number of elements of the module's own "
                 f"parameters, frozen ones included.{hint}", slug)
        if not same_shape(row["output_shape"], want["output_shape"]):
            slug, hint = _shape_diagnosis(row["output_shape"], want, expected)
            fail(f"{where}; its 'output_shape' should be {want['output_shape']}.{hint}", slug)


def _check_row_form(rows, said, call_text):
    """A list of dicts, each with exactly the four keys, a str name and an int params."""
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        fail(f"{call_text} returned {describe(rows)} as rows; expected a list of dicts, one per module call, with "
             f"the keys {list(KEYS)}.", "rows-not-dicts")
    for number, row in enumerate(rows):
        missing_keys = [key for key in KEYS if key not in row]
        if missing_keys:
            fail(f"{said} where rows[{number}] is {row}; it lacks the keys {missing_keys}. Each row is a dict with "
                 f"the keys {list(KEYS)}.", "row-keys-missing")
        extra_keys = [key for key in row if key not in KEYS]
        if extra_keys:
            fail(f"{said} where rows[{number}] is {row}; it has the extra keys {extra_keys}. Each row has exactly "
                 f"the four keys {list(KEYS)} and no others.", "row-keys-extra")
        if not isinstance(row["name"], str):
            fail(f"{said} where rows[{number}] is {row}; its 'name' should be a str, the module's name in "
                 "model.named_modules() ('' for the model itself).", "name-not-a-str")
        if not isinstance(row["params"], numbers.Integral) or isinstance(row["params"], bool):
            fail(f"{said} where rows[{number}] is {row}; its 'params' is {describe(row['params'])}, and should be "
                 "an int, the number of elements: sum(p.numel() for p in module.parameters(recurse=False)) "
                 "(p.numel() is an int; a tensor such as torch.prod(...) is not).", "params-not-an-int")


def _alias_hint(got_names, model_aliases):
    seen = sorted({name for name in got_names if name in model_aliases})
    if not seen:
        return ""
    name = seen[0]
    return (f" {name!r} is not a name of named_modules(): it is the module {model_aliases[name]!r}, registered a "
            f"second time under the name {name!r}. named_modules() lists a module once, under its first name, so "
            f"every call of it gets the name {model_aliases[name]!r}, and one row per call (not one per name: with "
            "named_modules(remove_duplicate=False), or a walk over named_children() that reaches it from two "
            "containers, it would get a hook per name).")


def _names_diagnosis(got, want, expected, finished, model, model_called):
    """(slug, hint) of the names `got` where `want` was expected: the first diagnosis that fits, in this order."""
    hint = _alias_hint(got, aliases(model))
    if hint:
        return "alias-name", hint
    return (_rows_added_diagnosis(got, want, expected, model) or _root_diagnosis(got, want, model_called)
            or _rows_kind_diagnosis(got, want, expected, finished, model) or ("wrong-names", ""))


def _rows_added_diagnosis(got, want, expected, model):
    """More rows than calls: a module hooked twice, or rows left from an earlier call."""
    if len(got) <= len(want):
        return None
    visits = _visits(model)
    if got == [row["name"] for row in expected for _ in range(visits[model.get_submodule(row["name"])])]:
        twice = sorted({name for name, module in model.named_modules() if visits[module] > 1})
        return "hooked-per-container", (
            f" Each call of {', '.join(map(repr, twice))} got two rows: that module sits in two containers, and a "
            "walk over children() such as model.apply() reaches it once from each, so it got two hooks. Hook each "
            "module of model.named_modules() once (or use global hooks).")
    if got[-len(want):] == want:
        return "rows-kept-between-calls", (
            f" The last {len(want)} rows are this call's; the {len(got) - len(want)} before them are left from an "
            "earlier call of summarize_model (checked on another model first). Make a new list of rows inside the "
            "function, on every call: a list made outside it is shared by every call.")
    return None


def _root_diagnosis(got, want, model_called):
    """The right rows in another order, or the model itself missing or misnamed."""
    if sorted(got, key=str) == sorted(want, key=str):
        return None  # judged by _order_diagnosis
    without_root = "" not in got and got == [name for name in want if name != ""]
    if without_root and not model_called:
        return "model-forward-called", (
            " The model itself is missing, and its hooks never fired: model.forward(...) runs the forward without "
            "the hooks of the model itself. Call the model, model(*inputs, **kwargs).")
    if without_root:
        return "root-skipped-falsy-name", (
            " The model itself is missing: its name in named_modules() is '', which is falsy; test "
            "`module in names`, not the name's truth value.")
    if got[1:] == want[1:] and got[:1] != [""]:
        return "root-misnamed", (f" The model itself is named {got[0]!r}: its name in named_modules() is '', the "
                                 "empty string; give its row that name.")
    return None


def _rows_kind_diagnosis(got, want, expected, finished, model):
    """Rows in the wrong order, or rows for the wrong set of modules."""
    model_names = [name for name, module in model.named_modules()]
    if sorted(got, key=str) == sorted(want, key=str):
        if got == [row["name"] for row in finished]:
            return "finish-order", (
                " Those are the names in the order the calls finish, which is when a forward hook fires: a parent "
                "finishes after its children. List them in the order the calls start, with a row made in a forward "
                "pre-hook.")
        return "rows-out-of-order", " List the rows in the order the calls start."
    if got == [name for name in model_names if name in want]:
        return "named-modules-order", (" That is named_modules() order, one row per module. Record the calls as "
                                       "they happen, with hooks: the order of the calls, and a row for every call.")
    if len(set(got)) == len(got) and sorted(set(want), key=str) == sorted(got, key=str):
        return "row-per-module", (" A module the model calls twice ('shared') must get a row per call; a dict keyed "
                                  "by the name keeps only one. Append a row on every call.")
    if got == [row["name"] for row in expected if not list(model.get_submodule(row["name"]).children())]:
        containers = [name for name in want if name not in got]
        return "containers-missing", (f" Those are the layers without children only; the calls of the containers "
                                      f"{containers} are module calls too, and each gets its row.")
    if len(got) == len(want) and sum(name not in model_names for name in got) > 1:
        return "names-not-paths", (" The names are not those of model.named_modules(): a module's name there is the "
                                   "path of attributes that leads to it ('encoder.0'), not its class or a counter.")
    if any(name not in model_names for name in got):
        return "unregistered-module-rows", (
            " There are rows for modules that are not in model.named_modules() (a global hook also fires for the "
            "module this model keeps in a plain list); give them no row.")
    return None


# What a wrong params count is, in this order: (slug, what the learner's count equals, hint).
_PARAMS_COUNTS = (
    ("params-recursive", "recursive",
     " That counts the parameters of its submodules too; count only its own, module.parameters(recurse=False)."),
    ("params-trainable-only", "trainable",
     " That leaves out the frozen parameters (requires_grad False); count them too."),
    ("params-with-buffers", "with_buffers",
     " That counts its buffers too (a BatchNorm's running mean and variance are buffers, not parameters); count "
     "module.parameters(recurse=False) only."),
    ("params-deduplicated", "deduplicated",
     " This module shares a parameter with another one (tied weights), and model.named_parameters() lists a shared "
     "parameter once, under the first module; it is an own parameter of both: count module.parameters(recurse=False) "
     "of each module."),
)


def _params_diagnosis(got, want, model):
    for slug, key, hint in _PARAMS_COUNTS:
        if got == want[key]:
            return slug, hint
    if want["other_parameters"] and got == want["weight_and_bias"]:
        return "params-weight-and-bias-only", (
            f" That counts only the parameters named weight and bias; this module has others too "
            f"({', '.join(want['other_parameters'])}). Count every own parameter, module.parameters(recurse=False).")
    if got == want["not_yet_counted"]:
        return "params-not-recounted", (
            " That leaves out the parameters an earlier row already counted (the same module called again, or a "
            "weight tied to another module's): every row counts all of its module's own parameters, "
            "module.parameters(recurse=False), whatever other rows counted.")
    if want["params"] and got == len(list(model.get_submodule(want["name"]).parameters(recurse=False))):
        return "params-tensor-count", " That is the number of parameter tensors; count their elements, p.numel()."
    return "wrong-params", ""


def _shape_diagnosis(got, want, expected):
    """(slug, hint) of the output shape `got` where the row `want` was expected."""
    return (_shape_form_diagnosis(got, want) or _shape_source_diagnosis(got, want, expected)
            or ("wrong-output-shape", ""))


def _shape_form_diagnosis(got, want):
    """The right numbers in the wrong form, or an output of one kind judged as another."""
    shape, kind = want["output_shape"], want["output_kind"]
    if isinstance(shape, tuple) and isinstance(got, (tuple, list)) and len(got) == len(shape) > 0 \
            and got[0] == -1 and list(got[1:]) == list(shape[1:]):
        return "batch-as-minus-one", (" The first number is the batch size, and here it is the real one: give the "
                                      "whole shape, tuple(output.shape), not -1 for the batch dimension (as "
                                      "torchsummary prints it).")
    if loosely_same_shape(got, shape):
        if isinstance(shape, tuple):
            return "shape-not-a-tuple", " The numbers are right; give the shape as a tuple, tuple(output.shape)."
        return "item-shapes-not-a-list", (f" The numbers are right; for a {kind} output give a list, with the shape "
                                          "of each tensor item as a tuple (and None for any other item).")
    if isinstance(shape, list) and want["named_tuple"] and got is None:
        return "named-tuple-missed", (
            f" The module returned a {want['output_type']}, a named tuple: that is a tuple too (isinstance(output, "
            "tuple) is True, although type(output) is not tuple). Test isinstance(output, (tuple, list)).")
    if isinstance(shape, list) and want["nested_items"] and isinstance(got, list) and len(got) == len(shape) \
            and all(same_shape(g, e) for number, (g, e) in enumerate(zip(got, shape))
                    if number not in want["nested_items"]):
        items = ", ".join(str(number) for number in want["nested_items"])
        return "nested-tuple-shaped", (
            f" The module returned a {kind} whose item {items} is itself a tuple (a tuple inside the tuple), not a "
            "tensor: like any other item that is not a tensor, its entry is None. Do not look inside it.")
    if isinstance(shape, list):
        return "sequence-shapes-wrong", (f" The module returned a {kind}: give a list with the shape tuple of each "
                                         "tensor item and None for each other item.")
    if shape is None and kind != "NoneType":
        return "other-output-shaped", (f" The module returned a {kind}, which is neither a tensor nor a tuple or "
                                       "list: its output_shape is None.")
    return None


def _shape_source_diagnosis(got, want, expected):
    """A shape taken from the wrong place: the module's input, or another call."""
    if same_shape(got, want["input_shape"]):
        return "input-shape", (" That is the shape of the module's input. The output exists only when the call "
                               "finishes: take its shape in a forward hook.")
    if any(same_shape(got, other["output_shape"]) for other in expected if other is not want):
        return "another-calls-shape", (" That is the output shape of another call. Fill in the row its own call "
                                       "opened: calls nest, so a forward hook belongs to the most recently started "
                                       "call that has not finished.")
    return None
