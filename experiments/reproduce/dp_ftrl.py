"""DP-FedAvg vs DP-FTRL (BandMF, tree) at equal epsilon: the results table of the compare sweep.

  python -m experiments.reproduce.dp_ftrl --workdir runs/ftrl_compare \
      [--csv docs/reproduction/data/dp_ftrl_compare.csv] [--md docs/reproduction/dp_ftrl.md]
  python -m experiments.reproduce.dp_ftrl --from-data   # the page from the committed data

Reads the sweep of ``experiments/configs/dp_ftrl/compare.py`` (``results.csv`` for the final
test accuracy of each point, ``points/<id>/summary.json`` for its privacy report and noise
multiplier, ``config.json`` for the scale) and exports the per-seed CSV
(``dp_ftrl_compare.csv``) and its companion JSON (``dp_ftrl_compare.json``: the runs' scale,
from their ``config.json``, and the planned points); the Markdown page is then rendered from
those two files only (:func:`from_data`, also called by :mod:`experiments.reproduce.pages`):
one row per (method, target epsilon, adaptive clipping) with the mean accuracy, its 95%
t-interval over seeds, the achieved epsilon (each run's own report; must not exceed the target)
and the noise multiplier, then the comparisons with a verdict from the intervals. Only finished
points (a summary with every round) are counted; the report says how many.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from experiments.reproduce import _common as _runs
from experiments.reproduce import stats
from jaxfl import sweep

METHOD_NAMES = {"dpfedavg": "DP-FedAvg (Poisson)", "bandmf": "DP-FTRL BandMF",
                "tree": "DP-FTRL tree"}
ORDER = ("dpfedavg", "bandmf", "tree")
CLAIMS = (("bandmf", "dpfedavg"), ("bandmf", "tree"), ("tree", "dpfedavg"))
COLUMNS = ("method", "target_epsilon", "adaptive_clip", "seed", "rounds", "test_accuracy",
           "epsilon", "accountant", "noise_multiplier", "final_clip_norm", "point_id")
CONFIG = Path(__file__).resolve().parents[1] / "configs" / "dp_ftrl" / "compare.py"
DATA = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "data"
CSV, META = DATA / "dp_ftrl_compare.csv", DATA / "dp_ftrl_compare.json"
# The run config fields the page's scale line names (from the first run's config.json).
SCALE_KEYS = ("variant", "dataset", "model", "num_clients", "partition", "alpha",
              "clients_per_round", "rounds", "local_steps", "batch_size", "client_lr",
              "clip_norm", "target_quantile", "clip_lr", "count_noise", "delta")
EPS_SLACK = 1e-9  # achieved epsilon may not exceed the target by more than float noise


def _bool(text) -> bool:
    return str(text).strip().lower() in ("true", "1", "yes")


def per_seed(workdir) -> list[dict]:
    """One row per finished point: its final test accuracy and its privacy report."""
    workdir = Path(workdir)
    final: dict[str, dict] = {}
    for row in sweep.read_table(workdir):
        if row.get("test_accuracy") in (None, ""):
            continue
        pid = row["point_id"]
        if pid not in final or int(row["round"]) > int(final[pid]["round"]):
            final[pid] = row
    out = []
    for pid, row in final.items():
        path = workdir / "points" / pid / "summary.json"
        if not path.exists():
            continue
        summary = json.loads(path.read_text())
        if summary["rounds_completed"] < summary["rounds"] or \
                int(row["round"]) != summary["rounds_completed"]:
            continue
        privacy = summary["privacy"]
        out.append({"method": row["method"], "target_epsilon": float(row["target_epsilon"]),
                    "adaptive_clip": _bool(row["adaptive_clip"]), "seed": int(row["seed"]),
                    "rounds": summary["rounds_completed"],
                    "test_accuracy": float(row["test_accuracy"]),
                    "epsilon": float(privacy["epsilon"]), "accountant": privacy["accountant"],
                    "noise_multiplier": float(summary["info"]["noise_multiplier"]),
                    "final_clip_norm": float(summary["final"].get("clip_norm",
                                                                  summary["info"]["clip_norm"])),
                    "point_id": pid})
    out.sort(key=lambda r: (ORDER.index(r["method"]), r["target_epsilon"], r["adaptive_clip"],
                            r["seed"]))
    return out


def summarize(rows: list[dict]) -> list[dict]:
    """One row per (method, target epsilon, adaptive clipping): the seeds' accuracies
    (``accuracies``, by seed) and their mean with its 95% t-interval (:func:`stats.interval`:
    ``mean``, ``lo``, ``hi``, ``n``)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["method"], r["target_epsilon"], r["adaptive_clip"]), []).append(r)
    out = []
    for (method, eps, adaptive), members in groups.items():
        achieved = max(m["epsilon"] for m in members)
        if achieved > eps + EPS_SLACK:
            raise ValueError(f"{method} eps={eps} adaptive={adaptive}: a run reports epsilon "
                             f"{achieved} above its target.")
        accuracies = {m["seed"]: m["test_accuracy"] for m in members}
        sigmas = sorted({round(m["noise_multiplier"], 6) for m in members})
        out.append({"method": method, "target_epsilon": eps, "adaptive_clip": adaptive,
                    **stats.interval(list(accuracies.values())), "accuracies": accuracies,
                    "seeds": sorted(accuracies), "epsilon": achieved,
                    "noise_multiplier": sigmas})
    out.sort(key=lambda r: (r["target_epsilon"], r["adaptive_clip"], ORDER.index(r["method"])))
    return out


def verdict(a: dict | None, b: dict | None) -> str:
    """"``a`` beats ``b``" by :func:`stats.verdict` on the two cells' per-seed accuracies."""
    if a is None or b is None:
        return "not run"
    return stats.verdict(list(a["accuracies"].values()), list(b["accuracies"].values()))


def _fmt_interval(r: dict) -> str:
    if math.isnan(r["lo"]):
        return "n/a"
    return f"[{r['lo']:.4f}, {r['hi']:.4f}]"


def read(path=CSV) -> list[dict]:
    """The per-seed rows of a CSV written by :func:`export`, typed as :func:`per_seed` makes
    them."""
    rows = _runs.read_rows(path, floats=("target_epsilon", "test_accuracy", "epsilon",
                                         "noise_multiplier", "final_clip_norm"),
                           ints=("seed", "rounds"))
    for r in rows:
        r["adaptive_clip"] = _bool(r["adaptive_clip"])
    return rows


def _scale(cfg: dict | None) -> str:
    if cfg is None:
        return "no finished point"
    return (f"{cfg['dataset']}, model {cfg['model']}, {cfg['num_clients']} clients "
            f"({cfg['partition']} label skew, alpha={cfg['alpha']}), {cfg['clients_per_round']} "
            f"clients per round (DP-FedAvg: Poisson rate "
            f"{cfg['clients_per_round'] / cfg['num_clients']:g}; DP-FTRL: "
            f"{cfg['num_clients'] // cfg['clients_per_round']} cyclic groups), "
            f"{cfg['rounds']} rounds, {cfg['local_steps']} local steps of batch "
            f"{cfg['batch_size']} at lr {cfg['client_lr']}, initial clip norm {cfg['clip_norm']}; "
            f"adaptive clipping: target quantile {cfg['target_quantile']}, lr {cfg['clip_lr']}, "
            f"count noise std {cfg['count_noise']}; delta={cfg['delta']:g}")


def render(scale: dict | None, rows: list[dict], table: list[dict], *,
           planned: list | None = None) -> str:
    """The page: ``scale`` is the runs' config (:data:`SCALE_KEYS`; None: no finished point),
    ``rows`` the per-seed rows, ``table`` their :func:`summarize`, ``planned`` the points the
    sweep should hold (:func:`planned`)."""
    lines = ["# DP-FedAvg vs DP-FTRL (BandMF, tree) at equal epsilon", "",
             "Generated by `python -m experiments.reproduce.dp_ftrl --workdir DIR` from the sweep "
             "`python -m experiments.sweep --config experiments/configs/dp_ftrl/compare.py:"
             "variant=cpu --workdir DIR` (issue 17). Do not edit by hand.", "",
             f"Scale: {_scale(scale)}.", "",
             "Every run's noise multiplier is calibrated so that its own accountant reports the "
             "target epsilon after the last round (DP-FedAvg: Poisson-subsampled Gaussian, PLD; "
             "DP-FTRL: one Gaussian with the strategy's (k, b)-participation sensitivity, no "
             "amplification). With adaptive clipping the accountant also composes the noisy "
             "unclipped counts, so the update noise is a little larger at the same epsilon. "
             "'achieved epsilon' is the largest headline epsilon over the seeds (summary.json), "
             "never above the target (the per-round `epsilon` column of results.csv is the "
             "faster RDP bound for DP-FedAvg, a little higher). DP-FTRL's adaptive clipping "
             "adds the round's correlated noise to the sum normalised by the current clip norm "
             "and rescales it (the matrix mechanism on unit-norm contributions), and its "
             "accountant composes the k noisy counts of each client "
             "(`jaxfl.accounting.dp_ftrl.ftrl_adaptive_clip_event`).", ""]
    done, expected = len(rows), None if planned is None else len(planned)
    if expected is not None and done < expected:
        lines += [f"**Partial: {done} of {expected} runs finished**; cells with fewer seeds "
                  "or marked 'not run yet' are incomplete (rerun the sweep command to resume).",
                  ""]
    lines += _runs.table(("method", "target eps", "adaptive clip", "mean test acc",
                          "95% t-interval", "n seeds", "achieved eps", "noise multiplier"))
    order = lambda c: (c[1], c[2], ORDER.index(c[0]))  # noqa: E731
    entries = []
    for r in table:
        sig = ", ".join(f"{x:.4f}" for x in r["noise_multiplier"])
        key = (r["method"], r["target_epsilon"], r["adaptive_clip"])
        entries.append((order(key), f"| {METHOD_NAMES[r['method']]} | {r['target_epsilon']:g} | "
                        f"{'on' if r['adaptive_clip'] else 'off'} | {r['mean']:.4f} | "
                        f"{_fmt_interval(r)} | {r['n']} | {r['epsilon']:.4f} | {sig} |"))
    cells = {(r["method"], r["target_epsilon"], r["adaptive_clip"]) for r in table}
    todo = {tuple(p[:3]) for p in planned or () if p[0] is not None} - cells
    for method, eps, adaptive in todo:
        entries.append((order((method, eps, adaptive)),
                        f"| {METHOD_NAMES[method]} | {eps:g} | {'on' if adaptive else 'off'} | "
                        "not run yet | | 0 | | |"))
    lines += [line for _, line in sorted(entries)]
    index = {(r["method"], r["target_epsilon"], r["adaptive_clip"]): r for r in table}
    epsilons = sorted({r["target_epsilon"] for r in table})
    lines += ["", "## Comparisons", "",
              "Verdict from the 95% intervals: holds when the first method's interval lies "
              "entirely above the second's, does not hold when entirely below, inconclusive "
              "when they overlap (a conservative rule at this number of seeds).", "",
              *_runs.table(("claim", "eps", "adaptive clip", "first", "second", "verdict"))]
    for eps in epsilons:
        for adaptive in (False, True):
            for a, b in CLAIMS:
                ra, rb = index.get((a, eps, adaptive)), index.get((b, eps, adaptive))
                if ra is None and rb is None:
                    continue
                fa = f"{ra['mean']:.4f}" if ra else "-"
                fb = f"{rb['mean']:.4f}" if rb else "-"
                lines.append(f"| {METHOD_NAMES[a]} beats {METHOD_NAMES[b]} | {eps:g} | "
                             f"{'on' if adaptive else 'off'} | {fa} | {fb} | "
                             f"{verdict(ra, rb)} |")
    lines += ["", "Per-seed numbers: [data/dp_ftrl_compare.csv](data/dp_ftrl_compare.csv).", ""]
    return "\n".join(lines)


def planned(workdir: Path, rows: list[dict]) -> list[tuple] | None:
    """The (method, target epsilon, adaptive, seed) points the table should hold: the compare
    config's sweep for the runs' variant, else the sweep manifest's points (None: unknown)."""
    variant = None
    if rows:
        variant = _runs.run_config(workdir / "points" / rows[0]["point_id"]).get("variant")
    if variant in ("cpu", "smoke"):
        from experiments import config as config_lib
        module = config_lib.load_module(str(CONFIG))
        return [(p["method"], float(p["target_epsilon"]), bool(p["adaptive_clip"]), p["seed"])
                for p in module.get_sweep(f"variant={variant}")]
    manifest = workdir / "sweep.json"
    if not manifest.exists():
        return None
    return [(None, None, None, p["id"]) for p in json.loads(manifest.read_text())["points"]]


def export(workdir, csv_path=CSV, meta_path=None) -> list[dict]:
    """Writes the sweep's per-seed CSV and, beside it (``meta_path``; default: the CSV's name
    with ``.json``), the runs' scale and planned points; returns the per-seed rows."""
    workdir = Path(workdir)
    if not (workdir / sweep.TABLE).exists():
        raise FileNotFoundError(f"{workdir / sweep.TABLE} does not exist: run the sweep first.")
    rows = per_seed(workdir)
    summarize(rows)  # refuses a run above its target epsilon before anything is written
    _runs.write_rows(csv_path, [{k: r[k] for k in COLUMNS} for r in rows], COLUMNS)
    cfg = _runs.run_config(workdir / "points" / rows[0]["point_id"]) if rows else None
    scale = None if cfg is None else {k: cfg.get(k) for k in SCALE_KEYS}
    meta_path = Path(meta_path or Path(csv_path).with_suffix(".json"))
    meta_path.write_text(meta_text(scale, planned(workdir, rows)))
    return rows


def meta_text(scale: dict | None, planned_points: list | None) -> str:
    """The companion JSON of the per-seed CSV: ``{"scale": ..., "planned": [...]}``, one
    planned point a line."""
    if planned_points is None:
        return json.dumps({"scale": scale, "planned": None}) + "\n"
    points = ",\n  ".join(json.dumps(list(p)) for p in planned_points)
    return f'{{"scale": {json.dumps(scale)},\n "planned": [\n  {points}\n ]}}\n'


def from_data(csv_path=CSV, meta_path=None) -> str:
    """The page rendered from the per-seed CSV and its companion JSON (:func:`export`)."""
    meta = json.loads(Path(meta_path or Path(csv_path).with_suffix(".json")).read_text())
    rows = read(csv_path)
    return render(meta["scale"], rows, summarize(rows), planned=meta["planned"])


def main(argv=None) -> list[dict]:
    """Exports ``--workdir`` (unless ``--from-data``), writes the page; returns the table
    (:func:`summarize`)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", help="the compare sweep's workdir (exported first)")
    ap.add_argument("--from-data", action="store_true",
                    help="render from the committed CSV and JSON only (no workdir)")
    ap.add_argument("--csv", default=str(CSV))
    ap.add_argument("--md", default="docs/reproduction/dp_ftrl.md")
    args = ap.parse_args(argv)
    if not args.from_data:
        if args.workdir is None:
            ap.error("--workdir is required without --from-data")
        export(args.workdir, args.csv)
    md = Path(args.md)
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(from_data(args.csv))
    return summarize(read(args.csv))


if __name__ == "__main__":
    main()
