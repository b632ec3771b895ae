"""Lasso and elastic net for any number of outputs (:mod:`gaussmix.theory.prior.lasso`).

The L-dimensional l1 prox is checked by its optimality conditions and its Jacobian by finite
differences; its Gaussian moments along lines against Monte Carlo; the multi-output prior
against the soft-threshold closed forms at L = 1 (and the whole fixed point through it); the
two-class cross-entropy lasso against the binary logistic lasso it is equivalent to; and the
three-class lasso against exact ERM (slow)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import check_free_energy

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentError
from gaussmix.theory.model.penalties import ElasticNet, Lasso
from gaussmix.theory.prior import lasso as lasso_mod
from gaussmix.theory.prior import prior as prior_mod
from gaussmix.theory.prior.lasso import (
    START_LAM_TR_V,
    START_Q_POWER,
    gaussian_l1_moments,
    l1_kkt_residual,
    l1_prox,
    l1_prox_jacobian,
    weak_penalty_start,
)
from gaussmix.theory.prior.prior import elastic_net_prior, multi_output_elastic_net_prior
from gaussmix.theory.problem.problem import _complement_of_ones

EPS = np.finfo(float).eps


def _psd(rng, n, L, ridge=0.0):
    G = rng.standard_normal((n, L, L + 1))
    return G @ np.swapaxes(G, 1, 2) / (L + 1) + ridge * np.eye(L)


# ----------------------------------------------------------------------------- the prox
@pytest.mark.parametrize("L", [1, 2, 3, 5])
@pytest.mark.parametrize("lam", [0.0, 0.05, 0.7, 5.0])
def test_l1_prox_satisfies_kkt_to_rounding(L, lam):
    rng = np.random.default_rng(10 * L + int(10 * lam))
    n = 3000
    A = _psd(rng, n, L, ridge=0.05)
    g = 2.0 * rng.standard_normal((n, L))
    w, kkt = l1_prox(A, g, lam)
    assert np.all(np.isfinite(w))
    res = l1_kkt_residual(A, g, lam, w)
    np.testing.assert_array_equal(res, kkt)
    scale = np.abs(g).max(axis=1) + lam + np.abs(A).sum(axis=(1, 2)) * np.abs(w).max(axis=1)
    assert np.max(res / scale) < 1e-13
    assert np.max(res) < 1e-12
    if lam > 0:  # the l1 term does make zeros, and none where |g| < lam off-diagonal-free
        assert np.any(w == 0.0)

    # the value is below that of perturbed points (a convexity check independent of KKT)
    def obj(x):
        return 0.5 * np.einsum("na,nab,nb->n", x, A, x) - (g * x).sum(1) + lam * np.abs(x).sum(1)

    for _ in range(5):
        assert np.all(obj(w) <= obj(w + 1e-3 * rng.standard_normal((n, L))) + 1e-14)


def test_l1_prox_jacobian_matches_finite_differences():
    rng = np.random.default_rng(3)
    n, L, lam = 400, 3, 0.4
    A = _psd(rng, n, L, ridge=0.1)
    g = rng.standard_normal((n, L))
    w, _ = l1_prox(A, g, lam)
    J = l1_prox_jacobian(A, w != 0.0)
    h = 1e-6
    for b in range(L):
        e = np.zeros(L)
        e[b] = h
        wp, _ = l1_prox(A, g + e, lam)
        wm, _ = l1_prox(A, g - e, lam)
        fd = (wp - wm) / (2 * h)
        # away from the breakpoints (where a one-sided difference straddles two pieces)
        same = np.all((wp != 0) == (w != 0), axis=1) & np.all((wm != 0) == (w != 0), axis=1)
        assert same.mean() > 0.95
        np.testing.assert_allclose(fd[same], J[same][:, :, b], atol=1e-8)


@pytest.mark.parametrize("L", [2, 3, 4])
def test_shift_free_prox_is_the_least_l1_gauge(L):
    """Cross-entropy metric ``P^T A P`` (null vector 1): the returned minimiser has its lower
    median entry at zero, which minimises ``||w + t 1||_1`` over ``t``."""
    rng = np.random.default_rng(L)
    P = _complement_of_ones(L)
    n, lam = 2000, 0.3
    A = P.T @ _psd(rng, n, L - 1, ridge=0.05) @ P
    g = rng.standard_normal((n, L - 1)) @ P
    w, kkt = l1_prox(A, g, lam, shift_free=True)
    assert np.max(kkt) < 1e-12
    ts = np.linspace(-2, 2, 801)
    l1 = np.abs(w[:, None, :] + ts[None, :, None]).sum(-1)
    assert np.all(np.abs(w).sum(1) <= l1.min(1) + 1e-12)
    assert np.all(np.sum(w == 0.0, axis=1) >= 1)  # A_SS is positive definite on the support


# ----------------------------------------------------------------------------- moments
@pytest.mark.parametrize(
    "Lp,L,shift_free", [(1, 1, False), (1, 2, True), (2, 2, False), (2, 3, True), (3, 3, False)]
)
def test_line_moments_match_monte_carlo(Lp, L, shift_free):
    rng = np.random.default_rng(7 + Lp + L)
    P = _complement_of_ones(L) if shift_free else np.eye(L)
    A = P.T @ _psd(rng, 1, Lp, ridge=0.1) @ P
    cov = _psd(rng, 1, Lp, ridge=0.3)
    mean = 0.3 * rng.standard_normal((1, Lp))
    lam = 0.4
    mom = gaussian_l1_moments(A, P, mean, cov, lam, shift_free=shift_free)
    n = 200_000
    ev, vec = np.linalg.eigh(cov[0])
    B = mean[0] + (rng.standard_normal((n, Lp)) * np.sqrt(ev)) @ vec.T
    w, _ = l1_prox(np.broadcast_to(A[0], (n, L, L)), B @ P, lam, shift_free=shift_free)
    u = w @ P.T
    Ju = P @ l1_prox_jacobian(np.ascontiguousarray(np.broadcast_to(A[0], (n, L, L))), w != 0) @ P.T

    def close(x, samples, what):
        m, se = samples.mean(0), samples.std(0) / np.sqrt(n)
        z = np.abs(x - m) / np.maximum(se, 1e-12)
        assert np.all(z < 4.5), (what, x, m, se)

    close(mom.mean[0] @ P.T, u, "E[u]")
    close((P @ mom.second[0] @ P.T).ravel(), np.einsum("na,nb->nab", u, u).reshape(n, -1), "uu")
    close((P @ mom.jacobian[0] @ P.T).ravel(), Ju.reshape(n, -1), "J")
    close(mom.nonzero, np.count_nonzero(w, axis=1)[:, None].astype(float), "nnz")
    close(mom.l1, np.abs(w).sum(1)[:, None], "l1")


@pytest.mark.parametrize(
    "Lp,L,shift_free", [(1, 2, True), (2, 2, False), (2, 3, True), (3, 4, True), (4, 4, False)]
)
def test_region_pieces_are_the_prox_along_lines(Lp, L, shift_free):
    """The affine pieces of the prox along lines, from the polyhedral regions of its sign
    patterns, are the prox itself (coordinate descent + KKT check, :func:`l1_prox`) at random
    points of every piece within 12 of the centre, including the shift-free metric of an
    even L (whose gauge entry's constraint is tight on its whole region) and lines far from
    the centre (a reference point near 0 keeps the affine form free of cancellation)."""
    from gaussmix.theory.prior.lasso import _region_pieces

    rng = np.random.default_rng(3 * Lp + L)
    P = _complement_of_ones(L) if shift_free else np.eye(L)
    A = P.T @ _psd(rng, 2, Lp, ridge=0.1) @ P
    n = 300
    base = 3.0 * rng.standard_normal((n, Lp))
    dirn = rng.standard_normal((n, Lp))
    atom = rng.integers(0, 2, n)
    pieces = _region_pieces(A, P, base, dirn, atom, 0.4, shift_free)
    line, a, b, zr, wr, sl, _ = (np.concatenate(x) for x in zip(*pieces))
    lo, hi = np.maximum(a, -12.0), np.minimum(b, 12.0)
    keep = lo < hi
    assert np.unique(line[keep]).size == n
    z = lo + rng.uniform(size=line.size) * (hi - lo)
    line, z, wr, zr, sl = line[keep], z[keep], wr[keep], zr[keep], sl[keep]
    w, kkt = l1_prox(
        A[atom[line]], (base[line] + z[:, None] * dirn[line]) @ P, 0.4, shift_free=shift_free
    )
    assert np.all(np.isfinite(kkt))
    np.testing.assert_allclose(wr + (z - zr)[:, None] * sl, w, rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_outer_rule_two_effective_outputs_ends_panels_at_the_kinks(seed):
    """Two effective outputs (the K = 3 cross-entropy metric, shift-free): the outer rule's
    panels end where lines pass through vertices of the prox's pieces, so 64 panels agree
    with 512 to 5e-8 of each moment's largest entry at generic hats (measured 2e-9 to
    1.2e-8; graded panels blind to the kinks: 1.4e-6 to 1.2e-5)."""
    from gaussmix.theory.prior.lasso import _kinks_across_lines

    rng = np.random.default_rng(100 * seed + 5)
    P = _complement_of_ones(3)
    A = P.T @ _psd(rng, 3, 2, ridge=0.1) @ P
    cov = _psd(rng, 3, 2, ridge=0.3)
    mean = 0.3 * rng.standard_normal((3, 2))
    a = gaussian_l1_moments(A, P, mean, cov, 0.4, shift_free=True)
    b = gaussian_l1_moments(A, P, mean, cov, 0.4, shift_free=True, panels=512)
    for key in ("mean", "second", "jacobian", "nonzero", "l1"):
        x, y = getattr(a, key), getattr(b, key)
        assert np.abs(x - y).max() <= 5e-8 * np.abs(y).max(), key
    ev, vec = np.linalg.eigh(cov)
    R = (vec * np.sqrt(ev)[:, None, :]) @ np.swapaxes(vec, 1, 2)
    assert all(k.size > 0 for k in _kinks_across_lines(A, P, mean, R, 0.4, True))


def test_outer_rule_refinement_three_effective_outputs():
    """Three effective outputs (one-hot square loss, K = 3) at generic hats: the default
    outer rule (8 x 8 panels) against 16 x 16.  The moments the fixed point uses (``E[w
    w^T]``, ``E[dw/dg]`` by Stein's lemma) and the non-zero count agree to 5e-4 of their
    largest entry (measured 2.4e-4, 4.5e-4, 5.9e-4 against 24 x 24); ``E[w]`` (the empirical
    laws' ``M``) to 2e-3 (measured 1.4e-3): the accuracy docs/conventions.md states."""
    rng = np.random.default_rng(5)
    P = np.eye(3)
    A = _psd(rng, 2, 3, ridge=0.1)
    cov = _psd(rng, 2, 3, ridge=0.3)
    mean = 0.3 * rng.standard_normal((2, 3))
    a = gaussian_l1_moments(A, P, mean, cov, 0.4)
    b = gaussian_l1_moments(A, P, mean, cov, 0.4, panels=16)
    for key, tol in (("second", 5e-4), ("jacobian", 6e-4), ("nonzero", 7e-4), ("mean", 2e-3)):
        x, y = getattr(a, key), getattr(b, key)
        assert np.abs(x - y).max() <= tol * np.abs(y).max(), key


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("small", [1e-5, 1e-7, 0.0])
def test_jacobian_where_the_field_is_nearly_degenerate(seed, small):
    """A field whose covariance has a (nearly) degenerate direction, as at the square loss's
    fixed points with one-hot labels (their residuals sum to zero): ``E[dw/dg]``, blended
    from Stein's lemma and the direct form, is within 5e-3 of its largest entry of a 48 x 48
    panel rule with the default 8 x 8 (measured 3e-4 to 3.4e-3, the largest at ``small =
    1e-5``, near the blend's ``eps``; Stein's lemma alone, dividing by ``cov``: 1.4e-2 to 1,
    and inf at ``small = 0``), and within Monte Carlo error of the prox's Jacobian averaged
    over samples of the field."""
    rng = np.random.default_rng(seed)
    P = np.eye(3)
    A = _psd(rng, 2, 3, ridge=0.1)
    vec = np.linalg.qr(rng.standard_normal((2, 3, 3)))[0]
    ev = np.array([1.0, 0.5, small])
    cov = (vec * ev) @ np.swapaxes(vec, 1, 2)
    mean = 0.3 * rng.standard_normal((2, 3))
    a = gaussian_l1_moments(A, P, mean, cov, 0.4).jacobian
    b = gaussian_l1_moments(A, P, mean, cov, 0.4, panels=48).jacobian
    assert np.abs(a - b).max() <= 5e-3 * np.abs(b).max()
    n = 100_000
    B = mean[0] + (rng.standard_normal((n, 3)) * np.sqrt(ev)) @ vec[0].T
    w, _ = l1_prox(np.broadcast_to(A[0], (n, 3, 3)), B, 0.4)
    Js = l1_prox_jacobian(np.ascontiguousarray(np.broadcast_to(A[0], (n, 3, 3))), w != 0)
    m, se = Js.mean(0), Js.std(0) / np.sqrt(n)
    assert np.all(np.abs(b[0] - m) <= 4.5 * se + 1e-12)


def test_square_loss_lasso_with_a_degenerate_field_converges(monkeypatch):
    """The K = 3 square-loss lasso whose field's covariance tends to a singular one at the
    fixed point (block model, lam = 1.15e-3, alpha = 4; one-hot residuals sum to zero):
    with Stein's lemma alone the map was noisy at the 1e-3 level and the iteration stalled
    (3000 iterations, residual 6e-3).  It converges, and its answer does not depend on the
    blend's ``eps`` (an exact identity): ten times larger, the same test error within the
    two solves' integration-error estimates."""
    from gaussmix.theory.prior import lasso

    mix = gm.Mixture.block(
        [0.5, 0.5], [1.89, 1.89 / 4], means="simplex", labels="onehot", n_clusters=3
    )
    a = gm.solve(mix, "square", lam=1.15e-3, alpha=4.0, penalty="l1")
    assert a.success and a.n_iter < 300
    monkeypatch.setattr(lasso, "_STEIN_BLEND", 10 * lasso._STEIN_BLEND)
    b = gm.solve(mix, "square", lam=1.15e-3, alpha=4.0, penalty="l1")
    bound = max(a.integration_error + b.integration_error, 1e-9)
    assert abs(a.test_error - b.test_error) <= bound


@pytest.mark.parametrize("seed", range(6))
def test_jacobian_of_a_rarely_active_output_is_positive_semi_definite(seed):
    """``E[dw/dg]`` is positive semi-definite (each piece's ``P_S A_SS^{-1} P_S^T`` is) where
    one coordinate of the field is small against ``lam`` (its weight rarely leaves zero: an
    output the lasso almost always zeroes).  Symmetrised by the plain average, the other
    rows' rule errors fell in that coordinate's row and column, of the order of its
    (vanishing) activity: smallest eigenvalue -4.3e-5 to -7e-2 of the largest on these
    seeds, and the K = 3 square-loss iteration stalled at such a ``V``.  Weighted by each
    row's activity, every eigenvalue is non-negative to rounding, and that row's entries
    are within half the geometric mean of the diagonal entries (the bound a positive
    semi-definite matrix puts on them) of a finer rule's."""
    rng = np.random.default_rng(seed)
    P = np.eye(3)
    A = _psd(rng, 2, 3, ridge=0.1)
    small = np.array([0.1, 1.0, 1.0])  # the first coordinate of the field
    cov = _psd(rng, 2, 3, ridge=0.3) * small[:, None] * small[None, :]
    mean = 0.3 * rng.standard_normal((2, 3)) * small
    lam = 3.0 * float(np.sqrt(A[:, 0, 0].max()))
    a = gaussian_l1_moments(A, P, mean, cov, lam)
    ev = np.linalg.eigvalsh(a.jacobian)
    assert np.all(ev[:, 0] >= -8 * EPS * ev[:, -1]), ev
    # the rarely active row and column: no larger than the finer rule's, to its own size
    b = gaussian_l1_moments(A, P, mean, cov, lam, panels=24).jacobian
    quiet = np.abs(a.jacobian[:, 0, 1:] - b[:, 0, 1:]).max(axis=1)
    assert np.all(quiet <= 0.5 * np.sqrt(b[:, 0, 0] * np.abs(b).max(axis=(1, 2)))), quiet


def test_square_loss_lasso_with_a_zeroed_output_converges_cold():
    """K = 3 square loss, lam = 6.82, alpha = 5.5, rho = (0.05, 0.47, 0.48): the lasso zeroes
    the rare class's output (its ``Q`` entries 1e-40).  The prior's ``V`` was indefinite
    there (``E[dw_0/dg_1]`` 3.9e-7 of rule error beside ``E[dw_0/dg_0]`` 8e-39) and the
    iteration stalled at the edge of the cone (residual 1.1e-4, then the homotopy fallback
    failed too: 18-26 s).  Cold, it converges to the answer warm starts from lam = 3 and 10
    reach, within the solves' integration-error estimates."""
    rho = [0.04847522327736527, 0.46927243257248286, 0.4822523441501518]
    mix = gm.Mixture.isotropic(0.9407922843645653, "gaussian", n_clusters=3, rho=np.array(rho))
    kw = dict(alpha=5.48726585723134, penalty="l1")
    lam = 6.81796122695517
    cold = gm.solve(mix, "square", lam=lam, **kw)
    assert cold.success and cold.n_iter < 200
    assert 0.0 < cold.nonzero_fraction < 0.01
    for lam0 in (3.0, 10.0):
        warm = gm.solve(mix, "square", lam=lam, init=gm.solve(mix, "square", lam=lam0, **kw), **kw)
        bound = max(cold.integration_error + warm.integration_error, 1e-12)
        assert abs(cold.test_error - warm.test_error) <= bound
        # the same fixed point to the iteration's tolerance (relative, 1e-8)
        assert cold.nonzero_fraction == pytest.approx(warm.nonzero_fraction, rel=1e-6)


def test_weak_penalty_start_raises_v_to_its_target_and_the_weights_less():
    """:func:`weak_penalty_start`: a start with ``lam tr V`` below the target gets ``lam tr V``
    (the clusters' mean) equal to it, ``V`` multiplied by ``s``, ``Q`` by ``s^p`` and ``M``
    by ``s^(p/2)`` (the weights scaled alike, so that ``M_c / sqrt(Q_c)`` is unchanged); one
    above the target is returned as it is."""
    rng = np.random.default_rng(5)
    Q, V = _psd(rng, 3, 2, 0.1), _psd(rng, 3, 2, 0.1)
    M = rng.standard_normal((3, 2))
    lam = 1e-3
    Q2, M2, V2 = weak_penalty_start(Q, M, V, lam)
    trace = np.trace(V2, axis1=1, axis2=2).mean()
    assert lam * trace == pytest.approx(START_LAM_TR_V, rel=1e-14)
    s = trace / np.trace(V, axis1=1, axis2=2).mean()
    assert s > 100
    np.testing.assert_allclose(V2, s * V, rtol=1e-14)
    np.testing.assert_allclose(Q2, s**START_Q_POWER * Q, rtol=1e-14)
    np.testing.assert_allclose(M2, s ** (START_Q_POWER / 2) * M, rtol=1e-14)
    big = 10.0 * START_LAM_TR_V / lam / np.trace(V, axis1=1, axis2=2).mean()
    same = weak_penalty_start(Q, M, big * V, lam)
    assert same[0] is Q and same[1] is M
    np.testing.assert_array_equal(same[2], big * V)


def test_k3_cross_entropy_lasso_at_small_lam_converges_from_the_raised_start(monkeypatch):
    """The cold start of the K = 3 cross-entropy lasso at small ``lam`` raised to the scale of
    its fixed point (:func:`weak_penalty_start`; isotropic simplex means, Delta = 0.5,
    lam = 5e-3, alpha = 1): measured 27 evaluations against 127 from the default start
    (``START_LAM_TR_V = 0`` leaves it as it is), to the same fixed point.  Both stop at a
    relative residual below ``tol`` = 1e-8 with the map contracting by at least 1/2 an
    evaluation near it (by about 0.4 measured), so each state is within 2 ``tol`` (relative,
    :func:`~gaussmix.theory.solve.state.residual_scale`) of the fixed point: 1e-7 of the
    order parameters bounds both differences with room (measured 1.2e-10 of the test
    error)."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    kw = dict(lam=5e-3, alpha=1.0, penalty="l1", estimate_error=False)
    raised = gm.solve(mix, "cross-entropy", **kw)
    monkeypatch.setattr(lasso_mod, "START_LAM_TR_V", 0.0)
    plain = gm.solve(mix, "cross-entropy", **kw)
    assert raised.success and plain.success
    assert raised.n_iter <= 40 < plain.n_iter, (raised.n_iter, plain.n_iter)
    for key in ("Q", "V", "M"):
        a, b = getattr(raised, key), getattr(plain, key)
        assert np.abs(a - b).max() <= 1e-7 * max(1.0, np.abs(b).max()), key
    assert raised.test_error == pytest.approx(plain.test_error, abs=1e-7)


# ----------------------------------------------------------------------------- L = 1
def _spectral_binary(rng):
    """A binary spectral law with empirical mean components (mixture.mu given)."""
    J, K = 40, 2
    sigma = rng.uniform(0.3, 1.5, (J, K))
    mu = rng.standard_normal((J, K))
    return gm.Mixture.spectral(sigma, mu, rho=[0.4, 0.6], labels="binary")


@pytest.mark.parametrize("which", ["sparse", "empirical"])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.4])
def test_general_prior_is_the_closed_form_at_one_output(which, l1_ratio):
    rng = np.random.default_rng(11)
    mix = gm.Mixture.sparse(0.2, 0.3, 1.0) if which == "sparse" else _spectral_binary(rng)
    K = mix.n_clusters
    Qh, Vh = rng.uniform(0.2, 1.5, (K, 1, 1)), rng.uniform(0.2, 1.5, (K, 1, 1))
    Mh = rng.standard_normal((K, 1))
    ref = elastic_net_prior(mix, 0.3, l1_ratio, Qh, Mh, Vh)
    out = multi_output_elastic_net_prior(mix, 0.3, l1_ratio, Qh, Mh, Vh, np.eye(1))
    for key in ("Q", "M", "V", "psi_w", "penalty", "atom_nonzero", "l1_norm"):
        np.testing.assert_allclose(getattr(out, key), getattr(ref, key), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("which", ["block", "empirical"])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.6])
@pytest.mark.parametrize("lam", [0.05, 0.5, 3.0])
def test_two_class_prior_is_the_general_one(which, l1_ratio, lam):
    """Two outputs seen through their difference (the two-class cross-entropy): the scalar
    closed form (``_two_class_elastic_net``, what the solver uses) against the general
    two-dimensional lasso with its gauge: the same numbers to rounding (measured 7.5e-15)."""
    rng = np.random.default_rng(5)
    if which == "block":
        mix = gm.Mixture.block([0.6, 0.4], [0.3, 1.5], means="antipodal", labels="onehot")
    else:
        sigma, mu = np.exp(rng.uniform(-1, 1, (5, 2))), rng.standard_normal((5, 2))
        mix = gm.Mixture.spectral(sigma, mu, rho=[0.45, 0.55], labels="onehot")
    P = np.array([[1.0, -1.0]]) / np.sqrt(2.0)
    Qh, Vh = rng.uniform(0.2, 1.5, (2, 1, 1)), rng.uniform(0.2, 1.5, (2, 1, 1))
    Mh = rng.standard_normal((2, 1))
    ref = multi_output_elastic_net_prior(mix, lam, l1_ratio, Qh, Mh, Vh, P)
    pen = gm.make_penalty("l1" if l1_ratio == 1.0 else "elastic-net", l1_ratio)
    out = prior_mod.PRIORS[(type(pen), "spectral")](pen, mix, lam, Qh, Mh, Vh, P=P)
    assert 0.0 < float(np.mean(ref.atom_nonzero)) < 1.0
    for key in ("Q", "M", "V", "psi_w", "penalty", "atom_nonzero", "l1_norm"):
        np.testing.assert_allclose(getattr(out, key), getattr(ref, key), rtol=1e-12, atol=5e-14)


def test_two_class_prior_near_the_zero_estimator_keeps_q_positive():
    """Where ``P(|B| > t)`` is ~1e-40 (an elastic net at large ``lam``), the general
    prior's ``Q`` rounded to ``-3e-40``, a state the observables refused; the closed form's
    is positive."""
    mix = gm.Mixture.block([0.63, 0.37], [0.29, 1.51], means="antipodal", labels="onehot")
    P = np.array([[1.0, -1.0]]) / np.sqrt(2.0)
    pen = gm.make_penalty("elastic-net", 0.7)
    hats = (np.full((2, 1, 1), 0.114), np.array([[0.0807], [-0.0807]]), np.full((2, 1, 1), 0.114))
    out = prior_mod.PRIORS[(type(pen), "spectral")](pen, mix, 8.2, *hats, P=P)
    assert np.all(out.Q > 0) and np.all(out.V > 0) and np.all(out.Q < 1e-30)


@pytest.mark.parametrize(
    "loss,penalty,l1_ratio", [("square", "l1", None), ("logistic", "elastic-net", 0.5)]
)
def test_fixed_point_through_the_general_path_at_one_output(monkeypatch, loss, penalty, l1_ratio):
    """Binary labels solved with the L-dimensional prior (``P = 1``) instead of the
    soft-threshold closed forms: the same fixed point."""
    mix = gm.Mixture.sparse(0.2, 0.3, 1.0)
    kw = dict(lam=0.1, alpha=1.5, penalty=penalty, l1_ratio=l1_ratio)
    ref = gm.solve(mix, loss, **kw, tol=1e-12)
    general = {}
    for cls in (Lasso, ElasticNet):

        def forced(pen, mixture, lam, Qh, Mh, Vh, *, details=False, P=None):
            return multi_output_elastic_net_prior(mixture, lam, pen.l1_ratio, Qh, Mh, Vh, P)

        general[(cls, "spectral")] = forced
    monkeypatch.setattr(prior_mod, "PRIORS", {**prior_mod.PRIORS, **general})
    out = gm.solve(mix, loss, **kw, tol=1e-12)
    for key in ("test_error", "train_error", "train_loss", "nonzero_fraction", "l1_norm"):
        assert abs(getattr(out, key) - getattr(ref, key)) < 1e-10, key
    np.testing.assert_allclose(out.Q, ref.Q, atol=1e-10)
    np.testing.assert_allclose(out.M, ref.M, atol=1e-10)


@pytest.mark.parametrize("penalty,l1_ratio", [("l1", None), ("elastic-net", 0.6)])
def test_two_class_cross_entropy_lasso_is_the_binary_logistic_lasso(penalty, l1_ratio):
    """Softmax on two classes with ``lam r(W)`` is logistic on ``w = W_1 - W_2`` with
    ``Penalty.two_class_binary`` (lasso: the same ``lam``); the one-hot problem goes through
    the L-dimensional prior (two outputs, one effective), the binary one through the closed
    forms.  Lasso: the least-l1 split of ``w`` is ``[w, 0]`` or ``[0, -w]``, so half the
    entries of ``W*`` are non-zero where ``w`` is."""
    lam, alpha = 0.2, 1.5
    onehot = gm.Mixture.isotropic(0.5, "antipodal", labels="onehot")
    binary = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    pen = gm.make_penalty(penalty, l1_ratio)
    lam_b, pen_b = pen.two_class_binary(lam)
    a = gm.solve(onehot, "cross-entropy", lam=lam, alpha=alpha, penalty=penalty, l1_ratio=l1_ratio)
    b = gm.solve(binary, "logistic", lam=lam_b, alpha=alpha, **pen_b.describe())
    for key in ("test_error", "train_error", "train_loss"):
        assert abs(getattr(a, key) - getattr(b, key)) < 1e-7, key
    assert abs(a.l1_norm - b.l1_norm) < 1e-7  # ||[w, 0]||_1 = ||w||_1
    expect = b.nonzero_fraction / 2 if penalty == "l1" else b.nonzero_fraction
    assert abs(a.nonzero_fraction - expect) < 1e-7


@pytest.mark.parametrize(
    "penalty,l1_ratio",
    [("l1", None), pytest.param("elastic-net", 0.5, marks=pytest.mark.slow)],
)
def test_three_class_free_energy_identities(penalty, l1_ratio):
    """K = 3 cross-entropy: the free energy equals ``alpha eps_l + lam E r(W*)`` (the prior's
    potential ``-E[w^T A w] / 2`` and ``E r(w)``) and is stationary in every order parameter
    (the prior's ``Q, M, V`` are the derivatives of its potential) — measured 1.1e-9 and
    7.2e-10 for the largest central difference."""
    three = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    lam, alpha = 0.15, 1.4
    res = gm.solve(
        three,
        "cross-entropy",
        lam=lam,
        alpha=alpha,
        penalty=penalty,
        l1_ratio=l1_ratio,
        tol=1e-12,
        estimate_error=False,
    )
    assert 0.0 < res.nonzero_fraction < 1.0
    assert check_free_energy(res, lam=lam, alpha=alpha, eps=1e-6) < 1e-7


# ----------------------------------------------------------------------------- bad input
def test_l1_on_dense_covariances_is_refused_naming_the_combination():
    rng = np.random.default_rng(0)
    covs = _psd(rng, 3, 5, ridge=0.5)
    dense = gm.Mixture.dense(rng.standard_normal((3, 5)) / np.sqrt(5), covs)
    with pytest.raises(ValueError, match="penalty 'l1' is not available on a 'dense'") as e:
        gm.solve(dense, "cross-entropy", lam=0.1, alpha=1.0, penalty="l1")
    assert "\n" not in str(e.value)


# ----------------------------------------------------------------------------- exact ERM
#: (loss, lam, d, seeds, saga tolerance): K = 3 one-hot, Delta = 0.5, simplex means,
#: alpha = 2.  Square loss: lam = 0.01 keeps 97% of the entries of W*, lam = 0.3 half.
#: Cross-entropy (separable at alpha = 2, so small lam is sparse too: 45% at lam = 0.01):
#: 40% at lam = 0.1, 10% at lam = 1.  Square loss by coordinate descent (tol 1e-10),
#: cross-entropy by scikit-learn's multinomial saga (C = 1 / lam, entrywise l1 on all K rows,
#: unpenalised intercept: gaussmix.theory.model.conventions) at the sweeps' tolerance SAGA_L1_TOL
ERM_CASES = [
    ("square", 0.01, 1000, 6, None),
    ("square", 0.3, 1000, 6, None),
    ("cross-entropy", 0.1, 400, 3, 1e-5),
    ("cross-entropy", 1.0, 400, 3, 1e-5),
]


@pytest.mark.slow
@pytest.mark.parametrize("loss,lam,d,seeds,tol", ERM_CASES)
def test_three_class_lasso_matches_exact_erm(loss, lam, d, seeds, tol):
    """Test error, training error, training loss and the fraction of non-zero entries of
    W* within 4 standard errors of the seeds' mean (finite-size effects at these d are
    below them: at d = 1600 the square-loss point lam = 0.01 agrees within 1 SE)."""
    from gaussmix.simulate.simulation import simulate

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    th = gm.solve(mix, loss, penalty="l1", lam=lam, alpha=2.0)
    sim = simulate(
        mix, loss=loss, penalty="l1", lam=lam, alpha=2.0, d=d, seeds=seeds, seed=1, tol=tol
    )
    for key in ("test_error", "train_error", "train_loss", "nonzero_fraction"):
        # (+ 1e-9: a training error of exactly 0 in every seed has no spread)
        assert abs(getattr(th, key) - sim.mean[key]) <= 4 * sim.se[key] + 1e-9, (
            key,
            getattr(th, key),
            sim.mean[key],
            sim.se[key],
        )


@pytest.fixture
def rule_of_lines():
    """The prior's rule of lines on every atom, the exact moments of a diagonal metric
    (``lasso._decoupled_atoms``) off: the K = 3 square loss with one-hot labels keeps its
    metrics diagonal, so its prior is exact and its rule never refined; the tests of the
    rule's refinement (which every non-diagonal metric takes: the K = 4 cross-entropy, a
    square loss from a non-diagonal start) run it on that problem as before."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lasso_mod, "_decoupled_atoms", lambda A, shift_free: np.zeros(len(A), bool))
        yield


def test_diagonal_metric_moments_are_the_soft_thresholds_exactly():
    """A diagonal metric decouples the prox into soft thresholds, ``w_i = S(g_i) / a_i``:
    the closed-form moments (and the one-dimensional rule of the cross moments, panels at
    the kinks) agree with the rule of lines as it converges (64 x 64 panels, within the
    change from 32 x 32 that estimates the lines' own error) and with a Monte Carlo of the
    soft thresholds (5 standard errors), on atoms with correlated fields, a rank-one field
    and an output whose field is exactly its mean."""
    rng = np.random.default_rng(3)
    J, L, lam = 3, 3, 0.4
    A = np.einsum("ja,ab->jab", rng.uniform(0.5, 2.0, (J, L)), np.eye(L))
    X = rng.normal(size=(J, L, L))
    cov = X @ np.swapaxes(X, 1, 2)
    cov[1] = np.outer(X[1, 0], X[1, 0])  # rank one
    cov[2, 0, :] = cov[2, :, 0] = 0.0  # a deterministic output
    mean = rng.normal(size=(J, L))
    P = np.eye(L)
    exact = gaussian_l1_moments(A, P, mean, cov, lam)
    assert lasso_mod._decoupled_atoms(A, False).all()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lasso_mod, "_decoupled_atoms", lambda A, shift_free: np.zeros(len(A), bool))
        coarse, lines = (
            gaussian_l1_moments(A[:1], P, mean[:1], cov[:1], lam, panels=n) for n in (32, 64)
        )
    for key in ("mean", "jacobian", "nonzero", "l1", "second"):  # within the lines' change
        a, b, c = (getattr(m, key)[:1] for m in (exact, lines, coarse))
        assert np.max(np.abs(a - b)) <= np.max(np.abs(b - c)), key
    n = 100_000
    for j in range(J):
        ev, vec = np.linalg.eigh(cov[j])
        g = mean[j] + (rng.normal(size=(n, L)) * np.sqrt(np.clip(ev, 0, None))) @ vec.T
        w = np.sign(g) * np.maximum(np.abs(g) - lam, 0.0) / np.diag(A[j])
        ww = np.einsum("na,nb->nab", w, w)
        se = ww.std(axis=0) / np.sqrt(n) + 1e-12 * np.abs(exact.second[j])  # (rounding)
        assert np.all(np.abs(ww.mean(axis=0) - exact.second[j]) < 5 * se), j
        active = np.diag(exact.jacobian[j]) * np.diag(A[j])
        assert np.allclose(active, (w != 0).mean(axis=0), atol=5e-3), j


# ----------------------------------------------------------------------------- the prior's error
def _three_class(loss, lam, **kw):
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    return gm.solve(mix, loss, penalty="l1", lam=lam, alpha=2.0, **kw)


def _check_bounds_finer(res, fine):
    """Every observable's integration error bounds its change under the much finer rule."""
    for key in ("test_error", "train_error", "train_loss"):
        change = abs(getattr(res, key) - getattr(fine, key))
        assert change <= res.integration_errors[key], (key, change, res.integration_errors)


def test_prior_error_estimate_two_effective_outputs():
    """K = 3 cross-entropy lasso (two effective outputs: a one-dimensional outer rule with
    panels ending at the kinks of its integrand).  By default one refinement (64 -> 128
    panels) estimates 3.5e-11 on the test error and bounds the change a rule of 512 panels
    makes (8.7e-12); from a coarse rule (4 -> 8 panels) the estimate is 8e-4, warns naming
    the prior and the remedy, and bounds that change too.  The result's state is the fixed point of
    its map (the prior's panels travel with it)."""
    from gaussmix.theory.solve.state import residual_scale

    # (tol = 1e-11: at the default 1e-8 the iteration's own error, ~1e-11 here, is as large
    # as the estimate, and no difference of two solves resolves it)
    res = _three_class("cross-entropy", 0.1, tol=1e-11)
    assert res.state.prior_panels == 128
    assert 0.0 < res.integration_errors["test_error"] < 1e-9
    fine = _three_class(
        "cross-entropy", 0.1, tol=1e-11, prior_panels=512, estimate_error=False, init=res
    )
    _check_bounds_finer(res, fine)
    with pytest.warns(gm.IntegrationWarning, match=r"lasso prior.*prior_panels=8"):
        coarse = _three_class("cross-entropy", 0.1, prior_panels=4, max_refine=1)
    assert coarse.state.prior_panels == 8 and coarse.integration_errors["test_error"] > 1e-5
    _check_bounds_finer(coarse, fine)
    T, x = coarse.state.map(), coarse.state.x  # (with 64 panels the residual is ~1e-4)
    assert np.max(np.abs(T(x) - x) / residual_scale(x, 3, 2)) < 1e-7


@pytest.mark.slow
def test_prior_error_estimate_three_effective_outputs(rule_of_lines):
    """K = 3 square-loss lasso (three effective outputs, L = 3: a two-dimensional outer
    rule, the channel in closed form): one refinement (8 x 8 -> 16 x 16 panels) estimates
    4.2e-5 on the test error and warns; the automatic refinement reaches 32 x 32 (estimate
    4.3e-7, no warning).  Both bound the change a rule of 64 x 64 panels makes."""
    with pytest.warns(gm.IntegrationWarning, match=r"lasso prior.*prior_panels=16"):
        one = _three_class("square", 0.3, max_refine=1)
    assert one.params["quadrature"] == "closed-form"
    assert one.integration_errors["test_error"] > 1e-6
    auto = _three_class("square", 0.3, init=one)
    assert auto.state.prior_panels == 32 and auto.integration_errors["test_error"] < 1e-6
    fine = _three_class("square", 0.3, prior_panels=64, estimate_error=False, init=auto)
    _check_bounds_finer(one, fine)
    _check_bounds_finer(auto, fine)


def test_prior_refinements_start_from_the_last_resolves_pairs(monkeypatch, rule_of_lines):
    """Each refinement of the prior's rule after the first re-solves by defect correction
    (the channel in closed form: the coarser rule's map corrected by the two rules'
    difference at the last fixed point, then the finer rule's own map from there), the
    first by the finer map from the fixed point; each run with the secant pairs
    the run before it ended with (the Jacobian model at the nearest state and map), the
    first with the channel rule's; all with the estimate's longer memory; the finer map's
    run converges at its first evaluations; and the answer is the fixed point of its finest
    map, within the estimate of the change a finer rule makes.  The corrected map's known
    first image is the general path's (:func:`_check_known_coarse_image`)."""
    from gaussmix.theory.solve import defect, refinement
    from gaussmix.theory.solve.estimate import resolve_memory
    from gaussmix.theory.solve.state import residual_scale

    runs = []
    real = refinement.iterate

    def spy(T, x0, anderson, **kw):
        out = real(T, x0, anderson, **kw)
        corrected = isinstance(T, defect.DefectCorrected)
        if corrected or T.prior_panels is not None:
            runs.append((corrected, anderson, out))
        return out

    monkeypatch.setattr(refinement, "iterate", spy)
    monkeypatch.setattr(defect, "iterate", spy)
    mix = gm.Mixture.isotropic(0.35, "gaussian", n_clusters=3)
    res = gm.solve(mix, "square", penalty="l1", lam=0.13, alpha=2.7)
    # (8 -> 16 panels by the finer map; 16 -> 32 a corrected run and the finer map's)
    assert res.state.prior_panels == 32
    assert [c for c, _, _ in runs] == [False, True, False]
    starts = [a for _, a, _ in runs]
    assert all(s.memory == resolve_memory(gm.SolverOptions()) for s in starts)

    def same(a, b):  # (the same pairs: the very arrays)
        return len(a) == len(b) and all(u is v for u, v in zip(a, b))

    assert not starts[0].empty
    for k in range(1, 3):
        assert same(starts[k].dxs, runs[k - 1][2].anderson.dxs)
        assert same(starts[k].dgs, runs[k - 1][2].anderson.dgs)
    assert runs[2][2].converged and runs[2][2].n_iter <= 2
    T, x = res.state.map(), res.state.x
    assert np.max(np.abs(T(x) - x) / residual_scale(x, 3, 3)) < 1e-7
    monkeypatch.undo()
    fine = gm.solve(
        mix, "square", penalty="l1", lam=0.13, alpha=2.7, prior_panels=48,
        estimate_error=False, init=res,
    )  # fmt: skip
    _check_bounds_finer(res, fine)
    _check_known_coarse_image(res, monkeypatch)


def _check_known_coarse_image(res, monkeypatch) -> None:
    """The defect-corrected map of :func:`~gaussmix.theory.solve.defect.corrected_at` (the
    coarse image at the state where the correction is formed known: a
    :class:`~gaussmix.theory.solve.iteration.KnownImage` inside it) against the general
    path, the same correction with the coarse prior evaluated, at ``res``'s fixed point
    (16 -> 32 panels): there the same image to the bit (the known coarse image plus the
    correction) and the same memory handed on (its channel evaluation, no prior), without
    a prior evaluation; at another state the general path's image and memory."""
    from gaussmix.theory.solve import fixed_point
    from gaussmix.theory.solve.defect import DefectCorrected, corrected_at
    from gaussmix.theory.solve.fixed_point import MapMemory, new_map

    s = res.state
    T2 = s.map()
    T = new_map(s.problem, s.rule, T2, prior_panels=16)
    x = s.x
    ev, _ = T2.hats_memory(x)
    g2, _ = T2.image(x, ev, MapMemory(ev=ev))
    gc, _ = T.image(x, ev, MapMemory(ev=ev))
    known, aux = corrected_at(T, x, g2, gc, MapMemory(ev=ev))
    general = DefectCorrected(T, g2 - gc)
    priors = []
    real = fixed_point.prior_update

    def spy(*args, **kw):
        priors.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(fixed_point, "prior_update", spy)
    for x_at in (x, x * (1.0 + 1e-3)):
        b_ev, b_mem = general.hats_memory(x_at, MapMemory(ev=ev))
        gb, mb = general.image(x_at, b_ev, b_mem)
        assert len(priors) == 1  # (the general path evaluates the coarse prior)
        a_ev, a_mem = known.hats_memory(x_at, aux)
        ga, ma = known.image(x_at, a_ev, a_mem)
        assert ga.tobytes() == gb.tobytes()
        assert ma.prior is None and mb.prior is None
        assert ma.ev.Vhat.tobytes() == mb.ev.Vhat.tobytes()
        if x_at is x:  # (the known image: no prior evaluated, the memory the given one)
            assert len(priors) == 1 and ma.ev is ev
            assert ga.tobytes() == (gc + (g2 - gc)).tobytes()
        else:
            assert len(priors) == 2
        priors.clear()
    monkeypatch.undo()


def test_prior_resolves_keep_their_last_iterate_or_the_image_at_their_start(monkeypatch):
    """The finer prior rule's re-solves return their last iterate (converged: the memory of
    its evaluation then serves the observables and the statistics, no evaluation of their
    own), except where the re-solve converged at its first evaluation: that iterate is the
    coarser rule's fixed point, and the answer is the image there (the finer rule's change,
    which moves the test error of a state near the zero estimator by more than ``tol``)."""
    from gaussmix.theory.prior import prior as prior_module
    from gaussmix.theory.solve import refinement

    runs, calls = [], []
    real, real_prior = refinement.image_at_start, prior_module.gaussian_l1_moments

    def spy(out):  # (each re-solve's outcome as its run returned it, and the answer)
        runs.append((out.x, out.image, real(out)))
        return runs[-1][2]

    def count(*args, **kw):
        calls.append(kw.get("panels"))
        return real_prior(*args, **kw)

    monkeypatch.setattr(refinement, "image_at_start", spy)
    monkeypatch.setattr(prior_module, "gaussian_l1_moments", count)
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    at_start = gm.solve(mix, "cross-entropy", penalty="l1", lam=5.0, alpha=0.1)
    x0, image, out = runs[-1]  # (x0: the last iterate of a run converged at its start)
    assert out.converged and out.n_iter == 1
    assert not np.array_equal(image, x0)
    np.testing.assert_array_equal(at_start.state.x, image)
    runs.clear()
    calls.clear()
    mix = gm.Mixture.isotropic(0.88, "gaussian", n_clusters=3)
    moved = gm.solve(mix, "cross-entropy", penalty="l1", lam=0.0357, alpha=0.0688)
    last, image, out = runs[-1]
    assert out.converged and out.n_iter >= 2
    assert not np.array_equal(last, image)
    np.testing.assert_array_equal(moved.state.x, last)  # the last iterate, not the image
    # the finest rule's evaluations are the re-solve's own: none for the statistics
    assert calls.count(moved.state.prior_panels) == out.n_iter


def test_prior_refines_again_only_where_its_target_is_within_reach():
    """The prior's rule is refined again while its last change of the test error or the
    training loss exceeds ``quad_tol`` and, for each that does, the channel's part and the
    evaluation's own leave room for the target (a channel in closed form always does)."""
    from gaussmix.theory.solve.refinement import _prior_refinement_reaches as reaches

    def parts(te, tl):
        return {"test_error": te, "train_loss": tl, "train_error": 1.0, "test_loss": 1.0}

    zero, tol = parts(0.0, 0.0), 1e-7
    assert reaches(parts(1e-5, 0.0), zero, zero, tol)  # closed form: as before
    assert not reaches(parts(1e-8, 1e-8), zero, zero, tol)  # within quad_tol
    assert reaches(parts(1e-5, 0.0), parts(5e-8, 1e-5), zero, tol)  # room where it exceeds
    assert not reaches(parts(1e-5, 0.0), parts(1e-5, 0.0), zero, tol)  # the channel's 1e-5
    assert not reaches(parts(1e-5, 0.0), zero, parts(2e-7, 0.0), tol)  # the evaluation's own
    assert not reaches(parts(1e-5, 1e-5), parts(0.0, 1e-6), zero, tol)  # one without room
    assert reaches(parts(1e-5, 0.0), zero, zero, 0.0)  # quad_tol = 0, closed form


def test_prior_error_not_estimated_is_nan_and_warns(monkeypatch):
    """Where no refined prior rule is affordable (five or more effective outputs: forced
    here by a cap below the K = 3 cross-entropy's ~400 lines) the prior's error is NaN, the
    integration error is NaN (not a silent 0), and the solver says so."""
    from gaussmix.theory.solve import refinement

    monkeypatch.setattr(refinement, "MAX_PRIOR_ESTIMATE_LINES", 200)
    with pytest.warns(gm.IntegrationWarning, match="integration error is not estimated"):
        res = _three_class("cross-entropy", 0.1, max_refine=1)
    assert np.isnan(res.integration_error)
    assert all(np.isnan(v) for v in res.integration_errors.values())
    assert res.success and res.state.prior_panels is None


def test_prior_panels_leave_other_priors_alone():
    """``prior_panels`` acts on the multi-output lasso only: ridge, and the lasso with one
    effective output (closed forms; the two-class cross-entropy's line integrals are exact),
    solve to the same bits with it, and report no prior error."""
    from gaussmix.theory.prior.prior import prior_quadrature_dim

    three = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    onehot2 = gm.Mixture.isotropic(0.5, "antipodal", labels="onehot")
    binary = gm.Mixture.sparse(0.2, 0.3, 1.0)
    cases = [
        (three, "square", {}),
        (onehot2, "cross-entropy", {"penalty": "l1"}),
        (binary, "square", {"penalty": "l1"}),
    ]
    for mix, loss, kw in cases:
        a = gm.solve(mix, loss, lam=0.2, alpha=1.5, **kw)
        b = gm.solve(mix, loss, lam=0.2, alpha=1.5, prior_panels=100, **kw)
        np.testing.assert_array_equal(a.state.x, b.state.x)
        assert a.integration_errors == b.integration_errors
        assert prior_quadrature_dim(a.state.problem) == 0


@pytest.mark.parametrize(
    "K, loss, outputs", [(5, "square", 5), (6, "square", 6), (6, "cross-entropy", 5)]
)
@pytest.mark.parametrize("penalty", ["l1", "elastic-net"])
def test_too_many_effective_outputs_for_the_lasso_prior_are_refused_at_the_door(
    K: int, loss: str, outputs: int, penalty: str
) -> None:
    """The multi-output lasso's prior integrates over ``L' - 1 <= 3`` dimensions: a problem
    with more effective outputs is refused when it is made, naming the penalty (it failed
    inside the first iteration with 'quadrature dim must be <= 3')."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=K)
    l1_ratio = 0.5 if penalty == "elastic-net" else None
    with pytest.raises(ArgumentError) as info:
        gm.make_problem(mix, loss, lam=0.1, alpha=1.0, penalty=penalty, l1_ratio=l1_ratio)
    assert info.value.argument == "penalty"
    assert f"has {outputs} (K = {K} clusters)" in str(info.value)
    # the largest that fit are made: K = 4 square, K = 5 cross-entropy (four outputs each)
    for k, name in ((4, "square"), (5, "cross-entropy")):
        four = gm.Mixture.isotropic(0.5, "simplex", n_clusters=k)
        gm.make_problem(four, name, lam=0.1, alpha=1.0, penalty=penalty, l1_ratio=l1_ratio)


@pytest.mark.parametrize(
    "Lp,L,shift_free", [(1, 1, False), (1, 2, True), (2, 2, False), (2, 3, True), (3, 3, False)]
)
@pytest.mark.parametrize("lam", [0.05, 0.4, 2.0])
def test_compiled_line_moments_are_the_numpy_pieces(Lp, L, shift_free, lam):
    """The compiled pass over the lines
    (:func:`gaussmix.theory.numerics.lasso_kernels.l1_line_moments`,
    the default) gives the moments of the numpy reference (the pieces of
    :func:`_region_pieces` integrated by :func:`_integrate_pieces`) to rounding, on three
    atoms with their own metrics and laws (the rule's lines ordered by atom)."""
    rng = np.random.default_rng(5 * Lp + L)
    P = _complement_of_ones(L) if shift_free else np.eye(L)
    A = P.T @ _psd(rng, 3, Lp, ridge=0.1) @ P
    cov = _psd(rng, 3, Lp, ridge=0.3)
    mean = 0.3 * rng.standard_normal((3, Lp))
    fast = gaussian_l1_moments(A, P, mean, cov, lam, shift_free=shift_free)
    ref = gaussian_l1_moments(A, P, mean, cov, lam, shift_free=shift_free, compiled=False)
    for what in ("mean", "second", "jacobian", "nonzero", "l1"):
        x, y = getattr(fast, what), getattr(ref, what)
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1.0, np.abs(y).max()))


@pytest.mark.parametrize("L,shift_free", [(3, True), (2, False)])
@pytest.mark.parametrize("lam", [0.05, 0.4, 2.0])
def test_compiled_kinks_are_the_numpy_kinks(L, shift_free, lam):
    """The kinks across lines of two effective outputs from the compiled kernel
    (:func:`gaussmix.theory.numerics.lasso_kernels.l1_kinks_2d`, the default) are those of
    the numpy reference :func:`_kinks_across_lines` to rounding, atom by atom."""
    from gaussmix.theory.numerics.quadrature import graded_edges
    from gaussmix.theory.numerics.tolerances import XI_MAX
    from gaussmix.theory.prior.lasso import (
        _compiled_kinks,
        _kinks_across_lines,
        _merge_edges,
        _pattern_jacobians,
    )

    rng = np.random.default_rng(11 * L + int(10 * lam))
    P = _complement_of_ones(L) if shift_free else np.eye(L)
    A = P.T @ _psd(rng, 4, 2, ridge=0.1) @ P
    cov = _psd(rng, 4, 2, ridge=0.3)
    mean = 0.3 * rng.standard_normal((4, 2))
    ev, vec = np.linalg.eigh(cov)
    R = (vec * np.sqrt(ev)[:, None, :]) @ np.swapaxes(vec, 1, 2)
    ref = _kinks_across_lines(A, P, mean, R, lam, shift_free)
    fast = _compiled_kinks(A, P, mean, R, lam, _pattern_jacobians(A, shift_free))
    assert sum(k.size for k in ref) > 0
    edges = graded_edges(16, 2.0, XI_MAX)
    for x, y in zip(fast, ref, strict=True):
        # the panel edges they make (kinks equal to rounding are merged)
        x, y = _merge_edges(edges, x), _merge_edges(edges, y)
        assert x.size == y.size
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-11 * XI_MAX)


def test_metric_kept_positive_definite_within_its_bound():
    """The multi-output prior's metric (``_positive_metric``): a ``V_c`` indefinite by at
    most ``METRIC_NEG_RTOL`` of its scale (the lasso's near its zero estimator: eigenvalues
    1.4e-11, 2.6e-17, -1.3e-20) is moved onto the cone, positive definite, by no more than
    its negative eigenvalue plus the floor, and no farther from any positive semi-definite
    matrix (here the truth it was perturbed from); a positive definite one is returned to
    the bit, and one indefinite beyond the bound too (for the solver's cone test)."""
    from gaussmix.theory.numerics.tolerances import METRIC_EIG_FLOOR, METRIC_NEG_RTOL

    rng = np.random.default_rng(5)
    U = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    truth = (U * np.array([1e-25, 2.6e-17, 1.4e-11])) @ U.T
    noisy = truth + (U * np.array([-1.3e-20, 0.0, 0.0])) @ U.T
    deep = (U * np.array([-1e-3, 0.5, 1.0])) @ U.T
    fine = _psd(rng, 1, 3, ridge=0.1)[0]
    V = np.stack([noisy, deep, fine])
    out = prior_mod._positive_metric(V)
    assert np.linalg.eigvalsh(out[0])[0] > 0.0
    moved = np.linalg.norm(out[0] - noisy, 2)
    assert moved <= 1.3e-20 + 1.01 * METRIC_EIG_FLOOR * 1.4e-11
    assert np.linalg.norm(out[0] - truth) <= np.linalg.norm(noisy - truth)
    assert 1.3e-20 / 1.4e-11 < METRIC_NEG_RTOL < 1e-3
    np.testing.assert_array_equal(out[1:], V[1:])
    np.testing.assert_array_equal(prior_mod._positive_metric(V[2:]), V[2:])


def test_first_run_stops_near_the_prior_rules_error(monkeypatch, rule_of_lines):
    """Where the prior's refinement re-solves from it (the square loss), the cold run of the
    prior's first rule (8 x 8 panels) stops once its residual is below
    ``RULE_ERROR_FRACTION`` times the two rules' difference ``|T16(x) - T8(x)| / s`` at its
    end, well above ``tol``; the refinement's first evaluation is the one that check made
    (16 x 16 panels: the same image at the same state); and the answer is the 16 x 16
    rule's fixed point or finer, and its estimate bounds the change a 64 x 64 rule makes."""
    from gaussmix.theory.numerics.tolerances import RULE_ERROR_FRACTION
    from gaussmix.theory.solve import batch_solve
    from gaussmix.theory.solve.fixed_point import new_map
    from gaussmix.theory.solve.state import residual_scale

    seen = []
    real = batch_solve.iterate_to_rule_error

    def spy(T, x0, anderson, finer, **kw):
        out, known = real(T, x0, anderson, finer, **kw)
        seen.append((T, out, known))
        return out, known

    monkeypatch.setattr(batch_solve, "iterate_to_rule_error", spy)
    mix = gm.Mixture.isotropic(0.75, "gaussian", n_clusters=3, rho=np.array([0.83, 0.09, 0.08]))
    kw = dict(penalty="l1", lam=1.3e-3, alpha=0.094)
    res = gm.solve(mix, "square", **kw)
    monkeypatch.undo()
    ((T, out, known),) = seen
    x = out.x
    T16 = new_map(T.problem, T.rule, T, prior_panels=16)
    s = residual_scale(x, T.K, T.L)
    delta = np.max(np.abs(T16(x) - T(x)) / s)
    assert out.converged and 1e-6 < out.residual < RULE_ERROR_FRACTION * delta
    assert known is not None and (known[0] == x).all()
    np.testing.assert_allclose(known[1], T16(x), rtol=0, atol=1e-14 * np.max(np.abs(x)))
    assert res.state.prior_panels >= 16
    fine = gm.solve(mix, "square", prior_panels=64, estimate_error=False, **kw)
    _check_bounds_finer(res, fine)
