"""The built docs site, checked in a real browser (Debian's headless Chromium, via Selenium).

The site is served from a loopback HTTP server (port chosen by the OS) and every page is
loaded: no console error, every image loaded; the theory page's mathematics is laid out as
MathML with no TeX left in its text, set in the math font the site ships (every glyph drawn
from it, a display sum as tall as the font's MATH table asks); at a phone's width every
formula can be reached (a wide one scrolls in its own box, the page never scrolls
sideways); the search answers queries with digits ("2", "Theorem 2") as well as words, with
no error of its worker; an image opens full size in the lightbox on click; the home page
fits a phone's width.

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
import re
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
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


#: the math font the site ships (docs/assets/fonts) and names for ``math`` in its stylesheet
MATH_FONT = "STIX Math"
MATH_FONT_FILE = "assets/fonts/STIXMath-Regular.otf"


def _display_operator_min_height(site: Path) -> float:
    """The math font's DisplayOperatorMinHeight (its MATH table), in em: the least height
    of a large operator such as a sum in display style, when the font is the one used."""
    from fontTools.ttLib import TTFont  # a dependency of matplotlib

    font = TTFont(site / MATH_FONT_FILE)
    constants = font["MATH"].table.MathConstants
    return constants.DisplayOperatorMinHeight / font["head"].unitsPerEm


def test_the_mathematics_is_set_in_the_shipped_math_font(
    site: Path, base_url: str, driver: Any
) -> None:
    load(driver, base_url + "theory/")
    loaded = driver.execute_async_script(
        """const done = arguments[0];
           document.fonts.ready.then(() => done(Array.from(document.fonts)
               .filter(f => f.status === 'loaded').map(f => f.family.replace(/"/g, ''))));"""
    )
    assert MATH_FONT in loaded, loaded  # the site's file, loaded (no request outside: below)
    family = driver.execute_script(
        "return getComputedStyle(document.querySelector('article math')).fontFamily"
    )
    assert family.replace('"', "").startswith(MATH_FONT), family
    assert not driver.execute_script(FOREIGN_REQUESTS)
    # every glyph of the display formulas is drawn from that font (what Chromium reports
    # it used for each element's text), none from a fallback of the system
    driver.execute_cdp_cmd("DOM.enable", {})
    driver.execute_cdp_cmd("CSS.enable", {})
    try:
        root = driver.execute_cdp_cmd("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
        nodes = driver.execute_cdp_cmd(
            "DOM.querySelectorAll",
            {"nodeId": root, "selector": ".gaussmix-math :is(mi, mo, mn)"},
        )["nodeIds"]
        used: dict[tuple[str, bool], int] = {}
        for node in nodes:
            fonts = driver.execute_cdp_cmd("CSS.getPlatformFontsForNode", {"nodeId": node})
            for f in fonts["fonts"]:
                key = (f["familyName"], bool(f.get("isCustomFont")))
                used[key] = used.get(key, 0) + f["glyphCount"]
    finally:
        driver.execute_cdp_cmd("CSS.disable", {})
        driver.execute_cdp_cmd("DOM.disable", {})
    assert len(nodes) >= 500 and used and set(used) == {(MATH_FONT, True)}, used
    # and laid out with its MATH table: a sum in display style takes the display size
    sums = driver.execute_script(
        """return Array.from(document.querySelectorAll('.gaussmix-math mo'))
               .filter(o => o.textContent === '\u2211'
                            && getComputedStyle(o).mathStyle === 'normal')
               .map(o => o.getBoundingClientRect().height
                         / parseFloat(getComputedStyle(o).fontSize));"""
    )
    assert len(sums) >= 3, sums
    least = _display_operator_min_height(site)
    assert min(sums) >= least, (least, sums)


#: a display formula's box, its content's extent (the union of its elements' boxes) and the
#: box's scrollable width, and every inline formula's width against its article's
_PHONE_MATH = """
const box = e => e.getBoundingClientRect();
const article = box(document.querySelector('article'));
const display = Array.from(document.querySelectorAll('article .gaussmix-math')).map(div => {
    const parts = Array.from(div.querySelectorAll('math *')).map(box)
        .filter(r => r.width > 0);
    return {
        tex: div.textContent.slice(0, 60),
        left: box(div).left, scroll: div.scrollWidth, client: div.clientWidth,
        overflow: getComputedStyle(div).overflowX,
        from: Math.min(...parts.map(r => r.left)), to: Math.max(...parts.map(r => r.right)),
    };
});
const inline = Array.from(document.querySelectorAll('article math:not([display=block])'))
    .filter(m => box(m).width > article.width + 0.5)
    .map(m => m.textContent.slice(0, 60));
return {
    inner: window.innerWidth, page: document.documentElement.scrollWidth,
    display: display, inline: inline,
};
"""


def _math_pages(site: Path) -> list[str]:
    return [p for p in _pages(site) if "<math" in (site / p / "index.html").read_text("utf-8")]


def test_every_formula_is_reachable_at_phone_width(site: Path, base_url: str, driver: Any) -> None:
    pages = _math_pages(site)
    assert "theory/" in pages, pages
    width, height = PHONE
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 2, "mobile": True},
    )
    problems, n_display, n_scrolled = [], 0, 0
    try:
        for page in pages:
            load(driver, base_url + page)
            driver.execute_async_script("document.fonts.ready.then(arguments[0])")
            layout = driver.execute_script(_PHONE_MATH)
            if layout["inner"] != width or layout["page"] > width:
                problems.append(f"/{page}: the page is {layout['page']} px wide at {width}")
            for tex in layout["inline"]:
                problems.append(f"/{page}: an inline formula wider than the text: {tex}")
            for d in layout["display"]:
                n_display += 1
                n_scrolled += d["scroll"] > d["client"]
                # the whole formula lies within what its box shows or scrolls to
                reachable = (
                    d["left"] - 0.5 <= d["from"] and d["to"] <= d["left"] + d["scroll"] + 0.5
                )
                scrolls = d["scroll"] <= d["client"] or d["overflow"] in ("auto", "scroll")
                if not (reachable and scrolls):
                    problems.append(f"/{page}: a formula out of reach: {d}")
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert not problems, "\n".join(problems)
    # the check saw formulas, and some wider than the phone that scroll in their own box
    assert n_display >= 15 and n_scrolled >= 1, (n_display, n_scrolled)


#: every ``\\label`` of the paper's LaTeX source: names a reader of its PDF never sees (the
#: site cites the paper's equation, theorem and section numbers instead)
PAPER_LABELS = (
    "sec:intro", "joint", "ERM", "sec:main", "set:assump", "assu:conv", "the:1", "spgeneral",
    "th:2", "eq:errors", "corr:1", "eq:corr1", "sec:examples", "sec:examples:sparse",
    "fig:eg1:setup", "fig:eg1:lasso", "eq:sparse", "sec:examples:multi", "fig:manyk",
    "fig:EvsLambda", "sec:examples:mnist", "fig:mnist", "fig:mnistrf", "sec:app:proof",
    "sec:req_back", "breg_dist", "bregman_res", "eq:D-firm", "eq:jacob", "canon_AMP",
    "eq:mat_ons", "th:SE", "ERM_bis", "Ztilde", "inter-ERM", "student_1", "new_functions",
    "build_AMP", "block_res_loss", "eq:res_reg", "block_res_reg", "def_eta", "prox-opti",
    "final_AMP", "block_SE", "lemma:fixed_point", "lemma:conv_traj", "partial_sol", "grad_m",
    "final_AMP_SE", "app:strct", "app:unique", "sec:proof_conv", "gauss_interp1",
    "gauss_interp2", "sec:app:replicas", "app:replica", "eq:app:rsfree", "app:eq:sphat",
    "app:eq:sp", "app:replica:errors", "app:numint", "sec:app:simpli", "eq:spDelta",
    "eq:spsquare", "app:eq:proxce", "app:eq:lam0", "sec:app:simpli:k2", "sparsecorr",
    "sec:app:bayes", "sec:app:realdata", "fig:app:trained", "fig:app:xor", "fig:app:2vs4",
    "fig:app:2vs10", "eq:app:4vs2",
)  # fmt: skip
#: label names that are also words of the text: looked for only where an equation is cited
_WORD_LABELS = {"joint", "ERM"}
#: the parts of the labels coined for the source, looked for alone too ("corr1" of
#: "eq:corr1", as the site used to cite it)
_COINED = {"rsfree", "sphat", "spsquare", "spDelta", "proxce", "numint", "simpli"}


def _label_patterns() -> list[re.Pattern[str]]:
    names = {lab for lab in PAPER_LABELS if lab not in _WORD_LABELS}
    for lab in PAPER_LABELS:
        *_, last = lab.split(":")
        if ":" in lab and (last in _COINED or (re.search(r"\d", last) and not last.isdigit())):
            names.add(last)
    patterns = [re.compile(rf"(?<![\w.-]){re.escape(n)}(?![\w:-])") for n in sorted(names)]
    for word in sorted(_WORD_LABELS | {"errors", "sparse"}):  # cited as eq. ERM, eq. errors
        patterns.append(re.compile(rf"\b[Ee]qs?\.\s*[(`]?{word}\b"))
    return patterns


class _Text(HTMLParser):
    """The text of a page's article, as a reader sees it (no scripts, no styles)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.skip, self.parts = 0, 0, []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.depth += tag == "article"
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag == "article"
        self.skip -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if self.depth > 0 and not self.skip:
            self.parts.append(data)


def test_no_label_of_the_papers_source_is_shown(site: Path) -> None:
    patterns = _label_patterns()
    assert len(patterns) >= len(PAPER_LABELS)
    found, n_pages = [], 0
    for page in _pages(site):
        parser = _Text()
        parser.feed((site / page / "index.html").read_text(encoding="utf-8"))
        text = " ".join(parser.parts)
        n_pages += bool(text.strip())
        for pattern in patterns:
            for m in pattern.finditer(text):
                context = text[max(0, m.start() - 40) : m.end() + 40].replace("\n", " ")
                found.append(f"/{page}: {m.group(0)!r} in ...{context}...")
    assert n_pages >= 20
    assert not found, "\n".join(found)


#: queries of the site search and an anchor that must be among their results (its end);
#: digits among them: lunr's automaton of terms merged nodes on digit labels, and every
#: query with the word "2" failed in the search worker (docs/_hooks/gaussmix_search.py)
SEARCHES = {
    "solve": ".solve",  # the API entry of the solver (gaussmix.theory.solve.solver.solve today)
    "2": None,
    "Theorem 2": "theory/#theorem-2-the-errors-and-the-loss",
    "alpha 2": None,
    "Theorem 1": "theory/#theorem-1-the-self-consistent-equations",
    "3": None,
    "lasso": None,
    "2021": None,
}


def _search(driver: Any, base_url: str, query: str) -> tuple[list[str], list[str]]:
    """The result links of the site search for ``query``, and the browser's messages
    about the search worker (warnings included: the worker reports a failed query by
    ``console.warn``) or of level SEVERE."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    load(driver, base_url)
    driver.get_log("browser")  # start from an empty log
    box = driver.find_element(By.CSS_SELECTOR, "input.md-search__input")
    WebDriverWait(driver, WAIT).until(lambda d: box.is_displayed())
    box.click()
    box.send_keys(query)

    def answered(d: Any) -> dict[str, list[str]] | None:
        # the worker has answered when the count of results is shown ("No matching
        # documents" included)
        return d.execute_script(
            """const meta = document.querySelector('.md-search-result__meta');
               if (!meta || !/matching document/i.test(meta.innerText)) return null;
               return {hrefs: Array.from(document.querySelectorAll('.md-search-result__item a'))
                   .map(a => a.getAttribute('href'))};"""
        )

    found = WebDriverWait(driver, WAIT).until(answered)["hrefs"]
    logs = [
        e["message"]
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE" or "search" in e["message"].lower()
    ]
    return found, logs


@pytest.mark.parametrize("query", list(SEARCHES))
def test_search_finds_results_with_no_worker_error(base_url: str, driver: Any, query: str) -> None:
    found, logs = _search(driver, base_url, query)
    assert not logs, f"search {query!r}: {logs}"
    assert found, f"search {query!r} found nothing"
    anchor = SEARCHES[query]
    if anchor is not None:
        assert any(h.endswith(anchor) for h in found), (query, found)


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
