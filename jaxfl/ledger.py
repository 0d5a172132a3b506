"""The privacy ledger of a workdir: what ran is what is charged.

A run's outputs (logged metrics, checkpoints, the final model) are releases of its mechanism.
When a run is resumed, extended or rerun in the same workdir, the epsilon it reports must cover
every round that was released, under the mechanism that released it. ``ledger.json`` records:

* ``identity``: the seed, a fingerprint of the training data, the algorithm's name and the
  run's config (without the schedule fields of :data:`SCHEDULE_FIELDS`);
* ``segments``: consecutive stretches of rounds run by one mechanism (the accountant's class,
  labels, privacy hyperparameters, the DpEvent of one round in each mode, the noise spec and
  the algorithm's ``info``). A segment covers ``[start, end)``: ``end`` is the last round
  released under it (checkpointed or logged);
* ``changes``: each allowed change, with the round it took effect and the changed fields.

A resume compares the new run with the ledger (:meth:`Ledger.resume`). By default any change of
the identity or the mechanism is refused with :class:`ResumeMismatchError`, which names every
changed field. With ``allow_change=True`` the rounds already released are kept in their
segment and a new segment starts at the checkpoint the run resumes from; the final epsilon is
then the composition of every segment's events (:meth:`Ledger.accountant`; dp-accounting's PLD
and RDP accountants on one ``ComposedDpEvent``), so rounds released and then discarded by the
resume are charged too. Re-running rounds of an unchanged mechanism after a kill is not charged
twice: a round's randomness depends only on (seed, round), so it releases the same output, as
long as the recomputation is bit-identical. ``platform`` records what decides that (backend,
device kind and count, jax's version, deterministic XLA programs, the data's layout); a resume
that would re-run released rounds on another platform, or with non-deterministic programs, is
refused (:func:`_rerun_problem`): the same noise on a differently rounded value would release a
second, correlated output. With ``allow_change`` such rounds, and those re-run after a changed
mechanism, run again with fresh randomness (the ledger's ``generation``) and are charged
twice. The data fingerprint leaves the layout out (:func:`data_fingerprint`), so a run resumes
on another backend from a checkpoint at its last released round.

A change can only be composed where every mechanism is an ``EventAccountant``
(:class:`jaxfl.accounting.report.EventAccountant`) whose rounds are one repeated DpEvent whose
epsilon is the headline; for the other accountants (pairwise matrices, per-subject bounds) a
changed mechanism is refused with ``allow_change`` too.

A workdir is held by one process at a time (:class:`jaxfl.workdir_lock.WorkdirLock`, re-exported
here): a second process gets :class:`WorkdirLockedError` naming the holder; a lock left by a
killed process on this host is detected (its pid is gone, or belongs to a process started
later) and taken over.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import warnings
from pathlib import Path
from typing import Any

import dp_accounting
import numpy as np

from jaxfl import validate
from jaxfl.accounting import events, report
from jaxfl.workdir_lock import LOCK, WorkdirLock, WorkdirLockedError, _start_time  # noqa: F401

LEDGER = "ledger.json"
VERSION = 1

#: Config fields that set the run's schedule or where its files are, not what a round releases:
#: they may change on a resume (``rounds`` extends a run; a target epsilon or a budget acts
#: through the mechanism or the stop rule, both of which the ledger checks on their own).
SCHEDULE_FIELDS = frozenset({
    "rounds", "T", "epochs", "eval_every", "checkpoint_every", "data_dir", "workdir",
    "progress", "max_epsilon", "target_epsilon", "stop_after"})


class ResumeMismatchError(validate.JaxflValueError):
    """A resume that would change what the workdir's privacy report covers."""


class BudgetError(validate.JaxflValueError):
    """A privacy budget that cannot be met (nothing left, or below one round)."""


# ----------------------------------------------------------------------------- fingerprints

def _flatten(d, prefix="") -> dict:
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    out[prefix[:-1] if prefix else ""] = d
    return out


def _json(x):
    """``x`` as plain JSON values (one canonical form for comparisons)."""
    return json.loads(json.dumps(report.jsonable(x), sort_keys=True, default=repr))


def data_fingerprint(data, *, layout: bool = False) -> str:
    """SHA-256 over every array of ``data`` (shape, dtype and bytes, in tree order).

    Data that is laid out per backend (a :class:`~jaxfl.algorithms.uldp_data.PairData`'s
    buckets, padding and chunks) is hashed through its ``identity_arrays()``, what it holds
    without its layout, so the same records give the same fingerprint on every backend and
    device count. ``layout=True``: the hash of the laid-out arrays themselves, what ledgers
    recorded before 2026-11-28 (:meth:`Ledger.start` accepts either).
    """
    import jax

    if not layout and hasattr(data, "identity_arrays"):
        data = data.identity_arrays()
    h = hashlib.sha256()
    leaves, treedef = jax.tree.flatten(data)
    h.update(str(treedef).encode())
    for leaf in leaves:
        a = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{a.shape}{a.dtype.str}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def config_fields(config) -> dict:
    """The run config as flat ``{dotted field: value}``, without :data:`SCHEDULE_FIELDS`."""
    if config is None:
        return {}
    flat = _flatten(_json(config)) if isinstance(_json(config), dict) else {"config": config}
    return {k: v for k, v in flat.items() if k.split(".")[-1] not in SCHEDULE_FIELDS}


def identity(algorithm, data, seed: int, config) -> dict:
    """What must stay the same across a resume besides the mechanism."""
    return {"seed": int(seed), "data": data_fingerprint(data),
            "algorithm": getattr(algorithm, "name", None), "config": config_fields(config)}


def _event_json(acc: report.Accountant):
    try:
        ev = acc.dp_event(1)
    except Exception as e:  # noqa: BLE001 - an accountant that cannot say: recorded as such
        return {"error": f"{type(e).__name__}: {e}"}
    return None if ev is None else events.to_json(ev)


def _round_event_json(acc: report.Accountant):
    ev = getattr(acc, "round_event", None)
    return None if ev is None else events.to_json(ev)


def mechanism(algorithm, acc: report.Accountant | None = None) -> dict:
    """The fingerprint of what one round releases: the accountant's class and labels, its
    privacy hyperparameters, the DpEvent of one round (per mode), the noise spec and the
    algorithm's ``info``."""
    acc = acc if acc is not None else report.of(algorithm)
    spec = acc.noise_spec
    return _json({
        "accountant": type(acc).__module__ + "." + type(acc).__qualname__,
        "name": acc.name, "unit": acc.unit, "mode": acc.mode, "sound": acc.sound,
        "private": acc.private, "hparams": dict(acc.hparams),
        "event": _event_json(acc), "round_event": _round_event_json(acc),
        "other_modes": {m: {"event": _event_json(a), "round_event": _round_event_json(a)}
                        for m, a in sorted(acc.other_modes().items())},
        "noise_spec": None if spec is None else dataclasses.asdict(spec),
        "info": getattr(algorithm, "info", None)})


def _diff(old: dict, new: dict, prefix: str = "") -> list[tuple[str, Any, Any]]:
    a, b = _flatten(old), _flatten(new)
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k, "<absent>"), b.get(k, "<absent>")
        if va != vb:
            out.append((prefix + k, va, vb))
    return out


# ----------------------------------------------------------------------------- events from JSON

def event_from_json(obj) -> dp_accounting.DpEvent:
    """The inverse of :func:`jaxfl.accounting.events.to_json`."""
    import attr

    def conv(x):
        if isinstance(x, dict) and "name" in x:
            cls = getattr(dp_accounting.dp_event, x["name"], None)
            if cls is None or not attr.has(cls):
                raise validate.JaxflValueError(f"Unknown DpEvent {x['name']!r} in a ledger.")
            kwargs = {}
            for f in attr.fields(cls):
                v = x.get(f.name)
                if isinstance(v, str) and f.type is not None and "Relation" in str(f.type):
                    v = dp_accounting.NeighboringRelation[v]
                kwargs[f.name] = conv(v)
            return cls(**kwargs)
        if isinstance(x, list):
            return [conv(v) for v in x]
        return x

    return conv(obj)


# ----------------------------------------------------------------------------- the ledger

def _composable(mech: dict) -> bool:
    """Every round the same DpEvent, whose composition is the accountant's headline."""
    return (mech.get("accountant") == "jaxfl.accounting.report.EventAccountant"
            and isinstance(mech.get("round_event"), dict) and "name" in mech["round_event"])


@dataclasses.dataclass
class Ledger:
    """The ledger of one workdir (see the module docstring)."""

    path: Path | None
    identity: dict
    segments: list  # [{"start", "end", "mechanism"}]
    changes: list = dataclasses.field(default_factory=list)
    # what computed the latest released rounds (:func:`platform`); None in older ledgers
    platform: dict | None = None
    # how many times released rounds were re-run under a new segment: the run's randomness
    # stream (:func:`jaxfl.random.train_stream`, :func:`jaxfl.random.sample_rng`)
    generation: int = 0

    # -- reading and writing

    @classmethod
    def read(cls, workdir) -> Ledger | None:
        path = Path(workdir) / LEDGER
        if not path.exists():
            return None
        try:
            obj = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise validate.JaxflValueError(
                f"The privacy ledger {path} cannot be read ({e}); it records what the workdir's "
                f"checkpoints have spent. Restore it or start a new workdir.") from e
        return cls(path=path, identity=obj["identity"], segments=obj["segments"],
                   changes=obj.get("changes", []), platform=obj.get("platform"),
                   generation=int(obj.get("generation", 0)))

    def to_json(self) -> dict:
        out = {"version": VERSION, "identity": self.identity, "segments": self.segments,
               "changes": self.changes, "rounds_charged": self.rounds_charged}
        if self.platform is not None:
            out["platform"] = self.platform
        if self.generation:
            out["generation"] = self.generation
        return out

    def write(self) -> None:
        if self.path is None:
            return
        from jaxfl import checkpoint

        checkpoint.atomic_write_text(self.path, json.dumps(self.to_json(), indent=2,
                                                           sort_keys=True))

    # -- what was spent

    @property
    def rounds_charged(self) -> int:
        return int(sum(s["end"] - s["start"] for s in self.segments))

    @property
    def released(self) -> int:
        """The last round released (by the last segment)."""
        return int(self.segments[-1]["end"]) if self.segments else 0

    def charge(self, done: int) -> None:
        """Rounds up to ``done`` were released by the current (last) segment."""
        seg = self.segments[-1]
        seg["end"] = max(int(seg["end"]), int(done))

    @property
    def composed(self) -> bool:
        return len(self.segments) > 1

    def summary(self) -> dict:
        """The ledger's fields in a run's summary (with a ``note`` when the epsilon composes
        several mechanisms)."""
        out = {"segments": len(self.segments), "rounds_charged": self.rounds_charged,
               "changes": self.changes}
        if self.composed:
            out["note"] = (
                f"epsilon composes {len(self.segments)} mechanisms over {self.rounds_charged} "
                f"released rounds (allowed change(s) at round(s) "
                f"{', '.join(str(c['round']) for c in self.changes)}: "
                f"{'; '.join(', '.join(c['fields']) for c in self.changes)})")
        return out

    # -- opening a workdir

    @classmethod
    def start(cls, workdir, *, algorithm, data, seed, config, rounds: int, start: int,
              logged: int = 0, allow_change: bool | str = False, legacy_config=None,
              legacy_seed=None, fresh_reruns: bool = False) -> Ledger:
        """The ledger of a run about to start at round ``start`` (0: fresh) in ``workdir``.

        ``logged`` is the last round found in the workdir's metrics log (a released round
        that a resume from an older checkpoint discards). ``allow_change``: True composes any
        change, ``"mechanism"`` only a changed mechanism (a recalibration against the budget
        left), False refuses every change. ``legacy_config`` / ``legacy_seed``:
        what a workdir written before ledgers existed recorded (config.json, the checkpoint's
        seed), compared instead of a ledger's identity. ``fresh_reruns``: the caller draws its
        randomness from the ledger's ``generation`` (:func:`jaxfl.random.train_stream`), so
        released rounds that run again under a new segment get fresh noise and sampling; a
        new segment that re-runs released rounds bumps it, and those rounds are charged
        twice (a caller without it is refused such a resume).

        Raises:
          ResumeMismatchError: a changed identity or mechanism without ``allow_change``, a
            change the accountant cannot compose, or fewer ``rounds`` than already released.
        """
        workdir = None if workdir is None else Path(workdir)
        ident = identity(algorithm, data, seed, config)
        mech = mechanism(algorithm)
        plat = platform(data, None if hasattr(data, "identity_arrays") else ident["data"])
        old = cls.read(workdir) if workdir is not None else None
        path = None if workdir is None else workdir / LEDGER
        if old is None:
            if start > 0:
                _check_legacy(workdir, ident, legacy_config, legacy_seed, config)
                warnings.warn(
                    f"{workdir} has checkpoints but no privacy ledger (written before ledgers "
                    f"existed): its {start} rounds are charged to this run's mechanism, after "
                    f"its config and seed were found unchanged.", stacklevel=3)
            return cls(path=path, identity=ident,
                       segments=[{"start": 0, "end": max(int(start), int(logged)),
                                  "mechanism": mech}], platform=plat)
        old.path = path
        if (old.identity.get("data") != ident["data"] and hasattr(data, "identity_arrays")
                and old.identity.get("data") == data_fingerprint(data, layout=True)):
            # a ledger written before fingerprints left the layout out: same arrays, same data
            old.identity["data"] = ident["data"]
        released = max(old.released, int(logged), int(start))
        if rounds < released:
            raise ResumeMismatchError(
                f"{workdir} already released {released} rounds; rounds={rounds} cannot undo "
                f"them (its report covers {released}). Use rounds >= {released} or a new "
                f"workdir.")
        rerun = _rerun_problem(old.platform, plat, start, released)
        old_platform, old.platform = old.platform, plat
        old.charge(released)
        changed = _diff(old.identity, ident) + _diff(old.segments[-1]["mechanism"], mech,
                                                     "mechanism.")
        if rerun is not None:
            if allow_change is not True or not fresh_reruns:
                raise ResumeMismatchError(
                    f"Refusing to resume {workdir} at round {start}: rounds {start + 1}-"
                    f"{released} were released and would run again with the same noise draws "
                    f"on a computation that may round differently ({rerun}), releasing a "
                    f"second, correlated output. Resume where those rounds ran (deterministic "
                    f"programs, JAXFL_DETERMINISTIC=1), use a new workdir"
                    + (", or allow_change=True (--allow-change) to re-run them with fresh "
                       "noise and sampling, charged again." if fresh_reruns else "."))
            changed.append(("platform", old_platform, plat))
        if not changed:
            if start < int(old.segments[-1]["start"]):
                raise ResumeMismatchError(
                    f"{workdir}: the newest intact checkpoint (round {start}) predates the "
                    f"ledger's last change (round {old.segments[-1]['start']}).")
            return old
        names = "; ".join(f"{k}: {_short(a)} (in the workdir) -> {_short(b)} (now)"
                          for k, a, b in changed)
        refused = changed if allow_change is False else (
            [c for c in changed if not c[0].startswith("mechanism.")]
            if allow_change == "mechanism" else [])
        if refused:
            names = "; ".join(f"{k}: {_short(a)} (in the workdir) -> {_short(b)} (now)"
                              for k, a, b in refused)
            raise ResumeMismatchError(
                f"Refusing to resume {workdir} at round {start}: the run differs from the one "
                f"that spent its privacy budget in {len(changed)} field(s): {names}. Use a new "
                f"workdir, or allow_change=True (--allow-change) to compose the rounds already "
                f"released with the new ones.")
        mech_changed = any(k.startswith("mechanism.") for k, _, _ in changed)
        if (mech_changed or rerun is not None) and not (
                _composable(old.segments[-1]["mechanism"]) and _composable(mech)
                and all(_composable(s["mechanism"]) for s in old.segments)):
            raise ResumeMismatchError(
                f"Cannot compose the change of {workdir} at round {start} ({names}): the "
                f"accountant ({mech['accountant']}) has no per-round DpEvent whose composition "
                f"is its headline. Start a new workdir.")
        old.segments.append({"start": int(start), "end": int(start), "mechanism": mech})
        change = {"round": int(start), "fields": {k: [a, b] for k, a, b in changed}}
        if start < released and fresh_reruns:
            # rounds start+1..released run again: fresh randomness, so the two releases of
            # each are independent and their composition (both segments charge them) holds
            old.generation += 1
            change["rerun"] = [int(start) + 1, int(released)]
        old.changes.append(change)
        old.identity = ident
        return old

    # -- the accountant of what ran

    def accountant(self, acc: report.Accountant) -> report.Accountant:
        """``acc`` itself while one mechanism ran; else an EventAccountant of the composition
        of every segment's rounds, the current one's extended to the run's round count."""
        if not self.composed:
            return acc
        start = int(self.segments[-1]["start"])

        def composed(like: report.EventAccountant, prior, **extra) -> report.EventAccountant:
            def event_fn(rounds):
                return events.composed([*prior, events.repeated(
                    like.round_event, max(int(rounds) - start, 0))])
            return report.EventAccountant(
                event_fn, unit=like.unit, per_round=like.per_round, final=like.final,
                mode=like.mode, sound=like.sound, **extra)

        alternatives = {mode: composed(other, self._released(mode))
                        for mode, other in acc.other_modes().items()
                        if isinstance(other, report.EventAccountant)
                        and other.round_event is not None and self._released(mode) is not None}
        return composed(acc, self._released(None), alternatives=alternatives).derive(
            privatizer=acc.privatizer, hparams=acc.hparams)

    def _released(self, mode: str | None) -> list | None:
        """The events of the closed segments (each its round event repeated over its rounds),
        in mode ``mode`` (None: the selected one); None where a segment has none."""
        out = []
        for seg in self.segments[:-1]:
            m = seg["mechanism"]
            ev = m["round_event"] if mode is None else (
                m["other_modes"].get(mode) or {}).get("round_event")
            if ev is None or "name" not in ev:
                return None
            out.append(events.repeated(event_from_json(ev), int(seg["end"] - seg["start"])))
        return out


def platform(data, data_fp: str | None = None) -> dict:
    """What decides a round's output bits besides (seed, round): the backend, device kind and
    count, jax's version, whether XLA's programs are deterministic, and the data's layout
    (``data.layout_arrays()`` where the data is laid out per backend, else the data itself,
    whose fingerprint ``data_fp`` is when given)."""
    import jax

    from jaxfl import layout

    if hasattr(data, "layout_arrays"):
        data_fp = data_fingerprint(data.layout_arrays(), layout=True)
    elif data_fp is None:
        data_fp = data_fingerprint(data, layout=True)

    dev = jax.devices()[0]
    return {"backend": jax.default_backend(), "device_kind": getattr(dev, "device_kind", "?"),
            "devices": jax.device_count(), "jax": jax.__version__,
            "deterministic": bool(layout.deterministic()),
            "layout": data_fp}


def _rerun_problem(old: dict | None, new: dict, start: int, released: int) -> str | None:
    """Why re-running rounds ``start + 1 .. released`` (released, and about to run again with
    the same noise draws: a round's randomness depends on (seed, round, generation) only) would
    not reproduce them bit for bit, or None: nothing to re-run, an older ledger without a
    platform, or the same platform with deterministic programs."""
    if start >= released or old is None:
        return None
    diff = [f"{k}: {_short(old.get(k))} -> {_short(new.get(k))}" for k in sorted(new)
            if old.get(k) != new.get(k)]
    if not diff and new["deterministic"]:
        return None
    return "; ".join(diff) if diff else "this process's XLA programs are not deterministic"


def _short(v) -> str:
    s = json.dumps(v, sort_keys=True, default=repr)
    return s if len(s) <= 80 else s[:77] + "..."


def _check_legacy(workdir, ident, legacy_config, legacy_seed, config) -> None:
    changed = []
    if legacy_seed is not None and int(legacy_seed) != ident["seed"]:
        changed.append(("seed", legacy_seed, ident["seed"]))
    if legacy_config is not None or config is not None:
        changed += _diff(config_fields(legacy_config) if legacy_config is not None else {},
                         ident["config"], "config.")
    if changed:
        names = "; ".join(f"{k}: {_short(a)} -> {_short(b)}" for k, a, b in changed)
        raise ResumeMismatchError(
            f"Refusing to resume {workdir}: it has no privacy ledger and its recorded run "
            f"differs: {names}. Use a new workdir.")


# ----------------------------------------------------------------------------- budgets

def budget_stop(acc: report.Accountant, *, start: int, rounds: int, delta: float,
                max_epsilon: float) -> int:
    """The last round count in ``(start, rounds]`` whose epsilon stays at most ``max_epsilon``
    (``start`` when even the next round would exceed it). Uses the per-round curve, then checks
    the final report's headline at the stop and steps back while it exceeds the budget."""
    todo = list(range(start + 1, rounds + 1))
    if not todo:
        return start
    eps = np.asarray(acc.epsilons(todo, delta), np.float64)
    over = np.nonzero(~(eps <= max_epsilon))[0]
    stop = rounds if over.size == 0 else start + int(over[0])
    while stop > start:
        headline = acc.report(stop, delta).epsilon
        if math.isfinite(headline) and headline <= max_epsilon:
            break
        stop -= 1
    return stop


__all__ = ["Ledger", "WorkdirLock", "ResumeMismatchError", "WorkdirLockedError", "BudgetError",
           "SCHEDULE_FIELDS", "identity", "mechanism", "data_fingerprint", "config_fields",
           "event_from_json", "budget_stop", "LEDGER", "LOCK"]
