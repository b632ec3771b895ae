"""Studies that combine the theory, simulations and data: real data against Gaussian-mixture
theory (:mod:`~gaussmix.studies.realdata`).

This layer sits above :mod:`gaussmix.experiments` and :mod:`gaussmix.simulate` (it uses
both) and below the figures and the command line.
"""

from .realdata import (
    CLUSTERINGS,
    SOURCES,
    RealDataProblem,
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
    "RealDataProblem",
    "prepare_realdata",
    "real_curve",
    "realdata_curve",
    "realdata_lambda_curve",
    "synthetic_curve",
    "theory_curve",
]
