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


__all__ = ["er_mixing", "anchor_tables"]
