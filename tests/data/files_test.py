"""Path resolution, missing-file errors and checksum verification (jaxfl.data._files)."""

import hashlib

import pytest

from jaxfl import validate
from jaxfl.data import _files


def _source(tmp_path, checksums=None):
    return _files.Source(name="toy", subdirs=("toy", "toy_alt"), url="https://example.org/toy",
                         checksums=checksums or {}, fallbacks=(str(tmp_path / "system"),))


def test_resolution_order_env_then_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv(_files.ENV_VAR, str(tmp_path / "root"))
    src = _source(tmp_path)
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "a.bin").write_bytes(b"system")
    assert _files.find_file(src, "a.bin") == tmp_path / "system" / "a.bin"
    (tmp_path / "root" / "toy_alt").mkdir(parents=True)
    (tmp_path / "root" / "toy_alt" / "a.bin").write_bytes(b"env")
    assert _files.find_file(src, "a.bin").read_bytes() == b"env"
    # An explicit path is the only place searched, and may name the file itself.
    explicit = tmp_path / "mine"
    explicit.mkdir()
    with pytest.raises(validate.DataNotFoundError):
        _files.find_file(src, "a.bin", explicit)
    (explicit / "a.bin").write_bytes(b"mine")
    assert _files.find_file(src, "a.bin", explicit).read_bytes() == b"mine"
    assert _files.find_file(src, "a.bin", explicit / "a.bin").read_bytes() == b"mine"


def test_missing_file_message_names_file_dirs_and_source(tmp_path, monkeypatch):
    monkeypatch.setenv(_files.ENV_VAR, str(tmp_path))
    with pytest.raises(validate.DataNotFoundError) as err:
        _files.find_files(_source(tmp_path), ["a.bin", "b.bin"])
    msg = str(err.value)
    assert "'a.bin'" in msg and "'b.bin'" in msg
    assert str(tmp_path / "toy") in msg and str(tmp_path / "system") in msg
    assert "https://example.org/toy" in msg
    assert isinstance(err.value, FileNotFoundError)


def test_missing_env_var_is_reported(tmp_path, monkeypatch):
    monkeypatch.delenv(_files.ENV_VAR, raising=False)
    src = _files.Source(name="toy", subdirs=("toy",), url="u")
    with pytest.raises(validate.DataNotFoundError, match="JAXFL_DATA_DIR is not set"):
        _files.find_file(src, "a.bin")


def test_checksums_sha256_md5_and_mismatch(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"hello")
    sha = hashlib.sha256(b"hello").hexdigest()
    md5 = hashlib.md5(b"hello").hexdigest()
    _files.verify_digests(f, [f"sha256:{sha}"])
    _files.verify_digests(f, ["sha256:" + "0" * 64, f"md5:{md5}"])  # any accepted digest
    with pytest.raises(validate.ChecksumError, match="a.bin") as err:
        _files.verify_digests(f, ["sha256:" + "0" * 64])
    assert sha in str(err.value)
    with pytest.raises(validate.JaxflValueError, match="Malformed"):
        _files.verify_digests(f, ["crc32:00"])


def test_find_file_verifies_known_files_only(tmp_path):
    src = _source(tmp_path, {"a.bin": ("sha256:" + "0" * 64,)})
    (tmp_path / "a.bin").write_bytes(b"x")
    (tmp_path / "b.bin").write_bytes(b"y")
    with pytest.raises(validate.ChecksumError):
        _files.find_file(src, "a.bin", tmp_path)
    assert _files.find_file(src, "a.bin", tmp_path, verify=False).name == "a.bin"
    assert not _files.verify_file(src, tmp_path / "b.bin")  # no digest recorded


def test_digest_cached_per_file_version(tmp_path, monkeypatch):
    f = tmp_path / "a.bin"
    f.write_bytes(b"one")
    first = _files.file_digest(f)
    calls = []
    real_new = hashlib.new
    monkeypatch.setattr(hashlib, "new", lambda *a: calls.append(a) or real_new(*a))
    assert _files.file_digest(f) == first and not calls  # served from the cache
    f.write_bytes(b"two!")  # new size -> new cache key
    assert _files.file_digest(f) == hashlib.sha256(b"two!").hexdigest() and calls
