"""Shared config and builder of the LightDP-FL experiments (paper Sec. VI; spec Sec. 6).

A run is one frozen :class:`LightDPConfig`; :func:`build` turns it into the jaxfl objects
(data, model, noise design, algorithm, evaluation) and :func:`run` trains it with
:func:`jaxfl.training.run`. The setting files next to this one (``cifar10_resnet18.py``,
``mnist_cnn.py``, ``fashion_mnist_cnn.py``) only choose field values and sweeps.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from experiments import config as config_lib

SCHEMES = ("lightdp", "ldp", "smpc_dp", "he_dp")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LightDPConfig:
    """One LightDP-FL experiment. Defaults are the paper's CIFAR-10 setting (spec 6.1-6.2)."""

    name: str = "lightdp"
    dataset: str = "cifar10"  # cifar10 | mnist | fashion_mnist
    model: str = "resnet18_gn"
    model_kwargs: tuple = ()  # (("features", (8, 16)), ...)
    num_clients: int = 50
    examples_per_client: int = 1000  # equal sizes: weighted = unweighted FedAvg (A21)
    shards_per_client: int = 2  # label-sorted shards (non-IID, A13)
    test_examples: int | None = None  # None = the whole test split
    image_pool: int = 1  # average-pool images by this factor (CPU scaling: 28x28 -> 14x14)
    rounds: int = 150
    local_epochs: int = 1
    batch_size: int = 32
    client_lr: float = 0.05
    clip_norm: float = 1.0  # W, on the local update (A11)
    sensitivity_mode: str = "nbafl"  # nbafl: 2W/|D_i| ; replace: 2W (rigorous, huge)
    scheme: str = "lightdp"  # lightdp | ldp | smpc_dp | he_dp (trains as smpc_dp)
    mode: str = "strict"  # strict | paper
    epsilon: float = 3.0
    delta: float = 1e-5
    max_colluders: int = 10
    max_stragglers: int = 10
    stragglers: str = "design"  # design (S ~ uniform{0..S_bar}) | bernoulli | none
    failure_prob: float = 0.05  # bernoulli link failures (Fig. 4)
    composition: str = "sqrt_T_std"
    constant: str = "paper"
    path: str = "aggregate"
    client_map: str = "vmap"  # vmap | map (lax.map over clients; faster small convs on CPU)
    seed: int = 0
    eval_every: int = 1
    variant: str = "full"

    def replace(self, **kw) -> LightDPConfig:
        return dataclasses.replace(self, **kw)

    def run(self, workdir) -> dict:
        """Trains this config into ``workdir`` (``python -m experiments.run`` entry point)."""
        return run(self, workdir).summary

    @property
    def local_steps(self) -> int:
        """E epochs of full batches (remainder dropped): 31 for 1000 examples, batch 32."""
        return self.local_epochs * (self.examples_per_client // self.batch_size)

    @property
    def sensitivity(self) -> float:
        """Delta: 2W / |D_i| (NbAFL convention, replace-one) or 2W."""
        if self.sensitivity_mode == "nbafl":
            return 2.0 * self.clip_norm / self.examples_per_client
        return 2.0 * self.clip_norm

    @property
    def design_scheme(self) -> str:
        return "smpc_dp" if self.scheme == "he_dp" else self.scheme


def apply_overrides(config: LightDPConfig, overrides) -> LightDPConfig:
    """Typed (dict) or ``["key=value", ...]`` overrides (see :mod:`experiments.config`)."""
    return config_lib.apply_overrides(config, overrides)


def get_config_from(variants: dict, arg: str | None, default: str) -> LightDPConfig:
    """``get_config`` of a setting file: ``arg`` = ``variant=...,field=value,...``."""
    fields = {f.name for v in variants.values() for f in dataclasses.fields(v)}
    a = config_lib.parse_arg(arg, variant=default, extra_keys=fields)
    variant = a.pop("variant")
    if variant not in variants:
        raise ValueError(f"Unknown variant {variant!r}; choose from {sorted(variants)}.")
    return config_lib.apply_overrides(variants[variant], a)


# ------------------------------------------------------------------------------- building


def load_dataset(config: LightDPConfig):
    """Train/test arrays (float32 images in [0, 1] minus a per-dataset mean, int32 labels)."""
    if config.dataset == "cifar10":
        from jaxfl.data import cifar

        (xtr, ytr), (xte, yte) = cifar.load_cifar10("train"), cifar.load_cifar10("test")
        mean = np.array([0.4914, 0.4822, 0.4465], np.float32)
        std = np.array([0.2470, 0.2435, 0.2616], np.float32)
        norm = lambda x: ((x.astype(np.float32) / 255.0 - mean) / std).astype(np.float32)
    else:
        from jaxfl.data import idx

        loader = idx.load_mnist if config.dataset == "mnist" else idx.load_fashion_mnist
        (xtr, ytr), (xte, yte) = loader("train"), loader("test")
        mean, std = (0.1307, 0.3081) if config.dataset == "mnist" else (0.2860, 0.3530)
        norm = lambda x: idx.normalize_images(x, mean=mean, std=std)
    xtr, xte = _pool(norm(xtr), config.image_pool), _pool(norm(xte), config.image_pool)
    return xtr, ytr.astype(np.int32), xte, yte.astype(np.int32)


def _pool(x: np.ndarray, k: int) -> np.ndarray:
    """Average-pools ``[n, H, W, C]`` images by ``k`` (H, W divisible by k)."""
    if k == 1:
        return x
    n, h, w, c = x.shape
    return x.reshape(n, h // k, k, w // k, k, c).mean(axis=(2, 4)).astype(np.float32)


def partition(config: LightDPConfig, labels: np.ndarray) -> list[np.ndarray]:
    """Shards: a seeded, label-balanced subsample of N * n examples cut into label-sorted
    shards, ``shards_per_client`` per client; every client gets exactly n examples."""
    from jaxfl.data import partition as part

    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 0x11D9]))
    total = config.num_clients * config.examples_per_client
    if total > len(labels):
        raise ValueError(f"Need {total} training examples, have {len(labels)}.")
    pool = np.sort(rng.permutation(len(labels))[:total])
    parts = part.shards(rng, labels[pool], config.num_clients,
                        shards_per_client=config.shards_per_client)
    return [pool[p][: config.examples_per_client] for p in parts]


def test_set(config: LightDPConfig, x: np.ndarray, y: np.ndarray):
    """The evaluation examples: all, or a fixed seeded subset of ``test_examples``."""
    if config.test_examples is None:
        return x, y
    sel = np.sort(np.random.default_rng(config.seed).permutation(len(y))[: config.test_examples])
    return x[sel], y[sel]


def make_design(config: LightDPConfig):
    from jaxfl.accounting import lightdp as acct

    pmf = None
    if config.stragglers == "bernoulli":
        pmf = acct.binomial_pmf(config.num_clients, config.failure_prob, config.max_stragglers)
    return acct.design(epsilon=config.epsilon, delta=config.delta,
                       num_clients=config.num_clients, max_colluders=config.max_colluders,
                       max_stragglers=config.max_stragglers, sensitivity=config.sensitivity,
                       rounds=config.rounds, straggler_pmf=pmf, scheme=config.design_scheme,
                       mode=config.mode, composition=config.composition,
                       constant=config.constant)


def build(config: LightDPConfig, *, arrays=None, model=None, eval_fn=None) -> dict:
    """Data, model, design, algorithm and evaluation of one run.

    Args:
      config: the run.
      arrays: optional preloaded ``(x_train, y_train, x_test, y_test)`` (shared across a sweep).
      model: optional prebuilt model (shared across a sweep).
      eval_fn: optional prebuilt evaluation (shared across a sweep with the same test set).
    """
    import jax

    from jaxfl import models, training
    from jaxfl.algorithms import lightdp
    from jaxfl.data import federated

    xtr, ytr, xte, yte = load_dataset(config) if arrays is None else arrays
    parts = partition(config, ytr)
    data = federated.from_partition(xtr, ytr, parts)
    if model is None:
        model = models.get_model(config.model, **dict(config.model_kwargs))
    design = make_design(config)
    algorithm = lightdp.lightdp_fl(
        model, design=design, num_clients=config.num_clients, local_steps=config.local_steps,
        batch_size=config.batch_size, client_lr=config.client_lr, clip_norm=config.clip_norm,
        setup_key=jax.random.key(config.seed), stragglers=config.stragglers,
        failure_prob=config.failure_prob, path=config.path, client_map=config.client_map)
    params = model.init(jax.random.key(config.seed))
    if eval_fn is None:
        eval_fn = training.make_classifier_eval(model, *test_set(config, xte, yte))
    return {"data": data, "model": model, "design": design, "algorithm": algorithm,
            "params": params, "eval_fn": eval_fn}


def run(config: LightDPConfig, workdir=None, *, arrays=None, model=None, eval_fn=None,
        progress=False):
    """Trains one config; returns the :class:`jaxfl.training.RunResult`."""
    from jaxfl import training

    b = build(config, arrays=arrays, model=model, eval_fn=eval_fn)
    d = b["design"]
    extra = {"scheme": config.scheme, "mode": d.mode, "nominal_epsilon": d.epsilon,
             "exact_epsilon": d.exact_epsilon(), "sigma_u": d.sigma_u, "sigma_k": d.sigma_k,
             "gamma": d.gamma, "strict_scale": d.scale}
    return training.run(b["algorithm"], b["data"], params=b["params"], rounds=config.rounds,
                        seed=config.seed, workdir=workdir, eval_fn=b["eval_fn"],
                        eval_every=config.eval_every, delta=config.delta, accountant="rdp",
                        final_accountant="pld", config=config, progress=progress,
                        extra_record=extra)


# --------------------------------------------------------------------------------- sweeps


def table2_sweep() -> list[dict]:
    """Table II: S_bar = 10, C_bar in {10, 20, 30, 40}, eps in {3, 6, 9} (LightDP-FL)."""
    return [{"name": f"table2_eps{e}_C{c}", "epsilon": float(e), "max_colluders": c,
             "max_stragglers": 10, "scheme": "lightdp"}
            for e in (3, 6, 9) for c in (10, 20, 30, 40)]


def table3_sweep() -> list[dict]:
    """Table III: C_bar = 15, S_bar in {0, 10, 20, 30}, eps in {3, 6, 9} (LightDP-FL)."""
    return [{"name": f"table3_eps{e}_S{s}", "epsilon": float(e), "max_colluders": 15,
             "max_stragglers": s, "scheme": "lightdp"}
            for e in (3, 6, 9) for s in (0, 10, 20, 30)]


def fig3_sweep() -> list[dict]:
    """Fig. 3: N = 50, C_bar = 10, S_bar = 10; LightDP-FL vs LDP vs SMPC+DP at eps 3, 6, 9.

    The LightDP-FL runs coincide with Table II's C_bar = 10 column (same name, run once).
    """
    out = []
    for e in (3, 6, 9):
        for scheme in ("lightdp", "ldp", "smpc_dp"):
            name = f"table2_eps{e}_C10" if scheme == "lightdp" else f"fig3_eps{e}_{scheme}"
            out.append({"name": name, "epsilon": float(e), "max_colluders": 10,
                        "max_stragglers": 10, "scheme": scheme})
    return out


def fig4_sweep(epsilon: float = 6.0) -> list[dict]:
    """Fig. 4: link failures p = 0.05 (S ~ Bin(N, p)); LightDP-FL vs HE+DP (accuracy per round;
    the time axis comes from the cost model)."""
    return [{"name": f"fig4_{scheme}", "epsilon": epsilon, "max_colluders": 10,
             "max_stragglers": 10, "scheme": scheme, "stragglers": "bernoulli",
             "failure_prob": 0.05} for scheme in ("lightdp", "he_dp")]


def all_sweeps() -> dict[str, list[dict]]:
    return {"table2": table2_sweep(), "table3": table3_sweep(), "fig3": fig3_sweep(),
            "fig4": fig4_sweep()}


def unique_sweep() -> list[dict]:
    """Every run of the reproduction once (Fig. 3's LightDP-FL runs are Table II's)."""
    seen, out = set(), []
    for rows in all_sweeps().values():
        for row in rows:
            if row["name"] not in seen:
                seen.add(row["name"])
                out.append(row)
    return out
