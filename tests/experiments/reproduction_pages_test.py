"""The reproduction pages say exactly what the committed result files say
(experiments/reproduce/pages.py): regenerated in memory, they must equal the committed pages,
so a hand-edited number or verdict fails here."""

import difflib

import pytest

from experiments.reproduce import pages


@pytest.fixture(scope="module")
def rendered():
    return pages.render()


def test_committed_pages_equal_their_regeneration(rendered):
    stale = []
    for path, text in rendered.items():
        committed = (pages.ROOT / path).read_text()
        if committed != text:
            diff = difflib.unified_diff(committed.splitlines(), text.splitlines(), path,
                                        "regenerated", n=0, lineterm="")
            stale.append("\n".join(list(diff)[:12]))
    assert not stale, ("pages differ from `python -m experiments.reproduce.pages` (rerun it; "
                       "do not edit them by hand):\n" + "\n".join(stale))


def test_exact_numbers_are_the_ones_on_their_pages():
    assert pages.unprinted_numbers() == []


@pytest.mark.parametrize("old,new", [("4.715", "4.730"),  # the audit.json number issue 26 found
                                     ("| holds: plus_ri4_s2", "| does not hold: plus_ri4_s2")])
def test_a_hand_edit_is_caught(rendered, old, new):
    """The comparison can fail: a committed summary with one number or one verdict edited."""
    assert old in rendered[pages.SUMMARY]
    edited = {p: t.replace(old, new, 1) if p == pages.SUMMARY else t
              for p, t in rendered.items()}
    assert pages.stale(rendered, edited.__getitem__) == [pages.SUMMARY]
    assert pages.stale(rendered, rendered.__getitem__) == []


def test_summary_verdicts_come_from_the_rules():
    text = pages.summary_page()
    rows = [r for r in text.splitlines() if r.startswith("| DP-OGL | Fig. 3(e,f)")]
    s2_s4 = next(r for r in rows if "S=2 beats S=4" in r)
    assert "| inconclusive at this scale (intervals overlap) | holds:" in s2_s4
    s10 = next(r for r in rows if "S=10 converges better" in r)
    assert "| does not hold: " in s10  # paired: LB's half fails
    table = [r.split(" | ") for r in text.splitlines() if r.startswith("| ") and
             r.count(" | ") >= 7]
    one_seed = [" | ".join(r) for r in table if "one seed" in r[4]]
    assert one_seed and all(pages.ONE_SEED in r for r in one_seed)
    light = _lightdp_rows(text)
    assert light["Table II: accuracy increases with ε"].split(" | ")[5] == pages.ONE_SEED


def test_splice_replaces_only_the_block():
    text = "a\n<!-- BEGIN GENERATED: x -->\nold\n<!-- END GENERATED: x -->\nb\n"
    assert pages.splice(text, "x", "new") == (
        "a\n<!-- BEGIN GENERATED: x -->\nnew\n<!-- END GENERATED: x -->\nb\n")


def _lightdp_rows(text):
    return {r.split(" | ")[1]: r for r in text.splitlines() if r.startswith("| LightDP-FL |")}


@pytest.mark.parametrize("ldp,verdict", [(0.0, "holds"), (1.0, "does not hold")])
def test_lightdp_fig3_verdicts_come_from_the_per_seed_csv(tmp_path, monkeypatch, ldp, verdict):
    """The LightDP Fig. 3 rows are decided on lightdp_seeds.csv by the interval rule: setting
    every LDP accuracy in the CSV to 0 (to 1) turns the verdict and the paired verdict into
    "holds" ("does not hold"), and the report block changes with it."""
    import csv
    import shutil

    from experiments.reproduce import lightdp_report

    data = tmp_path / "data"
    shutil.copytree(pages.DATA, data)
    path = data / lightdp_report.SEEDS_CSV
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if r["name"].startswith("fig3_") and r["name"].endswith("_ldp"):
            r["final_test_accuracy"] = ldp
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=lightdp_report.FIELDS)
        w.writeheader()
        w.writerows(rows)
    before = _lightdp_rows(pages.summary_page())
    monkeypatch.setattr(pages, "DATA", data)
    after = _lightdp_rows(pages.summary_page())
    claim = "Fig. 3: LightDP-FL beats vanilla LDP at every ε"
    assert after[claim].split(" | ")[5] == verdict
    assert after[claim].split(" | ")[6].startswith(verdict + ":")  # the paired verdict
    assert before[claim] != after[claim]
    doc = (pages.ROOT / "docs/reproduction/lightdp.md").read_text()
    assert pages.lightdp_page(doc) != doc


def _edited_copy(tmp_path, name: str, old: str, new: str):
    """A copy of the committed data folder with the first ``old`` of the file ``name`` replaced
    by ``new``."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(pages.DATA, data)
    text = (data / name).read_text()
    assert old in text
    (data / name).write_text(text.replace(old, new, 1))
    return data


def test_dp_ftrl_page_follows_its_per_seed_csv(tmp_path, monkeypatch):
    """One seed's accuracy in dp_ftrl_compare.csv changed: the regenerated page differs from
    the committed one (its mean and interval move)."""
    page = "docs/reproduction/dp_ftrl.md"
    committed = (pages.ROOT / page).read_text()
    assert pages.dp_ftrl_page() == committed
    data = _edited_copy(tmp_path, "dp_ftrl_compare.csv", ",0.8892999887466431,",
                        ",0.8992999887466431,")
    monkeypatch.setattr(pages, "DATA", data)
    edited = pages.dp_ftrl_page()
    assert edited != committed
    assert "| DP-FedAvg (Poisson) | 2 | off | 0.8908 |" in edited


def test_subject_dp_page_follows_its_data(tmp_path, monkeypatch):
    """HiGradAvgDP's strict epsilon (section 1) changed in subject_dp.json: the regenerated page
    differs from the committed one exactly there."""
    page = "docs/reproduction/subject_dp.md"
    committed = (pages.ROOT / page).read_text()
    assert pages.subject_dp_page() == committed
    assert "| 152.9 (subject, rdp) |" in committed
    data = _edited_copy(tmp_path, "subject_dp.json", "152.936", "162.936")
    monkeypatch.setattr(pages, "DATA", data)
    edited = pages.subject_dp_page()
    assert edited == committed.replace("| 152.9 (subject, rdp) |", "| 162.9 (subject, rdp) |")


def test_every_reproduction_page_is_regenerated(rendered):
    """docs/reproduction.md and every page under docs/reproduction/ are written by
    :func:`pages.render` (a new page must get a regeneration path to be committed)."""
    pages_on_disk = {pages.SUMMARY} | {
        p.relative_to(pages.ROOT).as_posix()
        for p in (pages.ROOT / "docs" / "reproduction").glob("*.md")}
    assert pages_on_disk == set(rendered)
