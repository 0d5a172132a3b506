"""DP-OGL Fig. 5 (App. H): the Fig. 3 / Fig. 4(a) curves on Fashion-MNIST.

  python -m experiments.run --config experiments/configs/dp_ogl/fig5.py:curve=ri4_s10,variant=cpu \
      --workdir runs/dp_ogl/fig5/ri4_s10

Same arguments as fig3.py; the dataset is Fashion-MNIST (read from JAXFL_DATA_DIR or
/usr/share/datasets/fashion-mnist). Expected: the same orderings as on MNIST with slightly
worse curves; the PwP curves equal MNIST's except LB (membership depends on the labels).
"""

from experiments import config as config_lib
from experiments.configs.dp_ogl import _common


def get_config(arg=None) -> _common.DpOglConfig:
    a = config_lib.parse_arg(arg, curve="ri4_s10", variant="full", mode="strict")
    return _common.make_config(a["curve"], variant=a["variant"], mode=a["mode"],
                               dataset="fashion_mnist")


def get_sweep():
    names = list(dict.fromkeys(c for panel in _common.FIG3.values() for c in panel))
    return [_common.curve_overrides(c) for c in names]
