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

__all__ = ["l1_line_moments"]


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
