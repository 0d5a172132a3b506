"""Gaussian privacy noise on pytrees, from a sampler whose float32 tails reach ~11.8 sigma.

Why not ``jax.random.normal``: in float32 it is ``sqrt(2) erfinv(u)`` of a uniform with 24
random bits, so its support stops at about [-5.42, +5.22] sigma. A neighbour that moves a
coordinate by the sensitivity then puts probability where the other dataset's output has none,
which adds ~Phi_bar(5.22 - C / sigma) to delta per release (1.2e-5 at sigma / C = 1).

The sampler (:func:`standard_normal`, its pure bit transform :func:`normal_from_bits`): four
uint32 words per value. Word 0 gives the sign (bit 31), a 22-bit mantissa (bits 0-21) and 9
more bits (22-30); the count of leading zeros ``k`` of words 1, 2, 3 and those 9 bits (105
bits) is the binary exponent, so ``p = 2^-(k + 2) (1 + (m + 1/2) / 2^22)`` is uniform on
(2^-106, 1/2), built exactly as a float32 bit pattern (``k`` capped at 104: the all-zero
pattern shares the last binade, which keeps the density flat). ``|Z| = -ndtri(p)`` (float32
``jax.scipy.special.ndtri`` stayed within 2 ulp of the float64 inverse on a grid of p down to
2^-126; the tests check 4 ulp on every binade of the sampler), and the
sign bit gives ``Z``. The smallest p, 2^-106, sets the support: S = 11.8386 sigma
(``tests/noise_test.py`` computes it exactly), where the truncation adds ~1e-21 to delta per
release even for 2^32 coordinates (:mod:`jaxfl.accounting.sampler`).

Every draw here runs inside :func:`jaxfl.precision.noise_scope`; the addition of the data
does not. :func:`gaussian_like` draws once for a whole pytree and cuts the draw into its leaves.

Note: ``jax.random`` is not a cryptographically secure PRNG. jaxfl's noise is research grade;
a deployment must draw noise from a CSPRNG (e.g. NumPy's ``secrets``-seeded generator or a
hardware source) on trusted hardware.

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> n = gaussian_like({"w": jnp.zeros(3)}, jax.random.key(0), 2.0)
  >>> n["w"].shape
  (3,)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxfl import precision, validate
from jaxfl.accounting import sampler as _sampler

#: uint32 words consumed per standard normal value.
WORDS = 4
#: The sampler's label in privacy reports.
NAME = _sampler.NAME
_MANTISSA_BITS = 22
_MAX_ZEROS = 104  # k is capped here (105 bits in all): p >= 2^-106


def uniform_from_bits(words: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(negative, p)`` from raw bits: ``words`` uint32 ``[4, *shape]``; ``p`` float32 in
    [2^-106, 1/2), uniform there up to its 22-bit mantissa (module docstring)."""
    words = jnp.asarray(words, jnp.uint32)
    if words.shape[:1] != (WORDS,):
        raise validate.ShapeError(
            f"Expected uint32 words of shape [{WORDS}, ...], got {words.shape}.")
    w0, w1, w2, w3 = words[0], words[1], words[2], words[3]
    u32 = lambda v: jnp.uint32(v)  # noqa: E731
    sign = (w0 >> u32(31)) == u32(1)
    mant = w0 & u32((1 << _MANTISSA_BITS) - 1)
    extra = (w0 >> u32(_MANTISSA_BITS)) & u32(0x1FF)
    # 9 extra bits in the top of a word, a 1 below them so that their clz is at most 9
    c4 = lax.clz((extra << u32(23)) | u32(1 << 22))
    zero = lambda w: (w == u32(0)).astype(jnp.uint32)  # noqa: E731
    k = lax.clz(w1) + zero(w1) * (lax.clz(w2) + zero(w2) * (lax.clz(w3) + zero(w3) * c4))
    k = jnp.minimum(k, u32(_MAX_ZEROS))
    exponent = u32(127 - 2) - k  # biased exponent of 2^-(k + 2)
    p_bits = (exponent << u32(23)) | (mant << u32(1)) | u32(1)  # + half an ulp of 22 bits
    return sign, lax.bitcast_convert_type(p_bits, jnp.float32)


def normal_from_bits(words: jax.Array, dtype=jnp.float32) -> jax.Array:
    """Standard normal values from raw bits: ``words`` is uint32 ``[4, *shape]``.

    Pure and deterministic, so tests can feed crafted bit patterns. ``dtype`` float32 (or
    float64 under x64: the same ``p``, inverted in float64).
    """
    sign, p = uniform_from_bits(words)
    if jnp.dtype(dtype) == jnp.float64:
        p = p.astype(jnp.float64)
    elif jnp.dtype(dtype) != jnp.float32:
        raise validate.JaxflValueError(f"Expected dtype float32 or float64, got {dtype}.")
    mag = -jax.scipy.special.ndtri(p)
    return jnp.where(sign, -mag, mag)


def standard_normal(key: jax.Array, shape=(), dtype=jnp.float32) -> jax.Array:
    """i.i.d. standard normal values of ``shape``, support ~[-11.84, 11.84] (module docstring).

    ``dtype`` is the output dtype: float32/float64 directly, lower-precision floats by rounding
    the float32 draw.
    """
    dtype = jnp.dtype(dtype)
    work = jnp.float64 if dtype == jnp.float64 else jnp.float32
    bits = jax.random.bits(key, (WORDS, *tuple(shape)), jnp.uint32)
    return normal_from_bits(bits, work).astype(dtype)


def gaussian_like(tree, key: jax.Array, stddev):
    """A pytree shaped like ``tree`` with i.i.d. N(0, stddev^2) entries (leaf dtypes kept).

    One draw of ``standard_normal`` for the whole tree, cut into the leaves in flattening order:
    one bit-generator call compiles several times faster than one per leaf (a 4-leaf MLP tree:
    about 6x on CPU). A leaf's noise therefore depends on the key and on the sizes of the leaves
    before it, never on any value.
    """
    leaves, treedef = jax.tree.flatten(tree)
    if not leaves:
        return tree
    dtypes = [jnp.asarray(x).dtype for x in leaves]
    work = jnp.result_type(jnp.float32, *dtypes)
    sizes = [int(np.prod(jnp.shape(x), dtype=np.int64)) for x in leaves]
    with precision.noise_scope():
        z = standard_normal(key, (sum(sizes),), work)
        noise, start = [], 0
        for x, dt, n in zip(leaves, dtypes, sizes):
            noise.append((stddev * z[start:start + n].reshape(jnp.shape(x))).astype(dt))
            start += n
    return jax.tree.unflatten(treedef, noise)


def add_gaussian(tree, key: jax.Array, stddev):
    """``tree + N(0, stddev^2 I)`` (the draw in the noise scope, the addition outside)."""
    return jax.tree.map(jnp.add, tree, gaussian_like(tree, key, stddev))


__all__ = ["WORDS", "NAME", "uniform_from_bits", "normal_from_bits", "standard_normal",
           "gaussian_like", "add_gaussian"]
