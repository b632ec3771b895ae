"""The built docs site, checked in a real browser (Debian's headless Chromium, via Selenium).

The site is served from a loopback HTTP server (port chosen by the OS) and every page is
loaded: no console error, every image loaded; the theory page's mathematics is laid out as
MathML with no TeX left in its text; the search finds the solver for "solve"; an image
opens full size in the lightbox on click; the home page fits a phone's width.

Needs the built site in ``GAUSSMIX_SITE_DIR`` (``mkdocs build --strict --site-dir DIR``;
with ``GAUSSMIX_ATLAS_DIR`` set for the gallery's images) and Chromium with its driver
(``apt-get install chromium chromium-driver``; other paths through ``GAUSSMIX_CHROMIUM`` and
``GAUSSMIX_CHROMEDRIVER``).  Without them the tests are skipped, saying which is missing
(``conftest.skip_optional``: a failure under ``GAUSSMIX_REQUIRE_OPTIONAL=1``, as in CI).
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _browser import FOREIGN_REQUESTS, WAIT, chrome, console_errors, load
from conftest import skip_optional

pytestmark = pytest.mark.browser

SITE_ENV = "GAUSSMIX_SITE_DIR"
ROOT = Path(__file__).resolve().parents[1]
#: a phone's viewport (CSS pixels)
PHONE = (390, 844)
#: TeX that must not survive on a rendered page
RAW_TEX = ("$$", "\\(", "\\[", "\\frac", "\\mathbb", "\\hat", "\\sum", "\\begin", "\\alpha")


@pytest.fixture(scope="module")
def site() -> Path:
    value = os.environ.get(SITE_ENV)
    if not value:
        skip_optional(
            f"{SITE_ENV} is not set: build the site with 'mkdocs build --strict --site-dir DIR' "
            f"and run with {SITE_ENV}=DIR"
        )
    path = Path(value)
    if not (path / "index.html").is_file():
        skip_optional(
            f"{SITE_ENV}={value} has no index.html: build it with "
            f"'mkdocs build --strict --site-dir {value}'"
        )
    return path


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    """The site served on 127.0.0.1 at a port the OS chooses."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # no request log on stderr
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def driver(site: Path) -> Iterator[Any]:
    with chrome() as drv:
        yield drv


def _pages(site: Path) -> list[str]:
    """Every page of the site, as a URL path ('' for the home page)."""
    return sorted(
        p.parent.relative_to(site).as_posix().removeprefix(".") + "/" if p.parent != site else ""
        for p in site.rglob("index.html")
    )


_BROKEN_IMAGES = """
return Array.from(document.images)
    .filter(img => !(img.complete && img.naturalWidth > 0))
    .map(img => img.getAttribute('src'));
"""


def test_every_page_loads_with_no_console_error_and_every_image(
    site: Path, base_url: str, driver: Any
) -> None:
    pages = _pages(site)
    assert "" in pages and "theory/" in pages and "gallery/" in pages and len(pages) >= 20
    driver.get_log("browser")  # start from an empty log
    problems, n_images = [], 0
    for page in pages:
        load(driver, base_url + page)
        driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        broken = driver.execute_script(_BROKEN_IMAGES)
        n_images += driver.execute_script("return document.images.length")
        errors = console_errors(driver)
        foreign = driver.execute_script(FOREIGN_REQUESTS)  # the site needs no network
        if broken or errors or foreign:
            problems.append(
                f"/{page}: broken images {broken}, console errors {errors}, "
                f"requests outside the site {foreign}"
            )
    assert not problems, "\n".join(problems)
    assert n_images >= 3  # the home page's and the tutorial's figures at least


def test_the_theory_page_math_is_rendered(base_url: str, driver: Any) -> None:
    load(driver, base_url + "theory/")
    n_math = driver.execute_script("return document.querySelectorAll('article math').length")
    n_block = driver.execute_script(
        "return document.querySelectorAll('article math[display=block]').length"
    )
    assert n_math >= 50 and n_block >= 15
    text = driver.execute_script("return document.querySelector('article').innerText")
    left = [t for t in RAW_TEX if t in text]
    assert not left, f"raw TeX on the rendered theory page: {left}"
    assert driver.execute_script("return document.querySelectorAll('.arithmatex').length") == 0
    # laid out as mathematics, not as a run of letters: every fraction's numerator sits
    # above its denominator, and a display formula is taller than a line of text
    stacked = driver.execute_script(
        """
        const fr = Array.from(document.querySelectorAll('article mfrac'));
        return [fr.length, fr.filter(f => {
            const a = f.children[0].getBoundingClientRect();
            const b = f.children[1].getBoundingClientRect();
            return a.height > 0 && b.height > 0 && a.bottom <= b.top + 1;
        }).length];
        """
    )
    assert stacked[0] >= 5 and stacked[1] == stacked[0], stacked
    tallest = driver.execute_script(
        """return Math.max(...Array.from(document.querySelectorAll('article math[display=block]'))
               .map(m => m.getBoundingClientRect().height));"""
    )
    line = driver.execute_script(
        "return parseFloat(getComputedStyle(document.querySelector('article p')).lineHeight)"
    )
    assert tallest > 1.5 * line


def test_search_finds_the_solver(base_url: str, driver: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    load(driver, base_url)
    box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
    WebDriverWait(driver, WAIT).until(lambda d: box.is_displayed())
    box.click()
    box.send_keys("solve")

    def hrefs(d: Any) -> list[str]:
        return d.execute_script(
            "return Array.from(document.querySelectorAll('.md-search-result__item a'))"
            ".map(a => a.getAttribute('href'))"
        )

    found = WebDriverWait(driver, WAIT).until(lambda d: hrefs(d) or False)
    # the API entry of the solver, wherever the reference puts it (its anchor is the
    # qualified name: gaussmix.theory.solver.solve today)
    assert any(h.split("#")[-1].endswith(".solve") for h in found), found
    assert not console_errors(driver)


def _open_lightbox(driver: Any, base_url: str, page: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    load(driver, base_url + page)
    links = driver.find_elements(By.CSS_SELECTOR, "article a.glightbox")
    if not links:
        skip_optional(
            f"/{page} has no image: build the site with GAUSSMIX_ATLAS_DIR set (gaussmix "
            "figure all --fast --out DIR) for the gallery's images"
        )
    link = links[0]
    href = link.get_attribute("href")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.find_element(By.TAG_NAME, "img").click()
    shown = WebDriverWait(driver, WAIT).until(
        lambda d: d.execute_script(
            """const img = document.querySelector('.glightbox-container .gslide.current img');
               return img && img.complete && img.naturalWidth > 0 ? img.src : null;"""
        )
    )
    assert shown == href
    # full size: once its opening animation is over, wider on screen than in the page
    thumb = link.find_element(By.TAG_NAME, "img").rect["width"]
    WebDriverWait(driver, WAIT).until(
        lambda d: (
            d.execute_script(
                "return document.querySelector('.glightbox-container .gslide.current img')"
                ".getBoundingClientRect().width"
            )
            > thumb
        )
    )
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    WebDriverWait(driver, WAIT).until(
        lambda d: not d.execute_script("return document.querySelector('.glightbox-container')")
    )
    assert not console_errors(driver)


def test_gallery_images_open_in_the_lightbox(base_url: str, driver: Any) -> None:
    _open_lightbox(driver, base_url, "gallery/")


def test_the_gallery_shows_the_papers_settings_and_what_ci_checks(
    base_url: str, driver: Any
) -> None:
    """Every figure of the gallery shows its image at the paper's settings (committed,
    ``gallery/NAME.png``) and, smaller, its ``--fast`` image (``atlas/NAME.png``, remade
    by CI), both loaded, each said to be what it is."""
    from gaussmix.figures import FIGURES

    load(driver, base_url + "gallery/")
    shown = driver.execute_script(
        """
        const out = {};
        for (const h of document.querySelectorAll('article h2[id]')) {
            const imgs = [];
            let e = h.nextElementSibling;
            while (e && e.tagName !== 'H2') {
                for (const img of e.querySelectorAll('img')) {
                    img.scrollIntoView();
                    imgs.push([new URL(img.src).pathname, img.complete && img.naturalWidth > 0,
                               img.getBoundingClientRect().width]);
                }
                imgs.push(['text', e.innerText || '', 0]);
                e = e.nextElementSibling;
            }
            out[h.id] = imgs;
        }
        return out;
        """
    )
    manifest = json.loads((ROOT / "docs" / "gallery" / "manifest.json").read_text())
    pending = {r["name"] for r in manifest.get("pending", [])}
    for name in FIGURES:
        items = shown[name]
        images = [i for i in items if i[0] != "text"]
        text = " ".join(i[1] for i in items if i[0] == "text")
        paths = [i[0] for i in images]
        if name in pending:  # not made at the paper's settings yet: the --fast image, said so
            assert paths == [f"/atlas/{name}.png"] and images[0][1], (name, images)
            assert "the image is the --fast preset" in text, name
            continue
        assert paths == [f"/gallery/{name}.png", f"/atlas/{name}.png"], (name, paths)
        assert all(ok for _, ok, _ in images), (name, images)
        assert images[1][2] < images[0][2], (name, images)  # the --fast one is smaller
        assert "Shown here (the paper's settings)" in text, name
        assert "What CI checks (small image: the --fast preset)" in text, name
    assert not console_errors(driver)


def test_home_page_figure_opens_in_the_lightbox(base_url: str, driver: Any) -> None:
    _open_lightbox(driver, base_url, "")


def test_home_page_at_phone_width(base_url: str, driver: Any) -> None:
    width, height = PHONE
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 3, "mobile": True},
    )
    try:
        load(driver, base_url)
        layout = driver.execute_script(
            """
            const art = document.querySelector('article');
            const code = art.querySelector('pre');
            const fig = art.querySelector('img');
            const r = e => e.getBoundingClientRect();
            return {
                inner: window.innerWidth,
                scroll: document.documentElement.scrollWidth,
                code: [r(code).left, r(code).right, r(code).height],
                fig: [r(fig).left, r(fig).right, fig.naturalWidth],
                text: code.innerText,
            };
            """
        )
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert layout["inner"] == width
    assert layout["scroll"] <= width, layout  # no horizontal scroll
    left, right, h = layout["code"]
    assert 0 <= left < right <= width and h > 100  # the example, within the screen
    assert "gm.learning_curve" in layout["text"]
    left, right, natural = layout["fig"]
    assert 0 <= left < right <= width and natural > 0  # its figure, scaled to the screen
