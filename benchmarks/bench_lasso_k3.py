"""One K = 3 lasso point over random problems (issue 32, item 5: at most 0.3 s in process).

A seeded sample of K = 3 problems with one-hot labels and the lasso (``penalty='l1'``):
the loss cross-entropy or square (one half each), lambda log-uniform in [1e-3, 10], alpha
log-uniform in [0.05, 8], the cluster variance Delta log-uniform in [0.1, 2], cluster priors
balanced or unequal (one half each, Dirichlet(1, 1, 1) floored at 0.05), and the mixture
one of the registered models that serve K = 3 and the lasso: ``isotropic`` (simplex or
Gaussian means), ``block`` (two blocks of directions with variances Delta and Delta / 4)
and ``spectral`` (an empirical law over 16 directions).  Each point is solved cold with
the default options (its integration-error estimate included) and timed in CPU time
(``time.process_time``: one thread, steadier on a shared machine), after one untimed
point that loads the caches.  Reported: median, 95th percentile and maximum per loss, the
slowest problems (with the iterations and the prior's panels they took), and with
``--profile N`` a cProfile of the N slowest.

``--phases`` times the slowest problems again without the error estimate and with one
refinement of the prior's rule, to show where their time goes.

Usage: ``python benchmarks/bench_lasso_k3.py [--n 40] [--seed 0] [--profile 0] [--phases]``
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
import warnings
from dataclasses import dataclass

import numpy as np
from _timing import machine_line

import gaussmix as gm

#: issue 32 item 5's target, seconds of CPU per point
TARGET = 0.3
LOSSES = ("cross-entropy", "square")
LAM_RANGE = (1e-3, 10.0)
ALPHA_RANGE = (0.05, 8.0)
DELTA_RANGE = (0.1, 2.0)
MODELS = ("isotropic-simplex", "isotropic-gaussian", "block", "spectral")
#: directions of the empirical (spectral) law
SPECTRAL_D = 16
RHO_FLOOR = 0.05
#: (lam, alpha) of the untimed warm-up points: the second reaches the channel's kernel of
#: small metrics (near the zero estimator)
WARM_UP = ((0.1, 2.0), (2.0, 0.5))
#: the options of ``--phases``: the solve without its error estimate, and with the estimate
#: but one refinement only (of the prior's rule: the channel of these problems needs none
#: or refines within it)
PHASES = {
    "solve only": gm.SolverOptions(estimate_error=False),
    "one refinement": gm.SolverOptions(max_refine=1),
}


@dataclass
class Problem:
    loss: str
    model: str
    lam: float
    alpha: float
    delta: float
    rho: tuple[float, ...] | None
    seed: int

    def mixture(self) -> gm.Mixture:
        rho = None if self.rho is None else np.asarray(self.rho)
        if self.model.startswith("isotropic"):
            means = self.model.split("-")[1]
            return gm.Mixture.isotropic(self.delta, means, n_clusters=3, rho=rho)
        if self.model == "block":
            return gm.Mixture.block(
                [0.5, 0.5],
                [self.delta, self.delta / 4],
                means="simplex",
                rho=rho,
                labels="onehot",
                n_clusters=3,
            )
        rng = np.random.default_rng(self.seed)
        sigma = self.delta * rng.uniform(0.25, 1.0, size=(SPECTRAL_D, 3))
        return gm.Mixture.spectral(sigma, rng.normal(size=(SPECTRAL_D, 3)), rho=rho)

    def solve(self, options: gm.SolverOptions | None = None) -> gm.FixedPointResult:
        kw = dict(lam=self.lam, alpha=self.alpha, penalty="l1", options=options)
        return gm.solve(self.mixture(), self.loss, **kw)

    def label(self) -> str:
        rho = "balanced" if self.rho is None else "rho=" + ",".join(f"{r:.2f}" for r in self.rho)
        return (
            f"{self.loss}, {self.model}, lam={self.lam:.3g}, alpha={self.alpha:.3g}, "
            f"Delta={self.delta:.3g}, {rho}"
        )


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def sample(n: int, seed: int) -> list[Problem]:
    """``n`` problems drawn from the ranges of the module docstring."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        rho = None
        if rng.random() < 0.5:
            r = np.maximum(rng.dirichlet(np.ones(3)), RHO_FLOOR)
            rho = tuple(float(x) for x in r / r.sum())
        out.append(
            Problem(
                loss=LOSSES[i % 2],
                model=MODELS[int(rng.integers(len(MODELS)))],
                lam=_log_uniform(rng, *LAM_RANGE),
                alpha=_log_uniform(rng, *ALPHA_RANGE),
                delta=_log_uniform(rng, *DELTA_RANGE),
                rho=rho,
                seed=int(rng.integers(2**31)),
            )
        )
    return out


def _ok(r) -> bool:
    return isinstance(r, gm.FixedPointResult) and bool(r.success)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40, help="problems sampled")
    ap.add_argument("--seed", type=int, default=0, help="seed of the sample")
    ap.add_argument("--profile", type=int, default=0, help="profile the N slowest problems")
    ap.add_argument("--slowest", type=int, default=5, help="list the N slowest problems")
    ap.add_argument("--verbose", action="store_true", help="print each point's time")
    ap.add_argument(
        "--phases",
        action="store_true",
        help="time the slowest problems again without the error estimate and with one "
        "refinement of the prior's rule (where the time goes)",
    )
    args = ap.parse_args()
    warnings.simplefilter("ignore", gm.IntegrationWarning)
    print(machine_line())
    print(f"load average before: {os.getloadavg()}")
    problems = sample(args.n, args.seed)
    for loss in LOSSES:  # warm-up: imports and compiled kernels (each compiled on its first
        # use after a change of its source: 2-4 s that would count as one point's time)
        for lam, alpha in WARM_UP:
            Problem(loss, "isotropic-simplex", lam, alpha, 0.5, None, 0).solve()
    rows = []
    for p in problems:
        t0 = time.process_time()
        try:
            r = p.solve()
        except gm.ConvergenceError as exc:
            r = exc
        rows.append((time.process_time() - t0, p, r))
        if args.verbose:
            print(f"{rows[-1][0]:8.3f} s  {p.label()}", flush=True)
    print(f"\nK = 3 lasso points, {args.n} problems (seed {args.seed}), CPU s per point:\n")
    print("| loss | points | median | p95 | max | failed | target |")
    print("|---|---|---|---|---|---|---|")
    for loss in LOSSES + ("both",):
        ts = np.array([t for t, p, _ in rows if loss in ("both", p.loss)])
        bad = sum(not _ok(r) for _, p, r in rows if loss in ("both", p.loss))
        print(
            f"| {loss} | {ts.size} | {np.median(ts):.3f} | {np.percentile(ts, 95):.3f} | "
            f"{ts.max():.3f} | {bad} | {TARGET} |"
        )
    slow = sorted(rows, key=lambda x: -x[0])
    print("\nslowest:\n")
    print("| CPU s | problem | iterations | test error | integration error |")
    print("|---|---|---|---|---|")
    for t, p, r in slow[: args.slowest]:
        if not _ok(r):
            print(f"| {t:.3f} | {p.label()} | failed: {str(r)[:100]} | | |")
            continue
        print(
            f"| {t:.3f} | {p.label()} | {r.n_iter} | {r.test_error:.5f} | "
            f"{r.integration_error:.1e} |"
        )
    if args.phases:
        print("\nwhere the time goes (CPU s; the error estimate refines the prior's rule):\n")
        print("| problem | solve only | with one refinement | default |")
        print("|---|---|---|---|")
        for t, p, _ in slow[: args.slowest]:
            cost = []
            for opts in (PHASES["solve only"], PHASES["one refinement"]):
                t0 = time.process_time()
                try:
                    p.solve(opts)
                except gm.ConvergenceError:
                    pass
                cost.append(time.process_time() - t0)
            print(f"| {p.label()} | {cost[0]:.3f} | {cost[1]:.3f} | {t:.3f} |")
    for t, p, _ in slow[: args.profile]:
        print(f"\nprofile of {p.label()} ({t:.3f} s):")
        prof = cProfile.Profile()
        prof.runcall(p.solve)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
