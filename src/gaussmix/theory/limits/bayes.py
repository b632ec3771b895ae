"""Bayes-optimal classification error of an isotropic Gaussian mixture (Appendix D).

The statistician knows the model -- priors ``rho``, variances ``Delta_c``, the law of the
means (``mu_k`` with Gaussian components of covariance ``Theta / d``, i.e. Gram matrix
``Theta`` as ``d -> infinity``) -- and sees ``n = alpha d`` labelled samples; the error is
that of the posterior-predictive classifier ``argmax_k p(k | x, data)`` on a fresh point.

Derivation (re-done; three changes to Appendix D as printed)
------------------------------------------------------------
Per input coordinate ``i`` the rows ``m_i in R^K`` of the mean matrix have prior
``N(0, Theta / d)`` and the samples of cluster ``k`` observe ``m_ik`` with noise variance
``Delta_k``.  The posterior is Gaussian with covariance ``B / d`` and mean
``mhat = B D^{-1} S / d`` (``S_k = sum_{nu in k} x_nu``, ``D = diag(Delta)``), where, with
``W = alpha Pi D^{-1}`` and ``Pi = diag(rho)``,

    B = (Theta^{-1} + W)^{-1} = Theta (I + W Theta)^{-1}                       (1)

-- the right-hand form needs no inverse of ``Theta``, so singular Gram matrices (simplex or
antipodal means) are allowed.  The log posterior-predictive of class ``k`` at ``x``
(``x`` from cluster ``c``) is, up to terms that do not depend on ``k``,

    s_k = ln rho_k - (d/2) ln Delta_k - |x|^2 / (2 Delta_k) + x.mhat_k / Delta_k
          - |mhat_k|^2 / (2 Delta_k) + o(1).

(a) **Correlated fields.**  ``x.S_k / d -> alpha rho_k (Theta_ck + sqrt(Delta_c) h_k) +
sqrt(alpha rho_k Delta_k Delta_c) g'_k`` with ``h = (z.mu_k)_k ~ N(0, Theta)`` and
``g' ~ N(0, I)``: the fields of different ``k`` are independent only for diagonal
``Theta`` (Appendix D treats them as independent).  (b) **Norms of the means.**  With
``|mhat_k|^2 -> (Theta - B)_kk`` the term ``-|mhat_k|^2 / (2 Delta)`` equals Appendix D's
``+A_kk / 2`` (``A = B / Delta``) *plus* ``-Theta_kk / (2 Delta)``, which Appendix D drops:
it matters when the means have unequal norms (it is the ``-|mu_k|^2 / (2 Delta)`` of the
classifier with known means, the ``alpha -> infinity`` limit).  Collecting terms, with the
*learned Gram matrix*

    E = Theta - B = Theta W^{1/2} (I + W^{1/2} Theta W^{1/2})^{-1} W^{1/2} Theta   (2)

(symmetric positive semi-definite; ``E -> Theta`` as ``alpha -> infinity``, ``E -> 0`` as
``alpha -> 0``), the scores of the clusters with ``Delta_k = Delta_c`` are jointly Gaussian:

    s_k = ln rho_k + (E_kc - E_kk / 2) / Delta_c + N(0, E / Delta_c)_k,            (3)

exactly the classifier with known means whose Gram matrix is ``E``.  Balanced, ``Theta = I``,
one ``Delta``: ``eps = P[1 / eta < max_{kappa in [K-1]} Z_kappa - Z]`` with
``eta = sqrt(Delta (1 + K Delta / alpha))`` (Appendix D's last formula).

(c) **Unequal variances.**  ``|x|^2 / d -> Delta_c`` with fluctuations ``O(1 / sqrt(d))``
while the score gap between ``Delta_k != Delta_c`` and ``Delta_c`` grows like
``(d / 2) (r - 1 - ln r)``, ``r = Delta_c / Delta_k``: clusters of different variance are
never confused as ``d -> infinity``, and only clusters *sharing* a variance compete, with
the scores (3).  Note that ``B`` and ``E`` still involve every cluster (through ``W`` and
the correlations of ``Theta``: the samples of one cluster inform the mean of another),
so the error is *not* that of the groups taken as separate mixtures unless ``Theta`` is
block-diagonal across them.  The Bayes-optimal classifier is then not linear in ``x``
(it reads the variance group from ``|x|^2``); no linear ERM can reach it.  Groups are sets
of *exactly* equal ``Delta_c``: close but unequal variances are told apart only at ``d``
with ``d (r - 1 - ln r) >> 1``.

Then ``eps_BO = sum_c rho_c (1 - P[s_c >= s_k for all k != c in the group of c])``, a
``(|group| - 1)``-dimensional Gaussian orthant probability per cluster
(:func:`gaussmix.theory.numerics.orthant.orthant_probability`, deterministic, with its error
estimate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.results import Result
from gaussmix.core.validation import check_param

from ..model.mixture import Mixture
from ..numerics.orthant import orthant_probability

__all__ = ["BayesOptimalResult", "bayes_optimal_error", "learned_gram"]

#: a score difference with variance at or below this (relative to the largest entry of the
#: learned Gram matrix) and mean at or below it is a tie: two indistinguishable clusters
_TIE_TOL = 1e-12


@dataclass(frozen=True)
class BayesOptimalResult(Result):
    """The Bayes-optimal test error of a mixture at sample complexity ``alpha`` (the result
    protocol of :mod:`gaussmix.core.results`; nothing iterates, so ``n_iter`` is None).

    Attributes
    ----------
    test_error : float
        ``eps_BO = sum_c rho_c eps_c`` (Appendix D, corrected: see the module docstring).
    error_estimate : float
        Integration error of ``test_error``: ``sum_c rho_c`` times the orthant error
        estimates (one-sigma standard errors for groups of four or more clusters, rounding
        level ``1e-15`` for smaller groups).
    cluster_errors : ndarray (K,)
        ``eps_c``, the probability of misclassifying a point of cluster ``c``.
    alpha : float
        The sample complexity ``n / d``.
    groups : list of list of int
        Clusters sharing a variance ``Delta_c`` (only those can be confused).
    learned_gram : ndarray (K, K)
        ``E = Theta - B`` of eq. (2).
    params : dict
        JSON-friendly description of the mixture.
    success : bool
        The error and its estimate are finite (property).
    message : str
        How the error was computed, or what is missing (property).
    """

    #: nothing iterates (the result protocol's ``n_iter`` does not apply)
    n_iter: ClassVar[None] = None

    test_error: float
    error_estimate: float
    cluster_errors: np.ndarray
    alpha: float
    groups: list[list[int]]
    learned_gram: np.ndarray
    params: dict = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return bool(np.isfinite(self.test_error) and np.isfinite(self.error_estimate))

    @property
    def message(self) -> str:
        if not self.success:
            return "the Bayes-optimal error is not finite (an orthant probability failed)"
        return (
            f"Gaussian orthant probabilities of {len(self.groups)} group(s) of clusters "
            f"(integration error {self.error_estimate:.2g})"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (lists and floats; the ``gaussmix bayes-optimal --json``
        contract)."""
        return {
            "test_error": float(self.test_error),
            "error_estimate": float(self.error_estimate),
            "cluster_errors": [float(v) for v in self.cluster_errors],
            "alpha": float(self.alpha),
            "groups": [list(map(int, g)) for g in self.groups],
            "learned_gram": np.asarray(self.learned_gram, dtype=float).tolist(),
            **self.params,
        }


def _check_mixture(mixture: Any) -> Mixture:
    """An isotropic mixture whose clusters carry distinct labels, or a one-line error."""
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    if mixture.covariance.structure != "spectral" or mixture.n_atoms != 1:
        raise ArgumentError(
            "mixture",
            ": the Bayes-optimal error is available only for isotropic covariances "
            "Sigma_c = Delta_c I (Mixture.isotropic); this mixture "
            f"(model {mixture.kind!r}) has {mixture.n_atoms} blocks of directions with "
            "their own variances",
        )
    cc = mixture.labels.cluster_class
    if np.unique(cc).size != cc.size:
        raise ArgumentError(
            "mixture",
            ": the Bayes-optimal error is available only when every cluster has its "
            f"own label; this label map gives the clusters the classes {cc.tolist()}",
        )
    return mixture


def learned_gram(
    gram: np.ndarray, rho: np.ndarray, deltas: np.ndarray, alpha: float
) -> np.ndarray:
    """``E = Theta - B``, eq. (2) of the module docstring (Appendix D, corrected).

    Parameters
    ----------
    gram : ndarray (K, K)
        ``Theta``, positive semi-definite (may be singular).
    rho : ndarray (K,)
        Cluster priors.
    deltas : ndarray (K,)
        Cluster variances ``Delta_c > 0``.
    alpha : float
        Sample complexity ``n / d > 0``.

    Returns
    -------
    ndarray (K, K)
        ``Theta W^{1/2} (I + W^{1/2} Theta W^{1/2})^{-1} W^{1/2} Theta`` with
        ``W = alpha diag(rho / Delta)``: the Gram matrix of the posterior means.
    """
    w = np.sqrt(alpha * rho / deltas)
    tw = gram * w[None, :]  # Theta W^{1/2}
    inner = np.eye(rho.size) + w[:, None] * tw  # I + W^{1/2} Theta W^{1/2}
    e = tw @ np.linalg.solve(inner, tw.T)
    return 0.5 * (e + e.T)


def _variance_groups(deltas: np.ndarray) -> list[list[int]]:
    """Clusters with exactly equal variances, in order of first appearance."""
    groups: dict[float, list[int]] = {}
    for k, v in enumerate(deltas.tolist()):
        groups.setdefault(v, []).append(k)
    return list(groups.values())


def bayes_optimal_error(mixture: Mixture, alpha: float) -> BayesOptimalResult:
    """Bayes-optimal test error at sample complexity ``alpha`` (Appendix D, corrected).

    Parameters
    ----------
    mixture : Mixture
        An isotropic mixture (:meth:`Mixture.isotropic`: any ``rho``, Gram matrix ``Theta``
        of the means, per-cluster variances ``Delta_c``) in which every cluster has its own
        label (one-hot, or binary with K = 2).
    alpha : float
        Sample complexity ``n / d > 0`` (``numpy.inf``: the means are known).

    Returns
    -------
    BayesOptimalResult

    Raises
    ------
    ValueError
        For another covariance structure or a label map that merges clusters ("not
        available"), a non-positive ``alpha``, or two clusters that cannot be told apart
        (same variance, same prior and identical learned means: the error would depend on
        how ties are broken).

    Notes
    -----
    ``eps_BO = sum_c rho_c (1 - P[s_c >= s_k, k != c in the variance group of c])`` with the
    Gaussian scores of eq. (3) of the module docstring; for ``alpha = inf``, ``E = Theta``
    (the Bayes classifier with known means).  Cost: one orthant probability of dimension
    ``|group| - 1`` per cluster (milliseconds up to three clusters per group, about a
    tenth of a second each beyond).

    Examples
    --------
    >>> import gaussmix as gm
    >>> mix = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary")
    >>> print(f"{gm.bayes_optimal_error(mix, alpha=2.0).test_error:.4f}")
    0.1030
    >>> ridge = gm.solve(mix, "square", lam=0.1, alpha=2.0)  # always above it
    >>> bool(ridge.test_error > gm.bayes_optimal_error(mix, alpha=2.0).test_error)
    True
    """
    mixture = _check_mixture(mixture)
    if mixture.rho_test is not None:
        raise ArgumentError(
            "mixture",
            "has test priors of its own (a prior shift); the Bayes-optimal error here is "
            "that of the training distribution: pass mixture.with_test_priors(None)",
        )
    known_means = isinstance(alpha, float | np.floating) and np.isposinf(alpha)
    alpha = np.inf if known_means else check_param("alpha", alpha)
    rho = mixture.rho
    deltas = np.asarray(mixture.sigma[0], dtype=float)
    gram = np.asarray(mixture.theta[0], dtype=float)
    E = gram.copy() if known_means else learned_gram(gram, rho, deltas, alpha)
    groups = _variance_groups(deltas)
    k_all = rho.size
    errors = np.zeros(k_all)
    err_est = np.zeros(k_all)
    scale = max(float(np.abs(E).max()), 1.0)
    for group in groups:
        if len(group) == 1:
            continue
        for c in group:
            others = [k for k in group if k != c]
            # score differences s_k - s_c, k != c: mean ln(rho_k / rho_c) - v_kc / 2 and
            # covariance D E D^T / Delta (D: rows e_k - e_c)
            D = np.zeros((len(others), k_all))
            D[np.arange(len(others)), others] = 1.0
            D[:, c] = -1.0
            cov = D @ E @ D.T / deltas[c]
            cov = 0.5 * (cov + cov.T)
            var = np.diag(cov)
            mean = np.log(rho[others] / rho[c]) - 0.5 * var
            tie = (var <= _TIE_TOL * scale) & (np.abs(mean) <= _TIE_TOL * scale)
            if np.any(tie):
                k = others[int(np.argmax(tie))]
                raise ArgumentError(
                    "mixture",
                    f": clusters {c} and {k} cannot be told apart at alpha={alpha:g} "
                    "(same variance, prior and learned mean): the Bayes error depends on "
                    "how ties are broken",
                )
            p, e = orthant_probability(mean, cov)
            errors[c] = 1.0 - p
            err_est[c] = e
    return BayesOptimalResult(
        test_error=float(np.clip(rho @ errors, 0.0, 1.0)),
        error_estimate=float(rho @ err_est),
        cluster_errors=errors,
        alpha=float(alpha),
        groups=groups,
        learned_gram=E,
        params={
            "K": int(k_all),
            "rho": rho.tolist(),
            "delta": deltas.tolist(),
            "gram": gram.tolist(),
        },
    )
