"""Helpers shared by the explorer's tests: the library's own curve for a state (the
reference the explorer is compared with), and ``gaussmix explore`` served in a subprocess."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from _cli_helpers import start_in_session
from conftest import HANG

#: seconds to wait for the server (conftest.HANG: generous, a hang still fails)
DEADLINE = HANG


def library_curve(lam: float, n_points: int, loss: str = "logistic"):
    """``gm.learning_curve`` called directly for the default mixture of the explorer
    (K = 2, Delta = 1, balanced; ``labels auto`` and ``means auto`` resolve to binary
    labels and the simplex (antipodal) means for a binary loss) on its default alpha range
    (0.2 to 8, log-spaced), at the explorer's default screen precision
    (``tol=SCREEN_TOL``, ``estimate_error=False``)."""
    import gaussmix as gm
    from gaussmix.explore.state import SCREEN_TOL

    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    alphas = np.geomspace(0.2, 8.0, n_points)
    # the explorer's default screen precision, spelled out
    return gm.learning_curve(mix, loss, alphas, lam=lam, tol=SCREEN_TOL, estimate_error=False)


#: the command line's ``main`` with the debug aid's signal handlers (:func:`server_report`)
DEBUG_MAIN = Path(__file__).with_name("_explore_debug.py")
#: seconds :func:`server_report` waits for the server's report
REPORT_WAIT = 10.0
#: lines of the server's error stream before its report that :func:`server_report` gives
REPORT_TAIL = 60


@contextlib.contextmanager
def served(
    *args: str, tmp: Path, env: dict[str, str] | None = None, debug: bool = False
) -> Iterator[tuple[subprocess.Popen, str]]:
    """``gaussmix explore --port 0 --no-browser ARGS`` in its own session, with ``tmp`` as
    its temporary directory and ``env`` added to the environment: ``(process, url)`` once it
    prints its address; whatever is
    left of its session is killed at the end.  Its error stream goes to a file beside
    ``tmp`` (a pipe nobody reads while the server runs could fill and block it):
    :func:`stopped` waits for the process and gives both streams.  ``debug``: the command
    line's ``main`` run with the debug aid of ``_explore_debug.py`` (:func:`server_report`
    then says what the server is doing)."""
    tmp.mkdir(parents=True, exist_ok=True)
    entry = [str(DEBUG_MAIN)] if debug else ["-m", "gaussmix"]
    cmd = [sys.executable, *entry, "explore", "--port", "0", "--no-browser", *args]
    env = {**os.environ, **(env or {}), "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1"}
    errors = (tmp.parent / f"{tmp.name}.stderr").open("w+")
    proc = start_in_session(cmd, env, stderr=errors)
    try:
        t0 = time.monotonic()
        line = ""
        while "http://" not in line:
            assert time.monotonic() - t0 < DEADLINE, "the explorer did not start"
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                errors.seek(0)
                raise AssertionError(f"the explorer ended: {errors.read()}")
        url = re.search(r"http://\S+/", line).group(0)
        yield proc, url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=DEADLINE)
        proc.stdout.close()
        errors.close()


def server_report(proc: subprocess.Popen, tmp: Path) -> str:
    """What the explorer ``proc`` served by :func:`served` with ``debug=True`` (temporary
    directory ``tmp``) is doing: the last :data:`REPORT_TAIL` lines of its error stream,
    every thread's stack and its view of its explorers and their jobs
    (``_explore_debug.py``), waited for at most :data:`REPORT_WAIT` seconds (a server
    whose main thread does not answer gives the stacks alone)."""
    from _explore_debug import END

    path = tmp.parent / f"{tmp.name}.stderr"
    before = path.read_text(errors="replace")
    if proc.poll() is not None:
        return f"the explorer has ended (status {proc.returncode}):\n{before}"
    os.kill(proc.pid, signal.SIGUSR1)  # the stacks (faulthandler, in C)
    os.kill(proc.pid, signal.SIGUSR2)  # the explorers (Python, in the event loop's thread)
    deadline = time.monotonic() + REPORT_WAIT
    text = before
    while END not in text[len(before) :] and time.monotonic() < deadline:
        time.sleep(0.1)
        text = path.read_text(errors="replace")
    tail = "\n".join(before.splitlines()[-REPORT_TAIL:])
    report = text[len(before) :]
    return f"--- the server's error stream (tail) ---\n{tail}\n--- its report ---\n{report}"


def stopped(proc: subprocess.Popen, tmp: Path) -> tuple[str, str]:
    """The standard output and error of the explorer ``proc`` served by :func:`served`
    with temporary directory ``tmp``, once it has ended (within :data:`DEADLINE`)."""
    out, _ = proc.communicate(timeout=DEADLINE)
    return out, (tmp.parent / f"{tmp.name}.stderr").read_text()
