"""The Markdown templates of the ULDP-FL and DP-FTRL pages (experiments/reproduce/templates/
uldp.md, dp_ftrl.md): every block is read by its driver (no dead wording), and a single-run
(``--scale``) page of uldp fills the blocks that the committed page does not use."""

import json
from pathlib import Path

import pytest

from experiments.reproduce import _common, dp_ftrl, uldp

DATA = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "data"


@pytest.fixture
def used(monkeypatch):
    """The (page, block) pairs that the drivers read while the test runs."""
    seen = set()
    read = _common.prose

    def recording(page, block, **fields):
        seen.add((page, block))
        return read(page, block, **fields)

    monkeypatch.setattr(_common, "prose", recording)
    return seen


def _run(final, metric="test_accuracy", dataset="heart_disease"):
    return {"metric": metric, "curve": [final - 0.1, final], "final": final,
            "privacy": {"paper": 1.158, "sound": 1.06}, "seconds": 3.0, "dataset": dataset,
            "rounds": 2, "local_epochs": 1}


def _single_runs():
    heart = {m: _run(v) for m, v in (("DEFAULT", 0.8), ("ULDP-NAIVE", 0.5), ("ULDP-SGD", 0.6),
                                      ("ULDP-AVG", 0.7), ("ULDP-AVG-w", 0.72))}
    heart["ULDP-GROUP-2"] = {"aborted": "a silo is left empty", "dataset": "heart_disease"}
    mnist = {m: _run(0.11, dataset="mnist") for m in ("ULDP-SGD", "ULDP-AVG")}
    return {"fig6_heart": heart, "fig5_mnist": mnist}


def test_every_uldp_block_is_used(used):
    uldp.from_data(DATA)  # the committed page: privacy tables, multi-seed sections, benchmark
    panels = _single_runs()
    claims = uldp.check_claims(panels)
    privacy = json.loads((DATA / "uldp_privacy_tables.json").read_text())
    text = uldp.report(privacy, panels, claims, ["fig6_heart.png"], "smoke", 90.0)
    assert {b for p, b in used if p == "uldp"} == set(_common._blocks("uldp"))
    assert "`python -m experiments.reproduce.uldp --scale smoke` (1.5 min)" in text
    assert "| ULDP-GROUP-2 | aborted: a silo is left empty | | | | |" in text
    near = next(c for c in claims if c["figure"] == "fig5_mnist")
    assert near["claim"].startswith("(all private runs within 0.05 of chance")
    assert f"| fig5_mnist | {near['claim']} | n/a | best private 0.1100 |" in text
    assert "Not rerun here" not in text and "Figures: `docs/figures/uldp/fig6_heart.png`" in text


def test_every_dp_ftrl_block_is_used(used):
    meta = json.loads((DATA / "dp_ftrl_compare.json").read_text())
    rows = dp_ftrl.read(DATA / "dp_ftrl_compare.csv")
    dp_ftrl.from_data(DATA / "dp_ftrl_compare.csv")
    partial = dp_ftrl.render(meta["scale"], rows[:4], dp_ftrl.summarize(rows[:4]),
                             planned=meta["planned"])
    assert {b for p, b in used if p == "dp_ftrl"} == set(_common._blocks("dp_ftrl"))
    assert f"**Partial: 4 of {len(meta['planned'])} runs finished**" in partial
    assert "| DP-FTRL tree | 8 | on | not run yet | | 0 | | |" in partial
