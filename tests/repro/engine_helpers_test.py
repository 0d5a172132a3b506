"""Direct tests of the small generic helpers of the reproduction engine (``jaxfl.repro``).

Each expected value is written by hand or computed independently (scipy's t-interval and paired
t-test, a hand-written Holm step-down); each test's docstring names the wrong implementation it
was checked to catch (the function mutated, the test run, the mutation reverted).
"""

import gc
import math
import weakref
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as st

from jaxfl.repro import claims, declare, runs, stats, text
from jaxfl.repro.claims import NOT_RUN, Cmp, Paired
from jaxfl.validate import JaxflValueError
from tests._holm import holm


def _iv(xs):
    """(mean, lo, hi) of the 95% Student-t interval of ``xs`` by scipy."""
    xs = np.asarray(xs, float)
    lo, hi = st.t.interval(0.95, len(xs) - 1, loc=xs.mean(), scale=st.sem(xs))
    return xs.mean(), lo, hi


def _fmt(xs, nd=3):
    m, lo, hi = _iv(xs)
    return f"{m:.{nd}f} [{lo:.{nd}f}, {hi:.{nd}f}]"


def _paired_text(a, b, p_holm, nd=3, unit=""):
    d = [a[s] - b[s] for s in sorted(a) if s in b]
    m, lo, hi = _iv(d)
    return f"{m:+.{nd}f}{unit} [{lo:+.{nd}f}, {hi:+.{nd}f}] (n={len(d)}, Holm p={p_holm:.2g})"


def _p(a, b):
    seeds = sorted(set(a) & set(b))
    return float(st.ttest_rel([a[s] for s in seeds], [b[s] for s in seeds]).pvalue)


# Per-seed values of five cells (seeds 0-3): a > b > d clearly, e ahead only on seed 0, f just
# below a on every seed (the paired test decides it, the intervals overlap).
A = {0: 80.0, 1: 83.0, 2: 79.0, 3: 82.0}
B = {0: 70.0, 1: 74.0, 2: 71.0, 3: 71.0}
D = {0: 60.0, 1: 61.0, 2: 59.0, 3: 63.0}
E = {0: 85.0, 1: 70.0, 2: 70.0, 3: 70.0}
F = {0: 79.0, 1: 82.1, 2: 77.9, 3: 81.0}  # a - 1, paired
CELLS = {"a": A, "b": B, "d": D, "e": E, "f": F}


@pytest.fixture
def template(tmp_path, monkeypatch):
    """A page template ``t`` in ``tmp_path`` (the only template folder while the test runs)."""
    (tmp_path / "t.md").write_text(
        "<!-- block: detail -->\n"
        "missing={{missing}} n={{n}} holds={{holds}} overlap={{overlap}} fails={{fails}}\n"
        "<!-- block: paired -->\n{{n}} compared: {{holds}} hold, {{fails}} fail\n"
        "<!-- block: row_t_a -->\n| {{x}} |\n"
        "<!-- block: row_t_b -->\n| {{y}} | {{x}} |\n"
        "<!-- block: remaining_t -->\n{{x}}\n"
        "<!-- block: remaining_t_f -->\n{{y}}\n")
    monkeypatch.setattr(text, "TEMPLATE_DIRS", [tmp_path])
    text._blocks.cache_clear()
    yield "t"
    text._blocks.cache_clear()


# ---- runs: cells of per-seed rows ---------------------------------------------------------------

def test_seed_cell_splits_finished_aborted_and_missing_seeds():
    """The finished seeds (status ``ok``) give each value's seed map and interval; a status
    ``aborted: ...`` is aborted, any other one missing. Wrong implementation caught: an aborted
    seed counted as missing (``startswith("aborted")`` dropped from the aborted list), a
    non-finished row's value in the interval (``ok`` taken as every row)."""
    rows = [dict(seed=0, status="ok", acc=0.5, eps=1.0),
            dict(seed=1, status="aborted: a silo is empty", acc=None, eps=None),
            dict(seed=2, status="ok", acc=0.7, eps=1.25),
            dict(seed=3, status="missing", acc=None, eps=None),
            dict(seed=4, status="error: nan loss", acc=0.1, eps=9.0)]
    c = runs.seed_cell(rows, {"acc": "acc", "e": "eps"})
    assert c["acc_s"] == {0: 0.5, 2: 0.7} and c["e_s"] == {0: 1.0, 2: 1.25}
    assert c["aborted"] == [1] and c["missing"] == [3, 4]
    m, lo, hi = _iv([0.5, 0.7])
    assert c["acc"]["n"] == 2 and c["acc"]["mean"] == pytest.approx(m, rel=1e-12)
    assert (c["acc"]["lo"], c["acc"]["hi"]) == pytest.approx((lo, hi), rel=1e-12)
    assert c["e"]["mean"] == pytest.approx(1.125, rel=1e-12)


def test_cells_of_groups_rows_and_counts_a_valueless_ok_row_missing():
    """Rows by cell in first-seen order; a seed is finished only with status ``ok`` AND a value
    (an ok row without the value is missing); the interval is over the finished values.
    Wrong implementation caught: ``r[value] is not None`` dropped (None in ``values``, seed 1
    not missing), cells keyed by ``method`` alone (the two modes of A merged)."""
    rows = [dict(method="A", mode="paper", seed=0, status="ok", test_accuracy=0.8),
            dict(method="A", mode="paper", seed=1, status="ok", test_accuracy=None),
            dict(method="B", mode="strict", seed=0, status="missing", test_accuracy=None),
            dict(method="A", mode="paper", seed=2, status="ok", test_accuracy=0.9),
            dict(method="A", mode="strict", seed=0, status="ok", test_accuracy=0.1),
            dict(method="B", mode="strict", seed=1, status="ok", test_accuracy=0.7)]
    cells = runs.cells_of(rows)
    assert list(cells) == [("A", "paper"), ("B", "strict"), ("A", "strict")]
    a, b = cells[("A", "paper")], cells[("B", "strict")]
    assert a["values"] == {0: 0.8, 2: 0.9} and a["seeds"] == [0, 1, 2] and a["missing"] == [1]
    assert a["ok"] == [rows[0], rows[3]]
    m, lo, hi = _iv([0.8, 0.9])
    assert (a["interval"]["mean"], a["interval"]["lo"], a["interval"]["hi"]) == pytest.approx(
        (m, lo, hi), rel=1e-12)
    assert b["values"] == {1: 0.7} and b["missing"] == [0] and b["interval"]["n"] == 1
    assert math.isnan(b["interval"]["lo"])


def test_select_on_chooses_on_validation_over_the_common_seeds_only():
    """The learning rate is chosen by mean validation accuracy over the seeds every rate ran
    (here 0.01 wins on seeds 0-1, though 0.1 wins on all its seeds and on test), the cell's
    values are the chosen rate's test accuracies. Wrong implementations caught: every seed of a
    rate averaged (chooses 0.1), choosing on test (0.1), ``min`` for ``max`` (0.1), choices
    ascending."""
    def r(cell, lr, seed, val, test):
        return dict(m=cell, lr=lr, seed=seed, val=val, test=test)
    rows = [r("x", 0.1, 0, 0.60, 0.70), r("x", 0.1, 1, 0.62, 0.71), r("x", 0.1, 2, 0.99, 0.72),
            r("x", 0.01, 0, 0.65, 0.50), r("x", 0.01, 1, 0.66, 0.52), r("y", 0.1, 0, 0.3, 0.4)]
    out = runs.select_on(rows, ("m",), "lr", "val", "test")
    x = out[("x",)]
    assert x["choice"] == 0.01 and x["choices"] == [0.1, 0.01] and x["select_seeds"] == [0, 1]
    assert x["values"] == {0: 0.50, 1: 0.52} and x["rows"] == rows[3:5]
    assert (x["interval"]["lo"], x["interval"]["hi"]) == pytest.approx(_iv([0.5, 0.52])[1:],
                                                                       rel=1e-12)
    assert out[("y",)]["choice"] == 0.1 and out[("y",)]["select_seeds"] == [0]


def test_round_table_keeps_rounds_every_seed_reached_and_refuses_disagreeing_seeds():
    """Rows of the requested rounds that every seed reached plus the last round they all reached;
    each the seeds' interval of the value; a ``same`` column equal to 9 decimals across seeds,
    else a typed error naming the round. Wrong implementations caught: ``max(last)`` for
    ``min(last)`` (a round only one seed reached), no rounding before the comparison (a 1e-12
    difference refused), the check dropped (a 1e-6 difference accepted)."""
    loss = {0: [1.0, 0.8, 0.6], 1: [1.2, 0.9, 0.7, 0.65]}
    rows = [dict(seed=s, round=t, loss=v, eps=0.5 * t + (1e-12 if s else 0.0))
            for s, vs in loss.items() for t, v in enumerate(vs, 1)]
    out = runs.round_table(rows, (2, 5, 10), "loss", "eps")
    assert out["seeds"] == "0, 1" and out["reached"] == "3 - 4"
    assert out["table"] == [dict(round=2, n=2, same=1.0, value=_fmt([0.8, 0.9])),
                            dict(round=3, n=2, same=1.5, value=_fmt([0.6, 0.7]))]
    assert out["table"][0]["value"] == "0.850 [0.215, 1.485]"
    bad = [dict(r, eps=r["eps"] + 1e-6) if (r["seed"], r["round"]) == (1, 2) else r for r in rows]
    with pytest.raises(JaxflValueError, match="disagreeing at round 2"):
        runs.round_table(bad, (2,), "loss", "eps")


def test_tail_mean_takes_the_last_fraction_rounded_up():
    """Mean of the last ceil(frac * n) values, at least one; NaN without values. Wrong
    implementation caught: rounding down (``int`` for ``np.ceil``: 5 values at 0.25 -> the last
    one only), the first values instead of the last."""
    assert runs.tail_mean([1.0, 2.0, 3.0, 4.0, 5.0]) == 4.5  # ceil(1.25) = 2
    assert runs.tail_mean(np.arange(10.0)) == 8.0  # ceil(2.5) = 3: 7, 8, 9
    assert runs.tail_mean([1.0, 2.0, 3.0], frac=0.0) == 3.0
    assert runs.tail_mean(np.arange(8.0), frac=0.5) == 5.5
    assert math.isnan(runs.tail_mean([]))


def test_run_numbers_read_each_mode_from_its_own_report():
    """``epsilon_<mode>``: the run's own report when it is in that mode, else its
    ``privacy_<mode>`` report, else its own; a final metric not logged is None. Wrong
    implementation caught: ``privacy_<mode>`` preferred over an own report in that mode, the
    own epsilon for every mode."""
    s = dict(rounds=10, final={"test_accuracy": 0.9},
             privacy={"mode": "paper", "epsilon": 2.5},
             privacy_strict={"mode": "strict", "epsilon": 3.5},
             privacy_paper={"mode": "paper", "epsilon": 99.0})
    assert runs.run_numbers(s, modes=("strict", "paper")) == dict(
        rounds=10, test_accuracy=0.9, train_loss=None, epsilon=2.5, epsilon_strict=3.5,
        epsilon_paper=2.5)
    own = dict(rounds=3, privacy={"mode": "strict", "epsilon": "inf"})
    assert runs.run_numbers(own, finals=()) == dict(rounds=3, epsilon=math.inf,
                                                    epsilon_strict=math.inf)


def test_point_row_and_last_record_row():
    """``point_row``: the config's keys, then a finished run's numbers and ``ok``, or
    ``missing`` without a summary; ``last_record_row``: the keys (converted), the last record's
    columns (a required one must be there, an optional one defaults), None without records.
    Wrong implementations caught: an unfinished point left out or marked ``ok``, the first
    record read for the last, a missing optional column raising."""
    cfg = SimpleNamespace(method="m", mode="paper", seed=3)
    row = runs.point_row(numbers=lambda s: {"acc": s["acc"]})
    assert row(cfg, None) == dict(method="m", mode="paper", seed=3, status="missing")
    got = row(cfg, {"acc": 0.5}, [])
    assert got == dict(method="m", mode="paper", seed=3, acc=0.5, status="ok")
    assert list(got) == ["method", "mode", "seed", "acc", "status"]
    last = runs.last_record_row(("method", "seed"), {"acc": ("test_accuracy", None),
                                                     "eps": ("epsilon", -1.0)}, {"seed": str})
    assert last(cfg, None, []) is None
    recs = [{"test_accuracy": 0.1, "epsilon": 1.0}, {"test_accuracy": 0.2}]
    assert last(cfg, None, recs) == dict(method="m", seed="3", acc=0.2, eps=-1.0)
    with pytest.raises(KeyError):
        last(cfg, None, [{"epsilon": 1.0}])


def test_check_setting_refuses_a_file_of_another_setting():
    """A data file written for another setting is refused, naming both. Wrong implementation
    caught: comparing only the keys' names, or not at all."""
    cfg = SimpleNamespace(rounds=10, clients=4, other="x")
    assert runs.check_setting("f.json", {"rounds": 10, "clients": 4}, cfg,
                              ("rounds", "clients")) is None
    with pytest.raises(ValueError, match=r"f.json was written for \{'rounds': 5, 'clients': 4\}, "
                                         r"not for this setting \{'rounds': 10, 'clients': 4\}"):
        runs.check_setting("f.json", {"rounds": 5, "clients": 4}, cfg, ("rounds", "clients"))


def test_shared_seeds_and_seed_scale():
    """``shared_seeds``: the fewest seeds among the named runs that ran (0 for none);
    ``seed_scale``: sorted distinct seeds and the distinct scale tuples. Wrong implementation
    caught: ``max`` for ``min``, a run that did not run counted as 0 seeds, unsorted seeds."""
    assert runs.shared_seeds({"a": [1, 2, 3], "b": [1, 2]}, ["a", "b", "zz"]) == 2
    assert runs.shared_seeds({}, ["a"]) == 0
    rows = [dict(seed=2, r=10, c=4), dict(seed=0, r=10, c=4), dict(seed=2, r=5, c=4)]
    s = runs.seed_scale(rows, ("r", "c"))
    assert (s["seeds"], s["n_seeds"], s["points"], s["scale"]) == ([0, 2], 2, 3, "5, 4; 10, 4")
    assert s["first"] is rows[0] and runs.seed_scale([], ())["first"] is None


# ---- text: exact strings ------------------------------------------------------------------------

def test_span_and_ranges():
    """``span``: "-" without values, one value when all write alike (after ``fmt``), else
    "lo - hi"; ``ranges``: runs of consecutive integers. Wrong implementations caught: the
    range written even when both ends write alike, "1-1" for a single integer, a gap not
    splitting a run."""
    assert text.span([]) == "-"
    assert text.span([4, 4]) == "4"
    assert text.span([3, 1, 2]) == "1 - 3"
    assert text.span([1.01, 1.04], lambda v: f"{v:.1f}") == "1.0"
    assert text.span([1.01, 1.06], lambda v: f"{v:.1f}") == "1.0 - 1.1"
    assert text.ranges([1, 2, 3, 7, 9, 10]) == "1-3, 7, 9-10"
    assert text.ranges([5]) == "5" and text.ranges([]) == ""


def test_interval_text_delta_text_and_short_exp():
    """Exact strings: a run's mean [95% t-interval] (scipy's), "-" for a run without values, a
    delta as 1e-5 / 0.1, a summary number with 3 (2 from 1e5 on) significant digits and a bare
    exponent. Wrong implementations caught: ``x <= 0.1`` in ``delta_text`` ("1e-1"), the "e+"
    kept for two-digit exponents (``short_exp``), the 1e5 switch at 1e6."""
    values = {"a": {0: 1.0, 1: 2.0, 2: 3.0}, "b": {0: 0.26}}
    assert text.interval_text(values, "a") == _fmt([1.0, 2.0, 3.0], 1) == "2.0 [-0.5, 4.5]"
    assert text.interval_text(values, "b") == "0.3"
    assert text.interval_text(values, "zz") == "-"
    assert [text.delta_text(x) for x in (1e-5, 1e-2, 0.05, 0.1, 0.5, 1e-10)] == [
        "1e-5", "1e-2", "5e-2", "0.1", "0.5", "1e-10"]
    assert [text.short_exp(v) for v in (2.7e9, 1.5e12, 123456.0, 99999.0, 0.123456, 7, None)] == [
        "2.7e9", "1.5e12", "1.2e5", "1e5", "0.123", "7", "-"]


def test_grid_and_cell_line():
    """``grid``: sorted columns, rows in first-seen order, None where a cell did not run;
    ``cell_line``: a :func:`runs.cells_of` cell's finished/declared counts, interval, spans and
    rounds. Wrong implementations caught: rows sorted, a missing cell dropped (the columns
    misaligned), ``declared`` counting only the finished seeds."""
    cols, rows = text.grid({("r2", "b"): 1, ("r1", "a"): 2, ("r2", "a"): 3})
    assert cols == [dict(col="a"), dict(col="b")]
    assert rows == [dict(row="r2", cells=[dict(c=3), dict(c=1)]),
                    dict(row="r1", cells=[dict(c=2), dict(c=None)])]
    rs = [dict(method="A", mode="p", seed=s, status=st_, test_accuracy=v, rounds=10, eps=e)
          for s, st_, v, e in ((0, "ok", 0.8, 1.0), (1, "missing", None, None),
                               (2, "ok", 0.9, 1.5))]
    line = text.cell_line(runs.cells_of(rs)[("A", "p")], ("eps",))
    assert line == dict(finished=2, declared=3, n=2, interval=_fmt([0.8, 0.9]), missing=[1],
                        rounds=[10], eps="1.0 - 1.5")


# ---- claims: verdicts, Holm families, not-run rows ----------------------------------------------

def test_ordering_claims_compare_adjacent_ran_keys_as_one_family():
    """Adjacent keys with two or more finished seeds are compared (a > b, b > d: two tests, one
    Holm family, scipy's paired t-test); a key with fewer seeds, or not declared, gives a
    ``not run`` row naming its missing seeds. Wrong implementations caught: a one-seed key
    compared (``>= 1``: a > b > c > d), Holm m = 1 per pair (p not doubled), the not-run rows
    dropped."""
    rows = [dict(method=k, mode="p", seed=s, status="ok", test_accuracy=v)
            for k in ("a", "b", "d") for s, v in CELLS[k].items()]
    rows += [dict(method="c", mode="p", seed=0, status="ok", test_accuracy=1.0),
             dict(method="c", mode="p", seed=1, status="missing", test_accuracy=None),
             dict(method="c", mode="p", seed=2, status="aborted: x", test_accuracy=None)]
    cells = {m: c for (m, _), c in runs.cells_of(rows).items()}
    out = claims.ordering_claims(cells, ["a", "x", "b", "c", "d"], str.upper,
                                 lambda k: f"{k} (paper)")
    ph = holm([_p(A, B), _p(B, D)])
    assert [r["claim"] for r in out] == ["A > B", "B > D", "X in the ordering",
                                         "C in the ordering"]
    assert out[0]["paired"] == _paired_text(A, B, ph[0])
    assert out[1]["paired"] == _paired_text(B, D, ph[1])
    assert out[0]["measured"] == f"A {_fmt(list(A.values()))} vs B {_fmt(list(B.values()))}"
    assert [r["verdict"] for r in out] == [stats.HOLDS, stats.HOLDS, NOT_RUN, NOT_RUN]
    assert out[2]["measured"] == "x (paper) not declared"
    assert out[3]["measured"] == "seeds [1, 2] of c (paper) not run"
    assert out[3]["paired"] == "-" and out[3]["interval_verdict"] == "-"


def test_decided_writes_paired_and_detail_and_a_not_run_claim():
    """Every comparison of every claim that ran is one Holm family (three tests here); a claim
    with an undeclared cell is ``not run`` with ``paired`` "-" and ``detail`` "not run". Wrong
    implementations caught: ``paired`` "" for the not-run claim (``or "-"`` dropped), the
    detail naming the keys rather than ``name(key)``."""
    cl = [Paired("a > b", (Cmp("a", "b"),)), Paired("a > b > d", (Cmp("a", "b"), Cmp("b", "d"))),
          Paired("a > z", (Cmp("a", "z"),))]
    out = claims.decided(cl, CELLS.get, name=str.upper)
    ph = holm([_p(A, B), _p(A, B), _p(B, D)])
    assert out[0]["paired"] == _paired_text(A, B, ph[0])
    assert out[1]["paired"] == f"{_paired_text(A, B, ph[1])}; {_paired_text(B, D, ph[2])}"
    fa, fb = _fmt(list(A.values())), _fmt(list(B.values()))
    assert out[0]["detail"] == f"A {fa} vs B {fb}"
    assert out[2]["verdict"] == NOT_RUN and out[2]["paired"] == "-"
    assert out[2]["detail"] == "not run" and out[2]["interval"] == "-"
    assert out[0]["interval"] == out[0]["interval_verdict"] == stats.HOLDS


def test_decide_family_describes_one_seed_claims_outside_the_family():
    """Claims on two or more seeds (field ``k``, default 2) are tested as one Holm family; a
    claim on one seed is described (verdict ONE_SEED) with its inversions counted on its first
    ``k`` seeds' means, and does not enlarge the family. Wrong implementations caught: the
    one-seed claim tested (family 4, p doubled), inversions over every seed (2 instead of 1),
    ``agree`` counting all parts."""
    cl = [Paired("a > b", (Cmp("a", "b"),), {"at": ["r1"], "k": 4}),
          Paired("e > a > ...", (Cmp("e", "a"), Cmp("b", "a")), {"at": ["x", "y"], "k": 1}),
          Paired("d > a", (Cmp("d", "a"),), {"at": ["r2"]})]
    out = claims.decide_family(cl, CELLS.get, nd=1, unit=" pp")
    ph = holm([_p(A, B), _p(D, A)])
    assert [r["family"] for r in out] == [2, 2, 2]
    assert [r["verdict"] for r in out] == [stats.HOLDS, stats.ONE_SEED, stats.FAILS]
    assert out[1]["inversions"] == 1 and out[1]["one_seed"] and out[1]["parts"] == []
    assert [(r["n"], r["held"], r["agree"]) for r in out] == [(1, 1, 1), (2, 0, 0), (1, 0, 0)]
    assert out[0]["parts"] == [dict(at="r1", a=_fmt(list(A.values()), 1),
                                    b=_fmt(list(B.values()), 1),
                                    d=_paired_text(A, B, ph[0], 2, " pp"),
                                    paired=_paired_text(A, B, ph[0], 2), verdict=stats.HOLDS)]
    assert out[2]["parts"][0]["d"] == _paired_text(D, A, ph[1], 2, " pp")


def test_decided_among_keeps_decided_rows_and_makes_one_family():
    """Paired claims are replaced in place by their results, rows decided already are kept
    as they are, and the Paired claims form one Holm family. Wrong implementation caught:
    each claim decided on its own (p not doubled), the kept row moved to the end."""
    kept = {"claim": "exact", "verdict": stats.HOLDS}
    out = claims.decided_among([Paired("a > b", (Cmp("a", "b"),)), kept,
                                Paired("b > d", (Cmp("b", "d"),))], CELLS.get)
    assert out[1] is kept and [r["claim"] for r in out] == ["a > b", "exact", "b > d"]
    ph = holm([_p(A, B), _p(B, D)])
    assert out[0]["paired"] == _paired_text(A, B, ph[0])
    assert out[2]["paired"] == _paired_text(B, D, ph[1])


def test_claim_cells_words_a_claim_by_its_interval_and_paired_verdicts(template):
    """``detail``: how many comparisons hold / overlap by the interval rule and which fail;
    ``paired``: each difference for at most ``few`` comparisons, else the counts of paired
    verdicts; a not-run claim names its missing cells. Wrong implementations caught: the
    paired counts taken from the interval rule, ``few`` as a strict bound (3 <= 3 written
    out), missing cells unnamed."""
    cl = [Paired("three", (Cmp("a", "b"), Cmp("b", "a"), Cmp("a", "f"))),
          Paired("gone", (Cmp("a", "z"), Cmp("y", "a")))]
    r, gone = claims.decide(cl, CELLS.get)
    name, kind = str.upper, lambda cmp: "acc"
    got = claims.claim_cells(r, name, kind, page=template)
    # intervals: a above b (holds), b below a (fails), a vs f overlap; paired: a - f holds
    assert _iv(list(A.values()))[1] > _iv(list(B.values()))[2]
    assert _iv(list(A.values()))[1] < _iv(list(F.values()))[2]
    assert got["detail"] == "missing= n=3 holds=1 overlap=1 fails=B vs A (acc)"
    ph = holm([_p(A, B), _p(B, A), _p(A, F)])
    assert ph[0] < 0.05 and ph[2] < 0.05
    assert got["paired"] == "3 compared: 2 hold, 1 fail"
    few = claims.claim_cells(r, name, kind, page=template, few=3)["paired"]
    assert few == "; ".join([f"A - B (acc): {_paired_text(A, B, ph[0])}",
                             f"B - A (acc): {_paired_text(B, A, ph[1])}",
                             f"A - F (acc): {_paired_text(A, F, ph[2])}"])
    g = claims.claim_cells(gone, name, kind, page=template)
    assert g == dict(paired="-", detail="missing=Y, Z n=0 holds=0 overlap=0 fails=")


def test_verdict_counts():
    """Counts of holds and does-not-hold, "none" without either, every other verdict
    inconclusive. Wrong implementation caught: not-run / one-seed rows left out of the
    inconclusive count, a zero count written ("0 holds")."""
    rows = [{"verdict": v} for v in (stats.HOLDS, stats.FAILS, stats.HOLDS, stats.INCONCLUSIVE,
                                     NOT_RUN, stats.ONE_SEED)]
    assert claims.verdict_counts(rows) == dict(verdicts="2 holds, 1 does not hold",
                                               inconclusive=3)
    assert claims.verdict_counts(rows[1:2]) == dict(verdicts="1 does not hold", inconclusive=0)
    assert claims.verdict_counts(rows[3:]) == dict(verdicts="none", inconclusive=3)


# ---- stats.matches_spec -------------------------------------------------------------------------

def test_matches_spec_within_six_tenths_of_the_last_printed_digit():
    """A spec value matches a printed number within 0.6 units of the number's last digit,
    also for numbers written with an exponent or without decimals. Wrong implementations
    caught: a tolerance of a whole unit, or of the wrong digit (before the fix, 1.5e-07 took its
    tolerance from the characters "5e-07" after the point: 6e-6, so a spec of 3e-6 matched;
    and 4.0, written "4", got 0.06 for 0.6)."""
    assert stats.matches_spec({"x": 1.23, "_spec": {"x": 1.234}})
    assert not stats.matches_spec({"x": 1.23, "_spec": {"x": 1.237}})
    assert stats.matches_spec({"x": 1.23, "y": 0.5, "_spec": {"x": 1.2345}})
    assert not stats.matches_spec({"x": 1.23, "y": 0.5, "_spec": {"x": 1.23, "y": 0.57}})
    assert stats.matches_spec({"x": 1e-05, "_spec": {"x": 1.5e-5}})
    assert not stats.matches_spec({"x": 1e-05, "_spec": {"x": 1.7e-5}})
    assert stats.matches_spec({"x": 1.5e-07, "_spec": {"x": 1.53e-7}})
    assert not stats.matches_spec({"x": 1.5e-07, "_spec": {"x": 3e-6}})
    assert stats.matches_spec({"x": 4.0, "_spec": {"x": 4.5}})
    assert not stats.matches_spec({"x": 4.0, "_spec": {"x": 4.7}})


# ---- declare: fields from one context ----------------------------------------------------------

def test_per_inputs_computes_once_per_inputs_object(tmp_path):
    """Once per :class:`declare.Inputs` object, again for another one, and not kept alive by
    the cache. Wrong implementations caught: one cached value for every inputs (the second
    object gets the first's value), no caching (two calls), a plain dict cache (keeps i1)."""
    calls = []

    @declare.per_inputs
    def ctx(inputs):
        calls.append(inputs)
        return {"data": inputs.data}

    i1, i2 = declare.Inputs(tmp_path / "a"), declare.Inputs(tmp_path / "b")
    assert ctx(i1) is ctx(i1) and ctx(i2)["data"] == tmp_path / "b" and calls == [i1, i2]
    gone = weakref.ref(i1)
    del calls[:], i1
    gc.collect()
    assert gone() is None  # the cache does not keep an Inputs alive
    assert ctx(i2)["data"] == tmp_path / "b" and calls == []


def test_claims_remaining_and_context_rows_fill_their_blocks(template, tmp_path):
    """``claims_from`` / ``remaining_from`` rows carry the names their block uses from the
    context (a ``rows`` claim: one row per dict, the dict's names over the context's).
    Wrong implementation caught: the context's names over the row's (``r | ctx``: y=2 in
    every row), names the block does not use kept (``unused``)."""
    ctx = lambda inputs: {"x": 1, "y": 2, "list": [{"y": 3}, {"y": 4}], "unused": 5}
    inputs = declare.Inputs(tmp_path)
    a, b = declare.claims_from(ctx, template, (("a", "claim a", declare.EXACT),
                                              ("b", "claim b", declare.PAIRED, "fig", "list")))
    assert (a.row, b.row, b.figure) == ("row_t_a", "row_t_b", "fig")
    assert declare.rows(a, inputs) == [{"x": 1}]
    assert declare.rows(b, inputs) == [{"x": 1, "y": 3}, {"x": 1, "y": 4}]
    r0, r1 = declare.remaining_from(ctx, template, (("i0", ""), ("i1", "f")))
    assert (r0.row, r1.row) == ("remaining_t", "remaining_t_f")
    assert declare.rows(r0, inputs) == [{"x": 1}] and declare.rows(r1, inputs) == [{"y": 2}]
