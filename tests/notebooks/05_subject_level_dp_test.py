"""Notebook 05: subject-level DP (Marathe & Kanani v1) on tiny-Shakespeare split by role.

The executed small setting is checked against numbers recomputed here with dp-accounting alone
(no jaxfl accounting code): the strict HiGradAvgDP epsilon of the worst role from its printed
per-user layout, and the paper-mode calibration (epsilon = 4 at the printed sigma_i).
"""

from __future__ import annotations

import json
import math
import re

import pytest
from dp_accounting import dp_event, rdp

from tests.notebooks import _run

STEM = "05_subject_level_dp"
ORDERS = [float(a) for a in [*range(2, 65), 128, 256, 512, 1024]]  # the notebook's grid
DELTA = 1e-5
TARGET = 4.0
METHODS = ("local_item_dp", "user_ldp", "local_group_dp", "higradavg_dp")


def _list(text: str, label: str) -> list:
    match = re.search(re.escape(label) + r"\s*(\[[^\]]*\])", text)
    assert match, f"{label!r} not found in the notebook output"
    return json.loads(match.group(1))


def _rdp_epsilon(parts, steps: int) -> float:
    """dp-accounting RDP epsilon of ``steps`` x (Poisson rate p, noise sigma) per part."""
    acc = rdp.RdpAccountant(orders=ORDERS)
    for p, sigma in parts:
        acc.compose(dp_event.PoissonSampledDpEvent(p, dp_event.GaussianDpEvent(sigma)), steps)
    return acc.get_epsilon(DELTA)


def test_structure():
    _run.check_structure(STEM)


# Executed now (slow) and as committed; _check_outputs is looked up when a test runs.
test_small_setting_runs, test_committed_outputs = _run.output_tests(
    STEM, lambda nb: _check_outputs(nb), ("shakespeare/input.txt",))


def _check_outputs(nb):
    text = _run.outputs_text(nb)
    num = lambda label: _run.find_number(text, label)

    # Section 1: every role is a subject spread over users.
    subjects = num("subjects =")
    assert 0 < num("subjects at more than one user =") <= subjects
    assert 1 <= num("mean distinct subjects K =") <= num("batch size B =")
    assert num("mean largest group Z =") >= 1

    # Section 2: paper mode gives the target; strict mode is never below it.
    for method in METHODS:
        paper, strict = num(f"paper epsilon {method} ="), num(f"strict epsilon {method} =")
        assert paper == pytest.approx(TARGET, abs=1e-3), method
        assert strict >= paper, method
    # Batch-dependent noise: the finite variance-mismatch bound at the trained model's d.
    assert num("model dimension d =") > 0
    assert math.isfinite(num("strict epsilon local_group_dp =")) and num(
        "strict epsilon local_group_dp =") > 100 * TARGET
    assert num("strict epsilon higradavg_dp =") < num("strict epsilon user_ldp =")

    # Independent recomputation with dp-accounting from the printed layout.
    q = _list(text, "item sampling rates q_i =")
    sigma = _list(text, "paper noise multipliers sigma_i =")
    k = _list(text, "items per user k =")
    T, s = int(num("local steps T =")), int(num("users per round s ="))
    R, R_sub = int(num("LocalItemDP R =")), int(num("R/sqrt(s) ="))
    assert R_sub == round(R / math.sqrt(s))
    paper_item = max(_rdp_epsilon([(qi, si)], T * R) for qi, si in zip(q, sigma))
    assert paper_item == pytest.approx(num("paper epsilon local_item_dp ="), abs=1e-4)
    assert paper_item <= TARGET + 1e-9  # calibrated on the private side
    paper_sub = max(_rdp_epsilon([(qi, si)], round(T * R_sub * math.sqrt(s)))
                    for qi, si in zip(q, sigma))
    assert paper_sub == pytest.approx(num("paper epsilon higradavg_dp ="), abs=1e-4)
    strict_worst = _rdp_epsilon([(1 - (1 - qi) ** ki, si) for qi, si, ki in zip(q, sigma, k)
                                 if ki > 0], T * R_sub)
    assert strict_worst == pytest.approx(num("strict epsilon higradavg_dp ="), abs=1e-4,
                                         rel=1e-6)
    assert num("rounds: sigma =") > max(sigma)  # strict calibration needs more noise

    # Horizontal composition: s users x r rounds == 1 user x s*r rounds; Thm 3.10 overspends.
    m = re.search(r"epsilon of (\d+) users x (\d+) rounds = ([0-9.]+)", text)
    assert m and int(m.group(1)) == s
    m1 = re.search(rf"epsilon of 1 user x {s * int(m.group(2))} rounds = ([0-9.]+)", text)
    assert m1 and float(m.group(3)) == pytest.approx(float(m1.group(1)), abs=2e-6)
    assert num("(Thm 3.10 schedule) =") > TARGET + 0.1

    # Section 3: FedAvg learns beyond the most frequent character; runs report their privacy.
    first, final = num("fedavg first logged train loss ="), num("final train loss fedavg =")
    assert math.isfinite(final) and final < first
    assert num("test accuracy fedavg =") > num("most frequent character: accuracy =")
    for method in ("local_item_dp", "higradavg_dp"):
        run = re.search(rf"run {method}: paper epsilon = ([0-9.]+) \((\w+)\), "
                        r"strict subject-level epsilon = ([0-9.]+|inf)", text)
        assert run, method
        assert float(run.group(3)) == pytest.approx(num(f"strict epsilon {method} ="))
        assert float(run.group(3)) >= float(run.group(1))
    assert _run.count_images(nb) >= 4
