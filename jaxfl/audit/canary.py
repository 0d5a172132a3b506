"""Canary audits: run a mechanism many times on neighbours D and D' and bound its epsilon.

A mechanism under audit is a pure function ``mechanism(key, present) -> view``: ``present`` is a
traced boolean scalar, True for the dataset D that contains the canary (the protected unit of
the paper: a client, worker, user across silos, subject or node) and False for its neighbour
D'. ``view`` is what the adversary of the threat model observes (the server's aggregate, a
group's model sequence, a node's gossip view ...). A ``statistic(view) -> scalar`` (see
:mod:`jaxfl.audit.statistics`) is the distinguishing test; larger means "D".

:func:`sample_scores` evaluates ``statistic(mechanism(key_t, present))`` for ``trials`` keys under
both hypotheses inside one jit, vmapped in chunks of ``batch_size`` trials (``lax.map`` with
``batch_size``), so only scalar scores ever leave the device. :func:`audit` turns the scores into
an :class:`~jaxfl.audit.bounds.EpsilonBound` (held-out threshold, Clopper-Pearson intervals).

The audit is white-box: the adversary knows the mechanism, the other units' data and the canary;
only the randomness (noise, sampling) is hidden, exactly the DP threat model. A bound above the
accountant's epsilon (beyond its confidence) is a bug in the mechanism or in the accountant.

Example Usage:
  >>> import jax, jax.numpy as jnp
  >>> mech = lambda key, present: present + jax.random.normal(key)  # sensitivity 1, sigma 1
  >>> r = audit(mech, lambda v: v, key=jax.random.key(0), trials=20000, delta=0.05)
  >>> 0.8 < r.epsilon_lb < 1.5689
  True
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import validate
from jaxfl.audit import bounds


def select(present, tree_d, tree_dprime):
    """``tree_d`` where ``present`` else ``tree_dprime`` (leafwise; for neighbour datasets)."""
    return jax.tree.map(lambda a, b: jnp.where(present, a, b), tree_d, tree_dprime)


def sample_scores(mechanism: Callable[[jax.Array, jax.Array], Any],
                  statistic: Callable[[Any], jax.Array], *, key: jax.Array, trials: int,
                  batch_size: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Scores of ``trials`` independent runs under D (present) and under D' (absent).

    Args:
      mechanism: ``(key, present) -> view`` (see module docstring), jit-compatible.
      statistic: ``view -> scalar`` distinguishing statistic.
      key: a typed PRNG key; the D and D' runs use independent sub-keys.
      trials: runs per hypothesis.
      batch_size: trials vmapped together (memory knob; results do not depend on it).

    Returns:
      ``(pos, neg)`` float64 arrays of shape ``[trials]``.
    """
    trials = validate.positive_int("trials", trials, minimum=2)
    batch_size = validate.positive_int("batch_size", batch_size)

    def score(k, present):
        return jnp.asarray(statistic(mechanism(k, present))).reshape(())

    @jax.jit
    def run(k):
        out = []
        for b, name in ((True, 1), (False, 0)):
            keys = jax.random.split(jax.random.fold_in(k, name), trials)
            flag = jnp.asarray(b)
            out.append(jax.lax.map(lambda kk, flag=flag: score(kk, flag), keys,
                                   batch_size=min(batch_size, trials)))
        return out

    pos, neg = run(key)
    return np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64)


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """One audit: the bound, the claim it is checked against, and provenance.

    Attributes:
      name: mechanism name.
      bound: the :class:`~jaxfl.audit.bounds.EpsilonBound`.
      trials: runs per hypothesis.
      claimed: ``{mode: epsilon}`` claimed by the accountant(s) at the same delta, e.g.
        ``{"strict": 2.1, "paper": 1.3}``.
      neighbour: the neighbouring relation audited (e.g. "add/remove one client").
      view: what the adversary observed.
      seconds: wall time of sampling + bounding.
      info: free-form details (mechanism parameters, statistic).
    """

    name: str
    bound: bounds.EpsilonBound
    trials: int
    claimed: dict = dataclasses.field(default_factory=dict)
    neighbour: str = ""
    view: str = ""
    seconds: float = 0.0
    info: dict = dataclasses.field(default_factory=dict)

    @property
    def epsilon_lb(self) -> float:
        return self.bound.epsilon_lb

    def exceeds(self, mode: str) -> bool:
        """True when the audited lower bound is above the ``mode`` claim (a violated claim)."""
        return self.bound.epsilon_lb > self.claimed[mode]

    def to_dict(self) -> dict:
        return {"name": self.name, "trials": self.trials, "claimed": dict(self.claimed),
                "neighbour": self.neighbour, "view": self.view, "seconds": self.seconds,
                "info": dict(self.info), **self.bound.to_dict()}


def audit(mechanism, statistic, *, key: jax.Array, trials: int, delta: float,
          confidence: float = 0.95, batch_size: int = 4096, name: str = "mechanism",
          claimed: dict | None = None, neighbour: str = "", view: str = "",
          info: dict | None = None, **bound_kwargs) -> AuditResult:
    """Samples scores (:func:`sample_scores`) and bounds epsilon at ``delta``.

    Extra keyword arguments go to :func:`jaxfl.audit.bounds.epsilon_lower_bound`.
    """
    delta = validate.non_negative("delta", delta)
    t0 = time.time()
    pos, neg = sample_scores(mechanism, statistic, key=key, trials=trials, batch_size=batch_size)
    bound = bounds.epsilon_lower_bound(pos, neg, delta=delta, confidence=confidence,
                                       **bound_kwargs)
    return AuditResult(name=name, bound=bound, trials=int(trials),
                       claimed={k: float(v) for k, v in (claimed or {}).items()},
                       neighbour=neighbour, view=view, seconds=time.time() - t0,
                       info=dict(info or {}))


__all__ = ["AuditResult", "audit", "sample_scores", "select"]
