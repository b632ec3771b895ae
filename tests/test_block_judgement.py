"""The judgement of an Anderson extrapolation of a stacked state (the points of a curve as
independent blocks) that leaves the cone of valid states: point by point
(``stacked_step.per_block``), not by dropping every point's secant pairs (issue 31, item 5)."""

from __future__ import annotations

import numpy as np
import pytest

from gaussmix.theory.solve import iteration
from gaussmix.theory.solve.fixed_point import _layout
from gaussmix.theory.solve.iteration import AndersonState
from gaussmix.theory.solve.state import invalid_blocks, is_valid_state, pack_state


def _point_state(rng: np.random.Generator, K0: int, L: int) -> tuple[np.ndarray, ...]:
    """A valid point's ``(Q, M, V, b)``: positive-definite overlaps."""
    A = rng.normal(size=(K0, L, L))
    B = rng.normal(size=(K0, L, L))
    Q = A @ A.transpose(0, 2, 1) + 0.5 * np.eye(L)
    V = B @ B.transpose(0, 2, 1) + 0.5 * np.eye(L)
    return Q, rng.normal(size=(K0, L)), V, rng.normal(size=L)


def _stack(parts: list[tuple[np.ndarray, ...]]) -> np.ndarray:
    return pack_state(*(np.concatenate([p[i] for p in parts]) for i in range(4)))


@pytest.mark.parametrize(("K0", "L"), [(1, 1), (2, 1), (3, 2)])
def test_the_invalid_blocks_are_the_points_that_leave_the_cone(K0: int, L: int) -> None:
    # each point alone valid or not (an overlap with a clearly negative eigenvalue, a
    # non-finite entry, the zero estimator): the stacked state's marked blocks are the
    # invalid points, and the state is valid exactly when none is marked
    rng = np.random.default_rng(7)
    P = 6
    blocks = _layout(P, K0, L, False)[3]
    for trial in range(20):
        parts, expect = [], []
        for _ in range(P):
            Q, M, V, b = _point_state(rng, K0, L)
            kind = rng.integers(5)
            if kind == 1:  # Q_c with a negative eigenvalue
                Q[rng.integers(K0)] -= (np.linalg.eigvalsh(Q).max() + 0.5) * np.eye(L)
            elif kind == 2:  # V_c not positive definite
                V[rng.integers(K0)] -= (np.linalg.eigvalsh(V).max() + 0.5) * np.eye(L)
            elif kind == 3:  # not finite
                M[0, 0] = np.nan
            elif kind == 4:  # the zero estimator of one cluster: valid
                c = rng.integers(K0)
                Q[c], M[c], V[c] = 0.0, 0.0, 0.0
            parts.append((Q, M, V, b))
            alone = pack_state(Q, M, V, b)
            expect.append(not is_valid_state(alone, K0, L))
            assert expect[-1] == (kind in (1, 2, 3))
        x = _stack(parts)
        bad = invalid_blocks(x, P * K0, L, blocks, P)
        assert bad.tolist() == expect, trial
        assert is_valid_state(x, P * K0, L) == (not bad.any())


def _three_points(leave: tuple[int, ...]):
    """A stacked state of three one-cluster, one-output points and one pair of history
    whose residual difference ``dG - dX = r - r_prev`` says that point 0's residual
    decreased (from 3 r), point 1's too (from 2 r) and point 2's grew (from r / 2).  With
    one pair, a point's extrapolation moves it by about ``-dX / (1 - c)`` for
    ``r_prev = c r``: ``dX`` is set so that the extrapolated ``V`` of the points ``leave``
    falls about 5 below their ``V = 1``, leaving the cone, while every other component
    and every damped step stays in it (checked)."""
    rng = np.random.default_rng(11)
    P, beta = 3, 1.0
    blocks = _layout(P, 1, 1, False)[3]
    c = np.array([3.0, 2.0, 0.5])
    r = rng.uniform(0.5, 1.0, blocks.size)
    dx = 0.1 * rng.normal(size=blocks.size)
    v = np.arange(2 * P, 3 * P)  # (each point's V)
    for j in leave:
        dx[v[j]] = 5.0 * (1.0 - c[j])
    dg = dx + r - r * c[blocks]
    state = AndersonState((dx,), (dg,), 3, False, blocks)
    offset = state.extrapolate(np.zeros_like(r), r, beta, np.ones_like(r))  # cand - y
    y = np.abs(offset) + 2.0
    y[v[list(leave)]] = 1.0
    cand = y + offset
    assert invalid_blocks(cand, P, 1, blocks, P).tolist() == [j in leave for j in range(P)]
    assert is_valid_state(y + beta * r, P, 1)
    return y, r, beta, state, blocks


def test_only_the_points_that_leave_the_cone_or_grew_lose_their_pairs() -> None:
    y, r, beta, state, blocks = _three_points((1,))
    scale = np.ones_like(y)  # (the scale of _three_points' offsets)
    x, kept = iteration._next_iterate(y, r, beta, scale, state, 3, 1)
    assert is_valid_state(x, 3, 1)
    p0, restarted = blocks == 0, blocks != 0
    # point 0 (residual decreasing) keeps its extrapolation, the one it takes alone, and
    # its pairs
    alone = AndersonState((state.dxs[0][p0],), (state.dgs[0][p0],), 3)
    np.testing.assert_allclose(x[p0], alone.extrapolate(y[p0], r[p0], beta, scale[p0]))
    assert np.array_equal(kept.dxs[0][p0], state.dxs[0][p0])
    assert np.array_equal(kept.dgs[0][p0], state.dgs[0][p0])
    # point 1 (left the cone) and point 2 (its residual grew) take the damped step and
    # start their mixing afresh; the history keeps its blocks
    assert np.array_equal(x[restarted], (y + beta * r)[restarted])
    assert not kept.dxs[0][restarted].any() and not kept.dgs[0][restarted].any()
    assert kept.blocks is blocks and len(kept.dxs) == 1


def test_a_stack_whose_every_point_leaves_the_cone_drops_every_pair() -> None:
    y, r, beta, state, blocks = _three_points((0, 1, 2))
    x, kept = iteration._next_iterate(y, r, beta, np.ones_like(y), state, 3, 1)
    assert kept.empty and kept.blocks is blocks
    assert np.array_equal(x, y + beta * r) and is_valid_state(x, 3, 1)


def test_a_single_state_that_leaves_the_cone_drops_its_pairs() -> None:
    # one point (no blocks): as before, the history dropped and the damped step taken
    y, r, beta, state, blocks = _three_points((0,))
    p0 = blocks == 0
    single = AndersonState((state.dxs[0][p0],), (state.dgs[0][p0],), 3)
    x, kept = iteration._next_iterate(y[p0], r[p0], beta, np.ones(4), single, 1, 1)
    assert kept.empty and np.array_equal(x, (y + beta * r)[p0])
