"""The seeds of a stacked curve's restart (``continuation._reseed``) are the points whose
logarithmic chart is known to their residual (``state.chart_resolved``): an overlap that
converges to a singular one (the square loss's ``Q_c`` of rank ``L - 1``) has a smallest
eigenvalue whose logarithm a residual of 1e-2 leaves open, and a prediction through it
extrapolated ``Q`` to 1e125 (the K = 3 square-loss curve below: 124 evaluations, its
seeded solve ending not positive definite after 76)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import load_benchmark

import gaussmix as gm
from gaussmix.experiments import continuation
from gaussmix.theory.solve import batch_solve
from gaussmix.theory.solve.iteration import IterationStatus
from gaussmix.theory.solve.state import chart_resolved

cg = load_benchmark("_curve_grids")


def _overlaps(rng: np.random.Generator, L: int, smallest: float) -> np.ndarray:
    """A symmetric ``L x L`` overlap with eigenvalues ``smallest`` and 1 (and in between)."""
    U = np.linalg.qr(rng.normal(size=(L, L)))[0]
    w = np.concatenate([[smallest], np.linspace(1.0, 0.5, L - 1)])
    return (U * w) @ U.T


@pytest.mark.parametrize("L", [2, 3])
def test_a_state_is_resolved_where_its_accuracy_cannot_reach_its_smallest_eigenvalue(
    L: int,
) -> None:
    # Weyl: a change of spectral norm a (the largest eigenvalue 1) moves each eigenvalue by
    # at most a, so the logarithm of the smallest is bounded where it exceeds a; and the
    # change -a v v^T along its eigenvector v makes it a - a = 0 or less where it does not
    rng = np.random.default_rng(5)
    V = np.stack([_overlaps(rng, L, 0.7)] * 2)
    for smallest, accuracy in [(1e-3, 1e-4), (1e-3, 1e-2), (1e-7, 4e-4), (0.3, 0.29)]:
        Q = np.stack([_overlaps(rng, L, 0.8), _overlaps(rng, L, smallest)])
        known = chart_resolved(Q[None], V[None], np.array([accuracy]))[0]
        assert known == (smallest > accuracy)
        w, U = np.linalg.eigh(Q[1])
        moved = np.linalg.eigvalsh(Q[1] - accuracy * np.outer(U[:, 0], U[:, 0]))[0]
        assert (moved > 0) == known
    # one output: a positive overlap is its own largest eigenvalue
    one = np.full((3, 2, 1, 1), 1e-12)
    assert chart_resolved(one, one, np.full(3, 1e-2)).all()
    # each state judged by its own accuracy
    Q = np.stack([np.stack([_overlaps(rng, 2, 1e-3)] * 2)] * 2)
    V = np.stack([V[:, :2, :2]] * 2)
    assert chart_resolved(Q, V, np.array([1e-2, 1e-4])).tolist() == [False, True]


def _gaussian_means(K: int) -> gm.Mixture:
    """``bench_square_k.py --means gaussian``'s mixture."""
    rng = np.random.default_rng(K)
    A = rng.standard_normal((K, K))
    return gm.Mixture.isotropic(1.0, A @ A.T / 2, rho=rng.dirichlet(np.full(K, 4.0)))


def test_a_square_loss_curve_is_not_restarted_from_its_singular_overlaps(monkeypatch) -> None:
    # bench_square_k.py's K = 3 curve (40 alphas): its fixed points' Q_c have rank 2
    # (eigenvalues down to 1e-17 of the largest).  Before the seeds' test: 124 evaluations,
    # 5.9 median cold points (21), its seeded solve restarted from predictions with Q up to
    # 1e125 and ending not positive definite after 76, then solved again; now 48 (2.3)
    mix = _gaussian_means(3)
    alphas = np.geomspace(0.2, 4.0, 40)
    statuses = []
    iterated = batch_solve.iterated_solve

    def spy(*args, **kw):
        out = iterated(*args, **kw)
        statuses.append(out.status)
        return out

    monkeypatch.setattr(batch_solve, "iterated_solve", spy)
    monkeypatch.setattr(continuation, "iterated_solve", spy, raising=False)
    with cg.counted_evaluations() as log:
        df = gm.learning_curve(mix, "square", alphas, lam=0.1)
    curve = len(log)
    assert df.converged.all() and statuses
    assert IterationStatus.NOT_POSITIVE_DEFINITE not in statuses
    cold = []
    for a in alphas:
        with cg.counted_evaluations() as log:
            gm.solve(mix, "square", alpha=float(a), lam=0.1)
        cold.append(len(log))
    assert curve <= 3 * np.median(cold), (curve, cold)
