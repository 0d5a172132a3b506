"""Every jaxfl module imports only from its own layer or the layers above it
(the table in docs/library_design.md)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jaxfl"
LAYERS = [
    {"_validate", "random", "tree", "layout", "precision"},
    {"topology"},
    {"accounting"},
    {"sensitivity"},
    {"data"},
    {"models"},
    {"clipping", "ghost", "noise", "privatizer", "crypto", "sharding"},
    {"algorithms"},
    {"training", "checkpoint", "metrics", "sweep", "vmapped_runs"},
    {"audit"},
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def _imported_parts(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "jaxfl":
            parts = node.module.split(".")
            yield from ([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            yield from (a.name.split(".")[1] for a in node.names if a.name.startswith("jaxfl."))


def test_every_module_has_a_layer():
    tops = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert tops <= set(LEVEL), f"modules without a layer: {sorted(tops - set(LEVEL))}"


def test_no_module_imports_a_lower_layer():
    bad = []
    for path in PACKAGE.rglob("*.py"):
        top = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if top == "__init__":
            continue
        for part in _imported_parts(ast.parse(path.read_text())):
            if part in LEVEL and LEVEL[part] > LEVEL[top]:
                bad.append(f"{path.relative_to(PACKAGE.parent)} imports jaxfl.{part}")
    assert not bad, "\n".join(bad)


def test_accounting_never_imports_jax():
    """Accounting is float64 NumPy on the host (so the x64 test pass skips it, see Makefile)."""
    bad = []
    for path in (PACKAGE / "accounting").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("jax", "flax")]
    assert not bad, bad


def test_clipping_and_ghost_import_no_cycle_and_only_at_module_level():
    """ghost builds on clipping (``model_clipped_grad_sum`` lives in ghost); clipping never
    reaches back, not even from inside a function."""
    for name, other in (("clipping", "ghost"), ("ghost", None)):
        tree = ast.parse((PACKAGE / f"{name}.py").read_text())
        nested = [n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                  for n in ast.walk(f) if isinstance(n, ast.Import | ast.ImportFrom)]
        assert not nested, f"jaxfl/{name}.py imports inside a function"
        if other is not None:
            assert other not in set(_imported_parts(tree)), f"jaxfl.{name} imports jaxfl.{other}"
