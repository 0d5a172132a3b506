"""Comments, docstrings, docs and notebooks cite the papers (author/year, section, equation,
figure), never sections of the implementation specs, which the repository does not ship."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("jaxfl", "experiments", "tests", "docs", "notebooks")
SUFFIXES = (".py", ".md", ".ipynb", ".txt", ".cfg", ".toml")
# "spec §5.2", "spec Sec. 3.10", "ULDP-FL spec, section 5.3", "spec ``uldp-fl.md`` §5.2",
# "spec §6 item 26", "spec 8-A12", "spec A18", "spec I14", "spec 3.5", "shared/specs/x.md".
POINTER = re.compile(
    r"\bspec(?:'s|s)?\b[^\n]{0,20}?(?:§|\bsec(?:tion)?s?\b\.?\s*\d|\bitems?\s+\d|\boracles?\s+\d)"
    r"|\bspec\s+[A-Z]?\d"
    r"|\bspecs/[\w-]+\.md|shared/specs\b",
    re.IGNORECASE)


def _tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z", *FOLDERS], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        paths = [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an sdist)
        paths = [p for f in FOLDERS for p in (ROOT / f).rglob("*") if p.is_file()]
    return [p for p in paths if p.suffix in SUFFIXES and p.resolve() != Path(__file__).resolve()
            and p.exists()]


def pointers(text: str) -> list[str]:
    """The spec-section pointers in ``text``, one excerpt per hit."""
    return [text[max(0, m.start() - 30):m.end() + 10].replace("\n", " ")
            for m in POINTER.finditer(text)]


@pytest.mark.parametrize("text", [
    "see spec §5.2", "(spec Sec. 3.10)", "ULDP-FL spec, section 5.3", "spec ``uldp-fl.md`` §5.2",
    "spec §6 item 26", "(spec 8-A12)", "spec A18 predicts", "(spec I14)", "Spec 5.6 reference",
    "the spec's Sec. 4.5 table", "DP-OGL spec §8 item 9", "Spec: `shared/specs/gossip-dp.md`.",
    "spec oracle 13", "the gossip-DP spec (sections 5.1, 5.3, 5.5)"])
def test_the_pattern_finds_every_form_of_pointer(text):
    assert pointers(text)


@pytest.mark.parametrize("text", [
    "Kato et al. 2023, Sec. 5.1", "the paper's §3.5 correction", "RunSpec(algorithm=alg)",
    "spec = build(chunk[0].config)", "importlib.util.spec_from_file_location(name, path)",
    "a NoiseSpec of the run", "for spec in args.export:"])
def test_the_pattern_spares_paper_citations_and_code(text):
    assert not pointers(text)


def test_no_file_points_at_a_spec_section():
    found = [f"{p.relative_to(ROOT)}: ...{hit}..."
             for p in _tracked_files() for hit in pointers(p.read_text(errors="replace"))]
    assert not found, ("cite the paper (author/year, section, equation, figure) instead of the "
                       "unshipped specs:\n" + "\n".join(found))
