"""The solver's options, :class:`SolverOptions`: the one place that defines their defaults,
validates them and documents them (``%(solver_options)s`` in the docstrings of
:func:`~gaussmix.theory.api.solve` and :func:`~gaussmix.theory.solver.solve_problem`,
:func:`with_options_doc`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gaussmix.core.validation import check_int, check_real

from .quadrature import QuadratureRule
from .tolerances import FIXED_POINT_MAX_ITER, FIXED_POINT_TOL, QUAD_TOL, check_tol

__all__ = ["SolverOptions", "DEFAULT_OPTIONS", "with_options_doc"]

#: Parameter documentation shared by :func:`~gaussmix.theory.api.solve` and
#: :func:`~gaussmix.theory.solver.solve_problem` (numpydoc), one entry per solver option, in
#: the order of their signatures.
_OPTIONS_DOC = """\
    tol : float
        Tolerance on the scaled change of every order parameter,
        ``max_i |T(x)_i - x_i| / s_i < tol`` with ``s_i = max(|x_i|, u_i)`` and ``u_i`` the
        size of the component's block capped at 1 (default
        :data:`~gaussmix.theory.tolerances.FIXED_POINT_TOL`; at most
        :data:`~gaussmix.theory.tolerances.MAX_FIXED_POINT_TOL` = 1e-2).
    max_iter : int
        Maximum number of iterations.
    quadrature : QuadratureRule, optional
        Rule for the channel expectations (``GaussHermite``, ``GradedPanels`` or
        ``SobolRQMC``; the seed of a randomised rule is its ``seed``).  Default: chosen by
        output dimension and regime (:func:`gaussmix.theory.quadrature.auto_rule`): in one
        dimension Gauss-Hermite, replaced by graded composite Gauss-Legendre panels when
        the solution is sharp (an eigenvalue of ``Q_c`` above ``SMOOTH_Q_MAX``, small
        ``lam``); graded panels in two (accurate at every ``lam``), tensor Gauss-Hermite
        in three to five, seeded randomised quasi-Monte Carlo beyond five.
    init : FixedPointResult or dict, optional
        Warm start (e.g. the previous point of a curve), or a dict of full-space ``Q``,
        ``M``, ``V``, ``b`` (e.g. a predictor extrapolated along a curve).
    anderson : int
        Anderson memory (0: damped plain iteration).
    damping : float
        Mixing parameter in (0, 1].
    estimate_error : bool
        Re-solve with a refined rule and report the change of the errors as
        ``integration_error`` (the refined answer is returned); with a randomised rule,
        re-solve with each of its independent replicates instead and report the standard
        error of the observables across them.
    auto_refine : bool
        While the estimated integration error of the test error or the training loss exceeds
        ``quad_tol``, refine the rule again (up to ``max_refine`` times, and at most
        ``MAX_QUADRATURE_NODES`` nodes; a randomised rule only while the target is within
        reach at the node cap, assuming a standard error falling like ``1 / N``); otherwise
        refine once.
    quad_tol : float
        Target integration error for ``auto_refine`` (default
        :data:`~gaussmix.theory.tolerances.QUAD_TOL`).
    max_refine : int
        Largest number of refinements with ``auto_refine`` (0 to 10).
    throw : bool
        Raise :class:`~gaussmix.core.exceptions.ConvergenceError` when no valid fixed point is
        found (default), :class:`~gaussmix.core.exceptions.SpuriousFixedPointError` when the
        iteration reached an invalid point (NaN, or an overlap matrix that is not positive
        definite).  With ``throw=False`` a result with ``success=False`` and NaN
        observables is returned.
    callback : callable, optional
        Called as ``callback(iteration, residual)`` after every evaluation of the map.
    history : dict, optional
        Carries the Anderson secant history of each quadrature rule from one point of a
        curve to the next (updated in place; pass the same dict along the curve).
    continuation : bool
        First converge with a coarser rule where the rule is expensive
        (:meth:`~gaussmix.theory.quadrature.GaussHermite.coarsened`); it changes the
        starting point only, not the fixed point.
    symmetry : bool
        Use the relabelling symmetry of exchangeable clusters (balanced isotropic clusters
        with one variance and a Gram matrix ``a I + b 11^T``, cross-entropy, ridge; see
        :mod:`gaussmix.theory.symmetry`): the order parameters are then equivariant, and one
        cluster's channel, test-error and training-error integrals stand for all ``K``.
        Ignored for other problems.
"""


def with_options_doc(func: Callable) -> Callable:
    """Insert :data:`_OPTIONS_DOC` at the ``%(solver_options)s`` mark of a docstring."""
    func.__doc__ = (func.__doc__ or "").replace("    %(solver_options)s\n", _OPTIONS_DOC + "\n")
    return func


@dataclass(frozen=True)
class SolverOptions:
    """The solver's options, validated; the one definition of their defaults.

    :func:`~gaussmix.theory.api.solve` and :func:`~gaussmix.theory.solver.solve_problem` take
    these fields as keyword arguments with these defaults (see
    :func:`~gaussmix.theory.api.solve` for their meaning).  Construction validates them: a bad
    value raises ``ValueError`` / ``TypeError`` naming the option.
    """

    tol: float = FIXED_POINT_TOL
    max_iter: int = FIXED_POINT_MAX_ITER
    quadrature: QuadratureRule | None = None
    anderson: int = 6
    damping: float = 1.0
    estimate_error: bool = True
    auto_refine: bool = True
    quad_tol: float = QUAD_TOL
    max_refine: int = 5
    throw: bool = True
    continuation: bool = True
    symmetry: bool = True

    def __post_init__(self) -> None:
        checked = {
            "tol": check_tol(self.tol),
            "max_iter": check_int("max_iter", self.max_iter, low=1),
            "anderson": check_int("anderson", self.anderson, low=0, high=50),
            "damping": check_real("damping", self.damping, low=0.0, high=1.0, low_open=True),
            "quad_tol": check_real("quad_tol", self.quad_tol, low=0.0),
            "max_refine": check_int("max_refine", self.max_refine, low=0, high=10),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        rule = self.quadrature
        if rule is not None and not isinstance(rule, QuadratureRule):
            raise TypeError(
                "quadrature must be a GaussHermite, GradedPanels or SobolRQMC rule, got "
                f"{type(rule).__name__}"
            )


DEFAULT_OPTIONS = SolverOptions()
