"""The explorer's redraw time over the whole control space, in a real browser and in
process (issue 32 item 1; item 2's targets: a 40-point redraw with K <= 3 in a median of
0.5 s and a 95th percentile of 1 s, with K = 4-6 in a median of 2 s).

``--n`` states are drawn by the seeded sampler of ``_explore_space.py`` (K = 2..6, every
loss the library accepts for K, ridge and lasso, lambda log-uniform in [1e-4, 1e2],
unequal priors, Delta, the means' family, alpha ranges in [0.01, 100]; a state that the
explorer's ``validate`` refuses is drawn again, never counted).

In the browser (default): ``gaussmix explore`` is served in a subprocess and driven in
headless Chromium.  For each state the page is opened at the state's URL with lambda half
a decade away (its curve computed and drawn first), then the lambda slider is moved to the
state's lambda (a value never computed: the page's prefetch of the slider's neighbours is
ten steps away) and the page measures, with its own clock, the time from that input event
until the first new point is drawn, until the whole new curve is drawn (the job's status
says it is done and the plot's ``ColumnDataSource`` holds the 40 points, a point without a
fixed point drawn as a gap) and until the next animation frame after it (painted: the
time reported).  The first move after the server starts compiles the solver's kernels and
is left out.

In process (``--in-process``): each state's curve is computed as the page computes it
after the same move of the lambda slider (a fresh ``Session(coarse='auto')`` submits the
state with lambda half a decade away and waits for its curve, untimed, then submits the
state, never computed before, and waits for the whole curve: the session starts it from
the curve before, as the page does; ``--cold``: the state alone, from the cold start;
the explorer's default screen precision, ``--precision library`` for the library's), wall
and CPU time (the process's, the job's thread included: steadier on a loaded machine),
and the wall time until the whole range is drawn (the coarse pass done, where the page
draws one and its budget did not stop it; else the whole curve), in a worker subprocess
warmed once (imports, compiled kernels).  A curve longer than ``--timeout`` seconds has
the worker killed (and a new one started); ``--cpu-timeout``: seconds of the worker's
CPU time (on a loaded machine the wall time is the load's).

Either way a curve longer than ``--timeout`` counts as longer (a timeout), and is
reported; a state that the engine ends with an error (accepted by ``validate``, not
computed) is listed, not timed.  Printed: per group (K <= 3, K = 4-6, and each loss /
penalty) the count, median, 95th percentile (nearest rank) and max, whether item 2's
targets are met, and the ``--slowest`` states with the URL that opens the explorer at
them.

``--fixed``: the earlier fixed path (three problems, lambda moved by a tenth of a decade
from 10^-0.5 down, ``--moves`` each), for comparison with the earlier measurements.

Usage: ``python benchmarks/bench_explore.py [--n 15] [--seed 0] [--timeout 120]``,
``python benchmarks/bench_explore.py --in-process [--n 60] [--json FILE] [--cold]
[--points 1]`` (``--points``: each curve over that many seconds of CPU time point by
point, its rows' steps and CPU milliseconds in the order solved),
``python benchmarks/bench_explore.py --fixed [--moves 7]``, ``--list``: the states drawn,
``--max-k 3``: of the same draws, only those with at most 3 clusters timed (the group with
a 95th-percentile target, in a shorter run)
(the browser modes need the ``explore`` extra, Chromium and chromedriver)
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _explore_space import TARGETS, command, group, label, meets, sample, stats
from _timing import machine_line

from gaussmix.explore import ExplorerState

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


#: move the slider to log10(lambda) arguments[0]; resolve [ms to the first new point, to
#: the whole new curve drawn (the status says the job is done, the plot holds n points),
#: to the next animation frame after it, the status] (null times past arguments[2] ms)
_MOVE_SAMPLED = """
const [value, n, limit, done] = arguments;
const doc = Bokeh.documents[0];
let slider = null;
let status = null;
for (const m of doc.all_models) {
    if (!m.css_classes) { continue; }
    if (m.css_classes.includes('gm-lam-slider')) { slider = m; }
    if (m.css_classes.includes('gm-status') && m.text !== undefined) { status = m; }
}
const source = doc.get_model_by_name('gm-curve');
const before = Array.from(source.data.test_error || []).join();
const t0 = performance.now();
let first = null;
let computing = false;
// every status the server sends is seen (a refused state's "computing..." and its error
// can arrive between two polls)
status.properties.text.change.connect(() => {
    if (status.text.includes('computing')) { computing = true; }
});
slider.value = value;
const poll = () => {
    const y = Array.from(source.data.test_error || []);
    const now = performance.now() - t0;
    const text = status.text;
    if (text.includes('computing')) { computing = true; }
    if (y.join() !== before && first === null) { first = now; }
    const finished = computing && !text.includes('computing') && (
        (/of \\d+ points/.test(text) && y.length === n) || text.includes('Not computed'));
    if (finished) {
        requestAnimationFrame(() => done([first, now, performance.now() - t0, text]));
    } else if (now > limit) {
        done([first, null, null, text]);
    } else {
        setTimeout(poll, 2);
    }
};
poll();
"""

#: resolve when the page's curve is drawn and its job done (or refused), or after
#: arguments[1] ms: [done, the status]
_SETTLED = """
const [n, limit, done] = arguments;
const t0 = performance.now();
const poll = () => {
    const doc = window.Bokeh && Bokeh.documents.length ? Bokeh.documents[0] : null;
    let status = null;
    if (doc) {
        for (const m of doc.all_models) {
            if (m.css_classes && m.css_classes.includes('gm-status') && m.text !== undefined) {
                status = m;
            }
        }
    }
    const source = doc ? doc.get_model_by_name('gm-curve') : null;
    const text = status ? status.text : '';
    const ok = source && !text.includes('computing') && (
        (/of \\d+ points/.test(text) && source.data.x.length === n)
        || text.includes('Not computed'));
    if (ok) { done([true, text]); }
    else if (performance.now() - t0 > limit) { done([false, text]); }
    else { setTimeout(poll, 20); }
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


def _chrome():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def fixed(moves: int) -> None:
    """The earlier fixed path: three problems, the slider moved from 10^-0.5 down."""
    from selenium.webdriver.support.ui import WebDriverWait

    head = ("first point", "whole range", "whole curve")
    print(f"{'problem':<24}" + "".join(f" {h + ' (ms)':>18}" for h in head) + "  (median, max)")
    for name, opts in PROBLEMS:
        proc, url = _serve(["--n-points", "40", *opts])
        driver = _chrome()
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
            for i in range(moves + 1):
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


#: the lambda of the page a move starts from: half a decade (ten slider steps) away
_AWAY = 10.0**0.5


def _before(state: ExplorerState) -> ExplorerState:
    """The state a move of the lambda slider to ``state`` starts from: lambda half a decade
    away (up, or down where up leaves the slider's range)."""
    lam0 = state.lam * _AWAY if state.lam * _AWAY <= 1e2 else state.lam / _AWAY
    return state.replace(lam=lam0)


def _settle(driver, limit_s: float) -> tuple[bool, str]:
    driver.set_script_timeout(limit_s + 30)
    ok, text = driver.execute_async_script(_SETTLED, 40, 1000.0 * limit_s)
    return ok, text


def sampled(
    n: int, seed: int, timeout: float, precision: str = "screen", max_k: int | None = None
) -> None:
    """Moves of the lambda slider to ``n`` sampled states (see the module's docstring),
    those with at most ``max_k`` clusters (None: all)."""
    drawn = sample(n, seed)
    drawn.states = [s.replace(precision=precision) for s in _at_most(drawn.states, max_k)]
    print(
        f"{n} states, seed {seed} ({drawn.rejected} draws refused by validate and drawn "
        f"again), {precision} precision; timeout {timeout:g} s; load average before: "
        f"{os.getloadavg()}"
    )
    if max_k is not None:
        print(f"timed: the {len(drawn.states)} states with K <= {max_k}")
    n = len(drawn.states)
    proc, url = _serve(["--n-points", "40"])
    driver = _chrome()
    records = []
    try:
        # the first move compiles the kernels: a K = 3 cross-entropy page, a move, left out
        warm = ExplorerState(n_clusters=3, loss="cross-entropy")
        driver.get(f"{url}?{warm.to_query()}")
        _settle(driver, timeout)
        driver.set_script_timeout(timeout + 30)
        driver.execute_async_script(_MOVE_SAMPLED, -1.5, 40, 1000.0 * timeout)
        for i, state in enumerate(drawn.states):
            driver.get(f"{url}?{_before(state).to_query()}")
            settled, _ = _settle(driver, timeout)
            time.sleep(0.5)  # the page's prefetch of the slider's neighbours, started
            first, whole, painted, text = driver.execute_async_script(
                _MOVE_SAMPLED, math.log10(state.lam), 40, 1000.0 * timeout
            )
            # the status pane's HTML, escaped in the model: as the page shows it
            text = html.unescape(re.sub(r"<[^>]+>", "", html.unescape(text))).strip()
            error = "Not computed" in text
            rec = {
                "state": state,
                "first": first,
                "whole": math.inf if whole is None else whole,
                "painted": math.inf if painted is None else painted,
                "error": text if error else None,
                "settled": settled,
            }
            records.append(rec)
            said = "" if settled else " (the page it started from was still computing)"
            said += f" ERROR {text}" if error else ""
            print(
                f"[{i + 1}/{n}] painted {_ms(rec['painted'])} ms, first point "
                f"{_ms(first)} ms: {label(state)}{said}",
                flush=True,
            )
    finally:
        driver.quit()
        proc.terminate()
        proc.wait(timeout=30)
    print(f"load average after: {os.getloadavg()}")
    _report(records, timeout)


def _at_most(states: list[ExplorerState], max_k: int | None) -> list[ExplorerState]:
    """The states with at most ``max_k`` clusters (all for None), in the order drawn."""
    return [s for s in states if max_k is None or s.n_clusters <= max_k]


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return "timeout" if x == math.inf else f"{x:.0f}"


def _report(records: list[dict], timeout: float) -> None:
    groups: dict[str, list[float]] = {}
    for r in records:
        if r["error"]:
            continue
        s = r["state"]
        for key in (group(s), f"{s.loss} / {s.penalty}"):
            groups.setdefault(key, []).append(r["painted"] / 1000.0)
    print("\n| group | n | painted: median / p95 / max (s) | target met |")
    print("|---|---|---|---|")
    for name in sorted(groups, key=lambda g: (g not in TARGETS, g)):
        values = groups[name]
        cells = " / ".join("timeout" if v == math.inf else f"{v:.2f}" for v in stats(values))
        print(f"| {name} | {len(values)} | {cells} | {meets(name, values)} |")
    print(f"\ntimeouts (> {timeout:g} s): {sum(r['painted'] == math.inf for r in records)}")
    for r in [r for r in records if r["error"]]:
        print(f"- refused or failed: {label(r['state'])}: {r['error']}")
    print("\nthe slowest:")
    timed = sorted((r for r in records if not r["error"]), key=lambda r: -r["painted"])
    for r in timed[:10]:
        print(f"- {_ms(r['painted'])} ms: {label(r['state'])}\n    {command(r['state'])}")


# ------------------------------------------------------------------ in process: the worker
def _time_state(state: ExplorerState, before: ExplorerState | None = None) -> dict:
    from gaussmix.explore import Session

    session = Session(coarse="auto")
    if before is not None:  # the page's curve before the move (untimed)
        session.submit(before).wait()
        print(json.dumps({"before": True}), flush=True)
    c0, t0 = time.process_time(), time.perf_counter()
    # each row of the curve: [x, steps (the row's n_iter), CPU ms of the job's thread since
    # the row before (the first: since the coarse pass, else since the job's thread
    # started, whose thread_time starts at 0), converged]
    trace: list[list] = []
    mark = [0.0]  # the job thread's CPU seconds at the row before

    def whole_range(_rows: list[dict]) -> None:  # the coarse pass done: the range drawn
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        mark[0] = time.thread_time()  # (called in the job's thread)
        print(json.dumps({"range": wall, "range_cpu": cpu}), flush=True)

    def row(r: dict) -> None:  # called in the job's thread, after each row of the curve
        now = time.thread_time()
        x = r["alpha"] if state.axis == "alpha" else r["lam"]
        trace.append([x, int(r["n_iter"]), 1e3 * (now - mark[0]), bool(r["converged"])])
        mark[0] = now

    try:
        job = session.submit(state, on_point=row, on_preview=whole_range)
        job.wait()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        session.close()
    return {
        "trace": trace,
        "coarse_rows": len(job.preview),
        "coarse_stopped": job.coarse_stopped,
        "coarse": bool(job.preview),
        "wall": wall,
        "cpu": cpu,
        "error": job.error,
        "points": len(job.rows),
        "failed": len(job.failed),
        "cached": job.cached,
        "warm": bool(job.init),
    }


def worker() -> None:
    """The in-process worker: read state queries from stdin, one a line; write one JSON
    record a line."""
    from gaussmix.explore import Session

    with Session() as warm:  # imports, compiled kernels
        warm.submit(ExplorerState(n_points=5)).wait()
        warm.submit(ExplorerState(n_clusters=3, loss="cross-entropy", n_points=5)).wait()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        query, _, before = line.rstrip("\n").partition("|")
        state = ExplorerState.from_query(query)
        first = ExplorerState.from_query(before) if before else None
        print(json.dumps(_time_state(state, first)), flush=True)


#: seconds of wall time the curve before a move may take (untimed; beyond, the state is
#: listed as not timed and the worker replaced)
_BEFORE_TIMEOUT_S = 300.0


class _Worker:
    def __init__(self, cpu_timeout: bool = False) -> None:
        self.cpu_timeout = cpu_timeout
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if json.loads(self._next(600.0) or "{}").get("ready") is not True:
            raise SystemExit("the worker did not start")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def _next(self, timeout: float) -> str | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def run(self, state: ExplorerState, timeout: float, before: ExplorerState | None) -> dict:
        """The state's record (``before``: the state the move starts from, its curve
        computed first, untimed); after ``timeout`` seconds of wall time the worker is
        killed and the record says so (``timeout``: the worker's CPU seconds spent on the
        curve until then, NaN where ``/proc`` is not there to say)."""
        first = "" if before is None else before.to_query()
        self.proc.stdin.write(f"{state.to_query()}|{first}\n")
        self.proc.stdin.flush()
        if before is not None:  # the worker's line when the curve before is done
            line = self._next(_BEFORE_TIMEOUT_S)
            if not line or not json.loads(line).get("before"):
                self.kill()
                return {
                    "error": "the curve before the move was not done within "
                    f"{_BEFORE_TIMEOUT_S:g} s (not timed)",
                    "wall": math.nan,
                    "cpu": math.nan,
                    "timeout": math.nan,
                }
        cpu0 = self.cpu()
        t0 = time.perf_counter()
        coarse: dict = {}
        while True:
            line = self._next(max(min(timeout - (time.perf_counter() - t0), 0.5), 0.0))
            if line is None and not self._over(t0, cpu0, timeout):
                continue
            if not line:
                spent = self.cpu() - cpu0
                self.kill()
                return {
                    "wall": math.inf,
                    "cpu": math.inf,
                    "error": None,
                    "timeout": spent,
                    "range": coarse.get("range", math.inf),
                    "coarse": bool(coarse),
                }
            rec = json.loads(line)
            if "range" in rec and "wall" not in rec:  # the coarse pass's line
                coarse = rec
                continue
            # without a coarse pass, or with one stopped by its budget (a few points from
            # the low end), the whole range is drawn with the whole curve
            whole = coarse if not rec.get("coarse_stopped") else {}
            return {
                **rec,
                "range": whole.get("range", rec["wall"]),
                "range_cpu": whole.get("range_cpu", rec["cpu"]),
            }

    def _over(self, t0: float, cpu0: float, timeout: float) -> bool:
        """Past ``timeout`` seconds of wall time, or of the worker's CPU time with
        ``cpu_timeout`` (on a loaded machine a curve's wall time is the load's)."""
        if self.cpu_timeout:
            return self.cpu() - cpu0 > timeout or time.perf_counter() - t0 > 20 * timeout
        return time.perf_counter() - t0 > timeout

    def cpu(self) -> float:
        """The worker's CPU seconds (user + system, from ``/proc``; NaN without it)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return math.nan
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


# ------------------------------------------------------------------ in-process report
def _fmt(x: float) -> str:
    return "timeout" if x == math.inf else f"{x:.2f}"


def report_engine(records: list[dict], timeout: float) -> None:
    """The table of the groups; a state whose curve ended with an error (a state that
    validate accepted and the engine could not compute) is listed, not timed."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        if r.get("error"):
            continue
        state = r["state"]
        keys = (group(state), f"{state.loss} / {state.penalty}")
        for key in keys:
            groups.setdefault(key, []).append(r)
    print(
        "\n| group | n | CPU median / p95 / max (s) | wall median / p95 / max (s) "
        "| target met (CPU, wall) | whole range drawn, wall median / p95 / max (s) |"
    )
    print("|---|---|---|---|---|---|")
    for name in sorted(groups, key=lambda g: (g not in TARGETS, g)):
        rs = groups[name]
        cpu = [r["cpu"] for r in rs]
        wall = [r["wall"] for r in rs]
        span = [r.get("range", r["wall"]) for r in rs]
        target = f"{meets(name, cpu)}, {meets(name, wall)}"
        print(
            f"| {name} | {len(rs)} | {' / '.join(map(_fmt, stats(cpu)))} "
            f"| {' / '.join(map(_fmt, stats(wall)))} | {target} "
            f"| {' / '.join(map(_fmt, stats(span)))} |"
        )
    timeouts = [r for r in records if r["wall"] == math.inf]
    spent = ", ".join(f"{r['timeout']:.1f}" for r in timeouts)
    print(
        f"\ntimeouts (> {timeout:g} s of wall time, counted as inf): {len(timeouts)}"
        + (f" (CPU seconds spent until killed: {spent})" if timeouts else "")
    )
    errors = [r for r in records if r.get("error")]
    print(f"accepted by validate but ended with an error (not timed): {len(errors)}")
    for r in errors:
        print(f"- {label(r['state'])}: {r['error']}\n    {command(r['state'])}")


def slowest_engine(records: list[dict], count: int) -> None:
    print(f"\nthe {count} slowest (wall time; CPU time):")
    timed = [r for r in records if not r.get("error")]
    for r in sorted(timed, key=lambda r: -r["wall"])[:count]:
        failed = f", {r['failed']} points without a fixed point" if r.get("failed") else ""
        print(f"- {_fmt(r['wall'])} s; {_fmt(r['cpu'])} s: {label(r['state'])}{failed}")
        print(f"    {command(r['state'])}")


def points_engine(records: list[dict], over: float) -> None:
    """Each curve of more than ``over`` seconds of CPU time point by point (``--points``):
    its coarse pass (CPU seconds, rows, whether its budget stopped it), then each row of
    the curve in the order solved, ``x:steps/ms`` (the row's ``n_iter``, the CPU
    milliseconds of the job's thread since the row before: a point started again from the
    curve before shows the steps of its second start and the time of both), a point drawn
    missing marked ``!`` (its steps: those of both starts)."""
    slow = [r for r in records if not r.get("error") and r["cpu"] > over and r.get("trace")]
    print(f"\n{len(slow)} curves over {over:g} s of CPU time, point by point (x:steps/ms):")
    for r in sorted(slow, key=lambda r: -r["cpu"]):
        pts = r["trace"]
        ms = [p[2] for p in pts]
        coarse = (
            f"coarse pass {r.get('range_cpu', 0.0):.2f} s, {r['coarse_rows']} rows"
            + (" (stopped by its budget)" if r.get("coarse_stopped") else "")
            if r.get("coarse")
            else "no coarse pass"
        )
        print(
            f"- {_fmt(r['cpu'])} s: {label(r['state'])}\n  {coarse}; {len(pts)} rows, "
            f"{sum(ms) / 1e3:.2f} s of the job's thread after it, steps median "
            f"{statistics.median(p[1] for p in pts):g} max {max(p[1] for p in pts)}, "
            f"ms median {statistics.median(ms):.0f} max {max(ms):.0f}"
        )
        cells = [f"{p[0]:.3g}:{p[1]}/{p[2]:.0f}{'' if p[3] else '!'}" for p in pts]
        for i in range(0, len(cells), 8):
            print("    " + "  ".join(cells[i : i + 8]))


def in_process(
    n: int,
    seed: int,
    timeout: float,
    count: int,
    out: Path | None,
    precision: str = "screen",
    cpu_timeout: bool = False,
    max_k: int | None = None,
    cold: bool = False,
    points_over: float | None = None,
) -> None:
    """The engine's curve time of ``n`` sampled states (those with at most ``max_k``
    clusters) after a move of the lambda slider (``cold``: from the cold start), in a
    killable worker; the curves of more than ``points_over`` seconds of CPU time then
    point by point (:func:`points_engine`)."""
    drawn = sample(n, seed)
    drawn.states = _at_most(drawn.states, max_k)
    print(
        f"in process: {n} states, seed {seed} ({drawn.rejected} draws refused by validate "
        f"and drawn again), {precision} precision; timeout {timeout:g} s; "
        f"{'cold' if cold else 'after the move of the lambda slider'}; load average "
        f"before: {os.getloadavg()}"
    )
    if max_k is not None:
        print(f"timed: the {len(drawn.states)} states with K <= {max_k}")
    n = len(drawn.states)
    records = []
    w = _Worker(cpu_timeout)
    try:
        for i, state in enumerate(s.replace(precision=precision) for s in drawn.states):
            rec = w.run(state, timeout, None if cold else _before(state))
            if "timeout" in rec:
                w = _Worker(cpu_timeout)
            rec["state"] = state
            records.append(rec)
            said = f" ERROR {rec['error']}" if rec.get("error") else ""
            said += " (from the curve before)" if rec.get("warm") else ""
            if "timeout" in rec and not rec.get("error"):
                said += f" (killed after {rec['timeout']:.1f} s of CPU time)"
            if rec.get("coarse"):
                said += f" (whole range drawn at {_fmt(rec['range'])} s)"
            print(
                f"[{i + 1}/{n}] wall {_fmt(rec['wall'])} s, CPU {_fmt(rec['cpu'])} s: "
                f"{label(state)}{said}",
                flush=True,
            )
    finally:
        w.close()
    print(f"load average after: {os.getloadavg()}")
    report_engine(records, timeout)
    slowest_engine(records, count)
    if points_over is not None:
        points_engine(records, points_over)
    if out is not None:
        rows = [{**r, "state": r["state"].to_query()} for r in records]
        out.write_text(json.dumps(rows, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None, help="sampled states (15; 60 in process)")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per curve")
    parser.add_argument(
        "--in-process", action="store_true", help="the engine's curve, without the page"
    )
    parser.add_argument("--slowest", type=int, default=10, help="slowest states listed")
    parser.add_argument("--json", type=Path, help="--in-process: every state's record here")
    parser.add_argument("--list", action="store_true", help="print the states, compute none")
    parser.add_argument("--fixed", action="store_true", help="the earlier fixed path")
    parser.add_argument("--moves", type=int, default=7, help="--fixed: timed moves per problem")
    parser.add_argument(
        "--precision",
        choices=("screen", "library"),
        default="screen",
        help="the explorer's precision (ExplorerState.precision; screen: its default)",
    )
    parser.add_argument(
        "--cpu-timeout",
        action="store_true",
        help="--in-process: --timeout counts the worker's CPU seconds (a loaded machine)",
    )
    parser.add_argument(
        "--max-k",
        type=int,
        default=None,
        help="time only the states drawn with at most this many clusters (e.g. 3: the "
        "group with a p95 target; the same draws as without it)",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="--in-process: each state's curve alone, from the cold start (default: after "
        "the lambda slider's move from half a decade away, as in the browser)",
    )
    parser.add_argument(
        "--points",
        type=float,
        default=None,
        metavar="SECONDS",
        help="--in-process: the curves of more than this many seconds of CPU time point by "
        "point (each row's steps and CPU milliseconds, in the order solved)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    print(machine_line())
    n = args.n if args.n is not None else (60 if args.in_process else 15)
    if args.fixed:
        fixed(args.moves)
    elif args.list:
        drawn = sample(n, args.seed)
        print(f"{n} states, seed {args.seed} ({drawn.rejected} draws refused and drawn again)")
        listed = _at_most(drawn.states, args.max_k)
        if args.max_k is not None:  # the states --max-k would time
            print(f"listed: the {len(listed)} states with K <= {args.max_k}")
        for s in listed:
            print(f"{label(s)}\n    ?{s.to_query()}")
    elif args.in_process:
        in_process(
            n,
            args.seed,
            args.timeout,
            args.slowest,
            args.json,
            args.precision,
            args.cpu_timeout,
            args.max_k,
            args.cold,
            args.points,
        )
    else:
        sampled(n, args.seed, args.timeout, args.precision, args.max_k)


if __name__ == "__main__":
    main()
