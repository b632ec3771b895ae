"""Feature maps ``x -> v = phi(x)`` for the real-data learning curves (Appendix E).

A feature map is an object that is *fitted on the training inputs only* (``fit``) and then
applied, identically, to any split (``transform``), in the manner of scikit-learn's
transformers.  The inputs are the centred pixels of :func:`gaussmix.data.load_dataset`; the
features are **not** centred or rescaled again (a Gaussian mixture fitted to them estimates
its own means and covariances).

* :class:`RandomFeatures` -- ``v = erf(F x / sqrt(d))`` with ``F`` a ``p x d`` matrix of
  i.i.d. standard Gaussian entries drawn from ``numpy.random.default_rng(seed)``; ``gamma =
  p / d``.  Each feature lies in ``(-1, 1)``.  (The paper writes ``erf(F x)``; the
  ``1 / sqrt(d)`` keeps the argument of order one: with MNIST's centred pixels ``|x|^2 / d``
  is about 0.07, so the pre-activations have standard deviation about 0.27.)
* :class:`AveragePooling` -- the mean of each ``size x size`` block of pixels of a square
  image (``d = 784, size = 4``: 7 x 7 = 49 features); a fixed linear map, the reduced-size
  stand-in for pixels where the dense theory at ``d = 784`` is too costly (the 10-class
  tests and figure).
* :class:`NetworkFeatures` -- the hidden layer ``v = relu(x W1 + b1)`` of a two-layer network
  ``d -> hidden (ReLU) -> 1`` trained with Adam on the square loss against the +-1 labels,
  snapshotted after several epochs.  Training uses scikit-learn's ``MLPRegressor`` (identity
  output, loss ``|y - f(x)|^2 / 2`` averaged over a mini-batch, no weight decay, Glorot-uniform
  initialisation, mini-batches of ``batch_size`` reshuffled every epoch); one epoch is one
  ``partial_fit`` pass over the training set.  It differs from the network of Appendix E in
  two respects: both layers have a bias, and there is no ``tanh`` on the output.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from ..core.validation import check_int, check_param, check_real
from .datasets import Dataset

__all__ = ["AveragePooling", "RandomFeatures", "NetworkFeatures", "featurize"]


def _as_inputs(name: str, X: object, d: int | None = None) -> np.ndarray:
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty 2-d array (n, d), got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"{name} has {arr.shape[1]} columns; the map was fitted with d = {d}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers")
    return arr


def _not_fitted(obj: object) -> RuntimeError:
    return RuntimeError(f"this {type(obj).__name__} is not fitted yet: call fit(x_train) first")


class RandomFeatures:
    """Random features ``v = erf(F x / sqrt(d))``, ``F`` of shape ``(p, d)``, i.i.d. N(0, 1).

    Parameters
    ----------
    p : int
        Number of features.
    seed : int
        Seed of ``numpy.random.default_rng`` that draws ``F`` (at :meth:`fit`).
    chunk : int
        Rows transformed at a time (bounds the temporary memory).

    Attributes
    ----------
    F_ : ndarray, shape (p, d)
        The projection, drawn at :meth:`fit`.
    d_ : int
        Input dimension seen at :meth:`fit`.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((5, 8))
    >>> rf = RandomFeatures(16, seed=1).fit(x)
    >>> rf.transform(x).shape, rf.gamma_
    ((5, 16), 2.0)
    """

    def __init__(self, p: int, *, seed: int = 0, chunk: int = 4096) -> None:
        self.p = check_int("p", p, low=1)
        self.seed = check_param("seed", seed)
        self.chunk = check_int("chunk", chunk, low=1)

    def fit(self, X: object, y: object = None) -> RandomFeatures:
        """Draw ``F`` for inputs of the dimension of ``X`` (its values are not used)."""
        d = _as_inputs("X", X).shape[1]
        self.d_ = d
        self.F_ = np.random.default_rng(self.seed).standard_normal((self.p, d))
        return self

    @property
    def gamma_(self) -> float:
        """``p / d``."""
        if not hasattr(self, "F_"):
            raise _not_fitted(self)
        return self.p / self.d_

    def transform(self, X: object) -> np.ndarray:
        """Features of the rows of ``X``, shape ``(n, p)``, float64 in ``(-1, 1)``."""
        if not hasattr(self, "F_"):
            raise _not_fitted(self)
        from scipy.special import erf

        X = _as_inputs("X", X, self.d_)
        out = np.empty((X.shape[0], self.p))
        ft = self.F_.T / math.sqrt(self.d_)
        for start in range(0, X.shape[0], self.chunk):
            block = out[start : start + self.chunk]
            np.matmul(X[start : start + self.chunk], ft, out=block)
            erf(block, out=block)
        return out

    def fit_transform(self, X: object, y: object = None) -> np.ndarray:
        return self.fit(X).transform(X)


class AveragePooling:
    """Block means ``v_(I, J) = mean of x_(i, j) over the size x size block (I, J)`` of a
    square image, flattened row by row (the images of :func:`gaussmix.data.load_dataset`).

    Parameters
    ----------
    size : int
        Side of the blocks; it must divide the side of the image.

    Attributes
    ----------
    d_ : int
        Input dimension seen at :meth:`fit` (a square ``side x side``).
    p : int
        Number of features, ``(side / size)^2`` (set at :meth:`fit`).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(16.0).reshape(1, 16)
    >>> AveragePooling(2).fit(x).transform(x)
    array([[ 2.5,  4.5, 10.5, 12.5]])
    """

    def __init__(self, size: int) -> None:
        self.size = check_int("size", size, low=1)

    def fit(self, X: object, y: object = None) -> AveragePooling:
        """Check that the rows of ``X`` are square images whose side ``size`` divides."""
        d = _as_inputs("X", X).shape[1]
        side = math.isqrt(d)
        if side * side != d or side % self.size:
            raise ValueError(
                f"size must divide the side of a square image; got d = {d} and size = {self.size}"
            )
        self.d_, self.side_ = d, side
        self.p = (side // self.size) ** 2
        return self

    def transform(self, X: object) -> np.ndarray:
        """Block means of the rows of ``X``, shape ``(n, p)``."""
        if not hasattr(self, "d_"):
            raise _not_fitted(self)
        X = _as_inputs("X", X, self.d_)
        s, k = self.side_ // self.size, self.size
        return X.reshape(-1, s, k, s, k).mean(axis=(2, 4)).reshape(-1, s * s)

    def fit_transform(self, X: object, y: object = None) -> np.ndarray:
        return self.fit(X).transform(X)


class NetworkFeatures:
    """Hidden-layer features ``relu(x W1 + b1)`` of a two-layer network at several epochs.

    Parameters
    ----------
    epochs : iterable of int
        Epochs (passes over the training set, >= 1) after which the hidden layer is kept.
    hidden : int
        Width of the hidden layer (784 in Appendix E).
    seed : int
        Seeds the initialisation and the per-epoch shuffles; the same seed gives the same
        features (on the same machine and BLAS).
    batch_size : int
        Mini-batch size of Adam.
    learning_rate : float
        Adam's step size.

    Attributes
    ----------
    stages_ : dict
        ``epoch -> (W1, b1)``, ``W1`` of shape ``(d, hidden)``.
    loss_ : dict
        ``epoch -> `` training loss (``|y - f|^2 / 2`` averaged over the epoch's batches).
    d_ : int
        Input dimension seen at :meth:`fit`.
    """

    def __init__(
        self,
        epochs: Iterable[int] = (1, 5, 20),
        *,
        hidden: int = 784,
        seed: int = 0,
        batch_size: int = 200,
        learning_rate: float = 1e-3,
    ) -> None:
        eps = sorted({check_int("epochs", e, low=1) for e in epochs})
        if not eps:
            raise ValueError("epochs must name at least one epoch (>= 1)")
        self.epochs = tuple(eps)
        self.hidden = check_int("hidden", hidden, low=1)
        self.seed = check_param("seed", seed)
        self.batch_size = check_int("batch_size", batch_size, low=1)
        self.learning_rate = check_real("learning_rate", learning_rate, low=0.0, low_open=True)

    def fit(self, X: object, y: object) -> NetworkFeatures:
        """Train on ``(X, y)`` (``y`` the +-1 labels) and keep the hidden layer at each epoch
        of :attr:`epochs`."""
        from sklearn.neural_network import MLPRegressor

        X = _as_inputs("X", X)
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y must contain only finite numbers")
        net = MLPRegressor(
            hidden_layer_sizes=(self.hidden,),
            activation="relu",
            solver="adam",
            alpha=0.0,
            batch_size=min(self.batch_size, X.shape[0]),
            learning_rate_init=self.learning_rate,
            shuffle=True,
            # an instance, not an int: its state advances, so each epoch has its own shuffle
            random_state=np.random.RandomState(self.seed),
        )
        self.d_ = X.shape[1]
        self.stages_: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.loss_: dict[int, float] = {}
        for epoch in range(1, self.epochs[-1] + 1):
            net.partial_fit(X, y)
            if epoch in self.epochs:
                self.stages_[epoch] = (net.coefs_[0].copy(), net.intercepts_[0].copy())
                self.loss_[epoch] = float(net.loss_)
        return self

    def transform(self, X: object, *, epoch: int | None = None) -> np.ndarray:
        """Hidden-layer features of ``X`` after ``epoch`` (default: the last), shape
        ``(n, hidden)``, non-negative."""
        if not hasattr(self, "stages_"):
            raise _not_fitted(self)
        if epoch is None:
            epoch = self.epochs[-1]
        if epoch not in self.stages_:
            raise ValueError(f"epoch must be one of {list(self.stages_)}, got {epoch!r}")
        w1, b1 = self.stages_[epoch]
        X = _as_inputs("X", X, self.d_)
        out = X @ w1
        out += b1
        np.maximum(out, 0.0, out=out)
        return out

    def at(self, epoch: int) -> _Stage:
        """The map of one stage, as an object with ``transform(X)`` (for :func:`featurize`)."""
        if not hasattr(self, "stages_"):
            raise _not_fitted(self)
        if epoch not in self.stages_:
            raise ValueError(f"epoch must be one of {list(self.stages_)}, got {epoch!r}")
        return _Stage(self, epoch)


class _Stage:
    def __init__(self, net: NetworkFeatures, epoch: int) -> None:
        self.net, self.epoch = net, epoch

    def transform(self, X: object) -> np.ndarray:
        return self.net.transform(X, epoch=self.epoch)


def featurize(dataset: Dataset, feature_map: object, *, fit: bool = True) -> Dataset:
    """The data set with inputs replaced by features, the map fitted on the training split.

    Parameters
    ----------
    dataset : Dataset
        A data set under the protocol (:func:`gaussmix.data.load_dataset`).
    feature_map : object with ``fit(X, y)`` and ``transform(X)``
        E.g. :class:`RandomFeatures`, :class:`NetworkFeatures`, or ``NetworkFeatures.at(e)``.
    fit : bool
        Fit the map on ``(x_train, y_train)`` first (default); ``False`` for a fitted map.

    Returns
    -------
    Dataset
        ``x_train``, ``x_test`` are the features; ``mean`` is still the pixel mean that was
        subtracted before the map; labels, classes and task are unchanged.
    """
    if fit:
        if isinstance(feature_map, NetworkFeatures) and dataset.y_train is None:
            raise ValueError("NetworkFeatures trains on binary labels: load the data with a task")
        feature_map.fit(dataset.x_train, dataset.y_train)  # type: ignore[attr-defined]
    return replace(
        dataset,
        x_train=feature_map.transform(dataset.x_train),  # type: ignore[attr-defined]
        x_test=feature_map.transform(dataset.x_test),  # type: ignore[attr-defined]
    )
