"""The result of a solve, :class:`FixedPointResult` (the result protocol of
:mod:`gaussmix.core.results`, in the spirit of ``scipy.optimize.OptimizeResult``): the order
parameters of Theorem 1, the observables of Theorem 2, the integration error estimate, the
status of the iteration and the fixed point behind it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gaussmix.core.results import Result

from ..model.outputs import error_keys, summary_keys
from ..numerics.quadrature import QuadratureRule
from ..problem.problem import Problem
from .fixed_point import FixedPointState
from .iteration import IterationStatus

__all__ = ["FixedPointResult"]


@dataclass
class FixedPointResult(Result):
    """Result of :func:`~gaussmix.theory.api.api.solve`, in the spirit of
    ``scipy.optimize.OptimizeResult`` (the result protocol of :mod:`gaussmix.core.results`).

    Order parameters are in the full label space (``L`` = label dimension): ``Q``, ``V``,
    ``Qhat``, ``Vhat`` have shape (K, L, L); ``M``, ``Mhat`` (K, L); ``b`` (L,).  For the
    cross-entropy the outputs are in the gauge ``1^T h = 0`` (``Q_c 1 = 0``).

    Attributes
    ----------
    success : bool
        A valid fixed point was found within ``tol`` (``converged`` is its deprecated name;
        the JSON key and table column keep the name ``converged``).
    n_iter : int
        Iterations of the fixed-point map.
    residual : float
        Final scaled residual ``max |T(x) - x| / s``
        (:func:`~gaussmix.theory.solve.state.residual_scale`).
    message : str
        How the iteration ended, in words.
    Q, V : ndarray (K, L, L)
        The overlaps of Theorem 1: ``Q_c = W Sigma_c W^T / d`` and the response ``V_c``.
    M : ndarray (K, L)
        ``M_c = W mu_c / sqrt(d)``.
    b : ndarray (L,)
        The intercept.
    Qhat, Vhat : ndarray (K, L, L)
        The conjugate overlaps of Theorem 1 (the hats).
    Mhat : ndarray (K, L)
        The conjugate of ``M``.
    test_error, train_error, train_loss : float
        Theorem 2 (the training loss is the loss alone, without the penalty).
    test_loss : float
        The population risk of the loss alone (no penalty), ``sum_c rho_c E[loss(y_c,
        omega_c)]`` with ``omega_c ~ N(M_c + b, Q_c)`` the output on a fresh sample of cluster
        ``c`` (Theorem 2's logic; for the square loss half the test mean-squared error).
    free_energy : float
        RS free energy (eq. (168)) at the fixed point (= minimal risk per dimension).
    penalty_value : float
        ``E[r(W*)] / d``.
    integration_error : float
        Largest estimated integration error of the test error, the training error and the
        training loss (0 for closed-form channels with orthants of dimension <= 2 and priors
        in closed form; NaN if not estimated); the test loss's is in
        ``integration_errors``.
    integration_errors : dict
        The estimate for each of ``test_error``, ``train_error``, ``train_loss``,
        ``test_loss``: the change
        under a refined channel rule (for a randomised rule, the standard error across its
        independent replicates) plus the error of the final evaluation itself (the training
        error of the cross-entropy with K >= 4 uses seeded quasi-Monte Carlo), plus, for the
        lasso / elastic net with two or more effective outputs, the change under a refined
        rule of the prior's own integrals (NaN where no refined rule is affordable: five or
        more effective outputs).  The rule reached is ``params['quadrature']`` (and
        ``state.rule``; the prior's panels ``state.prior_panels``).
    nonzero_fraction : float
        Expected fraction of non-zero components of ``W*`` (1.0 for ridge).
    nonzero_fraction_support, nonzero_fraction_off_support : float
        The same on the directions where the means have non-zero / zero components (NaN if
        there are none).
    l1_norm : float
        ``||W*||_1 / d``.
    params : dict
        Provenance: the problem, ``tol``, the quadrature rule, the library version.
    status : IterationStatus or None
        Why the iteration stopped (scipy's ``status``).
    state : FixedPointState or None
        The fixed point in the effective output space, for tools that continue from it
        (implicit differentiation, warm starts).
    """

    success: bool
    n_iter: int
    residual: float
    message: str
    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    b: np.ndarray
    Qhat: np.ndarray
    Mhat: np.ndarray
    Vhat: np.ndarray
    test_error: float
    train_error: float
    train_loss: float
    test_loss: float
    free_energy: float
    penalty_value: float
    integration_error: float
    integration_errors: dict = field(default_factory=dict)
    nonzero_fraction: float = float("nan")
    nonzero_fraction_support: float = float("nan")
    nonzero_fraction_off_support: float = float("nan")
    l1_norm: float = float("nan")
    params: dict = field(default_factory=dict)
    status: IterationStatus | None = None
    state: FixedPointState | None = field(default=None, repr=False)

    @property
    def rho_test(self) -> np.ndarray | None:
        """The test priors that weight the test error and test loss
        (:attr:`gaussmix.Mixture.test_priors`: the training priors without a prior shift),
        from :attr:`params`; None if the result does not record its mixture."""
        p = self.params.get("mixture_rho_test", self.params.get("mixture_rho"))
        return None if p is None else np.asarray(p, dtype=float)

    @property
    def _state(self) -> tuple[Problem, QuadratureRule, np.ndarray] | None:
        """Deprecated: ``(problem, rule, x)`` of :attr:`state` (use ``state``)."""
        warnings.warn(
            "FixedPointResult._state is deprecated; use FixedPointResult.state",
            DeprecationWarning,
            stacklevel=2,
        )
        s = self.state
        return None if s is None else (s.problem, s.rule, s.x)

    #: attribute behind each key of :meth:`to_dict` whose name differs
    _JSON_ATTR: ClassVar[dict[str, str]] = {"converged": "success"}
    #: keys of :meth:`to_dict` beside the observables, and how each is written
    _STATUS_JSON: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "converged": bool,
        "n_iter": int,
        "residual": float,
        "Q": np.ndarray.tolist,
        "M": np.ndarray.tolist,
        "V": np.ndarray.tolist,
        "b": np.ndarray.tolist,
        "integration_error": float,
        "integration_errors": lambda errs: {k: float(v) for k, v in errs.items()},
        "message": str,
    }

    @classmethod
    def json_keys(cls) -> tuple[str, ...]:
        """Keys of :meth:`to_dict` (the ``gaussmix point --json`` contract), in order: the
        errors, the status and order parameters, the free energy, the integration errors,
        the non-zero fraction (observables from :data:`gaussmix.theory.model.outputs.OBSERVABLES`)
        and the message."""
        errors = error_keys()
        return (
            *errors,
            "converged",
            "n_iter",
            "residual",
            "Q",
            "M",
            "V",
            "b",
            "free_energy",
            "integration_error",
            "integration_errors",
            "nonzero_fraction",
            "message",
        )

    @classmethod
    @functools.cache
    def _json_plan(cls) -> tuple[tuple[str, str, Callable[[Any], Any]], ...]:
        """``(key, attribute, converter)`` of every key of :meth:`to_dict`, computed once."""
        return tuple(
            (k, cls._JSON_ATTR.get(k, k), cls._STATUS_JSON.get(k, float)) for k in cls.json_keys()
        )

    def to_dict(self) -> dict:
        """JSON-friendly dictionary (the ``gaussmix point --json`` contract,
        :meth:`json_keys`)."""
        values = self.__dict__
        return {k: conv(values[a]) for k, a, conv in self._json_plan()}

    def summary(self) -> dict:
        """Scalar observables only (a row of a learning-curve table): every registered
        observable, then the status."""
        out = {k: getattr(self, k) for k in summary_keys()}
        out.update(
            converged=self.success,
            n_iter=self.n_iter,
            residual=self.residual,
            integration_error=self.integration_error,
        )
        return out

    def to_frame(self) -> Any:
        """One row: :meth:`summary` (the row of a learning-curve table)."""
        import pandas as pd

        return pd.DataFrame([self.summary()])
