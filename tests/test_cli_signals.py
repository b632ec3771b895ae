"""A sweep on joblib workers interrupted as a terminal's Ctrl-C does (SIGINT to the whole
process group) and killed (SIGKILL of its process alone): exit 130 with one line saying
where the finished points are and no worker traceback or ``leaked semaphore`` warning;
after a SIGKILL no worker survives its parent.

Each test runs ``python -m gaussmix sweep`` in its own session, waits (bounded) for a few
points in the checkpoint, signals it, and kills whatever is left of its session at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
from _cli_helpers import start_in_session
from conftest import HANG

from gaussmix.sweep import TEST_DELAY_ENV, checkpoint_path

pytestmark = pytest.mark.slow

#: a simulation grid: its workers draw samples and solve ERMs (tqdm and joblib inside)
GRID = (
    '[fixed]\nloss = "square"\nlabels = "binary"\nlam = 0.1\n'
    "[grid]\nalpha = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]\ndelta = [0.25, 0.5, 1.0]\n"
    "[simulate]\nd = 100\nseeds = 2\n"
)
#: bound on every wait (seconds)
DEADLINE = HANG


@contextlib.contextmanager
def _sweep(tmp_path: Path, delay: str = "0.3"):
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    out = tmp_path / "s.csv"
    cmd = [sys.executable, "-m", "gaussmix", "sweep", "--grid", str(grid), "--out", str(out),
           "--n-jobs", "2", "--quiet"]  # fmt: skip
    proc = start_in_session(cmd, {**os.environ, TEST_DELAY_ENV: delay})
    try:
        ck = checkpoint_path(out)
        t0 = time.monotonic()
        while not (ck.exists() and ck.read_bytes().count(b"\n") >= 2):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() - t0 < DEADLINE, "the sweep did not start"
            time.sleep(0.05)
        yield proc, out
    finally:
        with contextlib.suppress(ProcessLookupError):  # anything left of its session
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=DEADLINE)
        for stream in (proc.stdout, proc.stderr):
            stream.close()


def test_ctrl_c_stops_a_sweep_cleanly(tmp_path: Path) -> None:
    with _sweep(tmp_path) as (proc, out):
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the workers get it too
        stdout, stderr = proc.communicate(timeout=DEADLINE)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "leaked" not in stderr, stderr
    assert stderr.splitlines() == [
        f"gaussmix: error: interrupted; the finished points are in "
        f"'{checkpoint_path(out)}': run the same command to resume"
    ]
    assert not out.exists()


def test_workers_do_not_outlive_a_killed_sweep(tmp_path: Path) -> None:
    with _sweep(tmp_path) as (proc, _):
        workers = [
            p
            for p in psutil.Process(proc.pid).children(recursive=True)
            if "loky" in " ".join(p.cmdline()) and "resource_tracker" not in " ".join(p.cmdline())
        ]
        assert len(workers) == 2, workers
        os.kill(proc.pid, signal.SIGKILL)  # the sweep's process alone: no handler runs
        proc.wait(timeout=DEADLINE)
        gone, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, f"workers alive 10 s after their parent was killed: {alive}"
