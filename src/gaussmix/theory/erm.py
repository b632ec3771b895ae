"""Exact finite-sample minimisers of eq. (ERM): the simulation solver each loss declares.

Every loss class of :mod:`gaussmix.theory.losses` declares its solver through
``Loss.fit_erm``, which calls one of the functions below on rescaled features
``Xs = X / sqrt(d)`` and label vectors ``Y`` (n, L):

* square + ridge: closed form (primal or dual, whichever is smaller);
* square + lasso / elastic net: coordinate descent (scikit-learn's ``Lasso`` /
  ``ElasticNet`` on every output, the penalty being separable);
* logistic, cross-entropy: ``LogisticRegression`` with lbfgs (ridge; followed by a
  warm-started Newton-CG pass when lbfgs stops on its relative-decrease test before the
  gradient reaches ``tol``) or saga (lasso, elastic net), multinomial for three or more
  classes; two-class cross-entropy as the equivalent binary logistic problem;
* hinge + ridge: libsvm (``SVC``, linear or precomputed kernel, unpenalised bias).

The scikit-learn parameters come from :mod:`gaussmix.theory.conventions` (DESIGN.md pitfall
7).  scikit-learn is imported when a solver first runs.  Each function returns ``(W, b,
info)`` with ``info = {'solver', 'converged', 'n_iter'}``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import linalg

from . import conventions as conv
from .penalties import Penalty

__all__ = [
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

#: default solver tolerances (stationarity for lbfgs / saga / coordinate descent, libsvm's
#: KKT tolerance)
DEFAULT_TOL = {"lbfgs": 1e-10, "saga": 1e-10, "cd": 1e-10, "libsvm": 1e-8}
DEFAULT_MAX_ITER = {"lbfgs": 100_000, "saga": 200_000, "cd": 1_000_000}
#: tolerance of saga (logistic fits with an l1 term) in sweeps and figures: the KKT residual
#: is then ~1e-7 and the observables move by < 1e-4 (tests/test_sparse_validation.py), at a
#: fraction of the cost of the default 1e-10
SAGA_L1_TOL = 1e-5
#: largest n for which the hinge loss uses a precomputed (n x n) Gram matrix
SVC_PRECOMPUTED_MAX_N = 6000

Fit = tuple[np.ndarray, np.ndarray, dict]


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

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SkConvergenceWarning)
        est.fit(X, y)
    n_iter = int(np.max(np.atleast_1d(getattr(est, "n_iter_", 0))))
    warned = any(issubclass(w.category, SkConvergenceWarning) for w in caught)
    for w in caught:
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
    lam: float,
    penalty: Penalty,
    tol: float | None,
    max_iter: int | None,
    random_state: int | None,
) -> Fit:
    """``LogisticRegression`` on integer targets (binary or multinomial), eq. (ERM)."""
    from sklearn.linear_model import LogisticRegression

    from .losses import CrossEntropyLoss, LogisticLoss

    params = conv.sklearn_logistic_params(lam, penalty)
    solver = params["solver"]
    tol_v = DEFAULT_TOL[solver] if tol is None else tol
    mi = DEFAULT_MAX_ITER[solver] if max_iter is None else max_iter
    est = LogisticRegression(**params, tol=tol_v, max_iter=mi, random_state=random_state)
    ok, n_iter = _run_sklearn(est, Xs, target, mi)
    info = {"solver": solver, "converged": ok, "n_iter": n_iter}
    if solver == "lbfgs" and ok:
        # lbfgs often stops on its relative-decrease test (64 eps) with a gradient of ~1e-8;
        # a warm-started Newton-CG pass (exact Newton directions, stops on max |gradient|
        # <= tol) brings the stationarity residual down to the requested tolerance.
        binary = est.coef_.shape[0] == 1
        Yk = (2.0 * target - 1.0)[:, None] if binary else np.eye(est.coef_.shape[0])[target]
        kind = LogisticLoss() if binary else CrossEntropyLoss()
        if kkt_residual(Xs, Yk, est.coef_, est.intercept_, kind, lam, penalty) > tol_v:
            est.set_params(solver="newton-cg", warm_start=True)
            ok, extra = _run_sklearn(est, Xs, target, mi)
            info.update(solver="lbfgs+newton-cg", converged=ok, n_iter=n_iter + extra)
    return np.array(est.coef_, dtype=float), np.array(est.intercept_, dtype=float), info


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
    """Binary logistic loss on ``+-1`` labels (``LogisticRegression``, class 1 is ``+1``)."""
    target = (Y[:, 0] > 0).astype(int)
    return _logistic_regression(Xs, target, lam, penalty, tol, max_iter, random_state)


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
    (:meth:`gaussmix.theory.penalties.Penalty.two_class_binary`) and returned as
    ``W = [w/2, -w/2]``, ``b = [b/2, -b/2]``.
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
        w, bb, info = _logistic_regression(
            Xs, (t == 0).astype(int), lam_b, pen_b, tol, max_iter, random_state
        )
        return np.vstack([w / 2.0, -w / 2.0]), np.array([bb[0] / 2.0, -bb[0] / 2.0]), info
    W, b, info = _logistic_regression(Xs, t, lam, penalty, tol, max_iter, random_state)
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
    """Largest violation of the stationarity conditions of eq. (ERM) divided by ``n``.

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
