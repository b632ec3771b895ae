"""Timing helpers shared by the benchmark scripts (run them as ``python benchmarks/X.py``)."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import gaussmix as gm


def median_time(
    fn: Callable[[], Any], repeats: int = 5, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, Any]:
    """Median time of ``repeats`` calls after one warm-up call, and the last result; wall
    time, or the ``clock`` given (``time.process_time``: CPU time, steadier on a loaded
    machine)."""
    fn()  # warm-up (imports, caches)
    ts, out = [], None
    for _ in range(repeats):
        t0 = clock()
        out = fn()
        ts.append(clock() - t0)
    return statistics.median(ts), out


def machine_line() -> str:
    """One line describing the machine and the library versions."""
    return (
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}, numpy {np.__version__}, gaussmix "
        f"{gm.__version__}"
    )
