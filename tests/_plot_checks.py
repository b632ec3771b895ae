"""Checks of a drawn matplotlib figure shared by the plotting and export tests: tick labels
that do not overlap, type large enough to read on a slide."""

from __future__ import annotations

from typing import Any


def shown_tick_labels(ax: Any, axis: str = "x") -> list[tuple[float, str, Any]]:
    """The labelled major ticks ``ax`` draws on ``axis``: (value, text, bounding box in
    pixels), in order, from a draw of its figure at its own size."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    target = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(target.get_view_interval())
    out = []
    for tick in target.get_major_ticks():
        value = tick.get_loc()
        label = tick.label1
        if label.get_visible() and label.get_text() and lo <= value <= hi:
            out.append((value, label.get_text(), label.get_window_extent(renderer)))
    return sorted(out, key=lambda t: t[0])


def assert_ticks_readable(ax: Any, axis: str = "x") -> list[str]:
    """At least two labelled ticks on ``axis`` and no two labels overlapping; the texts."""
    shown = shown_tick_labels(ax, axis)
    assert len(shown) >= 2, [t for _, t, _ in shown]
    for (_, a, box_a), (_, b, box_b) in zip(shown, shown[1:]):
        assert not box_a.overlaps(box_b), (a, b, box_a, box_b)
    return [t for _, t, _ in shown]


def assert_type_sizes(ax: Any, *, axes_pt: float = 10.0, legend_pt: float = 9.0) -> None:
    """The type of ``ax`` at its figure's size: ticks, axis labels and title at least
    ``axes_pt`` points, the legend at least ``legend_pt``."""
    ax.figure.draw(ax.figure.canvas.get_renderer())
    texts = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label]
    texts += [ax.title] if ax.get_title() else []
    for text in texts:
        if text.get_text():
            assert text.get_fontsize() >= axes_pt, (text.get_text(), text.get_fontsize())
    legend = ax.get_legend()
    if legend is not None:
        for text in legend.get_texts():
            assert text.get_fontsize() >= legend_pt, (text.get_text(), text.get_fontsize())
