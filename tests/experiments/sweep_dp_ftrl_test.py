"""Every DP-FTRL config's smoke sweep equals its points' single runs."""

import pytest

from tests.experiments import _sweep_check


@pytest.mark.parametrize("config_file", _sweep_check.config_files("dp_ftrl"))
def test_smoke_sweep_equals_single_runs(config_file, tmp_path):
    _sweep_check.check_config_sweep(config_file, tmp_path)
