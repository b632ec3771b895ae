"""The compiled channel's elementwise array work, compiled (numba): its quadrature nodes, the
predictor of their proximal solves' starting points and the inverse metrics.

Each is work on the ``K N L`` numbers of an evaluation (or its ``K`` metrics) that numpy does
in several passes with temporaries, or, for a mean broadcast over the nodes, in inner loops
of ``L`` entries; here each is one pass with the same operations in the same order on the
same numbers, so the same bits (``tests/test_kernels.py``).  The products with the rule's
nodes and with the metric stay numpy's (BLAS) products.  Measured (CPU, one thread, 20
clusters):

* :func:`shifted_nodes`, ``omega_kn = m_k + (xi @ S_k)_n``: 0.01 ms against 0.2 ms of
  ``np.add`` broadcasting ``m`` over 2052 nodes;
* :func:`metric_coordinates`, the predictor's ``f = V^{-1} (h - omega)`` of the previous
  evaluation (:func:`gaussmix.theory.channel.channel._quadrature_moments`): the difference
  and :func:`gaussmix.theory.channel.losses.solve_batch`'s closed-form solve
  (``(a11 b0 - a01 b1) / det``, ``(a00 b1 - a10 b0) / det``, ``det = a00 a11 - a01 a10``),
  0.12 ms against 1.0 ms on 2052 nodes, 0.47 ms against 5.9 ms on 8536;
* :func:`inverse_metrics`, ``V^{-1}`` as ``solve_batch(V, I)`` computes it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["shifted_nodes", "metric_coordinates", "inverse_metrics"]


@njit(cache=True, error_model="numpy", nogil=True)
def _shifted(m, xs, out):  # pragma: no cover - compiled
    """``out[k, n] = m[k] + xs[k, n]`` (``m`` (K, L), ``xs``, ``out`` (K, N, L))."""
    K, N, L = xs.shape
    for k in range(K):
        for n in range(N):
            for i in range(L):
                out[k, n, i] = m[k, i] + xs[k, n, i]


@njit(cache=True, error_model="numpy", nogil=True)
def _coordinates(V, h, omega, out):  # pragma: no cover - compiled
    """``out[k, n] = V[k]^{-1} (h[k, n] - omega[k, n])`` for ``L = 1, 2`` outputs (``V``
    (K, L, L), ``h``, ``omega``, ``out`` (K, N, L))."""
    K, N, L = h.shape
    for k in range(K):
        if L == 1:
            v = V[k, 0, 0]
            for n in range(N):
                out[k, n, 0] = (h[k, n, 0] - omega[k, n, 0]) / v
            continue
        a00, a01, a10, a11 = V[k, 0, 0], V[k, 0, 1], V[k, 1, 0], V[k, 1, 1]
        det = a00 * a11 - a01 * a10
        for n in range(N):
            b0 = h[k, n, 0] - omega[k, n, 0]
            b1 = h[k, n, 1] - omega[k, n, 1]
            out[k, n, 0] = (a11 * b0 - a01 * b1) / det
            out[k, n, 1] = (a00 * b1 - a10 * b0) / det


@njit(cache=True, error_model="numpy", nogil=True)
def _inverse2(V, out):  # pragma: no cover - compiled
    """``out[k] = V[k]^{-1}`` (2 x 2) by ``solve_batch(V, I)``'s operations: column ``j``
    of the solution from the right-hand side ``e_j`` (its products with ``1.0`` and
    ``0.0`` kept: ``a * 0.0`` is ``-0.0`` for negative ``a``)."""
    for k in range(V.shape[0]):
        a00, a01, a10, a11 = V[k, 0, 0], V[k, 0, 1], V[k, 1, 0], V[k, 1, 1]
        det = a00 * a11 - a01 * a10
        out[k, 0, 0] = (a11 * 1.0 - a01 * 0.0) / det
        out[k, 0, 1] = (a11 * 0.0 - a01 * 1.0) / det
        out[k, 1, 0] = (a00 * 0.0 - a10 * 1.0) / det
        out[k, 1, 1] = (a00 * 1.0 - a10 * 0.0) / det


def _c(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


def shifted_nodes(m: np.ndarray, xs: np.ndarray, out: np.ndarray) -> None:
    """``out[k, n] = m[k] + xs[k, n]``: ``np.add(m[:, None, :], xs, out=out)`` to the bit.

    Parameters
    ----------
    m : ndarray (K, L)
        Each cluster's mean.
    xs : ndarray (K, N, L)
        The centred nodes ``xi @ S_k``.
    out : ndarray (K, N, L)
        float64, written (a view of the rows of a larger array is fine).
    """
    _shifted(_c(m), _c(xs), out)


def metric_coordinates(V: np.ndarray, h: np.ndarray, omega: np.ndarray) -> np.ndarray | None:
    """``V_k^{-1} (h_kn - omega_kn)`` at every node, or None where it is not compiled.

    Parameters
    ----------
    V : ndarray (K, L, L)
        One metric a cluster.
    h, omega : ndarray (K, N, L)
        The proximal points and the nodes of an evaluation.

    Returns
    -------
    ndarray (K, N, L) or None
        ``solve_batch(V[:, None], h - omega)`` to the bit for ``L <= 2``; None for more
        outputs (where ``solve_batch`` calls LAPACK: the caller solves).
    """
    if h.shape[-1] > 2:
        return None
    out = np.empty(h.shape)
    _coordinates(_c(V), _c(h), _c(omega), out)
    return out


def inverse_metrics(V: np.ndarray) -> np.ndarray | None:
    """``V_k^{-1}`` of each 2 x 2 metric, ``solve_batch(V, I)`` to the bit, or None for
    other sizes (the caller solves).

    Parameters
    ----------
    V : ndarray (K, L, L)

    Returns
    -------
    ndarray (K, 2, 2), C-contiguous, or None
    """
    if V.shape[-1] != 2:
        return None
    out = np.empty(V.shape)
    _inverse2(_c(V), out)
    return out
