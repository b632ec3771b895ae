"""Exact finite-sample minimisers of eq. (2): the simulation solver each loss declares.

Every loss class of :mod:`gaussmix.theory.channel.losses` declares its solver through
``Loss.fit_erm``, which calls one of the functions below on rescaled features
``Xs = X / sqrt(d)`` and label vectors ``Y`` (n, L):

* square + ridge: closed form (primal or dual, whichever is smaller);
* square + lasso / elastic net: coordinate descent (scikit-learn's ``Lasso`` /
  ``ElasticNet`` on every output, the penalty being separable);
* logistic, cross-entropy + ridge: :func:`newton_ridge`, a full-batch line-search Newton
  method with (preconditioned) conjugate gradients, exact and fast at small ``lam`` where the
  data are separable; multinomial for three or more classes, two-class cross-entropy as the
  equivalent binary logistic problem;
* logistic, cross-entropy + lasso / elastic net: ``LogisticRegression`` with saga;
* hinge + ridge: libsvm (``SVC``, linear or precomputed kernel, unpenalised bias).

The scikit-learn parameters come from :mod:`gaussmix.theory.model.conventions` (docs/design.md
pitfall
7).  scikit-learn is imported when a solver first runs.  Each function returns ``(W, b,
info)`` with ``info = {'solver', 'converged', 'n_iter'}`` (and solver-specific counts).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
from scipy import linalg

from ...core.caught import caught
from ..model import conventions as conv
from ..model.penalties import Penalty

__all__ = [
    "newton_ridge",
    "fit_square",
    "fit_logistic",
    "fit_cross_entropy",
    "fit_hinge",
    "kkt_residual",
    "DEFAULT_TOL",
    "DEFAULT_MAX_ITER",
    "SAGA_L1_TOL",
    "saga_sweep_tol",
]

#: default solver tolerances (stationarity for Newton-CG / saga / coordinate descent, libsvm's
#: KKT tolerance; lbfgs: the previous ridge solver, timed in benchmarks/bench_erm.py)
DEFAULT_TOL = {"newton": 1e-10, "lbfgs": 1e-10, "saga": 1e-10, "cd": 1e-10, "libsvm": 1e-8}
DEFAULT_MAX_ITER = {"newton": 500, "lbfgs": 100_000, "saga": 200_000, "cd": 1_000_000}
#: tolerance of saga (logistic fits with an l1 term) in sweeps and figures: the KKT residual
#: is then ~1e-7 and the observables move by < 1e-4 (tests/test_sparse_validation.py), at a
#: fraction of the cost of the default 1e-10
SAGA_L1_TOL = 1e-5
#: largest n for which the hinge loss uses a precomputed (n x n) Gram matrix
SVC_PRECOMPUTED_MAX_N = 6000

Fit = tuple[np.ndarray, np.ndarray, dict]
#: relative size of a decrease of the ERM objective that is lost in its rounding (the sum
#: of n loss values): below it :func:`newton_ridge` takes full Newton steps
_ROUNDING = 1e-13


def _ridge(Xs: np.ndarray, Y: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form square loss + ``lam ||W||^2 / 2`` with an unpenalised intercept."""
    n, d = Xs.shape
    xbar = Xs.mean(axis=0)
    ybar = Y.mean(axis=0)
    Xc = Xs - xbar
    Yc = Y - ybar
    try:
        if d <= n or lam == 0.0:
            A = Xc.T @ Xc
            A[np.diag_indices_from(A)] += lam
            WT = linalg.solve(A, Xc.T @ Yc, assume_a="pos")
        else:
            G = Xc @ Xc.T
            G[np.diag_indices_from(G)] += lam
            WT = Xc.T @ linalg.solve(G, Yc, assume_a="pos")
    except (linalg.LinAlgError, np.linalg.LinAlgError) as exc:
        raise ValueError(
            f"the ridge system is singular (lam={lam:g}, n={n}, d={d}); use lam > 0"
        ) from exc
    W = WT.T
    return W, ybar - W @ xbar


def _run_sklearn(est: Any, X: np.ndarray, y: np.ndarray, max_iter: int) -> tuple[bool, int]:
    """Fit ``est`` and report ``(converged, n_iter)`` (scikit-learn's warnings are caught)."""
    from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning

    with caught() as log:
        est.fit(X, y)
    n_iter = int(np.max(np.atleast_1d(getattr(est, "n_iter_", 0))))
    warned = any(issubclass(w.category, SkConvergenceWarning) for w in log)
    for w in log:
        if not issubclass(w.category, SkConvergenceWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return (not warned) and n_iter < max_iter, n_iter


def fit_square(
    loss: Any,
    Xs: np.ndarray,
    Y: np.ndarray,
    lam: float,
    penalty: Penalty,
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    random_state: int | None = None,
) -> Fit:
    """Square loss: ridge in closed form, lasso / elastic net by coordinate descent."""
    pen = penalty.canonical()
    if pen.l1_ratio == 0.0:
        W, b = _ridge(Xs, Y, lam)
        return W, b, {"solver": "closed-form", "converged": True, "n_iter": 0}
    from sklearn.linear_model import ElasticNet, Lasso

    n, d = Xs.shape
    L = Y.shape[1]
    params = conv.sklearn_elasticnet_params(lam, n, pen)
    tol_v = DEFAULT_TOL["cd"] if tol is None else tol
    mi = DEFAULT_MAX_ITER["cd"] if max_iter is None else max_iter
    if pen.l1_ratio == 1.0:
        est = Lasso(alpha=params["alpha"], tol=tol_v, max_iter=mi)
    else:
        est = ElasticNet(**params, tol=tol_v, max_iter=mi)
    ok, n_iter = _run_sklearn(est, Xs, Y, mi)
    W = np.array(est.coef_, dtype=float).reshape(L, d)
    b = np.array(est.intercept_, dtype=float).reshape(L)
    return W, b, {"solver": "coordinate-descent", "converged": ok, "n_iter": n_iter}


def _logistic_regression(
    Xs: np.ndarray,
    target: np.ndarray,
    n_classes: int,
    lam: float,
    penalty: Penalty,
    tol: float | None,
    max_iter: int | None,
    random_state: int | None,
    loss: Any,
) -> Fit:
    """Logistic / multinomial regression on integer targets, eq. (2): ridge by
    :func:`newton_ridge` on ``loss`` (the logistic loss for two classes, the cross-entropy
    for more), lasso and elastic net by ``LogisticRegression`` with saga."""
    if penalty.canonical().l1_ratio == 0.0:
        if n_classes == 2:
            Y = (2.0 * target - 1.0)[:, None]
        else:
            Y = np.eye(n_classes)[target]
        return newton_ridge(loss, Xs, Y, lam, tol=tol, max_iter=max_iter)
    from sklearn.linear_model import LogisticRegression

    params = conv.sklearn_logistic_params(lam, penalty)
    solver = params["solver"]
    tol_v = DEFAULT_TOL[solver] if tol is None else tol
    mi = DEFAULT_MAX_ITER[solver] if max_iter is None else max_iter
    est = LogisticRegression(**params, tol=tol_v, max_iter=mi, random_state=random_state)
    ok, n_iter = _run_sklearn(est, Xs, target, mi)
    info = {"solver": solver, "converged": ok, "n_iter": n_iter}
    return np.array(est.coef_, dtype=float), np.array(est.intercept_, dtype=float), info


def newton_ridge(
    loss: Any,
    Xs: np.ndarray,
    Y: np.ndarray,
    lam: float,
    *,
    tol: float | None = None,
    max_iter: int | None = None,
) -> Fit:
    """Exact minimiser of eq. (2) with ridge, ``sum_nu loss(y_nu, W x_nu + b) + lam
    ||W||_F^2 / 2``, for a smooth convex loss (logistic, cross-entropy), by a line-search
    Newton method with (preconditioned) conjugate gradients on the full batch.

    Parameters
    ----------
    loss : Loss
        Provides ``value``, ``grad`` and ``hess`` (:mod:`gaussmix.theory.channel.losses`); when
        ``loss.shift_invariant`` (cross-entropy), the iterates stay in the gauge
        ``sum_k W_k = 0``, ``sum_k b_k = 0``, which contains the ridge minimiser.
    Xs : ndarray (n, d)
        Features ``X / sqrt(d)``.
    Y : ndarray (n, L)
        Label vectors (``+-1`` for the logistic loss, one-hot for the cross-entropy).
    lam : float
        Ridge strength ``> 0``.
    tol : float, optional
        Stationarity tolerance on :func:`kkt_residual` (largest gradient entry over ``n``);
        default :data:`DEFAULT_TOL` ``['newton']``.
    max_iter : int, optional
        Cap on the Newton iterations (default :data:`DEFAULT_MAX_ITER` ``['newton']``).

    Returns
    -------
    W : ndarray (L, d)
    b : ndarray (L,)
    info : dict
        ``solver='newton-cg'``, ``converged`` (the residual reached ``tol``), ``n_iter``
        (Newton iterations), ``n_hessp`` (Hessian-vector products), ``n_precond``
        (preconditioner factorisations).

    Notes
    -----
    Why not lbfgs: at small ``lam`` below the separability threshold the data are separable
    and the minimiser's norm grows like ``log(1/lam)`` while its direction tends to the
    max-margin one (paper, Appendix C.1.1, eq. (198)); first-order methods crawl there, Newton's
    method does not.  Each iteration solves ``H s = -g`` with ``H = sum_nu x_nu^T H_nu x_nu
    + lam`` (``H_nu`` the loss's L x L Hessian, applied through two products with ``Xs``) by
    conjugate gradients to the relative residual ``eta_k`` of Eisenstat and Walker's choice
    2, ``eta_k = 0.9 (|g_k| / |g_{k-1}|)^2`` (safeguarded, at most 0.5: loose far from the
    minimiser, superlinear near it), then backtracks (Armijo) from the full step.  When the
    previous solve took more conjugate-gradient steps than a preconditioner costs (in units
    of Hessian-vector products), the next ones use the Cholesky factor of ``[Xs, 1]^T
    diag(w) [Xs, 1] + lam`` with ``w_nu = tr H_nu / (L - 1)`` (``tr H_nu`` for ``L = 1``:
    the Hessian itself, up to ``lam`` on the bias), shared by the ``L`` outputs.  Once the
    predicted decrease is below the rounding of the objective, full steps are taken and the
    gradient measures progress.  Stops when :func:`kkt_residual` ``<= tol``; unconverged
    after ``max_iter`` iterations, when no step decreases the objective, or when the
    residual stops decreasing (its rounding floor is above ``tol``).
    """
    n, d = Xs.shape
    L = Y.shape[1]
    tol_v = DEFAULT_TOL["newton"] if tol is None else float(tol)
    mi = DEFAULT_MAX_ITER["newton"] if max_iter is None else int(max_iter)
    shift = bool(getattr(loss, "shift_invariant", False)) and L > 1

    def gauge(gW: np.ndarray, gb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if shift:
            return gW - gW.mean(axis=0), gb - gb.mean()
        return gW, gb

    def dot(aW: np.ndarray, ab: np.ndarray, cW: np.ndarray, cb: np.ndarray) -> float:
        return float(np.vdot(aW, cW) + np.vdot(ab, cb))

    W = np.zeros((L, d))
    b = np.zeros(L)
    h = np.zeros((n, L))
    f = float(loss.value(Y, h).sum())
    # cost of one preconditioner (Gram matrix + Cholesky) in Hessian-vector products
    precond_cost = (n * d * d + d**3 / 3.0) / (4.0 * n * d * L)
    cg_max = 2 * L * (d + 1)
    info: dict[str, Any] = {"solver": "newton-cg", "converged": False, "n_iter": 0}
    n_hessp = n_precond = stalls = 0
    last_cg = 0
    best_res = np.inf
    eta = 0.5
    gnorm_prev = None
    while True:
        G = loss.grad(Y, h)
        gW, gb = gauge(G.T @ Xs + lam * W, G.sum(axis=0))
        res = max(float(np.abs(gW).max()), float(np.abs(gb).max())) / n
        if res <= tol_v:
            info["converged"] = True
            break
        if info["n_iter"] >= mi:
            break
        info["n_iter"] += 1
        Hs = loss.hess(Y, h)
        hessp = functools.partial(_hessp, Xs, Hs, lam, gauge)

        precond = None
        if last_cg > precond_cost:
            precond = _ridge_preconditioner(Xs, Hs, lam, gauge)
            n_precond += 1
        gnorm = np.sqrt(dot(gW, gb, gW, gb))
        if gnorm_prev is not None:  # Eisenstat-Walker forcing term (choice 2, safeguarded)
            eta_new = 0.9 * (gnorm / gnorm_prev) ** 2
            if 0.9 * eta**2 > 0.1:
                eta_new = max(eta_new, 0.9 * eta**2)
            eta = min(0.5, eta_new)
        gnorm_prev = gnorm
        sW, sb, last_cg = _conjugate_gradient(hessp, precond, -gW, -gb, eta, cg_max, dot)
        n_hessp += last_cg
        hs = Xs @ sW.T + sb
        slope = dot(gW, gb, sW, sb)
        t = 1.0
        if -slope > _ROUNDING * max(1.0, abs(f)):
            # Armijo backtracking from the full Newton step
            while True:
                Wt = W + t * sW
                ft = float(loss.value(Y, h + t * hs).sum() + 0.5 * lam * np.vdot(Wt, Wt))
                if ft <= f + 1e-4 * t * slope or t < 1e-12:
                    break
                t *= 0.5
            if not ft < f:
                break  # no descent at all: give up (reported as not converged)
        else:
            # the predicted decrease is below the rounding of the objective: the full
            # Newton step (the gradient, not the objective, measures progress here)
            stalls = stalls + 1 if res >= best_res else 0
            if stalls >= 3:
                break  # the residual's rounding floor lies above tol
        best_res = min(best_res, res)
        W, b, h = W + t * sW, b + t * sb, h + t * hs
        f = float(loss.value(Y, h).sum() + 0.5 * lam * np.vdot(W, W))
    info.update(n_hessp=n_hessp, n_precond=n_precond)
    return W, b, info


def _hessp(
    Xs: np.ndarray, Hs: np.ndarray, lam: float, gauge: Any, vW: np.ndarray, vb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ERM Hessian (per-sample loss Hessians ``Hs`` (n, L, L), ridge ``lam``) applied to
    the direction ``(vW, vb)``: two products with ``Xs``."""
    T = np.einsum("nij,nj->ni", Hs, Xs @ vW.T + vb)
    return gauge(T.T @ Xs + lam * vW, T.sum(axis=0))


def _conjugate_gradient(
    hessp: Any,
    precond: Any,
    rW: np.ndarray,
    rb: np.ndarray,
    rel_tol: float,
    max_steps: int,
    dot: Any,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Solve ``H s = r`` (``r = (rW, rb)``) by (preconditioned) conjugate gradients from
    ``s = 0`` until ``|residual| <= rel_tol |r|``; returns ``(sW, sb, steps)``."""
    sW, sb = np.zeros_like(rW), np.zeros_like(rb)
    rW, rb = rW.copy(), rb.copy()
    target = rel_tol * np.sqrt(dot(rW, rb, rW, rb))
    zW, zb = precond(rW, rb) if precond is not None else (rW, rb)
    pW, pb = zW.copy(), zb.copy()
    rz = dot(rW, rb, zW, zb)
    steps = 0
    while steps < max_steps:
        qW, qb = hessp(pW, pb)
        steps += 1
        a = rz / dot(pW, pb, qW, qb)
        sW += a * pW
        sb += a * pb
        rW -= a * qW
        rb -= a * qb
        if np.sqrt(dot(rW, rb, rW, rb)) <= target:
            break
        zW, zb = precond(rW, rb) if precond is not None else (rW, rb)
        rz_new = dot(rW, rb, zW, zb)
        pW = zW + (rz_new / rz) * pW
        pb = zb + (rz_new / rz) * pb
        rz = rz_new
    return sW, sb, steps


def _ridge_preconditioner(Xs: np.ndarray, Hs: np.ndarray, lam: float, gauge: Any) -> Any:
    """``(vW, vb) -> M^{-1} (vW, vb)`` with ``M = [Xs, 1]^T diag(w) [Xs, 1] + lam I`` (the same
    for every output row), ``w_nu = tr H_nu / max(L - 1, 1)``: the Hessian with every
    per-sample L x L block replaced by a multiple of the identity (on the complement of
    ``1`` for a shift-invariant loss).  Samples with negligible ``w`` are skipped."""
    n, d = Xs.shape
    L = Hs.shape[-1]
    w = np.trace(Hs, axis1=1, axis2=2) / max(L - 1, 1)
    keep = w > 1e-14 * max(float(w.max()), lam)
    Xa = np.hstack([Xs[keep], np.ones((int(keep.sum()), 1))])
    M = (Xa * w[keep, None]).T @ Xa
    M[np.diag_indices(d + 1)] += lam
    factor = linalg.cho_factor(M, lower=True, check_finite=False)

    def apply(vW: np.ndarray, vb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = linalg.cho_solve(factor, np.vstack([vW.T, vb[None, :]]), check_finite=False)
        return gauge(np.ascontiguousarray(z[:d].T), z[d])

    return apply


def saga_sweep_tol(penalty: Penalty) -> float | None:
    """The tolerance sweeps use for ``LogisticRegression`` fits: :data:`SAGA_L1_TOL` when the
    penalty has an l1 part (saga), None (the default) otherwise."""
    return SAGA_L1_TOL if penalty.canonical().l1_ratio > 0 else None


def fit_logistic(
    loss: Any,
    Xs: np.ndarray,
    Y: np.ndarray,
    lam: float,
    penalty: Penalty,
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    random_state: int | None = None,
) -> Fit:
    """Binary logistic loss on ``+-1`` labels: :func:`newton_ridge` for ridge,
    ``LogisticRegression`` with saga otherwise (class 1 is ``+1``)."""
    target = (Y[:, 0] > 0).astype(int)
    return _logistic_regression(Xs, target, 2, lam, penalty, tol, max_iter, random_state, loss)


def fit_cross_entropy(
    loss: Any,
    Xs: np.ndarray,
    Y: np.ndarray,
    lam: float,
    penalty: Penalty,
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    random_state: int | None = None,
) -> Fit:
    """Softmax cross-entropy on one-hot labels; gauge ``sum_k b_k = 0``.

    Two classes are fitted as the equivalent binary logistic problem
    (:meth:`gaussmix.theory.model.penalties.Penalty.two_class_binary`, with the loss
    ``loss.two_class_binary()``) and returned as ``W = [w/2, -w/2]``, ``b = [b/2, -b/2]``.
    """
    L = Y.shape[1]
    t = np.argmax(Y, axis=1)
    present = np.bincount(t, minlength=L)
    if np.any(present == 0):
        raise ValueError(
            f"classes {np.flatnonzero(present == 0).tolist()} have no training point; "
            "increase n (alpha * d)"
        )
    if L == 2:
        lam_b, pen_b = penalty.two_class_binary(lam)
        binary = loss.two_class_binary()
        w, bb, info = _logistic_regression(
            Xs, (t == 0).astype(int), 2, lam_b, pen_b, tol, max_iter, random_state, binary
        )
        return np.vstack([w / 2.0, -w / 2.0]), np.array([bb[0] / 2.0, -bb[0] / 2.0]), info
    W, b, info = _logistic_regression(Xs, t, L, lam, penalty, tol, max_iter, random_state, loss)
    return W, b - b.mean(), info


def fit_hinge(
    loss: Any,
    Xs: np.ndarray,
    Y: np.ndarray,
    lam: float,
    penalty: Penalty,
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    random_state: int | None = None,
) -> Fit:
    """Hinge loss + ridge on ``+-1`` labels by libsvm (dual coordinate descent to ``tol``)."""
    from sklearn.svm import SVC

    y = Y[:, 0]
    n = Xs.shape[0]
    C = conv.svc_C(lam)
    tol_v = DEFAULT_TOL["libsvm"] if tol is None else tol
    if n <= SVC_PRECOMPUTED_MAX_N:
        est = SVC(kernel="precomputed", C=C, tol=tol_v, max_iter=-1)
        est.fit(Xs @ Xs.T, y)
    else:
        est = SVC(kernel="linear", C=C, tol=tol_v, max_iter=-1, cache_size=500)
        est.fit(Xs, y)
    # decision function: sum_i dual_coef_i K(x_i, x) + intercept, positive -> classes_[1] = +1
    w = est.dual_coef_ @ Xs[est.support_]
    b = np.array(est.intercept_, dtype=float)
    ok = int(getattr(est, "fit_status_", 0)) == 0
    n_iter = int(np.max(np.atleast_1d(getattr(est, "n_iter_", 0))))
    return w, b, {"solver": "libsvm", "converged": ok, "n_iter": n_iter}


def kkt_residual(
    Xs: np.ndarray,
    Y: np.ndarray,
    W: np.ndarray,
    b: np.ndarray,
    loss: Any,
    lam: float,
    penalty: Penalty,
) -> float:
    """Largest violation of the stationarity conditions of eq. (2) divided by ``n``.

    Smooth part ``G = sum_nu grad loss x_nu^T / sqrt(d) + lam (1 - l1_ratio) W``; the ``l1``
    part contributes the minimum-norm subgradient.  NaN for a non-smooth loss (hinge).
    """
    if not loss.smooth:
        return float("nan")
    l1_ratio = penalty.l1_ratio
    n = Xs.shape[0]
    h = Xs @ W.T + b
    g = loss.grad(Y, h)
    gW = g.T @ Xs + lam * (1.0 - l1_ratio) * W
    gb = g.sum(axis=0)
    lam1 = lam * l1_ratio
    if lam1 > 0:
        gW = np.where(
            W != 0, gW + lam1 * np.sign(W), np.sign(gW) * np.maximum(np.abs(gW) - lam1, 0.0)
        )
    return float(max(np.abs(gW).max(initial=0.0), np.abs(gb).max(initial=0.0)) / n)
