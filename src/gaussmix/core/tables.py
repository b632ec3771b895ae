"""The one kind of table every curve returns: :class:`CurveTable`.

A curve (``gm.learning_curve``, ``gm.lambda_sweep``, ``gm.optimal_lambda_curve``) is a
pandas table, one row per point, whose per-point results sit beside the rows in
:attr:`CurveTable.points` (``points[i]`` is the result of row ``i``, None where there is
none) -- the same type whatever is asked for, no flag changes it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import pandas as pd

__all__ = ["CurveTable", "deprecated_return_results"]


class CurveTable(pd.DataFrame):
    """A curve: a :class:`pandas.DataFrame`, one row per point, and :attr:`points`.

    Attributes
    ----------
    points : tuple
        The result of each row, in row order (e.g. a
        :class:`~gaussmix.theory.solve.results.FixedPointResult` per point of a learning curve;
        None where a point has no result).

    Notes
    -----
    Every table derived from a curve (a selection, a copy, a sort, a concatenation, ...) is
    a plain :class:`pandas.DataFrame`: the points belong to the rows they were computed
    for.  :meth:`to_frame` is the plain table.
    """

    _metadata = ["points"]
    points: tuple

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame

    @classmethod
    def from_rows(
        cls, rows: Sequence[dict[str, Any]] | pd.DataFrame, points: Sequence[Any]
    ) -> CurveTable:
        """The table of ``rows`` (one dict per point, or a DataFrame) with ``points``
        beside them, in the same order."""
        if len(rows) != len(points):
            raise ValueError(f"{len(rows)} rows but {len(points)} points")
        table = cls(rows)
        table.points = tuple(points)
        return table

    def to_frame(self) -> pd.DataFrame:
        """The table as a plain :class:`pandas.DataFrame` (a copy, without the points)."""
        return pd.DataFrame(self, copy=True)


def deprecated_return_results(
    table: CurveTable, return_results: bool | None
) -> CurveTable | tuple[CurveTable, list]:
    """``table``, or ``(table, list(table.points))`` with a ``FutureWarning`` for the
    deprecated ``return_results=True`` of the curve functions."""
    if return_results is None:
        return table
    warnings.warn(
        "return_results is deprecated and will be removed in the next release: the table "
        "a curve returns holds the per-point results in its .points",
        FutureWarning,
        stacklevel=3,
    )
    return (table, list(table.points)) if return_results else table
