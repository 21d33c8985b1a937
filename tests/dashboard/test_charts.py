"""The SVG builders of checkpoints/dashboard/charts.py: scales, empty and one-point series, huge values,
escaping, and nothing the dashboard's Content-Security-Policy would refuse."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from checkpoints.dashboard.charts import (
    HEIGHT,
    MARGIN_BOTTOM,
    MARGIN_TOP,
    Series,
    bar_chart,
    compact_bytes,
    compact_number,
    nice_ticks,
    sparkline,
)

SVG = "{http://www.w3.org/2000/svg}"
PLOT_BOTTOM = HEIGHT - MARGIN_BOTTOM
PLOT_HEIGHT = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM


def parse(svg: str) -> ET.Element:
    """The chart as XML (it must be well-formed), in the SVG namespace as a browser reads inline SVG."""
    return ET.fromstring(svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1))


def bars(root: ET.Element) -> list[ET.Element]:
    return [rect for rect in root.iter(f"{SVG}rect") if "bar" in rect.get("class", "").split()]


def ytick_labels(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text") if "chart-ytick" in t.get("class", "")]


@pytest.mark.parametrize(
    ("maximum", "expected"),
    [
        (0, [0, 1]),
        (1, [0, 1]),
        (3, [0, 1, 2, 3]),
        (7, [0, 2, 4, 6, 8]),
        (13, [0, 5, 10, 15]),
        (100, [0, 50, 100]),
        (4_321, [0, 2_000, 4_000, 6_000]),
    ],
)
def test_it_picks_round_ticks_from_zero_to_at_least_the_maximum(maximum: int, expected: list[int]) -> None:
    assert nice_ticks(maximum) == expected


def test_it_scales_bars_to_the_top_tick_and_labels_every_drawn_bar() -> None:
    svg = bar_chart(
        chart_id="c",
        title="Activity",
        desc="three days",
        labels=["d1", "d2", "d3"],
        series=[Series("checkpoints", "Checkpoints", [4, 0, 8]), Series("jobs", "Jobs", [1, 2, 0])],
    )
    root = parse(svg)
    drawn = {(b.get("data-series"), b.get("data-label")): b for b in bars(root)}
    assert sorted(drawn) == [("checkpoints", "d1"), ("checkpoints", "d3"), ("jobs", "d1"), ("jobs", "d2")]
    assert ytick_labels(root) == ["0", "2", "4", "6", "8"]  # the top tick is the peak, 8
    tallest = drawn[("checkpoints", "d3")]
    assert (float(tallest.get("y", "")), float(tallest.get("height", ""))) == (MARGIN_TOP, PLOT_HEIGHT)
    assert float(drawn[("checkpoints", "d1")].get("height", "")) == PLOT_HEIGHT / 2
    assert tallest.findtext(f"{SVG}title") == "d3: 8 checkpoints"
    # Accessible name and description, a visible title, a legend with the totals.
    assert root.get("aria-labelledby") == "c-title c-desc"
    assert (root.findtext(f"{SVG}title"), root.findtext(f"{SVG}desc")) == ("Activity", "three days")
    legend = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "chart-legend"]
    assert legend == ["Checkpoints (12)", "Jobs (3)"]


def test_it_draws_an_empty_series_as_an_axis_with_a_note_and_no_bars() -> None:
    root = parse(
        bar_chart(
            chart_id="e", title="t", desc="d", labels=["a", "b"], series=[Series("jobs", "Jobs", [0, 0])]
        )
    )
    assert bars(root) == []
    assert ytick_labels(root) == ["0", "1"]
    assert [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "chart-empty"] == [
        "Nothing in this window"
    ]


def test_it_draws_a_single_point_and_its_level_line() -> None:
    root = parse(
        bar_chart(
            chart_id="one",
            title="t",
            desc="d",
            labels=["only"],
            series=[Series("written", "Written", [5])],
            line=Series("held", "Held", [5], level=True),
            fmt=compact_bytes,
        )
    )
    (bar,) = bars(root)
    assert (bar.get("data-value"), float(bar.get("height", ""))) == ("5", PLOT_HEIGHT * 5 / 6)  # top tick 6
    (point,) = root.iter(f"{SVG}circle")
    assert (point.get("data-series"), point.get("data-value"), point.get("cy")) == (
        "held",
        "5",
        f"{PLOT_BOTTOM - PLOT_HEIGHT * 5 / 6:.1f}",
    )
    assert root.find(f"{SVG}polyline") is not None
    assert ytick_labels(root) == ["0 B", "2 B", "4 B", "6 B"]
    legends = [text.text for text in root.iter(f"{SVG}text") if text.get("class") == "chart-legend"]
    assert legends == ["Written (5 B)", "Held (5 B now)"]  # a level gives its last value, not a sum


def test_a_level_line_names_its_last_value_in_the_legend() -> None:
    held = Series("held", "Held", [10, 30, 20], level=True)
    assert (
        held.legend_figure(compact_number),
        Series("w", "W", [10, 30, 20]).legend_figure(compact_number),
    ) == (
        "20 now",
        "60",
    )


def test_it_keeps_huge_values_on_the_scale_with_short_labels() -> None:
    huge = 7 * 10**15
    root = parse(
        bar_chart(
            chart_id="h",
            title="t",
            desc="d",
            labels=["a", "b"],
            series=[Series("written", "W", [huge, 1])],
            fmt=compact_bytes,
        )
    )
    big, small = bars(root)
    assert (
        float(big.get("y", "")) >= MARGIN_TOP
        and float(big.get("y", "")) + float(big.get("height", "")) == PLOT_BOTTOM
    )
    assert float(small.get("height", "")) == 1.0  # a non-zero value stays visible
    assert ytick_labels(root)[-1] == "8000 TB"
    assert (
        compact_number(1_234) == "1.2k" and compact_number(5_000_000) == "5M" and compact_number(12) == "12"
    )


def test_it_escapes_every_text_and_uses_no_inline_style_or_script() -> None:
    svg = bar_chart(
        chart_id="x",
        title='<script>alert("t")</script>',
        desc="a & b",
        labels=['"><img src=x>'],
        series=[Series("jobs", "<b>Jobs</b>", [1])],
    )
    root = parse(svg)  # still well-formed
    assert root.findtext(f"{SVG}title") == '<script>alert("t")</script>'
    assert "<script" not in svg and "<img" not in svg and "<b>" not in svg
    assert not re.search(r"\sstyle=|\son\w+=", svg)


def test_it_draws_a_sparkline_bar_per_non_empty_bucket_scaled_to_the_peak() -> None:
    root = parse(
        sparkline(
            values=[0, 3, 6, 0], labels=["h0", "h1", "h2", "h3"], title="Checkpoints per hour", desc="9"
        )
    )
    drawn = [
        (r.get("data-label"), r.get("data-value"), float(r.get("height", "")))
        for r in root.iter(f"{SVG}rect")
    ]
    assert drawn == [("h1", "3", 17.0), ("h2", "6", 34.0)]
    assert root.get("aria-label") == "Checkpoints per hour"
    empty = parse(sparkline(values=[0, 0], labels=["a", "b"], title="t", desc="d"))
    assert list(empty.iter(f"{SVG}rect")) == []
