"""Values made of an object that is not hashable by value (a tuple of arrays, an array),
remembered by the object's identity."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["IdentityMemo"]


class IdentityMemo:
    """Values made of objects, remembered by each object's identity and a key.

    Each entry holds its object, so that its ``id`` stays its own while it is remembered;
    beyond ``kept`` objects the oldest is forgotten first.  Meant for objects not modified
    while remembered that many calls share: a problem's constraints (a tuple), shared by
    the problems of one label map, and a stacked curve's, shared by its maps; the blocks
    array of a stacked iteration's mixing
    (:func:`~gaussmix.theory.solve.iteration._block_layout`).

    Parameters
    ----------
    kept : int
        How many objects are remembered.
    """

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self._entries: dict[int, tuple[Any, dict]] = {}
        self._lock = threading.Lock()  # (the explorer's threads solve curves at once)

    def get(self, obj: Any, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value of ``key`` for ``obj``: ``make()`` the first time, remembered."""
        entry = self._entries.get(id(obj))
        if entry is None or entry[0] is not obj:
            with self._lock:
                if len(self._entries) >= self.kept:
                    self._entries.pop(next(iter(self._entries)))
                entry = self._entries[id(obj)] = (obj, {})
        values = entry[1]
        if key not in values:
            values[key] = make()
        return values[key]
