"""Experiments built on the solver: learning curves, lambda sweeps, the optimal lambda, the
separability transition.

Each returns a tidy pandas table (or a small result object) ready to plot.
"""

from .curves import d_test_error_d_lambda, lambda_sweep, learning_curve, parse_range
from .lambda_star import OptimalLambdaResult, optimal_lambda, optimal_lambda_curve
from .transition import (
    SeparabilityError,
    TransitionResult,
    binary_separability_threshold,
    max_margin,
    separability_threshold,
)

__all__ = [
    "learning_curve",
    "lambda_sweep",
    "parse_range",
    "optimal_lambda",
    "optimal_lambda_curve",
    "OptimalLambdaResult",
    "d_test_error_d_lambda",
    "separability_threshold",
    "binary_separability_threshold",
    "max_margin",
    "TransitionResult",
    "SeparabilityError",
]
