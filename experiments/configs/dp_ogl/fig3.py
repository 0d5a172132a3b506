"""DP-OGL Fig. 3 (MNIST): average training loss and test accuracy of the personalized models.

  python -m experiments.run --config experiments/configs/dp_ogl/fig3.py:curve=ri4_s10 \
      --workdir runs/dp_ogl/fig3/ri4_s10
  python -m experiments.run \
      --config "experiments/configs/dp_ogl/fig3.py:curve=plus_ri4_s2,variant=cpu,mode=paper" \
      --workdir runs/dp_ogl/cpu/plus_ri4_s2
  python -m experiments.sweep --config experiments/configs/dp_ogl/fig3.py:variant=smoke \
      --workdir /tmp/dp_ogl_fig3_smoke        # a DP-OGL+ curve x 2 seeds
  python -m experiments.sweep \
      --config "experiments/configs/dp_ogl/fig3.py:variant=cpu,seeds=0:1:2" \
      --where curve=gl,cl4_s2,ri4_s10 --workdir runs/dp_ogl/fig3_seeds   # structures x seeds
  python -m experiments.reproduce.dp_ogl --scale cpu --workdir runs/dp_ogl   # every curve

Arguments (``key=value``): ``curve`` (a name of ``_common.CURVES``; the panels are
``_common.FIG3``: ab = structures, cd = N and M, ef = S, gh = sigma), ``variant`` = full | cpu |
smoke, ``mode`` = strict | paper, ``dataset`` = mnist | fashion_mnist, ``seeds`` (sweep only:
``0:1:2`` crosses every curve with these seeds; the points of a curve share one vmapped run).

Full: 100 workers, FedAvg CNN, 200 epochs, batch 200 (accelerator; about 10^11 example-gradient
FLOPs per epoch). CPU: MLP 784-64-10, 20k examples, 100 epochs: about 2 min per curve on the
shared 2-core machine (about 0.5 s per epoch plus compilation; LB curves about 3x longer: each
worker trains once per group). Smoke: seconds.
Expected: the orderings of Sec. VI-B (see docs/reproduction/dp_ogl.md for what reproduces); the
summary's ``privacy`` is the PwP accountant's report (headline = worst pair).

GPU estimate (``experiments.bench.flops``): FedAvg CNN, 6.4e7 training FLOPs per example (3 x
forward), 200 epochs x 100 workers x 10 steps x batch 200 = 4.0e7 examples, 2.5e15 FLOPs: ~11 min
per curve at 20% of an A100's 19.5 TFLOP/s fp32 (3.9e12 FLOP/s) (LB curves ~3x).
"""

from experiments import config as config_lib
from experiments.configs.dp_ogl import _common

VARIANTS = _common.VARIANTS

DATASET = "mnist"


def _arg(arg):
    return config_lib.parse_arg(arg, curve="ri4_s10", variant="full", mode="strict",
                                variants=VARIANTS,
                                dataset=DATASET, seeds=())


def get_config(arg=None) -> _common.DpOglConfig:
    a = _arg(arg)
    return _common.make_config(a["curve"], variant=a["variant"], mode=a["mode"],
                               dataset=a["dataset"])


def get_sweep(arg=None):
    """Every curve of Fig. 3 (all panels), crossed with ``seeds`` when given; ``variant=smoke``:
    a DP-OGL+ curve x two seeds."""
    a = _arg(arg)
    if a["variant"] == "smoke":
        return [{**_common.curve_fields(c, "smoke"), "seed": s}
                for c in _common.SMOKE_TRAIN_CURVES for s in _common.SMOKE_SEEDS]
    seeds = a["seeds"] or (None,)
    return [{**_common.curve_fields(c, a["variant"]), **({} if s is None else {"seed": s})}
            for c in _common.FIG3_CURVES for s in seeds]
