"""The dense ridge prior on one BLAS thread against the caller's threads (issue 18).

Run:  python benchmarks/bench_dense_threads.py [D ...]      (default: 300 600)

For three Gaussian classes fitted in dimension D (``Mixture.from_data`` on 2 D points per
class, distinct correlated covariances), one cross-entropy fixed point (``lam = 0.5``,
``alpha = 2``) is solved with the dense prior as shipped (below
``gaussmix.theory.numerics.linalg.BLAS_THREADS_MIN_N``, these sizes, all of its linear algebra on
one
BLAS thread) and with the threshold lowered to 1 (up to two threads, the caller's limit),
interleaved, three runs each after a warm-up.  It also prints whether the two give
the same bits (they need not: a threaded matrix product splits its sums differently).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _timing import machine_line

import gaussmix as gm
import gaussmix.theory.numerics.linalg as linalg

REPEATS = 3


def fitted(d: int) -> gm.Mixture:
    """Three Gaussian classes in dimension ``d`` with distinct correlated covariances."""
    rng = np.random.default_rng(18)
    n = max(300, 2 * d)
    X, y = [], []
    for c in range(3):
        A = np.eye(d) + rng.standard_normal((d, d)) / np.sqrt(d) * 0.5 * (1 + c)
        mean = 1.5 * np.eye(d)[c] + 0.1 * rng.standard_normal(d)
        X.append(rng.standard_normal((n, d)) @ A.T + mean)
        y += [c] * n
    return gm.Mixture.from_data(np.vstack(X), np.array(y))


def main(dims: list[int]) -> None:
    print(machine_line())
    print("| d | one BLAS thread (s) | caller's threads (s) | same bits |")
    print("|---|---|---|---|")
    shipped = linalg.BLAS_THREADS_MIN_N
    for d in dims:
        mix = fitted(d)
        gm.solve(mix, "cross-entropy", lam=0.5, alpha=2.0)  # warm-up
        times: dict[str, list[float]] = {"one": [], "caller": []}
        results = {}
        try:
            for _ in range(REPEATS):
                for name, threshold in (("one", shipped), ("caller", 1)):
                    linalg.BLAS_THREADS_MIN_N = threshold
                    t0 = time.perf_counter()
                    results[name] = gm.solve(mix, "cross-entropy", lam=0.5, alpha=2.0)
                    times[name].append(time.perf_counter() - t0)
        finally:
            linalg.BLAS_THREADS_MIN_N = shipped
        a, b = results["one"], results["caller"]
        same = a.test_error == b.test_error and np.array_equal(a.Q, b.Q)
        cells = [", ".join(f"{t:.2f}" for t in times[k]) for k in ("one", "caller")]
        print(f"| {d} | {cells[0]} | {cells[1]} | {'yes' if same else 'no'} |")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [300, 600])
