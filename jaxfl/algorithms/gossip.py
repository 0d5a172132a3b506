"""DP gossip averaging and DP-GossipAvg training (Koskela & Kulkarni 2025, Eq. 3.1/3.5, Alg. 2).

* :func:`gossip_streams`: the non-adaptive object of the theory. Secure summation (SS, Eq. 3.1)
  ``θ_{t+1} = W_t (θ_t + x_t + u_t)``; plain messages (P, Eq. 3.5) ``θ_{t+1} = W_t θ_t + x_t +
  u_t``. One ``lax.scan``; every gossip step is a matrix product over the node axis.
* :func:`dp_gossip_avg` (App. F.3, Alg. 2): decentralized full-batch DP gradient descent. Node
  states are stacked on a leading axis [n, ...]; per round each node computes its sum of
  per-example gradients clipped to C, adds ``N(0, σ²C² I)``, steps
  ``w' = w - η (g + ξ) / B`` with a public normaliser B, then gossips ``w <- W w'``.
  With and without secure summation the training is identical; only the accounting differs
  (Thm. 3 vs Thm. 4 of Koskela & Kulkarni 2025: a message of one recursion is the state of the
  other, a round later): ``secure_summation`` only selects the accountant
  (:func:`gossip_accountant`: per node-pair ε from the pairwise sensitivities that the builder
  computes from its own W, :class:`jaxfl.accounting.gossip.PairwiseAccountant`).
* :func:`dp_fedavg_full_batch` (App. F.2, Alg. 1): the baseline, the same local step with
  noise multiplier σ/√n, then the server mean (trusted server / secure aggregation):
  ``μ = √T / σ`` over T rounds (App. F.2).

Privacy unit: one record of node j (add/remove); per-round sensitivity of node j's update is C,
i.e. 1 after dividing by ηC/B (App. F.3, Alg. 2). Noise comes from ``jax.random`` (not a CSPRNG;
research-grade).

Per-example gradients of multinomial logistic regression use the closed form
``(softmax(Θx̃) - y) x̃ᵀ`` whose norm is ``‖softmax - y‖ ‖x̃‖``, so clipped sums
are two matrix products; :func:`model_clipped_grad_sum` covers any :class:`jaxfl.models.Model`.
"""

# pylint: disable=invalid-name
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import clipping, ghost, layout, models, precision, tree, validate
from jaxfl import privatizer as jpriv
from jaxfl.accounting import gossip as gossip_accounting
from jaxfl.accounting import sampler as noise_sampler
from jaxfl.algorithms import base
from jaxfl.models import losses
from jaxfl.sensitivity import pairs as _pairs
from jaxfl.topology import mixing as _mixing

MODELS = ("ss", "p")


class GossipState(NamedTuple):
    """State of decentralized training."""

    params: Any        # pytree, leaves shape=[n, ...]: one model per node
    round: jax.Array   # shape=[], int32


class CentralState(NamedTuple):
    """State of the full-batch DP-FedAvg baseline."""

    params: Any        # pytree: the global model
    round: jax.Array   # shape=[], int32


def gossip_streams(W, x, u, *, model: str = "ss"):
    """Simulates gossip averaging of streams (Eq. 3.1 or 3.5) from ``θ_0 = 0``.

    Args:
      W: [n, n] or time-varying [T, n, n].
      x: data streams [T, n, ...]; u: noise [T, n, ...] (same shape).
      model: ``"ss"`` (secure summation) or ``"p"`` (plain messages).

    Returns:
      States ``θ_1..θ_T`` stacked as [T, n, ...].
    """
    validate.one_of("model", model, MODELS)
    x, u = jnp.asarray(x), jnp.asarray(u)
    if x.shape != u.shape or x.ndim < 2:
        raise validate.ShapeError(f"Expected x and u of equal shape [T, n, ...], got "
                                   f"{x.shape} and {u.shape}.")
    W = jnp.asarray(W, x.dtype)
    varying = W.ndim == 3

    def step(theta, xs):
        Wt, v = (xs[0], xs[1] + xs[2]) if varying else (W, xs[0] + xs[1])
        nxt = tree.mix(Wt, theta + v) if model == "ss" else tree.mix(Wt, theta) + v
        return nxt, nxt

    xs = (W[: x.shape[0]], x, u) if varying else (x, u)
    _, thetas = jax.lax.scan(step, jnp.zeros_like(x[0]), xs)
    return thetas


@precision.sensitive_function  # the norms and the clipped sum are matmuls: highest precision
def logreg_clipped_grad_sum(params, x, y, mask, *, clip_norm: float):
    """Sum of per-example clipped gradients of softmax logistic regression (closed form).

    Args:
      params: ``{"kernel": [d, k], "bias": [k]}``.
      x: [B, ...] (flattened to d); y: int labels [B]; mask: [B] (1 = real example).
      clip_norm: C.

    Returns:
      ``(grad_sum pytree like params, aux)`` with aux ``loss`` (masked mean cross-entropy) and
      ``clipped_fraction``.
    """
    xf = x.reshape(x.shape[0], -1).astype(params["kernel"].dtype)
    logits = xf @ params["kernel"] + params["bias"]
    k = logits.shape[-1]
    logp = jax.nn.log_softmax(logits)
    resid = jnp.exp(logp) - jax.nn.one_hot(y, k, dtype=logits.dtype)       # [B, k]
    norm = jnp.linalg.norm(resid, axis=1) * jnp.sqrt(jnp.sum(xf * xf, axis=1) + 1.0)
    factor = clipping.clip_factor(norm, clip_norm) * mask
    weighted = resid * factor[:, None]
    grads = {"kernel": xf.T @ weighted, "bias": jnp.sum(weighted, axis=0)}
    m = jnp.maximum(jnp.sum(mask), 1.0)
    loss = -jnp.sum(jnp.take_along_axis(logp, y[:, None], axis=1)[:, 0] * mask) / m
    return grads, {"loss": loss, "clipped_fraction": jnp.sum((norm > clip_norm) * mask) / m}


def model_clipped_grad_sum(model) -> Callable:
    """Clipped per-example gradient sum for any :class:`jaxfl.models.Model`
    (:func:`jaxfl.ghost.model_clipped_grad_sum`: ghost norms where the layers allow)."""

    def fn(params, x, y, mask, *, clip_norm):
        total, norms = ghost.model_clipped_grad_sum(model, params, x, y, mask,
                                                       clip_norm=clip_norm)
        m = jnp.maximum(jnp.sum(mask), 1.0)
        outs = model.apply(params, x)
        loss = jnp.sum(model.loss(outs, y) * mask) / m
        return total, {"loss": loss, "clipped_fraction": jnp.sum((norms > clip_norm) * mask) / m}

    return fn


def logreg_init(num_features: int, num_classes: int = 10, dtype=jnp.float32):
    """Zero initial parameters (the paper's common initialisation, App. F.3)."""
    return {"kernel": jnp.zeros((num_features, num_classes), dtype),
            "bias": jnp.zeros((num_classes,), dtype)}


def logreg_model(num_features: int, num_classes: int = 10) -> models.Model:
    """The softmax logistic regression of :func:`logreg_init`'s parameters as a
    :class:`jaxfl.models.Model` (inputs flattened), for the library's evaluation
    (:func:`jaxfl.training.make_classifier_eval`)."""

    def apply(params, x, train: bool = False, key=None):
        del train, key  # deterministic
        return x.reshape(x.shape[0], -1) @ params["kernel"] + params["bias"]

    return models.Model(name="gossip_logreg", init=lambda key: logreg_init(
        num_features, num_classes), apply=apply, loss=losses.softmax_cross_entropy,
        metrics=losses.classification_metrics, input_shape=(num_features,))


def _check_common(clip_norm, noise_multiplier, learning_rate, normalizer):
    """``(privatizer arguments {clip_norm: C, noise_multiplier: sigma}, lr, B)``, checked."""
    return ({"clip_norm": validate.positive("clip_norm", clip_norm),
             "noise_multiplier": validate.non_negative("noise_multiplier", noise_multiplier)},
            validate.positive("learning_rate", learning_rate, validate.JaxflValueError),
            validate.positive("normalizer", normalizer, validate.JaxflValueError))


def _noisy_local_step(params, grads, key, *, lr, privatizer: jpriv.Privatizer,
                      noise_multiplier, normalizer):
    """``w - lr (g + ξ) / B`` with ξ the node's noise, N(0, part_std² I)
    (:meth:`jaxfl.privatizer.Privatizer.add_share` at ``noise_multiplier``)."""
    noisy = privatizer.add_share(grads, key, noise_multiplier=noise_multiplier)
    return jax.tree.map(lambda w, g: w - (lr / normalizer) * g.astype(w.dtype), params, noisy)


def node_grads(grad_fn: Callable, clip_norm, shared: tuple, per_node: tuple):
    """``grad_fn(*shared, *node, clip_norm=C)`` of every node (axis 0 of ``per_node``'s
    leaves): one ``vmap`` over the nodes, or, under a device memory budget
    (:func:`jaxfl.layout.fit`) that the full node axis does not fit, a ``lax.map`` over chunks
    of vmapped nodes (the axis padded with empty nodes: zero records and mask). The per-node
    memory is measured once per ``grad_fn`` and shapes (:func:`jaxfl.layout.unit_memory`).
    Every node's result is computed alone, so the layout changes only float rounding.

    Raises:
      MemoryBudgetError: not even one node fits the budget.
    """
    n = int(jax.tree.leaves(per_node)[0].shape[0])

    def fn(*a):
        return grad_fn(*a, clip_norm=clip_norm)

    unit = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype), per_node)
    chunk = layout.fit(layout.resolve(layout.AUTO, "nodes"), "nodes", n,
                       lambda: layout.unit_memory(grad_fn, fn, shared, unit))
    vm = jax.vmap(fn, in_axes=(None,) * len(shared) + (0,) * len(per_node))
    if chunk is None or chunk >= n:
        return vm(*shared, *per_node)
    m = -(-n // chunk)

    def chunked(a):
        a = jnp.pad(a, [(0, m * chunk - n)] + [(0, 0)] * (a.ndim - 1))
        return a.reshape(m, chunk, *a.shape[1:])

    out = jax.lax.map(lambda c: vm(*shared, *c), jax.tree.map(chunked, per_node))
    return jax.tree.map(lambda a: a.reshape(m * chunk, *a.shape[2:])[:n], out)


def gossip_round(params, data, key, *, mixing_matrix, privatizer: jpriv.Privatizer,
                 noise_multiplier, learning_rate, normalizer,
                 grad_fn: Callable = logreg_clipped_grad_sum):
    """One DP-GossipAvg round on node-stacked ``params`` (leaves [n, ...]); pure and traceable.

    Hyperparameters may be traced scalars, so a grid of learning rates or noise multipliers
    can be vmapped in one compilation. Node k clips to the privatizer's C and draws its noise
    of std ``σ C`` from ``fold_in(substream(key, "noise"), k)``.
    """
    n = mixing_matrix.shape[0]
    C = privatizer.clip_norm
    grads, aux = node_grads(grad_fn, C, (), (params, data.x, data.y,
                                             data.mask.astype(jnp.float32)))
    keys = base.client_keys(base.substream(key, "noise"), jnp.arange(n))
    local = jax.vmap(lambda p, g, k: _noisy_local_step(
        p, g, k, lr=learning_rate, privatizer=privatizer, noise_multiplier=noise_multiplier,
        normalizer=normalizer))(params, grads, keys)
    return tree.mix(mixing_matrix, local), {"train_loss": jnp.mean(aux["loss"]),
                                       "clipped_fraction": jnp.mean(aux["clipped_fraction"])}


def fedavg_round(params, data, key, *, num_nodes: int, privatizer: jpriv.Privatizer,
                 noise_multiplier, learning_rate, normalizer,
                 grad_fn: Callable = logreg_clipped_grad_sum):
    """One full-batch DP-FedAvg round (Alg. 1) on the global ``params``; pure and traceable.

    Node k adds one of the privatizer's ``n`` shares, std ``σ C / √n``, from
    ``fold_in(substream(key, "noise"), k)``.
    """
    n = num_nodes
    C = privatizer.clip_norm
    grads, aux = node_grads(grad_fn, C, (params,), (data.x, data.y,
                                                   data.mask.astype(jnp.float32)))
    keys = base.client_keys(base.substream(key, "noise"), jnp.arange(n))
    local = jax.vmap(lambda g, k: _noisy_local_step(
        params, g, k, lr=learning_rate, privatizer=privatizer,
        noise_multiplier=noise_multiplier, normalizer=normalizer))(grads, keys)
    return jax.tree.map(lambda a: jnp.mean(a, axis=0), local), {
        "train_loss": jnp.mean(aux["loss"]), "clipped_fraction": jnp.mean(aux["clipped_fraction"])}


def _check_gossip_mixing(W) -> np.ndarray:
    """W [n, n] or a time-varying stack [T, n, n]: row-stochastic (averaging), >= 0."""
    if hasattr(W, "toarray"):
        W = W.toarray()
    return _mixing.validate_mixing(W, row_stochastic=True, connected=False, time_varying=True)


def pair_table(mixing_matrix, *, secure_summation: bool = True) -> _pairs.PairTable:
    """The pairwise sensitivity table DP-GossipAvg is accounted with: Thm 3's view (tm3,
    closed neighbourhood of the target) with secure summation, Thm 4's (tm4) without."""
    W = _check_gossip_mixing(mixing_matrix)
    return _pairs.PairTable(W, "tm3" if secure_summation else "tm4")


def _checked_table(W: np.ndarray, table, secure_summation: bool) -> _pairs.PairTable:
    """``table`` verified against W (same matrix, the view of ``secure_summation``)."""
    view = "tm3" if secure_summation else "tm4"
    if table is None:
        return _pairs.PairTable(W, view)
    if not isinstance(table, _pairs.PairTable):
        raise validate.JaxflValueError(
            f"Expected sensitivities to be a jaxfl.sensitivity.PairTable, got "
            f"{type(table).__name__}.")
    if table.sparse or table.W.shape != W.shape or not np.array_equal(table.W, W):
        raise validate.PrivacyParameterError(
            "The given sensitivities were computed for another mixing matrix than the one "
            "the algorithm gossips with.")
    if table.view != view or table.known_noise != "observer" or \
            table.observers.size != W.shape[-1] or table.targets.size != W.shape[-1]:
        raise validate.PrivacyParameterError(
            f"Expected all-pairs sensitivities of view {view!r} (secure_summation="
            f"{secure_summation}) with the Sec. 3.5 correction, got view {table.view!r}.")
    return table


def gossip_accountant(table: _pairs.PairTable, *, noise_multiplier: float,
                      secure_summation: bool = True, curve_horizons=None,
                      paper_curve_horizons=None) -> gossip_accounting.PairwiseAccountant:
    """Per node-pair accountant of DP-GossipAvg on ``table``'s mixing matrix.

    * Secure summation (Thm 3, view tm3): ``strict`` = certified sensitivities
      (``min(Σ|M|, T λ_max, T)``, valid for vector-valued updates); ``paper`` (all-ones
      pattern of App. B, ``sound=False``).
    * Plain messages: ``strict`` = LDP (``Δ² = T``, the only bound certified for adaptive
      plain-message training, see :mod:`jaxfl.sensitivity.views`); ``paper`` = Thm 4 (tm4, all-ones
      pattern, ``sound=False``).
    """
    n = table.num_nodes
    spec = _noise_spec(noise_multiplier)
    paper = gossip_accounting.PairwiseAccountant(
        table.fn("paper"), noise_multiplier=noise_multiplier, view=table.view,
        sensitivity_mode="paper", observers=table.observers, targets=table.targets,
        mode="paper", sound=False, curve_horizons=paper_curve_horizons or curve_horizons
    ).derive(noise_spec=spec)
    if secure_summation:
        return gossip_accounting.PairwiseAccountant(
            table.fn("certified"), noise_multiplier=noise_multiplier, view=table.view,
            sensitivity_mode="certified", observers=table.observers, targets=table.targets,
            curve_horizons=curve_horizons, alternatives={"paper": paper}).derive(noise_spec=spec)
    return gossip_accounting.ldp_accountant(
        noise_multiplier=noise_multiplier, num_nodes=n, observers=table.observers,
        targets=table.targets, curve_horizons=curve_horizons,
        alternatives={"paper": paper}).derive(noise_spec=spec)


def _noise_spec(noise_multiplier) -> noise_sampler.NoiseSpec | None:
    """Truncation: each round the target's clipped gradient sum (sensitivity C) leaves the node
    with its own N(0, sigma^2 C^2) noise; every view is a post-processing of those releases
    (and of other nodes' independent ones): r = 1 / sigma, one release per round."""
    if not noise_multiplier > 0:
        return None
    return noise_sampler.NoiseSpec(
        ratio=1.0 / float(noise_multiplier), releases_per_round=1,
        note="the target's own noised gradient per round (sensitivity C, std sigma C)")


def calibrated_noise_multiplier(table: _pairs.PairTable, *, secure_summation: bool,
                                mode: str, target_epsilon: float, rounds: int, delta: float,
                                statistic: str = "mean") -> float:
    """σ at which :func:`gossip_accountant`'s ``mode`` (``strict`` or ``paper``) meets
    ``target_epsilon`` for the mean (the paper's Fig. 3 aggregate) or max pairwise ε after
    ``rounds`` rounds."""
    validate.one_of("mode", mode, ("strict", "paper"))
    acc = gossip_accountant(table, noise_multiplier=1.0, secure_summation=secure_summation)
    acc = acc if mode == "strict" else acc.other_modes()["paper"]
    return acc.noise_for(target_epsilon, rounds=rounds, delta=delta, statistic=statistic)


def view_accountant(table: _pairs.PairTable, *, noise_multiplier: float, curve_horizons=None,
                    paper_curve_horizons=None) -> gossip_accounting.PairwiseAccountant:
    """Accountant of one view (a privacy study, the paper's Figs. 1-2): ``strict`` = the view's
    certified sensitivities (``sound=False`` for Thm 4's reduction),
    ``paper`` = the all-ones pattern (``sound=False``)."""
    kw = dict(noise_multiplier=noise_multiplier, view=table.view, observers=table.observers,
              targets=table.targets)
    paper = gossip_accounting.PairwiseAccountant(
        table.fn("paper"), sensitivity_mode="paper", mode="paper", sound=False,
        curve_horizons=paper_curve_horizons or curve_horizons, **kw)
    return gossip_accounting.PairwiseAccountant(
        table.fn("certified"), sensitivity_mode="certified", curve_horizons=curve_horizons,
        alternatives={"paper": paper}, **kw)


def dp_gossip_avg(*, mixing_matrix, clip_norm: float, noise_multiplier: float,
                  learning_rate: float, normalizer: float, secure_summation: bool = True,
                  grad_fn: Callable = logreg_clipped_grad_sum,
                  sensitivities: _pairs.PairTable | None = None,
                  eval_node: int = 0, model: models.Model | None = None) -> base.Algorithm:
    """DP-GossipAvg (Alg. 2): decentralized full-batch DP-GD with gossip averaging.

    Args:
      mixing_matrix: W [n, n] or a time-varying stack [T, n, n] (round t mixes with W_t;
        row-stochastic; the paper's MNIST run uses ``closed_neighbourhood``). Given once: the
        accountant's pairwise sensitivities are computed from it.
      clip_norm: per-example clip norm C. noise_multiplier: σ (per node, per round).
      learning_rate: η. normalizer: public B dividing the noisy clipped sum (nominal shard
        size; the paper does not say).
      secure_summation: the communication model, i.e. the accounting (training is the same):
        see :func:`gossip_accountant`.
      grad_fn: ``(params, x, y, mask, *, clip_norm) -> (grad_sum, aux)`` for one node.
      sensitivities: optional precomputed :func:`pair_table` (shared between runs of the
        same W); verified against ``mixing_matrix``.
      eval_node: node whose model ``params_of`` returns (the paper evaluates a random node).
      model: the :class:`jaxfl.models.Model` that ``grad_fn`` differentiates (e.g.
        :func:`logreg_model`), or None: with it, :func:`jaxfl.algorithms.base.check_run_data`
        also checks the examples' shape and the labels against the model's classes.

    Returns:
      A :class:`jaxfl.algorithms.base.Algorithm` with traced hparams ``learning_rate`` and
      ``noise_multiplier``; ``init`` takes one model and copies it to every node; ``data`` is
      a :class:`~jaxfl.data.FederatedData` with one client per node.
    """
    mechanism, lr, B = _check_common(clip_norm, noise_multiplier, learning_rate, normalizer)
    W = _check_gossip_mixing(mixing_matrix)
    n = W.shape[-1]
    eval_node = validate.positive_int("eval_node", eval_node, minimum=0)
    if eval_node >= n:
        raise validate.TopologyError(f"Expected eval_node < {n}, got {eval_node}.")
    table = _checked_table(W, sensitivities, secure_summation)
    priv = jpriv.gaussian(**mechanism)  # one per node: C and sigma, stated once
    accountant = gossip_accountant(table, noise_multiplier=priv.noise_multiplier,
                                   secure_summation=secure_summation).for_mechanism(priv)
    Wj = jnp.asarray(W, jnp.float32)
    defaults = {"learning_rate": lr, "noise_multiplier": priv.noise_multiplier}
    spec = base.DataSpec("clients", (("nodes", n),), model)

    def init(params):
        stacked = jax.tree.map(lambda a: jnp.broadcast_to(a, (n,) + jnp.shape(a)), params)
        return GossipState(stacked, jnp.zeros((), jnp.int32))

    def apply(state, data, round_input, key, hparams=None):
        del round_input  # unused: every node participates every round
        base.check_sizes(spec, data, "dp_gossip_avg")  # static: one node per row of W
        hp = base.resolve_hparams(defaults, hparams, accountant)
        Wt = Wj if Wj.ndim == 2 else jnp.take(Wj, state.round, axis=0, mode="clip")
        params, diag = gossip_round(state.params, data, key, mixing_matrix=Wt, privatizer=priv,
                                    noise_multiplier=hp["noise_multiplier"],
                                    learning_rate=hp["learning_rate"], normalizer=B,
                                    grad_fn=grad_fn)
        return GossipState(params, state.round + 1), diag

    return base.Algorithm(
        name="dp_gossip_avg", init=init, prepare=lambda r, rng: None, apply=apply,
        params_of=lambda s: jax.tree.map(lambda a: a[eval_node], s.params),
        hparams=defaults,
        accountant=accountant,
        data_spec=spec,
        info={**priv.hparams, "learning_rate": lr, "normalizer": B,
              "num_nodes": n, "secure_summation": bool(secure_summation),
              "view": table.view, "time_varying": W.ndim == 3,
              "sensitivity_mode": accountant.sensitivity_mode,
              "neighbouring_relation": "add/remove one record of one node (pairwise)"})


def dp_fedavg_full_batch(*, num_nodes: int, clip_norm: float, noise_multiplier: float,
                         learning_rate: float, normalizer: float,
                         grad_fn: Callable = logreg_clipped_grad_sum,
                         model: models.Model | None = None) -> base.Algorithm:
    """Full-batch DP-FedAvg with record-level DP (App. F.2, Alg. 1), the paper's baseline.

    Each node takes one DP-GD step from the global model with noise multiplier σ/√n; the
    server averages. Aggregate noise multiplier σ on sensitivity C: ``μ = √T / σ``. Traced
    hparams ``learning_rate`` and ``noise_multiplier``. ``model``: as in :func:`dp_gossip_avg`.
    """
    n = validate.positive_int("num_nodes", num_nodes)
    mechanism, lr, B = _check_common(clip_norm, noise_multiplier, learning_rate, normalizer)
    priv = jpriv.per_unit(**mechanism, parts=n)  # a share per node: C and sigma, stated once
    accountant = gossip_accounting.fedavg_accountant(
        noise_multiplier=priv.noise_multiplier).for_mechanism(priv)
    defaults = {"learning_rate": lr, "noise_multiplier": priv.noise_multiplier}

    def init(params):
        return CentralState(params, jnp.zeros((), jnp.int32))

    spec = base.DataSpec("clients", (("nodes", n),), model)

    def apply(state, data, round_input, key, hparams=None):
        del round_input  # unused
        base.check_sizes(spec, data, "dp_fedavg_full_batch")  # static: one row per node
        hp = base.resolve_hparams(defaults, hparams, accountant)
        params, diag = fedavg_round(state.params, data, key, num_nodes=n, privatizer=priv,
                                    noise_multiplier=hp["noise_multiplier"],
                                    learning_rate=hp["learning_rate"], normalizer=B,
                                    grad_fn=grad_fn)
        return CentralState(params, state.round + 1), diag

    return base.Algorithm(
        name="dp_fedavg_full_batch", init=init, prepare=lambda r, rng: None, apply=apply,
        params_of=lambda s: s.params, hparams=defaults, accountant=accountant,
        data_spec=spec,
        info={**priv.hparams, "learning_rate": lr, "normalizer": B,
              "num_nodes": n, "neighbouring_relation": "add/remove one record"})


def train_scan(algorithm: base.Algorithm, state, data, key: jax.Array, rounds: int):
    """Runs ``rounds`` rounds inside one jitted ``lax.scan`` (keys ``fold_in(key, r)``).

    Returns ``(state, diagnostics stacked over rounds)``. For algorithms whose ``prepare``
    returns None (both algorithms of this module).
    """
    rounds = validate.positive_int("rounds", rounds)

    @jax.jit
    def run(state, data, key):
        def body(s, r):
            return algorithm.apply(s, data, None, jax.random.fold_in(key, r))

        return jax.lax.scan(body, state, jnp.arange(rounds))

    return run(state, data, key)


def _example(*, kind: str = "gossip", **hparams):
    from jaxfl.algorithms import registry
    from jaxfl.data import federated
    from jaxfl.topology import graphs

    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16).astype(np.int32)
    data = federated.from_partition(x, y, [np.arange(4 * k, 4 * k + 4) for k in range(4)])
    common = dict(clip_norm=1.0, normalizer=4.0, noise_multiplier=hparams.get(
        "noise_multiplier", 0.5), learning_rate=hparams.get("learning_rate", 0.5))
    W = _mixing.closed_neighbourhood(graphs.ring(4))
    if kind == "fedavg":
        return registry.Example(None, dp_fedavg_full_batch(num_nodes=4, **common), data,
                                logreg_init(6, 3))
    if kind == "model":
        model = models.get_model("logreg", num_classes=3, input_shape=(6,))
        alg = dp_gossip_avg(mixing_matrix=W, grad_fn=model_clipped_grad_sum(model), **common)
        return registry.Example(None, alg, data, model.init(jax.random.key(0)))
    alg = dp_gossip_avg(mixing_matrix=W, grad_fn=logreg_clipped_grad_sum, **common)
    return registry.Example(None, alg, data, logreg_init(6, 3))


def _register():
    import functools

    from jaxfl.algorithms import registry

    registry.register("gossip", _example, noise=registry.GAUSSIAN)
    registry.register("gossip_fedavg_round", functools.partial(_example, kind="fedavg"),
                      noise=registry.GAUSSIAN)
    registry.register("gossip_model_path", functools.partial(_example, kind="model"),
                      noise=registry.GAUSSIAN, variant=True)


_register()
