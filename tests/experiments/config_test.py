"""experiments.config: ``get_config(arg)`` parsing rejects unknown keys (no silent full runs)."""

from pathlib import Path

import pytest

from experiments import config as config_lib

CONFIG_FILES = sorted(p for p in Path("experiments/configs").glob("*/*.py")
                      if not p.name.startswith("_"))


def test_config_helpers_have_one_name():
    """A paper's shared config code lives in ``_common.py``; every other module is a config
    file (it defines ``get_config``)."""
    odd = [str(p) for p in Path("experiments/configs").glob("*/*.py")
           if p.name not in ("__init__.py", "_common.py")
           and "def get_config(" not in p.read_text()]
    assert not odd, f"config helper modules not named _common.py: {odd}"


def test_parse_arg_converts_to_default_types():
    a = config_lib.parse_arg("n=3,q=0.5,flag=no,name=x,opt=none", n=1, q=1.0, flag=True,
                             name="y", opt="z")
    assert a == {"n": 3, "q": 0.5, "flag": False, "name": "x", "opt": None}
    assert config_lib.parse_arg(None, n=1) == {"n": 1}


def test_parse_arg_unknown_key_names_key_and_allowed_keys():
    with pytest.raises(ValueError, match=r"'varient'.*\['dataset', 'variant'\]"):
        config_lib.parse_arg("varient=smoke", variant="full", dataset="mnist")
    with pytest.raises(ValueError, match="key=value"):
        config_lib.parse_arg("smoke", variant="full")


def test_key_values_is_the_one_key_value_parser():
    want = {"a": "1", "b": "x=y"}
    assert config_lib.key_values(" a = 1 ,, b=x=y", what="t") == want
    assert config_lib.key_values(["a=1", "b=x=y"], what="t") == want
    assert config_lib.key_values("", what="t") == {}
    with pytest.raises(ValueError, match=r"key=value in --set, got 'oops'"):
        config_lib.key_values(["a=1", "oops"], what="--set")
    with pytest.raises(ValueError, match="--set"):
        config_lib.apply_overrides(config_lib.load_config(
            "experiments/configs/dp_fedavg/mnist.py:variant=smoke"), ["rounds"])


def test_parse_arg_extra_keys_are_kept_as_strings():
    a = config_lib.parse_arg("variant=smoke,rounds=3", variant="full", extra_keys=("rounds",))
    assert a == {"variant": "smoke", "rounds": "3"}
    with pytest.raises(ValueError, match="'round'"):
        config_lib.parse_arg("round=3", variant="full", extra_keys=("rounds",))


def test_config_files_found():
    assert len(CONFIG_FILES) >= 15


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_config_rejects_a_misspelt_key(path):
    module = config_lib.load_module(str(path))
    with pytest.raises(ValueError, match="varient"):
        module.get_config("varient=smoke")
    assert module.get_config("variant=smoke").variant == "smoke"


def test_configs_forwarding_keys_still_accept_them():
    uldp = "experiments/configs/uldp"
    cfg = config_lib.load_config(f"{uldp}/fig9_subsampling.py:dataset=creditcard,"
                                 "method=ULDP-AVG-w,sampling_rate=0.3,variant=smoke")
    assert (cfg.dataset, cfg.method, cfg.sampling_rate, cfg.variant) == (
        "creditcard", "ULDP-AVG-w", 0.3, "smoke")
    cfg = config_lib.load_config(f"{uldp}/fig8_weighting.py:num_silos=20,seed=3")
    assert (cfg.num_silos, cfg.seed, cfg.dataset) == (20, 3, "creditcard")
    cfg = config_lib.load_config("experiments/configs/lightdp/mnist_cnn.py:variant=smoke,"
                                 "rounds=3,test_examples=none")
    assert (cfg.rounds, cfg.test_examples) == (3, None)
