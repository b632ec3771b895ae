"""A validated learning problem: mixture + loss + penalty + (lam, alpha).

The solver works in an *effective output space* of dimension ``L'``: the label space
itself, except for the cross-entropy, whose shift invariance ``h -> h + t 1`` is removed by
working on the orthogonal complement of ``1`` (DESIGN.md pitfall 2).  ``P`` (L', L) is an
orthonormal basis of that space; full-space quantities are ``Q_full = P^T Q P``,
``M_full = P^T M``, ``b_full = P^T b``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import check_choice, check_real
from .losses import CrossEntropyLoss, Loss, ReducedLoss, get_loss
from .mixture import Mixture

__all__ = ["Problem", "make_problem", "PENALTIES"]

PENALTIES = ("l2",)
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
    P : ndarray (L', L)
        Orthonormal map from effective to full outputs.
    y : ndarray (K, L)
        Full-space label of each cluster.
    constraints : list of (D, t)
        For cluster ``c``: ``h`` (effective) is classified correctly iff ``D h < t``
        componentwise (nearest-label rule, one row per other class).
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

    @property
    def n_clusters(self) -> int:
        return self.mixture.n_clusters

    @property
    def dim(self) -> int:
        """Effective output dimension L'."""
        return int(self.P.shape[0])

    def describe(self) -> dict:
        return {
            "loss": self.loss_name,
            "penalty": self.penalty,
            "lam": self.lam,
            "alpha": self.alpha,
            **{f"mixture_{k}": v for k, v in self.mixture.describe().items()},
        }


def make_problem(
    mixture: Mixture,
    loss: str | Loss,
    *,
    lam: float,
    alpha: float,
    penalty: str = "l2",
) -> Problem:
    """Validate a learning problem and build its effective output space.

    Raises
    ------
    TypeError, ValueError
        With the offending argument named.
    """
    if not isinstance(mixture, Mixture):
        raise TypeError(f"mixture must be a gaussmix.Mixture, got {type(mixture).__name__}")
    base = get_loss(loss)
    name = base.name
    check_choice("penalty", penalty, PENALTIES)
    # beyond these bounds the weights (or the data per dimension) under/overflow double
    # precision and the errors would be decided by ties, not by the theory
    lam_v = check_real("lam", lam, low=0.0, high=LAM_MAX)
    alpha_v = check_real("alpha", alpha, low=ALPHA_MIN, high=ALPHA_MAX)
    labels = mixture.labels
    if name in ("logistic", "hinge") and not labels.is_binary:
        raise ValueError(
            f"loss={name!r} needs binary labels (+1/-1, labels='binary', 2 clusters or a custom "
            f"+-1 map); got {labels.kind} labels of dimension {labels.dim} — use "
            "loss='cross-entropy' for one-hot multi-class labels"
        )
    if name == "cross-entropy" and not labels.is_onehot:
        raise ValueError(
            f"loss='cross-entropy' needs one-hot labels; got {labels.kind} labels of dimension "
            f"{labels.dim} — use loss='logistic' for binary +-1 labels"
        )
    if lam_v == 0.0:
        if not (name == "square" and alpha_v > 1.0):
            raise ValueError(
                f"lam=0 is only valid for loss='square' with alpha > 1 (the minimiser does not "
                f"exist or is not unique otherwise); got loss={name!r}, alpha={alpha_v:g}. "
                "Use a small positive lam."
            )
    L = labels.dim
    if isinstance(base, CrossEntropyLoss):
        P = _complement_of_ones(L)
        eff: Loss = ReducedLoss(base, P)
    else:
        P = np.eye(L)
        eff = base
    classes = labels.classes
    constraints = []
    for c in range(mixture.n_clusters):
        ci = labels.cluster_class[c]
        others = [a for a in range(classes.shape[0]) if a != ci]
        diff = classes[others] - classes[ci]
        D = diff @ P.T
        t = 0.5 * (np.sum(classes[others] ** 2, axis=1) - np.sum(classes[ci] ** 2))
        constraints.append((D, t))
    return Problem(
        mixture=mixture,
        loss=eff,
        loss_name=name,
        penalty=penalty,
        lam=lam_v,
        alpha=alpha_v,
        P=P,
        y=labels.labels,
        constraints=tuple(constraints),
    )
