"""Executes the narrative notebooks in ``notebooks/`` headless, and renders them for the docs.

Every notebook reads its setting from the environment variable ``JAXFL_NOTEBOOK_SCALE``
(``small``, the default, runs in a few minutes on 2 CPU cores; ``full`` is the paper-scale
setting) in its first code cell, so the same file serves a reader in Jupyter, this runner and
the test suite.

Two ways to run them:

* ``make notebooks``: executed copies (with outputs) go to ``--out``; the repository is not
  touched.
* ``make notebooks-render`` (``--render``): each notebook is executed in its small setting on
  the CPU and written back into ``notebooks/`` with its outputs, so that a reader on GitHub and
  the API site (myst-nb renders the committed outputs, :func:`write_docs_sources`) see the
  results. Rendered outputs are made reproducible enough to commit: PNG figures at
  :data:`FIGURE_DPI` without a ``Software`` tag, no per-cell timing metadata, stream outputs
  merged, and paths of the machine that ran them replaced by placeholders (:func:`sanitize`).
  The notebook's metadata records what ran it (``metadata["jaxfl"]``: scale, UTC date,
  jax/jaxlib version, backend) and a hash of its code cells, so a test can tell committed
  outputs that no longer belong to the code.

    python -m experiments.notebooks [--scale small|full] [--out runs/notebooks] [NAME ...]
    python -m experiments.notebooks --render [NAME ...]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import re
import sys
import sysconfig
import tempfile
import time
from importlib import metadata as importlib_metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
SCALES = ("small", "full")
SCALE_VARIABLE = "JAXFL_NOTEBOOK_SCALE"
RENDER_SCALE = "small"
RENDER_PLATFORM = "cpu"
FIGURE_DPI = 80
# A rendered notebook larger than this is refused: its figures are too many or too large.
MAX_RENDERED_BYTES = 1_000_000
METADATA_KEY = "jaxfl"
# The inline backend's figures: a fixed dpi, and no "Software: Matplotlib version ..." tag in
# the PNG (a matplotlib upgrade alone would then rewrite every committed figure).
KERNEL_ARGUMENTS = (
    f"--InlineBackend.rc={{'figure.dpi': {FIGURE_DPI}}}",
    "--InlineBackend.print_figure_kwargs={'bbox_inches': 'tight', "
    "'metadata': {'Software': None}}",
)


def notebook_paths(names: list[str] | None = None) -> list[Path]:
    """The notebooks to run, in order; ``names`` match a file's stem or its prefix."""
    paths = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    if not names:
        return paths
    chosen = []
    for name in names:
        hits = [p for p in paths if p.stem == name or p.stem.startswith(name)]
        if not hits:
            available = ", ".join(p.stem for p in paths)
            raise ValueError(f"no notebook matches {name!r}; available: {available}")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def execute(path: Path, *, scale: str = "small", timeout: int = 1800,
            env_overrides: dict[str, str] | None = None, record_timing: bool = True):
    """Runs one notebook top to bottom in a fresh kernel and returns it with outputs.

    The file at ``path`` is read, never written.

    Raises:
      ValueError: for an unknown ``scale``.
      nbclient.exceptions.CellExecutionError: when a cell raises; the message names the cell
        and carries the traceback.
    """
    import nbclient
    import nbformat

    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    nb = nbformat.read(path, as_version=4)
    env = dict(os.environ)
    env[SCALE_VARIABLE] = scale
    env.pop("MPLBACKEND", None)  # the kernel picks its inline backend, which keeps figures
    # The kernel imports jaxfl and experiments from this checkout, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(env_overrides or {})
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        extra_arguments=list(KERNEL_ARGUMENTS),
        record_timing=record_timing,
    )
    client.execute(env=env)
    return nb


def code_hash(nb) -> str:
    """SHA-256 of the notebook's code cells (their sources, in order)."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        if cell.cell_type == "code":
            digest.update(cell.source.encode())
            digest.update(b"\0")
    return digest.hexdigest()


def _machine_paths() -> list[tuple[str, str]]:
    """(path, placeholder) pairs for paths of this machine, longest first."""
    paths = sysconfig.get_paths()
    pairs = [(str(REPO_ROOT), "<repo>"), (paths["purelib"], "<site-packages>"),
             (paths["platlib"], "<site-packages>"), (paths["stdlib"], "<stdlib>"),
             (str(Path.home()) + "/", "~/")]
    if sys.prefix not in ("/usr", "/usr/local"):  # a virtual environment or a private Python
        pairs.append((sys.prefix, "<python>"))
    data = os.environ.get("JAXFL_DATA_DIR")
    if data:
        pairs.append((str(Path(data).resolve()), "$JAXFL_DATA_DIR"))
        pairs.append((data.rstrip("/"), "$JAXFL_DATA_DIR"))
    pairs = [(p, r) for p, r in pairs if p.strip("/")]
    return sorted(set(pairs), key=lambda pr: -len(pr[0]))


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` lies strictly inside ``folder``."""
    return path.startswith(folder.rstrip("/") + "/")


def _sanitize_text(text: str, pairs: list[tuple[str, str]], tmp: re.Pattern) -> str:
    """``text`` with this machine's paths replaced: first the known paths that lie inside the
    temporary folder (a checkout or a virtual environment under /tmp is ``<repo>`` or
    ``<python>``, not ``<tmp>``), then a run's own temporary directories (random names), then
    the other known paths (longest first)."""
    root = tempfile.gettempdir()
    for path, placeholder in pairs:
        if _inside(path, root):
            text = text.replace(path, placeholder)
    text = tmp.sub("<tmp>", text)
    for path, placeholder in pairs:
        if not _inside(path, root):
            text = text.replace(path, placeholder)
    return text


def sanitize(nb) -> None:
    """Makes executed outputs reproducible enough to commit (in place).

    Drops nbclient's per-cell timestamps, merges consecutive stream outputs of one name (how
    a print is split into messages depends on timing), and replaces this machine's paths: a
    temporary directory by ``<tmp>``, the checkout by ``<repo>``, the installed packages by
    ``<site-packages>``, the standard library by ``<stdlib>``, a virtual environment's prefix by
    ``<python>``, the data directory by ``$JAXFL_DATA_DIR`` and the home directory by ``~``.
    """
    pairs = _machine_paths()
    tmp = re.compile(re.escape(tempfile.gettempdir().rstrip("/")) + r"/[^\s/'\"]+")
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        merged = []
        for out in cell.outputs:
            if (out.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == out.name):
                merged[-1].text += out.text
                continue
            merged.append(out)
        for out in merged:
            if out.output_type == "stream":
                out.text = _sanitize_text(out.text, pairs, tmp)
            elif out.output_type == "error":
                out.evalue = _sanitize_text(out.evalue, pairs, tmp)
                out.traceback = [_sanitize_text(t, pairs, tmp) for t in out.traceback]
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/") and isinstance(value, str):
                    out.data[mime] = _sanitize_text(value, pairs, tmp)
        cell.outputs = merged


def render(path: Path, *, timeout: int = 1800):
    """Executes ``path`` in its small setting on the CPU; returns the sanitized notebook."""
    import nbformat

    env = {"JAX_PLATFORMS": RENDER_PLATFORM}
    nb = execute(path, scale=RENDER_SCALE, timeout=timeout, env_overrides=env,
                 record_timing=False)
    sanitize(nb)
    nb.metadata[METADATA_KEY] = {
        "scale": RENDER_SCALE,
        "executed": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "backend": RENDER_PLATFORM,
        "jax": importlib_metadata.version("jax"),
        "jaxlib": importlib_metadata.version("jaxlib"),
        "code_sha256": code_hash(nb),
    }
    size = len(nbformat.writes(nb).encode())
    if size > MAX_RENDERED_BYTES:
        raise ValueError(f"{path.name} renders to {size:,} bytes (limit "
                         f"{MAX_RENDERED_BYTES:,}): fewer or smaller figures")
    return nb


# --- The API site's notebook pages (docs/api/conf.py, rendered by myst-nb) --------------------

_README_ROW = re.compile(r"^\|\s*`(?P<file>[0-9][0-9]_[^`]+\.ipynb)`\s*\|(?P<rest>.*)\|\s*$")
# MyST syntax the notebooks' markdown uses beyond CommonMark ($...$ and $$...$$ math, as GitHub
# renders it), set per notebook (myst-nb reads ``metadata["myst"]``) so the guides keep theirs.
DOCS_MYST = {"enable_extensions": ["dollarmath", "amsmath"]}


def readme_descriptions() -> dict[str, str]:
    """notebook stem -> its "what it shows" column in ``notebooks/README.md``."""
    out = {}
    for line in (NOTEBOOK_DIR / "README.md").read_text().splitlines():
        match = _README_ROW.match(line)
        if match:
            columns = [c.strip() for c in match["rest"].split("|")]
            out[Path(match["file"]).stem] = columns[-1]
    return out


def title(nb) -> str:
    """The notebook's title: the ``# `` heading of its first (markdown) cell."""
    first = nb.cells[0].source.lstrip() if nb.cells else ""
    if not first.startswith("# "):
        raise ValueError("a notebook starts with a markdown cell whose first line is '# title'")
    return first.splitlines()[0][2:].strip()


def provenance(nb, stem: str) -> str:
    """The note under a notebook's title on the site: which run its outputs come from."""
    source = f"`notebooks/{stem}.ipynb`"
    info = nb.metadata.get(METADATA_KEY)
    if not info:
        return (f"*Shown from {source}, which has no committed outputs "
                "(`make notebooks-render` adds them).*")
    return (f"*Shown from {source} with the outputs committed with it (the site does not "
            f"execute it): executed in its `{info['scale']}` setting on {info['executed']}, "
            f"jax {info['jax']}, {info['backend'].upper()} backend (`make notebooks-render`).*")


def docs_notebook(nb, stem: str):
    """The copy of a committed notebook that the site renders: its cells and outputs as they
    are, a provenance note after the title cell and :data:`DOCS_MYST` in its metadata."""
    import copy

    import nbformat

    nb = copy.deepcopy(nb)
    title(nb)  # the site's page title and the index's come from the first cell
    note = nbformat.v4.new_markdown_cell(provenance(nb, stem))
    if "id" in nb.cells[0]:
        note.id = "jaxfl-provenance"  # not a random one: the copy changes only with the notebook
    else:
        note.pop("id")
    nb.cells.insert(1, note)
    nb.metadata["myst"] = DOCS_MYST
    return nb


def index_markdown(stems_titles: list[tuple[str, str]], descriptions: dict[str, str]) -> str:
    """The site's notebook page: every notebook of the folder, in order, linked to its page."""
    missing = [stem for stem, _ in stems_titles if stem not in descriptions]
    if missing:
        raise ValueError(f"notebooks/README.md has no row for {missing}")
    lines = [
        "# Notebooks", "",
        f"The {len(stems_titles)} narrative notebooks in `notebooks/` of the repository, shown "
        "with the outputs committed with them (rendered by myst-nb; the site does not execute "
        "them). `make notebooks-render` executes every notebook in its small setting on the CPU "
        "and writes it back with its outputs; `make notebooks` runs them into `runs/notebooks/` "
        "without touching the repository; `tests/notebooks/` runs each in its small setting "
        "and checks the committed outputs.", "",
        "| notebook | title | what it shows |", "|---|---|---|",
    ]
    for stem, heading in stems_titles:
        lines.append(f"| [`{stem}`]({stem}.ipynb) | {heading} | {descriptions[stem]} |")
    lines += ["", "Without MNIST, fetch it first: `python -m jaxfl.data.download mnist`.", "",
              "```{toctree}", ":hidden:", ""]
    lines += [stem for stem, _ in stems_titles]
    lines += ["```", ""]
    return "\n".join(lines)


def write_docs_sources(out: Path) -> list[str]:
    """Writes the site's notebook sources into ``out``: ``index.md`` and each committed
    notebook (:func:`docs_notebook`), which myst-nb renders from its outputs.

    Files are rewritten only when their content changes (Sphinx then rebuilds only those), and
    files of notebooks renamed or removed, or of the former converter, are deleted. Returns the
    notebook stems, in the order of the page.
    """
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    stems_titles, wanted = [], {"index.md"}
    for path in notebook_paths():
        nb = nbformat.read(path, as_version=4)
        stems_titles.append((path.stem, title(nb)))
        wanted.add(path.name)
        _write_if_changed(out / path.name,
                          nbformat.writes(docs_notebook(nb, path.stem)).encode())
    _write_if_changed(out / "index.md",
                      index_markdown(stems_titles, readme_descriptions()).encode())
    for stale in sorted(out.rglob("*"), reverse=True):
        if stale.is_file() and stale.relative_to(out).as_posix() not in wanted:
            stale.unlink()
        elif stale.is_dir() and not any(stale.iterdir()):
            stale.rmdir()
    return [stem for stem, _ in stems_titles]


def _write_if_changed(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != content:
        path.write_bytes(content)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook stems or prefixes (default: all)")
    parser.add_argument("--scale", default="small", choices=SCALES)
    parser.add_argument("--out", default="runs/notebooks", help="directory for executed copies")
    parser.add_argument("--render", action="store_true",
                        help=f"execute in the {RENDER_SCALE} setting on the {RENDER_PLATFORM} "
                             "and write each notebook back into notebooks/ with its outputs")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    args = parser.parse_args(argv)
    if args.render and args.scale != RENDER_SCALE:
        parser.error(f"--render executes the {RENDER_SCALE} setting only")

    import nbformat

    paths = notebook_paths(args.names)
    out = NOTEBOOK_DIR if args.render else Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    total = time.perf_counter()
    for path in paths:
        start = time.perf_counter()
        try:
            if args.render:
                nb = render(path, timeout=args.timeout)
            else:
                nb = execute(path, scale=args.scale, timeout=args.timeout)
        except Exception as err:  # report every notebook, then fail
            failed.append(path.name)
            print(f"FAILED {path.name}: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        nbformat.write(nb, out / path.name)
        size = (out / path.name).stat().st_size
        print(f"ok     {path.name} ({args.scale}) {time.perf_counter() - start:.1f} s, "
              f"{size / 1e3:.0f} kB")
    print(f"{len(paths) - len(failed)} of {len(paths)} notebook(s) in "
          f"{time.perf_counter() - total:.0f} s")
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
