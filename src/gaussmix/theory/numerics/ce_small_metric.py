"""Compiled cross-entropy channel where the metric is small: the proximal solve without
``V^{-1}`` (numba).

:func:`gaussmix.theory.numerics.kernels.ce_channel` solves each node by Newton on the
proximal objective, whose Hessian ``V^{-1} + H`` needs ``V`` positive definite and well
conditioned.  Where ``V`` is small it may be neither: near the multi-output lasso's zero
estimator the prior's metric was measured with eigenvalues 1.4e-11, 2.6e-17 and -1.3e-20
(K = 4 cross-entropy, lam = 5.7), ``V^{-1} + H`` had no Cholesky factor and every node
failed.  There (:func:`small_metric`: ``||V H|| < 0.1`` at every point) the stationarity
condition ``r(u) = u - omega + V grad(u) = 0`` is solved by Newton with the Jacobian
``I + V H``, which contracts the residual with full steps (no line search) and never forms
``V^{-1}``; the Stein term is ``E[H - H (I + V H)^{-1} V H]``, the ``B = H`` form of
:func:`~gaussmix.theory.numerics.kernels.ce_channel` (``A^{-1} = (I + V H)^{-1} V``), computed
as ``E[(I + H V)^{-1} H]`` (the same matrix: ``H - H (I + V H)^{-1} V H = H (I + V H)^{-1}``,
and ``H (I + V H)^{-1} = (I + H V)^{-1} H``), one solve with the columns of ``H`` a node.  The
channel (:mod:`gaussmix.theory.channel.channel`) hands such clusters here and the others to
the general kernels, whose arithmetic is unchanged.  Same arguments (without ``Vinv``),
results and stopping rule as :func:`~gaussmix.theory.numerics.kernels.ce_channel`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import (
    STEIN_H_FORM,
    ce_curvature,
    ce_eval,
    ce_system_hessian,
    max_row_sum,
    node_scale,
    scaled_residual,
)

__all__ = ["small_metric", "ce_channel_small_metric"]


def small_metric(vnorm: float, L: int) -> bool:
    """Whether a cluster of metric ``V`` (``vnorm`` its max-norm, ``L`` reduced outputs) is
    solved by :func:`ce_channel_small_metric`: ``||V|| sqrt(L) / 2 <``
    :data:`~gaussmix.theory.numerics.kernels.STEIN_H_FORM` bounds ``||V H||`` everywhere
    (the reduced softmax Hessian has ``||H||_2 <= 1/2``, Gershgorin on ``diag p - p p^T``;
    ``||H||_inf <= sqrt(L) ||H||_2``, ``||V||_2 <= ||V||_inf``)."""
    return vnorm * 0.5 * math.sqrt(L) < STEIN_H_FORM


@njit(cache=True, error_model="numpy", nogil=True)
def _near_identity_solve(Vc, Hm, M, R, X):  # pragma: no cover - compiled
    """``X = (I + V H)^{-1} R`` (``R``, ``X`` (L, m); ``M`` scratch, ``R`` overwritten) by
    elimination without pivoting: ``||V H||_inf < 1/2`` makes ``I + V H`` diagonally
    dominant by rows (also called with the two factors exchanged, for ``I + H V``)."""
    L = M.shape[0]
    for i in range(L):
        for j in range(L):
            t = 1.0 if i == j else 0.0
            for k in range(L):
                t += Vc[i, k] * Hm[k, j]
            M[i, j] = t
    for k in range(L):
        for i in range(k + 1, L):
            f = M[i, k] / M[k, k]
            for j in range(k, L):
                M[i, j] -= f * M[k, j]
            for j in range(R.shape[1]):
                R[i, j] -= f * R[k, j]
    for i in range(L - 1, -1, -1):
        for j in range(R.shape[1]):
            t = R[i, j]
            for k in range(i + 1, L):
                t -= M[i, k] * X[k, j]
            X[i, j] = t / M[i, i]


@njit(cache=True, error_model="numpy", nogil=True)
def ce_channel_small_metric(ylab, P, omega, V, h, w, tol, max_iter):  # pragma: no cover
    """Cross-entropy channel moments on the complement of ``(1, ..., 1)`` for clusters of
    :func:`small_metric` (see the module): the arguments and results of
    :func:`~gaussmix.theory.numerics.kernels.ce_channel` without ``Vinv``."""
    K, N, L = omega.shape
    Kf = P.shape[1]
    Ef = np.zeros((K, L))
    Eff = np.zeros((K, L, L))
    Edf = np.zeros((K, L, L))
    Eloss = np.zeros(K)
    Eenv = np.zeros(K)
    z = np.empty(Kf)
    p = np.empty(Kf)
    Pp = np.empty(L)
    gr = np.empty(L)
    qrow = np.empty(Kf)
    A = np.zeros((L, L))
    zero = np.zeros((L, L))
    Hm = np.empty((L, L))
    M = np.empty((L, L))
    R = np.empty((L, L))
    r = np.empty((L, 1))
    X = np.empty((L, L))
    n_failed = 0
    for c in range(K):
        yc = ylab[c]
        Vc = V[c]
        vnorm = max_row_sum(Vc)
        for n in range(N):
            u = h[c, n]
            om = omega[c, n]
            lval = ce_eval(u, P, yc, z, p, Pp, gr)
            ok = False
            for _ in range(max_iter):
                res = scaled_residual(u, om, Vc, gr)
                if res <= tol * node_scale(u, om, vnorm, ce_curvature(p)):
                    ok = True
                    break
                ce_system_hessian(zero, P, p, Pp, A, Hm, qrow)
                for i in range(L):
                    t = u[i] - om[i]
                    for j in range(L):
                        t += Vc[i, j] * gr[j]
                    r[i, 0] = t
                _near_identity_solve(Vc, Hm, M, r, X)
                for i in range(L):
                    u[i] -= X[i, 0]
                lval = ce_eval(u, P, yc, z, p, Pp, gr)
            if not ok:
                n_failed += 1
            # contribution at the proximal point: H - H (I + V H)^{-1} V H, which is
            # H (I + V H)^{-1} = (I + H V)^{-1} H (push-through): one solve with the
            # columns of H (I + H V is as diagonally dominant: ||H V|| has the bound of
            # small_metric), no product V H and no product H X
            ce_system_hessian(zero, P, p, Pp, A, Hm, qrow)
            R[:, :] = Hm
            _near_identity_solve(Hm, Vc, M, R, X)
            wn = w[n]
            quad = 0.0
            for i in range(L):
                fi = -gr[i]
                Ef[c, i] += wn * fi
                for j in range(L):
                    fj = -gr[j]
                    Eff[c, i, j] += wn * fi * fj
                    quad += fi * Vc[i, j] * fj
                    Edf[c, i, j] += wn * X[i, j]
            Eloss[c] += wn * lval
            Eenv[c] += wn * (0.5 * quad + lval)
    return Ef, Eff, Edf, Eloss, Eenv, n_failed
