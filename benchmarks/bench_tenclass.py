"""Benchmark of the ten-class real-data theory (issue 20, item 3): MNIST ``ten-class``,
the cross-entropy loss with ridge, the dense prior at effective output dimension L = 9.

Run:  python benchmarks/bench_tenclass.py [--pool 1] [--alphas 2] [--estimate-error] [--plain]
      [--double] [--phases]

``--pool 1`` is pixels (d = 784, 719 of them not constant: the prior's matrix is
(9 x 719)^2); ``--pool 4`` the 7 x 7 block means of the tests (d = 49).  Prints one evaluation
of the dense prior alone, then, per alpha (each solve warm-started from the last), the fixed
point's iterations, its wall time and the test error, the whole curve's time and the peak
resident memory of the process.  ``--plain`` iterates the map without its mean-field Newton
step (:func:`gaussmix.theory.solve.bias.mean_bias_step`), as before it: the same fixed
points,
for the before / after of BENCHMARKS.md; ``--double`` without the single-precision first
phase (:func:`gaussmix.theory.solve.refinement.run_fixed_point`), likewise.
``--phases`` adds, per alpha, where its CPU time went: the dense prior's evaluations in
single and in double precision (count and CPU seconds) and the rest (the channel, the
observables, the iteration).
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings

import numpy as np
from _timing import machine_line

import gaussmix as gm
from gaussmix.data import AveragePooling, load_dataset
from gaussmix.studies import prepare_realdata
from gaussmix.theory.numerics import tolerances
from gaussmix.theory.prior import prior as prior_module
from gaussmix.theory.prior.dense import dense_ridge_terms
from gaussmix.theory.solve import fixed_point

warnings.simplefilter("ignore", gm.IntegrationWarning)

#: CPU seconds and calls of the dense prior, by precision (``--phases``)
PRIOR_CPU: dict[bool, list[float]] = {False: [], True: []}


def _timed_prior(*args, **kwargs):
    """:func:`dense_ridge_terms` as the prior calls it, its CPU time recorded."""
    t = time.process_time()
    out = dense_ridge_terms(*args, **kwargs)
    PRIOR_CPU[bool(kwargs.get("single", False))].append(time.process_time() - t)
    return out


def _phases(cpu: float) -> str:
    """The dense prior's share of ``cpu`` seconds, by precision, and the rest."""
    parts = [
        f"{len(PRIOR_CPU[s])} {name} priors {sum(PRIOR_CPU[s]):.1f} s"
        for s, name in ((True, "single"), (False, "double"))
    ]
    rest = cpu - sum(map(sum, PRIOR_CPU.values()))
    return "; ".join(parts) + f"; the rest {rest:.1f} s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool", type=int, default=1)
    ap.add_argument("--alphas", default="2")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--estimate-error", action="store_true")
    ap.add_argument("--plain", action="store_true", help="without the mean-field Newton step")
    ap.add_argument("--double", action="store_true", help="without the float32 first phase")
    ap.add_argument("--phases", action="store_true", help="where each alpha's CPU time goes")
    args = ap.parse_args()
    if args.phases:
        prior_module.dense_ridge_terms = _timed_prior
    if args.double:
        tolerances.SINGLE_PHASE_MIN_N = 10**9
    if args.plain:
        fixed_point.mean_bias_step = lambda *_: None
    print(machine_line(), flush=True)
    fmap = AveragePooling(args.pool) if args.pool > 1 else None
    t = time.perf_counter()
    problem = prepare_realdata(load_dataset("mnist", "ten-class"), feature_map=fmap)
    cov = problem.mixture.covariance
    print(
        f"prepare (load + fit): {time.perf_counter() - t:.1f} s; d = {problem.d}, "
        f"active axes r = {int(np.sum(cov.active))}",
        flush=True,
    )
    K, L = 10, 9
    rng = np.random.default_rng(0)
    hat = np.array([np.eye(L) + 0.1 * np.ones((L, L)) for _ in range(K)])
    t = time.perf_counter()
    dense_ridge_terms(cov, args.lam, hat, rng.standard_normal((K, L)), hat)
    print(f"one dense prior evaluation (L = {L}): {time.perf_counter() - t:.1f} s", flush=True)
    options = gm.SolverOptions(estimate_error=args.estimate_error)
    init = None
    start, cpu, iterations = time.perf_counter(), time.process_time(), 0
    for alpha in (float(a) for a in args.alphas.split(",")):
        for calls in PRIOR_CPU.values():
            calls.clear()
        t, c = time.perf_counter(), time.process_time()
        r = gm.solve(
            problem.mixture, "cross-entropy", lam=args.lam, alpha=alpha, options=options, init=init
        )
        init = r
        iterations += r.n_iter
        print(
            f"alpha = {alpha:g}: {r.n_iter} iterations, {time.perf_counter() - t:.1f} s "
            f"({time.process_time() - c:.1f} s of CPU), "
            f"test error {r.test_error:.12f}, success {r.success}",
            flush=True,
        )
        if args.phases:
            print(f"  phases (CPU): {_phases(time.process_time() - c)}", flush=True)
    print(
        f"curve: {time.perf_counter() - start:.1f} s ({time.process_time() - cpu:.1f} s of "
        f"CPU), {iterations} iterations "
        "(one prior evaluation each, and one for the cold start)",
        flush=True,
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak resident memory: {peak:.2f} GiB")


if __name__ == "__main__":
    main()
