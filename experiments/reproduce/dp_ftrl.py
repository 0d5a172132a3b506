"""DP-FedAvg vs DP-FTRL (BandMF, tree) at equal epsilon: the results table of the compare sweep.

  python -m experiments.reproduce dp_ftrl --scale cpu --workdir runs/ftrl_compare
  python -m experiments.reproduce dp_ftrl --from-data   # the page from the committed data

:func:`export` reads the sweep of ``experiments/configs/dp_ftrl/compare.py`` (finished points
only) into the per-seed CSV ``dp_ftrl_compare.csv`` and its companion JSON (the runs' scale and
the planned points); the page (:func:`from_data`, ``templates/dp_ftrl.md``) is rendered from
those two files: per (method, target epsilon, adaptive clipping) the mean accuracy with its 95%
t-interval, the achieved epsilon (never above the target) and the noise multiplier, then the
comparisons with their interval verdicts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from experiments.reproduce import _common as _runs
from experiments.reproduce import declare, stats
from experiments.reproduce.claims import NOT_RUN, Cmp, Paired, decide
from jaxfl import sweep

METHOD_NAMES = {"dpfedavg": "DP-FedAvg (Poisson)", "bandmf": "DP-FTRL BandMF",
                "tree": "DP-FTRL tree"}
ORDER = ("dpfedavg", "bandmf", "tree")
CLAIMS = (("bandmf", "dpfedavg"), ("bandmf", "tree"), ("tree", "dpfedavg"))
COLUMNS = dict(method=str, target_epsilon=float, adaptive_clip=bool, seed=int, rounds=int,
               test_accuracy=float, epsilon=float, accountant=str, noise_multiplier=float,
               final_clip_norm=float, point_id=str)  # the per-seed CSV's columns and types
CONFIG = Path(__file__).resolve().parents[1] / "configs" / "dp_ftrl" / "compare.py"
DATA = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "data"
CSV, META = DATA / "dp_ftrl_compare.csv", DATA / "dp_ftrl_compare.json"
# The run config fields the page's scale line names (from the first run's config.json).
SCALE_KEYS = ("variant", "dataset", "model", "num_clients", "partition", "alpha",
              "clients_per_round", "rounds", "local_steps", "batch_size", "client_lr",
              "clip_norm", "target_quantile", "clip_lr", "count_noise", "delta")
EPS_SLACK = 1e-9  # achieved epsilon may not exceed the target by more than float noise


def per_seed(workdir) -> list[dict]:
    """One row per finished point (``rounds_completed == rounds``): its final test accuracy
    (the last round of ``results.csv``) and its privacy report."""
    workdir, last = Path(workdir), {}
    for row in sweep.read_table(workdir):
        if row.get("test_accuracy") not in (None, "") and int(row["round"]) > int(
                last.get(row["point_id"], {"round": -1})["round"]):
            last[row["point_id"]] = row
    out = []
    for pid, row in last.items():
        path = workdir / "points" / pid / "summary.json"
        s = json.loads(path.read_text()) if path.exists() else None
        if s is None or not s["rounds_completed"] == s["rounds"] == int(row["round"]):
            continue
        out.append({"method": row["method"], "target_epsilon": float(row["target_epsilon"]),
                    "adaptive_clip": row["adaptive_clip"].strip().lower() in ("true", "1", "yes"),
                    "seed": int(row["seed"]),
                    "rounds": s["rounds_completed"], "test_accuracy": float(row["test_accuracy"]),
                    "epsilon": float(s["privacy"]["epsilon"]),
                    "accountant": s["privacy"]["accountant"],
                    "noise_multiplier": float(s["info"]["noise_multiplier"]),
                    "final_clip_norm": float(s["final"].get("clip_norm", s["info"]["clip_norm"])),
                    "point_id": pid})
    return sorted(out, key=lambda r: (ORDER.index(r["method"]), *_cell_key(r)[1:], r["seed"]))


def _cell_key(r: dict) -> tuple:
    """The table cell of a row: (method, target epsilon, adaptive clipping)."""
    return r["method"], r["target_epsilon"], r["adaptive_clip"]


def _page_order(key: tuple) -> tuple:
    """The page's order of table cells: target epsilon, adaptive clipping, then :data:`ORDER`."""
    return key[1], key[2], ORDER.index(key[0])


def summarize(rows: list[dict]) -> list[dict]:
    """One row per (method, target epsilon, adaptive clipping), in the page's order: the seeds'
    accuracies (``accuracies``, by seed), their :func:`stats.interval` (``mean``, ``lo``,
    ``hi``, ``n``), the largest achieved epsilon and the noise multipliers.

    Raises:
      ValueError: a run reports an epsilon above its target."""
    out = []
    for (method, eps, adaptive), members in sorted(_runs.group(rows, _cell_key).items(),
                                                   key=lambda g: _page_order(g[0])):
        if (achieved := max(m["epsilon"] for m in members)) > eps + EPS_SLACK:
            raise ValueError(f"{method} eps={eps} adaptive={adaptive}: a run reports epsilon "
                             f"{achieved} above its target.")
        accuracies = {m["seed"]: m["test_accuracy"] for m in members}
        out.append({"method": method, "target_epsilon": eps, "adaptive_clip": adaptive,
                    **stats.interval(list(accuracies.values())), "accuracies": accuracies,
                    "seeds": sorted(accuracies), "epsilon": achieved, "noise_multiplier": sorted(
                        {round(m["noise_multiplier"], 6) for m in members})})
    return out


def comparisons(table: list[dict]) -> list[dict]:
    """The page's comparisons: :data:`CLAIMS` ("a beats b") per target epsilon and adaptive
    clipping where either cell ran, decided by :func:`experiments.reproduce.claims.decide` on
    the per-seed accuracies; the page's verdict is the interval rule (``not run`` without a
    cell), ``first`` / ``second`` the cells' means."""
    index = {_cell_key(r): r for r in table}
    decl = [Paired(f"{METHOD_NAMES[a]} beats {METHOD_NAMES[b]}", (Cmp((a, eps, ad), (
        b, eps, ad)),), dict(eps=eps, adaptive="on" if ad else "off"))
            for eps in sorted({r["target_epsilon"] for r in table}) for ad in (False, True)
            for a, b in CLAIMS if (a, eps, ad) in index or (b, eps, ad) in index]

    def mean(key):
        return f"{index[key]['mean']:.4f}" if key in index else "-"

    return [dict(r, verdict=NOT_RUN if r["missing"] else r["interval_verdict"],
                 first=mean(c.cmps[0].a), second=mean(c.cmps[0].b))
            for c, r in zip(decl, decide(decl, lambda k: index[k]["accuracies"] if k in index
                                         else None), strict=True)]


def read(path=CSV) -> list[dict]:
    """The per-seed rows of a CSV written by :func:`export`, typed as :func:`per_seed` makes
    them."""
    return _runs.read_rows(path, types=COLUMNS)


def _scale(cfg: dict | None) -> str:
    return "no finished point" if cfg is None else _runs.prose("dp_ftrl", "scale", c=dict(
        cfg, groups=cfg["num_clients"] // cfg["clients_per_round"],
        rate=cfg["clients_per_round"] / cfg["num_clients"]))


def render(scale: dict | None, rows: list[dict], table: list[dict], *,
           planned: list | None = None) -> str:
    """The page (template block ``page``): ``scale`` is the runs' config (:data:`SCALE_KEYS`;
    None: no finished point), ``rows`` the per-seed rows, ``table`` their :func:`summarize`,
    ``planned`` the points the sweep should hold (:func:`planned`)."""
    index = {_cell_key(r): r for r in table}
    todo = {tuple(p[:3]) for p in planned or () if p[0] is not None} - index.keys()
    cells = {k: " | ".join([f"{r['mean']:.4f}", "n/a" if math.isnan(r["lo"]) else
                            f"[{r['lo']:.4f}, {r['hi']:.4f}]", str(r["n"]), f"{r['epsilon']:.4f}",
                            ", ".join(f"{x:.4f}" for x in r["noise_multiplier"])])
             for k, r in index.items()}
    cells |= {k: "not run yet | | 0 | |" for k in todo}
    expected = None if planned is None else len(planned)
    return _runs.prose("dp_ftrl", "page", scale=_scale(scale), claims=comparisons(table), partial=(
        expected is not None and len(rows) < expected and dict(done=len(rows),
                                                               expected=expected)),
        rows=[dict(method=METHOD_NAMES[k[0]], eps=k[1], adaptive="on" if k[2] else "off",
                   cells=cells[k]) for k in sorted(cells, key=_page_order)]) + "\n"


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
    prov = json.dumps(_runs.provenance())
    if planned_points is None:
        return f'{{"provenance": {prov}, "scale": {json.dumps(scale)}, "planned": null}}\n'
    points = ",\n  ".join(json.dumps(list(p)) for p in planned_points)
    return (f'{{"provenance": {prov},\n "scale": {json.dumps(scale)},\n "planned": [\n  {points}'
            '\n ]}\n')


def from_data(csv_path=CSV, meta_path=None) -> str:
    """The page rendered from the per-seed CSV and its companion JSON (:func:`export`)."""
    meta = json.loads(Path(meta_path or Path(csv_path).with_suffix(".json")).read_text())
    rows = read(csv_path)
    return render(meta["scale"], rows, summarize(rows), planned=meta["planned"])


def run(run: declare.Run) -> list[dict]:
    """The figure's export: runs (or resumes) the compare sweep at ``run.scale`` in
    ``run.workdir`` and exports it (:func:`export`) into ``run.data``; returns the per-seed
    rows."""
    _runs.run_file(f"{CONFIG}:variant={run.scale}", run.workdir)
    return export(run.workdir, run.data / CSV.name)


PAPER = declare.Paper(
    name="dp_ftrl", title="DP-FedAvg vs DP-FTRL at equal epsilon (beyond the papers)", order=60,
    scales=("smoke", "cpu"),
    figures=(declare.Figure(
        "compare", "final test accuracy per method, target epsilon and adaptive clipping",
        lambda scale: [], (CSV.name, META.name), run, "final test accuracy"),),
    pages=(declare.Page("docs/reproduction/dp_ftrl.md", (CSV.name, META.name),
                        lambda inputs, text: from_data(inputs.data / CSV.name)),))


if __name__ == "__main__":  # the command docs/reproduction.md names
    __import__("experiments.reproduce.__main__", fromlist=["alias"]).alias("dp_ftrl")
