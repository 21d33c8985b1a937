"""Checkpoint reads that raise domain errors: lookups by public id, head, timelines, integrity checks,
lineage, diff and pending writes."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import jsonpatch
from django.conf import settings
from django.db import connection
from django.utils import timezone

from checkpoints.exceptions import (
    AmbiguousId,
    ChecksumMismatch,
    DiffTooLarge,
    Gone,
    NotFound,
    ValidationFailed,
)
from checkpoints.integrity import CHECKSUM_FIELDS, PAYLOAD_FIELDS, record_checksum_from_parts
from checkpoints.models import Checkpoint, PendingWrite, Thread, Workspace
from checkpoints.models.checkpoint import model_attribute
from checkpoints.models.value import unpack_writes
from checkpoints.storage import hot_cursor, model_rows, read_sql
from checkpoints.storage.checkpoint_pages import CheckpointPages
from checkpoints.storage.keyset import Seek


def thread_get(*, workspace: Workspace, thread_id: str, user_id: str | None = None) -> Thread:
    """The workspace's thread with this public id; another workspace's thread is NotFound, as if missing.
    With `user_id`, so is another end user's thread."""
    with hot_cursor.cursor() as cursor:
        cursor.execute(read_sql.THREAD_BY_ID, {"workspace": workspace.pk, "thread_id": thread_id})
        row = cursor.fetchone()
    thread = model_rows.load(Thread, row) if row is not None else None
    if thread is None or (user_id is not None and thread.user_id != user_id):
        raise NotFound(f"Thread {thread_id!r} not found.")
    thread.workspace = workspace
    return thread


def checkpoint_head(*, thread: Thread, namespace: str, now: datetime | None = None) -> Checkpoint | None:
    """The newest readable checkpoint of the namespace, with its documents (one statement: a seek on the
    `checkpoint_head` index, no scan). The thread's workspace must be loaded with it (`thread_get`,
    `thread_lock`)."""
    conditions = _timeline_conditions(namespace, include_tombstones=False, now=now)
    head = CheckpointPages(thread.workspace, conditions, payload=True, thread=thread)
    newest = head.read(Seek(["-id"], None, 1))
    return newest[0] if newest else None


def checkpoint_timeline(
    *,
    thread: Thread,
    namespace: str | None,
    include_tombstones: bool = False,
    include_state: bool = False,
    before: str | None = None,
    now: datetime | None = None,
) -> CheckpointPages:
    """A thread's checkpoints for a timeline page (order it newest first: by primary key, descending).

    `namespace` None means every namespace. `before` is a checkpoint_id: only checkpoints created before it
    (in that namespace, or anywhere in the thread if it is unique there). Without tombstones the
    per-namespace page is a seek on the `checkpoint_head` index, the all-namespaces page one on
    `checkpoint_thread_timeline`.
    """
    conditions = _timeline_conditions(namespace, include_tombstones, now)
    if before is not None:
        anchors = Checkpoint.objects.filter(thread=thread, checkpoint_id=before)
        if namespace is not None:
            anchors = anchors.filter(namespace=namespace)
        anchor_pks = list(anchors.values_list("pk", flat=True)[:2])
        if len(anchor_pks) != 1:
            problem = "No such checkpoint." if not anchor_pks else "Ambiguous: give the namespace."
            raise ValidationFailed(f"before: {problem}", {"fields": {"before": [problem]}})
        conditions["below_row"] = anchor_pks[0]
    return CheckpointPages(thread.workspace, conditions, payload=include_state, thread=thread)


def workspace_timeline(
    *,
    workspace: Workspace,
    namespace: str | None = None,
    include_tombstones: bool = False,
    include_state: bool = False,
    now: datetime | None = None,
) -> CheckpointPages:
    """Every checkpoint of the workspace for the workspace-wide timeline (order it newest first: by primary
    key, descending).

    Seeks on `checkpoint_ws_timeline`; filtered by agent on `checkpoint_ws_agent`, by handoff target (an
    agent's inbox) on `checkpoint_ws_inbox`.
    """
    conditions = _timeline_conditions(namespace, include_tombstones, now)
    return CheckpointPages(workspace, conditions, payload=include_state)


def _timeline_conditions(
    namespace: str | None, include_tombstones: bool, now: datetime | None
) -> dict[str, Any]:
    """A timeline's checkpoints: readable now unless tombstones are wanted, in one namespace or in all."""
    conditions: dict[str, Any] = {}
    if not include_tombstones:
        conditions["live"] = now or timezone.now()
    if namespace is not None:
        conditions["namespace"] = namespace
    return conditions


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
    *,
    workspace: Workspace,
    thread_id: str,
    checkpoint_id: str,
    namespace: str | None = None,
    user_id: str | None = None,
) -> Checkpoint:
    """A checkpoint of a thread by public id. Without a namespace the id must be unique in the thread
    (AmbiguousId otherwise). With `user_id`, another end user's thread is NotFound. Tombstones and expired
    checkpoints are returned too: callers decide."""
    sql = read_sql.checkpoint_in_thread_sql(connection.vendor, in_namespace=namespace is not None)
    params = {
        "workspace": workspace.pk,
        "thread_id": thread_id,
        "checkpoint_id": checkpoint_id,
        "namespace": namespace,
    }
    with hot_cursor.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    candidates = sorted(
        (read_sql.load_checkpoint_with_thread(row, workspace) for row in rows), key=lambda c: c.pk
    )
    if user_id is not None:
        # One thread holds every candidate (its public id is fixed): its user decides for all of them.
        candidates = [c for c in candidates if c.thread.user_id == user_id]
    return _pick_one(candidates, repr(checkpoint_id))


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


def checkpoint_compute_checksum(checkpoint: Checkpoint) -> str:
    """SHA-256 over the canonical encoding of the whole immutable record (checkpoints.integrity), from the
    stored canonical texts (no decoding). Needs `checkpoint.thread` (select_related it)."""
    scalars = {
        field: checkpoint.thread.thread_id
        if field == "thread_id"
        else getattr(checkpoint, model_attribute(field))
        for field in CHECKSUM_FIELDS
        if field not in PAYLOAD_FIELDS
    }
    payloads = {"state": checkpoint.state, "context": checkpoint.context, "metadata": checkpoint.metadata}
    return record_checksum_from_parts(scalars, payloads)


def checkpoint_verify(checkpoint: Checkpoint) -> bool:
    """Re-hash a stored checkpoint. Tombstones have no payload left to verify and return True."""
    if checkpoint.state is None:
        return True
    return checkpoint_compute_checksum(checkpoint) == checkpoint.checksum


def ensure_intact(checkpoint: Checkpoint) -> None:
    """ChecksumMismatch (409) if the stored row no longer hashes to its checksum: it was altered after it was
    saved, so none of it can be trusted (restore, state, lists with state, diff and handoff all refuse it)."""
    if checkpoint.state is None:
        return
    computed = checkpoint_compute_checksum(checkpoint)
    if computed != checkpoint.checksum:
        raise ChecksumMismatch(
            f"Checkpoint {checkpoint.checkpoint_id!r} does not match its checksum; it was altered after it "
            "was saved.",
            {
                "thread_id": checkpoint.thread.thread_id,
                "namespace": checkpoint.namespace,
                "checkpoint_id": checkpoint.checkpoint_id,
                "stored": checkpoint.checksum,
                "computed": computed,
            },
        )


def checkpoint_lineage(*, checkpoint: Checkpoint, limit: int) -> tuple[list[Checkpoint], bool]:
    """Ancestors up to the root, nearest first, tombstones included; and whether more lie beyond `limit`.

    One recursive query walks the parent ids (indexed by the unique (thread, namespace, checkpoint_id)),
    a second loads the rows without their payloads.
    """
    table = Checkpoint._meta.db_table
    sql = (  # The table name comes from the model; every id is a bound parameter.
        "WITH RECURSIVE chain(id, parent_checkpoint_id, depth) AS ("  # nosec B608 # see the line above
        f" SELECT c.id, c.parent_checkpoint_id, 0 FROM {table} c WHERE c.id = %s"
        " UNION ALL"
        " SELECT p.id, p.parent_checkpoint_id, chain.depth + 1"
        f" FROM {table} p JOIN chain ON p.checkpoint_id = chain.parent_checkpoint_id"
        " WHERE p.thread_id = %s AND p.namespace = %s AND chain.depth <= %s"
        ") SELECT id FROM chain WHERE depth > 0 ORDER BY depth"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [checkpoint.pk, checkpoint.thread_id, checkpoint.namespace, limit])
        pks = [row[0] for row in cursor.fetchall()]
    has_more = len(pks) > limit
    pks = pks[:limit]
    rows = Checkpoint.objects.without_payload().in_bulk(pks)
    for row in rows.values():
        row.thread = checkpoint.thread  # same thread by construction: no join, no query
    return [rows[pk] for pk in pks], has_more


def _document(checkpoint: Checkpoint, now: datetime) -> dict[str, Any]:
    ensure_readable(checkpoint, now)
    ensure_intact(checkpoint)
    return {name: checkpoint.decoded(name) for name in ("state", "context", "metadata")}


def json_value_count(document: Any, stop_after: int) -> int:
    """How many JSON values (objects, arrays and scalars) the document holds, counting no further than
    `stop_after` + 1: enough to tell that it is over a limit without walking all of a huge one."""
    count, pending = 0, [document]
    while pending and count <= stop_after:
        value = pending.pop()
        count += 1
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return count


# The fields besides the three documents that a diff compares (API and dashboard), by their API names.
DIFF_FIELDS = ("agent_id", "step_index", "step_name", "parent_id", "namespace", "run_id", "handoff_from")


def checkpoint_field_changes(*, checkpoint: Checkpoint, against: Checkpoint | None) -> list[dict[str, Any]]:
    """`{"field", "before", "after"}` for each of DIFF_FIELDS whose value differs from `against` (None: an
    empty document, every value absent) to `checkpoint`, in DIFF_FIELDS order."""
    changes = []
    for name in DIFF_FIELDS:
        before = getattr(against, model_attribute(name)) if against is not None else None
        after = getattr(checkpoint, model_attribute(name))
        if before != after:
            changes.append({"field": name, "before": before, "after": after})
    return changes


def checkpoint_diff(*, checkpoint: Checkpoint, against: Checkpoint | None) -> list[dict[str, Any]]:
    """RFC 6902 JSON Patch turning `against` (or an empty document) into `checkpoint`, over
    {state, context, metadata}. Both must be readable (Gone) and intact (ChecksumMismatch), and hold at most
    CAIRN_DIFF_MAX_NODES JSON values together (DiffTooLarge, before any comparison: a diff runs in the
    request and its cost grows with them)."""
    now = timezone.now()
    limit = settings.CAIRN_DIFF_MAX_NODES
    counted = 0
    documents: list[Any] = []
    for side in (against, checkpoint):
        document = _document(side, now) if side is not None else {}
        counted += json_value_count(document, limit - counted)
        if counted > limit:
            raise DiffTooLarge(
                f"These checkpoints hold more than {limit} JSON values together, more than a diff compares "
                "(CAIRN_DIFF_MAX_NODES). Restore both and compare them where you need the difference.",
                {"limit": limit, "setting": "CAIRN_DIFF_MAX_NODES"},
            )
        documents.append(document)
    source, target = documents
    return list(jsonpatch.make_patch(source, target).patch)


def pending_writes_for(
    *,
    thread: Thread,
    namespace: str,
    checkpoint_id: str,
    task_id: str | None = None,
    parts: Mapping[bytes, str] | None = None,
) -> list[PendingWrite]:
    """A checkpoint's pending writes in LangGraph's order (task_path, task_id, idx), optionally one task's;
    packed values whole again, from `parts` where they are in hand (docs/storage.md)."""
    queryset = PendingWrite.objects.filter(thread=thread, namespace=namespace, checkpoint_id=checkpoint_id)
    if task_id is not None:
        queryset = queryset.filter(task_id=task_id)
    writes = list(queryset.order_by("task_path", "task_id", "idx"))
    unpack_writes(writes, thread.workspace_id, parts)
    return writes


def pending_writes_ensure_target_readable(
    *, thread: Thread, namespace: str, checkpoint_id: str, now: datetime | None = None
) -> None:
    """Gone if the checkpoint the writes belong to exists and has expired (its writes went with it).
    Writes for a checkpoint that does not exist yet are fine: LangGraph writes before it saves."""
    target = (
        Checkpoint.objects.filter(thread=thread, namespace=namespace, checkpoint_id=checkpoint_id)
        .without_payload()
        .first()
    )
    if target is not None:
        ensure_readable(target, now)
