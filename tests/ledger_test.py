"""The privacy ledger of a workdir (issue 35): a resumed, extended or shared run reports what
actually ran. Each test fails on the engine before the ledger (commit a3163c8)."""

import functools
import json
import os
import stat
import subprocess
import sys
import warnings

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import checkpoint, ledger, training, validate
from jaxfl.accounting import accountants, events
from jaxfl.algorithms import dp_fedavg
from tests import _toy

Q, DELTA = 0.5, 1e-5


@functools.cache
def _setup(sigma=0.8):
    model = _toy.logreg(5, 3)
    data = _toy.blobs(num_clients=10, seed=3)
    alg = dp_fedavg.dp_fedavg(model, num_clients=10, local_steps=2, batch_size=4,
                              client_lr=0.3, clip_norm=0.5, noise_multiplier=sigma,
                              sampling_rate=Q)
    return model, data, alg


def _run(tmp, sigma=0.8, rounds=7, seed=11, config=None, data=None, **kw):
    model, data0, alg = _setup(sigma)
    return training.run(alg, data0 if data is None else data,
                        params=model.init(jax.random.key(0)), rounds=rounds, seed=seed,
                        workdir=tmp, checkpoint_every=2, delta=DELTA, progress=False,
                        config={"name": "t", "noise_multiplier": sigma} if config is None
                        else config, **kw)


def _step(sigma):
    return dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(sigma))


def test_resume_with_changed_noise_is_refused_naming_the_field(tmp_path):
    _run(tmp_path, stop_after=5)
    with pytest.raises(ledger.ResumeMismatchError, match="noise_multiplier") as e:
        _run(tmp_path, sigma=4.0)
    assert "allow_change" in str(e.value)
    # nothing was overwritten by the refused resume
    cfg = json.loads((tmp_path / "config.json").read_text())["config"]
    assert cfg["noise_multiplier"] == 0.8
    assert not (tmp_path / "summary.json").exists()


def test_allowed_change_charges_every_released_round_by_its_mechanism(tmp_path):
    # Killed after round 5 (checkpoint at 4, rounds 1..5 logged), resumed at sigma 4 from 4.
    _run(tmp_path, stop_after=5)
    res = _run(tmp_path, sigma=4.0, allow_change=True)
    book = json.loads((tmp_path / "ledger.json").read_text())
    assert [(s["start"], s["end"]) for s in book["segments"]] == [(0, 5), (4, 7)]
    assert book["rounds_charged"] == 8
    assert "config.noise_multiplier" in book["changes"][0]["fields"]
    # round 5 ran again under the new sigma with fresh randomness (independent of its first
    # release, so charging both is sound)
    assert book["generation"] == 1 and book["changes"][0]["rerun"] == [5, 5]
    ran = events.composed([events.repeated(_step(0.8), 5), events.repeated(_step(4.0), 3)])
    fresh = accountants.bounded_pld_epsilon(ran, DELTA)
    assert res.summary["epsilon"] == pytest.approx(fresh, rel=1e-12)
    # The engine before the ledger reported 7 rounds at the new sigma: far less.
    naive = accountants.bounded_pld_epsilon(events.repeated(_step(4.0), 7), DELTA)
    assert res.summary["epsilon"] > 1.5 * naive
    assert res.summary["ledger"]["segments"] == 2
    assert res.summary["ledger"]["note"].startswith(
        "epsilon composes 2 mechanisms over 8 released rounds (allowed change(s) at round(s) 4")
    # the per-round records after the resume carry the composed epsilon too
    last = res.history[-1]
    rdp = accountants.epsilon(ran, DELTA, accountant="rdp")
    assert last["epsilon"] == pytest.approx(rdp, rel=1e-9)


def test_ledger_epsilon_equals_a_fresh_accountant_without_changes(tmp_path):
    res = _run(tmp_path)
    fresh = accountants.bounded_pld_epsilon(events.repeated(_step(0.8), 7), DELTA)
    assert res.summary["epsilon"] == pytest.approx(fresh, rel=1e-12)
    book = ledger.Ledger.read(tmp_path)
    assert book.rounds_charged == 7 and not book.composed
    ev = ledger.event_from_json(book.segments[0]["mechanism"]["round_event"])
    assert ev == _step(0.8)


def test_changed_seed_data_or_config_is_refused(tmp_path):
    _run(tmp_path, stop_after=4)
    with pytest.raises(ledger.ResumeMismatchError, match="seed"):
        _run(tmp_path, seed=12)
    other = _toy.blobs(num_clients=10, seed=4)
    with pytest.raises(ledger.ResumeMismatchError, match="data"):
        _run(tmp_path, data=other)
    with pytest.raises(ledger.ResumeMismatchError, match="config.name"):
        _run(tmp_path, config={"name": "other", "noise_multiplier": 0.8})
    # schedule fields may change: a longer run resumes
    res = _run(tmp_path, rounds=9, config={"name": "t", "noise_multiplier": 0.8, "rounds": 9})
    assert res.summary["rounds_completed"] == 9


def test_fewer_rounds_than_released_is_refused(tmp_path):
    _run(tmp_path)
    with pytest.raises(ledger.ResumeMismatchError, match="already released 7 rounds"):
        _run(tmp_path, rounds=4)
    assert json.loads((tmp_path / "summary.json").read_text())["rounds"] == 7


def test_max_epsilon_stops_before_the_round_that_would_exceed_it(tmp_path):
    curve = accountants.epsilon_curve(_step(0.8), list(range(1, 8)), DELTA)
    budget = float((curve[3] + curve[4]) / 2)  # 4 rounds fit, 5 do not
    res = _run(tmp_path, max_epsilon=budget)
    assert res.summary["rounds_completed"] == 4
    assert res.summary["stopped"] == "max_epsilon"
    assert res.summary["epsilon"] <= budget
    assert checkpoint.verified_rounds(tmp_path / "checkpoints")[-1] == 4
    assert json.loads((tmp_path / "summary.json").read_text())["rounds_completed"] == 4
    again = _run(tmp_path, max_epsilon=budget)  # a rerun spends nothing more
    assert again.summary["rounds_completed"] == 4


def test_max_epsilon_below_one_round_fails_before_work(tmp_path):
    with pytest.raises(ledger.BudgetError, match="below the epsilon of one round"):
        _run(tmp_path, max_epsilon=1e-3)
    assert not (tmp_path / "checkpoints").exists() or not any(
        (tmp_path / "checkpoints").iterdir())


def test_second_process_is_refused_and_a_stale_lock_taken_over(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        tmp_path.mkdir(exist_ok=True)
        (tmp_path / ledger.LOCK).write_text(json.dumps(
            {"pid": holder.pid, "host": os.uname().nodename,
             "start_time": ledger._start_time(holder.pid)}))
        with pytest.raises(ledger.WorkdirLockedError, match=str(holder.pid)):
            _run(tmp_path)
    finally:
        holder.kill()
        holder.wait()
    # the holder is gone: its lock is stale and taken over
    with pytest.warns(UserWarning, match="stale lock"):
        res = _run(tmp_path)
    assert res.summary["rounds_completed"] == 7
    assert not (tmp_path / ledger.LOCK).exists()  # released at the end


def test_non_finite_parameters_stop_the_run_naming_the_round(tmp_path):
    model, data, alg = _setup()
    params = jax.tree.map(lambda a: jnp.full_like(a, jnp.nan), model.init(jax.random.key(0)))
    with pytest.raises(training.NonFiniteError, match="Round 1 produced non-finite"):
        training.run(alg, data, params=params, rounds=3, seed=0, workdir=tmp_path,
                     delta=DELTA, progress=False)
    assert not (tmp_path / "summary.json").exists()
    assert checkpoint.verified_rounds(tmp_path / "checkpoints") == []


def test_all_checkpoints_corrupt_is_refused_one_corrupt_warns(tmp_path):
    _run(tmp_path, stop_after=6)  # checkpoints 2, 4, 6
    ckpts = checkpoint.list_checkpoints(tmp_path / "checkpoints")
    ckpts[-1].write_bytes(b"broken")
    with pytest.warns(UserWarning, match="ckpt_00000006"):
        _run(tmp_path, stop_after=6)
    for p in checkpoint.list_checkpoints(tmp_path / "checkpoints"):
        p.write_bytes(b"broken")
    with pytest.raises(validate.JaxflValueError, match="Every checkpoint .* is corrupt"):
        _run(tmp_path)


def test_a_save_killed_before_its_metadata_is_not_called_corrupt(tmp_path):
    """A kill between the payload's and the metadata's atomic writes leaves ckpt_N.msgpack
    without ckpt_N.json (seen in tests/reliability/faults_test.py under load): that save never
    finished, so the run resumes from the last finished checkpoint (or from round 0 when there
    is none, the rounds being charged from the log) instead of refusing the workdir."""
    _run(tmp_path, stop_after=2)  # checkpoint 2, finished
    ckpt = tmp_path / "checkpoints"
    (ckpt / "ckpt_00000004.msgpack").write_bytes(b"payload of a save cut short")
    with pytest.warns(UserWarning, match="ckpt_00000004.msgpack .* skipped; resuming from round 2"):
        _run(tmp_path)  # resumes from round 2, naming the skipped save
    assert checkpoint.verified_rounds(ckpt)[-1] == 7
    first = tmp_path / "first"
    _run(first, stop_after=2)
    for p in checkpoint.list_checkpoints(first / "checkpoints"):
        p.with_suffix(".json").unlink()  # the only save was cut short
    _run(first)
    assert checkpoint.verified_rounds(first / "checkpoints")[-1] == 7


def test_foreign_checkpoint_is_a_clear_error(tmp_path):
    _run(tmp_path, stop_after=2)
    model = _toy.logreg(7, 3)
    alg = dp_fedavg.dp_fedavg(model, num_clients=10, local_steps=2, batch_size=4,
                              client_lr=0.3, clip_norm=0.5, noise_multiplier=0.8,
                              sampling_rate=Q)
    data = _toy.blobs(num_clients=10, seed=3, dim=7)
    with pytest.raises(validate.JaxflValueError, match="does not fit this run's state"):
        training.run(alg, data, params=model.init(jax.random.key(0)), rounds=3, seed=11,
                     workdir=tmp_path, delta=DELTA, progress=False,
                     config={"name": "t", "noise_multiplier": 0.8})


def test_unwritable_checkpoint_dir_and_empty_workdir_fail_before_work(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "checkpoints").write_text("a file where the directory goes")
    with pytest.raises(validate.JaxflValueError, match="Cannot write checkpoints"):
        _run(tmp_path)
    assert not (tmp_path / "metrics.jsonl").exists()
    with pytest.raises(validate.JaxflValueError, match="non-empty workdir"):
        _run("")


def test_written_files_get_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        _run(tmp_path, rounds=2)
    finally:
        os.umask(old)
    for name in ("config.json", "summary.json", "ledger.json", "metrics.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name


def test_tiny_noise_multiplier_still_writes_a_summary(tmp_path):
    model, data, _ = _setup()
    alg = dp_fedavg.dp_fedavg(model, num_clients=10, local_steps=1, batch_size=4,
                              client_lr=0.3, clip_norm=0.5, noise_multiplier=1e-5,
                              sampling_rate=Q)
    res = training.run(alg, data, params=model.init(jax.random.key(0)), rounds=2, seed=0,
                       workdir=tmp_path, delta=DELTA, progress=False)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["epsilon"] == res.summary["epsilon"] > 1e6
    assert summary["epsilon_pld"] is None  # not representable: the RDP bound stands
    assert summary["privacy"]["accountant"] == "rdp"


def test_legacy_workdir_without_ledger_resumes_only_when_unchanged(tmp_path):
    _run(tmp_path, stop_after=4)
    (tmp_path / "ledger.json").unlink()  # as a workdir written before ledgers
    with pytest.raises(ledger.ResumeMismatchError, match="no privacy ledger"):
        _run(tmp_path, config={"name": "t", "noise_multiplier": 4.0}, sigma=4.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = _run(tmp_path)
    assert any("no privacy ledger" in str(w.message) for w in caught)
    assert res.summary["rounds_completed"] == 7


def test_event_json_round_trip():
    for ev in (_step(1.1), events.repeated(_step(2.0), 3),
               events.composed([_step(1.0), dp_accounting.LaplaceDpEvent(0.5)]),
               dp_accounting.SampledWithoutReplacementDpEvent(100, 10, _step(1.0))):
        assert ledger.event_from_json(events.to_json(ev)) == ev


def _uldp(layout_kw, records=None):
    from jaxfl.algorithms import uldp, uldp_data

    records = uldp._records() if records is None else records
    model = _toy.logreg(4, 3)
    alg = uldp.uldp_sgd(model, num_silos=3, num_users=5, clip_norm=1.0, noise_multiplier=2.0,
                        global_lr=1.0, batch_size=4)
    return model, alg, uldp_data.pair_data(records, **layout_kw)


# three layouts of the same pairs, as backends and device counts make them (pair_data's "auto"
# buckets, chunks and shards): this CPU's, buckets of 16 records, buckets of 8 in chunks of 2
LAYOUTS = ({}, {"min_length": 16}, {"min_length": 8, "max_pairs_per_chunk": 2})


def test_pair_layouts_share_one_fingerprint_and_other_records_do_not():
    from jaxfl.algorithms import uldp, uldp_data

    datas = [_uldp(kw)[2] for kw in LAYOUTS]
    laid_out = {ledger.data_fingerprint(d, layout=True) for d in datas}
    assert len(laid_out) == len(LAYOUTS)  # the layouts' arrays differ...
    assert len({ledger.data_fingerprint(d) for d in datas}) == 1  # ...their pairs do not
    base = uldp._records()
    moved = uldp_data.UldpData(base.x, base.y, base.silo, (base.user + (
        np.arange(len(base.user)) == 0)) % base.num_users, base.num_silos,
        base.num_users).validate()  # record 0 belongs to the next user
    flipped = uldp_data.UldpData(base.x, (base.y + (np.arange(len(base.y)) == 3)) % 3,
                                 base.silo, base.user, base.num_silos, base.num_users).validate()
    for other in (moved, flipped):
        assert ledger.data_fingerprint(_uldp({}, other)[2]) != ledger.data_fingerprint(datas[0])


def _uldp_run(tmp, kw, rounds, **extra):
    model, alg, data = _uldp(kw)
    return training.run(alg, data, params=model.init(jax.random.key(0)), rounds=rounds,
                        seed=5, workdir=tmp, checkpoint_every=2, delta=DELTA, progress=False,
                        config={"name": "u"}, **extra)


def test_a_run_resumes_under_another_layout_and_a_legacy_ledger_is_accepted(tmp_path):
    _uldp_run(tmp_path, LAYOUTS[1], 4, stop_after=2)  # started in one layout
    res = _uldp_run(tmp_path, LAYOUTS[0], 4)  # resumed in another: the same pairs
    assert res.summary["rounds_completed"] == 4
    book = json.loads((tmp_path / ledger.LEDGER).read_text())
    assert book["changes"] == [] and len(book["segments"]) == 1
    # a ledger written before the layout was left out of the fingerprint
    data = _uldp(LAYOUTS[2])[2]
    book["identity"]["data"] = ledger.data_fingerprint(data, layout=True)
    (tmp_path / ledger.LEDGER).write_text(json.dumps(book))
    assert _uldp_run(tmp_path, LAYOUTS[2], 6).summary["rounds_completed"] == 6
    with pytest.raises(ledger.ResumeMismatchError, match="data"):  # but not under another one
        book["identity"]["data"] = ledger.data_fingerprint(data, layout=True)
        (tmp_path / ledger.LEDGER).write_text(json.dumps(book))
        _uldp_run(tmp_path, LAYOUTS[0], 8)


def test_rerunning_released_rounds_elsewhere_is_refused(tmp_path, monkeypatch):
    from jaxfl import layout

    # checkpoints at 2, 4; round 5 logged after the last one: a resume re-runs round 5
    _run(tmp_path, rounds=9, eval_every=1, stop_after=5)
    path = tmp_path / ledger.LEDGER
    book = json.loads(path.read_text())
    assert book["platform"]["backend"] == jax.default_backend()
    for key, value in (("device_kind", "NVIDIA H200"), ("jax", "0.0.1")):
        other = dict(book, platform=dict(book["platform"], **{key: value}))
        path.write_text(json.dumps(other))
        with pytest.raises(ledger.ResumeMismatchError, match=f"rounds 5-5 .*{key}"):
            _run(tmp_path, rounds=9, eval_every=1)
    with monkeypatch.context() as m:  # programs not deterministic, now or then and now
        m.setattr(layout, "deterministic", lambda environ=None: False)
        for then in (True, False):
            path.write_text(json.dumps(dict(book, platform=dict(book["platform"],
                                                                deterministic=then))))
            with pytest.raises(ledger.ResumeMismatchError,
                               match="true -> false" if then else "not deterministic"):
                _run(tmp_path, rounds=9, eval_every=1)
    path.write_text(json.dumps(book))
    # the same deterministic platform recomputes round 5 bit for bit: resumed, not re-charged
    res = _run(tmp_path, rounds=9, eval_every=1)
    assert res.summary["rounds_completed"] == 9
    assert json.loads(path.read_text())["rounds_charged"] == 9


def _records(workdir):
    return [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]


def test_allowed_rerun_elsewhere_draws_fresh_noise_and_charges_twice(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for w in (a, b):  # checkpoint at 4, round 5 logged, then "another GPU"
        _run(w, rounds=9, eval_every=1, stop_after=5)
        book = json.loads((w / ledger.LEDGER).read_text())
        book["platform"]["device_kind"] = "NVIDIA H200"
        (w / ledger.LEDGER).write_text(json.dumps(book))
    first = _records(a)[4]
    res = _run(a, rounds=9, eval_every=1, allow_change=True)
    book = json.loads((a / ledger.LEDGER).read_text())
    assert book["generation"] == 1 and book["changes"][-1]["rerun"] == [5, 5]
    assert [(s["start"], s["end"]) for s in book["segments"]] == [(0, 5), (4, 9)]
    assert book["rounds_charged"] == 10
    # round 5 ran again with fresh sampling and noise: another release of it
    again = _records(a)[4]
    assert again["round"] == first["round"] == 5
    outputs = [k for k in first if k not in ("round", "elapsed_s") and "epsilon" not in k
               and "delta" not in k and isinstance(first[k], float)]
    assert "train_loss" in outputs
    assert [again[k] for k in outputs] != [first[k] for k in outputs]
    # charged as 10 rounds of the mechanism, not the 9 an unchanged resume would report
    ran = events.composed([events.repeated(_step(0.8), 5), events.repeated(_step(0.8), 5)])
    assert res.summary["epsilon"] == pytest.approx(
        accountants.bounded_pld_epsilon(ran, DELTA), rel=1e-12)
    ten = accountants.bounded_pld_epsilon(events.repeated(_step(0.8), 10), DELTA)
    assert res.summary["epsilon"] == pytest.approx(ten, rel=1e-9)
    pld = dp_accounting.pld.PLDAccountant()  # dp-accounting's own PLD, cross-check
    pld.compose(_step(0.8), 10)
    assert res.summary["epsilon"] == pytest.approx(pld.get_epsilon(DELTA), rel=2e-2)
    assert ten > accountants.bounded_pld_epsilon(events.repeated(_step(0.8), 9), DELTA)
    # within the new generation a kill and resume on this platform changes nothing
    _run(b, rounds=9, eval_every=1, allow_change=True, stop_after=7)
    _run(b, rounds=9, eval_every=1)
    assert _records(b) == [dict(r, elapsed_s=s["elapsed_s"]) for r, s in
                           zip(_records(a), _records(b), strict=True)]
