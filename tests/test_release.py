"""Release hygiene: one version everywhere (package, metadata, CLI, citation, changelog)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from _cli_helpers import run

import gaussmix

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_one_version_everywhere() -> None:
    version = gaussmix.__version__
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == version
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^version: (\S+)$", cff, flags=re.M).group(1) == version
    assert f"## [{version}]" in (ROOT / "CHANGELOG.md").read_text()
    code, out, _ = run("--version")
    assert code == 0 and version in out


def test_python_dash_m_gaussmix_is_the_command_line() -> None:
    """``python -m gaussmix`` runs the same command line as the ``gaussmix`` script."""
    proc = subprocess.run(
        [sys.executable, "-m", "gaussmix", "--version"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"gaussmix {gaussmix.__version__}"
    proc = subprocess.run(
        [sys.executable, "-m", "gaussmix", "point", "--alpha", "-1"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.startswith("gaussmix: error:")


def test_citation_names_the_paper() -> None:
    cff = (ROOT / "CITATION.cff").read_text()
    assert cff.startswith("cff-version: 1.2.0")
    assert "preferred-citation:" in cff
    assert "Learning Gaussian Mixtures with Generalised Linear Models" in cff
    readme = (ROOT / "README.md").read_text()
    assert "@inproceedings{loureiro2021learning" in readme
