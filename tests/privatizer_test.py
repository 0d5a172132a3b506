"""The privatizer: the one place a noise std is derived from a noise multiplier."""

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import clipping, noise, validate
from jaxfl import privatizer as jpriv

PACKAGE = Path(__file__).resolve().parents[1] / "jaxfl"
NOISE_NAMES = {"sigma", "sigma_t", "sig", "sig_m", "noise_multiplier", "noise_multipliers"}
CLIP_NAMES = {"C", "C_t", "c", "c_m", "clip", "clip_norm", "clip_norms", "W"}


def _name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value
    return None


def _factors(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Div):
        return _factors(node.left) + _factors(node.right)
    return [_name(node)]


def hand_written_noise_stds(root: Path) -> list[str]:
    """Code (not docstrings) multiplying a noise multiplier by a clip norm."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                names = set(_factors(node))
                if names & NOISE_NAMES and names & CLIP_NAMES:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return sorted(set(found))


def test_no_noise_std_is_hand_written_outside_the_privatizer():
    sites = [s for s in hand_written_noise_stds(PACKAGE)
             if not s.startswith("jaxfl/privatizer.py:")]
    assert sites == [], sites


def test_the_check_finds_a_hand_written_site(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        '"""sigma * C in prose is fine."""\n'
        'def f(hp, clip):\n    return noise(x, hp["noise_multiplier"] * clip / 2)\n')
    assert hand_written_noise_stds(tmp_path / "pkg") == ["pkg/m.py:3"]


def test_std_sensitivity_and_shares():
    p = jpriv.gaussian(clip_norm=0.5, noise_multiplier=2.0)
    assert (p.sensitivity(), p.std(), p.part_std()) == (0.5, 1.0, 1.0)
    assert p.std({"noise_multiplier": 3.0}) == 1.5 and p.std(clip=2.0) == 4.0
    assert p.std({"clip_norm": 1.0}, noise_multiplier=1.0) == 1.0
    naive = jpriv.per_unit(clip_norm=1.0, noise_multiplier=2.0, parts=4, sensitivity_factor=4)
    assert (naive.sensitivity(), naive.std(), naive.part_std()) == (4.0, 8.0, 4.0)
    assert dict(naive.hparams) == {"clip_norm": 1.0, "noise_multiplier": 2.0}
    with pytest.raises(validate.JaxflValueError):
        jpriv.Privatizer(1.0, 1.0, kind="laplace")
    with pytest.raises(validate.PrivacyParameterError):
        jpriv.gaussian(clip_norm=0.0, noise_multiplier=1.0)
    with pytest.raises(validate.JaxflValueError, match="draws its own"):
        jpriv.correlated(clip_norm=1.0, noise_multiplier=1.0).add_noise({}, None)


def test_privatize_is_clip_sum_then_the_tail_exact_gaussian():
    p = jpriv.gaussian(clip_norm=1.0, noise_multiplier=0.7)
    rows = {"w": jnp.asarray(np.random.default_rng(0).normal(size=(5, 3)), jnp.float32)}
    key = jax.random.key(3)
    mask = jnp.asarray([True, True, False, True, True])
    hp = {"clip_norm": jnp.float32(0.5), "noise_multiplier": jnp.float32(2.0)}
    got, norms = jax.jit(lambda r, h: p.privatize(r, key, h, mask=mask))(rows, hp)
    total, want_norms = clipping.clip_and_sum(rows, 0.5, mask=mask)
    want = noise.add_gaussian(total, key, jnp.float32(2.0) * jnp.float32(0.5))
    np.testing.assert_array_equal(got["w"], want["w"])
    np.testing.assert_array_equal(norms, want_norms)
