"""The label map of a mixture: the L-dimensional label ``y_c`` of each of its K clusters.

:class:`LabelMap` holds the labels, :data:`LABEL_MAPS` names the built-in maps
(``'onehot'``, ``'binary'``), :func:`infer_n_clusters` is the one place that infers K, and
:func:`labels_from_data` reads the label map of
:meth:`~gaussmix.theory.model.mixture.Mixture.from_data`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gaussmix.core.exceptions import ArgumentError
from gaussmix.core.registry import Registry
from gaussmix.core.validation import (
    PARAMETERS,
    check_array,
    check_param,
)

__all__ = ["LabelMap", "LABEL_MAPS", "infer_n_clusters", "labels_from_data"]


@dataclass(frozen=True, eq=False)
class LabelMap:
    """Labels ``y_c`` in ``R^L`` of the K clusters.

    Parameters
    ----------
    labels : ndarray, shape (K, L)
        Row ``c`` is the label vector of cluster ``c``.  Several clusters may share a label
        (e.g. ten clusters, two classes).
    kind : {'onehot', 'binary', 'custom'}
        How the map was built; ``'onehot'`` means every row is a canonical basis vector.

    Notes
    -----
    A point is classified to the *nearest* distinct label vector: for one-hot labels that
    is ``argmax``, for binary ``+-1`` labels it is ``sign`` (Appendix B, classifier ``phi``).
    """

    labels: np.ndarray
    kind: str = "custom"
    classes: np.ndarray = field(init=False, repr=False)
    cluster_class: np.ndarray = field(init=False, repr=False)
    _is_binary: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        y = check_array("labels", self.labels)
        if y.ndim == 1:
            y = y[:, None]
        if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 1:
            raise ArgumentError("labels", f"must have shape (K, L) with K >= 2, got {y.shape}")
        classes, inverse = np.unique(y, axis=0, return_inverse=True)
        if classes.shape[0] < 2:
            raise ArgumentError("labels", "must contain at least two distinct label vectors")
        object.__setattr__(self, "labels", y)
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "cluster_class", np.asarray(inverse).reshape(-1))
        binary = y.shape[1] == 1 and set(np.unique(y).tolist()) == {-1.0, 1.0}
        object.__setattr__(self, "_is_binary", binary)
        is_onehot = bool(
            np.all((y == 0) | (y == 1)) and np.all(y.sum(axis=1) == 1) and y.shape[1] >= 2
        )
        if self.kind == "onehot" and not is_onehot:
            raise ValueError("labels of kind 'onehot' must be canonical basis vectors")
        if self.kind == "custom" and is_onehot:
            object.__setattr__(self, "kind", "onehot")

    @classmethod
    def onehot(cls, n_clusters: int) -> LabelMap:
        """One-hot labels ``y_c = e_c`` in ``R^K`` (the paper's convention)."""
        k = check_param("n_clusters", n_clusters)
        return cls(np.eye(k), kind="onehot")

    @classmethod
    def binary(cls) -> LabelMap:
        """Scalar labels for K = 2: cluster 1 -> +1, cluster 2 -> -1 (Appendix C.2)."""
        return cls(np.array([[1.0], [-1.0]]), kind="binary")

    @classmethod
    def make(cls, spec: Any, n_clusters: int) -> LabelMap:
        """Build from ``'onehot'``, ``'binary'``, an array of shape (K, L) or a LabelMap."""
        if isinstance(spec, LabelMap):
            lm = spec
        elif isinstance(spec, str):
            lm = LABEL_MAPS.get(spec)(n_clusters)
        else:
            lm = cls(np.asarray(spec, dtype=float))
        if lm.n_clusters != n_clusters:
            raise ArgumentError(
                "labels", f"has {lm.n_clusters} rows but the mixture has {n_clusters} clusters"
            )
        return lm

    @property
    def n_clusters(self) -> int:
        """Number of clusters K."""
        return int(self.labels.shape[0])

    @property
    def dim(self) -> int:
        """Label dimension L."""
        return int(self.labels.shape[1])

    @property
    def is_onehot(self) -> bool:
        """Whether every label is a canonical basis vector of R^L."""
        return self.kind == "onehot"

    @property
    def is_binary(self) -> bool:
        """Whether the labels are the scalars +1 / -1."""
        return self._is_binary

    def permute(self, perm: np.ndarray) -> LabelMap:
        """The same labels attached to clusters in the order ``perm``."""
        return LabelMap(self.labels[np.asarray(perm)], kind=self.kind)


def infer_n_clusters(
    n_clusters: int | None,
    *,
    binary: bool = False,
    default: int | None = None,
    **candidates: Any,
) -> int:
    """The number of clusters K: the one place that infers it.

    ``n_clusters`` if given (the rule of :data:`gaussmix.core.validation.PARAMETERS`), which
    the first axis of every array among ``candidates`` (``delta``, ``rho``, ``means``,
    ``labels``: a :class:`LabelMap` or an array) must match; else that common length;
    else 2 for a binary problem (``binary``, ``labels='binary'`` or ``means='antipodal'``);
    else ``default``.

    Raises
    ------
    TypeError, ValueError
        ``n_clusters`` not an integer >= 2, lengths that disagree, or nothing to infer K
        from and no ``default``.
    """
    ks: dict[str, int] = {}
    for name, value in candidates.items():
        if value is None or isinstance(value, str) or np.isscalar(value):
            continue
        if isinstance(value, LabelMap):
            ks[name] = value.n_clusters
            continue
        arr = np.asarray(value)
        if arr.ndim >= 1:
            ks[name] = int(arr.shape[0])
    if n_clusters is not None:
        k = check_param("n_clusters", n_clusters)
        ks = {"n_clusters": k, **ks}
    if not ks:
        if (
            binary
            or candidates.get("labels") == "binary"
            or candidates.get("means") == "antipodal"
        ):
            return 2
        if default is not None:
            return check_param("n_clusters", default)
        raise ValueError("cannot infer the number of clusters: pass n_clusters")
    first_name, first = next(iter(ks.items()))
    for name, value in ks.items():
        if value != first:
            raise ArgumentError(
                name, f"implies {value} clusters, but {first_name} implies {first}"
            )
    if first < 2:
        raise ValueError(
            f"{first_name} implies K={first}; n_clusters must be {PARAMETERS['n_clusters']}"
        )
    return first


#: named label maps: ``labels='onehot'`` / ``'binary'`` (a function of K)
LABEL_MAPS: Registry[Callable[[int], LabelMap]] = Registry("label map", "labels")


def _binary_labels(n_clusters: int) -> LabelMap:
    if n_clusters != 2:
        raise ArgumentError(
            "labels", f"'binary' needs exactly 2 clusters, got n_clusters={n_clusters}"
        )
    return LabelMap.binary()


LABEL_MAPS.register(LabelMap.onehot, name="onehot")
LABEL_MAPS.register(_binary_labels, name="binary")


def labels_from_data(labels: Any, ids: list) -> LabelMap:
    """The label map of :meth:`Mixture.from_data` for the sorted cluster ids ``ids``."""
    k = len(ids)
    if isinstance(labels, str) and labels == "binary":  # the ids are the +-1 labels
        if sorted(ids) != [-1, 1]:
            raise ArgumentError(
                "labels",
                f"'binary' needs the cluster ids to be exactly -1 and +1, got {ids}; "
                "pass a mapping {cluster id: +1 or -1}",
            )
        return LabelMap(np.asarray(ids, dtype=float)[:, None], kind="binary")
    if isinstance(labels, Mapping):
        keys = list(labels.keys())
        missing = [c for c in ids if c not in labels]
        extra = [c for c in keys if c not in set(ids)]
        if missing or extra:
            raise ValueError(
                f"labels must map every cluster id of y to a label: missing {missing}, "
                f"unknown {extra} (cluster ids: {ids})"
            )
        rows = [np.atleast_1d(np.asarray(labels[c], dtype=float)) for c in ids]
        if any(r.ndim != 1 for r in rows) or len({r.size for r in rows}) != 1:
            raise ValueError("labels: every label must be a number or a vector of one length L")
        return LabelMap(np.stack(rows))
    return LabelMap.make(labels, k)
