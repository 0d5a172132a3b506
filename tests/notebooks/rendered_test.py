"""The committed notebooks carry the outputs of one run, and the API site shows every one.

Fast: reads the committed JSON, executes nothing (``<stem>_test.py`` executes each notebook).

The rule for committed outputs (``make notebooks-render`` writes them): every code cell was
executed, top to bottom, in one kernel (execution counts 1, 2, ...) and shows at least one
output; every cell that shows a figure (calls ``plt.show()``, or ends in an expression calling
``....figure(...)``, which the kernel displays) has a PNG;
no output is an error or a traceback; no output names a path of the machine that ran it; the
outputs belong to the code as committed (a hash of the code cells is recorded when rendering);
and the file stays under :data:`experiments.notebooks.MAX_RENDERED_BYTES`.
"""

from __future__ import annotations

import ast
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from experiments import notebooks

ALL_NOTEBOOKS = sorted(notebooks.NOTEBOOK_DIR.glob("*.ipynb"))
RERENDER = "run `make notebooks-render NB={stem}` and commit the notebook"


def _load(path: Path):
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return nb


def _shows_figure(source: str) -> bool:
    """The cell calls ``plt.show()`` or its value (last expression) is a ``.figure(...)`` call."""
    tree = ast.parse("\n".join(line for line in source.splitlines()
                               if not line.lstrip().startswith(("%", "!"))))
    if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr == "show" and isinstance(node.func.value, ast.Name)
           and node.func.value.id == "plt" for node in ast.walk(tree)):
        return True
    last = tree.body[-1] if tree.body else None
    return (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and isinstance(last.value.func, ast.Attribute) and last.value.func.attr == "figure")


def _output_texts(cell) -> list[str]:
    texts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            texts.append(out.get("text", ""))
        elif out.get("output_type") == "error":
            texts.append(out.get("evalue", ""))
            texts.extend(out.get("traceback", []))
        for mime, value in out.get("data", {}).items():
            if mime.startswith("text/"):
                texts.append(value if isinstance(value, str) else "".join(value))
    return texts


def _machine_path_pattern() -> re.Pattern:
    """Absolute paths of this machine (and the usual roots of any other)."""
    roots = {str(notebooks.REPO_ROOT), sys.prefix, sys.base_prefix, tempfile.gettempdir(),
             str(Path.home())}
    literal = "|".join(re.escape(r.rstrip("/") + "/") for r in roots if r not in ("", "/"))
    generic = r"(?<![\w.~<>$-])/(?:work|tmp|home|root|Users|var/folders)/"
    return re.compile(f"{literal}|{generic}")


def test_the_folder_has_the_seven_notebooks():
    assert [p.stem for p in ALL_NOTEBOOKS] == [p.stem for p in notebooks.notebook_paths()], (
        "a notebook outside the NN_name.ipynb pattern is invisible to the runner and the site"
    )
    assert len(ALL_NOTEBOOKS) >= 7


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_with_the_outputs_of_one_run(path):
    nb = _load(path)
    stem = path.stem
    info = nb.metadata.get(notebooks.METADATA_KEY)
    assert info, f"{path.name} has no rendering record: {RERENDER.format(stem=stem)}"
    assert info["scale"] == notebooks.RENDER_SCALE
    assert {"executed", "jax", "backend"} <= set(info)
    assert info["code_sha256"] == notebooks.code_hash(nb), (
        f"{path.name}: code cells changed after their outputs were rendered; "
        + RERENDER.format(stem=stem)
    )
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: code cells not executed top to bottom in one kernel: {counts}"
    )
    pattern = _machine_path_pattern()
    for number, cell in enumerate(code, start=1):
        where = f"{path.name}, code cell {number}"
        assert cell.outputs, f"{where} has no output"
        assert "execution" not in cell.metadata, f"{where} carries timing metadata"
        kinds = [o.output_type for o in cell.outputs]
        assert "error" not in kinds, f"{where} committed with an error"
        if _shows_figure(cell.source):
            assert any("image/png" in o.get("data", {}) for o in cell.outputs), (
                f"{where} draws a figure but has no PNG output"
            )
        for text in _output_texts(cell):
            assert "Traceback (most recent call last)" not in text, f"{where}: a traceback"
            match = pattern.search(text)
            assert not match, f"{where}: a path of the machine that ran it: {match.group(0)!r}"
    size = path.stat().st_size
    assert size <= notebooks.MAX_RENDERED_BYTES, f"{path.name} is {size:,} bytes"


def test_the_docs_page_lists_every_notebook(tmp_path):
    stems = notebooks.write_docs_pages(tmp_path)
    index = (tmp_path / "index.md").read_text()
    for path in ALL_NOTEBOOKS:
        assert path.stem in stems
        assert f"]({path.stem}.md)" in index, f"{path.name} is not linked from the notebook page"
        assert re.search(rf"^{re.escape(path.stem)}$", index, re.M), (
            f"{path.name} is not in the page's toctree"
        )
    assert "not executed" not in index
    site_index = (notebooks.REPO_ROOT / "docs" / "api" / "index.md").read_text()
    assert "_generated/notebooks/index" in site_index, "the notebook page is not in the site"
    conf = (notebooks.REPO_ROOT / "docs" / "api" / "conf.py").read_text()
    assert 'write_docs_pages(HERE / "_generated" / "notebooks")' in conf


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.stem)
def test_each_page_shows_the_committed_outputs(path, tmp_path):
    nb = _load(path)
    page, files = notebooks.to_markdown(nb, path.stem, f"{path.stem}_files")
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.outputs)
    assert images and len(files) == images, f"{path.name}: {images} figures, {len(files)} files"
    for name, content in files.items():
        assert content.startswith(b"\x89PNG\r\n\x1a\n"), name
        assert f"]({name})" in page
    streams = [o.text for c in nb.cells if c.cell_type == "code" for o in c.outputs
               if o.output_type == "stream"]
    assert all(s.rstrip() in page for s in streams)
    assert nb.metadata[notebooks.METADATA_KEY]["executed"] in page.split("\n```", 1)[0]
    assert "has no committed outputs" not in page


def test_the_page_needs_a_readme_row_for_every_notebook():
    with pytest.raises(ValueError, match="no row for"):
        notebooks.index_markdown([("08_new", "A new notebook")], {"01_quickstart": "x"})
    assert set(notebooks.readme_descriptions()) == {p.stem for p in ALL_NOTEBOOKS}


def test_sanitize_replaces_machine_paths_and_merges_streams():
    import nbformat

    cell = nbformat.v4.new_code_cell("print(1)")
    tmp = Path(tempfile.gettempdir()) / "jaxfl_07_ab12cd" / "gossip_pairs.png"
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=f"wrote {tmp}\n"),
        nbformat.v4.new_output("stream", name="stdout", text=f"in {notebooks.REPO_ROOT}/x\n"),
        nbformat.v4.new_output("stream", name="stderr",
                               text=f"{sysconfig.get_paths()['purelib']}/absl/y.py:1\n"),
    ]
    cell.metadata["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00Z"}
    nb = nbformat.v4.new_notebook(cells=[cell])
    notebooks.sanitize(nb)
    assert [o.name for o in cell.outputs] == ["stdout", "stderr"]
    assert cell.outputs[0].text == "wrote <tmp>/gossip_pairs.png\nin <repo>/x\n"
    assert cell.outputs[1].text == "<site-packages>/absl/y.py:1\n"
    assert "execution" not in cell.metadata
    assert not any(_machine_path_pattern().search(t) for t in _output_texts(cell))


def test_sanitize_prefers_a_checkout_under_the_temporary_folder(monkeypatch):
    """A checkout (or venv) inside the temporary folder is ``<repo>``, not ``<tmp>``: the
    known paths under the temporary folder are replaced before its random-name pattern
    (``make test`` in a clone under /tmp failed here when the pattern ran first)."""
    import nbformat

    clone = Path(tempfile.gettempdir()) / "jaxfl_clone"
    monkeypatch.setattr(notebooks, "REPO_ROOT", clone)
    cell = nbformat.v4.new_code_cell("print(1)")
    run = Path(tempfile.gettempdir()) / "tmpab12cd" / "fig.png"
    cell.outputs = [nbformat.v4.new_output(
        "stream", name="stdout", text=f"in {clone}/jaxfl/x.py and {clone}\nwrote {run}\n")]
    notebooks.sanitize(nbformat.v4.new_notebook(cells=[cell]))
    assert cell.outputs[0].text == "in <repo>/jaxfl/x.py and <repo>\nwrote <tmp>/fig.png\n"


def test_figure_rule():
    assert _shows_figure("plt.plot([1, 2])\nplt.show()")
    assert _shows_figure("%matplotlib inline\nfig = plt.figure()\nplt.show()")
    assert _shows_figure("x = 1\nplot_privacy.figure(report)")
    assert not _shows_figure(
        "try:\n    plot_privacy.figure(report)\nexcept ValueError as err:\n    print(err)")
    assert not _shows_figure("print(1)")
