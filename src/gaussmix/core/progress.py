"""The one progress-bar policy of the package (tqdm on stderr).

A progress bar is drawn only when it was asked for *and* its stream is an interactive
terminal.  On a pipe, a file or a CI log, tqdm would write a line per refresh (carriage
returns) and, for nested bars, cursor-movement escape codes (``\\x1b[A``): there the bar
is off, and nothing is written.
"""

from __future__ import annotations

import sys
from typing import IO, Any

__all__ = ["progress_bar", "progress_enabled"]


def progress_enabled(requested: bool, file: IO[str] | None = None) -> bool:
    """Whether a bar asked for (``requested``) is drawn on ``file`` (default stderr).

    Parameters
    ----------
    requested : bool
        The caller's wish (e.g. ``not quiet``).
    file : text stream, optional
        The stream of the bar; default :data:`sys.stderr`.

    Returns
    -------
    bool
        True only if ``requested`` and ``file`` is a terminal (``isatty()``).
    """
    if not requested:
        return False
    stream = sys.stderr if file is None else file
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):  # a closed stream
        return False


def progress_bar(
    iterable: Any = None,
    *,
    enabled: bool = True,
    file: IO[str] | None = None,
    **kwargs: Any,
) -> Any:
    """A :class:`tqdm.tqdm` bar on ``file`` (default stderr) under the package's policy.

    Parameters
    ----------
    iterable : iterable, optional
        Passed to tqdm.
    enabled : bool
        The caller's wish; the bar is drawn only if it is True and ``file`` is a terminal
        (:func:`progress_enabled`).  Otherwise the returned bar is disabled: it counts,
        iterates and closes like a bar, and writes nothing.
    file : text stream, optional
        Default :data:`sys.stderr`.
    **kwargs
        Other arguments of :class:`tqdm.tqdm` (``total``, ``desc``, ``unit``, ...).

    Returns
    -------
    tqdm.tqdm
    """
    from tqdm.auto import tqdm

    _thread_lock()
    stream = sys.stderr if file is None else file
    kwargs.pop("disable", None)
    return tqdm(iterable, file=stream, disable=not progress_enabled(enabled, stream), **kwargs)


def _thread_lock() -> None:
    """Give tqdm a threading lock before its first bar in this process: its default also
    makes a multiprocessing lock (a POSIX semaphore), which a worker process killed at
    Ctrl-C never releases (``resource_tracker: There appear to be N leaked semaphore
    objects``); the package draws bars in one process only."""
    import threading

    from tqdm import std

    if "_lock" not in vars(std.tqdm):
        std.tqdm.set_lock(threading.RLock())
