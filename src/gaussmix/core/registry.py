"""Registries: each loss, penalty, label map, mixture model and observable is declared once.

A :class:`Registry` maps a name (the string a user types: ``loss='logistic'``,
``--penalty l1``, a column of a result table) to the one object that declares everything about
it -- for a loss its label constraint, proximal map, channel, scikit-learn mapping and
simulation solver; for a penalty its prior and its constraints; and so on.  Names are looked
up *at the edge* (API arguments, command-line options, grid files) and objects are passed
everywhere inside, so that nothing else in the package dispatches on a name string (the
pattern of xarray's backend entry points and scikit-learn's ``_parameter_constraints``).

The registries themselves live next to what they declare
(``gaussmix.theory.channel.losses.LOSSES``,
``gaussmix.theory.model.penalties.PENALTIES``, ``gaussmix.theory.model.labels.LABEL_MAPS`` and
``MIXTURE_MODELS``, ``gaussmix.theory.model.outputs.OBSERVABLES``); ``gaussmix`` re-exports them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from gaussmix.core.exceptions import ArgumentError

__all__ = ["Registry", "by_class"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Named declarations of one kind.

    Parameters
    ----------
    kind : str
        What is registered, for messages (``'loss'``, ``'penalty'``, ...).
    argument : str, optional
        The name of the user-facing argument that takes these names (default ``kind``); it
        starts the error message of an unknown name, e.g. ``"loss must be one of ..."``.

    Examples
    --------
    >>> LOSSES = Registry("loss")
    >>> @LOSSES.register
    ... class Square:
    ...     name = "square"
    >>> LOSSES.get("square") is Square
    True
    """

    def __init__(self, kind: str, argument: str | None = None) -> None:
        self.kind = kind
        self.argument = argument or kind
        self._items: dict[str, T] = {}

    def register(self, item: T, *, name: str | None = None) -> T:
        """Declare ``item`` under ``name`` (default ``item.name``); returns ``item``, so that
        it serves as a class decorator.

        Raises
        ------
        ValueError
            If the name is empty or already taken: a declaration is made once.
        """
        key = name if name is not None else getattr(item, "name", None)
        if not isinstance(key, str) or not key:
            raise ValueError(f"a registered {self.kind} needs a non-empty string name")
        if key in self._items:
            raise ValueError(f"{self.kind} {key!r} is already registered")
        self._items[key] = item
        return item

    def unregister(self, name: str) -> T:
        """Remove and return the declaration ``name`` (for plug-ins and tests that register a
        temporary one)."""
        if name not in self._items:
            raise KeyError(f"no {self.kind} {name!r} is registered")
        return self._items.pop(name)

    def get(self, name: Any) -> T:
        """The declaration registered as ``name``.

        Raises
        ------
        ValueError
            Naming the argument and listing the registered names.
        """
        if isinstance(name, str) and name in self._items:
            return self._items[name]
        allowed = ", ".join(repr(n) for n in self._items)
        raise ArgumentError(self.argument, f"must be one of {allowed}; got {name!r}")

    def names(self) -> tuple[str, ...]:
        """The registered names, in order of registration."""
        return tuple(self._items)

    def items(self) -> Iterator[tuple[str, T]]:
        return iter(self._items.items())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._items)})"


def by_class(table: Mapping[type, T], obj: object) -> T | None:
    """The entry of ``table`` (keyed by class) for ``obj``'s nearest class: the first of
    ``type(obj).__mro__`` that ``table`` holds (a subclass inherits its base's entry unless
    it has its own), or None.

    Examples
    --------
    >>> class Base: ...
    >>> class Child(Base): ...
    >>> by_class({Base: "base"}, Child()), by_class({Base: "base"}, 1.0)
    ('base', None)
    """
    for cls in type(obj).__mro__:
        entry = table.get(cls)
        if entry is not None:
            return entry
    return None
