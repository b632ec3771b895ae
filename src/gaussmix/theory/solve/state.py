"""The state of the fixed-point iteration of Theorem 1: the vector ``x = (Q_c, M_c, V_c, b)``.

Packing (:func:`pack_state` / :func:`unpack_state`), the cone of valid states (every ``Q_c``
positive semi-definite, every ``V_c`` positive definite: :func:`is_valid_state`, the
spurious fixed points of Appendix E, docs/design.md pitfall 5), the scale of each component
in the convergence test (:func:`residual_scale`) and the logarithmic chart in which the
iteration mixes at small ``lam`` (:class:`LogChart`).  Pure functions of arrays: no problem,
no channel, no solver options.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..numerics.linalg import sym_eigvals
from ..numerics.tolerances import LOG_CHART_MIN_EIG, PSD_RTOL

#: the smallest positive normal float (the floor of a unit of :func:`residual_scale`)
_TINY = np.finfo(float).tiny

__all__ = [
    "pack_state",
    "unpack_state",
    "is_valid_state",
    "invalid_blocks",
    "q_is_psd",
    "residual_scale",
    "LogChart",
    "chart_resolved",
]


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


def is_valid_state(x: np.ndarray, K: int, L: int, floor: float = 1.0) -> bool:
    """Whether a state is finite, every ``Q_c`` positive semi-definite and every ``V_c``
    positive definite (the cone the iteration must stay in; docs/design.md pitfall 5), or
    zero together with ``Q_c`` (the lasso's zero estimator, :func:`_zero_estimator_ok`).

    ``Q_c`` is accepted down to a smallest eigenvalue of ``-PSD_RTOL max(1, max |eig Q|)``
    (:data:`~gaussmix.theory.numerics.tolerances.PSD_RTOL`: rounding of the singular cross-entropy
    overlaps).  ``floor``: a larger floor of that scale than 1 (the largest ``|eig Q|`` of
    the points of a stacked state left out of ``x``, whose scale they share:
    :func:`~gaussmix.theory.solve.stacked_step.next_iterate_moving`).
    """
    if L == 1 and x.size <= _SMALL_STATE and floor == 1.0:  # (plain floats: the same tests)
        return _is_valid_small(x, K)
    if not np.isfinite(x).all():
        return False
    eq, ev = _eigvals(x, K, L, 0), _eigvals(x, K, L, K * L * (L + 1))
    scale = max(floor, float(np.abs(eq).max()))
    if not eq.min() >= -PSD_RTOL * scale:
        return False
    return bool(ev.min() > 0 or _zero_estimator_ok(x, K, L, ev))


#: the largest state of one output whose tests (:func:`is_valid_state`, :func:`q_is_psd`)
#: are made on plain floats: a binary point's seven numbers cost about a microsecond each
#: in numpy calls, a fifth of that as floats (the same comparisons, the same answers)
_SMALL_STATE = 64


def _is_valid_small(x: np.ndarray, K: int) -> bool:
    """:func:`is_valid_state` of a state of one output (``L = 1``: each ``Q_c``, ``V_c`` its
    own eigenvalue) on its entries as floats."""
    v = x.tolist()
    if not all(map(math.isfinite, v)):
        return False
    q, ev = v[:K], v[2 * K : 3 * K]
    if not min(q) >= -PSD_RTOL * max(1.0, max(map(abs, q))):
        return False
    return min(ev) > 0 or _zero_estimator_ok(x, K, 1, x[2 * K : 3 * K])


def invalid_blocks(
    x: np.ndarray, K: int, L: int, blocks: np.ndarray, n_blocks: int, floor: float = 1.0
) -> np.ndarray:
    """Which blocks of a state made of independent blocks (the points of a curve stacked
    in one state; ``blocks``: the block of each component, a cluster's ``Q_c``, ``M_c`` and
    ``V_c`` in one block) leave the cone of :func:`is_valid_state`: a component not finite,
    a ``Q_c`` below its tolerance (relative to the largest ``|eig Q|`` of the whole state,
    as :func:`is_valid_state` judges it) or a ``V_c`` not positive definite and not the
    zero estimator's.  A state is valid if and only if no block is marked.  ``floor``: as
    :func:`is_valid_state`'s."""
    bad = np.bincount(blocks, weights=~np.isfinite(x), minlength=n_blocks) > 0
    if bad.all():
        return bad
    z = np.where(np.isfinite(x), x, 0.0)
    eq = _eigvals(z, K, L, 0).reshape(K, L)
    ev = _eigvals(z, K, L, K * L * (L + 1)).reshape(K, L)
    scale = max(floor, float(np.abs(eq).max()))
    q_bad = ~(eq.min(axis=1) >= -PSD_RTOL * scale)
    v_bad = ~(ev.min(axis=1) > 0) & ~_zero_clusters(z, K, L)
    cluster_block = blocks[: K * L * L : L * L]
    bad[cluster_block[q_bad | v_bad]] = True
    return bad


def _zero_estimator_ok(x: np.ndarray, K: int, L: int, ev: np.ndarray) -> bool:
    """Whether every ``V_c`` that is not positive definite is the zero estimator's: ``V_c``
    and ``Q_c`` exactly zero (a lasso that keeps no weight, ``W* = 0``: every weight's
    ``P(|B| > t)`` underflowed; ``M_c = 0`` with them).  Such a state is valid: the channel
    at ``V_c = 0`` is the identity prox (``f_c = -grad loss(y_c, omega_c)``) and ``omega_c``
    the point mass at ``b``."""
    bad = ev.reshape(K, L).min(axis=1) <= 0
    return bool(_zero_clusters(x, K, L)[bad].all())


def _zero_clusters(x: np.ndarray, K: int, L: int) -> np.ndarray:
    """Which clusters have ``Q_c`` and ``V_c`` exactly zero (the zero estimator's)."""
    n2 = K * L * L
    Q = x[:n2].reshape(K, L * L)
    V = x[n2 + K * L : 2 * n2 + K * L].reshape(K, L * L)
    return np.all(Q == 0.0, axis=1) & np.all(V == 0.0, axis=1)


def _eigvals(x: np.ndarray, K: int, L: int, start: int) -> np.ndarray:
    """Eigenvalues of the ``K`` symmetric ``L x L`` blocks of ``x`` from ``start`` on (``Q``:
    0, ``V``: ``K L (L + 1)``); for one output the entries themselves (a view)."""
    if L == 1:
        return x[start : start + K]
    return sym_eigvals(x[start : start + K * L * L].reshape(K, L, L))


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
    ax = np.abs(x)
    n2, km = K * L * L, K * L
    q = ax[:n2].reshape(K, -1).max(axis=1)
    units = np.empty(3 * K + 1)
    units[:K] = q
    units[K : 2 * K] = np.maximum(ax[n2 : n2 + km].reshape(K, L).max(axis=1), np.sqrt(q))
    units[2 * K : 3 * K] = ax[n2 + km : 2 * n2 + km].reshape(K, -1).max(axis=1)
    np.minimum(np.maximum(units, _TINY, out=units), 1.0, out=units)  # np.clip, without its cost
    units[3 * K] = 1.0
    return np.maximum(ax, units[_unit_index(K, L, x.size - 2 * n2 - km)])


@functools.lru_cache(maxsize=64)
def _unit_index(K: int, L: int, n_b: int) -> np.ndarray:
    """The unit of each component of a state as an index into ``(u_Q (K), u_M (K), u_V (K),
    1)`` (:func:`residual_scale`); ``n_b`` trailing bias components (``L``, or one per
    point for the stacked states of :mod:`gaussmix.theory.solve.batch`)."""
    c = np.arange(K)
    return np.concatenate(
        [
            np.repeat(c, L * L),
            K + np.repeat(c, L),
            2 * K + np.repeat(c, L * L),
            np.full(n_b, 3 * K),
        ]
    )


def q_is_psd(x: np.ndarray, K: int, L: int, floor: float = 1.0) -> bool:
    """Whether every ``Q_c`` of a (finite) state is positive semi-definite, to
    :data:`~gaussmix.theory.numerics.tolerances.PSD_RTOL` (the spurious fixed points of Appendix E;
    a vanishing ``V_c``, e.g. of a lasso that keeps no weight, is not one of them).
    ``floor``: as :func:`is_valid_state`'s."""
    if L == 1 and x.size <= _SMALL_STATE and floor == 1.0:  # (plain floats: the same tests)
        q = x[:K].tolist()
        if all(map(math.isfinite, q)):  # (else numpy's NaN and infinity rules, below)
            return min(q) >= -PSD_RTOL * max(1.0, max(map(abs, q)))
    eq = _eigvals(x, K, L, 0)
    return bool(eq.min() >= -PSD_RTOL * max(floor, float(np.abs(eq).max())))


@dataclass(frozen=True)
class LogChart:
    """Coordinates ``(log Q_c, M_c, log V_c, b)`` of a state (matrix logarithms of the
    positive-definite overlaps) in which :func:`~gaussmix.theory.solve.iteration.iterate` mixes.

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
        is not positive definite (to :data:`~gaussmix.theory.numerics.tolerances.LOG_CHART_MIN_EIG`
        relative to its largest eigenvalue) or ``x`` is not finite."""
        if not np.all(np.isfinite(x)):
            return None
        Q, M, V, b = unpack_state(x, self.K, self.L)
        lqv = _logm_pd(np.concatenate([Q, V]))  # one stacked call: each matrix's same bits
        if lqv is None:
            return None
        return pack_state(lqv[: self.K], M, lqv[self.K :], b)

    def inverse(self, y: np.ndarray) -> np.ndarray:
        """The state of chart coordinates ``y``."""
        lq, M, lv, b = unpack_state(y, self.K, self.L)
        qv = _expm_sym(np.concatenate([lq, lv]))
        return pack_state(qv[: self.K], M, qv[self.K :], b)


def chart_resolved(Q: np.ndarray, V: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """Whether states known to a relative accuracy are known in :class:`LogChart`
    coordinates: every ``Q_c`` and ``V_c`` with its smallest eigenvalue above ``accuracy``
    times its largest |eigenvalue|.

    A change of the overlaps of relative size ``a`` (a state within ``a`` of its fixed
    point, :func:`residual_scale`'s units) moves the logarithm of an eigenvalue
    ``lambda_min`` by about ``a lambda_max / lambda_min``: where that is one or more, the
    chart's coordinate of that eigenvalue is not known at all (an overlap converging to a
    singular one, e.g. the square loss's ``Q_c`` of rank ``L - 1``, whose smallest
    eigenvalue falls towards rounding as the iteration goes on).  One output: every positive
    overlap is resolved (its eigenvalue is its largest).

    Parameters
    ----------
    Q, V : ndarray (P, K, L, L)
        The overlaps of ``P`` states.
    accuracy : ndarray (P,)
        The relative accuracy of each state (e.g. its own residual).

    Returns
    -------
    ndarray of bool (P,)
    """
    w = sym_eigvals(np.concatenate([Q, V], axis=1))  # (P, 2 K, L), ascending
    low, high = w[..., 0], np.abs(w).max(axis=-1)
    return np.all(low > np.asarray(accuracy)[:, None] * high, axis=1)


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
