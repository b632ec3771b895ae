"""Helpers shared by the tests that drive Debian's headless Chromium through Selenium
(tests/test_site_browser.py: the docs site; tests/test_explore_browser.py: the explorer).

Chromium and its driver are found on the PATH or in /usr/bin (other paths through
``GAUSSMIX_CHROMIUM`` and ``GAUSSMIX_CHROMEDRIVER``); without them the caller is skipped
(``conftest.skip_optional``: a failure under ``GAUSSMIX_REQUIRE_OPTIONAL=1``, as in CI).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import skip_optional

#: seconds to wait for anything the browser does (a bound on a hang, with a margin for a
#: browser that shares the cores with another test worker and the served explorer's work)
WAIT = 120

#: the resources a page loaded from anywhere but its own origin (data: and blob: URLs are
#: the page's own)
FOREIGN_REQUESTS = """
return performance.getEntriesByType('resource').map(e => e.name)
    .filter(u => !u.startsWith(location.origin + '/') && !u.startsWith('data:')
                 && !u.startsWith('blob:'));
"""


def executable(env: str, *names: str) -> str | None:
    """The path of a program: ``$env`` if set, else the first of ``names`` found."""
    if os.environ.get(env):
        return os.environ[env]
    for name in names:
        found = shutil.which(name) or (
            f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None
        )
        if found:
            return found
    return None


@contextlib.contextmanager
def chrome(
    *, downloads: Path | None = None, network_log: bool = False, offline: bool = False
) -> Iterator[Any]:
    """A headless Chromium driven by Selenium (skipped when it is missing); ``downloads``:
    the directory its downloads go to; ``network_log``: keep the performance log, which
    lists every request (:func:`requested_urls`); ``offline``: every host name but
    ``localhost`` and ``127.0.0.1`` resolves to nothing (a page that needs a CDN fails as
    on a machine with no network; its request is still in the performance log)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the test extra")
    browser = executable("GAUSSMIX_CHROMIUM", "chromium", "chromium-browser")
    chromedriver = executable("GAUSSMIX_CHROMEDRIVER", "chromedriver")
    if browser is None or chromedriver is None:
        skip_optional(
            "Chromium or its driver is missing: apt-get install chromium chromium-driver"
        )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--no-first-run",
        "--window-size=1280,900",
    ):
        options.add_argument(arg)
    if offline:
        rules = "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"
        options.add_argument(f"--host-resolver-rules={rules}")
    logs = {"browser": "ALL"}
    if network_log:
        logs["performance"] = "ALL"
    options.set_capability("goog:loggingPrefs", logs)
    if downloads is not None:
        options.add_experimental_option(
            "prefs",
            {"download.default_directory": str(downloads), "download.prompt_for_download": False},
        )
    # the driver's path is given, so Selenium Manager never looks for (or downloads) one
    drv = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    drv.set_page_load_timeout(WAIT)
    if downloads is not None:
        drv.execute_cdp_cmd(
            "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
        )
    try:
        yield drv
    finally:
        drv.quit()


def load(driver: Any, url: str) -> None:
    """Open ``url`` and wait until the document has loaded."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, WAIT).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def console_errors(driver: Any) -> list[str]:
    """The console messages of level SEVERE since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def requested_urls(driver: Any) -> set[str]:
    """Every URL the browser requested since the last call (the performance log of a
    driver made with ``network_log=True``): page, scripts, styles, images, websockets."""
    urls = set()
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent":
            urls.add(params["request"]["url"])
        elif message["method"] == "Network.webSocketCreated":
            urls.add(params["url"])
    return urls
