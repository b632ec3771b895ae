"""Strict JSON of results: the encoding of ``--json`` output, sweep checkpoints and tables.

Non-finite floats are written as ``null`` (strict JSON has no NaN; a failed point's NaN
observables read back as ``None`` and become NaN again in tables).  Finite floats are
written as their shortest round-trip text, so that they read back bit for bit.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["finite_or_none", "plain", "dumps", "loads"]

_STRICT = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_STRICT_SORTED = json.JSONEncoder(separators=(",", ":"), allow_nan=False, sort_keys=True)


def finite_or_none(obj: Any) -> Any:
    """``obj`` with every non-finite float (nested in lists, tuples, dicts) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_or_none(v) for v in obj]
    return obj


def plain(x: Any) -> Any:
    """``x`` with numpy scalars / arrays turned into Python ones, tuples into lists and NaN /
    inf into None: JSON-safe (``json.dumps(plain(x), allow_nan=False)`` succeeds)."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    if hasattr(x, "tolist") and hasattr(x, "dtype"):  # numpy array or scalar
        return plain(x.tolist())
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    return x


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact strict JSON of ``value`` (UTF-8), non-finite floats as ``null``; with
    ``sort_keys`` the keys of every dict in sorted order (a canonical text to hash).

    orjson, ~10x faster than the standard library, which takes over for the types orjson
    refuses (e.g. ``numpy.float64``, integers beyond 64 bits) with the same conventions.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:
        encoder = _STRICT_SORTED if sort_keys else _STRICT
        return encoder.encode(finite_or_none(value)).encode()


def loads(data: bytes | str) -> Any:
    """Parse JSON text; also the ``NaN`` / ``Infinity`` tokens of the standard library."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
