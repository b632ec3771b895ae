"""A cooperative stop for computations that run in a thread of their own.

:func:`interruptible` installs a check (a callable that raises to stop) for the current
thread (a :class:`contextvars.ContextVar`: other threads do not see it), and
:func:`check_interrupt` calls it.  The solver's fixed-point loop
(:func:`gaussmix.theory.solve.iteration.iterate`) checks after every evaluation of the map, so a
long solve (a curve solved at all its points at once, which reports its rows only at the
end) stops within one evaluation of being asked to; the exception the check raises
propagates to the caller of the curve.  The interactive explorer
(:mod:`gaussmix.explore.engine`) runs each job under its cancel check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["check_interrupt", "interruptible"]

_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("gaussmix_interrupt", default=None)


@contextmanager
def interruptible(check: Callable[[], None]) -> Iterator[None]:
    """Within the block, :func:`check_interrupt` (in this thread) calls ``check``, which
    raises to stop the computation."""
    token = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(token)


def check_interrupt() -> None:
    """Call the check installed by :func:`interruptible` in this thread, if any."""
    check = _CHECK.get()
    if check is not None:
        check()
