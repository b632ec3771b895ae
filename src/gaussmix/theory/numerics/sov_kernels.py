"""Compiled separation-of-variables integrand of the randomised orthant (numba).

Genz's separation of variables turns ``P[a < X <= b]``, ``X = L y`` with an ordered
(pivoted) Cholesky factor, into an integral over the unit cube: column ``c`` of the factor
restricts ``y_c`` to the interval ``(lo_c, hi_c]`` given by its constraints
``LO <= y_c + U y[:c] <= HI`` (the tightest of them), the integrand is the product of the
columns' interval probabilities ``e_c``, and the point ``w`` of the cube sets
``y_c = Phi^{-1}(Phi(lo_c) + w_c e_c)`` (one branch for an interval above the mean, whose
lower tail is ``Phi(-lo_c)``).  :func:`sov_integrand` evaluates it in one compiled pass
over the points, in blocks of :data:`_BLOCK` points with the columns' loop inside (per
column three short loops over the block, so that the points' normal functions, independent
of each other, overlap in the processor) and no temporaries; the first column's limits do
not depend on the point and are evaluated once.

Its normal functions are the engine's compiled scalars
(:mod:`~gaussmix.theory.numerics.normal_kernels`): ``ndtr_scalar``, cephes' ``ndtr``
(scipy's bits), and ``ndtri_scalar``, Wichura's AS241 (within 1.1e-15 relative of scipy's
``ndtri``).  The integrand agrees with a numpy evaluation of the same formulas to about
``1e-15`` relative; with scipy's inverse, to rounding amplified by the conditioning of a
point deep in a tail (``tests/test_sov_kernels.py``).

Cost (the digits ten-class point's 100 randomised orthants of nine variables): 0.74 s of
CPU against 0.86 s for the numpy integrand it replaced; the normal functions are the cost
now (about 20 ns a column and point: ``exp`` and a division, or ``log``, ``sqrt`` and a
division), which numba does not vectorise without SVML.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .normal_kernels import ndtr_scalar, ndtri_scalar

__all__ = ["pack_columns", "sov_integrand"]

#: points per block of :func:`sov_integrand` (the columns' loop runs over a block at a time)
_BLOCK = 64


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _interval(lo: float, hi: float, two_sided: bool) -> tuple[float, float, bool]:
    """``(p_lo, e, upper)`` of the interval ``(lo, hi]`` (``lo = -inf`` unless
    ``two_sided``): its probability ``e`` and the lower-tail probability ``p_lo`` its
    inverse starts from (``upper``: the interval lies above the mean and both are taken in
    the upper tail, ``Phi(-x)``, free of cancellation)."""
    if not two_sided:
        return 0.0, ndtr_scalar(hi), False
    hi = max(hi, lo)
    upper = lo > 0.0
    if upper:
        p_lo = ndtr_scalar(-lo)
        p_hi = ndtr_scalar(-hi)
    else:
        p_lo = ndtr_scalar(lo)
        p_hi = ndtr_scalar(hi)
    return p_lo, abs(p_hi - p_lo), upper


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _deviate(p_lo: float, e: float, upper: bool, two_sided: bool, w: float, ymax: float):
    """The normal deviate ``y_c`` of the point coordinate ``w`` in the interval of
    :func:`_interval`, clipped to ``[-ymax, ymax]``."""
    if not two_sided:
        y = ndtri_scalar(e * w)
    elif upper:
        y = -ndtri_scalar(p_lo - w * e)
    else:
        y = ndtri_scalar(p_lo + w * e)
    return min(max(y, -ymax), ymax)


@njit(cache=True, error_model="numpy", nogil=True)
def _sov_kernel(U, LO, HI, start, two_sided, wt, ymax, out):  # pragma: no cover - compiled
    """:func:`sov_integrand` on the packed columns (see :func:`pack_columns`), in blocks of
    :data:`_BLOCK` points: within a block the columns' loop is outside and each column
    takes three short loops over the points (the limits; the interval probabilities; the
    deviates), so that the points' normal functions, independent of each other, overlap in
    the processor (a point's chain, each column's deviate depending on the previous ones,
    would wait for every result: 1.5 times slower)."""
    rank = start.shape[0] - 1
    npts = out.shape[0]
    # the first column: constant limits, their probabilities once
    hi0 = np.inf
    lo0 = -np.inf
    for k in range(start[0], start[1]):
        hi0 = min(hi0, HI[k])
        lo0 = max(lo0, LO[k])
    p_lo0, e0, upper0 = _interval(lo0, hi0, two_sided[0])
    y = np.empty((rank, _BLOCK))
    hi = np.empty(_BLOCK)
    lo = np.empty(_BLOCK)
    p_lo = np.empty(_BLOCK)
    e = np.empty(_BLOCK)
    upper = np.empty(_BLOCK, dtype=np.bool_)
    for j0 in range(0, npts, _BLOCK):
        nb = min(_BLOCK, npts - j0)
        for j in range(nb):
            out[j0 + j] = e0
        if rank > 1:
            for j in range(nb):
                y[0, j] = _deviate(p_lo0, e0, upper0, two_sided[0], wt[0, j0 + j], ymax)
        for c in range(1, rank):
            two = two_sided[c]
            for j in range(nb):
                hi[j] = np.inf
                lo[j] = -np.inf
            for k in range(start[c], start[c + 1]):
                for j in range(nb):
                    s = 0.0
                    for i in range(c):
                        s += U[k, i] * y[i, j]
                    hi[j] = min(hi[j], HI[k] - s)
                    lo[j] = max(lo[j], LO[k] - s)
            for j in range(nb):
                p_lo[j], e[j], upper[j] = _interval(lo[j], hi[j], two)
                out[j0 + j] *= e[j]
            if c < rank - 1:
                for j in range(nb):
                    y[c, j] = _deviate(p_lo[j], e[j], upper[j], two, wt[c, j0 + j], ymax)
    return out


def pack_columns(
    columns: list[tuple[np.ndarray, np.ndarray, np.ndarray, bool]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The per-column constraints ``(U, LO, HI, two_sided)`` of an ordered factor (column
    ``c``: ``U`` of shape ``(n_c, c)``) as flat arrays for :func:`sov_integrand`: ``U``
    stacked and zero-padded to ``(sum n_c, rank)``, ``LO``, ``HI`` stacked, ``start`` the
    offsets of the columns' rows (``rank + 1``), ``two_sided`` per column."""
    rank = len(columns)
    counts = [col[1].shape[0] for col in columns]
    start = np.zeros(rank + 1, dtype=np.int64)
    start[1:] = np.cumsum(counts)
    U = np.zeros((int(start[-1]), max(rank, 1)))
    for c, col in enumerate(columns):
        U[start[c] : start[c + 1], :c] = col[0]
    LO = np.concatenate([col[1] for col in columns]).astype(float)
    HI = np.concatenate([col[2] for col in columns]).astype(float)
    two_sided = np.array([col[3] for col in columns], dtype=np.bool_)
    return U, LO, HI, start, two_sided


def sov_integrand(
    packed: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    wt: np.ndarray,
    ymax: float,
) -> np.ndarray:
    """Values of the separation-of-variables integrand at the points ``wt`` (by coordinate,
    shape ``(rank - 1, N)``; ``N`` columns of any width for ``rank == 1``, where the integrand
    is a constant) of the packed columns ``packed`` (:func:`pack_columns`); deviates clipped
    to ``[-ymax, ymax]``."""
    wt = np.ascontiguousarray(wt, dtype=float)
    out = np.empty(wt.shape[1])
    return _sov_kernel(*packed, wt, float(ymax), out)
