"""Benchmark of the integration-error estimate against the solve it checks (issue 32, item
4: the estimate costs at most as much as the solve, on every problem kind).

Run:  python benchmarks/bench_estimate.py [--repeats 5] [--cases binary,k3,k3small,k10,digits]
      [--erm] [--parts] [--evaluations] [--phases] [--seeds 10]

For each case, the CPU time (``time.process_time``, median over ``--repeats``, the solves
with and without the estimate interleaved) of ``gm.solve`` with ``estimate_error=False``
(the solve: fixed point and observables) and with the default estimate, their difference
over the solve (the estimate's cost in solves), the evaluations of the map and the
integration error.  Cases: binary logistic (lam = 0.1, alpha = 2), K = 3 cross-entropy
(lam = 1 and 0.01, alpha = 2), isotropic K = 10 cross-entropy (lam = 1e-2, alpha = 10: a
randomised rule on exchangeable clusters), and ten classes fitted from scikit-learn's
digits (d = 64, pixels / 16, lam = 1, alpha = 1: a randomised rule, the dense prior).
The ten-class MNIST estimate: ``benchmarks/bench_tenclass.py --estimate-error``.
``--erm`` adds, per case, the CPU time of one exact-ERM seed of the same mixture at its own
dimension (``gm.simulate(..., seeds=1)``; ``d = 64`` for digits, 200 for the isotropic
cases), the theory's target being ten times faster (issue 32, item 4).  ``--parts`` adds,
per case, where the CPU time of the solve and of the solve with its estimate goes (a
profile with the CPU clock, ``--repeats`` solves of each): the channel's evaluations
(``channel_evaluation``), the prior's (``prior_update``), the test error's orthants
(``test_accuracy``), the training error (``train_accuracy``, its proximal points and
orthants), the test loss (``gaussian_risk``) and the rest (the iteration, the Python of
the map and of the estimate); the profiler's own overhead falls mostly on the rest.
``--evaluations`` adds, per case, the channel evaluations of one solve without and one with
the estimate by the size of their rule (nodes x evaluations, their CPU time): which rules
the solve, the replicates and a refinement's re-solve evaluate, against ``n_iter``.
``--phases`` adds, per case, the node evaluations (nodes x calls of the channel) of one solve
with the estimate by the phase that made them (:data:`PHASES`: the solve, the replicates of
the rule it ends with, the tails of a refinement by tails, the refined rule's re-solve and
observables), with the CPU time of those channel calls and its share a node.
``--seeds N`` runs instead the isotropic K = 10 case over its rule's seeds ``0 .. N - 1``
(the estimate's cost in solves and in node evaluations per seed, and summed over them).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
import warnings
from functools import partial

from _timing import machine_line

import gaussmix as gm

warnings.simplefilter("ignore", gm.IntegrationWarning)


def _digits() -> gm.Mixture:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return gm.Mixture.from_data(X / 16, y)


def _isotropic(K: int) -> gm.Mixture:
    if K == 2:
        return gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    return gm.Mixture.isotropic(0.5, "gaussian", n_clusters=K)


#: name: (mixture, loss, lam, alpha)
CASES = {
    "binary": (lambda: _isotropic(2), "logistic", 0.1, 2.0),
    "k3": (lambda: _isotropic(3), "cross-entropy", 1.0, 2.0),
    "k3small": (lambda: _isotropic(3), "cross-entropy", 0.01, 2.0),
    "k10": (lambda: _isotropic(10), "cross-entropy", 1e-2, 10.0),
    "digits": (_digits, "cross-entropy", 1.0, 1.0),
}


#: the parts of ``--parts``: name, (the file's path ending, the function), none calling another
PARTS = {
    "channel": ("channel/channel.py", "channel_evaluation"),
    "prior": ("prior/prior.py", "prior_update"),
    "test-error orthants": ("solve/observables.py", "test_accuracy"),
    "training error": ("solve/observables.py", "train_accuracy"),
    "test loss": ("solve/observables.py", "gaussian_risk"),
}


def parts(solve, repeats: int) -> dict[str, float]:
    """CPU time per call of ``solve`` in each of :data:`PARTS` and in the rest (seconds),
    profiled with the CPU clock over ``repeats`` calls."""
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for _ in range(repeats):
        solve()
    prof.disable()
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, _)
    total = sum(tt for _, _, tt, _, _ in stats.values())
    out = {}
    for part, (path, name) in PARTS.items():
        out[part] = sum(
            ct for (f, _, n), (_, _, _, ct, _) in stats.items() if n == name and f.endswith(path)
        )
    out["rest"] = total - sum(out.values())
    return {k: v / repeats for k, v in out.items()}


def evaluations(solve) -> dict[int, tuple[int, float]]:
    """The channel evaluations of one call of ``solve`` by the number of nodes of their
    rule: ``{nodes: (evaluations, CPU seconds)}`` (a spy on the one map's channel)."""
    from gaussmix.theory.solve import fixed_point

    real = fixed_point.channel_evaluation
    seen: dict[int, tuple[int, float]] = {}

    def spy(*args, **kw):
        t = time.process_time()
        out = real(*args, **kw)
        n = args[6].weights.size  # (loss, y, m, b, Q, V, rule, warm)
        calls, cpu = seen.get(n, (0, 0.0))
        seen[n] = (calls + 1, cpu + time.process_time() - t)
        return out

    fixed_point.channel_evaluation = spy
    try:
        solve()
    finally:
        fixed_point.channel_evaluation = real
    return dict(sorted(seen.items()))


#: the phases of ``--phases``: the estimate's function on the call stack -> its name (the
#: first listed that is on the stack names the phase; none: the solve)
PHASES = {
    "_tail_start": "tails",
    "_replicate_values": "replicates",
    "estimate_randomised": "refined rule",
    "estimate_points": "refined rule",
}


def phases(solve) -> dict[str, tuple[int, int, float]]:
    """The channel evaluations of one call of ``solve`` by :data:`PHASES`: ``{phase: (node
    evaluations, calls, CPU seconds of those calls)}`` (a spy on the one map's channel,
    reading the call stack): whether a phase's evaluations cost what the solve's do a node."""
    from gaussmix.theory.solve import fixed_point

    real = fixed_point.channel_evaluation
    seen: dict[str, tuple[int, int, float]] = {}

    def spy(*args, **kw):
        frame, names = sys._getframe(1), set()
        while frame is not None:
            names.add(frame.f_code.co_name)
            frame = frame.f_back
        phase = next((PHASES[f] for f in PHASES if f in names), "solve")
        t = time.process_time()
        out = real(*args, **kw)
        nodes, calls, cpu = seen.get(phase, (0, 0, 0.0))
        seen[phase] = (nodes + args[6].weights.size, calls + 1, cpu + time.process_time() - t)
        return out

    fixed_point.channel_evaluation = spy
    try:
        solve()
    finally:
        fixed_point.channel_evaluation = real
    return seen


def seeds(n: int, repeats: int) -> None:
    """The isotropic K = 10 case (``k10``) over the seeds ``0 .. n - 1`` of its rule
    (``SobolRQMC(9, 11, 8, seed=s)``): per seed, the CPU medians over ``repeats`` of the
    solve and of the solve with its estimate (interleaved), the estimate's cost in solves
    and its node evaluations over the solve's (:func:`phases`); then the sums over the
    seeds: what the estimate costs a user over the randomisations, not at one of them."""
    from gaussmix.theory.numerics.quadrature import SobolRQMC

    make, loss, lam, alpha = CASES["k10"]
    mix = make()
    gm.solve(mix, loss, lam=lam, alpha=alpha)  # warm-up (compiled kernels, caches)
    print("| seed | solve (CPU) | with estimate | estimate / solve | nodes: estimate / solve |")
    print("|---|---|---|---|---|", flush=True)
    total = [0.0, 0.0, 0, 0]
    for seed in range(n):
        kw = dict(lam=lam, alpha=alpha, quadrature=SobolRQMC(9, 11, 8, seed=seed))
        times: dict = {False: [], True: []}
        for _ in range(repeats):
            for est in (False, True):
                t = time.process_time()
                gm.solve(mix, loss, **kw, estimate_error=est)
                times[est].append(time.process_time() - t)
        solve, both = statistics.median(times[False]), statistics.median(times[True])
        got = phases(partial(gm.solve, mix, loss, **kw))
        own = got.get("solve", (0, 0, 0.0))[0]
        est_nodes = sum(v[0] for k, v in got.items() if k != "solve")
        total = [total[0] + solve, total[1] + both, total[2] + own, total[3] + est_nodes]
        print(
            f"| {seed} | {solve * 1e3:.1f} ms | {both * 1e3:.1f} ms | "
            f"{(both - solve) / solve:.2f} | {est_nodes / own:.2f} |",
            flush=True,
        )
    solve, both, own, est_nodes = total
    print(
        f"| seeds 0-{n - 1} (sums) | {solve:.2f} s | {both:.2f} s | "
        f"{(both - solve) / solve:.2f} | {est_nodes / own:.2f} |",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--erm", action="store_true", help="time one exact-ERM seed too")
    ap.add_argument("--parts", action="store_true", help="where the CPU time goes")
    ap.add_argument("--evaluations", action="store_true", help="channel evaluations by rule size")
    ap.add_argument("--phases", action="store_true", help="node evaluations by phase")
    ap.add_argument("--seeds", type=int, default=0, help="the K = 10 case over rule seeds")
    args = ap.parse_args()
    print(machine_line(), flush=True)
    if args.seeds:
        seeds(args.seeds, args.repeats)
        return
    print("| case | solve (CPU) | with estimate | estimate / solve | evaluations | estimate |")
    print("|---|---|---|---|---|---|", flush=True)
    for name in args.cases.split(","):
        make, loss, lam, alpha = CASES[name]
        mix = make()
        gm.solve(mix, loss, lam=lam, alpha=alpha)  # warm-up (compiled kernels, caches)
        times: dict = {False: [], True: []}
        res: dict = {}
        for _ in range(args.repeats):
            for est in (False, True):
                t = time.process_time()
                res[est] = gm.solve(mix, loss, lam=lam, alpha=alpha, estimate_error=est)
                times[est].append(time.process_time() - t)
        solve, both = statistics.median(times[False]), statistics.median(times[True])
        print(
            f"| {name} (lam = {lam:g}, alpha = {alpha:g}) | {solve * 1e3:.1f} ms | "
            f"{both * 1e3:.1f} ms | {(both - solve) / solve:.2f} | "
            f"{res[False].n_iter} / {res[True].n_iter} | {res[True].integration_error:.1e} |",
            flush=True,
        )
        if args.parts:
            for est in (False, True):
                run = partial(gm.solve, mix, loss, lam=lam, alpha=alpha, estimate_error=est)
                got = parts(run, args.repeats)
                text = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in got.items())
                what = "with estimate" if est else "solve"
                print(f"|   parts, {what} (ms of CPU, profiled) | {text} | | | | |", flush=True)
        if args.evaluations:
            for est in (False, True):
                run = partial(gm.solve, mix, loss, lam=lam, alpha=alpha, estimate_error=est)
                got = evaluations(run)
                text = ", ".join(f"{n} x {c} ({t * 1e3:.0f} ms)" for n, (c, t) in got.items())
                what = "with estimate" if est else "solve"
                print(f"|   channel evaluations, {what} (nodes x calls) | {text} | | | | |")
        if args.phases:
            run = partial(gm.solve, mix, loss, lam=lam, alpha=alpha)
            got = phases(run)
            text = ", ".join(
                f"{p} {n / 1e3:.1f} k ({c}; {t * 1e3:.0f} ms, {t / n * 1e6:.2f} us a node)"
                for p, (n, c, t) in got.items()
            )
            what = "node evaluations by phase (k nodes (calls; channel CPU))"
            print(f"|   {what} | {text} | | | | |")
        if args.erm:
            d = 64 if name == "digits" else 200
            erm = []
            for _ in range(args.repeats):
                t = time.process_time()
                gm.simulate(mix, loss=loss, lam=lam, alpha=alpha, d=d, seeds=1)
                erm.append(time.process_time() - t)
            print(
                f"|   one ERM seed, d = {d} | {statistics.median(erm) * 1e3:.1f} ms | | "
                f"theory / ERM {solve / statistics.median(erm):.2f} | | |",
                flush=True,
            )


if __name__ == "__main__":
    main()
