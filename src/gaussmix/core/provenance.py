"""Provenance of the tables the package writes: one record, beside every table, of what
made it -- the gaussmix version, the exact command line, the UTC date, the mixture
(description, content fingerprint, and the SHA-256 of its file when one was read) and
every parameter (:func:`run_record`, :func:`write_provenance`).

The command line is the one :func:`set_command_line` recorded (``gaussmix`` records its
arguments when it starts, also when run in-process), else :data:`sys.argv`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .jsonio import plain
from .version import __version__

__all__ = [
    "command_line",
    "mixture_provenance",
    "run_record",
    "set_command_line",
    "write_provenance",
]

#: the command line recorded by :func:`set_command_line` (None: use ``sys.argv``)
_COMMAND: list[str] | None = None


def set_command_line(argv: Sequence[str] | None) -> None:
    """Record the command line of this run (``['gaussmix', 'curve', ...]``); None forgets
    it (then :data:`sys.argv` is used)."""
    global _COMMAND
    _COMMAND = None if argv is None else [str(a) for a in argv]


def command_line() -> list[str]:
    """The command line of this run: the one recorded, else :data:`sys.argv`."""
    return list(_COMMAND) if _COMMAND is not None else [str(a) for a in sys.argv]


def _jsonable(value: Any) -> Any:
    """``value`` as JSON-safe Python (numpy as Python, NaN as None, other objects by their
    ``repr``)."""
    value = plain(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value)


def mixture_provenance(mixture: Any, mixture_file: str | os.PathLike | None = None) -> dict:
    """What a record says of a mixture: the structure (``covariance.describe()``), the
    content fingerprint (:meth:`~gaussmix.theory.model.mixture.Mixture.fingerprint`),
    :meth:`~gaussmix.theory.model.mixture.Mixture.describe` and, when it was read from a file,
    the file's name and SHA-256."""
    out = {
        "structure": mixture.covariance.describe(),
        "fingerprint": mixture.fingerprint(),
        **_jsonable(mixture.describe()),
    }
    if mixture_file is not None:
        data = Path(mixture_file).read_bytes()
        out.update(file=os.fspath(mixture_file), sha256=hashlib.sha256(data).hexdigest())
    return out


def run_record(
    parameters: Mapping[str, Any],
    *,
    mixture: Any = None,
    mixture_file: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """The provenance of one run: ``gaussmix_version``, ``command`` (the command line as a
    shell would read it), ``argv`` (its words), ``date`` (UTC, ISO 8601), ``mixture``
    (:func:`mixture_provenance`, or None) and ``parameters`` (every parameter, JSON-safe).
    """
    argv = command_line()
    return {
        "gaussmix_version": __version__,
        "command": shlex.join(argv),
        "argv": argv,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mixture": None if mixture is None else mixture_provenance(mixture, mixture_file),
        "parameters": _jsonable(dict(parameters)),
    }


def write_provenance(
    table: str | os.PathLike,
    parameters: Mapping[str, Any],
    *,
    mixture: Any = None,
    mixture_file: str | os.PathLike | None = None,
    columns: Sequence[str] | None = None,
    **extra: Any,
) -> Path:
    """Write the provenance of the table ``table`` beside it: ``<stem>.json`` holding
    ``extra`` entries, then :func:`run_record`, the table's file name and its columns
    (these keys win over ``extra``'s).

    Returns
    -------
    Path
        The JSON file written.
    """
    table = Path(table)
    record = _jsonable(extra)  # the record's own keys below take precedence
    record.update(run_record(parameters, mixture=mixture, mixture_file=mixture_file))
    record["table"] = table.name
    if columns is not None:
        record["columns"] = [str(c) for c in columns]
    path = table.with_suffix(".json")
    path.write_text(json.dumps(record, indent=2, allow_nan=False) + "\n")
    return path
