"""Finite-size simulations: exact ERM on samples of the same mixture the theory solves.

``simulate(mixture, loss=..., lam=..., alpha=..., d=..., seeds=...)`` returns the
observables of Theorem 2 and the overlaps of Theorem 1 with their standard errors;
``separability_fraction(mixture, alphas, d=..., seeds=...)`` the fraction of linearly
separable samples (the finite-size separability transition) and ``lp_crossing`` its 50 %
point.
"""

from .separability import (
    LPError,
    draw_dataset,
    lp_crossing,
    separability_fraction,
    separating_hyperplane,
)
from .simulation import (
    LOSSES,
    ERMConvergenceWarning,
    FiniteSizeWarning,
    Instance,
    SimulationResult,
    exact_test_error,
    exact_test_loss,
    fit_erm,
    largest_remainder,
    monte_carlo_test_error,
    observables,
    overlaps,
    predict_class,
    realise,
    simulate,
    validate_simulation,
)

__all__ = [
    "Instance",
    "SimulationResult",
    "ERMConvergenceWarning",
    "FiniteSizeWarning",
    "LOSSES",
    "largest_remainder",
    "realise",
    "fit_erm",
    "predict_class",
    "overlaps",
    "exact_test_error",
    "exact_test_loss",
    "monte_carlo_test_error",
    "observables",
    "simulate",
    "validate_simulation",
    "LPError",
    "draw_dataset",
    "separating_hyperplane",
    "separability_fraction",
    "lp_crossing",
]
