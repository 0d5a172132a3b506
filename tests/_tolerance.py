"""Tolerances for comparisons whose two sides run matmuls at the backend's default precision.

With the precision contract (:mod:`jaxfl.precision`) the clipped sums, norms and noise run at
full float32 on every backend, so comparisons among them keep float32 tolerances. Where both
sides of a comparison go through a model's forward/backward pass at the default precision
(local training before clipping, batched against unbatched, one compiled program against
another), the default float32 matmul is TF32 on NVIDIA GPUs (10 mantissa bits) and bfloat16
passes on TPUs, and the comparison holds only to that precision. :func:`rtol` / :func:`atol`
give the tolerance for the current backend; on the CPU (or with
``JAX_DEFAULT_MATMUL_PRECISION=highest``) they are the float32 values the tests always used.

  >>> rtol(backend="cpu"), rtol(backend="gpu"), atol(backend="gpu")
  (1e-05, 0.005, 0.0005)
"""

import jax
import jax.numpy as jnp

# How much looser than float32 a default-precision matmul result is, per backend.
_LOOSER = {"cpu": 1.0, "gpu": 500.0, "cuda": 500.0, "rocm": 500.0, "tpu": 2000.0}


def _full_precision_matmuls() -> bool:
    p = jax.config.jax_default_matmul_precision
    return p is not None and str(p).lower() in ("highest", "float32")


def _factor(dtype, backend) -> float:
    if jnp.dtype(dtype) != jnp.float32:
        return 1.0
    backend = backend or jax.default_backend()
    if backend == jax.default_backend() and _full_precision_matmuls():
        return 1.0
    return _LOOSER.get(backend, 2000.0)


def rtol(dtype=jnp.float32, backend: str | None = None, *, float32: float = 1e-5) -> float:
    """Relative tolerance: ``float32`` (the full-precision tolerance) times how much looser the
    backend's default float32 matmul is (x500 for TF32 on GPUs, x2000 for TPUs' bfloat16
    passes). Other dtypes keep ``float32`` (pass their own)."""
    return float32 * _factor(dtype, backend)


def atol(dtype=jnp.float32, backend: str | None = None, *, float32: float = 1e-6) -> float:
    """Absolute tolerance, scaled like :func:`rtol`."""
    return float32 * _factor(dtype, backend)
