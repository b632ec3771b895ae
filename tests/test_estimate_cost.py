"""The integration-error estimate of a randomised channel rule (issue 32, item 4): it
refines the rule only where a finer rule can meet the target, and on ten classes fitted
from scikit-learn's digits it still bounds the change to a rule with eight times the
points."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

import gaussmix as gm
from gaussmix.theory.quadrature import SobolRQMC
from gaussmix.theory.refinement import _refinement_reaches

KEYS = ("test_error", "train_loss")


def _parts(quad: float, evals: float) -> tuple[dict, dict]:
    return {"test_error": quad, "train_loss": 0.0}, {"test_error": evals, "train_loss": 0.0}


def test_refinement_only_where_the_channel_part_can_meet_the_target():
    # the channel's part alone exceeds the target and halves within reach: refine
    assert _refinement_reaches(*_parts(4e-7, 1e-8), KEYS, 1e-7, 1 / 8)
    # the evaluation's own error alone exceeds the target: no channel rule meets it
    assert not _refinement_reaches(*_parts(4e-7, 2e-7), KEYS, 1e-7, 1 / 8)
    # out of reach at the optimistic rate 1 / N within the largest rule
    assert not _refinement_reaches(*_parts(1e-5, 1e-8), KEYS, 1e-7, 1 / 8)
    # already within the target: nothing to refine
    assert not _refinement_reaches(*_parts(5e-8, 4e-8), KEYS, 1e-7, 1 / 8)
    # ratio 0 (the training error's target): only the evaluation's room counts
    assert _refinement_reaches(*_parts(3e-4, 9e-5), KEYS, 1e-4, 0.0)
    assert not _refinement_reaches(*_parts(3e-4, 1.07e-4), KEYS, 1e-4, 0.0)


@pytest.fixture(scope="module")
def digits_mixture() -> gm.Mixture:
    X, y = load_digits(return_X_y=True)
    return gm.Mixture.from_data(X / 16, y)


@pytest.mark.slow  # ~60 s of CPU: three ten-class points
def test_ten_class_estimate_keeps_the_rule_and_bounds_a_finer_one(digits_mixture):
    """Ten classes from digits (d = 64, lam = 1, alpha = 1): the training error's own
    quasi-Monte Carlo estimate (1.07e-4 at its cap) exceeds TRAIN_ERROR_TARGET, which no
    channel rule reduces, so the estimate keeps the automatic rule (before: five
    refinements to 8 x 2**13 nodes, 27 times the solve); its answer is the solve's own,
    and the change to a rule with eight times the points is within the estimate."""
    kw = dict(lam=1.0, alpha=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gm.IntegrationWarning)
        res = gm.solve(digits_mixture, "cross-entropy", **kw)
        bare = gm.solve(digits_mixture, "cross-entropy", **kw, estimate_error=False)
        fine = gm.solve(
            digits_mixture,
            "cross-entropy",
            **kw,
            quadrature=SobolRQMC(9, 11, 8),
            estimate_error=False,
        )
    assert res.success and bare.success and fine.success
    assert res.params["quadrature"].startswith("sobol-rqmc(dim=9, points=2**8")
    assert res.test_error == bare.test_error and res.train_loss == bare.train_loss
    err, fine_err = res.integration_errors, fine.integration_errors
    for key in ("test_error", "train_loss"):
        change = abs(getattr(res, key) - getattr(fine, key))
        # two standard errors of the coarse rule's spread (the estimate) and the fine
        # evaluation's own
        assert change <= 2.0 * (err[key] + fine_err[key]), key
    assert np.isfinite(err["train_error"]) and err["train_error"] > 0.0
