"""Per-case CPU timings for an interleaved A/B between two source trees (BENCHMARKS.md,
"Nothing slower: the A/B against 1a01a4e"): the in-process points of BENCHMARKS.md, every
curve and cold point of ``bench_curves.py`` and every case of ``check_bits.py``.

Run, for each tree, in fresh processes and alternating (one BLAS thread); or let
``benchmarks/ab_rounds.py`` do it::

    PYTHONPATH=/tmp/ab-old/src OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ab_points.py
    PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ab_points.py [--group G]

Groups (``--group``, default ``points``, the cases this script timed before):

* ``points``: binary logistic and hinge points, K = 3 cross-entropy at lam = 1 and 1e-4, a
  sparse lasso square point, a 20-point K = 3 curve;
* ``engine``: the in-process points of BENCHMARKS.md (``bench_engine.py``: binary
  logistic, hinge, square; K = 3, 4, 5 cross-entropy; ``bench_sparse.py``: the lasso point
  of each loss, the elastic net; ``bench_normaliser.py``: K = 5 at lam = 1e-4, alpha = 3);
* ``curves``: the six curves of ``bench_curves.py`` and their cold points, and the four
  further single points of ``check_bits.py`` (together every case of ``check_bits.py``);
* ``all``: the three.

``--match a,b`` keeps only the cases whose name contains ``a`` or ``b`` (e.g.
``--group engine --match "K=4 CE,K=5 CE"``).

Each case is run once to warm up, then timed (CPU time, ``time.process_time``) until it
has run 7 times or for 1.5 s of CPU (at least 3 runs); the script prints one JSON line, the
median and the fastest time (s) of each case.  Only the public API is called, so the same
script times an older tree.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gaussmix as gm  # noqa: E402

warnings.simplefilter("ignore")

#: Timed runs of a case: at most, at least, and the CPU budget (s) between.
MAX_RUNS, MIN_RUNS, BUDGET = 7, 3, 1.5

GROUPS = ("points", "engine", "curves")


def timings(f: Callable[[], object]) -> list[float]:
    """CPU times (s) of the timed runs of ``f`` after one warm-up run."""
    f()
    ts: list[float] = []
    while len(ts) < MAX_RUNS and (len(ts) < MIN_RUNS or sum(ts) < BUDGET):
        t = time.process_time()
        f()
        ts.append(time.process_time() - t)
    return ts


def points() -> dict[str, Callable[[], object]]:
    """The group ``points``."""
    b = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    m3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    sp = gm.Mixture.sparse(0.1, 0.1, 1.0)
    alphas = np.linspace(0.2, 4, 20)
    return {
        "binary logistic lam=0.1 a=2": lambda: gm.solve(b, "logistic", lam=0.1, alpha=2.0),
        "binary hinge lam=0.1 a=2": lambda: gm.solve(b, "hinge", lam=0.1, alpha=2.0),
        "K=3 CE lam=1 a=2": lambda: gm.solve(m3, "cross-entropy", lam=1.0, alpha=2.0),
        "K=3 CE lam=1e-4 a=4": lambda: gm.solve(m3, "cross-entropy", lam=1e-4, alpha=4.0),
        "sparse square l1 lam=0.1 a=1": lambda: gm.solve(
            sp, "square", lam=0.1, alpha=1.0, penalty="l1"
        ),
        "K=3 CE curve 20 pts": lambda: gm.learning_curve(m3, "cross-entropy", alphas, lam=1.0),
    }


def engine() -> dict[str, Callable[[], object]]:
    """The group ``engine``."""
    b = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    sp = gm.Mixture.sparse(0.1, 0.1, 1.0)
    out: dict[str, Callable[[], object]] = {
        "engine: binary square lam=0.1 a=2": lambda: gm.solve(b, "square", lam=0.1, alpha=2.0),
    }
    for k in (4, 5):
        mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=k)
        out[f"engine: K={k} CE lam=1 a=2"] = lambda mix=mix: gm.solve(
            mix, "cross-entropy", lam=1.0, alpha=2.0
        )
    for loss in ("logistic", "hinge"):
        out[f"sparse: lasso {loss} lam=0.1 a=1"] = lambda loss=loss: gm.solve(
            sp, loss, lam=0.1, alpha=1.0, penalty="l1"
        )
    out["sparse: elastic net square lam=0.1 a=1"] = lambda: gm.solve(
        sp, "square", lam=0.1, alpha=1.0, penalty="elastic-net", l1_ratio=0.5
    )
    m5 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=5)
    out["normaliser: K=5 CE lam=1e-4 a=3"] = lambda: gm.solve(
        m5, "cross-entropy", lam=1e-4, alpha=3.0
    )
    return out


def curves() -> dict[str, Callable[[], object]]:
    """The group ``curves``: every case of ``check_bits.py``."""
    from check_bits import cases

    return {f"bits: {name}": run for name, run in cases().items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", choices=(*GROUPS, "all"), default="points")
    ap.add_argument(
        "--match", default="", help="only the cases whose name contains one of these (a,b,...)"
    )
    args = ap.parse_args()
    groups = GROUPS if args.group == "all" else (args.group,)
    match = [m for m in args.match.split(",") if m]
    out = {}
    for group in groups:
        for k, f in {"points": points, "engine": engine, "curves": curves}[group]().items():
            if match and not any(m in k for m in match):
                continue
            ts = timings(f)
            out[k] = {"median": float(np.median(ts)), "min": float(np.min(ts))}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
