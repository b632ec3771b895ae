"""Library-level point specifications: what a sweep runs, made of library objects.

A :class:`PointSpec` is one point: a :class:`~gaussmix.theory.model.mixture.Mixture`, a loss, a
penalty, ``lam``, ``alpha``, the solver settings and, for a finite-size simulation, a
:class:`Simulation`; plus the JSON-friendly ``params`` that describe it (they give the
point's key, its ``params`` column and provenance) and its ``coords`` (the grid values that
become the table's columns and the xarray dimensions).  A :class:`SpecGrid` is a validated,
ordered collection of points -- usually the Cartesian product of some ``axes``.  Nothing here
knows about the command line: :mod:`gaussmix.cli.grid` translates TOML grids into specs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gaussmix.core.exceptions import GaussmixError
from gaussmix.core.jsonio import dumps
from gaussmix.core.validation import check_param
from gaussmix.theory.api.api import check_lam_alpha, make_problem
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.numerics.quadrature import GaussHermite
from gaussmix.theory.numerics.tolerances import FIXED_POINT_MAX_ITER, FIXED_POINT_TOL
from gaussmix.theory.problem.problem import Problem
from gaussmix.theory.solve.options import SolverOptions

__all__ = [
    "PointSpec",
    "Simulation",
    "SpecGrid",
    "point_key",
    "mixture_fingerprint",
    "check_points",
    "check_simulation",
    "describe_point",
    "current_params",
    "VERSION3_PARAM_NAMES",
    "CHECKPOINT_VERSION",
    "MAX_POINTS",
    "SPEC_SOLVER_OPTIONS",
]

#: version 3: point keys from the spec's params (library objects, no command-line names)
CHECKPOINT_VERSION = 3
#: ``params`` keys renamed in gaussmix 1.0 (new name -> name in checkpoints of version 3):
#: a point's key hashes its ``params`` under the old names, so that a checkpoint written
#: before the renaming still resumes; the rows read back from it carry the new names
#: (:func:`current_params`)
VERSION3_PARAM_NAMES = {"n_clusters": "clusters"}
_CURRENT_PARAM_NAMES = {old: new for new, old in VERSION3_PARAM_NAMES.items()}
#: largest number of points in a sweep
MAX_POINTS = 1_000_000
#: the spec fields that the key and the provenance read (besides params and simulate)
_SETTINGS = ("loss", "penalty", "l1_ratio", "lam", "alpha", "tol", "max_iter", "quad_order")
#: the solver's options that a point's ``solver`` mapping holds (the spec's fields hold
#: ``tol`` and ``max_iter``, ``quad_order`` the quadrature; ``throw`` is the sweep's own)
SPEC_SOLVER_OPTIONS = tuple(
    f.name
    for f in dataclasses.fields(SolverOptions)
    if f.name not in ("tol", "max_iter", "quadrature", "throw")
)
#: (id of a mixture, loss, penalty, l1_ratio) -> (the mixture, its validated problem); per
#: process, bounded (see :meth:`PointSpec.problem`)
_BASE_PROBLEMS: dict[tuple, tuple[Mixture, Problem]] = {}


@dataclass(frozen=True)
class Simulation:
    """Settings of a finite-size simulation of a point (:func:`gaussmix.simulate.simulate`).

    Parameters
    ----------
    d : int
        Input dimension, >= 2 (and what the mixture needs: see
        :func:`gaussmix.simulate.simulation.check_dimension`, checked with the point).
    seeds : int
        Number of independent seeds, >= 1 (standard errors over them).
    seed : int
        Root seed, >= 0 (``numpy.random.SeedSequence(seed).spawn(seeds)``).

    Notes
    -----
    The rules are those of :data:`gaussmix.core.validation.PARAMETERS`.
    """

    d: int
    seeds: int
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("d", "seeds", "seed"):
            object.__setattr__(self, name, check_param(name, getattr(self, name)))

    def as_dict(self) -> dict[str, int]:
        """``{'d', 'seeds', 'seed'}``."""
        return {"d": self.d, "seeds": self.seeds, "seed": self.seed}


@dataclass(frozen=True, eq=False)
class PointSpec:
    """One point of a sweep, in library objects.

    Parameters
    ----------
    mixture : Mixture
    loss : str
        A loss name of :func:`gaussmix.get_loss`.
    lam, alpha : float
        Penalty strength and sample complexity ``n/d``.
    penalty : {'l2', 'l1', 'elastic-net'}
    l1_ratio : float, optional
        Elastic-net mixing (only with ``penalty='elastic-net'``).
    tol, max_iter, quad_order
        Theory solver settings (:func:`gaussmix.solve`): tolerance, iteration cap and
        Gauss-Hermite nodes per dimension (None: the library's default rule).
    solver : mapping, optional
        The solver's other options (fields of :class:`~gaussmix.theory.solve.options.SolverOptions`
        other than ``tol``, ``max_iter``, ``quadrature`` and ``throw``, by their names:
        ``anderson``, ``estimate_error``, ...), those that differ from their defaults; part
        of the point's settings (and key) only when not empty, so that a point at the
        default options keeps the key it always had.
    simulate : Simulation, optional
        Simulate the point at finite size instead of solving the fixed point.
    params : mapping, optional
        JSON-friendly description of the point: the ``params`` of its row, and with the
        mixture's arrays, the settings above and ``simulate`` the input of
        :func:`point_key`.  Default: ``mixture.describe()`` and the settings.
    coords : mapping
        Column -> value: the grid values of this point (the table's first columns).

    Notes
    -----
    The fields are checked for type here; the mathematical checks (those of
    :func:`gaussmix.theory.api.api.make_problem`) are made by :func:`check_points`.
    """

    mixture: Mixture
    loss: str
    lam: float
    alpha: float
    penalty: str = "l2"
    l1_ratio: float | None = None
    tol: float = FIXED_POINT_TOL
    max_iter: int = FIXED_POINT_MAX_ITER
    quad_order: int | None = None
    solver: Mapping[str, Any] = field(default_factory=dict)
    simulate: Simulation | None = None
    params: Mapping[str, Any] | None = None
    coords: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.mixture, Mixture):
            raise TypeError(f"mixture must be a gaussmix.Mixture, got {self.mixture!r}")
        for name in ("loss", "penalty"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a string, got {getattr(self, name)!r}")
        if self.simulate is not None and not isinstance(self.simulate, Simulation):
            raise TypeError(f"simulate must be a Simulation or None, got {self.simulate!r}")
        if not isinstance(self.coords, Mapping):
            raise TypeError(f"coords must be a mapping, got {self.coords!r}")
        if not isinstance(self.solver, Mapping):
            raise TypeError(f"solver must be a mapping, got {self.solver!r}")
        bad = sorted(set(self.solver) - set(SPEC_SOLVER_OPTIONS))
        if bad:
            raise TypeError(
                f"solver: {bad} are not solver options here (those are "
                f"{', '.join(SPEC_SOLVER_OPTIONS)})"
            )
        object.__setattr__(self, "solver", dict(self.solver))
        params = self.params
        if params is None:
            params = {"mixture": self.mixture.describe(), **self.settings()}
        elif not isinstance(params, Mapping):
            raise TypeError(f"params must be a mapping or None, got {params!r}")
        object.__setattr__(self, "params", dict(params))
        object.__setattr__(self, "coords", dict(self.coords))

    # ------------------------------------------------------------------ views
    @property
    def mode(self) -> str:
        """``'simulation'`` with a :class:`Simulation`, else ``'theory'``."""
        return "theory" if self.simulate is None else "simulation"

    @property
    def penalty_kw(self) -> dict[str, Any]:
        """``{'penalty': ..., 'l1_ratio': ...}`` for the library's functions."""
        return {"penalty": self.penalty, "l1_ratio": self.l1_ratio}

    def settings(self) -> dict[str, Any]:
        """Loss, penalty, l1_ratio, lam, alpha, tol, max_iter, quad_order (in this order),
        and ``solver`` when it is not empty."""
        out = {name: getattr(self, name) for name in _SETTINGS}
        if self.solver:
            out["solver"] = dict(self.solver)
        return out

    def at(
        self,
        *,
        lam: float | None = None,
        alpha: float | None = None,
        coords: Mapping[str, Any] | None = None,
        simulate: Simulation | None = None,
    ) -> PointSpec:
        """The same point at another ``lam`` / ``alpha`` (``params`` follow; not checked
        here: :func:`check_points` checks every point of a grid), with other ``coords`` or
        ``simulate`` if given."""
        lam = self.lam if lam is None else lam
        alpha = self.alpha if alpha is None else alpha
        if simulate is not None and not isinstance(simulate, Simulation):
            raise TypeError(f"simulate must be a Simulation or None, got {simulate!r}")
        changes: dict[str, Any] = {
            "lam": lam,
            "alpha": alpha,
            "params": {**self.params, "lam": lam, "alpha": alpha},
        }
        if coords is not None:
            changes["coords"] = dict(coords)
        if simulate is not None:
            changes["simulate"] = simulate
        # a copy, not dataclasses.replace: the other fields were checked when this spec was
        # made, and grids call this once per point (~4x cheaper)
        new = object.__new__(PointSpec)
        new.__dict__.update(self.__dict__, **changes)
        return new

    # ------------------------------------------------------------------ library objects
    def problem(self) -> Problem:
        """The validated :class:`~gaussmix.theory.problem.problem.Problem` (:func:`make_problem`).

        Points that share a mixture object, loss and penalty (a grid over ``lam`` and
        ``alpha``) share one validated problem: only the checks that depend on ``lam`` and
        ``alpha`` run again, and the problem is copied at the point's values.
        """
        key = (id(self.mixture), self.loss, self.penalty, self.l1_ratio)
        hit = _BASE_PROBLEMS.get(key)
        if hit is None or hit[0] is not self.mixture:
            base = make_problem(
                self.mixture,
                self.loss,
                lam=self.lam,
                alpha=self.alpha,
                penalty=self.penalty,
                l1_ratio=self.l1_ratio,
            )
            if len(_BASE_PROBLEMS) >= 256:
                _BASE_PROBLEMS.clear()
            _BASE_PROBLEMS[key] = (self.mixture, base)  # holds the mixture: ids stay unique
            return base
        base = hit[1]
        lam, alpha = check_lam_alpha(
            self.lam, self.alpha, loss=base.loss, penalty=base.penalty_spec, mixture=base.mixture
        )
        return base.with_lam_alpha(lam, alpha)

    def solve_kw(self, problem: Problem) -> dict[str, Any]:
        """Keyword arguments of :func:`~gaussmix.theory.solve.solver.solve_problem` for
        ``problem`` (this point's): ``tol``, ``max_iter``, the quadrature rule and the other
        options of ``solver``."""
        kw: dict[str, Any] = {"tol": self.tol, "max_iter": self.max_iter, **self.solver}
        if self.quad_order is not None:
            kw["quadrature"] = GaussHermite(self.quad_order, problem.dim)
        return kw


def mixture_fingerprint(mixture: Mixture) -> str:
    """The mixture's content hash, :meth:`Mixture.fingerprint` (its model name, priors,
    labels and the arrays of its covariance structure): equal for equal mixtures, in every
    process; for spectral laws the same hash as the checkpoints of version 3 always had."""
    return mixture.fingerprint()


def point_key(spec: PointSpec, *, fingerprint: str | None = None) -> str:
    """Stable hash of a point: its mode, mixture (:func:`mixture_fingerprint`), ``params``,
    settings and simulation settings.

    The same point gives the same key in every process and run (the checkpoint's key).
    ``fingerprint``: the mixture's, when the caller already has it.
    """
    data = {
        "v": CHECKPOINT_VERSION,
        "mode": spec.mode,
        "mixture": mixture_fingerprint(spec.mixture) if fingerprint is None else fingerprint,
        "params": {VERSION3_PARAM_NAMES.get(k, k): v for k, v in spec.params.items()},
        "settings": spec.settings(),
        "simulate": None if spec.simulate is None else spec.simulate.as_dict(),
    }
    return hashlib.sha256(dumps(data, sort_keys=True)).hexdigest()[:20]


def current_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` (of a row read from a checkpoint) with the names of today: a row written
    before gaussmix 1.0 says ``clusters`` for ``n_clusters``
    (:data:`VERSION3_PARAM_NAMES`)."""
    return {_CURRENT_PARAM_NAMES.get(k, k): v for k, v in params.items()}


def _keys(points: Sequence[PointSpec]) -> tuple[str, ...]:
    """:func:`point_key` of every point (each mixture object hashed once)."""
    prints: dict[int, str] = {}
    keys = []
    for p in points:
        fp = prints.get(id(p.mixture))
        if fp is None:
            fp = prints[id(p.mixture)] = mixture_fingerprint(p.mixture)
        keys.append(point_key(p, fingerprint=fp))
    return tuple(keys)


def describe_point(coords: Mapping[str, Any]) -> str:
    """``'alpha = 1.0, delta = 0.5'``: a point's coordinates, for messages."""
    return ", ".join(f"{k} = {v!r}" for k, v in coords.items())


def check_simulation(spec: Any, *, d: Any, seeds: Any, seed: Any = 0, n_jobs: Any = 1) -> dict:
    """Validate a simulation of ``spec`` at dimension ``d`` (on ``n_jobs`` workers, joblib
    convention) before running it.

    ``spec``: a :class:`PointSpec`, or any object with its attributes ``mixture``, ``loss``,
    ``lam``, ``alpha``, ``penalty``, ``l1_ratio`` (e.g. the CLI's ``PointSetup``).
    Returns the validated simulation parameters (with ``n = round(alpha d)``).
    """
    from gaussmix.simulate import validate_simulation

    return validate_simulation(
        spec.mixture,
        spec.loss,
        spec.lam,
        spec.alpha,
        d,
        seeds,
        seed,
        spec.penalty,
        spec.l1_ratio,
        "fixed",
        n_jobs,
        None,
    )


def check_points(points: Sequence[PointSpec]) -> None:
    """Validate every point before any work: the checks of the library's solver (or of the
    simulation) for each; raise ``ValueError`` naming the first bad point.

    Points that share their mixture object, loss and penalty share one full validation;
    the others then only check ``lam`` / ``alpha`` (cheap on large grids).
    """
    cache: dict[tuple, Problem] = {}
    n = len(points)
    for i, spec in enumerate(points):
        if not isinstance(spec, PointSpec):
            raise TypeError(f"points[{i}] must be a PointSpec, got {type(spec).__name__}")
        try:
            _check_point(spec, cache)
            if spec.simulate is not None:
                s = spec.simulate
                check_simulation(spec, d=s.d, seeds=s.seeds, seed=s.seed)
        except (ValueError, TypeError, GaussmixError) as exc:
            where = describe_point(spec.coords) or f"index {i}"
            kind = TypeError if isinstance(exc, TypeError) else ValueError
            raise kind(f"point {i + 1} of {n} ({where}): {exc}") from None


def _check_point(spec: PointSpec, cache: dict[tuple, Problem]) -> None:
    """The checks of one point; the full validation (:func:`make_problem`, the quadrature
    order) runs once per setup (mixture object, loss, penalty, solver settings), the others
    then check ``lam`` / ``alpha``."""
    # the options' own checks (one rule)
    SolverOptions(tol=spec.tol, max_iter=spec.max_iter, **spec.solver)
    key = (
        id(spec.mixture),
        spec.loss,
        spec.penalty,
        spec.l1_ratio,
        spec.quad_order,
        spec.tol,
        spec.max_iter,
        tuple(sorted(spec.solver.items())),
    )
    base = cache.get(key)
    if base is None:
        problem = spec.problem()  # the full validation (make_problem), once per setup
        spec.solve_kw(problem)  # the quadrature order
        cache[key] = problem  # (the spec holds the mixture: its id is not reused meanwhile)
        return
    check_lam_alpha(
        spec.lam, spec.alpha, loss=base.loss, penalty=base.penalty_spec, mixture=base.mixture
    )


@dataclass(frozen=True, eq=False)
class SpecGrid:
    """An ordered, validated collection of points (usually a Cartesian product).

    Parameters
    ----------
    points : sequence of PointSpec
        In table order; every point has the same mode and the same ``coords`` columns.
    axes : mapping, optional
        Column -> tuple of values when the points are the Cartesian product of the axes
        (first axis slowest): the xarray view has these dimensions.  Default: inferred from
        the points' coords when they form such a product, else one dimension ``point``.
    description : mapping, optional
        JSON-friendly provenance of the grid (e.g. ``{'fixed': ..., 'grid': ...}`` of a TOML
        file); ``'fixed'`` and ``'grid'`` default to ``{}`` and the axes.
    swept : iterable of str
        Spec fields (``tol``, ``max_iter``, ``quad_order``, ``d``, ``seeds``, ``seed``)
        that the grid varies on purpose: reported as ``'grid'`` in the provenance even
        when they take one value.

    Raises
    ------
    ValueError, TypeError
        No point, more than :data:`MAX_POINTS`, mixed modes or columns, axes that do not
        match the points, or a point that the library rejects (:func:`check_points`).
    """

    points: tuple[PointSpec, ...]
    axes: Mapping[str, tuple] | None = None
    description: Mapping[str, Any] = field(default_factory=dict)
    swept: frozenset[str] = frozenset()
    _keys: tuple[str, ...] = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        points = tuple(self.points)
        if not points:
            raise ValueError("points must hold at least one PointSpec")
        if len(points) > MAX_POINTS:
            raise ValueError(f"points has {len(points)} points, more than {MAX_POINTS}")
        check_points(points)
        modes = {p.mode for p in points}
        if len(modes) > 1:
            raise ValueError("points must all be theory points or all simulations")
        columns = tuple(points[0].coords)
        for i, p in enumerate(points):
            if tuple(p.coords) != columns:
                raise ValueError(
                    f"points[{i}] has coords {list(p.coords)}, points[0] has {list(columns)}"
                )
        axes = _axes(points, columns) if self.axes is None else self._given_axes(points)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "description", dict(self.description))
        object.__setattr__(self, "swept", frozenset(self.swept))
        object.__setattr__(self, "_keys", _keys(points))

    def _given_axes(self, points: tuple[PointSpec, ...]) -> dict[str, tuple]:
        axes = {str(c): tuple(v) for c, v in dict(self.axes or {}).items()}
        if math.prod(len(v) for v in axes.values()) != len(points):
            raise ValueError(
                f"axes ({', '.join(f'{c}[{len(v)}]' for c, v in axes.items())}) do not "
                f"match the {len(points)} points"
            )
        return axes

    # ------------------------------------------------------------------ content
    @property
    def mode(self) -> str:
        """``'theory'`` or ``'simulation'``."""
        return self.points[0].mode

    @property
    def columns(self) -> tuple[str, ...]:
        """The coordinate columns of the points (the table's first columns)."""
        return tuple(self.points[0].coords)

    @property
    def dims(self) -> tuple[str, ...]:
        """Dimensions of the xarray view: the axes, or ``('point',)``."""
        return tuple(self.axes) if self.axes else ("point",)

    @property
    def shape(self) -> tuple[int, ...]:
        """Lengths of the dimensions."""
        return tuple(len(v) for v in self.axes.values()) if self.axes else (len(self),)

    def keys(self) -> list[str]:
        """The stable key of every point (:func:`point_key`), in order."""
        return list(self._keys)

    def __len__(self) -> int:
        return len(self.points)

    def __iter__(self) -> Iterable[PointSpec]:
        return iter(self.points)

    def __repr__(self) -> str:
        dims = ", ".join(f"{k}[{n}]" for k, n in zip(self.dims, self.shape))
        return f"SpecGrid({len(self)} points: {dims}; mode={self.mode})"


def _axes(points: tuple[PointSpec, ...], columns: tuple[str, ...]) -> dict[str, tuple] | None:
    """The axes of which ``points`` are the Cartesian product (first slowest), or None."""
    if not columns:
        return None
    values: dict[str, list] = {c: [] for c in columns}
    seen: dict[str, set] = {c: set() for c in columns}
    for p in points:
        for c in columns:
            v = p.coords[c]
            try:
                new = v not in seen[c]
                seen[c].add(v)
            except TypeError:  # unhashable (a list): compare with the values found
                new = v not in values[c]
            if new:
                values[c].append(v)
    if math.prod(len(v) for v in values.values()) != len(points):
        return None
    product = itertools.product(*values.values())
    if any(tuple(p.coords.values()) != combo for p, combo in zip(points, product)):
        return None
    return {c: tuple(v) for c, v in values.items()}
