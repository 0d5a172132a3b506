"""One entry point for every declared paper (:mod:`jaxfl.repro.declare`).

  python -m experiments.reproduce PAPER [--figure F ...] [--scale S] [--workdir W] [--from-data]
  python -m experiments.reproduce --list          # the papers, their figures, scales and claims

With ``--workdir`` (and without ``--from-data``), runs the selected figures (default: all) at
the scale and exports their data into ``--data`` (default: the committed folder); then renders
the paper's pages from the data and prints its claims-table rows (of the selected figures'
claims). With the committed folder it also rewrites the pages and the summary (``--check``:
write nothing, exit 1 on a stale page); another folder gets the pages beside its data.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from jaxfl.repro import declare, pages


def _list() -> str:
    out = []
    for p in declare.papers():
        out.append(f"{p.name}: {p.title} (scales: {', '.join(p.scales) or '-'})")
        out += [f"  figure {f.name}: {f.title} -> {', '.join(f.data)}" for f in p.figures]
        out += [f"  claim {c.name} [{c.rule.kind}]: {c.text}" for c in p.claims]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.reproduce",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("paper", nargs="?", help="a declared paper (--list)")
    ap.add_argument("--figure", action="append", default=[], help="a figure (repeatable)")
    ap.add_argument("--scale", default=None, help="default: the paper's cpu scale")
    ap.add_argument("--workdir", type=Path, help="run the figures here (resumable)")
    ap.add_argument("--data", type=Path, default=None, help="data folder (default: committed)")
    ap.add_argument("--figures", type=Path, default=None, help="PNG folder (default: workdir)")
    ap.add_argument("--from-data", action="store_true", help="run nothing")
    ap.add_argument("--check", action="store_true", help="exit 1 on a stale page")
    ap.add_argument("--list", action="store_true", help="list the declarations")
    args = ap.parse_args(argv)
    if args.list or args.paper is None:
        print(_list())
        return 0
    try:  # the paper and its figures named before anything runs
        paper = declare.paper(args.paper)
        for f in args.figure:
            paper.figure(f)
    except KeyError as err:
        ap.error(err.args[0])
    scale = args.scale or ("cpu" if "cpu" in paper.scales else paper.scales[0])
    if scale not in paper.scales:
        ap.error(f"--scale: expected one of {paper.scales} for {paper.name}, got {scale!r}")
    data = args.data or pages.DATA
    if args.workdir is not None and not args.from_data:
        args.workdir.mkdir(parents=True, exist_ok=True)
        declare.run_figures(paper, args.figure or [f.name for f in paper.figures], scale,
                            args.workdir, data, args.figures or args.workdir)
    ctx = declare.Inputs(data, pages.AUDIT, pages.ROOT)
    claims = [c for c in paper.claims if not args.figure or c.figure in args.figure]
    print("\n".join(pages.claim_rows(dataclasses.replace(paper, claims=tuple(claims)), ctx)))
    if data.resolve() != pages.DATA.resolve():
        for pg in paper.pages:  # pages of another data folder go beside it, where it has them
            if all((data / f).exists() for f in pg.data):
                (data / Path(pg.path).name).write_text(pg.render(ctx, ""))
        return 0
    return pages.main(["--check"] if args.check else [])


def alias(paper: str, *args: str) -> None:
    """``python -m <paper package>.<module> ARGS`` as ``python -m experiments.reproduce
    PAPER *args ARGS`` (the drivers' old commands, named on committed pages)."""
    import sys

    raise SystemExit(main([paper, *args, *sys.argv[1:]]))


if __name__ == "__main__":
    raise SystemExit(main())
