"""No answer moves beyond its own error estimate: the benchmark's six curves and ten single
points (``benchmarks/check_bits.py``, the cases of ``benchmarks/bench_curves.py``) against
their answers at the reference commit, kept in ``tests/fixtures/reference_answers.json``.

``check_bits.py`` tells whether a change keeps every bit; this test tells whether the
answers stay right when bits move (another BLAS, another CPU, a change of the iteration):
each observable may move by its integration-error estimates (the reference's and the new
one's) plus what the fixed-point tolerance allows.  The iteration stops when every order
parameter's scaled step is below ``tol`` (1e-8 by default); with a contraction ratio up to
0.99 the iterate is within ``100 tol`` of the fixed point, and the observables are smooth
functions of the order parameters with derivatives of order one, so ``SLACK = 100 tol``
(relative to the value's size, at least 1).  A case whose answers move on purpose is
written again with ``python benchmarks/check_bits.py --reference
tests/fixtures/reference_answers.json``, and the change says why.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest
from _helpers import load_benchmark

from gaussmix.theory.numerics.tolerances import FIXED_POINT_TOL

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "fixtures" / "reference_answers.json"
SLACK = 100 * FIXED_POINT_TOL
#: the observables compared (the summary's numbers that are answers, not costs)
OBSERVABLES = (
    "test_error",
    "train_error",
    "train_loss",
    "test_loss",
    "free_energy",
    "penalty_value",
    "nonzero_fraction",
    "nonzero_fraction_support",
    "nonzero_fraction_off_support",
    "l1_norm",
)


@pytest.fixture(scope="module")
def now() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_benchmark("check_bits").answers()


def _bound(name: str, ref: dict, new: dict) -> float:
    """How far observable ``name`` may move: the two integration-error estimates (of the
    observable, else the largest the point has) and the iteration's slack."""
    ie_ref, ie_new = ref["integration_errors"], new["integration_errors"]
    e_ref = ie_ref.get(name, max(ie_ref.values(), default=0.0))
    e_new = ie_new.get(name, max(ie_new.values(), default=0.0))
    return e_ref + e_new + SLACK * max(1.0, abs(ref[name]))


def _compare(where: str, ref: dict, new: dict) -> list[str]:
    if ref.get("converged") is not True:
        return [] if new.get("converged") is ref.get("converged") else [f"{where}: converged"]
    if new.get("converged") is not True:
        return [f"{where}: no longer converges"]
    out = []
    for name in OBSERVABLES:
        a, b = ref[name], new[name]
        if math.isnan(a) or math.isnan(b):
            if not (math.isnan(a) and math.isnan(b)):
                out.append(f"{where}: {name} {a!r} -> {b!r}")
            continue
        bound = _bound(name, ref, new)
        if abs(a - b) > bound:
            out.append(f"{where}: {name} {a!r} -> {b!r} (moved {abs(a - b):.3g} > {bound:.3g})")
    return out


def test_the_reference_covers_every_case(now: dict) -> None:
    reference = json.loads(REFERENCE.read_text())
    assert set(reference) == set(now)
    for name, ref in reference.items():
        if isinstance(ref, list):
            assert len(ref) == len(now[name]) == 20, name


@pytest.mark.parametrize("name", sorted(json.loads(REFERENCE.read_text())))
def test_no_answer_moves_beyond_its_error_estimate(name: str, now: dict) -> None:
    ref = json.loads(REFERENCE.read_text())[name]
    new = now[name]
    if isinstance(ref, list):
        moved = [
            m for i, (r, n) in enumerate(zip(ref, new)) for m in _compare(f"{name}[{i}]", r, n)
        ]
    else:
        moved = _compare(name, ref, new)
    assert not moved, "\n".join(moved)


def test_the_comparison_can_fail() -> None:
    """A move just beyond the bound is caught, one just within it is not."""
    ref = {
        "converged": True,
        "integration_errors": {"test_error": 1e-9},
        **{k: 0.25 for k in OBSERVABLES},
    }
    bound = _bound("test_error", ref, ref)
    assert bound == pytest.approx(2e-9 + SLACK)
    within = {**ref, "test_error": 0.25 + 0.9 * bound}
    beyond = {**ref, "test_error": 0.25 + 1.1 * bound}
    assert _compare("p", ref, within) == []
    assert _compare("p", ref, beyond) and "test_error" in _compare("p", ref, beyond)[0]
    assert _compare("p", ref, {"converged": False}) == ["p: no longer converges"]
