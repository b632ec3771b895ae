"""What a curve pays once instead of at every point (issue 19, item 3): the points of a
curve are copies of its first problem (``Problem.with_lam_alpha``) that share its relabelling
symmetry, computed once, and are validated per point as ``make_problem`` validates them."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentError
from gaussmix.theory.api.api import make_problem
from gaussmix.theory.limits.separability import ZeroPenaltyError
from gaussmix.theory.problem.symmetry import ClusterSymmetry
from gaussmix.theory.solve.solver import solve_problem

MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
BINARY = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")


def test_the_cluster_symmetry_is_made_with_the_problem_and_shared_along_a_curve() -> None:
    first = make_problem(MIX3, "cross-entropy", lam=1.0, alpha=1.0)
    sym = first.symmetry
    fresh = ClusterSymmetry.of(first)
    assert sym is not None and np.array_equal(sym.R, fresh.R) and np.array_equal(sym.P, fresh.P)
    other = first.with_lam_alpha(1e-3, 4.0)
    assert other.symmetry is sym  # shared, not recomputed
    # it depends on neither lam nor alpha: a problem made at the other point has the same
    made = make_problem(MIX3, "cross-entropy", lam=1e-3, alpha=4.0).symmetry
    assert np.array_equal(made.R, sym.R)
    # and is made once for a mixture (remembered by its identity), anew for another one
    assert made is sym
    again = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    other_mix = make_problem(again, "cross-entropy", lam=1.0, alpha=1.0).symmetry
    assert other_mix is not sym and np.array_equal(other_mix.R, sym.R)
    assert not sym.P.flags.writeable and not sym.R.flags.writeable
    # no symmetry: two clusters, or a penalty other than ridge, or a loss not equivariant
    assert make_problem(BINARY, "logistic", lam=1.0, alpha=1.0).symmetry is None
    assert make_problem(MIX3, "square", lam=1.0, alpha=1.0, penalty="l1").symmetry is None
    assert make_problem(MIX3, "square", lam=1.0, alpha=1.0).symmetry is None
    # nothing is written on the frozen problem as it is solved
    before = dict(first.__dict__)
    gm.solve(MIX3, "cross-entropy", lam=1.0, alpha=1.0, estimate_error=False)
    solve_problem(first, estimate_error=False)
    assert first.__dict__.keys() == before.keys()


def test_the_points_of_a_curve_share_its_symmetry(monkeypatch) -> None:
    seen = []
    of = ClusterSymmetry.of_outputs
    monkeypatch.setattr(
        ClusterSymmetry, "of_outputs", classmethod(lambda cls, *a: seen.append(a) or of(*a))
    )
    gm.learning_curve(MIX3, "cross-entropy", [1.0, 1.5, 2.0], lam=1.0)
    assert len(seen) == 1  # made with the first problem, shared by the others


def test_a_curve_point_gives_the_single_point_of_its_problem() -> None:
    # the second point of the curve is built from the first's problem: same answer as a
    # curve started there (a single point solved with the curve's options)
    alphas = [1.0, 1.5]
    df = gm.learning_curve(MIX3, "cross-entropy", alphas, lam=1.0, estimate_error=False)
    single = gm.solve(MIX3, "cross-entropy", lam=1.0, alpha=1.5, estimate_error=False)
    assert df.points[1].params == single.params
    assert df.test_error.iloc[1] == pytest.approx(single.test_error, abs=1e-7)


@pytest.mark.parametrize(("penalty", "error"), [("l2", ZeroPenaltyError), ("l1", ArgumentError)])
def test_every_point_of_a_curve_is_validated(penalty, error) -> None:
    # lam = 0 is checked at its own point (the sweep's last: it runs from the largest lam)
    with pytest.raises(error, match="lam"):
        gm.lambda_sweep(BINARY, "logistic", [1.0, 0.0], alpha=0.5, penalty=penalty)
