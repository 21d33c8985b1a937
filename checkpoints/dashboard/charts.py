"""Charts as server-rendered inline SVG: no script, no style attribute, nothing fetched, so they pass the
dashboard's Content-Security-Policy and work offline. Colours and fonts come from classes styled in
static/checkpoints/dashboard.css. Every chart carries a <title> and a <desc> (read by screen readers) and
one <title> per bar or point (shown on hover).

The functions take plain numbers and labels; the queries that produce them live in
checkpoints.dashboard.activity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

WIDTH = 760
HEIGHT = 260
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 72, 16, 52, 40
MAX_X_LABELS = 8
Formatter = Callable[[float], str]


def _n(value: float) -> str:
    """A coordinate with one decimal (format_html turns its arguments into text: numbers come formatted)."""
    return f"{value:.1f}"


@dataclass(frozen=True)
class Series:
    """A named row of values, one per label; `key` names its CSS class (`series-<key>`) and data attribute."""

    key: str
    name: str
    values: Sequence[int]
    level: bool = False  # a level at each label (the legend gives the last), not an amount per label

    @property
    def total(self) -> int:
        return sum(self.values)

    def legend_figure(self, fmt: Formatter) -> str:
        return f"{fmt(self.values[-1])} now" if self.level and self.values else fmt(self.total)


def compact_number(value: float) -> str:
    """1234 → "1.2k", 5_000_000 → "5M": tick labels that stay short at any size."""
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{value:g}"


def compact_bytes(value: float) -> str:
    """Bytes in decimal units ("250 kB", "1.5 MB"), so the round tick steps read as round numbers."""
    for limit, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{value:g} B"


def nice_ticks(maximum: float, count: int = 4) -> list[float]:
    """Round tick values from 0 to at least `maximum`: steps of 1, 2 or 5 times a power of ten, never
    fractional (the charts count things and bytes). An empty series gets the axis 0..1."""
    if maximum <= 0:
        return [0, 1]
    raw = maximum / count
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    top = math.ceil(maximum / step) * step
    return [i * step for i in range(round(top / step) + 1)]


def _label_every(count: int) -> int:
    return max(1, math.ceil(count / MAX_X_LABELS))


def _frame(title: str, desc: str, chart_id: str, body: list[str]) -> SafeString:
    head = format_html(
        '<svg class="chart" id="{id}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        'aria-labelledby="{id}-title {id}-desc" preserveAspectRatio="xMinYMin meet">'
        '<title id="{id}-title">{title}</title><desc id="{id}-desc">{desc}</desc>'
        '<text class="chart-title" x="{x}" y="20">{title}</text>',
        id=chart_id,
        w=WIDTH,
        h=HEIGHT,
        title=title,
        desc=desc,
        x=MARGIN_LEFT,
    )
    return mark_safe(head + "".join(body) + "</svg>")  # nosec B308 B703 # every piece escaped by format_html


def _axes(ticks: list[float], labels: Sequence[str], fmt: Formatter, plot_h: float) -> list[str]:
    """The y grid with its labelled ticks, the x axis line and every few labels under it."""
    parts: list[str] = []
    top = ticks[-1]
    bottom = MARGIN_TOP + plot_h
    for tick in ticks:
        y = bottom - tick / top * plot_h
        parts.append(
            format_html(
                '<line class="chart-grid" x1="{x1}" x2="{x2}" y1="{y}" y2="{y}"/>'
                '<text class="chart-tick chart-ytick" x="{tx}" y="{ty}" text-anchor="end">{label}</text>',
                x1=MARGIN_LEFT,
                x2=WIDTH - MARGIN_RIGHT,
                y=_n(y),
                tx=MARGIN_LEFT - 6,
                ty=_n(y + 4),
                label=fmt(tick),
            )
        )
    parts.append(
        format_html(
            '<line class="chart-axis" x1="{x1}" x2="{x2}" y1="{y}" y2="{y}"/>',
            x1=MARGIN_LEFT,
            x2=WIDTH - MARGIN_RIGHT,
            y=bottom,
        )
    )
    slot = (WIDTH - MARGIN_LEFT - MARGIN_RIGHT) / max(1, len(labels))
    every = _label_every(len(labels))
    for index in range(0, len(labels), every):
        parts.append(
            format_html(
                '<text class="chart-tick chart-xtick" x="{x}" y="{y}" text-anchor="middle">{label}</text>',
                x=_n(MARGIN_LEFT + (index + 0.5) * slot),
                y=bottom + 16,
                label=labels[index],
            )
        )
    return parts


def _legend(series: Sequence[Series], fmt: Formatter) -> list[str]:
    parts: list[str] = []
    x = MARGIN_LEFT
    for one in series:
        parts.append(
            format_html(
                '<rect class="chart-swatch series-{key}" x="{x}" y="30" width="10" height="10"/>'
                '<text class="chart-legend" x="{tx}" y="39">{name} ({figure})</text>',
                key=one.key,
                x=_n(x),
                tx=x + 14,
                name=one.name,
                figure=one.legend_figure(fmt),
            )
        )
        x += 30 + 7 * (len(one.name) + len(one.legend_figure(fmt)))
    return parts


def bar_chart(
    *,
    chart_id: str,
    title: str,
    desc: str,
    labels: Sequence[str],
    series: Sequence[Series],
    fmt: Formatter = compact_number,
    line: Series | None = None,
) -> SafeString:
    """Grouped bars, one group per label and one bar per series, on a y axis from 0 with round ticks.

    `line` (optional) is drawn over the bars as a polyline with a point per label, on the same axis (the
    storage chart's bytes held). Zero bars are not drawn; every drawn bar and point carries
    `data-series`, `data-label` and `data-value`.
    """
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    peak = max([0, *(v for one in series for v in one.values), *(line.values if line else [])])
    ticks = nice_ticks(peak)
    top, bottom = ticks[-1], MARGIN_TOP + plot_h
    parts = _axes(ticks, labels, fmt, plot_h)
    slot = plot_w / max(1, len(labels))
    bar_w = max(1.0, slot * 0.8 / max(1, len(series)))
    for s_index, one in enumerate(series):
        for index, value in enumerate(one.values):
            if value <= 0:
                continue
            height = max(1.0, value / top * plot_h)
            parts.append(
                format_html(
                    '<rect class="bar series-{key}" data-series="{key}" data-label="{label}" '
                    'data-value="{value}" x="{x}" y="{y}" width="{w}" height="{h}">'
                    "<title>{label}: {shown} {name}</title></rect>",
                    key=one.key,
                    label=labels[index],
                    value=value,
                    x=_n(MARGIN_LEFT + index * slot + slot * 0.1 + s_index * bar_w),
                    y=_n(bottom - height),
                    w=_n(bar_w),
                    h=_n(height),
                    shown=fmt(value),
                    name=one.name.lower(),
                )
            )
    if line is not None:
        parts += _line(line, labels, fmt, slot, top, plot_h)
    if peak == 0:
        parts.append(
            format_html(
                '<text class="chart-empty" x="{x}" y="{y}" text-anchor="middle">'
                "Nothing in this window</text>",
                x=_n(MARGIN_LEFT + plot_w / 2),
                y=_n(MARGIN_TOP + plot_h / 2),
            )
        )
    parts += _legend([*series, *([line] if line else [])], fmt)
    return _frame(title, desc, chart_id, parts)


def _line(
    line: Series, labels: Sequence[str], fmt: Formatter, slot: float, top: float, plot_h: float
) -> list[str]:
    bottom = MARGIN_TOP + plot_h
    points = [
        (MARGIN_LEFT + (index + 0.5) * slot, bottom - value / top * plot_h)
        for index, value in enumerate(line.values)
    ]
    parts: list[str] = [
        format_html(
            '<polyline class="chart-line series-{key}" fill="none" points="{points}"/>',
            key=line.key,
            points=" ".join(f"{x:.1f},{y:.1f}" for x, y in points),
        )
    ]
    for (x, y), label, value in zip(points, labels, line.values, strict=True):
        parts.append(
            format_html(
                '<circle class="point series-{key}" data-series="{key}" data-label="{label}" '
                'data-value="{value}" cx="{x}" cy="{y}" r="3">'
                "<title>{label}: {shown} {name}</title></circle>",
                key=line.key,
                label=label,
                value=value,
                x=_n(x),
                y=_n(y),
                shown=fmt(value),
                name=line.name.lower(),
            )
        )
    return parts


def sparkline(*, values: Sequence[int], labels: Sequence[str], title: str, desc: str) -> SafeString:
    """A small bar strip (no axes) of one series: one bar per label, scaled to the largest value."""
    width, height, gap = 240, 36, 1
    peak = max([0, *values])
    slot = width / max(1, len(values))
    parts: list[str] = []
    for index, value in enumerate(values):
        if value <= 0:
            continue
        bar_h = max(2.0, value / peak * (height - 2))
        parts.append(
            format_html(
                '<rect class="spark-bar" data-label="{label}" data-value="{value}" x="{x}" y="{y}" '
                'width="{w}" height="{h}"><title>{label}: {value}</title></rect>',
                label=labels[index],
                value=value,
                x=_n(index * slot),
                y=_n(height - bar_h),
                w=_n(max(1.0, slot - gap)),
                h=_n(bar_h),
            )
        )
    head = format_html(
        '<svg class="sparkline" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        'aria-label="{title}"><title>{title}</title><desc>{desc}</desc>'
        '<line class="spark-base" x1="0" x2="{w}" y1="{h}" y2="{h}"/>',
        w=width,
        h=height,
        title=title,
        desc=desc,
    )
    return mark_safe(head + "".join(parts) + "</svg>")  # nosec B308 B703 # every piece escaped by format_html
