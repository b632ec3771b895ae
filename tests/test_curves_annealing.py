"""Lambda sweeps anneal the quadrature rule as well as the fixed point (issue 9, item 7:
the README's sweep warned about its integration error at small lambda)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.experiments.curves import _next_start_rule
from gaussmix.theory.numerics.quadrature import GaussHermite, default_rule

MIX3 = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)


def test_readme_lambda_sweep_reaches_its_accuracy_without_warnings() -> None:
    lams = np.geomspace(1e-3, 10, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an IntegrationWarning fails the test
        df = gm.lambda_sweep(MIX3, "cross-entropy", lams, alpha=2.0)
    assert df.converged.all()
    assert (df.integration_error < 1e-6).all()
    # each point agrees with an independent solve on a fine rule
    for lam in (1e-3, 0.0107, 1.0):
        k = int(np.argmin(np.abs(np.log(lams / lam))))
        ref = gm.solve(
            MIX3, "cross-entropy", lam=lams[k], alpha=2.0, quadrature=GaussHermite(200, 2)
        )
        assert df.test_error[k] == pytest.approx(ref.test_error, abs=1e-6)
        assert df.train_loss[k] == pytest.approx(ref.train_loss, abs=1e-6)


def test_the_rule_grows_only_where_a_point_needed_it() -> None:
    base = default_rule(2)
    r1, r2, r3 = base.refined(), base.refined().refined(), base.refined().refined().refined()
    res = gm.solve(MIX3, "cross-entropy", lam=1.0, alpha=2.0)

    def at(rule):
        return dataclasses.replace(res, state=dataclasses.replace(res.state, rule=rule))

    assert _next_start_rule(at(base), base) == base  # no refinement
    assert _next_start_rule(at(r1), base) == base  # one refinement: accurate at base
    assert _next_start_rule(at(r3), base) == r2  # three: r2 was accurate
    assert _next_start_rule(at(GaussHermite(7, 2)), base) == base  # not on the chain
    sq = gm.solve(MIX3, "square", lam=1.0, alpha=2.0)
    assert _next_start_rule(sq, base) is None  # closed-form channel


def test_a_fixed_quadrature_is_not_changed() -> None:
    rule = GaussHermite(12, 2)
    res = gm.lambda_sweep(
        MIX3,
        "cross-entropy",
        [1.0, 0.1],
        alpha=2.0,
        quadrature=rule,
        estimate_error=False,
    ).points
    assert all(r.params["quadrature"] == rule.describe() for r in res)
