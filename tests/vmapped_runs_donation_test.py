"""A vmapped sweep donates the stacked states to each block of rounds: the same results as the
undonated block bit for bit, no warnings, the caller's arrays untouched, and every block's input
states really consumed."""

import json
import warnings

import jax
import numpy as np

from jaxfl import checkpoint, metrics, sweep, vmapped_runs
from jaxfl.algorithms import base
from tests import _sweep_toy as toy

POINTS = [dict(seed=0), dict(seed=1, noise_multiplier=1.6, client_lr=0.1),
          dict(seed=2, clip_norm=0.2, sampling_rate=0.75)]


def _run(workdir, monkeypatch, *, donate):
    """Runs the toy sweep as one vmapped batch; returns (donate flags seen, every block call's
    arguments, the built specs)."""
    original = vmapped_runs.planned_block  # block_fn, compiled through the planner
    flags, calls, specs = [], [], []
    donate_override = None if donate else False

    class Spy:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *block_args):
            calls.append(block_args)
            return self.fn(*block_args)

        @property
        def current_plan(self):
            return self.fn.current_plan

    def spy_block_fn(*args, donate=False, **kwargs):
        flags.append(donate)
        return Spy(original(*args, donate=donate if donate_override is None else
                            donate_override, **kwargs))

    def spy_build(cfg):
        spec = toy.build(cfg)
        specs.append(spec)
        return spec

    monkeypatch.setattr(vmapped_runs, "planned_block", spy_block_fn)
    points = sweep.expand(toy.ToyConfig(rounds=4, eval_every=1, checkpoint_every=2), POINTS)
    res = sweep.run_sweep(points, spy_build, workdir, progress=False)
    monkeypatch.undo()
    assert res.groups == [[0, 1, 2]] and not res.stopped  # one vmapped batch
    return points, flags, calls, specs


def _untimed(record):
    """``record`` without its wall-clock fields (at any depth)."""
    if isinstance(record, dict):
        return {k: _untimed(v) for k, v in record.items() if k != "elapsed_s"}
    return [_untimed(v) for v in record] if isinstance(record, list) else record


def _point_results(workdir, points):
    template = toy.build(points[0].config)
    template = template.algorithm.init(template.params)
    out = []
    for p in points:
        pdir = workdir / "points" / p.id
        states = [checkpoint.restore(checkpoint.at_round(pdir / "checkpoints", r), template)
                  for r in (2, 4)]
        history = _untimed(metrics.read_jsonl(pdir / "metrics.jsonl"))
        summary = _untimed(json.loads((pdir / "summary.json").read_text()))
        out.append((states, history, summary))
    return out


def test_donated_blocks_equal_the_undonated_blocks(tmp_path, monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        points, flags, calls, specs = _run(tmp_path / "donated", monkeypatch, donate=True)
    assert not [str(w.message) for w in caught if "donat" in str(w.message).lower()]
    assert flags == [True]  # run_batch asks for the donating block
    assert len(calls) == 4  # eval_every=1: one block per round

    _, ref_flags, ref_calls, _ = _run(tmp_path / "plain", monkeypatch, donate=False)
    assert len(ref_calls) == 4
    assert not any(x.is_deleted() for c in ref_calls for x in jax.tree.leaves(c[0])
                   if isinstance(x, jax.Array))  # the reference really did not donate

    got = _point_results(tmp_path / "donated", points)
    ref = _point_results(tmp_path / "plain", points)
    for (states, history, summary), (r_states, r_history, r_summary) in zip(got, ref,
                                                                            strict=True):
        for s, r in zip(states, r_states, strict=True):  # rounds 2 and 4, bit for bit
            for a, b in zip(jax.tree.leaves(s), jax.tree.leaves(r), strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert history == r_history and summary == r_summary

    for states, *rest in calls:
        # every block's input states were donated (consumed by the block) ...
        assert all(x.is_deleted() for x in jax.tree.leaves(states))
        # ... and nothing else: data, round inputs, keys, hparams and rounds stay valid
        assert not any(x.is_deleted() for x in jax.tree.leaves(rest) if isinstance(x, jax.Array))
    for spec in specs:  # the caller's initial params are intact
        init = toy.build(spec.config).params
        for a, b in zip(jax.tree.leaves(spec.params), jax.tree.leaves(init), strict=True):
            assert not (isinstance(a, jax.Array) and a.is_deleted())
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_block_fn_donates_only_when_asked():
    spec = toy.build(toy.ToyConfig())
    alg = spec.algorithm
    states = vmapped_runs._stack([alg.init(spec.params)] * 2)
    cohort = alg.prepare(0, np.random.default_rng(0))
    inputs = vmapped_runs.stack_round_inputs([vmapped_runs.stack_round_inputs([cohort] * 2)])
    args = (jax.tree.map(np.asarray, spec.data), inputs,
            np.stack([vmapped_runs._key_data(s) for s in (0, 1)]),
            base.bind_hparams([alg, alg]), np.zeros(1, np.int32))
    outs = {}
    for donate in (False, True):
        fn = vmapped_runs.block_fn(alg, data_axis=None, spmd=False, donate=donate)
        mine = jax.tree.map(jax.numpy.array, states)
        outs[donate] = fn(mine, *args)[0]
        assert all(x.is_deleted() == donate for x in jax.tree.leaves(mine))
    for a, b in zip(jax.tree.leaves(outs[False]), jax.tree.leaves(outs[True]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
