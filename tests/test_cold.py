"""Every valid problem converges cold (issue 31 item 3): seeded random problems over every
registered mixture model, loss and penalty (``tests/_random_problems.py``), each solved by
``gm.solve`` with the default options, must succeed (converged, finite observables) within
:data:`SECONDS` of CPU time; the ten slowest are printed (``-s``).  A warm-up first loads
the modules and compiled kernels that the first solve of each kind would otherwise count.

* by default (``slow``, in CI): the 969 of the 1,000 problems of seed 0 that are not a
  multi-output lasso of four outputs with the cross-entropy loss (``ci_subset``): every
  mixture model, loss and penalty, the multi-output lasso (lasso or elastic net of one-hot
  labels) of three outputs with either loss and of four with the square loss, with the
  :data:`KNOWN_UNBOUNDED` (none since the homotopy in alpha: problems that must raise
  the named :class:`gaussmix.UnboundedWeightsError`) and :data:`KNOWN_SLOW` (none) named
  with their reasons (62 s of CPU in all, at most 3.0 s each, under load 10-12);
* ``-m long``: all 1,000 (``python -m pytest -m long tests/test_cold.py -s``), with the
  31 multi-output lasso problems of four outputs and the cross-entropy loss, too slow for
  CI (72 s of CPU in all, 0.09 to 6.2 s each, median 2.3 s, load 13-16; none in
  :data:`KNOWN_SLOW_LONG`), all of which succeed since :data:`NEAR_ZERO_K4` converges
  (``benchmarks/bench_cold.py``, ``BENCHMARKS.md``).

And the solver's own fallback (``SolverOptions.fallback``): where the iteration from the cold
start fails, a homotopy in ``lam`` or in ``alpha`` finds the fixed point that the curve
machinery finds (``learning_curve``'s continuation), and says so.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from _random_problems import (
    Outcome,
    ci_subset,
    long_only,
    multi_output_lasso,
    random_problems,
    run,
    warm_up,
)

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentError

#: the limit of one cold solve, in seconds of CPU time (of this process: the machine's load
#: from other processes does not count)
SECONDS = 10.0
#: the number of problems of seed 0 drawn (the default test runs those of ``ci_subset``,
#: the long one all)
LONG = 1000


#: the problems of seed 0 that do not meet the test yet, measured, with the reason: each
#: must still fail (when one succeeds, remove it here), every other must succeed; none
#: since :data:`NEAR_ZERO_K4` converges
KNOWN_FAILURES: dict[int, str] = {}
#: K = 4 cross-entropy with a lasso at lam = 5.7, near the zero estimator (max |Q_c| 1e-12),
#: a known failure until the prior's metric was kept positive definite and the channel
#: solved without ``V^{-1}`` where ``V`` is small: Stein's lemma across lines made ``V_c``
#: indefinite beyond rounding (eigenvalues 1.4e-11 down to -1.3e-20), the Newton step on
#: ``V^{-1} + H`` failed its Cholesky factorisation at every node, and the homotopy failed
#: the same way from above and from below
NEAR_ZERO_K4 = 449
#: the hinge with an elastic net (l1_ratio 0.62) at lam = 2.9, unbalanced classes (0.40,
#: 0.60), a known failure until the fallback took one path per side of ``lam``: the cold
#: bias step diverges (b ~ -1e27, 'degenerate fixed point'), the homotopy from above stalls
#: at lam ~ 3.6 where the weights vanish, and the one from below (lam = 0.29) arrives.  A
#: finite-size check (d = 200: the best subgradient of the hinge at W = 0 and the bias at
#: its kink leaves sup_i |(X^T (c y))_i| / sqrt(d) = 2.76 > lam l1_ratio = 1.80) says
#: ``W* = 0`` does not minimise its ERM: the fixed point has weights
REACHED_FROM_BELOW = 533
#: the problems of seed 0 that raise the named :class:`gaussmix.UnboundedWeightsError` (the
#: test's contract met: a documented degenerate case, not a failure): none since the cold
#: solve's homotopy in alpha (:data:`REACHED_IN_ALPHA`)
KNOWN_UNBOUNDED: dict[int, str] = {}
#: named here before as the one case of :data:`KNOWN_UNBOUNDED` (hinge, lasso at lam = 2.8,
#: K = 4 clusters, alpha = 0.12: the cold map fails at its first evaluation, the hinge
#: without curvature at the zero estimator while ``P(|B| > t) = 5e-26``): the homotopy in
#: alpha from alpha = 3.77 reaches a fixed point with test error 0.5 and a nonzero fraction
#: 3e-26; its finite-size ERM (d = 200, 400) is exactly ``W* = 0`` with the bias at the kink
#: (a fraction 3e-26 of 400 coordinates is none)
REACHED_IN_ALPHA = 669
#: named here before as a case of :data:`KNOWN_UNBOUNDED` (hinge, lasso at lam = 1.03,
#: sparse mixture, alpha = 0.19: the cold map fails at the zero estimator, and warm starts
#: from lam = 0.1 were measured to fail at 0.83): the homotopy from below reaches a fixed
#: point with weights on 0.11 % of the coordinates, continuous in lam (warm starts reach it
#: and go on past it).  At d = 200, 400 that is 0.2 to 0.4 coordinates: the finite-size
#: ERM's exact ``W* = 0`` (its subgradient certificate) does not contradict it
FEW_WEIGHTS = 849
#: ... and those that succeed beyond :data:`SECONDS`, with the reason (not timed): none
#: since the sharp regime's randomised rule mixes with 20 secant pairs
#: (the policy's :class:`~gaussmix.theory.solve.memory.AndersonMemory`): #426, K = 4
#: cross-entropy of a spectral mixture at lam = 2.4e-3, was 15 to 20 s of CPU (212
#: iterations: 26 to 41 a phase of the three-dimensional randomised rule, then the
#: estimate's refinement of the rule to 2**13 x 8 points and its re-solve), now 5.2 s (142
#: iterations, measured beside the earlier code's 15.7 s under load 16 to 22; the
#: replicates' spread of the training error, 9.4e-5, now below its target: no refinement)
KNOWN_SLOW: dict[int, str] = {}
#: ... and those of the long test (:func:`~_random_problems.long_only`: the multi-output
#: lasso of four outputs with the cross-entropy loss): none since the training error's
#: proximal points are screened without the control variate too and the prior's re-solve
#: keeps the sharp rule's 20 secant pairs, measured on 2026-12-07 under load 16-20
#: (``benchmarks/bench_cold.py --indices``, two rounds alternated with the earlier code,
#: whose times follow in parentheses; CPU seconds, the larger of the two rounds): #217 6.4
#: (7.5), #477 6.1 (7.5), #721 4.9 (9.3: eight training errors of 0.66 s, now 0.11 s),
#: #409 5.6 (7.0), #113 3.4 (5.4), #189 4.9 (5.2), #440 4.3 (4.4), #893 3.2 (3.2).  Named
#: here before: #217 10.0 s, #477 10.3 s, #721 11.8 s (load 16-22)
KNOWN_SLOW_LONG: dict[int, str] = {}


#: two K = 4 cross-entropy multi-output lasso problems (of the long test) whose prior's
#: refinement stops after its first re-solve (8 x 8 -> 16 x 16 panels): the channel's
#: randomised rule leaves 6e-6 to 1.1e-5 of the test error out of reach of ``quad_tol``
PRIOR_ESTIMATE_CASES = (113, 189)


@pytest.mark.slow
@pytest.mark.parametrize("index", PRIOR_ESTIMATE_CASES)
def test_four_class_lasso_estimate_bounds_a_much_finer_prior_rule(index):
    """The answer of the first refinement of the prior's rule and its estimate: the same
    channel rule with four times the panels per dimension (64 x 64) moves the test error,
    training error and training loss by less than the estimate (which holds the change
    under that refinement: 1.5e-5 and 5.8e-5 of the test error).  Measured: the test error
    moves by 7.2e-7 and 1.3e-6 against estimates of 2.1e-5 and 6.9e-5, the training loss
    by 4e-9 and 5e-10 against 5.2e-5 and 2.1e-7."""
    p = random_problems(index + 1, seed=0)[index]
    assert long_only(p) and p.penalty in ("l1", "elastic-net")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = p.solve()
        fine = p.solve(quadrature=res.state.rule, prior_panels=64, estimate_error=False, init=res)
    assert res.success and fine.success
    assert res.state.prior_panels == 16 and fine.state.prior_panels == 64
    for key in ("test_error", "train_error", "train_loss"):
        change = abs(getattr(res, key) - getattr(fine, key))
        assert change <= res.integration_errors[key], (key, change, res.integration_errors)


#: a K = 4 cross-entropy multi-output lasso problem of the long test in the smooth regime:
#: its answer after five refinements of the tensor Gauss-Hermite rule (to n = 20) and two of
#: the prior's panels (to 32 x 32)
SMOOTH_ESTIMATE_CASE = 721


@pytest.mark.slow
def test_four_class_smooth_estimate_bounds_a_much_finer_rule():
    """The answer of :data:`SMOOTH_ESTIMATE_CASE` and its estimate (the changes under the last
    refinements of the channel's and the prior's rules, plus the evaluation's own errors):
    a channel rule of 26 nodes per dimension (2.2 times the nodes) with the prior's 64 x 64
    panels (four times the lines) moves the test error, training error and training loss by
    less than the estimate.  Measured: the test error by 2.8e-7 against 1.1e-6, the training
    loss by 9.2e-7 against 4.1e-6, the training error (the same seeded points) not at all
    against 1.1e-4 (4 minutes under load 20: the finer prior's re-solve)."""
    from gaussmix.theory.numerics.quadrature import GaussHermite

    p = random_problems(SMOOTH_ESTIMATE_CASE + 1, seed=0)[SMOOTH_ESTIMATE_CASE]
    assert long_only(p) and p.penalty == "l1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = p.solve()
        rule = res.state.rule
        assert isinstance(rule, GaussHermite) and rule.n == 20 and res.state.prior_panels == 32
        finer = GaussHermite(26, rule.dim, rule.prune)
        fine = p.solve(quadrature=finer, prior_panels=64, estimate_error=False, init=res)
    assert res.success and fine.success
    for key in ("test_error", "train_error", "train_loss"):
        change = abs(getattr(res, key) - getattr(fine, key))
        assert change <= res.integration_errors[key], (key, change, res.integration_errors)


#: a K = 4 cross-entropy multi-output lasso problem of the long test solved with the sharp
#: regime's randomised rule (8 x 2**12 points) and the prior's 16 x 16 panels
RANDOMISED_ESTIMATE_CASE = 217


@pytest.mark.slow
def test_four_class_randomised_estimate_bounds_a_much_finer_rule():
    """The answer of :data:`RANDOMISED_ESTIMATE_CASE` and its estimate (the replicates' standard
    error plus the prior's refinement): a rule of 8 x 2**15 points (eight times the points,
    other scramblings) with the same prior panels moves the test error and the training
    loss (the targets of ``quad_tol``) by less than the estimate.  Measured: 6.1e-5 against
    8.9e-5 and 6.0e-5 against 9.0e-5 (seeds 1 and 2 of the finer rule agree within 3e-7)."""
    from gaussmix.theory.numerics.quadrature import SobolRQMC

    index = RANDOMISED_ESTIMATE_CASE
    p = random_problems(index + 1, seed=0)[index]
    assert long_only(p) and p.penalty == "l1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = p.solve()
        rule = res.state.rule
        assert isinstance(rule, SobolRQMC) and rule.n_log2 == 12
        finer = SobolRQMC(rule.dim, 15, rule.n_rep, seed=1)
        panels = res.state.prior_panels
        fine = p.solve(quadrature=finer, prior_panels=panels, estimate_error=False, init=res)
    assert res.success and fine.success
    for key in ("test_error", "train_loss"):
        change = abs(getattr(res, key) - getattr(fine, key))
        assert change <= res.integration_errors[key], (key, change, res.integration_errors)


def _check(outcomes: list[Outcome], known_slow: dict[int, str]) -> None:
    slow = sorted(outcomes, key=lambda o: -o.cpu_seconds)[:10]
    print("\nthe ten slowest (CPU seconds):")
    for o in slow:
        print("  " + o.describe())
    wall, cpu = sum(o.seconds for o in outcomes), sum(o.cpu_seconds for o in outcomes)
    print(f"total: {wall:.1f} s, {cpu:.1f} s CPU")
    known = [o for o in outcomes if o.problem.index in KNOWN_FAILURES]
    print(f"{len(known)} known failures:")
    for o in known:
        print(f"  {o.describe()} [{KNOWN_FAILURES[o.problem.index]}]")
    named = [o for o in outcomes if o.problem.index in KNOWN_UNBOUNDED]
    print(f"{len(named)} named degenerate cases:")
    for o in named:
        print(f"  {o.describe()} [{KNOWN_UNBOUNDED[o.problem.index]}]")
    unnamed = [o.describe() for o in named if not o.error.startswith("UnboundedWeightsError")]
    assert not unnamed, "expected UnboundedWeightsError:\n" + "\n".join(unnamed)
    failed = [
        o.describe()
        for o in outcomes
        if not o.success and o not in known and o.problem.index not in KNOWN_UNBOUNDED
    ]
    assert not failed, f"{len(failed)} of {len(outcomes)} failed:\n" + "\n".join(failed)
    fixed = [o.describe() for o in known if o.success]
    assert not fixed, "known failures that succeed now (remove them):\n" + "\n".join(fixed)
    late = [
        o.describe()
        for o in outcomes
        if o.success and o.cpu_seconds > SECONDS and o.problem.index not in known_slow
    ]
    assert not late, f"{len(late)} took more than {SECONDS:g} s CPU:\n" + "\n".join(late)


@pytest.mark.long
def test_every_random_problem_converges_cold():
    warm_up()
    _check([run(p) for p in random_problems(LONG, seed=0)], KNOWN_SLOW | KNOWN_SLOW_LONG)


@pytest.mark.slow
def test_random_problems_converge_cold():
    problems = ci_subset(LONG, seed=0)
    assert len(problems) == 969
    assert {p.model for p in problems} == set(gm.MIXTURE_MODELS.names())
    assert {p.loss for p in problems} == set(gm.LOSSES.names())
    assert {p.penalty for p in problems} == set(gm.PENALTIES.names())
    # the multi-output lasso of three and four outputs, lasso and elastic net, in CI too
    multi = {(p.mixture.labels.dim, p.penalty) for p in problems if multi_output_lasso(p)}
    assert multi == {(k, pen) for k in (3, 4) for pen in ("l1", "elastic-net")}
    warm_up()
    _check([run(p) for p in problems], KNOWN_SLOW)


def test_long_only_problems_are_named():
    """The problems the long test alone runs are the multi-output lasso of four outputs
    with the cross-entropy loss (31 of 1,000), and :data:`KNOWN_SLOW_LONG` names none
    other."""
    problems = random_problems(LONG, seed=0)
    long = [p for p in problems if long_only(p)]
    assert len(long) == 31
    assert all(p.loss == "cross-entropy" and p.n_clusters == 4 for p in long)
    assert set(KNOWN_SLOW_LONG) <= {p.index for p in long}


def _zero_certificate(problem, d: int, seed: int) -> float:
    """The best subgradient certificate that ``W = 0`` minimises the problem's finite-size
    ERM at dimension ``d``: ``min_c max_i |sum_nu c_nu y_nu x_nu,i| / sqrt(d)`` over the
    hinge's subgradients ``c`` at the margins ``y b`` (``c = 1`` below the kink, ``[0, 1]``
    at it, 0 past it) with ``sum_nu c_nu y_nu = 0``, the best of ``b = 1`` and ``b = -1``.

    By convexity ``R(W, b') >= R(0, b) + (lam l1_ratio - s) |W|_1`` for the certificate
    ``s``: below ``lam l1_ratio`` it proves ``W* = 0`` (the unique minimiser), above it the
    least risk has weights."""
    from scipy.optimize import linprog

    from gaussmix.simulate.separability import realise

    rng = np.random.default_rng(seed)
    n = int(round(problem.alpha * d))
    X, cid = realise(problem.mixture, d, rng).sample(n, rng)
    y = np.asarray(problem.mixture.labels.labels, float)[cid, 0]
    G = (X * y[:, None]).T / np.sqrt(d)
    best = np.inf
    for b in (1.0, -1.0):
        margin = y * b  # exactly +-1
        lo = np.where(margin < 0.0, 1.0, 0.0)
        bounds = [(low, 1.0) for low in lo] + [(0.0, None)]
        res = linprog(
            np.r_[np.zeros(n), 1.0],
            A_ub=np.block([[G, -np.ones((d, 1))], [-G, -np.ones((d, 1))]]),
            b_ub=np.zeros(2 * d),
            A_eq=np.r_[y, 0.0][None],
            b_eq=[0.0],
            bounds=bounds,
            method="highs",
        )
        if res.status == 2:  # no subgradient balances the bias at this kink
            continue
        assert res.status == 0
        c = res.x[:n]
        # the certificate checked on its own (not trusting the LP's tolerances)
        assert np.all(c >= lo - 1e-9) and np.all(c <= 1.0 + 1e-9)
        assert abs(y @ c) < 1e-9 * n
        best = min(best, float(np.max(np.abs(G @ c))))
    assert np.isfinite(best), "no balancing subgradient at either kink"
    return best


def test_hinge_lasso_erm_is_zero_where_reached_in_alpha():
    """The hinge with a pure lasso of :data:`REACHED_IN_ALPHA`: the direct iteration raises
    the named error at the zero estimator, the solve's homotopy in alpha reaches a fixed
    point next to it (test error 0.5, nonzero fraction below 1e-20, a fixed point of the
    map in the state's own coordinates too), and the finite-size ERM (d = 200, 400) is
    exactly ``W* = 0`` with the bias at the kink, proved by a subgradient whose sup norm
    is below ``lam`` (measured 0.90 against lam = 2.84)."""
    problem = random_problems(REACHED_IN_ALPHA + 1, seed=0)[REACHED_IN_ALPHA]
    assert problem.loss == "hinge" and problem.penalty == "l1"
    with pytest.raises(gm.UnboundedWeightsError, match="Theorem 1's fixed point is degenerate"):
        problem.solve(fallback=False)
    res = problem.solve()
    assert res.success and res.params["fallback"].startswith("alpha homotopy from alpha=")
    assert res.test_error == pytest.approx(0.5, abs=1e-9)
    assert 0.0 < res.nonzero_fraction < 1e-20
    # the answer is a fixed point of the plain map (no chart, no damping): one
    # evaluation moves it by less than the solver's tolerance
    again = gm.solve(
        problem.mixture, "hinge", lam=problem.lam, alpha=problem.alpha, penalty="l1", init=res
    )
    assert again.success and again.n_iter == 1
    for d in (200, 400):
        assert _zero_certificate(problem, d, seed=2) < problem.lam


def test_hinge_lasso_with_few_weights_reached_from_below():
    """:data:`FEW_WEIGHTS`: the solve's answer through a homotopy (in alpha, tried first
    where the cold map fails with the weights unbounded; before it, in lam from 0.1) is
    the one of warm starts from lam = 0.1 in 20 equal steps (measured within 3e-11), with
    a nonzero fraction of about 1e-3."""
    problem = random_problems(FEW_WEIGHTS + 1, seed=0)[FEW_WEIGHTS]
    assert problem.loss == "hinge" and problem.penalty == "l1"
    res = problem.solve()
    assert res.success and res.params["fallback"].startswith("alpha homotopy from alpha=0.77")
    assert 1e-4 < res.nonzero_fraction < 1e-2
    ref = None
    for lam in np.linspace(0.1, problem.lam, 20):
        ref = gm.solve(
            problem.mixture, "hinge", lam=lam, alpha=problem.alpha, penalty="l1", init=ref
        )
    assert ref.success and "fallback" not in ref.params
    for key in ("test_error", "train_error", "train_loss", "nonzero_fraction"):
        assert getattr(res, key) == pytest.approx(getattr(ref, key), abs=1e-8), key


def test_hinge_elastic_net_reached_from_below():
    """:data:`REACHED_FROM_BELOW`: at d = 200 no subgradient at ``W = 0`` reaches below
    ``lam l1_ratio`` (measured 2.76 against 1.80), so the least risk has weights; the
    solve finds them through the homotopy from below, and its answer is the one of warm
    starts in ``lam`` from 0.3 lam in equal steps (a path of its own: solves from ``init``
    never fall back)."""
    problem = random_problems(REACHED_FROM_BELOW + 1, seed=0)[REACHED_FROM_BELOW]
    assert problem.loss == "hinge" and problem.penalty == "elastic-net"
    assert _zero_certificate(problem, 200, seed=2) > problem.lam * problem.l1_ratio
    with pytest.raises(gm.SpuriousFixedPointError, match="degenerate"):
        problem.solve(fallback=False)
    res = problem.solve()
    assert res.success and res.params["fallback"].startswith("lambda homotopy from lam=0.29")
    assert res.nonzero_fraction > 0.1
    ref = None
    for lam in np.linspace(0.3, 1.0, 15) * problem.lam:
        ref = gm.solve(
            problem.mixture,
            "hinge",
            lam=lam,
            alpha=problem.alpha,
            penalty="elastic-net",
            l1_ratio=problem.l1_ratio,
            init=ref,
        )
    assert ref.success and "fallback" not in ref.params
    for key in ("test_error", "train_error", "train_loss", "nonzero_fraction"):
        assert getattr(res, key) == pytest.approx(getattr(ref, key), abs=1e-6), key


def test_invalid_combinations_are_rejected():
    """The generator draws only valid problems; the combinations it avoids are rejected by
    validation, naming the argument (not solved, not counted)."""
    rng = np.random.default_rng(0)
    dense = gm.Mixture.dense(rng.standard_normal((2, 4)), np.stack([np.eye(4)] * 2))
    with pytest.raises(ArgumentError, match="penalty"):
        gm.solve(dense, "square", lam=0.1, alpha=1.0, penalty="l1")
    with pytest.raises(ValueError, match="labels"):
        gm.solve(gm.Mixture.sparse(0.5, 0.1, 0.5), "cross-entropy", lam=0.1, alpha=1.0)
    with pytest.raises(ValueError, match="binary labels"):
        gm.solve(gm.Mixture.isotropic(1.0, n_clusters=3), "hinge", lam=0.1, alpha=1.0)


def test_generator_is_seeded_and_covers_the_registries():
    a, b = random_problems(50, seed=3), random_problems(50, seed=3)
    assert [p.describe() for p in a] == [p.describe() for p in b]
    assert [p.describe() for p in a] != [p.describe() for p in random_problems(50, seed=4)]
    many = random_problems(LONG, seed=0)
    assert {p.model for p in many} == set(gm.MIXTURE_MODELS.names())
    assert {p.loss for p in many} == set(gm.LOSSES.names())
    assert {p.penalty for p in many} == set(gm.PENALTIES.names())
    assert {p.n_clusters for p in many} == {2, 3, 4}
    lam = np.array([p.lam for p in many])
    alpha = np.array([p.alpha for p in many])
    assert lam.min() >= 1e-3 and lam.max() <= 10.0
    assert alpha.min() >= 0.05 and alpha.max() <= 8.0


#: the two-class cross-entropy with a sparse penalty near its zero estimator (problems of
#: seed 0 that failed before: the compiled channel's Stein term cancelled to 0 at V ~ 1e-30,
#: and the general prior's Q rounded below 0)
ZERO_REGIME = (84, 124, 233)


def test_two_class_sparse_penalty_at_its_zero_estimator():
    """W* is zero to ~1e-28 (nonzero_fraction): the answer is the bias-only classifier,
    in closed form: b_1 - b_2 = log(rho_1 / rho_2), test and training error 1 - max rho,
    training loss the entropy of rho."""
    problems = random_problems(max(ZERO_REGIME) + 1, seed=0)
    for i in ZERO_REGIME:
        p = problems[i]
        assert p.loss == "cross-entropy" and p.penalty != "l2" and p.n_clusters == 2
        res = p.solve()
        rho = p.mixture.rho
        assert res.success and "fallback" not in res.params, p.describe()
        assert res.nonzero_fraction < 1e-20
        assert res.b[0] - res.b[1] == pytest.approx(np.log(rho[0] / rho[1]), abs=1e-8)
        assert res.test_error == pytest.approx(1 - rho.max(), abs=1e-8)
        assert res.train_error == pytest.approx(1 - rho.max(), abs=1e-8)
        assert res.train_loss == pytest.approx(-rho @ np.log(rho), abs=1e-8)


def test_four_class_lasso_near_its_zero_estimator():
    """:data:`NEAR_ZERO_K4` converges cold, directly (no fallback), to the bias-only
    classifier up to weights on ~5e-12 of the entries: the closed form of
    :func:`test_two_class_sparse_penalty_at_its_zero_estimator` for four classes (test and
    training error ``1 - max rho``, training loss the entropy of ``rho``), within what
    weights on 5e-12 of the entries can move (measured: within 1e-15)."""
    p = random_problems(NEAR_ZERO_K4 + 1, seed=0)[NEAR_ZERO_K4]
    assert p.loss == "cross-entropy" and p.penalty == "l1" and p.n_clusters == 4
    res = p.solve(fallback=False)
    assert res.success
    assert 0.0 < res.nonzero_fraction < 1e-10
    rho = p.mixture.rho
    assert res.test_error == pytest.approx(1 - rho.max(), abs=1e-8)
    assert res.train_error == pytest.approx(1 - rho.max(), abs=1e-8)
    assert res.train_loss == pytest.approx(-rho @ np.log(rho), abs=1e-8)
    for V in res.state.unpack()[2]:  # (the effective outputs' metrics)
        assert np.linalg.eigvalsh(V)[0] > 0.0


# ------------------------------------------------------------------ the solver's fallback
#: the sparse mixture of Section 3.1 where the cold iteration of square + l1 at lam = 0.01
#: does not converge in max_iter (issue 31): alpha = 0.253 (residual 5.6 after 3000
#: iterations) and 0.863 (0.047)
SPARSE = dict(sparsity=0.5, delta1=0.1, delta2=0.5)
HARD_ALPHAS = (0.253, 0.863)


@pytest.mark.parametrize("alpha", HARD_ALPHAS)
def test_fallback_recovers_the_cold_failure(alpha):
    mix = gm.Mixture.sparse(**SPARSE)
    kw = dict(lam=0.01, alpha=alpha, penalty="l1")
    with pytest.raises(gm.ConvergenceError, match="did not converge"):
        gm.solve(mix, "square", fallback=False, **kw)
    res = gm.solve(mix, "square", **kw)
    assert res.success and np.isfinite(res.test_error)
    assert res.params["fallback"].startswith("lambda homotopy from lam=1 ")
    # the cold solve stopped where it stalled, long before max_iter, and its iterations count
    stalled = re.search(r"stalled after (\d+) iterations", res.params["fallback"])
    assert stalled is not None, res.params["fallback"]
    assert int(stalled.group(1)) < gm.SolverOptions().max_iter // 5
    assert res.n_iter > int(stalled.group(1))
    # the same fixed point as the curve's continuation (an independent path: warm starts
    # along alpha at the problem's own lam)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.ConvergenceWarning)
        curve = gm.learning_curve(
            mix, "square", np.linspace(alpha - 0.1, alpha, 5), lam=0.01, penalty="l1"
        )
    ref = curve.points[-1]
    assert ref is not None and ref.success
    tol = 1e-6
    for key in ("test_error", "train_error", "train_loss", "nonzero_fraction"):
        assert getattr(res, key) == pytest.approx(getattr(ref, key), abs=tol), key
    np.testing.assert_allclose(res.Q, ref.Q, rtol=1e-5, atol=1e-8)


def test_fallback_from_a_smaller_lam():
    """The hinge loss with unbalanced classes at lam = 1: a larger penalty makes it harder
    (the bias tends to a kink of the loss as W* -> 0), the homotopy comes from below; the
    answer is the one reached by warm starts from lam = 0.5 in eight equal steps of lam (a
    path of its own: solves from ``init`` never fall back)."""
    mix = gm.Mixture.isotropic(
        0.594, "simplex", n_clusters=3, rho=[0.2445, 0.4417, 0.3138], labels=[[1], [-1], [1]]
    )
    kw = dict(lam=1.007, alpha=0.1525)
    with pytest.raises(gm.SpuriousFixedPointError, match="degenerate"):
        gm.solve(mix, "hinge", fallback=False, **kw)
    res = gm.solve(mix, "hinge", **kw)
    assert res.success and res.params["fallback"].startswith("lambda homotopy from lam=0.1")
    ref = None
    for lam in np.linspace(0.5, 1.007, 9):
        ref = gm.solve(mix, "hinge", lam=lam, alpha=0.1525, init=ref)
    assert ref.success and "fallback" not in ref.params
    for key in ("test_error", "train_error", "train_loss"):
        assert getattr(res, key) == pytest.approx(getattr(ref, key), abs=1e-6), key


def test_direct_solves_do_not_fall_back():
    """A cold solve that converges is the direct one: no ``fallback`` in its parameters."""
    res = gm.solve(gm.Mixture.sparse(**SPARSE), "square", lam=0.01, alpha=0.711, penalty="l1")
    assert res.success and "fallback" not in res.params
