"""The statements agents run on every step, as static SQL: written once, for PostgreSQL and SQLite, and on
PostgreSQL bound server-side and prepared (parsed and planned once per connection).

The ORM stays the way to everything else; here it only lends its definitions: column lists come from the
models' fields, values are adapted and rows converted with Django's own per-field code, and rows come back
as model instances. The decisions (parent defaults, If-Match, retries, user scope, expiry) stay in the
services; this module only fetches and stores. See docs/architecture.md, "The hot path".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from functools import cache
from typing import Any, NamedTuple, TypeVar

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from psycopg.pq import Format

from checkpoints import packing
from checkpoints.models import Checkpoint, Message, PendingWrite, StoredValue, Thread
from checkpoints.models.value import put_parts_back, unpack
from checkpoints.parts import enabled

M = TypeVar("M", bound=models.Model)

CHECKPOINT = Checkpoint._meta.db_table
THREAD = Thread._meta.db_table
PENDING_WRITE = PendingWrite._meta.db_table
VALUE = StoredValue._meta.db_table
MESSAGE = Message._meta.db_table
TIMESTAMPTZ = "timestamptz"
TIMESTAMPTZ_OID = psycopg.adapters.types[TIMESTAMPTZ].oid


def _fields(
    model: type[models.Model], *, with_pk: bool = True, skip: tuple[str, ...] = ()
) -> list[models.Field[Any, Any]]:
    fields = model._meta.concrete_fields
    return [f for f in fields if (with_pk or not f.primary_key) and f.attname not in skip]


def _column(field: models.Field[Any, Any]) -> str:
    assert field.column is not None  # concrete fields have a column
    return field.column


def columns(model: type[models.Model], alias: str, skip: tuple[str, ...] = ()) -> str:
    """The model's columns in field order, those of the fields named in `skip` left out (`load` takes a
    row of them)."""
    return ", ".join(f"{alias}.{_column(f)}" for f in _fields(model, skip=skip))


# The rule of CheckpointQuerySet.live() for the row aliased `c`: not a tombstone, not past its expiry.
LIVE = "c.expired_at IS NULL AND (c.pinned OR c.expires_at IS NULL OR c.expires_at > %(now)s)"

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
_INSERT_FIELDS = [f for f in _fields(Checkpoint, with_pk=False) if f.attname != "message_seq"]
_INSERT_COLUMNS = ", ".join([*(_column(f) for f in _INSERT_FIELDS), "message_seq"])
_SAME = {"postgresql": "IS NOT DISTINCT FROM", "sqlite": "IS"}  # null-safe equality
_TOUCH = f"UPDATE {THREAD} SET updated_at = %s, expires_at = %s, state_version = state_version + 1 "  # nosec B608 # table and column names from the models; every value is bound
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
# nothing, so a concurrent collector's delete waits and re-checks `used_at` (services.stored_values).
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
        if _postgres():
            c.execute(_STORE_PARTS["postgresql"], parts.postgres_params())
        else:
            c.executemany(_STORE_PARTS["sqlite"], parts.sqlite_rows())


# A thread by its public id (every thread-scoped read starts here).
THREAD_BY_ID = (
    f"SELECT {columns(Thread, 't')} FROM {THREAD} t "  # nosec B608 # names from the models; values bound
    "WHERE t.workspace_id = %(workspace)s AND t.thread_id = %(thread_id)s"
)


# The parts a row's packed state and context name (PostgreSQL; the header format is checkpoints.packing's):
# their names with each text's length, as JSON ([[name, length or null], ...]), and their texts run together.
# A restore thus fetches its parts in its own statement, and their text travels as it is stored (escaped as
# JSON, it cost server and client time in proportion to the state).
def _header(column: str) -> str:
    return f"CASE WHEN left({column}, 1) = '{packing.MARK}' THEN split_part({column}, E'\\n', 1) ELSE '' END"


PARTS_OF_ROW = {
    "postgresql": "LEFT JOIN LATERAL (SELECT json_agg(json_build_array(r.m[1], length(v.body)) "  # nosec B608 # names from the models
    "ORDER BY r.n)::text AS names, string_agg(v.body, '' ORDER BY r.n) AS texts "
    f"FROM regexp_matches({_header('c.state')} || ',' || {_header('c.context')}, "
    f"':({packing.NAME_PATTERN})', 'g') WITH ORDINALITY AS r(m, n) LEFT JOIN {VALUE} v "
    "ON v.workspace_id = c.workspace_id AND v.digest = decode(translate(r.m[1], '-_', '+/') || '=', 'base64')"
    ") p ON true",
    "sqlite": "",  # unpack() reads them, in-process
}
PARTS_COLUMNS = {"postgresql": "p.names, p.texts", "sqlite": "NULL, NULL"}


@cache
def checkpoint_in_thread_sql(vendor: str, *, in_namespace: bool) -> str:
    """A checkpoint of a thread by public ids, with its thread and its parts: restore, and every checkpoint
    sub-resource. No ORDER BY: with one, a planner short of statistics (a young table) may walk a timeline
    index backwards to satisfy it; the few candidates (one per namespace holding the id) are ordered by the
    caller."""
    namespace = " AND c.namespace = %(namespace)s" if in_namespace else ""
    return (
        f"SELECT {columns(Checkpoint, 'c')}, {columns(Thread, 't')}, {PARTS_COLUMNS[vendor]} "  # nosec B608 # table and column names from the models; every value is bound
        f"FROM {CHECKPOINT} c JOIN {THREAD} t ON t.id = c.thread_id {PARTS_OF_ROW[vendor]} "
        "WHERE t.workspace_id = %(workspace)s "
        "AND c.workspace_id = %(workspace)s AND t.thread_id = %(thread_id)s "
        f"AND c.checkpoint_id = %(checkpoint_id)s{namespace} LIMIT 10"
    )


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def cursor() -> Any:
    """A cursor for these statements, for `with cursor() as c:`. On PostgreSQL it binds parameters
    server-side and prepares every statement (Django's own cursors interpolate on the client and never
    prepare); it is wrapped like any Django cursor, so it counts in tests and maps errors the same way. It
    is kept and used again on the same connection of the same thread (psycopg keeps, per cursor, the
    loaders and dumpers it looked up for the statements' columns and values): leaving the `with` does not
    close it, and it holds its last result until the next statement. While queries are logged (DEBUG,
    tests capturing queries) Django's own cursor runs them, so the log shows each one whole, ready to
    EXPLAIN."""
    db = connections[DEFAULT_DB_ALIAS]  # once: each `django.db.connection.x` looks up the thread's connection
    if db.vendor != "postgresql" or db.queries_logged or not enabled("prepared_statements"):
        return db.cursor()
    db.close_if_health_check_failed()
    db.ensure_connection()
    kept: tuple[Any, Any] | None = getattr(_kept, "cursor", None)  # (psycopg connection, wrapped cursor)
    if kept is not None and kept[0] is db.connection and not kept[1].cursor.closed:
        db.validate_thread_sharing()
        return _Open(kept[1])
    with db.wrap_database_errors:
        raw = _prepared_cursor_class()(db.connection)
        _load_timestamps_natively(raw, db.timezone)
        wrapped = db.make_cursor(raw)  # Django's wrapping of a cursor (queries are not logged here)
    _kept.cursor = (db.connection, wrapped)
    return _Open(wrapped)


def _load_timestamps_natively(raw: Any, timezone: tzinfo | None) -> None:
    """psycopg's own `timestamptz` loader on the hot cursor where it gives what Django's gives. Django's
    (written in Python) loads as psycopg's does, then sets the zone to the connection's (`timezone`); it is
    psycopg's own zone whenever the session's TimeZone is that zone, as Django makes it, and psycopg's
    loader is compiled (a restore loads three of them)."""
    if timezone is not None and raw.connection.info.timezone is timezone:
        raw.adapters.register_loader(TIMESTAMPTZ, psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT))


# The hot cursor of each thread's connection (Django's connections are per thread too).
_kept = threading.local()


class _Open:
    """`with` around a kept cursor: gives it, and leaves it open."""

    __slots__ = ("_cursor",)

    def __init__(self, kept: Any) -> None:
        self._cursor = kept

    def __enter__(self) -> Any:
        return self._cursor

    def __exit__(self, *exc: object) -> None:
        return None


@cache
def _prepared_cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor

    class PreparedCursor(ServerBindingCursor):
        def execute(
            self, query: Any, params: Any = None, *, prepare: bool | None = True, **kwargs: Any
        ) -> Any:
            return super().execute(query, params, prepare=prepare, **kwargs)  # type: ignore[misc]

    return PreparedCursor


# Django's own field classes whose preparation for the database (`get_db_prep_save`) gives back a value of
# this exact type, or None, as it is, on every backend. Such values skip it; a subclass of these, any other
# field and any other value are prepared by Django. (Not integers: on psycopg 3 Django sends each as the
# column's own integer type.)
_KEPT_AS_IS: dict[type[models.Field[Any, Any]], type] = {
    models.CharField: str,
    models.TextField: str,
    models.BooleanField: bool,
}


class Prepared(NamedTuple):
    """How one field's value is prepared for a statement: its attribute, and the type kept as it is."""

    attname: str
    kept: type | None
    field: models.Field[Any, Any]


def preparation(fields: Sequence[models.Field[Any, Any]]) -> tuple[Prepared, ...]:
    """For `adapted`: worked out once per statement's field list."""

    return tuple(Prepared(field.attname, _KEPT_AS_IS.get(type(field)), field) for field in fields)


def adapted(instance: models.Model, fields: Sequence[Prepared]) -> list[Any]:
    """The fields' values as the database takes them: Django's own per-field preparation, skipped for the
    values it would give back as they are (`_KEPT_AS_IS`)."""
    db = connections[DEFAULT_DB_ALIAS]  # once: through `django.db.connection`, each field would look it up
    values = []
    for attname, kept, field in fields:
        value = getattr(instance, attname)
        if kept is None or (value is not None and type(value) is not kept):
            value = field.get_db_prep_save(value, db)
        values.append(value)
    return values


_INSERT_PREPARED = preparation(_INSERT_FIELDS)


def adapt_datetime(value: Any) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


@cache
def _loading(
    model: type[models.Model], vendor: str, skip: tuple[str, ...]
) -> tuple[list[str], list[tuple[int, Any, list[Any]]]]:
    """The attnames of `columns(model, alias, skip)` in order, and for each field with converters its
    position, column expression and Django's converters (the backend's, then the field's)."""
    table = model._meta.db_table
    converted = []
    for index, field in enumerate(_fields(model, skip=skip)):
        column = field.get_col(table)
        converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if converters:
            converted.append((index, column, converters))
    return [field.attname for field in _fields(model, skip=skip)], converted


def load(model: type[M], values: Sequence[Any], skip: tuple[str, ...] = ()) -> M:
    """A model instance from a row of `columns(model, alias, skip)`, as `Model.from_db` makes it (the
    fields in `skip` deferred)."""
    db = connections[DEFAULT_DB_ALIAS]
    attnames, converted = _loading(model, db.vendor, skip)
    row = list(values)
    for index, column, converters in converted:
        value = row[index]
        for converter in converters:
            value = converter(value, column, db)
        row[index] = value
    return model.from_db(db.alias, attnames, row)


def width(model: type[models.Model], skip: tuple[str, ...] = ()) -> int:
    return len(_fields(model, skip=skip))


def load_checkpoint_with_thread(row: Sequence[Any], workspace: Any) -> Checkpoint:
    """A row of `checkpoint_in_thread_sql` as a checkpoint whose thread (and its workspace) are in hand, its
    packed documents whole again."""
    split = width(Checkpoint)
    checkpoint = load(Checkpoint, row[:split])
    thread = load(Thread, row[split:-2])  # joined on the checkpoint's thread, in the workspace
    checkpoint.thread = thread
    checkpoint.workspace = workspace
    thread.workspace = workspace
    if not put_fetched_parts(checkpoint, *row[-2:]):
        unpack([checkpoint])
    return checkpoint


def put_fetched_parts(checkpoint: Checkpoint, names: str | None, texts: str | None) -> bool:
    """Assemble a checkpoint's packed documents from the parts its row fetched (`PARTS_COLUMNS`); False if
    the row fetched none (SQLite, or no packed document): `unpack` then reads what it names."""
    if names is None:
        return False
    parts, start = {}, 0
    for name, length in json.loads(names):
        if length is not None:
            parts[packing.digest_named(name)] = (texts or "")[start : start + length]
            start += length
    put_parts_back(checkpoint, parts)
    return True


def insert_checkpoint(
    checkpoint: Checkpoint,
    *,
    thread_touched: tuple[Any, Any],
    thread_seen: ThreadSeen,
    parts: Parts | None = None,
) -> tuple[int, int] | None:
    """Store the parts its packed documents name, touch the thread and insert the checkpoint if the thread is
    still as seen and the id is free: one statement on PostgreSQL, two or more on SQLite
    (no data-modifying CTEs; it runs inside the save's transaction). Returns the new primary key and
    message_seq, or None if the thread changed or a part named without its text (`parts.known`) is no longer
    stored (parts stored then are left to the collector)."""
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
        if _postgres():
            if parts is not None and (parts.texts or parts.known):
                params = [*parts.postgres_params(), *touch, *parts.known_params(), *values]
                c.execute(_STORE_PARTS_TOUCH_AND_INSERT, params)
            else:
                c.execute(_TOUCH_AND_INSERT, [*touch, *values])
            row = c.fetchone()
            return None if row is None else (int(row[0]), int(row[1]))
        if parts is not None:
            assert not parts.known, "only PostgreSQL checks parts named without their text"
            store_parts(parts)
        c.execute(_TOUCH_IF_UNCHANGED["sqlite"], touch)
        touched = c.fetchone()
        if touched is None:
            return None
        c.execute(_INSERT, [*values, touched[0]])
        row = c.fetchone()
        return int(row[0]), int(row[1])


# A thread's idle expiry after a write at %(now)s, read from the row being updated: `expires_after` of
# checkpoints.services.thread_rows (None or 0: never), for a statement that does not know the thread's TTL.
_THREAD_EXPIRES_AT = "CASE WHEN t.ttl_seconds > 0 THEN %(now)s + t.ttl_seconds * interval '1 second' END"

# Tasks' pending writes, stored in one statement: ordinary writes (idx >= 0) kept as first written, special
# ones (idx < 0) replacing the stored one, the thread touched; it answers with what is now stored for the
# tasks (the rows it wrote, and the rows it did not replace). It writes only if the thread exists in the
# workspace, is the given user's (if one is given), and every checkpoint the writes name, if it exists, is
# readable; it answers nothing otherwise. Each row names its namespace, checkpoint and task.
_THREAD_BY_ID = "t.workspace_id = %(workspace)s AND t.thread_id = %(thread_id)s"
_LOCK_THREAD = f"SELECT 1 FROM {THREAD} t WHERE {_THREAD_BY_ID} FOR NO KEY UPDATE"  # nosec B608 # names from the models; values bound
_WRITE_COLUMNS = (
    "thread_id, namespace, checkpoint_id, task_id, task_path, idx, channel, type, value, created_at"
)
_WRITE_KEY = "thread_id, namespace, checkpoint_id, task_id, idx"
_TASK = "namespace, checkpoint_id, task_id"
_INCOMING = (
    "SELECT touched.id, w.namespace, w.checkpoint_id, w.task_id, w.task_path, w.idx, w.channel, w.type, "
    "w.value, %(now)s FROM incoming w CROSS JOIN touched"
)
_PENDING_WRITES_PUT = (
    "WITH incoming AS (SELECT * FROM json_to_recordset(%(writes)s::json) AS w(namespace text, "
    "checkpoint_id text, task_id text, task_path text, idx int, channel text, type text, value text)), "
    f"touched AS (UPDATE {THREAD} t SET updated_at = %(now)s, expires_at = {_THREAD_EXPIRES_AT} "  # nosec B608 # names from the models; values bound
    f"WHERE {_THREAD_BY_ID} AND t.user_id IS NOT DISTINCT FROM coalesce(%(user_id)s, t.user_id) "
    f"AND NOT EXISTS (SELECT 1 FROM {CHECKPOINT} c WHERE c.thread_id = t.id "
    "AND (c.namespace, c.checkpoint_id) IN (SELECT namespace, checkpoint_id FROM incoming) "
    f"AND NOT ({LIVE})) RETURNING t.id), "
    f"ordinary AS (INSERT INTO {PENDING_WRITE} ({_WRITE_COLUMNS}) {_INCOMING} WHERE w.idx >= 0 "
    f"ON CONFLICT ({_WRITE_KEY}) DO NOTHING RETURNING {columns(PendingWrite, PENDING_WRITE)}), "
    f"special AS (INSERT INTO {PENDING_WRITE} ({_WRITE_COLUMNS}) {_INCOMING} WHERE w.idx < 0 "
    f"ON CONFLICT ({_WRITE_KEY}) DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, "
    "value = EXCLUDED.value, task_path = EXCLUDED.task_path, created_at = EXCLUDED.created_at "
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
    params = {
        "workspace": workspace,
        "thread_id": thread_id,
        "user_id": user_id,
        "now": rows[0].created_at,
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
                }
                for r in rows
            ],
            ensure_ascii=False,
        ),
    }
    db = connections[DEFAULT_DB_ALIAS]
    with cursor() as c:
        if db.in_atomic_block:
            c.execute(_PENDING_WRITES_PUT, params)
        else:
            with db.wrap_database_errors, db.connection.pipeline():
                c.execute(_LOCK_THREAD, params)
                c.execute(_PENDING_WRITES_PUT, params)
        return [load(PendingWrite, row) for row in c.fetchall()]


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


_MESSAGE_FIELDS = [f for f in _fields(Message, with_pk=False) if f.attname != "thread_id"]


@cache
def _messages_insert_sql() -> str:
    """Touch the thread and take the batch's seqs if it is still as seen, and insert the batch (one JSON
    array of records, in the columns' own types): the seqs were numbered from the seen last_message_seq."""
    names = ", ".join(_column(f) for f in _MESSAGE_FIELDS)
    record = ", ".join(f"{_column(f)} {f.db_type(connection)}" for f in _MESSAGE_FIELDS)
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
            _column(f): value.isoformat() if isinstance(value, datetime) else value
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
