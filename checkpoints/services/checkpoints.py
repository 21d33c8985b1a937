"""Checkpoint writes: save (see checkpoint_save, re-exported here), handoff, expire-now, TTL and pinning,
tombstoning, and LangGraph pending writes.

Every write locks the thread row first, so it is ordered against every other write under the thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef
from django.db.models.functions import Coalesce, Least
from django.utils import timezone

from checkpoints.exceptions import Conflict, Gone, ValidationFailed
from checkpoints.models import Checkpoint, PendingWrite, Thread, Workspace
from checkpoints.models.thread import HeadMoved
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoint_reads import (
    checkpoint_compute_checksum,
    checkpoint_verify,
    ensure_intact,
    ensure_readable,
    pending_writes_for,
)
from checkpoints.services.checkpoint_records import UNSET, Payloads, Unset, encode_document, encode_payloads
from checkpoints.services.checkpoint_save import SaveResult, checkpoint_save, save_context, save_encoded
from checkpoints.services.thread_rows import expires_after, thread_audit, thread_touch
from checkpoints.storage import append_sql
from checkpoints.storage.save_sql import store_parts
from checkpoints.storage.stored_values import writes_packed

__all__ = [
    "UNSET",
    "Payloads",
    "SaveResult",
    "Unset",
    "checkpoint_compute_checksum",
    "checkpoint_expire",
    "checkpoint_handoff",
    "checkpoint_save",
    "checkpoint_set_ttl",
    "checkpoint_verify",
    "checkpoints_tombstone",
    "encode_document",
    "encode_payloads",
    "pending_writes_put",
    "save_encoded",
]


def _lock_readable(checkpoint: Checkpoint, now: datetime) -> tuple[Thread, Checkpoint]:
    """Lock the checkpoint's thread, reload the row, and refuse it (Gone) if it is no longer readable.

    Reloading under the lock is what makes expire/TTL/handoff safe against a concurrent sweep or expire.
    """
    # of=("self",): lock the thread row only, not the workspace row joined in for the audit event.
    thread = (
        Thread.objects.select_for_update(of=("self",))
        .select_related("workspace")
        .get(pk=checkpoint.thread_id)
    )
    current = Checkpoint.objects.get(pk=checkpoint.pk)
    current.thread = thread
    if not current.is_readable(now):
        raise Gone(
            f"Checkpoint {current.checkpoint_id!r} has expired.",
            {"checkpoint_id": current.checkpoint_id, "expired_at": current.effective_expired_at(now)},
        )
    return thread, current


@transaction.atomic
def checkpoint_expire(*, checkpoint: Checkpoint, actor: Actor) -> Checkpoint:
    """Expire a checkpoint now: it becomes a tombstone (ids, parent, checksum and times kept; payload and
    pending writes deleted). Pinned checkpoints must be unpinned first (Conflict); an expired one is Gone."""
    now = timezone.now()
    thread, current = _lock_readable(checkpoint, now)
    if current.pinned:
        raise Conflict("The checkpoint is pinned; unpin it before expiring it.", {"pinned": True})
    checkpoints_tombstone(pks=[current.pk], now=now)
    thread_audit(
        thread,
        checkpoint=current,
        actor=actor,
        action="checkpoint.expire",
        details={"namespace": current.namespace, "checkpoint_id": current.checkpoint_id},
        agents=[current.agent_id],
    )
    current.refresh_from_db()
    current.thread = thread
    return current


def checkpoints_tombstone(*, pks: list[int], now: datetime) -> int:
    """Turn live rows into tombstones in one statement; returns how many changed.

    Safe to race: only rows still without `expired_at` change, so two sweeps never count a row twice.
    `expired_at` is when the row really expired: its passed expires_at, or now. The threads' state_version
    is bumped, so no cached head can outlive its checkpoint. Must run inside a transaction.
    """
    if not pks:
        return 0
    changed = Checkpoint.objects.filter(pk__in=pks, expired_at__isnull=True).update(
        expired_at=Least(Coalesce(F("expires_at"), now), now), state=None, context=None, metadata=None
    )
    if changed:
        thread_pks = set(Checkpoint.objects.filter(pk__in=pks).values_list("thread_id", flat=True))
        same_checkpoint = Checkpoint.objects.filter(
            pk__in=pks,
            thread_id=OuterRef("thread_id"),
            namespace=OuterRef("namespace"),
            checkpoint_id=OuterRef("checkpoint_id"),
        )
        PendingWrite.objects.filter(thread_id__in=thread_pks).filter(Exists(same_checkpoint)).delete()
        Thread.objects.filter(pk__in=thread_pks).update(**HeadMoved.update())
    return changed


@transaction.atomic
def checkpoint_set_ttl(
    *,
    checkpoint: Checkpoint,
    actor: Actor,
    ttl_seconds: int | Unset | None = UNSET,
    pinned: bool | Unset = UNSET,
) -> Checkpoint:
    """Set, extend or clear a live checkpoint's expiry (`ttl_seconds` from now; None = never), and/or pin or
    unpin it. A pinned checkpoint never expires; once unpinned, its expires_at applies again."""
    now = timezone.now()
    thread, current = _lock_readable(checkpoint, now)
    if ttl_seconds is not UNSET:
        current.expires_at = expires_after(ttl_seconds, now)
    if pinned is not UNSET:
        current.pinned = pinned
    Checkpoint.objects.filter(pk=current.pk).update(expires_at=current.expires_at, pinned=current.pinned)
    # Expiry decides which checkpoint is the head, so this moves the head as far as the cache is concerned.
    thread_touch(thread, now=now, head_moved=True)
    thread_audit(
        thread,
        checkpoint=current,
        actor=actor,
        action="checkpoint.ttl",
        details={
            "ttl_seconds": None if ttl_seconds is UNSET else ttl_seconds,
            "pinned": current.pinned,
            "expires_at": current.expires_at.isoformat() if current.expires_at else None,
        },
        agents=[current.agent_id],
    )
    return current


@transaction.atomic
def checkpoint_handoff(
    *,
    source: Checkpoint,
    target_agent_id: str,
    actor: Actor,
    context: Any = UNSET,
    ttl_seconds: int | Unset | None = UNSET,
) -> Checkpoint:
    """Hand a checkpoint to another agent: a child with the same state and metadata, agent_id = target,
    handoff_from = the source agent, handoff_target = the target (the target's inbox lists it), step + 1,
    and the given context (default: the source's).

    The source must be readable (Gone) and intact (ChecksumMismatch): a handoff re-signs the state under a
    new checksum, so handing off an altered row would launder the alteration.
    """
    now = timezone.now()
    thread, current = _lock_readable(source, now)
    ensure_intact(current)
    assert current.state is not None and current.context is not None and current.metadata is not None
    new_context = current.context if context is UNSET else encode_document("context", context)
    result = save_encoded(
        workspace=thread.workspace,
        thread_id=thread.thread_id,
        namespace=current.namespace,
        checkpoint_id=None,
        parent_id=current.checkpoint_id,
        agent_id=target_agent_id,
        framework=current.framework,
        schema_version=current.schema_version,
        step_index=current.step_index + 1,
        step_name=current.step_name,
        run_id=current.run_id,
        payloads=Payloads(state=current.state, context=new_context, metadata=current.metadata),
        ttl_seconds=ttl_seconds,
        handoff_target=target_agent_id,
        handoff_from=current.agent_id,
        written_by=actor.writer,
    )
    handed = result.checkpoint
    thread_audit(
        thread,
        checkpoint=handed,
        actor=actor,
        action="checkpoint.handoff",
        details={
            "from_checkpoint": current.checkpoint_id,
            "from_agent": current.agent_id,
            "to_agent": target_agent_id,
        },
    )
    return handed


def pending_writes_put(
    *,
    workspace: Workspace,
    thread_id: str,
    namespace: str,
    checkpoint_id: str,
    task_id: str,
    task_path: str,
    writes: list[dict[str, Any]],
    user_id: str | None = None,
) -> list[PendingWrite]:
    """Store LangGraph pending writes for a checkpoint that may not exist yet (the thread is created if
    missing); Gone if the checkpoint exists and has expired. Returns what is now stored for the task (a
    retry's ordinary writes do not replace the first ones), in LangGraph's order.

    As in LangGraph's savers: a write with idx >= 0 is kept as first written (a retry is a no-op), a write
    with a negative idx (special channels: error, interrupt, resume, ...) replaces the one stored at the same
    (task_id, idx). `idx` defaults to the write's position in the list. Within one call, the first of
    several writes at one ordinary idx and the last at one special idx win.

    On PostgreSQL outside a transaction the writes are one round trip (append_sql.pending_writes_put). Where
    that writes nothing (no such thread yet, another user's, an expired checkpoint), and on SQLite, they are
    written in a transaction that locks the thread first, which creates it or refuses in the API's words.
    """
    task = {
        "namespace": namespace,
        "checkpoint_id": checkpoint_id,
        "task_id": task_id,
        "task_path": task_path,
        "writes": writes,
    }
    rows = pending_writes_rows([task], timezone.now(), where="")
    stored = pending_writes_put_at_once(rows, workspace=workspace, thread_id=thread_id, user_id=user_id)
    if stored:
        return _in_langgraph_order(stored)
    with transaction.atomic():
        return _pending_writes_put_locked(rows, workspace=workspace, thread_id=thread_id, user_id=user_id)


def pending_writes_put_at_once(
    rows: list[PendingWrite], *, workspace: Workspace, thread_id: str, user_id: str | None
) -> list[PendingWrite]:
    """The rows of one or more tasks (`pending_writes_rows`) stored in one round trip, where that can be
    (PostgreSQL, outside a transaction): what is now stored for those tasks. Empty where it wrote nothing
    (no such thread yet, another user's, an expired checkpoint) or cannot: the caller then stores each task
    with `pending_writes_put`, which creates the thread or refuses in the API's words."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return []
    return append_sql.pending_writes_put(rows, workspace=workspace.pk, thread_id=thread_id, user_id=user_id)


def pending_writes_rows(
    tasks: Sequence[Mapping[str, Any]], now: datetime, *, where: str
) -> list[PendingWrite]:
    """The rows tasks' writes store (their thread set by whoever stores them): each task's `namespace`,
    `checkpoint_id`, `task_id`, `task_path` and `writes`, in order. As if each task were stored in turn: of
    several writes at one ordinary idx of a task the first wins, at one special idx the last. `where` names
    the tasks in errors, formatted with each task's position ("" for one task; "tasks[{}]." in a batch).
    `namespace` and `task_path` may be left out (the root namespace; no path)."""
    by_key: dict[tuple[str, str, str, int], PendingWrite] = {}
    for number, task in enumerate(tasks):
        task_where = where.format(number)
        if not task["writes"]:
            raise ValidationFailed(f"{task_where}writes: give at least one write.")
        for position, write in enumerate(task["writes"]):
            idx = write["idx"] if write.get("idx") is not None else position
            namespace = task.get("namespace", "")
            key = (namespace, task["checkpoint_id"], task["task_id"], idx)
            if idx >= 0 and key in by_key:
                continue
            by_key[key] = PendingWrite(
                namespace=namespace,
                checkpoint_id=task["checkpoint_id"],
                task_id=task["task_id"],
                task_path=task.get("task_path", ""),
                idx=idx,
                channel=write["channel"],
                type=write.get("type") or "",
                value=encode_document(f"{task_where}writes[{position}].value", write["value"]),
                created_at=now,
            )
    return list(by_key.values())


def _in_langgraph_order(writes: list[PendingWrite]) -> list[PendingWrite]:
    return sorted(writes, key=lambda w: (w.task_path, w.task_id, w.idx))


def _pending_writes_put_locked(
    rows: list[PendingWrite], *, workspace: Workspace, thread_id: str, user_id: str | None
) -> list[PendingWrite]:
    first = rows[0]
    now = first.created_at
    context = save_context(
        workspace=workspace,
        thread_id=thread_id,
        namespace=first.namespace,
        now=now,
        user_id=user_id,
        want_head=False,
        parent_id=None,
        checkpoint_id=first.checkpoint_id,
    )
    thread = context.thread
    if context.existing_pk is not None and not context.existing_live:
        ensure_readable(Checkpoint.objects.get(pk=context.existing_pk), now)  # Gone, with its expiry
    if connection.vendor == "postgresql":
        stored = append_sql.pending_writes_put(
            rows, workspace=workspace.pk, thread_id=thread_id, user_id=user_id
        )
        return _in_langgraph_order(stored)
    for row in rows:
        row.thread = thread
    special = [row for row in rows if row.idx < 0]
    ordinary = [row for row in rows if row.idx >= 0]
    with writes_packed(rows, workspace_id=workspace.pk, now=now) as parts:
        store_parts(parts)
        if special:
            PendingWrite.objects.bulk_create(
                special,
                update_conflicts=True,
                unique_fields=["thread", "namespace", "checkpoint_id", "task_id", "idx"],
                update_fields=["channel", "type", "value", "size_bytes", "task_path", "created_at"],
            )
        if ordinary:
            PendingWrite.objects.bulk_create(ordinary, ignore_conflicts=True)
    thread_touch(thread, now=now)
    return pending_writes_for(
        thread=thread,
        namespace=first.namespace,
        checkpoint_id=first.checkpoint_id,
        task_id=first.task_id,
        parts=parts.texts,
    )
