"""Executors of a sweep's tasks: serial, joblib (local processes) and dask.distributed.

Each executor is opened by :func:`open_executor` (a context manager: a dask client connects
when it is entered, so an unreachable scheduler fails before anything is written) and
yields a function ``run(tasks) -> iterator of (key, checkpoint line)`` in completion order.
BLAS runs one thread per task (parallelism comes from the workers), so a point gives the
same bits on every executor and with any number of workers.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gaussmix.core.exceptions import SchedulerLostError
from gaussmix.core.renames import renamed_keywords

from .tasks import Task, run_point, run_points, run_stream

__all__ = [
    "BACKENDS",
    "CONNECT_TIMEOUT",
    "DASK_CHUNK",
    "SchedulerError",
    "check_scheduler_address",
    "open_executor",
]

BACKENDS = ("joblib", "dask", "serial")
#: seconds between a joblib worker's checks that the process which started it is alive
PARENT_POLL = 0.5
#: largest number of points in one dask task (see ``_run_dask``)
DASK_CHUNK = 16
#: how long to try to reach a dask scheduler
CONNECT_TIMEOUT = "3s"
#: ``[protocol://]host:port`` (tcp, tls, ws, wss, ucx) or ``inproc://...``
_ADDRESS = re.compile(
    r"^(?:(?:tcp|tls|ws|wss|ucx)://)?"
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?)"
    r":(?P<port>[0-9]{1,5})/?$"
    r"|^inproc://\S+$"
)

Runner = Callable[[Sequence[Task]], Iterator[tuple[str, bytes]]]


class SchedulerError(OSError):
    """A dask scheduler cannot be reached (within :data:`CONNECT_TIMEOUT`)."""


def check_scheduler_address(address: Any) -> str:
    """Validate the address of a dask scheduler (``tcp://host:8786``, ``host:8786``, ...).

    Raises
    ------
    ValueError
        If ``address`` is not such an address (nothing is contacted).
    """
    m = _ADDRESS.match(address) if isinstance(address, str) else None
    port = m.group("port") if m is not None else None
    if m is None or (port is not None and not 0 < int(port) < 65536):
        raise ValueError(
            "scheduler must be the address of a dask scheduler such as tcp://host:8786 "
            f"(protocol://host:port), got {address!r}"
        )
    return address


@renamed_keywords(jobs="n_jobs")
@contextlib.contextmanager
def open_executor(
    backend: str, *, n_jobs: int = -1, scheduler: Any = None, connect_timeout: Any = None
) -> Iterator[Runner]:
    """The runner of ``backend`` (``'serial'``, ``'joblib'`` or ``'dask'``).

    ``n_jobs``: joblib workers (joblib convention) and workers of the LocalCluster that
    ``'dask'`` starts without ``scheduler`` (an address or a ``distributed.Client``).
    Raises :class:`SchedulerError` when the scheduler cannot be reached.
    """
    if backend == "serial":
        yield _run_serial
    elif backend == "joblib":
        yield functools.partial(_run_joblib, n_jobs=n_jobs)
    elif backend == "dask":
        timeout = CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
        with _dask_client(scheduler, n_jobs, timeout) as client:
            yield functools.partial(_run_dask, client)
    else:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}")


def _run_serial(tasks: Sequence[Task]) -> Iterator[tuple[str, bytes]]:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield from run_stream(tasks)


def _run_joblib(tasks: Sequence[Task], n_jobs: int) -> Iterator[tuple[str, bytes]]:
    from joblib import Parallel, delayed, effective_n_jobs, parallel_config

    if effective_n_jobs(n_jobs) == 1 or len(tasks) == 1:
        yield from _run_serial(tasks)
        return
    # loky's executor options (joblib passes them through): each worker ignores Ctrl-C
    # (this process handles it and stops them) and exits when this process is gone
    workers = {"initializer": _worker_init, "initargs": (os.getpid(),)}
    with parallel_config(backend="loky", inner_max_num_threads=1, **workers):
        with _sigint_blocked():  # the workers start with it blocked (then ignored)
            gen = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(run_point)(t) for t in tasks
            )
        yield from gen


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread (and in the processes and threads it starts) for the
    duration: a Ctrl-C while the workers start is handled here when it ends, instead of
    interrupting a worker's imports with a traceback."""
    block = getattr(signal, "pthread_sigmask", None)
    if block is None:  # pragma: no cover - not POSIX
        yield
        return
    old = block(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        block(signal.SIG_SETMASK, old)


def _worker_init(parent: int) -> None:
    """Initializer of a joblib (loky) worker: SIGINT ignored (a terminal's Ctrl-C reaches
    the whole process group; the sweep's process stops its workers itself), and a daemon
    thread that ends the worker once ``parent`` is no longer its parent (SIGKILL of the
    sweep leaves no handler to stop it; loky's idle workers would wait minutes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        os._exit(1)

    threading.Thread(target=watch, name="gaussmix-parent-watch", daemon=True).start()


@contextlib.contextmanager
def _dask_client(scheduler: Any, n_jobs: int, timeout: Any) -> Iterator[Any]:
    """A connected ``distributed.Client``: ``scheduler`` itself when it is a client, else
    one connected to the address, or to a new LocalCluster of ``n_jobs`` workers."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover
        raise ImportError(
            "backend='dask' needs dask.distributed (pip install 'gaussmix[dask]')"
        ) from exc
    if isinstance(scheduler, Client):
        yield scheduler
        return
    cluster = None
    if scheduler is None:
        from joblib import effective_n_jobs

        cluster = LocalCluster(
            n_workers=effective_n_jobs(n_jobs),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        )
    try:
        try:
            target = cluster if cluster is not None else scheduler
            client = Client(target, set_as_default=False, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise SchedulerError(
                f"cannot connect to the dask scheduler {scheduler!r} (within {timeout}): {exc}"
            ) from None
        try:
            yield client
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


def _run_dask(c: Any, tasks: Sequence[Task]) -> Iterator[tuple[str, bytes]]:
    from distributed import as_completed

    futures = []
    try:
        todo = [t._replace(limit_threads=True) for t in tasks]
        # points travel in chunks (a few per worker and round) so that the scheduler's cost
        # per task stays small against cheap points; a chunk is in flight as a whole
        n_workers = max(1, len(c.scheduler_info().get("workers", {})))
        size = max(1, min(DASK_CHUNK, len(todo) // (4 * n_workers)))
        chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
        keys = [f"gaussmix-sweep-{ch[0].key}-{len(ch)}" for ch in chunks]
        futures = c.map(run_points, chunks, key=keys)
        try:
            for fut, recs in as_completed(futures, loop=c.loop, with_results=True):
                if fut.status != "finished" or isinstance(recs, BaseException):
                    raise _lost(c, recs)
                fut.release()
                yield from recs
        except Exception as exc:
            if isinstance(exc, _cancelled_error()) or c.status != "running":
                raise _lost(c, exc) from None
            raise  # a task's own error, the scheduler still there
    finally:
        pending = [f for f in futures if not f.done()]
        if pending and c.status == "running":
            with contextlib.suppress(Exception):
                c.cancel(pending)


def _cancelled_error() -> type[BaseException]:
    """dask's exception for a cancelled future (its name changed across versions)."""
    import distributed.client as dc

    return getattr(dc, "FutureCancelledError", None) or dc.CancelledError


def _lost(c: Any, cause: Any) -> SchedulerLostError:
    """The error of a sweep whose dask scheduler went away (its futures were cancelled)."""
    address = getattr(c.scheduler, "address", None) or "?"
    reason = type(cause).__name__ if isinstance(cause, BaseException) else "cancelled"
    return SchedulerLostError(f"lost the dask scheduler {address} ({reason})")
