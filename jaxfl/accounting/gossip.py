"""Pairwise network-DP accounting for DP gossip averaging (Koskela & Kulkarni 2025, Sec. 3-4).

A view with squared sensitivity ``Δ²`` (from :mod:`jaxfl.sensitivity`) and per-node noise
multiplier σ is exactly a Gaussian mechanism with ``μ = Δ / σ`` (Lemma 6; Dong et al. GDP), so:

* ε at δ: the analytic Gaussian conversion ``jaxfl.accounting.conversions.gaussian_epsilon``
  (tight, what the paper uses: Lemma 4 of Koskela & Kulkarni 2025, after Dong et al. 2022);
  arrays use its vectorised form
  ``conversions.gaussian_epsilons``;
* the DpEvent: ``GaussianDpEvent(σ / Δ)``, or equivalently ``T`` composed Gaussian events of
  multiplier ``σ √T / Δ`` (use this to compose with other mechanisms in dp-accounting);
* baselines: LDP (``Δ² = T``), DP-FedAvg with a trusted server / secure aggregation (aggregate
  multiplier σ per round: ``μ = √T / σ``, App. F.2), central secure aggregation (``Δ² = T/n``);
* "average ε over all pairs" (Fig. 2, 3) = mean over the ordered pairs i != j, pairs with
  Δ = 0 included (the paper
  does not say; we include them); median and max are reported alongside.

The accounting is data-independent: compute Δ² once per (W, T, view, mode) and reuse it for any
σ. Every summary carries the sensitivity mode it was computed in. :func:`observer_curves` and
:func:`view_series` read Figs. 1 and 2's series back out of a run's reports.

Example Usage:
  >>> round(pair_epsilon(1.0, noise_multiplier=2.0, delta=1e-5), 6)   # mu = 0.5
  1.993091
"""

from __future__ import annotations

import dataclasses
import math

import dp_accounting
import numpy as np

from jaxfl import validate
from jaxfl.accounting import accountants, conversions, events, report


def _check_delta_sq(delta_sq) -> np.ndarray:
    arr = np.asarray(delta_sq, dtype=np.float64)
    if np.any(np.isnan(arr)) or np.any(arr < 0):
        raise validate.PrivacyParameterError("Expected squared sensitivities >= 0 (no nan).")
    return arr


def pair_mu(delta_sq, *, noise_multiplier: float):
    """``μ = sqrt(Δ²) / σ`` (GDP parameter of the view)."""
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    return np.sqrt(_check_delta_sq(delta_sq)) / sigma


def pair_epsilon(delta_sq: float, *, noise_multiplier: float, delta: float) -> float:
    """ε at ``delta`` of one view (scalar; via the core analytic-Gaussian conversion)."""
    mu = float(pair_mu(delta_sq, noise_multiplier=noise_multiplier))
    return conversions.gaussian_epsilon(mu, delta)


def pair_epsilons(delta_sq, *, noise_multiplier: float, delta: float) -> np.ndarray:
    """Elementwise ε of an array of Δ² (nan entries, e.g. i == j, stay nan)."""
    arr = np.asarray(delta_sq, dtype=np.float64)
    out = np.full(arr.shape, np.nan)
    ok = ~np.isnan(arr)
    mu = pair_mu(arr[ok], noise_multiplier=noise_multiplier)
    out[ok] = conversions.gaussian_epsilons(mu, delta)
    return out


def view_dp_event(delta_sq: float, *, noise_multiplier: float, rounds: int | None = None
                  ) -> dp_accounting.DpEvent:
    """DpEvent a view satisfies: ``GaussianDpEvent(σ/Δ)``.

    With ``rounds=T`` the same GDP profile as ``T`` composed ``GaussianDpEvent(σ √T / Δ)``.
    Δ = 0 gives ``NoOpDpEvent``; Δ = inf gives ``NonPrivateDpEvent``.
    """
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    d2 = float(_check_delta_sq(delta_sq))
    if d2 == 0:
        return dp_accounting.NoOpDpEvent()
    if math.isinf(d2):
        return dp_accounting.NonPrivateDpEvent()
    if rounds is None:
        return events.gaussian(sigma / math.sqrt(d2))
    T = validate.positive_int("rounds", rounds)
    return events.repeated(events.gaussian(sigma * math.sqrt(T / d2)), T)


def ldp_event(*, noise_multiplier: float, rounds: int) -> dp_accounting.DpEvent:
    """Local DP baseline: each of T messages of j is a Gaussian mechanism (``Δ² = T``)."""
    return events.repeated(events.gaussian(noise_multiplier), rounds)


def fedavg_event(*, noise_multiplier: float, rounds: int) -> dp_accounting.DpEvent:
    """Full-batch DP-FedAvg with trusted aggregation: aggregate multiplier σ, T rounds."""
    return events.repeated(events.gaussian(noise_multiplier), rounds)


def central_delta_sq(rounds: int, num_nodes: int) -> float:
    """``Δ² = T / n``: central aggregation of n noisy values with secure aggregation."""
    return validate.positive_int("rounds", rounds) / validate.positive_int("n", num_nodes)


def summary(delta_sq, *, noise_multiplier: float, delta: float, mode: str,
            view: str | None = None) -> dict:
    """Mean / median / max / min ε over the given pairs (nan entries are excluded).

    ``delta_sq`` is the off-diagonal pair array (e.g. ``PairSensitivity.off_diagonal()``).
    """
    eps = pair_epsilons(delta_sq, noise_multiplier=noise_multiplier, delta=delta)
    eps = eps[~np.isnan(eps)]
    if eps.size == 0:
        raise validate.JaxflValueError("No pairs to summarise.")
    d2 = np.asarray(delta_sq, dtype=np.float64)
    d2 = d2[~np.isnan(d2)]
    return {"mode": mode, "view": view, "noise_multiplier": float(noise_multiplier),
            "delta": float(delta), "pairs": int(eps.size),
            "mean_epsilon": float(np.mean(eps)), "median_epsilon": float(np.median(eps)),
            "max_epsilon": float(np.max(eps)), "min_epsilon": float(np.min(eps)),
            "mean_delta_sq": float(np.mean(d2)), "max_delta_sq": float(np.max(d2))}


def calibrate_noise_multiplier(delta_sq, *, target_epsilon: float, delta: float,
                               statistic: str = "mean", rtol: float = 1e-9) -> float:
    """Smallest σ whose mean (or max) pairwise ε is <= ``target_epsilon``.

    A thin wrapper of the library's one calibration entry point
    (:func:`jaxfl.accounting.accountants.calibrate_noise_multiplier` with ``epsilon_of``): the
    statistic over pairs is non-increasing in σ because ε is decreasing in μ = Δ/σ.
    """
    validate.positive("target_epsilon", target_epsilon)
    validate.one_of("statistic", statistic, ("mean", "max"))
    d2 = np.asarray(delta_sq, dtype=np.float64)
    d2 = _check_delta_sq(d2[~np.isnan(d2)])
    if np.any(np.isinf(d2)):
        raise validate.PrivacyParameterError("A pair has infinite sensitivity: no sigma works.")
    reduce = np.mean if statistic == "mean" else np.max
    stat = lambda s: float(reduce(pair_epsilons(d2, noise_multiplier=s, delta=delta)))
    return accountants.calibrate_noise_multiplier(
        epsilon_of=stat, target_epsilon=target_epsilon, lower=1e-6, upper=1e8, tol=rtol)


# ------------------------------------------------------------------------------ accountants

# Views whose reduction is not an upper bound on the adaptive mechanism (Thm. 4's, see
# jaxfl.sensitivity.views).
UNSOUND_VIEWS = ("tm4",)
SOUND_SENSITIVITY_MODES = ("certified", "sdp", "sign_exact", "ldp")
AXES = ("observer", "target")
_MAX_LISTED_PAIRS = 16


class PairwiseAccountant(report.Accountant):
    """Per node-pair network DP of a gossip view (Lemma 6: each pair is a Gaussian mechanism).

    Built from a table of squared sensitivities: ``delta_sq_fn(horizons) -> [len(horizons),
    n_observers, n_targets]`` (nan where observer == target), computed once per horizon by
    :mod:`jaxfl.sensitivity` (the algorithm builder passes it; accounting itself does not
    import JAX) and cached here.

    * ``epsilons``: the headline, the worst pair: ``ε(μ = max Δ² ^ ½ / σ)``;
    * ``report``: ``per_unit`` = the pairwise ε matrix (axes ``("observer", "target")``), the
      ``GaussianDpEvent(σ / max Δ)`` of the worst pair, ``details``: :func:`summary` (mean /
      median / max over pairs, the paper's Fig. 2-3 aggregate is the mean), the view and the
      sensitivity mode, and with ``curve_horizons`` a ``curve`` of those statistics per
      horizon (plus each pair's Δ² when there are at most 16 pairs).

    Args:
      delta_sq_fn: the table function above.
      noise_multiplier: σ per node and round (units of the per-round sensitivity).
      view: the threat model (``tm1``, ``tm3``, ``tm4``, ``tm4_exact``, ``ldp``).
      sensitivity_mode: ``certified`` (sound), ``paper`` (all-ones pattern), ``ldp``...
      observers, targets: node indices of the table's axes.
      mode, sound: labels; default ``sound`` is False for the paper pattern and for the views
        whose reduction is unsound (Thm 4; see :mod:`jaxfl.sensitivity.views`).
      curve_horizons: horizons of ``details["curve"]``.
      alternatives: the other modes' accountants.
    """

    unit = "node"

    def __init__(self, delta_sq_fn, *, noise_multiplier: float, view: str,
                 sensitivity_mode: str, observers, targets, mode: str = "strict",
                 sound: bool | None = None, curve_horizons=None, alternatives=None):
        self._fn = delta_sq_fn
        self.noise_multiplier = validate.non_negative("noise_multiplier", noise_multiplier)
        self.view, self.sensitivity_mode = view, sensitivity_mode
        self.observers = np.asarray(observers, dtype=np.int64)
        self.targets = np.asarray(targets, dtype=np.int64)
        validate.one_of("mode", mode, report.MODES)
        self.mode = mode
        if sound is None:
            sound = sensitivity_mode in SOUND_SENSITIVITY_MODES and view not in UNSOUND_VIEWS
        self.sound = bool(sound)
        self.private = self.noise_multiplier > 0
        self.name = "gdp-pairwise"
        self.curve_horizons = tuple(sorted({int(h) for h in (curve_horizons or ())}))
        self._alternatives = dict(alternatives or {})
        self._cache: dict[int, np.ndarray] = {}

    def delta_sq(self, horizons) -> np.ndarray:
        """Pairwise Δ² [len(horizons), n_observers, n_targets] (cached per horizon)."""
        hs = [int(h) for h in np.atleast_1d(horizons)]
        todo = sorted({h for h in hs if h not in self._cache and h > 0})
        if todo:
            table = np.asarray(self._fn(tuple(todo)), dtype=np.float64)
            want = (len(todo), self.observers.size, self.targets.size)
            if table.shape != want:
                raise validate.ShapeError(
                    f"Expected a sensitivity table of shape {want}, got {table.shape}.")
            for h, t in zip(todo, table, strict=True):
                self._cache[h] = t
        zero = np.where(self.observers[:, None] == self.targets[None, :], np.nan, 0.0)
        return np.stack([self._cache[h] if h > 0 else zero for h in hs])

    def _eps(self, d2, delta):
        if not self.private:
            return np.where(np.isnan(d2), np.nan, np.where(d2 > 0, np.inf, 0.0))
        return pair_epsilons(d2, noise_multiplier=self.noise_multiplier, delta=delta)

    def epsilons(self, rounds, delta):
        r = report.check_rounds(rounds)
        delta = validate.delta(delta)
        worst = np.array([np.nanmax(t) for t in self.delta_sq(r)])
        return self._eps(worst, delta)

    def dp_event(self, rounds):
        rounds = int(rounds)
        if rounds == 0:
            return dp_accounting.NoOpDpEvent()
        worst = float(np.nanmax(self.delta_sq([rounds])[0]))
        if not self.private:
            return dp_accounting.NonPrivateDpEvent() if worst > 0 else \
                dp_accounting.NoOpDpEvent()
        return view_dp_event(worst, noise_multiplier=self.noise_multiplier)

    def _stats(self, d2, delta) -> dict:
        eps = self._eps(d2, delta)
        e, d = eps[~np.isnan(eps)], d2[~np.isnan(d2)]
        return {"mean_epsilon": float(np.mean(e)), "median_epsilon": float(np.median(e)),
                "max_epsilon": float(np.max(e)), "min_epsilon": float(np.min(e)),
                "mean_delta_sq": float(np.mean(d)), "max_delta_sq": float(np.max(d))}

    def report(self, rounds, delta):
        base = super().report(rounds, delta)
        d2 = self.delta_sq([base.rounds])[0]
        details = {"view": self.view, "sensitivity_mode": self.sensitivity_mode,
                   "noise_multiplier": self.noise_multiplier,
                   "pairs": int(np.sum(~np.isnan(d2))),
                   "observers": self.observers.tolist(), "targets": self.targets.tolist()}
        if base.rounds > 0:
            details.update(self._stats(d2, base.delta))
        hs = [h for h in self.curve_horizons if h <= base.rounds]
        if hs:
            tables = self.delta_sq(hs)
            stats = [self._stats(t, base.delta) for t in tables]
            curve = {"T": hs, **{k: [s[k] for s in stats] for k in stats[0]}}
            if tables[0].size <= _MAX_LISTED_PAIRS:
                curve["delta_sq"] = tables.tolist()
            details["curve"] = curve
        return dataclasses.replace(base, per_unit=self._eps(d2, base.delta), per_unit_axes=AXES,
                                   details=details)

    def noise_for(self, target_epsilon: float, *, rounds: int, delta: float,
                  statistic: str = "mean") -> float:
        """The σ at which this view's mean (or worst) pairwise ε after ``rounds`` meets
        ``target_epsilon`` (the pair table does not depend on σ)."""
        return calibrate_noise_multiplier(self.delta_sq([rounds])[0], target_epsilon=target_epsilon,
                                          delta=delta, statistic=statistic)

    def other_modes(self):
        return dict(self._alternatives)


def ldp_delta_sq_fn(num_nodes: int, observers=None, targets=None):
    """Table function of local DP: ``Δ² = T`` for every pair (each of j's T messages is a
    Gaussian mechanism of sensitivity 1): certified for every view, adaptive or not."""
    n = validate.positive_int("num_nodes", num_nodes)
    obs = np.arange(n) if observers is None else np.asarray(observers, np.int64)
    tgt = np.arange(n) if targets is None else np.asarray(targets, np.int64)
    diag = obs[:, None] == tgt[None, :]

    def fn(horizons):
        return np.stack([np.where(diag, np.nan, float(h)) for h in horizons])

    return fn, obs, tgt


def ldp_accountant(*, noise_multiplier: float, num_nodes: int, observers=None, targets=None,
                   curve_horizons=None, alternatives=None) -> PairwiseAccountant:
    """LDP baseline as a pairwise accountant (``Δ² = T``, sound; the LDP curve of Fig. 2)."""
    fn, obs, tgt = ldp_delta_sq_fn(num_nodes, observers, targets)
    return PairwiseAccountant(fn, noise_multiplier=noise_multiplier, view="ldp",
                              sensitivity_mode="ldp", observers=obs, targets=tgt,
                              curve_horizons=curve_horizons, alternatives=alternatives)


def fedavg_noise_multiplier(target_epsilon: float, *, rounds: int, delta: float) -> float:
    """σ of full-batch DP-FedAvg at ``target_epsilon``: ``μ = √T / σ`` (analytic Gaussian)."""
    T = validate.positive_int("rounds", rounds)
    return math.sqrt(T) * conversions.gaussian_noise_multiplier(target_epsilon, delta)


def fedavg_accountant(*, noise_multiplier: float) -> report.Accountant:
    """Full-batch DP-FedAvg with trusted aggregation: T composed ``GaussianDpEvent(σ)`` per
    record (``μ = √T / σ``, App. F.2; the paper leaves this implicit)."""
    sigma = validate.non_negative("noise_multiplier", noise_multiplier)
    if sigma == 0:
        return report.NonPrivateAccountant(unit="record")
    return report.EventAccountant.repeating(events.gaussian(sigma), unit="record")


# ------------------------------------------------------------------------------ report curves

# A gossip run's summary holds one :func:`jaxfl.accounting.report.reports` entry per sensitivity
# mode: mode -> its key in the summary.
REPORT_KEYS = {"paper": "privacy_paper", "certified": "privacy"}


def _curve(summary: dict, key: str) -> dict:
    try:
        return summary[key]["details"]["curve"]
    except (KeyError, TypeError):
        raise validate.JaxflValueError(
            f"Expected summary[{key!r}] to be a pairwise report with a curve (an accountant with "
            f"curve_horizons), got summary keys {sorted(summary)}.") from None


def observer_curves(summary: dict, neighbours: int = 0) -> list[dict]:
    """Per observer, Δ²/T per horizon in both modes of :data:`REPORT_KEYS`, read from the
    pairwise reports of a one-target run (:meth:`PairwiseAccountant.report` with
    ``curve_horizons`` and at most 16 pairs, so that each pair's Δ² is listed; Fig. 1): one
    dict per observer in the report's order (its first ``neighbours`` the target's neighbours):
    ``observer``, ``kind`` (``neighbour`` / ``non-neighbour``), ``T`` (the paper mode's
    horizons), and per mode ``<mode>_over_T`` (None where not finite) and ``<mode>_T``.

    Raises:
      JaxflValueError: a report without its curve, or a curve without its pairs' Δ².
    """
    cur = {m: _curve(summary, key) for m, key in REPORT_KEYS.items()}
    if any("delta_sq" not in c for c in cur.values()):
        raise validate.JaxflValueError(
            f"Expected each pair's delta_sq in the curves (at most {_MAX_LISTED_PAIRS} pairs).")
    curves = []
    for a, i in enumerate(summary["privacy"]["details"]["observers"]):
        out = {"observer": i, "kind": "neighbour" if a < neighbours else "non-neighbour",
               "T": cur["paper"]["T"]}
        for m, c in cur.items():
            vals = np.asarray(c["delta_sq"], float)[:, a, 0] / np.asarray(c["T"], float)
            out[f"{m}_over_T"] = [None if not np.isfinite(v) else float(v) for v in vals]
            out[f"{m}_T"] = c["T"]
        curves.append(out)
    return curves


def view_series(summaries) -> dict:
    """The mean pairwise ε per horizon of each view and mode (Fig. 2), read from the pairwise
    reports of runs over views (``summaries``: one run summary each): ``"<view>_<mode>"``
    (``"ldp"`` for the local-DP view) -> ``T``, ``mean_eps``, ``mode`` and
    ``mean_delta_sq_over_T``. The exact plain-message view (``tm4_exact_paper``) is kept at
    the horizons of ``tm3_certified`` only (it is compared with the other views there).

    Raises:
      JaxflValueError: a report without its curve.
    """
    series = {}
    for s in summaries:
        view = s["privacy"]["details"]["view"]
        for mode, key in REPORT_KEYS.items():
            if key in s:
                c = _curve(s, key)
                series["ldp" if view == "ldp" else f"{view}_{mode}"] = {
                    "T": c["T"], "mean_eps": c["mean_epsilon"], "mode": mode,
                    "mean_delta_sq_over_T": [d / t for d, t in zip(c["mean_delta_sq"], c["T"],
                                                                   strict=True)]}
    if "tm4_exact_paper" in series:
        d, hs = series["tm4_exact_paper"], series["tm3_certified"]["T"]
        d["mean_eps"], d["T"] = [d["mean_eps"][d["T"].index(h)] for h in hs], hs
    return series
