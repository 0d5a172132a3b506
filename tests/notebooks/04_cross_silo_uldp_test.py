"""Notebook 04 (ULDP-FL, cross-silo user-level DP on Heart Disease): structure and small setting.

The printed epsilons are recomputed here with :mod:`jaxfl.accounting.uldp` (GROUP from the
bounded silo sizes rebuilt from the data), the privately computed weights are compared with the
plaintext n[s, u] / N_u of the same allocation, and the accuracies with the majority class.
"""

import re

import numpy as np

from tests.notebooks import _run

STEM = "04_cross_silo_uldp"
HEART = tuple(f"heart_disease/processed.{site}.data"
              for site in ("cleveland", "hungarian", "switzerland", "va"))
SIGMA, DELTA, BATCH = 5.0, 1e-5, 4  # the fig6_heart config (paper hyperparameters)
PROTOCOL_USERS = 6


def test_structure():
    _run.check_structure(STEM)


def _list_after(text: str, label: str) -> list[int]:
    match = re.search(re.escape(label) + r"\s*\[([0-9, ]+)\]", text)
    assert match, f"{label!r} not found in the notebook output"
    return [int(v) for v in match.group(1).split(",")]


def _task():
    from experiments.configs.uldp import fig6_heart
    from experiments.papers import uldp as uldp_builder

    return uldp_builder.task(fig6_heart.get_config("num_users=50,distribution=uniform,seed=0"))


# Executed now (slow) and as committed; _check_outputs is looked up when a test runs.
test_small_setting_runs, test_committed_outputs = _run.output_tests(
    STEM, lambda nb: _check_outputs(nb), HEART, rendered_files=HEART)  # the checks rebuild the silos from data


def _check_outputs(nb):
    from jaxfl.accounting import uldp as acc
    from jaxfl.algorithms import uldp_data

    text = _run.outputs_text(nb)

    def num(label):
        return _run.find_number(text, label)

    rounds, epochs = int(num("rounds T =")), int(num("local epochs Q ="))
    assert (rounds, epochs) == (20, 10)  # the notebook's small setting

    # Part 1: the allocation and the record-level / silo-level numbers.
    task = _task()
    hist = uldp_data.histogram(task.train)
    assert _list_after(text, "training records per silo =") == [199, 172, 30, 85]
    assert num("users with records in >= 2 silos =") == np.sum((hist > 0).sum(0) >= 2)
    sizes = np.bincount(task.train.silo, minlength=4).tolist()
    np.testing.assert_allclose(
        num("epsilon for one record ="),
        acc.record_level_epsilon(silo_sizes=sizes, batch_size=BATCH, local_epochs=epochs,
                                 rounds=rounds, noise_multiplier=SIGMA, delta=DELTA), atol=1e-3)
    m = int((hist > 0).sum(0).max())
    np.testing.assert_allclose(
        num(f"for a user in {m} silos (multiplier sigma/{2 * m}) ="),
        acc.uldp_epsilon(rounds=rounds, noise_multiplier=SIGMA / (2 * m), delta=DELTA),
        rtol=1e-3)

    # Part 2: user-level epsilons, strict (sound default) and paper, recomputed.
    table = {m.group(1): {"accuracy": float(m.group(2)), "strict": float(m.group(3)),
                          "paper": float(m.group(4))}
             for m in re.finditer(r"^(\S+): final accuracy = ([0-9.]+), epsilon strict = "
                                  r"(\S+), epsilon paper = (\S+?)"
                                  r"(?: \(paper mode labelled unsound\))?$", text, re.M)}
    assert re.search(r"^ULDP-NAIVE: .*\(paper mode labelled unsound\)$", text, re.M)
    assert set(table) == {"DEFAULT", "ULDP-NAIVE", "ULDP-GROUP-2", "ULDP-GROUP-median",
                          "ULDP-AVG", "ULDP-AVG-w"}

    def eps(method, mode):
        return table[method][mode]

    gauss = {mode: acc.uldp_epsilon(rounds=rounds, noise_multiplier=SIGMA, delta=DELTA,
                                    mode="pld" if mode == "strict" else "paper")
             for mode in ("strict", "paper")}
    for method in ("ULDP-AVG", "ULDP-AVG-w"):
        for mode in ("strict", "paper"):
            np.testing.assert_allclose(eps(method, mode), gauss[mode], rtol=1e-5)
    assert gauss["strict"] < gauss["paper"]  # PLD is tighter than the paper's RDP
    np.testing.assert_allclose(eps("ULDP-NAIVE", "paper"), gauss["paper"], rtol=1e-5)
    naive_strict = acc.uldp_epsilon(rounds=rounds, noise_multiplier=SIGMA / 2, delta=DELTA)
    np.testing.assert_allclose(eps("ULDP-NAIVE", "strict"), naive_strict, rtol=1e-5)
    assert naive_strict > 2 * gauss["strict"]  # sensitivity 2C|S|, not C|S|
    for rule, method in ((2, "ULDP-GROUP-2"), ("median", "ULDP-GROUP-median")):
        k = uldp_data.group_size(hist, rule)
        kept, _ = uldp_data.bound_records(task.train, k, pointer="per_user")  # strict flags
        bounded = np.bincount(kept.silo, minlength=4).tolist()
        match = re.search(rf"{method}: k = (\d+), bounded silo sizes = \[([0-9, ]+)\]", text)
        assert match, f"{method}: k and bounded sizes not printed"
        assert int(match.group(1)) == k
        assert [int(v) for v in match.group(2).split(",")] == bounded
        common = dict(silo_sizes=bounded, batch_size=BATCH, local_epochs=epochs, rounds=rounds,
                      noise_multiplier=SIGMA, group_size=k, delta=DELTA)
        strict = acc.uldp_group_epsilon(conversion="rdp", **common)["epsilon"]
        paper = acc.uldp_group_epsilon(conversion="rdp_paper", **common)["epsilon"]
        np.testing.assert_allclose(eps(method, "strict"), strict, rtol=1e-5)
        np.testing.assert_allclose(eps(method, "paper"), paper, rtol=1e-5)
        assert strict > gauss["paper"] and paper > gauss["paper"]
    assert uldp_data.group_size(hist, "median") == 10  # not a power of two: the modes differ
    assert eps("ULDP-GROUP-median", "strict") > 2 * eps("ULDP-GROUP-median", "paper")

    # Accuracy against the majority-class baseline of the pooled test set.
    majority = max(np.mean(task.test[1]), 1 - np.mean(task.test[1]))
    np.testing.assert_allclose(num("majority-class baseline accuracy ="), majority, atol=1e-3)
    assert table["DEFAULT"]["accuracy"] > majority + 0.15
    assert table["ULDP-AVG"]["accuracy"] > majority + 0.05
    assert table["ULDP-AVG-w"]["accuracy"] > majority + 0.1
    assert table["DEFAULT"]["strict"] == np.inf

    # Part 3: Protocol 1's weights equal the plaintext n[s, u] / N_u; aggregates match.
    want = uldp_data.optimal_weights(hist[:, :PROTOCOL_USERS])
    got = np.array([[float(v) for v in re.search(
        rf"silo {s} private weights: ([0-9. ]+)", text).group(1).split()] for s in range(4)])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert want[hist[:, :PROTOCOL_USERS] == 0].size > 0  # some pairs are absent: weight 0
    assert num("max |w_private - w_plaintext| =") <= 1e-9
    tolerance = 1e-10 * (PROTOCOL_USERS + 4)
    assert num("round 1 (ULDP-AVG-w): max |private - plaintext| =") <= tolerance
    assert num("sampled): max |private - plaintext| =") <= tolerance
    assert "insecure_for_tests = True" in text and "refused" in text
    server_view = text.split("== server:")[1]
    assert "own_histogram" not in server_view and "seed " not in server_view

    assert _run.count_images(nb) >= 3  # users x silos, accuracy + epsilon, weights
