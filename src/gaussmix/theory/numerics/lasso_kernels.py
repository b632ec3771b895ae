"""Compiled lasso kernel (numba): the pieces of the multi-output l1 proximal map along
lines, integrated in one pass (Appendix C, the lasso prior with several effective outputs).

:func:`l1_line_moments` is the compiled form of the numpy pieces in
:mod:`gaussmix.theory.prior.lasso`, which stay the reference the tests compare it with.  Like
:mod:`gaussmix.theory.numerics.kernels` (whose normal CDF it uses), it is compiled on first use and
cached on disk; every argument must be a C-contiguous float64 array.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels import ndtr_scalar

__all__ = ["l1_line_moments", "l1_kinks_2d"]


@njit(cache=True, error_model="numpy", nogil=True)
def _partial_moments_one(a, b):  # pragma: no cover - compiled
    """``int_a^b z^k phi(z) dz``, ``k = 0, 1, 2`` (``a``, ``b`` may be infinite)."""
    pa = 0.0
    pb = 0.0
    xa = 0.0
    xb = 0.0
    if math.isfinite(a):
        pa = 0.3989422804014327 * math.exp(-0.5 * a * a)
        xa = a * pa
    if math.isfinite(b):
        pb = 0.3989422804014327 * math.exp(-0.5 * b * b)
        xb = b * pb
    i0 = ndtr_scalar(b) - ndtr_scalar(a)
    return i0, pa - pb, i0 + xa - xb


@njit(cache=True, error_model="numpy", nogil=True)
def l1_line_moments(
    g0, e, off, dirn, atom, lw, pats, usable, Jps, A, lam, flat_tol, ew, eww, ewb, ejd, l1, mass
):  # pragma: no cover - compiled
    """The Gaussian moments of the l1 prox along lines, summed by atom: the compiled form of
    :func:`gaussmix.theory.prior.lasso._region_pieces` followed by
    :func:`gaussmix.theory.prior.lasso._integrate_pieces` (their numpy forms stay the reference,
    tested equal to rounding).

    Line ``n`` (of atom ``j = atom[n]``, outer weight ``lw[n]``) is ``g(z) = g0[n] + z e[n]``
    in the full output space and ``B(z) - m = off[n] + z dirn[n]`` in the effective one.  For
    every sign pattern ``s = pats[p]`` whose ``A_SS`` is usable on the atom
    (``usable[p, j]``), with ``Jps[p, j]`` its Jacobian: ``w = c + d z``,
    ``c = J (g0 - lam s)``, ``d = J e``; the region's constraints ``alpha + beta z >= 0``
    (``s_i w_i >= 0`` on the support, ``lam -+ (g - A w)_i >= 0`` off it), those with
    ``|beta|`` within ``flat_tol`` of their terms' size constant along the line (failing if
    ``alpha`` is below ``-flat_tol`` of its size); the piece is the interval they leave, and
    its integrals are added, times ``lw[n]``, to ``ew`` (J, L) ``E[w]``, ``eww`` ``E[w w^T]``,
    ``ewb`` (J, L, L') ``E[w (B - m)^T]``, ``ejd`` the direct ``E[dw/dg]``, ``l1``
    ``E||w||_1``; ``mass[n]`` gets each piece's Gaussian mass (the tiling check).
    """
    N, L = g0.shape
    Lp = off.shape[1]
    n_pat = pats.shape[0]
    c = np.empty(L)
    d = np.empty(L)
    wr = np.empty(L)
    cc = np.empty(L)
    for n in range(N):
        j = atom[n]
        wt = lw[n]
        gsize = lam
        esize = 0.0
        gmax = 0.0
        for i in range(L):
            gmax = max(gmax, abs(g0[n, i]))
            esize = max(esize, abs(e[n, i]))
        gsize = gmax + lam
        for p in range(n_pat):
            if not usable[p, j]:
                continue
            for a in range(L):
                sc = 0.0
                sd = 0.0
                for b in range(L):
                    sc += Jps[p, j, a, b] * (g0[n, b] - lam * pats[p, b])
                    sd += Jps[p, j, a, b] * e[n, b]
                c[a] = sc
                d[a] = sd
            lo = -np.inf
            hi = np.inf
            fail = False
            for i in range(L):
                si = pats[p, i]
                if si != 0.0:
                    al = si * c[i]
                    be = si * d[i]
                    asz = abs(c[i]) + gsize
                    bsz = abs(d[i]) + esize
                    if abs(be) <= flat_tol * bsz:
                        if al < -flat_tol * asz:
                            fail = True
                    elif be > 0.0:
                        lo = max(lo, -al / be)
                    else:
                        hi = min(hi, -al / be)
                else:
                    ac = 0.0
                    ad = 0.0
                    cs = 0.0
                    ds = 0.0
                    for b in range(L):
                        ac += A[j, i, b] * c[b]
                        ad += A[j, i, b] * d[b]
                        cs += abs(A[j, i, b]) * abs(c[b])
                        ds += abs(A[j, i, b]) * abs(d[b])
                    r0 = g0[n, i] - ac
                    r1 = e[n, i] - ad
                    asz = cs + gsize
                    bsz = ds + esize
                    for sign in (-1.0, 1.0):  # lam - r0 - r1 z >= 0, lam + r0 + r1 z >= 0
                        al = lam + sign * r0
                        be = sign * r1
                        if abs(be) <= flat_tol * bsz:
                            if al < -flat_tol * asz:
                                fail = True
                        elif be > 0.0:
                            lo = max(lo, -al / be)
                        else:
                            hi = min(hi, -al / be)
            if fail or not lo < hi:
                continue
            margin = min(0.5, 0.25 * (hi - lo))
            zr = min(max(0.0, lo + margin), hi - margin)
            for a in range(L):
                wr[a] = c[a] + zr * d[a]
                cc[a] = wr[a] - zr * d[a]
            i0, i1, i2 = _partial_moments_one(lo, hi)
            mass[n] += i0
            s_l1 = 0.0
            for a in range(L):
                m1 = cc[a] * i0 + d[a] * i1
                ew[j, a] += wt * m1
                if wr[a] > 0.0:
                    s_l1 += m1
                elif wr[a] < 0.0:
                    s_l1 -= m1
                for b in range(L):
                    eww[j, a, b] += wt * (
                        cc[a] * cc[b] * i0 + (cc[a] * d[b] + d[a] * cc[b]) * i1 + d[a] * d[b] * i2
                    )
                    ejd[j, a, b] += wt * Jps[p, j, a, b] * i0
                for b in range(Lp):
                    ewb[j, a, b] += wt * (
                        cc[a] * off[n, b] * i0
                        + (cc[a] * dirn[n, b] + d[a] * off[n, b]) * i1
                        + d[a] * dirn[n, b] * i2
                    )
            l1[j] += wt * s_l1


@njit(cache=True, error_model="numpy", nogil=True)
def l1_kinks_2d(g0, g1, e, pats, usable, Jps, A, lam, rtol, out, count):  # pragma: no cover
    """The kinks across lines of the two-effective-output lasso, per atom: the compiled form
    of :func:`gaussmix.theory.prior.lasso._kinks_across_lines` (its numpy form stays the
    reference, tested equal).

    On atom ``j`` the lines are ``g(x, z) = g0[j] + x (g1[j] - g0[j]) + z e[j]`` in the full
    output space.  For every sign pattern ``s = pats[p]`` usable on the atom, with ``Jps[p,
    j]`` its Jacobian, each constraint of the pattern's region (``s_i w_i >= 0`` on the
    support, ``lam -+ (g - A w)_i >= 0`` off it) is affine, ``a0 + ax x + az z >= 0``; the
    abscissae written to ``out[j, :count[j]]`` are those of the vertices (two constraints
    zero, ``|det| > rtol size^2``, the others holding within ``rtol`` of their size times
    ``1 + |x| + |z|``) and of the constraints constant along the lines (``|az| <= rtol
    size``) that vanish at one ``x``.  ``out`` must hold ``n_pat (4 L^2 + 2 L)`` per atom.
    """
    J, L = g0.shape
    n_pat = pats.shape[0]
    m_max = 2 * L
    c0 = np.empty(L)
    c1 = np.empty(L)
    d = np.empty(L)
    a0 = np.empty(m_max)
    ax = np.empty(m_max)
    az = np.empty(m_max)
    size = np.empty(m_max)
    for j in range(J):
        k_out = 0
        for p in range(n_pat):
            if not usable[p, j]:
                continue
            for a in range(L):
                s0 = 0.0
                s1 = 0.0
                sd = 0.0
                for b in range(L):
                    s0 += Jps[p, j, a, b] * (g0[j, b] - lam * pats[p, b])
                    s1 += Jps[p, j, a, b] * (g1[j, b] - lam * pats[p, b])
                    sd += Jps[p, j, a, b] * e[j, b]
                c0[a] = s0
                c1[a] = s1
                d[a] = sd
            m = 0
            for i in range(L):  # the support's constraints first, as in the numpy form
                si = pats[p, i]
                if si != 0.0:
                    a0[m] = si * c0[i]
                    ax[m] = si * (c1[i] - c0[i])
                    az[m] = si * d[i]
                    m += 1
            n_on = m
            n_off = L - n_on
            for sign in (-1.0, 1.0):  # lam - r >= 0, then lam + r >= 0
                for i in range(L):
                    if pats[p, i] != 0.0:
                        continue
                    r00 = g0[j, i]
                    r01 = g1[j, i]
                    r1 = e[j, i]
                    for b in range(L):
                        r00 -= A[j, i, b] * c0[b]
                        r01 -= A[j, i, b] * c1[b]
                        r1 -= A[j, i, b] * d[b]
                    a0[m] = lam + sign * r00
                    ax[m] = sign * (r01 - r00)
                    az[m] = sign * r1
                    m += 1
            m = n_on + 2 * n_off
            for k in range(m):
                size[k] = abs(a0[k]) + abs(ax[k]) + abs(az[k]) + lam
            for k in range(m):
                # a constraint constant along the lines: its zero is a line x = const
                if abs(az[k]) <= rtol * size[k] and abs(ax[k]) > rtol * size[k]:
                    out[j, k_out] = -a0[k] / ax[k]
                    k_out += 1
                for q in range(m):
                    det = ax[k] * az[q] - az[k] * ax[q]
                    if not abs(det) > rtol * size[k] * size[k]:
                        continue
                    xv = (az[k] * a0[q] - a0[k] * az[q]) / det
                    zv = (ax[q] * a0[k] - ax[k] * a0[q]) / det
                    if not (math.isfinite(xv) and math.isfinite(zv)):
                        continue
                    sc = 1.0 + abs(xv) + abs(zv)
                    ok = True
                    for t in range(m):
                        if a0[t] + ax[t] * xv + az[t] * zv < -rtol * size[t] * sc:
                            ok = False
                            break
                    if ok:
                        out[j, k_out] = xv
                        k_out += 1
        count[j] = k_out
