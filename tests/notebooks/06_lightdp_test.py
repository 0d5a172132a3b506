"""Notebook 06 (LightDP-FL): structure, and the small setting's printed numbers.

The numbers the notebook prints are checked against values recomputed here with
:mod:`jaxfl.accounting.lightdp` and against the reference values of
tests/accounting/lightdp_test.py, so a broken library (or a notebook that stopped calling it)
fails the test.
"""

import math
import re

import numpy as np
import pytest

from tests.notebooks import _run

STEM = "06_lightdp"
MNIST_FILES = ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz",
               "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz")


def test_structure():
    _run.check_structure(STEM)


def _check_cancellation(text: str) -> None:
    """Section 1: seeds agree; pair terms cancel (fixed point exactly, float32 to rounding)."""
    assert "client-side seeds symmetric: True" in text
    assert "client-side seeds equal the table: True" in text
    assert "client 3's own mask equals row 3 of pair_masks (bitwise): True" in text
    n = _run.find_number(text, "N =")
    sigma_k = _run.find_number(text, "sigma_K =")
    # Float32 cancellation: rounding of partial sums of N terms of size ~ sqrt(N) sigma_K.
    tol = 64 * np.finfo(np.float32).eps * sigma_k * n
    assert 0 <= _run.find_number(text, "in the sum =") < tol
    assert _run.find_number(text, "mean of (update + n_i) =") < tol
    assert _run.find_number(text, "fixed point 2^-16: max abs residual of the pairwise terms in "
                                  "the sum =") == 0.0
    # Each upload is masked by N - 1 pair terms: std sqrt(N - 1) sigma_K (4096 x N draws).
    std = _run.find_number(text, "std of one client's pairwise mask =")
    assert std == pytest.approx(math.sqrt(n - 1) * sigma_k, rel=0.03)


def _check_stragglers(text: str) -> None:
    """Section 2: empirical aggregate variance vs (S sigma_K^2 + sigma_U^2) / (N - S)."""
    from jaxfl.accounting import lightdp as acct

    line = re.search(r"straggler study: N = (\d+), sigma_U = ([0-9.]+), sigma_K = ([0-9.]+), "
                     r"d = (\d+)", text)
    assert line, "straggler study header missing"
    n, su, sk, d = int(line[1]), float(line[2]), float(line[3]), int(line[4])
    rows = re.findall(r"S = (\d+): empirical variance = ([0-9.]+), formula \(S sigma_K\^2 \+ "
                      r"sigma_U\^2\)/\(N-S\) = ([0-9.]+)", text)
    assert len(rows) >= 5
    rel_sd = math.sqrt(2.0 / d)
    for s, emp, printed_formula in rows:
        s, emp = int(s), float(emp)
        formula = float(acct.aggregate_variance(s, num_clients=n, sigma_u=su, sigma_k=sk))
        assert float(printed_formula) == pytest.approx(formula, abs=1e-5)
        assert abs(emp / formula - 1.0) < 5 * rel_sd, (s, emp, formula)
        if s >= 2:  # the pairwise part is visible: the individual-noise-only value is rejected
            assert abs(emp / (su**2 / (n - s)) - 1.0) > 10 * rel_sd
    assert _run.find_number(text, "vs Eq. 9 path at S = " + rows[-1][0] +
                            ": max abs difference =") < 1e-5


def _check_design(text: str) -> None:
    """Section 3: the printed designs equal the library's and the reference rows."""
    from jaxfl.accounting import lightdp as acct

    spec = {(10, 10): (0.079656, 0.57545, 0.16241), (0, 10): (None, 0.54302, None),
            (40, 10): (0.057681, 0.83774, None), (15, 0): (0.138861, None, None)}
    for (c, s), ref in spec.items():
        m = re.search(rf"C_bar = {c:2d}, S_bar = {s:2d}: gamma0 = ([0-9.]+), sigma_U/sigma_0 = "
                      r"([0-9.]+), sigma_K/sigma_0 = ([0-9.]+) \| E\[v\]/sigma_0\^2: LightDP = "
                      r"([0-9.]+), LDP = ([0-9.]+), SMPC\+DP = ([0-9.]+|nan)", text)
        assert m, (c, s)
        gamma, su, sk, ev_l, ev_ldp, ev_smpc = (float(x) for x in m.groups())
        d = acct.design(epsilon=3.0, delta=1e-5, num_clients=50, max_colluders=c,
                        max_stragglers=s, sensitivity=1.0)
        assert gamma == pytest.approx(d.gamma, abs=1e-6)
        assert su == pytest.approx(d.sigma_u / d.sigma_0, abs=1e-5)
        assert sk == pytest.approx(d.sigma_k / d.sigma_0, abs=1e-5)
        assert ev_l == pytest.approx(d.expected_variance() / d.sigma_0**2, abs=1e-6)
        for want, got in zip(ref, (gamma, su, sk), strict=True):
            if want is not None:
                assert got == pytest.approx(want, abs=2e-5)
        assert ev_l <= ev_ldp
        if not math.isnan(ev_smpc):
            assert ev_smpc < ev_l
    assert _run.find_number(text, "max V_paper * sigma_0^2 =") == pytest.approx(1.0, abs=1e-8)
    assert _run.find_number(text, "max V_exact * sigma_0^2 =") == pytest.approx(0.77885, abs=1e-5)


def _check_modes(text: str) -> None:
    """Section 4: eps 9 at delta 1e-2 is 9.5356 in paper mode and exactly 9 in strict mode."""
    from jaxfl.accounting import lightdp as acct

    setting = dict(epsilon=9.0, delta=1e-2, num_clients=50, max_colluders=10, max_stragglers=10,
                   sensitivity=1.0, rounds=150, scheme="ldp")
    paper = _run.find_number(text, "[mode = paper] LDP, nominal epsilon 9 at delta 1e-2, "
                                   "T = 150: exact epsilon =")
    strict = _run.find_number(text, "[mode = strict] LDP, nominal epsilon 9 at delta 1e-2, "
                                    "T = 150: exact epsilon =")
    assert paper == pytest.approx(9.5356, abs=1e-4)
    assert paper == pytest.approx(acct.accountant(acct.design(mode="paper", **setting)).report(
        150, 1e-2).epsilon, abs=1e-4)
    assert "paper's claim: epsilon = 9.0000 (lightdp-prop1, mode = paper, sound = False); " \
           "exact view of the same noise: epsilon = 9.5356 (gdp, mode = strict, sound = True)" \
           in text.replace("\n", " ")
    assert strict == pytest.approx(9.0, abs=1e-6) and strict <= 9.0 + 1e-9
    recomputed = acct.design(mode="strict", **setting)
    assert _run.find_number(text, "strict noise scale =") == pytest.approx(recomputed.scale,
                                                                           abs=1e-4)
    # The PLD cross-check printed next to each agrees with the analytic value.
    pld = [float(x) for x in re.findall(r"PLD epsilon = ([0-9.]+)", text)]
    assert pld[0] == pytest.approx(paper, abs=2e-3) and pld[1] == pytest.approx(9.0, abs=2e-3)
    # At delta = 1e-5 the paper's calibration holds: strict changes nothing (I14).
    row = re.search(r"delta = 1e-05, nominal epsilon = 3, ldp\s*: exact epsilon paper mode = "
                    r"([0-9.]+), strict mode = ([0-9.]+) \(noise x ([0-9.]+)\)", text)
    assert row and float(row[1]) == pytest.approx(2.4779, abs=1e-4)
    assert float(row[2]) == float(row[1]) and float(row[3]) == 1.0


def _check_training(text: str) -> None:
    """Section 5: both schemes learn; the printed epsilons are the design's exact ones."""
    from jaxfl.accounting import lightdp as acct

    m = re.search(r"design inputs: N = (\d+), C_bar = (\d+), S_bar = (\d+), Delta = ([0-9.e-]+), "
                  r"T = (\d+), epsilon = ([0-9.]+), delta = ([0-9.e-]+)", text)
    assert m, "design inputs missing"
    n, c, s, delta_s, t, eps, delta = (float(x) for x in m.groups())
    exacts = {}
    for scheme in ("lightdp", "ldp"):
        d = acct.design(epsilon=eps, delta=delta, num_clients=int(n), max_colluders=int(c),
                        max_stragglers=int(s), sensitivity=delta_s, rounds=int(t),
                        scheme=scheme)
        exact = _run.find_number(text, f"[{scheme}] mode = strict, sigma_U = {d.sigma_u:.5f}, "
                                       f"sigma_K = {d.sigma_k:.5f}, nominal epsilon = {eps:g}, "
                                       "exact epsilon =")
        report = acct.accountant(d).report(int(t), delta)
        assert exact == pytest.approx(report.epsilon, abs=1e-4)
        assert exact <= eps
        # The paper-mode report beside it: the nominal target, labelled unsound.
        assert _run.find_number(text, f"[{scheme}] paper-mode report: epsilon =") == \
            pytest.approx(eps, abs=1e-4)
        assert f"[{scheme}] paper-mode report: epsilon = {eps:.4f}, sound = False" in text
        exacts[scheme] = exact
        pld = _run.find_number(text, f"exact epsilon = {exact:.4f}, PLD epsilon =")
        assert pld == pytest.approx(exact, abs=2e-3)
        acc = _run.find_number(text, f"[{scheme}] final test accuracy =")
        assert 0.3 < acc <= 1.0  # chance is 0.1
    # LightDP-FL's worst view is more private than local DP's at the same nominal epsilon.
    assert exacts["lightdp"] < exacts["ldp"]


def _check_cost(text: str) -> None:
    """Section 6: the link-failure probability and the upload volumes."""
    assert _run.find_number(text, "p = 0.05, N = 50:") == pytest.approx(0.95**50, abs=1e-6)
    assert _run.find_number(text, "recover the aggregate =") == 0.0
    assert _run.find_number(text, "lightdp: upload per client per round =") == pytest.approx(
        7850 * 32 / 8e3, abs=0.1)
    assert _run.find_number(text, "he_dp: upload per client per round =") == pytest.approx(
        2 * 7850 * 4096 / 8e3, abs=0.1)


# Executed now (slow) and as committed; _check_outputs is looked up when a test runs.
test_small_setting_runs, test_committed_outputs = _run.output_tests(
    STEM, lambda nb: _check_outputs(nb), MNIST_FILES)


def _check_outputs(nb):
    text = _run.outputs_text(nb)
    _check_cancellation(text)
    _check_stragglers(text)
    _check_design(text)
    _check_modes(text)
    _check_training(text)
    _check_cost(text)
    assert _run.count_images(nb) >= 5
