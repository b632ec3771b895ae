"""Point options: the parameters of one learning problem as the command line, sweep grids
and the explorer spell them, and their translation into library objects.

:class:`PointOptions` lists every option once (its default and its command-line form, as
plain data); :func:`build_point` resolves the automatic choices (K, labels, means),
validates everything through the library and returns a :class:`PointSetup` (mixture, loss,
penalty, solver keyword arguments and JSON-friendly ``params``).  Used by the commands (whose
typer options :mod:`gaussmix.cli.options` makes from the fields), by
:mod:`gaussmix.cli.grid` (which turns them into the sweep's point specifications) and by the
explorer (:mod:`gaussmix.explore.state`); no mathematics lives here, and no command-line
framework is imported.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaussmix.core.exceptions import ArgumentError, ArgumentTypeError
from gaussmix.core.renames import renamed_keywords
from gaussmix.core.validation import PARAMETERS, check_int, check_param
from gaussmix.theory.channel.losses import BINARY_LOSSES, LOSSES, get_loss
from gaussmix.theory.model.labels import infer_n_clusters
from gaussmix.theory.model.mixture import MIXTURE_MODELS, Mixture, MixtureModel, parametric_model
from gaussmix.theory.model.penalties import PENALTIES as PENALTY_REGISTRY
from gaussmix.theory.model.penalties import make_penalty

if typing.TYPE_CHECKING:  # the theory's solver modules load when a point is built
    from gaussmix.theory.problem.problem import Problem

__all__ = [
    "PointOptions",
    "ResolvedOptions",
    "PointSetup",
    "resolve_options",
    "mixture_from_options",
    "mixture_arguments",
    "read_mixture_file",
    "build_point",
    "parse_floats",
    "integer_parser",
    "POINT_FLAGS",
    "SOLVER_OPTIONS",
    "SOLVER_EXCLUDED",
    "SOLVER_PANEL",
    "solver_keywords",
    "changed_solver_options",
    "MODELS",
    "PENALTIES",
    "SPARSE_SPARSITY",
]

#: mixture models built from options (the parametric ones)
MODELS = tuple(m.name for m in MIXTURE_MODELS if m.parametric)
PENALTIES = PENALTY_REGISTRY.names()
#: default fraction of directions carrying the means in ``--model sparse`` (the paper's)
SPARSE_SPARSITY = 0.1


# ============================================================================ options
def _opt(
    default: Any,
    type_: Any,
    *decls: str,
    help: str,
    metavar: str | None = None,
    builds_mixture: bool = False,
    parser: str | None = None,
    panel: str | None = None,
) -> Any:
    """A dataclass field that also describes its command-line option (plain data: the
    typer option is made from it by :func:`gaussmix.cli.options.point_options`, so that
    this module imports no command-line framework).  ``builds_mixture``: an option that
    builds the mixture (refused with ``--mixture FILE``, whose file defines it).
    ``parser``: the fact of :data:`~gaussmix.core.validation.PARAMETERS` whose type the
    option's text is read as (:func:`integer_parser`: a float is refused with the library's
    message).  ``panel``: the help panel that lists the option (None: the command's own)."""
    option = {
        "decls": decls,
        "help": help,
        "metavar": metavar,
        "show_default": default is not None,
        "parser": parser,
        "panel": panel,
    }
    meta = {"cli_type": type_, "cli_option": option, "builds_mixture": builds_mixture}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class _ProblemOptions:
    """The options that define one point (mixture + estimator + lam + alpha), as typed;
    :class:`PointOptions` adds the solver's options (:data:`SOLVER_OPTIONS`).

    Field defaults are the command-line defaults.  ``'auto'`` values and a missing
    ``n_clusters`` are resolved by :func:`resolve_options`: K from ``--rho`` / ``--delta``
    lists, else 2 for binary problems (``--labels binary``, ``--loss logistic|hinge``,
    antipodal means, the block model, ``--penalty l1|elastic-net`` with a loss other than
    cross-entropy), else 3; labels ``binary`` for logistic/hinge or the lasso / elastic
    net with K = 2, else ``onehot``; means ``antipodal`` for the block model with K = 2,
    else ``simplex`` (for K = 2 the two Gram matrices coincide).  The sparse model is
    always K = 2 with binary labels and its own (sparse) means.  (What a model takes and
    chooses is its declaration in :data:`~gaussmix.theory.model.mixture.MIXTURE_MODELS`.)
    ``mixture``: a mixture file (:meth:`~gaussmix.theory.model.mixture.Mixture.save`) in place
    of every option that builds a mixture (``builds_mixture`` in the field's metadata).
    """

    mixture: str | None = _opt(
        None,
        str | None,
        "--mixture",
        metavar="FILE",
        help="A mixture file (.npz, written by gaussmix.Mixture.save: means, covariances or "
        "spectra, priors, labels; e.g. fitted to data by Mixture.from_data) in place of the "
        "mixture options (--n-clusters ... --delta2), which it excludes.",
    )
    n_clusters: int | None = _opt(
        None,
        int | None,
        "--n-clusters",
        "-K",
        metavar="K",
        help="Number of clusters K [default: from --rho/--delta, 2 for binary problems, else 3].",
        builds_mixture=True,
        parser="n_clusters",
    )
    labels: str = _opt(
        "auto",
        str,
        "--labels",
        metavar="auto|onehot|binary",
        help="Label map: one-hot y_c = e_c, or binary (K = 2: cluster 1 -> +1, cluster 2 -> -1); "
        "auto: binary for logistic/hinge, else one-hot.",
        builds_mixture=True,
    )
    rho: str | None = _opt(
        None,
        str | None,
        "--rho",
        metavar="r1,...,rK",
        help="Cluster priors, K comma-separated numbers summing to 1 [default: balanced].",
        builds_mixture=True,
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
        builds_mixture=True,
    )
    delta: str | None = _opt(
        None,
        str | None,
        "--delta",
        metavar="d|d1,...,dK",
        help="Isotropic cluster variance Delta, shared or one per cluster [default: 0.5].",
        builds_mixture=True,
    )
    means: str = _opt(
        "auto",
        str,
        "--means",
        metavar="auto|simplex|gaussian|antipodal",
        help="Family of cluster means (unit norm); auto: simplex, antipodal for the block model.",
        builds_mixture=True,
    )
    fractions: str | None = _opt(
        None,
        str | None,
        "--fractions",
        metavar="f1,...,fB",
        help="Block model: fractions of directions in each block (sum to 1).",
        builds_mixture=True,
    )
    deltas: str | None = _opt(
        None,
        str | None,
        "--deltas",
        metavar="s1,...,sB",
        help="Block model: covariance eigenvalue of each block (shared by the clusters).",
        builds_mixture=True,
    )
    sparsity: float | None = _opt(
        None,
        float | None,
        "--sparsity",
        metavar="RHO",
        help="Sparse model: fraction of directions carrying the means, in (0, 1] "
        f"[default: {SPARSE_SPARSITY:g}].",
        builds_mixture=True,
    )
    delta1: float | None = _opt(
        None,
        float | None,
        "--delta1",
        metavar="D1",
        help="Sparse model: variance on the directions of the means (> 0).",
        builds_mixture=True,
    )
    delta2: float | None = _opt(
        None,
        float | None,
        "--delta2",
        metavar="D2",
        help="Sparse model: variance on the other directions (> 0).",
        builds_mixture=True,
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
        help="Elastic-net mixing in [0, 1] (required with --penalty elastic-net; l2 and l1 "
        "take only the value they imply, 0 and 1).",
    )
    lam: float = _opt(
        1.0,
        float,
        "--lam",
        metavar="LAMBDA",
        help=f"Penalty strength lambda, {PARAMETERS['lam']}.",
    )
    alpha: float = _opt(
        2.0,
        float,
        "--alpha",
        metavar="ALPHA",
        help=f"Sample complexity n/d, {PARAMETERS['alpha']}.",
    )

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Names of the fields (= keyword parameters added by
        :func:`gaussmix.cli.options.point_options`)."""
        return tuple(f.name for f in dataclasses.fields(cls))


# ============================================================================ solver options
#: help panel of the solver's options in ``--help``
SOLVER_PANEL = "Solver options"
#: the fields of :class:`~gaussmix.theory.solve.options.SolverOptions` that are no option of the
#: commands, with the reason (every other field is one, by its name with dashes)
SOLVER_EXCLUDED = {
    "quadrature": "a rule object is no flag: --quad-order N gives "
    "quadrature=GaussHermite(N, L), N Gauss-Hermite nodes per output dimension "
    "(default: the library's automatic rule)",
    "throw": "the commands' exit-status contract: a point without a valid fixed point "
    "exits 3 (a table writes it as NaN with converged False, and exits 3)",
}


def _solver_fields() -> list[tuple[str, Any, Any]]:
    """The point options of the solver: one per field of
    :class:`~gaussmix.theory.solve.options.SolverOptions` (its default, type and the first
    sentence of its documentation, :func:`~gaussmix.theory.solve.options.option_summaries`),
    ``quadrature`` as ``--quad-order`` and :data:`SOLVER_EXCLUDED` left out; in the fields'
    order, for :func:`dataclasses.make_dataclass`."""
    from gaussmix.theory.solve.options import SolverOptions, option_summaries

    summaries = option_summaries()
    hints = typing.get_type_hints(SolverOptions)
    out: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(SolverOptions):
        if f.name == "quadrature":
            out.append(
                (
                    "quad_order",
                    int | None,
                    _opt(
                        None,
                        int | None,
                        "--quad-order",
                        metavar="N",
                        help="Gauss-Hermite nodes per output dimension: the rule "
                        "quadrature=GaussHermite(N, L) [default: the library's automatic rule].",
                        panel=SOLVER_PANEL,
                    ),
                )
            )
            continue
        if f.name in SOLVER_EXCLUDED:
            continue
        type_ = hints[f.name]
        flag = "--" + f.name.replace("_", "-")
        if type_ is bool:
            decls: tuple[str, ...] = (f"{flag}/--no-{flag[2:]}",)
            metavar = None
        else:
            decls = (flag,)
            metavar = "N" if int in (set(typing.get_args(type_)) or {type_}) else f.name.upper()
        default = f.default
        out.append(
            (
                f.name,
                type_,
                _opt(
                    default,
                    type_,
                    *decls,
                    metavar=metavar,
                    help=summaries[f.name],
                    panel=SOLVER_PANEL,
                ),
            )
        )
    return out


PointOptions = dataclasses.make_dataclass(
    "PointOptions", _solver_fields(), bases=(_ProblemOptions,), frozen=True
)
PointOptions.__module__ = __name__
PointOptions.__doc__ = (_ProblemOptions.__doc__ or "") + (
    "\n    The solver's options follow (:data:`SOLVER_OPTIONS`): the fields of\n"
    "    :class:`~gaussmix.theory.solve.options.SolverOptions` by their names, ``quad_order``"
    " for\n"
    "    ``quadrature`` (a Gauss-Hermite rule), except :data:`SOLVER_EXCLUDED`.\n"
)
#: the solver's options of every command that solves fixed points, by the names of
#: :func:`gaussmix.solve` (``quad_order`` is the command line's form of
#: ``quadrature=GaussHermite(quad_order, L)``)
SOLVER_OPTIONS = tuple(name for name, _, _ in _solver_fields())

#: ``PointOptions(clusters=...)`` (before 1.0) warns and means ``n_clusters``
PointOptions.__init__ = renamed_keywords(clusters="n_clusters")(PointOptions.__init__)  # type: ignore[method-assign]
_FIELDS = {f.name: f for f in dataclasses.fields(PointOptions)}
#: keyword -> command-line flag of every point option (the keyword with dashes)
POINT_FLAGS = {
    name: f.metadata["cli_option"]["decls"][0].split("/")[0] for name, f in _FIELDS.items()
}


# ============================================================================ parsing
def integer_parser(fact: str, flag: str) -> Callable[[Any], int]:
    """The parser of an integer option ``flag`` holding a value of ``fact``: the text of an
    integer is the integer (its range is the library's to check, which names the
    argument); anything else (``2.5``, ``x``) is refused with the message of
    :func:`~gaussmix.core.validation.check_param`, e.g. ``--n-clusters must be an integer
    >= 2, got 2.5 (float)`` (a ``TypeError``: click would replace a ``ValueError`` by its
    generic message)."""

    def parse(text: Any) -> int:
        if isinstance(text, int) and not isinstance(text, bool):
            return text
        value: Any = str(text).strip()
        for kind in (int, float):
            try:
                value = kind(value)
                break
            except ValueError:
                continue
        if isinstance(value, int):
            return value
        if fact in PARAMETERS:  # raises: not an integer
            check_param(fact, value, name=flag)
        check_int(flag, value)
        raise AssertionError(f"{fact}: {value!r} passed as an integer")  # pragma: no cover

    parse.__name__ = fact
    return parse


def parse_floats(option: str, text: str) -> list[float]:
    """Parse ``'a,b,c'`` into floats; an :class:`~gaussmix.core.exceptions.ArgumentError`
    names ``option`` (a flag, or the keyword of a point option: the command line then says
    its flag, and the explorer shows the message under the field of that name)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        if not parts or any(p == "" for p in parts):
            raise ValueError
        return [float(p) for p in parts]
    except ValueError:
        raise ArgumentError(option, f"must be comma-separated numbers, got {text!r}") from None


def _parse_delta(text: str | None) -> float | list[float]:
    if text is None:
        return 0.5
    values = parse_floats("delta", text)
    return values[0] if len(values) == 1 else values


def _parse_sparsity(value: float | None) -> float:
    return SPARSE_SPARSITY if value is None else value


#: how the options that are a model's own parameters (MixtureModel.parameters) are read
#: (their values are the model's constructor's to check, naming the keyword)
_PARSERS: dict[str, Callable[[Any], Any]] = {
    "delta": _parse_delta,
    "fractions": functools.partial(parse_floats, "fractions"),
    "deltas": functools.partial(parse_floats, "deltas"),
    "sparsity": _parse_sparsity,
    "delta1": lambda value: value,
    "delta2": lambda value: value,
}


@dataclass(frozen=True)
class ResolvedOptions:
    """:class:`PointOptions` with every ``auto`` value decided and every list parsed (the
    model's own parameters, :attr:`MixtureModel.parameters`, set; the others None)."""

    model: str
    n_clusters: int
    labels: str
    means: str
    rho: list[float] | None
    loss: str
    penalty: str
    lam: float
    alpha: float
    #: the solver's options (:data:`SOLVER_OPTIONS`): name -> value
    solver: dict[str, Any]
    delta: float | list[float] | None = None
    fractions: list[float] | None = None
    deltas: list[float] | None = None
    sparsity: float | None = None
    delta1: float | None = None
    delta2: float | None = None
    l1_ratio: float | None = None
    #: the mixture read from ``--mixture FILE`` (then the model options above describe it)
    loaded: Mixture | None = None


def _resolved(
    opts: PointOptions, loss: str, l1_ratio: float | None, **mixture: Any
) -> ResolvedOptions:
    """The resolved options: the mixture's fields given, the estimator's and the solver's
    taken from ``opts``."""
    return ResolvedOptions(
        **mixture,
        loss=loss,
        penalty=opts.penalty,
        lam=opts.lam,
        alpha=opts.alpha,
        solver={name: getattr(opts, name) for name in SOLVER_OPTIONS},
        l1_ratio=l1_ratio,
    )


def _check_penalty_options(opts: PointOptions) -> float | None:
    """``--penalty`` / ``--l1-ratio`` checked by
    :func:`~gaussmix.theory.model.penalties.make_penalty`
    (its errors name ``penalty`` / ``l1_ratio``, said with their flags); the mixing
    parameter the user gave, None for a penalty that takes none."""
    return make_penalty(opts.penalty, opts.l1_ratio).user_l1_ratio


def _model_parameters(opts: PointOptions, model: MixtureModel) -> dict[str, Any]:
    """The model's own options (:attr:`MixtureModel.parameters`), read; another model's
    own option, or a missing required one, is refused by
    :meth:`MixtureModel.check_parameters` (naming the keyword, said with its flag)."""
    model.check_parameters({name: getattr(opts, name) for name in _MODEL_PARAMETERS})
    return {name: _PARSERS[name](getattr(opts, name)) for name in model.parameters}


#: the options that are some model's own parameter
_MODEL_PARAMETERS = tuple(dict.fromkeys(n for m in MIXTURE_MODELS for n in m.parameters))


def _binary_model(
    opts: PointOptions, model: MixtureModel, loss: str, l1_ratio: float | None
) -> ResolvedOptions:
    """A model defined for K = 2 with binary labels only (``--model sparse``): ``auto``
    labels, K and means are the model's; other values are passed on, for its constructor
    to refuse (naming the keyword)."""
    own = _model_parameters(opts, model)
    means = model.own_means or model.pair_means
    rho = parse_floats("rho", opts.rho) if opts.rho is not None else None
    return _resolved(
        opts,
        loss,
        l1_ratio,
        model=model.name,
        n_clusters=2 if opts.n_clusters is None else opts.n_clusters,
        labels="binary" if opts.labels == "auto" else opts.labels,
        means=means if opts.means == "auto" else opts.means,
        rho=rho,
        **own,
    )


def _infer_clusters(
    opts: PointOptions,
    model: MixtureModel,
    loss: str,
    rho: list[float] | None,
    delta: Any,
    sparse_penalty: bool,
) -> int:
    """K (:func:`~gaussmix.theory.model.labels.infer_n_clusters`): ``--n-clusters``, else the
    length
    of ``--rho`` / ``--delta`` lists, else 2 for binary problems, else 3 (see
    :class:`PointOptions`)."""
    antipodal = opts.means == "antipodal" or (
        opts.means == "auto" and model.pair_means == "antipodal"
    )
    binary = opts.labels == "binary" or loss in BINARY_LOSSES or antipodal or sparse_penalty
    return infer_n_clusters(
        opts.n_clusters,
        binary=binary,
        default=3,
        rho=rho,
        delta=delta if isinstance(delta, list) else None,
    )


def _labels_and_means(
    opts: PointOptions, model: MixtureModel, loss: str, k: int, sparse_penalty: bool
) -> tuple[str, str]:
    """The ``auto`` label map and means decided for K = ``k`` (binary for K = 2 with a
    binary loss or, with a loss that takes either, an l1 / elastic-net penalty)."""
    means = opts.means
    if means == "auto":
        means = model.pair_means if k == 2 else "simplex"
    labels = opts.labels
    if labels == "auto":
        labels = "binary" if (loss in BINARY_LOSSES or sparse_penalty) and k == 2 else "onehot"
    return labels, means


#: mixtures read from files: (absolute path, modification time, size) -> Mixture
_FILES: dict[tuple[str, int, int], Mixture] = {}


def read_mixture_file(path: str | os.PathLike) -> Mixture:
    """The mixture of a mixture file (:meth:`Mixture.load`), read once per process for a
    file that does not change (a grid's points share it); a ValueError names the file."""
    name = os.path.abspath(os.fspath(path))
    try:
        st = os.stat(name)
        key = (name, st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    hit = _FILES.get(key) if key is not None else None
    if hit is None:
        hit = Mixture.load(path)
        if key is not None:
            if len(_FILES) >= 16:
                _FILES.clear()
            _FILES[key] = hit
    return hit


def _file_model(opts: PointOptions, loss: str, l1_ratio: float | None) -> ResolvedOptions:
    """``--mixture FILE``: the file's mixture; the options that build one are refused."""
    given = [
        f.metadata["cli_option"]["decls"][0]
        for f in dataclasses.fields(PointOptions)
        if f.metadata["builds_mixture"] and getattr(opts, f.name) != f.default
    ]
    if given:
        raise ArgumentError(
            "mixture",
            f"cannot be combined with {', '.join(given)} (the mixture file defines the mixture)",
        )
    mix = read_mixture_file(opts.mixture)
    return _resolved(
        opts,
        loss,
        l1_ratio,
        model=mix.kind,
        n_clusters=mix.n_clusters,
        labels=mix.labels.kind,
        means="file",
        rho=mix.rho.tolist(),
        loaded=mix,
    )


def resolve_options(opts: PointOptions) -> ResolvedOptions:
    """Decide K, labels and means, and parse the comma lists (see :class:`PointOptions`);
    with ``--mixture FILE``, read the file instead."""
    loss = get_loss(opts.loss).name  # validates the name
    if opts.mixture is not None:
        return _file_model(opts, loss, _check_penalty_options(opts))
    model = parametric_model(opts.model)
    l1_ratio = _check_penalty_options(opts)
    if model.binary:
        return _binary_model(opts, model, loss, l1_ratio)
    # a penalty with one output per sample makes a binary problem, unless the loss needs
    # one-hot labels (then the labels check reports the conflict)
    sparse_penalty = (
        PENALTY_REGISTRY.get(opts.penalty).binary_default and get_loss(loss).labels != "onehot"
    )
    own = _model_parameters(opts, model)
    rho = parse_floats("rho", opts.rho) if opts.rho is not None else None
    k = _infer_clusters(opts, model, loss, rho, own.get("delta"), sparse_penalty)
    labels, means = _labels_and_means(opts, model, loss, k, sparse_penalty)
    return _resolved(
        opts,
        loss,
        l1_ratio,
        model=model.name,
        n_clusters=k,
        labels=labels,
        means=means,
        rho=rho,
        **own,
    )


def mixture_from_options(opts: PointOptions | ResolvedOptions) -> Mixture:
    """Build the :class:`~gaussmix.theory.model.mixture.Mixture` described by the point options:
    the model's ``build`` with the resolved values of the parameters it takes
    (:func:`mixture_arguments`)."""
    r = opts if isinstance(opts, ResolvedOptions) else resolve_options(opts)
    if r.loaded is not None:
        return r.loaded
    model, arguments = mixture_arguments(r)
    return model.build(**arguments)


def mixture_arguments(r: ResolvedOptions) -> tuple[MixtureModel, dict[str, Any]]:
    """The parametric model of resolved options and the keyword arguments its ``build``
    (a :class:`~gaussmix.theory.model.mixture.Mixture` constructor) is called with: K, labels,
    means, priors and the model's own parameters (a list of variances as an array)."""
    model = MIXTURE_MODELS.get(r.model)
    values = {
        "n_clusters": r.n_clusters,
        "labels": r.labels,
        "means": r.means,
        "rho": r.rho,
        **{name: getattr(r, name) for name in model.parameters},
    }
    if isinstance(values.get("delta"), list):  # one variance per cluster
        values["delta"] = np.asarray(values["delta"])
    accepted = inspect.signature(model.build).parameters
    return model, {k: v for k, v in values.items() if k in accepted}


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
    #: the solver's options as given (:data:`SOLVER_OPTIONS`: name -> value), for the record
    solver: dict = field(default_factory=dict)

    @property
    def penalty_kw(self) -> dict[str, Any]:
        """``{'penalty': ..., 'l1_ratio': ...}`` for the library's functions."""
        return {"penalty": self.penalty, "l1_ratio": self.l1_ratio}

    def check(self, *, lam: float | None = None, alpha: float | None = None) -> Problem:
        """The validated problem at another ``lam`` / ``alpha``: the checks of
        :func:`~gaussmix.theory.api.api.make_problem` that depend on them (the mixture, loss and
        penalty were validated when the setup was built, and do not change)."""
        from gaussmix.theory.api.api import check_lam_alpha

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


def solver_keywords(values: Mapping[str, Any], dim: int) -> dict[str, Any]:
    """The keyword arguments of :func:`gaussmix.solve` for the command line's solver
    options (:data:`SOLVER_OPTIONS`, ``values``: name -> value, any missing at its default)
    on a problem with ``dim`` outputs: ``tol``, ``max_iter``, with ``quad_order`` N
    ``quadrature=GaussHermite(N, dim)``, and the other options that differ from their
    defaults (so that an exported call is as short as the request).  Validated by
    :class:`~gaussmix.theory.solve.options.SolverOptions` itself (a bad value raises its
    ``ArgumentError`` naming the keyword; the commands say it with the flag,
    :data:`POINT_FLAGS`), so that no option reaches a solve unchecked."""
    from gaussmix.theory.numerics.quadrature import GaussHermite
    from gaussmix.theory.solve.options import SolverOptions

    unknown = sorted(set(values) - set(SOLVER_OPTIONS))
    if unknown:
        raise TypeError(f"solver_keywords: {unknown} are not solver options {SOLVER_OPTIONS}")
    given = {name: values.get(name, _FIELDS[name].default) for name in SOLVER_OPTIONS}
    kw: dict[str, Any] = {"tol": given["tol"], "max_iter": given["max_iter"]}
    quad_order = given["quad_order"]
    if quad_order is not None:
        try:
            kw["quadrature"] = GaussHermite(quad_order, dim)
        except (ArgumentError, ArgumentTypeError) as exc:  # its order is --quad-order's
            raise exc.named("quad_order") from None
    # the options' own checks (naming the keyword), of every value given
    SolverOptions(**{k: v for k, v in given.items() if k != "quad_order"})
    kw.update(changed_solver_options(given))
    return kw


def changed_solver_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The solver options of ``values`` (name -> value) that differ from their defaults,
    except ``tol``, ``max_iter`` and ``quad_order`` (which a point's ``params`` always
    record): what a point records beside them, so that a point at the default options has
    the ``params`` (and a sweep's checkpoint key) it always had. Which options differ is
    :func:`~gaussmix.theory.solve.options.changed_options`'s judgement (one rule for the
    library and the front ends); the values recorded are those given, in the options'
    order."""
    from gaussmix.theory.solve.options import SolverOptions, changed_options

    given = {k: values[k] for k in SOLVER_OPTIONS if k in values and k not in _ALWAYS_RECORDED}
    asked = changed_options(SolverOptions(**given))
    return {name: values[name] for name in SOLVER_OPTIONS if name in asked}


#: the solver options that every point's ``params`` record
_ALWAYS_RECORDED = ("tol", "max_iter", "quad_order")


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
    from gaussmix.theory.api.api import make_problem

    problem = make_problem(
        mixture, r.loss, lam=r.lam, alpha=r.alpha, penalty=r.penalty, l1_ratio=r.l1_ratio
    )
    solve_kw = solver_keywords(r.solver, problem.dim)
    params = {
        "model": r.model,
        "n_clusters": r.n_clusters,
        "labels": r.labels,
        "means": r.means,
        "rho": mixture.rho.tolist(),
    }
    if r.loaded is not None:  # by content: a file moved or renamed is the same point
        params.update(structure=mixture.covariance.describe(), fingerprint=mixture.fingerprint())
    else:
        params.update({name: getattr(r, name) for name in MIXTURE_MODELS.get(r.model).parameters})
    params.update(
        loss=r.loss,
        penalty=r.penalty,
        l1_ratio=r.l1_ratio,
        lam=r.lam,
        alpha=r.alpha,
        **{name: r.solver[name] for name in _ALWAYS_RECORDED},
        **changed_solver_options(r.solver),
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
        solver=dict(r.solver),
    )
