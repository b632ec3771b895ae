"""One map (issue 31, item 1): Theorem 1's map takes a leading axis of points
(:class:`~gaussmix.theory.solve.fixed_point.FixedPointMap`), a single solve is a batch of
one, and each point of a map of several points has what a map of that point alone has,
its image that map's to the bit: the priors that take one point (dense covariances with
the joint Newton step of the means and the bias, the lasso of several outputs with the
panels of its own rule), the single-precision phase, the zero estimator's bias, a rule
with integrals of its own (the softmax normaliser's), the starting point and the prior's
details.

Bit for bit: where the prior takes one point the map of several points calls the same
functions on the same arrays as the map of one point (the channel's means ``M_c + b`` are
added before the integrals in both), so no rounding bound is needed.  The priors that take
every point at once agree to rounding (relative 1e-13, as ``tests/test_batched_curves.py``
measures them).
"""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments import curves
from gaussmix.theory.channel.normaliser import NormaliserRule
from gaussmix.theory.numerics import tolerances
from gaussmix.theory.prior.prior import prior_update
from gaussmix.theory.problem.symmetry import ExchangeablePanels
from gaussmix.theory.solve.bias import flat_bias
from gaussmix.theory.solve.fixed_point import FixedPointMap, start_state
from gaussmix.theory.solve.policy import channel_rule
from gaussmix.theory.solve.state import pack_state, unpack_state

MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)


def _dense_mixture(d: int = 16) -> gm.Mixture:
    """Two clusters with full, non-commuting covariances and means of norm ~ 1."""
    rng = np.random.default_rng(0)
    means = rng.normal(size=(2, d)) / np.sqrt(d) * 2.0
    covs = []
    for _ in range(2):
        A = rng.normal(size=(d, d)) / np.sqrt(d)
        covs.append(A @ A.T + 0.2 * np.eye(d))
    return gm.Mixture.dense(means, np.array(covs), rho=[0.4, 0.6], labels="binary")


def _maps(problems, rule, **kw) -> list[FixedPointMap]:
    return [FixedPointMap(p, rule, **kw) for p in problems]


def _states(maps: list[FixedPointMap], n: int = 2) -> list[np.ndarray]:
    """Each point's state after ``n`` evaluations of its single map from its start (a state
    off the fixed point, whose image moves)."""
    out = []
    for T in maps:
        x = start_state(T.problem, None)
        for _ in range(n):
            x = T(x)
        out.append(x)
    return out


def _assert_images_are_the_single_points(problems, rule, states=None, **kw) -> None:
    """The image of a stacked map of the first point alone, and of all points, is each
    point's single image at its state, to the bit."""
    maps = _maps(problems, rule, **kw)
    states = _states(maps) if states is None else states
    sym = kw.get("symmetry")
    for n in (1, len(problems)):
        T = FixedPointMap(
            problems[:n],
            rule,
            sym,
            prior_panels=kw.get("prior_panels"),
            single=kw.get("single", False),
        )
        g = T(T.stack(states[:n]))
        for i, gi in enumerate(T.split(g)):
            if T.batched_prior and n > 1:  # one prior call for all points: to rounding
                np.testing.assert_allclose(gi, maps[i](states[i]), rtol=1e-13, atol=1e-15)
            else:
                np.testing.assert_array_equal(gi, maps[i](states[i]))


@pytest.mark.parametrize("single", [False, True])
def test_dense_points_take_their_single_points_prior_and_mean_bias_step(single) -> None:
    mix = _dense_mixture()
    problems = curves._problems(mix, "logistic", [(0.1, 0.5), (0.1, 2.0), (1.0, 1.0)], "l2", None)
    rule = channel_rule(problems[0], None)
    T = FixedPointMap(problems, rule, single=single)
    assert not T.batched_prior
    # the joint Newton step of the means and the bias is taken (the prior's mean response)
    x = T.stack(_states(_maps(problems, rule)))
    ev = T.hats(x)
    one = prior_update(problems[0], ev.Qhat[:2], ev.Mhat[:2], ev.Vhat[:2])
    assert one.mean_response is not None
    _assert_images_are_the_single_points(problems, rule, single=single)


def test_multi_output_lasso_points_take_their_single_points_prior_and_panels() -> None:
    problems = curves._problems(MIX3, "cross-entropy", [(0.1, 1.0), (0.3, 2.0)], "l1", None)
    rule = channel_rule(problems[0], None)
    assert not FixedPointMap(problems, rule).batched_prior
    for panels in (None, 4):
        _assert_images_are_the_single_points(problems, rule, prior_panels=panels)


def test_the_zero_estimator_takes_its_single_points_bias() -> None:
    """Hinge and elastic net at ``W* = 0``: no curvature from the loss, the bias condition
    unmet; each point's bias is :func:`~gaussmix.theory.solve.bias.flat_bias` (the
    kink of least risk), as its single point's, beside points with curvature.  (The
    elastic net's ridge part keeps the prior's curvature where a lasso's would raise
    ``UnboundedWeightsError`` at this state, as its single point's.)"""
    mix = gm.Mixture.isotropic(0.5, "antipodal", rho=[0.3, 0.7], labels="binary")
    points = [(1.0, 1.0), (0.1, 2.0), (1.0, 0.5)]
    problems = curves._problems(mix, "hinge", points, "elastic-net", 0.5)
    rule = channel_rule(problems[0], None)
    maps = _maps(problems, rule)
    zero = pack_state(np.zeros((2, 1, 1)), np.zeros((2, 1)), np.zeros((2, 1, 1)), np.zeros(1))
    states = [zero, *_states(maps[1:], n=1)]  # (the third's second image overflows)
    _assert_images_are_the_single_points(problems, rule, states=states)
    g = FixedPointMap(problems[:1], rule)(zero)
    bf = flat_bias(problems[0], zero)
    assert bf is not None and bf[0] != 0.0
    np.testing.assert_array_equal(unpack_state(g, 2, 1)[3], bf)


def test_a_rule_with_its_own_integrals_is_each_points() -> None:
    """The softmax normaliser's integrals of cluster 0 (``computes_moments``) at K = 4,
    point by point as its single point's map, the zero estimator's point by the identity
    prox."""
    mix = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=4)
    problems = curves._problems(mix, "cross-entropy", [(1e-2, 2.0), (1e-2, 3.0)], "l2", None)
    sym = problems[0].symmetry
    rule = NormaliserRule(4, fallback=ExchangeablePanels(4))
    maps = _maps(problems, rule, symmetry=sym)
    states = _states(maps)
    _assert_images_are_the_single_points(problems, rule, states=states, symmetry=sym)
    Q, M, V, b = unpack_state(states[1], 4, 3)
    at_zero = pack_state(np.zeros_like(Q), M, np.zeros_like(V), b)
    _assert_images_are_the_single_points(problems, rule, states=[states[0], at_zero], symmetry=sym)


def test_the_stacked_start_is_each_points_start_in_its_precision(monkeypatch) -> None:
    # a dense prior large enough for the single-precision start (the threshold lowered)
    monkeypatch.setattr(tolerances, "SINGLE_PHASE_MIN_N", 8)
    mix = _dense_mixture()
    problems = curves._problems(mix, "logistic", [(0.1, 0.5), (1.0, 2.0)], "l2", None)
    T = FixedPointMap(problems, channel_rule(problems[0], None))
    for xi, p in zip(T.split(T.start()), problems):
        np.testing.assert_array_equal(xi, start_state(p, None))


@pytest.mark.parametrize("kind", ["dense", "multi-output lasso"])
def test_the_prior_details_are_each_points(kind) -> None:
    if kind == "dense":
        problems = curves._problems(
            _dense_mixture(), "logistic", [(0.1, 0.5), (1.0, 2.0)], "l2", None
        )
        panels = None
    else:
        problems = curves._problems(MIX3, "cross-entropy", [(0.1, 1.0), (0.3, 2.0)], "l1", None)
        panels = 4
    rule = channel_rule(problems[0], None)
    maps = _maps(problems, rule, prior_panels=panels)
    states = _states(maps)
    T = FixedPointMap(problems, rule, prior_panels=panels)
    _, point_maps, memories = T.point_maps(T.stack(states))
    got = T.prior_details([m.ev for m in memories])
    for i, (Ti, xi) in enumerate(zip(maps, states)):
        want = Ti.prior_at(Ti.hats(xi))
        assert point_maps[i].prior_panels == panels
        for f in ("Q", "M", "V", "psi_w", "penalty", "l1_norm", "atom_nonzero"):
            np.testing.assert_array_equal(getattr(got[i], f), getattr(want, f))


@pytest.mark.parametrize(
    ("mixture", "loss", "penalty", "lam", "alpha"),
    [
        (gm.Mixture.isotropic(0.5, "antipodal", labels="binary"), "logistic", "l2", 0.1, 1.0),
        (gm.Mixture.sparse(0.1, 0.1, 1.0), "logistic", "l1", 0.1, 2.0),
        (MIX3, "cross-entropy", "l2", 1.0, 1.0),
        (MIX3, "square", "l2", 0.1, 2.0),
    ],
    ids=["binary logistic", "sparse lasso", "K = 3 cross-entropy", "K = 3 square"],
)
def test_a_one_point_map_iterates_as_the_single_points(mixture, loss, penalty, lam, alpha) -> None:
    """A stacked map of one point is the single point's map: the same iterates to the bit,
    hence the same fixed point in the same iterations (the solver's Anderson iteration,
    symmetry and chart as a solve takes them)."""
    from gaussmix.theory.solve.fixed_point import map_features
    from gaussmix.theory.solve.iteration import AndersonState, iterate
    from gaussmix.theory.solve.options import SolverOptions

    p = curves._problems(mixture, loss, [(lam, alpha)], penalty, None)[0]
    sym, log_chart = map_features(p, SolverOptions())
    rule = channel_rule(p, None)
    x0 = start_state(p, None)
    kw = dict(tol=1e-10, max_iter=300, damping=1.0)
    one = iterate(FixedPointMap(p, rule, symmetry=sym, log_chart=log_chart), x0,
                  AndersonState.init(6), **kw)  # fmt: skip
    T = FixedPointMap([p], rule, sym, log_chart)
    stacked = iterate(T, x0, T.anderson(6), **kw)
    assert one.converged and stacked.converged
    assert stacked.n_iter == one.n_iter
    np.testing.assert_array_equal(stacked.x, one.x)
    np.testing.assert_array_equal(T.start(), x0)


def test_the_sum_over_two_clusters_is_numpys() -> None:
    """A binary point's sums of its hats over the clusters (``_cluster_sum``) are numpy's
    reduction's, to the bit: signed zeros, infinities and NaN included."""
    from gaussmix.theory.solve.fixed_point import _cluster_sum

    rng = np.random.default_rng(3)
    scales = [0.0, -0.0, 1.0, 1e-300, 1e300, np.inf, -np.inf, np.nan]
    with np.errstate(invalid="ignore"):
        for _ in range(2000):
            L = int(rng.integers(1, 3))
            for shape in ((2, L, L), (2, L)):
                A = rng.normal(size=shape) * rng.choice(scales, shape)
                assert (_cluster_sum(A).view(np.int64) == A.sum(axis=0).view(np.int64)).all()
        A = rng.normal(size=(3, 2, 2))
        assert (_cluster_sum(A) == A.sum(axis=0)).all()
