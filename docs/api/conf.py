"""Sphinx configuration of the jaxfl API reference (``make docs``).

The per-package pages (``_generated/*.rst``) are written here from the package tree, so a new
module appears without editing this directory; the guides include the markdown in ``docs/``.
The notebook pages (``_generated/notebooks/``) are the committed notebooks of ``notebooks/``,
copied there with their outputs (:func:`experiments.notebooks.write_docs_sources`) and rendered
by myst-nb, the renderer of JAX's own documentation: every notebook of the folder is listed and
nothing is executed at build time (``nb_execution_mode = "off"``).
"""

import os
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

import jaxfl  # noqa: E402
from experiments import notebooks  # noqa: E402

project = "jaxfl"
release = jaxfl.__version__
# myst_nb parses the markdown pages as myst_parser would (the myst_* settings are its) and the
# notebooks; it registers both suffixes.
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode", "myst_nb"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_theme_options = {"page_width": "1200px", "sidebar_width": "260px"}
html_title = f"jaxfl {release}"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True,
                           "ignore-module-all": True}  # each object on its defining module's page
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # "Attributes:" as fields, not a second description of each member
nitpicky = False
myst_heading_anchors = 3
# Notebooks are shown with the outputs committed with them (`make notebooks-render`); a build
# executes nothing. An output myst-nb cannot render (mystnb.unknown_mime_type) is a warning,
# hence an error with -W.
nb_execution_mode = "off"
nb_merge_streams = True
# Some docstrings have formatting docutils reads loosely, which is no error of the reference
# itself. Broken links between the pages (myst.xref_missing) and pages outside every toctree
# (toc.not_included) are NOT suppressed: with -W they fail `make docs`.
suppress_warnings = ["myst.header", "docutils", "autodoc.import_object", "ref.python"]

PACKAGES = {  # page -> (title, modules); subpackages list all their modules
    "core": ("Core: training loop, clipping, noise, checkpoints",
             ["jaxfl.training", "jaxfl.vmapped_runs", "jaxfl.sweep", "jaxfl.selection",
              "jaxfl.ledger", "jaxfl.planner", "jaxfl.clipping", "jaxfl.ghost", "jaxfl.noise",
              "jaxfl.checkpoint", "jaxfl.metrics", "jaxfl.random", "jaxfl.tree", "jaxfl.sharding",
              "jaxfl.layout", "jaxfl.precision", "jaxfl.roofline", "jaxfl.compilation_cache"]),
}
for sub in ("accounting", "algorithms", "data", "tasks", "models", "topology", "sensitivity",
            "crypto", "audit"):
    pkg = __import__(f"jaxfl.{sub}", fromlist=["_"])
    mods = [f"jaxfl.{sub}"] + sorted(
        f"jaxfl.{sub}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)
        if not m.name.startswith("_"))
    PACKAGES[sub] = (f"jaxfl.{sub}", mods)


def _write_pages():
    out = HERE / "_generated"
    out.mkdir(exist_ok=True)
    for page, (title, modules) in PACKAGES.items():
        lines = [title, "=" * len(title), ""]
        for mod in modules:
            if mod != modules[0] or page == "core":
                lines += [f"``{mod}``", "-" * (len(mod) + 4), ""]
            lines += [f".. automodule:: {mod}", ""]
        text = "\n".join(lines)
        path = out / f"{page}.rst"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _write_reproduction_pages():
    """One page per ``docs/reproduction/*.md`` under ``guides/reproduction/`` (the folder the
    summary page's ``reproduction/<paper>.md`` links resolve to; the summary's toctree globs
    it), each including the committed page: its figures as images, its ``data/`` links as
    downloads."""
    out = HERE / "guides" / "reproduction"
    out.mkdir(exist_ok=True)
    for page in sorted((ROOT / "docs" / "reproduction").glob("*.md")):
        _write_if_changed(out / page.name, f"```{{include}} ../../../reproduction/{page.name}\n"
                          ":relative-docs: data/\n:relative-images:\n```\n")


def _write_figures_page():
    """``_generated/figures.md``: every PNG under ``docs/figures/`` (one section per paper), so
    a figure the reproduction pages only name is on the site too."""
    lines = ["# Figures", "", "Every figure committed under `docs/figures/`, by paper (written by "
             "the reproduction drivers; the pages under [Reproduction reports]"
             "(../guides/reproduction.md) say which run drew each).", ""]
    for folder in sorted(p for p in (ROOT / "docs" / "figures").iterdir() if p.is_dir()):
        lines += [f"## {folder.name}", ""]
        for png in sorted(folder.glob("*.png")):
            rel = png.relative_to(ROOT / "docs").as_posix()
            lines += [f"### `{rel}`", "", f"![{png.stem}](../../{rel})", ""]
    _write_if_changed(HERE / "_generated" / "figures.md", "\n".join(lines))


_write_pages()
_write_reproduction_pages()
_write_figures_page()
notebooks.write_docs_sources(HERE / "_generated" / "notebooks")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
