"""ULDP-FL Fig. 8: ULDP-AVG vs ULDP-AVG-w (``optimal_weighting.sh``), test loss.

  python -m experiments.run --config \
      "experiments/configs/uldp/fig8_weighting.py:method=ULDP-AVG-w,num_silos=20" \
      --set data_dir=/path/with/creditcard --workdir runs/uldp/fig8

Creditcard, |U| = 1000, |S| in {5, 20, 50}, uniform or zipf (users and silos), C = 1.0,
eta_g = 10, eta_l = 0.01, Q = 30, T = 100. ``dataset=tcga_brca`` selects the script's TcgaBrca
runs (|U| = 200, C = 0.1, Q = 50, T = 50). Claim: under zipf, AVG-w beats AVG and the gap grows
with |S|; under uniform they are close. cpu: T = 20, Q = 5.

GPU estimate (``experiments.bench.flops``): as fig4_creditcard.py, 3.7e12 FLOPs, ~1 s of FLOPs
per run at 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s); latency of the sequential local
steps dominates.
"""

from experiments import config as config_lib
from experiments.configs.uldp import _common

VARIANTS = _common.VARIANTS


def get_config(arg=None) -> _common.UldpConfig:
    a = config_lib.parse_arg(arg, dataset="creditcard", extra_keys=_common.FIGURE_ARG_KEYS)
    rest = ",".join(f"{k}={v}" for k, v in a.items() if k != "dataset")
    if a["dataset"] == "tcga_brca":
        return _common.figure_config(rest or None, figure="fig8_weighting", dataset="tcga_brca",
                                    num_users=200, distribution="zipf",
                                    cpu={"rounds": 20, "local_epochs": 10})
    return _common.figure_config(rest or None, figure="fig8_weighting", dataset="creditcard",
                                num_users=1000, distribution="zipf", clip_norm=1.0,
                                cpu={"rounds": 20, "local_epochs": 5})


def get_sweep(arg=None):
    smoke = _common.smoke_sweep(arg)
    if smoke is not None:
        return smoke
    return [{"method": m, "num_silos": s, "distribution": d, "seed": seed}
            for s in (5, 20, 50) for d in ("uniform", "zipf") for m in ("ULDP-AVG", "ULDP-AVG-w")
            for seed in (0, 1, 3, 6, 10)]
