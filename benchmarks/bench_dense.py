"""Benchmarks of general covariances (issue 11, items 1 and 2).

Run:  python benchmarks/bench_dense.py            (prints a Markdown table)

On an image-like random mixture in d = 784 (67 coordinates of zero variance, like the
constant border pixels of MNIST; on the other 717 a power-law spectrum
``5 / j`` in a random basis of its own for every cluster, so that the covariances do not
commute; centred means with ``|mu_c - mu_c'| ~ 3``):

* one K = 2 fixed point (binary labels, logistic and square loss, lam = 0.1, alpha = 1;
  default solver options, the integration-error re-solve included);
* one P10 fixed point (K = 10 clusters, binary labels by parity, logistic, lam = 0.1);
* one call of the dense ridge prior (d = 784, K = 2 and 10);
* ``Mixture.from_data`` on 70 000 x 784 inputs with ten classes (float64, and uint8 pixels);
* its mixture file: ``Mixture.fingerprint`` (the sweep's key), ``Mixture.save`` and
  ``Mixture.load`` (which validates what ``Mixture.dense`` validates).

Times are medians of repeated runs after a warm-up (``from_data``: the best of 3).  On a
loaded machine run it with ``OPENBLAS_NUM_THREADS=1`` too (BENCHMARKS.md has both).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from _timing import machine_line, median_time

import gaussmix as gm
from gaussmix.theory.prior.dense import dense_ridge_terms

warnings.simplefilter("ignore", gm.IntegrationWarning)

D, N_ZERO = 784, 67
#: size of a mean component (a test error of about 0.2 at alpha = 1 for K = 2)
MEAN_SCALE = 0.012


def image_like_mixture(n_clusters: int, seed: int = 0) -> gm.Mixture:
    """K clusters in d = 784: zero variance on 67 coordinates, spectrum 5/j elsewhere, in
    a random basis per cluster; centred means; binary labels by parity of the cluster."""
    rng = np.random.default_rng(seed)
    active = np.sort(rng.choice(D, D - N_ZERO, replace=False))
    n_act = active.size
    spectrum = 5.0 / np.arange(1, n_act + 1)
    covs = np.zeros((n_clusters, D, D))
    for c in range(n_clusters):
        O, _ = np.linalg.qr(rng.standard_normal((n_act, n_act)))
        covs[c][np.ix_(active, active)] = (O * spectrum) @ O.T
    means = np.zeros((n_clusters, D))
    means[:, active] = MEAN_SCALE * rng.standard_normal((n_clusters, n_act))
    means -= means.mean(axis=0)
    labels = np.where(np.arange(n_clusters) % 2 == 0, 1.0, -1.0)[:, None]
    return gm.Mixture.dense(means, covs, labels=labels)


def file_rows(mix: gm.Mixture) -> list[tuple]:
    """Fingerprint, save and load of a mixture (its file in a temporary folder)."""
    import tempfile
    from pathlib import Path

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mixture.npz"

        def fingerprint() -> str:
            mix.__dict__.pop("_fingerprint", None)  # the cached value: hash again
            return mix.fingerprint()

        for name, fn in (
            ("Mixture.fingerprint", fingerprint),
            ("Mixture.save", lambda: mix.save(path)),
            ("Mixture.load", lambda: gm.Mixture.load(path)),
        ):
            t, _ = median_time(fn, repeats=3)
            rows.append((f"{name}, d=784, K=10", t, 1, np.nan, ""))
    return rows


def main() -> None:
    print(machine_line() + "\n")
    rows = []
    for k in (2, 10):
        mix = image_like_mixture(k)
        Qh = np.full((k, 1, 1), 0.5)
        Mh = np.where(np.arange(k) % 2 == 0, 0.3, -0.3)[:, None]
        t, _ = median_time(
            lambda mix=mix, Qh=Qh, Mh=Mh: dense_ridge_terms(mix.covariance, 0.1, Qh, Mh, Qh),
            repeats=5,
        )
        rows.append((f"one dense ridge prior call, d=784, K={k}, L=1", t, 1, float("nan"), ""))
        losses = ("logistic", "square") if k == 2 else ("logistic",)
        for loss in losses:
            t, r = median_time(
                lambda mix=mix, loss=loss: gm.solve(mix, loss, lam=0.1, alpha=1.0), repeats=3
            )
            target = "< 2" if k == 2 else "< 10"
            name = f"fixed point, d=784, K={k} ({'P10' if k == 10 else 'P2'}), {loss}, lam=0.1"
            rows.append((name, t, r.n_iter, r.test_error, target))
    rng = np.random.default_rng(1)
    n = 70_000
    y = rng.integers(0, 10, size=n)
    X8 = rng.integers(0, 256, size=(n, D), dtype=np.uint8)
    X8[:, :N_ZERO] = 0
    Xf = X8 / 255.0
    for name, X in (("float64", Xf), ("uint8", X8)):
        ts = []
        for _ in range(3):
            t0 = time.perf_counter()
            mix = gm.Mixture.from_data(X, y)
            ts.append(time.perf_counter() - t0)
        rows.append(
            (f"Mixture.from_data, 70000 x 784 {name}, 10 classes", min(ts), 1, np.nan, "< 10")
        )
    rows += file_rows(mix)
    print("| benchmark | time (s) | iterations | test error | target |")
    print("|---|---|---|---|---|")
    for name, t, n_it, err, target in rows:
        print(f"| {name} | {t:.3f} | {n_it} | {err:.6f} | {target} |")


if __name__ == "__main__":
    main()
