"""Checkpoint writes: save (with idempotent retry), handoff, expire-now, TTL and pinning, tombstoning.

Every write locks the thread row first (`thread_lock_or_create`), so "parent defaults to the head" and
`If-Match` are decided against a head that cannot move underneath them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Final

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.db.models.functions import Coalesce, Least
from django.utils import timezone

from checkpoints.exceptions import Conflict, Gone, PreconditionFailed, ValidationFailed
from checkpoints.ids import new_id
from checkpoints.integrity import CanonicalEncodingError, canonical_json, record_checksum_from_parts
from checkpoints.models import Checkpoint, PendingWrite, Thread, Workspace
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.checkpoint_reads import checkpoint_head
from checkpoints.services.state_cache import head_cache_put_on_commit
from checkpoints.services.threads_base import thread_lock_or_create, thread_touch


class Unset(Enum):
    UNSET = "UNSET"


UNSET: Final = Unset.UNSET
"""Marks an argument the caller did not send (as opposed to an explicit null)."""

# A NUL escape that is not itself an escaped backslash followed by "u0000".
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


@dataclass(frozen=True)
class Payloads:
    """The canonical JSON text of a checkpoint's three documents (exactly what is stored and hashed)."""

    state: str
    context: str
    metadata: str

    @property
    def size_bytes(self) -> int:
        return sum(len(text.encode("utf-8")) for text in (self.state, self.context, self.metadata))


def encode_document(name: str, value: Any) -> str:
    """The canonical JSON text of one document, or ValidationFailed naming the field."""
    try:
        return canonical_json(value)
    except CanonicalEncodingError as exc:
        raise ValidationFailed(f"{name} is not valid JSON: {exc}", {name: [str(exc)]}) from exc


def encode_payloads(state: Any, context: Any, metadata: Any) -> Payloads:
    """Canonically encode the documents, refusing what cannot be stored faithfully."""
    if state is None:
        raise ValidationFailed("state is required.", {"state": ["This field may not be null."]})
    payloads = Payloads(
        state=encode_document("state", state),
        context=encode_document("context", context),
        metadata=encode_document("metadata", metadata),
    )
    # Metadata is also queried as jsonb (filters, GIN index), and jsonb cannot hold U+0000.
    if _NUL_ESCAPE.search(payloads.metadata):
        raise ValidationFailed("metadata may not contain NUL characters.", {"metadata": ["NUL character."]})
    return payloads


@dataclass(frozen=True)
class SaveResult:
    checkpoint: Checkpoint
    created: bool


def checkpoint_save(
    *,
    workspace: Workspace,
    thread_id: str,
    agent_id: str,
    state: Any,
    namespace: str = "",
    checkpoint_id: str | None = None,
    parent_id: str | Unset | None = UNSET,
    framework: str = Checkpoint.Framework.CUSTOM,
    schema_version: str = "1.0",
    step_index: int | None = None,
    step_name: str | None = None,
    run_id: str | None = None,
    context: Any = None,
    metadata: Any = None,
    ttl_seconds: int | Unset | None = UNSET,
    pinned: bool = False,
    checksum: str | None = None,
    created_at: datetime | None = None,
    expected_head: str | Unset | None = UNSET,
) -> SaveResult:
    """Save a checkpoint; the thread is created if missing.

    - `parent_id` omitted: the head of the namespace (or none). Given: must exist in this thread+namespace.
    - `step_index` omitted: parent's + 1, or 0.
    - `ttl_seconds` omitted: the workspace default TTL; null: no expiry.
    - Same `checkpoint_id` again with identical content: the stored checkpoint (created=False).
      With different content: Conflict.
    - `checksum` (client-computed over the whole record) must match, or nothing is stored.
    - `expected_head` (If-Match): PreconditionFailed unless the namespace head is that checkpoint id
      ("*": unless the namespace has a head).
    """
    payloads = encode_payloads(
        state, {} if context is None else context, {} if metadata is None else metadata
    )
    return save_encoded(
        workspace=workspace,
        thread_id=thread_id,
        namespace=namespace,
        checkpoint_id=checkpoint_id,
        parent_id=parent_id,
        agent_id=agent_id,
        framework=framework,
        schema_version=schema_version,
        step_index=step_index,
        step_name=step_name,
        run_id=run_id,
        payloads=payloads,
        ttl_seconds=ttl_seconds,
        pinned=pinned,
        checksum=checksum,
        created_at=created_at,
        expected_head=expected_head,
    )


@transaction.atomic
def save_encoded(
    *,
    workspace: Workspace,
    thread_id: str,
    namespace: str,
    checkpoint_id: str | None,
    parent_id: str | Unset | None,
    agent_id: str,
    framework: str,
    schema_version: str,
    step_index: int | None,
    step_name: str | None,
    run_id: str | None,
    payloads: Payloads,
    ttl_seconds: int | Unset | None = UNSET,
    pinned: bool = False,
    checksum: str | None = None,
    created_at: datetime | None = None,
    expected_head: str | Unset | None = UNSET,
    handoff_target: str | None = None,
    handoff_from: str | None = None,
) -> SaveResult:
    """`checkpoint_save` for documents that are already canonical text (handoffs and copies reuse stored
    text instead of decoding and re-encoding it)."""
    now = timezone.now()
    if created_at is not None and created_at > now + timedelta(seconds=settings.CAIRN_MAX_CLOCK_SKEW_SECONDS):
        raise ValidationFailed(
            "created_at is in the future.", {"created_at": ["Later than the server clock."]}
        )
    thread = thread_lock_or_create(workspace=workspace, thread_id=thread_id, now=now)

    if checkpoint_id is not None:
        existing = Checkpoint.objects.filter(
            thread=thread, namespace=namespace, checkpoint_id=checkpoint_id
        ).first()
        if existing is not None:
            sent: dict[str, Any] = {
                "agent_id": agent_id,
                "framework": framework,
                "schema_version": schema_version,
                "step_name": step_name,
                "run_id": run_id,
                "handoff_target": handoff_target,
                "handoff_from": handoff_from,
            }
            if parent_id is not UNSET:
                sent["parent_checkpoint_id"] = parent_id
            if step_index is not None:
                sent["step_index"] = step_index
            if created_at is not None:
                sent["created_at"] = created_at
            _ensure_same_checkpoint(existing, sent, payloads, checksum, now)
            return SaveResult(existing, created=False)

    head = checkpoint_head(thread=thread, namespace=namespace, now=now)
    head_id = head.checkpoint_id if head else None
    head_matches = head_id is not None if expected_head == "*" else expected_head == head_id
    if expected_head is not UNSET and not head_matches:
        raise PreconditionFailed(
            "The head moved: it is not the checkpoint named in If-Match.",
            {"expected": expected_head, "head": head_id},
        )
    if parent_id is UNSET:
        parent = head
    elif parent_id is None:
        parent = None
    else:
        parent = Checkpoint.objects.filter(
            thread=thread, namespace=namespace, checkpoint_id=parent_id
        ).first()
        if parent is None:
            raise ValidationFailed(
                "parent_id does not name a checkpoint in this thread and namespace.",
                {"parent_id": [f"No checkpoint {parent_id!r} in namespace {namespace!r}."]},
            )
    if step_index is None:
        step_index = parent.step_index + 1 if parent else 0
    if ttl_seconds is UNSET:
        ttl_seconds = workspace.default_ttl_seconds

    checkpoint = Checkpoint(
        workspace=workspace,
        thread=thread,
        namespace=namespace,
        checkpoint_id=checkpoint_id or new_id(),
        parent_checkpoint_id=parent.checkpoint_id if parent else None,
        agent_id=agent_id,
        framework=framework,
        schema_version=schema_version,
        step_index=step_index,
        step_name=step_name,
        run_id=run_id,
        state=payloads.state,
        context=payloads.context,
        metadata=payloads.metadata,
        handoff_target=handoff_target,
        handoff_from=handoff_from,
        message_seq=thread.last_message_seq,
        size_bytes=payloads.size_bytes,
        created_at=created_at or now,
        expires_at=now + timedelta(seconds=ttl_seconds) if ttl_seconds else None,
        pinned=pinned,
    )
    checkpoint.checksum = checkpoint_compute_checksum(checkpoint)
    if checksum is not None and checksum != checkpoint.checksum:
        raise ValidationFailed(
            "checksum does not match the record the server would store.",
            {"checksum": ["Mismatch."], "received": checksum, "computed": checkpoint.checksum},
        )
    checkpoint.save(force_insert=True)
    thread_touch(thread, now=now, head_moved=True)
    head_cache_put_on_commit(thread, namespace, checkpoint)
    return SaveResult(checkpoint, created=True)


def _ensure_same_checkpoint(
    existing: Checkpoint, sent: dict[str, Any], payloads: Payloads, checksum: str | None, now: datetime
) -> None:
    """An idempotent retry must carry the same content as the stored checkpoint; else Conflict."""
    if not existing.is_readable(now):
        raise Gone(
            "A checkpoint with this id existed and has expired.",
            {"checkpoint_id": existing.checkpoint_id, "expired_at": existing.effective_expired_at(now)},
        )
    differing = [field for field, value in sent.items() if getattr(existing, field) != value]
    differing += [
        name
        for name in ("state", "context", "metadata")
        if getattr(existing, name) != getattr(payloads, name)
    ]
    if checksum is not None and checksum != existing.checksum:
        differing.append("checksum")
    if differing:
        raise Conflict(
            "A different checkpoint with this id already exists.",
            {"checkpoint_id": existing.checkpoint_id, "differing_fields": sorted(set(differing))},
        )


def checkpoint_compute_checksum(checkpoint: Checkpoint) -> str:
    """SHA-256 over the canonical encoding of the whole immutable record (checkpoints.integrity)."""
    scalars = {
        "thread_id": checkpoint.thread.thread_id,
        "namespace": checkpoint.namespace,
        "checkpoint_id": checkpoint.checkpoint_id,
        "parent_id": checkpoint.parent_checkpoint_id,
        "agent_id": checkpoint.agent_id,
        "framework": checkpoint.framework,
        "schema_version": checkpoint.schema_version,
        "step_index": checkpoint.step_index,
        "step_name": checkpoint.step_name,
        "run_id": checkpoint.run_id,
        "handoff_target": checkpoint.handoff_target,
        "handoff_from": checkpoint.handoff_from,
        "created_at": checkpoint.created_at,
    }
    payloads = {"state": checkpoint.state, "context": checkpoint.context, "metadata": checkpoint.metadata}
    return record_checksum_from_parts(scalars, payloads)


def checkpoint_verify(checkpoint: Checkpoint) -> bool:
    """Re-hash a stored checkpoint. Tombstones have no payload left to verify and return True."""
    if checkpoint.state is None:
        return True
    return checkpoint_compute_checksum(checkpoint) == checkpoint.checksum


def _lock_readable(checkpoint: Checkpoint, now: datetime) -> tuple[Thread, Checkpoint]:
    """Lock the checkpoint's thread, reload the row, and refuse it if it is no longer readable."""
    thread = Thread.objects.select_for_update().get(pk=checkpoint.thread_id)
    current = Checkpoint.objects.select_related("thread").get(pk=checkpoint.pk)
    if not current.is_readable(now):
        raise Gone("The checkpoint has expired.", {"expired_at": current.effective_expired_at(now)})
    return thread, current


@transaction.atomic
def checkpoint_expire(*, checkpoint: Checkpoint, actor: Actor) -> Checkpoint:
    """Expire a checkpoint now: it becomes a tombstone (ids, parent, checksum and times kept; payload and
    pending writes deleted). Pinned checkpoints must be unpinned first."""
    now = timezone.now()
    thread, current = _lock_readable(checkpoint, now)
    if current.pinned:
        raise Conflict("The checkpoint is pinned; unpin it before expiring it.", {"pinned": True})
    checkpoints_tombstone(pks=[current.pk], now=now)
    audit_record(
        workspace=thread.workspace,
        actor=actor,
        action="checkpoint.expire",
        target_type="checkpoint",
        target_id=f"{thread.thread_id}/{current.namespace}/{current.checkpoint_id}",
        details={"namespace": current.namespace, "checkpoint_id": current.checkpoint_id},
    )
    current.refresh_from_db()
    return current


def checkpoints_tombstone(*, pks: list[int], now: datetime) -> int:
    """Turn live rows into tombstones in one statement; returns how many changed.

    Safe to race: only rows still without `expired_at` change, so two sweeps never count a row twice.
    `expired_at` is when the row really expired: its passed expires_at, or now.
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
        Thread.objects.filter(pk__in=thread_pks).update(state_version=F("state_version") + 1)
    return changed


@transaction.atomic
def checkpoint_set_ttl(
    *,
    checkpoint: Checkpoint,
    actor: Actor,
    ttl_seconds: int | Unset | None = UNSET,
    pinned: bool | Unset = UNSET,
) -> Checkpoint:
    """Set, extend or clear a live checkpoint's expiry (from now), and/or pin or unpin it."""
    now = timezone.now()
    thread, current = _lock_readable(checkpoint, now)
    if ttl_seconds is not UNSET:
        current.expires_at = now + timedelta(seconds=ttl_seconds) if ttl_seconds else None
    if pinned is not UNSET:
        current.pinned = pinned
    Checkpoint.objects.filter(pk=current.pk).update(expires_at=current.expires_at, pinned=current.pinned)
    thread_touch(thread, now=now, head_moved=True)
    audit_record(
        workspace=thread.workspace,
        actor=actor,
        action="checkpoint.ttl",
        target_type="checkpoint",
        target_id=f"{thread.thread_id}/{current.namespace}/{current.checkpoint_id}",
        details={
            "ttl_seconds": None if ttl_seconds is UNSET else ttl_seconds,
            "pinned": current.pinned,
            "expires_at": current.expires_at.isoformat() if current.expires_at else None,
        },
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
    handoff_from = the source agent, step + 1, and the given context (default: the source's)."""
    now = timezone.now()
    if not source.is_readable(now):
        raise Gone("The checkpoint has expired.", {"expired_at": source.effective_expired_at(now)})
    assert source.state is not None and source.context is not None and source.metadata is not None
    new_context = source.context if context is UNSET else encode_document("context", context)
    result = save_encoded(
        workspace=source.thread.workspace,
        thread_id=source.thread.thread_id,
        namespace=source.namespace,
        checkpoint_id=None,
        parent_id=source.checkpoint_id,
        agent_id=target_agent_id,
        framework=source.framework,
        schema_version=source.schema_version,
        step_index=source.step_index + 1,
        step_name=source.step_name,
        run_id=source.run_id,
        payloads=Payloads(state=source.state, context=new_context, metadata=source.metadata),
        ttl_seconds=ttl_seconds,
        handoff_target=target_agent_id,
        handoff_from=source.agent_id,
    )
    handed = result.checkpoint
    audit_record(
        workspace=source.thread.workspace,
        actor=actor,
        action="checkpoint.handoff",
        target_type="checkpoint",
        target_id=f"{source.thread.thread_id}/{source.namespace}/{handed.checkpoint_id}",
        details={
            "from_checkpoint": source.checkpoint_id,
            "from_agent": source.agent_id,
            "to_agent": target_agent_id,
        },
    )
    return handed


@transaction.atomic
def pending_writes_put(
    *,
    workspace: Workspace,
    thread_id: str,
    namespace: str,
    checkpoint_id: str,
    task_id: str,
    task_path: str,
    writes: list[dict[str, Any]],
) -> int:
    """Store LangGraph pending writes for a checkpoint that may not exist yet.

    Writes with a negative idx (LangGraph's special channels: errors, interrupts, ...) replace an earlier
    write at the same (task_id, idx); ordinary writes are kept as first written (a retry is a no-op).
    """
    now = timezone.now()
    thread = thread_lock_or_create(workspace=workspace, thread_id=thread_id, now=now)
    target = Checkpoint.objects.filter(
        thread=thread, namespace=namespace, checkpoint_id=checkpoint_id
    ).first()
    if target is not None and not target.is_readable(now):
        raise Gone("The checkpoint has expired.", {"expired_at": target.effective_expired_at(now)})
    rows = []
    for position, write in enumerate(writes):
        value = encode_document(f"writes[{position}].value", write["value"])
        rows.append(
            PendingWrite(
                thread=thread,
                namespace=namespace,
                checkpoint_id=checkpoint_id,
                task_id=task_id,
                task_path=task_path,
                idx=write["idx"] if write.get("idx") is not None else position,
                channel=write["channel"],
                type=write.get("type") or "",
                value=value,
                created_at=now,
            )
        )
    unique_fields = ["thread", "namespace", "checkpoint_id", "task_id", "idx"]
    special = [row for row in rows if row.idx < 0]
    ordinary = [row for row in rows if row.idx >= 0]
    if special:
        PendingWrite.objects.bulk_create(
            special,
            update_conflicts=True,
            unique_fields=unique_fields,
            update_fields=["channel", "type", "value", "task_path"],
        )
    if ordinary:
        PendingWrite.objects.bulk_create(ordinary, ignore_conflicts=True)
    thread_touch(thread, now=now)
    return len(rows)
