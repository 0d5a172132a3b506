"""Linear models: multinomial / binary logistic regression and least-squares regression.

* ``logreg``: multinomial logistic regression, one affine map to ``num_classes`` logits with
  softmax cross-entropy. With the MNIST default (784 inputs, 10 classes) it has d = 7,850
  parameters, the model of the decentralized gossip experiment (Koskela & Kulkarni 2025, Sec. 4,
  Fig. 3, App. F).
  ``logreg(num_classes=1)`` returns the binary model below.
* ``binary_logreg``: one logit with sigmoid binary cross-entropy and a 0.5 threshold; the FLamby
  Fed-Heart-Disease baseline (Linear 13 -> 1 + sigmoid + BCE, 14 parameters) used by ULDP-FL
  (Kato et al. 2023, Sec. 5.1). Labels are 0/1.
* ``linear``: linear regression with per-example squared error, e.g. UCI Parkinsons
  telemonitoring (UPDRS scores as targets; ``output_dim=2`` for motor and total UPDRS).

Inputs of any trailing shape are flattened, so ``input_shape=(28, 28, 1)`` and ``(784,)`` give
the same parameters.

Example Usage:
  >>> import jax
  >>> from jaxfl.models import get_model
  >>> from jaxfl.tree import num_params
  >>> m = get_model("logreg")
  >>> num_params(m.init(jax.random.key(0)))
  7850
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxfl import validate
from jaxfl.models import Model, losses, register
from jaxfl.models._flax import from_flax


class Affine(nn.Module):
    """Flatten, then one dense layer."""

    features: int

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        del train  # no stochastic layers
        x = x.reshape(x.shape[0], -1).astype(jnp.result_type(x.dtype, jnp.float32))
        return nn.Dense(self.features, name="dense")(x)


def _shape(input_shape) -> tuple:
    input_shape = tuple(input_shape)
    for i, d in enumerate(input_shape):
        validate.positive_int(f"input_shape[{i}]", d)
    return input_shape


@register("logreg")
def logreg(*, num_classes: int = 10, input_shape: tuple = (784,),
           init_scheme: str = "flax") -> Model:
    """Multinomial logistic regression (``num_classes=1``: binary, see :func:`binary_logreg`).

    Args:
      num_classes: number of classes K; outputs are ``[B, K]`` logits.
      input_shape: shape of one example (flattened).
      init_scheme: ``'flax'`` (LeCun-normal kernel, zero bias) or ``'torch'``.

    Returns:
      The model; labels are integers in ``[0, K)``.
    """
    num_classes = validate.positive_int("num_classes", num_classes)
    if num_classes == 1:
        return binary_logreg(input_shape=input_shape, init_scheme=init_scheme)
    return from_flax(Affine(num_classes), name="logreg", loss=losses.softmax_cross_entropy,
                     metrics=losses.classification_metrics, input_shape=_shape(input_shape),
                     init_scheme=init_scheme)


@register("binary_logreg")
def binary_logreg(*, input_shape: tuple = (13,), init_scheme: str = "flax") -> Model:
    """Binary logistic regression; outputs ``[B, 1]`` logits, labels 0/1 (FLamby heart baseline).

    Args:
      input_shape: shape of one example (13 clinical features for Fed-Heart-Disease).
      init_scheme: ``'flax'`` or ``'torch'`` (PyTorch's default, as the ULDP-FL code).

    Returns:
      The model; the metrics are the binary cross-entropy and the accuracy at threshold 0.5.
    """
    return from_flax(Affine(1), name="binary_logreg", loss=losses.sigmoid_binary_cross_entropy,
                     metrics=losses.binary_metrics, input_shape=_shape(input_shape),
                     init_scheme=init_scheme)


@register("linear")
def linear(*, output_dim: int = 1, input_shape: tuple = (16,),
           init_scheme: str = "flax") -> Model:
    """Linear regression with squared loss.

    Args:
      output_dim: number of regression targets; outputs are ``[B, output_dim]`` and targets may be
        ``[B]`` when ``output_dim == 1``.
      input_shape: shape of one example (default: the 16 voice measures of UCI Parkinsons).
      init_scheme: ``'flax'`` or ``'torch'``.

    Returns:
      The model; metrics are ``loss`` (= ``mse``, the mean over targets) and ``mae``.
    """
    output_dim = validate.positive_int("output_dim", output_dim)
    return from_flax(Affine(output_dim), name="linear", loss=losses.squared_error,
                     metrics=losses.regression_metrics, input_shape=_shape(input_shape),
                     init_scheme=init_scheme)
