"""ResNet-18 with GroupNorm for 32x32 images (CIFAR variant), the LightDP-FL model.

LightDP-FL (Hong et al. 2024, Sec. VI) trains "ResNet-18" on CIFAR-10 and says no more; we use a
CIFAR-style ResNet-18 (He et al. 2016) with a 3x3 stride-1 stem and no max-pool, widths
64/128/256/512, two BasicBlocks per stage, and GroupNorm with ``min(32, C)`` groups in place of
BatchNorm, so the whole model state is parameters (it is clipped and noised; there are no batch
statistics to leak). Convolutions have no bias and use PyTorch-style symmetric padding (1 pixel for
3x3); downsampling shortcuts are 1x1 stride-2 convs followed by GroupNorm. The head is a global
average pool and a dense layer. At the defaults it has d = 11,173,962 parameters, the d of our
LightDP-FL runs (GroupNorm has the same number of affine parameters as BatchNorm).

``width`` scales every stage (``width=4`` gives a tiny network for CPU tests) and ``blocks`` sets
the number of BasicBlocks per stage.

Example Usage:
  >>> import jax
  >>> from jaxfl.models import get_model
  >>> from jaxfl.tree import num_params
  >>> num_params(get_model("resnet18_gn", width=4).init(jax.random.key(0)))
  44622
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxfl import validate
from jaxfl.models import Model, conv, losses, register
from jaxfl.models._flax import from_flax


def _norm(channels: int, name: str) -> nn.GroupNorm:
    return nn.GroupNorm(num_groups=min(32, channels), epsilon=1e-5, name=name)


class BasicBlock(nn.Module):
    """Two 3x3 convs with GroupNorm and an identity or 1x1-conv shortcut."""

    features: int
    stride: int = 1

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        pad = ((1, 1), (1, 1))
        s = (self.stride, self.stride)
        y = nn.Conv(self.features, (3, 3), s, padding=pad, use_bias=False, name="conv1",
                    conv_general_dilated=conv.conv_general_dilated)(x)
        y = nn.relu(_norm(self.features, "norm1")(y))
        y = nn.Conv(self.features, (3, 3), padding=pad, use_bias=False, name="conv2",
                    conv_general_dilated=conv.conv_general_dilated)(y)
        y = _norm(self.features, "norm2")(y)
        if self.stride != 1 or x.shape[-1] != self.features:
            x = nn.Conv(self.features, (1, 1), s, padding="VALID", use_bias=False,
                        name="shortcut_conv", conv_general_dilated=conv.conv_general_dilated)(x)
            x = _norm(self.features, "shortcut_norm")(x)
        return nn.relu(y + x)


class ResNetGN(nn.Module):
    """CIFAR ResNet with GroupNorm (see module docstring).

    Attributes:
      blocks: BasicBlocks per stage (``(2, 2, 2, 2)`` is ResNet-18).
      width: channels of the first stage; stage ``i`` has ``width * 2**i``.
      num_classes: output width.
    """

    blocks: Sequence[int] = (2, 2, 2, 2)
    width: int = 64
    num_classes: int = 10

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        del train  # no stochastic layers
        x = x.astype(jnp.result_type(x.dtype, jnp.float32))
        x = nn.Conv(self.width, (3, 3), padding=((1, 1), (1, 1)), use_bias=False,
                    name="stem_conv", conv_general_dilated=conv.conv_general_dilated)(x)
        x = nn.relu(_norm(self.width, "stem_norm")(x))
        for stage, n in enumerate(self.blocks):
            for b in range(n):
                stride = 2 if stage > 0 and b == 0 else 1
                x = BasicBlock(self.width * 2**stage, stride, name=f"stage{stage}_block{b}")(x)
        x = x.mean(axis=(1, 2))
        return nn.Dense(self.num_classes, name="head")(x)


@register("resnet18_gn")
def resnet18_gn(*, num_classes: int = 10, input_shape: tuple = (32, 32, 3), width: int = 64,
                blocks: Sequence[int] = (2, 2, 2, 2), init_scheme: str = "flax") -> Model:
    """ResNet-18 (GroupNorm) classifier for CIFAR-size images.

    Args:
      num_classes: output classes.
      input_shape: ``(H, W, C)`` of one image.
      width: channels of the first stage (64 for ResNet-18).
      blocks: BasicBlocks per stage.
      init_scheme: ``'flax'`` or ``'torch'``.

    Returns:
      The model (softmax cross-entropy, accuracy).
    """
    num_classes = validate.positive_int("num_classes", num_classes)
    width = validate.positive_int("width", width)
    blocks = tuple(validate.positive_int(f"blocks[{i}]", b) for i, b in enumerate(blocks))
    input_shape = conv.image_shape(input_shape)
    module = ResNetGN(blocks=blocks, width=width, num_classes=num_classes)
    return from_flax(module, name="resnet18_gn", loss=losses.softmax_cross_entropy,
                     metrics=losses.classification_metrics, input_shape=input_shape,
                     init_scheme=init_scheme)
