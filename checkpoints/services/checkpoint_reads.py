"""Checkpoint reads that raise domain errors: lookups by public id, head, lineage, diff."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import jsonpatch
from django.db import connection
from django.utils import timezone

from checkpoints.exceptions import AmbiguousId, Gone, NotFound
from checkpoints.models import Checkpoint, PendingWrite, Thread, Workspace


def thread_get(*, workspace: Workspace, thread_id: str) -> Thread:
    """The workspace's thread with this public id; another workspace's thread is NotFound, as if missing."""
    thread = Thread.objects.for_workspace(workspace).filter(thread_id=thread_id).first()
    if thread is None:
        raise NotFound(f"Thread {thread_id!r} not found.")
    return thread


def checkpoint_head(*, thread: Thread, namespace: str, now: datetime | None = None) -> Checkpoint | None:
    """The newest readable checkpoint of the namespace (index `checkpoint_head`, no scan)."""
    return Checkpoint.objects.filter(thread=thread, namespace=namespace).live(now).newest_first().first()


def _pick_one(candidates: list[Checkpoint], what: str) -> Checkpoint:
    if not candidates:
        raise NotFound(f"Checkpoint {what} not found.")
    if len(candidates) > 1:
        raise AmbiguousId(
            f"Checkpoint {what} exists in several places; name the thread and namespace.",
            {"candidates": [{"thread_id": c.thread.thread_id, "namespace": c.namespace} for c in candidates]},
        )
    return candidates[0]


def checkpoint_get(
    *, workspace: Workspace, thread_id: str, checkpoint_id: str, namespace: str | None = None
) -> Checkpoint:
    """A checkpoint of a thread by public id. Without a namespace the id must be unique in the thread."""
    queryset = Checkpoint.objects.select_related("thread").filter(
        workspace=workspace, thread__thread_id=thread_id, checkpoint_id=checkpoint_id
    )
    if namespace is not None:
        queryset = queryset.filter(namespace=namespace)
    return _pick_one(list(queryset[:10]), repr(checkpoint_id))


def checkpoint_get_by_id(*, workspace: Workspace, checkpoint_id: str) -> Checkpoint:
    """A checkpoint by id alone, across the workspace; AmbiguousId when copies exist in several threads."""
    queryset = Checkpoint.objects.select_related("thread").filter(
        workspace=workspace, checkpoint_id=checkpoint_id
    )
    return _pick_one(list(queryset.order_by("id")[:10]), repr(checkpoint_id))


def ensure_readable(checkpoint: Checkpoint, now: datetime | None = None) -> None:
    """Gone (410) if the checkpoint is a tombstone or its expiry has passed (swept or not)."""
    now = now or timezone.now()
    if not checkpoint.is_readable(now):
        raise Gone(
            f"Checkpoint {checkpoint.checkpoint_id!r} has expired.",
            {"checkpoint_id": checkpoint.checkpoint_id, "expired_at": checkpoint.effective_expired_at(now)},
        )


def checkpoint_lineage(*, checkpoint: Checkpoint, limit: int) -> tuple[list[Checkpoint], bool]:
    """Ancestors up to the root, nearest first, tombstones included; and whether more lie beyond `limit`.

    One recursive query walks the parent ids (indexed by the unique (thread, namespace, checkpoint_id)),
    a second loads the rows without their payloads.
    """
    table = Checkpoint._meta.db_table
    sql = f"""
        WITH RECURSIVE chain(id, parent_checkpoint_id, depth) AS (
            SELECT c.id, c.parent_checkpoint_id, 0 FROM {table} c WHERE c.id = %s
            UNION ALL
            SELECT p.id, p.parent_checkpoint_id, chain.depth + 1
            FROM {table} p JOIN chain ON p.checkpoint_id = chain.parent_checkpoint_id
            WHERE p.thread_id = %s AND p.namespace = %s AND chain.depth <= %s
        )
        SELECT id FROM chain WHERE depth > 0 ORDER BY depth
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [checkpoint.pk, checkpoint.thread_id, checkpoint.namespace, limit])
        pks = [row[0] for row in cursor.fetchall()]
    has_more = len(pks) > limit
    pks = pks[:limit]
    rows = Checkpoint.objects.select_related("thread").without_payload().in_bulk(pks)
    return [rows[pk] for pk in pks], has_more


def _document(checkpoint: Checkpoint) -> dict[str, Any]:
    ensure_readable(checkpoint)
    return {name: checkpoint.decoded(name) for name in ("state", "context", "metadata")}


def checkpoint_diff(*, checkpoint: Checkpoint, against: Checkpoint | None) -> list[dict[str, Any]]:
    """RFC 6902 JSON Patch turning `against` (or an empty document) into `checkpoint`, over
    {state, context, metadata}."""
    source = _document(against) if against is not None else {}
    return list(jsonpatch.make_patch(source, _document(checkpoint)).patch)


def pending_writes_for(*, thread: Thread, namespace: str, checkpoint_id: str) -> list[PendingWrite]:
    """A checkpoint's pending writes in LangGraph's order (task_path, task_id, idx)."""
    return list(
        PendingWrite.objects.filter(thread=thread, namespace=namespace, checkpoint_id=checkpoint_id).order_by(
            "task_path", "task_id", "idx"
        )
    )
