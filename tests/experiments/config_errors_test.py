"""Config errors that name their cause (issue 35, items 6 and 7): overrides of the wrong type,
an unknown model, and an unknown variant of any config family (it used to launch the full
experiment for dp_fedavg/mnist.py, gossip/fig1_er.py, subject_dp/parkinsons.py and others)."""

import dataclasses
from pathlib import Path

import pytest

from experiments import config as config_lib
from experiments.configs.fl import FLConfig
from jaxfl import validate

CONFIG_FILES = sorted(p for p in Path("experiments/configs").glob("*/*.py")
                      if not p.name.startswith("_"))


@pytest.mark.parametrize("override,field,kind", [
    ("rounds=1.5", "rounds", "an integer"),
    ("noise_multiplier=abc", "noise_multiplier", "a number"),
    ("seed=x", "seed", "an integer"),
])
def test_an_override_of_the_wrong_type_names_the_field_and_the_type(override, field, kind):
    """Before: ``invalid literal for int() with base 10: '1.5'`` (no field named)."""
    cfg = FLConfig()
    value = override.split("=", 1)[1]
    with pytest.raises(ValueError, match=rf"Expected {field} to be {kind}.*{field}='{value}'"):
        config_lib.apply_overrides(cfg, [override])


def test_a_config_arg_of_the_wrong_type_names_the_key():
    with pytest.raises(ValueError, match=r"Expected seeds to be an integer.*seeds='two'"):
        config_lib.parse_arg("seeds=two", variant="cpu", seeds=1)
    with pytest.raises(ValueError, match=r"Expected flag to be a bool.*flag='maybe'"):
        config_lib.parse_arg("flag=maybe", flag=True)
    assert config_lib.parse_arg("rounds=3", rounds=1) == {"rounds": 3}


def test_an_unknown_model_lists_the_available_ones_before_any_data_loads(tmp_path):
    """Before: a bare ``KeyError: 'logregg'`` (after loading the dataset)."""
    from experiments.papers import fedavg

    cfg = dataclasses.replace(FLConfig(), model="logregg", data_dir=str(tmp_path / "none"))
    with pytest.raises(validate.JaxflValueError,
                       match=r"Unknown model 'logregg'.*did you mean 'logreg'.*'mlp'"):
        fedavg.task(cfg)  # the data dir does not exist: the model is checked first


def _module(path):
    return config_lib.load_module(str(path))


def test_check_variant_lists_the_known_variants():
    assert config_lib.check_variant("smoke", ("full", "smoke")) == "smoke"
    with pytest.raises(ValueError, match=r"Unknown variant 'smok'.*'smoke'.*full, smoke"):
        config_lib.check_variant("smok", ("full", "smoke"))
    with pytest.raises(ValueError, match="Unknown variant"):
        config_lib.parse_arg("variant=smok", variant="full", variants=("full", "smoke"))


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_config_refuses_an_unknown_variant_and_accepts_its_own(path):
    """Every config module declares its ``VARIANTS``; each builds, and an unknown variant is
    refused by ``get_config`` and ``get_sweep`` with the known ones listed."""
    mod = _module(path)
    assert hasattr(mod, "VARIANTS"), f"{path} declares no VARIANTS"
    known = tuple(mod.VARIANTS)
    assert known
    # a sweep-only variant selects points of another variant's grid (its configs, and so their
    # hashes, are that variant's): ``SWEEP_ONLY_VARIANTS = {"reduced": "full"}``
    sweep_only = getattr(mod, "SWEEP_ONLY_VARIANTS", {})
    for v in known:
        cfg = mod.get_config(f"variant={v}")
        if v in sweep_only:
            assert cfg == mod.get_config(f"variant={sweep_only[v]}"), (path, v)
            assert {tuple(sorted(p.items())) for p in mod.get_sweep(f"variant={v}")} <= {
                tuple(sorted(p.items())) for p in mod.get_sweep(f"variant={sweep_only[v]}")}
        elif hasattr(cfg, "variant"):
            assert cfg.variant == v, (path, v)
    for fn in ("get_config", "get_sweep"):
        if not hasattr(mod, fn):
            continue
        with pytest.raises(ValueError, match="Unknown variant 'smok'") as err:
            getattr(mod, fn)("variant=smok")
        for v in known:
            assert v in str(err.value), (path, fn, v)


@pytest.mark.parametrize("override", ["max_records=0", "synthetic_records=0", "num_silos=0"])
def test_uldp_configs_without_records_or_silos_are_refused_before_work(override):
    """Before: accepted; zero records reached ULDP-GROUP's group size as numpy's "zero-size
    array to reduction operation maximum" after loading the data."""
    with pytest.raises(validate.JaxflValueError, match=override.replace("=0", r" >= 1")):
        config_lib.load_config("experiments/configs/uldp/fig5_mnist.py:variant=smoke",
                               [override])
