"""The ten-class real-data study (task ``ten-class``: one-hot labels, the cross-entropy loss):
the one-hot mixture, the real-data curve against an independent scikit-learn fit, and, on
MNIST at reduced size (4 x 4 average pooling, d = 49), the theory against ERM on samples of
the fitted mixture."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _cli_helpers import assert_one_line_error, run
from conftest import require_dataset
from sklearn.linear_model import LogisticRegression

import gaussmix as gm
from gaussmix.data import AveragePooling, subsample_indices
from gaussmix.studies import prepare_realdata, real_curve, synthetic_curve
from gaussmix.theory.model.conventions import sklearn_logistic_params

LAM = 0.1


@pytest.fixture(scope="module")
def digits10():
    return prepare_realdata("digits", "ten-class")


def test_ten_class_fits_the_one_hot_mixture(digits10):
    mix = digits10.mixture
    assert digits10.info["clustering"] == "pk" and mix.n_clusters == 10
    assert mix.labels.is_onehot and np.array_equal(mix.labels.labels, np.eye(10))
    ds = digits10.dataset
    counts = np.bincount(ds.classes_train, minlength=10)  # fitted on the training split
    np.testing.assert_allclose(mix.rho, counts / counts.sum(), rtol=1e-15)
    with pytest.raises(ValueError, match="clustering 'p2' needs a binary task"):
        prepare_realdata(ds, clustering="p2")


def test_ten_class_real_curve_matches_an_independent_fit(digits10):
    """Softmax cross-entropy with ``lam ||W||_F^2 / 2`` on ``x / sqrt(d)`` and a free
    intercept is scikit-learn's multinomial ``LogisticRegression(C = 1 / lam)``: the test
    error on the whole test split agrees up to points on a decision boundary."""
    d = digits10.d
    df = real_curve(digits10, loss="cross-entropy", lam=LAM, alphas=[3.0], subsamples=1, seed=2)
    idx = subsample_indices(digits10.x_train.shape[0], d, 3.0, seed=2)
    clf = LogisticRegression(**sklearn_logistic_params(LAM), tol=1e-12, max_iter=100_000)
    clf.fit(digits10.x_train[idx] / np.sqrt(d), digits10.dataset.classes_train[idx])
    err = np.mean(clf.predict(digits10.x_test / np.sqrt(d)) != digits10.dataset.classes_test)
    assert df["n"].iloc[0] == idx.size and 0.0 < err < 0.5
    assert abs(df["test_error"].iloc[0] - err) <= 2.0 / digits10.x_test.shape[0]


@pytest.mark.slow
# the orthant probabilities' sampling error, 4e-6, is reported; the tolerance below is ~5e-2
@pytest.mark.filterwarnings("ignore::gaussmix.core.exceptions.IntegrationWarning")
def test_mnist_ten_class_theory_against_the_fitted_mixture():
    """MNIST, ten classes, pixels pooled 4 x 4 (d = 49): the fixed point of Theorem 1 for
    the fitted ten-cluster mixture (cross-entropy, effective output dimension 9, the dense
    ridge prior) against ERM on samples of that mixture at the same d.  Measured (seeds
    0..5): synthetic 0.3204 +- 0.0168 at alpha = 2 (theory 0.3235); the finite-size bias at
    d = 49 is well inside three standard errors here."""
    ds = require_dataset("mnist", "ten-class")
    problem = prepare_realdata(ds, feature_map=AveragePooling(4))
    assert problem.d == 49 and problem.mixture.n_clusters == 10
    res = gm.solve(
        problem.mixture,
        loss="cross-entropy",
        lam=LAM,
        alpha=2.0,
        options=gm.SolverOptions(estimate_error=False),
    )
    assert res.success
    Q = np.asarray(res.Q)
    assert np.all(np.linalg.eigvalsh(0.5 * (Q + np.swapaxes(Q, 1, 2))) > -1e-12)
    sim = synthetic_curve(problem, loss="cross-entropy", lam=LAM, alphas=[2.0], seeds=4)
    row = sim.iloc[0]
    assert row["converged"] and row["test_error_se"] > 0
    assert abs(row["test_error"] - res.test_error) < 3.0 * row["test_error_se"]
    # and far from chance and from the binary tasks' errors: a ten-class problem
    assert 0.2 < res.test_error < 0.5


def test_cli_ten_class_real_curve_and_bad_clustering(tmp_path):
    out = tmp_path / "o"
    code, _, err = run(
        "realdata", "--dataset", "digits", "--task", "ten-class", "--loss", "cross-entropy",
        "--lam", "0.1", "--alphas", "4", "--sources", "real", "--subsamples", "2",
        "--out", str(out), "-q",
    )  # fmt: skip
    assert code == 0, err
    df = pd.read_csv(out / "realdata.csv")
    assert list(df["source"]) == ["real"] and 0.0 < df["test_error"].iloc[0] < 0.5
    assert json.loads((out / "realdata.json").read_text())["clustering"] == "pk"
    code, stdout, err = run(
        "realdata", "--dataset", "digits", "--task", "ten-class", "--clustering", "p2",
        "--loss", "cross-entropy", "--lam", "0.1", "--out", str(tmp_path / "bad"),
    )  # fmt: skip
    assert_one_line_error(code, stdout, err, "clustering 'p2' needs a binary task")
    assert not (tmp_path / "bad").exists()
