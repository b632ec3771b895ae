"""The explorer's notebook form: ``examples/explore.ipynb`` executed by nbclient in a
Python kernel of this environment; its outputs hold the Panel application and no error, and
they render offline.

Offline: the notebook loads Bokeh's and Panel's JavaScript inline
(``pn.extension(inline=True)``), so its outputs need nothing from a CDN.  The executed
outputs are laid in one HTML page as a notebook front end lays them (a display's
``application/javascript`` run as a script, else its ``text/html``; the order of
nbconvert's HTML exporter), served from this machine, and opened in headless Chromium with
every host name but the local one unresolvable: the application's plot must render (a Bokeh
canvas of nonzero size) and no request may leave the machine.
"""

from __future__ import annotations

import contextlib
import functools
import html
import http.server
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The notebook executed by a kernel that imports this checkout's sources."""
    src = str(ROOT / "src")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])))
        path = str(tmp_path_factory.mktemp("notebook"))
        client = nbclient.NotebookClient(
            nb, timeout=HANG, kernel_name="python3", resources={"metadata": {"path": path}}
        )
        client.execute()
    return nb


def _outputs(nb: Any) -> list[Any]:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def test_the_notebook_runs_and_shows_the_explorer(executed: Any) -> None:
    outputs = _outputs(executed)
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    shown = [o for o in outputs if o.output_type in ("display_data", "execute_result")]
    # the application (pn.extension's output is a Panel output too, without a layout)
    apps = [
        o
        for o in shown
        if PANEL_MIME in o.get("data", {}) and "gm-layout" in o["data"].get("text/plain", "")
    ]
    assert len(apps) == 1, [sorted(o.get("data", {})) for o in shown]
    assert "text/html" in apps[0]["data"]
    text = "".join(o.text for o in outputs if o.output_type == "stream")
    assert "20 of 20 points" in text
    assert "gaussmix curve --n-clusters 3" in text and "--lam 0.01" in text


def _page(nb: Any) -> str:
    """The executed outputs in one HTML page, as nbconvert's HTML exporter lays them."""
    parts = []
    for o in _outputs(nb):
        data = o.get("data", {})
        if "application/javascript" in data:
            parts.append(f"<script>{data['application/javascript']}</script>")
        elif "text/html" in data:
            parts.append(data["text/html"])
        elif o.output_type == "stream":
            parts.append(f"<pre>{html.escape(o.text)}</pre>")
    head = '<meta charset="utf-8"><link rel="icon" href="data:,"><title>explore.ipynb</title>'
    return f"<!DOCTYPE html><html><head>{head}</head><body>{''.join(parts)}</body></html>"


@contextlib.contextmanager
def _served(folder: Path) -> Iterator[str]:
    """``folder`` served over HTTP on 127.0.0.1 (a port of the system's choice)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


#: the sizes of the Bokeh canvases drawn in the page (inside Panel's shadow roots)
_CANVASES = """
const out = [];
const walk = (root) => {
    for (const c of root.querySelectorAll('canvas')) {
        const r = c.getBoundingClientRect(); out.push([r.width, r.height]);
    }
    for (const el of root.querySelectorAll('*')) { if (el.shadowRoot) { walk(el.shadowRoot); } }
};
walk(document);
return out;
"""


@pytest.mark.browser
def test_the_executed_notebook_renders_offline(executed: Any, tmp_path: Path) -> None:
    from _browser import WAIT, chrome, console_errors, load, requested_urls
    from selenium.webdriver.support.ui import WebDriverWait

    page = _page(executed)
    # the JavaScript is in the outputs (pn.extension(inline=True)): Bokeh's loader is given
    # no script or style to fetch, and no tag loads one
    assert "const js_urls = []" in page and "const css_urls = []" in page
    assert not re.search(r"<(script|link)\b[^>]*\b(src|href)=[\"']?(https?:)?//", page)
    (tmp_path / "explore.html").write_text(page, encoding="utf-8")
    with _served(tmp_path) as origin, chrome(network_log=True, offline=True) as driver:
        load(driver, origin + "explore.html")
        canvases = WebDriverWait(driver, WAIT).until(
            lambda d: [c for c in d.execute_script(_CANVASES) if c[0] > 100 and c[1] > 100]
        )
        assert canvases, "no plot drawn"
        assert driver.execute_script("return typeof Bokeh") == "object"
        outside = sorted(
            u
            for u in requested_urls(driver)
            if not u.startswith((origin, "data:", "blob:" + origin))
        )
        assert not outside, outside  # nothing left the machine
        assert not console_errors(driver)
