"""Finite-size simulations: exact empirical risk minimisation on samples of a Mixture.

The asymptotic theory (Theorems 1 and 2) describes the minimiser of eq. (2),

    (W*, b*) = argmin_{W, b} sum_nu loss(y_nu, W x_nu / sqrt(d) + b) + lam r(W),

for ``n = alpha d`` samples of the mixture ``P(x, c) = rho_c N(x | mu_c, Sigma_c)``.  This
module realises the *same* :class:`~gaussmix.theory.model.mixture.Mixture` at a finite ``d``
(:func:`realise`), samples a training set, minimises eq. (2) *exactly* (closed form,
Newton-CG, coordinate descent, saga or libsvm to a tight tolerance — never SGD or liblinear;
the scikit-learn parameters come from :mod:`gaussmix.theory.model.conventions`) and measures the
observables of Theorem 2 (eq. (9)): the training loss, the training error, the test
error and the test loss.  The test error and the test loss of a fitted ``(W, b)`` are
computed *exactly* on the population, without a test set: for cluster ``c`` the output
``h = W x / sqrt(d) + b`` of a fresh sample is Gaussian with mean
``M_c + b = W mu_c / sqrt(d) + b`` and covariance ``Q_c = W Sigma_c W^T / d``; the
probability of classifying it correctly is a Gaussian orthant probability (docs/design.md
pitfall 6) and the test loss ``E loss(y_c, h)`` a closed form (square, hinge) or a
low-dimensional Gaussian integral (logistic: one dimension; cross-entropy: ``K - 1``), the
same as the theory's (:func:`gaussmix.theory.solve.observables.gaussian_risk`).  The overlaps
``Q_c, M_c, b`` are returned as well, averaged over seeds.

Conventions (docs/design.md pitfalls 7 and 8): covariances are diagonal in the standard basis,
except for a dense mixture (:class:`~gaussmix.theory.model.covariance.DenseCovariance`), whose full
covariances are sampled through an eigen-factorisation ``Sigma_k = F_k F_k^T`` (zero and
rounding-level negative eigenvalues give zero columns, so singular covariances are exact);
isotropic means realise the Gram matrix of the mixture exactly; Gaussian mean components
of block laws are rescaled so that every atom has exactly its second moment ``theta[j]``;
cluster counts are fixed to ``round(rho n)`` (largest remainder) unless
``counts='random'``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from gaussmix.core.exceptions import ArgumentError, ConvergenceWarning
from gaussmix.core.results import Result
from gaussmix.core.validation import check_choice, check_int, check_param
from gaussmix.theory.channel.erm import kkt_residual
from gaussmix.theory.channel.losses import LOSSES, Loss, get_loss
from gaussmix.theory.model.labels import LabelMap
from gaussmix.theory.model.mixture import Mixture
from gaussmix.theory.model.outputs import error_keys
from gaussmix.theory.model.penalties import Penalty, make_penalty
from gaussmix.theory.model.realisation import FiniteSizeWarning, largest_remainder
from gaussmix.theory.problem.problem import effective_loss
from gaussmix.theory.solve.observables import estimated_risk

__all__ = [
    "MAX_SAMPLE_ENTRIES",
    "check_sample_size",
    "Instance",
    "SimulationResult",
    "ERMConvergenceWarning",
    "FiniteSizeWarning",
    "LOSSES",
    "largest_remainder",
    "realise",
    "check_dimension",
    "fit_erm",
    "overlaps",
    "exact_test_error",
    "exact_test_loss",
    "monte_carlo_test_error",
    "observables",
    "simulate",
    "predict_class",
    "validate_simulation",
    "largest_integration_error",
]

_MC_CHUNK = 20_000
#: largest training set of one simulated instance, n d numbers (16 GiB in float64): beyond
#: it a simulation would exhaust memory rather than fail
MAX_SAMPLE_ENTRIES = 2**31


class ERMConvergenceWarning(ConvergenceWarning):
    """An empirical risk minimiser stopped before reaching its tolerance.

    (:class:`~gaussmix.theory.model.realisation.FiniteSizeWarning` and
    :func:`~gaussmix.theory.model.realisation.largest_remainder` live with the realisations of
    the covariance structures; this module re-exports them.)
    """


# ---------------------------------------------------------------------------- instances
@dataclass(frozen=True, eq=False)
class Instance:
    """One finite-``d`` realisation of a :class:`~gaussmix.theory.model.mixture.Mixture`.

    Attributes
    ----------
    means : ndarray (K, d)
        Cluster means ``mu_k`` (norms O(1), or in the data's own units for a dense mixture).
    variances : ndarray (K, d)
        The diagonals of the covariances ``Sigma_k`` (their eigenvalues when, as for every
        spectral law, they are diagonal in the standard basis).
    rho : ndarray (K,)
        The training priors (the cluster counts of the samples drawn).
    labels : LabelMap
    factors : ndarray (K, d, d) or None
        For full covariances: ``F_k`` with ``Sigma_k = F_k F_k^T``; None when the
        covariances are the diagonal matrices ``diag(variances[k])``.
    rho_test : ndarray (K,) or None
        The test priors of a prior shift (:attr:`gaussmix.Mixture.rho_test`); None: ``rho``.
    """

    means: np.ndarray
    variances: np.ndarray
    rho: np.ndarray
    labels: LabelMap
    info: dict = field(default_factory=dict)
    factors: np.ndarray | None = None
    rho_test: np.ndarray | None = None

    @property
    def test_priors(self) -> np.ndarray:
        """The priors that weight the test observables: ``rho_test``, else ``rho``."""
        return self.rho if self.rho_test is None else self.rho_test

    @property
    def covariances(self) -> np.ndarray:
        """The covariances ``Sigma_k`` (K, d, d)."""
        if self.factors is None:
            return np.stack([np.diag(v) for v in self.variances])
        return self.factors @ np.swapaxes(self.factors, 1, 2)

    @property
    def d(self) -> int:
        """Input dimension."""
        return int(self.means.shape[1])

    @property
    def n_clusters(self) -> int:
        """K."""
        return int(self.means.shape[0])

    @property
    def gram(self) -> np.ndarray:
        """Realised Gram matrix ``mu_k . mu_k'`` (K, K)."""
        return self.means @ self.means.T

    def cluster_counts(
        self, n: int, rng: np.random.Generator, counts: str = "fixed"
    ) -> np.ndarray:
        """Number of points per cluster: ``round(rho n)`` (largest remainder) or multinomial."""
        check_choice("counts", counts, ("fixed", "random"))
        if counts == "fixed":
            return largest_remainder(self.rho, n)
        return rng.multinomial(n, self.rho)

    def sample(
        self, n: int, rng: np.random.Generator, counts: str = "fixed"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` points ``x = mu_c + sqrt(sigma_c) * g`` (``x = mu_c + F_c g`` for full
        covariances) in random order.

        Returns
        -------
        X : ndarray (n, d)
        cluster_ids : ndarray (n,) of int
        """
        n = check_int("n", n, low=1)
        nc = self.cluster_counts(n, rng, counts)
        cid = np.repeat(np.arange(self.n_clusters), nc)
        cid = cid[rng.permutation(n)]
        X = rng.standard_normal((n, self.d))
        if self.factors is None:
            X *= np.sqrt(self.variances[cid])
        else:
            for c in range(self.n_clusters):
                rows = cid == c
                X[rows] = X[rows] @ self.factors[c].T
        X += self.means[cid]
        return X, cid


def realise(mixture: Mixture, d: int, rng: np.random.Generator) -> Instance:
    """Draw one finite instance of ``mixture`` at dimension ``d``: the realisation of its
    covariance structure (``mixture.covariance.realise(d, rng)``, rules in
    :mod:`gaussmix.theory.model.realisation`: isotropic means realise their Gram matrix exactly and
    need ``d >= K``; an empirical spectral law or a dense mixture only exists at its own
    ``d``; the atoms of a block law get ``round(weights d)`` directions) with the mixture's
    priors and labels.

    Parameters
    ----------
    mixture : Mixture
    d : int
        Input dimension.
    rng : numpy.random.Generator

    Returns
    -------
    Instance

    Warns
    -----
    FiniteSizeWarning
        If an atom gets no direction at this ``d`` or fewer directions than the rank of its
        ``theta[j]`` (then its second moment is not realised exactly).
    """
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    d = check_dimension(mixture, d)
    r = mixture.covariance.realise(d, rng)
    return Instance(
        means=r.means,
        variances=r.variances,
        rho=mixture.rho.copy(),
        labels=mixture.labels,
        info={"directions": r.directions},
        factors=r.factors,
        rho_test=None if mixture.rho_test is None else mixture.rho_test.copy(),
    )


def check_dimension(mixture: Mixture, d: Any, *, name: str = "d") -> int:
    """The dimension ``d`` of a simulation of ``mixture``, validated: the rule of ``d``
    (:data:`gaussmix.core.validation.PARAMETERS`), then the mixture's covariance structure
    (:meth:`~gaussmix.theory.model.covariance.CovarianceStructure.check_dim`: ``d >= K`` where the
    means realise their Gram matrix exactly, the mixture's own dimension for full
    covariances or an empirical spectral law).  The one check of ``d`` of :func:`realise`,
    :func:`simulate` and :func:`~gaussmix.simulate.separability_fraction`."""
    d_v = check_param("d", d, name=name)
    mixture.covariance.check_dim(d_v, name)
    return d_v


# ---------------------------------------------------------------------------- fitting
def _as_labelmap(labels: Any) -> LabelMap:
    if isinstance(labels, LabelMap):
        return labels
    arr = np.asarray(labels, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    return LabelMap(arr)


def fit_erm(
    X: np.ndarray,
    labels: LabelMap | np.ndarray,
    cluster_ids: np.ndarray,
    loss: str,
    penalty: str = "l2",
    lam: float = 1.0,
    l1_ratio: float | None = None,
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    random_state: int | None = None,
    return_info: bool = False,
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, dict]:
    """Minimise eq. (2) exactly on a finite sample.

    Parameters
    ----------
    X : ndarray (n, d)
        Raw inputs; the fit uses the features ``X / sqrt(d)``.
    labels : LabelMap or ndarray (K, L)
        Label vector ``y_c`` of every cluster.
    cluster_ids : ndarray (n,) of int
        Cluster of every sample; its label is ``labels[cluster_ids]``.
    loss : {'square', 'logistic', 'cross-entropy', 'hinge'}
        ``||y - h||^2 / 2`` (any labels), ``log(1 + exp(-y h))`` (+-1 labels),
        ``-y.h + logsumexp(h)`` (one-hot labels), ``max(0, 1 - y h)`` (+-1 labels).
    penalty : {'l2', 'l1', 'elastic-net'}
    lam : float
        Penalty strength (``lam = 0`` only for the square loss with ridge and ``n > d + 1``).
    l1_ratio : float, optional
        Elastic-net mixing, ``r = l1_ratio ||W||_1 + (1 - l1_ratio) ||W||_F^2 / 2``.
    tol, max_iter : optional
        Solver tolerance and iteration cap (defaults: 1e-10 for Newton-CG, saga and
        coordinate descent, 1e-8 for libsvm).
    random_state : int, optional
        Seed of saga's sampling order.
    return_info : bool
        Also return a dict with ``solver``, ``converged``, ``n_iter``, ``kkt_residual``.

    Returns
    -------
    W : ndarray (L, d)
    b : ndarray (L,)
        For one-hot cross-entropy the gauge is ``sum_k b_k = 0``; with ridge
        ``sum_k W_k = 0`` holds at the minimiser.  Two-class cross-entropy is fitted as the
        equivalent binary logistic problem
        (:func:`gaussmix.theory.model.conventions.twoclass_softmax_as_binary`) and returned as
        ``W = [w/2, -w/2]``, ``b = [b/2, -b/2]``.
    info : dict
        Only with ``return_info=True``.

    Warns
    -----
    ERMConvergenceWarning
        If the solver stopped before reaching its tolerance.

    Notes
    -----
    Solvers: square + ridge in closed form (primal or dual, whichever is smaller); square +
    lasso / elastic net by coordinate descent (``Lasso`` / ``ElasticNet`` applied to every
    output, the penalty being separable); logistic and cross-entropy + ridge by a full-batch
    Newton method with conjugate gradients (:func:`gaussmix.theory.channel.erm.newton_ridge`; fast
    at small ``lam`` on separable data), + lasso / elastic net by saga, multinomial for three
    or more classes; hinge + ridge by libsvm (dual coordinate descent to ``tol``,
    unpenalised bias).
    ``info['kkt_residual']`` is the largest violation of the stationarity conditions of
    eq. (2) divided by ``n`` (NaN for the hinge loss).
    """
    loss_obj, pen, lm, X, cid, lam_v = _fit_inputs(
        X, labels, cluster_ids, loss, penalty, lam, l1_ratio
    )
    d = X.shape[1]
    Y = lm.labels[cid]
    Xs = np.ascontiguousarray(X / np.sqrt(d))
    L = lm.dim
    W, b, info = loss_obj.fit_erm(
        Xs, Y, lam_v, pen, tol=tol, max_iter=max_iter, random_state=random_state
    )
    W = np.ascontiguousarray(W.reshape(L, d))
    b = np.asarray(b, dtype=float).reshape(L)
    info["kkt_residual"] = kkt_residual(Xs, Y, W, b, loss_obj, lam_v, pen)
    if not info["converged"]:
        warnings.warn(
            f"{info['solver']} did not reach its tolerance for loss={loss_obj.name!r}, "
            f"penalty={pen.name!r}, lam={lam_v:g} after {info['n_iter']} iterations (KKT "
            f"residual {info['kkt_residual']:.2e})",
            ERMConvergenceWarning,
            stacklevel=2,
        )
    if return_info:
        return W, b, info
    return W, b


def _fit_inputs(
    X: Any, labels: Any, cluster_ids: Any, loss: Any, penalty: Any, lam: Any, l1_ratio: Any
) -> tuple[Loss, Penalty, LabelMap, np.ndarray, np.ndarray, float]:
    """The validated arguments of :func:`fit_erm` (the loss's and penalty's declarations,
    labels, data shapes, ``lam``)."""
    loss_obj = get_loss(loss)
    pen = make_penalty(penalty, l1_ratio).canonical()
    lm = _as_labelmap(labels)
    loss_obj.check_labels(lm)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d), got {X.shape}")
    n, d = X.shape
    cid = np.asarray(cluster_ids)
    if cid.shape != (n,) or not np.issubdtype(cid.dtype, np.integer):
        raise ValueError(f"cluster_ids must be {n} integers, got shape {cid.shape}")
    if cid.min() < 0 or cid.max() >= lm.n_clusters:
        raise ValueError(f"cluster_ids must lie in 0..{lm.n_clusters - 1}")
    lam_v = check_param("lam", lam)
    if lam_v == 0.0:
        _check_zero_lam(loss_obj, pen, n, d)
    loss_obj.check_simulation_penalty(pen)
    return loss_obj, pen, lm, X, cid, lam_v


def _check_zero_lam(loss: Loss, pen: Penalty, n: int, d: int) -> None:
    """``lam = 0`` needs a unique finite-size minimiser: no l1 part
    (``Penalty.allows_zero_lam``, as for the theory), and a loss that declares one above a
    sample complexity (``Loss.zero_lam_min_alpha``), with ``n > alpha_min d + 1`` (the
    intercept takes one sample).  Unlike the theory's rule
    (:func:`gaussmix.theory.problem.problem.check_lam_alpha`), logistic / cross-entropy above the
    separability threshold are refused: a finite sample may be separable at any ``alpha``."""
    bound = loss.zero_lam_min_alpha
    if not (pen.allows_zero_lam and bound is not None and n > bound * d + 1):
        valid = [
            f"loss={c.name!r}, penalty='l2' and n > {c.zero_lam_min_alpha:g} d + 1"
            for c in LOSSES
            if c.zero_lam_min_alpha is not None
        ]
        raise ArgumentError(
            "lam",
            f"0 needs {' or '.join(valid)} (got loss={loss.name!r}, penalty={pen.name!r}, "
            f"n={n}, d={d}); use lam > 0",
        )


# ---------------------------------------------------------------------------- observables
def overlaps(
    instance: Instance, W: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Overlaps of Theorem 1 measured on an instance.

    Returns
    -------
    Q : ndarray (K, L, L)
        ``Q_c = W Sigma_c W^T / d``.
    M : ndarray (K, L)
        ``M_c = W mu_c / sqrt(d)``.
    b : ndarray (L,)
    """
    W = np.atleast_2d(np.asarray(W, dtype=float))
    d = instance.d
    if instance.factors is None:
        Q = np.einsum("li,ki,mi->klm", W, instance.variances, W) / d
    else:
        WF = W @ instance.factors  # (K, L, d): W F_k
        Q = WF @ np.swapaxes(WF, 1, 2) / d
    M = instance.means @ W.T / np.sqrt(d)
    return Q, M, np.asarray(b, dtype=float).reshape(W.shape[0])


def _decision_constraints(labels: LabelMap, c: int) -> tuple[np.ndarray, np.ndarray]:
    """``(D, t)``: ``h`` is classified as cluster ``c``'s class iff ``D h < t``.

    Nearest distinct label vector: ``|h - y_a|^2 > |h - y_c|^2`` for every other class ``a``,
    i.e. ``(y_a - y_c).h < (|y_a|^2 - |y_c|^2) / 2``.
    """
    classes = labels.classes
    ci = labels.cluster_class[c]
    others = np.array([a for a in range(classes.shape[0]) if a != ci])
    D = classes[others] - classes[ci]
    t = 0.5 * (np.sum(classes[others] ** 2, axis=1) - np.sum(classes[ci] ** 2))
    return D, t


def _orthant(mean: np.ndarray, cov: np.ndarray) -> tuple[float, float]:
    """``P[Z <= 0]`` for ``Z ~ N(mean, cov)``, by
    :func:`gaussmix.theory.numerics.orthant.orthant_probability`."""
    from gaussmix.theory.numerics.orthant import orthant_probability

    p, err = orthant_probability(mean, cov)
    return float(p), float(err)


def exact_test_error(
    instance: Instance, W: np.ndarray, b: np.ndarray
) -> tuple[float, np.ndarray, float]:
    """Population misclassification rate of ``(W, b)`` (Theorem 2, eq. (9), ``epsilon_g``).

    For cluster ``c``, ``h = W x / sqrt(d) + b ~ N(M_c + b, Q_c)``; the point is correctly
    classified iff ``D_c h < t_c`` (nearest distinct label vector), a Gaussian orthant
    probability evaluated by :func:`gaussmix.theory.numerics.orthant.orthant_probability`.

    Returns
    -------
    test_error : float
        ``1 - sum_c rho_c P[correct | c]``, ``rho`` the test priors
        (:attr:`Instance.test_priors`).
    correct : ndarray (K,)
        ``P[correct | c]``.
    integration_error : float
        ``sum_c rho_c`` times the orthant routine's error estimates.
    """
    rho = instance.test_priors
    Q, M, bb = overlaps(instance, W, b)
    K = instance.n_clusters
    correct = np.empty(K)
    err = 0.0
    for c in range(K):
        D, t = _decision_constraints(instance.labels, c)
        mean = D @ (M[c] + bb) - t
        cov = D @ Q[c] @ D.T
        correct[c], e = _orthant(mean, 0.5 * (cov + cov.T))
        err += rho[c] * e
    return float(1.0 - rho @ correct), correct, float(err)


def exact_test_loss(
    instance: Instance, W: np.ndarray, b: np.ndarray, loss: str | Loss
) -> tuple[float, np.ndarray, float]:
    """Population risk ``E loss(y, W x / sqrt(d) + b)`` of ``(W, b)`` (the test loss: the
    loss alone, no penalty).

    For cluster ``c`` the output ``h ~ N(M_c + b, Q_c)`` (:func:`overlaps`), so the risk is
    the Gaussian expectation of the theory's test loss
    (:func:`gaussmix.theory.solve.observables.estimated_risk`: closed forms for the square and
    hinge losses, the solver's automatic quadrature rule and its refinement otherwise; the
    cross-entropy on the complement of ``1``, where it lives).

    Returns
    -------
    test_loss : float
        ``sum_c rho_c E[loss(y_c, h) | c]``, ``rho`` the test priors
        (:attr:`Instance.test_priors`).
    per_cluster : ndarray (K,)
        ``E[loss(y_c, h) | c]``.
    integration_error : float
        The estimated integration error of ``test_loss`` (0 for the closed forms).
    """
    eff, P = effective_loss(loss, instance.labels)
    Q, M, bb = overlaps(instance, W, b)
    rho = instance.test_priors
    risk, err = estimated_risk(eff, instance.labels.labels, (M + bb) @ P.T, P @ Q @ P.T, rho)
    return float(rho @ risk), risk, err


def predict_class(labels: LabelMap, h: np.ndarray) -> np.ndarray:
    """Index (into ``labels.classes``) of the nearest distinct label vector (the classifier
    of Theorem 2) for outputs ``h`` (n, L)."""
    classes = labels.classes
    score = h @ classes.T - 0.5 * np.sum(classes**2, axis=1)
    return np.argmax(score, axis=1)


def monte_carlo_test_error(
    instance: Instance,
    W: np.ndarray,
    b: np.ndarray,
    n_test: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Misclassification rate on ``n_test`` fresh i.i.d. samples of the test distribution
    (clusters drawn with the test priors, :attr:`Instance.test_priors`), with its standard
    error."""
    n_test = check_int("test_samples", n_test, low=1)
    if instance.rho_test is not None:
        instance = replace(instance, rho=instance.rho_test, rho_test=None)
    W = np.atleast_2d(W)
    wrong = 0
    done = 0
    while done < n_test:
        m = min(_MC_CHUNK, n_test - done)
        X, cid = instance.sample(m, rng, counts="random")
        h = X @ W.T / np.sqrt(instance.d) + b
        wrong += int(
            np.sum(predict_class(instance.labels, h) != instance.labels.cluster_class[cid])
        )
        done += m
    p = wrong / n_test
    return p, float(np.sqrt(max(p * (1.0 - p), 1.0 / n_test) / n_test))


def observables(
    instance: Instance,
    X: np.ndarray,
    cluster_ids: np.ndarray,
    W: np.ndarray,
    b: np.ndarray,
    loss: str,
) -> dict[str, Any]:
    """Training loss, training error, exact test error and test loss, and overlaps of a
    fitted ``(W, b)``.

    Returns a dict with ``train_loss`` (mean loss over the training points, no penalty),
    ``train_error`` and ``test_error`` (Theorem 2, eq. (9)), ``test_loss``
    (:func:`exact_test_loss`), ``integration_error`` (of the test error's orthant
    probabilities), ``test_loss_integration_error``, ``Q``, ``M``, ``b``.
    """
    loss_obj = get_loss(loss)
    W = np.atleast_2d(np.asarray(W, dtype=float))
    b = np.asarray(b, dtype=float).reshape(W.shape[0])
    lm = instance.labels
    h = X @ W.T / np.sqrt(instance.d) + b
    Y = lm.labels[cluster_ids]
    train_loss = float(np.mean(loss_obj.value(Y, h)))
    train_error = float(np.mean(predict_class(lm, h) != lm.cluster_class[cluster_ids]))
    test_error, _, ierr = exact_test_error(instance, W, b)
    test_loss, _, loss_err = exact_test_loss(instance, W, b, loss_obj)
    Q, M, bb = overlaps(instance, W, b)
    return {
        "test_error": test_error,
        "train_error": train_error,
        "train_loss": train_loss,
        "test_loss": test_loss,
        "integration_error": ierr,
        "test_loss_integration_error": loss_err,
        "Q": Q,
        "M": M,
        "b": bb,
    }


# ---------------------------------------------------------------------------- driver
@dataclass(eq=False)
class SimulationResult(Result):
    """Finite-size observables averaged over independent seeds (the result protocol of
    :mod:`gaussmix.core.results`; ``n_iter`` is per seed, in :attr:`per_seed`).

    Attributes
    ----------
    per_seed : pandas.DataFrame
        One row per seed: ``seed``, ``test_error``, ``train_error``, ``train_loss``,
        ``test_loss``, ``integration_error``, ``test_loss_integration_error``,
        ``nonzero_fraction`` (lasso / elastic net only), ``test_error_mc`` and
        ``test_error_mc_se`` (with ``test_samples``), ``converged``, ``n_iter``,
        ``kkt_residual``.
    mean, se : dict
        Mean and standard error (``std(ddof=1) / sqrt(seeds)``; NaN for one seed) of the
        numeric per-seed observables.
    Q, Q_se : ndarray (K, L, L)
        Mean over seeds of the overlaps ``Q_c = W Sigma_c W^T / d`` and their standard
        errors.
    M, M_se : ndarray (K, L)
        Mean over seeds of ``M_c = W mu_c / sqrt(d)`` and their standard errors.
    b, b_se : ndarray (L,)
        Mean overlaps ``Q_c = W Sigma_c W^T / d``, ``M_c = W mu_c / sqrt(d)`` and bias, with
        their standard errors.
    params : dict
        The arguments of :func:`simulate` and ``n``.
    success : bool
        Every seed's solver reached its tolerance (property; ``converged`` is its
        deprecated name, the JSON key stays ``converged``).
    message : str
        Which seeds did not (property).
    """

    #: nothing iterates (the result protocol's ``n_iter`` does not apply)
    n_iter: ClassVar[None] = None

    per_seed: pd.DataFrame
    mean: dict
    se: dict
    Q: np.ndarray
    Q_se: np.ndarray
    M: np.ndarray
    M_se: np.ndarray
    b: np.ndarray
    b_se: np.ndarray
    params: dict

    @property
    def success(self) -> bool:
        return bool(self.per_seed["converged"].all())

    @property
    def message(self) -> str:
        bad = self.per_seed.loc[~self.per_seed["converged"].astype(bool), "seed"].tolist()
        n = len(self.per_seed)
        if not bad:
            return f"every solver converged ({n} seeds)"
        return f"{len(bad)} of {n} seeds did not converge (seeds {bad})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary with the keys of the fixed-point result's ``to_dict``."""

        def num(x: Any) -> float | None:
            x = float(x)
            return None if np.isnan(x) else x

        keys = error_keys()
        return {
            **{k: num(self.mean[k]) for k in keys},
            **{f"{k}_se": num(self.se[k]) for k in keys},
            "Q": self.Q.tolist(),
            "M": self.M.tolist(),
            "b": self.b.tolist(),
            "V": None,
            "converged": self.success,
            "n_iter": None,
            "integration_error": largest_integration_error(self.per_seed),
            "d": int(self.params["d"]),
            "seeds": int(self.params["seeds"]),
        }


def largest_integration_error(per_seed: pd.DataFrame) -> float:
    """The largest integration error estimate over seeds of the test error and the test
    loss (``integration_error``, ``test_loss_integration_error``)."""
    cols = ("integration_error", "test_loss_integration_error")
    return float(per_seed[[c for c in cols if c in per_seed]].to_numpy().max())


def _one_seed(
    mixture: Mixture,
    seq: np.random.SeedSequence,
    *,
    loss: str,
    lam: float,
    n: int,
    d: int,
    penalty: str,
    l1_ratio: float | None,
    counts: str,
    test_samples: int | None,
    tol: float | None,
    max_iter: int | None,
) -> dict[str, Any]:
    rng = np.random.default_rng(seq)
    inst = realise(mixture, d, rng)
    X, cid = inst.sample(n, rng, counts)
    random_state = int(rng.integers(2**31 - 1))
    W, b, info = fit_erm(
        X,
        inst.labels,
        cid,
        loss,
        penalty,
        lam,
        l1_ratio,
        tol=tol,
        max_iter=max_iter,
        random_state=random_state,
        return_info=True,
    )
    obs = observables(inst, X, cid, W, b, loss)
    obs.update(
        converged=bool(info["converged"]),
        n_iter=int(info["n_iter"]),
        kkt_residual=float(info["kkt_residual"]),
    )
    if make_penalty(penalty, l1_ratio).sparse:
        obs["nonzero_fraction"] = float(np.mean(W != 0.0))
    if test_samples is not None:
        obs["test_error_mc"], obs["test_error_mc_se"] = monte_carlo_test_error(
            inst, W, b, test_samples, rng
        )
    return obs


def check_sample_size(n: int, d: int) -> None:
    """Refuse a sample of ``n`` points in dimension ``d`` beyond :data:`MAX_SAMPLE_ENTRIES`
    numbers (a ValueError naming ``d``), before anything is allocated."""
    if n * d > MAX_SAMPLE_ENTRIES:
        raise ArgumentError(
            "d",
            f"must keep a sample of n x d = {n} x {d} points within "
            f"{MAX_SAMPLE_ENTRIES:.3g} numbers (it would need {8 * n * d / 2**30:.3g} GiB), "
            f"got d={d}",
        )


def validate_simulation(
    mixture: Any,
    loss: Any,
    lam: Any,
    alpha: Any,
    d: Any,
    seeds: Any,
    seed: Any,
    penalty: Any,
    l1_ratio: Any,
    counts: Any,
    n_jobs: Any,
    test_samples: Any,
) -> dict[str, Any]:
    """Validate the arguments of :func:`simulate` (every check made before any work: the
    loss's label and penalty constraints, ``lam = 0``, ``n = round(alpha d) >= 2``, ``d >= K``
    for models realising their means exactly); returns them canonical, with ``n``.

    Raises
    ------
    TypeError, ValueError
        With the offending argument named.
    """
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    loss_obj = get_loss(loss)
    pen = make_penalty(penalty, l1_ratio).canonical()
    lam_v = check_param("lam", lam)
    alpha_v = check_param("alpha", alpha)
    d_v = check_dimension(mixture, d)
    seeds_v = check_param("seeds", seeds)
    seed_v = check_param("seed", seed)
    check_choice("counts", counts, ("fixed", "random"))
    n_jobs_v = check_param("n_jobs", n_jobs)
    if test_samples is not None:
        test_samples = check_int("test_samples", test_samples, low=1)
    loss_obj.check_labels(mixture.labels)
    loss_obj.check_simulation_penalty(pen)
    n = int(np.floor(alpha_v * d_v + 0.5))
    if n < 2:
        raise ValueError(
            f"alpha * d must give at least 2 samples, got n = round({alpha_v * d_v:g})"
        )
    check_sample_size(n, d_v)
    if lam_v == 0.0:
        _check_zero_lam(loss_obj, pen, n, d_v)
    return {
        "loss": loss_obj.name,
        "lam": lam_v,
        "alpha": alpha_v,
        "d": d_v,
        "n": n,
        "seeds": seeds_v,
        "seed": seed_v,
        "penalty": pen.name,
        "l1_ratio": pen.user_l1_ratio,
        "counts": counts,
        "n_jobs": n_jobs_v,
        "test_samples": test_samples,
    }


def simulate(
    mixture: Mixture,
    *,
    loss: str,
    lam: float,
    alpha: float,
    d: int,
    seeds: int = 5,
    seed: int = 0,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    counts: str = "fixed",
    n_jobs: int = 1,
    progress: bool = False,
    test_samples: int | None = None,
    tol: float | None = None,
    max_iter: int | None = None,
) -> SimulationResult:
    """Finite-size ERM (eq. (2)) on ``seeds`` independent instances of ``mixture``.

    Each seed realises the mixture at dimension ``d`` (:func:`realise`), draws
    ``n = round(alpha d)`` training points, minimises eq. (2) exactly (:func:`fit_erm`) and
    measures the observables of Theorem 2 (eq. (9)) — the test error exactly, as an
    orthant probability — and the overlaps ``Q_c, M_c, b``.

    Parameters
    ----------
    mixture : Mixture
        The data model whose finite instances are sampled (any covariance structure at a
        dimension it can take, see :meth:`CovarianceStructure.check_dim`).
    loss : {'square', 'logistic', 'cross-entropy', 'hinge'}
        ``logistic`` and ``hinge`` need binary +-1 labels, ``cross-entropy`` one-hot labels.
    lam : float
        Penalty strength, ``>= 0`` (0 only for square loss + ridge with ``alpha d > d + 1``).
    alpha : float
        Sample complexity ``n / d > 0``.
    d : int
        Input dimension.
    seeds : int
        Number of independent instances (standard errors need ``seeds >= 2``; NaN otherwise).
    seed : int
        Root of ``numpy.random.SeedSequence(seed).spawn(seeds)``: results are reproducible
        bit for bit.
    penalty : {'l2', 'l1', 'elastic-net'}
        The penalty of the fitted ERM (as in :func:`gaussmix.solve`).
    l1_ratio : float, optional
        Elastic-net mixing in ``[0, 1]`` (elastic net only).
    counts : {'fixed', 'random'}
        Cluster counts ``round(rho n)`` (largest remainder, default) or multinomial.
    n_jobs : int
        joblib workers over seeds (1: serial).
    progress : bool
        Show a progress bar over seeds (on a terminal: :mod:`gaussmix.core.progress`).
    test_samples : int, optional
        Also estimate the test error on this many fresh samples (Monte-Carlo cross-check).
    tol, max_iter : optional
        Passed to :func:`fit_erm`.

    Returns
    -------
    SimulationResult

    Raises
    ------
    TypeError, ValueError
        Invalid arguments (the message names the argument).

    Examples
    --------
    Exact ERM on 4 instances at d = 200 against the theory's test error:

    >>> import gaussmix as gm
    >>> from gaussmix.simulate import simulate
    >>> mix = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary")
    >>> sim = simulate(mix, loss="logistic", lam=0.1, alpha=2.0, d=200, seeds=4)
    >>> mean, se = sim.mean["test_error"], sim.se["test_error"]
    >>> theory = gm.solve(mix, "logistic", lam=0.1, alpha=2.0).test_error
    >>> print(f"simulation {mean:.3f} +- {se:.3f}, theory {theory:.3f}")
    simulation 0.120 +- 0.002, theory 0.117
    >>> bool(abs(mean - theory) < 3 * se)
    True
    """
    p = validate_simulation(
        mixture,
        loss,
        lam,
        alpha,
        d,
        seeds,
        seed,
        penalty,
        l1_ratio,
        counts,
        n_jobs,
        test_samples,
    )
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be a bool, got {progress!r}")
    children = np.random.SeedSequence(p["seed"]).spawn(p["seeds"])
    kw = {
        "loss": p["loss"],
        "lam": p["lam"],
        "n": p["n"],
        "d": p["d"],
        "penalty": p["penalty"],
        "l1_ratio": p["l1_ratio"],
        "counts": p["counts"],
        "test_samples": p["test_samples"],
        "tol": tol,
        "max_iter": max_iter,
    }
    results = _run_seeds(
        mixture, children, kw, n_jobs=p["n_jobs"], progress=progress, desc=f"simulate d={p['d']}"
    )
    return _aggregate(results, p)


def _run_seeds(
    mixture: Mixture,
    children: list[np.random.SeedSequence],
    kw: dict[str, Any],
    *,
    n_jobs: int,
    progress: bool,
    desc: str,
) -> list[dict[str, Any]]:
    """One :func:`_one_seed` per child seed, in this process (``n_jobs = 1``) or on joblib
    workers, in seed order, with a progress bar over seeds."""
    from gaussmix.core.progress import progress_bar

    with progress_bar(total=len(children), desc=desc, unit="seed", enabled=progress) as bar:
        if n_jobs == 1:
            gen: Any = (_one_seed(mixture, child, **kw) for child in children)
        else:
            from joblib import Parallel, delayed

            gen = Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(_one_seed)(mixture, child, **kw) for child in children
            )
        results = []
        for res in gen:
            results.append(res)
            bar.update()
    return results


def _aggregate(results: list[dict[str, Any]], params: dict[str, Any]) -> SimulationResult:
    s = len(results)
    scalar = [key for key in results[0] if key not in ("Q", "M", "b")]
    df = pd.DataFrame([{k: r[k] for k in scalar} for r in results])
    df.insert(0, "seed", np.arange(s))
    numeric = [c for c in df.columns if c not in ("seed", "converged")]
    mean = {c: float(df[c].mean()) for c in numeric}
    if s >= 2:
        se = {c: float(df[c].std(ddof=1) / np.sqrt(s)) for c in numeric}
    else:
        se = {c: float("nan") for c in numeric}

    def stats(key: str) -> tuple[np.ndarray, np.ndarray]:
        arr = np.stack([r[key] for r in results])
        m = arr.mean(axis=0)
        e = arr.std(axis=0, ddof=1) / np.sqrt(s) if s >= 2 else np.full_like(m, np.nan)
        return m, e

    Q, Q_se = stats("Q")
    M, M_se = stats("M")
    b, b_se = stats("b")
    if not bool(df["converged"].all()):
        warnings.warn(
            f"{int((~df['converged']).sum())} of {s} seeds did not reach the solver tolerance",
            ERMConvergenceWarning,
            stacklevel=3,
        )
    return SimulationResult(
        per_seed=df,
        mean=mean,
        se=se,
        Q=Q,
        Q_se=Q_se,
        M=M,
        M_se=M_se,
        b=b,
        b_se=b_se,
        params=dict(params),
    )
