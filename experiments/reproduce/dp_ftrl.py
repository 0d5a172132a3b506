"""DP-FedAvg vs DP-FTRL (BandMF, tree) at equal epsilon: the results table of the compare sweep.

  python -m experiments.reproduce dp_ftrl --scale cpu --workdir runs/ftrl_compare
  python -m experiments.reproduce dp_ftrl --from-data   # the page from the committed data
"""

from __future__ import annotations

import itertools
import json
from operator import itemgetter
from pathlib import Path

from experiments import config as _config
from experiments.configs.fl import METHODS
from jaxfl.repro import declare, stats
from jaxfl.repro import runs as _runs
from jaxfl.repro import text as _text
from jaxfl.repro.claims import NOT_RUN, Cmp, Paired, decide

METHOD_NAMES = dict(zip(METHODS, ("DP-FedAvg (Poisson)", "DP-FTRL BandMF", "DP-FTRL tree")))
CLAIMS = (("bandmf", "dpfedavg"), ("bandmf", "tree"), ("tree", "dpfedavg"))  # "a beats b"
COLUMNS = dict(method=str, target_epsilon=float, adaptive_clip=bool, seed=int, rounds=int,
               test_accuracy=float, epsilon=float, accountant=str, noise_multiplier=float,
               final_clip_norm=float, point_id=str)  # the per-seed CSV's columns and types
CONFIG = Path(__file__).resolve().parents[1] / "configs" / "dp_ftrl" / "compare.py"
CSV, META = "dp_ftrl_compare.csv", "dp_ftrl_compare.json"
SCALE_KEYS = ("variant", "dataset", "model", "num_clients", "partition", "alpha",
              "clients_per_round", "rounds", "local_steps", "batch_size", "client_lr",
              "clip_norm", "target_quantile", "clip_lr", "count_noise", "delta")  # JSON "scale"
EPS_SLACK = 1e-9  # achieved epsilon may not exceed the target by more than float noise
_cell = itemgetter("method", "target_epsilon", "adaptive_clip")  # a row's table cell


def seed_row(cfg, run_dir) -> dict | None:
    """A point's per-seed row (:data:`COLUMNS`), None unless it ran and evaluated its last round."""
    path = Path(run_dir) / "summary.json"
    s = json.loads(path.read_text()) if path.exists() else None
    if s is None or not s["rounds_completed"] == s["rounds"] == s["final"]["round"] or s[
            "final"].get("test_accuracy") is None:
        return None
    final, info = s["final"], s["info"]
    return dict(method=cfg.method, target_epsilon=float(cfg.target_epsilon),
                adaptive_clip=bool(cfg.adaptive_clip), seed=cfg.seed, rounds=s["rounds"],
                test_accuracy=final["test_accuracy"], epsilon=s["privacy"]["epsilon"],
                accountant=s["privacy"]["accountant"], noise_multiplier=info["noise_multiplier"],
                final_clip_norm=final.get("clip_norm", info["clip_norm"]),
                point_id=path.parent.name)


def summarize(rows: list[dict]) -> dict[tuple, dict]:
    """The table's cells (method, target epsilon, adaptive clipping): the seeds' ``accuracies``
    with their :func:`stats.interval` (``ci``: two seeds or more), the largest achieved
    ``epsilon``, the distinct ``noise`` multipliers. Raises ValueError when a run reports an
    epsilon above its target."""
    out = {}
    for cell, members in _runs.group(rows, _cell).items():
        if (achieved := max(m["epsilon"] for m in members)) > cell[1] + EPS_SLACK:
            raise ValueError(f"{cell[0]} eps={cell[1]} adaptive={cell[2]}: a run reports "
                             f"epsilon {achieved} above its target.")
        accuracies = {m["seed"]: m["test_accuracy"] for m in members}
        noise = sorted({round(m["noise_multiplier"], 6) for m in members})
        iv = stats.interval(accuracies.values())
        out[cell] = dict(iv, ci=iv["n"] > 1, accuracies=accuracies, epsilon=achieved, todo=False,
                         noise=", ".join(f"{x:.4f}" for x in noise))
    return out


def comparisons(cells: dict[tuple, dict]) -> list[dict]:
    """:data:`CLAIMS` per target epsilon and adaptive clipping where either cell ran, decided by
    :func:`~jaxfl.repro.claims.decide` on the per-seed accuracies; ``verdict``: the
    interval rule (``not run`` without a cell); ``first`` / ``second``: the cells (or None)."""
    decl = []
    for eps, ad, (a, b) in itertools.product(sorted({k[1] for k in cells}), (False, True), CLAIMS):
        ca, cb = (a, eps, ad), (b, eps, ad)
        if ca in cells or cb in cells:
            decl.append(Paired(f"{METHOD_NAMES[a]} beats {METHOD_NAMES[b]}", (Cmp(ca, cb),), dict(
                target_epsilon=eps, adaptive_clip=ad, first=cells.get(ca), second=cells.get(cb))))
    return [dict(r, verdict=NOT_RUN if r["missing"] else r["interval_verdict"]) for r in decide(
        decl, lambda k: cells[k]["accuracies"] if k in cells else None)]


def render(meta: dict, rows: list[dict]) -> str:
    """The page of the per-seed ``rows`` and their companion JSON ``meta``: ``scale`` (the runs'
    :data:`SCALE_KEYS`; None: none finished) and ``planned`` (the sweep's points; a cell of them
    without a row is 'not run yet')."""
    cells, scale, planned = summarize(rows), meta["scale"], meta["planned"]
    table = {tuple(p[:3]): {"todo": True} for p in planned} | cells
    if scale:
        scale = dict(scale, groups=scale["num_clients"] // scale["clients_per_round"],
                     rate=scale["clients_per_round"] / scale["num_clients"])
    partial = len(rows) < len(planned) and dict(done=len(rows), expected=len(planned))
    order = sorted(table, key=lambda k: (k[1], k[2], METHODS.index(k[0])))  # eps, clip, method
    return _text.prose("dp_ftrl", "page", scale=scale, claims=comparisons(cells), partial=partial,
                       rows=[dict(table[k], name=METHOD_NAMES[k[0]], target_epsilon=k[1],
                                  adaptive_clip=k[2]) for k in order]) + "\n"


def export(run: declare.Run) -> list[dict]:
    """Writes the per-seed CSV of the run's finished points and its companion JSON; returns the
    rows. A run above its target epsilon is refused (:func:`summarize`) before any write."""
    rows = [r for r in map(seed_row, run.configs, run.dirs) if r is not None]
    summarize(rows)
    _runs.write_rows(run.data / CSV, rows, COLUMNS)
    scale = {k: getattr(run.configs[0], k) for k in SCALE_KEYS} if rows else None
    planned = ",\n  ".join(json.dumps([c.method, float(c.target_epsilon), bool(c.adaptive_clip),
                                       c.seed]) for c in run.configs)  # one point a line
    (run.data / META).write_text(f'{{"provenance": {json.dumps(_runs.provenance())},\n "scale": '
                                 f'{json.dumps(scale)},\n "planned": [\n  {planned}\n ]}}\n')
    return rows


PAPER = declare.Paper(
    name="dp_ftrl", title="DP-FedAvg vs DP-FTRL at equal epsilon (beyond the papers)", order=60,
    scales=("smoke", "cpu"),
    figures=(declare.Figure(
        "compare", "final test accuracy per method, target epsilon and adaptive clipping",
        lambda scale: [p.config for p in _config.sweep_points(f"{CONFIG}:variant={scale}")],
        (CSV, META), export, "final test accuracy"),),
    pages=(declare.Page("docs/reproduction/dp_ftrl.md", (CSV, META), lambda inputs, _: render(
        inputs.json(META), _runs.read_rows(inputs.data / CSV, types=COLUMNS))),))


if __name__ == "__main__":  # the command docs/reproduction.md names
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("dp_ftrl")
