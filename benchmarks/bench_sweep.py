"""Benchmarks of sweeps and simulations (issue: sweeps, simulations, CLI; Performance).

Run:  python benchmarks/bench_sweep.py [a] [b] [c]   (Markdown tables; all parts ~2 minutes)

Parallel timings need an otherwise idle machine: the load average is printed.

Serial timings are CPU times (``time.process_time``, BLAS on one thread); parallel ones
are wall times.

(a) Theory per point against the simulation it predicts (d = 1000, 10 seeds), for binary
    logistic and K = 3 cross-entropy, side by side in one run (BLAS on one thread for
    both; the simulation runs its seeds serially, so both columns are single-core times).
(b) Sweep overhead on 1000 cheap points (50 alphas x 20 lambdas; binary square and
    binary logistic loss, ~2 ms a point): ``sweep(...)`` (grid validation, tasks,
    checkpoint, CSV) against the bare loop of ``gaussmix.solve`` over the same problems
    (CPU time of this process, best of 7 interleaved runs), and by accounting inside one
    run (total CPU time of the sweep minus the CPU time inside its ``solve`` calls; median
    and range of 7 runs).
(c) A sweep on 2 workers against 1 worker (joblib, warm worker pool; and a dask
    LocalCluster of 2 workers) on three grids: 40 and 200 K = 3 cross-entropy theory
    points (~6 ms each), and 12 simulated points (~0.05 s each).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import machine_line
from threadpoolctl import threadpool_limits

import gaussmix as gm
from gaussmix.cli.grid import Grid, run_grid
from gaussmix.simulate.simulation import simulate
from gaussmix.sweep import sweep

warnings.simplefilter("ignore")

#: a few cheap points that start (and import gaussmix in) every worker
WARM_UP = Grid({"alpha": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]}, fixed={"loss": "square"})


def cpu_time(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def theory_vs_simulation() -> list[str]:
    binary = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    k3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    cases = [
        ("binary logistic, lam=0.1, alpha=2", binary, "logistic", 0.1, 2.0),
        ("K=3 cross-entropy, lam=1, alpha=2", k3, "cross-entropy", 1.0, 2.0),
    ]
    lines = [
        "| problem | theory / point, median | simulation (d=1000, 10 seeds) | ratio | "
        "test error theory | test error simulation |",
        "|---|---|---|---|---|---|",
    ]
    with threadpool_limits(1):
        for name, mix, loss, lam, alpha in cases:

            def theory(mix=mix, loss=loss, lam=lam, alpha=alpha):
                return gm.solve(mix, loss, lam=lam, alpha=alpha)

            res = theory()
            # theory: median of 21 solves (and the best); simulation: one run of 10 seeds
            times = [cpu_time(theory) for _ in range(21)]
            tt, tb = float(np.median(times)), min(times)
            t0 = time.process_time()
            sim = simulate(mix, loss=loss, lam=lam, alpha=alpha, d=1000, seeds=10, seed=0)
            ts = time.process_time() - t0
            lines.append(
                f"| {name} | {tt * 1e3:.2f} ms (best {tb * 1e3:.2f}) | {ts:.2f} s | "
                f"{ts / tt:,.0f}x (best {ts / tb:,.0f}x) | {res.test_error:.4f} | "
                f"{sim.mean['test_error']:.4f} ± {sim.se['test_error']:.4f} |"
            )
    return lines


def sweep_overhead(tmp: Path) -> list[str]:
    from gaussmix.sweep import tasks as sweep_module

    alphas = [float(a) for a in np.round(np.linspace(0.2, 5.0, 50), 6)]
    lams = [float(x) for x in np.round(np.geomspace(0.01, 10.0, 20), 8)]
    lines = [
        "| 1000 points | bare loop of solve | sweep, serial, checkpoint + CSV | overhead "
        "(vs bare loop) | overhead (in-run accounting) | sweep, joblib 2 workers (wall) |",
        "|---|---|---|---|---|---|",
    ]
    inside = [0.0]
    real_solve = sweep_module.solve_problem

    def timed_solve(*args, **kw):
        t0 = time.process_time()
        try:
            return real_solve(*args, **kw)
        finally:
            inside[0] += time.process_time() - t0

    for loss in ("square", "logistic"):
        spec = {
            "fixed": {"loss": loss, "labels": "binary"},
            "grid": {"alpha": alphas, "lam": lams},
        }
        # the mixture the sweep builds from these options (the bare loop solves the same
        # problems)
        mix = Grid.from_dict(spec).specs()[0].mixture

        def bare(loss=loss, mix=mix) -> None:
            for a in alphas:
                for lam in lams:
                    gm.solve(mix, loss, lam=lam, alpha=a)

        def swept(spec=spec, **kw) -> None:
            out = tmp / "b.csv"
            for p in (out, out.with_name(out.name + ".checkpoint.jsonl")):
                p.unlink(missing_ok=True)
            res = run_grid(spec, out=out, progress=False, **kw)
            assert res.computed == 1000 and res.failed == 0

        tb, ts, acc = [], [], []
        with threadpool_limits(1):
            bare()  # warm-up
            for _ in range(7):
                tb.append(cpu_time(bare))
                ts.append(cpu_time(lambda: swept(backend="serial")))
                # the same sweep, its solver calls timed from inside: overhead = total CPU
                # time minus the CPU time spent in the solver (immune to drifts of the
                # machine between two separate loops)
                inside[0] = 0.0
                sweep_module.solve_problem = timed_solve
                try:
                    total = cpu_time(lambda: swept(backend="serial"))
                finally:
                    sweep_module.solve_problem = real_solve
                acc.append((total - inside[0]) / inside[0])
        sweep(WARM_UP, jobs=2, progress=False)  # start the workers
        tj = min(_timed(lambda: swept(backend="joblib", jobs=2)) for _ in range(2))
        b, s = min(tb), min(ts)
        lines.append(
            f"| binary {loss} ({b:.1f} ms / point) | {b:.2f} s | {s:.2f} s | "
            f"{(s - b) / b * 100:+.1f} % | {np.median(acc) * 100:+.1f} % (range "
            f"{min(acc) * 100:+.1f} to {max(acc) * 100:+.1f} %) | {tj:.2f} s "
            f"({b / tj:.2f}x the bare loop) |"
        )
    return lines


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def scaling() -> list[str]:
    grids = {
        "40 K=3 cross-entropy theory points (~6 ms each)": Grid(
            {"alpha": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0], "lam": [0.1, 0.2, 0.5, 1.0, 2.0]},
            fixed={"loss": "cross-entropy", "clusters": 3},
        ),
        "200 K=3 cross-entropy theory points": Grid(
            {
                "alpha": list(np.round(np.linspace(0.25, 5.0, 40), 4)),
                "lam": [0.1, 0.2, 0.5, 1.0, 2.0],
            },
            fixed={"loss": "cross-entropy", "clusters": 3},
        ),
        "12 simulated points (binary logistic, d=400, 2 seeds)": Grid(
            {"alpha": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0], "lam": [0.1, 1.0]},
            fixed={"loss": "logistic", "labels": "binary"},
            simulate={"d": 400, "seeds": 2},
        ),
    }
    sweep(WARM_UP, jobs=2, progress=False)  # start the workers
    lines = [
        "| grid | 1 worker | joblib, 2 workers | dask LocalCluster, 2 workers |",
        "|---|---|---|---|",
    ]
    try:
        from distributed import LocalCluster
    except ImportError:  # pragma: no cover
        LocalCluster = None
    for name, grid in grids.items():
        t1 = min(
            _timed(lambda g=grid: sweep(g, backend="joblib", jobs=1, progress=False))
            for _ in range(2)
        )
        t2 = min(
            _timed(lambda g=grid: sweep(g, backend="joblib", jobs=2, progress=False))
            for _ in range(2)
        )
        dask = "n/a"
        if LocalCluster is not None:
            with LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster:
                addr = cluster.scheduler_address
                sweep(WARM_UP, scheduler=addr, progress=False)  # import gaussmix there
                td = min(
                    _timed(lambda g=grid, a=addr: sweep(g, scheduler=a, progress=False))
                    for _ in range(2)
                )
            dask = f"{td:.2f} s ({t1 / td:.2f}x)"
        lines.append(f"| {name} | {t1:.2f} s | {t2:.2f} s ({t1 / t2:.2f}x) | {dask} |")
    return lines


def main() -> None:
    parts = set(sys.argv[1:]) or {"a", "b", "c"}
    print(f"{machine_line()}, load average {os.getloadavg()[0]:.2f}")
    if "a" in parts:
        print("\n### (a) theory per point vs simulation")
        print("\n".join(theory_vs_simulation()))
    if "b" in parts:
        with tempfile.TemporaryDirectory() as tmp:
            print("\n### (b) sweep overhead on 1000 cheap points")
            print("\n".join(sweep_overhead(Path(tmp))))
    if "c" in parts:
        print("\n### (c) 2 workers vs 1")
        print("\n".join(scaling()))
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
