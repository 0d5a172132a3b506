"""Sphinx configuration of the jaxfl API reference (``make docs``).

The per-package pages (``_generated/*.rst``) are written here from the package tree, so a new
module appears without editing this directory; the guides include the markdown in ``docs/``.
The notebook pages (``_generated/notebooks/``) are written from ``notebooks/`` with the outputs
committed there (:func:`experiments.notebooks.write_docs_pages`), so every notebook of the
folder is listed and nothing is executed at build time.
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
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
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
# The markdown guides link to repository files (configs, notebooks, code) that are not pages of
# this site, and some docstrings have formatting docutils reads loosely; neither is an error of
# the reference itself.
suppress_warnings = ["myst.xref_missing", "myst.header", "docutils", "autodoc.import_object",
                     "ref.python", "toc.not_included"]

PACKAGES = {  # page -> (title, modules); subpackages list all their modules
    "core": ("Core: training loop, clipping, noise, checkpoints",
             ["jaxfl.training", "jaxfl.vmapped_runs", "jaxfl.sweep", "jaxfl.clipping", "jaxfl.ghost",
              "jaxfl.noise", "jaxfl.checkpoint", "jaxfl.metrics", "jaxfl.random", "jaxfl.tree",
              "jaxfl.sharding", "jaxfl.layout", "jaxfl.planner", "jaxfl.precision"]),
}
for sub in ("accounting", "algorithms", "data", "models", "topology", "sensitivity", "crypto",
            "audit"):
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


_write_pages()
notebooks.write_docs_pages(HERE / "_generated" / "notebooks")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
