"""Fig. 2: mean pairwise ε (δ = 1e-5) of adaptive composition on ER(50, 0.2): Thm 3 (secure
summation, view N̄_j) vs Thm 4 (plain messages) vs LDP, in paper mode and certified mode.

  python -m experiments.run --config experiments/configs/gossip/fig2_adaptive.py --workdir runs/g2

σ = 5 (LDP ε from 0.73 at T = 1 to 10.0 at T = 100). Full (T = 1..100, certified at 10
horizons, 2450 ordered pairs, Kalman filter vmapped over pairs): several minutes on 2 cores.
Expected (spec 5.3): mean ε Thm 3 = 0.4384, 1.2013, 2.4993 and Thm 4 = 0.7255, 2.1715, 2.7635
at T = 1, 10, 40; Thm 4 overtakes Thm 3 in mean Δ² near T = 40, in mean ε later.
"""

import dataclasses

from experiments import config as config_lib
from experiments.configs.gossip._experiments import AdaptiveConfig


def get_config(arg=None) -> AdaptiveConfig:
    a = config_lib.parse_arg(arg, variant="full")
    cfg = AdaptiveConfig(variant=a["variant"])
    if a["variant"] == "cpu":
        cfg = dataclasses.replace(cfg, T=60, certified_horizons=(1, 2, 5, 10, 20, 40, 60))
    if a["variant"] == "smoke":
        cfg = dataclasses.replace(cfg, n=12, p=0.4, T=6, certified_horizons=(1, 3, 6),
                                  name="fig2_adaptive_smoke")
    return cfg


def get_sweep():
    return [{"noise_multiplier": s} for s in (2.0, 5.0, 10.0)]
