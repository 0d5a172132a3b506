"""Notebook 01 (quickstart, DP-FedAvg on MNIST): structure and its small setting."""

import numpy as np

from jaxfl.accounting import accountants, events
from tests.notebooks import _run

STEM = "01_quickstart"
MNIST = ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz",
         "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz")


def test_structure():
    _run.check_structure(STEM)


# Executed now (slow) and as committed; _check_outputs is looked up when a test runs.
test_small_setting_runs, test_committed_outputs = _run.output_tests(
    STEM, lambda nb: _check_outputs(nb), MNIST)


def _check_outputs(nb):
    text = _run.outputs_text(nb)
    rounds, q, sigma, delta = 15, 0.2, 1.0, 1e-5  # the notebook's small setting
    step = events.poisson_gaussian(sampling_rate=q, noise_multiplier=sigma)
    rdp = accountants.epsilon_curve(step, [rounds], delta)[0]
    pld = accountants.epsilon(events.dp_sgd(noise_multiplier=sigma, sampling_rate=q,
                                            steps=rounds), delta, accountant="pld")
    np.testing.assert_allclose(_run.find_number(text, f"after {rounds} rounds (RDP) ="), rdp,
                               atol=1e-4)
    np.testing.assert_allclose(_run.find_number(text, f"after {rounds} rounds (PLD) ="), pld,
                               atol=1e-4)
    np.testing.assert_allclose(_run.find_number(text, "summary epsilon (PLD) ="), pld, atol=1e-4)
    sigma2 = _run.find_number(text, "sigma =")
    eps2 = accountants.epsilon(events.dp_sgd(noise_multiplier=sigma2 + 1e-4, sampling_rate=q,
                                             steps=rounds), delta, accountant="rdp")
    assert eps2 <= 2.0 + 1e-3
    assert _run.find_number(text, "final test accuracy =") > 0.6  # chance is 0.1
    assert "resumed state identical = True" in text
    assert _run.count_images(nb) >= 2
