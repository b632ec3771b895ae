"""``gaussmix explore`` served in a subprocess and driven in Debian's headless Chromium.

The page loads with no console error and requests nothing outside the server; moving the
lambda slider redraws the curve with the values ``gm.learning_curve`` gives for the same
settings (read from the page's Bokeh ``ColumnDataSource``: the same code, so equal to the
bit) and puts the state in the URL; a bad value shows the library's message beside its
control; the CSV download equals the library's CSV; a state URL restores the view.

Needs Chromium and its driver (``apt-get install chromium chromium-driver``) and the
``explore`` extra; without them the tests are skipped (``conftest.skip_optional``: a failure
under ``GAUSSMIX_REQUIRE_OPTIONAL=1``, as in CI).
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _browser import WAIT, chrome, console_errors, load, requested_urls
from _explore import library_curve, served

pytestmark = pytest.mark.browser

pytest.importorskip("panel", reason="the explorer's interface is the 'explore' extra")

from gaussmix.explore import ExplorerState, validate  # noqa: E402

#: points of the served curve
N = 8

#: ``EXPR`` of the page's Bokeh model ``m`` that carries a CSS class
_MODEL = """
const doc = Bokeh.documents[0];
for (const m of doc.all_models) {
    if (m.css_classes && m.css_classes.includes(arguments[0])) { return EXPR; }
}
return null;
"""


def _model(driver: Any, css_class: str, expr: str, *args: Any) -> Any:
    """``expr`` (JavaScript, of the model ``m``) for the page's model carrying
    ``css_class``."""
    return driver.execute_script(_MODEL.replace("EXPR", expr), css_class, *args)


#: the page's curve: the ColumnDataSource the plot draws
_CURVE = """
if (!window.Bokeh || !Bokeh.documents.length) { return null; }
const s = Bokeh.documents[0].get_model_by_name('gm-curve');
if (!s) { return null; }
const out = {};
for (const [k, v] of Object.entries(s.data)) { out[k] = Array.from(v); }
return out;
"""
#: the rendered element carrying a CSS class (inside Panel's shadow roots)
_ELEMENT = """
const walk = (root) => {
    const hit = root.querySelector('.' + arguments[0]);
    if (hit) { return hit; }
    for (const el of root.querySelectorAll('*')) {
        if (el.shadowRoot) { const found = walk(el.shadowRoot); if (found) { return found; } }
    }
    return null;
};
return walk(document);
"""


def _set(driver: Any, css_class: str, value: Any) -> None:
    """Give the control carrying ``css_class`` a new value, as the user's input does (the
    widget's model changes in the page and is sent to the server)."""
    assert _model(driver, css_class, "(m.value = arguments[1], true)", value)


def _curve_becomes(driver: Any, expected: Any) -> dict[str, list]:
    """Wait until the page draws ``expected`` (the library's table); the page's columns."""
    from selenium.webdriver.support.ui import WebDriverWait

    want_x = expected["alpha"].tolist()
    want_y = expected["test_error"].tolist()
    seen: dict[str, Any] = {}

    def drawn(d: Any) -> bool:
        curve = d.execute_script(_CURVE)
        seen["curve"] = curve
        return bool(curve) and curve["x"] == want_x and curve.get("test_error") == want_y

    try:
        WebDriverWait(driver, WAIT, poll_frequency=0.1).until(drawn)
    except Exception:  # the assertion below says what the page drew
        pass
    curve = seen["curve"] or {}
    assert curve.get("x") == want_x and curve.get("test_error") == want_y, curve
    return curve


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("explore-server")
    with served("--n-points", str(N), tmp=tmp) as (_proc, url):
        yield url


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def driver(server: str, downloads: Path) -> Iterator[Any]:
    with chrome(downloads=downloads, network_log=True) as drv:
        yield drv


def _open(driver: Any, url: str) -> None:
    load(driver, url)
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(_CURVE) is not None)


def test_the_page_loads_with_no_error_and_no_request_outside_the_server(
    server: str, driver: Any
) -> None:
    console_errors(driver)
    requested_urls(driver)
    _open(driver, server)
    _curve_becomes(driver, library_curve(0.1, N))
    assert not console_errors(driver)
    origin = server.rstrip("/")
    ws = origin.replace("http://", "ws://")
    outside = sorted(
        u
        for u in requested_urls(driver)
        if not u.startswith((origin + "/", ws + "/", "data:", "blob:"))
    )
    assert not outside, outside  # the page works offline
    assert origin.startswith("http://127.0.0.1:")


def test_moving_lambda_redraws_the_librarys_curve_and_the_url(server: str, driver: Any) -> None:
    _open(driver, server)
    _curve_becomes(driver, library_curve(0.1, N))
    _set(driver, "gm-lam-slider", -1.5)
    lam = float(f"{10**-1.5:.4g}")
    curve = _curve_becomes(driver, library_curve(lam, N))
    assert np.array_equal(curve["train_error"], library_curve(lam, N)["train_error"])
    assert _model(driver, "gm-field-lam", "m.value") == repr(lam)  # the exact entry
    query = ExplorerState(n_points=N, lam=lam).to_query()
    deadline = time.monotonic() + WAIT
    while driver.execute_script("return window.location.search") != "?" + query:
        assert time.monotonic() < deadline, driver.execute_script("return location.search")
        time.sleep(0.1)
    assert not console_errors(driver)


@pytest.mark.parametrize(
    ("field", "text", "state"),
    [
        ("rho", "0.5,0.6", ExplorerState(n_points=N, rho=(0.5, 0.6))),
        ("lam", "-1", ExplorerState(n_points=N, lam=-1.0)),
    ],
)
def test_a_bad_value_shows_its_message_beside_the_control(
    server: str, driver: Any, field: str, text: str, state: ExplorerState
) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    _open(driver, server)
    _set(driver, f"gm-field-{field}", text)
    message = validate(state)[field]  # the library's own words
    shown = WebDriverWait(driver, WAIT).until(
        lambda d: _model(d, f"gm-error-{field}", "m.visible ? m.text : null")
    )
    assert message in html.unescape(shown)
    # beside the control: right below it, in the same column
    box = "return arguments[0].getBoundingClientRect().toJSON();"
    control = driver.execute_script(box, driver.execute_script(_ELEMENT, f"gm-field-{field}"))
    note = driver.execute_script(box, driver.execute_script(_ELEMENT, f"gm-error-{field}"))
    assert 0 <= note["top"] - control["bottom"] < 30, (control, note)
    assert abs(note["left"] - control["left"]) < 30, (control, note)
    assert not console_errors(driver)


def test_the_csv_download_is_the_librarys(server: str, driver: Any, downloads: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    lam = 0.05
    _open(driver, server + "?" + ExplorerState(n_points=N, lam=lam).to_query())
    _curve_becomes(driver, library_curve(lam, N))
    button = driver.execute_script(_ELEMENT, "gm-download-csv")
    # Panel's download button listens on its anchor: a click asks the server for the file
    driver.execute_script("arguments[0].shadowRoot.querySelector('a').click();", button)
    target = downloads / "curve.csv"
    WebDriverWait(driver, WAIT).until(
        lambda d: target.is_file() and not list(downloads.glob("*.crdownload"))
    )
    assert target.read_text() == library_curve(lam, N).to_csv(index=False)


def test_a_state_url_restores_the_view(server: str, driver: Any) -> None:
    state = ExplorerState(n_points=N, lam=0.2, rho=(0.3, 0.7), show=("test_error", "test_loss"))
    _open(driver, server + "?" + state.to_query())
    import gaussmix as gm

    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary", rho=[0.3, 0.7])
    expected = gm.learning_curve(mix, "logistic", np.geomspace(0.2, 8.0, N), lam=0.2)
    curve = _curve_becomes(driver, expected)
    assert curve["test_loss"] == expected["test_loss"].tolist()
    assert _model(driver, "gm-field-lam", "m.value") == "0.2"
    assert _model(driver, "gm-field-rho", "m.value") == "0.3,0.7"
    assert not console_errors(driver)
