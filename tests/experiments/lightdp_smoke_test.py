"""LightDP-FL experiment configs and reproduction driver (smoke variants, real MNIST)."""

import json

import numpy as np
import pytest

from experiments.configs.lightdp import cifar10_resnet18, common, fashion_mnist_cnn, mnist_cnn
from tests.conftest import require_data

CONFIGS = [cifar10_resnet18, mnist_cnn, fashion_mnist_cnn]


@pytest.mark.parametrize("module", CONFIGS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_configs_parse_and_designs_exist(module):
    for variant in ("smoke", "full" if module is cifar10_resnet18 else "cpu"):
        cfg = module.get_config(f"variant={variant},epsilon=6")
        assert cfg.epsilon == 6.0 and cfg.variant == variant
        d = common.make_design(cfg)
        assert d.mode == "strict" and d.exact_epsilon() <= 6.0 + 1e-9
    sweep = module.get_sweep()
    names = [r["name"] for r in sweep]
    assert len(names) == len(set(names)) == 12 + 12 + 6 + 2
    full = module.get_config("variant=" + ("full" if module is cifar10_resnet18 else "cpu"))
    for row in sweep:  # every cell has a valid noise design at full / cpu scale
        over = {k: v for k, v in row.items() if k != "name"}
        cfg = common.apply_overrides(full, over)
        if cfg.design_scheme == "smpc_dp" and cfg.num_clients - cfg.max_colluders \
                - cfg.max_stragglers <= 0:
            continue
        assert common.make_design(cfg).sigma_u > 0


def test_full_scale_config_is_the_papers_setting():
    cfg = cifar10_resnet18.get_config()
    assert (cfg.num_clients, cfg.rounds, cfg.batch_size, cfg.client_lr) == (50, 150, 32, 0.05)
    assert cfg.model == "resnet18_gn" and cfg.local_steps == 31
    assert cfg.sensitivity == pytest.approx(2 * cfg.clip_norm / 1000)


def test_get_config_overrides_and_bad_input():
    cfg = mnist_cnn.get_config("variant=smoke,epsilon=3,mode=paper,test_examples=none")
    assert (cfg.epsilon, cfg.mode, cfg.test_examples, cfg.variant) == (3.0, "paper", None, "smoke")
    cfg = common.apply_overrides(cfg, ["max_colluders=4", "stragglers=bernoulli"])
    assert cfg.max_colluders == 4 and cfg.stragglers == "bernoulli"
    with pytest.raises(ValueError, match="epsilonn"):
        mnist_cnn.get_config("epsilonn=3")
    with pytest.raises(ValueError, match="variant"):
        mnist_cnn.get_config("variant=huge")


def test_run_entry_point_loads_config(tmp_path):
    from experiments import config as config_lib

    cfg = config_lib.load_config("experiments/configs/lightdp/mnist_cnn.py:variant=smoke",
                                 ["rounds=1"])
    assert cfg.rounds == 1 and callable(cfg.run)


def test_mnist_smoke_run_learns_and_accounts(tmp_path):
    pytest.importorskip("jaxfl.data.idx")
    pytest.importorskip("jaxfl.models.cnn")
    require_data("mnist/train-images-idx3-ubyte.gz")
    cfg = mnist_cnn.get_config("variant=smoke,rounds=3")
    res = common.run(cfg, tmp_path / "run")
    hist = res.history
    assert [h["round"] for h in hist] == [1, 2, 3]
    assert all(0.0 <= h["test_accuracy"] <= 1.0 for h in hist)
    assert res.summary["mode"] == "strict"
    assert res.summary["epsilon_pld"] <= cfg.epsilon + 0.02
    frozen = json.loads((tmp_path / "run" / "config.json").read_text())
    assert frozen["config"]["epsilon"] == cfg.epsilon and frozen["config"]["variant"] == "smoke"


@pytest.mark.slow
def test_reproduction_driver_smoke(tmp_path):
    pytest.importorskip("jaxfl.data.idx")
    pytest.importorskip("jaxfl.models.cnn")
    require_data("mnist/train-images-idx3-ubyte.gz")
    from experiments.reproduce import lightdp as repro

    out = repro.main(["--scale", "smoke", "--only", "fig3,fig4", "--workdir", str(tmp_path)])
    doc = (tmp_path / "lightdp.md").read_text()
    assert repro.BEGIN in doc and "Fig. 3" in doc and "Claims" in doc
    assert (tmp_path / "figures" / "fig3.png").exists()
    assert (tmp_path / "figures" / "fig4.png").exists()
    assert out["costs"]["secagg_round_success_rate"] <= 1.0
    assert np.isfinite(out["fig4"]["lightdp"]["round_seconds"])
    # Resume: a second call reads the finished runs instead of training again.
    again = repro.main(["--scale", "smoke", "--only", "fig3", "--workdir", str(tmp_path)])
    assert again["final_accuracy"] == {k: v for k, v in out["final_accuracy"].items()
                                       if not k.startswith("fig4")}
