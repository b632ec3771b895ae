"""The explorer engine's curve time over the whole control space (issue 32 item 1; the
instrument of item 2's targets: a 40-point redraw with K <= 3 in a median of 0.5 s and a
95th percentile of 1 s, with K = 4-6 in a median of 2 s).

``--n`` states are drawn by the seeded sampler of ``_explore_space.py`` (K = 2..6, every
loss, ridge and lasso, lambda log-uniform in [1e-4, 1e2], unequal priors, alpha ranges; a
state the explorer refuses is drawn again).  Each is computed cold, as the page computes
it: a fresh ``Session(coarse='auto')`` submits the state, never computed before, and the
time is taken until the whole curve is there (:meth:`CurveJob.wait`), wall and CPU time
(the process's, the job's thread included: steadier on a loaded machine).

The states run in a worker subprocess (warmed once on the default state: imports and the
solver's compiled kernels); a curve that takes longer than ``--timeout`` seconds has the
worker killed (and a new one started), and counts as longer than the timeout.

Printed: per group (K <= 3, K = 4-6, and each loss / penalty) the count, median, 95th
percentile and max of the CPU and wall times, whether item 2's targets are met (on CPU
time and on wall time), and the ``--slowest`` states with the URL query that opens the
explorer at them.  ``--json FILE`` writes every state's record.

Usage: ``python benchmarks/bench_explore_space.py [--n 60] [--seed 0] [--timeout 120]``
(``--list``: print the states drawn, compute nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from _explore_space import TARGETS, command, group, label, meets, sample, stats
from _timing import machine_line

from gaussmix.explore import ExplorerState


# ----------------------------------------------------------------------------- worker
def _time_state(state: ExplorerState) -> dict:
    from gaussmix.explore import Session

    session = Session(coarse="auto")
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        job = session.submit(state)
        job.wait()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        session.close()
    return {
        "wall": wall,
        "cpu": cpu,
        "error": job.error,
        "points": len(job.rows),
        "failed": len(job.failed),
        "cached": job.cached,
    }


def worker() -> None:
    """Read state queries from stdin, one a line; write one JSON record a line."""
    from gaussmix.explore import Session

    with Session() as warm:  # imports, compiled kernels
        warm.submit(ExplorerState(n_points=5)).wait()
        warm.submit(ExplorerState(n_clusters=3, loss="cross-entropy", n_points=5)).wait()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        state = ExplorerState.from_query(line.strip())
        print(json.dumps(_time_state(state)), flush=True)


class _Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if json.loads(self._next(600.0) or "{}").get("ready") is not True:
            raise SystemExit("the worker did not start")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def _next(self, timeout: float) -> str | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def run(self, state: ExplorerState, timeout: float) -> dict | None:
        """The state's record, or None after ``timeout`` seconds (the worker killed)."""
        self.proc.stdin.write(state.to_query() + "\n")
        self.proc.stdin.flush()
        line = self._next(timeout)
        if not line:
            self.kill()
            return None
        return json.loads(line)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


# ----------------------------------------------------------------------------- report
def _fmt(x: float) -> str:
    return "timeout" if x == float("inf") else f"{x:.2f}"


def report(records: list[dict], timeout: float) -> None:
    """The table of the groups; a state whose curve ended with an error (a state that
    validate accepted and the engine could not compute) is listed, not timed."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        if r.get("error"):
            continue
        state = r["state"]
        keys = (group(state), f"{state.loss} / {state.penalty}")
        for key in keys:
            groups.setdefault(key, []).append(r)
    print(
        "\n| group | n | CPU median / p95 / max (s) | wall median / p95 / max (s) "
        "| target met (CPU, wall) |"
    )
    print("|---|---|---|---|---|")
    for name in sorted(groups, key=lambda g: (g not in TARGETS, g)):
        rs = groups[name]
        cpu = [r["cpu"] for r in rs]
        wall = [r["wall"] for r in rs]
        target = f"{meets(name, cpu)}, {meets(name, wall)}"
        print(
            f"| {name} | {len(rs)} | {' / '.join(map(_fmt, stats(cpu)))} "
            f"| {' / '.join(map(_fmt, stats(wall)))} | {target} |"
        )
    timeouts = [r for r in records if r["wall"] == float("inf")]
    print(f"\ntimeouts (> {timeout:g} s, counted as inf): {len(timeouts)}")
    errors = [r for r in records if r.get("error")]
    print(f"accepted by validate but ended with an error (not timed): {len(errors)}")
    for r in errors:
        print(f"- {label(r['state'])}: {r['error']}\n    {command(r['state'])}")


def slowest(records: list[dict], count: int) -> None:
    print(f"\nthe {count} slowest (wall time; CPU time):")
    timed = [r for r in records if not r.get("error")]
    for r in sorted(timed, key=lambda r: -r["wall"])[:count]:
        failed = f", {r['failed']} points without a fixed point" if r.get("failed") else ""
        print(f"- {_fmt(r['wall'])} s; {_fmt(r['cpu'])} s: {label(r['state'])}{failed}")
        print(f"    {command(r['state'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="states drawn")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per curve")
    parser.add_argument("--slowest", type=int, default=10, help="slowest states listed")
    parser.add_argument("--json", type=Path, help="write every state's record here")
    parser.add_argument("--list", action="store_true", help="print the states, compute none")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    drawn = sample(args.n, args.seed)
    print(machine_line())
    print(
        f"{args.n} states, seed {args.seed} ({drawn.rejected} draws refused by validate "
        f"and drawn again); timeout {args.timeout:g} s"
    )
    if args.list:
        for s in drawn.states:
            print(f"{label(s)}\n    ?{s.to_query()}")
        return
    print(f"load average before: {os.getloadavg()}")
    records = []
    w = _Worker()
    try:
        for i, state in enumerate(drawn.states):
            rec = w.run(state, args.timeout)
            if rec is None:
                rec = {"wall": float("inf"), "cpu": float("inf"), "error": None, "failed": 0}
                w = _Worker()
            rec["state"] = state
            records.append(rec)
            said = f" ERROR {rec['error']}" if rec.get("error") else ""
            print(
                f"[{i + 1}/{args.n}] wall {_fmt(rec['wall'])} s, CPU {_fmt(rec['cpu'])} s: "
                f"{label(state)}{said}",
                flush=True,
            )
    finally:
        w.close()
    print(f"load average after: {os.getloadavg()}")
    report(records, args.timeout)
    slowest(records, args.slowest)
    if args.json:
        out = [{**r, "state": r["state"].to_query()} for r in records]
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
