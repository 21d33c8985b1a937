"""Filters the dashboard's templates use: compact JSON for small documents (audit details, job results),
durations, ids and timestamps."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def compact_json(value: Any, limit: int = 400) -> str:
    """`value` as compact JSON text, cut at `limit` characters (the template escapes it)."""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


@register.filter
def json_fields(value: Any, limit: int = 240) -> list[tuple[str, Any]]:
    """A job's result (or any JSON) as (field, shown value) rows for a definition list: an object's keys in
    alphabetical order (PostgreSQL's jsonb keeps none), scalars as they are, lists and objects as compact JSON
    cut at `limit`; anything else one row."""
    if not isinstance(value, dict):
        return [("value", compact_json(value, limit))]
    return [
        (str(key), compact_json(item, limit) if isinstance(item, dict | list) else item)
        for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))
    ]


@register.filter
def duration(seconds: int | None) -> str:
    """A number of seconds for people: "30 days", "2 h 5 min", "45 s"."""
    if seconds is None:
        return ""
    days, rest = divmod(int(seconds), 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{days} day{'s' if days != 1 else ''}" if days else "",
        f"{hours} h" if hours else "",
        f"{minutes} min" if minutes else "",
        f"{secs} s" if secs else "",
    ]
    return " ".join(part for part in parts if part)[:40] or "0 s"


# A UUID (the ids the server generates are UUIDv7): its distinguishing part is the random tail, since ids
# made in the same minutes share their timestamp prefix.
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-([0-9a-f]{12})$", re.IGNORECASE)


@register.filter
def short_id(value: Any) -> str:
    """An id as the dashboard shows it: a UUID as its last 12 hex digits after an ellipsis, anything else
    (client-chosen ids such as "run-1") whole. The full id is the `title` (hover) and stays in the text,
    visually hidden, so selecting and copying the id copies all of it."""
    if value is None or value == "":
        return ""
    full = str(value)
    match = _UUID.match(full)
    if match is None:
        return format_html('<code class="sid" title="{}">{}</code>', full, full)
    tail = match.group(1)
    return format_html(
        '<code class="sid" title="{}"><span class="sid-head">{}</span>'
        '<span class="sid-tail">{}</span></code>',
        full,
        full[: -len(tail)],
        tail,
    )


@register.filter
def stamp(value: datetime | None) -> str:
    """Every timestamp of the dashboard in one format: "2026-11-23 13:46:05 UTC" (date, year, seconds), in a
    <time> element holding the exact ISO 8601 instant. None gives "" (so `|default:"never"` applies)."""
    if value is None or value == "":
        return ""
    utc = value.astimezone(UTC)
    return format_html(
        '<time datetime="{}">{}</time>', utc.isoformat(), utc.strftime("%Y-%m-%d %H:%M:%S UTC")
    )


@register.filter
def writer_label(writer: str, names: dict[str, str] | None) -> str:
    """A writer for people: its API key's name (checkpoints.dashboard.writers), else as stored."""
    return (names or {}).get(writer, writer)
