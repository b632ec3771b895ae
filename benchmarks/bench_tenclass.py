"""Benchmark of the ten-class real-data theory (issue 20, item 3; issue 32, item 4): MNIST
``ten-class``, or scikit-learn's digits with ``--digits``, the cross-entropy loss with ridge,
the dense prior at effective output dimension L = 9.

Run:  python benchmarks/bench_tenclass.py [--pool 1] [--alphas 2] [--estimate-error] [--plain]
      [--double] [--phases] [--trace] [--project] [--spectrum 40] [--chain]
      [--digits [--repeats 3] [--erm]]

``--pool 1`` is pixels (d = 784, 719 of them not constant: the prior's matrix is
(9 x 719)^2); ``--pool 4`` the 7 x 7 block means of the tests (d = 49).  Prints one evaluation
of the dense prior alone, then, per alpha of the curve (``gm.learning_curve``: each alpha
from the state predicted through the last ones; the curve drops a point's secant pairs
after it where it carries no rule, as here, so each alpha's iteration starts without
them; ``--chain``: ``gm.solve`` from the last alpha's fixed point alone, as this
benchmark did before), the fixed point's iterations, its dense prior evaluations in
single and in double precision (those of the first phase's prior on the covariances'
leading axes apart, :mod:`gaussmix.theory.solve.coarse_axes`), its wall and CPU time and
the test error; the whole
curve's time and evaluations and the peak resident memory of the process.  ``--plain``
iterates the map without its mean-field Newton step
(:func:`gaussmix.theory.solve.bias.mean_bias_step`), as before it: the same fixed points,
for the before / after of BENCHMARKS.md; ``--double`` without the single-precision first
phase (:func:`gaussmix.theory.solve.batch_solve.run_points`), likewise.
``--phases`` adds, per alpha, where its CPU time went: the dense prior's evaluations in
single and in double precision (count and CPU seconds), the channel's evaluations, the test
error's orthants, the training error (its orthants and proximal points) and the rest (the
iteration, the bias steps, the Python of the map).  ``--trace`` adds, per alpha, each evaluation
of the fixed-point iteration in order: its precision (``s`` float32, ``D`` double; ``c`` /
``C`` the prior on the leading axes, whose corrected runs' residuals are the corrected
map's) and the scaled residual the iteration measured there.  ``--spectrum m`` (after the
curve) runs ``m`` steps of Arnoldi's method on the Jacobian of the last alpha's
double-precision map at its fixed point (finite-difference products, in the state's
coordinates scaled by ``max(|x_i|, 1e-3)``) and prints the largest Ritz values: where
they fill a disc about the origin of radius ``rho``, no method that mixes the map's past
evaluations (Anderson, a Krylov solver of ``(I - J) dx = r``) contracts much faster than
``rho`` an evaluation.

``--project`` adds, per alpha and for the curve, the time the counted evaluations would take
at d = 784 on two free cores (issue 32, item 4: the five-alpha curve within 5 minutes), by
the formula ``7.2 n_s + 14.6 n_D + 0.94 n_c + 1.8 n_C + rest``: ``n_s`` / ``n_D`` the full
prior's float32 / double evaluations, ``n_c`` / ``n_C`` the coarse prior's (on the leading
axes), their costs (:data:`PROJECTED_COST`) measured at d = 784 (the full prior on two BLAS
threads on the idle machine; the coarse one, 352 of 717 axes, at its one-thread ratio to the
full one), and ``rest`` this run's CPU outside the dense prior (the channel, the
observables, the iteration: independent of d).  At d = 196 (``--pool 2``) that is the
projection of d = 784 by d = 196's counts, which the docs' history quotes.

``--digits``: the ten classes of scikit-learn's digits (``gm.Mixture.from_data(X / 16, y)``,
d = 64, 61 pixels with variance: the prior's matrix is 549 x 549), ``lam = 1`` and alpha = 1
unless given; each alpha is solved cold ``--repeats`` times (the median CPU time printed;
``--phases`` splits the last solve), and ``--erm`` adds the CPU time of one exact-ERM seed of
the same mixture at its own dimension (``gm.simulate(..., d=64, seeds=1)``, the median of
``--repeats``): issue 32's target is the theory ten times faster than that seed.  On MNIST
``--erm`` adds, after the curve, one exact-ERM seed of the fitted mixture at each alpha at the
curve's own d (``gm.simulate(..., d=d, seeds=1)``: n = alpha d samples drawn and one fit), its
CPU and wall time and the theory's CPU at that alpha over it.
"""

from __future__ import annotations

import argparse
import resource
import statistics
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
from gaussmix.theory.solve import batch_solve, coarse_axes, fixed_point, iteration, refinement

warnings.simplefilter("ignore", gm.IntegrationWarning)

#: CPU seconds and calls of the dense prior, by precision (``--phases``)
PRIOR_CPU: dict[bool, list[float]] = {False: [], True: []}
#: CPU seconds of the other timed parts (``--phases``), by name: (module, function)
PARTS = {
    "channel": (fixed_point, "channel_evaluation"),
    "test-error orthants": (refinement, "test_accuracy"),
    "training error": (refinement, "train_accuracy"),
}
PART_CPU: dict[str, list[float]] = {name: [] for name in PARTS}


#: the dense prior's evaluations of the current alpha and of the curve, by precision
POINT_EVALS: dict[bool, list[float]] = {False: [], True: []}
EVALUATIONS: dict[bool, list[float]] = {False: [], True: []}
CURVE_COARSE: dict[bool, list[float]] = {False: [], True: []}


#: ``--project``: seconds an evaluation of the dense prior takes at d = 784 (n = 6453) on two
#: free cores, by kind (``s`` / ``D`` the full prior in float32 / double, ``c`` / ``C`` the
#: coarse prior on the leading axes): the full prior on two BLAS threads on the idle machine
#: (docs' history, *Ten classes (issue 20, item 3)*), the coarse one at its one-thread ratio
#: to it (0.13 / 0.12, *The MNIST ten-class curve on the covariances' leading axes*)
PROJECTED_COST = {"s": 7.2, "D": 14.6, "c": 0.94, "C": 1.8}


def _projected(counts: dict[str, int], rest: float) -> float:
    """``--project``: seconds at d = 784 on two free cores of ``counts`` dense prior
    evaluations by kind (:data:`PROJECTED_COST`) and ``rest`` seconds of the other work."""
    return sum(PROJECTED_COST[k] * n for k, n in counts.items()) + rest


#: ``--project``: the curve's evaluations by kind and its CPU seconds outside the dense prior
CURVE_PROJECTION: dict[str, float] = dict.fromkeys(("s", "D", "c", "C", "rest"), 0.0)


#: the active axes of the problem's own covariance (a prior on fewer is the coarse phase's,
#: :mod:`gaussmix.theory.solve.coarse_axes`)
FULL_AXES: list[int] = []
#: CPU seconds of the coarse phase's priors (on the covariances' leading axes), by precision
COARSE_CPU: dict[bool, list[float]] = {False: [], True: []}
COARSE_EVALS: dict[bool, list[float]] = {False: [], True: []}


def _timed_prior(cov, *args, **kwargs):
    """:func:`dense_ridge_terms` as the prior calls it, its CPU time recorded (by precision,
    and apart where it runs on the coarse phase's leading axes)."""
    t = time.process_time()
    out = dense_ridge_terms(cov, *args, **kwargs)
    single = bool(kwargs.get("single", False))
    cpu = time.process_time() - t
    if FULL_AXES and int(np.count_nonzero(cov.active)) < FULL_AXES[0]:
        PRECISIONS.append("c" if single else "C")
        COARSE_CPU[single].append(cpu)
        COARSE_EVALS[single].append(cpu)
        return out
    PRECISIONS.append("s" if single else "D")
    PRIOR_CPU[single].append(cpu)
    POINT_EVALS[single].append(cpu)
    return out


#: ``--trace``: the precision of each dense prior evaluation, and each evaluation of the
#: fixed-point iteration as (the precision of the last prior, its scaled residual)
PRECISIONS: list[str] = []
TRACE: list[tuple[str, float]] = []
ALPHA_CPU: list[float] = []  # each alpha's CPU seconds, in order (``--erm`` on MNIST)
#: ``--spectrum``: the map and state of the last fixed-point run (the double-precision one)
LAST_RUN: dict = {}


def _traced_iterate(T, *args, callback=None, **kwargs):
    """:func:`~gaussmix.theory.solve.iteration.iterate` as the fixed-point run calls it, each
    evaluation's precision and residual recorded in :data:`TRACE` (``--trace``) and the last
    double-precision map and its returned state in :data:`LAST_RUN` (``--spectrum``)."""

    def on_evaluation(i: int, residual: float) -> None:
        TRACE.append((PRECISIONS[-1] if PRECISIONS else "?", residual))
        if callback is not None:
            callback(i, residual)

    out = iteration.iterate(T, *args, callback=on_evaluation, **kwargs)
    if isinstance(T, fixed_point.FixedPointMap) and not T.single:  # (not a corrected map)
        LAST_RUN.update(T=T, x=out.x)
    return out


def _spectrum(steps: int) -> None:
    """``--spectrum``: Arnoldi's method on the Jacobian of :data:`LAST_RUN`'s map at its state
    (module docstring), the largest Ritz values printed every ten steps."""
    T, x = LAST_RUN["T"], LAST_RUN["x"]
    gx = T(x)
    scale = np.maximum(np.abs(x), 1e-3)
    print(
        f"spectrum: {x.size} unknowns, scaled residual at the state "
        f"{np.max(np.abs(gx - x) / scale):.1e}",
        flush=True,
    )
    basis = np.zeros((x.size, steps + 1))
    H = np.zeros((steps + 1, steps))
    v = np.random.default_rng(0).standard_normal(x.size)
    basis[:, 0] = v / np.linalg.norm(v)
    for j in range(steps):
        v = basis[:, j]
        h = 1e-6 / np.max(np.abs(v))  # (a forward difference, 1e-6 of each unknown's scale)
        w = (T(x + h * v * scale) - gx) / (h * scale)
        for _ in range(2):  # (Gram-Schmidt twice)
            c = basis[:, : j + 1].T @ w
            H[: j + 1, j] += c
            w -= basis[:, : j + 1] @ c
        H[j + 1, j] = np.linalg.norm(w)
        basis[:, j + 1] = w / H[j + 1, j]
        if (j + 1) % 10 == 0 or j + 1 == steps:
            ritz = np.linalg.eigvals(H[: j + 1, : j + 1])
            ritz = ritz[np.argsort(-np.abs(ritz))][:10]
            print(
                f"  {j + 1} products: largest |Ritz values| "
                f"{' '.join(f'{abs(z):.3f}' for z in ritz)}; arguments (degrees) "
                f"{' '.join(f'{np.degrees(np.angle(z)):.0f}' for z in ritz)}",
                flush=True,
            )


def _timing(name: str, fn):
    """``fn`` with its CPU time recorded in ``PART_CPU[name]``."""

    def timed(*args, **kwargs):
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            PART_CPU[name].append(time.process_time() - t)

    return timed


def _time_phases() -> None:
    """Record the CPU time of :data:`PARTS` where the solver calls them (the names its
    modules look up)."""
    for name, (module, attr) in PARTS.items():
        setattr(module, attr, _timing(name, getattr(module, attr)))


def _clear_phases() -> None:
    for calls in (*PRIOR_CPU.values(), *COARSE_CPU.values(), *PART_CPU.values()):
        calls.clear()


def _phases(cpu: float) -> str:
    """The dense prior's share of ``cpu`` seconds, by precision, the other parts' and the
    rest."""
    parts = [
        f"{len(PRIOR_CPU[s])} {name} priors {sum(PRIOR_CPU[s]):.2f} s"
        for s, name in ((True, "single"), (False, "double"))
    ]
    parts += [
        f"{len(COARSE_CPU[s])} coarse {name} priors {sum(COARSE_CPU[s]):.2f} s"
        for s, name in ((True, "single"), (False, "double"))
        if COARSE_CPU[s]
    ]
    parts += [f"{len(v)} {name} {sum(v):.2f} s" for name, v in PART_CPU.items()]
    timed = sum(map(sum, (*PRIOR_CPU.values(), *COARSE_CPU.values(), *PART_CPU.values())))
    return "; ".join(parts) + f"; the rest {cpu - timed:.2f} s"


def _digits() -> gm.Mixture:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return gm.Mixture.from_data(X / 16, y)


def digits_main(args: argparse.Namespace) -> None:
    """``--digits``: each alpha solved cold ``--repeats`` times (module docstring)."""
    mix = _digits()
    lam = 1.0 if args.lam is None else args.lam
    options = gm.SolverOptions(estimate_error=args.estimate_error)
    for alpha in (float(a) for a in (args.alphas or "1").split(",")):
        cpu = []
        for _ in range(args.repeats):
            _clear_phases()
            c = time.process_time()
            r = gm.solve(mix, "cross-entropy", lam=lam, alpha=alpha, options=options)
            cpu.append(time.process_time() - c)
        print(
            f"digits, lam = {lam:g}, alpha = {alpha:g}: {r.n_iter} iterations, CPU "
            f"{statistics.median(cpu):.3f} s (median of {len(cpu)}: "
            f"{', '.join(f'{t:.3f}' for t in cpu)}), test error {r.test_error:.12f}, "
            f"success {r.success}",
            flush=True,
        )
        if args.phases:
            print(f"  phases (CPU, the last solve): {_phases(cpu[-1])}", flush=True)
        if args.erm:
            d, erm = mix.covariance.dim, []
            for _ in range(args.repeats):
                c = time.process_time()
                gm.simulate(mix, loss="cross-entropy", lam=lam, alpha=alpha, d=d, seeds=1)
                erm.append(time.process_time() - c)
            seed = statistics.median(erm)
            print(
                f"  one exact-ERM seed at d = {d}: {seed:.3f} s of CPU (median); "
                f"theory / ERM {statistics.median(cpu) / seed:.2f}",
                flush=True,
            )


def _point_line(
    alpha: float, r, wall: float, cpu: float, phases: bool, trace: bool, project: bool = False
) -> None:
    """One alpha's line: its iterations, dense prior evaluations by precision, times (and
    with ``project`` the time at d = 784 on two free cores, :func:`_projected`)."""
    coarse = (
        f" (and {len(COARSE_EVALS[True])} + {len(COARSE_EVALS[False])} on the leading axes)"
        if any(COARSE_EVALS.values())
        else ""
    )
    print(
        f"alpha = {alpha:g}: {r.n_iter} iterations, {len(POINT_EVALS[True])} single + "
        f"{len(POINT_EVALS[False])} double dense priors{coarse}, {wall:.1f} s ({cpu:.1f} s "
        f"of CPU), test error {r.test_error:.12f}, success {r.success}",
        flush=True,
    )
    if phases:
        print(f"  phases (CPU): {_phases(cpu)}", flush=True)
    if trace:
        print("  trace: " + " ".join(f"{p}{res:.1e}" for p, res in TRACE), flush=True)
    if project:
        counts = {
            "s": len(POINT_EVALS[True]),
            "D": len(POINT_EVALS[False]),
            "c": len(COARSE_EVALS[True]),
            "C": len(COARSE_EVALS[False]),
        }
        prior_cpu = sum(map(sum, (*POINT_EVALS.values(), *COARSE_EVALS.values())))
        rest = cpu - prior_cpu
        for kind, n in counts.items():
            CURVE_PROJECTION[kind] += n
        CURVE_PROJECTION["rest"] += rest
        print(
            f"  projected at d = 784 on two free cores: {_projected(counts, rest):.1f} s "
            f"({counts['s']} s + {counts['D']} D + {counts['c']} c + {counts['C']} C, "
            f"the rest {rest:.1f} s)",
            flush=True,
        )
    TRACE.clear()
    ALPHA_CPU.append(cpu)
    for single in (False, True):
        EVALUATIONS[single] += POINT_EVALS[single]
        POINT_EVALS[single].clear()
        CURVE_COARSE[single] += COARSE_EVALS[single]
        COARSE_EVALS[single].clear()
    _clear_phases()


def _curve(
    mixture, lam: float, alphas: list[float], options, phases: bool, trace: bool, project: bool
) -> list:
    """The curve as ``gm.learning_curve`` solves it (each alpha from the state predicted
    through the last points; no secant pairs carried, module docstring), one line per
    alpha."""
    clock = [time.perf_counter(), time.process_time()]

    def on_point(row, r) -> None:
        _point_line(
            row["alpha"],
            r,
            time.perf_counter() - clock[0],
            time.process_time() - clock[1],
            phases,
            trace,
            project,
        )
        clock[:] = [time.perf_counter(), time.process_time()]

    _clear_phases()
    table = gm.learning_curve(
        mixture, "cross-entropy", alphas, lam=lam, options=options, callback=on_point
    )
    return list(table.points)


def _chain(
    mixture, lam: float, alphas: list[float], options, phases: bool, trace: bool, project: bool
) -> list:
    """``--chain``: each alpha solved by ``gm.solve`` from the last alpha's fixed point (no
    predictor, no secant pairs carried: the benchmark before the curve's warm starts)."""
    init, results = None, []
    for alpha in alphas:
        _clear_phases()
        t, c = time.perf_counter(), time.process_time()
        r = gm.solve(mixture, "cross-entropy", lam=lam, alpha=alpha, options=options, init=init)
        init = r
        results.append(r)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        _point_line(alpha, r, wall, cpu, phases, trace, project)
    return results


def _erm_lines(mixture, lam: float, alphas: list[float]) -> None:
    """``--erm`` on MNIST: one exact-ERM seed of ``mixture`` at each alpha at its own d (the
    samples drawn and the fit, ``gm.simulate``), against the theory's CPU at that alpha."""
    d = mixture.covariance.dim
    for alpha, theory in zip(alphas, ALPHA_CPU, strict=True):
        t, c = time.perf_counter(), time.process_time()
        gm.simulate(mixture, loss="cross-entropy", lam=lam, alpha=alpha, d=d, seeds=1)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        print(
            f"alpha = {alpha:g}: one exact-ERM seed at d = {d} (n = {round(alpha * d)}): "
            f"{cpu:.1f} s of CPU ({wall:.1f} s); theory / ERM {theory / cpu:.2f}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool", type=int, default=1)
    ap.add_argument("--alphas", default=None, help="default 2 (MNIST), 1 (digits)")
    ap.add_argument("--lam", type=float, default=None, help="default 0.1 (MNIST), 1 (digits)")
    ap.add_argument("--estimate-error", action="store_true")
    ap.add_argument("--plain", action="store_true", help="without the mean-field Newton step")
    ap.add_argument("--double", action="store_true", help="without the float32 first phase")
    ap.add_argument("--phases", action="store_true", help="where each alpha's CPU time goes")
    ap.add_argument("--trace", action="store_true", help="each evaluation's residual")
    ap.add_argument("--project", action="store_true", help="the time at d = 784, 2 cores")
    ap.add_argument("--spectrum", type=int, default=0, help="Arnoldi steps at the last alpha")
    ap.add_argument("--digits", action="store_true", help="scikit-learn's digits (d = 64)")
    ap.add_argument("--repeats", type=int, default=3, help="solves per alpha (--digits)")
    ap.add_argument("--erm", action="store_true", help="one exact-ERM seed an alpha")
    ap.add_argument("--chain", action="store_true", help="gm.solve from the last alpha")
    args = ap.parse_args()
    prior_module.dense_ridge_terms = _timed_prior  # (counted always, cheap)
    if args.phases:
        _time_phases()
    if args.trace or args.spectrum:
        for module in (refinement, batch_solve, coarse_axes):
            module.iterate = _traced_iterate
    if args.double:
        tolerances.SINGLE_PHASE_MIN_N = 10**9
    if args.plain:
        fixed_point.mean_bias_step = lambda *_: None
    print(machine_line(), flush=True)
    if args.digits:
        digits_main(args)
        return
    args.lam = 0.1 if args.lam is None else args.lam
    fmap = AveragePooling(args.pool) if args.pool > 1 else None
    t = time.perf_counter()
    problem = prepare_realdata(load_dataset("mnist", "ten-class"), feature_map=fmap)
    cov = problem.mixture.covariance
    FULL_AXES.append(int(np.sum(cov.active)))
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
    alphas = [float(a) for a in (args.alphas or "2").split(",")]
    start, cpu = time.perf_counter(), time.process_time()
    run = _chain if args.chain else _curve
    flags = (args.phases, args.trace, args.project)
    results = run(problem.mixture, args.lam, alphas, options, *flags)
    print(
        f"curve: {time.perf_counter() - start:.1f} s ({time.process_time() - cpu:.1f} s of "
        f"CPU), {sum(r.n_iter for r in results)} iterations, "
        f"{sum(map(len, EVALUATIONS.values()))} dense prior evaluations "
        f"({len(EVALUATIONS[True])} single, {len(EVALUATIONS[False])} double; on the "
        f"leading axes {len(CURVE_COARSE[True])} single, {len(CURVE_COARSE[False])} double)",
        flush=True,
    )
    if args.project:
        counts = {k: int(CURVE_PROJECTION[k]) for k in ("s", "D", "c", "C")}
        total = _projected(counts, CURVE_PROJECTION["rest"])
        print(
            f"curve projected at d = 784 on two free cores: {total:.0f} s = {total / 60:.2f} "
            f"min (7.2 x {counts['s']} + 14.6 x {counts['D']} + 0.94 x {counts['c']} + 1.8 x "
            f"{counts['C']} + the rest {CURVE_PROJECTION['rest']:.1f} s)",
            flush=True,
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak resident memory: {peak:.2f} GiB")
    if args.erm:
        _erm_lines(problem.mixture, args.lam, alphas)
    if args.spectrum:
        _spectrum(args.spectrum)


if __name__ == "__main__":
    main()
