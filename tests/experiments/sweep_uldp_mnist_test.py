"""The smoke sweeps of the ULDP MNIST configs (fig5_mnist; fig9_subsampling, whose smoke runs
its Creditcard panel) equal their points' single runs (split from sweep_uldp_test.py to
balance the test workers)."""

import pytest

from tests.experiments import _sweep_check
from tests.experiments.sweep_uldp_test import MNIST


@pytest.mark.parametrize("config_file", MNIST)
def test_smoke_sweep_equals_single_runs(config_file, tmp_path):
    _sweep_check.check_config_sweep(config_file, tmp_path)
