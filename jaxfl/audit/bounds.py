"""From a distinguisher's scores to a statistically valid lower bound on epsilon.

An (eps, delta)-DP mechanism M and any rejection region R (here ``score >= t``, "guess D")
satisfy, for neighbours D, D' (Kairouz, Oh, Viswanath 2015; Jagielski et al. 2020; Nasr et al.
2021):

  * direct:      TPR <= e^eps FPR + delta        ->  eps >= log((TPR - delta) / FPR)
  * complement:  TNR <= e^eps FNR + delta        ->  eps >= log((1 - FPR - delta) / (1 - TPR))

where TPR = P[score >= t | D] and FPR = P[score >= t | D']. Both bounds increase in TPR and
decrease in FPR, so plugging in a one-sided Clopper-Pearson lower bound on TPR and upper bound
on FPR (each at level alpha/2) gives an epsilon lower bound that holds with probability
>= 1 - alpha over the audit's randomness, **provided the threshold and the form were fixed
before looking at the evaluation counts**. Two ways to keep that promise:

  * ``selection="holdout"`` (default): the threshold, form and orientation (which side of the
    threshold means "D") maximising the bound on a selection split are evaluated once on a
    disjoint evaluation split.
  * ``selection="bonferroni"``: every threshold of a caller-supplied, data-independent grid is
    evaluated on all samples, with each of the 2m one-sided intervals at level alpha / (2m).

For the optimal (likelihood-ratio) test of a Gaussian mechanism the supremum over thresholds
of the direct form is exactly the mechanism's epsilon(delta), so with enough trials the
bound approaches the true epsilon from below; with n trials it saturates near log(n).

Example Usage:
  >>> import numpy as np
  >>> rng = np.random.default_rng(0)
  >>> pos, neg = rng.normal(1.0, 1.0, 40000), rng.normal(0.0, 1.0, 40000)
  >>> r = epsilon_lower_bound(pos, neg, delta=0.05)
  >>> 0.9 < r.epsilon_lb < 1.5689  # true epsilon of mu = 1 at delta = 0.05
  True
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats

from jaxfl import validate
from jaxfl.accounting import conversions

SELECTIONS = ("holdout", "bonferroni")
FORMS = ("direct", "complement")


def cp_lower(k, n, alpha):
    """One-sided Clopper-Pearson lower bound on a binomial rate (``P[p < lb] <= alpha``)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lb = stats.beta.ppf(alpha, k, n - k + 1)
    return np.where(k <= 0, 0.0, lb)


def cp_upper(k, n, alpha):
    """One-sided Clopper-Pearson upper bound on a binomial rate (``P[p > ub] <= alpha``)."""
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ub = stats.beta.ppf(1.0 - alpha, k + 1, n - k)
    return np.where(k >= n, 1.0, ub)


def clopper_pearson(k, n, confidence: float = 0.95):
    """Two-sided Clopper-Pearson interval ``(lo, hi)`` at the given confidence."""
    alpha = 1.0 - validate.probability("confidence", confidence)
    return cp_lower(k, n, alpha / 2), cp_upper(k, n, alpha / 2)


def epsilon_from_rates(tpr, fpr, delta: float, form: str = "direct"):
    """Epsilon implied by one (TPR, FPR) pair (0 where the bound is vacuous), vectorised."""
    tpr = np.asarray(tpr, dtype=np.float64)
    fpr = np.asarray(fpr, dtype=np.float64)
    if form == "direct":
        num, den = tpr - delta, fpr
    else:
        num, den = 1.0 - fpr - delta, 1.0 - tpr
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log(num / den)
    eps = np.where(num <= 0, 0.0, eps)
    eps = np.where((num > 0) & (den <= 0), np.inf, eps)
    return np.maximum(eps, 0.0)


@dataclasses.dataclass(frozen=True)
class EpsilonBound:
    """An audited epsilon lower bound and the counts behind it.

    Attributes:
      epsilon_lb: lower bound on epsilon at ``delta``, valid with probability ``confidence``.
      epsilon_point: the same threshold's bound from the empirical rates (no interval).
      delta: the delta of the bound.
      confidence: 1 - alpha.
      threshold: the chosen threshold (guess D iff score >= threshold).
      form: ``"direct"`` or ``"complement"``.
      tpr, fpr: empirical rates on the evaluation samples.
      tpr_lb, fpr_ub: Clopper-Pearson bounds used.
      n_pos, n_neg: evaluation sample sizes under D and D'.
      selection: ``"holdout"`` or ``"bonferroni"``.
      orientation: +1 when the test is ``score >= threshold``; -1 when the holdout split found
        the scores pointing the other way and the test is ``-score >= threshold``.
    """

    epsilon_lb: float
    epsilon_point: float
    delta: float
    confidence: float
    threshold: float
    form: str
    tpr: float
    fpr: float
    tpr_lb: float
    fpr_ub: float
    n_pos: int
    n_neg: int
    selection: str
    orientation: int = 1

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _rates(pos_sorted, neg_sorted, thresholds):
    """Counts of scores >= each threshold, under D and D'."""
    kp = len(pos_sorted) - np.searchsorted(pos_sorted, thresholds, side="left")
    kn = len(neg_sorted) - np.searchsorted(neg_sorted, thresholds, side="left")
    return kp, kn


def _bounds_at(pos_sorted, neg_sorted, thresholds, delta, alpha_each):
    """Per threshold and form: (eps_lb, eps_point, tpr_lb, fpr_ub, kp, kn)."""
    n_p, n_n = len(pos_sorted), len(neg_sorted)
    kp, kn = _rates(pos_sorted, neg_sorted, thresholds)
    tpr_lb = cp_lower(kp, n_p, alpha_each)
    fpr_ub = cp_upper(kn, n_n, alpha_each)
    out = {}
    for form in FORMS:
        lb = epsilon_from_rates(tpr_lb, fpr_ub, delta, form)
        point = epsilon_from_rates(kp / n_p, kn / n_n, delta, form)
        out[form] = (lb, point)
    return out, tpr_lb, fpr_ub, kp, kn


def _candidates(pos, neg, max_candidates: int) -> np.ndarray:
    pooled = np.unique(np.concatenate([pos, neg]))
    pooled = pooled[np.isfinite(pooled)]
    if len(pooled) <= max_candidates:
        return pooled
    # Quantiles of the pooled scores, denser in both tails where the best thresholds live.
    u = np.linspace(0.0, 1.0, max_candidates)
    u = 0.5 - 0.5 * np.cos(np.pi * u)
    return np.unique(np.quantile(pooled, u, method="nearest"))


def _check_scores(name, scores) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if scores.size < 2:
        raise validate.ShapeError(f"Expected at least 2 {name} scores, got {scores.size}.")
    if np.any(np.isnan(scores)):
        raise validate.JaxflValueError(f"{name} scores contain NaN.")
    return scores


def epsilon_lower_bound(pos_scores, neg_scores, *, delta: float, confidence: float = 0.95,
                        selection: str = "holdout", holdout_fraction: float = 0.5,
                        thresholds=None, max_candidates: int = 4096) -> EpsilonBound:
    """Epsilon lower bound at ``delta`` from distinguisher scores under D (pos) and D' (neg).

    Args:
      pos_scores: scores of views drawn from M(D) (higher means "D").
      neg_scores: scores of views drawn from M(D').
      delta: the delta at which epsilon is bounded, in [0, 1).
      confidence: probability (over the audit's samples) that the bound is valid.
      selection: ``"holdout"`` or ``"bonferroni"`` (see module docstring).
      holdout_fraction: fraction of each sample used to select the threshold (holdout).
      thresholds: the fixed threshold grid for ``"bonferroni"`` (required there).
      max_candidates: threshold candidates scanned on the selection split (holdout).

    Returns:
      An :class:`EpsilonBound`.

    Raises:
      PrivacyParameterError: ``delta`` outside [0, 1) or ``confidence`` outside (0, 1).
      JaxflValueError: NaN scores, an unknown selection, or Bonferroni without thresholds.
    """
    delta = validate.non_negative("delta", delta)
    if delta >= 1.0:
        raise validate.PrivacyParameterError(f"Expected delta in [0, 1), got delta={delta!r}.")
    confidence = validate.probability("confidence", confidence)
    if confidence >= 1.0:
        raise validate.PrivacyParameterError("Expected confidence < 1.")
    validate.one_of("selection", selection, SELECTIONS)
    pos = _check_scores("pos", pos_scores)
    neg = _check_scores("neg", neg_scores)
    alpha = 1.0 - confidence

    if selection == "bonferroni":
        if thresholds is None:
            raise validate.JaxflValueError(
                "selection='bonferroni' needs a data-independent `thresholds` grid.")
        grid = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        if grid.size == 0 or np.any(np.isnan(grid)):
            raise validate.JaxflValueError("Expected a non-empty, NaN-free thresholds grid.")
        ps, ns = np.sort(pos), np.sort(neg)
        per_form, tpr_lb, fpr_ub, kp, kn = _bounds_at(ps, ns, grid, delta,
                                                      alpha / (2 * grid.size))
        form, idx = _argmax_forms(per_form)
        return EpsilonBound(
            epsilon_lb=float(per_form[form][0][idx]), epsilon_point=float(per_form[form][1][idx]),
            delta=delta, confidence=confidence, threshold=float(grid[idx]), form=form,
            tpr=float(kp[idx] / len(ps)), fpr=float(kn[idx] / len(ns)),
            tpr_lb=float(tpr_lb[idx]), fpr_ub=float(fpr_ub[idx]), n_pos=len(ps), n_neg=len(ns),
            selection=selection)

    frac = validate.probability("holdout_fraction", holdout_fraction)
    if frac >= 1.0:
        raise validate.JaxflValueError("Expected holdout_fraction < 1.")
    cut_p, cut_n = int(round(frac * len(pos))), int(round(frac * len(neg)))
    if min(cut_p, cut_n, len(pos) - cut_p, len(neg) - cut_n) < 1:
        raise validate.ShapeError("Too few scores for a holdout split.")
    best = None
    for sign in (1, -1):
        sel_p, sel_n = np.sort(sign * pos[:cut_p]), np.sort(sign * neg[:cut_n])
        cands = _candidates(sel_p, sel_n, max_candidates)
        # Rank candidates by the bound they give on the selection split at the same alpha.
        per_form, *_ = _bounds_at(sel_p, sel_n, cands, delta, alpha / 2)
        form, idx = _argmax_forms(per_form)
        score = per_form[form][0][idx] + 1e-9 * min(per_form[form][1][idx], 1e6)
        if best is None or score > best[0]:
            best = (score, sign, form, cands[idx])
    _, sign, form, thr = best
    ev_p, ev_n = np.sort(sign * pos[cut_p:]), np.sort(sign * neg[cut_n:])
    t = np.asarray([thr])
    ev_form, tpr_lb, fpr_ub, kp, kn = _bounds_at(ev_p, ev_n, t, delta, alpha / 2)
    return EpsilonBound(
        epsilon_lb=float(ev_form[form][0][0]), epsilon_point=float(ev_form[form][1][0]),
        delta=delta, confidence=confidence, threshold=float(t[0]), form=form,
        tpr=float(kp[0] / len(ev_p)), fpr=float(kn[0] / len(ev_n)), tpr_lb=float(tpr_lb[0]),
        fpr_ub=float(fpr_ub[0]), n_pos=len(ev_p), n_neg=len(ev_n), selection=selection,
        orientation=sign)


def _argmax_forms(per_form) -> tuple[str, int]:
    best = (-math.inf, "direct", 0)
    for form in FORMS:
        lb, point = per_form[form]
        # Ties in the lower bound (e.g. all zero) are broken by the point estimate.
        key = lb + 1e-9 * np.minimum(point, 1e6)
        i = int(np.argmax(key))
        if key[i] > best[0]:
            best = (float(key[i]), form, i)
    return best[1], best[2]


__all__ = ["EpsilonBound", "clopper_pearson", "cp_lower", "cp_upper", "epsilon_from_rates",
           "epsilon_lower_bound", "epsilon_lower_bound_from_counts",
           "gaussian_epsilon_lower_bound"]


def epsilon_lower_bound_from_counts(k_pos: int, n_pos: int, k_neg: int, n_neg: int, *,
                                    delta: float, confidence: float = 0.95,
                                    threshold: float = float("nan"),
                                    form: str = "direct") -> EpsilonBound:
    """Epsilon lower bound of ONE rejection region fixed before sampling, from its counts.

    ``k_pos`` of ``n_pos`` runs under D and ``k_neg`` of ``n_neg`` runs under D' fell in the
    region (``score >= threshold``). Valid with probability ``confidence`` when the region (and
    ``form``) did not depend on these counts (no selection: ``selection="fixed"``). Used when a
    mechanism's view is an exact Gaussian release, so the counts can be drawn from their exact
    binomial law for far more runs than sampling whole views would allow.
    """
    alpha = 1.0 - validate.probability("confidence", confidence)
    validate.one_of("form", form, FORMS)
    delta = validate.non_negative("delta", delta)
    tpr_lb = float(cp_lower(k_pos, n_pos, alpha / 2))
    fpr_ub = float(cp_upper(k_neg, n_neg, alpha / 2))
    tpr, fpr = k_pos / n_pos, k_neg / n_neg
    lb = float(epsilon_from_rates(tpr_lb, fpr_ub, delta, form))
    point = float(epsilon_from_rates(tpr, fpr, delta, form))
    return EpsilonBound(epsilon_lb=max(lb, 0.0), epsilon_point=point, delta=delta,
                        confidence=1.0 - alpha, threshold=float(threshold), form=form,
                        tpr=tpr, fpr=fpr, tpr_lb=tpr_lb, fpr_ub=fpr_ub, n_pos=int(n_pos),
                        n_neg=int(n_neg), selection="fixed")


def gaussian_epsilon_lower_bound(pos_scores, neg_scores, *, delta: float,
                                 confidence: float = 0.95) -> tuple[EpsilonBound, dict]:
    """Epsilon lower bound of a test statistic known to be Gaussian with equal variances.

    For a statistic that is ``N(m_D, s^2)`` under D and ``N(m_D', s^2)`` under D' (a linear
    function of a view that is linear in Gaussian noise, e.g. the LLR of a Gaussian view), the
    statistic alone is a Gaussian mechanism with ``mu = (m_D - m_D') / s``, and the view's
    epsilon at ``delta`` is at least ``gaussian_epsilon(mu, delta)`` (post-processing). The
    bound plugs in a one-sided lower confidence bound on ``mu``: the mean difference's lower
    normal bound divided by the chi-square upper bound on the pooled standard deviation, each
    at level ``alpha / 2``. It resolves gaps in ``mu`` of order ``1 / sqrt(n)``, where a
    threshold test (:func:`epsilon_lower_bound`) needs false-positive rates near
    ``delta / e^eps``. Valid only under the Gaussian premise (the caller's to establish).

    Returns ``(bound, details)``: the bound's ``selection`` is ``"gaussian"`` (no threshold;
    ``tpr``/``fpr`` fields are nan) and ``details`` has ``mu_hat``, ``mu_lower``, the means
    and the pooled standard deviation.
    """
    delta = validate.non_negative("delta", delta)
    confidence = validate.probability("confidence", confidence)
    if confidence >= 1.0:
        raise validate.PrivacyParameterError("Expected confidence < 1.")
    pos = _check_scores("pos", pos_scores)
    neg = _check_scores("neg", neg_scores)
    alpha = 1.0 - confidence
    n_p, n_n = len(pos), len(neg)
    diff = float(pos.mean() - neg.mean())
    dof = n_p + n_n - 2
    sd = math.sqrt((((pos - pos.mean()) ** 2).sum() + ((neg - neg.mean()) ** 2).sum()) / dof)
    z = float(stats.norm.ppf(1.0 - alpha / 2))
    diff_lo = diff - z * sd * math.sqrt(1.0 / n_p + 1.0 / n_n)
    sd_hi = sd * math.sqrt(dof / float(stats.chi2.ppf(alpha / 2, dof)))
    mu_hat, mu_lo = diff / sd, max(diff_lo / sd_hi, 0.0)
    lb = conversions.gaussian_epsilon(mu_lo, delta)
    nan = float("nan")
    bound = EpsilonBound(epsilon_lb=lb, epsilon_point=conversions.gaussian_epsilon(mu_hat, delta),
                         delta=delta, confidence=confidence, threshold=nan, form="direct",
                         tpr=nan, fpr=nan, tpr_lb=nan, fpr_ub=nan, n_pos=n_p, n_neg=n_n,
                         selection="gaussian")
    return bound, {"mu_hat": mu_hat, "mu_lower": mu_lo, "mean_d": float(pos.mean()),
                   "mean_dprime": float(neg.mean()), "pooled_std": sd}
