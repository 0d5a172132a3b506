"""The building blocks of LightDP-FL's noise design (Hong, Lin, Duan, arXiv 2412.06120): the
per-round calibration, the straggler model, Lemmas 1-2 (uniform variances, and the general-
variance oracle by brute force) and the Sec. V-C optimisation of the variance split.
:mod:`jaxfl.accounting.lightdp` builds the design and the accountant from them and re-exports
them.
"""

# pylint: disable=invalid-name
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize, stats

from jaxfl import validate

MODES = ("strict", "paper")
COMPOSITIONS = ("sqrt_T_std", "none", "sqrt_T_var")
CONSTANTS = ("paper", "classic")
SCHEMES = ("lightdp", "ldp", "smpc_dp")
SENSITIVITY_MODES = ("nbafl", "replace")


# ----------------------------------------------------------------------------- calibration


def calibration_constant(delta: float, constant: str = "paper") -> float:
    """``sqrt(2 ln(2/delta))`` (paper, Prop. 1) or ``sqrt(2 ln(1.25/delta))`` (classic)."""
    delta = validate.delta(delta)
    validate.one_of("constant", constant, CONSTANTS)
    return math.sqrt(2.0 * math.log((2.0 if constant == "paper" else 1.25) / delta))


def round_factor(rounds: int, composition: str) -> float:
    """Std multiplier of the per-round noise for ``rounds`` rounds (footnote 3)."""
    rounds = validate.positive_int("rounds", rounds)
    validate.one_of("composition", composition, COMPOSITIONS)
    return {"sqrt_T_std": math.sqrt(rounds), "sqrt_T_var": rounds**0.25, "none": 1.0}[composition]


def base_std(*, epsilon: float, delta: float, sensitivity: float, rounds: int = 1,
             composition: str = "sqrt_T_std", constant: str = "paper") -> float:
    """``sigma_0 = c(delta) Delta kappa_T / eps``: the local-DP (vanilla) per-round std."""
    epsilon = validate.positive("epsilon", epsilon)
    sensitivity = validate.positive("sensitivity", sensitivity)
    return (calibration_constant(delta, constant) * sensitivity * round_factor(rounds, composition)
            / epsilon)


def sensitivity(*, clip_norm: float, examples_per_client: int, mode: str = "nbafl") -> float:
    """``Delta`` of a client's clipped update to one replaced record (the paper leaves
    Delta and the clipping unspecified; we follow NbAFL, Wei et al. 2020).

    ``nbafl``: ``2 W / |D_i|`` (the NbAFL convention the paper follows); ``replace``: ``2 W``
    (rigorous for any local training, huge).
    """
    W = validate.positive("clip_norm", clip_norm)
    n = validate.positive_int("examples_per_client", examples_per_client)
    validate.one_of("sensitivity_mode", mode, SENSITIVITY_MODES)
    return 2.0 * W / n if mode == "nbafl" else 2.0 * W


# ----------------------------------------------------------------------- straggler model


def uniform_pmf(max_stragglers: int) -> np.ndarray:
    """Uniform pmf on ``{0..S_bar}`` (the paper's Example 1)."""
    s = validate.positive_int("max_stragglers", max_stragglers, minimum=0)
    return np.full(s + 1, 1.0 / (s + 1))


def binomial_pmf(num_clients: int, failure_prob: float, max_stragglers: int) -> np.ndarray:
    """Binomial(N, p) straggler count truncated to ``{0..S_bar}`` and renormalised (Fig. 4)."""
    n = validate.positive_int("num_clients", num_clients)
    p = validate.probability("failure_prob", failure_prob, allow_zero=True)
    s = validate.positive_int("max_stragglers", max_stragglers, minimum=0)
    pmf = stats.binom.pmf(np.arange(s + 1), n, p)
    return pmf / pmf.sum()


def _check_pmf(pmf, num_clients: int) -> np.ndarray:
    pmf = np.asarray(pmf, dtype=np.float64)
    if pmf.ndim != 1 or pmf.size == 0 or np.any(pmf < 0) or not np.isclose(pmf.sum(), 1.0):
        raise validate.JaxflValueError(
            f"Expected a straggler pmf over {{0..S_bar}} summing to 1, got {pmf!r}.")
    if pmf.size > num_clients:
        raise validate.JaxflValueError(
            f"Expected S_bar < num_clients, got S_bar={pmf.size - 1}, num_clients={num_clients}.")
    return pmf / pmf.sum()


def expected_inverse(pmf, num_clients: int) -> float:
    """``E_g[1 / (N - S)]``."""
    pmf = _check_pmf(pmf, num_clients)
    return float(np.sum(pmf / (num_clients - np.arange(pmf.size))))


def mu_of(pmf, num_clients: int) -> float:
    """``mu = E_g[S/(N-S)] / E_g[1/(N-S)]`` (Sec. V-C)."""
    pmf = _check_pmf(pmf, num_clients)
    s = np.arange(pmf.size)
    return float(np.sum(pmf * s / (num_clients - s)) / np.sum(pmf / (num_clients - s)))


def aggregate_variance(num_stragglers, *, num_clients: int, sigma_u: float, sigma_k: float):
    """Per-coordinate variance of the aggregate noise n_D with S stragglers (Eq. 9)."""
    s = np.asarray(num_stragglers, dtype=np.float64)
    return (s * sigma_k**2 + sigma_u**2) / (num_clients - s)


def expected_aggregate_variance(pmf, *, num_clients: int, sigma_u: float, sigma_k: float) -> float:
    """``E_g[(S sigma_K^2 + sigma_U^2) / (N - S)]``: the objective of problem (16)."""
    pmf = _check_pmf(pmf, num_clients)
    v = aggregate_variance(np.arange(pmf.size), num_clients=num_clients, sigma_u=sigma_u,
                           sigma_k=sigma_k)
    return float(np.sum(pmf * v))


# ------------------------------------------------------------- Lemma 1/2 (uniform variances)


def v_paper(C, n2, k, u, N):
    """Paper's Lemma-2 variance ``sum_j (C^-1_ij)^2 C_jj`` (uniform variances; vectorised).

    ``C`` colluders, ``n2`` honest stragglers, ``k = sigma_K^2``, ``u = sigma_U^2``.
    """
    C, n2, k, u = (np.asarray(x, dtype=np.float64) for x in (C, n2, k, u))
    M = N - C
    n1 = M - n2
    a = M * k + u
    b = n2 * k + u
    return ((M - 1) * k + u) * ((b + k) ** 2 + (n1 - 1) * k**2) / (a**2 * b**2)


def v_exact(C, n2, k, u, N):
    """Exact privacy-loss variance ``(C_m^-1)_ii`` per unit ``||v||^2`` (uniform variances)."""
    C, n2, k, u = (np.asarray(x, dtype=np.float64) for x in (C, n2, k, u))
    M = N - C
    a = M * k + u
    b = n2 * k + u
    return (b + k) / (a * b)


def h(gamma, m):
    """``h(gamma) = ((m-1) gamma + 1)(m gamma^2 + 2 gamma + 1) / (m gamma + 1)^2``: Prop. 1 with
    uniform variances in closed form (our derivation; it reproduces Prop. 3's constraint)."""
    g = np.asarray(gamma, dtype=np.float64)
    return ((m - 1) * g + 1) * (m * g**2 + 2 * g + 1) / (m * g + 1) ** 2


def _admissible_grid(N: int, C_bar: int, S_bar: int):
    """All (C, n2) with C <= C_bar, n2 <= S_bar and at least one honest uploader."""
    pairs = [(c, n2) for c in range(min(C_bar, N - 1) + 1)
             for n2 in range(min(S_bar, N - c - 1) + 1)]
    arr = np.asarray(pairs, dtype=np.float64)
    return arr[:, 0], arr[:, 1]


def worst_case(*, num_clients: int, max_colluders: int, max_stragglers: int, sigma_u: float,
               sigma_k: float) -> dict:
    """Max of V_paper and V_exact over every admissible (C, n2) (uniform variances).

    Returns ``{"v_paper", "v_exact", "argmax_paper": (C, n2), "argmax_exact": (C, n2)}``.
    """
    C, n2 = _admissible_grid(num_clients, max_colluders, max_stragglers)
    k, u = sigma_k**2, sigma_u**2
    vp = v_paper(C, n2, k, u, num_clients)
    ve = v_exact(C, n2, k, u, num_clients)
    ip, ie = int(np.argmax(vp)), int(np.argmax(ve))
    return {"v_paper": float(vp[ip]), "v_exact": float(ve[ie]),
            "argmax_paper": (int(C[ip]), int(n2[ip])), "argmax_exact": (int(C[ie]), int(n2[ie]))}


def h_max(gamma: float, *, num_clients: int, max_colluders: int, max_stragglers: int) -> float:
    """``max_{C, n2} u V_paper(C, n2)`` at ``gamma`` (>= h(gamma, N - C_bar))."""
    return worst_case(num_clients=num_clients, max_colluders=max_colluders,
                      max_stragglers=max_stragglers, sigma_u=1.0,
                      sigma_k=math.sqrt(gamma))["v_paper"]


# ----------------------------------------------------- Lemma 1/2 (general variances, oracle)


def view_covariance(sigma_pair, sigma_ind, colluders: Sequence[int], stragglers: Sequence[int]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Lemma 1 covariance ``C_m`` of the colluders' view of the honest uploaders.

    Args:
      sigma_pair: ``[N, N]`` symmetric pairwise stds ``sigma_ij`` (diagonal ignored).
      sigma_ind: ``[N]`` individual stds ``sigma_i``.
      colluders, stragglers: index sets (may overlap).

    Returns:
      ``(I1, C_m)``: the honest uploaders (sorted) and their ``[n1, n1]`` covariance.
    """
    sp = np.asarray(sigma_pair, dtype=np.float64) ** 2
    si = np.asarray(sigma_ind, dtype=np.float64) ** 2
    N = si.shape[0]
    validate.shape("sigma_pair", sp, (N, N))
    if not np.allclose(sp, sp.T):
        raise validate.JaxflValueError("Expected a symmetric sigma_pair.")
    col = np.zeros(N, bool)
    col[list(colluders)] = True
    strag = np.zeros(N, bool)
    strag[list(stragglers)] = True
    I1 = np.flatnonzero(~col & ~strag)
    sp = sp * (1.0 - np.eye(N))
    diag = (sp * (~col)[None, :]).sum(axis=1) + si
    Cm = -sp[np.ix_(I1, I1)]
    Cm[np.diag_indices_from(Cm)] = diag[I1]
    return I1, Cm


def variances_from_covariance(Cm) -> tuple[np.ndarray, np.ndarray]:
    """``(V_paper [n1], V_exact [n1])`` of every honest uploader from ``C_m``."""
    inv = np.linalg.inv(np.asarray(Cm, dtype=np.float64))
    vp = (inv**2 * np.diag(Cm)[None, :]).sum(axis=1)
    return vp, np.diag(inv).copy()


def brute_force_worst(sigma_pair, sigma_ind, *, max_colluders: int, max_stragglers: int) -> dict:
    """Max V_paper / V_exact over every colluder and straggler subset (small N only)."""
    N = np.asarray(sigma_ind).shape[0]
    if N > 12:
        raise validate.JaxflValueError(f"brute force is exponential; got N={N} > 12.")
    best = {"v_paper": 0.0, "v_exact": 0.0}
    for c in range(max_colluders + 1):
        for col in itertools.combinations(range(N), c):
            for s in range(max_stragglers + 1):
                for strag in itertools.combinations(range(N), s):
                    I1, Cm = view_covariance(sigma_pair, sigma_ind, col, strag)
                    if I1.size == 0:
                        continue
                    vp, ve = variances_from_covariance(Cm)
                    best["v_paper"] = max(best["v_paper"], float(vp.max()))
                    best["v_exact"] = max(best["v_exact"], float(ve.max()))
    return best


# ------------------------------------------------------------------ Sec. V-C optimisation


def quartic_coeffs(m: float, mu: float) -> np.ndarray:
    """``[kappa_4, ..., kappa_0]`` of G, the numerator of d/dgamma (1 + mu gamma) h(gamma)."""
    return np.array([
        2 * mu * m**3 - 2 * mu * m**2,
        m**3 - m**2 + 7 * mu * m**2 - 6 * mu * m,
        3 * m**2 - 3 * m + 9 * mu * m - 6 * mu,
        -(m**2) + 5 * m - 4 + mu * m + 2 * mu,
        -m + 1 + mu,
    ], dtype=np.float64)


def objective(gamma, m, mu):
    """``Phi(gamma) = (1 + mu gamma) h(gamma)``: E[v] in units of sigma_0^2 E[1/(N-S)]."""
    return (1 + mu * np.asarray(gamma, dtype=np.float64)) * h(gamma, m)


def solve_gamma(m: int, mu: float) -> float:
    """Optimal ``gamma_0`` of Example 1: argmin of Phi over {0} and the positive real roots of G.

    Falls back to 0 (plain local DP) when no positive root improves on it (``mu >= m - 1``).
    """
    if m <= 1:
        return 0.0
    roots = np.roots(quartic_coeffs(m, mu))
    cands = [0.0] + [float(r.real) for r in roots if abs(r.imag) < 1e-10 and r.real > 0]
    vals = [float(objective(g, m, mu)) for g in cands]
    return cands[int(np.argmin(vals))]


def _minimise_numeric(fun, hi: float) -> float:
    grid = np.concatenate([[0.0], np.geomspace(1e-6, hi, 2000)])
    vals = np.array([fun(g) for g in grid])
    i = int(np.argmin(vals))
    if i == 0:
        return 0.0
    lo, up = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = optimize.minimize_scalar(fun, bounds=(lo, up), method="bounded",
                                   options={"xatol": 1e-12})
    return float(res.x) if res.fun <= vals[i] else float(grid[i])
