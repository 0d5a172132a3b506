"""LightDP-FL report: per-seed data files and the generated block of docs/reproduction/lightdp.md.

The driver (:mod:`experiments.reproduce.lightdp`) writes two files per invocation, and every
number and verdict of the report's generated block is rendered from them (by the driver and by
``python -m experiments.reproduce.pages``, whose test regenerates the block):

* ``lightdp_seeds.csv``: one row per run and seed (:data:`FIELDS`): the sweep row, the seed, the
  final test accuracy, the run's reported epsilon and its training time;
* ``lightdp_fig4.json``: the measured Fig. 4 per-operation costs, the Fig. 4 curves, the run
  setting and the invocation's wall time (measurements that no rerun reproduces exactly).

Verdicts (:func:`claims`) use the rule of :mod:`experiments.reproduce.stats`: the interval rule
on the per-seed final accuracies, with the paired per-seed difference beside it; "more than 15
points" is the same rule on ``a - 15`` against ``b``; a table trend measured on one seed per cell
says "one seed" and gets no verdict.

The blocks' fixed wording (headings, notes, the summary, privacy findings and setting prose) is
``templates/lightdp.md``, filled with the numbers computed here (:func:`wrapped`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from experiments.configs.lightdp import _common
from experiments.papers import lightdp as wiring
from experiments.reproduce import _common as _runs
from experiments.reproduce import stats
from jaxfl.accounting import lightdp as acct
from jaxfl.algorithms import lightdp_cost as cost

PAPER_TABLE2 = {3: (50.8, 49.6, 47.5, 45.8), 6: (54.5, 52.1, 50.6, 49.7),
                9: (61.9, 60.6, 57.9, 55.3)}  # columns C_bar = 10, 20, 30, 40 (S_bar = 10)
PAPER_TABLE3 = {3: (51.7, 50.2, 48.5, 47.2), 6: (53.2, 51.7, 50.4, 48.8),
                9: (55.1, 53.4, 51.9, 50.9)}  # columns S_bar = 0, 10, 20, 30 (C_bar = 15)
C_COLS, S_COLS, EPS = (10, 20, 30, 40), (0, 10, 20, 30), (3, 6, 9)
# Tables II and III: (the swept bound's key in a run name, its columns, its label, the title,
# the paper's values).
TABLES = {"table2": ("C", C_COLS, "C̄", "Table II", PAPER_TABLE2),
          "table3": ("S", S_COLS, "S̄", "Table III", PAPER_TABLE3)}
RESNET18_DIM = 11_173_962
SEEDS_CSV, COSTS_JSON = "lightdp_seeds.csv", "lightdp_fig4.json"
FIELDS = ("name", "scheme", "epsilon", "max_colluders", "max_stragglers", "stragglers", "seed",
          "final_test_accuracy", "reported_epsilon", "privacy_mode", "train_seconds")
SETTING = ("dataset", "model", "num_clients", "rounds", "examples_per_client", "clip_norm",
           "delta", "mode", "variant")
MARGIN_POINTS = 15.0


# ------------------------------------------------------------------------------- data files


def seed_rows(results: dict) -> list[dict]:
    """CSV rows (:data:`FIELDS`) of the driver's ``results`` (name -> runs in seed order)."""
    out = []
    for name, runs in results.items():
        for seed, r in enumerate(runs):
            row, last = r["row"], r["history"][-1]
            out.append({"name": name, "scheme": row.get("scheme", "lightdp"),
                        "epsilon": row["epsilon"], "max_colluders": row["max_colluders"],
                        "max_stragglers": row["max_stragglers"],
                        "stragglers": row.get("stragglers", "uniform"), "seed": seed,
                        "final_test_accuracy": last["test_accuracy"],
                        "reported_epsilon": last.get("epsilon", math.nan),
                        "privacy_mode": last.get("privacy_mode", ""),
                        "train_seconds": last.get("elapsed_s", math.nan)})
    return out


def setting_of(base: _common.LightDPConfig) -> dict:
    return {k: getattr(base, k) for k in SETTING}


def write_data(folder: Path, results: dict, base, *, scale: str, costs, fig4, wall: float,
               model_params: int) -> None:
    """Writes :data:`SEEDS_CSV` and :data:`COSTS_JSON` into ``folder``."""
    _runs.write_rows(Path(folder) / SEEDS_CSV, seed_rows(results), FIELDS)
    meta = {"scale": scale, "setting": setting_of(base), "model_params": int(model_params),
            "costs": costs, "fig4": fig4, "wall_seconds": wall, "provenance": _runs.provenance()}
    (Path(folder) / COSTS_JSON).write_text(json.dumps(meta, indent=1, sort_keys=True,
                                                      default=float) + "\n")


def read_data(folder: Path) -> tuple[dict, dict]:
    """``(results, meta)`` from the two data files: ``results`` maps a run name to its seeds
    in order, each ``{"seed", "row", "history": [final record]}`` (the driver's shape)."""
    rows = _runs.read_rows(Path(folder) / SEEDS_CSV, ints=(
        "max_colluders", "max_stragglers", "seed"), floats=(
        "epsilon", "final_test_accuracy", "reported_epsilon", "train_seconds"))
    results: dict[str, list] = {}
    for r in sorted(rows, key=lambda r: (r["name"], r["seed"])):
        row = {k: r[k] for k in ("name", "scheme", "epsilon", "max_colluders", "max_stragglers",
                                 "stragglers")}
        last = {"test_accuracy": r["final_test_accuracy"], "epsilon": r["reported_epsilon"],
                "privacy_mode": r["privacy_mode"], "elapsed_s": r["train_seconds"]}
        results.setdefault(r["name"], []).append({"seed": r["seed"], "row": row,
                                                  "history": [last]})
    meta = json.loads((Path(folder) / COSTS_JSON).read_text())
    return results, meta


# ------------------------------------------------------------------------------- tables


def per_seed(results: dict, name: str) -> dict[int, float]:
    """seed -> final test accuracy (%) of run ``name``."""
    return {r.get("seed", i): r["history"][-1]["test_accuracy"] * 100
            for i, r in enumerate(results.get(name, []))}


def final_accuracy(results: dict, name: str, max_seeds: int | None = None
                   ) -> tuple[float, float]:
    accs = list(per_seed(results, name).values())[:max_seeds]
    if not accs:
        return math.nan, math.nan
    return float(np.mean(accs)), float(np.std(accs))


def cell_name(which: str, e, c) -> str:
    """The run name of table ``which``'s cell at epsilon ``e`` and column ``c``."""
    return f"{which}_eps{e}_{TABLES[which][0]}{c}"


def table_names(which: str) -> list[str]:
    return [cell_name(which, e, c) for e in EPS for c in TABLES[which][1]]


def table_seeds(results: dict, which: str) -> int:
    """Seeds shared by every cell of a table (cells are compared on the same seeds)."""
    counts = [len(results[n]) for n in table_names(which) if n in results]
    return min(counts) if counts else 0


def fig3_seeds(results: dict) -> int:
    """Seeds shared by every Fig. 3 run."""
    return min((len(v) for n, v in results.items() if n.startswith("fig3")), default=0)


def _cell(results, name, paper, k):
    m, s = final_accuracy(results, name, k)
    if math.isnan(m):
        return f"n/a ({paper})"
    spread = f" ± {s:.1f}" if k > 1 else ""
    return f"{m:.1f}{spread} ({paper})"


def _exact(design) -> float:
    """Strict (exact) epsilon of a design's noise over its rounds at its delta (the report)."""
    return acct.accountant(design).report(design.accounted_rounds, design.delta).epsilon


DESIGN_CELLS = (("Table II C̄=10", 10, 10), ("Table II C̄=40", 40, 10), ("Table III S̄=0", 15, 0),
                ("Table III S̄=30", 15, 30))
# The spec author's recomputation of Example 1 (Sec. V-C, N = 50, uniform straggler law) at the
# design cells: (C̄, S̄) -> (γ₀, σ_U/σ₀, σ_K/σ₀) as printed there (the design's target; the
# whole table is tests/accounting/lightdp_test.py's REFERENCE).
EXAMPLE1 = {(10, 10): (0.079656, 0.57545, 0.16241), (40, 10): (0.057681, 0.83774, 0.20120),
            (15, 0): (0.138861, 0.57036, 0.21254), (15, 30): (0.041768, 0.67605, 0.13816)}


def example1_matches(rows) -> tuple[int, int]:
    """(matching, total) design cells of :data:`EXAMPLE1` whose rows in ``rows``
    (:func:`design_rows`, one per ε) all have γ₀, σ_U/σ₀ and σ_K/σ₀ equal to Example 1's to half
    a unit of its last printed digit (a cell missing from ``rows`` does not match)."""
    def tol(printed: float) -> float:
        digits = f"{printed:.6f}".rstrip("0").split(".")[1]
        return 0.5 * 10.0 ** -max(len(digits), 4) + 1e-12

    cells: dict = {}
    for r in rows:  # a cell's rows (one per ε) must all match
        cells.setdefault((r["C"], r["S"]), []).append((r["gamma"], r["sigma_u"], r["sigma_k"]))
    hits = [bool(cells.get(k)) and all(abs(g - w) <= tol(w) for got in cells[k]
                                       for g, w in zip(got, want, strict=True))
            for k, want in EXAMPLE1.items()]
    return sum(hits), len(hits)


CHECK_ROUNDS, CHECK_DELTAS = 150, (1e-5, 1e-2)  # the paper's T; the calibration check's deltas
RESNET18_T_TRAIN = 60.0  # s of local training per client per round assumed for ResNet-18


def design_rows(base: _common.LightDPConfig) -> list[dict]:
    """Noise design and exact accounting of every cell of :data:`DESIGN_CELLS` at the run's
    (N, T, Delta, delta), paper and strict mode; ``ev``: E[v] / sigma_0^2 of LightDP-FL, LDP
    and SMPC+DP (nan where SMPC+DP has no honest uploader)."""
    out = []
    for name, C, S in DESIGN_CELLS:
        for e in EPS:
            kw = dict(epsilon=float(e), delta=base.delta, num_clients=50, max_colluders=C,
                      max_stragglers=S, sensitivity=wiring.sensitivity(base), rounds=base.rounds)
            p = acct.design(mode="paper", **kw)
            s = acct.design(mode="strict", **kw)
            ev = [acct.design(mode="paper", scheme=sch, **kw).expected_variance() / p.sigma_0**2
                  if sch != "smpc_dp" or 50 - C - S > 0 else math.nan
                  for sch in ("lightdp", "ldp", "smpc_dp")]
            out.append({"setting": name, "C": C, "S": S, "epsilon": e,
                        "sigma_u": p.sigma_u / p.sigma_0, "sigma_k": p.sigma_k / p.sigma_0,
                        "gamma": p.gamma, "exact_paper": _exact(p), "exact_strict": _exact(s),
                        "scale": s.scale, "ev": ev,
                        "constraint": p.v_paper_max * p.sigma_0**2})
    return out


def delta_rows() -> list[dict]:
    """Exact epsilon of the paper's LDP calibration over :data:`CHECK_ROUNDS` rounds at each
    of :data:`CHECK_DELTAS` (C̄ = S̄ = 10, sensitivity 1), with the strict-mode scale."""
    out = []
    for delta in CHECK_DELTAS:
        for e in EPS:
            kw = dict(epsilon=float(e), delta=delta, num_clients=50, max_colluders=10,
                      max_stragglers=10, sensitivity=1.0, rounds=CHECK_ROUNDS, scheme="ldp")
            p, s = acct.design(mode="paper", **kw), acct.design(mode="strict", **kw)
            out.append({"delta": delta, "epsilon": e, "exact": _exact(p), "scale": s.scale})
    return out


def fig4_times(base: _common.LightDPConfig, costs: dict, *, dim: int, t_train: float) -> dict:
    p = cost.CostParams(dim=dim, num_clients=base.num_clients, t_train=t_train,
                        t_gauss=costs["t_gauss"], t_encrypt=costs["paillier"]["encrypt"],
                        t_he_add=costs["paillier"]["add"], t_decrypt=costs["paillier"]["decrypt"])
    return {s: cost.round_cost(s, p, num_uploads=base.num_clients - 3)
            for s in ("lightdp", "he_dp", "ldp")}


# ------------------------------------------------------------------------------- claims


def _compare(results, a_name, b_name, margin: float = 0.0) -> dict:
    """Interval and paired verdicts of ``a - margin > b`` on the per-seed accuracies (%), with
    the paired difference's :func:`experiments.reproduce.stats.test` (``test``) for the
    paper's Holm family."""
    a = {s: v - margin for s, v in per_seed(results, a_name).items()}
    b = per_seed(results, b_name)
    c = stats.compare(a, b)
    c["test"] = stats.test(c["paired"])
    return c


def _fig3_parts(results, other, margin=0.0):
    return [(e, _compare(results, f"table2_eps{e}_C10", f"fig3_eps{e}_{other}", margin))
            for e in EPS if f"fig3_eps{e}_{other}" in results]


def _fig3_claim(parts, claim, label, margin=0.0):
    """One Fig. 3 claim from its per-ε comparisons (Holm already applied: module docstring)."""
    if not parts:
        return None
    shift = f" - {margin:g}" if margin else ""
    evidence = "; ".join(
        f"ε={e}: LightDP-FL{shift} {stats.fmt(c['a'], 1)} vs {label} {stats.fmt(c['b'], 1)}"
        for e, c in parts)
    paired = "; ".join(f"ε={e}: {stats.fmt_paired(c['paired'], nd=2, unit=' pt')}"
                       for e, c in parts)
    verdict = stats.combine([c["test"]["verdict"] for _, c in parts], stats.INCONCLUSIVE)
    interval = stats.combine([c["verdict"] for _, c in parts], stats.OVERLAP)
    return (claim, verdict, evidence, f"interval rule: {interval}; paired: {paired}")


def _trend_pairs(results, which):
    _, cols, label, title, _ = TABLES[which]
    name = lambda e, c: cell_name(which, e, c)  # noqa: E731
    # (cell claimed higher, cell claimed lower) for every adjacent pair
    rising = [(name(b, c), name(a, c)) for c in cols for a, b in zip(EPS, EPS[1:])]
    falling = [(name(e, a), name(e, b)) for e in EPS for a, b in zip(cols, cols[1:])]
    return [(f"{title}: accuracy increases with ε", rising),
            (f"{title}: accuracy decreases with {label}", falling)]


def _trend(results, which, cmps=None) -> list[tuple]:
    """Table trends: with one seed per cell, the inversions counted and no verdict; with more,
    the primary test on every adjacent pair of cells (``cmps``: their comparisons, Holm
    applied)."""
    k = table_seeds(results, which)
    out = []
    for i, (claim, pairs) in enumerate(_trend_pairs(results, which)):
        if k < 2:
            inv = sum(final_accuracy(results, hi, k)[0] <= final_accuracy(results, lo, k)[0]
                      for hi, lo in pairs)
            out.append((claim, stats.ONE_SEED, f"{inv} inversions of {len(pairs)} adjacent cells "
                        "(one seed per cell)", "-"))
            continue
        cmp = cmps[i]
        held = sum(c["test"]["verdict"] == stats.HOLDS for c in cmp)
        out.append((claim, stats.combine([c["test"]["verdict"] for c in cmp], stats.INCONCLUSIVE),
                    f"{held}/{len(cmp)} adjacent comparisons hold paired (Holm; {k} seeds)",
                    f"interval rule: {stats.combine([c['verdict'] for c in cmp])}"))
    return out


def claims(results: dict, fig4: dict | None, costs: dict | None) -> list[tuple]:
    """``(claim, verdict, evidence, paired)`` rows of the report (module docstring). Every
    paired comparison of the Fig. 3 claims (and of the table trends, where they have seeds)
    is one test of the paper's Holm family (:data:`experiments.reproduce.stats.PRIMARY_RULE`);
    a claim holds when all its comparisons are significant in the claimed direction."""
    fig3 = [("LightDP-FL beats vanilla LDP at every ε (Fig. 3)", "ldp", "LDP", 0.0),
            (f"... by more than {MARGIN_POINTS:g} points", "ldp", "LDP", MARGIN_POINTS),
            ("LightDP-FL beats SMPC+DP at every ε (Fig. 3; the paper's own noise formulas "
             "predict not)", "smpc_dp", "SMPC+DP", 0.0)]
    parts = [_fig3_parts(results, other, margin) for _, other, _, margin in fig3]
    trends = {w: [[_compare(results, hi, lo) for hi, lo in pairs]
                  for _, pairs in _trend_pairs(results, w)]
              for w in TABLES if all(n in results for n in table_names(w))
              and table_seeds(results, w) >= 2}
    stats.holm([c["test"] for p in parts for _, c in p]
               + [c["test"] for t in trends.values() for cmp in t for c in cmp])
    out = [c for c in (_fig3_claim(p, claim, label, margin)
                       for p, (claim, _, label, margin) in zip(parts, fig3, strict=True)) if c]
    for which in TABLES:
        if all(n in results for n in table_names(which)):
            out += _trend(results, which, trends.get(which))
    if fig4 and "time_ratio_he_over_lightdp" in fig4:
        r = fig4["time_ratio_he_over_lightdp"]
        out.append(("HE+DP needs >= 10x LightDP-FL's wall-clock time (Fig. 4)",
                    "not tested (cost model" + (", meets 10x)" if r >= 10 else ", below 10x)"),
                    f"time to {fig4['target_accuracy']:.1f}% (modelled): ratio {r:.3g}", "-"))
    if costs:
        # Decided on SecAgg with its dropout recovery: under the every-link reading the round
        # fails by the model's own rule, so that reading cannot refute the claim.
        rec = costs["secagg_recovery_success_rate"]
        out.append(("SecAgg cannot train with 5% link failures",
                    "does not hold (with dropout recovery)" if rec > 0.5 else "holds",
                    f"rounds recovered with Shamir dropout recovery: {rec:.3f}; without it "
                    f"(every P2P link needed): {costs['secagg_round_success_rate']:.3f}", "-"))
    return out


# ------------------------------------------------------------------------------- the block

PAGE = "lightdp"  # templates/lightdp.md: the fixed wording of the page's generated blocks


def _prose(block: str, **fields) -> str:
    """A block of :data:`PAGE`'s template, as it stands."""
    return _runs.prose(PAGE, block, **fields)


def _fraction(x: float) -> str:
    """2/3 for 0.666..., else the number."""
    from fractions import Fraction

    f = Fraction(x).limit_denominator(12)
    return f"{f.numerator}/{f.denominator}" if abs(float(f) - x) < 1e-12 else f"{x:g}"


def generated_markdown(base, scale: str, results: dict, meta: dict, fig_dir) -> str:
    """The generated block of the LightDP report from the data files (template block
    ``results``; a section of it per table or figure that has data)."""
    costs, fig4 = meta.get("costs"), meta.get("fig4")
    runs = [r for v in results.values() for r in v]
    has = {w: any(n.startswith(w) for n in results) for w in ("table2", "table3", "fig3")}

    def table(which):
        _, cols, head, _, paper = TABLES[which]
        k = table_seeds(results, which)
        return {"seeds": k, "head": " | ".join(f"{head}={c}" for c in cols), "rows": [
            {"e": e, "cells": " | ".join(_cell(results, cell_name(which, e, c), p, k)
                                         for c, p in zip(cols, paper[e], strict=True))}
            for e in EPS]}

    fig4_rows = []
    for label, dim, t_train in ([("ours (CPU)", meta["model_params"], costs["t_train_client"]),
                                 ("ResNet-18 (extrapolated)", RESNET18_DIM, RESNET18_T_TRAIN)]
                                if costs else []):
        times = fig4_times(base, costs, dim=dim, t_train=t_train)
        fig4_rows += [{"server": 0, "extra_round": 0, **times[s], "label": label, "dim": dim,
                       "scheme": s} for s in ("lightdp", "he_dp")]
    pai = (costs or {}).get("paillier", {})
    return _runs.prose(
        PAGE, "results", scale=scale, dataset=base.dataset, model=base.model,
        params=f" ({meta['model_params']:,} parameters)" if meta.get("model_params") else "",
        num_clients=base.num_clients, rounds=base.rounds, examples=base.examples_per_client,
        clip_norm=base.clip_norm, sensitivity=f"{wiring.sensitivity(base):g}",
        delta=f"{base.delta:g}", mode=base.mode,
        seeds="/".join(str(c) for c in sorted({len(v) for v in results.values()})) or "0",
        runs=len(runs), seeds_csv=SEEDS_CSV, costs_json=COSTS_JSON, fig_dir=fig_dir,
        train_min=f"{sum(r['history'][-1].get('elapsed_s', 0.0) for r in runs) / 60:.1f}",
        table2=has["table2"] and bool(table_seeds(results, "table2")) and table("table2"),
        table3=has["table3"] and table("table3"),
        fig3=has["fig3"] and {"seeds": fig3_seeds(results), "rows": [
            dict(zip(("e", "lightdp", "ldp", "smpc"), [e, *(
                stats.fmt(stats.interval(list(per_seed(results, n).values())), 1) for n in (
                    f"table2_eps{e}_C10", f"fig3_eps{e}_ldp", f"fig3_eps{e}_smpc_dp"))]))
            for e in EPS]},
        fig4=bool(costs) and dict(
            rows=fig4_rows, gauss_ns=f"{costs['t_gauss'] * 1e9:.1f}", key_bits=pai["key_bits"],
            encrypt_ms=f"{pai['encrypt'] * 1e3:.2f}", add_us=f"{pai['add'] * 1e6:.1f}",
            decrypt_ms=f"{pai['decrypt'] * 1e3:.2f}", mbit=_mbit(),
            every_link=f"{costs['secagg_round_success_rate'] * 100:.1f}",
            usable=f"{costs['client_usable_prob']:.4f}",
            threshold=_fraction(cost.SECAGG_THRESHOLD),
            recovered=f"{costs['secagg_recovery_success_rate'] * 100:.1f}"),
        design=[{**r, "evs": " / ".join(f"{v:.6f}" for v in r["ev"])} for r in design_rows(base)],
        check_rounds=CHECK_ROUNDS,
        calibration=[{**r, "ok": r["exact"] <= r["epsilon"]} for r in delta_rows()],
        claims=[dict(zip(("claim", "verdict", "evidence", "paired"), c))
                for c in claims(results, fig4, costs)]) + "\n"


# ------------------------------------------------------------------------------- prose blocks
# The report's prose outside the results block carries numbers too; these blocks write them
# from the same data files and accounting code (``python -m experiments.reproduce.pages``
# splices them, its test regenerates them).


def _d(x: float) -> str:
    """A delta as the page writes it: 1e-5, 1e-2."""
    return re.sub(r"e-0*", "e-", f"{x:.0e}") if x < 0.1 else f"{x:g}"


def _data_name(base) -> str:
    return {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "cifar10": "CIFAR-10"}.get(
        base.dataset, base.dataset)


def _mbit() -> str:
    """The cost model's per-client bandwidth (both ways, its default) in Mbit/s."""
    f = cost.CostParams.__dataclass_fields__
    up, down = f["bandwidth_up"].default, f["bandwidth_down"].default
    return f"{up / 1e6:g}" if up == down else f"{up / 1e6:g} up / {down / 1e6:g} down"


def _seeds_words(k: int) -> str:
    return {1: "one seed"}.get(k, f"{k} seeds")


def summary_markdown(base, results: dict, meta: dict) -> str:
    """The page's overview (no verdict of its own: the verdicts are in the claims table)."""
    k = table_seeds(results, "table2")
    return _runs.prose_wrapped(
        PAGE, "summary", check_rounds=CHECK_ROUNDS,
        deltas=" and ".join(f"δ = {_d(d)}" for d in CHECK_DELTAS), dataset=_data_name(base),
        fig3_seeds=fig3_seeds(results), seeds_csv=SEEDS_CSV, seeds=_seeds_words(k).capitalize(),
        decided=_prose("trends_reported" if k < 2 else "trends_decided"))


def privacy_markdown(base, results: dict, meta: dict) -> str:
    """The "what holds and what does not" list: every number from :func:`delta_rows` and
    :func:`design_rows` (the two accounting tables of the results block)."""
    checks, design = delta_rows(), design_rows(base)
    lo = [r for r in checks if r["delta"] == min(CHECK_DELTAS)]
    fail = [r for r in checks if r["exact"] > r["epsilon"]]
    cell = next(r for r in design if (r["C"], r["S"]) == (10, 10) and r["epsilon"] == EPS[0])
    gam = [r["gamma"] for r in design]
    ratio = {(r["C"], r["S"]): r["ev"][0] / r["ev"][2] for r in design
             if math.isfinite(r["ev"][2])}
    if fail:
        other = _prose("calibration_fails", cells="; ".join(
            f"δ = {_d(r['delta'])}, ε = {r['epsilon']}** (exact {r['exact']:.2f}" for r in fail))
        scaled = " " + _prose("strict_scales", scales=" / ".join(f"{r['scale']:.4f}" for r in fail))
    else:
        other, scaled = _prose("calibration_holds"), ""
    return _runs.prose_wrapped(
        PAGE, "privacy",
        holds="holds" if all(r["exact"] <= r["epsilon"] for r in lo) else "does not hold",
        delta=_d(min(CHECK_DELTAS)), check_rounds=CHECK_ROUNDS,
        nominal=" / ".join(str(r["epsilon"]) for r in lo),
        exact=" / ".join(f"{r['exact']:.2f}" for r in lo),
        worst_view="lower still" if cell["exact_strict"] < lo[0]["exact"] else "higher",
        cell_exact=f"{cell['exact_strict']:.2f}", cell_eps=cell["epsilon"], rounds=base.rounds,
        other_deltas=other, scaled=scaled, gamma_lo=f"{min(gam):.2f}", gamma_hi=f"{max(gam):.2f}",
        ratio_lo=f"{min(ratio.values()):.0f}", ratio_hi=f"{max(ratio.values()):.0f}",
        ratio_10=f"{ratio[(10, 10)]:.0f}")


def setting_markdown(base, results: dict, meta: dict) -> str:
    """The reproduction setting: the config's values, the model size, the seeds and the Fig. 4
    link-failure numbers from the data files."""
    kw = dict(base.model_kwargs)
    accs = [r["history"][-1]["test_accuracy"] for v in results.values() for r in v]
    acc = float(np.mean(accs))
    same = base.mode == "strict" and all(r["scale"] == 1.0 for r in design_rows(base))
    costs = meta.get("costs") or {}
    usable = costs.get("client_usable_prob")
    n, p = base.num_clients, base.failure_prob
    bits = (costs.get("paillier") or {}).get("key_bits", 2048)
    features = kw.get("features", ())
    success = costs.get("secagg_round_success_rate")
    return _runs.prose_wrapped(
        PAGE, "setting", n=n, examples=base.examples_per_client,
        shards=base.shards_per_client, rounds=base.rounds, side=28 // base.image_pool,
        convs=len(features), channels="/".join(map(str, features)),
        dense="/".join(map(str, kw.get("hidden", ()))), params=f"{meta['model_params']:,}",
        epochs=base.local_epochs, batch=base.batch_size, lr=f"{base.client_lr:g}",
        clip_norm=f"{base.clip_norm:g}", delta=_d(base.delta), mode=base.mode,
        mode_note=" " + _prose("strict_is_paper", delta=_d(base.delta)) if same else ";",
        seeds=_seeds_words(table_seeds(results, "table2")), test_examples=base.test_examples,
        acc=f"{100 * acc:.0f}",
        se=f"{100 * math.sqrt(acc * (1 - acc) / base.test_examples):.1f}",
        fig3_seeds=fig3_seeds(results), p=f"{p:g}",
        usable="" if usable is None else " " + _prose(
            "client_usable", q=f"{1 - p:g}", n=n, usable=f"{usable:.3f}"),
        every_link=_prose("every_round_fails") if success == 0 else _prose(
            "rounds_succeed", percent=f"{100 * (math.nan if success is None else success):.0f}"),
        threshold=_fraction(cost.SECAGG_THRESHOLD), bits=bits, cipher_bits=2 * bits,
        mbit=_mbit(), resnet_train=f"{RESNET18_T_TRAIN:g}")


PROSE_BLOCKS = {"lightdp_summary": summary_markdown, "lightdp_privacy": privacy_markdown,
                "lightdp_setting": setting_markdown}
