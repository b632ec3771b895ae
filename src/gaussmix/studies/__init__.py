"""Studies that combine the theory, simulations and data: real data against Gaussian-mixture
theory (:mod:`~gaussmix.studies.realdata`), on your own data (:mod:`~gaussmix.studies.owndata`).

This layer sits above :mod:`gaussmix.experiments` and :mod:`gaussmix.simulate` (it uses
both) and below the figures and the command line.
"""

from .owndata import DataStudy, prepare_data, study_data, target_alpha
from .realdata import (
    CLUSTERINGS,
    SOURCES,
    RealDataProblem,
    fit_problem,
    prepare_realdata,
    real_curve,
    realdata_curve,
    realdata_lambda_curve,
    synthetic_curve,
    theory_curve,
)

__all__ = [
    "CLUSTERINGS",
    "SOURCES",
    "DataStudy",
    "RealDataProblem",
    "fit_problem",
    "prepare_data",
    "study_data",
    "target_alpha",
    "prepare_realdata",
    "real_curve",
    "realdata_curve",
    "realdata_lambda_curve",
    "synthetic_curve",
    "theory_curve",
]
