"""Fig. 2: mean pairwise ε (δ = 1e-5) of adaptive composition on ER(50, 0.2): Thm 3 (secure
summation, view N̄_j) vs Thm 4 (plain messages) vs LDP, in paper mode and certified mode.

  python -m experiments.sweep --config experiments/configs/gossip/fig2_adaptive.py:variant=cpu \
      --workdir runs/g2

A privacy study (accounting only); one sweep point per view (tm3, tm4, tm4_exact, ldp). σ = 5
(LDP ε from 0.73 at T = 1 to 10.0 at T = 100). Each point's ``summary.json`` holds the
``privacy`` (certified) and ``privacy_paper`` reports, whose ``details.curve`` gives the mean
pairwise ε per T (paper: T = 1..T; certified: ``certified_horizons``); the headline is the worst
pair. Full (T = 1..100, 2450 ordered pairs, Kalman filter vmapped over pairs): several minutes
on 2 cores. Expected (reference values): mean ε Thm 3 = 0.4384, 1.2013, 2.4993 and Thm 4 = 0.7255,
2.1715, 2.7635 at T = 1, 10, 40; Thm 4 overtakes Thm 3 in mean Δ² near T = 40, in mean ε later.

GPU estimate: accounting only (no model, no training FLOPs); the all-pairs sensitivity tables run
in float64 on the host, an accelerator does not shorten them.
"""

import dataclasses

from experiments import config as config_lib
from experiments.configs.gossip._common import StudyConfig

VARIANTS = ("full", "cpu", "smoke")


def get_config(arg=None) -> StudyConfig:
    a = config_lib.parse_arg(arg, variant="full", variants=VARIANTS)
    cfg = StudyConfig(name="fig2_adaptive", variant=a["variant"], n=50, p=0.2, graph_seed=2,
                      view="tm3", target=None, observers_per_kind=None, noise_multiplier=5.0,
                      T=100, certified_horizons=(1, 2, 5, 10, 20, 30, 40, 60, 80, 100),
                      eval_every=10)
    if a["variant"] == "cpu":
        cfg = dataclasses.replace(cfg, T=60, certified_horizons=(1, 2, 5, 10, 20, 40, 60),
                                  eval_every=20)
    if a["variant"] == "smoke":
        cfg = dataclasses.replace(cfg, n=12, p=0.4, T=6, certified_horizons=(1, 3, 6),
                                  eval_every=3, name="fig2_adaptive_smoke")
    return cfg


def get_sweep(arg=None):
    a = config_lib.parse_arg(arg, variant="full", variants=VARIANTS)
    views = ("tm3", "tm4") if a["variant"] == "smoke" else ("tm3", "tm4", "tm4_exact", "ldp")
    return [{"view": v} for v in views]
