"""Config of the LightDP-FL experiments (Hong et al. 2024, Sec. VI): data only.

A run is one frozen :class:`LightDPConfig`; its builder,
:func:`experiments.papers.lightdp.run_spec`, loads the data, designs the noise
(:func:`jaxfl.accounting.lightdp.design`) and builds the algorithm with its accountant. The
setting files next to this one (``cifar10_resnet18.py``, ``mnist_cnn.py``,
``fashion_mnist_cnn.py``) only choose field values and sweeps; the sweep lists below (the
paper's Tables II/III and Figs. 3/4) are plain override dicts, and :func:`figure_configs` gives
a figure's runs at a reproduction scale (``experiments.reproduce.lightdp``). The reproduction's
layout of its runs is declared here too: the tables' and Fig. 3's cells (:func:`table_layout`,
:func:`fig3_layout`) and the runs each claim compares (:func:`trend_pairs`, :func:`fig3_pairs`),
with what its page says of a config (:func:`model_facts`, :func:`setting_of`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from experiments import config as config_lib
from experiments.configs.base import TrainingConfig, checked
from jaxfl import validate

SCHEMES = ("lightdp", "ldp", "smpc_dp", "he_dp")
DATASETS = ("cifar10", "mnist", "fashion_mnist")
DATASET_NAMES = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "cifar10": "CIFAR-10"}
# The setting a reproduction's data files are written for (a page refuses files of another).
SETTING = ("dataset", "model", "num_clients", "rounds", "examples_per_client", "clip_norm",
           "delta", "mode", "variant")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LightDPConfig(TrainingConfig):
    """One LightDP-FL experiment. Defaults are the paper's CIFAR-10 setting (Sec. VI;
    our choices where the paper is silent)."""

    builder = "experiments.papers.lightdp:run_spec"

    name: str = "lightdp"
    dataset: str = checked("cifar10", DATASETS)  # cifar10 | mnist | fashion_mnist
    model: str = "resnet18_gn"
    model_kwargs: tuple = ()  # (("features", (8, 16)), ...)
    num_clients: int = checked(50, "int")
    # equal sizes: weighted = unweighted FedAvg (A21)
    examples_per_client: int = checked(1000, "int")
    shards_per_client: int = checked(2, "int")  # label-sorted shards (non-IID, A13)
    test_examples: int | None = None  # None = the whole test split
    # average-pool images by this factor (CPU scaling: 28x28 -> 14x14)
    image_pool: int = checked(1, "int")
    rounds: int = 150
    # local steps = epochs x (examples_per_client // batch_size)
    local_epochs: int = checked(1, "int")
    batch_size: int = checked(32, "int")
    client_lr: float = 0.05
    clip_norm: float = 1.0  # W, on the local update (A11)
    sensitivity_mode: str = "nbafl"  # nbafl: 2W/|D_i| ; replace: 2W (rigorous, huge)
    scheme: str = checked("lightdp", SCHEMES)  # lightdp | ldp | smpc_dp | he_dp (trains as smpc_dp)
    mode: str = "strict"  # noise calibration: strict (sound) | paper (Example 1 as published)
    epsilon: float = 3.0
    max_colluders: int = checked(10, "count")
    max_stragglers: int = checked(10, "count")
    stragglers: str = "design"  # design (S ~ uniform{0..S_bar}) | bernoulli | none
    failure_prob: float = 0.05  # bernoulli link failures (Fig. 4)
    composition: str = "sqrt_T_std"
    constant: str = "paper"
    path: str = "aggregate"
    # None: the library chooses per backend
    client_map: str | None = checked(None, ("vmap", "map", None))

    def check(self):
        from jaxfl.accounting import lightdp as acct
        from jaxfl.algorithms import lightdp as alg

        validate.one_of("mode", self.mode, acct.MODES)
        validate.one_of("composition", self.composition, acct.COMPOSITIONS)
        validate.one_of("constant", self.constant, acct.CONSTANTS)
        validate.one_of("sensitivity_mode", self.sensitivity_mode, acct.SENSITIVITY_MODES)
        validate.one_of("stragglers", self.stragglers, alg.STRAGGLER_MODELS)
        validate.one_of("path", self.path, alg.PATHS)
        if self.batch_size > self.examples_per_client:
            raise validate.JaxflValueError(
                f"Expected batch_size <= examples_per_client, got {self.batch_size} > "
                f"{self.examples_per_client}.")


def setting_of(cfg: LightDPConfig) -> dict:
    """The :data:`SETTING` fields of ``cfg``: what a data file records it was written for."""
    return {k: getattr(cfg, k) for k in SETTING}


def model_facts(cfg: LightDPConfig) -> dict:
    """What the reproduction page says of ``cfg``'s images and model: the image ``side``
    (28-pixel MNIST images after pooling), the CNN's ``kw``: its conv ``features`` and dense
    ``hidden`` widths (lists; empty for a model without them), and its number of ``convs``."""
    kw = {k: list(dict(cfg.model_kwargs).get(k, ())) for k in ("features", "hidden")}
    return dict(side=28 // cfg.image_pool, kw=kw, convs=len(kw["features"]))


def variant_of(variants: dict, arg: str | None, default: str) -> str:
    """The ``variant=`` of a setting file's ``arg`` (default ``default``)."""
    fields = {f.name for v in variants.values() for f in dataclasses.fields(v)}
    return config_lib.parse_arg(arg, variant=default, extra_keys=fields,
                                variants=variants)["variant"]


def sweep_for(variants: dict, arg: str | None, default: str) -> list[dict]:
    """``get_sweep`` of a setting file: two seeds in smoke, else every reproduction run."""
    return smoke_sweep() if variant_of(variants, arg, default) == "smoke" else unique_sweep()


def get_config_from(variants: dict, arg: str | None, default: str) -> LightDPConfig:
    """``get_config`` of a setting file: ``arg`` = ``variant=...,field=value,...``."""
    fields = {f.name for v in variants.values() for f in dataclasses.fields(v)}
    a = config_lib.parse_arg(arg, variant=default, extra_keys=fields, variants=variants)
    variant = a.pop("variant")
    return config_lib.apply_overrides(variants[variant], a)


# --------------------------------------------------------------------------------- sweeps


# The paper's Tables II and III (LightDP-FL at eps 3, 6, 9): a cell's run name, the swept bound
# (its columns and label), the bound held fixed, the accuracies (%) printed by eps (CIFAR-10).
TABLES = {
    "table2": dict(cell="table2_eps{e}_C{c}", cols=(10, 20, 30, 40), label="C̄", title="Table II",
                   fixed="S̄ = 10", paper={3: (50.8, 49.6, 47.5, 45.8), 6: (54.5, 52.1, 50.6, 49.7),
                                          9: (61.9, 60.6, 57.9, 55.3)}),
    "table3": dict(cell="table3_eps{e}_S{c}", cols=(0, 10, 20, 30), label="S̄", title="Table III",
                   fixed="C̄ = 15", paper={3: (51.7, 50.2, 48.5, 47.2), 6: (53.2, 51.7, 50.4, 48.8),
                                          9: (55.1, 53.4, 51.9, 50.9)})}


EPSILONS = (3, 6, 9)  # the tables' rows and Fig. 3's panels
# Fig. 3's lines: (run name at epsilon e, legend); the LightDP-FL runs are Table II's C_bar = 10.
FIG3_LINES = (("table2_eps{e}_C10", "LightDP-FL"), ("fig3_eps{e}_ldp", "LDP"),
              ("fig3_eps{e}_smpc_dp", "SMPC+DP"))
# Fig. 3's claims: (claim on the page, its summary line, the other scheme, its legend, margin).
FIG3_CLAIMS = (
    ("LightDP-FL beats vanilla LDP at every ε (Fig. 3)",
     "LightDP-FL beats vanilla LDP at every ε", "ldp", "LDP", 0.0),
    ("... by more than 15 points", "more than 15 points over LDP at every ε", "ldp", "LDP", 15.0),
    ("LightDP-FL beats SMPC+DP at every ε (Fig. 3; the paper's own noise formulas predict not)",
     "LightDP-FL beats SMPC+DP at every ε (the paper's own noise formulas predict not)",
     "smpc_dp", "SMPC+DP", 0.0))
FIG4_LABELS = {"lightdp": "LightDP-FL", "he_dp": "HE+DP"}  # Fig. 4's runs fig4_<scheme>


def table_names(which: str) -> list[str]:
    """The run names of table ``which``'s cells, row by row (epsilon, then the columns)."""
    t = TABLES[which]
    return [t["cell"].format(e=e, c=c) for e in EPSILONS for c in t["cols"]]


def table_layout(which: str, cell) -> dict:
    """Table ``which`` (:data:`TABLES`) as printed: its fields, ``cols`` and ``rows`` (``e``
    and per column ``ci``: ``cell(run name)``, and ``paper``: the paper's value)."""
    t = TABLES[which]
    return {**t, "cols": list(t["cols"]), "rows": [{"e": e, "cells": [
        {"ci": cell(t["cell"].format(e=e, c=c)), "paper": p}
        for c, p in zip(t["cols"], t["paper"][e], strict=True)]} for e in EPSILONS]}


def fig3_layout(cell) -> list[dict]:
    """Fig. 3's table: per epsilon ``e`` its ``cells``, ``cell(run name)`` of each line of
    :data:`FIG3_LINES`."""
    return [{"e": e, "cells": [cell(n.format(e=e)) for n, _ in FIG3_LINES]} for e in EPSILONS]


def fig3_pairs(ran) -> list[tuple[str, list[tuple[str, str, str]], dict]]:
    """Fig. 3's claims (:data:`FIG3_CLAIMS`) at the epsilons whose other scheme's run is in
    ``ran`` (a claim without any left out): ``(claim, pairs, fields)``, each pair
    ``(LightDP-FL's run, the other scheme's, "ε=e")``; ``fields``: the claim's ``short``
    summary line, the other scheme's ``label`` and the ``margin``."""
    out = []
    for claim, short, other, label, margin in FIG3_CLAIMS:
        pairs = [(f"table2_eps{e}_C10", f"fig3_eps{e}_{other}", f"ε={e}") for e in EPSILONS
                 if f"fig3_eps{e}_{other}" in ran]
        out += [(claim, pairs, dict(short=short, label=label, margin=margin))] if pairs else []
    return out


def trend_pairs(which: str) -> list[tuple[str, list[tuple[str, str, str]], dict]]:
    """Table ``which``'s two claimed trends: ``(claim, pairs, {})``, each pair of adjacent
    cells ``(run claimed higher, run claimed lower, label)``: accuracy increases with epsilon
    (per column) and decreases with the swept bound (per epsilon)."""
    t = TABLES[which]
    name, label, cols = t["cell"].format, t["label"], t["cols"]
    up = [(name(e=b, c=c), name(e=a, c=c), f"ε={b} > ε={a} at {label}={c}")
          for c in cols for a, b in zip(EPSILONS, EPSILONS[1:])]
    down = [(name(e=e, c=a), name(e=e, c=b), f"{label}={a} > {label}={b} at ε={e}")
            for e in EPSILONS for a, b in zip(cols, cols[1:])]
    return [(f"{t['title']}: accuracy increases with ε", up, {}),
            (f"{t['title']}: accuracy decreases with {label}", down, {})]


def table2_sweep() -> list[dict]:
    """Table II: S_bar = 10, C_bar in {10, 20, 30, 40}, eps in {3, 6, 9} (LightDP-FL)."""
    t = TABLES["table2"]
    return [{"name": t["cell"].format(e=e, c=c), "epsilon": float(e), "max_colluders": c,
             "max_stragglers": 10, "scheme": "lightdp"} for e in EPSILONS for c in t["cols"]]


def table3_sweep() -> list[dict]:
    """Table III: C_bar = 15, S_bar in {0, 10, 20, 30}, eps in {3, 6, 9} (LightDP-FL)."""
    t = TABLES["table3"]
    return [{"name": t["cell"].format(e=e, c=s), "epsilon": float(e), "max_colluders": 15,
             "max_stragglers": s, "scheme": "lightdp"} for e in EPSILONS for s in t["cols"]]


def fig3_sweep() -> list[dict]:
    """Fig. 3: N = 50, C_bar = 10, S_bar = 10; LightDP-FL vs LDP vs SMPC+DP at eps 3, 6, 9.

    The LightDP-FL runs coincide with Table II's C_bar = 10 column (same name, run once).
    """
    out = []
    for e in EPSILONS:
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


def smoke_sweep() -> list[dict]:
    """The smoke sweep of every setting file: two seeds (one vmapped batch)."""
    return [{"seed": 0}, {"seed": 1}]


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


# Seeds of a reproduction run of each figure (``experiments.reproduce.lightdp``): (default,
# {scale: seeds}).
FIGURE_SEEDS = dict(table2=(5, {"smoke": 2}), table3=(5, {"smoke": 2}), fig3=(1, {"cpu": 3}),
                    fig4=(1, {}))


def scale_config(scale: str) -> LightDPConfig:
    """The reproduction's config at ``scale``: ``full`` the paper's CIFAR-10 / ResNet-18
    setting, else MNIST (``cpu``, ``smoke``); the setting files are read by path (they import
    this module)."""
    here = Path(__file__).parent
    if scale == "full":
        return config_lib.load_config(str(here / "cifar10_resnet18.py"))
    return config_lib.load_config(f"{here / 'mnist_cnn.py'}:variant={scale}")


def figure_configs(scale: str, name: str) -> list[LightDPConfig]:
    """Figure ``name``'s runs at ``scale`` (:func:`all_sweeps`; smoke: :func:`smoke_rows`), each
    over its :data:`FIGURE_SEEDS`; a seed sets the partition, the data order, the model
    initialisation, the pairwise masks and the noise (``experiments.papers.lightdp``)."""
    base, (default, by_scale) = scale_config(scale), FIGURE_SEEDS[name]
    rows = all_sweeps()[name]
    if scale == "smoke":
        rows = smoke_rows(rows, base.num_clients)
    return [dataclasses.replace(base, **r, seed=s) for r in rows
            for s in range(by_scale.get(scale, default))]


def smoke_rows(rows: list[dict], num_clients: int) -> list[dict]:
    """Smoke: keep one epsilon and map C_bar / S_bar to a small N (labels keep the paper's)."""
    f, out = num_clients / 50, []
    for row in rows:
        if row["epsilon"] == 3.0 or row["name"].startswith("fig4"):
            c = min(num_clients - 3, max(0, round(row["max_colluders"] * f)))
            s = min(num_clients - 3 - c, max(0, round(row["max_stragglers"] * f)))
            out.append({**row, "max_colluders": c, "max_stragglers": s})
    return out
