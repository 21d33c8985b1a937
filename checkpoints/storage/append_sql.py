"""The statements that add rows under a thread on PostgreSQL: tasks' pending writes (with their packed values'
parts and the thread's lock sent together with them) and a batch of messages, each touching the thread in
the same statement.

It exists so that a LangGraph `put_writes` and a message append cost one trip to the database; the services
decide what to write and fall back to the ORM elsewhere (docs/architecture.md, "The hot path").
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

from django.db import DEFAULT_DB_ALIAS, connection, connections

from checkpoints.models import Message, PendingWrite, Thread
from checkpoints.models.value import unpack_writes
from checkpoints.storage.hot_cursor import cursor
from checkpoints.storage.model_rows import (
    CHECKPOINT,
    MESSAGE,
    PENDING_WRITE,
    THREAD,
    column_name,
    columns,
    load,
    model_fields,
)
from checkpoints.storage.save_sql import LIVE, store_parts_on
from checkpoints.storage.stored_values import writes_packed

# A thread's idle expiry after a write at %(now)s, read from the row being updated: `expires_after` of
# checkpoints.services.thread_rows (None or 0: never), for a statement that does not know the thread's TTL.
THREAD_EXPIRES_AT = "CASE WHEN t.ttl_seconds > 0 THEN %(now)s + t.ttl_seconds * interval '1 second' END"

# Tasks' pending writes, stored in one statement: ordinary writes (idx >= 0) kept as first written, special
# ones (idx < 0) replacing the stored one, the thread touched; it answers with what is now stored for the
# tasks (the rows it wrote, and the rows it did not replace). It writes only if the thread exists in the
# workspace, is the given user's (if one is given), and every checkpoint the writes name, if it exists, is
# readable; it answers nothing otherwise. Each row names its namespace, checkpoint and task.
_THREAD_BY_ID = "t.workspace_id = %(workspace)s AND t.thread_id = %(thread_id)s"
_LOCK_THREAD = f"SELECT 1 FROM {THREAD} t WHERE {_THREAD_BY_ID} FOR NO KEY UPDATE"  # nosec B608 # names from the models; values bound
_WRITE_COLUMNS = (
    "thread_id, namespace, checkpoint_id, task_id, task_path, idx, channel, type, value, size_bytes, "
    "created_at"
)
_WRITE_KEY = "thread_id, namespace, checkpoint_id, task_id, idx"
_TASK = "namespace, checkpoint_id, task_id"
_INCOMING = (
    "SELECT touched.id, w.namespace, w.checkpoint_id, w.task_id, w.task_path, w.idx, w.channel, w.type, "
    "w.value, w.size_bytes, %(now)s FROM incoming w CROSS JOIN touched"
)
_PENDING_WRITES_PUT = (
    "WITH incoming AS (SELECT * FROM json_to_recordset(%(writes)s::json) AS w(namespace text, "
    "checkpoint_id text, task_id text, task_path text, idx int, channel text, type text, value text, "
    "size_bytes bigint)), "
    f"touched AS (UPDATE {THREAD} t SET updated_at = %(now)s, expires_at = {THREAD_EXPIRES_AT} "  # nosec B608 # names from the models; values bound
    f"WHERE {_THREAD_BY_ID} AND t.user_id IS NOT DISTINCT FROM coalesce(%(user_id)s, t.user_id) "
    f"AND NOT EXISTS (SELECT 1 FROM {CHECKPOINT} c WHERE c.thread_id = t.id "
    "AND (c.namespace, c.checkpoint_id) IN (SELECT namespace, checkpoint_id FROM incoming) "
    f"AND NOT ({LIVE})) RETURNING t.id), "
    f"ordinary AS (INSERT INTO {PENDING_WRITE} ({_WRITE_COLUMNS}) {_INCOMING} WHERE w.idx >= 0 "
    f"ON CONFLICT ({_WRITE_KEY}) DO NOTHING RETURNING {columns(PendingWrite, PENDING_WRITE)}), "
    f"special AS (INSERT INTO {PENDING_WRITE} ({_WRITE_COLUMNS}) {_INCOMING} WHERE w.idx < 0 "
    f"ON CONFLICT ({_WRITE_KEY}) DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, "
    "value = EXCLUDED.value, size_bytes = EXCLUDED.size_bytes, task_path = EXCLUDED.task_path, "
    "created_at = EXCLUDED.created_at "
    f"RETURNING {columns(PendingWrite, PENDING_WRITE)}) "
    "SELECT * FROM ordinary UNION ALL SELECT * FROM special UNION ALL "
    f"SELECT {columns(PendingWrite, 'p')} FROM {PENDING_WRITE} p CROSS JOIN touched "
    f"WHERE p.thread_id = touched.id AND ({_TASK}) IN (SELECT {_TASK} FROM incoming) "
    f"AND ({_TASK}, idx) NOT IN (SELECT {_TASK}, idx FROM special)"
)


def pending_writes_put(
    rows: list[PendingWrite], *, workspace: int, thread_id: str, user_id: str | None
) -> list[PendingWrite]:
    """On PostgreSQL: store tasks' writes (at most one row per task and idx) and touch their thread in one
    statement; returns what is now stored for those tasks, unordered (empty: nothing was written, see
    above).

    Outside a transaction, the statement runs in one transaction after one that takes the thread's row
    lock, both sent at once (psycopg's pipeline: one round trip). So its snapshot is taken once no other
    write holds the thread: every write that expires a checkpoint locks its thread first
    (docs/architecture.md, "Data model invariants"), so a checkpoint expired by then is seen expired, and
    one expired later waits for these writes. Inside a transaction the caller holds the lock already."""
    now = rows[0].created_at
    with writes_packed(rows, workspace_id=workspace, now=now) as parts:
        params = {
            "workspace": workspace,
            "thread_id": thread_id,
            "user_id": user_id,
            "now": now,
            # One JSON text, not arrays: psycopg escapes every element of a text array in Python.
            "writes": json.dumps(
                [
                    {
                        "namespace": r.namespace,
                        "checkpoint_id": r.checkpoint_id,
                        "task_id": r.task_id,
                        "task_path": r.task_path,
                        "idx": r.idx,
                        "channel": r.channel,
                        "type": r.type,
                        "value": r.value,
                        "size_bytes": r.size_bytes,
                    }
                    for r in rows
                ],
                ensure_ascii=False,
            ),
        }
    db = connections[DEFAULT_DB_ALIAS]
    with cursor() as c:
        if db.in_atomic_block:
            store_parts_on(c, parts)
            c.execute(_PENDING_WRITES_PUT, params)
        else:
            # The pipeline runs as one transaction: the parts are stored (and marked used) in it, first.
            with db.wrap_database_errors, db.connection.pipeline():
                store_parts_on(c, parts)
                c.execute(_LOCK_THREAD, params)
                c.execute(_PENDING_WRITES_PUT, params)
        stored = [load(PendingWrite, row) for row in c.fetchall()]
    unpack_writes(stored, workspace, parts.texts)
    return stored


# An append's first statement outside a transaction: the thread by its public id, and its last message's time
# (a seek on message_unique_seq).
THREAD_WITH_LAST_MESSAGE_TIME = (
    f"SELECT {columns(Thread, 't')}, (SELECT m.created_at FROM {MESSAGE} m WHERE m.thread_id = t.id "  # nosec B608 # names from the models; values bound
    "ORDER BY m.seq DESC LIMIT 1) "
    f"FROM {THREAD} t WHERE t.workspace_id = %(workspace)s AND t.thread_id = %(thread_id)s"
)


class AppendSeen(NamedTuple):
    """What an append decided from: its statement writes only if the thread still has these (an append in
    between moves last_message_seq)."""

    last_message_seq: int
    ttl_seconds: int | None
    user_id: str | None


_MESSAGE_FIELDS = [f for f in model_fields(Message, with_pk=False) if f.attname != "thread_id"]


@cache
def _messages_insert_sql() -> str:
    """Touch the thread and take the batch's seqs if it is still as seen, and insert the batch (one JSON
    array of records, in the columns' own types): the seqs were numbered from the seen last_message_seq."""
    names = ", ".join(column_name(f) for f in _MESSAGE_FIELDS)
    record = ", ".join(f"{column_name(f)} {f.db_type(connection)}" for f in _MESSAGE_FIELDS)
    return (
        f"WITH touched AS (UPDATE {THREAD} SET last_message_seq = last_message_seq + %(count)s, "  # nosec B608 # names from the models; values bound
        "updated_at = %(updated_at)s, expires_at = %(expires_at)s WHERE id = %(thread)s "
        "AND last_message_seq = %(seen_seq)s AND ttl_seconds IS NOT DISTINCT FROM %(seen_ttl)s "
        "AND user_id IS NOT DISTINCT FROM %(seen_user)s RETURNING id) "
        f"INSERT INTO {MESSAGE} (thread_id, {names}) SELECT touched.id, {names} FROM touched "
        f"CROSS JOIN jsonb_to_recordset(%(rows)s::jsonb) AS m({record}) RETURNING id, seq"
    )


def messages_insert(
    rows: list[Message], *, thread_touched: tuple[Any, Any], seen: AppendSeen
) -> dict[int, int] | None:
    """On PostgreSQL, outside a transaction: insert a batch of one thread's messages (their seqs numbered
    from `seen`) and touch the thread in one statement, if the thread is still as seen. Returns each
    message's primary key by seq, or None if the thread changed (nothing was written)."""
    records = [
        {
            column_name(f): value.isoformat() if isinstance(value, datetime) else value
            for f in _MESSAGE_FIELDS
            for value in (getattr(row, f.attname),)
        }
        for row in rows
    ]
    params = {
        "count": len(rows),
        "updated_at": thread_touched[0],
        "expires_at": thread_touched[1],
        "thread": rows[0].thread_id,
        "seen_seq": seen.last_message_seq,
        "seen_ttl": seen.ttl_seconds,
        "seen_user": seen.user_id,
        "rows": json.dumps(records, ensure_ascii=False),
    }
    with cursor() as c:
        c.execute(_messages_insert_sql(), params)
        inserted = c.fetchall()
    return {int(seq): int(pk) for pk, seq in inserted} if inserted else None
