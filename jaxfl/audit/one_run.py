"""Privacy auditing in one training run (Steinke, Nasr, Jagielski, NeurIPS 2023).

m canaries are each included in the training input independently with probability 1/2 (the
secret S in {-1, +1}^m). After ONE run the auditor scores every canary, guesses "in" (+1) for
the ``k_pos`` highest scores, "out" (-1) for the ``k_neg`` lowest and abstains on the rest. If
the mechanism is (eps, delta)-DP with respect to each canary's inclusion, the number W of
correct guesses among the r = k_pos + k_neg guesses satisfies (the paper's Theorem 3.1, for
abstaining guessers)

  P[W >= v] <= P[Binomial(r, e^eps / (1 + e^eps)) >= v] + 2 m delta max_i (...)/i,

(the delta term is 2 m delta times a factor <= 1: with delta near 1 / m the bound vanishes),
so the largest eps whose tail at the observed v is below ``1 - confidence`` is an epsilon lower
bound holding with probability ``confidence`` over the canaries' inclusion and the run.

The estimator is :meth:`jax_privacy.auditing.CanaryScoreAuditor.epsilon_one_run` (exact
binomial tail with the delta term; not re-implemented here). It supports one-sided guesses
(k_neg = 0) on real scores; :func:`epsilon_from_guesses` feeds it the counts ``(m, r, v)`` of
any abstaining guesser (the theorem depends on the guesses only through these counts) as
indicator scores: correct guesses as held-in scores 1, wrong guesses as held-out scores 1,
abstentions as scores 0, thresholded at 1 (``Explicit(1.0)``).

The guesses must be fixed functions of the scores chosen before the inclusion labels are seen
(here: ``k_pos`` and ``k_neg`` are arguments, not tuned on the labels); trying several k and
keeping the best would need a union bound over the tries.

Example Usage:
  >>> import numpy as np
  >>> rng = np.random.default_rng(0)
  >>> included = rng.random(1000) < 0.5
  >>> scores = included + rng.normal(0.0, 0.5, 1000)  # a leaky mechanism
  >>> b = one_run_bound(scores, included, k_pos=50, k_neg=50, delta=1e-5)
  >>> b.correct > 90 and 2.0 < b.epsilon_lb
  True
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxfl import validate


@dataclasses.dataclass(frozen=True)
class OneRunBound:
    """A one-run epsilon lower bound and the counts behind it.

    Attributes:
      epsilon_lb: lower bound on epsilon at ``delta``, valid with probability ``confidence``.
      delta: the delta of the bound.
      confidence: 1 - significance.
      canaries: m, the number of canaries (each included with probability 1/2).
      included: how many canaries were included in this run.
      guesses: r = k_pos + k_neg non-abstaining guesses.
      correct: v, correct guesses among them.
      k_pos, k_neg: guesses "in" (highest scores) and "out" (lowest scores).
      estimator: where the bound comes from.
    """

    epsilon_lb: float
    delta: float
    confidence: float
    canaries: int
    included: int
    guesses: int
    correct: int
    k_pos: int
    k_neg: int
    estimator: str = "jax_privacy.auditing.CanaryScoreAuditor.epsilon_one_run"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _check_confidence(confidence) -> float:
    confidence = validate.probability("confidence", confidence)
    if confidence >= 1.0:
        raise validate.PrivacyParameterError("Expected confidence < 1.")
    return confidence


def epsilon_from_guesses(canaries: int, guesses: int, correct: int, *, delta: float,
                         confidence: float = 0.95) -> float:
    """Steinke et al.'s epsilon lower bound from ``correct`` of ``guesses`` guesses on
    ``canaries`` canaries (jax_privacy's estimator; see module docstring).

    Raises:
      JaxflValueError: counts out of range or no abstention (r = m; the encoding needs one).
      PrivacyParameterError: ``delta`` outside (0, 1) or ``confidence`` outside (0, 1).
    """
    from jax_privacy import auditing

    m = validate.positive_int("canaries", canaries, minimum=2)
    r = int(guesses)
    v = int(correct)
    if not 0 <= v <= r < m:
        raise validate.JaxflValueError(
            f"Expected 0 <= correct <= guesses < canaries, got correct={correct}, "
            f"guesses={guesses}, canaries={canaries} (leave at least one abstention).")
    delta = validate.delta(delta)
    confidence = _check_confidence(confidence)
    if v == 0:
        return 0.0  # the tail P[W >= 0] = 1 rejects nothing
    abstain = m - r
    # Correct guesses are held-in scores 1, wrong ones held-out scores 1; abstentions score 0
    # (one on the held-out side so that neither array is empty). Only (m, r, v) matter.
    held_in = np.r_[np.ones(v), np.zeros(abstain - 1)]
    held_out = np.r_[np.ones(r - v), np.zeros(1)]
    auditor = auditing.CanaryScoreAuditor(held_in, held_out)
    eps = auditor.epsilon_one_run(1.0 - confidence, delta,
                                  threshold_strategy=auditing.Explicit(1.0))
    return float(max(eps, 0.0))


def guesses_from_scores(scores, *, k_pos: int, k_neg: int = 0) -> np.ndarray:
    """+1 for the ``k_pos`` highest scores, -1 for the ``k_neg`` lowest, 0 (abstain) else.

    Ties are broken by canary index (a rule that does not look at the inclusion labels).
    """
    scores = np.asarray(scores, np.float64).reshape(-1)
    m = scores.size
    k_pos = int(k_pos)
    k_neg = int(k_neg)
    if k_pos < 0 or k_neg < 0 or k_pos + k_neg >= m:
        raise validate.JaxflValueError(
            f"Expected k_pos, k_neg >= 0 with k_pos + k_neg < {m} canaries, got "
            f"k_pos={k_pos}, k_neg={k_neg}.")
    if np.any(~np.isfinite(scores)):
        raise validate.JaxflValueError("Canary scores contain NaN or inf.")
    order = np.argsort(-scores, kind="stable")
    g = np.zeros(m, np.int8)
    g[order[:k_pos]] = 1
    if k_neg:
        g[order[m - k_neg:]] = -1
    return g


def one_run_bound(scores, included, *, k_pos: int, k_neg: int = 0, delta: float,
                  confidence: float = 0.95) -> OneRunBound:
    """Guess top-``k_pos`` "in" / bottom-``k_neg`` "out" and bound epsilon (module docstring).

    Args:
      scores: one score per canary, larger meaning "included" (shape [m]).
      included: the canaries' inclusion (bool [m]; drawn with probability 1/2 each).
      k_pos, k_neg: numbers of "in" and "out" guesses, fixed before the run.
      delta: delta of the bound (in (0, 1)).
      confidence: probability that the bound is valid.
    """
    included = np.asarray(included).reshape(-1)
    if included.dtype != bool:
        raise validate.JaxflValueError(f"Expected boolean `included`, got {included.dtype}.")
    scores = np.asarray(scores, np.float64).reshape(-1)
    if scores.shape != included.shape:
        raise validate.ShapeError(
            f"Expected one score per canary, got {scores.shape} and {included.shape}.")
    g = guesses_from_scores(scores, k_pos=k_pos, k_neg=k_neg)
    truth = np.where(included, 1, -1)
    r = int(np.sum(g != 0))
    v = int(np.sum(g == truth))
    eps = epsilon_from_guesses(scores.size, r, v, delta=delta, confidence=confidence)
    return OneRunBound(epsilon_lb=eps, delta=float(delta), confidence=float(confidence),
                       canaries=int(scores.size), included=int(included.sum()), guesses=r,
                       correct=v, k_pos=int(k_pos), k_neg=int(k_neg))


@dataclasses.dataclass(frozen=True)
class OneRunResult:
    """One one-run audit, shaped like :class:`jaxfl.audit.canary.AuditResult` for the audit
    table (``trials`` = 1 training run; ``bound`` is a :class:`OneRunBound`)."""

    name: str
    bound: OneRunBound
    claimed: dict = dataclasses.field(default_factory=dict)
    neighbour: str = ""
    view: str = ""
    seconds: float = 0.0
    info: dict = dataclasses.field(default_factory=dict)
    trials: int = 1

    @property
    def epsilon_lb(self) -> float:
        return self.bound.epsilon_lb

    @property
    def trials_label(self) -> str:
        return f"1 run, {self.bound.canaries:,} canaries"

    def exceeds(self, mode: str) -> bool:
        return self.bound.epsilon_lb > self.claimed[mode]

    def to_dict(self) -> dict:
        return {"name": self.name, "trials": self.trials, "claimed": dict(self.claimed),
                "neighbour": self.neighbour, "view": self.view, "seconds": self.seconds,
                "info": dict(self.info), "method": "one_run", **self.bound.to_dict()}


__all__ = ["OneRunBound", "OneRunResult", "epsilon_from_guesses", "guesses_from_scores",
           "one_run_bound"]
