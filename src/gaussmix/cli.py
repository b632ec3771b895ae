"""Command-line interface: ``gaussmix point | curve | lambda-curve | simulate | compare | sweep``.

A thin layer over the library: options are parsed here, turned into a
:class:`~gaussmix.mixture.Mixture` and solver keyword arguments, and handed to
:func:`gaussmix.solve`, :func:`gaussmix.learning_curve` or :func:`gaussmix.lambda_sweep`.
Values are validated by the library (which names the offending argument); this module
only parses comma lists and ranges and translates argument names into option names.

Interface contract (checked outside the repository -- keep it stable)
--------------------------------------------------------------------
* ``gaussmix point [options] --json`` prints one JSON object on stdout with (at least)
  ``test_error, train_error, train_loss, converged, n_iter, Q, M, V, b,
  integration_error`` (:meth:`FixedPointResult.to_dict`) and ``params`` (the resolved
  inputs).
* ``gaussmix curve`` writes ``DIR/curve.csv`` and ``DIR/curve.png``;
  ``gaussmix lambda-curve`` writes ``DIR/lambda_curve.csv`` and ``DIR/lambda_curve.png``.
* ``gaussmix simulate [point options] --d D --seeds S [--seed N] --json`` prints one JSON
  object with the keys of ``point --json`` (means over seeds) plus ``<key>_se`` (standard
  error over seeds) for ``test_error``, ``train_error``, ``train_loss`` (and ``Q, M, b``).
* ``gaussmix compare [point options] --alphas a:b:n --d D --seeds S --out DIR`` writes
  ``DIR/compare.csv`` and ``DIR/compare.png``.
* ``gaussmix sweep --grid FILE.toml --out FILE.csv [--scheduler ADDRESS] [--jobs N]``:
  the TOML file has a ``[fixed]`` table (any ``point`` option, names without dashes), a
  ``[grid]`` table (option -> list of values; their Cartesian product is run) and an
  optional ``[simulate]`` table (``d``, ``seeds``, ``seed``) that switches from theory to
  simulation.  The CSV has one row per grid point: the grid options, then the JSON keys of
  ``point`` (or ``simulate``); see :mod:`gaussmix.sweep`.
* Every failure prints exactly one line ``gaussmix: error: <message>`` on stderr and exits
  with status 2 (bad input), 3 (no valid fixed point or a numerical failure) or 1
  (anything else, e.g. an output directory that cannot be created); never a
  traceback.  Set ``GAUSSMIX_DEBUG=1`` to get the traceback of an unexpected error.

Adding a command with the same point options
-------------------------------------------
Decorate the function with :func:`point_options` *below* ``@app.command()`` and give it a
keyword parameter ``opts: PointOptions``; the decorator adds every option of
:class:`PointOptions` (``--clusters``, ``--loss``, ``--lam``, ...) to the command and
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
"""

import contextlib
import dataclasses
import functools
import inspect
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import click
import numpy as np
import typer

from . import __version__
from ._validation import check_array
from .exceptions import ConvergenceError, GaussmixError
from .experiments import lambda_sweep, learning_curve, parse_range
from .losses import get_loss
from .mixture import Mixture
from .problem import Problem, make_problem
from .quadrature import GaussHermite
from .solver import solve

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
    "option_message",
]

#: losses whose labels are the scalars +1 / -1
BINARY_LOSSES = ("logistic", "hinge")
MODELS = ("isotropic", "block")

#: exit statuses
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_NO_FIXED_POINT = 3


# ============================================================================ options
def _opt(default: Any, type_: Any, *decls: str, help: str, metavar: str | None = None) -> Any:
    """A dataclass field that also describes its command-line option."""
    info = typer.Option(*decls, help=help, metavar=metavar, show_default=default is not None)
    return field(default=default, metadata={"cli_type": type_, "cli_option": info})


@dataclass(frozen=True)
class PointOptions:
    """The options that define one point (mixture + estimator + lam + alpha), as typed.

    Field defaults are the command-line defaults.  ``'auto'`` values and a missing
    ``clusters`` are resolved by :func:`resolve_options`: K from ``--rho`` / ``--delta``
    lists, else 2 for binary problems (``--labels binary``, ``--loss logistic|hinge``,
    antipodal means, the block model), else 3; labels ``binary`` for logistic/hinge with
    K = 2, else ``onehot``; means ``antipodal`` for the block model with K = 2, else
    ``simplex`` (for K = 2 the two Gram matrices coincide).
    """

    clusters: int | None = _opt(
        None,
        int | None,
        "--clusters",
        "-K",
        metavar="K",
        help="Number of clusters K [default: from --rho/--delta, 2 for binary problems, else 3].",
    )
    labels: str = _opt(
        "auto",
        str,
        "--labels",
        metavar="auto|onehot|binary",
        help="Label map: one-hot y_c = e_c, or binary (K = 2: cluster 1 -> +1, cluster 2 -> -1); "
        "auto: binary for logistic/hinge, else one-hot.",
    )
    rho: str | None = _opt(
        None,
        str | None,
        "--rho",
        metavar="r1,...,rK",
        help="Cluster priors, K comma-separated numbers summing to 1 [default: balanced].",
    )
    model: str = _opt(
        "isotropic",
        str,
        "--model",
        metavar="isotropic|block",
        help="Covariance model: isotropic Sigma_c = Delta_c I, or block (blocks of directions "
        "with variances --deltas on fractions --fractions).",
    )
    delta: str | None = _opt(
        None,
        str | None,
        "--delta",
        metavar="d|d1,...,dK",
        help="Isotropic cluster variance Delta, shared or one per cluster [default: 0.5].",
    )
    means: str = _opt(
        "auto",
        str,
        "--means",
        metavar="auto|simplex|gaussian|antipodal",
        help="Family of cluster means (unit norm); auto: simplex, antipodal for the block model.",
    )
    fractions: str | None = _opt(
        None,
        str | None,
        "--fractions",
        metavar="f1,...,fB",
        help="Block model: fractions of directions in each block (sum to 1).",
    )
    deltas: str | None = _opt(
        None,
        str | None,
        "--deltas",
        metavar="s1,...,sB",
        help="Block model: covariance eigenvalue of each block (shared by the clusters).",
    )
    loss: str = _opt(
        "cross-entropy",
        str,
        "--loss",
        metavar="square|logistic|cross-entropy|hinge",
        help="Training loss.",
    )
    penalty: str = _opt("l2", str, "--penalty", metavar="l2", help="Penalty r(W).")
    lam: float = _opt(1.0, float, "--lam", metavar="LAMBDA", help="Penalty strength lambda >= 0.")
    alpha: float = _opt(2.0, float, "--alpha", metavar="ALPHA", help="Sample complexity n/d > 0.")
    tol: float = _opt(1e-8, float, "--tol", help="Solver tolerance on the order parameters.")
    max_iter: int = _opt(
        3000, int, "--max-iter", metavar="N", help="Maximum fixed-point iterations per point."
    )
    quad_order: int | None = _opt(
        None,
        int | None,
        "--quad-order",
        metavar="N",
        help="Gauss-Hermite nodes per dimension [default: library default].",
    )

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Names of the fields (= keyword parameters added by :func:`point_options`)."""
        return tuple(f.name for f in dataclasses.fields(cls))


def _annotation(f: dataclasses.Field) -> Any:
    type_, info = f.metadata["cli_type"], f.metadata["cli_option"]
    return Annotated[type_, info]


def point_options(
    func: Callable[..., Any] | None = None, /, **defaults: Any
) -> Callable[..., Any]:
    """Attach every :class:`PointOptions` option to a typer command.

    ``func`` must accept a keyword parameter ``opts`` (a :class:`PointOptions`); its other
    parameters are kept as they are (they may be typer options of their own).  Use it
    *below* ``@app.command()``, as ``@point_options`` or, to change the command-line
    defaults of some options for this command, ``@point_options(lam=0.1)``.
    """
    unknown = sorted(set(defaults) - set(PointOptions.option_names()))
    if unknown:
        raise TypeError(f"point_options: unknown options {unknown}")
    if func is None:
        return lambda f: point_options(f, **defaults)
    sig = inspect.signature(func)
    if "opts" not in sig.parameters:
        raise TypeError(f"{func.__name__} must take a keyword parameter 'opts: PointOptions'")
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in sig.parameters.values()
        if p.name != "opts"
    ]
    names = PointOptions.option_names()
    clash = sorted(set(names) & {p.name for p in own})
    if clash:
        raise TypeError(f"{func.__name__} redefines point options {clash}")
    added = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=defaults.get(f.name, f.default),
            annotation=_annotation(f),
        )
        for f in dataclasses.fields(PointOptions)
    ]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        opts = PointOptions(**{n: kwargs.pop(n) for n in names})
        return func(opts=opts, **kwargs)

    params = added + own
    del wrapper.__wrapped__  # typer must see the new signature, not the wrapped one
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


# ============================================================================ parsing
def parse_floats(option: str, text: str) -> list[float]:
    """Parse ``'a,b,c'`` into floats; a ValueError names ``option``."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        if not parts or any(p == "" for p in parts):
            raise ValueError
        return [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{option} must be comma-separated numbers, got {text!r}") from None


def _parse_delta(text: str | None) -> float | list[float]:
    if text is None:
        return 0.5
    values = parse_floats("--delta", text)
    return values[0] if len(values) == 1 else values


@dataclass(frozen=True)
class ResolvedOptions:
    """:class:`PointOptions` with every ``auto`` value decided and every list parsed."""

    model: str
    clusters: int
    labels: str
    means: str
    rho: list[float] | None
    delta: float | list[float] | None
    fractions: list[float] | None
    deltas: list[float] | None
    loss: str
    penalty: str
    lam: float
    alpha: float
    tol: float
    max_iter: int
    quad_order: int | None


def resolve_options(opts: PointOptions) -> ResolvedOptions:
    """Decide K, labels and means, and parse the comma lists (see :class:`PointOptions`)."""
    loss = get_loss(opts.loss).name  # validates the name
    if opts.model not in MODELS:
        allowed = ", ".join(repr(m) for m in MODELS)
        raise ValueError(f"--model must be one of {allowed}; got {opts.model!r}")
    block = opts.model == "block"
    if block:
        if opts.delta is not None:
            raise ValueError(
                "--delta cannot be used with --model block (give the block variances with "
                "--deltas and their fractions with --fractions)"
            )
        if opts.fractions is None or opts.deltas is None:
            raise ValueError("--model block needs --fractions f1,...,fB and --deltas s1,...,sB")
        fractions = parse_floats("--fractions", opts.fractions)
        deltas = parse_floats("--deltas", opts.deltas)
        delta = None
    else:
        for name, value in (("--fractions", opts.fractions), ("--deltas", opts.deltas)):
            if value is not None:
                raise ValueError(f"{name} is only valid with --model block")
        fractions = deltas = None
        delta = _parse_delta(opts.delta)
    rho = parse_floats("--rho", opts.rho) if opts.rho is not None else None

    if opts.clusters is not None:
        k = opts.clusters
        if k < 2:
            raise ValueError(f"--clusters must be >= 2, got {k}")
        if rho is not None and len(rho) != k:
            raise ValueError(
                f"--rho must be K={k} comma-separated numbers (one per cluster), got {opts.rho!r}"
            )
        if isinstance(delta, list) and len(delta) != k:
            raise ValueError(
                f"--delta must be one number or K={k} comma-separated numbers, got {opts.delta!r}"
            )
    else:
        implied = {}
        if rho is not None:
            implied["--rho"] = len(rho)
        if isinstance(delta, list):
            implied["--delta"] = len(delta)
        if len(set(implied.values())) > 1:
            raise ValueError(
                f"--rho has {implied['--rho']} entries but --delta has {implied['--delta']}; "
                "they must both have one entry per cluster"
            )
        if implied:
            k = next(iter(implied.values()))
            if k < 2:
                name = next(iter(implied))
                raise ValueError(f"{name} must have one entry per cluster (K >= 2), got 1")
        elif (
            opts.labels == "binary"
            or loss in BINARY_LOSSES
            or opts.means == "antipodal"
            or (block and opts.means == "auto")
        ):
            k = 2
        else:
            k = 3

    means = opts.means
    if means == "auto":
        means = "antipodal" if block and k == 2 else "simplex"
    labels = opts.labels
    if labels == "auto":
        labels = "binary" if loss in BINARY_LOSSES and k == 2 else "onehot"
    return ResolvedOptions(
        model=opts.model,
        clusters=k,
        labels=labels,
        means=means,
        rho=rho,
        delta=delta,
        fractions=fractions,
        deltas=deltas,
        loss=loss,
        penalty=opts.penalty,
        lam=opts.lam,
        alpha=opts.alpha,
        tol=opts.tol,
        max_iter=opts.max_iter,
        quad_order=opts.quad_order,
    )


def mixture_from_options(opts: PointOptions | ResolvedOptions) -> Mixture:
    """Build the :class:`~gaussmix.mixture.Mixture` described by the point options."""
    r = opts if isinstance(opts, ResolvedOptions) else resolve_options(opts)
    if r.model == "block":
        return Mixture.block(
            r.fractions, r.deltas, means=r.means, rho=r.rho, labels=r.labels, n_clusters=r.clusters
        )
    delta = np.asarray(r.delta) if isinstance(r.delta, list) else r.delta
    return Mixture.isotropic(delta, r.means, n_clusters=r.clusters, rho=r.rho, labels=r.labels)


@dataclass(frozen=True)
class PointSetup:
    """Everything needed to call the library for one point of the options.

    ``gaussmix.solve(setup.mixture, setup.loss, lam=setup.lam, alpha=setup.alpha,
    penalty=setup.penalty, **setup.solve_kw)``.
    """

    mixture: Mixture
    loss: str
    penalty: str
    lam: float
    alpha: float
    solve_kw: dict
    params: dict
    problem: Problem

    def check(self, *, lam: float | None = None, alpha: float | None = None) -> Problem:
        """Validate the problem at another ``lam`` / ``alpha`` (library checks)."""
        return make_problem(
            self.mixture,
            self.loss,
            lam=self.lam if lam is None else lam,
            alpha=self.alpha if alpha is None else alpha,
            penalty=self.penalty,
        )

    def at(self, *, lam: float | None = None, alpha: float | None = None) -> "PointSetup":
        """The same setup at another ``lam`` / ``alpha`` (validated; the mixture is shared).

        Equivalent to ``build_point(opts, lam=lam, alpha=alpha)`` without rebuilding the
        mixture.
        """
        lam = self.lam if lam is None else lam
        alpha = self.alpha if alpha is None else alpha
        problem = self.check(lam=lam, alpha=alpha)
        params = {**self.params, "lam": lam, "alpha": alpha}
        return dataclasses.replace(self, lam=lam, alpha=alpha, params=params, problem=problem)


def build_point(
    opts: PointOptions, *, lam: float | None = None, alpha: float | None = None
) -> PointSetup:
    """Resolve and validate the options; ``lam`` / ``alpha`` override the option values."""
    r = resolve_options(opts)
    if lam is not None or alpha is not None:
        r = dataclasses.replace(
            r, lam=r.lam if lam is None else lam, alpha=r.alpha if alpha is None else alpha
        )
    mixture = mixture_from_options(r)
    problem = make_problem(mixture, r.loss, lam=r.lam, alpha=r.alpha, penalty=r.penalty)
    solve_kw: dict[str, Any] = {"tol": r.tol, "max_iter": r.max_iter}
    if r.quad_order is not None:
        solve_kw["quadrature"] = GaussHermite(r.quad_order, problem.dim)
    params = {
        "model": r.model,
        "clusters": r.clusters,
        "labels": r.labels,
        "means": r.means,
        "rho": mixture.rho.tolist(),
    }
    if r.model == "block":
        params.update(fractions=r.fractions, deltas=r.deltas)
    else:
        params["delta"] = r.delta
    params.update(
        loss=r.loss,
        penalty=r.penalty,
        lam=r.lam,
        alpha=r.alpha,
        tol=r.tol,
        max_iter=r.max_iter,
        quad_order=r.quad_order,
    )
    return PointSetup(
        mixture=mixture,
        loss=r.loss,
        penalty=r.penalty,
        lam=r.lam,
        alpha=r.alpha,
        solve_kw=solve_kw,
        params=params,
        problem=problem,
    )


# ============================================================================ messages
#: library argument name -> command-line option
_OPTION_NAMES = {
    "quadrature order n": "--quad-order",
    "n_clusters": "--clusters",
    "fractions": "--fractions",
    "deltas": "--deltas",
    "alphas": "--alphas",
    "labels": "--labels",
    "penalty": "--penalty",
    "delta": "--delta",
    "means": "--means",
    "alpha": "--alpha",
    "lams": "--lams",
    "loss": "--loss",
    "rho": "--rho",
    "lam": "--lam",
    "tol": "--tol",
    "max_iter": "--max-iter",
    "seeds": "--seeds",
    "seed": "--seed",
    "n_jobs": "--jobs",
    "d": "--d",
}
_NAME_RE = re.compile(
    r"(?<![\w-])("
    + "|".join(re.escape(n) for n in sorted(_OPTION_NAMES, key=len, reverse=True))
    + r")(?=\s+must\b|\s+has\b|\s+implies\b|=|:)"
)


def option_message(message: str) -> str:
    """Rewrite the library's argument names (``lam must be ...``) as options (``--lam``)."""
    return _NAME_RE.sub(lambda m: _OPTION_NAMES[m.group(1)], message)


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


# ============================================================================ output
def _finite_or_none(obj: Any) -> Any:
    """Replace non-finite floats by None so that the JSON is strict."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_or_none(v) for v in obj]
    return obj


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    if isinstance(x, list):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    return str(x)


def _describe(params: dict) -> str:
    if params["model"] == "block":
        cov = f"block fractions={_fmt(params['fractions'])} deltas={_fmt(params['deltas'])}"
    else:
        cov = f"isotropic delta={_fmt(params['delta'])}"
    return (
        f"K={params['clusters']} ({params['labels']} labels, {params['means']} means, "
        f"rho={_fmt(params['rho'])}), {cov}; {params['loss']} loss, {params['penalty']} "
        f"penalty, lam={_fmt(params['lam'])}, alpha={_fmt(params['alpha'])}"
    )


def _check_finite_errors(payload: dict) -> None:
    for key in ("test_error", "train_error", "train_loss"):
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
        penalty=setup.penalty,
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
        typer.echo(json.dumps(_finite_or_none(payload), allow_nan=False))
        return
    rows = [
        ("test_error", payload["test_error"]),
        ("train_error", payload["train_error"]),
        ("train_loss", payload["train_loss"]),
        ("free_energy", payload["free_energy"]),
        (
            "converged",
            f"{payload['converged']} ({payload['n_iter']} iterations, "
            f"residual {payload['residual']:.2g})",
        ),
        ("integration_error", f"{payload['integration_error']:.2g}"),
        ("b", _fmt(payload["b"])),
    ]
    typer.echo(_describe(setup.params))
    for name, value in rows:
        typer.echo(f"  {name:<18} {_fmt(value)}")


def _write_curve(
    df: Any, out: Path, stem: str, *, x: str, title: str, logx: bool
) -> tuple[Path, Path]:
    from .plotting import plot_learning_curve, save_figure

    csv_path = out / f"{stem}.csv"
    png_path = out / f"{stem}.png"
    df.to_csv(csv_path, index=False)
    ax = plot_learning_curve(df, x=x, logx=logx, title=title)
    save_figure(ax.figure, png_path)
    return csv_path, png_path


def _report_curve(df: Any, paths: tuple[Path, Path]) -> None:
    for p in paths:
        typer.echo(f"wrote {p}")
    n_bad = int((~df["converged"].astype(bool)).sum())
    if n_bad:
        typer.echo(f"{n_bad} of {len(df)} points did not converge (NaN in the table)")


OutOption = Annotated[
    Path, typer.Option("--out", "-o", help="Output directory (created if missing).")
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


#: largest number of points of a curve
MAX_POINTS = 10_000


def _parse_range(option: str, spec: str, *, positive: bool) -> np.ndarray:
    """Parse ``[log:]start:stop:num`` and check the sign of the values (library checks)."""
    num = spec.rsplit(":", 1)[-1].strip()
    if num.isdigit() and int(num) > MAX_POINTS:
        raise ValueError(f"{option}: at most {MAX_POINTS} points, got {num}")
    grid = parse_range(spec, name=option)
    if positive:
        return check_array(option, grid, shape=(None,), positive=True)
    return check_array(option, grid, shape=(None,), nonnegative=True)


def _check_grid(setup: PointSetup, option: str, grid: np.ndarray, key: str) -> None:
    """Validate the problem at every value of the swept parameter."""
    for value in grid:
        try:
            setup.check(**{key: float(value)})
        except ValueError as exc:
            raise ValueError(f"{option} value {value:g}: {option_message(str(exc))}") from None


def _make_out_dir(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(f"--out: cannot create directory {str(out)!r}: {exc.strerror}") from None
    if not out.is_dir():
        raise OSError(f"--out: {str(out)!r} is not a directory")
    return out


@app.command()
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

    Takes the options of ``point``; ``--alphas`` replaces ``--alpha``.
    """
    grid = _parse_range("--alphas", alphas, positive=True)
    setup = build_point(opts, alpha=float(grid.max()))
    _check_grid(setup, "--alphas", grid, "alpha")
    out = _make_out_dir(out)
    df = learning_curve(
        setup.mixture,
        setup.loss,
        grid,
        lam=setup.lam,
        penalty=setup.penalty,
        progress=not quiet,
        **setup.solve_kw,
    )
    if not df["converged"].any():
        raise ConvergenceError("no fixed point at any alpha of --alphas")
    p = setup.params
    title = f"{p['loss']}, K={p['clusters']}, λ={p['lam']:g}"
    paths = _write_curve(df, out, "curve", x="alpha", title=title, logx=alphas.startswith("log:"))
    _report_curve(df, paths)


@app.command("lambda-curve")
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

    Takes the options of ``point``; ``--lams`` replaces ``--lam``.
    """
    grid = _parse_range("--lams", lams, positive=False)
    setup = build_point(opts, lam=float(grid.max()))
    _check_grid(setup, "--lams", grid, "lam")
    out = _make_out_dir(out)
    df = lambda_sweep(
        setup.mixture,
        setup.loss,
        grid,
        alpha=setup.alpha,
        penalty=setup.penalty,
        progress=not quiet,
        **setup.solve_kw,
    )
    if not df["converged"].any():
        raise ConvergenceError("no fixed point at any lambda of --lams")
    p = setup.params
    title = f"{p['loss']}, K={p['clusters']}, α={p['alpha']:g}"
    logx = lams.startswith("log:") or bool(np.all(grid > 0))
    paths = _write_curve(df, out, "lambda_curve", x="lam", title=title, logx=logx)
    _report_curve(df, paths)


# ============================================================================ simulations
JobsOption = Annotated[
    int,
    typer.Option(
        "--jobs",
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


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """One BLAS thread per process (here and in joblib workers): parallelism comes from
    --jobs, and the bits of a seeded simulation do not depend on it."""
    from joblib import parallel_config
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1), parallel_config(backend="loky", inner_max_num_threads=1):
        yield


@app.command()
@point_options
def simulate(
    opts: PointOptions,
    d: DOption = 1000,
    seeds: Annotated[
        int, _seeds_option("Number of independent instances; standard errors over them.")
    ] = 5,
    seed: SeedOption = 0,
    jobs: JobsOption = -1,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (machine-readable).")
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Finite-size ERM on samples of the mixture: errors averaged over seeds.

    Takes the options of ``point`` (--tol, --max-iter and --quad-order set the theory
    solver and are not used here: the ERM is solved exactly, to scikit-learn tolerances
    of 1e-10).  Each seed realises the mixture at dimension --d, draws n = alpha d
    training points and measures the test error exactly.  With --json, prints the keys
    of ``point --json`` (means over seeds) plus <key>_se (standard errors).
    """
    from .sweep import check_simulation, simulation_payload

    setup = build_point(opts)
    check_simulation(setup, d=d, seeds=seeds, seed=seed)
    with _one_blas_thread():
        payload = simulation_payload(
            setup, d=d, seeds=seeds, seed=seed, n_jobs=jobs, progress=not quiet
        )
    _check_finite_errors(payload)
    if json_out:
        typer.echo(json.dumps(_finite_or_none(payload), allow_nan=False))
        return
    p = payload["params"]
    typer.echo(f"{_describe(setup.params)}; d={d}, n={p['n']}, {seeds} seeds (seed {seed})")
    for key in ("test_error", "train_error", "train_loss"):
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


@app.command()
@point_options(lam=COMPARE_LAM)
def compare(
    opts: PointOptions,
    alphas: Annotated[
        str,
        typer.Option(
            "--alphas",
            metavar="[log:]START:STOP:NUM",
            help="Sample complexities alpha = n/d (linear, or log-spaced with 'log:').",
        ),
    ] = COMPARE_ALPHAS,
    d: DOption = COMPARE_D,
    seeds: Annotated[
        int, _seeds_option("Simulated instances per alpha (error bars: standard errors).")
    ] = COMPARE_SEEDS,
    seed: SeedOption = 0,
    jobs: JobsOption = -1,
    out: OutOption = Path("gaussmix-out"),
    quiet: QuietOption = False,
) -> None:
    """Theory learning curve against simulations: writes DIR/compare.csv and .png.

    Takes the options of ``point`` (default --lam 0.1 here); ``--alphas`` replaces
    ``--alpha``.  The theory (lines) is the fixed point at each alpha; each simulation
    (dots, error bars = standard error over --seeds) is ``gaussmix simulate`` at that
    alpha.  With no options: the K = 3 cross-entropy problem (Delta = 0.5, simplex
    means, lam = 0.1) at d = 1000 with 10 seeds per alpha, about a minute on 2 cores.
    CSV columns: the theory curve (alpha, lam, test_error, train_error, train_loss, ...)
    then sim_<key> and sim_<key>_se for each error, sim_converged, sim_d, sim_seeds.
    """
    from tqdm.auto import tqdm

    from .plotting import plot_comparison, save_figure
    from .sweep import check_simulation, simulation_payload

    grid = _parse_range("--alphas", alphas, positive=True)
    setup = build_point(opts, alpha=float(grid.max()))
    _check_grid(setup, "--alphas", grid, "alpha")
    check_simulation(setup, d=d, seeds=seeds, seed=seed)
    setups = [setup.at(alpha=float(a)) for a in grid]
    for a, s in zip(grid, setups):
        try:
            check_simulation(s, d=d, seeds=seeds, seed=seed)
        except ValueError as exc:
            raise ValueError(f"--alphas value {a:g}: {option_message(str(exc))}") from None
    out = _make_out_dir(out)
    theory = learning_curve(
        setup.mixture,
        setup.loss,
        grid,
        lam=setup.lam,
        penalty=setup.penalty,
        progress=not quiet,
        **setup.solve_kw,
    )
    sims = []
    with (
        _one_blas_thread(),
        tqdm(
            total=len(grid) * seeds,
            desc=f"simulate d={d}",
            unit="seed",
            disable=quiet,
            file=sys.stderr,
        ) as bar,
    ):
        for a, s in zip(grid, setups):
            bar.set_postfix_str(f"alpha={a:.3g}")
            p = simulation_payload(s, d=d, seeds=seeds, seed=seed, n_jobs=jobs)
            row = {}
            for key in ("test_error", "train_error", "train_loss"):
                row[f"sim_{key}"] = p[key]
                row[f"sim_{key}_se"] = p[f"{key}_se"]
            row.update(sim_converged=p["converged"], sim_d=d, sim_seeds=seeds)
            sims.append(row)
            bar.update(seeds)
    import pandas as pd

    df = pd.concat([theory.reset_index(drop=True), pd.DataFrame(sims)], axis=1)
    csv_path = out / "compare.csv"
    png_path = out / "compare.png"
    df.to_csv(csv_path, index=False)
    pp = setup.params
    title = (
        f"{pp['loss']}, K={pp['clusters']}, λ={pp['lam']:g}: theory (lines) vs "
        f"simulation (d={d}, {seeds} seeds)"
    )
    fig = plot_comparison(df, title=title, logx=alphas.startswith("log:"))
    save_figure(fig, png_path)
    _report_curve(df, (csv_path, png_path))


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
    jobs: JobsOption = -1,
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
    from .sweep import checkpoint_path
    from .sweep import sweep as run_sweep

    if out.is_dir():
        raise OSError(f"--out: {str(out)!r} is a directory; give a file name such as sweep.csv")
    ck = checkpoint if checkpoint is not None else checkpoint_path(out)
    try:
        res = run_sweep(
            grid,
            out=out,
            checkpoint=ck,
            backend=backend,
            jobs=jobs,
            scheduler=scheduler,
            progress=not quiet,
        )
    except KeyboardInterrupt:
        sys.stderr.write(
            f"gaussmix: finished points are in {str(ck)!r}; run the same command to resume\n"
        )
        raise
    failed = f"; {res.failed} without a valid result" if res.failed else ""
    typer.echo(
        f"wrote {out} ({len(res.df)} points: {res.computed} computed, {res.resumed} from "
        f"the checkpoint {ck}{failed})"
    )
    if res.failed == len(res.df):
        raise ConvergenceError(
            f"no grid point has a valid result (see the message column of {out})"
        )


# ============================================================================ main
_CLICK_ERRORS: tuple[type[BaseException], ...] = (click.ClickException,) + (
    (typer.TyperException,) if hasattr(typer, "TyperException") else ()
)
_ABORTS: tuple[type[BaseException], ...] = (click.exceptions.Abort, typer.Abort)


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
    is_usage = any(c.__name__ == "UsageError" for c in type(exc).__mro__)
    if is_usage:
        path = ctx.command_path if ctx is not None else "gaussmix"
        return _error(f"{msg} (see '{path} --help')", EXIT_BAD_INPUT)
    return _error(msg, getattr(exc, "exit_code", EXIT_ERROR) or EXIT_ERROR)


#: warnings of one kind printed before they are summarised
MAX_WARNINGS = 3


def _warning_text(message: str) -> str:
    text = option_message(_one_line(message))
    return text.replace("quadrature=GaussHermite(n, dim)", "--quad-order N")


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
    they print one line ``gaussmix: error: ...`` on stderr and return 2 (bad input),
    3 (no valid fixed point) or 1.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    pending: list[tuple[str, str]] = []

    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        item = (category.__name__, _warning_text(str(message)))
        if item not in pending:
            pending.append(item)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy overflow noise in the solver
        warnings.showwarning = show_warning
        try:
            rv = app(args=args, prog_name="gaussmix", standalone_mode=False)
        except _CLICK_ERRORS as exc:
            return _click_error(exc)
        except _ABORTS:
            return _error("aborted", EXIT_ERROR)
        except KeyboardInterrupt:
            return _error("interrupted", 130)
        except ConvergenceError as exc:
            return _error(str(exc), EXIT_NO_FIXED_POINT)
        except (np.linalg.LinAlgError, ArithmeticError) as exc:
            return _error(f"numerical failure: {exc}", EXIT_NO_FIXED_POINT)
        except (ValueError, TypeError) as exc:
            verbatim = getattr(exc, "cli_verbatim", False)  # e.g. sweep.GridError
            return _error(str(exc) if verbatim else option_message(str(exc)), EXIT_BAD_INPUT)
        except GaussmixError as exc:
            return _error(str(exc), EXIT_ERROR)
        except OSError as exc:
            return _error(str(exc), EXIT_ERROR)
        except Exception as exc:  # noqa: BLE001 - a CLI never shows a traceback
            if os.environ.get("GAUSSMIX_DEBUG"):
                raise
            return _error(f"internal error ({type(exc).__name__}): {exc}", EXIT_ERROR)
    _print_warnings(pending)
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
