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
import base64
import html
import io
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from experiments import notebooks
from experiments.notebooks import write_docs_sources

ALL_NOTEBOOKS = sorted(notebooks.NOTEBOOK_DIR.glob("*.ipynb"))
CONF = notebooks.REPO_ROOT / "docs" / "api" / "conf.py"
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


def _conf_settings() -> dict:
    """The literal top-level settings of ``docs/api/conf.py`` (extensions, ``nb_*``,
    ``myst_*``, ``suppress_warnings``), read without running it."""
    tree = ast.parse(CONF.read_text())
    out = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def _png_outputs(nb) -> list[bytes]:
    return [base64.b64decode(o["data"]["image/png"]) for c in nb.cells if c.cell_type == "code"
            for o in c.outputs if "image/png" in o.get("data", {})]


def _shown_texts(out) -> list[str]:
    """What the page shows of one output as text: a stream, or the text of a result or display
    without a figure (one with a PNG shows the figure, not its ``<Figure ...>`` repr)."""
    if out.output_type == "stream":
        return [out.text]
    data = out.get("data", {})
    return [] if "image/png" in data else [data.get("text/plain", "")]


def test_the_site_renders_the_committed_notebooks_with_myst_nb():
    conf = _conf_settings()
    assert "myst_nb" in conf["extensions"] and "myst_parser" not in conf["extensions"]
    assert conf["source_suffix"][".ipynb"] == "myst-nb"
    assert conf["nb_execution_mode"] == "off", "the site must not execute the notebooks"
    assert not {"myst", "myst.xref_missing", "toc", "toc.not_included", "mystnb",
                "mystnb.unknown_mime_type"} & set(conf["suppress_warnings"]), (
        "broken links, pages outside every toctree and outputs myst-nb cannot render must fail "
        "`make docs`"
    )
    assert 'write_docs_sources(HERE / "_generated" / "notebooks")' in CONF.read_text()
    site_index = (CONF.parent / "index.md").read_text()
    assert "_generated/notebooks/index" in site_index, "the notebook page is not in the site"


def test_the_docs_sources_are_the_committed_notebooks(tmp_path):
    import nbformat

    (tmp_path / "01_quickstart_files").mkdir()  # the former converter's output, and a notebook
    (tmp_path / "01_quickstart_files" / "a.png").write_bytes(b"x")  # no longer in the folder
    (tmp_path / "09_removed.ipynb").write_text("{}")
    stems = write_docs_sources(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["index.md"] + [p.name for p in ALL_NOTEBOOKS])
    index = (tmp_path / "index.md").read_text()
    toctree = index.split("```{toctree}", 1)[1].split("```", 1)[0].split()
    assert stems == [p.stem for p in ALL_NOTEBOOKS]
    for path in ALL_NOTEBOOKS:
        assert f"]({path.stem}.ipynb)" in index, f"{path.name} is not linked from the page"
        assert path.stem in toctree, f"{path.name} is not in the page's toctree"
        committed, copy = _load(path), _load(tmp_path / path.name)
        assert copy.cells[0] == committed.cells[0] and copy.cells[2:] == committed.cells[1:], (
            f"{path.name}: the site's copy differs from the committed cells and outputs"
        )
        assert copy.cells[1].cell_type == "markdown"
        assert committed.metadata[notebooks.METADATA_KEY]["executed"] in copy.cells[1].source
        assert copy.metadata["myst"] == notebooks.DOCS_MYST
        assert copy.metadata[notebooks.METADATA_KEY] == committed.metadata[notebooks.METADATA_KEY]
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    write_docs_sources(tmp_path)  # unchanged notebooks are not rewritten (nor rebuilt)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before
    assert nbformat.reads((tmp_path / ALL_NOTEBOOKS[0].name).read_text(), as_version=4)


def test_myst_nb_shows_every_output_of_every_notebook(tmp_path):
    """A site of the notebook pages alone, built by Sphinx with myst-nb and the settings of
    ``docs/api/conf.py``, warnings collected: each page shows every committed figure (the same
    PNG bytes) and every printed line, and nothing is executed (myst-nb records no run)."""
    pytest.importorskip("myst_nb", reason="the docs extra (pip install -e '.[docs]')")
    from myst_nb.sphinx_ import NbMetadataCollector
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    conf = _conf_settings()
    settings = {k: v for k, v in conf.items()
                if k.startswith(("nb_", "myst_")) or k in ("source_suffix", "suppress_warnings")}
    src, out = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['myst_nb']\n" + "".join(
        f"{k} = {v!r}\n" for k, v in settings.items()))
    (src / "index.md").write_text("# Site\n\n```{toctree}\nnotebooks/index\n```\n")
    write_docs_sources(src / "notebooks")
    warnings = io.StringIO()
    with patch_docutils(str(src)), docutils_namespace():  # as sphinx-build: no global leftovers
        app = Sphinx(str(src), str(src), str(out / "html"), str(out / "doctrees"), "html",
                     status=None, warning=warnings, freshenv=True)
        app.build()
    assert not warnings.getvalue(), warnings.getvalue()
    executed = [path.stem for path in ALL_NOTEBOOKS
                if NbMetadataCollector.get_exec_data(app.env, f"notebooks/{path.stem}")]
    assert not executed, f"the build executed {executed}"
    for path in ALL_NOTEBOOKS:
        nb = _load(path)
        page = out / "html" / "notebooks" / f"{path.stem}.html"
        html_text = page.read_text()
        sources = re.findall(r'<img[^>]* src="([^"]+)"', html_text)
        shown = [(page.parent / s).resolve().read_bytes() for s in sources]
        assert sorted(shown) == sorted(_png_outputs(nb)), (
            f"{path.name}: {len(_png_outputs(nb))} figures committed, {len(shown)} shown"
        )
        text = html.unescape(re.sub(r"<[^>]+>", "", html_text))
        printed = [line.strip() for c in nb.cells if c.cell_type == "code" for o in c.outputs
                   for text in _shown_texts(o) for line in text.splitlines()]
        missing = [line for line in printed if line and line not in text]
        assert not missing, f"{path.name}: outputs not on its page: {missing[:3]}"
        assert nb.metadata[notebooks.METADATA_KEY]["executed"] in text


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
