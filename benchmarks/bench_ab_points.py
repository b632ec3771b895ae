"""Per-point timings for an interleaved A/B between two source trees (BENCHMARKS.md, "The
reliability fixes of issue 17, A/B").

Run, for each tree, in fresh processes and alternating (one BLAS thread)::

    git archive REV src | tar -x -C /tmp/ab-old
    PYTHONPATH=/tmp/ab-old/src OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ab_points.py
    PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ab_points.py

Each prints one JSON line: the median wall time (s) of each case over 7 runs (3 for the
curve), after one warm-up run.
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np

import gaussmix as gm

warnings.simplefilter("ignore")


def med(f, n: int = 7) -> float:
    f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main() -> None:
    b = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    m3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    sp = gm.Mixture.sparse(0.1, 0.1, 1.0)
    alphas = np.linspace(0.2, 4, 20)
    cases = {
        "binary logistic lam=0.1 a=2": lambda: gm.solve(b, "logistic", lam=0.1, alpha=2.0),
        "binary hinge lam=0.1 a=2": lambda: gm.solve(b, "hinge", lam=0.1, alpha=2.0),
        "K=3 CE lam=1 a=2": lambda: gm.solve(m3, "cross-entropy", lam=1.0, alpha=2.0),
        "K=3 CE lam=1e-4 a=4": lambda: gm.solve(m3, "cross-entropy", lam=1e-4, alpha=4.0),
        "sparse square l1 lam=0.1 a=1": lambda: gm.solve(
            sp, "square", lam=0.1, alpha=1.0, penalty="l1"
        ),
        "K=3 CE curve 20 pts": lambda: gm.learning_curve(m3, "cross-entropy", alphas, lam=1.0),
    }
    print(json.dumps({k: med(f, 3 if "curve" in k else 7) for k, f in cases.items()}))


if __name__ == "__main__":
    main()
