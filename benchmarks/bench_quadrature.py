"""Benchmarks of the automatic quadrature (issue 10, items 2-3).

Run:  python benchmarks/bench_quadrature.py          (prints Markdown tables, ~5 min)
      python benchmarks/bench_quadrature.py --no-k10  (without the K = 10 points, ~3 min)

Measures, at tolerance 1e-8 and with the default options (automatic rule, refinement
re-solve for the error estimate): the median wall time over 3 runs after a warm-up, the
iterations, the rule reached and the estimated integration errors of small-lambda points
that the tensor Gauss-Hermite rule could not make accurate; the same points with the
Gauss-Hermite rule for comparison; the first call in a fresh process ("cold": numba loads its
cached kernels, nothing is compiled if the cache is warm); K = 4..6 at lam = 1e-4 (one run
each, the automatic rule and the tensor rule); and K = 10 cross-entropy points (randomised
QMC), with and without the symmetric reduction of exchangeable clusters.
"""

from __future__ import annotations

import subprocess
import sys
import time
import warnings

from _timing import machine_line, median_time

import gaussmix as gm

CASES = [
    ("binary logistic, lam=1e-4", "binary", 2, "logistic", 1e-4),
    ("binary logistic, lam=1e-6", "binary", 2, "logistic", 1e-6),
    ("K=2 cross-entropy, lam=1e-4", "gaussian", 2, "cross-entropy", 1e-4),
    ("K=3 cross-entropy, lam=1e-4", "gaussian", 3, "cross-entropy", 1e-4),
    ("K=3 cross-entropy, lam=1", "gaussian", 3, "cross-entropy", 1.0),
]


def _mixture(kind: str, K: int) -> gm.Mixture:
    if kind == "binary":
        return gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    return gm.Mixture.isotropic(0.5, kind, n_clusters=K)


def _solve(kind, K, loss, lam, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = gm.solve(_mixture(kind, K), loss, lam=lam, alpha=float(K), **kw)
    n_warn = sum(issubclass(w.category, gm.IntegrationWarning) for w in caught)
    return r, n_warn


def _errors(r) -> str:
    e = r.integration_errors
    return f"{e['test_error']:.1e} / {e['train_loss']:.1e}"


def main() -> None:
    print(machine_line())
    print()
    print("| case | rule reached | median time | iterations | int. error test / loss | warns |")
    print("|---|---|---|---|---|---|")
    for name, kind, K, loss, lam in CASES:
        t, (r, n_warn) = median_time(lambda a=(kind, K, loss, lam): _solve(*a), repeats=3)
        rule = r.params["quadrature"]
        print(f"| {name} | {rule} | {t:.2f} s | {r.n_iter} | {_errors(r)} | {n_warn} |")
    print()
    print("Gauss-Hermite tensor rule (the previous default) on the same points, one run:")
    print()
    print("| case | rule reached | time | iterations | int. error test / loss | warns |")
    print("|---|---|---|---|---|---|")
    for name, kind, K, loss, lam in CASES:
        rule = gm.GaussHermite(64) if K == 2 else gm.GaussHermite(10, 2)
        t0 = time.perf_counter()
        r, n_warn = _solve(kind, K, loss, lam, quadrature=rule)
        t = time.perf_counter() - t0
        rule = r.params["quadrature"]
        print(f"| {name} | {rule} | {t:.2f} s | {r.n_iter} | {_errors(r)} | {n_warn} |")
    print()
    code = (
        "import time, warnings; t = time.perf_counter(); import gaussmix as gm; "
        "r = gm.solve(gm.Mixture.isotropic(0.5, 'gaussian', n_clusters=3), 'cross-entropy', "
        "lam=1e-4, alpha=3.0); print(f'{time.perf_counter() - t:.2f}')"
    )
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print(f"K=3 cross-entropy lam=1e-4, first call in a fresh process (import included): "
          f"{cold.stdout.strip()} s")  # fmt: skip
    print()
    print("| case | rule reached | time | iterations | test error | int. error test / train "
          "/ loss | warns |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for K in (4, 5, 6):
        for name, kw in (("auto", {}), ("tensor", {"quadrature": gm.GaussHermite(8, K - 1)})):
            _one_run(f"K={K} lam=1e-4, {name}", K, 1e-4, **kw)
    if "--no-k10" in sys.argv:
        return
    for lam, sym in ((1.0, True), (1e-4, True), (1.0, False)):
        _one_run(f"K=10 lam={lam:g}, symmetry={sym}", 10, lam, symmetry=sym)


def _one_run(name: str, K: int, lam: float, **kw) -> None:
    """One cross-entropy point (Gaussian means), one row of the K >= 4 table."""
    t0 = time.perf_counter()
    r, n_warn = _solve("gaussian", K, "cross-entropy", lam, throw=False, max_iter=300, **kw)
    t = time.perf_counter() - t0
    e = r.integration_errors
    errs = " / ".join(
        f"{e.get(k, float('nan')):.1e}" for k in ("test_error", "train_error", "train_loss")
    )
    rule = r.params["quadrature"]
    print(f"| {name} | {rule} | {t:.1f} s | {r.n_iter} | {r.test_error:.5f} | {errs} | {n_warn} |")


if __name__ == "__main__":
    main()
