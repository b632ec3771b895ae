"""Exception and warning classes raised by gaussmix."""

from __future__ import annotations

from typing import Any

__all__ = [
    "GaussmixError",
    "ConvergenceError",
    "SpuriousFixedPointError",
    "UnboundedWeightsError",
    "SchedulerLostError",
    "ConvergenceWarning",
    "IntegrationWarning",
    "SingularCovarianceWarning",
    "ArgumentError",
    "ArgumentTypeError",
]


class GaussmixError(Exception):
    """Base class of every gaussmix error."""


class _Argument:
    """A bad value of one argument, said as ``'<argument> <requirement>'`` (a requirement
    starting with a colon follows the name directly: ``'mixture: ...'``).

    The argument's name and the requirement are kept apart so that a caller that knows the
    argument under another name (the command line, which says ``--n-clusters`` for
    ``n_clusters``) says the same requirement with :meth:`named`, without reading the text.
    """

    argument: str
    requirement: str

    def __init__(self, argument: str, requirement: str) -> None:
        # 'lam must be ...', 'mixture: the ... is not available ...'
        sep = "" if requirement.startswith(":") else " "
        super().__init__(f"{argument}{sep}{requirement}")
        self.argument = argument
        self.requirement = requirement

    def named(self, name: str) -> Any:
        """The same error naming the argument ``name``."""
        return type(self)(name, self.requirement)


class ArgumentError(_Argument, ValueError):
    """A bad value of one argument (a ``ValueError``): ``argument`` is its name,
    ``requirement`` what it must be (``'must be a real number in [0, 1e+08], got -1'``)."""


class ArgumentTypeError(_Argument, TypeError):
    """An argument of the wrong type (a ``TypeError``), as :class:`ArgumentError`."""


class ConvergenceError(GaussmixError, RuntimeError):
    """The fixed-point iteration did not converge, or converged to an invalid point.

    Parameters
    ----------
    message : str
        What went wrong, naming the point (``alpha``, ``lam``) and the residual.
    result : FixedPointResult or None
        The last iterate, with ``converged=False``; its observables must not be
        used as predictions.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class SpuriousFixedPointError(ConvergenceError):
    """The iteration reached a point that is not a valid fixed point.

    Raised when an overlap matrix ``Q_c`` or ``V_c`` is not positive
    semi-definite, or a quantity is NaN (docs/design.md pitfall 5).

    Parameters
    ----------
    message : str
        What went wrong, naming the invalid quantity.
    result : FixedPointResult or None
        The invalid point, with ``success=False``.
    """


class UnboundedWeightsError(ConvergenceError, FloatingPointError):
    """A sparse penalty keeps weights where the loss has no curvature: Theorem 1's fixed
    point is degenerate at such a state, and the solver found none away from it (which does
    not prove that none exists: docs/design.md, "Weights the loss leaves unbounded").

    The scalar lasso of the prior's channel, ``min_w a w^2 / 2 + t |w| - B w``, has the
    curvature ``a = sum_k sigma^k Vhat_k`` that the loss gives; a loss with none at the state
    (the hinge where every margin is at or past its kink, as when ``W* = 0`` and the bias
    sits at the kink) leaves the weights with ``|B| > t`` unbounded, while the Gaussian field
    ``B`` always has ``P(|B| > t) > 0`` (until it underflows: the zero estimator).  For the
    hinge with a lasso at large ``lam`` the finite-size minimiser is exactly ``W* = 0``
    (docs/design.md, "When the direct iteration fails").  Raised by the map (a
    ``FloatingPointError``, which the iteration turns into its status), and by the solve
    with ``throw=True`` after its fallback failed too.

    Parameters
    ----------
    message : str
        The state: ``P(|B| > t)`` and what to do instead.
    result : FixedPointResult or None
        The last iterate, with ``success=False``.
    """


class SchedulerLostError(GaussmixError):
    """The distributed (dask) scheduler of a sweep was lost while it ran.

    The points finished before are in the sweep's checkpoint (when it has one): the same
    sweep run again resumes from them.

    Attributes
    ----------
    kept, total : int or None
        Points in the checkpoint, and points of the sweep (None when not known).
    checkpoint : path or None
        The checkpoint holding them.
    """

    def __init__(
        self, message: str, *, kept: int | None = None, total: int | None = None,
        checkpoint: Any = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.kept, self.total, self.checkpoint = kept, total, checkpoint


class ConvergenceWarning(UserWarning):
    """A point of a sweep or curve did not converge and was reported as NaN."""


class IntegrationWarning(UserWarning):
    """The estimated quadrature error exceeds the requested accuracy."""


class SingularCovarianceWarning(UserWarning):
    """A covariance fitted to a data set is singular (a class with no more samples than
    dimensions): the theory describes the fitted Gaussian mixture, not the data."""
