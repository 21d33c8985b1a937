"""Thread rows as every thread write needs them: normalised fields, insert (or 409, or quietly if missing),
the row lock, and touching the row on write with its idle expiry.

Writes under a thread lock the thread row first, through `thread_lock` or `thread_lock_or_create` (the hot
save path has its own SQL: docs/architecture.md, "One save"). That serialises head moves and message seqs
per thread, and keeps a delete or a sweep from racing a write into the thread it removes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from checkpoints.exceptions import Conflict, NotFound, ValidationFailed
from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.models.thread import CLIENT_ID_PATTERN, HeadMoved
from checkpoints.services.audit import Actor, audit_record

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


def expires_after(ttl_seconds: int | None, now: datetime) -> datetime | None:
    """The TTL rule: `ttl_seconds` after `now`; None or 0 = never. A thread's clock restarts at each write
    (idle expiry: the retention sweep selects by the same rule, `updated_at <= now - ttl`); a checkpoint's
    starts at its save or its TTL change."""
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


def thread_insert_if_missing(
    *, workspace: Workspace, thread_id: str, now: datetime | None = None, user_id: str | None = None
) -> None:
    """Insert the thread unless it exists (a concurrent creator wins quietly: ON CONFLICT DO NOTHING).
    The caller locks it next."""
    now = now or timezone.now()
    thread = Thread(
        workspace=workspace, thread_id=thread_id, created_at=now, updated_at=now, user_id=user_id or ""
    )
    Thread.objects.bulk_create([thread], ignore_conflicts=True)


def thread_lock(thread: Thread | int, *, missing: str | None = None) -> Thread:
    """Reload the thread (or the thread of this primary key) locked for this transaction: the row only, its
    workspace joined. NotFound (`missing`, or "Thread ... not found.") if it was deleted meanwhile."""
    pk = thread if isinstance(thread, int) else thread.pk
    locked = Thread.objects.select_for_update(of=("self",)).select_related("workspace").filter(pk=pk).first()
    if locked is None:
        thread_id = "" if isinstance(thread, int) else f" {thread.thread_id!r}"
        raise NotFound(missing or f"Thread{thread_id} not found.")
    return locked


def thread_lock_or_create(
    *,
    workspace: Workspace,
    thread_id: str,
    now: datetime | None = None,
    user_id: str | None = None,
) -> Thread:
    """The thread row, locked for this transaction (SELECT ... FOR UPDATE), created if missing.

    A concurrent creator is settled by the unique constraint (`thread_insert_if_missing`). `user_id`, when
    given, scopes the write to that end user: a thread this call creates gets it, and another user's thread
    is NotFound, as if it did not exist (one user never writes into another's). Must run inside
    transaction.atomic().
    """
    locked = Thread.objects.select_for_update()
    thread = locked.filter(workspace=workspace, thread_id=thread_id).first()
    if thread is None:
        thread_insert_if_missing(workspace=workspace, thread_id=thread_id, now=now, user_id=user_id)
        thread = locked.get(workspace=workspace, thread_id=thread_id)
    if user_id is not None and thread.user_id != user_id:
        raise NotFound(f"Thread {thread_id!r} not found.")
    return thread


def thread_touch_values(thread: Thread, *, now: datetime, head_moved: bool = False) -> dict[str, Any]:
    """What a write under the thread changes: updated_at, idle expiry, and (if the head may have moved)
    the state_version the head cache keys on. Set on `thread`; returned as the fields to update."""
    thread.updated_at = now
    thread.expires_at = expires_after(thread.ttl_seconds, now)
    fields: dict[str, Any] = {"updated_at": now, "expires_at": thread.expires_at}
    if head_moved:
        fields.update(HeadMoved.update())
        HeadMoved.applied(thread)
    return fields


def thread_touch(thread: Thread, *, now: datetime, head_moved: bool = False) -> None:
    """Record a write under the thread (thread_touch_values). The thread must be locked by the caller."""
    Thread.objects.filter(pk=thread.pk).update(**thread_touch_values(thread, now=now, head_moved=head_moved))


def thread_audit(
    thread: Thread,
    *,
    actor: Actor,
    action: str,
    details: dict[str, Any],
    agents: Iterable[str] = (),
    checkpoint: Checkpoint | None = None,
) -> None:
    """Record an audit event whose target is the thread, or `checkpoint` of it (in the thread's workspace)."""
    target = thread.thread_id
    if checkpoint is not None:
        target = f"{thread.thread_id}/{checkpoint.namespace}/{checkpoint.checkpoint_id}"
    audit_record(
        workspace=thread.workspace,
        actor=actor,
        action=action,
        target_type="thread" if checkpoint is None else "checkpoint",
        target_id=target,
        details=details,
        agents=agents,
    )
