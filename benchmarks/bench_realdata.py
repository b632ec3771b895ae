"""Benchmarks of the real-data study (issue 11): MNIST even/odd, pixels.

Run:  python benchmarks/bench_realdata.py          (prints a Markdown table)

* ``prepare_realdata('mnist', 'even-odd')``: load (cached in the process after the first
  call) and fit the two-cluster mixture on all 70 000 images;
* the theory curve of Fig. 5 (20 values of alpha in [0.2, 4], lam = 0.05, warm-started);
* the ten-cluster mixture P10 (one cluster per digit, labels by parity): fit and one
  fixed point at alpha = 1.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from _timing import machine_line

import gaussmix as gm
from gaussmix.studies import prepare_realdata, theory_curve

warnings.simplefilter("ignore", gm.IntegrationWarning)


def main() -> None:
    print(machine_line())
    rows = []
    t = time.perf_counter()
    p2 = prepare_realdata("mnist", "even-odd")
    rows.append(("prepare P2 (load + fit on 70 000 images)", time.perf_counter() - t))
    t = time.perf_counter()
    df = theory_curve(p2, loss="logistic", lam=0.05, alphas=np.linspace(0.2, 4.0, 20))
    rows.append(("Fig. 5 theory curve, 20 alphas", time.perf_counter() - t))
    assert df["converged"].all()
    t = time.perf_counter()
    p10 = prepare_realdata(p2.dataset, clustering="pk")
    rows.append(("fit P10 (ten clusters)", time.perf_counter() - t))
    t = time.perf_counter()
    r = gm.solve(p10.mixture, "logistic", lam=0.05, alpha=1.0)
    rows.append((f"P10 fixed point (test error {r.test_error:.4f})", time.perf_counter() - t))
    print("| step | seconds |\n|---|---|")
    for name, sec in rows:
        print(f"| {name} | {sec:.1f} |")


if __name__ == "__main__":
    main()
