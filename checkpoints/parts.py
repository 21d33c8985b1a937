"""Switches for the performance parts, so `manage.py bench --ab` can measure each against the plain path it
replaces (docs/architecture.md, "The rent of each part"). `CAIRN_DISABLED_PARTS` names the parts turned
off; it is for the benchmark's A/B runs only, and every part stays on by default.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Each part, and the plain path it falls back to when disabled.
PARTS = {
    "thread_memo": "a save or append reads its thread first (no per-process memo of the last write)",
    "api_key_cache": "every request loads its key from the database (no per-process key memory)",
    "head_cache": "GET state/ reads the head from the database (no cached head)",
    "sent_parts": "a save sends every part of its documents (no memory of parts sent lately)",
    "prepared_statements": "the static statements on Django's own cursor (bound client-side, never prepared)",
    "quiet_health_check": "Django's own health check: SELECT 1 before each request's first query",
    "compiled_validation": "the hot write bodies validated by their serializers alone (no compiled check)",
}


def disabled_parts(text: str) -> frozenset[str]:
    """The parts a `CAIRN_DISABLED_PARTS` value names (ImproperlyConfigured for an unknown one)."""
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    unknown = sorted(names - PARTS.keys())
    if unknown:
        raise ImproperlyConfigured(
            f"CAIRN_DISABLED_PARTS names unknown parts {', '.join(unknown)}; known: {', '.join(PARTS)}"
        )
    return names


def enabled(part: str) -> bool:
    """Whether `part` is on (it is unless CAIRN_DISABLED_PARTS names it)."""
    return part not in settings.CAIRN_DISABLED_PARTS
