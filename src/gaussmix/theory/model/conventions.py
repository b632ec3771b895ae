"""The one place where the theory's conventions meet scikit-learn's parameters.

The theory (eq. (2)) minimises

    R(W, b) = sum_nu loss(y_nu, W x_nu / sqrt(d) + b) + lam * r(W),

with ``W`` (L, d), an *unpenalised* bias ``b`` (L,), features ``x / sqrt(d)`` and

* ``r(W) = ||W||_F^2 / 2``                                     (``penalty='l2'``),
* ``r(W) = ||W||_1`` (entrywise)                                 (``penalty='l1'``),
* ``r(W) = l1_ratio ||W||_1 + (1 - l1_ratio) ||W||_F^2 / 2``     (``penalty='elastic-net'``).

scikit-learn's estimators minimise other, equivalent objectives (docs/design.md pitfall 7):

* ``LogisticRegression`` (scikit-learn >= 1.8: ``penalty`` is deprecated, the penalty is
  chosen by ``l1_ratio``; lbfgs and saga do not penalise the intercept, and for three or
  more classes they minimise the full multinomial (softmax) loss)::

      C sum_nu loss + l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 2   =>   C = 1 / lam;

* ``Lasso`` / ``ElasticNet`` (intercept fitted on centred data, never penalised)::

      1/(2n) ||y - X w - b||^2 + a (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 2)
                                                                     =>   a = lam / n;

* ``SVC(kernel='linear')``::

      ||w||^2 / 2 + C sum_nu hinge                                   =>   C = 1 / lam.

Every estimator is fitted on the rescaled features ``X / sqrt(d)``
(:func:`feature_scale`).  The functions below are tested against a direct minimisation of
``R`` in ``tests/test_simulate.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.validation import check_int, check_param

from .penalties import Penalty, make_penalty

__all__ = [
    "normalise_penalty",
    "penalty_value",
    "feature_scale",
    "sklearn_logistic_C",
    "sklearn_logistic_l1_ratio",
    "sklearn_logistic_params",
    "sklearn_lasso_alpha",
    "sklearn_elasticnet_params",
    "svc_C",
    "twoclass_softmax_as_binary",
    "erm_objective",
]


def normalise_penalty(penalty: str | Penalty, l1_ratio: float | None = None) -> tuple[str, float]:
    """Validate a penalty (:func:`gaussmix.theory.model.penalties.make_penalty`) and return
    ``(penalty, l1_ratio)`` in canonical form: ``'l2'`` has ``l1_ratio = 0``, ``'l1'`` has
    ``l1_ratio = 1``; an elastic net with ``l1_ratio`` exactly 0 or 1 is returned as ``'l2'``
    or ``'l1'``.
    """
    pen = make_penalty(penalty, l1_ratio).canonical()
    return pen.name, pen.l1_ratio


def penalty_value(W: np.ndarray, penalty: str | Penalty, l1_ratio: float | None = None) -> float:
    """``r(W)`` of eq. (2): ridge ``||W||_F^2/2``, lasso ``||W||_1`` or their mixture."""
    return make_penalty(penalty, l1_ratio).value(W)


def feature_scale(d: int) -> float:
    """The factor applied to the inputs before fitting: features are ``x / sqrt(d)``."""
    return 1.0 / np.sqrt(check_int("d", d, low=1))


def _positive_lam(lam: Any, what: str) -> float:
    v = check_param("lam", lam)
    if v == 0.0:
        raise ArgumentError("lam", f"must be > 0 for {what}, got lam=0")
    return v


def sklearn_logistic_C(lam: float) -> float:
    """``C`` of ``LogisticRegression`` for penalty strength ``lam``: ``C = 1 / lam``.

    scikit-learn minimises ``C sum loss + r(w)``; dividing by ``C`` gives eq. (2) with
    ``lam = 1 / C`` for every ``l1_ratio``.
    """
    return 1.0 / _positive_lam(lam, "LogisticRegression")


def sklearn_logistic_l1_ratio(penalty: str | Penalty, l1_ratio: float | None = None) -> float:
    """``l1_ratio`` of ``LogisticRegression`` (0: ridge, 1: lasso, in between: elastic net).

    scikit-learn's elastic net is ``l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 2``, the same
    parametrisation as the theory's.
    """
    return normalise_penalty(penalty, l1_ratio)[1]


def sklearn_logistic_params(
    lam: float, penalty: str = "l2", l1_ratio: float | None = None
) -> dict[str, Any]:
    """Keyword arguments of ``LogisticRegression`` realising eq. (2) exactly.

    Ridge uses ``lbfgs`` (multinomial for three or more classes), lasso and elastic net use
    ``saga`` (the only exact scikit-learn solver for them with an unpenalised intercept).
    Never ``liblinear`` (it penalises the intercept) or SGD.
    """
    r = sklearn_logistic_l1_ratio(penalty, l1_ratio)
    return {
        "C": sklearn_logistic_C(lam),
        "l1_ratio": r,
        "solver": "lbfgs" if r == 0.0 else "saga",
        "fit_intercept": True,
    }


def sklearn_lasso_alpha(lam: float, n: int) -> float:
    """``alpha`` of ``Lasso`` / ``ElasticNet`` on ``n`` samples: ``alpha = lam / n``.

    scikit-learn minimises ``1/(2n) ||y - X w - b||^2 + alpha * penalty``; multiplying by ``n``
    gives the square loss ``||y - h||^2 / 2`` summed over samples plus ``lam * penalty``.
    """
    n_v = check_int("n", n, low=1)
    return _positive_lam(lam, "Lasso / ElasticNet") / n_v


def sklearn_elasticnet_params(
    lam: float, n: int, penalty: str | Penalty = "l1", l1_ratio: float | None = None
) -> dict[str, Any]:
    """Keyword arguments of ``ElasticNet`` (``l1_ratio = 1``: ``Lasso``) for eq. (2)."""
    r = make_penalty(penalty, l1_ratio).l1_ratio
    if r == 0.0:
        raise ValueError("penalty='l2' with the square loss has a closed form; not ElasticNet")
    return {"alpha": sklearn_lasso_alpha(lam, n), "l1_ratio": r, "fit_intercept": True}


def svc_C(lam: float) -> float:
    """``C`` of ``SVC(kernel='linear')``: ``C = 1 / lam``.

    libsvm minimises ``||w||^2 / 2 + C sum hinge`` with an unpenalised intercept; times
    ``lam`` this is eq. (2) with the hinge loss and ridge penalty.
    """
    return 1.0 / _positive_lam(lam, "SVC")


def twoclass_softmax_as_binary(
    lam: float, penalty: str = "l2", l1_ratio: float | None = None
) -> tuple[float, str, float | None]:
    """Binary problem equivalent to a two-class softmax cross-entropy (docs/design.md pitfall 3).

    The two-class softmax loss depends on ``W`` only through ``w = W_1 - W_2``
    (``loss = log(1 + exp(-y (w.x/sqrt(d) + b_1 - b_2)))`` with ``y = +1`` for class 1); for
    fixed ``w`` the penalty is minimised by the symmetric split ``W = [w/2, -w/2]`` for
    every elastic net, which gives ``r(W) = l1_ratio ||w||_1 + (1-l1_ratio) ||w||^2 / 4``.
    Hence the binary problem has ``lam_b = lam (l1_ratio + (1 - l1_ratio) / 2)`` and
    ``l1_ratio_b = lam l1_ratio / lam_b``: ridge ``lam / 2``, lasso ``lam``.

    Returns
    -------
    lam_b : float
    penalty_b : str
    l1_ratio_b : float or None
        ``None`` unless ``penalty_b == 'elastic-net'``.
    """
    lam_v = check_param("lam", lam)
    lam_b, pen_b = make_penalty(penalty, l1_ratio).canonical().two_class_binary(lam_v)
    return lam_b, pen_b.name, pen_b.user_l1_ratio


def erm_objective(
    W: np.ndarray,
    b: np.ndarray,
    X: np.ndarray,
    Y: np.ndarray,
    loss: Any,
    lam: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
) -> float:
    """The theory's empirical risk ``R(W, b)`` of eq. (2).

    Parameters
    ----------
    W : ndarray (L, d)
    b : ndarray (L,)
    X : ndarray (n, d)
        Raw inputs; the function applies the ``1 / sqrt(d)`` scaling.
    Y : ndarray (n, L)
        Label vector of every sample.
    loss : Loss
        The loss object (``gaussmix.get_loss(name)``), whose ``value(y, h)`` is summed.
    lam : float
    penalty, l1_ratio
        See :func:`normalise_penalty`.
    """
    X = np.asarray(X, dtype=float)
    W = np.atleast_2d(np.asarray(W, dtype=float))
    h = X @ W.T / np.sqrt(X.shape[1]) + np.asarray(b, dtype=float)
    Yv = np.asarray(Y, dtype=float).reshape(h.shape)
    data = float(np.sum(loss.value(Yv, h)))
    return data + float(lam) * penalty_value(W, penalty, l1_ratio)
