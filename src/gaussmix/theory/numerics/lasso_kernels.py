"""Compiled lasso kernel (numba): the pieces of the multi-output l1 proximal map along
lines, integrated in one pass (Appendix C, the lasso prior with several effective outputs).

:func:`l1_line_moments` is the compiled form of the numpy pieces in
:mod:`gaussmix.theory.prior.lasso`, which stay the reference the tests compare it with.  Like
:mod:`gaussmix.theory.numerics.kernels`, it is compiled on first use and cached on disk (its
normal CDF the engine's compiled one, :mod:`gaussmix.theory.numerics.normal_kernels`);
every argument must be a C-contiguous float64 array.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .normal_kernels import ndtr_scalar

__all__ = ["l1_line_moments", "l1_kinks_2d"]


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _constrain(al, be, asz, bsz, flat_tol, lo, hi):
    """One linear constraint ``al + be z >= 0`` on a piece ``[lo, hi]`` (``asz``, ``bsz``:
    the sizes its rounding is measured against): the new ``lo``, ``hi``; whether a constant
    constraint (``|be|`` within rounding of 0) fails; whether it ends the piece at the new
    ``hi``."""
    if abs(be) <= flat_tol * bsz:
        return lo, hi, al < -flat_tol * asz, False
    if be > 0.0:
        return max(lo, -al / be), hi, False, False
    if -al / be < hi:
        return lo, -al / be, False, True
    return lo, hi, False, False


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _pattern_piece(p, j, g0, e, pats, Jps, A, lam, flat_tol, gsize, esize, c, d):
    """The interval ``[lo, hi]`` of sign pattern ``p``'s piece on the line ``g0 + z e``
    (atom ``j``),
    with ``w = c + d z`` written to ``c``, ``d``; ``ok`` False where a constant constraint
    fails or the interval is empty; and the coordinate ``i_hi`` whose constraint ends the
    piece at ``hi`` with the sign ``s_hi`` it takes beyond (-1 where ``hi`` is infinite)."""
    L = g0.shape[0]
    for a in range(L):
        sc = 0.0
        sd = 0.0
        for b in range(L):
            sc += Jps[p, j, a, b] * (g0[b] - lam * pats[p, b])
            sd += Jps[p, j, a, b] * e[b]
        c[a] = sc
        d[a] = sd
    lo = -np.inf
    hi = np.inf
    i_hi = -1
    s_hi = 0.0
    fail = False
    for i in range(L):
        si = pats[p, i]
        if si != 0.0:
            al = si * c[i]
            be = si * d[i]
            lo, hi, bad, ends = _constrain(
                al, be, abs(c[i]) + gsize, abs(d[i]) + esize, flat_tol, lo, hi
            )
            fail = fail or bad
            if ends:
                i_hi = i
                s_hi = 0.0  # w_i reaches zero: it leaves the support
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
            r0 = g0[i] - ac
            r1 = e[i] - ad
            asz = cs + gsize
            bsz = ds + esize
            for sign in (-1.0, 1.0):  # lam - r0 - r1 z >= 0, lam + r0 + r1 z >= 0
                lo, hi, bad, ends = _constrain(
                    lam + sign * r0, sign * r1, asz, bsz, flat_tol, lo, hi
                )
                fail = fail or bad
                if ends:
                    i_hi = i
                    s_hi = -sign  # |r_i| reaches lam: i enters the support with that sign
    return lo, hi, (not fail) and lo < hi, i_hi, s_hi


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _add_line(
    j, wt, s_l1, acc_w, acc_z, acc_ww, off, dirn, line_p, line_m, k, l1, ew, eww, ewb, jmass
):
    """Add one line's moments, weighted by ``wt``, to atom ``j``'s sums: ``E[w]``, ``E[w
    w^T]`` (the line's upper triangle ``acc_ww``, mirrored), ``E[w (B - m)^T]`` (``B - m =
    off + z dirn`` on the line: ``acc_w off^T + acc_z dirn^T``, ``acc_z`` the line's
    ``int w z phi``), ``E||w||_1`` and the Gaussian mass of each of its ``k`` pieces' sign
    patterns ``line_p`` (``jmass``: the direct ``E[dw/dg]`` is their sum times the
    patterns' Jacobians, formed once at the end)."""
    L, Lp = ewb.shape[1], ewb.shape[2]
    l1[j] += wt * s_l1
    for a in range(L):
        ew[j, a] += wt * acc_w[a]
        for b in range(a, L):
            v = wt * acc_ww[a, b]
            eww[j, a, b] += v
            if b != a:
                eww[j, b, a] += v
        for b in range(Lp):
            ewb[j, a, b] += wt * (acc_w[a] * off[b] + acc_z[a] * dirn[b])
    for i in range(k):
        jmass[j, line_p[i]] += wt * line_m[i]


@njit(cache=True, error_model="numpy", nogil=True, inline="always")
def _add_piece(lo, hi, cdf_lo, pdf_lo, c, d, wr, cc, acc_w, acc_z, acc_ww):
    """Add the closed-form integrals of the piece ``w = c + d z`` on ``[lo, hi]`` to the
    line's sums (``int w phi``, ``int w z phi``, the upper triangle of ``int w w^T phi``),
    given ``Phi(lo)`` and ``phi(lo)`` (the previous piece's end, when walking); returns its
    Gaussian mass, its ``E||w||_1`` part, ``Phi(hi)`` and ``phi(hi)``."""
    L = c.shape[0]
    margin = min(0.5, 0.25 * (hi - lo))
    zr = min(max(0.0, lo + margin), hi - margin)
    for a in range(L):
        wr[a] = c[a] + zr * d[a]
        cc[a] = wr[a] - zr * d[a]
    cdf_hi = 1.0
    pdf_hi = 0.0
    if math.isfinite(hi):
        cdf_hi = ndtr_scalar(hi)
        pdf_hi = 0.3989422804014327 * math.exp(-0.5 * hi * hi)
    i0 = cdf_hi - cdf_lo
    i1 = pdf_lo - pdf_hi
    i2 = i0 - pdf_hi * (hi if math.isfinite(hi) else 0.0)
    if math.isfinite(lo):
        i2 += lo * pdf_lo
    s_l1 = 0.0
    for a in range(L):
        m1 = cc[a] * i0 + d[a] * i1
        mz = cc[a] * i1 + d[a] * i2
        acc_w[a] += m1
        acc_z[a] += mz
        if wr[a] > 0.0:
            s_l1 += m1
        elif wr[a] < 0.0:
            s_l1 -= m1
        for b in range(a, L):
            acc_ww[a, b] += cc[b] * m1 + d[b] * mz
    return i0, s_l1, cdf_hi, pdf_hi


@njit(cache=True, error_model="numpy", nogil=True)
def l1_line_moments(
    x,
    atom,
    lw,
    mean,
    R,
    P,
    pats,
    usable,
    Jps,
    A,
    lam,
    flat_tol,
    mass_tol,
    ew,
    eww,
    ewb,
    ejd,
    l1,
    mass,
):  # pragma: no cover - compiled
    """The Gaussian moments of the l1 prox along lines, summed by atom: the compiled form of
    :func:`gaussmix.theory.prior.lasso._region_pieces` followed by
    :func:`gaussmix.theory.prior.lasso._integrate_pieces` (their numpy forms stay the reference,
    tested equal to rounding).

    Line ``n`` (of atom ``j = atom[n]``, outer weight ``lw[n]``, outer coordinates ``x[n]``
    (L' - 1)) is ``B(z) = mean[j] + R[j] (x[n], z)`` in the effective output space (``R[j]``
    (L', L') a factor of the field's covariance): ``B - m = off + z dirn`` with ``off = R[j,
    :, :-1] x[n]``, ``dirn = R[j, :, -1]``, and ``g(z) = P^T B(z) = g0 + z e`` in the full
    one (``P`` (L', L)); these are formed line by line.  For
    a sign pattern ``s = pats[p]`` whose ``A_SS`` is usable on the atom
    (``usable[p, j]``), with ``Jps[p, j]`` its Jacobian: ``w = c + d z``,
    ``c = J (g0 - lam s)``, ``d = J e``; the region's constraints ``alpha + beta z >= 0``
    (``s_i w_i >= 0`` on the support, ``lam -+ (g - A w)_i >= 0`` off it), those with
    ``|beta|`` within ``flat_tol`` of their terms' size constant along the line (failing if
    ``alpha`` is below ``-flat_tol`` of its size); the piece is the interval they leave, and
    its integrals are added, times ``lw[n]``, to ``ew`` (J, L) ``E[w]``, ``eww`` ``E[w w^T]``,
    ``ewb`` (J, L, L') ``E[w (B - m)^T]``, ``ejd`` the direct ``E[dw/dg]``, ``l1``
    ``E||w||_1``; ``mass[n]`` gets each piece's Gaussian mass (the tiling check).  Per piece
    only what varies from piece to piece is summed: ``int w phi``, ``int w z phi`` and the
    upper triangle of ``int w w^T phi``; ``E[w (B - m)^T]`` is formed per line (``off`` and
    ``dirn`` are the line's), and the direct ``E[dw/dg]`` once per call from each atom's
    Gaussian mass of each sign pattern (its Jacobian is constant on the pattern's pieces).

    The pieces are found by walking along the line: from the piece that holds ``z -> -inf``
    (that of the atom's previous line, if it still does), the constraint that ends a piece
    names the next one (a coordinate leaves the support, or enters it with the sign of its
    residual).  Every piece so found is a region of its pattern, so a walk can only miss
    pieces: where it stops early, meets a pattern that is not usable or not in ``pats``, or
    its pieces' masses do not add up to 1 within ``mass_tol``, the line is redone by trying
    every pattern (what the numpy reference does).  Each piece of a walk is integrated from
    where the previous one ended (its start computed from its own constraints must lie within
    ``mass_tol`` of Gaussian mass of that end), so ``Phi`` and ``phi`` at each end are computed
    once.
    """
    N, nx = x.shape
    Lp, L = P.shape
    n_pat = pats.shape[0]
    J = ew.shape[0]
    g0 = np.empty(L)
    e = np.empty(L)
    off = np.empty(Lp)
    dirn = np.empty(Lp)
    c = np.empty(L)
    d = np.empty(L)
    wr = np.empty(L)
    cc = np.empty(L)
    acc_w = np.empty(L)
    acc_z = np.empty(L)
    acc_ww = np.empty((L, L))
    # the sign pattern and Gaussian mass of each piece of a line (a walk stops after n_pat
    # steps), and their sums by atom: the direct E[dw/dg] is formed from them at the end
    line_p = np.empty(n_pat + 2, dtype=np.int64)
    line_m = np.empty(n_pat + 2)
    jmass = np.zeros((J, n_pat))
    # the index of each pattern by its code sum_i (s_i + 1) 3^i, -1 if absent
    n_code = 1
    for _ in range(L):
        n_code *= 3
    index = np.full(n_code, -1, dtype=np.int64)
    for p in range(n_pat):
        code = 0
        mult = 1
        for i in range(L):
            code += int(pats[p, i] + 1.0) * mult
            mult *= 3
        index[code] = p
    start = np.full(J, -1, dtype=np.int64)
    for n in range(N):
        j = atom[n]
        wt = lw[n]
        for b in range(Lp):
            sb = 0.0
            for q in range(nx):
                sb += R[j, b, q] * x[n, q]
            off[b] = sb
            dirn[b] = R[j, b, nx]
        esize = 0.0
        gmax = 0.0
        for i in range(L):
            sg = 0.0
            se = 0.0
            for b in range(Lp):
                sg += (mean[j, b] + off[b]) * P[b, i]
                se += dirn[b] * P[b, i]
            g0[i] = sg
            e[i] = se
            gmax = max(gmax, abs(sg))
            esize = max(esize, abs(se))
        gsize = gmax + lam
        walked = False
        p = start[j]
        if p >= 0:
            acc_w[:] = 0.0
            acc_z[:] = 0.0
            acc_ww[:, :] = 0.0
            k = 0
            s_l1 = 0.0
            m_line = 0.0
            lo, hi, ok, i_hi, s_hi = _pattern_piece(
                p, j, g0, e, pats, Jps, A, lam, flat_tol, gsize, esize, c, d
            )
            walked = ok and lo == -np.inf
            steps = 0
            cdf_lo = 0.0
            pdf_lo = 0.0
            while walked:
                i0, sl, cdf_lo, pdf_lo = _add_piece(
                    lo, hi, cdf_lo, pdf_lo, c, d, wr, cc, acc_w, acc_z, acc_ww
                )
                line_p[k] = p
                line_m[k] = i0
                k += 1
                m_line += i0
                s_l1 += sl
                if hi == np.inf:
                    break
                steps += 1
                if steps > n_pat or i_hi < 0:
                    walked = False
                    break
                # the next pattern: pattern p with coordinate i_hi set to s_hi
                code = 0
                mult = 1
                for i in range(L):
                    si = s_hi if i == i_hi else pats[p, i]
                    code += int(si + 1.0) * mult
                    mult *= 3
                p = index[code]
                if p < 0 or not usable[p, j]:
                    walked = False
                    break
                prev = hi
                lo, hi, ok, i_hi, s_hi = _pattern_piece(
                    p, j, g0, e, pats, Jps, A, lam, flat_tol, gsize, esize, c, d
                )
                # the piece must start where the last one ended (a gap or an overlap of
                # Gaussian mass above mass_tol: the walk took a wrong turn); it is
                # integrated from there, so that the line's pieces tile it exactly
                if not ok or hi <= prev or pdf_lo * abs(lo - prev) > mass_tol:
                    walked = False
                    break
                lo = prev
            if walked and abs(m_line - 1.0) <= mass_tol:
                mass[n] += m_line
                _add_line(
                    j, wt, s_l1, acc_w, acc_z, acc_ww, off, dirn, line_p, line_m, k,
                    l1, ew, eww, ewb, jmass,
                )  # fmt: skip
                continue
        # every pattern (and the one that holds z -> -inf for the atom's next line)
        acc_w[:] = 0.0
        acc_z[:] = 0.0
        acc_ww[:, :] = 0.0
        k = 0
        s_l1 = 0.0
        for p in range(n_pat):
            if not usable[p, j]:
                continue
            lo, hi, ok, i_hi, s_hi = _pattern_piece(
                p, j, g0, e, pats, Jps, A, lam, flat_tol, gsize, esize, c, d
            )
            if not ok:
                continue
            if lo == -np.inf:
                start[j] = p
            cdf_lo = 0.0
            pdf_lo = 0.0
            if math.isfinite(lo):
                cdf_lo = ndtr_scalar(lo)
                pdf_lo = 0.3989422804014327 * math.exp(-0.5 * lo * lo)
            i0, sl, _, _ = _add_piece(lo, hi, cdf_lo, pdf_lo, c, d, wr, cc, acc_w, acc_z, acc_ww)
            line_p[k] = p
            line_m[k] = i0
            k += 1
            mass[n] += i0
            s_l1 += sl
        _add_line(
            j, wt, s_l1, acc_w, acc_z, acc_ww, off, dirn, line_p, line_m, k,
            l1, ew, eww, ewb, jmass,
        )  # fmt: skip
    for j in range(J):
        for p in range(n_pat):
            mj = jmass[j, p]
            if mj != 0.0:
                for a in range(L):
                    for b in range(L):
                        ejd[j, a, b] += mj * Jps[p, j, a, b]


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
