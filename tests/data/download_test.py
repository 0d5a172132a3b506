"""jaxfl.data.download against a local HTTP server (127.0.0.1, Range support; no network)."""

import contextlib
import gzip
import hashlib
import http.server
import re
import threading

import numpy as np
import pytest

from jaxfl import validate
from jaxfl.data import _files, catalog, download, idx, text
from tests.data.conftest import write_idx


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files`` (path -> bytes) with Range; ``server.faults`` injects errors."""

    def log_message(self, *args):  # keep pytest output clean
        del args

    def do_GET(self):  # noqa: N802
        self.server.requests.append((self.path, self.headers.get("Range")))
        fault = self.server.faults.get(self.path)
        if isinstance(fault, int):
            self.send_error(fault)
            return
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start, status = 0, 200
        m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if m and self.server.ranges:
            start, status = int(m.group(1)), 206
            if start >= len(body):
                self.send_error(416)
                return
        payload = body[start:]
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.end_headers()
        if fault == "truncate":  # announce everything, send half, hang up
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(payload)


@contextlib.contextmanager
def _serve(files, *, faults=None, ranges=True):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.files, server.faults, server.ranges, server.requests = files, faults or {}, ranges, []
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _remote(name, data, **kw):
    return download.RemoteFile(name, ("http://upstream.invalid/never",), len(data),
                               (_sha(data),), **kw)


@pytest.fixture
def blob():
    return np.random.default_rng(0).bytes(200_000)


def test_success_installs_verified_file_atomically(tmp_path, blob):
    with _serve({"/ds/a.bin": blob}) as (server, url):
        out = download.fetch_file(_remote("a.bin", blob), tmp_path, dataset="ds", mirrors=[url])
    assert out == tmp_path / "a.bin" and out.read_bytes() == blob
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]  # no .part left
    assert server.requests == [("/ds/a.bin", None)]
    assert download.fetch_file(_remote("a.bin", blob), tmp_path, dataset="ds",
                               mirrors=["http://127.0.0.1:9"]) == out  # present: no transfer


def test_wrong_checksum_names_url_and_file_and_leaves_nothing(tmp_path, blob):
    remote = download.RemoteFile("a.bin", (), len(blob), (_sha(b"other"),))
    with _serve({"/ds/a.bin": blob}) as (_, url):
        with pytest.raises(validate.ChecksumError, match=r"ds/a\.bin.*a\.bin\.part.*checksum"):
            download.fetch_file(remote, tmp_path, dataset="ds", mirrors=[url])
    assert list(tmp_path.iterdir()) == []


def test_wrong_size_is_reported(tmp_path, blob):
    remote = download.RemoteFile("a.bin", (), len(blob) + 1, ())
    with _serve({"/ds/a.bin": blob}) as (_, url):
        with pytest.raises(validate.ChecksumError, match=f"size {len(blob)} bytes, expected"):
            download.fetch_file(remote, tmp_path, dataset="ds", mirrors=[url])


def test_truncated_transfer_keeps_part_and_resumes_with_range(tmp_path, blob):
    remote = _remote("a.bin", blob)
    with _serve({"/ds/a.bin": blob}, faults={"/ds/a.bin": "truncate"}) as (server, url):
        with pytest.raises(download.DownloadError, match=r"truncated.*100000 of 200000.*resume"):
            download.fetch_file(remote, tmp_path, dataset="ds", mirrors=[url])
        part = tmp_path / "a.bin.part"
        assert part.stat().st_size == 100_000 and not (tmp_path / "a.bin").exists()
        server.faults.clear()
        download.fetch_file(remote, tmp_path, dataset="ds", mirrors=[url])
    assert (tmp_path / "a.bin").read_bytes() == blob and not part.exists()
    assert server.requests[-1] == ("/ds/a.bin", "bytes=100000-")


def test_resume_of_partial_file_and_restart_without_range_support(tmp_path, blob):
    (tmp_path / "a.bin.part").write_bytes(blob[:12345])
    with _serve({"/ds/a.bin": blob}) as (server, url):
        download.fetch_file(_remote("a.bin", blob), tmp_path, dataset="ds", mirrors=[url])
    assert server.requests == [("/ds/a.bin", "bytes=12345-")]
    assert (tmp_path / "a.bin").read_bytes() == blob
    (tmp_path / "a.bin").unlink()
    (tmp_path / "a.bin.part").write_bytes(b"garbage")
    with _serve({"/ds/a.bin": blob}, ranges=False) as (_, url):  # 200: start over
        download.fetch_file(_remote("a.bin", blob), tmp_path, dataset="ds", mirrors=[url])
    assert (tmp_path / "a.bin").read_bytes() == blob


@pytest.mark.parametrize("code", [404, 500])
def test_server_errors_name_url_status_and_try_next_mirror(tmp_path, blob, code):
    faults = {"/ds/a.bin": code}
    with _serve({"/ds/a.bin": blob}, faults=faults) as (_, bad), \
            _serve({"/ds/a.bin": blob}) as (_, good):
        with pytest.raises(download.DownloadError, match=rf"{bad}/ds/a\.bin.*HTTP {code}"):
            download.fetch_file(_remote("a.bin", blob), tmp_path, dataset="ds", mirrors=[bad])
        assert not (tmp_path / "a.bin").exists()
        download.fetch_file(_remote("a.bin", blob), tmp_path, dataset="ds",
                            mirrors=[bad, good])
    assert (tmp_path / "a.bin").read_bytes() == blob


def test_structural_check_rejects_a_non_idx_file(tmp_path):
    junk = gzip.compress(b"<html>not found</html>")
    remote = download.RemoteFile("x.gz", (), len(junk), (), catalog.check_idx_gz)
    with _serve({"/ds/x.gz": junk}) as (_, url):
        with pytest.raises(validate.ChecksumError, match="IDX"):
            download.fetch_file(remote, tmp_path, dataset="ds", mirrors=[url])


def test_cli_downloads_tiny_shakespeare_via_env_mirror(tmp_path, monkeypatch, capsys):
    corpus = ("First Citizen:\nBefore we proceed.\n\n" * 14000).encode()
    entry = download.REGISTRY["tiny_shakespeare"]
    fake = download.Dataset("tiny_shakespeare", entry.subdir, (
        download.RemoteFile("input.txt", (), len(corpus), (_sha(corpus),),
                            catalog.check_text(40000)),))
    monkeypatch.setitem(download.REGISTRY, "tiny_shakespeare", fake)
    with _serve({"/tiny_shakespeare/input.txt": corpus}) as (_, url):
        monkeypatch.setenv(download.MIRROR_ENV, url)
        assert download.main(["tiny_shakespeare", "--dir", str(tmp_path)]) == 0
    assert (tmp_path / "shakespeare" / "input.txt").read_bytes() == corpus
    assert "OK" in capsys.readouterr().out


def test_loader_missing_file_names_the_command_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXFL_DATA_DIR", str(tmp_path))
    monkeypatch.delenv(download.DOWNLOAD_ENV, raising=False)
    monkeypatch.setattr(download, "fetch", lambda *a, **k: pytest.fail("downloaded"))
    with pytest.raises(validate.DataNotFoundError,
                       match="python -m jaxfl.data.download mnist"):
        idx.load_mnist("test")
    with pytest.raises(validate.DataNotFoundError,
                       match="python -m jaxfl.data.download tiny_shakespeare"):
        text.load_tiny_shakespeare()


def test_loader_downloads_when_opted_in(tmp_path, monkeypatch):
    images = np.arange(3 * 28 * 28, dtype=np.uint8).reshape(3, 28, 28)
    files = {"t10k-images-idx3-ubyte.gz": write_idx(tmp_path / "i.gz", images).read_bytes(),
             "t10k-labels-idx1-ubyte.gz": write_idx(tmp_path / "l.gz",
                                                    np.array([1, 2, 3])).read_bytes()}
    fake = download.Dataset("mnist", "mnist", tuple(
        download.RemoteFile(n, (), len(b), (_sha(b),), catalog.check_idx_gz)
        for n, b in files.items()))
    monkeypatch.setitem(download.REGISTRY, "mnist", fake)
    monkeypatch.setattr(idx, "MNIST", _files.Source("mnist", ("mnist",), "upstream"))
    root = tmp_path / "root"
    monkeypatch.setenv("JAXFL_DATA_DIR", str(root))
    with _serve({f"/mnist/{n}": b for n, b in files.items()}) as (_, url):
        monkeypatch.setenv(download.MIRROR_ENV, url)
        monkeypatch.setenv(download.DOWNLOAD_ENV, "1")
        x, y = idx.load_mnist("test")
    assert x.shape == (3, 28, 28) and y.tolist() == [1, 2, 3]
    assert sorted(p.name for p in (root / "mnist").iterdir()) == sorted(files)


def test_registry_records_checks_for_every_downloadable_file():
    for dataset in download.REGISTRY.values():
        assert dataset.manual or dataset.note, dataset.name
        for f in dataset.files:
            assert f.urls and all(u.startswith("http") for u in f.urls)
            assert f.digests or f.check or f.unpack, f.name  # something verifies it
    assert {"mnist", "fashion_mnist", "cifar10", "femnist", "shakespeare_leaf",
            "tiny_shakespeare", "heart_disease", "parkinsons", "facebook"} <= set(
                download.REGISTRY)
