"""Every config's smoke sweep also walks its round under the precision contract
(``_sweep_check.check_precision_contract``); this shows that check fails on a config whose
clipped sum runs at the default matmul precision."""

from pathlib import Path

import pytest

from experiments import config as config_lib
from jaxfl import builders
from tests import _precision
from tests.conftest import require_data
from tests.experiments import _sweep_check

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "experiments" / "configs" / "gossip" / "fig3_mnist.py"


def _built(arg="variant=smoke"):
    module = config_lib.load_module(str(CONFIG))
    cfg = module.get_config(arg)
    spec = builders.run_spec(cfg)
    return [(cfg, spec.algorithm, spec)]


def test_config_round_keeps_the_contract_and_a_mutation_is_caught(monkeypatch):
    require_data()
    _sweep_check.check_precision_contract(_built(), "fig3_mnist")
    from experiments.papers import gossip as paper
    from jaxfl.algorithms import gossip

    mutated = _precision.at_default_precision(gossip.logreg_clipped_grad_sum)
    original = paper.galg.dp_gossip_avg
    monkeypatch.setattr(paper.galg, "dp_gossip_avg",
                        lambda **kw: original(**kw, grad_fn=mutated))
    with pytest.raises(AssertionError, match="dp_sensitivity"):
        _sweep_check.check_precision_contract(_built(), "fig3_mnist")
