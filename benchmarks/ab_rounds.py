"""Interleaved A/B rounds of ``benchmarks/bench_ab_points.py`` between two source trees.

    python benchmarks/ab_rounds.py --rev 1a01a4e --group all --rounds 5
    git archive REV src | tar -x -C /tmp/ab-old
    python benchmarks/ab_rounds.py /tmp/ab-old/src src --rounds 5

``--rev REV`` compares the commit REV (tree A, checked out once as a detached ``git
worktree`` under ``--worktrees``, default the system's temporary directory, and reused)
with this checkout's ``src`` (tree B); otherwise give the two ``src`` directories.
``--group`` chooses the cases (``bench_ab_points.py``: ``points``, ``engine``, ``curves``
- every curve and cold point of ``bench_curves.py`` and every case of ``check_bits.py`` -
or ``all``); ``--match a,b`` keeps the cases whose name contains ``a`` or ``b``.

Each round runs the bench once per tree and group, in fresh processes with one BLAS
thread, A then B (B then A on odd rounds).  Prints, per case, the median over rounds of
each tree's median CPU time (ms) with its range across rounds, and the ratio B / A: the
median of the rounds' ratios (each round's B against the A run next to it in time) with
their range; and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BENCH = Path(__file__).with_name("bench_ab_points.py")
ROOT = Path(__file__).resolve().parents[1]


def run(src: str, group: str, match: str = "") -> dict:
    """The JSON line of one run of the bench on the tree ``src`` (a fresh process), its
    cases those whose name contains one of the comma-separated ``match`` (all if empty)."""
    env = {**os.environ, "PYTHONPATH": src, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env["MKL_NUM_THREADS"] = "1"
    out = subprocess.run(
        [sys.executable, str(BENCH), "--group", group, "--match", match],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def worktree(rev: str, under: Path) -> Path:
    """The ``src`` of a detached worktree of ``rev`` under ``under`` (made once)."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    path = under / f"gaussmix-ab-{sha[:12]}"
    if not (path / "src").is_dir():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), sha],
            check=True,
            capture_output=True,
        )
    return path / "src"


def table(runs: dict[str, list[dict]], stat: str) -> list[str]:
    """The Markdown table of the statistic ``stat`` (``median`` or ``min``)."""
    lines = [
        f"| case ({stat} of a process's runs, CPU ms) | A | B | B / A (rounds' range) |",
        "|---|---|---|---|",
    ]
    for case in runs["a"][0]:
        a = 1e3 * np.array([rd[case][stat] for rd in runs["a"]])
        b = 1e3 * np.array([rd[case][stat] for rd in runs["b"]])
        ratios = b / a
        cells = [f"{np.median(v):.1f} ({v.min():.1f}-{v.max():.1f})" for v in (a, b)]
        lines.append(
            f"| {case} | {cells[0]} | {cells[1]} | **{np.median(ratios):.2f}** "
            f"({ratios.min():.2f}-{ratios.max():.2f}) |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", nargs="?", help="source directory of tree A (the reference)")
    parser.add_argument("b", nargs="?", help="source directory of tree B")
    parser.add_argument("--rev", help="tree A is this commit (a worktree), B this checkout")
    parser.add_argument("--worktrees", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--group", default="points", help="points, engine, curves or all")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--match", default="", help="only cases whose name contains one of a,b,..."
    )
    args = parser.parse_args()
    if args.rev is not None:
        if args.a is not None:
            parser.error("give either --rev or the two source directories")
        args.a, args.b = str(worktree(args.rev, args.worktrees)), str(ROOT / "src")
    elif args.a is None or args.b is None:
        parser.error("give the two source directories (A B) or --rev")
    groups = ("points", "engine", "curves") if args.group == "all" else (args.group,)
    load0 = os.getloadavg()
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    for r in range(args.rounds):
        merged: dict[str, dict] = {"a": {}, "b": {}}
        for group in groups:
            order = ("a", "b") if r % 2 == 0 else ("b", "a")
            for side in order:
                merged[side].update(run(getattr(args, side), group, args.match))
        for side in merged:
            runs[side].append(merged[side])
        print(f"round {r + 1} of {args.rounds} done, load {os.getloadavg()[0]:.1f}", flush=True)
    load1 = os.getloadavg()
    print(f"A = {args.a}, B = {args.b}")
    print(f"load average before {load0[0]:.1f}, after {load1[0]:.1f}; {args.rounds} rounds")
    for stat in ("median", "min"):
        print()
        print("\n".join(table(runs, stat)))


if __name__ == "__main__":
    main()
