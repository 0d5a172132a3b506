"""A ULDP figure sweep runs each method with that method's own hyperparameters."""

import dataclasses

import pytest

from experiments import config as config_lib
from jaxfl import sweep

FIGURES = ("fig6_heart", "fig7_tcga", "fig5_mnist")


@pytest.mark.parametrize("figure", FIGURES)
@pytest.mark.parametrize("variant", ["full", "cpu"])
def test_sweep_point_equals_single_run_config(figure, variant):
    module = config_lib.load_module(f"experiments/configs/uldp/{figure}.py")
    arg = f"variant={variant},seeds=0:3"
    points = sweep.expand(module.get_config(arg), module.get_sweep(arg))
    assert {p.config.seed for p in points} == {0, 3}
    lrs = set()
    for p in points:
        c = p.config
        single = module.get_config(f"variant={variant},method={c.method},"
                                   f"num_users={c.num_users},distribution={c.distribution},"
                                   f"seed={c.seed}")
        assert dataclasses.asdict(c) == dataclasses.asdict(single), p.overrides
        lrs.add(c.global_lr)
    assert len(lrs) > 1  # DEFAULT / GROUP and AVG differ: the per-method values are applied


def test_default_and_avg_learning_rates_in_heart_sweep():
    module = config_lib.load_module("experiments/configs/uldp/fig6_heart.py")
    points = sweep.expand(module.get_config(None), module.get_sweep(None))
    by = {p.config.method: p.config for p in points}
    assert by["DEFAULT"].global_lr == 1.0 and by["ULDP-AVG"].global_lr == 10.0
    assert {p.config.seed for p in points} == {0, 1, 3, 6, 10}
    assert all(p.config.rounds == 50 and p.config.local_epochs == 50 for p in points)
