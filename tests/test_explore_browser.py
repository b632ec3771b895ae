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
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _browser import WAIT, chrome, console_errors, load, requested_urls
from _explore import library_curve, served, server_report

pytestmark = pytest.mark.browser

pytest.importorskip("panel", reason="the explorer's interface is the 'explore' extra")

from gaussmix.explore import ExplorerState, validate  # noqa: E402
from gaussmix.explore.engine import COARSE_BUDGET_ENV  # noqa: E402
from gaussmix.explore.state import SCREEN_TOL  # noqa: E402

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


def _curve_becomes(driver: Any, *expected: Any) -> dict[str, list]:
    """Wait until the page draws one of ``expected`` (the library's tables); the page's
    columns."""
    from selenium.webdriver.support.ui import WebDriverWait

    wanted = [(e["alpha"].tolist(), e["test_error"].tolist()) for e in expected]
    seen: dict[str, Any] = {}

    def matches(curve: Any) -> bool:
        return bool(curve) and (curve["x"], curve.get("test_error")) in wanted

    def drawn(d: Any) -> bool:
        seen["curve"] = d.execute_script(_CURVE)
        return matches(seen["curve"])

    try:
        WebDriverWait(driver, WAIT, poll_frequency=0.1).until(drawn)
    except Exception:  # the assertion below says what the page drew
        pass
    curve = seen["curve"] or {}
    status = _model(driver, "gm-status", "m.text")  # what the page says it is doing
    assert matches(curve), _waited_in_vain(driver, status, curve)
    return curve


#: the served explorer's report (``_explore.server_report``), set by the fixture ``server``
_REPORT: dict[str, Callable[[], str]] = {}


def _waited_in_vain(driver: Any, *seen: Any) -> str:
    """The message of a wait for the page that ran out: what the test ``seen``, the page's
    console log, and what the server is doing (its error stream's tail, every thread's
    stack, its view of its explorers' jobs)."""
    try:
        console = "\n".join(f"{e['level']} {e['message']}" for e in driver.get_log("browser"))
    except Exception as exc:  # noqa: BLE001 - the rest of the message still helps
        console = f"(not read: {exc!r})"
    server = _REPORT["server"]() if "server" in _REPORT else "(no report)"
    return f"{seen!r}\n--- the page's console ---\n{console}\n{server}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("explore-server")
    # a coarse pass drawn whole however slow the machine (its budget is CPU seconds: 0.1-0.2 s
    # for the slow state here, over 0.3 s on a slower one, which then goes point by point)
    env = {COARSE_BUDGET_ENV: "inf"}
    with served("--n-points", str(N), tmp=tmp, env=env, debug=True) as (proc, url):
        _REPORT["server"] = lambda: server_report(proc, tmp)
        try:
            yield url
        finally:
            _REPORT.clear()


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
        where = driver.execute_script("return location.search")
        assert time.monotonic() < deadline, _waited_in_vain(driver, where)
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
    expected = gm.learning_curve(
        mix, "logistic", np.geomspace(0.2, 8.0, N), lam=0.2, tol=SCREEN_TOL, estimate_error=False
    )
    curve = _curve_becomes(driver, expected)
    assert curve["test_loss"] == expected["test_loss"].tolist()
    assert _model(driver, "gm-field-lam", "m.value") == "0.2"
    assert _model(driver, "gm-field-rho", "m.value") == "0.3,0.7"
    assert not console_errors(driver)


def _visible_text(driver: Any, css_class: str) -> str | None:
    """The text of the rendered element carrying ``css_class`` if it is on the page with a
    size (not hidden), else None."""
    el = driver.execute_script(_ELEMENT, css_class)
    if el is None:
        return None
    box = driver.execute_script("return arguments[0].getBoundingClientRect().toJSON();", el)
    if box["width"] <= 0 or box["height"] <= 0:
        return None
    text = driver.execute_script(
        "const e = arguments[0]; return (e.shadowRoot ? e.shadowRoot.textContent : '')"
        " + e.textContent;",
        el,
    )
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("lam=abc", "lam must be a number, got 'abc'"),
        ("foo=bar", "foo is not a control of the explorer"),
    ],
)
def test_a_bad_state_url_says_so_after_the_page_settles(
    server: str, driver: Any, query: str, said: str
) -> None:
    """The starting view is drawn (the server's ``--n-points``), and the notice naming the
    bad parameter is still shown once it is: the first draw does not overwrite it."""
    _open(driver, f"{server}?{query}")
    _curve_becomes(driver, library_curve(0.1, N))
    deadline = time.monotonic() + WAIT
    while f"{N} of {N} points" not in (_visible_text(driver, "gm-status") or ""):
        assert time.monotonic() < deadline, _visible_text(driver, "gm-status")
        time.sleep(0.1)
    time.sleep(4 * 0.05)  # a few more polls of the page (POLL_MS): nothing replaces it
    notice = _visible_text(driver, "gm-notice")
    assert notice is not None, "the notice is not shown"
    assert "Not restored" in notice and said in html.unescape(notice), notice
    assert "Showing the starting view instead" in notice
    assert not console_errors(driver)


def test_raising_k_past_a_binary_loss_clears_the_plot_and_says_why(
    server: str, driver: Any
) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    _open(driver, server)
    _curve_becomes(driver, library_curve(0.1, N))
    _set(driver, "gm-field-n_clusters", 3)
    message = validate(ExplorerState(n_points=N, n_clusters=3))["loss"]
    WebDriverWait(driver, WAIT, poll_frequency=0.1).until(
        lambda d: (d.execute_script(_CURVE) or {"x": [0]})["x"] == []
    )
    assert all(v == [] for v in driver.execute_script(_CURVE).values())  # no old curve
    assert _model(driver, "gm-field-n_clusters", "m.value") == 3  # K says what was asked
    status = html.unescape(_visible_text(driver, "gm-status") or "")
    assert "Not computed" in status and message.split(" — ")[0] in status, status
    beside = _model(driver, "gm-error-loss", "m.visible ? m.text : null")
    assert beside and message in html.unescape(beside)
    _set(driver, "gm-field-n_clusters", 2)  # back: the curve is drawn again
    _curve_becomes(driver, library_curve(0.1, N))
    assert not console_errors(driver)


#: the page's horizontal overflow and its viewport's width (CSS pixels)
_WIDTHS = """
const e = document.documentElement;
return {scroll: e.scrollWidth, client: e.clientWidth, inner: window.innerWidth,
        viewport: (document.querySelector('meta[name=viewport]') || {}).content || null};
"""
_BOX = "return arguments[0].getBoundingClientRect().toJSON();"


@pytest.fixture(scope="module")
def phone(server: str) -> Iterator[Any]:
    """A Chromium that shows pages as a phone does: 390 x 844 CSS pixels, touch, the page's
    viewport honoured."""
    with chrome() as drv:
        drv.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True},
        )
        yield drv


def test_on_a_phone_the_controls_stack_above_a_plot_as_wide_as_the_screen(
    server: str, phone: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.keys import Keys

    _open(phone, server)
    _curve_becomes(phone, library_curve(0.1, N))
    widths = phone.execute_script(_WIDTHS)
    assert widths["viewport"] == "width=device-width, initial-scale=1", widths
    assert widths["inner"] == widths["client"] == 390, widths  # not a desktop page scaled
    assert widths["scroll"] <= widths["client"], widths  # no horizontal overflow
    plot = phone.execute_script(_BOX, phone.execute_script(_ELEMENT, "gm-plot"))
    sidebar = phone.execute_script(_BOX, phone.execute_script(_ELEMENT, "gm-sidebar"))
    assert 0 <= plot["left"] and plot["right"] <= 390, plot
    assert plot["width"] >= 0.9 * 390, plot  # the plot stretches to the screen's width
    assert sidebar["bottom"] <= plot["top"] + 1, (sidebar, plot)  # controls above the plot
    assert 0 <= sidebar["left"] and sidebar["right"] <= 390, sidebar
    # a control is usable as on a phone: scrolled to, typed into; the curve is redrawn
    host = phone.execute_script(_ELEMENT, "gm-field-lam")
    box = phone.execute_script(_BOX, host)
    assert 0 <= box["left"] and box["right"] <= 390, box
    field = host.shadow_root.find_element("css selector", "input")
    phone.execute_script("arguments[0].scrollIntoView({block: 'center'});", field)
    field.clear()
    field.send_keys("0.05", Keys.ENTER)
    _curve_becomes(phone, library_curve(0.05, N))
    phone.save_screenshot(str(tmp_path / "phone.png"))  # (kept by pytest for a look)
    assert not console_errors(phone)


#: record every curve the page's plot is given (its ColumnDataSource's data, as drawn)
_RECORD = """
const s = Bokeh.documents[0].get_model_by_name('gm-curve');
window.gmDrawn = [];
s.change.connect(() => {
    window.gmDrawn.push({x: Array.from(s.data.x || []), y: Array.from(s.data.test_error || [])});
});
return true;
"""

#: a state slow enough to watch (K = 3, square loss, lasso: a tenth of a second a point
#: or more), with a coarse pass (at least 2 COARSE_POINTS points)
SLOW = ExplorerState(
    n_clusters=3, loss="square", penalty="l1", delta=(0.5,), lam=0.05, n_points=20
)


def _pairs(table: Any) -> set[tuple[float, float]]:
    return set(zip(table["alpha"].tolist(), table["test_error"].tolist(), strict=True))


def _screen_curve(state: ExplorerState, index: Any = None, init: Any = None) -> Any:
    """The library's curve of ``state`` (at the points ``index`` of its grid), as the
    explorer computes it (``init``: from the curve before a move of one control,
    ``gaussmix.explore.engine.warm_start``)."""
    import gaussmix as gm
    from gaussmix.explore.state import setup

    point, values = setup(state)
    values = values if index is None else values[index]
    return gm.learning_curve(
        point.mixture,
        point.loss,
        values,
        lam=point.lam,
        init=init,
        **point.penalty_kw,
        **point.solve_kw,
    )


def test_a_slow_curve_is_drawn_coarse_first_and_a_move_never_draws_the_old_one(
    server: str, driver: Any
) -> None:
    """The page draws the coarse pass over the whole range, then the whole curve; a move of
    lambda while it computes draws only the new state's points from then on (its coarse
    pass, then its curve: the library's values to the bit), never the old state's."""
    from selenium.webdriver.support.ui import WebDriverWait

    from gaussmix.explore.engine import COARSE_POINTS, _evenly

    moved = SLOW.replace(lam=0.2)
    index = _evenly(SLOW.n_points, COARSE_POINTS)
    before = _screen_curve(SLOW.replace(lam=0.1))  # SLOW starts from it (one control moved)
    old_points = _pairs(_screen_curve(SLOW, init=before)) | _pairs(
        _screen_curve(SLOW, index, init=before)
    )
    coarse, final = _screen_curve(moved, index), _screen_curve(moved)
    # the curve of 3 SLOW.lam, warm from SLOW's (one control moved), if it ends before the
    # second move (its coarse pass is drawn when the test moves): the moved state starts
    # from it then, else cold
    slow_curve = _screen_curve(SLOW, init=before)
    third = _screen_curve(SLOW.replace(lam=3 * SLOW.lam), init=slow_curve)
    coarse_warm = _screen_curve(moved, index, init=third)
    final_warm = _screen_curve(moved, init=third)
    new_points = _pairs(coarse) | _pairs(final) | _pairs(coarse_warm) | _pairs(final_warm)
    assert not old_points & new_points
    load(driver, f"{server}?{SLOW.replace(lam=0.1).to_query()}")  # not SLOW: no cache
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(_CURVE) is not None)
    _curve_becomes(driver, before)
    assert driver.execute_script(_RECORD)
    _set(driver, "gm-field-lam", repr(SLOW.lam))  # the slow state: drawn coarse first
    drawn = _curve_becomes(driver, slow_curve)
    ends = {drawn["x"][0], drawn["x"][-1]}
    snapshots = driver.execute_script("return window.gmDrawn")
    # the whole range drawn (both ends) by the coarse pass before the whole curve
    early = [s for s in snapshots if set(s["x"]) >= ends and len(s["x"]) < SLOW.n_points]
    assert early, [len(s["x"]) for s in snapshots]
    assert set(zip(early[0]["x"], early[0]["y"], strict=True)) <= old_points
    # moved while the slow state computes (its coarse pass drawn, not its curve)
    driver.execute_script(_RECORD)
    _set(driver, "gm-field-lam", repr(3 * SLOW.lam))  # yet another slow state, started
    WebDriverWait(driver, WAIT, poll_frequency=0.05).until(
        lambda d: len(d.execute_script("return window.gmDrawn")) >= 1
    )
    driver.execute_script(_RECORD)
    _set(driver, "gm-field-lam", repr(moved.lam))  # ... and moved again mid-computation
    _curve_becomes(driver, final, final_warm)
    snapshots = driver.execute_script("return window.gmDrawn")
    mine = [i for i, s in enumerate(snapshots) if set(zip(s["x"], s["y"])) & new_points]
    assert mine, snapshots
    for s in snapshots[mine[0] :]:  # from the new state's first point: only its points
        stale = set(zip(s["x"], s["y"], strict=True)) - new_points
        assert not stale, sorted(stale)
    assert not console_errors(driver)


#: a K = 4 lasso state whose first point takes seconds (a cold start at small lambda: one
#: point of the curve in 20 s of a loaded machine), balanced, so that two clusters are a
#: valid state too
GLACIAL = ExplorerState(
    n_clusters=4,
    loss="cross-entropy",
    penalty="l1",
    delta=(1.1399,),
    lam=0.00125,
    alpha_min=4.6942,
    alpha_max=68.1796,
)
#: the status of a running job once its clock shows (gaussmix.explore.status)
_CLOCKED = re.compile(r"computing: .*?, (\d+) s\b")


def test_a_k4_lasso_curve_keeps_the_page_live_and_a_move_takes_effect(
    server: str, driver: Any
) -> None:
    """A K = 4 lasso curve takes seconds a point: while no point arrives the page says
    what it computes and for how long (its clock rewritten as the seconds pass: a live
    page, never a frozen one), and a control moved meanwhile takes effect (the slow curve
    cancelled, the new state's curve drawn: the library's)."""
    fast = GLACIAL.replace(n_clusters=2)
    assert not validate(GLACIAL) and not validate(fast)
    _open(driver, f"{server}?{GLACIAL.to_query()}")
    seconds: set[int] = set()
    deadline = time.monotonic() + WAIT
    while len(seconds) < 2:  # two readings of the clock
        assert time.monotonic() < deadline, seconds
        hit = _CLOCKED.search(_visible_text(driver, "gm-status") or "")  # as the user sees it
        if hit:
            seconds.add(int(hit.group(1)))
        time.sleep(0.1)
    _set(driver, "gm-field-n_clusters", 2)  # moved while the slow curve computes
    _curve_becomes(driver, _screen_curve(fast))
    assert not console_errors(driver)
