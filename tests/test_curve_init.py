"""A curve's warm start (``init=`` of ``gm.learning_curve`` and ``gm.lambda_sweep``): the
fixed point of a previous curve nearest to the new curve's first point starts it; the
answers are the same fixed points as the curve solved cold, in fewer evaluations.

The curves here have fewer than 10 points (``STACKED_MIN_POINTS``), so they are solved
point by point, where ``init`` acts.  The answers are compared with the curve solved to a
tolerance 1e5 times tighter (the fixed point to within rounding): the warm curve must be
within ``ERROR_BOUND`` of it, as the cold curve is (measured: both within 1e-9 at
``tol = 1e-8``, the solver's default).
"""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentTypeError
from gaussmix.theory.solve.options import SolverOptions

#: the solver's default fixed-point tolerance
TOL = SolverOptions().tol
#: a curve's observables within this of the fixed point (a curve solved to ``TOL``: its
#: state within ``TOL / (1 - r)`` of the fixed point, r the map's contraction, and the
#: errors Lipschitz in the state; measured: at most 1e-9 here, cold or warm)
ERROR_BOUND = 100 * TOL
COLUMNS = ["test_error", "train_error", "train_loss"]

#: the binary square lasso of the explorer's tail (BENCHMARKS.md): its first point at
#: lam = 8e-4 takes 115 iterations cold
MIX = gm.Mixture.isotropic(0.1169, "simplex", n_clusters=2, labels="binary", rho=[0.6358, 0.3642])
ALPHAS = [0.0622, 0.1, 0.2, 0.4152]
LAM = 7.974e-4
KW = dict(penalty="l1")


def _close_to_fixed_point(table, reference) -> None:
    for col in COLUMNS:
        np.testing.assert_allclose(table[col], reference[col], rtol=0, atol=ERROR_BOUND)


@pytest.fixture(scope="module")
def previous():
    """The curve before the lambda slider moved half a decade."""
    return gm.learning_curve(MIX, "square", ALPHAS, lam=LAM * 10**0.5, **KW)


@pytest.fixture(scope="module")
def cold():
    return gm.learning_curve(MIX, "square", ALPHAS, lam=LAM, **KW)


@pytest.fixture(scope="module")
def reference():
    return gm.learning_curve(MIX, "square", ALPHAS, lam=LAM, tol=TOL * 1e-5, **KW)


def test_a_curve_started_from_the_previous_curve_is_the_cold_curve_in_fewer_evaluations(
    previous, cold, reference
):
    warm = gm.learning_curve(MIX, "square", ALPHAS, lam=LAM, init=previous, **KW)
    assert warm.converged.all() and cold.converged.all()
    _close_to_fixed_point(cold, reference)
    _close_to_fixed_point(warm, reference)
    # the first point from its neighbour's fixed point: 115 -> 18 iterations
    assert warm.n_iter.iloc[0] < cold.n_iter.iloc[0] / 4
    assert warm.n_iter.sum() < cold.n_iter.sum()


def test_the_nearest_point_of_init_starts_the_curve(previous):
    """One result, or a list of results (None entries skipped), is an ``init`` too; the
    nearest of them in (log lam, log alpha) is the one used: the same table as with that
    result alone, to the bit."""
    first = previous.points[0]
    alone = gm.learning_curve(MIX, "square", ALPHAS, lam=LAM, init=first, **KW)
    listed = gm.learning_curve(
        MIX, "square", ALPHAS, lam=LAM, init=[None, previous.points[-1], first], **KW
    )
    whole = gm.learning_curve(MIX, "square", ALPHAS, lam=LAM, init=previous, **KW)
    cols = [*COLUMNS, "n_iter"]
    np.testing.assert_array_equal(alone[cols], listed[cols])
    np.testing.assert_array_equal(alone[cols], whole[cols])
    # the far end of the previous curve is not where the new curve starts
    far = gm.learning_curve(MIX, "square", ALPHAS, lam=LAM, init=previous.points[-1], **KW)
    assert far.n_iter.iloc[0] != alone.n_iter.iloc[0]


def test_a_lambda_sweep_starts_from_the_point_nearest_its_largest_lambda():
    lams = [1e-3, 3e-3, 1e-2]
    prev = gm.lambda_sweep(MIX, "square", [x * 10**-0.5 for x in lams], alpha=0.0622, **KW)
    cold = gm.lambda_sweep(MIX, "square", lams, alpha=0.0622, **KW)
    warm = gm.lambda_sweep(MIX, "square", lams, alpha=0.0622, init=prev, **KW)
    ref = gm.lambda_sweep(MIX, "square", lams, alpha=0.0622, tol=TOL * 1e-5, **KW)
    _close_to_fixed_point(cold, ref)
    _close_to_fixed_point(warm, ref)
    # the sweep's first point is its largest lambda (the table in the order asked for)
    assert warm.n_iter.iloc[-1] < cold.n_iter.iloc[-1]


def test_an_init_of_another_shape_is_the_cold_start(cold):
    """A curve of K = 3 clusters offers no state of a binary problem: the curve is the cold
    one, to the bit."""
    three = gm.learning_curve(
        gm.Mixture.isotropic(0.5, "simplex", n_clusters=3), "square", [1.0, 2.0], lam=0.1
    )
    warm = gm.learning_curve(MIX, "square", ALPHAS, lam=LAM, init=three, **KW)
    np.testing.assert_array_equal(warm[[*COLUMNS, "n_iter"]], cold[[*COLUMNS, "n_iter"]])


def test_a_stacked_curve_starts_cold_whatever_its_init(previous):
    """A curve of 10 points or more of one output is solved at all its points at once,
    from the cold start (documented): ``init`` changes nothing there."""
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    alphas = np.geomspace(0.2, 4.0, 12)
    prev = gm.learning_curve(mix, "logistic", alphas, lam=0.3)
    cold = gm.learning_curve(mix, "logistic", alphas, lam=0.1)
    warm = gm.learning_curve(mix, "logistic", alphas, lam=0.1, init=prev)
    np.testing.assert_array_equal(warm[[*COLUMNS, "n_iter"]], cold[[*COLUMNS, "n_iter"]])


@pytest.mark.parametrize("bad", [3.0, "curve", [1.0], {"Q": 1}])
def test_an_init_that_is_not_a_result_is_refused_naming_init(bad):
    with pytest.raises(ArgumentTypeError, match="init"):
        gm.learning_curve(MIX, "square", ALPHAS, lam=LAM, init=bad, **KW)
