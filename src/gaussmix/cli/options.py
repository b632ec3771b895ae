"""Point options: the parameters of one learning problem as the command line and sweep
grids spell them, and their translation into library objects.

:class:`PointOptions` lists every option once (its default and its command-line form);
:func:`build_point` resolves the automatic choices (K, labels, means), validates everything
through the library and returns a :class:`PointSetup` (mixture, loss, penalty, solver keyword
arguments and JSON-friendly ``params``).  Used by the commands and by
:mod:`gaussmix.cli.grid` (which turns them into the sweep's point specifications); no
mathematics lives here, and typer is imported only when a command is built.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from gaussmix.theory.losses import LOSSES, get_loss
from gaussmix.theory.mixture import MIXTURE_MODELS, Mixture
from gaussmix.theory.penalties import PENALTIES as PENALTY_REGISTRY
from gaussmix.theory.tolerances import FIXED_POINT_MAX_ITER, FIXED_POINT_TOL

if typing.TYPE_CHECKING:  # the theory's solver modules load when a point is built
    from gaussmix.theory.problem import Problem

__all__ = [
    "PointOptions",
    "ResolvedOptions",
    "PointSetup",
    "point_options",
    "with_signature",
    "resolve_options",
    "mixture_from_options",
    "build_point",
    "parse_floats",
    "BINARY_LOSSES",
    "MODELS",
    "PENALTIES",
    "SPARSE_SPARSITY",
]

#: losses whose labels are the scalars +1 / -1 (as the losses declare)
BINARY_LOSSES = tuple(c.name for c in LOSSES if c.labels == "binary")
#: mixture models built from options (the parametric ones)
MODELS = tuple(m.name for m in MIXTURE_MODELS if m.parametric)
PENALTIES = PENALTY_REGISTRY.names()
#: default fraction of directions carrying the means in ``--model sparse`` (the paper's)
SPARSE_SPARSITY = 0.1


# ============================================================================ options
def _opt(default: Any, type_: Any, *decls: str, help: str, metavar: str | None = None) -> Any:
    """A dataclass field that also describes its command-line option (plain data: the
    typer option is made from it by :func:`point_options`, so that this module does not
    import typer)."""
    option = {
        "decls": decls,
        "help": help,
        "metavar": metavar,
        "show_default": default is not None,
    }
    return field(default=default, metadata={"cli_type": type_, "cli_option": option})


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
        metavar="|".join(MODELS),
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
        metavar="|".join(LOSSES.names()),
        help="Training loss.",
    )
    penalty: str = _opt(
        "l2",
        str,
        "--penalty",
        metavar="|".join(PENALTIES),
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
    tol: float = _opt(
        FIXED_POINT_TOL, float, "--tol", help="Solver tolerance on the order parameters."
    )
    max_iter: int = _opt(
        FIXED_POINT_MAX_ITER,
        int,
        "--max-iter",
        metavar="N",
        help="Maximum fixed-point iterations per point.",
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


_FIELDS = {f.name: f for f in dataclasses.fields(PointOptions)}


@functools.cache
def _typer_option(name: str) -> Any:
    """The typer option of a :class:`PointOptions` field (made once, when a command needs it)."""
    import typer

    spec = _FIELDS[name].metadata["cli_option"]
    return typer.Option(
        *spec["decls"],
        help=spec["help"],
        metavar=spec["metavar"],
        show_default=spec["show_default"],
    )


def _annotation(f: dataclasses.Field) -> Any:
    type_ = f.metadata["cli_type"]
    return Annotated[type_, _typer_option(f.name)]


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
    # the command's own annotations, resolved where it was written (they may be strings
    # naming typer there: the wrapper's globals are this module's, which lacks typer)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except (NameError, TypeError):  # left to typer, as before
        hints = {}
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(p.name, p.annotation))
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

    return with_signature(wrapper, sig, added + own)


def with_signature(
    wrapper: Callable[..., Any], sig: inspect.Signature, params: list[inspect.Parameter]
) -> Callable[..., Any]:
    """``wrapper`` (made with :func:`functools.wraps`) presenting ``sig`` with the
    parameters ``params`` to typer: the wrapped function's signature is hidden, so that
    typer builds the command's options from ``params``."""
    del wrapper.__wrapped__  # type: ignore[attr-defined]
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
    if opts.penalty not in PENALTY_REGISTRY:
        allowed = ", ".join(repr(p) for p in PENALTIES)
        raise ValueError(f"--penalty must be one of {allowed}; got {opts.penalty!r}")
    r = opts.l1_ratio
    if PENALTY_REGISTRY.get(opts.penalty).takes_l1_ratio:
        if r is None:
            raise ValueError(f"--penalty {opts.penalty} needs --l1-ratio R with R in [0, 1]")
        if not (math.isfinite(r) and 0.0 <= r <= 1.0):
            raise ValueError(f"--l1-ratio must be in [0, 1], got {r:g}")
        return float(r)
    if r is not None:
        takers = " or ".join(p.name for p in PENALTY_REGISTRY if p.takes_l1_ratio)
        raise ValueError(
            f"--l1-ratio is only valid with --penalty {takers} (got --penalty {opts.penalty})"
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
    if get_loss(loss).labels == "onehot":
        usable = [c.name for c in LOSSES if c.labels != "onehot"]
        raise ValueError(
            f"--model sparse has binary labels (+1/-1): use --loss {', '.join(usable[:-1])} "
            f"or {usable[-1]} (--loss {loss}"
            + (", the default," if loss == PointOptions.loss else "")
            + " needs one-hot labels)"
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


def _sparse_model(opts: PointOptions, loss: str, l1_ratio: float | None) -> ResolvedOptions:
    """``--model sparse``: K = 2, binary labels, sparse means (see :func:`_resolve_sparse`)."""
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


def _covariances(opts: PointOptions) -> tuple[Any, Any, Any]:
    """``(fractions, deltas, delta)`` of the block model (``--fractions``, ``--deltas``) or
    of the isotropic one (``--delta``); the other model's options are refused."""
    for name, value in (
        ("--sparsity", opts.sparsity),
        ("--delta1", opts.delta1),
        ("--delta2", opts.delta2),
    ):
        if value is not None:
            raise ValueError(f"{name} is only valid with --model sparse")
    if opts.model == "block":
        if opts.delta is not None:
            raise ValueError(
                "--delta cannot be used with --model block (give the block variances with "
                "--deltas and their fractions with --fractions)"
            )
        if opts.fractions is None or opts.deltas is None:
            raise ValueError("--model block needs --fractions f1,...,fB and --deltas s1,...,sB")
        return (
            parse_floats("--fractions", opts.fractions),
            parse_floats("--deltas", opts.deltas),
            None,
        )
    for name, value in (("--fractions", opts.fractions), ("--deltas", opts.deltas)):
        if value is not None:
            raise ValueError(f"{name} is only valid with --model block")
    return None, None, _parse_delta(opts.delta)


def _check_given_clusters(opts: PointOptions, rho: list[float] | None, delta: Any) -> int:
    """``--clusters K``, checked against the lengths of ``--rho`` and ``--delta``."""
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
    return k


def _infer_clusters(
    opts: PointOptions, loss: str, rho: list[float] | None, delta: Any, sparse_penalty: bool
) -> int:
    """K: ``--clusters``, else the length of ``--rho`` / ``--delta`` lists, else 2 for binary
    problems, else 3 (see :class:`PointOptions`)."""
    if opts.clusters is not None:
        return _check_given_clusters(opts, rho, delta)
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
        return k
    block = opts.model == "block"
    binary = (
        opts.labels == "binary"
        or loss in BINARY_LOSSES
        or opts.means == "antipodal"
        or (block and opts.means == "auto")
        or sparse_penalty
    )
    return 2 if binary else 3


def _labels_and_means(
    opts: PointOptions, loss: str, k: int, sparse_penalty: bool
) -> tuple[str, str]:
    """The ``auto`` label map and means decided for K = ``k`` (binary for K = 2 with a
    binary loss or, with a loss that takes either, an l1 / elastic-net penalty)."""
    means = opts.means
    if means == "auto":
        means = "antipodal" if opts.model == "block" and k == 2 else "simplex"
    labels = opts.labels
    if labels == "auto":
        labels = "binary" if (loss in BINARY_LOSSES or sparse_penalty) and k == 2 else "onehot"
    return labels, means


def resolve_options(opts: PointOptions) -> ResolvedOptions:
    """Decide K, labels and means, and parse the comma lists (see :class:`PointOptions`)."""
    loss = get_loss(opts.loss).name  # validates the name
    if opts.model not in MODELS:
        allowed = ", ".join(repr(m) for m in MODELS)
        raise ValueError(f"--model must be one of {allowed}; got {opts.model!r}")
    l1_ratio = _check_penalty_options(opts)
    if opts.model == "sparse":
        return _sparse_model(opts, loss, l1_ratio)
    # a penalty with one output per sample makes a binary problem, unless the loss needs
    # one-hot labels (then the labels check reports the conflict)
    sparse_penalty = (
        PENALTY_REGISTRY.get(opts.penalty).binary_default and get_loss(loss).labels != "onehot"
    )
    fractions, deltas, delta = _covariances(opts)
    rho = parse_floats("--rho", opts.rho) if opts.rho is not None else None
    k = _infer_clusters(opts, loss, rho, delta, sparse_penalty)
    labels, means = _labels_and_means(opts, loss, k, sparse_penalty)
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
    """Build the :class:`~gaussmix.theory.mixture.Mixture` described by the point options."""
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
        """The validated problem at another ``lam`` / ``alpha``: the checks of
        :func:`~gaussmix.theory.problem.make_problem` that depend on them (the mixture, loss and
        penalty were validated when the setup was built, and do not change)."""
        from gaussmix.theory.problem import check_lam_alpha

        lam_v, alpha_v = check_lam_alpha(
            self.lam if lam is None else lam,
            self.alpha if alpha is None else alpha,
            loss=self.problem.loss,
            penalty=self.problem.penalty_spec,
            mixture=self.problem.mixture,
        )
        return self.problem.with_lam_alpha(lam_v, alpha_v)

    def at(self, *, lam: float | None = None, alpha: float | None = None) -> PointSetup:
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
    from gaussmix.theory.problem import make_problem
    from gaussmix.theory.quadrature import GaussHermite

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
