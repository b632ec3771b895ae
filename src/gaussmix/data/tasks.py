"""Tasks on real data sets: which original classes are labelled +1 and which -1, or every
class its own one-hot label.

Each task is declared once in :data:`TASKS` (name -> :class:`Task`) and looked up by name at
the edge (``load_dataset(..., task='even-odd')``).  A task names the data sets it applies to;
a binary task must put every class of those data sets on exactly one side, a one-hot task
(``kind='one-hot'``) lists every class once in ``positive`` and labels class ``c`` by the
canonical basis vector ``e_c`` of ``R^K`` (the labels it returns are the class ids; the
mixture fitted to it has the label map :meth:`gaussmix.LabelMap.onehot`).

=======================  ===============  =================================================
name                     data sets        +1 / -1
=======================  ===============  =================================================
``even-odd``             mnist, digits    even digits / odd digits
``low-high``             mnist, digits    0-4 / 5-9
``clothes-accessories``  fashion-mnist    T-shirt/top, Trouser, Pullover, Dress, Coat,
                                          Shirt / Sandal, Sneaker, Bag, Ankle boot
``ten-class``            mnist,           one-hot: class ``c`` labelled ``e_c`` (10 classes;
                         fashion-mnist,   the cross-entropy or the square loss)
                         digits
=======================  ===============  =================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.registry import Registry

__all__ = ["Task", "TASKS", "get_task"]


@dataclass(frozen=True)
class Task:
    """A binary relabelling of a multi-class data set, or its one-hot labels.

    Parameters
    ----------
    name : str
        Registry name.
    datasets : tuple of str
        Names of the data sets the task applies to.
    positive, negative : tuple of int
        Original class ids labelled +1 and -1; together they are ``0 .. n_classes - 1``,
        each exactly once.  A one-hot task lists every class in ``positive`` and none in
        ``negative``.
    description : str
        One line for people.
    kind : {'binary', 'one-hot'}
        Binary labels +1 / -1, or class ``c`` labelled ``e_c`` in ``R^K``.
    """

    name: str
    datasets: tuple[str, ...]
    positive: tuple[int, ...]
    negative: tuple[int, ...]
    description: str
    kind: str = "binary"

    def __post_init__(self) -> None:
        if self.kind not in ("binary", "one-hot"):
            raise ValueError(f"task {self.name!r}: kind must be 'binary' or 'one-hot'")
        if self.kind == "one-hot" and self.negative:
            raise ValueError(f"task {self.name!r}: a one-hot task lists its classes in positive")
        both = sorted(self.positive + self.negative)
        if both != list(range(len(both))):
            raise ValueError(
                f"task {self.name!r}: positive and negative classes must cover "
                f"0..{len(both) - 1} exactly once, got {self.positive} and {self.negative}"
            )

    @property
    def n_classes(self) -> int:
        """Number of original classes."""
        return len(self.positive) + len(self.negative)

    @property
    def is_onehot(self) -> bool:
        """Whether class ``c`` is labelled by the basis vector ``e_c`` (``kind='one-hot'``)."""
        return self.kind == "one-hot"

    @property
    def mapping(self) -> dict[int, int]:
        """Original class id -> binary label (+1 or -1), or -> itself for a one-hot task."""
        if self.is_onehot:
            return {c: c for c in range(self.n_classes)}
        return {c: (1 if c in self.positive else -1) for c in range(self.n_classes)}

    def labels(self, classes: np.ndarray) -> np.ndarray:
        """Binary labels (float64, +1 / -1) of an array of original class ids; for a one-hot
        task the class ids themselves (float64; class ``c`` stands for ``e_c``).

        Raises
        ------
        ValueError
            If a class id is outside ``0 .. n_classes - 1``.
        """
        classes = np.asarray(classes)
        if classes.size and (classes.min() < 0 or classes.max() >= self.n_classes):
            raise ValueError(
                f"task {self.name!r} maps classes 0..{self.n_classes - 1}; "
                f"got class ids in [{classes.min()}, {classes.max()}]"
            )
        table = np.array([self.mapping[c] for c in range(self.n_classes)], dtype=np.float64)
        return table[classes]


TASKS: Registry[Task] = Registry("task")
TASKS.register(
    Task(
        "even-odd",
        ("mnist", "digits"),
        positive=(0, 2, 4, 6, 8),
        negative=(1, 3, 5, 7, 9),
        description="even digits (+1) against odd digits (-1)",
    )
)
TASKS.register(
    Task(
        "low-high",
        ("mnist", "digits"),
        positive=(0, 1, 2, 3, 4),
        negative=(5, 6, 7, 8, 9),
        description="digits 0-4 (+1) against digits 5-9 (-1)",
    )
)
TASKS.register(
    Task(
        "clothes-accessories",
        ("fashion-mnist",),
        positive=(0, 1, 2, 3, 4, 6),
        negative=(5, 7, 8, 9),
        description=(
            "clothes (+1: T-shirt/top, Trouser, Pullover, Dress, Coat, Shirt) against "
            "accessories (-1: Sandal, Sneaker, Bag, Ankle boot)"
        ),
    )
)
TASKS.register(
    Task(
        "ten-class",
        ("mnist", "fashion-mnist", "digits"),
        positive=tuple(range(10)),
        negative=(),
        description="the ten classes, one-hot labels (class c labelled e_c in R^10)",
        kind="one-hot",
    )
)


def get_task(task: str | Task, dataset: str | None = None) -> Task:
    """The :class:`Task` named ``task`` (or ``task`` itself), checked against ``dataset``.

    Parameters
    ----------
    task : str or Task
        A name of :data:`TASKS` or a task.
    dataset : str, optional
        A data set the task must apply to.

    Raises
    ------
    ValueError
        Unknown name, or a task that does not apply to ``dataset``.
    """
    t = task if isinstance(task, Task) else TASKS.get(task)
    if dataset is not None and dataset not in t.datasets:
        fits = [n for n, x in TASKS.items() if dataset in x.datasets]
        raise ValueError(
            f"task {t.name!r} applies to {', '.join(t.datasets)}, not {dataset!r}; "
            f"tasks for {dataset!r}: {', '.join(fits) or 'none'}"
        )
    return t
