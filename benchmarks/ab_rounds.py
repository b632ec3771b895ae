"""Interleaved A/B rounds of ``benchmarks/bench_ab_points.py`` between two source trees.

    git archive REV src | tar -x -C /tmp/ab-old
    python benchmarks/ab_rounds.py /tmp/ab-old/src src --rounds 5

Each round runs the bench once per tree, in fresh processes with one BLAS thread, A then B
(B then A on odd rounds).  Prints, per case, the median over rounds of each statistic
(``median`` and ``min`` of the runs of a process, in ms) with its range across rounds, the
ratio B / A of the medians over rounds, and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).with_name("bench_ab_points.py")


def run(src: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, str(BENCH)], env=env, check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="source directory of tree A (the reference)")
    parser.add_argument("b", help="source directory of tree B")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    load0 = os.getloadavg()
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    for r in range(args.rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for side in order:
            runs[side].append(run(getattr(args, side)))
    load1 = os.getloadavg()
    print(f"load average before {load0[0]:.1f}, after {load1[0]:.1f}; {args.rounds} rounds")
    for stat in ("median", "min"):
        print(f"\n| case ({stat} of a process's runs, ms) | A | B | B / A |")
        print("|---|---|---|---|")
        for case in runs["a"][0]:
            cell = {}
            for side in ("a", "b"):
                v = 1e3 * np.array([rd[case][stat] for rd in runs[side]])
                cell[side] = (np.median(v), v.min(), v.max())
            a, b = (f"{m:.1f} ({lo:.1f}-{hi:.1f})" for m, lo, hi in (cell["a"], cell["b"]))
            print(f"| {case} | {a} | {b} | {cell['b'][0] / cell['a'][0]:.2f} |")


if __name__ == "__main__":
    main()
