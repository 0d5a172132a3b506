"""DP-FedAvg with user-level DP (McMahan et al., ICLR 2018, "Learning differentially private
recurrent language models", Alg. 1 with the fixed-denominator estimator).

Each round: Poisson client sampling with rate q; every sampled client trains locally and clips
its model delta to L2 norm C; the server sums the clipped deltas, adds N(0, (sigma C)^2 I) and
divides by the *fixed* denominator q N (not the realised cohort size, which would make the
sensitivity data dependent); the result goes through the server optimizer.

Privacy: one round is a Poisson-subsampled Gaussian mechanism with noise multiplier sigma under
add/remove of one client (all of that client's data), so T rounds satisfy
``dp_sgd(noise_multiplier=sigma, sampling_rate=q, steps=T)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxfl import layout, privatizer, validate
from jaxfl import tree as jtree
from jaxfl.accounting import dp_ftrl as mf_accounting
from jaxfl.accounting import events, report
from jaxfl.algorithms import base, fedavg
from jaxfl.algorithms import cohort as cohorts


class AdaptiveClip(NamedTuple):
    """Adaptive clipping (Andrew et al., NeurIPS 2021, "Differentially private learning with
    adaptive clipping"): geometric update of the clip norm towards the ``target_quantile`` of
    the client update norms from a noisy count of unclipped clients.

    Each round: ``b_bar = (sum_i (1[|Delta_i| <= C_t] - 1/2) + N(0, count_noise^2)) / (q N)
    + 1/2`` and ``C_{t+1} = C_t exp(-lr (b_bar - target_quantile))``. The centred count has
    sensitivity 1/2, so it is a Gaussian with noise multiplier ``2 count_noise`` on the same
    cohort as the update (see :func:`jaxfl.accounting.dp_ftrl.adaptive_clip_round_event`).
    ``clip_norm`` of :func:`dp_fedavg` is the initial C_0.
    """

    target_quantile: float = 0.5
    lr: float = 0.2
    count_noise: float = 1.0


class AdaptiveClipState(NamedTuple):
    params: object
    opt_state: object
    round: jax.Array  # shape=(), int32
    clip_norm: jax.Array  # shape=(), float32: the clip norm of the next round


def adaptive_clip_update(clip, unclipped_count, valid_count, count_noise_draw, *,
                         target_quantile, lr, count_noise, denominator):
    """One step of the geometric clip update (pure; NumPy or JAX scalars).

    ``unclipped_count``: number of real clients with norm <= clip; ``valid_count``: real
    clients; ``count_noise_draw``: a standard normal draw. Returns ``(new_clip, b_bar)``."""
    xp = jnp if isinstance(clip, jax.Array) else np
    centred = unclipped_count - 0.5 * valid_count + count_noise * count_noise_draw
    b_bar = centred / denominator + 0.5
    return clip * xp.exp(-lr * (b_bar - target_quantile)), b_bar


def check_adaptive_clip(adaptive_clip) -> AdaptiveClip:
    """Validates an :class:`AdaptiveClip` (clear error before any work)."""
    if not isinstance(adaptive_clip, AdaptiveClip):
        raise validate.JaxflValueError(
            f"Expected adaptive_clip to be an AdaptiveClip, got {adaptive_clip!r}.")
    validate.probability("target_quantile", adaptive_clip.target_quantile)
    validate.positive("lr", adaptive_clip.lr, validate.JaxflValueError)
    validate.positive("count_noise", adaptive_clip.count_noise)
    return adaptive_clip


def private_round(state, data, cohort, key, hp, *, clip, make_update, make_server_opt,
                  add_noise, denominator, client_batch, adaptive_clip, client_request=None):
    """One round of clipped, noised federated averaging: the ``apply`` DP-FedAvg and DP-FTRL
    share, which differ only in ``add_noise`` (their privatizer's draw).

    The cohort trains locally and its deltas are clipped to ``clip`` and summed
    (:func:`jaxfl.algorithms.cohort.clipped_sum`); ``add_noise(total, clip) -> (noisy,
    extra)`` privatizes the sum; the noisy sum over the fixed ``denominator`` goes through the
    server optimizer. With ``adaptive_clip`` the noisy unclipped count gives the next clip
    norm. ``client_request`` is the builder's ``client_batch`` request: ``"auto"`` narrows
    ``client_batch`` to the device's memory (:func:`jaxfl.algorithms.cohort.fit_layout`).
    Returns ``(ServerState, extra, next clip norm or None, diagnostics)``.
    """
    update = make_update(hp["client_lr"])
    client_batch = cohorts.fit_layout(client_request, client_batch, update, state.params, data,
                                      cohort, key, memory_key=make_update)
    total, aux, norms, valid = cohorts.clipped_sum(update, state.params, data, cohort, key,
                                                   clip, client_batch=client_batch)
    noisy, extra = add_noise(total, clip)
    mean_delta = jtree.scale(noisy, 1.0 / denominator)
    stepped = fedavg.server_step(
        make_server_opt(hp), fedavg.ServerState(state.params, state.opt_state, state.round),
        mean_delta)
    m = valid.astype(jnp.float32)
    diag = {"train_loss": jnp.sum(aux["loss"] * m) / jnp.maximum(m.sum(), 1.0),
            "cohort_size": m.sum(),
            "clipped_fraction": jnp.sum((norms > clip) * m) / jnp.maximum(m.sum(), 1.0)}
    new_clip = None
    if adaptive_clip is not None:
        draw = privatizer.standard_normal(base.substream(key, "clip_count"), ())
        new_clip, b_bar = adaptive_clip_update(
            clip, jnp.sum((norms <= clip) * m), m.sum(), draw,
            target_quantile=adaptive_clip.target_quantile, lr=adaptive_clip.lr,
            count_noise=adaptive_clip.count_noise, denominator=denominator)
        new_clip = new_clip.astype(jnp.float32)
        diag.update(clip_norm=clip, unclipped_estimate=b_bar)
    return stepped, extra, new_clip, diag


def check_user_level(model, *, clip_norm, noise_multiplier, client_lr, server_opt
                     ) -> dict[str, float]:
    """The checks of a user-level DP-FedAvg-style builder's common arguments (the model, C,
    sigma, the client step size, the server optimizer); returns the privatizer's arguments
    ``{"clip_norm": C, "noise_multiplier": sigma}``."""
    C = validate.positive("clip_norm", clip_norm)
    sigma = validate.positive("noise_multiplier", noise_multiplier)
    validate.positive("client_lr", client_lr, validate.JaxflValueError)
    base.check_model(model)
    if server_opt is not None:
        base.check_optimizer("server_opt", server_opt)
    return {"clip_norm": C, "noise_multiplier": sigma}


def round_hparams(state, data, hparams, *, defaults, accountant, num_clients: int,
                  adaptive_clip: AdaptiveClip | None):
    """The start of a user-level DP-FedAvg-style round: the data checked, the round's hparams
    (:func:`jaxfl.algorithms.base.resolve_hparams`) and its clip norm (the hparam, or with
    ``adaptive_clip`` the state's after the first round). Returns ``(hp, clip)``."""
    base.check_data(data, num_clients)
    hp = base.resolve_hparams(defaults, hparams, accountant)
    clip = hp["clip_norm"]
    if adaptive_clip is not None:
        clip = jnp.where(state.round == 0, clip, state.clip_norm)
    return hp, clip



class UserLevelParts(NamedTuple):
    """The parts a user-level DP-FedAvg-style builder shares (:func:`dp_fedavg`,
    :func:`jaxfl.algorithms.dp_ftrl.dp_ftrl`), from :func:`user_level_parts`."""

    defaults: dict  # the traceable hparams (Algorithm.hparams)
    make_server_opt: Any  # hp -> the server's optax.GradientTransformation
    make_update: Any  # lr -> one client's local training
    prepare: Any  # Poisson participation at the sampling rate (fedavg.round_parts)
    client_request: Any  # the builder's client_batch request
    client_batch: Any  # the resolved cohort layout


def user_level_parts(model, priv, *, num_clients: int, sampling_rate: float, local_steps: int,
                     batch_size: int | None, client_lr: float, sampling: str, server_opt,
                     server_lr: float, client_batch, extra_hparams: dict | None = None
                     ) -> UserLevelParts:
    """The server optimizer (:func:`jaxfl.algorithms.fedavg.server_optimizer`), the traceable
    hparams (``client_lr``, the privatizer's C and sigma, ``extra_hparams``, ``server_lr``),
    local training and participation (:func:`jaxfl.algorithms.fedavg.round_parts`) and the
    cohort layout (:func:`jaxfl.layout.resolve`) of a user-level private builder."""
    server_defaults, make_server_opt = fedavg.server_optimizer(server_opt, server_lr)
    defaults = {"client_lr": float(client_lr), **priv.hparams, **(extra_hparams or {}),
                **server_defaults}
    make_update, prepare = fedavg.round_parts(model, num_clients=num_clients,
                                              sampling_rate=sampling_rate,
                                              local_steps=local_steps, batch_size=batch_size,
                                              client_lr=client_lr, sampling=sampling)
    return UserLevelParts(defaults, make_server_opt, make_update, prepare, client_batch,
                          layout.resolve(client_batch, "cohort"))


def clients_spec(model, num_clients: int) -> base.DataSpec:
    """The data a user-level builder's ``apply`` reads: ``num_clients`` rows (trailing padded
    clients allowed) fitting ``model``."""
    return base.DataSpec("clients", (("clients", num_clients),), model, padded_clients=True)


def dp_fedavg(model, *, num_clients: int, local_steps: int, batch_size: int | None,
              client_lr: float, clip_norm: float, noise_multiplier: float,
              sampling_rate: float, server_opt: optax.GradientTransformation | None = None,
              sampling: str = "shuffle", server_lr: float = 1.0,
              client_batch: int | str | None = "auto",
              adaptive_clip: AdaptiveClip | None = None) -> base.Algorithm:
    """User-level DP-FedAvg. See module docstring; arguments as in :func:`fedavg.fedavg` plus
    ``clip_norm`` (C), ``noise_multiplier`` (sigma) and ``sampling_rate`` (q). ``client_batch``
    is the cohort axis' layout (:func:`jaxfl.layout.resolve`; ``"auto"`` by default): chunks
    are trained and clipped that many clients at a time
    (:func:`jaxfl.algorithms.cohort.train_and_sum`).

    Traceable hyperparameters (``Algorithm.hparams``): ``client_lr``, ``clip_norm``,
    ``noise_multiplier``, ``sampling_rate`` (the Poisson rate of ``prepare`` and the fixed
    denominator q N of ``apply``) and, with the default server optimizer, ``server_lr``. The
    accountant is built from the builder's privatizer (C, sigma) and q, and ``apply`` refuses
    other values of those three (:func:`jaxfl.algorithms.base.resolve_hparams`): a sweep
    point is built with its own values and reports its own epsilon.

    ``adaptive_clip``: an :class:`AdaptiveClip` makes the clip norm part of the server state
    (:class:`AdaptiveClipState`, starting at ``clip_norm``) and adds the noisy count's cost to
    the accountant (the update's and the count's Gaussians composed on each cohort). The
    traced ``clip_norm`` hparam is then the initial clip norm only.
    """
    num_clients = validate.positive_int("num_clients", num_clients)
    q = validate.probability("sampling_rate", sampling_rate)
    priv = privatizer.gaussian(**check_user_level(
        model, clip_norm=clip_norm, noise_multiplier=noise_multiplier, client_lr=client_lr,
        server_opt=server_opt))  # C and sigma: read from the privatizer below
    parts = user_level_parts(model, priv, num_clients=num_clients, sampling_rate=q,
                             local_steps=local_steps, batch_size=batch_size,
                             client_lr=client_lr, sampling=sampling, server_opt=server_opt,
                             server_lr=server_lr, client_batch=client_batch,
                             extra_hparams={"sampling_rate": q})
    defaults, make_server_opt = parts.defaults, parts.make_server_opt
    capacity = base.poisson_capacity(num_clients, q)
    denominator = q * num_clients
    if adaptive_clip is None:
        round_event = events.poisson_gaussian(sampling_rate=q,
                                              noise_multiplier=priv.noise_multiplier)
    else:
        check_adaptive_clip(adaptive_clip)
        round_event = mf_accounting.adaptive_clip_round_event(
            sampling_rate=q, noise_multiplier=priv.noise_multiplier,
            count_noise=adaptive_clip.count_noise)

    accountant = report.EventAccountant.repeating(round_event, unit="client").for_mechanism(
        priv, sampling_rate=q)

    def init(params):
        opt = make_server_opt(defaults)
        if adaptive_clip is not None:
            return AdaptiveClipState(params, opt.init(params), jnp.zeros((), jnp.int32),
                                     jnp.asarray(priv.clip_norm, jnp.float32))
        return fedavg.ServerState(params, opt.init(params), jnp.zeros((), jnp.int32))

    def apply(state, data, cohort, key, hparams=None):
        hp, clip = round_hparams(state, data, hparams, defaults=defaults, accountant=accountant,
                                 num_clients=num_clients, adaptive_clip=adaptive_clip)
        add_noise = lambda total, clip: (  # noqa: E731  (i.i.d. Gaussian, std sigma C)
            priv.add_noise(total, base.substream(key, "noise"), hp, clip=clip), None)
        new_state, _, new_clip, diag = private_round(
            state, data, cohort, key, hp, clip=clip, make_update=parts.make_update,
            make_server_opt=make_server_opt, add_noise=add_noise,
            denominator=hp["sampling_rate"] * num_clients, client_batch=parts.client_batch,
            client_request=parts.client_request, adaptive_clip=adaptive_clip)
        if adaptive_clip is not None:
            new_state = AdaptiveClipState(*new_state, new_clip)
        return new_state, diag

    return base.Algorithm(
        name="dp_fedavg", init=init, prepare=parts.prepare, apply=apply,
        params_of=lambda s: s.params, accountant=accountant,
        info={"sampling_rate": q, **priv.hparams,
              "denominator": denominator, "capacity": capacity,
              "neighbouring_relation": "add/remove one client",
              **({} if adaptive_clip is None else {"adaptive_clip": adaptive_clip._asdict()})},
        hparams=defaults, data_spec=clients_spec(model, num_clients))



# ---------------------------------------------------------------------------------------------
# The registered example (jaxfl.algorithms.registry; the conformance suite checks it).
# ---------------------------------------------------------------------------------------------


def _example(*, adaptive: bool = False, cnn: bool = False, client_batch="auto", **hparams):
    from jaxfl.algorithms import registry

    model = registry.cnn() if cnn else registry.logreg()
    kw = dict(client_lr=0.3, clip_norm=0.5, noise_multiplier=1.0, sampling_rate=0.5,
              server_lr=1.0) | hparams
    alg = dp_fedavg(model, num_clients=6, local_steps=2, batch_size=3, client_batch=client_batch,
                    adaptive_clip=AdaptiveClip(0.5, 0.3, 0.5) if adaptive else None, **kw)
    return registry.Example(model, alg, registry.images(model) if cnn else registry.blobs())


def _register():
    import functools

    from jaxfl.algorithms import registry

    registry.register("dp_fedavg", _example, noise=registry.GAUSSIAN)
    registry.register("dp_fedavg_adaptive_clip", functools.partial(_example, adaptive=True),
                      noise=registry.GAUSSIAN)
    registry.register("dp_fedavg_client_batch", functools.partial(_example, client_batch=2),
                      noise=registry.GAUSSIAN, variant=True)
    registry.register("dp_fedavg_cnn", functools.partial(_example, cnn=True),
                      noise=registry.GAUSSIAN, variant=True)  # conv local training


_register()


__all__ = ["dp_fedavg", "private_round", "AdaptiveClip", "check_adaptive_clip", "AdaptiveClipState",
           "adaptive_clip_update", "check_user_level", "round_hparams", "UserLevelParts",
           "user_level_parts", "clients_spec"]
