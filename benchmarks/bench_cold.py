"""Cold solves of seeded random valid problems (issue 31 item 3): failures, the slowest, the
distribution of times and the total count of iterations.

Every problem of ``tests/_random_problems.py``'s stream (every registered mixture model,
loss and penalty, K <= 4, ``lam`` in [1e-3, 10], ``alpha`` in [0.05, 8]) is solved cold by
``gm.solve`` with the default options, one after the other in this process.  Failures of
the sparse penalties' zero estimator (NaN order parameters past the threshold where
``W* = 0``) are counted apart.

Run::

    python benchmarks/bench_cold.py -n 1000 --seed 0 [--quick | --no-multi-output] [--indices i,j]
        [--timeout s] [--jsonl out.jsonl] [--start 0]

``--quick``: the problems the test suite runs (all but the multi-output lasso of four
outputs with the cross-entropy loss, ``ci_subset``; 969 of the first 1,000 of seed 0);
``--no-multi-output``: those without a multi-output lasso prior (898 of 1,000).
Before the first, a warm-up (``warm_up``) loads the modules and compiled kernels that the
first solve of each kind would otherwise count (measured: the first multi-output lasso
problem 8.1 s of CPU without it, 0.01 s after it).  Times are CPU seconds of this
process (the limit of issue 31 is 10 s a problem; the ``--timeout`` too); wall times
depend on the machine's load, the iteration counts do not (the solve is deterministic).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from _random_problems import (  # noqa: E402
    Outcome,
    ci_subset,
    quick_subset,
    random_problems,
    run,
    warm_up,
)


def summary(outcomes: list[Outcome], slowest: int = 10) -> str:
    """Failures (zero-regime apart), the ``slowest`` slowest, the distribution of times."""
    lines = []
    failed = [o for o in outcomes if not o.success]
    zero = [o for o in failed if o.zero_regime]
    lines.append(
        f"{len(outcomes)} problems: {len(outcomes) - len(failed)} succeeded, {len(failed)} "
        f"failed ({len(zero)} of them in the lasso's zero regime)"
    )
    for o in failed:
        lines.append("  " + ("[zero] " if o.zero_regime else "") + o.describe())
    fell = [o for o in outcomes if o.fallback]
    lines.append(f"{len(fell)} solved through the fallback")
    # what the failed cold iterations cost: the fallback's solves and the failures
    hard = [o for o in outcomes if o.fallback or not o.success]
    lines.append(
        f"fallbacks and failures: {sum(o.cpu_seconds for o in hard):.1f} s CPU, "
        f"{sum(max(o.n_iter, 0) for o in hard)} iterations"
    )
    for o in fell:
        lines.append("  " + o.describe())
    lines.append(f"the {slowest} slowest:")
    for o in sorted(outcomes, key=lambda o: -o.cpu_seconds)[:slowest]:
        lines.append("  " + o.describe())
    t = np.array([o.seconds for o in outcomes])
    c = np.array([o.cpu_seconds for o in outcomes])
    q = np.percentile(c, [50, 90, 99, 100])
    lines.append(
        f"CPU time: total {c.sum():.1f} s (wall {t.sum():.1f} s); median {q[0]:.2f} s, "
        f"90% {q[1]:.2f} s, 99% {q[2]:.2f} s, max {q[3]:.2f} s"
    )
    lines.append(f"iterations: total {sum(max(o.n_iter, 0) for o in outcomes)}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200, help="number of problems (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="the test suite's subset of the first n: no K = 4 cross-entropy multi-output lasso",
    )
    ap.add_argument(
        "--no-multi-output",
        action="store_true",
        help="no multi-output lasso prior, the first n of 1000",
    )
    ap.add_argument(
        "--indices",
        type=lambda t: {int(i) for i in t.split(",")},
        help="only the problems of these indices of the stream (comma-separated)",
    )
    ap.add_argument("--start", type=int, default=0, help="first problem's index")
    ap.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="stop a solve after this many seconds of CPU time",
    )
    ap.add_argument("--jsonl", type=Path, help="append one JSON line per problem here")
    args = ap.parse_args()
    outcomes = []
    if args.quick:
        problems = ci_subset(args.n, args.seed)
    elif args.no_multi_output:
        problems = quick_subset(1000, args.seed, args.n)
    else:
        problems = random_problems(args.n, args.seed)
    if args.indices is not None:
        problems = [p for p in problems if p.index in args.indices]
    print(f"warm-up: {warm_up():.2f} s CPU", flush=True)
    for p in problems[args.start :]:
        o = run(p, timeout=args.timeout)
        outcomes.append(o)
        print(("ok   " if o.success else "FAIL ") + o.describe(), flush=True)
        if args.jsonl is not None:
            with args.jsonl.open("a") as f:
                rec = {
                    "index": p.index,
                    "problem": p.describe(),
                    "success": o.success,
                    "zero_regime": o.zero_regime,
                    "seconds": o.seconds,
                    "cpu_seconds": o.cpu_seconds,
                    "n_iter": o.n_iter,
                    "fallback": o.fallback,
                    "error": o.error,
                }
                f.write(json.dumps(rec) + "\n")
    print(summary(outcomes))


if __name__ == "__main__":
    main()
