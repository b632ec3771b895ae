"""Real data sets, binary tasks and feature maps (docs/design.md, "What does what").

* :mod:`~gaussmix.data.datasets` -- MNIST, Fashion-MNIST and scikit-learn's digits, found
  offline (a directory, installed packages) or downloaded with checksums, under one protocol
  (pixels / 255, flattened, centred on the training mean);
* :mod:`~gaussmix.data.tasks` -- binary tasks (``even-odd``, ``low-high``,
  ``clothes-accessories``);
* :mod:`~gaussmix.data.features` -- feature maps fitted on training data and applied to both
  splits: random features ``erf(F x / sqrt(d))`` and the hidden layer of a trained two-layer
  network;
* :mod:`~gaussmix.data.download` -- verified, atomic downloads into a cache directory;
* :mod:`~gaussmix.data.files` -- a labelled data set of your own from a file (``.npz``,
  CSV, Parquet, a pair of ``.npy``), checked, split and preprocessed under a recorded
  protocol.

This subpackage depends on :mod:`gaussmix.core`, numpy, scikit-learn and (for tables)
pandas only.
"""

from .datasets import (
    DATASETS,
    DataNotFoundError,
    Dataset,
    DatasetSpec,
    RawData,
    data_home,
    load_dataset,
    load_raw,
    read_idx,
    subsample_indices,
)
from .download import ChecksumError, DownloadError, RemoteFile, content_sha256, fetch
from .features import AveragePooling, NetworkFeatures, RandomFeatures, featurize
from .files import DataFileError, LabelledData, load_labelled
from .tasks import TASKS, Task, get_task

__all__ = [
    "AveragePooling",
    "DATASETS",
    "TASKS",
    "ChecksumError",
    "DataFileError",
    "DataNotFoundError",
    "Dataset",
    "DatasetSpec",
    "DownloadError",
    "LabelledData",
    "RawData",
    "RemoteFile",
    "NetworkFeatures",
    "RandomFeatures",
    "Task",
    "content_sha256",
    "data_home",
    "featurize",
    "fetch",
    "get_task",
    "load_dataset",
    "load_labelled",
    "load_raw",
    "read_idx",
    "subsample_indices",
]
