"""Benchmarks of the core engine (issue: core engine, Performance).

Run:  python benchmarks/bench_engine.py            (prints a Markdown table)

Measures, at tolerance 1e-8 on the order parameters, the median wall time over >= 5 runs
of: one binary point (logistic, hinge, square), one K = 3 / K = 5 cross-entropy point, a
20-point learning curve with warm starts against one point; and a refinement study of the
integration error of the test error for K <= 3.
"""

from __future__ import annotations

import warnings

import numpy as np
from _timing import machine_line, median_time

import gaussmix as gm

warnings.simplefilter("ignore", gm.IntegrationWarning)


def main() -> None:
    print(machine_line())
    binary = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    rows = []
    for loss in ("logistic", "hinge", "square"):
        t, r = median_time(lambda loss=loss: gm.solve(binary, loss, lam=0.1, alpha=2.0))
        rows.append((f"binary {loss}, lam=0.1, alpha=2", t, r.n_iter, r.test_error))
    for K, reps in ((3, 5), (4, 5), (5, 5)):
        mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=K)
        t, r = median_time(
            lambda mix=mix: gm.solve(mix, "cross-entropy", lam=1.0, alpha=2.0), repeats=reps
        )
        rows.append((f"K={K} cross-entropy, lam=1, alpha=2", t, r.n_iter, r.test_error))
    mix3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    alphas = np.linspace(0.2, 4.0, 20)
    t1, _ = median_time(lambda: gm.solve(mix3, "cross-entropy", lam=1.0, alpha=2.0))
    tc, df = median_time(
        lambda: gm.learning_curve(mix3, "cross-entropy", alphas, lam=1.0), repeats=5
    )
    rows.append(("K=3 cross-entropy, 20-point curve", tc, int(df.n_iter.sum()), np.nan))
    tb1, _ = median_time(lambda: gm.solve(binary, "logistic", lam=0.1, alpha=2.0))
    tbc, df = median_time(lambda: gm.learning_curve(binary, "logistic", alphas, lam=0.1))
    rows.append(("binary logistic, 20-point curve", tbc, int(df.n_iter.sum()), np.nan))
    print()
    print("| case | median time | iterations | test error |")
    print("|---|---|---|---|")
    for name, t, n, e in rows:
        print(f"| {name} | {t * 1e3:.1f} ms | {n} | {e:.10f} |")
    print()
    print(f"curve / point ratio: K=3 CE {tc / t1:.1f}x, binary logistic {tbc / tb1:.1f}x")
    print()
    print("Refinement study (test error against the Gauss-Hermite order, tol 1e-12):")
    print()
    print("| case | n per dim | test error | change vs previous |")
    print("|---|---|---|---|")
    cases = [
        ("binary logistic lam=0.1 alpha=2", binary, "logistic", 0.1, 1, [16, 32, 64, 96, 128]),
        ("binary logistic lam=1e-3 alpha=0.5", binary, "logistic", 1e-3, 1, [32, 64, 96, 128]),
        ("K=3 CE lam=1 alpha=2", mix3, "cross-entropy", 1.0, 2, [8, 16, 24, 36, 48]),
        ("K=3 CE lam=0.01 alpha=0.5", mix3, "cross-entropy", 0.01, 2, [8, 16, 24, 36, 48]),
    ]
    for name, mix, loss, lam, dim, ns in cases:
        prev = None
        for n in ns:
            r = gm.solve(
                mix,
                loss,
                lam=lam,
                alpha=2.0 if "alpha=2" in name else 0.5,
                quadrature=gm.GaussHermite(n, dim),
                tol=1e-12,
                estimate_error=False,
            )
            ch = "" if prev is None else f"{abs(r.test_error - prev):.1e}"
            print(f"| {name} | {n} | {r.test_error:.12f} | {ch} |")
            prev = r.test_error


if __name__ == "__main__":
    main()
