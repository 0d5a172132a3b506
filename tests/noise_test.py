import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxfl import noise


@pytest.mark.parametrize("stddev", [0.1, 1.0, 7.5])
def test_gaussian_noise_ks_accepts_right_sigma_rejects_wrong(stddev):
    tree = {"a": jnp.zeros((60, 50)), "b": jnp.zeros((1000,))}
    n = noise.gaussian_like(tree, jax.random.key(3), stddev)
    z = np.concatenate([np.ravel(x) for x in jax.tree.leaves(n)])
    assert stats.kstest(z / stddev, "norm").pvalue > 0.01
    assert stats.kstest(z / (stddev * 2 / 3), "norm").pvalue < 0.01
    assert stats.kstest(z / (stddev * 3 / 2), "norm").pvalue < 0.01


def test_noise_leaves_independent_and_deterministic():
    tree = {"a": jnp.zeros(2000), "b": jnp.zeros(2000)}
    n1 = noise.gaussian_like(tree, jax.random.key(0), 1.0)
    n2 = noise.gaussian_like(tree, jax.random.key(0), 1.0)
    np.testing.assert_array_equal(n1["a"], n2["a"])
    assert abs(np.corrcoef(n1["a"], n1["b"])[0, 1]) < 0.1
    n3 = noise.gaussian_like(tree, jax.random.key(1), 1.0)
    assert not np.array_equal(n1["a"], n3["a"])


def test_noise_dtype_kept():
    n = noise.add_gaussian({"a": jnp.zeros(4, jnp.bfloat16)}, jax.random.key(0), 1.0)
    assert n["a"].dtype == jnp.bfloat16
