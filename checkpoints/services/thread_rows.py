"""Thread rows as every thread write needs them: normalised fields, insert-or-409, lock-or-404."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction

from checkpoints.exceptions import Conflict, NotFound, ValidationFailed
from checkpoints.models import Thread
from checkpoints.models.thread import CLIENT_ID_PATTERN

_CLIENT_ID = re.compile(rf"{CLIENT_ID_PATTERN}\Z")


def normalize_tags(tags: Iterable[str]) -> list[str]:
    """Stripped, without empties and duplicates, in the order given."""
    return list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


def normalize_scope(scope: dict[str, Any] | None) -> dict[str, list[str]]:
    """A medallion scope as medallions store it: graph_nodes and tags stripped, deduplicated, sorted."""
    scope = scope or {}
    return {
        key: sorted({item.strip() for item in scope.get(key) or () if item.strip()})
        for key in ("graph_nodes", "tags")
    }


def idle_expires_at(ttl_seconds: int | None, now: datetime) -> datetime | None:
    """When a thread idle since `now` expires (None: it does not). thread_touch applies the same rule."""
    return now + timedelta(seconds=ttl_seconds) if ttl_seconds else None


def thread_insert(thread: Thread) -> Thread:
    """Insert a new thread row; Conflict if its thread_id is taken in the workspace (settled by the unique
    constraint, so two racing creators get one 201 and one 409)."""
    if not _CLIENT_ID.match(thread.thread_id):
        raise ValidationFailed(
            "thread_id must be 1-128 characters from A-Z a-z 0-9 . _ : -", {"thread_id": thread.thread_id}
        )
    if thread.ttl_seconds is not None and thread.ttl_seconds <= 0:
        raise ValidationFailed("ttl_seconds must be > 0 (or null for no expiry).")
    try:
        with transaction.atomic():
            thread.save(force_insert=True)
    except IntegrityError as exc:
        raise Conflict(
            f"Thread {thread.thread_id!r} already exists.", {"thread_id": thread.thread_id}
        ) from exc
    return thread


def thread_lock(thread: Thread) -> Thread:
    """Reload the thread locked for this transaction (the row only); NotFound if it was deleted meanwhile."""
    locked = (
        Thread.objects.select_for_update(of=("self",))
        .select_related("workspace")
        .filter(pk=thread.pk)
        .first()
    )
    if locked is None:
        raise NotFound(f"Thread {thread.thread_id!r} not found.")
    return locked
