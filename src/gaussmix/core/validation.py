"""Declarative checks of user input: every failure names the argument."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

from gaussmix.core.exceptions import ArgumentError, ArgumentTypeError

__all__ = [
    "check_real",
    "check_int",
    "check_choice",
    "check_probability_vector",
    "check_array",
    "check_param",
    "check_param_values",
    "Interval",
    "JobCount",
    "PARAMETERS",
    "LAM_MAX",
    "ALPHA_MIN",
    "ALPHA_MAX",
]


def _bad(kind: type[Exception], name: str, requirement: str) -> Exception:
    """The error of a bad argument ``name``: an :class:`ArgumentError` (``kind`` ValueError)
    or :class:`ArgumentTypeError` (``kind`` TypeError), ``'<name> <requirement>'``."""
    return (ArgumentTypeError if kind is TypeError else ArgumentError)(name, requirement)


def _as_float(name: str, value: Any, want: object) -> float:
    """``value`` as a float, or ``TypeError``: ``'<name> must be <want>, got ...'``."""
    if value.__class__ is float:  # the common case, without the abstract-class checks
        return value
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise _bad(TypeError, name, f"must be {want}, got {value!r} ({type(value).__name__})")
    return float(value)


def _as_int(name: str, value: Any, want: object) -> int:
    """``value`` as an int, or ``TypeError``: ``'<name> must be <want>, got ...'``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise _bad(TypeError, name, f"must be {want}, got {value!r} ({type(value).__name__})")
    return int(value)


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
    v = _as_float(name, value, "a real number")
    if not math.isfinite(v):
        raise _bad(ValueError, name, f"must be finite, got {v!r}")
    if low is not None and (v < low or (low_open and v == low)):
        op = ">" if low_open else ">="
        raise _bad(ValueError, name, f"must be {op} {low:g}, got {v:g}")
    if high is not None and (v > high or (high_open and v == high)):
        op = "<" if high_open else "<="
        raise _bad(ValueError, name, f"must be {op} {high:g}, got {v:g}")
    return v


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int inside ``[low, high]`` or raise."""
    v = _as_int(name, value, "an integer")
    if low is not None and v < low:
        raise _bad(ValueError, name, f"must be >= {low}, got {v}")
    if high is not None and v > high:
        raise _bad(ValueError, name, f"must be <= {high}, got {v}")
    return v


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices`` (strings) or raise ``ValueError``."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise _bad(ValueError, name, f"must be one of {allowed}; got {value!r}")
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
        raise _bad(TypeError, name, f"must be an array of real numbers, got {value!r}") from exc
    if shape is not None:
        ok = arr.ndim == len(shape) and all(
            s is None or s == n for s, n in zip(shape, arr.shape, strict=True)
        )
        if not ok:
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise _bad(ValueError, name, f"must have shape {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise _bad(ValueError, name, "must contain only finite numbers")
    if positive and not np.all(arr > 0):
        raise _bad(ValueError, name, f"must be strictly positive, got {arr.tolist()}")
    if nonnegative and not np.all(arr >= 0):
        raise _bad(ValueError, name, f"must be non-negative, got {arr.tolist()}")
    return arr


def check_probability_vector(
    name: str, value: Any, size: int | None = None, *, zeros: bool = False
) -> np.ndarray:
    """A vector of strictly positive entries (``zeros``: nonnegative) that sums to one (to
    1e-9)."""
    arr = check_array(name, value, shape=(size,) if size is not None else (None,))
    if arr.size == 0:
        raise _bad(ValueError, name, "must not be empty")
    if zeros and not np.all(arr >= 0):
        raise _bad(ValueError, name, f"must have nonnegative entries, got {arr.tolist()}")
    if not zeros and not np.all(arr > 0):
        raise _bad(ValueError, name, f"must have strictly positive entries, got {arr.tolist()}")
    total = float(arr.sum())
    if abs(total - 1.0) > 1e-9:
        raise _bad(ValueError, name, f"must sum to 1 (a probability vector), got sum {total:.12g}")
    return arr / total


# ============================================================================ one rule per fact
#: largest penalty strength: beyond it the weights underflow double precision and the errors
#: would be decided by ties, not by the theory (the results are valid in [0, LAM_MAX])
LAM_MAX = 1e8
#: admissible sample complexities (beyond them the data per dimension under/overflows)
ALPHA_MIN, ALPHA_MAX = 1e-8, 1e8

_CLOSED = ("both", "left", "right", "neither")


@dataclass(frozen=True)
class Interval:
    """A declarative bound on a number, as scikit-learn's ``Interval``.

    ``kind`` is :class:`numbers.Real` (a finite float) or :class:`numbers.Integral`;
    ``low`` / ``high`` (``None``: unbounded) are included as ``closed`` says (``'both'``,
    ``'left'``, ``'right'``, ``'neither'``).  :meth:`check` validates and its messages are
    :func:`check_real`'s / :func:`check_int`'s, which name the argument.
    """

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"

    def __post_init__(self) -> None:
        if self.kind not in (Real, Integral):
            raise TypeError(f"kind must be numbers.Real or numbers.Integral, got {self.kind!r}")
        check_choice("closed", self.closed, _CLOSED)
        # the ends as plain values: sweeps check lam and alpha once per point
        object.__setattr__(self, "_ends", (self.low, self.high, self.low_open, self.high_open))

    @property
    def low_open(self) -> bool:
        return self.closed in ("right", "neither")

    @property
    def high_open(self) -> bool:
        return self.closed in ("left", "neither")

    def contains(self, v: float) -> bool:
        """Whether the number ``v`` (of the right kind) lies in the interval."""
        lo, hi, lo_open, hi_open = self._ends
        if lo is not None and (v < lo or (v == lo and lo_open)):
            return False
        return hi is None or not (v > hi or (v == hi and hi_open))

    def check(self, name: str, value: Any) -> Any:
        """``value`` as a float (an int for integers) inside the interval, or raise
        ``TypeError`` / ``ValueError``: ``'<name> must be <this interval>, got <value>'``."""
        if self.kind is Integral:
            v: Any = _as_int(name, value, self)
        else:
            v = _as_float(name, value, self)
            if not math.isfinite(v):  # NaN and +-inf: outside every interval
                raise _bad(ValueError, name, f"must be {self}, got {v:g}")
        if not self.contains(v):
            raise _bad(ValueError, name, f"must be {self}, got {v:g}")
        return v

    def __str__(self) -> str:
        kind = "an integer" if self.kind is Integral else "a real number"
        if self.low is not None and self.high is not None:
            left = "(" if self.low_open else "["
            right = ")" if self.high_open else "]"
            return f"{kind} in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"{kind} {'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{kind} {'<' if self.high_open else '<='} {self.high:g}"
        return kind


@dataclass(frozen=True)
class JobCount:
    """joblib's number of workers: a non-zero integer, ``-1`` for all cores, ``-2`` for
    all but one, ..."""

    def check(self, name: str, value: Any) -> int:
        v = check_int(name, value)
        if v == 0:
            raise _bad(ValueError, name, f"must be {self}, got 0")
        return v

    def __str__(self) -> str:
        return "a non-zero integer (joblib: -1 = all cores)"


#: The admissible values of every parameter a point is made of, each stated once: the
#: theory (:func:`gaussmix.theory.problem.problem.make_problem`), the simulation, the sweeps, the
#: figures, the studies and the command line all validate through :func:`check_param`.
#: ``d`` is the dimension of a simulation (also ``>= K`` for mixtures realising their
#: means exactly, and the dimension of a dense mixture); ``n_clusters`` is K.
PARAMETERS: dict[str, Interval | JobCount] = {
    "lam": Interval(Real, 0.0, LAM_MAX, closed="both"),
    "alpha": Interval(Real, ALPHA_MIN, ALPHA_MAX, closed="both"),
    "n_clusters": Interval(Integral, 2, None),
    "d": Interval(Integral, 2, None),
    "seeds": Interval(Integral, 1, None),
    "seed": Interval(Integral, 0, None),
    "n_jobs": JobCount(),
}


def check_param(fact: str, value: Any, *, name: str | None = None) -> Any:
    """Validate ``value`` against the rule of ``fact`` in :data:`PARAMETERS`; the message
    names ``name`` (default: ``fact``), e.g. ``check_param('d', 1, name='--d')``."""
    return PARAMETERS[fact].check(fact if name is None else name, value)


def check_param_values(fact: str, values: Any, *, name: str) -> np.ndarray:
    """A non-empty 1-d sequence of values of ``fact`` (a grid of ``lam`` or ``alpha``), each
    validated by :func:`check_param` under the name ``name``; returned as a float array."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise _bad(TypeError, name, f"must be a sequence of real numbers, got {values!r}") from exc
    if arr.ndim != 1:
        raise _bad(ValueError, name, f"must be a 1-d sequence of numbers, got shape {arr.shape}")
    if arr.size == 0:
        raise _bad(ValueError, name, "must not be empty")
    rule = PARAMETERS[fact]
    for v in arr.tolist():
        rule.check(name, v)
    return arr
