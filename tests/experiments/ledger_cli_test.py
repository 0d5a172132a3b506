"""Issue 35 through the command line (DP-FedAvg on scikit-learn's digits, offline): a rerun with
another noise multiplier is refused, --allow-change charges what ran, and a target-epsilon run
extended in its workdir calibrates only the rounds left against what it already spent."""

import json

import dp_accounting
import pytest

from experiments import run
from jaxfl import ledger
from jaxfl.accounting import accountants, events

CFG = "experiments/configs/dp_fedavg/mnist.py:variant=smoke,dataset=digits"
Q, DELTA = 0.5, 1e-5  # the smoke variant's sampling rate; FLConfig's delta


def _main(workdir, *sets, extra=()):
    return run.main(["--config", CFG, "--workdir", str(workdir), *extra, "--set",
                     "local_steps=1", *sets])


def _step(sigma):
    return dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(sigma))


def _sigmas(workdir):
    book = json.loads((workdir / "ledger.json").read_text())
    return [(s["start"], s["end"], s["mechanism"]["hparams"]["noise_multiplier"])
            for s in book["segments"]]


def test_rerun_with_other_sigma_is_refused_then_charged_with_allow_change(tmp_path):
    first = _main(tmp_path, "rounds=2", "noise_multiplier=1.0")
    assert first["delta"] == DELTA
    with pytest.raises(ledger.ResumeMismatchError, match="noise_multiplier: 1.0"):
        _main(tmp_path, "rounds=4", "noise_multiplier=5.0")
    out = _main(tmp_path, "rounds=4", "noise_multiplier=5.0", extra=["--allow-change"])
    assert _sigmas(tmp_path) == [(0, 2, 1.0), (2, 4, 5.0)]
    ran = events.composed([events.repeated(_step(1.0), 2), events.repeated(_step(5.0), 2)])
    assert out["epsilon"] == pytest.approx(accountants.bounded_pld_epsilon(ran, DELTA),
                                           rel=1e-12)
    # what the engine reported before the ledger: 4 rounds at sigma 5
    assert out["epsilon"] > 2 * accountants.bounded_pld_epsilon(
        events.repeated(_step(5.0), 4), DELTA)


def test_extending_a_target_epsilon_run_spends_only_what_is_left(tmp_path):
    first = _main(tmp_path, "rounds=2", "target_epsilon=2.0")
    assert first["epsilon"] <= 2.0
    with pytest.raises(ledger.BudgetError, match="Nothing is left of target_epsilon=2.0"):
        _main(tmp_path, "rounds=4", "target_epsilon=2.0")
    out = _main(tmp_path, "rounds=4", "target_epsilon=3.0")
    (a0, a1, s1), (b0, b1, s2) = _sigmas(tmp_path)
    assert (a0, a1, b0, b1) == (0, 2, 2, 4)
    assert s1 == first["info"]["noise_multiplier"]
    ran = events.composed([events.repeated(_step(s1), 2), events.repeated(_step(s2), 2)])
    eps = accountants.bounded_pld_epsilon(ran, DELTA)
    assert out["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert 2.9 <= out["epsilon"] <= 3.0  # calibrated to the target, never above
