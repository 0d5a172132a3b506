"""Every jaxfl module imports only from its own layer or the layers above it
(the table in docs/library_design.md), and the import graph of jaxfl has no cycle."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "jaxfl"
LAYERS = [
    {"_validate", "validate", "random", "tree", "layout", "precision", "roofline",
     "compilation_cache"},
    {"topology"},
    {"accounting"},
    {"sensitivity"},
    {"data"},
    {"models"},
    {"clipping", "ghost", "noise", "privatizer", "crypto", "sharding"},
    {"algorithms"},
    {"training", "checkpoint", "metrics", "sweep", "vmapped_runs", "selection", "ledger",
     "planner", "workdir_lock", "builders"},
    {"tasks"},
    {"audit"},
    {"repro"},
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


# Import cycles that are known and being removed; each entry must still be a cycle (a fixed one
# fails test_no_import_cycles until it is deleted here).
KNOWN_CYCLES: set[frozenset] = set()


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set]:
    """``module -> jaxfl modules it imports``, from every import statement of its file: at
    module level and inside functions alike (a function-level import that closes a cycle is
    still a cycle). ``from P import x`` counts as an import of ``P.x`` when that is a module,
    else of ``P``; relative imports are resolved."""
    files = {_module_name(p, package): p for p in package.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package_parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package_parts[:len(package_parts) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for a in node.names:
                    found.add(f"{module}.{a.name}" if f"{module}.{a.name}" in files else module)
        graph[name] = {m for m in found if m in files and m != name}
    return graph


def cycles(graph: dict[str, set]) -> list[frozenset]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.add(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(frozenset(component))
    return out


def test_cycle_finder_sees_function_level_imports(tmp_path):
    pkg = tmp_path / "jaxfl"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "__init__.py").write_text("from jaxfl.data import a\n")
    (pkg / "data" / "a.py").write_text("from jaxfl.data import b\n")
    (pkg / "data" / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from jaxfl.data import a\n")
    graph = import_graph(pkg)
    assert graph["jaxfl.data.b"] == {"jaxfl.data.a"}
    assert cycles(graph) == [frozenset({"jaxfl.data.a", "jaxfl.data.b"})]


def test_no_import_cycles():
    found = set(cycles(import_graph()))
    assert not found - KNOWN_CYCLES, "import cycles: " + "; ".join(
        " <-> ".join(sorted(c)) for c in found - KNOWN_CYCLES)
    stale = KNOWN_CYCLES - found
    assert not stale, f"no longer cycles, delete them from KNOWN_CYCLES: {stale}"


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


def test_tasks_sit_below_the_library_and_nothing_in_it_imports_them():
    """jaxfl.tasks builds on data, models and evaluation; no other jaxfl module imports it
    (tasks are what applications start from, not something the library depends on)."""
    assert LEVEL["tasks"] > max(LEVEL[n] for n in ("data", "models", "algorithms", "training"))
    bad = [str(path.relative_to(PACKAGE.parent)) for path in PACKAGE.rglob("*.py")
           if path.relative_to(PACKAGE).parts[0] != "tasks"
           and "tasks" in set(_imported_parts(ast.parse(path.read_text())))]
    assert not bad, bad
