"""Monte-Carlo audit of private selection (:mod:`jaxfl.selection`) on a Gaussian mechanism.

The per-run mechanism ``Q`` is one Gaussian release of a sensitivity-1 statistic: under D the
statistic is 1 (the canary is present), under D' it is 0, and each run outputs
``statistic + sigma * Z``. Its score is its output, so the procedure keeps the largest of ``K``
runs, with ``K`` drawn by the library's sampler (:func:`jaxfl.selection.draw_runs`) and the best
run chosen by its rule (:func:`jaxfl.selection.best_of`). The adversary sees the released run's
output (``-inf`` standing for "nothing released" when a Poisson ``K`` is 0) and thresholds it
(both directions: :func:`jaxfl.audit.bounds.epsilon_lower_bound`). This is the worst case the
selection's theorem covers: the score is the whole output and it carries the full sensitivity.

The ``strict`` claim is the library's procedure epsilon
(:func:`jaxfl.selection.procedure_epsilon`: the RDP accountant on
``RepeatAndSelectDpEvent(GaussianDpEvent(sigma), mean, shape)``); the ``paper`` claim is the
naive report of a tuned result, one run's epsilon (PLD, exact for a Gaussian), which is not a
bound of this mechanism: an audit above it shows what the selection leaks.

Sampling is float64 NumPy on the host, in chunks of trials padded to the chunk's largest
``K`` (masked).

Example Usage:
  >>> r = audit_private_selection(noise_multiplier=1.0, family="geometric", mean=4.0,
  ...                             trials=4000, delta=1e-2, seed=0)
  >>> r.epsilon_lb <= r.claimed["strict"]
  True
"""

from __future__ import annotations

import time

import numpy as np

from jaxfl import selection, validate
from jaxfl.accounting import accountants, events
from jaxfl.audit import bounds, canary


def sample_outputs(*, present: bool, noise_multiplier: float, family: str, mean: float,
                   trials: int, rng: np.random.Generator, shape: float | None = None,
                   chunk: int = 20_000) -> np.ndarray:
    """The released outputs of ``trials`` independent procedures (float64 ``[trials]``)."""
    trials = validate.positive_int("trials", trials)
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    out = np.empty(trials, np.float64)
    for start in range(0, trials, chunk):
        n = min(chunk, trials - start)
        k = selection.draw_runs(family, mean, rng, size=n, shape=shape)
        width = max(int(k.max()), 1)
        runs = float(present) + sigma * rng.standard_normal((n, width))
        valid = np.arange(width)[None, :] < k[:, None]
        idx = selection.best_of(runs, valid)
        got = np.take_along_axis(runs, np.maximum(idx, 0)[:, None], axis=1)[:, 0]
        out[start:start + n] = np.where(idx >= 0, got, -np.inf)
    return out


def audit_private_selection(*, noise_multiplier: float, family: str, mean: float,
                            trials: int, delta: float, seed: int, shape: float | None = None,
                            confidence: float = 0.95) -> canary.AuditResult:
    """Audits the private selection of the best of ``K`` Gaussian runs (module docstring).

    Args:
      noise_multiplier: sigma of each run (sensitivity 1).
      family, mean, shape: the law of the number of runs (:class:`jaxfl.selection.Selection`).
      trials: procedures per hypothesis.
      delta: delta of the bound and of the claim.
      seed: seed of the sampling (D and D' use independent streams).
      confidence: confidence of the Clopper-Pearson bound.
    """
    delta = validate.delta(delta)
    t0 = time.time()
    rng_d, rng_dp = (np.random.default_rng(np.random.SeedSequence([int(seed), i]))
                     for i in (1, 0))
    kw = dict(noise_multiplier=noise_multiplier, family=family, mean=mean, trials=trials,
              shape=shape)
    pos = sample_outputs(present=True, rng=rng_d, **kw)
    neg = sample_outputs(present=False, rng=rng_dp, **kw)
    # "nothing released" is the same symbol under both hypotheses: any finite stand-in below
    # every output keeps it one score (the threshold test cannot split it).
    floor = min(pos[np.isfinite(pos)].min(initial=0.0), neg[np.isfinite(neg)].min(initial=0.0))
    pos, neg = (np.where(np.isfinite(x), x, floor - 1.0) for x in (pos, neg))
    bound = bounds.epsilon_lower_bound(pos, neg, delta=delta, confidence=confidence)
    run = events.gaussian(noise_multiplier)
    claim = selection.procedure_epsilon(run, delta, family, mean, shape)
    naive = accountants.epsilon(run, delta, accountant="pld")
    name = (f"Private selection: best of K ~ {family}(mean {mean:g}) Gaussian runs "
            f"(sigma={noise_multiplier:g})")
    return canary.AuditResult(
        name=name, bound=bound, trials=int(trials),
        claimed={"strict": claim, "paper": naive},
        neighbour="add/remove the canary (each run's statistic moves by 1)",
        view="the selected run's output (its score)", seconds=time.time() - t0,
        info={"noise_multiplier": float(noise_multiplier), "family": family, "mean": mean,
              "shape": selection.shape_of(family, shape), "accountant": "rdp",
              "paper_claim": "naive: one run's epsilon (PLD), as if the best of K cost one run",
              "statistic": "the released output (threshold test, both directions)"})


__all__ = ["audit_private_selection", "sample_outputs"]
