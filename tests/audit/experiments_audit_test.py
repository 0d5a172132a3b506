"""The ``make audit`` driver writes the table and its JSON (smoke scale)."""

import json

from experiments import audit as audit_driver


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

    assert audit_driver.verdict(R(1.0, {"strict": 2.0}), "bound") == "holds"
    assert audit_driver.verdict(R(3.0, {"strict": 2.0}), "bound").startswith("VIOLATION")
    assert audit_driver.verdict(R(1.5, {"strict": 2.0, "paper": 1.0}),
                                "counterexample") == "paper claim exceeded; strict holds"
    assert "not exceeded" in audit_driver.verdict(R(0.5, {"strict": 2.0, "paper": 1.0}),
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
