"""The dense ridge prior on the covariances' leading axes and the first phase of a large
dense fixed point that corrects it (``gaussmix.theory.prior.dense.coarse_covariance``,
``gaussmix.theory.solve.coarse_axes``)."""

from __future__ import annotations

import numpy as np

import gaussmix as gm
from gaussmix.theory.model.covariance import DenseCovariance
from gaussmix.theory.numerics import tolerances
from gaussmix.theory.prior import dense
from gaussmix.theory.prior.dense import coarse_covariance, dense_ridge_terms


def _decaying(rng: np.random.Generator, k: int, d: int, zero: int) -> DenseCovariance:
    """Covariances that do not commute, with eigenvalues decaying as on images (a shared
    basis, each cluster's own scales and a rank-two perturbation of its own), all zero on
    the last ``zero`` axes."""
    a = d - zero
    U = np.linalg.qr(rng.standard_normal((a, a)))[0]
    covs = np.zeros((k, d, d))
    for c in range(k):
        W = rng.standard_normal((a, 2)) * np.exp(-np.arange(a) / 6.0)[:, None]
        inner = np.diag(np.exp(-np.arange(a) / 4.0) * rng.uniform(0.5, 1.5, a)) + 0.1 * W @ W.T
        covs[c, :a, :a] = U @ inner @ U.T
    means = rng.standard_normal((k, d)) / np.sqrt(d)
    means[0, -1] = 0.7  # a mean component on a zero-variance axis
    return DenseCovariance(means, covs)


def _hats(rng: np.random.Generator, k: int, L: int):
    G = rng.standard_normal((2, k, L, L + 1))
    Qh, Vh = G @ np.swapaxes(G, 2, 3) / (L + 1)
    return Qh, rng.standard_normal((k, L)), Vh


def test_the_prior_on_all_rotated_axes_is_the_prior():
    """Nothing left out (``tail = 0``): the coarse covariance is the covariance in the
    eigenbasis of the weighted sum, and the prior's ``Q, M, V``, ``psi_w`` and penalty are
    invariant under that rotation of the axes: the same to rounding."""
    rng = np.random.default_rng(40)
    k, d, L, lam = 3, 20, 2, 0.3
    cov = _decaying(rng, k, d, zero=2)
    rot = coarse_covariance(cov, np.array([0.5, 0.3, 0.2]), 0.0, 1.0)
    assert rot is not None and int(rot.active.sum()) == d - 2
    Qh, Mh, Vh = _hats(rng, k, L)
    a = dense_ridge_terms(cov, lam, Qh, Mh, Vh, details=True)
    b = dense_ridge_terms(rot, lam, Qh, Mh, Vh, details=True)
    for key in ("Q", "M", "V", "psi_w", "penalty"):
        np.testing.assert_allclose(getattr(b, key), getattr(a, key), rtol=1e-12, atol=1e-14)


def test_the_leading_axes_are_the_fewest_within_the_tail_and_only_they_count():
    """With a tail: ``p`` is the fewest leading eigen-axes of ``sum_k w_k Sigma_k`` whose
    left-out eigenvalues are at most ``tail`` of its trace (checked against ``eigvalsh``),
    and the coarse prior is the prior of the covariances projected on those axes in the
    original coordinates (``E_p E_p^T Sigma_k E_p E_p^T``: every axis kept, an independent
    construction); a share above ``max_share`` gives None; made once per covariance."""
    rng = np.random.default_rng(41)
    k, d, L, lam = 3, 24, 2, 0.2
    cov = _decaying(rng, k, d, zero=1)
    w = np.array([0.2, 0.5, 0.3])
    tail = 0.02
    coarse = coarse_covariance(cov, w, tail, 0.9)
    assert coarse is not None
    p = int(coarse.active.sum())
    t, E = np.linalg.eigh(np.tensordot(w, cov.covariances, axes=1))
    t, E = t[::-1], E[:, ::-1]
    assert t[p:].sum() <= tail * t.sum() < t[p - 1 :].sum()
    assert 1 < p < d - 1
    proj = E[:, :p] @ E[:, :p].T
    projected = DenseCovariance(cov.means, proj @ cov.covariances @ proj)
    Qh, Mh, Vh = _hats(rng, k, L)
    a = dense_ridge_terms(projected, lam, Qh, Mh, Vh)
    b = dense_ridge_terms(coarse, lam, Qh, Mh, Vh)
    for key in ("Q", "M", "V"):
        np.testing.assert_allclose(getattr(b, key), getattr(a, key), rtol=1e-10, atol=1e-12)
    full = dense_ridge_terms(cov, lam, Qh, Mh, Vh)
    assert np.abs(full.V - b.V).max() > 1e-6  # (the axes left out do count)
    assert coarse_covariance(cov, w, tail, 0.9) is coarse
    assert coarse_covariance(cov, w, tail, (p - 1) / (d - 1)) is None


def _count_axes(monkeypatch) -> list[tuple[int, bool]]:
    """Record the active axes and the precision of every dense prior evaluation."""
    calls: list[tuple[int, bool]] = []
    real = dense._dense_ridge_terms

    def spy(cov, *args, **kw):
        calls.append((int(cov.active.sum()), bool(args[-1])))
        return real(cov, *args, **kw)

    monkeypatch.setattr(dense, "_dense_ridge_terms", spy)
    return calls


def _solves(monkeypatch, tail: float, max_iter: int | None = None):
    """A small problem (K = 3 cross-entropy, d = 30) solved in double precision only, then
    with the coarse phase forced (``tail`` of the trace left out), its dense prior
    evaluations recorded (active axes, precision)."""
    rng = np.random.default_rng(42)
    d = 30
    cov = _decaying(rng, 3, d, zero=3)
    mix = gm.Mixture.dense(cov.means * np.sqrt(d) / 2, cov.covariances, labels="onehot")
    kw = dict(lam=0.1, alpha=0.7, tol=TOL, estimate_error=False)
    monkeypatch.setattr(tolerances, "SINGLE_PHASE_MIN_N", 10**9)
    double = gm.solve(mix, "cross-entropy", **kw)
    monkeypatch.setattr(tolerances, "SINGLE_PHASE_MIN_N", 1)
    monkeypatch.setattr(tolerances, "COARSE_AXES_TAIL", tail)
    if max_iter is not None:
        monkeypatch.setattr(tolerances, "SINGLE_PHASE_MAX_ITER", max_iter)
    calls = _count_axes(monkeypatch)
    coarse = gm.solve(mix, "cross-entropy", **kw)
    assert double.success and coarse.success
    return double, coarse, calls, d - 3


TOL = 1e-10


def _same_fixed_point(double, coarse) -> None:
    """``coarse`` is a fixed point of the full double map (its residual below ``TOL``
    there) and the all-double solve's answer within the tolerance's reach."""
    from gaussmix.theory.solve.state import residual_scale

    T = coarse.state.map()
    x = coarse.state.x
    res = float(np.max(np.abs(T(x) - x) / residual_scale(x, T.K, T.L)))
    assert res < TOL, f"residual of the double map at the returned state: {res:.2e}"
    for key in ("Q", "M", "V", "b", "test_error", "train_loss", "train_error", "free_energy"):
        a, b = np.asarray(getattr(double, key), float), np.asarray(getattr(coarse, key), float)
        err = float(np.abs(a - b).max()) / max(float(np.abs(a).max()), 1e-3)
        assert err <= 100 * TOL, f"{key}: relative difference {err:.2e}"


def test_the_coarse_phase_returns_the_fixed_point_of_the_full_prior(monkeypatch):
    """The phase forced on a small problem (2 % of the trace left out: 13 of 27 axes): the
    answer is the all-double solve's within the tolerance's reach and a fixed point of the
    full double map; the cold start's image is the coarse prior's (float32), the full
    prior is evaluated in float32 once (the first correction) and then in double only,
    the last evaluation its, in at most a quarter of the all-double solve's evaluations
    (four corrections and the double phase's check: measured 5 of 24, beside 29 of the
    coarse prior, the cold start's image among them).  The first
    correction's run starts on the float32 coarse prior (its double continuation, if any,
    after); and each evaluation counted is one prior evaluation (a correction's full and
    coarse priors at one state count one, its run's first image, that coarse one, counts
    one without a prior) beside the cold start's image: no coarse prior made twice at a
    state (before, one more a correction)."""
    double, coarse, calls, r = _solves(monkeypatch, 0.02)
    full = [single for axes, single in calls if axes == r]
    assert calls[0][0] < r and calls[0][1]  # the cold start's image: coarse, float32
    assert len(full) < len(calls) and calls[-1] == (r, False)
    assert full[0] and not any(full[1:]) and len(full) <= double.n_iter // 4, calls
    at = [i for i, (axes, _) in enumerate(calls) if axes == r]
    first_run = [single for _, single in calls[at[0] + 1 : at[1]]]
    assert first_run[0] and first_run == sorted(first_run, reverse=True), calls
    assert len(calls) == coarse.n_iter + 1, (len(calls), coarse.n_iter)
    _same_fixed_point(double, coarse)


def test_a_coarse_phase_that_does_not_converge_leaves_the_single_phase(monkeypatch):
    """A coarse start stopped short (two evaluations allowed) has not converged: the
    float32 phase of the full prior runs from the solve's start, as without the coarse
    phase, and the answer is the same fixed point."""
    double, coarse, calls, r = _solves(monkeypatch, 0.02, max_iter=2)
    kinds = [(axes == r, single) for axes, single in calls]
    first_full_single = kinds.index((True, True))
    assert (False, True) in kinds[:first_full_single]  # the coarse start ran first
    assert all(full for full, _ in kinds[first_full_single:])
    _same_fixed_point(double, coarse)
