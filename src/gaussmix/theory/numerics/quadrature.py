"""Quadrature rules for expectations over ``xi ~ N(0, I_m)``.

The channel asks for a rule of a given dimension; it does not know which rule it gets.  Every
rule has ``dim``, ``nodes`` (N, dim), ``weights`` (N,), :meth:`refined` (a genuinely finer rule
of the same family, for the error estimate), :meth:`coarsened` (a cheaper start) and
:meth:`describe`.  Three families:

* :class:`GaussHermite` -- a (pruned) tensor product of probabilists' Gauss-Hermite rules:
  spectrally accurate for integrands smooth on the scale of ``xi``, poor where the proximal
  map has near-kinks (small ``lam``, see :class:`GradedPanels`);
* :class:`GradedPanels` -- a tensor product of composite Gauss-Legendre rules on the truncated
  line ``[-XI_MAX, XI_MAX]`` with the Gaussian weight, on panels graded by a sinh map (narrow
  near the centre); exponentially convergent in the nodes per panel on every panel that does
  not hold a near-kink, and robust where one does (the automatic rule in one and two
  dimensions);
* :class:`SobolRQMC` -- randomised quasi-Monte Carlo: ``n_rep`` independently scrambled Sobol'
  point sets (seeded), mapped by the normal quantile; the spread of the ``n_rep`` replicate
  estimates gives a standard error (the automatic rule beyond the tensor rules).

:func:`auto_rule` is the solver's automatic choice by dimension.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import ClassVar

import numpy as np

from gaussmix.core.validation import check_int, check_real

from .tolerances import QUADRATURE_PRUNE, XI_MAX

__all__ = [
    "QuadratureRule",
    "GaussHermite",
    "GradedPanels",
    "SobolRQMC",
    "SobolTail",
    "default_rule",
    "auto_rule",
    "graded_line",
    "graded_edges",
    "composite_legendre",
    "kinked_composite_legendre",
    "MAX_ORDER",
    "MAX_PANELS",
    "MAX_RQMC_LOG2",
    "SHARP_RQMC_LOG2",
]

#: largest order: numpy's Gauss-Hermite weights overflow (NaN) above about 390 nodes
MAX_ORDER = 360

#: default number of nodes per dimension, by dimension of the integral
DEFAULT_ORDER = {1: 64, 2: 10, 3: 10, 4: 8}

#: largest number of panels per dimension of a :class:`GradedPanels` rule
MAX_PANELS = 1024
#: default panels per dimension of :class:`GradedPanels` by dimension (the first refinement
#: doubles them): measured at the cross-entropy fixed point of K = 3, lam = 1e-4 and 1e-6,
#: 16 panels of 6 nodes are accurate to ~3e-8 in the channel moments, 32 to ~2e-10, and the
#: fixed point's training loss changes by 1.4e-8 from 16 to 32 panels (grade 3).  In one
#: dimension 16 panels of 8 nodes (128): with 256 nodes the map's rounding-level noise
#: (~3e-14) kept a tight re-solve at lam = 1e3 from converging (the lambda* search test);
#: refinement adds panels where small lambda needs them
DEFAULT_PANELS = {1: 16, 2: 16}
#: nodes per panel of :class:`GradedPanels` by dimension
DEFAULT_PANEL_ORDER = {1: 8, 2: 6}
#: sinh grading of the panels: the panel width grows by ``cosh(PANEL_GRADE)`` (~10) from
#: the centre of the line to its ends, where the Gaussian weight is negligible.  Measured on
#: the K = 3 cross-entropy fixed point at lam = 1e-4: with 16 panels of 6 nodes the training
#: loss is within 1.4e-8 of the converged value with grade 3, 2.3e-6 with grade 2
PANEL_GRADE = 3.0

#: largest ``log2`` of the points per replicate of a :class:`SobolRQMC` rule
MAX_RQMC_LOG2 = 16
#: default ``log2`` of the points per replicate of :class:`SobolRQMC`, by dimension
#: (the cost of a proximal solve grows with the dimension)
DEFAULT_RQMC_LOG2 = {3: 9, 4: 9, 5: 9}
#: default for dimensions beyond :data:`DEFAULT_RQMC_LOG2`
DEFAULT_RQMC_LOG2_HIGH = 8
#: default number of independent randomisations (replicates) of :class:`SobolRQMC`
DEFAULT_RQMC_REPS = 8
#: largest dimension of an automatic tensor rule (beyond it the automatic rule is
#: :class:`SobolRQMC`)
MAX_TENSOR_DIM = 5
#: largest number of nodes a refinement of the solver's channel rule may reach
MAX_QUADRATURE_NODES = 60_000
#: ``log2`` of the points per replicate of the automatic rule of three to five dimensions in
#: the sharp regime (small ``lam``), where the tensor Gauss-Hermite rule is inaccurate *and*
#: its refinement estimate dishonest.  Measured at K = 4, Delta = 0.5, Gaussian means,
#: alpha = 4, lam = 1e-4 (symmetric reduction: one cluster): Gauss-Hermite refined to 20^3
#: nodes reports 7.8e-5 for a test error 1.2e-3 away from the graded-panel reference
#: (0.50080, spread 3e-5 over 6, 8 and 12 panels of 6 nodes per dimension, up to 3e5
#: nodes); 8 x 2**12 scrambled Sobol' points give 0.50091 with a standard error of 8.2e-5
#: (training loss 1.2e-4), in about 2 s
SHARP_RQMC_LOG2 = 12


class QuadratureRule:
    """Base of the rules for ``E[g(xi)]``, ``xi ~ N(0, I_dim)`` (see the module docstring).

    The capabilities of a family are declared here with their defaults and overridden by the
    families that have them; the solver reads them directly (:mod:`gaussmix.theory.solve.policy`
    decides with them which steps a solve takes).

    Attributes
    ----------
    dim : int
    randomised : bool
        Whether the rule is random (seeded); its error estimate is then the standard error of
        its :meth:`replicates`, not the change under refinement.
    computes_moments : bool
        Whether the rule computes the channel's moments itself (``cluster0_moments``) instead
        of being a quadrature of the proximal map at its nodes
        (:class:`~gaussmix.theory.channel.normaliser.NormaliserRule`).
    needs_symmetry : bool
        Whether the rule integrates only cluster 0's competitor-symmetric integrands of
        exchangeable clusters (:class:`~gaussmix.theory.problem.symmetry.ExchangeablePanels`), so
        that
        it serves only a solve with the relabelling symmetry.
    seed : int
        The seed of the seeded estimators of the observables at a solve with this rule (a
        randomised rule's own seed; 0 for a deterministic rule).
    fallback : QuadratureRule or None
        The rule of the integrals that a rule computing its own moments leaves to a
        quadrature (the test loss), or None.
    """

    dim: int
    randomised: ClassVar[bool] = False
    computes_moments: ClassVar[bool] = False
    needs_symmetry: ClassVar[bool] = False
    seed: int = 0
    fallback: QuadratureRule | None = None

    def _rule(self) -> tuple[np.ndarray, np.ndarray]:
        """``(nodes, weights)``, cached by the family (read-only arrays)."""
        raise NotImplementedError

    @property
    def nodes(self) -> np.ndarray:
        """Nodes, shape (N, dim)."""
        return self._rule()[0]

    @property
    def weights(self) -> np.ndarray:
        """Weights, shape (N,), summing to one."""
        return self._rule()[1]

    def refined(self) -> QuadratureRule | None:
        """A finer rule of the same family (None beyond the family's limit)."""
        raise NotImplementedError

    def coarsened(self) -> QuadratureRule | None:
        """A cheaper rule for a continuation start, or None where this one is cheap."""
        return None

    def tails(self) -> tuple[QuadratureRule, ...] | None:
        """Where each replicate of :meth:`refined` is, with equal weights, the average of
        this rule's replicate and a rule of the points it adds: those rules, one per
        replicate (nested randomised rules); None otherwise."""
        return None

    def limit(self) -> str | None:
        """Why :meth:`refined` is None (a phrase), or None if a finer rule exists."""
        return None

    def remedy(self) -> str:
        """How a user passes a finer rule of this family (for warnings)."""
        raise NotImplementedError

    def describe(self) -> str:
        """Short text for provenance."""
        raise NotImplementedError


# --------------------------------------------------------------------------- Gauss-Hermite
def _tensor(x: np.ndarray, w: np.ndarray, dim: int, prune: float) -> tuple[np.ndarray, ...]:
    """Tensor product of a one-dimensional rule ``(x, w)``, pruned and renormalised."""
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    nodes = np.stack([g.reshape(-1) for g in grids], axis=-1)
    wgrids = np.meshgrid(*([w] * dim), indexing="ij")
    weights = np.prod(np.stack([g.reshape(-1) for g in wgrids], axis=-1), axis=-1)
    if dim > 1 and prune > 0:
        keep = weights > prune * weights.max()
        nodes, weights = nodes[keep], weights[keep]
    weights = weights / weights.sum()
    nodes = np.ascontiguousarray(nodes)
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@lru_cache(maxsize=64)
def _tensor_rule(n: int, dim: int, prune: float) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return _tensor(x, w / np.sqrt(2.0 * np.pi), dim, prune)


@dataclass(frozen=True)
class GaussHermite(QuadratureRule):
    """Tensor-product Gauss-Hermite rule for ``E[g(xi)]``, ``xi ~ N(0, I_dim)``.

    Parameters
    ----------
    n : int
        Nodes per dimension.  Exact for polynomials of degree ``2n - 1`` in each variable.
    dim : int
        Dimension of ``xi``.
    prune : float
        In more than one dimension, drop tensor nodes whose weight is below
        ``prune * max(weight)`` (their total mass is negligible); weights are renormalised.
        Default :data:`~gaussmix.theory.numerics.tolerances.QUADRATURE_PRUNE`.
    """

    n: int
    dim: int = 1
    prune: float = QUADRATURE_PRUNE

    def __post_init__(self) -> None:
        check_int("quadrature order n", self.n, low=1, high=MAX_ORDER)
        check_int("quadrature dim", self.dim, low=1, high=8)

    @property
    def nodes(self) -> np.ndarray:
        """Nodes, shape (N, dim)."""
        return _tensor_rule(self.n, self.dim, self.prune)[0]

    @property
    def weights(self) -> np.ndarray:
        """Weights, shape (N,), summing to one."""
        return _tensor_rule(self.n, self.dim, self.prune)[1]

    def refined(self) -> GaussHermite | None:
        """A finer rule of the same family, used to estimate the integration error (None
        beyond ``MAX_ORDER``)."""
        step = max(2, self.n // 2) if self.dim <= 2 else 2
        if self.n + step > MAX_ORDER:
            return None
        return GaussHermite(self.n + step, self.dim, self.prune)

    def coarsened(self) -> GaussHermite | None:
        """A cheaper rule of the same family for a continuation start (a third of the
        nodes per dimension, at least 6), or None where the rule is already cheap (fewer
        than 200 nodes: the cost of an evaluation is then mostly fixed overhead)."""
        if self.weights.size < 200:
            return None
        n = max(6, self.n // 3)
        return GaussHermite(n, self.dim, self.prune) if n < self.n else None

    def limit(self) -> str | None:
        """Why no finer rule exists (``MAX_ORDER``), or None."""
        return None if self.refined() is not None else f"at most {MAX_ORDER} nodes per dimension"

    def remedy(self) -> str:
        """The advice of a warning."""
        return "pass a finer quadrature rule (quadrature=GaussHermite(n, dim))"

    def describe(self) -> str:
        """Short text for provenance."""
        return f"gauss-hermite(n={self.n}, dim={self.dim}, nodes={self.weights.size})"


# --------------------------------------------------------------------------- graded panels
def graded_line(
    panels: int, order: int, grade: float, half_width: float
) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre rule (nodes, Legendre weights, no Gaussian factor) on
    ``[-half_width, half_width]`` cut into ``panels`` panels with edges
    ``half_width sinh(grade t) / sinh(grade)``, ``t`` uniform on ``[-1, 1]``."""
    return composite_legendre(graded_edges(panels, grade, half_width), order)


def graded_edges(panels: int, grade: float, half_width: float) -> np.ndarray:
    """The panel edges of :func:`graded_line`."""
    t = np.linspace(-1.0, 1.0, panels + 1)
    return half_width * np.sinh(grade * t) / np.sinh(grade)


def composite_legendre(edges: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre rule (nodes, weights) with ``order`` nodes on each of the
    panels between consecutive ``edges``."""
    x, w = np.polynomial.legendre.leggauss(order)
    a, e = edges[:-1, None], edges[1:, None]
    return (0.5 * (a + e) + 0.5 * (e - a) * x).ravel(), (0.5 * (e - a) * w).ravel()


@lru_cache(maxsize=8)
def _leggauss(order: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(order)


def kinked_composite_legendre(
    edges: np.ndarray, kinks: list[np.ndarray], order: int, merge: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre rules, one per array of ``kinks``, made at once: the panels
    between consecutive ``edges`` (increasing) with the kinks strictly inside them added as
    edges, except a kink within ``merge`` of an edge or of the previous kink kept; ``order``
    nodes a panel.  Rule ``j`` is :func:`composite_legendre` of those edges, to the bit
    (the same operations on each panel), without a pass of numpy calls per rule.

    Returns
    -------
    x, w : ndarray (N,)
        The nodes and weights of every rule, rule after rule.
    sizes : ndarray of int (len(kinks),)
        The nodes of each rule.
    """
    J, E = len(kinks), edges.size
    k = np.concatenate(kinks) if J else np.zeros(0)
    owner = np.repeat(np.arange(J), [a.size for a in kinks])
    keep = (k > edges[0] + merge) & (k < edges[-1] - merge)
    k, owner = k[keep], owner[keep]
    order_ = np.lexsort((k, owner))  # (each rule's kinks sorted, without repeats)
    k, owner = k[order_], owner[order_]
    new = np.ones(k.size, dtype=bool)
    new[1:] = (owner[1:] != owner[:-1]) | (k[1:] != k[:-1])
    k, owner = k[new], owner[new]
    i = np.searchsorted(edges, k)  # (the nearest edge is a neighbour in the sorted edges)
    lo, hi = edges[np.maximum(i - 1, 0)], edges[np.minimum(i, E - 1)]
    away = np.minimum(np.abs(k - lo), np.abs(k - hi)) > merge
    k, owner = k[away], owner[away]
    apart = np.ones(k.size, dtype=bool)  # (from the previous kink kept)
    apart[1:] = (owner[1:] != owner[:-1]) | (k[1:] - k[:-1] > merge)
    k, owner = k[apart], owner[apart]
    cut = np.concatenate([np.tile(edges, J), k])
    at = np.concatenate([np.repeat(np.arange(J), E), owner])
    order_ = np.lexsort((cut, at))
    cut, at = cut[order_], at[order_]
    panel = at[1:] == at[:-1]  # (consecutive edges of one rule)
    xg, wg = _leggauss(order)
    a, e = cut[:-1][panel, None], cut[1:][panel, None]
    x = (0.5 * (a + e) + 0.5 * (e - a) * xg).ravel()
    w = (0.5 * (e - a) * wg).ravel()
    return x, w, order * np.bincount(at[1:][panel], minlength=J)


@lru_cache(maxsize=64)
def _panel_rule(
    panels: int, order: int, dim: int, grade: float, prune: float
) -> tuple[np.ndarray, np.ndarray]:
    xs, ws = graded_line(panels, order, grade, XI_MAX)
    ws = ws * np.exp(-0.5 * xs * xs) / np.sqrt(2.0 * np.pi)
    return _tensor(xs, ws, dim, prune)


#: largest dimension of a :class:`GradedPanels` rule (a tensor of composite panels)
GRADED_MAX_DIM = 3


@dataclass(frozen=True)
class GradedPanels(QuadratureRule):
    """Composite Gauss-Legendre rule for ``E[g(xi)]`` on ``[-XI_MAX, XI_MAX]^dim``.

    In each dimension the truncated line is cut into ``panels`` panels with edges
    ``XI_MAX sinh(grade t) / sinh(grade)`` for ``t`` uniform on ``[-1, 1]`` (narrowest at the
    centre), each carrying ``order`` Gauss-Legendre nodes; the weight is the Gaussian density
    times the Legendre weight.  The rule is the (pruned, renormalised) tensor product.

    Why: at small ``lam`` the proximal map of the logistic / cross-entropy loss changes regime
    over a width ``~ 1 / sqrt(Q)`` in ``xi`` (near-kinks).  Gauss-Hermite converges slowly on
    such integrands (its nodes are global polynomials); a composite rule converges
    exponentially in ``order`` on every panel without a near-kink and at a fixed algebraic
    rate on the few that hold one, and :meth:`refined` (twice the panels) is a genuinely
    finer rule of the same family, so the change under refinement is an honest estimate.
    The truncation error is ``2 Phi(-XI_MAX)`` per dimension
    (:data:`~gaussmix.theory.numerics.tolerances.XI_MAX`).

    Parameters
    ----------
    panels : int
        Panels per dimension (2 to :data:`MAX_PANELS`).
    dim : int
        Dimension of ``xi`` (1 to 3).
    order : int
        Gauss-Legendre nodes per panel (2 to 20).
    grade : float
        Grading of the panels, > 0 (near 0: uniform; default :data:`PANEL_GRADE`).
    """

    panels: int
    dim: int = 1
    order: int = 8
    grade: float = PANEL_GRADE

    def __post_init__(self) -> None:
        check_int("quadrature panels", self.panels, low=2, high=MAX_PANELS)
        check_int("quadrature dim", self.dim, low=1, high=GRADED_MAX_DIM)
        check_int("quadrature order", self.order, low=2, high=20)
        grade = check_real("quadrature grade", self.grade, low=0.0, low_open=True)
        object.__setattr__(self, "grade", grade)

    def _rule(self) -> tuple[np.ndarray, np.ndarray]:
        return _panel_rule(self.panels, self.order, self.dim, self.grade, QUADRATURE_PRUNE)

    def refined(self) -> GradedPanels | None:
        """Twice the panels (each panel split in two in ``t``), None beyond ``MAX_PANELS``."""
        if 2 * self.panels > MAX_PANELS:
            return None
        return replace(self, panels=2 * self.panels)

    def coarsened(self) -> GradedPanels | None:
        """A quarter of the panels (at least 4) where the rule has at least 2000 nodes: far
        from the fixed point (small ``lam`` from a cold start takes ~100 iterations) the
        cheap rule does the global part of the iteration (measured at K = 3, lam = 1e-4:
        0.8 s in all from 4 panels, 4.9 s from the tensor Gauss-Hermite rule, whose
        fixed point is farther away)."""
        if self.weights.size < 2000 or self.panels < 8:
            return None
        return replace(self, panels=max(4, self.panels // 4))

    def limit(self) -> str | None:
        """Why no finer rule exists (``MAX_PANELS``), or None."""
        if self.refined() is not None:
            return None
        return f"at most {MAX_PANELS} panels per dimension"

    def remedy(self) -> str:
        """The advice of a warning."""
        return "pass a finer quadrature rule (quadrature=GradedPanels(panels, dim))"

    def describe(self) -> str:
        """Short text for provenance."""
        return (
            f"graded-panels(panels={self.panels}, order={self.order}, dim={self.dim}, "
            f"nodes={self.weights.size})"
        )


# --------------------------------------------------------------------------- RQMC
def _sobol_rng_kw(sobol: type) -> str:
    """Keyword of ``qmc.Sobol``'s generator (``rng`` in recent scipy, ``seed`` before)."""
    return "rng" if "rng" in inspect.signature(sobol).parameters else "seed"


@lru_cache(maxsize=64)
def _sobol_set(dim: int, n_log2: int, seed: int, rep: int) -> np.ndarray:
    """Replicate ``rep`` of the scrambled Sobol' sets of ``seed``: ``2**n_log2`` normal points
    (the first ``2**m`` points of the set with ``n_log2 > m`` are the set of ``m``)."""
    from scipy.stats import qmc  # lazily: scipy.stats is slow to import (CLI start-up)

    rng = np.random.default_rng(np.random.SeedSequence([seed, rep]))
    u = qmc.Sobol(d=dim, scramble=True, **{_sobol_rng_kw(qmc.Sobol): rng}).random_base2(n_log2)
    eps = np.finfo(float).eps
    from scipy.special import ndtri  # lazily: the command line's start-up loads no scipy

    return ndtri(np.clip(u, eps, 1.0 - eps))


@lru_cache(maxsize=32)
def _rqmc_rule(dim: int, n_log2: int, n_rep: int, seed: int, first: int) -> tuple[np.ndarray, ...]:
    nodes = np.concatenate([_sobol_set(dim, n_log2, seed, first + r) for r in range(n_rep)])
    weights = np.full(nodes.shape[0], 1.0 / nodes.shape[0])
    nodes = np.ascontiguousarray(nodes)
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@dataclass(frozen=True)
class SobolRQMC(QuadratureRule):
    """Randomised quasi-Monte Carlo rule: ``n_rep`` scrambled Sobol' sets of ``2**n_log2``
    points each, mapped to ``N(0, I_dim)`` by the normal quantile, equal weights.

    The rule is a fixed point set given ``seed`` (common random numbers: a fixed-point
    iteration with it is a deterministic map).  Its error estimate is the standard error of
    the ``n_rep`` :meth:`replicates` (each set alone is an unbiased estimate; their spread
    over ``sqrt(n_rep)`` is the standard error of the mean).

    Parameters
    ----------
    dim : int
    n_log2 : int
        ``log2`` of the points per replicate (1 to :data:`MAX_RQMC_LOG2`).
    n_rep : int
        Number of independent randomisations (2 to 64).
    seed : int
        Seed of the scramblings (>= 0).
    first : int
        Index of the first replicate (the replicates of a rule are its sets ``first`` ...
        ``first + n_rep - 1``; :meth:`replicates` makes rules with ``n_rep = 1``).
    """

    dim: int
    n_log2: int = 10
    n_rep: int = DEFAULT_RQMC_REPS
    seed: int = 0
    first: int = 0
    randomised: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_int("quadrature dim", self.dim, low=1, high=64)
        check_int("quadrature n_log2", self.n_log2, low=1, high=MAX_RQMC_LOG2)
        check_int("quadrature n_rep", self.n_rep, low=1, high=64)
        check_int("quadrature seed", self.seed, low=0)
        check_int("quadrature first", self.first, low=0)

    @property
    def nodes(self) -> np.ndarray:
        """Nodes, shape (n_rep 2**n_log2, dim)."""
        return _rqmc_rule(self.dim, self.n_log2, self.n_rep, self.seed, self.first)[0]

    @property
    def weights(self) -> np.ndarray:
        """Equal weights, summing to one."""
        return _rqmc_rule(self.dim, self.n_log2, self.n_rep, self.seed, self.first)[1]

    def replicates(self) -> tuple[SobolRQMC, ...]:
        """The ``n_rep`` independent one-set rules whose average is this rule."""
        return tuple(replace(self, n_rep=1, first=self.first + r) for r in range(self.n_rep))

    def tails(self) -> tuple[SobolTail, ...]:
        """The points that :meth:`refined` adds to each replicate, one rule per replicate:
        replicate ``r`` of the refined rule is the average, with equal weights, of this
        rule's replicate ``r`` and tail ``r``."""
        return tuple(
            SobolTail(self.dim, self.n_log2, self.seed, self.first + r) for r in range(self.n_rep)
        )

    def refined(self) -> SobolRQMC | None:
        """Twice the points per replicate (the same sets, extended), None beyond
        ``MAX_RQMC_LOG2``."""
        if self.n_log2 + 1 > MAX_RQMC_LOG2:
            return None
        return replace(self, n_log2=self.n_log2 + 1)

    def coarsened(self) -> SobolRQMC | None:
        """An eighth of the points per replicate (at least 2**6) where there are at least
        2**12 points in all."""
        if self.weights.size < 2**12 or self.n_log2 <= 6:
            return None
        return replace(self, n_log2=max(6, self.n_log2 - 3))

    def limit(self) -> str | None:
        """Why no finer rule exists (``MAX_RQMC_LOG2``), or None."""
        if self.refined() is not None:
            return None
        return f"at most 2**{MAX_RQMC_LOG2} points per randomisation"

    def remedy(self) -> str:
        """The advice of a warning."""
        return (
            "pass a larger rule (quadrature=SobolRQMC(dim, n_log2, n_rep)) or accept the "
            "estimate with a larger quad_tol"
        )

    def describe(self) -> str:
        """Short text for provenance."""
        return (
            f"sobol-rqmc(dim={self.dim}, points=2**{self.n_log2}, replicates={self.n_rep}, "
            f"seed={self.seed}, nodes={self.weights.size})"
        )


# --------------------------------------------------------------------------- choice
@lru_cache(maxsize=32)
def _tail_rule(dim: int, n_log2: int, seed: int, rep: int) -> tuple[np.ndarray, ...]:
    nodes = np.ascontiguousarray(_sobol_set(dim, n_log2 + 1, seed, rep)[2**n_log2 :])
    weights = np.full(nodes.shape[0], 1.0 / nodes.shape[0])
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@dataclass(frozen=True)
class SobolTail(QuadratureRule):
    """The second half of a scrambled Sobol' set: points ``2**n_log2`` to ``2**(n_log2 + 1)
    - 1`` of set ``first`` of ``seed`` (:meth:`SobolRQMC.tails`), equal weights.

    Each point of a scrambled set is uniform, so the tail alone is an unbiased rule; with
    the set's first half (``SobolRQMC(dim, n_log2, 1, seed, first)``) it makes the set of
    ``2**(n_log2 + 1)`` points, whose channel integrals are the average of the two halves'.
    The error estimate of a refined randomised rule evaluates the tails only
    (:func:`~gaussmix.theory.solve.refinement.estimate_randomised`); the rule is not refined.
    """

    dim: int
    n_log2: int
    seed: int = 0
    first: int = 0
    randomised: ClassVar[bool] = True
    #: one set (as a replicate of :class:`SobolRQMC`)
    n_rep: ClassVar[int] = 1

    @property
    def nodes(self) -> np.ndarray:
        """Nodes, shape (2**n_log2, dim)."""
        return _tail_rule(self.dim, self.n_log2, self.seed, self.first)[0]

    @property
    def weights(self) -> np.ndarray:
        """Equal weights, summing to one."""
        return _tail_rule(self.dim, self.n_log2, self.seed, self.first)[1]

    def replicates(self) -> tuple[SobolTail, ...]:
        """The rule itself (one set)."""
        return (self,)

    def refined(self) -> None:
        """None: a tail is a part of a refined set, not refined itself."""
        return None

    def limit(self) -> str:
        """Why no finer rule exists."""
        return "the tail of a scrambled Sobol' set is not refined"

    def remedy(self) -> str:
        """The advice of a warning (that of the rule whose tail it is)."""
        return SobolRQMC(self.dim).remedy()

    def describe(self) -> str:
        """Short text for provenance."""
        return (
            f"sobol-tail(dim={self.dim}, points=2**{self.n_log2}..2**{self.n_log2 + 1}, "
            f"seed={self.seed}, set={self.first})"
        )


def default_rule(dim: int) -> GaussHermite:
    """The default tensor Gauss-Hermite rule of dimension ``dim`` (the family's starting
    point; the solver's automatic choice is :func:`auto_rule`)."""
    n = DEFAULT_ORDER.get(dim, 6)
    return GaussHermite(n, dim)


def auto_rule(dim: int, *, smooth: bool = False, seed: int = 0) -> QuadratureRule:
    """The solver's automatic rule for an integral of dimension ``dim``.

    * ``dim == 1``: the Gauss-Hermite rule of :func:`default_rule` where the integrand is
      ``smooth`` (spectrally accurate, the cheapest map, and the least rounding noise at
      large ``lam``), :class:`GradedPanels` otherwise (small ``lam``: near-kinks);
    * ``dim == 2``: :class:`GradedPanels` (accurate in every regime of ``lam``);
    * ``3 <= dim <= MAX_TENSOR_DIM``: the tensor :class:`GaussHermite` rule where the
      integrand is ``smooth`` (spectrally accurate); otherwise (small ``lam``: near-kinks,
      where Gauss-Hermite converges slowly and its refinement estimate is far too
      optimistic, see :data:`SHARP_RQMC_LOG2`) :class:`SobolRQMC` with ``2**SHARP_RQMC_LOG2``
      points per replicate, whose replicate standard error is honest;
    * beyond: :class:`SobolRQMC` seeded with ``seed`` (tensor rules are out of reach).

    Parameters
    ----------
    dim : int
    smooth : bool
        Whether the integrand varies on the scale of ``xi`` (the solver decides it from the
        overlaps: every eigenvalue of every ``Q_c`` at most
        :data:`~gaussmix.theory.numerics.tolerances.SMOOTH_Q_MAX`).
    seed : int
        Seed of a randomised rule.

    Returns
    -------
    QuadratureRule
    """
    dim = check_int("dim", dim, low=1)
    if dim == 1 and smooth:
        return default_rule(1)
    if dim <= 2:
        return GradedPanels(DEFAULT_PANELS[dim], dim, DEFAULT_PANEL_ORDER[dim])
    if dim <= MAX_TENSOR_DIM:
        if smooth:
            return default_rule(dim)
        return SobolRQMC(dim, SHARP_RQMC_LOG2, DEFAULT_RQMC_REPS, seed)
    n_log2 = DEFAULT_RQMC_LOG2.get(dim, DEFAULT_RQMC_LOG2_HIGH)
    return SobolRQMC(dim, n_log2, DEFAULT_RQMC_REPS, seed)
