"""Paired A/B of single points between source trees in ONE process.

    python benchmarks/ab_inprocess.py OLD/src NEW/src [MORE/src] --loss hinge --rounds 80
    python benchmarks/ab_inprocess.py OLD/src NEW/src --k3 --rounds 20 --batch 5
    python benchmarks/ab_inprocess.py OLD/src NEW/src --case "ce3-lambda: curve" --batch 3

Each tree's ``gaussmix`` is imported in turn (``sys.modules`` cleared between imports and
swapped back before each batch, so a tree's functions and its lazy imports are its own),
then batches of ``--batch`` solves of the binary point (isotropic antipodal mixture,
Delta = 0.5, lam = 0.1, alpha = 2; ``--loss``), or with ``--k3`` of the K = 3
cross-entropy point (isotropic simplex, Delta = 0.5, lam = 1, alpha = 2), or with ``--case``
any case of ``check_bits.py`` (a curve of ``bench_curves.py``, its cold point, or a single
point: ``"ce3-lambda: curve"``), alternate between the trees, the order reversed every
round.  Prints each tree's median batch median (CPU ms,
``time.process_time``) and, against each earlier tree, the median and quartiles of the
ratios of batches run next to each other: on a loaded machine a pair shares its moment's
speed, where fresh processes (``ab_rounds.py``) spread by tens of percent.  Only the public
API is called.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _load(src: str, loss: str, k3: bool = False, case: str = ""):
    """The solve of ``src``'s tree (warmed up) and its ``gaussmix`` modules."""
    for name in [k for k in sys.modules if k == "gaussmix" or k.startswith("gaussmix.")]:
        del sys.modules[name]
    sys.path.insert(0, src)
    try:
        gm = importlib.import_module("gaussmix")
    finally:
        sys.path.remove(src)
    if case:
        from check_bits import cases  # (its cases import this tree's gaussmix)

        solve = cases()[case]
    elif k3:
        mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)

        def solve():
            return gm.solve(mix, "cross-entropy", lam=1.0, alpha=2.0)

    else:
        mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")

        def solve():
            return gm.solve(mix, loss, lam=0.1, alpha=2.0)

    solve()
    solve()
    mods = {k: v for k, v in sys.modules.items() if k == "gaussmix" or k.startswith("gaussmix.")}
    return solve, mods


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="+", help="the trees' src directories, the reference first")
    ap.add_argument("--loss", default="hinge")
    ap.add_argument("--rounds", type=int, default=80)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--k3", action="store_true", help="the K = 3 cross-entropy point")
    ap.add_argument("--case", default="", help="a case of check_bits.py, by its name")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    trees = [_load(src, args.loss, args.k3, args.case) for src in args.src]
    times: list[list[float]] = [[] for _ in trees]
    for r in range(args.rounds):
        order = range(len(trees)) if r % 2 == 0 else reversed(range(len(trees)))
        for i in order:
            solve, mods = trees[i]
            sys.modules.update(mods)
            ts = []
            for _ in range(args.batch):
                t = time.process_time()
                solve()
                ts.append(time.process_time() - t)
            times[i].append(float(np.median(ts)))
    for i, src in enumerate(args.src):
        x = np.array(times[i])
        cells = []
        for j in range(i):
            q = x / np.array(times[j])
            lo, hi = np.percentile(q, [25, 75])
            cells.append(f"/ tree {j}: {np.median(q):.3f} ({lo:.3f}-{hi:.3f})")
        name = args.case or ("K=3 cross-entropy" if args.k3 else args.loss)
        print(
            f"{name} tree {i} {src}: {1e3 * np.median(x):.3f} ms "
            f"(fastest batch {1e3 * x.min():.3f}) " + "  ".join(cells)
        )


if __name__ == "__main__":
    main()
