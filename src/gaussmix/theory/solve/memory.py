"""The Anderson memory of each phase of a solve: one value the solve policy declares.

How many secant pairs the Anderson mixing of a run keeps
(:class:`~gaussmix.theory.solve.iteration.AndersonState`) depends on where the run starts
and on the rule it integrates with, and is decided here once for the whole solve: the
policy (:func:`~gaussmix.theory.solve.policy.policy_for`,
:func:`~gaussmix.theory.solve.policy.policy_for_points`) declares an :class:`AndersonMemory`,
the state reads it and hands the memory of each run down to the run
(:func:`~gaussmix.theory.solve.batch_solve.run_points`), the estimate
(:func:`~gaussmix.theory.solve.batch_solve.estimate_points`, the replicates of a randomised
rule) and the prior's refinement (:func:`~gaussmix.theory.solve.refinement.refine_prior`);
no map and no iteration raises it on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..numerics.quadrature import MAX_TENSOR_DIM, QuadratureRule
from .iteration import AndersonState

__all__ = ["AndersonMemory", "Phase"]


class Phase(Enum):
    """Where a run starts, which sets its Anderson memory (:meth:`AndersonMemory.of`)."""

    #: a solve's own iteration from its start (a cold or warm start, a first phase of a
    #: continuation, the single-precision phase, the replicates of a randomised rule and its
    #: refined rule's re-solve, the homotopy's path)
    SOLVE = "solve"
    #: a run from a fixed point of a nearby map: the rule's run after a first phase, the
    #: error estimate's re-solves with a refined rule
    RESOLVE = "resolve"
    #: the re-solves of the prior's own refinement (the multi-output lasso)
    PRIOR = "prior"


@dataclass(frozen=True)
class AndersonMemory:
    """The Anderson memory of every run of a solve, by phase and rule.

    Attributes
    ----------
    solve : int
        The memory of :attr:`Phase.SOLVE` (the options' ``anderson``).
    resolve : int
        The memory of :attr:`Phase.RESOLVE`: the longer memory of a re-solve
        (:func:`~gaussmix.theory.solve.estimate.resolve_memory`: near a fixed point the
        mixing is GMRES on the linearised map, and more pairs span more of its slow
        directions) for a single point whose prior is integrated by quadrature, where it
        pays; the options' own for other points and a curve's stacked points
        (:func:`~gaussmix.theory.solve.policy.anderson_memory`).
    prior : int
        The memory of :attr:`Phase.PRIOR` (a re-solve's,
        :func:`~gaussmix.theory.solve.estimate.resolve_memory`).
    resolve_randomised : int
        The memory of :attr:`Phase.RESOLVE` with a randomised rule of at most
        :data:`~gaussmix.theory.numerics.quadrature.MAX_TENSOR_DIM` dimensions (the sharp
        regime's, whose replicates the estimate then solves from the run's pairs), where it
        exceeds :attr:`resolve` (0 keeps 0): how many of the coarser rule's pairs the run
        starts from (:meth:`starting`).
    randomised : int
        The least memory of any phase with a randomised rule of at most
        :data:`~gaussmix.theory.numerics.quadrature.MAX_TENSOR_DIM` dimensions (the sharp
        regime's rule of three to five outputs), unless the phase's is 0 (a plain damped
        iteration):
        :data:`~gaussmix.theory.numerics.tolerances.RANDOMISED_MIXING_MEMORY`.
    """

    solve: int
    resolve: int
    prior: int
    resolve_randomised: int = 0
    randomised: int = 0

    def of(self, phase: Phase, rule: QuadratureRule | None) -> int:
        """The memory of a run of ``phase`` with the channel rule ``rule`` (None: no rule)."""
        m = self._own(phase, rule)
        if 0 < m < self.randomised and _randomised_tensor(rule):
            return self.randomised
        return m

    def starting(
        self, phase: Phase, rule: QuadratureRule | None, previous: AndersonState | None
    ) -> AndersonState:
        """The secant history a run of ``phase`` with ``rule`` starts from, given the pairs
        of an earlier iteration (``previous``, or None): mixing with :meth:`of`'s memory,
        from the newest pairs up to the phase's own memory (with the sharp regime's
        randomised rule the run keeps up to :attr:`randomised` pairs as it goes, and starts
        from as many as the phase's memory keeps)."""
        start = AndersonState.init(self._own(phase, rule), previous)
        return AndersonState(start.dxs, start.dgs, self.of(phase, rule), start.log_chart)

    def _own(self, phase: Phase, rule: QuadratureRule | None) -> int:
        """The memory of ``phase`` before the randomised rule's least one."""
        if phase is Phase.SOLVE:
            return self.solve
        if phase is Phase.PRIOR:
            return self.prior
        if 0 < self.resolve < self.resolve_randomised and _randomised_tensor(rule):
            return self.resolve_randomised
        return self.resolve


def _randomised_tensor(rule: QuadratureRule | None) -> bool:
    """Whether ``rule`` is randomised and of at most ``MAX_TENSOR_DIM`` dimensions."""
    return rule is not None and rule.randomised and rule.dim <= MAX_TENSOR_DIM
