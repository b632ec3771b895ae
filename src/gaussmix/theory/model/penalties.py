"""Penalties ``r(W)`` of eq. (2), each declared once.

A :class:`Penalty` carries everything the package needs to know about it: its name and
constraints (the ``l1_ratio`` it admits, whether ``lam = 0`` is meaningful), its value
``r(W)``, whether ``W*`` is sparse (so that results report ``nonzero_fraction``) and its
scikit-learn parametrisation.  The classes are registered in :data:`PENALTIES`;
:func:`make_penalty` is the one place where a user's ``(penalty, l1_ratio)`` is validated.
The prior of the fixed point that serves a penalty on each covariance structure is declared
in :data:`gaussmix.theory.prior.prior.PRIORS`.

* ``'l2'`` (ridge): ``r(W) = ||W||_F^2 / 2``;
* ``'l1'`` (lasso): ``r(W) = ||W||_1``;
* ``'elastic-net'``: ``r(W) = l1_ratio ||W||_1 + (1 - l1_ratio) ||W||_F^2 / 2``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.registry import Registry
from gaussmix.core.validation import check_real

__all__ = ["Penalty", "Ridge", "Lasso", "ElasticNet", "PENALTIES", "make_penalty"]

#: every penalty, by the name users type (``penalty='l1'``, ``--penalty l1``)
PENALTIES: Registry[type[Penalty]] = Registry("penalty")


class Penalty:
    """Base class: ``r(w) = l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 2``.

    Instances are immutable and compare equal when they have the same class and ``l1_ratio``.
    Build them with :func:`make_penalty` (or the class's :meth:`from_l1_ratio`).
    """

    #: the registered name
    name: ClassVar[str] = "penalty"
    #: a set-up left to defaults (the command line's) is binary: K = 2 clusters, +-1 labels
    #: (Appendix C.2's sparse classification); any label map is accepted
    binary_default: ClassVar[bool] = False
    #: whether ``W*`` has exact zeros (results then report ``nonzero_fraction``)
    sparse: ClassVar[bool] = False
    #: human-readable name for tables and figures
    label: ClassVar[str] = "penalty"
    #: whether the user chooses ``l1_ratio`` (elastic net); ridge and lasso imply theirs
    takes_l1_ratio: ClassVar[bool] = False

    __slots__ = ("l1_ratio",)

    def __init__(self, l1_ratio: float) -> None:
        object.__setattr__(self, "l1_ratio", float(l1_ratio))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.l1_ratio == self.l1_ratio  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.l1_ratio))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(l1_ratio={self.l1_ratio:g})"

    def __reduce__(self) -> tuple:
        return (type(self), (self.l1_ratio,))

    # ------------------------------------------------------------------ constraints
    @classmethod
    def from_l1_ratio(cls, l1_ratio: float | None) -> Penalty:
        """This penalty with a user's ``l1_ratio`` (validated; see :func:`make_penalty`)."""
        raise NotImplementedError

    @property
    def allows_zero_lam(self) -> bool:
        """``lam = 0`` is solved directly only without an l1 part (with one it is the basis
        pursuit boundary ``lam -> 0+``, which :func:`gaussmix.optimal_lambda` detects)."""
        return self.l1_ratio == 0.0

    @property
    def user_l1_ratio(self) -> float | None:
        """The ``l1_ratio`` a user passes for this penalty (None unless elastic net)."""
        return None

    def canonical(self) -> Penalty:
        """The simplest penalty with the same ``r``: an elastic net with ``l1_ratio`` 0 or 1
        is ridge or lasso (which have exact solvers of their own in simulations)."""
        if self.l1_ratio == 0.0:
            return RIDGE
        if self.l1_ratio == 1.0:
            return LASSO
        return self

    def describe(self) -> dict[str, Any]:
        """``{'penalty': name}`` plus ``l1_ratio`` for the elastic net."""
        out: dict[str, Any] = {"penalty": self.name}
        if self.user_l1_ratio is not None:
            out["l1_ratio"] = self.user_l1_ratio
        return out

    # ------------------------------------------------------------------ mathematics
    def value(self, W: Any) -> float:
        """``r(W)`` of eq. (2)."""
        W = np.asarray(W, dtype=float)
        r = self.l1_ratio
        l1 = float(np.abs(W).sum()) if r else 0.0
        l2 = 0.5 * float(np.sum(W * W)) if r != 1.0 else 0.0
        return r * l1 + (1.0 - r) * l2

    def two_class_binary(self, lam: float) -> tuple[float, Penalty]:
        """The binary problem equivalent to a two-class softmax cross-entropy with this
        penalty (docs/design.md pitfall 3): ``(lam_b, penalty_b)``.

        The two-class softmax loss depends on ``W`` only through ``w = W_1 - W_2``; for fixed
        ``w`` the penalty is minimised by the split ``W = [w/2, -w/2]``, which gives
        ``r(W) = l1_ratio ||w||_1 + (1 - l1_ratio) ||w||^2 / 4``: ``lam_b = lam (l1_ratio +
        (1 - l1_ratio) / 2)`` and ``l1_ratio_b = lam l1_ratio / lam_b`` (ridge ``lam / 2``,
        lasso ``lam``).
        """
        r = self.l1_ratio
        lam_b = lam * (r + 0.5 * (1.0 - r))
        if r in (0.0, 1.0):
            return lam_b, self.canonical()
        return lam_b, ElasticNet(lam * r / lam_b)


@PENALTIES.register
class Ridge(Penalty):
    """Ridge, ``r(W) = ||W||_F^2 / 2`` (any label dimension)."""

    name = "l2"
    label = r"ridge ($\ell_2$)"

    @classmethod
    def from_l1_ratio(cls, l1_ratio: float | None) -> Penalty:
        _implied(cls.name, l1_ratio, 0.0)
        return RIDGE


@PENALTIES.register
class Lasso(Penalty):
    """Lasso, ``r(W) = ||W||_1`` (entrywise; any label dimension)."""

    name = "l1"
    label = r"lasso ($\ell_1$)"
    binary_default = True
    sparse = True

    @classmethod
    def from_l1_ratio(cls, l1_ratio: float | None) -> Penalty:
        _implied(cls.name, l1_ratio, 1.0)
        return LASSO


@PENALTIES.register
class ElasticNet(Penalty):
    """Elastic net, ``r(W) = l1_ratio ||W||_1 + (1 - l1_ratio) ||W||_F^2 / 2`` (any label
    dimension)."""

    name = "elastic-net"
    label = "elastic net"
    binary_default = True
    sparse = True
    takes_l1_ratio = True

    @classmethod
    def from_l1_ratio(cls, l1_ratio: float | None) -> Penalty:
        if l1_ratio is None:
            raise ArgumentError(
                "l1_ratio",
                "is required with penalty='elastic-net': a number in [0, 1] "
                "(r(w) = l1_ratio |w|_1 + (1 - l1_ratio) |w|^2 / 2); got None",
            )
        return cls(check_real("l1_ratio", l1_ratio, low=0.0, high=1.0))

    @property
    def user_l1_ratio(self) -> float | None:
        return self.l1_ratio


RIDGE = Ridge(0.0)
LASSO = Lasso(1.0)


def _implied(name: str, l1_ratio: float | None, implied: float) -> None:
    """``l1_ratio`` may accompany ridge / lasso only with the value the penalty implies."""
    if l1_ratio is None:
        return
    r = check_real("l1_ratio", l1_ratio, low=0.0, high=1.0)
    if r != implied:
        raise ArgumentError(
            "l1_ratio",
            f"{r:g} contradicts penalty={name!r} (which means l1_ratio={implied:g}); "
            "use penalty='elastic-net' for a mixture of l1 and l2",
        )


def make_penalty(penalty: str | Penalty = "l2", l1_ratio: float | None = None) -> Penalty:
    """Validate a user's ``(penalty, l1_ratio)``: the one check every entry point uses.

    Parameters
    ----------
    penalty : {'l2', 'l1', 'elastic-net'} or Penalty
        The penalty ``r(W)``: ridge ``||W||_F^2 / 2``, lasso ``||W||_1`` or their mix; a
        :class:`Penalty` instance is checked against ``l1_ratio`` and returned.
    l1_ratio : float, optional
        Required for ``'elastic-net'`` (in ``[0, 1]``); for ``'l2'`` / ``'l1'`` it may be
        given only as the value they imply (0 / 1).

    Raises
    ------
    TypeError, ValueError
        With the offending argument named.
    """
    if isinstance(penalty, Penalty):
        if l1_ratio is not None and float(l1_ratio) != penalty.l1_ratio:
            raise ArgumentError(
                "l1_ratio", f"{l1_ratio!r} contradicts the penalty object {penalty!r}"
            )
        return penalty
    return PENALTIES.get(penalty).from_l1_ratio(l1_ratio)
