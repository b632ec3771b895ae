"""One contract for the proximal map, run for every registered loss through every backend.

The proximal map of Theorem 1, ``h = argmin_h 1/2 (h - omega)^T V^{-1} (h - omega) +
loss(y, h)``, is computed by three kinds of code:

* the numpy oracle, ``Loss.prox`` (:mod:`gaussmix.theory.channel.losses`): the loss's own method
  (closed forms for the square and hinge losses, a scalar safeguarded Newton for the
  logistic loss) and, for every smooth loss, the base class's damped Newton;
* the compiled channel kernels (:mod:`gaussmix.theory.numerics.kernels`: ``logistic_channel``,
  ``ce3_channel``, ``ce_channel``), through
  :func:`gaussmix.theory.channel.channel.compiled_moments`;
* the exact finite-sample ERM each loss declares (``Loss.fit_erm``,
  :mod:`gaussmix.theory.channel.erm`) on a data set in which every sample has a feature of its
  own: the ridge then decouples the samples, and each sample's output is the proximal
  point at ``omega = b`` (the fitted intercept) with the metric ``V = s^2 / lam I`` (``s``
  its feature).

Every backend must meet its own stopping rule (the stationarity residual ``r = h - omega +
V grad loss(y, h)`` below :func:`~gaussmix.theory.channel.losses.prox_threshold` with the curvature
the backend uses; for the ERM, its KKT residual below its tolerance), and any two must agree
to what those residuals allow: the proximal objective is 1-strongly convex in the metric
``V^{-1}``, so ``|h_a - h*|_2 <= sqrt(cond V) |r_a|_2``, whence ``|h_a - h_b|_2 <= sqrt(cond
V) (|r_a|_2 + |r_b|_2)`` plus the rounding of the residuals' evaluation.  The hinge loss is
not differentiable: its proximal points must satisfy the subgradient condition instead.
"""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.channel.channel import compiled_kernel, compiled_moments
from gaussmix.theory.channel.erm import DEFAULT_TOL, kkt_residual
from gaussmix.theory.channel.losses import LOSSES, Loss, ReducedLoss, prox_threshold
from gaussmix.theory.model.penalties import RIDGE
from gaussmix.theory.numerics.tolerances import PROX_TOL

EPS = np.finfo(float).eps
#: ulps of the residual's scale ``(1 + |omega| + |h|) (1 + ||V|| ||H||)`` that its
#: evaluation in numpy may differ by from the backend's own (a few operations, each one ulp)
ROUNDING_ULPS = 16
#: the ERM's stationarity tolerance here (its rule: kkt_residual <= tol)
ERM_TOL = 1e-12

MIXTURES = {
    "binary": gm.Mixture.isotropic(0.5, "antipodal", labels="binary"),
    "3-class": gm.Mixture.isotropic(0.5, "simplex", n_clusters=3),
    "4-class": gm.Mixture.isotropic(0.5, "simplex", n_clusters=4),
}


def _problems() -> list:
    out = []
    for name in LOSSES.names():
        for label, mix in MIXTURES.items():
            try:
                problem = make_problem(mix, name, lam=1.0, alpha=2.0)
            except (ValueError, TypeError):
                continue  # labels the loss does not take
            out.append(pytest.param(problem, id=f"{name}-{label}"))
    return out


PROBLEMS = _problems()


def test_every_registered_loss_has_a_case():
    names = {p.values[0].loss.name for p in PROBLEMS}
    assert names == set(LOSSES.names())
    # and every compiled kernel serves one of them
    assert {type(compiled_kernel(p.values[0].loss)).__name__ for p in PROBLEMS} >= {
        "_LogisticKernel",
        "_CrossEntropyKernel",
    }


# ----------------------------------------------------------------------------- backends
def _backends(loss: Loss) -> dict:
    """Name -> ``(prox(y, omega, V), curvature(y, h, V))``: each backend's proximal map and
    the curvature its stopping rule multiplies the threshold by."""

    def vh_norm(y, h, V):  # ||V H(h)||, max row sum (the numpy Newton's rule)
        VH = V[:, None] @ loss.hess(y[:, None], h)
        return np.abs(VH).sum(axis=-1).max(axis=-1)

    out = {"numpy": (lambda y, om, V: loss.prox(y, om, V), vh_norm)}
    if loss.smooth and type(loss).prox is not Loss.prox:
        out["numpy-newton"] = (lambda y, om, V: Loss.prox(loss, y, om, V), vh_norm)
    kernel = compiled_kernel(loss)
    if kernel is not None:

        def compiled(y, om, V):
            w = np.full(om.shape[1], 1.0 / om.shape[1])
            return compiled_moments(kernel, loss, y, om, V, w, None)[1]

        curv = vh_norm
        if isinstance(loss, ReducedLoss):  # ||V|| 2 (1 - max p) (_kernels._node_scale)

            def curv(y, h, V):
                z = h @ loss.P
                p = np.exp(z - z.max(axis=-1, keepdims=True))
                p /= p.sum(axis=-1, keepdims=True)
                vnorm = np.abs(V).sum(axis=-1).max(axis=-1)[:, None]
                return vnorm * 2.0 * (1.0 - p.max(axis=-1))

        out["compiled"] = (compiled, curv)
    return out


def _residual(loss: Loss, y, omega, V, h) -> np.ndarray:
    """``h - omega + V grad loss(y, h)`` at every node (K, N, L)."""
    return h - omega + np.einsum("kij,knj->kni", V, loss.grad(y[:, None], h))


def _rounding(loss: Loss, omega, V, h) -> np.ndarray:
    """The rounding allowance of a residual evaluated in numpy, per node."""
    size = 1.0 + np.abs(omega).max(axis=-1) + np.abs(h).max(axis=-1)
    vnorm = np.abs(V).sum(axis=-1).max(axis=-1)[:, None]
    return ROUNDING_ULPS * EPS * size * (1.0 + vnorm)


def _inputs(problem, rng: np.random.Generator, n: int = 48):
    """Nodes ``omega`` (K, N, L) over several scales and SPD metrics ``V`` (K, L, L) with
    eigenvalues in [1e-2, 1e2]."""
    K, L = problem.n_clusters, problem.dim
    scale = 10.0 ** rng.uniform(-1, 1.5, size=(K, n, 1))
    omega = rng.standard_normal((K, n, L)) * scale
    U = np.linalg.qr(rng.standard_normal((K, L, L)))[0]
    ev = 10.0 ** rng.uniform(-2, 2, size=(K, L))
    V = np.einsum("kij,kj,klj->kil", U, ev, U)
    return problem.y, omega, 0.5 * (V + np.swapaxes(V, -1, -2))


def _agree(name_a, ha, ra, name_b, hb, rb, V, rounding) -> None:
    ev = np.linalg.eigvalsh(V)
    cond = (ev[:, -1] / ev[:, 0])[:, None]
    gap = np.linalg.norm(ha - hb, axis=-1)
    L = ha.shape[-1]
    bound = np.sqrt(cond) * (
        np.linalg.norm(ra, axis=-1) + np.linalg.norm(rb, axis=-1) + 2 * np.sqrt(L) * rounding
    )
    worst = np.unravel_index(np.argmax(gap / bound), gap.shape)
    assert np.all(gap <= bound), (name_a, name_b, worst, gap[worst], bound[worst])


def _hinge_violation(y, omega, V, h, rounding) -> np.ndarray:
    """How far ``h`` is from the hinge prox at each node, from the subgradient condition.

    Any candidate of the form ``h = omega + v y a`` with ``a`` in [0, 1] (checked) is
    optimal iff ``a = 1`` where ``y h < 1``, ``a = 0`` where ``y h > 1``, ``y h = 1`` for
    ``0 < a < 1``; the margin ``y h`` is increasing in ``a``, so ``|h - h*|`` is at most the
    violation of that condition: ``max(0, 1 - y h)`` at ``a = 0``, ``max(0, y h - 1)`` at
    ``a = 1``, ``|y h - 1|`` in between (plus the rounding of ``a``)."""
    v = V[:, None, :, 0]
    yb = y[:, None, :]
    a = (yb * (h - omega) / v)[..., 0]
    margin = (yb * h)[..., 0]
    tol_a = rounding / v[..., 0]
    assert np.all((a >= -tol_a) & (a <= 1.0 + tol_a)), "not of the form omega + v y a"
    viol = np.where(
        a <= tol_a,
        np.maximum(0.0, 1.0 - margin),
        np.where(a >= 1.0 - tol_a, np.maximum(0.0, margin - 1.0), np.abs(margin - 1.0)),
    )
    return viol + 2.0 * rounding


@pytest.mark.parametrize("problem", PROBLEMS)
def test_every_backend_meets_its_rule_and_they_agree(problem):
    rng = np.random.default_rng(18)
    loss = problem.loss
    y, omega, V = _inputs(problem, rng)
    results = {}
    for name, (prox, curvature) in _backends(loss).items():
        h = prox(y, omega, V)
        assert h.shape == omega.shape and np.all(np.isfinite(h)), name
        rounding = _rounding(loss, omega, V, h)
        if not loss.smooth:  # a closed form: optimal to rounding
            assert np.all(_hinge_violation(y, omega, V, h, rounding) <= 3.0 * rounding), name
            continue
        r = _residual(loss, y, omega, V, h)
        if loss.affine_prox:  # closed form: exact up to the rounding of a linear solve
            ev = np.linalg.eigvalsh(np.eye(V.shape[-1]) + V)
            limit = rounding * (ev[:, -1] / ev[:, 0])[:, None]
        else:
            limit = prox_threshold(PROX_TOL, omega, h, curvature(y, h, V)) + rounding
        worst = np.unravel_index(np.argmax(np.abs(r).max(axis=-1) / limit), limit.shape)
        assert np.all(np.abs(r).max(axis=-1) <= limit), (name, worst)
        results[name] = (h, r, rounding)
    names = list(results)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ha, ra, rda = results[a]
            hb, rb, rdb = results[b]
            _agree(a, ha, ra, b, hb, rb, V, np.maximum(rda, rdb))


@pytest.mark.parametrize("problem", PROBLEMS)
def test_the_exact_erm_is_a_batch_of_proximal_maps(problem):
    """One feature per sample: sample nu's output is the proximal point at ``omega = b``
    with ``V = s_nu^2 / lam I``; every backend, on those inputs, finds the ERM's outputs."""
    rng = np.random.default_rng(7)
    loss = problem.loss
    base = loss.base if isinstance(loss, ReducedLoss) else loss
    m = 8  # samples per cluster
    Y = np.repeat(problem.y, m, axis=0)
    n = Y.shape[0]
    s = rng.uniform(0.3, 3.0, n)
    lam = 0.7
    Xs = np.diag(s)
    tol = ERM_TOL if base.smooth else DEFAULT_TOL["libsvm"]
    W, b, info = base.fit_erm(Xs, Y, lam, RIDGE, tol=tol)
    assert info["converged"], info
    h_full = Xs @ W.T + b
    # the batch in the problem's effective space: n "clusters" of one node each
    P = problem.P
    L = P.shape[0]
    u = (h_full @ P.T)[:, None, :]
    omega = np.broadcast_to(b @ P.T, (n, 1, L)).copy()
    V = (s**2 / lam)[:, None, None] * np.eye(L)
    y = Y
    rounding = _rounding(loss, omega, V, u)
    if not loss.smooth:  # libsvm: each output within its KKT violation of the prox
        viol = _hinge_violation(y, omega, V, u, rounding)
        for name, (prox, _) in _backends(loss).items():
            h = prox(y, omega, V)
            assert np.all(np.abs(h - u)[..., 0] <= viol + rounding), name
        return
    kkt = kkt_residual(Xs, Y, W, b, base, lam, RIDGE)
    r_erm = _residual(loss, y, omega, V, u)
    # the ERM's rule: |gradient entry| <= n tol; sample nu's gradient row is (lam / s) r_nu
    if info["solver"] == "closed-form":
        ev = np.linalg.eigvalsh(Xs.T @ Xs + lam * np.eye(n))
        tol_erm = n * EPS * ev[-1] / ev[0]  # rounding of the ridge solve
    else:
        tol_erm = tol
    assert kkt <= tol_erm, (kkt, tol_erm)
    limit = (s / lam)[:, None] * n * tol_erm + rounding
    assert np.all(np.abs(r_erm).max(axis=-1) <= limit)
    for name, (prox, _) in _backends(loss).items():
        h = prox(y, omega, V)
        r = _residual(loss, y, omega, V, h)
        _agree("erm", u, r_erm, name, h, r, V, rounding)
