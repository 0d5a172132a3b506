"""Command lines of experiments/run.py and experiments/sweep.py: --set forms, --help --config."""

import pytest

from experiments import config as config_lib
from experiments import run, sweep

CFG = "experiments/configs/dp_fedavg/mnist.py"


@pytest.mark.parametrize("argv", [
    ["--set", "rounds=2", "seed=3", "--set", "noise_multiplier=1.5"],
    ["--set", "rounds=2", "--set", "seed=3", "noise_multiplier=1.5"],
])
def test_set_accepts_several_values_and_repeats(monkeypatch, argv):
    seen = {}
    monkeypatch.setattr(run.builders, "run", lambda cfg, workdir, **kw: seen.update(cfg=cfg) or {})
    run.main(["--config", f"{CFG}:variant=smoke", "--workdir", "unused", *argv])
    cfg = seen["cfg"]
    assert (cfg.rounds, cfg.seed, cfg.noise_multiplier) == (2, 3, 1.5)


def test_sweep_set_extends(tmp_path):
    plan = sweep.main(["--config", f"{CFG}:variant=smoke", "--workdir", str(tmp_path),
                       "--dry-run", "--set", "rounds=2", "seed=1", "--set", "local_steps=1"])
    assert len(plan) >= 1


@pytest.mark.parametrize("main", [run.main, sweep.main], ids=["run", "sweep"])
def test_help_with_config_lists_fields_types_defaults_and_docstring(main, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--config", f"{CFG}:variant=smoke", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "config experiments.configs.fl.FLConfig" in out
    assert "FedAvg / DP-FedAvg on a classification set" in out  # class docstring
    assert "noise_multiplier: float = 1.0" in out
    assert "rounds: int = 3  (class default: 50)" in out  # smoke value and class default


def test_unknown_override_names_the_nearest_key():
    cfg = config_lib.load_config(CFG)
    with pytest.raises(ValueError, match="'noise_multiplyer'; did you mean 'noise_multiplier'"):
        config_lib.apply_overrides(cfg, ["noise_multiplyer=2"])
    with pytest.raises(ValueError, match="did you mean 'variant'"):
        config_lib.parse_arg("varient=smoke", variant="full", dataset="mnist")


def test_unknown_set_key_fails_the_command_line(monkeypatch):
    monkeypatch.setattr(run.builders, "run", lambda *a: pytest.fail("ran"))
    with pytest.raises(ValueError, match="did you mean 'rounds'"):
        run.main(["--config", CFG, "--workdir", "unused", "--set", "round=2"])
