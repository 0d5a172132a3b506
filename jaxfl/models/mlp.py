"""Multi-layer perceptrons: a configurable ``mlp`` and ULDP-FL's credit-card ``fraud_net``.

* ``mlp``: flatten, then ``Dense -> ReLU [-> GroupNorm] [-> Dropout]`` per hidden layer, then a
  dense output layer with softmax cross-entropy. The default ``hidden=(200, 200)`` on MNIST is
  the "2NN" of McMahan et al. 2017 (199,210 parameters).
* ``fraud_net``: ``PrivateFraudNet(30, 30, 4)`` of the ULDP-FL code (the authors' code
  (FumiyukiKato/uldp-fl, branch ULDP-FL-2023)): ``Linear(30->30), ReLU, GroupNorm(1, 30)``, then 4 x
  ``[Linear(30->30), ReLU, GroupNorm(1, 30), Dropout(0.5)]``, then ``Linear(30->2)`` and
  cross-entropy; 5,012 parameters. GroupNorm uses PyTorch's epsilon 1e-5 and initialisation defaults
  to ``'torch'`` as in the authors' code.

Example Usage:
  >>> import jax
  >>> from jaxfl.models import get_model
  >>> from jaxfl.tree import num_params
  >>> num_params(get_model("fraud_net").init(jax.random.key(0)))
  5012
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxfl import validate
from jaxfl.models import Model, losses, register
from jaxfl.models._flax import from_flax


class MLP(nn.Module):
    """Dense layers with optional per-layer GroupNorm and dropout (see module docstring).

    Attributes:
      hidden: widths of the hidden layers.
      num_classes: output width.
      group_norm: number of GroupNorm groups after each hidden ReLU (0: no normalisation).
      dropout: dropout rate after each hidden layer whose index is ``>= dropout_from``.
      dropout_from: index of the first hidden layer followed by dropout.
    """

    hidden: Sequence[int]
    num_classes: int
    group_norm: int = 0
    dropout: float = 0.0
    dropout_from: int = 0

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        x = x.reshape(x.shape[0], -1).astype(jnp.result_type(x.dtype, jnp.float32))
        for i, width in enumerate(self.hidden):
            x = nn.relu(nn.Dense(width, name=f"dense_{i}")(x))
            if self.group_norm:
                x = nn.GroupNorm(num_groups=self.group_norm, epsilon=1e-5, name=f"norm_{i}")(x)
            if self.dropout > 0 and i >= self.dropout_from:
                x = nn.Dropout(self.dropout, deterministic=not train)(x)
        return nn.Dense(self.num_classes, name="head")(x)


def _validated(hidden, num_classes, input_shape, dropout):
    hidden = tuple(validate.positive_int(f"hidden[{i}]", h) for i, h in enumerate(hidden))
    num_classes = validate.positive_int("num_classes", num_classes)
    input_shape = tuple(validate.positive_int(f"input_shape[{i}]", d)
                        for i, d in enumerate(input_shape))
    dropout = validate.non_negative("dropout", dropout, error=validate.JaxflValueError)
    if dropout >= 1.0:
        raise validate.JaxflValueError(f"Expected dropout < 1, got dropout={dropout!r}.")
    return hidden, num_classes, input_shape, dropout


@register("mlp")
def mlp(*, hidden: Sequence[int] = (200, 200), num_classes: int = 10,
        input_shape: tuple = (784,), group_norm: int = 0, dropout: float = 0.0,
        init_scheme: str = "flax") -> Model:
    """A ReLU MLP classifier.

    Args:
      hidden: hidden-layer widths (``()`` gives logistic regression).
      num_classes: number of classes.
      input_shape: shape of one example (flattened).
      group_norm: GroupNorm groups after each hidden ReLU; 0 disables normalisation. Each width
        must be divisible by it.
      dropout: dropout rate after every hidden layer (active only with ``train=True`` and a key).
      init_scheme: ``'flax'`` or ``'torch'``.

    Returns:
      The model (softmax cross-entropy, accuracy).
    """
    hidden, num_classes, input_shape, dropout = _validated(hidden, num_classes, input_shape,
                                                           dropout)
    group_norm = validate.positive_int("group_norm", group_norm, minimum=0)
    for i, h in enumerate(hidden):
        if group_norm and h % group_norm:
            raise validate.JaxflValueError(
                f"Expected hidden[{i}]={h} divisible by group_norm={group_norm}.")
    module = MLP(hidden=hidden, num_classes=num_classes, group_norm=group_norm, dropout=dropout)
    return from_flax(module, name="mlp", loss=losses.softmax_cross_entropy,
                     metrics=losses.classification_metrics, input_shape=input_shape,
                     init_scheme=init_scheme)


@register("fraud_net")
def fraud_net(*, input_dim: int = 30, width: int = 30, num_blocks: int = 4,
              num_classes: int = 2, dropout: float = 0.5, init_scheme: str = "torch") -> Model:
    """ULDP-FL's ``PrivateFraudNet(input_dim, width, num_blocks)`` for the credit-card set.

    Args:
      input_dim: number of input features (30 for the Kaggle credit-card set).
      width: width of every hidden layer.
      num_blocks: number of ``[Linear, ReLU, GroupNorm(1), Dropout]`` blocks after the first
        ``[Linear, ReLU, GroupNorm(1)]`` block.
      num_classes: output classes (2).
      dropout: dropout rate of the blocks.
      init_scheme: ``'torch'`` (as the authors' code) or ``'flax'``.

    Returns:
      The model (softmax cross-entropy, accuracy).
    """
    hidden = (width,) * (validate.positive_int("num_blocks", num_blocks, minimum=0) + 1)
    hidden, num_classes, input_shape, dropout = _validated(hidden, num_classes, (input_dim,),
                                                           dropout)
    module = MLP(hidden=hidden, num_classes=num_classes, group_norm=1, dropout=dropout,
                 dropout_from=1)
    return from_flax(module, name="fraud_net", loss=losses.softmax_cross_entropy,
                     metrics=losses.classification_metrics, input_shape=input_shape,
                     init_scheme=init_scheme)
