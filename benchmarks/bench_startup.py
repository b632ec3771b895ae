"""Start-up time of the command line (issue 9 targets: ``gaussmix --help`` < 0.3 s, one binary
``gaussmix point`` < 0.8 s on a quiet 2-core machine).

Each command runs in a fresh process (``python -m gaussmix.cli ...``, the console script's
code path without the wrapper), after one warm-up run that fills numba's on-disk cache of
compiled kernels; the table gives the median and the best wall time of ``--repeats`` runs,
and the modules each command imported that a light start-up avoids.

Usage: ``python benchmarks/bench_startup.py [--repeats 11]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from _timing import machine_line

COMMANDS = {
    "import gaussmix": ["-c", "import gaussmix"],
    "gaussmix --help": ["-m", "gaussmix.cli", "--help"],
    "gaussmix point --loss logistic --json": [
        "-m",
        "gaussmix.cli",
        "point",
        "--loss",
        "logistic",
        "--json",
    ],
    "gaussmix point (K = 3 cross-entropy) --json": ["-m", "gaussmix.cli", "point", "--json"],
}
HEAVY = ("numpy", "scipy", "numba", "pandas", "matplotlib", "xarray", "dask", "sklearn")
PROBE = (
    "import sys, runpy; sys.argv = {argv!r}; "
    "import atexit; atexit.register(lambda: print('MODULES', "
    "sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})), file=sys.stderr))\n"
    "{body}"
)


def run(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True)
    return time.perf_counter() - t0


def heavy_modules(args: list[str]) -> str:
    """The heavy top-level packages a command imports (one extra run)."""
    if args[0] == "-c":
        body = args[1]
        argv = ["-c"]
    else:
        body = f"runpy.run_module({args[1]!r}, run_name='__main__')"
        argv = [args[1], *args[2:]]
    code = PROBE.format(argv=argv, heavy=HEAVY, body=body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    for line in out.stderr.splitlines():
        if line.startswith("MODULES"):
            return line.removeprefix("MODULES ").strip("[]").replace("'", "") or "none"
    return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    opts = parser.parse_args()
    print(machine_line())
    print(f"load average: {os.getloadavg()}")
    print("| command | median (s) | best (s) | heavy packages imported |")
    print("|---|---|---|---|")
    for name, args in COMMANDS.items():
        run(args)  # warm-up: numba's cache, the OS's file cache
        times = [run(args) for _ in range(opts.repeats)]
        print(
            f"| `{name}` | {statistics.median(times):.3f} | {min(times):.3f} | "
            f"{heavy_modules(args)} |"
        )


if __name__ == "__main__":
    main()
