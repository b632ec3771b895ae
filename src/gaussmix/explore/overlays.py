"""The explorer's overlays: what each one is (:class:`Overlay`) and the library calls that
compute it (:func:`overlay_steps`), run by :class:`gaussmix.explore.engine.OverlayJob` in
a background thread; and the evenly spread points of a grid (:func:`evenly`) at which the
costly overlays and the engine's coarse pass are computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .state import ExplorerState

__all__ = ["MAX_OVERLAY_POINTS", "Overlay", "evenly", "overlay_steps"]

#: largest number of alphas at which the costly overlays (lambda*, simulations) are computed
MAX_OVERLAY_POINTS = 8


@dataclass
class Overlay:
    """One overlay: rows (``x`` and values, with standard errors ``<name>_se`` for
    simulations), a single value (alpha*, lambda*), or why it is not available.

    Parameters
    ----------
    name : str
        Which overlay, one of :data:`~gaussmix.explore.OVERLAYS`: ``'bayes'``,
        ``'alpha_star'``, ``'lambda_star'`` or ``'simulation'``.
    rows : list of dict
        The overlay's points, each a dict with ``alpha`` (and ``lam``) and the values:
        ``test_error`` (``bayes``; ``lambda_star``, with ``lam`` the optimal lambda at that
        alpha) or every scalar observable of :func:`gaussmix.simulate` with its standard
        error ``<name>_se`` (``simulation``).  Empty for ``alpha_star``.
    value : float, optional
        The overlay's single number where it has one: alpha*_K (``alpha_star``); on the
        lambda axis the Bayes-optimal error at ``alpha`` (``bayes``) and lambda*
        (``lambda_star``).
    unavailable : str, optional
        The library's reason when the overlay is not defined for the state (e.g. the
        Bayes-optimal error of a non-isotropic mixture); None otherwise.
    """

    name: str
    rows: list[dict] = field(default_factory=list)
    value: float | None = None
    unavailable: str | None = None


def evenly(n: int, k: int) -> np.ndarray:
    """The indices of at most ``k`` of ``n`` points, evenly spread, both ends included."""
    return np.unique(np.round(np.linspace(0, n - 1, min(k, n))).astype(int))


def _thin(values: np.ndarray) -> list[float]:
    """At most :data:`MAX_OVERLAY_POINTS` values of the grid (:func:`evenly`)."""
    return [float(values[i]) for i in evenly(len(values), MAX_OVERLAY_POINTS)]


def overlay_steps(state: ExplorerState, point: Any, values: np.ndarray) -> list:
    """``[(name, [call(overlay), ...]), ...]``: the library calls of each overlay asked for."""
    from gaussmix.experiments.lambda_star import optimal_lambda
    from gaussmix.experiments.transition import separability_threshold
    from gaussmix.simulate.simulation import simulate
    from gaussmix.theory.limits.bayes import bayes_optimal_error

    mixture = point.mixture
    along_alpha = state.axis == "alpha"
    steps = []
    if "bayes" in state.overlays:
        alphas = [float(v) for v in values] if along_alpha else [point.alpha]

        def bayes(overlay: Overlay, alpha: float) -> None:
            err = bayes_optimal_error(mixture, alpha).test_error
            overlay.rows.append({"alpha": alpha, "test_error": float(err)})
            if not along_alpha:
                overlay.value = float(err)

        steps.append(("bayes", [_bind(bayes, a) for a in alphas]))
    if "alpha_star" in state.overlays:

        def alpha_star(overlay: Overlay) -> None:
            res = separability_threshold(mixture, evidence=False)
            overlay.value = float(res.alpha_star)

        steps.append(("alpha_star", [alpha_star]))
    if "lambda_star" in state.overlays:
        alphas = _thin(values) if along_alpha else [point.alpha]

        def lambda_star(overlay: Overlay, alpha: float) -> None:
            res = optimal_lambda(
                mixture, point.loss, alpha=alpha, **point.penalty_kw, **point.solve_kw
            )
            overlay.rows.append(
                {"alpha": alpha, "lam": float(res.lam_star), "test_error": float(res.test_error)}
            )
            if not along_alpha:
                overlay.value = float(res.lam_star)

        steps.append(("lambda_star", [_bind(lambda_star, a) for a in alphas]))
    if "simulation" in state.overlays:
        xs = _thin(values)

        def simulation(overlay: Overlay, x: float) -> None:
            lam, alpha = (point.lam, x) if along_alpha else (x, point.alpha)
            res = simulate(
                mixture,
                loss=point.loss,
                lam=lam,
                alpha=alpha,
                d=state.sim_d,
                seeds=state.sim_seeds,
                seed=0,
                **point.penalty_kw,
            )
            row: dict[str, float] = {"alpha": alpha, "lam": lam}
            for key, mean in res.mean.items():
                if np.isscalar(mean):
                    row[key] = float(mean)
                    row[f"{key}_se"] = float(res.se[key])
            overlay.rows.append(row)

        steps.append(("simulation", [_bind(simulation, x) for x in xs]))
    return steps


def _bind(func: Callable[..., None], arg: float) -> Callable[[Overlay], None]:
    return lambda overlay: func(overlay, arg)
