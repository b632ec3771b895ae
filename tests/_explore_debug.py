"""``gaussmix explore`` with a debug aid, for the browser tests (:func:`_explore.served`
with ``debug=True``): run as ``python tests/_explore_debug.py explore ARGS``, it is the
command line's ``main`` with two signal handlers, so that a test that waited in vain can
ask the server what it was doing (:func:`_explore.server_report`).

- ``SIGUSR1``: every thread's stack (:func:`faulthandler.register`: written by the signal
  handler in C, even while a thread holds the interpreter);
- ``SIGUSR2``: the server's view (written by a Python handler in the main thread, which
  runs the event loop): every live explorer's state, its curve job (points done, done,
  cancelled, error, whether its thread is alive), what the page was last given, its
  polling callback, its document's hold and session lock; the session's other jobs; the
  event loop's pending tasks with their stacks.  It ends with :data:`END`.

Nothing of it is in the library: the served explorer of a user has no such handler.
"""

from __future__ import annotations

import asyncio
import faulthandler
import signal
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np

#: the last line of a ``SIGUSR2`` report
END = "=== end of the explorer's debug report ==="


def _job(job: Any) -> str:
    if job is None:
        return "None"
    thread = getattr(job, "_thread", None)
    return (
        f"{type(job).__name__} progress={job.progress} done={job.done} "
        f"cancelled={job.cancelled} error={job.error!r} rows={len(getattr(job, 'rows', []))} "
        f"preview={len(getattr(job, 'preview', []))} "
        f"finished={job._finished.is_set()} cancel_set={job._cancel.is_set()} "
        f"thread={getattr(thread, 'name', None)}:"
        f"{'alive' if thread is not None and thread.is_alive() else 'ended'}"
        f"{'' if thread is None else f' ident={thread.ident}'}"
    )


def _xs(source: Any) -> list[float]:
    return np.asarray(source.data.get("x", []), dtype=float).tolist()


def _document(doc: Any) -> list[str]:
    if doc is None:
        return ["  document: None"]
    lines = [
        f"  document: hold={doc.callbacks.hold_value!r} "
        f"held_events={len(doc.callbacks._held_events)} "
        f"session_callbacks={len(doc.callbacks.session_callbacks)}"
    ]
    context = doc.session_context
    session = getattr(context, "_session", None)
    if session is not None:
        lock = session._lock
        lines.append(
            f"  server session: destroyed={session.destroyed} "
            f"lock_held={getattr(getattr(lock, '_block', None), '_value', '?') == 0} "
            f"pending_writes={session._pending_writes!r} "
            f"connections={len(session._subscribed_connections)} "
            f"expiration_blocked={getattr(session, '_expiration_blocked_count', '?')}"
        )
        for conn in session._subscribed_connections:
            lock = getattr(conn._socket, "write_lock", None)
            held = getattr(getattr(lock, "_block", None), "_value", "?") == 0
            lines.append(f"  connection {conn!r}: socket write lock held={held}")
    from panel.io import document as pdoc  # Panel's own writes of a page's changes

    lines.append(
        f"  panel writes: blocked={pdoc._WRITE_BLOCK.get(doc)} "
        f"queued={ {id(c): len(m) for c, m in pdoc._WRITE_MSGS.get(doc, {}).items()} } "
        f"futures={len(pdoc._WRITE_FUTURES.get(doc, []))} "
        f"tasks={len(getattr(pdoc, '_write_tasks', {}).get(doc, []))}"
    )
    return lines


def report() -> str:
    """The server's view (see the module's docstring)."""
    out = [f"=== the explorer's debug report at {time.monotonic():.3f} ==="]
    try:
        from gaussmix.explore import app

        live = list(app._LIVE)
        out.append(f"live explorers: {len(live)}")
        for i, ex in enumerate(live):
            periodic = ex._periodic
            out += [
                f"explorer {i}: state ?{ex.state.to_query()}",
                f"  loaded={ex._loaded} woken={ex._woken} drawn={ex._drawn} "
                f"clock={ex._clock} submitted={ex._submitted:.3f} "
                f"status={ex.status.object!r}",
                f"  periodic: running={getattr(periodic, 'running', None)} "
                f"counter={getattr(periodic, 'counter', None)} "
                f"cb={getattr(periodic, '_cb', None)!r}",
                f"  status's models (the server's copy of what the page shows): "
                f"{[m.text for m, _ in ex.status._models.values()]!r}",
                f"  curve's source (the server's copy): x={_xs(ex.source)}",
                f"  job: {_job(ex.job)}",
                f"  overlay job: {_job(ex.overlay_job)}",
            ]
            out += [f"  session job: {_job(j)}" for j in ex.session._jobs]
            out.append(f"  session prefetching: {_job(ex.session.prefetching)}")
            out += _document(ex._doc)
    except Exception:  # noqa: BLE001 - a debug aid says what it could not read
        out.append("explorers not read: " + traceback.format_exc())
    try:
        loop = asyncio.get_running_loop()
        tasks = asyncio.all_tasks(loop)
        out.append(f"event loop tasks: {len(tasks)}")
        for task in tasks:
            frames = task.get_stack()
            where = "".join(traceback.format_list(traceback.extract_stack(frames[-1])[-3:]))
            out.append(f"  {task!r}\n{where if frames else '    (no frame)'}")
    except Exception:  # noqa: BLE001
        out.append("event loop not read: " + traceback.format_exc())
    out.append(f"threads: {[t.name for t in threading.enumerate()]}")
    out.append(END)
    return "\n".join(out)


def _on_usr2(_signum: int, _frame: Any) -> None:
    sys.stderr.write(report() + "\n")
    sys.stderr.flush()


def main() -> int:
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    signal.signal(signal.SIGUSR2, _on_usr2)
    from gaussmix.cli.commands import main as gaussmix

    return gaussmix(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
