"""Sweeps: many training runs as one ``vmap``ped, jit-compiled computation.

A sweep is a base config and a list of override dicts (``get_sweep()`` next to each config).
Points that differ only in their seed and in the scalar hyperparameters their algorithm
declares traceable (``Algorithm.hparams``: learning rates, clip norm, noise multiplier,
sampling rate) share every shape, so :func:`run_sweep` stacks their server states on a leading
*sweep axis* and runs each block of rounds as one ``lax.scan`` of ``vmap(apply)`` inside one
jit (the engine is :mod:`jaxfl.vmapped_runs`). Points that change a shape (model, number of
clients, local steps...) form separate groups (one vmapped batch each; a group of one point
runs through :func:`jaxfl.training.run`, the sequential fallback). Batches are chunked to
``chunk_size`` points to fit the device memory; with a mesh (:mod:`jaxfl.sharding`) the points
are split over the ``"sweep"`` axis and the clients over ``"clients"``.

Each point behaves as if it had run alone: its workdir ``points/<id>/`` gets the same
``config.json``, ``metrics.jsonl`` (same records, same epsilon from its own algorithm's
accountant), per-point checkpoints and ``summary.json`` as :func:`jaxfl.training.run`, whose
numbers it equals up to float rounding (the vmapped computation batches the matmuls and pads
the Poisson cohorts of a batch to a common size; padded slots carry zero weight). Per point,
round ``r`` uses the key ``round_key(key_streams(seed)["train"], r)`` and the host generator
``host_rng(seed, "sample", r)``, exactly as a single run.

Resumable: a point with a ``summary.json`` is finished and never rerun; an interrupted point
continues from its newest valid checkpoint; after every batch the tidy table ``results.csv``
(one row per point and logged round: point, swept values, metrics) is rewritten atomically.
While a sweep runs its state lives in memory (:class:`SweepState`: each point's built spec,
the finished points and their records): it is written between batches, not read back; disk
is read when a sweep starts (a resume).

Example Usage:
  >>> import dataclasses
  >>> @dataclasses.dataclass(frozen=True)
  ... class Cfg:
  ...   seed: int = 0
  ...   clip_norm: float = 1.0
  >>> [p.config for p in expand(Cfg(), [{"seed": 1}, {"clip_norm": 0.5}])]
  [Cfg(seed=1, clip_norm=1.0), Cfg(seed=0, clip_norm=0.5)]
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jaxfl import checkpoint, layout, ledger, metrics, planner, sharding, validate, vmapped_runs
from jaxfl.vmapped_runs import RunSpec, block_fn, run_single, stack_round_inputs

log = logging.getLogger(__name__)

SEED_FIELDS = ("seed",)
TABLE = "results.csv"


@dataclasses.dataclass(frozen=True)
class Point:
    index: int
    overrides: dict  # flattened "a.b" -> value
    config: Any
    id: str  # hash of the full config: the name of the point's workdir


@dataclasses.dataclass(frozen=True)
class SweepResult:
    workdir: Path
    table: Path
    finished: list  # point ids finished (now or before)
    ran: list  # point ids that did work in this call
    stopped: bool  # True when stop_after interrupted the sweep
    groups: list  # list of lists of point indices vmapped together
    # What choosing among the points costs (jaxfl.selection.sweep_note), or the private
    # selection's summary; with run_sweep(selection=...), the jaxfl.selection.SelectionResult.
    note: str = ""
    selection: Any = None


# ----------------------------------------------------------------------------- configs

def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def with_overrides(config, overrides: dict):
    """``config`` with dotted-key overrides applied (frozen dataclasses, nested, or dicts)."""
    for key, value in overrides.items():
        config = _set(config, key.split("."), value)
    return config


def _set(obj, path: list, value):
    head, rest = path[0], path[1:]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = {f.name for f in dataclasses.fields(obj)}
        if head not in names:
            raise validate.JaxflValueError(
                f"Expected an override among {sorted(names)}, got {head!r}.")
        new = value if not rest else _set(getattr(obj, head), rest, value)
        return dataclasses.replace(obj, **{head: new})
    if isinstance(obj, dict):
        new = value if not rest else _set(obj[head], rest, value)
        return {**obj, head: new}
    if obj is None and not rest:
        return {head: value}
    raise validate.JaxflValueError(f"Cannot override {head!r} of {type(obj).__name__}.")


def expand(base_config, overrides: Sequence[dict]) -> list[Point]:
    """The sweep's points: ``base_config`` with each override dict applied.

    Raises:
      JaxflValueError: on an empty sweep or two overrides giving the same config.
    """
    if not overrides:
        raise validate.JaxflValueError("Expected at least one sweep point, got none.")
    points, seen = [], {}
    for i, ov in enumerate(overrides):
        flat = _flatten(dict(ov))
        config = with_overrides(base_config, flat)
        pid = metrics.config_hash(config)
        if pid in seen:
            raise validate.JaxflValueError(
                f"Expected distinct sweep points, got points {seen[pid]} and {i} equal.")
        seen[pid] = i
        points.append(Point(index=i, overrides=flat, config=config, id=pid))
    return points


def _group_key(config, traced: set) -> str:
    """``config`` as text without its ``traced`` fields (matched by the last component of their
    dotted name): two points with equal keys differ only in traced fields."""
    flat = _flatten(metrics.jsonable(config) if config is not None else {})
    if not isinstance(flat, dict):
        flat = {"": flat}
    kept = {k: v for k, v in flat.items() if k.split(".")[-1] not in traced}
    return json.dumps(kept, sort_keys=True, default=str)


# ----------------------------------------------------------------------------- batching

def traced_fields(algorithm, config=None, vmappable: Sequence[str] | None = None) -> set:
    """The config fields a sweep may vary inside one compiled computation of ``algorithm``.

    They are the seed fields, the config fields named like a traceable hyperparameter the
    built algorithm declares (``algorithm.hparams``; ``vmappable`` restricts those names), and
    the fields the config class declares in ``derived_hparams`` (see :func:`_derived`). No
    list of names lives here: a new algorithm's hyperparameter is batched as soon as the
    algorithm declares it and its config names a field after it.
    """
    names = set(algorithm.hparams)
    if vmappable is not None:
        names &= set(vmappable)
    return set(SEED_FIELDS) | names | _derived(config)


def plan(points: Sequence[Point], build: Callable[[Any], RunSpec], *,
         vmappable: Sequence[str] | None = None,
         pending: set | None = None) -> list[list[Point]]:
    """Groups points that can share one vmapped computation, planned from the built algorithms.

    Points are first gathered into *atoms* (configs equal up to seed and ``derived_hparams``
    fields). The first atom of a would-be group with a point in ``pending`` (all points when
    None) is built, and its algorithm's :func:`traced_fields` decide the group: every atom
    whose config agrees with it outside those fields joins. So builders run once per group,
    on a pending point (finished points are not rebuilt); atoms with no pending point join the
    group they match (they only pad a chunk, see :func:`run_sweep`) or stay apart, unbuilt.
    A config that builds no algorithm (accounting-only) runs one point at a time. Members of a
    group keep the points' order.
    """
    todo = (lambda p: True) if pending is None else (lambda p: p.id in pending)
    atoms: dict[str, list[Point]] = {}
    for p in points:
        atoms.setdefault(_group_key(p.config, set(SEED_FIELDS) | _derived(p.config)),
                         []).append(p)
    groups: list[tuple[set | None, str, list[Point]]] = []  # (traced, key, members)

    def join(atom) -> bool:
        for traced, key, members in groups:
            if traced is not None and _group_key(atom[0].config, traced) == key:
                members.extend(atom)
                return True
        return False

    for atom in (a for a in atoms.values() if any(todo(p) for p in a)):
        if join(atom):
            continue
        rep = next(p for p in atom if todo(p))
        algorithm = build(rep.config).algorithm
        if algorithm is None:  # accounting-only points: cheap, one at a time
            groups.extend((None, "", [p]) for p in atom)
            continue
        traced = traced_fields(algorithm, rep.config, vmappable)
        groups.append((traced, _group_key(rep.config, traced), list(atom)))
    for atom in (a for a in atoms.values() if not any(todo(p) for p in a)):
        if not join(atom):
            groups.append((None, "", list(atom)))  # finished: not rebuilt, will not run
    return [sorted(members, key=lambda p: p.index) for _, _, members in groups]


def _derived(config) -> set:
    """Config fields that only set traced hyperparameters of the built algorithm (or values it
    reads on the host, in ``prepare``), declared by the config class as ``derived_hparams:
    ClassVar[tuple]`` (e.g. a target epsilon the builder calibrates to a noise multiplier):
    points differing in them still share one computation (each point's algorithm carries its
    own hparam values, round inputs and accountant)."""
    return set(getattr(type(config), "derived_hparams", ()))


# ----------------------------------------------------------------------------- the runner

def is_finished(workdir, point: Point) -> bool:
    return (Path(workdir) / "points" / point.id / "summary.json").exists()


class SweepState:
    """A sweep's state while it runs, held in memory.

    Disk is read once, when the sweep starts (a resume: which points finished, their logged
    records for the table, a point's checkpoint rounds when first asked); from then on the
    runner keeps each point's built :class:`RunSpec` (``build`` runs once per point and sweep;
    a finished point's spec is dropped), the points that finished and their records, and
    writes, never re-reads: ``results.csv`` is written from memory after every batch.
    """

    def __init__(self, workdir: Path, points: Sequence[Point], build: Callable[[Any], RunSpec]):
        self.workdir, self.points, self._build = workdir, list(points), build
        self.specs: dict[str, RunSpec] = {}  # point id -> its spec, built once
        self.finished = {p.id for p in points if is_finished(workdir, p)}
        # the table's rows of the points finished before this sweep started (the resume read)
        self.records = {p.id: metrics.read_jsonl(self.dir(p) / "metrics.jsonl")
                        for p in points if p.id in self.finished}
        self._saved: dict[str, set] = {}  # point id -> its intact checkpoint rounds

    def dir(self, point: Point) -> Path:
        return self.workdir / "points" / point.id

    def spec(self, config) -> RunSpec:
        """The point's :class:`RunSpec` (``build(config)`` the first time only)."""
        key = metrics.config_hash(config)
        if key not in self.specs:
            self.specs[key] = self._build(config)
        return self.specs[key]

    def saved_rounds(self, point: Point) -> set:
        """The rounds of the point's intact checkpoints (read from disk the first time only,
        and again after the point ran: its checkpoints changed)."""
        if point.id not in self._saved:
            self._saved[point.id] = set(checkpoint.verified_rounds(self.dir(point) /
                                                                   "checkpoints"))
        return self._saved[point.id]

    def resume_round(self, points: Sequence[Point]) -> int:
        """The latest round at which every point of ``points`` has an intact checkpoint (0:
        none). A batch checkpoints its points one after another, so a kill can leave them one
        block apart; resuming all of them from their common round keeps the batch's
        composition (and so its compiled program and every lane's bits) equal to the
        uninterrupted run's."""
        common = set.intersection(*(self.saved_rounds(p) for p in points)) if points else set()
        return max(common, default=0)

    def ran(self, point: Point, history: list | None) -> None:
        """``point`` ran in this process: finished with its logged ``history`` (its records,
        as written), or interrupted (None)."""
        self._saved.pop(point.id, None)
        if history is not None:
            self.finished.add(point.id)
            self.records[point.id] = [metrics.as_logged(r) for r in history]
            self.specs.pop(point.id, None)  # never built or run again

    def write_table(self) -> Path:
        return write_table(self.workdir, self.points, self.records)


def _chunks(group: list, chunk_size: int | None):
    """A group's chunks of at most ``chunk_size`` points, from the whole group (finished points
    included), so that a resumed sweep batches exactly as the uninterrupted one did."""
    size = chunk_size or len(group)
    for i in range(0, len(group), size):
        yield group[i:i + size]


def fit_chunk_size(spec: RunSpec, memory_budget: int) -> int:
    """The most points like ``spec`` one vmapped computation can hold in ``memory_budget``,
    extrapolated from the compiled memory of 2 and 4 points at one unit per chunk
    (:func:`jaxfl.vmapped_runs.point_memory`); the planner then verifies the compiled program
    of that many points and halves them while it does not fit (:mod:`jaxfl.planner`).

    Raises:
      MemoryBudgetError: not even one point at one unit per chunk fits (before any work).
    """
    fixed, per = vmapped_runs.point_memory(spec)
    most = (memory_budget - fixed) // per
    if most < 1:  # the point's smallest layout (one unit per chunk) already exceeds it
        raise layout.MemoryBudgetError(
            f"One sweep point needs {per} bytes at one client / pair / node per chunk (plus "
            f"{fixed} bytes shared), more than the device memory budget of {memory_budget} "
            f"bytes. Set {layout.BUDGET_ENV} or free device memory, or use a smaller model "
            f"or fewer records per unit.")
    log.info("sweep points of %d bytes each (plus %d shared) in chunks of %d (budget %d bytes)",
             per, fixed, max(1, most), memory_budget)
    return max(1, most)


def _split(chunk: list, build, error: Exception) -> list[list[Point]]:
    """Sub-batches of a chunk that could not be batched: by data shape (e.g. seed-dependent
    partitions of different sizes), else one point each."""
    by_shape: dict[str, list[Point]] = {}
    if isinstance(error, validate.ShapeError):
        for p in chunk:
            by_shape.setdefault(vmapped_runs.data_shapes(build(p.config).data), []).append(p)
    parts = list(by_shape.values()) if len(by_shape) > 1 else [[p] for p in chunk]
    log.warning("sweep points %s split into %s: %s", [p.index for p in chunk],
                [[p.index for p in g] for g in parts], error)
    return parts


def run_sweep(points: Sequence[Point], build: Callable[[Any], RunSpec], workdir, *,
              chunk_size: int | None = None, memory_budget: int | None = None,
              vmap: bool = True, mesh=None,
              vmappable: Sequence[str] | None = None, stop_after: int | None = None,
              progress: bool | None = None, allow_change: bool = False,
              max_epsilon: float | None = None, selection=None,
              public_split: bool = False) -> SweepResult:
    """Runs (or resumes) a sweep in ``workdir``.

    Args:
      points: from :func:`expand`.
      build: ``config -> RunSpec``; called at most once per point in a sweep (the spec is
        kept in memory for planning, memory fitting and running, :class:`SweepState`;
        finished points are not built). Builders should cache their data loading so that
        points share the same arrays (points whose data differ are still correct: the data
        are stacked).
      workdir: the sweep directory (``sweep.json``, ``results.csv``, ``points/<id>/``).
      chunk_size: at most this many points per vmapped computation (None: a whole group).
      memory_budget: device bytes a vmapped computation may use (default: the device's,
        :func:`jaxfl.layout.device_budget`: a share of its free memory on accelerators, the
        ``JAXFL_DEVICE_MEMORY_BUDGET`` environment variable, else none on CPU); without
        ``chunk_size``, each group's chunk size is derived from it
        (:func:`jaxfl.vmapped_runs.point_memory`), and each point's client / pair axes are
        chunked to its share (:func:`jaxfl.layout.fit`).
      vmap: False runs every point sequentially with :func:`jaxfl.training.run`.
      mesh: a :func:`jaxfl.sharding.make_mesh` mesh: points split over ``"sweep"``, clients
        over ``"clients"``.
      vmappable: restrict the hyperparameter names that may be batched.
      stop_after: stop (as if killed) once a batch reaches this round (fault injection).
      progress: show progress bars (default: when stderr is a TTY).
      selection: a :class:`jaxfl.selection.Selection`: a private selection over the grid
        ``points`` (a random number of runs, each a grid point drawn afresh, the best one
        released with the epsilon of the whole procedure; see :mod:`jaxfl.selection`).
      public_split: declares that the sweep trains and compares on public data (recorded in
        the result's ``note``); without it the note says that choosing among the points on
        private data costs more than each point's epsilon.
      allow_change: a resumed point whose seed, data, config or mechanism changed composes
        the rounds it already released with the new ones instead of being refused
        (:mod:`jaxfl.ledger`). (A point's id is its config's hash, so a changed config is a
        new point; the ledger catches changed data and mechanisms under the same config.)
      max_epsilon: a hard budget per point (at its delta): each point stops before the round
        that would exceed it (:func:`jaxfl.training.run`).

    One process per sweep workdir (:class:`jaxfl.ledger.WorkdirLock`); every point keeps its
    own privacy ledger.

    Returns:
      A :class:`SweepResult` (with ``selection``: its ``selection`` field holds the
      :class:`jaxfl.selection.SelectionResult`).
    """
    import sys

    # ---- private selection (issue 40): K runs drawn from the grid, one sweep, the best kept
    from jaxfl import selection as selection_lib
    if selection is not None:
        if public_split:
            raise validate.JaxflValueError(
                "Expected either selection (private tuning) or public_split=True (tuning on "
                "public data), got both.")
        if max_epsilon is not None or allow_change:
            raise validate.JaxflValueError(
                "Expected neither max_epsilon nor allow_change with a private selection: each "
                "run's event must be the one the selection accounts (not a budget-stopped or "
                "composed one).")
        options = dict(chunk_size=chunk_size, memory_budget=memory_budget, vmap=vmap, mesh=mesh,
                       vmappable=vmappable, stop_after=stop_after, progress=progress)

        def reseed(grid: Point, index: int, seed: int) -> Point:  # run `index` of a grid point
            config = with_overrides(grid.config, {"seed": seed})
            return Point(index=index, overrides={**grid.overrides, "seed": seed}, config=config,
                         id=metrics.config_hash(config))

        picked = selection_lib.run(points, build, workdir, selection,
                                   lambda pts, b, w: run_sweep(pts, b, w, **options), reseed)
        base = picked.sweep or SweepResult(workdir=Path(workdir), table=Path(workdir) / TABLE,
                                           finished=[], ran=[], stopped=False, groups=[])
        return dataclasses.replace(base, selection=picked, note=picked.note)
    # ---- end of private selection

    if not str(workdir).strip():
        raise validate.JaxflValueError(
            "Expected a non-empty sweep workdir (an empty path would write into the current "
            "directory).")
    workdir = Path(workdir)
    if chunk_size is not None:
        chunk_size = validate.positive_int("chunk_size", chunk_size)
    if stop_after is not None:
        stop_after = validate.positive_int("stop_after", stop_after)
    progress = sys.stderr.isatty() if progress is None else progress
    if max_epsilon is not None:
        max_epsilon = validate.positive("max_epsilon", max_epsilon)
    main = sharding.is_main_process()
    lock = ledger.WorkdirLock(workdir) if main else None
    if lock is not None:
        lock.acquire()
    try:
        return _run_sweep_locked(points, build, workdir, chunk_size=chunk_size,
                                 memory_budget=memory_budget, vmap=vmap, mesh=mesh,
                                 vmappable=vmappable, stop_after=stop_after, progress=progress,
                                 allow_change=allow_change, max_epsilon=max_epsilon, main=main,
                                 public_split=public_split)
    finally:
        if lock is not None:
            lock.release()


def _run_sweep_locked(points, build, workdir, *, chunk_size, memory_budget, vmap, mesh,
                      vmappable, stop_after, progress, allow_change, max_epsilon, main,
                      public_split=False) -> SweepResult:
    from jaxfl import selection as selection_lib

    if main:
        workdir.mkdir(parents=True, exist_ok=True)
        manifest = {"points": [{"index": p.index, "id": p.id, "overrides": p.overrides}
                               for p in points]}
        checkpoint.atomic_write_text(workdir / "sweep.json",
                                     json.dumps(metrics.jsonable(manifest), indent=2))
    state = SweepState(workdir, points, build)  # what is on disk, read once (resume)
    build = state.spec  # each point's builder runs once in this sweep
    pending = [p for p in points if p.id not in state.finished]
    # Plan over every point, finished ones included: the chunks (and so each vmapped program)
    # are those of an uninterrupted run; finished points only pad their chunk (results dropped).
    todo = {p.id for p in pending}
    groups = plan(points, build, vmappable=vmappable, pending=todo) if (vmap and pending) else \
        [[p] for p in pending]
    groups = [g for g in groups if any(p.id in todo for p in g)]
    if memory_budget is not None:
        memory_budget = validate.positive_int("memory_budget", memory_budget)
    elif chunk_size is None and vmap:
        memory_budget = layout.device_budget()
    sizes = [chunk_size or (fit_chunk_size(build(next(p for p in g if p.id in todo).config),
                                           memory_budget)
                            if memory_budget and len(g) > 1 else None) for g in groups]
    queue = [(gi, chunk) for gi, group in enumerate(groups)
             for chunk in _chunks(group, sizes[gi]) if any(p.id in todo for p in chunk)]
    ran, stopped, batches, caches = [], False, [], {}
    caps, plans = {}, []  # points per program the planner narrowed a group to; their plans
    split_ids = itertools.count(-1, -1)
    while queue and not stopped:
        gi, chunk = queue.pop(0)
        if len(chunk) > caps.get(gi, len(chunk)):  # the planner halved this group's chunks
            queue[:0] = [(gi, chunk[i:i + caps[gi]]) for i in range(0, len(chunk), caps[gi])]
            continue
        width, chunk = len(chunk), [p for p in chunk if p.id in todo]
        if not any(state.saved_rounds(p) for p in chunk):
            width = len(chunk)  # never started (e.g. points added to a sweep): no dummy lanes
        if width == 1 and mesh is None:
            spec = build(chunk[0].config)
            with layout.sharing(1, budget=memory_budget):
                res = run_single(spec, state.dir(chunk[0]), stop_after=stop_after,
                                 progress=progress, allow_change=allow_change,
                                 max_epsilon=max_epsilon)
            stopped = (res.summary["rounds_completed"] < spec.rounds
                       and res.summary.get("stopped") != "max_epsilon")
            state.ran(chunk[0], None if stopped else res.history)
            plans.append({"sweep_points": [chunk[0].index], "program": "training round",
                          "plans": f"points/{chunk[0].id}/{planner.PLANS_FILE}"})
        else:
            try:
                batch = vmapped_runs.Batch(chunk, (build(p.config) for p in chunk), workdir, mesh)
            except validate.JaxflValueError as e:  # incl. ShapeError: split the chunk
                parts = _split(chunk, build, e)
                # each part is a group of its own (its own compiled function): fresh labels
                queue[:0] = [(next(split_ids), g) for g in parts]
                continue
            start = state.resume_round(chunk)
            log.info("sweep batch of %d points (width %d) from round %d", len(chunk), width,
                     start)
            try:
                stopped = vmapped_runs.run_batch(batch, start, stop_after, progress,
                                                 caches.setdefault(gi, {}), width=width,
                                                 memory_budget=memory_budget,
                                                 max_epsilon=max_epsilon,
                                                 allow_change=allow_change)
            except planner.NarrowPoints as e:  # halve the points; each half resumes
                for p in chunk:
                    state.ran(p, None)  # it may have checkpointed the rounds it ran
                half = max(1, -(-width // 2))
                caps[gi] = min(caps.get(gi, half), half)
                plans.append({"sweep_points": [p.index for p in chunk], **e.plan.record()})
                log.warning("sweep points %s do not fit one program (%s): chunks of %d",
                            [p.index for p in chunk], e, caps[gi])
                queue[:0] = [(gi, chunk[i:i + half]) for i in range(0, len(chunk), half)]
                if main:
                    planner.write_plans(workdir, plans)
                continue
            if batch.plan is not None:
                plans.append({"sweep_points": [p.index for p in chunk], **batch.plan.record()})
            for i, p in enumerate(chunk):
                state.ran(p, batch.histories[i] if i in batch.finished else None)
        batches.append([p.index for p in chunk])
        ran.extend(p.id for p in chunk)
        if main:
            planner.write_plans(workdir, plans)
            state.write_table()
    if main:
        state.write_table()
    return SweepResult(workdir=workdir, table=workdir / TABLE,
                       finished=[p.id for p in points if p.id in state.finished], ran=ran,
                       stopped=stopped, groups=batches,
                       note=selection_lib.sweep_note(public_split))


# ----------------------------------------------------------------------------- the table

def _cell(v):
    if isinstance(v, bool | int | float | str) or v is None:
        return "" if v is None else v
    return json.dumps(metrics.jsonable(v), sort_keys=True)


def write_table(workdir, points: Sequence[Point], records: dict | None = None) -> Path:
    """Rewrites ``results.csv`` atomically: one row per finished point and logged round, with
    the columns ``point``, ``point_id``, every swept key (each row holds its point's value,
    taken from its config), then the metric fields.

    ``records``: the finished points' logged records by point id (a running sweep's, held in
    memory, :class:`SweepState`); None reads each finished point's ``metrics.jsonl``."""
    workdir = Path(workdir)
    if records is None:
        records = {p.id: metrics.read_jsonl(workdir / "points" / p.id / "metrics.jsonl")
                   for p in points if is_finished(workdir, p)}
    override_cols, metric_cols, rows = [], [], []
    for p in points:
        if p.id not in records:
            continue
        for k in p.overrides:
            if k not in override_cols:
                override_cols.append(k)
        for rec in records[p.id]:
            for k in rec:
                if k not in metric_cols:
                    metric_cols.append(k)
            rows.append((p, rec))
    clash = set(override_cols) & set(metric_cols)
    header = ["point", "point_id", *override_cols,
              *[f"metric.{k}" if k in clash else k for k in metric_cols]]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for p, rec in rows:
        values = _flatten(metrics.jsonable(p.config)) if p.config is not None else {}
        values = {**values, **p.overrides}
        w.writerow([p.index, p.id, *[_cell(values.get(k)) for k in override_cols],
                    *[_cell(rec.get(k)) for k in metric_cols]])
    path = workdir / TABLE
    checkpoint.atomic_write_text(path, buf.getvalue())
    return path


def read_table(workdir) -> list[dict]:
    """The rows of ``results.csv`` as dicts of strings (``pandas.read_csv`` reads it too)."""
    path = Path(workdir) / TABLE
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


__all__ = ["RunSpec", "Point", "SweepResult", "run_single", "with_overrides", "expand", "plan",
           "run_sweep", "fit_chunk_size", "stack_round_inputs", "block_fn", "write_table",
           "read_table", "is_finished", "SweepState"]
