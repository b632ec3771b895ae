"""Command-line interface: ``gaussmix point | curve | lambda-curve | optimal-lambda | simulate |
compare | sweep | figure``.

A thin layer over the library: options are parsed here, turned into a
:class:`~gaussmix.mixture.Mixture` and solver keyword arguments, and handed to
:func:`gaussmix.solve`, :func:`gaussmix.learning_curve` or :func:`gaussmix.lambda_sweep`.
Values are validated by the library (which names the offending argument); this module
only parses comma lists and ranges and translates argument names into option names.

Interface contract (checked outside the repository -- keep it stable)
--------------------------------------------------------------------
* ``gaussmix point [options] --json`` prints one JSON object on stdout with (at least)
  ``test_error, train_error, train_loss, converged, n_iter, Q, M, V, b,
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
  error over seeds) for ``test_error``, ``train_error``, ``train_loss`` (and ``Q, M, b``).
* ``gaussmix compare [point options] --alphas a:b:n --d D --seeds S --out DIR`` writes
  ``DIR/compare.csv`` and ``DIR/compare.png``.
* ``gaussmix sweep --grid FILE.toml --out FILE.csv [--scheduler ADDRESS] [--jobs N]``:
  the TOML file has a ``[fixed]`` table (any ``point`` option, names without dashes), a
  ``[grid]`` table (option -> list of values; their Cartesian product is run) and an
  optional ``[simulate]`` table (``d``, ``seeds``, ``seed``) that switches from theory to
  simulation.  The CSV has one row per grid point: the grid options, then the JSON keys of
  ``point`` (or ``simulate``); see :mod:`gaussmix.sweep`.
* ``gaussmix figure sparse-setup|sparse-curves --out DIR`` writes ``DIR/<name>.csv`` and
  ``DIR/<name>.png`` (:mod:`gaussmix.figures`).
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
MODELS = ("isotropic", "block", "sparse")
PENALTIES = ("l2", "l1", "elastic-net")
#: default fraction of directions carrying the means in ``--model sparse`` (the paper's)
SPARSE_SPARSITY = 0.1

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
    antipodal means, the block model, ``--penalty l1|elastic-net`` with a loss other than
    cross-entropy), else 3; labels ``binary`` for logistic/hinge or the lasso / elastic
    net with K = 2, else ``onehot``; means ``antipodal`` for the block model with K = 2,
    else ``simplex`` (for K = 2 the two Gram matrices coincide).  The sparse model is
    always K = 2 with binary labels and its own (sparse) means.
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
        metavar="isotropic|block|sparse",
        help="Covariance model: isotropic Sigma_c = Delta_c I; block (blocks of directions "
        "with variances --deltas on fractions --fractions); sparse (the correlated sparse "
        "binary mixture of Section 3.1: means on a fraction --sparsity of the directions, "
        "variance --delta1 there and --delta2 elsewhere; K = 2, binary labels).",
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
    sparsity: float | None = _opt(
        None,
        float | None,
        "--sparsity",
        metavar="RHO",
        help="Sparse model: fraction of directions carrying the means, in (0, 1] "
        f"[default: {SPARSE_SPARSITY:g}].",
    )
    delta1: float | None = _opt(
        None,
        float | None,
        "--delta1",
        metavar="D1",
        help="Sparse model: variance on the directions of the means (> 0).",
    )
    delta2: float | None = _opt(
        None,
        float | None,
        "--delta2",
        metavar="D2",
        help="Sparse model: variance on the other directions (> 0).",
    )
    loss: str = _opt(
        "cross-entropy",
        str,
        "--loss",
        metavar="square|logistic|cross-entropy|hinge",
        help="Training loss.",
    )
    penalty: str = _opt(
        "l2",
        str,
        "--penalty",
        metavar="l2|l1|elastic-net",
        help="Penalty r(W): ridge ||W||^2/2, lasso ||W||_1, or elastic net "
        "l1_ratio ||W||_1 + (1 - l1_ratio) ||W||^2/2.  l1 and elastic-net need binary "
        "labels (one output) and lam > 0.",
    )
    l1_ratio: float | None = _opt(
        None,
        float | None,
        "--l1-ratio",
        metavar="R",
        help="Elastic-net mixing in [0, 1] (required with --penalty elastic-net, only "
        "valid there).",
    )
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
    sparsity: float | None = None
    delta1: float | None = None
    delta2: float | None = None
    l1_ratio: float | None = None


def _check_penalty_options(opts: PointOptions) -> float | None:
    """``--penalty`` / ``--l1-ratio``: one-line messages in option names."""
    if opts.penalty not in PENALTIES:
        allowed = ", ".join(repr(p) for p in PENALTIES)
        raise ValueError(f"--penalty must be one of {allowed}; got {opts.penalty!r}")
    r = opts.l1_ratio
    if opts.penalty == "elastic-net":
        if r is None:
            raise ValueError("--penalty elastic-net needs --l1-ratio R with R in [0, 1]")
        if not (math.isfinite(r) and 0.0 <= r <= 1.0):
            raise ValueError(f"--l1-ratio must be in [0, 1], got {r:g}")
        return float(r)
    if r is not None:
        raise ValueError(
            f"--l1-ratio is only valid with --penalty elastic-net (got --penalty {opts.penalty})"
        )
    return None


def _resolve_sparse(opts: PointOptions, loss: str) -> dict[str, Any]:
    """Checks and values of ``--model sparse`` (the correlated sparse binary mixture)."""
    for name, value in (
        ("--delta", opts.delta),
        ("--fractions", opts.fractions),
        ("--deltas", opts.deltas),
    ):
        if value is not None:
            raise ValueError(
                f"{name} cannot be used with --model sparse (give the variances with "
                "--delta1 on the support of the means and --delta2 elsewhere)"
            )
    if opts.means not in ("auto", "sparse"):
        raise ValueError(
            f"--means {opts.means} cannot be used with --model sparse (its means are "
            "sparse: N(0, 1) components on a fraction --sparsity of the directions)"
        )
    if opts.labels not in ("auto", "binary"):
        raise ValueError(f"--model sparse has binary labels (+1/-1); got --labels {opts.labels}")
    if opts.clusters is not None and opts.clusters != 2:
        raise ValueError(f"--model sparse has K = 2 clusters; got --clusters {opts.clusters}")
    if loss == "cross-entropy":
        raise ValueError(
            "--model sparse has binary labels (+1/-1): use --loss square, logistic or hinge "
            "(--loss cross-entropy, the default, needs one-hot labels)"
        )
    missing = [n for n, v in (("--delta1", opts.delta1), ("--delta2", opts.delta2)) if v is None]
    if missing:
        raise ValueError(
            "--model sparse needs --delta1 D1 (variance on the support of the means) and "
            f"--delta2 D2 (elsewhere); missing {' and '.join(missing)}"
        )
    sparsity = SPARSE_SPARSITY if opts.sparsity is None else opts.sparsity
    if not (math.isfinite(sparsity) and 0.0 < sparsity <= 1.0):
        raise ValueError(f"--sparsity must be in (0, 1], got {sparsity:g}")
    for name, v in (("--delta1", opts.delta1), ("--delta2", opts.delta2)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be > 0, got {v:g}")
    return {
        "sparsity": float(sparsity),
        "delta1": float(opts.delta1),
        "delta2": float(opts.delta2),
    }


def resolve_options(opts: PointOptions) -> ResolvedOptions:
    """Decide K, labels and means, and parse the comma lists (see :class:`PointOptions`)."""
    loss = get_loss(opts.loss).name  # validates the name
    if opts.model not in MODELS:
        allowed = ", ".join(repr(m) for m in MODELS)
        raise ValueError(f"--model must be one of {allowed}; got {opts.model!r}")
    l1_ratio = _check_penalty_options(opts)
    if opts.model == "sparse":
        sparse = _resolve_sparse(opts, loss)
        rho = parse_floats("--rho", opts.rho) if opts.rho is not None else None
        if rho is not None and len(rho) != 2:
            raise ValueError(
                f"--rho must be 2 comma-separated numbers with --model sparse (K = 2), "
                f"got {opts.rho!r}"
            )
        return ResolvedOptions(
            model="sparse",
            clusters=2,
            labels="binary",
            means="sparse",
            rho=rho,
            delta=None,
            fractions=None,
            deltas=None,
            loss=loss,
            penalty=opts.penalty,
            lam=opts.lam,
            alpha=opts.alpha,
            tol=opts.tol,
            max_iter=opts.max_iter,
            quad_order=opts.quad_order,
            l1_ratio=l1_ratio,
            **sparse,
        )
    for name, value in (
        ("--sparsity", opts.sparsity),
        ("--delta1", opts.delta1),
        ("--delta2", opts.delta2),
    ):
        if value is not None:
            raise ValueError(f"{name} is only valid with --model sparse")
    sparse_penalty = opts.penalty != "l2" and loss != "cross-entropy"
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
            or sparse_penalty
        ):
            k = 2
        else:
            k = 3

    means = opts.means
    if means == "auto":
        means = "antipodal" if block and k == 2 else "simplex"
    labels = opts.labels
    if labels == "auto":
        labels = "binary" if (loss in BINARY_LOSSES or sparse_penalty) and k == 2 else "onehot"
    if opts.penalty != "l2" and labels != "binary":
        hint = (
            "use --loss logistic with K = 2"
            if loss == "cross-entropy"
            else "use K = 2 with --labels binary"
        )
        raise ValueError(
            f"--penalty {opts.penalty} needs binary labels (+1/-1, one output: the "
            f"soft-threshold prior of Appendix C.2); got {labels} labels with K = {k} -- "
            f"{hint}, or --model sparse, or --penalty l2"
        )
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
        l1_ratio=l1_ratio,
    )


def mixture_from_options(opts: PointOptions | ResolvedOptions) -> Mixture:
    """Build the :class:`~gaussmix.mixture.Mixture` described by the point options."""
    r = opts if isinstance(opts, ResolvedOptions) else resolve_options(opts)
    if r.model == "sparse":
        return Mixture.sparse(r.sparsity, r.delta1, r.delta2, rho=r.rho)
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
    **setup.penalty_kw, **setup.solve_kw)``.
    """

    mixture: Mixture
    loss: str
    penalty: str
    lam: float
    alpha: float
    solve_kw: dict
    params: dict
    problem: Problem
    l1_ratio: float | None = None

    @property
    def penalty_kw(self) -> dict[str, Any]:
        """``{'penalty': ..., 'l1_ratio': ...}`` for the library's functions."""
        return {"penalty": self.penalty, "l1_ratio": self.l1_ratio}

    def check(self, *, lam: float | None = None, alpha: float | None = None) -> Problem:
        """Validate the problem at another ``lam`` / ``alpha`` (library checks)."""
        return make_problem(
            self.mixture,
            self.loss,
            lam=self.lam if lam is None else lam,
            alpha=self.alpha if alpha is None else alpha,
            **self.penalty_kw,
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
    problem = make_problem(
        mixture, r.loss, lam=r.lam, alpha=r.alpha, penalty=r.penalty, l1_ratio=r.l1_ratio
    )
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
    elif r.model == "sparse":
        params.update(sparsity=r.sparsity, delta1=r.delta1, delta2=r.delta2)
    else:
        params["delta"] = r.delta
    params.update(
        loss=r.loss,
        penalty=r.penalty,
        l1_ratio=r.l1_ratio,
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
        l1_ratio=r.l1_ratio,
    )


# ============================================================================ messages
#: library argument name -> command-line option
_OPTION_NAMES = {
    "quadrature order n": "--quad-order",
    "n_clusters": "--clusters",
    "sparsity": "--sparsity",
    "delta1": "--delta1",
    "delta2": "--delta2",
    "l1_ratio": "--l1-ratio",
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
    "simulate_d": "--d",
    "sim_alphas": "--sim-alphas",
    "ratios": "--ratios",
    "delta2s": "--delta2s",
    "lam_bounds[0]": "--lam-min",
    "lam_bounds[1]": "--lam-max",
    "d": "--d",
}
_NAME_RE = re.compile(
    r"(?<![\w-])("
    + "|".join(re.escape(n) for n in sorted(_OPTION_NAMES, key=len, reverse=True))
    + r")(?=\s+must\b|\s+has\b|\s+implies\b|=|:)"
)


def option_message(message: str) -> str:
    """Rewrite the library's argument names (``lam must be ...``) as options (``--lam``)."""
    text = _NAME_RE.sub(lambda m: _OPTION_NAMES[m.group(1)], message)
    return text.replace("gaussmix.optimal_lambda", "gaussmix optimal-lambda")


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
    elif params["model"] == "sparse":
        cov = (
            f"sparse sparsity={_fmt(params['sparsity'])} delta1={_fmt(params['delta1'])} "
            f"delta2={_fmt(params['delta2'])}"
        )
    else:
        cov = f"isotropic delta={_fmt(params['delta'])}"
    penalty = params["penalty"]
    if params.get("l1_ratio") is not None:
        penalty += f" (l1_ratio={_fmt(params['l1_ratio'])})"
    return (
        f"K={params['clusters']} ({params['labels']} labels, {params['means']} means, "
        f"rho={_fmt(params['rho'])}), {cov}; {params['loss']} loss, {penalty} "
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
    if setup.penalty != "l2":
        rows.insert(4, ("nonzero_fraction", payload["nonzero_fraction"]))
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
#: default search interval of ``gaussmix optimal-lambda`` (the library's)
OPTIMAL_LAM_MIN = 1e-5
OPTIMAL_LAM_MAX = 1e2


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
        **setup.penalty_kw,
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
        **setup.penalty_kw,
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


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the parameter ``name`` was given on the command line (not defaulted)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


@app.command("optimal-lambda")
@point_options
def optimal_lambda_command(
    ctx: typer.Context,
    opts: PointOptions,
    lam_min: Annotated[
        float,
        typer.Option(
            "--lam-min",
            metavar="LAMBDA",
            help="Lower end of the coarse search grid (> 0); the search goes two decades "
            "below it while the test error still decreases there.",
        ),
    ] = OPTIMAL_LAM_MIN,
    lam_max: Annotated[
        float,
        typer.Option(
            "--lam-max",
            metavar="LAMBDA",
            help="Upper end of the coarse search grid (> --lam-min); extended likewise.",
        ),
    ] = OPTIMAL_LAM_MAX,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (machine-readable).")
    ] = False,
) -> None:
    """The penalty minimising the test error at one alpha, lambda* = argmin eps_g.

    Takes the options of ``point`` except --lam.  A log grid on [--lam-min, --lam-max],
    extended while the best point is at an end, then a bounded minimisation in
    log lambda.  When the test error decreases all the way to the smallest penalty
    solved, the optimum is the boundary lambda -> 0+ (basis pursuit for the lasso):
    lam_star is 0 and at_boundary true; the errors are those of the smallest penalty
    solved (lam_min).  Likewise at_upper_bound (lam_star infinite, null in JSON).
    With --json: lam_star, at_boundary, at_upper_bound, lam_min, lam_max (smallest and
    largest penalty solved), derivative (d test_error / d lambda there),
    n_evaluations, search_message, then the keys of ``point --json`` at the returned
    fixed point (params.lam is its penalty).
    """
    from ._validation import check_real
    from .experiments import optimal_lambda
    from .problem import LAM_MAX

    if _given(ctx, "lam"):
        raise ValueError(
            "--lam cannot be used with optimal-lambda (it searches lambda; set the search "
            "interval with --lam-min and --lam-max)"
        )
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
    fp = res.result
    if fp is None or not fp.converged:
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
    payload = {
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
    if json_out:
        typer.echo(json.dumps(_finite_or_none(payload), allow_nan=False))
        return
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
    ]
    if setup.penalty != "l2":
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
    keys = ["test_error", "train_error", "train_loss"]
    if setup.penalty != "l2" and "nonzero_fraction_se" in payload:
        keys.append("nonzero_fraction")
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
        **setup.penalty_kw,
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


# ============================================================================ figures
#: options of ``gaussmix figure`` that only one figure uses (parameter -> figure)
_FIGURE_ONLY = {
    "ratios": "sparse-setup",
    "delta2": "sparse-setup",
    "delta1": "sparse-curves",
    "delta2s": "sparse-curves",
    "sim_alphas": "sparse-curves",
    "d": "sparse-curves",
    "seeds": "sparse-curves",
    "seed": "sparse-curves",
    "jobs": "sparse-curves",
}
#: simulation options of ``gaussmix figure sparse-curves``
_FIGURE_SIM = ("sim_alphas", "d", "seeds", "seed", "jobs")


def _option_of(ctx: typer.Context, name: str) -> str:
    for p in ctx.command.params:
        if p.name == name:
            return max(p.opts, key=len)
    return "--" + name.replace("_", "-")


@app.command("figure")
def figure_command(
    ctx: typer.Context,
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="sparse-setup (Fig. 1 right: lasso sparsity and lambda* vs alpha) or "
            "sparse-curves (Fig. 2: ridge vs lasso at lambda*, theory and simulation).",
        ),
    ],
    out: OutOption = Path("gaussmix-out"),
    alphas: Annotated[
        str | None,
        typer.Option(
            "--alphas",
            metavar="[log:]START:STOP:NUM",
            help="Theory grid of alpha = n/d [default: log:0.1:5:25 for sparse-setup, "
            "log:0.1:3:20 for sparse-curves].",
        ),
    ] = None,
    loss: Annotated[
        str, typer.Option("--loss", metavar="square|logistic|hinge", help="Training loss.")
    ] = "square",
    sparsity: Annotated[
        float,
        typer.Option("--sparsity", metavar="RHO", help="Fraction of directions with means."),
    ] = 0.1,
    ratios: Annotated[
        str,
        typer.Option(
            "--ratios",
            metavar="r1,...",
            help="sparse-setup: anisotropy ratios Delta1/Delta2, one curve each.",
        ),
    ] = "1,0.1,0.01",
    delta2: Annotated[
        float,
        typer.Option("--delta2", metavar="D2", help="sparse-setup: variance off the support."),
    ] = 1.0,
    delta1: Annotated[
        float,
        typer.Option("--delta1", metavar="D1", help="sparse-curves: variance on the support."),
    ] = 0.1,
    delta2s: Annotated[
        str,
        typer.Option(
            "--delta2s",
            metavar="d1,...",
            help="sparse-curves: variances off the support, one colour each.",
        ),
    ] = "0.01,0.1,1,10",
    simulate: Annotated[
        bool,
        typer.Option(
            "--simulate/--no-simulate",
            help="sparse-curves: simulation dots (finite-size ERM); sparse-setup has none.",
        ),
    ] = True,
    sim_alphas: Annotated[
        str,
        typer.Option(
            "--sim-alphas",
            metavar="a1,...",
            help="sparse-curves: simulated alphas (rounded to an even n = alpha d).",
        ),
    ] = "0.3,0.7,1.5,3",
    d: DOption = 1000,
    seeds: Annotated[
        int, _seeds_option("sparse-curves: instances per simulated point (error bars).")
    ] = 8,
    seed: SeedOption = 0,
    jobs: JobsOption = -1,
    quiet: QuietOption = False,
) -> None:
    """A figure of the paper: writes DIR/NAME.csv and DIR/NAME.png.

    sparse-setup (Fig. 1 right): the fraction of non-zero weights of the lasso at its
    optimal penalty and lambda* itself against alpha, for ratios Delta1/Delta2 at
    sparsity 0.1 (Delta2 = 1); where lambda* -> 0+ (basis pursuit) the table has
    lam_star = 0, at_boundary = true and the plot a triangle on the bottom edge.
    About 12 s.

    sparse-curves (Fig. 2): test error and training loss of ridge (dashed) and lasso
    (solid) at their optimal penalties against alpha, Delta1 = 0.1 and several Delta2,
    with simulations (d = 1000, 8 seeds, square loss by coordinate descent) at four
    alphas.  About a minute on 2 cores (12 s with --no-simulate).
    """
    from .figures import FIGURES, validate_figure, write_figure

    if name not in FIGURES:
        allowed = ", ".join(repr(n) for n in FIGURES)
        raise ValueError(f"NAME must be one of {allowed}; got {name!r}")
    for param, only in _FIGURE_ONLY.items():
        if only != name and _given(ctx, param):
            raise ValueError(f"{_option_of(ctx, param)} is only valid with figure {only}")
    if name == "sparse-setup" and _given(ctx, "simulate") and simulate:
        raise ValueError("--simulate is only valid with figure sparse-curves")
    if name == "sparse-curves" and not simulate:
        for param in _FIGURE_SIM:
            if _given(ctx, param):
                raise ValueError(f"{_option_of(ctx, param)} cannot be used with --no-simulate")
    kw: dict[str, Any] = {"loss": loss, "sparsity": sparsity, "progress": not quiet}
    if alphas is not None:
        kw["alphas"] = _parse_range("--alphas", alphas, positive=True)
    if name == "sparse-setup":
        kw.update(ratios=parse_floats("--ratios", ratios), delta2=delta2)
    else:
        kw.update(delta1=delta1, delta2s=parse_floats("--delta2s", delta2s), simulate=simulate)
        if simulate:
            kw.update(
                sim_alphas=parse_floats("--sim-alphas", sim_alphas),
                simulate_d=d,
                seeds=seeds,
                seed=seed,
                n_jobs=jobs,
            )
    validate_figure(name, **kw)
    out = _make_out_dir(out)
    with _one_blas_thread() if kw.get("simulate") else contextlib.nullcontext():
        res = write_figure(name, out, **kw)
    _report_curve(res.data, (res.csv, res.png))


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
