"""Canary audit of LightDP-FL's masked uploads under the worst-case colluder and straggler sets
(Hong, Lin, Duan, arXiv 2412.06120, Eqs. 7-8, Lemma 1, Prop. 1; :mod:`jaxfl.algorithms.lightdp`,
:func:`jaxfl.accounting.lightdp.design`).

Neighbours: one record of the target client i changes, moving its clipped local model by at
most the design sensitivity Delta; the audit uses the worst case ``v = Delta e_0``. Adversary:
the server colluding with ``C_bar`` clients (static) while ``S_bar`` clients straggle. The
colluders know their own individual noise and every pairwise term they share (the pair seeds),
so they subtract them; honest stragglers would leave their pair terms unknown in the view, so
the worst case (:func:`jaxfl.accounting.lightdp.worst_case`) has no
honest stragglers: the stragglers are colluders and every honest client uploads.

The uploads are generated with the library's own noise code (``individual_noise`` and
``pair_masks``, the same pair seeds ``fold_in(fold_in(k, min), max)`` and round folding as
``lightdp_fl``), with client i's model shifted by ``v`` under D. The adversary's statistic is
the exact LLR of the honest uploads after removing the colluders' terms: per coordinate they are
``N(v e_i, C_m)`` with the Lemma 1 covariance ``C_m = ((M-1) k + u) I - k (J - I)``
(``k = sigma_K^2``, ``u = sigma_U^2``, ``M = N - C_bar`` honest clients), so the test is
``(C_m^-1 e_i)^T X[:, 0]`` and ``mu = Delta sqrt((C_m^-1)_ii)``.

Claims: ``paper`` is the nominal target epsilon of the paper-mode design (Prop. 1's sufficient
condition); ``strict`` is the exact Gaussian epsilon of the same noise at the worst view
(``NoiseDesign.exact_epsilon``).

Example Usage:
  >>> import jax
  >>> r = audit_lightdp(epsilon=2.0, delta=1e-2, num_clients=5, max_colluders=2,
  ...                   max_stragglers=1, trials=2000, key=jax.random.key(0))
  >>> r.epsilon_lb <= r.claimed["strict"]
  True
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from jaxfl import validate
from jaxfl.accounting import conversions
from jaxfl.accounting import lightdp as lightdp_accounting
from jaxfl.algorithms import lightdp
from jaxfl.audit import bounds, canary, statistics

TARGET = 0


def honest_covariance(*, num_clients: int, num_colluders: int, sigma_u: float,
                      sigma_k: float) -> np.ndarray:
    """Lemma 1 ``C_m`` of the honest uploaders when every straggler colludes (float64)."""
    M = num_clients - num_colluders
    k, u = sigma_k**2, sigma_u**2
    return ((M - 1) * k + u) * np.eye(M) - k * (np.ones((M, M)) - np.eye(M))


def lightdp_canary(*, epsilon: float, delta: float, num_clients: int, max_colluders: int,
                   max_stragglers: int, sensitivity: float = 1.0, dim: int = 2,
                   mode: str = "paper", rounds: int = 1):
    """``(design, mechanism, statistic, mu, colluders)`` of the one-round audit (module doc).

    ``design`` is calibrated for ``rounds`` rounds; the mechanism and statistic are one round's.
    """
    N = validate.positive_int("num_clients", num_clients, minimum=2)
    C_bar = validate.positive_int("max_colluders", max_colluders, minimum=0)
    S_bar = validate.positive_int("max_stragglers", max_stragglers, minimum=0)
    if C_bar >= N or S_bar > C_bar:
        raise validate.JaxflValueError(
            "Expected max_colluders < num_clients and max_stragglers <= max_colluders (the "
            "worst case puts every straggler among the colluders).")
    delta = validate.delta(delta)
    d = lightdp_accounting.design(epsilon=epsilon, delta=delta, num_clients=N,
                                  max_colluders=C_bar, max_stragglers=S_bar,
                                  sensitivity=sensitivity, rounds=rounds, mode=mode)
    colluders = np.arange(N - C_bar, N)
    is_col = jnp.zeros((N,), bool).at[jnp.asarray(colluders)].set(True)
    honest = np.arange(N - C_bar)
    Cm = honest_covariance(num_clients=N, num_colluders=C_bar, sigma_u=d.sigma_u,
                           sigma_k=d.sigma_k)
    shift = np.zeros(len(honest))
    shift[TARGET] = sensitivity
    stat, mu = statistics.gaussian_llr(shift, np.zeros(len(honest)), Cm)
    t_round = 0
    ids = jnp.arange(N, dtype=jnp.int32)
    su, sk = jnp.float32(d.sigma_u), jnp.float32(d.sigma_k)

    def mechanism(k, present):
        pair_keys = jax.random.fold_in(k, 0)
        indiv = lightdp.individual_noise(jax.random.fold_in(k, 1), ids, dim=dim, sigma_u=su)
        masks = lightdp.pair_masks(pair_keys, t_round, num_clients=N, dim=dim, sigma_k=sk)
        models = jnp.zeros((N, dim)).at[TARGET, 0].set(jnp.where(present, sensitivity, 0.0))
        uploads = models + indiv + masks  # Eq. 7, every client (stragglers' never arrive)
        # Colluders' knowledge: every pair term touching a colluder (their seeds).
        honest_only = lightdp.pair_masks(pair_keys, t_round, num_clients=N, dim=dim,
                                         sigma_k=sk, excluded=is_col)
        known = masks - honest_only
        return (uploads - known)[: N - C_bar, 0]  # honest uploads, colluder terms removed

    return d, mechanism, stat, mu, colluders


def audit_lightdp(*, epsilon: float, delta: float, num_clients: int, max_colluders: int,
                  max_stragglers: int, trials: int, key: jax.Array, sensitivity: float = 1.0,
                  dim: int = 2, mode: str = "paper", confidence: float = 0.95,
                  batch_size: int = 4096) -> canary.AuditResult:
    """Audits one round of LightDP-FL's masking for client 0 (see module docstring).

    Args:
      epsilon, delta: the design target (one round) and the audit's delta.
      num_clients: N.
      max_colluders: C_bar (the colluders are the last C_bar clients).
      max_stragglers: S_bar (the stragglers are colluders: the worst case).
      trials: runs per hypothesis.
      key: audit key.
      sensitivity: Delta.
      dim: model dimension (the shift is along e_0).
      mode: noise design ``"paper"`` (Prop. 1 calibration) or ``"strict"``.
      confidence: Clopper-Pearson confidence.
      batch_size: trials vmapped together.
    """
    d, mechanism, stat, mu, colluders = lightdp_canary(
        epsilon=epsilon, delta=delta, num_clients=num_clients, max_colluders=max_colluders,
        max_stragglers=max_stragglers, sensitivity=sensitivity, dim=dim, mode=mode)
    N, C_bar, S_bar = num_clients, max_colluders, max_stragglers
    claims = {"paper": float(epsilon) if mode == "paper" else d.epsilon,
              "strict": d.exact_epsilon(rounds=1, delta=delta)}
    worst = lightdp_accounting.worst_case(num_clients=N, max_colluders=C_bar,
                                          max_stragglers=S_bar, sigma_u=d.sigma_u,
                                          sigma_k=d.sigma_k)
    return canary.audit(
        mechanism, stat, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=batch_size, name=f"LightDP-FL (N={N}, C={C_bar}, S={S_bar} colluding)",
        claimed=claims, neighbour="one record of a client (model moves by <= Delta)",
        view="server + colluders: uploads, colluders' noise and pair seeds",
        info={"design_mode": mode, "sigma_u": d.sigma_u, "sigma_k": d.sigma_k,
              "gamma": d.gamma, "mu": mu, "mu_design": math.sqrt(d.v_exact_max) * sensitivity,
              "worst_case_argmax_exact": worst["argmax_exact"], "colluders": colluders.tolist(),
              "statistic": "exact Gaussian LLR of the honest uploads (Lemma 1 covariance)"})


def audit_lightdp_exact(*, epsilon: float, delta: float, num_clients: int, max_colluders: int,
                        max_stragglers: int, rounds: int, trials: int, key: jax.Array,
                        check_trials: int = 20_000, sensitivity: float = 1.0,
                        mode: str = "paper", confidence: float = 0.95,
                        min_false_positives: float = 50.0) -> canary.AuditResult:
    """Audits the T-round paper-mode design at large delta via the view's exact distribution.

    LightDP-FL's worst-case view is a Gaussian release (Lemma 1): per round the exact LLR of the
    honest uploads is ``N(+-mu^2/2, mu^2)`` and independent across rounds (fresh individual
    noise, round-folded pair seeds), so T rounds are a Gaussian mechanism with
    ``mu_T = sqrt(T) mu``. The audit (1) samples ``check_trials`` runs of the library's own
    upload code (:func:`lightdp_canary`) and records the LLR's empirical mean and standard
    deviation against ``+-mu^2/2`` and ``mu`` (``info["library_check"]``); (2) fixes the
    threshold of the optimal test from the design alone (best ``log((TPR - delta)/FPR)`` with
    an expected ``min_false_positives`` false positives), and draws the numbers of the
    ``trials`` runs per hypothesis that cross it from their exact binomial law (the same law as
    counting ``trials`` sampled views). A single pre-fixed region needs no holdout split.

    Resolving epsilon near 9 at delta = 1e-2 needs ~1e9 runs per hypothesis, far beyond
    sampling views one by one. The bound is therefore **semi-analytic**: its counts have the
    law that counting ``trials`` sampled views would have *if* the views follow the design's
    Gaussian law; only the ``check_trials`` sampled views test the library's code (see
    ``info["library_check"]``, whose ``epsilon_view_lower`` is the sampled evidence).
    """
    rounds = validate.positive_int("rounds", rounds)
    trials = validate.positive_int("trials", trials, minimum=2)
    d, mechanism, stat, mu, colluders = lightdp_canary(
        epsilon=epsilon, delta=delta, num_clients=num_clients, max_colluders=max_colluders,
        max_stragglers=max_stragglers, sensitivity=sensitivity, mode=mode, rounds=rounds)
    k_check, k_count = jax.random.split(key)
    pos, neg = canary.sample_scores(mechanism, stat, key=k_check, trials=check_trials)
    check = {"trials": int(check_trials), "llr_mean_d": float(pos.mean()),
             "llr_mean_dprime": float(neg.mean()), "llr_std_d": float(pos.std()),
             "llr_std_dprime": float(neg.std()), "expected_mean": mu**2 / 2,
             "expected_std": mu}
    se = mu / math.sqrt(check_trials)
    check["ok"] = bool(abs(pos.mean() - mu**2 / 2) < 5 * se and abs(neg.mean() + mu**2 / 2)
                       < 5 * se and abs(pos.std() / mu - 1) < 0.05
                       and abs(neg.std() / mu - 1) < 0.05)
    # The privacy of the *sampled* view, not of the design. The statistic is linear in the
    # view, so its mean separation is the design's mu^2 exactly (the shift Delta e_0 is added
    # by the audit, not drawn), while its spread is whatever noise the library's code adds:
    # mu_view = mu^2 / std (a lower bound on the view's separation: the design's test is
    # optimal only when the code's noise has the design's covariance). With a one-sided
    # 3-sigma lower confidence bound on mu_view, composed over the T independent rounds, the
    # sampled runs are consistent with no epsilon below ``epsilon_view_lower``.
    sd = math.sqrt((pos.var(ddof=1) + neg.var(ddof=1)) / 2)
    mu_view = mu**2 / sd
    mu_view_lo = mu_view / (1 + 3 / math.sqrt(4 * float(check_trials)))
    check.update(mu_view=mu_view, mu_view_lower=mu_view_lo,
                 epsilon_view=conversions.gaussian_epsilon(math.sqrt(rounds) * mu_view, delta),
                 epsilon_view_lower=conversions.gaussian_epsilon(math.sqrt(rounds) * mu_view_lo,
                                                                 delta))
    mu_T = math.sqrt(rounds) * mu
    grid = np.linspace(0.0, mu_T + 8.0, 4001)   # standardised LLR z ~ N(mu_T, 1) vs N(0, 1)
    tpr, fpr = sps.norm.sf(grid - mu_T), sps.norm.sf(grid)
    ok = (fpr * trials >= min_false_positives) & (tpr > delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(ok, np.log((tpr - delta) / fpr), -np.inf)
    t = float(grid[int(np.argmax(score))])
    rng = np.random.default_rng(int(jax.random.randint(k_count, (), 0, 2**31 - 1)))
    k_pos = int(rng.binomial(trials, float(sps.norm.sf(t - mu_T))))
    k_neg = int(rng.binomial(trials, float(sps.norm.sf(t))))
    bound = bounds.epsilon_lower_bound_from_counts(k_pos, trials, k_neg, trials, delta=delta,
                                                   confidence=confidence, threshold=t)
    N, C_bar, S_bar = num_clients, max_colluders, max_stragglers
    claims = {"paper": float(epsilon) if mode == "paper" else d.epsilon,
              "strict": d.exact_epsilon(rounds=rounds, delta=delta)}
    return canary.AuditResult(
        name=f"LightDP-FL paper design at delta={delta:g} (N={N}, C={C_bar}, S={S_bar}, "
             f"T={rounds}; semi-analytic)", bound=bound, trials=trials,
        claimed=claims, neighbour="one record of a client (model moves by <= Delta)",
        view="server + colluders over T rounds (LLR law from the design, checked on sampled "
             "views)",
        info={"design_mode": mode, "mu_round": mu, "mu_total": mu_T, "rounds": rounds,
              "sigma_u": d.sigma_u, "sigma_k": d.sigma_k, "library_check": check,
              "colluders": colluders.tolist(),
              "trials_label": f"semi-analytic: {trials:,} simulated (binomial counts at the "
                              f"analytic rates); {check_trials:,} sampled views",
              "statistic": "exact LLR; counts of a pre-fixed threshold drawn from their "
                           "binomial law at the design's analytic rates (not sampled views)"})


__all__ = ["audit_lightdp", "audit_lightdp_exact", "honest_covariance", "lightdp_canary"]
