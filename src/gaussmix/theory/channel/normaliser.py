"""Cluster 0's cross-entropy channel for exchangeable clusters, integrated over the softmax
normaliser (K = 4 near ``alpha*_4``, K = 5, 6 at small ``lam``).

With exchangeable clusters (:mod:`gaussmix.theory.problem.symmetry`) cluster 0's order parameters
are ``Q_0 = q I``, ``V_0 = v I`` in the effective output space, and the cross-entropy prox
(Theorem 1, eq. (8)) solves ``h_k + v p_k(h) = c_k`` with ``c = omega + v e_0``
(``omega`` the Gaussian output).  Writing ``t`` for the log-normaliser of the softmax at
``h``, ``p_k = e^{h_k - t}`` gives ``v p_k e^{v p_k} = v e^{c_k - t}``, i.e.

    p_k = W(v e^{x_k}) / v,   x_k = c_k - t,

with ``W`` Lambert's function, and ``t`` is fixed by ``sum_k p_k = 1``:
``sum_k phi(x_k) = v`` with ``phi(x) = W(v e^x)``.

Change of variables.  In the label space the logits ``c_k`` are independent ``N(mu_k, q)``
(``mu = P^T M_0 + v e_0``; ``P^T omega`` has the covariance ``q (I - 11^T / K)``, and a
common independent Gaussian shift, which the softmax ignores, makes the coordinates
independent).  The expectation of any function of ``p`` is written as an integral over the
log-normaliser ``t`` (an outer composite Gauss-Legendre rule, panels ``2 sqrt(q)`` wide, as
many nodes each as the grid's panels) and over the competitors' sum ``Y = sum_{j >= 1}
phi(x_j)``: given ``t``, competitor ``j``'s coordinate ``x_j = c_j - t`` has the Gaussian
density of ``c_j`` at ``x_j + t``, and the constraint closes the own class, ``phi(x_0) = v -
Y`` (with the Jacobian of the constraint, ``psi'(v) phi'(psi(v)) / phi'`` of the dependent
variable).
The density of a sum of two terms, in the coordinate ``z = psi(Y) = log(Y / v) + Y`` of
the sum (``psi`` is ``phi``'s inverse, so one term's ``z`` is its ``x``), is the
convolution

    f_{A+B}(z) = int f_A(u) f_B(g(u, z)) phi'(z) / phi'(g(u, z)) du,
    g(u, z) = psi(phi(z) - phi(u)),

split at ``phi(u) = phi(z) / 2`` so that both halves integrate the smaller term (each
half written with the other term's density, :meth:`NormaliserGrid.oplus`).  The ``K - 2``
convolutions of the competitors (a chain on one graded grid in ``z``: panels growing by
:data:`GRID_RATIO` away from the entry point ``1 - log v`` of a term into the softmax, at
most :data:`GRID_LEFT_WMAX` wide below it, with extra edges where the sum of ``r = 2..6``
terms can begin) carry, besides the density, its products with ``phi'`` and with the
competitors' ``p_j^2`` and ``p_j g_j`` (``g_j`` the standardised logit), which the last step
needs.  Terms more than :data:`CUT` below the entry point count as zero (an atom at ``Y =
0`` carries their mass): ``phi`` is then ``< e^{-CUT}`` v.

Moments.  Seven integrals of cluster 0 follow: the normalisation, ``E[p_0]``,
``E[p_0^2]``, ``E[-log p_0] = E[W(v e^{x_0}) - x_0]`` (the training loss),
``E[p_0 g_0]``, ``sum_j E[p_j^2]`` and ``sum_j E[p_j g_j]``.  The Jacobian moments come
from Stein's lemma: ``E[d p_k / d omega_l] = E[p_k g_l] / sqrt(q)`` in the label space
(``omega = mu + sqrt(q) g``; ``f = e_0 - p``).  Every channel moment of the solver
(``Ef``, ``Eff``, ``Edf``, ``Eloss``, ``Eenv``:
:class:`~gaussmix.theory.channel.channel.ChannelMoments`) is a combination of them by the
symmetry of the competitors (:func:`cluster0_moments`); each is divided by the computed
normalisation, which removes most of the discretisation error.

The error estimate of a solve is the change of its observables between two resolutions of
the grid and the ``tau`` rule together (:attr:`NormaliserRule.order` Legendre nodes per
panel of both, 8 then 10; with the ``tau`` rule's nodes fixed, its error, which the fixed
point amplifies, was missed: at K = 5, alpha = 3 the training loss was 3e-8 off with an
estimate of 1e-8; measured in
BENCHMARKS.md, section "K = 4, 5: integration over the softmax normaliser", where a third
resolution shows it honest).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
from numba import njit
from numpy.polynomial.legendre import leggauss
from scipy.special import lambertw, ndtr

from gaussmix.core.validation import check_int

from ..numerics.quadrature import MAX_QUADRATURE_NODES, QuadratureRule
from .channel import ChannelMoments, in_parts
from .losses import CrossEntropyLoss

__all__ = [
    "NormaliserRule",
    "NormaliserGrid",
    "normaliser_integrals",
    "cluster0_moments",
    "normaliser_serves",
]

#: terms more than CUT below the entry point of the softmax count as zero (measured: 20 is
#: more accurate than 32 at the same nodes, whose coarse far panels cost accuracy)
CUT = 20.0
#: growth of the grid's panels away from the entry point (first panel 1 wide)
GRID_RATIO = 1.5
#: widest panel of the grid, in units of ``sqrt(q)``
GRID_WMAX = 100.0
#: widest panel of the grid below the entry point, where the sums of small terms begin
#: (measured at the four states of ``benchmarks/bench_normaliser.py`` against 14 nodes per
#: panel: without the cap, panels there reach 5 wide and carry most of the error, 1.3e-7
#: of the training loss at K = 5, alpha = 7 with 8 nodes; capped at 3, 8.7e-9, for 0 to 30%
#: more points)
GRID_LEFT_WMAX = 3.0
#: standard deviations of the logits covered by the ``tau`` rule and the own class
NSIG = 9.5
#: the width of the ``tau`` rule's panels in units of ``sqrt(q)`` (each with as many
#: Gauss-Legendre nodes as the grid's panels, so that the rule's refinement refines both:
#: measured against 16 nodes, 8 are 1.4e-9 to 2.7e-9 off ``E[p_0 g_0] / sqrt(q)`` and the
#: training loss at K = 5, comparable with the grid's error, 10 are 1.3e-11 off)
TAU_WIDTH = 2.0
#: the resolutions of the grid (Legendre nodes per panel) of the automatic rule and its
#: error estimate; the refinement stops beyond the largest
NORMALISER_ORDER = 8
NORMALISER_MAX_ORDER = 14
#: the resolution of the continuation start (:meth:`NormaliserRule.coarsened`)
NORMALISER_COARSE_ORDER = 6
#: numbers of clusters this rule serves (two to four convolutions of the competitors)
NORMALISER_CLUSTERS = (4, 5, 6)
#: the most panels of the grid in ``z`` (the convolution points grow with their square)
#: and of the ``tau`` rule that an evaluation accepts (measured along Fig. 3 left's K = 5
#: curve and at K = 4, 6: at most 35 and 333).  A state beyond them, such as an Anderson
#: extrapolation far from the fixed point (``sqrt(q) = 9e-14``, ``v = 5e-7`` at K = 5,
#: alpha = 4.35 cold: panels ``1e-11`` wide), raises FloatingPointError, and the iteration
#: retreats from it as from any failed evaluation of the map
MAX_GRID_PANELS = 100
MAX_TAU_PANELS = 2000
#: the most grid nodes times ``tau`` nodes (the size of the arrays of the convolutions)
#: and convolution points times ``tau`` nodes (their work) of an evaluation (measured
#: along the same curve and points: at most 5.2e5 and 6.5e7)
MAX_GRID_TAU_NODES = 4_000_000
MAX_CONVOLUTION_WORK = 500_000_000
#: convolution points times ``tau`` nodes from which a convolution's grid nodes are split
#: between threads (:func:`~gaussmix.theory.channel.channel.in_parts`), and convolution points from
#: which the grid's set-up (their stencils and weights) is: below them a thread costs more
#: than it saves (BENCHMARKS.md, "K = 5 on both cores")
NORMALISER_THREADS_MIN_WORK = 100_000
GRID_THREADS_MIN_POINTS = 1500
#: the own class's nodes times ``tau`` nodes from which its two halves run on two threads
#: (every measured evaluation has about 1e4: K = 5, alpha = 3, 8 nodes 48-60 -> 40 ms)
HALVES_THREADS_MIN_WORK = 5_000


def normaliser_serves(problem) -> bool:
    """Whether :class:`NormaliserRule` computes the channel of ``problem`` (a
    :class:`~gaussmix.theory.problem.problem.Problem` whose clusters are exchangeable: the caller
    checks the symmetry): softmax cross-entropy with ``K`` in :data:`NORMALISER_CLUSTERS`."""
    loss = getattr(problem.loss, "base", problem.loss)
    return isinstance(loss, CrossEntropyLoss) and problem.n_clusters in NORMALISER_CLUSTERS


def wexp(u: np.ndarray) -> np.ndarray:
    """``W(e^u)`` for real ``u`` (Lambert's principal branch; Newton on ``w + log w = u``
    above ``u = 500``, where ``e^u`` overflows)."""
    u = np.asarray(u, dtype=float)
    out = np.empty_like(u)
    big = u > 500.0
    out[~big] = lambertw(np.exp(u[~big])).real
    w = u[big] - np.log(u[big])
    for _ in range(6):
        w = w - (w + np.log(w) - u[big]) / (1.0 + 1.0 / w)
    out[big] = w
    return out


@njit(cache=True, error_model="numpy", nogil=True)
def _row_sum(r):  # pragma: no cover - compiled
    """``r.sum()`` in numpy's pairwise order for a row of fewer than 128: one after another
    below 8 terms, else 8 partial sums, their tree, then the rest."""
    n = r.size
    if n < 8:
        acc = 0.0
        for i in range(n):
            acc += r[i]
        return acc
    q0, q1, q2, q3, q4, q5, q6, q7 = r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
    i = 8
    while i < n - n % 8:
        q0 += r[i]
        q1 += r[i + 1]
        q2 += r[i + 2]
        q3 += r[i + 3]
        q4 += r[i + 4]
        q5 += r[i + 5]
        q6 += r[i + 6]
        q7 += r[i + 7]
        i += 8
    acc = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7))
    while i < n:
        acc += r[i]
        i += 1
    return acc


@njit(cache=True, error_model="numpy", nogil=True)
def _stencil_kernel(pts, k, e, x, bw, c, node):  # pragma: no cover - compiled
    """The rows of :meth:`NormaliserGrid.stencil`: at point ``p`` in panel ``k[p]`` (edges
    ``e``, Legendre nodes ``x``, barycentric weights ``bw``) the coefficients ``bw_j / (t -
    x_j)`` divided by their sum (:func:`_row_sum`), or one-hot where ``t`` is within 1e-14
    of nodes, and zero outside the grid; ``node[p]`` the grid node of a row with exactly one
    1 and otherwise zeros, else -1 (a row of coefficients has ``n >= 2`` nonzero or NaN)."""
    n = x.size
    lo, hi = e[0] - 1e-9, e[-1] + 1e-9
    d = np.empty(n)
    for p in range(pts.size):
        a, b = e[k[p]], e[k[p] + 1]
        t = (2.0 * pts[p] - a - b) / (b - a)
        hits, hit = 0, 0
        for j in range(n):
            d[j] = t - x[j]
            if abs(d[j]) <= 1e-14:
                hits += 1
                hit = j
        outside = pts[p] > hi or pts[p] < lo
        node[p] = k[p] * n + hit if hits == 1 and not outside else -1
        if outside:
            c[p, :] = 0.0
        elif hits:
            for j in range(n):
                c[p, j] = 1.0 if abs(d[j]) <= 1e-14 else 0.0
        else:
            for j in range(n):
                c[p, j] = bw[j] / d[j]
            c[p, :] /= _row_sum(c[p])


@njit(cache=True, error_model="numpy", nogil=True)
def _gather(F, node, k, c, n, out):  # pragma: no cover - compiled
    """``F`` (nc, ngrid, nt) at one point into ``out`` (nc, nt): the grid node ``node``
    itself where the point is one (``node >= 0``), else interpolated from the panel ``k``
    with the barycentric coefficients ``c`` (the same numbers: a node's row of
    coefficients is one-hot)."""
    nc, _, nt = F.shape
    if node >= 0:
        for cc in range(nc):
            for t in range(nt):
                out[cc, t] = F[cc, node, t]
        return
    out[:] = 0.0
    b = k * n
    for j in range(n):
        a = c[j]
        for cc in range(nc):
            for t in range(nt):
                out[cc, t] += a * F[cc, b + j, t]


@njit(cache=True, error_model="numpy", nogil=True)
def _oplus_kernel(
    X, Y, same, ptr, ku, cu, nu, kg, cg, ngn, w, n, terms_i, terms_j, pairs_o, pairs_t, out, i0, i1
):  # pragma: no cover - compiled
    """The convolution points of :meth:`NormaliserGrid.oplus`: at each grid node ``i`` the
    sum over its points ``p`` of ``w_p (X(u_p) Y(g_p) + Y(u_p) X(g_p))`` for each output's
    pairs of components, ``X(u_p)`` the grid node ``nu[p]`` where ``u_p`` is one (the
    points below the half on whole panels), else interpolated from the panel ``ku[p]``
    with the barycentric coefficients ``cu[p]`` (likewise ``g``); ``same``: ``Y`` is
    ``X`` (its values are gathered once).

    Each distinct term ``w_p (X_i(u) Y_j(g) + Y_j(u) X_i(g))`` (``terms_i``, ``terms_j``)
    is computed once and added to output ``pairs_o[q]`` for each pair ``q`` that is it
    (``pairs_t[q]``), in the pairs' order: with equal operands the pairs ``(i, j)`` and
    ``(j, i)`` are one term (the same products, summed in the other order: the same
    number, as IEEE addition commutes), so the sums are those of one term a pair, bit for
    bit.

    The grid nodes ``i0`` to ``i1`` (excluded), into those rows of ``out`` (nout, ng, nt):
    each node's sums alone, so that consecutive ranges of nodes run on several threads
    give the bits of one range."""
    nc, ng, nt = X.shape
    ncy = Y.shape[0]
    nout = out.shape[0]
    Xu = np.empty((nc, nt))
    Xg = np.empty((nc, nt))
    Yu = np.empty((ncy, nt))
    Yg = np.empty((ncy, nt))
    term = np.empty((terms_i.size, nt))
    acc = np.empty((nout, nt))
    for i in range(i0, i1):
        acc[:] = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            _gather(X, nu[p], ku[p], cu[p], n, Xu)
            _gather(X, ngn[p], kg[p], cg[p], n, Xg)
            wp = w[p]
            if same:
                for d in range(terms_i.size):
                    ii = terms_i[d]
                    jj = terms_j[d]
                    for t in range(nt):
                        term[d, t] = wp * (Xu[ii, t] * Xg[jj, t] + Xu[jj, t] * Xg[ii, t])
            else:
                _gather(Y, nu[p], ku[p], cu[p], n, Yu)
                _gather(Y, ngn[p], kg[p], cg[p], n, Yg)
                for d in range(terms_i.size):
                    ii = terms_i[d]
                    jj = terms_j[d]
                    for t in range(nt):
                        term[d, t] = wp * (Xu[ii, t] * Yg[jj, t] + Yu[jj, t] * Xg[ii, t])
            for q in range(pairs_o.size):
                o = pairs_o[q]
                d = pairs_t[q]
                for t in range(nt):
                    acc[o, t] += term[d, t]
        for o in range(nout):
            for t in range(nt):
                out[o, i, t] = acc[o, t]


#: the components carried by the convolution chain: density ``f`` and its products with
#: ``phi'`` (``B``), ``sum p_j^2`` (``A1``), both, ``sum p_j g_j`` (``A2``), both; each
#: output of a convolution is the sum over its pairs of components of the two operands
#: (a product rule: ``B`` of a sum is ``phi'`` of the sum, carried through ``f_A B_B +
#: B_A f_B``, and likewise)
_PAIRS = (
    (0, ((0, 0),)),
    (1, ((1, 0), (0, 1))),
    (2, ((2, 0), (0, 2))),
    (3, ((3, 0), (2, 1), (1, 2), (0, 3))),
    (4, ((4, 0), (0, 4))),
    (5, ((5, 0), (4, 1), (1, 4), (0, 5))),
)
_PAIRS_O = np.array([o for o, terms in _PAIRS for _ in terms], dtype=np.int64)
_PAIRS_I = np.array([i for _, terms in _PAIRS for i, _ in terms], dtype=np.int64)
_PAIRS_J = np.array([j for _, terms in _PAIRS for _, j in terms], dtype=np.int64)


def _kernel_terms(same: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct terms ``(i, j)`` of :func:`_oplus_kernel` and the term of each pair of
    :data:`_PAIRS`: with equal operands (``same``) ``(j, i)`` is the term ``(i, j)``, 8
    terms for 15 pairs, otherwise one term a pair."""
    keys = [(i, j) if not same or i <= j else (j, i) for i, j in zip(_PAIRS_I, _PAIRS_J)]
    distinct = list(dict.fromkeys(keys))
    ti = np.array([i for i, _ in distinct], dtype=np.int64)
    tj = np.array([j for _, j in distinct], dtype=np.int64)
    return ti, tj, np.array([distinct.index(k) for k in keys], dtype=np.int64)


_KERNEL_TERMS = {same: _kernel_terms(same) for same in (False, True)}


class NormaliserGrid:
    """The graded grid in ``z = psi(Y)`` of one ``v`` with its convolution points.

    Parameters
    ----------
    v : float
        The metric ``V_0 = v I``.
    n : int
        Gauss-Legendre nodes per panel.
    wmax : float
        Widest panel.
    zmax : float
        End of the grid (the largest sum of the competitors that the ``tau`` rule reaches).
    """

    def __init__(self, v: float, n: int, wmax: float, zmax: float) -> None:
        if not (v > 0.0 and np.isfinite(v) and wmax > 0.0 and np.isfinite(zmax)):
            raise FloatingPointError(
                f"normaliser grid: no grid for v = {v:.3g}, widest panel {wmax:.3g}, "
                f"end {zmax:.3g} (positive and finite needed)"
            )
        self.v, self.lv, self.n = v, float(np.log(v)), n
        zT = 1.0 - self.lv  # the entry point: phi(zT) = 1
        self.zcut = zT - CUT
        zhi = min(v, zmax)
        left, right = [zT], [zT]
        w = 1.0
        while left[-1] - w > self.zcut + 0.5 * w:
            left.append(left[-1] - w)
            w = min(w * GRID_RATIO, wmax, GRID_LEFT_WMAX)
            _check_panels(len(left), v, wmax)
        left.append(self.zcut)
        w = 1.0
        while right[-1] + w < zhi - 0.5 * w:
            right.append(right[-1] + w)
            w = min(w * GRID_RATIO, wmax)
            _check_panels(len(left) + len(right), v, wmax)
        right.append(zhi)
        edges = np.array(left[::-1] + right[1:])
        # the onsets of sums of r live terms (r = 2..6): kinks of the sums' densities
        extra = self.zcut + np.log(np.arange(2, 7))
        self.edges = np.union1d(edges[edges > extra[-1] + 0.3], np.r_[self.zcut, extra])
        x, wq = leggauss(n)
        self.gl = (x, wq)
        a, b = self.edges[:-1], self.edges[1:]
        self.z = ((a + b)[:, None] / 2 + (b - a)[:, None] / 2 * x).ravel()
        self.npan = a.size
        self.bw = np.array(
            [1.0 / np.prod([x[j] - x[k] for k in range(n) if k != j]) for j in range(n)]
        )
        self.phz = self.phi(self.z)
        self._setup()

    def phi(self, x: np.ndarray) -> np.ndarray:
        """``W(v e^x)``."""
        return wexp(self.lv + np.asarray(x, dtype=float))

    def dphi(self, x: np.ndarray) -> np.ndarray:
        """``phi'(x) = W / (1 + W)``."""
        W = self.phi(x)
        return W / (1.0 + W)

    def psi(self, y: np.ndarray) -> np.ndarray:
        """``phi``'s inverse, ``log(y / v) + y``."""
        return np.log(y / self.v) + y

    def stencil(self, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Panel and barycentric interpolation coefficients (rows) of grid functions at
        ``pts`` (zero outside the grid), and the grid node of each point that is one (its
        row one-hot), else -1 (:func:`_stencil_kernel`)."""
        pts = np.ascontiguousarray(pts, dtype=float)
        k = np.clip(np.searchsorted(self.edges, pts, side="right") - 1, 0, self.npan - 1)
        k = k.astype(np.int64)
        c = np.empty((pts.size, self.n))
        node = np.empty(pts.size, dtype=np.int64)
        _stencil_kernel(pts, k, self.edges, self.gl[0], self.bw, c, node)
        return k, c, node

    def interp(self, F: np.ndarray, pts: np.ndarray) -> np.ndarray:
        """Grid functions ``F`` (..., ngrid, nt) at ``pts``: (..., npts, nt)."""
        k, c, _ = self.stencil(pts)
        idx = k[:, None] * self.n + np.arange(self.n)[None, :]
        return np.einsum("pj,...pjt->...pt", c, F[..., idx, :])

    def clipped_rule(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        """Composite Gauss-Legendre on ``[lo, hi]`` following the grid's panels."""
        x, wq = self.gl
        e = self.edges
        a2, b2 = np.maximum(e[:-1], lo), np.minimum(e[1:], hi)
        keep = b2 > a2
        a2, b2 = a2[keep], b2[keep]
        pts = ((a2 + b2)[:, None] / 2 + (b2 - a2)[:, None] / 2 * x).ravel()
        wts = ((b2 - a2)[:, None] / 2 * wq).ravel()
        return pts, wts

    def _setup(self) -> None:
        """The convolution points of every grid node (``u`` below the half, ``g`` the
        other term) with their weights, and their interpolation stencils: at node ``i`` the
        grid's panels from the cut to ``u_h = psi(phi(z_i) / 2)`` (the last one clipped
        there), all nodes at once."""
        e, (x, wq) = self.edges, self.gl
        uh = self.psi(self.phz / 2)
        nodes = np.flatnonzero(uh > self.zcut)
        counts = np.searchsorted(e[:-1], uh[nodes], side="left")  # panels below u_h
        starts = np.cumsum(counts) - counts
        pan_node = np.repeat(nodes, counts)
        k = np.arange(counts.sum()) - np.repeat(starts, counts)
        a, b = e[k], np.minimum(e[k + 1], uh[pan_node])
        u = ((a + b)[:, None] / 2 + (b - a)[:, None] / 2 * x).ravel()
        w = ((b - a)[:, None] / 2 * wq).ravel()
        tgt = np.repeat(pan_node, self.n)
        # phi at u: the grid's own values on whole panels (the same points, bit for bit:
        # most of them), Lambert's function on the clipped ones
        whole = np.repeat(e[k + 1] <= uh[pan_node], self.n)
        own = (k[:, None] * self.n + np.arange(self.n)).ravel()

        def points(p: slice) -> tuple[np.ndarray, ...]:
            """Each point alone: its weight, stencils and grid nodes."""
            phu = np.empty(u[p].size)
            whole_p = whole[p]
            phu[whole_p] = self.phz[own[p][whole_p]]
            phu[~whole_p] = self.phi(u[p][~whole_p])
            W = self.phz[tgt[p]]
            g = self.psi(W - phu)
            ku, cu, nu = self.stencil(u[p])
            kg, cg, ng = self.stencil(g)
            wp = w[p] * (W / (1.0 + W)) / self.dphi(g)
            return wp, ku, cu, kg, cg, nu, ng

        # in parts on the process's cores (each point alone: the same bits as one part)
        parts = in_parts(u.size, 1, points, GRID_THREADS_MIN_POINTS)
        self.w, self.ku, self.cu, self.kg, self.cg, self.nu, self.ngn = (
            np.concatenate(a) for a in zip(*parts, strict=True)
        )
        self.ptr = np.searchsorted(tgt, np.arange(self.z.size + 1)).astype(np.int64)

    def oplus(
        self, X: np.ndarray, AX: np.ndarray, Y: np.ndarray, AY: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The convolution of two sums of terms (components (6, ngrid, nt) on the grid and
        their atoms (6, nt) at zero): the continuous part and the atom of the sum."""
        same = X is Y
        X = np.ascontiguousarray(X)
        Y = X if same else np.ascontiguousarray(Y)
        out = np.zeros((len(_PAIRS), *X.shape[1:]))
        ptr = self.ptr

        def run(pts: slice) -> None:
            # the grid nodes whose points begin in pts (the last part: to the grid's end)
            i0, i1 = np.searchsorted(ptr, [pts.start, pts.stop], side="left")
            i1 = ptr.size - 1 if pts.stop == ptr[-1] else i1
            _oplus_kernel(
                X, Y, same, ptr, self.ku, self.cu, self.nu, self.kg, self.cg, self.ngn,
                self.w, self.n, *_KERNEL_TERMS[same][:2], _PAIRS_O, _KERNEL_TERMS[same][2],
                out, i0, i1,
            )  # fmt: skip

        # each grid node's sum alone, its rows of out: in parts of about equal points on
        # the process's cores (the same bits as one part)
        in_parts(int(ptr[-1]), X.shape[2], run, NORMALISER_THREADS_MIN_WORK)
        atoms = np.zeros((len(_PAIRS), X.shape[2]))
        for o, i, j in zip(_PAIRS_O, _PAIRS_I, _PAIRS_J, strict=True):
            out[o] += AX[i] * Y[j] + AY[j] * X[i]
            atoms[o] += AX[i] * AY[j]
        return out, atoms


def _check_panels(npan: int, v: float, wmax: float) -> None:
    """Raise FloatingPointError once the grid of ``v`` has more than
    :data:`MAX_GRID_PANELS` panels (its widest ``wmax``)."""
    if npan > MAX_GRID_PANELS:
        raise FloatingPointError(
            f"normaliser grid: more than {MAX_GRID_PANELS} panels at v = {v:.3g} "
            f"(widest {wmax:.3g}): a state far from any fixed point"
        )


_SQRT2PI = np.sqrt(2.0 * np.pi)


def _gauss(x: np.ndarray, s: float) -> np.ndarray:
    return np.exp(-0.5 * (x / s) ** 2) / (_SQRT2PI * s)


def normaliser_integrals(
    n_clusters: int, s: float, v: float, ma: float, mb: float, order: int = NORMALISER_ORDER
) -> dict:
    """The seven integrals of cluster 0 (module docstring) at one state.

    Parameters
    ----------
    n_clusters : int
        ``K``.
    s : float
        ``sqrt(q)`` (``Q_0 = q I``).
    v : float
        ``V_0 = v I``.
    ma, mb : float
        The mean logits of the own class and of each competitor, ``(P^T M_0)_0`` and
        ``(P^T M_0)_j``.
    order : int
        Gauss-Legendre nodes per panel of the grid in ``z`` and of the rule in ``tau``.

    Returns
    -------
    dict
        ``one`` (the normalisation, 1 up to the discretisation), ``p0``, ``p0sq``,
        ``loss`` (``E[-log p_0]``), ``p0g0``, ``sum_pj2``, ``sum_pjgj`` (unnormalised).
    """
    K = n_clusters
    lo = ma - NSIG * s
    # tau: the common shift of the logits (t >= c_0 - v: the own logit's range and where a
    # competitor can still make p_j >= 1e-6)
    hi = max(ma, mb - np.log(1e-6 / (K - 1))) + NSIG * s
    ntau = (hi - lo) / (TAU_WIDTH * s) if s > 0.0 else np.inf
    if not (v > 0.0 and ntau <= MAX_TAU_PANELS):  # (False at NaN)
        raise FloatingPointError(
            f"normaliser integrals: sqrt(q) = {s:.3g}, v = {v:.3g} and the mean logits "
            f"{ma:.3g}, {mb:.3g} need {ntau:.3g} panels in tau (at most {MAX_TAU_PANELS}): "
            "a state far from any fixed point"
        )
    lv = float(np.log(v))
    zmax1 = mb - lo + NSIG * s
    ymax = (K - 1) * float(wexp(np.array([lv + zmax1]))[0])
    grid = NormaliserGrid(v, order, GRID_WMAX * s, float(np.log(ymax / v) + ymax) + 1.0)
    z, mu0 = grid.z, ma + v
    xg, wg = leggauss(order)
    te = np.linspace(lo, hi, int(np.ceil(ntau)) + 1)
    tau = ((te[:-1] + te[1:])[:, None] / 2 + (te[1:] - te[:-1])[:, None] / 2 * xg).ravel()
    wtau = (np.diff(te)[:, None] / 2 * wg).ravel()
    if z.size * tau.size > MAX_GRID_TAU_NODES or grid.w.size * tau.size > MAX_CONVOLUTION_WORK:
        raise FloatingPointError(
            f"normaliser integrals: sqrt(q) = {s:.3g}, v = {v:.3g} need {z.size} grid "
            f"nodes, {grid.w.size} convolution points and {tau.size} nodes in tau (at most "
            f"{MAX_GRID_TAU_NODES:.0e} grid and {MAX_CONVOLUTION_WORK:.0e} convolution "
            "points times nodes in tau): a state far from any fixed point"
        )
    # one competitor: [f, f phi', f p^2, f p^2 phi', f p g, f p g phi'] on the grid
    f1 = _gauss(z[:, None] + tau[None, :] - mb, s)
    ph = grid.phz[:, None] / v
    dph = (grid.phz / (1.0 + grid.phz))[:, None]  # phi'(z)
    gj = (z[:, None] + tau[None, :] - mb) / s
    base = np.stack([f1, dph * f1, ph**2 * f1, ph**2 * dph * f1, ph * gj * f1, ph * gj * dph * f1])
    A1 = np.zeros((6, tau.size))
    A1[0] = ndtr((grid.zcut + tau - mb) / s)  # the atom: a competitor below the cut
    F, AF = _sum_of_terms(grid, K - 1, base, A1)
    # the own class closes phi(x_0) + Y = v: the half where it is the smaller term
    # (x_0 <= psi(v / 2), Y at psi(v - phi(x_0))) and the half where the competitors are
    # (Y's z = u <= psi(v / 2), x_0 = psi(v - phi(u))); then the atom Y = 0 (x_0 = v)
    dv = float(grid.dphi(np.array([v]))[0])
    xh = float(grid.psi(v / 2))
    u1, w1 = grid.clipped_rule(grid.zcut, xh)
    ext = np.linspace(mu0 - hi - 9.0 * s, grid.zcut, 9)
    x0 = np.concatenate(
        [((a + b) / 2 + (b - a) / 2 * grid.gl[0]) for a, b in zip(ext[:-1], ext[1:])] + [u1]
    )
    w0 = np.concatenate([(b - a) / 2 * grid.gl[1] for a, b in zip(ext[:-1], ext[1:])] + [w1])
    u2, w2 = u1, w1
    with np.errstate(divide="ignore"):  # (a competitor sum of exactly 0 lies off the grid)
        z1 = grid.psi(v - grid.phi(x0))
        x2 = grid.psi(v - grid.phi(u2))
    # (x_0, Y's z, weights, the dependent one of the two: the constraint's Jacobian)
    sides = ((x0, z1, w0, z1), (x2, u2, w2, x2))

    def own_class(which: slice) -> list[list[np.ndarray]]:
        """The seven integrands of the halves ``sides[which]``, each half alone."""
        out = []
        with np.errstate(divide="ignore"):
            for xo, zy, wq, dep in sides[which]:
                Fm = grid.interp(F, zy)  # (6, nx, nt)
                kern = (wq * dv / grid.dphi(dep))[:, None] * _gauss(
                    xo[:, None] + tau[None, :] - mu0, s
                )
                p0 = grid.phi(xo) / v
                d0 = grid.dphi(xo)[:, None]
                g0 = (xo[:, None] + tau[None, :] - mu0) / s
                own = d0 * Fm[0] + Fm[1]
                weights = (np.ones_like(xo), p0, p0**2, p0 * v - xo)  # 1, p_0, p_0^2, -log p_0
                own_terms = [(kern * (a[:, None] * own)).sum(0) for a in weights]
                own_terms.append((kern * (p0[:, None] * g0 * own)).sum(0))
                own_terms.append((kern * (d0 * Fm[2] + Fm[3])).sum(0))  # sum_j p_j^2
                own_terms.append((kern * (d0 * Fm[4] + Fm[5])).sum(0))  # sum_j p_j g_j
                out.append(own_terms)
        return out

    # the two halves at once on the process's cores (each its own)
    parts = in_parts(2, x0.size * tau.size, own_class, HALVES_THREADS_MIN_WORK)
    halves = [h for part in parts for h in part]
    na = _gauss(v + tau - mu0, s) * AF[0] * dv
    atom = [na, na, na, 0.0 * tau, na * (v + tau - mu0) / s, 0.0 * tau, 0.0 * tau]
    jac = 1.0 / v + 1.0  # dt / d(psi(v)) along the constraint
    names = ("one", "p0", "p0sq", "loss", "p0g0", "sum_pj2", "sum_pjgj")
    return {
        k: float(jac * wtau @ (a + b + c))
        for k, a, b, c in zip(names, halves[0], halves[1], atom, strict=True)
    }


def _sum_of_terms(
    grid: NormaliserGrid, m: int, F1: np.ndarray, A1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The components and atom of the sum of ``m`` independent terms of components ``F1``
    and atom ``A1`` by doubling (``F_{2j} = F_j (+) F_j``, one term more where a bit of
    ``m`` is set): ``m - 1`` convolutions in a chain, here 2 at ``m = 3, 4`` and 3 at ``m =
    5`` (the chain took 3 at ``m = 4``), each of two equal operands gathering half the
    grid values (:func:`_oplus_kernel`).  The same integral, discretised otherwise: the
    grid's error is in the estimate (its change under refinement)."""
    out: tuple[np.ndarray, np.ndarray] | None = None
    P, AP = F1, A1
    while True:
        if m & 1:
            out = (P, AP) if out is None else grid.oplus(out[0], out[1], P, AP)
        m >>= 1
        if not m:
            return out
        P, AP = grid.oplus(P, AP, P, AP)


def cluster0_moments(
    P: np.ndarray, M0: np.ndarray, Q0: np.ndarray, V0: np.ndarray, order: int = NORMALISER_ORDER
) -> ChannelMoments:
    """Cluster 0's channel moments (leading axis 1, effective space) from the integrals of
    :func:`normaliser_integrals`, each divided by the computed normalisation.

    With ``f = e_0 - p`` in the label space (eq. (8)'s ``V^{-1}(h - omega)``), ``m =
    K - 1`` competitors and the symmetry among them: ``E[f] = e_0 - E[p]`` with ``E[p_j] =
    (1 - E[p_0]) / m``; ``E[f f^T]`` from ``E[p_0]``, ``E[p_0^2]``, ``S = sum_j E[p_j^2]``
    (``E[p_0 p_j] = (E[p_0] - E[p_0^2]) / m``, ``E[p_j p_k] = (1 - 2 E[p_0] + E[p_0^2] - S)
    / (m (m - 1))``); ``Edf = -E[df / domega] = E[dp / domega] = E[p g^T] / sqrt(q)``
    (Stein's lemma) from ``a = E[p_0 g_0]`` and ``b = sum_j E[p_j g_j] / m`` (``sum_k p_k =
    1`` and ``E[g] = 0`` make every column of ``E[p g^T]`` sum to zero, which fixes the
    rest); the envelope ``E[loss + v |f|^2 / 2]``.
    """
    P = np.asarray(P, dtype=float)
    K = P.shape[1]
    m = K - 1
    L = P.shape[0]
    full = P.T @ M0
    s = float(np.sqrt(np.trace(Q0) / L))
    v = float(np.trace(V0) / L)
    r = normaliser_integrals(K, s, v, float(full[0]), float(full[1:].mean()), order)
    one = r["one"]
    p0, p0sq, S2, loss = r["p0"] / one, r["p0sq"] / one, r["sum_pj2"] / one, r["loss"] / one
    a, b = r["p0g0"] / one, r["sum_pjgj"] / one / m
    Ef = np.full(K, -(1.0 - p0) / m)
    Ef[0] = 1.0 - p0
    Eff = np.empty((K, K))
    Eff[0, 0] = 1.0 - 2.0 * p0 + p0sq
    Eff[0, 1:] = Eff[1:, 0] = -(1.0 - p0) / m + (p0 - p0sq) / m
    Eff[1:, 1:] = (1.0 - 2.0 * p0 + p0sq - S2) / (m * (m - 1))
    Eff[np.arange(1, K), np.arange(1, K)] = S2 / m
    G = np.empty((K, K))  # E[p g^T] in the label space
    G[0, 0] = a
    G[0, 1:] = G[1:, 0] = -a / m
    G[1:, 1:] = (a / m - b) / (m - 1)
    G[np.arange(1, K), np.arange(1, K)] = b
    Eenv = 0.5 * v * (1.0 - 2.0 * p0 + p0sq + S2) + loss
    return ChannelMoments(
        Ef=(P @ Ef)[None],
        Eff=(P @ Eff @ P.T)[None],
        Edf=(P @ (G / s) @ P.T)[None],
        Eloss=np.array([loss]),
        Eenv=np.array([Eenv]),
    )


@dataclass(frozen=True)
class NormaliserRule(QuadratureRule):
    """Cluster 0's cross-entropy channel for exchangeable clusters by integration over the
    softmax normaliser (module docstring), ``order`` Legendre nodes per panel of its grid.

    It computes the channel's moments itself (:meth:`cluster0_moments`, which the solver's
    map calls instead of a quadrature of the prox); its nodes and weights are those of
    ``fallback`` (a rule for cluster 0 of the same dimension), used only by the integrals
    that are not the channel's (the test loss, eq. app:testloss, whose integrand is the loss
    at the Gaussian output itself).  :meth:`refined` adds two nodes per panel and refines a
    deterministic fallback: the change of the observables is the estimate of the
    integration error (a randomised fallback's standard error is added to the test loss's,
    :func:`~gaussmix.theory.solve.refinement.evaluate_observables`).

    Parameters
    ----------
    n_clusters : int
        ``K`` (4 to 6).
    fallback : QuadratureRule
        Cluster 0's rule of dimension ``K - 1`` for the test loss.
    order : int
        Legendre nodes per panel (4 to :data:`NORMALISER_MAX_ORDER`).
    """

    n_clusters: int
    fallback: QuadratureRule = field()  # (required: the base class's default is None)
    order: int = NORMALISER_ORDER
    #: the rule serves cluster 0 of exchangeable clusters only
    needs_symmetry: ClassVar[bool] = True
    #: the moments are this rule's, not a quadrature of the prox at its nodes
    computes_moments: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_int("quadrature n_clusters", self.n_clusters, low=4, high=6)
        check_int("quadrature order", self.order, low=4, high=NORMALISER_MAX_ORDER)
        if self.fallback.dim != self.n_clusters - 1:
            raise ValueError(
                f"quadrature fallback has dimension {self.fallback.dim}, "
                f"K = {self.n_clusters} needs {self.n_clusters - 1}"
            )

    @property
    def dim(self) -> int:  # type: ignore[override]
        """``K - 1``."""
        return self.n_clusters - 1

    @property
    def seed(self) -> int:
        """The fallback's seed (a randomised fallback seeds the observables' estimators)."""
        return int(self.fallback.seed)

    def _rule(self) -> tuple[np.ndarray, np.ndarray]:
        return self.fallback.nodes, self.fallback.weights

    def cluster0_moments(
        self, P: np.ndarray, M0: np.ndarray, Q0: np.ndarray, V0: np.ndarray
    ) -> ChannelMoments:
        """Cluster 0's moments at ``(M_0 + b, Q_0, V_0)`` (:func:`cluster0_moments`)."""
        return cluster0_moments(P, M0, Q0, V0, self.order)

    def coarsened(self) -> NormaliserRule | None:
        """:data:`NORMALISER_COARSE_ORDER` nodes per panel for a continuation start (the
        global part of the iteration at about half the cost of an evaluation at 8 nodes;
        measured at K = 5, alpha = 3, lam = 1e-4: 10 evaluations at 8 nodes from the
        Gauss-Hermite fixed point, 3 to 4 after 10 at 6 nodes; a start at 4 nodes, whose
        ``tau`` rule is 1e-6 off, leaves 4 to 9 at 8 nodes)."""
        if self.order <= NORMALISER_COARSE_ORDER:
            return None
        return replace(self, order=NORMALISER_COARSE_ORDER)

    def refined(self) -> NormaliserRule | None:
        """Two more nodes per panel, and a deterministic fallback's refinement (so that the
        test loss's estimate is its change too; a randomised fallback is kept, its standard
        error is the test loss's own estimate); None beyond :data:`NORMALISER_MAX_ORDER` or
        where a deterministic fallback has no refinement within the solver's cap on a
        rule's nodes (:data:`~gaussmix.theory.numerics.quadrature.MAX_QUADRATURE_NODES`)."""
        fallback = self.fallback if self.fallback.randomised else self.fallback.refined()
        if (
            self.order + 2 > NORMALISER_MAX_ORDER
            or fallback is None
            or fallback.weights.size > MAX_QUADRATURE_NODES
        ):
            return None
        return replace(self, order=self.order + 2, fallback=fallback)

    def limit(self) -> str | None:
        """Why no finer rule exists, or None."""
        if self.refined() is None:
            return (
                f"at most {NORMALISER_MAX_ORDER} nodes per panel, and a refinement of the "
                "test loss's rule within the cap on nodes"
            )
        return None

    def remedy(self) -> str:
        """The advice of a warning."""
        return "pass a finer rule (quadrature=NormaliserRule(K, fallback, order))"

    def describe(self) -> str:
        """Short text for provenance."""
        return (
            f"normaliser(K={self.n_clusters}, order={self.order}; test loss: "
            f"{self.fallback.describe()})"
        )
