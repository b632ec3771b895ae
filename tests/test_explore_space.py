"""The sampler of explorer states of the explorer benchmarks (``benchmarks/_explore_space.py``,
issue 32 item 1): every state drawn is one the explorer computes, the draw is deterministic
under a seed, and it covers the whole control space the benchmark claims."""

from __future__ import annotations

import math

import pytest
from _helpers import load_benchmark

from gaussmix.explore import ExplorerState, validate
from gaussmix.explore.state import grid, setup

space = load_benchmark("_explore_space")


@pytest.fixture(scope="module")
def drawn():
    return space.sample(150, seed=3)


def test_every_state_is_valid_and_travels_by_url(drawn) -> None:
    assert len(drawn.states) == 150
    for state in drawn.states:
        assert validate(state) == {}, state
        point, values = setup(state)  # the engine's own path builds it
        assert len(values) == state.n_points == 40
        assert point.mixture.n_clusters == state.n_clusters
        # the state URL that the slowest states are printed as opens this very state
        assert ExplorerState.from_query(state.to_query()) == state


def test_deterministic_under_a_seed() -> None:
    a, b, c = space.sample(12, seed=7), space.sample(12, seed=7), space.sample(12, seed=8)
    assert a.states == b.states and a.rejected == b.rejected
    assert a.states != c.states


def test_covers_the_control_space(drawn) -> None:
    states = drawn.states
    assert {s.n_clusters for s in states} == {2, 3, 4, 5, 6}
    assert {s.penalty for s in states} == {"l2", "l1"}
    for k in (2, 3):
        losses = {s.loss for s in states if s.n_clusters == k}
        assert losses == set(space.losses_for(k)), k
    lams = [s.lam for s in states]
    assert all(1e-4 <= lam <= 1e2 for lam in lams)
    # log-uniform over six decades: both end decades reached
    assert min(lams) < 1e-3 and max(lams) > 10
    unequal = [s for s in states if s.rho is not None]
    assert 0.3 < len(unequal) / len(states) < 0.7
    for s in unequal:
        assert len(s.rho) == s.n_clusters and math.isclose(sum(s.rho), 1.0)
        assert min(s.rho) > 0 and max(s.rho) - min(s.rho) > 0
    for s in states:
        xs = grid(s)
        assert 0.01 <= xs[0] < xs[-1] <= 100.0
        assert xs[-1] / xs[0] >= space.ALPHA_RATIO * (1 - 1e-9)
    assert min(s.alpha_min for s in states) < 0.1 and max(s.alpha_max for s in states) > 10


def test_losses_per_k_follow_the_labels() -> None:
    # binary labels for K = 2 take every loss; the one-hot labels of K >= 3 only the
    # multi-output ones (logistic and hinge need +-1 labels)
    assert set(space.losses_for(2)) == {"square", "logistic", "cross-entropy", "hinge"}
    for k in (3, 6):
        assert set(space.losses_for(k)) == {"square", "cross-entropy"}


def test_means_are_the_explorer_choices() -> None:
    app = pytest.importorskip("gaussmix.explore.app")
    assert set(space.means_for(2)) == set(app.MEANS)
    assert set(space.means_for(3)) == set(app.MEANS) - {"antipodal"}


def test_refuses_a_bad_count() -> None:
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        space.sample(0)


def test_stats_nearest_rank_with_timeouts() -> None:
    # nearest rank: the 95th percentile of 1..20 is the 19th value (ceil(0.95 * 20))
    assert space.stats([float(v) for v in range(20, 0, -1)]) == (10.5, 19.0, 20.0)
    # a timeout (inf) is a time longer than any: never a NaN of an interpolation
    med, p95, top = space.stats([1.0, 2.0, 3.0, math.inf])
    assert (med, p95, top) == (2.5, math.inf, math.inf)


def test_targets_of_item_2() -> None:
    fast = [0.4] * 20
    assert space.meets("K <= 3", fast) == "yes"
    assert space.meets("K <= 3", [*fast[:19], 2.0]) == "yes"  # one in 20 above: p95 holds
    assert space.meets("K <= 3", [*fast[:18], 2.0, 2.0]) == "no"
    assert space.meets("K <= 3", [0.6] * 20) == "no"  # the median
    assert space.meets("K = 4-6", [1.9] * 10 + [math.inf] * 9) == "yes"  # no p95 target
    assert space.meets("K = 4-6", [2.1] * 10) == "no"
    assert space.meets("square / l2", fast) == "-"


def test_the_benchmarks_list_shows_the_states_max_k_times(monkeypatch, capsys) -> None:
    # `bench_explore.py --list --max-k K` lists the drawn states with at most K clusters,
    # in the order drawn: those the timed run with the same options would time
    import sys

    bench = load_benchmark("bench_explore")
    drawn = bench.sample(12, 0).states
    monkeypatch.setattr(sys, "argv", ["bench_explore.py", "--list", "--n", "12", "--max-k", "3"])
    bench.main()
    out = capsys.readouterr().out
    queries = [line.strip()[1:] for line in out.splitlines() if line.startswith("    ?")]
    expected = [s.to_query() for s in drawn if s.n_clusters <= 3]
    assert queries == expected and 0 < len(expected) < len(drawn)
    assert f"listed: the {len(expected)} states with K <= 3" in out
