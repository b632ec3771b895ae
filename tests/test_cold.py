"""Every valid problem converges cold (issue 31 item 3): seeded random problems over every
registered mixture model, loss and penalty (``tests/_random_problems.py``), each solved by
``gm.solve`` with the default options, must succeed (converged, finite observables) within
:data:`SECONDS` of CPU time; the ten slowest are printed (``-s``).

* by default (``slow``, in CI): the 898 of the 1,000 problems of seed 0 whose prior is not
  the multi-output lasso's (2 to 3 minutes of CPU in all, measured 155 s on a loaded
  2-core machine), with the :data:`KNOWN_FAILURES` (three hinge problems with a sparse
  penalty) and :data:`KNOWN_SLOW` (one) named with their reasons;
* ``-m long``: all 1,000 (``python -m pytest -m long tests/test_cold.py -s``).  It does not
  pass: of the 102 multi-output lasso problems (K = 3, 4 one-hot labels) the first 36
  measured: 28 within :data:`SECONDS` (24 of the 25 with K = 3), one in 10.7 s, seven with
  K = 4 stopped at 12 s of CPU (``benchmarks/bench_cold.py``, ``BENCHMARKS.md``).

And the solver's own fallback (``SolverOptions.fallback``): where the iteration from the cold
start fails, the homotopy in ``lam`` finds the fixed point that the curve machinery finds
(``learning_curve``'s continuation), and says so.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _random_problems import Outcome, quick_subset, random_problems, run

import gaussmix as gm
from gaussmix.core.exceptions import ArgumentError

#: the limit of one cold solve, in seconds of CPU time (of this process: the machine's load
#: from other processes does not count)
SECONDS = 10.0
#: the number of problems of seed 0 drawn (the default test runs those without a
#: multi-output lasso prior, the long one all)
LONG = 1000


#: the problems of seed 0 that do not meet the test yet, measured, with the reason: each
#: must still fail (when one succeeds, remove it here), every other must succeed.  All three
#: are the hinge loss with a sparse penalty at lam ~ 1 to 3, where the loss has no curvature
#: around W* ~ 0 (no margin near 1); whether a fixed point exists there is open
KNOWN_FAILURES = {
    533: "hinge, elastic net (l1_ratio 0.62) at lam = 2.9, unbalanced classes (0.40, "
    "0.60): the bias step diverges (b ~ -1e27, 'degenerate fixed point'), cold and along "
    "the homotopy (12 s CPU in all)",
    669: "hinge, lasso at lam = 2.8, K = 4 clusters, alpha = 0.12: 'the lasso's weights "
    "are unbounded at this state' (P(|B| > t) = 5e-26 with no curvature) from the first "
    "iterate, cold and along the homotopy",
    849: "hinge, lasso at lam = 1.03, sparse mixture, alpha = 0.19: unbounded weights "
    "(P(|B| > t) = 0.002 with no curvature) from the first iterate; warm starts in lam "
    "from 0.1 reach lam = 0.67 (nonzero fraction 0.02) and fail at 0.83",
}
#: ... and those that succeed beyond :data:`SECONDS`, with the reason (not timed)
KNOWN_SLOW = {
    159: "K = 4 cross-entropy of clusters that are not exchangeable at lam = 0.012: 368 "
    "iterations of the three-dimensional tensor rule (14 to 16 s CPU)",
}


def _check(outcomes: list[Outcome]) -> None:
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
    failed = [o.describe() for o in outcomes if not o.success and o not in known]
    assert not failed, f"{len(failed)} of {len(outcomes)} failed:\n" + "\n".join(failed)
    fixed = [o.describe() for o in known if o.success]
    assert not fixed, "known failures that succeed now (remove them):\n" + "\n".join(fixed)
    late = [
        o.describe()
        for o in outcomes
        if o.success and o.cpu_seconds > SECONDS and o.problem.index not in KNOWN_SLOW
    ]
    assert not late, f"{len(late)} took more than {SECONDS:g} s CPU:\n" + "\n".join(late)


@pytest.mark.long
def test_every_random_problem_converges_cold():
    _check([run(p) for p in random_problems(LONG, seed=0)])


@pytest.mark.slow
def test_random_problems_without_multi_output_lasso_converge_cold():
    problems = quick_subset(LONG, seed=0, size=LONG)
    assert len(problems) == 898
    assert {p.model for p in problems} == set(gm.MIXTURE_MODELS.names())
    assert {p.loss for p in problems} == set(gm.LOSSES.names())
    assert {p.penalty for p in problems} == set(gm.PENALTIES.names())
    _check([run(p) for p in problems])


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
    assert res.n_iter > 3000  # the failed cold solve's iterations count
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
