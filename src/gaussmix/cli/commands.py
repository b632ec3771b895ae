"""Command-line interface: ``gaussmix point | curve | lambda-curve | optimal-lambda | simulate |
compare | sweep | figure | bayes-optimal | transition`` (the last two: :mod:`gaussmix.cli.phase`).

A thin layer over the library: options are parsed here, turned into a
:class:`~gaussmix.theory.mixture.Mixture` and solver keyword arguments, and handed to
:func:`gaussmix.solve`, :func:`gaussmix.learning_curve` or :func:`gaussmix.lambda_sweep`.
Values are validated by the library, which raises an
:class:`~gaussmix.core.exceptions.ArgumentError` naming the offending keyword; every flag is
that keyword with dashes (``--n-clusters`` for ``n_clusters``), and :func:`main` says the
error with the flag of the command that took it (read from the command's options, never by
rewriting the text).  This module only parses comma lists and ranges.

Interface contract (checked outside the repository -- keep it stable)
--------------------------------------------------------------------
* ``gaussmix point [options] --json`` prints one JSON object on stdout with (at least)
  ``test_error, train_error, train_loss, test_loss, converged, n_iter, Q, M, V, b,
  integration_error, nonzero_fraction`` (:meth:`FixedPointResult.to_dict`;
  ``nonzero_fraction`` is 1.0 for ridge) and ``params`` (the resolved inputs).
* Point options include ``--model sparse --sparsity RHO --delta1 D1 --delta2 D2`` (the
  correlated sparse binary mixture, K = 2) and ``--penalty l2|l1|elastic-net
  [--l1-ratio R]``; every command that takes point options (and every sweep grid) takes
  them.
* ``gaussmix optimal-lambda [point options] [--lam-min L --lam-max L] --json`` prints one
  JSON object: ``lam_star`` (0 when the optimum is lambda -> 0+, then ``at_boundary`` is
  true; null when it is lambda -> infinity, ``at_upper_bound``), ``at_boundary,
  at_upper_bound, lam_min, lam_max, derivative, n_evaluations, search_message`` and the
  keys of ``point --json`` at the fixed point returned.
* ``gaussmix curve`` writes ``DIR/curve.csv`` and ``DIR/curve.png``;
  ``gaussmix lambda-curve`` writes ``DIR/lambda_curve.csv`` and ``DIR/lambda_curve.png``.
* ``gaussmix simulate [point options] --d D --seeds S [--seed N] --json`` prints one JSON
  object with the keys of ``point --json`` (means over seeds) plus ``<key>_se`` (standard
  error over seeds) for ``test_error``, ``train_error``, ``train_loss``, ``test_loss``
  (and ``Q, M, b``).
* ``gaussmix compare [point options] --alphas a:b:n --d D --seeds S --out DIR`` writes
  ``DIR/compare.csv`` and ``DIR/compare.png``.
* ``gaussmix sweep --grid FILE.toml --out FILE.csv [--scheduler ADDRESS] [--n-jobs N]``:
  the TOML file has a ``[fixed]`` table (any ``point`` option, names without dashes), a
  ``[grid]`` table (option -> list of values; their Cartesian product is run) and an
  optional ``[simulate]`` table (``d``, ``seeds``, ``seed``) that switches from theory to
  simulation.  The CSV has one row per grid point: the grid options, then the JSON keys of
  ``point`` (or ``simulate``); see :mod:`gaussmix.sweep`.
* ``gaussmix figure NAME --out DIR [--fast]`` (NAME: a figure of ``gaussmix figure
  --list``) writes ``DIR/<name>.csv``, ``DIR/<name>.png`` and ``DIR/<name>.json``
  (:mod:`gaussmix.figures`); the options a figure takes are declared by its
  :class:`~gaussmix.figures.FigureSpec`.  ``gaussmix figure all --out DIR [--fast]
  [--n-jobs N]`` writes every figure and ``DIR/atlas.json``; it exits 1 (after making the
  others) when a figure fails, naming it.
* Every failure prints exactly one line ``gaussmix: error: <message>`` on stderr (after
  the points' warnings for partial results) and exits with a status of the one table
  :data:`gaussmix.cli.exits.EXIT_CODES`: 2 bad input or unusable output path (nothing
  written), 3 no fixed point or partial results (written, the failed points marked), 4 a
  sweep's dask scheduler lost (finished points kept), 130 interrupted, 1 an internal
  error; never a traceback.  Set ``GAUSSMIX_DEBUG=1`` to get the traceback of an
  internal error.

Adding a command with the same point options
-------------------------------------------
Decorate the function with :func:`point_options` *below* ``@app.command()`` and give it a
keyword parameter ``opts: PointOptions``; the decorator adds every option of
:class:`PointOptions` (``--n-clusters``, ``--loss``, ``--lam``, ...) to the command and
collects them into ``opts``.  Then :func:`build_point` turns them into a validated
:class:`PointSetup` (mixture, loss, lam, alpha, solver keyword arguments, params)::

    @app.command()
    @point_options
    def simulate(
        opts: PointOptions,
        seeds: Annotated[int, typer.Option("--seeds", help="...")] = 10,
    ) -> None:
        setup = build_point(opts)
        ...  # e.g. gaussmix.simulate.<...>(setup.mixture, setup.loss, lam=setup.lam, ...)

A command that replaces or does not use some point options must not offer them (an option
silently ignored is a bug): put :func:`without_options` between ``@app.command()`` and
``@point_options``, e.g. ``@without_options("alpha")`` for a command taking ``--alphas``;
the parser then refuses ``--alpha`` in one line and ``--help`` does not list it.
"""

import contextlib
import functools
import inspect
import json
import logging
import math
import os
import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from gaussmix.core.exceptions import (
    ArgumentError,
    ArgumentTypeError,
    ConvergenceError,
    GaussmixError,
)
from gaussmix.core.jsonio import finite_or_none
from gaussmix.core.provenance import set_command_line
from gaussmix.core.validation import check_param
from gaussmix.core.version import __version__
from gaussmix.frontend.grids import parse_grid
from gaussmix.frontend.options import (
    POINT_FLAGS,
    SOLVER_OPTIONS,
    PointOptions,
    PointSetup,
    ResolvedOptions,
    build_point,
    integer_parser,
    mixture_from_options,
    parse_floats,
    read_mixture_file,
    resolve_options,
)
from gaussmix.theory.mixture import MIXTURE_MODELS
from gaussmix.theory.outputs import simulated_keys

from .exits import (
    EXIT_BAD_INPUT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    Interrupted,
    PartialResultsError,
    check_output_path,
    classify,
    is_a,
    make_out_dir,
)
from .helpers import flag_message, given, one_blas_thread
from .options import point_options, solver_parameters, with_signature
from .renames import renamed_flag_message

__all__ = [
    "app",
    "main",
    "PointOptions",
    "ResolvedOptions",
    "PointSetup",
    "point_options",
    "resolve_options",
    "mixture_from_options",
    "build_point",
    "parse_floats",
    "without_options",
]


def _lazy(module: str, name: str) -> Any:
    """``module.name``, imported when first called: ``gaussmix --help`` and option errors
    do not pay for the solver's start-up (scipy, numba, pandas)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}``, imported on first use."
    return call


solve = _lazy("gaussmix.theory.api", "solve")
lambda_sweep = _lazy("gaussmix.experiments", "lambda_sweep")
learning_curve = _lazy("gaussmix.experiments", "learning_curve")


# ============================================================================ messages
def _one_line(message: str) -> str:
    return " ".join(str(message).split())


# ============================================================================ output
def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, list):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    return str(x)


def _describe(params: dict) -> str:
    if "structure" in params:  # a mixture file
        cov = params["structure"]
    else:  # the model and its own parameters
        own = MIXTURE_MODELS.get(params["model"]).parameters
        cov = " ".join([params["model"], *(f"{name}={_fmt(params[name])}" for name in own)])
    penalty = params["penalty"]
    if params.get("l1_ratio") is not None:
        penalty += f" (l1_ratio={_fmt(params['l1_ratio'])})"
    return (
        f"K={params['n_clusters']} ({params['labels']} labels, {params['means']} means, "
        f"rho={_fmt(params['rho'])}), {cov}; {params['loss']} loss, {penalty} "
        f"penalty, lam={_fmt(params['lam'])}, alpha={_fmt(params['alpha'])}"
    )


def _check_finite_errors(payload: dict) -> None:
    for key in ("test_error", "train_error", "train_loss", "test_loss"):
        v = payload[key]
        if not (isinstance(v, float) and math.isfinite(v)):
            raise ConvergenceError(f"the solver converged but {key} is not finite ({v!r})")


# ============================================================================ app
app = typer.Typer(
    name="gaussmix",
    help="Exact high-dimensional learning curves of linear classifiers on Gaussian mixtures.",
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _argument_type(self: Any, ctx: Any) -> str | None:
    """The type shown beside an argument in ``--help``: none when the argument has a
    metavar of its own (``FILE``, ``NAME``), which says what it takes; typer's
    ``<list[Path]>`` otherwise."""
    return None if self.metavar is not None else self.display_type(ctx)


typer.core.TyperArgument.display_type_rich = _argument_type  # type: ignore[method-assign]


def _format_options(self: Any, ctx: Any, formatter: Any) -> None:
    """``--help``'s arguments, then its options in sections: the command's own under
    "Options", then those of each help panel (``rich_help_panel``, e.g. the "Solver
    options") under the panel's name, in the order of the command's parameters (the plain
    help that ``rich_markup_mode=None`` prints has one "Options" section otherwise)."""
    args, sections = [], {"Options": []}
    for param in self.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        if param.param_type_name == "argument":
            args.append(record)
        else:
            panel = getattr(param, "rich_help_panel", None) or "Options"
            sections.setdefault(panel, []).append(record)
    if args:
        with formatter.section("Arguments"):
            formatter.write_dl(args)
    for title, records in sections.items():
        if records:
            with formatter.section(title):
                formatter.write_dl(records)


typer.core.TyperCommand.format_options = _format_options  # type: ignore[method-assign]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"gaussmix {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """Exact high-dimensional learning curves of linear classifiers on Gaussian mixtures."""


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


@app.command()
@point_options
def point(
    opts: PointOptions,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (machine-readable).")
    ] = False,
) -> None:
    """Solve the fixed point at one (lam, alpha) and print the errors."""
    setup = build_point(opts)
    res = solve(
        setup.mixture,
        setup.loss,
        lam=setup.lam,
        alpha=setup.alpha,
        **setup.penalty_kw,
        **setup.solve_kw,
    )
    payload = res.to_dict()
    _check_finite_errors(payload)
    payload["params"] = {
        **setup.params,
        "quadrature": res.params.get("quadrature"),
        "version": __version__,
    }
    if json_out:
        typer.echo(json.dumps(finite_or_none(payload), allow_nan=False))
        return
    rows = [
        ("test_error", payload["test_error"]),
        ("train_error", payload["train_error"]),
        ("train_loss", payload["train_loss"]),
        ("test_loss", payload["test_loss"]),
        ("free_energy", payload["free_energy"]),
        (
            "converged",
            f"{payload['converged']} ({payload['n_iter']} iterations, "
            f"residual {payload['residual']:.2g})",
        ),
        ("integration_error", f"{payload['integration_error']:.2g}"),
        ("b", _fmt(payload["b"])),
    ]
    if setup.problem.penalty_spec.sparse:
        rows.insert(4, ("nonzero_fraction", payload["nonzero_fraction"]))
    typer.echo(_describe(setup.params))
    for name, value in rows:
        typer.echo(f"  {name:<18} {_fmt(value)}")


def _write_provenance(
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


def _write_curve(
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
    json_path = _write_provenance(csv_path, df, setup, mixture_file, **parameters)
    ax = plot_learning_curve(df, x=x, logx=logx, title=title)
    save_figure(ax.figure, png_path)
    return csv_path, json_path, png_path


def _report_curve(df: Any, paths: tuple[Path, ...], *, partial_fails: bool = True) -> None:
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


#: default search interval of ``gaussmix optimal-lambda`` (the library's)
OPTIMAL_LAM_MIN = 1e-5
OPTIMAL_LAM_MAX = 1e2


def _check_grid(setup: PointSetup, option: str, grid: np.ndarray, key: str) -> None:
    """Validate the problem at every value of the swept parameter."""
    for value in grid:
        try:
            setup.check(**{key: float(value)})
        except ValueError as exc:
            raise ValueError(
                f"{option} value {value:g}: {flag_message(exc, POINT_FLAGS)}"
            ) from None


@app.command()
@without_options("alpha")
@point_options
def curve(
    opts: PointOptions,
    alphas: Annotated[
        str,
        typer.Option(
            "--alphas",
            metavar="[log:]START:STOP:NUM",
            help="Sample complexities alpha = n/d (linear, or log-spaced with 'log:').",
        ),
    ] = "0.2:4:20",
    out: OutOption = Path("gaussmix-out"),
    quiet: QuietOption = False,
) -> None:
    """Learning curve over alpha at fixed lam: writes DIR/curve.csv and DIR/curve.png.

    Takes the options of ``point`` except --alpha: ``--alphas`` replaces it.
    """
    grid = parse_grid("alphas", alphas, fact="alpha")
    setup = build_point(opts, alpha=float(grid.max()))
    _check_grid(setup, "--alphas", grid, "alpha")
    check_output_path("--out", out, kind="dir")
    df = learning_curve(
        setup.mixture,
        setup.loss,
        grid,
        lam=setup.lam,
        **setup.penalty_kw,
        progress=not quiet,
        **setup.solve_kw,
    )
    if not df["converged"].any():
        raise ConvergenceError("no fixed point at any alpha of --alphas")
    p = setup.params
    title = f"{p['loss']}, K={p['n_clusters']}, λ={p['lam']:g}"
    paths = _write_curve(
        df,
        out,
        "curve",
        x="alpha",
        title=title,
        logx=alphas.startswith("log:"),
        setup=setup,
        mixture_file=opts.mixture,
        alpha=None,
        alphas=grid,
    )
    _report_curve(df, paths)


@app.command("lambda-curve")
@without_options("lam")
@point_options
def lambda_curve(
    opts: PointOptions,
    lams: Annotated[
        str,
        typer.Option(
            "--lams",
            metavar="[log:]START:STOP:NUM",
            help="Penalty strengths lambda (linear, or log-spaced with 'log:').",
        ),
    ] = "log:1e-3:10:20",
    out: OutOption = Path("gaussmix-out"),
    quiet: QuietOption = False,
) -> None:
    """Errors over lambda at fixed alpha: writes DIR/lambda_curve.csv and .png.

    Takes the options of ``point`` except --lam: ``--lams`` replaces it.
    """
    grid = parse_grid("lams", lams, fact="lam")
    setup = build_point(opts, lam=float(grid.max()))
    _check_grid(setup, "--lams", grid, "lam")
    check_output_path("--out", out, kind="dir")
    df = lambda_sweep(
        setup.mixture,
        setup.loss,
        grid,
        alpha=setup.alpha,
        **setup.penalty_kw,
        progress=not quiet,
        **setup.solve_kw,
    )
    if not df["converged"].any():
        raise ConvergenceError("no fixed point at any lambda of --lams")
    p = setup.params
    title = f"{p['loss']}, K={p['n_clusters']}, α={p['alpha']:g}"
    logx = lams.startswith("log:") or bool(np.all(grid > 0))
    paths = _write_curve(
        df,
        out,
        "lambda_curve",
        x="lam",
        title=title,
        logx=logx,
        setup=setup,
        mixture_file=opts.mixture,
        lam=None,
        lams=grid,
    )
    _report_curve(df, paths)


LamMinOption = Annotated[
    float,
    typer.Option(
        "--lam-min",
        metavar="LAMBDA",
        help="Lower end of the coarse search grid (> 0); the search goes two decades "
        "below it while the test error still decreases there.",
    ),
]
LamMaxOption = Annotated[
    float,
    typer.Option(
        "--lam-max",
        metavar="LAMBDA",
        help="Upper end of the coarse search grid (> --lam-min); extended likewise (up to "
        "1e8 while the test error still decreases by more than its accuracy).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON object (machine-readable).")
]


@app.command("optimal-lambda")
@without_options("lam")
@point_options
def optimal_lambda_command(
    opts: PointOptions,
    lam_min: LamMinOption = OPTIMAL_LAM_MIN,
    lam_max: LamMaxOption = OPTIMAL_LAM_MAX,
    json_out: JsonOption = False,
) -> None:
    """The penalty minimising the test error at one alpha, lambda* = argmin eps_g.

    Takes the options of ``point`` except --lam.  A log grid on [--lam-min, --lam-max],
    extended while the best point is at an end, then a bounded minimisation in
    log lambda.  When the test error decreases all the way to the smallest penalty
    solved, the optimum is the boundary lambda -> 0+ (basis pursuit for the lasso):
    lam_star is 0 and at_boundary true; the errors are those of the smallest penalty
    solved (lam_min).  Likewise at_upper_bound (lam_star infinite, null in JSON) when it
    decreases all the way to the largest penalty solved (lam_max).
    With --json: lam_star, at_boundary, at_upper_bound, lam_min, lam_max (smallest and
    largest penalty solved), derivative (d test_error / d lambda there),
    n_evaluations, search_message, then the keys of ``point --json`` at the returned
    fixed point (params.lam is its penalty).
    """
    from gaussmix.core.validation import check_real
    from gaussmix.experiments.lambda_star import optimal_lambda
    from gaussmix.theory.problem import LAM_MAX

    lo = check_real("--lam-min", lam_min, low=0.0, low_open=True)
    hi = check_real("--lam-max", lam_max, low=lo, low_open=True, high=LAM_MAX)
    setup = build_point(opts, lam=hi)
    res = optimal_lambda(
        setup.mixture,
        setup.loss,
        alpha=setup.alpha,
        **setup.penalty_kw,
        lam_bounds=(lo, hi),
        **setup.solve_kw,
    )
    payload = _optimal_lambda_payload(setup, res)
    if json_out:
        typer.echo(json.dumps(finite_or_none(payload), allow_nan=False))
    else:
        _print_optimal_lambda(setup, res, payload)


def _optimal_lambda_payload(setup: PointSetup, res: Any) -> dict:
    """The ``optimal-lambda --json`` object of an :class:`OptimalLambdaResult`."""
    fp = res.result
    if fp is None or not fp.success:
        raise ConvergenceError(
            f"no fixed point at the optimal penalty ({res.message}); try --lam-min/--lam-max"
        )
    point = fp.to_dict()
    _check_finite_errors(point)
    point["params"] = {
        **setup.params,
        "lam": float(fp.params["lam"]),
        "quadrature": fp.params.get("quadrature"),
        "version": __version__,
    }
    return {
        "lam_star": float(res.lam_star),
        "at_boundary": bool(res.at_boundary),
        "at_upper_bound": bool(res.at_upper_bound),
        "lam_min": float(res.lam_min),
        "lam_max": float(res.lam_max),
        "derivative": float(res.derivative),
        "n_evaluations": int(res.n_evaluations),
        "search_message": res.message,
        **point,
    }


def _print_optimal_lambda(setup: PointSetup, res: Any, point: dict) -> None:
    """The human-readable report of ``optimal-lambda``."""
    if res.at_boundary:
        star = f"0+ (lambda -> 0+; errors at lambda = {res.lam_min:.3g}, the smallest solved)"
    elif res.at_upper_bound:
        star = f"inf (lambda -> infinity; errors at lambda = {res.lam_max:.3g})"
    else:
        star = f"{res.lam_star:.6g}"
    typer.echo(_describe({**setup.params, "lam": "optimal"}))
    rows = [
        ("lam_star", star),
        ("test_error", point["test_error"]),
        ("train_error", point["train_error"]),
        ("train_loss", point["train_loss"]),
        ("test_loss", point["test_loss"]),
    ]
    if setup.problem.penalty_spec.sparse:
        rows.append(("nonzero_fraction", point["nonzero_fraction"]))
    rows += [
        ("d test_error/d lam", f"{res.derivative:.3g}"),
        ("evaluations", f"{res.n_evaluations} fixed points ({res.message})"),
    ]
    for name, value in rows:
        typer.echo(f"  {name:<18} {_fmt(value)}")


# ============================================================================ simulations
JobsOption = Annotated[
    int,
    typer.Option(
        "--n-jobs",
        "-j",
        metavar="N",
        help="Worker processes (joblib convention: -1 = all cores). Results do not depend on it.",
    ),
]
DOption = Annotated[
    int, typer.Option("--d", metavar="D", help="Input dimension of the simulated instances.")
]
SeedOption = Annotated[
    int,
    typer.Option(
        "--seed",
        metavar="N",
        help="Root seed (numpy SeedSequence(N).spawn(seeds)): reproducible bit for bit.",
    ),
]


def _seeds_option(help_text: str) -> Any:
    return typer.Option("--seeds", metavar="S", help=help_text)


@app.command()
@without_options(*SOLVER_OPTIONS)
@point_options
def simulate(
    opts: PointOptions,
    d: DOption = 1000,
    seeds: Annotated[
        int, _seeds_option("Number of independent instances; standard errors over them.")
    ] = 5,
    seed: SeedOption = 0,
    n_jobs: JobsOption = -1,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (machine-readable).")
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Finite-size ERM on samples of the mixture: errors averaged over seeds.

    Takes the options of ``point`` except the theory solver's (its "Solver options"): the
    ERM is solved exactly, to scikit-learn tolerances of 1e-10.  Each
    seed realises the mixture at dimension --d, draws n = alpha d training points and
    measures the test error exactly.  With --json, prints the keys
    of ``point --json`` (means over seeds) plus <key>_se (standard errors).
    """
    from gaussmix.sweep import check_simulation, simulation_payload

    setup = build_point(opts)
    check_simulation(setup, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs)
    with one_blas_thread():
        payload = simulation_payload(
            setup, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs, progress=not quiet
        )
    _check_finite_errors(payload)
    if json_out:
        typer.echo(json.dumps(finite_or_none(payload), allow_nan=False))
        return
    p = payload["params"]
    typer.echo(f"{_describe(setup.params)}; d={d}, n={p['n']}, {seeds} seeds (seed {seed})")
    sparse = setup.problem.penalty_spec.sparse
    keys = [k for k in simulated_keys(sparse) if f"{k}_se" in payload]
    for key in keys:
        se = payload[f"{key}_se"]
        err = f" ± {se:.2g}" if math.isfinite(se) else ""
        typer.echo(f"  {key:<18} {payload[key]:.6g}{err}")
    typer.echo(
        f"  {'converged':<18} {payload['converged']} (at most {payload['n_iter']} ERM "
        f"iterations; {payload['message']})"
    )
    typer.echo(f"  {'b':<18} {_fmt(payload['b'])}")


#: default penalty of ``gaussmix compare`` (training error 0 below the separability
#: threshold, then rising: a more telling picture than lam = 1)
COMPARE_LAM = 0.1
COMPARE_ALPHAS = "0.25:3:12"
COMPARE_D = 1000
COMPARE_SEEDS = 10


AlphasOption = Annotated[
    str,
    typer.Option(
        "--alphas",
        metavar="[log:]START:STOP:NUM",
        help="Sample complexities alpha = n/d (linear, or log-spaced with 'log:').",
    ),
]


@app.command()
@without_options("alpha")
@point_options(lam=COMPARE_LAM)
def compare(
    opts: PointOptions,
    alphas: AlphasOption = COMPARE_ALPHAS,
    d: DOption = COMPARE_D,
    seeds: Annotated[
        int, _seeds_option("Simulated instances per alpha (error bars: standard errors).")
    ] = COMPARE_SEEDS,
    seed: SeedOption = 0,
    n_jobs: JobsOption = -1,
    out: OutOption = Path("gaussmix-out"),
    quiet: QuietOption = False,
) -> None:
    """Theory learning curve against simulations: writes DIR/compare.csv and .png.

    Takes the options of ``point`` except --alpha (default --lam 0.1 here); ``--alphas``
    replaces it.  The theory (lines) is the fixed point at each alpha; each simulation
    (dots, error bars = standard error over --seeds) is ``gaussmix simulate`` at that
    alpha.  With no options: the K = 3 cross-entropy problem (Delta = 0.5, simplex
    means, lam = 0.1) at d = 1000 with 10 seeds per alpha, about a minute on 2 cores.
    CSV columns: the theory curve (alpha, lam, test_error, train_error, train_loss,
    test_loss, ...) then sim_<key> and sim_<key>_se for each error and loss,
    sim_converged, sim_d, sim_seeds.
    """
    import pandas as pd

    grid = parse_grid("alphas", alphas, fact="alpha")
    setup = build_point(opts, alpha=float(grid.max()))
    _check_grid(setup, "--alphas", grid, "alpha")
    setups = _simulation_setups(setup, grid, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs)
    check_output_path("--out", out, kind="dir")
    theory = learning_curve(
        setup.mixture,
        setup.loss,
        grid,
        lam=setup.lam,
        **setup.penalty_kw,
        progress=not quiet,
        **setup.solve_kw,
    )
    sims = _simulate_curve(setups, grid, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs, quiet=quiet)
    df = pd.concat([theory.reset_index(drop=True), sims], axis=1)
    logx = alphas.startswith("log:")
    paths = _write_comparison(
        df,
        out,
        setup,
        opts.mixture,
        logx=logx,
        alpha=None,
        alphas=grid,
        d=d,
        seeds=seeds,
        seed=seed,
        n_jobs=n_jobs,
    )
    _report_curve(df, paths)


def _simulation_setups(
    setup: PointSetup, grid: np.ndarray, *, d: int, seeds: int, seed: int, n_jobs: int
) -> list[PointSetup]:
    """The setup at each alpha of ``grid``, each checked for simulation (before any work)."""
    from gaussmix.sweep import check_simulation

    check_simulation(setup, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs)
    setups = [setup.at(alpha=float(a)) for a in grid]
    for a, s in zip(grid, setups):
        try:
            check_simulation(s, d=d, seeds=seeds, seed=seed)
        except ValueError as exc:
            raise ValueError(f"--alphas value {a:g}: {flag_message(exc, POINT_FLAGS)}") from None
    return setups


def _simulate_curve(
    setups: list[PointSetup],
    grid: np.ndarray,
    *,
    d: int,
    seeds: int,
    seed: int,
    n_jobs: int,
    quiet: bool,
) -> Any:
    """The ``sim_*`` columns of ``compare``: one simulation per alpha, with a progress bar."""
    import pandas as pd

    from gaussmix.core.progress import progress_bar
    from gaussmix.sweep import simulation_payload

    sims = []
    with (
        one_blas_thread(),
        progress_bar(
            total=len(grid) * seeds,
            desc=f"simulate d={d}",
            unit="seed",
            enabled=not quiet,
        ) as bar,
    ):
        for a, s in zip(grid, setups):
            bar.set_postfix_str(f"alpha={a:.3g}")
            p = simulation_payload(s, d=d, seeds=seeds, seed=seed, n_jobs=n_jobs)
            row = {}
            for key in ("test_error", "train_error", "train_loss", "test_loss"):
                row[f"sim_{key}"] = p[key]
                row[f"sim_{key}_se"] = p[f"{key}_se"]
            row.update(sim_converged=p["converged"], sim_d=d, sim_seeds=seeds)
            sims.append(row)
            bar.update(seeds)
    return pd.DataFrame(sims)


def _write_comparison(
    df: Any,
    out: Path,
    setup: PointSetup,
    mixture_file: str | None,
    *,
    logx: bool,
    d: int,
    seeds: int,
    **parameters: Any,
) -> tuple[Path, Path, Path]:
    """``DIR/compare.csv``, its provenance ``DIR/compare.json`` and ``DIR/compare.png``
    (log alpha axis for a 'log:' range)."""
    from gaussmix.figures.plotting import plot_comparison, save_figure

    params = setup.params
    out = make_out_dir(out)
    csv_path = out / "compare.csv"
    png_path = out / "compare.png"
    df.to_csv(csv_path, index=False)
    json_path = _write_provenance(
        csv_path, df, setup, mixture_file, d=d, seeds=seeds, **parameters
    )
    title = (
        f"{params['loss']}, K={params['n_clusters']}, λ={params['lam']:g}: theory (lines) vs "
        f"simulation (d={d}, {seeds} seeds)"
    )
    fig = plot_comparison(df, title=title, logx=logx)
    save_figure(fig, png_path)
    return csv_path, json_path, png_path


@app.command("sweep")
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


# ============================================================================ figures
def _point_option(name: str) -> tuple[tuple[str, ...], str | None]:
    """The declarations and metavar of the point option ``name`` (a field of
    :class:`PointOptions`), for a figure option that is the same option."""
    import dataclasses

    (f,) = [f for f in dataclasses.fields(PointOptions) if f.name == name]
    option = f.metadata["cli_option"]
    return option["decls"], option["metavar"]


#: the solver's options of ``gaussmix figure`` (those of the point commands but
#: ``--quad-order``: a figure's curves have different output dimensions L, and a
#: Gauss-Hermite rule is made for one); a figure whose table function takes ``options``
#: takes them, over its own choices
FIGURE_SOLVER_OPTIONS = tuple(n for n in SOLVER_OPTIONS if n != "quad_order")
#: parameters of ``gaussmix figure`` common to every figure (not declared by the registry)
_FIGURE_COMMON = ("name", "out", "quiet", "fast", "list_")
#: the options of ``gaussmix figure all`` (it makes every figure with its defaults)
_ATLAS_OPTIONS = ("--out", "--fast", "--n-jobs", "--quiet")
_GRID = "a,b,... or [log:]START:STOP:NUM"
#: the options that figures declare (``FigureSpec.options``; each figure takes only its
#: own): parameter -> (type, option declarations, metavar, help); all default to None
_FIGURE_OPTIONS: dict[str, tuple[Any, tuple[str, ...], str | None, str]] = {
    "alphas": (str, ("--alphas",), _GRID, "alpha = n/d: the theory grid (sparse-*, "
               "fig3-left, appe-xor, real data) or one curve each (fig3-right, fig4-left)."),
    "lams": (str, ("--lams",), _GRID, "fig3-right, fig4-*: penalty strengths (> 0)."),
    "n_clusters": (str, ("--n-clusters", "-K"), "K|K1,...", "Numbers of clusters (>= 2): "
                   "fig3-left, fig3-centre: one curve each (K1,...); fig3-right: K [3]."),
    "loss": (str, ("--loss",), "square|logistic|hinge", "sparse-*: training loss [square]."),
    "sparsity": (float, ("--sparsity",), "RHO",
                 "sparse-*: fraction of directions with means [0.1]."),
    "ratios": (str, ("--ratios",), "r1,...",
               "sparse-setup: ratios Delta1/Delta2, one curve each."),
    "delta2": (float, ("--delta2",), "D2", "sparse-setup: variance off the support [1]."),
    "delta1": (float, ("--delta1",), "D1",
               "sparse-curves, sparse-projection: variance on the support [0.1]."),
    "delta2s": (str, ("--delta2s",), "d1,...",
                "sparse-curves, sparse-projection: variances off the support, one each."),
    "delta": (float, ("--delta",), "DELTA",
              "fig3-left/right, appe-xor*: cluster variance, Sigma = DELTA I [0.5]."),
    "deltas": (str, ("--deltas",), "D1,...",
               "fig4-left: the two cluster variances [0.1,0.01]; fig3-centre: one line each."),
    "lam": (float, ("--lam",), "LAMBDA", "fig3-left, appe-*, ten-class: penalty strength."),
    "datasets": (str, ("--datasets",), "NAME,...", "fig5, fig4-right, ten-class: mnist, "
                 "fashion-mnist, digits [mnist,fashion-mnist]."),
    "pool": (int, ("--pool",), "P", "ten-class: block means of P x P pixels (1: pixels) [4]."),
    "dataset": (str, ("--dataset",), "NAME",
                "fig6, appe-*: mnist, fashion-mnist or digits [mnist]."),
    "gammas": (str, ("--gammas",), _GRID, "fig6: random features per dimension, p / d."),
    "epochs": (str, ("--epochs",), "E1,...", "appe-trained: stages of training."),
    "hidden": (int, ("--hidden",), "H", "appe-trained: hidden units [784]."),
    "subsamples": (int, ("--subsamples",), "S",
                   "Real data: training subsamples per point (error bars)."),
    "sources": (str, ("--sources",), "theory,synthetic,real",
                "Real-data figures: the curves drawn."),
    "alpha": (float, ("--alpha",), "ALPHA", "fig4-right: sample complexity [1]."),
    "simulate": (bool, ("--simulate/--no-simulate",), None,
                 "sparse-curves, fig3-left, fig4-left: simulation dots (finite-size ERM) "
                 "[default: simulate]; fig3-centre: LP dots [default: none]."),
    "sim_alphas": (str, ("--sim-alphas",), "a1,...", "sparse-curves, fig3-left: simulated "
                   "alphas (rounded so that classes are balanced)."),
    "sim_lams": (str, ("--sim-lams",), "l1,...", "fig4-left: simulated penalties."),
    "d": (int, ("--d",), "D", "Input dimension of the simulated instances or samples."),
    "n_points": (int, ("--n-points",), "N", "*-projection: points drawn per panel."),
    "seeds": (int, ("--seeds",), "S", "Instances per simulated point (error bars)."),
    "seed": (int, ("--seed",), "N", "Root seed of the simulations or samples [0]."),
    "n_jobs": (int, ("--n-jobs", "-j"), "N", "Worker processes (joblib: -1 = all cores): over "
             "seeds for one figure (sparse-curves: -1, others: 1); over figures for 'all' [1]. "
             "Results do not depend on it."),
    # the point commands' --mixture (PointOptions.mixture), read by the same loader
    "mixture": (str, *_point_option("mixture"), "A mixture file (.npz of gaussmix.Mixture."
                "save) in place of the paper's mixture, for the figures that take one "
                "(fig3-left, fig3-right, fig4-left; see --list); it excludes the options "
                "that build the paper's mixture."),
}  # fmt: skip


def _figure_mixture(spec: Any, path: str) -> Any:
    """``--mixture FILE`` of a figure: the file's mixture (read as the point commands read
    it), or a one-line refusal naming the figure and why it takes none."""
    if not spec.takes_mixture:
        raise ValueError(f"figure {spec.name} takes no --mixture: {spec.fixed_mixture}")
    return read_mixture_file(path)


def _flag(param: Any) -> str:
    """The long flag of a click parameter (``--n-jobs`` for ``--n-jobs/-j``)."""
    return max(param.opts, key=len)


def _figure_options(func: Any) -> Any:
    """Give the ``figure`` command every option of :data:`_FIGURE_OPTIONS` (keyword-only,
    default None: not given); the command reads their values from ``ctx.params``."""
    sig = inspect.signature(func)
    added = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                type_ | None,
                typer.Option(*decls, metavar=metavar, help=text, show_default=False),
            ],
        )
        for name, (type_, decls, metavar, text) in _FIGURE_OPTIONS.items()
    ]
    added += solver_parameters(FIGURE_SOLVER_OPTIONS)
    own = list(sig.parameters)

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        return func(**{k: kwargs[k] for k in own})

    return with_signature(wrapper, sig, [*sig.parameters.values(), *added])


FigureName = Annotated[
    str | None,
    typer.Argument(
        metavar="NAME",
        help="sparse-projection, sparse-setup (Fig. 1), sparse-curves (Fig. 2), fig3-left, "
        "fig3-centre, fig3-right (Fig. 3), fig4-left, fig4-right (Fig. 4), fig5, fig6, "
        "ten-class (Section 3.3), appe-trained, appe-p2-p10, appe-xor-projection, appe-xor "
        "(Appendix E); or 'all' (the whole atlas); see --list.",
        show_default=False,
    ),
]
FigureList = Annotated[
    bool,
    typer.Option(
        "--list",
        help="List every reproducible figure: name, place in the paper, the dots drawn "
        "besides the theory lines, description.",
    ),
]
FigureFast = Annotated[
    bool,
    typer.Option(
        "--fast",
        help="The figure's small preset (dense theory grids; fewer seeds, K, subsamples; "
        "small d; MNIST and Fashion-MNIST with fewer points): seconds per figure (see "
        "--list).",
    ),
]


@app.command("figure")
@_figure_options
def figure_command(
    ctx: typer.Context,
    name: FigureName = None,
    out: OutOption = Path("gaussmix-out"),
    list_: FigureList = False,
    fast: FigureFast = False,
    quiet: QuietOption = False,
) -> None:
    """A figure of the paper: writes DIR/NAME.csv (the tidy table), DIR/NAME.png and
    DIR/NAME.json (its companion: place in the paper, title, caption saying what lines,
    dots and +-1 standard-error bars are, arguments).  Each figure takes only its own
    options (others are refused); --fast runs its small preset.

    gaussmix figure --list names every figure with its place in the paper.

    gaussmix figure all --out DIR makes every figure of the list (PNG + CSV + JSON each)
    and DIR/atlas.json (per figure: status, seconds, files), N figures at a time with
    --n-jobs N; a figure that fails does not stop the others, and the command then exits 1
    naming it.  With --fast the whole atlas takes about 2 minutes; with the paper's settings
    (simulations at d = 1000) about 11 minutes with --n-jobs 2 (see BENCHMARKS.md).
    """
    if list_:
        passed = [p for p in ctx.command.params if p.name != "list_" and given(ctx, p.name)]
        if name is not None or passed:
            raise ValueError("--list takes no NAME and no other option")
        _print_atlas()
        return
    if name is None:
        raise ValueError("NAME is missing: a figure of 'gaussmix figure --list', or 'all'")
    if name == "all":
        _figure_all(ctx, out, fast, quiet)
        return
    from gaussmix.figures import FIGURES, validate_figure, write_figure

    if name not in FIGURES:
        allowed = ", ".join(repr(n) for n in (*FIGURES, "all"))
        raise ValueError(f"NAME must be one of {allowed}; got {name!r}")
    spec = FIGURES[name]
    kw = _figure_kwargs(ctx, spec)
    kw["progress"] = not quiet
    validate_figure(name, fast=fast, **kw)
    check_output_path("--out", out, kind="dir")
    simulates = spec.simulates and kw.get("simulate", True)
    with one_blas_thread() if simulates else contextlib.nullcontext():
        res = write_figure(name, out, fast=fast, mixture_file=ctx.params["mixture"], **kw)
    _report_curve(res.data, (res.csv, res.png, res.meta), partial_fails=False)


def _print_atlas() -> None:
    """``gaussmix figure --list``: one line per figure of the atlas."""
    from gaussmix.figures import atlas

    df = atlas()
    cols = ("name", "paper", "dots", "description")
    widths = {c: max(len(c), *(len(str(v)) for v in df[c])) for c in cols[:-1]}
    typer.echo("  ".join(c.upper().ljust(widths.get(c, 0)) for c in cols).rstrip())
    indent = " " * (sum(widths.values()) + 2 * len(widths))
    for row in df.itertuples(index=False):
        typer.echo("  ".join(str(getattr(row, c)).ljust(widths.get(c, 0)) for c in cols))
        typer.echo(f"{indent}--fast: {row.fast}")
        if row.mixture == "any":
            typer.echo(f"{indent}--mixture FILE: draws any mixture in place of the paper's")
        if row.differs:
            typer.echo(f"{indent}differs from the paper: {row.differs}")
    typer.echo(
        f"{len(df)} figures: gaussmix figure NAME --out DIR [--fast]; all of them: "
        "gaussmix figure all --out DIR [--fast] [--n-jobs N]"
    )


def _figure_all(ctx: typer.Context, out: Path, fast: bool, quiet: bool) -> None:
    """``gaussmix figure all``: every figure of the atlas, and DIR/atlas.json."""
    for p in ctx.command.params:
        if p.name not in _FIGURE_COMMON and given(ctx, p.name) and p.name != "n_jobs":
            raise ValueError(
                f"{_flag(p)} is not an option of figure all (its options: "
                f"{', '.join(_ATLAS_OPTIONS)})"
            )
    n_jobs = ctx.params["n_jobs"] if ctx.params["n_jobs"] is not None else 1
    check_param("n_jobs", n_jobs, name="--n-jobs")
    out = make_out_dir(out)
    from gaussmix.figures import make_atlas

    res = make_atlas(out, fast=fast, n_jobs=n_jobs, progress=not quiet)
    width = max(len(e.name) for e in res.entries)
    for e in res.entries:
        notes = [f"{len(e.warnings)} warnings"] if e.warnings else []
        if e.not_converged:
            notes.append(f"{e.not_converged} points did not converge")
        if e.error:
            notes.append(e.error)
        line = f"{e.name.ljust(width)}  {e.status:<6}  {e.seconds:8.1f} s"
        typer.echo("  ".join([line, *notes]) if notes else line)
    typer.echo(f"wrote {res.path} ({len(res.entries)} figures, {res.seconds:.1f} s)")
    if res.failed:
        raise GaussmixError(
            f"{len(res.failed)} of {len(res.entries)} figures failed: "
            f"{', '.join(res.failed)} (errors in {res.path})"
        )


def _figure_kwargs(ctx: typer.Context, spec: Any) -> dict[str, Any]:
    """The table function's arguments from the options given on the command line; an
    option the figure does not take, or a simulation option with ``--no-simulate``, is
    refused naming it."""
    passed = [p for p in ctx.command.params if p.name not in _FIGURE_COMMON and given(ctx, p.name)]
    no_sim = given(ctx, "simulate") and ctx.params["simulate"] is False
    kw: dict[str, Any] = {}
    solver = [p for p in passed if p.name in FIGURE_SOLVER_OPTIONS]
    if solver:
        from gaussmix.figures import FIGURES

        if not _takes_solver_options(spec):
            raise ValueError(
                f"{_flag(solver[0])} is not an option of figure {spec.name} (it takes no "
                "solver options; the figures that do: "
                f"{', '.join(n for n, s in FIGURES.items() if _takes_solver_options(s))})"
            )
        # the options given, also at their defaults (over the figure's own choices)
        kw["options"] = {p.name: ctx.params[p.name] for p in solver}
    for p in passed:
        if p.name in FIGURE_SOLVER_OPTIONS:
            continue
        if p.name == "mixture":
            kw["mixture"] = _figure_mixture(spec, ctx.params["mixture"])
            continue
        opt = spec.option(_flag(p))
        if opt is None:
            takes = ", ".join(o.flag for o in spec.options) or "none"
            raise ValueError(
                f"{_flag(p)} is not an option of figure {spec.name} (its options: {takes})"
            )
        if opt.simulation and no_sim:
            raise ValueError(f"{opt.flag} cannot be used with --no-simulate")
        kw[opt.param] = _figure_value(opt, ctx.params[p.name])
    for opt in spec.options:
        if opt.param not in kw and opt.has_cli_default and not (opt.simulation and no_sim):
            kw[opt.param] = opt.cli_default
    return kw


def _takes_solver_options(spec: Any) -> bool:
    """Whether the table function of a figure takes the solver's ``options``."""
    return "options" in inspect.signature(spec.table).parameters


def _figure_value(opt: Any, value: Any) -> Any:
    """The text of a list option parsed by the option's kind (others pass as they are)."""
    if opt.kind == "grid":
        if ":" in str(value):
            return parse_grid(opt.flag, str(value), fact=None)
        return parse_floats(opt.flag, value)
    if opt.kind == "int" and isinstance(value, str):  # a flag that other figures read as a list
        return integer_parser(opt.param, opt.flag)(value)
    if opt.kind == "ints":
        parts = [t.strip() for t in str(value).split(",")]
        if not all(re.fullmatch(r"[+-]?\d+", t) for t in parts):
            raise ValueError(f"{opt.flag} must be comma-separated integers, got {value!r}")
        return [int(t) for t in parts]
    return value


# ============================================================================ phase
from .phase import ESTIMATOR_OPTIONS, bayes_optimal, transition  # noqa: E402

app.command("bayes-optimal")(without_options(*ESTIMATOR_OPTIONS)(bayes_optimal))
app.command("transition")(without_options(*ESTIMATOR_OPTIONS, "alpha")(transition))


# ============================================================================ main
def _error(message: str, code: int) -> int:
    msg = _one_line(message)
    sys.stderr.write(f"gaussmix: error: {msg}\n")
    sys.stderr.flush()
    return code


def _click_error(exc: BaseException) -> int:
    msg = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    if type(exc).__name__ == "NoArgsIsHelpError":  # help text, not an error
        sys.stdout.write(msg + "\n")
        return 0
    ctx = getattr(exc, "ctx", None)
    if is_a(exc, "UsageError"):
        path = ctx.command_path if ctx is not None else "gaussmix"
        return _error(f"{msg} (see '{path} --help')", EXIT_BAD_INPUT)
    return _error(msg, getattr(exc, "exit_code", EXIT_ERROR) or EXIT_ERROR)


#: warnings of one kind printed before they are summarised
MAX_WARNINGS = 3


#: the command line's form of a remedy a library warning names: (category, the library's
#: words, the flag that does the same; ``--quad-order N`` builds ``GaussHermite(N, L)``)
_WARNING_REMEDIES = (
    ("IntegrationWarning", "quadrature=GaussHermite(", "on the command line: --quad-order N"),
)


def _warning_text(category: str, message: str) -> str:
    """A warning in one line, with the command-line form of the remedy it names, if any
    (:data:`_WARNING_REMEDIES`; a warning whose remedy has no flag is said as it is)."""
    remedy = next(
        (flag for cat, words, flag in _WARNING_REMEDIES if cat == category and words in message),
        None,
    )
    return _one_line(message) + (f" ({remedy})" if remedy else "")


def _command_flags(args: Sequence[str]) -> dict[str, str]:
    """Keyword -> long flag of every option of the command ``args`` runs (read from the
    command itself; empty when ``args`` names no command)."""
    group = typer.main.get_command(app)
    name = next((a for a in args if not a.startswith("-")), None)
    command = getattr(group, "commands", {}).get(name) if name is not None else None
    if command is None:
        return {}
    return {p.name: _flag(p) for p in command.params if p.param_type_name == "option" and p.name}


def _print_warnings(pending: list[tuple[str, str]]) -> None:
    """One line per warning, at most :data:`MAX_WARNINGS` of each category."""
    shown: dict[str, int] = {}
    for category, text in pending:
        shown[category] = shown.get(category, 0) + 1
        if shown[category] <= MAX_WARNINGS:
            sys.stderr.write(f"gaussmix: warning: {category}: {text}\n")
    for category, n in shown.items():
        if n > MAX_WARNINGS:
            sys.stderr.write(f"gaussmix: warning: {category}: {n - MAX_WARNINGS} more not shown\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``gaussmix ...`` and return its exit status.

    ``argv`` excludes the program name (default ``sys.argv[1:]``).  Errors never raise:
    they print one line ``gaussmix: error: ...`` on stderr and return the status of
    :data:`gaussmix.cli.exits.EXIT_CODES` (:func:`gaussmix.cli.exits.classify`).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    set_command_line(["gaussmix", *args])  # the provenance of every table written
    renamed = renamed_flag_message(args)
    if renamed is not None:
        return _error(renamed, EXIT_BAD_INPUT)
    pending: list[tuple[str, str]] = []

    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        item = (category.__name__, _warning_text(category.__name__, str(message)))
        if item not in pending:
            pending.append(item)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy overflow noise in the solver
        warnings.showwarning = show_warning
        try:
            rv = app(args=args, prog_name="gaussmix", standalone_mode=False)
        except BaseException as exc:  # noqa: BLE001 - a CLI never shows a traceback
            set_command_line(None)
            if isinstance(exc, SystemExit | GeneratorExit):
                raise
            if is_a(exc, "ClickException"):
                return _click_error(exc)
            if os.environ.get("GAUSSMIX_DEBUG") and classify(exc)[0] == EXIT_ERROR:
                raise
            code, message = classify(exc)
            if isinstance(exc, ArgumentError | ArgumentTypeError):  # said with its flag
                message = flag_message(exc, _command_flags(args))
            if isinstance(exc, PartialResultsError):  # the points' own reasons first
                _print_warnings(pending)
            return _error(message, code)
    set_command_line(None)  # a later call in this process is not this command
    if rv == EXIT_INTERRUPTED:  # typer's status for a KeyboardInterrupt it caught
        return _error("interrupted", EXIT_INTERRUPTED)
    _print_warnings(pending)
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
