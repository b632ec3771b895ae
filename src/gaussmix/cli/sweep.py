"""``gaussmix sweep``: a grid file of points run on an executor, with a checkpoint
(registered by :mod:`gaussmix.cli.commands`)."""

import contextlib
import logging
from pathlib import Path
from typing import Annotated, Any

import typer

from gaussmix.core.exceptions import (
    ConvergenceError,
)

from .common import JobsOption, QuietOption
from .exits import (
    Interrupted,
    PartialResultsError,
    check_output_path,
)

__all__ = ["sweep_command"]


def sweep_command(
    grid: Annotated[
        Path,
        typer.Option(
            "--grid",
            metavar="FILE.toml",
            help="Grid file: [fixed] options, [grid] option = [values] (Cartesian product), "
            "optional [simulate] d, seeds, seed (simulate instead of solving the theory).",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            metavar="FILE.csv",
            help="Output table (one row per grid point); its checkpoint is "
            "FILE.csv.checkpoint.jsonl.",
        ),
    ],
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            metavar="ADDRESS",
            help="Run on a dask.distributed scheduler, e.g. tcp://host:8786.",
        ),
    ] = None,
    n_jobs: JobsOption = -1,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            metavar="joblib|dask|serial",
            help="Executor [default: dask with --scheduler, else joblib].",
        ),
    ] = None,
    checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint", metavar="FILE", help="Checkpoint file [default: next to --out]."
        ),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Run a grid of points (theory or simulation), resumable: writes FILE.csv.

    Every point is validated before any work starts.  Finished points stream to the
    checkpoint; running the same command again (after a crash, a kill or Ctrl-C) skips
    them.  Delete the checkpoint to recompute from scratch.
    """
    _run_sweep(grid, out, scheduler, n_jobs, backend, checkpoint, quiet)


def _run_sweep(
    grid: Path,
    out: Path,
    scheduler: str | None,
    n_jobs: int,
    backend: str | None,
    checkpoint: Path | None,
    quiet: bool,
) -> None:
    """``gaussmix sweep``: options checked before any work, the grid translated into the
    library's points (:class:`gaussmix.cli.grid.Grid`), then :func:`gaussmix.sweep.sweep`."""
    from gaussmix.cli.grid import Grid
    from gaussmix.core.exceptions import SchedulerLostError
    from gaussmix.sweep import SchedulerError, checkpoint_path
    from gaussmix.sweep import sweep as run_sweep

    check_output_path("--out", out, kind="file")
    if scheduler is not None:
        _check_scheduler_option(scheduler)
        _quiet_distributed()
    ck = checkpoint if checkpoint is not None else checkpoint_path(out)
    points = Grid.from_toml(grid)
    if checkpoint is not None:
        check_output_path("--checkpoint", checkpoint, kind="file")
    try:
        res = run_sweep(
            points,
            out=out,
            checkpoint=ck,
            backend=backend,
            n_jobs=n_jobs,
            scheduler=scheduler,
            progress=not quiet,
        )
    except SchedulerError as exc:
        raise _SweepOptionError(f"--scheduler: {exc}") from None
    except SchedulerLostError as exc:
        raise SchedulerLostError(
            f"--scheduler: {exc}: run the same command to resume (with a running scheduler, "
            "or without --scheduler to run here)"
        ) from None
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted; the finished points are in {str(ck)!r}: run the same command to resume"
        ) from None
    failed = f"; {res.failed} without a valid result" if res.failed else ""
    typer.echo(
        f"wrote {out} ({len(res.df)} points: {res.computed} computed, {res.resumed} from "
        f"the checkpoint {ck}{failed})"
    )
    typer.echo(f"wrote {_sweep_provenance(out, grid, res, backend, n_jobs, scheduler)}")
    if res.failed == len(res.df):
        raise ConvergenceError(
            f"no grid point has a valid result (see the message column of {out})"
        )
    if res.failed:
        raise PartialResultsError(
            f"{res.failed} of {len(res.df)} grid points have no valid result (converged "
            f"False, NaN; see the message column of {out})"
        )


def _sweep_provenance(
    out: Path, grid: Path, res: Any, backend: str | None, n_jobs: int, scheduler: str | None
) -> Path:
    """``FILE.json`` beside a sweep's ``FILE.csv``: the run's record with the grid file (its
    path, SHA-256 and text; every row of the CSV also holds its point's options)."""
    import hashlib

    from gaussmix.core.provenance import write_provenance

    text = Path(grid).read_bytes()
    parameters = {
        "grid_file": str(grid),
        "grid_sha256": hashlib.sha256(text).hexdigest(),
        "grid": text.decode("utf-8"),
        "backend": backend,
        "n_jobs": n_jobs,
        "scheduler": scheduler,
        "points": len(res.df),
    }
    return write_provenance(out, parameters, columns=list(res.df.columns))


def _quiet_distributed() -> None:
    """Silence dask.distributed's loggers and tornado's, whose event loop it runs on (a
    lost connection is logged with tracebacks, by distributed or, for a client's future
    that fails in a callback, by ``tornado.application``; the command says it in its one
    line).  Its loggers' levels are set when it is imported."""
    with contextlib.suppress(ImportError):
        import distributed  # noqa: F401

    for name in ["distributed", "tornado", *logging.root.manager.loggerDict]:
        if name.split(".")[0] in ("distributed", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL)


class _SweepOptionError(ValueError):
    """A bad ``gaussmix sweep`` option, whose message names it (printed as it is)."""


def _check_scheduler_option(scheduler: str) -> None:
    """``--scheduler``: a dask address (``tcp://host:8786``), checked before any work."""
    from gaussmix.sweep import check_scheduler_address

    try:
        check_scheduler_address(scheduler)
    except ValueError:
        raise _SweepOptionError(
            "--scheduler must be the address of a dask scheduler such as tcp://host:8786 "
            f"(protocol://host:port), got {scheduler!r}"
        ) from None
