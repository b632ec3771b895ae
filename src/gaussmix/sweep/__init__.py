"""Grids of independent points (theory or simulation) on joblib or Dask, checkpointed and
resumable.

Usage::

    from gaussmix.sweep import Grid, sweep
"""

from .engine import (
    BACKENDS,
    ERROR_KEYS,
    NESTED_KEYS,
    TEST_DELAY_ENV,
    Grid,
    GridError,
    SweepResult,
    check_simulation,
    checkpoint_path,
    point_key,
    run_task,
    simulation_keys,
    simulation_payload,
    sweep,
    theory_keys,
    theory_payload,
)

__all__ = [
    "Grid",
    "GridError",
    "SweepResult",
    "sweep",
    "run_task",
    "point_key",
    "checkpoint_path",
    "theory_payload",
    "simulation_payload",
    "check_simulation",
    "theory_keys",
    "simulation_keys",
    "ERROR_KEYS",
    "NESTED_KEYS",
    "BACKENDS",
    "TEST_DELAY_ENV",
]
