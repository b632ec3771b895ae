"""The fixed-point solver of Theorem 1 and its result object.

One iteration maps the order parameters ``x = (Q_c, M_c, V_c, b)`` to new ones:

1. channel (loss half, eq. spgeneral right):  ``Qhat_c = alpha rho_c E[f f^T]``,
   ``Mhat_c = alpha rho_c E[f]``, ``Vhat_c = alpha rho_c E[(I + H V_c)^{-1} H]``;
2. bias: one Newton step on the stationarity condition of the unpenalised bias,
   ``sum_c rho_c E[f_c] = 0`` (gradient form, docs/design.md pitfall 1), i.e.
   ``b <- b + (sum_c Vhat_c)^{-1} sum_c Mhat_c``;
3. prior (eq. spgeneral left / Corollary 1): ``(Q_c, M_c, V_c)`` from the hats.

The map is accelerated with Anderson mixing (with a ridge-regularised least-squares
problem and a fallback to damped steps whenever an extrapolation leaves the cone of valid
overlaps).  Convergence is declared when ``max_i |T(x)_i - x_i| / s_i < tol``, with
``s_i = max(|x_i|, u_i)`` and ``u_i`` the size of the component's block capped at 1
(:func:`residual_scale`: overlaps of order one are tested in absolute terms, small ones
relative to their own size).

State is explicit: the map of one problem and one rule is a :class:`FixedPointMap` (its
memory, the last channel evaluation and the warm start of the proximal solves, lives and
dies with it); the secant history of Anderson mixing is an immutable :class:`AndersonState`
(``init`` / ``update``, in the spirit of jaxopt's ``AndersonAcceleration``); an iteration ends
with an :class:`IterationOutcome` whose :class:`IterationStatus` decides the error class; the
fixed point of a result is its :class:`FixedPointState`.  Tolerances are the named constants
of :mod:`gaussmix.theory.tolerances`.
"""

from __future__ import annotations

import enum
import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from gaussmix.core.exceptions import ConvergenceError, IntegrationWarning, SpuriousFixedPointError
from gaussmix.core.results import Result
from gaussmix.core.validation import check_int, check_real
from gaussmix.core.version import __version__

from .channel import ChannelMoments, ProxWarmStart, channel_evaluation, channel_moments
from .linalg import sym_eigvals
from .losses import solve_batch
from .observables import free_energy_terms, test_accuracy, train_accuracy, weight_sparsity
from .outputs import error_keys, summary_keys
from .prior import prior_update
from .problem import Problem
from .quadrature import MAX_TENSOR_DIM, GaussHermite, QuadratureRule, auto_rule
from .symmetry import ClusterSymmetry, symmetric_rule
from .tolerances import (
    ANDERSON_RIDGE,
    ANDERSON_RIDGE_FLOOR,
    BIAS_RIDGE,
    DEGENERATE_BIAS_STEP,
    DIVERGENCE_FACTOR,
    FIXED_POINT_MAX_ITER,
    FIXED_POINT_TOL,
    LOG_CHART_MAX_LAM,
    LOG_CHART_MIN_EIG,
    MIN_RESTART_DAMPING,
    MIN_STEP_FRACTION,
    PSD_RTOL,
    QUAD_TOL,
    SMALL_LAM_HINT,
    SMOOTH_Q_MAX,
    TRAIN_ERROR_TARGET,
    check_tol,
    integration_warning_threshold,
)

__all__ = [
    "FixedPointResult",
    "FixedPointState",
    "FixedPointMap",
    "SolverOptions",
    "IterationStatus",
    "IterationOutcome",
    "AndersonState",
    "LogChart",
    "solve_problem",
    "with_options_doc",
    "DEFAULT_OPTIONS",
    "free_energy",
    "effective_state",
    "pack_state",
    "unpack_state",
    "is_valid_state",
    "residual_scale",
    "bias_condition_step",
    "MAX_QUADRATURE_DIM",
    "MAX_QUADRATURE_NODES",
]

#: largest dimension of a deterministic (tensor) channel rule; beyond it the automatic rule is
#: randomised quasi-Monte Carlo (:class:`~gaussmix.theory.quadrature.SobolRQMC`)
MAX_QUADRATURE_DIM = MAX_TENSOR_DIM
#: largest number of nodes a refinement may reach
MAX_QUADRATURE_NODES = 60_000
#: largest number of nodes of a randomised rule refined for the training error's target
#: (:data:`~gaussmix.theory.tolerances.TRAIN_ERROR_TARGET`): ``8 x 2**13`` Sobol' points
MAX_TRAIN_RQMC_NODES = 2**16
#: penalty strength of the starting point when ``lam = 0`` (the prior needs ``lam > 0``)
_START_LAM = 1e-3
#: the observables whose integration error is estimated
_ERROR_KEYS = ("test_error", "train_error", "train_loss")
#: consecutive images T(x) outside the cone of valid states (a ``Q_c`` that is not positive
#: semi-definite) after which a fixed point is reported spurious (docs/design.md pitfall 5): the
#: map of a valid state is valid in exact arithmetic, so this is a numerical breakdown
#: (Appendix E's note on numerical instabilities), which the iteration cannot step around
_MAX_INVALID_IMAGES = 3


# --------------------------------------------------------------------------- status
class IterationStatus(enum.Enum):
    """Why a fixed-point iteration stopped (``FixedPointResult.status``)."""

    #: the scaled residual fell below ``tol`` at a valid state
    CONVERGED = "converged"
    #: ``max_iter`` iterations without convergence
    MAX_ITER = "max-iter"
    #: NaN or infinite order parameters
    NON_FINITE = "non-finite"
    #: converged to a state whose ``Q_c`` or ``V_c`` is not positive (semi-)definite
    NOT_POSITIVE_DEFINITE = "not-positive-definite"
    #: the map failed at the starting point (no earlier iterate to retreat to)
    MAP_FAILED = "map-failed"
    #: the observables could not be evaluated at the fixed point
    NUMERICAL_FAILURE = "numerical-failure"
    #: converged to a degenerate state: the bias condition holds only in absolute terms
    #: (the channel's moments underflowed; see :func:`bias_condition_step`)
    DEGENERATE = "degenerate"

    @property
    def spurious(self) -> bool:
        """Whether the iteration reached an invalid point (docs/design.md pitfall 5), or a
        degenerate one."""
        return self in (
            IterationStatus.NON_FINITE,
            IterationStatus.NOT_POSITIVE_DEFINITE,
            IterationStatus.DEGENERATE,
        )

    @property
    def error_class(self) -> type[ConvergenceError]:
        """The exception raised for this status with ``throw=True``:
        :class:`~gaussmix.core.exceptions.SpuriousFixedPointError` for an invalid point,
        :class:`~gaussmix.core.exceptions.ConvergenceError` otherwise."""
        return SpuriousFixedPointError if self.spurious else ConvergenceError


# --------------------------------------------------------------------------- packing
def pack_state(Q: np.ndarray, M: np.ndarray, V: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The state vector ``x = (Q, M, V, b)`` (flattened, in this order) iterated by the solver.

    Parameters
    ----------
    Q, V : ndarray (K, L, L); M : ndarray (K, L); b : ndarray (L,)
        Order parameters in the effective output space.

    Returns
    -------
    ndarray (2 K L^2 + K L + L,)
    """
    return np.concatenate([Q.ravel(), M.ravel(), V.ravel(), b.ravel()])


def unpack_state(
    x: np.ndarray, K: int, L: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(Q, M, V, b)`` of a state vector (views of ``x``; the inverse of :func:`pack_state`).

    Parameters
    ----------
    x : ndarray
        State vector of a problem with ``K`` clusters and ``L`` effective outputs.
    K, L : int

    Returns
    -------
    Q : ndarray (K, L, L); M : ndarray (K, L); V : ndarray (K, L, L); b : ndarray (L,)
    """
    n2 = K * L * L
    Q = x[:n2].reshape(K, L, L)
    M = x[n2 : n2 + K * L].reshape(K, L)
    V = x[n2 + K * L : 2 * n2 + K * L].reshape(K, L, L)
    b = x[2 * n2 + K * L :]
    return Q, M, V, b


def is_valid_state(x: np.ndarray, K: int, L: int) -> bool:
    """Whether a state is finite, every ``Q_c`` positive semi-definite and every ``V_c``
    positive definite (the cone the iteration must stay in; docs/design.md pitfall 5).

    ``Q_c`` is accepted down to a smallest eigenvalue of ``-PSD_RTOL max(1, max |eig Q|)``
    (:data:`~gaussmix.theory.tolerances.PSD_RTOL`: rounding of the singular cross-entropy
    overlaps).
    """
    if not np.all(np.isfinite(x)):
        return False
    Q, _, V, _ = unpack_state(x, K, L)
    eq, ev = sym_eigvals(Q), sym_eigvals(V)
    scale = max(1.0, float(np.abs(eq).max()))
    return bool(eq.min() >= -PSD_RTOL * scale and ev.min() > 0)


def residual_scale(x: np.ndarray, K: int, L: int) -> np.ndarray:
    """The scale of each component of a state in the convergence test of the fixed-point
    iteration, ``max_i |T(x)_i - x_i| / s_i < tol``.

    ``s_i = max(|x_i|, u_i)``, with ``u_i`` the unit of the component's block, capped at 1:
    ``min(1, max |Q_c|)`` for ``Q_c``, ``min(1, max(max |M_c|, sqrt(max |Q_c|)))`` for
    ``M_c`` (the observables depend on ``M_c`` through ``M_c / sqrt(Q_c)``),
    ``min(1, max |V_c|)`` for ``V_c``, and 1 for ``b`` (an O(1) quantity that the Newton step
    of the bias condition solves to rounding).  Overlaps of order one or more are thus tested
    as before (``max(1, |x_i|)``), and small ones relative to their own size: at ``lam = 1e8``
    (``Q ~ 1e-17``, ``M ~ 1e-9``) an absolute test accepted the starting point with ``M``
    half its fixed-point value (issue 17).

    Parameters
    ----------
    x : ndarray
        State vector (:func:`pack_state`) of a problem with ``K`` clusters and ``L``
        effective outputs.
    K, L : int

    Returns
    -------
    ndarray
        Positive scales, shaped like ``x``.
    """
    Q, M, V, b = unpack_state(np.abs(x), K, L)
    tiny = np.finfo(float).tiny
    q = Q.reshape(K, -1).max(axis=1)
    unit_q = np.clip(q, tiny, 1.0)
    unit_m = np.clip(np.maximum(M.max(axis=1), np.sqrt(q)), tiny, 1.0)
    unit_v = np.clip(V.reshape(K, -1).max(axis=1), tiny, 1.0)
    return pack_state(
        np.maximum(Q, unit_q[:, None, None]),
        np.maximum(M, unit_m[:, None]),
        np.maximum(V, unit_v[:, None, None]),
        np.maximum(b, 1.0),
    )


def _q_is_psd(x: np.ndarray, K: int, L: int) -> bool:
    """Whether every ``Q_c`` of a (finite) state is positive semi-definite, to
    :data:`~gaussmix.theory.tolerances.PSD_RTOL` (the spurious fixed points of Appendix E;
    a vanishing ``V_c``, e.g. of a lasso that keeps no weight, is not one of them)."""
    Q = unpack_state(x, K, L)[0]
    eq = sym_eigvals(Q)
    return bool(eq.min() >= -PSD_RTOL * max(1.0, float(np.abs(eq).max())))


# --------------------------------------------------------------------------- the map
@dataclass(frozen=True)
class HatEvaluation:
    """One channel evaluation at a state: the channel moments and the hat parameters
    ``Qhat_c = alpha rho_c E[f f^T]``, ``Mhat_c = alpha rho_c E[f]``,
    ``Vhat_c = alpha rho_c E[(I + H V_c)^{-1} H]`` (Theorem 1, eq. spgeneral)."""

    x: np.ndarray
    moments: ChannelMoments
    Qhat: np.ndarray
    Mhat: np.ndarray
    Vhat: np.ndarray


class FixedPointMap:
    """The fixed-point map ``x -> T(x)`` of Theorem 1 for one problem and one quadrature rule.

    Parameters
    ----------
    problem : Problem
    rule : QuadratureRule
        The channel's quadrature rule (unused by closed-form channels).

    Attributes
    ----------
    last : HatEvaluation or None
        The last channel evaluation, returned again by :meth:`hats` at the same state (the
        observables at a converged state then cost no second channel evaluation).
    warm : ProxWarmStart or None
        The proximal points of the last evaluation, the warm start of the next.

    Notes
    -----
    Lifetime of ``last`` and ``warm``: the map's own.  A map is made for one solve with one
    rule (a refinement makes a new map) and both are dropped with it; nothing is shared
    between maps or carried into results.
    """

    __slots__ = ("problem", "rule", "K", "L", "ar", "last", "warm", "symmetry", "log_chart")

    def __init__(
        self,
        problem: Problem,
        rule: QuadratureRule,
        *,
        symmetry: ClusterSymmetry | None = None,
        log_chart: bool = False,
    ) -> None:
        self.problem = problem
        self.rule = rule
        self.K = problem.n_clusters
        self.L = problem.dim
        self.ar = problem.alpha * problem.mixture.rho
        self.last: HatEvaluation | None = None
        self.warm: ProxWarmStart | None = None
        self.symmetry = symmetry
        self.log_chart = log_chart

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(Q, M, V, b)`` of a state of this problem (:func:`unpack_state`)."""
        return unpack_state(x, self.K, self.L)

    def is_valid(self, x: np.ndarray) -> bool:
        """:func:`is_valid_state` for this problem."""
        return is_valid_state(x, self.K, self.L)

    def hats(self, x: np.ndarray) -> HatEvaluation:
        """Channel moments and hat parameters at ``x`` (the last evaluation is remembered)."""
        last = self.last
        if last is not None and np.array_equal(last.x, x):
            return last
        Q, M, V, b = unpack_state(x, self.K, self.L)
        p = self.problem
        sym = self.symmetry
        if sym is None:
            mom, self.warm = channel_evaluation(p.loss, p.y, M, b, Q, V, self.rule, self.warm)
        else:  # exchangeable clusters: cluster 0's integrals stand for all
            Q, M, V, b = sym.symmetric_state(Q, M, V, b)
            mom0, self.warm = channel_evaluation(
                p.loss, p.y[:1], M[:1], b, Q[:1], V[:1], self.rule, self.warm
            )
            mom = sym.expand_moments(mom0)
        Mhat = self.ar[:, None] * mom.Ef
        Qhat = self.ar[:, None, None] * mom.Eff
        Vhat = self.ar[:, None, None] * mom.Edf
        self.last = HatEvaluation(x.copy(), mom, Qhat, Mhat, Vhat)
        return self.last

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``T(x)``: channel, Newton step of the bias condition, prior."""
        b = self.unpack(x)[3]
        if self.symmetry is not None:  # the equivariant bias (see hats)
            b = np.zeros_like(b)
        ev = self.hats(x)
        Sv = ev.Vhat.sum(axis=0)
        Sm = ev.Mhat.sum(axis=0)
        size = float(np.abs(Sv).max())
        reg = BIAS_RIDGE * (size if size > 0.0 else 1.0)
        db = solve_batch(Sv + reg * np.eye(self.L), Sm)
        pr = prior_update(self.problem, ev.Qhat, ev.Mhat, ev.Vhat)
        return pack_state(pr.Q, pr.M, pr.V, b + db)


@dataclass(frozen=True)
class FixedPointState:
    """The fixed point behind a :class:`FixedPointResult`, in the problem's effective output
    space (see :mod:`gaussmix.theory.problem`).

    Attributes
    ----------
    problem : Problem
    rule : QuadratureRule
        The channel rule of the returned state (a placeholder for closed-form channels).
    x : ndarray
        The state vector (:func:`pack_state`).
    symmetry : ClusterSymmetry or None
        The relabelling symmetry the solve used (exchangeable clusters, see
        :mod:`gaussmix.theory.symmetry`), kept by :meth:`map`.
    """

    problem: Problem
    rule: QuadratureRule
    x: np.ndarray
    symmetry: ClusterSymmetry | None = None

    def unpack(
        self, x: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(Q, M, V, b)`` of the fixed point, or of another state ``x`` of the same problem
        (e.g. a perturbed one)."""
        return unpack_state(self.x if x is None else x, self.problem.n_clusters, self.problem.dim)

    def map(self, problem: Problem | None = None) -> FixedPointMap:
        """A fresh map ``T`` with this state's rule, for this problem or another one with the
        same clusters and outputs (e.g. another ``lam``); ``T(x) = x`` at the fixed point."""
        return FixedPointMap(
            self.problem if problem is None else problem, self.rule, symmetry=self.symmetry
        )


# --------------------------------------------------------------------------- result
@dataclass
class FixedPointResult(Result):
    """Result of :func:`~gaussmix.theory.api.solve`, in the spirit of
    ``scipy.optimize.OptimizeResult`` (the result protocol of :mod:`gaussmix.core.results`).

    Order parameters are in the full label space (``L`` = label dimension): ``Q``, ``V``,
    ``Qhat``, ``Vhat`` have shape (K, L, L); ``M``, ``Mhat`` (K, L); ``b`` (L,).  For the
    cross-entropy the outputs are in the gauge ``1^T h = 0`` (``Q_c 1 = 0``).

    Attributes
    ----------
    success : bool
        A valid fixed point was found within ``tol`` (``converged`` is its deprecated name;
        the JSON key and table column keep the name ``converged``).
    n_iter : int
        Iterations of the fixed-point map.
    residual : float
        Final scaled residual ``max |T(x) - x| / s`` (:func:`residual_scale`).
    message : str
        How the iteration ended, in words.
    Q, V : ndarray (K, L, L)
        The overlaps of Theorem 1: ``Q_c = W Sigma_c W^T / d`` and the response ``V_c``.
    M : ndarray (K, L)
        ``M_c = W mu_c / sqrt(d)``.
    b : ndarray (L,)
        The intercept.
    Qhat, Vhat : ndarray (K, L, L)
        The conjugate overlaps of Theorem 1 (the hats).
    Mhat : ndarray (K, L)
        The conjugate of ``M``.
    test_error, train_error, train_loss : float
        Theorem 2.
    free_energy : float
        RS free energy (eq. app:rsfree) at the fixed point (= minimal risk per dimension).
    penalty_value : float
        ``E[r(W*)] / d``.
    integration_error : float
        Largest estimated integration error of the three errors (0 for closed-form channels
        with orthants of dimension <= 2).
    integration_errors : dict
        The estimate for each of ``test_error``, ``train_error``, ``train_loss``: the change
        under a refined channel rule (for a randomised rule, the standard error across its
        independent replicates) plus the error of the final evaluation itself (the training
        error of the cross-entropy with K >= 4 uses seeded quasi-Monte Carlo).  The rule
        reached is ``params['quadrature']`` (and ``state.rule``).
    nonzero_fraction : float
        Expected fraction of non-zero components of ``W*`` (1.0 for ridge).
    nonzero_fraction_support, nonzero_fraction_off_support : float
        The same on the directions where the means have non-zero / zero components (NaN if
        there are none).
    l1_norm : float
        ``||W*||_1 / d``.
    params : dict
        Provenance: the problem, ``tol``, the quadrature rule, the library version.
    status : IterationStatus or None
        Why the iteration stopped (scipy's ``status``).
    state : FixedPointState or None
        The fixed point in the effective output space, for tools that continue from it
        (implicit differentiation, warm starts).
    """

    success: bool
    n_iter: int
    residual: float
    message: str
    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    b: np.ndarray
    Qhat: np.ndarray
    Mhat: np.ndarray
    Vhat: np.ndarray
    test_error: float
    train_error: float
    train_loss: float
    free_energy: float
    penalty_value: float
    integration_error: float
    integration_errors: dict = field(default_factory=dict)
    nonzero_fraction: float = float("nan")
    nonzero_fraction_support: float = float("nan")
    nonzero_fraction_off_support: float = float("nan")
    l1_norm: float = float("nan")
    params: dict = field(default_factory=dict)
    status: IterationStatus | None = None
    state: FixedPointState | None = field(default=None, repr=False)

    @property
    def _state(self) -> tuple[Problem, QuadratureRule, np.ndarray] | None:
        """Deprecated: ``(problem, rule, x)`` of :attr:`state` (use ``state``)."""
        warnings.warn(
            "FixedPointResult._state is deprecated; use FixedPointResult.state",
            DeprecationWarning,
            stacklevel=2,
        )
        s = self.state
        return None if s is None else (s.problem, s.rule, s.x)

    #: attribute behind each key of :meth:`to_dict` whose name differs
    _JSON_ATTR: ClassVar[dict[str, str]] = {"converged": "success"}
    #: keys of :meth:`to_dict` beside the observables, and how each is written
    _STATUS_JSON: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "converged": bool,
        "n_iter": int,
        "residual": float,
        "Q": np.ndarray.tolist,
        "M": np.ndarray.tolist,
        "V": np.ndarray.tolist,
        "b": np.ndarray.tolist,
        "integration_error": float,
        "integration_errors": lambda errs: {k: float(v) for k, v in errs.items()},
        "message": str,
    }

    @classmethod
    def json_keys(cls) -> tuple[str, ...]:
        """Keys of :meth:`to_dict` (the ``gaussmix point --json`` contract), in order: the
        errors, the status and order parameters, the free energy, the integration errors,
        the non-zero fraction (observables from :data:`gaussmix.theory.outputs.OBSERVABLES`)
        and the message."""
        errors = error_keys()
        return (
            *errors,
            "converged",
            "n_iter",
            "residual",
            "Q",
            "M",
            "V",
            "b",
            "free_energy",
            "integration_error",
            "integration_errors",
            "nonzero_fraction",
            "message",
        )

    @classmethod
    @functools.cache
    def _json_plan(cls) -> tuple[tuple[str, str, Callable[[Any], Any]], ...]:
        """``(key, attribute, converter)`` of every key of :meth:`to_dict`, computed once."""
        return tuple(
            (k, cls._JSON_ATTR.get(k, k), cls._STATUS_JSON.get(k, float)) for k in cls.json_keys()
        )

    def to_dict(self) -> dict:
        """JSON-friendly dictionary (the ``gaussmix point --json`` contract,
        :meth:`json_keys`)."""
        values = self.__dict__
        return {k: conv(values[a]) for k, a, conv in self._json_plan()}

    def summary(self) -> dict:
        """Scalar observables only (a row of a learning-curve table): every registered
        observable, then the status."""
        out = {k: getattr(self, k) for k in summary_keys()}
        out.update(
            converged=self.success,
            n_iter=self.n_iter,
            residual=self.residual,
            integration_error=self.integration_error,
        )
        return out

    def to_frame(self) -> Any:
        """One row: :meth:`summary` (the row of a learning-curve table)."""
        import pandas as pd

        return pd.DataFrame([self.summary()])


# --------------------------------------------------------------------------- starting point
def _initial_state(problem: Problem) -> np.ndarray:
    L = problem.dim
    rho = problem.mixture.rho
    ar = problem.alpha * rho
    yr = problem.y @ problem.P.T  # effective labels
    ybar = rho @ yr
    Mhat = 0.5 * ar[:, None] * (yr - ybar)
    Qhat = 0.5 * ar[:, None, None] * np.eye(L)
    Vhat = 0.5 * ar[:, None, None] * np.eye(L)
    lam = problem.lam if problem.lam > 0 else _START_LAM
    pr = prior_update(problem, Qhat, Mhat, Vhat, lam=lam)
    return pack_state(pr.Q, pr.M, pr.V, ybar)


def _state_from_result(problem: Problem, res: FixedPointResult | dict) -> np.ndarray | None:
    """Effective-space state vector from a result (or a dict with full-space Q, M, V, b)."""
    P = problem.P
    get = res.get if isinstance(res, dict) else lambda k: getattr(res, k)
    try:
        Q = P @ np.asarray(get("Q")) @ P.T
        V = P @ np.asarray(get("V")) @ P.T
        M = np.asarray(get("M")) @ P.T
        b = np.asarray(get("b")) @ P.T
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if Q.shape != (problem.n_clusters, problem.dim, problem.dim) or M.shape != (
        problem.n_clusters,
        problem.dim,
    ):
        return None
    return pack_state(Q, M, V, b)


def _start(problem: Problem, init: FixedPointResult | dict | None) -> np.ndarray:
    """The starting state: ``init`` if it is a valid state of this problem, else the default."""
    x0 = _state_from_result(problem, init) if init is not None else None
    if x0 is None or not is_valid_state(x0, problem.n_clusters, problem.dim):
        x0 = _initial_state(problem)
    return x0


# --------------------------------------------------------------------------- Anderson mixing
@dataclass(frozen=True)
class AndersonState:
    """Secant history of Anderson mixing: the last ``memory`` difference pairs.

    ``dxs[i] = x_{j+1} - x_j`` and ``dgs[i] = T(x_{j+1}) - T(x_j)`` for consecutive iterates;
    together they are a secant model of the Jacobian of ``T``.  Immutable: :meth:`update`
    and :meth:`cleared` return new states.  A state outlives one iteration only through the
    ``history`` of :func:`solve_problem`, which hands the final state of a point of a curve
    to the next point as a quasi-Newton warm start.

    Attributes
    ----------
    dxs, dgs : tuple of ndarray
        The pairs, oldest first.
    memory : int
        Largest number of pairs kept (0: plain damped iteration).
    log_chart : bool
        Whether the pairs are differences in :class:`LogChart` coordinates (an iteration in
        the other coordinates starts without them).
    """

    dxs: tuple[np.ndarray, ...]
    dgs: tuple[np.ndarray, ...]
    memory: int
    log_chart: bool = False

    @classmethod
    def init(cls, memory: int, previous: AndersonState | None = None) -> AndersonState:
        """A state with memory ``memory``, starting from the newest pairs of ``previous``."""
        if previous is None:
            return cls((), (), memory)
        start = max(0, len(previous.dxs) - memory)
        return cls(previous.dxs[start:], previous.dgs[start:], memory, previous.log_chart)

    @property
    def empty(self) -> bool:
        """Whether there are no pairs."""
        return not self.dxs

    def update(self, dx: np.ndarray, dg: np.ndarray) -> AndersonState:
        """The state with the pair ``(dx, dg)`` appended (the oldest dropped beyond memory)."""
        dxs, dgs = self.dxs + (dx,), self.dgs + (dg,)
        if len(dxs) > self.memory:
            dxs, dgs = dxs[1:], dgs[1:]
        return AndersonState(dxs, dgs, self.memory, self.log_chart)

    def cleared(self) -> AndersonState:
        """The state without pairs (a restart of the mixing)."""
        return AndersonState((), (), self.memory, self.log_chart)

    def extrapolate(
        self, x: np.ndarray, r: np.ndarray, beta: float, scale: np.ndarray
    ) -> np.ndarray:
        """The Anderson-mixed step from ``x`` with residual ``r = T(x) - x`` and damping
        ``beta``: ``x + beta r - (dX + beta (dG - dX)) gamma``, with ``gamma`` minimising the
        scaled linearised residual ``|(r - (dG - dX) gamma) / scale|``.

        The normal equations carry the ridge ``(ANDERSON_RIDGE tr(A) / m +
        ANDERSON_RIDGE_FLOOR) I`` (:mod:`gaussmix.theory.tolerances`).  Raises
        ``numpy.linalg.LinAlgError`` if they are singular all the same.
        """
        dX = np.stack(self.dxs, axis=1)
        dG = np.stack(self.dgs, axis=1)
        dR = (dG - dX) / scale[:, None]
        A = dR.T @ dR
        m = A.shape[0]
        A += (ANDERSON_RIDGE * np.trace(A) / m + ANDERSON_RIDGE_FLOOR) * np.eye(m)
        gamma = np.linalg.solve(A, dR.T @ (r / scale))
        return x + beta * r - (dX + beta * (dG - dX)) @ gamma


@dataclass(frozen=True)
class IterationOutcome:
    """How one Anderson-accelerated iteration ended.

    Attributes
    ----------
    x : ndarray
        The returned state (on convergence ``T(x)`` or the last evaluated state, see
        :func:`iterate`; otherwise the last iterate).
    n_iter : int
        Evaluations of the map.
    residual : float
        Last scaled residual ``max |T(x) - x| / s`` (:func:`residual_scale`).
    status : IterationStatus
    message : str
    anderson : AndersonState
        The final secant history (a warm start for the next point of a curve).
    """

    x: np.ndarray
    n_iter: int
    residual: float
    status: IterationStatus
    message: str
    anderson: AndersonState

    @property
    def converged(self) -> bool:
        """Whether the status is :attr:`IterationStatus.CONVERGED`."""
        return self.status is IterationStatus.CONVERGED


def iterate(
    T: FixedPointMap,
    x0: np.ndarray,
    anderson: AndersonState,
    **kw: Any,
) -> IterationOutcome:
    """:func:`_iterate_checked` with numpy's floating-point warnings off: a trial state far
    from the fixed point (an Anderson extrapolation) can overflow inside the map, and its
    image is then rejected by the explicit finiteness test, not reported as a
    RuntimeWarning."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return _iterate_checked(T, x0, anderson, **kw)


def _iterate_checked(
    T: FixedPointMap,
    x0: np.ndarray,
    anderson: AndersonState,
    *,
    tol: float,
    max_iter: int,
    damping: float,
    callback: Callable[[int, float], Any] | None = None,
    return_image: bool = True,
) -> IterationOutcome:
    """Anderson-accelerated fixed-point iteration with safeguards, from ``x0`` with the
    secant history ``anderson``.

    On convergence (``max |T(x) - x| / s < tol``, :func:`residual_scale`) the image ``T(x)``
    is returned,
    or ``x`` itself with ``return_image=False`` (whose channel moments the map remembers).
    A failing map evaluation, or a non-finite image, retreats half-way to the previous
    iterate with half the damping; an extrapolation that diverges or leaves the cone of
    valid states drops the history; a damped step that leaves the cone is shortened.

    The mixing (secant pairs, extrapolation, damped steps) happens in the map's chart
    (:class:`LogChart` where ``T.log_chart``, else the state itself); the residual and the
    convergence test are always those of the state.
    """
    K, L = T.K, T.L
    S = IterationStatus
    chart = LogChart(K, L) if getattr(T, "log_chart", False) else None
    x = x0.copy()
    state = anderson
    if state.log_chart != (chart is not None):  # pairs of the other coordinates: dropped
        state = AndersonState((), (), state.memory, chart is not None)
    last: tuple[np.ndarray, np.ndarray] | None = None  # (y, T(x)) in chart coordinates
    best = np.inf
    beta = damping
    res = np.inf
    invalid_images = 0
    for it in range(1, max_iter + 1):
        try:
            g = T(x)
        except (FloatingPointError, np.linalg.LinAlgError) as exc:
            if last is not None:
                x = _back(chart, last[0] + 0.5 * beta * (last[1] - last[0]))
                state = state.cleared()
                last = None
                beta *= 0.5
                continue
            return IterationOutcome(x, it, np.inf, S.MAP_FAILED, f"map failed: {exc}", state)
        r = g - x
        # the mixing's weights and measure of a step (divergence), in units max(1, |x|);
        # the convergence test is relative to the size of each block (residual_scale)
        scale = np.maximum(1.0, np.abs(x))
        step = float(np.max(np.abs(r) / scale))
        res = float(np.max(np.abs(r) / residual_scale(x, K, L))) if np.isfinite(step) else step
        if callback is not None:
            callback(it, res)
        if not np.isfinite(step):
            if last is not None:  # a step from a finite image overflowed: retreat from it
                x = _back(chart, last[0] + 0.5 * beta * (last[1] - last[0]))
                state = state.cleared()
                last = None
                beta *= 0.5
                continue
            msg = "NaN or infinite order parameters"
            return IterationOutcome(x, it, res, S.NON_FINITE, msg, state)
        invalid_images = 0 if _q_is_psd(g, K, L) else invalid_images + 1
        if invalid_images >= _MAX_INVALID_IMAGES:
            msg = (
                "spurious fixed point: the map returns an overlap matrix Q_c that is not "
                f"positive semi-definite ({invalid_images} iterations in a row)"
            )
            return IterationOutcome(x, it, res, S.NOT_POSITIVE_DEFINITE, msg, state)
        y, yg = (x, g) if chart is None else (chart.forward(x), chart.forward(g))
        if y is None or yg is None:  # outside the chart: a plain step, history dropped
            state, last = state.cleared(), None
            if res < tol:
                xr = g if return_image else x
                return IterationOutcome(xr, it, res, S.CONVERGED, "converged", state)
            x, state = _next_iterate(x, r, beta, scale, state, K, L, None)
            continue
        if last is not None:
            state = state.update(y - last[0], yg - last[1])
        if res < tol:
            xr = g if return_image else x
            return IterationOutcome(xr, it, res, S.CONVERGED, "converged", state)
        if step > DIVERGENCE_FACTOR * best and not state.empty:
            # divergence of the extrapolation: restart from here with more damping
            state = state.cleared()
            beta = max(MIN_RESTART_DAMPING, 0.5 * beta)
        best = min(best, step)
        last = (y, yg)
        yscale = scale if chart is None else np.maximum(1.0, np.abs(y))
        x, state = _next_iterate(y, yg - y, beta, yscale, state, K, L, chart)
    msg = f"did not converge in {max_iter} iterations (residual {res:.3g})"
    return IterationOutcome(x, max_iter, res, S.MAX_ITER, msg, state)


def _back(chart: LogChart | None, y: np.ndarray) -> np.ndarray:
    """The state of chart coordinates ``y`` (the identity without a chart)."""
    return y if chart is None else chart.inverse(y)


def _next_iterate(
    y: np.ndarray,
    r: np.ndarray,
    beta: float,
    scale: np.ndarray,
    state: AndersonState,
    K: int,
    L: int,
    chart: LogChart | None = None,
) -> tuple[np.ndarray, AndersonState]:
    """The next iterate (a state) from chart coordinates ``y`` with residual ``r = T(x) - x``
    in the chart: the Anderson extrapolation when it stays in the cone of valid states
    (else the history is dropped), otherwise the damped step ``y + beta r``, shortened until
    it is valid (without a chart, ``y`` is the state itself)."""
    if not state.empty and state.memory > 0:
        try:
            cand = _back(chart, state.extrapolate(y, r, beta, scale))
            if is_valid_state(cand, K, L):
                return cand, state
            state = state.cleared()
        except np.linalg.LinAlgError:
            state = state.cleared()
    t = 1.0
    x_new = _back(chart, y + beta * r)
    while t > MIN_STEP_FRACTION and not is_valid_state(x_new, K, L):
        t *= 0.5
        x_new = _back(chart, y + t * beta * r)
    return x_new, state


@dataclass(frozen=True)
class LogChart:
    """Coordinates ``(log Q_c, M_c, log V_c, b)`` of a state (matrix logarithms of the
    positive-definite overlaps) in which :func:`iterate` mixes.

    At small ``lam`` the overlaps of the fixed point are large (``V_c ~ 1 / lam`` where the
    data are separable) and the map moves them by a factor per iteration far from it: a
    multiplicative march that Anderson mixing extrapolates badly in the state itself
    (measured: 100-150 iterations at K = 3, lam = 1e-4 from the default start, 26 in these
    coordinates).  Every point of the chart is a valid state (the exponential of a symmetric
    matrix is positive definite), so extrapolations cannot leave the cone.  The fixed
    points, the residual and the convergence test are unchanged (they are those of the
    state).

    Attributes
    ----------
    K, L : int
        Clusters and effective outputs of the states.
    """

    K: int
    L: int

    def forward(self, x: np.ndarray) -> np.ndarray | None:
        """Chart coordinates of the state ``x``, or None where an overlap ``Q_c`` or ``V_c``
        is not positive definite (to :data:`~gaussmix.theory.tolerances.LOG_CHART_MIN_EIG`
        relative to its largest eigenvalue) or ``x`` is not finite."""
        if not np.all(np.isfinite(x)):
            return None
        Q, M, V, b = unpack_state(x, self.K, self.L)
        lq, lv = _logm_pd(Q), _logm_pd(V)
        if lq is None or lv is None:
            return None
        return pack_state(lq, M, lv, b)

    def inverse(self, y: np.ndarray) -> np.ndarray:
        """The state of chart coordinates ``y``."""
        lq, M, lv, b = unpack_state(y, self.K, self.L)
        return pack_state(_expm_sym(lq), M, _expm_sym(lv), b)


def _logm_pd(A: np.ndarray) -> np.ndarray | None:
    """Matrix logarithm of a stack of symmetric positive-definite matrices, or None."""
    w, U = np.linalg.eigh(0.5 * (A + np.swapaxes(A, -1, -2)))
    if not np.all(w > LOG_CHART_MIN_EIG * np.abs(w).max(axis=-1, keepdims=True)):
        return None
    return (U * np.log(w)[..., None, :]) @ np.swapaxes(U, -1, -2)


def _expm_sym(A: np.ndarray) -> np.ndarray:
    """Matrix exponential of a stack of symmetric matrices."""
    w, U = np.linalg.eigh(0.5 * (A + np.swapaxes(A, -1, -2)))
    return (U * np.exp(w)[..., None, :]) @ np.swapaxes(U, -1, -2)


# --------------------------------------------------------------------------- observables
@dataclass(frozen=True)
class _Observables:
    """Theorem 2 observables at one state; ``complete`` once the free energy, penalty and
    sparsity are in (a "light" evaluation has only the three errors, which the
    integration-error estimate compares)."""

    state: tuple
    hats: tuple
    test_error: float
    train_error: float
    train_loss: float
    errors: dict
    free_energy: float = np.nan
    penalty_value: float = np.nan
    sparsity: dict = field(default_factory=dict)
    complete: bool = False

    def value(self, key: str) -> float:
        """One of the three errors by name (``test_error``, ``train_error``, ``train_loss``)."""
        return float(getattr(self, key))


def _observables(
    problem: Problem,
    T: FixedPointMap,
    x: np.ndarray,
    *,
    light: bool = False,
    spread: bool = False,
) -> _Observables:
    """Theorem 2 observables at the state ``x``; ``light`` computes only the three errors.

    The seeded estimators (orthant probabilities of dimension >= 3, the training error with
    three or more outputs) take the seed of a randomised channel rule.  ``spread`` asks for
    their cheaper versions with the same seeds (common random numbers), for the differences
    between nearby states of :func:`_replicate_spread`.
    """
    Q, M, V, b = T.unpack(x)
    ev = T.hats(x)
    rho = problem.mixture.rho
    seed = getattr(T.rule, "seed", 0)
    sym = T.symmetry is not None  # exchangeable clusters: cluster 0 stands for all
    if sym:
        Q, M, V, b = T.symmetry.symmetric_state(Q, M, V, b)
    test_acc, test_err = test_accuracy(problem, M, b, Q, seed=seed, quick=spread, exchangeable=sym)
    train_acc, train_err = train_accuracy(
        problem, M, b, Q, V, qmc_seed=seed, quick=spread, exchangeable=sym
    )
    obs = _Observables(
        state=(Q, M, V, b),
        hats=(ev.Qhat, ev.Mhat, ev.Vhat),
        # (probabilities: 1 - sum can round a hair below 0, e.g. -2.2e-16 for a training
        # error of zero at K = 4, found by tests/test_properties.py)
        test_error=float(np.clip(1.0 - rho @ test_acc, 0.0, 1.0)),
        train_error=float(np.clip(1.0 - rho @ train_acc, 0.0, 1.0)),
        train_loss=float(rho @ ev.moments.Eloss),
        errors={"test_error": test_err, "train_error": train_err, "train_loss": 0.0},
    )
    return obs if light else _with_statistics(problem, T, x, obs)


def _with_statistics(
    problem: Problem, T: FixedPointMap, x: np.ndarray, obs: _Observables
) -> _Observables:
    """``obs`` with the free energy (eq. app:rsfree), penalty value and sparsity of ``W*``."""
    Q, M, V, b = T.unpack(x)
    ev = T.hats(x)
    pr = prior_update(problem, ev.Qhat, ev.Mhat, ev.Vhat, details=True)
    fe = free_energy_terms(problem, M, Q, V, ev.Mhat, ev.Qhat, ev.Vhat, ev.moments.Eenv, pr.psi_w)
    return replace(
        obs,
        free_energy=fe,
        penalty_value=pr.penalty,
        sparsity=weight_sparsity(problem.mixture, pr),
        complete=True,
    )


def _observables_safe(problem: Problem, T: FixedPointMap, x: np.ndarray) -> _Observables:
    """NaN observables at a failed point (with its hats where they can be evaluated)."""
    Q, M, V, b = T.unpack(x)
    nan = np.full_like
    try:
        ev = T.hats(x)
        hats = (ev.Qhat, ev.Mhat, ev.Vhat)
    except Exception:  # noqa: BLE001 - reporting a failed point
        hats = (nan(Q, np.nan), nan(M, np.nan), nan(V, np.nan))
    return _Observables((Q, M, V, b), hats, np.nan, np.nan, np.nan, {})


def _needs_quadrature(problem: Problem) -> bool:
    return not problem.loss.exact_channel


# --------------------------------------------------------------------------- options
#: Parameter documentation shared by :func:`solve` and :func:`solve_problem` (numpydoc), one
#: entry per solver option, in the order of their signatures.
_OPTIONS_DOC = """\
    tol : float
        Tolerance on the scaled change of every order parameter,
        ``max_i |T(x)_i - x_i| / s_i < tol`` with ``s_i = max(|x_i|, u_i)`` and ``u_i`` the
        size of the component's block capped at 1 (default
        :data:`~gaussmix.theory.tolerances.FIXED_POINT_TOL`; at most
        :data:`~gaussmix.theory.tolerances.MAX_FIXED_POINT_TOL` = 1e-2).
    max_iter : int
        Maximum number of iterations.
    quadrature : QuadratureRule, optional
        Rule for the channel expectations (``GaussHermite``, ``GradedPanels`` or
        ``SobolRQMC``; the seed of a randomised rule is its ``seed``).  Default: chosen by
        output dimension and regime (:func:`gaussmix.theory.quadrature.auto_rule`): in one
        dimension Gauss-Hermite, replaced by graded composite Gauss-Legendre panels when
        the solution is sharp (an eigenvalue of ``Q_c`` above ``SMOOTH_Q_MAX``, small
        ``lam``); graded panels in two (accurate at every ``lam``), tensor Gauss-Hermite
        in three to five, seeded randomised quasi-Monte Carlo beyond five.
    init : FixedPointResult or dict, optional
        Warm start (e.g. the previous point of a curve), or a dict of full-space ``Q``,
        ``M``, ``V``, ``b`` (e.g. a predictor extrapolated along a curve).
    anderson : int
        Anderson memory (0: damped plain iteration).
    damping : float
        Mixing parameter in (0, 1].
    estimate_error : bool
        Re-solve with a refined rule and report the change of the errors as
        ``integration_error`` (the refined answer is returned); with a randomised rule,
        re-solve with each of its independent replicates instead and report the standard
        error of the observables across them.
    auto_refine : bool
        While the estimated integration error of the test error or the training loss exceeds
        ``quad_tol``, refine the rule again (up to ``max_refine`` times, and at most
        ``MAX_QUADRATURE_NODES`` nodes; a randomised rule only while the target is within
        reach at the node cap, assuming a standard error falling like ``1 / N``); otherwise
        refine once.
    quad_tol : float
        Target integration error for ``auto_refine`` (default
        :data:`~gaussmix.theory.tolerances.QUAD_TOL`).
    max_refine : int
        Largest number of refinements with ``auto_refine`` (0 to 10).
    throw : bool
        Raise :class:`~gaussmix.core.exceptions.ConvergenceError` when no valid fixed point is
        found (default), :class:`~gaussmix.core.exceptions.SpuriousFixedPointError` when the
        iteration reached an invalid point (NaN, or an overlap matrix that is not positive
        definite).  With ``throw=False`` a result with ``success=False`` and NaN
        observables is returned.
    callback : callable, optional
        Called as ``callback(iteration, residual)`` after every evaluation of the map.
    history : dict, optional
        Carries the Anderson secant history of each quadrature rule from one point of a
        curve to the next (updated in place; pass the same dict along the curve).
    continuation : bool
        First converge with a coarser rule where the rule is expensive
        (:meth:`~gaussmix.theory.quadrature.GaussHermite.coarsened`); it changes the
        starting point only, not the fixed point.
    symmetry : bool
        Use the relabelling symmetry of exchangeable clusters (balanced isotropic clusters
        with one variance and a Gram matrix ``a I + b 11^T``, cross-entropy, ridge; see
        :mod:`gaussmix.theory.symmetry`): the order parameters are then equivariant, and one
        cluster's channel, test-error and training-error integrals stand for all ``K``.
        Ignored for other problems.
"""


def with_options_doc(func: Callable) -> Callable:
    """Insert :data:`_OPTIONS_DOC` at the ``%(solver_options)s`` mark of a docstring."""
    func.__doc__ = (func.__doc__ or "").replace("    %(solver_options)s\n", _OPTIONS_DOC + "\n")
    return func


@dataclass(frozen=True)
class SolverOptions:
    """The solver's options, validated; the one definition of their defaults.

    :func:`solve` and :func:`solve_problem` take these fields as keyword arguments with
    these defaults (see :func:`solve` for their meaning).  Construction validates them: a
    bad value raises ``ValueError`` / ``TypeError`` naming the option.
    """

    tol: float = FIXED_POINT_TOL
    max_iter: int = FIXED_POINT_MAX_ITER
    quadrature: QuadratureRule | None = None
    anderson: int = 6
    damping: float = 1.0
    estimate_error: bool = True
    auto_refine: bool = True
    quad_tol: float = QUAD_TOL
    max_refine: int = 5
    throw: bool = True
    continuation: bool = True
    symmetry: bool = True

    def __post_init__(self) -> None:
        checked = {
            "tol": check_tol(self.tol),
            "max_iter": check_int("max_iter", self.max_iter, low=1),
            "anderson": check_int("anderson", self.anderson, low=0, high=50),
            "damping": check_real("damping", self.damping, low=0.0, high=1.0, low_open=True),
            "quad_tol": check_real("quad_tol", self.quad_tol, low=0.0),
            "max_refine": check_int("max_refine", self.max_refine, low=0, high=10),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        rule = self.quadrature
        if rule is not None and not isinstance(rule, QuadratureRule):
            raise TypeError(
                "quadrature must be a GaussHermite, GradedPanels or SobolRQMC rule, got "
                f"{type(rule).__name__}"
            )


DEFAULT_OPTIONS = SolverOptions()


def _channel_rule(
    problem: Problem, quadrature: QuadratureRule | None, symmetry: bool = False
) -> QuadratureRule:
    """The channel's quadrature rule: the given one (checked against the problem), the
    automatic one for the output dimension (:func:`~gaussmix.theory.quadrature.auto_rule`),
    or a placeholder for closed-form channels.

    With ``symmetry`` and exchangeable clusters (one cluster's channel is integrated instead
    of ``K``) an automatic randomised rule spends the work saved on its points: ``2**j``
    times the points per replicate, ``2**j <= K``, within ``MAX_QUADRATURE_NODES`` (its
    standard error falls by about that factor to the power 1/2 or more).  Measured at
    K = 10, lam = 1: training-loss standard error 1.9e-5 with 8 x 2**11 points for one
    cluster (10 s), 3.6e-4 with 8 x 2**8, 1.6e-4 for 8 x 2**8 on all ten clusters (63 s)."""
    L = problem.dim
    if quadrature is not None:
        if quadrature.dim != L:
            raise ValueError(f"quadrature has dimension {quadrature.dim}, the problem needs {L}")
        if getattr(quadrature, "needs_symmetry", False) and not (
            symmetry and ClusterSymmetry.of(problem) is not None
        ):
            raise ValueError(
                f"quadrature {type(quadrature).__name__} needs exchangeable clusters, "
                "cross-entropy, ridge and symmetry=True"
            )
        return quadrature
    if not _needs_quadrature(problem):
        return GaussHermite(1, 1)  # unused: closed-form channel
    rule = auto_rule(L, smooth=True)
    if symmetry and rule.randomised and ClusterSymmetry.of(problem) is not None:
        extra = int(np.floor(np.log2(problem.n_clusters)))
        while extra > 0 and rule.weights.size * 2**extra > MAX_QUADRATURE_NODES:
            extra -= 1
        rule = replace(rule, n_log2=rule.n_log2 + extra)
    return rule


def _sharp_rule(problem: Problem, rule: QuadratureRule, x: np.ndarray) -> QuadratureRule | None:
    """The automatic rule of the sharp regime where the automatic smooth-regime ``rule``
    (one dimension) meets a sharp state ``x`` (some ``Q_c`` has an eigenvalue above
    :data:`~gaussmix.theory.tolerances.SMOOTH_Q_MAX`: the proximal map then changes regime
    on a scale ``~ 1 / sqrt(Q)`` of ``xi``), else None."""
    if rule != auto_rule(rule.dim, smooth=True) or rule == auto_rule(rule.dim):
        return None
    Q = unpack_state(x, problem.n_clusters, problem.dim)[0]
    if float(sym_eigvals(Q).max()) <= SMOOTH_Q_MAX:
        return None
    return auto_rule(rule.dim)


def _map_features(problem: Problem, opts: SolverOptions) -> tuple[ClusterSymmetry | None, bool]:
    """The symmetry and chart of every map of one solve:
    :class:`~gaussmix.theory.symmetry.ClusterSymmetry` where ``opts.symmetry`` and the
    clusters are exchangeable, :class:`LogChart` mixing where :func:`_uses_log_chart`."""
    sym = ClusterSymmetry.of(problem) if opts.symmetry else None
    return sym, _uses_log_chart(problem)


def _new_map(
    problem: Problem,
    rule: QuadratureRule,
    like: FixedPointMap | tuple[ClusterSymmetry | None, bool],
) -> FixedPointMap:
    """A map of ``problem`` with ``rule`` and the symmetry and chart of the map ``like`` (or
    the pair of :func:`_map_features`)."""
    sym, log_chart = (like.symmetry, like.log_chart) if isinstance(like, FixedPointMap) else like
    T = FixedPointMap(problem, rule)
    T.symmetry, T.log_chart = sym, log_chart
    return T


def _uses_log_chart(problem: Problem) -> bool:
    """Whether the iteration mixes in :class:`LogChart` coordinates: channels by quadrature
    with two or more effective outputs (cross-entropy with three or more classes), whose
    overlaps are positive definite in the effective space (docs/design.md pitfall 2), below
    :data:`~gaussmix.theory.tolerances.LOG_CHART_MAX_LAM` (large overlaps, the regime it is
    for).  One effective output keeps the state itself (its iteration is already fast)."""
    return _needs_quadrature(problem) and problem.dim >= 2 and problem.lam < LOG_CHART_MAX_LAM


def _finer_rule(rule: QuadratureRule, cap: int = MAX_QUADRATURE_NODES) -> QuadratureRule | None:
    """The next rule of a refinement, or None beyond ``cap`` nodes."""
    finer = rule.refined()
    if finer is None or finer.weights.size > cap:
        return None
    return finer


# --------------------------------------------------------------------------- the solve
def _run_fixed_point(
    problem: Problem,
    rule: QuadratureRule,
    x0: np.ndarray,
    opts: SolverOptions,
    callback: Callable | None,
    history: dict,
) -> tuple[FixedPointMap, IterationOutcome]:
    """The fixed-point run with the channel rule ``rule``, after a continuation from a
    coarser rule where that is cheaper.

    The coarse solve (``opts.continuation``) converges with cheap evaluations; the rule's
    own solve then starts from there with the coarse secant pairs as its Jacobian model and
    needs one or two evaluations.  Only the starting point and the secant pairs carry over;
    a failure of the coarse solve is ignored.  The returned state is the last evaluated
    one, whose channel evaluation the map remembers (its observables reuse it).
    """
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping, callback=callback)
    features = _map_features(problem, opts)
    n_coarse = 0
    coarse = rule.coarsened() if _needs_quadrature(problem) and opts.continuation else None
    if coarse is not None:
        start = AndersonState.init(opts.anderson)
        Tc = _new_map(problem, coarse, features)
        out = iterate(Tc, x0, start, return_image=False, **kw)
        n_coarse = out.n_iter
        if out.converged and is_valid_state(out.x, problem.n_clusters, problem.dim):
            x0 = out.x
            history[rule] = out.anderson
    T = _new_map(problem, rule, features)
    start = AndersonState.init(opts.anderson, history.get(rule))
    out = iterate(T, x0, start, return_image=False, **kw)
    history[rule] = out.anderson
    return T, replace(out, n_iter=out.n_iter + n_coarse)


@dataclass(frozen=True)
class _Estimate:
    """The solve after the error estimate: the map and state it ended with, the iteration's
    totals, the observables (None after a numerical failure) and the integration error of
    each observable in two parts, the change under the last refinement of the channel rule
    (``quad``) and the final evaluation's own error (``evals``: orthant and training-error
    integrals)."""

    T: FixedPointMap
    x: np.ndarray
    n_iter: int
    residual: float
    status: IterationStatus
    message: str
    obs: _Observables | None
    quad: dict
    evals: dict

    @property
    def errors(self) -> dict:
        """The integration error of each observable (``quad + evals``)."""
        return {k: self.quad[k] + self.evals[k] for k in _ERROR_KEYS}


def _estimate_errors(
    problem: Problem,
    T: FixedPointMap,
    out: IterationOutcome,
    opts: SolverOptions,
    callback: Callable | None,
    history: dict,
) -> _Estimate:
    """Observables at the fixed point, and their integration error by refinement.

    The state is re-solved with finer rules from the fixed point (each returning the image
    ``T2(x)``, so that the state moves with the rule); the change of every observable plus
    each evaluation's own error estimates the integration error.  With ``auto_refine`` this
    repeats while the estimate of the test error or training loss exceeds ``quad_tol``.
    """
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping, callback=callback)
    x, n_iter, res, status, msg = out.x, out.n_iter, out.residual, out.status, out.message
    obs = None
    quad = dict.fromkeys(_ERROR_KEYS, 0.0)
    evals = dict.fromkeys(_ERROR_KEYS, 0.0)
    try:
        if status is IterationStatus.CONVERGED and T.rule.randomised and opts.estimate_error:
            return _estimate_randomised(problem, T, out, opts, callback, history)
        if status is IterationStatus.CONVERGED:
            refinements = opts.max_refine if opts.auto_refine else 1
            refining = opts.estimate_error and _needs_quadrature(problem) and refinements > 0
            # (only the errors at a rule that a finer one will replace)
            obs = _observables(problem, T, x, light=refining)
            evals = dict(obs.errors)
            for _ in range(refinements if refining else 0):
                finer = _finer_rule(T.rule)
                if finer is None:
                    break
                T2 = _new_map(problem, finer, T)
                prev = history.get(finer)
                if prev is None or prev.empty:  # the coarser rule's pairs model this Jacobian
                    prev = history.get(T.rule)
                out2 = iterate(T2, x, AndersonState.init(opts.anderson, prev), **kw)
                history[finer] = out2.anderson
                if not out2.converged:
                    status, msg = out2.status, f"refined quadrature: {out2.message}"
                    break
                obs2 = _observables(problem, T2, out2.x, light=True)
                quad = {k: abs(obs2.value(k) - obs.value(k)) for k in _ERROR_KEYS}
                evals = dict(obs2.errors)
                x, obs, res, n_iter, T = out2.x, obs2, out2.residual, n_iter + out2.n_iter, T2
                total = {k: quad[k] + evals[k] for k in ("test_error", "train_loss")}
                if max(total["test_error"], total["train_loss"]) <= opts.quad_tol:
                    break
        if status is IterationStatus.CONVERGED and not obs.complete:
            obs = _with_statistics(problem, T, x, obs)  # of the returned state
    except (FloatingPointError, np.linalg.LinAlgError, ValueError) as exc:
        status, msg, obs = (
            IterationStatus.NUMERICAL_FAILURE,
            f"numerical failure at the fixed point: {exc}",
            None,
        )
    return _Estimate(T, x, n_iter, res, status, msg, obs, quad, evals)


def _replicate_spread(
    problem: Problem,
    T: FixedPointMap,
    x: np.ndarray,
    opts: SolverOptions,
    callback: Callable | None,
    history: dict,
) -> tuple[dict, int] | None:
    """Standard error of the three errors across the replicates of a randomised rule.

    The fixed point is re-solved from ``x`` with each replicate of ``T.rule`` alone (an
    independent randomisation; the rule is their average), and the observables are
    evaluated at each replicate's fixed point with common random numbers (the same seeded
    orthant and training-error estimators at every replicate, so that their own noise cancels
    in the spread).  To first order in the channel error the fixed point of the full rule is
    the mean of the replicates' fixed points, so the spread over ``sqrt(n_rep)`` is the
    standard error of its observables.  Returns the standard errors and the iterations
    spent, or None if a replicate solve fails.
    """
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping, callback=callback)
    values: dict = {k: [] for k in _ERROR_KEYS}
    n_iter = 0
    for rep in T.rule.replicates():
        Tr = _new_map(problem, rep, T)
        out = iterate(Tr, x, AndersonState.init(opts.anderson, history.get(T.rule)), **kw)
        n_iter += out.n_iter
        if not out.converged or not Tr.is_valid(out.x):
            return None
        obs = _observables(problem, Tr, out.x, light=True, spread=True)
        for k in _ERROR_KEYS:
            values[k].append(obs.value(k))
    n = len(values["test_error"])
    return {k: float(np.std(v, ddof=1) / np.sqrt(n)) for k, v in values.items()}, n_iter


def _estimate_randomised(
    problem: Problem,
    T: FixedPointMap,
    out: IterationOutcome,
    opts: SolverOptions,
    callback: Callable | None,
    history: dict,
) -> _Estimate:
    """:func:`_estimate_errors` for a randomised rule: the integration error is the standard
    error across its replicates (:func:`_replicate_spread`) plus the final evaluation's own
    error.  With ``auto_refine`` the rule is refined (twice the points) while the estimate of
    the test error or training loss exceeds ``quad_tol`` and the target is within reach
    within ``MAX_QUADRATURE_NODES`` nodes at the optimistic rate ``1 / N``, and otherwise
    while the training error's estimate exceeds
    :data:`~gaussmix.theory.tolerances.TRAIN_ERROR_TARGET` (up to ``MAX_TRAIN_RQMC_NODES``
    nodes)."""
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping, callback=callback)
    x, n_iter, res, status, msg = out.x, out.n_iter, out.residual, out.status, out.message
    for k in range(opts.max_refine + 1):
        obs = _observables(problem, T, x, light=True)
        spread = _replicate_spread(problem, T, x, opts, callback, history)
        if spread is None:
            status = IterationStatus.NUMERICAL_FAILURE
            msg = "a replicate of the randomised channel rule found no fixed point"
            quad = dict.fromkeys(_ERROR_KEYS, np.inf)
            break
        quad, extra = spread
        n_iter += extra
        evals = dict(obs.errors)
        worst = max(quad[k2] + evals[k2] for k2 in ("test_error", "train_loss"))
        if not opts.auto_refine or k == opts.max_refine:
            break
        finer = _finer_rule(T.rule)
        wants_finer = (
            worst > opts.quad_tol
            and finer is not None
            and worst * T.rule.weights.size / _largest_nodes(T.rule) <= opts.quad_tol
        )
        if not wants_finer:
            # the training error's own target (issue 10), a little further if need be
            finer = _finer_rule(T.rule, cap=MAX_TRAIN_RQMC_NODES)
            if quad["train_error"] + evals["train_error"] <= TRAIN_ERROR_TARGET or finer is None:
                break
        T2 = _new_map(problem, finer, T)
        out2 = iterate(T2, x, AndersonState.init(opts.anderson, history.get(T.rule)), **kw)
        history[finer] = out2.anderson
        n_iter += out2.n_iter
        if not out2.converged:
            status, msg = out2.status, f"refined quadrature: {out2.message}"
            break
        T, x, res = T2, out2.x, out2.residual
    evals = dict(obs.errors)
    if status is IterationStatus.CONVERGED:
        obs = _with_statistics(problem, T, x, obs)
    return _Estimate(T, x, n_iter, res, status, msg, obs, quad, evals)


def _largest_nodes(rule: QuadratureRule) -> int:
    """Nodes of the finest admissible refinement of ``rule``."""
    size = rule.weights.size
    finer = _finer_rule(rule)
    while finer is not None:
        size = finer.weights.size
        finer = _finer_rule(finer)
    return size


def _assemble(problem: Problem, opts: SolverOptions, est: _Estimate) -> FixedPointResult:
    """The result of a solve (NaN observables unless converged to a valid state), with a
    spurious point detected, and the integration warning where the estimate is large."""
    T, x, status, msg = est.T, est.x, est.status, est.message
    obs = est.obs if est.obs is not None else _observables_safe(problem, T, x)
    if status is IterationStatus.CONVERGED and not T.is_valid(x):
        status = IterationStatus.NOT_POSITIVE_DEFINITE
        msg = "spurious fixed point: an overlap matrix Q_c or V_c is not positive definite"
    if status is IterationStatus.CONVERGED:
        step = bias_condition_step(obs.hats[1], obs.hats[2], obs.state[3])
        if step > max(DEGENERATE_BIAS_STEP, 100.0 * opts.tol):
            status = IterationStatus.DEGENERATE
            msg = (
                "degenerate fixed point: the bias condition sum_c rho_c E[f_c] = 0 holds only "
                f"in absolute terms (its Newton step is {step:.3g} relative): the channel's "
                "moments underflowed and the weights collapsed"
            )
    ok = status is IterationStatus.CONVERGED
    if not ok and problem.lam < SMALL_LAM_HINT:
        msg += f" (lam={problem.lam:g}; the limit lam -> 0+ is gaussmix.max_margin)"
    errors = est.errors
    Q, M, V, b = obs.state
    Qhat, Mhat, Vhat = obs.hats
    P = problem.P
    nan = np.nan
    result = FixedPointResult(
        success=ok,
        n_iter=est.n_iter,
        residual=est.residual,
        message=msg,
        Q=_to_full(P, Q),
        M=M @ P,
        V=_to_full(P, V),
        b=b @ P,
        Qhat=_to_full(P, Qhat),
        Mhat=Mhat @ P,
        Vhat=_to_full(P, Vhat),
        test_error=obs.test_error if ok else nan,
        train_error=obs.train_error if ok else nan,
        train_loss=obs.train_loss if ok else nan,
        free_energy=obs.free_energy if ok else nan,
        penalty_value=obs.penalty_value if ok else nan,
        integration_error=max(errors.values()),
        integration_errors=errors,
        **{k: (v if ok else nan) for k, v in obs.sparsity.items()},
        params={
            **problem.describe(),
            "tol": opts.tol,
            "quadrature": T.rule.describe() if _needs_quadrature(problem) else "closed-form",
            "version": __version__,
        },
        status=status,
        state=FixedPointState(problem, T.rule, x, T.symmetry),
    )
    worst = max(errors["test_error"], errors["train_loss"])
    if ok and worst > integration_warning_threshold(opts.tol):
        # stacklevel: _assemble <- solve_problem <- its caller's caller (as solve's user)
        warnings.warn(_integration_warning(problem, opts, est), IntegrationWarning, stacklevel=4)
    if not ok and opts.throw:
        raise status.error_class(f"fixed point not found: {msg}", result)
    return result


def bias_condition_step(Mhat: np.ndarray, Vhat: np.ndarray, b: np.ndarray) -> float:
    """The relative size of the unregularised Newton step of the bias condition,
    ``|sum_c Mhat_c| / (||sum_c Vhat_c|| max(1, |b|))`` (max-norms; ``inf`` where the
    curvature vanishes and the condition is not met, 0 where it is met exactly).

    The map's bias update is this step (with a relative ridge), so at a fixed point of an
    accurate channel it is below ``tol``.  A large value at a state that passed the
    convergence test is the mark of a degenerate point (the condition ``sum_c rho_c E[f_c] =
    0``, docs/design.md pitfall 1, holds only because its terms have underflowed).

    Parameters
    ----------
    Mhat, Vhat : ndarray (K, L), (K, L, L)
        Hat parameters in the effective output space.
    b : ndarray (L,)
        The bias.

    Returns
    -------
    float
    """
    Sm = float(np.abs(Mhat.sum(axis=0)).max())
    if Sm == 0.0:
        return 0.0
    Sv = float(np.abs(Vhat.sum(axis=0)).sum(axis=-1).max())  # the inf-norm of the matrix
    if not Sv > 0.0:
        return np.inf
    return Sm / (Sv * max(1.0, float(np.abs(b).max())))


def _to_full(P: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``P^T A_c P`` for a stack of effective-space matrices."""
    return np.einsum("ia,kij,jb->kab", P, A, P)


def _refinement_limit(rule: QuadratureRule) -> str | None:
    """Why no finer rule than ``rule`` is admissible, or None if one is."""
    limit = rule.limit()
    if limit is not None:
        return limit
    if rule.refined().weights.size > MAX_QUADRATURE_NODES:
        return f"at most {MAX_QUADRATURE_NODES} nodes"
    return None


def _integration_warning(problem: Problem, opts: SolverOptions, est: _Estimate) -> str:
    """The text of the :class:`~gaussmix.core.exceptions.IntegrationWarning`: where the
    estimated error comes from, and a remedy only where one exists.

    Two sources add up: the change of an observable under a refined channel rule (a finer
    Gauss-Hermite rule reduces it, if one is admissible) and the final evaluation's own
    error, for the test error the standard error of the seeded quasi-Monte Carlo orthant
    probability of dimension >= 3 at its sampling cap (nothing in the solver's options
    reduces it).  Each source is named if it dominates or alone exceeds the threshold.
    """
    threshold = integration_warning_threshold(opts.tol)
    errors = est.errors
    key = "test_error" if errors["test_error"] >= errors["train_loss"] else "train_loss"
    what = key.replace("_", " ").replace("train ", "training ")
    q, e = est.quad[key], est.evals[key]
    parts = [f"estimated integration error {errors[key]:.2g} of the {what} is large"]
    if q >= e or q > threshold:
        rule = est.T.rule
        text = (
            f"the {what} changes by {q:.2g} between the last two channel quadrature rules "
            f"(the finer: {rule.describe()})"
        )
        limit = _refinement_limit(rule)
        if rule.randomised:
            text = (
                f"{q:.2g} is the standard error of the {what} across the "
                f"{rule.n_rep} independent randomisations of the channel rule "
                f"({rule.describe()})"
            )
            if limit is None:
                text += (
                    f"; quad_tol={opts.quad_tol:g} is out of reach of refinement within "
                    f"{MAX_QUADRATURE_NODES} nodes"
                )
            else:
                text += f"; no finer rule is admissible ({limit})"
            text += f"; to reduce it, {rule.remedy()}"
        elif limit is None:
            text += f"; {rule.remedy()}"
        else:
            text += f"; no finer rule is admissible ({limit}), so the estimate stands"
        parts.append(text)
    if e > q or e > threshold:
        dim = max(D.shape[0] for D, _ in problem.constraints)
        parts.append(
            f"{e:.2g} is the standard error of the seeded quasi-Monte Carlo estimates of the "
            f"{dim}-dimensional Gaussian orthant probabilities (one per cluster) that make up "
            "the test error; they are at their sampling cap, so no solver option reduces it, "
            "and the test error is accurate to about that much (one standard error)"
        )
    return "; ".join(parts)


@with_options_doc
def solve_problem(
    problem: Problem,
    *,
    tol: float = DEFAULT_OPTIONS.tol,
    max_iter: int = DEFAULT_OPTIONS.max_iter,
    quadrature: QuadratureRule | None = DEFAULT_OPTIONS.quadrature,
    init: FixedPointResult | dict | None = None,
    anderson: int = DEFAULT_OPTIONS.anderson,
    damping: float = DEFAULT_OPTIONS.damping,
    estimate_error: bool = DEFAULT_OPTIONS.estimate_error,
    auto_refine: bool = DEFAULT_OPTIONS.auto_refine,
    quad_tol: float = DEFAULT_OPTIONS.quad_tol,
    max_refine: int = DEFAULT_OPTIONS.max_refine,
    throw: bool = DEFAULT_OPTIONS.throw,
    callback: Callable[[int, float], Any] | None = None,
    history: dict | None = None,
    continuation: bool = DEFAULT_OPTIONS.continuation,
    symmetry: bool = DEFAULT_OPTIONS.symmetry,
) -> FixedPointResult:
    """Solve the fixed point of a validated :class:`~gaussmix.theory.problem.Problem`.

    Parameters
    ----------
    problem : Problem
        Mixture, loss, penalty, ``lam`` and ``alpha``
        (:func:`~gaussmix.theory.api.make_problem`).
    %(solver_options)s
    Returns
    -------
    FixedPointResult
    """
    opts = SolverOptions(
        tol=tol,
        max_iter=max_iter,
        quadrature=quadrature,
        anderson=anderson,
        damping=damping,
        estimate_error=estimate_error,
        auto_refine=auto_refine,
        quad_tol=quad_tol,
        max_refine=max_refine,
        throw=throw,
        continuation=continuation,
        symmetry=symmetry,
    )
    history = history if history is not None else {}
    rule = _channel_rule(problem, opts.quadrature, opts.symmetry)
    T, out = _run_fixed_point(problem, rule, _start(problem, init), opts, callback, history)
    sharp = None
    if opts.quadrature is None and _needs_quadrature(problem) and out.converged:
        sharp = _sharp_rule(problem, T.rule, out.x)
        if sharp is not None and T.symmetry is not None:  # exchangeable: cluster 0's rule
            sharp = symmetric_rule(problem, sharp, *T.unpack(out.x)[:3])
    if sharp is not None:  # the solution is in the sharp regime: its rule, from there
        history.setdefault(sharp, out.anderson)
        T, out2 = _run_fixed_point(problem, sharp, out.x, opts, callback, history)
        out = replace(out2, n_iter=out.n_iter + out2.n_iter)
    est = _estimate_errors(problem, T, out, opts, callback, history)
    return _assemble(problem, opts, est)


def free_energy(
    problem: Problem,
    Q: np.ndarray,
    M: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    rule: QuadratureRule | None = None,
) -> float:
    """The replica-symmetric free energy (eq. app:rsfree) at arbitrary order parameters.

    All arguments are in the *effective* output space of ``problem`` (see
    :mod:`gaussmix.theory.problem`).  Stationary at the fixed point of Theorem 1, where it
    equals the minimal empirical risk per dimension, ``alpha eps_l + lam E[r(W*)] / d``.
    """
    if rule is None:  # graded panels in one and two dimensions, tensor Gauss-Hermite beyond
        rule = auto_rule(problem.dim, smooth=problem.dim > 2)
    mom = channel_moments(problem.loss, problem.y, M, b, Q, V, rule)
    pr = prior_update(problem, Qhat, Mhat, Vhat, details=True)
    return free_energy_terms(problem, M, Q, V, Mhat, Qhat, Vhat, mom.Eenv, pr.psi_w)


def effective_state(result: FixedPointResult) -> dict:
    """Order parameters of a result in its effective output space (for tests and tools)."""
    state = result.state
    if state is None:
        raise ValueError("effective_state needs a FixedPointResult made by the solver")
    problem = state.problem
    Q, M, V, b = state.unpack()
    P = problem.P
    return {
        "problem": problem,
        "rule": state.rule,
        "Q": Q,
        "M": M,
        "V": V,
        "b": b,
        "Qhat": P @ result.Qhat @ P.T,
        "Mhat": result.Mhat @ P.T,
        "Vhat": P @ result.Vhat @ P.T,
    }
