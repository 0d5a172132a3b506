"""The precision contract (jaxfl.precision) holds for every algorithm's round, as traced.

For each algorithm a tiny instance is built and its round is traced the way
:func:`jaxfl.training.run` compiles it (``base.call_apply`` under ``jit``); the jaxpr walk must
find no ``dot_general`` / convolution below ``Precision.HIGHEST`` between the per-unit clipped
quantities and the noise. Mutation tests revert one clip-path dot to the default precision (or
move a sum out of the scope) and check that the walk flags it. Only tracing, no compilation.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfl import precision
from jaxfl.algorithms import base

pytest.importorskip("jax_privacy")


# --------------------------------------------------------------------------------------------
# The walker on small hand-written functions.
# --------------------------------------------------------------------------------------------

A = jnp.ones((3, 3))
HI = jax.lax.Precision.HIGHEST


def _noise(shape):
    with precision.noise_scope():
        return jax.random.normal(jax.random.key(0), shape)


def _bad(fn, *args):
    return precision.violations(jax.make_jaxpr(fn)(*args))


def test_scoped_dot_is_highest_and_clean():
    def f(a):
        with precision.sensitive():
            s = a @ a
        return s + _noise(s.shape)
    assert _bad(f, A) == []


def test_default_dot_before_the_scope_is_not_flagged():
    """Local training at the default precision, then the clip and sum in the scope."""
    def f(a):
        delta = jnp.tanh(a @ a) @ a          # model passes before clipping: fast default
        with precision.sensitive():
            c = delta * jnp.minimum(1.0, 1.0 / jnp.linalg.norm(delta))
            s = jnp.sum(c, axis=0)
        return s + _noise(s.shape)
    assert _bad(f, A) == []


def test_default_dot_inside_scope_is_flagged():
    def f(a):
        with precision.sensitive():
            s = jax.lax.dot(a, a, precision=jax.lax.Precision.DEFAULT)
        return s + _noise(s.shape)
    (msg,) = _bad(f, A)
    assert "in a privacy scope" in msg


def test_sum_after_scope_is_flagged_and_dot_after_noise_is_not():
    def f(a):
        with precision.sensitive():
            c = a / jnp.maximum(1.0, jnp.linalg.norm(a, axis=1, keepdims=True))
        s = jnp.ones((1, 3)) @ c             # the sum over units, outside the scope
        out = s + _noise(s.shape)
        return out @ a                       # after the noise: post-processing
    (msg,) = _bad(f, A)
    assert "between the sensitivity scope and the noise" in msg


def test_noise_without_sensitivity_scope_is_an_error():
    def f(a):
        s = jnp.sum(a, axis=0)
        return s + _noise(s.shape)
    (msg,) = _bad(f, A)
    assert "no computation in the 'dp_sensitivity' scope" in msg


def _sens(a):
    with precision.sensitive():
        return a * jnp.minimum(1.0, 1.0 / jnp.linalg.norm(a))


NESTINGS = {
    "jit": lambda c: jax.jit(lambda c: c @ A)(c),
    "remat": lambda c: jax.checkpoint(lambda c: c @ A)(c),
    "custom_jvp": lambda c: _cjvp(c),
    "custom_vjp": lambda c: _cvjp(c),
    "shard_map": lambda c: jax.shard_map(lambda c: c @ A, mesh=jax.make_mesh((1,), ("d",)),
                                         in_specs=jax.P(), out_specs=jax.P())(c),
    "scan_carry": lambda c: jax.lax.scan(lambda k, _: (k @ A, None), c, None, length=2)[0],
    "scan_xs": lambda c: jax.lax.scan(lambda k, x: (k, x @ A), 0.0, c)[1],
    "scan_const": lambda c: jax.lax.scan(lambda k, x: (k + x @ c, None), A, A)[0],
    "scan_fixpoint": lambda c: jax.lax.scan(       # taint reaches the dot's carry at step 2
        lambda k, _: ((k[1] @ A, c), None), (A, A), None, length=2)[0][0],
    "while": lambda c: jax.lax.while_loop(lambda k: k[0, 0] < 5.0, lambda k: k @ A + 1.0, c),
    "while_const": lambda c: jax.lax.while_loop(lambda k: k[0, 0] < 5.0,
                                                lambda k: k + c @ A + 1.0, A),
    "cond": lambda c: jax.lax.cond(c[0, 0] > 0, lambda c: c @ A, lambda c: c, c),
    "cond_index": lambda c: jax.lax.cond(c[0, 0] > 0, lambda: A, lambda: -A) @ A,
}


@jax.custom_jvp
def _cjvp(c):
    return c @ A


_cjvp.defjvp(lambda p, t: (_cjvp(p[0]), t[0]))


@jax.custom_vjp
def _cvjp(c):
    return c @ A


_cvjp.defvjp(lambda c: (_cvjp(c), None), lambda r, g: (g,))


@pytest.mark.parametrize("kind", sorted(NESTINGS))
def test_nested_default_dot_on_the_path_is_flagged(kind):
    def f(a):
        y = NESTINGS[kind](_sens(a))
        return y + _noise(y.shape)
    got = _bad(f, A)
    assert len(got) == 1 and "between the sensitivity scope and the noise" in got[0], got


@pytest.mark.parametrize("kind", sorted(NESTINGS))
def test_nested_dot_off_the_path_is_not_flagged(kind):
    """The same nesting before the clip (local training) or after the noise."""
    def f(a):
        y = _sens(NESTINGS[kind](a))
        z = y + _noise(y.shape)
        return NESTINGS[kind](z)
    assert _bad(f, A) == []


@pytest.mark.parametrize("kind", sorted(NESTINGS))
def test_nested_default_dot_in_scope_is_flagged(kind):
    def f(a):
        with precision.sensitive(), jax.default_matmul_precision("default"):
            y = NESTINGS[kind](a)
        return y + _noise(y.shape)
    got = _bad(f, A)
    assert got and all("in a privacy scope" in m for m in got), got


def test_closed_call_is_followed():
    """A ``closed_call`` eqn (made from a jit eqn: its params are the only difference)."""
    def f(a):
        y = jax.jit(lambda c: c @ A)(_sens(a))
        return y + _noise(y.shape)
    cj = jax.make_jaxpr(f)(A)
    eqns = [e.replace(primitive=jax.extend.core.primitives.closed_call_p,
                      params={"call_jaxpr": e.params["jaxpr"]})
            if e.primitive.name == "jit" and "dot_general" in str(e.params["jaxpr"]) else e
            for e in cj.jaxpr.eqns]
    assert "closed_call" in [e.primitive.name for e in eqns]
    got = precision.violations(jax.extend.core.ClosedJaxpr(cj.jaxpr.replace(eqns=eqns),
                                                           cj.consts))
    assert len(got) == 1 and "closed_call" in got[0], got


def test_nested_highest_dot_on_the_path_is_clean():
    def f(a):
        c = _sens(a)
        y = jax.lax.scan(lambda k, _: (jax.jit(lambda k: jnp.dot(k, A, precision=HI))(k),
                                       None), c, None, length=2)[0]
        return y + _noise(y.shape)
    assert _bad(f, A) == []


def test_noise_added_inside_a_loop_body():
    """DP-SGD: clip, noise and step inside a scan; the next step's model pass is not flagged,
    a default-precision sum between the clip and the noise is."""
    def step(p, _, sum_precision):
        g = jnp.tanh(p @ A)                  # model pass at the default precision
        with precision.sensitive():
            c = g * jnp.minimum(1.0, 1.0 / jnp.linalg.norm(g, axis=1, keepdims=True))
        s = jnp.dot(jnp.ones((3,)), c, precision=sum_precision)
        return p - (s + _noise(s.shape)), None
    ok = lambda a: jax.lax.scan(lambda p, x: step(p, x, HI), a, None, length=3)[0]
    bad = lambda a: jax.lax.scan(lambda p, x: step(p, x, None), a, None, length=3)[0]
    assert _bad(ok, A) == []
    assert len(_bad(bad, A)) == 1


def test_unknown_higher_order_primitive_is_conservative(monkeypatch):
    """An eqn the walk does not know is one node: its inner dots are checked when it is on
    the path."""
    monkeypatch.setattr(precision._Graph, "_nested", lambda self, *a: False)
    def f(a):
        y = jax.jit(lambda c: c @ A)(_sens(a))
        return y + _noise(y.shape)
    (msg,) = _bad(f, A)
    assert "inside an opaque primitive" in msg
    assert _bad(lambda a: _sens(jax.jit(lambda c: c @ A)(a)) + _noise((3, 3)), A) == []


def test_check_raises_with_the_list():
    def f(a):
        with precision.sensitive():
            s = jax.lax.dot(a, a, precision=jax.lax.Precision.DEFAULT)
        return s + _noise(s.shape)
    with pytest.raises(AssertionError, match="precision contract violated"):
        precision.check(f, A)
    precision.check(lambda a: _sens(a) + _noise((3, 3)), A)
