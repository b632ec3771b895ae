"""One registry: every loss, penalty, label map, mixture model and observable is declared
once, and every entry point reads that declaration (issue 9, item 2)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import gaussmix as gm
from gaussmix.core.registry import Registry
from gaussmix.simulate import fit_erm, simulate
from gaussmix.theory.channel.losses import LOSSES, Loss, SquareLoss
from gaussmix.theory.model.penalties import PENALTIES, ElasticNet, Lasso, Ridge, make_penalty

SRC = Path(__file__).resolve().parents[1] / "src" / "gaussmix"


def test_registry_declares_once_and_names_the_argument():
    reg: Registry = Registry("widget", "kind")

    class A:
        name = "a"

    reg.register(A)
    assert reg.get("a") is A and "a" in reg and reg.names() == ("a",) and len(reg) == 1
    with pytest.raises(ValueError, match="already registered"):
        reg.register(A)
    with pytest.raises(ValueError, match=r"kind must be one of 'a'; got 'b'"):
        reg.get("b")
    with pytest.raises(ValueError, match="kind must be one of"):
        reg.get(3)
    assert reg.unregister("a") is A and "a" not in reg


def test_the_registries_hold_the_documented_names():
    assert gm.LOSSES.names() == ("square", "logistic", "cross-entropy", "hinge")
    assert gm.PENALTIES.names() == ("l2", "l1", "elastic-net")
    assert gm.LABEL_MAPS.names() == ("onehot", "binary")
    assert gm.MIXTURE_MODELS.names() == ("isotropic", "block", "sparse", "spectral", "dense")
    assert gm.OBSERVABLES.names()[:3] == ("test_error", "train_error", "train_loss")


@pytest.mark.parametrize(
    "penalty,l1_ratio,expected",
    [
        ("l2", None, Ridge(0.0)),
        ("l2", 0.0, Ridge(0.0)),
        ("l1", None, Lasso(1.0)),
        ("l1", 1.0, Lasso(1.0)),
        ("elastic-net", 0.3, ElasticNet(0.3)),
    ],
)
def test_make_penalty_accepts_consistent_arguments(penalty, l1_ratio, expected):
    assert make_penalty(penalty, l1_ratio) == expected


@pytest.mark.parametrize(
    "penalty,l1_ratio,match",
    [
        ("l2", 0.5, "contradicts penalty='l2'"),
        ("l1", 0.5, "contradicts penalty='l1'"),
        ("elastic-net", None, "l1_ratio is required with penalty=.elastic-net."),
        ("elastic-net", 1.5, "l1_ratio"),
        ("ridge", None, "penalty must be one of 'l2', 'l1', 'elastic-net'"),
    ],
)
def test_theory_and_simulation_refuse_the_same_penalties(penalty, l1_ratio, match):
    """One validation: solve and simulate refuse the same (penalty, l1_ratio) with the same
    message (simulate used to refuse ``penalty='l2', l1_ratio=0`` that solve accepted)."""
    mix = gm.Mixture.sparse(0.2, 0.5, 1.0)
    with pytest.raises(ValueError, match=match):
        gm.solve(mix, "square", lam=0.1, alpha=1.0, penalty=penalty, l1_ratio=l1_ratio)
    with pytest.raises(ValueError, match=match):
        simulate(
            mix,
            loss="square",
            lam=0.1,
            alpha=1.0,
            d=50,
            seeds=1,
            penalty=penalty,
            l1_ratio=l1_ratio,
        )


def test_ridge_with_an_explicit_zero_l1_ratio_is_ridge_everywhere():
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    a = gm.solve(mix, "square", lam=0.1, alpha=2.0)
    b = gm.solve(mix, "square", lam=0.1, alpha=2.0, penalty="l2", l1_ratio=0.0)
    assert a.test_error == b.test_error
    s1 = simulate(mix, loss="square", lam=0.1, alpha=2.0, d=60, seeds=2)
    s2 = simulate(
        mix, loss="square", lam=0.1, alpha=2.0, d=60, seeds=2, penalty="l2", l1_ratio=0.0
    )
    assert s1.mean["test_error"] == s2.mean["test_error"]


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_label_constraints_come_from_the_loss_for_theory_and_simulation(loss):
    mix = gm.Mixture.isotropic(0.5, "simplex", n_clusters=3)
    with pytest.raises(ValueError, match=f"loss '{loss}' needs binary labels"):
        gm.solve(mix, loss, lam=0.1, alpha=1.0)
    with pytest.raises(ValueError, match=f"loss '{loss}' needs binary labels"):
        simulate(mix, loss=loss, lam=0.1, alpha=1.0, d=50, seeds=1)


def test_zero_lambda_rule_is_declared_by_the_loss():
    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    assert gm.solve(mix, "square", lam=0.0, alpha=2.0).success
    with pytest.raises(ValueError, match="lam 0 is only valid for loss='square'") as info:
        gm.solve(mix, "square", lam=0.0, alpha=0.5)
    assert "alpha > 1" in str(info.value) and "logistic" not in str(info.value)
    # each loss's message states its own rule: hinge has no lam = 0 at all
    with pytest.raises(ValueError, match="lam 0 is not valid for loss='hinge'") as info:
        gm.solve(mix, "hinge", lam=0.0, alpha=20.0)
    assert "lam must be > 0" in str(info.value)
    assert "square" not in str(info.value) and "logistic" not in str(info.value)
    # logistic declares zero_lam_above_separability: alpha = 2 is below alpha* = 6.66
    with pytest.raises(ValueError, match="lam 0 is only valid for loss='logistic' above the"):
        gm.solve(mix, "logistic", lam=0.0, alpha=2.0)
    with pytest.raises(ValueError, match="lam 0 needs loss='square'"):
        simulate(mix, loss="logistic", lam=0.0, alpha=2.0, d=50, seeds=1)


def test_hinge_simulation_refuses_a_penalty_it_cannot_solve_exactly():
    mix = gm.Mixture.sparse(0.2, 0.5, 1.0)
    with pytest.raises(ValueError, match="penalty 'l1' with loss='hinge' has no exact solver"):
        simulate(mix, loss="hinge", lam=0.1, alpha=1.0, d=50, seeds=1, penalty="l1")


def test_priors_are_chosen_by_penalty_and_covariance_structure():
    from gaussmix.theory.prior.prior import PRIORS, prior_for

    mix = gm.Mixture.sparse(0.2, 0.5, 1.0)
    assert prior_for(Ridge(0.0), mix) is PRIORS[(Ridge, "spectral")]
    assert prior_for(Lasso(1.0), mix) is PRIORS[(Lasso, "spectral")]
    problem = gm.make_problem(
        mix, "square", lam=0.1, alpha=1.0, penalty="elastic-net", l1_ratio=0.5
    )
    assert problem.prior is PRIORS[(ElasticNet, "spectral")]


class ScaledSquareLoss(Loss):
    """``c ||y - h||^2 / 2`` with ``c = 2``: a loss added the way the design notes' "Extending
    gaussmix" say (one registered class), checked against the square loss at ``lam / c``,
    which has the same minimiser."""

    name = "scaled-square"
    c = 2.0
    zero_lam_min_alpha = 1.0

    def value(self, y, h):
        return 0.5 * self.c * np.sum((y - h) ** 2, axis=-1)

    def grad(self, y, h):
        return self.c * (h - y)

    def hess(self, y, h):
        L = h.shape[-1]
        return self.c * np.broadcast_to(np.eye(L), h.shape + (L,)).copy()

    def fit_erm(self, Xs, Y, lam, penalty, **kw):
        return SquareLoss().fit_erm(Xs, Y, lam / self.c, penalty, **kw)


@pytest.fixture
def scaled_square():
    LOSSES.register(ScaledSquareLoss)
    yield ScaledSquareLoss
    LOSSES.unregister("scaled-square")


def test_a_registered_loss_works_in_theory_and_simulation(scaled_square):
    """The new loss takes the generic path (Newton prox, Gauss-Hermite channel: exact for
    a quadratic loss) and must give the square loss's estimator at lam / c."""
    mix = gm.Mixture.isotropic([0.3, 1.0], "antipodal", labels="binary", rho=[0.4, 0.6])
    new = gm.solve(mix, "scaled-square", lam=0.2, alpha=1.5, tol=1e-11)
    ref = gm.solve(mix, "square", lam=0.1, alpha=1.5, tol=1e-11)
    assert new.test_error == pytest.approx(ref.test_error, abs=1e-8)
    assert new.train_error == pytest.approx(ref.train_error, abs=1e-8)
    assert new.train_loss == pytest.approx(2.0 * ref.train_loss, abs=1e-8)
    np.testing.assert_allclose(new.Q, ref.Q, atol=1e-8)
    np.testing.assert_allclose(new.M, ref.M, atol=1e-8)
    np.testing.assert_allclose(new.b, ref.b, atol=1e-8)
    s_new = simulate(mix, loss="scaled-square", lam=0.2, alpha=1.5, d=80, seeds=2)
    s_ref = simulate(mix, loss="square", lam=0.1, alpha=1.5, d=80, seeds=2)
    np.testing.assert_allclose(s_new.Q, s_ref.Q, rtol=1e-12)
    assert s_new.mean["test_error"] == pytest.approx(s_ref.mean["test_error"], rel=1e-12)


def test_fit_erm_dispatches_through_the_loss_object():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 10))
    cid = rng.integers(0, 2, size=40)
    W1, b1 = fit_erm(X, gm.LabelMap.binary(), cid, "square", lam=0.5)
    W2, b2 = fit_erm(X, gm.LabelMap.binary(), cid, SquareLoss(), lam=0.5)
    np.testing.assert_array_equal(W1, W2)


def _string_dispatch(path: Path) -> list[str]:
    """Comparisons of a name-like attribute or variable with a registered loss or penalty
    name (``loss == 'square'``, ``penalty != 'l2'``, ``name in ('logistic', 'hinge')``)."""
    names = set(LOSSES.names()) | set(PENALTIES.names())
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        consts = []
        for c in [node.left, *node.comparators]:
            if isinstance(c, ast.Constant) and isinstance(c.value, str):
                consts.append(c.value)
            elif isinstance(c, (ast.Tuple, ast.List, ast.Set)):
                consts += [e.value for e in c.elts if isinstance(e, ast.Constant)]
        if any(v in names for v in consts):
            found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


def test_no_dispatch_on_loss_or_penalty_names_outside_the_registry():
    found = [hit for path in sorted(SRC.rglob("*.py")) for hit in _string_dispatch(path)]
    assert not found, found


def test_zero_lambda_elastic_net_without_l1_part_is_ridge_at_every_entry_point():
    """An elastic net with l1_ratio = 0 has no l1 part: lam = 0 is solved where ridge is
    (square loss, alpha > 1), by solve and by a sweep's points (validated once, then checked
    per point)."""
    from gaussmix.sweep import PointSpec

    mix = gm.Mixture.isotropic(0.5, "antipodal", labels="binary")
    kw = dict(penalty="elastic-net", l1_ratio=0.0)
    ridge = gm.solve(mix, "square", lam=0.0, alpha=2.0)
    assert gm.solve(mix, "square", lam=0.0, alpha=2.0, **kw).test_error == pytest.approx(
        ridge.test_error, abs=1e-10
    )
    first = PointSpec(mix, "square", lam=0.1, alpha=2.0, **kw)
    assert first.problem().lam == 0.1
    assert first.at(lam=0.0).problem().lam == 0.0  # the shared problem, checked at lam = 0
    with pytest.raises(ValueError, match="lam 0 is only valid"):
        first.at(lam=0.0, alpha=0.5).problem()
