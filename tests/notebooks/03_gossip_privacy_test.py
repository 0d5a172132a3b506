"""Notebook 03 (gossip averaging DP, Koskela & Kulkarni 2025): structure and the small setting.

The executed notebook's printed numbers are checked against the library, recomputed here
independently (single-pair calls instead of the notebook's vmapped all-pairs maps), and against
the 4-node-path regression values of tests/sensitivity/oracles_test.py.
"""

from __future__ import annotations

import re

import numpy as np

from tests.notebooks import _run

STEM = "03_gossip_privacy"
MNIST_FILES = ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz",
               "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz")
NUM = r"([-+0-9.eE]+|inf|nan)"


def test_structure():
    _run.check_structure(STEM)


def _numbers(text: str, pattern: str) -> tuple[float, ...]:
    """The numbers captured by ``pattern`` (groups written as {}) in the first matching line."""
    regex = re.escape(pattern).replace(r"\{\}", NUM)
    match = re.search(regex, text)
    assert match, f"{pattern!r} not found in the notebook output"
    return tuple(float(g) for g in match.groups())


# Executed now (slow) and as committed; _check_outputs is looked up when a test runs.
test_small_setting_runs, test_committed_outputs = _run.output_tests(
    STEM, lambda nb: _check_outputs(nb), MNIST_FILES)


def _check_outputs(nb):
    from jaxfl.accounting import gossip as gacc
    from jaxfl.sensitivity import gossip_sensitivity
    from jaxfl.topology import graphs, mixing

    text = _run.outputs_text(nb)
    assert _run.count_images(nb) >= 5

    n, p, seed, T, T_curve = _numbers(text, "graph: n = {}, p = {}, seed = {}; T = {}, "
                                            "T_curve = {}")
    n, seed, T, T_curve = int(n), int(seed), int(T), int(T_curve)
    sigma, delta = _numbers(text, "sigma = {}, delta = {}")
    W = mixing.max_degree(graphs.erdos_renyi(n, p, seed=seed))
    eps = lambda d2: gacc.pair_epsilon(d2, noise_multiplier=sigma, delta=delta)

    # 1. Mixing matrix: doubly stochastic, spectral gap recomputed here.
    row, col, gap = _numbers(text, "max-degree: max |row sum - 1| = {}, max |column sum - 1| "
                                   "= {}, spectral gap = {}")
    assert row < 1e-12 and col < 1e-12
    lam = np.sort(np.abs(np.linalg.eigvals(W)))[::-1]
    assert abs(gap - (1 - lam[1])) < 1e-4 and gap > 0
    assert "closed-neighbourhood W rejected: TopologyError" in text

    # 2. One pair: hand-made pseudo-inverse = library paper mode; mode ordering.
    target, observer, T_pair = _numbers(text, "pair: target j = {}, observer i = {} "
                                              "(neighbours), T = {}")
    target, observer, T_pair = int(target), int(observer), int(T_pair)
    assert W[target, observer] > 0
    (pinv_ones,) = _numbers(text, "||H^+ G 1||^2 (all-ones difference)        = {}")
    (pinv_alt,) = _numbers(text, "||H^+ G d||^2 (alternating difference)     = {}")
    (paper,) = _numbers(text, "library paper Delta^2 = {}")
    (sign,) = _numbers(text, "library sign_exact Delta^2 = {}")
    (cert,) = _numbers(text, "library certified Delta^2 = {}")
    ref = gossip_sensitivity(W, target, observer, T_pair, view="tm1", mode="sign_exact")
    assert abs(paper - ref.paper) < 1e-5 and abs(sign - ref.sign_exact) < 1e-5
    assert abs(cert - ref.certified) < 1e-5
    assert abs(pinv_ones - paper) < 1e-5
    assert pinv_alt <= sign + 1e-5                      # alternating is one sign pattern
    assert paper <= sign + 1e-9 <= cert + 2e-9 and cert <= T_pair + 1e-9

    # 3. All-pairs maps: a heatmap entry recomputed for one pair (structured method, host);
    # paper <= certified <= LDP for every view's mean and max.
    obs, tgt, eps_map = _numbers(text, "heatmap check: view tm3 certified, observer = {}, "
                                       "target = {}, epsilon = {}")
    one = gossip_sensitivity(W, int(tgt), int(obs), T, view="tm3", mode="certified",
                             method="structured")
    assert abs(eps_map - eps(one.delta_sq)) < 1e-5
    (ldp,) = _numbers(text, f"local DP (Delta^2 = T = {T}): epsilon = {{}}")
    assert abs(ldp - eps(T)) < 1e-4
    for view in ("tm1", "tm3", "tm4", "tm4_exact"):
        mean_p, _, max_p = _numbers(text, f"{view:>9}     paper: mean epsilon = {{}}, "
                                          "median = {}, max = {}")
        mean_c, _, max_c = _numbers(text, f"{view:>9} certified: mean epsilon = {{}}, "
                                          "median = {}, max = {}")
        assert mean_p <= mean_c + 1e-4 and max_p <= max_c + 1e-4, view
        assert max_c <= ldp + 1e-4 and 0 < mean_p, view
    tm1_mean = _numbers(text, "      tm1 certified: mean epsilon = {}")[0]
    assert tm1_mean < ldp - 0.5    # secure summation helps a lot in the exact view

    # 4. epsilon against T for the pair: ordering and the LDP value.
    e = {name: _numbers(text, f"T = {T_curve}, {name}: epsilon = {{}}")[0]
         for name in ("tm1 paper", "tm1 certified", "tm3 paper", "tm3 certified", "local DP",
                      "central (T/n)")}
    assert abs(e["local DP"] - eps(T_curve)) < 1e-4
    assert abs(e["central (T/n)"] - eps(T_curve / n)) < 1e-4
    assert e["tm1 paper"] <= e["tm1 certified"] + 1e-4 <= e["local DP"] + 2e-4
    assert e["tm3 paper"] <= e["tm3 certified"] + 1e-4 <= e["local DP"] + 2e-4
    ratio, limit, inv = _numbers(text, f"tm1 paper Delta^2/T at T = {T_curve}: {{}}; "
                                       "Perron limit = {} (1/(n-1) = {})")
    assert abs(limit - 1 / (n - 1)) < 1e-5 and abs(inv - 1 / (n - 1)) < 1e-5
    assert abs(ratio - limit) < 0.1 * limit            # close to the limit by T_curve

    # 5. The 4-node path counterexample (regression values).
    anchors = {2: (1.80000, 1.80000), 3: (2.42308, 2.39450), 6: (3.99571, 3.75765)}
    for T_ce, (exact_ref, thm4_ref) in anchors.items():
        exact, thm4, min_eig = _numbers(
            text, f"counterexample T={T_ce}: TM-4-exact paper Delta^2 = {{}}, Thm 4 paper "
                  "Delta^2 = {}, min eig(M_thm4 - M_exact) = {}")
        assert abs(exact - exact_ref) < 1e-4 and abs(thm4 - thm4_ref) < 1e-4, T_ce
        if T_ce > 2:
            assert exact > thm4 + 0.02 and min_eig < -1e-3, T_ce
    ex6, thm6 = _numbers(text, "certified T=6: TM-4-exact Delta^2 = {}, Thm 4 Delta^2 = {}")
    assert 3.99571 <= ex6 <= 6 and 3.75765 <= thm6 <= 6
    assert ex6 > thm6              # certified mode does not rescue the Thm 4 reduction

    # 6a. Private averaging: consensus, and an error consistent with sigma / sqrt(n t).
    spread5, spread_end = _numbers(text, "spread of node estimates: round 5 = {}, "
                                         f"round {T_curve} = {{}}")
    assert spread_end < spread5
    err, std = _numbers(text, "error of the node-average estimate = {}; its noise std "
                              "sigma/sqrt(n t) = {}")
    assert abs(std - sigma / np.sqrt(n * T_curve)) < 1e-4 and abs(err) < 4 * std

    # 6b. DP-GossipAvg on MNIST: well above chance; accounting consistent.
    (acc,) = _numbers(text, f"after {T} rounds: mean node test accuracy = {{}}")
    assert acc > 0.3
    mean3, max3, pld3 = _numbers(text, "tm3 certified: mean epsilon over pairs = {}, worst "
                                       "pair epsilon = {} (worst pair via DpEvent + PLD: {})")
    assert mean3 <= max3 <= ldp + 1e-4 and abs(pld3 - max3) < 2e-3
    (ldp_event,) = _numbers(text, "no secure summation, algorithm.dp_event (LDP): epsilon = {}")
    assert abs(ldp_event - ldp) < 2e-3
