"""A validated learning problem: mixture + loss + penalty + (lam, alpha).

The solver works in an *effective output space* of dimension ``L'``: the label space
itself, except for the cross-entropy, whose shift invariance ``h -> h + t 1`` is removed by
working on the orthogonal complement of ``1`` (docs/design.md pitfall 2), and the square
loss with the ridge on one-hot labels, whose minimiser has ``W 1 = 0`` (solved on the same
complement, :func:`effective_loss`).  ``P`` (L', L) is an
orthonormal basis of that space; full-space quantities are ``Q_full = P^T Q P``,
``M_full = P^T M``, ``b_full = P^T b`` (plus ``s 1 / L`` for the square loss:
:meth:`Problem.full_bias`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.validation import ALPHA_MAX as ALPHA_MAX
from gaussmix.core.validation import ALPHA_MIN as ALPHA_MIN
from gaussmix.core.validation import LAM_MAX as LAM_MAX
from gaussmix.core.validation import check_param

from ..channel.losses import Loss, ReducedLoss, get_loss
from ..model.labels import LabelMap
from ..model.mixture import Mixture
from ..model.penalties import PENALTIES, Penalty, make_penalty
from ..numerics.linalg import complement_of_ones
from ..numerics.quadrature import GRADED_MAX_DIM
from ..prior.prior import prior_for
from .symmetry import ClusterSymmetry

__all__ = [
    "Problem",
    "complement_of_ones",
    "effective_loss",
    "build_problem",
    "validate_lam_alpha",
    "SeparabilityCheck",
    "PENALTIES",
    "LAM_MAX",
]

#: ``check(mixture, alpha, loss_name)`` raises unless ``alpha`` is above the separability
#: threshold of ``mixture`` (:func:`gaussmix.theory.limits.separability.check_not_separable`): the
#: threshold is itself a fixed point, so the layers above the solver pass it in
SeparabilityCheck = Callable[[Mixture, float, str], None]
# LAM_MAX, ALPHA_MIN, ALPHA_MAX: re-exported from gaussmix.core.validation, where the rules
# of lam and alpha are stated once (PARAMETERS)


_complement_of_ones = complement_of_ones  # the former private name


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
    P = complement_of_ones(L) if reduced else np.eye(L)
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


def _distance_offset(base: Loss, penalty: Penalty | None, labels: LabelMap) -> np.ndarray | None:
    """The full outputs' component along ``1`` at the minimiser, ``s 1 / L``, where the
    square loss (a :attr:`~gaussmix.theory.channel.losses.Loss.distance_loss`) is solved on
    the complement of ``1``: a penalty without an l1 part (invariant under rotations of the
    outputs) and at least two outputs whose labels all sum to the same ``s`` (one-hot:
    ``s = 1``); None otherwise.

    Why it is exact: write ``W = P^T W' + 1 w^T / sqrt(L)`` and ``b = P^T b' + 1 b_1 /
    sqrt(L)``.  Then ``||y - W^T x - b||^2 = ||P y - W'^T x - b'||^2 + (s - sqrt(L) (w^T x +
    b_1))^2 / L`` and ``||W||_F^2 = ||W'||_F^2 + ||w||^2``: the two parts are minimised
    apart, the second at ``w = 0``, ``b_1 = s / sqrt(L)`` for any ``lam > 0`` (and at ``lam
    = 0``, where the square loss's minimiser is unique, ``alpha > 1``).  The order parameters
    (eq. (13)) of the full problem are those of the reduced one embedded by ``P`` (``W 1 =
    0``: no mean, variance or response along ``1`` enters an observable), the outputs
    ``P^T u + s 1 / L``, the nearest-label rule the same (the labels' differences are
    orthogonal to ``1``), and the loss the square loss of the labels ``P y`` exactly.
    """
    if not base.distance_loss or penalty is None or penalty.l1_ratio != 0.0:
        return None
    y = np.asarray(labels.labels, dtype=float)
    if labels.dim < 2:
        return None
    sums = y.sum(axis=1)
    if not np.all(sums == sums[0]):
        return None
    out = np.full(labels.dim, sums[0] / labels.dim)
    out.flags.writeable = False
    return out


def effective_loss(
    loss: str | Loss, labels: LabelMap, penalty: Penalty | None = None
) -> tuple[Loss, np.ndarray]:
    """The loss acting on the effective outputs of ``labels`` and the basis ``P`` (L', L)
    of that space: a :class:`~gaussmix.theory.channel.losses.ReducedLoss` on the complement of
    ``1`` for a shift-invariant loss (cross-entropy) and for the square loss with a
    ``penalty`` without an l1 part on labels of one sum (:func:`_distance_offset`), else the
    loss itself and ``I``.

    A full-space output ``h`` has the effective output ``P h``; for the losses here
    ``loss(y, h) = effective(y, P h)`` (shift invariance; for the square loss on the outputs
    ``h = P^T u + s 1 / L`` of the minimiser), so a Gaussian output ``N(m, Q)`` has the
    effective law ``N(P m, P Q P^T)``.  Without ``penalty`` the square loss is not reduced.
    """
    base = get_loss(loss)
    offset = _distance_offset(base, penalty, labels)
    reduced = base.shift_invariant or offset is not None
    P = _output_space(labels, reduced)[0]
    return (ReducedLoss(base, P, offset) if reduced else base), P


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
        The penalty's declaration (:mod:`gaussmix.theory.model.penalties`).
    prior : callable
        The prior of the fixed point for this penalty on this mixture's covariance structure
        (:func:`gaussmix.theory.prior.prior.prior_for`), resolved once here.
    symmetry : ClusterSymmetry or None
        The relabelling symmetry of exchangeable clusters
        (:meth:`~gaussmix.theory.problem.symmetry.ClusterSymmetry.of_outputs`; None: not
        exchangeable), resolved once here: it depends on neither ``lam`` nor ``alpha``, so
        the copies of :meth:`with_lam_alpha` (the points of a curve) share it.  A problem
        with another mixture, loss, penalty or labels is built again (:func:`build_problem`),
        not copied with ``dataclasses.replace``, which would keep this one's symmetry.
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
    symmetry: ClusterSymmetry | None = field(default=None, repr=False)

    @property
    def n_clusters(self) -> int:
        return self.mixture.n_clusters

    def full_bias(self, b: np.ndarray) -> np.ndarray:
        """The full-space bias of an effective one (..., L'): ``b P`` plus the offset of a
        reduced square loss (:func:`effective_loss`)."""
        out = b @ self.P
        offset = getattr(self.loss, "offset", None)
        return out if offset is None else out + offset

    def full_response(self, embedded: np.ndarray, A: np.ndarray) -> np.ndarray:
        """The full-space ``V_c`` or ``Vhat_c`` (K, L, L) of effective ones ``A`` (K, L', L')
        whose embedding ``P^T A_c P`` is ``embedded``: that embedding, plus, for a reduced
        square loss (:func:`effective_loss`), the response along ``1``.  With the ridge the
        square loss's ``V_c`` and ``Vhat_c`` are multiples of the identity in every
        direction (their equations, eq. (13) with ``E[df/domega] = -(I + V_c)^{-1}``, are
        closed in ``V`` and ``Vhat``, map multiples of ``I`` to multiples of ``I``, and have
        one solution), ``1`` included: its component is ``tr A_c / L'``."""
        if getattr(self.loss, "offset", None) is None:
            return embedded
        L = self.P.shape[1]
        along = np.trace(A, axis1=-2, axis2=-1) / self.P.shape[0]
        return embedded + (along / L)[..., None, None] * np.ones((L, L))

    @property
    def dim(self) -> int:
        """Effective output dimension L'."""
        return int(self.P.shape[0])

    def with_lam_alpha(self, lam: float, alpha: float) -> Problem:
        """This problem at another ``lam`` / ``alpha``, already validated (e.g. by
        :func:`~gaussmix.theory.api.api.check_lam_alpha`); every other field is shared.

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


def validate_lam_alpha(
    lam: float,
    alpha: float,
    *,
    loss: str | Loss,
    penalty: str | Penalty = "l2",
    l1_ratio: float | None = None,
    mixture: Mixture | None = None,
    separability: SeparabilityCheck,
) -> tuple[float, float]:
    """The checks of :func:`build_problem` that depend on ``lam`` and ``alpha`` (for a loss
    and an already validated penalty); returns them as floats.

    The public form is :func:`gaussmix.theory.api.api.check_lam_alpha`, which passes
    ``separability``.

    ``lam = 0`` is accepted when the penalty has no l1 part and the loss declares a unique
    minimiser there: ``Loss.zero_lam_min_alpha`` (the square loss with ``alpha > 1``), or
    ``Loss.zero_lam_above_separability`` (logistic, cross-entropy) with ``alpha`` above the
    separability threshold ``alpha*`` of ``mixture`` (checked by ``separability``; the
    check needs the mixture).  Sweeps validate the other options once per combination and
    these per point.
    """
    lam_v = check_param("lam", lam)
    alpha_v = check_param("alpha", alpha)
    if lam_v == 0.0:
        pen = make_penalty(penalty, l1_ratio)
        _check_zero_lam(get_loss(loss), pen, alpha_v, mixture, separability)
    return lam_v, alpha_v


def _check_zero_lam(
    loss: Loss,
    pen: Penalty,
    alpha: float,
    mixture: Mixture | None,
    separability: SeparabilityCheck,
) -> None:
    if not pen.allows_zero_lam:
        raise ArgumentError(
            "lam",
            f"0 with penalty={pen.name!r} (basis pursuit) is the boundary lam -> 0+ "
            "and is not solved directly; use a small positive lam, or "
            "gaussmix.optimal_lambda, which detects a lam -> 0+ optimum",
        )
    if loss.zero_lam_above_separability:
        if mixture is None:
            raise ArgumentError(
                "lam",
                f"0 is only valid for loss={loss.name!r} above the separability threshold "
                "of the mixture, which this check needs (pass mixture=, or use make_problem)",
            )
        separability(mixture, alpha, loss.name)
        return
    bound = loss.zero_lam_min_alpha
    if bound is None:
        raise ArgumentError(
            "lam",
            f"0 is not valid for loss={loss.name!r} (without a penalty its minimiser "
            "does not exist or is not unique): lam must be > 0; use a small positive lam",
        )
    if not alpha > bound:
        raise ArgumentError(
            "lam",
            f"0 is only valid for loss={loss.name!r} with alpha > {bound:g} (the "
            f"minimiser is not unique otherwise); got alpha={alpha:g}. Use a small positive "
            "lam.",
        )


def build_problem(
    mixture: Mixture,
    loss: str | Loss,
    *,
    lam: float,
    alpha: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    separability: SeparabilityCheck,
) -> Problem:
    """Validate a learning problem and build its effective output space.

    The public form is :func:`gaussmix.make_problem`
    (:func:`gaussmix.theory.api.api.make_problem`),
    which passes ``separability`` (the check of ``lam = 0`` against the separability
    threshold, itself a fixed point: :mod:`gaussmix.theory.limits.separability`).

    ``penalty='l1'`` / ``'elastic-net'`` (with ``l1_ratio``, validated by
    :func:`gaussmix.theory.model.penalties.make_penalty`) need ``lam > 0`` and a spectral
    covariance structure (the prior of :func:`gaussmix.theory.prior.prior.prior_for`).

    Parameters
    ----------
    mixture, loss, lam, alpha, penalty, l1_ratio
        As in :func:`gaussmix.solve`.

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
    lam_v, alpha_v = validate_lam_alpha(
        lam, alpha, loss=base, penalty=pen, mixture=mixture, separability=separability
    )
    prior = prior_for(pen, mixture)
    eff, P = effective_loss(base, labels, pen)
    if pen.sparse and P.shape[0] - 1 > GRADED_MAX_DIM:
        # the multi-output lasso's moments are exact along lines and integrated across them
        # by a graded rule in L' - 1 dimensions (theory.lasso.gaussian_l1_moments)
        raise ArgumentError(
            "penalty",
            f"{pen.name!r} needs at most {GRADED_MAX_DIM + 1} effective outputs (its prior "
            f"integrates over {GRADED_MAX_DIM} dimensions at most); the {base.name} loss on "
            f"these labels has {P.shape[0]} (K = {mixture.n_clusters} clusters): use fewer "
            "classes or penalty='l2'",
        )
    constraints = _output_space(labels, isinstance(eff, ReducedLoss))[1]
    l1 = _problem_l1_ratio(pen)
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
        l1_ratio=l1,
        symmetry=ClusterSymmetry.of_outputs(mixture, eff, l1, P, labels.labels),
    )
