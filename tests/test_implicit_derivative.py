"""d eps_g / d lambda by implicit differentiation through the fixed point, for several
outputs (symmetric overlap matrices), against finite differences of re-solved points."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments.derivative import (
    _fd_step,
    _independent_entries,
    _positive_entries,
    d_test_error_d_lambda,
)


@pytest.mark.parametrize("loss", ["cross-entropy", "square"])
def test_implicit_derivative_with_several_outputs_matches_finite_differences(loss):
    gram = [[1.0, 0.2, -0.1], [0.2, 0.8, 0.0], [-0.1, 0.0, 1.3]]
    mix = gm.Mixture.isotropic([0.7, 0.5, 0.9], gram, rho=[0.3, 0.3, 0.4])
    lam = 0.3
    kw = dict(alpha=1.2, tol=1e-12, estimate_error=False)
    r = gm.solve(mix, loss, lam=lam, **kw)
    h = 1e-4 * lam
    fd = (
        gm.solve(mix, loss, lam=lam + h, **kw).test_error
        - gm.solve(mix, loss, lam=lam - h, **kw).test_error
    ) / (2 * h)
    np.testing.assert_allclose(d_test_error_d_lambda(r), fd, rtol=1e-6)


def test_independent_entries_pair_the_symmetric_entries():
    K, L = 2, 2
    coords = _independent_entries(K, L)
    n = 2 * K * L * L + K * L + L
    assert sorted(int(i) for idx in coords for i in idx) == list(range(n))
    assert len(coords) == 2 * K * L * (L + 1) // 2 + K * L + L
    assert [list(c) for c in coords[:3]] == [[0], [1, 2], [3]]  # Q_0: (0,0), (0,1)+(1,0), (1,1)
    assert [list(c) for c in _independent_entries(3, 1)] == [[i] for i in range(3 + 3 + 3 + 1)]


def test_a_tiny_signed_entry_gets_the_ordinary_step():
    """The optimal lasso on the sparse mixture (logistic, alpha = 1.5): a fixed point whose
    bias is 3e-16 at the symmetric point (as an optimal-lambda search reached it, with the
    bias's sign set by rounding).  A step of 1e-3 |b| in the bias (the rule of positive
    overlaps) made the map's rounding a Jacobian column of order 1e2 and the derivative
    0.14 at rel_step 1e-6, against 1.7e-5 at 1e-5 and 1e-7; the bias is signed, so its
    step is rel_step, and the derivative does not depend on the step."""
    mix = gm.Mixture.sparse(0.1, 0.1, 1.0)
    lam = 0.370217954775684
    x = np.array(
        [1.3895477883231109, 1.3895477883231109, 0.75841525437541724, -0.75841525437541724]
        + [1.6991340595026105, 1.6991340595026105, 3.1196160253264849e-16]
    )
    r = gm.solve(mix, "logistic", lam=lam, alpha=1.5, penalty="l1", fallback=False)
    # the same fixed point (within the solve's tolerance), its bias of the other sign
    np.testing.assert_allclose(r.state.x[:-1], x[:-1], rtol=1e-10)
    assert abs(r.state.x[-1]) < 1e-14
    pinned = replace(r, state=replace(r.state, x=x))
    d = [d_test_error_d_lambda(pinned, rel_step=s) for s in (1e-5, 1e-6, 1e-7)]
    # central differences: O(rel_step^2) truncation, O(eps / rel_step) rounding (1e-10 / 1e-7)
    np.testing.assert_allclose(d, d[0], rtol=1e-3)
    assert d_test_error_d_lambda(r) == pytest.approx(d[1], rel=1e-3)


def test_only_the_diagonal_overlaps_are_kept_positive():
    K, L = 2, 2
    pos = _positive_entries(K, L)
    Q0 = [0, 3]  # Q_0's (0, 0), (1, 1)
    Q1 = [4, 7]
    V0 = [8 + 4 + 0, 8 + 4 + 3]
    V1 = [8 + 4 + 4, 8 + 4 + 7]
    assert pos == frozenset(Q0 + Q1 + V0 + V1)
    # a tiny positive diagonal entry: a step that keeps it positive; a signed one: rel_step
    assert _fd_step(3e-16, 1e-6, True) == pytest.approx(3e-19)
    assert _fd_step(3e-16, 1e-6, False) == 1e-6
    assert _fd_step(-3e-16, 1e-6, True) == 1e-6
    assert _fd_step(5.0, 1e-6, False) == pytest.approx(5e-6)
