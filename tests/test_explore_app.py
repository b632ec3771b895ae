"""The explorer's user interface (gaussmix.explore.app) without a browser, and the command
``gaussmix explore``: the drawn curve is the library's; a control's bad value is answered
beside it with the library's message; a point without a fixed point is drawn missing and
listed; a newer request cancels an older one; the command refuses a bad option in one line,
says which extra it needs, warns before listening beyond this machine, and stops on Ctrl-C
leaving nothing behind.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import threading
import time
import urllib.request
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from _cli_helpers import run
from _explore import DEADLINE, library_curve, served, stopped

pn = pytest.importorskip("panel", reason="the explorer's interface is the 'explore' extra")

from gaussmix.explore import ExplorerState, validate  # noqa: E402
from gaussmix.explore.app import LAM_DIGITS, Explorer, explorer  # noqa: E402
from gaussmix.explore.serving import Waker  # noqa: E402
from gaussmix.explore.state import PRECISIONS, field_text  # noqa: E402

#: the solver's options of the explorer's default (screen) precision
SCREEN = PRECISIONS["screen"]

N = 6


def _columns(app: Explorer, key: str) -> np.ndarray:
    return np.asarray(app.source.data[key], dtype=float)


@pytest.fixture
def app():
    a = Explorer(ExplorerState(n_points=N), poll=False)
    a.refresh(wait=True)
    yield a
    a.close()


def test_the_drawn_curve_is_the_librarys(app: Explorer) -> None:
    ref = library_curve(0.1, N)
    assert np.array_equal(_columns(app, "x"), ref["alpha"].to_numpy())
    for key in ("test_error", "train_error"):
        assert np.array_equal(_columns(app, key), ref[key].to_numpy())
        assert app.renderers[key][0].visible
    assert app.status.object == f"{N} of {N} points" or "cached" in app.status.object


def test_the_lambda_slider_redraws_the_librarys_curve(app: Explorer) -> None:
    first = app.job
    app.lam_slider.value = -1.5
    lam = float(f"{10**-1.5:.{LAM_DIGITS}g}")
    assert app.widgets["lam"].value == repr(lam) and app.state.lam == lam
    assert app.job is not first
    app.refresh(wait=True)
    assert np.array_equal(_columns(app, "test_error"), library_curve(lam, N)["test_error"])
    # the exact entry moves the slider back
    app.widgets["lam"].value = "0.01"
    assert app.lam_slider.value == pytest.approx(-2.0, abs=1e-12)
    assert app.state.lam == 0.01


def test_a_served_page_draws_a_curve_when_its_job_ends_not_at_the_next_poll(app: Explorer) -> None:
    """A served page (a document with a session) is asked to draw on its next tick as the
    curve ends (the job's thread asks the server's event loop, whose thread adds the
    tick; one request however many jobs end before it runs); the draw is the library's
    curve, with no poll in between."""
    import asyncio

    from bokeh.document import Document

    ticks: list = []

    class Page(Document):  # a document whose next tick is run here
        def add_next_tick_callback(self, callback):
            ticks.append((callback, threading.current_thread()))

    loop = asyncio.new_event_loop()  # the server's, run here
    try:
        app._doc = Page()
        app._waker = Waker(app._doc, loop, app.refresh)
        app.lam_slider.value = -1.7
        lam = app.state.lam
        assert app.job.join(DEADLINE)
        app._wake()  # a second end before the tick: no second request
        loop.run_until_complete(asyncio.sleep(0))
        assert len(ticks) == 1
        tick, thread = ticks.pop()
        assert thread is threading.current_thread()  # added by the loop's thread
        tick()
        assert np.array_equal(_columns(app, "test_error"), library_curve(lam, N)["test_error"])
        assert app.status.object.startswith(f"{N} of {N} points")
        app._wake()  # the tick ran: a later end asks again
        loop.run_until_complete(asyncio.sleep(0))
        assert len(ticks) == 1
    finally:
        app._doc = app._waker = None
        loop.close()


def test_a_page_that_has_gone_is_asked_no_draw() -> None:
    """A job that ends after its page was closed, or after the server stopped, asks no
    draw and raises nothing in its thread."""
    import asyncio

    from bokeh.document import Document

    drawn: list = []
    stopped = asyncio.new_event_loop()
    stopped.close()
    waker = Waker(Document(), stopped, lambda: drawn.append(1))
    waker()  # the server's loop has closed
    assert waker.doc is None
    loop = asyncio.new_event_loop()
    try:
        doc = Document()
        waker = Waker(doc, loop, lambda: drawn.append(1))
        waker()
        waker.close()  # the page goes before the loop runs the request
        loop.run_until_complete(asyncio.sleep(0))
        assert not doc.session_callbacks and not drawn
    finally:
        loop.close()


def test_a_job_that_ends_while_the_page_is_held_still_has_its_curve_drawn(app: Explorer) -> None:
    """A job's thread that ends while the page's own thread holds the document (a draw or
    a control's change in progress: ``pn.io.hold``) still gets its curve drawn at once.
    Panel releases a hold in two steps (``panel.io.document.unlocked``: the held events
    taken, then the list emptied); a request for the draw made on the document from the
    job's thread between them was lost, and with it every later one (the explorer asks
    once until its tick runs): the page then waited for its poll.  The interleaving is
    forced here: the job ends between the two steps."""
    import asyncio

    from bokeh.document import Document

    ticks: list = []

    class Session:  # the server's session: told of each callback the document is given
        def _session_callback_added(self, event: object) -> None:
            ticks.append(event.callback)  # type: ignore[attr-defined]

    doc = Document()
    doc.callbacks.on_change_dispatch_to(Session())
    loop = asyncio.new_event_loop()
    try:
        app._doc, app._waker = doc, Waker(doc, loop, app.refresh)
        doc.hold("combine")
        taken = list(doc.callbacks._held_events)  # Panel's release: the events taken ...
        app.lam_slider.value = -1.3
        lam = app.state.lam
        assert app.job.join(DEADLINE)  # ... the job ends (its thread asks for the draw) ...
        doc.callbacks._held_events = []  # ... and the list emptied
        for event in taken:
            doc.callbacks.trigger_on_change(event)
        doc.unhold()
        loop.run_until_complete(asyncio.sleep(0))  # the server's loop runs
        assert len(ticks) == 1, ticks
        ticks.pop().callback()
        assert np.array_equal(_columns(app, "test_error"), library_curve(lam, N)["test_error"])
        assert not app._waker.asked
    finally:
        app._doc = app._waker = None
        loop.close()


def test_a_change_queued_while_panel_sends_the_one_before_reaches_the_page(
    app: Explorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Panel (1.9) queues a served page's changes while one of its writes is in progress;
    a change queued while the task sending the one before awaits its write, when that
    write completes first, was left queued with no task to send it (the page kept the
    draw before: "computing: 7 of 8 points" for good, once the curve had ended).  The
    interleaving is forced here (a socket whose writes complete when told); the
    explorer's next poll sends the change."""
    import asyncio

    from bokeh.document import Document
    from panel.io import document as pdoc

    if not hasattr(pdoc, "_WRITE_MSGS"):
        pytest.skip("Panel's queue of a page's writes is not the one of Panel 1.9")
    loop = asyncio.new_event_loop()
    sent: list = []
    writes: list = []

    class Socket:  # a page's websocket
        pass

    def write(conn: object, events: object = None, msg: object = None) -> list:
        writes.append(loop.create_future())  # completes when the test says
        sent.append(msg)
        return [writes[-1]]

    class Protocol:
        def create(self, kind: str, events: list) -> tuple:
            return tuple(events)

    class Connection:
        _socket = Socket()
        protocol = Protocol()

    monkeypatch.setitem(pdoc.extra_socket_handlers, Socket, write)  # Panel's socket hook
    doc, conn = Document(), Connection()

    async def turns(n: int = 3) -> None:
        for _ in range(n):
            await asyncio.sleep(0)

    async def page() -> None:
        pdoc.schedule_write_events(doc, [conn], ["7 of 8"])  # a draw, queued
        await turns()  # Panel's task writes it ...
        writes[-1].set_result(None)  # ... and its write completes,
        pdoc.schedule_write_events(doc, [conn], ["8 of 8"])  # while the next is queued
        await turns()
        assert sent == [("7 of 8",)]  # left queued (Panel 1.9)
        app._doc = doc
        app.refresh()  # the explorer's next poll
        await turns()
        for w in writes:
            if not w.done():
                w.set_result(None)
        await turns()

    try:
        loop.run_until_complete(page())
    finally:
        app._doc = app._waker = None
        loop.close()
    assert sent == [("7 of 8",), ("8 of 8",)]
    assert doc not in pdoc._WRITE_MSGS and doc not in pdoc._WRITE_BLOCK


def test_a_job_that_ends_while_a_poll_reads_it_is_drawn_whole_at_the_next(app: Explorer) -> None:
    """A poll reads a running job's rows, then whether it has ended: a job whose last row
    arrives and that ends between the two reads is drawn with the rows read (its status
    already says it ended), and whole at the next poll, which finds more rows than drawn.
    The interleaving is forced by a job whose last row and end arrive as its rows are
    read."""
    job = app.job
    assert job.done and len(job.rows) == N

    class Ending:  # the finished job as a poll saw it while it ended
        def __init__(self) -> None:
            self.rows = job.rows[:-1]
            self._done = False

        @property
        def done(self) -> bool:
            if not self._done:  # the last row and the end, just after the rows were read
                self.rows, self._done = job.rows, True
            return self._done

        def __getattr__(self, name: str) -> object:
            return getattr(job, name)

    app.job = Ending()
    app._drawn = None
    app.refresh()
    assert len(app.source.data["x"]) == N - 1  # the rows the poll read
    assert app.status.object.startswith(f"{N} of {N} points")
    app.refresh()  # the next poll
    ref = library_curve(0.1, N)
    assert np.array_equal(_columns(app, "test_error"), ref["test_error"].to_numpy())


def test_a_newer_request_cancels_the_older() -> None:
    a = Explorer(ExplorerState(n_points=30, lam=0.0123), poll=False)
    try:
        old = a.job
        a.widgets["lam"].value = "0.0456"
        new = a.job
        assert new is not old and a.session.curve is new
        old.wait(DEADLINE)
        assert old.cancelled or old.done  # finished before the change, or stopped
        a.refresh(wait=True)
        assert np.all(np.asarray(a.source.data["x"]).size == 30)
        assert a.state.lam == 0.0456
    finally:
        a.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("gaussmix-explore")]


@pytest.mark.parametrize(
    ("field", "text", "state"),
    [
        ("rho", "0.5,0.6", ExplorerState(rho=(0.5, 0.6))),
        ("lam", "-1", ExplorerState(lam=-1.0)),
        ("delta", "1,2,3", ExplorerState(delta=(1.0, 2.0, 3.0))),
    ],
)
def test_a_bad_value_is_answered_beside_its_control(
    app: Explorer, field: str, text: str, state: ExplorerState
) -> None:
    job = app.job
    app.widgets[field].value = text
    expected = validate(state)[field]  # the library's own message
    pane = app.error_panes[field]
    assert pane.visible and pane.object == expected
    # beside the control: in the same column, right below it
    column = app.controls[field]
    objects = list(column.objects)
    assert objects.index(pane) == objects.index(app.widgets[field]) + 1
    assert app.session.curve is job and app.job is None  # nothing computed for a refused state
    assert "Not computed" in app.status.object
    assert all(button.disabled for button in app.downloads.values())  # nothing to take away
    # a value that does not parse is answered the same way
    app.widgets[field].value = "abc"
    assert app.error_panes[field].visible and "abc" in app.error_panes[field].object
    app.widgets[field].value = field_text(getattr(ExplorerState(), field))
    assert not app.error_panes[field].visible and app.job is not job
    app.refresh(wait=True)
    assert not any(button.disabled for button in app.downloads.values())


def test_a_refused_value_stops_the_running_curve_and_keeps_its_status(app: Explorer) -> None:
    """A value refused while a curve runs: the curve (of a state the controls no longer
    show) is cancelled, and neither its end nor a later poll says it was computed or offers
    its exports."""
    app.widgets["lam"].value = "0.0321"
    running = app.job
    app.widgets["rho"].value = "0.5,0.6"
    assert running.wait(DEADLINE) is None or running.done
    assert running.cancelled or running.done
    app.refresh(wait=True)
    assert "Not computed" in app.status.object and app.error_panes["rho"].visible
    assert all(button.disabled for button in app.downloads.values())
    assert not app.progress.visible
    app.widgets["rho"].value = ""  # fixed: computed again
    app.refresh(wait=True)
    assert app.status.object.startswith(f"{N} of {N} points")
    assert not any(button.disabled for button in app.downloads.values())


def test_k_raised_past_the_loss_clears_the_plot_and_says_why(app: Explorer) -> None:
    """The default logistic loss is binary: K = 3 is refused, and the K = 2 curve is not
    left drawn under controls that say K = 3; K = 2 again draws it again."""
    assert _columns(app, "x").size == N
    app.widgets["n_clusters"].value = 3
    message = validate(ExplorerState(n_clusters=3))["loss"]  # the library's words
    assert app.error_panes["loss"].visible and app.error_panes["loss"].object == message
    assert app.widgets["n_clusters"].value == 3  # the control says what the user asked
    assert app.job is None
    for key, column in app.source.data.items():
        assert len(column) == 0, key  # nothing drawn
    assert not [item for item in app.figure.legend.items if item.visible]
    assert "Not computed" in app.status.object and message in app.status.object
    app.widgets["n_clusters"].value = 2
    app.refresh(wait=True)
    assert np.array_equal(_columns(app, "test_error"), library_curve(0.1, N)["test_error"])


def test_a_notice_stays_until_the_user_changes_a_control(app: Explorer) -> None:
    from gaussmix.explore.app import not_restored

    try:
        ExplorerState.from_query("lam=abc")
    except Exception as exc:  # noqa: BLE001 - the parser's own message
        problem = exc
    text = not_restored(problem, ExplorerState())
    assert "lam must be a number, got 'abc'" in text and "Showing the defaults" in text
    assert "the starting view" in not_restored(problem, ExplorerState(n_points=N))
    app.show_notice(text)
    app.widgets["lam"].value = "0.0456"  # the user changes a control: a new curve
    app.refresh(wait=True)
    assert app.status.object.startswith(f"{N} of {N} points")
    assert not app.notice.visible  # the user's change: the notice about the URL is past
    app.show_notice(text)
    app.refresh(wait=True)
    assert app.notice.visible and app.notice.object == text


def test_a_page_opened_on_a_refused_state_shows_no_legend_of_nothing() -> None:
    a = Explorer(ExplorerState(rho=(0.5, 0.6)), poll=False)
    try:
        assert a.job is None and a.error_panes["rho"].visible
        shown = [item for item in a.figure.legend.items if item.visible]
        assert not shown  # no curve, no overlay drawn: nothing in the legend
    finally:
        a.close()


def test_k_equals_one_and_a_malformed_file_are_refused(app: Explorer, tmp_path: Path) -> None:
    app.widgets["n_clusters"].value = 1
    assert app.error_panes["n_clusters"].visible
    assert (
        app.error_panes["n_clusters"].object == validate(ExplorerState(n_clusters=1))["n_clusters"]
    )
    app.widgets["n_clusters"].value = 2
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a mixture")
    app.widgets["mixture_file"].value = str(bad)
    message = validate(ExplorerState(mixture_file=str(bad)))["mixture_file"]
    assert app.error_panes["mixture_file"].object == message
    # what the file is not, never numpy's advice to load pickles (no such option here)
    assert "Mixture.save" in message and "pickle" not in message, message
    assert app.widgets["n_clusters"].disabled  # the file replaces the mixture's controls


def test_a_mixture_file_is_uploaded_and_removed_on_close(tmp_path: Path) -> None:
    import gaussmix as gm

    path = tmp_path / "mix.npz"
    gm.Mixture.isotropic(0.5, "simplex", n_clusters=3).save(path)
    a = Explorer(ExplorerState(n_points=3, loss="cross-entropy"), poll=False)
    try:
        a.upload.filename = "mix.npz"
        a.upload.value = path.read_bytes()
        copy = Path(a.widgets["mixture_file"].value)
        assert copy.read_bytes() == path.read_bytes() and copy != path
        assert not a.errors, a.errors
        a.refresh(wait=True)
        ref = gm.learning_curve(
            gm.Mixture.load(path), "cross-entropy", np.geomspace(0.2, 8.0, 3), lam=0.1, **SCREEN
        )
        assert np.array_equal(_columns(a, "test_error"), ref["test_error"].to_numpy())
    finally:
        a.close()
    assert not copy.exists() and not copy.parent.exists()


class _Job:
    """A finished curve with a point that has no fixed point (as the engine reports it)."""

    def __init__(self, state: ExplorerState) -> None:
        nan = math.nan
        self.state = state
        self.rows = [
            {"alpha": 1.0, "lam": 0.1, "test_error": 0.3, "converged": True},
            {"alpha": 2.0, "lam": 0.1, "test_error": nan, "converged": False},
            {"alpha": 4.0, "lam": 0.1, "test_error": 0.2, "converged": True},
        ]
        self.failed = [(2.0, "no fixed point at lam=0.1, alpha=2: drawn missing")]
        self.warnings = ["ConvergenceWarning: no fixed point at alpha=2"]
        self.progress, self.done, self.cancelled, self.error, self.cached = (3, 3), True, 0, 0, 0
        self.table = None  # the library's table is not needed to draw
        self.preview: list[dict] = []
        self.refining = False
        self.started = time.monotonic()


def test_a_point_without_a_fixed_point_is_drawn_missing_and_listed(app: Explorer) -> None:
    app.job = _Job(app.state)
    app.refresh()
    y = _columns(app, "test_error")
    assert y[0] == 0.3 and math.isnan(y[1]) and y[2] == 0.2  # a gap in the line
    assert "alpha = 2: no fixed point" in app.failed_pane.object
    assert "ConvergenceWarning" in app.warnings_pane.object


def test_every_control_round_trips_through_the_state_url_reader() -> None:
    state = ExplorerState(
        n_clusters=3,
        delta=(0.5, 1.0 / 3.0, 2.0),
        rho=(0.2, 0.3, 0.5),
        l1_ratio=0.1 + 0.2,
        lam=1e-7,
        mixture_file="/tmp/x y.npz",
        show=("test_error", "m1"),
    )
    for f in fields(ExplorerState):
        value = getattr(state, f.name)
        from urllib.parse import urlencode

        back = ExplorerState.from_query(urlencode({f.name: field_text(value)}))
        assert getattr(back, f.name) == value, f.name
    a = Explorer(state.replace(mixture_file=None, loss="cross-entropy"), poll=False)
    try:
        assert a._read() == (state.replace(mixture_file=None, loss="cross-entropy"), {})
        assert a.widgets["show"].value == ["test_error", "m1"]
        assert "q3" in a.widgets["show"].options  # the order parameters of K = 3
    finally:
        a.close()


def test_the_notebook_form_is_a_panel_layout() -> None:
    layout = explorer(ExplorerState(n_points=3))
    try:
        assert isinstance(layout, pn.FlexBox)  # the controls beside the plot, or above it
        assert isinstance(layout.explorer, Explorer)
        assert layout.explorer.state.n_points == 3
    finally:
        layout.explorer.close()


def test_the_exports_are_the_engines(app: Explorer) -> None:
    assert not app.downloads["csv"].disabled  # the table is complete
    csv = app.downloads["csv"].callback().getvalue()
    assert csv == library_curve(0.1, N).to_csv(index=False)
    png = app.downloads["png"].callback().getvalue()
    assert png.startswith(b"\x89PNG")
    script = app.downloads["python"].callback().getvalue()
    assert "learning_curve" in script
    assert app.downloads["cli"].callback().getvalue().startswith("gaussmix curve ")


# ---------------------------------------------------------------------------- the command
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--rho", "0.5,0.6"], "--rho must sum to 1"),
        (["--lam", "-1"], "--lam must be"),
        (["--n-clusters", "1"], "--n-clusters must be an integer >= 2"),
        (["--lam", "abc"], "--lam must be a number"),
        (["--port", "70000"], "--port must be"),
        (["--show", "nope"], "--show"),
    ],
)
def test_explore_refuses_a_bad_option_in_one_line(args: list[str], says: str) -> None:
    code, out, err = run("explore", "--no-browser", *args)
    assert code == 2 and out == ""
    assert err.startswith("gaussmix: error: ") and err.count("\n") == 1, err
    assert says in err, err


def test_explore_without_its_extra_says_which(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "panel" else find(name, *a)
    )
    code, _, err = run("explore", "--no-browser")
    assert code == 2
    assert err == "gaussmix: error: gaussmix explore needs the 'explore' extra: pip install " \
        "'gaussmix[explore]'\n"  # fmt: skip


def test_a_port_in_use_or_a_foreign_address_is_refused_in_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = run("explore", "--no-browser", "--port", str(port))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"gaussmix: error: --port {port} is not available on 127.0.0.1: "), err
    code, _, err = run("explore", "--no-browser", "--host", "192.0.2.1", "--port", "0")
    assert code == 2 and err.count("\n") == 1  # TEST-NET-1: not an address of this machine
    assert err.startswith("gaussmix: error: --host 192.0.2.1 cannot be listened on: "), err


def _port_free(url: str) -> bool:
    """Nothing listens on the port of ``url`` and a server may listen there again (as a
    restarted server does: with SO_REUSEADDR, past the closed connections' TIME_WAIT)."""
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return False
    except ConnectionRefusedError:
        pass
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
    return True


def test_ctrl_c_stops_the_server_cleanly(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    with served("--n-points", "30", "--lam", "0.02", tmp=tmp) as (proc, url):
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "?lam=0.003", timeout=DEADLINE) as page:
            assert b"gaussmix explorer" in page.read()  # a page, with its job started
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C
        out, err = stopped(proc, tmp)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert out.strip().endswith("gaussmix explorer: stopped")
    assert _port_free(url)
    assert not list(tmp.iterdir())  # no temporary file left


def test_another_address_only_with_a_warning(tmp_path: Path) -> None:
    with served("--host", "0.0.0.0", tmp=tmp_path / "tmp") as (proc, url):
        os.killpg(proc.pid, signal.SIGINT)
        _, err = stopped(proc, tmp_path / "tmp")
    assert proc.returncode == 0
    assert err.startswith("gaussmix: warning: serving on 0.0.0.0: every machine"), err


def test_an_unexpected_failure_is_said_and_the_page_carries_on(
    app: Explorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gaussmix.explore.app as module

    def broken(state: ExplorerState) -> dict[str, str]:
        raise RuntimeError("something unforeseen")

    monkeypatch.setattr(module, "validate", broken)
    app.widgets["lam"].value = "0.3"  # no exception leaves the callback
    assert app.status.object == "**Error**: RuntimeError: something unforeseen"
    monkeypatch.undo()
    app.widgets["lam"].value = "0.2"
    app.refresh(wait=True)
    assert np.array_equal(_columns(app, "test_error"), library_curve(0.2, N)["test_error"])


def test_the_coarse_pass_is_drawn_where_no_row_has_arrived(app: Explorer) -> None:
    job = _Job(app.state)
    job.done, job.progress = False, (2, 5)
    job.rows = job.rows[:1] + [{"alpha": 2.0, "lam": 0.1, "test_error": 0.25, "converged": True}]
    job.preview = [
        {"alpha": a, "lam": 0.1, "test_error": e, "converged": True}
        for a, e in ((0.5, 0.4), (1.5, 0.9), (4.0, 0.2))
    ]
    app.job = job
    app.refresh()
    # the rows cover [1, 2]: the coarse points outside it fill in the rest of the range
    assert _columns(app, "x").tolist() == [0.5, 1.0, 2.0, 4.0]
    assert _columns(app, "test_error").tolist() == [0.4, 0.3, 0.25, 0.2]
    assert app.progress.visible and "computing: 2 of 5" in app.status.object
    job.refining = True  # the coarse pass over: its points are refined in place
    app._drawn = None
    app.refresh()
    assert "computing: refining... 2 of 5 points" in app.status.object
    job.done = True
    app.refresh()
    assert _columns(app, "x").tolist() == [1.0, 2.0]  # the curve alone, once complete


def test_a_running_curve_shows_its_clock_while_no_point_arrives(app: Explorer) -> None:
    """A slow curve (K >= 4 with the lasso: seconds a point) says it is alive: its status
    is rewritten as the seconds pass, the plot left as drawn."""
    job = _Job(app.state)
    job.done, job.progress, job.rows = False, (1, 5), job.rows[:1]
    job.started = time.monotonic() - 3.5
    app.job = job
    app.refresh()
    assert app.status.object == "computing: 1 of 5 points, 3 s"
    data = app.source.data
    job.started -= 2.0  # two seconds later, still no new point
    app.refresh()
    assert app.status.object == "computing: 1 of 5 points, 5 s"
    assert app.source.data is data  # the status alone


def test_the_sliders_next_positions_are_computed_ahead(app: Explorer) -> None:
    from gaussmix.explore.app import LOG_LAM_STEP

    app.session.prefetching.join(DEADLINE)  # after the curve on display
    app.lam_slider.value = app.lam_slider.value + LOG_LAM_STEP
    app.job.wait(DEADLINE)
    assert app.job.cached  # redrawn from the cache at once
    app.refresh()
    ref = library_curve(app.state.lam, N)
    assert np.array_equal(_columns(app, "test_error"), ref["test_error"].to_numpy())


def test_the_overlays_are_drawn_with_the_librarys_values() -> None:
    import gaussmix as gm

    state = ExplorerState(
        n_points=4,
        overlays=("bayes", "alpha_star", "lambda_star", "simulation"),
        sim_d=100,
        sim_seeds=2,
    )
    a = Explorer(state, poll=False)
    try:
        a.refresh(wait=True)
        mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
        alphas = np.geomspace(0.2, 8.0, 4)
        bayes = [gm.bayes_optimal_error(mix, float(x)).test_error for x in alphas]
        assert a.bayes_source.data["x"] == alphas.tolist()
        assert a.bayes_source.data["y"] == bayes
        star = gm.separability_threshold(mix, evidence=False).alpha_star
        assert a.x_span.visible and a.x_span.location == star
        best = [gm.optimal_lambda(mix, "logistic", alpha=float(x)).test_error for x in alphas]
        assert a.star_source.data["y"] == best
        sims = [
            gm.simulate(mix, loss="logistic", lam=0.1, alpha=float(x), d=100, seeds=2, seed=0)
            for x in alphas
        ]
        y = np.array([s.mean["test_error"] for s in sims])
        se = np.array([s.se["test_error"] for s in sims])
        assert np.array_equal(a.sim_source.data["y"], y)
        assert np.array_equal(a.sim_source.data["lower"], y - se)
        assert np.array_equal(a.sim_source.data["upper"], y + se)
        assert f"{star:.6g}" in a.overlay_pane.object
        assert all(item.visible for item in a.figure.legend.items if item.label.value in (
            "Bayes-optimal error", "test error at lambda*", "simulation"
        ))  # fmt: skip
        a.widgets["overlays"].value = []  # removed on request
        a.refresh(wait=True)
        assert a.bayes_source.data["x"] == [] and not a.x_span.visible
        assert a.overlay_pane.object == ""
    finally:
        a.close()


def test_the_lambda_axis_and_a_linear_scale(app: Explorer) -> None:
    from bokeh.models import LinearAxis, LinearScale, LogAxis, LogScale

    import gaussmix as gm

    assert isinstance(app.figure.x_scale, LogScale)
    app.widgets["lam_min"].value = 0.01  # (smaller penalties warn of the quadrature's limit)
    app.widgets["axis"].value = "lambda"
    assert app.controls["alpha"].visible and not app.controls["alpha_min"].visible
    app.refresh(wait=True)
    mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
    lams = np.geomspace(0.01, 10.0, N)
    ref = gm.lambda_sweep(mix, "logistic", lams, alpha=2.0, **SCREEN)
    assert np.array_equal(_columns(app, "x"), lams)
    assert np.array_equal(_columns(app, "test_error"), ref["test_error"].to_numpy())
    assert isinstance(app.figure.below[0], LogAxis)
    assert app.figure.below[0].axis_label == "lambda"
    app.widgets["log_x"].value = False
    app.refresh(wait=True)
    assert isinstance(app.figure.x_scale, LinearScale)
    assert isinstance(app.figure.below[0], LinearAxis)
    ref = gm.lambda_sweep(mix, "logistic", np.linspace(0.01, 10.0, N), alpha=2.0, **SCREEN)
    assert np.array_equal(_columns(app, "test_error"), ref["test_error"].to_numpy())


def test_the_overlays_on_the_lambda_axis_are_in_the_legend_and_explained() -> None:
    """On the lambda axis the Bayes-optimal error is a level across the range, with its
    legend entry; an infinite lambda* (ridge on balanced isotropic clusters: the test error
    decreases all the way to the mean-difference estimator) is explained, not drawn; the
    simulation's line says its size."""
    import gaussmix as gm

    state = ExplorerState(
        axis="lambda",
        lam_min=0.1,
        n_points=3,
        overlays=("bayes", "lambda_star", "simulation"),
        sim_d=60,
        sim_seeds=2,
    )
    a = Explorer(state, poll=False)
    try:
        a.refresh(wait=True)
        mix = gm.Mixture.isotropic(1.0, "simplex", n_clusters=2, labels="binary")
        bayes = gm.bayes_optimal_error(mix, 2.0).test_error
        assert a.bayes_source.data == {"x": [0.1, 10.0], "y": [bayes, bayes]}
        legend = {item.label.value: item.visible for item in a.figure.legend.items}
        assert legend["Bayes-optimal error"]
        star = gm.optimal_lambda(mix, "logistic", alpha=2.0).lam_star
        assert math.isinf(star) and not a.x_span.visible
        assert "lambda -> infinity" in a.overlay_pane.object
        assert "(d = 60, 2 seeds)" in a.overlay_pane.object
    finally:
        a.close()


def test_the_plots_axes_are_readable_on_either_scale(app: Explorer) -> None:
    """Tick labels that would touch are left out (a log axis's 2, 3, ..., 9 on a phone),
    type of at least 13 CSS pixels, on the log axis and on the linear one it is switched to."""
    from bokeh.models import NoOverlap

    def check() -> None:
        for axis in (*app.figure.below, *app.figure.left):
            assert isinstance(axis.major_label_policy, NoOverlap), axis
            for size in (axis.major_label_text_font_size, axis.axis_label_text_font_size):
                assert float(size.removesuffix("px")) >= 13, size
        assert float(app.figure.legend.label_text_font_size.removesuffix("px")) >= 13

    assert app.state.log_x
    check()
    app.widgets["log_x"].value = False
    assert not app.state.log_x and type(app.figure.below[0]).__name__ == "LinearAxis"
    check()
