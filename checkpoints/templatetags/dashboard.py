"""Filters the dashboard's templates use: compact JSON for small documents (audit details, job results)."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def compact_json(value: Any, limit: int = 400) -> str:
    """`value` as compact JSON text, cut at `limit` characters (the template escapes it)."""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


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
