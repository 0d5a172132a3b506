"""Reproduction of LightDP-FL (arXiv 2412.06120): Tables II and III, Fig. 3 and Fig. 4.

  python -m experiments.reproduce.lightdp [--scale smoke|cpu|full] [--dataset mnist]
      [--only table2,table3,fig3,fig4] [--seeds 1] [--fig3-seeds 3] --workdir DIR

* ``full``: CIFAR-10 / ResNet-18-GN, the paper's setting (GPU host; needs the CIFAR-10 pickles).
* ``cpu``: MNIST (or Fashion-MNIST) with a small CNN, N = 50, T = 20 (2 CPU cores).
* ``smoke``: a handful of tiny runs exercising every output (tests).

Runs are one sweep of :func:`jaxfl.sweep.run_sweep` in ``DIR`` (resumable: finished points are
read back from ``DIR/points/<id>/``, killed ones continue from their checkpoints). Outputs:
``DIR/results.json``, the figures (``--figures``, default ``docs/figures/lightdp`` except in
smoke), the data files of :mod:`experiments.reproduce.lightdp_report` (``--data``, default
``docs/reproduction/data``: the per-seed CSV and the measured costs) and the generated part of
``docs/reproduction/lightdp.md`` (``--docs``), rendered from those files: Tables II/III with the
paper's numbers beside ours, Fig. 3 with 95% t-intervals over seeds, the noise design and
accounting of every cell (strict and paper mode), the Fig. 4 cost model with measured timings,
and a verdict per claim by the rule of :mod:`experiments.reproduce.stats`. ``--from-data``
renders the report from the committed files without running anything (as
``python -m experiments.reproduce.pages`` does).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from experiments.configs.lightdp import _common, cifar10_resnet18, fashion_mnist_cnn, mnist_cnn
from experiments.reproduce import _common as _runs
from experiments.reproduce import lightdp_report as report
from jaxfl import sweep
from jaxfl.algorithms import lightdp_cost as cost

DATA = Path("docs/reproduction/data")
EPS = report.EPS


def base_config(scale: str, dataset: str) -> _common.LightDPConfig:
    if scale == "full":
        return cifar10_resnet18.get_config()
    module = {"mnist": mnist_cnn, "fashion_mnist": fashion_mnist_cnn}[dataset]
    return module.get_config(f"variant={scale}")


def smoke_rows(rows: list[dict], num_clients: int) -> list[dict]:
    """Smoke: keep one epsilon and map C_bar / S_bar to a small N (labels keep the paper's)."""
    f = num_clients / 50
    out = []
    for row in rows:
        if row["epsilon"] != 3.0 and not row["name"].startswith("fig4"):
            continue
        c = min(num_clients - 3, max(0, round(row["max_colluders"] * f)))
        s = min(num_clients - 3 - c, max(0, round(row["max_stragglers"] * f)))
        out.append({**row, "max_colluders": c, "max_stragglers": s,
                    "paper_C": row["max_colluders"], "paper_S": row["max_stragglers"]})
    return out


def run_sweep(base: _common.LightDPConfig, rows: list[dict], workdir: Path, seeds: int
              ) -> dict:
    """Runs every row and seed as one sweep of :func:`jaxfl.sweep.run_sweep` (points built by
    :func:`experiments.builders.run_spec`, vmapped where the layout allows; rerunning resumes:
    finished points are read back, killed ones continue from their checkpoints); returns
    name -> list of ``{row, summary, history}`` read from the points' directories. A row may
    carry its own ``"seeds"`` count (e.g. Fig. 3).
    """
    runs, configs = [], []
    for row in rows:
        fields = {k: v for k, v in row.items() if not k.startswith("paper_") and k != "seeds"}
        for seed in range(row.get("seeds", seeds)):
            runs.append((row, seed))
            configs.append(sweep.with_overrides(base, {**fields, "seed": seed}))
    t0 = time.time()
    dirs = _runs.run_configs(configs, workdir)
    results: dict[str, list] = {}
    for (row, seed), run_dir in zip(runs, dirs, strict=True):
        summary, history = _runs.read_run(run_dir)
        results.setdefault(row["name"], []).append(
            {"row": row, "summary": summary, "history": history})
        print(f"[lightdp] {row['name']} seed {seed}: acc "
              f"{history[-1].get('test_accuracy', float('nan')):.4f}")
    print(f"[lightdp] {len(dirs)} runs in {time.time() - t0:.0f}s")
    return results


# ------------------------------------------------------------------------------ figures


def _curve(results, name):
    """(rounds, mean test accuracy % over seeds) of run ``name``; (None, None) without it."""
    runs = results.get(name, [])
    if not runs:
        return None, None
    rounds = np.array([h["round"] for h in runs[0]["history"]])
    acc = np.mean([[h["test_accuracy"] * 100 for h in r["history"]] for r in runs], axis=0)
    return rounds, acc


def plot_fig3(results: dict, path: Path, eps_list=EPS) -> None:
    fig, axes = _runs.pyplot().subplots(1, len(eps_list), figsize=(4 * len(eps_list), 3.2),
                                        squeeze=False)
    for ax, e in zip(axes[0], eps_list, strict=True):
        for name, label in [(f"table2_eps{e}_C10", "LightDP-FL"), (f"fig3_eps{e}_ldp", "LDP"),
                            (f"fig3_eps{e}_smpc_dp", "SMPC+DP")]:
            r, a = _curve(results, name)
            if r is not None:
                ax.plot(r, a, label=label)
        ax.set_title(f"ε = {e}")
        ax.set_xlabel("round")
        ax.set_ylabel("test accuracy (%)")
        ax.grid(alpha=0.3)
    axes[0][0].legend()
    _runs.save(fig, path)


def measure_costs(base: _common.LightDPConfig, results: dict, *, key_bits: int) -> dict:
    """Measured per-op times for the Fig. 4 cost model (our CNN, our noise code, phe)."""
    runs = results.get("fig4_lightdp", [])
    hist = runs[0]["history"] if runs else []
    # One client's local training time: a warm simulated round (all N clients, sequential on
    # this CPU, incl. evaluation and noise) divided by N -- clients train in parallel.
    elapsed = np.array([h["elapsed_s"] for h in hist])
    per_round = float(np.median(np.diff(elapsed))) if elapsed.size > 2 else (
        float(elapsed[-1]) if elapsed.size else float("nan"))
    d = model_params(base)
    t_gauss = cost.measure_noise_rate(num_clients=16, dim=min(d, 20_000))
    pai = cost.measure_paillier(key_bits=key_bits, ops=3)
    success = cost.p2p_round_success(np.random.default_rng(0), num_clients=base.num_clients,
                                     failure_prob=0.05, max_stragglers=base.max_stragglers,
                                     rounds=200)
    recovered = cost.secagg_success_rate(base.num_clients, 0.05, rounds=200, seed=0,
                                         recovery_threshold=cost.SECAGG_THRESHOLD)
    return {"dim": d, "t_round_measured": per_round,
            "t_train_client": per_round / base.num_clients, "t_gauss": t_gauss, "paillier": pai,
            "secagg_round_success_rate": float(success.mean()),
            "secagg_recovery_success_rate": recovered,
            "client_usable_prob": cost.client_usable_prob(base.num_clients, 0.05)}


def plot_fig4(results: dict, times: dict, path: Path) -> dict:
    fig, ax = _runs.pyplot().subplots(figsize=(5, 3.2))
    out = {}
    for name, scheme, label in [("fig4_lightdp", "lightdp", "LightDP-FL"),
                                ("fig4_he_dp", "he_dp", "HE+DP")]:
        r, a = _curve(results, name)
        if r is None:
            continue
        t = r * times[scheme]["total"]
        ax.plot(t / 3600, a, label=label)
        out[scheme] = {"rounds": r.tolist(), "accuracy": a.tolist(),
                       "round_seconds": times[scheme]["total"]}
    ax.set_xscale("log")
    ax.set_xlabel("modelled wall-clock time (h, log)")
    ax.set_ylabel("test accuracy (%)")
    ax.legend()
    ax.grid(alpha=0.3)
    _runs.save(fig, path)
    if "lightdp" in out and "he_dp" in out:
        target = 0.9 * out["lightdp"]["accuracy"][-1]
        tl, th = (cost.time_to_accuracy([c["round_seconds"]] * len(c["rounds"]), c["accuracy"],
                                        target) for c in (out["lightdp"], out["he_dp"]))
        out["target_accuracy"] = target
        out["time_ratio_he_over_lightdp"] = th / tl if tl > 0 else math.nan
    return out


# ------------------------------------------------------------------------------- docs


def model_params(base: _common.LightDPConfig) -> int:
    import jax

    from jaxfl import models

    model = models.get_model(base.model, **dict(base.model_kwargs))
    return int(sum(x.size for x in jax.tree.leaves(model.init(jax.random.key(0)))))


def render(base, scale: str, data_dir: Path, doc: Path, fig_dir: Path
           ) -> tuple[dict[str, str], dict, dict]:
    """The page's generated blocks from the data files in ``data_dir``: ``({block name:
    markdown}, results, meta)``, the results block ``lightdp`` first, then the prose blocks
    (:data:`experiments.reproduce.lightdp_report.PROSE_BLOCKS`); raises when the files were
    written for another setting than ``base``."""
    results, meta = report.read_data(data_dir)
    if meta["setting"] != report.setting_of(base):
        raise ValueError(f"{data_dir / report.COSTS_JSON} was written for {meta['setting']}, "
                         f"not for this setting {report.setting_of(base)}; rerun the driver.")
    rel = Path(os.path.relpath(Path(fig_dir).resolve(), Path(doc).resolve().parent))
    blocks = {"lightdp": report.generated_markdown(base, scale, results, meta, rel)}
    blocks.update({name: fn(base, results, meta) for name, fn in report.PROSE_BLOCKS.items()})
    return blocks, results, meta


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=("smoke", "cpu", "full"), default="cpu")
    ap.add_argument("--dataset", choices=("mnist", "fashion_mnist", "cifar10"), default=None)
    ap.add_argument("--only", default="table2,table3,fig3,fig4")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--fig3-seeds", type=int, default=None,
                    help="seeds of the Fig. 3 runs (default: 3 at cpu scale, else --seeds)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--docs", default=None)
    ap.add_argument("--figures", default=None)
    ap.add_argument("--data", default=None,
                    help="folder of the per-seed CSV and the costs JSON (default "
                         "docs/reproduction/data; the workdir in smoke)")
    ap.add_argument("--from-data", action="store_true",
                    help="run nothing: render the report from the data files")
    args = ap.parse_args(argv)
    t0 = time.time()
    dataset = args.dataset or ("cifar10" if args.scale == "full" else "mnist")
    base = base_config(args.scale, dataset)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    sweeps = _common.all_sweeps()
    rows, seen = [], set()
    for w in wanted:
        for row in sweeps[w]:
            if row["name"] not in seen:
                seen.add(row["name"])
                rows.append(row)
    if args.fig3_seeds is None and args.scale == "cpu":
        args.fig3_seeds = 3
    if args.fig3_seeds is not None:
        fig3 = {r["name"] for r in sweeps["fig3"]} if "fig3" in wanted else set()
        rows = [{**r, "seeds": max(args.seeds, args.fig3_seeds)} if r["name"] in fig3 else r
                for r in rows]
    if args.scale == "smoke":
        rows = smoke_rows(rows, base.num_clients)
    smoke = args.scale == "smoke"
    fig_dir = Path(args.figures) if args.figures else (
        workdir / "figures" if smoke else Path("docs/figures/lightdp"))
    doc = Path(args.docs) if args.docs else (
        workdir / "lightdp.md" if smoke else Path("docs/reproduction/lightdp.md"))
    data_dir = Path(args.data) if args.data else (workdir if smoke else DATA)
    if not args.from_data:
        results = run_sweep(base, rows, workdir, args.seeds)
        if "fig3" in wanted:
            plot_fig3(results, fig_dir / "fig3.png", eps_list=(3,) if smoke else EPS)
        costs = fig4 = None
        if "fig4" in wanted:
            costs = measure_costs(base, results, key_bits=512 if smoke else 2048)
            times = report.fig4_times(base, costs, dim=costs["dim"],
                                      t_train=costs["t_train_client"])
            fig4 = plot_fig4(results, times, fig_dir / "fig4.png")
        data_dir.mkdir(parents=True, exist_ok=True)
        report.write_data(data_dir, results, base, scale=args.scale, costs=costs, fig4=fig4,
                          wall=time.time() - t0, model_params=model_params(base))
    blocks, results, meta = render(base, args.scale, data_dir, doc, fig_dir)
    for name, body in blocks.items():
        _runs.write_block(doc, name, body, "LightDP-FL")
    costs, fig4 = meta["costs"], meta["fig4"]
    out = {"scale": args.scale, "dataset": dataset, "wall_seconds": time.time() - t0,
           "final_accuracy": {n: report.final_accuracy(results, n) for n in results},
           "costs": costs, "fig4": fig4, "claims": report.claims(results, fig4, costs)}
    (workdir / "results.json").write_text(json.dumps(out, indent=2, default=str))
    print(blocks["lightdp"])
    return out


if __name__ == "__main__":
    main()
