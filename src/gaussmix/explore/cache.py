"""The explorer's cache of finished curves (:mod:`gaussmix.explore.engine`): a small LRU
keyed by the problem's parameters (a mixture file by its content), the axis and the grid,
so that moving a control back redraws at once."""

from __future__ import annotations

import collections
import json
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from .state import ExplorerState

if TYPE_CHECKING:  # pragma: no cover
    from gaussmix.core.tables import CurveTable

__all__ = ["CACHE", "CACHE_SIZE", "LRU", "cache_key", "clear_cache", "copy_table"]

#: finished curves kept (LRU)
CACHE_SIZE = 64


class LRU:
    """A small thread-safe least-recently-used cache."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: collections.OrderedDict[str, Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


#: the finished curves of every session of the process
CACHE = LRU(CACHE_SIZE)


def clear_cache() -> None:
    """Forget the finished curves (e.g. to time a computation)."""
    CACHE.clear()


def copy_table(table: CurveTable) -> CurveTable:
    """A copy of a curve's table with its points (a cached table is never handed out: a
    caller may change its own)."""
    from gaussmix.core.tables import CurveTable

    return CurveTable.from_rows(table.to_frame(), table.points)


def cache_key(state: ExplorerState, params: dict, values: np.ndarray) -> str:
    """The problem's parameters (a mixture file by its content), the axis and the grid
    (exactly: the values' bits)."""
    return json.dumps(
        {"params": params, "axis": state.axis, "grid": values.tobytes().hex()},
        sort_keys=True,
        default=str,
    )
