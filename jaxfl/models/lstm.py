"""Character LSTM for next-character prediction on Shakespeare (LEAF).

LEAF's Shakespeare model, as we reconstruct it for Marathe & Kanani 2022 (Sec. 4): tokens of a
window of ``seq_len = 80`` characters over LEAF's 80-symbol alphabet are embedded in 8 dimensions,
passed through 2 stacked LSTM layers of 256 units, and the state at the last time step is mapped
to 80 logits (the next character). The paper describes "two linear layers at the end"; LEAF has
one. ``head_hidden=(256,)`` adds a ReLU dense layer (our reading of the paper) as a flag; the
default ``()`` is LEAF's single output layer (817,872 parameters; flax's LSTM cell has one bias per
gate, like TensorFlow's, where PyTorch's ``nn.LSTM`` has two).

``predict='sequence'`` returns logits at every position (``[B, T, V]``, labels ``[B, T]``, loss
averaged over positions), for char-rnn style training on tiny-Shakespeare. Inputs are integer
token ids ``[B, T]``.

Example Usage:
  >>> import jax
  >>> from jaxfl.models import get_model
  >>> from jaxfl.tree import num_params
  >>> num_params(get_model("char_lstm").init(jax.random.key(0)))
  817872
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxfl import validate
from jaxfl.models import Model, losses, register
from jaxfl.models._flax import from_flax


class CharLSTM(nn.Module):
    """Embedding, stacked LSTMs, optional ReLU dense layers, output logits.

    Attributes:
      vocab_size: number of symbols (input and output).
      embed_dim: embedding width.
      hidden: units of each stacked LSTM layer.
      head_hidden: widths of ReLU dense layers between the last LSTM state and the logits.
      sequence_output: logits at every step instead of only the last one.
    """

    vocab_size: int
    embed_dim: int = 8
    hidden: Sequence[int] = (256, 256)
    head_hidden: Sequence[int] = ()
    sequence_output: bool = False

    @nn.compact
    def __call__(self, tokens: jax.Array, train: bool = False) -> jax.Array:
        del train  # no stochastic layers
        x = nn.Embed(self.vocab_size, self.embed_dim, name="embed")(tokens.astype(jnp.int32))
        for i, units in enumerate(self.hidden):
            x = nn.RNN(nn.OptimizedLSTMCell(units, name=f"lstm_{i}"))(x)
        if not self.sequence_output:
            x = x[:, -1]
        for i, width in enumerate(self.head_hidden):
            x = nn.relu(nn.Dense(width, name=f"dense_{i}")(x))
        return nn.Dense(self.vocab_size, name="head")(x)


@register("char_lstm")
def char_lstm(*, vocab_size: int = 80, seq_len: int = 80, embed_dim: int = 8,
              hidden: Sequence[int] = (256, 256), head_hidden: Sequence[int] = (),
              predict: str = "last", init_scheme: str = "flax") -> Model:
    """Character LSTM (LEAF Shakespeare defaults; every size is configurable for tests).

    Args:
      vocab_size: alphabet size (LEAF: 80).
      seq_len: length of an input window (used by ``init`` only; any length can be applied).
      embed_dim: embedding width (LEAF: 8).
      hidden: stacked LSTM widths (LEAF: ``(256, 256)``).
      head_hidden: ReLU dense layers before the output (``(256,)`` for the paper's two linear
        layers).
      predict: ``'last'`` (next character after the window; labels ``[B]``) or ``'sequence'``
        (next character at every position; labels ``[B, T]``).
      init_scheme: ``'flax'`` or ``'torch'``.

    Returns:
      The model (softmax cross-entropy, accuracy).
    """
    vocab_size = validate.positive_int("vocab_size", vocab_size, minimum=2)
    seq_len = validate.positive_int("seq_len", seq_len)
    embed_dim = validate.positive_int("embed_dim", embed_dim)
    hidden = tuple(validate.positive_int(f"hidden[{i}]", h) for i, h in enumerate(hidden))
    if not hidden:
        raise validate.JaxflValueError("Expected at least one LSTM layer, got hidden=().")
    head_hidden = tuple(validate.positive_int(f"head_hidden[{i}]", h)
                        for i, h in enumerate(head_hidden))
    validate.one_of("predict", predict, ("last", "sequence"))
    module = CharLSTM(vocab_size=vocab_size, embed_dim=embed_dim, hidden=hidden,
                      head_hidden=head_hidden, sequence_output=predict == "sequence")
    return from_flax(module, name="char_lstm", loss=losses.softmax_cross_entropy,
                     metrics=losses.classification_metrics, input_shape=(seq_len,),
                     input_dtype=jnp.int32, init_scheme=init_scheme)
