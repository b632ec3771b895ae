"""Ranges of points as the command line and the explorer spell them (``[log:]start:stop:num``),
each value checked by the library's rule (:func:`parse_grid`), at most :data:`MAX_POINTS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.validation import check_array, check_param_values

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["MAX_POINTS", "parse_grid"]

#: largest number of points of a curve
MAX_POINTS = 10_000


def parse_grid(name: str, spec: str, *, fact: str | None) -> np.ndarray:
    """Parse ``[log:]start:stop:num`` (:func:`gaussmix.experiments.parse_range`), at most
    :data:`MAX_POINTS` points; every value follows the library's rule of ``fact``
    (``'alpha'``, ``'lam'``: :data:`gaussmix.core.validation.PARAMETERS`), or is > 0 for
    ``fact=None`` (a figure's grid of another quantity).

    Every refusal is an :class:`~gaussmix.core.exceptions.ArgumentError` naming ``name``:
    a command's keyword (``'alphas'``, ``'lams'``: the command line says its flag, the
    explorer shows it under its field) or a flag."""
    from gaussmix.experiments.curves import parse_range

    num = spec.rsplit(":", 1)[-1].strip()
    if num.isdigit() and int(num) > MAX_POINTS:
        raise ArgumentError(name, f": at most {MAX_POINTS} points, got {num}")
    grid = parse_range(spec, name=name, fact=fact)
    if fact is None:
        return check_array(name, grid, shape=(None,), positive=True)
    return check_param_values(fact, grid, name=name)
