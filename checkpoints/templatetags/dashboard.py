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
