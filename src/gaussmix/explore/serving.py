"""What a served page of the explorer (:mod:`gaussmix.explore.app`) needs of its Bokeh
server: a draw asked from a job's thread, run on the page's next tick, and the page's
changes that Panel left queued, sent.

A job's thread never touches the page's document (:class:`Waker`): it asks the server's
event loop (``call_soon_threadsafe``), whose thread adds the draw as the document's next
tick callback.  Added from the job's thread, the request was lost when the page's thread
was releasing a hold of the document (``pn.io.hold``: Panel takes the held events, then
empties their list, two steps another thread can come between), and every later one with
it.  Panel (1.9) can leave a page's change queued with no task to send it
(:func:`resend_stranded_writes`); the page's poll sends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from panel.io.state import set_curdoc

__all__ = ["Waker", "running_loop", "resend_stranded_writes"]


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread (a served page's: the Bokeh server's, in
    which its pages are made), or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Waker:
    """Run ``draw`` on a served page's next tick, asked from any thread (a job's, as it
    ends): once however many asks come before it runs.

    Parameters
    ----------
    doc : bokeh.document.Document
        The page's document (of its server session).
    loop : asyncio.AbstractEventLoop
        The server's event loop, whose thread the document belongs to.
    draw : callable
        ``draw()``, run in the loop's thread on the page's next tick, with ``doc`` as
        Panel's current document.
    """

    def __init__(self, doc: Any, loop: asyncio.AbstractEventLoop, draw: Callable[[], None]):
        self.doc: Any = doc
        self.loop = loop
        self.draw = draw
        self.asked = False

    def __call__(self) -> None:
        """Ask for the draw (thread-safe; nothing once :meth:`close` was called or the
        loop has closed: the page has gone)."""
        if self.doc is None or self.asked:
            return
        self.asked = True
        try:
            self.loop.call_soon_threadsafe(self._next_tick)
        except RuntimeError:  # the server has stopped
            self.doc = None

    def _next_tick(self) -> None:  # in the loop's thread
        doc = self.doc
        if doc is not None:
            doc.add_next_tick_callback(self._tick)

    def _tick(self) -> None:
        self.asked = False
        doc = self.doc
        if doc is not None:
            with set_curdoc(doc):
                self.draw()

    def close(self) -> None:
        """Ask no more draws (the page has gone)."""
        self.doc = None


def resend_stranded_writes(doc: Any) -> None:
    """Send the changes of a served page that Panel left queued with no task to send them.

    While a write to a page's websocket is in progress, Panel (1.9) queues the page's
    next changes and a task sends the queue; a change queued while the task that sent the
    one before awaits its write gets a task of its own, which ends at once if that write
    completes first (the first task then marks the queue released): the change stays
    queued until the page's next change.  The last draw of a curve has no next change:
    the page kept "computing: 7 of 8 points" while the curve had ended.  Called at every
    poll (in the server's event loop), this starts Panel's sender again for such a queue;
    a no-op where Panel keeps its queue otherwise (a version that drains it itself).
    """
    from panel.io import document as pdoc

    queued = getattr(pdoc, "_WRITE_MSGS", None)
    sending = getattr(pdoc, "_WRITE_BLOCK", None)
    send = getattr(pdoc, "_dispatch_msgs", None)
    start = getattr(pdoc, "_dispatch_write_task", None)
    if queued is None or sending is None or send is None or start is None:
        return
    if doc in queued and doc not in sending:
        sending[doc] = True  # as Panel marks a queue being sent
        start(doc, send, doc)
