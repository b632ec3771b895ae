"""Deterministic quadrature rules for expectations over ``xi ~ N(0, I_m)``.

The channel asks for a rule of a given dimension; it does not know which rule it gets.
:class:`GaussHermite` is a (pruned) tensor product of probabilists' Gauss-Hermite rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from gaussmix.core.validation import check_int

from .tolerances import QUADRATURE_PRUNE

__all__ = ["GaussHermite", "default_rule", "MAX_ORDER"]

#: largest order: numpy's Gauss-Hermite weights overflow (NaN) above about 390 nodes
MAX_ORDER = 360

#: default number of nodes per dimension, by dimension of the integral
DEFAULT_ORDER = {1: 64, 2: 10, 3: 10, 4: 8}


@lru_cache(maxsize=64)
def _tensor_rule(n: int, dim: int, prune: float) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / np.sqrt(2.0 * np.pi)
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    nodes = np.stack([g.reshape(-1) for g in grids], axis=-1)
    wgrids = np.meshgrid(*([w] * dim), indexing="ij")
    weights = np.prod(np.stack([g.reshape(-1) for g in wgrids], axis=-1), axis=-1)
    if dim > 1 and prune > 0:
        keep = weights > prune * weights.max()
        nodes, weights = nodes[keep], weights[keep]
    weights = weights / weights.sum()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


@dataclass(frozen=True)
class GaussHermite:
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
        Default :data:`~gaussmix.theory.tolerances.QUADRATURE_PRUNE`.
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

    def describe(self) -> str:
        """Short text for provenance."""
        return f"gauss-hermite(n={self.n}, dim={self.dim}, nodes={self.weights.size})"


def default_rule(dim: int) -> GaussHermite:
    """The default rule for an integral of dimension ``dim``."""
    n = DEFAULT_ORDER.get(dim, 6)
    return GaussHermite(n, dim)
