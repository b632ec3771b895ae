"""The one result protocol of gaussmix.

Every result type of the library (the fixed point, the max-margin estimator, the
Bayes-optimal error, the separability threshold, the optimal penalty, a simulation, a
sweep, a figure atlas) reads the same way, in the spirit of scipy's ``OptimizeResult``:

* ``success`` -- whether the computation reached what was asked of it (a fixed point within
  its tolerance, every seed's solver converged, every point of a sweep valid, ...);
* ``message`` -- why, in words;
* ``n_iter`` -- iterations, where the computation iterates (None where it does not);
* ``to_dict()`` -- plain JSON-safe types (the ``--json`` output of the command line where
  there is one; its key for the flag stays ``converged`` where that contract documents
  it);
* ``to_frame()`` -- a :class:`pandas.DataFrame`: one row of the scalar entries of
  ``to_dict()`` for a single result, the table itself for a table-like result.

``converged`` is the deprecated name of ``success`` (one release with a ``FutureWarning``).
Curves are :class:`~gaussmix.core.tables.CurveTable` tables (one row per point, the
per-point results in ``.points``).

This module imports nothing heavy: pandas is imported by ``to_frame`` only.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Result", "scalar_entries"]


def scalar_entries(d: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``d`` whose values are scalars (numbers, strings, booleans, None)."""
    return {k: v for k, v in d.items() if v is None or isinstance(v, bool | int | float | str)}


class Result:
    """Mixin of every result type (module docstring): ``success``, ``message``, ``n_iter``,
    ``to_dict()``, ``to_frame()`` and the deprecated ``converged``.

    A subclass provides ``success`` and ``message`` (fields or properties), ``n_iter`` where
    it applies, and ``to_dict()``; ``to_frame()`` defaults to one row of the scalar entries
    of ``to_dict()``.
    """

    __slots__ = ()

    # ``success``, ``message`` and ``n_iter`` are the subclass's fields or properties (a
    # default here would become the default of a dataclass field); a result that does not
    # iterate declares ``n_iter: ClassVar[None] = None``
    success: bool
    message: str
    n_iter: int | None

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def to_frame(self) -> pd.DataFrame:
        """One row: the scalar entries of :meth:`to_dict` (nested values are left out)."""
        import pandas as pd

        return pd.DataFrame([scalar_entries(self.to_dict())])

    @property
    def converged(self) -> bool:
        """Deprecated name of :attr:`success`."""
        warnings.warn(
            f"{type(self).__name__}.converged is deprecated and will be removed in the next "
            "release; use .success",
            FutureWarning,
            stacklevel=2,
        )
        return self.success
