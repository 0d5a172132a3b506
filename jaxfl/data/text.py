"""Tiny Shakespeare (Karpathy's char-rnn corpus): text, speeches by role, character vocabularies.

The corpus ``shakespeare/input.txt`` (1,115,394 ASCII characters, 65 distinct) is a run of
speeches, each a role line such as ``First Citizen:`` or ``ROMEO:`` followed by the spoken
lines, with speeches separated by blank lines. :func:`parse_speeches` recovers
``(role, speech)`` pairs; roles are the natural "subjects" of subject-level DP and the natural
users of LEAF-style Shakespeare partitions.

Parsing rule: a *role line* is the first non-blank line after a blank line (or the first line of
the text), that ends with ``:`` and contains no other ``:``. The speech is every following
line up to the next blank line, joined with ``\\n``. A block whose first line is not a role
line continues the previous speech (it never happens in the real corpus). Roles whose speech
is empty (a handful of truncated cues such as ``TITUS:`` directly followed by a blank line)
are dropped unless ``keep_empty=True``.

:class:`CharVocab` maps characters to ids with vectorised NumPy lookups; ``LEAF_CHARS`` is the
80-character alphabet of LEAF's Shakespeare models.

Example Usage:
  >>> speeches = parse_speeches("ROMEO:\\nBut soft!\\n\\nJULIET:\\nAy me!\\nO Romeo.\\n")
  >>> speeches
  [('ROMEO', 'But soft!'), ('JULIET', 'Ay me!\\nO Romeo.')]
  >>> vocab = CharVocab.from_text("abca")
  >>> vocab.encode("cab").tolist(), vocab.decode([0, 1])
  ([2, 0, 1], 'ab')
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from jaxfl import validate
from jaxfl.data import catalog
from jaxfl.data import download as _download

TINY_SHAKESPEARE = catalog.TINY_SHAKESPEARE  # its source (see jaxfl.data.catalog)


# LEAF's Shakespeare alphabet (models/utils/language_utils.py), 80 characters.
LEAF_CHARS = ("\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]"
              "abcdefghijklmnopqrstuvwxyz}")

_ROLE = re.compile(r"[^\s:][^:\n]*:")


def load_tiny_shakespeare(*, path=None, verify: bool = True, download: bool | None = None
                          ) -> str:
    """The tiny-Shakespeare corpus as one string (``shakespeare/input.txt``).

    ``download=True`` (or ``JAXFL_DOWNLOAD=1``) fetches it when missing.
    """
    file = _download.find_file(TINY_SHAKESPEARE, "input.txt", path, verify=verify,
                               download=download)
    return file.read_text(encoding="utf-8")


def parse_speeches(text: str, *, keep_empty: bool = False) -> list[tuple[str, str]]:
    """Splits play text into ``(role, speech)`` pairs (rule in the module docstring).

    Args:
      text: the play text.
      keep_empty: keep roles whose speech is empty (as ``(role, "")``).

    Returns:
      Speeches in text order; roles are stripped of the trailing ``:`` and surrounding spaces
      and are otherwise verbatim (``"First Citizen"`` and ``"FIRST CITIZEN"`` stay distinct).
    """
    speeches: list[list] = []
    at_block_start = True
    for line in text.split("\n"):
        if not line.strip():
            at_block_start = True
            continue
        if at_block_start and _ROLE.fullmatch(line.rstrip()):
            speeches.append([line.rstrip()[:-1].strip(), []])
        elif speeches:
            speeches[-1][1].append(line)
        # Text before the first role line has no speaker and is skipped.
        at_block_start = False
    out = [(role, "\n".join(lines)) for role, lines in speeches]
    return out if keep_empty else [(r, s) for r, s in out if s]


def speeches_by_role(speeches: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Groups speeches by role, roles in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for role, speech in speeches:
        groups.setdefault(role, []).append(speech)
    return groups


def role_count(*, path=None) -> int:
    """The number of speaking roles in tiny Shakespeare (:func:`speeches_by_role` of
    :func:`load_tiny_shakespeare`).

    Raises:
      DataNotFoundError: when ``shakespeare/input.txt`` is absent.
    """
    return len(speeches_by_role(parse_speeches(load_tiny_shakespeare(path=path))))


@dataclasses.dataclass(frozen=True)
class CharVocab:
    """A character vocabulary: ``chars[i]`` has id ``i``.

    Attributes:
      chars: the alphabet, without repeats.
      unknown: id used for characters outside ``chars``; ``None`` makes them an error.
    """

    chars: str
    unknown: int | None = None

    def __post_init__(self):
        if len(set(self.chars)) != len(self.chars) or not self.chars:
            raise validate.JaxflValueError("Expected a non-empty alphabet without repeats.")
        if self.unknown is not None and not 0 <= self.unknown < len(self.chars):
            raise validate.JaxflValueError(
                f"Expected 0 <= unknown < {len(self.chars)}, got unknown={self.unknown}.")

    @classmethod
    def from_text(cls, text: str, **kwargs) -> CharVocab:
        """The sorted set of characters occurring in ``text``."""
        return cls("".join(sorted(set(text))), **kwargs)

    @classmethod
    def leaf(cls) -> CharVocab:
        """LEAF's 80-character Shakespeare alphabet; unknown characters map to ``" "`` (id 1)."""
        return cls(LEAF_CHARS, unknown=LEAF_CHARS.index(" "))

    @property
    def size(self) -> int:
        return len(self.chars)

    def _codes(self) -> tuple[np.ndarray, np.ndarray]:
        points = np.frombuffer(self.chars.encode("utf-32-le"), np.uint32)
        order = np.argsort(points)
        return points[order], order.astype(np.int32)

    def encode(self, text: str) -> np.ndarray:
        """int32 ids ``[len(text)]`` (vectorised: one ``searchsorted`` over code points)."""
        points = np.frombuffer(text.encode("utf-32-le"), np.uint32)
        sorted_points, ids = self._codes()
        pos = np.minimum(np.searchsorted(sorted_points, points), len(sorted_points) - 1)
        known = sorted_points[pos] == points
        if not known.all():
            if self.unknown is None:
                bad = sorted({chr(c) for c in points[~known][:100]})
                raise validate.JaxflValueError(
                    f"Characters {bad} are not in the vocabulary; pass unknown=<id>.")
            return np.where(known, ids[pos], np.int32(self.unknown)).astype(np.int32)
        return ids[pos]

    def decode(self, ids) -> str:
        """The string of ``ids`` (any integer array-like)."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        if ids.size and (ids.min() < 0 or ids.max() >= self.size):
            raise validate.JaxflValueError(f"Expected ids in [0, {self.size}).")
        table = np.frombuffer(self.chars.encode("utf-32-le"), np.uint32)
        return table[ids].astype("<u4").tobytes().decode("utf-32-le")


def next_char_examples(ids: np.ndarray, *, seq_len: int, stride: int = 1
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Sliding windows for next-character prediction.

    Args:
      ids: int ids ``[T]`` of one text (e.g. one role's speeches joined).
      seq_len: window length ``L`` (LEAF uses 80).
      stride: offset between consecutive windows.

    Returns:
      ``(x, y)``: ``x[i] = ids[i*stride : i*stride + L]`` (shape ``[n, L]``) and
      ``y[i] = ids[i*stride + L]`` (shape ``[n]``); ``n = 0`` when the text is too short.
    """
    ids = np.asarray(ids)
    seq_len = validate.positive_int("seq_len", seq_len)
    stride = validate.positive_int("stride", stride)
    if ids.ndim != 1:
        raise validate.ShapeError(f"Expected ids of shape [T], got {ids.shape}.")
    if len(ids) <= seq_len:
        return np.zeros((0, seq_len), ids.dtype), np.zeros((0,), ids.dtype)
    windows = np.lib.stride_tricks.sliding_window_view(ids[:-1], seq_len)[::stride]
    starts = np.arange(len(windows)) * stride
    return np.ascontiguousarray(windows), ids[starts + seq_len]
