"""Helpers shared by the command modules (:mod:`~gaussmix.cli.commands`,
:mod:`~gaussmix.cli.phase`, :mod:`~gaussmix.cli.realdata`): option sources and messages,
one BLAS thread per process (ranges of points: :mod:`gaussmix.frontend.grids`).

This module sits below the command modules (it imports none of them), so that each of them
can use it without an import cycle; the library is imported on first use only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Annotated

import typer

from gaussmix.core.exceptions import ArgumentError, ArgumentTypeError

__all__ = ["FitOnOption", "flag_message", "given", "one_blas_thread"]

#: ``--fit-on`` of the commands that fit a mixture to data (``data``, ``realdata``)
FitOnOption = Annotated[
    str,
    typer.Option(
        "--fit-on",
        metavar="train|all",
        help="Fit the mixture on the training split (train: the test split is never seen) "
        "or on both splits (all: the paper's protocol).",
    ),
]


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


@contextlib.contextmanager
def one_blas_thread(theory: bool = False) -> Iterator[None]:
    """One BLAS thread per process (here and in joblib workers): parallelism comes from
    --n-jobs, and the bits of a seeded simulation do not depend on it.

    With ``theory``, for a command whose theory and simulations run one after the other in
    this process alone (``realdata``, ``data``): the theory's large dense LAPACK work keeps
    the threads the process had (at most two, from ``n = 3000``:
    :func:`gaussmix.theory.numerics.linalg.blas_threads`), so that a ten-class curve at MNIST's
    size
    costs what ``gm.learning_curve`` costs, with the same bits.
    """
    from joblib import parallel_config
    from threadpoolctl import threadpool_limits

    from gaussmix.theory.numerics.linalg import granted_blas_threads, pools_thread_limit

    granted = pools_thread_limit() if theory else 1
    with (
        threadpool_limits(1),
        parallel_config(backend="loky", inner_max_num_threads=1),
        granted_blas_threads(granted),
    ):
        yield
