"""The fixed-point solver against independent references: the square-loss closed form,
exact reparametrisations between paths, relabelling symmetry, stationarity of the RS free
energy, and its value (the minimal risk)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import check_free_energy

import gaussmix as gm


def _square_closed_form(delta, gram, rho, lam, alpha):
    """Independent derivation for the square loss, one-hot labels, Sigma_k = delta I.

    V = v I with lam v^2 + (lam + alpha delta - delta) v = delta (docs/design.md pitfall 3),
    A = a I with a = lam + alpha delta / (1 + v); the bias solves sum_k rho_k E f_k = 0,
    which leaves a linear system for the means M and a scalar equation for Q.
    """
    K = len(rho)
    Y = np.eye(K)
    c0 = lam + alpha * delta - delta
    v = (-c0 + np.sqrt(c0**2 + 4 * lam * delta)) / (2 * lam)
    a = lam + alpha * delta / (1 + v)
    Pi = np.diag(rho)
    C = np.eye(K) - np.outer(np.ones(K), rho)  # rows: y - M - b = C (Y - M)
    c = alpha / (a * (1 + v))
    B = c * gram @ Pi @ C
    Mm = np.linalg.solve(np.eye(K) + B, B @ Y)
    b = rho @ (Y - Mm)
    R = Y - Mm - b
    Mhat = alpha / (1 + v) * Pi @ R
    X = Mhat.T @ gram @ Mhat + delta * alpha / (1 + v) ** 2 * (R.T @ Pi @ R)
    g = delta**2 * alpha / (a**2 * (1 + v) ** 2)
    Q = delta / a**2 * X / (1 - g)
    return Q, Mm, v, b


@pytest.mark.parametrize(
    "K,means,rho,lam,alpha",
    [
        (3, "simplex", None, 1.0, 2.0),
        (3, "gaussian", [0.2, 0.3, 0.5], 0.05, 0.7),
        (4, "gaussian", [0.1, 0.2, 0.3, 0.4], 2.0, 3.0),
        (2, "simplex", [0.3, 0.7], 0.3, 1.5),
    ],
)
def test_square_loss_equals_closed_form(K, means, rho, lam, alpha):
    delta = 0.6
    mix = gm.Mixture.isotropic(delta, means, n_clusters=K, rho=rho)
    res = gm.solve(mix, "square", lam=lam, alpha=alpha, tol=1e-14)
    Q, M, v, b = _square_closed_form(delta, mix.gram, mix.rho, lam, alpha)
    for k in range(K):
        np.testing.assert_allclose(res.Q[k], Q, atol=1e-10)
        np.testing.assert_allclose(res.V[k], v * np.eye(K), atol=1e-10)
    np.testing.assert_allclose(res.M, M, atol=1e-10)
    np.testing.assert_allclose(res.b, b, atol=1e-10)


@pytest.mark.parametrize("K,lam", [(3, 0.01), (4, 1.0), (5, 0.05), (6, 0.3)])
def test_square_loss_on_the_complement_of_ones_is_the_full_space_solve(K, lam):
    """The square loss with the ridge on one-hot labels is solved on the complement of
    ``1`` (``W 1 = 0``, ``1^T b = 1`` at its minimiser): the same fixed point, embedded, as
    the solve in the full label space (the loss and constraints of the unreduced space put
    back into the problem), with ``b``'s ``1 / K`` and ``V``'s, ``Vhat``'s component along
    ``1`` restored.  Both are iterated to ``tol = 1e-12``; the iterate is within about ``100
    tol`` of its fixed point (contraction up to 0.99), the observables' derivatives of order
    one: ``1e-9``."""
    from dataclasses import replace

    from gaussmix.theory.channel.losses import ReducedLoss, SquareLoss
    from gaussmix.theory.problem.problem import _output_space
    from gaussmix.theory.solve.solver import solve_problem

    rng = np.random.default_rng(K)
    A = rng.standard_normal((K, K))
    mix = gm.Mixture.isotropic(1.0, A @ A.T / 2, rho=rng.dirichlet(np.full(K, 3.0)))
    problem = gm.make_problem(mix, "square", lam=lam, alpha=0.8)
    assert isinstance(problem.loss, ReducedLoss) and problem.dim == K - 1
    P, constraints = _output_space(mix.labels, False)
    full = replace(problem, loss=SquareLoss(), P=P, constraints=constraints, symmetry=None)
    opts = gm.SolverOptions(tol=1e-12)
    a, b = solve_problem(problem, options=opts), solve_problem(full, options=opts)
    assert a.success and b.success
    for key in ("test_error", "train_error", "train_loss", "test_loss", "free_energy",
                "penalty_value", "l1_norm"):  # fmt: skip
        np.testing.assert_allclose(
            getattr(a, key), getattr(b, key), rtol=0, atol=1e-9, err_msg=key
        )
    for key in ("Q", "M", "V", "b", "Qhat", "Mhat", "Vhat"):
        np.testing.assert_allclose(
            getattr(a, key), getattr(b, key), rtol=1e-9, atol=1e-9, err_msg=key
        )
    np.testing.assert_allclose(a.b.sum(), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("lam,alpha", [(0.2, 0.5), (1.0, 2.0), (0.02, 3.0)])
@pytest.mark.parametrize("rho", [None, [0.35, 0.65]])
def test_two_class_cross_entropy_is_logistic_with_half_lambda(lam, alpha, rho):
    """Softmax with lam/2 ||W||^2 on two classes is binary logistic on w = W_1 - W_2 with
    lam_binary = lam / 2 (docs/design.md pitfall 3)."""
    delta = [0.4, 0.9]
    ce = gm.solve(
        gm.Mixture.isotropic(delta, "antipodal", rho=rho, labels="onehot"),
        "cross-entropy",
        lam=lam,
        alpha=alpha,
        tol=1e-12,
    )
    lo = gm.solve(
        gm.Mixture.isotropic(delta, "antipodal", rho=rho, labels="binary"),
        "logistic",
        lam=lam / 2,
        alpha=alpha,
        tol=1e-12,
    )
    u = np.array([1.0, -1.0])
    for k in range(2):
        np.testing.assert_allclose(u @ ce.Q[k] @ u, lo.Q[k, 0, 0], rtol=1e-8)
        np.testing.assert_allclose(u @ ce.V[k] @ u, lo.V[k, 0, 0], rtol=1e-8)
        np.testing.assert_allclose(u @ ce.M[k], lo.M[k, 0], rtol=1e-8)
    np.testing.assert_allclose(u @ ce.b, lo.b[0], atol=1e-8)
    for key in ("test_error", "train_error", "train_loss"):
        np.testing.assert_allclose(getattr(ce, key), getattr(lo, key), atol=1e-9)


def test_two_class_onehot_square_is_binary_square_with_half_loss():
    mix1 = gm.Mixture.isotropic([0.3, 0.8], "antipodal", rho=[0.4, 0.6], labels="onehot")
    mix2 = gm.Mixture.isotropic([0.3, 0.8], "antipodal", rho=[0.4, 0.6], labels="binary")
    a = gm.solve(mix1, "square", lam=0.3, alpha=1.7, tol=1e-13)
    b = gm.solve(mix2, "square", lam=0.3, alpha=1.7, tol=1e-13)
    u = np.array([1.0, -1.0])
    np.testing.assert_allclose(a.test_error, b.test_error, atol=1e-10)
    np.testing.assert_allclose(a.train_error, b.train_error, atol=1e-10)
    np.testing.assert_allclose(a.train_loss, 0.5 * b.train_loss, atol=1e-10)
    for k in range(2):
        np.testing.assert_allclose(u @ a.Q[k] @ u, b.Q[k, 0, 0], rtol=1e-9)
        np.testing.assert_allclose(u @ a.M[k], b.M[k, 0], rtol=1e-9)


CASES = [
    ("cross-entropy", "onehot", [0.3, 0.5, 0.8], [0.2, 0.3, 0.5]),
    ("square", "onehot", [0.3, 0.5, 0.8], [0.2, 0.3, 0.5]),
]


@pytest.mark.parametrize("loss,labels,delta,rho", CASES)
def test_relabelling_clusters_permutes_the_answer(loss, labels, delta, rho):
    gram = np.array([[1.0, 0.2, -0.1], [0.2, 0.8, 0.0], [-0.1, 0.0, 1.2]])
    mix = gm.Mixture.isotropic(delta, gram, rho=rho, labels=labels)
    perm = np.array([2, 0, 1])
    r0 = gm.solve(mix, loss, lam=0.5, alpha=1.3, tol=1e-12)
    # clusters listed in another order, each keeping its label
    r1 = gm.solve(mix.permute(perm), loss, lam=0.5, alpha=1.3, tol=1e-12)
    np.testing.assert_allclose(r1.Q, r0.Q[perm], atol=1e-8)
    np.testing.assert_allclose(r1.M, r0.M[perm], atol=1e-8)
    np.testing.assert_allclose(r1.b, r0.b, atol=1e-8)
    # the classes renamed: output coordinates permute
    Pm = np.eye(3)[perm]
    mix2 = gm.Mixture.isotropic(delta, gram, rho=rho, labels=np.eye(3)[perm])
    r2 = gm.solve(mix2, loss, lam=0.5, alpha=1.3, tol=1e-12)
    np.testing.assert_allclose(r2.Q, Pm.T @ r0.Q @ Pm, atol=1e-8)
    np.testing.assert_allclose(r2.M, r0.M @ Pm, atol=1e-8)
    for key in ("test_error", "train_error", "train_loss", "free_energy"):
        np.testing.assert_allclose(getattr(r1, key), getattr(r0, key), atol=1e-9)
        np.testing.assert_allclose(getattr(r2, key), getattr(r0, key), atol=1e-9)


def test_symmetric_mixture_gives_symmetric_parameters():
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    r = gm.solve(mix, "cross-entropy", lam=0.3, alpha=1.5, tol=1e-12)
    for perm in ([1, 2, 0], [1, 0, 2]):
        Pm = np.eye(3)[:, perm]  # Pm e_k = e_perm[k]
        for k in range(3):
            np.testing.assert_allclose(Pm @ r.Q[k] @ Pm.T, r.Q[perm[k]], atol=1e-9)
            np.testing.assert_allclose(Pm @ r.M[k], r.M[perm[k]], atol=1e-9)
    np.testing.assert_allclose(r.b, 0.0, atol=1e-10)
    # the gauge of the cross-entropy: Q_c 1 = 0
    np.testing.assert_allclose(r.Q @ np.ones(3), 0.0, atol=1e-12)


FE_CASES = [
    ("logistic", gm.Mixture.isotropic([0.4, 0.7], "antipodal", rho=[0.3, 0.7], labels="binary")),
    ("hinge", gm.Mixture.isotropic([0.4, 0.7], "antipodal", rho=[0.3, 0.7], labels="binary")),
    ("square", gm.Mixture.isotropic([0.4, 0.7, 0.5], "gaussian", rho=[0.2, 0.3, 0.5])),
    ("cross-entropy", gm.Mixture.isotropic([0.4, 0.7, 0.5], "gaussian", rho=[0.2, 0.3, 0.5])),
    (
        "logistic",
        gm.Mixture.block([0.3, 0.7], [0.2, 1.0], labels="binary"),
    ),
]


@pytest.mark.parametrize("loss,mix", FE_CASES, ids=[c[0] for c in FE_CASES])
def test_free_energy_is_stationary_and_equals_the_minimal_risk(loss, mix):
    lam, alpha = 0.3, 1.4
    res = gm.solve(mix, loss, lam=lam, alpha=alpha, tol=1e-13, estimate_error=False)
    worst = check_free_energy(res, lam=lam, alpha=alpha)
    assert worst < 1e-7, worst


def test_spectral_representations_agree():
    """One atom, identical blocks and an empirical law with the same moments give the same
    fixed point (ridge only sees second moments of the means)."""
    iso = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    blk = gm.Mixture.block([0.25, 0.75], [0.5, 0.5], labels="binary")
    d = 400
    z = np.linspace(-1, 1, d)
    z = z / np.sqrt(np.mean(z**2))
    emp = gm.Mixture.spectral(np.full((d, 2), 0.5), np.stack([z, -z], axis=1), labels="binary")
    rs = [gm.solve(m, "logistic", lam=0.1, alpha=2.0, tol=1e-12) for m in (iso, blk, emp)]
    for r in rs[1:]:
        np.testing.assert_allclose(r.Q, rs[0].Q, rtol=1e-9)
        np.testing.assert_allclose(r.M, rs[0].M, rtol=1e-9)
        np.testing.assert_allclose(r.test_error, rs[0].test_error, atol=1e-11)


def test_bias_condition_in_gradient_form():
    """At the fixed point sum_c Mhat_c = 0, i.e. sum_c rho_c E[f_c] = 0 (docs/design.md pitfall 1),
    also when the clusters have different covariances."""
    mix = gm.Mixture.isotropic([0.1, 1.0], "antipodal", rho=[0.3, 0.7], labels="binary")
    for loss in ("square", "logistic", "hinge"):
        r = gm.solve(mix, loss, lam=0.2, alpha=1.5, tol=1e-12)
        np.testing.assert_allclose(r.Mhat.sum(axis=0), 0.0, atol=1e-10)


def test_warm_start_reaches_the_same_point_faster():
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    cold = gm.solve(mix, "cross-entropy", lam=0.5, alpha=1.0, estimate_error=False)
    near = gm.solve(mix, "cross-entropy", lam=0.5, alpha=1.05, estimate_error=False)
    warm = gm.solve(mix, "cross-entropy", lam=0.5, alpha=1.0, init=near, estimate_error=False)
    assert warm.n_iter < cold.n_iter
    np.testing.assert_allclose(warm.test_error, cold.test_error, atol=1e-8)


def test_non_convergence_is_reported_not_returned():
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    with pytest.raises(gm.ConvergenceError, match="did not converge"):
        gm.solve(mix, "cross-entropy", lam=0.5, alpha=1.0, max_iter=2)
    r = gm.solve(mix, "cross-entropy", lam=0.5, alpha=1.0, max_iter=2, throw=False)
    assert not r.success
    assert np.isnan(r.test_error) and np.isnan(r.train_error) and np.isnan(r.train_loss)


def test_integration_error_is_small_and_reported():
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    r = gm.solve(mix, "cross-entropy", lam=1.0, alpha=2.0)
    assert 0 <= r.integration_error < 1e-7
    r = gm.solve(
        gm.Mixture.isotropic(0.5, "antipodal", labels="binary"), "hinge", lam=0.1, alpha=2.0
    )
    assert r.integration_error < 1e-14  # closed-form channel, one-dimensional orthant


# ----------------------------------------------------------------------------- options
def test_one_options_object_with_one_list_of_options_and_one_doc():
    """The fields of SolverOptions are the solver's options: solve and solve_problem show
    each as a keyword with the field's default (their signatures expand ``**kwargs``), and
    SolverOptions, solve and solve_problem document each with the same text."""
    import dataclasses
    import inspect
    import re

    from gaussmix.theory.api.api import solve
    from gaussmix.theory.solve.solver import SolverOptions, solve_problem

    assert gm.SolverOptions is SolverOptions
    fields = [f.name for f in dataclasses.fields(SolverOptions)]
    defaults = {f.name: f.default for f in dataclasses.fields(SolverOptions)}
    for func in (solve, solve_problem):
        params = inspect.signature(func).parameters
        assert [n for n in params if n in defaults] == fields, func.__name__
        for name in fields:
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
            assert params[name].default == defaults[name], name
        for name in ("options", "init", "callback", "history"):
            assert params[name].default is None, name

    def doc(obj, name):
        m = re.search(
            rf"^    {name} : .*?(?=^    \w+ : |^    Returns|^    Examples)",
            obj.__doc__,
            re.M | re.S,
        )
        assert m, (obj.__name__, name)
        return m.group(0)

    for name in fields:
        assert doc(solve, name) == doc(solve_problem, name) == doc(SolverOptions, name)
    for name in ("options", "init", "callback", "history"):
        assert doc(solve, name) == doc(solve_problem, name)


def test_options_object_and_keywords_are_one_and_the_same():
    """``options=SolverOptions(...)``, the same options as keywords, and keywords overriding
    an options object give the same solve to the bit; an unknown keyword or a wrong options
    object is refused with one line naming it."""
    from gaussmix.theory.solve.options import DEFAULT_OPTIONS, solver_options

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    kw = dict(lam=0.5, alpha=1.0)
    by_keywords = gm.solve(mix, "cross-entropy", tol=1e-10, max_refine=1, **kw)
    opts = gm.SolverOptions(tol=1e-10, max_refine=1)
    by_object = gm.solve(mix, "cross-entropy", options=opts, **kw)
    mixed = gm.solve(
        mix, "cross-entropy", options=gm.SolverOptions(tol=1e-6, max_refine=1), tol=1e-10, **kw
    )
    for r in (by_object, mixed):
        np.testing.assert_array_equal(r.state.x, by_keywords.state.x)
        assert r.n_iter == by_keywords.n_iter and r.test_error == by_keywords.test_error
    assert by_keywords.params["tol"] == 1e-10
    assert solver_options(None, {}) is DEFAULT_OPTIONS and solver_options(opts) is opts
    assert solver_options(opts, {"tol": 1e-9}) == gm.SolverOptions(tol=1e-9, max_refine=1)
    with pytest.raises(TypeError, match=r"solve\(\) got an unexpected keyword argument 'tole'"):
        gm.solve(mix, "cross-entropy", tole=1e-10, **kw)
    with pytest.raises(TypeError, match="options must be a gaussmix.SolverOptions, got dict"):
        gm.solve(mix, "cross-entropy", options={"tol": 1e-10}, **kw)
    with pytest.raises(ValueError, match="tol"):
        gm.SolverOptions(tol=-1.0)
    with pytest.raises(TypeError, match="throw must be True or False, got 'no'"):
        gm.SolverOptions(throw="no")


def test_solver_options_validate_with_the_argument_name():
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    for kw, match in [
        ({"max_refine": 11}, "max_refine"),
        ({"tol": 0.0}, "tol"),
        ({"anderson": -1}, "anderson"),
        ({"damping": 1.5}, "damping"),
        ({"prior_panels": 1}, "prior_panels"),
        ({"prior_panels": 1024}, "prior_panels"),  # the estimate needs twice as many
    ]:
        with pytest.raises(ValueError, match=match):
            gm.solve(mix, "logistic", lam=0.1, alpha=1.0, **kw)
    with pytest.raises(TypeError, match="quadrature must be a GaussHermite"):
        gm.solve(mix, "logistic", lam=0.1, alpha=1.0, quadrature=64)


def test_options_of_the_full_solver_act_through_solve(monkeypatch):
    from gaussmix.theory.channel.channel import ProxWarmStart
    from gaussmix.theory.numerics.quadrature import auto_rule, default_rule
    from gaussmix.theory.solve.defect import PROXIMAL
    from gaussmix.theory.solve.solver import AndersonState, FixedPointMap

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    calls: list = []
    history: dict = {}
    kw = dict(lam=0.5, alpha=1.0)
    r = gm.solve(mix, "cross-entropy", callback=lambda it, res: calls.append(res), **kw)
    assert len(calls) == r.n_iter and calls[-1] == r.residual
    r1 = gm.solve(mix, "cross-entropy", history=history, max_refine=1, quad_tol=0.0, **kw)
    # (each rule's secant pairs, and the last point's proximal points for a curve's next
    # start from its predictor)
    pairs = {k: v for k, v in history.items() if k != PROXIMAL}
    assert pairs and all(isinstance(v, AndersonState) for v in pairs.values())
    assert isinstance(history.get(PROXIMAL), ProxWarmStart)
    default = auto_rule(2, smooth=True)
    assert r1.params["quadrature"] == default.refined().describe()  # one refinement
    r0 = gm.solve(mix, "cross-entropy", max_refine=0, **kw)  # no refinement: default rule
    assert r0.params["quadrature"] == default.describe()
    # continuation (K = 4: the default 3-d rule is expensive) starts from a coarse rule
    k4 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=4)
    rules: list = []
    real_init = FixedPointMap.__init__

    def spy(self, problem, rule, **settings):
        rules.append(rule)
        real_init(self, problem, rule, **settings)

    with monkeypatch.context() as m:
        m.setattr(FixedPointMap, "__init__", spy)
        on = gm.solve(k4, "cross-entropy", estimate_error=False, **kw)
        coarse = list(rules)
        rules.clear()
        off = gm.solve(k4, "cross-entropy", estimate_error=False, continuation=False, **kw)
    default = default_rule(3)
    # (the map of the rule is made first, then the coarser rule's from it: FixedPointMap.like)
    assert coarse == [default, default.coarsened()] and rules == [default]
    assert on.test_error == pytest.approx(off.test_error, abs=1e-7)


# ----------------------------------------------------------------------------- state
def test_anderson_state_is_immutable_and_keeps_the_newest_pairs():
    import dataclasses

    from gaussmix.theory.solve.solver import AndersonState

    pairs = [(np.full(3, i), np.full(3, 10 + i)) for i in range(5)]
    s = AndersonState.init(3)
    assert s.empty
    for dx, dg in pairs:
        s2 = s.update(dx, dg)
        assert len(s2.dxs) == min(len(s.dxs) + 1, 3)
        s = s2
    assert [int(d[0]) for d in s.dxs] == [2, 3, 4] and [int(d[0]) for d in s.dgs] == [12, 13, 14]
    t = AndersonState.init(2, s)
    assert [int(d[0]) for d in t.dxs] == [3, 4] and len(s.dxs) == 3
    assert AndersonState.init(0, s).empty and AndersonState.init(0).update(*pairs[0]).empty
    assert s.cleared().empty and s.cleared().memory == 3 and not s.empty
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.memory = 4


def test_fixed_point_state_is_public_and_a_fixed_point_of_its_map():
    from gaussmix.theory.solve.solver import effective_state, unpack_state

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    r = gm.solve(mix, "cross-entropy", lam=0.5, alpha=1.3, tol=1e-11)
    st = r.state
    Q, M, V, b = st.unpack()
    eff = effective_state(r)
    for name, arr in zip("QMVb", (Q, M, V, b)):
        np.testing.assert_array_equal(arr, eff[name])
    np.testing.assert_array_equal(Q, unpack_state(st.x, 3, 2)[0])
    P = st.problem.P
    np.testing.assert_allclose(P.T @ Q @ P, r.Q, atol=1e-15)
    T = st.map()
    assert T.rule == st.rule and T.is_valid(st.x)
    step = np.abs(T(st.x) - st.x) / np.maximum(1.0, np.abs(st.x))
    assert step.max() < 1e-9
    with pytest.warns(DeprecationWarning, match="use FixedPointResult.state"):
        legacy = r._state
    assert legacy[0] is st.problem and legacy[1] is st.rule and legacy[2] is st.x


# ----------------------------------------------------------------------------- status
def test_error_class_follows_the_status_not_the_message(monkeypatch):
    import gaussmix.theory.solve.fixed_point as fixed_point
    from gaussmix.theory.solve.solver import FixedPointMap, IterationStatus

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    kw = dict(lam=0.5, alpha=1.0)
    with pytest.raises(gm.ConvergenceError) as exc:
        gm.solve(mix, "cross-entropy", max_iter=2, **kw)
    assert type(exc.value) is gm.ConvergenceError
    assert exc.value.result.status is IterationStatus.MAX_ITER
    with monkeypatch.context() as m:  # a failing map whose message says NaN and spurious
        m.setattr(FixedPointMap, "hats_memory", _raise_spurious_sounding_error)
        with pytest.raises(gm.ConvergenceError, match="map failed") as exc:
            gm.solve(mix, "square", **kw)
        assert type(exc.value) is gm.ConvergenceError
        assert exc.value.result.status is IterationStatus.MAP_FAILED
    real = fixed_point.prior_update  # the map's prior

    def nan_prior(*args, **kwargs):
        pr = real(*args, **kwargs)
        if "lam" not in kwargs:  # the map's updates, not the starting point
            pr.Q = pr.Q * np.nan
        return pr

    with monkeypatch.context() as m:
        m.setattr(fixed_point, "prior_update", nan_prior)
        with pytest.raises(gm.SpuriousFixedPointError, match="NaN or infinite") as exc:
            gm.solve(mix, "square", **kw)
        assert exc.value.result.status is IterationStatus.NON_FINITE
    with monkeypatch.context() as m:
        m.setattr(FixedPointMap, "is_valid", lambda self, x: False)
        with pytest.raises(gm.SpuriousFixedPointError, match="spurious fixed point") as exc:
            gm.solve(mix, "square", **kw)
        assert exc.value.result.status is IterationStatus.NOT_POSITIVE_DEFINITE
        r = gm.solve(mix, "square", throw=False, **kw)
        assert not r.success and np.isnan(r.test_error)
    r = gm.solve(mix, "square", **kw)
    assert r.status is IterationStatus.CONVERGED and r.success


def _raise_spurious_sounding_error(self, *args):
    raise FloatingPointError("NaN in a spurious place")


# ----------------------------------------------------------------------------- warnings
def _integration_warnings(*args, **kwargs) -> list[str]:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gm.solve(*args, **kwargs)
    return [str(w.message) for w in caught if issubclass(w.category, gm.IntegrationWarning)]


def _assert_qmc_orthant_advice(texts: list[str], dim: int) -> None:
    assert len(texts) == 1, texts
    text = texts[0]
    assert "of the test error is large" in text
    assert f"{dim}-dimensional Gaussian orthant" in text and "quasi-Monte Carlo" in text
    assert "no solver option reduces it" in text
    assert "quadrature" not in text and "GaussHermite" not in text


def test_integration_warning_of_a_qmc_orthant_advises_no_quadrature_rule():
    """Square loss (no channel quadrature at all), K = 10: the test error is a 9-dimensional
    orthant probability by seeded quasi-Monte Carlo; a finer rule cannot help."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=10)
    _assert_qmc_orthant_advice(_integration_warnings(mix, "square", lam=1.0, alpha=2.0), 9)


@pytest.mark.long
def test_integration_warning_for_fifty_clusters_square_loss_advises_no_quadrature_rule():
    """The case of issue 9 (``gaussmix point --n-clusters 50 --loss square``).  Long (~40 s of
    CPU): the same branch of the warning and the same message as the K = 10 case above, which
    CI runs; only the orthant dimension differs."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=50)
    _assert_qmc_orthant_advice(_integration_warnings(mix, "square", lam=1.0, alpha=2.0), 49)


def test_integration_warning_advises_a_finer_rule_where_refinement_is_the_remedy():
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    texts = _integration_warnings(
        mix, "logistic", lam=0.1, alpha=1.0, quadrature=gm.GaussHermite(4), auto_refine=False
    )
    assert len(texts) == 1, texts
    assert "training loss changes by" in texts[0]
    assert "pass a finer quadrature rule (quadrature=GaussHermite(n, dim))" in texts[0]
    assert "orthant" not in texts[0]
    # following the advice helps: the default rule with refinement does not warn
    assert _integration_warnings(mix, "logistic", lam=0.1, alpha=1.0) == []


def test_integration_warning_says_when_no_finer_rule_is_admissible():
    """lam -> 0 logistic: refinement reaches the largest order and the change remains."""
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    texts = _integration_warnings(
        mix, "logistic", lam=1e-4, alpha=3.0, tol=1e-10, quadrature=gm.GaussHermite(64)
    )
    assert len(texts) == 1, texts
    assert "no finer rule is admissible (at most 360 nodes per dimension)" in texts[0]
    assert "GaussHermite(n, dim)" not in texts[0]


def _k3_iteration():
    """A K = 3 cross-entropy point's map maker, start, options and converged iteration."""
    from gaussmix.theory.api.api import make_problem
    from gaussmix.theory.numerics.quadrature import GaussHermite
    from gaussmix.theory.solve.fixed_point import FixedPointMap, start_state
    from gaussmix.theory.solve.iteration import AndersonState, iterate

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    problem = make_problem(mix, "cross-entropy", lam=0.5, alpha=1.0)
    rule = GaussHermite(12, 2)
    x0 = start_state(problem, None)
    kw = dict(tol=1e-10, max_iter=200, damping=1.0)
    ref = iterate(FixedPointMap(problem, rule), x0, AndersonState.init(6), **kw)
    assert ref.converged and ref.n_iter > 3
    return (lambda: FixedPointMap(problem, rule)), x0, kw, ref


def test_the_iteration_is_a_pure_init_step_terminate():
    """Stepping a FixedPointIteration by hand gives iterate's outcome to the bit, a step
    leaves the state it was given untouched, and terminate stops at max_iter."""
    from gaussmix.theory.solve.iteration import AndersonState, FixedPointIteration

    new_map, x0, kw, ref = _k3_iteration()

    solver = FixedPointIteration(**kw)
    T = new_map()
    s = solver.init(T, x0, AndersonState.init(6))
    residuals = []
    while not solver.terminate(s):
        before = s.x.copy()
        s2 = solver.step(T, s)
        np.testing.assert_array_equal(s.x, before)  # the step returned a new state
        assert s2.n_iter == s.n_iter + 1
        residuals.append(s2.residual)
        s = s2
    out = solver.outcome(s)
    assert out.status is ref.status and out.n_iter == ref.n_iter
    np.testing.assert_array_equal(out.x, ref.x)
    assert out.residual == ref.residual == residuals[-1] < kw["tol"]

    short = FixedPointIteration(tol=1e-10, max_iter=2, damping=1.0)
    s = short.init(T, x0, AndersonState.init(6))
    while not short.terminate(s):
        s = short.step(T, s)
    out = short.outcome(s)
    assert out.n_iter == 2 and out.status.name == "MAX_ITER" and "2 iterations" in out.message


def test_an_iterations_on_step_changes_where_it_goes_on():
    """``iterate(on_step=...)``: a hook that returns None leaves the iteration as it is, to
    the bit; the state it returns is the one the iteration goes on from (the stacked
    sweeps' restart of slow points)."""
    from gaussmix.theory.solve.iteration import AndersonState, iterate

    new_map, x0, kw, ref = _k3_iteration()
    same = iterate(new_map(), x0, AndersonState.init(6), on_step=lambda s: None, **kw)
    assert same.n_iter == ref.n_iter
    np.testing.assert_array_equal(same.x, ref.x)
    # the next iterate moved to the fixed point after the first step: converged next
    steps: list[int] = []

    def jump(s):
        steps.append(s.n_iter)
        return s._replace(x=ref.x, last=None) if s.n_iter == 1 else None

    out = iterate(new_map(), x0, AndersonState.init(6), on_step=jump, **kw)
    assert out.converged and out.n_iter <= 3 < ref.n_iter
    assert steps[0] == 1


def test_an_iteration_without_a_callback_skips_no_decision():
    """Without a callback the residual of a step that the step alone shows unconverged is
    left pending; the outcomes (state, residual, iterations, status) are those of the
    iteration that computes every residual, to the bit, converged or not."""
    from gaussmix.theory.api.api import make_problem
    from gaussmix.theory.numerics.quadrature import GaussHermite
    from gaussmix.theory.solve.fixed_point import FixedPointMap, start_state
    from gaussmix.theory.solve.iteration import AndersonState, FixedPointIteration

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    problem = make_problem(mix, "cross-entropy", lam=0.5, alpha=1.0)
    x0 = start_state(problem, None)
    for max_iter in (3, 200):
        outs = []
        for report in (True, False):
            solver = FixedPointIteration(1e-10, max_iter, 1.0, report=report)
            T = FixedPointMap(problem, GaussHermite(12, 2))
            s = solver.init(T, x0, AndersonState.init(6))
            pending = 0
            while not solver.terminate(s):
                s = solver.step(T, s)
                pending += s.pending is not None
                if s.pending is not None:  # a lower bound that fails the test
                    assert s.residual >= solver.tol
                    assert s.exact_residual() >= s.residual
            outs.append((solver.outcome(s), pending))
        (a, pa), (b, pb) = outs
        assert pa == 0 and pb > 0
        assert a.status is b.status and a.n_iter == b.n_iter and a.residual == b.residual
        np.testing.assert_array_equal(a.x, b.x)
        assert a.message == b.message


def test_residual_scale_is_the_block_units_componentwise():
    """:func:`residual_scale` against its definition written out per component."""
    from gaussmix.theory.solve.state import pack_state, residual_scale

    rng = np.random.default_rng(5)
    for K, L in [(1, 1), (2, 1), (3, 2), (4, 3)]:
        Q = rng.standard_normal((K, L, L)) * 10.0 ** rng.uniform(-20, 2, (K, 1, 1))
        M = rng.standard_normal((K, L)) * 10.0 ** rng.uniform(-12, 1, (K, 1))
        V = rng.standard_normal((K, L, L)) * 10.0 ** rng.uniform(-5, 3, (K, 1, 1))
        b = rng.standard_normal(L)
        want = []
        for c in range(K):
            q = np.abs(Q[c]).max()
            want += [max(abs(v), min(1.0, max(q, np.finfo(float).tiny))) for v in Q[c].ravel()]
        for c in range(K):
            u = min(1.0, max(np.abs(M[c]).max(), np.sqrt(np.abs(Q[c]).max())))
            want += [max(abs(v), u) for v in M[c]]
        for c in range(K):
            u = min(1.0, np.abs(V[c]).max())
            want += [max(abs(v), u) for v in V[c].ravel()]
        want += [max(abs(v), 1.0) for v in b]
        np.testing.assert_array_equal(residual_scale(pack_state(Q, M, V, b), K, L), want)


def test_a_map_is_set_by_its_constructor():
    """A FixedPointMap is a frozen value: every attribute is written once, by its
    constructor, and a later write (a setting, or memory of an evaluation) raises; what
    an evaluation hands to the next is the MapMemory it returns, given back explicitly.
    new_map makes a map with other settings (the panels, the precision), which reuses a
    channel evaluation it is given, with images the map's own at those settings."""
    from gaussmix.theory.solve.fixed_point import FixedPointMap, MapMemory, new_map

    make, x0, _, _ = _k3_iteration()
    T = make()
    names = ("prior_panels", "single", "rule", "symmetry", "last", "warm", "last_prior")
    for name in names:
        with pytest.raises(AttributeError, match=name):
            setattr(T, name, None)
    g, memory = T.evaluate(x0)
    assert memory.ev is not None and np.array_equal(memory.ev.x, x0)
    assert memory.prior is not None
    assert T.hats(x0, memory) is memory.ev  # reused where made at the state
    assert T.hats(x0) is not memory.ev  # a map without memory makes a new evaluation
    np.testing.assert_array_equal(T(x0), g)  # (same inputs, same numbers)
    again = new_map(T.problem, T.rule, T, prior_panels=8)
    assert again.prior_panels == 8 and not again.single
    given = MapMemory(ev=memory.ev)
    assert again.hats(x0, given) is memory.ev  # the evaluation it was given, not a new one
    np.testing.assert_array_equal(again(x0, given), g)
    single = new_map(T.problem, T.rule, T, single=True)
    assert single.single and single.prior_panels is None
    assert isinstance(single, FixedPointMap)
