"""The solver's options, :class:`SolverOptions`: the one place that defines their defaults,
validates them and documents them (``%(solver_options)s`` in the docstrings of
:func:`~gaussmix.theory.api.api.solve` and :func:`~gaussmix.theory.solve.solver.solve_problem`,
:func:`with_options_doc`).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gaussmix.core.validation import check_int, check_real

from ..numerics.quadrature import MAX_PANELS, QuadratureRule
from ..numerics.tolerances import FIXED_POINT_MAX_ITER, FIXED_POINT_TOL, QUAD_TOL, check_tol

__all__ = [
    "SolverOptions",
    "DEFAULT_OPTIONS",
    "with_options_doc",
    "solver_options",
    "changed_options",
    "option_summaries",
    "MAX_ANDERSON_MEMORY",
]

#: the largest Anderson memory (``anderson``) the options accept
MAX_ANDERSON_MEMORY = 50

#: Documentation of the solver's options (numpydoc), one entry per field of
#: :class:`SolverOptions`, in their order: the ``%(solver_options)s`` block of the docstrings
#: of :class:`SolverOptions`, :func:`~gaussmix.theory.api.api.solve` and
#: :func:`~gaussmix.theory.solve.solver.solve_problem`.
_OPTIONS_DOC = """\
    tol : float
        Tolerance on the scaled change of every order parameter,
        ``max_i |T(x)_i - x_i| / s_i < tol`` with ``s_i = max(|x_i|, u_i)`` and ``u_i`` the
        size of the component's block capped at 1 (default
        :data:`~gaussmix.theory.numerics.tolerances.FIXED_POINT_TOL`; at most
        :data:`~gaussmix.theory.numerics.tolerances.MAX_FIXED_POINT_TOL` = 1e-2).
    max_iter : int
        Maximum number of iterations.
    quadrature : QuadratureRule, optional
        Rule for the channel expectations (``GaussHermite``, ``GradedPanels`` or
        ``SobolRQMC``; the seed of a randomised rule is its ``seed``).  Default: chosen by
        output dimension and regime (:func:`gaussmix.theory.numerics.quadrature.auto_rule`): in one
        dimension Gauss-Hermite, replaced by graded composite Gauss-Legendre panels when
        the solution is sharp (an eigenvalue of ``Q_c`` above ``SMOOTH_Q_MAX``, small
        ``lam``); graded panels in two (accurate at every ``lam``), tensor Gauss-Hermite
        in three to five, seeded randomised quasi-Monte Carlo beyond five.
    anderson : int
        Anderson memory (0: damped plain iteration).  With the sharp regime's randomised
        rule of three to five dimensions, at least ``RANDOMISED_MIXING_MEMORY`` (20) unless
        0 (:class:`~gaussmix.theory.solve.memory.AndersonMemory`, the policy's).
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
        :data:`~gaussmix.theory.numerics.tolerances.QUAD_TOL`).
    max_refine : int
        Largest number of refinements with ``auto_refine`` (0 to 10).
    throw : bool
        Raise :class:`~gaussmix.core.exceptions.ConvergenceError` when no valid fixed point is
        found (default), :class:`~gaussmix.core.exceptions.SpuriousFixedPointError` when the
        iteration reached an invalid point (NaN, or an overlap matrix that is not positive
        definite).  With ``throw=False`` a result with ``success=False`` and NaN
        observables is returned.
    continuation : bool
        First converge with a coarser rule where the rule is expensive
        (:meth:`~gaussmix.theory.numerics.quadrature.GaussHermite.coarsened`); it changes the
        starting point only, not the fixed point.
    symmetry : bool
        Use the relabelling symmetry of exchangeable clusters (balanced isotropic clusters
        with one variance and a Gram matrix ``a I + b 11^T``, cross-entropy, ridge; see
        :mod:`gaussmix.theory.problem.symmetry`): the order parameters are then equivariant, and
        one
        cluster's channel, test-error and training-error integrals stand for all ``K``.
        Ignored for other problems.
    prior_panels : int, optional
        Panels per outer dimension of the prior's own rule where it has one: the lasso /
        elastic net with two or more effective outputs (one-hot labels), whose moments are
        exact along lines and integrated across them by composite Gauss-Legendre panels in
        ``L' - 1`` dimensions (:func:`~gaussmix.theory.prior.lasso.gaussian_l1_moments`; default
        :func:`~gaussmix.theory.prior.lasso.outer_panels`: 64 for two effective outputs, 8 for
        three, 4 beyond).  The error estimate re-solves with twice the panels (and
        ``auto_refine`` doubles them while the change exceeds ``quad_tol``, up to
        :data:`~gaussmix.theory.solve.refinement.MAX_PRIOR_LINES` lines); the cost of a prior
        evaluation grows as ``prior_panels ** (L' - 1)``.  At most 512.  Ignored for other
        problems.
    fallback : bool
        Where the iteration from the cold start fails (no convergence within ``max_iter``,
        or an invalid point), solve again by homotopy in ``lam`` before giving up: from a
        larger ``lam``, where the fixed point is easy (else from a smaller one), to the
        problem's in geometric steps, each warm-started from the last
        (:class:`~gaussmix.theory.solve.policy.LambdaHomotopy`), or by homotopy in
        ``alpha`` from a larger one (:class:`~gaussmix.theory.solve.homotopy.AlphaHomotopy`,
        first where the weights were unbounded).  The result says so in
        ``params['fallback']``, and its ``n_iter`` counts every iteration spent.  With it, a
        cold iteration that stalls stops early
        (:class:`~gaussmix.theory.solve.policy.FailFast`) instead of after ``max_iter``.  A
        solve from ``init`` (a warm start) never falls back: its caller (a curve) has its
        own.
"""

#: Documentation of the inputs of a solve beside its options (``%(solve_inputs)s``): the
#: options object itself, the warm start, the callback and the secant history.
_INPUTS_DOC = """\
    options : SolverOptions, optional
        The solver's options as one validated object (default :data:`DEFAULT_OPTIONS`).
        Any option may instead, or also, be given as a keyword (``tol=1e-10``, the names
        below): keywords override the fields of ``options``.
    init : FixedPointResult or dict, optional
        Warm start (e.g. the previous point of a curve), or a dict of full-space ``Q``,
        ``M``, ``V``, ``b`` (e.g. a predictor extrapolated along a curve).
    callback : callable, optional
        Called as ``callback(iteration, residual)`` after every evaluation of the map.
    history : dict, optional
        Carries the Anderson secant history of each quadrature rule from one point of a
        curve to the next (updated in place; pass the same dict along the curve), and the
        last point's proximal points (key ``"proximal points"``), from which the next
        point's first evaluation starts.
"""

_BLOCKS = {"solver_options": _OPTIONS_DOC, "solve_inputs": _INPUTS_DOC}


def with_options_doc(obj: Any) -> Any:
    """Insert the solver's option documentation into a docstring, and the options into the
    signature of a function that takes them as keywords.

    A line ``%(solver_options)s`` becomes the entries of the fields of
    :class:`SolverOptions`, a line ``%(solve_inputs)s`` those of ``options``, ``init``,
    ``callback`` and ``history``.  A function whose ``**kwargs`` are solver options
    (:func:`solver_options`) shows them in its signature (``inspect.signature``) as
    keyword-only parameters with the fields' defaults, in place of ``**kwargs``.
    """
    doc = obj.__doc__ or ""
    for name, block in _BLOCKS.items():
        doc = doc.replace(f"    %({name})s\n", block + "\n")
    obj.__doc__ = doc
    if inspect.isfunction(obj):
        sig = inspect.signature(obj)
        params = list(sig.parameters.values())
        if params and params[-1].kind is inspect.Parameter.VAR_KEYWORD:
            expanded = [
                inspect.Parameter(
                    f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type
                )
                for f in dataclasses.fields(SolverOptions)
            ]
            obj.__signature__ = sig.replace(parameters=params[:-1] + expanded)
    return obj


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


@with_options_doc
@dataclass(frozen=True)
class SolverOptions:
    """The solver's options, validated: the one place that defines their defaults, checks
    them and documents them.

    :func:`~gaussmix.theory.api.api.solve` and :func:`~gaussmix.theory.solve.solver.solve_problem`
    take
    an options object (``options=``) or the fields as keyword arguments, which become one
    (:func:`solver_options`); curves, sweeps and the command line pass the same.
    Construction validates every field: a bad value raises ``ValueError`` / ``TypeError``
    naming the option, and nothing below re-checks it.

    Parameters
    ----------
    %(solver_options)s
    Examples
    --------
    >>> from gaussmix.theory.solve.options import SolverOptions
    >>> SolverOptions(tol=1e-10).max_iter
    3000
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
    prior_panels: int | None = None
    fallback: bool = True

    def __post_init__(self) -> None:
        checked = {
            "tol": check_tol(self.tol),
            "max_iter": check_int("max_iter", self.max_iter, low=1),
            "anderson": check_int("anderson", self.anderson, low=0, high=MAX_ANDERSON_MEMORY),
            "damping": check_real("damping", self.damping, low=0.0, high=1.0, low_open=True),
            "quad_tol": check_real("quad_tol", self.quad_tol, low=0.0),
            "max_refine": check_int("max_refine", self.max_refine, low=0, high=10),
        }
        if self.prior_panels is not None:
            checked["prior_panels"] = check_int(
                "prior_panels", self.prior_panels, low=2, high=MAX_PANELS // 2
            )  # (the estimate needs twice as many)
        for name in _FLAGS:
            checked[name] = _check_bool(name, getattr(self, name))
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        rule = self.quadrature
        if rule is not None and not isinstance(rule, QuadratureRule):
            raise TypeError(
                "quadrature must be a GaussHermite, GradedPanels or SobolRQMC rule, got "
                f"{type(rule).__name__}"
            )


#: the options that are flags (True or False)
_FLAGS = ("estimate_error", "auto_refine", "throw", "continuation", "symmetry", "fallback")
#: the names of the options, in their order
_NAMES = tuple(f.name for f in dataclasses.fields(SolverOptions))

DEFAULT_OPTIONS = SolverOptions()


def solver_options(
    options: SolverOptions | None = None,
    keywords: Mapping[str, Any] | None = None,
    *,
    caller: str = "solve",
) -> SolverOptions:
    """The one options object of a solve: ``options`` (default :data:`DEFAULT_OPTIONS`)
    with the fields named in ``keywords`` replaced, validated once.

    Parameters
    ----------
    options : SolverOptions, optional
        The base options.
    keywords : mapping, optional
        Solver options given as keywords (``{"tol": 1e-10}``).
    caller : str
        The function the keywords were given to (named in the error for an unknown one).

    Returns
    -------
    SolverOptions

    Raises
    ------
    TypeError
        ``options`` is not a :class:`SolverOptions`, or a keyword is not a solver option.
    ValueError
        An option's value is out of range (named).
    """
    if options is None:
        options = DEFAULT_OPTIONS
    elif not isinstance(options, SolverOptions):
        raise TypeError(f"options must be a gaussmix.SolverOptions, got {type(options).__name__}")
    if not keywords:
        return options
    unknown = [k for k in keywords if k not in _NAMES]
    if unknown:
        raise TypeError(
            f"{caller}() got an unexpected keyword argument {unknown[0]!r} "
            f"(the solver options are {', '.join(_NAMES)})"
        )
    return dataclasses.replace(options, **keywords)


def changed_options(options: SolverOptions) -> dict[str, Any]:
    """The fields of ``options`` that differ from :data:`DEFAULT_OPTIONS`, as keywords: what
    a caller asked for, however it spelled it (``options=`` or keywords; a keyword equal
    to its default is no request), for code that reads which options were asked for.

    >>> changed_options(solver_options(SolverOptions(tol=1e-10), {"max_iter": 3000}))
    {'tol': 1e-10}
    """
    return {
        f.name: getattr(options, f.name)
        for f in dataclasses.fields(SolverOptions)
        if getattr(options, f.name) != getattr(DEFAULT_OPTIONS, f.name)
    }


#: longest summary kept whole (a longer first sentence is cut to its main clause)
_SUMMARY_LENGTH = 100


def option_summaries() -> dict[str, str]:
    """The first sentence of each option's documentation (the block of
    :data:`SolverOptions`' docstring; one longer than 100 characters cut to its main
    clause), in plain text (Sphinx roles and literals unquoted):
    the help of the command line's solver options, so that they are documented once.

    >>> option_summaries()["max_iter"]
    'Maximum number of iterations.'
    """
    entries: dict[str, str] = {}
    name = None
    for line in _OPTIONS_DOC.splitlines():
        head = re.match(r"^    (\w+) : ", line)
        if head:
            name = head.group(1)
            entries[name] = ""
        elif name is not None:
            entries[name] += " " + line.strip()
    out = {}
    for key, text in entries.items():
        text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", text.strip())
        text = text.replace("``", "")
        first = re.split(r"(?<=[.)])\s+(?=[A-Z(])", text, maxsplit=1)[0].rstrip(".")
        if len(first) > _SUMMARY_LENGTH:  # its main clause
            first = re.split(r"; | \(|: ", first, maxsplit=1)[0]
        out[key] = first + "."
    missing = [f.name for f in dataclasses.fields(SolverOptions) if f.name not in out]
    if missing:  # pragma: no cover - a field added without its documentation
        raise AssertionError(f"SolverOptions fields without documentation: {missing}")
    return out
