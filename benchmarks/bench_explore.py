"""The explorer's redraw time in a real browser (issue 22 target: a binary or K = 3 curve of
40 points redrawn within 0.5 s of a control's change, on 2 cores).

``gaussmix explore`` is served in a subprocess and driven in headless Chromium: the lambda
slider is moved to a new value (never seen before, so that no cached curve is reused) and
the page measures, with its own clock, the time until the first new point is drawn, until
the whole range is drawn (both ends of the grid: the engine's coarse pass for problems with
several outputs, else the curve) and until the whole new curve is drawn (the plot's
``ColumnDataSource`` holds the 40 new points).  The first move of each problem compiles the
solver's kernels and is left out.

Usage: ``python benchmarks/bench_explore.py [--moves 7]`` (needs the ``explore`` extra,
Chromium and chromedriver)
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time

from _timing import machine_line

#: (name, state options of ``gaussmix explore``)
PROBLEMS = (
    ("binary, logistic", ["--loss", "logistic"]),
    ("K = 3, cross-entropy", ["--n-clusters", "3", "--loss", "cross-entropy"]),
    ("K = 3, square", ["--n-clusters", "3", "--loss", "square"]),
)

#: move the slider, then resolve [ms to the first new point, to the whole range drawn (both
#: ends of the grid: the engine's coarse pass, or the curve), to the whole new curve]
_MOVE = """
const [value, n, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const [x0, x1] = [arguments[2], arguments[3]];
const doc = Bokeh.documents[0];
let slider = null;
for (const m of doc.all_models) {
    if (m.css_classes && m.css_classes.includes('gm-lam-slider')) { slider = m; }
}
const source = doc.get_model_by_name('gm-curve');
const before = Array.from(source.data.test_error || []).join();
const t0 = performance.now();
let first = null;
let range = null;
slider.value = value;
const poll = () => {
    const y = Array.from(source.data.test_error || []);
    const changed = y.join() !== before;
    const x = Array.from(source.data.x || []);
    const now = performance.now() - t0;
    if (changed && first === null) { first = now; }
    if (changed && range === null && x[0] === x0 && x[x.length - 1] === x1) { range = now; }
    if (changed && y.length === n && y.every(v => Number.isFinite(v))) {
        done([first, range === null ? now : range, now]);
    } else if (now > 60000) {
        done([first, range, null]);
    } else {
        setTimeout(poll, 2);
    }
};
poll();
"""


def _serve(options: list[str]) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "gaussmix", "explore", "--port", "0", "--no-browser", *options]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = ""
    while "http://" not in line:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            raise SystemExit("the explorer did not start")
    return proc, re.search(r"http://\S+/", line).group(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=7, help="timed moves per problem")
    args = parser.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    print(machine_line())
    head = ("first point", "whole range", "whole curve")
    print(f"{'problem':<24}" + "".join(f" {h + ' (ms)':>18}" for h in head) + "  (median, max)")
    for name, opts in PROBLEMS:
        proc, url = _serve(["--n-points", "40", *opts])
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        driver.set_script_timeout(90)
        try:
            driver.get(url)
            WebDriverWait(driver, 90).until(
                lambda d: d.execute_script(
                    "return window.Bokeh && Bokeh.documents.length && "
                    "Bokeh.documents[0].get_model_by_name('gm-curve').data.x.length === 40"
                )
            )
            firsts, ranges, wholes = [], [], []
            # log10(lambda) from -0.5 down by 0.1: each value new, none cached
            for i in range(args.moves + 1):
                first, span, whole = driver.execute_async_script(
                    _MOVE, -0.5 - 0.1 * i, 40, 0.2, 8.0
                )
                if whole is None:
                    raise SystemExit(f"{name}: the curve was not redrawn within 60 s")
                if i:  # the first move compiles
                    firsts.append(first)
                    ranges.append(span)
                    wholes.append(whole)
                time.sleep(0.2)
        finally:
            driver.quit()
            proc.terminate()
            proc.wait(timeout=30)
        cols = (firsts, ranges, wholes)
        print(
            f"{name:<24}" + "".join(f" {statistics.median(c):>9.0f} {max(c):>8.0f}" for c in cols)
        )


if __name__ == "__main__":
    main()
