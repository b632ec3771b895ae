"""Mixtures fitted to data (issue 11, item 2): ``Mixture.from_data``."""

from __future__ import annotations

import numpy as np
import pytest

import gaussmix as gm


def _data(rng: np.random.Generator, n: int = 300, d: int = 5, k: int = 3):
    y = rng.integers(0, k, size=n)
    X = rng.standard_normal((n, d)) + 2.0 * y[:, None] + 1.0
    return X, y


def test_means_covariances_and_priors_are_the_empirical_ones():
    rng = np.random.default_rng(0)
    X, y = _data(rng)
    mix = gm.Mixture.from_data(X, y, center=False)
    cov = mix.covariance
    assert mix.kind == "dense" and cov.structure == "dense" and mix.labels.is_onehot
    assert mix.info["clusters"] == [0, 1, 2] and mix.info["n_samples"] == 300
    for c in range(3):
        Xc = X[y == c]
        np.testing.assert_allclose(cov.means[c], Xc.mean(axis=0), rtol=1e-13)
        np.testing.assert_allclose(cov.covariances[c], np.cov(Xc.T, bias=True), rtol=1e-12)
        assert mix.rho[c] == pytest.approx(np.mean(y == c), rel=1e-15)
    centred = gm.Mixture.from_data(X, y)
    np.testing.assert_allclose(centred.covariance.means, cov.means - X.mean(axis=0), atol=1e-13)
    np.testing.assert_allclose(centred.rho @ centred.covariance.means, 0.0, atol=1e-13)
    assert centred.info["centered"] and not mix.info["centered"]
    # integer pixels give the same mixture as their float values
    X8 = rng.integers(0, 256, size=(300, 5)).astype(np.uint8)
    a, b = gm.Mixture.from_data(X8, y), gm.Mixture.from_data(X8.astype(float), y)
    np.testing.assert_array_equal(a.covariance.covariances, b.covariance.covariances)


def test_p2_and_p10_label_maps():
    """P2 (one cluster per binary class) and P10 (one per digit, labelled by parity)."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, t = datasets.load_digits(return_X_y=True)
    parity = {c: 1 if c % 2 == 0 else -1 for c in range(10)}
    p10 = gm.Mixture.from_data(X / 16.0, t, labels=parity)
    assert p10.n_clusters == 10 and p10.labels.is_binary
    np.testing.assert_array_equal(p10.labels.labels[:, 0], [1, -1] * 5)
    p2 = gm.Mixture.from_data(X / 16.0, np.where(t % 2 == 0, 1, -1), labels="binary")
    assert p2.n_clusters == 2 and p2.info["clusters"] == [-1, 1]
    np.testing.assert_array_equal(p2.labels.labels[:, 0], [-1, 1])  # the ids are the labels
    # P2's class means are the rho-weighted means of P10's clusters (both centred alike)
    even = np.array([parity[c] == 1 for c in range(10)])
    w = p10.rho[even] / p10.rho[even].sum()
    np.testing.assert_allclose(p2.covariance.means[1], w @ p10.covariance.means[even], atol=1e-12)
    res = gm.solve(p10, "logistic", lam=0.1, alpha=2.0)
    assert res.success and 0.0 < res.test_error < 0.5


def test_a_translation_of_the_inputs_changes_only_m_and_b():
    """The bias is unpenalised: centring changes M_c and b only (M_c + b is the same)."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, t = datasets.load_digits(return_X_y=True)
    y = np.where(t % 2 == 0, 1, -1)
    raw = gm.Mixture.from_data(X / 16.0, y, labels="binary", center=False)
    cen = gm.Mixture.from_data(X / 16.0, y, labels="binary")
    a = gm.solve(raw, "square", lam=1.0, alpha=1.0, tol=1e-12)
    b = gm.solve(cen, "square", lam=1.0, alpha=1.0, tol=1e-12)
    for key in ("test_error", "train_error", "train_loss", "Q", "V", "Qhat", "Vhat", "Mhat"):
        np.testing.assert_allclose(getattr(a, key), getattr(b, key), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.M + a.b, b.M + b.b, rtol=1e-8)
    assert not np.allclose(a.M, b.M, rtol=1e-3)


@pytest.mark.parametrize(
    "X,y,kw,exc,match",
    [
        (np.zeros(10), np.zeros(10), {}, ValueError, r"X must have shape \(n, d\)"),
        (np.zeros((10, 2)), np.zeros(9), {}, ValueError, r"y must have shape \(10,\)"),
        (np.zeros((10, 2)), np.zeros(10), {}, ValueError, "at least two clusters"),
        (np.ones((4, 2)), [0, 0, 0, 1], {}, ValueError, r"clusters \[1\] have fewer than 2"),
        (np.full((4, 2), np.nan), [0, 0, 1, 1], {}, ValueError, "finite"),
        (np.array([["a", "b"]] * 4), [0, 0, 1, 1], {}, TypeError, "real numbers"),
        (np.ones((4, 2)), [0, 0, 1, 1], {"labels": {0: 1}}, ValueError, r"missing \[1\]"),
        (
            np.ones((4, 2)),
            [0, 0, 1, 1],
            {"labels": {0: 1, 1: -1, 2: 1}},
            ValueError,
            r"unknown \[2\]",
        ),
        (np.ones((4, 2)), [0, 0, 1, 1], {"labels": "binary"}, ValueError, "exactly -1 and"),
        (np.ones((4, 2)), [0, 0, 1, 1], {"labels": np.eye(3)}, ValueError, "3 rows"),
        (np.ones((4, 2)), [0, 0, 1, 1], {"center": 1}, TypeError, "center must be a bool"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(X, y, kw, exc, match):
    with pytest.raises(exc, match=match):
        gm.Mixture.from_data(X, y, **kw)
