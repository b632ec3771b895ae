"""A validated learning problem: mixture + loss + penalty + (lam, alpha).

The solver works in an *effective output space* of dimension ``L'``: the label space
itself, except for the cross-entropy, whose shift invariance ``h -> h + t 1`` is removed by
working on the orthogonal complement of ``1`` (DESIGN.md pitfall 2).  ``P`` (L', L) is an
orthonormal basis of that space; full-space quantities are ``Q_full = P^T Q P``,
``M_full = P^T M``, ``b_full = P^T b``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gaussmix.core.validation import check_real

from .losses import LOSSES, Loss, ReducedLoss, get_loss
from .mixture import LabelMap, Mixture
from .penalties import PENALTIES, Penalty, make_penalty
from .prior import prior_for

__all__ = ["Problem", "make_problem", "check_lam_alpha", "PENALTIES"]
#: admissible ranges of the penalty strength and of the sample complexity
LAM_MAX = 1e8
ALPHA_MIN, ALPHA_MAX = 1e-8, 1e8


def _complement_of_ones(L: int) -> np.ndarray:
    """Orthonormal basis (L-1, L) of the complement of (1, ..., 1) (Helmert rows)."""
    P = np.zeros((L - 1, L))
    for i in range(1, L):
        P[i - 1, :i] = 1.0
        P[i - 1, i] = -i
        P[i - 1] /= np.sqrt(i * (i + 1))
    return P


#: the output space of each label map, built once (label maps are immutable)
_OUTPUT_SPACES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _output_space(labels: LabelMap, reduced: bool) -> tuple[np.ndarray, tuple]:
    """The effective output space of ``labels`` and its classification rule.

    ``reduced``: the complement of ``1`` (cross-entropy), else the label space itself.
    Returns ``P`` (L', L) and, per cluster, ``(D, t)``: the effective output ``h`` is
    classified to the cluster's label iff ``D h < t`` componentwise (nearest distinct label
    vector, one row per other class).  Computed once per label map and kind (read-only
    arrays, shared by every problem on these labels).
    """
    cache = _OUTPUT_SPACES.setdefault(labels, {})
    hit = cache.get(reduced)
    if hit is not None:
        return hit
    L = labels.dim
    P = _complement_of_ones(L) if reduced else np.eye(L)
    classes = labels.classes
    constraints = []
    for c in range(labels.n_clusters):
        ci = labels.cluster_class[c]
        others = [a for a in range(classes.shape[0]) if a != ci]
        D = (classes[others] - classes[ci]) @ P.T
        t = 0.5 * (np.sum(classes[others] ** 2, axis=1) - np.sum(classes[ci] ** 2))
        D.flags.writeable = t.flags.writeable = False
        constraints.append((D, t))
    P.flags.writeable = False
    cache[reduced] = out = (P, tuple(constraints))
    return out


@dataclass(frozen=True, eq=False)
class Problem:
    """Everything the fixed point needs, validated.

    Attributes
    ----------
    mixture : Mixture
    loss : Loss
        The loss acting on the effective outputs (a :class:`ReducedLoss` for cross-entropy).
    loss_name, penalty : str
    lam, alpha : float
    l1_ratio : float or None
        ``rho1`` of ``r(w) = rho1 ||w||_1 + (1 - rho1) ||w||^2 / 2``: 1 for ``'l1'``, the
        given value for ``'elastic-net'``, None for ``'l2'``.
    P : ndarray (L', L)
        Orthonormal map from effective to full outputs.
    y : ndarray (K, L)
        Full-space label of each cluster.
    constraints : list of (D, t)
        For cluster ``c``: ``h`` (effective) is classified correctly iff ``D h < t``
        componentwise (nearest-label rule, one row per other class).
    penalty_spec : Penalty
        The penalty's declaration (:mod:`gaussmix.theory.penalties`).
    prior : callable
        The prior of the fixed point for this penalty on this mixture's covariance structure
        (:func:`gaussmix.theory.prior.prior_for`), resolved once here.
    """

    mixture: Mixture
    loss: Loss
    loss_name: str
    penalty: str
    lam: float
    alpha: float
    P: np.ndarray
    y: np.ndarray
    constraints: tuple
    penalty_spec: Penalty
    prior: Callable
    l1_ratio: float | None = None

    @property
    def n_clusters(self) -> int:
        return self.mixture.n_clusters

    @property
    def dim(self) -> int:
        """Effective output dimension L'."""
        return int(self.P.shape[0])

    def with_lam_alpha(self, lam: float, alpha: float) -> Problem:
        """This problem at another ``lam`` / ``alpha``, already validated (e.g. by
        :func:`check_lam_alpha`); every other field is shared.

        Equal to ``dataclasses.replace(self, lam=lam, alpha=alpha)``, which re-runs
        ``__init__`` and costs ~5x more: sweeps call this once per point.
        """
        new = object.__new__(Problem)
        new.__dict__.update(self.__dict__, lam=lam, alpha=alpha)
        return new

    def describe(self) -> dict:
        extra = {} if self.l1_ratio is None else {"l1_ratio": self.l1_ratio}
        return {
            "loss": self.loss_name,
            "penalty": self.penalty,
            **extra,
            "lam": self.lam,
            "alpha": self.alpha,
            **{f"mixture_{k}": v for k, v in self.mixture.describe().items()},
        }


def _problem_l1_ratio(pen: Penalty) -> float | None:
    """``Problem.l1_ratio``: None for ridge, 1 for lasso, the given value for the elastic net."""
    return None if pen.l1_ratio == 0.0 and pen.user_l1_ratio is None else pen.l1_ratio


def check_lam_alpha(
    lam: float,
    alpha: float,
    *,
    loss: str | Loss,
    penalty: str | Penalty = "l2",
    l1_ratio: float | None = None,
    mixture: Mixture | None = None,
) -> tuple[float, float]:
    """The checks of :func:`make_problem` that depend on ``lam`` and ``alpha`` (for a loss
    and an already validated penalty); returns them as floats.

    ``lam = 0`` is accepted when the penalty has no l1 part and the loss declares a unique
    minimiser there: ``Loss.zero_lam_min_alpha`` (the square loss with ``alpha > 1``), or
    ``Loss.zero_lam_above_separability`` (logistic, cross-entropy) with ``alpha`` above the
    separability threshold ``alpha*`` of ``mixture`` (:mod:`gaussmix.theory.margin`; the
    check needs the mixture).  Sweeps validate the other options once per combination and
    these per point.
    """
    # beyond these bounds the weights (or the data per dimension) under/overflow double
    # precision and the errors would be decided by ties, not by the theory
    lam_v = check_real("lam", lam, low=0.0, high=LAM_MAX)
    alpha_v = check_real("alpha", alpha, low=ALPHA_MIN, high=ALPHA_MAX)
    if lam_v == 0.0:
        pen = make_penalty(penalty, l1_ratio)
        _check_zero_lam(get_loss(loss), pen, alpha_v, mixture)
    return lam_v, alpha_v


def _check_zero_lam(loss: Loss, pen: Penalty, alpha: float, mixture: Mixture | None) -> None:
    if not pen.allows_zero_lam:
        raise ValueError(
            f"lam=0 with penalty={pen.name!r} (basis pursuit) is the boundary lam -> 0+ "
            "and is not solved directly; use a small positive lam, or "
            "gaussmix.optimal_lambda, which detects a lam -> 0+ optimum"
        )
    if loss.zero_lam_above_separability:
        if mixture is None:
            raise ValueError(
                f"lam=0 is only valid for loss={loss.name!r} above the separability threshold "
                "of the mixture, which this check needs (pass mixture=, or use make_problem)"
            )
        from .margin import check_not_separable  # the threshold needs the fixed point

        check_not_separable(mixture, alpha, loss.name)
        return
    bound = loss.zero_lam_min_alpha
    if bound is None or not alpha > bound:
        valid = [
            f"loss={c.name!r} with alpha > {c.zero_lam_min_alpha:g}"
            for c in LOSSES
            if c.zero_lam_min_alpha is not None
        ] + [
            f"loss={c.name!r} with alpha > alpha* (non-separable data)"
            for c in LOSSES
            if c.zero_lam_above_separability
        ]
        raise ValueError(
            f"lam=0 is only valid for {' or '.join(valid)} (the minimiser does not "
            f"exist or is not unique otherwise); got loss={loss.name!r}, alpha={alpha:g}. "
            "Use a small positive lam."
        )


def make_problem(
    mixture: Mixture,
    loss: str | Loss,
    *,
    lam: float,
    alpha: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
) -> Problem:
    """Validate a learning problem and build its effective output space.

    ``penalty='l1'`` / ``'elastic-net'`` (with ``l1_ratio``, validated by
    :func:`gaussmix.theory.penalties.make_penalty`) need ``lam > 0`` and a spectral
    covariance structure (the prior of :func:`gaussmix.theory.prior.prior_for`).

    Raises
    ------
    TypeError, ValueError
        With the offending argument named.
    """
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    base = get_loss(loss)
    pen = make_penalty(penalty, l1_ratio)
    labels = mixture.labels
    base.check_labels(labels)
    lam_v, alpha_v = check_lam_alpha(lam, alpha, loss=base, penalty=pen, mixture=mixture)
    prior = prior_for(pen, mixture)
    reduced = base.shift_invariant
    P, constraints = _output_space(labels, reduced)
    eff: Loss = ReducedLoss(base, P) if reduced else base
    return Problem(
        mixture=mixture,
        loss=eff,
        loss_name=base.name,
        penalty=pen.name,
        lam=lam_v,
        alpha=alpha_v,
        P=P,
        y=labels.labels,
        constraints=constraints,
        penalty_spec=pen,
        prior=prior,
        l1_ratio=_problem_l1_ratio(pen),
    )
