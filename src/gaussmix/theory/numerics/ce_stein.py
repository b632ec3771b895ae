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

Measured on the digits ten-class point (L = 9, 10 clusters of 2048 nodes): the kernel's
node loop from converged proximal points 56 ms before, see ``docs/benchmarks-history.md``.
"""

from __future__ import annotations

from numba import njit

__all__ = [
    "hessian_system_lower",
    "triangular_inverse",
    "add_inverse",
    "add_h_form",
    "close_cluster",
]


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def hessian_system_lower(Vi, P, p, Pp, A, H, q):  # pragma: no cover - compiled
    """The lower triangles of the reduced Hessian ``H = P (diag p - p p^T) P^T`` and of
    ``A = V^{-1} + H`` (``A_ij = V^{-1}_ij + H_ij``); ``q`` (Kf) is scratch (row ``i`` of
    ``P diag p``); returns the max-norm of ``H`` (each row's sum with the upper triangle's
    entries read from the lower one)."""
    L, Kf = P.shape
    for i in range(L):
        for k in range(Kf):
            q[k] = P[i, k] * p[k]
        for j in range(i + 1):
            t = -Pp[i] * Pp[j]
            for k in range(Kf):
                t += q[k] * P[j, k]
            H[i, j] = t
            A[i, j] = Vi[i, j] + t
    hn = 0.0
    for i in range(L):
        t = 0.0
        for j in range(L):
            t += abs(H[i, j]) if j <= i else abs(H[j, i])
        hn = max(hn, t)
    return hn


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def triangular_inverse(C, T):  # pragma: no cover - compiled
    """The lower triangle of ``T = C^{-1}`` (``C`` lower triangular), by columns."""
    L = C.shape[0]
    for j in range(L):
        T[j, j] = 1.0 / C[j, j]
        for i in range(j + 1, L):
            t = 0.0
            for k in range(j, i):
                t += C[i, k] * T[k, j]
            T[i, j] = -t / C[i, i]


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
    for i in range(L):
        for j in range(i):
            Edf[j, i] = Edf[i, j]
            Eff[j, i] = Eff[i, j]
