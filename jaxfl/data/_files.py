"""Locating dataset files and verifying their checksums.

Every loader names its dataset by a :class:`Source`: the sub-directories of ``JAXFL_DATA_DIR``
it may live in, extra system directories (e.g. Debian's ``/usr/share/datasets``), where to
obtain it, and the digests known for its files. Resolution order for a file:

1. an explicit ``path`` argument (the dataset's own directory, or the file itself): only
   that location is searched;
2. otherwise ``$JAXFL_DATA_DIR/<subdir>`` for each registered sub-directory, then the
   registered fallback directories.

Files fetched by :mod:`jaxfl.data.download` into the user cache (``$XDG_CACHE_HOME/jaxfl``,
by default ``~/.cache/jaxfl``) are found there when ``JAXFL_DATA_DIR`` is unset.

A missing file raises :class:`jaxfl.validate.DataNotFoundError` naming the file, every
directory searched and where to obtain it. Nothing is downloaded here: the loaders locate
their files through :func:`jaxfl.data.download.find_dir`, which fetches a missing dataset only
when ``download=True`` is passed or ``JAXFL_DOWNLOAD=1`` is set (and names the command that
downloads it otherwise). The sources themselves live in :mod:`jaxfl.data.catalog`.
A file with a recorded digest is hashed once per process (keyed by real path, size and
modification time) and a mismatch raises
:class:`jaxfl.validate.ChecksumError`. Digests are written ``"sha256:<hex>"`` or
``"md5:<hex>"``; a file passes if it matches any of its recorded digests (Fashion-MNIST, for
instance, has both the upstream MD5 and the Debian package's re-compressed SHA-256).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from jaxfl import validate

ENV_VAR = "JAXFL_DATA_DIR"

_DIGEST_CACHE: dict[tuple, str] = {}


@dataclasses.dataclass(frozen=True)
class Source:
    """Where a dataset lives and how to recognise its files.

    Attributes:
      name: registry name used in error messages.
      subdirs: candidate sub-directories of ``JAXFL_DATA_DIR`` (first match wins).
      url: human-readable instructions on where to obtain the files.
      checksums: file name -> accepted digests (``"sha256:..."`` / ``"md5:..."``).
      fallbacks: absolute directories searched after ``JAXFL_DATA_DIR``.
    """

    name: str
    subdirs: tuple[str, ...]
    url: str
    checksums: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    fallbacks: tuple[str, ...] = ()


def data_root() -> Path | None:
    """The directory named by ``JAXFL_DATA_DIR``, or ``None`` if the variable is unset/empty."""
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser() if value else None


def cache_root() -> Path:
    """The default download directory: ``$XDG_CACHE_HOME/jaxfl`` or ``~/.cache/jaxfl``."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache"
    return Path(base).expanduser() / "jaxfl"


def candidate_dirs(source: Source, path: str | os.PathLike | None = None) -> list[Path]:
    """Directories searched for ``source`` (see module docstring for the order)."""
    if path is not None:
        p = Path(path).expanduser()
        return [p.parent if p.is_file() else p]
    root = data_root()
    dirs = [root / sub for sub in source.subdirs] if root is not None else []
    if root is None and cache_root().is_dir():
        dirs += [cache_root() / sub for sub in source.subdirs]
    dirs += [Path(d) for d in source.fallbacks]
    return dirs


def _not_found(source: Source, missing: Sequence[str], searched: Sequence[Path],
               how: str | None) -> Exception:
    root = data_root()
    env = f"{ENV_VAR}={str(root)!r}" if root is not None else f"{ENV_VAR} is not set"
    where = ", ".join(str(d) for d in searched) or "(nothing: no path given and " + env + ")"
    sub = source.subdirs[0] if source.subdirs else ""
    return validate.DataNotFoundError(
        f"Dataset {source.name!r}: file(s) {', '.join(repr(m) for m in missing)} not found. "
        f"Searched: {where} ({env}). {how or f'Obtain it from {source.url}'} and put it in "
        f"$JAXFL_DATA_DIR/{sub}/, or pass path=<directory>.")


def find_dir(source: Source, filenames: Sequence[str], path=None, *,
             how: str | None = None) -> Path:
    """The first candidate directory that holds every file in ``filenames``.

    Nothing is downloaded here: the loaders locate files through
    :func:`jaxfl.data.download.find_dir`, which fetches a missing dataset on request.

    Args:
      source: the dataset.
      filenames: the files that must all be present.
      path: an explicit directory (then only it is searched).
      how: how to obtain the files, for the error message (default: from ``source.url``).

    Raises:
      DataNotFoundError: no candidate directory holds all of them; the message lists the
        files missing from the first candidate that holds any of them (else all of them).
    """
    dirs = candidate_dirs(source, path)
    best_missing = list(filenames)
    for d in dirs:
        missing = [f for f in filenames if not (d / f).is_file()]
        if not missing:
            return d
        if len(missing) < len(best_missing):
            best_missing = missing
    raise _not_found(source, best_missing, dirs, how)


def find_file(source: Source, filename: str, path=None, *, verify: bool = True) -> Path:
    """Resolves one file of ``source`` and (if ``verify``) checks its recorded digest."""
    if path is not None and Path(path).expanduser().is_file():
        file = Path(path).expanduser()
    else:
        file = find_dir(source, [filename], path) / filename
    if verify:
        verify_file(source, file)
    return file


def find_files(source: Source, filenames: Sequence[str], path=None, *,
               verify: bool = True) -> list[Path]:
    """Resolves several files from one directory and verifies each recorded digest."""
    d = find_dir(source, filenames, path)
    files = [d / f for f in filenames]
    if verify:
        for f in files:
            verify_file(source, f)
    return files


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, cached per process by (real path, size, mtime, algorithm)."""
    p = Path(path)
    st = p.stat()
    key = (os.path.realpath(p), st.st_size, st.st_mtime_ns, algorithm)
    if key not in _DIGEST_CACHE:
        h = hashlib.new(algorithm)
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        _DIGEST_CACHE[key] = h.hexdigest()
    return _DIGEST_CACHE[key]


def verify_digests(path: str | os.PathLike, accepted: Sequence[str], *, name: str = "") -> None:
    """Raises :class:`ChecksumError` unless the file matches one of ``accepted`` digests."""
    actual = {}
    for spec in accepted:
        algorithm, _, expected = spec.partition(":")
        if algorithm not in ("sha256", "md5") or not expected:
            raise validate.JaxflValueError(f"Malformed digest {spec!r} (want 'sha256:<hex>').")
        actual[algorithm] = file_digest(path, algorithm)
        if actual[algorithm] == expected.lower():
            return
    shown = ", ".join(f"{a}:{h}" for a, h in actual.items())
    raise validate.ChecksumError(
        f"{name + ': ' if name else ''}checksum mismatch for {str(path)!r}: expected one of "
        f"{list(accepted)}, got {shown}. The file is corrupt or a different version; "
        "re-download it (or pass verify=False to skip the check for a file you trust).")


def verify_file(source: Source, path: str | os.PathLike) -> bool:
    """Verifies ``path`` against ``source.checksums`` if its name has a recorded digest.

    Returns:
      True if a digest was known and matched, False if none is recorded for this file.
    """
    accepted = source.checksums.get(Path(path).name)
    if not accepted:
        return False
    verify_digests(path, accepted, name=f"Dataset {source.name!r}")
    return True


def clear_cache() -> None:
    """Forgets cached digests (e.g. after rewriting a file within the same mtime tick)."""
    _DIGEST_CACHE.clear()
