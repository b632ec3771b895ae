"""The "prior" half of the fixed point: from hat parameters to ``Q_c, M_c, V_c``.

Ridge penalty ``r(W) = ||W||_F^2 / 2`` on a spectral mixture (Corollary 3, eq. (11),
generalised to L x L blocks, with the sum inside the inverse over ``sigma^kappa Vhat_kappa``
— docs/design.md pitfall 3).  On atom ``j`` of the spectral law the weight row ``G_j`` (L) is
Gaussian with mean ``A_j^{-1} B_j`` and covariance ``A_j^{-1} C_j A_j^{-1}``, where

    A_j = lam I + sum_k sigma_j^k Vhat_k,
    B_j = sum_k mu^k Mhat_k,            E[B_j B_j^T] = sum_kk' theta_j^{kk'} Mhat_k Mhat_k'^T,
    C_j = sum_k sigma_j^k Qhat_k,

so that ``Q_k = E_j[sigma^k A^{-1}(B B^T + C) A^{-1}]``, ``M_k = E_j[mu^k A^{-1} B]``,
``V_k = E_j[sigma^k A^{-1}]``.  The isotropic mixture is the one-atom case.  Ridge on
general (dense) covariances, Appendix C, is :mod:`gaussmix.theory.prior.dense`.

Lasso and elastic net, ``r(w) = rho1 ||w||_1 + (1 - rho1) ||w||^2 / 2`` (Appendix C.2,
binary labels: one effective output, L = 1), re-derived here (docs/design.md pitfall 3).  On
atom ``j`` the weight component solves the scalar problem

    w = argmin_w  lam rho1 |w| + a w^2 / 2 - B w = soft(B, t) / a,
    a = sum_k sigma^k Vhat_k + lam (1 - rho1),   t = lam rho1,
    B = sum_k mu^k Mhat_k + sqrt(c) xi,          c = sum_k sigma^k Qhat_k,

whose minimum is ``-(|B| - t)_+^2 / (2 a)``.  Hence, with ``E`` over atoms, mean components
and ``xi``,

    Q_k = E[sigma^k (|B| - t)_+^2] / a^2,   V_k = E[sigma^k P(|B| > t)] / a,
    M_k = E[mu^k soft(B, t)] / a,           Psi_w = -E[(|B| - t)_+^2] / (2 a),

(``V_k`` is ``sigma^k`` times the derivative of ``w`` with respect to ``B``).  ``B`` is
Gaussian given the atom: for Gaussian mean components (``mixture.mu is None``,
``mu ~ N(0, theta_j)``) it is centred with variance ``s^2 = Mhat^T theta_j Mhat + c`` and
Stein's lemma gives ``E[mu^k soft(B, t)] = (theta_j Mhat)_k P(|B| > t)``; for an empirical
law it has mean ``m = mu_j . Mhat`` and variance ``c``.  The Gaussian partial moments
(:func:`~gaussmix.theory.numerics.soft_threshold.soft_threshold_moments`) are closed forms in
``ndtr`` and the normal density.  At ``rho1 = 0`` everything reduces to the ridge prior
(``t = 0``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from gaussmix.core.exceptions import ArgumentError, UnboundedWeightsError

from ..model.mixture import Mixture
from ..model.penalties import ElasticNet, Lasso, Penalty, Ridge
from ..numerics import tolerances
from ..numerics.linalg import inv
from ..numerics.soft_threshold import centred_soft_threshold_moments, soft_threshold_moments
from .dense import MeanResponse, coarse_covariance, dense_ridge_terms
from .lasso import gaussian_l1_moments

__all__ = [
    "PriorResult",
    "ridge_prior",
    "elastic_net_prior",
    "multi_output_elastic_net_prior",
    "prior_update",
    "prior_quadrature_dim",
    "dense_prior",
    "single_precision_phase",
    "prior_for",
    "register_prior",
    "PRIORS",
]


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
    atom_nonzero : ndarray (J,)
        Probability that a weight component on atom ``j`` is non-zero (all ones for ridge,
        whose weights are Gaussian given the atom).
    l1_norm : float
        ``E|W*|_1 / d`` (sum over the L output rows).
    mean_response : MeanResponse or None
        The image as a function of ``Mhat`` at fixed ``Qhat``, ``Vhat`` where the prior
        provides it (ridge on dense covariances,
        :class:`~gaussmix.theory.prior.dense.MeanResponse`),
        for the map's mean-field Newton step
        (:func:`~gaussmix.theory.solve.bias.mean_bias_step`).
    """

    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    psi_w: float
    penalty: float
    atom_nonzero: np.ndarray | None = None
    l1_norm: float = float("nan")
    mean_response: MeanResponse | None = None


def ridge_prior(
    mixture: Mixture,
    lam: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    P: np.ndarray | None = None,
    *,
    details: bool = False,
    basis: np.ndarray | None = None,
) -> PriorResult:
    """Ridge prior update on a spectral mixture (Corollary 3, L x L blocks).

    Parameters
    ----------
    mixture : Mixture
    lam : float
        Penalty strength (may be 0 when ``sum_k sigma^k Vhat_k`` is invertible).
    Qhat, Vhat : ndarray (K, L, L); Mhat : ndarray (K, L)
        Hat parameters in the effective output space.
    P : unused
        Kept for signature symmetry with other priors.
    details : bool
        Also compute ``psi_w``, ``penalty`` and ``l1_norm`` (NaN otherwise; the iteration
        needs only the overlaps).
    basis : ndarray (L, L_full), optional
        ``l1_norm`` of the full weights ``basis^T w`` (the square loss solved on the
        complement of ``1``: its full weights), not of the effective ones.

    Notes
    -----
    Points of a curve at once: hats with a leading axis of ``P`` points (``Qhat`` (P, K,
    L, L), ...) and ``lam`` an array (P,) give every field with that leading axis; one
    point's arrays take exactly the operations of a single point.
    """
    w = mixture.weights
    sig = mixture.sigma
    th = mixture.theta
    K, L = Mhat.shape[-2:]
    lead = Mhat.shape[:-2]  # () for one point, (P,) for the points of a curve
    J = w.size
    if lead:
        lam = np.asarray(lam, dtype=float).reshape(*lead, 1, 1, 1)
    # per atom j: A_j = lam I + sum_k sigma_j^k Vhat_k,  X_j = Mhat^T theta_j Mhat +
    # sum_k sigma_j^k Qhat_k;  Q_k = sum_j w_j sigma_j^k A_j^-1 X_j A_j^-1,
    # V_k = sum_j w_j sigma_j^k A_j^-1,  M_k = sum_j w_j A_j^-1 (theta_j Mhat)_k
    # (matrix products rather than einsum: this runs at every iteration)
    A = (sig @ Vhat.reshape(*lead, K, L * L)).reshape(*lead, J, L, L)
    if L == 1:
        Ainv = 1.0 / (A + lam)
    else:
        Ainv = inv(A + lam * np.eye(L))  # (np.linalg.inv's routine without its checks)
        Ainv = 0.5 * (Ainv + np.swapaxes(Ainv, -1, -2))
    if lead:  # (P, J, K, L) and (P, J, L, L)
        TM = th @ Mhat[..., None, :, :]
        X = np.swapaxes(Mhat, -1, -2)[..., None, :, :] @ TM
    else:
        TM = th @ Mhat  # (J, K, L)
        X = Mhat.T @ TM
    X = X + (sig @ Qhat.reshape(*lead, K, L * L)).reshape(*lead, J, L, L)
    AXA = Ainv @ X @ Ainv
    wsig = (w[:, None] * sig).T  # (K, J)
    Q = (wsig @ AXA.reshape(*lead, J, L * L)).reshape(*lead, K, L, L)
    V = (wsig @ Ainv.reshape(*lead, J, L * L)).reshape(*lead, K, L, L)
    M = (w @ (TM @ Ainv).reshape(*lead, J, K * L)).reshape(*lead, K, L)  # A_j^-1 symmetric
    if L > 1:
        Q = 0.5 * (Q + np.swapaxes(Q, -1, -2))
        V = 0.5 * (V + np.swapaxes(V, -1, -2))
    if not details:  # the iteration needs the overlaps only
        return PriorResult(Q=Q, M=M, V=V, psi_w=np.nan, penalty=np.nan)
    if lead:
        return _ridge_details_points(mixture, Qhat, Mhat, Q, M, V, Ainv, X, AXA, basis)
    psi_w = -0.5 * float(w @ (Ainv * X).sum(axis=(1, 2)))  # tr(A^-1 X), both symmetric
    penalty = 0.5 * float(w @ np.trace(AXA, axis1=1, axis2=2))
    out = PriorResult(Q=Q, M=M, V=V, psi_w=psi_w, penalty=penalty, atom_nonzero=np.ones(w.size))
    # E|w_a| per atom: w_a is Gaussian with mean (A^-1 B)_a (empirical law) or 0 (then one
    # tail, doubled: the same numbers as soft_threshold_moments' two)
    if mixture.mu is None:
        var = _component_variances(AXA, basis)
        _, abs_mean, _ = centred_soft_threshold_moments(np.sqrt(np.clip(var, 0.0, None)), 0.0)
    else:
        mean = np.einsum("jab,jk,kb->ja", Ainv, mixture.mu, Mhat)
        C = np.einsum("jk,kab->jab", sig, Qhat)
        var = _component_variances(Ainv @ C @ Ainv, basis)
        if basis is not None:
            mean = mean @ basis
        _, abs_mean, _, _ = soft_threshold_moments(mean, np.sqrt(np.clip(var, 0.0, None)), 0.0)
    out.l1_norm = float(w @ abs_mean.sum(axis=1))
    return out


def _ridge_details_points(
    mixture: Mixture,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Q: np.ndarray,
    M: np.ndarray,
    V: np.ndarray,
    Ainv: np.ndarray,
    X: np.ndarray,
    AXA: np.ndarray,
    basis: np.ndarray | None = None,
) -> PriorResult:
    """:func:`ridge_prior`'s ``details`` for points on a leading axis (arrays (P,) of
    ``psi_w``, ``penalty``, ``l1_norm``; the single point's forms, per point)."""
    w = mixture.weights
    psi_w = -0.5 * ((Ainv * X).sum(axis=(-2, -1)) @ w)
    penalty = 0.5 * (np.trace(AXA, axis1=-2, axis2=-1) @ w)
    if mixture.mu is None:  # (centred: one tail, doubled, as for a single point)
        var = _component_variances(AXA, basis)
        _, abs_mean, _ = centred_soft_threshold_moments(np.sqrt(np.clip(var, 0.0, None)), 0.0)
    else:
        mean = np.einsum("...jab,jk,...kb->...ja", Ainv, mixture.mu, Mhat)
        C = np.einsum("jk,...kab->...jab", mixture.sigma, Qhat)
        var = _component_variances(Ainv @ C @ Ainv, basis)
        if basis is not None:
            mean = mean @ basis
        _, abs_mean, _, _ = soft_threshold_moments(mean, np.sqrt(np.clip(var, 0.0, None)), 0.0)
    ones = np.ones(AXA.shape[:-2])
    return PriorResult(Q, M, V, psi_w, penalty, ones, abs_mean.sum(axis=-1) @ w)


def _component_variances(C: np.ndarray, basis: np.ndarray | None) -> np.ndarray:
    """The variances of the weight components of covariances ``C`` (..., L, L): their
    diagonal, or with ``basis`` (L, L_full) those of the full components ``basis^T w``,
    ``diag(basis^T C basis)`` (..., L_full)."""
    if basis is None:
        return np.diagonal(C, axis1=-2, axis2=-1)
    return np.einsum("ae,...ab,be->...e", basis, C, basis)


def _over(p: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``p / a`` for a moment ``p`` of the soft threshold over a power of the curvature ``a``
    of the scalar lasso, with ``0`` where ``p = 0``.

    ``p = 0`` means the weight ``soft(B, t) / a`` is zero almost surely (to the underflow of
    ``P(|B| > t)``, beyond ``t ~ 38.5`` standard deviations of ``B``): it contributes
    nothing to the overlaps, whatever ``a``, also ``a = 0`` (a loss with no curvature at the
    state, e.g. the hinge's where no margin is near 1): the minimiser of ``t |w| - B w`` is
    ``w = 0`` for ``|B| <= t``.  Without this the zero estimator was ``0 / 0 = NaN``.  Where
    ``p > 0`` and ``a = 0`` the weights are unbounded and the quotient is ``inf``, an image
    the iteration rejects.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p == 0.0, 0.0, p / a)


def _over_for(a: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The quotient of the moments over the curvature ``a`` (and ``a**2``): where every
    ``a`` and ``a**2`` is positive, plain division (``p / a`` is then already 0 where
    ``p = 0``: the numbers of :func:`_over`, without its ``errstate`` and ``where`` on each
    of a prior update's six quotients, a third of the update's time); else :func:`_over`.

    One reduction: where every ``a`` is positive, the smallest of the rounded squares is
    the rounded square of the smallest (rounding is monotone), so ``min(a)**2 > 0`` is
    ``min(a**2) > 0``; a NaN makes the minimum NaN and the test false, as before."""
    amin = np.minimum.reduce(a, axis=None)
    if amin > 0.0 and amin * amin > 0.0:
        return np.divide
    return _over


def _check_curvature(a: np.ndarray, p0: np.ndarray, w: np.ndarray) -> None:
    """Raise :class:`~gaussmix.core.exceptions.UnboundedWeightsError` (a
    ``FloatingPointError``) where the scalar lasso has no curvature (``a = 0``) on an atom of
    positive weight with a positive ``P(|B| > t)``: its weights are unbounded there
    (``t |w| - B w`` has no minimum for ``|B| > t``), an image the map cannot return, and
    Theorem 1's fixed point is degenerate (docs/design.md, "When the direct iteration
    fails")."""
    bad = (a <= 0.0) & (p0 > 0.0) & (w > 0.0)
    if np.any(bad):
        raise UnboundedWeightsError(
            "the lasso's weights are unbounded at this state: its curvature "
            "sum_k sigma^k Vhat_k is 0 where P(|B| > t) = "
            f"{float(np.max(p0[bad])):.3g} > 0.  The loss has no curvature there (the "
            "hinge's when every margin is at or past its kink, as at W* = 0 with the bias at "
            "the kink, which is where the hinge with a sparse penalty at large lam goes: its "
            "finite-size minimiser is exactly W* = 0), and Theorem 1's fixed point is "
            "degenerate at such a state: the Gaussian field B keeps P(|B| > t) > 0 while "
            "the weights have no scale.  The solver found no fixed point away from it, which "
            "does not prove there is none (a continuation in small steps of alpha from a "
            "solved neighbour has reached some: docs/design.md, 'Weights the loss leaves "
            "unbounded').  Use gm.simulate for the finite-size estimator, a smaller lam (a "
            "warm start from it may reach the fixed point), or an elastic net (l1_ratio < 1, "
            "whose ridge part gives the curvature lam (1 - l1_ratio) > 0)"
        )


def elastic_net_prior(
    mixture: Mixture,
    lam: float,
    l1_ratio: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    details: bool = True,
) -> PriorResult:
    """Lasso / elastic-net prior update on a spectral mixture with one effective output.

    ``r(w) = l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 2`` (``l1_ratio = 1``: lasso,
    ``0``: ridge); closed forms of the module docstring.

    Parameters
    ----------
    mixture : Mixture
    lam : float
        Penalty strength ``lam > 0`` (``lam = 0`` is allowed only if every atom has
        ``sum_k sigma^k Vhat_k > 0``).
    l1_ratio : float
        In ``[0, 1]``.
    Qhat, Vhat : ndarray (K, 1, 1); Mhat : ndarray (K, 1)
    details : bool
        False: the points of a curve at once (below) leave ``psi_w``, ``penalty`` and
        ``l1_norm`` NaN (an iteration's images need ``Q``, ``M``, ``V`` only); a single
        point's are always computed (its map reuses them for the free energy,
        :meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.prior_at`).

    Notes
    -----
    Points of a curve at once: hats with a leading axis of ``P`` points and ``lam`` an
    array (P,) give every field with that leading axis; one point's arrays take exactly the
    operations of a single point.
    """
    if Mhat.shape[-1] != 1:
        raise ValueError(
            f"the lasso / elastic-net prior needs one effective output (binary labels), got "
            f"L = {Mhat.shape[-1]}"
        )
    if Mhat.ndim > 2:
        return _elastic_net_points(mixture, lam, l1_ratio, Qhat, Mhat, Vhat, details)
    w = mixture.weights
    sig = mixture.sigma
    qh = Qhat[:, 0, 0]
    mh = Mhat[:, 0]
    vh = Vhat[:, 0, 0]
    a = sig @ vh + lam * (1.0 - l1_ratio)
    a2 = a**2
    over = _over_for(a)
    t = lam * l1_ratio
    c = sig @ qh
    if mixture.mu is None:
        cov = mixture.theta @ mh  # (J, K): Cov(mu^k, B) on each atom
        s2 = cov @ mh + c
        p0, p1, p2 = centred_soft_threshold_moments(np.sqrt(np.clip(s2, 0.0, None)), t)
        Mk = np.einsum("j,jk->k", w * over(p0, a), cov)
    else:
        m = mixture.mu @ mh
        p0, p1, p2, es = soft_threshold_moments(m, np.sqrt(np.clip(c, 0.0, None)), t)
        Mk = np.einsum("j,jk->k", w * over(es, a), mixture.mu)
    if over is _over:  # some a <= 0 (or NaN): unbounded weights raise
        _check_curvature(a, p0, w)
    Q = np.einsum("j,jk->k", w * over(p2, a2), sig)
    V = np.einsum("j,jk->k", w * over(p0, a), sig)
    l1 = float(w @ over(p1, a))
    l2 = float(w @ over(p2, a2))
    return PriorResult(
        Q=Q[:, None, None],
        M=Mk[:, None],
        V=V[:, None, None],
        psi_w=-0.5 * float(w @ over(p2, a)),
        penalty=l1_ratio * l1 + 0.5 * (1.0 - l1_ratio) * l2,
        atom_nonzero=np.asarray(p0, dtype=float),
        l1_norm=l1,
    )


def _elastic_net_points(
    mixture: Mixture,
    lam: np.ndarray,
    l1_ratio: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    details: bool = True,
) -> PriorResult:
    """:func:`elastic_net_prior` for ``P`` points at once (hats (P, K, 1, 1), (P, K, 1),
    ``lam`` (P,); ``psi_w``, ``penalty``, ``l1_norm`` arrays (P,), NaN without
    ``details``, ``atom_nonzero`` (P, J)): the closed forms of the single point with the
    points on a leading axis (the single point keeps its own operations, to the bit; the
    two agree to rounding, ``tests/test_batched_curves.py``)."""
    w = mixture.weights
    sig = mixture.sigma
    lam = np.asarray(lam, dtype=float)[:, None]  # (P, 1): against the atoms (P, J)
    qh, mh, vh = Qhat[:, :, 0, 0], Mhat[:, :, 0], Vhat[:, :, 0, 0]  # (P, K)
    a = vh @ sig.T + lam * (1.0 - l1_ratio)  # (P, J)
    t = lam * l1_ratio
    c = qh @ sig.T
    a2 = a**2
    over = _over_for(a)
    if mixture.mu is None:
        cov = np.einsum("jkl,pl->pjk", mixture.theta, mh)  # Cov(mu^k, B) on each atom
        s2 = np.einsum("pjk,pk->pj", cov, mh) + c
        p0, p1, p2 = centred_soft_threshold_moments(np.sqrt(np.clip(s2, 0.0, None)), t)
        v = w * over(p0, a)
        Mk = np.einsum("pj,pjk->pk", v, cov)
    else:
        m = mh @ mixture.mu.T
        p0, p1, p2, es = soft_threshold_moments(m, np.sqrt(np.clip(c, 0.0, None)), t)
        Mk = (w * over(es, a)) @ mixture.mu
        v = w * over(p0, a)
    Q = (w * over(p2, a2)) @ sig
    V = v @ sig
    if details:
        l1 = over(p1, a) @ w
        l2 = over(p2, a2) @ w
        psi_w = -0.5 * (over(p2, a) @ w)
        penalty = l1_ratio * l1 + 0.5 * (1.0 - l1_ratio) * l2
    else:
        l1 = psi_w = penalty = np.full(a.shape[0], np.nan)
    return PriorResult(
        Q=Q[..., None, None],
        M=Mk[..., None],
        V=V[..., None, None],
        psi_w=psi_w,
        penalty=penalty,
        atom_nonzero=np.asarray(p0, dtype=float),
        l1_norm=l1,
    )


def _positive_metric(V: np.ndarray) -> np.ndarray:
    """The metrics ``V`` (K, L, L) (symmetric) with every eigenvalue below
    ``METRIC_EIG_FLOOR`` times the largest raised to it, where the lowest is no deeper
    than ``-METRIC_NEG_RTOL`` times the largest (:data:`~gaussmix.theory.numerics.tolerances.
    METRIC_NEG_RTOL`: the integration error of Stein's lemma near the zero estimator);
    the others unchanged, to the bit.

    ``V_c = E[du/dB]`` is positive definite; its estimate across lines need not be.  The
    projection onto the positive semi-definite cone moves ``V_c`` by its most negative
    eigenvalue, at most the estimate's own error since the truth lies in the cone, and
    brings it no farther from the truth (a projection onto a convex set that holds it);
    the floor keeps it positive definite, a state the iteration accepts
    (:func:`~gaussmix.theory.solve.state.is_valid_state`)."""
    ev = np.linalg.eigvalsh(V)
    top = ev[:, -1]
    fix = (top > 0.0) & (ev[:, 0] < tolerances.METRIC_EIG_FLOOR * top)
    fix &= ev[:, 0] >= -tolerances.METRIC_NEG_RTOL * top
    if not fix.any():
        return V
    out = V.copy()
    lam, vec = np.linalg.eigh(V[fix])
    lam = np.maximum(lam, tolerances.METRIC_EIG_FLOOR * lam[:, -1:])
    out[fix] = (vec * lam[:, None, :]) @ np.swapaxes(vec, 1, 2)
    return 0.5 * (out + np.swapaxes(out, 1, 2))


def multi_output_elastic_net_prior(
    mixture: Mixture,
    lam: float,
    l1_ratio: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    P: np.ndarray,
    panels: int | None = None,
) -> PriorResult:
    """Lasso / elastic-net prior update on a spectral mixture for any number of outputs.

    The generalisation of :func:`elastic_net_prior` (Theorem 1 with ``r`` separable over the
    directions of the spectral law, each direction's weight row ``w`` in R^L solving an
    L-dimensional lasso in the metric of the hats; :mod:`gaussmix.theory.prior.lasso`).  On atom
    ``j``, with ``A_j = P^T (sum_k sigma_j^k Vhat_k) P + lam (1 - l1_ratio) I_L`` and the
    effective field ``B`` (L') Gaussian with covariance ``C_j = sum_k sigma_j^k Qhat_k`` plus
    ``Mhat^T theta_j Mhat`` (Gaussian mean components, centred) or with mean
    ``sum_k mu_j^k Mhat_k`` (empirical law), ``w = prox(P^T B)`` and ``u = P w``:

        Q_k = E_j[sigma^k E[u u^T]],   V_k = E_j[sigma^k E[du/dB]],
        M_k = E_j[E[du/dB] (theta_j Mhat)_k]   or   E_j[mu_j^k E[u]],

    (``du/dB = P P_S A_SS^{-1} P_S^T P^T`` on the active set ``S``; the first form of ``M_k``
    is Stein's lemma), ``Psi_w = -E[w^T A w] / 2`` and ``E r(w)`` in the full output space.
    With ``L = 1`` and ``P = 1`` these are the soft-threshold closed forms, to rounding.

    Parameters
    ----------
    mixture : Mixture
    lam : float
        ``> 0``.
    l1_ratio : float
        In ``(0, 1]``.
    Qhat, Vhat : ndarray (K, L', L'); Mhat : ndarray (K, L')
        Hat parameters in the effective output space.
    P : ndarray (L', L)
        The problem's effective-to-full output map; with ``L' < L`` (the complement of
        ``1`` of the cross-entropy) the lasso's gauge is its least-``||w||_1`` one.
    panels : int, optional
        Panels per outer dimension (``L' - 1`` of them) of the rule of
        :func:`~gaussmix.theory.prior.lasso.gaussian_l1_moments` (default
        :func:`~gaussmix.theory.prior.lasso.outer_panels`).

    Returns
    -------
    PriorResult
        ``atom_nonzero``: the expected fraction of the L entries of ``w`` that are non-zero
        (``nonzero_fraction`` is thus the fraction of entries of ``W*``, as for ``L = 1``).
    """
    if Mhat.ndim != 2:
        raise ValueError(
            f"Mhat must be (K, L') (one point; the L-dimensional lasso takes no stacked "
            f"points), got shape {Mhat.shape}"
        )
    w = mixture.weights
    sig = mixture.sigma
    K, Lp = Mhat.shape
    J = w.size
    L = P.shape[1]
    lam2 = lam * (1.0 - l1_ratio)
    Aeff = (sig @ Vhat.reshape(K, Lp * Lp)).reshape(J, Lp, Lp)
    A = P.T @ Aeff @ P + lam2 * np.eye(L)
    A = 0.5 * (A + np.swapaxes(A, 1, 2))
    C = (sig @ Qhat.reshape(K, Lp * Lp)).reshape(J, Lp, Lp)
    if mixture.mu is None:
        TM = mixture.theta @ Mhat  # (J, K, L'): Cov(mu^k, B) on each atom
        mean = np.zeros((J, Lp))
        cov = Mhat.T @ TM + C
    else:
        mean = mixture.mu @ Mhat
        cov = C
    shift_free = lam2 == 0.0 and L > Lp
    mom = gaussian_l1_moments(
        A, P, mean, cov, lam * l1_ratio, shift_free=shift_free, panels=panels
    )
    Euu = P @ mom.second @ P.T
    EJ = P @ mom.jacobian @ P.T
    wsig = (w[:, None] * sig).T  # (K, J)
    Q = (wsig @ Euu.reshape(J, Lp * Lp)).reshape(K, Lp, Lp)
    V = (wsig @ EJ.reshape(J, Lp * Lp)).reshape(K, Lp, Lp)
    if mixture.mu is None:
        M = np.einsum("j,jab,jkb->ka", w, EJ, TM)
    else:
        M = np.einsum("j,jk,ja->ka", w, mixture.mu, mom.mean @ P.T)
    l1 = float(w @ mom.l1)
    l2 = float(w @ np.trace(mom.second, axis1=1, axis2=2))
    return PriorResult(
        Q=0.5 * (Q + np.swapaxes(Q, 1, 2)),
        M=M,
        V=_positive_metric(0.5 * (V + np.swapaxes(V, 1, 2))),
        psi_w=-0.5 * float(w @ np.einsum("jab,jba->j", A, mom.second)),
        penalty=l1_ratio * l1 + 0.5 * (1.0 - l1_ratio) * l2,
        atom_nonzero=mom.nonzero / L,
        l1_norm=l1,
    )


#: the prior of each (penalty class, covariance structure): the solver never asks which
#: one it has (it calls ``problem.prior``, resolved once by :func:`prior_for`)
PRIORS: dict[tuple[type, str], Callable[..., PriorResult]] = {}
#: the pairs whose prior takes points on a leading axis (``lam`` an array of ``P``
#: penalties, hats of shape ``(P, K, 1, 1)``) with one output: a curve's points in one call;
#: each with the test of the problem's output map ``P`` (None: one output) under which it
#: does (:func:`takes_stacked_points`)
STACKED_PRIORS: dict[tuple[type, str], Callable[[np.ndarray | None], bool]] = {}


def _any_output_map(P: np.ndarray | None) -> bool:
    return True


def register_prior(
    penalty_cls: type,
    structure: str,
    *,
    stacked: bool | Callable[[np.ndarray | None], bool] = False,
) -> Callable:
    """Declare the prior of ``penalty_cls`` on covariance structures named ``structure``
    (``stacked``: it also takes the points of a curve on a leading axis, for every output map
    with True, for the output maps ``P`` where ``stacked(P)`` holds with a test)."""

    def deco(fn: Callable[..., PriorResult]) -> Callable[..., PriorResult]:
        key = (penalty_cls, structure)
        if key in PRIORS:
            raise ValueError(f"a prior for {penalty_cls.__name__} on {structure!r} exists")
        PRIORS[key] = fn
        if stacked:
            STACKED_PRIORS[key] = _any_output_map if stacked is True else stacked
        return fn

    return deco


def prior_for(penalty: Penalty, mixture: Mixture) -> Callable[..., PriorResult]:
    """The prior serving ``penalty`` on ``mixture``'s covariance structure.

    Raises
    ------
    ValueError
        If no prior is registered for the pair.
    """
    structure = mixture.covariance.structure
    fn = PRIORS.get((type(penalty), structure))
    if fn is None:
        raise ArgumentError(
            "penalty",
            f"{penalty.name!r} is not available on a {structure!r} covariance "
            "structure (no prior is registered for the pair)",
        )
    return fn


def takes_stacked_points(penalty: Penalty, mixture: Mixture, P: np.ndarray | None = None) -> bool:
    """Whether the prior of ``penalty`` on ``mixture``, for the output map ``P`` (the
    problem's ``P``; None: one output), takes the points of a curve on a leading axis
    (:data:`STACKED_PRIORS`), as the stacked curve solve needs: the same test as the prior's
    own choice of path, so that a stacked curve's points take their single points' path."""
    accepts = STACKED_PRIORS.get((type(penalty), mixture.covariance.structure))
    return accepts is not None and accepts(P)


@register_prior(Ridge, "spectral", stacked=True)
def _ridge_spectral(
    penalty, mixture, lam, Qhat, Mhat, Vhat, *, details=False, P=None, basis=None
) -> PriorResult:
    return ridge_prior(mixture, lam, Qhat, Mhat, Vhat, details=details, basis=basis)


@register_prior(Ridge, "dense")
def _ridge_dense(
    penalty, mixture, lam, Qhat, Mhat, Vhat, *, details=False, P=None, single=False, basis=None
) -> PriorResult:
    """Ridge on general covariances (Appendix C; :mod:`gaussmix.theory.prior.dense`), in single
    precision with ``single`` (:func:`single_precision_phase`).

    The details are always computed: beside the ``O((L r)^3)`` overlaps they cost
    ``O(L d)``, and with them the map's last evaluation serves the observables of a converged
    state (:meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.prior_at`)."""
    t = dense_ridge_terms(
        mixture.covariance,
        lam,
        Qhat,
        Mhat,
        Vhat,
        details=True,
        mean_response=True,
        single=single,
        basis=basis,
    )
    # each weight component is Gaussian: E|w| from its mean and variance
    _, abs_mean, _, _ = soft_threshold_moments(t.weight_mean, np.sqrt(t.weight_var), 0.0)
    d = mixture.covariance.dim
    return PriorResult(
        Q=t.Q,
        M=t.M,
        V=t.V,
        psi_w=t.psi_w,
        penalty=t.penalty,
        atom_nonzero=np.ones(d),
        l1_norm=float(abs_mean.sum()) / d,
        mean_response=t.mean_response,
    )


def _two_class_output(P: np.ndarray) -> bool:
    """Whether ``P`` is the two-class cross-entropy's map ``(1, -1) / sqrt(2)`` (up to sign):
    one effective output, the difference of two full ones."""
    return P.shape == (1, 2) and bool(np.isclose(P[0, 0], -P[0, 1]))


def _scalar_elastic_net(P: np.ndarray | None) -> bool:
    """Whether the lasso / elastic net of the output map ``P`` is a scalar one in closed form
    (one output, or :func:`_two_class_output`), the path of :func:`_elastic_net_spectral`
    that takes a curve's points on a leading axis; the L-dimensional one takes one point."""
    return P is None or P.shape == (1, 1) or _two_class_output(P)


@register_prior(Lasso, "spectral", stacked=_scalar_elastic_net)
@register_prior(ElasticNet, "spectral", stacked=_scalar_elastic_net)
def _elastic_net_spectral(
    penalty, mixture, lam, Qhat, Mhat, Vhat, *, details=False, P=None, panels=None
):
    """One output (``P = 1``): the soft-threshold closed forms; two outputs of the two-class
    cross-entropy: the same through their difference (:func:`_two_class_elastic_net`);
    otherwise the L-dimensional lasso of :func:`multi_output_elastic_net_prior` (with
    ``panels`` for its outer rule)."""
    if P is None or P.shape == (1, 1):
        return elastic_net_prior(mixture, lam, penalty.l1_ratio, Qhat, Mhat, Vhat, details)
    if _two_class_output(P):
        return _two_class_elastic_net(mixture, lam, penalty.l1_ratio, Qhat, Mhat, Vhat, details)
    return multi_output_elastic_net_prior(
        mixture, lam, penalty.l1_ratio, Qhat, Mhat, Vhat, P, panels
    )


def _two_class_elastic_net(
    mixture: Mixture,
    lam: float | np.ndarray,
    l1_ratio: float,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    details: bool,
) -> PriorResult:
    """The elastic net of two outputs seen through their difference (the two-class
    cross-entropy, ``P = (1, -1) / sqrt(2)``): :func:`elastic_net_prior` of the scalar
    ``w_e = P w``.

    Its least-penalty gauge is ``w = P^T w_e`` (for ``w_1 - w_2`` fixed, ``|w_1| + |w_2|``
    and ``w_1^2 + w_2^2`` are least at ``w_1 = -w_2``), so ``r(w) = l1_ratio sqrt(2) |w_e|
    + (1 - l1_ratio) w_e^2 / 2``: the scalar elastic net of strength ``lam' = lam (1 -
    l1_ratio + sqrt(2) l1_ratio)`` and ratio ``sqrt(2) l1_ratio lam / lam'``.  The same
    numbers as :func:`multi_output_elastic_net_prior` (its two-dimensional lasso with the
    gauge; tested), in closed form: accurate in the tails (that one's ``Q`` came out
    ``-3e-40`` on the way to the zero estimator) and without its integrals.  ``lam`` may be
    the array of a curve's points (``lam' / lam`` is a constant).  ``l1_norm`` is
    ``E |w_1| + E |w_2| = sqrt(2) E |w_e|``; ``atom_nonzero`` (the fraction of the two
    entries that are non-zero) is the scalar's, both entries being non-zero together, but
    for the lasso (``l1_ratio = 1``), whose minimisers are every split ``w_1 >= 0 >= w_2``
    and whose returned one has an entry at zero (``shift_free`` of
    :func:`~gaussmix.theory.prior.lasso.l1_prox`): half the scalar's; the penalty per unit ``lam``
    is ``lam' / lam`` times the scalar's.
    """
    s = np.sqrt(2.0)
    scale = 1.0 - l1_ratio + s * l1_ratio  # lam' / lam
    pr = elastic_net_prior(mixture, lam * scale, s * l1_ratio / scale, Qhat, Mhat, Vhat, details)
    nonzero = pr.atom_nonzero / 2 if l1_ratio == 1.0 else pr.atom_nonzero
    return replace(pr, penalty=pr.penalty * scale, l1_norm=s * pr.l1_norm, atom_nonzero=nonzero)


def prior_quadrature_dim(problem) -> int:
    """The dimension of the prior's own quadrature rule for ``problem``: ``L' - 1`` for the
    lasso / elastic net with ``L' >= 2`` effective outputs (the outer rule of
    :func:`~gaussmix.theory.prior.lasso.gaussian_l1_moments`), 0 for a prior in closed form (ridge,
    one effective output), whose integrals carry no quadrature error."""
    if problem.prior is not _elastic_net_spectral or problem.dim < 2:
        return 0
    return problem.dim - 1


def dense_prior(problem) -> bool:
    """Whether the prior of ``problem`` is the dense ridge prior
    (:mod:`gaussmix.theory.prior.dense`: general covariances)."""
    return problem.prior is _ridge_dense


def single_precision_phase(problem) -> bool:
    """Whether a fixed point of ``problem`` starts in single precision: its prior is the
    dense ridge prior (the one that takes ``single``, :mod:`gaussmix.theory.prior.dense`) on a
    matrix of at least :data:`~gaussmix.theory.numerics.tolerances.SINGLE_PHASE_MIN_N` rows
    (``L r``: effective outputs times axes with variance), where its ``O((L r)^3)`` linear
    algebra is most of an iteration."""
    if not dense_prior(problem):
        return False
    n = problem.dim * int(np.count_nonzero(problem.mixture.covariance.active))
    return n >= tolerances.SINGLE_PHASE_MIN_N


def coarse_axes_problem(problem):
    """``problem`` with its dense covariance restricted to the leading axes
    (:func:`~gaussmix.theory.prior.dense.coarse_covariance`, the cluster priors as weights,
    :data:`~gaussmix.theory.numerics.tolerances.COARSE_AXES_TAIL` of the trace left out),
    whose fixed point the first phase corrects
    (:mod:`gaussmix.theory.solve.coarse_axes`); None where ``problem`` takes no
    single-precision phase (:func:`single_precision_phase`) or the leading axes are more
    than :data:`~gaussmix.theory.numerics.tolerances.COARSE_AXES_MAX_SHARE` of the active
    ones."""
    if not single_precision_phase(problem):
        return None
    mixture = problem.mixture
    cov = coarse_covariance(
        mixture.covariance,
        mixture.rho,
        tolerances.COARSE_AXES_TAIL,
        tolerances.COARSE_AXES_MAX_SHARE,
    )
    if cov is None:
        return None
    return replace(problem, mixture=replace(mixture, covariance=cov))


def prior_update(
    problem,
    Qhat: np.ndarray,
    Mhat: np.ndarray,
    Vhat: np.ndarray,
    lam: float | None = None,
    *,
    details: bool = False,
    panels: int | None = None,
    single: bool = False,
) -> PriorResult:
    """The prior half of the fixed point for ``problem`` (the prior its penalty declares for
    its mixture's covariance structure, resolved when the problem was made).

    ``lam`` overrides ``problem.lam`` (e.g. for an initial state); ``details`` asks the
    ridge prior for ``l1_norm`` too; ``panels`` sets the panels of the prior's own rule where
    it has one (:func:`prior_quadrature_dim`; None: its default); ``single`` runs the
    dense ridge prior in single precision (:func:`single_precision_phase`; ignored by the
    others).
    """
    lam = problem.lam if lam is None else lam
    extra = {"panels": panels} if panels is not None and prior_quadrature_dim(problem) else {}
    if single and problem.prior is _ridge_dense:
        extra["single"] = True
    if getattr(problem.loss, "offset", None) is not None:
        # the square loss on the complement of 1 (ridge): the l1 norm of its full weights
        # (the dense prior's details come with every evaluation, and serve the observables)
        extra["basis"] = problem.P
    return problem.prior(
        problem.penalty_spec,
        problem.mixture,
        lam,
        Qhat,
        Mhat,
        Vhat,
        details=details,
        P=problem.P,
        **extra,
    )
