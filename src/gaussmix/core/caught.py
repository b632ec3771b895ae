"""Warnings caught per thread: :func:`caught` and :func:`routed`, the thread-safe stand-ins
for :func:`warnings.catch_warnings` that every part of the library uses.

:func:`warnings.catch_warnings` swaps process-wide state (the filters and the function that
shows a warning) on entry and puts back what it saw on exit.  Two threads inside it at once
take each other's warnings, and the one that leaves second puts back the first one's
recorder, so that every later warning of the process goes into a list nobody reads.  The
library's solves run in threads (the explorer's jobs, a Dask worker's tasks), so its own
captures must not touch that state per call.

While at least one capture is open in any thread, one router is installed: an ``always``
filter (a repeated warning reaches every capture that should see it) and a ``showwarning``
that hands a warning raised in a capturing thread to that thread's innermost capture, and
any other thread's warning to the ``showwarning`` the process had before.  Captures nest
per thread as :func:`warnings.catch_warnings` blocks do: an inner capture that drops a
category drops it, one that does not record passes the rest outwards.

Third-party code that calls :func:`warnings.catch_warnings` itself can still take a
concurrent thread's warnings for the length of its block; what it puts back on exit is the
router, which stays correct.
"""

from __future__ import annotations

import contextlib
import re
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

__all__ = ["caught", "reissue", "routed"]

#: what a capture does with a warning it keeps
Receiver = Callable[[warnings.WarningMessage], None]


@dataclass(frozen=True)
class _Capture:
    """One open capture of one thread: the categories it drops (and the messages, by a
    regular expression matched at their start, as :func:`warnings.filterwarnings` does) and
    where the rest go (None: outwards, to the enclosing capture or the process's
    ``showwarning``)."""

    drop: tuple[type[Warning], ...]
    receive: Receiver | None
    drop_message: re.Pattern | None = None

    def drops(self, message: Warning | str, category: type[Warning]) -> bool:
        if issubclass(category, self.drop):
            return True
        return self.drop_message is not None and bool(self.drop_message.match(str(message)))


class _Router:
    """The process's one router (see the module's docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = 0
        self._captures: dict[int, list[_Capture]] = {}  # thread -> its captures, innermost last
        self._saved: tuple[Any, list] | None = None

    def enter(self, capture: _Capture) -> None:
        with self._lock:
            self._captures.setdefault(threading.get_ident(), []).append(capture)
            self._open += 1
            if self._open == 1:
                self._saved = (warnings.showwarning, list(warnings.filters))
                warnings.simplefilter("always")
                warnings.showwarning = self._show

    def exit(self) -> None:
        with self._lock:
            ident = threading.get_ident()
            stack = self._captures.get(ident, [])
            if stack:
                stack.pop()
            if not stack:
                self._captures.pop(ident, None)
            self._open -= 1
            if self._open == 0 and self._saved is not None:
                show, filters = self._saved
                warnings.showwarning = show
                warnings.filters[:] = filters
                warnings._filters_mutated()  # type: ignore[attr-defined]
                self._saved = None

    def _show(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        """The process's ``showwarning`` while a capture is open (same signature)."""
        with self._lock:
            stack = list(self._captures.get(threading.get_ident(), ()))
            saved = self._saved
        for capture in reversed(stack):
            if capture.drops(message, category):
                return
            if capture.receive is not None:
                capture.receive(
                    warnings.WarningMessage(message, category, filename, lineno, file, line)
                )
                return
        show = saved[0] if saved is not None else _SHOWWARNING
        show(message, category, filename, lineno, file, line)


#: the ``showwarning`` of the process when this module was imported (the fallback of a
#: warning that reaches the router after the last capture closed)
_SHOWWARNING = warnings.showwarning
_ROUTER = _Router()


@contextlib.contextmanager
def routed(
    receive: Receiver | None,
    drop: tuple[type[Warning], ...] = (),
    drop_message: str | None = None,
) -> Iterator[None]:
    """Within the block, this thread's warnings of a category in ``drop`` (or whose
    message starts with a match of ``drop_message``) are dropped and the others given to
    ``receive`` (None: passed on as if the block were not there); other threads' warnings
    are not touched.

    Parameters
    ----------
    receive : callable or None
        Called with each kept warning (a :class:`warnings.WarningMessage`), in the thread
        that raised it.
    drop : tuple of Warning subclasses
        The categories dropped (with their subclasses).
    drop_message : str, optional
        A regular expression: the warnings whose message it matches at the start are
        dropped, whatever their category.
    """
    pattern = None if drop_message is None else re.compile(drop_message)
    _ROUTER.enter(_Capture(tuple(drop), receive, pattern))
    try:
        yield
    finally:
        _ROUTER.exit()


@contextlib.contextmanager
def caught(
    drop: tuple[type[Warning], ...] = (),
    *,
    record: bool = True,
    drop_message: str | None = None,
) -> Iterator[list[warnings.WarningMessage]]:
    """This thread's warnings within the block, in the yielded list (``record=False``:
    passed on, and the list stays empty), those dropped that :func:`routed` drops; the
    thread-safe form of ``warnings.catch_warnings(record=True)`` with an ``always``
    filter (or, ``record=False``, of ``catch_warnings()`` with ``ignore`` filters)."""
    log: list[warnings.WarningMessage] = []
    with routed(log.append if record else None, drop, drop_message):
        yield log


def reissue(log: list[warnings.WarningMessage], stacklevel: int = 2) -> None:
    """The warnings of ``log`` (from :func:`caught`) raised again, from the caller of the
    caller's line at ``stacklevel = 2`` (as :func:`warnings.warn` counts)."""
    for w in log:
        warnings.warn(w.message, w.category, stacklevel=stacklevel + 1)
