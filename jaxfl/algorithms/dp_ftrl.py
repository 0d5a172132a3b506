"""DP-FTRL / matrix-factorization DP-FedAvg with cyclic participation (user-level DP).

Kairouz et al. (ICML 2021, "Practical and private (deep) learning without sampling or
shuffling"), BandMF (Choquette-Choo et al., NeurIPS 2023, "(Amplified) banded matrix
factorization"), BLT (Dvijotham et al. 2024; McKenna 2024). Strategy optimisation, the
streaming products with ``C^{-1}`` and the (k, b)-participation sensitivities come from
``jax_privacy`` (``pip install jaxfl[ftrl]``); this module wires them into a federated round.
The i.i.d. ``z`` comes from :func:`jaxfl.noise.standard_normal`: the correlated privatizer
(:func:`jaxfl.privatizer.correlated`, whose ``init`` / ``update`` carry the noise state) draws it.

Participation. Instead of Poisson sampling, the N clients are split into ``b = N //
clients_per_round`` fixed groups (client i in group ``i % b``) and round t trains group
``t % b``: over T rounds every client participates at most ``k = ceil(T / b)`` times, any two
participations exactly b rounds apart ((k, b)-participation, "min-sep" b).

Round t: the group trains locally, clips its deltas to L2 norm ``clip_norm`` and sums them
(``x_t``); the server adds ``sigma * clip * (C^{-1} z)_t`` (``z`` i.i.d. standard normal, one
vector per round), divides by the fixed group size ``N / b`` and takes a server-optimizer step.
With server SGD the models are the prefix sums of ``x + C^{-1} sigma clip z``, i.e. the matrix
mechanism with workload A = prefix sums and strategy C.

Strategies: ``"bandmf"`` (banded Toeplitz, ``bands`` bands, optimised for the mean squared
prefix-sum error; ``bands=1`` is DP-FedAvg without amplification), ``"blt"`` (buffered linear
Toeplitz optimised for the (k, b) schema) and ``"tree"`` (binary-tree aggregation, the online
estimator: the noise of the prefix sum through t is the sum of the dyadic tree nodes covering
[0, t]).

Privacy: C x has L2 sensitivity ``clip * sens(C; k, b)`` under add/remove of one client, so the
run is one Gaussian mechanism with ``mu = sens / sigma`` (see
:class:`jaxfl.accounting.dp_ftrl.FtrlAccountant`); the epsilon after r rounds uses the
sensitivity of the released prefix (the leading r x r block of C; for the tree, the nodes
completed by round r).

Adaptive clipping (``adaptive_clip``, :class:`jaxfl.algorithms.dp_fedavg.AdaptiveClip`): the
clip norm ``C_t`` becomes server state, updated geometrically from the group's noisy centred
count of unclipped clients (independent noise, divided by the fixed group size). The round's
sum is normalised by ``C_t`` before the correlated noise is added (``sigma (C^{-1} z)_t``, unit
scale) and rescaled by ``C_t`` after, so the released stream is the matrix mechanism on unit
norm contributions (``C_t`` is public: a function of earlier releases) and the accountant
composes it with the counts of the client's k participations
(:func:`jaxfl.accounting.dp_ftrl.ftrl_adaptive_clip_event`).

The noise state (the jax_privacy streaming state of ``C^{-1}``, or the round index for the
dense tree noise, and the run's noise key, drawn in round 0 from the round key) lives in the
server state, so checkpoints resume the exact noise stream.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxfl import precision, privatizer, validate
from jaxfl import tree as jtree
from jaxfl.accounting import dp_ftrl as ftrl_accounting
from jaxfl.algorithms import base, dp_fedavg

STRATEGIES = ("bandmf", "blt", "tree")


def _jax_privacy():
    try:
        import jax_privacy  # noqa: F401
        from jax_privacy import noise_addition
        from jax_privacy.matrix_factorization import buffered_toeplitz, sensitivity, toeplitz
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "DP-FTRL needs jax-privacy: pip install 'jaxfl[ftrl]' (jax-privacy==2.0.0).") from e
    return noise_addition, buffered_toeplitz, sensitivity, toeplitz


class Strategy(NamedTuple):
    """A factorization strategy for ``rounds`` rounds.

    ``matrix``: C as float64 [m, n] (m = n for Toeplitz strategies, the tree nodes for the
    tree); ``noising``: the per-round noise map, a jax_privacy ``StreamingMatrix`` of
    ``C^{-1}`` or a dense float32 [n, m] array (left inverse of C); ``sensitivity(r)``: the
    (k, b)-participation sensitivity of the prefix released after r rounds (unit clip).
    """

    name: str
    rounds: int
    matrix: np.ndarray
    noising: Any
    sensitivity: Any
    info: dict

    def noising_matrix(self) -> np.ndarray:
        """The noise map materialised as float64 [n, m] (tests, covariance)."""
        if isinstance(self.noising, np.ndarray):
            return np.asarray(self.noising, np.float64)
        eye = jnp.eye(self.rounds, dtype=jnp.float32)
        return np.asarray(self.noising @ eye, np.float64)


def _tree_matrices(rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(C [m, n], B [n, m], end [m])``: the binary-tree nodes (dyadic intervals inside
    [0, n)) as rows of C, B the online prefix-sum estimator (row t selects the dyadic nodes
    covering [0, t]), ``end`` the round after which each node is complete."""
    rows, ends = [], []
    size = 1
    while size <= rounds:
        for start in range(0, rounds - size + 1, size):
            r = np.zeros(rounds)
            r[start:start + size] = 1.0
            rows.append(r)
            ends.append(start + size)
        size *= 2
    C = np.stack(rows)
    index = {(int(np.argmax(r)), int(r.sum())): i for i, r in enumerate(rows)}
    B = np.zeros((rounds, len(rows)))
    for t in range(rounds):
        start, remaining = 0, t + 1
        while remaining:
            size = 1 << (remaining.bit_length() - 1)
            B[t, index[(start, size)]] = 1.0
            start, remaining = start + size, remaining - size
    return C, B, np.asarray(ends)


def participations(rounds: int, min_sep: int, max_participations: int | None = None) -> int:
    return ftrl_accounting.cyclic_participation(rounds, min_sep, max_participations)


def make_strategy(name: str, rounds: int, *, min_sep: int, max_participations: int | None = None,
                  bands: int = 1, optimizer_steps: int = 100, blt_buffers: int = 3,
                  coefs=None, blt=None) -> Strategy:
    """Builds (and optimises, with jax_privacy) the strategy ``name`` for ``rounds`` rounds of
    a (k, b)-participation schema with b = ``min_sep`` and k = ``max_participations`` (None:
    as many as fit). ``coefs`` (BandMF Toeplitz coefficients) or ``blt`` (a jax_privacy
    ``BufferedToeplitz``) give the strategy instead of optimising it."""
    validate.one_of("strategy", name, STRATEGIES)
    n = validate.positive_int("rounds", rounds)
    b = validate.positive_int("min_sep", min_sep)
    _, buffered_toeplitz, sensitivity, toeplitz = _jax_privacy()

    def k_of(r):
        return participations(r, b, max_participations)

    with jax.enable_x64(True):
        if name == "bandmf":
            bands = validate.positive_int("bands", bands)
            if bands > n:
                raise validate.JaxflValueError(f"Expected bands <= rounds={n}, got {bands}.")
            if coefs is not None:
                coef = np.asarray(coefs, np.float64)
                bands = len(coef)
            elif bands == 1:
                coef = np.ones(1)
            else:
                coef = np.asarray(toeplitz.optimize_banded_toeplitz(
                    n=n, bands=bands, max_optimizer_steps=optimizer_steps), np.float64)
            noising = toeplitz.inverse_as_streaming_matrix(jnp.asarray(coef, jnp.float32))
            info = {"bands": bands, "coefs": coef.tolist()}
        elif name == "blt":
            if blt is None:
                blt = buffered_toeplitz.optimize(n=n, min_sep=b, max_participations=k_of(n),
                                                 error="mean", max_buffers=blt_buffers,
                                                 max_optimizer_steps=optimizer_steps)
            coef = np.asarray(blt.toeplitz_coefs(n), np.float64)
            blt32 = buffered_toeplitz.BufferedToeplitz(
                buf_decay=jnp.asarray(blt.buf_decay, jnp.float32),
                output_scale=jnp.asarray(blt.output_scale, jnp.float32))
            noising = blt32.inverse_as_streaming_matrix()
            info = {"buf_decay": np.asarray(blt.buf_decay).tolist(),
                    "output_scale": np.asarray(blt.output_scale).tolist()}
        else:
            C, B, ends = _tree_matrices(n)
            noising = np.diff(B, axis=0, prepend=0.0).astype(np.float32)  # A^{-1} B
            info = {"nodes": int(C.shape[0])}

        if name in ("bandmf", "blt"):
            matrix = np.asarray(toeplitz.materialize_lower_triangular(jnp.asarray(coef), n))

            @functools.cache
            def sens(r):
                if name == "bandmf" and len(coef) <= b:
                    block = jnp.asarray(matrix[:r, :r])
                    if r < b or k_of(r) == 1:
                        return float(sensitivity.single_participation_sensitivity(block))
                    return sensitivity.get_sensitivity_banded(block, b, k_of(r))
                with jax.enable_x64(True):
                    return float(jnp.sqrt(toeplitz.minsep_sensitivity_squared(
                        jnp.asarray(coef), b, k_of(r), n=r)))
        else:
            matrix = C

            @functools.cache
            def sens(r):
                rows = ends <= r
                with jax.enable_x64(True):
                    return sensitivity.get_min_sep_sensitivity_upper_bound(
                        jnp.asarray(matrix[rows][:, :r]), b, k_of(r))

    def sensitivity_of(r):
        r = int(r)
        if r < 1:
            return 0.0
        with jax.enable_x64(True):
            return float(sens(min(r, n)))

    return Strategy(name=name, rounds=n, matrix=matrix, noising=noising,
                    sensitivity=sensitivity_of,
                    info={**info, "min_sep": b, "max_participations": k_of(n)})


#: The correlated noise's state transformation (moved to :mod:`jaxfl.privatizer`).
CorrelatedNoise = privatizer.CorrelatedNoise


def correlated_noise(strategy: Strategy) -> CorrelatedNoise:
    """The correlated noise ``stddev (C^{-1} z)_t`` of ``strategy``
    (:func:`jaxfl.privatizer.correlated_noise` of its noise map; the privatizer of
    :func:`dp_ftrl` draws it through :meth:`jaxfl.privatizer.Privatizer.update`)."""
    return privatizer.correlated_noise(strategy.noising)


class FtrlState(NamedTuple):
    params: Any
    opt_state: Any
    round: jax.Array  # shape=(), int32
    noise_key: jax.Array  # uint32 key data of the noise stream (set in round 0)
    noise_state: Any  # jax_privacy privatizer state (streaming buffers or round index)


class FtrlAdaptiveState(NamedTuple):
    """:class:`FtrlState` plus the clip norm of the next round (adaptive clipping)."""

    params: Any
    opt_state: Any
    round: jax.Array
    noise_key: jax.Array
    noise_state: Any
    clip_norm: jax.Array  # shape=(), float32


def cyclic_groups(num_clients: int, num_groups: int) -> list[np.ndarray]:
    """Client ``i`` is in group ``i % num_groups``."""
    return [np.arange(g, num_clients, num_groups, dtype=np.int32) for g in range(num_groups)]


def dp_ftrl(model, *, num_clients: int, clients_per_round: int, rounds: int, local_steps: int,
            batch_size: int | None, client_lr: float, clip_norm: float,
            noise_multiplier: float, strategy: str | Strategy = "bandmf",
            bands: int | None = None, optimizer_steps: int = 100,
            server_opt: optax.GradientTransformation | None = None, server_lr: float = 1.0,
            sampling: str = "shuffle", client_batch: int | str | None = "auto",
            adaptive_clip: dp_fedavg.AdaptiveClip | None = None) -> base.Algorithm:
    """User-level DP-FTRL / matrix-factorization DP-FedAvg (see the module docstring).

    Args:
      model, num_clients, local_steps, batch_size, client_lr, server_opt, server_lr,
        sampling, client_batch: as in :func:`jaxfl.algorithms.dp_fedavg.dp_fedavg`.
      clients_per_round: group size; ``b = num_clients // clients_per_round`` groups.
      rounds: T, the horizon the strategy is optimised for (and the most rounds accounted).
      clip_norm, noise_multiplier: C and sigma (the i.i.d. stream z has std sigma C).
      strategy: ``"bandmf"``, ``"blt"`` or ``"tree"``, or a :class:`Strategy` built by
        :func:`make_strategy` for ``rounds`` rounds and ``min_sep = num_clients //
        clients_per_round`` (reused, e.g. across a calibration; ``bands`` then ignored).
      bands: BandMF bands (default ``min(b, rounds)``: the most with sensitivity sqrt(k)).
      optimizer_steps: jax_privacy strategy-optimisation steps.
      adaptive_clip: an :class:`~jaxfl.algorithms.dp_fedavg.AdaptiveClip` (see the module
        docstring); ``clip_norm`` is then the initial clip norm.

    Traceable hyperparameters: ``client_lr``, ``clip_norm``, ``noise_multiplier`` and (default
    server optimizer) ``server_lr``. The accountant is built from the builder's privatizer,
    and ``apply`` refuses other values of ``clip_norm`` and ``noise_multiplier``.
    """
    num_clients = validate.positive_int("num_clients", num_clients)
    m = validate.positive_int("clients_per_round", clients_per_round)
    if m > num_clients:
        raise validate.JaxflValueError(
            f"Expected clients_per_round <= num_clients={num_clients}, got {m}.")
    T = validate.positive_int("rounds", rounds)
    mechanism = dp_fedavg.check_user_level(model, clip_norm=clip_norm,
                                           noise_multiplier=noise_multiplier,
                                           client_lr=client_lr, server_opt=server_opt)
    num_groups = num_clients // m
    if adaptive_clip is not None:
        dp_fedavg.check_adaptive_clip(adaptive_clip)
    strat, strategy = _strategy(strategy, T, num_groups, bands, optimizer_steps)
    priv = privatizer.correlated(**mechanism, noising=strat.noising)  # C and sigma, once
    groups = cyclic_groups(num_clients, num_groups)
    parts = dp_fedavg.user_level_parts(
        model, priv, num_clients=num_clients, sampling_rate=1.0, local_steps=local_steps,
        batch_size=batch_size, client_lr=client_lr, sampling=sampling, server_opt=server_opt,
        server_lr=server_lr, client_batch=client_batch)
    accountant = ftrl_accounting.FtrlAccountant(
        noise_multiplier=priv.noise_multiplier, sensitivity=strat.sensitivity, strategy=strategy,
        info={"min_sep": num_groups, "max_participations": strat.info["max_participations"]},
        count_noise=None if adaptive_clip is None else adaptive_clip.count_noise,
        participations=lambda r: participations(r, num_groups)).for_mechanism(priv)
    init, prepare, apply = _round_functions(priv, parts, accountant, groups,
                                            num_clients=num_clients, adaptive_clip=adaptive_clip)
    info = {"strategy": strategy, **priv.hparams,
            "clients_per_round": m, "num_groups": num_groups,
            "denominator": num_clients / num_groups, "capacity": max(len(g) for g in groups),
            "rounds": T, "participation": "cyclic (k, b)",
            "neighbouring_relation": "add/remove one client", **strat.info,
            **({} if adaptive_clip is None else {"adaptive_clip": adaptive_clip._asdict()})}
    return base.Algorithm(
        name=f"dp_ftrl_{strategy}", init=init, prepare=prepare, apply=apply,
        params_of=lambda s: s.params, accountant=accountant, info=info,
        hparams=parts.defaults, data_spec=dp_fedavg.clients_spec(model, num_clients))


def _strategy(strategy, T: int, num_groups: int, bands, optimizer_steps):
    """``(Strategy, its name)``: the given one (checked against the run) or a new one."""
    if isinstance(strategy, Strategy):
        if strategy.rounds != T or strategy.info.get("min_sep") != num_groups:
            raise validate.JaxflValueError(
                f"Expected a strategy for rounds={T} and min_sep={num_groups}, got rounds="
                f"{strategy.rounds}, min_sep={strategy.info.get('min_sep')}.")
        return strategy, strategy.name
    if bands is None:
        bands = min(num_groups, T)
    return make_strategy(strategy, T, min_sep=num_groups, bands=bands,
                         optimizer_steps=optimizer_steps), strategy


def _round_functions(priv, parts, accountant, groups, *, num_clients, adaptive_clip):
    """``(init, prepare, apply)`` of :func:`dp_ftrl`: cyclic groups, the correlated noise."""
    num_groups = len(groups)
    capacity = max(len(g) for g in groups)
    denominator = num_clients / num_groups
    defaults, make_server_opt = parts.defaults, parts.make_server_opt

    def prepare(round_index, rng):
        del rng  # the schedule is fixed
        g = groups[int(round_index) % num_groups]
        return base.cohort_from_mask(np.isin(np.arange(num_clients), g), capacity)

    def init(params):
        opt = make_server_opt(defaults)
        state = FtrlState(params, opt.init(params), jnp.zeros((), jnp.int32),
                          jax.random.key_data(jax.random.key(0)), priv.init(params))
        if adaptive_clip is not None:
            return FtrlAdaptiveState(*state, jnp.asarray(priv.clip_norm, jnp.float32))
        return state

    def apply(state, data, cohort, key, hparams=None):
        hp, clip = dp_fedavg.round_hparams(state, data, hparams, defaults=defaults,
                                           accountant=accountant, num_clients=num_clients,
                                           adaptive_clip=adaptive_clip)
        fresh = jax.random.key_data(base.substream(key, "ftrl_noise"))
        run_key = jnp.where(state.round == 0, fresh, state.noise_key)

        def add_noise(total, clip):  # the correlated noise, drawn in the noise scope
            if adaptive_clip is None:
                noisy, noise_state, next_key = priv.update(total, state.noise_state, run_key,
                                                           hp, clip=clip)
                return noisy, (noise_state, next_key)
            # the matrix mechanism on unit-norm contributions, rescaled by the public C_t
            with precision.sensitive():
                unit_total = jtree.scale(total, 1.0 / clip)
            unit, noise_state, next_key = priv.update(unit_total, state.noise_state, run_key,
                                                      hp, clip=1.0)
            return jtree.scale(unit, clip), (noise_state, next_key)

        stepped, (noise_state, next_key), new_clip, diag = dp_fedavg.private_round(
            state, data, cohort, key, hp, clip=clip, make_update=parts.make_update,
            make_server_opt=make_server_opt, add_noise=add_noise, denominator=denominator,
            client_batch=parts.client_batch, adaptive_clip=adaptive_clip,
            client_request=parts.client_request)
        new_state = FtrlState(stepped.params, stepped.opt_state, stepped.round, next_key,
                              noise_state)
        if adaptive_clip is not None:
            new_state = FtrlAdaptiveState(*new_state, new_clip)
        return new_state, diag

    return init, prepare, apply


def _example(*, strategy: str = "bandmf", adaptive: bool = False, **hparams):
    from jaxfl.algorithms import registry

    model = registry.logreg()
    kw = dict(client_lr=0.3, clip_norm=0.5, noise_multiplier=0.8, server_lr=1.0) | hparams
    ac = dp_fedavg.AdaptiveClip(0.5, 0.3, 0.5) if adaptive else None
    extra = dict(bands=2, optimizer_steps=10) if strategy == "bandmf" else {}
    alg = dp_ftrl(model, num_clients=8, clients_per_round=2, rounds=6, local_steps=2,
                  batch_size=3, strategy=strategy, adaptive_clip=ac, **extra, **kw)
    return registry.Example(model, alg, registry.blobs(8))


def _iid_std(alg) -> dict:
    """The i.i.d. stream z of a streaming strategy (BandMF): std sigma C before C^{-1}."""
    acc = alg.accountant
    return {"gaussian_like": acc.hparams["noise_multiplier"] * acc.hparams["clip_norm"]}


def _register():
    import functools

    from jaxfl.algorithms import registry

    registry.register("dp_ftrl", _example, noise=registry.Noise(_iid_std))
    registry.register("dp_ftrl_adaptive_clip", functools.partial(_example, adaptive=True),
                      noise=registry.Noise(_iid_std), variant=True)
    registry.register("dp_ftrl_tree", functools.partial(_example, strategy="tree"),
                      noise=registry.Noise(_iid_std), variant=True)


_register()


__all__ = ["STRATEGIES", "Strategy", "make_strategy", "correlated_noise", "FtrlState",
           "FtrlAdaptiveState",
           "cyclic_groups", "dp_ftrl", "participations"]
