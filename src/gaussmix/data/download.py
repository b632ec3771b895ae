"""Verified downloads into a cache directory.

A file is fetched from the first mirror that serves it, written to a temporary file next to
its destination and moved into place (an atomic rename) only once its SHA-256 checksum
matches: an interrupted or corrupted download never leaves a file under the final name.
The checksum is that of the file's *content* -- of the bytes after decompression for a
``.gz`` file -- so that a mirror that recompresses the same data is accepted, and any change
to the data is refused.  A file already in the cache is checked again before it is reused;
a cached file that fails the check is refused (never silently replaced).

Only the standard library is used (:mod:`urllib.request`); nothing here knows about a
particular data set (the data sets declare their files in :mod:`gaussmix.data.datasets`).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.exceptions import GaussmixError

__all__ = ["RemoteFile", "DownloadError", "ChecksumError", "content_sha256", "fetch"]

_CHUNK = 1 << 20


class DownloadError(GaussmixError, OSError):
    """No mirror could serve a file (network error, HTTP error)."""


class ChecksumError(GaussmixError, ValueError):
    """A file's content does not have the expected SHA-256 checksum."""


@dataclass(frozen=True)
class RemoteFile:
    """One file of a data set, as mirrors serve it.

    Parameters
    ----------
    name : str
        File name on the mirror and in the cache (e.g. ``'train-images-idx3-ubyte.gz'``).
    sha256 : str
        Hex SHA-256 of the file's content: of the decompressed bytes if ``name`` ends with
        ``.gz``, of the file itself otherwise.
    """

    name: str
    sha256: str

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name in (".", ".."):
            raise ValueError(f"RemoteFile name must be a plain file name, got {self.name!r}")
        h = self.sha256.lower()
        if len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
            raise ValueError(f"RemoteFile sha256 must be 64 hex digits, got {self.sha256!r}")
        object.__setattr__(self, "sha256", h)


def content_sha256(path: str | os.PathLike[str], gzipped: bool | None = None) -> str:
    """Hex SHA-256 of a file's content, decompressed if ``gzipped`` (default: if the file's
    name ends with ``.gz``).

    Parameters
    ----------
    path : path
        The file.
    gzipped : bool, optional
        Hash the decompressed content (default: if the name ends with ``.gz``).

    Raises
    ------
    ChecksumError
        If a ``.gz`` file is not valid gzip data (a truncated or corrupted file).
    """
    path = Path(path)
    digest = hashlib.sha256()
    if gzipped is None:
        gzipped = path.name.endswith(".gz")
    opener = gzip.open if gzipped else open
    try:
        with opener(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                digest.update(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ChecksumError(f"{path} is not a valid gzip file ({exc})") from exc
    return digest.hexdigest()


def _verify(path: Path, rf: RemoteFile, origin: str) -> None:
    got = content_sha256(path, gzipped=rf.name.endswith(".gz"))
    if got != rf.sha256:
        raise ChecksumError(
            f"{origin}: SHA-256 of the content is {got}, expected {rf.sha256}; "
            "the file is corrupted or not the expected data"
        )


def _download(url: str, dest: Path, timeout: float) -> Path:
    """Stream ``url`` to a temporary file in ``dest.parent``; return its path."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            expected = resp.headers.get("Content-Length")
            written = 0
            for chunk in iter(lambda: resp.read(_CHUNK), b""):
                out.write(chunk)
                written += len(chunk)
        if expected is not None and expected.isdigit() and written != int(expected):
            raise OSError(f"transfer ended after {written} of {expected} bytes")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return Path(tmp)


def fetch(
    files: Sequence[RemoteFile],
    dest: str | os.PathLike[str],
    mirrors: Sequence[str],
    *,
    timeout: float = 30.0,
) -> list[Path]:
    """Make verified copies of ``files`` in ``dest``, downloading those not already there.

    Parameters
    ----------
    files : sequence of RemoteFile
        The files and their checksums.
    dest : path
        Cache directory (created if missing).
    mirrors : sequence of str
        Base URLs, tried in order; a file's URL is ``mirror.rstrip('/') + '/' + name``.
    timeout : float
        Seconds to wait for each connection and read.

    Returns
    -------
    list of Path
        The verified files, in the order of ``files``.

    Raises
    ------
    ChecksumError
        A cached file is corrupted (delete it and run again), or every mirror that answered
        served a file with the wrong checksum.
    DownloadError
        No mirror could be reached or served the file.
    """
    if not mirrors:
        raise ValueError("mirrors must name at least one base URL")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for rf in files:
        target = dest / rf.name
        if target.exists():
            try:
                _verify(target, rf, f"cached file {target}")
            except ChecksumError as exc:
                raise ChecksumError(f"{exc}; delete it and run again") from None
            out.append(target)
            continue
        failures: list[str] = []
        bad_checksum: str | None = None
        for mirror in mirrors:
            url = f"{mirror.rstrip('/')}/{rf.name}"
            try:
                tmp = _download(url, target, timeout)
            except urllib.error.HTTPError as exc:
                failures.append(f"{url} (HTTP {exc.code} {exc.reason})")
                continue
            except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                failures.append(f"{url} ({reason})")
                continue
            try:
                _verify(tmp, rf, url)
            except ChecksumError as exc:
                tmp.unlink(missing_ok=True)
                bad_checksum = str(exc)
                failures.append(f"{url} (wrong checksum)")
                continue
            os.replace(tmp, target)
            out.append(target)
            break
        else:
            if bad_checksum is not None:
                raise ChecksumError(f"refused {bad_checksum}; tried: {'; '.join(failures)}")
            raise DownloadError(
                f"could not download {rf.name}: {'; '.join(failures)}; "
                "check the network or pass other mirrors"
            )
    return out
