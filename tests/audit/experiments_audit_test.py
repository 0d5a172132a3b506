"""The ``make audit`` driver writes the table and its JSON (smoke scale)."""

import json

from experiments import audit as audit_driver
from jaxfl.audit import evidence, registry


def test_driver_writes_table_and_json(tmp_path):
    out = tmp_path / "audit.md"
    rows = audit_driver.main(["--out", str(out), "--scale", "smoke", "--only", "dp_fedavg"])
    assert len(rows) == 1
    text = out.read_text()
    assert "| DP-FedAvg | add/remove one client |" in text
    assert "VIOLATION" not in text
    rec = json.loads(out.with_suffix(".json").read_text())[0]
    assert rec["epsilon_lb"] <= rec["claimed"]["strict"]
    assert rec["trials"] == 10_000 and rec["scale"] == "smoke" and rec["outcome"] == "holds"


def test_verdicts():
    class R:  # minimal stand-in for an AuditResult
        def __init__(self, lb, claimed):
            self.epsilon_lb, self.claimed = lb, claimed

    assert registry.verdict(R(1.0, {"strict": 2.0}), "bound") == "holds"
    assert registry.verdict(R(3.0, {"strict": 2.0}), "bound").startswith("VIOLATION")
    assert registry.verdict(R(1.5, {"strict": 2.0, "paper": 1.0}),
                                "counterexample") == "paper claim exceeded; strict holds"
    assert "not exceeded" in registry.verdict(R(0.5, {"strict": 2.0, "paper": 1.0}),
                                                  "counterexample")


def test_driver_one_run_row(tmp_path, monkeypatch):
    from jaxfl.audit import one_run_fl

    real = one_run_fl.audit_dp_fedavg_one_run

    def small(**kw):  # the smoke row at test size
        return real(**dict(kw, canaries=100, dim=128, rounds=2))

    monkeypatch.setattr(one_run_fl, "audit_dp_fedavg_one_run", small)
    out = tmp_path / "audit.md"
    rows = audit_driver.main(["--out", str(out), "--scale", "smoke", "--only",
                              "dp_fedavg_one_run"])
    assert len(rows) == 1 and "1 run, 100 canaries" in out.read_text()
    rec = json.loads(out.with_suffix(".json").read_text())[0]
    assert rec["method"] == "one_run" and rec["epsilon_lb"] <= rec["claimed"]["strict"]
    assert rec["outcome"] == "holds" and rec["guesses"] == 10


def test_committed_audit_page_is_its_json_rendered():
    """docs/audit.md is written from docs/audit.json (``--from-json``): a hand-edited number in
    either file fails here."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    recs = json.loads((root / "docs" / "audit.json").read_text())
    assert audit_driver.render(recs) == (root / "docs" / "audit.md").read_text()
    edited = [dict(r, epsilon_lb=r["epsilon_lb"] + 0.01) if i == 0 else r
              for i, r in enumerate(recs)]
    assert audit_driver.render(edited) != audit_driver.render(recs)


def test_merge_replaces_only_its_rows_and_families_have_their_own_confidence():
    main = [n for n, f in registry.FAMILIES.items() if f == registry.MAIN]
    attacks = [n for n, f in registry.FAMILIES.items() if f == registry.ATTACKS]
    assert len(attacks) == 3 and registry.confidence_of(main[0]) == 1 - 0.05 / len(main)
    assert registry.confidence_of(attacks[0]) == 1 - 0.05 / 3
    old = [{"audit": n, "epsilon_lb": float(i)} for i, n in enumerate(main)]
    new = [{"audit": attacks[0], "epsilon_lb": 9.0}, {"audit": main[1], "epsilon_lb": -1.0}]
    out = registry.merged(old, new)
    assert [r["audit"] for r in out] == main + attacks[:1]
    assert [r["epsilon_lb"] for r in out] == [0.0, -1.0] + [float(i) for i in
                                                             range(2, len(main))] + [9.0]


def test_every_committed_row_names_its_evidence():
    """docs/audit.json's rows by evidence: the LightDP delta = 1e-2 row is semi-analytic (counts
    at the design's rates), the gossip Thm. 4 row parametric (a bound on the LLR's mu under the
    Gaussian premise), the one-run rows one-run attacks, the rest Clopper-Pearson attacks on
    sampled views; the summary counts only attacks as attacks. Wrong implementation caught: a
    label read from the row's kind or family (every counterexample an attack), as the summary
    did ("Clopper-Pearson unless the row says otherwise")."""
    from pathlib import Path

    import experiments.reproduce  # noqa: F401  (registers the papers)
    from jaxfl.repro import pages

    rows = json.loads((Path(__file__).resolve().parents[2] / "docs/audit.json").read_text())
    kinds = {r["audit"]: evidence.evidence(r) for r in rows}
    assert kinds.pop("lightdp_delta_1e-2_counterexample") == evidence.SEMI_ANALYTIC
    assert kinds.pop("gossip_thm4_counterexample") == evidence.PARAMETRIC
    assert {kinds.pop(k) for k in ("dp_fedavg_one_run", "uldp_avg_one_run")} == {evidence.ONE_RUN}
    assert set(kinds.values()) == {evidence.ATTACK}
    row = next(r for r in pages.summary_page().splitlines() if r.startswith("| all |"))
    # 8 + the private-selection row + issue 39's sqrt(s) cut and UserLDP at FEMNIST (its
    # LocalItemDP row has no subject-level paper claim)
    assert "11 paper claims exceeded by an attack" in row
    assert "2 exceeded only by a bound that is no attack" in row
