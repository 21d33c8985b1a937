"""Thread writes: create, update, delete (erasure). Branching (fork, copy, prune) lives in
`thread_branching` and storage accounting in `thread_storage`; both are re-exported here, so every thread
service is found under `checkpoints.services.threads`.

Every write locks the thread row first (`thread_rows.thread_lock`), so a delete cannot race an append into
the thread it erases.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from checkpoints.exceptions import ValidationFailed
from checkpoints.ids import new_id
from checkpoints.models import Checkpoint, Message, PendingWrite, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.thread_branching import PRUNE_STRATEGIES, thread_copy, thread_fork, thread_prune
from checkpoints.services.thread_rows import (
    expires_after,
    normalize_scope,
    normalize_tags,
    thread_audit,
    thread_insert,
    thread_lock,
    thread_touch,
)
from checkpoints.services.thread_storage import thread_storage

__all__ = [
    "PRUNE_STRATEGIES",
    "thread_copy",
    "thread_create",
    "thread_delete",
    "thread_erase",
    "thread_fork",
    "thread_prune",
    "thread_storage",
    "thread_update",
]

UPDATABLE_FIELDS = frozenset({"name", "user_id", "tags", "metadata", "scope", "ttl_seconds", "pinned"})


@transaction.atomic
def thread_create(
    *,
    workspace: Workspace,
    actor: Actor,
    thread_id: str | None = None,
    name: str = "",
    user_id: str = "",
    tags: Iterable[str] = (),
    metadata: dict[str, Any] | None = None,
    scope: dict[str, Any] | None = None,
    ttl_seconds: int | None = None,
    pinned: bool = False,
) -> Thread:
    """Create a thread (thread_id default: a UUIDv7). Conflict if the id exists in the workspace.

    `ttl_seconds` is the idle expiry: the thread expires that long after its last write unless pinned.
    """
    now = timezone.now()
    thread = thread_insert(
        Thread(
            workspace=workspace,
            thread_id=thread_id or new_id(),
            name=name,
            user_id=user_id,
            tags=normalize_tags(tags),
            metadata=metadata or {},
            scope=normalize_scope(scope),
            ttl_seconds=ttl_seconds,
            expires_at=expires_after(ttl_seconds, now),
            pinned=pinned,
            created_at=now,
            updated_at=now,
        )
    )
    thread_audit(
        thread,
        actor=actor,
        action="thread.create",
        details={"user_id": user_id, "ttl_seconds": ttl_seconds, "pinned": pinned},
    )
    return thread


@transaction.atomic
def thread_update(*, thread: Thread, actor: Actor, **changes: Any) -> Thread:
    """Change name, user_id, tags, metadata (replaced whole), scope (replaced whole), ttl_seconds (the idle
    expiry restarts from now) and/or pinned."""
    unknown = sorted(set(changes) - UPDATABLE_FIELDS)
    if unknown:
        raise ValidationFailed(f"Threads have no updatable field {unknown[0]!r}.", {"fields": unknown})
    if changes.get("ttl_seconds") is not None and changes["ttl_seconds"] <= 0:
        raise ValidationFailed("ttl_seconds must be > 0 (or null for no expiry).")
    locked = thread_lock(thread)
    if "tags" in changes:
        changes["tags"] = normalize_tags(changes["tags"])
    if "scope" in changes:
        changes["scope"] = normalize_scope(changes["scope"])
    if "metadata" in changes and changes["metadata"] is None:
        changes["metadata"] = {}
    for field, value in changes.items():
        setattr(locked, field, value)
    if changes:
        locked.save(update_fields=list(changes))
    thread_touch(locked, now=timezone.now())
    thread_audit(
        locked,
        actor=actor,
        action="thread.update",
        details={
            "fields": sorted(changes),
            **{key: changes[key] for key in ("user_id", "ttl_seconds", "pinned") if key in changes},
        },
    )
    return locked


@transaction.atomic
def thread_delete(*, thread: Thread, actor: Actor) -> None:
    """Erase the thread and everything under it: checkpoints (tombstones too), pending writes, messages.

    Medallions summarised from it and threads forked from it keep existing (their source becomes null).
    Only the audit event `thread.delete` remains, with counts and the thread id, never content.
    """
    locked = thread_lock(thread)
    thread_audit(
        locked,
        actor=actor,
        action="thread.delete",
        details=thread_erase(locked),
    )


def thread_erase(thread: Thread) -> dict[str, int]:
    """Delete the thread row and every row under it; return how many of each kind went.

    The one place threads are erased (an API/dashboard delete, idle expiry). The caller holds the row lock
    and writes the audit event. Everything cascades in this one call (no signals: Django deletes in bulk).
    """
    _, deleted = Thread.objects.filter(pk=thread.pk).delete()
    return {
        "checkpoints": deleted.get(Checkpoint._meta.label, 0),
        "pending_writes": deleted.get(PendingWrite._meta.label, 0),
        "messages": deleted.get(Message._meta.label, 0),
    }
