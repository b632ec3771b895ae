"""How fast the explorer redraws after a control changes (issue 22 target: a binary or
K = 3 curve of 40 points within 0.5 s on 2 cores).

For each case, after a warm-up curve (imports, numba's compiled kernels), a control is
changed (lambda moved to a value not computed before, so that nothing comes from the cache
of finished curves) and the time is taken from :func:`gaussmix.explore.start_curve` to the
first row, to the coarse pass (``coarse`` points of the grid, drawn first when the explorer
asks for one) and to the whole curve; then the same state again (served from the cache).
Medians over ``--repeats`` changes, wall time; the load average is printed before and
after.

Usage: ``python benchmarks/bench_explore.py [--repeats 5]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _timing import machine_line

from gaussmix.explore import ExplorerState, clear_cache, start_curve

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


def time_change(state: ExplorerState) -> tuple[float, float, float]:
    """(first row, whole curve, from the cache) in seconds."""
    first: list[float] = []
    t0 = time.perf_counter()
    job = start_curve(state, on_point=lambda row: first or first.append(time.perf_counter()))
    job.wait()
    total = time.perf_counter() - t0
    if job.error:
        raise RuntimeError(job.error)
    t1 = time.perf_counter()
    start_curve(state).wait()
    cached = time.perf_counter() - t1
    return first[0] - t0, total, cached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(machine_line())
    print(f"load average before: {os.getloadavg()}")
    print("| case | first row (s) | 40 points (s) | from the cache (s) |")
    print("|---|---|---|---|")
    for name, state in CASES.items():
        clear_cache()
        start_curve(state).wait()  # warm-up
        firsts, totals, cached = [], [], []
        for i in range(args.repeats):
            moved = state.replace(**_moved(state, i))
            a, b, c = time_change(moved)
            firsts.append(a)
            totals.append(b)
            cached.append(c)
        print(
            f"| {name} | {statistics.median(firsts):.3f} | {statistics.median(totals):.3f} "
            f"({min(totals):.3f}-{max(totals):.3f}) | {statistics.median(cached):.4f} |"
        )
    print(f"load average after: {os.getloadavg()}")


def _moved(state: ExplorerState, i: int) -> dict:
    """A control moved by a little (a new curve each time)."""
    if state.axis == "alpha":
        return {"lam": state.lam * (1.0 + 0.01 * (i + 1))}
    return {"alpha": state.alpha * (1.0 + 0.01 * (i + 1))}


if __name__ == "__main__":
    main()
