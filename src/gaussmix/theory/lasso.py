"""Lasso and elastic net for any number of outputs: the l1 proximal step in an L x L metric
and its Gaussian expectations (the prior of Theorem 1 for one-hot labels).

On an atom of the spectral law (a direction with variances ``sigma^k``) the weight row
``w`` (L) of ``W*`` minimises

    1/2 w^T A w - g^T w + lam1 ||w||_1,    A = P^T (sum_k sigma^k Vhat_k) P + lam2 I_L,

with ``lam1 = lam l1_ratio``, ``lam2 = lam (1 - l1_ratio)`` and ``g = P^T B``, ``B`` the
Gaussian field of the prior in the effective output space (``P`` (L', L) the problem's
output space: the identity, or the complement of ``1`` for the shift-invariant
cross-entropy, whose lasso then picks among the gauges ``w + t 1`` the ones of least
``||w||_1``; see :func:`l1_prox`).  Unlike ``L = 1`` (Appendix C.2, the soft threshold) this
is an L-dimensional lasso with no closed form: :func:`l1_prox` solves it for many ``g`` at
once by vectorised coordinate descent, then exactly on the active set ``S``
(``w_S = A_SS^{-1} (g_S - lam1 s_S)``, ``s`` the signs), and checks the KKT conditions
(:func:`l1_kkt_residual`).  The prox is continuous and piecewise affine in ``g``, with
Jacobian ``dw/dg = P_S A_SS^{-1} P_S^T`` on each piece (:func:`l1_prox_jacobian`).

Its Gaussian expectations (:func:`gaussian_l1_moments`) are computed along lines: the
field is ``B = m + R (x, z)`` with ``R R^T`` its covariance, ``x`` (L' - 1 dimensions) on a
tensor rule and ``z`` along a line.  On a line ``w`` is piecewise affine and its Jacobian
piecewise constant, with pieces whose ends are found exactly (two adjacent affine pieces
meet where their extensions cross, confirmed by a prox evaluation there; otherwise the cell
is bisected), so the integral over ``z`` of every moment the prior needs — ``E[w]``,
``E[w w^T]``, ``E[dw/dg]``, the expected number of non-zero entries, ``E||w||_1`` — is a
sum of Gaussian partial moments of polynomials of degree <= 2 in closed form.  For
``L' = 1`` (binary labels, two-class cross-entropy) there is no outer rule and the result is
exact to rounding; for ``L' >= 2`` the outer rule (composite Gauss-Legendre panels)
integrates a function that is smooth except at the projections of the vertices of the
prox's pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from .quadrature import GradedPanels
from .tolerances import XI_MAX

__all__ = [
    "l1_prox",
    "l1_prox_jacobian",
    "l1_kkt_residual",
    "L1Moments",
    "gaussian_l1_moments",
    "OUTER_PANELS",
    "LINE_POINTS",
]

#: panels per outer dimension of the composite Gauss-Legendre rule of
#: :func:`gaussian_l1_moments`, by outer dimension ``L' - 1`` (the cost grows as its power).
#: Measured on the K = 3 cross-entropy metric (isotropic, shift-free) at generic hats: with
#: 32 panels of 3 nodes (grade 2) ``E[u u^T]`` is within 4e-9 and the non-zero count within
#: 1.1e-6 of a 2001-node trapezoid reference on ``[-10, 10]``, where a Gauss-Hermite rule of
#: 192 nodes is off by 1.5e-4 (the integrand has kinks where the prox's pieces appear).  At
#: the K = 3 cross-entropy lasso fixed point (Delta = 0.5, lam = 0.1, alpha = 2) the test
#: error moves by 2.5e-5 from 32 to 128 panels, by 7.6e-6 from 64 to 128; three effective
#: outputs: 8 x 8 panels are within ~5e-4 (relative) of 24 x 24 at generic hats
OUTER_PANELS = {1: 64, 2: 8}
#: for more outer dimensions
OUTER_PANELS_HIGH = 4
#: Gauss-Legendre nodes per panel and grading of the outer rule
#: (:class:`~gaussmix.theory.quadrature.GradedPanels`)
OUTER_PANEL_ORDER = 3
OUTER_GRADE = 2.0
#: points of the initial grid on each line (uniform on ``[-XI_MAX, XI_MAX]``; cells in which
#: the active set changes are resolved exactly, so this only sets the cost of the search)
LINE_POINTS = 25
#: coordinate-descent sweeps between two exact solves on the guessed active set
_SWEEPS = 8
#: rounds of ``_SWEEPS`` sweeps before a node is reported as failed (NaN)
_MAX_ROUNDS = 400
#: a KKT violation below this many ulps of the problem's scale counts as zero
_KKT_ULPS = 64.0
#: bisections of a line cell before its breakpoint is taken at the crossing of its ends
_MAX_BISECT = 48
#: smallest ``cond(cov)^{-1}`` for which ``E[dw/dg]`` is taken from Stein's lemma
_STEIN_RCOND = 1e-8
_INV_SQRT_2PI = 0.3989422804014327
_EPS = np.finfo(float).eps


def l1_prox_jacobian(A: np.ndarray, support: np.ndarray) -> np.ndarray:
    """``dw/dg = P_S A_SS^{-1} P_S^T`` of the l1 prox on its active set ``S``.

    Parameters
    ----------
    A : ndarray (N, L, L)
        Metrics (symmetric; ``A_SS`` positive definite).
    support : ndarray of bool (N, L)

    Returns
    -------
    ndarray (N, L, L)
        Zero outside ``S x S``.
    """
    L = A.shape[-1]
    both = support[:, :, None] & support[:, None, :]
    Am = np.where(both, A, 0.0)
    Am = Am + (~support)[:, :, None] * np.eye(L)
    J = np.linalg.inv(Am)
    J = np.where(both, J, 0.0)
    return 0.5 * (J + np.swapaxes(J, 1, 2))


def l1_kkt_residual(A: np.ndarray, g: np.ndarray, lam: float, w: np.ndarray) -> np.ndarray:
    """Violation of the optimality conditions of ``min 1/2 w^T A w - g^T w + lam ||w||_1``.

    The minimum-norm subgradient: ``|g - A w - lam sign(w)|`` on the support and
    ``(|g - A w| - lam)_+`` off it, largest over the L components of each problem.
    """
    r = g - np.einsum("nab,nb->na", A, w)
    on = w != 0.0
    v = np.where(on, np.abs(r - lam * np.sign(w)), np.maximum(np.abs(r) - lam, 0.0))
    return v.max(axis=-1)


def _scale(A: np.ndarray, g: np.ndarray, lam: float, w: np.ndarray) -> np.ndarray:
    """The size of the terms of the KKT residual (for its rounding floor)."""
    Aw = np.einsum("nab,nb->na", np.abs(A), np.abs(w))
    return np.maximum(np.abs(g), Aw).max(axis=-1) + lam


def _lower_median_gauge(w: np.ndarray) -> np.ndarray:
    """``w - t 1`` with ``t`` the lower median of each row: a gauge of least ``||w||_1``
    (unique for odd L) with a zero at the median entry."""
    L = w.shape[-1]
    t = np.sort(w, axis=-1)[:, (L - 1) // 2]
    out = w - t[:, None]
    out[np.arange(w.shape[0]), np.argmin(np.abs(out), axis=-1)] = 0.0
    return out


def l1_prox(
    A: np.ndarray,
    g: np.ndarray,
    lam: float,
    *,
    shift_free: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Batched ``w = argmin_w 1/2 w^T A w - g^T w + lam ||w||_1``.

    Coordinate descent (soft threshold of one coordinate at a time, vectorised over the
    problems) guesses the active set ``S`` and signs ``s``; the exact solution on it,
    ``w_S = A_SS^{-1} (g_S - lam s_S)``, is accepted when it satisfies the KKT conditions to
    rounding (:func:`l1_kkt_residual` below ``64 eps`` of the problem's scale), otherwise
    descent continues.

    Parameters
    ----------
    A : ndarray (N, L, L)
        Symmetric positive semi-definite metrics with a positive diagonal (a broadcast view
        is fine).  Positive definite unless ``shift_free``.
    g : ndarray (N, L)
    lam : float
        ``>= 0``.
    shift_free : bool
        ``A 1 = 0`` (the metric of a shift-invariant loss with no l2 part): the minimisers
        are ``w + t 1`` for ``t`` minimising ``||w + t 1||_1``; the one returned has its lower
        median entry at zero (the unique minimiser for odd L, one of least support for even L),
        so that ``A_SS`` is positive definite.

    Returns
    -------
    w : ndarray (N, L)
    kkt : ndarray (N,)
        KKT residual of each returned solution; NaN rows of ``w`` (with ``kkt = inf``) if the
        descent did not identify the active set in ``_MAX_ROUNDS * _SWEEPS`` sweeps.
    """
    A = np.asarray(A, dtype=float)
    g = np.asarray(g, dtype=float)
    N, L = g.shape
    w = np.zeros((N, L))
    kkt = np.full(N, np.inf)
    todo = np.arange(N)
    diag = np.diagonal(A, axis1=1, axis2=2)
    for _ in range(_MAX_ROUNDS):
        Ai, gi, di, wi = A[todo], g[todo], diag[todo], w[todo]
        for _ in range(_SWEEPS):
            for i in range(L):
                r = gi[:, i] - np.einsum("nb,nb->n", Ai[:, i, :], wi) + di[:, i] * wi[:, i]
                wi[:, i] = np.sign(r) * np.maximum(np.abs(r) - lam, 0.0) / di[:, i]
        if shift_free:
            wi = _lower_median_gauge(wi)
        w[todo] = wi
        # exact solve on the guessed active set
        S = wi != 0.0
        J = l1_prox_jacobian(Ai, S)
        we = np.einsum("nab,nb->na", J, gi - lam * np.sign(wi))
        # at a breakpoint of the prox an entry of the support is zero up to rounding, and
        # may come out with either sign: it is a zero
        flip = S & (np.sign(we) != np.sign(wi))
        tiny = _KKT_ULPS * _EPS * _scale(Ai, gi, lam, we)[:, None] / di
        we = np.where(flip & (np.abs(we) <= tiny), 0.0, we)
        ok_sign = ~np.any(flip & (we != 0.0), axis=-1)
        we = np.where(S, we, 0.0)
        res = l1_kkt_residual(Ai, gi, lam, we)
        ok = ok_sign & (res <= _KKT_ULPS * _EPS * _scale(Ai, gi, lam, we))
        w[todo[ok]] = we[ok]
        kkt[todo[ok]] = res[ok]
        todo = todo[~ok]
        if todo.size == 0:
            return w, kkt
    w[todo] = np.nan
    return w, kkt


@dataclass
class L1Moments:
    """Gaussian moments of the l1 prox per atom (see :func:`gaussian_l1_moments`).

    Attributes
    ----------
    mean : ndarray (J, L)
        ``E[w]``.
    second : ndarray (J, L, L)
        ``E[w w^T]``.
    jacobian : ndarray (J, L, L)
        ``E[dw/dg]``.
    nonzero : ndarray (J,)
        Expected number of non-zero entries of ``w``.
    l1 : ndarray (J,)
        ``E ||w||_1``.
    """

    mean: np.ndarray
    second: np.ndarray
    jacobian: np.ndarray
    nonzero: np.ndarray
    l1: np.ndarray


def _pattern(w: np.ndarray) -> np.ndarray:
    """An integer code of the signs of each row of ``w`` (its piece of the prox)."""
    L = w.shape[-1]
    return ((np.sign(w) + 1.0) @ (3.0 ** np.arange(L))).astype(np.int64)


class _Line:
    """Prox values along the lines ``g(z) = P^T (base + z dirn)`` of a batch (helper of
    :func:`gaussian_l1_moments`)."""

    def __init__(self, A, P, base, dirn, atom, lam, shift_free):
        self.A, self.P, self.base, self.dirn = A, P, base, dirn
        self.atom, self.lam, self.shift_free = atom, lam, shift_free

    def eval(self, line: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, ...]:
        """``w``, its slope ``dw/dz``, Jacobian and piece code at ``(line, z)``."""
        A = self.A[self.atom[line]]
        gfull = (self.base[line] + z[:, None] * self.dirn[line]) @ self.P
        w, _ = l1_prox(A, gfull, self.lam, shift_free=self.shift_free)
        if not np.all(np.isfinite(w)):
            raise FloatingPointError("the l1 proximal map did not converge")
        J = l1_prox_jacobian(A, w != 0.0)
        slope = np.einsum("nab,nb->na", J, self.dirn[line] @ self.P)
        return w, slope, J, _pattern(w)


def _partial_moments(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """``int_a^b z^k phi(z) dz`` for ``k = 0, 1, 2`` (``a, b`` may be infinite)."""

    def dens(x):
        with np.errstate(invalid="ignore", over="ignore"):
            return np.where(np.isfinite(x), _INV_SQRT_2PI * np.exp(-0.5 * x * x), 0.0)

    pa, pb = dens(a), dens(b)
    I0 = ndtr(b) - ndtr(a)
    I1 = pa - pb
    xa = np.where(np.isfinite(a), a, 0.0) * pa
    xb = np.where(np.isfinite(b), b, 0.0) * pb
    I2 = I0 + xa - xb
    return I0, I1, I2


def gaussian_l1_moments(
    A: np.ndarray,
    P: np.ndarray,
    mean: np.ndarray,
    cov: np.ndarray,
    lam: float,
    *,
    shift_free: bool = False,
    panels: int | None = None,
) -> L1Moments:
    """Moments of ``w = l1_prox(A_j, P^T B)`` for ``B ~ N(mean_j, cov_j)`` on each atom ``j``.

    Parameters
    ----------
    A : ndarray (J, L, L)
        Full-space metrics.
    P : ndarray (L', L)
        Effective-to-full output map (orthonormal rows).
    mean : ndarray (J, L'); cov : ndarray (J, L', L')
        Law of the effective field ``B`` on each atom.
    lam : float
        l1 strength ``lam1``.
    shift_free : bool
        See :func:`l1_prox`.
    panels : int, optional
        Panels per outer dimension (``L' - 1`` of them) of the composite Gauss-Legendre
        rule; default :data:`OUTER_PANELS`.

    Returns
    -------
    L1Moments
    """
    J = A.shape[0]
    Lp = P.shape[0]
    ev, vec = np.linalg.eigh(0.5 * (cov + np.swapaxes(cov, 1, 2)))
    # the symmetric square root (R R^T = cov): continuous in cov, so that the rule's frame
    # does not jump between fixed-point iterations when eigenvalues are degenerate
    R = (vec * np.sqrt(np.clip(ev, 0.0, None))[:, None, :]) @ np.swapaxes(vec, 1, 2)
    if Lp > 1:
        n = OUTER_PANELS.get(Lp - 1, OUTER_PANELS_HIGH) if panels is None else panels
        rule = GradedPanels(n, Lp - 1, OUTER_PANEL_ORDER, OUTER_GRADE)
        xo, wo = np.asarray(rule.nodes), np.asarray(rule.weights)
    else:
        xo, wo = np.zeros((1, 0)), np.ones(1)
    n_o = wo.size
    # lines: (atom, outer node); g = mean + R[:, :, :-1] x + R[:, :, -1] z
    base = (mean[:, None, :] + np.einsum("jab,ob->joa", R[:, :, :-1], xo)).reshape(-1, Lp)
    dirn = np.repeat(R[:, :, -1], n_o, axis=0)
    atom = np.repeat(np.arange(J), n_o)
    lw = np.tile(wo, J)
    n_l = atom.size
    ln = _Line(A, P, base, dirn, atom, lam, shift_free)

    z = np.linspace(-XI_MAX, XI_MAX, LINE_POINTS)
    n_z = z.size
    line = np.repeat(np.arange(n_l), n_z)
    zz = np.tile(z, n_l)
    w, s, Jw, code = ln.eval(line, zz)
    w, s, Jw, code = (x.reshape(n_l, n_z, *x.shape[1:]) for x in (w, s, Jw, code))
    # pieces: (line, a, b, z_ref, w_ref, slope, J) with w = w_ref + slope (z - z_ref)
    pieces: list[tuple[np.ndarray, ...]] = []
    inf = np.full(n_l, np.inf)
    lines = np.arange(n_l)
    pieces.append(
        (lines, -inf, np.full(n_l, z[0]), np.full(n_l, z[0]), w[:, 0], s[:, 0], Jw[:, 0])
    )
    pieces.append(
        (lines, np.full(n_l, z[-1]), inf, np.full(n_l, z[-1]), w[:, -1], s[:, -1], Jw[:, -1])
    )
    same = code[:, :-1] == code[:, 1:]
    li, ki = np.nonzero(same)
    pieces.append((li, z[ki], z[ki + 1], z[ki], w[li, ki], s[li, ki], Jw[li, ki]))
    li, ki = np.nonzero(~same)
    # open cells: left end (za, w, slope, J) and right end
    cell = dict(
        line=li,
        za=z[ki],
        zb=z[ki + 1],
        wa=w[li, ki],
        sa=s[li, ki],
        Ja=Jw[li, ki],
        ca=code[li, ki],
        wb=w[li, ki + 1],
        sb=s[li, ki + 1],
        Jb=Jw[li, ki + 1],
        cb=code[li, ki + 1],
    )
    for depth in range(_MAX_BISECT + 1):
        if cell["line"].size == 0:
            break
        c = cell
        ds = c["sa"] - c["sb"]
        rhs = c["wb"] - c["wa"] + c["za"][:, None] * c["sa"] - c["zb"][:, None] * c["sb"]
        den = np.einsum("na,na->n", ds, ds)
        with np.errstate(divide="ignore", invalid="ignore"):
            zs = np.einsum("na,na->n", ds, rhs) / den
        width = c["zb"] - c["za"]
        inside = (den > 0) & (zs >= c["za"] - 1e-12 * width) & (zs <= c["zb"] + 1e-12 * width)
        zs = np.clip(np.where(inside, zs, 0.5 * (c["za"] + c["zb"])), c["za"], c["zb"])
        ws, _, _, _ = ln.eval(c["line"], zs)
        pa = c["wa"] + (zs - c["za"])[:, None] * c["sa"]
        pb = c["wb"] + (zs - c["zb"])[:, None] * c["sb"]
        size = np.maximum(np.abs(c["wa"]).max(-1), np.abs(c["wb"]).max(-1)) + 1e-300
        tol = 1e-10 * size
        good = inside & (np.abs(ws - pa).max(-1) <= tol) & (np.abs(ws - pb).max(-1) <= tol)
        if depth == _MAX_BISECT:  # a cell of width ~1e-14: its breakpoint is immaterial
            good = np.ones_like(good)
        g_ = np.flatnonzero(good)
        pieces.append(_cell_piece(c, g_, c["za"][g_], zs[g_], "a"))
        pieces.append(_cell_piece(c, g_, zs[g_], c["zb"][g_], "b"))
        bad = np.flatnonzero(~good)
        if bad.size == 0:
            break
        c = {k: v[bad] for k, v in c.items()}
        zm = 0.5 * (c["za"] + c["zb"])
        wm, sm, Jm, cm = ln.eval(c["line"], zm)
        left = dict(c, zb=zm, wb=wm, sb=sm, Jb=Jm, cb=cm)
        right = dict(c, za=zm, wa=wm, sa=sm, Ja=Jm, ca=cm)
        nxt = {k: np.concatenate([left[k], right[k]]) for k in c}
        done = nxt["ca"] == nxt["cb"]
        d_ = np.flatnonzero(done)
        pieces.append(_cell_piece(nxt, d_, nxt["za"][d_], nxt["zb"][d_], "a"))
        cell = {k: v[~done] for k, v in nxt.items()}
    off = base - np.repeat(mean, n_o, axis=0)
    return _integrate_pieces(pieces, lw, atom, off, dirn, cov, P, A)


def _cell_piece(c: dict, idx: np.ndarray, a: np.ndarray, b: np.ndarray, end: str) -> tuple:
    """The piece ``[a, b]`` of cells ``idx``, affine as at the cells' end ``end`` ('a'/'b')."""
    return (
        c["line"][idx],
        a,
        b,
        c["z" + end][idx],
        c["w" + end][idx],
        c["s" + end][idx],
        c["J" + end][idx],
    )


def _integrate_pieces(pieces, lw, atom, off, dirn, cov, P, A) -> L1Moments:
    """Sum the closed-form integrals of the affine pieces, by line then by atom.

    ``E[dw/dg]`` comes from Stein's lemma, ``E[dw/dB] = E[w (B - m)^T] cov^{-1}`` with
    ``dw/dB = (dw/dg) P^T``: along a line ``w (B - m)^T`` is continuous, so the outer rule
    integrates a function with kinks of the second order only (the direct form, piecewise
    constant along the line, leaves kinks of the first order where pieces appear).  It is
    used where ``cov`` is well conditioned.  The number of non-zero entries likewise:
    ``|S| = tr(A_SS^{-1} A_SS) = tr((dw/dg) A)``, whose part on ``range(P^T)`` is
    ``tr(P (dw/dg) P^T P A P^T)`` and whose remainder (the direction ``n`` of ``1`` when
    ``L' < L``) is ``(n^T A n) (n^T (dw/dg) n)``, zero for the shift-free metric.
    """
    line, a, b, zr, wr, sl, Jp = (np.concatenate(x) for x in zip(*pieces))
    J = cov.shape[0]
    I0, I1, I2 = _partial_moments(a, b)
    c = wr - zr[:, None] * sl  # w = c + sl z
    ew = c * I0[:, None] + sl * I1[:, None]
    eww = (
        np.einsum("na,nb->nab", c, c) * I0[:, None, None]
        + (np.einsum("na,nb->nab", c, sl) + np.einsum("na,nb->nab", sl, c)) * I1[:, None, None]
        + np.einsum("na,nb->nab", sl, sl) * I2[:, None, None]
    )
    o, e = off[line], dirn[line]  # B - m = o + e z
    ewb = (
        np.einsum("na,nb->nab", c, o) * I0[:, None, None]
        + (np.einsum("na,nb->nab", c, e) + np.einsum("na,nb->nab", sl, o)) * I1[:, None, None]
        + np.einsum("na,nb->nab", sl, e) * I2[:, None, None]
    )
    ej = Jp * I0[:, None, None]
    l1 = np.einsum("na,na->n", np.sign(wr), ew)  # the signs are constant on a piece
    wt = lw[line]  # outer weight of each piece's line
    aj = atom[line]

    def total(x):
        out = np.zeros((J,) + x.shape[1:])
        np.add.at(out, aj, wt.reshape((-1,) + (1,) * (x.ndim - 1)) * x)
        return out

    eww = total(eww)
    ej_direct = total(ej)
    ej = ej_direct.copy()
    ev = np.linalg.eigvalsh(cov)
    stein = ev[:, 0] > _STEIN_RCOND * ev[:, -1]
    if np.any(stein):
        ewb = total(ewb)[stein]
        ejs = np.linalg.solve(cov[stein], np.swapaxes(ewb, 1, 2))  # (cov^-1 E[(B-m) w^T])
        ej[stein] = np.swapaxes(ejs, 1, 2) @ P  # E[dw/dB] P = E[dw/dg] on range(P^T)
    ej = 0.5 * (ej + np.swapaxes(ej, 1, 2))
    nnz = np.einsum("jab,jba->j", P @ ej @ P.T, P @ A @ P.T)
    L, Lp = P.shape[1], P.shape[0]
    if L > Lp:
        n = np.ones(L) / np.sqrt(L)
        nnz = nnz + (n @ A @ n) * (n @ ej_direct @ n)
    return L1Moments(
        mean=total(ew),
        second=0.5 * (eww + np.swapaxes(eww, 1, 2)),
        jacobian=ej,
        nonzero=nnz,
        l1=total(l1),
    )
