"""Bad input fails at the door with a message naming the argument (API); fuzzed with
hypothesis so that no input produces a traceback from deep inside numpy or a wrong number."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gaussmix as gm

BIN = dict(means="antipodal", labels="binary")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(delta=-0.5, **BIN), "delta"),
        (dict(delta=float("nan"), **BIN), "delta"),
        (dict(delta=float("inf"), **BIN), "delta"),
        (dict(delta=[0.5, -1.0], **BIN), "delta"),
        (dict(delta=0.5, rho=[0.5, 0.6], **BIN), "rho"),
        (dict(delta=0.5, rho=[1.2, -0.2], **BIN), "rho"),
        (dict(delta=0.5, rho=[0.2, 0.3, 0.5], **BIN), "antipodal|disagree|rho"),
        (dict(delta=[0.5, 0.5, 0.5], **BIN), "antipodal|disagree|delta"),
        (dict(delta=0.5, means="pentagon", n_clusters=3), "means"),
        (dict(delta=0.5, means="antipodal", n_clusters=3), "antipodal"),
        (dict(delta=0.5, means=np.eye(3), n_clusters=2), "disagree|means"),
        (dict(delta=0.5, means=[[1.0, 2.0], [2.0, 1.0]], labels="binary"), "semi-definite"),
        (dict(delta=0.5, labels="binary", n_clusters=3), "binary"),
        (dict(delta=0.5, labels="twohot", n_clusters=3), "labels"),
        (dict(delta=0.5, n_clusters=1), "n_clusters"),
    ],
)
def test_mixture_rejects_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        gm.Mixture.isotropic(**kwargs)


def test_block_rejects_bad_input():
    with pytest.raises(ValueError, match="fractions"):
        gm.Mixture.block([0.5, 0.6], [1.0, 2.0])
    with pytest.raises(ValueError, match="deltas"):
        gm.Mixture.block([0.5, 0.5], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="deltas"):
        gm.Mixture.block([0.5, 0.5], [1.0, -2.0])


MIX2 = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)


@pytest.mark.parametrize(
    "mix,kwargs,match",
    [
        (MIX2, dict(loss="logistic", lam=0.1, alpha=0.0), "alpha"),
        (MIX2, dict(loss="logistic", lam=0.1, alpha=-1.0), "alpha"),
        (MIX2, dict(loss="logistic", lam=-0.1, alpha=1.0), "lam"),
        (MIX2, dict(loss="logistic", lam=float("nan"), alpha=1.0), "lam"),
        (MIX2, dict(loss="logistic", lam=0.0, alpha=1.0), "lam 0 is"),
        (MIX2, dict(loss="hinge", lam=0.0, alpha=3.0), "lam 0 is"),
        (MIX2, dict(loss="square", lam=0.0, alpha=0.5), "lam 0 is"),
        (MIX3, dict(loss="logistic", lam=0.1, alpha=1.0), "binary labels"),
        (MIX3, dict(loss="hinge", lam=0.1, alpha=1.0), "binary labels"),
        (MIX2, dict(loss="cross-entropy", lam=0.1, alpha=1.0), "one-hot"),
        (MIX2, dict(loss="exponential", lam=0.1, alpha=1.0), "loss"),
        (MIX2, dict(loss="logistic", lam=0.1, alpha=1.0, penalty="l3"), "penalty"),
        (MIX2, dict(loss="logistic", lam="0.1", alpha=1.0), "lam"),
        (MIX2, dict(loss="logistic", lam=0.1, alpha=1.0, tol=0.0), "tol"),
        (MIX2, dict(loss="logistic", lam=0.1, alpha=1.0, max_iter=1e4), "max_iter"),
        (MIX2, dict(loss="logistic", lam=0.1, alpha=1.0, quadrature=gm.GaussHermite(8, 2)), "dim"),
        ("mix", dict(loss="logistic", lam=0.1, alpha=1.0), "Mixture"),
    ],
)
def test_solve_rejects_bad_input(mix, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        gm.solve(mix, **kwargs)


def test_square_loss_at_lambda_zero_is_allowed_above_alpha_one():
    r = gm.solve(MIX2, "square", lam=0.0, alpha=3.0)
    assert r.success and 0 < r.test_error < 0.5


finite = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    delta=st.one_of(finite, st.lists(finite, min_size=1, max_size=4)),
    rho=st.one_of(st.none(), st.lists(finite, min_size=1, max_size=4)),
    lam=st.one_of(finite, st.integers(-3, 3), st.text(max_size=3)),
    alpha=st.one_of(finite, st.integers(-3, 3)),
    loss=st.sampled_from(["square", "logistic", "cross-entropy", "hinge", "bogus"]),
    labels=st.sampled_from(["onehot", "binary", "x"]),
    means=st.sampled_from(["simplex", "gaussian", "antipodal", "y"]),
    k=st.integers(-1, 4),
)
def test_fuzz_api_either_clear_error_or_valid_result(
    delta, rho, lam, alpha, loss, labels, means, k
):
    try:
        mix = gm.Mixture.isotropic(delta, means, n_clusters=k, rho=rho, labels=labels)
        res = gm.solve(mix, loss, lam=lam, alpha=alpha, max_iter=500)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        assert msg and "\n" not in msg
        names = (
            "delta",
            "rho",
            "lam",
            "alpha",
            "loss",
            "labels",
            "means",
            "n_clusters",
            "cluster",
            "disagree",
            "mixture",
            "penalty",
        )
        assert any(n in msg for n in names), msg
        return
    except gm.ConvergenceError as exc:
        assert exc.result is not None and not exc.result.success
        return
    assert res.success
    for key in ("test_error", "train_error"):
        v = getattr(res, key)
        assert math.isfinite(v) and -1e-12 <= v <= 1 + 1e-12
    assert math.isfinite(res.train_loss) and res.train_loss >= 0


def test_check_real_fast_path_keeps_every_check():
    from gaussmix.core.validation import check_real

    assert check_real("lam", 0.5, low=0.0) == 0.5
    assert check_real("lam", np.float32(0.5), low=0.0) == 0.5
    assert check_real("lam", 2, low=0.0) == 2.0 and isinstance(check_real("x", 2), float)
    for bad, err in [(math.nan, ValueError), (math.inf, ValueError), (-0.5, ValueError),
                     (True, TypeError), ("0.5", TypeError), (None, TypeError)]:  # fmt: skip
        with pytest.raises(err, match="lam"):
            check_real("lam", bad, low=0.0, high=10.0)
    with pytest.raises(ValueError, match="lam must be <= 10"):
        check_real("lam", 11.0, low=0.0, high=10.0)


def test_problem_at_another_lam_alpha_equals_replace():
    import dataclasses

    from gaussmix.theory.api.api import make_problem

    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    p = make_problem(mix, "logistic", lam=0.1, alpha=1.0, penalty="elastic-net", l1_ratio=0.3)
    q = p.with_lam_alpha(0.7, 2.5)
    r = dataclasses.replace(p, lam=0.7, alpha=2.5)
    assert (p.lam, p.alpha) == (0.1, 1.0)  # the original is untouched
    for f in dataclasses.fields(p):
        a, b = getattr(q, f.name), getattr(r, f.name)
        assert a is b or np.array_equal(a, b) or a == b, f.name
    assert type(q) is type(p) and vars(q).keys() == vars(r).keys()
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.lam = 1.0


def test_output_space_is_built_once_per_label_map_and_read_only():
    from gaussmix.theory.api.api import make_problem
    from gaussmix.theory.model.labels import LabelMap
    from gaussmix.theory.problem.problem import _output_space

    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    p1 = make_problem(mix, "cross-entropy", lam=0.1, alpha=1.0)
    p2 = make_problem(mix, "cross-entropy", lam=1.0, alpha=2.0)
    sq = make_problem(mix, "square", lam=1.0, alpha=2.0, penalty="l1")
    ridge = make_problem(mix, "square", lam=1.0, alpha=2.0)
    assert p1.P is p2.P and p1.constraints is p2.constraints  # shared, not rebuilt
    assert sq.P.shape == (3, 3) and p1.P.shape == (2, 3)  # the reduced space is another entry
    # the square loss with the ridge on one-hot labels: the cross-entropy's reduced space
    assert ridge.P is p1.P and ridge.constraints is p1.constraints
    np.testing.assert_array_equal(ridge.loss.offset, np.full(3, 1.0 / 3.0))
    with pytest.raises(ValueError, match="read-only"):
        p1.constraints[0][0][0, 0] = 1.0
    # the same rule as a fresh label map with the same labels (nearest label vector)
    P, cons = _output_space(LabelMap(np.eye(3)), True)
    np.testing.assert_array_equal(P, p1.P)
    for (D, t), (D1, t1) in zip(cons, p1.constraints):
        np.testing.assert_array_equal(D, D1)
        np.testing.assert_array_equal(t, t1)
    # the binary flag is computed once, with the same answer as the definition
    for labels, expected in [([[1.0], [-1.0]], True), ([[1.0], [0.0]], False),
                             ([[1.0], [-1.0], [1.0]], True), (np.eye(2), False)]:  # fmt: skip
        assert LabelMap(np.asarray(labels)).is_binary is expected


def test_interval_constraints_check_and_describe_their_bounds():
    """The declarative bounds of core.validation: every closure, both kinds, one message."""
    from numbers import Integral, Real

    from gaussmix.core.validation import Interval, JobCount

    cases = {"both": (True, True), "left": (True, False), "right": (False, True)}
    cases["neither"] = (False, False)
    for closed, (has_low, has_high) in cases.items():
        rule = Interval(Real, 0.0, 1.0, closed=closed)
        assert rule.contains(0.0) is has_low and rule.contains(1.0) is has_high
        assert rule.contains(0.5) and not rule.contains(-1e-300) and not rule.contains(1.5)
        left, right = "[" if has_low else "(", "]" if has_high else ")"
        assert str(rule) == f"a real number in {left}0, 1{right}"
        bad = 0.0 if not has_low else 2.0
        with pytest.raises(ValueError, match=re.escape(f"x must be {rule}, got {bad:g}")):
            rule.check("x", bad)
    # integers: open ends are the next integers; floats and bools are refused by type
    ints = Interval(Integral, 2, 5, closed="neither")
    assert [ints.check("k", k) for k in (3, np.int64(4))] == [3, 4]
    assert type(ints.check("k", np.int64(4))) is int
    for k in (2, 5):
        with pytest.raises(ValueError, match=r"k must be an integer in \(2, 5\), got"):
            ints.check("k", k)
    for k in (3.0, True):
        with pytest.raises(TypeError, match=r"k must be an integer in \(2, 5\)"):
            ints.check("k", k)
    half = Interval(Real, None, 0.0, closed="left")
    assert str(half) == "a real number < 0" and half.check("x", np.float32(-2)) == -2.0
    assert str(Interval(Real, None, None)) == "a real number"
    assert Interval(Real, 0.0, None).check("x", 1e300) == 1e300
    with pytest.raises(ValueError, match=r"x must be a real number >= 0, got inf"):
        Interval(Real, 0.0, None).check("x", float("inf"))
    with pytest.raises(ValueError, match="closed must be one of"):
        Interval(Real, 0.0, 1.0, closed="open")
    assert [JobCount().check("n_jobs", j) for j in (1, -1, -2, 8)] == [1, -1, -2, 8]
