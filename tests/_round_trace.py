"""One round of an algorithm traced as :func:`jaxfl.training.run` jits it (for the precision
contract's jaxpr walk in ``tests/precision_test.py`` and every config's smoke sweep)."""

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
