"""A curve's stacked solve that stalls is given up within a few evaluations
(``continuation.STALL_EVALS``): the curve goes point by point at once, with the point-by-point
curve's answers, to the bit, after ``STALL_EVALS`` evaluations of the stacked map (counted
by the stall test itself, not timed)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import load_benchmark

import gaussmix as gm
from gaussmix.experiments import continuation, curves

cg = load_benchmark("_curve_grids")

#: the binary square lasso of the explorer's tail (BENCHMARKS.md): 40 alphas whose stacked
#: solve never converged (1982 evaluations seeded, as many plain), 194 point by point
MIX = gm.Mixture.isotropic(0.1169, "simplex", n_clusters=2, labels="binary", rho=[0.6358, 0.3642])
ALPHAS = np.geomspace(0.0622, 0.4152, 40)
KW = dict(lam=7.974e-4, penalty="l1", tol=1e-5, estimate_error=False)
COLUMNS = ["test_error", "train_error", "train_loss", "n_iter"]


def _curve(monkeypatch):
    """The curve, and the stacked map's evaluations that its stall tests saw (each
    ``_StallWatch``'s, one per stacked solve made)."""
    watches = []
    real = continuation._StallWatch.__init__

    def init(self, *args, **kwargs):
        real(self, *args, **kwargs)
        watches.append(self)

    with monkeypatch.context() as m:
        m.setattr(continuation._StallWatch, "__init__", init)
        table = gm.learning_curve(MIX, "square", ALPHAS, **KW)
    return table, [len(w.medians) for w in watches]


@pytest.mark.parametrize("stall", [continuation.STALL_EVALS, 40])
def test_a_stalled_stacked_solve_goes_point_by_point_within_a_few_evaluations(stall, monkeypatch):
    """The stacked solve is given up at its ``STALL_EVALS``-th evaluation (the library's,
    and a later one: the test, not the end of the iteration, gives it up), and not made
    again; the curve is then the point-by-point curve, to the bit."""
    with monkeypatch.context() as m:  # the point-by-point curve alone
        m.setattr(curves, "stacked_curve_options", lambda *a: None)
        alone, none = _curve(m)
    assert none == []
    monkeypatch.setattr(continuation, "STALL_EVALS", stall)
    table, seen = _curve(monkeypatch)
    assert table.converged.all()
    np.testing.assert_array_equal(table[COLUMNS], alone[COLUMNS])
    assert seen == [stall]  # one stacked solve, given up at its stall-th evaluation


@pytest.mark.parametrize("name", ["sparse lasso (paper)", "lasso-lambda", "ce3-lambda"])
def test_a_converging_stacked_solve_is_not_given_up(name, monkeypatch):
    """Curves whose stacked solve converges (the paper's sparse lasso: its largest residual
    rises 10-fold over its first 18 evaluations) are solved stacked as before."""
    grid = next(g for g in cg.EXAMPLES if g.name == name)
    calls = []
    real = continuation._StallWatch.__call__

    def spy(self, s):
        out = real(self, s)
        calls.append(self.medians[-1] if self.medians else None)
        return out

    monkeypatch.setattr(continuation._StallWatch, "__call__", spy)
    with monkeypatch.context() as m:
        m.setattr(curves, "_solve_cold", _no_point_by_point)
        table = cg.curve(grid)
    assert table.converged.all() and calls  # watched, stacked, never given up


def _no_point_by_point(*args, **kwargs):
    raise AssertionError("the curve went point by point")


def test_a_stacked_solve_whose_median_rises_first_is_not_given_up(monkeypatch):
    """The binary hinge lasso of the explorer's seed-1 draws with priors 0.05 and 0.95: its
    median own residual rises 60-fold over its first evaluations (4 -> 240), falls below
    the first's by the 6th and converges after about 80: solved stacked, as before."""
    from gaussmix.explore import ExplorerState
    from gaussmix.explore.state import setup

    state = ExplorerState.from_query(
        "delta=0.1286&rho=0.0537,0.9463&means=gaussian&loss=hinge&penalty=l1&lam=0.03385"
        "&alpha_min=0.273&alpha_max=9.6473"
    )
    point, values = setup(state)
    monkeypatch.setattr(curves, "_solve_cold", _no_point_by_point)
    table = gm.learning_curve(
        point.mixture, point.loss, values, lam=point.lam, **point.penalty_kw, **point.solve_kw
    )
    assert len(table) == 40 and table.converged.all()
