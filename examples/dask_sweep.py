"""A resumable sweep on a local Dask cluster.

A grid of (alpha, lam) theory points for binary logistic regression run on a
``distributed.LocalCluster`` with a checkpoint: killing the script and running it again
skips the finished points.  On a real cluster pass the scheduler address instead
(``gm.sweep(points, scheduler="tcp://host:8786")``), or use the command line
(``gaussmix sweep --scheduler tcp://host:8786 ...``).  Needs the ``dask`` extra
(``pip install -e '.[dask]'``).

Run:  python examples/dask_sweep.py [OUT_DIR]
"""

import sys
from pathlib import Path

from distributed import Client, LocalCluster

import gaussmix as gm
from gaussmix.sweep import PointSpec

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
out.mkdir(parents=True, exist_ok=True)

if __name__ == "__main__":  # dask starts worker processes that re-import this file
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    points = [
        PointSpec(mix, "logistic", lam=lam, alpha=alpha, coords={"alpha": alpha, "lam": lam})
        for alpha in (0.5, 1.0, 2.0, 4.0)
        for lam in (0.01, 0.1, 1.0)
    ]
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        res = gm.sweep(points, scheduler=client, out=out / "dask_sweep.csv", progress=False)
    print(res.df[["alpha", "lam", "test_error", "train_error"]].to_string(index=False))
