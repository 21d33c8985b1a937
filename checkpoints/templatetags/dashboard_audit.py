"""Filters of the audit log and job pages: where an event's target lives, and documents shown in full."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django import template
from django.urls import NoReverseMatch, reverse

from checkpoints.models import AuditEvent

register = template.Library()

# Actions after which their target no longer exists: nothing to link to.
TARGET_GONE = {"thread.delete", "thread.expire", "medallion.delete"}


def _thread_and_rest(target_id: str) -> tuple[str, str]:
    """Split "thread/rest": thread ids never hold a "/" (client ids), so the first one separates them."""
    thread_id, _, rest = target_id.partition("/")
    return thread_id, rest


def _target_url(event: AuditEvent, slug: str) -> str:
    kind, target = event.target_type, event.target_id
    if kind == "thread":
        return reverse("dashboard:thread", args=[slug, target])
    if kind == "checkpoint":
        thread_id, rest = _thread_and_rest(target)
        namespace, _, checkpoint_id = rest.rpartition("/")
        url = reverse("dashboard:checkpoint", args=[slug, thread_id, checkpoint_id])
        return f"{url}?{urlencode({'ns': namespace})}"
    if kind == "message":
        thread_id, _ = _thread_and_rest(target)
        return reverse("dashboard:thread", args=[slug, thread_id]) + "#messages"
    if kind == "annotation":  # its thread's findings (the id alone names no page)
        return reverse("dashboard:thread", args=[slug, event.details.get("thread_id", "")]) + "#findings"
    if kind == "medallion":
        return reverse("dashboard:medallion", args=[slug, target])
    if kind == "api_key":
        return reverse("dashboard:keys", args=[slug])
    if kind == "workspace":
        page = "dashboard:retention" if event.action.startswith("retention.") else "dashboard:overview"
        return reverse(page, args=[slug])
    return ""


@register.filter
def audit_target_url(event: AuditEvent, slug: str) -> str:
    """The dashboard page of the event's target, or "" when it has none (or no longer exists)."""
    if event.action in TARGET_GONE or not event.target_id:
        return ""
    try:
        return _target_url(event, slug)
    except NoReverseMatch:  # an id the URL patterns cannot carry (written by an older version, say)
        return ""


@register.filter
def pretty_json(value: Any) -> str:
    """`value` as indented JSON text, whole (the template escapes it)."""
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)
