"""The cost of a curve against one cold point of the same problem (issue 19, item 3), as an
interleaved A/B between two source trees.

Run::

    git archive 651c8e3 src | tar -x -C /tmp/base
    python benchmarks/bench_curves.py --baseline /tmp/base/src [--rounds 5] [--cases a,b]
    python benchmarks/bench_curves.py --carry-study
    python benchmarks/bench_curves.py --floor [--cases a,b]
    python benchmarks/bench_curves.py --count [--baseline /tmp/base/src] [--cases a,b]
    python benchmarks/bench_curves.py --grids N [--seed S] [--baseline /tmp/base/src]

For each case, a 20-point learning curve or lambda sweep (default solver options) and one
cold point of the same problem (``gm.solve`` inside the curve's range) are timed in a fresh
worker process with one BLAS thread (median CPU time of 5 points and of 3 curves, after a
warm-up of each).  With ``--baseline`` the workers alternate between that tree (A) and this
checkout (B), case after case, round after round, so that both see the same load of a shared
machine; the table gives, per side, the median over the rounds and the range (min-max) of
the cold point, the curve and their ratio, the curve's cost in cold points.  The load
average is printed before and after.

``--floor`` measures the least a curve can cost while every point is solved on its own
(point by point, the stacked solve of one-output curves switched off):
each case's curve over 20 *equal* parameters (the curve's own options, without the
continuation from a coarser rule), so that every point after the first starts at the exact
fixed point of its predecessor (the perfect predictor); a point then still pays its fixed
costs (one evaluation of its rule, the refined re-solve of its error estimate, the
observables at both rules, the free energy and sparsity, the result).  Their cost per point
in cold points ``f`` bounds the curve from below by ``1 + 19 f`` cold points.

``--count`` counts the work instead of timing it, deterministically (the same on any
load): the channel evaluations of the curve and of the cold point, and their
node-evaluations (integrated clusters times nodes of the rule, summed over evaluations), and
the curve's node-evaluations in cold points; with ``--baseline`` for both trees.

``--grids N`` counts, in the same way, the curves of the paper's sparse lasso example, of
the six cases and of ``N`` random grids (``benchmarks/_curve_grids.py``: mixture kind,
loss, penalty, lambda and alpha ranges, seed ``S``) against the median of their 20 points
solved cold (issue 31, item 5: at most 5 of them); with ``--baseline`` for both trees.

``--carry-study`` measures instead whether an integration-error estimate can be carried
along a curve: on 39 alphas in [0.2, 4] with coarse rules (so that the errors stand above
the fixed-point tolerance), each point's own estimate (refinement of its rule) against the
larger of the estimates at two points 5 or 10 apart that agree within a factor 10, as
anchors of a carried estimate would; the table gives the worst ratio over the points between
them (above 1: the carried estimate does not bound the point's error).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

#: case -> description
CASES = {
    "binary-logistic": "binary logistic, lam = 0.1, 20 alphas in [0.2, 4]",
    "ce3": "K = 3 cross-entropy, lam = 1, 20 alphas in [0.2, 4]",
    "ce3-lambda": "K = 3 cross-entropy, alpha = 2, 20 lambdas in [1e-3, 10]",
    "lasso-square": "lasso + square (sparse mixture), lam = 0.1, 20 alphas in [0.2, 4]",
    "lasso-logistic": "lasso + logistic (sparse mixture), lam = 0.1, 20 alphas in [0.2, 4]",
    "lasso-lambda": "lasso + logistic (sparse mixture), alpha = 1, 20 lambdas in [1e-2, 1]",
}


def _problem(case: str):
    """(point, curve) callables of a case."""
    import numpy as np

    import gaussmix as gm

    alphas = np.linspace(0.2, 4.0, 20)
    binary = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    mix3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    sparse = gm.Mixture.sparse(0.1, 0.1, 1.0)
    if case == "binary-logistic":
        return (
            lambda: gm.solve(binary, "logistic", lam=0.1, alpha=2.0),
            lambda: gm.learning_curve(binary, "logistic", alphas, lam=0.1),
        )
    if case == "ce3":
        return (
            lambda: gm.solve(mix3, "cross-entropy", lam=1.0, alpha=2.0),
            lambda: gm.learning_curve(mix3, "cross-entropy", alphas, lam=1.0),
        )
    if case == "ce3-lambda":
        lams = np.geomspace(1e-3, 10, 20)
        return (
            lambda: gm.solve(mix3, "cross-entropy", lam=0.1, alpha=2.0),
            lambda: gm.lambda_sweep(mix3, "cross-entropy", lams, alpha=2.0),
        )
    if case == "lasso-square":
        return (
            lambda: gm.solve(sparse, "square", lam=0.1, alpha=2.0, penalty="l1"),
            lambda: gm.learning_curve(sparse, "square", alphas, lam=0.1, penalty="l1"),
        )
    if case == "lasso-logistic":
        return (
            lambda: gm.solve(sparse, "logistic", lam=0.1, alpha=2.0, penalty="l1"),
            lambda: gm.learning_curve(sparse, "logistic", alphas, lam=0.1, penalty="l1"),
        )
    if case == "lasso-lambda":
        lams = np.geomspace(1e-2, 1.0, 20)
        return (
            lambda: gm.solve(sparse, "logistic", lam=0.1, alpha=1.0, penalty="l1"),
            lambda: gm.lambda_sweep(sparse, "logistic", lams, alpha=1.0, penalty="l1"),
        )
    raise ValueError(f"unknown case {case!r}")


def _equal_points(case: str, n: int):
    """The case's curve over ``n`` equal parameters (the middle of its range), without the
    continuation from a coarser rule (see the module's docstring, ``--floor``)."""
    import numpy as np

    import gaussmix as gm

    binary = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    mix3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    sparse = gm.Mixture.sparse(0.1, 0.1, 1.0)
    same = np.full(n, 2.0)
    kw = dict(continuation=False)
    if case == "binary-logistic":
        return gm.learning_curve(binary, "logistic", same, lam=0.1, **kw)
    if case == "ce3":
        return gm.learning_curve(mix3, "cross-entropy", same, lam=1.0, **kw)
    if case == "ce3-lambda":
        return gm.lambda_sweep(mix3, "cross-entropy", np.full(n, 0.1), alpha=2.0, **kw)
    if case == "lasso-square":
        return gm.learning_curve(sparse, "square", same, lam=0.1, penalty="l1", **kw)
    if case == "lasso-logistic":
        return gm.learning_curve(sparse, "logistic", same, lam=0.1, penalty="l1", **kw)
    if case == "lasso-lambda":
        lams = np.full(n, 0.1)
        return gm.lambda_sweep(sparse, "logistic", lams, alpha=1.0, penalty="l1", **kw)
    raise ValueError(f"unknown case {case!r}")


def floor_study(cases: list[str], repeats: int = 3) -> None:
    """The fixed cost of a curve point in cold points and the least curve it implies (see
    the module's docstring, ``--floor``)."""
    import warnings

    from _timing import median_time

    import gaussmix as gm
    from gaussmix.experiments import curves

    warnings.simplefilter("ignore", gm.IntegrationWarning)
    curves.stackable = lambda problem, opts: False  # point by point (not stacked)
    print(f"load average before: {os.getloadavg()}")
    print(
        "| case | cold point (ms) | point from the exact fixed point (ms) | in cold points |"
        " least 20-point curve (cold points) | iterations per point |"
    )
    print("|---|---|---|---|---|---|")
    for case in cases:
        point = _problem(case)[0]
        tp = median_time(point, 5, clock=time.process_time)[0]
        t1 = median_time(
            functools.partial(_equal_points, case, 1), repeats, clock=time.process_time
        )[0]
        t20, df = median_time(
            functools.partial(_equal_points, case, 20), repeats, clock=time.process_time
        )
        per = (t20 - t1) / 19
        print(
            f"| {CASES[case]} | {tp * 1e3:.1f} | {per * 1e3:.2f} | {per / tp:.2f} | "
            f"{1 + 19 * per / tp:.1f} | {df.n_iter.iloc[1:].mean():.1f} |"
        )
    print(f"load average after: {os.getloadavg()}")


def _worker(case: str) -> None:
    import warnings

    from _timing import median_time

    import gaussmix as gm

    warnings.simplefilter("ignore", gm.IntegrationWarning)
    point, curve = _problem(case)
    tp = median_time(point, 5, clock=time.process_time)[0]
    tc = median_time(curve, 3, clock=time.process_time)[0]
    print(json.dumps({"point": tp, "curve": tc}))


#: the modules that call the channel by name (this tree's, and those of older trees: the
#: first that imports defines ``channel_evaluation``)
_EVALUATING_MODULES = (
    "gaussmix.theory.channel.channel",
    "gaussmix.theory.channel",
    "gaussmix.theory.solve.fixed_point",
    "gaussmix.theory.fixed_point",
    "gaussmix.theory.solve.batch",
    "gaussmix.experiments.batched",
)


def _module(name: str):
    """The module ``name``, or None where the tree has no such module."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _count_worker(case: str) -> None:
    """The channel evaluations and node-evaluations of the case's curve and cold point
    (``--count``), as JSON."""
    import warnings

    import gaussmix as gm

    warnings.simplefilter("ignore", gm.IntegrationWarning)
    log: list[tuple[int, int]] = []
    modules = [m for m in map(_module, _EVALUATING_MODULES) if m is not None]
    evaluate = next(m.channel_evaluation for m in modules if hasattr(m, "channel_evaluation"))

    def counted(loss, y, M, b, Q, V, rule, warm=None):
        nodes = getattr(rule, "weights", None)
        log.append((M.shape[0], 0 if nodes is None else nodes.size))
        return evaluate(loss, y, M, b, Q, V, rule, warm)

    for module in modules:  # (those of the tree: a baseline may be older)
        if hasattr(module, "channel_evaluation"):
            module.channel_evaluation = counted
    out = {}
    for name, run in zip(("point", "curve"), _problem(case)):
        log.clear()
        run()
        out[name] = [len(log), sum(k * n for k, n in log)]
    print(json.dumps(out))


def count_study(sides: dict, cases: list[str]) -> None:
    """The table of ``--count`` (see the module's docstring)."""
    print("| case | side | curve: evaluations / node-evaluations | cold point | in cold points |")
    print("|---|---|---|---|---|")
    for case in cases:
        for side, src in sides.items():
            r = _run(src, case, "--count-worker")
            (pe, pn), (ce, cn) = r["point"], r["curve"]
            nodes = [f"{n:,}".replace(",", " ") for n in (cn, pn)]
            print(
                f"| {CASES[case]} | {side} | {ce} / {nodes[0]} | {pe} / {nodes[1]} | "
                f"{cn / pn:.2f} |"
            )


def _grids_worker(spec: str) -> None:
    """The counted cost of the grids ``spec`` (``n,seed``) as JSON lines."""
    import _curve_grids as cg

    n, seed = (int(x) for x in spec.split(","))
    for grid in cg.EXAMPLES + tuple(cg.random_grids(n, seed)):
        c = cg.cost(grid)
        row = dict(
            name=grid.name,
            grid=grid.describe(),
            curve=c.curve,
            curve_failed=c.curve_failed,
            cold=c.cold,
            cold_failed=c.cold_failed,
        )
        print(json.dumps(row), flush=True)


def grids_study(sides: dict, n: int, seed: int) -> None:
    """The table of ``--grids`` (see the module's docstring)."""
    print(
        "| grid | side | curve evaluations (failed points) | cold points: median (min-max),"
        " failed | curve in median cold points |"
    )
    print("|---|---|---|---|---|")
    runs = {side: _run_lines(src, f"{n},{seed}", "--grids-worker") for side, src in sides.items()}
    for rows in zip(*runs.values()):
        for side, r in zip(sides, rows):
            med = statistics.median(r["cold"])
            print(
                f"| {r['name']}: {r['grid']} | {side} | {r['curve']} ({r['curve_failed']}) | "
                f"{med:g} ({min(r['cold'])}-{max(r['cold'])}), {len(r['cold_failed'])} | "
                f"{r['curve'] / max(med, 1):.1f} |"
            )


def carry_study() -> None:
    """The worst ratio of a point's own integration-error estimate to the larger estimate
    of two agreeing anchors around it (see the module's docstring)."""
    import warnings

    import numpy as np

    import gaussmix as gm
    from gaussmix.theory.numerics.quadrature import GaussHermite

    warnings.simplefilter("ignore")
    keys = ("test_error", "train_error", "train_loss")
    binary = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    mix3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    sparse = gm.Mixture.sparse(0.1, 0.1, 1.0)
    opts = dict(tol=1e-10, quad_tol=1.0, max_refine=1)
    cases = []
    for n in (8, 12, 16, 24):
        rule = GaussHermite(n, 1)
        for lam in (0.1, 0.01):
            cases.append(
                (f"binary logistic, lam = {lam}, GH({n})", binary, "logistic", lam, "l2", rule)
            )
        cases.append((f"lasso logistic, lam = 0.1, GH({n})", sparse, "logistic", 0.1, "l1", rule))
    for n in (4, 6, 8):
        cases.append(
            (
                f"K = 3 cross-entropy, lam = 1, GH({n}, 2)",
                mix3,
                "cross-entropy",
                1.0,
                "l2",
                GaussHermite(n, 2),
            )
        )
    alphas = np.linspace(0.2, 4.0, 39)
    print("| case | own estimates | worst own / carried |")
    print("|---|---|---|")
    for name, mix, loss, lam, penalty, rule in cases:
        errs = np.array(
            [
                [
                    gm.solve(
                        mix, loss, lam=lam, alpha=a, penalty=penalty, quadrature=rule, **opts
                    ).integration_errors[k]
                    for k in keys
                ]
                for a in alphas
            ]
        )
        worst = 0.0
        for gap in (5, 10):
            for i in range(len(alphas) - gap):
                lo, hi = np.minimum(errs[i], errs[i + gap]), np.maximum(errs[i], errs[i + gap])
                if np.all(hi <= 10 * np.maximum(lo, 1e-11)):
                    inner = errs[i + 1 : i + gap] / np.maximum(hi, 1e-300)
                    worst = max(worst, float(inner.max()))
        print(f"| {name} | {errs.min():.1e} to {errs.max():.1e} | {worst:.2f} |")


def _run(src: Path, case: str, worker: str = "--worker") -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, __file__, worker, case],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _run_lines(src: Path, arg: str, worker: str) -> list[dict]:
    """A worker's JSON lines (one per case)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, __file__, worker, arg],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def _spread(xs: list[float], scale: float = 1.0, fmt: str = "{:.0f}") -> str:
    med = fmt.format(statistics.median(xs) * scale)
    return f"{med} ({fmt.format(min(xs) * scale)}-{fmt.format(max(xs) * scale)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, help="src directory of the tree to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--carry-study", action="store_true", help="see the module's docstring")
    ap.add_argument("--floor", action="store_true", help="see the module's docstring")
    ap.add_argument("--count", action="store_true", help="see the module's docstring")
    ap.add_argument("--grids", type=int, help="see the module's docstring")
    ap.add_argument("--seed", type=int, default=0, help="the random grids' seed (--grids)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--grids-worker", help=argparse.SUPPRESS)
    ap.add_argument("--count-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args.worker)
        return
    if args.count_worker:
        _count_worker(args.count_worker)
        return
    if args.grids_worker:
        _grids_worker(args.grids_worker)
        return
    if args.carry_study:
        carry_study()
        return
    if args.floor:
        cases = args.cases.split(",")
        unknown = [c for c in cases if c not in CASES]
        if unknown:
            ap.error(
                f"--cases: unknown case(s) {', '.join(unknown)}; expected some of {list(CASES)}"
            )
        floor_study(cases)
        return
    sides = {"B (this checkout)": SRC}
    if args.baseline is not None:
        sides = {"A (baseline)": args.baseline.resolve(), **sides}
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"--cases: unknown case(s) {', '.join(unknown)}; expected some of {list(CASES)}")
    if args.count:
        count_study(sides, cases)
        return
    if args.grids is not None:
        grids_study(sides, args.grids, args.seed)
        return
    print(f"load average before: {os.getloadavg()}")
    runs: dict = {(c, s): [] for c in cases for s in sides}
    for _ in range(args.rounds):
        for case in cases:
            for side, src in sides.items():
                runs[case, side].append(_run(src, case))
    print(f"load average after: {os.getloadavg()}")
    print()
    print("| case | side | cold point (ms) | 20-point curve (ms) | curve / point |")
    print("|---|---|---|---|---|")
    for case in cases:
        for side in sides:
            r = runs[case, side]
            tp = [x["point"] for x in r]
            tc = [x["curve"] for x in r]
            ratio = [x["curve"] / x["point"] for x in r]
            print(
                f"| {CASES[case]} | {side} | {_spread(tp, 1e3, '{:.1f}')} | "
                f"{_spread(tc, 1e3)} | {_spread(ratio, fmt='{:.1f}')} |"
            )


if __name__ == "__main__":
    main()
