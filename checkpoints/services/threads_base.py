"""Thread plumbing every writer shares: find-or-create under a row lock, and touching on write."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import F
from django.utils import timezone

from checkpoints.exceptions import NotFound
from checkpoints.models import Thread, Workspace


def thread_lock_or_create(
    *,
    workspace: Workspace,
    thread_id: str,
    now: datetime | None = None,
    user_id: str | None = None,
) -> Thread:
    """The thread row, locked for this transaction (SELECT ... FOR UPDATE), created if missing.

    Every write under a thread takes this lock first, which serialises head moves and message seqs per
    thread. A concurrent creator is settled by the unique constraint (INSERT ... ON CONFLICT DO NOTHING).
    `user_id`, when given, scopes the write to that end user: a thread this call creates gets it, and
    another user's thread is NotFound, as if it did not exist (one user never writes into another's).
    Must run inside transaction.atomic().
    """
    locked = Thread.objects.select_for_update()
    thread = locked.filter(workspace=workspace, thread_id=thread_id).first()
    if thread is None:
        thread_create(workspace=workspace, thread_id=thread_id, now=now, user_id=user_id)
        thread = locked.get(workspace=workspace, thread_id=thread_id)
    if user_id is not None and thread.user_id != user_id:
        raise NotFound(f"Thread {thread_id!r} not found.")
    return thread


def thread_create(
    *, workspace: Workspace, thread_id: str, now: datetime | None = None, user_id: str | None = None
) -> None:
    """Insert the thread unless it exists (a concurrent creator wins quietly: ON CONFLICT DO NOTHING).
    The caller locks it next."""
    now = now or timezone.now()
    thread = Thread(
        workspace=workspace, thread_id=thread_id, created_at=now, updated_at=now, user_id=user_id or ""
    )
    Thread.objects.bulk_create([thread], ignore_conflicts=True)


def thread_touch_values(thread: Thread, *, now: datetime, head_moved: bool = False) -> dict[str, Any]:
    """What a write under the thread changes: updated_at, idle expiry, and (if the head may have moved)
    the state_version the head cache keys on. Set on `thread`; returned as the fields to update."""
    thread.updated_at = now
    thread.expires_at = now + timedelta(seconds=thread.ttl_seconds) if thread.ttl_seconds else None
    fields: dict[str, Any] = {"updated_at": now, "expires_at": thread.expires_at}
    if head_moved:
        fields["state_version"] = F("state_version") + 1
        thread.state_version += 1
    return fields


def thread_touch(thread: Thread, *, now: datetime, head_moved: bool = False) -> None:
    """Record a write under the thread (thread_touch_values). The thread must be locked by the caller."""
    Thread.objects.filter(pk=thread.pk).update(**thread_touch_values(thread, now=now, head_moved=head_moved))
