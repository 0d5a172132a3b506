"""Empirical privacy audits of every mechanism: writes the audit table (``make audit``).

  python -m experiments.audit --out docs/audit.md                 # full trials (minutes)
  python -m experiments.audit --out /tmp/a.md --scale smoke       # seconds, as in the tests
  python -m experiments.audit --out /tmp/a.md --only dp_fedavg,gossip_pair
  python -m experiments.audit --out docs/audit.md --only gossip_thm4_counterexample --merge

Each audit runs the library's mechanism many times (vmapped over trials inside jit) on
neighbouring inputs of its paper's neighbouring relation, applies the likelihood-ratio test to
the adversary's view of its threat model and reports a Clopper-Pearson epsilon lower bound
(95 %, held-out threshold) next to the accountant's claims at the same delta: ``strict`` (the
sound accounting, the library default) and ``paper`` (the published recipe, where it differs).
A lower bound above the strict claim would be a privacy bug; a lower bound above the paper
claim is a counterexample to the paper's analysis (expected only where the specs predict it).
Also writes the rows as JSON next to the table (``<out>.json``). The audits, their families
and the rows' outcomes are the library's registry (:mod:`jaxfl.audit.registry`); this module is
the command line and the page, whose fixed wording (its introduction, the notes under the
tables) is ``experiments/reproduce/templates/audit.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
from pathlib import Path

from jaxfl import checkpoint
from jaxfl.audit import registry
from jaxfl.audit.evidence import evidence
from jaxfl.repro import text as _text


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.3f}"


TABLE_HEAD = ("mechanism", "neighbours", "adversary's view", "delta", "claimed eps (strict)",
              "claimed eps (paper)", "audited eps lower bound (95% family-wise)", "evidence",
              "trials", "outcome")


def table(records: list[dict]) -> str:
    """The Markdown table of audit records (the JSON rows of
    :func:`jaxfl.audit.registry.records`)."""
    return "\n".join(_text.table(TABLE_HEAD, (
        [r["name"], r["neighbour"], r["view"], f"{r['delta']:g}",
         _fmt(r["claimed"].get("strict")), _fmt(r["claimed"].get("paper")),
         _fmt(r["epsilon_lb"]), evidence(r), r["trials_label"], r["outcome"]]
        for r in records))) + "\n"


def _provenance(recs: list[dict]) -> str:
    """The commands (and times) that generated ``recs``: the one behind most rows first, as
    "every row" (or "every row not named below"), the others with the rows they wrote."""
    runs: dict = {}
    for r in recs:
        g = r["generated"]
        runs.setdefault((g["utc"], g["command"]), []).append(r["audit"])
    groups = sorted(runs.items(), key=lambda kv: (-len(kv[1]), kv[0][0]))
    parts = []
    for i, ((utc, command), names) in enumerate(groups):
        which = ("every row not named below" if i == 0 and len(groups) > 1 else
                 "every row" if len(groups) == 1 else ", ".join(f"`{n}`" for n in names))
        parts.append(f"`{command}` ({utc}): {which}")
    return "; ".join(parts)


def render(recs: list[dict]) -> str:
    """The audit page of the JSON rows: one table per family, with the introduction and the
    notes of ``experiments/reproduce/templates/audit.md``."""
    families = list(dict.fromkeys(registry.FAMILIES[r["audit"]] for r in recs))
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    joint = round(100 * (1 - len(families) * (1 - registry.FAMILY_CONFIDENCE)))
    doc = [_text.prose("audit", "intro", runs=_provenance(recs),
                         tables=words.get(len(families), str(len(families))), joint=joint), ""]
    for fam in families:
        rows = [r for r in recs if registry.FAMILIES[r["audit"]] == fam]
        doc += [f"## {fam[0].upper()}{fam[1:]}", "", table(rows)]
    doc.append(_text.prose("audit", "notes") + "\n")
    return "\n".join(doc)


def write(rows, out: Path, scale: str, seed: int, *, only: str = "",
          merge: bool = False) -> list[dict]:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = (f"python -m experiments.audit --out {out} --scale {scale} --seed {seed}"
               + (f" --only {only}" if only else "") + (" --merge" if merge else ""))
    recs = registry.records(rows, scale, command, stamp)
    js = out.with_suffix(".json")
    if merge and js.exists():
        recs = registry.merged(json.loads(js.read_text()), recs)
    checkpoint.atomic_write_text(out, render(recs))
    checkpoint.atomic_write_text(js, json.dumps(recs, indent=2, sort_keys=True, default=str))
    return recs


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="markdown table path (docs/audit.md)")
    parser.add_argument("--scale", choices=registry.SCALES, default="full")
    parser.add_argument("--only", default="", help="comma-separated audit names")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--merge", action="store_true",
                        help="replace only these rows in the existing <out>.json (and rewrite "
                             "<out> from it); other rows keep their numbers and provenance")
    parser.add_argument("--from-json", action="store_true",
                        help="run nothing: rewrite <out> from the rows of <out>.json")
    args = parser.parse_args(argv)
    if args.from_json:
        out = Path(args.out)
        checkpoint.atomic_write_text(out, render(json.loads(out.with_suffix(".json")
                                                            .read_text())))
        return []
    names = [n for n in args.only.split(",") if n] or list(registry.AUDITS)
    unknown = sorted(set(names) - set(registry.AUDITS))
    if unknown:
        parser.error(f"unknown audits {unknown}; available: {sorted(registry.AUDITS)}")
    rows = registry.run(names, args.scale, args.seed, progress=lambda line: print(line, flush=True))
    write(rows, Path(args.out), args.scale, args.seed, only=args.only, merge=args.merge)
    return rows


if __name__ == "__main__":
    main()
