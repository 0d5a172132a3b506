"""Shared check: a config file's smoke sweep runs through ``experiments.sweep`` and every point
equals its single run through ``experiments.run`` (metrics, privacy report, final state)."""

from __future__ import annotations

import contextlib
import json
import logging
import math
from pathlib import Path

import jax
import numpy as np
from flax import serialization

from experiments import config as config_lib
from experiments import run as run_cli
from experiments import sweep as sweep_cli
from jaxfl import builders, checkpoint, metrics, sweep
from tests.conftest import require_data

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "experiments" / "configs"


def config_files(paper: str) -> list[str]:
    """The config files (those defining ``get_config``) of ``experiments/configs/<paper>/``."""
    out = []
    for path in sorted((CONFIGS / paper).glob("*.py")):
        if not path.name.startswith("_") and "def get_config(" in path.read_text():
            out.append(str(path.relative_to(ROOT)))
    return out


def _numeric(v):
    """``v`` as an int or float array when it is a rectangular (nested) list of numbers, else None
    (bools, strings, dicts and ragged lists are compared element by element)."""
    flat = v
    while isinstance(flat, list) and flat:
        flat = flat[0]
    if isinstance(flat, bool) or not isinstance(flat, (int, float)):
        return None
    try:
        arr = np.asarray(v)
    except (TypeError, ValueError):  # ragged
        return None
    return arr if arr.dtype.kind in "if" else None


def _close(a, b, path="", rtol=2e-4, atol=1e-5):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (path, sorted(a), sorted(b))
        for k in a:
            if k not in ("elapsed_s",):
                _close(a[k], b[k], f"{path}.{k}", rtol, atol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        na, nb = _numeric(a), _numeric(b)
        if na is not None and nb is not None:  # a (nested) list of numbers: one array check
            assert na.shape == nb.shape, (path, na.shape, nb.shape)
            if na.dtype.kind == "i" and nb.dtype.kind == "i":  # ints compare exactly
                np.testing.assert_array_equal(na, nb, err_msg=path)
            else:
                np.testing.assert_allclose(na.astype(np.float64), nb.astype(np.float64),
                                           rtol=rtol, atol=atol, equal_nan=True, err_msg=path)
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]", rtol, atol)
    elif isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            assert math.isnan(a) and math.isnan(b), path
        elif not (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= atol + rtol * abs(b)):
            # assert_allclose's own test, in Python first: the logs hold tens of thousands of
            # scalars, and NumPy's call per pair was a third of a smoke sweep check's time.
            # Anything but a clear pass (infinities too) goes to NumPy, which decides.
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=path)
    else:
        assert a == b, (path, a, b)


def _final_state(workdir: Path):
    found = checkpoint.latest(workdir / "checkpoints")
    if found is None:
        return None
    return serialization.msgpack_restore(found[0].read_bytes())


def _privacy(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k.startswith("privacy") or k in (
        "epsilon", "delta", "epsilon_rdp", "epsilon_pld")}


def check_config_sweep(config_file: str, tmp_path: Path, *, arg: str = "variant=smoke",
                       rtol: float = 2e-4, computations_expected: int | None = None) -> None:
    """``computations_expected``: how many round-step computations the smoke sweep must need
    (e.g. 1 when every point differs only in fields its algorithm can batch), checked against
    both the traced fields the built algorithms declare and the compiles counted."""
    require_data()
    module = config_lib.load_module(str(ROOT / config_file))
    overrides = sweep_cli._call_optional_arg(module.get_sweep, arg)
    assert len(overrides) >= 2, f"{config_file}: smoke sweep has {len(overrides)} point(s)"
    with round_step_compiles() as compiles, recorded_builds() as built:
        res = sweep_cli.main(["--config", f"{ROOT / config_file}:{arg}",
                              "--workdir", str(tmp_path / "sweep")])
    expected = computations(built)
    check_precision_contract(built, config_file)
    if computations_expected is not None:
        assert expected == computations_expected, (
            f"{config_file}: the traced fields of the smoke sweep's points allow {expected} "
            f"computation(s), expected {computations_expected}")
    assert compiles() == expected, (
        f"{config_file}: the smoke sweep compiled its round step {compiles()} times; the "
        f"traced fields of its points allow {expected} computation(s)")
    assert len(res.finished) == len(overrides) and not res.stopped
    rows = (tmp_path / "sweep" / "results.csv").read_text().splitlines()
    assert len(rows) > len(overrides), rows
    header = rows[0].split(",")
    base = module.get_config(arg)
    for point_id, ov in zip(sweep_pids(tmp_path / "sweep"), overrides, strict=True):
        pdir = tmp_path / "sweep" / "points" / point_id
        sets = [f"{k}={_text(v)}" for k, v in ov.items()]
        single_dir = tmp_path / "single" / point_id
        summary = run_cli.main(["--config", f"{ROOT / config_file}:{arg}",
                                *[x for s in sets for x in ("--set", s)],
                                "--workdir", str(single_dir)])
        swept = json.loads((pdir / "summary.json").read_text())
        single = json.loads((single_dir / "summary.json").read_text())
        assert swept["rounds_completed"] == single["rounds_completed"]
        _close(_privacy(swept), _privacy(single), "privacy", rtol=1e-9, atol=0)
        _close(metrics.read_jsonl(pdir / "metrics.jsonl"),
               metrics.read_jsonl(single_dir / "metrics.jsonl"), "metrics", rtol=rtol)
        a, b = _final_state(pdir), _final_state(single_dir)
        assert (a is None) == (b is None)
        if a is not None:
            _close(_tolist(a), _tolist(b), "state", rtol=rtol)
        if "privacy" in summary:  # private: an epsilon column from each point's accountant
            assert "epsilon" in header
    assert base is not None


@contextlib.contextmanager
def round_step_compiles():
    """Counts the compilations of a round step (the vmapped block of a sweep batch and a single
    run's ``round_step``) inside the block; yields a function returning the count so far."""
    seen, probing = [], []
    from jaxfl import vmapped_runs

    original = vmapped_runs.point_memory

    def point_memory(*args, **kwargs):
        # the memory planner's probes (a device with a memory budget: the block compiled at 2
        # and 4 points for its memory analysis, never run) are not round-step computations
        probing.append(True)
        try:
            return original(*args, **kwargs)
        finally:
            probing.pop()

    class _Count(logging.Handler):
        def emit(self, record):
            msg = record.getMessage()
            if not probing and (msg.startswith("Compiling jit(block)") or
                                msg.startswith("Compiling jit(round_step)")):
                seen.append(msg)

    handler, logger = _Count(level=logging.DEBUG), logging.getLogger("jax")
    logger.addHandler(handler)
    vmapped_runs.point_memory = point_memory
    try:
        with jax.log_compiles(True):
            yield lambda: len(seen)
    finally:
        vmapped_runs.point_memory = original
        logger.removeHandler(handler)


@contextlib.contextmanager
def recorded_builds():
    """Records ``(config, algorithm)`` for every run spec built by ``jaxfl.builders``."""
    built, original = [], builders.run_spec

    def recording(config):
        spec = original(config)
        built.append((config, spec.algorithm, spec))
        return spec

    builders.run_spec = recording
    try:
        yield built
    finally:
        builders.run_spec = original


def computations(built) -> int:
    """How many round-step computations a sweep of the recorded points needs: one per class of
    configs that agree outside their algorithm's traced fields (seeds, declared ``hparams``,
    the config's ``derived_hparams``); none for accounting-only points."""
    classes = set()
    for config, algorithm, _ in built:
        if algorithm is not None:
            traced = sweep.traced_fields(algorithm, config)
            flat = sweep._flatten(metrics.jsonable(config))
            rest = json.dumps({k: v for k, v in flat.items() if k.split(".")[-1] not in traced},
                              sort_keys=True, default=str)
            classes.add((algorithm.name, tuple(sorted(traced)), rest))
    return len(classes)


def check_precision_contract(built, config_file: str) -> None:
    """The round of the config's first training point, traced as ``training.run`` jits it, keeps
    the precision contract (:func:`jaxfl.precision.violations`): every config's smoke sweep checks
    it, so a new paper's algorithm is checked without an entry in ``tests/precision_test.py``."""
    from jaxfl import precision
    from tests import _precision

    specs = [spec for _, algorithm, spec in built if algorithm is not None]
    if not specs:  # accounting-only configs have no round
        return
    jaxpr = _precision.round_jaxpr(specs[0].algorithm, specs[0].data, specs[0].params)
    assert precision.violations(jaxpr) == [], (config_file, precision.violations(jaxpr))


def sweep_pids(workdir: Path) -> list[str]:
    manifest = json.loads((workdir / "sweep.json").read_text())
    return [p["id"] for p in manifest["points"]]


def _text(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, (tuple, list)):
        return ":".join(str(x) for x in v)
    return str(v)


def _tolist(tree):
    if isinstance(tree, dict):
        return {k: _tolist(v) for k, v in tree.items()}
    return np.asarray(tree, dtype=np.float64).reshape(-1).tolist()
