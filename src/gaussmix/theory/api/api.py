"""The theory's validating entry points: :func:`make_problem`, :func:`check_lam_alpha` and
:func:`solve` (``gm.make_problem``, ``gm.solve``).

They sit above :mod:`gaussmix.theory.limits.separability`: ``lam = 0`` with the logistic or
cross-entropy
loss is valid only above the separability threshold ``alpha*``, which is itself a fixed
point of the solver.  The problem's module (:mod:`gaussmix.theory.problem.problem`) and the solver
(:mod:`gaussmix.theory.solve.solver`) sit below the threshold's module and take that check as an
argument (:data:`~gaussmix.theory.problem.problem.SeparabilityCheck`); this module passes it, so
that the dependency runs one way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..channel.losses import Loss
from ..model.mixture import Mixture
from ..model.penalties import Penalty
from ..problem.problem import Problem, build_problem, validate_lam_alpha
from ..solve.options import SolverOptions, solver_options, with_options_doc
from ..solve.results import FixedPointResult
from ..solve.solver import solve_problem

__all__ = ["make_problem", "check_lam_alpha", "solve"]


def check_not_separable(mixture: Mixture, alpha: float, loss_name: str) -> None:
    """:func:`gaussmix.theory.limits.separability.check_not_separable`, imported when ``lam = 0``
    needs it
    (the threshold's module is not loaded by problems with ``lam > 0``)."""
    from ..limits.separability import check_not_separable as check

    check(mixture, alpha, loss_name)


def check_lam_alpha(
    lam: float,
    alpha: float,
    *,
    loss: str | Loss,
    penalty: str | Penalty = "l2",
    l1_ratio: float | None = None,
    mixture: Mixture | None = None,
) -> tuple[float, float]:
    """The checks of :func:`make_problem` that depend on ``lam`` and ``alpha``, returned as
    floats: :func:`~gaussmix.theory.problem.problem.validate_lam_alpha` (which states the rules)
    with the check of ``lam = 0`` against the separability threshold
    (:func:`gaussmix.theory.limits.separability.check_not_separable`).  Sweeps validate the other
    options once per combination and these per point.
    """
    return validate_lam_alpha(
        lam,
        alpha,
        loss=loss,
        penalty=penalty,
        l1_ratio=l1_ratio,
        mixture=mixture,
        separability=check_not_separable,
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
    :func:`gaussmix.theory.model.penalties.make_penalty`) need binary labels (one output,
    Appendix C.2) and ``lam > 0``; ``lam = 0`` as in :func:`check_lam_alpha`.

    Parameters
    ----------
    mixture : Mixture
        The data model (with its label map).
    loss : str or Loss
        A name of :data:`~gaussmix.theory.channel.losses.LOSSES` or a loss object.
    lam : float
        Penalty strength ``lam >= 0``.
    alpha : float
        Sample complexity ``n / d > 0``.
    penalty : {'l2', 'l1', 'elastic-net'}
        The penalty ``r(W)`` (see :func:`solve`).
    l1_ratio : float, optional
        Elastic-net mixing in ``[0, 1]``.

    Returns
    -------
    Problem

    Raises
    ------
    TypeError, ValueError
        With the offending argument named.
    """
    return build_problem(
        mixture,
        loss,
        lam=lam,
        alpha=alpha,
        penalty=penalty,
        l1_ratio=l1_ratio,
        separability=check_not_separable,
    )


@with_options_doc
def solve(
    mixture: Mixture,
    loss: str | Loss = "logistic",
    *,
    lam: float,
    alpha: float,
    penalty: str = "l2",
    l1_ratio: float | None = None,
    rho_test: Any = None,
    options: SolverOptions | None = None,
    init: FixedPointResult | dict | None = None,
    callback: Callable[[int, float], Any] | None = None,
    history: dict | None = None,
    **option_keywords: Any,
) -> FixedPointResult:
    """Solve the self-consistent equations of Theorem 1 and evaluate Theorem 2.

    Parameters
    ----------
    mixture : Mixture
        The data model (with its label map).
    loss : {'square', 'logistic', 'cross-entropy', 'hinge'} or Loss
        The loss ``l(y, h)`` of eq. (2), summed over the samples: a name of
        :data:`~gaussmix.theory.channel.losses.LOSSES` or a
        :class:`~gaussmix.theory.channel.losses.Loss`
        (the cross-entropy is the softmax loss of K >= 2 one-hot labels; the others take
        binary +-1 labels, the square loss any labels).
    lam : float
        Penalty strength ``lam >= 0`` of ``lam r(W)``.
    alpha : float
        Sample complexity ``n / d > 0``.
    penalty : {'l2', 'l1', 'elastic-net'}
        ``r(W) = ||W||_F^2 / 2``, ``||W||_1`` or
        ``l1_ratio ||W||_1 + (1 - l1_ratio) ||W||_F^2 / 2``; ``'l1'`` and ``'elastic-net'``
        need binary labels (one output) and ``lam > 0``.
    l1_ratio : float, optional
        Elastic-net mixing in ``[0, 1]`` (required for ``'elastic-net'``, implied 1 for
        ``'l1'``, None for ``'l2'``).
    rho_test : array (K,), optional
        The cluster priors of the test distribution (a train / test prior shift): the
        estimator is trained on the mixture's ``rho`` (Theorem 1) and its test error and
        test loss (Theorem 2) are weighted by ``rho_test``; the same as solving
        ``mixture.with_test_priors(rho_test)`` (:meth:`gaussmix.Mixture.with_test_priors`,
        the form to pass to curves and sweeps).  Default: the mixture's own test priors
        (``rho`` without a shift).  Read back as ``result.rho_test``.
    %(solve_inputs)s
    %(solver_options)s
    Returns
    -------
    FixedPointResult

    Examples
    --------
    Two opposite clusters with variance 0.5 and labels +-1, logistic regression with a
    ridge penalty at two samples per dimension:

    >>> import gaussmix as gm
    >>> mix = gm.Mixture.isotropic(delta=0.5, means="antipodal", labels="binary")
    >>> res = gm.solve(mix, "logistic", lam=0.1, alpha=2.0)
    >>> res.success
    True
    >>> print(f"test error {res.test_error:.4f}, training error {res.train_error:.4f}")
    test error 0.1166, training error 0.0146
    """
    if rho_test is not None and isinstance(mixture, Mixture):
        mixture = mixture.with_test_priors(rho_test)
    problem = make_problem(mixture, loss, lam=lam, alpha=alpha, penalty=penalty, l1_ratio=l1_ratio)
    opts = solver_options(options, option_keywords, caller="solve")
    return solve_problem(problem, options=opts, init=init, callback=callback, history=history)
