"""The dataset registry and load(name)."""

import pytest

from jaxfl import validate
from jaxfl.data import _files, sources
from tests.data.conftest import require


def test_registry_entries_are_consistent():
    for name in sources.names():
        entry = sources.info(name)
        assert entry.name == name and callable(entry.loader) and entry.description
        if entry.source is not None:
            assert entry.source.url and entry.source.subdirs
            for f in entry.files:  # every recorded digest is well formed
                for digest in entry.source.checksums.get(f, ()):
                    algo, _, hexdigest = digest.partition(":")
                    assert algo in ("sha256", "md5")
                    assert len(hexdigest) == {"sha256": 64, "md5": 32}[algo]
    with pytest.raises(validate.JaxflValueError, match="name"):
        sources.info("imagenet")


def test_available_and_load_real():
    require("heart_disease/processed.va.data", "shakespeare/input.txt")
    assert sources.available("heart_disease") and sources.available("tiny_shakespeare")
    assert sources.load("heart_disease").sizes.tolist() == [303, 261, 46, 130]
    assert len(sources.load("tiny_shakespeare")) == 1115394


def test_available_false_when_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    for name in ("mnist", "tcga_brca", "parkinsons", "creditcard", "cifar10", "femnist"):
        assert not sources.available(name)
    assert not sources.available("mnist", path=tmp_path)


def test_every_real_file_matches_its_recorded_checksum():
    """All shared files with a recorded digest verify (hashes computed once per process)."""
    root = require()
    checked = set()
    for name in sources.names():
        entry = sources.info(name)
        if entry.source is None or not sources.available(name):
            continue
        for f in entry.files:
            path = _files.find_file(entry.source, f)  # raises ChecksumError on mismatch
            if path.is_relative_to(root) and f in entry.source.checksums:
                checked.add(path)
    # 4 MNIST + 4 heart + 2 TCGA + input.txt + Parkinsons.
    assert len(checked) >= 12
