"""The training error of cross-entropy with three or more effective outputs and anisotropic
metrics: quasi-Monte Carlo of the proximal point's indicator minus the control variate
``omega + V y`` (an orthant probability), sampled only where the two may differ."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

import gaussmix as gm
from gaussmix.theory.numerics.tolerances import TRAIN_QMC_TOL
from gaussmix.theory.solve import observables as O
from gaussmix.theory.solve import solver as S


@pytest.fixture(scope="module")
def k4_unequal():
    """K = 4 cross-entropy, unequal priors: anisotropic metrics ``V_c``."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4, rho=[0.1, 0.2, 0.3, 0.4])
    r = gm.solve(mix, "cross-entropy", lam=1e-2, alpha=3.0, estimate_error=False)
    e = S.effective_state(r)
    return e["problem"], e["M"], e["b"], e["Q"], e["V"]


def _count_prox_points(monkeypatch) -> list[int]:
    """A spy on the proximal points solved by the training error's estimate: each call's
    number of nodes, appended to the list returned."""
    calls: list[int] = []
    prox = O._prox_points

    def counting(problem, omega, V, clusters=None):
        calls.append(omega.shape[0] * omega.shape[1])
        return prox(problem, omega, V, clusters)

    monkeypatch.setattr(O, "_prox_points", counting)
    return calls


def _stretched(V: np.ndarray) -> np.ndarray:
    """``B V B`` with ``B = diag(0.5, 1, 2)``: a strongly anisotropic metric, where the
    control differs from the proximal point's indicator on a set of measurable mass."""
    B = np.diag([0.5, 1.0, 2.0])
    return B @ V @ B


def _plain(problem, M, b, Q, V):
    """The indicator of the proximal point alone, at ``8 x 2**14`` points (the reference)."""
    return O._qmc_train_accuracy(problem, M, b, Q, V, seed=1, start=14, stop=14)


@pytest.mark.parametrize("stretch", [False, True])
def test_control_variate_agrees_with_the_plain_estimate(k4_unequal, stretch):
    """Unbiased for any metric: the control's orthant plus the sampled difference agrees
    with the proximal point's indicator alone within their standard errors."""
    problem, M, b, Q, V = k4_unequal
    if stretch:
        V = _stretched(V)
    assert not O.isotropic_softmax_metric(problem, V)
    rho = problem.mixture.rho
    kw = dict(seed=0, start=12, stop=12, control=True)
    acc, err = O._qmc_train_accuracy(problem, M, b, Q, V, **kw)
    ref, ref_err = _plain(problem, M, b, Q, V)
    assert ref_err < 3e-4
    assert abs(rho @ (acc - ref)) <= 4 * np.hypot(err, ref_err)


def test_anisotropic_metrics_keep_the_plain_estimate(k4_unequal):
    """Unequal priors at small lam: the unsure set is too large for the control to pay, and
    the training accuracy is the plain estimate's, to the bit."""
    problem, M, b, Q, V = k4_unequal
    assert not O._control_pays(problem, M, b, Q, V, (0, 1, 2, 3), 0)
    acc, err = O.train_accuracy(problem, M, b, Q, V)
    plain, plain_err = O._qmc_train_accuracy(problem, M, b, Q, V, start=12, stop=14)
    np.testing.assert_array_equal(acc, plain)
    assert err == plain_err


def test_the_screening_decides_as_the_proximal_point_everywhere(k4_unequal, monkeypatch):
    """Skipping the proximal point where ``|D_j (omega + V y)|`` exceeds the bound on its
    distance to an ordering-equivalent of ``h`` changes nothing: the same estimate, to the
    bit, as the proximal point at every node, on a metric where the indicators disagree."""
    problem, M, b, Q, V = k4_unequal
    V = _stretched(V)
    kw = dict(seed=0, start=11, stop=11, control=True)
    screened, err = O._qmc_train_accuracy(problem, M, b, Q, V, **kw)
    radius = O._control_radius(problem, problem.constraints, V)
    assert np.all(np.isfinite(radius)) and np.all(radius > 0)
    monkeypatch.setattr(O, "_control_radius", lambda *a: np.full_like(radius, np.inf))
    every, err_every = O._qmc_train_accuracy(problem, M, b, Q, V, **kw)
    np.testing.assert_array_equal(screened, every)
    assert err == err_every
    # the control alone (its orthant) is off by more than the error: the sampled
    # difference is not empty
    shift = np.einsum("kij,kj->ki", V, problem.y @ problem.P.T)
    base, _ = O._cluster_orthants(problem.constraints, M + b + shift, Q, abs_tol=1e-6)
    assert np.max(np.abs(screened - base)) > 10 * err


@pytest.mark.parametrize("stretch", [False, True])
def test_the_plain_estimate_is_screened_too(k4_unequal, monkeypatch, stretch):
    """Without the control variate (where it does not pay) the same screening decides the
    nodes where ``omega + V y`` is far from every boundary of its cone: the estimate is,
    to the bit, that of the proximal point at every node, which is solved at a fraction
    of them only (measured: 11 % of the ``8 x 2**12`` nodes of the four clusters, 70 % with
    the stretched metric)."""
    problem, M, b, Q, V = k4_unequal
    if stretch:
        V = _stretched(V)
    kw = dict(seed=0, start=12, stop=12)
    calls = _count_prox_points(monkeypatch)
    screened, err = O._qmc_train_accuracy(problem, M, b, Q, V, **kw)
    solved = sum(calls)
    radius = O._control_radius(problem, problem.constraints, V)
    assert np.all(np.isfinite(radius))
    monkeypatch.setattr(O, "_control_radius", lambda *a: np.full_like(radius, np.inf))
    calls.clear()
    every, err_every = O._qmc_train_accuracy(problem, M, b, Q, V, **kw)
    assert sum(calls) == 4 * 8 * 2**12  # (no screening: the proximal point everywhere)
    np.testing.assert_array_equal(screened, every)
    assert err == err_every
    assert 0 < solved < (0.8 if stretch else 0.2) * sum(calls)


def test_control_radius_bounds_the_gap_to_the_ordering_equivalent(k4_unequal):
    """At sampled ``omega``: ``|D_j (u - g)| <= r_j`` with ``u = omega + V y`` and
    ``g = h + v P p`` (the proximal point ``h``, ``p = softmax``), and ``g`` has the signs
    of ``D h`` (:func:`_control_radius`)."""
    problem, M, b, Q, V = k4_unequal
    V = _stretched(V)
    radius = O._control_radius(problem, problem.constraints, V)
    rng = np.random.default_rng(3)
    L = M.shape[1]
    omega = (M + b)[:, None, :] + rng.standard_normal((M.shape[0], 4000, L)) * 3.0
    h = O._prox_points(problem, omega, V)
    full = h @ problem.P  # (the full outputs: P has orthonormal rows)
    p = np.exp(full - full.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    v = np.trace(V, axis1=1, axis2=2) / L
    for c, (D, _) in enumerate(problem.constraints):
        u = omega[c] + V[c] @ problem.P @ problem.y[c]
        g = h[c] + v[c] * p[c] @ problem.P.T
        assert np.all(np.abs((u - g) @ D.T) <= radius[c] * (1 + 1e-12) + 1e-12)
        Dh, Dg = h[c] @ D.T, g @ D.T
        assert np.all(np.sign(Dh) == np.sign(Dg))


def test_ten_classes_from_digits_need_few_proximal_points(monkeypatch):
    """Ten classes fitted from digits (nearly isotropic metrics, 3e-4..8e-4 relative): the
    control pays, the estimate meets its target at the first ``8 x 2**10`` points per
    cluster with the proximal point at under 1% of them, and agrees with the plain
    estimate at ``8 x 2**12``."""
    X, y = load_digits(return_X_y=True)
    mix = gm.Mixture.from_data(X / 16, y)
    with warnings.catch_warnings():  # (the test error's nine-dimensional orthants)
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        r = gm.solve(mix, "cross-entropy", lam=1.0, alpha=1.0, estimate_error=False)
    e = S.effective_state(r)
    problem, M, b, Q, V = (e[k] for k in ("problem", "M", "b", "Q", "V"))
    assert not O.isotropic_softmax_metric(problem, V)
    assert O._control_pays(problem, M, b, Q, V, tuple(range(10)), 0)
    calls = _count_prox_points(monkeypatch)
    acc, err = O.train_accuracy(problem, M, b, Q, V)
    assert err <= TRAIN_QMC_TOL
    assert sum(calls) < 0.01 * 10 * 8 * 2**10
    monkeypatch.undo()
    ref, ref_err = O._qmc_train_accuracy(problem, M, b, Q, V, seed=1, start=12, stop=12)
    assert abs(problem.mixture.rho @ (acc - ref)) <= 4 * np.hypot(err, ref_err)


@pytest.mark.parametrize(("m", "abs_tol"), [(9, 1e-10), (9, 5e-5), (6, 1e-10)])
def test_remembered_sobol_points_are_the_engines(m, abs_tol, monkeypatch):
    """Orthants with the remembered prefix of the scrambled Sobol' sequences
    (:func:`_sobol_prefix`) equal, to the bit, those with the engines from the first point
    (a prefix of one point): stopped early, run to the cap of nine variables (the prefix's
    length) and, with six, past it (the engines fast-forwarded to the prefix's end)."""
    from gaussmix.theory.numerics import orthant

    rng = np.random.default_rng(5)
    A = rng.standard_normal((m, m))
    cov, mean = A @ A.T + m * np.eye(m), rng.standard_normal(m) - 1.0
    kept = orthant.orthant_probability(mean, cov, rng_seed=3, abs_tol=abs_tol)
    monkeypatch.setattr(orthant, "_LOG2_N_CACHED", 0)
    fresh = orthant.orthant_probability(mean, cov, rng_seed=3, abs_tol=abs_tol)
    assert kept == fresh
