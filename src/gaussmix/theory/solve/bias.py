"""The bias half of Theorem 1's map: the unpenalised bias's stationarity condition.

The bias satisfies ``sum_c rho_c E[f_c] = 0`` (the gradient form, docs/design.md pitfall 1);
the map takes one Newton step on it at every evaluation (:func:`bias_step`), jointly with
the means where the prior is linear in ``Mhat`` (ridge on dense covariances,
:func:`mean_bias_step`), and sets the zero estimator's bias where the loss has no
curvature (:func:`flat_bias`).  :func:`bias_condition_step` measures the condition at a
converged state (the mark of a degenerate point).
"""

from __future__ import annotations

import numpy as np

from ..channel.losses import solve_batch
from ..numerics.tolerances import BIAS_RIDGE, MEAN_STEP_MAX
from ..problem.problem import Problem
from .state import unpack_state

__all__ = ["bias_condition_step", "bias_step", "flat_bias", "mean_bias_step"]


def flat_bias(problem: Problem, x: np.ndarray) -> np.ndarray | None:
    """The bias of the lasso's zero estimator where the bias-only risk has no curvature.

    At the zero estimator (every ``V_c = Q_c = 0``: ``W* = 0``, each output the bias ``b``)
    the bias condition ``sum_c rho_c grad loss(y_c, b) = 0`` is the stationarity of the
    convex risk ``R(b) = sum_c rho_c loss(y_c, b)``.  Where ``sum_c Vhat_c = 0`` (the loss
    is linear around ``b``: the hinge away from its kinks) and the condition is not met,
    the Newton step of :func:`bias_step` is undefined (where it is met, ``b`` is a
    minimiser and stays); a convex piecewise-linear ``R`` has its minimum at a
    kink of the loss (``loss.kinks``), so ``b`` is the kink of least ``R`` (for the hinge
    with weights ``rho_+ > rho_-``, ``b = 1``; the next channel evaluation there has the
    kink's curvature and the bias condition holds in the subgradient sense).

    Returns
    -------
    ndarray (L,) or None
        None where ``x`` is not the zero estimator or the loss declares no kinks.
    """
    K, L = problem.n_clusters, problem.dim
    Q, _, V, _ = unpack_state(x, K, L)
    kinks = getattr(problem.loss, "kinks", None)
    if kinks is None or L != 1 or np.any(Q) or np.any(V):
        return None
    cand = np.unique(kinks(problem.y @ problem.P.T)[:, 0])
    risk = [problem.mixture.rho @ problem.loss.value(problem.y, np.full((K, 1), c)) for c in cand]
    return np.array([cand[int(np.argmin(risk))]])


def bias_step(Sv: np.ndarray, Sm: np.ndarray) -> np.ndarray:
    """The map's step of the bias, one Newton step on the stationarity condition of the
    unpenalised bias ``sum_c rho_c E[f_c] = 0`` (docs/design.md pitfall 1):
    ``(sum_c Vhat_c + r I)^{-1} sum_c Mhat_c`` with the relative ridge ``r = BIAS_RIDGE
    max |sum_c Vhat_c|`` (:data:`~gaussmix.theory.numerics.tolerances.BIAS_RIDGE`).

    Parameters
    ----------
    Sv : ndarray (L, L) or (P, L, L)
        ``sum_c Vhat_c`` of one point, or of ``P`` points of a curve.
    Sm : ndarray (L,) or (P, L)
        ``sum_c Mhat_c``.

    Returns
    -------
    ndarray (L,) or (P, L)
    """
    L = Sm.shape[-1]
    if Sm.ndim == 1:
        # (one output: its one entry's magnitude as a float, the same number)
        size = abs(float(Sv[0, 0])) if L == 1 else float(np.abs(Sv).max())
        reg = BIAS_RIDGE * (size if size > 0.0 else 1.0)
        if L == 1:  # ((Sv + reg) \ Sm: the same numbers, without the identity's arrays)
            return Sm / (Sv[0] + reg)
        return solve_batch(Sv + reg * np.eye(L), Sm)
    size = np.abs(Sv).max(axis=(-2, -1))
    reg = BIAS_RIDGE * np.where(size > 0.0, size, 1.0)
    return solve_batch(Sv + reg[..., None, None] * np.eye(L), Sm)


def mean_bias_step(
    G: np.ndarray, Vhat: np.ndarray, Mhat: np.ndarray, rM: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The joint Newton step of the means and the bias: the change ``dMhat`` of the hats
    at which the map evaluates the prior, and the bias step ``db``; None if its system is
    singular.

    The channel depends on ``M_c`` and ``b`` through ``omega_c = M_c + b + Q_c^{1/2} xi``,
    so ``dMhat_c / dM_c = dMhat_c / db = -Vhat_c`` (the Stein form,
    ``Vhat_c = -alpha rho_c E[df_c / domega]``), and a ridge prior is linear in ``Mhat``:
    ``M = G Mhat`` at fixed ``Vhat``.  The step linearises both, with ``Q`` and ``V`` held,
    and solves the ``K L + L`` equations

        M + dM = G (Mhat + dMhat),   sum_c (Mhat_c + dMhat_c) = 0,
        dMhat_c = -Vhat_c (dM_c + db),

    the second being the bias condition (docs/design.md pitfall 1, the unregularised
    :func:`bias_step` is its case ``G = 0``).  A step that moves a logit's mean by more
    than :data:`~gaussmix.theory.numerics.tolerances.MEAN_STEP_MAX` is shortened to it
    (``t dMhat``,
    ``t db``, ``0 < t < 1``: the linearisation holds on that scale).  At a fixed point of
    the plain map (``M = G Mhat``, ``sum_c Mhat_c = 0``) the step is zero; conversely the
    image ``(G (Mhat + t dMhat), b + t db)`` is the state only if ``db = 0`` and
    ``(I + (1 - t) G D) dM = 0``, ``D = diag(Vhat_c)``, where ``G D`` (a product of
    positive semi-definite matrices) has no negative eigenvalue: ``dM = 0``, so the state
    is a fixed point of the plain map.  The fixed points are the same.  The plain map
    iterates ``M <- G Mhat(M)``, whose Jacobian ``-G Vhat`` grows with the size of the
    means (``|mu_c|^2 ~ d`` for images): a period-two oscillation that Anderson mixing
    damps in a number of iterations growing with ``d``.

    Parameters
    ----------
    G : ndarray (K, L, K, L)
        ``dM_k[a] / dMhat_j[b]`` (:class:`~gaussmix.theory.prior.dense.MeanResponse`).
    Vhat : ndarray (K, L, L); Mhat : ndarray (K, L)
        Hats at the state.
    rM : ndarray (K, L)
        The prior's ``M`` minus the state's.

    Returns
    -------
    (dMhat, db) : ndarray (K, L), ndarray (L,), or None
    """
    K, L = Mhat.shape
    n = K * L
    GD = np.einsum("kajc,jcb->kajb", G, Vhat).reshape(n, n)
    Sv = Vhat.sum(axis=0)
    size = float(np.abs(Sv).max())
    A = np.empty((n + L, n + L))
    A[:n, :n] = GD + np.eye(n)
    A[:n, n:] = GD.reshape(n, K, L).sum(axis=1)
    A[n:, :n] = Vhat.transpose(1, 0, 2).reshape(L, n)
    A[n:, n:] = Sv + BIAS_RIDGE * (size if size > 0.0 else 1.0) * np.eye(L)
    rhs = np.concatenate([rM.ravel(), Mhat.sum(axis=0)])
    try:
        sol = np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(sol)):
        return None
    dM, db = sol[:n].reshape(K, L), sol[n:]
    shift = dM + db
    t = min(1.0, MEAN_STEP_MAX / max(float(np.abs(shift).max()), 1e-300))
    return -t * np.einsum("cab,cb->ca", Vhat, shift), t * db


def bias_condition_step(Mhat: np.ndarray, Vhat: np.ndarray, b: np.ndarray) -> float:
    """The relative size of the unregularised Newton step of the bias condition,
    ``|sum_c Mhat_c| / (||sum_c Vhat_c|| max(1, |b|))`` (max-norms; ``inf`` where the
    curvature vanishes and the condition is not met, 0 where it is met exactly).

    The map's bias update is this step (with a relative ridge), so at a fixed point of an
    accurate channel it is below ``tol``.  A large value at a state that passed the
    convergence test is the mark of a degenerate point (the condition ``sum_c rho_c E[f_c] =
    0``, docs/design.md pitfall 1, holds only because its terms have underflowed).

    Parameters
    ----------
    Mhat, Vhat : ndarray (K, L), (K, L, L)
        Hat parameters in the effective output space.
    b : ndarray (L,)
        The bias.

    Returns
    -------
    float
    """
    Sm = float(np.abs(Mhat.sum(axis=0)).max())
    if Sm == 0.0:
        return 0.0
    Sv = float(np.abs(Vhat.sum(axis=0)).sum(axis=-1).max())  # the inf-norm of the matrix
    if not Sv > 0.0:
        return np.inf
    return Sm / (Sv * max(1.0, float(np.abs(b).max())))
