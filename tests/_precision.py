"""Helpers of the precision-contract tests (``tests/precision_test.py`` and every config's smoke
sweep): one round traced as :func:`jaxfl.training.run` jits it, and the mutation that puts a
clip-path function back at the default matmul precision."""

import jax
import numpy as np

from jaxfl.algorithms import base


def round_jaxpr(alg, data, params):
    """The closed jaxpr of round 0 of ``alg`` from ``params`` on ``data`` (training.run's
    ``round_step``: ``base.call_apply`` of the state, device data, round input and key)."""
    data = data.to_device() if hasattr(data, "to_device") else data
    rin = alg.prepare(0, np.random.default_rng(0))
    step = lambda s, d, r, k: base.call_apply(alg, s, d, r, k)  # noqa: E731
    return jax.make_jaxpr(step)(alg.init(params), data, rin, jax.random.key(1))


def at_default_precision(fn):
    """``fn`` without its ``precision.sensitive()`` decorator, traced at the default matmul
    precision (what the code was before the contract), even inside an enclosing scope."""
    fn = getattr(fn, "__wrapped__", fn)

    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision("default"):
            return fn(*args, **kwargs)
    return wrapped
