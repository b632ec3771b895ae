"""The Python examples of the README and of the docs pages run as written, and cleanly: no
warning of any kind (slow: they include a simulation).  One test per block, named by its
file and first line; a block that needs a data set the test extra does not install (MNIST,
Fashion-MNIST) skips naming the package on a bare machine, and fails in CI
(``conftest.skip_optional``).  A block followed by a ```` ```text ```` block shows what it
prints: the output must be that text, every number within its printed digits.

Blocks that include an example script (``--8<-- "script.py"``) are not run here: the
scripts are run by ``tests/test_examples.py`` and by the site's build."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import warnings
from pathlib import Path

import pytest
from conftest import skip_optional

from gaussmix.data import DataNotFoundError

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: a fenced Python block, and the ```text block right after it (what it prints), if any
_BLOCK = re.compile(
    r"^(?P<indent> *)```python\n(?P<code>.*?)^(?P=indent)```\n"
    r"(?:\n*(?P=indent)```text\n(?P<out>.*?)^(?P=indent)```\n)?",
    flags=re.S | re.M,
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _sources() -> list[Path]:
    return [README, *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)]


def blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, printed output or None) of every Python block of ``path`` (code
    dedented; blocks that only include an example script left out)."""
    text = path.read_text(encoding="utf-8")
    found = []
    for m in _BLOCK.finditer(text):
        indent = len(m.group("indent"))
        code = "".join(ln[indent:] + "\n" for ln in m.group("code").splitlines())
        if code.lstrip().startswith("--8<--"):
            continue
        line = text.count("\n", 0, m.start()) + 1
        out = m.group("out")
        if out is not None:
            out = "".join(ln[indent:] + "\n" for ln in out.splitlines())
        found.append((line + 1, code, out))
    return found


BLOCKS = [(path, *block) for path in _sources() for block in blocks(path)]


def same_printed_output(shown: str, printed: str) -> str | None:
    """None if ``printed`` is ``shown`` with every number within the digits ``shown``
    gives it (half a unit of its last digit), else what differs."""
    a, b = shown.split(), printed.split()
    if len(a) != len(b):
        return f"{len(a)} words shown, {len(b)} printed:\n{printed}"
    for x, y in zip(a, b, strict=True):
        mx, my = _NUMBER.fullmatch(x), _NUMBER.fullmatch(y)
        if mx is None or my is None:
            if x != y:
                return f"shown {x!r}, printed {y!r}"
            continue
        mantissa = re.split(r"[eE]", x)[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        exponent = int(re.split(r"[eE]", x)[1]) if re.search(r"[eE]", x) else 0
        half_unit = 0.5 * 10.0 ** (exponent - decimals)
        if abs(float(x) - float(y)) > half_unit * (1 + 1e-9):
            return f"shown {x}, printed {y} (more than half a unit of the last digit)"
    return None


def test_every_page_with_python_has_its_blocks_found() -> None:
    """The README's example (with its output) and the pages' blocks are collected."""
    readme = blocks(README)
    assert readme and readme[0][2] is not None, "the README's example shows its output"
    assert len(BLOCKS) >= 15
    assert {p.name for p, *_ in BLOCKS} >= {"README.md", "learning-curve.md", "design.md"}


def test_printed_output_comparison() -> None:
    assert same_printed_output("alpha 0.5 err 0.2135\n", "alpha 0.5 err 0.21347\n") is None
    assert same_printed_output("x 1.2e-03", "x 0.00124") is None
    assert same_printed_output("err 0.2135", "err 0.2137") is not None
    assert same_printed_output("err 0.2135", "loss 0.2135") is not None
    assert same_printed_output("a 1", "a 1 2") is not None


def _close_explorers() -> None:
    """Cancel and join the background jobs of any explorer a block built (the notebook
    block of docs/explore.md starts its curve in a thread): a job left running solves on
    into the next test of this process, whose spies on the solver's steps would see it."""
    app = sys.modules.get("gaussmix.explore.app")
    if app is not None:
        app.close_all()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "line", "code", "out"),
    BLOCKS,
    ids=[f"{p.relative_to(ROOT).as_posix()}-line-{n}" for p, n, _, _ in BLOCKS],
)
def test_python_block_runs_without_warnings(path: Path, line: int, code: str, out: str | None):
    stdout = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(stdout):
        warnings.simplefilter("always")
        try:
            exec(compile("\n" * (line - 1) + code, str(path), "exec"), {})
        except DataNotFoundError as exc:
            skip_optional(f"{path.name} block at line {line}: {exc}")
        finally:
            _close_explorers()
    unexpected = [f"{w.category.__name__} {w.filename}:{w.lineno}: {w.message}" for w in caught]
    assert not unexpected, "\n".join(unexpected)
    if out is not None:
        problem = same_printed_output(out, stdout.getvalue())
        assert problem is None, f"{path.name} line {line}: {problem}"
