"""The binary theory curve of a dense (fitted-like) mixture at the size of CIFAR-10 (issue 20).

Run:  python benchmarks/bench_dense_curve.py [--d 3072] [--alphas 0.5,1,2,4,8]

Two clusters in dimension ``d`` with covariances that do not commute (a power-law spectrum
``5 / j`` in a random basis of each cluster's own, as ``bench_dense.image_like_mixture``),
binary labels, logistic loss, ridge ``lam = 0.1``: the wall time of ``gm.learning_curve``
over the alphas (default solver options, the integration-error re-solve included), the
iterations per point and the peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
from _timing import machine_line

import gaussmix as gm

#: norm of the means +-mu (as bench_dense's image-like mixture at d = 784: test errors of
#: about 0.1 to 0.3 over the alphas)
MEAN_NORM = 0.34


def mixture(d: int, seed: int = 0) -> gm.Mixture:
    """Two clusters in dimension ``d``, non-commuting power-law covariances, means +-mu."""
    rng = np.random.default_rng(seed)
    spectrum = 5.0 / np.arange(1, d + 1)
    covs = []
    for _ in range(2):
        basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
        covs.append((basis * spectrum) @ basis.T)
    mu = rng.standard_normal(d)
    mu *= MEAN_NORM / np.linalg.norm(mu)
    return gm.Mixture.dense(np.stack([mu, -mu]), np.stack(covs), labels="binary")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=3072)
    parser.add_argument("--alphas", default="0.5,1,2,4,8")
    args = parser.parse_args()
    alphas = [float(a) for a in args.alphas.split(",")]
    t0 = time.perf_counter()
    mix = mixture(args.d)
    t1 = time.perf_counter()
    curve = gm.learning_curve(mix, "logistic", alphas, lam=0.1)
    t2 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(machine_line())
    print(f"d = {args.d}: mixture built in {t1 - t0:.1f} s; curve of {len(alphas)} alphas "
          f"in {t2 - t1:.1f} s; peak RSS {peak:.2f} GiB")  # fmt: skip
    print(curve[["alpha", "test_error", "train_loss", "n_iter"]].to_string(index=False))


if __name__ == "__main__":
    main()
