"""Benchmarks of cross-entropy's channel integrated over the softmax normaliser (issue 19,
item 1; :mod:`gaussmix.theory.channel.normaliser`).

Run:  python benchmarks/bench_normaliser.py [--moments] [--points] [--curve] [--cost] [--cold]
(prints Markdown tables; no option: the first two)

``--moments``: the seven integrals of cluster 0 at fixed states of the paper's Fig. 3 left
set-up (Delta = 0.5, Gaussian means, balanced, ridge, lam = 1e-4; the states of the
automatic rule of the solver before the normaliser rule): the wall time of one evaluation
(best of three) at 8, 10 and 12 Legendre nodes per grid panel (A, B, C), the training loss
at B, the differences A - B (the solver's estimate) of the training loss, ``E[p_0]`` and the
two Stein moments divided by ``sqrt(q)``, and the largest B - C (showing A - B honest).

``--points``: cold single points of Fig. 3 left at K = 4 (through the band around
``alpha*_4``, where the solve goes on with the normaliser rule), K = 5 and K = 6: wall time,
iterations, the rule reached, the values with their estimates, and the warnings.

``--cost``: issue 19's cost target (one point in 1 s): cold single points at K = 5
(alpha = 7, 3), K = 6 (alpha = 3) and in K = 4's band (alpha = 4.5), wall and CPU time of
the process (the CPU time is less sensitive to the shared machine's load), iterations,
the rule reached and the values with their estimates; then the K = 5 curve's wall and CPU
time.

``--cold``: every alpha of the K = 5 curve's grid (40 in [0.5, 8]) solved cold, and a few
of K = 4 and 6 near their ``alpha*``: CPU time, iterations, evaluations of the rule
(:func:`~gaussmix.theory.channel.normaliser.normaliser_integrals`) and how many of them refused a
state beyond the rule's caps (an extrapolation far from the fixed point), the largest
estimate of the test error, training error and training loss, and the warnings.

``--curve``: the K = 5 learning curve of 40 alphas in [0.5, 8] (warm-started), its time,
largest estimate and warnings (``bench_exchangeable.curve_line``).  The machine's load
average is printed before and after.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
from _timing import machine_line
from bench_exchangeable import curve_line

import gaussmix as gm
from gaussmix.experiments.transition import separability_threshold
from gaussmix.theory.channel.normaliser import normaliser_integrals

LAM = 1e-4
DELTA = 0.5
#: (K, alpha) -> (sqrt(q), v, own mean logit, competitors' mean logit): cluster 0's states
#: (q = 156.019..., 835.864... at K = 4)
STATES = {
    (4, 3.0): (12.490767409554755, 764.2873878664792, 7.632021836607066, -2.5440072788690222),
    (4, 4.5): (28.911327193899506, 70.62023419611467, 18.333789875810165, -6.111263291936722),
    (5, 3.0): (10.77447531941112, 931.2365482715459, 6.8305823335546725, -1.707645583388668),
    (5, 7.0): (3.2497580819416454, 2.934550676786214, 2.7111200007156375, -0.6777800001789094),
}  # fmt: skip


def _moments(k: int, state: tuple, order: int) -> tuple[float, dict]:
    best, out = np.inf, None
    for _ in range(3):
        t0 = time.perf_counter()
        r = normaliser_integrals(k, *state, order=order)
        best = min(best, time.perf_counter() - t0)
        out = {x: r[x] / r["one"] for x in ("loss", "p0", "p0g0", "sum_pjgj")}
    s = state[0]
    out["p0g0"] /= s
    out["sum_pjgj"] /= s
    return best, out


def moments() -> None:
    """The table of ``--moments``."""
    normaliser_integrals(4, *STATES[4, 4.5], order=8)  # warm-up: the compiled kernel
    print("| K | alpha | wall A (s) | wall B (s) | wall C (s) | training loss (B) | A - B: loss "
          "| A - B: `E[p_0]` | A - B: `E[p_0 g_0]/sqrt(q)` | A - B: `sum E[p_j g_j]/sqrt(q)` "
          "| B - C (largest) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (k, alpha), state in STATES.items():
        (ta, A), (tb, B), (tc, C) = (_moments(k, state, n) for n in (8, 10, 12))
        diffs = " | ".join(f"{abs(A[x] - B[x]):.1e}" for x in ("loss", "p0", "p0g0", "sum_pjgj"))
        bc = max(abs(B[x] - C[x]) for x in B)
        print(f"| {k} | {alpha:g} | {ta:.2f} | {tb:.2f} | {tc:.2f} | {B['loss']:.10f} | "
              f"{diffs} | {bc:.1e} |")  # fmt: skip


def _point(k: int, alpha: float) -> str:
    mix = gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=k)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        r = gm.solve(mix, "cross-entropy", lam=LAM, alpha=alpha)
        dt = time.perf_counter() - t0
    e = r.integration_errors
    rule = r.params["quadrature"].split(";")[0].split(", centre")[0]
    warned = ", ".join(type(w.message).__name__ for w in caught) or "-"
    return (
        f"| {k} | {alpha:.4g} | {dt:.1f} | {r.n_iter} | {rule} | "
        f"{r.test_error:.7f} ({e['test_error']:.1e}) | "
        f"{r.train_error:.7f} ({e['train_error']:.1e}) | "
        f"{r.train_loss:.9f} ({e['train_loss']:.1e}) | {r.test_loss:.5f} ({e['test_loss']:.1e}) "
        f"| {warned} |"
    )


def points() -> None:
    """The table of ``--points``."""
    stars = {
        k: separability_threshold(
            gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=k), evidence=False
        ).alpha_star
        for k in (4, 5)
    }
    _point(5, 7.0)  # warm-up
    print("| K | alpha | wall (s) | iterations | rule | test error (est.) | training error (est.) "
          "| training loss (est.) | test loss (est.) | warnings |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k, alphas in (
        (4, (3.0, 4.0, 4.4, 4.5, stars[4], 5.0, 6.5)),
        (5, (0.5, 1.5, 3.0, stars[5], 7.0, 8.0)),
        (6, (3.0, 6.0)),
    ):
        for alpha in alphas:
            print(_point(k, alpha), flush=True)


def cost() -> None:
    """The table of ``--cost``."""
    _point(5, 7.0)  # warm-up
    print("| K | alpha | wall (s) | CPU (s) | iterations | rule | test error (est.) "
          "| training error (est.) | training loss (est.) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for k, alpha in ((5, 7.0), (5, 3.0), (6, 3.0), (4, 4.5)):
        mix = gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=k)
        t0, c0 = time.perf_counter(), time.process_time()
        r = gm.solve(mix, "cross-entropy", lam=LAM, alpha=alpha)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        e = r.integration_errors
        rule = r.params["quadrature"].split(";")[0]
        print(f"| {k} | {alpha:g} | {dt:.2f} | {dc:.2f} | {r.n_iter} | {rule}) | "
              f"{r.test_error:.10f} ({e['test_error']:.1e}) | "
              f"{r.train_error:.10f} ({e['train_error']:.1e}) | "
              f"{r.train_loss:.10f} ({e['train_loss']:.1e}) |", flush=True)  # fmt: skip
    mix = gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=5)
    t0, c0 = time.perf_counter(), time.process_time()
    df = gm.learning_curve(mix, "cross-entropy", np.linspace(0.5, 8.0, 40), lam=LAM)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"\nK = 5 curve, 40 alphas in [0.5, 8]: wall {dt:.1f} s, CPU {dc:.1f} s, largest "
        f"integration error {df['integration_error'].max():.1e}"
    )


def cold() -> None:
    """The table of ``--cold``."""
    from gaussmix.theory.channel import normaliser

    integrals, count = normaliser.normaliser_integrals, [0, 0]

    def counted(*args, **kwargs):
        count[0] += 1
        try:
            return integrals(*args, **kwargs)
        except FloatingPointError:
            count[1] += 1
            raise

    normaliser.normaliser_integrals = counted
    grid = np.linspace(0.5, 8.0, 40)
    print("| K | alpha | CPU (s) | iterations | evaluations (refused) | largest estimate "
          "| warnings |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for k, idx in ((5, range(40)), (4, (18, 20, 21, 22, 24)), (6, (20, 21, 22, 24, 26))):
        mix = gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=k)
        for i in idx:
            count[:] = [0, 0]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                c0 = time.process_time()
                r = gm.solve(mix, "cross-entropy", lam=LAM, alpha=grid[i])
                dc = time.process_time() - c0
            e = r.integration_errors
            worst = max(e[x] for x in ("test_error", "train_error", "train_loss"))
            print(f"| {k} | {grid[i]:.4f} | {dc:.2f} | {r.n_iter} | {count[0]} ({count[1]}) "
                  f"| {worst:.1e} | {len(caught)} |", flush=True)  # fmt: skip
    normaliser.normaliser_integrals = integrals


def main() -> None:
    args = set(sys.argv[1:]) or {"--moments", "--points"}
    print(machine_line())
    print(f"load average before: {os.getloadavg()}\n")
    if "--moments" in args:
        moments()
        print()
    if "--points" in args:
        points()
    if "--curve" in args:
        print(curve_line(5))
    if "--cost" in args:
        cost()
    if "--cold" in args:
        cold()
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
