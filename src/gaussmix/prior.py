"""The "prior" half of the fixed point: from hat parameters to ``Q_c, M_c, V_c``.

Ridge penalty ``r(W) = ||W||_F^2 / 2`` on a spectral mixture (Corollary 1, eq. corr1,
generalised to L x L blocks, with the sum inside the inverse over ``sigma^kappa Vhat_kappa``
— DESIGN.md pitfall 3).  On atom ``j`` of the spectral law the weight row ``G_j`` (L) is
Gaussian with mean ``A_j^{-1} B_j`` and covariance ``A_j^{-1} C_j A_j^{-1}``, where

    A_j = lam I + sum_k sigma_j^k Vhat_k,
    B_j = sum_k mu^k Mhat_k,            E[B_j B_j^T] = sum_kk' theta_j^{kk'} Mhat_k Mhat_k'^T,
    C_j = sum_k sigma_j^k Qhat_k,

so that ``Q_k = E_j[sigma^k A^{-1}(B B^T + C) A^{-1}]``, ``M_k = E_j[mu^k A^{-1} B]``,
``V_k = E_j[sigma^k A^{-1}]``.  The isotropic mixture is the one-atom case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mixture import Mixture

__all__ = ["PriorResult", "ridge_prior"]


@dataclass
class PriorResult:
    """Overlaps from the prior, plus the prior part of the free energy.

    Attributes
    ----------
    Q, V : ndarray (K, L, L); M : ndarray (K, L)
    psi_w : float
        ``Psi_w = (1/d) E min_W [lam r(W) + 1/2 sum_k tr(Vhat_k W Sigma_k W^T) - <W, B>]``
        (zero-temperature prior potential; its derivatives are ``Q_k/2``, ``-M_k``, ``-V_k/2``
        with respect to ``Vhat_k``, ``Mhat_k``, ``Qhat_k``).
    penalty : float
        ``E[r(W*)] / d`` at these hat parameters.
    """

    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    psi_w: float
    penalty: float


def ridge_prior(
    mixture: Mixture,
    lam: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    P: np.ndarray | None = None,
) -> PriorResult:
    """Ridge prior update on a spectral mixture (Corollary 1, L x L blocks).

    Parameters
    ----------
    mixture : Mixture
    lam : float
        Penalty strength (may be 0 when ``sum_k sigma^k Vhat_k`` is invertible).
    Qhat, Vhat : ndarray (K, L, L); Mhat : ndarray (K, L)
        Hat parameters in the effective output space.
    P : unused
        Kept for signature symmetry with other priors.
    """
    w = mixture.weights
    sig = mixture.sigma
    th = mixture.theta
    L = Mhat.shape[-1]
    A = lam * np.eye(L) + np.einsum("jk,kab->jab", sig, Vhat)
    Ainv = np.linalg.inv(A)
    Ainv = 0.5 * (Ainv + np.swapaxes(Ainv, 1, 2))
    X = np.einsum("jkl,ka,lb->jab", th, Mhat, Mhat) + np.einsum("jk,kab->jab", sig, Qhat)
    AXA = Ainv @ X @ Ainv
    Q = np.einsum("j,jk,jab->kab", w, sig, AXA)
    V = np.einsum("j,jk,jab->kab", w, sig, Ainv)
    M = np.einsum("j,jab,jkl,lb->ka", w, Ainv, th, Mhat)
    psi_w = -0.5 * float(np.einsum("j,jab,jba->", w, Ainv, X))
    penalty = 0.5 * float(np.einsum("j,jaa->", w, AXA))
    Q = 0.5 * (Q + np.swapaxes(Q, 1, 2))
    V = 0.5 * (V + np.swapaxes(V, 1, 2))
    return PriorResult(Q=Q, M=M, V=V, psi_w=psi_w, penalty=penalty)
