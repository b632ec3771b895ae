"""Deprecated location of the sweep's functions, kept for imports that still name it
(``gaussmix.cli.commands``' simulate and compare); import from :mod:`gaussmix.sweep`.
The engine is split into :mod:`.spec`, :mod:`.tasks`, :mod:`.checkpoint`,
:mod:`.executors`, :mod:`.table` and :mod:`.runner`.
"""

from .checkpoint import checkpoint_path
from .runner import sweep
from .tasks import check_simulation, simulation_keys, simulation_payload, theory_keys

__all__ = [
    "check_simulation",
    "checkpoint_path",
    "simulation_keys",
    "simulation_payload",
    "sweep",
    "theory_keys",
]
