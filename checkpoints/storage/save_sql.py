"""A save's two statements as static SQL: the context it decides from (thread, head, parent, the id's row),
then the touch of the thread and the insert of the checkpoint (with the parts its packed documents name),
written only if the thread is still as the save saw it.

It exists so that a save costs one or two trips to the database on PostgreSQL (one statement each,
prepared); the decisions (parent defaults, If-Match, retries, user scope, expiry) stay in
`services.checkpoint_save`. See docs/architecture.md, "The hot path" and "One save".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

from checkpoints.models import Checkpoint, Thread
from checkpoints.models.readable import READABLE
from checkpoints.models.thread import HeadMoved
from checkpoints.storage.hot_cursor import cursor, is_postgres
from checkpoints.storage.model_rows import (
    CHECKPOINT,
    THREAD,
    VALUE,
    adapt_datetime,
    adapted,
    column_name,
    columns,
    model_fields,
    preparation,
)

# Readable (`readable.READABLE`, the rule of CheckpointQuerySet.live()) for the row aliased `c`.
LIVE = READABLE.sql(Checkpoint, "c")

# What a save needs to know, read under the thread's row lock: the thread, the namespace's head (when
# wanted), the named parent's step (tombstones count: lineage keeps them) and whether the id is taken.
_HEAD = (
    f"FROM {CHECKPOINT} c WHERE %(want_head)s AND c.thread_id = t.id AND c.namespace = %(namespace)s "
    f"AND {LIVE} ORDER BY c.id DESC LIMIT 1"
)
_NAMED = f"FROM {CHECKPOINT} c WHERE c.thread_id = t.id AND c.namespace = %(namespace)s AND c.checkpoint_id"
# On PostgreSQL, a `SELECT ... FOR UPDATE` that waited for the lock returns the newest thread row but reads
# its subqueries in the snapshot taken before the wait. `fresh` says whether the two agree (the row the
# snapshot sees is the row locked); when not, the caller reads again, now holding the lock.
_FRESH = {"postgresql": f"t.xmin = (SELECT s.xmin FROM {THREAD} s WHERE s.id = t.id)", "sqlite": "1 = 1"}  # nosec B608 # table and column names from the models; every value is bound


@cache
def save_context_sql(vendor: str, *, lock: bool) -> str:
    """The save's first statement; with `lock`, it takes the thread's row lock (PostgreSQL)."""
    sql = (
        f"SELECT {columns(Thread, 't')}, "  # nosec B608 # table and column names from the models; every value is bound
        f"(SELECT c.checkpoint_id {_HEAD}), (SELECT c.step_index {_HEAD}), "
        f"(SELECT c.step_index {_NAMED} = %(parent_id)s), (SELECT c.id {_NAMED} = %(checkpoint_id)s), "
        f"(SELECT {LIVE} {_NAMED} = %(checkpoint_id)s), "
        f"{_FRESH[vendor]} "
        f"FROM {THREAD} t WHERE t.workspace_id = %(workspace)s AND t.thread_id = %(thread_id)s"
    )
    return f"{sql} FOR UPDATE OF t" if lock and vendor == "postgresql" else sql


class ThreadSeen(NamedTuple):
    """What a write decided from, as read (or remembered): its statement writes only if the thread still
    has these. Every write that may move a head bumps state_version (the head cache keys on it too)."""

    state_version: int
    ttl_seconds: int | None
    user_id: str | None


# The save's second statement touches the thread (updated_at, expires_at, state_version + 1) only if it is
# still as the save saw it (ThreadSeen) and the checkpoint's id is not taken in its namespace, and inserts
# the checkpoint only if it did. The checkpoint's message_seq is the thread's as the touch found it.
# Without a match nothing is written and the caller reads again.
_INSERT_FIELDS = [f for f in model_fields(Checkpoint, with_pk=False) if f.attname != "message_seq"]
_INSERT_COLUMNS = ", ".join([*(column_name(f) for f in _INSERT_FIELDS), "message_seq"])
_SAME = {"postgresql": "IS NOT DISTINCT FROM", "sqlite": "IS"}  # null-safe equality
_TOUCH = f"UPDATE {THREAD} SET updated_at = %s, expires_at = %s, {HeadMoved.sql()} "  # nosec B608 # table and column names from the models; every value is bound
_IF_UNCHANGED = {
    vendor: f"WHERE id = %s AND state_version = %s AND ttl_seconds {same} %s AND user_id {same} %s "  # nosec B608 # table and column names from the models; every value is bound
    f"AND NOT EXISTS (SELECT 1 FROM {CHECKPOINT} c WHERE c.thread_id = %s AND c.namespace = %s "
    "AND c.checkpoint_id = %s) "
    for vendor, same in _SAME.items()
}
_TOUCHED = "RETURNING last_message_seq"
_TOUCH_IF_UNCHANGED = {
    vendor: f"{_TOUCH}{unchanged}{_TOUCHED}" for vendor, unchanged in _IF_UNCHANGED.items()
}
_INSERT_TOUCHED = (
    f"INSERT INTO {CHECKPOINT} ({_INSERT_COLUMNS}) "  # nosec B608 # names from the models; values bound
    f"SELECT {', '.join(['%s'] * len(_INSERT_FIELDS))}, touched.last_message_seq FROM touched "
    "RETURNING id, message_seq"
)
_TOUCH_AND_INSERT = f"WITH touched AS ({_TOUCH_IF_UNCHANGED['postgresql']}) {_INSERT_TOUCHED}"
_INSERT = (
    f"INSERT INTO {CHECKPOINT} ({_INSERT_COLUMNS}) "  # nosec B608 # names from the models; values bound
    f"VALUES ({', '.join(['%s'] * (len(_INSERT_FIELDS) + 1))}) RETURNING id, message_seq"
)

# The parts of a save's packed documents (docs/storage.md): store what is missing, and mark what exists as
# used unless a save did since `stale`. ON CONFLICT takes each existing row's lock even when it updates
# nothing, so a concurrent collector's delete waits and re-checks `used_at` (`storage.stored_values`).
_PART_COLUMNS = "workspace_id, digest, body, size_bytes, used_at"
_STORE_PARTS = {
    "postgresql": f"INSERT INTO {VALUE} AS v ({_PART_COLUMNS}) "  # nosec B608 # names from models
    "SELECT %s, p.digest, p.body, p.size_bytes, %s FROM ROWS FROM (unnest(%s::bytea[]), "
    "unnest(%s::bigint[]), json_array_elements_text(%s::json)) AS p(digest, size_bytes, body) "
    "ON CONFLICT (workspace_id, digest) DO UPDATE SET used_at = EXCLUDED.used_at WHERE v.used_at < %s",
    "sqlite": f"INSERT INTO {VALUE} ({_PART_COLUMNS}) VALUES (%s, %s, %s, %s, %s) "  # nosec B608 # names from the models; values bound
    f"ON CONFLICT (workspace_id, digest) DO UPDATE SET used_at = excluded.used_at WHERE {VALUE}.used_at < %s",
}

# A save names, without sending them, the parts its process sent lately (`Parts.known`; docs/storage.md):
# it writes only if they are all still stored and it runs before `Parts.deadline` (by the database's clock,
# read after any wait for the thread's lock), and nothing otherwise (the caller then sends them).
_PARTS_KNOWN = (
    f"AND (%s = 0 OR (clock_timestamp() < %s AND (SELECT count(*) FROM {VALUE} v "  # nosec B608 # names from the models; values bound
    "WHERE v.workspace_id = %s AND v.digest = ANY(%s::bytea[])) = %s)) "
)
_STORE_PARTS_TOUCH_AND_INSERT = (
    f"WITH parts AS ({_STORE_PARTS['postgresql']}), "
    f"touched AS ({_TOUCH}{_IF_UNCHANGED['postgresql']}{_PARTS_KNOWN}{_TOUCHED}) {_INSERT_TOUCHED}"
)


@dataclass(frozen=True)
class Parts:
    """Parts to store for a save: their texts by digest, marked as used at `used_at` unless used since
    `stale`; and the digests of those it names without sending them (`known`: PostgreSQL only), which it
    may name only until `deadline`."""

    workspace_id: int
    texts: Mapping[bytes, str]
    used_at: datetime
    stale: datetime
    known: tuple[bytes, ...] = ()
    deadline: datetime | None = None

    def known_params(self) -> list[Any]:
        count = len(self.known)
        return [count, self.deadline or self.used_at, self.workspace_id, list(self.known), count]

    def postgres_params(self) -> list[Any]:
        """The texts go as one JSON array: psycopg escapes each element of a text[] in Python (4 ms for
        100 KB of JSON text), where json.dumps and PostgreSQL's JSON parser work in C."""
        sizes = [len(text.encode("utf-8")) for text in self.texts.values()]
        texts = json.dumps(list(self.texts.values()), ensure_ascii=False)
        return [self.workspace_id, self.used_at, list(self.texts), sizes, texts, self.stale]

    def sqlite_rows(self) -> list[list[Any]]:
        used_at, stale = adapt_datetime(self.used_at), adapt_datetime(self.stale)
        return [
            [self.workspace_id, digest, text, len(text.encode("utf-8")), used_at, stale]
            for digest, text in self.texts.items()
        ]


def store_parts(parts: Parts) -> None:
    """Store and mark the parts: one statement on PostgreSQL, one per part on SQLite (where one writer runs at
    a time)."""
    if not parts.texts:
        return
    with cursor() as c:
        store_parts_on(c, parts)


def store_parts_on(c: Any, parts: Parts) -> None:
    """`store_parts` on a cursor in hand (a pipeline's, whose statement goes with the ones after it)."""
    if not parts.texts:
        return
    if is_postgres():
        c.execute(_STORE_PARTS["postgresql"], parts.postgres_params())
    else:
        c.executemany(_STORE_PARTS["sqlite"], parts.sqlite_rows())


_INSERT_PREPARED = preparation(_INSERT_FIELDS)


def insert_checkpoint(
    checkpoint: Checkpoint,
    *,
    thread_touched: tuple[Any, Any],
    thread_seen: ThreadSeen,
    parts: Parts | None = None,
    in_steps: bool = False,
) -> tuple[int, int] | None:
    """Store the parts its packed documents name, touch the thread and insert the checkpoint if the thread is
    still as seen and the id is free. Returns the new primary key and message_seq, or None if the thread
    changed or a part named without its text (`parts.known`) is no longer stored (parts stored then are
    left to the collector).

    One statement on PostgreSQL. In steps (the same writes and checks, one statement each: `in_steps`, and
    always on SQLite, which has no data-modifying CTEs) it must run inside the save's transaction;
    `tests/storage/test_save_paths.py` runs the same saves both ways on PostgreSQL and compares the rows."""
    values = adapted(checkpoint, _INSERT_PREPARED)
    updated_at, expires_at = thread_touched
    touch = [
        adapt_datetime(updated_at),
        adapt_datetime(expires_at),
        checkpoint.thread_id,
        *thread_seen,
        checkpoint.thread_id,
        checkpoint.namespace,
        checkpoint.checkpoint_id,
    ]
    with cursor() as c:
        if in_steps or not is_postgres():
            return _insert_in_steps(c, touch, values, parts)
        if parts is not None and (parts.texts or parts.known):
            params = [*parts.postgres_params(), *touch, *parts.known_params(), *values]
            c.execute(_STORE_PARTS_TOUCH_AND_INSERT, params)
        else:
            c.execute(_TOUCH_AND_INSERT, [*touch, *values])
        row = c.fetchone()
        return None if row is None else (int(row[0]), int(row[1]))


def _insert_in_steps(
    c: Any, touch: list[Any], values: list[Any], parts: Parts | None
) -> tuple[int, int] | None:
    if parts is not None:
        assert not parts.known, "only the one statement checks parts named without their text"
        store_parts(parts)
    c.execute(_TOUCH_IF_UNCHANGED["postgresql" if is_postgres() else "sqlite"], touch)
    touched = c.fetchone()
    if touched is None:
        return None
    c.execute(_INSERT, [*values, touched[0]])
    row = c.fetchone()
    return int(row[0]), int(row[1])
