"""Where an explorer curve's work goes, solve by solve: each solve of the library's curve
after a move of the lambda slider, its start, cap, outcome, channel evaluations on the rule
and on coarser rules, and its CPU time (issue 32, item 2).

A state (the explorer's query, e.g. from ``bench_explore.py --in-process``'s slowest) is
computed as the page computes it after the slider's move (``bench_explore.py``'s
``_before``: a ``Session(coarse='auto')`` draws the curve at lambda half a decade away
first, untimed, then the state, started from it).  Every call of the library's
``solve_problem`` by the curve (:mod:`gaussmix.experiments.curves`) is recorded: its start
(``cold``; ``pred``, the continuation's predictor; ``warm``, a fixed point: the last
point's or the curve before's), its iteration cap, how it ended (``ok`` or the exception's
name: a failed capped solve, the explorer's budget), the channel evaluations on rules of
more than ``--fine`` nodes a cluster (``fine``) and on smaller ones (``coarse``), the
node-evaluations, and the CPU time of the job's thread.  Counted, not timed: the
evaluations are the same on any load.

Usage: ``python benchmarks/bench_explore_points.py QUERY [QUERY ...] [--solves]``
(``--solves``: every solve, not only the totals by start and outcome; ``--json FILE``:
the records).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

from bench_explore import _before

import gaussmix.experiments.curves as curves
import gaussmix.theory.solve.fixed_point as fixed_point
from gaussmix.explore import ExplorerState, Session


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


def run(query: str, counter: Counter) -> dict:
    """The curve of ``query`` after the lambda slider's move: its CPU time, evaluations,
    points drawn missing and solves."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queries", nargs="+", help="explorer states (their URL's query)")
    parser.add_argument("--fine", type=int, default=1000, help="nodes a cluster of a fine rule")
    parser.add_argument("--solves", action="store_true", help="every solve")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    counter = Counter(args.fine)
    counter.install()
    records = []
    for query in args.queries:
        r = run(query, counter)
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
        if args.solves:
            for s in r["solves"]:
                print(
                    f"    alpha {s['alpha']:.3g} {s['start']} cap {s['cap']} {s['outcome']}: "
                    f"{s['fine']} fine, {s['coarse']} coarse, {1e3 * s['cpu']:.0f} ms"
                )
    if args.json is not None:
        args.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
