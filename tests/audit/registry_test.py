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
