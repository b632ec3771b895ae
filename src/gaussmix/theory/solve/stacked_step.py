"""The step of a state of independent blocks (the points of a curve stacked in one state,
:mod:`gaussmix.theory.solve.batch`): its Anderson extrapolation judged block by block
(:func:`per_block`), and the step and the image's cone test made on the blocks that still
move alone (:func:`next_iterate_moving`, :func:`image_psd`), for
:func:`~gaussmix.theory.solve.iteration.iterate`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ...core.memo import IdentityMemo
from ..numerics.linalg import sym_eigvals
from ..numerics.tolerances import MIN_SHORTENED_EXTRAPOLATION, MIN_STEP_FRACTION
from .state import LogChart, invalid_blocks, is_valid_state, q_is_psd

#: an :class:`~gaussmix.theory.solve.iteration.AndersonState` (its module imports this one)
AndersonState = Any

__all__ = ["back", "image_psd", "moving_blocks", "next_iterate_moving", "per_block"]


def back(chart: LogChart | None, y: np.ndarray) -> np.ndarray:
    """The state of chart coordinates ``y`` (the identity without a chart)."""
    return y if chart is None else chart.inverse(y)


def image_psd(g: np.ndarray, r: np.ndarray, K: int, L: int, blocks: np.ndarray | None) -> bool:
    """:func:`~gaussmix.theory.solve.state.q_is_psd` of an image ``g`` (residual ``r``); of a
    stacked state of more than one output whose frozen points are valid, of its moving
    blocks alone at the whole state's scale (:func:`_frozen_part`): the same answer."""
    if blocks is not None and L > 1:
        moving = moving_blocks(r, blocks)
        if moving is not None:
            comp, _, k_live = _live_layout(blocks, moving, K, L)
            floor, frozen_valid = _frozen_part(g, comp, K, L, blocks)
            if frozen_valid:
                return q_is_psd(g[comp], k_live, L, floor)
    return q_is_psd(g, K, L)


def _frozen_part(
    x: np.ndarray, comp: np.ndarray, K: int, L: int, blocks: np.ndarray
) -> tuple[float, bool]:
    """The largest ``|eig Q|`` (at least 1) of the frozen points of a stacked state ``x``
    (the components outside ``comp``), the floor of the whole state's scale in its cone
    tests, and whether they are valid at it (then at the whole state's scale too, which is
    no smaller); remembered with the frozen components (unchanged while the same points
    stay frozen: no eigenvalues again)."""
    frozen = x[~comp]
    held = _FROZEN_PARTS.get(blocks, comp.tobytes(), lambda: [None, None])
    if held[0] is not None and np.array_equal(held[0], frozen):
        return held[1]
    k_frozen = K - int(comp[: K * L * L : L * L].sum())
    eq = sym_eigvals(frozen[: k_frozen * L * L].reshape(k_frozen, L, L))
    floor = max(1.0, float(np.abs(eq).max()))
    out = floor, is_valid_state(frozen, k_frozen, L)
    held[:] = [frozen.copy(), out]
    return out


#: the frozen points' scale (:func:`_frozen_part`) by layout, for the last few blocks arrays
#: (one memo shared by threads: the explorer solves curves at once)
_FROZEN_PARTS = IdentityMemo(8)


def moving_blocks(r: np.ndarray, blocks: np.ndarray) -> np.ndarray | None:
    """The blocks of a state of independent blocks whose residual ``r`` is not zero
    (a frozen point's is, :meth:`~gaussmix.theory.solve.batch.StackedPoints.images`), or None
    where every block moves or none does."""
    moving = np.bincount(blocks, weights=r != 0.0) > 0
    if moving.all() or not moving.any():
        return None
    return moving


def next_iterate_moving(
    y: np.ndarray,
    r: np.ndarray,
    beta: float,
    scale: np.ndarray,
    state: AndersonState,
    K: int,
    L: int,
    moving: np.ndarray,
) -> tuple[np.ndarray, AndersonState] | None:
    """The next iterate of a stacked state (no chart) made on its moving blocks alone
    (``moving``, :func:`moving_blocks`): the same iterate and pairs as on the whole state,
    at the cost of the points still iterated (a curve's slow points, iterated hundreds of
    times after the others froze, paid the whole stack's step and cone tests each time).

    A block whose residual is zero is unchanged by the block-mixed step (its ``gamma``
    solves a regular system with a zero right-hand side: zero, its step ``y`` exactly);
    each block's sums are its own components' in order whatever blocks share the step
    (:meth:`AndersonState._extrapolate_blocks`); the cone tests are the whole state's,
    their scale's floor the frozen points' largest ``|eig Q|`` (:func:`_frozen_part`):
    where the frozen points are valid at it the whole state is valid where its moving
    blocks are, and never every block leaves the cone (:func:`per_block`'s
    ``others_valid``); where not (a frozen point's rounding-level negative eigenvalue
    outside the cone once the stack's largest overlap shrank), None: the caller takes the
    whole state's way.  The stacked layout (``Q``, ``M``, ``V`` of every cluster, then
    ``b``) keeps its order on any set of whole points.  Where the whole state's mixing
    restarts, the frozen blocks' pairs are dropped too."""
    comp, sub_blocks, k_live = _live_layout(state.blocks, moving, K, L)
    floor, frozen_valid = _frozen_part(y, comp, K, L, state.blocks)
    if not frozen_valid:
        return None
    ys, rs, ss = y[comp], r[comp], scale[comp]
    sub = replace(
        state,
        dxs=tuple(d[comp] for d in state.dxs),
        dgs=tuple(d[comp] for d in state.dgs),
        blocks=sub_blocks,
    )

    def whole(x_sub: np.ndarray) -> np.ndarray:
        x_new = y.copy()
        x_new[comp] = x_sub
        return x_new

    if not state.empty and state.memory > 0:
        try:
            cand = sub.extrapolate(ys, rs, beta, ss)
            if is_valid_state(cand, k_live, L, floor):
                return whole(cand), state
            kept = per_block(ys, rs, beta, ss, cand, sub, k_live, L, None, True, floor)
            if kept is not None:
                return whole(kept[0]), replace(
                    state,
                    dxs=_put(state.dxs, kept[1].dxs, comp),
                    dgs=_put(state.dgs, kept[1].dgs, comp),
                )
            state = state.cleared()
        except np.linalg.LinAlgError:
            state = state.cleared()
    t = 1.0
    x_new = ys + beta * rs
    while t > MIN_STEP_FRACTION and not is_valid_state(x_new, k_live, L, floor):
        t *= 0.5
        x_new = ys + t * beta * rs
    return whole(x_new), state


def _put(full: tuple[np.ndarray, ...], part: tuple[np.ndarray, ...], comp: np.ndarray) -> tuple:
    """The pairs ``full`` with their components ``comp`` replaced by ``part``'s."""
    out = tuple(d.copy() for d in full)
    for o, p in zip(out, part):
        o[comp] = p
    return out


#: the last few layouts of moving blocks (:func:`_live_layout`; points freeze a few at a
#: time, and the same sub-blocks array keys :func:`_block_layout`'s own cache)
_LIVE_LAYOUTS = IdentityMemo(8)


def _live_layout(
    blocks: np.ndarray, moving: np.ndarray, K: int, L: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """The components of the moving blocks of a stacked state (``blocks``: the block of
    each component), their blocks numbered afresh in order, and their number of clusters."""

    def make() -> tuple[np.ndarray, np.ndarray, int]:
        comp = moving[blocks]
        renumber = np.cumsum(moving) - 1
        return comp, renumber[blocks[comp]], int(moving[blocks[: K * L * L : L * L]].sum())

    return _LIVE_LAYOUTS.get(blocks, (moving.tobytes(), K, L), make)


def per_block(
    y: np.ndarray,
    r: np.ndarray,
    beta: float,
    scale: np.ndarray,
    cand: np.ndarray,
    state: AndersonState,
    K: int,
    L: int,
    chart: LogChart | None,
    others_valid: bool = False,
    floor: float = 1.0,
) -> tuple[np.ndarray, AndersonState] | None:
    """The next iterate of a state of independent blocks (``state.blocks``, the points of
    a curve) whose Anderson extrapolation ``cand`` left the cone of valid states, judged
    block by block instead of dropping every block's pairs.

    A block takes the damped step ``y + beta r`` (shortened, all such blocks at once,
    until the state is valid) and loses its secant pairs (its components zeroed: its
    block of the mixing starts afresh) where its extrapolation left the cone even when
    shortened towards that step (:func:`_shortened`; a block valid there takes the
    shortened extrapolation and keeps its pairs), or where
    its largest scaled residual ``max |r| / scale`` did not decrease over the last step
    (the last pair's residual difference ``dG - dX``: an extrapolation that is not
    helping that block); every other block keeps its extrapolation and its pairs, as if
    iterated alone.  A block without pairs, or frozen (residual zero), is unchanged
    either way.  None (the caller drops every block's pairs) where every block left the
    cone (unless ``others_valid``: the blocks of a larger state, whose other blocks are
    valid, judged at its scale's ``floor``, :func:`next_iterate_moving`) or the damped
    steps do not make a valid state.

    Measured (``benchmarks/bench_curves.py --grids``, BENCHMARKS.md): the paper's sparse
    lasso curve 272 -> 60 evaluations; dropping only the pairs of the blocks that left
    the cone, with the others' extrapolation kept, left the slow points of a sweep to
    ``lam = 1e-4`` unconverged after 3000 evaluations (the stack-wide restart's damped
    steps had carried them)."""
    blocks = state.blocks
    n_blocks = int(blocks.max()) + 1
    bad = invalid_blocks(cand, K, L, blocks, n_blocks, floor)
    if bad.all() and not others_valid:
        return None
    now = _block_max(np.abs(r) / scale, blocks, n_blocks)
    before = _block_max(np.abs(r - (state.dgs[-1] - state.dxs[-1])) / scale, blocks, n_blocks)
    if L > 1:  # (one output: measured worse, :func:`_shortened`)
        cand, bad = _shortened(y, r, beta, cand, K, L, chart, blocks, bad, floor)
    restart = bad | ((now > 0) & (now >= before))
    comp = restart[blocks]
    t = 1.0
    while True:
        x_new = np.where(comp, back(chart, y + t * beta * r), cand)
        if is_valid_state(x_new, K, L, floor):
            break
        t *= 0.5
        if t <= MIN_STEP_FRACTION:
            return None
    kept = replace(
        state,
        dxs=tuple(np.where(comp, 0.0, d) for d in state.dxs),
        dgs=tuple(np.where(comp, 0.0, d) for d in state.dgs),
    )
    return x_new, kept


def _shortened(
    y: np.ndarray,
    r: np.ndarray,
    beta: float,
    cand: np.ndarray,
    K: int,
    L: int,
    chart: LogChart | None,
    blocks: np.ndarray,
    bad: np.ndarray,
    floor: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The extrapolation ``cand`` with each block that left the cone (``bad``) moved back
    towards its damped step ``d = y + beta r``, ``d + s (cand - d)`` for ``s = 1/2, 1/4,
    ...`` down to :data:`~gaussmix.theory.numerics.tolerances.MIN_SHORTENED_EXTRAPOLATION`,
    each at the first ``s`` where it is valid (the cone is convex: where ``d`` is in it, so
    is a stretch of the segment next to it); with the blocks still invalid at the last
    (which then take the damped step and drop their pairs).

    A block of the square loss at ``lam = 1.8e-4``, ``alpha = 0.71`` (K = 5, the
    explorer's sampled curve of ``bench_square_k.py``) whose one-pair extrapolation left
    the cone at every step took the damped step every time, the plain map, which moves away
    from its fixed point there: its overlaps grew to 1e34 over 3000 evaluations and the
    curve went point by point; shortened, the stacked solve converges in 38.  States of
    one output keep the damped step: the paper's sparse lasso (binary, 40 alphas), whose
    restarted blocks the damped steps carry, stalled shortened and went point by point."""
    if not bad.any():
        return cand, bad
    n_blocks = bad.size
    damped = back(chart, y + beta * r)
    s = 0.5
    while bad.any() and s >= MIN_SHORTENED_EXTRAPOLATION:
        part = np.where(bad[blocks], damped + s * (cand - damped), cand)
        still = invalid_blocks(part, K, L, blocks, n_blocks, floor)
        cand = np.where((bad & ~still)[blocks], part, cand)
        bad = bad & still
        s *= 0.5
    return cand, bad


def _block_max(a: np.ndarray, blocks: np.ndarray, n_blocks: int) -> np.ndarray:
    """The largest entry of ``a`` in each block (0 for an empty block)."""
    out = np.zeros(n_blocks)
    np.maximum.at(out, blocks, a)
    return out
