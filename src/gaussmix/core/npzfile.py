"""Reading ``.npz`` archives of plain arrays: the one reader of the package's ``.npz``
inputs (mixture files, data files), whose failures are one sentence of our own (never
numpy's advice to load pickles)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["read_npz"]


def read_npz(path: str | os.PathLike[str], *, written_by: str = "numpy.savez") -> dict[str, Any]:
    """Every entry of the ``.npz`` file ``path``, read without pickles.

    Parameters
    ----------
    path : path
        The file.
    written_by : str
        What writes such archives, for the message of a file that is not one
        (``'Mixture.save'``, ``'numpy.savez'``).

    Returns
    -------
    dict
        Entry name -> array.

    Raises
    ------
    ValueError
        One phrase without the file's name (the caller says which file): ``no such file``,
        ``is a directory, not an .npz file``, ``not an .npz archive (a single .npy
        array)``, or ``not a readable .npz file (...)`` -- for a text file, a pickle or a
        truncated archive, ``neither a zip of plain arrays, as <written_by> writes, nor an
        .npy array``.
    """
    import pickle
    import zipfile

    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError("not an .npz archive (a single .npy array)")
        with data:
            return {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except IsADirectoryError:
        raise ValueError("is a directory, not an .npz file") from None
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, pickle.UnpicklingError) as exc:
        msg = " ".join(str(exc).split())
        if msg.startswith("not an .npz"):
            raise
        if "pickle" in msg:  # numpy's advice (allow_pickle=True) is not ours to give
            msg = f"neither a zip of plain arrays, as {written_by} writes, nor an .npy array"
        raise ValueError(f"not a readable .npz file ({msg})") from None
