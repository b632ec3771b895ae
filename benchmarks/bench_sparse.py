"""Benchmarks of the lasso / elastic-net theory (issue 4, Performance).

Run:  python benchmarks/bench_sparse.py            (prints Markdown tables)

Measures, on the correlated sparse mixture eq. (sparse) with rho = 0.1, Delta1 = 0.1:

* one lasso point (square, logistic, hinge; default solver options, median of >= 5 runs);
* one K = 3 lasso point with one-hot labels (cross-entropy and square; isotropic clusters,
  Delta = 0.5, simplex means; the L-dimensional prior of :mod:`gaussmix.theory.prior.lasso`);
* one lambda* search (:func:`gaussmix.optimal_lambda`, median of 5);
* the theory part of Fig. 2: test error and training loss against alpha (20 points in
  [0.1, 3]) for ridge and lasso at lambda*(alpha), Delta2 in {0.1, 1, 10}, square loss.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from _timing import machine_line, median_time

import gaussmix as gm

warnings.simplefilter("ignore", gm.IntegrationWarning)


def main() -> None:
    print(machine_line() + "\n")
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    rows = []
    for loss in ("square", "logistic", "hinge"):
        t, r = median_time(
            lambda loss=loss: gm.solve(mix, loss, lam=0.1, alpha=1.0, penalty="l1"), repeats=7
        )
        rows.append(
            (f"one lasso point, {loss}, lam=0.1, alpha=1", t, r.n_iter, r.test_error, "< 0.05")
        )
    t, r = median_time(
        lambda: gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty="elastic-net", l1_ratio=0.5),
        repeats=7,
    )
    rows.append(("one elastic-net point, square, l1_ratio=0.5", t, r.n_iter, r.test_error, ""))
    three = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    for loss in ("cross-entropy", "square"):
        t, r = median_time(
            lambda loss=loss: gm.solve(three, loss, lam=0.1, alpha=2.0, penalty="l1"), repeats=3
        )
        rows.append(
            (
                f"one K = 3 lasso point, {loss}, lam=0.1, alpha=2 "
                f"(nonzero fraction {r.nonzero_fraction:.4f})",
                t,
                r.n_iter,
                r.test_error,
                "",
            )
        )
    for loss, alpha in (("square", 1.0), ("square", 0.2), ("logistic", 1.0), ("logistic", 3.0)):
        t, o = median_time(
            lambda loss=loss, alpha=alpha: gm.optimal_lambda(mix, loss, alpha=alpha, penalty="l1"),
            repeats=5,
        )
        lam = "0+" if o.at_boundary else f"{o.lam_star:.4g}"
        rows.append(
            (
                f"lambda* search, lasso + {loss}, alpha={alpha:g} (lambda* = {lam})",
                t,
                o.n_evaluations,
                o.test_error,
                "< 2",
            )
        )
    print("| benchmark | median time (s) | iterations / fixed points | test error | target |")
    print("|---|---|---|---|---|")
    for name, t, n, err, target in rows:
        print(f"| {name} | {t:.4f} | {n} | {err:.6f} | {target} |")

    # theory part of Fig. 2
    alphas = np.geomspace(0.1, 3.0, 20)
    t0 = time.perf_counter()
    tables = {}
    for d2 in (0.1, 1.0, 10.0):
        m = gm.Mixture.sparse(0.1, 0.1, d2)
        for pen in ("l2", "l1"):
            tables[(d2, pen)] = gm.optimal_lambda_curve(m, "square", alphas, penalty=pen)
    total = time.perf_counter() - t0
    print(
        f"\nFig. 2 theory (square loss, rho=0.1, Delta1=0.1, Delta2 in {{0.1, 1, 10}}, 20 alphas "
        f"in [0.1, 3], ridge and lasso at lambda*): {total:.2f} s in total (target < 60 s)\n"
    )
    print(
        "| Delta1/Delta2 | alpha | ridge lambda* | ridge eps_g | ridge eps_l | lasso lambda* "
        "| lasso eps_g | lasso eps_l | lasso nonzero |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for d2 in (0.1, 1.0, 10.0):
        r, s = tables[(d2, "l2")], tables[(d2, "l1")]
        for i in range(0, len(alphas), 4):

            def lam(df, i=i):
                return "0+" if df.at_boundary[i] else f"{df.lam_star[i]:.3g}"

            print(
                f"| {0.1 / d2:g} | {alphas[i]:.3f} | {lam(r)} | {r.test_error[i]:.4f} | "
                f"{r.train_loss[i]:.4f} | {lam(s)} | {s.test_error[i]:.4f} | "
                f"{s.train_loss[i]:.4f} | {s.nonzero_fraction[i]:.4f} |"
            )


if __name__ == "__main__":
    main()
