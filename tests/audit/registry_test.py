"""The audit registry (jaxfl.audit.registry) refuses an unknown row or scale before any audit
runs, and runs a row with its registry key and family confidence."""

import jax
import pytest

from jaxfl.audit import registry
from jaxfl.validate import JaxflValueError


@pytest.fixture
def probe(monkeypatch):
    """Two registered rows whose builders record their calls instead of auditing."""
    calls = []

    class Result:
        epsilon_lb, claimed = 0.5, {"strict": 1.0}

    def builder(scale, key, confidence):
        calls.append((scale, key, confidence))
        return Result()

    monkeypatch.setitem(registry.AUDITS, "probe_a", (builder, "bound"))
    monkeypatch.setitem(registry.FAMILIES, "probe_a", "probe family")
    monkeypatch.setitem(registry.AUDITS, "probe_b", (builder, "counterexample"))
    monkeypatch.setitem(registry.FAMILIES, "probe_b", "probe family")
    return calls


def test_run_refuses_unknown_names_and_scales_before_running(probe):
    with pytest.raises(JaxflValueError, match=r"unknown \['nope'\]"):
        registry.run(["probe_a", "nope"], "smoke")
    with pytest.raises(JaxflValueError, match="scale='tiny'"):
        registry.run(["probe_a"], "tiny")
    assert probe == []  # nothing ran


def test_run_keys_rows_by_registry_index_and_family_confidence(probe):
    lines = []
    out = registry.run(["probe_b"], "smoke", seed=3, progress=lines.append)
    assert [(kind, name) for _, kind, name in out] == [("counterexample", "probe_b")]
    scale, key, confidence = probe[0]
    index = list(registry.AUDITS).index("probe_b")
    assert scale == "smoke" and confidence == pytest.approx(1 - 0.05 / 2)
    assert (jax.random.key_data(key) == jax.random.key_data(
        jax.random.fold_in(jax.random.key(3), index))).all()
    assert len(lines) == 1 and lines[0].startswith("probe_b: eps_lb=0.5000 claimed={'strict': 1.0} (")


def test_summary_counts_the_rows_and_sorts_exceeded_claims_by_evidence():
    """The summary row of docs/audit.json: every row counted, a paper claim exceeded by an
    attack or a one-run audit listed apart from one exceeded by other evidence, and ``holds``
    false as soon as one lower bound is above its strict claim (wrong implementations caught:
    a semi-analytic row counted as an attack, the strict check reading the paper claim)."""
    def row(name, lb, strict, outcome="ok", **kw):
        return {"name": name, "epsilon_lb": lb, "claimed": {"strict": strict, "paper": 0.1},
                "outcome": outcome, **kw}

    audit = {r["name"]: r for r in (
        row("DP-FedAvg", 0.5, 1.0, selection="holdout"),
        row("DP-FedAvg one-run", 0.2, 1.0, canaries=10),
        row("ULDP-AVG one-run (users in 3 silos)", 0.3, 1.0, canaries=10),
        row("Thm. 4 (path): views", 2.0, 3.0, "paper claim exceeded", selection="holdout"),
        row("LightDP design", 1.5, 2.0, "paper claim exceeded", selection="fixed",
            trials_label="semi-analytic counts"))}
    s = registry.summary(audit)
    assert (s["audits"], s["n_exceeded"], s["exceeded"]) == (5, 1, "Thm. 4")
    assert (s["n_other"], s["other"], s["holds"]) == (1, "LightDP design, semi-analytic", True)
    audit["DP-FedAvg"]["epsilon_lb"] = 1.01
    assert registry.summary(audit)["holds"] is False
