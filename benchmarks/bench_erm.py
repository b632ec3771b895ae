"""Exact ERM at small lambda: the per-seed fits of the fig3-left simulations.

Run:  python benchmarks/bench_erm.py [--seeds S] [--n-clusters 2,3,4,5] [--lbfgs]  (Markdown)

The FULL preset of ``gaussmix figure fig3-left`` (:data:`gaussmix.figures.multiclass.
FIG3_LEFT_FULL`): cross-entropy + ridge at ``lam = 1e-4``, Delta = 0.5, Gaussian means,
d = 1000, K = 2..5, at its simulated alphas.  For each (K, alpha) and each of ``S`` seeds
(default 1; the instances :func:`gaussmix.simulate.simulate` draws with root seed 0), the
CPU time of one exact fit (:func:`gaussmix.theory.channel.erm.fit_cross_entropy`: Newton-CG), its
Newton iterations, Hessian-vector products and KKT residual.  ``--lbfgs`` also times the
previous solver on the same data (scikit-learn's lbfgs, then a warm-started Newton-CG pass
when its KKT residual is above 1e-10) and reports the difference of the two objectives.
Set ``OPENBLAS_NUM_THREADS=1`` for one core.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from _timing import machine_line

import gaussmix as gm
from gaussmix.figures.multiclass import DELTA, FIG3_LEFT_FULL
from gaussmix.simulate import realise
from gaussmix.theory.channel.erm import DEFAULT_TOL, fit_cross_entropy, kkt_residual
from gaussmix.theory.channel.losses import CrossEntropyLoss
from gaussmix.theory.model.penalties import make_penalty

LAM = 1e-4


def _arg(name: str, default: str) -> str:
    argv = sys.argv[1:]
    return argv[argv.index(name) + 1] if name in argv else default


def _lbfgs(Xs: np.ndarray, cid: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The previous solver: lbfgs, then warm-started Newton-CG (two-class: binary at lam/2)."""
    from sklearn.linear_model import LogisticRegression

    loss, pen = CrossEntropyLoss(), make_penalty("l2")
    if k == 2:
        target, lam = (cid == 0).astype(int), LAM / 2
    else:
        target, lam = cid, LAM
    est = LogisticRegression(C=1 / lam, tol=DEFAULT_TOL["lbfgs"], max_iter=100_000)
    W, b = _softmax_weights(est.fit(Xs, target), k)
    Y = np.eye(k)[cid]
    if kkt_residual(Xs, Y, W, b, loss, LAM, pen) > DEFAULT_TOL["lbfgs"]:
        est.set_params(solver="newton-cg", warm_start=True)
        W, b = _softmax_weights(est.fit(Xs, target), k)
    return W, b


def _softmax_weights(est: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` of the K-class softmax in the gauge ``sum_k b_k = 0`` from a fitted
    scikit-learn estimator (two classes: the binary fit's ``w`` is ``W_1 - W_2``)."""
    if k == 2:
        w, c = est.coef_ / 2, est.intercept_[0] / 2
        return np.vstack([w, -w]), np.array([c, -c])
    return est.coef_, est.intercept_ - est.intercept_.mean()


def main() -> None:
    seeds = int(_arg("--seeds", "1"))
    ks = tuple(int(k) for k in _arg("--n-clusters", "2,3,4,5").split(","))
    compare = "--lbfgs" in sys.argv[1:]
    d = FIG3_LEFT_FULL["d"]
    loss, pen = CrossEntropyLoss(), make_penalty("l2")
    print(machine_line() + "\n")
    head = "| K | alpha | n | seed | CPU (s) | Newton its | Hv products | KKT residual |"
    rule = "|---|---|---|---|---|---|---|---|"
    if compare:
        head += " lbfgs CPU (s) | speed-up | objective difference |"
        rule += "---|---|---|"
    print(head + "\n" + rule)
    total = 0.0
    for k in ks:
        mix = gm.Mixture.isotropic(DELTA, "gaussian", n_clusters=k)
        for alpha in FIG3_LEFT_FULL["sim_alphas"]:
            for s, child in enumerate(np.random.SeedSequence(0).spawn(seeds)):
                rng = np.random.default_rng(child)
                inst = realise(mix, d, rng)
                X, cid = inst.sample(round(alpha * d), rng)
                Xs = np.ascontiguousarray(X / np.sqrt(d))
                Y = inst.labels.labels[cid]
                t0 = time.process_time()
                W, b, info = fit_cross_entropy(loss, Xs, Y, LAM, pen)
                cpu = time.process_time() - t0
                total += cpu
                kkt = kkt_residual(Xs, Y, W, b, loss, LAM, pen)
                row = (
                    f"| {k} | {alpha:g} | {X.shape[0]} | {s} | {cpu:.2f} | {info['n_iter']} | "
                    f"{info.get('n_hessp', '-')} | {kkt:.1e} |"
                )
                if compare:
                    t0 = time.process_time()
                    Wr, br = _lbfgs(Xs, cid, k)
                    cpu_r = time.process_time() - t0
                    f = loss.value(Y, Xs @ W.T + b).sum() + 0.5 * LAM * np.vdot(W, W)
                    fr = loss.value(Y, Xs @ Wr.T + br).sum() + 0.5 * LAM * np.vdot(Wr, Wr)
                    row += f" {cpu_r:.2f} | {cpu_r / cpu:.1f}x | {(f - fr) / abs(fr):+.1e} |"
                print(row, flush=True)
    print(f"\nTotal CPU of the fits: {total:.1f} s ({len(ks) * 4 * seeds} fits)")


if __name__ == "__main__":
    main()
