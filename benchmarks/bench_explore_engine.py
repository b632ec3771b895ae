"""How fast the explorer redraws after a control changes (issue 22 target: a binary or
K = 3 curve of 40 points within 0.5 s on 2 cores).

For each case, after a warm-up curve (imports, numba's compiled kernels), a control is
changed (lambda moved to a value not computed before, so that nothing comes from the cache
of finished curves) and the time is taken from :func:`gaussmix.explore.start_curve` to the
first row, to the coarse pass (``coarse`` points of the grid, drawn first when the explorer
asks for one) and to the whole curve; then the same state again (served from the cache).
Medians over ``--repeats`` changes, wall time; the load average is printed before and
after.

Usage: ``python benchmarks/bench_explore_engine.py [--repeats 5] [--coarse auto|0|N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _timing import machine_line

from gaussmix.explore import ExplorerState, Session, clear_cache

CASES = {
    "binary logistic, lam = 0.1": ExplorerState(),
    "K = 3 cross-entropy, lam = 1": ExplorerState(
        n_clusters=3, delta=(0.5,), loss="cross-entropy", lam=1.0
    ),
    "K = 3 cross-entropy, lam = 0.1": ExplorerState(
        n_clusters=3, delta=(0.5,), loss="cross-entropy", lam=0.1
    ),
    "K = 3 cross-entropy, lam = 1e-3": ExplorerState(
        n_clusters=3, delta=(0.5,), loss="cross-entropy", lam=1e-3
    ),
    "K = 3 cross-entropy, alpha = 2, 40 lambdas in [1e-4, 10]": ExplorerState(
        n_clusters=3, delta=(0.5,), loss="cross-entropy", axis="lambda"
    ),
}


def time_change(session: Session, state: ExplorerState) -> tuple[float, ...]:
    """(first row, coarse pass (NaN without one), whole curve, its CPU time, from the
    cache) in seconds, the curve submitted to ``session``."""
    first: list[float] = []
    preview: list[float] = []
    c0 = time.process_time()
    t0 = time.perf_counter()
    job = session.submit(
        state,
        on_point=lambda row: first or first.append(time.perf_counter()),
        on_preview=lambda rows: preview.append(time.perf_counter()),
    )
    job.wait()
    total = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if job.error:
        raise RuntimeError(job.error)
    t1 = time.perf_counter()
    session.submit(state).wait()
    cached = time.perf_counter() - t1
    coarse = preview[0] - t0 if preview else float("nan")
    return first[0] - t0, coarse, total, cpu, cached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--coarse", default="auto", help="the session's coarse pass: 'auto' or a number (0: none)"
    )
    args = parser.parse_args()
    print(machine_line())
    print(f"load average before: {os.getloadavg()}")
    coarse = args.coarse if args.coarse == "auto" else int(args.coarse)
    print(f"coarse pass: {coarse}")
    print(
        "| case | first row (s) | coarse pass (s) | 40 points (s) | 40 points, CPU (s) "
        "| from the cache (s) |"
    )
    print("|---|---|---|---|---|---|")
    with Session(coarse=coarse) as session:
        for name, state in CASES.items():
            clear_cache()
            session.submit(state).wait()  # warm-up
            times = [
                time_change(session, state.replace(**_moved(state, i)))
                for i in range(args.repeats)
            ]
            first, drawn, total, cpu, cached = (list(t) for t in zip(*times))
            print(
                f"| {name} | {statistics.median(first):.3f} | {statistics.median(drawn):.3f} | "
                f"{statistics.median(total):.3f} ({min(total):.3f}-{max(total):.3f}) | "
                f"{statistics.median(cpu):.3f} | {statistics.median(cached):.4f} |"
            )
    print(f"load average after: {os.getloadavg()}")


def _moved(state: ExplorerState, i: int) -> dict:
    """A control moved by a little (a new curve each time)."""
    if state.axis == "alpha":
        return {"lam": state.lam * (1.0 + 0.01 * (i + 1))}
    return {"alpha": state.alpha * (1.0 + 0.01 * (i + 1))}


if __name__ == "__main__":
    main()
