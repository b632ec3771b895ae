"""The cross-entropy channel's Stein term at a node, compiled (numba): the node loops'
share of :func:`gaussmix.theory.numerics.kernels.ce_channel` after the proximal solve.

At a node's proximal point the channel adds ``E[(I + H V)^{-1} H]`` (item 2 of Appendix B.5,
the Stein form of eq. (179)), written ``B - B A^{-1} B`` with ``A = V^{-1} + H`` and
``B = V^{-1}`` (or ``B = H`` where ``||V|| ||H||`` is small, where the first form cancels:
:data:`~gaussmix.theory.numerics.kernels.STEIN_H_FORM`).  With ``B = V^{-1}``, the same for
every node of a cluster, the expectation is ``w V^{-1} - V^{-1} E[A^{-1}] V^{-1}`` (``w`` the
weight of those nodes): a node adds its ``A^{-1} = C^{-T} C^{-1}`` (``C`` the Cholesky
factor the node has anyway), about ``L^3 / 3`` multiplications, instead of ``L`` solves with
``A`` and the product ``B X`` (about ``2 L^3``), and the cluster pays the two products with
``V^{-1}`` once.  Only the lower triangles are formed (every matrix here is symmetric).

The node's systems are formed as :func:`packed_outer` sums (``P diag(p) P^T = sum_k p_k
P_k P_k^T``, rows of independent entries) and factored with reciprocal pivots
(:func:`cholesky_reciprocal`): at nine outputs these small factorisations are bound by the
latency of their divisions and of the dependent sums, not by their multiplications.
Measured on captured evaluations of the K = 10 exchangeable point of
``benchmarks/bench_estimate.py`` (one cluster, 32768 nodes): 116-141 ms before, 52-69 ms
after; from converged proximal points (the moments alone) 88 ms, 30 ms; the moments agree to
5e-14 (``docs/benchmarks-history.md``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "packed_outer",
    "newton_system",
    "hessian_system_lower",
    "cholesky_reciprocal",
    "solve_reciprocal",
    "triangular_inverse",
    "add_inverse",
    "add_h_form",
    "mirror_lower",
    "add_gram_complement",
    "close_cluster",
]


@njit(cache=True, error_model="numpy", nogil=True)
def packed_outer(P):  # pragma: no cover - compiled
    """The lower triangles of the outer products ``P_k P_k^T`` of the columns of ``P`` (L,
    Kf), packed by rows: ``O[k, i (i + 1) / 2 + j] = P_ik P_jk`` for ``j <= i``.  With them
    ``P diag(p) P^T = sum_k p_k O_k`` is a sum of whole rows of independent entries (which
    the compiler vectorises) instead of one dot product of ``Kf`` terms an entry (each a
    chain of dependent additions)."""
    L, Kf = P.shape
    O = np.empty((Kf, L * (L + 1) // 2))
    for k in range(Kf):
        e = 0
        for i in range(L):
            for j in range(i + 1):
                O[k, e] = P[i, k] * P[j, k]
                e += 1
    return O


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def newton_system(B, O, p, Pp, A, q):  # pragma: no cover - compiled
    """The lower triangle of ``A = B + P (diag p - p p^T) P^T`` (``B`` symmetric, read in
    its lower triangle; ``O`` from :func:`packed_outer`, ``Pp = P p``; ``q`` (L (L + 1) / 2)
    scratch: ``P diag(p) P^T`` packed)."""
    L = A.shape[0]
    n = O.shape[1]
    for e in range(n):
        q[e] = 0.0
    for k in range(O.shape[0]):
        pk = p[k]
        for e in range(n):
            q[e] += pk * O[k, e]
    e = 0
    for i in range(L):
        for j in range(i + 1):
            A[i, j] = B[i, j] + (q[e] - Pp[i] * Pp[j])
            e += 1


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def hessian_system_lower(Vi, O, p, Pp, A, H, q):  # pragma: no cover - compiled
    """The lower triangles of the reduced Hessian ``H = P (diag p - p p^T) P^T`` and of
    ``A = V^{-1} + H`` (:func:`newton_system`'s arguments); returns the max-norm of ``H``
    (each row's sum with the upper triangle's entries read from the lower one)."""
    L = A.shape[0]
    newton_system(Vi, O, p, Pp, A, q)
    e = 0
    for i in range(L):
        for j in range(i + 1):
            H[i, j] = q[e] - Pp[i] * Pp[j]
            e += 1
    hn = 0.0
    for i in range(L):
        t = 0.0
        for j in range(L):
            t += abs(H[i, j]) if j <= i else abs(H[j, i])
        hn = max(hn, t)
    return hn


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def cholesky_reciprocal(A, C, d):  # pragma: no cover - compiled
    """The lower Cholesky factor of ``A`` (its lower triangle read) into ``C`` (may be
    ``A``), with the reciprocals of its pivots in ``d`` (one division a column instead of one
    an entry, here and in the solves: their latency, not the multiplications, bounds these
    small factorisations); False if ``A`` is not positive definite."""
    L = A.shape[0]
    for j in range(L):
        t = A[j, j]
        for k in range(j):
            t -= C[j, k] * C[j, k]
        if not t > 0.0:
            return False
        r = math.sqrt(t)
        C[j, j] = r
        d[j] = 1.0 / r
        for i in range(j + 1, L):
            t = A[i, j]
            for k in range(j):
                t -= C[i, k] * C[j, k]
            C[i, j] = t * d[j]
    return True


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def solve_reciprocal(C, d, b, x):  # pragma: no cover - compiled
    """Solve ``C C^T x = b`` (``C``, ``d`` from :func:`cholesky_reciprocal`)."""
    L = C.shape[0]
    for i in range(L):
        t = b[i]
        for k in range(i):
            t -= C[i, k] * x[k]
        x[i] = t * d[i]
    for i in range(L - 1, -1, -1):
        t = x[i]
        for k in range(i + 1, L):
            t -= C[k, i] * x[k]
        x[i] = t * d[i]


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def triangular_inverse(C, d, T):  # pragma: no cover - compiled
    """The lower triangle of ``T = C^{-1}`` (``C``, ``d`` from :func:`cholesky_reciprocal`),
    by columns."""
    L = C.shape[0]
    for j in range(L):
        T[j, j] = d[j]
        for i in range(j + 1, L):
            t = 0.0
            for k in range(j, i):
                t += C[i, k] * T[k, j]
            T[i, j] = -t * d[i]


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def add_inverse(T, wn, S):  # pragma: no cover - compiled
    """``S += wn A^{-1}`` (lower triangle) with ``A^{-1} = T^T T``, ``T = C^{-1}``."""
    L = T.shape[0]
    for i in range(L):
        for j in range(i + 1):
            t = 0.0
            for k in range(i, L):
                t += T[k, i] * T[k, j]
            S[i, j] += wn * t


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def add_h_form(T, H, Y, wn, E):  # pragma: no cover - compiled
    """``E += wn (H - H A^{-1} H)`` (lower triangle) as ``H - Y^T Y`` with ``Y = T H``
    (``T = C^{-1}`` lower, ``H`` given by its lower triangle; ``Y`` scratch)."""
    L = T.shape[0]
    for i in range(L):
        for j in range(L):
            t = 0.0
            for k in range(i + 1):
                t += T[i, k] * (H[k, j] if j <= k else H[j, k])
            Y[i, j] = t
    add_gram_complement(H, Y, wn, E)


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def add_gram_complement(H, Y, wn, E):  # pragma: no cover - compiled
    """``E += wn (H - Y^T Y)`` (lower triangles; ``H`` read in its lower triangle): the
    Stein term's middle factor at a node, ``H - H A^{-1} H`` with ``Y`` the factor's
    triangular solve of ``H`` (:func:`add_h_form`, the whitened small-metric kernel)."""
    L = Y.shape[0]
    for i in range(L):
        for j in range(i + 1):
            t = 0.0
            for k in range(L):
                t += Y[k, i] * Y[k, j]
            E[i, j] += wn * (H[i, j] - t)


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def close_cluster(Vi, S, wv, X, Edf, Eff):  # pragma: no cover - compiled
    """End of a cluster: ``Edf += wv V^{-1} - V^{-1} S V^{-1}`` (``S = sum w A^{-1}`` over the
    nodes of the form ``B = V^{-1}``, ``wv`` their weight; ``S`` given by its lower
    triangle, ``X`` scratch), then ``Edf`` and ``Eff`` (both accumulated in their lower
    triangles) made symmetric."""
    L = Vi.shape[0]
    if wv != 0.0:
        for i in range(L):  # X = S V^{-1}
            for j in range(L):
                t = 0.0
                for k in range(L):
                    t += (S[i, k] if k <= i else S[k, i]) * Vi[k, j]
                X[i, j] = t
        for i in range(L):
            for j in range(i + 1):
                t = 0.0
                for k in range(L):
                    t += Vi[i, k] * X[k, j]
                Edf[i, j] += wv * Vi[i, j] - t
    mirror_lower(Edf, Eff)


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def mirror_lower(Edf, Eff):  # pragma: no cover - compiled
    """``Edf`` and ``Eff``, accumulated in their lower triangles, made symmetric (the upper
    triangles copied from the lower: a cluster's end, :func:`close_cluster` and the
    whitened small-metric kernel's)."""
    for i in range(Edf.shape[0]):
        for j in range(i):
            Edf[j, i] = Edf[i, j]
            Eff[j, i] = Eff[i, j]
