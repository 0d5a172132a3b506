"""Small convolutional classifiers used by the papers (NHWC inputs).

* ``fedavg_cnn``: the CNN of McMahan et al. 2017 (FedAvg), the "4-layer CNN" of DP-OGL (Kiani
  et al. 2024, Sec. VI-A, and issue 7): conv 5x5 32 'same' + ReLU, 2x2 max-pool, conv 5x5 64 'same'
  + ReLU, 2x2 max-pool, dense 512 ReLU, dense 10. On 28x28x1 it has 1,663,370 parameters.
* ``femnist_cnn``: the same architecture with LEAF's FEMNIST sizes (dense 2048, 62 classes),
  6,603,710 parameters, the subject-level DP FEMNIST model (Marathe & Kanani 2022,
  Sec. 4, from LEAF's reference code).
* ``uldp_cnn``: ULDP-FL's ``CNNMnist`` (the authors' code (FumiyukiKato/uldp-fl, branch
  ULDP-FL-2023)): conv 5x5 10 'valid', 2x2 max-pool, ReLU; conv 5x5 20 'valid', channel dropout 0.5,
  2x2 max-pool, ReLU; dense 50 ReLU, dropout 0.5, dense 10; 21,840 parameters. It is also our small
  alternative for DP-OGL when the large CNN does not learn.
* ``cifar_cnn``: a CIFAR-size CNN in the style of the TensorFlow CIFAR-10 tutorial that FedAvg
  used (without local response normalisation): conv 5x5 32 / 64 'same' with 2x2 max-pools, dense
  384 and 192, 10 classes; 1,702,794 parameters on 32x32x3. Every size is configurable so CPU
  tests and LightDP-FL's CI profile can use a tiny one.

Outputs are logits (the authors' ``log_softmax`` is a shift of the logits, so the cross-entropy
is the same). Losses are softmax cross-entropy with integer labels.

Example Usage:
  >>> import jax
  >>> from jaxfl.models import get_model
  >>> from jaxfl.tree import num_params
  >>> num_params(get_model("uldp_cnn").init(jax.random.key(0)))
  21840
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxfl import validate
from jaxfl.models import Model, conv, losses, register
from jaxfl.models._flax import from_flax


class ConvNet(nn.Module):
    """``[conv -> ReLU -> max-pool 2x2]`` per entry of ``features``, then ReLU dense layers.

    Attributes:
      features: output channels of each conv layer.
      hidden: widths of the dense layers after flattening.
      num_classes: output width.
      kernel_size: square conv kernel size.
      padding: ``'SAME'`` or ``'VALID'``.
      dropout: dropout rate after each hidden dense layer (0: none).
      channel_dropout: channel-wise (Dropout2d) rate before the pool of the last conv (0: none).
    """

    features: Sequence[int]
    hidden: Sequence[int]
    num_classes: int
    kernel_size: int = 5
    padding: str = "SAME"
    dropout: float = 0.0
    channel_dropout: float = 0.0

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        x = x.astype(jnp.result_type(x.dtype, jnp.float32))
        k = (self.kernel_size, self.kernel_size)
        for i, f in enumerate(self.features):
            x = nn.Conv(f, k, padding=self.padding, name=f"conv_{i}",
                        conv_general_dilated=conv.conv_general_dilated)(x)
            if self.channel_dropout > 0 and i == len(self.features) - 1:
                x = nn.Dropout(self.channel_dropout, broadcast_dims=(1, 2),
                               deterministic=not train)(x)
            # max-pool then ReLU (CNNMnist's order) equals ReLU then max-pool: both monotone.
            x = nn.relu(conv.max_pool(x, (2, 2), strides=(2, 2)))
        x = x.reshape(x.shape[0], -1)
        for i, h in enumerate(self.hidden):
            x = nn.relu(nn.Dense(h, name=f"dense_{i}")(x))
            if self.dropout > 0:
                x = nn.Dropout(self.dropout, deterministic=not train)(x)
        return nn.Dense(self.num_classes, name="head")(x)


def _build(name: str, *, features, hidden, num_classes, input_shape, kernel_size=5,
           padding="SAME", dropout=0.0, channel_dropout=0.0, init_scheme="flax") -> Model:
    features = tuple(validate.positive_int(f"features[{i}]", f) for i, f in enumerate(features))
    hidden = tuple(validate.positive_int(f"hidden[{i}]", h) for i, h in enumerate(hidden))
    num_classes = validate.positive_int("num_classes", num_classes)
    kernel_size = validate.positive_int("kernel_size", kernel_size)
    input_shape = conv.image_shape(input_shape)
    size = min(input_shape[:2])
    for _ in features:
        size = size if padding == "SAME" else size - kernel_size + 1
        size //= 2
    if size < 1:
        raise validate.ShapeError(
            f"Expected input_shape={input_shape} large enough for {len(features)} conv/pool "
            f"layers with kernel_size={kernel_size} and padding={padding!r}.")
    for rate_name, rate in [("dropout", dropout), ("channel_dropout", channel_dropout)]:
        if not 0.0 <= float(rate) < 1.0:
            raise validate.JaxflValueError(f"Expected {rate_name} in [0, 1), got {rate!r}.")
    module = ConvNet(features=features, hidden=hidden, num_classes=num_classes,
                     kernel_size=kernel_size, padding=padding, dropout=float(dropout),
                     channel_dropout=float(channel_dropout))
    return from_flax(module, name=name, loss=losses.softmax_cross_entropy,
                     metrics=losses.classification_metrics, input_shape=input_shape,
                     init_scheme=init_scheme)


@register("fedavg_cnn")
def fedavg_cnn(*, num_classes: int = 10, input_shape: tuple = (28, 28, 1),
               features: Sequence[int] = (32, 64), hidden: Sequence[int] = (512,),
               init_scheme: str = "flax") -> Model:
    """McMahan et al. 2017 CNN (DP-OGL's model). Sizes are configurable for tests.

    Args:
      num_classes: output classes (10 for MNIST / Fashion-MNIST, 62 for FEMNIST).
      input_shape: ``(H, W, C)`` of one image.
      features: conv channels (5x5, 'same', each followed by 2x2 max-pool).
      hidden: dense widths before the output layer.
      init_scheme: ``'flax'`` or ``'torch'``.

    Returns:
      The model (softmax cross-entropy, accuracy).
    """
    return _build("fedavg_cnn", features=features, hidden=hidden, num_classes=num_classes,
                  input_shape=input_shape, init_scheme=init_scheme)


@register("femnist_cnn")
def femnist_cnn(*, num_classes: int = 62, input_shape: tuple = (28, 28, 1),
                features: Sequence[int] = (32, 64), hidden: Sequence[int] = (2048,),
                init_scheme: str = "flax") -> Model:
    """LEAF's FEMNIST CNN (subject-level DP): ``fedavg_cnn`` with dense 2048 and 62 classes."""
    return _build("femnist_cnn", features=features, hidden=hidden, num_classes=num_classes,
                  input_shape=input_shape, init_scheme=init_scheme)


@register("uldp_cnn")
def uldp_cnn(*, num_classes: int = 10, input_shape: tuple = (28, 28, 1),
             features: Sequence[int] = (10, 20), hidden: Sequence[int] = (50,),
             dropout: float = 0.5, init_scheme: str = "torch") -> Model:
    """ULDP-FL's ``CNNMnist`` (21,840 parameters at the defaults).

    Args:
      num_classes: output classes.
      input_shape: ``(H, W, C)`` of one image.
      features: conv channels (5x5, 'valid').
      hidden: dense widths.
      dropout: rate of both the channel dropout after the last conv and the dense dropout
        (active only with ``train=True`` and a key).
      init_scheme: ``'torch'`` (as the authors' code) or ``'flax'``.

    Returns:
      The model (softmax cross-entropy, accuracy).
    """
    return _build("uldp_cnn", features=features, hidden=hidden, num_classes=num_classes,
                  input_shape=input_shape, padding="VALID", dropout=dropout,
                  channel_dropout=dropout, init_scheme=init_scheme)


@register("cifar_cnn")
def cifar_cnn(*, num_classes: int = 10, input_shape: tuple = (32, 32, 3),
              features: Sequence[int] = (32, 64), hidden: Sequence[int] = (384, 192),
              init_scheme: str = "flax") -> Model:
    """A CIFAR-size CNN (TF-tutorial style, as FedAvg's CIFAR model, without LRN).

    Args:
      num_classes: output classes.
      input_shape: ``(H, W, C)`` of one image.
      features: conv channels (5x5, 'same', each followed by 2x2 max-pool).
      hidden: dense widths before the output layer.
      init_scheme: ``'flax'`` or ``'torch'``.

    Returns:
      The model (softmax cross-entropy, accuracy).
    """
    return _build("cifar_cnn", features=features, hidden=hidden, num_classes=num_classes,
                  input_shape=input_shape, init_scheme=init_scheme)
