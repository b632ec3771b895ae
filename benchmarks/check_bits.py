"""Whether a change keeps the numbers of the curves and points to the bit: a fingerprint of
the six ``bench_curves.py`` cases' tables and of single points, to compare between two
trees (or before and after a change).

Run::

    python benchmarks/check_bits.py --write before.json      # on the tree before
    python benchmarks/check_bits.py --against before.json    # on the tree after

Fingerprinted (SHA-256): each case's table (``gm.learning_curve`` / ``gm.lambda_sweep``)
hashed by ``pandas.util.hash_pandas_object`` and as a CSV of every value's ``repr``
(``%r``), and every field of every point's result (``table.points``: arrays by their bytes,
floats by ``repr``, the fixed point's state ``x``); and the same fields of ten single points
(each case's cold point, K = 3 cross-entropy at lam = 1e-4, 1e-2 and 1, K = 3 square at
lam = 1e-3).  ``--against`` prints the entries that differ and exits 1 if any does.

The same cases' answers (every observable of every point, with its integration-error
estimates) are the suite's reference (``tests/fixtures/reference_answers.json``, checked by
``tests/test_reference_answers.py`` within each answer's own error estimate); after a change
that moves them within that bound on purpose, write them again with::

    python benchmarks/check_bits.py --reference tests/fixtures/reference_answers.json
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_curves import CASES, _problem  # noqa: E402


def _value_bytes(value) -> bytes:
    """The bytes of one field's value (arrays by content, floats by ``repr``)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return repr((value.dtype.str, value.shape)).encode() + value.tobytes()
    if isinstance(value, dict):
        return (
            b"{" + b",".join(k.encode() + b":" + _value_bytes(v) for k, v in value.items()) + b"}"
        )
    if hasattr(value, "x") and hasattr(value, "problem"):  # the fixed point's state
        return _value_bytes(np.asarray(value.x))
    return repr(value).encode()


def result_hash(res) -> str:
    """SHA-256 of every field of a result (None: a fixed string)."""
    h = hashlib.sha256()
    if res is None:
        h.update(b"None")
        return h.hexdigest()
    for f in dataclasses.fields(res):
        h.update(f.name.encode() + b"=" + _value_bytes(getattr(res, f.name)) + b";")
    return h.hexdigest()


def table_hash(table) -> dict:
    """The table's hashes (``hash_pandas_object``, a ``%r`` CSV) and its points'."""
    import pandas as pd

    plain = pd.DataFrame(table)
    rows = hashlib.sha256(pd.util.hash_pandas_object(plain, index=True).values.tobytes())
    csv = hashlib.sha256(plain.to_csv(float_format="%r").encode())
    points = hashlib.sha256("".join(result_hash(r) for r in table.points).encode())
    return {"rows": rows.hexdigest(), "csv": csv.hexdigest(), "points": points.hexdigest()}


def cases() -> dict:
    """The cases of the module's docstring as calls, in order: ``{name: callable}`` (each
    case's curve and cold point, then the four single points); also timed by
    ``benchmarks/bench_ab_points.py``."""
    import gaussmix as gm

    out = {}
    for case in CASES:
        point, curve = _problem(case)
        out[f"{case}: curve"] = curve
        out[f"{case}: point"] = point
    mix3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    for lam in (1e-4, 1e-2, 1.0):
        out[f"ce3 lam={lam}"] = lambda lam=lam: gm.solve(mix3, "cross-entropy", lam=lam, alpha=2.0)
    out["square3 lam=1e-3"] = lambda: gm.solve(mix3, "square", lam=1e-3, alpha=2.0)
    return out


def solved() -> dict:
    """The results of every case of the module's docstring: ``{name: table or result}``
    (each case's curve as its table, each single point as its result)."""
    return {name: run() for name, run in cases().items()}


def fingerprint() -> dict:
    """Every fingerprint of the module's docstring."""
    return {
        name: table_hash(value) if name.endswith(": curve") else result_hash(value)
        for name, value in solved().items()
    }


def _answer(res) -> dict:
    """A point's answers (its summary's floats) and their integration-error estimates."""
    if res is None:
        return {"converged": False}
    summary = {
        k: (v if isinstance(v, (bool, int)) else float(v)) for k, v in res.summary().items()
    }
    errors = {k: float(v) for k, v in (res.integration_errors or {}).items()}
    return {**summary, "integration_errors": errors}


def answers() -> dict:
    """The answers of every case (:func:`solved`): a list of point answers per curve, one
    per single point (JSON-ready; NaN as JSON's NaN)."""
    return {
        name: [_answer(r) for r in value.points] if name.endswith(": curve") else _answer(value)
        for name, value in solved().items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="write the fingerprints to this JSON file")
    group.add_argument("--against", type=Path, help="compare with the fingerprints of a file")
    group.add_argument(
        "--reference", type=Path, help="write the cases' answers (the suite's reference)"
    )
    args = ap.parse_args()
    if args.reference is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = answers()
        args.reference.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
        print(f"{len(ref)} cases' answers written to {args.reference}")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        now = fingerprint()
    if args.write is not None:
        args.write.write_text(json.dumps(now, indent=1) + "\n")
        print(f"{len(now)} fingerprints written to {args.write}")
        return
    before = json.loads(args.against.read_text())
    differ = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
    for k in differ:
        print(f"differs: {k}")
    print(f"{len(now) - len(differ)} of {len(now)} fingerprints the same")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
