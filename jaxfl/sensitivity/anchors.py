"""The anchor tables of Koskela & Kulkarni 2025 (arXiv 2505.19969 v1; settings named 5.1, 5.3
and 5.5 as in the reproduction's data): paper-mode sensitivities Δ²/T and mean pairwise
epsilons on Erdős-Rényi graphs, computed from this package's public entry points (the
reproduction's ``gossip_exact.json``, ``anchors`` section;
``tests/sensitivity/anchors_test.py`` holds the externally computed values to 4 digits).

  5.1   ER(100, 0.2, seed 1), maximum-degree W, target 37: Δ²/T of a neighbour (i = 1) and a
        non-neighbour (i = 0) at ``horizons_5_1``; the rigorous modes at T = 6, 12.
  5.3   ER(50, 0.2, seed 2), maximum-degree W: mean over pairs of Δ²/T and of the pairwise
        epsilon (sigma 5, delta 1e-5) under tm3 and tm4, and the local-DP epsilon of T rounds.
  5.5   ER(50, 0.2, seed 2), both mixing rules, target 0: Δ²/T (tm1 far, tm1 neighbour, tm3
        far, tm4 far) at T = 50, 200, 1000 and tm1's Perron limit.

:data:`SPEC` holds the spec author's values of the three tables; :func:`spec_comparison` puts
ours beside them at the spec's printed precision and :func:`anchor_counts` counts the cells
that agree there (the reproduction's "74/74 anchor cells"). :func:`oracle_numbers`: the
exact sensitivities the pages and tests print (Sec. 5.1's TM-1 at T = 6, Thm. 4's path).
"""

from __future__ import annotations

import numpy as np

from jaxfl.accounting import gossip as _gacc
from jaxfl.sensitivity import asymptotic as _asymptotic
from jaxfl.sensitivity.gossip import gossip_sensitivity, sensitivity_curve
from jaxfl.sensitivity.pairs import all_pairs_curves
from jaxfl.sensitivity.views import make_view
from jaxfl.topology import graphs, mixing

SIGMA, DELTA = 5.0, 1e-5  # the noise and delta of Sec. 5.3's epsilons
# The spec author's values, keyed as :func:`anchor_tables` keys ours: 5.1's two rows at the
# horizons ``T``; 5.3's [mean Δ²/T tm3, tm4, mean epsilon tm3, tm4, local-DP epsilon] per
# horizon; 5.5's [tm1 non-nbr, tm1 nbr, tm3, tm4, limit] per "<rule>,<T>".
SPEC = {"5.1": {"T": (1, 2, 5, 10, 20, 40, 80),
                "neighbour (i=1)": (0.04077, 0.03465, 0.02605, 0.01922, 0.01475, 0.01243, 0.01126),
                "non-nbr (i=0)": (0, 0.00273, 0.00697, 0.00879, 0.00948, 0.00979, 0.00995)},
        "5.3": {"1": (0.4148, 1.0000, 0.4384, 0.7255, 0.7255),
                "2": (0.3603, 0.9653, 0.5807, 1.0404, 1.0608),
                "5": (0.3143, 0.8787, 0.8618, 1.6379, 1.7601),
                "10": (0.2972, 0.7294, 1.2013, 2.1715, 2.5944),
                "20": (0.2885, 0.4952, 1.7165, 2.5737, 3.8486),
                "40": (0.2842, 0.2817, 2.4993, 2.7635, 5.7595)},
        "5.5": {"maxdeg,50": (0.01647, 0.02585, 0.29090, 0.22653, 0.02041),
                "maxdeg,200": (0.01942, 0.02177, 0.29024, 0.07214, 0.02041),
                "maxdeg,1000": (0.02021, 0.02068, 0.29007, 0.03075, 0.02041),
                "closed,50": (0.01417, 0.02180, 0.24348, 0.19930, 0.01673),
                "closed,200": (0.01609, 0.01829, 0.24096, 0.06244, 0.01673),
                "closed,1000": (0.01661, 0.01735, 0.24029, 0.02587, 0.01673)}}
HORIZONS_5_3 = tuple(int(T) for T in SPEC["5.3"])


def er_mixing(n: int, p: float, seed: int, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """``(A, W)``: an Erdős-Rényi adjacency and its ``"maxdeg"`` (maximum-degree) or
    ``"closed"`` (closed-neighbourhood) mixing matrix."""
    A = graphs.erdos_renyi(n, p, seed=seed)
    return A, (mixing.max_degree(A) if rule == "maxdeg" else mixing.closed_neighbourhood(A))


def anchor_tables(horizons_5_1, horizons_5_3=None, horizons_5_5=(50, 200, 1000)) -> dict:
    """The anchor tables (module docstring) as plain floats: ``"5.1"``: row name -> Δ²/T per
    horizon; ``"5.1_rigorous"``: paper / sign_exact / abs_sum sensitivities, T λ_max and
    ``certified`` at T = 6, 12; ``"5.5"``: ``"<rule>,<T>"`` -> [four Δ²/T, the limit];
    ``"5.3"`` (only with ``horizons_5_3``): ``str(T)`` -> [mean Δ²/T tm3, tm4, mean epsilon
    tm3, tm4, local-DP epsilon]."""
    _, W = er_mixing(100, 0.2, 1, "maxdeg")
    t_max = max(horizons_5_1)
    out = {"5.1": {k: [float(c[T - 1] / T) for T in horizons_5_1] for k, c in (
        (k, sensitivity_curve(W, 37, i, t_max, certified=False).paper)
        for k, i in (("neighbour (i=1)", 1), ("non-nbr (i=0)", 0)))}, "5.5": {}}
    r = [gossip_sensitivity(W, 37, 1, T, mode="sign_exact") for T in (6, 12)]
    out["5.1_rigorous"] = {"T": [6, 12], **{k: [getattr(x, k) for x in r] for k in (
        "paper", "sign_exact", "abs_sum")}, "T_lambda_max": [T * x.lambda_max for T, x in zip(
            (6, 12), r)], "certified": [x.certified for x in r]}
    for rule in ("maxdeg", "closed"):
        A, W = er_mixing(50, 0.2, 2, rule)
        nbr, far = int(np.flatnonzero(A[0])[0]), next(k for k in range(1, 50) if A[0, k] == 0)
        cols = [sensitivity_curve(W, 0, i, max(horizons_5_5), view=v, certified=False).paper
                for i, v in ((far, "tm1"), (nbr, "tm1"), (far, "tm3"), (far, "tm4"))]
        lim = _asymptotic.paper_rate_limit(W, make_view(W, "tm1", target=0, observer=far))
        for T in horizons_5_5:
            out["5.5"][f"{rule},{T}"] = [float(c[T - 1] / T) for c in cols] + [lim]
    if horizons_5_3:
        _, W = er_mixing(50, 0.2, 2, "maxdeg")
        c3, c4 = (all_pairs_curves(W, tuple(horizons_5_3), view=v, certified=False).paper
                  for v in ("tm3", "tm4"))

        def e(d):
            return float(_gacc.pair_epsilons(d, noise_multiplier=SIGMA, delta=DELTA).mean())

        out["5.3"] = {}
        for k, T in enumerate(horizons_5_3):
            d3, d4 = c3[k][~np.isnan(c3[k])], c4[k][~np.isnan(c4[k])]
            out["5.3"][str(T)] = [float(d3.mean() / T), float(d4.mean() / T), e(d3), e(d4),
                                  _gacc.pair_epsilon(T, noise_multiplier=SIGMA, delta=DELTA)]
    return out


def oracle_numbers() -> dict:
    """Exact sensitivities the gossip pages and tests print, as ``{group: {key: (value,
    format)}}``: ``"tm1"``: Sec. 5.1's ER(100, 0.2) (seed 1), maximum-degree W, target 37 and
    its smallest neighbour as the observer, TM-1 at T = 6: the all-ones (paper) and sign-worst
    Δ²; ``"thm4"``: the paper-mode Δ² of Thm. 4's exact plain-message view and its reduction on
    the 4-node path 0-1-2-3 (target 1, observer 2) at T = 3, 6; ``"thm4_certified"``: both in
    certified mode at T = 3."""
    A, W = er_mixing(100, 0.2, 1, "maxdeg")
    r = gossip_sensitivity(W, 37, int(np.flatnonzero(A[37])[0]), 6, mode="sign_exact")
    W4 = mixing.max_degree(graphs.path(4))

    def d2(T, view, mode):
        return gossip_sensitivity(W4, 1, 2, T, view=view, mode=mode).delta_sq

    views = dict(exact="tm4_exact", reduction="tm4")
    return {"tm1": {"tm1_T6_all_ones": (r.paper, ".4f"),
                    "tm1_T6_sign_worst": (r.sign_exact, ".4f")},
            "thm4": {f"{k}_T{T}": (d2(T, v, "paper"), ".5f") for k, v in views.items()
                     for T in (3, 6)},
            "thm4_certified": {f"{k}_T3": (d2(3, views[k], "certified"), ".3f")
                               for k in ("reduction", "exact")}}


def spec_comparison(tables: dict) -> dict:
    """``{table: {key: [(spec, ours), ...]}}``: :data:`SPEC` beside ``tables`` (the output of
    :func:`anchor_tables`; 5.3 only where it was computed), both printed to the spec's
    precision: 5.1 to 5 decimals, 5.3 and 5.5 to the spec value's own decimals (at least 4)."""
    def printed(spec: float, ours: float, table: str) -> tuple[str, str]:
        text = repr(float(spec))
        dec = 5 if table == "5.1" else max(len(text.split(".")[1]) if "." in text else 0, 4)
        return f"{spec:.{dec}f}", f"{ours:.{dec}f}"

    return {t: {key: [printed(a, b, t) for a, b in zip(ref, tables[t][key], strict=True)]
                for key, ref in SPEC[t].items() if key != "T"} for t in SPEC if t in tables}


def anchor_counts(tables: dict) -> tuple[int, int]:
    """``(equal, total)``: the cells of :func:`spec_comparison` whose spec and our values are
    equal as printed."""
    cells = [c for rows in spec_comparison(tables).values() for r in rows.values() for c in r]
    return sum(float(a) == float(b) for a, b in cells), len(cells)


__all__ = ["HORIZONS_5_3", "SPEC", "anchor_counts", "anchor_tables", "er_mixing",
           "oracle_numbers", "spec_comparison"]
