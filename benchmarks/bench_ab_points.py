"""Per-point timings for an interleaved A/B between two source trees (BENCHMARKS.md, "The
reliability fixes of issue 17, A/B").

Run, for each tree, in fresh processes and alternating (one BLAS thread)::

    git archive REV src | tar -x -C /tmp/ab-old
    PYTHONPATH=/tmp/ab-old/src OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ab_points.py
    PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ab_points.py

Each prints one JSON line: the median and the fastest wall time (s) of each case over 7 runs
(3 for the curve), after one warm-up run.  On a loaded machine the fastest run is the
steadier statistic (a run that loses the processor for one scheduling slice, 4-8 ms here, is
an outlier of the median of a 2 ms point); ``benchmarks/ab_rounds.py`` alternates the trees
for several rounds and tabulates both.
"""

from __future__ import annotations

import json
import time
import warnings

import numpy as np

import gaussmix as gm

warnings.simplefilter("ignore")


def timings(f, n: int = 7) -> list[float]:
    """Wall times (s) of ``n`` runs of ``f`` after one warm-up run."""
    f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return ts


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
    out = {}
    for k, f in cases.items():
        ts = timings(f, 3 if "curve" in k else 7)
        out[k] = {"median": float(np.median(ts)), "min": float(np.min(ts))}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
