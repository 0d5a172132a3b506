"""Atomic, checksummed checkpoints of pytrees of arrays.

A checkpoint is ``ckpt_<round>.msgpack`` (flax serialization of the state, all leaves converted to
NumPy) plus ``ckpt_<round>.json`` holding the round, the SHA-256 of the payload and user metadata.
Files are written to a temporary name and ``os.replace``d, so a kill never leaves a half-written
checkpoint under a final name. :func:`latest` returns the newest checkpoint whose checksum
verifies, falling back to older ones when the newest is truncated or corrupted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

import jax
import numpy as np
from flax import serialization

_NAME = re.compile(r"ckpt_(\d+)\.msgpack$")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        # mkstemp creates the file 0600; the final file gets the mode open() would give it
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def save(directory, round_index: int, state, metadata: dict | None = None, keep: int = 3
         ) -> Path:
    """Saves ``state`` as the checkpoint after ``round_index`` rounds; keeps the newest ``keep``."""
    directory = Path(directory)
    host_state = jax.tree.map(np.asarray, state)
    payload = serialization.to_bytes(host_state)
    path = directory / f"ckpt_{round_index:08d}.msgpack"
    atomic_write_bytes(path, payload)
    meta = {"round": int(round_index), "sha256": hashlib.sha256(payload).hexdigest(),
            "bytes": len(payload), **(metadata or {})}
    atomic_write_text(path.with_suffix(".json"), json.dumps(meta, sort_keys=True))
    for old in list_checkpoints(directory)[:-keep]:
        for p in (old, old.with_suffix(".json")):
            p.unlink(missing_ok=True)
    return path


def list_checkpoints(directory) -> list[Path]:
    directory = Path(directory)
    if not directory.exists():
        return []
    found = [p for p in directory.iterdir() if _NAME.search(p.name)]
    return sorted(found, key=lambda p: int(_NAME.search(p.name).group(1)))


def verify(path: Path) -> dict | None:
    """Returns the metadata if ``path`` and its checksum are intact, else None."""
    path = Path(path)
    meta_path = path.with_suffix(".json")
    try:
        meta = json.loads(meta_path.read_text())
        payload = path.read_bytes()
    except (OSError, ValueError):
        return None
    if hashlib.sha256(payload).hexdigest() != meta.get("sha256"):
        return None
    return meta


def latest(directory) -> tuple[Path, dict] | None:
    """Newest checkpoint that verifies (older ones are tried when the newest is corrupted)."""
    for path in reversed(list_checkpoints(directory)):
        meta = verify(path)
        if meta is not None:
            return path, meta
    return None


def verified_rounds(directory) -> list[int]:
    """Round indices of the intact checkpoints in ``directory``, ascending."""
    out = []
    for path in list_checkpoints(directory):
        meta = verify(path)
        if meta is not None:
            out.append(int(meta["round"]))
    return out


def at_round(directory, round_index: int) -> Path | None:
    """The intact checkpoint saved after ``round_index`` rounds, or None."""
    path = Path(directory) / f"ckpt_{int(round_index):08d}.msgpack"
    return path if path.exists() and verify(path) is not None else None


def restore(path, template):
    """Restores a checkpoint into the structure of ``template`` (leaves become NumPy arrays).

    Raises:
      ValueError: when the checkpoint's arrays differ in shape or dtype from the template's
        (flax restores them as they are, so a foreign checkpoint would pass silently).
    """
    payload = Path(path).read_bytes()
    host = jax.tree.map(np.asarray, template)
    restored = serialization.from_bytes(host, payload)
    want, got = jax.tree.leaves(host), jax.tree.leaves(restored)
    bad = [f"{np.shape(w)} {np.asarray(w).dtype} expected, {np.shape(g)} "
           f"{np.asarray(g).dtype} found" for w, g in zip(want, got, strict=True)
           if np.shape(w) != np.shape(g) or np.asarray(w).dtype != np.asarray(g).dtype]
    if bad or len(want) != len(got):
        raise ValueError(f"checkpoint {path} holds arrays of other shapes than the state: "
                         f"{'; '.join(bad[:3])}")
    return restored
