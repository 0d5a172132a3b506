"""The smoke-sweep tests enumerate every config directory (a new paper cannot be forgotten)."""

from pathlib import Path

from tests.experiments import _sweep_check

HERE = Path(__file__).resolve().parent


def test_every_config_directory_has_a_sweep_test():
    papers = sorted(p.name for p in _sweep_check.CONFIGS.iterdir()
                    if p.is_dir() and _sweep_check.config_files(p.name))
    missing = [p for p in papers if not (HERE / f"sweep_{p}_test.py").exists()]
    assert not missing, f"add tests/experiments/sweep_<paper>_test.py for {missing}"
    assert len(papers) >= 6
