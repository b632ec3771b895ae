"""Observables at a fixed point: Theorem 2 errors and the replica-symmetric free energy.

* test error ``eps_g = 1 - sum_c rho_c P[phi(omega_c) = y_c]`` with ``omega_c ~ N(M_c + b,
  Q_c)``: a Gaussian orthant probability (docs/design.md pitfall 6), computed deterministically;
  here and in the test loss ``rho`` are the priors of the *test* distribution
  (:attr:`~gaussmix.theory.model.mixture.Mixture.test_priors`: the training priors unless a prior
  shift is set), while the fixed point and the training observables use the training ``rho``;
* training error ``eps_t = 1 - sum_c rho_c P[phi(h_c) = y_c]`` with ``h_c = prox(omega_c)``:
  exact for affine proxes (square loss: ``h_c`` is Gaussian) and for one-dimensional outputs
  (the prox is monotone, so the correct set is an interval of ``omega``); otherwise by
  quadrature of the indicator;
* training loss ``eps_l = sum_c rho_c E[loss(y_c, h_c)]`` (the loss alone, no penalty);
* test loss ``sum_c rho_c E[loss(y_c, omega_c)]`` with ``omega_c ~ N(M_c + b, Q_c)``: the
  population risk of the trained estimator, the loss alone (no penalty; for the square loss
  the test mean-squared error over two), by the same logic as the test error (the output of
  a fresh sample of cluster ``c`` is ``omega_c``, Theorem 2); closed forms for the square
  and hinge losses, the channel's quadrature rule otherwise (:func:`gaussian_risk`);
* free energy (eq. (168), zero temperature)
  ``Phi = alpha sum_c rho_c E[env_c] + Psi_w + sum_c [Mhat_c.M_c - tr(Vhat_c Q_c)/2 +
  tr(Qhat_c V_c)/2]``, stationary at the fixed point, equal there to the minimal
  empirical risk per dimension ``alpha eps_l + lam E[r(W*)]/d``;
* statistics of the law of ``W*`` (lasso / elastic net): the fraction of non-zero weight
  components, overall and on / off the support of the means, and ``||W*||_1 / d``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy.special import ndtr, owens_t

from gaussmix.core.memo import IdentityMemo

from ..channel.channel import (
    CROSS_ENTROPY_KERNEL,
    compiled_kernel,
    compiled_moments,
    in_parts,
    sqrtm_psd,
)
from ..channel.losses import HingeLoss, Loss, ReducedLoss, SquareLoss, closed_form_of
from ..numerics.equicorrelated import equicorrelated_orthant
from ..numerics.kernels import WEDGE_MIN_PANELS, WEDGE_PANEL, WEDGE_SCAN, ce_ray_flux
from ..numerics.linalg import sym_eigvals
from ..numerics.orthant import (
    EXACT_ERR_1D,
    EXACT_ERR_2D,
    PSD_CHECK_RTOL,
    orthant_probability,
    orthant_probability_batch,
)
from ..numerics.quadrature import MAX_RQMC_LOG2, QuadratureRule, SobolRQMC, auto_rule
from ..numerics.tolerances import (
    ISOTROPIC_METRIC_RTOL,
    PSD_RTOL,
    SMOOTH_Q_MAX,
    SPREAD_ORTHANT_TOL,
    TRAIN_CONTROL_ORTHANT_TOL,
    TRAIN_QMC_TOL,
)
from ..problem.problem import Problem

__all__ = [
    "test_accuracy",
    "exact_orthants",
    "stacked_orthants",
    "affine_train_accuracy",
    "test_loss",
    "gaussian_risk",
    "estimated_risk",
    "train_accuracy",
    "isotropic_softmax_metric",
    "free_energy_terms",
    "weight_sparsity",
    "weight_sparsities",
]


def test_accuracy(
    problem: Problem,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    *,
    seed: int = 0,
    quick: bool = False,
    exchangeable: bool = False,
    per_cluster: bool = False,
) -> tuple[np.ndarray, float | np.ndarray]:
    """``P[phi(omega_c) = y_c]`` for each cluster (Theorem 2, eq. (9)) and the integration
    error of ``sum_c rho_c P_c`` with the test priors ``rho``
    (:attr:`~gaussmix.theory.model.mixture.Mixture.test_priors`; zero up to rounding for orthants
    of dimension <= 2), or with ``per_cluster`` each cluster's error estimate (K,) (for the
    clusters of several points stacked, whose outputs have no mixture to weigh them).

    Orthants of dimension 3 to 5 (K = 4 to 6 classes) are deterministic nested rules
    (:func:`orthant_probability`, error about ``1e-15``), beyond that seeded randomised QMC
    (``rng_seed=seed``); exchangeable clusters' orthants are equicorrelated, a deterministic
    one-dimensional integral (:func:`equicorrelated_orthant`, error about ``1e-14``); ``quick``
    asks :data:`~gaussmix.theory.numerics.tolerances.SPREAD_ORTHANT_TOL` of them instead of their
    default (for differences between nearby states with the same seed).  ``exchangeable``: the
    clusters and the state are equivariant under relabelling
    (:mod:`gaussmix.theory.problem.symmetry`),
    so cluster 0's probability stands for every cluster (one orthant instead of ``K``)."""
    if _all_point_masses(Q):  # the lasso's zero estimator: omega_c = b, the bias-only classifier
        return _point_mass_accuracy(problem, M + b), np.zeros(M.shape[0]) if per_cluster else 0.0
    Q = _within_state_psd(Q)
    stacked = _stacked_constraints(problem.constraints)
    if stacked is not None and stacked[0].shape[1] <= 2:
        # orthants of dimension <= 2: all clusters in one batched call
        D, t = stacked
        mean = np.einsum("kij,kj->ki", D, M + b) - t
        out = orthant_probability_batch(mean, D @ Q @ np.swapaxes(D, 1, 2))
        exact = EXACT_ERR_1D if D.shape[1] == 1 else EXACT_ERR_2D
        return out, np.full(out.size, exact) if per_cluster else exact
    tol = {"abs_tol": SPREAD_ORTHANT_TOL} if quick else {}
    if exchangeable:
        D, t = problem.constraints[0]
        mean = D @ (M[0] + b) - t
        cov = D @ Q[0] @ D.T
        cov = 0.5 * (cov + cov.T)
        # exchangeable clusters: an equicorrelated orthant, a deterministic 1-d integral
        p, e = equicorrelated_orthant(mean, cov) or orthant_probability(
            mean, cov, rng_seed=seed, **tol
        )
        return np.full(problem.n_clusters, p), float(e)
    out, err = _cluster_orthants(problem.constraints, M + b, Q, seed=seed, **tol)
    return out, err if per_cluster else float(problem.mixture.test_priors @ err)


def _cluster_orthants(
    constraints: Sequence[tuple[np.ndarray, np.ndarray]],
    means: np.ndarray,
    covs: np.ndarray,
    *,
    seed: int = 0,
    **tol: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``P[D_c z_c <= t_c]`` for ``z_c ~ N(means[c], covs[c])`` of every cluster ``c`` and the
    error estimates: one :func:`orthant_probability_batch` call per number of constraints
    (one for all clusters of one-hot labels)."""
    K = len(constraints)
    out = np.empty(K)
    err = np.empty(K)
    stacked = _stacked_constraints(constraints)
    if stacked is not None:
        groups = [(np.arange(K), *stacked)]
    else:
        sizes = np.array([D.shape[0] for D, _ in constraints])
        groups = []
        for size in np.unique(sizes):
            rows = np.nonzero(sizes == size)[0]
            D = np.stack([constraints[c][0] for c in rows])
            groups.append((rows, D, np.stack([constraints[c][1] for c in rows])))
    for rows, D, t in groups:
        mean = np.einsum("kij,kj->ki", D, means[rows]) - t
        cov = D @ covs[rows] @ np.swapaxes(D, 1, 2)
        out[rows], err[rows] = orthant_probability_batch(
            mean, 0.5 * (cov + np.swapaxes(cov, 1, 2)), rng_seed=seed, return_error=True, **tol
        )
    return out, err


def _square_risk(y: np.ndarray, m: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``E ||y - z||^2 / 2`` for ``z ~ N(m, Q)``: ``(||y - m||^2 + tr Q) / 2``."""
    return 0.5 * (np.sum((y - m) ** 2, axis=-1) + np.trace(Q, axis1=-2, axis2=-1))


def _hinge_risk(y: np.ndarray, m: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """``E max(0, 1 - y z)`` for ``z ~ N(m, q)`` (L = 1): with ``u = 1 - y z ~ N(mu, s^2)``,
    ``E u_+ = mu Phi(mu / s) + s phi(mu / s)`` (``max(mu, 0)`` at ``s = 0``)."""
    mu = 1.0 - y[:, 0] * m[:, 0]
    s = np.sqrt(np.clip(Q[:, 0, 0], 0.0, None))
    # (over: a * a beyond the float range far out in the tail, whose density is then 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = mu / s
        out = mu * ndtr(a) + s * np.exp(-0.5 * a * a) / np.sqrt(2.0 * np.pi)
    return np.where(s > 0.0, out, np.maximum(mu, 0.0))


#: closed-form Gaussian risks ``E_{z ~ N(m_c, Q_c)} loss(y_c, z)``, by loss class
_CLOSED_FORM_RISKS = {SquareLoss: _square_risk, HingeLoss: _hinge_risk}


def _closed_form_risk(loss: Loss):
    """The closed-form Gaussian risk of ``loss`` (:data:`_CLOSED_FORM_RISKS`), or None."""
    return closed_form_of(_CLOSED_FORM_RISKS, loss)


def gaussian_risk(
    loss: Loss,
    y: np.ndarray,
    m: np.ndarray,
    Q: np.ndarray,
    rule: QuadratureRule | None = None,
    *,
    compiled: bool = True,
) -> np.ndarray:
    """``E_{z ~ N(m_c, Q_c)} loss(y_c, z)`` for each cluster: the population risk of an
    estimator whose output on a fresh sample of cluster ``c`` is ``N(m_c, Q_c)``.

    Closed forms for the square loss (``(||y - m||^2 + tr Q) / 2``) and the hinge loss
    (``E (1 - y z)_+``, Gaussian partial moment); otherwise ``sum_n w_n loss(y_c, m_c +
    Q_c^{1/2} xi_n)`` with the nodes ``xi_n`` and weights ``w_n`` of ``rule`` (the channel's
    rule of the solve, or any rule of :mod:`gaussmix.theory.numerics.quadrature`), by the loss's
    compiled channel kernel where it has a compiled risk (cross-entropy: the kernel's own
    loss value) and ``compiled``, else by ``loss.value`` (the reference path).

    Parameters
    ----------
    loss : Loss
        The loss on the outputs (a :class:`~gaussmix.theory.channel.losses.ReducedLoss` acts on
        effective outputs).
    y : ndarray (K, L_full)
        Labels.
    m : ndarray (K, L)
        Means of the outputs (``M_c + b``).
    Q : ndarray (K, L, L)
        Covariances of the outputs (positive semi-definite; rounding-level negative
        eigenvalues are clipped).
    rule : QuadratureRule, optional
        Needed unless the loss has a closed form.

    Returns
    -------
    ndarray (K,)
    """
    closed = _closed_form_risk(loss)
    if closed is not None:
        return closed(y, m, Q)
    if rule is None:
        raise ValueError(f"a quadrature rule is needed for the {loss.name} risk")
    S = sqrtm_psd(Q)
    kernel = compiled_kernel(loss) if compiled else None
    if kernel is not None and kernel.compiled_risk:  # (each cluster alone: in parts)
        risk = in_parts(
            y.shape[0], rule.weights.size, lambda s: kernel.risk(loss, y[s], m[s], S[s], rule)
        )
        return np.concatenate(risk)
    z = m[:, None, :] + rule.nodes @ S  # S symmetric: z_kn = m_k + S_k xi_n
    return loss.value(y[:, None, :], z) @ rule.weights


def estimated_risk(
    loss: Loss, y: np.ndarray, m: np.ndarray, Q: np.ndarray, rho: np.ndarray
) -> tuple[np.ndarray, float]:
    """:func:`gaussian_risk` of each cluster with an estimate of the integration error of
    ``sum_c rho_c risk_c``, for outputs not at a fixed point (a fitted estimator's).

    The rule is the solver's automatic one for the outputs' dimension and regime
    (:func:`~gaussmix.theory.numerics.quadrature.auto_rule`, sharp where an eigenvalue of some
    ``Q_c`` exceeds :data:`~gaussmix.theory.numerics.tolerances.SMOOTH_Q_MAX`); the value is that
    of
    its refinement and the error the change from the rule to the refinement, or for a
    randomised rule the standard error across its independent replicates.  Closed forms
    (square, hinge) have error 0.

    Returns
    -------
    risk : ndarray (K,)
    error : float
    """
    if _closed_form_risk(loss) is not None:
        return gaussian_risk(loss, y, m, Q), 0.0
    smooth = bool(float(sym_eigvals(Q).max()) <= SMOOTH_Q_MAX)
    rule = auto_rule(m.shape[-1], smooth=smooth)
    if rule.randomised:
        reps = np.stack([gaussian_risk(loss, y, m, Q, r) for r in rule.replicates()])
        err = float((reps @ rho).std(ddof=1) / np.sqrt(reps.shape[0]))
        return reps.mean(axis=0), err
    coarse = gaussian_risk(loss, y, m, Q, rule)
    finer = rule.refined()
    if finer is None:  # (not for the automatic rules: they all refine)
        return coarse, float("nan")
    fine = gaussian_risk(loss, y, m, Q, finer)
    return fine, float(abs(rho @ (fine - coarse)))


def test_loss(
    problem: Problem,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    rule: QuadratureRule | None,
    *,
    exchangeable: bool = False,
) -> float:
    """The test loss ``sum_c rho_c E[loss(y_c, omega_c)]``, ``omega_c ~ N(M_c + b, Q_c)``
    (effective space): the population risk of the loss alone (no penalty, as the training
    loss), Theorem 2's logic applied to the loss instead of the indicator of an error; the
    ``rho_c`` are the test priors (:attr:`~gaussmix.theory.model.mixture.Mixture.test_priors`).

    ``rule`` is the channel's rule of the solve (unused by the closed forms,
    :func:`gaussian_risk`); its error is estimated as that of the training loss, by the
    change under a refined rule (:func:`gaussmix.theory.solve.batch_solve.estimate_points`).
    ``exchangeable``: the clusters and the state are equivariant under relabelling
    (:mod:`gaussmix.theory.problem.symmetry`), so cluster 0's risk stands for every cluster (and
    ``rule`` may be one that integrates only competitor-symmetric integrands: the risk of
    cluster 0 at a symmetric state is one).
    """
    k = 1 if exchangeable else problem.n_clusters
    risk = gaussian_risk(problem.loss, problem.y[:k], (M + b)[:k], Q[:k], rule)
    return float(risk[0]) if exchangeable else float(problem.mixture.test_priors @ risk)


def _point_masses(Q: np.ndarray) -> np.ndarray:
    """Which clusters' overlap ``Q_c`` (K, L, L) is exactly zero (``omega_c`` a point mass)."""
    return ~np.any(Q.reshape(Q.shape[0], -1) != 0.0, axis=1)


def _within_state_psd(Q: np.ndarray) -> np.ndarray:
    """``Q`` (K, L, L) with each ``Q_c`` whose smallest eigenvalue is negative beyond the
    orthants' relative check (:data:`~gaussmix.theory.numerics.orthant.PSD_CHECK_RTOL` of its
    largest) but within the state's own
    (:data:`~gaussmix.theory.numerics.tolerances.PSD_RTOL` ``max(1, max |eig|)``, the test
    a fixed point passed: :func:`~gaussmix.theory.solve.state.q_is_psd`) projected onto the
    positive semi-definite cone (its negative eigenvalues set to zero); every other ``Q_c``
    as it is, to the bit.

    A tiny ``Q_c`` (the lasso near its zero estimator: ``Q_c ~ 1e-19`` at ``lam = 3.23``) is
    the prior's tail integrals, whose absolute error is the state's, not ``eps ||Q_c||``:
    measured ``-1.5e-28`` against ``5.9e-19`` (2.6e-10 relative), which the orthants refuse.
    The projection moves ``Q_c`` by no more than that eigenvalue, an error the fixed point's
    own validity test allows."""
    if Q.shape[-1] == 1:
        return Q
    eig = sym_eigvals(Q)
    top = np.abs(eig).max(axis=-1)
    low = eig.min(axis=-1)
    fix = (low < -PSD_CHECK_RTOL * top) & (low >= -PSD_RTOL * np.maximum(1.0, top))
    if not fix.any():
        return Q
    w, U = np.linalg.eigh(Q[fix])
    Q = Q.copy()
    Q[fix] = (U * np.maximum(w, 0.0)[..., None, :]) @ np.swapaxes(U, -1, -2)
    return Q


def _all_point_masses(Q: np.ndarray) -> bool:
    """Whether every cluster's ``Q_c`` is exactly zero (:func:`_point_masses`); one
    reduction where ``Q`` has no zero entry, the usual case."""
    return not Q.all() and bool(_point_masses(Q).all())


def _point_mass_accuracy(problem: Problem, m: np.ndarray) -> np.ndarray:
    """``P[phi(omega_c) = y_c]`` for point masses ``omega_c = m_c`` (K, L) (the lasso's zero
    estimator, ``Q_c = V_c = 0``: every output is the bias, ``m_c = b``), ties broken
    uniformly at random: 0 if a wrong label is strictly nearer, else ``1 / (1 + n)`` with
    ``n`` the wrong labels as near as ``y_c`` (the limit ``Q_c = q Q0 -> 0+`` of the Gaussian
    probability for an exchangeable ``Q0``; 1/2 for a binary output at the boundary, the
    balanced antipodal mixture's ``b = 0``)."""
    out = np.empty(m.shape[0])
    for c, (D, t) in enumerate(problem.constraints):
        g = D @ m[c] - t
        out[c] = 0.0 if np.any(g > 0.0) else 1.0 / (1.0 + np.count_nonzero(g == 0.0))
    return out


def _gaussian_interval(m: np.ndarray, s: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``P(lo < X < hi)`` for ``X ~ N(m, s^2)``, elementwise (``s = 0``: a point mass, with
    the limit ``s -> 0+`` at an end: 1/2 there, as for the bias-only classifier of the
    lasso's zero estimator with ``b = 0``, whose ``sign(0)`` is a tie)."""
    pos = s > 0
    if pos.all():  # no point mass: the Gaussian probabilities alone (the same numbers)
        with np.errstate(invalid="ignore"):  # (an infinite end minus itself is not formed)
            return ndtr((hi - m) / s) - ndtr((lo - m) / s)
    ss = np.where(pos, s, 1.0)
    with np.errstate(invalid="ignore"):
        inside = ndtr((hi - m) / ss) - ndtr((lo - m) / ss)
    point = ((lo < m) & (m < hi)) + 0.5 * ((lo == m) & (m < hi)) + 0.5 * ((lo < m) & (m == hi))
    return np.where(pos, inside, point.astype(float))


#: arrays made of a problem's constraints (a tuple: shared by the problems of one label map
#: and by the maps of a stacked curve), remembered by its identity
_CONSTRAINT_ARRAYS = IdentityMemo(16)


def exact_orthants(problem: Problem) -> bool:
    """Whether every cluster's correct set has the same number of constraints, at most two
    (two or three classes): its orthant probabilities are exact and the clusters of one or
    several points are one batched call (:func:`test_accuracy` with each cluster's bias)."""
    stacked = _stacked_constraints(problem.constraints)
    return stacked is not None and stacked[0].shape[1] <= 2


def stacked_orthants(problem: Problem) -> bool:
    """Whether every cluster's correct set has the same number of constraints (one-hot
    labels, any K): the orthants of the clusters of several points, each with its own bias,
    are then one :func:`orthant_probability_batch` call (:func:`test_accuracy` and
    :func:`affine_train_accuracy` of the points' stacked outputs, ``per_cluster``), each
    orthant's result the one it gets alone."""
    return _stacked_constraints(problem.constraints) is not None


def _stacked_constraints(
    constraints: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(D, t)`` of every cluster stacked (read-only) where each has the same number of
    constraints (:func:`test_accuracy`'s batched orthants), else None; made once for a tuple
    of constraints."""

    def make() -> tuple[np.ndarray, np.ndarray] | None:
        if len({D.shape[0] for D, _ in constraints}) != 1:
            return None
        out = np.stack([D for D, _ in constraints]), np.stack([t for _, t in constraints])
        for a in out:
            a.flags.writeable = False
        return out

    if not isinstance(constraints, tuple):  # (only an immutable sequence is remembered)
        return make()
    return _CONSTRAINT_ARRAYS.get(constraints, "stacked", make)


def _intervals_of(constraints: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """:func:`_correct_intervals` (read-only), made once for a tuple of constraints."""

    def make() -> np.ndarray:
        out = _correct_intervals(constraints)
        out.flags.writeable = False
        return out

    if not isinstance(constraints, tuple):
        return _correct_intervals(constraints)
    return _CONSTRAINT_ARRAYS.get(constraints, "intervals", make)


def _correct_intervals(constraints: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The interval ``(lo, hi)`` of the one output ``h`` in which each cluster's
    constraints ``D h >= t`` hold (``D`` (n, 1)): the largest ``t_i / d_i`` over ``d_i < 0``
    and the smallest over ``d_i > 0`` (infinite without one), all clusters' at once (the
    ``P K`` stacked clusters of a curve's points in one call, not a loop)."""
    n = max(t.size for _, t in constraints)
    d = np.zeros((len(constraints), n))  # (a missing constraint: d = 0, none)
    t = np.zeros((len(constraints), n))
    for c, (Dc, tc) in enumerate(constraints):
        d[c, : tc.size] = Dc[:, 0]
        t[c, : tc.size] = tc
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = t / d
    lo = np.where(d < 0, ratio, -np.inf).max(axis=1)
    hi = np.where(d > 0, ratio, np.inf).min(axis=1)
    return np.stack([lo, hi], axis=1)


def affine_train_accuracy(
    problem: Problem, M: np.ndarray, b: np.ndarray, Q: np.ndarray, V: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``P[phi(h_c) = y_c]`` for each cluster (Theorem 2, eq. (9)) of a loss with an affine
    proximal map (the square loss) and each cluster's error estimate (K,).

    The prox is ``h = (I + V)^{-1} (omega + V y)``, so ``h_c`` is Gaussian with mean
    ``A_c (M_c + b + V_c y_c)`` and covariance ``A_c Q_c A_c``, ``A_c = (I + V_c)^{-1}``, and
    the accuracy is its orthant probability: every cluster's in one
    :func:`orthant_probability_batch` call per number of constraints.  ``b`` is one bias (L,)
    or each cluster's (K, L) (the clusters of several points stacked).  Clusters whose ``Q_c``
    and ``V_c`` are zero are not told apart from Gaussian ones: the caller routes the zero
    estimator to :func:`train_accuracy`.
    """
    y = problem.y
    if isinstance(problem.loss, ReducedLoss):  # (the square loss on the complement of 1)
        y = problem.loss.effective_labels(y)
    A = np.linalg.inv(np.eye(M.shape[1]) + V)
    mh = np.einsum("kij,kj->ki", A, M + b + np.einsum("kij,kj->ki", V, y))
    return _cluster_orthants(problem.constraints, mh, A @ _within_state_psd(Q) @ A)


def train_accuracy(
    problem: Problem,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    *,
    qmc_seed: int = 0,
    quick: bool = False,
    exchangeable: bool = False,
) -> tuple[np.ndarray, float]:
    """``P[phi(h_c) = y_c]`` for each cluster (Theorem 2, eq. (9)) and an error estimate.

    * affine prox (square loss): ``h_c`` is Gaussian, an orthant probability (every cluster's
      in one :func:`orthant_probability_batch` call; the error is the largest cluster's
      estimate, a bound on that of any prior-weighted average);
    * one effective output: the prox is monotone, ``h`` in ``(lo, hi)`` iff ``omega`` in
      ``(omega(lo), omega(hi))`` with ``omega(h) = h + V grad loss(h)`` — exact;
    * softmax cross-entropy with isotropic metrics ``V_c = v_c I`` (exchangeable clusters):
      an orthant probability, see :func:`isotropic_softmax_metric`;
    * two effective outputs (cross-entropy, K = 3): the correct set in ``omega`` is bounded by
      the images of the two boundary rays of the correct wedge in ``h``; its probability is a
      boundary integral (divergence theorem), see :func:`_wedge_probability`;
    * more outputs: scrambled-Sobol quasi-Monte Carlo over ``omega`` (seeded with
      ``qmc_seed``), with the standard error over 8 independent scramblings; the points per
      scrambling double from ``2**12`` until the standard error is below
      :data:`~gaussmix.theory.numerics.tolerances.TRAIN_QMC_TOL` (at most ``2**14``); ``quick``
      uses
      ``2**10`` points without doubling (for differences between nearby states with the same
      seed); for cross-entropy, where it reduces the variance (:func:`_control_pays`), minus
      the control variate ``omega + V y`` whose mean is an orthant probability, from
      ``2**10`` points (``quick``: ``2**8``), see :func:`_qmc_train_accuracy`.

    ``exchangeable``: the clusters and the state are equivariant under relabelling
    (:mod:`gaussmix.theory.problem.symmetry`); cluster 0's probability stands for every cluster,
    and
    the quasi-Monte Carlo estimate spends the work of ``K`` clusters on it (its cap is
    ``2**14`` points per scrambling times the clusters it saves, rounded down to a power of 2,
    at most ``2**MAX_RQMC_LOG2``).

    Returns
    -------
    accuracy : ndarray (K,)
    error : float
        Estimated absolute integration error of ``sum_c rho_c accuracy_c``.
    """
    loss = problem.loss
    K, L = M.shape
    out = np.empty(K)
    if _all_point_masses(Q) and _all_point_masses(V):  # the zero estimator: h_c = omega_c
        return _point_mass_accuracy(problem, M + b), 0.0
    if loss.affine_prox:  # square loss: h = (I+V)^{-1}(omega + V y) is Gaussian
        out, err = affine_train_accuracy(problem, M, b, Q, V)
        return out, float(err.max())  # bounds the error of any prior-weighted average
    if L == 1:  # monotone prox: h in (lo, hi) iff omega in (omega(lo), omega(hi))
        edges = _intervals_of(problem.constraints)
        finite = np.isfinite(edges)
        g = loss.grad(problem.y[:, None, :], np.where(finite, edges, 0.0)[..., None])[..., 0]
        bounds = np.where(finite, edges + V[:, 0, :] * g, edges)
        s = np.sqrt(np.maximum(Q[:, 0, 0], 0.0))
        # (``b`` one bias (L,), or each cluster's (K, L): the clusters of several points)
        return _gaussian_interval((M + b)[:, 0], s, bounds[:, 0], bounds[:, 1]), 0.0
    if isotropic_softmax_metric(problem, V):
        # h = omega - V (p - y) orders like omega + v y: an orthant probability
        shifted = M + np.einsum("kij,kj->ki", V, problem.y @ problem.P.T)
        return test_accuracy(
            problem, shifted, b, Q, seed=qmc_seed, quick=quick, exchangeable=exchangeable
        )
    # (the affine and isotropic paths above project Q themselves, the monotone one clips it)
    Q = _within_state_psd(Q)
    if L == 2:
        errs = np.empty(K)
        for c in range(1 if exchangeable else K):
            out[c], errs[c] = _wedge_probability(problem, c, M[c] + b, Q[c], V[c])
        if exchangeable:
            return np.full(K, out[0]), float(errs[0])
        return out, float(problem.mixture.rho @ errs)
    clusters = (0,) if exchangeable else tuple(range(K))
    extra = int(np.floor(np.log2(K / len(clusters))))  # the work of the clusters saved
    stop = min(_QMC_MAX_LOG2 + extra, MAX_RQMC_LOG2)
    control = compiled_kernel(loss) is CROSS_ENTROPY_KERNEL and _control_pays(
        problem, M, b, Q, V, clusters, qmc_seed
    )
    first, least = (
        (_CV_START_LOG2, _CV_QUICK_LOG2) if control else (_QMC_START_LOG2, _QMC_QUICK_LOG2)
    )
    start, stop = (least, least) if quick else (first, stop)
    acc, err = _qmc_train_accuracy(
        problem,
        M,
        b,
        Q,
        V,
        seed=qmc_seed,
        start=start,
        stop=stop,
        clusters=clusters,
        control=control,
        quick=quick,
    )
    if exchangeable:
        return np.full(K, acc[0]), err
    return acc, err


def isotropic_softmax_metric(problem: Problem, V: np.ndarray) -> bool:
    """Whether the training accuracy is an orthant probability: softmax cross-entropy with
    every metric isotropic, ``V_c = v_c I`` in the effective space (to
    :data:`~gaussmix.theory.numerics.tolerances.ISOTROPIC_METRIC_RTOL`; exchangeable clusters have
    ``V_c = v Pi`` by symmetry).

    Then the proximal point ``h = omega - v (p - y)`` (``p = softmax(h)``; the gauge term
    vanishes since ``sum p = sum y = 1``) has components ``h_k = g(omega_k + v y_k)`` for one
    strictly increasing ``g`` (the inverse of ``h -> h + v e^h / Z`` at the common
    normaliser ``Z``), so ``argmax h = argmax(omega + v y)``: the training accuracy of
    cluster ``c`` is the test-accuracy orthant of ``omega_c + V_c y_c``, deterministic or
    seeded with a standard error of ~1e-6 at most, where quasi-Monte Carlo on the indicator
    of the proximal points stalls at ~1e-4 (K = 10).
    """
    if compiled_kernel(problem.loss) is not CROSS_ENTROPY_KERNEL or problem.dim < 2:
        return False
    v = np.trace(V, axis1=1, axis2=2) / V.shape[-1]
    dev = np.abs(V - v[:, None, None] * np.eye(V.shape[-1])).max(axis=(1, 2))
    return bool(np.all(v > 0) and np.all(dev <= ISOTROPIC_METRIC_RTOL * v))


#: log2 of the points per scrambling of the training-error QMC: first, largest, and quick
_QMC_START_LOG2 = 12
_QMC_MAX_LOG2 = 14
_QMC_QUICK_LOG2 = 10
#: the first and the quick log2 with the control variate of cross-entropy (only the rare
#: points where the proximal point and ``omega + V y`` disagree are left to sample: on ten
#: classes from digits, 1 in 2e6; the resolution floor ``max rho / n`` of
#: :func:`_qmc_train_accuracy` is 1.2e-5 at ``8 x 2**10`` points and ten classes)
_CV_START_LOG2 = 10
_CV_QUICK_LOG2 = 8


def _ray_flux(p: np.ndarray, a: np.ndarray) -> float:
    """Flux of ``F(z) = z (1 - exp(-|z|^2/2)) / (2 pi |z|^2)`` through the straight ray
    ``z = p + t a``, ``t >= 0`` (orientation: left of the direction of travel is inside).

    Closed form with Owen's T function: with ``d`` the distance of the line to the origin
    and ``tau0 = p.a / |a|``, the flux is ``sign(p x a) / (2 pi) [pi/2 - atan(tau0/d)
    - 2 pi T(d, inf) + 2 pi T(d, tau0/d)]``.
    """
    na = float(np.hypot(*a))
    cross = float(p[0] * a[1] - p[1] * a[0])
    d = abs(cross) / na
    if d < 1e-300:
        return 0.0
    tau0 = float(p @ a) / na
    x = tau0 / d
    val = np.pi / 2 - np.arctan(x) - 2 * np.pi * (0.5 * ndtr(-d) - owens_t(d, x))
    return float(np.sign(cross) * val / (2 * np.pi))


def _wedge_probability(
    problem: Problem,
    c: int,
    m: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    compiled: bool = True,
) -> tuple[float, float]:
    """``P[h_c in cone_c]`` for a two-dimensional effective output, as a boundary integral.

    The correct set in ``h`` is a wedge with apex at the origin, bounded by two rays.  The
    map ``omega(h) = h + V grad loss(h)`` is an orientation-preserving diffeomorphism (its
    Jacobian ``I + V H`` has positive determinant), so the correct set in ``omega`` is the
    region bounded by the images of the two rays.  In whitened coordinates
    ``z = L^{-1}(omega - m)`` (``Q = L L^T``) the standard normal density is the divergence of
    ``F(z) = z (1 - exp(-|z|^2/2)) / (2 pi |z|^2)``; by the divergence theorem the probability
    is the flux of ``F`` through the two image curves plus ``Delta theta / (2 pi)`` for the arc
    at infinity.  On ``[0, S1]`` each flux is a one-dimensional integral along the ray,
    computed on panels adapted to the curve (equal increments of ``|dz| / (|z| + 0.05)``);
    beyond ``S1`` the gradient of the cross-entropy has saturated (exponentially) and the image
    is a straight ray, whose flux is closed-form (:func:`_ray_flux`).  ``compiled`` selects the
    kernel :func:`gaussmix._kernels.ce_ray_flux` for the curved part (cross-entropy; the
    numpy path is its reference).  The error estimate
    compares Gauss-Legendre rules of 10 and 6 nodes on the same panels.
    """
    D, t = problem.constraints[c]
    if np.any(t != 0):
        raise ValueError("the wedge rule needs decision boundaries through the origin")
    try:
        Lq = np.linalg.cholesky(Q)
    except np.linalg.LinAlgError as exc:
        raise FloatingPointError("Q_c is not positive definite") from exc
    Linv = np.linalg.inv(Lq)
    ref = problem.P @ problem.y[c]  # the label direction lies inside the cone
    phi0 = np.arctan2(ref[1], ref[0])
    centers = np.arctan2(-D[:, 1], -D[:, 0]) - phi0
    centers = (centers + np.pi) % (2 * np.pi) - np.pi
    lo = phi0 + float(np.max(centers - np.pi / 2))
    hi = phi0 + float(np.min(centers + np.pi / 2))
    y = problem.y[c][None, :]
    loss = problem.loss

    def z_of(s: np.ndarray, u: np.ndarray) -> np.ndarray:
        h = s[:, None] * u
        return (h + loss.grad(y, h) @ V.T - m) @ Linv.T

    # the curved part has a compiled kernel where the loss has the cross-entropy channel kernel
    compiled = compiled and compiled_kernel(loss) is CROSS_ENTROPY_KERNEL

    def flux(u: np.ndarray) -> tuple[float, float]:
        if compiled:
            xa, wa = _leggauss(10)
            xb, wb = _leggauss(6)
            (fa, fb), zend = ce_ray_flux(
                np.ascontiguousarray(u, dtype=float),
                np.ascontiguousarray(problem.P),
                int(np.argmax(problem.y[c])),
                np.ascontiguousarray(V, dtype=float),
                np.ascontiguousarray(m, dtype=float),
                np.ascontiguousarray(Linv),
                float(_WEDGE_S1),
                xa,
                wa,
                xb,
                wb,
            )
            ray = _ray_flux(zend, Linv @ u)
            return fa + ray, abs(fa - fb)
        s0 = _WEDGE_S1 * np.linspace(0.0, 1.0, WEDGE_SCAN) ** 2
        z0 = z_of(s0, u)
        seg = np.linalg.norm(np.diff(z0, axis=0), axis=1)
        rmin = np.minimum(np.linalg.norm(z0[:-1], axis=1), np.linalg.norm(z0[1:], axis=1))
        mu = np.concatenate([[0.0], np.cumsum(seg / (rmin + 0.05))])
        out = []
        for nodes in (10, 6):
            n_pan = int(np.clip(np.ceil(mu[-1] / WEDGE_PANEL), WEDGE_MIN_PANELS, 4000))
            edges = np.interp(np.linspace(0.0, mu[-1], n_pan + 1), mu, s0)
            edges = np.unique(edges)
            x, w = _leggauss(nodes)
            a, e = edges[:-1, None], edges[1:, None]
            s = (a + (e - a) * (x + 1) / 2).ravel()
            ws = ((e - a) / 2 * w).ravel()
            h = s[:, None] * u
            z = (h + loss.grad(y, h) @ V.T - m) @ Linv.T
            dz = (u + (loss.hess(y, h) @ u) @ V.T) @ Linv.T
            r2 = np.sum(z * z, axis=1)
            small = r2 < 1e-8
            G = np.where(small, 1 / (4 * np.pi), -np.expm1(-0.5 * r2) / (2 * np.pi * r2 + small))
            curved = float(np.sum(ws * G * (z[:, 0] * dz[:, 1] - z[:, 1] * dz[:, 0])))
            out.append(curved + _ray_flux(z0[-1], Linv @ u))
        return out[0], abs(out[0] - out[1])

    u_lo = np.array([np.cos(lo), np.sin(lo)])
    u_hi = np.array([np.cos(hi), np.sin(hi)])
    f_lo, e_lo = flux(u_lo)
    f_hi, e_hi = flux(u_hi)
    a_lo, a_hi = Linv @ u_lo, Linv @ u_hi
    arc = np.arctan2(a_lo[0] * a_hi[1] - a_lo[1] * a_hi[0], a_lo @ a_hi) % (2 * np.pi)
    p = f_lo - f_hi + arc / (2 * np.pi)
    return min(max(p, 0.0), 1.0), e_lo + e_hi


#: end of the curved part of each ray; beyond it the softmax gradient has saturated
_WEDGE_S1 = 96.0


@lru_cache(maxsize=32)
def _leggauss(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(n)


def _prox_points(
    problem: Problem, omega: np.ndarray, V: np.ndarray, clusters: np.ndarray | None = None
) -> np.ndarray:
    """Proximal points of the problem's loss at ``omega`` (k, N, L) under the metrics ``V``
    (k, L, L) of the ``clusters`` (default all): the compiled channel kernel where the loss
    has one (its moments are discarded), the loss's batched numpy prox otherwise."""
    loss = problem.loss
    y = problem.y if clusters is None else problem.y[clusters]
    kernel = compiled_kernel(loss)
    if kernel is None:
        return loss.prox(y, omega, V)
    w = np.full(omega.shape[1], 1.0 / omega.shape[1])
    return compiled_moments(kernel, loss, y, omega, V, w, None)[1]


def _qmc_train_accuracy(
    problem: Problem,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    *,
    seed: int = 0,
    start: int = 12,
    stop: int = 15,
    n_rep: int = 8,
    clusters: tuple[int, ...] | None = None,
    control: bool = False,
    quick: bool = False,
) -> tuple[np.ndarray, float]:
    """Randomised quasi-Monte Carlo estimate of the training accuracy (seeded) of the
    ``clusters`` (default all; returned in that order, with the standard error of their
    ``rho``-weighted sum renormalised to the clusters computed).

    ``control`` (softmax cross-entropy): the indicator of a correct proximal point is
    sampled minus a control variate whose mean is known, the indicator of
    ``omega + V y`` in the correct cone, i.e. ``argmax(h + V p) = y`` for the proximal
    point ``h = omega - V (p - y)``, ``p = softmax(h)``.  It equals the indicator of
    ``argmax h = y`` for isotropic metrics (:func:`isotropic_softmax_metric`) and differs
    from it only on a thin set near the boundaries otherwise; its mean is the orthant
    probability of the Gaussian ``omega + V y`` (seeded, to
    :data:`~gaussmix.theory.numerics.tolerances.TRAIN_CONTROL_ORTHANT_TOL`, or
    :data:`~gaussmix.theory.numerics.tolerances.SPREAD_ORTHANT_TOL` with ``quick``).  The
    estimate stays unbiased for any metric; the error is the orthant's plus that of the
    sampled difference, at least ``max rho / n`` with ``n`` the points per cluster (were
    no disagreeing point seen, a bound on their weighted probability: with
    ``sum_c p_c > 1 / n`` the chance of seeing none is below ``1 / e``).

    Without the control (where it does not pay) the proximal point too is solved only where
    that screening is unsure: the same estimate, to the bit (measured on K = 4 lasso fixed
    points of ``tests/test_cold.py``: at 4-10 % of the nodes, 0.66 -> 0.11 s a call).

    The points are the scrambled Sobol' sets of
    :class:`~gaussmix.theory.numerics.quadrature.SobolRQMC` with ``seed`` (one per replicate),
    which are
    nested in their size: the counts of ``2**start`` points per set are extended by the new
    points of each doubling (no point is solved twice) until the standard error across the
    ``n_rep`` sets is below :data:`~gaussmix.theory.numerics.tolerances.TRAIN_QMC_TOL` or there are
    ``2**stop`` points per set.
    """
    K, L = M.shape
    idx = np.arange(K) if clusters is None else np.asarray(clusters, dtype=int)
    M, Q, V = M[idx], Q[idx], V[idx]
    S = sqrtm_psd(Q)
    rho = problem.mixture.rho[idx] / problem.mixture.rho[idx].sum()
    constraints = [problem.constraints[c] for c in idx]
    base, base_err = np.zeros(idx.size), 0.0
    # the screening of the proximal points by ``omega + V y`` (:func:`_control_radius`), with
    # the control variate or without: cross-entropy, the cones of ``argmax``
    radius = None
    if compiled_kernel(problem.loss) is CROSS_ENTROPY_KERNEL:
        radius = _control_radius(problem, constraints, V)
        shift = np.einsum("kij,kj->ki", V, problem.y[idx] @ problem.P.T)
    if control:  # the orthant of omega + V y, and its indicator subtracted below
        tol = SPREAD_ORTHANT_TOL if quick else TRAIN_CONTROL_ORTHANT_TOL
        base, errs = _cluster_orthants(constraints, M + b + shift, Q, seed=seed, abs_tol=tol)
        base_err = float(rho @ errs)
    elif radius is not None and not np.all(np.isfinite(radius)):
        radius = None
    hits = np.zeros((n_rep, idx.size))
    done = 0
    for n_log2 in range(start, stop + 1):
        rule = SobolRQMC(L, n_log2, n_rep, seed)
        # the new points of every replicate in one call (a node's proximal point does not
        # depend on the others: the same points, on the kernel's threads)
        xi = np.concatenate([rep.nodes[done:] for rep in rule.replicates()])
        omega = (M + b)[:, None, :] + xi @ S  # S symmetric
        if radius is not None:  # the proximal point only where the screening is unsure
            for c, (D, t) in enumerate(constraints):
                g = (omega[c] + shift[c]) @ D.T - t
                r = radius[c, : D.shape[0]]
                ctrl = np.all(g < 0.0, axis=-1)
                unsure = np.nonzero(~(np.all(g < -r, axis=-1) | np.any(g > r, axis=-1)))[0]
                inside = ctrl.astype(np.int8)
                if unsure.size:
                    h = _prox_points(problem, omega[c][None, unsure], V[c][None], idx[c : c + 1])
                    inside[unsure] = np.all(h[0] @ D.T < t, axis=-1)
                diff = inside - ctrl if control else inside  # (the control's: subtracted)
                hits[:, c] += diff.reshape(n_rep, -1).sum(axis=1)
        else:
            h = _prox_points(problem, omega, V, idx)
            for c, (D, t) in enumerate(constraints):
                inside = np.all(h[c] @ D.T < t, axis=-1)
                hits[:, c] += np.count_nonzero(inside.reshape(n_rep, -1), axis=1)
        done = 2**n_log2
        reps = hits / done
        err = float((reps @ rho).std(ddof=1) / np.sqrt(n_rep))
        if control:  # (the resolution of the sample: see above)
            err = max(err, float(rho.max()) / (n_rep * done)) + base_err
        if err <= TRAIN_QMC_TOL:
            break
    return base + reps.mean(axis=0), err


#: the control variate of the training error is used where the bound on its sampled
#: difference's variance is at least this many times below the indicator's own variance
_CONTROL_GAIN = 4.0
#: log2 of the points of the one scrambling that judges it (:func:`_control_pays`)
_CONTROL_PROBE_LOG2 = 10


def _control_pays(
    problem: Problem,
    M: np.ndarray,
    b: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    clusters: tuple[int, ...],
    seed: int,
) -> bool:
    """Whether the control variate of :func:`_qmc_train_accuracy` reduces the variance of
    the training accuracy of the ``clusters``, judged on one scrambling of ``2**10``
    points (no proximal point): the difference it samples is nonzero only where the
    screening of :func:`_control_radius` is unsure, so its variance is at most the
    fraction ``f_c`` of such points; the plain indicator's is ``a_c (1 - a_c)``, with the
    control's fraction ``a_c`` of correct points standing for the accuracy.  True where
    ``sum rho_c^2 f_c`` is :data:`_CONTROL_GAIN` times below ``sum rho_c^2 a_c (1 - a_c)``:
    nearly isotropic metrics (ten classes from digits: 1 point in 2e4 unsure), not the
    anisotropic ones of unequal priors at small ``lam`` (K = 4, rho = 0.1..0.4,
    lam = 1e-2: the sampled difference's standard error was larger than the plain one's).
    """
    idx = np.asarray(clusters, dtype=int)
    constraints = [problem.constraints[c] for c in idx]
    radius = _control_radius(problem, constraints, V[idx])
    if not np.all(np.isfinite(radius)):
        return False
    xi = SobolRQMC(M.shape[1], _CONTROL_PROBE_LOG2, 1, seed).replicates()[0].nodes
    S = sqrtm_psd(Q[idx])
    u = (M + b)[idx][:, None, :] + xi @ S
    u += np.einsum("kij,kj->ki", V[idx], problem.y[idx] @ problem.P.T)[:, None, :]
    unsure, acc = np.empty(idx.size), np.empty(idx.size)
    for c, (D, t) in enumerate(constraints):
        g = u[c] @ D.T - t
        r = radius[c, : D.shape[0]]
        acc[c] = np.mean(np.all(g < 0.0, axis=-1))
        unsure[c] = np.mean(~(np.all(g < -r, axis=-1) | np.any(g > r, axis=-1)))
    w = problem.mixture.rho[idx] ** 2
    return bool(_CONTROL_GAIN * (w @ unsure) <= w @ (acc * (1.0 - acc)))


def _control_radius(
    problem: Problem, constraints: Sequence[tuple[np.ndarray, np.ndarray]], V: np.ndarray
) -> np.ndarray:
    """For each cluster ``c`` and constraint ``j`` a bound ``r_cj`` on ``|D_j (u - g)|``,
    where ``u = omega + V_c y_c`` is the control of :func:`_qmc_train_accuracy` and
    ``g = u - A_c P p`` has the signs of the proximal point's ``D_j h``: with
    ``V_c = v_c I + A_c`` (``v_c`` the mean eigenvalue) the proximal point
    ``h = omega - V_c (P p - P y)`` gives ``g = h + v_c P p``, whose components order like
    ``h``'s (as for an isotropic metric, :func:`isotropic_softmax_metric`: ``D_j P p`` is a
    positive multiple of ``p_k - p_y`` where ``D_j h`` is one of ``h_k - h_y``), and
    ``|D_j A_c P p| <= ||D_j A_c|| ||P||`` since ``||p|| <= 1``.  Where every ``D_j u - t_j``
    is below ``-r_cj``, or one is above ``r_cj``, the two indicators agree; elsewhere the
    proximal point decides.  Infinite (it decides everywhere) unless every threshold ``t``
    is zero (the cones of ``argmax``)."""
    k, L = V.shape[0], V.shape[-1]
    n = max(D.shape[0] for D, _ in constraints)
    out = np.full((k, n), np.inf)
    if any(np.any(t != 0.0) for _, t in constraints):
        return out
    v = np.trace(V, axis1=1, axis2=2) / L
    A = V - v[:, None, None] * np.eye(L)
    scale = float(np.linalg.norm(problem.P, 2))
    for c, (D, _) in enumerate(constraints):
        out[c, : D.shape[0]] = np.linalg.norm(D @ A[c], axis=1) * scale
    return out


def free_energy_terms(
    problem: Problem,
    M: np.ndarray,
    Q: np.ndarray,
    V: np.ndarray,
    Mhat: np.ndarray,
    Qhat: np.ndarray,
    Vhat: np.ndarray,
    Eenv: np.ndarray,
    psi_w: float,
) -> float:
    """The RS free energy ``Phi`` (eq. (168)) given the channel and prior parts."""
    rho = problem.mixture.rho
    coupling = (
        np.einsum("ka,ka->", Mhat, M)
        - 0.5 * np.einsum("kab,kba->", Vhat, Q)
        + 0.5 * np.einsum("kab,kba->", Qhat, V)
    )
    return float(problem.alpha * rho @ Eenv + psi_w + coupling)


def weight_sparsity(mixture, prior) -> dict:
    """Sparsity of ``W*`` from a prior update (:class:`gaussmix.theory.prior.prior.PriorResult`).

    Returns
    -------
    dict
        ``nonzero_fraction``: expected fraction of non-zero components of ``W*`` (per output
        row); ``nonzero_fraction_support`` / ``nonzero_fraction_off_support``: the same
        restricted to the directions where the means have a non-zero component (atoms with
        ``theta != 0``) / zero mean components (NaN if there is no such direction);
        ``l1_norm``: ``||W*||_1 / d``.  Ridge weights are non-zero almost surely (1.0).
    """
    return weight_sparsities(mixture, [prior])[0]


def weight_sparsities(mixture, priors: list) -> list[dict]:
    """:func:`weight_sparsity` of each of ``priors`` (prior updates of one mixture, e.g. the
    points of a curve), the mixture's weights and masks taken once."""
    w = mixture.weights
    on = mixture.support
    masks = []  # (the support, then the rest: each mask's weights and their total)
    for mask in (on, ~on):
        wm = w[mask]
        masks.append((mask, wm, float(wm.sum())))
    ones = None
    out = []
    for prior in priors:
        if prior.atom_nonzero is None:
            if ones is None:
                ones = np.ones(w.size)
            p = ones
        else:
            p = np.asarray(prior.atom_nonzero)
        support, off = (
            float(wm @ p[mask] / tot) if tot > 0 else float("nan") for mask, wm, tot in masks
        )
        out.append(
            {
                "nonzero_fraction": float(w @ p),
                "nonzero_fraction_support": support,
                "nonzero_fraction_off_support": off,
                "l1_norm": float(prior.l1_norm),
            }
        )
    return out
