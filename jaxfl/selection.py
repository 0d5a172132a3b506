"""Private hyperparameter selection: a sweep whose choice of the best run is accounted.

Each point of a sweep reports its own epsilon. Running many points on the same private data and
keeping the best is a different mechanism: the choice leaks too. Liu and Talwar (STOC 2019) and
Papernot and Steinke (ICLR 2022, arXiv 2110.03620) bound it when the *number of runs is random*:
run a DP mechanism ``Q`` a random number ``K`` of times (each run with fresh randomness and
hyperparameters drawn afresh from a fixed distribution), release only the best run. The bound
depends on the distribution of ``K`` (family and mean) and on ``Q``'s Renyi DP curve; it is
dp-accounting's ``RepeatAndSelectDpEvent(event, mean, shape)``, composed by its RDP accountant
(the PLD accountant does not support it):

* ``poisson`` (shape ``inf``): K ~ Poisson(mean); K = 0 is possible (nothing is released);
* ``geometric`` (shape 1): P[K = k] = gamma (1 - gamma)^(k - 1), k >= 1;
* ``logarithmic`` (shape 0): P[K = k] = (1 - gamma)^k / (k log(1 / gamma)), k >= 1;
* ``negative_binomial`` (0 < shape < inf): the negative binomial law (shape, gamma)
  conditioned on K >= 1 (Papernot and Steinke's truncated negative binomial);

with ``gamma`` solved from the mean (:func:`tnb_gamma`). The law and its accounting live in
:mod:`jaxfl.accounting.selection` (float64, no JAX); this module runs the procedure.

:func:`run` (reached through ``jaxfl.sweep.run_sweep(..., selection=Selection(...))``) treats
the sweep's points as the declared grid: it draws ``K`` and, for each of the ``K`` runs, a grid
point (uniformly, or with the declared ``weights``) and a fresh training seed, all from
``host_rng(selection.seed, "selection", ...)`` (the seed is written to ``selection.json``); the
``K`` runs execute as one sweep (vmapped where shapes agree); each run's score is read from its
final metrics record; the best run is returned with the epsilon of the whole procedure beside
each run's own epsilon.

The score. ``Q`` must be DP *including the score it outputs*. A score computed on public data
(``score_data="public"``) is post-processing of the trained model, so ``Q``'s event is the
training's. A score computed on private data (e.g. validation accuracy on held-out examples of
the same users) is a release of its own: the selection adds Gaussian noise of std
``score_noise_multiplier * score_sensitivity`` to it (float64 NumPy, host) and ``Q``'s event is
the training's composed with ``GaussianDpEvent(score_noise_multiplier)``. The sensitivity
(how much one protected unit can move the score) is the caller's declaration.

The per-run event. ``Q`` draws its hyperparameters from the grid, so its RDP curve is bounded by
the pointwise maximum of the grid points' curves (Renyi divergence is quasi-convex). The
selection uses the grid point whose event's RDP curve dominates every other point's at every
order (e.g. all points share the event when only learning rates and clip norms vary, since the
noise multiplier is relative to the clip norm) and refuses a grid without one. It refuses
accountants it cannot back: non-private runs, paper modes or unsound accountants, accountants
without a DpEvent (e.g. per-pair curves), events the RDP accountant does not support (PLD-only
events such as a mixture of Gaussians), and accountants whose headline exceeds their DpEvent's
RDP epsilon (the event would not describe the whole mechanism).

What is covered. The procedure's epsilon covers the release of the selected run (its model, its
hyperparameters, its noisy score) and nothing else: the other runs' models, metrics and scores
sit in the sweep's workdir and must not be published (each on its own costs its own epsilon;
all of them cost the composition). The noise sampler's truncation delta adds up over the runs:
``truncation_delta = mean * (one run's)`` (a union bound in expectation).

Example Usage:
  >>> from jaxfl.accounting import events
  >>> run_event = events.dp_sgd(noise_multiplier=1.0, sampling_rate=0.01, steps=1000)
  >>> one = procedure_epsilon(run_event, 1e-5, "geometric", 1.0)
  >>> many = procedure_epsilon(run_event, 1e-5, "geometric", 10.0)
  >>> one < many
  True
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dp_accounting
import numpy as np

from jaxfl import checkpoint, metrics, random, validate
from jaxfl.accounting import accountants, events, recipes, report
from jaxfl.accounting.selection import (  # the law of K and its accounting, re-exported
    FAMILIES,
    check_mean,
    draw_runs,
    pmf,
    procedure_epsilon,
    rdp_curve,
    repeat_and_select,
    shape_of,
    tnb_gamma,
)

SCORE_DATA = ("private", "public")
RECORD = "selection.json"

NOTE_PRIVATE = ("each point's epsilon is that point's alone: choosing among the points with "
                "scores computed on private data costs more (up to the composition of every "
                "point compared); for an accounted choice use selection= "
                "(jaxfl.selection.Selection, RepeatAndSelectDpEvent)")
NOTE_PUBLIC = ("declared a public tuning split: the points were trained and compared on data "
               "declared public, so choosing among them spends none of the private data's "
               "budget; each point's epsilon is what its training would cost on private data "
               "(the declaration is the caller's)")


def sweep_note(public_split: bool) -> str:
    """The line a sweep without ``selection`` reports about choosing among its points."""
    return NOTE_PUBLIC if public_split else NOTE_PRIVATE


# ----------------------------------------------------------------------------- the record

@dataclasses.dataclass(frozen=True)
class Selection:
    """A private selection: the law of the number of runs and the score.

    Attributes:
      family: law of the number of runs ``K``: ``"poisson"``, ``"geometric"``,
        ``"logarithmic"`` or ``"negative_binomial"`` (module docstring).
      mean: the mean number of runs (>= 1).
      score: the metric of each run's final record to compare (e.g. ``"accuracy"``).
      seed: the seed of every draw of the procedure (``K``, each run's grid point and training
        seed, the score noise); written to the sweep's ``selection.json``.
      shape: the shape of ``negative_binomial`` (in (0, inf)); None for the other families.
      weights: the declared distribution over the grid (one weight per sweep point; None:
        uniform). Each run draws its point independently (with replacement).
      maximize: select the largest score (False: the smallest, e.g. a loss).
      score_data: ``"private"`` (the score reads private data: noised, and its release
        accounted) or ``"public"`` (the score reads only public data: post-processing).
      score_sensitivity: how far one protected unit can move the score (private scores).
      score_noise_multiplier: std of the score's Gaussian noise over ``score_sensitivity``
        (private scores).
    """

    family: str
    mean: float
    score: str
    seed: int = 0
    shape: float | None = None
    weights: tuple[float, ...] | None = None
    maximize: bool = True
    score_data: str = "private"
    score_sensitivity: float | None = None
    score_noise_multiplier: float | None = None

    def __post_init__(self):
        shape_of(self.family, self.shape)
        object.__setattr__(self, "mean", check_mean(self.mean))
        if not isinstance(self.score, str) or not self.score:
            raise validate.JaxflValueError(
                f"Expected score to name a metric, got score={self.score!r}.")
        validate.positive_int("seed", self.seed, minimum=0)
        validate.one_of("score_data", self.score_data, SCORE_DATA)
        if self.score_data == "private":
            for name in ("score_sensitivity", "score_noise_multiplier"):
                if getattr(self, name) is None:
                    raise validate.PrivacyParameterError(
                        f"Expected {name} for a score computed on private data "
                        f"(score_data='private'): the score is released with the selected run "
                        f"and must be noised and accounted; got {name}=None (declare "
                        f"score_data='public' if the score reads only public data).")
                validate.positive(name, getattr(self, name))
        else:
            for name in ("score_sensitivity", "score_noise_multiplier"):
                if getattr(self, name) is not None:
                    raise validate.JaxflValueError(
                        f"Expected {name}=None for a public score, got {getattr(self, name)!r}.")
        if self.weights is not None:
            w = tuple(validate.non_negative(f"weights[{i}]", x, validate.JaxflValueError)
                      for i, x in enumerate(self.weights))
            if not w or sum(w) <= 0:
                raise validate.JaxflValueError(
                    f"Expected weights with a positive sum, got weights={self.weights!r}.")
            object.__setattr__(self, "weights", w)

    @property
    def event_shape(self) -> float:
        """The ``RepeatAndSelectDpEvent`` shape of :attr:`family`."""
        return shape_of(self.family, self.shape)

    def to_json(self) -> dict:
        return metrics.jsonable({**dataclasses.asdict(self), "event_shape": self.event_shape})


@dataclasses.dataclass(frozen=True)
class Plan:
    """The procedure's draws (a pure function of the selection's seed and the grid size)."""

    num_runs: int  # K
    candidates: tuple[int, ...]  # grid index of each run
    seeds: tuple[int, ...]  # training seed of each run (distinct)
    score_noise: tuple[float, ...]  # standard normal draw of each run's score noise


def _distinct_seeds(rng: np.random.Generator, k: int, block: int = 256) -> np.ndarray:
    """``k`` distinct seeds: the first distinct values of a stream read in fixed blocks, so
    run ``i``'s seed does not depend on ``k``."""
    out: dict[int, None] = {}
    while len(out) < k:
        for s in rng.integers(0, 2**31 - 1, size=block):
            out.setdefault(int(s))
    return np.asarray(list(out)[:k], np.int64)


def draw(selection: Selection, grid_size: int) -> Plan:
    """``K``, each run's grid point, training seed and score-noise draw, from
    ``host_rng(selection.seed, "selection", i)`` streams (0: K, 1: grid points, 2: seeds, 3:
    score noise).

    Run ``i``'s draws do not depend on ``K`` (nor on the law of ``K``): selections with the
    same seed share their first runs, so a second selection in the same workdir (another mean,
    to compare) retrains none of them. Such selections are alternatives, not releases to
    combine: two of them released together are not covered by either's epsilon (nor by their
    sum, since they share runs)."""
    grid_size = validate.positive_int("grid_size", grid_size)
    if selection.weights is not None and len(selection.weights) != grid_size:
        raise validate.ShapeError(
            f"Expected one weight per sweep point ({grid_size}), got "
            f"{len(selection.weights)} weights.")
    k = draw_runs(selection.family, selection.mean, random.host_rng(selection.seed,
                  "selection", 0), shape=selection.shape)
    p = None if selection.weights is None else np.asarray(selection.weights) / sum(
        selection.weights)
    cands = random.host_rng(selection.seed, "selection", 1).choice(grid_size, size=k, p=p)
    seeds = _distinct_seeds(random.host_rng(selection.seed, "selection", 2), k)
    noise = random.host_rng(selection.seed, "selection", 3).standard_normal(k)
    return Plan(num_runs=int(k), candidates=tuple(int(c) for c in cands),
                seeds=tuple(int(s) for s in seeds), score_noise=tuple(float(z) for z in noise))


@dataclasses.dataclass(frozen=True)
class RunPrivacy:
    """The per-run mechanism ``Q`` of a grid."""

    event: dp_accounting.DpEvent  # Q's event (training, composed with the score's release)
    grid_index: int  # the grid point whose event dominates
    delta: float
    epsilon: float  # Q's RDP epsilon at delta
    truncation_delta: float | None
    truncation_note: str


def run_privacy(specs: Sequence[Any], selection: Selection) -> RunPrivacy:
    """``Q``'s event for the grid points' ``RunSpec``s (module docstring), or a clear refusal.

    Raises:
      JaxflValueError: a grid point without an accountant the selection can back, points at
        different deltas, or no point whose RDP curve dominates the others'.
    """
    curves, evs, deltas, truncs = [], [], set(), []
    for i, spec in enumerate(specs):
        if spec.algorithm is None:
            raise validate.JaxflValueError(
                f"Sweep point {i} is accounting-only (no training): there is nothing to select.")
        if spec.delta is None:
            raise validate.JaxflValueError(
                f"Sweep point {i} has delta=None (a non-private run): private selection needs "
                f"each run's DpEvent at a delta.")
        if spec.eval_fn is None:
            raise validate.JaxflValueError(
                f"Sweep point {i} has no eval_fn: the selection score {selection.score!r} is "
                f"read from each run's final metrics.")
        acc = report.of(spec.algorithm)
        if not acc.private:
            raise validate.JaxflValueError(
                f"Sweep point {i} is not private (accountant {acc.name!r}): nothing to account.")
        if acc.mode != "strict" or not acc.sound:
            raise validate.JaxflValueError(
                f"Sweep point {i}'s accountant is in mode {acc.mode!r} (sound={acc.sound}): "
                f"private selection composes only a sound strict-mode DpEvent.")
        event = acc.dp_event(spec.rounds)
        if event is None:
            raise validate.JaxflValueError(
                f"Sweep point {i}'s accountant ({type(acc).__name__}, {acc.name!r}) has no "
                f"DpEvent (its epsilon comes from its own curve): RepeatAndSelectDpEvent needs "
                f"the per-run event, so this sweep cannot be selected privately.")
        curve = rdp_curve(event, f"sweep point {i}'s event")
        # the RDP headline where the accountant offers a choice (its PLD is not needed here)
        rep = acc.configured(per_round="rdp", final="rdp").report(spec.rounds, spec.delta)
        eps_rdp = recipes.epsilon_from_rdp(recipes.DEFAULT_ORDERS, curve, spec.delta,
                                           "improved")[0]
        claimed = rep.details.get("epsilon_rdp", rep.epsilon)  # RDP vs RDP where reported
        if claimed is None or claimed > eps_rdp * (1 + 1e-9) + 1e-12:
            raise validate.JaxflValueError(
                f"Sweep point {i}'s accountant reports epsilon={claimed!r} above its "
                f"DpEvent's RDP epsilon {eps_rdp!r}: the event does not describe the whole "
                f"mechanism, so it cannot stand for the run.")
        if selection.score_data == "private":  # RDP adds up under composition
            score = events.gaussian(selection.score_noise_multiplier)
            event = events.composed([event, score])
            curve = curve + rdp_curve(score, "the score's Gaussian release")
        curves.append(curve)
        evs.append(event)
        deltas.add(float(spec.delta))
        truncs.append((rep.truncation_delta, rep.truncation_note))
    if len(deltas) != 1:
        raise validate.JaxflValueError(
            f"Expected every sweep point at one delta, got deltas {sorted(deltas)}.")
    delta = deltas.pop()
    stacked = np.stack(curves)
    top = [i for i in range(len(curves)) if np.all(stacked[i] >= stacked.max(axis=0))]
    if not top:
        eps = [recipes.epsilon_from_rdp(recipes.DEFAULT_ORDERS, c, delta, "improved")[0]
               for c in curves]
        raise validate.JaxflValueError(
            f"No sweep point's event dominates the others' RDP curves at every order (per-point "
            f"RDP epsilons {[round(e, 4) for e in eps]}): the per-run mechanism draws its "
            f"point from the grid, so its event must bound every point's; sweep privacy "
            f"parameters (noise multiplier, sampling rate, rounds) only in a nested order, or "
            f"select within groups of equal privacy.")
    j = top[0]
    if any(t is None for t, _ in truncs):
        trunc, note = None, "not bounded for some grid point: " + next(
            n for t, n in truncs if t is None)
    else:
        trunc = max(t for t, _ in truncs)
        note = "the largest over the grid points (one run)"
    return RunPrivacy(event=evs[j], grid_index=j, delta=delta,
                      epsilon=recipes.epsilon_from_rdp(recipes.DEFAULT_ORDERS, curves[j], delta,
                                                       "improved")[0],
                      truncation_delta=trunc, truncation_note=note)


@dataclasses.dataclass(frozen=True)
class SelectionResult:
    """The outcome of a private selection.

    Attributes:
      selection: the :class:`Selection`.
      num_runs: the drawn ``K``.
      points: the ``K`` runs (``jaxfl.sweep.Point``; their workdirs are under ``points/``).
      candidates: the grid index of each run.
      selected: the index (into ``points``) of the selected run, or None when ``K = 0``.
      selected_point: that run's ``Point`` (its hyperparameters in ``overrides``), or None.
      selected_score: the selected run's released score (noised when private), or None.
      epsilon: the epsilon of the whole procedure at ``delta`` (RDP, RepeatAndSelectDpEvent).
      delta: the delta of every epsilon here.
      run_epsilon: the per-run mechanism's RDP epsilon (the dominating grid point, with the
        score's release when private).
      point_epsilons: each run's own headline epsilon (its accountant's, ``summary.json``).
      dp_event: the procedure's ``RepeatAndSelectDpEvent``.
      truncation_delta: the delta the noise sampler's truncation adds over the procedure
        (``mean`` x one run's; None when a run's is not bounded).
      scores: every run's score as compared (noised when private). NOT covered by
        ``epsilon``: for analysis only, never to be published.
      sweep: the underlying ``jaxfl.sweep.SweepResult``.
    """

    selection: Selection
    num_runs: int
    points: list
    candidates: tuple[int, ...]
    selected: int | None
    selected_point: Any
    selected_score: float | None
    epsilon: float
    delta: float
    run_epsilon: float
    point_epsilons: list
    dp_event: dp_accounting.DpEvent
    truncation_delta: float | None
    truncation_note: str
    scores: list
    sweep: Any = None

    @property
    def total_delta(self) -> float | None:
        return None if self.truncation_delta is None else self.delta + self.truncation_delta

    @property
    def note(self) -> str:
        """One line on what was selected and what it cost."""
        cost = (f"epsilon={self.epsilon:.6g} at delta={self.delta:g} for the whole procedure "
                f"(RDP, RepeatAndSelectDpEvent)")
        if self.num_runs == 0:
            return f"private selection drew K = 0 runs: nothing is released; {cost}"
        if self.selected is None:
            return (f"private selection of {self.num_runs} runs interrupted before the choice "
                    f"(rerun to resume); {cost}")
        return (f"private selection of 1 of {self.num_runs} runs: {cost}; it covers the "
                f"selected run only")

    def record(self) -> dict:
        """What ``selection.json`` holds: the procedure, its draws and the selected run (not
        the other runs' scores)."""
        sel = None if self.selected is None else self.points[self.selected]
        return metrics.jsonable({
            "selection": self.selection.to_json(),
            "key": {"seed": self.selection.seed, "stream": "selection",
                    "draws": "host_rng(seed, 'selection', i): 0 K, 1 grid points, 2 seeds, "
                             "3 score noise"},
            "num_runs": self.num_runs, "candidates": list(self.candidates),
            "run_ids": [p.id for p in self.points],
            "selected": self.selected,
            "selected_point": None if sel is None else {"id": sel.id,
                                                        "overrides": sel.overrides},
            "selected_score": self.selected_score,
            "epsilon": self.epsilon, "delta": self.delta, "accountant": "rdp",
            "run_epsilon": self.run_epsilon, "point_epsilons": self.point_epsilons,
            "dp_event": events.to_json(self.dp_event),
            "truncation_delta": self.truncation_delta, "truncation_note": self.truncation_note,
            "total_delta": self.total_delta,
            "covers": "the selected run only (model, hyperparameters, released score); the "
                      "other runs' outputs are not covered and must not be published"})


def _score(summary: dict, name: str, index: int) -> float:
    final = summary.get("final") or {}
    if name not in final:
        raise validate.JaxflValueError(
            f"Run {index}'s final record has no metric {name!r} (it has {sorted(final)}).")
    value = final[name]
    try:
        return float(value)
    except (TypeError, ValueError):  # "nan"/"inf" strings of jsonable, or a non-number
        raise validate.JaxflValueError(
            f"Run {index}'s metric {name!r} is not a number: {value!r}.") from None


def best_of(scores, valid=None, maximize: bool = True) -> np.ndarray:
    """Index of the best score along the last axis among the ``valid`` entries (int64, -1
    where none is valid): the first on ties; non-finite scores lose to every finite one."""
    scores = np.asarray(scores, np.float64)
    valid = np.ones(scores.shape, bool) if valid is None else np.asarray(valid, bool)
    validate.shape("valid", valid, scores.shape)
    s = scores if maximize else -scores
    rank = np.where(valid & np.isfinite(s), s, -np.inf)
    idx = np.argmax(rank, axis=-1)
    # rows whose valid scores are all non-finite: the first valid run
    idx = np.where(np.isfinite(np.max(rank, axis=-1)), idx, np.argmax(valid, axis=-1))
    return np.where(valid.any(axis=-1), idx, -1).astype(np.int64)


def best(scores, maximize: bool = True) -> int | None:
    """Index of the best score (:func:`best_of`), None for no scores."""
    scores = np.asarray(scores, np.float64)
    if scores.size == 0:
        return None
    return int(best_of(scores, maximize=maximize))


def run(points: Sequence[Any], build: Callable[[Any], Any], workdir, selection: Selection,
        run_sweep: Callable[..., Any], reseed: Callable[[Any, int, int], Any]
        ) -> SelectionResult:
    """Runs a private selection over the grid ``points`` (see the module docstring).

    Args:
      points: the declared grid (``jaxfl.sweep.expand``); its configs need a ``seed`` field.
      build: ``config -> RunSpec``.
      workdir: the sweep directory (the ``K`` runs' ``points/<id>/`` and ``selection.json``).
      selection: the :class:`Selection`.
      run_sweep: ``(points, build, workdir) -> SweepResult`` (``jaxfl.sweep.run_sweep`` with
        the caller's execution options).
      reseed: ``(grid point, run index, seed) -> Point``: the run of a grid point with its
        own training seed (from :mod:`jaxfl.sweep`, which calls this module).
    """
    if not isinstance(selection, Selection):
        raise validate.JaxflValueError(
            f"Expected selection to be a jaxfl.selection.Selection, got {selection!r}.")
    points = list(points)
    if not points:
        raise validate.JaxflValueError("Expected at least one grid point, got none.")
    plan = draw(selection, len(points))
    # Q's privacy, checked on every grid point before any training (each point is built once).
    priv = run_privacy([build(p.config) for p in points], selection)
    event = repeat_and_select(priv.event, selection.family, selection.mean, selection.shape)
    eps = accountants.epsilon(event, priv.delta, accountant="rdp")
    runs = [reseed(points[c], i, s)
            for i, (c, s) in enumerate(zip(plan.candidates, plan.seeds, strict=True))]
    workdir = Path(workdir)
    result = run_sweep(runs, build, workdir) if runs else None
    done = result is None or not result.stopped  # stop_after: resume later, select then
    summaries = [json.loads((workdir / "points" / p.id / "summary.json").read_text())
                 for p in runs] if done else []
    scores = np.array([_score(s, selection.score, i) for i, s in enumerate(summaries)],
                      np.float64)
    if selection.score_data == "private" and done:
        scores = scores + (selection.score_noise_multiplier * selection.score_sensitivity
                           * np.asarray(plan.score_noise, np.float64))
    chosen = best(scores, selection.maximize)
    trunc = None if priv.truncation_delta is None else selection.mean * priv.truncation_delta
    out = SelectionResult(
        selection=selection, num_runs=plan.num_runs, points=runs, candidates=plan.candidates,
        selected=chosen, selected_point=None if chosen is None else runs[chosen],
        selected_score=None if chosen is None else float(scores[chosen]), epsilon=eps,
        delta=priv.delta, run_epsilon=priv.epsilon,
        point_epsilons=[s.get("epsilon") for s in summaries], dp_event=event,
        truncation_delta=trunc,
        truncation_note=f"mean number of runs x one run's ({priv.truncation_note})",
        scores=[float(x) for x in scores], sweep=result)
    if done:
        workdir.mkdir(parents=True, exist_ok=True)
        checkpoint.atomic_write_text(workdir / RECORD, json.dumps(out.record(), indent=2,
                                                                   sort_keys=True))
    return out


__all__ = ["FAMILIES", "Selection", "SelectionResult", "Plan", "RunPrivacy", "draw",
           "draw_runs", "pmf", "tnb_gamma", "shape_of", "repeat_and_select",
           "procedure_epsilon", "run_privacy", "best", "best_of", "run", "sweep_note"]
