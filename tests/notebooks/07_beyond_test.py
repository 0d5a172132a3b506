"""Notebook 07 (beyond the papers): structure, and the small setting's printed numbers checked
against the library (DP-FTRL accountant, adaptive clipping's composed accountant, the gossip
per-pair report, the one-run audit, private hyperparameter selection)."""

import re

import numpy as np
import pytest

from tests.notebooks import _run

STEM = "07_beyond"
MNIST = ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz",
         "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz")


def test_structure():
    _run.check_structure(STEM)


def _check_ftrl(text):
    rows = {m[0]: tuple(float(x) for x in m[1:]) for m in re.findall(
        r"\[(tree|bandmf)\] sensitivity = ([0-9.]+), prefix-sum noise rms = ([0-9.]+), "
        r"at equal epsilon \(rms x sensitivity\) = ([0-9.]+), "
        r"epsilon = ([0-9.]+) \(gaussian_mf_pld\), test accuracy = ([0-9.]+)", text)}
    assert set(rows) == {"tree", "bandmf"}
    for sens, rms, equal, eps, acc in rows.values():
        assert equal == pytest.approx(rms * sens, abs=1e-3)
        # One Gaussian mechanism with mu = sens / sigma (sigma = 1).
        from jaxfl.accounting import conversions

        assert eps == pytest.approx(conversions.gaussian_epsilon(sens / 1.0, 1e-5), abs=2e-3)
        assert 0.15 < acc <= 1.0
    assert rows["bandmf"][2] < rows["tree"][2]  # less noise at equal epsilon


def _check_adaptive(text):
    from jaxfl.accounting import accountants, events
    from jaxfl.accounting import dp_ftrl as ftrl_accounting

    rounds, q, sigma, count_noise = 10, 0.5, 1.0, 5.0
    fixed = _run.find_number(text, "[fixed clip] epsilon =")
    adaptive = _run.find_number(text, "[adaptive clip] epsilon =")
    assert fixed == pytest.approx(accountants.epsilon(events.dp_sgd(
        noise_multiplier=sigma, sampling_rate=q, steps=rounds), 1e-5, accountant="pld"),
        abs=1e-3)
    combined = ftrl_accounting.combined_noise_multiplier(sigma, 2 * count_noise)
    assert adaptive == pytest.approx(accountants.epsilon(events.dp_sgd(
        noise_multiplier=combined, sampling_rate=q, steps=rounds), 1e-5, accountant="pld"),
        abs=1e-3)
    assert adaptive > fixed
    assert _run.find_number(text, "after 10 rounds (PLD) =") == pytest.approx(adaptive, abs=1e-3)


def _check_reports(text):
    assert "per-unit axes = ('observer', 'target'), shape = (12, 12)" in text
    worst = _run.find_number(text, "worst pair epsilon =")
    assert worst == pytest.approx(_run.find_number(text, "headline epsilon ="), abs=1e-4)
    assert "DP-FTRL report:" in text and "no per_unit epsilons" in text


def _check_audit(text):
    rows = re.findall(r"\[sigma = ([0-9.]+)\] (\d+) of (\d+) guesses correct \((\d+) canaries\): "
                      r"one-run lower bound = ([0-9.]+), claimed epsilon = ([0-9.]+|inf)", text)
    assert len(rows) == 2
    free, dp = ([float(x) for x in r] for r in rows)
    assert free[0] == 0.0 and free[1] == free[2] == 20 and free[4] > 1.5 and np.isinf(free[5])
    assert dp[4] <= dp[5] and dp[4] < free[4]


def _check_selection(text):
    """Section 6: each selection's epsilon is dp-accounting's RDP accountant on
    RepeatAndSelectDpEvent of (3 DP-FedAvg rounds at q = 0.5, sigma = 1) composed with the
    score's Gaussian (multiplier 2); it grows with the mean and exceeds the naive one-run
    epsilon (PLD of the training alone)."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    from jaxfl.accounting import accountants, events

    rows = re.findall(r"\[private, geometric mean ([0-9.]+)\] K = (\d+) runs, selected "
                      r"client_lr = ([0-9.]+), clip_norm = ([0-9.]+): accuracy = ([0-9.]+), "
                      r"epsilon of the procedure = ([0-9.]+) \(one run with its noisy score: "
                      r"([0-9.]+)\)", text)
    assert [float(r[0]) for r in rows] == [2.0, 4.0, 8.0]
    train = events.dp_sgd(noise_multiplier=1.0, sampling_rate=0.5, steps=3)
    run = events.composed([train, events.gaussian(2.0)])
    eps = []
    for mean, k, lr, clip, acc, total, one in rows:
        acc_ = rdp.RdpAccountant(neighboring_relation=accountants.RELATION)
        acc_.compose(dp_event.RepeatAndSelectDpEvent(run, float(mean), 1.0))
        assert float(total) == pytest.approx(acc_.get_epsilon(1e-5), abs=1e-3)
        assert float(one) == pytest.approx(accountants.epsilon(run, 1e-5, accountant="rdp"),
                                           abs=1e-3)
        assert (float(lr), float(clip)) in {(a, c) for a in (0.05, 0.5) for c in (0.1, 0.5)}
        assert int(k) >= 1 and 0.1 < float(acc) <= 1.0
        eps.append(float(total))
    assert eps == sorted(eps) and eps[0] > float(rows[0][6])
    naive = _run.find_number(text, "reported epsilon =")
    assert naive == pytest.approx(accountants.epsilon(train, 1e-5, accountant="pld"), abs=1e-3)
    assert naive < eps[0]


# Executed now (slow) and as committed; _check_outputs is looked up when a test runs.
test_small_setting_runs, test_committed_outputs = _run.output_tests(
    STEM, lambda nb: _check_outputs(nb), MNIST)


def _check_outputs(nb):
    text = _run.outputs_text(nb)
    _check_ftrl(text)
    _check_adaptive(text)
    _check_reports(text)
    _check_audit(text)
    _check_selection(text)
    assert _run.count_images(nb) >= 3
