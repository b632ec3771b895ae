"""gaussmix: exact high-dimensional learning curves of linear classifiers on Gaussian mixtures.

Quick start::

    import gaussmix as gm
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    res = gm.solve(mix, "cross-entropy", lam=1.0, alpha=2.0)
    res.test_error, res.train_error, res.train_loss

The equations are those of Loureiro et al. (2021), "Learning Gaussian mixtures with
generalised linear models: precise asymptotics in high-dimensions" (Theorems 1-2).
"""

import sys
import types
from typing import TYPE_CHECKING

from .core.version import __version__

#: public name -> module that defines it; imported on first use (PEP 562), so that
#: ``import gaussmix`` and ``gaussmix --help`` do not pay for numpy, scipy, numba or pandas
_EXPORTS = {
    "ConvergenceError": "gaussmix.core.exceptions",
    "ConvergenceWarning": "gaussmix.core.exceptions",
    "GaussmixError": "gaussmix.core.exceptions",
    "IntegrationWarning": "gaussmix.core.exceptions",
    "SpuriousFixedPointError": "gaussmix.core.exceptions",
    "UnboundedWeightsError": "gaussmix.core.exceptions",
    "OptimalLambdaResult": "gaussmix.experiments",
    "d_test_error_d_lambda": "gaussmix.experiments",
    "lambda_sweep": "gaussmix.experiments",
    "learning_curve": "gaussmix.experiments",
    "optimal_lambda": "gaussmix.experiments",
    "optimal_lambda_curve": "gaussmix.experiments",
    "separability_threshold": "gaussmix.experiments.transition",
    "binary_separability_threshold": "gaussmix.experiments.transition",
    "max_margin": "gaussmix.experiments.transition",
    "TransitionResult": "gaussmix.experiments.transition",
    "SeparabilityError": "gaussmix.experiments.transition",
    "LOSSES": "gaussmix.theory.channel.losses",
    "Loss": "gaussmix.theory.channel.losses",
    "get_loss": "gaussmix.theory.channel.losses",
    "LABEL_MAPS": "gaussmix.theory.model.labels",
    "MIXTURE_MODELS": "gaussmix.theory.model.mixture",
    "LabelMap": "gaussmix.theory.model.labels",
    "Mixture": "gaussmix.theory.model.mixture",
    "mean_gram": "gaussmix.theory.model.mixture",
    "load_mixture": "gaussmix.theory.model.mixture",
    "MixtureFileError": "gaussmix.theory.model.mixture",
    "CovarianceStructure": "gaussmix.theory.model.covariance",
    "STRUCTURES": "gaussmix.theory.model.covariance",
    "OBSERVABLES": "gaussmix.theory.model.outputs",
    "PENALTIES": "gaussmix.theory.model.penalties",
    "make_penalty": "gaussmix.theory.model.penalties",
    "make_problem": "gaussmix.theory.api.api",
    "GaussHermite": "gaussmix.theory.numerics.quadrature",
    "FixedPointResult": "gaussmix.theory.solve.results",
    "SolverOptions": "gaussmix.theory.solve.options",
    "solve": "gaussmix.theory.api.api",
    "BayesOptimalResult": "gaussmix.theory.limits.bayes",
    "bayes_optimal_error": "gaussmix.theory.limits.bayes",
    "separability_fraction": "gaussmix.simulate.separability",
    "lp_crossing": "gaussmix.simulate.separability",
    "simulate": "gaussmix.simulate.simulation",
    "SimulationResult": "gaussmix.simulate.simulation",
    "sweep": "gaussmix.sweep.runner",
    "SweepResult": "gaussmix.sweep.table",
    "CurveTable": "gaussmix.core.tables",
    "study_data": "gaussmix.studies.owndata",
    "load_labelled": "gaussmix.data.files",
    "SingularCovarianceWarning": "gaussmix.core.exceptions",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .core.exceptions import (
        ConvergenceError,
        ConvergenceWarning,
        GaussmixError,
        IntegrationWarning,
        SingularCovarianceWarning,
        SpuriousFixedPointError,
        UnboundedWeightsError,
    )
    from .core.tables import CurveTable
    from .data.files import load_labelled
    from .experiments import (
        OptimalLambdaResult,
        d_test_error_d_lambda,
        lambda_sweep,
        learning_curve,
        optimal_lambda,
        optimal_lambda_curve,
    )
    from .experiments.transition import (
        SeparabilityError,
        TransitionResult,
        binary_separability_threshold,
        max_margin,
        separability_threshold,
    )
    from .simulate.separability import lp_crossing, separability_fraction
    from .simulate.simulation import SimulationResult, simulate
    from .studies.owndata import study_data
    from .sweep.runner import sweep
    from .sweep.table import SweepResult
    from .theory.api.api import make_problem, solve
    from .theory.channel.losses import LOSSES, Loss, get_loss
    from .theory.limits.bayes import BayesOptimalResult, bayes_optimal_error
    from .theory.model.covariance import STRUCTURES, CovarianceStructure
    from .theory.model.labels import LABEL_MAPS, LabelMap
    from .theory.model.mixture import (
        MIXTURE_MODELS,
        Mixture,
        MixtureFileError,
        load_mixture,
        mean_gram,
    )
    from .theory.model.outputs import OBSERVABLES
    from .theory.model.penalties import PENALTIES, make_penalty
    from .theory.numerics.quadrature import GaussHermite
    from .theory.solve.options import SolverOptions
    from .theory.solve.results import FixedPointResult


#: subpackages reachable as attributes (``gm.figures.atlas()``), imported on first use;
#: ``gm.simulate`` and ``gm.sweep`` are the functions (their subpackages are imported as
#: ``import gaussmix.simulate`` / ``from gaussmix.sweep import PointSpec``)
_SUBPACKAGES = ("data", "experiments", "figures", "studies", "theory")
#: public names that are also subpackages: the name is the function
_SHADOWED = ("simulate", "sweep")


def __getattr__(name: str):
    import importlib

    if name in _SUBPACKAGES:
        return importlib.import_module(f"gaussmix.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gaussmix' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    """The public names (:data:`__all__`) and the subpackages reachable as attributes."""
    return sorted(set(__all__) | set(_SUBPACKAGES))


class _Package(types.ModuleType):
    """The class of this module: after importing a submodule, the import system binds it
    on its parent (``setattr(gaussmix, 'simulate', <module>)``, in
    ``importlib._bootstrap._find_and_load_unlocked``); for the names of :data:`_SHADOWED`
    the public name is the function, so that binding is declined and ``gm.simulate`` stays
    the function after ``import gaussmix.simulate`` (the module is
    ``sys.modules['gaussmix.simulate']``)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "__version__",
    "Mixture",
    "LabelMap",
    "mean_gram",
    "load_mixture",
    "MixtureFileError",
    "CovarianceStructure",
    "STRUCTURES",
    "solve",
    "SolverOptions",
    "FixedPointResult",
    "learning_curve",
    "lambda_sweep",
    "optimal_lambda",
    "optimal_lambda_curve",
    "OptimalLambdaResult",
    "d_test_error_d_lambda",
    "separability_threshold",
    "binary_separability_threshold",
    "max_margin",
    "TransitionResult",
    "SeparabilityError",
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
    "UnboundedWeightsError",
    "ConvergenceWarning",
    "IntegrationWarning",
    "BayesOptimalResult",
    "bayes_optimal_error",
    "separability_fraction",
    "lp_crossing",
    "simulate",
    "SimulationResult",
    "sweep",
    "SweepResult",
    "CurveTable",
    "study_data",
    "load_labelled",
    "SingularCovarianceWarning",
]
