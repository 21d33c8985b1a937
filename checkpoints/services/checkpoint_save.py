"""Saving a checkpoint: parent and step defaults, If-Match, client checksums and the idempotent retry.
What a save is given (canonical documents, record fields) is `checkpoint_records`';
`checkpoints.services.checkpoints` re-exports both.

A save is two statements. The first reads the thread, the head, the named parent and whether the id is taken
(`save_context`); the second touches the thread and inserts the checkpoint only if the thread is still as
the first one read it (`save_sql.insert_checkpoint`: the same state_version — every write that may move a
head bumps it — idle TTL and user, and the id still free), so "parent defaults to the head" and `If-Match`
are decided against a head that did not move, and two saves of one new id cannot both insert. On
PostgreSQL, outside a transaction, the two run on their own (no BEGIN or COMMIT), and the first is skipped
when this process remembers the thread from its last save there (`thread_memo`): one round trip. If the
thread changed in between, or does not exist yet, the save runs again from a read, then in a transaction
whose first statement locks the thread. See docs/architecture.md, "The hot path".
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar, Unpack

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from checkpoints.exceptions import Conflict, Gone, NotFound, PreconditionFailed
from checkpoints.ids import new_id
from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.services.checkpoint_reads import checkpoint_compute_checksum
from checkpoints.services.checkpoint_records import (
    AS_SENT,
    UNSET,
    Payloads,
    RecordFields,
    Unset,
    encode_payloads,
    invalid_field,
)
from checkpoints.services.optional import not_none
from checkpoints.services.thread_rows import expires_after, thread_insert_if_missing, thread_touch_values
from checkpoints.storage import hot_cursor, model_rows, save_sql, thread_memo
from checkpoints.storage.stored_values import (
    all_parts,
    parts_not_found,
    parts_sent,
    parts_to_store,
    stored_packed,
)


@dataclass(frozen=True)
class SaveResult:
    checkpoint: Checkpoint
    created: bool


class ThreadChanged(Exception):
    """The thread changed between a save's two statements (or since the memo it decided from), or does not
    exist yet: save again, from a read, then locking it."""

    def __init__(self, thread_id: str, *, from_memo: bool = False) -> None:
        super().__init__(thread_id)
        self.from_memo = from_memo


P = ParamSpec("P")
R = TypeVar("R")


def optimistic_then_locking(save: Callable[P, R]) -> Callable[P, R]:
    """Run `save` without a transaction where that is safe (PostgreSQL, not inside one already), again from
    a read if it decided from a memo that turned out stale; if it raises ThreadChanged otherwise, or
    elsewhere, run it in a transaction (where `save_context` locks the thread)."""

    @functools.wraps(save)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            for _attempt in range(2):
                try:
                    return save(*args, **kwargs)
                except ThreadChanged as changed:
                    if not changed.from_memo:  # the memo was forgotten: the next attempt reads
                        break
        with transaction.atomic():
            return save(*args, **kwargs)

    return run


def checkpoint_save(
    *,
    workspace: Workspace,
    thread_id: str,
    state: Any,
    context: Any = None,
    metadata: Any = None,
    **fields: Unpack[RecordFields],
) -> SaveResult:
    """Save a checkpoint; the thread is created if missing.

    - `parent_id` omitted: the head of the namespace (or none). Given: must exist in this thread+namespace.
    - `step_index` omitted: parent's + 1, or 0.
    - `ttl_seconds` omitted: the workspace default TTL; null: no expiry.
    - Same `checkpoint_id` again with identical content: the stored checkpoint (created=False); fields the
      retry omits (parent, step, created_at) are not compared. With different content: Conflict.
    - `checksum` (client-computed over the whole record) must match, or nothing is stored (not even the
      thread).
    - `expected_head` (If-Match): PreconditionFailed unless the namespace head is one of these checkpoint ids
      ("*": unless the namespace has a head).
    - `user_id`: the save is that end user's (another user's thread is NotFound; a new thread gets it).
    - `written_by`: who saves it (`Actor.writer`); a retry keeps the first writer.
    """
    payloads = encode_payloads(
        state, {} if context is None else context, {} if metadata is None else metadata
    )
    return save_encoded(workspace=workspace, thread_id=thread_id, payloads=payloads, **fields)


@optimistic_then_locking
def save_encoded(
    *, workspace: Workspace, thread_id: str, payloads: Payloads, **fields: Unpack[RecordFields]
) -> SaveResult:
    """`checkpoint_save` for documents that are already canonical text (handoffs and copies reuse stored
    text instead of decoding and re-encoding it)."""
    namespace = fields.get("namespace", "")
    checkpoint_id = fields.get("checkpoint_id")
    parent_id = fields.get("parent_id", UNSET)
    step_index = fields.get("step_index")
    ttl_seconds = fields.get("ttl_seconds", UNSET)
    checksum = fields.get("checksum")
    created_at = fields.get("created_at")
    expected_head = fields.get("expected_head", UNSET)
    user_id = fields.get("user_id")
    as_sent = {name: fields.get(name, default) for name, default in AS_SENT.items()}
    now = timezone.now()
    if created_at is not None and created_at > now + timedelta(seconds=settings.CAIRN_MAX_CLOCK_SKEW_SECONDS):
        raise invalid_field("created_at", "Later than the server clock allows.")
    # The head is only needed to default the parent or to check If-Match.
    context = save_context(
        workspace=workspace,
        thread_id=thread_id,
        namespace=namespace,
        now=now,
        user_id=user_id,
        want_head=parent_id is UNSET or expected_head is not UNSET,
        parent_id=parent_id if isinstance(parent_id, str) else None,
        checkpoint_id=checkpoint_id,
        id_checked_by_write=True,
    )
    thread = context.thread
    if context.existing_pk is not None:
        existing = Checkpoint.objects.get(pk=context.existing_pk)
        existing.thread = thread
        sent = {"agent_id": fields["agent_id"], **as_sent}
        if parent_id is not UNSET:
            sent["parent_checkpoint_id"] = parent_id
        sent.update(not_none(step_index=step_index, created_at=created_at))
        _ensure_same_checkpoint(existing, sent, payloads, checksum, now)
        return SaveResult(existing, created=False)

    if expected_head is not UNSET:
        head_id = context.head_id
        if head_id is None or not ("*" in expected_head or head_id in expected_head):
            if context.from_memo:
                raise context.changed(namespace)  # a memo never refuses: read the head
            raise PreconditionFailed(
                "The head moved: it is not the checkpoint named in If-Match.",
                {"expected": list(expected_head), "head": head_id, "namespace": namespace},
            )
    parent = _parent(context, namespace=namespace, parent_id=parent_id)
    if step_index is None:
        step_index = parent[1] + 1 if parent else 0
    if ttl_seconds is UNSET:
        ttl_seconds = workspace.default_ttl_seconds

    checkpoint = Checkpoint(
        workspace=workspace,
        thread=thread,
        namespace=namespace,
        checkpoint_id=checkpoint_id or new_id(),
        parent_checkpoint_id=parent[0] if parent else None,
        agent_id=fields["agent_id"],
        step_index=step_index,
        state=payloads.state,
        context=payloads.context,
        metadata=payloads.metadata,
        written_by=fields.get("written_by", ""),
        size_bytes=payloads.size_bytes,
        created_at=created_at or now,
        expires_at=expires_after(ttl_seconds, now),
        pinned=fields.get("pinned", False),
        **as_sent,
    )
    checkpoint.checksum = checkpoint_compute_checksum(checkpoint)
    if checksum is not None and checksum != checkpoint.checksum:
        # Raised inside the transaction: nothing is stored, not even a thread this save created.
        raise invalid_field(
            "checksum",
            "Does not match the record the server would store.",
            received=checksum,
            computed=checkpoint.checksum,
        )
    packed = payloads.packed()
    seen = thread_seen(thread)
    thread_touch_values(thread, now=now, head_moved=True)
    postgres = connection.vendor == "postgresql"
    parts = parts_to_store(
        workspace_id=workspace.pk,
        parts=all_parts(packed),
        now=timezone.now(),
        skip_sent_lately=postgres and not connection.in_atomic_block,
    )
    with stored_packed(checkpoint, packed):
        inserted = save_sql.insert_checkpoint(
            checkpoint, thread_touched=(thread.updated_at, thread.expires_at), thread_seen=seen, parts=parts
        )
    if inserted is None:
        parts_not_found(parts)
        raise context.changed(namespace)
    checkpoint.pk, checkpoint.message_seq = inserted
    # Stored: its state says so, as Model.save leaves it (`Model._state` is documented public API despite
    # its name: Django's model instance reference, "Other attributes").
    checkpoint._state.adding = False
    checkpoint._state.db = connection.alias
    if postgres:  # once committed, the next write here may start from it, naming the parts it sent
        transaction.on_commit(functools.partial(thread_memo.remember, checkpoint))
        if parts.texts:
            transaction.on_commit(functools.partial(parts_sent, parts))
    return SaveResult(checkpoint, created=True)


def thread_seen(thread: Thread) -> save_sql.ThreadSeen:
    """What a write decided from and its statement checks is unchanged (see `storage.save_sql`)."""
    return save_sql.ThreadSeen(thread.state_version, thread.ttl_seconds, thread.user_id)


@dataclass(frozen=True)
class SaveContext:
    thread: Thread
    head_id: str | None
    head_step: int | None
    parent_step: int | None
    existing_pk: int | None
    existing_live: bool | None  # whether the id's existing row is readable now (None: no such row)
    from_memo: bool = False  # decided from thread_memo, not read: only a checked write may follow

    def changed(self, namespace: str) -> ThreadChanged:
        """The write found the thread changed since this context was read (or remembered)."""
        if self.from_memo:
            thread_memo.forget(self.thread.workspace_id, self.thread.thread_id, namespace)
        return ThreadChanged(self.thread.thread_id, from_memo=self.from_memo)


def save_context(
    *,
    workspace: Workspace,
    thread_id: str,
    namespace: str,
    now: datetime,
    user_id: str | None,
    want_head: bool,
    parent_id: str | None,
    checkpoint_id: str | None,
    id_checked_by_write: bool = False,
) -> SaveContext:
    """One query: the thread, the namespace's head, the named parent's step and the id's existing row (is
    it readable?). Inside a transaction it takes the thread's row lock, creates a missing thread, and reads
    again if the lock was waited for (`storage.save_sql`); outside one a missing thread is ThreadChanged,
    and the query is skipped where this process's memo of the thread answers everything asked
    (`_recalled`; with `id_checked_by_write`, the write's own statement finds whether the id is taken).
    Every write under a thread starts here (saves and pending writes)."""
    lock = connection.in_atomic_block
    if not lock and connection.vendor == "postgresql":
        recalled = _recalled(
            thread_memo.recall(workspace.pk, thread_id, namespace),
            now=now,
            user_id=user_id,
            parent_id=parent_id,
            checkpoint_id=checkpoint_id,
            id_checked_by_write=id_checked_by_write,
        )
        if recalled is not None:
            recalled.thread.workspace = workspace
            return recalled
    params = {
        "workspace": workspace.pk,
        "thread_id": thread_id,
        "namespace": namespace,
        "now": model_rows.adapt_datetime(now),
        "want_head": want_head,
        "parent_id": parent_id,
        "checkpoint_id": checkpoint_id,
    }
    sql = save_sql.save_context_sql(connection.vendor, lock=lock)
    with hot_cursor.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        if row is None:
            if not lock:
                raise ThreadChanged(thread_id)
            thread_insert_if_missing(workspace=workspace, thread_id=thread_id, now=now, user_id=user_id)
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if lock and not row[-1]:  # waited for the lock: read again in a snapshot taken while holding it
            cursor.execute(sql, params)
            row = cursor.fetchone()
    width = model_rows.width(Thread)
    thread = model_rows.load(Thread, row[:width])
    thread.workspace = workspace
    if user_id is not None and thread.user_id != user_id:
        raise NotFound(f"Thread {thread_id!r} not found.")
    head_id, head_step, parent_step, existing_pk, existing_live, _fresh = row[width:]
    live = None if existing_live is None else bool(existing_live)
    return SaveContext(thread, head_id, head_step, parent_step, existing_pk, live)


def _recalled(
    memo: thread_memo.Remembered | None,
    *,
    now: datetime,
    user_id: str | None,
    parent_id: str | None,
    checkpoint_id: str | None,
    id_checked_by_write: bool,
) -> SaveContext | None:
    """The save context a memo gives, if it answers everything the write asks: its head is still readable
    (expiry is decided at read time), the user matches (another user's thread is decided by a read), the
    named parent is that head, and the id is either free as far as the write's statement will check or
    that head itself (a pending write's checkpoint; a save retrying the head is decided by a read)."""
    if memo is None:
        return None
    head = memo.head
    if not head.is_readable(now) or (user_id is not None and memo.thread.user_id != user_id):
        return None
    if parent_id is not None and parent_id != head.checkpoint_id:
        return None
    is_head = checkpoint_id is not None and checkpoint_id == head.checkpoint_id
    if is_head == id_checked_by_write and checkpoint_id is not None:
        return None
    return SaveContext(
        thread=copy.copy(memo.thread),
        head_id=head.checkpoint_id,
        head_step=head.step_index,
        parent_step=head.step_index if parent_id is not None else None,
        existing_pk=head.pk if is_head else None,
        existing_live=True if is_head else None,
        from_memo=True,
    )


def _parent(context: SaveContext, *, namespace: str, parent_id: str | Unset | None) -> tuple[str, int] | None:
    """The parent's (checkpoint_id, step_index): the head when omitted, none when null, else the named
    checkpoint, which must exist in this thread and namespace (a tombstone is fine: lineage keeps
    tombstones)."""
    if parent_id is UNSET:
        if context.head_id is None or context.head_step is None:
            return None
        return context.head_id, context.head_step
    if parent_id is None:
        return None
    if context.parent_step is None:
        raise invalid_field(
            "parent_id", f"No checkpoint {parent_id!r} in namespace {namespace!r} of this thread."
        )
    return parent_id, context.parent_step


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
        # Field names as the API spells them.
        names = sorted({"parent_id" if f == "parent_checkpoint_id" else f for f in differing})
        raise Conflict(
            "A different checkpoint with this id already exists.",
            {"checkpoint_id": existing.checkpoint_id, "differing_fields": names},
        )
