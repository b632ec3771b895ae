"""The separability transition: ``alpha*_K``, below which the training data of a mixture are
linearly separable (the max-margin estimator exists, the cross-entropy / logistic estimator
diverges as ``lam -> 0+`` and interpolates) and above which they are not.

:func:`separability_threshold` solves the fixed point at the threshold
(:mod:`gaussmix.theory.limits.separability`): exactly for two clusters, by deterministic nested 1-D
quadrature for exchangeable clusters (any K, ``alpha*`` to about 1e-10), and with seeded
randomised quasi-Monte Carlo otherwise, refining the point set until the standard error over
independent scramblings meets ``rel_tol``.  It checks the answer on both sides: below the
threshold the max-margin fixed point exists with a positive margin (training error 0);
above it the cross-entropy (logistic) estimator at a small ``lam`` has a positive training
error.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gaussmix.core.caught import caught
from gaussmix.core.exceptions import ConvergenceError, IntegrationWarning
from gaussmix.core.jsonio import plain
from gaussmix.core.progress import progress_bar
from gaussmix.core.results import Result
from gaussmix.core.validation import check_int, check_param, check_real
from gaussmix.theory.limits.margin import max_margin
from gaussmix.theory.limits.separability import (
    SeparabilityError,
    binary_separability_threshold,
    is_exchangeable,
    margin_problem,
    separability_threshold_estimate,
)
from gaussmix.theory.model.mixture import Mixture

__all__ = [
    "TransitionResult",
    "separability_threshold",
    "binary_separability_threshold",
    "max_margin",
    "SeparabilityError",
]

#: the evidence points sit this far (relative) below and above alpha*
EVIDENCE_OFFSET = 0.1
#: penalty strength of the cross-entropy / logistic check above alpha*
EVIDENCE_LAM = 1e-4
#: largest K for which the evidence above alpha* solves cross-entropy (the solver's own
#: limit on the channel quadrature is K <= 6; beyond K = 4 it costs minutes)
EVIDENCE_MAX_K = 4
#: largest point set (2^n per scrambling) of the refinement
MAX_LOG2_N = 20
#: relative accuracy asked of the deterministic (exchangeable) quadrature when rel_tol is
#: looser: it costs well under a second for K <= 10
EXACT_REL_TOL = 1e-10


@dataclass
class TransitionResult(Result):
    """The separability threshold of a mixture and the evidence for it (the result protocol
    of :mod:`gaussmix.core.results`).

    Attributes
    ----------
    alpha_star : float
        The threshold (NaN if not converged).
    success : bool
        Whether the fixed point was found and ``rel_accuracy <= rel_tol`` (``converged`` is
        its deprecated name; the JSON key stays ``converged``).
    bracket : tuple of float
        ``alpha* -+ 2`` standard errors (the point itself for the exact two-cluster case,
        widened by the root-finding tolerance).
    rel_accuracy : float
        Relative error of ``alpha*``: for quasi-Monte Carlo, the standard error (one
        sigma), the spread of the thresholds solved with each independent scrambling
        alone over the square root of their number; for exchangeable clusters, the
        difference between the last two quadrature rules (a bound in practice: the rules
        converge exponentially); 0 for two clusters (exact integrals).
    evidence : dict
        ``'below'`` / ``'above'``: ``alpha`` and ``train_error`` (0 for the max-margin
        interpolator below; the cross-entropy / logistic training error at
        ``lam = EVIDENCE_LAM`` above, or None where that solve is not attempted), the
        normalised ``margin`` below; ``'closed_form'`` for two isotropic clusters with a
        shared variance.
    n_evaluations : int
        Channel evaluations of the threshold solve.
    elapsed : float
        Wall time (s).
    message : str
        How the search ended, in words.
    method : str
        ``'homogeneous'`` or ``'exchangeable'`` (:mod:`gaussmix.theory.limits.separability`).
    log2_n : int
        Points per scrambling ``2^log2_n`` of the final solve (0: deterministic integrals,
        K = 2 or exchangeable clusters).
    mixture : dict
        The mixture's description.
    """

    #: nothing iterates (the result protocol's ``n_iter`` does not apply)
    n_iter: ClassVar[None] = None

    alpha_star: float
    success: bool
    bracket: tuple[float, float]
    rel_accuracy: float
    evidence: dict
    n_evaluations: int
    elapsed: float
    message: str
    method: str = ""
    log2_n: int = 0
    mixture: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain JSON-safe types (``gaussmix transition --json``): NaN becomes None."""
        return plain(
            {
                "alpha_star": self.alpha_star,
                "converged": self.success,
                "bracket": list(self.bracket),
                "rel_accuracy": self.rel_accuracy,
                "evidence": self.evidence,
                "n_evaluations": self.n_evaluations,
                "elapsed": self.elapsed,
                "message": self.message,
                "method": self.method,
                "log2_n": self.log2_n,
                "mixture": self.mixture,
            }
        )


def separability_threshold(
    mixture: Mixture,
    *,
    rel_tol: float = 1e-4,
    progress: bool = False,
    evidence: bool = True,
    seed: int = 0,
    n_randomisations: int = 8,
    max_log2_n: int = MAX_LOG2_N,
) -> TransitionResult:
    """The separability threshold ``alpha*`` of a mixture (max-margin / lambda -> 0+ limit).

    Parameters
    ----------
    mixture : Mixture
        Any supported covariance structure (isotropic, block, sparse, spectral), priors and
        Gram matrix; one-hot labels (any K; K <= 6 unless the clusters are exchangeable,
        :func:`gaussmix.theory.limits.separability.is_exchangeable`) or binary ``+-1`` labels (K =
        2).
    rel_tol : float
        Target relative error of ``alpha*`` (``1e-8 <= rel_tol < 1``); quasi-Monte Carlo
        point sets are refined until it is met (up to ``2^max_log2_n`` points per
        scrambling); the deterministic quadrature of exchangeable clusters aims at
        ``min(rel_tol, 1e-10)``.
    progress : bool
        Draw a progress bar on an interactive stderr.
    evidence : bool
        Check both sides of the threshold (max-margin margin below; cross-entropy /
        logistic training error at ``lam = 1e-4`` above, for K <= 4).
    seed : int
        Seed of the scrambled Sobol points (the result is a deterministic function of it).
    n_randomisations : int
        Independent scramblings (2 to 64): their spread is the error estimate.
    max_log2_n : int
        Largest point set per scrambling, ``2^max_log2_n`` (10 to 22).

    Returns
    -------
    TransitionResult

    Examples
    --------
    >>> import gaussmix as gm
    >>> mix = gm.Mixture.isotropic(delta=0.5, means="gaussian", n_clusters=3)
    >>> print(f"alpha*_3 = {gm.separability_threshold(mix).alpha_star:.2f}")
    alpha*_3 = 4.22

    Two clusters have a closed form:

    >>> two = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary")
    >>> res = gm.separability_threshold(two)
    >>> print(f"{res.alpha_star:.4f} {gm.binary_separability_threshold(two):.4f}")
    6.6628 6.6628
    """
    t0 = time.perf_counter()
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    tol = check_real("rel_tol", rel_tol, low=1e-8, high=1.0, high_open=True)
    seed = check_param("seed", seed)
    n_randomisations = check_int("n_randomisations", n_randomisations, low=2, high=64)
    max_log2_n = check_int("max_log2_n", max_log2_n, low=10, high=22)
    margin_problem(mixture, 1.0)  # label checks: one-hot, or binary with two clusters
    K = mixture.n_clusters
    if K > 6 and not is_exchangeable(mixture):
        raise ValueError(
            f"mixture has {K} non-exchangeable clusters: separability_threshold supports "
            "K <= 6, or any K for exchangeable clusters (isotropic, one shared Delta, "
            "balanced rho, Gram matrix a I + b 11^T)"
        )
    log2_n = 14 if mixture.n_clusters <= 6 else 15
    n_eval = 0
    with progress_bar(total=3, desc=f"alpha* (K={K})", enabled=progress) as bar:
        est = separability_threshold_estimate(
            mixture,
            log2_n=log2_n,
            n_randomisations=n_randomisations,
            seed=seed,
            rel_tol=min(tol, EXACT_REL_TOL),
        )
        # deterministic integrals: exact Gaussian moments (one effective output, K = 2) or
        # the water-filling quadrature of exchangeable clusters (its own error estimate)
        exact = K == 2 or est.method == "exchangeable"
        n_eval += est.n_evaluations
        bar.update(1)
        rel = est.std_error / est.alpha_star if est.success else np.inf
        while not exact and est.success and rel > tol and log2_n < max_log2_n:
            # quasi-Monte Carlo error ~ N^-0.85 (measured; 0.7 and a 20% margin assumed):
            # jump to the predicted size
            need = log2_n + math.ceil(math.log2(rel / (0.8 * tol)) / 0.7)
            log2_n = min(max_log2_n, max(log2_n + 1, need))
            est = separability_threshold_estimate(
                mixture, log2_n=log2_n, n_randomisations=n_randomisations, seed=seed
            )
            n_eval += est.n_evaluations
            rel = est.std_error / est.alpha_star if est.success else np.inf
        bar.update(1)
        astar = est.alpha_star if est.success else np.nan
        converged = bool(est.success and rel <= tol)
        if not est.success:
            message = est.message
        elif not converged and exact:
            message = (
                f"relative error estimate {rel:.2g} above rel_tol={tol:g} with the finest "
                "quadrature rule; the estimate is reported"
            )
        elif not converged:
            message = (
                f"relative standard error {rel:.2g} above rel_tol={tol:g} with the largest "
                f"point set (2^{log2_n} x {n_randomisations}); the estimate is reported"
            )
        else:
            message = "converged"
        half = 2.0 * est.std_error + 1e-12 * abs(astar)
        bracket = (float(astar - half), float(astar + half))
        ev: dict = {}
        if K == 2 and mixture.n_atoms == 1 and np.ptp(mixture.sigma[0]) == 0.0:
            ev["closed_form"] = binary_separability_threshold(mixture)
        if evidence and est.success:
            ev.update(_evidence(mixture, astar, bracket, seed))
        bar.update(1)
    if exact:
        log2_n = 0  # no quasi-Monte Carlo points
    return TransitionResult(
        alpha_star=float(astar),
        success=converged,
        bracket=bracket,
        rel_accuracy=float(rel) if np.isfinite(rel) else np.nan,
        evidence=ev,
        n_evaluations=n_eval,
        elapsed=time.perf_counter() - t0,
        message=message,
        method=est.method,
        log2_n=log2_n,
        mixture=mixture.describe(),
    )


def _evidence(mixture: Mixture, astar: float, bracket: tuple, seed: int) -> dict:
    """Both sides of the threshold, ``EVIDENCE_OFFSET`` away from the bracket."""
    lo = bracket[0] * (1.0 - EVIDENCE_OFFSET)
    hi = bracket[1] * (1.0 + EVIDENCE_OFFSET)
    below: dict[str, Any] = {"alpha": lo}
    try:
        mm = max_margin(mixture, lo, alpha_star=astar, seed=seed, log2_n=13, tol=1e-8)
        below.update(train_error=mm.train_error, margin=mm.margin, test_error=mm.test_error)
    except (ConvergenceError, ValueError) as exc:
        below.update(train_error=None, margin=None, error=str(exc))
    above: dict[str, Any] = {"alpha": hi, "train_error": None, "lam": EVIDENCE_LAM}
    if mixture.n_clusters <= EVIDENCE_MAX_K:
        from gaussmix.theory.api.api import solve

        labels = mixture.labels
        loss = "logistic" if labels.is_binary else "cross-entropy"
        try:
            # its integration error is recorded with it instead
            with caught((IntegrationWarning,), record=False):
                res = solve(mixture, loss, lam=EVIDENCE_LAM, alpha=hi, throw=False)
            above.update(
                train_error=res.train_error if res.success else None,
                loss=loss,
                integration_error=res.integration_error,
            )
            if not res.success:
                above["error"] = res.message
        except (ConvergenceError, ValueError) as exc:
            above["error"] = str(exc)
    else:
        above["note"] = f"cross-entropy check skipped for K > {EVIDENCE_MAX_K} (cost)"
    return {"below": below, "above": above}
