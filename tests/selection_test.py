"""Private hyperparameter selection (:mod:`jaxfl.selection`, issue 40)."""

import json
import math
import types

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from jaxfl import selection, sweep, validate
from jaxfl.accounting import accountants, events, recipes, report
from tests import _sweep_toy as toy

DELTA = 1e-5
LAWS = [("poisson", None), ("geometric", None), ("logarithmic", None),
        ("negative_binomial", 0.5), ("negative_binomial", 3.0)]
RUN = events.dp_sgd(noise_multiplier=1.0, sampling_rate=0.01, steps=1000)


# ----------------------------------------------------------------------------- accounting

@pytest.mark.parametrize("family,shape", LAWS)
@pytest.mark.parametrize("mean", [1.0, 3.0, 40.0])
def test_procedure_epsilon_equals_dp_accountings_rdp_accountant(family, shape, mean):
    eta = {"poisson": math.inf, "geometric": 1.0, "logarithmic": 0.0}.get(family, shape)
    acc = rdp_lib.RdpAccountant(neighboring_relation=accountants.RELATION)
    acc.compose(dpe.RepeatAndSelectDpEvent(RUN, mean, eta))
    ours = selection.procedure_epsilon(RUN, DELTA, family, mean, shape)
    np.testing.assert_allclose(ours, acc.get_epsilon(DELTA), rtol=1e-12)
    assert selection.repeat_and_select(RUN, family, mean, shape) == dpe.RepeatAndSelectDpEvent(
        RUN, mean, eta)


def test_geometric_bound_equals_papernot_steinke_theorem_2_by_hand():
    """An independent evaluation of Theorem 2 (truncated negative binomial, eta = 1: gamma =
    1 / mean) on the single run's RDP curve, converted with the library's RDP -> DP rule."""
    orders = np.asarray(recipes.DEFAULT_ORDERS)
    rdp = accountants.rdp_curve(RUN)
    mean, eta = 10.0, 1.0
    gamma = 1.0 / mean
    lam_hat = orders  # the free order of the theorem: the best over the grid
    extra = (1 + eta) * np.min((1 - 1 / lam_hat) * rdp + np.log(1 / gamma) / lam_hat)
    bound = rdp + extra + math.log(mean) / (orders - 1)
    bound = np.minimum.accumulate(bound[::-1])[::-1]  # RDP is monotone in the order
    expected = recipes.epsilon_from_rdp(recipes.DEFAULT_ORDERS, bound, DELTA, "improved")[0]
    np.testing.assert_allclose(selection.procedure_epsilon(RUN, DELTA, "geometric", mean),
                               expected, rtol=1e-12)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(law=st.sampled_from(LAWS), mean=st.floats(1.0, 200.0),
       factor=st.floats(1.01, 10.0), sigma=st.floats(0.6, 5.0),
       q=st.floats(0.001, 1.0), steps=st.integers(1, 2000))
def test_never_below_one_run_and_monotone_in_the_mean(law, mean, factor, sigma, q, steps):
    family, shape = law
    run = events.dp_sgd(noise_multiplier=sigma, sampling_rate=q, steps=steps)
    one = accountants.epsilon(run, DELTA, accountant="rdp")
    low = selection.procedure_epsilon(run, DELTA, family, mean, shape)
    high = selection.procedure_epsilon(run, DELTA, family, mean * factor, shape)
    assert one <= low * (1 + 1e-12)
    assert low <= high * (1 + 1e-12)


def test_gamma_matches_dp_accounting_on_the_accounted_side():
    for shape in (0.0, 0.5, 1.0, 3.0):
        for mean in (1.5, 10.0, 1000.0):
            ours = selection.tnb_gamma(mean, shape)
            theirs = rdp_lib._gamma_truncated_negative_binomial(shape, mean)
            np.testing.assert_allclose(ours, theirs, rtol=1e-8)
            assert ours >= theirs  # accountant's gamma is smaller: its bound only loosens
            ks = np.arange(1, 200_000)
            drawn_mean = float(np.sum(ks * selection.pmf("negative_binomial", mean, ks, shape)
                                      )) if shape not in (0.0, 1.0) else float(np.sum(
                ks * selection.pmf("geometric" if shape else "logarithmic", mean, ks)))
            assert drawn_mean <= mean * (1 + 1e-9)
            np.testing.assert_allclose(drawn_mean, mean, rtol=1e-6)


# ----------------------------------------------------------------------------- the law of K

ALPHA = 1e-3  # significance level of each chi-square test (fixed seeds: deterministic)


@pytest.mark.parametrize("family,shape", LAWS)
def test_drawn_number_of_runs_has_the_declared_law(family, shape):
    mean, n = 6.0, 40_000
    rng = np.random.default_rng(1234)
    k = selection.draw_runs(family, mean, rng, size=n, shape=shape)
    support = np.arange(0 if family == "poisson" else 1, 5000)
    p = selection.pmf(family, mean, support, shape)
    np.testing.assert_allclose(p.sum(), 1.0, atol=1e-9)
    assert (k >= support[0]).all()
    # bins with >= 5 expected draws; the tail pooled into the last bin
    keep = np.nonzero(p * n >= 5)[0]
    last = keep[-1]
    observed = np.array([np.sum(k == support[i]) for i in keep[:-1]] +
                        [np.sum(k >= support[last])], np.float64)
    expected = np.concatenate([p[keep[:-1]], [1.0 - p[keep[:-1]].sum()]]) * n
    _, pvalue = stats.chisquare(observed, expected)
    assert pvalue > ALPHA, (family, pvalue)
    # and the declared mean, within 4 standard errors (a two-sided z-test at about 6e-5)
    assert abs(k.mean() - mean) < 4 * k.std() / math.sqrt(n), (family, k.mean())


def test_draw_is_a_function_of_the_seed_and_respects_the_weights():
    sel = selection.Selection("poisson", 30.0, "acc", seed=7, score_data="public",
                              weights=(1.0, 0.0, 3.0))
    a, b = selection.draw(sel, 3), selection.draw(sel, 3)
    assert a == b and a.num_runs == len(a.candidates) == len(a.seeds) > 0
    assert len(set(a.seeds)) == a.num_runs and 1 not in a.candidates
    other = selection.draw(selection.Selection("poisson", 30.0, "acc", seed=8,
                                               score_data="public"), 3)
    assert other != a
    with pytest.raises(validate.ShapeError, match="one weight per sweep point"):
        selection.draw(sel, 4)


def test_bad_selections_are_refused_before_any_work():
    with pytest.raises(validate.JaxflValueError, match="family"):
        selection.Selection("binomial", 3.0, "acc", score_data="public")
    with pytest.raises(validate.JaxflValueError, match="mean"):
        selection.Selection("geometric", 0.5, "acc", score_data="public")
    with pytest.raises(validate.JaxflValueError, match="shape"):
        selection.Selection("negative_binomial", 3.0, "acc", score_data="public")
    with pytest.raises(validate.JaxflValueError, match="shape"):
        selection.Selection("geometric", 3.0, "acc", shape=0.5, score_data="public")
    with pytest.raises(validate.PrivacyParameterError, match="score_noise_multiplier"):
        selection.Selection("geometric", 3.0, "acc", score_sensitivity=0.1)
    with pytest.raises(validate.JaxflValueError, match="score_sensitivity=None"):
        selection.Selection("geometric", 3.0, "acc", score_data="public", score_sensitivity=1.0)


# ----------------------------------------------------------------------------- refusals

def _spec(acc, rounds=3, delta=DELTA):
    return types.SimpleNamespace(algorithm=types.SimpleNamespace(accountant=acc),
                                 delta=delta, eval_fn=lambda p: {}, rounds=rounds)


PUBLIC = selection.Selection("geometric", 4.0, "acc", score_data="public")


def test_refuses_runs_whose_event_it_cannot_back():
    step = events.poisson_gaussian(sampling_rate=0.1, noise_multiplier=1.0)
    ok = report.EventAccountant.repeating(step)
    assert selection.run_privacy([_spec(ok)], PUBLIC).event == events.repeated(step, 3)
    mog = events.mixture_of_gaussians(noise_multiplier=1.0, sensitivities=[0.0, 1.0],
                                      sampling_probs=[0.5, 0.5])
    with pytest.raises(validate.JaxflValueError, match="RDP accountant does not support"):
        selection.run_privacy([_spec(report.EventAccountant.repeating(mog))], PUBLIC)
    paper = report.EventAccountant.repeating(step, mode="paper", sound=False)
    with pytest.raises(validate.JaxflValueError, match="mode 'paper'"):
        selection.run_privacy([_spec(paper)], PUBLIC)
    curve = report.CurveAccountant(lambda r, d: np.ones(len(r)), unit="client", name="pwp")
    with pytest.raises(validate.JaxflValueError, match="has no DpEvent"):
        selection.run_privacy([_spec(curve)], PUBLIC)
    # a curve accountant whose headline exceeds its event's RDP epsilon: the event is partial
    partial = report.CurveAccountant(lambda r, d: np.full(len(r), 1e3), unit="client",
                                     name="x", event_fn=lambda r: events.repeated(step, r))
    with pytest.raises(validate.JaxflValueError, match="does not describe the whole"):
        selection.run_privacy([_spec(partial)], PUBLIC)
    with pytest.raises(validate.JaxflValueError, match="not private"):
        selection.run_privacy([_spec(report.NonPrivateAccountant())], PUBLIC)
    with pytest.raises(validate.JaxflValueError, match="one delta"):
        selection.run_privacy([_spec(ok), _spec(ok, delta=1e-6)], PUBLIC)


def test_per_run_event_dominates_the_grid_or_is_refused():
    noisy = report.EventAccountant.repeating(events.poisson_gaussian(sampling_rate=0.1,
                                                                     noise_multiplier=2.0))
    loud = report.EventAccountant.repeating(events.poisson_gaussian(sampling_rate=0.1,
                                                                    noise_multiplier=1.0))
    got = selection.run_privacy([_spec(noisy), _spec(loud)], PUBLIC)
    assert got.grid_index == 1  # the smaller noise multiplier dominates
    # a plain Gaussian vs a rarely sampled one at less noise: the curves cross
    a = report.EventAccountant.repeating(events.gaussian(3.0))
    b = report.EventAccountant.repeating(events.poisson_gaussian(sampling_rate=0.01,
                                                                 noise_multiplier=1.0))
    with pytest.raises(validate.JaxflValueError, match="dominates"):
        selection.run_privacy([_spec(a, rounds=1), _spec(b, rounds=1)], PUBLIC)
    # a private score: the score's Gaussian release joins the run's event
    sel = selection.Selection("geometric", 4.0, "acc", score_sensitivity=0.1,
                              score_noise_multiplier=3.0)
    got = selection.run_privacy([_spec(noisy)], sel)
    assert got.event == events.composed([noisy.dp_event(3), events.gaussian(3.0)])
    np.testing.assert_allclose(got.epsilon, accountants.epsilon(got.event, DELTA,
                                                                accountant="rdp"), rtol=1e-12)


def test_best_ignores_non_finite_scores():
    assert selection.best([0.1, float("nan"), 0.3, 0.3]) == 2
    assert selection.best([0.1, float("inf"), 0.3], maximize=False) == 0
    assert selection.best([]) is None


# ----------------------------------------------------------------------------- end to end

GRID = [dict(client_lr=0.1), dict(client_lr=0.3), dict(clip_norm=0.2)]


def test_selection_runs_the_drawn_candidates_as_one_sweep_and_reports_the_procedure(tmp_path):
    from experiments import sweep as cli

    cfg = tmp_path / "toy_config.py"
    cfg.write_text(
        "from tests import _sweep_toy as toy\n"
        "def get_config(arg=None):\n"
        "    return toy.ToyConfig(rounds=2)\n"
        f"def get_sweep():\n    return {GRID!r}\n")
    argv = ["--config", str(cfg), "--workdir", str(tmp_path / "w"), "--select", "geometric",
            "--select-mean", "3", "--select-score", "test_accuracy", "--select-seed", "1",
            "--score-sensitivity", "0.025", "--score-noise-multiplier", "2"]
    res = cli.main(argv)
    got = res.selection
    sel = selection.Selection("geometric", 3.0, "test_accuracy", seed=1,
                              score_sensitivity=0.025, score_noise_multiplier=2.0)
    assert got.selection == sel
    plan = selection.draw(sel, len(GRID))
    assert got.num_runs == plan.num_runs > 1 and got.candidates == plan.candidates
    assert res.groups == [list(range(got.num_runs))]  # the K runs: one vmapped batch
    # the procedure's epsilon: RepeatAndSelect of (training + the score's Gaussian release)
    spec = toy.build(sweep.expand(toy.ToyConfig(rounds=2),
                                  GRID)[0].config)
    run_event = events.composed([spec.algorithm.accountant.dp_event(2), events.gaussian(2.0)])
    acc = rdp_lib.RdpAccountant(neighboring_relation=accountants.RELATION)
    acc.compose(dpe.RepeatAndSelectDpEvent(run_event, 3.0, 1.0))
    np.testing.assert_allclose(got.epsilon, acc.get_epsilon(DELTA), rtol=1e-12)
    assert got.epsilon > got.run_epsilon > max(got.point_epsilons) > 0
    # the released score: the selected run's final metric plus its recorded noise
    summaries = [json.loads((tmp_path / "w" / "points" / p.id / "summary.json").read_text())
                 for p in got.points]
    raw = np.array([s["final"]["test_accuracy"] for s in summaries])
    np.testing.assert_allclose(got.scores, raw + 0.05 * np.asarray(plan.score_noise),
                               rtol=1e-12)
    assert got.selected == int(np.argmax(got.scores))
    assert got.selected_point.overrides == {**GRID[plan.candidates[got.selected]],
                                            "seed": plan.seeds[got.selected]}
    record = json.loads((tmp_path / "w" / "selection.json").read_text())
    assert record["epsilon"] == got.epsilon and record["num_runs"] == got.num_runs
    assert record["key"]["seed"] == 1 and "scores" not in record  # others' scores withheld
    # rerunning resumes: nothing retrained, the same selection
    again = sweep.run_sweep(sweep.expand(toy.ToyConfig(rounds=2), GRID),
                            toy.build, tmp_path / "w", selection=sel, progress=False)
    assert again.ran == [] and again.selection.selected == got.selected
    assert again.selection.epsilon == got.epsilon and "covers the selected run" in again.note


def test_a_sweep_without_selection_says_choosing_costs_more(tmp_path):
    points = sweep.expand(toy.ToyConfig(rounds=1, algorithm="fedavg"), [dict(seed=0)])
    res = sweep.run_sweep(points, toy.build, tmp_path / "a", progress=False)
    assert "costs more" in res.note and res.selection is None
    res = sweep.run_sweep(points, toy.build, tmp_path / "a", progress=False, public_split=True)
    assert "public" in res.note and "costs more" not in res.note
    with pytest.raises(validate.JaxflValueError, match="either selection"):
        sweep.run_sweep(points, toy.build, tmp_path / "a", public_split=True,
                        selection=PUBLIC)


def test_best_of_masks_padded_runs():
    scores = np.array([[0.5, 0.9, 0.1], [float("nan"), 0.2, 3.0], [1.0, 2.0, 3.0],
                       [float("nan"), float("nan"), 9.0]])
    valid = np.array([[True, True, False], [True, True, False], [False, False, False],
                      [True, False, False]])
    assert selection.best_of(scores, valid).tolist() == [1, 1, -1, 0]
    assert selection.best_of(scores, valid, maximize=False).tolist() == [0, 1, -1, 0]


# ----------------------------------------------------------------------------- the audit row

def test_audit_best_of_k_exceeds_one_run_and_stays_under_the_procedure_bound():
    """Monte-Carlo on the Gaussian mechanism (the audit table's row at 1/5 of its trials): the
    empirical loss of releasing the best of K ~ geometric(8) runs is above one run's exact
    epsilon (the naive report) and below the RepeatAndSelect bound."""
    from jaxfl.audit import selection as audit_selection

    r = audit_selection.audit_private_selection(noise_multiplier=1.0, family="geometric",
                                                mean=8.0, trials=200_000, delta=1e-3, seed=0)
    assert r.claimed["paper"] < r.epsilon_lb < r.claimed["strict"], (r.epsilon_lb, r.claimed)
    np.testing.assert_allclose(r.claimed["strict"], selection.procedure_epsilon(
        events.gaussian(1.0), 1e-3, "geometric", 8.0), rtol=1e-12)


def test_audit_driver_row(tmp_path):
    from experiments import audit as audit_driver
    from jaxfl.audit import registry

    out = tmp_path / "audit.md"
    rows = audit_driver.main(["--out", str(out), "--scale", "smoke", "--only",
                              "private_selection_counterexample"])
    rec = json.loads(out.with_suffix(".json").read_text())[0]
    assert len(rows) == 1 and rec["epsilon_lb"] <= rec["claimed"]["strict"]
    assert rec["family"] == registry.SELECTION and "VIOLATION" not in out.read_text()


def test_runs_do_not_depend_on_the_number_of_runs():
    """Selections with one seed share their first runs (a second mean in the same workdir
    retrains none of them)."""
    plans = [selection.draw(selection.Selection(fam, mean, "acc", seed=3, score_data="public",
                                                shape=sh), 5)
             for fam, sh in LAWS for mean in (2.0, 9.0, 30.0)]
    longest = max(plans, key=lambda p: p.num_runs)
    assert longest.num_runs > 10
    for p in plans:
        m = p.num_runs
        assert p.candidates == longest.candidates[:m] and p.seeds == longest.seeds[:m]
        assert p.score_noise == longest.score_noise[:m]


def test_cli_refuses_bad_selection_options_before_any_work(tmp_path, capsys):
    from experiments import sweep as cli

    base = ["--config", "nonexistent.py", "--workdir", str(tmp_path / "w")]
    for extra, message in (
            (["--select-mean", "3"], "need --select FAMILY"),
            (["--select", "geometric", "--select-score", "acc"], "--select-mean"),
            (["--select", "geometric", "--select-mean", "3", "--select-score", "acc"],
             "score computed on private data"),
            (["--select", "geometric", "--select-mean", "3", "--select-score", "acc",
              "--score-public", "--score-sensitivity", "0.1"], "for a public score")):
        with pytest.raises(SystemExit):
            cli.main(base + extra)
        assert message in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_a_poisson_draw_of_no_run_releases_nothing(tmp_path):
    seed = next(s for s in range(100) if selection.draw(selection.Selection(
        "poisson", 1.0, "test_accuracy", seed=s, score_data="public"), 3).num_runs == 0)
    sel = selection.Selection("poisson", 1.0, "test_accuracy", seed=seed, score_data="public")
    points = sweep.expand(toy.ToyConfig(rounds=1), GRID)
    res = sweep.run_sweep(points, toy.build, tmp_path / "w", selection=sel, progress=False)
    assert res.selection.num_runs == 0 and res.selection.selected is None
    assert res.ran == [] and "nothing is released" in res.note
    record = json.loads((tmp_path / "w" / "selection.json").read_text())
    assert record["selected"] is None and record["epsilon"] == res.selection.epsilon > 0


@pytest.mark.slow
def test_an_interrupted_selection_chooses_only_when_resumed(tmp_path):
    sel = selection.Selection("geometric", 3.0, "test_accuracy", seed=1, score_data="public")
    points = sweep.expand(toy.ToyConfig(rounds=2, checkpoint_every=1), GRID)
    first = sweep.run_sweep(points, toy.build, tmp_path / "w", selection=sel, stop_after=1,
                            progress=False)
    assert first.stopped and first.selection.selected is None and "interrupted" in first.note
    assert not (tmp_path / "w" / "selection.json").exists()
    done = sweep.run_sweep(points, toy.build, tmp_path / "w", selection=sel, progress=False)
    assert not done.stopped and done.selection.selected == selection.best(done.selection.scores)
    assert (tmp_path / "w" / "selection.json").exists()
