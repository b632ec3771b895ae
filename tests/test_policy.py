"""The solve policy (gaussmix.theory.solve.policy): the declared steps of each kind of problem, the
agreement of each declaration with the decision the step makes at run time, the solver
taking exactly the declared steps, the fallback slot, and the quadrature rules' declared
capabilities."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.channel.normaliser import NormaliserRule, normaliser_serves
from gaussmix.theory.numerics import tolerances
from gaussmix.theory.numerics.quadrature import (
    GaussHermite,
    GradedPanels,
    QuadratureRule,
    SobolRQMC,
    auto_rule,
)
from gaussmix.theory.problem.symmetry import ExchangeablePanels
from gaussmix.theory.solve import policy as P
from gaussmix.theory.solve.fixed_point import start_state
from gaussmix.theory.solve.homotopy import AlphaHomotopy, Fallbacks, LambdaHomotopy
from gaussmix.theory.solve.iteration import IterationStatus
from gaussmix.theory.solve.options import SolverOptions
from gaussmix.theory.solve.refinement import Continuation, ErrorEstimate
from gaussmix.theory.solve.solver import solve_batch, solve_problem
from gaussmix.theory.solve.state import pack_state, unpack_state

SRC = Path(__file__).resolve().parents[1] / "src" / "gaussmix"
OPTS = SolverOptions()

W, I, S, E, N, R, F = (
    "WarmStart",
    "Iterate",
    "SharpSwitch",
    "EstimateErrors",
    "NormaliserSwitch",
    "RefinePrior",
    "Fallback",
)


def _binary(delta: float = 1.0) -> gm.Mixture:
    return gm.Mixture.isotropic(delta, "antipodal", labels="binary")


def _dense(K: int = 2) -> gm.Mixture:
    """A small mixture of non-commuting dense covariances (the real-data representation)."""
    rng = np.random.default_rng(5)
    d = 12
    A = rng.standard_normal((K, d, d)) / np.sqrt(d)
    cov = A @ np.swapaxes(A, 1, 2) + 0.5 * np.eye(d)
    means = rng.standard_normal((K, d)) / np.sqrt(d)
    return gm.Mixture.dense(means, cov, labels="binary" if K == 2 else "onehot")


def _iso(K: int) -> gm.Mixture:
    return gm.Mixture.isotropic(0.5, "gaussian", n_clusters=K)


def _sparse() -> gm.Mixture:
    """The paper's sparse mixture (eq. (sparse))."""
    return gm.Mixture.sparse(0.5, delta1=0.1, delta2=0.5)


#: problem kind -> (problem, options, warm start?), the declared steps, first rule, continuation,
#: estimate of the first rule
TABLE = {
    "binary ridge square": (
        lambda: (make_problem(_binary(), "square", lam=0.1, alpha=2.0), OPTS, False),
        (I, E),
        GaussHermite(1, 1),  # a placeholder: the channel is in closed form
        Continuation.NONE,
        ErrorEstimate.NONE,
    ),
    "binary ridge logistic": (
        lambda: (make_problem(_binary(), "logistic", lam=0.1, alpha=2.0), OPTS, False),
        (I, S, E),
        GaussHermite(64, 1),
        Continuation.COARSE,
        ErrorEstimate.REFINED_RULE,
    ),
    "binary ridge hinge": (
        lambda: (make_problem(_binary(), "hinge", lam=0.1, alpha=2.0), OPTS, False),
        (I, E),
        GaussHermite(1, 1),
        Continuation.NONE,
        ErrorEstimate.NONE,
    ),
    "binary lasso logistic": (
        lambda: (
            make_problem(
                gm.Mixture.sparse(0.5, delta1=0.1, delta2=0.5),
                "logistic",
                lam=0.1,
                alpha=1.0,
                penalty="l1",
            ),
            OPTS,
            False,
        ),
        (I, S, E),
        GaussHermite(64, 1),
        Continuation.COARSE,
        ErrorEstimate.REFINED_RULE,
    ),
    "K = 3 cross-entropy": (
        lambda: (make_problem(_iso(3), "cross-entropy", lam=1.0, alpha=2.0), OPTS, False),
        (I, S, E),
        GradedPanels(16, 2, 6),
        Continuation.COARSE,
        ErrorEstimate.REFINED_RULE,
    ),
    "K = 3 cross-entropy, no symmetry": (
        lambda: (
            make_problem(_iso(3), "cross-entropy", lam=1.0, alpha=2.0),
            replace(OPTS, symmetry=False),
            False,
        ),
        (I, E),  # graded panels in two dimensions serve both regimes
        GradedPanels(16, 2, 6),
        Continuation.COARSE,
        ErrorEstimate.REFINED_RULE,
    ),
    "K = 4 cross-entropy near alpha*_4": (
        lambda: (make_problem(_iso(4), "cross-entropy", lam=1e-4, alpha=4.0), OPTS, True),
        (I, S, E, N),
        GaussHermite(10, 3),
        Continuation.COARSE,
        ErrorEstimate.REFINED_RULE,
    ),
    "K = 5 cross-entropy from a warm start": (
        lambda: (make_problem(_iso(5), "cross-entropy", lam=1e-3, alpha=4.0), OPTS, True),
        (W, I, S, E),
        GaussHermite(8, 4),
        Continuation.COARSE,
        ErrorEstimate.REFINED_RULE,
    ),
    "K = 7 cross-entropy (randomised rule)": (
        lambda: (
            make_problem(_iso(7), "cross-entropy", lam=1.0, alpha=2.0),
            replace(OPTS, symmetry=False),
            False,
        ),
        (I, E),
        auto_rule(6, smooth=True),
        Continuation.COARSE,
        ErrorEstimate.REPLICATES,
    ),
    "dense real-data logistic": (
        lambda: (
            make_problem(_dense(), "logistic", lam=0.1, alpha=1.5),
            replace(OPTS, tol=1e-8),
            False,
        ),
        (I, S, E),
        GaussHermite(64, 1),
        Continuation.SINGLE,  # (its size made large enough by the test)
        ErrorEstimate.REFINED_RULE,
    ),
    "multi-output lasso (K = 3 cross-entropy, l1)": (
        lambda: (
            make_problem(_iso(3), "cross-entropy", lam=0.1, alpha=2.0, penalty="l1"),
            OPTS,
            False,
        ),
        (I, E, R),
        GradedPanels(16, 2, 6),
        Continuation.COARSE,
        ErrorEstimate.REFINED_RULE,
    ),
    "a rule of the user's": (
        lambda: (
            make_problem(_binary(), "logistic", lam=0.1, alpha=2.0),
            replace(OPTS, quadrature=GaussHermite(40, 1)),
            False,
        ),
        (I, E),  # never switched
        GaussHermite(40, 1),
        Continuation.COARSE,
        ErrorEstimate.REFINED_RULE,
    ),
    "no error estimate": (
        lambda: (
            make_problem(_iso(3), "cross-entropy", lam=0.1, alpha=2.0, penalty="l1"),
            replace(OPTS, estimate_error=False),
            False,
        ),
        (I, E),  # the observables only, and no refinement of the prior
        GradedPanels(16, 2, 6),
        Continuation.COARSE,
        ErrorEstimate.NONE,
    ),
}


@pytest.fixture
def single_phase_reachable(monkeypatch):
    """The dense prior's single-precision phase on the small test mixture."""
    monkeypatch.setattr(tolerances, "SINGLE_PHASE_MIN_N", 1)


@pytest.mark.parametrize("kind", list(TABLE))
def test_the_declared_policy_of_each_problem_kind(kind, single_phase_reachable):
    make, steps, rule, cont, estimate = TABLE[kind]
    problem, opts, warm = make()
    policy = P.policy_for(problem, opts, warm=warm)
    # every kind solved cold declares the homotopies in lam and alpha as its fallbacks, a
    # warm start none
    fallback = () if warm else (F,)
    assert tuple(type(s).__name__ for s in policy.steps) == steps + fallback
    assert policy.rule == rule
    assert policy.continuation is cont
    assert policy.estimate is estimate
    homotopies = (LambdaHomotopy(), AlphaHomotopy())
    chain = Fallbacks(homotopies, P.verdict, P.policy_for)
    assert policy.fallback == (None if warm else chain)
    assert P.policy_for(problem, replace(opts, fallback=False), warm=warm).fallback is None
    assert P.policy_for(problem, opts, warm=True).fallback is None


def _sharp(problem, x0: np.ndarray, q: float) -> np.ndarray:
    """``x0`` with ``Q_c = q I`` (every cluster): a smooth state for ``q`` below
    ``SMOOTH_Q_MAX``, a sharp one above."""
    Q, M, V, b = (a.copy() for a in unpack_state(x0, problem.n_clusters, problem.dim))
    Q[:] = q * np.eye(problem.dim)
    return pack_state(Q, M, V, b)


@pytest.mark.parametrize("kind", list(TABLE))
def test_each_declared_step_matches_the_decision_it_makes(kind, single_phase_reachable):
    """A declared switch is one that the run-time decision can take (at a sharp state) and
    an undeclared one never is: the policy's static part and the steps' dynamic part are
    one decision, not two that may drift apart."""
    make, *_ = TABLE[kind]
    problem, opts, warm = make()
    policy = P.policy_for(problem, opts, warm=True)
    x0 = start_state(problem, None)
    smooth = _sharp(problem, x0, 0.5 * tolerances.SMOOTH_Q_MAX)
    sharp = _sharp(problem, x0, 25.0 * tolerances.SMOOTH_Q_MAX)
    automatic = opts.quadrature is None
    at_sharp = P.sharp_rule(problem, policy.rule, sharp, symmetric=policy.symmetric)
    at_smooth = P.sharp_rule(problem, policy.rule, smooth, symmetric=policy.symmetric)
    assert at_smooth is None
    assert policy.sharp_switch == (automatic and at_sharp is not None)
    assert policy.warm_start == (automatic and isinstance(at_sharp, NormaliserRule))
    panels = isinstance(at_sharp, ExchangeablePanels) and normaliser_serves(problem)
    assert policy.normaliser_switch == (automatic and opts.estimate_error and panels)
    # the estimate of the rule a switch gives: by its own declared capability
    if at_sharp is not None and opts.estimate_error:
        want = ErrorEstimate.REPLICATES if at_sharp.randomised else ErrorEstimate.REFINED_RULE
        assert P.estimate_kind(problem, opts, at_sharp) is want


#: every step class of the policy
STEPS = (
    P.WarmStart,
    P.Iterate,
    P.SharpSwitch,
    P.EstimateErrors,
    P.NormaliserSwitch,
    P.RefinePrior,
    P.Fallback,
)


def _spy_steps(monkeypatch) -> list[str]:
    ran: list[str] = []
    for cls in STEPS:

        def run(self, s, _real=cls.run, _name=cls.__name__):
            ran.append(_name)
            return _real(self, s)

        monkeypatch.setattr(cls, "run", run)
    return ran


def test_the_solver_takes_exactly_the_declared_steps(monkeypatch):
    """``solve_problem`` is the policy's loop: every declared step runs, in order, and no
    other; at small ``lam`` the one-output logistic solve meets the sharp regime, and its
    answer carries the graded panels of the switch."""
    ran = _spy_steps(monkeypatch)
    problem = make_problem(_binary(), "logistic", lam=1e-3, alpha=3.0)
    res = solve_problem(problem)
    assert res.success
    assert ran == [I, S, E, F]  # (the fallback step looks, and leaves a converged solve)
    assert res.params["quadrature"].startswith("graded-panels")
    assert "fallback" not in res.params
    ran.clear()
    res = solve_problem(make_problem(_binary(), "square", lam=0.1, alpha=2.0))
    assert res.success and ran == [I, E, F]
    assert res.params["quadrature"] == "closed-form"


def test_a_curves_stacked_points_take_the_declared_steps_of_their_policy(monkeypatch):
    """A curve's stacked solve is the same loop over the same steps, on a point axis: its
    policy (``policy_for_points``) declares them, the stacked solve takes exactly those,
    and each point's answer is the one its step gave (graded panels where the sharp switch
    met the sharp regime, Gauss-Hermite elsewhere: each point its own rule)."""
    from gaussmix.experiments import curves

    stacked: list[bool] = []
    solve = curves.solve_points

    def spy(problems, opts, **kw):
        out = solve(problems, opts, **kw)
        stacked.append(out is not None)
        return out

    monkeypatch.setattr(curves, "solve_points", spy)
    ran = _spy_steps(monkeypatch)
    alphas = np.geomspace(0.3, 30.0, 12)
    problems = [make_problem(_binary(), "logistic", lam=0.1, alpha=a) for a in alphas]
    policy = P.policy_for_points(problems, OPTS)
    assert tuple(type(s).__name__ for s in policy.steps) == (I, S, E)
    df = gm.learning_curve(_binary(), "logistic", alphas, lam=0.1)
    assert stacked == [True] and ran == [I, S, E]
    rules = [r.params["quadrature"] for r in df.points]
    assert rules[0].startswith("gauss-hermite") and rules[-1].startswith("graded-panels")
    ran.clear()
    for i in (0, -1):  # each point's rule its single point's
        assert solve_problem(problems[i]).params["quadrature"] == rules[i]
    assert ran == [I, S, E, F] * 2


def test_the_points_policy_shares_the_single_points_decisions():
    """The decisions a curve's stacked points and a single point share are one: with one
    output the same first rule, switch and kind of estimate as ``policy_for`` for every
    point; with two outputs (K = 3 cross-entropy) the curve's rule one step down the
    chain of the automatic one, a coarser rule first, no switch but the watch that sends a
    sharp curve back to the points, and the merged re-solves of the estimate."""
    for loss, lam in (("logistic", 1e-3), ("logistic", 1.0), ("square", 0.1)):
        problems = [make_problem(_binary(), loss, lam=lam, alpha=a) for a in (0.5, 2.0, 8.0)]
        points = P.policy_for_points(problems, OPTS)
        for p in problems:
            single = P.policy_for(p, OPTS)
            assert points.rule == single.rule
            assert points.sharp_switch == single.sharp_switch
            assert points.estimate is single.estimate
        assert points.sharp_watch is None and points.own_pairs
        assert points.continuation is Continuation.NONE
    problems = [make_problem(_iso(3), "cross-entropy", lam=1.0, alpha=a) for a in (0.5, 2.0)]
    points = P.policy_for_points(problems, OPTS)
    single = P.policy_for(problems[0], OPTS)
    assert points.rule.refined() == single.rule
    assert tuple(type(s).__name__ for s in points.steps) == (I, E)
    assert points.sharp_watch is not None and points.merge and not points.own_pairs
    assert points.continuation is Continuation.COARSE


def test_a_step_of_one_point_is_refused_on_a_state_of_several():
    """One state with a point axis: the steps that work on one point alone declare it
    (``Step.points``), and the loop refuses them on a state of several points before any
    work, as the state refuses a single point's accessors there."""
    declared = {cls.__name__: cls.points for cls in STEPS}
    assert declared == {
        "WarmStart": False,
        "Iterate": True,
        "SharpSwitch": True,
        "EstimateErrors": True,
        "NormaliserSwitch": False,
        "RefinePrior": False,
        "Fallback": False,
    }
    problems = [make_problem(_binary(), "logistic", lam=0.1, alpha=a) for a in (0.5, 2.0)]
    policy = replace(P.policy_for_points(problems, OPTS), prior_refinement=True)
    s = P.SolveState(policy, problems, OPTS)
    with pytest.raises(ValueError, match="RefinePrior works on one point; the state has 2"):
        policy.loop(s)
    assert s.out is None and s.ests is None  # (refused before the first step)
    with pytest.raises(ValueError, match="single point's; the state has 2"):
        _ = s.problem
    with pytest.raises(ValueError, match="single point's; the state has 2"):
        _ = s.est


@pytest.mark.parametrize(
    ("loss", "penalty", "lam", "alpha"),
    [
        ("hinge", "l1", 0.1, 2.0),
        ("square", "l1", 0.1, 1.0),
        ("logistic", "l2", 0.1, 2.0),
        ("logistic", "l2", 1e-3, 3.0),
    ],
)
def test_a_single_solve_and_a_batch_of_one_are_one_state(loss, penalty, lam, alpha):
    """One state, two mechanics: a point solved as a single solve (``solve_problem``, a
    state of one point with the single point's run and estimate) and as a batch of one
    (``solve_batch``, the stacked mechanics with ``P = 1``) are the same to the bit where
    the channel is in closed form (the same iteration, no estimate by refinement); by
    quadrature, on the same rule (at lam = 1e-3 after the sharp switch of both), their
    answers differ by the re-solves of the estimate (the single point's starts at its
    predicted next step, the stacked one freezes at its own tighter tolerance: measured
    within 2.4e-12 of each other, an evaluation more or fewer), within the integration
    error the single solve estimates (1e-10 and 3e-10)."""
    mix = _sparse() if penalty == "l1" else _binary()
    problem = make_problem(mix, loss, lam=lam, alpha=alpha, penalty=penalty)
    single = solve_problem(problem, options=OPTS)
    batch = solve_batch([problem], OPTS)
    assert single.success and batch.results is not None
    (one,) = batch.results
    assert one.params["quadrature"] == single.params["quadrature"]
    keys = ("test_error", "train_error", "train_loss")
    if single.params["quadrature"] == "closed-form":
        np.testing.assert_array_equal(one.state.x, single.state.x)
        assert one.n_iter == single.n_iter
        assert all(getattr(one, k) == getattr(single, k) for k in keys)
    else:
        bound = single.integration_error
        assert all(abs(getattr(one, k) - getattr(single, k)) <= bound for k in keys)


def test_the_fallback_slot_takes_a_failed_solve_only():
    """A fallback declared in the policy is handed the failed solve's state and its
    estimate replaces the failure; a solve that converges never calls it."""
    problem = make_problem(_binary(), "logistic", lam=0.1, alpha=2.0)
    good = P.policy_for(problem, OPTS)
    calls = []

    def hook(s: P.SolveState):
        calls.append(s.est.status)
        return good.run(problem, OPTS, s.x0, None, {})

    starved = replace(OPTS, max_iter=2)
    policy = replace(P.policy_for(problem, starved), fallback=hook)
    assert type(policy.steps[-1]) is P.Fallback
    x0 = start_state(problem, None)
    direct = P.policy_for(problem, starved).run(problem, starved, x0, None, {})
    assert direct.status is IterationStatus.MAX_ITER
    rescued = policy.run(problem, starved, x0, None, {})
    assert calls == [IterationStatus.MAX_ITER]
    assert rescued.status is IterationStatus.CONVERGED
    calls.clear()
    replace(good, fallback=hook).run(problem, OPTS, x0, None, {})
    assert calls == []


# --------------------------------------------------------------------------- capabilities
CAPABILITIES = ("randomised", "computes_moments", "needs_symmetry", "seed", "fallback")


def _rules() -> dict[str, QuadratureRule]:
    return {
        "GaussHermite": GaussHermite(20, 1),
        "GradedPanels": GradedPanels(16, 2, 6),
        "SobolRQMC": SobolRQMC(3, 8, 8, seed=7),
        "ExchangeablePanels": ExchangeablePanels(4),
        "NormaliserRule": NormaliserRule(5, fallback=auto_rule(4, seed=3)),
    }


def test_rule_capabilities_are_declared_attributes():
    """Every capability has its default on the base class; each family declares only what
    it has (the normaliser rule's seed is its randomised fallback's)."""
    assert {c: getattr(QuadratureRule, c) for c in CAPABILITIES} == {
        "randomised": False,
        "computes_moments": False,
        "needs_symmetry": False,
        "seed": 0,
        "fallback": None,
    }
    rules = _rules()
    got = {name: tuple(getattr(r, c) for c in CAPABILITIES[:4]) for name, r in rules.items()}
    assert got == {
        "GaussHermite": (False, False, False, 0),
        "GradedPanels": (False, False, False, 0),
        "SobolRQMC": (True, False, False, 7),
        "ExchangeablePanels": (False, False, True, 0),
        "NormaliserRule": (False, True, True, 3),
    }
    assert [name for name, r in rules.items() if r.fallback is not None] == ["NormaliserRule"]
    with pytest.raises(TypeError, match="fallback"):
        NormaliserRule(5)  # (required, though the base class's default is None)


def test_no_capability_is_read_with_a_default():
    """Capabilities are read directly, never as ``getattr(rule, name, default)``."""
    names = "|".join(CAPABILITIES)
    pattern = re.compile(rf"getattr\([^()]*,\s*[\"']({names})[\"']")
    hits = [
        f"{path.relative_to(SRC)}:{n}"
        for path in SRC.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


def test_a_failed_fallback_says_so_in_the_message():
    """Where the declared homotopies fail too (every solve starved of iterations), the
    result is the direct solve's failure with their accounts appended (in lam first: the
    failure is not the unbounded weights the homotopy in alpha is tried first for), and
    ``throw`` raises it."""
    problem = make_problem(_binary(), "logistic", lam=0.1, alpha=2.0)
    starved = replace(OPTS, max_iter=2, throw=False)
    res = solve_problem(problem, options=starved)
    assert not res.success and "fallback" not in res.params
    assert res.message.startswith("did not converge in 2 iterations")
    accounts = (LambdaHomotopy().describe(), AlphaHomotopy().describe())
    assert res.message.endswith("; ".join(accounts))
    with pytest.raises(gm.ConvergenceError, match="failed too"):
        solve_problem(problem, options=replace(starved, throw=True))


def _watched(best: list[float], fail_fast: P.FailFast) -> int | None:
    """The evaluation at which ``fail_fast``'s watch stops a run whose smallest step after
    each evaluation is ``best`` (None: it never does)."""
    from gaussmix.theory.solve.iteration import AndersonState, IterationState

    on_step = fail_fast.watch()
    x = np.zeros(3)
    for n, b in enumerate(best, start=1):
        s = IterationState(x, n, AndersonState.init(3), None, None, b, 1.0, b)
        out = on_step(s)
        if out is not None:
            assert out.outcome.status is IterationStatus.STALLED
            assert out.outcome.n_iter == n and "stalled after" in out.outcome.message
            return n
    return None


def test_fail_fast_stops_a_stalled_run_only():
    """The watch stops a run whose smallest step has not halved over two windows, at the
    first look that sees it, and never one that converges, however slowly it starts (a
    rate of 1/2 per 200 evaluations is the slowest it lets through)."""
    ff = P.FailFast()
    n = 3000
    steps = np.arange(1, n + 1)
    assert _watched([1.0] * n, ff) == 3 * ff.window  # no progress after the first step
    creep = 0.09 * (1.0 - 0.4 * steps / n)  # 0.09 -> 0.054 in 3000 (a failure measured)
    assert _watched(list(creep), ff) == 3 * ff.window
    # a plateau of just under two windows, then it converges
    plateau = np.minimum(1.0, 2.0 ** (-(steps - 2 * ff.window + 1) / 10.0))
    assert _watched(list(plateau), ff) is None
    slow = 2.0 ** (-steps / (1.9 * ff.window))  # halves a little faster than the limit
    assert _watched(list(slow), ff) is None
    too_slow = 2.0 ** (-steps / (2.1 * ff.window))
    assert _watched(list(too_slow), ff) == 3 * ff.window


def test_only_a_solve_with_a_fallback_fails_fast():
    """The early stop is declared with the fallback: a cold solve with ``fallback=False``
    or a warm start takes its ``max_iter`` evaluations."""
    problem = make_problem(_binary(), "logistic", lam=0.1, alpha=2.0)
    assert P.policy_for(problem, OPTS).fail_fast == P.FailFast()
    assert P.policy_for(problem, replace(OPTS, fallback=False)).fail_fast is None
    assert P.policy_for(problem, OPTS, warm=True).fail_fast is None


def test_the_path_walk_halves_grows_and_gives_up() -> None:
    """The one adaptive step of both homotopies (:class:`PathWalk`): from ``log 100`` to
    ``log 1`` with steps of at most a factor 10, a step that converges grows the next by
    half, the one that passes the target is made to it; a step that fails is halved and
    tried again from the last point, and the walk is given up where the step falls below
    its least or the solves reach the caller's limit."""
    from gaussmix.theory.solve.homotopy import PathWalk

    walk = PathWalk(step=10.0, min_step=1.5)
    tried: list[tuple[float, bool]] = []

    def easy(nxt: float, final: bool) -> bool:
        tried.append((float(np.exp(nxt)), final))
        return True

    assert walk.walk(np.log(100.0), 0.0, easy, 3, 50) == (True, 5)
    assert [f for _, f in tried] == [False, True]
    assert tried[0][0] == pytest.approx(10.0) and tried[1][0] == 1.0
    # upwards too (the homotopy in lam from below)
    tried.clear()
    assert walk.walk(np.log(0.01), 0.0, easy, 0, 50) == (True, 2)
    assert tried[0][0] == pytest.approx(0.1) and tried[1] == (1.0, True)

    # a barrier at 2: every step below it fails, halved until below a factor 1.5
    tried.clear()

    def barrier(nxt: float, final: bool) -> bool:
        tried.append((float(np.exp(nxt)), final))
        return float(np.exp(nxt)) >= 2.0

    ok, solves = walk.walk(np.log(100.0), 0.0, barrier, 0, 50)
    assert not ok and solves == len(tried) < 50
    # the last step tried was at least the least step, and its half would be below it
    last_ok = max(i for i, (p, _) in enumerate(tried) if p >= 2.0)
    steps = [np.log(tried[last_ok][0] / p) for p, _ in tried[last_ok + 1 :]]
    assert steps and min(steps) >= np.log(1.5) > min(steps) / 2
    # the limit of solves is the caller's
    assert walk.walk(np.log(100.0), 0.0, barrier, 7, 9) == (False, 9)


def test_the_trail_predicts_along_the_secant_in_the_chart() -> None:
    """The one predictor of both homotopies (:class:`Trail`): the last fixed point itself
    before a secant exists or where a point is outside the chart; else the secant through
    the last two fixed points in ``log`` of the parameter and in chart coordinates, exact
    for overlaps that scale as a power of the parameter (``V ~ 1 / lam``) and means and
    bias affine in its logarithm, and a valid state however far it extrapolates."""
    from gaussmix.theory.solve.homotopy import Trail
    from gaussmix.theory.solve.state import LogChart, is_valid_state

    K, L = 2, 2
    rng = np.random.default_rng(0)
    A = rng.normal(size=(2 * K, L, L))
    S0 = np.einsum("kab,kcb->kac", A, A) + np.eye(L)  # positive definite
    ev, vec = np.linalg.eigh(S0)
    M0, dM = rng.normal(size=(K, L)), rng.normal(size=(K, L))
    b0, db = rng.normal(size=L), rng.normal(size=L)

    def state(t: float) -> np.ndarray:  # overlaps S0^(1 - t): log-linear in t
        QV = np.einsum("kab,kb,kcb->kac", vec, ev ** (1.0 - t), vec)
        return pack_state(QV[:K], M0 + t * dM, QV[K:], b0 + t * db)

    trail = Trail(LogChart(K, L))
    last = state(0.0)
    trail.add(0.0, last)
    assert trail.predict(1.0, last) is last  # (one point: no secant)
    trail.add(0.5, state(0.5))
    for t in (1.0, 2.5, 0.25):  # (to the rounding of the matrix logarithm and exponential)
        want = state(t)
        got = trail.predict(t, state(0.5))
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    far = trail.predict(6.0, state(0.5))  # (eigenvalues ev^-5, 3e-5 to 0.9: valid)
    assert is_valid_state(far, K, L)
    singular = state(1.0)
    Q, _, _, _ = unpack_state(singular, K, L)
    Q[0] = 0.0  # (outside the chart: its Q_0 is not positive definite)
    trail.add(1.0, singular)
    assert trail.predict(2.0, singular) is singular


def test_the_fallbacks_read_what_each_homotopy_declares() -> None:
    """``prefers`` is a class attribute of both homotopies, read as such by the chain's
    order; the chain's budget of solves is the sum of theirs."""
    chain = Fallbacks((LambdaHomotopy(), AlphaHomotopy()), P.verdict, P.policy_for)
    assert LambdaHomotopy.prefers == () and AlphaHomotopy.prefers == (
        IterationStatus.UNBOUNDED_WEIGHTS,
    )
    first = chain.order(IterationStatus.UNBOUNDED_WEIGHTS)
    assert [type(h) for h in first] == [AlphaHomotopy, LambdaHomotopy]
    assert [type(h) for h in chain.order(IterationStatus.STALLED)] == [
        LambdaHomotopy,
        AlphaHomotopy,
    ]
    assert chain.max_solves == LambdaHomotopy().max_solves + AlphaHomotopy().max_solves


def test_a_failing_problem_makes_at_most_the_chains_solves(monkeypatch) -> None:
    """A problem whose fallbacks all fail (every solve starved of iterations) makes at
    most :attr:`Fallbacks.max_solves` solves of the homotopies before its error: each
    start and each step of a path counted (the intermediate solves of the homotopy in
    lam, every run of the homotopy in alpha, the problem's own point's solves)."""
    from gaussmix.theory.solve import homotopy as H

    solves: list[str] = []
    quiet, run = H._quiet, H.AlphaHomotopy._run

    def counted_quiet(*args):
        solves.append("lam")
        return quiet(*args)

    def counted_run(self, *args):
        solves.append("alpha")
        return run(self, *args)

    def counted_plan(*args, **kwargs):
        if kwargs.get("fail_fast"):  # (the problem's own point of the homotopy in lam)
            solves.append("lam")
        return P.policy_for(*args, **kwargs)

    monkeypatch.setattr(H, "_quiet", counted_quiet)
    monkeypatch.setattr(H.AlphaHomotopy, "_run", counted_run)
    problem = make_problem(_binary(), "logistic", lam=0.1, alpha=2.0)
    starved = replace(OPTS, max_iter=2, throw=False)
    policy = P.policy_for(problem, starved)
    policy = replace(policy, fallback=replace(policy.fallback, plan=counted_plan))
    est = policy.run(problem, starved, start_state(problem, None), None, {})
    assert est.status is not IterationStatus.CONVERGED
    assert 0 < len(solves) <= policy.fallback.max_solves
    assert {"lam", "alpha"} <= set(solves)


def test_sharp_switch_one_code_for_one_or_p_points() -> None:
    """The sharp switch and the estimate's grouping are one code for 1 or ``P`` points
    (``SolveState.switch``): a stacked state's points grouped by the rule each ends with,
    each group with a sharp rule solved again by the one run; a single point is a group of
    one.  Binary logistic at lam = 0.03 (two smooth points, three sharp): each point of the
    batch ends on the rule of the same point solved alone, as a batch of one and by
    ``solve_problem`` (another policy: its continuation, predicted start and memory), at the
    same answer within the estimate's own bound (its integration error plus ``10 tol``)."""
    mix = _binary()
    probs = [make_problem(mix, "logistic", lam=0.03, alpha=a) for a in (0.25, 0.5, 1.0, 2.0, 4.0)]
    policy = P.policy_for_points(probs, OPTS)
    s = P.SolveState(policy, probs, OPTS, log=[])
    policy.loop(s)
    assert not s.failed
    rules = [g.T.rule for g in s.groups]
    assert [g.idx for g in s.groups] == [[0, 1], [2, 3, 4]]
    assert isinstance(rules[0], GaussHermite) and isinstance(rules[1], GradedPanels)
    batch = {i: (g.T.rule, s.ests[i]) for g in s.groups for i in g.idx}
    for i, p in enumerate(probs):
        rule, est = batch[i]
        alone = P.SolveState(policy, [p], OPTS, log=[])
        policy.loop(alone)
        (g,) = alone.groups
        assert g.idx == [0] and g.T.rule == rule and alone.ests[0].T.rule == est.T.rule
        single = P.policy_for(p, OPTS)
        one = P.SolveState(single, [p], OPTS, x0=start_state(p, None))
        single.loop(one)
        (g1,) = one.groups
        assert g1.idx == [0] and g1.T.rule == rule
        for other in (alone.ests[0], one.est):
            assert other.status is IterationStatus.CONVERGED
            for key in ("test_error", "train_loss"):
                bound = est.quad[key] + other.quad[key] + 10 * OPTS.tol
                assert abs(other.obs.value(key) - est.obs.value(key)) <= bound, (i, key)


def test_the_anderson_memory_is_one_declared_value_by_phase_and_rule() -> None:
    """The Anderson memory of every run of a solve is the policy's one declared value
    (``SolvePolicy.memory``, :func:`~gaussmix.theory.solve.policy.anderson_memory`), by
    phase and rule: ``opts.anderson`` for a solve from its start; a re-solve's longer memory
    (``resolve_memory``) from a fixed point for a single point whose prior is integrated by
    quadrature (the multi-output lasso), the options' own for any other single point and
    for a curve's stacked points, and the longer one for a single point's run of the sharp
    regime's randomised rule (``resolve_randomised``); the re-solve's for the prior's
    refinement; at least
    ``RANDOMISED_MIXING_MEMORY`` in every phase with the sharp regime's randomised rule of
    three to five dimensions, unless 0 (a plain damped iteration).  No map decides it: the
    iteration runs with the memory it is given, and no rule a curve stacks asks its first
    solve for another memory than the options' (which ``FirstSolve`` runs with)."""
    from gaussmix.theory.solve.estimate import resolve_memory
    from gaussmix.theory.solve.fixed_point import FixedPointMap
    from gaussmix.theory.solve.iteration import AndersonState, iterate
    from gaussmix.theory.solve.memory import Phase

    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4)
    problem = make_problem(mix, "cross-entropy", lam=1e-3, alpha=2.0)
    lasso = make_problem(mix, "cross-entropy", lam=1e-3, alpha=2.0, penalty="l1")
    sharp, wide, smooth = SobolRQMC(dim=3), SobolRQMC(dim=6), auto_rule(3, smooth=True)
    top = tolerances.RANDOMISED_MIXING_MEMORY
    for anderson in (0, 6, 30):
        opts = SolverOptions(anderson=anderson)
        longer = resolve_memory(opts)
        single = P.policy_for(problem, opts).memory
        quadrature = P.policy_for(lasso, opts).memory
        curve = P.policy_for_points([problem, problem.with_lam_alpha(1e-3, 3.0)], opts).memory
        assert [single.of(ph, smooth) for ph in Phase] == [anderson, anderson, longer]
        assert [quadrature.of(ph, smooth) for ph in Phase] == [anderson, longer, longer]
        assert [curve.of(ph, smooth) for ph in Phase] == [anderson, anderson, longer]
        for memory in (single, quadrature, curve):
            assert memory.of(Phase.SOLVE, wide) == anderson  # (beyond five dimensions)
            for ph in Phase:
                own = memory.of(ph, smooth)
                if ph is Phase.RESOLVE and own > 0:  # (the sharp randomised rule's re-solve)
                    own = max(own, memory.resolve_randomised)
                want = 0 if own == 0 else max(own, top)
                assert memory.of(ph, sharp) == want
        # a single point's run of the sharp randomised rule from a fixed point starts from
        # the longer memory's pairs (a curve's from the options' own)
        assert single.resolve_randomised == quadrature.resolve_randomised == longer
        assert curve.resolve_randomised == anderson
    # a run starts from the newest pairs up to its phase's memory and mixes with the rule's
    pairs = AndersonState.init(40)
    for i in range(30):
        pairs = pairs.update(np.full(3, float(i)), np.full(3, -float(i)))
    single = P.policy_for(problem, OPTS).memory
    start = single.starting(Phase.SOLVE, sharp, pairs)
    assert start.memory == top and len(start.dxs) == OPTS.anderson
    assert [d[0] for d in start.dxs] == list(range(30 - OPTS.anderson, 30))
    start = single.starting(Phase.RESOLVE, sharp, pairs)
    assert start.memory == top and len(start.dxs) == resolve_memory(OPTS)
    assert len(single.starting(Phase.RESOLVE, wide, pairs).dxs) == OPTS.anderson
    start = single.starting(Phase.RESOLVE, smooth, pairs)
    assert start.memory == len(start.dxs) == OPTS.anderson
    start = P.policy_for(lasso, OPTS).memory.starting(Phase.RESOLVE, smooth, pairs)
    assert start.memory == len(start.dxs) == resolve_memory(OPTS)
    # the iteration keeps the memory it is given, whatever the map's rule
    T = FixedPointMap(problem, SobolRQMC(dim=3, n_log2=6, n_rep=2))
    out = iterate(T, T.start(), AndersonState.init(6), tol=OPTS.tol, max_iter=2, damping=1.0)
    assert out.anderson.memory == 6
    assert not hasattr(T, "mixing_memory")
    # a curve's first solve runs with the options' memory: so does the policy of every curve
    for k in (2, 3, 4, 5, 6, 7):
        mk = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=k)
        ps = [make_problem(mk, "cross-entropy", lam=1e-3, alpha=a) for a in (1.0, 2.0)]
        policy = P.policy_for_points(ps, OPTS)
        assert policy.memory.of(Phase.SOLVE, policy.rule) == OPTS.anderson, k
    # and no run below the policy decides it: each takes the memory, with no default
    import inspect

    from gaussmix.theory.solve import batch_solve, estimate, refinement

    for run in (
        batch_solve.converged_solve,
        batch_solve.iterated_solve,
        estimate.replicate_state,
        refinement._replicate_values,
        refinement._tail_start,
    ):
        param = inspect.signature(run).parameters["anderson"]
        assert param.default is inspect.Parameter.empty, run.__name__


def test_the_coarse_phase_of_a_small_lam_k3_lasso_takes_the_coarser_prior_rule(monkeypatch):
    """The K = 3 cross-entropy lasso below ``START_MAX_LAM`` declares a coarser rule of
    lines for its coarse phase (``coarse_prior_panels``), and only it: not at larger
    ``lam``, not with panels of the user's, not for a closed-form channel, three effective
    outputs or a curve's stacked points.  The solve runs it (the coarse channel rule's
    evaluations on those panels, the solve's own rule on the default ones) and returns the
    fixed point of its own rules: the same test error as without the coarser phase, within
    the answer's own error estimate."""
    from gaussmix.theory.prior.lasso import COARSE_OUTER_PANELS, START_MAX_LAM
    from gaussmix.theory.solve import fixed_point as fp

    def lasso(lam: float, loss: str = "cross-entropy", K: int = 3):
        return make_problem(_iso(K), loss, lam=lam, alpha=2.0, penalty="l1")

    small = 0.1 * START_MAX_LAM
    assert P.policy_for(lasso(small), OPTS).coarse_prior_panels == COARSE_OUTER_PANELS
    assert P.policy_for(lasso(START_MAX_LAM), OPTS).coarse_prior_panels is None
    own = replace(OPTS, prior_panels=64)
    assert P.policy_for(lasso(small), own).coarse_prior_panels is None
    assert P.policy_for(lasso(small, "square"), OPTS).coarse_prior_panels is None
    assert P.policy_for(lasso(small, K=4), OPTS).coarse_prior_panels is None
    points = [lasso(small), make_problem(_iso(3), "cross-entropy", lam=small, alpha=3.0)]
    assert P.policy_for_points(points, OPTS).coarse_prior_panels is None

    seen: list[tuple[int, int | None]] = []
    real = fp.FixedPointMap._point_image

    def spy(self, problem, *args):
        seen.append((self.rule.weights.size, self.prior_panels))
        return real(self, problem, *args)

    monkeypatch.setattr(fp.FixedPointMap, "_point_image", spy)
    problem = lasso(small)
    res = solve_problem(problem, options=replace(OPTS, estimate_error=False))
    rule = P.policy_for(problem, OPTS).rule
    coarse = rule.coarsened().weights.size
    assert res.success and seen[0] == (coarse, COARSE_OUTER_PANELS)
    assert {p for n, p in seen if n == coarse} == {COARSE_OUTER_PANELS}
    assert {p for n, p in seen if n != coarse} == {None}
    monkeypatch.setattr(fp.FixedPointMap, "_point_image", real)
    res = solve_problem(problem)
    monkeypatch.setattr(P, "coarse_prior_panels", lambda problem, opts: None)
    ref = solve_problem(problem)
    assert res.success and ref.success
    assert abs(res.test_error - ref.test_error) <= ref.integration_error
