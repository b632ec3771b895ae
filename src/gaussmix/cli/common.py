"""What the command modules share (:mod:`~gaussmix.cli.commands`,
:mod:`~gaussmix.cli.simulation`, :mod:`~gaussmix.cli.sweep`, :mod:`~gaussmix.cli.figure`):
the library's entry points imported on first use, :func:`without_options`, the ``--out``,
``--quiet`` and ``--n-jobs`` options, and the writing and reporting of a curve's files.

This module sits below the command modules (it imports none of them), so that each of them
can use it without an import cycle.
"""

import functools
import inspect
import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from gaussmix.core.exceptions import (
    ConvergenceError,
)
from gaussmix.frontend.options import (
    POINT_FLAGS,
    PointOptions,
    PointSetup,
)
from gaussmix.theory.model.mixture import MIXTURE_MODELS

from .exits import (
    PartialResultsError,
    make_out_dir,
)
from .helpers import flag_message
from .options import with_signature

__all__ = [
    "lazy",
    "without_options",
    "fmt",
    "describe_params",
    "check_finite_errors",
    "write_provenance",
    "write_curve",
    "report_curve",
    "check_grid",
    "long_flag",
    "OutOption",
    "QuietOption",
    "JobsOption",
]


def lazy(module: str, name: str) -> Any:
    """``module.name``, imported when first called: ``gaussmix --help`` and option errors
    do not pay for the solver's start-up (scipy, numba, pandas)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}``, imported on first use."
    return call


# ============================================================================ output
def fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, list):
        return "[" + ", ".join(fmt(v) for v in x) + "]"
    return str(x)


def describe_params(params: dict) -> str:
    if "structure" in params:  # a mixture file
        cov = params["structure"]
    else:  # the model and its own parameters
        own = MIXTURE_MODELS.get(params["model"]).parameters
        cov = " ".join([params["model"], *(f"{name}={fmt(params[name])}" for name in own)])
    penalty = params["penalty"]
    if params.get("l1_ratio") is not None:
        penalty += f" (l1_ratio={fmt(params['l1_ratio'])})"
    return (
        f"K={params['n_clusters']} ({params['labels']} labels, {params['means']} means, "
        f"rho={fmt(params['rho'])}), {cov}; {params['loss']} loss, {penalty} "
        f"penalty, lam={fmt(params['lam'])}, alpha={fmt(params['alpha'])}"
    )


def check_finite_errors(payload: dict) -> None:
    for key in ("test_error", "train_error", "train_loss", "test_loss"):
        v = payload[key]
        if not (isinstance(v, float) and math.isfinite(v)):
            raise ConvergenceError(f"the solver converged but {key} is not finite ({v!r})")


def without_options(*names: str) -> Any:
    """Drop the point options ``names`` from a command built by :func:`point_options`.

    Use it *between* ``@app.command()`` and ``@point_options``.  The command's signature
    (hence ``--help`` and the parser) no longer has them, so giving one is the parser's
    one-line error ``No such option`` (exit 2) instead of a value silently ignored; the
    wrapped function receives them at their ``point_options`` default (a command that
    replaces ``--alpha`` by ``--alphas`` sets the alpha it needs itself).
    """
    unknown = sorted(set(names) - set(PointOptions.option_names()))
    if unknown:
        raise TypeError(f"without_options: {unknown} are not point options")

    def decorate(func: Any) -> Any:
        sig = inspect.signature(func)
        fixed = {n: sig.parameters[n].default for n in names}
        params = [p for p in sig.parameters.values() if p.name not in fixed]

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> Any:
            return func(**kwargs, **fixed)

        return with_signature(wrapper, sig, params)

    return decorate


def write_provenance(
    table: Path, df: Any, setup: PointSetup, mixture_file: str | None, **parameters: Any
) -> Path:
    """``<table>.json`` beside a table of a point command: the version, the command line,
    the date, the mixture (with the SHA-256 of ``--mixture FILE``) and every parameter
    (:func:`gaussmix.core.provenance.write_provenance`)."""
    from gaussmix.core.provenance import write_provenance

    return write_provenance(
        table,
        {**setup.params, "solver": setup.solver, **parameters},
        mixture=setup.mixture,
        mixture_file=mixture_file,
        columns=list(df.columns),
    )


def write_curve(
    df: Any,
    out: Path,
    stem: str,
    *,
    x: str,
    title: str,
    logx: bool,
    setup: PointSetup,
    mixture_file: str | None,
    **parameters: Any,
) -> tuple[Path, Path, Path]:
    """``DIR/<stem>.csv``, its provenance ``DIR/<stem>.json`` and ``DIR/<stem>.png``."""
    from gaussmix.figures.plotting import plot_learning_curve, save_figure

    out = make_out_dir(out)
    csv_path = out / f"{stem}.csv"
    png_path = out / f"{stem}.png"
    df.to_csv(csv_path, index=False)
    json_path = write_provenance(csv_path, df, setup, mixture_file, **parameters)
    ax = plot_learning_curve(df, x=x, logx=logx, title=title)
    save_figure(ax.figure, png_path)
    return csv_path, json_path, png_path


def report_curve(df: Any, paths: tuple[Path, ...], *, partial_fails: bool = True) -> None:
    """Print the files written; with ``partial_fails``, points without a fixed point (or
    a simulation without a valid result) end the command with exit 3 (partial results:
    they are in the table as NaN with ``converged`` False)."""
    for p in paths:
        typer.echo(f"wrote {p}")
    flags = [c for c in ("converged", "sim_converged") if c in df.columns]
    if not flags:  # e.g. samples of a mixture: nothing solved
        return
    bad = np.zeros(len(df), dtype=bool)
    for c in flags:  # False marks a failed point; NaN a point without that part
        bad |= np.array([isinstance(v, bool | np.bool_) and not v for v in df[c].tolist()])
    n_bad = int(bad.sum())
    if not n_bad:
        return
    message = f"{n_bad} of {len(df)} points did not converge (NaN, converged False in {paths[0]})"
    if not partial_fails:
        typer.echo(message)
        return
    raise PartialResultsError(message)


OutOption = Annotated[
    Path,
    typer.Option("--out", "-o", metavar="DIR", help="Output directory (created if missing)."),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


def check_grid(setup: PointSetup, option: str, grid: np.ndarray, key: str) -> None:
    """Validate the problem at every value of the swept parameter."""
    for value in grid:
        try:
            setup.check(**{key: float(value)})
        except ValueError as exc:
            raise ValueError(
                f"{option} value {value:g}: {flag_message(exc, POINT_FLAGS)}"
            ) from None


def long_flag(param: Any) -> str:
    """The long flag of a click parameter (``--n-jobs`` for ``--n-jobs/-j``)."""
    return max(param.opts, key=len)


JobsOption = Annotated[
    int,
    typer.Option(
        "--n-jobs",
        "-j",
        metavar="N",
        help="Worker processes (joblib convention: -1 = all cores). Results do not depend on it.",
    ),
]
