"""Start-up: what each entry point imports (issue 9, item 8).  Timings live in
``benchmarks/bench_startup.py`` and BENCHMARKS.md; this test checks the cause of a slow
start, deterministically: the heavy packages a command loads."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "numba", "pandas", "matplotlib", "xarray", "dask", "sklearn")

PROBE = """
import json, runpy, sys
sys.argv = {argv!r}
try:
    {body}
except SystemExit:
    pass
loaded = sorted({{m for m in sys.modules if m.split('.')[0] in {heavy!r}}})
print('\\nLOADED ' + json.dumps(loaded))
"""


def _loaded(argv: list[str], body: str) -> set[str]:
    code = PROBE.format(argv=argv, body=body, heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("LOADED ")][-1]
    return set(json.loads(line.removeprefix("LOADED ")))


def _cli(*args: str) -> set[str]:
    body = "runpy.run_module('gaussmix.cli', run_name='__main__')"
    return _loaded(["gaussmix", *args], body)


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_import_gaussmix_loads_nothing_heavy():
    assert _tops(_loaded(["python"], "import gaussmix")) == set()


def test_help_loads_numpy_at_most():
    assert _tops(_cli("--help")) <= {"numpy"}
    assert _tops(_cli("point", "--help")) <= {"numpy"}


def test_a_bad_option_is_refused_before_the_solver_loads():
    assert _tops(_cli("point", "--loss", "nope")) <= {"numpy"}


@pytest.mark.parametrize("loss", ["logistic", "square"])
def test_one_binary_point_loads_only_the_solver(loss):
    loaded = _cli("point", "--loss", loss, "--labels", "binary", "--json")
    assert not _tops(loaded) & {"pandas", "matplotlib", "xarray", "dask", "sklearn"}
    assert "scipy.stats" not in loaded
