"""Command-line interface: ``gaussmix point | curve | lambda-curve | optimal-lambda | simulate |
compare | sweep | figure | bayes-optimal | transition``.  The point commands are here;
``simulate`` and ``compare`` are in :mod:`gaussmix.cli.simulation`, ``sweep`` in
:mod:`gaussmix.cli.sweep`, ``figure`` in :mod:`gaussmix.cli.figure`, the last two in
:mod:`gaussmix.cli.phase`, what they share in :mod:`gaussmix.cli.common`; this module
registers them all on one :data:`app`, in that order.

A thin layer over the library: options are parsed here, turned into a
:class:`~gaussmix.theory.model.mixture.Mixture` and solver keyword arguments, and handed to
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

import json
import os
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
)
from gaussmix.core.jsonio import finite_or_none
from gaussmix.core.provenance import set_command_line
from gaussmix.core.version import __version__
from gaussmix.frontend.grids import parse_grid
from gaussmix.frontend.options import (
    PointOptions,
    PointSetup,
    ResolvedOptions,
    build_point,
    mixture_from_options,
    parse_floats,
    resolve_options,
)

from .common import (
    OutOption,
    QuietOption,
    check_finite_errors,
    check_grid,
    describe_params,
    fmt,
    lazy,
    long_flag,
    report_curve,
    without_options,
    write_curve,
)
from .exits import (
    EXIT_BAD_INPUT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    PartialResultsError,
    check_output_path,
    classify,
    is_a,
)
from .figure import figure_command
from .helpers import flag_message
from .options import point_options
from .renames import renamed_flag_message
from .simulation import compare, simulate
from .sweep import sweep_command

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


solve = lazy("gaussmix.theory.api.api", "solve")
lambda_sweep = lazy("gaussmix.experiments", "lambda_sweep")
learning_curve = lazy("gaussmix.experiments", "learning_curve")


# ============================================================================ messages
def _one_line(message: str) -> str:
    return " ".join(str(message).split())


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
    check_finite_errors(payload)
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
        ("b", fmt(payload["b"])),
    ]
    if setup.problem.penalty_spec.sparse:
        rows.insert(4, ("nonzero_fraction", payload["nonzero_fraction"]))
    typer.echo(describe_params(setup.params))
    for name, value in rows:
        typer.echo(f"  {name:<18} {fmt(value)}")


#: default search interval of ``gaussmix optimal-lambda`` (the library's)
OPTIMAL_LAM_MIN = 1e-5
OPTIMAL_LAM_MAX = 1e2


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
    check_grid(setup, "--alphas", grid, "alpha")
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
    paths = write_curve(
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
    report_curve(df, paths)


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
    check_grid(setup, "--lams", grid, "lam")
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
    paths = write_curve(
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
    report_curve(df, paths)


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
    from gaussmix.theory.problem.problem import LAM_MAX

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
    check_finite_errors(point)
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
    typer.echo(describe_params({**setup.params, "lam": "optimal"}))
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
        typer.echo(f"  {name:<18} {fmt(value)}")


# ============================================================ simulate, sweep, figure
app.command()(simulate)
app.command()(compare)
app.command("sweep")(sweep_command)
app.command("figure")(figure_command)


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
    return {
        p.name: long_flag(p) for p in command.params if p.param_type_name == "option" and p.name
    }


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
