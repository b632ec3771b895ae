"""Benchmarks of cross-entropy with exchangeable clusters at small lambda (issue 19, item 1).

Run:  python benchmarks/bench_exchangeable.py [--quick]    (prints Markdown tables)

The paper's Fig. 3 left set-up (Delta = 0.5, Gaussian means, balanced, ridge, lam = 1e-4):
cold single points of K = 4 (the deterministic rule of exchangeable clusters,
:class:`gaussmix.theory.problem.symmetry.ExchangeablePanels`) across alpha, with the wall time,
the rule reached and the integration-error estimates of the test error, training error
and training loss; then a K = 4 learning curve of 40 alphas in [0.5, 8]
(:func:`gaussmix.learning_curve`, warm-started) with its warnings; then one K = 5 point
(the seeded randomised rule it keeps) for comparison.  The machine's load average is
printed before and after: the machine is shared, so read the times against it.
``--quick``: three alphas and no curve.

``--k3``: K = 3 instead (the symmetric rule in two dimensions, 32 panels): cold points
through the band below ``alpha*_3`` and at the cusp, each against the general graded-panel
rule in ``xi`` (the automatic rule of K = 3 before, ``quadrature=auto_rule(2)``), then the
``fig3-left --fast`` theory grid (K = 2, 3 on 40 alphas and each ``alpha*_K``,
``simulate=False``) with its warnings.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
from _timing import machine_line

import gaussmix as gm
from gaussmix.experiments.transition import separability_threshold

LAM = 1e-4
DELTA = 0.5


def _point(k: int, alpha: float, quadrature=None) -> tuple[float, gm.FixedPointResult, list[str]]:
    mix = gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=k)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        r = gm.solve(mix, "cross-entropy", lam=LAM, alpha=alpha, quadrature=quadrature)
        dt = time.perf_counter() - t0
    return dt, r, [type(w.message).__name__ for w in caught]


def _row(k: int, alpha: float, dt: float, r: gm.FixedPointResult, warned: list[str]) -> str:
    e = r.integration_errors
    return (
        f"| {k} | {alpha:.4g} | {dt:.2f} | {r.n_iter} | {r.params['quadrature']} | "
        f"{r.test_error:.7f} ({e['test_error']:.1e}) | "
        f"{r.train_error:.7f} ({e['train_error']:.1e}) | "
        f"{r.train_loss:.7f} ({e['train_loss']:.1e}) | {', '.join(warned) or '-'} |"
    )


def curve_line(k: int) -> str:
    """The learning curve of 40 alphas in [0.5, 8] (warm-started) of K = ``k``: its time,
    largest estimate and warnings, as one line."""
    mix = gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=k)
    grid = np.linspace(0.5, 8.0, 40)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        df = gm.learning_curve(mix, "cross-entropy", grid, lam=LAM)
        dt = time.perf_counter() - t0
    worst = float(df["integration_error"].max())
    return (
        f"\nK = {k} curve, 40 alphas in [0.5, 8]: {dt:.1f} s, largest integration error "
        f"{worst:.1e}, {len(caught)} warning(s)"
    )


def k3() -> None:
    """The K = 3 tables (module docstring, ``--k3``)."""
    from gaussmix.figures import fig3_left
    from gaussmix.figures.multiclass import FIG3_LEFT_FAST
    from gaussmix.theory.numerics.quadrature import auto_rule

    print(machine_line())
    print(f"load average before: {os.getloadavg()}\n")
    star = separability_threshold(
        gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=3), evidence=False
    ).alpha_star
    _point(3, 2.0)  # warm-up
    print("| K | alpha | wall (s) | iterations | rule | test error (est.) | "
          "training error (est.) | training loss (est.) | warnings |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for alpha in (2.0, 3.64, 3.94, 4.08, star, 4.3, 6.0):
        for quadrature in (None, auto_rule(2)):
            print(_row(3, alpha, *_point(3, alpha, quadrature)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        df = fig3_left(FIG3_LEFT_FAST["alphas"], (2, 3), simulate=False, bayes_error=None)
        dt = time.perf_counter() - t0
    print(
        f"\nfig3-left --fast theory grid (K = 2, 3; {len(df)} points): {dt:.1f} s, largest "
        f"integration error {df['integration_error'].max():.1e}, {len(caught)} warning(s)"
    )
    print(f"\nload average after: {os.getloadavg()}")


def main() -> None:
    if "--k3" in sys.argv[1:]:
        k3()
        return
    quick = "--quick" in sys.argv[1:]
    print(machine_line())
    print(f"load average before: {os.getloadavg()}\n")
    star = separability_threshold(
        gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=4), evidence=False
    ).alpha_star
    alphas = (0.5, 3.0, 6.5) if quick else (0.5, 1.0, 2.0, 3.0, 4.0, 4.4, star, 5.0, 5.5, 6.5, 8.0)
    _point(4, 2.0)  # warm-up: compiled kernels, rule caches
    print("| K | alpha | wall (s) | iterations | rule | test error (est.) | "
          "training error (est.) | training loss (est.) | warnings |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for alpha in alphas:
        print(_row(4, alpha, *_point(4, alpha)))
    if not quick:
        print(curve_line(4))
    dt, r, warned = _point(5, 3.0)
    print(
        f"\nK = 5, alpha = 3 (randomised rule kept): {dt:.2f} s, {r.params['quadrature']}, "
        f"estimates {r.integration_errors}, warnings: {', '.join(warned) or '-'}"
    )
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
