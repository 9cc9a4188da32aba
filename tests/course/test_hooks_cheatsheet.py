"""The site's hooks cheat sheet (website/cheatsheet.yml, read by website/cheatsheet.py) against the
installed torch: every row names a real API with exactly the parameters it shows, and every public
hook API of torch's hook-bearing classes and modules has a row."""

import importlib
import importlib.util
import inspect

import pytest
import torch

from hooked.course import LESSON_FILE, ROOT, lesson_meant_by, lesson_named

_spec = importlib.util.spec_from_file_location("hooked_site_cheatsheet", ROOT / "website" / "cheatsheet.py")
cheatsheet = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cheatsheet)

# Where torch keeps its hook APIs: a class or module, and its dotted name.
_HOOK_HOMES = ["torch.Tensor", "torch.nn.Module", "torch.nn.modules.module", "torch.autograd.graph",
               "torch.autograd.graph.Node", "torch.optim.Optimizer", "torch.optim.optimizer"]


def _resolve(dotted):
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
            break
        except ImportError:
            continue
    for name in parts[split:]:
        obj = getattr(obj, name)
    return obj


def _plain_signature(obj):
    """The signature as a reader writes it: no `self`, no annotations."""
    signature = inspect.signature(obj)
    parameters = [parameter.replace(annotation=inspect.Parameter.empty)
                  for parameter in signature.parameters.values() if parameter.name != "self"]
    return str(signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty))


def _on_this_torch(row):
    """The row as a test case, skipped on a torch older than the row's `since`."""
    since = row.get("since")
    older = since is not None and torch.__version__ < since
    return pytest.param(row, id=row["api"], marks=pytest.mark.skipif(older, reason=f"since torch {since}"))


@pytest.mark.parametrize("row", [_on_this_torch(row) for row in cheatsheet.ROWS])
def test_row_shows_the_real_signature(row):
    api = _resolve(row["api"])
    assert callable(api), row["api"]
    assert cheatsheet.params_of(row["call"]) == _plain_signature(api), row["api"]


def test_node_hooks_exist_on_a_real_grad_fn():
    # autograd's nodes are C++ objects whose methods have no Python signature;
    # the rows check torch.autograd.graph.Node, and this checks a real node has them.
    node = (torch.ones(2, requires_grad=True) * 2).grad_fn
    assert isinstance(node, torch.autograd.graph.Node)
    assert callable(node.register_hook) and callable(node.register_prehook)


def test_a_row_since_a_newer_torch_says_so_and_names_a_supported_version():
    for row in cheatsheet.ROWS:
        if "since" in row:
            assert row["fires"].startswith(f"Since torch {row['since']}. "), row
            assert row["since"] in ("2.14", "2.15"), row  # newer than 2.13, the oldest the course supports


def test_every_public_hook_api_has_a_row():
    listed = {row["api"] for row in cheatsheet.ROWS}
    found = {f"{home}.{name}" for home in _HOOK_HOMES for name in dir(_resolve(home))
             if "hook" in name.lower() and name[0].islower()}  # not private names, classes or type aliases
    missing = found - listed - cheatsheet.NOT_HOOK_APIS
    assert not missing, f"hook APIs with no row in the cheat sheet: {sorted(missing)}"


def test_rows_are_complete_and_lessons_are_real_slugs():
    for row in cheatsheet.ROWS:
        assert all(row.get(key) for key in ("group", "api", "call", "hook", "fires", "returns")), row
        if row["lesson"] is None:
            assert row.get("planned"), row
        else:
            assert LESSON_FILE.match(f"{row['lesson']}.py"), row
    # a lesson that exists is named by its real slug
    for row in cheatsheet.ROWS:
        lesson = lesson_meant_by(row["lesson"][:2]) if row["lesson"] else None
        if lesson is not None:
            assert row["lesson"] == lesson.name, row


def test_each_api_links_to_a_lesson_that_names_it():
    for row in cheatsheet.ROWS:
        lesson = lesson_named(row["lesson"]) if row["lesson"] else None
        if lesson is not None:
            name = row["api"].rsplit(".", 1)[1]
            text = lesson.solution_path.read_text(encoding="utf-8")
            assert name in text, f"{row['api']} links to lesson {row['lesson']}, which never names {name}"
