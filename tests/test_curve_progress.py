"""The progress of a curve solved as one stacked state (:mod:`gaussmix.theory.solve.batch`):
its bar advances as the points converge, by a hook that leaves the iterates as they were."""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest
from _cli_helpers import _Terminal

import gaussmix as gm
from gaussmix.core import progress as progress_module
from gaussmix.experiments import continuation, curves
from gaussmix.theory.solve.options import solver_options

BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
#: a curve over alpha whose points converge after different numbers of evaluations
GRID = np.geomspace(0.2, 8.0, 12)


@pytest.fixture
def hooks(monkeypatch) -> list:
    """The progress hook the curve gave each stacked solve (None: no hook)."""
    given: list = []
    solve = continuation.solve_points

    def spy(problems, opts, **kw):
        given.append(kw.get("on_converged"))
        return solve(problems, opts, **kw)

    monkeypatch.setattr(curves, "solve_points", spy)
    return given


def _problems(grid: np.ndarray = GRID, lam: float = 0.1) -> list:
    return curves._problems(BINARY, "logistic", [(lam, float(a)) for a in grid], "l2", None)


def test_the_hook_counts_the_points_converged_after_each_evaluation() -> None:
    """After the stacked map's e-th evaluation, the points converged are those whose own
    iteration count (a stacked point's is its single point's) is at most e; and the hook
    does not change a bit of the results."""
    # no point in the sharp regime, no error estimate: a point's n_iter is the first solve's
    grid = np.geomspace(0.2, 6.0, 12)
    opts = solver_options(None, {"estimate_error": False})
    counts: list[int] = []
    results = continuation.solve_points(_problems(grid), opts, on_converged=counts.append)
    plain = continuation.solve_points(_problems(grid), opts)
    assert results is not None and plain is not None
    assert len({r.params["quadrature"] for r in results}) == 1
    n_iter = np.array([r.n_iter for r in results])
    assert len(set(n_iter.tolist())) >= 3  # the points converge at different evaluations
    assert counts == [int((n_iter <= e).sum()) for e in range(1, len(counts) + 1)]
    assert counts[-1] == len(grid) and len(counts) == n_iter.max()
    for r, p in zip(results, plain):
        np.testing.assert_equal(r.summary(), p.summary())  # NaN where NaN
        assert np.array_equal(r.state.x, p.state.x)


def test_a_stacked_learning_curve_draws_a_bar_that_advances(monkeypatch, hooks) -> None:
    """On a terminal the stacked curve's bar shows the points converged as they do
    (every refresh drawn here), up to all of them; the table is the one without a bar."""
    frames = _Terminal()
    real = progress_module.progress_bar

    def every_refresh(*args, **kwargs):
        return real(*args, file=frames, mininterval=0, miniters=1, **kwargs)

    monkeypatch.setattr(curves, "progress_bar", every_refresh)
    df = gm.learning_curve(BINARY, "logistic", GRID, lam=1e-3, progress=True)
    shown = [int(n) for n in re.findall(r"alpha:[^\r\n]*?\b(\d+)/12\b", frames.getvalue())]
    assert hooks and hooks[0] is not None
    assert shown[0] == 0 and shown[-1] == 12
    assert shown == sorted(shown) and len(set(shown)) >= 4  # drawn as the points converge
    # not drawn (not a terminal, or not asked for): no hook, the same table
    monkeypatch.setattr(curves, "progress_bar", real)
    quiet = gm.learning_curve(BINARY, "logistic", GRID, lam=1e-3, progress=True)
    assert hooks[-1] is None
    keys = ["test_error", "train_error", "train_loss", "n_iter"]
    assert df[keys].equals(quiet[keys])


@pytest.mark.parametrize("progress", [False, True])
def test_a_lambda_sweep_passes_the_hook_only_to_a_drawn_bar(hooks, progress) -> None:
    err = _Terminal()
    with contextlib.redirect_stderr(err):
        df = gm.lambda_sweep(BINARY, "logistic", np.geomspace(1e-2, 1.0, 12), alpha=1.0,
                             progress=progress)  # fmt: skip
    assert df.converged.all() and len(hooks) == 1
    assert (hooks[0] is not None) == progress
    assert ("/12" in err.getvalue()) == progress


def test_the_hook_of_a_three_class_curve_counts_up_to_every_point() -> None:
    """Two outputs (K = 3 cross-entropy, continued from a coarser rule): the hook counts the
    solve on the curve's rule, from its first evaluation to every point converged, and does
    not change a bit of the results."""
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    grid = np.geomspace(0.3, 4.0, 12)
    problems = curves._problems(mix, "cross-entropy", [(1.0, float(a)) for a in grid], "l2", None)
    opts = solver_options(None, {})
    counts: list[int] = []
    results = continuation.solve_points(problems, opts, on_converged=counts.append)
    plain = continuation.solve_points(problems, opts)
    assert results is not None and plain is not None
    assert counts and counts == sorted(counts) and counts[-1] == len(grid)
    for r, p in zip(results, plain):
        np.testing.assert_equal(r.summary(), p.summary())
        assert np.array_equal(r.state.x, p.state.x)
