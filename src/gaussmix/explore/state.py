"""The explorer's state: every control of the interactive explorer, as one frozen value.

:class:`ExplorerState` is a thin description.  It is translated into the command line's
:class:`~gaussmix.frontend.options.PointOptions` (:func:`point_options`) and built by the
library's one validated path (:func:`~gaussmix.frontend.options.build_point`: the mixture
models' builders, :func:`gaussmix.make_problem`); the grid of the curve is the command
line's (:func:`~gaussmix.experiments.curves.parse_range` of ``[log:]start:stop:num``).  So
the explorer, the command line and a script agree to the bit, and a bad value is refused
with the library's own message (:func:`validate`), keyed by the explorer's field.

A state travels as a URL query string of its non-default fields (:meth:`ExplorerState.to_query`
and :meth:`ExplorerState.from_query`, which round-trip every state exactly: floats are
written with :func:`repr`).
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from gaussmix.core.exceptions import ArgumentError, ArgumentTypeError

if typing.TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from gaussmix.frontend.options import PointOptions, PointSetup

__all__ = [
    "ExplorerState",
    "AXES",
    "OVERLAYS",
    "ORDER_PARAMETERS",
    "observable_names",
    "validate",
    "point_options",
    "grid",
    "grid_spec",
    "setup",
    "field_of",
    "PRECISIONS",
    "SCREEN_TOL",
]

#: the horizontal axes: a learning curve over alpha, or a sweep over lambda
AXES = ("alpha", "lambda")
#: the overlays computed on request (:func:`gaussmix.explore.start_overlays`)
OVERLAYS = ("bayes", "alpha_star", "lambda_star", "simulation")
#: the fixed-point tolerance of the explorer's screen precision: its curves' test and
#: training errors are within a few 1e-6 of the library's default precision (at most 3e-6,
#: measured over states sampled from the whole control space; tests/test_explore_engine.py
#: bounds it by 10 SCREEN_TOL), about a thousandth of a pixel of a 400-pixel plot of an
#: error in [0, 1]; not where the library's own integration-error estimate is larger (the
#: training error near interpolation at a weak penalty: 5.3e-4 against 0.0 +- 5.3e-4 at a
#: K = 3 cross-entropy lasso, lambda 6.6e-4, alpha 0.89; docs/explore.md)
SCREEN_TOL = 1e-5
#: the explorer's precisions -> the solver's options they set (:func:`point_options`):
#: ``'screen'`` (the explorer's default) solves to :data:`SCREEN_TOL` without the
#: integration error estimate (most of a lasso curve's cost: a K = 3 cross-entropy lasso
#: curve 5.6 times faster); ``'library'`` is :func:`gaussmix.solve`'s defaults.  The
#: exports (command line, script, CSV) carry the options, so they reproduce the view.
PRECISIONS: dict[str, dict[str, Any]] = {
    "screen": {"tol": SCREEN_TOL, "estimate_error": False},
    "library": {},
}
#: order parameters that can be shown (one column per cluster ``c = 1..K``, see
#: :func:`gaussmix.explore.engine.order_parameters`)
ORDER_PARAMETERS = ("m", "q", "v")


@dataclass(frozen=True)
class ExplorerState:
    """Every control of the explorer (the mixture, the estimator, the axis, what is shown).

    The mixture's and the estimator's fields are the command line's options of the same
    name (``gaussmix curve --help``; :func:`gaussmix.explore.export_cli` writes them with
    their flags); the other fields are the explorer's own.  The state is not checked when
    it is made: :func:`validate` gives every problem, keyed by field.  The fields of a
    covariance model other than ``model`` are ignored, and with a ``mixture_file`` every
    mixture field is.

    Parameters
    ----------
    n_clusters : int
        Number of clusters K, >= 2 (``--n-clusters``).
    delta : tuple of float
        Isotropic cluster variance Delta > 0: one value shared by the clusters or one per
        cluster (``--delta``; a single number is taken as a one-element tuple).
    rho : tuple of float, optional
        Cluster priors, K positive numbers summing to 1 (``--rho``; None: balanced).
    means : str
        Family of the (unit-norm) cluster means: ``'auto'``, ``'simplex'``,
        ``'gaussian'`` or ``'antipodal'`` (``--means``; ``'auto'``: simplex, antipodal for
        the block model with K = 2).
    model : str
        Covariance model: ``'isotropic'`` (Sigma_c = Delta_c I), ``'block'`` or
        ``'sparse'`` (``--model``).
    fractions : tuple of float, optional
        Block model: the fraction of the directions in each block, summing to 1
        (``--fractions``).
    deltas : tuple of float, optional
        Block model: the covariance eigenvalue of each block, shared by the clusters, one
        per fraction (``--deltas``).
    sparsity : float
        Sparse model: the fraction of directions carrying the means, in (0, 1]
        (``--sparsity``; the paper's value 0.1 by default).
    delta1 : float, optional
        Sparse model: the variance on the directions of the means, > 0 (``--delta1``).
    delta2 : float, optional
        Sparse model: the variance on the other directions, > 0 (``--delta2``).
    mixture_file : str, optional
        Path of a mixture file written by :meth:`gaussmix.Mixture.save`, in place of every
        mixture field above and of ``labels`` (``--mixture``).
    labels : str
        Label map: ``'auto'``, ``'onehot'`` (y_c = e_c) or ``'binary'`` (K = 2: cluster 1
        -> +1, cluster 2 -> -1) (``--labels``; ``'auto'``: binary for the logistic and
        hinge losses, else one-hot).
    loss : str
        Training loss, a name of :data:`gaussmix.LOSSES` (``--loss``; ``'square'``,
        ``'logistic'``, ``'cross-entropy'``, ``'hinge'``).  The explorer's default is the
        logistic loss (the command line's is cross-entropy).
    penalty : str
        Penalty: ``'l2'`` (ridge), ``'l1'`` (lasso) or ``'elastic-net'`` (``--penalty``;
        l1 and elastic-net need binary labels and lam > 0).
    l1_ratio : float, optional
        Elastic-net mixing in [0, 1]; required with ``penalty='elastic-net'``; with
        ``'l2'`` / ``'l1'`` only the value they imply, 0 / 1 (``--l1-ratio``;
        :func:`gaussmix.make_penalty`).
    lam : float
        Penalty strength lambda >= 0 of the learning curve (``--lam``; the explorer's
        default 0.1, the command line's 1.0).  Unused on the lambda axis.
    axis : str
        The horizontal axis, one of :data:`AXES`: ``'alpha'`` (the learning curve at
        ``lam``: ``gaussmix curve``) or ``'lambda'`` (the sweep over lambda at ``alpha``:
        ``gaussmix lambda-curve``).
    alpha_min : float
        Smallest sample complexity alpha = n/d of the alpha axis, > 0 (the start of
        ``--alphas``).
    alpha_max : float
        Largest alpha of the alpha axis (the stop of ``--alphas``).
    n_points : int
        Number of points of the swept axis, from 1 to the command line's largest grid
        (the count of ``--alphas`` / ``--lams``).
    log_x : bool
        Log-spaced points and a logarithmic horizontal axis (``log:`` in ``--alphas`` /
        ``--lams``; the ends must then be > 0); False: evenly spaced.
    alpha : float
        Sample complexity alpha = n/d > 0 of the lambda axis (``--alpha``).  Unused on the
        alpha axis.
    lam_min : float
        Smallest lambda of the lambda axis, >= 0 (> 0 with ``log_x``; the start of
        ``--lams``).
    lam_max : float
        Largest lambda of the lambda axis (the stop of ``--lams``).
    show : tuple of str
        The columns drawn: names of :data:`gaussmix.OBSERVABLES` (``test_error``,
        ``train_error``, ``train_loss``, ``test_loss``, ...) and order parameters
        ``m<c>``, ``q<c>``, ``v<c>`` of cluster c = 1..K (:func:`order_parameters`).
    overlays : tuple of str
        The overlays computed on request, a subset of :data:`OVERLAYS`
        (:func:`start_overlays`).
    sim_d : int
        Dimension d of the finite-size simulation points (the ``simulation`` overlay).
    sim_seeds : int
        Number of independent seeds averaged at each simulation point.
    precision : str
        The solver's precision, one of :data:`PRECISIONS`: ``'screen'`` (the explorer's
        default: fixed-point tolerance :data:`SCREEN_TOL`, no integration error estimate;
        errors within a few 1e-6 of the library's) or ``'library'`` (the library's
        defaults, those of ``gaussmix curve`` without solver options).  The exports say
        which (the command line's ``--tol`` and ``--no-estimate-error``).
    """

    n_clusters: int = 2
    delta: tuple[float, ...] = (1.0,)
    rho: tuple[float, ...] | None = None
    means: str = "auto"
    model: str = "isotropic"
    fractions: tuple[float, ...] | None = None
    deltas: tuple[float, ...] | None = None
    sparsity: float = 0.1
    delta1: float | None = None
    delta2: float | None = None
    mixture_file: str | None = None
    labels: str = "auto"
    loss: str = "logistic"
    penalty: str = "l2"
    l1_ratio: float | None = None
    lam: float = 0.1
    axis: str = "alpha"
    alpha_min: float = 0.2
    alpha_max: float = 8.0
    n_points: int = 40
    log_x: bool = True
    alpha: float = 2.0
    lam_min: float = 1e-4
    lam_max: float = 10.0
    show: tuple[str, ...] = ("test_error", "train_error")
    overlays: tuple[str, ...] = ()
    sim_d: int = 400
    sim_seeds: int = 4
    precision: str = "screen"

    def __post_init__(self) -> None:
        # sequences as tuples (a list or an array from an interface), one number as a
        # one-element tuple (a shared Delta); numpy scalars as the Python numbers they
        # hold (the grid's range and the query write numbers with repr)
        for name in _FIELDS:
            value = getattr(self, name)
            if name not in _TUPLES or value is None:
                object.__setattr__(self, name, _plain(value))
                continue
            if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
                value = (value,)
            object.__setattr__(self, name, tuple(_plain(v) for v in value))

    def replace(self, **changes: Any) -> ExplorerState:
        """A copy with ``changes`` (unknown names raise :class:`ArgumentError`)."""
        unknown = sorted(set(changes) - set(_FIELDS))
        if unknown:
            raise ArgumentError(unknown[0], f"is not a control of the explorer ({_known()})")
        return dataclasses.replace(self, **changes)

    def to_query(self) -> str:
        """The URL query string of the fields that differ from their default (``''`` for
        the default state); :meth:`from_query` reads it back to an equal state."""
        pairs = [
            (name, field_text(getattr(self, name)))
            for name, f in _FIELDS.items()
            if getattr(self, name) != f.default
        ]
        return urlencode(pairs, quote_via=quote, safe=",:/")

    @classmethod
    def from_query(cls, query: str) -> ExplorerState:
        """The state a query string (:meth:`to_query`, with or without a leading ``?``)
        describes; missing fields take their default.

        Raises
        ------
        ArgumentError
            An unknown field, a field given twice, or a value that cannot be read as the
            field's type (the error's ``argument`` is the field).
        """
        values: dict[str, Any] = {}
        for name, text in parse_qsl(
            query.lstrip("?"), keep_blank_values=True, strict_parsing=False
        ):
            if name not in _FIELDS:
                raise ArgumentError(name, f"is not a control of the explorer ({_known()})")
            if name in values:
                raise ArgumentError(name, "is given twice in the query")
            values[name] = _decode(name, _HINTS[name], text)
        return cls(**values)


_FIELDS = {f.name: f for f in dataclasses.fields(ExplorerState)}
_HINTS = typing.get_type_hints(ExplorerState)
#: the fields holding tuples
_TUPLES = tuple(
    name
    for name, hint in _HINTS.items()
    if tuple in (typing.get_origin(hint), *map(typing.get_origin, typing.get_args(hint)))
)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (anything else as it is)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and getattr(value, "ndim", None) == 0 else value


def _known() -> str:
    return "one of " + ", ".join(_FIELDS)


# ============================================================================ query codec
def field_text(value: Any) -> str:
    """The text of a field's value: ``''`` for None, ``1``/``0`` for booleans, floats by
    :func:`repr` (exact), tuples comma-separated."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(field_text(v) for v in value)
    if isinstance(value, float):
        return repr(float(value))  # numpy's floats too, as plain numbers
    return str(value)


def _decode(name: str, hint: Any, text: str) -> Any:
    """The value of the field ``name`` (type ``hint``) written as ``text``."""
    args = typing.get_args(hint)
    if type(None) in args:  # Optional: '' is None
        if text == "":
            return None
        (hint,) = [a for a in args if a is not type(None)]
        args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        item = args[0]
        if text == "":
            return ()
        return tuple(_scalar(name, item, part) for part in text.split(","))
    return _scalar(name, hint, text)


def _scalar(name: str, kind: Any, text: str) -> Any:
    if kind is str:
        return text
    if kind is bool:
        if text in ("1", "true", "True"):
            return True
        if text in ("0", "false", "False"):
            return False
        raise ArgumentError(name, f"must be 0 or 1, got {text!r}")
    try:
        return kind(text)
    except ValueError:
        want = "an integer" if kind is int else "a number"
        raise ArgumentError(name, f"must be {want}, got {text!r}") from None


# ============================================================================ translation
def _floats(values: tuple[float, ...] | None) -> str | None:
    """A tuple as the command line's comma list (floats by :func:`repr`: exact)."""
    if values is None:
        return None
    return ",".join(repr(float(v)) if isinstance(v, float) else str(v) for v in values)


def point_options(state: ExplorerState) -> PointOptions:
    """The command line's options for ``state`` (``alpha`` / ``lam`` of the swept axis are
    set by :func:`setup`).

    Only the fields of ``state.model`` are passed (a model refuses another model's
    parameters); with a ``mixture_file`` no mixture option is passed (the file defines
    the mixture)."""
    from gaussmix.frontend.options import PointOptions
    from gaussmix.theory.model.mixture import MIXTURE_MODELS

    estimator = {
        "loss": state.loss,
        "penalty": state.penalty,
        "l1_ratio": state.l1_ratio,
        "lam": state.lam,
        "alpha": state.alpha,
        **PRECISIONS.get(state.precision, {}),
    }
    if state.mixture_file is not None:
        return PointOptions(mixture=state.mixture_file, **estimator)
    own = MIXTURE_MODELS.get(state.model).parameters if state.model in MIXTURE_MODELS else ()
    model = {
        "delta": _floats(state.delta),
        "fractions": _floats(state.fractions),
        "deltas": _floats(state.deltas),
        "sparsity": state.sparsity,
        "delta1": state.delta1,
        "delta2": state.delta2,
    }
    return PointOptions(
        n_clusters=state.n_clusters,
        labels=state.labels,
        rho=_floats(state.rho),
        model=state.model,
        means=state.means,
        **{k: v for k, v in model.items() if k in own},
        **estimator,
    )


def grid_spec(state: ExplorerState) -> str:
    """The command line's range of the swept axis, ``[log:]start:stop:num`` (``--alphas``
    or ``--lams``; ends written exactly)."""
    lo, hi = (
        (state.alpha_min, state.alpha_max)
        if state.axis == "alpha"
        else (state.lam_min, state.lam_max)
    )
    return f"{'log:' if state.log_x else ''}{lo!r}:{hi!r}:{state.n_points}"


def grid(state: ExplorerState) -> np.ndarray:
    """The values of the swept axis: the command line's grid for :func:`grid_spec`
    (:func:`~gaussmix.frontend.grids.parse_grid`), each checked by the library's rule of
    alpha or lambda."""
    from gaussmix.frontend.grids import parse_grid

    name, fact = ("alphas", "alpha") if state.axis == "alpha" else ("lams", "lam")
    return parse_grid(name, grid_spec(state), fact=fact)


def setup(state: ExplorerState) -> tuple[PointSetup, np.ndarray]:
    """The validated point (:func:`~gaussmix.frontend.options.build_point`, as ``gaussmix
    curve`` / ``lambda-curve`` build it: at the largest value of the swept axis) and the
    grid; every value of the grid is validated.  Raises the library's errors."""
    from gaussmix.frontend.options import build_point

    if state.axis not in AXES:
        raise ArgumentError("axis", f"must be one of {', '.join(AXES)}, got {state.axis!r}")
    values = grid(state)
    key = _swept(state)
    point = build_point(point_options(state), **{key: float(values.max())})
    for v in values.tolist():
        point.check(**{key: v})
    return point, values


# ============================================================================ validation
def _argument_fields() -> dict[str, str]:
    """The library's (and the command line's) name of an argument -> the explorer's field:
    a point option's keyword and its flag (``--quad-order``, named so by
    :func:`~gaussmix.frontend.options.build_point`), and the swept range (``alphas`` /
    ``lams``, named so by :func:`~gaussmix.frontend.grids.parse_grid`)."""
    from gaussmix.frontend.options import POINT_FLAGS

    out = {}
    for keyword, flag in POINT_FLAGS.items():
        name = _KEYWORDS.get(keyword, keyword)
        out[flag] = out[keyword] = name
    out.update({"alphas": "alpha_min", "lams": "lam_min"})
    return out


#: library keyword -> explorer field, where they differ
_KEYWORDS = {"mixture": "mixture_file"}


def field_of(exc: BaseException, state: ExplorerState) -> str:
    """The explorer field a library error is about: the argument an
    :class:`~gaussmix.core.exceptions.ArgumentError` names (a field, a point option's
    keyword or flag, or the swept range), else (a mixture file that cannot be read, or an
    error naming no argument) ``mixture_file`` with a file, ``model`` without."""
    from gaussmix.theory.model.mixture import MixtureFileError

    if isinstance(exc, ArgumentError | ArgumentTypeError):
        name = exc.argument
        if name in _FIELDS:
            return name
        fields = _argument_fields()
        if name in fields:
            return fields[name]
    if isinstance(exc, MixtureFileError):
        return "mixture_file"
    return "mixture_file" if state.mixture_file is not None else "model"


def _check_explorer_fields(state: ExplorerState) -> dict[str, str]:
    """The explorer's own controls (those that are not options of the command line)."""
    from gaussmix.core.validation import check_choice, check_int, check_param

    errors: dict[str, str] = {}

    def run(name: str, check: Any) -> None:
        try:
            check()
        except (ValueError, TypeError) as exc:
            errors[name] = str(exc)

    run("axis", lambda: check_choice("axis", state.axis, AXES))
    run("n_points", lambda: check_int("n_points", state.n_points, low=1, high=_max_points()))
    run("log_x", lambda: _check_bool("log_x", state.log_x))
    run("precision", lambda: check_choice("precision", state.precision, tuple(PRECISIONS)))
    for name in observable_unknown(state.show):
        errors.setdefault("show", f"show: unknown column {name!r} (one of {', '.join(_shown())})")
    for name in state.overlays:
        if name not in OVERLAYS:
            errors.setdefault(
                "overlays", f"overlays: unknown overlay {name!r} (one of {', '.join(OVERLAYS)})"
            )
    if "simulation" in state.overlays:
        run("sim_d", lambda: check_param("d", state.sim_d, name="sim_d"))
        run("sim_seeds", lambda: check_param("seeds", state.sim_seeds, name="sim_seeds"))
    for name in ("alpha_min", "alpha_max", "lam_min", "lam_max", "alpha"):
        value = getattr(state, name)
        if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
            errors[name] = f"{name} must be a number, got {value!r}"
    return errors


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ArgumentTypeError(name, f"must be True or False, got {value!r}")


def _max_points() -> int:
    from gaussmix.frontend.grids import MAX_POINTS

    return MAX_POINTS


def _shown() -> tuple[str, ...]:
    from gaussmix.theory.model.outputs import OBSERVABLES

    return (*OBSERVABLES.names(), *(f"{p}<c>" for p in ORDER_PARAMETERS))


def observable_names() -> tuple[str, ...]:
    """The observables that ``show`` may name (besides the order parameters)."""
    from gaussmix.theory.model.outputs import OBSERVABLES

    return OBSERVABLES.names()


def observable_unknown(show: tuple[str, ...]) -> list[str]:
    """The names of ``show`` that are neither an observable nor an order parameter
    ``m<c>``, ``q<c>``, ``v<c>`` (``c >= 1``)."""
    known = set(observable_names())
    pattern = re.compile(rf"({'|'.join(ORDER_PARAMETERS)})[1-9][0-9]*")
    return [s for s in show if s not in known and not pattern.fullmatch(s)]


def validate(state: ExplorerState) -> dict[str, str]:
    """Every problem of ``state``: explorer field -> the library's own message (``{}``
    when the state is valid).

    The mixture, the estimator and the grid are validated by building them through the
    library (:func:`setup`); the library stops at its first error, which is reported under
    the field it names (:func:`field_of`).  The explorer's own controls (axis, number of
    points, shown columns, overlays, simulation size) are checked each.

    Parameters
    ----------
    state : ExplorerState
        The controls to check.

    Returns
    -------
    dict of str to str
        Field name (of :class:`ExplorerState`) -> one line saying what is wrong and what
        was expected; empty when :func:`start_curve` will compute the state's curve.
    """
    errors = _check_explorer_fields(state)
    if "axis" in errors or "n_points" in errors:
        return errors
    ends = _check_ends(state)
    errors.update(ends)
    try:
        if ends:  # the rest, at a valid value of the swept parameter
            from gaussmix.frontend.options import build_point

            build_point(point_options(state), **{_swept(state): 1.0})
        else:
            setup(state)
    except (ValueError, TypeError, OSError) as exc:
        name = field_of(exc, state)
        errors.setdefault(name, _one_line(str(exc)))
    return errors


def _swept(state: ExplorerState) -> str:
    """The library's name of the swept parameter: ``'alpha'`` or ``'lam'``."""
    return "alpha" if state.axis == "alpha" else "lam"


def _check_ends(state: ExplorerState) -> dict[str, str]:
    """The ends of the swept axis, each by the library's rule of its parameter
    (:func:`~gaussmix.core.validation.check_param`) under the field's name; on a log axis
    an end must be > 0 (the message of the library's range parser, naming the field)."""
    from gaussmix.core.validation import check_param
    from gaussmix.experiments.curves import parse_range

    fact = _swept(state)
    names = ("alpha_min", "alpha_max") if fact == "alpha" else ("lam_min", "lam_max")
    errors: dict[str, str] = {}
    for name in names:
        value = getattr(state, name)
        try:
            check_param(fact, value, name=name)
            if state.log_x and value <= 0:
                parse_range(grid_spec(state), name=name)
        except (ValueError, TypeError) as exc:
            errors[name] = _one_line(str(exc))
    return errors


def _one_line(text: str) -> str:
    return " ".join(text.split())
