"""Canary audit of user-level DP-FedAvg (:mod:`jaxfl.algorithms.dp_fedavg`).

Neighbouring relation: add/remove one client (all its data). The adversary is the server (or
anyone who sees the model sequence): its view is the global model after every round.

The audit runs the library's own ``dp_fedavg(...).apply`` (not a re-implementation) on a
worst-case federation built for the attack (Nasr et al. 2021, "Adversary instantiation"):

* model: least squares ``w . x`` without bias, so a client whose examples are all zero has a
  zero gradient and a zero update;
* the canary client (index 0) holds one example ``x = e_0, y = target`` with a huge target, so
  its local update points along ``+e_0`` and is clipped to norm exactly ``C`` every round;
* every other client holds zero examples (they participate and contribute exactly zero);
* D' is the same federation with the canary client removed (no examples, never valid).

Participation is Poisson with rate q, drawn inside jit per trial and round (the same law as
the engine's host-side sampler). Round t of the trajectory moves ``w_0`` by
``(1[canary sampled] C + N(0, sigma^2 C^2)) * lr_server / (q N)``, so the normalised
increments ``z_t`` are i.i.d. ``N(0, 1)`` under D' and ``(1 - q) N(0, 1) + q N(1/sigma, 1)``
under D: the exact likelihood-ratio statistic is
:func:`jaxfl.audit.statistics.subsampled_gaussian_llr`. The claim is the accountant's epsilon
of ``algorithm.accountant.dp_event(rounds)`` (PLD and RDP) at the same delta.

Example Usage:
  >>> import jax
  >>> r = audit_dp_fedavg(noise_multiplier=1.0, sampling_rate=1.0, rounds=1, trials=2000,
  ...                     delta=1e-2, key=jax.random.key(2))
  >>> r.epsilon_lb <= r.claimed["strict"]
  True
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxfl import validate
from jaxfl.accounting import accountants
from jaxfl.algorithms import base, dp_fedavg
from jaxfl.audit import canary, statistics
from jaxfl.data import federated
from jaxfl.models import Model


def least_squares_model(dim: int) -> Model:
    """``y ~ w . x`` with squared error and no bias: all-zero examples give zero gradients."""
    dim = validate.positive_int("dim", dim)

    def init(key):
        del key  # unused: the audit starts from w = 0
        return {"w": jnp.zeros((dim,), jnp.float32)}

    def apply(params, x, *, train=False, key=None):
        del train, key  # deterministic
        return x.reshape(x.shape[0], -1) @ params["w"]

    def loss(out, y):
        return 0.5 * (out - y) ** 2

    def metrics(out, y):
        return {"loss": loss(out, y)}

    return Model("audit_least_squares", init, apply, loss, metrics, (dim,))


def canary_federation(*, num_clients: int, dim: int, target: float = 1e4):
    """``(data_d, data_dprime)``: the worst-case federation with / without the canary client."""
    num_clients = validate.positive_int("num_clients", num_clients, minimum=2)
    x = np.zeros((num_clients, 1, dim), np.float32)
    y = np.zeros((num_clients, 1), np.float32)
    x[0, 0, 0] = 1.0
    y[0, 0] = target
    mask = np.ones((num_clients, 1), bool)
    counts = np.ones((num_clients,), np.int32)
    data_d = federated.FederatedData(x=x, y=y, mask=mask, num_examples=counts).validate()
    mask_p = mask.copy()
    mask_p[0] = False
    counts_p = counts.copy()
    counts_p[0] = 0
    data_dp = federated.FederatedData(x=x, y=y, mask=mask_p, num_examples=counts_p).validate()
    return data_d, data_dp


def audit_dp_fedavg(*, noise_multiplier: float, sampling_rate: float, rounds: int,
                    trials: int, delta: float, key: jax.Array, num_clients: int = 8,
                    clip_norm: float = 1.0, server_lr: float = 1.0, dim: int = 2,
                    confidence: float = 0.95, batch_size: int = 4096,
                    accountant: str = "pld") -> canary.AuditResult:
    """Audits ``dp_fedavg`` over ``rounds`` rounds; see the module docstring.

    Args:
      noise_multiplier: sigma of the algorithm.
      sampling_rate: Poisson client participation rate q.
      rounds: rounds per trial (the view is the whole model trajectory).
      trials: trials per hypothesis.
      delta: delta of the bound and of the claimed epsilon.
      key: typed PRNG key of the audit.
      num_clients: clients N (the canary plus N - 1 zero clients).
      clip_norm: C.
      server_lr: server SGD learning rate.
      dim: model dimension (coordinates other than 0 carry only noise).
      confidence: confidence of the Clopper-Pearson bound.
      batch_size: trials vmapped together.
      accountant: accountant of the claim ("pld" or "rdp").

    Returns:
      An :class:`~jaxfl.audit.canary.AuditResult` with ``claimed = {"strict": eps}``.
    """
    rounds = validate.positive_int("rounds", rounds)
    delta = validate.delta(delta)
    q = validate.probability("sampling_rate", sampling_rate)
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    C = validate.positive("clip_norm", clip_norm)
    model = least_squares_model(dim)
    alg = dp_fedavg.dp_fedavg(model, num_clients=num_clients, local_steps=1, batch_size=None,
                              client_lr=1.0, clip_norm=C, noise_multiplier=sigma,
                              sampling_rate=q, server_opt=optax.sgd(server_lr))
    data_d, data_dp = canary_federation(num_clients=num_clients, dim=dim)
    data_d, data_dp = data_d.to_device(), data_dp.to_device()
    state0 = alg.init(model.init(jax.random.key(0)))
    indices = jnp.arange(num_clients, dtype=jnp.int32)

    def mechanism(k, present):
        data = canary.select(present, data_d, data_dp)

        def one_round(state, r):
            mask = jax.random.bernoulli(jax.random.fold_in(base.substream(k, "sample"), r), q,
                                        (num_clients,))
            state, _ = alg.apply(state, data, base.Cohort(indices, mask),
                                 jax.random.fold_in(k, r))
            return state, state.params["w"]

        _, trajectory = jax.lax.scan(one_round, state0, jnp.arange(rounds))
        return trajectory  # [rounds, dim]: the server's view

    scale = server_lr * alg.accountant.privatizer.std() / alg.info["denominator"]

    def statistic(trajectory):
        w0 = jnp.concatenate([jnp.zeros((1,), trajectory.dtype), trajectory[:, 0]])
        return llr(jnp.diff(w0))

    llr = statistics.subsampled_gaussian_llr(mu=1.0 / sigma, q=q, scale=scale)
    claimed = {"strict": accountants.epsilon(alg.accountant.dp_event(rounds), delta,
                                             accountant=accountant)}
    return canary.audit(
        mechanism, statistic, key=key, trials=trials, delta=delta, confidence=confidence,
        batch_size=batch_size, name="DP-FedAvg", claimed=claimed,
        neighbour="add/remove one client", view="global model after every round",
        info={"noise_multiplier": sigma, "sampling_rate": q, "rounds": rounds,
              "num_clients": num_clients, "clip_norm": C, "accountant": accountant,
              "statistic": "exact LLR of Poisson-subsampled Gaussian increments"})


__all__ = ["audit_dp_fedavg", "canary_federation", "least_squares_model"]
