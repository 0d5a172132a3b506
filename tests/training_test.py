import functools
import json

import jax
import numpy as np
import pytest

from jaxfl import checkpoint, training, validate
from jaxfl.accounting import accountants
from jaxfl.algorithms import dp_fedavg
from tests import _toy


@functools.cache  # one algorithm object: its jitted apply compiles once for the whole file
def _setup():
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=10, seed=3)
    alg = dp_fedavg.dp_fedavg(model, num_clients=10, local_steps=2, batch_size=4,
                              client_lr=0.3, clip_norm=0.5, noise_multiplier=0.8,
                              sampling_rate=0.5)
    return model, data, alg


def _run(tmp, **kw):
    model, data, alg = _setup()
    return training.run(alg, data, params=model.init(jax.random.key(0)), rounds=7, seed=11,
                        workdir=tmp, checkpoint_every=2, delta=1e-5, progress=False,
                        config={"name": "test"}, **kw)


def test_resume_after_kill_is_bit_identical(tmp_path):
    full = _run(tmp_path / "full")
    part = _run(tmp_path / "resumed", stop_after=5)  # "killed" after round 5 (ckpt at 4)
    assert part.summary["rounds_completed"] == 5
    # Torn last metrics line, as a kill mid-write would leave.
    with open(tmp_path / "resumed" / "metrics.jsonl", "a") as f:
        f.write('{"round": 6, "trunc')
    resumed = _run(tmp_path / "resumed")
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    strip = lambda h: [{k: v for k, v in r.items() if k != "elapsed_s"} for r in h]
    assert strip(full.history) == strip(resumed.history)
    assert [r["round"] for r in resumed.history] == list(range(1, 8))
    summary = json.loads((tmp_path / "resumed" / "summary.json").read_text())
    assert summary["epsilon_pld"] <= summary["epsilon_rdp"]
    cfg = json.loads((tmp_path / "full" / "config.json").read_text())
    assert len(cfg["config_hash"]) == 16 and "git_revision" in cfg


def test_corrupted_checkpoint_falls_back(tmp_path):
    _run(tmp_path, stop_after=6)  # checkpoints after rounds 2, 4, 6
    ckpts = checkpoint.list_checkpoints(tmp_path / "checkpoints")
    assert [int(p.stem.split("_")[1]) for p in ckpts] == [2, 4, 6]
    data = bytearray(ckpts[-1].read_bytes())
    data[len(data) // 2] ^= 0xFF
    ckpts[-1].write_bytes(bytes(data))
    path, meta = checkpoint.latest(tmp_path / "checkpoints")
    assert meta["round"] == 4
    ckpts[-2].write_bytes(ckpts[-2].read_bytes()[:10])  # truncated
    assert checkpoint.latest(tmp_path / "checkpoints")[1]["round"] == 2


def test_epsilon_logged_matches_accountant(tmp_path):
    res = _run(tmp_path)
    from jaxfl.accounting import accountants, events
    for rec in res.history:
        ev = events.dp_sgd(noise_multiplier=0.8, sampling_rate=0.5, steps=rec["round"])
        assert rec["epsilon"] == pytest.approx(accountants.epsilon(ev, 1e-5, accountant="rdp"),
                                               rel=1e-12)
        assert rec["unit"] == "client" and rec["privacy_mode"] == "strict"
    # The final PLD is on the bounded grid (an upper bound), never below dp-accounting's
    # default grid; the report's headline is that PLD and its DpEvent is the run's.
    event = events.dp_sgd(noise_multiplier=0.8, sampling_rate=0.5, steps=7)
    summary = res.summary
    assert summary["epsilon_pld"] == pytest.approx(accountants.bounded_pld_epsilon(event, 1e-5),
                                                   rel=1e-12)
    default_grid = accountants.epsilon(event, 1e-5, accountant="pld")
    assert default_grid - 1e-9 <= summary["epsilon_pld"] <= default_grid * (1 + 1e-3)
    report = summary["privacy"]
    assert report["epsilon"] == summary["epsilon_pld"] == summary["epsilon"]
    assert report["accountant"] == "pld" and report["sound"] and report["unit"] == "client"
    assert report["details"]["epsilon_rdp"] == summary["epsilon_rdp"]
    assert summary["dp_event"] == report["dp_event"] == events.to_json(event)


def test_run_rejects_bad_arguments():
    model, data, alg = _setup()
    with pytest.raises(validate.JaxflValueError):
        training.run(alg, data, params=model.init(jax.random.key(0)), rounds=2, seed=0,
                     delta=1.5)


@pytest.mark.parametrize("kw", [
    {"final_accountant": "exact"}, {"final_accountant": "PLD"}, {"stop_after": 0},
    {"stop_after": 1.5}, {"seed": -1}, {"seed": 2**32}, {"seed": 1.0}, {"seed": True},
    {"accountant": "moments"}, {"eval_every": 0}, {"checkpoint_every": 0}, {"rounds": -1},
    {"progress": "yes"}, {"extra_record": [("mode", "strict")]}, {"eval_fn": 3},
    {"workdir": 3}, {"delta": 0.0},
])
def test_run_validates_every_argument_before_any_work(tmp_path, kw):
    model, data, alg = _setup()
    args = dict(params=model.init(jax.random.key(0)), rounds=2, seed=0,
                workdir=tmp_path / "w", delta=1e-5, progress=False)
    with pytest.raises(validate.JaxflValueError, match=next(iter(kw))):
        training.run(alg, data, **{**args, **kw})
    assert not (tmp_path / "w").exists()
    with pytest.raises(validate.JaxflValueError, match="Algorithm"):
        training.run(object(), data, **args)


def test_only_process_zero_writes_files(tmp_path, monkeypatch):
    full = _run(tmp_path / "full")
    _run(tmp_path / "shared", stop_after=4)  # process 0 wrote rounds 1-4 and a checkpoint
    before = {p: p.read_bytes() for p in (tmp_path / "shared").rglob("*") if p.is_file()}
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    other = _run(tmp_path / "shared")  # resumes from round 4, writes nothing
    after = {p: p.read_bytes() for p in (tmp_path / "shared").rglob("*") if p.is_file()}
    assert after == before and not (tmp_path / "shared" / "summary.json").exists()
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(other.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [r["round"] for r in other.history] == [5, 6, 7]
    assert other.summary["epsilon_pld"] == full.summary["epsilon_pld"]
    _run(tmp_path / "fresh", stop_after=1)
    assert not (tmp_path / "fresh").exists()


def test_final_pld_at_tiny_noise_is_bounded_and_an_upper_bound(tmp_path):
    """sigma = 0.05: epsilon ~ 1e3; the default PLD grid would take gigabytes here."""
    import tracemalloc

    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    model, data, _ = _setup()
    alg = dp_fedavg.dp_fedavg(model, num_clients=10, local_steps=2, batch_size=4,
                              client_lr=0.3, clip_norm=0.5, noise_multiplier=0.05,
                              sampling_rate=0.5)
    res = training.run(alg, data, params=model.init(jax.random.key(0)), rounds=7, seed=1,
                       workdir=tmp_path, delta=1e-5, progress=False)
    accountants.cache_clear()  # the run's summary computed it: measure a fresh computation
    tracemalloc.start()
    try:
        # the summary's computation
        again = training.accountant_for(alg, "rdp", "pld").report(7, 1e-5).epsilon
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100e6 and again == res.summary["epsilon_pld"]
    eps_pld, eps_rdp = res.summary["epsilon_pld"], res.summary["epsilon_rdp"]
    low = pld_lib.from_gaussian_mechanism(  # optimistic PLD: a lower bound on the true epsilon
        0.05, sampling_prob=0.5, pessimistic_estimate=False,
        value_discretization_interval=1e-2).self_compose(7).get_epsilon_for_delta(1e-5)
    assert 500 < low <= eps_pld <= eps_rdp
    assert json.loads((tmp_path / "summary.json").read_text())["epsilon_pld"] == eps_pld


def test_classifier_eval_set_metrics_are_statistics_of_the_whole_set():
    """``set_metrics`` sees the unpadded outputs of every batch (here 3 batches of 4 for 10
    examples): a balanced accuracy computed from them equals the one computed directly; the
    per-example means are those of the evaluator without it."""
    model = _toy.logreg(5, 3)
    x = np.random.default_rng(0).normal(size=(10, 5)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 2])
    params = model.init(jax.random.key(1))

    def balanced(out, yy):
        pred = out.argmax(-1)
        return {"balanced": sum(((pred == c) & (yy == c)).sum() / (yy == c).sum()
                                for c in range(3)) / 3, "n": pred.shape[0]}

    got = training.make_classifier_eval(model, x, y, batch_size=4, set_metrics=balanced)(params)
    plain = training.make_classifier_eval(model, x, y, batch_size=4)(params)
    pred = np.asarray(model.apply(params, x)).argmax(-1)
    want = np.mean([np.mean(pred[y == c] == c) for c in range(3)])
    assert int(got["test_n"]) == 10
    np.testing.assert_allclose(float(got["test_balanced"]), want, rtol=1e-6)
    assert {k: float(v) for k, v in plain.items()} == {
        k: float(v) for k, v in got.items() if k in plain}
