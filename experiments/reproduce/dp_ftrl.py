"""DP-FedAvg vs DP-FTRL (BandMF, tree) at equal epsilon: the results table of the compare sweep.

  python -m experiments.reproduce dp_ftrl --scale cpu --workdir runs/ftrl_compare
  python -m experiments.reproduce dp_ftrl --from-data   # the page from the committed data
"""

from __future__ import annotations

import json

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
CONFIG = declare.ROOT / "experiments" / "configs" / "dp_ftrl" / "compare.py"
CSV, META = "dp_ftrl_compare.csv", "dp_ftrl_compare.json"
SCALE_KEYS = ("variant", "dataset", "model", "num_clients", "partition", "alpha",
              "clients_per_round", "rounds", "local_steps", "batch_size", "client_lr",
              "clip_norm", "target_quantile", "clip_lr", "count_noise", "delta")  # JSON "scale"
EPS_SLACK = 1e-9  # achieved epsilon may not exceed the target by more than float noise
CELL = ("method", "target_epsilon", "adaptive_clip")  # a row's table cell


def seed_row(cfg, run_dir) -> dict | None:
    """A point's per-seed row (:data:`COLUMNS`), None unless it ran and evaluated its last round."""
    path = run_dir / "summary.json"
    s = json.loads(path.read_text()) if path.exists() else None
    if s is None or not s["rounds_completed"] == s["rounds"] == s["final"]["round"] or s[
            "final"].get("test_accuracy") is None:
        return None
    final, info, privacy = s["final"], s["info"], s["privacy"]
    return dict(method=cfg.method, target_epsilon=float(cfg.target_epsilon),
                adaptive_clip=bool(cfg.adaptive_clip), seed=cfg.seed, rounds=s["rounds"],
                test_accuracy=final["test_accuracy"], epsilon=privacy["epsilon"],
                accountant=privacy["accountant"], noise_multiplier=info["noise_multiplier"],
                final_clip_norm=final.get("clip_norm", info["clip_norm"]), point_id=run_dir.name)


def render(meta: dict, rows: list[dict]) -> str:
    """The page (``templates/dp_ftrl.md``) of the per-seed ``rows`` and their JSON ``meta``
    (:func:`export`): each cell's seeds; :data:`CLAIMS` where either cell ran, by the interval
    rule. Raises ValueError when a run reports an epsilon above its target."""
    cells, planned, scale = {}, meta["planned"], meta["scale"]
    for (m, eps, ad), rs in _runs.group(rows, lambda r: tuple(r[k] for k in CELL)).items():
        if (achieved := max(r["epsilon"] for r in rs)) > eps + EPS_SLACK:
            raise ValueError(f"{m} eps={eps} adaptive={ad}: a run reports epsilon {achieved} "
                             "above its target.")
        iv = stats.interval((acc := {r["seed"]: r["test_accuracy"] for r in rs}).values())
        cells[m, eps, ad] = dict(iv, ci=iv["n"] > 1, acc=acc, epsilon=achieved, todo=False,
                                 noise=sorted({round(r["noise_multiplier"], 6) for r in rs}))
    claims = [Paired(f"{METHOD_NAMES[a]} beats {METHOD_NAMES[b]}", (Cmp(ka, kb),), dict(
        target_epsilon=e, adaptive_clip=ad, first=cells.get(ka), second=cells.get(kb)))
        for e in sorted({k[1] for k in cells}) for ad in (False, True) for a, b in CLAIMS
        for ka, kb in [((a, e, ad), (b, e, ad))] if ka in cells or kb in cells]
    if scale:
        scale = dict(scale, groups=scale["num_clients"] // scale["clients_per_round"],
                     rate=scale["clients_per_round"] / scale["num_clients"])
    table = {tuple(p[:3]): {"todo": True} for p in planned} | cells
    return _text.prose(
        "dp_ftrl", "page", scale=scale,
        partial=len(rows) < len(planned) and dict(done=len(rows), expected=len(planned)),
        claims=[dict(r, verdict=NOT_RUN if r["missing"] else r["interval_verdict"])
                for r in decide(claims, lambda k: cells.get(k, {}).get("acc"))],
        rows=[dict(table[k], name=METHOD_NAMES[k[0]], target_epsilon=k[1], adaptive_clip=k[2])
              for k in sorted(table, key=lambda k: (k[1], k[2], METHODS.index(k[0])))]) + "\n"


def export(run: declare.Run) -> list[dict]:
    """Writes the per-seed CSV of the run's finished points and its JSON (the scale, the planned
    points, the provenance); returns the rows. Refused (:func:`render`) before any write."""
    rows = [r for r in map(seed_row, run.configs, run.dirs) if r is not None]
    meta = dict(scale={k: getattr(run.configs[0], k) for k in SCALE_KEYS} if rows else None,
                planned=[[c.method, float(c.target_epsilon), bool(c.adaptive_clip), c.seed]
                         for c in run.configs])
    render(meta, rows)
    _runs.write_json(run.data / META, meta)
    return _runs.write_rows(run.data / CSV, rows, COLUMNS)


PAPER = declare.Paper(
    name="dp_ftrl", title="DP-FedAvg vs DP-FTRL at equal epsilon (beyond the papers)", order=60,
    scales=("smoke", "cpu"), figures=(declare.Figure(
        "compare", "final test accuracy per method, target epsilon and adaptive clipping",
        lambda scale: _config.sweep_configs(CONFIG, scale), (CSV, META), export,
        "final test accuracy"),),
    pages=(declare.Page("docs/reproduction/dp_ftrl.md", (CSV, META), lambda inputs, _: render(
        inputs.json(META), _runs.read_rows(inputs.data / CSV, types=COLUMNS))),))


if __name__ == "__main__":  # the command docs/reproduction.md names
    __import__("jaxfl.repro.cli", fromlist=["alias"]).alias("dp_ftrl")
