"""Fetching the standard dataset files, with size, checksum and format verification.

Nothing here runs implicitly: the loaders download only when called with ``download=True`` or
when ``JAXFL_DOWNLOAD=1`` is set; otherwise a missing file raises
:class:`jaxfl.validate.DataNotFoundError` naming the one command that fetches it::

    python -m jaxfl.data.download mnist              # into $JAXFL_DATA_DIR (or ~/.cache/jaxfl)
    python -m jaxfl.data.download mnist --dir D      # into D/mnist/
    python -m jaxfl.data.download --list             # every dataset, its files and checks

Each file is streamed to ``<name>.part`` next to its destination, resumed with an HTTP
``Range`` request when a partial file exists, checked (exact size, then SHA-256 / MD5 where a
published or project-recorded digest is known, then the format's own structure), and only then
renamed into place with :func:`os.replace`, so a destination file is never half-written. A failed
check deletes the partial file; an interrupted transfer keeps it for the next attempt.

Mirrors: ``JAXFL_DATA_MIRROR`` (or ``mirrors=[...]``) lists base URLs, separated by spaces or
commas; file ``F`` of dataset ``D`` is then fetched from ``<base>/D/F`` and the upstream URLs
are not contacted. The tests point it at a local server.

Example Usage:
  >>> sorted(REGISTRY)[:3]
  ['cifar10', 'facebook', 'fashion_mnist']
  >>> REGISTRY["mnist"].subdir
  'mnist'
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
import tarfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from jaxfl import validate
from jaxfl.data import _files, catalog
from jaxfl.data.catalog import Dataset, RemoteFile

DOWNLOAD_ENV = "JAXFL_DOWNLOAD"
MIRROR_ENV = "JAXFL_DATA_MIRROR"
_CHUNK = 1 << 16
_USER_AGENT = "jaxfl-download/1 (+https://github.com/)"


class DownloadError(OSError):
    """A transfer failed (HTTP error, connection lost, short read); names URL and file."""


# name -> what to fetch: the datasets of jaxfl.data.catalog that can be downloaded
REGISTRY: dict[str, Dataset] = {n: d for n, d in catalog.DATASETS.items() if d.downloadable}
SOURCE_NAMES = catalog.SOURCE_NAMES  # a loader's source name -> its download name


def command(name: str) -> str:
    """The one shell command that downloads dataset ``name``."""
    return f"python -m jaxfl.data.download {SOURCE_NAMES.get(name, name)}"


def downloadable(name: str) -> bool:
    """Whether ``name`` (a registry or loader source name) can be fetched as files."""
    dataset = REGISTRY.get(SOURCE_NAMES.get(name, name))
    return dataset is not None and not dataset.manual


def default_dir() -> Path:
    """``$JAXFL_DATA_DIR`` if set, else ``$XDG_CACHE_HOME/jaxfl`` (``~/.cache/jaxfl``)."""
    return _files.data_root() or _files.cache_root()


def enabled() -> bool:
    """Whether ``JAXFL_DOWNLOAD`` opts in to implicit downloads by the loaders."""
    return os.environ.get(DOWNLOAD_ENV, "").strip().lower() in ("1", "true", "yes")


def mirrors_from_env() -> list[str]:
    return os.environ.get(MIRROR_ENV, "").replace(",", " ").split()


# ----------------------------------------------------------------------------- locating

def find_dir(source: _files.Source, filenames: Sequence[str], path=None, *,
             download: bool | None = None) -> Path:
    """:func:`jaxfl.data._files.find_dir`, fetching a missing downloadable dataset on request.

    Args:
      source, filenames, path: as :func:`jaxfl.data._files.find_dir` (with ``path`` given,
        only it is searched and nothing is downloaded).
      download: fetch the dataset with :func:`fetch` when it is missing; ``None`` means
        "only if ``JAXFL_DOWNLOAD=1``".

    Raises:
      DataNotFoundError: the files are missing (and not fetched); the message names the
        command that downloads them.
    """
    if not downloadable(source.name):
        return _files.find_dir(source, filenames, path)
    how = (f"Download it with: {command(source.name)}  (or pass download=True / set "
           f"{DOWNLOAD_ENV}=1), or obtain it from {source.url}")
    try:
        return _files.find_dir(source, filenames, path, how=how)
    except validate.DataNotFoundError:
        if path is not None or not (enabled() if download is None else download):
            raise
    fetch(source.name, quiet=False)
    return _files.find_dir(source, filenames, path, how=how)


def find_file(source: _files.Source, filename: str, path=None, *, verify: bool = True,
              download: bool | None = None) -> Path:
    """One file of ``source`` (see :func:`find_dir`), its recorded digest checked."""
    if path is None or not Path(path).expanduser().is_file():
        path = find_dir(source, [filename], path, download=download)
    return _files.find_file(source, filename, path, verify=verify)


def find_files(source: _files.Source, filenames: Sequence[str], path=None, *,
               verify: bool = True, download: bool | None = None) -> list[Path]:
    """Several files of ``source`` from one directory (see :func:`find_dir`), each verified."""
    return _files.find_files(source, filenames, find_dir(source, filenames, path,
                                                         download=download), verify=verify)


# ----------------------------------------------------------------------------- transfer


def _transfer(url: str, part: Path, *, timeout: float) -> None:
    """Streams ``url`` into ``part``, resuming from its current size with a Range request."""
    have = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": _USER_AGENT}
    if have:
        headers["Range"] = f"bytes={have}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing left to send: the partial file may be complete
            return
        raise DownloadError(f"GET {url} -> {part.name}: HTTP {e.code} {e.reason}.") from e
    except (urllib.error.URLError, OSError) as e:
        raise DownloadError(f"GET {url} -> {part.name}: cannot connect ({e}).") from e
    with response:
        resumed = response.status == 206
        if resumed and not response.headers.get("Content-Range", "").startswith(
                f"bytes {have}-"):
            raise DownloadError(f"GET {url}: unexpected Content-Range "
                                f"{response.headers.get('Content-Range')!r} for a resume at "
                                f"byte {have}.")
        length = response.headers.get("Content-Length")
        expected = int(length) if length is not None else None
        received = 0
        with open(part, "ab" if resumed else "wb") as f:
            try:
                while chunk := response.read(_CHUNK):
                    f.write(chunk)
                    received += len(chunk)
            except OSError as e:
                raise DownloadError(
                    f"GET {url} -> {part}: connection lost after {received} bytes ({e}); run "
                    "the command again to resume.") from e
    if expected is not None and received < expected:
        raise DownloadError(
            f"GET {url} -> {part}: truncated transfer, received {received} of {expected} "
            "bytes; run the command again to resume.")


def _verify(remote: RemoteFile, path: Path, url: str) -> None:
    try:
        size = path.stat().st_size
        if remote.size is not None and size != remote.size:
            raise validate.ChecksumError(f"size {size} bytes, expected {remote.size}")
        if remote.digests:
            _files.verify_digests(path, remote.digests)
        if remote.check is not None:
            remote.check(path)
    except (validate.ChecksumError, ValueError, OSError, EOFError, tarfile.TarError) as e:
        raise validate.ChecksumError(
            f"Downloaded {url} -> {path}: verification failed: {e}. The partial file was "
            "deleted; check the mirror or try again.") from e


def _finish(remote: RemoteFile, part: Path, dest_dir: Path) -> None:
    if remote.unpack == "gunzip":
        out = dest_dir / remote.name.removesuffix(".gz")
        tmp = out.with_name(out.name + ".tmp")
        with gzip.open(part, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        if remote.check is None and out.name == "facebook_combined.txt":
            catalog.check_edge_list(tmp)
        os.replace(tmp, out)
        part.unlink()
    elif remote.unpack == "tar":
        with tarfile.open(part, "r:gz") as tar:
            tar.extractall(dest_dir, filter="data")
        part.unlink()
    else:
        os.replace(part, dest_dir / remote.name)


def _target(remote: RemoteFile, dest_dir: Path) -> Path:
    if remote.unpack == "gunzip":
        return dest_dir / remote.name.removesuffix(".gz")
    if remote.unpack == "tar":
        return dest_dir / "cifar-10-batches-py" / "test_batch"
    return dest_dir / remote.name


def fetch_file(remote: RemoteFile, dest_dir: str | os.PathLike, *, dataset: str = "",
               mirrors: Sequence[str] | None = None, timeout: float = 60.0,
               quiet: bool = True) -> Path:
    """Downloads, verifies and atomically installs one file; returns its final path.

    Raises:
      DownloadError: every URL failed to transfer (the message lists each URL and error).
      ChecksumError: the transferred file failed its size, digest or format check.
    """
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = _target(remote, dest_dir)
    if target.exists():
        return target
    mirrors = mirrors_from_env() if mirrors is None else list(mirrors)
    urls = ([f"{m.rstrip('/')}/{dataset}/{remote.name}" for m in mirrors] if mirrors
            else list(remote.urls))
    part = dest_dir / (remote.name + ".part")
    errors = []
    for url in urls:
        if not quiet:
            print(f"  {url} -> {dest_dir / remote.name}", file=sys.stderr)
        try:
            _transfer(url, part, timeout=timeout)
        except DownloadError as e:
            errors.append(str(e))
            continue
        try:
            _verify(remote, part, url)
        except validate.ChecksumError:
            part.unlink(missing_ok=True)
            raise
        _finish(remote, part, dest_dir)
        return target
    raise DownloadError(f"Could not download {remote.name!r} of dataset {dataset!r}: "
                        + " | ".join(errors))


def fetch(name: str, data_dir: str | os.PathLike | None = None, *,
          mirrors: Sequence[str] | None = None, timeout: float = 60.0,
          quiet: bool = True) -> Path:
    """Downloads every missing file of dataset ``name`` into ``data_dir/<subdir>``.

    Args:
      name: a key of :data:`REGISTRY` (or a loader's source name such as ``"shakespeare"``).
      data_dir: the data root; default :func:`default_dir`.
      mirrors: base URLs replacing the upstream ones (default ``$JAXFL_DATA_MIRROR``).
      timeout: seconds per connection attempt.
      quiet: print nothing (the CLI prints each URL).

    Returns:
      The dataset's directory.
    """
    name = SOURCE_NAMES.get(name, name)
    validate.one_of("name", name, tuple(REGISTRY))
    dataset = REGISTRY[name]
    if dataset.manual:
        raise validate.DataNotFoundError(f"Dataset {name!r} cannot be downloaded: "
                                          f"{dataset.manual}")
    dest = Path(data_dir).expanduser() if data_dir is not None else default_dir()
    dest = dest / dataset.subdir
    for remote in dataset.files:
        fetch_file(remote, dest, dataset=name, mirrors=mirrors, timeout=timeout, quiet=quiet)
    return dest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jaxfl.data.download",
        description="Download and verify jaxfl's standard datasets.")
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(REGISTRY))
    parser.add_argument("--dir", default=None,
                        help=f"data root (default: ${_files.ENV_VAR}, else ~/.cache/jaxfl)")
    parser.add_argument("--mirror", action="append", default=None,
                        help=f"base URL replacing the upstream ones (default: ${MIRROR_ENV})")
    parser.add_argument("--list", action="store_true", help="list the datasets and exit")
    args = parser.parse_args(argv)
    if args.list or not args.names:
        for d in REGISTRY.values():
            what = d.manual or d.note
            print(f"{d.name:18s} {len(d.files)} file(s) -> <dir>/{d.subdir}/  ({what})")
        return 0
    status = 0
    for name in args.names:
        print(f"{name}:", file=sys.stderr)
        try:
            dest = fetch(name, args.dir, mirrors=args.mirror, quiet=False)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            status = 1
            continue
        print(f"{name}: OK in {dest}")
    return status


if __name__ == "__main__":
    sys.exit(main())
