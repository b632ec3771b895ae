"""Compiled channel kernels (numba): proximal solves and Gaussian moments in one pass.

The channel of Theorem 1 (eq. (8), hat updates) needs, at every quadrature node of
every cluster, the proximal point ``h = prox(omega)`` under the metric ``V_c`` and a few
functions of it.  In numpy this is a batched Newton method whose cost is dominated by the
overhead of many small array operations; here each node is solved to convergence in a
compiled loop and its contributions are accumulated directly, with no temporaries.

Two smooth losses have kernels:

* :func:`logistic_channel` — binary logistic loss, one output (scalar safeguarded Newton in
  the bracket between ``omega`` and ``omega + v y``, where the stationarity condition
  changes sign);
* :func:`ce_channel` — softmax cross-entropy on the complement of ``(1, ..., 1)`` (the
  :class:`~gaussmix.theory.channel.losses.ReducedLoss`), any number of outputs (Newton on the
  strictly
  convex proximal objective with Armijo backtracking; Cholesky solves of the symmetric
  system ``(V^{-1} + H) s = grad``), and :func:`ce3_channel`, its scalar fast path for
  three classes (two outputs, closed-form 2 x 2 systems).

They return the same moments as the numpy reference path
:func:`gaussmix.theory.channel.channel._quadrature_moments` (``Ef, Eff, Edf, Eloss, Eenv``), which
the
tests compare them with, plus a status: 0 on success, otherwise the number of nodes whose
proximal solve did not converge (:func:`ce_channel`, :func:`ce3_channel`: 1, they stop at the
first such node).
``h`` (the warm start) is updated in place.

One proximal Newton per loss and backend, and why they stay apart.  The numpy oracle is
``Loss.prox`` (:mod:`gaussmix.theory.channel.losses`: a damped Newton on the stationarity residual
with backtracking, for every smooth loss; ``LogisticLoss.prox``, the scalar safeguarded
Newton of :func:`logistic_channel`); the compiled backend is one kernel per loss, where
:func:`ce3_channel` is :func:`ce_channel`'s algorithm (Newton on the proximal objective,
Armijo backtracking, full steps below a residual of ``1e-4``) with the 2 x 2 systems solved
in closed form on scalars instead of by Cholesky on arrays.  Merging them into one numba
function would change the solver's iterates to the bit: on the same 3 x 20000 nodes the two
cross-entropy kernels differ in the last bits at a third of the nodes (at most 2.2e-15), and
the scalar path is 3.2 times faster (0.042 s against 0.136 s); scipy's ``expit`` and
:func:`_expit` differ in the last place too.  The numpy oracle stays the independent
reference: ``tests/test_prox_contract.py`` runs every registered loss through every backend
and through the exact ERM (:mod:`gaussmix.theory.channel.erm`) on the same inputs, each against its
own stopping rule (:func:`gaussmix.theory.channel.losses.prox_threshold`).

Two observables have kernels too: :func:`ce_ray_flux` (the curved part of the boundary
integral of the K = 3 training error,
:func:`gaussmix.theory.solve.observables._wedge_probability`) and
:func:`bvnu` (Genz's bivariate normal, :mod:`gaussmix.theory.numerics.orthant`; its ``Phi``
the engine's compiled one, :func:`~gaussmix.theory.numerics.normal_kernels.ndtr_scalar`).

Functions are compiled on first use and cached on disk (``cache=True``); every argument must
be a C-contiguous float64 array (int64 for labels) so that one signature serves all calls.
They release the GIL (``nogil=True``; they touch no Python object): two solves in two
threads of one process (the explorer's curve and its prefetched neighbour) run on two
cores instead of taking turns.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from . import ce_stein as _stein
from .normal_kernels import ndtr_scalar

__all__ = [
    "logistic_channel",
    "ce_channel",
    "ce3_channel",
    "logits",
    "ce_ray_flux",
    "bvnu",
    "bvnu_rows",
]

#: points of the scan that places the panels of :func:`ce_ray_flux`
WEDGE_SCAN = 65
#: panel size of :func:`ce_ray_flux`, in units of ``|dz| / (|z| + 0.05)``
WEDGE_PANEL = 0.5
#: fewest panels of :func:`ce_ray_flux`
WEDGE_MIN_PANELS = 16
#: Below this ``||V|| ||H||`` (max-norms) the cross-entropy kernels write the Stein term
#: ``E[(I + H V)^{-1} H]`` as ``H - H A^{-1} H``, above it as ``V^{-1} - V^{-1} A^{-1}
#: V^{-1}`` (``A = V^{-1} + H``): equal in exact arithmetic, each free of cancellation on its
#: side (the second loses ``eps / (||V|| ||H||)`` relative: all of it on the way to the
#: lasso's zero estimator, ``V ~ 1e-30``, where it gave 0 instead of ``H``).
STEIN_H_FORM = 0.1


@njit(cache=True, error_model="numpy", nogil=True)
def _log1pexp(x: float) -> float:
    """``log(1 + exp(x))`` without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True, error_model="numpy", nogil=True)
def _expit(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True, error_model="numpy", nogil=True)
def logistic_channel(y, omega, v, h, w, tol, max_iter):  # pragma: no cover - compiled
    """Logistic-loss channel moments (one output).

    Parameters
    ----------
    y : (K,) labels +-1; omega : (K, N) prox arguments; v : (K,) metric; h : (K, N) warm
    start, overwritten with the proximal points; w : (N,) quadrature weights; tol : float,
    relative convergence threshold: a node has converged when
    ``|h - omega - v y sigmoid(-y h)| <= tol (1 + |omega| + |h|) (1 + v s (1 - s))``
    (``s = sigmoid(-y h)``; :data:`~gaussmix.theory.numerics.tolerances.PROX_TOL`); max_iter : int.

    Returns
    -------
    Ef, Eff, Edf, Eloss, Eenv : (K,) arrays; n_failed : int
    """
    K, N = omega.shape
    Ef = np.zeros(K)
    Eff = np.zeros(K)
    Edf = np.zeros(K)
    Eloss = np.zeros(K)
    Eenv = np.zeros(K)
    n_failed = 0
    for c in range(K):
        yc = y[c]
        vc = v[c]
        for n in range(N):
            om = omega[c, n]
            a = om
            b = om + vc * yc
            lo = min(a, b)
            hi = max(a, b)
            x = min(max(h[c, n], lo), hi)
            g_prev = math.inf
            ok = False
            s = 0.0
            for _ in range(max_iter):
                s = _expit(-yc * x)
                g = x - om - vc * yc * s
                ag = abs(g)
                if ag <= tol * (1.0 + abs(om) + abs(x)) * (1.0 + vc * s * (1.0 - s)):
                    ok = True
                    break
                if g < 0.0:
                    lo = x
                else:
                    hi = x
                xn = x - g / (1.0 + vc * s * (1.0 - s))
                if xn <= lo or xn >= hi or ag > 0.5 * g_prev:
                    x = 0.5 * (lo + hi)
                    g_prev = math.inf
                else:
                    x = xn
                    g_prev = ag
            if not ok:
                n_failed += 1
            h[c, n] = x
            f = yc * s  # -grad loss = y sigmoid(-y h)
            hh = s * (1.0 - s)
            lval = _log1pexp(-yc * x)
            wn = w[n]
            Ef[c] += wn * f
            Eff[c] += wn * f * f
            Edf[c] += wn * hh / (1.0 + hh * vc)
            Eloss[c] += wn * lval
            Eenv[c] += wn * (0.5 * vc * f * f + lval)
    return Ef, Eff, Edf, Eloss, Eenv, n_failed


@njit(cache=True, error_model="numpy", nogil=True)
def _cholesky(A, C):  # pragma: no cover - compiled
    """Lower Cholesky factor of ``A`` into ``C``; False if ``A`` is not positive definite."""
    L = A.shape[0]
    for i in range(L):
        for j in range(i + 1):
            t = A[i, j]
            for k in range(j):
                t -= C[i, k] * C[j, k]
            if i == j:
                if not t > 0.0:
                    return False
                C[i, i] = math.sqrt(t)
            else:
                C[i, j] = t / C[j, j]
    return True


@njit(cache=True, error_model="numpy", nogil=True)
def _chol_solve(C, b, x):  # pragma: no cover - compiled
    """Solve ``C C^T x = b`` given the lower factor ``C``."""
    L = C.shape[0]
    for i in range(L):
        t = b[i]
        for k in range(i):
            t -= C[i, k] * x[k]
        x[i] = t / C[i, i]
    for i in range(L - 1, -1, -1):
        t = x[i]
        for k in range(i + 1, L):
            t -= C[k, i] * x[k]
        x[i] = t / C[i, i]


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def logits(u, P, z):  # pragma: no cover - compiled
    """The logits ``z = P^T u`` (written into ``z``, each sum in the order of ``i``) and
    their maximum, which :func:`_ce_eval` and the risk's loss
    (:func:`gaussmix.theory.numerics.ce_risk.ce_risk`) both start from."""
    L, Kf = P.shape
    zmax = -math.inf
    for k in range(Kf):
        t = 0.0
        for i in range(L):
            t += u[i] * P[i, k]
        z[k] = t
        if t > zmax:
            zmax = t
    return zmax


@njit(cache=True, error_model="numpy", nogil=True)
def _ce_eval(u, P, yc, z, p, Pp, gr):  # pragma: no cover - compiled
    """Logits ``z = P^T u``, softmax ``p``, ``Pp = P p`` and the reduced gradient
    ``gr = P (p - e_y) = sum_{k != y} (P_k - P_y) p_k`` (the sum of small terms where
    ``p_y -> 1``: accurate relative to its size, not to 1, so that the stationarity residual
    ``u - omega + V gr`` has no rounding floor ``eps |V|``); returns the loss
    ``logsumexp(z) - z_y``."""
    L, Kf = P.shape
    zmax = logits(u, P, z)
    S = 0.0
    for k in range(Kf):
        p[k] = math.exp(z[k] - zmax)
        S += p[k]
    for k in range(Kf):
        p[k] /= S
    for i in range(L):
        t = 0.0
        g = 0.0
        for k in range(Kf):
            t += P[i, k] * p[k]
            if k != yc:
                g += (P[i, k] - P[i, yc]) * p[k]
        Pp[i] = t
        gr[i] = g
    return zmax + math.log(S) - z[yc]


@njit(cache=True, error_model="numpy", nogil=True)
def _ce_system(Vi, P, p, Pp, A, q):  # pragma: no cover - compiled
    """The lower triangle of ``A = V^{-1} + H`` with the reduced Hessian
    ``H = P (diag p - p p^T) P^T``, all that :func:`_cholesky` reads (the upper triangle is
    not written).  ``q`` (Kf) is scratch: row ``i`` of ``P diag p``, each product
    ``P_ik p_k`` formed once per row instead of once per entry (the same roundings)."""
    L, Kf = P.shape
    for i in range(L):
        for k in range(Kf):
            q[k] = P[i, k] * p[k]
        for j in range(i + 1):
            t = Vi[i, j] - Pp[i] * Pp[j]
            for k in range(Kf):
                t += q[k] * P[j, k]
            A[i, j] = t


@njit(cache=True, error_model="numpy", nogil=True)
def _ce_system_hessian(Vi, P, p, Pp, A, H, q):  # pragma: no cover - compiled
    """:func:`_ce_system` (the lower triangle of ``A``) and the whole reduced Hessian
    ``H = P (diag p - p p^T) P^T`` in one pass over the products ``(P_ik p_k) P_jk``: ``A``
    rounded as :func:`_ce_system` rounds it, ``H_ij`` as the sum ``-Pp_i Pp_j + sum_k
    (P_ik p_k) P_jk`` in the order of ``k`` (the Stein term's ``B``, :func:`ce_channel`)."""
    L, Kf = P.shape
    for i in range(L):
        for k in range(Kf):
            q[k] = P[i, k] * p[k]
        for j in range(L):
            pp = Pp[i] * Pp[j]
            th = -pp
            if j <= i:
                ta = Vi[i, j] - pp
                for k in range(Kf):
                    r = q[k] * P[j, k]
                    ta += r
                    th += r
                A[i, j] = ta
            else:
                for k in range(Kf):
                    th += q[k] * P[j, k]
            H[i, j] = th


@njit(cache=True, error_model="numpy", nogil=True)
def _scaled_residual(u, om, Vc, gr):  # pragma: no cover - compiled
    """``max_i |u - omega + V grad|_i``, the convergence test of the numpy prox."""
    L = u.shape[0]
    res = 0.0
    for i in range(L):
        t = u[i] - om[i]
        for j in range(L):
            t += Vc[i, j] * gr[j]
        if abs(t) > res:
            res = abs(t)
    return res


@njit(cache=True, error_model="numpy", nogil=True)
def _ce_curvature(p):  # pragma: no cover - compiled
    """``2 (1 - max_k p_k)`` (as the sum of the other probabilities): a bound on the
    max-norm of the softmax Hessian ``diag p - p p^T``."""
    kmax = 0
    for k in range(p.shape[0]):
        if p[k] > p[kmax]:
            kmax = k
    q = 0.0
    for k in range(p.shape[0]):
        if k != kmax:
            q += p[k]
    return 2.0 * q


@njit(cache=True, error_model="numpy", nogil=True)
def _node_scale(u, om, vnorm, curv):  # pragma: no cover - compiled
    """``(1 + max_i |omega_i| + max_i |u_i|) (1 + vnorm curv)``: the scale of the
    stationarity residual of one node (:func:`gaussmix.theory.channel.losses.prox_threshold`)."""
    a = 0.0
    b = 0.0
    for i in range(u.shape[0]):
        a = max(a, abs(om[i]))
        b = max(b, abs(u[i]))
    return (1.0 + a + b) * (1.0 + vnorm * curv)


@njit(cache=True, error_model="numpy", nogil=True)
def _max_row_sum(A):  # pragma: no cover - compiled
    """The max-norm ``max_i sum_j |A_ij|`` of a square matrix."""
    out = 0.0
    for i in range(A.shape[0]):
        t = 0.0
        for j in range(A.shape[1]):
            t += abs(A[i, j])
        out = max(out, t)
    return out


@njit(cache=True, error_model="numpy", nogil=True)
def _metric_term(u, om, Vi, vd):  # pragma: no cover - compiled
    """``1/2 (u - omega)^T V^{-1} (u - omega)``; ``vd`` receives ``V^{-1} (u - omega)``."""
    L = u.shape[0]
    q = 0.0
    for i in range(L):
        d = 0.0
        for j in range(L):
            d += Vi[i, j] * (u[j] - om[j])
        vd[i] = d
        q += 0.5 * (u[i] - om[i]) * d
    return q


@njit(cache=True, error_model="numpy", nogil=True)
def ce_channel(ylab, P, omega, V, Vinv, h, w, tol, max_iter):  # pragma: no cover - compiled
    """Cross-entropy channel moments on the complement of ``(1, ..., 1)``.

    Parameters
    ----------
    ylab : (K,) int class of each cluster; P : (L, Kf) orthonormal basis of the reduced
    space; omega : (K, N, L); V, Vinv : (K, L, L) metric and its inverse; h : (K, N, L)
    warm start, overwritten; w : (N,) weights; tol : float, relative threshold: a node
    has converged when ``max_i |h - omega + V grad|_i <= tol (1 + max |omega| + max |h|)
    (1 + ||V|| 2 (1 - max p))`` (:func:`_node_scale`); max_iter : int.

    Returns
    -------
    Ef (K, L), Eff (K, L, L), Edf (K, L, L), Eloss (K,), Eenv (K,), status : int
        0, or 1 at the first node whose proximal solve failed (the moments then partial,
        ``h`` written up to that node: the evaluation is lost, the channel raises).

    Notes
    -----
    Newton on ``phi(u) = 1/2 (u - omega)^T V^{-1} (u - omega) + loss(u)`` (strictly convex)
    with Armijo backtracking; ``Edf = E[(I + H V)^{-1} H] = E[V^{-1} - V^{-1} A^{-1} V^{-1}]``
    with ``A = V^{-1} + H`` (symmetric, valid for singular ``H``), or ``E[H - H A^{-1} H]``
    where ``||V|| ||H|| <`` :data:`STEIN_H_FORM` (small ``V``, where the first form cancels):
    the first summed over the cluster's nodes as ``V^{-1} - V^{-1} E[A^{-1}] V^{-1}``
    (:mod:`~gaussmix.theory.numerics.ce_stein`), the second node by node.
    """
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
    g = np.empty(L)
    s = np.empty(L)
    u_new = np.empty(L)
    A = np.zeros((L, L))  # lower triangle only (_ce_system)
    C = np.empty((L, L))
    X = np.empty((L, L))
    Hm = np.empty((L, L))
    T = np.empty((L, L))
    S = np.empty((L, L))
    O = _stein.packed_outer(P)  # (P diag(p) P^T as a sum of rows: ce_stein)
    qpack = np.empty(O.shape[1])
    dC = np.empty(L)
    e = np.empty(L)
    for c in range(K):
        yc = ylab[c]
        Vi = Vinv[c]
        Vc = V[c]
        vnorm = _max_row_sum(Vc)
        S[:, :] = 0.0
        wv = 0.0
        for n in range(N):
            u = h[c, n]
            om = omega[c, n]
            lval = _ce_eval(u, P, yc, z, p, Pp, gr)
            ok = False
            for _ in range(max_iter):
                res = _scaled_residual(u, om, Vc, gr)
                if res <= tol * _node_scale(u, om, vnorm, _ce_curvature(p)):
                    ok = True
                    break
                # phi, its gradient g = grad + V^{-1} (u - omega), the system (V^{-1} + H) s = g
                phi = lval + _metric_term(u, om, Vi, g)
                for i in range(L):
                    g[i] += gr[i]
                _stein.newton_system(Vi, O, p, Pp, A, qpack)
                if not _stein.cholesky_reciprocal(A, C, dC):
                    break
                _stein.solve_reciprocal(C, dC, g, s)
                if res <= 1e-4:
                    # close to the minimum (quadratic convergence region of Newton's
                    # method): the full step, no line search
                    for i in range(L):
                        u[i] -= s[i]
                    lval = _ce_eval(u, P, yc, z, p, Pp, gr)
                    continue
                slope = 0.0
                for i in range(L):
                    slope += g[i] * s[i]
                t_step = 1.0
                accepted = False
                for _ls in range(60):
                    for i in range(L):
                        u_new[i] = u[i] - t_step * s[i]
                    lnew = _ce_eval(u_new, P, yc, z, p, Pp, gr)
                    phin = lnew + _metric_term(u_new, om, Vi, e)
                    # Armijo on phi, or (near the minimum, where phi is flat to rounding)
                    # a decrease of the scaled residual
                    if phin <= phi - 1e-4 * t_step * slope or t_step < 1e-12:
                        accepted = True
                        break
                    if abs(phin - phi) <= 1e-13 * (1.0 + abs(phi)):
                        rnew = _scaled_residual(u_new, om, Vc, gr)
                        if rnew <= (1.0 - 1e-4 * t_step) * res:
                            accepted = True
                            break
                    t_step *= 0.5
                for i in range(L):
                    u[i] = u_new[i]
                lval = lnew
                if not accepted:
                    break
            if not ok:  # (the evaluation is lost: the channel raises)
                return Ef, Eff, Edf, Eloss, Eenv, 1
            # contributions at the proximal point (p, Pp, gr are those of u)
            hnorm = _stein.hessian_system_lower(Vi, O, p, Pp, A, Hm, qpack)
            if not _stein.cholesky_reciprocal(A, C, dC):
                return Ef, Eff, Edf, Eloss, Eenv, 1
            _stein.triangular_inverse(C, dC, T)
            wn = w[n]
            # Edf = B - B A^{-1} B with B = H where ||V|| ||H|| is small, else B = V^{-1}:
            # the cluster's sum of A^{-1}, multiplied by V^{-1} once (ce_stein)
            if vnorm * hnorm < STEIN_H_FORM:
                _stein.add_h_form(T, Hm, X, wn, Edf[c])
            else:
                _stein.add_inverse(T, wn, S)
                wv += wn
            quad = 0.0
            for i in range(L):
                fi = -gr[i]
                Ef[c, i] += wn * fi
                t = 0.0
                for j in range(i):
                    fj = -gr[j]
                    Eff[c, i, j] += wn * fi * fj
                    t += Vc[i, j] * fj
                Eff[c, i, i] += wn * fi * fi
                quad += fi * (2.0 * t + Vc[i, i] * fi)
            Eloss[c] += wn * lval
            Eenv[c] += wn * (0.5 * quad + lval)
        _stein.close_cluster(Vi, S, wv, X, Edf[c], Eff[c])
    return Ef, Eff, Edf, Eloss, Eenv, 0


@njit(cache=True, error_model="numpy", nogil=True)
def _ce_ray_point(s, u, cu, P, yc, V, m, Linv, z, dz, p, w4):  # pragma: no cover - compiled
    """Whitened image ``z = L^{-1}(h + V grad(h) - m)`` of ``h = s u`` and ``dz/ds``.

    ``cu = P^T u`` (the logits are ``s cu``); ``p`` (Kf) and ``w4`` (4, L) are scratch.
    With ``Pp = P p``: ``grad = Pp - P e_y`` and ``H u = P (p * cu) - Pp (p . cu)``.
    """
    L, Kf = P.shape
    zmax = -math.inf
    for k in range(Kf):
        if s * cu[k] > zmax:
            zmax = s * cu[k]
    S = 0.0
    pc = 0.0
    for k in range(Kf):
        p[k] = math.exp(s * cu[k] - zmax)
        S += p[k]
    for k in range(Kf):
        p[k] /= S
        pc += p[k] * cu[k]
    gr = w4[0]
    Hu = w4[1]
    for i in range(L):
        a = 0.0
        b = 0.0
        for k in range(Kf):
            a += P[i, k] * p[k]
            b += P[i, k] * p[k] * cu[k]
        gr[i] = a - P[i, yc]
        Hu[i] = b - a * pc
    om = w4[2]
    dom = w4[3]
    for i in range(L):
        t = s * u[i] - m[i]
        d = u[i]
        for j in range(L):
            t += V[i, j] * gr[j]
            d += V[i, j] * Hu[j]
        om[i] = t
        dom[i] = d
    for i in range(L):
        t = 0.0
        d = 0.0
        for j in range(L):
            t += Linv[i, j] * om[j]
            d += Linv[i, j] * dom[j]
        z[i] = t
        dz[i] = d


@njit(cache=True, error_model="numpy", nogil=True)
def ce_ray_flux(u, P, yc, V, m, Linv, s1, xa, wa, xb, wb):  # pragma: no cover - compiled
    """Flux of ``F(z) = z (1 - exp(-|z|^2/2)) / (2 pi |z|^2)`` through the curved part
    (``0 <= s <= s1``) of the image of the ray ``h = s u`` (two effective outputs).

    Used by :func:`gaussmix.theory.solve.observables._wedge_probability`.  The ray is split into
    panels
    of equal increments of ``|dz| / (|z| + 0.05)`` (from a scan of ``WEDGE_SCAN`` points
    ``s = s1 (i / n)^2``, dense near the apex), ``WEDGE_PANEL`` per panel, with at least
    ``WEDGE_MIN_PANELS`` panels.  Rule ``a`` (Gauss-Legendre nodes ``xa, wa`` on
    ``[-1, 1]``, 10 nodes) and rule ``b`` (``xb, wb``, 6 nodes) share the panels; both
    fluxes are returned (their difference estimates the error of the lower-order rule),
    with the end point ``z(s1)``.
    """
    n0 = WEDGE_SCAN
    Kf = P.shape[1]
    w4 = np.empty((4, 2))
    pl = np.empty(Kf)
    cu = np.zeros(Kf)
    for k in range(Kf):
        for i in range(2):
            cu[k] += P[i, k] * u[i]
    z = np.empty(2)
    dz = np.empty(2)
    s0 = np.empty(n0)
    mu = np.empty(n0)
    zprev = np.empty(2)
    for i in range(n0):
        s0[i] = s1 * (i / (n0 - 1)) ** 2
        _ce_ray_point(s0[i], u, cu, P, yc, V, m, Linv, z, dz, pl, w4)
        if i == 0:
            mu[0] = 0.0
        else:
            seg = math.hypot(z[0] - zprev[0], z[1] - zprev[1])
            rmin = min(math.hypot(z[0], z[1]), math.hypot(zprev[0], zprev[1]))
            mu[i] = mu[i - 1] + seg / (rmin + 0.05)
        zprev[0] = z[0]
        zprev[1] = z[1]
    zend = zprev.copy()
    out = np.empty(2)
    for r in range(2):
        per_panel = WEDGE_PANEL
        x = xa if r == 0 else xb
        wq = wa if r == 0 else wb
        n_pan = int(math.ceil(mu[n0 - 1] / per_panel))
        n_pan = min(max(n_pan, WEDGE_MIN_PANELS), 4000)
        edges = np.interp(np.linspace(0.0, mu[n0 - 1], n_pan + 1), mu, s0)
        total = 0.0
        for k in range(n_pan):
            a = edges[k]
            e = edges[k + 1]
            if e <= a:
                continue
            for q in range(x.shape[0]):
                s = a + (e - a) * (x[q] + 1.0) / 2.0
                ws = (e - a) / 2.0 * wq[q]
                _ce_ray_point(s, u, cu, P, yc, V, m, Linv, z, dz, pl, w4)
                r2 = z[0] * z[0] + z[1] * z[1]
                if r2 < 1e-8:
                    G = 1.0 / (4.0 * math.pi)
                else:
                    G = -math.expm1(-0.5 * r2) / (2.0 * math.pi * r2)
                total += ws * G * (z[0] * dz[1] - z[1] * dz[0])
        out[r] = total
    return out, zend


# ------------------------------------------------------------------ bivariate normal
@njit(cache=True, error_model="numpy", nogil=True)
def _bvnu_one(h, k, r, x, w, x6, w6, x12, w12):  # pragma: no cover - compiled
    """``P[X > h, Y > k]``, standard bivariate normal with correlation ``r`` (finite h, k):
    A. Genz's ``bvnu`` (Drezner & Wesolowsky 1989 with Genz's double-precision
    modifications), Gauss-Legendre nodes and weights on ``[-1, 1]``: as Genz's, the
    6-point rule ``x6, w6`` for ``|r| < 0.3``, the 12-point ``x12, w12`` for
    ``|r| < 0.75``, ``x, w`` (20 points) beyond (tested against the 20-point rule
    everywhere: within a few ``1e-16``)."""
    r = min(max(r, -1.0), 1.0)
    if h < k:  # symmetric in (h, k): one canonical order makes the result exactly so
        h, k = k, h
    hk = h * k
    n = x.shape[0]
    if abs(r) < 0.925:
        if abs(r) < 0.3:
            xr, wr = x6, w6
        elif abs(r) < 0.75:
            xr, wr = x12, w12
        else:
            xr, wr = x, w
        asr = math.asin(r)
        hs = (h * h + k * k) / 2.0
        s = 0.0
        for i in range(xr.shape[0]):
            sn = math.sin(asr * (1.0 + xr[i]) / 2.0)
            s += wr[i] * math.exp((sn * hk - hs) / (1.0 - sn * sn))
        out = asr / (4.0 * math.pi) * s + ndtr_scalar(-h) * ndtr_scalar(-k)
        return min(max(out, 0.0), 1.0)
    kb = k
    hkb = hk
    if r < 0.0:
        kb = -k
        hkb = -hk
    big = 0.0
    if abs(r) < 1.0:
        as_ = (1.0 - r) * (1.0 + r)
        a = math.sqrt(as_)
        bs = (h - kb) ** 2
        c = (4.0 - hkb) / 8.0
        d = (12.0 - hkb) / 16.0
        asr_b = -(bs / as_ + hkb) / 2.0
        t1 = 0.0
        if asr_b > -100.0:
            t1 = (
                a
                * math.exp(asr_b)
                * (1.0 - c * (bs - as_) * (1.0 - d * bs / 5.0) / 3.0 + c * d * as_ * as_ / 5.0)
            )
        b = math.sqrt(bs)
        t2 = 0.0
        if hkb > -100.0:
            sp = math.sqrt(2.0 * math.pi) * ndtr_scalar(-b / a)
            t2 = math.exp(-hkb / 2.0) * sp * b * (1.0 - c * bs * (1.0 - d * bs / 5.0) / 3.0)
        ah = a / 2.0
        t3 = 0.0
        for i in range(n):
            xs = (ah * (1.0 + x[i])) ** 2
            rsq = math.sqrt(1.0 - xs)
            asr_n = -(bs / xs + hkb) / 2.0
            if asr_n > -100.0:
                spn = 1.0 + c * xs * (1.0 + d * xs)
                ep = asr_n - hkb * (1.0 - rsq) / (2.0 * (1.0 + rsq))
                t3 += w[i] * (math.exp(ep) / rsq - math.exp(asr_n) * spn)
        t3 *= ah
        big = -(t1 - t2 + t3) / (2.0 * math.pi)
    if r > 0.0:
        out = big + ndtr_scalar(-max(h, kb))
    else:
        # P[h < X <= kb], accurate in both tails
        if kb > h:
            p = ndtr_scalar(-h) - ndtr_scalar(-kb) if h > 0.0 else ndtr_scalar(kb) - ndtr_scalar(h)
            p = max(p, 0.0)
        else:
            p = 0.0
        out = -big + p
    return min(max(out, 0.0), 1.0)


@njit(cache=True, error_model="numpy", nogil=True)
def bvnu(h, k, r, x, w, x6, w6, x12, w12):  # pragma: no cover - compiled
    """:func:`_bvnu_one` over flat arrays ``h, k, r`` of one length."""
    out = np.empty(h.shape[0])
    for i in range(h.shape[0]):
        out[i] = _bvnu_one(h[i], k[i], r[i], x, w, x6, w6, x12, w12)
    return out


# ------------------------------------------------- cross-entropy, three classes (K = 3)
@njit(cache=True, error_model="numpy", nogil=True)
def _ce3_eval(u0, u1, P, yc):  # pragma: no cover - compiled
    """:func:`_ce_eval` for two reduced outputs and three classes, in scalars: returns the
    loss, the softmax ``p``, ``Pp = P p`` and the gradient ``P (p - e_y)`` (as the sum over
    the other classes, see :func:`_ce_eval`)."""
    z0 = u0 * P[0, 0] + u1 * P[1, 0]
    z1 = u0 * P[0, 1] + u1 * P[1, 1]
    z2 = u0 * P[0, 2] + u1 * P[1, 2]
    zm = max(z0, max(z1, z2))
    e0 = math.exp(z0 - zm)
    e1 = math.exp(z1 - zm)
    e2 = math.exp(z2 - zm)
    S = e0 + e1 + e2
    p0 = e0 / S
    p1 = e1 / S
    p2 = e2 / S
    zy = z0 if yc == 0 else (z1 if yc == 1 else z2)
    q0 = P[0, 0] * p0 + P[0, 1] * p1 + P[0, 2] * p2
    q1 = P[1, 0] * p0 + P[1, 1] * p1 + P[1, 2] * p2
    y0 = P[0, yc]
    y1 = P[1, yc]
    g0 = 0.0
    g1 = 0.0
    if yc != 0:
        g0 += (P[0, 0] - y0) * p0
        g1 += (P[1, 0] - y1) * p0
    if yc != 1:
        g0 += (P[0, 1] - y0) * p1
        g1 += (P[1, 1] - y1) * p1
    if yc != 2:
        g0 += (P[0, 2] - y0) * p2
        g1 += (P[1, 2] - y1) * p2
    return zm + math.log(S) - zy, p0, p1, p2, q0, q1, g0, g1


@njit(cache=True, error_model="numpy", nogil=True)
def _ce3_system(i00, i01, i11, a00k, a01k, a11k, p0, p1, p2, q0, q1):  # pragma: no cover
    """:func:`_ce_system` for K = 3: the entries of ``A = V^{-1} + P diag(p) P^T - q q^T``
    (``a..k``: the entries of the outer products ``P_k P_k^T``, ``q = P p``)."""
    a00 = i00 + a00k[0] * p0 + a00k[1] * p1 + a00k[2] * p2 - q0 * q0
    a01 = i01 + a01k[0] * p0 + a01k[1] * p1 + a01k[2] * p2 - q0 * q1
    a11 = i11 + a11k[0] * p0 + a11k[1] * p1 + a11k[2] * p2 - q1 * q1
    return a00, a01, a11


@njit(cache=True, error_model="numpy", nogil=True)
def ce3_channel(ylab, P, omega, V, Vinv, h, w, tol, max_iter):  # pragma: no cover - compiled
    """:func:`ce_channel` for K = 3 classes (two reduced outputs), in scalar arithmetic.

    Same arguments, results and method (Newton on the proximal objective with Armijo
    backtracking, full steps once the residual is below ``1e-4``); the 2 x 2 systems are
    solved in closed form.  Tested against :func:`ce_channel` and the numpy path.

    One difference: the kernel stops at the first node whose proximal solve fails and
    returns the status 1 (the moments then partial, ``h`` written up to that node).  A
    failed node loses the whole evaluation (its caller raises), and the nodes after it
    would be work for nothing: at a wild iterate of the iteration (``V ~ 1e13``, K = 3
    cross-entropy lasso at lam = 3e-3) 7146 of 25608 nodes failed, each after the 2000
    Newton iterations of its stagnating line search, and that one evaluation took 38 s.
    """
    K, N, _ = omega.shape
    Ef = np.zeros((K, 2))
    Eff = np.zeros((K, 2, 2))
    Edf = np.zeros((K, 2, 2))
    Eloss = np.zeros(K)
    Eenv = np.zeros(K)
    n_failed = 0
    for c in range(K):
        yc = ylab[c]
        v00, v01, v11 = V[c, 0, 0], V[c, 0, 1], V[c, 1, 1]
        vnorm = max(abs(v00) + abs(v01), abs(v01) + abs(v11))
        i00, i01, i11 = Vinv[c, 0, 0], Vinv[c, 0, 1], Vinv[c, 1, 1]
        # P diag(p) P^T = sum_k p_k P_k P_k^T: the three outer products
        a00k = (P[0, 0] * P[0, 0], P[0, 1] * P[0, 1], P[0, 2] * P[0, 2])
        a01k = (P[0, 0] * P[1, 0], P[0, 1] * P[1, 1], P[0, 2] * P[1, 2])
        a11k = (P[1, 0] * P[1, 0], P[1, 1] * P[1, 1], P[1, 2] * P[1, 2])
        for n in range(N):
            u0 = h[c, n, 0]
            u1 = h[c, n, 1]
            o0 = omega[c, n, 0]
            o1 = omega[c, n, 1]
            lval, p0, p1, p2, q0, q1, g0, g1 = _ce3_eval(u0, u1, P, yc)
            ok = False
            for _ in range(max_iter):
                d0 = u0 - o0
                d1 = u1 - o1
                r0 = d0 + v00 * g0 + v01 * g1
                r1 = d1 + v01 * g0 + v11 * g1
                res = max(abs(r0), abs(r1))
                size = 1.0 + max(abs(o0), abs(o1)) + max(abs(u0), abs(u1))
                if p0 >= p1 and p0 >= p2:
                    curv = 2.0 * (p1 + p2)
                elif p1 >= p2:
                    curv = 2.0 * (p0 + p2)
                else:
                    curv = 2.0 * (p0 + p1)
                if res <= tol * size * (1.0 + vnorm * curv):
                    ok = True
                    break
                w0 = i00 * d0 + i01 * d1
                w1 = i01 * d0 + i11 * d1
                b0 = g0 + w0
                b1 = g1 + w1
                a00, a01, a11 = _ce3_system(i00, i01, i11, a00k, a01k, a11k, p0, p1, p2, q0, q1)
                det = a00 * a11 - a01 * a01
                if not det > 0.0 or not a00 > 0.0:
                    break
                s0 = (a11 * b0 - a01 * b1) / det
                s1 = (a00 * b1 - a01 * b0) / det
                if res <= 1e-4:
                    u0 -= s0
                    u1 -= s1
                    lval, p0, p1, p2, q0, q1, g0, g1 = _ce3_eval(u0, u1, P, yc)
                    continue
                phi = lval + 0.5 * (d0 * w0 + d1 * w1)
                slope = b0 * s0 + b1 * s1
                t_step = 1.0
                accepted = False
                for _ls in range(60):
                    n0 = u0 - t_step * s0
                    n1 = u1 - t_step * s1
                    ln, pn0, pn1, pn2, qn0, qn1, gn0, gn1 = _ce3_eval(n0, n1, P, yc)
                    e0 = n0 - o0
                    e1 = n1 - o1
                    phin = ln + 0.5 * (e0 * (i00 * e0 + i01 * e1) + e1 * (i01 * e0 + i11 * e1))
                    if phin <= phi - 1e-4 * t_step * slope or t_step < 1e-12:
                        accepted = True
                        break
                    if abs(phin - phi) <= 1e-13 * (1.0 + abs(phi)):
                        rn0 = e0 + v00 * gn0 + v01 * gn1
                        rn1 = e1 + v01 * gn0 + v11 * gn1
                        if max(abs(rn0), abs(rn1)) <= (1.0 - 1e-4 * t_step) * res:
                            accepted = True
                            break
                    t_step *= 0.5
                u0, u1 = n0, n1
                lval, p0, p1, p2, q0, q1 = ln, pn0, pn1, pn2, qn0, qn1
                g0, g1 = gn0, gn1
                if not accepted:
                    break
            h[c, n, 0] = u0
            h[c, n, 1] = u1
            if not ok:  # the evaluation is lost: stop here (see the docstring)
                return Ef, Eff, Edf, Eloss, Eenv, 1
            # contributions at the proximal point: f = -grad, Edf = B - B A^-1 B with
            # B = V^-1, or B = H where ||V|| ||H|| is small (ce_channel)
            a00, a01, a11 = _ce3_system(i00, i01, i11, a00k, a01k, a11k, p0, p1, p2, q0, q1)
            det = a00 * a11 - a01 * a01
            if not det > 0.0 or not a00 > 0.0:
                return Ef, Eff, Edf, Eloss, Eenv, 1
            c00, c01, c11 = _ce3_system(0.0, 0.0, 0.0, a00k, a01k, a11k, p0, p1, p2, q0, q1)
            if vnorm * max(abs(c00) + abs(c01), abs(c01) + abs(c11)) >= STEIN_H_FORM:
                c00, c01, c11 = i00, i01, i11
            b00 = a11 / det  # A^-1
            b01 = -a01 / det
            b11 = a00 / det
            # X = A^-1 B, then B X
            x00 = b00 * c00 + b01 * c01
            x01 = b00 * c01 + b01 * c11
            x10 = b01 * c00 + b11 * c01
            x11 = b01 * c01 + b11 * c11
            m00 = c00 * x00 + c01 * x10
            m01 = c00 * x01 + c01 * x11
            m10 = c01 * x00 + c11 * x10
            m11 = c01 * x01 + c11 * x11
            f0 = -g0
            f1 = -g1
            wn = w[n]
            Ef[c, 0] += wn * f0
            Ef[c, 1] += wn * f1
            Eff[c, 0, 0] += wn * f0 * f0
            Eff[c, 0, 1] += wn * f0 * f1
            Eff[c, 1, 0] += wn * f1 * f0
            Eff[c, 1, 1] += wn * f1 * f1
            Edf[c, 0, 0] += wn * (c00 - m00)
            Edf[c, 0, 1] += wn * (c01 - m01)
            Edf[c, 1, 0] += wn * (c01 - m10)
            Edf[c, 1, 1] += wn * (c11 - m11)
            quad = f0 * (v00 * f0 + v01 * f1) + f1 * (v01 * f0 + v11 * f1)
            Eloss[c] += wn * lval
            Eenv[c] += wn * (0.5 * quad + lval)
    return Ef, Eff, Edf, Eloss, Eenv, n_failed


@njit(cache=True, error_model="numpy", nogil=True)
def bvnu_rows(h, k, r, x, w, x6, w6, x12, w12):  # pragma: no cover - compiled
    """:func:`_bvnu_one` of ``h[b, p], k[b, p]`` (2-d arrays) with one correlation ``r[b]``
    per row (the last pair of a nested orthant rule: one correlation per problem), the
    same operations and numbers: for ``|r| < 0.925`` the rule's ``sin`` terms are made once
    per row instead of once per point."""
    B, n = h.shape
    out = np.empty((B, n))
    sn = np.empty(x.shape[0])
    den = np.empty(x.shape[0])
    for b in range(B):
        rb = min(max(r[b], -1.0), 1.0)
        if not abs(rb) < 0.925:
            for p in range(n):
                out[b, p] = _bvnu_one(h[b, p], k[b, p], rb, x, w, x6, w6, x12, w12)
            continue
        if abs(rb) < 0.3:
            xr, wr = x6, w6
        elif abs(rb) < 0.75:
            xr, wr = x12, w12
        else:
            xr, wr = x, w
        m = xr.shape[0]
        asr = math.asin(rb)
        for i in range(m):
            sn[i] = math.sin(asr * (1.0 + xr[i]) / 2.0)
            den[i] = 1.0 - sn[i] * sn[i]
        for p in range(n):
            hp = h[b, p]
            kp = k[b, p]
            if hp < kp:
                hp, kp = kp, hp
            hk = hp * kp
            hs = (hp * hp + kp * kp) / 2.0
            s = 0.0
            for i in range(m):
                s += wr[i] * math.exp((sn[i] * hk - hs) / den[i])
            o = asr / (4.0 * math.pi) * s + ndtr_scalar(-hp) * ndtr_scalar(-kp)
            out[b, p] = min(max(o, 0.0), 1.0)
    return out


#: the cross-entropy kernels' node primitives, shared with the kernel of small metrics
#: (:mod:`gaussmix.theory.numerics.ce_small_metric`)
ce_eval, ce_system_hessian, scaled_residual = _ce_eval, _ce_system_hessian, _scaled_residual
ce_curvature, node_scale, max_row_sum = _ce_curvature, _node_scale, _max_row_sum
ce3_eval = _ce3_eval
cholesky, chol_solve = _cholesky, _chol_solve
