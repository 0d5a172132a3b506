"""Theorem 2 of DP-OGL (information degradation) with the LSI recursion of Lemmas 1, 12, 13
(Kiani, Boenisch, Draper, IEEE JSAIT 2024, Sec. IV-B, App. E-G).

Scope. The theorem needs (i) a *string* structure (Def. 7: every worker in at most two groups,
groups on a line), (ii) convex, beta-smooth losses and (iii) full participation pi_m = 1. Outside
that scope this module refuses with a clear error; use Theorem 1
(:mod:`jaxfl.accounting.dp_ogl`), which covers every structure, sampling rate and model.

Degradation. Information of target n leaving its group passes through intermediate groups
before reaching the HbC worker's group; every epoch it spends in a group m that does not contain
n contracts its Renyi divergence by ``mu^e_m = alpha / (alpha + h~^e_m v_m)`` (Lemma 1), where
``h~`` is the log-Sobolev (LSI) constant of the pre-noise model and ``v_m = c_m^2 sigma_m^2 /
|N_m|^2`` the noise variance in model scale. The LSI constants follow our reading of App. E's
recursion (the scale factors are uncertain) [RECON-MED]: with ``K_lip = 1 + (1 + eta beta)^L``,

  1/a^t_{n,m} = sum_{m' in M_n} 1/(|M_n|^2 b^t_{m'})  (inter-group epoch),  1/b^t_m  (otherwise)
  1/h^t_{n,m} = K_lip^2 / a^t_{n,m}
  1/e^t_m     = c_m^2 sigma_m^2 + sum_{n in N_m} 1/h^t_{n,m}
  1/h~^t_m    = 1/b^t_m + sum_{j in N_m} 1/(|N_m|^2 h^t_{j,m})
  1/b^{t+1}_m = 1/b^t_m + 1/(|N_m|^2 e^t_m),      1/b^1_m = 0.

DP-OGL+ (Lemma 13) uses the same pattern once per window [RECON-LOW]: noise variance
``S c^2 sigma^2``, window Lipschitz constant ``1 + (1 + eta beta)^(S L)`` and
``mu^ = alpha / (alpha + S h~ c^2 sigma^2 / |N|^2)``.

Bound (Thm. 2 in a path-walking form: the paper's product indices are unclear). DP-OGL: mechanisms
of n's group m' come in blocks of S epochs; block k is visible to i iff ``(k + rho) S + 2 <= t`` and
carries the factor ``prod_{r<rho} prod_{e in block r} mu^e_{g_r} * mu^{(k+rho) S + 1}_{g_rho}``
along the unique string path ``m' = g_0, ..., g_rho`` (factors of groups containing n are 1).
DP-OGL+: window k (output theta^{kS+1}) is visible iff ``(k + rho - 1) S + 2 <= t`` with one ``mu^``
per intermediate group (``rho - 1`` factors; ``rho`` with ``last_hop_degrades=True``, the literal
Eq. 22). With mu = 1 both reduce to Theorem 1.

Example Usage:
  >>> import numpy as np
  >>> from jaxfl.topology import groups
  >>> mu = lsi_contraction(groups.string(3, 2), epochs=4, period=2, orders=[2.0],
  ...                      clip_norms=1.0, noise_multipliers=1.0, lipschitz=2.0)
  >>> np.round(mu[2:5, 1, 0], 3).tolist()  # Example 2 (Sec. IV-C), toy values
  [0.857, 0.952, 0.985]
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from jaxfl import validate
from jaxfl.accounting import dp_ogl, recipes
from jaxfl.topology import groups

# pylint: disable=invalid-name


def _check_scope(s: groups.GroupStructure, *, convex: bool, sampling_rates) -> None:
    if not isinstance(convex, bool) or not convex:
        raise validate.JaxflValueError(
            "Theorem 2 (information degradation) holds only for convex, beta-smooth losses; "
            f"got convex={convex!r}. For non-convex models (e.g. the CNN) use Theorem 1 "
            "(jaxfl.accounting.dp_ogl.pairwise_rdp).")
    if not groups.is_string(s):
        raise validate.TopologyError(
            f"Theorem 2 covers string structures only (Def. 7: every worker in <= 2 groups, "
            f"groups on a line); {s.name} is not one. Use Theorem 1 "
            "(jaxfl.accounting.dp_ogl.pairwise_rdp) for other structures.")
    q = np.asarray(sampling_rates, dtype=np.float64)
    if np.any(q != 1.0):
        raise validate.PrivacyParameterError(
            f"Theorem 2 assumes full participation (pi_m = 1), got sampling_rates={q.tolist()}.")


def lipschitz_constant(*, learning_rate: float, smoothness: float, local_steps: int) -> float:
    """``K_lip = 1 + (1 + eta beta)^L``: Lipschitz constant of ``Delta phi`` in the start point."""
    eta = validate.positive("learning_rate", learning_rate, validate.JaxflValueError)
    beta = validate.non_negative("smoothness", smoothness, validate.JaxflValueError)
    L = validate.positive_int("local_steps", local_steps, minimum=0)
    return 1.0 + (1.0 + eta * beta) ** L


def lsi_contraction(structure, *, epochs: int, period: int, orders: Sequence[float],
                    clip_norms, noise_multipliers, lipschitz: float,
                    algorithm: str = "dp_ogl") -> np.ndarray:
    """Contraction factors mu from the LSI recursion (see module docstring).

    Args:
      structure: group structure (any; the recursion itself is structure-agnostic).
      epochs: number of epochs T to compute.
      period: S.
      orders: RDP orders alpha.
      clip_norms, noise_multipliers: c_m and sigma_m (scalar or ``[M]``).
      lipschitz: ``K_lip`` (per epoch; :func:`lipschitz_constant`). DP-OGL+ uses
        ``1 + (K_lip - 1)^S`` per window.
      algorithm: ``"dp_ogl"`` (per epoch) or ``"dp_ogl_plus"`` (per window).

    Returns:
      DP-OGL: ``[T + 1, M, A]`` with row e the factor of epoch e (row 0 unused, NaN).
      DP-OGL+: ``[ceil(T / S), M, A]`` with row w the factor of 0-based window w.
    """
    s = groups.as_structure(structure)
    T = validate.positive_int("epochs", epochs)
    S = validate.positive_int("period", period)
    validate.one_of("algorithm", algorithm, dp_ogl.ALGORITHMS)
    K = validate.positive("lipschitz", lipschitz, validate.JaxflValueError)
    alpha = np.asarray(orders, dtype=np.float64).ravel()
    c = dp_ogl._per_group("clip_norms", clip_norms, s.num_groups)  # pylint: disable=protected-access
    sig = dp_ogl._per_group("noise_multipliers", noise_multipliers, s.num_groups)  # pylint: disable=protected-access
    B = s.membership.astype(np.float64)
    size = s.group_sizes.astype(np.float64)
    deg = s.worker_degrees.astype(np.float64)
    plus = algorithm == "dp_ogl_plus"
    steps = -(-T // S) if plus else T
    noise_var = c**2 * sig**2 * (S if plus else 1)
    K_step = 1.0 + (K - 1.0) ** S if plus else K
    inv_b = np.zeros(s.num_groups)
    inv_ht = np.zeros((steps, s.num_groups))
    for k in range(steps):  # host recursion over epochs (or windows), vectorised over groups
        inter = plus or k % S == 0
        if inter:
            inv_a_n = (B @ inv_b) / deg**2  # [N]: merged start point of each worker
            inv_a = B * inv_a_n[:, None]  # [N, M] (pairs only)
        else:
            inv_a = B * inv_b[None, :]
        inv_h = K_step**2 * inv_a
        inv_e = noise_var + inv_h.sum(0)
        inv_ht[k] = inv_b + inv_h.sum(0) / size**2
        inv_b = inv_b + inv_e / size**2
    v = noise_var / size**2  # model-scale noise variance of one mechanism
    num = alpha[None, None, :] * inv_ht[:, :, None]
    mu = num / (num + v[None, :, None])
    if plus:
        return mu
    return np.concatenate([np.full((1, *mu.shape[1:]), np.nan), mu])


def _paths(s: groups.GroupStructure) -> dict:
    g = groups.group_graph(s)
    return dict(nx.all_pairs_shortest_path(g))


def _as_mu(mu, shape: tuple) -> np.ndarray:
    if np.ndim(mu) == 0:
        v = float(mu)
        if not 0 < v <= 1:
            raise validate.JaxflValueError(f"Expected 0 < mu <= 1, got mu={v!r}.")
        return np.full(shape, v)
    arr = np.asarray(mu, dtype=np.float64)
    if arr.ndim == 2:
        arr = np.broadcast_to(arr[:, :, None], (*arr.shape, shape[2]))
    if arr.shape[0] < shape[0] or arr.shape[1:] != shape[1:]:
        raise validate.ShapeError(f"Expected mu of shape {shape} (or more rows), got {arr.shape}.")
    finite = arr[~np.isnan(arr)]
    if np.any(finite < 0) or np.any(finite > 1):
        raise validate.JaxflValueError("Expected contraction factors in [0, 1].")
    return arr


def theorem2_pairwise_rdp(structure, *, t: int, period: int, orders: Sequence[float],
                          noise_multipliers, convex: bool, sampling_rates=1.0,
                          algorithm: str = "dp_ogl", mu=None, clip_norms=None,
                          lipschitz: float | None = None,
                          last_hop_degrades: bool = False) -> np.ndarray:
    """Theorem 2 RDP of every (target, HbC) pair, ``[N, N, len(orders)]``; NaN where excluded.

    Args:
      structure: a string structure (refused otherwise).
      t: models ``theta^1..theta^t`` revealed.
      period: S.
      orders: RDP orders.
      noise_multipliers: sigma_m; one group mechanism is ``alpha / (2 sigma_m^2)``-RDP.
      convex: must be True (the loss is convex and beta-smooth); False is refused.
      sampling_rates: must be 1 (refused otherwise).
      algorithm: ``"dp_ogl"`` (TM1) or ``"dp_ogl_plus"`` (TM2).
      mu: contraction factors: None (computed by :func:`lsi_contraction` from ``clip_norms`` and
        ``lipschitz``), a constant in (0, 1], or an array shaped like that function's output.
      clip_norms: c_m, needed when ``mu`` is None.
      lipschitz: ``K_lip``, needed when ``mu`` is None.
      last_hop_degrades: DP-OGL+ only; also degrade in the HbC's own group (literal Eq. 22).
    """
    s = groups.as_structure(structure)
    _check_scope(s, convex=convex, sampling_rates=sampling_rates)
    t = validate.positive_int("t", t)
    S = validate.positive_int("period", period)
    tm = dp_ogl.default_threat_model(algorithm)
    plus = algorithm == "dp_ogl_plus"
    alpha = np.asarray(orders, dtype=np.float64).ravel()
    M = s.num_groups
    sig = dp_ogl._per_group("noise_multipliers", noise_multipliers, M)  # pylint: disable=protected-access
    eps = alpha[None, :] / (2 * sig[:, None] ** 2)  # [M, A]
    rows = -(-t // S) + 1 if plus else t + 1
    if mu is None:
        if clip_norms is None or lipschitz is None:
            raise validate.JaxflValueError("Pass mu, or clip_norms and lipschitz to compute it.")
        mu_arr = lsi_contraction(s, epochs=max(t, S) + S, period=S, orders=alpha,
                                 clip_norms=clip_norms, noise_multipliers=noise_multipliers,
                                 lipschitz=lipschitz, algorithm=algorithm)
    else:
        mu_arr = _as_mu(mu, (rows, M, alpha.size))
    rho = groups.group_distances(s)
    paths = _paths(s)
    # contrib[m', m, f]: RDP of target group m' seen in HbC group m; f = 1 when the target also
    # belongs to the first group after m' on the path (its factors are then 1).
    contrib = np.zeros((M, M, 2, alpha.size))
    for mp in range(M):  # host loops over group pairs (M^2, small), vectorised over orders
        for m in range(M):
            r = rho[mp, m]
            if not np.isfinite(r):
                continue
            r = int(r)
            if r == 0:
                contrib[mp, m] = 0.0 if plus else (t - 1) * eps[mp]
                continue
            path = paths[mp][m]
            for f in (0, 1):
                total = np.zeros(alpha.size)
                k = 1 if plus else 0
                while True:  # blocks / windows visible at time t
                    if plus:
                        if (k + r - 1) * S + 2 > t:
                            break
                        hops = range(1, r + 1 if last_hop_degrades else r)
                        factor = np.ones(alpha.size)
                        for h in hops:
                            if not (h == 1 and f):
                                factor = factor * mu_arr[k + h - 1, path[h]]
                        total += eps[mp] * factor
                    else:
                        if (k + r) * S + 2 > t:
                            break
                        factor = np.ones(alpha.size)
                        for h in range(1, r + 1):
                            if h == 1 and f:
                                continue
                            start = (k + h) * S + 1
                            stop = start + (S if h < r else 1)
                            factor = factor * np.prod(mu_arr[start:stop, path[h]], axis=0)
                        total += S * eps[mp] * factor
                    k += 1
                contrib[mp, m, f] = total
    # Assemble: HbC i's group closest to m', and whether target n is in the first hop group.
    rho_b = np.where(s.membership[None, :, :], rho[:, None, :], np.inf)  # [M', N, M]
    closest = np.argmin(rho_b, axis=2)  # [M', N]
    first = np.full((M, M), -1)
    for mp in range(M):
        for m in range(M):
            if m in paths[mp] and len(paths[mp][m]) > 1:
                first[mp, m] = paths[mp][m][1]
    hop = first[np.arange(M)[:, None], closest]  # [M', N_i]
    in_first = np.where(hop[None] >= 0, s.membership[:, np.maximum(hop, 0)], False)  # [N, M', N]
    vals = contrib[np.arange(M)[None, :, None], closest[None], in_first.astype(int)]  # [N,M',N,A]
    rdp = np.einsum("nm,nmia->nia", s.membership.astype(np.float64), vals)
    return np.where(dp_ogl.attack_mask(s, tm)[:, :, None], rdp, np.nan)


def theorem2_pairwise_epsilon(structure, *, t: int, period: int, delta: float,
                              noise_multipliers, convex: bool, recipe: str = "default",
                              **kwargs) -> np.ndarray:
    """:func:`theorem2_pairwise_rdp` converted to (epsilon, delta) with a recipe's orders."""
    delta = validate.delta(delta)
    validate.one_of("recipe", recipe, tuple(dp_ogl.RECIPES))
    orders, conversion = dp_ogl.RECIPES[recipe]
    rdp = theorem2_pairwise_rdp(structure, t=t, period=period, orders=orders,
                                noise_multipliers=noise_multipliers, convex=convex, **kwargs)
    excluded = np.isnan(rdp[..., 0])
    clean = np.where(np.isnan(rdp), 0.0, rdp)
    eps, _ = recipes.epsilon_from_rdp(orders, clean, delta, conversion)
    eps = np.where(np.all(clean == 0, axis=-1), 0.0, eps)
    return np.where(excluded, np.nan, eps)


__all__ = ["lipschitz_constant", "lsi_contraction", "theorem2_pairwise_rdp",
           "theorem2_pairwise_epsilon"]
