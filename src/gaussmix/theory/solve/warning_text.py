"""The text of the integration warning: where a solve's large estimated integration error
(:class:`~gaussmix.theory.solve.refinement.Estimate`) comes from, and a remedy only where
one exists; the solver issues the warning."""

from __future__ import annotations

import numpy as np

from ..numerics.quadrature import MAX_PANELS, MAX_QUADRATURE_NODES, QuadratureRule
from ..numerics.tolerances import integration_warning_threshold
from ..prior.lasso import outer_panels
from ..prior.prior import prior_quadrature_dim
from ..problem.problem import Problem
from .options import SolverOptions
from .refinement import MAX_PRIOR_ESTIMATE_LINES, Estimate, finer_prior_panels

__all__ = ["integration_warning_text"]


def _refinement_limit(rule: QuadratureRule) -> str | None:
    """Why no finer rule than ``rule`` is admissible, or None if one is."""
    limit = rule.limit()
    if limit is not None:
        return limit
    if rule.refined().weights.size > MAX_QUADRATURE_NODES:
        return f"at most {MAX_QUADRATURE_NODES} nodes"
    return None


def integration_warning_text(problem: Problem, opts: SolverOptions, est: Estimate) -> str:
    """The text of the :class:`~gaussmix.core.exceptions.IntegrationWarning`: where the
    estimated error comes from, and a remedy only where one exists.

    Three sources add up: the change of an observable under a refined channel rule (a finer
    Gauss-Hermite rule reduces it, if one is admissible), the final evaluation's own
    error, for the test error the standard error of the seeded quasi-Monte Carlo orthant
    probability of dimension >= 3 at its sampling cap (nothing in the solver's options
    reduces it), and the change under a refined rule of the prior's own integrals (the
    multi-output lasso; a larger ``prior_panels`` reduces it).  Each source is named if it
    dominates or alone exceeds the threshold.
    """
    threshold = integration_warning_threshold(opts.tol)
    if any(np.isnan(v) for v in est.prior.values()):
        n_outer = prior_quadrature_dim(problem)
        return (
            "the integration error is not estimated: the lasso prior's integrals across lines "
            f"({n_outer}-dimensional composite Gauss-Legendre, {outer_panels(n_outer)} panels "
            f"per dimension) would need more than {MAX_PRIOR_ESTIMATE_LINES} lines per "
            "atom for a refined rule; its accuracy is unknown (with three effective outputs "
            "the default rule's moments were within ~5e-4 relative)"
        )
    errors = est.errors
    key = "test_error" if errors["test_error"] >= errors["train_loss"] else "train_loss"
    what = key.replace("_", " ").replace("train ", "training ")
    q, e, p = est.quad[key], est.evals[key], est.prior[key]
    parts = [f"estimated integration error {errors[key]:.2g} of the {what} is large"]
    if q >= max(e, p) or q > threshold:
        rule = est.T.rule
        text = (
            f"the {what} changes by {q:.2g} between the last two channel quadrature rules "
            f"(the finer: {rule.describe()})"
        )
        limit = _refinement_limit(rule)
        if rule.randomised:
            text = (
                f"{q:.2g} is the standard error of the {what} across the "
                f"{rule.n_rep} independent randomisations of the channel rule "
                f"({rule.describe()})"
            )
            if limit is None:
                text += (
                    f"; quad_tol={opts.quad_tol:g} is out of reach of refinement within "
                    f"{MAX_QUADRATURE_NODES} nodes"
                )
            else:
                text += f"; no finer rule is admissible ({limit})"
            text += f"; to reduce it, {rule.remedy()}"
        elif limit is None:
            text += f"; {rule.remedy()}"
        else:
            text += f"; no finer rule is admissible ({limit}), so the estimate stands"
        parts.append(text)
    if p > max(q, e) or p > threshold:
        parts.append(_prior_warning_text(problem, est.T.prior_panels, what, p))
    if e > max(q, p) or e > threshold:
        dim = max(D.shape[0] for D, _ in problem.constraints)
        parts.append(
            f"{e:.2g} is the standard error of the seeded quasi-Monte Carlo estimates of the "
            f"{dim}-dimensional Gaussian orthant probabilities (one per cluster) that make up "
            "the test error; they are at their sampling cap, so no solver option reduces it, "
            "and the test error is accurate to about that much (one standard error)"
        )
    return "; ".join(parts)


def _prior_warning_text(problem: Problem, panels: int | None, what: str, change: float) -> str:
    """The part of :func:`integration_warning_text` on the prior's own rule (``panels``: the
    finer of its last two rules)."""
    n_outer = prior_quadrature_dim(problem)
    panels = panels or outer_panels(n_outer)
    text = (
        f"the {what} changes by {change:.2g} between the last two rules of the lasso prior's "
        f"integrals across lines ({n_outer}-dimensional composite Gauss-Legendre, the finer "
        f"with {panels} panels per dimension)"
    )
    if panels > MAX_PANELS // 2 or finer_prior_panels(panels, n_outer, first=True) is None:
        limit = f"at most {MAX_PANELS} panels and {MAX_PRIOR_ESTIMATE_LINES} lines per atom"
        return f"{text}; no finer rule is admissible ({limit}), so the estimate stands"
    return text + (
        f"; to reduce it, pass prior_panels={panels} (the estimate's re-solve then has "
        f"{2 * panels} panels per dimension, {2**n_outer} times the cost per evaluation)"
    )
