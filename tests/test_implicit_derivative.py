"""d eps_g / d lambda by implicit differentiation through the fixed point, for several
outputs (symmetric overlap matrices), against finite differences of re-solved points."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments.derivative import _independent_entries, d_test_error_d_lambda


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
