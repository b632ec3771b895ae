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

``--means sampled``: ``--samples`` problems drawn (``--seed``) from the explorer's control
space as ``_explore_space.py`` draws it, the square loss with the ridge: Delta log-uniform
in [0.1, 2], the means' family (auto, simplex, gaussian), priors unequal (Dirichlet,
floored) one time in two, lambda log-uniform in [1e-4, 1e2], a 40-point alpha range in
[0.01, 100] (ratio at least 4); each drawn problem is solved for every K (its own priors
drawn for each K), at the library's default precision, and its ratio to its own K = 3
curve reported, then the median and largest ratio over the problems for each K.

Usage: ``python benchmarks/bench_square_k.py [--ks 3,4,5,6] [--repeats 3]
[--means simplex|gaussian|sampled] [--samples 8] [--seed 0]``
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _explore_space import draw
from _timing import machine_line, median_time

import gaussmix as gm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default="3,4,5,6", help="numbers of classes, comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each curve")
    ap.add_argument("--means", choices=("simplex", "gaussian", "sampled"), default="simplex")
    ap.add_argument("--samples", type=int, default=8, help="problems drawn (--means sampled)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the draws (--means sampled)")
    args = ap.parse_args()
    warnings.simplefilter("ignore", gm.IntegrationWarning)
    if args.means == "sampled":
        sampled(args)
        return
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


def _sampled_curve(state, K: int, seed: int):
    """The curve of the drawn explorer state ``state`` at ``K`` clusters: the square loss
    with the ridge at the library's precision; unequal priors (where drawn) redrawn for
    ``K`` as the sampler draws them (Dirichlet(1), floored at 0.02); antipodal means (drawn
    for two clusters only) become the simplex's, which is antipodal at K = 2."""
    from dataclasses import replace

    from _explore_space import RHO_FLOOR

    from gaussmix.explore.state import setup

    rho = None
    if state.rho is not None:
        p = np.random.default_rng([seed, K]).dirichlet(np.ones(K))
        p = np.maximum(p, RHO_FLOOR)
        rho = tuple(float(v) for v in p / p.sum())
    means = "simplex" if state.means == "antipodal" else state.means
    st = replace(
        state,
        n_clusters=K,
        means=means,
        rho=rho,
        loss="square",
        penalty="l2",
        precision="library",
    )
    point, values = setup(st)

    def curve():
        return gm.learning_curve(
            point.mixture,
            point.loss,
            values,
            lam=point.lam,
            **point.penalty_kw,
            **point.solve_kw,
        )

    return st, curve


def sampled(args: argparse.Namespace) -> None:
    """``--means sampled``: each drawn problem's curve for every K, and its ratio to its
    own K = 3 curve; then the median and the largest ratio of each K."""
    ks = [int(k) for k in args.ks.split(",")]
    rng = np.random.default_rng(args.seed)
    print(machine_line())
    print(f"means: sampled, {args.samples} problems, seed {args.seed}")
    print(f"load average before: {os.getloadavg()}")
    head = " | ".join(f"K = {k}" for k in ks)
    print(f"| # | problem (K = 3) | {head} |")
    print("|---|---|" + "---|" * len(ks))
    ratios: dict[int, list[float]] = {k: [] for k in ks}
    for i in range(args.samples):
        state = draw(rng)
        cells, base = [], None
        for K in ks:
            st, curve = _sampled_curve(state, K, args.seed * 1000 + i)
            t, df = median_time(curve, args.repeats, clock=time.process_time)
            base = t if base is None else base
            ratios[K].append(t / base)
            flag = "" if bool(df.converged.all()) else " (not converged)"
            cells.append(f"{t:.2f} s ({t / base:.1f}x, {df.integration_error.max():.0e}){flag}")
            if K == ks[0]:
                rho = "unequal rho" if st.rho is not None else "balanced"
                desc = (
                    f"{st.means}, Delta {st.delta[0]:g}, lam {st.lam:.3g}, {rho}, "
                    f"alpha {st.alpha_min:g}..{st.alpha_max:g}"
                )
        print(f"| {i} | {desc} | " + " | ".join(cells) + " |")
    med = " | ".join(f"{np.median(ratios[k]):.2f}x" for k in ks)
    top = " | ".join(f"{np.max(ratios[k]):.2f}x" for k in ks)
    print(f"| median ratio | | {med} |")
    print(f"| largest ratio | | {top} |")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
