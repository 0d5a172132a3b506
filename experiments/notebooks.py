"""Executes the narrative notebooks in ``notebooks/`` headless (``make notebooks``).

Every notebook reads its setting from the environment variable ``JAXFL_NOTEBOOK_SCALE``
(``small``, the default, runs in a few minutes on 2 CPU cores; ``full`` is the paper-scale
setting) in its first code cell, so the same file serves a reader in Jupyter, this runner and
the test suite. Executed copies (with outputs) are written to ``--out``; the notebooks in the
repository are kept without outputs.

    python -m experiments.notebooks [--scale small|full] [--out runs/notebooks] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
SCALES = ("small", "full")
SCALE_VARIABLE = "JAXFL_NOTEBOOK_SCALE"


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


def execute(path: Path, *, scale: str = "small", timeout: int = 1800):
    """Runs one notebook top to bottom in a fresh kernel and returns it with outputs.

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
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute(env=env)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook stems or prefixes (default: all)")
    parser.add_argument("--scale", default="small", choices=SCALES)
    parser.add_argument("--out", default="runs/notebooks", help="directory for executed copies")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    args = parser.parse_args(argv)

    import nbformat

    paths = notebook_paths(args.names)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for path in paths:
        start = time.perf_counter()
        try:
            nb = execute(path, scale=args.scale, timeout=args.timeout)
        except Exception as err:  # report every notebook, then fail
            failed.append(path.name)
            print(f"FAILED {path.name}: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        nbformat.write(nb, out / path.name)
        print(f"ok     {path.name} ({args.scale}) {time.perf_counter() - start:.1f} s")
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
