"""Host-side participation samplers and static-shape cohorts.

Each round the server picks a cohort of clients. The samplers are frozen dataclasses with
public fields (the DP-relevant choice is visible and hashable, as in jax_privacy's
``batch_selection``), drawing from an explicit ``np.random.Generator``:

* :class:`Poisson` (``rate`` q): every client joins independently with probability q -- the
  scheme that DP-FedAvg's amplification-by-sampling accounting assumes. The cohort size is
  Binomial(N, q), so it varies from round to round.
* :class:`FixedSize` (``size`` k): k distinct clients uniformly without replacement.
* :class:`Full`: every client, every round.

jit wants static shapes, so the engine gathers the participants into a padded cohort of fixed
``capacity``. :meth:`Poisson.capacity` is the smallest m with ``P(Binomial(N, q) > m) < tail``
(the Binomial upper quantile, default tail 1e-12), and :func:`cohort_indices` pads the
realised cohort to it with index 0 and ``valid=False``. If a realised Poisson cohort is ever
larger than the capacity (probability < tail per round), :func:`cohort_indices` returns a
cohort of capacity N instead: the result is exact -- no participant is dropped, so the
accounting stays valid -- at the cost of one extra compilation for the larger shape.

Example Usage:
  >>> rng = np.random.default_rng(0)
  >>> sampler = Poisson(rate=0.1)
  >>> mask = sampler.sample(rng, 100)
  >>> idx, valid = cohort_indices(mask, sampler.capacity(100))
  >>> idx.shape == valid.shape and int(valid.sum()) == int(mask.sum())
  True
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats

from jaxfl import validate


def _generator(rng) -> np.random.Generator:
    return validate.generator(rng, "use jaxfl.random.host_rng(seed, 'sample', round)")


def _num_clients(num_clients) -> int:
    return validate.positive_int("num_clients", num_clients)


def _tail(tail) -> float:
    tail = validate.positive("tail", tail, validate.JaxflValueError)
    if tail >= 1:
        raise validate.JaxflValueError(f"Expected tail in (0, 1), got tail={tail!r}.")
    return tail


@dataclasses.dataclass(frozen=True)
class Poisson:
    """Each client participates independently with probability ``rate``.

    Attributes:
      rate: the per-client inclusion probability q in (0, 1].
    """

    rate: float

    def __post_init__(self):
        validate.probability("rate", self.rate)

    def sample(self, rng: np.random.Generator, num_clients: int) -> np.ndarray:
        """Participation mask, bool ``[num_clients]``."""
        n = _num_clients(num_clients)
        return _generator(rng).random(n) < self.rate

    def inclusion_probability(self, num_clients: int) -> float:
        del num_clients  # unused: q does not depend on N
        return float(self.rate)

    def expected_size(self, num_clients: int) -> float:
        return float(self.rate) * _num_clients(num_clients)

    def capacity(self, num_clients: int, tail: float = 1e-12) -> int:
        """Smallest m with ``P(Binomial(num_clients, rate) > m) < tail`` (at most N)."""
        return binomial_capacity(_num_clients(num_clients), float(self.rate), _tail(tail))


def binomial_capacity(n: int, q: float, tail: float = 1e-12) -> int:
    """Smallest m with ``P(Binomial(n, q) > m) < tail`` (at most n): the static size of a
    padded axis that a Poisson draw (n units, each with probability q) exceeds with probability
    below ``tail``. The one capacity formula of the library (cohorts, Poisson batches).

    >>> binomial_capacity(1000, 0.01), binomial_capacity(10, 1.0)
    (39, 10)
    """
    n, q = int(n), float(q)
    if q >= 1.0:
        return n
    m = int(min(max(stats.binom.isf(tail, n, q), 0), n))
    while m < n and stats.binom.sf(m, n, q) >= tail:  # guard the quantile's rounding
        m += 1
    while m > 0 and stats.binom.sf(m - 1, n, q) < tail:
        m -= 1
    return m


@dataclasses.dataclass(frozen=True)
class FixedSize:
    """Exactly ``size`` distinct clients per round, uniformly without replacement.

    Attributes:
      size: the cohort size k >= 1 (at most the number of clients).
    """

    size: int

    def __post_init__(self):
        validate.positive_int("size", self.size)

    def _check(self, num_clients) -> int:
        n = _num_clients(num_clients)
        if self.size > n:
            raise validate.JaxflValueError(
                f"Expected size <= num_clients, got size={self.size}, num_clients={n}.")
        return n

    def sample(self, rng: np.random.Generator, num_clients: int) -> np.ndarray:
        """Participation mask with exactly ``size`` True entries."""
        n = self._check(num_clients)
        mask = np.zeros(n, dtype=bool)
        mask[_generator(rng).choice(n, size=self.size, replace=False)] = True
        return mask

    def inclusion_probability(self, num_clients: int) -> float:
        return self.size / self._check(num_clients)

    def expected_size(self, num_clients: int) -> float:
        self._check(num_clients)
        return float(self.size)

    def capacity(self, num_clients: int, tail: float = 1e-12) -> int:
        del tail  # unused: the size is deterministic
        self._check(num_clients)
        return self.size


@dataclasses.dataclass(frozen=True)
class Full:
    """Every client participates in every round."""

    def sample(self, rng: np.random.Generator, num_clients: int) -> np.ndarray:
        _generator(rng)
        return np.ones(_num_clients(num_clients), dtype=bool)

    def inclusion_probability(self, num_clients: int) -> float:
        _num_clients(num_clients)
        return 1.0

    def expected_size(self, num_clients: int) -> float:
        return float(_num_clients(num_clients))

    def capacity(self, num_clients: int, tail: float = 1e-12) -> int:
        del tail  # unused
        return _num_clients(num_clients)


def cohort_indices(mask, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Gathers a participation mask into a padded cohort of static size.

    Args:
      mask: bool ``[num_clients]`` from a sampler.
      capacity: the static cohort size (e.g. ``sampler.capacity(num_clients)``).

    Returns:
      ``(indices, valid)``: int32 ``[C]`` participant indices in increasing order, padded
      with 0, and bool ``[C]`` marking real entries. ``C = capacity``, unless more than
      ``capacity`` clients participate: then ``C = num_clients`` so nobody is dropped (exact,
      not truncated; see the module docstring).
    """
    mask = np.asarray(mask)
    if mask.ndim != 1 or mask.dtype != np.bool_:
        raise validate.ShapeError(f"Expected a bool mask of shape [N], got {mask.dtype} "
                                   f"{mask.shape}.")
    capacity = validate.positive_int("capacity", capacity, minimum=0)
    chosen = np.flatnonzero(mask)
    if len(chosen) > capacity:
        capacity = len(mask)
    indices = np.zeros(capacity, dtype=np.int32)
    valid = np.zeros(capacity, dtype=bool)
    indices[: len(chosen)] = chosen
    valid[: len(chosen)] = True
    return indices, valid
