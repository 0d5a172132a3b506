"""Sweeps: many training runs as one ``vmap``ped, jit-compiled computation.

A sweep is a base config and a list of override dicts (``get_sweep()`` next to each config).
Points that differ only in their seed and in the scalar hyperparameters their algorithm
declares traceable (``Algorithm.hparams``: learning rates, clip norm, noise multiplier,
sampling rate) share every shape, so :func:`run_sweep` stacks their server states on a leading
*sweep axis* and runs each block of rounds as one ``lax.scan`` of ``vmap(apply)`` inside one
jit. Points that change a shape (model, number of clients, local steps...) form separate groups
(one vmapped batch each; a group of one point runs through :func:`jaxfl.training.run`).
Batches are chunked to ``chunk_size`` points (or to a memory budget) to fit the device.

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

import contextlib
import csv
import dataclasses
import io
import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import _validate, checkpoint, metrics, sharding, training
from jaxfl import random as jrandom
from jaxfl.algorithms import base

log = logging.getLogger(__name__)

SEED_FIELDS = ("seed",)
TABLE = "results.csv"


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """Everything :func:`jaxfl.training.run` needs for one run (built from a config)."""

    algorithm: base.Algorithm
    data: Any  # FederatedData
    params: Any
    rounds: int
    seed: int
    eval_fn: Callable[[Any], dict] | None = None
    eval_every: int = 1
    checkpoint_every: int = 10
    delta: float | None = None
    accountant: str = "rdp"
    final_accountant: str | None = "pld"
    config: Any = None
    extra_record: dict | None = None


def run_single(spec: RunSpec, workdir=None, **kwargs) -> training.RunResult:
    """Runs one spec alone with :func:`jaxfl.training.run` (the reference a sweep point equals)."""
    return training.run(spec.algorithm, spec.data, params=spec.params, rounds=spec.rounds,
                        seed=spec.seed, workdir=workdir, eval_fn=spec.eval_fn,
                        eval_every=spec.eval_every, checkpoint_every=spec.checkpoint_every,
                        delta=spec.delta, accountant=spec.accountant,
                        final_accountant=spec.final_accountant, config=spec.config,
                        extra_record=spec.extra_record, **kwargs)


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
            raise _validate.JaxflValueError(
                f"Expected an override among {sorted(names)}, got {head!r}.")
        new = value if not rest else _set(getattr(obj, head), rest, value)
        return dataclasses.replace(obj, **{head: new})
    if isinstance(obj, dict):
        new = value if not rest else _set(obj[head], rest, value)
        return {**obj, head: new}
    if obj is None and not rest:
        return {head: value}
    raise _validate.JaxflValueError(f"Cannot override {head!r} of {type(obj).__name__}.")


def expand(base_config, overrides: Sequence[dict]) -> list[Point]:
    """The sweep's points: ``base_config`` with each override dict applied.

    Raises:
      JaxflValueError: on an empty sweep or two overrides giving the same config.
    """
    if not overrides:
        raise _validate.JaxflValueError("Expected at least one sweep point, got none.")
    points, seen = [], {}
    for i, ov in enumerate(overrides):
        flat = _flatten(dict(ov))
        config = with_overrides(base_config, flat)
        pid = metrics.config_hash(config)
        if pid in seen:
            raise _validate.JaxflValueError(
                f"Expected distinct sweep points, got points {seen[pid]} and {i} equal.")
        seen[pid] = i
        points.append(Point(index=i, overrides=flat, config=config, id=pid))
    return points


def _group_key(config, vmappable: set) -> str:
    flat = _flatten(metrics._jsonable(config) if config is not None else {})
    if not isinstance(flat, dict):
        flat = {"": flat}
    kept = {k: v for k, v in flat.items() if k.split(".")[-1] not in vmappable}
    return json.dumps(kept, sort_keys=True, default=str)


# ----------------------------------------------------------------------------- batching

def _stack(trees):
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def _pad_cohort(c: base.Cohort, capacity: int) -> base.Cohort:
    """Pads the (last) slot axis of a cohort, or of a stack of cohorts, to ``capacity``."""
    width = [(0, 0)] * (np.ndim(c.indices) - 1) + [(0, capacity - np.shape(c.indices)[-1])]
    return base.Cohort(indices=np.pad(np.asarray(c.indices), width),
                       mask=np.pad(np.asarray(c.mask), width))


def stack_round_inputs(inputs: list):
    """Stacks round inputs of several points/rounds; Poisson cohorts are padded to a common
    capacity (padded slots are masked out). Raises ShapeError when shapes cannot agree."""
    if all(isinstance(x, base.Cohort) for x in inputs):
        cap = max(np.shape(x.indices)[-1] for x in inputs)
        inputs = [_pad_cohort(x, cap) for x in inputs]
    shapes = {str(jax.tree.map(np.shape, x)) for x in inputs}
    if len(shapes) != 1:
        raise _validate.ShapeError(f"Round inputs of different shapes cannot be batched: {shapes}")
    return _stack(inputs)


def _same_arrays(a, b) -> bool:
    if a is b:
        return True
    la, ta = jax.tree.flatten(a)
    lb, tb = jax.tree.flatten(b)
    return ta == tb and all(np.shape(x) == np.shape(y) and np.array_equal(x, y)
                            for x, y in zip(la, lb, strict=True))


def _key_data(seed: int) -> np.ndarray:
    return np.asarray(jax.random.key_data(jrandom.key_streams(seed, ("train",))["train"]))


def block_fn(algorithm: base.Algorithm, *, data_axis, spmd: bool):
    """``(states, data, round_inputs [L,P], key_data [P], hparams [P], rounds [L]) -> (states,
    last diagnostics [P])``: ``L`` rounds of ``P`` points as a scan over a vmap, jitted."""

    def one(state, data, round_input, key_data, hp, r):
        key = jrandom.round_key(jax.random.wrap_key_data(key_data), r)
        return algorithm.apply(state, data, round_input, key, hparams=hp)

    vm = jax.vmap(one, in_axes=(0, data_axis, 0, 0, 0, None),
                  spmd_axis_name=sharding.SWEEP if spmd else None)

    def block(states, data, round_inputs, key_data, hparams, rounds):
        def body(st, xs):
            ri, r = xs
            return vm(st, data, ri, key_data, hparams, r)

        states, diags = jax.lax.scan(body, states, (round_inputs, rounds))
        return states, jax.tree.map(lambda d: d[-1], diags)

    return jax.jit(block)


class _Batch:
    """Host bookkeeping of one vmapped batch of points (all at the same start round)."""

    def __init__(self, points, specs_iter, workdir: Path, mesh):
        self.points = points
        self.mesh = mesh
        self.dirs = [workdir / "points" / p.id for p in points]
        self.algs, self.params, self.seeds, self.evals, self.configs, self.extras = \
            [], [], [], [], [], []
        datas, rep = [], None
        for spec in specs_iter:
            if rep is None:
                rep = spec
            else:
                _check_compatible(rep, spec)
            self.algs.append(spec.algorithm)
            self.params.append(spec.params)
            self.seeds.append(int(spec.seed))
            self.evals.append(spec.eval_fn)
            self.configs.append(spec.config)
            self.extras.append(spec.extra_record)
            datas.append(spec.data if not datas or not _same_arrays(datas[0], spec.data)
                         else datas[0])
            if str(jax.tree.map(np.shape, spec.data)) != str(jax.tree.map(np.shape, datas[0])):
                raise _validate.ShapeError("Sweep points of one batch have data of different "
                                           "shapes.")
        self.rep = rep
        self.shared_data = all(d is datas[0] for d in datas)
        self.data = datas[0] if self.shared_data else _stack(
            [jax.tree.map(np.asarray, d) for d in datas])


def _check_compatible(rep: RunSpec, spec: RunSpec) -> None:
    for name in ("rounds", "eval_every", "checkpoint_every", "delta", "accountant",
                 "final_accountant"):
        if getattr(rep, name) != getattr(spec, name):
            raise _validate.JaxflValueError(
                f"Sweep points of one batch differ in {name}: {getattr(rep, name)} vs "
                f"{getattr(spec, name)}.")
    if sorted(rep.algorithm.hparams) != sorted(spec.algorithm.hparams) or \
            rep.algorithm.name != spec.algorithm.name:
        raise _validate.JaxflValueError("Sweep points of one batch use different algorithms.")


def _pad_points(tree, rows: int, axis: int = 0):
    """Repeats the last point along ``axis`` up to ``rows`` (dummy points, results dropped)."""
    def one(a):
        a = np.asarray(a)
        extra = rows - a.shape[axis]
        if extra <= 0:
            return a
        last = np.take(a, [a.shape[axis] - 1], axis=axis)
        return np.concatenate([a, np.repeat(last, extra, axis=axis)], axis=axis)

    return jax.tree.map(one, tree)


def _record(done, diag, p, batch, host_states, delta, accountant, t0):
    alg = batch.algs[p]
    record = {"round": done, **{k: float(v[p]) for k, v in diag.items()}}
    if batch.evals[p] is not None:
        params = alg.params_of(jax.tree.map(lambda a: a[p], host_states))
        record.update({k: float(v) for k, v in batch.evals[p](params).items()})
    if delta is not None:
        record["epsilon"] = training.privacy_spent(alg, done, delta, accountant)
        record["delta"] = delta
        record["accountant"] = accountant
    record.update(batch.extras[p] or {})
    record["elapsed_s"] = time.time() - t0
    return record


def _summary(alg, seed, rounds, last, rep: RunSpec, extra, history) -> dict:
    """The ``summary.json`` of one point, as :func:`jaxfl.training.run` writes it."""
    summary = {"algorithm": alg.name, "rounds_completed": last, "rounds": rounds, "seed": seed,
               "info": alg.info}
    delta = rep.delta
    if delta is not None and last == rounds:
        summary["epsilon_rdp"] = training.privacy_spent(alg, last, delta, "rdp")
        if rep.final_accountant == "pld":
            try:
                summary["epsilon_pld"] = training.privacy_spent(alg, last, delta, "pld")
            except _validate.JaxflValueError:
                summary["epsilon_pld"] = None
        summary["delta"] = delta
        from jaxfl.accounting import events
        summary["dp_event"] = events.to_json(alg.dp_event(last))
    summary.update(extra or {})
    if history:
        summary["final"] = history[-1]
    return summary


def _run_batch(batch: _Batch, start: int, stop_after: int | None, progress: bool,
               cache: dict) -> bool:
    """Runs one vmapped batch from round ``start``; returns True when stopped early.

    ``cache`` holds the jitted block function of the batch's group: every chunk of a group
    runs the first chunk's ``apply`` (equivalent by construction), so it compiles once.
    """
    rep, mesh = batch.rep, batch.mesh
    n = len(batch.points)
    main = sharding.is_main_process()
    rows = -(-n // sharding.axis_size(mesh, sharding.SWEEP)) * sharding.axis_size(
        mesh, sharding.SWEEP)
    writers = [metrics.JsonlWriter(d / "metrics.jsonl") for d in batch.dirs]
    host_states = []
    for p in range(n):
        state = batch.algs[p].init(batch.params[p])
        found = checkpoint.latest(batch.dirs[p] / "checkpoints")
        if found is not None:
            state = checkpoint.restore(found[0], state)
        host_states.append(jax.tree.map(np.asarray, state))
        if main:
            metrics.freeze_config(batch.dirs[p], batch.configs[p])
            writers[p].truncate_after(start)
    hp_names = sorted(rep.algorithm.hparams)
    hparams = {k: np.asarray([a.hparams[k] for a in batch.algs],
                             dtype=jnp.asarray(0.0, float).dtype) for k in hp_names}
    key_data = np.stack([_key_data(s) for s in batch.seeds])
    states = _pad_points(_stack(host_states), rows)
    hparams, key_data = _pad_points(hparams, rows), _pad_points(key_data, rows)
    data = batch.data if batch.shared_data else _pad_points(batch.data, rows)
    if mesh is not None:
        states = sharding.shard_sweep(states, mesh)
        hparams = sharding.shard_sweep(hparams, mesh)
        key_data = sharding.shard_sweep(key_data, mesh)
        data = sharding.shard_data(data, mesh, stacked=not batch.shared_data)
    else:
        data = jax.tree.map(jnp.asarray, data)
    fn_key = (batch.shared_data, mesh is not None)
    if fn_key not in cache:
        cache[fn_key] = block_fn(rep.algorithm, data_axis=None if batch.shared_data else 0,
                                 spmd=mesh is not None)
    fn = cache[fn_key]
    rounds, every, ckpt_every = rep.rounds, rep.eval_every, rep.checkpoint_every
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=rounds, initial=start, desc=f"{rep.algorithm.name} x{n}", leave=False)
    t0 = time.time()
    r = start
    stopped = False
    while r < rounds:
        end = min(rounds, (r // every + 1) * every, (r // ckpt_every + 1) * ckpt_every)
        if stop_after is not None:
            end = min(end, max(stop_after, r + 1))
        inputs = [stack_round_inputs(
            [batch.algs[p].prepare(t, jrandom.host_rng(batch.seeds[p], "sample", t))
             for p in range(n)]) for t in range(r, end)]
        inputs = stack_round_inputs(inputs) if len(inputs) > 1 else _stack(inputs)
        inputs = _pad_points(inputs, rows, axis=1)
        if mesh is not None:
            inputs = sharding.shard_sweep(inputs, mesh, axis=1)
        with jax.set_mesh(mesh) if mesh is not None else contextlib.nullcontext():
            states, diag = fn(states, data, inputs, key_data, hparams,
                              np.arange(r, end, dtype=np.int32))
        done = r = end
        log_now = done % every == 0 or done == rounds
        save_now = done % ckpt_every == 0 or done == rounds
        if log_now or save_now:
            host = sharding.to_host(states)
            diag = sharding.to_host(diag)
        if log_now:
            for p in range(n):
                rec = _record(done, diag, p, batch, host, rep.delta, rep.accountant, t0)
                if main:
                    writers[p].write(rec)
        if save_now and main:
            for p in range(n):
                checkpoint.save(batch.dirs[p] / "checkpoints", done,
                                jax.tree.map(lambda a, p=p: a[p], host),
                                {"seed": batch.seeds[p]})
        if bar is not None:
            bar.n = done
            bar.refresh()
        if stop_after is not None and done >= stop_after and done < rounds:
            stopped = True
            break
    if bar is not None:
        bar.close()
    if not stopped and main:
        for p in range(n):
            history = writers[p].read()
            summary = _summary(batch.algs[p], batch.seeds[p], rounds, rounds, rep,
                               batch.extras[p], history)
            checkpoint.atomic_write_text(
                batch.dirs[p] / "summary.json",
                json.dumps(metrics._jsonable(summary), indent=2, sort_keys=True))
    return stopped


# ----------------------------------------------------------------------------- the runner

def is_finished(workdir, point: Point) -> bool:
    return (Path(workdir) / "points" / point.id / "summary.json").exists()


def _start_round(workdir: Path, point: Point) -> int:
    found = checkpoint.latest(workdir / "points" / point.id / "checkpoints")
    return 0 if found is None else int(found[1]["round"])


def plan(points: Sequence[Point], build: Callable[[Any], RunSpec], *,
         vmappable: Sequence[str] | None = None) -> list[list[Point]]:
    """Groups points that can share one vmapped computation.

    Two points are batched when their configs agree except in seed fields and in fields named
    like a traceable hyperparameter of the algorithm their config builds (``vmappable`` limits
    the candidate names; default: every name in ``Algorithm.hparams``). The builder is called
    once per candidate group (for its algorithm's ``hparams``).
    """
    candidates: dict[str, list[Point]] = {}
    wide = set(SEED_FIELDS) | set(vmappable or _KNOWN_HPARAMS)
    for p in points:
        candidates.setdefault(_group_key(p.config, wide), []).append(p)
    groups = []
    for members in candidates.values():
        names = set(build(members[0].config).algorithm.hparams)
        if vmappable is not None:
            names &= set(vmappable)
        refined: dict[str, list[Point]] = {}
        for p in members:
            refined.setdefault(_group_key(p.config, set(SEED_FIELDS) | names), []).append(p)
        groups.extend(refined.values())
    return groups


_KNOWN_HPARAMS = ("client_lr", "server_lr", "clip_norm", "noise_multiplier", "sampling_rate")


def _chunks(workdir: Path, group: list, chunk_size: int | None):
    """``(start round, points)`` chunks of a group: same resume round, at most chunk_size."""
    by_start: dict[int, list[Point]] = {}
    for p in group:
        by_start.setdefault(_start_round(workdir, p), []).append(p)
    for start, members in sorted(by_start.items()):
        size = chunk_size or len(members)
        for i in range(0, len(members), size):
            yield start, members[i:i + size]


def run_sweep(points: Sequence[Point], build: Callable[[Any], RunSpec], workdir, *,
              chunk_size: int | None = None, vmap: bool = True, mesh=None,
              vmappable: Sequence[str] | None = None, stop_after: int | None = None,
              progress: bool | None = None) -> SweepResult:
    """Runs (or resumes) a sweep in ``workdir``.

    Args:
      points: from :func:`expand`.
      build: ``config -> RunSpec``; called once per point to run (and once per candidate
        group while planning). Builders should cache their data loading so that points share
        the same arrays (points whose data differ are still correct: the data are stacked).
      workdir: the sweep directory (``sweep.json``, ``results.csv``, ``points/<id>/``).
      chunk_size: at most this many points per vmapped computation (None: a whole group).
      vmap: False runs every point sequentially with :func:`jaxfl.training.run`.
      mesh: a :func:`jaxfl.sharding.make_mesh` mesh: points split over ``"sweep"``, clients
        over ``"clients"``.
      vmappable: restrict the hyperparameter names that may be batched.
      stop_after: stop (as if killed) once a batch reaches this round (fault injection).
      progress: show progress bars (default: when stderr is a TTY).

    Returns:
      A :class:`SweepResult`.
    """
    import sys

    workdir = Path(workdir)
    if chunk_size is not None:
        chunk_size = _validate.positive_int("chunk_size", chunk_size)
    if stop_after is not None:
        stop_after = _validate.positive_int("stop_after", stop_after)
    progress = sys.stderr.isatty() if progress is None else progress
    main = sharding.is_main_process()
    if main:
        workdir.mkdir(parents=True, exist_ok=True)
        manifest = {"points": [{"index": p.index, "id": p.id, "overrides": p.overrides}
                               for p in points]}
        checkpoint.atomic_write_text(workdir / "sweep.json",
                                     json.dumps(metrics._jsonable(manifest), indent=2))
    pending = [p for p in points if not is_finished(workdir, p)]
    groups = plan(pending, build, vmappable=vmappable) if (vmap and pending) else \
        [[p] for p in pending]
    queue = [(gi, start, chunk) for gi, group in enumerate(groups)
             for start, chunk in _chunks(workdir, group, chunk_size)]
    ran, stopped, batches, caches = [], False, [], {}
    while queue and not stopped:
        gi, start, chunk = queue.pop(0)
        if len(chunk) == 1 and mesh is None:
            spec = build(chunk[0].config)
            res = run_single(spec, workdir / "points" / chunk[0].id, stop_after=stop_after,
                             progress=progress)
            stopped = res.summary["rounds_completed"] < spec.rounds
        else:
            try:
                batch = _Batch(chunk, (build(p.config) for p in chunk), workdir, mesh)
            except _validate.JaxflValueError as e:  # incl. ShapeError: run one by one
                log.warning("sweep points %s run sequentially: %s", [p.index for p in chunk], e)
                queue[:0] = [(-1 - p.index, start, [p]) for p in chunk]
                continue
            log.info("sweep batch of %d points from round %d", len(chunk), start)
            stopped = _run_batch(batch, start, stop_after, progress, caches.setdefault(gi, {}))
        batches.append([p.index for p in chunk])
        ran.extend(p.id for p in chunk)
        if main:
            write_table(workdir, points)
    if main:
        write_table(workdir, points)
    return SweepResult(workdir=workdir, table=workdir / TABLE,
                       finished=[p.id for p in points if is_finished(workdir, p)], ran=ran,
                       stopped=stopped, groups=batches)


# ----------------------------------------------------------------------------- the table

def _cell(v):
    if isinstance(v, bool | int | float | str) or v is None:
        return "" if v is None else v
    return json.dumps(metrics._jsonable(v), sort_keys=True)


def write_table(workdir, points: Sequence[Point]) -> Path:
    """Rewrites ``results.csv`` atomically: one row per finished point and logged round, with
    the columns ``point``, ``point_id``, every swept key (each row holds its point's value,
    taken from its config), then the metric fields."""
    workdir = Path(workdir)
    override_cols, metric_cols, rows = [], [], []
    for p in points:
        if not is_finished(workdir, p):
            continue
        for k in p.overrides:
            if k not in override_cols:
                override_cols.append(k)
        for rec in metrics.read_jsonl(workdir / "points" / p.id / "metrics.jsonl"):
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
        values = _flatten(metrics._jsonable(p.config)) if p.config is not None else {}
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
           "run_sweep", "stack_round_inputs", "block_fn", "write_table", "read_table",
           "is_finished"]
