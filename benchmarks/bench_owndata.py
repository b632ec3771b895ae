"""Your own data at scale (issue 20): the steps of ``gaussmix data`` before the curves.

On a data set the size of MNIST (70 000 x 784, ten classes, float64; 67 constant columns
like MNIST's border pixels), each step timed:

* ``load_labelled`` of a pair of ``.npy`` files (the read and both SHA-256 checksums);
* ``Mixture.from_data`` alone (ten covariances 784 x 784), the best of ``--repeats``;
* ``prepare_data``: the checks (finite, classes), the memory estimate, the stratified split,
  centring and scaling, and the fit (``from_data`` on both splits).

With ``--cifar``, ``Mixture.from_data`` once on 50 000 x 3 072 (the size of CIFAR-10; about
1.2 GB of inputs and 0.75 GB of covariances) -- check ``free -g`` first.

Usage: ``python benchmarks/bench_owndata.py [--repeats 3] [--cifar]``
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import machine_line

import gaussmix as gm
from gaussmix.data.files import load_labelled
from gaussmix.studies import prepare_data


def data(n: int, d: int, n_zero: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``n x d`` inputs in [0, 1] with ``n_zero`` constant columns, ten classes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, size=n)
    X = rng.random((n, d))
    X[:, :n_zero] = 0.0
    X += 0.05 * y[:, None] / 10  # a class-dependent shift
    return X, y


def best(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cifar", action="store_true", help="also 50 000 x 3 072 (once)")
    args = ap.parse_args()
    print(machine_line() + "\n")
    rows = []
    X, y = data(70_000, 784, 67)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "X.npy", X)
        np.save(Path(tmp) / "y.npy", y)
        t = best(lambda: load_labelled(Path(tmp) / "X.npy", Path(tmp) / "y.npy"), args.repeats)
        rows.append(("load_labelled, X.npy + y.npy (439 MB), with SHA-256", t, ""))
    t = best(lambda: gm.Mixture.from_data(X, y), args.repeats)
    rows.append(("Mixture.from_data, 70 000 x 784 float64, 10 classes", t, "< 10"))
    t = best(lambda: prepare_data(X, y, loss="cross-entropy", scale="standard"), args.repeats)
    rows.append(("prepare_data (checks, split, standard scaling, fit), 70 000 x 784", t, ""))
    if args.cifar:
        del X, y
        Xc, yc = data(50_000, 3072, 0)
        t = best(lambda: gm.Mixture.from_data(Xc, yc), 1)
        rows.append(("Mixture.from_data, 50 000 x 3 072 float64, 10 classes", t, "< 120"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print("| step | time (s) | target (s) |")
    print("|---|---|---|")
    for name, t, target in rows:
        print(f"| {name} | {t:.2f} | {target} |")
    print(f"\npeak resident memory of the process: {peak:.2f} GiB")


if __name__ == "__main__":
    main()
