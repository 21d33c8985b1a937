"""What the overview's charts and the thread page's sparkline count: rows per hour or per day of a bounded
window, grouped in the database (one GROUP BY query per series, over the (workspace, created_at) indexes,
and (workspace, expired_at) for the bytes erased).

Buckets are UTC hours or days; a bucket with no row is a zero, so every series has one value per label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import TruncDay, TruncHour
from django.utils.safestring import SafeString

from checkpoints.dashboard.charts import Series, bar_chart, compact_bytes, sparkline
from checkpoints.models import Checkpoint, Job, Message, Thread, Workspace

STORAGE_DAYS = 30
SPARKLINE_MAX_BUCKETS = 60
SPARKLINE_MIN_HOURS = 24


@dataclass(frozen=True)
class Window:
    """`count` buckets of one `unit` ("hour" or "day") ending with the one holding `now`."""

    key: str
    label: str
    unit: str
    count: int

    @property
    def step(self) -> timedelta:
        return timedelta(hours=1) if self.unit == "hour" else timedelta(days=1)

    def first_bucket(self, now: datetime) -> datetime:
        current = now.replace(minute=0, second=0, microsecond=0)
        if self.unit == "day":
            current = current.replace(hour=0)
        return current - self.step * (self.count - 1)

    def buckets(self, now: datetime) -> list[datetime]:
        first = self.first_bucket(now)
        return [first + self.step * index for index in range(self.count)]

    def labels(self, now: datetime) -> list[str]:
        shape = "%m-%d %H:00" if self.unit == "hour" else "%Y-%m-%d"
        return [bucket.strftime(shape) for bucket in self.buckets(now)]


WINDOWS = {
    "48h": Window("48h", "Last 48 hours, per hour", "hour", 48),
    "30d": Window("30d", "Last 30 days, per day", "day", 30),
}
DEFAULT_WINDOW = "48h"


def bucket_rows(
    queryset: QuerySet[Any], window: Window, now: datetime, value: Any = None, *, when: str = "created_at"
) -> QuerySet[Any]:
    """The GROUP BY over the window: (bucket, `value`) rows by the time in field `when`, `value` being a
    count of rows by default."""
    trunc = TruncHour if window.unit == "hour" else TruncDay
    return (
        queryset.filter(**{f"{when}__gte": window.first_bucket(now)})
        .order_by()
        .annotate(bucket=trunc(when))
        .values("bucket")
        .annotate(value=value if value is not None else Count("pk"))
        .values_list("bucket", "value")
    )


def per_bucket(
    queryset: QuerySet[Any], window: Window, now: datetime, value: Any = None, *, when: str = "created_at"
) -> list[int]:
    """One value per bucket of the window, from one query; zeros where no row fell."""
    rows = bucket_rows(queryset, window, now, value, when=when)
    found = {bucket: int(total or 0) for bucket, total in rows}
    return [found.get(bucket, 0) for bucket in window.buckets(now)]


def activity_chart(workspace: Workspace, window: Window, now: datetime) -> SafeString:
    """Checkpoints, messages and jobs created per bucket of `window` (three queries)."""
    series = [
        Series(
            "checkpoints",
            "Checkpoints",
            per_bucket(Checkpoint.objects.for_workspace(workspace), window, now),
        ),
        Series("messages", "Messages", per_bucket(Message.objects.for_workspace(workspace), window, now)),
        Series("jobs", "Jobs", per_bucket(Job.objects.for_workspace(workspace), window, now)),
    ]
    totals = ", ".join(f"{one.total} {one.name.lower()}" for one in series)
    return window_bars(window, now, "activity-chart", "Activity", f"{totals} created in this window.", series)


def window_bars(
    window: Window, now: datetime, chart_id: str, what: str, counted: str, series: Sequence[Series]
) -> SafeString:
    """A bar chart over `window`, a group of bars per bucket: titled "<what> — <window> (UTC)" and described
    as "Bars per <unit>: <counted>" (the overview's activity chart, the agent page's two charts)."""
    return bar_chart(
        chart_id=chart_id,
        title=f"{what} — {window.label.lower()} (UTC)",
        desc=f"Bars per {window.unit}: {counted}",
        labels=window.labels(now),
        series=series,
    )


def storage_chart(workspace: Workspace, now: datetime, held_now: int) -> SafeString:
    """Checkpoint state over the last STORAGE_DAYS days: the bytes held at the end of each day (the line) and
    the bytes written and erased each day (the bars; one query each, by `created_at` and by `expired_at`).
    The line is walked back from `held_now`, the live payload total the overview shows. Logical bytes, the
    documents whole; rows deleted since (purged tombstones, deleted threads) are in none of them."""
    window = Window("storage", f"Last {STORAGE_DAYS} days", "day", STORAGE_DAYS)
    checkpoints = Checkpoint.objects.for_workspace(workspace)
    written = per_bucket(checkpoints, window, now, Sum("size_bytes"))
    erased = per_bucket(checkpoints.tombstones(), window, now, Sum("size_bytes"), when="expired_at")
    held = held_at_each_end(held_now, written, erased)
    return bar_chart(
        chart_id="storage-chart",
        title=f"Checkpoint state held, written and erased (logical bytes) — last {STORAGE_DAYS} days (UTC)",
        desc=(
            f"Line: bytes of checkpoint state held at the end of each day, {compact_bytes(held[-1])} now; "
            f"bars: bytes written and bytes erased (expired) per day, {compact_bytes(sum(written))} and "
            f"{compact_bytes(sum(erased))} in all. Documents count whole (large ones are stored packed, in "
            "fewer bytes); rows deleted since are not counted."
        ),
        labels=window.labels(now),
        series=[Series("written", "Written", written), Series("erased", "Erased", erased)],
        line=Series("held", "Held at the day's end", held, level=True),
        fmt=compact_bytes,
    )


def held_at_each_end(held_now: int, written: Sequence[int], erased: Sequence[int]) -> list[int]:
    """Bytes held at the end of each bucket, from the last one (now) back: a bucket's end held what the next
    one's end held, less what the next bucket wrote, plus what it erased (never below zero: `held_now` may
    lag the rows by the storage totals' cache)."""
    held = [held_now]
    for wrote, gone in zip(reversed(written[1:]), reversed(erased[1:]), strict=True):
        held.append(max(0, held[-1] - wrote + gone))
    return held[::-1]


def thread_window(thread: Thread, now: datetime) -> Window:
    """Per hour for a thread younger than two days (at least SPARKLINE_MIN_HOURS of them, so a burst reads
    as a burst), else per day; at most SPARKLINE_MAX_BUCKETS buckets."""
    age = max(timedelta(0), now - thread.created_at)
    if age <= timedelta(hours=48):
        hours = max(SPARKLINE_MIN_HOURS, int(age / timedelta(hours=1)) + 1)
        return Window("life", "per hour", "hour", hours)
    return Window("life", "per day", "day", min(SPARKLINE_MAX_BUCKETS, age.days + 1))


def thread_sparkline(thread: Thread, now: datetime) -> SafeString:
    """The thread's checkpoints per hour or day over its life (one query, over the thread's index)."""
    window = thread_window(thread, now)
    values: Sequence[int] = per_bucket(Checkpoint.objects.filter(thread=thread), window, now)
    labels = window.labels(now)
    return sparkline(
        values=values,
        labels=labels,
        title=f"Checkpoints {window.label}",
        desc=(
            f"{sum(values)} checkpoints from {labels[0]} to {labels[-1]} (UTC), "
            f"at most {max(values)} in one {window.unit}."
        ),
    )
