"""Permutation symmetry of exchangeable clusters: one cluster's integrals stand for all.

*Exchangeable clusters* (isotropic covariances with one shared ``Delta``, balanced priors
``rho_c = 1 / K``, a Gram matrix of the means ``a I + b 11^T``, one-hot labels with class
``c`` for cluster ``c``) are equivalent under every relabelling ``pi`` of the classes.  With
ridge and a loss that is invariant under a common permutation of labels and outputs
(``Loss.label_equivariant``: softmax cross-entropy), the minimiser is unique for ``lam > 0``
(and for ``lam = 0`` where it exists), so the order parameters of Theorem 1 are equivariant:
with ``R_pi = P Pi_pi P^T`` (``P`` the effective output basis, ``Pi_pi`` the permutation
matrix of the labels),

    Q_pi(c) = R_pi Q_c R_pi^T,  V_pi(c) = R_pi V_c R_pi^T,  M_pi(c) = R_pi M_c,  b = R_pi b,

hence ``b = 0`` (no non-zero vector of the complement of ``1`` is invariant) and cluster 0
determines every other one; its own order parameters are invariant under the relabellings
that fix it.  The channel expectations of cluster ``c = pi(0)`` are those of cluster 0
mapped by ``R_pi``: the hat parameters cost one cluster's integral instead of ``K``
(Theorem 1, eq. (8)), as do the test and training errors of Theorem 2 (equal for
every cluster).

Averaging cluster 0's expectations over the relabellings that fix it (and mapping them to
the other clusters) is the same as integrating with the union of the correspondingly
permuted copies of the quadrature rule: a rule of the same accuracy, so the error estimates
of the solver stay honest.

The same reduction is used by the max-margin fixed point of
:mod:`gaussmix.theory.limits.margin` (its ``q Pi, m Pi e_c, v Pi`` parametrisation).

Cluster 0's channel rule
------------------------
Cluster 0's integrand is the same function of the competitors' coordinates in any order
(after the averaging above), so a tensor rule needs only its sorted multi-indices, each
weighted by its multiplicity: :class:`ExchangeablePanels` integrates over
``y_j = g_j - g_0`` (``j = 1..K-1``), where ``omega = M_0 + sqrt(q) P g``, ``g ~ N(0, I_K)``
(``P g`` is ``N(0, I_{K-1})`` and depends on ``g`` only through ``y``, whose law is
``N(0, I + 11^T)``).  In these coordinates the regime changes of the cross-entropy
proximal map at small ``lam`` (a competitor's logit entering the softmax) are hyperplanes
``y_j = const``, one per competitor and at the same place for all, which the graded panels
of one shared one-dimensional grid resolve (the integrand is analytic in a strip of
half-width ``~ pi / sqrt(q)`` about them, where the prox's Lambert-W form is singular);
:func:`symmetric_rule` grades them away from that margin.  It serves K = 3 and 4
(:data:`EXCHANGEABLE_PANEL_DIMS`, with the panels of :data:`EXCHANGEABLE_AUTO`); beyond,
the sorted multi-indices are too many: cross-entropy at K = 5, 6 is integrated over the
softmax normaliser instead (:mod:`gaussmix.theory.channel.normaliser`, which also takes over K = 4
where this rule's estimate would warn), other losses keep the randomised rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from math import factorial
from typing import ClassVar

import numpy as np
from scipy.optimize import brentq

from gaussmix.core.memo import IdentityMemo
from gaussmix.core.validation import check_int, check_real

from ..channel.channel import ChannelMoments
from ..channel.normaliser import NormaliserRule, normaliser_serves
from ..model.mixture import Mixture
from ..numerics.linalg import complement_of_ones
from ..numerics.quadrature import PANEL_GRADE, QuadratureRule, composite_legendre, graded_line
from ..numerics.tolerances import XI_MAX

__all__ = ["ClusterSymmetry", "ExchangeablePanels", "exchangeable_mixture", "symmetric_rule"]

#: relative tolerance of the equalities that make clusters exchangeable (exact in
#: constructions such as ``Mixture.isotropic``; rounding of user-given Gram matrices)
_EXCHANGEABLE_RTOL = 1e-12


#: the symmetries made by :meth:`ClusterSymmetry.of_outputs`, by the mixture's identity (the
#: mixtures of the last 16 solves' problems; a mixture is not modified once made) and the
#: outputs' values
_SYMMETRIES = IdentityMemo(16)


def exchangeable_mixture(mixture: Mixture) -> bool:
    """Whether all clusters of ``mixture`` are equivalent under relabelling: one isotropic
    atom with one shared variance, balanced priors, one-hot labels with class ``c`` for
    cluster ``c`` and a Gram matrix of the means ``a I + b 11^T``.

    Parameters
    ----------
    mixture : Mixture

    Returns
    -------
    bool
    """
    K = mixture.n_clusters
    labels = mixture.labels
    if mixture.n_atoms != 1 or mixture.mu is not None or not labels.is_onehot:
        return False
    if labels.dim != K or not np.array_equal(labels.labels, np.eye(K)):
        return False
    sig = mixture.sigma[0]
    th = mixture.theta[0]
    off = th[~np.eye(K, dtype=bool)]
    rtol = _EXCHANGEABLE_RTOL
    return bool(
        np.allclose(sig, sig[0], rtol=rtol, atol=0)
        and np.allclose(mixture.rho, 1.0 / K, rtol=rtol, atol=0)
        and np.allclose(np.diag(th), th[0, 0], rtol=rtol, atol=1e-15)
        and (off.size == 0 or np.allclose(off, off[0], rtol=rtol, atol=1e-15))
    )


@dataclass(frozen=True, eq=False)
class ClusterSymmetry:
    """The relabelling symmetry of a problem with exchangeable clusters (module docstring).

    Attributes
    ----------
    P : ndarray (L, K)
        The problem's effective output basis (rows orthonormal).
    R : ndarray (K, L, L)
        ``R[c] = P Pi P^T`` for the transposition ``Pi`` of classes 0 and ``c`` (``R[0] = I``):
        maps cluster 0's effective quantities to cluster ``c``'s.
    """

    P: np.ndarray
    R: np.ndarray

    @classmethod
    def of(cls, problem) -> ClusterSymmetry | None:
        """The symmetry of ``problem`` (a :class:`~gaussmix.theory.problem.problem.Problem`), or
        None where its clusters are not exchangeable (:meth:`of_outputs` of its mixture,
        loss, penalty and outputs).  A problem made by
        :func:`~gaussmix.theory.problem.problem.build_problem` holds its own
        (``Problem.symmetry``, made once and shared by its copies at other ``lam`` and
        ``alpha``)."""
        p = problem
        return cls.of_outputs(p.mixture, p.loss, p.l1_ratio, p.P, p.y)

    @classmethod
    def of_outputs(
        cls, mixture: Mixture, loss, l1_ratio: float | None, P: np.ndarray, y: np.ndarray
    ) -> ClusterSymmetry | None:
        """The symmetry of the clusters of ``mixture`` with the (effective) ``loss``, the
        penalty's ``l1_ratio`` (None: ridge), the effective output basis ``P`` and the
        labels ``y``, or None where they are not exchangeable: the mixture
        (:func:`exchangeable_mixture`), a loss declaring ``label_equivariant``, the ridge
        penalty, and at least three clusters (with two the effective output is
        one-dimensional and already cheap).  It depends on neither ``lam`` nor ``alpha``."""
        K = mixture.n_clusters
        if K < 3 or l1_ratio is not None:
            return None
        if not getattr(loss, "label_equivariant", False):
            return None
        P = np.asarray(P, dtype=float)
        y = np.asarray(y)
        # (remembered by the mixture's identity and the outputs' values: the same answer,
        # made once for the solves of one mixture rather than a third of a millisecond
        # each, the tests of exchangeability being a dozen numpy calls)
        key = (P.shape, P.tobytes(), y.shape, y.dtype.str, y.tobytes())
        return _SYMMETRIES.get(mixture, key, lambda: cls._of_exchangeable(mixture, P, y))

    @classmethod
    def _of_exchangeable(
        cls, mixture: Mixture, P: np.ndarray, y: np.ndarray
    ) -> ClusterSymmetry | None:
        """:meth:`of_outputs` past the loss's and the penalty's tests: the mixture's and
        the outputs' (``P`` float, read-only copies kept)."""
        K = mixture.n_clusters
        if not exchangeable_mixture(mixture):
            return None
        if P.shape[1] != K or not np.allclose(y, np.eye(K)):
            return None
        P = P.copy()
        P.setflags(write=False)
        R = np.empty((K, P.shape[0], P.shape[0]))
        for c in range(K):
            perm = np.arange(K)
            perm[[0, c]] = perm[[c, 0]]
            R[c] = P[:, perm] @ P.T  # P Pi P^T with Pi e_i = e_perm(i)
        R.setflags(write=False)
        return cls(P, R)

    @property
    def n_clusters(self) -> int:
        """Number of clusters ``K``."""
        return int(self.R.shape[0])

    # ----------------------------------------------------------------- cluster 0's symmetry
    def stabilised_vector(self, v: np.ndarray) -> np.ndarray:
        """Average of an effective vector (L,) over the relabellings that fix class 0: in the
        label space its components 1..K-1 are replaced by their mean.  A leading axis of
        points (P, L) (the stacked curves of :mod:`gaussmix.theory.solve.batch`) averages
        each point's."""
        if v.ndim > 1:
            full = v @ self.P
            full[..., 1:] = full[..., 1:].mean(axis=-1, keepdims=True)
            return full @ self.P.T
        full = self.P.T @ v
        full[1:] = full[1:].mean()
        return self.P @ full

    def stabilised_matrix(self, A: np.ndarray) -> np.ndarray:
        """Average of an effective matrix (L, L) over the relabellings that fix class 0: in
        the label space, the entries ``(0, j)``, ``(j, 0)``, ``(j, j)`` and ``(j, k)``
        (``j != k``, both ``>= 1``) are each replaced by their mean.  A leading axis of
        points (P, L, L) averages each point's."""
        full = self.P.T @ A @ self.P
        K = full.shape[-1]
        if A.ndim > 2:
            out = np.empty_like(full)
            out[..., 0, 0] = full[..., 0, 0]
            out[..., 0, 1:] = full[..., 0, 1:].mean(axis=-1, keepdims=True)
            out[..., 1:, 0] = full[..., 1:, 0].mean(axis=-1, keepdims=True)
            rest = full[..., 1:, 1:]
            trace = np.trace(rest, axis1=-2, axis2=-1)
            offd = (rest.sum(axis=(-2, -1)) - trace) / max(1, (K - 1) * (K - 2))
            out[..., 1:, 1:] = offd[..., None, None]
            out[..., np.arange(1, K), np.arange(1, K)] = (trace / (K - 1))[..., None]
            return self.P @ out @ self.P.T
        # (each mean as its sum over the count, ``np.mean``'s own sums and division, and the
        # trace once: the same numbers without their calls' Python work, at every K = 3
        # evaluation)
        out = np.empty_like(full)
        out[0, 0] = full[0, 0]
        out[0, 1:] = full[0, 1:].sum() / (K - 1)
        out[1:, 0] = full[1:, 0].sum() / (K - 1)
        rest = full[1:, 1:]
        trace = rest.trace()
        diag = trace / (K - 1)
        offd = (rest.sum() - trace) / max(1, (K - 1) * (K - 2))
        out[1:, 1:] = offd
        out.ravel()[K + 1 :: K + 1] = diag  # (the diagonal's entries (j, j), j >= 1)
        return self.P @ out @ self.P.T

    # ----------------------------------------------------------------- to every cluster
    def expand_vectors(self, v0: np.ndarray) -> np.ndarray:
        """Cluster 0's effective vector (L,) mapped to every cluster, (K, L); of each of
        ``P`` points (P, L), (P, K, L)."""
        if v0.ndim > 1:
            return (self.R @ v0[:, None, :, None])[..., 0]
        return self.R @ v0

    def expand_matrices(self, A0: np.ndarray) -> np.ndarray:
        """Cluster 0's effective matrix (L, L) mapped to every cluster, (K, L, L); of each
        of ``P`` points (P, L, L), (P, K, L, L); likewise with more leading axes."""
        if A0.ndim > 2:
            A0 = A0[..., None, :, :]
        return self.R @ A0 @ np.swapaxes(self.R, 1, 2)

    def expand_moments(self, mom0: ChannelMoments) -> ChannelMoments:
        """Cluster 0's channel expectations (arrays with a leading axis of length 1),
        averaged over the relabellings that fix it and mapped to every cluster."""
        K = self.n_clusters
        return ChannelMoments(
            Ef=self.expand_vectors(self.stabilised_vector(mom0.Ef[0])),
            Eff=self.expand_matrices(self.stabilised_matrix(mom0.Eff[0])),
            Edf=self.expand_matrices(self.stabilised_matrix(mom0.Edf[0])),
            Eloss=np.full(K, float(mom0.Eloss[0])),
            Eenv=np.full(K, float(mom0.Eenv[0])),
        )

    def expand_point_moments(self, mom0: ChannelMoments) -> ChannelMoments:
        """:meth:`expand_moments` of the cluster 0 of each of ``P`` points (the rows of
        ``mom0``, a leading axis of length ``P``): the moments of the ``P K`` clusters of
        the points, point after point (the stacked curves of
        :mod:`gaussmix.theory.solve.batch`)."""
        K = self.n_clusters
        n = mom0.Ef.shape[0]
        L = mom0.Ef.shape[-1]
        Eff, Edf = self._expanded_points(mom0.Eff, mom0.Edf)
        return ChannelMoments(
            Ef=self.expand_vectors(self.stabilised_vector(mom0.Ef)).reshape(n * K, L),
            Eff=Eff.reshape(n * K, L, L),
            Edf=Edf.reshape(n * K, L, L),
            Eloss=np.repeat(mom0.Eloss, K),
            Eenv=np.repeat(mom0.Eenv, K),
        )

    def symmetric_state(
        self, Q: np.ndarray, M: np.ndarray, V: np.ndarray, b: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The equivariant state made from cluster 0's order parameters: ``Q_0``, ``V_0``,
        ``M_0`` averaged over the relabellings fixing cluster 0, mapped to every cluster;
        ``b = 0``.  (The identity on equivariant states.)  With a leading axis of points
        (``Q`` (P, K, L, L), ``M`` (P, K, L), ...), each point's."""
        M0 = self.stabilised_vector(M[..., 0, :])
        if Q.ndim > 3:  # points: both overlaps in one stacked call
            Qs, Vs = self._expanded_points(Q[..., 0, :, :], V[..., 0, :, :])
            return Qs, self.expand_vectors(M0), Vs, np.zeros_like(b)
        Q0 = self.stabilised_matrix(Q[..., 0, :, :])
        V0 = self.stabilised_matrix(V[..., 0, :, :])
        return (
            self.expand_matrices(Q0),
            self.expand_vectors(M0),
            self.expand_matrices(V0),
            np.zeros_like(b),
        )

    def _expanded_points(self, *mats: np.ndarray) -> tuple[np.ndarray, ...]:
        """``expand_matrices(stabilised_matrix(A))`` of each of the arrays ``mats`` of
        cluster 0's matrices of ``P`` points (P, L, L), as (P, K, L, L), in one stacked call
        (the same operations on each matrix as one call per array: the same bits, a
        fraction of the fixed cost of the calls on the stacked curves)."""
        return tuple(self.expand_matrices(self.stabilised_matrix(np.stack(mats))))


# --------------------------------------------------------------------------- cluster 0's rule
#: output dimensions (``K - 1``) where the automatic rule of the sharp regime for exchangeable
#: clusters is :class:`ExchangeablePanels` (beyond, its sorted multi-indices are too many:
#: at K = 5, 8 panels are 1.1e5 nodes and one point took 8 s, so K >= 5 keeps the
#: randomised rule, or, for cross-entropy, the integration over the softmax normaliser)
EXCHANGEABLE_PANEL_DIMS = (2, 3)
#: default panels and nodes per panel of :class:`ExchangeablePanels` (K = 4: 27087 nodes; its
#: refinement, 10 nodes per panel, 52286).  Measured at the Fig. 3 point K = 4, Delta = 0.5,
#: lam = 1e-4 against 27 panels of 8 nodes (1.05e6 nodes): 8 panels of 6 nodes are within
#: 2.1e-6 (test error) and 9.4e-7 (training loss) at alpha = 3 and 6.5, of 8 nodes within
#: 4.1e-8 and 2.4e-7 (the iteration's tolerance)
EXCHANGEABLE_PANELS = 8
EXCHANGEABLE_ORDER = 8
#: panels and nodes per panel of the automatic :class:`ExchangeablePanels` by output
#: dimension (:func:`symmetric_rule`).  K = 3 (two dimensions, ``n (n + 1) / 2`` sorted
#: pairs) affords 32 panels: measured at lam = 1e-4, Delta = 0.5 against 48 panels of 16
#: nodes, 32 panels of 8 nodes are within 2.2e-8 (training loss; 1.9e-9 test error) at
#: alpha = 2, 3.64, 3.94, 4.08, alpha*_3 = 4.22, 4.3 and 6, where 16 panels of 10 nodes
#: were 1.5e-5 off at alpha = 4.08 (two logits in the softmax: the entry of the third is
#: an oblique line the sinh grading covers only with more panels), 24 of 12 3.3e-6; 25 000
#: nodes, 0.1 to 0.2 s a solve; the refinement (10 nodes) has 40 000, within the cap
EXCHANGEABLE_AUTO = {2: (32, 8), 3: (EXCHANGEABLE_PANELS, EXCHANGEABLE_ORDER)}
#: total Gaussian mass dropped with the smallest weights of :class:`ExchangeablePanels`
#: (the channel's integrands are bounded or grow linearly in ``xi``)
EXCHANGEABLE_PRUNE_MASS = 1e-12
#: half-width of the line of :class:`ExchangeablePanels` in ``y_j = g_j - g_0`` (variance 2),
#: ``XI_MAX sqrt(2)`` as for the other panel rules (the pruning of the smallest weights,
#: not the line, bounds the nodes: a narrower line, ``7.5 sqrt(2)``, kept more of them)
Y_MAX = XI_MAX * np.sqrt(2.0)
#: width of the first panels of the automatic :class:`ExchangeablePanels` about the
#: entry margin, in units of ``pi / sqrt(q)`` (:func:`symmetric_rule`).  Measured at K = 4,
#: lam = 1e-4, alpha = 4 (q = 527, near alpha*_4 = 4.69), training loss against the best
#: estimate 0.027856: 8 panels of 10 nodes 2e-6 off with 2, 3e-5 with 1 and 4e-5
#: without centring
EXCHANGEABLE_SCALE = 2.0
#: smallest first panel of the automatic :class:`ExchangeablePanels`: the refined K = 4
#: rule then stays within the solver's 60 000 nodes (59 522 at scale 0.2; 62 000 at 0.02),
#: so the error estimate always has its refinement (``q`` up to ~1000)
EXCHANGEABLE_MIN_SCALE = 0.2


def _sorted_multi_indices(n: int, m: int) -> np.ndarray:
    """All ``i_1 <= ... <= i_m`` in ``range(n)``, shape (C(n+m-1, m), m)."""
    idx = np.arange(n)[:, None]
    for _ in range(m - 1):
        last = idx[:, -1]
        cnt = n - last
        rows = np.repeat(np.arange(idx.shape[0]), cnt)
        offs = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        idx = np.concatenate([idx[rows], (np.repeat(last, cnt) + offs)[:, None]], axis=1)
    return idx


def _centred_edges(panels: int, half_width: float, centre: float, scale: float) -> np.ndarray:
    """Edges of ``panels`` panels on ``[-half_width, half_width]``, half on each side of
    ``centre``, geometrically graded away from it: ``centre +- a_s sinh(b_s k / n)`` with
    the first panel ``scale`` wide on both sides (``a_s b_s / n = scale``) and the last edge
    at the end of the line (``a_s sinh(b_s) = `` its distance from the centre)."""
    n = panels // 2
    sides = []
    for length in (centre + half_width, half_width - centre):
        ratio = length / (n * scale)
        k = np.arange(n + 1) / n
        if ratio <= 1.0 + 1e-12:  # too short to grade: uniform panels
            sides.append(length * k)
            continue
        b = brentq(lambda b, r=ratio: np.sinh(b) / b - r, 1e-9, 700.0, xtol=1e-14)
        sides.append(length * np.sinh(b * k) / np.sinh(b))
    return np.concatenate([centre - sides[0][::-1], centre + sides[1][1:]])


@lru_cache(maxsize=16)
def _exchangeable_rule(
    n_clusters: int, panels: int, order: int, grade: float, centre: float, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    m = n_clusters - 1
    half_width = Y_MAX
    if scale > 0.0:
        x, w = composite_legendre(_centred_edges(panels, half_width, centre, scale), order)
    else:
        x, w = graded_line(panels, order, grade, half_width)
    idx = _sorted_multi_indices(x.size, m)
    y = x[idx]
    # multiplicity m! / prod(run lengths!) of each sorted multi-index
    runs = np.ones(idx.shape[0])
    cur = np.ones(idx.shape[0])
    for j in range(m - 1):
        same = idx[:, j + 1] == idx[:, j]
        cur = np.where(same, cur + 1.0, 1.0)
        runs *= np.where(same, cur, 1.0)
    # density of N(0, I + 11^T) at y: (I + 11^T)^{-1} = I - 11^T / K, det = K
    quad = np.einsum("ij,ij->i", y, y) - y.sum(axis=1) ** 2 / n_clusters
    dens = np.exp(-0.5 * quad) / ((2.0 * np.pi) ** (m / 2) * np.sqrt(n_clusters))
    weights = np.prod(w[idx], axis=1) * dens * (factorial(m) / runs)
    order_ = np.argsort(weights)
    drop = order_[np.cumsum(weights[order_]) < EXCHANGEABLE_PRUNE_MASS]
    keep = np.ones(weights.size, dtype=bool)
    keep[drop] = False
    y, weights = y[keep], weights[keep]
    g = np.concatenate([np.zeros((y.shape[0], 1)), y], axis=1)
    nodes = np.ascontiguousarray(g @ complement_of_ones(n_clusters).T)
    weights = weights / weights.sum()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@dataclass(frozen=True)
class ExchangeablePanels(QuadratureRule):
    """Cluster 0's channel rule for exchangeable clusters (module docstring): graded
    composite Gauss-Legendre panels in the competitor coordinates ``y_j = g_j - g_0``, on
    sorted multi-indices with their multiplicities (``(K-1)!`` times fewer nodes than the
    tensor product), Gaussian weight ``N(0, I + 11^T)``.

    Valid only for integrands invariant under permutations of the competitors, i.e. for
    cluster 0's expectations averaged over the relabellings that fix it
    (:meth:`ClusterSymmetry.expand_moments`): the solver accepts it only with the symmetry
    of exchangeable clusters.  :meth:`refined` adds two nodes per panel (a genuinely finer
    rule of the same family, exponentially convergent on panels where the integrand is
    analytic: the change under refinement is the error estimate).

    Parameters
    ----------
    n_clusters : int
        ``K`` (3 to 6); the rule's dimension is ``K - 1``.
    panels : int
        Panels of the one-dimensional grid on ``[-Y_MAX, Y_MAX]`` (:data:`Y_MAX`), graded
        by a sinh map (narrowest at the centre), 2 to 64.
    order : int
        Gauss-Legendre nodes per panel (2 to 20).
    grade : float
        The sinh grading of the panels where ``scale`` is 0.
    centre, scale : float
        With ``scale > 0`` (and an even number of panels) the panels are graded away from
        ``centre`` instead (``|centre| <= Y_MAX / 2``), half on each side, the first two
        ``scale`` wide (the automatic rule, :func:`symmetric_rule`, puts them where a
        competitor enters the softmax).
    """

    n_clusters: int
    panels: int = EXCHANGEABLE_PANELS
    order: int = EXCHANGEABLE_ORDER
    grade: float = PANEL_GRADE
    centre: float = 0.0
    scale: float = 0.0
    #: the rule integrates only competitor-symmetric integrands (see above)
    needs_symmetry: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_int("quadrature n_clusters", self.n_clusters, low=3, high=6)
        check_int("quadrature panels", self.panels, low=2, high=64)
        check_int("quadrature order", self.order, low=2, high=20)
        check_real("quadrature centre", self.centre, low=-0.5 * Y_MAX, high=0.5 * Y_MAX)
        check_real("quadrature scale", self.scale, low=0.0)
        if self.scale > 0.0 and self.panels % 2:
            raise ValueError(f"quadrature panels must be even with a scale, got {self.panels}")

    @property
    def dim(self) -> int:  # type: ignore[override]
        """``K - 1``."""
        return self.n_clusters - 1

    def _rule(self) -> tuple[np.ndarray, np.ndarray]:
        return _exchangeable_rule(
            self.n_clusters, self.panels, self.order, self.grade, self.centre, self.scale
        )  # nodes in the effective output space; weights with the multiplicities

    def refined(self) -> ExchangeablePanels | None:
        """Two more nodes per panel (None beyond 20)."""
        return None if self.order + 2 > 20 else replace(self, order=self.order + 2)

    def coarsened(self) -> ExchangeablePanels | None:
        """Half the panels (at least 4) for a continuation start."""
        return replace(self, panels=self.panels // 2) if self.panels >= 8 else None

    def limit(self) -> str | None:
        """Why no finer rule exists, or None."""
        return None if self.refined() is not None else "at most 20 nodes per panel"

    def remedy(self) -> str:
        """The advice of a warning."""
        return "pass a finer rule (quadrature=ExchangeablePanels(K, panels))"

    def describe(self) -> str:
        """Short text for provenance."""
        where = f"centre={self.centre:.4g}, scale={self.scale:.4g}, " if self.scale > 0 else ""
        return (
            f"exchangeable-panels(K={self.n_clusters}, panels={self.panels}, "
            f"order={self.order}, {where}nodes={self.weights.size})"
        )


def symmetric_rule(
    problem, rule: QuadratureRule, Q: np.ndarray, M: np.ndarray, V: np.ndarray
) -> QuadratureRule:
    """The automatic sharp-regime rule ``rule`` for a problem whose clusters are
    exchangeable (:meth:`ClusterSymmetry.of` is not None), given the state ``(Q, M, V)``
    (effective space, the solution with the smooth-regime rule): :class:`ExchangeablePanels`
    where the dimension is in :data:`EXCHANGEABLE_PANEL_DIMS`, centred on the margin where a
    competitor enters the softmax; for cross-entropy at K = 5, 6 the integration over the
    softmax normaliser (:class:`~gaussmix.theory.channel.normaliser.NormaliserRule`, with ``rule``
    for the test loss); else ``rule`` (the randomised rule of
    :func:`~gaussmix.theory.numerics.quadrature.auto_rule`).

    With ``Q_0 = q I``, ``V_0 = v I`` (exchangeable clusters) the prox solves
    ``h_k + v p_k = c_k`` (``c = omega + v e_0``), so ``p_j = W(v e^{c_j - t}) / v`` with
    ``t`` the log-normaliser (``W`` Lambert's): competitor ``j`` enters where
    ``omega_j - omega_0 ~ -1 - log v``, i.e. ``y_j = (M_00 - M_0j - 1 - log v) / sqrt(q)``,
    and the integrand is analytic within ``~ pi / sqrt(q)`` of it (the branch point of
    ``W`` at ``-1/e``).  The panels are graded away from there, the first
    :data:`EXCHANGEABLE_SCALE` ``pi / sqrt(q)`` wide."""
    if rule.dim not in EXCHANGEABLE_PANEL_DIMS:
        if normaliser_serves(problem):  # K = 5, 6 cross-entropy
            return NormaliserRule(problem.n_clusters, fallback=rule)
        return rule
    L = rule.dim
    q = float(np.trace(Q[0])) / L
    v = float(np.trace(V[0])) / L
    full = np.asarray(problem.P).T @ M[0]
    margin = float(full[0] - full[1:].mean())
    half = 0.5 * Y_MAX
    centre = float(np.clip((margin - 1.0 - np.log(v)) / np.sqrt(q), -half, half))
    scale = max(EXCHANGEABLE_SCALE * np.pi / np.sqrt(q), EXCHANGEABLE_MIN_SCALE)
    panels, order = EXCHANGEABLE_AUTO[L]
    return ExchangeablePanels(problem.n_clusters, panels, order, centre=centre, scale=scale)
