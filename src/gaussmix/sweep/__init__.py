"""Sweeps: any collection of independent points (theory or simulation), run on joblib or
Dask, checkpointed and resumable.

A point is a :class:`PointSpec` (a mixture, a loss, a penalty, ``lam``, ``alpha``, the
solver settings and optionally a :class:`Simulation`), made of library objects; a
:class:`SpecGrid` is a validated, ordered collection of them (usually a Cartesian product
of ``axes``).  Usage::

    import numpy as np
    from gaussmix import Mixture
    from gaussmix.sweep import PointSpec, SpecGrid, sweep

    mix = Mixture.isotropic(0.5, "simplex", n_clusters=2, labels="binary")
    points = [
        PointSpec(mix, "logistic", lam=lam, alpha=alpha, coords={"alpha": alpha, "lam": lam})
        for alpha in (0.5, 1.0, 2.0)
        for lam in (0.01, 0.1, 1.0)
    ]
    res = sweep(points, out="sweep.csv")      # joblib on all cores; re-run to resume
    res.df                                    # pandas, one row per point, in order
    res.to_xarray()                           # dims (alpha, lam), attrs = provenance
    sweep(points, scheduler="tcp://host:8786")  # the same on a dask.distributed cluster

Grids written with the options of ``gaussmix point`` (``delta``, ``means``, ``clusters``,
... and TOML files) are translated into specs by :class:`gaussmix.cli.grid.Grid`, which
:func:`sweep` also accepts.

Modules: :mod:`.spec` (points, keys), :mod:`.tasks` (one point), :mod:`.checkpoint`,
:mod:`.executors` (serial, joblib, dask), :mod:`.table` (table, CSV, xarray, provenance),
:mod:`.runner` (:func:`sweep`).
"""

from .checkpoint import checkpoint_path
from .executors import BACKENDS, CONNECT_TIMEOUT, SchedulerError, check_scheduler_address
from .runner import as_spec_grid, sweep
from .spec import (
    CHECKPOINT_VERSION,
    PointSpec,
    Simulation,
    SpecGrid,
    check_points,
    check_simulation,
    point_key,
)
from .table import SweepResult, matrix_dims
from .tasks import (
    ERROR_KEYS,
    NESTED_KEYS,
    TEST_DELAY_ENV,
    run_task,
    simulation_keys,
    simulation_payload,
    simulation_tol,
    theory_keys,
    theory_only_params,
    theory_payload,
)

__all__ = [
    "PointSpec",
    "Simulation",
    "SpecGrid",
    "SweepResult",
    "SchedulerError",
    "sweep",
    "as_spec_grid",
    "check_points",
    "check_scheduler_address",
    "run_task",
    "point_key",
    "checkpoint_path",
    "theory_payload",
    "simulation_payload",
    "check_simulation",
    "theory_keys",
    "simulation_keys",
    "simulation_tol",
    "theory_only_params",
    "matrix_dims",
    "ERROR_KEYS",
    "NESTED_KEYS",
    "BACKENDS",
    "CONNECT_TIMEOUT",
    "CHECKPOINT_VERSION",
    "TEST_DELAY_ENV",
]
