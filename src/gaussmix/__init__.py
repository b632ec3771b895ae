"""gaussmix: exact high-dimensional learning curves of linear classifiers on Gaussian mixtures.

Quick start::

    import gaussmix as gm
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    res = gm.solve(mix, "cross-entropy", lam=1.0, alpha=2.0)
    res.test_error, res.train_error, res.train_loss

The equations are those of Loureiro et al. (2021), "Learning Gaussian mixtures with
generalised linear models: precise asymptotics in high-dimensions" (Theorems 1-2).
"""

from .core.exceptions import (
    ConvergenceError,
    ConvergenceWarning,
    GaussmixError,
    IntegrationWarning,
    SpuriousFixedPointError,
)
from .core.version import __version__
from .experiments import (
    OptimalLambdaResult,
    d_test_error_d_lambda,
    lambda_sweep,
    learning_curve,
    optimal_lambda,
    optimal_lambda_curve,
)
from .theory.losses import LOSSES, Loss, get_loss
from .theory.mixture import LABEL_MAPS, MIXTURE_MODELS, LabelMap, Mixture, mean_gram
from .theory.outputs import OBSERVABLES
from .theory.penalties import PENALTIES, make_penalty
from .theory.problem import make_problem
from .theory.quadrature import GaussHermite
from .theory.solver import FixedPointResult, solve

__all__ = [
    "__version__",
    "Mixture",
    "LabelMap",
    "mean_gram",
    "solve",
    "FixedPointResult",
    "learning_curve",
    "lambda_sweep",
    "optimal_lambda",
    "optimal_lambda_curve",
    "OptimalLambdaResult",
    "d_test_error_d_lambda",
    "make_problem",
    "get_loss",
    "Loss",
    "make_penalty",
    "LOSSES",
    "PENALTIES",
    "LABEL_MAPS",
    "MIXTURE_MODELS",
    "OBSERVABLES",
    "GaussHermite",
    "GaussmixError",
    "ConvergenceError",
    "SpuriousFixedPointError",
    "ConvergenceWarning",
    "IntegrationWarning",
]
