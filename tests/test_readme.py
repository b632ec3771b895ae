"""The README's Python examples run as written, and cleanly: no warning of any kind (slow:
they include a simulation).  One test per block, named by its first line in the README; a
block that needs a data set the test extra does not install (MNIST, Fashion-MNIST) skips
naming the package on a bare machine, and fails in CI (``conftest.skip_optional``)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from conftest import skip_optional

from gaussmix.data import DataNotFoundError

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[tuple[int, str]]:
    text = README.read_text()
    found = [
        (text.count("\n", 0, m.start(1)) + 1, m.group(1))
        for m in re.finditer(r"```python\n(.*?)```", text, flags=re.S)
    ]
    assert found
    return found


BLOCKS = _blocks()


@pytest.mark.slow
@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line-{n}" for n, _ in BLOCKS])
def test_readme_python_block_runs_without_warnings(line: int, code: str):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(compile("\n" * (line - 1) + code, str(README), "exec"), {})
        except DataNotFoundError as exc:
            skip_optional(f"README block at line {line}: {exc}")
    unexpected = [f"{w.category.__name__} {w.filename}:{w.lineno}: {w.message}" for w in caught]
    assert not unexpected, "\n".join(unexpected)
