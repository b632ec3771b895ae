"""Helpers shared by the command modules (:mod:`~gaussmix.cli.commands`,
:mod:`~gaussmix.cli.phase`, :mod:`~gaussmix.cli.realdata`): option sources, ranges of
points, one BLAS thread per process.

This module sits below the command modules (it imports none of them), so that each of them
can use it without an import cycle; the library is imported on first use only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import typer

from gaussmix.core.exceptions import ArgumentError, ArgumentTypeError
from gaussmix.core.validation import check_array, check_param_values

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["MAX_POINTS", "given", "parse_grid", "one_blas_thread"]

#: largest number of points of a curve
MAX_POINTS = 10_000


def flag_message(exc: BaseException, flags: Mapping[str, str]) -> str:
    """The message of ``exc``: a bad argument (:class:`~gaussmix.core.exceptions.ArgumentError`)
    whose keyword has a flag in ``flags`` (keyword -> flag) is said with the flag
    (``--n-clusters must be an integer >= 2, got 1``); anything else as it was raised."""
    if isinstance(exc, ArgumentError | ArgumentTypeError) and exc.argument in flags:
        return str(exc.named(flags[exc.argument]))
    return str(exc)


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the parameter ``name`` was given on the command line (not defaulted)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def parse_grid(name: str, spec: str, *, fact: str | None) -> np.ndarray:
    """Parse ``[log:]start:stop:num`` (:func:`gaussmix.experiments.parse_range`), at most
    :data:`MAX_POINTS` points; every value follows the library's rule of ``fact``
    (``'alpha'``, ``'lam'``: :data:`gaussmix.core.validation.PARAMETERS`), or is > 0 for
    ``fact=None`` (a figure's grid of another quantity).

    Every refusal is an :class:`~gaussmix.core.exceptions.ArgumentError` naming ``name``:
    a command's keyword (``'alphas'``, ``'lams'``: the command line says its flag, the
    explorer shows it under its field) or a flag."""
    from gaussmix.experiments.curves import parse_range

    num = spec.rsplit(":", 1)[-1].strip()
    if num.isdigit() and int(num) > MAX_POINTS:
        raise ArgumentError(name, f": at most {MAX_POINTS} points, got {num}")
    grid = parse_range(spec, name=name, fact=fact)
    if fact is None:
        return check_array(name, grid, shape=(None,), positive=True)
    return check_param_values(fact, grid, name=name)


@contextlib.contextmanager
def one_blas_thread(theory: bool = False) -> Iterator[None]:
    """One BLAS thread per process (here and in joblib workers): parallelism comes from
    --n-jobs, and the bits of a seeded simulation do not depend on it.

    With ``theory``, for a command whose theory and simulations run one after the other in
    this process alone (``realdata``, ``data``): the theory's large dense LAPACK work keeps
    the threads the process had (at most two, from ``n = 3000``:
    :func:`gaussmix.theory.linalg.blas_threads`), so that a ten-class curve at MNIST's size
    costs what ``gm.learning_curve`` costs, with the same bits.
    """
    from joblib import parallel_config
    from threadpoolctl import threadpool_limits

    from gaussmix.theory.linalg import granted_blas_threads, pools_thread_limit

    granted = pools_thread_limit() if theory else 1
    with (
        threadpool_limits(1),
        parallel_config(backend="loky", inner_max_num_threads=1),
        granted_blas_threads(granted),
    ):
        yield
