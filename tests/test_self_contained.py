"""The repository is self-contained: nothing in it cites a file that it does not contain.

The design notes that the code and the tests refer to are the docs page ``docs/design.md``
(its pitfalls are anchored ``#pitfall-N``); a citation of a notes file outside the
repository, or of a pitfall that the page does not have, fails here.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN_PAGE = ROOT / "docs" / "design.md"
#: citations of files that are not in the repository (spelled in pieces, so that this file
#: does not cite them itself)
FOREIGN = re.compile("DESIGN" + r"\.md|\.\./" + "shared")
#: "docs/design.md pitfall 3", "docs/design.md, pitfall 8", "docs/design.md pitfalls 7 and 8"
PITFALL = re.compile(r"docs/design\.md`?,?\s+pitfalls?\s+(\d+)(?:\s+and\s+(\d+))?")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cff", ".txt", ".cfg", ".ini", ""}


def _tracked_files() -> list[Path]:
    """The files git tracks (every text file under the root when git is not available)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout
        names = [n for n in out.decode("utf-8").split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        names = [
            p.relative_to(ROOT).as_posix()
            for p in ROOT.rglob("*")
            if p.is_file() and ".git" not in p.parts
        ]
    paths = [ROOT / n for n in names]
    return [p for p in paths if p.is_file() and p.suffix in TEXT_SUFFIXES]


def _texts() -> dict[str, str]:
    out = {}
    for p in _tracked_files():
        try:
            out[p.relative_to(ROOT).as_posix()] = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return out


def test_no_file_cites_notes_outside_the_repository() -> None:
    texts = _texts()
    assert "src/gaussmix/theory/solve/solver.py" in texts  # the walk sees the package
    bad = [
        f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for name, text in texts.items()
        for m in FOREIGN.finditer(text)
    ]
    assert not bad, "citations of files the repository does not contain:\n" + "\n".join(bad)


def test_every_cited_pitfall_is_on_the_design_page() -> None:
    anchors = set(map(int, re.findall(r"\{\s*#pitfall-(\d+)\s*\}", DESIGN_PAGE.read_text())))
    assert anchors == set(range(1, len(anchors) + 1)) and len(anchors) >= 10
    cited = {
        (name, int(n))
        for name, text in _texts().items()
        for m in PITFALL.finditer(text)
        for n in m.groups()
        if n is not None
    }
    assert len(cited) >= 20  # the code and the tests do cite the page
    missing = sorted((name, n) for name, n in cited if n not in anchors)
    assert not missing, f"pitfalls cited but not on docs/design.md: {missing}"


@pytest.mark.parametrize(
    "text, cites",
    [
        ("see " + "DESIGN" + ".md pitfall 3", True),
        ("in ../" + "shared/paper", True),
        ("see docs/design.md pitfall 3", False),
    ],
)
def test_the_pattern_tells_a_foreign_citation(text: str, cites: bool) -> None:
    assert bool(FOREIGN.search(text)) is cites
