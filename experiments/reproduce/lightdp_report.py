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
            "costs": costs, "fig4": fig4, "wall_seconds": wall}
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


def table_markdown(results: dict, which: str) -> str:
    _, cols, head, _, paper = TABLES[which]
    k = table_seeds(results, which)
    return "\n".join(_runs.table(
        ["ε", *(f"{head}={c}" for c in cols)],
        [[e, *(_cell(results, cell_name(which, e, c), p, k)
               for c, p in zip(cols, paper[e], strict=True))] for e in EPS]))


def _exact(design) -> float:
    """Strict (exact) epsilon of a design's noise over its rounds at its delta (the report)."""
    return acct.accountant(design).report(design.accounted_rounds, design.delta).epsilon


DESIGN_CELLS = (("Table II C̄=10", 10, 10), ("Table II C̄=40", 40, 10), ("Table III S̄=0", 15, 0),
                ("Table III S̄=30", 15, 30))
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


def design_markdown(base: _common.LightDPConfig) -> str:
    """Noise design and accounting of every cell at the run's (N, T, Delta, delta)."""
    return "\n".join(_runs.table(
        ("setting", "ε", "σ_U/σ₀", "σ_K/σ₀", "γ₀", "exact ε (paper mode)", "exact ε (strict)",
         "strict scale", "E[v] LightDP / LDP / SMPC"),
        [(r["setting"], r["epsilon"], f"{r['sigma_u']:.5f}", f"{r['sigma_k']:.5f}",
          f"{r['gamma']:.6f}", f"{r['exact_paper']:.4f}", f"{r['exact_strict']:.4f}",
          f"{r['scale']:.4f}", " / ".join(f"{v:.6f}" for v in r["ev"]))
         for r in design_rows(base)]))


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


def delta_check_markdown() -> str:
    """Exact epsilon of the paper's calibration at two deltas (strict vs paper mode)."""
    return "\n".join(_runs.table(
        ("δ", "nominal ε", "exact ε, paper calibration (LDP)", "holds", "strict-mode scale"),
        [(f"{r['delta']:g}", r["epsilon"], f"{r['exact']:.4f}",
          "yes" if r["exact"] <= r["epsilon"] else "**no**", f"{r['scale']:.4f}")
         for r in delta_rows()]))


def fig4_times(base: _common.LightDPConfig, costs: dict, *, dim: int, t_train: float) -> dict:
    p = cost.CostParams(dim=dim, num_clients=base.num_clients, t_train=t_train,
                        t_gauss=costs["t_gauss"], t_encrypt=costs["paillier"]["encrypt"],
                        t_he_add=costs["paillier"]["add"], t_decrypt=costs["paillier"]["decrypt"])
    return {s: cost.round_cost(s, p, num_uploads=base.num_clients - 3)
            for s in ("lightdp", "he_dp", "ldp")}


# ------------------------------------------------------------------------------- claims


def _compare(results, a_name, b_name, margin: float = 0.0) -> dict:
    """Interval and paired verdicts of ``a - margin > b`` on the per-seed accuracies (%)."""
    a = {s: v - margin for s, v in per_seed(results, a_name).items()}
    b = per_seed(results, b_name)
    return stats.compare(a, b)


def _fig3_claim(results, claim, other, label, margin=0.0):
    parts = [(e, _compare(results, f"table2_eps{e}_C10", f"fig3_eps{e}_{other}", margin))
             for e in EPS if f"fig3_eps{e}_{other}" in results]
    if not parts:
        return None
    shift = f" - {margin:g}" if margin else ""
    evidence = "; ".join(
        f"ε={e}: LightDP-FL{shift} {stats.fmt(c['a'], 1)} vs {label} {stats.fmt(c['b'], 1)}"
        for e, c in parts)
    paired = "; ".join(f"ε={e}: {stats.fmt_paired(c['paired'], nd=2, unit=' pt')}"
                       for e, c in parts)
    verdict = stats.combine([c["verdict"] for _, c in parts], stats.OVERLAP)
    paired_verdict = stats.combine([c["paired_verdict"] for _, c in parts], stats.OVERLAP_PAIRED)
    return (claim, verdict, evidence, f"{paired_verdict}: {paired}")


def _trend(results, which) -> list[tuple]:
    """Table trends: with one seed per cell, the inversions counted and no verdict; with more,
    the interval rule on every adjacent pair of cells."""
    _, cols, label, title, _ = TABLES[which]
    k = table_seeds(results, which)
    name = lambda e, c: cell_name(which, e, c)  # noqa: E731
    # (cell claimed higher, cell claimed lower) for every adjacent pair
    rising = [(name(b, c), name(a, c)) for c in cols for a, b in zip(EPS, EPS[1:])]
    falling = [(name(e, a), name(e, b)) for e in EPS for a, b in zip(cols, cols[1:])]
    out = []
    for claim, pairs in [(f"{title}: accuracy increases with ε", rising),
                         (f"{title}: accuracy decreases with {label}", falling)]:
        if k < 2:
            inv = sum(final_accuracy(results, hi, k)[0] <= final_accuracy(results, lo, k)[0]
                      for hi, lo in pairs)
            out.append((claim, stats.ONE_SEED, f"{inv} inversions of {len(pairs)} adjacent cells "
                        "(one seed per cell)", "-"))
            continue
        cmp = [_compare(results, hi, lo) for hi, lo in pairs]
        held = sum(c["verdict"] == stats.HOLDS for c in cmp)
        out.append((claim, stats.combine([c["verdict"] for c in cmp], stats.OVERLAP),
                    f"{held}/{len(cmp)} adjacent comparisons hold ({k} seeds)",
                    stats.combine([c["paired_verdict"] for c in cmp], stats.OVERLAP_PAIRED)))
    return out


def claims(results: dict, fig4: dict | None, costs: dict | None) -> list[tuple]:
    """``(claim, verdict, evidence, paired)`` rows of the report (module docstring)."""
    out = [c for c in (
        _fig3_claim(results, "LightDP-FL beats vanilla LDP at every ε (Fig. 3)", "ldp", "LDP"),
        _fig3_claim(results, f"... by more than {MARGIN_POINTS:g} points", "ldp", "LDP",
                    MARGIN_POINTS),
        _fig3_claim(results, "LightDP-FL beats SMPC+DP at every ε (Fig. 3; the paper's own noise "
                    "formulas predict not)", "smpc_dp", "SMPC+DP")) if c]
    for which in TABLES:
        if all(n in results for n in table_names(which)):
            out += _trend(results, which)
    if fig4 and "time_ratio_he_over_lightdp" in fig4:
        r = fig4["time_ratio_he_over_lightdp"]
        out.append(("HE+DP needs >= 10x LightDP-FL's wall-clock time (Fig. 4)",
                    stats.exact(r >= 10) + " (modelled)",
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


def _fraction(x: float) -> str:
    """2/3 for 0.666..., else the number."""
    from fractions import Fraction

    f = Fraction(x).limit_denominator(12)
    return f"{f.numerator}/{f.denominator}" if abs(float(f) - x) < 1e-12 else f"{x:g}"


def generated_markdown(base, scale: str, results: dict, meta: dict, fig_dir) -> str:
    """The generated block of the LightDP report from the data files (module docstring)."""
    costs, fig4 = meta.get("costs"), meta.get("fig4")
    counts = sorted({len(v) for v in results.values()})
    train_s = sum(r["history"][-1].get("elapsed_s", 0.0) for v in results.values() for r in v)
    seeds_txt = "/".join(str(c) for c in counts) or "0"
    params = f" ({meta['model_params']:,} parameters)" if meta.get("model_params") else ""
    lines = [f"### Results ({scale} scale: {base.dataset}, model {base.model}{params}, N = "
             f"{base.num_clients}, T = {base.rounds}, {base.examples_per_client} examples per "
             f"client, W = {base.clip_norm}, Δ = {wiring.sensitivity(base):g}, "
             f"δ = {base.delta:g}, mode = {base.mode}, {seeds_txt} seed(s) per run (cells with "
             f"± average several seeds); {sum(len(v) for v in results.values())} runs, summed "
             f"training time {train_s / 60:.1f} min). Per-seed results: "
             f"`docs/reproduction/data/{SEEDS_CSV}`; measured costs: "
             f"`docs/reproduction/data/{COSTS_JSON}`. These per-seed data predate commit "
             "176de51, which draws the shards and the test subset from "
             "`jaxfl.random.host_rng` and gives the model initialisation and the pairwise masks "
             "separate key streams (they shared one key): a rerun reproduces these numbers "
             "statistically, not bit for bit (the noise design and every ε are unchanged).", ""]
    if any(n.startswith("table2") for n in results) and table_seeds(results, "table2"):
        lines += [f"**Table II** (S̄ = 10): final test accuracy %, ours over "
                  f"{table_seeds(results, 'table2')} seed(s) (paper's CIFAR-10 ResNet-18 value "
                  "in parentheses)", "", table_markdown(results, "table2"), ""]
    if any(n.startswith("table3") for n in results):
        lines += [f"**Table III** (C̄ = 15): ours over {table_seeds(results, 'table3')} "
                  "seed(s) (paper)", "", table_markdown(results, "table3"), ""]
    if any(n.startswith("fig3") for n in results):
        k3 = fig3_seeds(results)
        lines += [f"**Fig. 3** (C̄ = 10, S̄ = 10): final accuracy %, mean [95% t-interval] over "
                  f"{k3} seed(s) (paired: the schemes share partitions and test subsets per "
                  "seed)", "", *_runs.table(("ε", "LightDP-FL", "LDP", "SMPC+DP"))]
        for e in EPS:
            cells = [stats.fmt(stats.interval(list(per_seed(results, n).values())), 1) for n in
                     (f"table2_eps{e}_C10", f"fig3_eps{e}_ldp", f"fig3_eps{e}_smpc_dp")]
            lines.append(_runs.row([e, *cells]))
        lines += ["", f"![Fig. 3]({fig_dir}/fig3.png)", ""]
    if costs:
        times_small = fig4_times(base, costs, dim=meta["model_params"],
                                 t_train=costs["t_train_client"])
        times_resnet = fig4_times(base, costs, dim=RESNET18_DIM, t_train=RESNET18_T_TRAIN)
        pai = costs["paillier"]
        lines += ["**Fig. 4** (link failure p = 0.05): per-round time model with measured "
                  f"per-op costs: Gaussian draw {costs['t_gauss'] * 1e9:.1f} ns (our pairwise "
                  f"code, jit), Paillier {pai['key_bits']}-bit encrypt {pai['encrypt'] * 1e3:.2f} "
                  f"ms, add {pai['add'] * 1e6:.1f} µs, decrypt {pai['decrypt'] * 1e3:.2f} ms "
                  f"(phe), bandwidth {_mbit()} Mbit/s each way.", "",
                  *_runs.table(("model", "d", "scheme", "train", "privacy ops", "upload",
                                "server", "extra round", "total s/round"))]
        for label, dim, times in [("ours (CPU)", meta["model_params"], times_small),
                                  ("ResNet-18 (extrapolated)", RESNET18_DIM, times_resnet)]:
            for s in ("lightdp", "he_dp"):
                t = times[s]
                lines.append(f"| {label} | {dim:,} | {s} | {t['train']:.3g} | "
                             f"{t['privacy']:.3g} | {t['upload']:.3g} | {t.get('server', 0):.3g} "
                             f"| {t.get('extra_round', 0):.3g} | {t['total']:.4g} |")
        lines += ["", f"SecAgg / SwiftAgg+: {costs['secagg_round_success_rate'] * 100:.1f}% of "
                  "200 simulated rounds recover the aggregate if a client needs its P2S and "
                  f"all N-1 P2P links (p = {costs['client_usable_prob']:.4f}); SecAgg with its "
                  "Shamir dropout recovery (threshold "
                  f"{_fraction(cost.SECAGG_THRESHOLD)} of the clients, server-relayed "
                  f"messages): {costs['secagg_recovery_success_rate'] * 100:.1f}%.", "",
                  f"![Fig. 4]({fig_dir}/fig4.png)", ""]
    lines += ["**Noise design and exact accounting of the table cells** (N = 50, T = "
              f"{base.rounds}, Δ = {wiring.sensitivity(base):g}, δ = {base.delta:g}; E[v] in "
              "units of σ₀²):", "", design_markdown(base), "",
              "**The paper's calibration under exact accounting** (T = "
              f"{CHECK_ROUNDS} rounds, √T composition):", "", delta_check_markdown(), "",
              "**Claims** (verdicts computed from the numbers above by the rule of "
              "`experiments/reproduce/stats.py`: the interval rule on the per-seed final "
              "accuracies, the paired per-seed difference beside it; a claim for every ε holds "
              "when it holds at each ε and does not hold when it fails at one):", "",
              *_runs.table(("claim", "verdict", "evidence", "paired"),
                           claims(results, fig4, costs))]
    return "\n".join(lines) + "\n"


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
    k, k3 = table_seeds(results, "table2"), fig3_seeds(results)
    deltas = " and ".join(f"δ = {_d(d)}" for d in CHECK_DELTAS)
    return _runs.wrap([
        "The verdicts are in the generated \"Claims\" table below and in the summary of "
        "[reproduction.md](../reproduction.md); this overview carries none of its own."],
        bullet=None) + "\n\n" + _runs.wrap([
        "**Privacy analysis.** The noise design of Example 1 is compared with a reference "
        "table (recomputed outside this repository; the paper prints no table), and the "
        f"paper's calibration with exact accounting over {CHECK_ROUNDS} rounds at {deltas} "
        "(table \"The paper's calibration under exact accounting\"). Lemma 2 over-estimates "
        "the privacy-loss variance, which makes the design conservative; the informal step of "
        "the Prop. 1 proof is what can fail, and the default `strict` mode then scales the "
        "noise up until the exact epsilon meets the target.",
        "**LightDP-FL vs vanilla LDP and vs SMPC+DP (Fig. 3).** Measured on a CPU-scaled "
        f"{_data_name(base)} setting with {k3} paired seeds; the per-seed results are "
        f"committed (`docs/reproduction/data/{SEEDS_CSV}`) and the verdicts use the interval "
        "rule with the paired per-seed differences beside it. SMPC+DP's aggregate noise "
        "variance is smaller than LightDP-FL's with the paper's own formulas (noise design "
        "table), which is why we predicted that LightDP-FL would not beat it.",
        f"**Tables II/III trends.** {_seeds_words(k).capitalize()} per cell: "
        + ("reported, not decided." if k < 2 else "decided by the interval rule.")
        + f" The absolute levels are not comparable ({_data_name(base)} vs CIFAR-10).",
        "**Fig. 4.** A cost model with measured per-operation times. The SecAgg claim (\"fails "
        "at 5% link failure\") is decided on SecAgg with its Shamir dropout recovery: under "
        "the paper's reading that a client needs all its links in every round, the outcome "
        "follows from that assumption alone."])


def privacy_markdown(base, results: dict, meta: dict) -> str:
    """The "what holds and what does not" list: every number from :func:`delta_rows` and
    :func:`design_rows` (the two accounting tables of the results block)."""
    checks, design = delta_rows(), design_rows(base)
    lo = [r for r in checks if r["delta"] == min(CHECK_DELTAS)]
    fail = [r for r in checks if r["exact"] > r["epsilon"]]
    holds_lo = all(r["exact"] <= r["epsilon"] for r in lo)
    cell = next(r for r in design if (r["C"], r["S"]) == (10, 10) and r["epsilon"] == EPS[0])
    fails = "; ".join(f"δ = {_d(r['delta'])}, ε = {r['epsilon']}** (exact {r['exact']:.2f}"
                      for r in fail)
    gam = [r["gamma"] for r in design]
    ratio = {(r["C"], r["S"]): r["ev"][0] / r["ev"][2] for r in design
             if math.isfinite(r["ev"][2])}
    return _runs.wrap([
        "**Reference values.** The reference table (μ, γ₀, σ_U*/σ₀, σ_K*/σ₀, E[v] for the "
        "three schemes) is reproduced to every printed digit (tests), and at every optimum the "
        "Prop. 1 constraint holds with equality (max V_paper · σ₀² = 1 to 1e-9, "
        "tests/accounting/lightdp_test.py).",
        "**Lemma 2 is wrong but conservative.** The paper's variance of the privacy loss "
        "Σ_j (C⁻¹_ij)² C_jj ignores the correlation of the m_j; the exact value is (C⁻¹)_ii "
        "(checked by Monte Carlo of the log-likelihood ratio). The paper's value is never "
        "smaller (property test over random non-uniform variances), so Prop. 1 over-protects.",
        "**The informal step of Prop. 1 is not always safe.** The proof drops the mean of the "
        "privacy loss and uses a loose tail bound. Under exact accounting (analytic Gaussian / "
        "GDP, cross-checked against dp-accounting's PLD and RDP accountants) the paper's "
        f"calibration {'holds' if holds_lo else 'does not hold'} at δ = {_d(min(CHECK_DELTAS))}"
        f" (LDP over T = {CHECK_ROUNDS} rounds: nominal "
        + " / ".join(str(r["epsilon"]) for r in lo) + " → exact "
        + " / ".join(f"{r['exact']:.2f}" for r in lo) + "; LightDP-FL's worst view is "
        + ("lower still" if cell["exact_strict"] < lo[0]["exact"] else "higher")
        + f", e.g. {cell['exact_strict']:.2f} for nominal {cell['epsilon']} at (C̄, S̄) = "
        f"(10, 10) over the runs' T = {base.rounds})"
        + (f" but **fails at {fails})." if fail else " and at every other δ checked.")
        + " The default `strict` mode keeps the paper's design and scales both standard "
        "deviations up (same γ) whenever the exact T-round epsilon of the worst-case view "
        "exceeds the target"
        + (" (here by " + " / ".join(f"{r['scale']:.4f}" for r in fail) + ")" if fail else "")
        + "; `paper` mode reproduces the published calibration as printed. Every design, "
        "metric record and summary states its mode. The accountant "
        "(`jaxfl.accounting.lightdp.accountant(design)`, set on the algorithm) reports both as "
        "`PrivacyReport`s from the same stds: `privacy` (strict: GDP of the worst "
        "colluder/straggler view, `sound=True`, with its DpEvent) and `privacy_paper` (Prop. 1 "
        "read backwards: the nominal ε, `sound=False`).",
        "**Worst case.** Under exact accounting the worst view is always n2 = 0 (no honest "
        "stragglers) with C = C̄; under the paper's V it can move to C < C̄ for larger γ, so "
        "the design takes the max over all admissible (C, n2) (identical at the optima of the "
        f"design table below, γ₀ ≈ {min(gam):.2f}-{max(gam):.2f}).",
        "**SMPC+DP has less aggregate noise than LightDP-FL.** With the paper's own formulas "
        f"the SMPC+DP aggregate variance is {min(ratio.values()):.0f}-"
        f"{max(ratio.values()):.0f}x smaller in the design table's cells "
        f"({ratio[(10, 10)]:.0f}x at (10, 10)), so Fig. 3's claim that LightDP-FL beats "
        "SMPC+DP per round is not expected to reproduce; LightDP-FL's advantage is cost and "
        "straggler robustness (Fig. 4)."])


def setting_markdown(base, results: dict, meta: dict) -> str:
    """The reproduction setting: the config's values, the model size, the seeds and the Fig. 4
    link-failure numbers from the data files."""
    kw = dict(base.model_kwargs)
    side = 28 // base.image_pool
    k = table_seeds(results, "table2")
    accs = [r["history"][-1]["test_accuracy"] for v in results.values() for r in v]
    acc = float(np.mean(accs))
    se = 100 * math.sqrt(acc * (1 - acc) / base.test_examples)
    same = base.mode == "strict" and all(r["scale"] == 1.0 for r in design_rows(base))
    costs = meta.get("costs") or {}
    usable = costs.get("client_usable_prob")
    n, p = base.num_clients, base.failure_prob
    bits = (costs.get("paillier") or {}).get("key_bits", 2048)
    features, hidden = kw.get("features", ()), kw.get("hidden", ())
    bullets = _runs.wrap([
        f"N = {n} clients, so C̄ and S̄ keep the paper's meaning and every table cell is the "
        "paper's;",
        f"{base.examples_per_client} examples per client dealt as {base.shards_per_client} "
        "label-sorted shards (2 shards, our first choice, trained too slowly to separate the "
        f"schemes in {base.rounds} rounds; that run is not committed), images average-pooled "
        f"to {side}x{side}, a {len(features)}-conv CNN (channels "
        f"{'/'.join(map(str, features))}, dense {'/'.join(map(str, hidden))}; "
        f"d = {meta['model_params']:,});",
        f"E = {base.local_epochs} local epochs of batch {base.batch_size}, lr "
        f"{base.client_lr:g}, T = {base.rounds} rounds, W = {base.clip_norm:g} (about the "
        "median update norm: with W = 1 nothing is clipped and the noise doubles for "
        f"nothing), Δ = 2W/{base.examples_per_client}, δ = {_d(base.delta)}, `{base.mode}` "
        "mode" + (" (identical to `paper` mode here: every cell's strict scale is 1, the "
                  f"paper's calibration holds at δ = {_d(base.delta)});" if same else ";"),
        f"{_seeds_words(k)} per cell and {base.test_examples} test images per seed (binomial "
        f"sampling error of an accuracy near the runs' mean of {100 * acc:.0f}%: "
        f"±{se:.1f} pp), {fig3_seeds(results)} seeds for the Fig. 3 runs."])
    return bullets + "\n\n" + _runs.wrap([
        "All schemes share W, Δ and δ; only the noise differs. The straggler count is drawn "
        "per round from the design's pmf (uniform on {0..S̄}); Fig. 4 uses independent upload "
        f"failures with p = {p:g} (S ~ Bin({n}, {p:g})). Under the paper's reading that "
        "SecAgg / SwiftAgg+ need every P2P link of a client"
        + (f" (P(client usable) = {1 - p:g}^{n} = {usable:.3f})" if usable is not None
           else "") + (" every round fails" if costs.get("secagg_round_success_rate") == 0
                       else f" {100 * costs.get('secagg_round_success_rate', math.nan):.0f}% "
                       "of the simulated rounds succeed")
        + "; SecAgg with its Shamir dropout recovery "
        "(`jaxfl.algorithms.lightdp_cost.secagg_recovery_round_success`) only needs "
        f"{_fraction(cost.SECAGG_THRESHOLD)} of the clients to reach the server."],
        bullet=None) + "\n\n" + _runs.wrap([
        "Fig. 4's time axis is a model, not a measurement of a deployment: per-round time = "
        "local training (measured on this CPU, divided by N because clients train in "
        "parallel) + privacy operations (Gaussian draws timed with our own pairwise-noise "
        f"code; Paillier encryption, addition and decryption timed with `phe` at {bits} bits, "
        f"no packing, {2 * bits}-bit ciphertexts) + transfers at {_mbit()} Mbit/s each way "
        "(+ HE's extra decryption round). The ResNet-18 row assumes "
        f"{RESNET18_T_TRAIN:g} s of local training per client per round."], bullet=None)


PROSE_BLOCKS = {"lightdp_summary": summary_markdown, "lightdp_privacy": privacy_markdown,
                "lightdp_setting": setting_markdown}
