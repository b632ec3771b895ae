"""Warm starts of the proximal solves across channel rules.

Nested randomised rules: a replicate of a randomised channel rule is a block of the rule's
nodes, and the refined rule extends each replicate's set, so their proximal solves can start
at the rule's proximal points where the points are the same (the randomised estimate of
:mod:`gaussmix.theory.solve.refinement`).  Deterministic rules and their refinements
(:func:`nearest_warm`): each node of the finer rule starts at the proximal point of the
coarser rule's nearest node, through the channel's predictor; of a two-dimensional tensor
rule (:func:`linear_warm`), at the bilinear interpolation of its cell's.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..channel.channel import ProxWarmStart
from ..numerics.quadrature import QuadratureRule

__all__ = [
    "linear_nodes",
    "linear_warm",
    "nearest_nodes",
    "nearest_warm",
    "nested_warm",
    "refined_blocks",
    "refined_warm",
    "replicate_blocks",
]


@lru_cache(maxsize=16)
def nearest_nodes(coarse: QuadratureRule, fine: QuadratureRule) -> np.ndarray:
    """The index of the node of the rule ``coarse`` nearest to each node of ``fine`` (a k-d
    tree, once per pair of rules: rules are frozen values): the warm start of a rule's
    first evaluation from another's (:func:`nearest_warm`,
    :meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.warm_from`)."""
    from scipy.spatial import cKDTree  # lazily: the command line's start-up loads no scipy

    return cKDTree(coarse.nodes).query(fine.nodes)[1]


def nearest_warm(
    warm: ProxWarmStart | None, rule: QuadratureRule, target: QuadratureRule
) -> ProxWarmStart | None:
    """The warm start of the proximal solves with the rule ``target`` from ``warm``, the last
    evaluation with ``rule`` (None where it is not of ``rule``): each node of ``target``
    starts from the proximal point of ``rule``'s nearest node (as
    :meth:`~gaussmix.theory.solve.fixed_point.FixedPointMap.warm_from` does for a curve's points),
    through the predictor of the evaluation
    (:func:`~gaussmix.theory.channel.channel.channel_evaluation`: the node's ``f = V^{-1}
    (h - omega)`` kept, mapped through the new node and metric), which is smooth in the node
    away from the loss's kinks.  A start only: the proximal points solve to the same
    stationarity tolerance from any start.

    For the refined rule of an error estimate
    (:func:`~gaussmix.theory.solve.batch_solve.estimate_points`), whose nodes interleave the
    coarser rule's.  Measured on K = 3 cross-entropy, alpha = 2 (CPU medians of the refined
    rule's channel at the solve's fixed point): ``lam = 0.01`` (23648 nodes from 15173)
    8.9 ms cold, 5.7 ms from the nearest nodes; ``lam = 1`` (34604 from 8536) 8.9 -> 8.2
    ms, the proximal map being smooth there."""
    if warm is None or warm.key[0] != rule:
        return None
    k, n0, L = warm.key[1]
    if rule.nodes.shape != (n0, target.nodes.shape[1]):
        return None
    of = nearest_nodes(rule, target)
    h, omega = (np.take(a, of, axis=1) for a in (warm.h, warm.omega))
    return ProxWarmStart((target, (k, of.size, L)), h, omega, warm.V)


#: the largest ratio of a two-dimensional rule's tensor grid (its distinct coordinates' product)
#: to its nodes for which :func:`linear_nodes` interpolates within its cells (a pruned tensor
#: product keeps most of its grid: GradedPanels 8536 of 94 x 94)
GRID_FILL = 4


@lru_cache(maxsize=16)
def linear_nodes(coarse: QuadratureRule, fine: QuadratureRule) -> tuple[np.ndarray, np.ndarray]:
    """Each node of the rule ``fine`` as a bilinear combination of the four nodes of the
    two-dimensional rule ``coarse`` at the corners of its cell: ``(index, weight)``, each
    ``(n_fine, 4)``, weights summing to one (once per pair of rules, as
    :func:`nearest_nodes`).  The cells are those of the tensor grid of ``coarse``'s
    coordinates (a pruned tensor product,
    :class:`~gaussmix.theory.numerics.quadrature.GradedPanels`); a node whose cell lacks a
    corner (pruned) or lies outside the grid takes the nearest node alone (index repeated,
    weight one); a rule whose grid would hold more than :data:`GRID_FILL` times its nodes
    (not a tensor product) takes the nearest node at every node."""
    xi, z = coarse.nodes, fine.nodes
    if xi.shape[1] != 2 or z.shape[1] != 2:
        raise ValueError("linear_nodes interpolates between two-dimensional rules")
    axes = [np.unique(xi[:, j]) for j in range(2)]
    if axes[0].size * axes[1].size > GRID_FILL * xi.shape[0]:  # (no tensor grid: the nearest)
        index = np.repeat(nearest_nodes(coarse, fine)[:, None], 4, axis=1)
        return index, np.repeat([[1.0, 0.0, 0.0, 0.0]], z.shape[0], axis=0)
    grid = np.full((axes[0].size, axes[1].size), -1, dtype=np.intp)
    grid[np.searchsorted(axes[0], xi[:, 0]), np.searchsorted(axes[1], xi[:, 1])] = np.arange(
        xi.shape[0]
    )
    lo, t = [], []
    for j, a in enumerate(axes):
        if a.size < 2:
            i = np.zeros(z.shape[0], dtype=np.intp)
            lo.append(i)
            t.append(np.full(z.shape[0], -1.0))  # (no cell: the nearest node)
            continue
        i = np.clip(np.searchsorted(a, z[:, j], side="right") - 1, 0, a.size - 2)
        lo.append(i)
        t.append((z[:, j] - a[i]) / (a[i + 1] - a[i]))
    i0, i1 = lo
    cx = np.minimum(i0 + 1, axes[0].size - 1)
    cy = np.minimum(i1 + 1, axes[1].size - 1)
    index = np.stack([grid[i0, i1], grid[cx, i1], grid[i0, cy], grid[cx, cy]], axis=1)
    tx, ty = t
    weight = np.stack([(1 - tx) * (1 - ty), tx * (1 - ty), (1 - tx) * ty, tx * ty], axis=1)
    inside = (index >= 0).all(axis=1) & (tx >= 0) & (tx <= 1) & (ty >= 0) & (ty <= 1)
    near = nearest_nodes(coarse, fine)[~inside]
    index[~inside] = near[:, None]
    weight[~inside] = (1.0, 0.0, 0.0, 0.0)
    return index, weight


def linear_warm(
    warm: ProxWarmStart | None, rule: QuadratureRule, target: QuadratureRule
) -> ProxWarmStart | None:
    """:func:`nearest_warm`, with each node of ``target`` inside a cell of the tensor grid of
    the two-dimensional rule ``rule`` started from the bilinear interpolation of the cell's
    four proximal points and nodes (:func:`linear_nodes`; the predictor's ``f = V^{-1}
    (h - omega)`` is linear in both, so it is interpolated too), the others from the nearest
    node; rules of another dimension as :func:`nearest_warm`.  A start only: the proximal
    points solve to the same stationarity tolerance from any start.

    The first evaluation of the refined rule of an error estimate (K = 3 cross-entropy,
    34604 nodes from 8536, at the predicted start): measured on four lasso points of
    ``benchmarks/bench_lasso_k3.py`` (seeds 0 #28, 1 #4, 2 #28, 0 #8), 27-30, 20, 30 and 27
    ms of CPU from the nearest nodes, 17-18, 16-17, 17-18 and 17-18 ms from the cells, against
    13-14 ms for an evaluation warm from the same rule's proximal points at the same state
    (the floor) and 24-75 ms cold."""
    if warm is None or warm.key[0] != rule:
        return None
    k, n0, L = warm.key[1]
    if rule.nodes.shape != (n0, target.nodes.shape[1]):
        return None
    if rule.nodes.shape[1] != 2:
        return nearest_warm(warm, rule, target)
    index, weight = linear_nodes(rule, target)
    h, omega = (_interpolated(a, index, weight) for a in (warm.h, warm.omega))
    return ProxWarmStart((target, (k, index.shape[0], L)), h, omega, warm.V)


def _interpolated(a: np.ndarray, index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``sum_c weight[n, c] a[:, index[n, c]]`` of an array ``(k, n0, L)``: ``(k, n, L)``."""
    out = np.take(a, index[:, 0], axis=1) * weight[None, :, 0, None]
    for c in range(1, index.shape[1]):
        out += np.take(a, index[:, c], axis=1) * weight[None, :, c, None]
    return out


def nested_warm(
    warm: ProxWarmStart | None,
    rule: QuadratureRule,
    target: QuadratureRule,
    blocks: list[tuple[slice, slice]],
) -> ProxWarmStart | None:
    """The warm start of the proximal solves with the rule ``target`` from ``warm``, the last
    evaluation with ``rule`` (None where it is not of ``rule``), where ``target``'s nodes
    contain ``rule``'s: each pair of ``blocks`` is a slice of ``target``'s nodes and the
    slice of ``rule``'s that are the same points (checked: None where they are not).
    Those nodes start at ``rule``'s proximal points, through the predictor of the
    evaluation (:func:`~gaussmix.theory.channel.channel.channel_evaluation`), the others
    at the node itself (a cold start).  A start only: the proximal points solve to the
    same stationarity tolerance from any start.

    The nested randomised rules: a replicate is a block of its rule
    (:meth:`~gaussmix.theory.numerics.quadrature.SobolRQMC.replicates`), and the refined rule
    extends each replicate's set (:meth:`~gaussmix.theory.numerics.quadrature.SobolRQMC.refined`).
    Measured on isotropic K = 10 cross-entropy (``lam = 1e-2``, alpha = 10): a replicate's
    first evaluation 34-43 ms of CPU cold, 13-17 ms warm."""
    if warm is None or warm.key[0] != rule:
        return None
    k, _, L = warm.key[1]
    n = target.weights.size
    h, omega = np.zeros((k, n, L)), np.zeros((k, n, L))
    for into, of in blocks:
        if not np.array_equal(target.nodes[into], rule.nodes[of]):
            return None
        h[:, into], omega[:, into] = warm.h[:, of], warm.omega[:, of]
    return ProxWarmStart((target, (k, n, L)), h, omega, warm.V)


def replicate_blocks(rule: QuadratureRule, r: int, n_rep: int) -> list[tuple[slice, slice]]:
    """:func:`nested_warm`'s blocks of replicate ``r`` of the ``n_rep`` of ``rule``: the
    ``r``-th block of its nodes."""
    n = rule.weights.size // n_rep
    return [(slice(0, n), slice(r * n, (r + 1) * n))]


def refined_warm(
    warm: ProxWarmStart | None,
    tails: list[ProxWarmStart | None],
    rule: QuadratureRule,
    finer: QuadratureRule,
) -> ProxWarmStart | None:
    """The proximal points of the refined randomised rule ``finer`` from those of ``rule``
    (``warm``) and of each of its tails (``tails``,
    :meth:`~gaussmix.theory.numerics.quadrature.SobolRQMC.tails`), all made at one state:
    replicate ``r`` of ``finer`` is ``rule``'s block ``r`` followed by tail ``r``
    (:func:`refined_blocks`); None where one of them is missing or of another rule."""
    n_rep = len(tails)
    if warm is None or warm.key[0] != rule or any(t is None for t in tails):
        return None
    k, _, L = warm.key[1]
    n = rule.weights.size // n_rep
    if any(t.key != (tail, (k, n, L)) for t, tail in zip(tails, rule.tails())):
        return None
    h, omega = np.empty((k, 2 * n * n_rep, L)), np.empty((k, 2 * n * n_rep, L))
    for r, t in enumerate(tails):
        h[:, 2 * r * n : (2 * r + 1) * n] = warm.h[:, r * n : (r + 1) * n]
        omega[:, 2 * r * n : (2 * r + 1) * n] = warm.omega[:, r * n : (r + 1) * n]
        h[:, (2 * r + 1) * n : (2 * r + 2) * n] = t.h
        omega[:, (2 * r + 1) * n : (2 * r + 2) * n] = t.omega
    return ProxWarmStart((finer, (k, h.shape[1], L)), h, omega, warm.V)


def refined_blocks(
    rule: QuadratureRule, finer: QuadratureRule, n_rep: int
) -> list[tuple[slice, slice]]:
    """:func:`nested_warm`'s blocks of the refined randomised rule ``finer``: each of its
    ``n_rep`` replicates begins with ``rule``'s."""
    n, m = rule.weights.size // n_rep, finer.weights.size // n_rep
    return [(slice(r * m, r * m + n), slice(r * n, (r + 1) * n)) for r in range(n_rep)]
