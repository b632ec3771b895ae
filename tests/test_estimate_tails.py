"""The estimate of a refined randomised channel rule from the tails of its replicates
(issue 32, item 4): replicate ``r`` of the refined rule is the coarser rule's replicate
``r`` extended by its tail, so its spread needs the tails' states only, and the estimate
still bounds the change to a much finer rule."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _helpers import policy_memory, solved_on_randomised_rule

import gaussmix as gm
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.channel.channel import ProxWarmStart
from gaussmix.theory.numerics.quadrature import GaussHermite, SobolRQMC, SobolTail
from gaussmix.theory.numerics.tolerances import PROX_TOL, REPLICATE_SHIFT_RTOL
from gaussmix.theory.solve import nested, refinement
from gaussmix.theory.solve.estimate import standard_errors
from gaussmix.theory.solve.fixed_point import MapMemory, new_map
from gaussmix.theory.solve.iteration import iterate
from gaussmix.theory.solve.memory import Phase


def test_a_refined_replicate_is_its_coarse_replicate_and_its_tail():
    """The nodes of the refined rule's replicate ``r`` are the coarse replicate's followed
    by tail ``r``'s, all of equal weight; the tail is no rule to refine."""
    rule = SobolRQMC(5, 6, 4, seed=3)
    finer, tails = rule.refined(), rule.tails()
    assert len(tails) == rule.n_rep
    for r, (rep, fine, tail) in enumerate(zip(rule.replicates(), finer.replicates(), tails)):
        assert tail == SobolTail(5, 6, 3, r) and tail.replicates() == (tail,)
        np.testing.assert_array_equal(fine.nodes, np.concatenate([rep.nodes, tail.nodes]))
        np.testing.assert_array_equal(tail.weights, np.full(2**6, 2.0**-6))
        m = finer.weights.size // rule.n_rep  # (the refined rule's block r ends with it)
        np.testing.assert_array_equal(tail.nodes, finer.nodes[r * m + m // 2 : (r + 1) * m])
    # the refined rule's proximal points laid out from the halves' (each block: rule, tail)
    k, L, n = 2, 3, 2**6

    def start(of, size, value):
        full = np.full((k, size, L), float(value))
        return ProxWarmStart((of, (k, size, L)), full, full + 0.5, np.eye(L)[None])

    halves = [start(t, n, 10 + r) for r, t in enumerate(tails)]
    laid = nested.refined_warm(start(rule, 4 * n, 1), halves, rule, finer)
    assert laid.key == (finer, (k, 8 * n, L))
    for r in range(rule.n_rep):
        assert (laid.h[:, 2 * r * n : (2 * r + 1) * n] == 1).all()
        assert (laid.h[:, (2 * r + 1) * n : (2 * r + 2) * n] == 10 + r).all()
        assert (laid.omega[:, (2 * r + 1) * n : (2 * r + 2) * n] == 10.5 + r).all()
    # a missing tail, or a start of another rule, lays out nothing
    assert nested.refined_warm(start(rule, 4 * n, 1), [None, *halves[1:]], rule, finer) is None
    assert nested.refined_warm(start(finer, 4 * n, 1), halves, rule, finer) is None
    assert tails[0].refined() is None and tails[0].limit() and tails[0].tails() is None
    assert "sobol-tail" in tails[0].describe()
    # a deterministic rule has no tails
    assert GaussHermite(2, 8).tails() is None


def _solved_k10():
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=10)
    return solved_on_randomised_rule(make_problem(mix, "cross-entropy", lam=1e-2, alpha=10.0))


def _moments(T, x, warm=None) -> np.ndarray:
    m = T.hats(x, MapMemory(warm=warm)).moments
    return np.concatenate([np.ravel(a) for a in (m.Ef, m.Eff, m.Edf, m.Eloss, m.Eenv)])


def test_tail_spread_is_the_refined_rules_spread():
    """Isotropic K = 10 (lam = 1e-2, alpha = 10), whose training error's spread refines the
    rule to 8 x 2**12 points: the spread of the refined rule's replicates made of the
    coarse replicates' values and their tails' (found from the coarse fixed point; the
    average of the two) is the spread of the refined replicates themselves (found from the
    refined rule's fixed point), within twice the linear response's relative accuracy
    (each spread is within it of the replicates' fixed points; measured 0.1-1 %), with the
    tails' evaluations: half the nodes.  The channel moments of a refined replicate are
    the average of its halves' (to the proximal solves' tolerance): the first-order
    argument's premise."""
    problem, opts, history, T, out = _solved_k10()
    anderson = policy_memory(problem, opts)  # (the solver's: its replicates mix with it)
    coarse, _ = refinement._replicate_values(
        problem, T, out.x, opts, None, history, out.aux, anderson=anderson
    )
    finer = T.rule.refined()
    assert finer is not None
    halves = (T.rule.replicates()[1], T.rule.tails()[1])
    both = (_moments(new_map(problem, r, T), out.x) for r in halves)
    np.testing.assert_allclose(
        _moments(new_map(problem, finer.replicates()[1], T), out.x),
        sum(both) / 2,
        rtol=0,
        atol=1e3 * PROX_TOL,
    )
    nodes: list[int] = []
    real = refinement.new_map

    def spy(problem, rule, *args, **kw):
        nodes.append(rule.weights.size)
        return real(problem, rule, *args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(refinement, "new_map", spy)
        paired, n_paired = refinement._replicate_values(
            problem, T, out.x, opts, None, history, out.aux, anderson=anderson, halves=coarse
        )
    n = T.rule.n_rep
    assert nodes == [2**11] * n  # the tails: half the nodes of the refined replicates
    T2 = new_map(problem, finer, T)
    warm = nested.nested_warm(
        out.aux.warm, T.rule, finer, nested.refined_blocks(T.rule, finer, T.rule.n_rep)
    )
    start = anderson.starting(Phase.SOLVE, finer, history.get(T.rule))  # (the re-solve's)
    kw = dict(tol=opts.tol, max_iter=opts.max_iter, damping=opts.damping)
    out2 = iterate(T2, out.x, start, return_image=False, aux=MapMemory(warm=warm), **kw)
    assert out2.converged
    history[finer] = out2.anderson
    direct, n_direct = refinement._replicate_values(
        problem, T2, out2.x, opts, None, history, out2.aux, anderson=anderson
    )
    assert n_paired <= n_direct
    sd, sp = standard_errors(direct, n), standard_errors(paired, n)
    for key in sd:
        assert sd[key] > 0.0, key  # not vacuous
        assert abs(sp[key] / sd[key] - 1.0) <= 2 * REPLICATE_SHIFT_RTOL, key
        # and the spread is the refined rule's, not the coarse one's (which is larger)
        assert abs(sp[key] / sd[key] - 1.0) < abs(
            standard_errors(coarse, n)[key] / sd[key] - 1.0
        ), key


def test_the_refined_rules_first_evaluation_is_its_halves():
    """The refined rule's channel evaluation at the coarse fixed point that the tails make
    (the coarse rule's and the tails' first evaluations averaged, their proximal points
    laid out as the refined rule's) is the refined rule's own evaluation there, to the
    proximal solves' tolerance, and starts its proximal solves."""
    problem, opts, history, T, out = _solved_k10()
    mem = T.hats_memory(out.x, out.aux)[1]
    anderson = policy_memory(problem, opts)
    values, _ = refinement._replicate_values(
        problem, T, out.x, opts, None, history, mem, anderson=anderson
    )
    T2 = new_map(problem, T.rule.refined(), T)
    found = refinement._tail_start(
        problem, T, T2, out.x, opts, None, history, mem, values, anderson
    )
    assert found is not None
    _, memory, n_iter = found
    assert n_iter >= T.rule.n_rep  # (at least the tails' first evaluations, counted)
    own = T2.hats(out.x)
    assert memory.ev.x is not out.x and np.array_equal(memory.ev.x, out.x)
    for made, ref in (
        (memory.ev.Qhat, own.Qhat),
        (memory.ev.Mhat, own.Mhat),
        (memory.ev.Vhat, own.Vhat),
    ):
        np.testing.assert_allclose(made, ref, rtol=0, atol=1e3 * PROX_TOL)
    assert memory.warm is not None and memory.warm.key == (T2.rule, memory.warm.h.shape)
    np.testing.assert_allclose(
        _moments(T2, out.x, memory.warm), _moments(T2, out.x), rtol=0, atol=1e3 * PROX_TOL
    )


@pytest.mark.slow  # ~6 s of CPU: the K = 10 point with its estimate, a rule of 2**17 nodes
def test_refined_k10_estimate_bounds_a_much_finer_rule():
    """The K = 10 point's answer (its rule refined to 8 x 2**12 points, the estimate from
    the tails) is within its estimate, with the finer rule's, of the answer with four times
    the points (8 x 2**14), for the estimated observables of the targets."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=10)
    kw = dict(lam=1e-2, alpha=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = gm.solve(mix, "cross-entropy", **kw)
        fine = gm.solve(mix, "cross-entropy", **kw, quadrature=SobolRQMC(9, 14, 8))
    assert res.success and fine.success
    assert res.params["quadrature"].startswith("sobol-rqmc(dim=9, points=2**12")
    err, fine_err = res.integration_errors, fine.integration_errors
    for key in ("test_error", "train_error", "train_loss"):
        change = abs(getattr(res, key) - getattr(fine, key))
        assert 0.0 < change <= 2.0 * (err[key] + fine_err[key]), key
