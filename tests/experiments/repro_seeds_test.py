"""Multi-seed report logic: learning rate chosen on validation, claims from per-seed rows."""

from experiments.reproduce import gossip, uldp
from jaxfl.repro import stats


def _row(method, lr, seed, val, test, eps=2.0):
    return {"method": method, "target_epsilon": eps, "learning_rate": lr, "seed": seed,
            "noise_multiplier": 3.0, "val_accuracy": val, "test_accuracy": test,
            "status": "ok"}


def test_fig3_learning_rate_is_chosen_on_validation_not_test():
    rows = []
    for s in range(3):
        rows.append(_row("gossip_ldp", 10.0, s, val=0.90, test=0.80 + 0.001 * s))
        rows.append(_row("gossip_ldp", 1.0, s, val=0.85, test=0.95))  # best test, worse val
    cell = gossip.select_fig3(rows)[("gossip_ldp", 2.0)]
    assert cell["lr"] == 10.0
    assert abs(cell["test"]["mean"] - 0.801) < 1e-12 and cell["test"]["n"] == 3


def test_fig3_comparable_claim():
    rows = [_row("fedavg", 1.0, s, 0.9, 0.90 + 0.001 * s) for s in range(3)]
    rows += [_row("gossip_ss_thm3_certified", 1.0, s, 0.9, 0.80 + 0.001 * s) for s in range(3)]
    rows += [_row("gossip_ldp", 1.0, s, 0.9, 0.70 + 0.001 * s) for s in range(3)]
    claims = {c["claim"].split(": ", 1)[1]: c["verdict"]
              for c in gossip.fig3_family({"": gossip.select_fig3(rows)})[""]}
    assert claims["gossip_ss_thm3_certified above LDP"] == stats.HOLDS
    assert claims["gossip_ss_thm3_certified comparable to DP-FedAvg (not below it by more "
                  "than 1 point)"] == stats.FAILS


def _urow(method, seed, final, mean, eps, status="ok"):
    return {"figure": "f", "dataset": "heart_disease", "num_users": 50, "distribution": "zipf",
            "method": method, "seed": seed, "rounds": 50, "local_epochs": 50,
            "metric": "test_accuracy", "final": final, "mean_over_rounds": mean,
            "eps_paper_recipe": eps, "eps_sound": eps, "status": status}


def _uldp_results(rows, tmp_path) -> tuple[dict, list[dict]]:
    """The panels and claims of ``rows`` written as one panel's per-seed CSV (one Holm
    family)."""
    from jaxfl.repro import runs as _runs

    _runs.write_rows(tmp_path / "uldp_fig6_heart_50_zipf_seeds.csv", rows, uldp.SEED_FIELDS)
    return uldp.seed_results(tmp_path)


def _uldp_claims(rows, tmp_path) -> list[dict]:
    return _uldp_results(rows, tmp_path)[1]


def test_uldp_claims_from_seed_rows(tmp_path):
    """The declared orderings decided paired (Holm) with the interval rule beside: NAIVE's
    final metric is above AVG's by 0.01 on every seed, so the paired test says
    "does not hold" where the intervals overlap."""
    rows = []
    for s, d in enumerate((0.0, 0.01, -0.01)):
        rows += [_urow("DEFAULT", s, 0.80 + d, 0.78, float("inf")),
                 _urow("ULDP-AVG", s, 0.70 + d, 0.60 + d, 7.077),
                 _urow("ULDP-AVG-w", s, 0.72 + d, 0.70 + d, 7.077),
                 _urow("ULDP-NAIVE", s, 0.71 + d, 0.60, 7.077),
                 _urow("ULDP-GROUP-2", s, 0.6, 0.6, 165.0 + s)]
    rows.append(_urow("ULDP-GROUP-2", 9, None, None, None, status="aborted: empty silo"))
    panels, claims = _uldp_results(rows, tmp_path)
    cells = panels["fig6_heart_50_zipf"][1]
    assert cells["ULDP-GROUP-2"]["aborted"] == [9] and cells["ULDP-GROUP-2"]["final"]["n"] == 3
    assert cells["ULDP-GROUP-2"]["missing"] == [] and cells["ULDP-AVG"]["final_s"][1] == 0.71
    claims = {c["claim"].split(" (")[0]: c for c in claims}
    v = {k: c["verdict"] for k, c in claims.items()}
    assert v["AVG-w converges faster than AVG"] == stats.HOLDS
    assert v["NAIVE has much lower utility than AVG"] == stats.FAILS
    assert claims["NAIVE has much lower utility than AVG"]["interval_verdict"] == stats.OVERLAP
    assert v["a gap to DEFAULT remains"] == stats.HOLDS
    assert v["GROUP needs epsilon of order 1e2 to 1e6"] == stats.HOLDS


def test_fig3_comparable_is_not_holds_when_fedavg_is_ahead():
    """Gossip "comparable to DP-FedAvg" with FedAvg ahead by 0.9 points on average and paired
    per seed (the committed eps=0.5 Thm-3 paper cell: +0.89 [+0.04, +1.74]). Wrong
    implementation caught: the old rule "holds when the mean gap is at most 1 point and the
    intervals overlap", which said holds here; non-inferiority with the 1-point margin says
    inconclusive."""
    fed = (0.880, 0.870, 0.878)
    gos = (0.872, 0.861, 0.868)  # FedAvg - gossip: 0.8, 0.9, 1.0 points
    rows = [_row("fedavg", 10.0, s, 0.9, v, eps=0.5) for s, v in enumerate(fed)]
    rows += [_row("gossip_ss_thm3_paper", 10.0, s, 0.9, v, eps=0.5) for s, v in enumerate(gos)]
    rows += [_row("gossip_ldp", 10.0, s, 0.9, 0.8, eps=0.5) for s in range(3)]
    claims = {c["claim"].split(": ", 1)[1]: c for c in
              gossip.fig3_family({"": gossip.select_fig3(rows)})[""]}
    c = claims["gossip_ss_thm3_paper comparable to DP-FedAvg (not below it by more than 1 point)"]
    assert c["verdict"] == stats.INCONCLUSIVE
    assert 0 < c["paired"]["lo"] and c["paired"]["hi"] > 0.01


def test_uldp_single_runs_are_reported_not_decided(tmp_path):
    """A panel run at one seed (``--scale cpu``) goes through the multi-seed claims: every
    utility ordering says "one seed", only the exact GROUP epsilon claim gets a verdict."""
    from jaxfl.repro import runs as _runs

    finals = {"DEFAULT": 0.8, "ULDP-NAIVE": 0.6, "ULDP-GROUP-2": 0.7, "ULDP-SGD": 0.65,
              "ULDP-AVG": 0.75, "ULDP-AVG-w": 0.77}
    rows = [_urow(m, 0, v, v - 0.05, 300.0 if "GROUP" in m else 5.0) for m, v in finals.items()]
    _runs.write_rows(tmp_path / "uldp_fig6_heart_50_zipf_seeds.csv", rows, uldp.SEED_FIELDS)
    panels, claims = uldp.seed_results(tmp_path)
    assert list(panels) == ["fig6_heart_50_zipf"]
    utility = [c for c in claims if c["paired"] != "-"]
    assert len(utility) == 4 and all(c["verdict"] == stats.ONE_SEED for c in utility)
    group = next(c for c in claims if c["claim"].startswith("GROUP"))
    assert group["verdict"] == stats.HOLDS and "60x" in group["detail"]


def _group_verdict(tmp_path, group_eps, avg_eps=7.077):
    rows = [r for s in range(3) for r in (_urow("ULDP-AVG", s, 0.7, 0.6, avg_eps),
                                         _urow("ULDP-GROUP-2", s, 0.6, 0.6, group_eps[s]))]
    claims = _uldp_claims(rows, tmp_path)
    return next(c["verdict"] for c in claims if c["claim"].startswith("GROUP needs"))


def test_uldp_group_order_rule(tmp_path):
    """The GROUP claim's stated rule: every GROUP epsilon's nearest power of ten lies in
    1e2..1e6 and it is at least 10x AVG's. Heart (6c)'s smallest GROUP epsilon 87.32 rounds to
    1e2 (the reference GROUP table itself has 87 there): holds; 31 (order 1e1.5, rounds to
    1e1) or 4e6 (rounds to 1e7) does not; 120 against an AVG epsilon of 20 (6x) is not far
    above. Wrong implementation caught: the old rule eps >= 100, which failed Heart (6c)."""
    assert _group_verdict(tmp_path, (87.32, 2953.0, 500.0)) == stats.HOLDS
    assert _group_verdict(tmp_path, (31.0, 200.0, 300.0)) == stats.FAILS
    assert _group_verdict(tmp_path, (200.0, 4e6, 300.0)) == stats.FAILS
    assert _group_verdict(tmp_path, (120.0, 200.0, 300.0), avg_eps=20.0) == stats.FAILS


def test_a_smaller_scale_is_refused_into_the_committed_data(tmp_path, monkeypatch):
    """A ULDP panel's committed CSV is the paper's setting (--scale full): a --scale cpu run
    into the committed data folder is refused before any config is built; into another
    folder it is not refused. Wrong implementation caught: one seed of the cpu variant
    written over the committed five-seed panel."""
    import pytest

    import experiments.reproduce  # noqa: F401  (registers the papers)
    from jaxfl.repro import declare
    from jaxfl.validate import JaxflValueError

    def built(*args):
        raise AssertionError("configs built")

    monkeypatch.setattr(uldp, "panel_configs", built)
    args = (uldp.PAPER, ["fig6_heart_50_zipf"], "cpu", tmp_path / "w")
    with pytest.raises(JaxflValueError, match="committed data is at scale 'full'"):
        declare.run_figures(*args, declare.DATA, tmp_path / "f")
    with pytest.raises(AssertionError, match="configs built"):
        declare.run_figures(*args, tmp_path / "data", tmp_path / "f")


def test_gossip_thm3_row_prints_the_audits_comparison(tmp_path, monkeypatch):
    """The Thm. 3 summary row reads its audit (docs/audit.json): the committed lower bound
    3.414 is above the paper's 1.910 (does not hold); edited to 1.5 the row prints "<=" and
    holds. Wrong implementation caught: the comparison typed into the template (">")."""
    import experiments.reproduce  # noqa: F401  (registers the papers)
    from jaxfl.repro import pages

    row = "| Gossip DP | Thm. 3:"
    before = next(r for r in pages.summary_page().splitlines() if r.startswith(row))
    assert "lower bound 3.414 > paper eps 1.910" in before and "| does not hold (" in before
    audit = tmp_path / "audit.json"
    audit.write_text(pages.AUDIT.read_text().replace('"epsilon_lb": 3.4137367397882454',
                                                     '"epsilon_lb": 1.5', 1))
    monkeypatch.setattr(pages, "AUDIT", audit)
    after = next(r for r in pages.summary_page().splitlines() if r.startswith(row))
    assert "lower bound 1.500 <= paper eps 1.910" in after and "| holds (" in after
