"""Messages: batch append with gapless per-thread seqs and idempotent retries by message_id; delete one.

Seqs come from `Thread.last_message_seq`: each batch takes the next block of numbers, strictly increasing and
gapless in commit order. On PostgreSQL outside a transaction an append reads the thread (or, on a thread
this process appended to last, recalls it: `thread_memo`), then writes in one statement that takes the
block only if `last_message_seq` is still the one it read (the update holds the
row lock until it commits, so a concurrent appender's statement waits, then finds the thread moved); a
batch that finds it moved runs again under the thread's row lock (`thread_lock_or_create`), as every append
inside a transaction or on SQLite does. A batch is stored whole or (on any conflict) not at all.

A thread's message page is read by one static statement unless a FilterSet filters it (`MessagePages`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache, partial
from typing import Any, ClassVar

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from checkpoints.exceptions import Conflict, NotFound, ValidationFailed
from checkpoints.ids import new_id
from checkpoints.integrity import canonical_json
from checkpoints.models import Message, Thread, Workspace
from checkpoints.models.thread import CLIENT_ID_PATTERN, NEVER_RENDERED, MessageQuerySet
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.checkpoint_save import ThreadChanged, optimistic_then_locking
from checkpoints.services.medallion_summaries import medallion_maybe_autosummarize
from checkpoints.services.search import message_search_text
from checkpoints.services.thread_rows import (
    thread_lock,
    thread_lock_or_create,
    thread_touch,
    thread_touch_values,
)
from checkpoints.storage import append_sql, hot_cursor, model_rows, thread_memo
from checkpoints.storage.keyset import Seek, seek_params, seek_sql

MAX_BATCH = 1000
MAX_CONTENT_CHARS = 1024 * 1024
TEXT_FIELDS = ("content", "tool_call_id", "name")
JSON_FIELDS = ("content_blocks", "tool_calls", "usage", "metadata")
# What a message is; an idempotent retry must repeat all of it.
CONTENT_FIELDS = ("role", *TEXT_FIELDS, *JSON_FIELDS)

_CLIENT_ID = re.compile(rf"{CLIENT_ID_PATTERN}\Z")
_ROLES = frozenset(Message.Role.values)


def message_size_bytes(fields: Mapping[str, Any]) -> int:
    """UTF-8 bytes of a message as sent: its text fields plus the canonical JSON of its JSON fields."""
    text = sum(len((fields.get(name) or "").encode("utf-8")) for name in TEXT_FIELDS)
    documents = sum(
        len(canonical_json(fields[name]).encode("utf-8"))
        for name in JSON_FIELDS
        if fields.get(name) is not None
    )
    return text + documents


def _fields(position: int, raw: Mapping[str, Any]) -> dict[str, Any]:
    """One message's stored fields with defaults filled in (absent and null mean the same), checked for the
    invariants the database relies on. The API serializer has already checked types and shapes in detail."""
    defaults = {"content": "", "tool_call_id": "", "name": "", "metadata": {}}
    fields: dict[str, Any] = {
        name: defaults.get(name) if raw.get(name) is None else raw[name]
        for name in ("message_id", *CONTENT_FIELDS)
    }
    problems: dict[str, list[str]] = {}
    if fields["role"] not in _ROLES:
        problems["role"] = [f"Expected one of {', '.join(sorted(_ROLES))}."]
    message_id = fields["message_id"]
    if message_id is not None and not (isinstance(message_id, str) and _CLIENT_ID.match(message_id)):
        problems["message_id"] = ["Use 1-128 characters from A-Z a-z 0-9 . _ : -"]
    for name in TEXT_FIELDS:
        if not isinstance(fields[name], str):
            problems[name] = ["Expected a string."]
    if isinstance(fields["content"], str) and len(fields["content"]) > MAX_CONTENT_CHARS:
        problems["content"] = [f"Expected a string of at most {MAX_CONTENT_CHARS} characters."]
    if not isinstance(fields["metadata"], dict):
        problems["metadata"] = ["Expected a JSON object."]
    if problems:
        raise ValidationFailed(
            f"messages[{position}] is invalid.", {"fields": {"messages": {str(position): problems}}}
        )
    return fields


def _differing_fields(stored: Message, sent: Mapping[str, Any]) -> list[str]:
    """Fields where a retry differs from the stored message. JSON is compared canonically: 1 is not 1.0 or
    true (Python's == says it is), and key order does not matter."""
    differing = [name for name in ("role", *TEXT_FIELDS) if getattr(stored, name) != sent[name]]
    for name in JSON_FIELDS:
        before, after = getattr(stored, name), sent[name]
        if (before is None) != (after is None) or (
            before is not None and canonical_json(before) != canonical_json(after)
        ):
            differing.append(name)
    return differing


def messages_append(
    *,
    workspace: Workspace,
    thread_id: str,
    messages: list[dict[str, Any]],
    user_id: str | None = None,
) -> list[Message]:
    """Append 1..1000 messages in order; the thread is created if missing. Returns them in batch order.

    - seq: the thread's next numbers, strictly increasing and gapless per thread in commit order.
    - message_id: optional (a UUIDv7 is assigned). A known id with identical content is an idempotent no-op
      (the stored message, with its original seq, is returned); with different content: Conflict, and nothing
      of the batch is stored.
    - created_at: strictly increasing within the batch and after the thread's previous message, so time order
      and seq order agree.
    - user_id: when given, the thread must belong to that user (NotFound otherwise, as if it did not exist);
      a thread created here gets it.
    Appends touch the thread (updated_at, idle expiry) but never move a checkpoint head.
    """
    if not 1 <= len(messages) <= MAX_BATCH:
        raise ValidationFailed(f"Send 1 to {MAX_BATCH} messages.", {"count": len(messages)})
    incoming = [_fields(position, raw) for position, raw in enumerate(messages)]
    given_ids = [m["message_id"] for m in incoming if m["message_id"] is not None]
    if len(set(given_ids)) != len(given_ids):
        repeated = sorted({i for i in given_ids if given_ids.count(i) > 1})
        raise ValidationFailed("A message_id appears twice in the batch.", {"message_ids": repeated})
    return _append(workspace=workspace, thread_id=thread_id, incoming=incoming, user_id=user_id)


@optimistic_then_locking
def _append(
    *, workspace: Workspace, thread_id: str, incoming: list[dict[str, Any]], user_id: str | None
) -> list[Message]:
    """The batch's write: on PostgreSQL outside a transaction, a read of the thread (or this process's memo
    of its last append there) and one statement that writes only if no other write moved the thread's
    messages since (else ThreadChanged: it runs again, from a read if it recalled, else locked); inside one
    (and on SQLite), under the thread's row lock."""
    now = timezone.now()
    thread, previous, from_memo = _thread_and_last_message_time(
        workspace=workspace, thread_id=thread_id, now=now, user_id=user_id
    )
    # Outside a transaction the write finds stored ids itself: the insert refuses a taken one (unique per
    # thread), and the batch runs again, locked, to answer the retry or the conflict.
    given_ids = [m["message_id"] for m in incoming if m["message_id"] is not None]
    looked_up = given_ids if connection.in_atomic_block else []
    stored = (
        {m.message_id: m for m in Message.objects.filter(thread=thread, message_id__in=looked_up)}
        if looked_up
        else {}
    )
    conflicts = {
        message_id: differing
        for message_id, differing in (
            (m["message_id"], _differing_fields(stored[m["message_id"]], m))
            for m in incoming
            if m["message_id"] in stored
        )
        if differing
    }
    if conflicts:
        raise Conflict(
            "A different message with this message_id already exists in the thread; nothing was stored.",
            {"conflicts": [{"message_id": i, "differing_fields": d} for i, d in conflicts.items()]},
        )

    fresh = [m for m in incoming if m["message_id"] not in stored]
    inserted = _insert(thread, fresh, previous, now, from_memo=from_memo) if fresh else []
    if inserted and connection.vendor == "postgresql":  # once committed, the next append may start from it
        memo = thread_memo.appended(thread, inserted[-1].created_at)
        transaction.on_commit(partial(thread_memo.remember_append, memo))
    if inserted:
        # The workspace may ask for a medallion summary every N messages: checked once committed.
        transaction.on_commit(
            lambda: medallion_maybe_autosummarize(thread=thread, workspace=workspace), robust=True
        )
    created = iter(inserted)
    # `fresh` keeps batch order, so the new rows come back in the order they are needed here.
    return [stored[m["message_id"]] if m["message_id"] in stored else next(created) for m in incoming]


def _thread_and_last_message_time(
    *, workspace: Workspace, thread_id: str, now: datetime, user_id: str | None
) -> tuple[Thread, datetime | None, bool]:
    """The thread (another user's is NotFound), its last message's time, and whether both came from this
    process's memo of its last append there (`thread_memo`; the write checks they are still true). Inside a
    transaction the thread is locked, and created if missing; outside one they are remembered or one
    unlocked read, and a missing thread is ThreadChanged (the locked run creates it)."""
    if connection.in_atomic_block:
        thread = thread_lock_or_create(workspace=workspace, thread_id=thread_id, now=now, user_id=user_id)
        last = Message.objects.filter(thread=thread).order_by("-seq").values_list("created_at", flat=True)
        return thread, last.first(), False
    memo = thread_memo.recall_append(workspace.pk, thread_id)
    if memo is not None and (user_id is None or memo.thread.user_id == user_id):  # a memo never refuses
        thread = copy.copy(memo.thread)
        thread.workspace = workspace
        return thread, memo.last_message_at, True
    with hot_cursor.cursor() as cursor:
        cursor.execute(
            append_sql.THREAD_WITH_LAST_MESSAGE_TIME, {"workspace": workspace.pk, "thread_id": thread_id}
        )
        row = cursor.fetchone()
    if row is None:
        raise ThreadChanged(thread_id)
    thread = model_rows.load(Thread, row[:-1])
    thread.workspace = workspace
    if user_id is not None and thread.user_id != user_id:
        raise NotFound(f"Thread {thread_id!r} not found.")
    return thread, row[-1], False


def _insert(
    thread: Thread, fresh: list[dict[str, Any]], previous: datetime | None, now: datetime, *, from_memo: bool
) -> list[Message]:
    """Insert new messages with the thread's next seqs, after its last message's time (`previous`), and
    touch the thread: in one statement outside a transaction (ThreadChanged if the thread moved since it
    was read or remembered), else under the thread lock the caller holds."""
    # Another process's clock may be ahead of ours: never go back in time within a thread.
    start = now if previous is None or previous < now else previous + timedelta(microseconds=1)
    seen = append_sql.AppendSeen(thread.last_message_seq, thread.ttl_seconds, thread.user_id)
    rows = [
        Message(
            thread=thread,
            seq=thread.last_message_seq + offset + 1,
            message_id=fields["message_id"] or new_id(),
            role=fields["role"],
            content=fields["content"],
            content_blocks=fields["content_blocks"],
            tool_calls=fields["tool_calls"],
            tool_call_id=fields["tool_call_id"],
            name=fields["name"],
            usage=fields["usage"],
            metadata=fields["metadata"],
            search_text=message_search_text(fields["content"], fields["content_blocks"]),
            size_bytes=message_size_bytes(fields),
            created_at=start + timedelta(microseconds=offset),
        )
        for offset, fields in enumerate(fresh)
    ]
    thread.last_message_seq += len(rows)
    touched = thread_touch_values(thread, now=now)
    if connection.in_atomic_block:
        Message.objects.bulk_create(rows)
        # The seq and the touch in one statement.
        Thread.objects.filter(pk=thread.pk).update(last_message_seq=thread.last_message_seq, **touched)
        return rows
    try:
        pks = append_sql.messages_insert(rows, thread_touched=(now, thread.expires_at), seen=seen)
    except IntegrityError:  # a message_id already stored: the locked run finds it and decides
        pks = None
    if pks is None:
        if from_memo:
            thread_memo.forget_append(thread.workspace_id, thread.thread_id)
        raise ThreadChanged(thread.thread_id, from_memo=from_memo)
    for row in rows:
        row.pk = pks[row.seq]
    return rows


@transaction.atomic
def message_delete(*, message: Message, actor: Actor) -> None:
    """Delete one message (its seq is not reused: later appends keep counting from the thread's last seq)."""
    missing = f"Message {message.message_id!r} not found."
    thread = thread_lock(message.thread_id, missing=missing)
    deleted, _ = Message.objects.filter(pk=message.pk).delete()
    if not deleted:
        raise NotFound(missing)
    thread_touch(thread, now=timezone.now())
    audit_record(
        workspace=thread.workspace,
        actor=actor,
        action="message.delete",
        target_type="message",
        target_id=f"{thread.thread_id}/{message.message_id}",
        details={"seq": message.seq},
    )


# A page of a thread's messages by one static statement: a seek on `message_unique_seq`.
@cache
def _message_page_sql(ordering: tuple[str, ...], *, after: bool) -> str:
    seek, order = seek_sql(Message, "m", ordering, after=after)
    return (
        f"SELECT {model_rows.columns(Message, 'm', NEVER_RENDERED)} FROM {model_rows.MESSAGE} m "  # nosec B608 # names from the models; values bound
        f"WHERE m.thread_id = %(thread)s{f' AND {seek}' if seek else ''} ORDER BY {order} LIMIT %(limit)s"
    )


@dataclass(frozen=True)
class MessagePages:
    """A thread's messages as a list reads them: by one static statement (`read`), or as a queryset when a
    FilterSet filters the list further."""

    model: ClassVar[type[Message]] = Message
    thread: Thread

    def queryset(self) -> MessageQuerySet:
        return Message.objects.filter(thread=self.thread).for_display()

    def read(self, seek: Seek) -> list[Message]:
        params = {"thread": self.thread.pk, "limit": seek.limit, **seek_params(seek)}
        with hot_cursor.cursor() as cursor:
            cursor.execute(_message_page_sql(tuple(seek.ordering), after=seek.position is not None), params)
            rows = cursor.fetchall()
        return [model_rows.load(Message, row, NEVER_RENDERED) for row in rows]
