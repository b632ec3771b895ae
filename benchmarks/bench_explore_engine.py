"""How fast the explorer redraws after a control changes (issue 22 target: a binary or
K = 3 curve of 40 points within 0.5 s on 2 cores).

For each case, after a warm-up curve (imports, numba's compiled kernels), a control is
changed (lambda moved to a value not computed before, so that nothing comes from the cache
of finished curves) and the time is taken from :func:`gaussmix.explore.start_curve` to the
first row, to the coarse pass (``coarse`` points of the grid, drawn first when the explorer
asks for one) and to the whole curve; then the same state again (served from the cache).
Medians over ``--repeats`` changes, wall time; the load average is printed before and
after.

``--solves QUERY [QUERY ...]``: where an explorer curve's work goes, solve by solve (issue
32, item 2).  Each state (the explorer's query, e.g. from ``bench_explore.py
--in-process``'s slowest) is computed as the page computes it after the lambda slider's
move (``bench_explore.py``'s ``_before``: a ``Session(coarse='auto')`` draws the curve at
lambda half a decade away first, untimed, then the state, started from it), and every call
of the library's ``solve_problem`` by the curve (:mod:`gaussmix.experiments.curves`) is
recorded: its start (``cold``; ``pred``, the continuation's predictor; ``warm``, a fixed
point: the last point's or the curve before's), its iteration cap, how it ended (``ok`` or
the exception's name: a failed capped solve, the explorer's budget), its channel
evaluations on rules of more than ``--fine`` nodes a cluster (``fine``) and on smaller ones
(``coarse``), its node-evaluations and the CPU time of the job's thread.  Counted, not
timed: the evaluations are the same on any load.  ``--every``: each solve, not only the
totals by start and outcome; ``--json FILE``: the records.

Usage: ``python benchmarks/bench_explore_engine.py [--repeats 5] [--coarse auto|0|N]``,
``python benchmarks/bench_explore_engine.py --solves QUERY [QUERY ...] [--every]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings
from pathlib import Path

from _timing import machine_line

import gaussmix.experiments.curves as curves
import gaussmix.theory.solve.fixed_point as fixed_point
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
    parser.add_argument("--solves", nargs="+", metavar="QUERY", help="see the docstring")
    parser.add_argument("--fine", type=int, default=1000, help="--solves: nodes of a fine rule")
    parser.add_argument("--every", action="store_true", help="--solves: every solve")
    parser.add_argument("--json", type=Path, help="--solves: the records here")
    args = parser.parse_args()
    if args.solves:
        solves(args.solves, args.fine, args.every, args.json)
        return
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


# ------------------------------------------------------------------ --solves
class Counter:
    """The channel evaluations (clusters, nodes) and the curve's solves while installed."""

    def __init__(self, fine: int) -> None:
        self.fine = fine
        self.evaluations: list[tuple[int, int]] = []
        self.solves: list[dict] = []
        self._evaluate = fixed_point.channel_evaluation
        self._solve = curves.solve_problem

    def install(self) -> None:
        def counted(loss, y, M, b, Q, V, rule, warm=None):
            nodes = getattr(rule, "weights", None)
            self.evaluations.append((M.shape[0], 0 if nodes is None else nodes.size))
            return self._evaluate(loss, y, M, b, Q, V, rule, warm)

        def traced(problem, **kw):
            n0, c0 = len(self.evaluations), time.thread_time()
            init, opts = kw.get("init"), kw.get("options")
            kind = "cold" if init is None else "pred" if isinstance(init, dict) else "warm"
            outcome = "ok"
            try:
                return self._solve(problem, **kw)
            except BaseException as exc:
                outcome = type(exc).__name__
                raise
            finally:
                ev = self.evaluations[n0:]
                self.solves.append(
                    dict(
                        alpha=float(problem.alpha),
                        lam=float(problem.lam),
                        start=kind,
                        cap=None if opts is None else int(opts.max_iter),
                        outcome=outcome,
                        fine=sum(1 for _, n in ev if n > self.fine),
                        coarse=sum(1 for _, n in ev if n <= self.fine),
                        nodes=sum(k * n for k, n in ev),
                        cpu=time.thread_time() - c0,
                    )
                )

        fixed_point.channel_evaluation = counted
        curves.solve_problem = traced

    def clear(self) -> None:
        self.evaluations.clear()
        self.solves.clear()


def counted_curve(query: str, counter: Counter) -> dict:
    """The curve of ``query`` after the lambda slider's move: its CPU time, evaluations,
    points drawn missing and solves."""
    from bench_explore import _before

    state = ExplorerState.from_query(query)
    with Session(coarse="auto") as session:
        session.submit(_before(state)).wait()
        counter.clear()
        c0 = time.process_time()
        job = session.submit(state)
        job.wait()
        cpu = time.process_time() - c0
    ev = counter.evaluations
    return dict(
        query=query,
        cpu=cpu,
        evaluations=len(ev),
        fine=sum(1 for _, n in ev if n > counter.fine),
        nodes=sum(k * n for k, n in ev),
        missing=len(job.failed),
        error=job.error,
        solves=list(counter.solves),
    )


def solves(queries: list[str], fine: int, every: bool, out: Path | None) -> None:
    """``--solves``: each state's curve after the lambda slider's move, its solves counted
    (:class:`Counter`) and printed by start and outcome (``every``: each solve), the
    records written to ``out``."""
    warnings.simplefilter("ignore")
    counter = Counter(fine)
    counter.install()
    records = []
    for query in queries:
        r = counted_curve(query, counter)
        records.append(r)
        print(
            f"{query}\n  CPU {r['cpu']:.2f} s, {r['evaluations']} evaluations ({r['fine']} fine), "
            f"{r['nodes'] / 1e6:.2f} million node-evaluations, {r['missing']} drawn missing"
            + (f", ERROR {r['error']}" if r["error"] else "")
        )
        totals: dict = {}
        for s in r["solves"]:
            t = totals.setdefault((s["start"], s["outcome"]), [0, 0, 0, 0.0])
            t[0] += 1
            t[1] += s["fine"]
            t[2] += s["coarse"]
            t[3] += s["cpu"]
        for (start, outcome), (n, fine, coarse, cpu) in totals.items():
            print(f"  {start} {outcome}: {n} solves, {fine} fine, {coarse} coarse, {cpu:.2f} s")
        if every:
            for s in r["solves"]:
                print(
                    f"    alpha {s['alpha']:.3g} {s['start']} cap {s['cap']} {s['outcome']}: "
                    f"{s['fine']} fine, {s['coarse']} coarse, {1e3 * s['cpu']:.0f} ms"
                )
    if out is not None:
        out.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
