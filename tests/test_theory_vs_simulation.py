"""Theory against finite-size simulation (slow): Theorem 2 errors of the fixed point against
exact ERM on samples of the same mixture, d >= 1000, several seeds, within 3 standard
errors.  Run with ``pytest -m slow``."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import check_within_3se

import gaussmix as gm
from gaussmix.simulate.simulation import simulate

pytestmark = pytest.mark.slow

D = 1000
SEEDS = 6
KEYS = ("test_error", "train_error", "train_loss")


CE_CASES = [(lam, alpha) for lam in (0.01, 1.0) for alpha in (0.5, 2.0)]


@pytest.mark.parametrize("lam,alpha", CE_CASES)
def test_three_class_cross_entropy(lam, alpha):
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    theory = gm.solve(mix, "cross-entropy", lam=lam, alpha=alpha)
    sim = simulate(mix, loss="cross-entropy", lam=lam, alpha=alpha, d=D, seeds=SEEDS, n_jobs=2)
    check_within_3se(theory, sim, KEYS)
    # the overlaps too (the cross-entropy gauge 1^T h = 0 is shared by both)
    for c in range(3):
        np.testing.assert_allclose(sim.M[c], theory.M[c], atol=3 * sim.M_se[c].max() + 0.02)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_binary_logistic_and_hinge(loss):
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    theory = gm.solve(mix, loss, lam=0.1, alpha=2.0)
    sim = simulate(mix, loss=loss, lam=0.1, alpha=2.0, d=D, seeds=SEEDS, n_jobs=2)
    check_within_3se(theory, sim, KEYS)


def test_binary_square_loss_with_different_covariances_and_unbalanced_clusters():
    """docs/design.md pitfall 1: the bias condition in gradient form sum_c rho_c E[f_c] = 0."""
    mix = gm.Mixture.isotropic([0.1, 1.0], "antipodal", rho=[0.3, 0.7], labels="binary")
    theory = gm.solve(mix, "square", lam=0.1, alpha=2.0)
    sim = simulate(mix, loss="square", lam=0.1, alpha=2.0, d=2 * D, seeds=SEEDS, n_jobs=2)
    check_within_3se(theory, sim, KEYS)
    np.testing.assert_allclose(sim.b[0], theory.b[0], atol=3 * sim.b_se[0] + 1e-3)
