import jax
import jax.extend
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


# ------------------------------------------------------------------ the sampler's bits -> normal

from jax import lax  # noqa: E402
from scipy import special  # noqa: E402

from jaxfl import precision  # noqa: E402
from jaxfl.accounting import sampler as acc_sampler  # noqa: E402


def _words(sign, k, mant):
    """Crafted words: sign bit, ``k`` leading zeros over words 1-3 + 9 extra bits, mantissa."""
    sign, k, mant = (np.asarray(a, np.uint64) for a in np.broadcast_arrays(sign, k, mant))
    n = k.shape
    w = np.zeros((4, *n), np.uint64)
    ones = np.uint64(0xFFFFFFFF)
    for word, lo in ((1, 0), (2, 32), (3, 64)):
        # a single 1 bit after the zeros that fall in this word; all ones after the first 1
        in_word = (k >= lo) & (k < lo + 32)
        w[word] = np.where(k < lo, ones, 0)
        w[word] = np.where(in_word, np.uint64(1) << (np.uint64(31) - (k - lo) % 32), w[word])
    extra = np.where(k >= 96, np.where(k < 105, np.uint64(1) << (np.uint64(8) - (k - 96) % 9),
                                       0), np.uint64(0x1FF))
    w[0] = (sign << np.uint64(31)) | (extra << np.uint64(22)) | mant
    return jnp.asarray(w.astype(np.uint32))


def _p(k, mant):
    """The uniform the transform should invert: 2^-(min(k,104)+2) (1 + (m + 1/2) / 2^22)."""
    k = np.minimum(np.asarray(k, np.float64), 104)
    return 2.0 ** -(k + 2) * (1.0 + (np.asarray(mant, np.float64) + 0.5) / 2**22)


def test_exact_support_of_the_sampler():
    f = jax.jit(noise.normal_from_bits)
    # the extreme binade (k >= 104) in full: every mantissa, both signs, k = 104 and 105
    mant = np.arange(2**22, dtype=np.uint64)
    top = max(float(jnp.max(jnp.abs(f(_words(s, k, mant))))) for s in (0, 1) for k in (104, 105))
    # every other binade is further in: its largest value (smallest mantissa) is below
    ks = np.arange(0, 104)
    inner = np.abs(np.asarray(f(_words(0, ks, 0))))
    assert np.all(np.diff(inner) > 0) and inner[-1] < top
    s_exact = float(np.float32(top))
    assert s_exact == pytest.approx(-special.ndtri(2.0**-106), abs=1e-5)
    assert s_exact >= acc_sampler.SUPPORT_HALF_WIDTH
    # the all-zero pattern reaches it; the sign is symmetric
    z0 = f(jnp.zeros((4, 1), jnp.uint32))
    assert float(z0[0]) == s_exact
    assert float(f(jnp.zeros((4, 1), jnp.uint32).at[0].set(jnp.uint32(1 << 31)))[0]) == -s_exact
    # the truncation delta per release this support implies (r = 1, r = 2; d = 2^32)
    d1 = acc_sampler.per_release_delta(1.0, support=s_exact)
    d2 = acc_sampler.per_release_delta(2.0, support=s_exact)
    assert d1 < 1e-20 and d2 < 1e-15, (s_exact, d1, d2)
    print(f"support S = {s_exact!r}; truncation delta per release r=1: {d1:.3g}, r=2: {d2:.3g}")


def test_bits_to_normal_matches_float64_inverse_cdf():
    rng = np.random.default_rng(0)
    k = np.repeat(np.arange(0, 106), 200)
    mant = rng.integers(0, 2**22, k.shape).astype(np.uint64)
    sign = rng.integers(0, 2, k.shape)
    z = np.asarray(jax.jit(noise.normal_from_bits)(_words(sign, k, mant)), np.float64)
    ref = -special.ndtri(_p(k, mant)) * np.where(sign == 1, -1.0, 1.0)
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    # within a few float32 ulps of the exact value (near 0 the absolute error is what matters)
    assert np.all(np.abs(z - ref) <= 4 * np.maximum(ulp, 1e-7)), np.max(np.abs(z - ref) / ulp)


def test_bits_layout_gives_a_uniform_on_zero_half():
    # p is exactly representable and in (0, 1/2): check the bit construction for extremes
    k = np.array([0, 0, 31, 32, 63, 64, 95, 96, 103, 104, 105])
    mant = np.array([0, 2**22 - 1, 5, 0, 7, 1, 2**22 - 1, 3, 0, 2**21, 0])
    neg, p = noise.uniform_from_bits(_words(1, k, mant))
    assert p.dtype == jnp.float32 and bool(jnp.all(neg))
    np.testing.assert_array_equal(np.asarray(p, np.float64), _p(k, mant))
    assert np.all(_p(k, mant) < 0.5)


def test_standard_normal_moments_tails_and_dtypes():
    z = np.asarray(jax.jit(lambda k: noise.standard_normal(k, (4 * 10**6,)))(jax.random.key(5)),
                   np.float64)
    n = z.size
    assert abs(z.mean()) < 5 / np.sqrt(n)
    assert abs(z.var() - 1.0) < 5 * np.sqrt(2.0 / n)
    for t in (3.0, 4.0):
        expect = n * 2 * special.ndtr(-t)
        got = np.sum(np.abs(z) > t)
        assert abs(got - expect) < 5 * np.sqrt(expect), (t, got, expect)
    assert abs(np.mean(z > 0) - 0.5) < 5 * 0.5 / np.sqrt(n)
    assert noise.standard_normal(jax.random.key(0), (3,), jnp.bfloat16).dtype == jnp.bfloat16
    with jax.enable_x64(True):
        z64 = noise.standard_normal(jax.random.key(0), (1000,), jnp.float64)
        assert z64.dtype == jnp.float64
        z32 = noise.standard_normal(jax.random.key(0), (1000,), jnp.float32)
        np.testing.assert_allclose(np.asarray(z64), np.asarray(z32), rtol=2e-6, atol=2e-7)


def test_old_sampler_support_is_what_the_issue_says():
    # jax.random.normal in float32 cannot exceed ~5.42; ours reaches beyond it
    u_max = np.nextafter(np.float32(1.0), np.float32(0.0))
    old_top = float(jnp.sqrt(2.0) * lax.erf_inv(jnp.float32(u_max)))
    assert old_top < 5.5
    assert float(noise.normal_from_bits(_words(0, np.array([40]), np.array([0])))[0]) > 6.0


def test_draws_are_in_the_noise_scope_and_addition_is_not():
    jaxpr = jax.make_jaxpr(lambda t, k: noise.add_gaussian(t, k, 2.0))(
        {"a": jnp.zeros(3)}, jax.random.key(0))

    def eqns(jx):
        for e in jx.eqns:
            yield e
            for sub in jax.extend.core.jaxprs_in_params(e.params):
                yield from eqns(sub)

    names = [(e.primitive.name, str(e.source_info.name_stack)) for e in eqns(jaxpr.jaxpr)]
    draws = [s for p, s in names if p in ("random_bits", "threefry2x32", "clz", "erf_inv", "log")]
    assert draws and all(precision.NOISE_SCOPE in s for s in draws)
    adds = [s for p, s in names if p == "add" and precision.NOISE_SCOPE not in s]
    assert adds, names
