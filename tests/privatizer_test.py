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


def _oracles(tree) -> set[str]:
    """Functions passed to ``registry.Noise(...)``: the conformance suite's expected noise std,
    computed from the accountant's hparams on purpose, independently of the privatizer (an
    oracle, not a mechanism)."""
    return {n.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Call)
            and _name(n.func) == "Noise" and n.args and isinstance(n.args[0], ast.Name)}


def hand_written_noise_stds(root: Path) -> list[str]:
    """Code (not docstrings) multiplying a noise multiplier by a clip norm, outside the
    conformance oracles (:func:`_oracles`)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        oracles = _oracles(tree)
        skip = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                and f.name in oracles for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and \
                    id(node) not in skip:
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
    # the same product in a conformance oracle (a function given to registry.Noise) is allowed,
    # and only there
    (tmp_path / "pkg" / "o.py").write_text(
        'def expected(hp, clip):\n    return hp["noise_multiplier"] * clip\n'
        'def mechanism(hp, clip):\n    return hp["noise_multiplier"] * clip\n'
        'ORACLE = registry.Noise(expected)\n')
    assert hand_written_noise_stds(tmp_path / "pkg") == ["pkg/m.py:3", "pkg/o.py:4"]


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
    with pytest.raises(validate.JaxflValueError, match="not of a 'correlated' one"):
        jpriv.correlated(clip_norm=1.0, noise_multiplier=1.0).add_noise({}, None)
    with pytest.raises(validate.JaxflValueError, match="not of a 'per_unit' one"):
        naive.add_noise({}, None)
    with pytest.raises(validate.JaxflValueError, match="not of a 'gaussian' one"):
        p.update({}, None, None)


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


# --------------------------------------------------------------------------------------------
# The privatizer is the mechanism: every draw is made here, none in an algorithm module.
# --------------------------------------------------------------------------------------------

#: Calls that draw privacy noise (the sampler's entry points, and JAX's own normal sampler).
DRAWS = {("noise", "standard_normal"), ("noise", "gaussian_like"), ("noise", "add_gaussian"),
         ("noise", "normal_from_bits"), ("random", "normal"), ("random", "truncated_normal")}


def noise_draws(root: Path) -> list[str]:
    """Calls of a noise sampler (``noise.standard_normal(...)``, ``jax.random.normal(...)``,
    ...) and imports of :mod:`jaxfl.noise` in the modules under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            where = f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    (_name(node.func.value), node.func.attr) in DRAWS:
                found.append(where)
            elif isinstance(node, ast.ImportFrom) and node.module == "jaxfl" and \
                    any(a.name == "noise" for a in node.names):
                found.append(where + " imports jaxfl.noise")
            elif isinstance(node, ast.Import | ast.ImportFrom) and any(
                    (node.module if isinstance(node, ast.ImportFrom) else a.name) == "jaxfl.noise"
                    for a in node.names):
                found.append(where + " imports jaxfl.noise")
    return found


def test_no_algorithm_draws_noise_of_its_own():
    assert noise_draws(PACKAGE / "algorithms") == []


def test_the_draw_check_finds_a_draw(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "from jaxfl import noise\nimport jax\n"
        "def f(k):\n    return noise.standard_normal(k, ()) + jax.random.normal(k)\n")
    assert noise_draws(tmp_path / "pkg") == ["pkg/m.py:1 imports jaxfl.noise", "pkg/m.py:4",
                                            "pkg/m.py:4"]


TREE = {"a": jnp.zeros((3, 2)), "b": jnp.ones((5,))}


def test_shares_are_per_share_keyed_draws_of_the_part_std():
    p = jpriv.per_unit(clip_norm=0.5, noise_multiplier=2.0, parts=4)
    key = jax.random.key(5)
    got = p.shares(TREE, key, {"noise_multiplier": jnp.float32(3.0)})
    assert got["a"].shape == (4, 3, 2) and got["b"].shape == (4, 5)
    for s in range(4):
        want = noise.gaussian_like(TREE, jax.random.fold_in(key, s), 3.0 * 0.5 / 2.0)
        for k in TREE:
            np.testing.assert_array_equal(got[k][s], want[k])
    share = p.add_share(TREE, key)
    want = noise.add_gaussian(TREE, key, p.part_std())
    for k in TREE:
        np.testing.assert_array_equal(share[k], want[k])


def test_correlated_update_is_the_strategy_noise_at_the_privatizer_std():
    M = np.asarray([[1.0, 0.0], [0.5, 1.0]])
    p = jpriv.correlated(clip_norm=0.5, noise_multiplier=2.0, noising=M)
    tree = {"w": jnp.zeros((64,))}
    key = jax.random.key_data(jax.random.key(2))
    state = p.init(tree)
    out1, state, key1 = p.update(tree, state, key)
    out2, state, _ = p.update(tree, state, key1, {"noise_multiplier": 4.0})
    z = [noise.gaussian_like(tree, jax.random.fold_in(jax.random.wrap_key_data(key), j), 1.0)
         for j in range(2)]
    # the sampler compiled in the loop may differ from the eager draw by an ulp or two; the
    # second round sums two float32 terms: a few ulp of the largest value
    tol = 4 * np.finfo(np.float32).eps * 12.0  # |z| < 11.84 (the sampler's support)
    np.testing.assert_allclose(out1["w"], z[0]["w"], rtol=0, atol=tol)  # row [1, 0]
    want = 2.0 * (0.5 * np.float64(z[0]["w"]) + np.float64(z[1]["w"]))  # row [0.5, 1] x 2
    np.testing.assert_allclose(out2["w"], want, rtol=0, atol=3 * tol)
    assert int(state) == 2


def test_pairwise_draws_cancel_and_round_to_the_grid():
    k = jax.random.key(9)
    a, b = jpriv.pair_noise(k, (6,), 0.7), jpriv.pair_noise(k, (6,), 0.7)
    np.testing.assert_array_equal(a - b, np.zeros(6))
    np.testing.assert_array_equal(a, 0.7 * noise.standard_normal(k, (6,)))
    q = jpriv.local_noise(jax.random.split(k, 3), (4,), 0.7, fixed_point_bits=3)
    assert q.shape == (3, 4)
    np.testing.assert_array_equal(q * 8, np.round(q * 8))
