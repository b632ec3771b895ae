"""The explorer's notebook form: ``examples/explore.ipynb`` executed by nbclient in a
Python kernel of this environment; its outputs hold the Panel application and no error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import HANG

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "explore.ipynb"
#: the MIME type of a Panel (HoloViews-exec) output
PANEL_MIME = "application/vnd.holoviews_exec.v0+json"

pytest.importorskip("panel", reason="the explorer's interface is the 'explore' extra")
nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")


def test_the_notebook_runs_and_shows_the_explorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the kernel imports this checkout's sources
    src = str(ROOT / "src")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    )
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=HANG, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    shown = [o for o in outputs if o.output_type in ("display_data", "execute_result")]
    # the application (pn.extension's output is a Panel output too, without a layout)
    apps = [
        o
        for o in shown
        if PANEL_MIME in o.get("data", {}) and "gm-download-csv" in o["data"].get("text/plain", "")
    ]
    assert len(apps) == 1, [sorted(o.get("data", {})) for o in shown]
    assert "text/html" in apps[0]["data"]
    text = "".join(o.text for o in outputs if o.output_type == "stream")
    assert "20 of 20 points" in text
    assert "gaussmix curve --n-clusters 3" in text and "--lam 0.01" in text
