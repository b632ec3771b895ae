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
(Theorem 1, eq. spgeneral), as do the test and training errors of Theorem 2 (equal for
every cluster).

Averaging cluster 0's expectations over the relabellings that fix it (and mapping them to
the other clusters) is the same as integrating with the union of the correspondingly
permuted copies of the quadrature rule: a rule of the same accuracy, so the error estimates
of the solver stay honest.

The same reduction is used by the max-margin fixed point of
:mod:`gaussmix.theory.margin` (its ``q Pi, m Pi e_c, v Pi`` parametrisation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .channel import ChannelMoments
from .mixture import Mixture

__all__ = ["ClusterSymmetry", "exchangeable_mixture"]

#: relative tolerance of the equalities that make clusters exchangeable (exact in
#: constructions such as ``Mixture.isotropic``; rounding of user-given Gram matrices)
_EXCHANGEABLE_RTOL = 1e-12


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
        """The symmetry of ``problem`` (a :class:`~gaussmix.theory.problem.Problem`), or None
        where its clusters are not exchangeable: the mixture (:func:`exchangeable_mixture`),
        a loss declaring ``label_equivariant``, the ridge penalty, and at least three
        clusters (with two the effective output is one-dimensional and already cheap)."""
        K = problem.n_clusters
        if K < 3 or problem.l1_ratio is not None:
            return None
        if not getattr(problem.loss, "label_equivariant", False):
            return None
        if not exchangeable_mixture(problem.mixture):
            return None
        P = np.asarray(problem.P, dtype=float)
        if P.shape[1] != K or not np.allclose(problem.y, np.eye(K)):
            return None
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
        label space its components 1..K-1 are replaced by their mean."""
        full = self.P.T @ v
        full[1:] = full[1:].mean()
        return self.P @ full

    def stabilised_matrix(self, A: np.ndarray) -> np.ndarray:
        """Average of an effective matrix (L, L) over the relabellings that fix class 0: in
        the label space, the entries ``(0, j)``, ``(j, 0)``, ``(j, j)`` and ``(j, k)``
        (``j != k``, both ``>= 1``) are each replaced by their mean."""
        full = self.P.T @ A @ self.P
        K = full.shape[0]
        out = np.empty_like(full)
        out[0, 0] = full[0, 0]
        out[0, 1:] = full[0, 1:].mean()
        out[1:, 0] = full[1:, 0].mean()
        rest = full[1:, 1:]
        diag = np.trace(rest) / (K - 1)
        offd = (rest.sum() - np.trace(rest)) / max(1, (K - 1) * (K - 2))
        out[1:, 1:] = offd
        out[np.arange(1, K), np.arange(1, K)] = diag
        return self.P @ out @ self.P.T

    # ----------------------------------------------------------------- to every cluster
    def expand_vectors(self, v0: np.ndarray) -> np.ndarray:
        """Cluster 0's effective vector (L,) mapped to every cluster, (K, L)."""
        return self.R @ v0

    def expand_matrices(self, A0: np.ndarray) -> np.ndarray:
        """Cluster 0's effective matrix (L, L) mapped to every cluster, (K, L, L)."""
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

    def symmetric_state(
        self, Q: np.ndarray, M: np.ndarray, V: np.ndarray, b: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The equivariant state made from cluster 0's order parameters: ``Q_0``, ``V_0``,
        ``M_0`` averaged over the relabellings fixing cluster 0, mapped to every cluster;
        ``b = 0``.  (The identity on equivariant states.)"""
        Q0 = self.stabilised_matrix(Q[0])
        V0 = self.stabilised_matrix(V[0])
        M0 = self.stabilised_vector(M[0])
        return (
            self.expand_matrices(Q0),
            self.expand_vectors(M0),
            self.expand_matrices(V0),
            np.zeros_like(b),
        )
