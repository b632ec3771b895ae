"""Benchmarks of the separability threshold alpha*_K (issue 10, Performance).

Run:  python benchmarks/bench_transition.py [--quick]    (prints Markdown tables)

Measures :func:`gaussmix.separability_threshold` (default ``rel_tol = 1e-4``, evidence off:
the threshold alone) on isotropic clusters with Gaussian means (Gram matrix ``I``), balanced,
for K = 2..10 and Delta in {0.25, 0.5, 1}: wall time per (K, Delta), the whole table
(serial, one process), and the value with its relative error estimate (exact Gaussian
moments for K = 2, deterministic quadrature for exchangeable clusters, the spread over
quasi-Monte Carlo scramblings otherwise).  Targets: one
(K, Delta) < 10 s for K <= 5 and < 60 s for K = 10; the table < 10 min on 2 cores.
``--quick``: K in {2, 3, 5, 10} at Delta = 0.5 only.
"""

from __future__ import annotations

import sys
import time

from _timing import machine_line

import gaussmix as gm


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    print(machine_line() + "\n")
    ks = (2, 3, 5, 10) if quick else tuple(range(2, 11))
    deltas = (0.5,) if quick else (0.25, 0.5, 1.0)
    gm.separability_threshold(gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3))  # warm-up
    table: dict[tuple[int, float], gm.TransitionResult] = {}
    t_all = time.perf_counter()
    for k in ks:
        for d in deltas:
            mix = gm.Mixture.isotropic(d, "gaussian", n_clusters=k)
            table[k, d] = gm.separability_threshold(mix, evidence=False)
    total = time.perf_counter() - t_all
    print("| K | " + " | ".join(f"alpha* (Delta={d:g})" for d in deltas) + " |")
    print("|---|" + "---|" * len(deltas))
    for k in ks:
        cells = [
            f"{table[k, d].alpha_star:.5f} (±{table[k, d].rel_accuracy:.1e})"
            if table[k, d].success
            else f"not converged: {table[k, d].message}"
            for d in deltas
        ]
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("\n| K | " + " | ".join(f"time (s), Delta={d:g}" for d in deltas) + " | method |")
    print("|---|" + "---|" * len(deltas) + "---|")
    for k in ks:
        cells = [f"{table[k, d].elapsed:.2f} ({_points(table[k, d])})" for d in deltas]
        print(f"| {k} | " + " | ".join(cells) + f" | {table[k, deltas[0]].method} |")
    print(f"\nwhole table: {total:.1f} s serial ({len(table)} thresholds)")


def _points(res: gm.TransitionResult) -> str:
    if res.log2_n > 0:
        return f"8 x 2^{res.log2_n}"
    return "quadrature" if res.method == "exchangeable" else "exact"


if __name__ == "__main__":
    main()
