"""Fetching the standard dataset files, with size, checksum and format verification.

Nothing here runs implicitly: the loaders download only when called with ``download=True`` or
when ``JAXFL_DOWNLOAD=1`` is set; otherwise a missing file raises
:class:`jaxfl._validate.DataNotFoundError` naming the one command that fetches it::

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
import csv
import dataclasses
import gzip
import os
import shutil
import sys
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from jaxfl import _validate
from jaxfl.data import _files

DOWNLOAD_ENV = "JAXFL_DOWNLOAD"
MIRROR_ENV = "JAXFL_DATA_MIRROR"
_CHUNK = 1 << 16
_USER_AGENT = "jaxfl-download/1 (+https://github.com/)"


class DownloadError(OSError):
    """A transfer failed (HTTP error, connection lost, short read); names URL and file."""


@dataclasses.dataclass(frozen=True)
class RemoteFile:
    """One file to fetch.

    Attributes:
      name: the file name the loader expects (for archives: the archive's name).
      urls: upstream URLs, tried in order.
      size: exact size in bytes, or ``None`` when not known.
      digests: accepted ``"sha256:<hex>"`` / ``"md5:<hex>"``; empty when none is known.
      check: structural check ``check(path)`` raising on a malformed file.
      unpack: ``"gunzip"`` (store the decompressed file under ``name`` minus ``.gz``),
        ``"tar"`` (extract the archive into the dataset directory) or ``""``.
    """

    name: str
    urls: tuple[str, ...]
    size: int | None = None
    digests: tuple[str, ...] = ()
    check: Callable[[Path], None] | None = None
    unpack: str = ""


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A downloadable dataset: its directory under the data root and its files.

    Attributes:
      name: the name given on the command line.
      subdir: the sub-directory of the data root the loader searches first.
      files: the files to fetch.
      note: provenance of the checks (which digests are published, which are the project's).
      manual: when set, the dataset cannot be fetched as files and this text says how to get it.
    """

    name: str
    subdir: str
    files: tuple[RemoteFile, ...] = ()
    note: str = ""
    manual: str = ""


# ----------------------------------------------------------------------------- format checks


def _check_idx_gz(path: Path) -> None:
    with gzip.open(path, "rb") as f:
        head = f.read(4)
        if len(head) != 4 or head[:2] != b"\0\0" or head[2] != 0x08:
            raise _validate.ChecksumError(f"{path}: not a gzip-compressed uint8 IDX file.")
        while f.read(1 << 20):  # the whole gzip stream decompresses (CRC checked at the end)
            pass


def _check_text(min_lines: int, columns: int | None = None, sep: str = ","):
    def check(path: Path) -> None:
        lines = path.read_bytes().decode("ascii").splitlines()
        if len(lines) < min_lines:
            raise _validate.ChecksumError(f"{path}: {len(lines)} lines, expected >= {min_lines}.")
        if columns is not None:
            rows = csv.reader(lines, delimiter=sep)
            bad = [i for i, row in enumerate(rows) if row and len(row) != columns]
            if bad:
                raise _validate.ChecksumError(
                    f"{path}: line {bad[0] + 1} does not have {columns} fields.")
    return check


def _check_edge_list(path: Path) -> None:
    nodes, edges = set(), 0
    with open(path, encoding="ascii") as f:
        for i, line in enumerate(f):
            parts = line.split()
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                raise _validate.ChecksumError(f"{path}: line {i + 1} is not 'u v'.")
            nodes.update(parts)
            edges += 1
    if (len(nodes), edges) != (4039, 88234):
        raise _validate.ChecksumError(
            f"{path}: {len(nodes)} nodes and {edges} edges, expected 4039 and 88234.")


def _check_cifar_archive(path: Path) -> None:
    with tarfile.open(path, "r:gz") as tar:
        names = set(tar.getnames())
    want = {f"cifar-10-batches-py/{n}" for n in ("data_batch_1", "test_batch", "batches.meta")}
    if not want <= names:
        raise _validate.ChecksumError(f"{path}: not the CIFAR-10 python archive.")


# ----------------------------------------------------------------------------- registry


def _mnist() -> Dataset:
    from jaxfl.data import idx  # pylint: disable=import-outside-toplevel
    sizes = {"train-images-idx3-ubyte.gz": 9912422, "train-labels-idx1-ubyte.gz": 28881,
             "t10k-images-idx3-ubyte.gz": 1648877, "t10k-labels-idx1-ubyte.gz": 4542}
    md5 = {"train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
           "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
           "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
           "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"}
    bases = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
    return Dataset("mnist", "mnist", tuple(
        RemoteFile(n, tuple(b + n for b in bases), sizes[n],
                   idx.MNIST.checksums[n] + (f"md5:{md5[n]}",), _check_idx_gz) for n in sizes),
        note="published MD5s and the SHA-256s of the project's copy ($JAXFL_DATA_DIR/README.md)")


def _fashion_mnist() -> Dataset:
    from jaxfl.data import idx  # pylint: disable=import-outside-toplevel
    sizes = {"train-images-idx3-ubyte.gz": 26421880, "train-labels-idx1-ubyte.gz": 29515,
             "t10k-images-idx3-ubyte.gz": 4422102, "t10k-labels-idx1-ubyte.gz": 5148}
    bases = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
             "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion/")
    return Dataset("fashion_mnist", "fashion_mnist", tuple(
        RemoteFile(n, tuple(b + n for b in bases), sizes[n],
                   tuple(d for d in idx.FASHION_MNIST.checksums[n] if d.startswith("md5:")),
                   _check_idx_gz) for n in sizes),
        note="the MD5s published in the zalandoresearch/fashion-mnist README")


def _cifar10() -> Dataset:
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    return Dataset("cifar10", ".", (RemoteFile(
        "cifar-10-python.tar.gz", (url,), 170498071, ("md5:c58f30108f718f92721af3b95e74349a",),
        _check_cifar_archive, unpack="tar"),),
        note="the archive's published MD5; after unpacking each batch is checked against its "
             "published MD5 by jaxfl.data.cifar")


def _tiny_shakespeare() -> Dataset:
    from jaxfl.data import text  # pylint: disable=import-outside-toplevel
    url = ("https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/"
           "input.txt")
    return Dataset("tiny_shakespeare", "shakespeare", (RemoteFile(
        "input.txt", (url,), 1115394, text.TINY_SHAKESPEARE.checksums["input.txt"],
        _check_text(40000)),),
        note="no published digest; the SHA-256 of the project's byte-identical copy "
             "($JAXFL_DATA_DIR/README.md)")


def _heart_disease() -> Dataset:
    from jaxfl.data import flamby  # pylint: disable=import-outside-toplevel
    base = "https://archive.ics.uci.edu/ml/machine-learning-databases/heart-disease/"
    sizes = {"cleveland": 18461, "hungarian": 10263, "switzerland": 4109, "va": 6737}
    md5 = {"cleveland": "2d91a8ff69cfd9616aa47b59d6f843db",
           "hungarian": "22e96bee155b5973568101c93b3705f6",
           "switzerland": "9a87f7577310b3917730d06ba9349e20",
           "va": "4249d03ca7711e84f4444768c9426170"}
    files = []
    for site, size in sizes.items():
        n = f"processed.{site}.data"
        files.append(RemoteFile(n, (base + n,), size,
                                flamby.HEART_DISEASE.checksums[n] + (f"md5:{md5[site]}",),
                                _check_text(100, 14)))
    return Dataset("heart_disease", "heart_disease", tuple(files),
                   note="the MD5s FLamby's download.py checks; sizes from UCI's Index file")


def _tcga_brca() -> Dataset:
    from jaxfl.data import flamby  # pylint: disable=import-outside-toplevel
    base = "https://raw.githubusercontent.com/owkin/FLamby/main/flamby/datasets/fed_tcga_brca/"
    paths = {"brca.csv": (113184, 1000, 42), "centers.csv": (4274, 100, None),
             "train_test_split.csv": (28946, 1000, 3)}
    prefix = {"train_test_split.csv": "dataset_creation_scripts/"}
    return Dataset("tcga_brca", "tcga_brca", tuple(
        RemoteFile(n, (base + prefix.get(n, "") + n,), size, flamby.TCGA_BRCA.checksums[n],
                   _check_text(rows, cols)) for n, (size, rows, cols) in paths.items()),
        note="no published digest; SHA-256s of the FLamby files (git blobs in the data README)")


def _parkinsons() -> Dataset:
    from jaxfl.data import tabular  # pylint: disable=import-outside-toplevel
    base = ("https://archive.ics.uci.edu/ml/machine-learning-databases/parkinsons/"
            "telemonitoring/")
    return Dataset("parkinsons", "parkinsons_telemonitoring", (
        RemoteFile("parkinsons_updrs.data", (base + "parkinsons_updrs.data",), 911261,
                   tabular.PARKINSONS.checksums["parkinsons_updrs.data"], _check_text(5800, 22)),
        RemoteFile("parkinsons_updrs.names", (base + "parkinsons_updrs.names",), 4423,
                   tabular.PARKINSONS.checksums["parkinsons_updrs.names"]),),
        note="no published digest; the SHA-256 of the project's copy (believed byte-identical "
             "to UCI, not proven: see the data README)")


def _facebook() -> Dataset:
    return Dataset("facebook", "snap", (RemoteFile(
        "facebook_combined.txt.gz", ("https://snap.stanford.edu/data/facebook_combined.txt.gz",),
        None, (), unpack="gunzip"),),
        note="no published size or digest: verified by structure (gzip CRC, 'u v' lines, 4039 "
             "nodes and 88234 edges)")


def _leaf(name: str, leaf_name: str) -> Dataset:
    return Dataset(name, name, manual=(
        f"LEAF publishes no {leaf_name} files, only a script that builds them from the raw "
        f"source with sampling flags: run data/{leaf_name}/preprocess.sh of "
        "https://github.com/TalwalkarLab/leaf and copy its data/train and data/test "
        f"directories into $JAXFL_DATA_DIR/{name}/ (the loader validates them structurally)."))


def _registry() -> dict[str, Dataset]:
    entries = [_mnist(), _fashion_mnist(), _cifar10(), _tiny_shakespeare(), _heart_disease(),
               _tcga_brca(), _parkinsons(), _facebook(), _leaf("femnist", "femnist"),
               _leaf("shakespeare_leaf", "shakespeare")]
    return {d.name: d for d in entries}


REGISTRY: dict[str, Dataset] = _registry()
# jaxfl.data._files.Source.name -> registry name (where they differ).
SOURCE_NAMES = {"shakespeare": "tiny_shakespeare", "parkinsons_telemonitoring": "parkinsons"}


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
            raise _validate.ChecksumError(f"size {size} bytes, expected {remote.size}")
        if remote.digests:
            _files.verify_digests(path, remote.digests)
        if remote.check is not None:
            remote.check(path)
    except (_validate.ChecksumError, ValueError, OSError, EOFError, tarfile.TarError) as e:
        raise _validate.ChecksumError(
            f"Downloaded {url} -> {path}: verification failed: {e}. The partial file was "
            "deleted; check the mirror or try again.") from e


def _finish(remote: RemoteFile, part: Path, dest_dir: Path) -> None:
    if remote.unpack == "gunzip":
        out = dest_dir / remote.name.removesuffix(".gz")
        tmp = out.with_name(out.name + ".tmp")
        with gzip.open(part, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        if remote.check is None and out.name == "facebook_combined.txt":
            _check_edge_list(tmp)
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
        except _validate.ChecksumError:
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
    _validate.one_of("name", name, tuple(REGISTRY))
    dataset = REGISTRY[name]
    if dataset.manual:
        raise _validate.DataNotFoundError(f"Dataset {name!r} cannot be downloaded: "
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
