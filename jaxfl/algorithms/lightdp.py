"""LightDP-FL (Hong, Lin, Duan, arXiv 2412.06120, Sec. IV, Eqs. 7-9) and its baselines.

Every client ``i`` uploads its clipped local update plus individual noise and ``N - 1`` pairwise
terms (Eq. 7)::

    u~_i = clip(u_i, W) + n_i + sum_{j > i} r_ij - sum_{j < i} r_ji,
    n_i ~ N(0, sigma_U^2 I),   r_ij = sigma_K * N(0, I) drawn from key fold_in(s_ij, t),

where ``s_ij`` is the per-pair seed (``fold_in`` of a setup key by ``(min, max)`` in
simulation, or an X25519 + HKDF shared secret from :mod:`jaxfl.crypto.pairwise`) and ``t`` the
round. The server averages whatever arrives: pair terms between two uploaders cancel, pair terms
of an uploader with a straggler stay in the aggregate (Eq. 9)::

    w^(t) = w^(t-1) + (1 / (N - S)) sum_{i alive} (u_i + n_i + sum_{j straggler} sgn(j-i) r_ij).

Two bit-compatible ways of computing a round (same keys, same noise):

* ``path="aggregate"`` (default, fast): Eq. 9 directly, generating only the ``alive x straggler``
  pair terms (at most ``N * S_cap`` draws).
* ``path="faithful"``: all ``N (N - 1) / 2`` pair terms generated once each (one jit: a
  ``lax.scan`` over pair offsets, vmapped over clients, see :func:`pair_masks`) into the
  per-client masked uploads, then averaged over uploaders. :func:`client_mask` is the
  per-client protocol view (client ``i`` generating its own ``N - 1`` terms), used to test
  pair symmetry.

With ``fixed_point_bits=b`` every noise term and update is rounded to the dyadic grid
``2^-b`` before masking (the fixed-point encoding a deployment performs); in float64 all sums
of grid values are then exact, so pair terms cancel bit for bit.

Baselines (same training, same clipping, different noise; see
:func:`jaxfl.accounting.lightdp.design`): ``ldp`` (vanilla local DP, NbAFL style: sigma_K = 0),
``smpc_dp`` (dropout-tolerant secure aggregation: pairwise masks among the uploaders cancel,
per-client noise sigma_0^2 / (N - C_bar - S_bar)). HE + DP has SMPC + DP's maths and a different
cost, see :mod:`jaxfl.algorithms.lightdp_cost`.

Stragglers per round (``prepare``, host side): ``"design"`` draws S from the design's pmf
(uniform on {0..S_bar} by default) and a uniform S-subset; ``"bernoulli"`` drops every client's
upload independently with ``failure_prob`` (Fig. 4's link failures); ``"none"``.
Colluders never change training; they enter the noise design and :func:`colluder_view`.

Note: ``jax.random`` is not a CSPRNG; pair terms derived from it are research grade.
"""

# pylint: disable=invalid-name
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from jaxfl import clipping, layout, precision, validate
from jaxfl import privatizer as jpriv
from jaxfl.accounting import lightdp as acct
from jaxfl.algorithms import base, fedavg, local
from jaxfl.algorithms import cohort as cohorts

PATHS = ("aggregate", "faithful")
STRAGGLER_MODELS = ("design", "bernoulli", "none")
_CHUNK_ELEMENTS = 1 << 22  # noise elements generated per scan step


class RoundInput(NamedTuple):
    """One round's inputs: host-drawn stragglers (static shapes), noise scales and pair seeds.

    Noise scales and pair seeds are arguments rather than constants so that runs differing
    only in epsilon, C_bar or S_bar share one compiled round.
    """

    alive: np.ndarray  # shape=[N], dtype=bool: upload received
    straggler_idx: np.ndarray  # shape=[S_cap], dtype=int32: straggler ids (0 for padding)
    straggler_valid: np.ndarray  # shape=[S_cap], dtype=bool
    sigma_u: np.ndarray | float = 0.0  # shape=(), individual noise std
    pair_std: np.ndarray | float = 0.0  # shape=(), pairwise term std (sigma_K or SMPC masks)
    pair_keys: np.ndarray | None = None  # key data of a typed key () or [N(N-1)/2]: pair seeds


# ------------------------------------------------------------------------------ pair keys


def pair_index(a, b, num_clients: int):
    """Row of pair ``(a, b)``, ``a < b``, in ``np.triu_indices(N, 1)`` order."""
    return a * (2 * num_clients - a - 1) // 2 + (b - a - 1)


def pair_key(pair_keys: jax.Array, i, j, num_clients: int) -> jax.Array:
    """Seed ``s_ij = s_ji`` of the unordered pair {i, j}.

    ``pair_keys`` is either a scalar setup key (simulation: ``fold_in(fold_in(k, min), max)``)
    or a ``[N (N - 1) / 2]`` table of typed keys in ``triu`` order (e.g. X25519-derived).
    """
    a, b = jnp.minimum(i, j), jnp.maximum(i, j)
    if pair_keys.ndim == 0:
        return jax.random.fold_in(jax.random.fold_in(pair_keys, a), b)
    return pair_keys[pair_index(a, b, num_clients)]


_quantize = jpriv.quantize


def clip_and_quantize(U, clip_norm, bits):
    """Rows of ``U [N, d]`` clipped, then rounded to the grid ``2^-bits``, each of L2 norm at
    most ``clip_norm`` after the rounding: rounding moves every coordinate by at most
    ``2^-(bits+1)``, so a row is clipped to ``clip_norm - sqrt(d) 2^-(bits+1)`` first (plain
    clipping to ``clip_norm`` could leave a rounded row above the sensitivity the accountant
    uses). Returns ``(rows, norms before clipping)``.

    >>> import jax.numpy as jnp
    >>> rows, _ = clip_and_quantize(jnp.full((1, 100), 1.0), 1.0, 3)
    >>> float(jnp.linalg.norm(rows)) <= 1.0
    True
    """
    margin = 0.0 if bits is None else float(np.sqrt(U.shape[1]) * 2.0 ** -(bits + 1))
    if isinstance(clip_norm, (int, float)) and margin >= clip_norm:
        raise validate.JaxflValueError(
            f"fixed_point_bits={bits} is too coarse for clip_norm={clip_norm} with {U.shape[1]} "
            f"coordinates: rounding can move an update by up to {margin:.3g}.")
    clipped, norms = jax.vmap(clipping.clip_pytree, in_axes=(0, None))(U, clip_norm - margin)
    return _quantize(clipped, bits), norms


def pair_term(pair_keys, i, j, t, *, num_clients: int, dim: int, sigma_k, dtype=jnp.float32,
              fixed_point_bits: int | None = None):
    """``r_ij^(t) = r_ji^(t)``: ``sigma_K N(0, I_d)`` drawn from ``fold_in(s_ij, t)`` by the
    pairwise privatizer (:func:`jaxfl.privatizer.pair_noise`; the same key at both ends:
    bit-identical terms, exact cancellation)."""
    k = jax.random.fold_in(pair_key(pair_keys, i, j, num_clients), t)
    return jpriv.pair_noise(k, (dim,), sigma_k, dtype, fixed_point_bits)


def individual_noise(key, client_ids, *, dim: int, sigma_u, dtype=jnp.float32,
                     fixed_point_bits: int | None = None):
    """``n_i ~ N(0, sigma_U^2 I_d)`` for every id in ``client_ids``: ``[len, d]``, drawn by
    the pairwise privatizer (:func:`jaxfl.privatizer.local_noise`)."""
    keys = base.client_keys(key, client_ids)
    return jpriv.local_noise(keys, (dim,), sigma_u, dtype, fixed_point_bits)


# ------------------------------------------------------------------- pair-term generation


def _weighted_pair_terms(pair_keys, t, I, J, W, *, num_clients, dim, sigma_k, dtype,
                         fixed_point_bits, chunk=None):
    """``sum_p W[p] r_{I[p] J[p]}`` ([d]): a ``lax.scan`` over chunks, vmapped inside."""
    P = I.shape[0]
    chunk = int(max(1, min(P, chunk or P, _CHUNK_ELEMENTS // max(dim, 1))))
    pad = (-P) % chunk
    I = jnp.concatenate([I, jnp.zeros(pad, I.dtype)]).reshape(-1, chunk)
    J = jnp.concatenate([J, jnp.ones(pad, J.dtype)]).reshape(-1, chunk)
    W = jnp.concatenate([W, jnp.zeros(pad, W.dtype)]).reshape(-1, chunk)
    gen = jax.vmap(lambda i, j: pair_term(pair_keys, i, j, t, num_clients=num_clients, dim=dim,
                                          sigma_k=sigma_k, dtype=dtype,
                                          fixed_point_bits=fixed_point_bits))

    def add(acc, i, j, w):
        return acc + jnp.sum(gen(i, j) * w[:, None].astype(dtype), axis=0)

    def body(acc, xs):
        i, j, w = xs
        # Chunks whose weights are all zero (padding slots, no stragglers) draw nothing.
        acc = jax.lax.cond(jnp.any(w != 0), add, lambda acc, *_: acc, acc, i, j, w)
        return acc, None

    acc, _ = jax.lax.scan(body, jnp.zeros((dim,), dtype), (I, J, W))
    return acc


def pair_masks(pair_keys, t, *, num_clients: int, dim: int, sigma_k, excluded=None,
               dtype=jnp.float32, fixed_point_bits: int | None = None):
    """Every client's pairwise part ``sum_j sgn(j - i) r_ij`` as ``[N, d]`` (each pair drawn once).

    Pairs are enumerated by offset: scan step ``k = 1..floor(N/2)`` draws ``r_{i, i+k mod N}``
    for all ``i`` at once (vmapped), adds it to row ``i`` and subtracts it from row
    ``i + k mod N`` with a roll, so every unordered pair is drawn exactly once and no scatter
    is needed (for even N the step ``k = N/2`` keeps only ``i < N/2``). Memory O(N d).

    Args:
      excluded: optional ``[N]`` bool; pairs touching an excluded client are left out (the
        colluders' subtraction of their known terms, or SMPC's recovery of dropped masks).
    """
    N = num_clients
    i = jnp.arange(N, dtype=jnp.int32)
    ex = jnp.zeros((N,), bool) if excluded is None else jnp.asarray(excluded)
    gen = jax.vmap(lambda a, b: pair_term(pair_keys, a, b, t, num_clients=N, dim=dim,
                                          sigma_k=sigma_k, dtype=dtype,
                                          fixed_point_bits=fixed_point_bits))

    def body(acc, k):
        j = (i + k) % N
        keep = ~(ex | ex[j]) & ((2 * k != N) | (i < k))  # k = N/2: each pair once
        sign = jnp.where(j > i, 1, -1).astype(dtype) * keep.astype(dtype)
        R = gen(i, j) * sign[:, None]
        return acc + R - jnp.roll(R, k, axis=0), None

    acc, _ = jax.lax.scan(body, jnp.zeros((N, dim), dtype), jnp.arange(1, N // 2 + 1))
    return acc


def client_mask(pair_keys, i, t, *, num_clients: int, dim: int, sigma_k, dtype=jnp.float32,
                fixed_point_bits: int | None = None):
    """Client ``i``'s own computation of its ``N - 1`` pair terms (protocol view, Eq. 7)."""

    def body(j, acc):
        sign = jnp.sign(j - i).astype(dtype)
        r = pair_term(pair_keys, i, j, t, num_clients=num_clients, dim=dim, sigma_k=sigma_k,
                      dtype=dtype, fixed_point_bits=fixed_point_bits)
        return acc + sign * r

    return jax.lax.fori_loop(0, num_clients, body, jnp.zeros((dim,), dtype))


def uncancelled_pair_sum(pair_keys, t, alive, straggler_idx, straggler_valid, *,
                         num_clients: int, dim: int, sigma_k, dtype=jnp.float32,
                         fixed_point_bits: int | None = None):
    """``sum_{i alive} sum_{j straggler} sgn(j - i) r_ij``: the pair part of Eq. 9 ([d])."""
    alive = jnp.asarray(alive)
    sidx = jnp.asarray(straggler_idx, jnp.int32)
    svalid = jnp.asarray(straggler_valid)
    i = jnp.arange(num_clients, dtype=jnp.int32)
    I = jnp.broadcast_to(i[None, :], (sidx.shape[0], num_clients)).reshape(-1)
    J = jnp.broadcast_to(sidx[:, None], (sidx.shape[0], num_clients)).reshape(-1)
    valid = (svalid[:, None] & alive[None, :]).reshape(-1)
    W = jnp.where(valid, jnp.sign(J - I), 0).astype(dtype)
    # One straggler slot per chunk (when it fits), so empty slots are skipped.
    return _weighted_pair_terms(pair_keys, t, I, J, W, num_clients=num_clients, dim=dim,
                                sigma_k=sigma_k, dtype=dtype, fixed_point_bits=fixed_point_bits,
                                chunk=num_clients)


def colluder_view(pair_keys, indiv, t, colluders, *, num_clients: int, sigma_k,
                  fixed_point_bits: int | None = None):
    """The disturbance ``m_i`` (Eq. 8) of every client after colluders subtract their terms.

    ``indiv`` is the ``[N, d]`` individual noise; rows of colluders/stragglers are returned too
    but carry no meaning (select ``I1``).
    """
    col = jnp.zeros((num_clients,), bool).at[jnp.asarray(colluders, jnp.int32)].set(True)
    masks = pair_masks(pair_keys, t, num_clients=num_clients, dim=indiv.shape[1],
                       sigma_k=sigma_k, excluded=col, dtype=indiv.dtype,
                       fixed_point_bits=fixed_point_bits)
    return indiv + masks


# -------------------------------------------------------------------------- stragglers


def sample_stragglers(rng: np.random.Generator, *, num_clients: int, model: str, pmf=None,
                      failure_prob: float = 0.0, capacity: int) -> RoundInput:
    """Draws one round's stragglers on the host (see module docstring)."""
    if model == "design":
        s = int(rng.choice(len(pmf), p=np.asarray(pmf)))
        failed = np.zeros(num_clients, bool)
        failed[rng.permutation(num_clients)[:s]] = True
    elif model == "bernoulli":
        failed = rng.random(num_clients) < failure_prob
    else:
        failed = np.zeros(num_clients, bool)
    idx = np.flatnonzero(failed).astype(np.int32)
    cap = capacity if idx.size <= capacity else num_clients
    sidx = np.zeros(cap, np.int32)
    valid = np.zeros(cap, bool)
    sidx[: idx.size] = idx
    valid[: idx.size] = True
    return RoundInput(alive=~failed, straggler_idx=sidx, straggler_valid=valid)


# ----------------------------------------------------------------------------- algorithm


def _round_fn(*args):
    """:func:`_cached_round_fn`, uncached when an argument (e.g. the model) is unhashable."""
    try:
        hash(args)
    except TypeError:
        return _cached_round_fn.__wrapped__(*args)
    return _cached_round_fn(*args)


@functools.lru_cache(maxsize=64)
def _cached_round_fn(model, N, local_steps, batch_size, sampling, scheme, pairs, path, fpb,
                     client_map):
    """One round for a static configuration (cached); the learning rate and clip norm arrive
    as (possibly traced) hyperparameters ``hp``."""
    batch_loss = local.model_batch_loss(model)
    server_opt = optax.sgd(1.0)
    cohort = base.full_cohort(N)

    def apply(state, data, rin, key, hp):
        W = hp["clip_norm"]
        update = local.client_update_fn(batch_loss, optimizer=optax.sgd(hp["client_lr"]),
                                        steps=local_steps, batch_size=batch_size,
                                        sampling=sampling)
        how = client_map
        if how == "auto":  # the engine's policy, narrowed to the device's memory budget
            chunk = cohorts.fit_layout(layout.AUTO, layout.resolve(layout.AUTO, "cohort"),
                                       update, state.params, data, cohort, key,
                                       memory_key=apply)
            how = "vmap" if chunk is None else "map" if chunk == 1 else chunk
        if how == "vmap":
            deltas, aux, _ = cohorts.deltas(update, state.params, data, cohort, key)
        else:  # sequential over clients (or chunks of them): less memory, faster on CPU
            keys = base.client_keys(key, jnp.arange(N))
            deltas, aux = jax.lax.map(lambda a: update(state.params, *a),
                                      (data.x, data.y, data.mask, keys),
                                      batch_size=None if how == "map" else how)
        flat, unravel = jax.vmap(lambda tr: ravel_pytree(tr)[0]), ravel_pytree(state.params)[1]
        U = flat(deltas)
        with precision.sensitive():
            U, norms = clip_and_quantize(U, W, fpb)
        d, dtype = U.shape[1], U.dtype
        t = state.round
        pair_keys = jax.random.wrap_key_data(rin.pair_keys)
        alive = jnp.asarray(rin.alive)
        sigma_u = jnp.asarray(rin.sigma_u, dtype)
        pair_std = jnp.asarray(rin.pair_std, dtype)
        n = individual_noise(base.substream(key, "individual"), jnp.arange(N), dim=d,
                             sigma_u=sigma_u, dtype=dtype, fixed_point_bits=fpb)
        a = alive.astype(dtype)
        if path == "faithful" or scheme == "smpc_dp":
            uploads = U + n
            if pairs:
                excluded = ~alive if scheme == "smpc_dp" else None
                uploads = uploads + pair_masks(pair_keys, t, num_clients=N, dim=d,
                                               sigma_k=pair_std, excluded=excluded, dtype=dtype,
                                               fixed_point_bits=fpb)
            total = jnp.sum(uploads * a[:, None], axis=0)
        else:
            total = jnp.sum((U + n) * a[:, None], axis=0)
            if pairs:
                total = total + uncancelled_pair_sum(
                    pair_keys, t, alive, rin.straggler_idx, rin.straggler_valid,
                    num_clients=N, dim=d, sigma_k=pair_std, dtype=dtype, fixed_point_bits=fpb)
        count = jnp.sum(a)
        mean = jnp.where(count > 0, total / jnp.maximum(count, 1.0), 0.0)
        new_state = fedavg.server_step(server_opt, state, unravel(mean))
        af = alive.astype(jnp.float32)
        cf = jnp.maximum(jnp.sum(af), 1.0)
        diag = {"train_loss": jnp.sum(aux["loss"].astype(jnp.float32) * af) / cf,
                "uploads": jnp.sum(af), "stragglers": N - jnp.sum(af),
                "clipped_fraction": jnp.sum((norms > W).astype(jnp.float32) * af) / cf,
                "update_norm": jnp.sum(norms.astype(jnp.float32) * af) / cf}
        return new_state, diag

    return apply, server_opt


def _apply_resolved(core, defaults, accountant, spec, state, data, rin, key, hparams=None):
    """``apply(state, data, round_input, key, hparams=None)``: ``core`` (shared by every
    algorithm of the same static configuration) at the resolved hyperparameters, on data of
    ``spec``'s clients (checked at trace time)."""
    base.check_sizes(spec, data, "lightdp_fl")
    return core(state, data, rin, key, base.resolve_hparams(defaults, hparams, accountant))


def lightdp_fl(model, *, design, num_clients: int, local_steps: int, batch_size: int | None,
               client_lr: float, clip_norm: float, setup_key: jax.Array | None = None,
               pair_keys: jax.Array | None = None, stragglers: str = "design",
               failure_prob: float = 0.0, path: str = "aggregate",
               smpc_mask_std: float = 0.0, fixed_point_bits: int | None = None,
               sampling: str = "shuffle", client_map: str | None = None) -> base.Algorithm:
    """LightDP-FL (or a baseline, by ``design.scheme``) as an :class:`~base.Algorithm`.

    Args:
      model: a :class:`jaxfl.models.Model`.
      design: a :class:`jaxfl.accounting.lightdp.NoiseDesign` (stds, scheme, accounting).
      num_clients: N (must equal ``design.num_clients``); every client participates.
      local_steps, batch_size, client_lr, sampling: local SGD (see
        :mod:`jaxfl.algorithms.local`).
      clip_norm: W, the L2 bound on each local update (``design.sensitivity`` must be derived
        from it, e.g. 2W/|D_i|).
      setup_key: key the per-pair seeds are derived from (simulation of the DH setup).
      pair_keys: instead, a ``[N (N - 1) / 2]`` table of typed pair keys (X25519 + HKDF).
      stragglers: ``"design"`` | ``"bernoulli"`` | ``"none"``.
      failure_prob: per-client upload failure probability (``"bernoulli"``).
      path: ``"aggregate"`` (Eq. 9 directly) or ``"faithful"`` (all masked uploads).
      smpc_mask_std: ``smpc_dp`` only: std of simulated secure-aggregation masks among the
        uploaders (they cancel; 0 skips them).
      fixed_point_bits: round all noise and updates to the grid ``2^-bits`` (exact in float64).
      client_map: ``"vmap"`` or ``"map"`` (``lax.map`` over clients: same result, less
        memory, faster for small convolutions on CPU); None (default) chooses ``"map"`` on the
        CPU backend and ``"vmap"`` on accelerators, in chunks (``lax.map`` of vmapped chunks)
        where the full vmap does not fit the device's memory budget
        (:func:`jaxfl.layout.fit`).

    Returns the algorithm with its accountant (:func:`jaxfl.accounting.lightdp.accountant` of
    ``design``: strict headline, paper mode in ``other_modes``). Traceable hyperparameters
    (``Algorithm.hparams``): ``client_lr`` and ``clip_norm`` (the design, built on the host from
    the builder's ``clip_norm``, fixes the noise; a sweep point over ``clip_norm`` builds its
    own design). The noise stds travel in the round input, so they are per point as well.
    """
    N, W, p_fail, pair_key_data = _checked(
        design, num_clients=num_clients, clip_norm=clip_norm, client_lr=client_lr,
        stragglers=stragglers, path=path, client_map=client_map, failure_prob=failure_prob,
        smpc_mask_std=smpc_mask_std, fixed_point_bits=fixed_point_bits, setup_key=setup_key,
        pair_keys=pair_keys)
    client_map = "auto" if client_map is None else client_map  # the engine's layout policy
    scheme = design.scheme
    sigma_u, sigma_k = float(design.sigma_u), float(design.sigma_k)
    pair_std = {"lightdp": sigma_k, "smpc_dp": float(smpc_mask_std)}.get(scheme, 0.0)
    capacity = _straggler_capacity(stragglers, design, N, p_fail)
    core, server_opt = _round_fn(model, N, local_steps, batch_size, sampling, scheme,
                                 pair_std > 0, path, fixed_point_bits, client_map)
    local.client_update_fn(local.model_batch_loss(model), optimizer=optax.sgd(client_lr),
                           steps=local_steps, batch_size=batch_size, sampling=sampling)  # checks
    defaults = {"client_lr": float(client_lr), "clip_norm": W}
    accountant = acct.accountant(design)
    # the design prescribes the stds: local sigma_u and pairwise sigma_K (or SMPC masks)
    priv = jpriv.pairwise(clip_norm=W, noise_multiplier=accountant.noise_multiplier,
                          sensitivity=design.sensitivity, local_std=sigma_u, pair_std=pair_std)
    accountant = accountant.for_mechanism(priv)
    spec = base.DataSpec("clients", (("clients", N),), model)

    def prepare(round_index, rng):
        del round_index  # unused
        rin = sample_stragglers(rng, num_clients=N, model=stragglers, pmf=design.pmf,
                                failure_prob=p_fail, capacity=capacity)
        return rin._replace(sigma_u=np.float32(priv.local_std),
                            pair_std=np.float32(priv.pair_std), pair_keys=pair_key_data)

    return base.Algorithm(
        name=f"lightdp_fl/{scheme}", prepare=prepare,
        init=lambda params: fedavg.ServerState(params, server_opt.init(params),
                                               jnp.zeros((), jnp.int32)),
        apply=functools.partial(_apply_resolved, core, defaults, accountant, spec),
        params_of=lambda s: s.params, accountant=accountant, hparams=defaults, data_spec=spec,
        info={"scheme": scheme, "mode": design.mode, "sigma_u": sigma_u, "sigma_k": sigma_k,
              "clip_norm": W, "sensitivity": design.sensitivity, "path": path,
              "stragglers": stragglers, "failure_prob": p_fail, "straggler_capacity": capacity,
              "nominal_epsilon": design.epsilon, "delta": design.delta,
              "neighbouring_relation": "replace one record of one client"})


def _checked(design, *, num_clients, clip_norm, client_lr, stragglers, path, client_map,
             failure_prob, smpc_mask_std, fixed_point_bits, setup_key, pair_keys):
    """Validation of :func:`lightdp_fl`'s inputs: ``(N, W, failure probability, the pair
    keys' data [N (N - 1) / 2, ...])`` (stackable across sweep points)."""
    N = validate.positive_int("num_clients", num_clients, minimum=2)
    if design.num_clients != N:
        raise validate.JaxflValueError(
            f"Expected design.num_clients == num_clients, got {design.num_clients} != {N}.")
    W = validate.positive("clip_norm", clip_norm)
    validate.positive("client_lr", client_lr, validate.JaxflValueError)
    validate.one_of("stragglers", stragglers, STRAGGLER_MODELS)
    validate.one_of("path", path, PATHS)
    if client_map is not None:  # None: chosen when the round is traced (jaxfl.layout.fit)
        validate.one_of("client_map", client_map, ("vmap", "map", "auto"))
    p_fail = validate.probability("failure_prob", failure_prob, allow_zero=True)
    validate.non_negative("smpc_mask_std", smpc_mask_std, validate.JaxflValueError)
    if fixed_point_bits is not None:
        validate.positive_int("fixed_point_bits", fixed_point_bits)
    if pair_keys is None:
        setup_key = jax.random.key(0) if setup_key is None else setup_key
        pair_keys = base.substream(setup_key, "pairs")
    elif pair_keys.shape != (N * (N - 1) // 2,):
        raise validate.ShapeError(
            f"Expected pair_keys.shape=({N * (N - 1) // 2},), got {pair_keys.shape}.")
    return N, W, p_fail, np.asarray(jax.random.key_data(pair_keys))


def _straggler_capacity(stragglers: str, design, num_clients: int, p_fail: float) -> int:
    """The static number of straggler slots of the round input."""
    if stragglers == "design":
        return max(1, len(design.pmf) - 1)
    if stragglers == "bernoulli":
        return base.poisson_capacity(num_clients, p_fail) if p_fail > 0 else 1
    return 1


def _example(*, path: str = "aggregate", **hparams):
    import dataclasses

    from jaxfl.algorithms import registry

    W = hparams.get("clip_norm", 1.0)
    d = acct.design(epsilon=50.0, delta=1e-5, num_clients=6, max_colluders=1,
                    max_stragglers=2, sensitivity=0.01 * W)
    d = dataclasses.replace(d, sigma_u=0.02, sigma_k=0.5)
    model = registry.logreg()
    alg = lightdp_fl(model, design=d, num_clients=6, local_steps=2, batch_size=4,
                     client_lr=hparams.get("client_lr", 0.2), clip_norm=W, path=path)
    return registry.Example(model, alg, registry.blobs())


def _noise_std(alg) -> dict:
    """The design's stds: each client's local noise and the pair terms (the faithful path's
    every mask; the aggregate path's alive x straggler masks, Eq. 9: the conformance suite's
    first round has stragglers)."""
    return {"local_noise": alg.info["sigma_u"], "pair_noise": alg.info["sigma_k"]}


def _register():
    import functools

    from jaxfl.algorithms import registry

    for path in PATHS:
        registry.register(f"lightdp_{path}", functools.partial(_example, path=path),
                          noise=registry.Noise(_noise_std))


_register()


__all__ = ["RoundInput", "lightdp_fl", "pair_key", "pair_index", "pair_term", "pair_masks",
           "client_mask", "individual_noise", "uncancelled_pair_sum", "colluder_view",
           "sample_stragglers", "PATHS", "STRAGGLER_MODELS"]
