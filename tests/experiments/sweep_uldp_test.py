"""Every uldp config's smoke sweep equals its points' single runs (fig5_mnist and
fig9_subsampling, whose smoke is panel (a) on Creditcard since it stopped compiling the MNIST
CNN, are in sweep_uldp_mnist_test.py: a file of their own, so pytest-xdist's ``--dist loadfile``
can put them on another worker than the rest)."""

import pytest

from tests.experiments import _sweep_check

MNIST = ("experiments/configs/uldp/fig5_mnist.py", "experiments/configs/uldp/fig9_subsampling.py")


@pytest.mark.parametrize("config_file", [f for f in _sweep_check.config_files("uldp")
                                         if f not in MNIST])
def test_smoke_sweep_equals_single_runs(config_file, tmp_path):
    _sweep_check.check_config_sweep(config_file, tmp_path)


def test_the_two_files_cover_every_uldp_config():
    assert set(MNIST) <= set(_sweep_check.config_files("uldp"))
