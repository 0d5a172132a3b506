"""DP-OGL Fig. 3 over several seeds: per-seed CSV from a sweep, intervals and verdicts.

  python -m experiments.sweep --workdir runs/dp_ogl_fig3_seeds \
      --config "experiments/configs/dp_ogl/fig3.py:variant=cpu,seeds=0:1:2"  # resumable
  python -m experiments.reproduce.dp_ogl_seeds --export runs/dp_ogl_fig3_seeds  # sweep -> CSV
  python -m experiments.reproduce.dp_ogl_seeds  # CSV -> docs/reproduction/dp_ogl_seeds.md

The per-seed rows (``docs/reproduction/data/dp_ogl_fig3_seeds.csv``) hold each point's utility
as :mod:`experiments.reproduce.dp_ogl` measures it (the mean over the last quarter of the logged
epochs of the test accuracy of the personalised models and of the training loss). Each Fig. 3
claim is a set of comparisons "a better than b"; each comparison gets the verdict of
:func:`experiments.reproduce.stats.verdict` (95% t-intervals), and the claim holds when every
comparison holds, does not hold when one of them fails, and is inconclusive otherwise. A curve
with fewer than two finished seeds leaves its claims inconclusive. The page's fixed wording is
``templates/dp_ogl_seeds.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from experiments.configs.dp_ogl import _common
from experiments.reproduce import _common as _runs
from experiments.reproduce import stats
from experiments.reproduce.dp_ogl import (
    ACC,
    FIG3_CLAIMS,
    LABELS,
    LOSS,
    SHORT,
    _tail,
    panel_label,
)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "reproduction" / "data" / "dp_ogl_fig3_seeds.csv"
REPORT = ROOT / "docs" / "reproduction" / "dp_ogl_seeds.md"
FIELDS = ("curve", "dataset", "variant", "mode", "seed", "epochs", "logged", ACC, LOSS,
          "final_test_accuracy")


def export(sweep_dirs, out: Path = DATA) -> list[dict]:
    """One row per finished point of the sweep directories (first directory wins)."""
    rows, seen = [], set()
    for d in sweep_dirs:
        for point in sorted((Path(d) / "points").glob("*")):
            if not (point / "summary.json").exists() or not (point / "metrics.jsonl").exists():
                continue
            c = _runs.run_config(point)
            key = (c["curve"], c["dataset"], c["variant"], c["mode"], c["seed"])
            if key in seen:
                continue
            seen.add(key)
            _, recs = _runs.read_run(point)
            acc = [r["test_accuracy"] for r in recs if "test_accuracy" in r]
            rows.append({"curve": c["curve"], "dataset": c["dataset"], "variant": c["variant"],
                         "mode": c["mode"], "seed": c["seed"], "epochs": c["epochs"],
                         "logged": len(acc), ACC: _tail(recs, "test_accuracy"),
                         LOSS: _tail(recs, "train_loss"),
                         "final_test_accuracy": acc[-1] if acc else float("nan")})
    rows.sort(key=lambda r: (r["curve"], int(r["seed"])))
    return _runs.write_rows(out, rows, FIELDS)


def read(path: Path = DATA) -> list[dict]:
    return _runs.read_rows(path, floats=(ACC, LOSS, "final_test_accuracy"),
                           ints=("seed", "epochs", "logged"))


def _values(rows, curve, key):
    return [r[key] for r in rows if r["curve"] == curve]


def _compare(rows, a, b, key) -> dict:
    """"curve a better than curve b" in ``key`` (accuracy higher, loss lower; the paired
    difference: accuracy a - b, loss b - a): :func:`experiments.reproduce.stats.compare`."""
    sign = -1.0 if key == LOSS else 1.0

    def by_seed(curve):
        return {r["seed"]: sign * r[key] for r in rows if r["curve"] == curve}

    return stats.compare(by_seed(a), by_seed(b))


def claims(rows) -> list[dict]:
    """The Fig. 3 claims (:data:`experiments.reproduce.dp_ogl.FIG3_CLAIMS`). A claim's verdict
    is its primary test (:data:`experiments.reproduce.stats.PRIMARY_RULE`): every comparison's
    paired per-seed difference, Holm-corrected over all the claims' comparisons; the claim
    holds when every comparison is significant in the claimed direction, does not hold when
    one is significant against it, and is inconclusive otherwise. The interval rule
    (:func:`experiments.reproduce.stats.verdict`) is reported beside it."""
    have = {r["curve"] for r in rows}
    found = []
    for claim, panel, comps in FIG3_CLAIMS:
        missing = sorted({c for a, b, _ in comps for c in (a, b)} - have)
        cs = [] if missing else [_compare(rows, a, b, k) for a, b, k in comps]
        found.append((claim, panel, comps, missing, cs, [stats.test(c["paired"]) for c in cs]))
    stats.holm([t for *_, tests in found for t in tests])
    out = []
    for claim, panel, comps, missing, cs, tests in found:
        if missing:
            out.append({"claim": claim, "panel": panel, "verdict": "not run",
                        "detail": f"curves not run: {', '.join(missing)}"})
            continue
        vs = [c["verdict"] for c in cs]
        failed = [f"{a} vs {b} ({SHORT[k]})"
                  for (a, b, k), v in zip(comps, vs, strict=True) if v == stats.FAILS]
        unclear = sum(v == stats.OVERLAP for v in vs)
        detail = f"{sum(v == stats.HOLDS for v in vs)}/{len(vs)} comparisons hold"
        if failed:
            detail += f"; fails: {', '.join(failed)}"
        if unclear:
            detail += f"; {unclear} overlap"
        pvs = [t["verdict"] for t in tests]
        if len(comps) <= 2:
            pdetail = "; ".join(f"{a} - {b} ({SHORT[k]}): "
                                f"{stats.fmt_paired(t['d'])}" for (a, b, k), t in
                                zip(comps, tests, strict=True))
        else:
            pdetail = f"{sum(v == stats.HOLDS for v in pvs)}/{len(pvs)} hold paired (Holm)"
            pf = sum(v == stats.FAILS for v in pvs)
            if pf:
                pdetail += f"; {pf} fail"
        verdict = stats.combine(pvs, stats.INCONCLUSIVE)
        out.append({"claim": claim, "panel": panel, "verdict": verdict,
                    "interval_verdict": stats.combine(vs), "detail": detail,
                    "paired_verdict": verdict, "paired_detail": pdetail})
    return out


def claims_table(rows) -> list[str]:
    """The claims of :func:`claims` as a Markdown table (this module's page and the DP-OGL
    report's generated block)."""
    return _runs.table(
        ("claim", "panel", "verdict (primary test)", "interval rule", "comparisons",
         "paired differences"),
        [(c["claim"], panel_label(c["panel"]), c["verdict"], c.get("interval_verdict", "-"),
          c["detail"], c.get("paired_detail", "-")) for c in claims(rows)])


def curves_table(rows, curves) -> list[str]:
    """Per curve: the seeds' last-quarter test accuracy and training loss (interval)."""
    cells = []
    for cv in curves:
        acc, loss = (stats.interval(_values(rows, cv, k)) for k in (ACC, LOSS))
        cells.append((LABELS.get(cv, cv), acc["n"], stats.fmt(acc), stats.fmt(loss)))
    return _runs.table(
        ("curve", "n", "test accuracy (last quarter)", "train loss (last quarter)"), cells)


def report(rows) -> str:
    """The page (``templates/dp_ogl_seeds.md``): the claims, then each panel's curves."""
    scale = sorted({(r["variant"], r["dataset"], r["mode"], r["epochs"]) for r in rows})
    panels = [_runs.prose("dp_ogl_seeds", "panel", panel=panel_label(panel),
                          table="\n".join(curves_table(rows, curves)))
              for panel, curves in _common.FIG3.items()]
    return _runs.prose("dp_ogl_seeds", "page",
                       scale="; ".join(", ".join(map(str, s)) for s in scale),
                       seeds=sorted({r["seed"] for r in rows}),
                       claims="\n".join(claims_table(rows)), panels="\n\n".join(panels)) + "\n"


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--export", action="append", default=[], metavar="SWEEP_DIR",
                        help="read finished points of these sweep directories into the CSV")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--out", default=str(REPORT))
    args = parser.parse_args(argv)
    if args.export:
        rows = export(args.export, Path(args.data))
        print(f"[dp_ogl_seeds] exported {len(rows)} points to {args.data}")
    rows = read(Path(args.data))
    Path(args.out).write_text(report(rows) + "\n")
    print(f"[dp_ogl_seeds] wrote {args.out}")
    return rows


if __name__ == "__main__":
    main()
