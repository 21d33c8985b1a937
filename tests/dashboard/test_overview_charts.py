"""The overview's activity and storage charts and the thread page's sparkline: counts per hour or day from
one GROUP BY per series, the window the auditor picks, pinned query counts, and nothing of another
workspace."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checkpoints.models import Checkpoint, Job, Message, Thread, Workspace
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.messages import messages_append
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 10, 30, 15, tzinfo=UTC)
# session + user + workspace, the three activity series and the storage chart's two (written and erased
# per day; one query each), then the
# page's other queries: six capped counts, three storage totals (checkpoint rows logical and as stored, the
# workspace's parts, message text; cached for a minute, so the cache is cleared before each request), the
# expiring list and its count, failed and active jobs, recent events (and their agents when there are any).
OVERVIEW_QUERIES = 22


@pytest.fixture(autouse=True)
def frozen() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def at(workspace: Workspace, when: datetime) -> None:
    """Move everything created in `workspace` since the last call to `when`."""
    Checkpoint.objects.filter(workspace=workspace, created_at__gte=NOW).update(created_at=when)
    Message.objects.filter(thread__workspace=workspace, created_at__gte=NOW).update(created_at=when)
    Job.objects.filter(workspace=workspace, created_at__gte=NOW).update(created_at=when)


def seed(workspace: Workspace) -> None:
    """2 checkpoints and 3 messages two hours ago; 1 checkpoint and a job yesterday; 1 checkpoint 40 days
    ago (outside both windows); 1 checkpoint now."""
    make_checkpoint(workspace, "t1", state={"n": 1})
    make_checkpoint(workspace, "t1", state={"n": 2})
    messages_append(
        workspace=workspace, thread_id="t1", messages=[{"role": "user", "content": f"m{n}"} for n in range(3)]
    )
    at(workspace, NOW - timedelta(hours=2))
    make_checkpoint(workspace, "t2", state={"n": 3})
    Job.objects.create(workspace=workspace, kind=Job.Kind.SUMMARIZE, params={})
    at(workspace, NOW - timedelta(days=1))
    make_checkpoint(workspace, "t3", state={"n": 4})
    at(workspace, NOW - timedelta(days=40))
    make_checkpoint(workspace, "t1", state={"n": 5})


def drawn(html: str, chart_id: str, kind: str = "rect") -> dict[tuple[str, str], int]:
    """(series, label) → value of every bar (or point) of one chart."""
    svg = html.split(f'id="{chart_id}"', 1)[1].split("</svg>", 1)[0]
    found = re.findall(
        rf'<{kind} class="[^"]*" data-series="(\w+)" data-label="([^"]+)" data-value="(\d+)"', svg
    )
    return {(series, label): int(value) for series, label, value in found}


def test_it_charts_activity_per_hour_over_the_last_48_hours(dash: Client, workspace: Workspace) -> None:
    seed(workspace)
    html = dash.get(reverse("dashboard:overview", args=[workspace.slug])).content.decode()
    assert drawn(html, "activity-chart") == {
        ("checkpoints", "11-20 08:00"): 2,
        ("messages", "11-20 08:00"): 3,
        ("checkpoints", "11-19 10:00"): 1,
        ("jobs", "11-19 10:00"): 1,
        ("checkpoints", "11-20 10:00"): 1,
    }
    assert "Activity — last 48 hours, per hour (UTC)" in html
    assert "Bars per hour: 4 checkpoints, 3 messages, 1 jobs created in this window." in html
    # The x axis starts 47 hours before the current hour and labels every sixth hour.
    assert re.findall(r'chart-xtick" x="[\d.]+" y="\d+" text-anchor="middle">([^<]+)<', html)[:2] == [
        "11-18 11:00",
        "11-18 17:00",
    ]


def test_it_charts_activity_per_day_over_30_days_when_asked(dash: Client, workspace: Workspace) -> None:
    seed(workspace)
    url = reverse("dashboard:overview", args=[workspace.slug])
    html = dash.get(url, {"window": "30d"}).content.decode()
    assert drawn(html, "activity-chart") == {
        ("checkpoints", "2026-11-20"): 3,
        ("messages", "2026-11-20"): 3,
        ("checkpoints", "2026-11-19"): 1,
        ("jobs", "2026-11-19"): 1,
    }
    assert '<option value="30d" selected>' in html


def test_it_charts_bytes_written_and_erased_per_day_and_the_bytes_held_at_each_days_end(
    dash: Client, workspace: Workspace
) -> None:
    seed(workspace)
    # The 40-day-old checkpoint expired three days ago, one of two hours ago an hour ago (as the sweep
    # leaves them: tombstones that keep their size).
    old = Checkpoint.objects.get(workspace=workspace, thread__thread_id="t3")
    Checkpoint.objects.filter(pk=old.pk).update(expired_at=NOW - timedelta(days=3), state=None)
    recent = Checkpoint.objects.filter(workspace=workspace, created_at=NOW - timedelta(hours=2)).first()
    assert recent is not None
    Checkpoint.objects.filter(pk=recent.pk).update(expired_at=NOW - timedelta(hours=1), state=None)
    rows = list(
        Checkpoint.objects.filter(workspace=workspace).values_list("created_at", "expired_at", "size_bytes")
    )
    assert all(size > 0 for _, _, size in rows)

    def day(when: datetime) -> str:
        return when.strftime("%Y-%m-%d")

    written: dict[str, int] = {}
    erased: dict[str, int] = {}
    for created, expired, size in rows:
        if created >= NOW - timedelta(days=29, hours=10, minutes=30, seconds=15):
            written[day(created)] = written.get(day(created), 0) + size
        if expired is not None:
            erased[day(expired)] = erased.get(day(expired), 0) + size

    def held_at_end_of(label: str) -> int:
        end = datetime.fromisoformat(label).replace(tzinfo=UTC) + timedelta(days=1)
        return sum(
            size for created, expired, size in rows if created < end and (expired is None or expired >= end)
        )

    html = dash.get(reverse("dashboard:overview", args=[workspace.slug])).content.decode()
    bars = drawn(html, "storage-chart")
    assert {label: v for (series, label), v in bars.items() if series == "written"} == written
    assert {label: v for (series, label), v in bars.items() if series == "erased"} == erased
    points = drawn(html, "storage-chart", kind="circle")
    assert len(points) == 30
    labels = sorted(label for _, label in points)
    # Every day's end holds exactly what the rows say was live then (the last point is now).
    assert {label: points[("held", label)] for label in labels[:-1]} == {
        label: held_at_end_of(label) for label in labels[:-1]
    }
    live = sum(size for _, expired, size in rows if expired is None)
    assert points[("held", labels[-1])] == live
    assert points[("held", "2026-11-16")] - points[("held", "2026-11-17")] == old.size_bytes  # its erasure


def test_it_draws_empty_charts_for_a_new_workspace(dash: Client, workspace: Workspace) -> None:
    html = dash.get(reverse("dashboard:overview", args=[workspace.slug])).content.decode()
    assert drawn(html, "activity-chart") == {} and html.count("Nothing in this window") == 2
    assert '<title id="activity-chart-title">' in html and '<desc id="storage-chart-desc">' in html


def test_it_refuses_an_unknown_window_with_a_400_and_says_why(dash: Client, workspace: Workspace) -> None:
    response = dash.get(reverse("dashboard:overview", args=[workspace.slug]), {"window": "7y"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "Select a valid choice. 7y is not one of the available choices." in html
    assert 'id="activity-chart"' not in html and "Live checkpoints" in html  # the rest of the page stays


def test_it_leaves_other_workspaces_out_of_the_charts(
    dash: Client, workspace: Workspace, other_workspace: Workspace
) -> None:
    seed(other_workspace)
    make_checkpoint(workspace, "mine", state={"n": 1})
    html = dash.get(reverse("dashboard:overview", args=[workspace.slug])).content.decode()
    assert drawn(html, "activity-chart") == {("checkpoints", "11-20 10:00"): 1}
    assert dash.get(reverse("dashboard:overview", args=[other_workspace.slug])).status_code == 404


def test_it_pins_the_overview_queries_whatever_the_data(
    dash: Client, workspace: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:overview", args=[workspace.slug])
    cache.clear()
    with django_assert_num_queries(OVERVIEW_QUERIES):
        dash.get(url)
    seed(workspace)
    for n in range(20):
        make_checkpoint(workspace, f"many-{n}", state={"n": n})
        audit_record(workspace=workspace, actor=Actor.system(), action="thread.update", agents=[f"a-{n}"])
    for window in ("48h", "30d"):
        cache.clear()
        # + the agents of the recent events, one query for all of them (none without events).
        with django_assert_num_queries(OVERVIEW_QUERIES + 1):
            html = dash.get(url, {"window": window}).content.decode()
        assert sum(v for (s, _), v in drawn(html, "activity-chart").items() if s == "checkpoints") == 24
        assert html.count("data-agent-link>") == 8


def test_it_groups_each_series_in_the_database_over_a_bounded_window(
    dash: Client, workspace: Workspace
) -> None:
    seed(workspace)
    with CaptureQueriesContext(connection) as queries:
        dash.get(reverse("dashboard:overview", args=[workspace.slug]))
    grouped = [q["sql"] for q in queries.captured_queries if "GROUP BY" in q["sql"]]
    tables = sorted(re.search(r'FROM "(checkpoints_\w+)"', sql).group(1) for sql in grouped)  # type: ignore[union-attr]
    assert tables == [
        "checkpoints_checkpoint",  # activity
        "checkpoints_checkpoint",  # storage: written
        "checkpoints_checkpoint",  # storage: erased
        "checkpoints_job",
        "checkpoints_message",
    ]
    assert sum('"created_at" >=' in sql for sql in grouped) == 4
    assert sum('"expired_at" >=' in sql for sql in grouped) == 1


def test_it_draws_the_thread_sparkline_of_checkpoints_per_hour(dash: Client, workspace: Workspace) -> None:
    make_checkpoint(workspace, "young", state={"n": 0})
    Thread.objects.filter(thread_id="young").update(created_at=NOW - timedelta(hours=5))
    at(workspace, NOW - timedelta(hours=5))
    for n in range(3):
        make_checkpoint(workspace, "young", state={"n": n + 1})
    html = dash.get(reverse("dashboard:thread", args=[workspace.slug, "young"])).content.decode()
    svg = html.split('<svg class="sparkline"', 1)[1].split("</svg>", 1)[0]
    bars = re.findall(r'data-label="([^"]+)" data-value="(\d+)"', svg)
    assert bars == [("11-20 05:00", "1"), ("11-20 10:00", "3")]
    assert "<title>Checkpoints per hour</title>" in svg
    # A young thread still gets a day of hours, so its burst reads as one.
    assert "4 checkpoints from 11-19 11:00 to 11-20 10:00 (UTC), at most 3 in one hour." in svg
    assert svg.count("spark-bar") == 2 and 'width="9.0"' in svg  # 240 px / 24 hours, less a 1 px gap


def test_it_draws_an_old_threads_sparkline_per_day(dash: Client, workspace: Workspace) -> None:
    make_checkpoint(workspace, "old", state={"n": 0})
    Thread.objects.filter(thread_id="old").update(created_at=NOW - timedelta(days=100))
    at(workspace, NOW - timedelta(days=100))  # before the sparkline's 60 days: not drawn
    make_checkpoint(workspace, "old", state={"n": 1})
    html = dash.get(reverse("dashboard:thread", args=[workspace.slug, "old"])).content.decode()
    svg = html.split('<svg class="sparkline"', 1)[1].split("</svg>", 1)[0]
    assert re.findall(r'data-label="([^"]+)" data-value="(\d+)"', svg) == [("2026-11-20", "1")]
    assert "from 2026-09-22 to 2026-11-20" in svg
