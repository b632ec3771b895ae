"""Compiled kernels (gaussmix.theory.numerics.kernels) against the numpy reference paths they
replace:
channel moments (logistic, reduced cross-entropy), the wedge flux of the training error,
the closed-form small-matrix helpers, and the reporting of a failed proximal solve."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import random_spd

import gaussmix as gm
from gaussmix.theory.channel.channel import (
    _quadrature_moments,
    identity_prox_moments,
    sqrtm_psd,
)
from gaussmix.theory.channel.losses import CrossEntropyLoss, LogisticLoss, ReducedLoss
from gaussmix.theory.numerics import kernels as _kernels
from gaussmix.theory.numerics.ce_small_metric import (
    ce3_channel_small_metric,
    ce_channel_small_metric,
    small_metric,
)
from gaussmix.theory.numerics.quadrature import MAX_ORDER, GaussHermite, SobolRQMC
from gaussmix.theory.numerics.tolerances import PROX_TOL
from gaussmix.theory.problem.problem import _complement_of_ones
from gaussmix.theory.solve.observables import _wedge_probability, gaussian_risk
from gaussmix.theory.solve.solver import is_valid_state, solve_problem

FIELDS = ("Ef", "Eff", "Edf", "Eloss", "Eenv")


def _assert_moments_equal(a, b, rtol=1e-10, atol=1e-12):
    for f in FIELDS:
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=rtol, atol=atol, err_msg=f)


def _ce_state(rng, K, scale_m=1.0, v_range=(0.05, 5.0), q_range=(0.05, 5.0)):
    L = K - 1
    P = _complement_of_ones(K)
    loss = ReducedLoss(CrossEntropyLoss(), P)
    y = np.eye(K)[rng.permutation(K)]
    m = scale_m * rng.standard_normal((K, L))
    Q = np.stack([random_spd(rng, L, *q_range) for _ in range(K)])
    V = np.stack([random_spd(rng, L, *v_range) for _ in range(K)])
    return loss, y, m, Q, V


def _ce_kernel_inputs(loss, y, m, Q, V, rule):
    """The leading arguments of the cross-entropy kernels (labels, basis, nodes ``omega``,
    metric and its inverse) for a state and rule, and the weights."""
    omega = np.ascontiguousarray(m[:, None, :] + rule.nodes @ sqrtm_psd(Q))
    args = (
        np.argmax(y, axis=1).astype(np.int64),
        np.ascontiguousarray(loss.P),
        omega,
        np.ascontiguousarray(V),
        np.ascontiguousarray(np.linalg.inv(V)),
    )
    return args, np.ascontiguousarray(rule.weights)


@pytest.mark.parametrize("K", [3, 4])
@pytest.mark.parametrize(
    "scale_m,v_range",
    [(1.0, (0.05, 5.0)), (8.0, (0.05, 5.0)), (1.0, (1e-3, 1e-2)), (2.0, (20.0, 200.0))],
)
def test_cross_entropy_kernel_matches_numpy_path(K, scale_m, v_range):
    rng = np.random.default_rng(K * 100 + int(scale_m))
    loss, y, m, Q, V = _ce_state(rng, K, scale_m, v_range)
    rule = GaussHermite(12 if K == 3 else 6, K - 1)
    ref = _quadrature_moments(loss, y, m, Q, V, rule, None, compiled=False)[0]
    got = _quadrature_moments(loss, y, m, Q, V, rule, None, compiled=True)[0]
    _assert_moments_equal(got, ref)


@pytest.mark.parametrize("K", [2, 3, 4])
@pytest.mark.parametrize("v_range", [(1e-30, 1e-28), (1e-12, 1e-10), (0.02, 0.2)])
def test_cross_entropy_kernel_stein_term_at_small_metric(K, v_range):
    """``E[(I + H V)^{-1} H]`` at a small metric: about ``E[H]`` (0.5 of a two-class
    softmax at even odds), never the cancelling ``V^{-1} - V^{-1} A^{-1} V^{-1}``, which
    gave 0 at ``V ~ 1e-30`` (a two-class elastic net on its way to the zero estimator,
    whose bias then jumped to 1e9); around the switch of forms (``||V|| ||H|| ~ 0.1``)
    both agree with the numpy path."""
    rng = np.random.default_rng(K)
    loss, y, m, Q, V = _ce_state(rng, K, 1.0, v_range)
    rule = GaussHermite(12 if K < 4 else 6, K - 1)
    ref = _quadrature_moments(loss, y, m, Q, V, rule, None, compiled=False)[0]
    got = _quadrature_moments(loss, y, m, Q, V, rule, None, compiled=True)[0]
    _assert_moments_equal(got, ref)
    assert np.abs(got.Edf).max() > 0.01


def _metric(rng, L, eigenvalues):
    """A symmetric ``L x L`` metric with these eigenvalues in a random frame."""
    U = np.linalg.qr(rng.standard_normal((L, L)))[0]
    return (U * np.asarray(eigenvalues, dtype=float)) @ U.T


@pytest.mark.parametrize("K", [3, 4])
@pytest.mark.parametrize("kind", ["zero", "indefinite by rounding", "singular"])
def test_cross_entropy_kernel_at_a_singular_or_indefinite_metric(K, kind):
    """Where ``V`` is small the channel solves without ``V^{-1}`` (``small_metric``): at ``V``
    exactly zero, or indefinite by rounding as the multi-output lasso's metric near its
    zero estimator (eigenvalues 1.4e-11, 2.6e-17, -1.3e-20: ``V^{-1} + H`` has no Cholesky
    factor, every node failed), the moments are the closed form at ``V -> 0``, the
    identity prox (``h = omega``, ``f = -grad loss(omega)``, ``E[df] = E[H(omega)]``), to
    first order in ``||V||``; at a singular metric of moderate size, those of the numpy
    path (Newton on ``I + V H``, which never forms ``V^{-1}``)."""
    rng = np.random.default_rng(K + 40)
    loss, y, m, Q, _ = _ce_state(rng, K)
    L = K - 1
    eig = {
        "zero": [0.0] * L,
        "indefinite by rounding": [-1.3e-20, 2.6e-17, 1.4e-11][-L:],
        "singular": [0.0] * (L - 1) + [0.08],
    }[kind]
    V = np.stack([_metric(rng, L, eig) for _ in range(K)])
    assert all(small_metric(np.abs(v).sum(axis=1).max(), L) for v in V)
    rule = GaussHermite(8, L)
    got, warm = _quadrature_moments(loss, y, m, Q, V, rule, None, compiled=True)
    if kind == "singular":
        ref = _quadrature_moments(loss, y, m, Q, V, rule, None, compiled=False)[0]
        _assert_moments_equal(got, ref)
        return
    closed = identity_prox_moments(loss, y, m, Q, rule)
    vnorm = np.abs(V).max()
    _assert_moments_equal(got, closed, rtol=0.0, atol=vnorm + 1e-14)
    omega = m[:, None, :] + rule.nodes @ sqrtm_psd(Q)
    if kind == "zero":
        np.testing.assert_array_equal(warm.h, omega)
        _assert_moments_equal(got, closed, rtol=1e-13, atol=1e-15)
    else:  # the first-order term: h = omega - V grad(omega) + O(|V|^2)
        first = omega - np.einsum("kij,knj->kni", V, loss.grad(y[:, None, :], omega))
        # within the proximal solve's own threshold (relative to the size of omega and h:
        # ||V H|| ~ 1e-11 leaves its factor 1 + ||V H|| at 1)
        size = 1.0 + np.abs(omega).max(axis=-1) + np.abs(warm.h).max(axis=-1)
        assert np.all(np.abs(warm.h - first).max(axis=-1) <= 1.01 * PROX_TOL * size)


@pytest.mark.parametrize("K", [6, 10])
@pytest.mark.parametrize(
    "eigenvalues",
    ["small", "small, ill-conditioned", "small, 1e-30", "small, 1e-200", "moderate", "large"],
)
def test_many_class_cross_entropy_kernels_match_numpy_path(K, eigenvalues):
    """Five and nine reduced outputs, against the numpy path: the general kernel's Stein
    term as the clusters' sum of ``A^{-1}`` multiplied by ``V^{-1}`` once (``ce_stein``;
    ``moderate``, ``large``) or node by node in the ``B = H`` form; the clusters of small
    metric solved in whitened coordinates (``small``) or, where the metric's Cholesky factor
    is too ill-conditioned or too small to whiten, with ``I + V H`` (``small,
    ill-conditioned``, ``small, 1e-200``)."""
    from gaussmix.theory.numerics import ce_small_metric as cesm

    rng = np.random.default_rng(K + len(eigenvalues))
    L = K - 1
    loss, y, m, Q, _ = _ce_state(rng, K, 1.5)
    top = {"small": 0.02, "small, ill-conditioned": 0.02, "moderate": 1.0, "large": 50.0}
    top |= {"small, 1e-30": 1e-30, "small, 1e-200": 1e-200}
    spread = np.geomspace(1e-7 if eigenvalues == "small, ill-conditioned" else 0.3, 1.0, L)
    V = np.stack([_metric(rng, L, top[eigenvalues] * spread) for _ in y])
    small = cesm.small_metric(np.abs(V).sum(axis=-1).max(axis=-1), L)
    assert small.all() == eigenvalues.startswith("small")
    whiten = [cesm._whitening(v, np.zeros((L, L))) for v in V]
    plain = eigenvalues in ("small, ill-conditioned", "small, 1e-200")
    assert all(whiten) != plain and any(whiten) == all(whiten)
    rule = SobolRQMC(L, n_log2=7, n_rep=2)
    ref = _quadrature_moments(loss, y, m, Q, V, rule, None, compiled=False)[0]
    got = _quadrature_moments(loss, y, m, Q, V, rule, None, compiled=True)[0]
    _assert_moments_equal(got, ref)
    if all(whiten) or not small.all():  # (formed as symmetric matrices: lower triangles)
        np.testing.assert_array_equal(got.Edf, np.swapaxes(got.Edf, -1, -2))
    if top[eigenvalues] > 1e-3 and small.all():  # one check, no Newton step: the nodes not
        # converged at their start (omega) are counted
        args, w = _ce_kernel_inputs(loss, y, m, Q, V, rule)
        h = args[2].copy()
        assert cesm.ce_channel_small_metric(*args[:4], h, w, PROX_TOL, 1)[-1] > 0


@pytest.mark.parametrize("K", [3, 4, 5])
def test_small_metric_kernel_matches_the_general_kernel(K):
    """Where both apply (a small positive definite metric), the kernel without ``V^{-1}``
    (Newton on the residual, Jacobian ``I + V H``) and the general one (Newton on the
    proximal objective) find the same proximal points and moments, each within its
    stopping rule."""
    rng = np.random.default_rng(K + 60)
    loss, y, m, Q, V = _ce_state(rng, K, 2.0, (1e-3, 2e-2))
    args, w = _ce_kernel_inputs(loss, y, m, Q, V, GaussHermite(6, K - 1))
    omega = args[2]
    h_gen, h_small = omega.copy(), omega.copy()
    gen = _kernels.ce_channel(*args, h_gen, w, PROX_TOL, 100)
    small = ce_channel_small_metric(*args[:4], h_small, w, PROX_TOL, 100)
    assert gen[-1] == 0 and small[-1] == 0
    np.testing.assert_allclose(h_small, h_gen, rtol=0.0, atol=1e-11)
    for a, b in zip(small[:5], gen[:5]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["small", "tiny", "singular", "cut short"])
def test_three_class_small_metric_kernel_is_the_general_one_to_the_bit(kind):
    """The scalar three-class form of the small-metric kernel makes the general one's
    operations in the same order: the same proximal points, moments and failure count,
    bit for bit (also where Newton is cut short after one step and every node fails)."""
    rng = np.random.default_rng(7)
    v_range = (1e-12, 1e-10) if kind == "tiny" else (1e-3, 6e-2)
    loss, y, m, Q, V = _ce_state(rng, 3, 2.0, v_range)
    if kind == "singular":
        V = np.stack([_metric(rng, 2, [0.0, 0.08]) for _ in range(3)])
    assert all(small_metric(np.abs(v).sum(axis=1).max(), 2) for v in V)
    rule = GaussHermite(16, 2)
    omega = np.ascontiguousarray(m[:, None, :] + rule.nodes @ sqrtm_psd(Q))
    args = (np.argmax(y, axis=1).astype(np.int64), np.ascontiguousarray(loss.P), omega, V)
    w, max_iter = np.ascontiguousarray(rule.weights), 1 if kind == "cut short" else 100
    h_gen, h_ce3 = omega.copy(), omega.copy()
    gen = ce_channel_small_metric(*args, h_gen, w, PROX_TOL, max_iter)
    ce3 = ce3_channel_small_metric(*args, h_ce3, w, PROX_TOL, max_iter)
    assert (gen[-1] > 0) == (kind == "cut short")
    assert ce3[-1] == gen[-1]
    np.testing.assert_array_equal(h_ce3, h_gen)
    for a, b in zip(ce3[:5], gen[:5]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("K", [3, 4, 5, 7])
def test_cross_entropy_system_and_hessian_round_as_the_entrywise_sums(K):
    """The Newton system ``A = V^{-1} + H`` (lower triangle, all the Cholesky factor reads)
    and the Hessian ``H = P (diag p - p p^T) P^T`` of the compiled kernel, which form each
    product ``P_ik p_k`` once per row, round as the entry-by-entry sums
    ``V^{-1}_ij - Pp_i Pp_j + sum_k (P_ik p_k) P_jk`` (``H``: ``-Pp_i Pp_j + ...``), here in
    Python's IEEE doubles: the kernel's answers are unchanged to the bit."""
    rng = np.random.default_rng(K)
    P = _complement_of_ones(K)
    L = K - 1
    for _ in range(5):
        logits = 3.0 * rng.standard_normal(K)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        Pp = P @ p
        Vi = np.linalg.inv(random_spd(rng, L, 0.05, 5.0))
        A, H, A2 = np.full((L, L), np.nan), np.empty((L, L)), np.full((L, L), np.nan)
        _kernels._ce_system_hessian(Vi, P, p, Pp, A, H, np.empty(K))
        _kernels._ce_system(Vi, P, p, Pp, A2, np.empty(K))
        for i in range(L):
            for j in range(L):
                ta, th = Vi[i, j] - Pp[i] * Pp[j], -(Pp[i] * Pp[j])
                for k in range(K):
                    ta += P[i, k] * p[k] * P[j, k]
                    th += P[i, k] * p[k] * P[j, k]
                assert H[i, j] == th
                if j <= i:
                    assert A[i, j] == ta and A2[i, j] == ta
                else:  # the upper triangle is not written
                    assert np.isnan(A[i, j]) and np.isnan(A2[i, j])


@pytest.mark.parametrize("y", [1.0, -1.0])
@pytest.mark.parametrize("m,q,v", [(0.7, 0.8, 0.5), (-30.0, 2.0, 0.01), (3.0, 50.0, 400.0)])
def test_logistic_kernel_matches_numpy_path(y, m, q, v):
    loss = LogisticLoss()
    Y = np.array([[y], [-y]])
    M = np.array([[m], [-0.5 * m]])
    Q = np.array([[[q]], [[2 * q]]])
    V = np.array([[[v]], [[0.3 * v]]])
    rule = GaussHermite(64)
    ref = _quadrature_moments(loss, Y, M, Q, V, rule, None, compiled=False)[0]
    got = _quadrature_moments(loss, Y, M, Q, V, rule, None, compiled=True)[0]
    _assert_moments_equal(got, ref)


def test_warm_start_predictor_does_not_change_the_moments():
    """The warm start (ProxWarmStart) predicts the proximal points of a new evaluation from
    the previous one; the answer must be that of a cold start (only the number of Newton
    steps changes)."""
    rng = np.random.default_rng(7)
    loss, y, m, Q, V = _ce_state(rng, 3)
    rule = GaussHermite(10, 2)
    _, first = _quadrature_moments(loss, y, m, Q, V, rule)
    assert first.key == (rule, (3, rule.weights.size, 2))
    m2, Q2, V2 = m + 0.3, 1.2 * Q, 0.7 * V
    warm, after_warm = _quadrature_moments(loss, y, m2, Q2, V2, rule, first)
    cold, after_cold = _quadrature_moments(loss, y, m2, Q2, V2, rule, None)
    _assert_moments_equal(warm, cold, rtol=1e-11)
    np.testing.assert_allclose(after_warm.h, after_cold.h, atol=1e-11)


def test_kernel_proximal_points_are_stationary():
    """Prox optimality at the points the kernel returns: h - omega + V grad loss(h) = 0."""
    rng = np.random.default_rng(3)
    loss, y, m, Q, V = _ce_state(rng, 4, scale_m=3.0)
    args, w = _ce_kernel_inputs(loss, y, m, Q, V, GaussHermite(5, 3))
    omega = args[2]
    h = omega.copy()
    out = _kernels.ce_channel(*args, h, w, 1e-13, 100)
    assert out[-1] == 0
    g = h - omega + np.einsum("kij,knj->kni", V, loss.grad(y[:, None, :], h))
    assert np.abs(g).max() < 1e-11


def test_kernel_reports_nodes_that_did_not_converge():
    rng = np.random.default_rng(4)
    loss, y, m, Q, V = _ce_state(rng, 3, scale_m=5.0)
    args, w = _ce_kernel_inputs(loss, y, m, Q, V, GaussHermite(6, 2))
    omega = args[2]
    failed = _kernels.ce_channel(*args, omega.copy(), w, 1e-13, 1)[-1]
    assert 0 < failed <= omega.shape[0] * omega.shape[1]
    lf = _kernels.logistic_channel(
        np.array([1.0]), np.zeros((1, 4)), np.array([30.0]), np.zeros((1, 4)), w[:4], 1e-14, 1
    )[-1]
    assert lf == 4


@pytest.mark.parametrize("K", [3, 4])
def test_cross_entropy_kernels_stop_at_the_first_failed_node(monkeypatch, K):
    """ce3_channel (K = 3) and ce_channel (K = 4) return the status 1 at the first node
    whose proximal solve fails (the evaluation is lost: the channel raises), its earlier
    nodes solved as with enough iterations and the later ones' starts left as they were;
    the channel then raises."""
    import gaussmix.theory.channel.channel as channel

    kernel = _kernels.ce3_channel if K == 3 else _kernels.ce_channel
    rng = np.random.default_rng(4)
    loss, y, m, Q, V = _ce_state(rng, K, scale_m=5.0)
    args, w = _ce_kernel_inputs(loss, y, m, Q, V, GaussHermite(6, K - 1))
    omega = args[2]
    full = omega.copy()
    assert kernel(*args, full, w, 1e-13, 100)[-1] == 0
    h = omega.copy()
    assert kernel(*args, h, w, 1e-13, 3)[-1] == 1
    # in the kernel's order (cluster, node): the same proximal points up to the failed
    # node, which some nodes come after, and the starts untouched after it
    hf, ff, of = (a.reshape(-1, K - 1) for a in (h, full, omega))
    first = int(np.flatnonzero(np.any(hf != ff, axis=-1))[0])
    assert 0 < first < hf.shape[0] - 1
    np.testing.assert_array_equal(hf[first + 1 :], of[first + 1 :])
    monkeypatch.setattr(channel, "PROX_MAX_ITER", 3)
    with pytest.raises(FloatingPointError, match="did not converge"):
        channel.compiled_moments(channel.CROSS_ENTROPY_KERNEL, loss, y, omega, V, w, None)


@pytest.mark.parametrize("lam,alpha", [(1.0, 2.0), (0.01, 0.5), (10.0, 1.0)])
def test_compiled_wedge_matches_numpy_wedge(lam, alpha):
    gram = [[1.0, 0.2, -0.1], [0.2, 0.8, 0.0], [-0.1, 0.0, 1.3]]
    mix = gm.Mixture.isotropic([0.7, 0.5, 0.9], gram, rho=[0.3, 0.3, 0.4])
    res = gm.solve(mix, "cross-entropy", lam=lam, alpha=alpha)
    problem = res.state.problem
    Q, M, V, b = res.state.unpack()
    for c in range(3):
        p1, e1 = _wedge_probability(problem, c, M[c] + b, Q[c], V[c], compiled=True)
        p0, e0 = _wedge_probability(problem, c, M[c] + b, Q[c], V[c], compiled=False)
        assert abs(p1 - p0) < 1e-13
        assert e1 == pytest.approx(e0, rel=1e-3, abs=1e-15)


@pytest.mark.parametrize("L", [1, 2, 3])
def test_sqrtm_closed_forms_agree_with_the_eigendecomposition(L):
    rng = np.random.default_rng(L)
    Q = np.stack([random_spd(rng, L, 1e-6, 10.0) for _ in range(20)])
    S = sqrtm_psd(Q)
    np.testing.assert_allclose(S @ S, Q, atol=1e-12)
    np.testing.assert_allclose(S, np.swapaxes(S, 1, 2), atol=1e-14)
    # singular and slightly indefinite 2 x 2 blocks: clipped eigenvalues
    if L == 2:
        u = np.array([0.6, 0.8])
        Z = np.stack([np.outer(u, u), np.outer(u, u) - 1e-14 * np.eye(2)])
        S = sqrtm_psd(Z)
        np.testing.assert_allclose(S @ S, np.stack([np.outer(u, u)] * 2), atol=1e-7)


@pytest.mark.parametrize("L", [1, 2])
def test_closed_form_validity_check_agrees_with_eigenvalues(L):
    rng = np.random.default_rng(10 + L)
    K = 3
    for _ in range(200):
        Q = rng.standard_normal((K, L, L))
        Q = Q @ np.swapaxes(Q, 1, 2) - rng.uniform(0, 0.5) * np.eye(L)
        V = rng.standard_normal((K, L, L))
        V = V @ np.swapaxes(V, 1, 2) - rng.uniform(0, 0.5) * np.eye(L)
        x = np.concatenate([Q.ravel(), rng.standard_normal(K * L), V.ravel(), np.zeros(L)])
        eq, ev = np.linalg.eigvalsh(Q), np.linalg.eigvalsh(V)
        scale = max(1.0, float(np.abs(eq).max()))
        expected = bool(eq.min() >= -1e-9 * scale and ev.min() > 0)
        assert is_valid_state(x, K, L) == expected


@pytest.mark.parametrize("m", [1, 2, 3])
def test_symmetric_eigenvalues_closed_forms_agree_with_lapack(m):
    from gaussmix.theory.numerics.linalg import sym_eigvals

    rng = np.random.default_rng(20 + m)
    for scale in (1e-300, 1e-8, 1.0, 1e8, 1e300):
        A = scale * rng.standard_normal((500, m, m))  # not symmetric: its symmetric part
        ref = np.linalg.eigvalsh(0.5 * (A + np.swapaxes(A, 1, 2)))
        got = sym_eigvals(A)
        assert got.shape == ref.shape and np.all(np.isfinite(got))
        top = np.abs(ref).max(axis=1, keepdims=True)
        assert np.all(np.abs(got - ref) <= 4e-16 * m * top)
    # singular, diagonal and zero blocks (the PSD checks decide on the smallest one)
    u = np.array([0.6, 0.8])
    special = {1: [[[0.0]], [[2.0]]], 2: [np.outer(u, u), np.diag([3.0, -1.0]), np.zeros((2, 2))]}
    if m in special:
        B = np.asarray(special[m], dtype=float)
        np.testing.assert_allclose(sym_eigvals(B), np.linalg.eigvalsh(B), atol=1e-15)


def test_gauss_hermite_order_is_capped_where_numpy_weights_overflow():
    with pytest.raises(ValueError, match="quadrature order n must be <= 360"):
        GaussHermite(MAX_ORDER + 1)
    assert GaussHermite(MAX_ORDER).weights.sum() == pytest.approx(1.0)
    assert GaussHermite(300).refined() is None
    assert GaussHermite(200).refined().n == 300


def test_continuation_from_a_coarse_rule_does_not_change_the_fixed_point():
    """K = 4 cross-entropy: the default 3-d rule starts from a coarse-rule solution; the
    fixed point is the one reached from the cold start (within the solver tolerance)."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=4)
    res = gm.solve(mix, "cross-entropy", lam=1.0, alpha=1.5, estimate_error=False)
    assert GaussHermite(10, 3).coarsened() is not None
    cold = solve_problem(res.state.problem, estimate_error=False, continuation=False, tol=1e-10)
    # (the K = 4 test error is a 3-d orthant probability by seeded QMC: error ~1e-8)
    assert res.test_error == pytest.approx(cold.test_error, abs=1e-7)
    assert res.train_loss == pytest.approx(cold.train_loss, abs=1e-8)
    np.testing.assert_allclose(res.Q, cold.Q, atol=1e-7)


def test_prox_points_for_the_qmc_training_error_match_the_numpy_prox():
    """K >= 4 training error (QMC over omega) takes its proximal points from the kernel."""
    from gaussmix.theory.solve.observables import _prox_points

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=4)
    res = gm.solve(mix, "cross-entropy", lam=0.5, alpha=1.0, estimate_error=False)
    problem = res.state.problem
    Q, M, V, b = res.state.unpack()
    rng = np.random.default_rng(0)
    omega = (M + b)[:, None, :] + rng.standard_normal((200, 3)) @ sqrtm_psd(Q)
    np.testing.assert_allclose(
        _prox_points(problem, omega, V), problem.loss.prox(problem.y, omega, V), atol=1e-10
    )


@pytest.mark.parametrize(
    "scale_m,v_range,q_range",
    [
        (1.0, (0.05, 5.0), (0.05, 5.0)),
        (10.0, (0.05, 5.0), (0.05, 5.0)),
        (1.0, (1e-4, 1e-3), (0.05, 5.0)),
        (2.0, (50.0, 500.0), (10.0, 100.0)),
    ],
)
def test_three_class_fast_path_matches_the_general_kernel(scale_m, v_range, q_range):
    """K = 3: the scalar kernel (ce3_channel) against the general one, on the same nodes
    and warm start, including its proximal points."""
    rng = np.random.default_rng(int(scale_m * 10))
    loss, y, m, Q, V = _ce_state(rng, 3, scale_m, v_range, q_range)
    args, w = _ce_kernel_inputs(loss, y, m, Q, V, GaussHermite(12, 2))
    omega = args[2]
    h_gen, h_fast = omega.copy(), omega.copy()
    gen = _kernels.ce_channel(*args, h_gen, w, 1e-13 * (1 + np.abs(omega).max()), 100)
    fast = _kernels.ce3_channel(*args, h_fast, w, 1e-13 * (1 + np.abs(omega).max()), 100)
    assert gen[-1] == 0 and fast[-1] == 0
    np.testing.assert_allclose(h_fast, h_gen, atol=1e-11)
    # The moments are built from f = V^-1 (h - omega): a rounding error of h (eps |omega|)
    # reaches f amplified by ||V^-1||, by cancellation where V is small and h ~ omega, and
    # the second moments double it.  The two kernels order their arithmetic differently, so
    # they may differ by that much (measured: 2.5e-13 absolute at V ~ 1e-4, 1e-3 times the
    # bound), beyond the 1e-11 relative agreement they show elsewhere.
    eps = np.finfo(float).eps
    amplified = eps * (1 + np.abs(omega).max()) * np.abs(args[4]).max()
    for a, b in zip(fast[:5], gen[:5]):
        bound = 4 * amplified * (1 + np.abs(b).max())
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=max(1e-13, bound))


@pytest.mark.parametrize("seed", [0, 1])
def test_whole_solves_with_and_without_the_kernels_agree(seed, monkeypatch):
    """End to end: the fixed point and its errors with the compiled kernels equal those of
    the numpy reference path (random three-class mixtures and binary mixtures)."""
    import gaussmix.theory.channel.channel as channel

    rng = np.random.default_rng(seed)
    A = rng.normal(size=(3, 3))
    k3 = gm.Mixture.isotropic(rng.uniform(0.2, 2, 3), A @ A.T / 3, rho=rng.dirichlet([3] * 3))
    binary = gm.Mixture.isotropic(
        rng.uniform(0.2, 2, 2), "antipodal", labels="binary", rho=rng.dirichlet([3, 3])
    )
    for mix, loss in ((k3, "cross-entropy"), (binary, "logistic")):
        lam, alpha = float(10 ** rng.uniform(-1, 0.5)), float(10 ** rng.uniform(-0.3, 0.6))
        fast = gm.solve(mix, loss, lam=lam, alpha=alpha, tol=1e-10)
        with monkeypatch.context() as m:
            m.setattr(channel, "compiled_kernel", lambda loss: None)
            ref = gm.solve(mix, loss, lam=lam, alpha=alpha, tol=1e-10)
        for key in ("test_error", "train_error", "train_loss", "free_energy"):
            assert getattr(fast, key) == pytest.approx(getattr(ref, key), abs=1e-9), key
        np.testing.assert_allclose(fast.Q, ref.Q, atol=1e-8)
        np.testing.assert_allclose(fast.M, ref.M, atol=1e-8)


@pytest.mark.parametrize("three_class", [True, False])
def test_a_kernel_split_between_threads_gives_the_same_bits(monkeypatch, three_class):
    """The clusters of a large evaluation run in consecutive parts on several threads
    (:func:`gaussmix.theory.channel.channel.kernel_threads`): every moment and proximal point is
    the one call's to the bit (each cluster is summed over its nodes alone), and the
    threads are used where the work is large."""
    from gaussmix.theory.channel import channel

    rng = np.random.default_rng(7)
    rows = 7  # (an odd number: parts of different sizes)
    if three_class:
        parts = [_ce_state(rng, 3) for _ in range(3)]
        loss = parts[0][0]
        y, m, Q, V = (np.concatenate([p[i] for p in parts])[:rows] for i in (1, 2, 3, 4))
        rule = GaussHermite(12, 2)
    else:
        loss = LogisticLoss()
        y = rng.choice([-1.0, 1.0], size=(rows, 1))
        m = rng.standard_normal((rows, 1))
        Q = rng.uniform(0.1, 4.0, (rows, 1, 1))
        V = rng.uniform(0.05, 5.0, (rows, 1, 1))
        rule = GaussHermite(60, 1)
    kernel = channel.compiled_kernel(loss)
    omega = m[:, None, :] + rule.nodes @ sqrtm_psd(Q)
    split: list[int] = []
    run = kernel.run

    def spy(loss, y, omega, *args):
        split.append(omega.shape[0])
        return run(loss, y, omega, *args)

    monkeypatch.setattr(type(kernel), "run", lambda self, *a: spy(*a))
    monkeypatch.setattr(channel.os, "sched_getaffinity", lambda pid: set(range(3)), raising=False)
    monkeypatch.setattr(channel.numba_config, "NUMBA_NUM_THREADS", 3)
    monkeypatch.setattr(channel, "KERNEL_THREADS_MIN_WORK", 10**12)
    one, h_one = channel.compiled_moments(kernel, loss, y, omega, V, rule.weights, None)
    risk_one = gaussian_risk(loss, y, m, Q, rule)
    assert split == [rows]
    monkeypatch.setattr(channel, "KERNEL_THREADS_MIN_WORK", 1)
    many, h_many = channel.compiled_moments(kernel, loss, y, omega, V, rule.weights, None)
    assert sorted(split[1:]) == [2, 2, 3]  # three cores: three parts
    assert np.array_equal(h_one, h_many)
    for f in FIELDS:
        assert np.array_equal(getattr(one, f), getattr(many, f)), f
    # the test loss's Gaussian risk, each cluster's alone (a compiled risk: cross-entropy)
    assert np.array_equal(gaussian_risk(loss, y, m, Q, rule), risk_one)


def test_kernel_threads_keep_to_numbas_thread_count(monkeypatch):
    """A process whose numba thread count is smaller than its cores (a joblib worker, whose
    ``NUMBA_NUM_THREADS`` is its share of the cores, or a user's setting) splits a kernel
    into no more parts than that count; the cores and the work bound it otherwise."""
    from gaussmix.theory.channel import channel

    monkeypatch.setattr(channel.os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(channel, "KERNEL_THREADS_MIN_WORK", 1)
    monkeypatch.setattr(channel.numba_config, "NUMBA_NUM_THREADS", 8)
    assert channel.kernel_threads(10, 100) == 4  # the cores
    assert channel.kernel_threads(3, 100) == 3  # one per cluster
    monkeypatch.setattr(channel.numba_config, "NUMBA_NUM_THREADS", 1)
    assert channel.kernel_threads(10, 100) == 1
    monkeypatch.setattr(channel.numba_config, "NUMBA_NUM_THREADS", 2)
    assert channel.kernel_threads(10, 100) == 2


def test_kernel_threads_below_two_threads_work_is_one_without_asking_the_cores(monkeypatch):
    """Below twice the work of a thread the answer is one thread, without the system call
    for the process's cores (every channel evaluation asks); above it the cores, numba's
    thread count, the clusters and the work bound it, as the formula says."""
    from gaussmix.theory.channel import channel

    cores = {"n": 3}

    def affinity(pid):
        if cores["n"] is None:
            raise AssertionError("the cores were asked for one thread's work")
        return set(range(cores["n"]))

    monkeypatch.setattr(channel.os, "sched_getaffinity", affinity, raising=False)
    monkeypatch.setattr(channel.numba_config, "NUMBA_NUM_THREADS", 8)
    for rows, nodes, work in [(1, 99, 50), (2, 49, 50), (3, 33, 50), (40, 2052, 50_000)]:
        cores["n"] = None
        assert channel.kernel_threads(rows, nodes, work) == 1
        cores["n"] = 3
        assert rows * nodes < 2 * work
    for rows, nodes, work, want in [(1, 100, 50, 1), (2, 50, 50, 2), (4, 50, 50, 3)]:
        assert channel.kernel_threads(rows, nodes, work) == want
        assert want == max(1, min(3, rows, rows * nodes // work))


def test_in_parts_reuses_one_pool_and_a_part_does_not_split_again(monkeypatch):
    """:func:`gaussmix.theory.channel.channel.in_parts` runs its other parts on the process's one
    pool (the same worker threads call after call, not a pool a call), the first part on
    the calling thread, the parts in order; a part that splits again runs on its own
    thread (a worker waiting for the pool could wait for itself)."""
    import threading

    from gaussmix.theory.channel import channel

    monkeypatch.setattr(channel.os, "sched_getaffinity", lambda pid: set(range(3)), raising=False)
    monkeypatch.setattr(channel.numba_config, "NUMBA_NUM_THREADS", 3)
    monkeypatch.setattr(channel, "KERNEL_THREADS_MIN_WORK", 1)
    workers: set[int] = set()

    def run(rows: slice) -> tuple[slice, int, list]:
        workers.add(threading.get_ident())
        inner = channel.in_parts(4, 1, lambda r: (r, threading.get_ident()))
        return rows, threading.get_ident(), inner

    for _ in range(5):
        done = channel.in_parts(7, 1, run)
        assert [d[0] for d in done] == [slice(0, 2), slice(2, 5), slice(5, 7)]
        assert done[0][1] == threading.get_ident()
        # on the calling thread a part splits again (its other parts queue on the pool)
        assert [r for r, _ in done[0][2]] == [slice(0, 1), slice(1, 3), slice(3, 4)]
        for _, ident, inner in done[1:]:
            assert inner == [(slice(0, 4), ident)]  # in a worker: one part, its own thread
    assert len(workers - {threading.get_ident()}) <= 2  # one pool of two workers
    # the caller's numpy error state holds in every part (the iteration silences overflow
    # of trial states far from the fixed point; a worker must not warn for them)
    with np.errstate(divide="ignore", over="raise"):
        states = channel.in_parts(7, 1, lambda rows: np.geterr())
    assert [(e["divide"], e["over"]) for e in states] == [("ignore", "raise")] * 3


def test_three_class_lasso_at_the_zero_estimator_solves_cold():
    """A K = 3 cross-entropy lasso whose fixed point is the zero estimator (lam = 2.29, a
    spectral mixture of 16 directions, unequal priors).  Until the channel of small metrics
    (V ~ 1e-17 here) had a kernel of its own without ``V^{-1}``, the proximal solves failed
    at 17072 nodes and the homotopy failed too (``ConvergenceError``).  Checked against what
    ``W* = 0`` implies, independently of the solver: the bias alone fits the labels, so
    ``softmax(b)`` is the priors, and every point is given the most likely class."""
    rng = np.random.default_rng(558555015)
    delta = 0.46204232774675064
    sigma = delta * rng.uniform(0.25, 1.0, size=(16, 3))
    rho = np.array([0.1949611832402162, 0.6634954250732339, 0.14154339168655])
    mix = gm.Mixture.spectral(sigma, rng.normal(size=(16, 3)), rho=rho)
    res = gm.solve(mix, "cross-entropy", lam=2.2883691490014226, alpha=0.6636820286700923,
                   penalty="l1")  # fmt: skip
    assert res.success
    assert np.abs(res.Q).max() < 1e-12 and np.abs(res.M).max() < 1e-12
    # b to the fixed point's tolerance (FIXED_POINT_TOL = 1e-8 relative; measured 3e-15)
    p = np.exp(res.b - res.b.max())
    np.testing.assert_allclose(p / p.sum(), rho, rtol=0, atol=1e-8)
    # the margins of argmax(M_c + b) are ~1 against sqrt(Q) < 1e-6: no point is misplaced
    assert res.test_error == pytest.approx(1.0 - rho.max(), abs=1e-12)
