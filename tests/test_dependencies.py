"""Every third-party package the library imports is declared in pyproject.toml (a base
install once crashed on an import that only a test extra happened to bring)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "gaussmix"

#: import name -> distribution name, where they differ
DISTRIBUTION = {"sklearn": "scikit-learn", "distributed": "distributed", "yaml": "pyyaml"}
#: imports guarded by an optional extra (name -> extra)
OPTIONAL = {
    "distributed": "dask",
    "dask": "dask",
    "pyarrow": "parquet",
    "panel": "explore",
    "bokeh": "explore",
}


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(reqs):
        return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip().lower() for r in reqs}

    extras = {k: names(v) for k, v in meta.get("optional-dependencies", {}).items()}
    return names(meta["dependencies"]), extras


def _imports() -> set[str]:
    found = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - {"gaussmix", "__future__"} - set(sys.stdlib_module_names)


def test_every_import_of_the_library_is_declared():
    base, extras = _declared()
    missing = []
    for name in sorted(_imports()):
        dist = DISTRIBUTION.get(name, name).lower()
        if name in OPTIONAL:
            if dist not in extras.get(OPTIONAL[name], set()):
                missing.append(f"{name} (extra {OPTIONAL[name]!r})")
        elif dist not in base:
            missing.append(name)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
