"""Declarative checks of user input: every failure names the argument."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "check_real",
    "check_int",
    "check_choice",
    "check_probability_vector",
    "check_array",
]


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float inside the given interval or raise ``ValueError``."""
    if value.__class__ is float:  # the common case, without the abstract-class checks
        v = value
    elif isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    else:
        v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v!r}")
    if low is not None and (v < low or (low_open and v == low)):
        op = ">" if low_open else ">="
        raise ValueError(f"{name} must be {op} {low:g}, got {v:g}")
    if high is not None and (v > high or (high_open and v == high)):
        op = "<" if high_open else "<="
        raise ValueError(f"{name} must be {op} {high:g}, got {v:g}")
    return v


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int inside ``[low, high]`` or raise."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    v = int(value)
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices`` (strings) or raise ``ValueError``."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def check_array(
    name: str,
    value: Any,
    *,
    shape: tuple[int | None, ...] | None = None,
    positive: bool = False,
    nonnegative: bool = False,
) -> np.ndarray:
    """Convert to a finite float array, checking its shape and sign."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers, got {value!r}") from exc
    if shape is not None:
        ok = arr.ndim == len(shape) and all(
            s is None or s == n for s, n in zip(shape, arr.shape, strict=True)
        )
        if not ok:
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be strictly positive, got {arr.tolist()}")
    if nonnegative and not np.all(arr >= 0):
        raise ValueError(f"{name} must be non-negative, got {arr.tolist()}")
    return arr


def check_probability_vector(name: str, value: Any, size: int | None = None) -> np.ndarray:
    """A vector of strictly positive entries that sums to one (to 1e-9)."""
    arr = check_array(name, value, shape=(size,) if size is not None else (None,))
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(arr > 0):
        raise ValueError(f"{name} must have strictly positive entries, got {arr.tolist()}")
    total = float(arr.sum())
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1 (a probability vector), got sum {total:.12g}")
    return arr / total
