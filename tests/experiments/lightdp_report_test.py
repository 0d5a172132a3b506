"""LightDP report: the per-seed CSV round trip and the verdict rules (no training)."""

import numpy as np

from experiments.reproduce import lightdp as lr
from experiments.reproduce import stats


def _results(acc_of, seeds):
    """Driver-shaped results for every Table II/III and Fig. 3 run; ``acc_of(name, seed)``."""
    names = lr.table_names("table2") + lr.table_names("table3") + [
        f"fig3_eps{e}_{s}" for e in lr.EPS for s in ("ldp", "smpc_dp")]
    out = {}
    for n in names:
        row = {"name": n, "scheme": "ldp" if n.endswith("ldp") else "lightdp", "epsilon": 3.0,
               "max_colluders": 10, "max_stragglers": 10}
        out[n] = [{"seed": s, "row": row,
                   "history": [{"test_accuracy": acc_of(n, s), "elapsed_s": 1.0,
                                "epsilon": 2.5, "privacy_mode": "strict"}]}
                  for s in range(seeds)]
    return out


def _eps(name):
    return int(name.split("_eps")[1].split("_")[0])


def test_csv_round_trip(tmp_path):
    import experiments.reproduce.lightdp as driver

    base = driver.base_config("smoke", "mnist")
    res = _results(lambda n, s: 0.5 + 0.01 * s, 2)
    lr.write_data(tmp_path, res, base, scale="smoke", costs=None, fig4=None, wall=1.0,
                  model_params=10)
    back, meta = lr.read_data(tmp_path)
    assert meta["setting"] == lr.setting_of(base) and meta["model_params"] == 10
    assert {n: lr.per_seed(back, n) for n in back} == {n: lr.per_seed(res, n) for n in res}


def test_fig3_verdicts_follow_the_interval_rule():
    rng = np.random.default_rng(0)
    noise = {s: rng.normal(0, 0.02) for s in range(3)}  # shared per seed (paired)

    def acc(gap):
        return lambda n, s: 0.7 + noise[s] + (gap if n.startswith("table2") else 0.0) + (
            0.001 * s if "ldp" in n else 0.0)

    # the verdict is the Holm-corrected paired test; the interval rule is reported beside it
    for gap, want, want_interval in [(0.2, stats.HOLDS, stats.HOLDS),
                                     (-0.2, stats.FAILS, stats.FAILS),
                                     (0.005, stats.INCONCLUSIVE, stats.OVERLAP)]:
        c = {row[0]: row for row in lr.claims(_results(acc(gap), 3), None, None)}
        beats = c["LightDP-FL beats vanilla LDP at every ε (Fig. 3)"]
        assert beats[1] == want, (gap, beats)
        assert beats[3].startswith(f"interval rule: {want_interval}; paired: "), beats
    # "more than 15 points": a 20-point gap in every seed holds, a 10-point one does not.
    for gap, want in [(0.20, stats.HOLDS), (0.10, stats.FAILS)]:
        c = {row[0]: row for row in lr.claims(_results(acc(gap), 3), None, None)}
        assert c["... by more than 15 points"][1] == want, gap


def test_table_trends_with_one_seed_get_no_verdict():
    # Accuracy rising with epsilon everywhere: no inversion, still no verdict on one seed.
    one = {row[0]: row for row in lr.claims(_results(lambda n, s: 0.5 + 0.01 * _eps(n), 1),
                                           None, None)}
    row = one["Table II: accuracy increases with ε"]
    assert row[1] == stats.ONE_SEED and row[2].startswith("0 inversions of 8")
    flat = {row[0]: row for row in lr.claims(_results(lambda n, s: 0.5, 1), None, None)}
    assert flat["Table II: accuracy increases with ε"][2].startswith("8 inversions of 8")
    three = {row[0]: row for row in lr.claims(
        _results(lambda n, s: 0.5 + 0.05 * _eps(n) + 0.001 * s, 3), None, None)}
    assert three["Table II: accuracy increases with ε"][1] == stats.HOLDS
