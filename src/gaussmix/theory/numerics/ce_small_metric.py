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
the general kernels.  Same arguments (without ``Vinv``),
results and stopping rule as :func:`~gaussmix.theory.numerics.kernels.ce_channel`.

A cluster of more than two outputs whose metric is positive definite and not too
ill-conditioned (:func:`_whitening`,
:data:`~gaussmix.theory.numerics.tolerances.WHITENED_METRIC_RCOND`) is solved the same
way in the coordinates whitened by ``V = L_V L_V^T``
(:func:`_whitened_cluster`): ``I + V H = L_V (I + Ht) L_V^{-1}`` with the symmetric
``Ht = L_V^T H L_V``, so each node factors ``I + Ht`` by Cholesky instead of eliminating
``I + V H`` (no product ``V H`` a node), and the nodes sum the Stein term's middle factor,
mapped back by ``L_V^{-1}`` once a cluster.  On the digits ten-class point (L = 9, every
cluster of small metric) an evaluation of 2048 nodes a cluster took 55 ms before, 36.5 ms
after (``docs/benchmarks-history.md``); the moments agree to 5e-15.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import ce_stein as _stein
from .kernels import (
    STEIN_H_FORM,
    ce3_eval,
    ce_curvature,
    ce_eval,
    ce_system_hessian,
    cholesky,
    max_row_sum,
    node_scale,
    scaled_residual,
)
from .tolerances import WHITENED_METRIC_FLOOR, WHITENED_METRIC_RCOND

__all__ = ["small_metric", "ce_channel_small_metric", "ce3_channel_small_metric"]


def small_metric(vnorm: float | np.ndarray, L: int) -> bool | np.ndarray:
    """Whether a cluster of metric ``V`` (``vnorm`` its max-norm, ``L`` reduced outputs) is
    solved by :func:`ce_channel_small_metric`: ``||V|| sqrt(L) / 2 <``
    :data:`~gaussmix.theory.numerics.kernels.STEIN_H_FORM` bounds ``||V H||`` everywhere
    (the reduced softmax Hessian has ``||H||_2 <= 1/2``, Gershgorin on ``diag p - p p^T``;
    ``||H||_inf <= sqrt(L) ||H||_2``, ``||V||_2 <= ||V||_inf``).  Elementwise for an array
    of max-norms (one per cluster)."""
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


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _newton_node(
    u, om, P, yc, Vc, vnorm, tol, max_iter, z, p, Pp, gr, r, step, work
):  # pragma: no cover
    """The proximal point of one node of a small-metric cluster, in place in ``u`` (its
    warm start): Newton on ``r(u) = u - omega + V grad(u)`` with full steps (no line
    search: the Jacobian ``I + V H`` is near the identity), to the stopping rule of
    :func:`~gaussmix.theory.numerics.kernels.ce_channel` (the scaled residual against the
    node's scale) or ``max_iter`` steps.  ``step(u, p, Pp, r, work)``: the Newton update of
    ``u`` from the residual ``r`` at the current ``p``, ``Pp`` (its system in the kernel's
    coordinates, scratch ``work``), False where its system has no factor (the run then
    stops, not converged): :func:`_plain_step` or :func:`_whitened_step`, the one loop of
    both kernels.  Returns the loss at ``u`` and whether the node converged; ``p``, ``Pp``
    and ``gr`` are left at ``u``."""
    L = u.shape[0]
    lval = ce_eval(u, P, yc, z, p, Pp, gr)
    for _ in range(max_iter):
        res = scaled_residual(u, om, Vc, gr)
        if res <= tol * node_scale(u, om, vnorm, ce_curvature(p)):
            return lval, True
        for i in range(L):  # r = u - omega + V grad
            t = u[i] - om[i]
            for j in range(L):
                t += Vc[i, j] * gr[j]
            r[i] = t
        if not step(u, p, Pp, r, work):
            return lval, False
        lval = ce_eval(u, P, yc, z, p, Pp, gr)
    return lval, False


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _plain_step(u, p, Pp, r, work):  # pragma: no cover - compiled
    """:func:`_newton_node`'s step of :func:`_plain_cluster`: ``u -= (I + V H)^{-1} r`` by
    elimination (``work = (V, P, zero, A, H, q, M, R, X)``; ``r`` is the column of ``R``)."""
    Vc, P, zero, A, Hm, qrow, M, R, X = work
    ce_system_hessian(zero, P, p, Pp, A, Hm, qrow)
    _near_identity_solve(Vc, Hm, M, R, X)
    for i in range(u.shape[0]):
        u[i] -= X[i, 0]
    return True


@njit(cache=True, error_model="numpy", nogil=True)
def _plain_cluster(yc, P, omega, Vc, h, w, tol, max_iter, Ef, Eff, Edf):  # pragma: no cover
    """One cluster of :func:`ce_channel_small_metric` node by node: Newton with the
    Jacobian ``I + V H`` (:func:`_newton_node`, :func:`_plain_step`), the Stein term
    ``(I + H V)^{-1} H`` by a solve with the columns of ``H``; adds to ``Ef, Eff, Edf``
    (this cluster's rows), returns ``Eloss, Eenv`` and the number of nodes that did not
    converge."""
    N, L = omega.shape
    Kf = P.shape[1]
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
    work = (Vc, P, zero, A, Hm, qrow, M, r, X)
    n_failed = 0
    Eloss = 0.0
    Eenv = 0.0
    vnorm = max_row_sum(Vc)
    for n in range(N):
        u = h[n]
        lval, ok = _newton_node(
            u, omega[n], P, yc, Vc, vnorm, tol, max_iter, z, p, Pp, gr, r[:, 0], _plain_step, work
        )
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
            Ef[i] += wn * fi
            for j in range(L):
                fj = -gr[j]
                Eff[i, j] += wn * fi * fj
                quad += fi * Vc[i, j] * fj
                Edf[i, j] += wn * X[i, j]
        Eloss += wn * lval
        Eenv += wn * (0.5 * quad + lval)
    return Eloss, Eenv, n_failed


@njit(cache=True, error_model="numpy", nogil=True)
def _whitening(Vc, LV):  # pragma: no cover - compiled
    """The lower Cholesky factor ``L_V`` of ``V`` into ``LV``; whether it exists with every
    squared pivot at least :data:`~gaussmix.theory.numerics.tolerances.WHITENED_METRIC_RCOND`
    times the largest diagonal entry of ``V``, itself at least
    :data:`~gaussmix.theory.numerics.tolerances.WHITENED_METRIC_FLOOR` (then
    :func:`_whitened_cluster` applies)."""
    L = Vc.shape[0]
    if not cholesky(Vc, LV):
        return False
    vmax = 0.0
    for i in range(L):
        vmax = max(vmax, Vc[i, i])
    if not vmax >= WHITENED_METRIC_FLOOR:
        return False
    for i in range(L):
        if not LV[i, i] * LV[i, i] >= WHITENED_METRIC_RCOND * vmax:
            return False
    return True


@njit(cache=True, error_model="numpy", nogil=True)
def _whitened_cluster(yc, P, omega, Vc, LV, h, w, tol, max_iter, Ef, Eff, Edf):  # pragma: no cover
    """:func:`_plain_cluster` in the coordinates whitened by ``V = L_V L_V^T``.

    With ``W = L_V^T P`` and the whitened Hessian ``Ht = L_V^T H L_V = W (diag p - p p^T)
    W^T`` (symmetric, positive semi-definite): ``I + V H = L_V (I + Ht) L_V^{-1}``, so the
    Newton step is ``L_V (I + Ht)^{-1} L_V^{-1} r`` (a Cholesky factor ``C`` of ``I + Ht``
    instead of the elimination of ``I + V H``: no product ``V H``), and the Stein term is
    ``(I + H V)^{-1} H = L_V^{-T} (Ht - Ht (I + Ht)^{-1} Ht) L_V^{-1}``, whose middle factor
    is ``Ht - Y^T Y``, ``Y = C^{-1} Ht`` (free of cancellation where ``Ht`` is small, as the
    ``B = H`` form of :func:`~gaussmix.theory.numerics.kernels.ce_channel`); the nodes sum
    it, the cluster maps the sum back once.  Only lower triangles are formed.  The
    proximal points, residuals and stopping rule are those of the original coordinates."""
    N, L = omega.shape
    Kf = P.shape[1]
    z = np.empty(Kf)
    p = np.empty(Kf)
    Pp = np.empty(L)
    gr = np.empty(L)
    W = np.zeros((L, Kf))  # W = L_V^T P
    for i in range(L):
        for k in range(Kf):
            t = 0.0
            for j in range(i, L):
                t += LV[j, i] * P[j, k]
            W[i, k] = t
    O = _stein.packed_outer(W)
    eye = np.eye(L)
    Wp = np.empty(L)
    qrow = np.empty(O.shape[1])
    Ht = np.zeros((L, L))
    C = np.zeros((L, L))
    Y = np.empty((L, L))
    S = np.zeros((L, L))
    d = np.empty(L)
    r = np.empty(L)
    a = np.empty(L)
    b = np.empty(L)
    n_failed = 0
    Eloss = 0.0
    Eenv = 0.0
    vnorm = max_row_sum(Vc)
    work = (W, O, eye, Wp, qrow, Ht, C, d, LV, a, b)
    for n in range(N):
        u = h[n]
        lval, ok = _newton_node(
            u, omega[n], P, yc, Vc, vnorm, tol, max_iter, z, p, Pp, gr, r, _whitened_step, work
        )
        if not ok:
            n_failed += 1
        # the Stein term's middle factor Ht - Y^T Y at the proximal point
        if _whitened_system(W, O, eye, p, Wp, qrow, Ht, C, d):
            for j in range(L):  # Y = C^{-1} Ht, column by column
                for i in range(L):
                    t = Ht[i, j] if j <= i else Ht[j, i]
                    for k in range(i):
                        t -= C[i, k] * Y[k, j]
                    Y[i, j] = t * d[i]
        else:  # (I + Ht cannot fail to be positive definite but by NaN: count the node)
            if ok:
                n_failed += 1
            Y[:, :] = 0.0
        wn = w[n]
        _stein.add_gram_complement(Ht, Y, wn, S)
        quad = 0.0
        for i in range(L):
            fi = -gr[i]
            Ef[i] += wn * fi
            t = 0.0
            for j in range(i):
                fj = -gr[j]
                Eff[i, j] += wn * fi * fj
                t += Vc[i, j] * fj
            Eff[i, i] += wn * fi * fi
            quad += fi * (2.0 * t + Vc[i, i] * fi)
        Eloss += wn * lval
        Eenv += wn * (0.5 * quad + lval)
    # Edf = L_V^{-T} S L_V^{-1}: with T = L_V^{-1}, Edf_ij = sum_kl T_ki S_kl T_lj
    T = np.zeros((L, L))
    for j in range(L):
        T[j, j] = 1.0 / LV[j, j]
        for i in range(j + 1, L):
            t = 0.0
            for k in range(j, i):
                t += LV[i, k] * T[k, j]
            T[i, j] = -t / LV[i, i]
    for k in range(L):  # Y = S T (S symmetric from its lower triangle)
        for j in range(L):
            t = 0.0
            for m in range(j, L):
                t += (S[k, m] if m <= k else S[m, k]) * T[m, j]
            Y[k, j] = t
    for i in range(L):
        for j in range(i + 1):
            t = 0.0
            for k in range(i, L):
                t += T[k, i] * Y[k, j]
            Edf[i, j] += t
    _stein.mirror_lower(Edf, Eff)
    return Eloss, Eenv, n_failed


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _whitened_system(W, O, eye, p, Wp, q, Ht, C, d):  # pragma: no cover - compiled
    """The lower triangle of ``Ht = W (diag p - p p^T) W^T`` and the Cholesky factor ``C`` of
    ``I + Ht`` (whether it exists), the reciprocals of its pivots in ``d``
    (:mod:`~gaussmix.theory.numerics.ce_stein`'s system with ``W`` for ``P`` and the
    identity ``eye`` for ``V^{-1}``; ``O = packed_outer(W)``, ``q`` scratch)."""
    L, Kf = W.shape
    for i in range(L):
        t = 0.0
        for k in range(Kf):
            t += W[i, k] * p[k]
        Wp[i] = t
    _stein.hessian_system_lower(eye, O, p, Wp, C, Ht, q)
    return _stein.cholesky_reciprocal(C, C, d)


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _whitened_step(u, p, Pp, r, work):  # pragma: no cover - compiled
    """:func:`_newton_node`'s step of :func:`_whitened_cluster`: ``u -= L_V (I + Ht)^{-1}
    L_V^{-1} r`` (``work = (W, O, eye, Wp, q, Ht, C, d, L_V, a, b)``), False where ``I +
    Ht`` has no Cholesky factor (:func:`_whitened_system`)."""
    W, O, eye, Wp, qrow, Ht, C, d, LV, a, b = work
    if not _whitened_system(W, O, eye, p, Wp, qrow, Ht, C, d):
        return False
    _forward(LV, r, a)  # a = L_V^{-1} r
    _stein.solve_reciprocal(C, d, a, b)  # b = (I + Ht)^{-1} a
    for i in range(u.shape[0]):  # u -= L_V b
        t = 0.0
        for j in range(i + 1):
            t += LV[i, j] * b[j]
        u[i] -= t
    return True


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _forward(LV, r, a):  # pragma: no cover - compiled
    """``a = L_V^{-1} r`` (``L_V`` lower triangular)."""
    for i in range(LV.shape[0]):
        t = r[i]
        for k in range(i):
            t -= LV[i, k] * a[k]
        a[i] = t / LV[i, i]


@njit(cache=True, error_model="numpy", nogil=True)
def ce_channel_small_metric(ylab, P, omega, V, h, w, tol, max_iter):  # pragma: no cover
    """Cross-entropy channel moments on the complement of ``(1, ..., 1)`` for clusters of
    :func:`small_metric` (see the module): the arguments and results of
    :func:`~gaussmix.theory.numerics.kernels.ce_channel` without ``Vinv``.  A cluster of
    more than two outputs whose metric has a well-conditioned Cholesky factor
    (:func:`_whitening`) is solved in whitened coordinates (:func:`_whitened_cluster`), the
    others node by node with ``I + V H`` (:func:`_plain_cluster`)."""
    K, N, L = omega.shape
    Ef = np.zeros((K, L))
    Eff = np.zeros((K, L, L))
    Edf = np.zeros((K, L, L))
    Eloss = np.zeros(K)
    Eenv = np.zeros(K)
    LV = np.zeros((L, L))
    n_failed = 0
    for c in range(K):
        out = (Ef[c], Eff[c], Edf[c])
        if L > 2 and _whitening(V[c], LV):
            got = _whitened_cluster(ylab[c], P, omega[c], V[c], LV, h[c], w, tol, max_iter, *out)
        else:
            got = _plain_cluster(ylab[c], P, omega[c], V[c], h[c], w, tol, max_iter, *out)
        Eloss[c], Eenv[c] = got[0], got[1]
        n_failed += got[2]
    return Ef, Eff, Edf, Eloss, Eenv, n_failed


@njit(cache=True, error_model="numpy", nogil=True)
def _near_identity_solve2(a00, a01, a10, a11, b00, b01, b10, b11, r0, r1):  # pragma: no cover
    """:func:`_near_identity_solve` for ``L = 2`` and one right-hand side ``r``, in
    scalars: ``(I + A B)^{-1} r`` by the same operations in the same order."""
    m00 = 1.0 + a00 * b00 + a01 * b10
    m01 = 0.0 + a00 * b01 + a01 * b11
    m10 = 0.0 + a10 * b00 + a11 * b10
    m11 = 1.0 + a10 * b01 + a11 * b11
    f = m10 / m00
    m11 -= f * m01
    r1 -= f * r0
    x1 = r1 / m11
    x0 = (r0 - m01 * x1) / m00
    return x0, x1


@njit(cache=True, error_model="numpy", nogil=True)
def _ce3_hessian(P, p0, p1, p2, q0, q1):  # pragma: no cover - compiled
    """The reduced Hessian ``H = P (diag p - p p^T) P^T`` of three classes, each entry
    rounded as :func:`~gaussmix.theory.numerics.kernels.ce_system_hessian` rounds it
    (``-Pp_i Pp_j + sum_k (P_ik p_k) P_jk`` in the order of ``k``; ``H_01`` and ``H_10``
    may differ in the last bit)."""
    r00, r01, r02 = P[0, 0] * p0, P[0, 1] * p1, P[0, 2] * p2
    r10, r11, r12 = P[1, 0] * p0, P[1, 1] * p1, P[1, 2] * p2
    h00 = -(q0 * q0) + r00 * P[0, 0] + r01 * P[0, 1] + r02 * P[0, 2]
    h01 = -(q0 * q1) + r00 * P[1, 0] + r01 * P[1, 1] + r02 * P[1, 2]
    h10 = -(q1 * q0) + r10 * P[0, 0] + r11 * P[0, 1] + r12 * P[0, 2]
    h11 = -(q1 * q1) + r10 * P[1, 0] + r11 * P[1, 1] + r12 * P[1, 2]
    return h00, h01, h10, h11


@njit(cache=True, error_model="numpy", nogil=True)
def ce3_channel_small_metric(ylab, P, omega, V, h, w, tol, max_iter):  # pragma: no cover
    """:func:`ce_channel_small_metric` for three classes (two reduced outputs), in scalar
    arithmetic: the same operations in the same order, so the same proximal points and
    moments to the bit (``tests/test_kernels.py``), without the loops over arrays of two
    and three entries (as :func:`~gaussmix.theory.numerics.kernels.ce3_channel` is the
    general kernel's)."""
    K, N, _ = omega.shape
    Ef = np.zeros((K, 2))
    Eff = np.zeros((K, 2, 2))
    Edf = np.zeros((K, 2, 2))
    Eloss = np.zeros(K)
    Eenv = np.zeros(K)
    n_failed = 0
    for c in range(K):
        yc = ylab[c]
        v00, v01, v10, v11 = V[c, 0, 0], V[c, 0, 1], V[c, 1, 0], V[c, 1, 1]
        vnorm = max(0.0, 0.0 + abs(v00) + abs(v01))
        vnorm = max(vnorm, 0.0 + abs(v10) + abs(v11))
        for n in range(N):
            u0 = h[c, n, 0]
            u1 = h[c, n, 1]
            o0 = omega[c, n, 0]
            o1 = omega[c, n, 1]
            lval, p0, p1, p2, q0, q1, g0, g1 = ce3_eval(u0, u1, P, yc)
            ok = False
            for _ in range(max_iter):
                r0 = u0 - o0 + v00 * g0 + v01 * g1
                r1 = u1 - o1 + v10 * g0 + v11 * g1
                res = 0.0
                if abs(r0) > res:
                    res = abs(r0)
                if abs(r1) > res:
                    res = abs(r1)
                # the node's scale (node_scale, ce_curvature: the first largest p_k)
                a = max(max(0.0, abs(o0)), abs(o1))
                b = max(max(0.0, abs(u0)), abs(u1))
                kmax = 0
                pmax = p0
                if p1 > pmax:
                    kmax = 1
                    pmax = p1
                if p2 > pmax:
                    kmax = 2
                if kmax == 0:
                    curv = 2.0 * (0.0 + p1 + p2)
                elif kmax == 1:
                    curv = 2.0 * (0.0 + p0 + p2)
                else:
                    curv = 2.0 * (0.0 + p0 + p1)
                if res <= tol * ((1.0 + a + b) * (1.0 + vnorm * curv)):
                    ok = True
                    break
                h00, h01, h10, h11 = _ce3_hessian(P, p0, p1, p2, q0, q1)
                x0, x1 = _near_identity_solve2(v00, v01, v10, v11, h00, h01, h10, h11, r0, r1)
                u0 -= x0
                u1 -= x1
                lval, p0, p1, p2, q0, q1, g0, g1 = ce3_eval(u0, u1, P, yc)
            h[c, n, 0] = u0
            h[c, n, 1] = u1
            if not ok:
                n_failed += 1
            # the Stein term (I + H V)^{-1} H, a column of H at a time (see the kernel
            # above)
            h00, h01, h10, h11 = _ce3_hessian(P, p0, p1, p2, q0, q1)
            x00, x10 = _near_identity_solve2(h00, h01, h10, h11, v00, v01, v10, v11, h00, h10)
            x01, x11 = _near_identity_solve2(h00, h01, h10, h11, v00, v01, v10, v11, h01, h11)
            wn = w[n]
            f0 = -g0
            f1 = -g1
            quad = 0.0
            Ef[c, 0] += wn * f0
            Eff[c, 0, 0] += wn * f0 * f0
            quad += f0 * v00 * f0
            Edf[c, 0, 0] += wn * x00
            Eff[c, 0, 1] += wn * f0 * f1
            quad += f0 * v01 * f1
            Edf[c, 0, 1] += wn * x01
            Ef[c, 1] += wn * f1
            Eff[c, 1, 0] += wn * f1 * f0
            quad += f1 * v10 * f0
            Edf[c, 1, 0] += wn * x10
            Eff[c, 1, 1] += wn * f1 * f1
            quad += f1 * v11 * f1
            Edf[c, 1, 1] += wn * x11
            Eloss[c] += wn * lval
            Eenv[c] += wn * (0.5 * quad + lval)
    return Ef, Eff, Edf, Eloss, Eenv, n_failed
