"""ULDP-FL Fig. 9: user-level Poisson sub-sampling (``user_level_subsampling.sh``).

  python -m experiments.run --workdir runs/uldp/fig9 --config \
      "experiments/configs/uldp/fig9_subsampling.py:method=ULDP-AVG-ws,sampling_rate=0.1"

(a) Creditcard |U| = 1000 zipf, ULDP-AVG-w and -ws with q in {0.1, 0.3, 0.5, 0.7}, C = 1.0,
    T = 100: final epsilon 0.8349 / 2.7591 / 4.8622 / 7.1100 / 10.7255 (q = 1).
(b) MNIST |U| = 10000 zipf, q in {0.1, 0.3, 0.5}, eta_g = 100, C = 0.1, T = 200: 1.2035 /
    4.0399 / 7.2310 / 16.5129. cpu (MNIST): 6,000 records, 1,000 users, T = 20, Q = 2.
smoke: panel (a) on 1,000 synthetic Creditcard records, unless ``dataset=mnist`` is given.

GPU estimate (``experiments.bench.flops``): (b) as fig5_mnist.py, ~7 min per run (1.6e15 FLOPs;
fewer with q < 1); (a) as fig4_creditcard.py, ~1 s of FLOPs per run at 20% of an A100's 19.5
TFLOP/s fp32 (3.9e12 FLOP/s).
"""

from experiments import config as config_lib
from experiments.configs.uldp import _common

VARIANTS = _common.VARIANTS


def get_config(arg=None) -> _common.UldpConfig:
    a = config_lib.parse_arg(arg, dataset="", extra_keys=_common.FIGURE_ARG_KEYS)
    rest = ",".join(f"{k}={v}" for k, v in a.items() if k != "dataset")
    # Default panel (b), MNIST; ``variant=smoke`` defaults to panel (a), Creditcard: the
    # sub-sampled, weighted ULDP-AVG-ws is the same code for both, and fig5_mnist.py's smoke
    # already compiles ULDP-AVG with the MNIST CNN (a smoke of this figure on MNIST took twice
    # as long). ``variant=smoke,dataset=mnist`` runs panel (b) in its smoke setting.
    dataset = a["dataset"] or ("creditcard" if a.get("variant") == "smoke" else "mnist")
    if dataset not in ("mnist", "creditcard"):
        raise ValueError(f"fig9_subsampling: dataset must be mnist or creditcard, not {dataset!r}")
    if dataset == "creditcard":
        return _common.figure_config(rest or "method=ULDP-AVG-ws", figure="fig9_subsampling",
                                    dataset="creditcard", num_users=1000, distribution="zipf",
                                    method="ULDP-AVG-ws", clip_norm=1.0,
                                    cpu={"rounds": 20, "local_epochs": 5})
    return _common.figure_config(rest or None, figure="fig9_subsampling", dataset="mnist",
                                num_users=10000, distribution="zipf", method="ULDP-AVG-ws",
                                global_lr=100.0,
                                cpu={"rounds": 20, "local_epochs": 2, "max_records": 6000,
                                     "num_users": 1000},
                                smoke={"max_records": 200, "num_users": 10,
                                       "distribution": "uniform"})


def get_sweep(arg=None):
    smoke = _common.smoke_sweep(arg)
    if smoke is not None:
        return smoke
    out = [{"dataset": "creditcard", "method": "ULDP-AVG-w", "seed": s} for s in (0, 1, 3, 6, 10)]
    out += [{"dataset": "creditcard", "method": "ULDP-AVG-ws", "sampling_rate": q, "seed": s}
            for q in (0.1, 0.3, 0.5, 0.7) for s in (0, 1, 3, 6, 10)]
    out += [{"dataset": "mnist", "method": "ULDP-AVG-w", "seed": s} for s in (0, 1, 3, 6, 10)]
    out += [{"dataset": "mnist", "method": "ULDP-AVG-ws", "sampling_rate": q, "seed": s}
            for q in (0.1, 0.3, 0.5) for s in (0, 1, 3, 6, 10)]
    return out
