"""A seeded sampler of explorer states over the whole control space (issue 32 item 1).

Both runners of ``bench_explore.py`` draw their states here (the served page in headless
Chromium, and ``--in-process`` the engine's curve), with item 2's targets and the
statistics they are judged by; ``tests/test_explore_space.py`` checks that every state
drawn is one the explorer accepts.

A state is a 40-point learning curve (the alpha axis, log-spaced) with

- K uniform in 2..6;
- the loss uniform over the losses that the library accepts for K clusters with the
  explorer's automatic labels (:func:`losses_for`: every loss for K = 2, square and
  cross-entropy for K >= 3);
- the penalty ridge (``l2``) or lasso (``l1``), one half each;
- lambda log-uniform in [1e-4, 1e2], to the 4 significant digits of the lambda slider;
- cluster priors rho unequal (Dirichlet(1, ..., 1), floored at 0.02 and renormalised) with
  probability one half, else balanced;
- Delta (shared by the clusters) log-uniform in [0.1, 2];
- the means' family uniform over those that the explorer offers for K (``antipodal``
  only for K = 2);
- the alpha range: two values log-uniform in [0.01, 100], their ratio at least 4.

A state that :func:`gaussmix.explore.validate` refuses is drawn again (never counted); the
sampler reports how many were (:attr:`Sample.rejected`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gaussmix.explore import ExplorerState, validate

#: issue 32 item 2's targets of a 40-point redraw: group -> (median, 95th percentile) in
#: seconds (None: no target)
TARGETS = {"K <= 3": (0.5, 1.0), "K = 4-6": (2.0, None)}
#: the ranges drawn from
K_RANGE = (2, 6)
LAM_RANGE = (1e-4, 1e2)
DELTA_RANGE = (0.1, 2.0)
ALPHA_RANGE = (0.01, 100.0)
#: least ratio alpha_max / alpha_min of a drawn range
ALPHA_RATIO = 4.0
PENALTIES = ("l2", "l1")
#: the probability of unequal cluster priors
P_UNEQUAL_RHO = 0.5
#: the least prior of a cluster (a Dirichlet draw is floored at it, then renormalised)
RHO_FLOOR = 0.02
N_POINTS = 40
#: significant digits of a lambda drawn: those of the slider (``gaussmix.explore.app.LAM_DIGITS``)
LAM_DIGITS = 4


def losses_for(n_clusters: int) -> tuple[str, ...]:
    """The losses the library accepts for ``n_clusters`` clusters with the explorer's
    automatic labels, asked of :func:`gaussmix.explore.validate` (its own rule)."""
    from gaussmix.theory.channel.losses import LOSSES

    return tuple(
        name
        for name in LOSSES.names()
        if "loss" not in validate(ExplorerState(n_clusters=n_clusters, loss=name))
    )


def means_for(n_clusters: int) -> tuple[str, ...]:
    """The means' families the explorer offers for ``n_clusters`` clusters (its means
    control, ``gaussmix.explore.app.MEANS``; ``antipodal`` needs K = 2)."""
    return ("auto", "simplex", "gaussian", "antipodal")[: 4 if n_clusters == 2 else 3]


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(10.0 ** rng.uniform(math.log10(lo), math.log10(hi)))


def draw(rng: np.random.Generator) -> ExplorerState:
    """One state drawn from the control space (not yet validated)."""
    k = int(rng.integers(K_RANGE[0], K_RANGE[1] + 1))
    loss = str(rng.choice(losses_for(k)))
    penalty = str(rng.choice(PENALTIES))
    # to the 4 significant digits of a position of the explorer's lambda slider, so that
    # the browser benchmark reaches the very state by moving the slider
    lam = float(f"{_log_uniform(rng, *LAM_RANGE):.{LAM_DIGITS}g}")
    rho = None
    if rng.random() < P_UNEQUAL_RHO:
        p = np.maximum(rng.dirichlet(np.ones(k)), RHO_FLOOR)
        p = np.round(p / p.sum(), 4)
        p[-1] = round(1.0 - float(p[:-1].sum()), 4)
        rho = tuple(float(v) for v in p)
    delta = round(_log_uniform(rng, *DELTA_RANGE), 4)
    means = str(rng.choice(means_for(k)))
    while True:
        a, b = sorted(_log_uniform(rng, *ALPHA_RANGE) for _ in range(2))
        if b >= ALPHA_RATIO * a:
            break
    return ExplorerState(
        n_clusters=k,
        delta=(delta,),
        rho=rho,
        means=means,
        loss=loss,
        penalty=penalty,
        lam=lam,
        alpha_min=round(a, 4),
        alpha_max=round(b, 4),
        n_points=N_POINTS,
    )


@dataclass
class Sample:
    """States drawn by :func:`sample`, each accepted by :func:`gaussmix.explore.validate`."""

    states: list[ExplorerState] = field(default_factory=list)
    #: states drawn and refused by validate (drawn again)
    rejected: int = 0
    #: the first refusals, ``(query, errors)``, to show what was refused
    refusals: list[tuple[str, dict[str, str]]] = field(default_factory=list)


def sample(n: int, seed: int = 0) -> Sample:
    """``n`` valid explorer states drawn with ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    n : int
        Number of states, >= 1.
    seed : int
        Seed of the generator: the same seed gives the same states.

    Returns
    -------
    Sample
        The states, and the number of draws that validate refused.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    rng = np.random.default_rng(seed)
    out = Sample()
    while len(out.states) < n:
        state = draw(rng)
        errors = validate(state)
        if errors:
            out.rejected += 1
            if len(out.refusals) < 5:
                out.refusals.append((state.to_query(), errors))
            if out.rejected > 10 * n + 100:
                raise RuntimeError(f"validate refused {out.rejected} draws: {out.refusals}")
            continue
        out.states.append(state)
    return out


def group(state: ExplorerState) -> str:
    """The target group of issue 32 item 2: ``'K <= 3'`` or ``'K = 4-6'``."""
    return "K <= 3" if state.n_clusters <= 3 else "K = 4-6"


def label(state: ExplorerState) -> str:
    """A short description: K, loss, penalty, lambda, rho, alpha range."""
    rho = "unequal rho" if state.rho is not None else "balanced"
    return (
        f"K={state.n_clusters} {state.loss} {state.penalty} lam={state.lam:.3g} {rho} "
        f"Delta={state.delta[0]:g} {state.means} alpha {state.alpha_min:g}..{state.alpha_max:g}"
    )


def command(state: ExplorerState) -> str:
    """The command that opens the explorer at ``state`` (its state URL's fields, as
    ``gaussmix explore`` reads them from the page's query)."""
    return f"gaussmix explore  # then open http://localhost:5006/?{state.to_query()}"


def stats(seconds: list[float]) -> tuple[float, float, float]:
    """(median, 95th percentile, max) of ``seconds``; a timeout is ``inf``.  The
    percentile is the nearest rank (numpy's ``inverted_cdf``: a time that was measured,
    never an interpolation with a timeout)."""
    a = np.asarray(seconds, dtype=float)
    return (
        float(np.median(a)),
        float(np.percentile(a, 95, method="inverted_cdf")),
        float(a.max()),
    )


def meets(name: str, seconds: list[float]) -> str:
    """Whether ``seconds`` meet item 2's :data:`TARGETS` of group ``name``: ``'yes'``,
    ``'no'``, or ``'-'`` for a group without targets."""
    if name not in TARGETS:
        return "-"
    med, p95, _ = stats(seconds)
    t_med, t_p95 = TARGETS[name]
    return "yes" if med <= t_med and (t_p95 is None or p95 <= t_p95) else "no"
