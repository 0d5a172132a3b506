"""Statistical audit of one DP gossip-averaging pair (Koskela & Kulkarni 2025, Lemma 6) and the
counterexample to the paper's all-ones worst case (App. B).

Mechanism: the library's :func:`jaxfl.algorithms.gossip.gossip_streams` with secure summation
(Eq. 3.1), ``theta_{t+1} = W (theta_t + x_t + u_t)``, ``u_t ~ N(0, sigma^2 I_n)``. Neighbours:
node j's data stream differs by a per-round pattern ``delta in [-1, 1]^T`` (D: ``x^j = delta``,
D': ``x^j = 0``; the other streams are fixed and known). Adversary (TM-1, Thm. 2 with the
Sec. 3.5 correction): the curious node i, who sees its own states ``theta^i_1..theta^i_T`` and
knows its own noise ``u^i``.

The distinguishing test is derived from the mechanism, not from the accountant: the view is
linear in (x, u), so jax Jacobians of ``gossip_streams`` give the noise response ``H`` and the
signal ``G delta``. Subtracting the known own-noise term leaves ``N(G delta, sigma^2 K)`` vs
``N(0, sigma^2 K)`` with ``K = sum_{k != i} H_k H_k^T``; the exact LLR
(:func:`jaxfl.audit.statistics.gaussian_llr`) is the optimal test and its ``mu`` must equal
``sqrt(delta^T M delta) / sigma`` from :mod:`jaxfl.sensitivity` (an independent cross-check).
Section 6.12's checks are reported in ``info``: the LLR under D is ``N(mu^2/2, mu^2)`` and the
test's TPR at FPR ``a`` is ``Phi(mu - Phi^{-1}(1 - a))``.

Claims: ``paper`` is the Gaussian epsilon of ``Delta^2 = 1^T M 1`` (the paper's all-ones
pattern); ``strict`` is the library default ``certified`` bound ``min(sum |M|, T lambda_max, T)``
(``sign_exact`` is reported too). With ``pattern="worst"`` node j's data follows the sign
pattern maximising ``delta^T M delta``, which the theorems' hypothesis ``|x^j_t - x'^j_t| <= 1``
admits; on pairs where ``M`` has negative entries the audit then exceeds the paper's epsilon.

Example Usage:
  >>> import jax, numpy as np
  >>> W = np.full((4, 4), 0.25)
  >>> r = audit_gossip_pair(W, target=1, observer=0, T=3, noise_multiplier=1.0,
  ...                       trials=2000, delta=1e-2, key=jax.random.key(0))
  >>> round(r.info["mu"] ** 2, 6)  # complete graph: Delta^2 = T / (n - 1) = 1
  1.0
"""

from __future__ import annotations

import math
import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from jaxfl import noise, precision, validate
from jaxfl.accounting import conversions
from jaxfl.accounting import gossip as gossip_accounting
from jaxfl.algorithms import gossip as gossip_alg
from jaxfl.audit import bounds, canary, statistics
from jaxfl.sensitivity import gossip_sensitivity, views

PATTERNS = ("paper", "worst")


def _checked(W, target, observer, noise_multiplier, T, delta):
    """The audits' common inputs, validated: ``(sigma, T, delta, W as float64, n)``."""
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    T = validate.positive_int("T", T)
    delta = validate.delta(delta)
    if target == observer:
        raise validate.JaxflValueError("Expected target != observer.")
    W = np.asarray(W, dtype=np.float64)
    return sigma, T, delta, W, W.shape[0]


def view_operators(W, *, target: int, observer: int, T: int):
    """``(H [T, T, n], G [T, T])`` of the TM-1 view, by jax Jacobians of the mechanism (f64).

    ``H[:, s, k]`` is the response of ``theta^i_1..T`` to node k's noise at round s and
    ``G[:, s]`` its response to node j's data at round s.
    """
    W = np.asarray(W, dtype=np.float64)
    n = W.shape[0]
    with jax.enable_x64(True):
        Wj = jnp.asarray(W)
        zeros = jnp.zeros((T, n), jnp.float64)

        def view_of_noise(u):
            return gossip_alg.gossip_streams(Wj, zeros, u, model="ss")[:, observer]

        def view_of_data(xj):
            x = zeros.at[:, target].set(xj)
            return gossip_alg.gossip_streams(Wj, x, zeros, model="ss")[:, observer]

        H = np.asarray(jax.jit(jax.jacfwd(view_of_noise))(zeros), np.float64)
        G = np.asarray(jax.jit(jax.jacfwd(view_of_data))(jnp.zeros((T,), jnp.float64)),
                       np.float64)
    return H, G


def audit_gossip_pair(W, *, target: int, observer: int, T: int, noise_multiplier: float,
                      trials: int, delta: float, key: jax.Array, pattern: str = "worst",
                      confidence: float = 0.95, batch_size: int = 8192,
                      alpha_check: float = 0.05) -> canary.AuditResult:
    """Audits node ``target``'s privacy towards ``observer`` (TM-1, secure summation).

    Args:
      W: mixing matrix [n, n].
      target: protected node j.
      observer: curious node i.
      T: rounds.
      noise_multiplier: sigma (noise std per node and round, in units of the data bound 1).
      trials: runs per hypothesis.
      delta: delta of the bound and of the claims.
      key: audit key.
      pattern: j's data difference, ``"paper"`` (all ones) or ``"worst"`` (sign-exact worst).
      confidence: Clopper-Pearson confidence.
      batch_size: trials vmapped together.
      alpha_check: FPR at which the section 6.12 TPR check is reported.
    """
    validate.one_of("pattern", pattern, PATTERNS)
    sigma, T, delta, W, n = _checked(W, target, observer, noise_multiplier, T, delta)
    sens = gossip_sensitivity(W, target=target, observer=observer, T=T, view="tm1",
                              mode="sign_exact")
    pat = np.ones(T) if pattern == "paper" else np.asarray(sens.worst_pattern, np.float64)
    H, G = view_operators(W, target=target, observer=observer, T=T)
    others = [k for k in range(n) if k != observer]
    K = np.einsum("tsk,rsk->tr", H[:, :, others], H[:, :, others])
    stat, mu = statistics.gaussian_llr(G @ pat, np.zeros(T), sigma**2 * K)
    own = jnp.asarray(H[:, :, observer], jnp.float32)
    x_d = jnp.zeros((T, n), jnp.float32).at[:, target].set(jnp.asarray(pat, jnp.float32))
    Wj = jnp.asarray(W, jnp.float32)

    def mechanism(k, present):
        with precision.noise_scope():
            u = sigma * noise.standard_normal(k, (T, n), jnp.float32)
        x = jnp.where(present, x_d, 0.0)
        theta = gossip_alg.gossip_streams(Wj, x, u, model="ss")
        return theta[:, observer], u[:, observer]  # own states, own noise

    def statistic(view):
        y, u_own = view
        return stat(y - own @ u_own)  # remove the known own-noise term, then the exact LLR

    claims = {
        "paper": gossip_accounting.pair_epsilon(sens.paper, noise_multiplier=sigma,
                                                delta=delta),
        "strict": gossip_accounting.pair_epsilon(sens.certified, noise_multiplier=sigma,
                                                 delta=delta),
        "sign_exact": gossip_accounting.pair_epsilon(sens.sign_exact, noise_multiplier=sigma,
                                                     delta=delta)}
    t0 = time.time()
    pos, neg = canary.sample_scores(mechanism, statistic, key=key, trials=trials,
                                    batch_size=batch_size)
    bound = bounds.epsilon_lower_bound(pos, neg, delta=delta, confidence=confidence)
    thr = np.quantile(neg, 1.0 - alpha_check)
    info = {
        "W_nodes": n, "target": target, "observer": observer, "T": T, "sigma": sigma,
        "pattern": pattern, "pattern_values": [int(v) for v in pat],
        "delta_sq_paper": sens.paper, "delta_sq_sign_exact": sens.sign_exact,
        "delta_sq_certified": sens.certified, "delta_sq_pattern": float(pat @ sens.M @ pat),
        "mu": mu, "mu_from_sensitivity": math.sqrt(float(pat @ sens.M @ pat)) / sigma,
        "llr_mean_under_d": float(pos.mean()), "llr_var_under_d": float(pos.var()),
        "llr_mean_expected": mu**2 / 2, "llr_var_expected": mu**2,
        "tpr_at_alpha": float(np.mean(pos > thr)), "alpha": alpha_check,
        "tpr_at_alpha_expected": float(stats.norm.cdf(mu - stats.norm.ppf(1 - alpha_check))),
        "statistic": "exact Gaussian LLR from the mechanism's Jacobians"}
    return canary.AuditResult(
        name=f"DP gossip pair ({pattern} pattern)", bound=bound, trials=int(trials),
        claimed=claims, neighbour="one node's data stream (each round within [-1, 1])",
        view="observer's states + own noise (TM-1, secure summation)",
        seconds=time.time() - t0, info=info)


# --------------------------------------------------------------------------------------------
# Thm. 4's reduction vs the exact plain-message view (issue 26, point 7b)
# --------------------------------------------------------------------------------------------

THM4_VIEWS = ("exact", "reduction")


def plain_view_operators(W, *, target: int, rows, T: int):
    """``(H [T*m, T, n], G [T*m, T])``: Jacobians of the plain-message states of ``rows``
    (:func:`jaxfl.algorithms.gossip.gossip_streams` with ``model="p"``, float64) with respect
    to every node's noise and to node ``target``'s data."""
    W = np.asarray(W, dtype=np.float64)
    n, rows = W.shape[0], np.asarray(rows)
    with jax.enable_x64(True):
        Wj = jnp.asarray(W)
        zeros = jnp.zeros((T, n), jnp.float64)

        def of_noise(u):
            return gossip_alg.gossip_streams(Wj, zeros, u, model="p")[:, rows].reshape(-1)

        def of_data(xj):
            return of_noise(zeros.at[:, target].set(xj))

        H = np.asarray(jax.jit(jax.jacfwd(of_noise))(zeros), np.float64)
        G = np.asarray(jax.jit(jax.jacfwd(of_data))(jnp.zeros((T,), jnp.float64)), np.float64)
    return H, G


def audit_gossip_thm4(W, *, target: int, observer: int, T: int, noise_multiplier: float,
                      trials: int, delta: float, key: jax.Array, view: str = "exact",
                      confidence: float = 0.95, batch_size: int = 8192) -> canary.AuditResult:
    """Attacks Thm. 4's reduction with the exact plain-message view (see
    :mod:`jaxfl.sensitivity.views`).

    Mechanism: :func:`jaxfl.algorithms.gossip.gossip_streams` with plain messages (Eq. 3.5,
    ``theta_{t+1} = W theta_t + x_t + u_t``), node ``target``'s data differing by the paper's
    all-ones pattern. Adversary: node ``observer``, who sees its own state and its neighbours'
    messages for T rounds and knows its own noise (``view="exact"``, the library's ``tm4_exact``).
    Thm. 4 bounds this by the view of j's message stream alone (``tm4``); on the 4-node path
    with j = 1, i = 2, node 3's noise reaches j's state through i's, which i knows exactly, so
    the exact view leaks more (Delta^2 2.42308 vs 2.39450 at T = 3, 3.99571 vs 3.75765 at T = 6).

    The test is the exact LLR of the view, from Jacobians of the mechanism (as
    :func:`audit_gossip_pair`), so it is Gaussian under both hypotheses with equal variances
    (the view is linear in Gaussian noise) and its sampled mean difference over standard
    deviation estimates the view's ``mu``. The bound is
    :func:`jaxfl.audit.bounds.gaussian_epsilon_lower_bound` (a lower confidence bound on
    ``mu``, converted at ``delta``): a threshold test with Clopper-Pearson intervals cannot
    resolve a gap of a few percent in ``mu`` at a feasible number of trials
    (``info["cp_bound"]`` has it for comparison). ``info`` also records the closed-form ``mu``
    of the LLR and its exact epsilon (the attack's epsilon with no sampling error), and the
    sampled LLR moments against ``+-mu^2/2`` and ``mu``. ``view="reduction"`` attacks the
    reduced view itself (the observed rows are j's messages only), whose bound must then stay
    below the paper's claim.

    Claims: ``paper`` is Thm. 4's epsilon (``tm4``, paper mode); ``strict`` is the library's
    certified bound of the exact view (``tm4_exact``).
    """
    validate.one_of("view", view, THM4_VIEWS)
    sigma, T, delta, W, n = _checked(W, target, observer, noise_multiplier, T, delta)
    sens = {v: gossip_sensitivity(W, target=target, observer=observer, T=T, view=v,
                                  mode=m) for v, m in (("tm4", "paper"), ("tm4_exact", "paper"))}
    certified = gossip_sensitivity(W, target=target, observer=observer, T=T, view="tm4_exact",
                                   mode="certified")
    rows = views.closed_neighbourhood(W, observer) if view == "exact" else np.array([target])
    H, G = plain_view_operators(W, target=target, rows=rows, T=T)
    others = [k for k in range(n) if k != observer]
    K = np.einsum("ask,bsk->ab", H[:, :, others], H[:, :, others])
    stat, mu = statistics.gaussian_llr(G @ np.ones(T), np.zeros(G.shape[0]), sigma**2 * K)
    own = jnp.asarray(H[:, :, observer], jnp.float32)
    x_d = jnp.zeros((T, n), jnp.float32).at[:, target].set(1.0)
    Wj, rj = jnp.asarray(W, jnp.float32), jnp.asarray(rows)

    def mechanism(k, present):
        with precision.noise_scope():
            u = sigma * noise.standard_normal(k, (T, n), jnp.float32)
        theta = gossip_alg.gossip_streams(Wj, jnp.where(present, x_d, 0.0), u, model="p")
        return theta[:, rj].reshape(-1), u[:, observer]

    def statistic(v):
        y, u_own = v
        return stat(y - own @ u_own)

    t0 = time.time()
    pos, neg = canary.sample_scores(mechanism, statistic, key=key, trials=trials,
                                    batch_size=batch_size)
    bound, est = bounds.gaussian_epsilon_lower_bound(pos, neg, delta=delta,
                                                     confidence=confidence)
    cp = bounds.epsilon_lower_bound(pos, neg, delta=delta, confidence=confidence)
    eps = lambda d2: gossip_accounting.pair_epsilon(d2, noise_multiplier=sigma, delta=delta)
    info = {
        "W_nodes": n, "target": target, "observer": observer, "T": T, "sigma": sigma,
        "view": view, "rows": [int(r) for r in rows],
        "delta_sq_thm4": sens["tm4"].delta_sq, "delta_sq_exact": sens["tm4_exact"].delta_sq,
        "delta_sq_certified": certified.delta_sq, "mu": mu,
        "mu_from_sensitivity": math.sqrt(sens["tm4_exact" if view == "exact" else "tm4"]
                                         .delta_sq) / sigma,
        "epsilon_exact_view": eps(sens["tm4_exact"].delta_sq),
        "epsilon_attack_closed_form": conversions.gaussian_epsilon(mu, delta),
        "llr_mean_d": est["mean_d"], "llr_mean_dprime": est["mean_dprime"],
        "llr_std": est["pooled_std"], "llr_mean_expected": mu**2 / 2,
        "llr_std_expected": mu, "mu_hat": est["mu_hat"], "mu_lower": est["mu_lower"],
        "cp_bound": cp.epsilon_lb,
        "trials_label": f"{trials:,} (bound on the LLR's mu, Gaussian premise; "
                        f"Clopper-Pearson: {cp.epsilon_lb:.3f})",
        "statistic": "exact Gaussian LLR of the plain-message view (mechanism Jacobians); "
                     "bound: lower confidence bound on the LLR's mu"}
    return canary.AuditResult(
        name=f"Gossip Thm. 4 reduction vs exact plain-message view ({n}-node path, "
             f"j={target}, i={observer}, T={T})" if view == "exact" else
             f"Gossip Thm. 4 reduced view (j's messages only, T={T})",
        bound=bound, trials=int(trials),
        claimed={"paper": eps(sens["tm4"].delta_sq), "strict": eps(certified.delta_sq)},
        neighbour="one node's data stream (each round within [-1, 1])",
        view="observer's state + neighbours' messages + own noise (plain messages)"
             if view == "exact" else "j's message stream + observer's own noise",
        seconds=time.time() - t0, info=info)


__all__ = ["PATTERNS", "THM4_VIEWS", "audit_gossip_pair", "audit_gossip_thm4",
           "plain_view_operators", "view_operators"]
