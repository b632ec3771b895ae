"""The README's Python examples run as written, and cleanly: no warning of any kind (slow:
they include a simulation)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _run_blocks() -> list[warnings.WarningMessage]:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for code in blocks:
            exec(compile(code, str(README), "exec"), {})
    return caught


@pytest.mark.slow
def test_readme_python_example_runs_without_warnings():
    caught = _run_blocks()
    unexpected = [f"{w.category.__name__} {w.filename}:{w.lineno}: {w.message}" for w in caught]
    assert not unexpected, "\n".join(unexpected)
