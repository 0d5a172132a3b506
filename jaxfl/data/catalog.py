"""The one dataset registry: every dataset jaxfl reads is declared here, once.

Each dataset is one :class:`Dataset` record in :data:`DATASETS`, which holds

* what it is and how it loads: a one-line description and its loader
  (``"module:function"``, imported when :func:`load` calls it: the loaders import this module
  for their sources, so this module imports no loader);
* where its files are searched and what they must hash to: a
  :class:`jaxfl.data._files.Source` (``MNIST``, ``HEART_DISEASE``, ...; the sub-directories of
  ``$JAXFL_DATA_DIR`` and system directories searched, where to obtain the files, the digests
  every loaded file is checked against) and the files :func:`available` looks for;
* how to fetch it (for ``python -m jaxfl.data.download``): the upstream URLs, exact sizes, the
  digests a download is checked against (the source's, plus published MD5s) and a structural
  check of the format, or the manual steps when it cannot be fetched as files.

A new dataset adds its record here (and its loader in its format's module); nothing else names
its URL, digest or registry entry. :func:`names`, :func:`info`, :func:`load` and
:func:`available` query it; :mod:`jaxfl.tasks`
builds federated tasks on top of it.

Example Usage:
  >>> DATASETS["mnist"].subdir, MNIST.subdirs[0]
  ('mnist', 'mnist')
  >>> DATASETS["mnist"].files[0].digests[0] == MNIST.checksums["train-images-idx3-ubyte.gz"][0]
  True
  >>> "mnist" in names() and "digits" in names()
  True
  >>> info("heart_disease").required[0]
  'processed.cleveland.data'
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import importlib
import tarfile
from collections.abc import Callable
from pathlib import Path

from jaxfl import validate
from jaxfl.data import _files, leaf
from jaxfl.topology import graphs

# A loader's source name -> its download name (where they differ).
SOURCE_NAMES = {"shakespeare": "tiny_shakespeare", "parkinsons_telemonitoring": "parkinsons"}


# ----------------------------------------------------------------------------- sources

MNIST = _files.Source(
    name="mnist",
    subdirs=("mnist", "MNIST"),
    url="http://yann.lecun.com/exdb/mnist/ (the four *-ubyte.gz files; any byte-identical mirror)",
    checksums={
        # SHA-256 of the original files; their MD5s equal the well-known official ones.
        "train-images-idx3-ubyte.gz": (
            "sha256:440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",),
        "train-labels-idx1-ubyte.gz": (
            "sha256:3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",),
        "t10k-images-idx3-ubyte.gz": (
            "sha256:8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",),
        "t10k-labels-idx1-ubyte.gz": (
            "sha256:f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",),
    },
)

FASHION_MNIST = _files.Source(
    name="fashion_mnist",
    subdirs=("fashion_mnist", "fashion-mnist"),
    fallbacks=("/usr/share/datasets/fashion-mnist",),
    url=("https://github.com/zalandoresearch/fashion-mnist (data/fashion/*.gz), or the Debian "
         "package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)"),
    checksums={
        # Upstream MD5 (zalandoresearch README table) and the SHA-256 of Debian's re-compressed
        # copy (its MD5 is the one recorded in the package's dpkg md5sums file).
        "train-images-idx3-ubyte.gz": (
            "md5:8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "sha256:b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"),
        "train-labels-idx1-ubyte.gz": (
            "md5:25c81989df183df01b3e8a0aad5dffbe",
            "sha256:0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056"),
        "t10k-images-idx3-ubyte.gz": (
            "md5:bef4ecab320f06d8554ea6380940ec79",
            "sha256:cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa"),
        "t10k-labels-idx1-ubyte.gz": (
            "md5:bb300cfdad3c16e7a12a480ee83cd310",
            "sha256:8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05"),
    },
)

CIFAR10 = _files.Source(
    name="cifar10",
    subdirs=("cifar-10-batches-py", "cifar10", "cifar-10"),
    url=("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz (unpack; it creates "
         "cifar-10-batches-py/)"),
    checksums={  # the MD5s published with the archive (also used by torchvision)
        "data_batch_1": ("md5:c99cafc152244af753f735de768cd75f",),
        "data_batch_2": ("md5:d4bba439e000b95fd0a9bffe97cbabec",),
        "data_batch_3": ("md5:54ebc095f3ab1f0389bbae665268c751",),
        "data_batch_4": ("md5:634d18415352ddfa80567beed471001a",),
        "data_batch_5": ("md5:482c414d41f54cd18b22e5b47cb7c3cb",),
        "test_batch": ("md5:40351d587109b95175f43aff81a1287e",),
        "batches.meta": ("md5:5ff9c542aee3614f3951f8cda6e48888",),
    },
)

TINY_SHAKESPEARE = _files.Source(
    name="shakespeare",
    subdirs=("shakespeare", "tinyshakespeare", "tiny_shakespeare"),
    url=("https://github.com/karpathy/char-rnn (data/tinyshakespeare/input.txt), saved as "
         "shakespeare/input.txt"),
    checksums={
        "input.txt": ("sha256:86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",),
    },
)

HEART_DISEASE = _files.Source(
    name="heart_disease",
    subdirs=("heart_disease", "fed_heart_disease"),
    url=("the UCI Machine Learning Repository, 'Heart Disease' "
         "(https://archive.ics.uci.edu/dataset/45/heart+disease): processed.cleveland.data, "
         "processed.hungarian.data, processed.switzerland.data, processed.va.data"),
    checksums={  # SHA-256 of the UCI files (their MD5s are the ones FLamby's download.py checks)
        "processed.cleveland.data": (
            "sha256:a74b7efa387bc9d108d7d0115d831fe9b414b29ae7124f331b622b4efa0427c8",),
        "processed.hungarian.data": (
            "sha256:d1ad108f785768cd3d7e82dc522e6f5a61eea93cccfb3a46ee8076f73fc3d796",),
        "processed.switzerland.data": (
            "sha256:834a405ccf5b66ab4056bb77794adc8df0b7125186454c0a1d002d33c6c3b314",),
        "processed.va.data": (
            "sha256:e7c93d8d0d2acdadfa4c5e8de768e2191e7f618b952e29623f1f0d5949ff6b8f",),
    },
)

TCGA_BRCA = _files.Source(
    name="tcga_brca",
    subdirs=("tcga_brca", "fed_tcga_brca"),
    url=("the FLamby repository (github.com/owkin/FLamby): flamby/datasets/fed_tcga_brca/"
         "brca.csv and .../dataset_creation_scripts/train_test_split.csv"),
    checksums={
        "brca.csv": ("sha256:07cb53423f7d579d33cfdbf2cba57b2aee75318b85866c68ce39a75b1f1ba020",),
        "centers.csv": (
            "sha256:d610df2dae0203ea229c9579747ed3eb8d28e137c5378f55acc6fe6b4632bb1d",),
        "train_test_split.csv": (
            "sha256:1249c6543a4060ff0fdaf8510fc37017755836db6c9fc5e6af96057c36510990",),
    },
)

PARKINSONS = _files.Source(
    name="parkinsons_telemonitoring",
    subdirs=("parkinsons_telemonitoring", "parkinsons"),
    url=("the UCI Machine Learning Repository, 'Parkinsons Telemonitoring' "
         "(https://archive.ics.uci.edu/dataset/189/parkinsons+telemonitoring): "
         "parkinsons_updrs.data"),
    checksums={
        "parkinsons_updrs.data": (
            "sha256:f2c7d5025dec4e92e7feae367a5f7ccf58789a10ac6b54bdf15976c599f9dd39",),
        "parkinsons_updrs.names": (
            "sha256:744dc2835eab5c0fc744c638e5e6b05e656788f60f8aa2aba9d48e21c629f7c2",),
    },
)

CREDITCARD = _files.Source(
    name="creditcard",
    subdirs=("creditcard", "creditcardfraud", "credit_card"),
    url="https://www.kaggle.com/datasets/mlg-ulb/creditcardfraud (creditcard.csv)",
)


FACEBOOK = _files.Source(
    name="facebook",
    subdirs=(".", "snap", "facebook"),
    url=f"{graphs.FACEBOOK_URL} (gunzip it)",
)


# ----------------------------------------------------------------------------- downloads


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
    """One dataset: how it loads, where its files are, how they are fetched and checked.

    Attributes:
      name: the registry name (for :func:`load` and on the download command line).
      subdir: the sub-directory of the data root a download writes into.
      files: the files a download fetches (empty: not downloadable as files).
      note: provenance of the checks (which digests are published, which are the project's).
      manual: when set, the dataset cannot be fetched as files and this text says how to get it.
      loader: ``"module:function"`` that :func:`load` calls.
      description: one line: what it is and what the loader returns.
      source: where its files are searched and their digests (``None``: bundled with a Python
        package, see ``package``).
      required: the files :func:`available` looks for (empty for LEAF: any JSON of the train
        split).
      package: the Python package the data is bundled with (``None``: read from files).
    """

    name: str
    subdir: str = ""
    files: tuple[RemoteFile, ...] = ()
    note: str = ""
    manual: str = ""
    loader: str = ""
    description: str = ""
    source: _files.Source | None = None
    required: tuple[str, ...] = ()
    package: str | None = None

    @property
    def downloadable(self) -> bool:
        """Whether ``python -m jaxfl.data.download`` knows it (files to fetch, or the steps)."""
        return bool(self.files or self.manual)


# ----------------------------------------------------------------------------- format checks


def check_idx_gz(path: Path) -> None:
    with gzip.open(path, "rb") as f:
        head = f.read(4)
        if len(head) != 4 or head[:2] != b"\0\0" or head[2] != 0x08:
            raise validate.ChecksumError(f"{path}: not a gzip-compressed uint8 IDX file.")
        while f.read(1 << 20):  # the whole gzip stream decompresses (CRC checked at the end)
            pass


def check_text(min_lines: int, columns: int | None = None, sep: str = ","):
    def check(path: Path) -> None:
        lines = path.read_bytes().decode("ascii").splitlines()
        if len(lines) < min_lines:
            raise validate.ChecksumError(f"{path}: {len(lines)} lines, expected >= {min_lines}.")
        if columns is not None:
            rows = csv.reader(lines, delimiter=sep)
            bad = [i for i, row in enumerate(rows) if row and len(row) != columns]
            if bad:
                raise validate.ChecksumError(
                    f"{path}: line {bad[0] + 1} does not have {columns} fields.")
    return check


def check_edge_list(path: Path) -> None:
    nodes, edges = set(), 0
    with open(path, encoding="ascii") as f:
        for i, line in enumerate(f):
            parts = line.split()
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                raise validate.ChecksumError(f"{path}: line {i + 1} is not 'u v'.")
            nodes.update(parts)
            edges += 1
    if (len(nodes), edges) != (4039, 88234):
        raise validate.ChecksumError(
            f"{path}: {len(nodes)} nodes and {edges} edges, expected 4039 and 88234.")


def check_cifar_archive(path: Path) -> None:
    with tarfile.open(path, "r:gz") as tar:
        names = set(tar.getnames())
    want = {f"cifar-10-batches-py/{n}" for n in ("data_batch_1", "test_batch", "batches.meta")}
    if not want <= names:
        raise validate.ChecksumError(f"{path}: not the CIFAR-10 python archive.")


# ----------------------------------------------------------------------------- the datasets

_IDX_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
              "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
_HEART_FILES = tuple(f"processed.{site}.data"
                     for site in ("cleveland", "hungarian", "switzerland", "va"))


def _mnist() -> Dataset:
    sizes = {"train-images-idx3-ubyte.gz": 9912422, "train-labels-idx1-ubyte.gz": 28881,
             "t10k-images-idx3-ubyte.gz": 1648877, "t10k-labels-idx1-ubyte.gz": 4542}
    md5 = {"train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
           "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
           "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
           "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"}
    bases = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
    return Dataset("mnist", "mnist", tuple(
        RemoteFile(n, tuple(b + n for b in bases), sizes[n],
                   MNIST.checksums[n] + (f"md5:{md5[n]}",), check_idx_gz) for n in sizes),
        note="published MD5s and the SHA-256s of the project's copy ($JAXFL_DATA_DIR/README.md)",
        loader="jaxfl.data.idx:load_mnist",
        description="MNIST IDX gzip; (uint8 [N,28,28], uint8 [N]) for split='train'|'test'",
        source=MNIST, required=_IDX_FILES)


def _fashion_mnist() -> Dataset:
    sizes = {"train-images-idx3-ubyte.gz": 26421880, "train-labels-idx1-ubyte.gz": 29515,
             "t10k-images-idx3-ubyte.gz": 4422102, "t10k-labels-idx1-ubyte.gz": 5148}
    bases = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
             "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion/")
    return Dataset("fashion_mnist", "fashion_mnist", tuple(
        RemoteFile(n, tuple(b + n for b in bases), sizes[n],
                   tuple(d for d in FASHION_MNIST.checksums[n] if d.startswith("md5:")),
                   check_idx_gz) for n in sizes),
        note="the MD5s published in the zalandoresearch/fashion-mnist README",
        loader="jaxfl.data.idx:load_fashion_mnist",
        description="Fashion-MNIST IDX gzip (also Debian's /usr/share/datasets/fashion-mnist)",
        source=FASHION_MNIST, required=_IDX_FILES)


def _cifar10() -> Dataset:
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    return Dataset("cifar10", ".", (RemoteFile(
        "cifar-10-python.tar.gz", (url,), 170498071, ("md5:c58f30108f718f92721af3b95e74349a",),
        check_cifar_archive, unpack="tar"),),
        note="the archive's published MD5; after unpacking each batch is checked against its "
             "published MD5 by jaxfl.data.cifar",
        loader="jaxfl.data.cifar:load_cifar10",
        description="CIFAR-10 python batches; (uint8 [N,32,32,3], int64 [N])",
        source=CIFAR10, required=tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",))


def _tiny_shakespeare() -> Dataset:
    url = ("https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/"
           "input.txt")
    return Dataset("tiny_shakespeare", "shakespeare", (RemoteFile(
        "input.txt", (url,), 1115394, TINY_SHAKESPEARE.checksums["input.txt"],
        check_text(40000)),),
        note="no published digest; the SHA-256 of the project's byte-identical copy "
             "($JAXFL_DATA_DIR/README.md)",
        loader="jaxfl.data.text:load_tiny_shakespeare",
        description="char-rnn tiny Shakespeare as one string (parse with text.parse_speeches)",
        source=TINY_SHAKESPEARE, required=("input.txt",))


def _heart_disease() -> Dataset:
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
                                HEART_DISEASE.checksums[n] + (f"md5:{md5[site]}",),
                                check_text(100, 14)))
    return Dataset("heart_disease", "heart_disease", tuple(files),
                   note="the MD5s FLamby's download.py checks; sizes from UCI's Index file",
                   loader="jaxfl.data.flamby:load_heart_disease",
                   description="Fed-Heart-Disease, 4 silos (303/261/46/130), 10 raw features, "
                               "y=num>0",
                   source=HEART_DISEASE, required=_HEART_FILES)


def _tcga_brca() -> Dataset:
    base = "https://raw.githubusercontent.com/owkin/FLamby/main/flamby/datasets/fed_tcga_brca/"
    paths = {"brca.csv": (113184, 1000, 42), "centers.csv": (4274, 100, None),
             "train_test_split.csv": (28946, 1000, 3)}
    prefix = {"train_test_split.csv": "dataset_creation_scripts/"}
    return Dataset("tcga_brca", "tcga_brca", tuple(
        RemoteFile(n, (base + prefix.get(n, "") + n,), size, TCGA_BRCA.checksums[n],
                   check_text(rows, cols)) for n, (size, rows, cols) in paths.items()),
        note="no published digest; SHA-256s of the FLamby files (git blobs in the data README)",
        loader="jaxfl.data.flamby:load_tcga_brca",
        description="Fed-TCGA-BRCA, 6 regions, 39 features, y=(E, T)",
        source=TCGA_BRCA, required=("brca.csv", "train_test_split.csv"))


def _parkinsons() -> Dataset:
    base = ("https://archive.ics.uci.edu/ml/machine-learning-databases/parkinsons/"
            "telemonitoring/")
    return Dataset("parkinsons", "parkinsons_telemonitoring", (
        RemoteFile("parkinsons_updrs.data", (base + "parkinsons_updrs.data",), 911261,
                   PARKINSONS.checksums["parkinsons_updrs.data"], check_text(5800, 22)),
        RemoteFile("parkinsons_updrs.names", (base + "parkinsons_updrs.names",), 4423,
                   PARKINSONS.checksums["parkinsons_updrs.names"]),),
        note="no published digest; the SHA-256 of the project's copy (believed byte-identical "
             "to UCI, not proven: see the data README)",
        loader="jaxfl.data.tabular:load_parkinsons",
        description="UCI Parkinsons telemonitoring, 5875 rows, 42 subjects as groups",
        source=PARKINSONS, required=("parkinsons_updrs.data",))


def _facebook() -> Dataset:
    return Dataset("facebook", "snap", (RemoteFile(
        graphs.FACEBOOK_FILE + ".gz", (graphs.FACEBOOK_URL,),
        None, (), unpack="gunzip"),),
        note="no published size or digest: verified by structure (gzip CRC, 'u v' lines, 4039 "
             "nodes and 88234 edges)",
        loader="jaxfl.topology.graphs:facebook",
        description="SNAP ego-Facebook graph; (adjacency [4039, 4039] sparse, node ids)",
        source=FACEBOOK, required=(graphs.FACEBOOK_FILE,))


def _leaf(name: str, leaf_name: str, loader: str, description: str) -> Dataset:
    return Dataset(name, name, manual=(
        f"LEAF publishes no {leaf_name} files, only a script that builds them from the raw "
        f"source with sampling flags: run data/{leaf_name}/preprocess.sh of "
        f"{leaf.LEAF_URL} and copy its data/train and data/test "
        f"directories into $JAXFL_DATA_DIR/{name}/ (the loader validates them structurally)."),
        loader=loader, description=description, source=leaf.source(name))


def _datasets() -> dict[str, Dataset]:
    entries = [
        _mnist(), _fashion_mnist(), _cifar10(), _tiny_shakespeare(), _heart_disease(),
        _tcga_brca(), _parkinsons(), _facebook(),
        _leaf("femnist", "femnist", "jaxfl.data.leaf:load_femnist",
              "LEAF FEMNIST JSON; per-writer float32 [n,784] and int64 labels"),
        _leaf("shakespeare_leaf", "shakespeare", "jaxfl.data.leaf:load_leaf_shakespeare",
              "LEAF Shakespeare JSON; per-role 80-char strings and next characters"),
        Dataset("heart_disease_flamby", loader="jaxfl.data.flamby:heart_disease_flamby",
                description="Fed-Heart-Disease as FLamby serves it: 13 features, train/test, "
                            "normalised (the files of heart_disease)",
                source=HEART_DISEASE, required=_HEART_FILES),
        Dataset("creditcard", loader="jaxfl.data.tabular:load_creditcard",
                description="Kaggle credit-card fraud CSV; x = Time, V1..V28, Amount; y = Class",
                source=CREDITCARD, required=("creditcard.csv",)),
        Dataset("digits", loader="jaxfl.data.tabular:load_digits", package="sklearn",
                description="scikit-learn's bundled 8x8 digits (1797 x 64)"),
        Dataset("breast_cancer", loader="jaxfl.data.tabular:load_breast_cancer",
                package="sklearn",
                description="scikit-learn's bundled breast cancer set (569 x 30)"),
    ]
    return {d.name: d for d in entries}


DATASETS: dict[str, Dataset] = _datasets()


# ----------------------------------------------------------------------------- queries


def names() -> tuple[str, ...]:
    """Every registered dataset name."""
    return tuple(DATASETS)


def info(name: str) -> Dataset:
    """The record of ``name``.

    Raises:
      JaxflValueError: an unknown name (the message lists the registered ones).
    """
    validate.one_of("name", name, names())
    return DATASETS[name]


def loader(name: str) -> Callable:
    """The loader function of ``name`` (imported now)."""
    module, _, function = info(name).loader.partition(":")
    return getattr(importlib.import_module(module), function)


def load(name: str, **kwargs):
    """Loads dataset ``name`` by calling its loader with ``**kwargs`` (see :func:`info`)."""
    return loader(name)(**kwargs)


def available(name: str, *, path=None) -> bool:
    """Whether the files of ``name`` are present (no reading, no hashing)."""
    entry = info(name)
    if entry.package is not None:  # bundled with a Python package
        try:
            importlib.import_module(entry.package)
        except ImportError:
            return False
        return True
    if not entry.required:  # LEAF: any JSON in the train split directory
        leaf = importlib.import_module("jaxfl.data.leaf")
        try:
            leaf.split_dir(entry.name, "train", path)
        except validate.DataNotFoundError:
            return False
        return True
    try:
        _files.find_dir(entry.source, entry.required, path)
    except validate.DataNotFoundError:
        return False
    return True
