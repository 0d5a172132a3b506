"""LightDP-FL (arXiv 2412.06120) declared as data: Tables II and III, Fig. 3 and Fig. 4.

  python -m experiments.reproduce lightdp --scale cpu --workdir runs/lightdp [--figure fig3]
  python -m experiments.reproduce lightdp --from-data      # the page from the committed data

* ``full``: CIFAR-10 / ResNet-18-GN, the paper's setting (GPU host; needs the CIFAR-10 pickles).
* ``cpu``: MNIST with a small CNN, N = 50, T = 20 (2 CPU cores).
* ``smoke``: a handful of tiny runs exercising every output (tests).

The figures share one sweep of :func:`jaxfl.sweep.run_sweep` (:func:`run`; resumable: finished
points are read back, killed ones continue from their checkpoints), which writes the two data
files of :mod:`experiments.reproduce.lightdp_report` (the per-seed CSV and the measured costs)
and the figures; the generated blocks of ``docs/reproduction/lightdp.md`` (:func:`page`) are
rendered from those files: Tables II/III with the paper's numbers beside ours, Fig. 3 with 95%
t-intervals over seeds, the noise design and accounting of every cell, the Fig. 4 cost model
with measured timings, and a verdict per claim by the rule of
:mod:`experiments.reproduce.stats`. :data:`PAPER` declares the summary's rows.
"""

from __future__ import annotations

import functools
import math
import os
import time
from pathlib import Path

import numpy as np

from experiments.configs.lightdp import _common, cifar10_resnet18, fashion_mnist_cnn, mnist_cnn
from experiments.reproduce import _common as _runs
from experiments.reproduce import declare, stats
from experiments.reproduce import lightdp_report as report
from jaxfl import sweep
from jaxfl.algorithms import lightdp_cost as cost

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


def run(run: declare.Run) -> dict:
    """Runs the selected figures (``table2``, ``table3``, ``fig3``, ``fig4``) as one sweep
    (:func:`run_sweep`: :data:`SEEDS` seeds per run, Fig. 3 over :data:`FIG3_SEEDS` at the cpu
    scale), draws Figs. 3-4, measures the Fig. 4 costs and writes the two data files
    (:func:`experiments.reproduce.lightdp_report.write_data`); returns the results."""
    t0 = time.time()
    base = base_config(run.scale, "cifar10" if run.scale == "full" else "mnist")
    wanted = list(run.selected) or [f.name for f in PAPER.figures]
    sweeps, rows, fig3 = _common.all_sweeps(), {}, FIG3_SEEDS.get(run.scale, SEEDS)
    for w in wanted:
        rows.update({r["name"]: {**r, "seeds": fig3} if w == "fig3" else r for r in sweeps[w]
                     if r["name"] not in rows})
    rows = list(rows.values())
    if run.scale == "smoke":
        rows = smoke_rows(rows, base.num_clients)
    results = run_sweep(base, rows, run.workdir, SEEDS)
    if "fig3" in wanted:
        plot_fig3(results, run.figures / "fig3.png", eps_list=(3,) if run.scale == "smoke"
                  else EPS)
    costs = fig4 = None
    if "fig4" in wanted:
        costs = measure_costs(base, results, key_bits=512 if run.scale == "smoke" else 2048)
        times = report.fig4_times(base, costs, dim=costs["dim"], t_train=costs["t_train_client"])
        fig4 = plot_fig4(results, times, run.figures / "fig4.png")
    run.data.mkdir(parents=True, exist_ok=True)
    report.write_data(run.data, results, base, scale=run.scale, costs=costs, fig4=fig4,
                      wall=time.time() - t0, model_params=model_params(base))
    return results


def page(inputs: declare.Inputs, text: str) -> str:
    """docs/reproduction/lightdp.md with its generated blocks rendered from the data files."""
    _, meta = report.read_data(inputs.data)
    base = base_config(meta["scale"], meta["setting"]["dataset"])
    rep = inputs.root / "docs" / "reproduction"
    blocks, _, _ = render(base, meta["scale"], inputs.data, rep / "lightdp.md",
                          inputs.root / "docs" / "figures" / "lightdp")
    return _runs.splice_blocks(text, blocks, "LightDP-FL")


SEEDS = 1  # seeds of a table cell
FIG3_SEEDS = {"cpu": 3}  # seeds of a Fig. 3 run, by scale (else SEEDS)


def _rows(inputs):
    results, meta = report.read_data(inputs.data)
    return results, meta, base_config(meta["scale"], meta["setting"]["dataset"])


def _design(inputs) -> dict:
    design = report.design_rows(_rows(inputs)[2])
    match, cells = report.example1_matches(design)
    dev = max(abs(r["constraint"] - 1.0) for r in design)
    return dict(dev=f"{dev:.1e}", match=match, cells=cells, verdict=stats.exact(match == cells))


def _calibration(inputs) -> dict:
    x = inputs.exact["lightdp"]
    lb, paper = inputs.audit_bound("lightdp_delta_1e-2_counterexample")
    nominal = {3: x["exact_1e-5_eps3"], 6: x["exact_1e-5_eps6"], 9: x["exact_1e-5_eps9"]}
    return dict(nominal=" / ".join(f"{v:.3f}" for v in nominal.values()),
                eps9=f"{x['exact_1e-2_eps9']:.3f}", lb=f"{lb:.3f}", paper=f"{paper:g}",
                verdict_5=stats.exact(all(v <= k for k, v in nominal.items())),
                verdict_2=stats.exact(not x["exact_1e-2_eps9"] > 9),
                scale=f"{x['strict_scale_1e-2_eps9']:.4f}")


def _scale(meta, base) -> str:
    st = meta["setting"]
    return _runs.prose(report.PAGE, "lightdp_scale", dataset=st["dataset"].upper(),
                       side=28 // base.image_pool,
                       convs=len(dict(base.model_kwargs).get("features", ())),
                       params=f"{meta['model_params']:,d}", model=st["model"],
                       clients=st["num_clients"], rounds=st["rounds"],
                       examples=st["examples_per_client"])


def _claim_rows(inputs, kind: str) -> list[dict]:
    """The summary rows of :func:`experiments.reproduce.lightdp_report.claims` of one kind
    (``fig3``, ``table``, ``he``)."""
    results, meta, base = _rows(inputs)
    out = []
    for claim, verdict, evidence, paired in report.claims(results, meta["fig4"], None):
        if claim.startswith("..."):
            claim = f"more than {report.MARGIN_POINTS:g} points over LDP at every ε"
        if kind == "fig3" and ("Fig. 3" in claim or claim.startswith("more than")):
            out.append(dict(claim=claim.removesuffix(" (Fig. 3)").replace("(Fig. 3; ", "("),
                            evidence=evidence, scale=_scale(meta, base),
                            seeds=report.fig3_seeds(results), verdict=verdict, paired=paired))
        elif kind == "table" and claim.startswith("Table"):
            out.append(dict(claim=claim, evidence=evidence, scale=_scale(meta, base),
                            seeds=report.table_seeds(results, "table2"), verdict=verdict,
                            paired=paired))
        elif kind == "he" and claim.startswith("HE+DP"):
            out.append(dict(verdict=verdict,
                            ratio=f"{meta['fig4']['time_ratio_he_over_lightdp']:.3g}"))
    return out


def _secagg(inputs) -> dict:
    n, p = 50, 0.05
    without = cost.secagg_success_rate(n, p, rounds=200, seed=0, max_stragglers=10)
    rec = cost.secagg_success_rate(n, p, rounds=200, seed=0,
                                   recovery_threshold=cost.SECAGG_THRESHOLD)
    return dict(recovered=f"{100 * rec:.0f}", threshold=f"{cost.SECAGG_THRESHOLD:.0%}",
                every_link=f"{100 * without:.0f}", verdict=stats.exact(not rec > 0.5))


def _remaining(inputs) -> dict:
    results, meta, _ = _rows(inputs)
    return dict(params=f"{meta['model_params']:,}", runs=sum(len(v) for v in results.values()),
                fig3_seeds=report.fig3_seeds(results))


def _figure(name: str, title: str) -> declare.Figure:
    """A figure of the joint sweep (its rows: ``experiments.configs.lightdp._common``)."""
    return declare.Figure(name, title, lambda scale: _common.all_sweeps()[name],
                          (report.SEEDS_CSV, report.COSTS_JSON), metric="final test accuracy")


PAPER = declare.Paper(
    name="lightdp", title="LightDP-FL (arXiv 2412.06120)", order=50, template=report.PAGE,
    link="link",
    scales=("smoke", "cpu", "full"), run=run,
    figures=(_figure("table2", "Table II: accuracy by ε and colluders C̄"),
             _figure("table3", "Table III: accuracy by ε and stragglers S̄"),
             _figure("fig3", "Fig. 3: LightDP-FL vs LDP vs SMPC+DP over seeds"),
             _figure("fig4", "Fig. 4: accuracy against modelled wall-clock time")),
    claims=(
        declare.Claim("design", "Example 1 noise design and Prop. 1", declare.EXACT,
                      "row_lightdp_design", _design),
        declare.Claim("calibration", "calibration meets eps over T rounds", declare.EXACT,
                      "row_lightdp_calibration", _calibration),
        declare.Claim("fig3", "Fig. 3 orderings", declare.PAIRED, "row_lightdp_fig3",
                      functools.partial(_claim_rows, kind="fig3"), figure="fig3"),
        declare.Claim("tables", "Tables II/III trends", declare.PAIRED, "row_lightdp_table",
                      functools.partial(_claim_rows, kind="table"), figure="table2"),
        declare.Claim("he", "Fig. 4: HE+DP >= 10x slower", declare.NOT_TESTED, "row_lightdp_he",
                      functools.partial(_claim_rows, kind="he"), figure="fig4"),
        declare.Claim("secagg", "Fig. 4: SecAgg cannot train with 5% link failures",
                      declare.EXACT, "row_lightdp_secagg", _secagg, figure="fig4")),
    pages=(declare.Page("docs/reproduction/lightdp.md", (report.SEEDS_CSV, report.COSTS_JSON),
                        page),),
    remaining=(declare.Remaining("e", "remaining_lightdp", _remaining),))


if __name__ == "__main__":  # the old command: python -m experiments.reproduce.lightdp ...
    from experiments.reproduce.__main__ import alias

    alias("lightdp")
