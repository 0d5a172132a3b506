"""Every LightDP-FL config's smoke sweep equals its points' single runs.

CIFAR-10 is not among the shipped data sets: its config is skipped when the pickles are absent
(its wiring runs on stand-in arrays in tests/experiments/lightdp_smoke_test.py).
"""

import pytest

from jaxfl.data import catalog
from tests.experiments import _sweep_check


@pytest.mark.parametrize("config_file", _sweep_check.config_files("lightdp"))
def test_smoke_sweep_equals_single_runs(config_file, tmp_path):
    if "cifar10" in config_file and not catalog.available("cifar10"):
        pytest.skip("CIFAR-10 pickles not under JAXFL_DATA_DIR (python -m jaxfl.data.download "
                    "cifar10)")
    _sweep_check.check_config_sweep(config_file, tmp_path)
