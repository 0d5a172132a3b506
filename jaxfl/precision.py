"""The precision contract of the arithmetic that a privacy claim rests on.

An accountant assumes that each protected unit moves the noised aggregate by at most its
sensitivity (the clip norm C, or a weighted multiple of it). That holds for the program only if
the per-unit norms, the clip factors, the clipped (weighted) sums and the noise addition are
computed accurately. On GPUs and TPUs the default float32 matrix product is not accurate: it
runs at TF32 (10 mantissa bits) on NVIDIA Ampere/Hopper and bfloat16 passes on TPUs, so a norm
and the sum it is meant to bound can disagree by about 1e-3 relative, and a unit's contribution
can exceed C by as much.

The contract: every ``dot_general`` from the per-unit quantity that is clipped to the noised
release runs at ``Precision.HIGHEST`` (full float32), on every backend. Code that computes such
a quantity wraps it in :func:`sensitive`, which

* opens the named scope :data:`SENSITIVITY_SCOPE` (visible in the jaxpr's name stack), and
* sets ``jax.default_matmul_precision("highest")`` while tracing, so every matmul / einsum /
  dot traced inside (including the transposes that autodiff derives from them) carries
  ``precision=HIGHEST`` in the jaxpr.

Privacy noise is drawn inside :func:`noise_scope` (:data:`NOISE_SCOPE`), so a jaxpr walk can
find where the noise enters. Model forward/backward passes outside these scopes (local training
before a model delta is clipped) keep the backend's fast default: clipping a materialised
vector bounds it whatever precision produced it.

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> def f(a, b):
  ...     with sensitive():
  ...         return a @ b
  >>> eqn = jax.make_jaxpr(f)(jnp.ones((2, 2)), jnp.ones((2, 2))).eqns[0]
  >>> eqn.params["precision"][0] == jax.lax.Precision.HIGHEST
  True
  >>> SENSITIVITY_SCOPE in str(eqn.source_info.name_stack)
  True
"""

from __future__ import annotations

import contextlib

import jax

#: Name scope of the computations a sensitivity bound is about (norms, clip factors, sums).
SENSITIVITY_SCOPE = "dp_sensitivity"
#: Name scope of privacy noise draws.
NOISE_SCOPE = "dp_noise"


@contextlib.contextmanager
def sensitive():
    """Traces the enclosed code at the highest matmul precision, in :data:`SENSITIVITY_SCOPE`."""
    with jax.named_scope(SENSITIVITY_SCOPE), jax.default_matmul_precision("highest"):
        yield


@contextlib.contextmanager
def noise_scope():
    """Traces the enclosed privacy-noise draw in :data:`NOISE_SCOPE` (highest precision too:
    a correlated-noise matrix product is part of the noise the accountant assumes)."""
    with jax.named_scope(NOISE_SCOPE), jax.default_matmul_precision("highest"):
        yield
