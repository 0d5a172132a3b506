"""The privacy half of the algorithm contract: one protocol for every accountant.

Every algorithm builder returns its mechanism together with an :class:`Accountant` built from
the same values (noise multiplier, sampling rate, clip norm, group structure, mixing matrix,
silo/user histogram). The driver (:func:`jaxfl.training.run`, :mod:`jaxfl.sweep`) asks it for

* ``epsilons(rounds, delta)``: the headline epsilon (the worst case over the protected units)
  after each round count in ``rounds``: logged per round in ``metrics.jsonl``;
* ``report(rounds, delta)``: a :class:`PrivacyReport`: the headline, optional per-unit values
  (an N x N pairwise matrix, per user, per subject, per node pair), the unit protected, the
  accountant and recipe, the mode (``strict`` or ``paper``) and whether the number is sound,
  plus the ``dp_accounting.DpEvent`` where one exists: written to ``summary.json``.

Noise sampler and truncation. Every report names the sampler of the privacy noise
(``noise_sampler``) and the delta its bounded float32 support adds (``truncation_delta``, see
:mod:`jaxfl.accounting.sampler`): the headline epsilon holds at ``total_delta = delta +
truncation_delta``. An accountant gets it from a :class:`~jaxfl.accounting.sampler.NoiseSpec`
its builder attaches (``accountant.noise_spec``: ratio, releases per round), else from its
DpEvent (every Gaussian release counted); where neither bounds it, ``truncation_delta`` is
None and ``truncation_note`` says why (never a silent 0).

Modes. Where a paper's published analysis is unsound or used another recipe, its accountant
offers both: ``strict`` (sound; the default) and ``paper`` (reproduces the published numbers,
``sound=False`` when the analysis is unsound). ``other_modes()`` returns the accountants of the
modes not selected, so every output can show both, each labelled.

Accounting is float64 NumPy on the host; nothing here imports JAX.

Example Usage:
  >>> from jaxfl.accounting import events, report
  >>> step = events.poisson_gaussian(sampling_rate=0.01, noise_multiplier=1.1)
  >>> acc = report.EventAccountant.repeating(step, unit="example")
  >>> r = acc.report(1000, 1e-5)
  >>> r.unit, r.mode, r.sound, round(r.epsilon, 2)
  ('example', 'strict', True, 1.52)
  >>> [round(float(e), 2) for e in acc.epsilons([100, 1000], 1e-5)]
  [0.96, 1.71]
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import math
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import dp_accounting
import numpy as np

from jaxfl import validate
from jaxfl.accounting import accountants, events, sampler

MODES = ("strict", "paper")
#: The fields an accountant records about the mechanism it was built from; frozen once built
#: (:meth:`Accountant.replace` and :meth:`Accountant.for_mechanism` return new accountants).
PRIVACY_FIELDS = ("privatizer", "noise_spec", "hparams")


@runtime_checkable
class Mechanism(Protocol):
    """What an accountant reads of the privatizer it was built from
    (:class:`jaxfl.privatizer.Privatizer`; a protocol, since accounting imports no JAX)."""

    clip_norm: float
    noise_multiplier: float

    @property
    def hparams(self) -> Mapping[str, float]: ...

    def sensitivity(self, hp: Mapping | None = None, *, clip=None): ...

    def std(self, hp: Mapping | None = None, *, clip=None, noise_multiplier=None): ...


@dataclasses.dataclass(frozen=True)
class PrivacyReport:
    """What an accountant certifies after ``rounds`` rounds at ``delta``.

    Attributes:
      epsilon: the headline: the worst case over the protected units (``inf`` when
        non-private).
      delta: the delta of every epsilon in the report.
      rounds: rounds accounted for.
      unit: the protected unit (what one neighbouring change adds, removes or replaces), e.g.
        ``"client"``, ``"user"``, ``"record"``, ``"subject"``, ``"silo"``, ``"node"``,
        ``"worker"``.
      accountant: the accountant and recipe that computed ``epsilon`` (e.g. ``"pld"``,
        ``"rdp"``, ``"opacus-rdp"``, ``"pwp-rdp"``, ``"gdp"``).
      mode: ``"strict"`` (sound, the default) or ``"paper"`` (the published recipe).
      sound: whether ``epsilon`` is a proven upper bound for ``unit`` (False for a paper mode
        whose analysis is unsound, or a heuristic).
      per_unit: optional per-unit epsilons: shape ``[N]`` (per user, subject, worker) or
        ``[N, N]`` (pairwise: observer x target); ``inf`` marks no guarantee, ``nan`` a pair
        that is not accounted (e.g. a unit and itself).
      per_unit_axes: names of ``per_unit``'s axes (e.g. ``("observer", "target")``).
      dp_event: the ``dp_accounting.DpEvent`` the headline is computed from, where one exists.
      details: further labelled numbers (e.g. ``{"epsilon_rdp": ..., "group_size": 8}``).
      noise_sampler: the sampler of the privacy noise (:data:`jaxfl.accounting.sampler.NAME`).
      truncation_delta: the delta the sampler's bounded support adds over ``rounds`` rounds
        (:mod:`jaxfl.accounting.sampler`), or None when it is not bounded.
      truncation_note: how ``truncation_delta`` was obtained, or why it is None.
    """

    epsilon: float
    delta: float
    rounds: int
    unit: str
    accountant: str
    mode: str = "strict"
    sound: bool = True
    per_unit: np.ndarray | None = None
    per_unit_axes: tuple[str, ...] = ()
    dp_event: dp_accounting.DpEvent | None = None
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    noise_sampler: str = sampler.NAME
    truncation_delta: float | None = None
    truncation_note: str = ""

    def __post_init__(self):
        validate.one_of("mode", self.mode, MODES)
        if self.truncation_delta is None and not self.truncation_note:
            object.__setattr__(self, "truncation_note",
                               "not bounded: the accountant gave no noise ratio or DpEvent")
        if self.truncation_delta is not None:
            object.__setattr__(self, "truncation_delta", float(self.truncation_delta))
        if self.per_unit is not None:
            pu = np.asarray(self.per_unit, dtype=np.float64)
            if len(self.per_unit_axes) != pu.ndim:
                raise validate.ShapeError(
                    f"Expected per_unit_axes naming each of the {pu.ndim} axes of per_unit, "
                    f"got {self.per_unit_axes!r}.")
            object.__setattr__(self, "per_unit", pu)
        object.__setattr__(self, "epsilon", float(self.epsilon))

    @property
    def total_delta(self) -> float | None:
        """``delta + truncation_delta``: the delta the headline epsilon holds at (None when the
        truncation delta is not bounded)."""
        return None if self.truncation_delta is None else self.delta + self.truncation_delta

    def to_json(self) -> dict:
        """A JSON-able dict (``inf`` as the string ``"inf"``; the DpEvent as nested dicts)."""
        out = {"epsilon": _num(self.epsilon), "delta": self.delta, "rounds": self.rounds,
               "unit": self.unit, "accountant": self.accountant, "mode": self.mode,
               "sound": self.sound, "details": jsonable(dict(self.details)),
               "noise_sampler": self.noise_sampler, "truncation_delta": self.truncation_delta,
               "truncation_note": self.truncation_note, "total_delta": self.total_delta}
        if self.per_unit is not None:
            out["per_unit"] = jsonable(self.per_unit)
            out["per_unit_axes"] = list(self.per_unit_axes)
        if self.dp_event is not None:
            out["dp_event"] = events.to_json(self.dp_event)
        return out


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def jsonable(x):
    """``x`` in JSON's types, for run records and reports: dicts (keys as strings), lists and
    tuples (as lists), dataclass instances (as dicts), NumPy arrays and scalars and 0-d arrays of
    any library with ``.item()`` (as numbers or nested lists); a non-finite float becomes the
    string ``"inf"``, ``"-inf"`` or ``"nan"``. Anything else is returned as it is."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return jsonable(dataclasses.asdict(x))
    if isinstance(x, np.generic | np.ndarray):
        return jsonable(np.asarray(x).tolist())
    if hasattr(x, "item") and callable(x.item) and getattr(x, "shape", None) == ():
        return jsonable(x.item())  # a 0-d array of another library (JAX)
    if isinstance(x, float):
        return _num(x)
    return x


def check_rounds(rounds) -> np.ndarray:
    """``rounds`` as a 1-D int64 array of non-negative round counts."""
    arr = np.atleast_1d(np.asarray(rounds))
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or (
            arr < 0).any():
        raise validate.JaxflValueError(
            f"Expected a non-empty sequence of non-negative integer round counts, got {rounds!r}.")
    return arr.astype(np.int64)


class Accountant(abc.ABC):
    """Base class of every accountant (see the module docstring).

    Subclasses implement :meth:`epsilons` and set ``unit``, ``name`` (the accountant/recipe
    label), ``mode`` and ``sound``; they override :meth:`report` to add per-unit values, a
    DpEvent or details, and :meth:`other_modes` when a paper mode exists.
    """

    unit: str = "client"
    name: str = "unknown"
    mode: str = "strict"
    sound: bool = True
    private: bool = True
    #: How the privacy noise enters (set by the builder); None: from :meth:`dp_event`.
    noise_spec: sampler.NoiseSpec | None = None
    #: The privacy hyperparameters this accountant was built from (name -> value, e.g.
    #: ``noise_multiplier``, ``clip_norm``, ``sampling_rate``): an algorithm's ``apply``
    #: refuses any other value for them (:func:`jaxfl.algorithms.base.resolve_hparams`).
    hparams: Mapping[str, float] = types.MappingProxyType({})

    #: The :class:`jaxfl.privatizer.Privatizer` the accountant was built from (None for a
    #: non-private or accounting-only one): the mechanism's clip norm, noise multiplier,
    #: sensitivity and noise std.
    privatizer: Mechanism | None = None
    #: When every round is the same mechanism with a DpEvent, that round's event (curves over
    #: rounds then cost one RDP evaluation); else None.
    round_event: dp_accounting.DpEvent | None = None

    @property
    def per_round_method(self) -> str:
        """The method of :meth:`epsilons` (the per-round epsilon's label in the logs)."""
        return self.name

    def configured(self, *, per_round: str = "rdp", final: str | None = "pld") -> Accountant:
        """This accountant with the driver's per-round and final methods where it offers a
        choice (a DpEvent accountant: RDP or PLD); ``self`` otherwise."""
        del per_round, final  # no choice: one recipe
        return self

    def summary_fields(self, privacy: dict) -> dict:
        """Fields a run's ``summary.json`` adds next to the report ``privacy`` (JSON): none by
        default."""
        del privacy
        return {}

    def __setattr__(self, name, value):
        if name in PRIVACY_FIELDS:
            raise AttributeError(
                f"An accountant is frozen: {name!r} is set when it is built; use "
                f"acc.derive({name}=...) or acc.for_mechanism(privatizer, ...) for a new one.")
        super().__setattr__(name, value)

    def derive(self, **changes) -> Accountant:
        """A new accountant: this one with some of :data:`PRIVACY_FIELDS` changed
        (``privatizer``, ``noise_spec``, ``hparams``: a mapping, its values as floats); the
        others are kept and ``self`` is left as it is."""
        unknown = sorted(set(changes) - set(PRIVACY_FIELDS))
        if unknown:
            raise validate.JaxflValueError(
                f"Expected changes among {PRIVACY_FIELDS} for a {type(self).__name__}, got "
                f"{unknown}.")
        out = copy.copy(self)
        out._set_privacy_fields(changes)
        return out

    def _set_privacy_fields(self, changes: Mapping[str, Any]) -> None:
        for name, value in changes.items():
            if name == "hparams":
                value = types.MappingProxyType({k: float(v) for k, v in dict(value).items()})
            object.__setattr__(self, name, value)

    def for_mechanism(self, privatizer: Mechanism, **participation: float) -> Accountant:
        """A new accountant built from ``privatizer``: it records the privatizer and, as
        :attr:`hparams`, the privatizer's values (clip norm, noise multiplier) plus the
        participation scheme's (``participation``, e.g. ``sampling_rate=q``). ``self`` is
        left as it is."""
        return self.derive(privatizer=privatizer,
                           hparams={**privatizer.hparams, **participation})

    def truncation(self, rounds: int) -> tuple[float | None, str]:
        """``(truncation_delta, note)`` after ``rounds`` rounds (module docstring)."""
        rounds = int(rounds)
        if not self.private:
            return None, "not private: no noise"
        spec = self.noise_spec
        try:
            if spec is not None:
                return spec.delta(rounds), spec.describe(rounds)
            if rounds == 0:
                return 0.0, "no release yet"
            event = self.dp_event(rounds)
            if event is None:
                return None, "not bounded: the accountant gave no noise ratio or DpEvent"
            rel = sampler.gaussian_releases(event)
            value = sampler.event_truncation_delta(event)
            return value, ("from the DpEvent: " + ", ".join(
                f"{n} releases at r = {r:.6g}" for r, n in rel) + f"; d = {sampler.DIM_CAP}")
        except validate.JaxflValueError as e:  # incl. sampler.Unbounded
            return None, f"not bounded: {e}"

    def _with_truncation(self, rep: PrivacyReport) -> PrivacyReport:
        value, note = self.truncation(rep.rounds)
        return dataclasses.replace(rep, truncation_delta=value, truncation_note=note)

    @abc.abstractmethod
    def epsilons(self, rounds: Sequence[int], delta: float) -> np.ndarray:
        """Headline epsilon after each round count in ``rounds`` (float64, same length)."""

    def report(self, rounds: int, delta: float) -> PrivacyReport:
        """The full report after ``rounds`` rounds."""
        rounds = int(check_rounds([rounds])[0])
        delta = validate.delta(delta)
        eps = float(self.epsilons([rounds], delta)[0])
        return self._with_truncation(PrivacyReport(
            epsilon=eps, delta=delta, rounds=rounds, unit=self.unit, accountant=self.name,
            mode=self.mode, sound=self.sound, dp_event=self.dp_event(rounds)))

    def dp_event(self, rounds: int) -> dp_accounting.DpEvent | None:
        """The ``DpEvent`` of ``rounds`` rounds, where the mechanism has one (else None)."""
        del rounds
        return None

    def other_modes(self) -> dict[str, Accountant]:
        """Accountants of the same mechanism in the modes not selected (``{}`` if none)."""
        return {}


class NonPrivateAccountant(Accountant):
    """No guarantee: epsilon is ``inf`` at every round (FedAvg, DEFAULT baselines)."""

    private = False
    name = "none"

    def __init__(self, unit: str = "client"):
        self.unit = unit

    def epsilons(self, rounds, delta):
        r = check_rounds(rounds)
        return np.where(r == 0, 0.0, np.inf)

    def dp_event(self, rounds):
        return dp_accounting.NonPrivateDpEvent() if rounds else dp_accounting.NoOpDpEvent()


class EventAccountant(Accountant):
    """An accountant for a mechanism with a ``dp_accounting.DpEvent``.

    Args:
      event_fn: ``rounds -> DpEvent`` of the whole run.
      round_event: when every round is the same mechanism, its event (curves over rounds then
        cost one RDP evaluation).
      unit: the protected unit.
      per_round: accountant of the per-round headline (``epsilons``): ``"rdp"`` (fast, an
        upper bound) or ``"pld"``.
      final: accountant of :meth:`report`'s headline: ``"pld"`` (tight, on the bounded grid of
        :func:`~jaxfl.accounting.accountants.bounded_pld_epsilon`) or ``"rdp"``; the report's
        details hold both (``epsilon_rdp``, ``epsilon_pld``; the latter None when the event is
        not PLD-representable, in which case the headline is the RDP value).
      mode, sound: labels (a paper-mode event accountant sets ``mode="paper"``).
      alternatives: accountants of the other modes (see :meth:`Accountant.other_modes`).
    """

    def __init__(self, event_fn: Callable[[int], dp_accounting.DpEvent], *,
                 round_event: dp_accounting.DpEvent | None = None, unit: str = "client",
                 per_round: str = "rdp", final: str = "pld", mode: str = "strict",
                 sound: bool = True, alternatives: Mapping[str, Accountant] | None = None):
        validate.one_of("per_round", per_round, accountants.ACCOUNTANTS)
        validate.one_of("final", final, accountants.ACCOUNTANTS)
        validate.one_of("mode", mode, MODES)
        self.event_fn, self.round_event = event_fn, round_event
        self.unit, self.per_round, self.final = unit, per_round, final
        self.mode, self.sound = mode, sound
        self.name = final
        self._alternatives = dict(alternatives or {})

    @classmethod
    def repeating(cls, round_event: dp_accounting.DpEvent, **kwargs) -> EventAccountant:
        """``rounds`` self-compositions of ``round_event``."""
        return cls(lambda rounds: events.repeated(round_event, rounds), round_event=round_event,
                   **kwargs)

    def replace(self, **changes) -> EventAccountant:
        """A new accountant with some constructor arguments (e.g. ``final="rdp"``) or
        :data:`PRIVACY_FIELDS` changed; the privacy fields not named are kept."""
        fields = {k: changes.pop(k) for k in PRIVACY_FIELDS if k in changes}
        kw = dict(round_event=self.round_event, unit=self.unit, per_round=self.per_round,
                  final=self.final, mode=self.mode, sound=self.sound,
                  alternatives=self._alternatives)
        kw.update(changes)
        out = EventAccountant(self.event_fn, **kw)
        out._set_privacy_fields({"privatizer": self.privatizer, "noise_spec": self.noise_spec,
                                 "hparams": self.hparams, **fields})
        return out

    def dp_event(self, rounds):
        return self.event_fn(int(rounds))

    @property
    def per_round_method(self) -> str:
        return self.per_round

    def configured(self, *, per_round: str = "rdp", final: str | None = "pld"
                   ) -> EventAccountant:
        return self.replace(per_round=per_round, final=final or "rdp")

    def summary_fields(self, privacy: dict) -> dict:
        """``epsilon_rdp``, ``epsilon_pld`` (when the final method is PLD; None when not
        PLD-representable) and ``dp_event``."""
        details = privacy["details"]
        out = {"epsilon_rdp": details["epsilon_rdp"]}
        if self.final == "pld":
            out["epsilon_pld"] = details["epsilon_pld"]
        out["dp_event"] = privacy["dp_event"]
        return out

    def _one(self, rounds: int, delta: float, accountant: str) -> float:
        if rounds == 0:
            return 0.0
        event = self.event_fn(rounds)
        if isinstance(event, dp_accounting.NonPrivateDpEvent):
            return math.inf
        if accountant == "pld":
            return accountants.bounded_pld_epsilon(event, delta)
        return accountants.epsilon(event, delta, accountant=accountant)

    def epsilons(self, rounds, delta):
        r = check_rounds(rounds)
        delta = validate.delta(delta)
        if self.round_event is not None and self.per_round == "rdp":
            out = np.zeros(len(r))
            pos = r > 0
            if pos.any():
                out[pos] = accountants.epsilon_curve(self.round_event, [int(x) for x in r[pos]],
                                                     delta)
            return out
        return np.array([self._one(int(x), delta, self.per_round) for x in r], np.float64)

    def report(self, rounds, delta):
        rounds = int(check_rounds([rounds])[0])
        delta = validate.delta(delta)
        eps_rdp = self._one(rounds, delta, "rdp")
        eps_pld = None
        if self.final == "pld":
            try:
                eps_pld = self._one(rounds, delta, "pld")
            except validate.JaxflValueError:  # not PLD-representable: the RDP value stands
                eps_pld = None
        headline = eps_pld if eps_pld is not None else eps_rdp
        name = "pld" if eps_pld is not None else "rdp"
        return self._with_truncation(PrivacyReport(
            epsilon=headline, delta=delta, rounds=rounds, unit=self.unit, accountant=name,
            mode=self.mode, sound=self.sound, dp_event=self.event_fn(rounds),
            details={"epsilon_rdp": eps_rdp, "epsilon_pld": eps_pld}))

    def other_modes(self):
        return dict(self._alternatives)


class CurveAccountant(Accountant):
    """An accountant given by functions: the headline curve and, optionally, the rest.

    For mechanisms without a DpEvent (pairwise matrices, per-user histograms, subject-level
    bounds, projected Gaussian views) a paper's accounting module builds one of these from its
    own functions.

    Args:
      curve: ``(rounds [K] int64, delta) -> epsilons [K]`` (headline, worst case over units).
      unit, name, mode, sound: labels (see :class:`PrivacyReport`).
      per_unit: optional ``(rounds, delta) -> (array, axes)``: per-unit epsilons.
      details: optional ``(rounds, delta) -> dict`` of further labelled numbers.
      event_fn: optional ``rounds -> DpEvent`` when one exists.
      alternatives: the other modes' accountants (``{"paper": ...}``).
    """

    def __init__(self, curve: Callable[[np.ndarray, float], Any], *, unit: str, name: str,
                 mode: str = "strict", sound: bool = True,
                 per_unit: Callable[[int, float], tuple[np.ndarray, tuple]] | None = None,
                 details: Callable[[int, float], dict] | None = None,
                 event_fn: Callable[[int], dp_accounting.DpEvent] | None = None,
                 alternatives: Mapping[str, Accountant] | None = None):
        validate.one_of("mode", mode, MODES)
        self._curve, self._per_unit, self._details, self._event_fn = (
            curve, per_unit, details, event_fn)
        self.unit, self.name, self.mode, self.sound = unit, name, mode, sound
        self._alternatives = dict(alternatives or {})

    def epsilons(self, rounds, delta):
        r = check_rounds(rounds)
        delta = validate.delta(delta)
        out = np.asarray(self._curve(r, delta), dtype=np.float64).reshape(-1)
        if out.shape != r.shape:
            raise validate.ShapeError(
                f"Expected the accountant's curve to give {len(r)} epsilons, got {out.shape}.")
        return np.where(r == 0, 0.0, out)

    def dp_event(self, rounds):
        return None if self._event_fn is None else self._event_fn(int(rounds))

    def report(self, rounds, delta):
        base = super().report(rounds, delta)
        per, axes = (None, ()) if self._per_unit is None else self._per_unit(base.rounds,
                                                                            base.delta)
        det = {} if self._details is None else dict(self._details(base.rounds, base.delta))
        return dataclasses.replace(base, per_unit=per, per_unit_axes=tuple(axes), details=det)

    def other_modes(self):
        return dict(self._alternatives)


def of(algorithm) -> Accountant:
    """The accountant of an algorithm record (its one privacy field, ``accountant``).

    Raises:
      JaxflValueError: when the record has no :class:`Accountant`.
    """
    acc = getattr(algorithm, "accountant", None)
    if not isinstance(acc, Accountant):
        raise validate.JaxflValueError(
            f"Expected algorithm.accountant to be a jaxfl.accounting.report.Accountant, got "
            f"{type(acc).__name__} (a non-private algorithm uses NonPrivateAccountant).")
    return acc


def reports(accountant: Accountant, rounds: int, delta: float) -> dict:
    """``{"privacy": selected mode's report, "privacy_<mode>": each other mode's}`` as JSON,
    so every output shows both the sound number and the paper's, each labelled."""
    out = {"privacy": accountant.report(rounds, delta).to_json()}
    for mode, other in accountant.other_modes().items():
        rep = other.report(rounds, delta)
        if other.noise_spec is None and accountant.noise_spec is not None:
            # the same mechanism's noise under another analysis: the same truncation
            rep = accountant._with_truncation(rep)
        out[f"privacy_{mode}"] = rep.to_json()
    return out


__all__ = ["MODES", "PRIVACY_FIELDS", "Mechanism", "jsonable", "PrivacyReport", "Accountant",
           "NonPrivateAccountant", "EventAccountant", "CurveAccountant", "of", "reports",
           "check_rounds"]
