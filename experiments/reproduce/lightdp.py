"""LightDP-FL (arXiv 2412.06120) declared as data: Tables II and III, Fig. 3 and Fig. 4.

  python -m experiments.reproduce lightdp --scale cpu --workdir runs/lightdp [--figure fig3]
  python -m experiments.reproduce lightdp --from-data      # the page from the committed data

Scales: ``full`` (CIFAR-10 / ResNet-18-GN, GPU host), ``cpu`` (MNIST, a small CNN, N = 50,
T = 20), ``smoke`` (tiny runs, tests). The tables run as one sweep, Figs. 3 and 4 as another
(``declare.Figure.sweep``); :func:`export` writes, through ``_common.export_runs``
(:func:`seed_row`, provenance columns), one CSV row per run and seed:
``lightdp_tables_seeds.csv`` (figures ``table2`` and ``table3``: every cell over
:data:`TABLE_SEEDS` seeds) and ``lightdp_seeds.csv`` (the joint sweep of Figs. 3 and 4,
whose committed file also holds the first run's one-seed table cells, superseded);
``lightdp_fig4.json`` holds the measured Fig. 4 costs and curves (the cost model, its
measurements and Fig. 4's arithmetic: :mod:`jaxfl.algorithms.lightdp_cost`). :func:`accuracies`
maps a run name to its per-seed accuracies (%), which every table and test reads; :func:`page`
renders the page's blocks (wording and tables in ``templates/lightdp.md``) and :func:`claims`
decides each claim by the Holm-corrected paired test of :mod:`experiments.reproduce.stats`
(one family per paper; a table trend on one seed per cell is reported, not decided).
"""

from __future__ import annotations

import fractions
import functools
import json
import math
import operator
import re
from pathlib import Path

import numpy as np

from experiments.configs.lightdp import _common, cifar10_resnet18, fashion_mnist_cnn, mnist_cnn
from experiments.papers import lightdp as wiring
from experiments.reproduce import _common as _runs
from experiments.reproduce import declare, stats
from experiments.reproduce.claims import Cmp, Paired, decide
from jaxfl import sweep
from jaxfl.accounting import lightdp as acct
from jaxfl.algorithms import lightdp_cost as cost

PAPER_TABLE2 = {3: (50.8, 49.6, 47.5, 45.8), 6: (54.5, 52.1, 50.6, 49.7),
                9: (61.9, 60.6, 57.9, 55.3)}  # columns C_bar = 10, 20, 30, 40 (S_bar = 10)
PAPER_TABLE3 = {3: (51.7, 50.2, 48.5, 47.2), 6: (53.2, 51.7, 50.4, 48.8),
                9: (55.1, 53.4, 51.9, 50.9)}  # columns S_bar = 0, 10, 20, 30 (C_bar = 15)
C_COLS, S_COLS, EPS = (10, 20, 30, 40), (0, 10, 20, 30), acct.PAPER_EPSILONS
# Tables II and III: (the swept bound's key in a run name, its columns, its label, the title,
# the paper's values).
TABLES = {"table2": ("C", C_COLS, "C̄", "Table II", PAPER_TABLE2),
          "table3": ("S", S_COLS, "S̄", "Table III", PAPER_TABLE3)}
SEEDS_CSV, COSTS_JSON = "lightdp_seeds.csv", "lightdp_fig4.json"
TABLES_CSV = "lightdp_tables_seeds.csv"  # Tables II/III over TABLE_SEEDS seeds (issue 39)
FIELDS = dict(name=str, scheme=str, epsilon=float, max_colluders=int, max_stragglers=int,
              stragglers=str, seed=int, final_test_accuracy=float, reported_epsilon=float,
              privacy_mode=str, train_seconds=float)  # the per-seed CSVs' columns and types
SETTING = ("dataset", "model", "num_clients", "rounds", "examples_per_client", "clip_norm",
           "delta", "mode", "variant")
MARGIN_POINTS = 15.0
SEEDS = 1  # seeds of a Fig. 4 run
FIG3_SEEDS = {"cpu": 3}  # seeds of a Fig. 3 run, by scale (else SEEDS)
TABLE_SEEDS = {"smoke": 2}  # seeds of a cell of the seeded tables, by scale (else 5)
PAGE = "lightdp"  # templates/lightdp.md: the fixed wording of the page's generated blocks
BY_RUN = operator.itemgetter("name", "seed")  # the order of the per-seed rows
THRESHOLD = str(fractions.Fraction(cost.SECAGG_THRESHOLD).limit_denominator(12))  # "2/3"


# ------------------------------------------------------------------------------- data files


def seed_row(cfg, summary, records) -> dict | None:
    """The CSV row (:data:`FIELDS`) of one finished run (``_common.export_runs``)."""
    if not records:
        return None
    last = records[-1]
    return {"name": cfg.name, "scheme": cfg.scheme, "epsilon": cfg.epsilon,
            "max_colluders": cfg.max_colluders, "max_stragglers": cfg.max_stragglers,
            "stragglers": {"design": "uniform"}.get(cfg.stragglers, cfg.stragglers),
            "seed": cfg.seed, "final_test_accuracy": last["test_accuracy"],
            "reported_epsilon": last.get("epsilon", math.nan),
            "privacy_mode": last.get("privacy_mode", ""),
            "train_seconds": last.get("elapsed_s", math.nan)}


def setting_of(base: _common.LightDPConfig) -> dict:
    return {k: getattr(base, k) for k in SETTING}


def read_data(folder: Path, csv: str = SEEDS_CSV) -> tuple[list[dict], dict]:
    """``(rows, meta)``: the CSV rows (sorted by name and seed) and the JSON of the costs."""
    rows = _runs.read_rows(Path(folder) / csv, types=FIELDS)
    return sorted(rows, key=BY_RUN), json.loads((Path(folder) / COSTS_JSON).read_text())


def accuracies(rows: list[dict]) -> dict[str, dict[int, float]]:
    """run name -> seed -> final test accuracy (%), seeds in order."""
    return {name: {r["seed"]: r["final_test_accuracy"] * 100 for r in rs}
            for name, rs in _runs.group(sorted(rows, key=BY_RUN), "name").items()}


# ------------------------------------------------------------------------------- tables


def cell_name(which: str, e, c) -> str:
    """The run name of table ``which``'s cell at epsilon ``e`` and column ``c``."""
    return f"{which}_eps{e}_{TABLES[which][0]}{c}"


def table_names(which: str) -> list[str]:
    return [cell_name(which, e, c) for e in EPS for c in TABLES[which][1]]


def table_seeds(acc: dict, which: str) -> int:
    """Seeds shared by every cell of a table (cells are compared on the same seeds)."""
    return min((len(acc[n]) for n in table_names(which) if n in acc), default=0)


def fig3_seeds(acc: dict) -> int:
    """Seeds shared by every Fig. 3 run."""
    return min((len(v) for n, v in acc.items() if n.startswith("fig3")), default=0)


CHECK_ROUNDS, CHECK_DELTAS = acct.CHECK_ROUNDS, acct.CHECK_DELTAS


def design_rows(base: _common.LightDPConfig) -> list[dict]:
    """:func:`jaxfl.accounting.lightdp.paper_designs` at the run's (T, Delta, delta)."""
    return acct.paper_designs(delta=base.delta, rounds=base.rounds,
                              sensitivity=wiring.sensitivity(base))


def delta_rows() -> list[dict]:
    """:func:`jaxfl.accounting.lightdp.paper_calibration`."""
    return acct.paper_calibration()


# ------------------------------------------------------------------------------- claims


def _trend_pairs(which):
    """(claim, [(cell claimed higher, cell claimed lower, label)] for every adjacent pair) of
    the table's two trends."""
    _, cols, label, title, _ = TABLES[which]
    name = functools.partial(cell_name, which)
    return [(f"{title}: accuracy increases with ε",
             [(name(b, c), name(a, c), f"ε={b} > ε={a} at {label}={c}")
              for c in cols for a, b in zip(EPS, EPS[1:])]),
            (f"{title}: accuracy decreases with {label}",
             [(name(e, a), name(e, b), f"{label}={a} > {label}={b} at ε={e}")
              for e in EPS for a, b in zip(cols, cols[1:])])]


FIG3_CLAIMS = (  # (claim on the page, its summary line, the other scheme, its label, margin)
    ("LightDP-FL beats vanilla LDP at every ε (Fig. 3)",
     "LightDP-FL beats vanilla LDP at every ε", "ldp", "LDP", 0.0),
    (f"... by more than {MARGIN_POINTS:g} points",
     f"more than {MARGIN_POINTS:g} points over LDP at every ε", "ldp", "LDP", MARGIN_POINTS),
    ("LightDP-FL beats SMPC+DP at every ε (Fig. 3; the paper's own noise formulas predict not)",
     "LightDP-FL beats SMPC+DP at every ε (the paper's own noise formulas predict not)",
     "smpc_dp", "SMPC+DP", 0.0))


def claims(acc: dict, fig4: dict | None = None, costs: dict | None = None,
           tables: dict | None = None) -> list[dict]:
    """The report's claims, each ``{kind, claim, short, verdict, evidence, paired}`` (``kind``:
    ``fig3``, ``table``, ``he`` or ``secagg``; ``short``: its summary line). The Fig. 3 claims
    (:data:`FIG3_CLAIMS`, "LightDP-FL - margin above the other scheme" per ε) and the trends of
    the tables with seeds are :class:`~experiments.reproduce.claims.Paired` records decided as
    the paper's one Holm family (:func:`experiments.reproduce.claims.decide`); a table trend on
    one seed per cell counts its inversions and gets no verdict. ``acc``: the Fig. 3 runs'
    :func:`accuracies`; ``tables``: the seeded tables' (a trend with seeds lists its
    comparisons, ``tests``: label, paired difference, verdict)."""
    tab = tables or {}
    fig3 = [Paired(claim, tuple(Cmp(("f", f"table2_eps{e}_C10"), ("f", f"fig3_eps{e}_{other}"),
                                    by=margin) for e in eps), dict(
        kind="fig3", short=short, label=label, margin=margin, eps=eps))
            for claim, short, other, label, margin in FIG3_CLAIMS
            for eps in [[e for e in EPS if f"fig3_eps{e}_{other}" in acc]] if eps]
    trends = [(claim, pairs, k) for w in TABLES if all(n in tab for n in table_names(w))
              for k in [table_seeds(tab, w)] for claim, pairs in _trend_pairs(w)]
    decided = decide(fig3 + [Paired(claim, tuple(Cmp(("t", hi), ("t", lo)) for hi, lo, _ in pairs))
                             for claim, pairs, k in trends if k >= 2],
                     lambda c: (acc if c[0] == "f" else tab).get(c[1], {}))
    family = sum(len(r["parts"]) for r in decided)
    out = []
    for r in decided[:len(fig3)]:
        shift = f" - {r['margin']:g}" if r["margin"] else ""
        out.append(dict(kind="fig3", claim=r["claim"], short=r["short"], verdict=r["verdict"],
                        evidence="; ".join(f"ε={e}: LightDP-FL{shift} {stats.fmt(p['a'], 1)} vs "
                                           f"{r['label']} {stats.fmt(p['b'], 1)}"
                                           for e, p in zip(r["eps"], r["parts"], strict=True)),
                        paired=f"interval rule: {r['interval_verdict']}; paired: " + "; ".join(
                            f"ε={e}: {stats.fmt_paired(p['d'], nd=2, unit=' pt')}"
                            for e, p in zip(r["eps"], r["parts"], strict=True))))
    seeded = iter(decided[len(fig3):])
    for claim, pairs, k in trends:
        row = dict(kind="table", claim=claim, short=claim, seeds=k, family=family, tests=[])
        if k < 2:
            inv = sum(np.mean(list(tab[hi].values())[:k]) <= np.mean(list(tab[lo].values())[:k])
                      for hi, lo, _ in pairs)
            out.append(row | dict(verdict=stats.ONE_SEED, paired="-", evidence=(
                f"{inv} inversions of {len(pairs)} adjacent cells (one seed per cell)")))
            continue
        r = next(seeded)
        held = sum(p["test"]["verdict"] == stats.HOLDS for p in r["parts"])
        agree = sum(p["d"]["mean"] > 0 for p in r["parts"])  # described, not tested
        n = len(r["parts"])
        out.append(row | dict(verdict=r["verdict"], paired=f"interval rule: "
                              f"{r['interval_verdict']}", evidence=f"{held}/{n} adjacent "
                              f"comparisons hold paired (Holm; {k} seeds); {agree}/{n} mean "
                              "differences in the claimed direction", tests=[
                                  dict(label=pr[2], verdict=p["test"]["verdict"],
                                       paired=stats.fmt_paired(p["d"], nd=2))
                                  for pr, p in zip(pairs, r["parts"], strict=True)]))
    if fig4 and "time_ratio_he_over_lightdp" in fig4:
        r = fig4["time_ratio_he_over_lightdp"]
        out.append(dict(kind="he", claim="HE+DP needs >= 10x LightDP-FL's wall-clock time "
                        "(Fig. 4)", verdict="not tested (cost model" + (
                            ", meets 10x)" if r >= 10 else ", below 10x)"), ratio=f"{r:.3g}",
                        evidence=f"time to {fig4['target_accuracy']:.1f}% (modelled): ratio "
                        f"{r:.3g}", paired="-"))
    if costs:
        # Decided on SecAgg with its dropout recovery: under the every-link reading the round
        # fails by the model's own rule, so that reading cannot refute the claim.
        rec = costs["secagg_recovery_success_rate"]
        out.append(dict(kind="secagg", claim="SecAgg cannot train with 5% link failures",
                        verdict="does not hold (with dropout recovery)" if rec > 0.5 else "holds",
                        evidence=f"rounds recovered with Shamir dropout recovery: {rec:.3f}; "
                        "without it (every P2P link needed): "
                        f"{costs['secagg_round_success_rate']:.3f}", paired="-"))
    return out


# ------------------------------------------------------------------------------- the blocks


def _d(x: float) -> str:
    """A delta as the page writes it: 1e-5, 1e-2."""
    return re.sub(r"e-0*", "e-", f"{x:.0e}") if x < 0.1 else f"{x:g}"


_MODEL_LABELS = {"measured": "ours (CPU)", "resnet18": "ResNet-18 (extrapolated)"}


def _seeds_words(k: int) -> str:
    return {1: "one seed"}.get(k, f"{k} seeds")


def results_markdown(base, scale: str, rows: list[dict], meta: dict, fig_dir,
                     tables: dict | None = None) -> str:
    """The results block from the data files (template block ``results``; a section of it per
    figure that has data; ``tables``: the seeded tables' accuracies, for the trend claims)."""
    acc, costs, fig4 = accuracies(rows), meta.get("costs"), meta.get("fig4")
    fig4_rows = [{**r, "label": _MODEL_LABELS[r["model"]]} for r in cost.fig4_cost_rows(
        costs, num_clients=base.num_clients)] if costs else []
    pai = (costs or {}).get("paillier", {})
    fig3 = any(n.startswith("fig3") for n in acc)
    return _runs.prose(
        PAGE, "results", scale=scale, dataset=base.dataset, model=base.model,
        params=f" ({meta['model_params']:,} parameters)" if meta.get("model_params") else "",
        num_clients=base.num_clients, rounds=base.rounds, examples=base.examples_per_client,
        clip_norm=base.clip_norm, sensitivity=f"{wiring.sensitivity(base):g}",
        delta=f"{base.delta:g}", mode=base.mode,
        seeds="/".join(str(c) for c in sorted({len(v) for v in acc.values()})) or "0",
        runs=len(rows), seeds_csv=SEEDS_CSV, costs_json=COSTS_JSON, fig_dir=fig_dir,
        train_min=f"{sum(r['train_seconds'] or 0.0 for r in rows) / 60:.1f}",
        fig3=fig3 and {"seeds": fig3_seeds(acc), "rows": [
            dict(zip(("e", "lightdp", "ldp", "smpc"), [e, *(
                stats.fmt(stats.interval(list(acc.get(n, {}).values())), 1) for n in (
                    f"table2_eps{e}_C10", f"fig3_eps{e}_ldp", f"fig3_eps{e}_smpc_dp"))]))
            for e in EPS]},
        fig4=bool(costs) and dict(
            rows=fig4_rows, gauss_ns=costs["t_gauss"] * 1e9, key_bits=pai["key_bits"],
            encrypt_ms=pai["encrypt"] * 1e3, add_us=pai["add"] * 1e6,
            decrypt_ms=pai["decrypt"] * 1e3, mbit=f"{cost.BANDWIDTH / 1e6:g}",
            every_link=costs["secagg_round_success_rate"] * 100,
            usable=costs["client_usable_prob"], threshold=THRESHOLD,
            recovered=costs["secagg_recovery_success_rate"] * 100),
        design=[{**r, "evs": " / ".join(f"{v:.6f}" for v in r["ev"])} for r in design_rows(base)],
        check_rounds=CHECK_ROUNDS,
        calibration=[{**r, "ok": r["exact"] <= r["epsilon"]} for r in delta_rows()],
        claims=claims(acc, fig4, costs, tables)) + "\n"


def tables_markdown(rows: list[dict], trends: list[dict]) -> str:
    """The seeded Tables II/III (template block ``tables_seeds``): each cell's mean and 95%
    t-interval over its seeds beside the paper's value, each seed's mean over the cells, and the
    trend claims of :func:`claims` (``trends``) with every paired comparison."""
    acc = accuracies(rows)
    fixed = {"table2": "S̄ = 10", "table3": "C̄ = 15"}
    seeds = sorted({r["seed"] for r in rows})
    return _runs.prose(
        PAGE, "tables_seeds", seeds=min(map(len, acc.values())), runs=len(rows), csv=TABLES_CSV,
        cells=len(acc), train_min=f"{sum(r['train_seconds'] or 0.0 for r in rows) / 60:.1f}",
        per_seed=", ".join(f"seed {s}: {np.mean([v[s] for v in acc.values() if s in v]):.1f}"
                           for s in seeds),
        family=trends[0]["family"] if trends else 0, claims=trends, tables=[
            {"title": TABLES[w][3], "fixed": fixed[w],
             "head": " | ".join(f"{TABLES[w][2]}={c}" for c in TABLES[w][1]),
             "rows": [{"e": e, "cells": [
                 {"ci": stats.fmt(stats.interval(list(acc.get(cell_name(w, e, c), {}).values())),
                                  1), "paper": p}
                 for c, p in zip(TABLES[w][1], TABLES[w][4][e], strict=True)]} for e in EPS]}
            for w in TABLES]) + "\n"


def summary_markdown(base, acc: dict, tables: dict) -> str:
    """The page's overview (no verdict of its own: the verdicts are in the claims table)."""
    k = table_seeds(tables, "table2")
    return _runs.prose_wrapped(
        PAGE, "summary", check_rounds=CHECK_ROUNDS,
        deltas=" and ".join(f"δ = {_d(d)}" for d in CHECK_DELTAS),
        dataset=_DATA_NAMES.get(base.dataset, base.dataset), fig3_seeds=fig3_seeds(acc),
        seeds_csv=SEEDS_CSV, seeds=_seeds_words(k).capitalize(), one_seed=k < 2)


_DATA_NAMES = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "cifar10": "CIFAR-10"}


def privacy_markdown(base) -> str:
    """The "what holds and what does not" list: every number from :func:`delta_rows` and
    :func:`design_rows` (the two accounting tables of the results block)."""
    f = acct.calibration_findings(delta_rows(), design_rows(base))
    lo, fail, cell, ratio = f["low"], f["fail"], f["cell"], f["ratio"]
    return _runs.prose_wrapped(
        PAGE, "privacy", holds=stats.exact(f["holds"]),
        delta=_d(min(CHECK_DELTAS)), check_rounds=CHECK_ROUNDS,
        nominal=" / ".join(str(r["epsilon"]) for r in lo),
        exact=" / ".join(f"{r['exact']:.2f}" for r in lo),
        worst_view="lower still" if cell["exact_strict"] < lo[0]["exact"] else "higher",
        cell_exact=cell["exact_strict"], cell_eps=cell["epsilon"], rounds=base.rounds,
        fail=bool(fail) and dict(scales=" / ".join(f"{r['scale']:.4f}" for r in fail),
                                 cells="; ".join(f"δ = {_d(r['delta'])}, ε = {r['epsilon']}** "
                                                 f"(exact {r['exact']:.2f}" for r in fail)),
        gamma_lo=f["gamma_lo"], gamma_hi=f["gamma_hi"], ratio_lo=min(ratio.values()),
        ratio_hi=max(ratio.values()), ratio_10=ratio[(10, 10)])


def setting_markdown(base, rows: list[dict], meta: dict, tab_rows: list[dict]) -> str:
    """The reproduction setting: the config's values, the model size, the seeds and the Fig. 4
    link-failure numbers from the data files (``tab_rows``: the seeded tables' rows)."""
    kw, acc = dict(base.model_kwargs), accuracies(rows)
    mean = float(np.mean([r["final_test_accuracy"] for r in rows + tab_rows]))
    costs = meta.get("costs") or {}
    success = costs.get("secagg_round_success_rate")
    bits = (costs.get("paillier") or {}).get("key_bits", 2048)
    return _runs.prose_wrapped(
        PAGE, "setting", n=base.num_clients, examples=base.examples_per_client,
        shards=base.shards_per_client, rounds=base.rounds, side=28 // base.image_pool,
        convs=len(kw.get("features", ())), channels="/".join(map(str, kw.get("features", ()))),
        dense="/".join(map(str, kw.get("hidden", ()))), params=meta["model_params"],
        epochs=base.local_epochs, batch=base.batch_size, lr=base.client_lr,
        same=base.mode == "strict" and all(r["scale"] == 1.0 for r in design_rows(base)),
        clip_norm=base.clip_norm, delta=_d(base.delta), mode=base.mode,
        seeds=_seeds_words(table_seeds(accuracies(tab_rows), "table2")),
        test_examples=base.test_examples,
        acc=100 * mean, se=100 * math.sqrt(mean * (1 - mean) / base.test_examples),
        fig3_seeds=fig3_seeds(acc), p=base.failure_prob, q=1 - base.failure_prob,
        all_fail=success == 0,
        usable=None if costs.get("client_usable_prob") is None
        else f"{costs['client_usable_prob']:.3f}",
        percent=100 * (math.nan if success is None else success),
        threshold=THRESHOLD,
        bits=bits, cipher_bits=2 * bits, mbit=f"{cost.BANDWIDTH / 1e6:g}",
        resnet_train=cost.RESNET18_T_TRAIN)


def base_config(scale: str, dataset: str) -> _common.LightDPConfig:
    if scale == "full":
        return cifar10_resnet18.get_config()
    module = {"mnist": mnist_cnn, "fashion_mnist": fashion_mnist_cnn}[dataset]
    return module.get_config(f"variant={scale}")


def page(inputs: declare.Inputs, text: str) -> str:
    """docs/reproduction/lightdp.md with its generated blocks rendered from the data files
    (refused when they were written for another setting than their scale's config)."""
    rows, meta, base, tab_rows = _inputs(inputs)
    acc, tab = accuracies(rows), accuracies(tab_rows)
    return _runs.splice_blocks(text, {
        "lightdp": results_markdown(base, meta["scale"], rows, meta, "../figures/lightdp", tab),
        "lightdp_tables_seeds": tables_markdown(tab_rows, [
            c for c in claims(acc, tables=tab) if c["kind"] == "table"]),
        "lightdp_summary": summary_markdown(base, acc, tab),
        "lightdp_privacy": privacy_markdown(base),
        "lightdp_setting": setting_markdown(base, rows, meta, tab_rows)}, "LightDP-FL")


# ------------------------------------------------------------------------------- running


def table_configs(scale: str, tables=tuple(TABLES)) -> list:
    """The seeded tables' runs: every cell of ``tables`` over :data:`TABLE_SEEDS` seeds (5
    unless the scale says otherwise); a seed sets the partition, the data order, the model
    initialisation, the pairwise masks and the noise (``experiments.papers.lightdp``)."""
    base = base_config(scale, "cifar10" if scale == "full" else "mnist")
    rows = [r for t in tables for r in _common.all_sweeps()[t]]
    if scale == "smoke":
        rows = _common.smoke_rows(rows, base.num_clients)
    return [sweep.with_overrides(base, {**r, "seed": s})
            for s in range(TABLE_SEEDS.get(scale, 5)) for r in rows]


def figure_configs(scale: str, name: str) -> list:
    """The runs of Fig. 3 (:data:`FIG3_SEEDS` seeds) or Fig. 4 (:data:`SEEDS`), one sweep."""
    base = base_config(scale, "cifar10" if scale == "full" else "mnist")
    rows = _common.all_sweeps()[name]
    if scale == "smoke":
        rows = _common.smoke_rows(rows, base.num_clients)
    return [sweep.with_overrides(base, {**r, "seed": s}) for r in rows
            for s in range(FIG3_SEEDS.get(scale, SEEDS) if name == "fig3" else SEEDS)]


def _curve(histories: dict, name: str):
    """(rounds, mean test accuracy % over seeds) of run ``name``; (None, None) without it."""
    runs = histories.get(name, [])
    if not runs:
        return None, None
    return (np.array([h["round"] for h in runs[0]]),
            np.mean([[h["test_accuracy"] * 100 for h in r] for r in runs], axis=0))


FIG3_LINES = (("table2_eps{e}_C10", "LightDP-FL"), ("fig3_eps{e}_ldp", "LDP"),
              ("fig3_eps{e}_smpc_dp", "SMPC+DP"))  # (run name at ε = e, legend)


def fig4_curves(histories: dict, times: dict) -> dict:
    """Fig. 4's curves (rounds, mean accuracy, modelled round seconds: :func:`~jaxfl.algorithms.
    lightdp_cost.fig4_round_times`' total) with the time ratio at 90% of LightDP-FL's final
    accuracy (:func:`~jaxfl.algorithms.lightdp_cost.fig4_time_ratio`)."""
    out = {s: {"rounds": r.tolist(), "accuracy": a.tolist(), "round_seconds": times[s]["total"]}
           for s in ("lightdp", "he_dp") for r, a in [_curve(histories, f"fig4_{s}")]
           if r is not None}
    if "lightdp" in out and "he_dp" in out:
        out["target_accuracy"], out["time_ratio_he_over_lightdp"] = cost.fig4_time_ratio(
            out["lightdp"], out["he_dp"])
    return out


def model_params(base: _common.LightDPConfig) -> int:
    import jax

    from jaxfl import models, tree

    return tree.num_params(models.get_model(base.model, **dict(base.model_kwargs)).init(
        jax.random.key(0)))


def _histories(run: declare.Run) -> dict[str, list]:
    """Run name -> one record list per seed, of a finished sweep."""
    return {name: [_runs.read_run(d)[1] for _, d in runs] for name, runs in _runs.group(
        zip(run.configs, run.dirs, strict=True), lambda x: x[0].name).items()}


def export(run: declare.Run) -> None:
    """The per-seed CSV of the sweep (``_common.export_runs``): :data:`TABLES_CSV` for the
    tables; for Figs. 3/4 :data:`SEEDS_CSV` and :data:`COSTS_JSON` (Fig. 4's costs measured,
    its curves: :func:`fig4_curves`)."""
    if run.figure.sweep == "tables":
        _runs.export_runs(run, seed_row, run.data / TABLES_CSV, FIELDS, sort=BY_RUN)
        return
    base = base_config(run.scale, "cifar10" if run.scale == "full" else "mnist")
    histories, costs, fig4, dim = _histories(run), None, None, model_params(base)
    if "fig4" in run.selected:
        costs = cost.measure_costs(
            [h["elapsed_s"] for h in (histories.get("fig4_lightdp") or [[]])[0]],
            num_clients=base.num_clients, max_stragglers=base.max_stragglers,
            dim=dim, key_bits=512 if run.scale == "smoke" else 2048)
        fig4 = fig4_curves(histories, cost.fig4_round_times(costs, num_clients=base.num_clients))
    _runs.export_runs(run, seed_row, run.data / SEEDS_CSV, FIELDS, sort=BY_RUN)
    meta = {"scale": run.scale, "setting": setting_of(base), "model_params": dim,
            "costs": costs, "fig4": fig4, "provenance": _runs.provenance()}
    (run.data / COSTS_JSON).write_text(json.dumps(meta, indent=1, sort_keys=True,
                                                  default=float) + "\n")


def plot(run: declare.Run) -> None:
    """Fig. 3 (one panel per ε, each scheme's mean accuracy curve) and Fig. 4 (accuracy
    against modelled time, from :data:`COSTS_JSON`), those selected."""
    eps_list, histories = (3,) if run.scale == "smoke" else EPS, _histories(run)
    if "fig3" in run.selected:
        curves = {(e, label): _curve(histories, name.format(e=e))
                  for e in eps_list for name, label in FIG3_LINES}
        _runs.plot(run.figures / "fig3.png", [dict(
            lines=[dict(x=x, y=y, label=label) for (ee, label), (x, y) in curves.items()
                   if ee == e and x is not None],
            title=f"ε = {e}", xlabel="round", ylabel="test accuracy (%)", grid=True,
            legend="medium" if e == eps_list[0] else None) for e in eps_list], cell=(4, 3.2))
    if "fig4" in run.selected:
        fig4 = json.loads((run.data / COSTS_JSON).read_text())["fig4"]
        labels = {"lightdp": "LightDP-FL", "he_dp": "HE+DP"}
        _runs.plot(run.figures / "fig4.png", [dict(
            lines=[dict(x=np.asarray(c["rounds"]) * c["round_seconds"] / 3600, y=c["accuracy"],
                        label=labels[s]) for s, c in fig4.items() if s in labels],
            xscale="log", xlabel="modelled wall-clock time (h, log)",
            ylabel="test accuracy (%)", legend="medium", grid=True)], cell=(5, 3.2))


# ------------------------------------------------------------------------------- the summary


def _inputs(inputs: declare.Inputs) -> tuple[list[dict], dict, _common.LightDPConfig, list]:
    """(Figs. 3/4 CSV rows, costs JSON, base config, seeded tables' CSV rows) of the committed
    data, refused when the data were written for another setting than their scale's config."""
    rows, meta = read_data(inputs.data)
    base = base_config(meta["scale"], meta["setting"]["dataset"])
    if meta["setting"] != setting_of(base):
        raise ValueError(f"{inputs.data / COSTS_JSON} was written for {meta['setting']}, "
                         f"not for this setting {setting_of(base)}; rerun the driver.")
    return rows, meta, base, read_data(inputs.data, TABLES_CSV)[0]


def _design(inputs) -> dict:
    design = design_rows(_inputs(inputs)[2])
    match, cells = acct.example1_matches(design)
    dev = max(abs(r["constraint"] - 1.0) for r in design)
    return dict(dev=f"{dev:.1e}", match=match, cells=cells, verdict=stats.exact(match == cells))


def _calibration(inputs) -> dict:
    x = inputs.exact["lightdp"]
    a = inputs.audit_check("lightdp_delta_1e-2_counterexample")
    nominal = {e: x[f"exact_1e-5_eps{e}"] for e in EPS}
    return dict(nominal=" / ".join(f"{v:.3f}" for v in nominal.values()),
                eps9=f"{x['exact_1e-2_eps9']:.3f}", lb=f"{a['lb']:.3f}", paper=f"{a['p']:g}",
                verdict_5=stats.exact(all(v <= k for k, v in nominal.items())),
                verdict_2=stats.exact(not x["exact_1e-2_eps9"] > 9),
                scale=f"{x['strict_scale_1e-2_eps9']:.4f}")


def _claim_rows(inputs, kind: str) -> list[dict]:
    """The summary rows of one kind of :func:`claims` (``fig3``, ``table``, ``he``)."""
    rows, meta, base, tab_rows = _inputs(inputs)
    acc, tab = accuracies(rows), accuracies(tab_rows)
    scale = _runs.prose(PAGE, "lightdp_scale", dataset=_DATA_NAMES[base.dataset],
                        side=28 // base.image_pool,
                        convs=len(dict(base.model_kwargs).get("features", ())),
                        params=f"{meta['model_params']:,d}", model=base.model,
                        clients=base.num_clients, rounds=base.rounds,
                        examples=base.examples_per_client)
    seeds = {"fig3": fig3_seeds(acc), "table": table_seeds(tab, "table2")}.get(kind)
    return [dict(claim=c["short"], evidence=c["evidence"], scale=scale, seeds=seeds,
                 verdict=c["verdict"], paired=c["paired"]) if kind != "he" else
            dict(verdict=c["verdict"], ratio=c["ratio"])
            for c in claims(acc, meta["fig4"], None, tab) if c["kind"] == kind]


def _secagg(inputs) -> dict:
    r = cost.secagg_rates(50, max_stragglers=10)  # the paper's N = 50, S̄ = 10
    return dict(recovered=f"{100 * r['recovered']:.0f}", threshold=f"{cost.SECAGG_THRESHOLD:.0%}",
                every_link=f"{100 * r['every_link']:.0f}",
                verdict=stats.exact(not r["recovered"] > 0.5))


def _remaining(inputs) -> dict:
    rows, meta, _, tab = _inputs(inputs)
    return dict(params=f"{meta['model_params']:,}", runs=len(rows),
                fig3_seeds=fig3_seeds(accuracies(rows)), table_runs=len(tab),
                table_seeds=table_seeds(accuracies(tab), "table2"))


def _figure(name: str, title: str) -> declare.Figure:
    """A table over seeds (sweep ``tables``) or a figure of the joint Fig. 3/4 sweep (rows:
    ``experiments.configs.lightdp._common``)."""
    if name in TABLES:
        return declare.Figure(name, title, functools.partial(table_configs, tables=(name,)),
                              (TABLES_CSV,), export, metric="final test accuracy",
                              committed="cpu", sweep="tables")
    return declare.Figure(name, title, functools.partial(figure_configs, name=name),
                          (SEEDS_CSV, COSTS_JSON), export, "final test accuracy", plot,
                          sweep="figures")


PAPER = declare.Paper(
    name="lightdp", title="LightDP-FL (arXiv 2412.06120)", order=50, template=PAGE,
    link="link",
    scales=("smoke", "cpu", "full"),
    figures=(_figure("table2", "Table II: accuracy by ε and colluders C̄ over seeds"),
             _figure("table3", "Table III: accuracy by ε and stragglers S̄ over seeds"),
             _figure("fig3", "Fig. 3: LightDP-FL vs LDP vs SMPC+DP over seeds"),
             _figure("fig4", "Fig. 4: accuracy against modelled wall-clock time")),
    claims=(
        declare.Claim("design", "Example 1 noise design and Prop. 1", declare.EXACT,
                      "row_lightdp_design", _design),
        declare.Claim("calibration", "calibration meets eps over T rounds", declare.EXACT,
                      "row_lightdp_calibration", _calibration),
        declare.Claim("fig3", "Fig. 3 orderings", declare.PAIRED, "row_lightdp_fig3",
                      functools.partial(_claim_rows, kind="fig3"), figure="fig3"),
        declare.Claim("tables", "Tables II/III trends over seeds", declare.PAIRED,
                      "row_lightdp_table", functools.partial(_claim_rows, kind="table"),
                      figure="table2"),
        declare.Claim("he", "Fig. 4: HE+DP >= 10x slower", declare.NOT_TESTED, "row_lightdp_he",
                      functools.partial(_claim_rows, kind="he"), figure="fig4"),
        declare.Claim("secagg", "Fig. 4: SecAgg cannot train with 5% link failures",
                      declare.EXACT, "row_lightdp_secagg", _secagg, figure="fig4")),
    pages=(declare.Page("docs/reproduction/lightdp.md", (SEEDS_CSV, COSTS_JSON, TABLES_CSV),
                        page),),
    remaining=(declare.Remaining("e", "remaining_lightdp", _remaining),))


if __name__ == "__main__":  # the old command: python -m experiments.reproduce.lightdp ...
    __import__("experiments.reproduce.__main__", fromlist=["alias"]).alias("lightdp")
