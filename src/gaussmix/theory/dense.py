"""Ridge prior on general covariances (Appendix C, the l2 case, with the units of Appendix B).

For ``r(W) = ||W||_F^2 / 2`` the prior potential is a Gaussian integral.  With ``W`` (L x d)
flattened row by row (index ``(a, i)``, output ``a`` outer) and

    A = lam I_L (x) I_d + sum_k Vhat_k (x) Sigma_k,          S = A^{-1}       (Ld x Ld),
    m = sum_k Mhat_k (x) mu_k,                               u = S m,
    C = sum_k Qhat_k (x) Sigma_k,

the minimiser of ``lam r(W) + 1/2 sum_k tr(Vhat_k W Sigma_k W^T) - <W, B>`` with the replica
field ``B = sqrt(d) sum_k Mhat_k mu_k^T + N``, ``Cov(vec N) = C`` (Appendix B, eq. of
``Psi_w``), is ``vec W = S vec B``: Gaussian with mean ``sqrt(d) u`` and covariance ``S C S``.
Hence, with ``U = u`` reshaped to (L, d) and ``ptr_k(X)[a, b] = <X_ab, Sigma_k>`` the partial
trace of an (Ld x Ld) matrix against ``Sigma_k`` (``X_ab``: its d x d block ``(a, b)``),

    Q_k = E[W Sigma_k W^T] / d = U Sigma_k U^T + ptr_k(S C S) / d,
    M_k = E[W] mu_k / sqrt(d)  = U mu_k,
    V_k = ptr_k(S) / d,
    Psi_w = -E[vec B^T S vec B] / (2 d) = -(m . u) / 2 - <S, C> / (2 d),
    E[r(W*)] / d = |u|^2 / 2 + tr(S C S) / (2 d).

These are Appendix C's ``Q_k, M_k, V_k`` with the ``sqrt(d)`` of the replica mean term
(Theorem 1 as printed omits it; DESIGN.md pitfall 9) and, for covariances with common
eigenvectors ``v_i`` and ``mu^k_i = sqrt(d) mu_k . v_i``, exactly Corollary 1.

Linear algebra per call: one Cholesky factorisation of ``A`` and the inverse from it
(LAPACK ``potrf`` / ``potri``: the partial traces need the entries of ``S``, so a solve does
not suffice), two matrix products for ``S C S``, and ``O(K L^2 d^2)`` for everything else.
No covariance is inverted or assumed invertible: ``lam > 0`` makes ``A`` positive definite.
The ``O((Ld)^3)`` cost does not depend on K.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

from .mixture import DenseCovariance

__all__ = ["DenseRidgeTerms", "dense_ridge_terms"]


@dataclass(frozen=True)
class DenseRidgeTerms:
    """The ridge prior on a dense structure (module docstring).

    Attributes
    ----------
    Q, V : ndarray (K, L, L); M : ndarray (K, L)
    psi_w, penalty : float
        ``Psi_w`` and ``E[r(W*)] / d`` (NaN unless asked for).
    weight_mean, weight_var : ndarray (L, d) or None
        Mean ``sqrt(d) u`` and variance ``diag(S C S)`` of each component of ``W*``
        (asked for with ``details``).
    """

    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    psi_w: float = float("nan")
    penalty: float = float("nan")
    weight_mean: np.ndarray | None = None
    weight_var: np.ndarray | None = None


def _kron_sum(coef: np.ndarray, cov: DenseCovariance) -> np.ndarray:
    """``sum_k coef_k (x) Sigma_k`` (Ld x Ld) for ``coef`` (K, L, L)."""
    K, L, _ = coef.shape
    d = cov.dim
    if L == 1:
        return (coef[:, 0, 0] @ cov.flat).reshape(d, d)
    blocks = (coef.reshape(K, L * L).T @ cov.flat).reshape(L, L, d, d)
    return np.ascontiguousarray(blocks.transpose(0, 2, 1, 3)).reshape(L * d, L * d)


def _partial_traces(X: np.ndarray, cov: DenseCovariance, L: int) -> np.ndarray:
    """``ptr_k(X)[a, b] = <X_ab, Sigma_k>`` (K, L, L) for a symmetric ``X`` (Ld x Ld)."""
    d = cov.dim
    if L == 1:
        return (cov.flat @ X.reshape(-1)).reshape(-1, 1, 1)
    blocks = np.ascontiguousarray(X.reshape(L, d, L, d).transpose(0, 2, 1, 3))
    out = (blocks.reshape(L * L, d * d) @ cov.flat.T).T.reshape(-1, L, L)
    return 0.5 * (out + np.swapaxes(out, 1, 2))


def _spd_inverse(A: np.ndarray) -> np.ndarray:
    """Inverse of a symmetric positive-definite matrix by Cholesky (``potrf`` + ``potri``).

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``A`` is not numerically positive definite (the solver then retreats).
    """
    c, info = lapack.dpotrf(A, lower=0, clean=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(
            "the ridge prior's matrix lam I + sum_k Vhat_k (x) Sigma_k is not positive "
            f"definite (Cholesky pivot {info})"
        )
    S, info = lapack.dpotri(c, lower=0, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"the ridge prior's inverse failed (potri info {info})")
    S = np.triu(S)
    S += np.triu(S, 1).T
    return S


def dense_ridge_terms(
    cov: DenseCovariance,
    lam: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    *,
    details: bool = False,
) -> DenseRidgeTerms:
    """``Q_k, M_k, V_k`` of the ridge prior on general covariances (module docstring).

    Parameters
    ----------
    cov : DenseCovariance
        Means (input units) and covariances.
    lam : float
        Penalty strength, ``> 0`` (the covariances may be singular).
    Qhat, Vhat : ndarray (K, L, L); Mhat : ndarray (K, L)
        Hat parameters in the effective output space.
    details : bool
        Also compute ``psi_w``, ``penalty`` and the law of each weight component.

    Raises
    ------
    ValueError
        If ``lam <= 0``.
    numpy.linalg.LinAlgError
        If ``lam I + sum_k Vhat_k (x) Sigma_k`` is not numerically positive definite.
    """
    if not lam > 0.0:
        raise ValueError(
            f"lam must be > 0 on a dense covariance structure (its covariances may be "
            f"singular, and lam = 0 leaves the weights undetermined there); got lam={lam:g}"
        )
    K, L = Mhat.shape
    d = cov.dim
    A = _kron_sum(Vhat, cov)
    A[np.diag_indices_from(A)] += lam
    S = _spd_inverse(A)
    m = (Mhat.T @ cov.means).reshape(-1)  # vec of sum_k Mhat_k mu_k^T
    u = S @ m
    U = u.reshape(L, d)
    C = _kron_sum(Qhat, cov)
    Z = S @ C @ S
    Z = 0.5 * (Z + Z.T)
    SigU = cov.covariances @ U.T  # (K, d, L)
    Q = np.einsum("ai,kib->kab", U, SigU) + _partial_traces(Z, cov, L) / d
    M = cov.means @ U.T
    V = _partial_traces(S, cov, L) / d
    if L > 1:
        Q = 0.5 * (Q + np.swapaxes(Q, 1, 2))
    if not details:
        return DenseRidgeTerms(Q=Q, M=M, V=V)
    psi_w = -0.5 * float(m @ u) - 0.5 * float(np.vdot(S, C)) / d
    penalty = 0.5 * float(u @ u) + 0.5 * float(np.trace(Z)) / d
    return DenseRidgeTerms(
        Q=Q,
        M=M,
        V=V,
        psi_w=psi_w,
        penalty=penalty,
        weight_mean=np.sqrt(d) * U,
        weight_var=np.clip(np.diag(Z), 0.0, None).reshape(L, d),
    )
