"""Many training runs of one algorithm as one ``vmap``ped, jit-compiled computation.

The engine behind :mod:`jaxfl.sweep`. A :class:`RunSpec` holds what
:func:`jaxfl.training.run` needs for one run; a :class:`Batch` stacks the server states of
several specs whose shapes agree (same algorithm and data shapes; they may differ in seed and
in the algorithm's traceable ``hparams``) on a leading *sweep axis*, and :func:`run_batch`
advances them through blocks of rounds, each block one ``lax.scan`` over rounds of a
``vmap`` over points, writing every point's workdir exactly as a single run would
(``config.json``, ``metrics.jsonl``, checkpoints, ``summary.json``).

Per point, round ``r`` uses the key ``round_key(train_stream(seed, g), r)`` and the host
generator ``sample_rng(seed, r, g)`` (``g``: the point ledger's ``generation``), like
:func:`jaxfl.training.run`; Poisson cohorts of
a block are padded to a common capacity (padded slots are masked out), so results equal the
single runs up to float rounding.

Example Usage:
  >>> import numpy as np
  >>> from jaxfl.algorithms import base
  >>> c = base.Cohort(np.array([4], np.int32), np.array([True]))
  >>> stack_round_inputs([c, base.full_cohort(2)]).mask.tolist()
  [[True, False], [True, True]]
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import checkpoint, layout, ledger, metrics, planner, sharding, training, validate
from jaxfl import random as jrandom
from jaxfl.algorithms import base
from jaxfl.data import federated


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """Everything :func:`jaxfl.training.run` needs for one run (built from a config).

    ``algorithm`` carries its accountant (:func:`jaxfl.accounting.report.of`). A spec with
    ``algorithm=None`` and a ``privacy`` accountant is an accounting-only run (a privacy
    study: epsilon after each logged round, no training), run by
    :func:`jaxfl.training.run_accounting`.
    """

    algorithm: base.Algorithm | None
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
    privacy: Any = None  # an Accountant for accounting-only specs (algorithm=None)
    #: ``(epsilon_with, spent) -> algorithm`` for a run calibrated to a target epsilon: the
    #: remaining rounds of a resumed or extended run, against what the workdir's ledger has
    #: spent (:func:`jaxfl.training.run`'s ``recalibrate``).
    recalibrate: Callable | None = None


def run_single(spec: RunSpec, workdir=None, **kwargs) -> training.RunResult:
    """Runs one spec alone with :func:`jaxfl.training.run` (the reference a sweep point equals)."""
    if spec.algorithm is None:
        kwargs.pop("progress", None)
        kwargs.pop("stop_after", None)  # accounting is not interruptible (nothing to resume)
        kwargs.pop("allow_change", None)  # nor trained: no release to charge or budget
        kwargs.pop("max_epsilon", None)
        return training.run_accounting(spec.privacy, rounds=spec.rounds, delta=spec.delta,
                                       workdir=workdir, eval_every=spec.eval_every,
                                       config=spec.config, extra_record=spec.extra_record,
                                       seed=spec.seed, **kwargs)
    return training.run(spec.algorithm, spec.data, params=spec.params, rounds=spec.rounds,
                        seed=spec.seed, workdir=workdir, eval_fn=spec.eval_fn,
                        eval_every=spec.eval_every, checkpoint_every=spec.checkpoint_every,
                        delta=spec.delta, accountant=spec.accountant,
                        final_accountant=spec.final_accountant, config=spec.config,
                        extra_record=spec.extra_record, recalibrate=spec.recalibrate, **kwargs)


def _stack(trees):
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def _pad_cohort(c: base.Cohort, capacity: int) -> base.Cohort:
    """Pads the (last) slot axis of a cohort, or of a stack of cohorts, to ``capacity``."""
    width = [(0, 0)] * (np.ndim(c.indices) - 1) + [(0, capacity - np.shape(c.indices)[-1])]
    return base.Cohort(indices=np.pad(np.asarray(c.indices), width),
                       mask=np.pad(np.asarray(c.mask), width))


def stack_round_inputs(inputs: list):
    """Stacks round inputs of several points/rounds; Poisson cohorts are padded to a common
    capacity (padded slots are masked out), and so are round inputs whose type defines
    ``pad_common(inputs) -> inputs`` (e.g. :class:`jaxfl.algorithms.subject_dp.RoundInput`:
    batches of points with different batch capacities). Raises ShapeError when shapes cannot
    agree."""
    if all(isinstance(x, base.Cohort) for x in inputs):
        cap = max(np.shape(x.indices)[-1] for x in inputs)
        inputs = [_pad_cohort(x, cap) for x in inputs]
    elif callable(pad := getattr(type(inputs[0]), "pad_common", None)) and \
            all(type(x) is type(inputs[0]) for x in inputs):
        inputs = pad(inputs)
    shapes = {str(jax.tree.map(np.shape, x)) for x in inputs}
    if len(shapes) != 1:
        raise validate.ShapeError(f"Round inputs of different shapes cannot be batched: {shapes}")
    return _stack(inputs)


def _same_arrays(a, b) -> bool:
    if a is b:
        return True
    la, ta = jax.tree.flatten(a)
    lb, tb = jax.tree.flatten(b)
    return ta == tb and all(np.shape(x) == np.shape(y) and np.array_equal(x, y)
                            for x, y in zip(la, lb, strict=True))


def _key_data(seed: int, generation: int = 0) -> np.ndarray:
    return np.asarray(jax.random.key_data(jrandom.train_stream(seed, generation)))


def block_fn(algorithm: base.Algorithm, *, data_axis, spmd: bool, donate: bool = False):
    """``(states, data, round_inputs [L,P], key_data [P], hparams [P], rounds [L]) -> (states,
    last diagnostics [P])``: ``L`` rounds of ``P`` points as a scan over a vmap, jitted.

    A block of one point (``P == 1``, without ``spmd``) runs that point's round unvmapped and
    puts the point axis back: the same results to float rounding, and the program
    :func:`jaxfl.training.run` compiles for the point (a single-lane vmap made XLA compute the
    DP-FedAvg MLP's weight gradients transposed; docs/scale.md, "Scatter-free rounds").

    ``donate=True`` donates ``states`` (argument 0): the block writes the next states into its
    buffers, which the call deletes, so the caller must pass states it owns and never reads
    again (:func:`run_batch` does; a timing loop that reuses one input must not).
    """

    def one(state, data, round_input, key_data, hp, r):
        key = jrandom.round_key(jax.random.wrap_key_data(key_data), r)
        return base.call_apply(algorithm, state, data, round_input, key, hp)

    vm = jax.vmap(one, in_axes=(0, data_axis, 0, 0, 0, None),
                  spmd_axis_name=sharding.SWEEP if spmd else None)

    def points(st, data, ri, kd, hp, r):
        if spmd or np.shape(kd)[0] != 1:
            return vm(st, data, ri, kd, hp, r)
        # One point: its round as the sequential program traces it (the vmap of a single lane
        # is the same computation, but XLA then lays the weight gradients out transposed:
        # docs/scale.md, "Scatter-free rounds"), and the point axis put back.
        first = lambda t: jax.tree.map(lambda a: a[0], t)  # noqa: E731
        d = data if data_axis is None else jax.tree.map(
            lambda a: jnp.take(a, 0, axis=data_axis), data)
        return jax.tree.map(lambda a: jnp.asarray(a)[None],
                            one(first(st), d, first(ri), kd[0], first(hp), r))

    def block(states, data, round_inputs, key_data, hparams, rounds):
        def body(st, xs):
            ri, r = xs
            return points(st, data, ri, key_data, hparams, r)

        states, diags = jax.lax.scan(body, states, (round_inputs, rounds))
        return states, jax.tree.map(lambda d: d[-1], diags)

    return jax.jit(block, donate_argnums=0 if donate else ())


def planned_block(algorithm: base.Algorithm, *, data_axis, spmd: bool,
                  donate: bool = False) -> planner.PlannedJit:
    """:func:`block_fn` compiled through the planner (:class:`jaxfl.planner.PlannedJit`): each
    signature's program is checked against the device budget before it runs (a block of
    several points that does not fit raises :class:`jaxfl.planner.NarrowPoints`; one point's
    unit axes are narrowed), and a RESOURCE_EXHAUSTED is retried narrower. What
    :func:`run_batch` and the sweep benchmark run."""
    return planner.PlannedJit(
        lambda: block_fn(algorithm, data_axis=data_axis, spmd=spmd, donate=donate),
        program="sweep block", donate_argnums=(0,) if donate else ())


def point_memory(spec: RunSpec) -> tuple[int, int]:
    """``(fixed, per_point)`` device bytes of one round of a vmapped batch of ``spec``-like
    points, from XLA's compiled memory analysis (arguments + outputs + temporaries) of batches
    of 2 and 4 points (shared data counted once, in ``fixed``; a batch of one is not measured:
    XLA simplifies it). Each point's memory-fitted unit axes (:func:`jaxfl.layout.fit`) are
    measured at one unit per chunk, their smallest layout."""
    alg = spec.algorithm
    state = jax.tree.map(np.asarray, alg.init(spec.params))
    cohort = alg.prepare(0, jrandom.host_rng(spec.seed, "sample", 0))
    fn = block_fn(alg, data_axis=None, spmd=False, donate=True)
    sds = lambda lead: (lambda a: jax.ShapeDtypeStruct((*lead, *np.shape(a)),
                                                        np.asarray(a).dtype))

    def total(p):
        args = (jax.tree.map(sds((p,)), state), jax.tree.map(sds(()), spec.data),
                jax.tree.map(sds((1, p)), cohort), sds((p,))(_key_data(0)),
                jax.tree.map(sds((p,)), base.bind_hparams(alg)),
                sds((1,))(np.int32(0)))
        with layout.sharing(p, unit_chunk=1):
            m = fn.lower(*args).compile().memory_analysis()
        if m is None:
            raise validate.JaxflValueError("XLA reports no memory analysis on this backend.")
        return (m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
                - m.alias_size_in_bytes)

    two, four = total(2), total(4)
    per = max(-(-(four - two) // 2), 1)
    return max(two - 2 * per, 0), per


class Batch:
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
        if len({data_shapes(d) for d in datas}) > 1 and all(a.paddable for a in self.algs) \
                and all(isinstance(d, federated.FederatedData) for d in datas):
            most = max(d.max_examples for d in datas)  # e.g. seed-dependent partitions
            datas = [federated.pad_examples(d, most) for d in datas]
        if len({data_shapes(d) for d in datas}) > 1:
            raise validate.ShapeError("Sweep points of one batch have data of different shapes.")
        self.rep = rep
        self.plan = None  # the planner's plan of the batch's last block (jaxfl.planner.Plan)
        # Filled by run_batch, kept in memory for the sweep (its table): each point's logged
        # records (as written to its metrics.jsonl) and the points whose summary was written.
        self.histories = [[] for _ in points]
        self.finished = set()
        self.shared_data = all(d is datas[0] for d in datas)
        self.data = datas[0] if self.shared_data else _stack(
            [jax.tree.map(np.asarray, d) for d in datas])


def data_shapes(tree) -> str:
    return str(jax.tree.map(np.shape, tree))


def _check_compatible(rep: RunSpec, spec: RunSpec) -> None:
    for name in ("rounds", "eval_every", "checkpoint_every", "delta", "accountant",
                 "final_accountant"):
        if getattr(rep, name) != getattr(spec, name):
            raise validate.JaxflValueError(
                f"Sweep points of one batch differ in {name}: {getattr(rep, name)} vs "
                f"{getattr(spec, name)}.")
    if sorted(rep.algorithm.hparams) != sorted(spec.algorithm.hparams) or \
            rep.algorithm.name != spec.algorithm.name:
        raise validate.JaxflValueError("Sweep points of one batch use different algorithms.")


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


def _record(done, diag, p, batch, host_states, delta, curves, t0):
    alg = batch.algs[p]
    record = {"round": done, **{k: float(v[p]) for k, v in diag.items()}}
    if batch.evals[p] is not None:
        params = alg.params_of(jax.tree.map(lambda a: a[p], host_states))
        record.update({k: float(v) for k, v in batch.evals[p](params).items()})
    if delta is not None:
        acc, curve = curves[p]
        record.update(training.epsilon_record(acc, curve[done], delta))
    record.update(batch.extras[p] or {})
    record["elapsed_s"] = time.time() - t0
    return record


def _summary(alg, seed, rounds, last, rep: RunSpec, extra, history, acc, *, book=None,
             max_epsilon=None) -> dict:
    """The ``summary.json`` of one point, as :func:`jaxfl.training.run` writes it."""
    summary = {"algorithm": alg.name, "rounds_completed": last, "rounds": rounds, "seed": seed,
               "info": alg.info, "backend": jax.default_backend(),
               "deterministic": layout.deterministic()}
    if max_epsilon is not None:
        summary["max_epsilon"] = max_epsilon
        if last < rounds:
            summary["stopped"] = "max_epsilon"
    delta = rep.delta
    if delta is not None:
        summary.update(training.final_privacy(alg, last, delta, rep.final_accountant, acc))
    if book is not None:
        summary["ledger"] = book.summary()
    summary.update(extra or {})
    if history:
        summary["final"] = history[-1]
    return summary


def run_batch(batch: Batch, start: int, stop_after: int | None, progress: bool,
              cache: dict, width: int | None = None, memory_budget: int | None = None,
              max_epsilon: float | None = None, allow_change: bool = False) -> bool:
    """Runs one vmapped batch from round ``start``; returns True when stopped early.

    Every point restarts from its checkpoint after ``start`` rounds (from its initial state
    when ``start`` is 0); its log is cut back to ``start``. ``width`` pads the sweep axis to that
    many points (dummy lanes, results dropped): a resumed batch with fewer unfinished points
    then runs the same program, lane for lane, as the uninterrupted one. ``cache`` holds the
    jitted block function of the batch's group: every chunk of a group runs the first chunk's
    ``apply`` (equivalent by construction), so it compiles once. The points of a device share
    its memory: each point's unit axes are fitted to its share of ``memory_budget`` (default:
    :func:`jaxfl.layout.device_budget`) when the block is traced (:func:`jaxfl.layout.sharing`).
    """
    rep, mesh = batch.rep, batch.mesh
    n = len(batch.points)
    main = sharding.is_main_process()
    rows = -(-max(n, width or 0) // sharding.axis_size(mesh, sharding.SWEEP)) * \
        sharding.axis_size(mesh, sharding.SWEEP)
    writers = [metrics.JsonlWriter(d / "metrics.jsonl") for d in batch.dirs]
    host_states = []
    books = []
    old_logs = []  # what each point's log held at the start (a resume's one read)
    point_data = (lambda p: batch.data) if batch.shared_data else (
        lambda p: jax.tree.map(lambda a: a[p], batch.data))
    for p in range(n):
        base.check_run_data(batch.algs[p], point_data(p))
    for p in range(n):
        state = batch.algs[p].init(batch.params[p])
        if start > 0:
            found = checkpoint.at_round(batch.dirs[p] / "checkpoints", start)
            if found is None:
                raise validate.JaxflValueError(
                    f"No intact checkpoint after round {start} in {batch.dirs[p]}.")
            state = checkpoint.restore(found, state)
        host_states.append(jax.tree.map(np.asarray, state))
        # a resume reads the point's log once (a fresh point has none: nothing is read; a
        # point killed before its first checkpoint has records its ledger must charge); from
        # then on its records are kept in memory (batch.histories) as they are written
        old = writers[p].read()
        batch.histories[p] = [r for r in old if r.get("round", -1) <= start]
        old_logs.append(old)
        logged = max((int(r.get("round", 0)) for r in old), default=0)
        # each point's privacy ledger: a changed point is refused, what ran is charged
        books.append(ledger.Ledger.start(
            batch.dirs[p], algorithm=batch.algs[p], data=point_data(p), seed=batch.seeds[p],
            config=batch.configs[p], rounds=rep.rounds, start=start, logged=logged,
            allow_change=allow_change, fresh_reruns=True))
    for p in range(n):
        if main:
            batch.dirs[p].mkdir(parents=True, exist_ok=True)
            books[p].write()
            metrics.freeze_config(batch.dirs[p], batch.configs[p])
            writers[p].truncate_after(start, old_logs[p])
    # each point's values, checked against its own accountant before anything is traced
    hparams = base.bind_hparams(batch.algs)
    gens = [b.generation for b in books]  # a point's re-runs of released rounds (ledger)
    key_data = np.stack([_key_data(s, g) for s, g in zip(batch.seeds, gens, strict=True)])
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
        # device arrays this loop owns (fresh copies of the stacked host states): the donated
        # block may reuse them, and nothing else refers to them
        states = jax.tree.map(jnp.array, states)
    fn_key = (batch.shared_data, mesh is not None)
    if fn_key not in cache:
        # The states are donated: each block writes the next states into the buffers of its
        # input. Safe because the loop reads a block's states (logging and checkpoints copy them
        # to the host) before the next call and never after, and the first states are private
        # device copies of the stacked host states (shard_sweep places fresh copies too).
        # Every block is compiled through the planner (:mod:`jaxfl.planner`): fitted to the
        # device's budget before it runs, narrowed on RESOURCE_EXHAUSTED.
        cache[fn_key] = planned_block(rep.algorithm, data_axis=None if batch.shared_data else 0,
                                      spmd=mesh is not None, donate=True)
    fn = cache[fn_key]
    rounds, every, ckpt_every = rep.rounds, rep.eval_every, rep.checkpoint_every
    curves = []
    stops = [rounds] * n  # each point's last round (a budget stops it earlier)
    if rep.delta is not None:
        for p, alg in enumerate(batch.algs):
            acc = books[p].accountant(
                training.accountant_for(alg, rep.accountant, rep.final_accountant))
            if max_epsilon is not None:
                stops[p] = ledger.budget_stop(acc, start=start, rounds=rounds, delta=rep.delta,
                                              max_epsilon=max_epsilon)
            todo = training.logged_rounds(start, stops[p], every)
            eps = acc.epsilons(todo, rep.delta).tolist() if todo else []
            curves.append((acc, dict(zip(todo, eps, strict=True))))
    elif max_epsilon is not None:
        raise validate.JaxflValueError("max_epsilon needs the runs' delta.")
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=rounds, initial=start, desc=f"{rep.algorithm.name} x{n}", leave=False)
    t0 = time.time()
    r = start
    stopped = False
    finished = [False] * n
    while r < rounds:
        end = min(rounds, (r // every + 1) * every, (r // ckpt_every + 1) * ckpt_every,
                  *[s for s in stops if s > r])
        if stop_after is not None:
            end = min(end, max(stop_after, r + 1))
        inputs = [stack_round_inputs(
            [batch.algs[p].prepare(t, jrandom.sample_rng(batch.seeds[p], t, gens[p]))
             for p in range(n)]) for t in range(r, end)]
        inputs = stack_round_inputs(inputs) if len(inputs) > 1 else _stack(inputs)
        inputs = _pad_points(inputs, rows, axis=1)
        if mesh is not None:
            inputs = sharding.shard_sweep(inputs, mesh, axis=1)
        with jax.set_mesh(mesh) if mesh is not None else contextlib.nullcontext(), \
                layout.sharing(rows // sharding.axis_size(mesh, sharding.SWEEP),
                               budget=memory_budget):
            try:
                states, diag = fn(states, data, inputs, key_data, hparams,
                                  np.arange(r, end, dtype=np.int32))
            except planner.NarrowPoints as e:
                # fewer points per program (jaxfl.sweep): keep the rounds done so far
                if e.intact and r > start and r % ckpt_every != 0:
                    host = sharding.to_host(states)  # on every process (a collective)
                    for p in range(n if main else 0):
                        checkpoint.save(batch.dirs[p] / "checkpoints", r,
                                        jax.tree.map(lambda a, p=p: a[p], host),
                                        {"seed": batch.seeds[p]})
                batch.plan = e.plan
                raise
            batch.plan = fn.current_plan
        done = r = end
        live = [p for p in range(n) if not finished[p]]
        at_stop = {p for p in live if done == stops[p]}
        log_now = done % every == 0 or done == rounds or bool(at_stop)
        save_now = done % ckpt_every == 0 or done == rounds or bool(at_stop)
        if log_now or save_now:
            host = sharding.to_host(states)
            diag = sharding.to_host(diag)
            for p in live:
                _check_point_finite(batch, p, host, diag, done)
        if log_now:
            for p in live:
                if done % every and done != rounds and p not in at_stop:
                    continue
                rec = _record(done, diag, p, batch, host, rep.delta, curves, t0)
                books[p].charge(done)
                batch.histories[p].append(writers[p].write(rec) if main
                                          else metrics.as_logged(rec))
        if save_now and main:
            for p in live:
                if done % ckpt_every and done != rounds and p not in at_stop:
                    continue
                books[p].charge(done)
                books[p].write()
                checkpoint.save(batch.dirs[p] / "checkpoints", done,
                                jax.tree.map(lambda a, p=p: a[p], host),
                                {"seed": batch.seeds[p]})
        for p in at_stop:
            finished[p] = True
            if done < rounds and main:  # stopped by the budget: its summary now
                _write_summary(batch, p, rounds, done, rep, books[p], curves, max_epsilon)
        # On the CPU backend the host arrays are views of the states' device buffers, and a
        # buffer still viewed cannot be donated (the next block would silently copy it).
        host = None
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
            if stops[p] == rounds:
                _write_summary(batch, p, rounds, rounds, rep, books[p], curves, max_epsilon)
    return stopped


def _check_point_finite(batch, p, host, diag, done) -> None:
    params = batch.algs[p].params_of(jax.tree.map(lambda a: a[p], host))
    loss = diag.get("train_loss")
    bad = training.non_finite(params, None if loss is None else loss[p])
    if bad:
        raise training.NonFiniteError(
            f"Sweep point {batch.points[p].id}: round {done} produced non-finite "
            f"{' and '.join(bad)}; the sweep stops (the point's last good checkpoint is kept "
            f"in {batch.dirs[p] / 'checkpoints'}).")


def _write_summary(batch, p, rounds, last, rep, book, curves, max_epsilon) -> None:
    """Writes point ``p``'s ``summary.json`` from its records in memory (its log is not read
    back) and marks it finished in ``batch.finished``."""
    summary = _summary(batch.algs[p], batch.seeds[p], rounds, last, rep, batch.extras[p],
                       batch.histories[p], curves[p][0] if curves else None, book=book,
                       max_epsilon=max_epsilon)
    checkpoint.atomic_write_text(batch.dirs[p] / "summary.json",
                                 json.dumps(metrics.jsonable(summary), indent=2, sort_keys=True))
    batch.finished.add(p)


__all__ = ["RunSpec", "run_single", "stack_round_inputs", "block_fn", "planned_block",
           "point_memory", "Batch",
           "run_batch", "data_shapes"]
