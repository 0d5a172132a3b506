"""Subject-level DP over seeds (experiments/reproduce/subject_dp.py, figure ``seeds``): the
claims' rows and the page's section 3b come from the per-seed CSV, the paired verdicts agree with
an independent paired t-test and Holm correction (scipy), and a point that did not run is
reported as missing, never dropped."""

import csv
import shutil

import numpy as np
import pytest
from scipy import stats as st

import experiments.reproduce  # noqa: F401  (registers the papers)
from experiments.reproduce import subject_dp as sdp
from jaxfl.repro import declare
from jaxfl.repro import runs as _runs
from jaxfl.repro import text as _text

# Final test accuracy per (method, seed), paper mode; None: the point did not run. The paper's
# ordering is FedAvg > LocalItemDP > HiGradAvgDP > LocalGroupDP > UserLDP; here HiGradAvgDP
# ends below LocalGroupDP (that pair must not hold).
ACC = {"fedavg": [0.903, 0.871, 0.925, 0.884, 0.912],
       "local_item_dp": [0.801, 0.795, 0.842, 0.760, 0.833],
       "higradavg_dp": [0.612, 0.575, 0.650, 0.598, 0.633],
       "local_group_dp": [0.704, 0.662, 0.731, 0.716, 0.689],
       "user_ldp": [0.203, 0.251, 0.177, 0.228, None]}


def _write(path, acc):
    """The per-seed CSV of ``acc`` in ``path`` beside the committed sections 1-3."""
    shutil.copy(declare.DATA / sdp.DATA, path / sdp.DATA)
    rows = []
    for method, values in acc.items():
        for seed, v in enumerate(values):
            base = {"method": method, "mode": "paper", "seed": seed}
            rows.append({**base, "status": "missing"} if v is None else {
                **base, "rounds": 100, "test_accuracy": v, "train_loss": 1.0 - v,
                "epsilon": 4.0, "epsilon_strict": 900.0 + seed, "status": "ok"})
    rows += [{"method": "user_ldp", "mode": "strict", "seed": s, "status": "missing"}
             for s in range(5)]
    with open(path / sdp.SEEDS_CSV, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*sdp.SEED_FIELDS, *_runs.PROVENANCE_FIELDS])
        w.writeheader()
        w.writerows({**r, **dict.fromkeys(_runs.PROVENANCE_FIELDS, "x")} for r in rows)
    return rows


def _claim_rows(data_dir):
    claim = next(c for c in declare.paper("subject_dp").claims if c.name == "seeds_ordering")
    assert claim.rule is declare.PAIRED and claim.figure == "seeds"
    return declare.rows(claim, declare.Inputs(data_dir))


def test_claims_and_table_come_from_the_data(tmp_path):
    """Each adjacent pair of the paper's ordering: the means and the Holm-corrected paired
    p-value recomputed here (scipy's ttest_rel on the seeds both ran, Holm by hand), the
    verdict following from them; the page's table shows each method's interval and its
    finished count. Wrong implementations caught: unpaired or wrongly paired seeds, no Holm
    correction, a swapped direction, a verdict or table not read from the CSV."""
    _write(tmp_path, ACC)
    rows = _claim_rows(tmp_path)
    order = list(sdp.PAPER_ORDER)
    assert [r["claim"] for r in rows] == [f"{sdp.NAMES[a]} > {sdp.NAMES[b]}"
                                          for a, b in zip(order, order[1:])]
    pvals = []
    for a, b in zip(order, order[1:]):
        seeds = [s for s in range(5) if ACC[a][s] is not None and ACC[b][s] is not None]
        pvals.append(st.ttest_rel([ACC[a][s] for s in seeds], [ACC[b][s] for s in seeds]).pvalue)
    m = len(pvals)
    ranked = np.argsort(pvals)
    holm, running = [0.0] * m, 0.0
    for rank, k in enumerate(ranked):
        running = max(running, min(1.0, (m - rank) * pvals[k]))
        holm[k] = running
    for r, (a, b), p in zip(rows, zip(order, order[1:]), holm, strict=True):
        diff = np.mean([x - y for x, y in zip(ACC[a], ACC[b]) if x is not None and y is not None])
        assert f"{diff:+.3f} [" in r["paired"] and f"Holm p={p:.2g})" in r["paired"]
        mean_a = np.mean([x for x in ACC[a] if x is not None])
        assert r["measured"].startswith(f"{sdp.NAMES[a]} {mean_a:.3f} [")
        assert r["verdict"] == ("does not hold" if a == "higradavg_dp" else "holds")
        assert "5 seeds (24 of 30 points finished)" in _text.prose(
            "subject_dp", "row_subject_dp_seeds_ordering", **r)
    text = sdp.page(declare.Inputs(tmp_path))
    for method, values in ACC.items():
        v = [x for x in values if x is not None]
        half = st.t.ppf(0.975, len(v) - 1) * np.std(v, ddof=1) / np.sqrt(len(v))
        cell = (f"| {sdp.NAMES[method]} | paper | {len(v)} of 5 | {np.mean(v):.3f} "
                f"[{np.mean(v) - half:.3f}, {np.mean(v) + half:.3f}] (n={len(v)}) |")
        assert cell in text
    assert "| HiGradAvgDP > LocalGroupDP | does not hold | does not hold |" in text


def test_a_missing_point_is_reported_as_missing(tmp_path):
    """A point without its summary is counted as declared, not finished, and named on the page
    (its method's row and the "not run" list); a method of the ordering without seeds gives a
    "not run" claim row, not a silently shorter ordering. Wrong implementations caught:
    missing rows dropped from the count or the table, a method without seeds skipped."""
    _write(tmp_path, ACC)
    text = sdp.page(declare.Inputs(tmp_path))
    assert "24 of 30 declared points finished" in text
    assert "Not run (no summary in the sweep when exported): UserLDP paper (seeds 4); " \
           "UserLDP strict (seeds 0, 1, 2, 3, 4)." in text
    assert "| UserLDP | paper | 4 of 5 |" in text and "| seeds [4] not run |" in text
    assert "| UserLDP | strict | 0 of 5 | - |" in text

    acc = {**ACC, "higradavg_dp": [None] * 5}
    _write(tmp_path, acc)
    rows = _claim_rows(tmp_path)
    assert [r["claim"] for r in rows] == ["FedAvg > LocalItemDP", "LocalItemDP > LocalGroupDP",
                                          "LocalGroupDP > UserLDP",
                                          "HiGradAvgDP in the ordering"]
    assert rows[-1]["verdict"] == "not run"
    assert rows[-1]["measured"] == "seeds [0, 1, 2, 3, 4] of HiGradAvgDP (paper mode) not run"
    assert all(r["verdict"] == "holds" for r in rows[:-1])


def test_seeds_configs_are_the_sweep_s_points():
    """The declared configs are the points of ``femnist_like.py:seeds=5`` with
    ``tight_accounting=False`` (the sweep the data came from): 9 method/mode cells x 5 seeds,
    distinct ids. Wrong implementation caught: a declaration whose point ids miss the sweep."""
    from jaxfl import metrics

    configs = sdp.seeds_configs("cpu")
    assert len(configs) == 45 and len({metrics.config_hash(c) for c in configs}) == 45
    assert {c.seed for c in configs} == set(range(5))
    assert not any(c.tight_accounting for c in configs)
    with open(declare.DATA / sdp.SEEDS_CSV, newline="") as f:
        committed = [(r["method"], r["mode"], int(r["seed"])) for r in csv.DictReader(f)]
    assert committed == [(c.method, c.mode, c.seed) for c in configs]


if __name__ == "__main__":
    pytest.main([__file__])


def test_higrad_row_of_a_smoke_run_without_local_group_dp(tmp_path):
    """A smoke run's training section has no LocalGroupDP (paper mode): the summary row says
    "not run" for it instead of stopping the entry point with a KeyError; the committed data
    give both accuracies."""
    import json

    claim = next(c for c in sdp.PAPER.claims if c.name == "higrad")
    data = json.loads((declare.DATA / sdp.DATA).read_text())
    full = _text.prose("subject_dp", claim.row, **claim.fields(declare.Inputs(declare.DATA)))
    assert "| 0.528 vs 0.545 test accuracy | MNIST writers, 150 subjects, MLP," in full
    data["training"]["rows"] = [r for r in data["training"]["rows"]
                                if r["method"] != "LocalGroupDP"]
    (tmp_path / sdp.DATA).write_text(json.dumps(data))
    row = _text.prose("subject_dp", claim.row, **claim.fields(declare.Inputs(tmp_path)))
    assert row == full.replace("0.528 vs 0.545", "0.528 vs not run")
