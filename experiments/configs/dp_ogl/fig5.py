"""DP-OGL Fig. 5 (App. H): the Fig. 3 curves on Fashion-MNIST (Fig. 5's PwP panel: fig4.py with
``dataset=fashion_mnist``; it equals MNIST's except LB, whose membership depends on labels).

  python -m experiments.run --config experiments/configs/dp_ogl/fig5.py:curve=ri4_s10,variant=cpu \
      --workdir runs/dp_ogl/fig5/ri4_s10
  python -m experiments.sweep --config experiments/configs/dp_ogl/fig5.py:variant=smoke \
      --workdir /tmp/dp_ogl_fig5_smoke        # 2 curves x 2 seeds, seconds

Same arguments as fig3.py; the dataset is Fashion-MNIST (read from JAXFL_DATA_DIR or
/usr/share/datasets/fashion-mnist). Expected: the same orderings as on MNIST with slightly
worse curves.

GPU estimate (``experiments.bench.flops``): as fig3.py, FedAvg CNN, 6.4e7 training FLOPs per
example (3 x forward), 4.0e7 examples, 2.5e15 FLOPs: ~11 min per curve at 20% of an A100's 19.5
TFLOP/s fp32 (3.9e12 FLOP/s).
"""

from experiments import config as config_lib
from experiments.configs.dp_ogl import _common

VARIANTS = _common.VARIANTS

DATASET = "fashion_mnist"


def _arg(arg):
    return config_lib.parse_arg(arg, curve="ri4_s10", variant="full", mode="strict",
                                variants=VARIANTS)


def get_config(arg=None) -> _common.DpOglConfig:
    a = _arg(arg)
    return _common.make_config(a["curve"], variant=a["variant"], mode=a["mode"],
                               dataset=DATASET)


def get_sweep(arg=None):
    """Every curve of Fig. 3 on Fashion-MNIST; ``variant=smoke``: two curves x two seeds."""
    a = _arg(arg)
    if a["variant"] == "smoke":
        return [{**_common.curve_fields(c, "smoke"), "seed": s}
                for c in _common.SMOKE_TRAIN_CURVES for s in _common.SMOKE_SEEDS]
    return [_common.curve_fields(c, a["variant"]) for c in _common.FIG3_CURVES]
