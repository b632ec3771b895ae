"""The explorer's user interface: one Panel application, served by ``gaussmix explore`` and
displayed in a Jupyter notebook (:func:`explorer`).

The interface is a thin client of :mod:`gaussmix.explore`: every control is one field of
:class:`~gaussmix.explore.ExplorerState`; its text is parsed by
:meth:`ExplorerState.from_query <gaussmix.explore.ExplorerState.from_query>` (the same parser
as the state URL and the command line's state options) and checked by
:func:`~gaussmix.explore.validate`, whose messages (the library's own) are shown beside the
offending control.  A valid state is handed to a :class:`~gaussmix.explore.Session`, which
computes the curve (Theorem 2 of Loureiro et al. 2021 at every point, the library's
``learning_curve`` / ``lambda_sweep``) in a background thread and cancels the previous
request; the page polls the job and draws the points that have arrived, a point that did not
converge as a gap (NaN), listed beside the plot, and says what the job is doing
(:func:`gaussmix.explore.status.curve_status`: its points and, while it runs, its seconds).

Panel (HoloViz) is the user-interface library: one layout object is both a Bokeh-server page
and a notebook output, widgets are ``param`` objects that can be watched, Bokeh plots redraw
in place from a ``ColumnDataSource``, and the Bokeh server serves its JavaScript from the
installed package (nothing fetched from the network).  It is the optional extra ``explore``.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import fields
from io import BytesIO, StringIO
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlencode

import numpy as np
import panel as pn
from bokeh.models import (
    ColumnDataSource,
    LinearAxis,
    LinearScale,
    LogAxis,
    LogScale,
    NoOverlap,
    Span,
)
from bokeh.plotting import figure

from gaussmix.core.exceptions import ArgumentError
from gaussmix.explore import (
    OVERLAYS,
    ExplorerState,
    Session,
    export_cli,
    export_csv,
    export_png,
    export_python,
    validate,
)
from gaussmix.explore.engine import x_column
from gaussmix.explore.serving import Waker, resend_stranded_writes, running_loop
from gaussmix.explore.state import ORDER_PARAMETERS, PRECISIONS, field_text, observable_names
from gaussmix.explore.status import curve_status, running_seconds
from gaussmix.theory.channel.losses import LOSSES
from gaussmix.theory.model.labels import LABEL_MAPS
from gaussmix.theory.model.outputs import axis_label
from gaussmix.theory.model.penalties import PENALTIES

__all__ = ["Explorer", "explorer", "serve", "POLL_MS"]

#: how often the page looks for new points of the running job (milliseconds)
POLL_MS = 50
#: seconds a new job with no point yet leaves the previous curve drawn (a curve that
#: comes within it replaces the old one at once, without an empty plot in between)
HOLD_S = 0.5
#: seconds between the end of a curve and the prefetch of the slider's next positions: the
#: browser draws the curve meanwhile (on 2 cores, a prefetch started at once delayed the
#: drawn curve by about 0.1 s, BENCHMARKS.md "The explorer's redraw")
PREFETCH_DELAY_S = 0.3
#: the lambda slider's range, in decades (the exact entry takes any value)
LOG_LAM_RANGE = (-6.0, 2.0)
#: the lambda slider's step, in decades
LOG_LAM_STEP = 0.05
#: the significant digits of a lambda set by the slider (the exact entry shows them all)
LAM_DIGITS = 4

#: the sidebar's width and the plot's least width (CSS pixels): on a page narrower than
#: their sum the controls stack above the plot
SIDEBAR_PX = 350
PLOT_MIN_PX = 480
#: the served page's viewport: the device's width at scale 1 (a phone shows the page at its
#: own width, the controls above the plot, rather than a desktop page scaled down)
VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'
#: the served page's template (Panel's, extended): the viewport in the head
PAGE_TEMPLATE = "{% block preamble %}{{ super() }}" + VIEWPORT + "{% endblock %}"

#: the labels of the overlays the engine computes on request
OVERLAY_LABELS = {
    "bayes": "Bayes-optimal error",
    "alpha_star": "alpha*_K (separability threshold)",
    "lambda_star": "lambda* (optimal penalty)",
    "simulation": "finite-size simulation points",
}
#: the mixture's models that the controls build (a file holds any other)
MODELS = ("isotropic", "block", "sparse")
#: the families of cluster means
MEANS = ("auto", "simplex", "gaussian", "antipodal")
#: fields of a model's own parameters, shown for that model only
MODEL_FIELDS = {
    "block": ("fractions", "deltas"),
    "sparse": ("sparsity", "delta1", "delta2"),
}
#: fields that build the mixture (a mixture file replaces them)
BUILDER_FIELDS = (
    "n_clusters",
    "delta",
    "rho",
    "means",
    "model",
    "fractions",
    "deltas",
    "sparsity",
    "delta1",
    "delta2",
    "labels",
)
#: the controls' labels
LABELS = {
    "n_clusters": "K (clusters)",
    "delta": "Delta (one value, or one per cluster)",
    "rho": "rho (cluster priors; empty: balanced)",
    "means": "means",
    "model": "covariance model",
    "fractions": "block fractions",
    "deltas": "block variances",
    "sparsity": "sparsity",
    "delta1": "Delta_1",
    "delta2": "Delta_2",
    "mixture_file": "mixture file (Mixture.save)",
    "labels": "label map",
    "loss": "loss",
    "penalty": "penalty",
    "l1_ratio": "l1_ratio (elastic net)",
    "lam": "lambda (exact)",
    "axis": "x axis",
    "alpha_min": "alpha from",
    "alpha_max": "alpha to",
    "n_points": "points",
    "log_x": "log scale",
    "alpha": "alpha (fixed, lambda axis)",
    "lam_min": "lambda from",
    "lam_max": "lambda to",
    "show": "show",
    "overlays": "overlays",
    "sim_d": "simulation d",
    "sim_seeds": "simulation seeds",
    "precision": "precision (screen: tol 1e-5, no error estimate)",
}

#: every live explorer (closed when the server stops)
_LIVE: weakref.WeakSet[Explorer] = weakref.WeakSet()


def _kind(name: str, default: Any) -> str:
    """The control of a field: a choice, several, a switch, a number or a text."""
    if name in ("show", "overlays"):
        return "multi"
    if name in ("means", "model", "labels", "loss", "penalty", "axis", "precision"):
        return "choice"
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int) and not isinstance(default, bool):
        return "int"
    if isinstance(default, float) and name != "lam":
        return "float"
    return "text"


def _choices(name: str, n_clusters: int = 2) -> list[str]:
    """The options of a choice; ``show``: the observables and the order parameters of
    ``n_clusters`` clusters."""
    if name == "show":
        order = [f"{p}{c}" for p in ORDER_PARAMETERS for c in range(1, n_clusters + 1)]
        return [*observable_names(), *order]
    return {
        "means": list(MEANS),
        "model": list(MODELS),
        "labels": ["auto", *LABEL_MAPS.names()],
        "loss": list(LOSSES.names()),
        "penalty": list(PENALTIES.names()),
        "axis": ["alpha", "lambda"],
        "overlays": list(OVERLAYS),
        "precision": list(PRECISIONS),
    }[name]


def _widget(name: str, value: Any, default: Any, n_clusters: int) -> pn.widgets.Widget:
    """The control of field ``name`` showing ``value``."""
    label = LABELS.get(name, name)
    kind = _kind(name, default)
    if kind == "multi":
        options: Any = _choices(name, n_clusters)
        if name == "overlays":
            options = {OVERLAY_LABELS.get(k, k): k for k in options}
        else:
            options = list(dict.fromkeys([*options, *value]))
        return pn.widgets.CheckBoxGroup(label=label, options=options, value=list(value))
    if kind == "choice":
        options = list(dict.fromkeys([*_choices(name), value]))
        return pn.widgets.Select(label=label, options=options, value=value)
    if kind == "bool":
        return pn.widgets.Checkbox(label=label, value=bool(value))
    if kind == "int":
        return pn.widgets.IntInput(label=label, value=int(value))
    if kind == "float":
        return pn.widgets.FloatInput(label=label, value=float(value))
    return pn.widgets.TextInput(label=label, value=field_text(value))


def _slider_lam(position: float) -> float:
    """The lambda of a position of the slider (log10 lambda), to :data:`LAM_DIGITS`
    significant digits."""
    return float(f"{10.0**position:.{LAM_DIGITS}g}")


def _neighbours(lam: float) -> list[float]:
    """The lambdas of the slider's positions one step either side of ``lam``."""
    here = _slider_value(lam)
    lo, hi = LOG_LAM_RANGE
    return [_slider_lam(p) for p in (here - LOG_LAM_STEP, here + LOG_LAM_STEP) if lo <= p <= hi]


def _slider_value(lam: float) -> float:
    lo, hi = LOG_LAM_RANGE
    return min(max(math.log10(lam), lo), hi) if lam > 0 else lo


class _LambdaSlider(pn.widgets.FloatSlider):
    """The lambda slider, whose moves reach the server at once: Panel holds a change from
    the page for ``Syncable._debounce`` (50 ms) to merge it with the next one, unless the
    property is one of ``_priority_changes``; every move here starts a new curve (which
    cancels the running one), so nothing is gained by waiting."""

    _priority_changes: ClassVar[list[str]] = ["value"]


class Explorer:
    """One explorer: its controls, plot, jobs and exports (one per browser tab or notebook).

    Parameters
    ----------
    state : ExplorerState, optional
        The state to start from (default: ``ExplorerState()``).
    poll : bool
        Draw arriving points from a periodic callback (a served page or a live notebook);
        without it, call :meth:`refresh`.
    location : bool
        Keep the page's URL query equal to :meth:`ExplorerState.to_query` of the current
        state (a served page).
    """

    def __init__(
        self, state: ExplorerState | None = None, *, poll: bool = True, location: bool = False
    ) -> None:
        self.state = state if state is not None else ExplorerState()
        # problems with several outputs draw a coarse pass of the whole range first
        self.session = Session(coarse="auto")
        self.job: Any = None
        self.overlay_job: Any = None
        self.errors: dict[str, str] = {}
        self._drawn: tuple[int, bool, int] | None = None
        self._clock: int | None = None  # the running job's seconds its status shows
        self._submitted = -math.inf  # when the current job was submitted (time.monotonic)
        self._overlays_drawn: tuple[int, bool] | None = None
        self._location = location
        self._tmp: str | None = None
        self._updating = False
        self._periodic: Any = None
        # a served page: a job that ends draws at once (a callback on the page's next tick
        # of its event loop) rather than at the next poll
        doc = pn.state.curdoc if poll else None
        self._doc = doc if doc is not None and doc.session_context is not None else None
        loop = running_loop() if self._doc is not None else None  # the server's
        self._waker = Waker(self._doc, loop, self.refresh) if loop is not None else None
        # a served page draws once it has loaded: draws made before its websocket opened
        # were at times lost (the page kept a stale curve while its status said done); the
        # job starts at once, computing while the page loads
        self._loaded = self._doc is None
        self._build()
        _LIVE.add(self)
        self._changed()
        if not self._loaded:
            pn.state.onload(self._on_load)
        if poll:
            self._periodic = pn.state.add_periodic_callback(self.refresh, period=POLL_MS)

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.widgets: dict[str, pn.widgets.Widget] = {}
        self.error_panes: dict[str, pn.pane.Alert] = {}
        self.controls: dict[str, pn.Column] = {}
        for f in fields(ExplorerState):
            value = getattr(self.state, f.name)
            w = _widget(f.name, value, f.default, self.state.n_clusters)
            w.css_classes = [f"gm-field-{f.name}"]
            w.param.watch(self._on_widget, "value")
            self.widgets[f.name] = w
            self.error_panes[f.name] = pn.pane.Alert(
                "",
                alert_type="danger",
                visible=False,
                margin=(0, 10),
                css_classes=["gm-error", f"gm-error-{f.name}"],
            )
        self.lam_slider = _LambdaSlider(
            label="log10 lambda",
            start=LOG_LAM_RANGE[0],
            end=LOG_LAM_RANGE[1],
            step=LOG_LAM_STEP,
            value=_slider_value(self.state.lam),
            css_classes=["gm-lam-slider"],
        )
        self.lam_slider.param.watch(self._on_slider, "value")
        self.upload = pn.widgets.FileInput(accept=".npz", label="upload a mixture file")
        self.upload.param.watch(self._on_upload, "value")
        for name in self.widgets:
            extra = [self.lam_slider] if name == "lam" else []
            extra += [self.upload] if name == "mixture_file" else []
            self.controls[name] = pn.Column(
                *extra, self.widgets[name], self.error_panes[name], margin=0
            )

        def card(title: str, names: Iterable[str]) -> pn.Card:
            return pn.Card(
                *(self.controls[n] for n in names), title=title, sizing_mode="stretch_width"
            )

        axis = ["axis", "alpha_min", "alpha_max", "alpha", "lam_min", "lam_max", "n_points"]
        sidebar = pn.Column(
            card("Mixture", [*BUILDER_FIELDS[:-1], "mixture_file"]),
            card("Estimator", ["labels", "loss", "penalty", "l1_ratio", "lam"]),
            card("Axis", [*axis, "log_x"]),
            card("Show", ["show", "overlays", "sim_d", "sim_seeds", "precision"]),
            # a flex item of the layout: SIDEBAR_PX wide, the page's width on a narrow page
            styles={"flex": f"1 1 {SIDEBAR_PX - 20}px", "max-width": f"{SIDEBAR_PX}px"},
            sizing_mode="stretch_width",
            css_classes=["gm-sidebar"],
        )
        self.source = ColumnDataSource({"x": np.array([], dtype=float)}, name="gm-curve")
        self.bayes_source = ColumnDataSource({"x": [], "y": []}, name="gm-bayes")
        self.star_source = ColumnDataSource({"x": [], "y": []}, name="gm-lambda-star")
        self.sim_source = ColumnDataSource(
            {"x": [], "y": [], "lower": [], "upper": []}, name="gm-simulation"
        )
        self.figure = self._figure()
        self._show_columns()  # the legend of what is drawn, even before a curve
        self.progress = pn.indicators.Progress(
            value=0, max=1, width=200, bar_color="primary", visible=False
        )
        self.status = pn.pane.Markdown("", css_classes=["gm-status"], margin=(0, 10))
        # what the page says of its start (a state URL that could not be read): kept until
        # the user changes a control, whatever the curves' status says meanwhile
        self.notice = pn.pane.Alert(
            "", alert_type="warning", visible=False, margin=(0, 10), css_classes=["gm-notice"]
        )
        self.failed_pane = pn.pane.Markdown("", css_classes=["gm-failed"], margin=(0, 10))
        self.warnings_pane = pn.pane.Markdown("", css_classes=["gm-warnings"], margin=(0, 10))
        self.overlay_pane = pn.pane.Markdown("", css_classes=["gm-overlays"], margin=(0, 10))
        self.cli_pane = pn.pane.Markdown("", css_classes=["gm-cli"], margin=(0, 10))
        self.downloads = {
            "png": self._download("PNG", "explore.png", lambda: BytesIO(self._export_png())),
            "csv": self._download("CSV", "curve.csv", lambda: StringIO(self._export_csv())),
            "python": self._download(
                "Python", "explore.py", lambda: StringIO(export_python(self.state))
            ),
            "cli": self._download(
                "CLI", "explore.sh", lambda: StringIO(export_cli(self.state) + "\n")
            ),
        }
        main = pn.Column(
            pn.pane.Markdown("## gaussmix explorer", margin=(0, 10)),
            self.notice,
            pn.pane.Bokeh(self.figure, sizing_mode="stretch_width"),
            pn.FlexBox(self.progress, self.status, flex_wrap="wrap"),
            self.failed_pane,
            self.warnings_pane,
            self.overlay_pane,
            pn.FlexBox(*self.downloads.values(), flex_wrap="wrap"),  # rows on a phone
            self.cli_pane,
            sizing_mode="stretch_width",
            # beside the sidebar where the page has room, below it on a phone
            styles={"flex": f"1000 1 {PLOT_MIN_PX}px", "min-width": "0"},
            css_classes=["gm-main"],
        )
        self.layout = pn.FlexBox(
            sidebar,
            main,
            flex_wrap="wrap",
            align_items="flex-start",
            sizing_mode="stretch_width",
            css_classes=["gm-layout"],
        )

    def _download(self, label: str, filename: str, make: Callable[[], Any]) -> Any:
        return pn.widgets.FileDownload(
            callback=make,
            filename=filename,
            label=f"Download {label}",
            color="primary",
            embed=False,
            css_classes=[f"gm-download-{label.lower()}"],
        )

    def _figure(self) -> Any:
        s = self.state
        fig = figure(
            height=420,
            sizing_mode="stretch_width",
            x_axis_type="log" if s.log_x else "linear",
            x_axis_label=_x_label(s),
            tools="pan,wheel_zoom,box_zoom,reset,hover",
            name="gm-figure",
            css_classes=["gm-plot"],
        )
        self.renderers: dict[str, list[Any]] = {}
        fig.line(
            "x",
            "y",
            source=self.bayes_source,
            color="black",
            line_dash="dashed",
            legend_label="Bayes-optimal error",
        )
        fig.scatter(
            "x",
            "y",
            source=self.star_source,
            color="gray",
            marker="square",
            size=7,
            legend_label="test error at lambda*",
        )
        fig.scatter(
            "x", "y", source=self.sim_source, color="black", marker="x", size=9,
            legend_label="simulation",
        )  # fmt: skip
        fig.segment("x", "lower", "x", "upper", source=self.sim_source, color="black")
        self.x_span = Span(dimension="height", line_dash="dotted", line_color="gray")
        self.x_span.visible = False
        fig.add_layout(self.x_span)
        fig.legend.location = "top_right"
        fig.legend.label_text_font_size = FONT["legend"]
        for axis in (*fig.below, *fig.left):
            _style_axis(axis)
        fig.legend.click_policy = "hide"
        return fig

    def _renderer(self, key: str) -> list[Any]:
        """The line and points of column ``key`` (made on first use)."""
        if key not in self.renderers:
            if key not in self.source.data:
                n = len(self.source.data["x"])
                self.source.data = {**self.source.data, key: np.full(n, math.nan)}
            color = PALETTE[len(self.renderers) % len(PALETTE)]
            label = axis_label(key) if key in observable_names() else key
            line = self.figure.line("x", key, source=self.source, color=color, legend_label=label)
            dots = self.figure.scatter("x", key, source=self.source, color=color, size=4)
            self.renderers[key] = [line, dots]
        return self.renderers[key]

    def _show_columns(self) -> None:
        shown = set(self.state.show)
        for key in self.state.show:
            self._renderer(key)
        for key, rs in self.renderers.items():
            for r in rs:
                r.visible = key in shown
        for item in self.figure.legend.items:  # a column shown, or an overlay drawn
            item.visible = any(
                (r.visible or r.data_source is not self.source)
                and len(r.data_source.data["x"]) > 0
                for r in item.renderers
            )

    # ------------------------------------------------------------------ state
    def _read(self) -> tuple[ExplorerState | None, dict[str, str]]:
        """The state the controls describe, or the message of each control that does not
        hold a value: a text is read by :meth:`ExplorerState.from_query` (as in the
        state URL), the other controls hold typed values."""
        values: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for name, w in self.widgets.items():
            v = w.value
            if isinstance(w, pn.widgets.TextInput):
                try:
                    values[name] = getattr(ExplorerState.from_query(urlencode({name: v})), name)
                except (ArgumentError, TypeError, ValueError) as exc:
                    errors[name] = str(exc)
            elif v is None:
                errors[name] = f"{name} must be given"
            else:
                values[name] = tuple(v) if isinstance(v, list) else v
        if errors:
            return None, errors
        return ExplorerState(**values), {}

    def show_notice(self, text: str) -> None:
        """Say ``text`` (Markdown) above the plot until the user changes a control."""
        self.notice.object = text
        self.notice.visible = bool(text)

    def _on_widget(self, event: Any) -> None:
        if self._updating:
            return
        self.show_notice("")
        if event.obj is self.widgets["lam"]:
            try:
                lam = float(event.new)
            except ValueError:
                lam = math.nan
            if lam > 0:
                self._quietly(lambda: setattr(self.lam_slider, "value", _slider_value(lam)))
        self._changed()

    def _on_slider(self, event: Any) -> None:
        if self._updating:
            return
        self.show_notice("")
        lam = _slider_lam(event.new)
        self._quietly(lambda: setattr(self.widgets["lam"], "value", field_text(lam)))
        self._changed()

    def _quietly(self, change: Callable[[], None]) -> None:
        """Make ``change`` to the controls without reacting to it."""
        self._updating = True
        try:
            change()
        finally:
            self._updating = False

    def _on_upload(self, event: Any) -> None:
        if not event.new:
            return
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="gaussmix-explore-")
        path = Path(self._tmp) / Path(self.upload.filename or "mixture.npz").name
        path.write_bytes(event.new)
        self.widgets["mixture_file"].value = str(path)

    def set_state(self, state: ExplorerState) -> None:
        """Show ``state`` in the controls and compute it."""

        def change() -> None:
            for f in fields(ExplorerState):
                v = getattr(state, f.name)
                w = self.widgets[f.name]
                if isinstance(w, pn.widgets.CheckBoxGroup):
                    if f.name == "show":
                        w.options = list(dict.fromkeys([*_choices("show", state.n_clusters), *v]))
                    w.value = list(v)
                elif isinstance(w, pn.widgets.TextInput):
                    w.value = field_text(v)
                else:
                    w.value = v
            self.lam_slider.value = _slider_value(state.lam)

        self._quietly(change)
        self._changed()

    def _changed(self) -> None:
        """A control changed: show the messages beside the controls, or compute.  Nothing
        a control holds stops the page: an unexpected failure is said above the plot."""
        try:
            with pn.io.hold():  # the page's changes in one message, drawn once
                self._apply()
        except Exception as exc:  # noqa: BLE001 - the page reports, the server carries on
            self.status.object = f"**Error**: {type(exc).__name__}: {' '.join(str(exc).split())}"

    def _apply(self) -> None:
        state, errors = self._read()
        if state is not None:
            errors = validate(state)
        self.errors = dict(errors)
        for name, pane in self.error_panes.items():
            pane.object = errors.get(name, "")
            pane.visible = name in errors
        self._arrange(state)
        if errors:
            # the running jobs are of a state the controls no longer show: stopped, so that
            # they neither overwrite this status nor enable an export of that state
            for job in (self.job, self.overlay_job):
                if job is not None:
                    job.cancel()
            self.job = self.overlay_job = None
            self.progress.visible = False
            # nor is their curve left drawn under controls that say otherwise (K raised to 3
            # with a binary loss: no K = 2 curve beside K = 3)
            self._clear_curve()
            refused = "".join(f"\n- {LABELS.get(n, n)}: {m}" for n, m in errors.items())
            self.status.object = (
                "**Not computed**: a value is refused (also said beside its control); "
                "the plot is cleared." + refused
            )
            for button in self.downloads.values():
                button.disabled = True
            return
        self._submit(state)

    def _arrange(self, state: ExplorerState | None) -> None:
        """Show the controls that apply (a model's own parameters, the axis's range,
        the simulation's size, the elastic net's ratio); a mixture file replaces the
        mixture's controls."""
        file_mode = bool(self.widgets["mixture_file"].value)
        for name in BUILDER_FIELDS:
            self.widgets[name].disabled = file_mode
        model = self.widgets["model"].value
        for m, names in MODEL_FIELDS.items():
            for n in names:
                self.controls[n].visible = (model == m and not file_mode) or bool(
                    self.errors.get(n)
                )
        lam_axis = self.widgets["axis"].value == "lambda"
        for n in ("alpha_min", "alpha_max"):
            self.controls[n].visible = not lam_axis
        for n in ("alpha", "lam_min", "lam_max"):
            self.controls[n].visible = lam_axis
        for n in ("sim_d", "sim_seeds"):
            self.controls[n].visible = "simulation" in self.widgets["overlays"].value
        self.controls["l1_ratio"].visible = PENALTIES.get(
            self.widgets["penalty"].value
        ).takes_l1_ratio
        if state is not None and state.mixture_file is None:
            show = self.widgets["show"]
            options = list(dict.fromkeys([*_choices("show", state.n_clusters), *state.show]))
            if options != list(show.options):
                self._quietly(lambda: setattr(show, "options", options))

    def _submit(self, state: ExplorerState) -> None:
        old = self.state
        self.state = state
        # the running jobs stopped, the page's own changes made, the new jobs started last:
        # a job's thread shares the interpreter with this handler, whose end the page's
        # next draw waits for
        self.session.cancel()
        self._drawn = None
        self._overlays_drawn = None
        for name, button in self.downloads.items():  # the table's wait for it
            button.disabled = name in ("csv", "png")
        if (old.axis, old.log_x) != (state.axis, state.log_x):
            self._axis(state)
        self._show_columns()
        self.cli_pane.object = f"Command line:\n```\n{export_cli(state)}\n```"
        self.status.object = "computing..."
        if self._location and pn.state.location is not None:
            query = state.to_query()
            pn.state.location.search = f"?{query}" if query else ""
        self.job = self.session.submit(state, on_done=self._wake)
        self._submitted = time.monotonic()
        if state.axis == "alpha" and state.lam > 0:  # the slider's next positions, ahead
            ahead = [state.replace(lam=lam) for lam in _neighbours(state.lam)]
            self.session.prefetch(ahead, delay=PREFETCH_DELAY_S)
        self.overlay_job = self.session.submit_overlays(state) if state.overlays else None

    def _axis(self, state: ExplorerState) -> None:
        fig = self.figure
        fig.x_scale = LogScale() if state.log_x else LinearScale()
        fig.below = [
            _style_axis((LogAxis if state.log_x else LinearAxis)(axis_label=_x_label(state)))
        ]

    # ------------------------------------------------------------------ drawing
    def _wake(self) -> None:
        """Called in a job's thread when it ends: draw on the page's next tick, once
        however many jobs end before it (:class:`~gaussmix.explore.serving.Waker`)."""
        if self._waker is not None:
            self._waker()

    def _on_load(self) -> None:
        """The served page has loaded (its websocket is open): draw from now on."""
        self._loaded = True
        self.refresh()

    def refresh(self, wait: bool = False) -> None:
        """Draw what the jobs have computed (``wait``: wait for them to finish first); a
        served page not yet loaded draws nothing (its first draw follows the load)."""
        if self._doc is not None:
            resend_stranded_writes(self._doc)
        job, overlays = self.job, self.overlay_job
        if job is None or not self._loaded:
            return
        if wait:
            job.wait()
            if overlays is not None:
                overlays.wait()
        with pn.io.hold():  # the page's changes in one message, drawn once
            self._refresh(job, overlays)

    def _refresh(self, job: Any, overlays: Any) -> None:
        key = (len(job.rows), job.done, len(job.preview))
        fresh = time.monotonic() - self._submitted < HOLD_S
        if key != self._drawn and not (key == (0, False, 0) and fresh):
            # (a new job with nothing to show yet keeps the old curve for HOLD_S: a curve
            # that comes within it replaces the old one in one update of the page)
            self._draw(job, key)
        elif self._drawn is not None and running_seconds(job) != self._clock:
            # the running job's clock: the page says it is alive while no point arrives
            self._clock = running_seconds(job)
            self.status.object = curve_status(job)
        if overlays is not None:
            okey = (len(overlays.results), overlays.done)
            if okey != self._overlays_drawn:
                self._draw_overlays(overlays, okey)
        elif self._overlays_drawn != (0, True):
            self._clear_overlays()

    def _draw(self, job: Any, key: tuple[int, bool, int]) -> None:
        x = x_column(job.state)
        rows = job.rows[: key[0]]
        if not job.done and job.preview:  # the coarse pass where no row has arrived yet
            have = [r[x] for r in rows]
            lo, hi = (min(have), max(have)) if have else (math.inf, -math.inf)
            rows = rows + [r for r in job.preview if not lo <= r[x] <= hi]
        rows = sorted(rows, key=lambda r: r[x])
        data: dict[str, Any] = {"x": np.array([r[x] for r in rows], dtype=float)}
        names = set(self.renderers) | set(job.state.show)
        for r in rows[:1]:
            names |= {k for k, v in r.items() if isinstance(v, float)}
        for name in names:
            data[name] = np.array(
                [_number(r.get(name)) if r["converged"] else math.nan for r in rows], dtype=float
            )
        self.source.data = data
        self._show_columns()
        self._drawn = key
        done, total = job.progress
        self.progress.max = max(int(total), 1)
        self.progress.value = min(int(done), self.progress.max)
        self.progress.visible = not job.done
        for name, button in self.downloads.items():  # the table's, once it is complete
            button.disabled = name in ("csv", "png") and job.table is None
        self.status.object = curve_status(job)
        self._clock = running_seconds(job)
        self.failed_pane.object = (
            "**Did not converge** (drawn missing):"
            + "".join(f"\n- {x} = {xv:g}: {msg}" for xv, msg in job.failed)
            if job.failed
            else ""
        )
        self.warnings_pane.object = (
            "**Warnings**:" + "".join(f"\n- {w}" for w in job.warnings) if job.warnings else ""
        )

    def _clear_curve(self) -> None:
        """Draw no curve and no overlay (a refused state: nothing computed to show)."""
        self.source.data = {k: np.array([], dtype=float) for k in self.source.data}
        self._drawn = None
        self.failed_pane.object = ""
        self.warnings_pane.object = ""
        self._clear_overlays()

    def _clear_overlays(self) -> None:
        self.bayes_source.data = {"x": [], "y": []}
        self.star_source.data = {"x": [], "y": []}
        self.sim_source.data = {"x": [], "y": [], "lower": [], "upper": []}
        self.x_span.visible = False
        self.overlay_pane.object = ""
        self._overlays_drawn = (0, True)
        self._show_columns()

    def _draw_overlays(self, job: Any, key: tuple[int, bool]) -> None:
        """Draw the overlays that have arrived: the Bayes-optimal error (a dashed curve, a
        level on the lambda axis), alpha* and lambda* (a dotted line on their own axis;
        on the alpha axis, lambda*'s test error as squares), simulation points with their
        standard errors (the first shown observable)."""
        self._clear_overlays()
        self._overlays_drawn = key
        state = job.state
        x = x_column(state)
        results = dict(job.results)
        lines = []
        for name, overlay in results.items():
            label = OVERLAY_LABELS.get(name, name)
            if name == "simulation":
                label += f" (d = {state.sim_d}, {state.sim_seeds} seeds)"
            if overlay.unavailable:
                lines.append(f"- {label}: not available: {overlay.unavailable}")
                continue
            if overlay.value is not None:
                lines.append(f"- {label}: {overlay.value:.6g}")
                if name == "lambda_star" and math.isinf(overlay.value):
                    lines[-1] += " (the test error decreases all the way to lambda -> infinity)"
            elif overlay.rows:
                lines.append(f"- {label}: {len(overlay.rows)} points")
            self._draw_overlay(name, overlay, x, state)
        done, total = job.progress
        head = "**Overlays**" + ("" if job.done else f" (computing: {done} of {total})")
        if job.error:
            head += f": {job.error}"
        warned = "".join(f"\n- {w}" for w in job.warnings)
        self.overlay_pane.object = head + "\n" + "\n".join(lines) + warned
        self._show_columns()

    def _draw_overlay(self, name: str, overlay: Any, x: str, state: ExplorerState) -> None:
        rows = sorted(overlay.rows, key=lambda r: r.get(x, 0.0))
        if name == "bayes":
            if x == "alpha":
                self.bayes_source.data = {
                    "x": [r["alpha"] for r in rows],
                    "y": [r["test_error"] for r in rows],
                }
            elif overlay.value is not None:  # a level across the axis (in the legend)
                ends = [state.lam_min, state.lam_max]
                self.bayes_source.data = {"x": ends, "y": [overlay.value] * 2}
        elif name == "alpha_star" and x == "alpha" and overlay.value is not None:
            if math.isfinite(overlay.value):
                self.x_span.location = overlay.value
                self.x_span.visible = True
        elif name == "lambda_star":
            if x == "alpha":
                self.star_source.data = {
                    "x": [r["alpha"] for r in rows],
                    "y": [r["test_error"] for r in rows],
                }
            elif overlay.value is not None and 0 < overlay.value < math.inf:
                self.x_span.location = overlay.value
                self.x_span.visible = True
        elif name == "simulation":
            key = next((k for k in state.show if rows and k in rows[0]), None)
            if key is not None:
                y = np.array([r[key] for r in rows])
                se = np.array([r.get(f"{key}_se", 0.0) for r in rows])
                self.sim_source.data = {
                    "x": [r[x] for r in rows],
                    "y": y,
                    "lower": y - se,
                    "upper": y + se,
                }

    # ------------------------------------------------------------------ exports
    def _finished(self) -> Any:
        if self.job is None:
            raise ValueError("nothing computed yet")
        return self.job.wait()

    def _export_csv(self) -> str:
        return export_csv(self.state, self._finished())

    def _export_png(self) -> bytes:
        import pandas as pd

        self._finished()
        # the overlays computed so far (a simulation may still run: never wait for it here)
        overlays = dict(self.overlay_job.results) if self.overlay_job is not None else None
        rows = pd.DataFrame(self.job.rows).sort_values(x_column(self.state))
        return export_png(self.state, rows, overlays=overlays)

    # ------------------------------------------------------------------ end
    def close(self) -> None:
        """Stop polling, cancel the jobs and join their threads, remove uploaded files."""
        self._doc = None  # (a job that ends now asks no draw of the page that has gone)
        if self._waker is not None:
            self._waker.close()
        if self._periodic is not None:
            self._periodic.stop()
            self._periodic = None
        self.session.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        _LIVE.discard(self)

    def __panel__(self) -> Any:
        return self.layout


#: the colours of the shown columns, in order
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip


#: the plot's type (CSS pixels): readable on a projected screen, and on a phone
FONT = {"tick": "13px", "label": "14px", "legend": "13px"}


def _style_axis(axis: Any) -> Any:
    """``axis`` in the plot's type, its tick labels never overlapping (a label that would
    touch its neighbour is left out: on a narrow plot, a log axis's 2, 3, ..., 9)."""
    axis.major_label_text_font_size = FONT["tick"]
    axis.axis_label_text_font_size = FONT["label"]
    axis.major_label_policy = NoOverlap()
    return axis


def _x_label(state: ExplorerState) -> str:
    return "alpha = n/d" if state.axis == "alpha" else "lambda"


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def explorer(state: ExplorerState | None = None) -> Any:
    """The explorer as a Panel layout, for a Jupyter notebook (run
    ``pn.extension(inline=True)`` first: Bokeh's and Panel's JavaScript in the notebook
    itself, so that it renders with no network; plain ``pn.extension()`` loads them from
    a CDN).

    Parameters
    ----------
    state : ExplorerState, optional
        The state to start from (default ``ExplorerState()``).

    Returns
    -------
    panel.FlexBox
        The layout (a ``panel.FlexBox``: the controls beside the plot, above it on a
        narrow page); its ``explorer`` attribute is the :class:`Explorer` behind it.
    """
    app = Explorer(state)
    app.layout.explorer = app  # type: ignore[attr-defined]
    return app.layout


def _session_state(initial: ExplorerState) -> tuple[ExplorerState, str | None]:
    """The state of a new page: its URL query if it has one, else ``initial``; a query
    that cannot be read gives ``initial`` and the notice to show (:func:`not_restored`)."""
    args = pn.state.session_args or {}
    pairs = [(k, v.decode()) for k, vs in args.items() for v in vs]
    if not pairs:
        return initial, None
    try:
        return ExplorerState.from_query(urlencode(pairs)), None
    except (ArgumentError, TypeError, ValueError) as exc:
        return initial, not_restored(exc, initial)


def not_restored(problem: Exception | str, initial: ExplorerState) -> str:
    """The notice of a page whose URL's state could not be read: the parser's message
    (naming the parameter and what it expects) and what is shown instead."""
    instead = "the defaults" if initial == ExplorerState() else "the starting view"
    return (
        f"**Not restored** from the URL: {problem}. Showing {instead} instead "
        "(the URL's other values are not applied either)."
    )


def serve(
    initial: ExplorerState,
    *,
    host: str = "127.0.0.1",
    port: int = 5006,
    websocket_origin: list[str] | None = None,
) -> Any:
    """A Bokeh server (not started) whose pages are explorers starting from ``initial``
    (or from their URL's query).

    Each page is one :class:`Explorer`, closed when the page goes; :func:`close_all`
    closes those left when the server stops.
    """

    def page() -> Any:
        state, problem = _session_state(initial)
        app = Explorer(state, location=True)
        if problem:
            app.show_notice(problem)
        if pn.state.curdoc is not None:  # the viewport of a phone (Panel's template)
            pn.state.curdoc.template = PAGE_TEMPLATE
        pn.state.on_session_destroyed(lambda _ctx: app.close())
        return app.layout

    return pn.serve(
        page,
        port=port,
        address=host,
        websocket_origin=websocket_origin,
        show=False,
        start=False,
        title="gaussmix explorer",
        verbose=False,
    )


def close_all() -> None:
    """Close every live explorer (cancel and join its jobs, remove its uploads)."""
    for app in list(_LIVE):
        app.close()
