"""Finite-size separability check (gaussmix.simulate.separability): certificates, Cover's
exact count, the logistic-certificate path against the LP, and the 50 % crossing."""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import gaussmix as gm
from gaussmix.simulate import (
    LPError,
    draw_dataset,
    lp_crossing,
    separability_fraction,
    separating_hyperplane,
)


def _cover(n: int, d: int) -> float:
    """Cover (1965): P[n points in general position in R^d with i.i.d. fair labels are
    separable by an affine hyperplane] = 2^(1-n) sum_{k<=d} C(n-1, k)."""
    return sum(comb(n - 1, k) for k in range(d + 1)) / 2 ** (n - 1)


def _margins(X, cls, W, b):
    s = X @ W.T + b
    own = s[np.arange(len(cls)), cls]
    s[np.arange(len(cls)), cls] = -np.inf
    return own - s.max(axis=1)


NO_SIGNAL = gm.Mixture.isotropic(1.0, np.zeros((2, 2)), labels="binary")
THREE = gm.Mixture.isotropic(0.5, "gaussian", n_clusters=3)


@pytest.mark.parametrize("method", ["certificate", "lp"])
@pytest.mark.parametrize("mixture,alpha", [(THREE, 1.0), (NO_SIGNAL, 1.2)])
def test_a_separable_sample_comes_with_a_verified_certificate(mixture, alpha, method):
    rng = np.random.default_rng(1)
    X, cls = draw_dataset(mixture, int(alpha * 40), 40, rng)
    k = mixture.labels.classes.shape[0]
    W, b = separating_hyperplane(X, cls, k, method=method)
    assert W.shape == (k, 40) and b.shape == (k,)
    assert np.all(W[-1] == 0) and b[-1] == 0  # the gauge
    assert _margins(X, cls, W, b).min() >= 1 - 1e-6


@pytest.mark.parametrize("method", ["certificate", "lp"])
def test_non_separable_samples_are_detected(method):
    # the same point with two labels; and XOR in the plane
    X = np.array([[0.3, -1.0], [0.3, -1.0], [2.0, 0.5]])
    assert separating_hyperplane(X, np.array([0, 1, 0]), method=method) is None
    xor = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    assert separating_hyperplane(xor, np.array([0, 0, 1, 1]), method=method) is None
    three = np.array([[0.0], [1.0], [2.0]])  # the middle class cannot win on a line...
    assert separating_hyperplane(three, np.array([0, 1, 0]), 2, method=method) is None
    W, b = separating_hyperplane(three, np.array([0, 1, 2]), method=method)  # ...with 3 it can
    assert _margins(three, np.array([0, 1, 2]), W, b).min() >= 1 - 1e-6


@pytest.mark.parametrize(
    "mixture,d,alphas", [(NO_SIGNAL, 16, (1.5, 2.0, 2.6)), (THREE, 12, (3.0, 4.5))]
)
def test_the_logistic_certificates_agree_with_the_lp(mixture, d, alphas):
    k = mixture.labels.classes.shape[0]
    decided = []
    for a in alphas:
        for r in range(15):
            X, cls = draw_dataset(mixture, int(a * d), d, np.random.default_rng(r))
            auto = separating_hyperplane(X, cls, k)
            lp = separating_hyperplane(X, cls, k, method="lp")
            assert (auto is None) == (lp is None), (a, r)
            decided.append(auto is None)
    assert 0 < sum(decided) < len(decided)  # both answers occur


def test_cover_count_without_signal():
    """No signal, i.i.d. fair labels: the fraction is Cover's exact function (any d)."""
    d, n_datasets = 8, 80
    alphas = [1.5, 2.25, 3.0]
    table = separability_fraction(
        NO_SIGNAL, alphas, d=d, seeds=n_datasets, seed=4, counts="random"
    )
    for row in table.itertuples():
        p = _cover(row.n, d)
        se = np.sqrt(p * (1 - p) / n_datasets)
        assert abs(row.fraction - p) <= 4 * se + 1e-12, (row.alpha, row.fraction, p)


def test_table_is_reproducible_and_decreases_with_alpha():
    kw = {"d": 12, "seeds": 6, "seed": 2}
    t1 = separability_fraction(THREE, [1.0, 3.0, 5.0, 8.0], **kw)
    t2 = separability_fraction(THREE, [1.0, 3.0, 5.0, 8.0], **kw)
    pd.testing.assert_frame_equal(t1, t2)
    assert list(t1.columns) == [
        "alpha", "d", "n", "fraction", "se", "n_separable", "seeds", "seed"
    ]  # fmt: skip
    f = t1["fraction"].to_numpy()
    assert f[0] == 1.0 and f[-1] == 0.0 and np.all(np.diff(f) <= 0)
    assert t1["n"].tolist() == [12, 36, 60, 96]
    np.testing.assert_allclose(t1["se"], np.sqrt(f * (1 - f) / 6))


def test_lp_crossing_recovers_a_logistic_curve():
    alphas = np.linspace(1.5, 2.5, 11)
    n_data = 10_000
    p = expit(-(alphas - 2.03) / 0.08)
    table = pd.DataFrame(
        {"alpha": alphas, "d": 100, "n_separable": np.round(p * n_data), "seeds": n_data}
    )
    a50, se = lp_crossing(table)
    assert 0 < se < 5e-3 and abs(a50 - 2.03) < 3 * se + 1e-4
    # a perfect step: the midpoint, with the standard deviation of a uniform law on it
    step = pd.DataFrame({"alpha": [1.0, 2.0, 3.0], "d": 50, "n_separable": [5, 5, 0],
                         "seeds": 5})  # fmt: skip
    assert lp_crossing(step) == pytest.approx((2.5, 1 / np.sqrt(12)))
    # one informative alpha: the error is at least the bracket's, not the Fisher one
    one = pd.DataFrame({"alpha": [3.6, 3.9, 4.2, 4.5], "d": 400, "n_separable": [6, 6, 3, 0],
                        "seeds": 6})  # fmt: skip
    a50, se = lp_crossing(one)
    assert abs(a50 - 4.2) < 1e-6 and se >= 0.6 / np.sqrt(12) - 1e-12
    with pytest.raises(ValueError, match="d must be given"):
        lp_crossing(pd.concat([table, step]))
    assert lp_crossing(pd.concat([table, step]), d=50)[0] == 2.5
    with pytest.raises(ValueError, match="does not cross 1/2"):
        lp_crossing(step.assign(n_separable=[5, 5, 4]))


def test_highs_failures_are_errors(monkeypatch):
    from gaussmix.simulate import separability as sep

    class Failed:
        status, message, x = 4, "numerical difficulties", None

    monkeypatch.setattr(sep, "linprog", lambda *a, **k: Failed())
    X = np.array([[0.0], [1.0], [2.0]])
    with pytest.raises(LPError, match="highs: status 4.*highs-ipm: status 4"):
        separating_hyperplane(X, np.array([0, 1, 0]), method="lp")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="alphas must"):
        separability_fraction(THREE, [-1.0], d=10, seeds=1)
    with pytest.raises(ValueError, match="d must be >= the number of clusters"):
        separability_fraction(THREE, [1.0], d=2, seeds=1)
    with pytest.raises(ValueError, match="seeds must be an integer >= 1, got 0"):
        separability_fraction(THREE, [1.0], d=10, seeds=0)
    with pytest.raises(ValueError, match=r"n_jobs must be a non-zero integer \(joblib"):
        separability_fraction(THREE, [1.0], d=10, seeds=1, n_jobs=0)
    with pytest.raises(ValueError, match="method must be one of"):
        separability_fraction(THREE, [1.0], d=10, seeds=1, method="simplex")
    with pytest.raises(ValueError, match="alpha=0.01 gives n = round"):
        separability_fraction(THREE, [0.01], d=10, seeds=1)
    with pytest.raises(TypeError, match="mixture must be"):
        separability_fraction("three", [1.0], d=10, seeds=1)
    with pytest.raises(ValueError, match="classes must lie"):
        separating_hyperplane(np.zeros((2, 1)), np.array([0, 2]), 2)


@pytest.mark.slow
def test_no_signal_crossing_approaches_cover_threshold():
    """K = 2, zero means, i.i.d. labels: the 50 % crossing is Cover's 2 (d + 1) / d -> 2."""
    for d in (30, 60):
        alphas = np.linspace(1.6, 2.6, 9)
        table = separability_fraction(NO_SIGNAL, alphas, d=d, seeds=30, seed=1, counts="random")
        a50, se = lp_crossing(table)
        assert abs(a50 - 2 * (d + 1) / d) < 3 * se, (d, a50, se)
        assert se < 0.06
