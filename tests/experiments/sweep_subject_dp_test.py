"""Every subject_dp config's smoke sweep equals its points' single runs, and runs as one
compiled computation: its points differ in seed (so in the data partition), target epsilon (the
noise, a host round input), clip norm and learning rate, all of which one computation serves."""

import pytest

from tests.experiments import _sweep_check


@pytest.mark.parametrize("config_file", _sweep_check.config_files("subject_dp"))
def test_smoke_sweep_equals_single_runs(config_file, tmp_path):
    _sweep_check.check_config_sweep(config_file, tmp_path, computations_expected=1)
