"""Branching a thread: fork (a new thread from one checkpoint), copy (the whole thread), prune (drop
checkpoints). Each locks the source thread first, so it sees one consistent thread: no message or checkpoint
can land half-way through."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any

import jsonpatch
from django.db import models, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.ids import new_id
from checkpoints.models import Checkpoint, Message, PendingWrite, Thread
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoint_reads import checkpoint_head, ensure_intact, ensure_readable
from checkpoints.services.checkpoint_records import UNSET, encode_document, record_fields_of
from checkpoints.services.checkpoints import Payloads, checkpoint_compute_checksum, save_encoded
from checkpoints.services.thread_rows import (
    expires_after,
    thread_audit,
    thread_insert,
    thread_lock,
    thread_touch,
)
from checkpoints.storage.stored_values import pack_stored

PRUNE_STRATEGIES = ("keep_latest", "delete")
# Rows per INSERT when copying (checkpoint payloads can be large: keep batches modest).
COPY_BATCH = 200
# A fork's audit event lists at most this many seqs of the messages it left out (its count stays exact).
AUDIT_SEQS_MAX = 100


def _inherited(source: Thread, now: datetime) -> dict[str, Any]:
    """What a fork or copy takes from its source thread: owner, labels, summary scope and idle expiry."""
    return {
        "workspace": source.workspace,
        "user_id": source.user_id,
        "tags": list(source.tags),
        "metadata": dict(source.metadata),
        "scope": dict(source.scope),
        "ttl_seconds": source.ttl_seconds,
        "expires_at": expires_after(source.ttl_seconds, now),
        "created_at": now,
        "updated_at": now,
    }


def _clone_rows(
    queryset: models.QuerySet[Any], target: Thread, adjust: Callable[[Any, Any], None] | None = None
) -> int:
    """Insert a copy of every row of `queryset` into `target`, in primary-key (= creation) order, in batches
    read by keyset so no cursor stays open on a table being inserted into. Every concrete field is copied
    (new fields are copied too); `adjust(row, clone)` may check the row and edit its clone before insert."""
    model = queryset.model
    fields = [f.attname for f in model._meta.concrete_fields if not f.primary_key]
    copied, last_pk = 0, 0
    while batch := list(queryset.filter(pk__gt=last_pk).order_by("pk")[:COPY_BATCH]):
        clones = []
        for row in batch:
            clone = model(**{name: getattr(row, name) for name in fields})
            clone.thread = target
            if adjust is not None:
                adjust(row, clone)
            clones.append(clone)
        model.objects.bulk_create(clones)
        copied, last_pk = copied + len(clones), batch[-1].pk
    return copied


def _rehasher(source: Thread, now: datetime) -> Callable[[Checkpoint, Checkpoint], None]:
    """Re-hash each copied checkpoint for its new thread_id, after checking the original is intact (else
    the copy would bless a tampered row with a fresh, valid checksum). Tombstones have no payload left to
    hash: they keep the source's checksum. Large documents are stored packed, as a save stores them."""

    def rehash(original: Checkpoint, clone: Checkpoint) -> None:
        if original.state is not None:
            original.thread = source
            ensure_intact(original)
            clone.checksum = checkpoint_compute_checksum(clone)
            pack_stored(clone, now=now)

    return rehash


def _state_edit(original: str, edited: str) -> dict[str, Any]:
    """What a fork with changes records of its edit: whether the state changed and the JSON pointers of the
    values that did (the first AUDIT_SEQS_MAX)."""
    patch = jsonpatch.make_patch(json.loads(original), json.loads(edited))
    paths = list(dict.fromkeys(operation["path"] for operation in patch))
    return {"state_edited": edited != original, "changed_paths": paths[:AUDIT_SEQS_MAX]}


@transaction.atomic
def thread_fork(
    *,
    source: Thread,
    actor: Actor,
    checkpoint: Checkpoint | None = None,
    namespace: str = "",
    thread_id: str | None = None,
    name: str | None = None,
    state: Any = UNSET,
    message_ids: Collection[str] | None = None,
    reason: str = "",
) -> Thread:
    """Branch a new thread from a checkpoint of `source` (default: the head of `namespace`).

    The new thread's head is a copy of the checkpoint (same checkpoint_id, namespace, created_at and
    payloads; no parent; checksum recomputed for the new thread_id; the same remaining TTL and pin) with its
    pending writes, and its messages are the source's messages up to the checkpoint's `message_seq` (same ids
    and seqs; later appends continue from there). It inherits the source's user, tags, metadata, scope and
    idle TTL; `name` defaults to the source's. The source is not changed. Audit: `checkpoint.fork`.

    Fork with changes: `state` replaces the copied state (ValidationFailed if it cannot be stored), and
    `message_ids` carries only those of the messages up to `message_seq` (ValidationFailed naming any other).
    The audit event names the JSON pointers of the edited values (`changed_paths`) and the `reason` given.
    """
    now = timezone.now()
    edited_state = None if state is UNSET else encode_document("state", state)
    source = thread_lock(source)
    if checkpoint is None:
        checkpoint = checkpoint_head(thread=source, namespace=namespace, now=now)
        if checkpoint is None:
            raise NotFound(
                f"Thread {source.thread_id!r} has no checkpoint in namespace {namespace!r} to fork."
            )
    else:
        checkpoint = Checkpoint.objects.filter(pk=checkpoint.pk, thread=source).first()
        if checkpoint is None:
            raise NotFound("The checkpoint is not in this thread.")
        ensure_readable(checkpoint, now)
    checkpoint.thread = source
    # The copy gets a fresh checksum: refuse to launder a row altered since it was saved.
    ensure_intact(checkpoint)
    assert checkpoint.state is not None and checkpoint.context is not None and checkpoint.metadata is not None
    carried: models.QuerySet[Message] = Message.objects.filter(thread=source, seq__lte=checkpoint.message_seq)
    left_out: list[int] = []
    if message_ids is not None:
        carried, left_out = _chosen_messages(carried, message_ids)
    target = thread_insert(
        Thread(
            **_inherited(source, now),
            thread_id=thread_id or new_id(),
            name=source.name if name is None else name,
            forked_from=source,
            forked_from_checkpoint_id=checkpoint.checkpoint_id,
            forked_from_namespace=checkpoint.namespace,
            last_message_seq=checkpoint.message_seq,
        )
    )
    messages = _clone_rows(carried, target)
    remaining = None
    if checkpoint.expires_at is not None and not checkpoint.pinned:
        # Whole seconds, rounded up: the copy never expires before the original.
        remaining = max(1, math.ceil((checkpoint.expires_at - now).total_seconds()))
    fields = record_fields_of(checkpoint)
    # The fork's head is the forker's; a copy keeps every row's writer.
    fields.update({"parent_id": None, "ttl_seconds": remaining, "written_by": actor.writer})
    state = checkpoint.state if edited_state is None else edited_state
    payloads = Payloads(state=state, context=checkpoint.context, metadata=checkpoint.metadata)
    save_encoded(workspace=source.workspace, thread_id=target.thread_id, payloads=payloads, **fields)
    writes = _clone_rows(
        PendingWrite.objects.filter(
            thread=source, namespace=checkpoint.namespace, checkpoint_id=checkpoint.checkpoint_id
        ),
        target,
    )
    thread_audit(
        target,
        actor=actor,
        action="checkpoint.fork",
        details={
            "source_thread_id": source.thread_id,
            "checkpoint_id": checkpoint.checkpoint_id,
            "namespace": checkpoint.namespace,
            "message_seq": checkpoint.message_seq,
            "messages": messages,
            "pending_writes": writes,
            **(_state_edit(checkpoint.state, edited_state) if edited_state is not None else {}),
            **({"reason": reason} if reason else {}),
            **(
                {"messages_left_out": len(left_out), "left_out_seqs": left_out[:AUDIT_SEQS_MAX]}
                if message_ids is not None
                else {}
            ),
        },
        agents=[checkpoint.agent_id],
    )
    return target


def _chosen_messages(
    carried: models.QuerySet[Message], message_ids: Collection[str]
) -> tuple[models.QuerySet[Message], list[int]]:
    """The messages among `carried` named by `message_ids`, and the seqs of those left out (ValidationFailed
    if an id names no message of `carried`)."""
    wanted = set(message_ids)
    seqs = dict(carried.values_list("message_id", "seq"))
    unknown = sorted(wanted - set(seqs))
    if unknown:
        raise ValidationFailed(
            "Only messages up to the checkpoint can be carried over.", {"message_ids": unknown[:20]}
        )
    left_out = sorted(seq for message_id, seq in seqs.items() if message_id not in wanted)
    return carried.filter(message_id__in=wanted), left_out


@transaction.atomic
def thread_copy(*, source: Thread, thread_id: str, actor: Actor) -> Thread:
    """Copy a whole thread to a new thread_id: every checkpoint in creation order with the same
    checkpoint_ids, parents and namespaces (tombstones stay tombstones; live checkpoints are re-hashed for the
    new thread_id), every pending write, every message (same ids, seqs and times), and the thread's own
    fields. Conflict if `thread_id` exists; ChecksumMismatch (and nothing copied) if a source checkpoint was
    altered since it was saved. The source is not changed. Audit: `thread.copy`."""
    now = timezone.now()
    source = thread_lock(source)
    target = thread_insert(
        Thread(
            **_inherited(source, now),
            thread_id=thread_id,
            name=source.name,
            pinned=source.pinned,
            last_message_seq=source.last_message_seq,
        )
    )
    counts = {
        "checkpoints": _clone_rows(Checkpoint.objects.filter(thread=source), target, _rehasher(source, now)),
        "pending_writes": _clone_rows(PendingWrite.objects.filter(thread=source), target),
        "messages": _clone_rows(Message.objects.filter(thread=source), target),
    }
    thread_audit(
        target,
        actor=actor,
        action="thread.copy",
        details={"source_thread_id": source.thread_id, **counts},
    )
    return target


@transaction.atomic
def thread_prune(*, thread: Thread, strategy: str, actor: Actor) -> int:
    """Hard-delete checkpoints (with their pending writes) and return how many were deleted.

    - keep_latest: keep only the newest readable checkpoint of each namespace (and its pending writes);
      older ones, tombstones and expired ones go.
    - delete: every checkpoint and every pending write of the thread.
    Pins do not protect against a prune (it is an explicit request); messages are untouched.
    Audit: `thread.prune` with the counts.
    """
    if strategy not in PRUNE_STRATEGIES:
        raise ValidationFailed(
            f"strategy must be one of {', '.join(PRUNE_STRATEGIES)}.", {"strategy": strategy}
        )
    now = timezone.now()
    locked = thread_lock(thread)
    checkpoints = Checkpoint.objects.filter(thread=locked)
    writes = PendingWrite.objects.filter(thread=locked)
    if strategy == "keep_latest":
        newest = (
            Checkpoint.objects.filter(thread=locked, namespace=OuterRef("namespace"))
            .live(now)
            .order_by("-id")
        )
        kept = list(
            checkpoints.live(now)
            .filter(pk=Subquery(newest.values("pk")[:1]))
            .values_list("pk", "namespace", "checkpoint_id")
        )
        checkpoints = checkpoints.exclude(pk__in=[pk for pk, _, _ in kept])
        for _, namespace, checkpoint_id in kept:
            writes = writes.exclude(namespace=namespace, checkpoint_id=checkpoint_id)
    # Counted by model: the delete cascades to the checkpoints' annotations, which are not checkpoints.
    _, deleted = checkpoints.delete()
    pruned = deleted.get(Checkpoint._meta.label, 0)
    writes_deleted, _ = writes.delete()
    # The head may be gone (delete) or have been a checkpoint that is now the only one: the cached head of
    # every namespace must be read again.
    thread_touch(locked, now=now, head_moved=True)
    thread_audit(
        locked,
        actor=actor,
        action="thread.prune",
        details={"strategy": strategy, "checkpoints": pruned, "pending_writes": writes_deleted},
    )
    return pruned
