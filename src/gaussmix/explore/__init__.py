"""The interactive explorer's engine (issue 22): state, background jobs, exports.

No user-interface library is imported here (the web and notebook application is
:mod:`gaussmix.explore.app`, in the ``explore`` extra); this package is the explorer's Python
API, a thin client of the library:

>>> from gaussmix.explore import ExplorerState, start_curve, validate, export_cli
>>> state = ExplorerState(lam=0.5, n_points=5, precision="library")  # default: "screen"
>>> validate(state)
{}
>>> table = start_curve(state).wait()  # the rows of gaussmix.learning_curve, to the bit
>>> print(export_cli(state, out="o"))
gaussmix curve --n-clusters 2 --delta 1.0 --loss logistic --lam 0.5 --alphas log:0.2:8.0:5 --out o
"""

from __future__ import annotations

from .engine import (
    CurveJob,
    Overlay,
    OverlayJob,
    Session,
    clear_cache,
    order_parameters,
    start_curve,
    start_overlays,
)
from .export import export_cli, export_csv, export_png, export_python
from .state import AXES, OVERLAYS, ExplorerState, validate

__all__ = [
    "ExplorerState",
    "validate",
    "CurveJob",
    "start_curve",
    "OverlayJob",
    "Overlay",
    "start_overlays",
    "Session",
    "export_csv",
    "export_png",
    "export_python",
    "export_cli",
    "order_parameters",
    "clear_cache",
    "AXES",
    "OVERLAYS",
]
