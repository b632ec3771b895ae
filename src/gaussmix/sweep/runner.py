""":func:`sweep`: run every point of a grid on an executor, with checkpoint and resume."""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gaussmix.core.exceptions import ConvergenceWarning, SchedulerLostError
from gaussmix.core.progress import progress_bar
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.validation import check_param

from .checkpoint import Checkpoint, checkpoint_path
from .executors import BACKENDS, Runner, check_scheduler_address, open_executor
from .spec import PointSpec, SpecGrid
from .table import SweepResult, provenance, read_table
from .tasks import Task

__all__ = ["sweep", "as_spec_grid"]


def as_spec_grid(points: Any) -> SpecGrid:
    """``points`` as a :class:`SpecGrid`: a SpecGrid, a sequence of :class:`PointSpec`, or
    an object with a ``spec_grid()`` method (such as :class:`gaussmix.cli.grid.Grid`)."""
    if isinstance(points, SpecGrid):
        return points
    make = getattr(points, "spec_grid", None)
    if callable(make):
        grid = make()
        if not isinstance(grid, SpecGrid):
            raise TypeError(f"points.spec_grid() must return a SpecGrid, got {grid!r}")
        return grid
    if isinstance(points, PointSpec):
        points = [points]
    if isinstance(points, Sequence) and not isinstance(points, str | bytes):
        return SpecGrid(tuple(points))
    raise TypeError(
        "points must be a SpecGrid, a sequence of PointSpec or an object with a spec_grid() "
        f"method, got {type(points).__name__}"
    )


def _check_arguments(
    backend: str | None, n_jobs: Any, scheduler: Any, fsync_interval: Any
) -> tuple[str, float]:
    """The backend (its default) and fsync interval; ValueError naming a bad argument."""
    if backend is None:
        backend = "dask" if scheduler is not None else "joblib"
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}; got {backend!r}"
        )
    if scheduler is not None and backend != "dask":
        raise ValueError(f"scheduler is only used with backend='dask', got backend={backend!r}")
    if isinstance(scheduler, str):
        check_scheduler_address(scheduler)
    check_param("n_jobs", n_jobs)
    interval = float(fsync_interval)
    if not interval >= 0:
        raise ValueError(f"fsync_interval must be >= 0, got {interval}")
    return backend, interval


@renamed_keywords(jobs="n_jobs")
def sweep(
    points: SpecGrid | Sequence[PointSpec] | Any,
    *,
    out: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    backend: str | None = None,
    n_jobs: int = -1,
    scheduler: Any = None,
    progress: bool = True,
    fsync_interval: float = 1.0,
    connect_timeout: Any = None,
) -> SweepResult:
    """Run every point on an executor, with checkpoint and resume.

    Parameters
    ----------
    points : SpecGrid, sequence of PointSpec, or an object with ``spec_grid()``
        The points (validated before any work; see :class:`SpecGrid`).
    out : path, optional
        Final CSV (written atomically, in the points' order).  Its checkpoint defaults to
        :func:`checkpoint_path` ``(out)``.
    checkpoint : path, optional
        JSON-lines checkpoint; re-running the same sweep skips the points already there.
        Without ``out`` and ``checkpoint`` nothing is written.
    backend : {'joblib', 'dask', 'serial'}, optional
        Default: ``'dask'`` when ``scheduler`` is given, else ``'joblib'``.
    n_jobs : int
        Workers for joblib (joblib convention, -1 = all cores) and for a LocalCluster
        started by ``backend='dask'`` without scheduler.
    scheduler : str or distributed.Client, optional
        Address of a dask scheduler (``tcp://host:8786``) or a client.  An address is
        contacted before the checkpoint is opened.
    progress : bool
        Progress bar on stderr (:func:`gaussmix.core.progress.progress_bar`: only on a
        terminal).
    fsync_interval : float
        Seconds between ``fsync`` calls on the checkpoint (0: after every row).
    connect_timeout : str or float, optional
        How long to try to reach the scheduler (default
        :data:`~gaussmix.sweep.executors.CONNECT_TIMEOUT`).

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError, TypeError
        Invalid points or arguments (before any work).
    SchedulerError
        (an ``OSError``) The scheduler cannot be reached; nothing was written.
    SchedulerLostError
        The dask scheduler went away during the sweep; the points finished before are in
        the checkpoint (the same call resumes from them).
    OSError
        Checkpoint in use by another sweep, unwritable output.
    """
    t0 = time.perf_counter()
    grid = as_spec_grid(points)
    backend, interval = _check_arguments(backend, n_jobs, scheduler, fsync_interval)
    out_path = Path(out) if out is not None else None
    ck_path = Path(checkpoint) if checkpoint is not None else None
    if ck_path is None and out_path is not None:
        ck_path = checkpoint_path(out_path)
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    executor = functools.partial(
        open_executor,
        backend,
        n_jobs=int(n_jobs),
        scheduler=scheduler,
        connect_timeout=connect_timeout,
    )
    records, counts = _execute(
        grid, executor, ck_path, interval, progress=progress, remote=scheduler is not None
    )
    return _finish(grid, records, backend, created, counts, out_path, ck_path, t0)


def _execute(
    grid: SpecGrid,
    executor: Callable[[], contextlib.AbstractContextManager[Runner]],
    ck_path: Path | None,
    fsync_interval: float,
    *,
    progress: bool,
    remote: bool,
) -> tuple[dict[str, bytes], tuple[int, int]]:
    """Resume from the checkpoint and compute the other points: every point's line (by
    key) and the counts ``(computed, resumed)``.  A ``remote`` scheduler is reached before
    the checkpoint is opened (nothing is written if it cannot be); a local executor starts
    only if there is work."""
    keys = grid.keys()
    with contextlib.ExitStack() as stack:
        run = stack.enter_context(executor()) if remote else None
        records: dict[str, bytes] = {}  # key -> checkpoint line
        ck = None
        if ck_path is not None:
            ck = Checkpoint(ck_path, fsync_interval=fsync_interval)
            done = ck.open()
            stack.callback(ck.close)
            wanted = set(keys)
            records = {k: v for k, v in done.items() if k in wanted}
        resumed = len(records)
        todo = _todo(grid, keys, records)
        computed = 0
        with progress_bar(
            total=len(keys),
            initial=sum(k in records for k in keys),
            desc=f"sweep ({grid.mode})",
            unit="pt",
            enabled=progress,
            smoothing=0.05,
        ) as bar:
            if todo:
                run = run or stack.enter_context(executor())
                try:
                    computed = _compute(run, todo, ck, records, bar, keys)
                except SchedulerLostError as exc:
                    kept = sum(k in records for k in keys)
                    where = f"in the checkpoint {str(ck_path)!r}" if ck is not None else "lost"
                    raise SchedulerLostError(
                        f"{exc}; {kept} of {len(keys)} points finished, {where}",
                        kept=kept if ck is not None else 0,
                        total=len(keys),
                        checkpoint=ck_path,
                    ) from None
    return records, (computed, resumed)


def _todo(grid: SpecGrid, keys: Sequence[str], records: Mapping[str, bytes]) -> list[Task]:
    """The tasks of the points not in ``records``, each distinct key once."""
    todo, seen = [], set()
    for key, spec in zip(keys, grid.points):
        if key not in records and key not in seen:
            seen.add(key)
            todo.append(Task(key, spec))
    return todo


def _compute(
    run: Runner,
    todo: list[Task],
    ck: Checkpoint | None,
    records: dict[str, bytes],
    bar: Any,
    keys: Sequence[str],
) -> int:
    """Run ``todo``, appending each finished point to the checkpoint and ``records``."""
    computed = 0
    per_key: dict[str, int] = {}
    for k in keys:
        per_key[k] = per_key.get(k, 0) + 1
    stream: Iterator[tuple[str, bytes]] = run(todo)
    with contextlib.closing(stream):  # type: ignore[type-var]
        for key, line in stream:
            if ck is not None:
                ck.append(line)
            records[key] = line
            computed += 1
            bar.update(per_key.get(key, 1))
    return computed


def _finish(
    grid: SpecGrid,
    records: Mapping[str, bytes],
    backend: str,
    created: str,
    counts: tuple[int, int],
    out_path: Path | None,
    ck_path: Path | None,
    t0: float,
) -> SweepResult:
    """The result from the points' lines (fresh and resumed alike); the CSV; warnings."""
    keys = grid.keys()
    df, failed, found, quads = read_table(grid, [records[k] for k in keys])
    result = SweepResult(
        df=df,
        grid=grid,
        attrs=provenance(grid, quads, backend, created, failed),
        computed=counts[0],
        resumed=counts[1],
        failed=failed,
        out=out_path,
        checkpoint=ck_path,
        warnings=found,
    )
    if out_path is not None:
        result.to_csv(out_path)
    result.elapsed = time.perf_counter() - t0
    _reemit(found, failed, len(keys))
    return result


def _reemit(found: list[tuple[str, str, str]], failed: int, total: int) -> None:
    """Re-issue the points' warnings in this process (one per distinct message)."""
    from gaussmix.core import exceptions
    from gaussmix.simulate import simulation as simulate

    classes: dict[str, type[Warning]] = {}
    for mod in (exceptions, simulate):
        for name in dir(mod):
            obj = getattr(mod, name)
            if isinstance(obj, type) and issubclass(obj, Warning):
                classes[name] = obj
    seen = set()
    for cat, msg, where in found:
        if (cat, msg) in seen:
            continue
        seen.add((cat, msg))
        warnings.warn(f"{msg} (at {where})", classes.get(cat, UserWarning), stacklevel=4)
    if failed:
        warnings.warn(
            f"{failed} of {total} grid points have no valid result (converged=False; "
            "see the message column)",
            ConvergenceWarning,
            stacklevel=4,
        )
