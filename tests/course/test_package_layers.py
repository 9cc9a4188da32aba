"""hooked's packages stand in layers (hooked/__init__.py lists them): each module imports only from its
own layer and those before it, also inside functions, so that no import cycle can form between
packages, at import time or at run time."""

import ast
import pathlib

import hooked

PACKAGE = pathlib.Path(hooked.__file__).parent
LAYERS = ["lesson_files", "course", "feedback", "checks", "grader", "class_grading", "command"]


def _layer(module):
    """The layer of `module` ("hooked.checks.tensors" -> "checks"), or None for a top-level entry point."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _imported(path, module):
    """The hooked modules that the file `path` (the module `module`) imports, anywhere in it."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("hooked."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("hooked"):
            yield from (f"{node.module}.{alias.name}" if node.module == "hooked" else node.module
                        for alias in node.names)


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_layers_are_the_packages_of_hooked():
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert packages | {"course"} == set(LAYERS), "a package was added or renamed: give it its layer here and in hooked/__init__.py"
    assert all(f"  {layer}" in hooked.__doc__ for layer in LAYERS if layer != "course")


def test_no_module_imports_from_a_later_layer():
    upward = []
    for path, module in _modules():
        own = _layer(module)
        for imported in _imported(path, module):
            layer = _layer(imported)
            if own is not None and layer is not None and LAYERS.index(layer) > LAYERS.index(own):
                upward.append(f"{module} imports {imported}")
    assert upward == [], "imports against the layers of hooked/__init__.py:\n" + "\n".join(upward)


def test_an_import_against_the_layers_is_found(tmp_path):
    path = tmp_path / "lesson_format.py"
    path.write_text("def f():\n    from hooked.grader import engine\n", encoding="utf-8")
    assert list(_imported(path, "hooked.lesson_files.lesson_format")) == ["hooked.grader"]
    assert _layer("hooked.grader.engine") == "grader" and _layer("hooked.notebook") is None
