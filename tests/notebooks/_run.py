"""Shared checks for the narrative notebooks: structure, and execution of the small setting.

Each notebook has its own test file (``<stem>_test.py``) calling :func:`check_structure` and
:func:`run_small`, so pytest-xdist spreads the notebooks over workers.
"""

from __future__ import annotations

import ast
import os
import re
import tempfile

import pytest

from experiments import notebooks
from tests.conftest import require_data

# Modules a notebook may import: jaxfl, the experiments drivers, and the libraries a reader
# uses around it. Anything else would be library code living in a notebook.
ALLOWED_IMPORTS = {
    "jaxfl", "experiments", "jax", "numpy", "matplotlib", "networkx", "os", "tempfile",
    "pathlib", "time", "json", "math", "functools", "dataclasses", "dp_accounting",
}


def load(stem: str):
    import nbformat

    path = notebooks.NOTEBOOK_DIR / f"{stem}.ipynb"
    assert path.exists(), f"missing notebook {path}"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return nb


def check_structure(stem: str) -> None:
    """The notebook is narrative, switchable by scale, and defines no library code.

    Its committed outputs are checked by ``tests/notebooks/rendered_test.py``.
    """
    nb = load(stem)
    code = [c for c in nb.cells if c.cell_type == "code"]
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    assert code and markdown, "a notebook needs both prose and code"
    assert markdown[0] is nb.cells[0] and nb.cells[0].source.lstrip().startswith("# "), (
        "the first cell is a markdown title"
    )
    assert len(markdown) >= len(code) // 2, "too little prose for a narrative notebook"
    assert notebooks.SCALE_VARIABLE in code[0].source, (
        f"the first code cell reads {notebooks.SCALE_VARIABLE}"
    )
    for cell in code:
        source = "\n".join(
            line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))
        )
        tree = ast.parse(source)
        for node in ast.walk(tree):
            assert not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)), (
                f"library code in a notebook cell: {ast.unparse(node).splitlines()[0]}"
            )
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= ALLOWED_IMPORTS, f"unexpected import {roots - ALLOWED_IMPORTS}"


def run_small(stem: str, *data_files: str):
    """Executes the notebook in its small setting; returns it with outputs.

    ``data_files`` (relative to ``JAXFL_DATA_DIR``) follow the suite's real-data policy: skip
    when missing, fail under ``JAXFL_REQUIRE_DATA=1``.
    """
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    require_data(*data_files)
    if os.environ.get("JAXFL_TEST_COMPILATION_CACHE", "1") == "0":
        return notebooks.execute(notebooks.NOTEBOOK_DIR / f"{stem}.ipynb", scale="small")
    # The kernel gets a persistent compilation cache of its own (tests/conftest.py): a program
    # the notebook compiles again under a new function object is loaded, not recompiled.
    with tempfile.TemporaryDirectory(prefix="jaxfl-notebook-xla-cache-") as cache:
        env = {"JAX_COMPILATION_CACHE_DIR": cache,
               "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
               "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
               "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none"}
        return notebooks.execute(notebooks.NOTEBOOK_DIR / f"{stem}.ipynb", scale="small",
                                 env_overrides=env)


def load_rendered(stem: str, *data_files: str):
    """The committed notebook with its rendered outputs, to check what it prints without running.

    ``data_files`` are those the checks themselves read (the real-data policy of
    :func:`run_small`). A notebook committed without outputs fails here: the outputs are
    part of the notebook (``make notebooks-render``).
    """
    require_data(*data_files)
    nb = load(stem)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("outputs") for c in code), (
        f"{stem}: committed without outputs; run `make notebooks-render NB={stem}`"
    )
    return nb


def outputs_text(nb) -> str:
    """All plain-text outputs of an executed notebook, for checking printed results."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out.get("text", ""))
            elif "data" in out and "text/plain" in out["data"]:
                parts.append(out["data"]["text/plain"])
    return "\n".join(parts)


def count_images(nb) -> int:
    return sum(
        1
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "data" in out and "image/png" in out["data"]
    )


def find_number(text: str, label: str) -> float:
    """The number printed after ``label`` (e.g. ``"epsilon ="``) in a notebook's output."""
    match = re.search(re.escape(label) + r"\s*([-+0-9.eE]+|inf|nan)", text)
    assert match, f"{label!r} not found in the notebook output"
    return float(match.group(1))


def output_tests(stem: str, check, run_files=(), rendered_files=()):
    """The two output tests of a notebook, both passing its outputs through ``check``: its small
    setting executed now (slow; :func:`run_small` with ``run_files``) and the outputs committed
    with it (:func:`load_rendered` with ``rendered_files``, the data the checks themselves read).

    A test file binds them by name so that pytest collects them::

        test_small_setting_runs, test_committed_outputs = _run.output_tests(STEM, check, MNIST)
    """

    @pytest.mark.slow
    def test_small_setting_runs():
        check(run_small(stem, *run_files))

    def test_committed_outputs():
        """The outputs committed with the notebook (``make notebooks-render``) pass the same
        checks."""
        check(load_rendered(stem, *rendered_files))

    return test_small_setting_runs, test_committed_outputs
