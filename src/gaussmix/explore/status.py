"""The explorer's status line: what the page says a curve job is doing.

One function of a job, :func:`curve_status`, so that the served page, the notebook and the
tests read the same words.  A running job's status always begins with ``computing``, says
how many of the curve's points have arrived and, after :data:`CLOCK_FROM_S`, how long the
job has run, in whole seconds: the page rewrites it as the seconds pass
(:meth:`gaussmix.explore.app.Explorer.refresh`), so a slow curve (K >= 4 with the lasso:
seconds a point) shows a live page, never a frozen one.  Where a coarse curve was drawn
first (:attr:`gaussmix.explore.CurveJob.preview`) the status says it is being refined in
place.
"""

from __future__ import annotations

import math
import time
from typing import Any

__all__ = ["curve_status", "running_seconds", "CLOCK_FROM_S"]

#: seconds a job runs before its status shows its clock (a curve drawn within it says
#: nothing of time)
CLOCK_FROM_S = 1.0


def running_seconds(job: Any, now: float | None = None) -> int | None:
    """The whole seconds that ``job`` (a :class:`~gaussmix.explore.CurveJob`) has run, or
    None while under :data:`CLOCK_FROM_S` or once it has ended (``now``: a
    :func:`time.monotonic` reading, default the clock's)."""
    if job.done:
        return None
    elapsed = (time.monotonic() if now is None else now) - job.started
    return int(math.floor(elapsed)) if elapsed >= CLOCK_FROM_S else None


def curve_status(job: Any, now: float | None = None) -> str:
    """The status line (Markdown) of a curve job.

    Parameters
    ----------
    job : CurveJob
        The job (its ``error``, ``cancelled``, ``done``, ``cached``, ``progress``,
        ``preview``, ``refining`` and ``started``).
    now : float, optional
        A :func:`time.monotonic` reading (default: the clock's), for the running clock.

    Returns
    -------
    str
        ``**Not computed**: <error>``; ``cancelled (...)``; ``<done> of <total> points``
        (`` (cached)``); while running, ``computing: a coarse curve first (<n> points)``,
        ``computing: refining... <done> of <total> points in place of the coarse curve``
        or ``computing: <done> of <total> points``, each followed by ``, <s> s`` once the
        job has run :data:`CLOCK_FROM_S`.
    """
    done, total = job.progress
    if job.error:
        return f"**Not computed**: {job.error}"
    if job.cancelled:
        return "cancelled (a newer request replaced it)"
    if job.done:
        return f"{done} of {total} points" + (" (cached)" if job.cached else "")
    if job.refining:  # the coarse pass drawn: the curve's rows replace its points
        text = f"computing: refining... {done} of {total} points in place of the coarse curve"
    elif job.preview and not done:  # the coarse pass: the whole range, drawn first
        text = f"computing: a coarse curve first ({len(job.preview)} points)"
    else:
        text = f"computing: {done} of {total} points"
    seconds = running_seconds(job, now)
    return text if seconds is None else f"{text}, {seconds} s"
