"""The one JSON encoding of results (``--json`` output, sweep checkpoints and tables)."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gaussmix.core.jsonio import dumps, finite_or_none, loads

finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | finite | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(values)
def test_finite_values_round_trip_exactly(value):
    text = dumps(value)
    assert loads(text) == value
    assert json.loads(text) == value  # standard JSON, read by any parser
    # every float reads back bit for bit (== would take -0.0 for 0.0)
    back = loads(text)
    if isinstance(value, float):
        assert math.copysign(1.0, back) == math.copysign(1.0, value)


def test_non_finite_numbers_are_null_and_json_is_strict():
    value = {"a": math.nan, "b": [1.0, math.inf, -math.inf], "c": (0.5, math.nan)}
    text = dumps(value)
    assert b"NaN" not in text and b"Infinity" not in text
    assert loads(text) == {"a": None, "b": [1.0, None, None], "c": [0.5, None]}
    assert finite_or_none(value) == loads(text)


def test_types_orjson_refuses_take_the_same_conventions():
    # numpy scalars and integers beyond 64 bits go through the standard library
    value = {"x": np.float64(0.1), "y": np.float64("nan"), "n": 2**70, "z": [np.float64(-2.5)]}
    assert loads(dumps(value)) == {"x": 0.1, "y": None, "n": 2**70, "z": [-2.5]}


def test_loads_reads_the_standard_library_nan_tokens():
    assert math.isnan(loads(b'{"a": NaN}')["a"])
    assert loads('{"a": Infinity}')["a"] == math.inf


@given(values)
def test_sorted_text_is_canonical(value):
    # the same value with its dicts built in reverse key order hashes to the same text
    def reverse(v):
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    text = dumps(value, sort_keys=True)
    assert text == dumps(reverse(value), sort_keys=True)
    assert json.loads(text) == value
    keys = [k for k in json.loads(text)] if isinstance(value, dict) else []
    assert keys == sorted(keys)
