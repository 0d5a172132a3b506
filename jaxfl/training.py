"""The generic round loop: prepare (host) -> apply (jit) -> metrics -> checkpoint.

``run`` drives any :class:`~jaxfl.algorithms.base.Algorithm`. Round ``r`` (0-based) uses the key
``round_key(train_stream(seed, g), r)`` and the host generator ``sample_rng(seed, r, g)``
(:mod:`jaxfl.random`), so a round's randomness depends only on (seed, r, g): a run resumed from
a checkpoint after round r repeats rounds r+1.. exactly and produces bit-identical results on
CPU. ``g`` is the privacy ledger's ``generation`` (0 unless released rounds were re-run under a
new segment, :mod:`jaxfl.ledger`; 0 gives the keys of ``key_streams(seed)["train"]`` and
``host_rng(seed, "sample", r)``).

Outputs in ``workdir`` (when given): ``config.json`` (frozen config, hash, git revision),
``metrics.jsonl`` (one record per logged round: round, train_loss, eval metrics, epsilon with
the accountant that computed it), ``checkpoints/`` (atomic, checksummed) and ``summary.json``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxfl import checkpoint, layout, ledger, metrics, planner, sharding, validate
from jaxfl import random as jrandom
from jaxfl.accounting import accountants, report
from jaxfl.algorithms import base


@dataclasses.dataclass(frozen=True)
class RunResult:
    state: Any
    history: list
    summary: dict


def accountant_for(algorithm, accountant: str = "rdp", final_accountant: str | None = "pld"
                   ) -> report.Accountant:
    """The algorithm's accountant (:func:`jaxfl.accounting.report.of`) with the per-round and
    final methods ``accountant`` / ``final_accountant`` where it offers a choice
    (:meth:`~jaxfl.accounting.report.Accountant.configured`)."""
    return report.of(algorithm).configured(per_round=accountant, final=final_accountant)


def final_privacy(algorithm, rounds: int, delta: float, final_accountant: str | None,
                  accountant: report.Accountant | None = None) -> dict:
    """The privacy fields of a finished run's summary.

    ``privacy``: the accountant's :class:`~jaxfl.accounting.report.PrivacyReport` (JSON) in
    its selected mode and ``privacy_<mode>`` for each other mode (e.g. ``privacy_paper``);
    ``epsilon`` (the headline) and ``delta``; then the accountant's
    :meth:`~jaxfl.accounting.report.Accountant.summary_fields` (for a DpEvent accountant
    ``epsilon_rdp``, ``epsilon_pld`` and ``dp_event``).
    """
    acc = accountant if accountant is not None else accountant_for(
        algorithm, "rdp", final_accountant)
    out = report.reports(acc, rounds, delta)
    out["epsilon"] = out["privacy"]["epsilon"]
    out["delta"] = delta
    out.update(acc.summary_fields(out["privacy"]))
    return out


def epsilon_record(acc: report.Accountant, epsilon: float, delta: float) -> dict:
    """The privacy fields of one metrics record: the headline epsilon and its labels."""
    return {"epsilon": epsilon, "delta": delta, "accountant": acc.per_round_method,
            "unit": acc.unit,
            "privacy_mode": acc.mode}


def logged_rounds(start: int, rounds: int, eval_every: int) -> list[int]:
    """The rounds after ``start`` whose records are logged: multiples of ``eval_every`` and
    the last round."""
    return [r for r in range(start + 1, rounds + 1) if r % eval_every == 0 or r == rounds]


FINAL_ACCOUNTANTS = (None, *accountants.ACCOUNTANTS)
MAX_SEED = 2**32  # host_rng keeps 32 bits of the seed


def _check_run_args(algorithm, *, rounds, seed, workdir, eval_fn, eval_every, checkpoint_every,
                    delta, accountant, final_accountant, progress, extra_record, stop_after,
                    max_epsilon=None, allow_change=False):
    """Validates :func:`run`'s arguments (typed errors, before any work)."""
    for attr in ("init", "prepare", "apply", "params_of"):
        if not callable(getattr(algorithm, attr, None)):
            raise validate.JaxflValueError(
                f"Expected an Algorithm with a callable `{attr}`, got algorithm={algorithm!r}.")
    if delta is not None:
        report.of(algorithm)  # raises when the algorithm has no accountant
    out = {"rounds": validate.positive_int("rounds", rounds, minimum=0),
           "seed": validate.positive_int("seed", seed, minimum=0),
           "eval_every": validate.positive_int("eval_every", eval_every),
           "checkpoint_every": validate.positive_int("checkpoint_every", checkpoint_every),
           "delta": None if delta is None else validate.delta(delta),
           "stop_after": None if stop_after is None else validate.positive_int(
               "stop_after", stop_after)}
    if out["seed"] >= MAX_SEED:
        raise validate.JaxflValueError(f"Expected seed < 2**32, got seed={seed!r}.")
    validate.one_of("accountant", accountant, accountants.ACCOUNTANTS)
    validate.one_of("final_accountant", final_accountant, FINAL_ACCOUNTANTS)
    if workdir is not None and not isinstance(workdir, str | os.PathLike):
        raise validate.JaxflValueError(
            f"Expected workdir to be a path or None, got workdir={workdir!r}.")
    if workdir is not None and not str(workdir).strip():
        raise validate.JaxflValueError(
            "Expected a non-empty workdir (an empty path would write into the current "
            "directory), got workdir=''.")
    if max_epsilon is not None:
        if delta is None:
            raise validate.JaxflValueError(
                f"max_epsilon={max_epsilon!r} needs a delta to measure the budget at.")
        out["max_epsilon"] = validate.positive("max_epsilon", max_epsilon,
                                               validate.PrivacyParameterError)
    if not isinstance(allow_change, bool):
        raise validate.JaxflValueError(
            f"Expected allow_change to be True or False, got allow_change={allow_change!r}.")
    if eval_fn is not None and not callable(eval_fn):
        raise validate.JaxflValueError(f"Expected a callable eval_fn, got eval_fn={eval_fn!r}.")
    if progress is not None and not isinstance(progress, bool):
        raise validate.JaxflValueError(
            f"Expected progress to be True, False or None, got progress={progress!r}.")
    if extra_record is not None and not isinstance(extra_record, dict):
        raise validate.JaxflValueError(
            f"Expected extra_record to be a dict or None, got extra_record={extra_record!r}.")
    return out


def run(algorithm, data, *, params, rounds: int, seed: int, workdir=None,
        eval_fn: Callable[[Any], dict] | None = None, eval_every: int = 1,
        checkpoint_every: int = 10, delta: float | None = None, accountant: str = "rdp",
        final_accountant: str | None = "pld", config=None, progress: bool | None = None,
        extra_record: dict | None = None, stop_after: int | None = None,
        allow_change: bool = False, max_epsilon: float | None = None,
        recalibrate: Callable | None = None) -> RunResult:
    """Trains ``algorithm`` on ``data`` for ``rounds`` rounds (resuming from ``workdir``).

    Args:
      algorithm: the algorithm record.
      data: a :class:`~jaxfl.data.FederatedData` (moved to device once).
      params: initial model parameters.
      rounds: total number of rounds.
      seed: run seed (keys and host generators derive from it).
      workdir: output directory (None = in-memory run, no checkpoints).
      eval_fn: ``params -> dict`` of scalar metrics (e.g. test accuracy), every ``eval_every``.
      checkpoint_every: rounds between checkpoints (the last round is always saved).
      delta: report epsilon at this delta each logged round (None: not reported).
      accountant: accountant of the per-round epsilon ("rdp" is fast; "pld" is tight).
      final_accountant: ``"pld"`` adds the tight ``epsilon_pld`` to ``summary.json`` (on a grid
        bounded by :func:`~jaxfl.accounting.accountants.bounded_pld_interval`, so tiny noise
        multipliers stay cheap); ``"rdp"`` or None: only ``epsilon_rdp``.
      config: the experiment config, frozen into ``config.json``.
      progress: show a progress bar (default: when stderr is a TTY).
      extra_record: constant fields added to every metric record (e.g. ``{"mode": "strict"}``).
      stop_after: stop (as if killed) after this many rounds; for fault-injection tests.
      allow_change: on a resume, compose the rounds the workdir already released with the new
        run's instead of refusing a changed seed, data, config or mechanism
        (:mod:`jaxfl.ledger`).
      max_epsilon: a hard budget at ``delta``: the run stops before the first round whose
        epsilon (of everything the workdir released) would exceed it, and writes its checkpoint
        and summary (``"stopped": "max_epsilon"``).
      recalibrate: for a run calibrated to a target epsilon: ``(epsilon_with, spent) ->
        algorithm``, called on a resume whose mechanism differs from the one that ran;
        ``epsilon_with(alg)`` is the headline epsilon of the whole run when the remaining rounds
        run ``alg``, ``spent`` that of the rounds already released. It returns the algorithm for
        the remaining rounds (or raises :class:`jaxfl.ledger.BudgetError`).

    Privacy ledger: with a workdir, ``ledger.json`` records the seed, the data, the config and
    the mechanism of every round released; a resume that changes any of them is refused unless
    ``allow_change`` (or a ``recalibrate`` of the mechanism), and the reported epsilon is that
    of every round released (:mod:`jaxfl.ledger`). One process per workdir
    (:class:`jaxfl.ledger.WorkdirLock`).

    Multi-host: every process runs the rounds (and reads checkpoints to resume), but only
    process 0 (``jax.process_index() == 0``) writes files; on the other processes ``history``
    holds only the records of the rounds run by this call.

    Raises:
      JaxflValueError: for a bad argument (before any work starts), a refused resume
        (:class:`jaxfl.ledger.ResumeMismatchError`), a held workdir, a budget below one round
        (:class:`jaxfl.ledger.BudgetError`), or non-finite training values
        (:class:`NonFiniteError`, naming the round; the last good checkpoint is kept).
    """
    checked = _check_run_args(
        algorithm, rounds=rounds, seed=seed, workdir=workdir, eval_fn=eval_fn,
        eval_every=eval_every, checkpoint_every=checkpoint_every, delta=delta,
        accountant=accountant, final_accountant=final_accountant, progress=progress,
        extra_record=extra_record, stop_after=stop_after, max_epsilon=max_epsilon,
        allow_change=allow_change)
    rounds, seed, delta, stop_after = (checked[k] for k in ("rounds", "seed", "delta",
                                                             "stop_after"))
    max_epsilon = checked.get("max_epsilon")
    eval_every, checkpoint_every = checked["eval_every"], checked["checkpoint_every"]
    if recalibrate is not None and not callable(recalibrate):
        raise validate.JaxflValueError(f"Expected a callable recalibrate, got {recalibrate!r}.")
    # the data against the algorithm, on the host, before any work: layout, the counts the
    # builder and its accountant were built for, shapes, mask vs counts, finite values, labels
    base.check_run_data(algorithm, data)
    main = sharding.is_main_process()
    lock = ledger.WorkdirLock(workdir) if (workdir is not None and main) else None
    if lock is not None:
        lock.acquire()
    try:
        return _run_locked(
            algorithm, data, params=params, rounds=rounds, seed=seed, workdir=workdir,
            eval_fn=eval_fn, eval_every=eval_every, checkpoint_every=checkpoint_every,
            delta=delta, accountant=accountant, final_accountant=final_accountant,
            config=config, progress=progress, extra_record=extra_record, stop_after=stop_after,
            allow_change=allow_change, max_epsilon=max_epsilon, recalibrate=recalibrate,
            main=main)
    finally:
        if lock is not None:
            lock.release()


class NonFiniteError(validate.JaxflValueError):
    """A round produced a non-finite loss or non-finite parameters."""


@jax.jit
def _all_finite(tree):
    leaves = [jax.numpy.all(jax.numpy.isfinite(x)) for x in jax.tree.leaves(tree)
              if jax.numpy.issubdtype(jax.numpy.result_type(x), jax.numpy.inexact)]
    return jax.numpy.all(jax.numpy.stack(leaves)) if leaves else jax.numpy.bool_(True)


def non_finite(params, train_loss=None) -> list[str]:
    """What of a round's outputs is not finite: ``"train_loss"`` and/or ``"parameters"``."""
    bad = [] if train_loss is None or np.isfinite(float(train_loss)) else ["train_loss"]
    if not bool(_all_finite(params)):
        bad.append("parameters")
    return bad


def _check_finite(algorithm, state, diag: dict, done: int, ckpt_dir) -> None:
    bad = non_finite(algorithm.params_of(state), diag.get("train_loss"))
    if bad:
        last = checkpoint.latest(ckpt_dir) if ckpt_dir is not None else None
        keep = (f"the last good checkpoint (round {last[1]['round']}) is kept in {ckpt_dir}"
                if last is not None else "no checkpoint was saved")
        raise NonFiniteError(
            f"Round {done} produced non-finite {' and '.join(bad)}; the run stops ({keep}). "
            f"Check the data (NaN/inf features, labels out of range) and the learning rate.")


def _check_writable(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise validate.JaxflValueError(
            f"Cannot write checkpoints into {directory}: {e.strerror or e}. Make the workdir "
            f"writable or choose another one.") from e


def _restore_latest(ckpt_dir: Path, state):
    """``(state, start)`` from the newest intact checkpoint (``(state, 0)`` when there is
    none); refuses a directory whose checkpoints are all corrupt and warns about a skipped
    corrupt newer one. A payload without its metadata file is a save that a kill interrupted
    between its two atomic writes (the payload is written first): it was never finished, so it
    is neither corrupt nor restored (the rounds it held were charged from the log)."""
    import warnings

    names = checkpoint.list_checkpoints(ckpt_dir)
    finished = [p for p in names if p.with_suffix(".json").exists()]
    found = checkpoint.latest(ckpt_dir)
    if finished and found is None:
        raise validate.JaxflValueError(
            f"Every checkpoint in {ckpt_dir} is corrupt ({', '.join(p.name for p in finished)}): "
            f"resuming would restart from round 0 and discard the rounds already run and "
            f"charged. Restore them, or remove the workdir to start over.")
    if found is None:
        return state, 0
    path, meta = found
    skipped = [p.name for p in names if p != path and
               int(checkpoint._NAME.search(p.name).group(1)) > int(meta["round"])]  # noqa: SLF001
    if skipped:
        warnings.warn(f"Corrupt checkpoint(s) {', '.join(skipped)} in {ckpt_dir} skipped; "
                      f"resuming from round {meta['round']} ({path.name}).", stacklevel=3)
    try:
        restored = checkpoint.restore(path, state)
    except (ValueError, KeyError, TypeError) as e:
        raise validate.JaxflValueError(
            f"The checkpoint {path} does not fit this run's state ({type(e).__name__}: {e}); "
            f"it was written by another algorithm or model. Use a new workdir.") from e
    return jax.tree.map(jax.numpy.asarray, restored), int(meta["round"])


def _spent_with(old: ledger.Ledger, *, algorithm, start, rounds, delta, accountant,
                final_accountant):
    """``(epsilon_with, spent)`` for a recalibration against the ledger ``old``."""
    import copy

    def with_segment(alg, upto):
        trial = copy.deepcopy(old)
        trial.path = None
        trial.charge(start)
        trial.segments.append({"start": int(start), "end": int(start),
                               "mechanism": ledger.mechanism(alg)})
        acc = trial.accountant(accountant_for(alg, accountant, final_accountant))
        return acc.report(upto, delta).epsilon

    return (lambda alg: with_segment(alg, rounds)), with_segment(algorithm, start)


def _run_locked(algorithm, data, *, params, rounds, seed, workdir, eval_fn, eval_every,
                checkpoint_every, delta, accountant, final_accountant, config, progress,
                extra_record, stop_after, allow_change, max_epsilon, recalibrate, main):
    device_data = data.to_device() if hasattr(data, "to_device") else data
    start = 0
    writer = None
    ckpt_dir = None
    book = None
    if workdir is not None:
        workdir = Path(workdir)
        ckpt_dir = workdir / "checkpoints"
        if main:
            _check_writable(ckpt_dir)
        state, start = _restore_latest(ckpt_dir, algorithm.init(params))
        jsonl = workdir / "metrics.jsonl"
        logged = max((int(r.get("round", 0)) for r in metrics.read_jsonl(jsonl)), default=0)
        old = ledger.Ledger.read(workdir)
        legacy = {}
        if old is None and start > 0:
            cfg_path = workdir / "config.json"
            if cfg_path.exists():
                legacy["legacy_config"] = json.loads(cfg_path.read_text()).get("config")
            found = checkpoint.latest(ckpt_dir)
            legacy["legacy_seed"] = found[1].get("seed") if found else None
        allow = allow_change
        if (recalibrate is not None and old is not None and delta is not None
                and max(old.released, start, logged) > 0
                and old.segments[-1]["mechanism"] != ledger.mechanism(algorithm)):
            epsilon_with, spent = _spent_with(
                old, algorithm=algorithm, start=start, rounds=rounds, delta=delta,
                accountant=accountant, final_accountant=final_accountant)
            algorithm = recalibrate(epsilon_with, spent)
            allow = allow_change or "mechanism"
        book = ledger.Ledger.start(workdir, algorithm=algorithm, data=data, seed=seed,
                                   config=config, rounds=rounds, start=start, logged=logged,
                                   allow_change=allow, fresh_reruns=True, **legacy)
        if main:
            workdir.mkdir(parents=True, exist_ok=True)
            book.write()
            metrics.freeze_config(workdir, config)
            writer = metrics.JsonlWriter(jsonl)
            writer.truncate_after(start)
    else:
        state = algorithm.init(params)
    generation = book.generation if book is not None else 0
    train_key = jrandom.train_stream(seed, generation)
    records = []
    def round_step(state, data, round_input, key):
        return base.call_apply(algorithm, state, data, round_input, key)

    # One compilation per run (static shapes), also when the round spans several devices and
    # returns its state placed over them (sharding.LoopJit; both tested). The state is donated:
    # each round's buffers are reused for the next state. Safe because the loop reads a round's
    # state (eval, checkpoint, which serialises a copy) before the next call and never after,
    # and the first state is a private copy, so the caller's params (which init may hold) stay
    # valid.
    apply = planner.PlannedLoop(round_step, donate_argnums=0)  # planner: fitted to the device
    state = jax.tree.map(lambda x: jax.numpy.copy(x) if isinstance(x, jax.Array) else x, state)
    planner.prepare_eval(eval_fn, algorithm.params_of(state))  # planner: refused before work
    acc = accountant_for(algorithm, accountant, final_accountant) if delta is not None else None
    if acc is not None and book is not None:
        acc = book.accountant(acc)
    end = rounds
    if max_epsilon is not None:
        end = ledger.budget_stop(acc, start=start, rounds=rounds, delta=delta,
                                 max_epsilon=max_epsilon)
        if end == start and start == 0:
            first = float(acc.epsilons([1], delta)[0])
            raise ledger.BudgetError(
                f"max_epsilon={max_epsilon} is below the epsilon of one round ({first:.6g} at "
                f"delta={delta}): nothing can run.")
    curve = {}
    if acc is not None:
        todo = logged_rounds(start, end, eval_every)
        if todo:
            curve = dict(zip(todo, acc.epsilons(todo, delta).tolist(), strict=True))
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    if show:
        from tqdm.auto import tqdm
        bar = tqdm(total=end, initial=start, desc=algorithm.name, leave=False)
    record = {}
    last = start
    t0 = time.time()
    for r in range(start, end):
        rng = jrandom.sample_rng(seed, r, generation)
        round_input = algorithm.prepare(r, rng)
        key = jrandom.round_key(train_key, r)
        if r == start:  # state and data where the compiled round expects them, moved once
            state, device_data, _, _ = apply.place(state, device_data, round_input, key)
        state, diag = apply(state, device_data, round_input, key)
        done = r + 1
        last = done
        log_now = done % eval_every == 0 or done == end
        save_now = ckpt_dir is not None and (done % checkpoint_every == 0 or done == end)
        if log_now or save_now:
            _check_finite(algorithm, state, diag, done, ckpt_dir)
        if log_now:
            record = {"round": done, **{k: float(v) for k, v in diag.items()}}
            if eval_fn is not None:
                record.update({k: float(v) for k, v in eval_fn(algorithm.params_of(state)).items()})
            if acc is not None:
                record.update(epsilon_record(acc, curve[done], delta))
            record.update(extra_record or {})
            record["elapsed_s"] = time.time() - t0
            records.append(record)
            if writer is not None:
                # charged in the ledger at the next checkpoint; a kill before it leaves this
                # record in metrics.jsonl, which the next start charges (Ledger.start's logged)
                book.charge(done)
                writer.write(record)
            if bar is not None:
                bar.set_postfix({k: f"{v:.4g}" for k, v in record.items()
                                 if isinstance(v, float) and k != "elapsed_s"})
        if save_now:
            jax.block_until_ready(state)
            if main:
                book.charge(done)
                book.write()
                checkpoint.save(ckpt_dir, done, state, {"seed": seed})
        if bar is not None:
            bar.update(1)
        if stop_after is not None and done >= stop_after:
            break
    if bar is not None:
        bar.close()
    history = writer.read() if writer is not None else (
        records if workdir is not None else ([record] if record else []))
    finished = last == rounds or (max_epsilon is not None and last == end)
    summary = {"algorithm": algorithm.name, "rounds_completed": last, "rounds": rounds,
               "seed": seed, "info": algorithm.info,
               # bit-identical reruns / resumes hold on this backend (layout.request_determinism)
               "backend": jax.default_backend(), "deterministic": layout.deterministic()}
    if max_epsilon is not None:
        summary["max_epsilon"] = max_epsilon
        if end < rounds and last == end:
            summary["stopped"] = "max_epsilon"
    if delta is not None and finished:
        summary.update(final_privacy(algorithm, last, delta, final_accountant, acc))
    if book is not None:
        summary["ledger"] = book.summary()
    summary.update(extra_record or {})
    if history:
        summary["final"] = history[-1]
    if main and workdir is not None:  # planner: the programs' layouts (run metadata)
        planner.write_plans(workdir, planner.plans_record(apply, eval_fn))
    if main and workdir is not None and finished:
        checkpoint.atomic_write_text(workdir / "summary.json",
                                     json.dumps(metrics.jsonable(summary), indent=2,
                                                sort_keys=True))
    return RunResult(state=state, history=history, summary=summary)


def run_accounting(accountant: report.Accountant, *, rounds: int, delta: float, workdir=None,
                   eval_every: int = 1, config=None, extra_record: dict | None = None,
                   seed: int = 0) -> RunResult:
    """An accounting-only run (a privacy study): the headline epsilon after every logged round
    and the full report of the last, written like a training run's logs (``config.json``,
    ``metrics.jsonl``, ``summary.json``) so sweeps and plots treat both alike.

    Raises:
      JaxflValueError: for a bad argument (before any work starts).
    """
    if not isinstance(accountant, report.Accountant):
        raise validate.JaxflValueError(
            f"Expected a jaxfl.accounting.report.Accountant, got {type(accountant).__name__}.")
    rounds = validate.positive_int("rounds", rounds)
    eval_every = validate.positive_int("eval_every", eval_every)
    delta = validate.delta(delta)
    if extra_record is not None and not isinstance(extra_record, dict):
        raise validate.JaxflValueError(
            f"Expected extra_record to be a dict or None, got extra_record={extra_record!r}.")
    todo = logged_rounds(0, rounds, eval_every)
    t0 = time.time()
    eps = accountant.epsilons(todo, delta)
    history = [{"round": r, **epsilon_record(accountant, float(e), delta),
                **(extra_record or {}), "elapsed_s": time.time() - t0}
               for r, e in zip(todo, eps, strict=True)]
    summary = {"algorithm": None, "accounting_only": True, "rounds_completed": rounds,
               "rounds": rounds, "seed": seed, **final_privacy(None, rounds, delta, None,
                                                               accountant),
               **(extra_record or {}), "final": history[-1]}
    if workdir is not None and sharding.is_main_process():
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        metrics.freeze_config(workdir, config)
        writer = metrics.JsonlWriter(workdir / "metrics.jsonl")
        writer.truncate_after(0)
        for rec in history:
            writer.write(rec)
        checkpoint.atomic_write_text(workdir / "summary.json",
                                     json.dumps(metrics.jsonable(summary), indent=2,
                                                sort_keys=True))
    return RunResult(state=None, history=history, summary=summary)


def make_classifier_eval(model, x, y, *, batch_size: int = 1000,
                         set_metrics: Callable[[Any, Any], dict] | None = None
                         ) -> Callable[[Any], dict]:
    """Mean per-example metrics of ``model`` on a held-out set (jit-compiled, fixed batches).

    For a ``coupled`` model (e.g. Cox, whose C-index is a batch statistic) use a ``batch_size``
    of at least the set size, so the metric is computed on the whole set at once.
    ``set_metrics(outputs, y) -> dict``, when given, adds statistics of the whole set that are
    no mean of per-example values (a paper's C-index, balanced accuracy or sum of batch means),
    computed in the same compiled call on the unpadded outputs; its keys replace equal ones.
    """
    import jax.numpy as jnp

    x = np.asarray(x)
    y = np.asarray(y)
    n = len(x)
    nb = -(-n // batch_size)
    pad = nb * batch_size - n
    xp = jnp.asarray(np.concatenate([x, np.zeros((pad, *x.shape[1:]), x.dtype)]))
    yp = jnp.asarray(np.concatenate([y, np.zeros((pad, *y.shape[1:]), y.dtype)]))
    mp = jnp.asarray(np.arange(nb * batch_size) < n)

    @jax.jit
    def evaluate(params, xp, yp, mp):  # the data as arguments: constants cost XLA seconds
        def body(carry, i):
            sl = lambda a: jax.lax.dynamic_slice_in_dim(a, i * batch_size, batch_size)
            out = model.apply(params, sl(xp))
            per = model.masked_metrics(out, sl(yp), sl(mp))
            m = sl(mp).astype(jnp.float32)
            sums = {k: jnp.sum(v * m) for k, v in per.items()}
            return carry, (sums, out if set_metrics is not None else None)

        _, (sums, outs) = jax.lax.scan(body, 0, jnp.arange(nb))
        res = {k: jnp.sum(v) / n for k, v in sums.items()}
        if set_metrics is not None:
            outs = outs.reshape(nb * batch_size, *outs.shape[2:])[:n]
            res.update(set_metrics(outs, yp[:n]))
        return res

    # planner: the program fitted to the device's memory (batches halved when it does not fit)
    return planner.FittedEval(
        evaluate, (xp, yp, mp), batch_size=batch_size, examples=n,
        coupled=bool(getattr(model, "coupled", False)),
        smaller=lambda b: make_classifier_eval(model, x, y, batch_size=b,
                                               set_metrics=set_metrics),
        post=lambda out: {f"test_{k}": v for k, v in out.items()})
