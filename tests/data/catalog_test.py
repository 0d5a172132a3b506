"""The one dataset registry (jaxfl.data.catalog) and its queries (load, available)."""

from pathlib import Path

import pytest

from jaxfl import validate
from jaxfl.data import _files, catalog, download
from tests.data.conftest import require


def test_registry_entries_are_consistent():
    for name in catalog.names():
        entry = catalog.info(name)
        assert entry.name == name and callable(catalog.loader(name)) and entry.description
        if entry.source is not None:
            assert entry.source.url and entry.source.subdirs
            for f in entry.required:  # every recorded digest is well formed
                for digest in entry.source.checksums.get(f, ()):
                    algo, _, hexdigest = digest.partition(":")
                    assert algo in ("sha256", "md5")
                    assert len(hexdigest) == {"sha256": 64, "md5": 32}[algo]
        else:
            assert entry.package, name  # bundled with a package, else read from files
    with pytest.raises(validate.JaxflValueError, match=r"name.*'mnist'"):
        catalog.info("imagenet")


def test_one_registry_serves_loading_and_downloading():
    """A dataset is declared once: the download command's entries are the catalog's own
    records, and the loading queries are the catalog's functions."""
    assert set(download.REGISTRY) == {n for n in catalog.names() if catalog.info(n).downloadable}
    assert all(download.REGISTRY[n] is catalog.DATASETS[n] for n in download.REGISTRY)
    assert {"mnist", "tiny_shakespeare", "facebook", "femnist"} <= set(download.REGISTRY)
    assert not {"digits", "creditcard", "heart_disease_flamby"} & set(download.REGISTRY)
    for name in download.SOURCE_NAMES.values():
        assert name in catalog.DATASETS


def test_available_and_load_real():
    require("heart_disease/processed.va.data", "shakespeare/input.txt")
    assert catalog.available("heart_disease") and catalog.available("tiny_shakespeare")
    assert catalog.load("heart_disease").sizes.tolist() == [303, 261, 46, 130]
    assert len(catalog.load("tiny_shakespeare")) == 1115394


def test_available_false_when_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    for name in ("mnist", "tcga_brca", "parkinsons", "creditcard", "cifar10", "femnist",
                 "facebook"):
        assert not catalog.available(name)
    assert not catalog.available("mnist", path=tmp_path)


def test_every_real_file_matches_its_recorded_checksum():
    """All shared files with a recorded digest verify (hashes computed once per process)."""
    root = require()
    checked = set()
    for name in catalog.names():
        entry = catalog.info(name)
        if entry.source is None or not catalog.available(name):
            continue
        for f in entry.required:
            path = _files.find_file(entry.source, f)  # raises ChecksumError on mismatch
            if path.is_relative_to(root) and f in entry.source.checksums:
                checked.add(path)
    assert checked  # at least one dataset there (a GPU machine carries MNIST alone)
    if root.resolve() == (Path(__file__).resolve().parents[3] / "shared" / "data").resolve():
        # the shared folder: 4 MNIST + 4 heart + 2 TCGA + input.txt + Parkinsons.
        assert len(checked) >= 12
