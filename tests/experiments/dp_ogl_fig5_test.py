"""The DP-OGL Fig. 5 (Fashion-MNIST) numbers on the committed pages, recomputed from the committed
per-seed CSVs with csv / NumPy / SciPy only (no code of jaxfl.repro.stats): the
per-curve 95% t-intervals, the paired t-tests, Holm over the paper's one family (Fig. 3's and
Fig. 5's comparisons together) and each claim's verdict. A changed CSV value changes a printed
number (the last test), so a stale page or a wrong pipeline fails here."""

import csv
import math
import shutil

import numpy as np
import pytest
from scipy import stats as st

import experiments.reproduce  # noqa: F401  (registers the papers)
from experiments.reproduce import dp_ogl as ds
from jaxfl.repro import declare

PAGE = declare.ROOT / "docs" / "reproduction" / "dp_ogl.md"
SUMMARY = declare.ROOT / "docs" / "reproduction.md"
FIG3_CSV, FIG5_CSV = declare.DATA / ds.SEEDS_CSV, declare.DATA / ds.FIG5_CSV
ACC, LOSS = "tail_test_accuracy", "tail_train_loss"
VERDICT = {1: "holds", -1: "does not hold",
           0: "inconclusive (Holm-corrected paired test not significant)"}

pytestmark = pytest.mark.skipif(not FIG5_CSV.exists(), reason="no committed Fig. 5 data")


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _values(rows, curve, metric):
    """seed -> value of one curve's ``metric`` ("acc" or "loss", a claim's; loss negated:
    "better" is always "larger")."""
    sign, key = (-1.0, LOSS) if metric == "loss" else (1.0, ACC)
    return {int(r["seed"]): sign * float(r[key]) for r in rows if r["curve"] == curve}


def _t_interval(x):
    x = np.asarray(x, float)
    half = st.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return x.mean(), x.mean() - half, x.mean() + half


def _expected(fig3_csv, fig5_csv):
    """The strings the committed pages must contain, recomputed from the two CSVs."""
    sets = [(_read(fig3_csv), ds.FIG3_CLAIMS, 3), (_read(fig5_csv), ds.FIG5_CLAIMS, 5)]
    tests = []  # (fig, claim index, a, b, key, diffs, p)
    for rows, claims, fig in sets:
        for i, (_, _, comps) in enumerate(claims):
            for a, b, key in comps:
                va, vb = _values(rows, a, key), _values(rows, b, key)
                seeds = sorted(set(va) & set(vb))
                d = np.array([va[s] - vb[s] for s in seeds])
                p = st.ttest_rel([va[s] for s in seeds], [vb[s] for s in seeds]).pvalue
                tests.append([fig, i, a, b, key, d, float(p)])
    # Holm over the whole family, adjusted p monotone in the step-down order
    order, m, running = np.argsort([t[6] for t in tests], kind="stable"), len(tests), 0.0
    for rank, j in enumerate(order):
        running = max(running, min(1.0, (m - rank) * tests[j][6]))
        tests[j].append(running)
    out = []
    for rows, claims, fig in sets:
        for i, (claim, panel, comps) in enumerate(claims):
            mine = [t for t in tests if t[0] == fig and t[1] == i]
            dirs = [int(np.sign(t[5].mean())) if t[7] < 0.05 else 0 for t in mine]
            v = 1 if all(x == 1 for x in dirs) else -1 if -1 in dirs else 0
            label = f"Fig. {fig}({panel[0]},{panel[1]})"
            out.append((PAGE, f"| {claim} | {label} | {VERDICT[v]} |"))
            if len(comps) <= 2:
                for _, _, a, b, key, d, _, ph in mine:
                    mean, lo, hi = _t_interval(d)
                    out.append((PAGE, f"{a} - {b} ({key}): "
                                      f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}] "
                                      f"(n={d.size}, Holm p={ph:.2g})"))
            if fig == 5:  # the summary line ends with the verdict and the paired cell
                out.append((SUMMARY, f"(Fashion-MNIST): {claim} |", VERDICT[v]))
    rows5 = sets[1][0]
    for curve in ds.FIG5_CURVES:
        cells = [_t_interval([float(r[k]) for r in rows5 if r["curve"] == curve])
                 for k in (ACC, LOSS)]
        n = sum(r["curve"] == curve for r in rows5)
        out.append((PAGE, f"| {ds.LABELS[curve]} | {n} | " + " | ".join(
            f"{m:.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in cells) + " |"))
    return out


def _missing(expected):
    text = {PAGE: PAGE.read_text(), SUMMARY: SUMMARY.read_text()}
    miss = []
    for e in expected:
        path, s = e[0], e[1]
        lines = [ln for ln in text[path].splitlines() if s in ln]
        if not lines or (len(e) > 2 and not any(f"| {e[2]} |" in ln for ln in lines)):
            miss.append(e[1:])
    return miss


def test_fig5_csv_is_the_declared_run():
    rows = _read(FIG5_CSV)
    assert {r["dataset"] for r in rows} == {"fashion_mnist"}
    assert {(r["variant"], r["mode"], r["epochs"]) for r in rows} == {("cpu", "strict", "100")}
    seeds = {int(s) for s in ds.FIG5_SEEDS.split(":")}
    for curve in ds.FIG5_CURVES:
        assert {int(r["seed"]) for r in rows if r["curve"] == curve} == seeds, curve
    assert all(r["prov_commit"] and r["prov_date"] for r in rows)


def test_page_numbers_recomputed_from_the_csvs():
    assert _missing(_expected(FIG3_CSV, FIG5_CSV)) == []


def test_a_mutated_csv_value_changes_a_printed_number(tmp_path):
    path = tmp_path / FIG5_CSV.name
    shutil.copy(FIG5_CSV, path)
    rows = _read(path)
    r = next(r for r in rows if r["curve"] == "ri4_s10" and r["seed"] == "0")
    r[ACC] = repr(float(r[ACC]) + 0.01)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert _missing(_expected(FIG3_CSV, path))


def test_a_data_folder_of_fig5_alone_gives_its_summary_rows(tmp_path):
    """``python -m experiments.reproduce dp_ogl --figure fig5 --data DIR``: DIR has no Fig. 3
    CSV; Fig. 5's claims are then decided on their own family (wrong implementation caught: a
    read of the missing Fig. 3 file, or claims marked "not run")."""
    shutil.copy(FIG5_CSV, tmp_path / FIG5_CSV.name)
    claims = {c.name: c for c in ds.PAPER.claims}
    rows = declare.rows(claims["fig5"], declare.Inputs(tmp_path))
    assert [r["claim"] for r in rows] == [c for c, _, _ in ds.FIG5_CLAIMS]
    assert all(r["verdict"] in VERDICT.values() for r in rows)
    assert declare.rows(claims["fig3"], declare.Inputs(tmp_path)) == []
