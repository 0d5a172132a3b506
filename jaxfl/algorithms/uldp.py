"""ULDP-FL: cross-silo FL with user-level DP (Kato et al., PVLDB 2024), user-level methods.

* **ULDP-AVG** (Algorithm 3, top): every (silo, user) pair trains its own copy of x_t for Q
  epochs on D_{s,u}; its delta is clipped to C and weighted by w_{s,u}; each silo sums its
  pairs and adds N(0, sigma^2 C^2 / |S|); the server applies
  ``x + eta_g * sum_s Delta^s / (|U||S|)``. Removing a user changes the pre-noise sum by
  ``sum_s w_{s,u} clip_C(Delta^{s,u})``, of norm <= C since sum_s w_{s,u} <= 1, and the total
  noise is N(0, sigma^2 C^2): a Gaussian mechanism with multiplier sigma per round (Thm. 3).
* **ULDP-AVG-w** (eq. 3): weights n_{s,u} / N_u instead of 1/|S|.
* **ULDP-SGD** (Algorithm 3, bottom): one gradient per pair instead of local epochs;
  ``x - eta_g * sum_s g^s / (|U||S|)``.
* **-s / -ws** (Algorithm 4): the server Poisson-samples users with rate q each round
  (weights of the others set to 0) and divides by q|U||S|; accounting with the sub-sampled
  Gaussian.

Per-pair training is one ``vmap`` over the flattened pairs of a
:class:`~jaxfl.algorithms.uldp_data.PairData` (``lax.scan`` over fixed-size chunks of each
length bucket), the weighted clipped deltas are summed per silo with ``segment_sum``, and each
silo's noise is drawn from its own key. No Python loop over users or silos.

``repo_compat=True`` switches to the authors' code where it departs from the paper (Kato et al.
2023, Algs. 3-4): ULDP-SGD's gradient is divided by the batch size again; -w without sampling still
divides by ``code_sampling_rate`` (the code's default q = 0.1, a 10x global step); -s/-ws
divide by ``int(q|U||S|)``. The default is the paper's definition, and ``info["mode"]`` says
which one ran.

DEFAULT, ULDP-NAIVE, SILO-LEVEL-DP, ULDP-GROUP and RECORD-LEVEL-DP are in
:mod:`jaxfl.algorithms.uldp_silo`; :func:`build` selects any method by its paper name.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxfl import clipping, layout, precision, privatizer, validate
from jaxfl import tree as jtree
from jaxfl.accounting import uldp as uldp_accounting
from jaxfl.algorithms import base, uldp_data, uldp_local

WEIGHTINGS = ("uniform", "optimal")
RELATION = "add/remove one user (all of the user's records in every silo)"


class ServerState(NamedTuple):
    params: object  # model parameter pytree
    round: jax.Array  # shape=(), dtype=int32


#: Name scopes of a round's phases in device profiles (``experiments/bench/trace_phases.py``);
#: clipping, weighting and the per-silo sums are in :data:`jaxfl.precision.SENSITIVITY_SCOPE`,
#: the noise in :data:`jaxfl.precision.NOISE_SCOPE`.
LOCAL_SCOPE = "uldp_local_training"
UPDATE_SCOPE = "uldp_server_update"


def init_state(params) -> ServerState:
    return ServerState(params, jnp.zeros((), jnp.int32))


def pair_weights(bucket: uldp_data.PairBucket, totals, num_silos: int, weighting: str):
    """w_{s,u} of every pair of a bucket: 1/|S| or n_{s,u}/N_u (0 for padding pairs)."""
    count = bucket.count.astype(jnp.float32)
    if weighting == "uniform":
        w = jnp.full(count.shape, 1.0 / num_silos)
    else:
        w = count / jnp.maximum(totals[bucket.user], 1.0)
    return jnp.where(bucket.count > 0, w, 0.0)


def _chunks(tree, chunk: int):
    return jax.tree.map(lambda a: a.reshape(a.shape[0] // chunk, chunk, *a.shape[1:]), tree)


def _rechunk(fields, shards: int, chunk: int, zero_row: int):
    """Bucket fields ``[P, ...]`` as ``[shards * m, chunk, ...]``: each device's share of the
    pairs padded to ``m`` chunks with empty pairs (no record: the zero row, count and weight 0,
    so they add nothing)."""
    out = []
    for a, pad in zip(fields, (zero_row, False, 0, 0, 0, 0.0), strict=True):
        a = a.reshape(shards, a.shape[0] // shards, *a.shape[1:])
        m = -(-a.shape[1] // chunk)
        a = jnp.pad(a, [(0, 0), (0, m * chunk - a.shape[1])] + [(0, 0)] * (a.ndim - 2),
                    constant_values=pad)
        out.append(a.reshape(shards * m, chunk, *a.shape[2:]))
    return tuple(out)


def silo_sums(unit_fn, params, data: uldp_data.PairData, user_mask, key, *, clip_norm: float,
              weighting: str, memory_key=None):
    """Per-silo ``sum_u w_{s,u} clip_C(unit_fn(pair))`` ([S, ...] pytree) and diagnostics.

    ``unit_fn(params, x, y, mask, key) -> (vector_tree, loss, finite)`` is vmapped over the
    pairs of each chunk; a pair whose result is not finite is dropped (the authors' rule).
    A bucket's chunks run as a ``lax.scan``; with ``bucket.shards > 1`` they are split over
    that many local devices (``shard_map``) and the devices' partial sums added with one
    ``psum``. Keys come from pair ids, so the split changes only the order of float additions.

    Under a device memory budget (:func:`jaxfl.layout.device_budget`) a bucket whose chunks of
    ``bucket.chunk`` pairs do not fit runs in the chunks that do (:func:`jaxfl.layout.fit`),
    padded with empty pairs. The per-pair memory is one compiled program per round, a bound at
    the longest bucket (:func:`pair_memory_bound`); a bucket whose chunk does not fit under it
    is measured at its own length (:func:`jaxfl.layout.unit_memory`), so the layout is the one
    the per-bucket measurements give (:func:`_pair_memory`). Both are cached per
    ``memory_key`` (default ``unit_fn``) and shapes.
    """
    S = data.num_silos
    totals = data.counts()
    acc = jax.tree.map(lambda p: jnp.zeros((S, *p.shape), p.dtype), params)
    stats = jnp.zeros(4)  # loss sum, pairs, clipped pairs, dropped pairs
    # Every pair trains its own copy of the model: the copies enter the vmap batched, so the
    # batching of the trainer's loops (whose carries are the copies) settles in one pass
    # instead of re-batching each loop body once more (the same program, traced in less time).
    vm = jax.vmap(unit_fn, in_axes=(0, 0, 0, 0, 0))

    def bucket_sums(params, x, y, key, fields, carry):
        def body(carry, chunk):
            acc, stats = carry
            index, mask, silo, count, pair_id, w = chunk
            keys = base.client_keys(key, pair_id)
            with jax.named_scope(LOCAL_SCOPE):  # a name for device profiles only
                copies = jax.tree.map(
                    lambda p: jnp.broadcast_to(p, (index.shape[0], *p.shape)), params)
                vec, loss, finite = vm(copies, x[index], y[index], mask, keys)
            real = (count > 0) & (w > 0)
            with precision.sensitive():  # clip, weight and sum per silo (the sensitivity)
                clipped, norms = jax.vmap(clipping.clip_pytree, in_axes=(0, None))(vec,
                                                                                   clip_norm)
                w = jnp.where(finite, w, 0.0)
                clipped = jax.tree.map(lambda v: jnp.where(
                    finite.reshape((-1,) + (1,) * (v.ndim - 1)), v, 0.0), clipped)
                contrib = jax.tree.map(
                    lambda v: jax.ops.segment_sum(v * w.reshape((-1,) + (1,) * (v.ndim - 1)),
                                                  silo, num_segments=S), clipped)
            r = real.astype(jnp.float32)
            new_stats = stats + jnp.stack([
                jnp.sum(jnp.where(real & finite, loss, 0.0)), jnp.sum(r),
                jnp.sum(r * (norms > clip_norm)), jnp.sum(r * (~finite))])
            return (jtree.add(acc, contrib), new_stats), None

        return jax.lax.scan(body, carry, fields)[0]

    def unit_of(length):  # one pair's arguments of unit_fn at a bucket length
        return (jax.ShapeDtypeStruct((length, *data.x.shape[1:]), data.x.dtype),
                jax.ShapeDtypeStruct((length, *data.y.shape[1:]), data.y.dtype),
                jax.ShapeDtypeStruct((length,), data.buckets[0].mask.dtype),
                jax.ShapeDtypeStruct((), key.dtype))

    longest = max((b.index.shape[1] for b in data.buckets), default=1)
    for bucket in data.buckets:  # a handful of static length buckets
        w_all = pair_weights(bucket, totals, S, weighting) * user_mask[bucket.user]
        fields = (bucket.index, bucket.mask, bucket.silo, bucket.count, bucket.pair_id, w_all)
        units = bucket.index.shape[0] // bucket.shards
        memory = _pair_memory(memory_key or unit_fn, unit_fn, params,
                              unit_of(bucket.index.shape[1]), unit_of(longest), bucket.chunk)
        chunk = layout.fit(bucket.chunk, "pairs", units, memory) or units
        if chunk == bucket.chunk:
            fields = _chunks(fields, chunk)
        else:
            fields = _rechunk(fields, bucket.shards, chunk, data.x.shape[0] - 1)
        if bucket.shards == 1:
            acc, stats = bucket_sums(params, data.x, data.y, key, fields, (acc, stats))
            continue
        # The chunks split over devices: each sums its share from zero, then one psum.
        mesh = jax.sharding.Mesh(np.array(jax.local_devices()[:bucket.shards]), ("units",))

        def split(params, x, y, key, fields, zero):
            # Each device trains its pairs from its own copy of the model and sums into its own
            # carry. Differentiating a device-invariant value would psum the per-pair
            # gradients over devices (the transpose of a broadcast), mixing pairs.
            params, zero = jax.lax.pcast((params, zero), "units", to="varying")
            part = bucket_sums(params, x, y, key, fields, zero)
            return jax.lax.psum(part, "units")

        rep, units = jax.sharding.PartitionSpec(), jax.sharding.PartitionSpec("units")
        part = jax.shard_map(split, mesh=mesh, in_specs=(rep, rep, rep, rep, units, rep),
                             out_specs=rep)(params, data.x, data.y, key, fields,
                                            jax.tree.map(jnp.zeros_like, (acc, stats)))
        acc, stats = jtree.add(acc, part[0]), stats + part[1]
    return acc, stats


_BOUNDS: dict = {}


def _abstract(tree, lead=()):
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct((*lead, *np.shape(a)), a.dtype), tree)


def pair_memory_bound(key, unit_fn, params, unit) -> tuple[int, int]:
    """An upper bound ``(fixed, per_pair)`` on the device bytes of ``unit_fn`` vmapped over
    pairs of ``unit``'s shapes, from ONE compiled program (2 pairs) instead of
    :func:`jaxfl.layout.unit_memory`'s two (2 and 4 pairs).

    With XLA's total ``t2`` at 2 pairs and the affine model of :func:`~jaxfl.layout.unit_memory`
    (``t(n) = fixed + n * per``, ``fixed >= 0``): ``per <= t2 / 2`` and ``fixed <= t2``, so
    ``t(n) <= (n + 1) * t2 / 2``, which is ``(t2 / 2, t2 / 2)``. Cached per ``key`` and shapes.
    Where XLA gives no memory analysis, :func:`~jaxfl.layout.unit_memory`'s estimate.
    """
    cache_key = (key, str(jax.tree.structure((params, unit))), str(_abstract((params, unit))))
    if cache_key in _BOUNDS:
        return _BOUNDS[cache_key]
    one = lambda p, u: unit_fn(p, *u)  # noqa: E731
    converted, consts = jax.closure_convert(one, _abstract(params), _abstract(unit))
    vm = jax.vmap(converted, in_axes=(None, 0, *([None] * len(consts))))
    m = jax.jit(vm).lower(_abstract(params), _abstract(unit, (2,)),
                          *_abstract(list(consts))).compile().memory_analysis()
    if m is None:
        bound = layout.unit_memory(key, unit_fn, (params,), unit)
    else:
        half = -(-(m.argument_size_in_bytes + m.output_size_in_bytes
                   + m.temp_size_in_bytes) // 2)
        bound = (int(half), int(max(1, half)))
    _BOUNDS[cache_key] = bound
    return bound


def _pair_memory(key, unit_fn, params, unit, longest, chunk):
    """The ``memory()`` of :func:`jaxfl.layout.fit` for a bucket of pairs shaped ``unit``.

    A start-up cost, not a layout choice: measuring every bucket's pairs takes two compiled
    programs per bucket (ten for ULDP-AVG on all of MNIST, most of a GPU start). First the
    bound of the longest bucket's pair (:func:`pair_memory_bound`, one program for the whole
    round; a pair's memory grows with its length): when ``chunk`` pairs fit the budget under
    it, they fit under the bucket's own measurement too and :func:`~jaxfl.layout.fit` keeps
    ``chunk`` either way; otherwise the bucket's own (:func:`jaxfl.layout.unit_memory`), so
    every layout :func:`~jaxfl.layout.fit` picks is the one it picked from the measurement."""

    def memory():
        fixed, per = pair_memory_bound(key, unit_fn, params, longest)
        share = layout.current_budget() // layout.points_sharing()
        if fixed + chunk * per <= share:
            return fixed, per
        return layout.unit_memory(key, unit_fn, (params,), unit)

    return memory


def silo_noise(params, key, num_silos: int, stddev):
    """Independent N(0, stddev^2 I) per silo from ``fold_in(key, s)`` ([S, ...] pytree;
    :func:`jaxfl.privatizer.share_noise`, what a per-unit privatizer's ``shares`` draws)."""
    return privatizer.share_noise(params, key, num_silos, stddev)


def _diagnostics(stats, user_mask):
    pairs = jnp.maximum(stats[1], 1.0)
    return {"train_loss": stats[0] / pairs, "active_pairs": stats[1],
            "clipped_fraction": stats[2] / pairs, "dropped_pairs": stats[3],
            "sampled_users": jnp.sum(user_mask)}


def _pair_method(name, unit_fn, *, num_silos, num_users, clip_norm, noise_multiplier,
                 global_lr, weighting, sampling_rate, repo_compat, code_sampling_rate, sign,
                 extra_info, extra_hparams, accounting, model=None):
    S = validate.positive_int("num_silos", num_silos)
    U = validate.positive_int("num_users", num_users)
    # the sum over silos gets N(0, (sigma C)^2): one share of std sigma C / sqrt(S) per silo
    priv = privatizer.per_unit(
        clip_norm=validate.positive("clip_norm", clip_norm),
        noise_multiplier=validate.non_negative("noise_multiplier", noise_multiplier), parts=S)
    eta_g = validate.positive("global_lr", global_lr, validate.JaxflValueError)
    q = validate.probability("sampling_rate", sampling_rate)
    validate.one_of("weighting", weighting, WEIGHTINGS)
    denominator = q * U * S
    if repo_compat:
        if q < 1.0:
            denominator = float(int(q * U * S))
        elif weighting == "optimal":
            denominator = code_sampling_rate * U * S
    if denominator <= 0:
        raise validate.JaxflValueError(f"Expected q|U||S| >= 1, got {q * U * S}.")
    accountant = uldp_accounting.method_accountant(
        name, noise_multiplier=priv.noise_multiplier, sampling_rate=q,
        mode=accounting).for_mechanism(priv, sampling_rate=q)
    hparams = {"global_lr": eta_g, **priv.hparams, **extra_hparams}

    def prepare(round_index, rng):
        del round_index  # unused
        return uldp_data.sample_users(rng, U, q)

    spec = base.DataSpec("pairs", (("users", U), ("silos", S)), model)

    def apply(state, data, user_mask, key, hparams=None):
        base.check_sizes(spec, data, name)  # static: a user or silo gathered out of range
        hp = base.resolve_hparams(hparams_defaults, hparams, accountant)
        params = state.params
        unit = lambda p, x, y, m, k: unit_fn(p, x, y, m, k, hp)  # noqa: E731
        sums, stats = silo_sums(unit, params, data, jnp.asarray(user_mask),
                                base.substream(key, "pairs"), clip_norm=hp["clip_norm"],
                                weighting=weighting, memory_key=unit_fn)
        noisy = jtree.add(sums, priv.shares(params, base.substream(key, "noise"), hp))
        with jax.named_scope(UPDATE_SCOPE):
            total = jax.tree.map(lambda v: jnp.sum(v, axis=0), noisy)
            new = jax.tree.map(lambda p, t: p + sign * hp["global_lr"] * t / denominator,
                               params, total)
        return ServerState(new, state.round + 1), _diagnostics(stats, user_mask)

    hparams_defaults = hparams

    info = {**priv.hparams, "sampling_rate": q,
            "weighting": weighting, "denominator": denominator, "per_silo_noise_std":
            priv.part_std(), "global_lr": eta_g, "mode": "repo_compat" if repo_compat else "paper",
            "neighbouring_relation": RELATION, "num_silos": S, "num_users": U, **extra_info}
    return base.Algorithm(name=name, init=init_state, prepare=prepare, apply=apply,
                          params_of=lambda s: s.params,
                          info=info, hparams=hparams, accountant=accountant,
                          data_spec=spec)


def _method_name(base_name, weighting, q):
    suffix = ("w" if weighting == "optimal" else "") + ("s" if q < 1.0 else "")
    return base_name + (f"-{suffix}" if suffix else "")


def uldp_avg(model, *, num_silos: int, num_users: int, local_epochs: int, batch_size: int,
             local_lr: float, global_lr: float, clip_norm: float, noise_multiplier: float,
             weighting: str = "uniform", sampling_rate: float = 1.0,
             repo_compat: bool = False, code_sampling_rate: float = 0.1,
             accounting: str = "strict") -> base.Algorithm:
    """ULDP-AVG / -w / -s / -ws (module docstring).

    Args:
      model: a :class:`jaxfl.models.Model`.
      num_silos, num_users: |S| and |U| (public; |U| counts users without records too).
      local_epochs, batch_size, local_lr: Q, B, eta_l of the per-pair local SGD.
      global_lr: eta_g.
      clip_norm, noise_multiplier: C and sigma.
      weighting: ``"uniform"`` (1/|S|) or ``"optimal"`` (n_{s,u}/N_u, ULDP-AVG-w).
      sampling_rate: user-level Poisson rate q (1.0: no sampling).
      repo_compat, code_sampling_rate: see module docstring.
      accounting: the mode of the accountant (``"strict"``: PLD; ``"paper"``: the authors'
        Opacus recipe); the other mode is in ``accountant.other_modes()``.

    Traced hparams: ``global_lr``, ``local_lr``, ``clip_norm``, ``noise_multiplier``. The
    per-pair trainer is built per bucket length when ``apply`` is traced.
    """
    uldp_local.epoch_trainer(_batch_loss(model), learning_rate=local_lr, epochs=local_epochs,
                             batch_size=batch_size, length=1)  # validates the arguments
    trainers = {}

    def unit_fn(params, x, y, mask, key, hp):
        L = mask.shape[0]
        if L not in trainers:
            trainers[L] = uldp_local.epoch_trainer(
                _batch_loss(model), learning_rate=local_lr, epochs=local_epochs,
                batch_size=batch_size, length=L)
        return trainers[L](params, x, y, mask, key, learning_rate=hp["local_lr"])

    return _pair_method(_method_name("ULDP-AVG", weighting, sampling_rate), unit_fn,
                        num_silos=num_silos, num_users=num_users, clip_norm=clip_norm,
                        noise_multiplier=noise_multiplier, global_lr=global_lr,
                        weighting=weighting, sampling_rate=sampling_rate,
                        repo_compat=repo_compat, code_sampling_rate=code_sampling_rate, sign=1.0,
                        extra_info={"local_epochs": local_epochs, "batch_size": batch_size,
                                    "local_lr": local_lr},
                        extra_hparams={"local_lr": float(local_lr)}, accounting=accounting,
                        model=model)


def uldp_sgd(model, *, num_silos: int, num_users: int, global_lr: float, clip_norm: float,
             noise_multiplier: float, weighting: str = "uniform", sampling_rate: float = 1.0,
             repo_compat: bool = False, batch_size: int = 64, code_sampling_rate: float = 0.1,
             accounting: str = "strict") -> base.Algorithm:
    """ULDP-SGD / -w / -s / -ws: one gradient per pair (module docstring). ``batch_size`` is
    used only by ``repo_compat`` (the code's per-minibatch rescaling). Traced hparams:
    ``global_lr``, ``clip_norm``, ``noise_multiplier``."""
    grads = {}

    def unit_fn(params, x, y, mask, key, hp):
        del hp  # unused: no local learning rate
        L = mask.shape[0]
        if L not in grads:
            grads[L] = uldp_local.pair_gradient(_batch_loss(model), length=L,
                                                repo_compat=repo_compat, batch_size=batch_size)
        return grads[L](params, x, y, mask, key)

    return _pair_method(_method_name("ULDP-SGD", weighting, sampling_rate), unit_fn,
                        num_silos=num_silos, num_users=num_users, clip_norm=clip_norm,
                        noise_multiplier=noise_multiplier, global_lr=global_lr,
                        weighting=weighting, sampling_rate=sampling_rate,
                        repo_compat=repo_compat, code_sampling_rate=code_sampling_rate,
                        sign=-1.0, extra_info={}, extra_hparams={}, accounting=accounting,
                        model=model)


def _batch_loss(model):
    def loss(params, xb, yb, mb, key):
        return model.batch_loss(params, xb, yb, mb, key=key)

    return loss



def _records(seed: int = 0):
    """Records of 5 users over 3 silos (30 records, 4 features, 3 classes)."""
    rng = np.random.default_rng(seed)
    n, silos, users = 30, 3, 5
    return uldp_data.UldpData(rng.normal(size=(n, 4)).astype(np.float32),
                              rng.integers(0, 3, n).astype(np.int32), rng.integers(0, silos, n),
                              rng.integers(0, users, n), silos, users).validate()


def _example(*, method: str = "avg", weighting: str = "uniform", **hparams):
    from jaxfl.algorithms import registry

    model = registry.logreg(4, 3)
    pairs = uldp_data.pair_data(_records(), min_length=8)
    kw = dict(clip_norm=1.0, noise_multiplier=2.0, global_lr=1.0) | hparams
    if method == "avg":
        kw = dict(local_lr=0.1) | kw
        alg = uldp_avg(model, num_silos=3, num_users=5, weighting=weighting, sampling_rate=0.5,
                       local_epochs=1, batch_size=4, **kw)
    else:
        alg = uldp_sgd(model, num_silos=3, num_users=5, weighting=weighting, **kw)
    return registry.Example(model, alg, pairs)


def _register():
    import functools

    from jaxfl.algorithms import registry

    registry.register("uldp_avg", _example, noise=registry.GAUSSIAN)
    registry.register("uldp_avg_optimal_weights",
                      functools.partial(_example, weighting="optimal"), noise=registry.GAUSSIAN,
                      variant=True)
    registry.register("uldp_sgd_optimal_weights",
                      functools.partial(_example, method="sgd", weighting="optimal"),
                      noise=registry.GAUSSIAN)


_register()


__all__ = ["ServerState", "uldp_avg", "uldp_sgd", "silo_sums", "silo_noise", "pair_weights",
           "pair_memory_bound", "init_state"]
