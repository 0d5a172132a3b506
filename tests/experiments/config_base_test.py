"""One base run config: every config family extends it, its fields' checks run before any
work, and the config hashes (run directory names, committed data) are those the families had
before they shared it."""

import dataclasses
import hashlib
import inspect
import json
import re
from pathlib import Path

import pytest

from experiments import config as config_lib
from experiments.configs import base
from jaxfl import metrics, sweep, validate

CONFIG_FILES = sorted(p for p in Path("experiments/configs").glob("*/*.py")
                      if not p.name.startswith("_"))
# sha256 of {"<config file>:<variant>": config hash} over every config file and variant, as
# computed before the families shared the base (commit 4b8826f).
HASHES_DIGEST = "2ac237932ff40ade"
# config files added after that commit (the digest covers the files that existed then; a new
# file has no earlier hash to keep, and must extend the base like every other: checked below)
ADDED_AFTER_PIN = ("experiments/configs/gossip/fig3_mnist_full_seeds.py",)


def _variants(module):
    known = getattr(module, "VARIANTS", None)
    if known is None:
        with pytest.raises(ValueError) as e:
            module.get_config("variant=__none__")
        known = re.search(r"known variants: (.*)\.$", str(e.value)).group(1).split(", ")
    return list(known)


def _configs():
    for path in CONFIG_FILES:
        module = config_lib.load_module(str(path))
        for variant in _variants(module):
            yield f"{path}:{variant}", module, module.get_config(f"variant={variant}")


def test_every_config_family_extends_the_base_and_keeps_its_hashes():
    hashes, families = {}, set()
    for key, _, cfg in _configs():
        assert isinstance(cfg, base.RunConfig), key
        families.add(type(cfg).__name__)
        if not key.startswith(ADDED_AFTER_PIN):
            hashes[key] = metrics.config_hash(cfg)
    assert len(families) >= 8 and len(hashes) >= 40
    digest = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()[:16]
    assert digest == HASHES_DIGEST  # a renamed, added or dropped field would change it


def test_sweep_points_of_a_family_keep_their_ids():
    # the ULDP sweep diffs each method's config against the figure's (field by field)
    module = config_lib.load_module("experiments/configs/uldp/fig6_heart.py")
    cfg = module.get_config("variant=cpu")
    ids = [p.id for p in sweep.expand(cfg, module.get_sweep("variant=cpu"))]
    assert len(ids) > 100 and hashlib.sha256("".join(ids).encode()).hexdigest()[:12] == \
        "b7cd648ae409"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Toy(base.TrainingConfig):
    variants = ("full", "smoke")

    lr: float = base.checked(0.1, "positive_value")
    noise: float = base.checked(1.0, "positive")
    rate: float = base.checked(0.5, "probability")
    opt: str = base.checked("sgd", ("sgd", "adam"))
    cap: int | None = base.checked(None, "int?")
    rounds: int = base.checked(3, "count")  # declared again: its own check

    def check(self):
        if self.cap is not None and self.cap > self.rounds:
            raise validate.JaxflValueError(f"Expected cap <= rounds, got {self.cap}.")


@pytest.mark.parametrize("field,value,error", [
    ("lr", 0.0, validate.JaxflValueError), ("noise", -1.0, validate.PrivacyParameterError),
    ("rate", 1.5, validate.PrivacyParameterError), ("opt", "sgdd", validate.JaxflValueError),
    ("cap", 0, validate.JaxflValueError), ("rounds", -1, validate.JaxflValueError),
    ("delta", 1.0, validate.PrivacyParameterError), ("eval_every", 0, validate.JaxflValueError),
    ("checkpoint_every", 0, validate.JaxflValueError), ("seed", -1, validate.JaxflValueError),
    ("variant", "smok", validate.JaxflValueError)])
def test_a_bad_field_is_refused_with_its_name(field, value, error):
    with pytest.raises(error, match=rf"\b{field}\b"):
        Toy(**{field: value})


def test_checks_follow_the_declaring_class():
    assert Toy(rounds=0, cap=None).rounds == 0  # the subclass's rule ("count") replaces "int"
    with pytest.raises(validate.JaxflValueError, match="rounds"):
        base.TrainingConfig(rounds=0)
    with pytest.raises(validate.JaxflValueError, match="cap <= rounds"):
        Toy(cap=5)  # the family's own cross-field check runs too
    assert Toy(cap=2).cap == 2
    with pytest.raises(ValueError, match="rule"):
        base.checked(1, "positiv")


def test_families_declare_the_shared_fields_nowhere_else():
    # seed and delta (and their checks) are the base's alone
    for key, _, cfg in _configs():
        for cls in type(cfg).__mro__[:-1]:
            if cls not in (base.RunConfig, base.TrainingConfig):
                assert not {"seed", "delta"} & set(inspect.get_annotations(cls)), (key, cls)


def test_a_family_default_keeps_the_base_fields_check_type_and_place():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class ToyDp(base.DpTrainingConfig):
        defaults = {"clip_norm": 0.1, "rounds": 7}
        lr: float = base.checked(0.1, "positive_value")

    assert (ToyDp().clip_norm, ToyDp().rounds, ToyDp().noise_multiplier) == (0.1, 7, 1.0)
    assert base.DpTrainingConfig().clip_norm == 0.5  # the base's default is untouched
    with pytest.raises(validate.PrivacyParameterError, match=r"\bclip_norm\b"):
        ToyDp(clip_norm=-1.0)  # the base's check ("positive")
    assert ToyDp(rounds=0).rounds == 0  # DpTrainingConfig's "count", not TrainingConfig's "int"
    names = [f.name for f in dataclasses.fields(ToyDp)]
    assert names == [f.name for f in dataclasses.fields(base.DpTrainingConfig)] + ["lr"]
    assert inspect.get_annotations(ToyDp)["clip_norm"] == "float"
    for bad in ({"clip_normm": 1.0}, {"lr": 0.2}):  # not a base field; a field of its own
        with pytest.raises(TypeError, match="defaults"):
            @dataclasses.dataclass(frozen=True, kw_only=True)
            class Bad(base.DpTrainingConfig):
                defaults = bad
                lr: float = 0.1
