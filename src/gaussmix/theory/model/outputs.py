"""The observables a result reports, each declared once.

An :class:`Observable` names a scalar that the theory computes (Theorem 2 and statistics of
the law of ``W*``) and says where it appears: whether it carries an estimated integration
error, whether finite-size simulations measure it (then with a standard error ``<name>_se``),
whether it exists only for penalties with sparse ``W*``, its axis label in figures.  Result
tables, the JSON of ``gaussmix point`` / ``simulate``, sweeps and plots take their columns
from :data:`OBSERVABLES` (in registration order) instead of keeping lists of names.
"""

from __future__ import annotations

from dataclasses import dataclass

from gaussmix.core.registry import Registry

__all__ = [
    "Observable",
    "OBSERVABLES",
    "error_keys",
    "summary_keys",
    "simulated_keys",
    "axis_label",
]


@dataclass(frozen=True)
class Observable:
    """The declaration of one observable.

    Attributes
    ----------
    name : str
        Its key in results, tables and JSON.
    description : str
        What it is (with the paper's reference).
    label : str
        Axis label for figures.
    integrated : bool
        Computed by an integral whose error is estimated (``integration_errors[name]``).
    simulated : bool
        Measured by finite-size simulations (mean over seeds and ``<name>_se``).
    sparse_only : bool
        Defined only for penalties whose ``W*`` has exact zeros (lasso, elastic net) in
        simulations and JSON output (the theory reports 1.0 for ridge).
    """

    name: str
    description: str
    label: str
    integrated: bool = False
    simulated: bool = False
    sparse_only: bool = False


#: every observable, by name, in the order of result tables
OBSERVABLES: Registry[Observable] = Registry("observable")
for _obs in (
    Observable(
        "test_error",
        "generalisation error, Theorem 2 eq. (9): P[misclassified] on a fresh sample",
        "test error",
        integrated=True,
        simulated=True,
    ),
    Observable(
        "train_error",
        "training error, Theorem 2: fraction of misclassified training samples",
        "training error",
        integrated=True,
        simulated=True,
    ),
    Observable(
        "train_loss",
        "training loss per sample, Theorem 2 (the loss alone, without the penalty)",
        "training loss",
        integrated=True,
        simulated=True,
    ),
    Observable(
        "test_loss",
        "test loss: population risk E loss(y, W x / sqrt(d) + b) of the trained estimator, "
        "the loss alone without the penalty (Theorem 2's logic; square loss: half the test "
        "mean-squared error)",
        "test loss",
        integrated=True,
        simulated=True,
    ),
    Observable(
        "free_energy",
        "replica-symmetric free energy, eq. (168) = minimal risk per dimension",
        "free energy",
    ),
    Observable("penalty_value", "E[r(W*)] / d", "penalty"),
    Observable(
        "nonzero_fraction",
        "expected fraction of non-zero components of W* (1 for ridge)",
        "non-zero fraction",
        simulated=True,
        sparse_only=True,
    ),
    Observable(
        "nonzero_fraction_support",
        "non-zero fraction on the directions carrying the means",
        "non-zero fraction (support)",
    ),
    Observable(
        "nonzero_fraction_off_support",
        "non-zero fraction on the directions without mean components",
        "non-zero fraction (off support)",
    ),
    Observable("l1_norm", "||W*||_1 / d", r"$\ell_1$ norm"),
):
    OBSERVABLES.register(_obs)


def error_keys() -> tuple[str, ...]:
    """The observables with an estimated integration error (Theorem 2's three errors and the
    test loss)."""
    return tuple(o.name for o in OBSERVABLES if o.integrated)


def summary_keys() -> tuple[str, ...]:
    """Every scalar observable, in table order (a row of a learning curve)."""
    return OBSERVABLES.names()


def simulated_keys(sparse: bool) -> tuple[str, ...]:
    """The observables a simulation reports for a penalty with (or without) sparse ``W*``."""
    return tuple(o.name for o in OBSERVABLES if o.simulated and (sparse or not o.sparse_only))


def axis_label(name: str) -> str:
    """The figure label of a registered observable (the name itself otherwise)."""
    return OBSERVABLES.get(name).label if name in OBSERVABLES else name
