"""``gaussmix sweep --scheduler`` on a real dask.distributed cluster on the loopback
interface (a ``dask scheduler`` and a ``dask worker`` with two worker processes, each a
subprocess) that fails in the middle of the sweep:

* the scheduler killed: exit 4 and one line naming the lost scheduler, how many points
  are kept in the checkpoint and how to resume; resuming without the scheduler gives the
  table of an uninterrupted run, byte for byte;
* one worker process killed: the sweep finishes on the others.

Every wait is bounded; every process started here is killed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import HANG

from gaussmix.cli.exits import EXIT_SCHEDULER_LOST
from gaussmix.cli.grid import run_grid
from gaussmix.sweep import TEST_DELAY_ENV, checkpoint_path

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow

GRID = (
    '[fixed]\nloss = "square"\nlabels = "binary"\nlam = 0.1\n'
    "[grid]\nalpha = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0]\n"
    "delta = [0.25, 0.5, 1.0]\n"
)
N_POINTS = 30
#: bound on every wait (seconds)
DEADLINE = HANG


def _scheduler_address(path: Path, scheduler: subprocess.Popen) -> str:
    """The address the scheduler wrote to its ``--scheduler-file`` once it listens (it chose
    its own free port: a port picked here and bound there later could be taken between the
    two by another test's server, e.g. on another pytest-xdist worker)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < DEADLINE:
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError, KeyError):
            return json.loads(path.read_text())["address"]
        if scheduler.poll() is not None:
            pytest.fail("the dask scheduler exited before it listened")
        time.sleep(0.05)
    pytest.fail(f"the dask scheduler did not write {path} within {DEADLINE} s")


def _start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=DEADLINE)


@contextlib.contextmanager
def _cluster(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen, subprocess.Popen]]:
    """A scheduler and a worker of two processes (1 thread each), the points slowed down."""
    import distributed

    env = {**os.environ, TEST_DELAY_ENV: "0.3"}
    info = tmp_path / "scheduler.json"
    scheduler = _start(
        ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
         "--scheduler-file", str(info), "--no-dashboard"], env,
    )  # fmt: skip
    worker = None
    try:
        address = _scheduler_address(info, scheduler)
        worker = _start(
            ["distributed.cli.dask_worker", address, "--nworkers", "2", "--nthreads", "1",
             "--no-dashboard"], env,
        )  # fmt: skip
        with distributed.Client(address, timeout=DEADLINE) as client:
            client.wait_for_workers(2, timeout=DEADLINE)
        yield address, scheduler, worker
    finally:
        if worker is not None:
            _stop(worker)
        _stop(scheduler)


def _sweep_until_started(tmp_path: Path, address: str) -> tuple[subprocess.Popen, Path]:
    """``gaussmix sweep --scheduler address``, returned once two points are checkpointed."""
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID)
    out = tmp_path / "s.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gaussmix", "sweep", "--grid", str(grid), "--out", str(out),
         "--scheduler", address, "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    ck = checkpoint_path(out)
    t0 = time.monotonic()
    while not (ck.exists() and ck.read_bytes().count(b"\n") >= 2):
        if proc.poll() is not None or time.monotonic() - t0 > DEADLINE:
            proc.kill()
            pytest.fail(f"the sweep did not start: {proc.communicate()[1]}")
        time.sleep(0.05)
    return proc, out


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the sweep did not stop within {DEADLINE} s: {proc.communicate()}")


def test_lost_scheduler_keeps_the_finished_points(tmp_path: Path) -> None:
    with _cluster(tmp_path) as (address, scheduler, _):
        proc, out = _sweep_until_started(tmp_path, address)
        _stop(scheduler)
        stdout, stderr = _finish(proc)
    assert proc.returncode == EXIT_SCHEDULER_LOST, stderr
    assert stdout == "" and "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    ck = checkpoint_path(out)
    m = re.fullmatch(
        rf"gaussmix: error: --scheduler: lost the dask scheduler {re.escape(address)} "
        rf"\(\w+\); (\d+) of {N_POINTS} points finished, in the checkpoint "
        rf"'{re.escape(str(ck))}': run the same command to resume \(with a running "
        r"scheduler, or without --scheduler to run here\)",
        lines[0],
    )
    assert m, lines[0]
    kept = int(m.group(1))
    assert kept == ck.read_bytes().count(b"\n") and 2 <= kept < N_POINTS
    assert not out.exists()

    # resumed here (the scheduler is gone): the table of an uninterrupted run
    grid = tmp_path / "grid.toml"
    env = {k: v for k, v in os.environ.items() if k != TEST_DELAY_ENV}
    resumed = subprocess.run(
        [sys.executable, "-m", "gaussmix", "sweep", "--grid", str(grid), "--out", str(out),
         "--n-jobs", "1", "--quiet"],
        env=env, capture_output=True, text=True, timeout=DEADLINE,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"{N_POINTS - kept} computed, {kept} from the checkpoint" in resumed.stdout
    run_grid(grid, out=tmp_path / "reference.csv", backend="serial", progress=False)
    assert out.read_text() == (tmp_path / "reference.csv").read_text()


def test_a_lost_worker_does_not_stop_the_sweep(tmp_path: Path) -> None:
    with _cluster(tmp_path) as (address, _, worker):
        proc, out = _sweep_until_started(tmp_path, address)
        processes = [
            p
            for p in psutil.Process(worker.pid).children(recursive=True)
            if "spawn_main" in " ".join(p.cmdline())
        ]
        assert len(processes) == 2, processes
        processes[0].kill()
        stdout, stderr = _finish(proc)
    assert proc.returncode == 0, stderr
    assert f"wrote {out} ({N_POINTS} points" in stdout


def test_the_sweep_silences_the_loggers_of_distributed_and_its_event_loop() -> None:
    """A client's future that fails in a callback of tornado's loop is logged, with its
    traceback, by ``tornado.application`` (seen once in CI after a lost scheduler, beside
    the command's one line): the sweep silences it with distributed's own loggers."""
    import logging

    from gaussmix.cli.sweep import _quiet_distributed

    names = ["tornado.application", "tornado", "distributed", "distributed.client"]
    before = {n: logging.getLogger(n).level for n in names}
    try:
        _quiet_distributed()
        assert all(logging.getLogger(n).getEffectiveLevel() == logging.CRITICAL for n in names)
    finally:
        for n, level in before.items():
            logging.getLogger(n).setLevel(level)
