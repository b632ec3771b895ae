"""Feature maps: random features erf(F x / sqrt(d)) and trained-network features, fitted on
the training split and applied identically to both splits."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import require_dataset
from scipy.special import erf

from gaussmix.data import (
    NetworkFeatures,
    RandomFeatures,
    featurize,
    load_dataset,
)


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", "even-odd")


def test_random_features_shape_determinism_and_range(digits):
    rf = RandomFeatures(160, seed=3).fit(digits.x_train)
    assert rf.F_.shape == (160, 64) and rf.gamma_ == 2.5
    v = rf.transform(digits.x_test)
    assert v.shape == (450, 160) and v.dtype == np.float64
    assert np.all(np.abs(v) < 1)
    np.testing.assert_array_equal(
        v, RandomFeatures(160, seed=3).fit(digits.x_train).transform(digits.x_test)
    )
    assert not np.allclose(
        v, RandomFeatures(160, seed=4).fit(digits.x_train).transform(digits.x_test)
    )
    # the definition, computed directly; chunking does not change the result
    direct = erf(digits.x_test @ rf.F_.T / np.sqrt(64))
    np.testing.assert_allclose(v, direct, rtol=0, atol=1e-14)
    small = RandomFeatures(160, seed=3, chunk=7).fit(digits.x_train)
    np.testing.assert_allclose(small.transform(digits.x_test), v, rtol=0, atol=1e-14)
    # F is standard Gaussian and depends on the seed and d only, not on the data
    other = RandomFeatures(160, seed=3).fit(np.zeros((2, 64)))
    np.testing.assert_array_equal(other.F_, rf.F_)
    big = RandomFeatures(400, seed=0).fit(np.zeros((1, 500))).F_
    assert abs(big.mean()) < 0.01 and abs(big.var() - 1) < 0.01


def test_random_features_refuse_misuse(digits):
    rf = RandomFeatures(8)
    with pytest.raises(RuntimeError, match="not fitted yet"):
        rf.transform(digits.x_test)
    rf.fit(digits.x_train)
    with pytest.raises(ValueError, match="fitted with d = 64"):
        rf.transform(np.zeros((3, 10)))
    with pytest.raises(ValueError, match="p must be >= 1"):
        RandomFeatures(0)
    with pytest.raises(TypeError, match="p must be an integer"):
        RandomFeatures(8.0)


def test_network_features_change_across_stages_and_are_deterministic(digits):
    nf = NetworkFeatures((1, 4), hidden=32, seed=5, batch_size=100)
    nf.fit(digits.x_train, digits.y_train)
    assert sorted(nf.stages_) == [1, 4] and nf.d_ == 64
    assert nf.stages_[1][0].shape == (64, 32) and nf.stages_[1][1].shape == (32,)
    assert nf.loss_[4] < nf.loss_[1]  # training lowers the square loss
    v1, v4 = nf.transform(digits.x_test, epoch=1), nf.transform(digits.x_test)
    assert v1.shape == v4.shape == (450, 32)
    assert v1.min() >= 0 and v4.min() >= 0 and (v4 == 0).any() and (v4 > 0).any()
    assert np.abs(v4 - v1).max() > 0.05
    # the hidden layer relu(x W1 + b1), as stored
    w1, b1 = nf.stages_[4]
    np.testing.assert_allclose(v4, np.maximum(digits.x_test @ w1 + b1, 0), atol=1e-12)
    same = NetworkFeatures((1, 4), hidden=32, seed=5, batch_size=100)
    same.fit(digits.x_train, digits.y_train)
    np.testing.assert_array_equal(same.transform(digits.x_test), v4)
    other = NetworkFeatures((1, 4), hidden=32, seed=6, batch_size=100)
    other.fit(digits.x_train, digits.y_train)
    assert not np.allclose(other.transform(digits.x_test), v4)
    # a later stage continues the same training: epoch 1 of a 4-epoch run is a 1-epoch run
    one = NetworkFeatures((1,), hidden=32, seed=5, batch_size=100)
    one.fit(digits.x_train, digits.y_train)
    np.testing.assert_array_equal(one.transform(digits.x_test), v1)


def test_network_features_refuse_misuse(digits):
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        NetworkFeatures((0, 2))
    with pytest.raises(ValueError, match="at least one epoch"):
        NetworkFeatures(())
    nf = NetworkFeatures((1,), hidden=4)
    with pytest.raises(RuntimeError, match="not fitted yet"):
        nf.transform(digits.x_test)
    with pytest.raises(ValueError, match=r"y must have shape \(1347,\)"):
        nf.fit(digits.x_train, digits.y_train[:10])
    nf.fit(digits.x_train, digits.y_train)
    with pytest.raises(ValueError, match=r"epoch must be one of \[1\]"):
        nf.transform(digits.x_test, epoch=2)


def test_featurize_fits_on_the_training_split_only(digits):
    nf = NetworkFeatures((1, 2), hidden=16, seed=0)
    out = featurize(digits, nf)
    assert out.x_train.shape == (1347, 16) and out.x_test.shape == (450, 16)
    ref = NetworkFeatures((1, 2), hidden=16, seed=0).fit(digits.x_train, digits.y_train)
    np.testing.assert_array_equal(out.x_test, ref.transform(digits.x_test))
    assert out.y_train is digits.y_train and out.task is digits.task
    early = featurize(digits, nf.at(1), fit=False)
    np.testing.assert_array_equal(early.x_test, ref.transform(digits.x_test, epoch=1))
    rf = featurize(digits, RandomFeatures(32, seed=1))
    assert rf.x_train.shape == (1347, 32)
    with pytest.raises(ValueError, match="load the data with a task"):
        featurize(load_dataset("digits"), NetworkFeatures((1,), hidden=4))


@pytest.mark.slow
def test_network_features_on_mnist_follow_appendix_e(tmp_path):
    """784-784 ReLU network on 1000 MNIST even/odd images, two stages (10-20 s)."""
    ds = require_dataset("mnist", "even-odd", data_dir=tmp_path)
    x, y, _ = ds.subsample(1000 / 784, seed=0)
    nf = NetworkFeatures((1, 2), seed=0).fit(x, y)
    v1 = nf.transform(ds.x_test[:500], epoch=1)
    v2 = nf.transform(ds.x_test[:500], epoch=2)
    assert v2.shape == (500, 784) and v2.min() >= 0
    assert nf.loss_[2] < nf.loss_[1] < 0.5
    assert np.abs(v2 - v1).mean() > 1e-3
    again = NetworkFeatures((1, 2), seed=0).fit(x, y)
    np.testing.assert_array_equal(again.transform(ds.x_test[:500]), v2)
