"""The square loss's learning curve for K = 3 to 6 classes (issue 32, item 3): the test and
training errors of one-hot square-loss ERM are Gaussian orthant probabilities of dimension
``K - 1``, deterministic nested rules up to six classes
(:func:`gaussmix.theory.numerics.orthant.orthant_probability`), so a K = 4 or 5 curve should cost
at
most three times a K = 3 one.

For each K: a 40-point curve (isotropic simplex means, Delta = 0.5, lam = 0.1, alphas
log-spaced in [0.2, 4]) solved by ``gm.learning_curve``; the median CPU time of ``--repeats``
runs after a warm-up (CPU time: steadier on a shared machine), its ratio to K = 3, and the
largest integration-error estimate of the curve.

Usage: ``python benchmarks/bench_square_k.py [--ks 3,4,5,6] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _timing import machine_line, median_time

import gaussmix as gm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default="3,4,5,6", help="numbers of classes, comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each curve")
    args = ap.parse_args()
    warnings.simplefilter("ignore", gm.IntegrationWarning)
    alphas = np.geomspace(0.2, 4.0, 40)
    print(machine_line())
    print(f"load average before: {os.getloadavg()}")
    print("| K | CPU s (median) | / K = 3 | largest integration error | converged |")
    print("|---|---|---|---|---|")
    base = None
    for K in (int(k) for k in args.ks.split(",")):
        mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=K)

        def curve(mix=mix):
            return gm.learning_curve(mix, "square", alphas, lam=0.1)

        t, df = median_time(curve, args.repeats, clock=time.process_time)
        base = t if base is None else base
        print(
            f"| {K} | {t:.2f} | {t / base:.2f} | {df.integration_error.max():.1e} | "
            f"{bool(df.converged.all())} |"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
