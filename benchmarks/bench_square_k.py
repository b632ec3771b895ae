"""The square loss's learning curve for K = 3 to 6 classes (issue 32, item 3): the test and
training errors of one-hot square-loss ERM are Gaussian orthant probabilities of dimension
``K - 1``, deterministic up to six classes
(:func:`gaussmix.theory.numerics.orthant.orthant_probability_batch`: nested rules, and for
five classes Plackett's one-dimensional reduction first), so a K = 4 or 5 curve should cost
at most three times a K = 3 one.

For each K: a 40-point curve (lam = 0.1, alphas log-spaced in [0.2, 4]) solved by
``gm.learning_curve``; the median CPU time of ``--repeats`` runs after a warm-up (CPU time:
steadier on a shared machine), its ratio to K = 3, and the largest integration-error
estimate of the curve.  ``--means simplex`` (the default): isotropic simplex means,
Delta = 0.5, equal priors (exchangeable clusters: each point's orthants are permutations of
one another); ``--means gaussian``: a non-exchangeable mixture, the Gram matrix
``A A^T / 2`` (delta = 1) of a seeded standard Gaussian ``A`` (K x K) and Dirichlet(4) priors (each
orthant distinct).

Usage: ``python benchmarks/bench_square_k.py [--ks 3,4,5,6] [--repeats 3]
[--means simplex|gaussian]``
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
    ap.add_argument("--means", choices=("simplex", "gaussian"), default="simplex")
    args = ap.parse_args()
    warnings.simplefilter("ignore", gm.IntegrationWarning)
    alphas = np.geomspace(0.2, 4.0, 40)
    print(machine_line())
    print(f"means: {args.means}")
    print(f"load average before: {os.getloadavg()}")
    print("| K | CPU s (median) | / K = 3 | largest integration error | converged |")
    print("|---|---|---|---|---|")
    base = None
    for K in (int(k) for k in args.ks.split(",")):
        if args.means == "simplex":
            mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=K)
        else:
            rng = np.random.default_rng(K)
            A = rng.standard_normal((K, K))
            mix = gm.Mixture.isotropic(1.0, A @ A.T / 2, rho=rng.dirichlet(np.full(K, 4.0)))

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
