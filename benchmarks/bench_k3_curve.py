"""The library's stacked K = 3 cross-entropy curve that the explorer draws (issue 22): its
wall and CPU time, and where its channel evaluations go.

The explorer's problem (``gaussmix explore --n-clusters 3 --loss cross-entropy``: three
exchangeable clusters, 40 alphas log-spaced in [0.2, 8]) at the lambdas the browser
benchmark moves the slider to (``bench_explore.py``: 10^-0.6 to 10^-1.2), solved by
``gm.learning_curve`` as the explorer calls it (one stacked state, the one map of
:mod:`gaussmix.theory.solve.fixed_point`).  For each lambda: the wall time and the
process's CPU time (both cores' threads), then, with ``--evaluations``, the channel evaluations of
one curve by rule (nodes) and stage (the solve on the curve's rule and its coarser one;
the refined rule's iteration of the error estimate; the observables at its images), their
clusters and their time.

Usage: ``python benchmarks/bench_k3_curve.py [--evaluations]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict

from _timing import machine_line

import gaussmix.theory.solve.batch_solve as batch_solve
import gaussmix.theory.solve.fixed_point as fixed_point
from gaussmix.explore import ExplorerState
from gaussmix.explore.engine import _library_curve
from gaussmix.explore.state import setup

LAMS = [10 ** (-0.6 - 0.1 * i) for i in range(7)]


def curve(lam: float) -> None:
    """The explorer's K = 3 cross-entropy curve at ``lam`` (the library's table)."""
    state = ExplorerState(n_clusters=3, loss="cross-entropy", lam=lam, n_points=40)
    point, values = setup(state)
    _library_curve(state, point, values, lambda row, result: None)


def evaluations(lam: float) -> None:
    """Print the channel evaluations of one curve by (stage, rule)."""
    log: list[tuple[str, int, int, float]] = []
    stage = ["solve"]
    evaluate, estimate, light = (
        fixed_point.channel_evaluation,
        batch_solve.estimate_points,
        batch_solve.stacked_observables,
    )

    def spy(loss, y, *args):  # noqa: ANN001, ANN202
        t0 = time.perf_counter()
        out = evaluate(loss, y, *args)
        log.append((stage[0], args[-2].weights.size, y.shape[0], time.perf_counter() - t0))
        return out

    def staged(name, func):  # noqa: ANN001, ANN202
        def run(*args, **kw):  # noqa: ANN002, ANN003, ANN202
            before, stage[0] = stage[0], name
            try:
                return func(*args, **kw)
            finally:
                stage[0] = before

        return run

    fixed_point.channel_evaluation = spy
    batch_solve.estimate_points = staged("refined", estimate)
    batch_solve.stacked_observables = staged("observables", light)
    try:
        curve(lam)
    finally:
        fixed_point.channel_evaluation, batch_solve.estimate_points = evaluate, estimate
        batch_solve.stacked_observables = light
    groups: dict = defaultdict(list)
    for name, nodes, rows, dt in log:
        groups[(name, nodes)].append((rows, dt))
    print(f"lam = {lam:.3g}: stage, rule nodes, evaluations, clusters each, ms each, ms")
    for (name, nodes), runs in groups.items():
        rows = statistics.mean(r for r, _ in runs)
        total = sum(dt for _, dt in runs)
        print(
            f"  {name:<12} {nodes:>6} {len(runs):>3} {rows:>6.1f} "
            f"{1e3 * total / len(runs):>7.1f} {1e3 * total:>7.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", action="store_true")
    args = parser.parse_args()
    print(machine_line())
    curve(0.2)  # compiles
    walls, cpus = [], []
    for lam in LAMS:
        c0, t0 = time.process_time(), time.perf_counter()
        curve(lam)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    print(f"load average {os.getloadavg()[0]:.2f}; lambdas {LAMS[0]:.3g} to {LAMS[-1]:.3g}")
    print(
        f"wall median {statistics.median(walls):.3f} s (min {min(walls):.3f}, max "
        f"{max(walls):.3f}); CPU median {statistics.median(cpus):.3f} s"
    )
    if args.evaluations:
        for lam in (LAMS[0], LAMS[3], LAMS[-1]):
            evaluations(lam)


if __name__ == "__main__":
    main()
