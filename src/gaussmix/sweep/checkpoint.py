"""The checkpoint of a sweep: an append-only JSON-lines file of finished points.

One line per point, ``{"key", "row", "warnings", "quadrature"}`` in strict JSON
(:mod:`gaussmix.core.jsonio`: floats as their shortest round-trip text, non-finite numbers
as ``null``), each appended with a single ``os.write`` of a complete line to a file opened
with ``O_APPEND``.  A process killed at any moment (even by SIGKILL) leaves at most an
incomplete last line, which the next run discards; so a killed sweep loses only the points
that were in flight.  The data reach the kernel with every row; ``fsync`` (protection
against a crash of the *machine*) runs at most every ``fsync_interval`` seconds and when the
sweep ends.  Only one sweep at a time may use a checkpoint (an advisory lock).
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

from gaussmix.core.jsonio import loads

__all__ = ["checkpoint_path"]


def checkpoint_path(out: str | os.PathLike) -> Path:
    """The checkpoint of the final table ``out``: ``<out>.checkpoint.jsonl`` next to it."""
    p = Path(out)
    return p.with_name(p.name + ".checkpoint.jsonl")


class Checkpoint:
    """Append-only JSON-lines file of finished points, one complete line per write."""

    def __init__(self, path: Path, *, fsync_interval: float) -> None:
        self.path = path
        self.fsync_interval = fsync_interval
        self.fd: int | None = None
        self._last_sync = time.monotonic()
        self._dirty = False

    def open(self) -> dict[str, bytes]:
        """Lock the file, drop an incomplete last line and return the finished points' lines
        (key -> line; the first line of a key wins)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self._lock(fd)
            records = self._load(fd)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return records

    def _lock(self, fd: int) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise OSError(
                f"checkpoint {str(self.path)!r} is in use by another running sweep"
            ) from None

    def _load(self, fd: int) -> dict[str, bytes]:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0) if size else b""
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a killed writer left half a line: drop it
            os.ftruncate(fd, end)
            data = data[:end]
        records: dict[str, bytes] = {}
        bad = 0
        for line in data.splitlines(keepends=True):
            if not line.strip():
                continue
            try:
                rec = loads(line)
                key = rec["key"]
                if not isinstance(rec["row"], dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                bad += 1
                continue
            records.setdefault(key, line)
        if bad:
            warnings.warn(
                f"checkpoint {str(self.path)!r}: ignored {bad} unreadable line(s)",
                UserWarning,
                stacklevel=4,
            )
        return records

    def append(self, line: bytes) -> None:
        assert self.fd is not None
        n = os.write(self.fd, line)
        if n < len(line):  # (a regular file takes the whole line at once)
            view = memoryview(line)[n:]
            while view:
                view = view[os.write(self.fd, view) :]
        self._dirty = True
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_interval:
            os.fsync(self.fd)
            self._last_sync = now
            self._dirty = False

    def close(self) -> None:
        if self.fd is None:
            return
        try:
            if self._dirty:
                os.fsync(self.fd)
        finally:
            os.close(self.fd)  # releases the lock
            self.fd = None
