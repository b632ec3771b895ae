"""The stacked step and the image's cone test made on the points still moving alone
(``gaussmix.theory.solve.stacked_step``): the same iterate, secant pairs and answers as on
the whole state, the frozen points' largest overlap the floor of the cone tests' scale."""

from __future__ import annotations

import numpy as np
import pytest

from gaussmix.theory.numerics.tolerances import PSD_RTOL
from gaussmix.theory.solve import iteration as it
from gaussmix.theory.solve import stacked_step
from gaussmix.theory.solve.iteration import AndersonState
from gaussmix.theory.solve.state import invalid_blocks, is_valid_state, pack_state, q_is_psd


def _point(rng: np.random.Generator, K0: int, L: int, size: float, low: float) -> np.ndarray:
    """One point's state: ``Q_c`` of largest eigenvalue about ``size`` whose smallest is
    ``low`` (direction ones), ``V_c`` positive definite."""
    u = np.ones(L) / np.sqrt(L)
    Qs, Vs = [], []
    for _ in range(K0):
        B = rng.standard_normal((L, L))
        P = np.eye(L) - np.outer(u, u)
        S = P @ (B @ B.T) @ P
        S *= size / np.linalg.eigvalsh(S).max()
        Qs.append(S + low * np.outer(u, u))
        C = rng.standard_normal((L, L))
        Vs.append(C @ C.T + np.eye(L))
    M = rng.standard_normal((K0, L))
    return np.array(Qs), M, np.array(Vs), rng.standard_normal(L)


def _stack(points: list, K0: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """The stacked state of ``points`` (the stacked map's layout: every cluster's ``Q``, then
    ``M``, ``V``, then each point's ``b``) and the point of each component."""
    Q = np.concatenate([p[0] for p in points])
    M = np.concatenate([p[1] for p in points])
    V = np.concatenate([p[2] for p in points])
    b = np.concatenate([p[3] for p in points])
    x = pack_state(Q, M, V, b)
    n = len(points)
    blocks = np.concatenate(
        [
            np.repeat(np.arange(n), K0 * L * L),
            np.repeat(np.arange(n), K0 * L),
            np.repeat(np.arange(n), K0 * L * L),
            np.repeat(np.arange(n), L),
        ]
    )
    return x, blocks


@pytest.mark.parametrize("L", [2, 3, 5])
def test_the_floor_is_the_scale_of_the_points_left_out(L):
    """The cone tests of part of a stacked state with ``floor`` the largest ``|eig Q|`` of
    the rest (valid at it): the whole state's answers, where the part's singular direction
    is inside or outside the whole state's tolerance and the rest's overlaps are the larger
    or the smaller."""
    rng = np.random.default_rng(L)
    K0 = 3
    for rest_size, low in [(20.0, -2.0), (20.0, -30.0), (0.3, -0.5), (0.3, -2.0), (5.0, 0.0)]:
        rest = _point(rng, K0, L, rest_size, 0.0)
        part = _point(rng, K0, L, 0.3, low * PSD_RTOL)
        whole, blocks = _stack([rest, part], K0, L)
        x = pack_state(*part)
        floor = max(1.0, float(np.abs(np.linalg.eigvalsh(rest[0])).max()))
        K = 2 * K0
        assert is_valid_state(x, K0, L, floor) == is_valid_state(whole, K, L)
        assert q_is_psd(x, K0, L, floor) == q_is_psd(whole, K, L)
        bad = invalid_blocks(x, K0, L, np.zeros(x.size, int), 1, floor)
        assert list(invalid_blocks(whole, K, L, blocks, 2)) == [False, bool(bad[0])]


def _case(
    rng: np.random.Generator,
    L: int,
    n: int,
    frozen: list[int],
    m: int,
    leave: bool,
    outside: bool = False,
):
    """A stacked state of ``n`` points, its residual (zero on the ``frozen`` points), and a
    secant history of ``m`` pairs; ``leave``: pairs that send the extrapolation of some
    moving points out of the cone; ``outside``: the first frozen point's singular direction
    at -5e-9 (outside the cone at its own scale, inside at the stack's)."""
    K0 = 2
    pts = [_point(rng, K0, L, rng.uniform(0.2, 30.0), 0.0) for _ in range(n)]
    pts[-1] = _point(rng, K0, L, 30.0, 0.0)
    if outside:
        pts[frozen[0]] = _point(rng, K0, L, 0.3, -5.0 * PSD_RTOL)
    x, blocks = _stack(pts, K0, L)
    r = 1e-2 * rng.standard_normal(x.size) * np.abs(x)
    r[np.isin(blocks, frozen)] = 0.0
    scale = np.maximum(1.0, np.abs(x))
    amp = 5.0 if leave else 1e-3
    dxs = tuple(amp * rng.standard_normal(x.size) for _ in range(m))
    dgs = tuple(d + amp * rng.standard_normal(x.size) for d in dxs)
    for d in dxs + dgs:  # (a frozen point's pairs from before its freeze stay)
        d[np.isin(blocks, frozen)] *= 0.5
    state = AndersonState(dxs, dgs, 6, False, blocks)
    return x, r, scale, state, n * K0


@pytest.mark.parametrize("L", [2, 4])
@pytest.mark.parametrize("leave", [False, True])
def test_the_step_on_the_moving_points_is_the_whole_states(L, leave, monkeypatch):
    """:func:`_next_iterate` with the frozen points left out: the same next iterate and the
    same secant pairs, to the bit, as the step on the whole state (its code path without
    the split), over random layouts (frozen points first, last, between; extrapolations
    that stay in the cone and that leave it)."""
    rng = np.random.default_rng(7 + L + 10 * leave)
    cases = [(4, [0], 1), (5, [1, 3], 3), (6, [5], 2), (7, [0, 1, 2, 6], 5), (5, [2], 2)]
    for n, frozen, m in cases:
        # (the last: a frozen point outside the cone at its own scale, the whole state's way)
        x, r, scale, state, K = _case(rng, L, n, frozen, m, leave, outside=n == 5 and m == 2)
        split = it._next_iterate(x, r, 0.7, scale, state, K, L)
        with monkeypatch.context() as mp:
            mp.setattr(it, "_moving_blocks", lambda *a: None)
            whole = it._next_iterate(x, r, 0.7, scale, state, K, L)
        np.testing.assert_array_equal(split[0], whole[0])
        assert len(split[1].dxs) == len(whole[1].dxs)
        for a, b in zip(split[1].dxs + split[1].dgs, whole[1].dxs + whole[1].dgs):
            np.testing.assert_array_equal(a, b)
        comp = np.isin(state.blocks, frozen)
        np.testing.assert_array_equal(split[0][comp], x[comp])  # (frozen: unchanged)
        g = x + r
        assert stacked_step.image_psd(g, r, K, L, state.blocks) == q_is_psd(g, K, L)


@pytest.mark.parametrize("L", [2, 4])
def test_an_extrapolation_outside_the_cone_is_shortened_towards_the_damped_step(L):
    """``stacked_step._shortened``: a block whose extrapolation leaves the cone takes the
    first point ``d + s (c - d)`` (``s = 1/2, 1/4, ...``) of the segment from its damped step
    ``d`` that is valid, the point the cone test finds by bisecting that segment; blocks
    inside keep their extrapolation; a block whose damped step itself is outside stays
    marked, its extrapolation unchanged."""
    rng = np.random.default_rng(L)
    K0 = 2
    points = [_point(rng, K0, L, 1.0, 0.5) for _ in range(3)]
    y, blocks = _stack(points, K0, L)
    r = np.zeros_like(y)  # the damped step y + beta r is y: valid
    cand = y.copy()
    n = K0 * L * L
    u = np.ones(L) / np.sqrt(L)
    # block 0: Q of its first cluster pushed out of the cone along u by 4 (eigenvalue
    # 0.5 - 4 = -3.5): the segment from y re-enters at s <= 0.5 / 4, so s = 1/8
    cand[:n][: L * L] -= 4.0 * np.outer(u, u).ravel()
    # block 2: its damped step itself outside (r moves y out), its extrapolation too
    r[2 * n : 2 * n + L * L] = -10.0 * np.outer(u, u).ravel()
    cand[2 * n : 2 * n + L * L] -= 10.0 * np.outer(u, u).ravel()
    bad = invalid_blocks(cand, 3 * K0, L, blocks, 3)
    assert bad.tolist() == [True, False, True]
    out, still = stacked_step._shortened(y, r, 1.0, cand, 3 * K0, L, None, blocks, bad, 1.0)
    assert still.tolist() == [False, False, True]
    expect = cand.copy()
    expect[blocks == 0] = y[blocks == 0] + 0.125 * (cand - y)[blocks == 0]
    np.testing.assert_array_equal(out[blocks != 0], cand[blocks != 0])
    np.testing.assert_allclose(out[blocks == 0], expect[blocks == 0], rtol=0, atol=1e-15)
    assert not invalid_blocks(out, 3 * K0, L, blocks, 3)[:2].any()
