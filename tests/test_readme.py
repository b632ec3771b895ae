"""The README's Python example runs as written, and cleanly (slow: it includes a simulation)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

#: warnings still emitted by code outside the README's reach, each to be removed with its
#: cause: numpy overflow in gaussmix/theory/prior.py (elastic_net_prior, ``p2 / a**2``) on
#: an Anderson trial state with Vhat ~ 1e-115 during sparse_setup's lambda* search (ratio
#: 0.01, alpha ~ 0.163, lam ~ 0.024).  Remove this entry once prior.py is fixed.
KNOWN = [(RuntimeWarning, "gaussmix/theory/prior.py")]


def _known(w: warnings.WarningMessage) -> bool:
    path = Path(w.filename).as_posix()
    return any(issubclass(w.category, c) and path.endswith(f) for c, f in KNOWN)


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
    unexpected = [u for u, w in zip(unexpected, caught) if not _known(w)]
    assert not unexpected, "\n".join(unexpected)


def test_known_warnings_filter_only_the_listed_file() -> None:
    def message(category: type[Warning], filename: str) -> warnings.WarningMessage:
        return warnings.WarningMessage("x", category, filename, 1)

    assert _known(message(RuntimeWarning, "/src/gaussmix/theory/prior.py"))
    assert not _known(message(RuntimeWarning, "/src/gaussmix/theory/solver.py"))
    import gaussmix as gm

    assert not _known(message(gm.IntegrationWarning, "/src/gaussmix/theory/prior.py"))
