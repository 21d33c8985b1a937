"""Pages of checkpoints — a thread's timeline, LangGraph's tuples — stated once and read two ways: by one
static statement (docs/performance.md), or as a queryset when a FilterSet filters the list further.

A page is a scope (a thread in hand, a thread by its public id, or the whole workspace) and conditions; each
condition is stated once (a field and a lookup, or the readable rule) and built into both SQL and a queryset
filter, so the two readings cannot disagree. The statement is one of a bounded set of texts, prepared on
PostgreSQL like every hot statement (`hot_cursor.cursor`). See docs/architecture.md, "The hot path"."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, ClassVar, NamedTuple

from django.db import connection

from checkpoints.integrity import PAYLOAD_FIELDS
from checkpoints.models import Checkpoint, PendingWrite, Thread, Workspace
from checkpoints.models.checkpoint import CheckpointQuerySet
from checkpoints.models.readable import READABLE
from checkpoints.models.value import unpack, unpack_writes
from checkpoints.storage import hot_cursor, model_rows, read_sql
from checkpoints.storage.keyset import Seek, seek_params, seek_sql

CHECKPOINT = model_rows.CHECKPOINT
THREAD = model_rows.THREAD
_PAYLOAD = tuple(sorted(PAYLOAD_FIELDS))


# The SQL operator of each lookup a page condition uses.
_OPERATORS = {"exact": "=", "lt": "<"}


class Compared(NamedTuple):
    """A condition comparing one field with the value bound under the condition's name: its SQL on the
    checkpoint aliased `c` and its queryset filter, both built from (field, lookup)."""

    field: str
    lookup: str

    def sql(self, name: str) -> str:
        column = Checkpoint._meta.get_field(self.field).column  # type: ignore[union-attr]
        return f"c.{column} {_OPERATORS[self.lookup]} %({name})s"

    def applied(self, queryset: CheckpointQuerySet, value: Any) -> CheckpointQuerySet:
        return queryset.filter(**{f"{self.field}__{self.lookup}": value})


class Readable(NamedTuple):
    """Readable at the time bound under the condition's name (`readable.READABLE`)."""

    def sql(self, name: str) -> str:
        return READABLE.sql(Checkpoint, "c", now_param=name)

    def applied(self, queryset: CheckpointQuerySet, value: Any) -> CheckpointQuerySet:
        return queryset.live(value)


CONDITIONS: dict[str, Compared | Readable] = {
    "live": Readable(),
    "namespace": Compared("namespace", "exact"),
    # Created before the row with this primary key (a timeline's `before`).
    "below_row": Compared("id", "lt"),
    "framework": Compared("framework", "exact"),
    "checkpoint_id": Compared("checkpoint_id", "exact"),
    # Checkpoint ids below this one, whether or not it exists (LangGraph's `before`).
    "below_checkpoint_id": Compared("checkpoint_id", "lt"),
}


@dataclass(frozen=True)
class CheckpointPages:
    """The checkpoints a list asks for, in one of three scopes: `thread` (a thread in hand), `thread_id`
    (the workspace's thread with this public id: none if it has none) or neither (every thread of the
    workspace); with `conditions` (names of CONDITIONS, with their values) and, with `payload`, the
    documents (packed ones whole again)."""

    model: ClassVar[type[Checkpoint]] = Checkpoint
    workspace: Workspace
    conditions: Mapping[str, Any]
    payload: bool
    thread: Thread | None = None
    thread_id: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.conditions) - set(CONDITIONS)
        assert not unknown, f"no such page condition: {unknown}"

    def queryset(self) -> CheckpointQuerySet:
        """The same rows for the ORM (a FilterSet filters it further); order and slice it for a page."""
        if self.thread is not None:
            queryset = Checkpoint.objects.filter(thread=self.thread)
        elif self.thread_id is not None:
            queryset = Checkpoint.objects.in_thread(self.workspace, self.thread_id).select_related("thread")
        else:
            queryset = Checkpoint.objects.for_workspace(self.workspace).select_related("thread")
        for name, value in self.conditions.items():
            queryset = CONDITIONS[name].applied(queryset, value)
        return queryset if self.payload else queryset.without_payload()

    def read(self, seek: Seek) -> list[Checkpoint]:
        """One page in one statement (a second on SQLite when it holds packed documents), each checkpoint
        with its thread (and the thread's workspace) in hand."""
        scope = "thread" if self.thread is not None else "thread_id" if self.thread_id is not None else "all"
        sql = checkpoint_page_sql(
            connection.vendor,
            scope=scope,
            conditions=tuple(self.conditions),
            ordering=tuple(seek.ordering),
            after=seek.position is not None,
            payload=self.payload,
        )
        params: dict[str, Any] = {"limit": seek.limit, "workspace": self.workspace.pk}
        if self.thread is not None:
            params["thread"] = self.thread.pk
        if self.thread_id is not None:
            params["thread_id"] = self.thread_id
        for name, value in self.conditions.items():
            params[name] = _bound(value)
        params.update(seek_params(seek))
        with hot_cursor.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return self._loaded(rows)

    def _loaded(self, rows: list[Any]) -> list[Checkpoint]:
        skip = () if self.payload else _PAYLOAD
        split = model_rows.width(Checkpoint, skip)
        checkpoints, unfetched = [], []
        for row in rows:
            checkpoint = model_rows.load(Checkpoint, row[:split], skip)
            thread = self.thread or model_rows.load(Thread, row[split : split + model_rows.width(Thread)])
            checkpoint.thread = thread
            checkpoint.workspace = self.workspace
            if self.thread is None:
                thread.workspace = self.workspace
            if self.payload and not read_sql.put_fetched_parts(checkpoint, *row[-2:]):
                unfetched.append(checkpoint)
            checkpoints.append(checkpoint)
        unpack(unfetched)
        return checkpoints


def _bound(value: Any) -> Any:
    return model_rows.adapt_datetime(value) if isinstance(value, datetime) else value


# Each scope's condition on the checkpoint aliased `c` ("thread_id" joins its thread, `t`).
_SCOPES = {
    "thread": "c.thread_id = %(thread)s",
    "thread_id": "t.workspace_id = %(workspace)s AND c.workspace_id = %(workspace)s "
    "AND t.thread_id = %(thread_id)s",
    "all": "c.workspace_id = %(workspace)s",
}
_THREAD_JOIN = f" JOIN {THREAD} t ON t.id = c.thread_id"


@cache
def checkpoint_page_sql(
    vendor: str,
    *,
    scope: str,
    conditions: tuple[str, ...],
    ordering: tuple[str, ...],
    after: bool,
    payload: bool,
) -> str:
    """The page's statement: the page's rows in a CTE (so each page reads at most `limit` rows through its
    index), then their threads (unless in hand) and, with `payload`, their parts (`read_sql.PARTS_OF_ROW`)."""
    inner_join = _THREAD_JOIN if scope == "thread_id" else ""
    seek, order = seek_sql(Checkpoint, "c", ordering, after=after)
    where = " AND ".join(
        [_SCOPES[scope], *(CONDITIONS[name].sql(name) for name in conditions), *([seek] if seek else [])]
    )
    checkpoint_columns = model_rows.columns(Checkpoint, "c", () if payload else _PAYLOAD)
    select = [checkpoint_columns]
    joins = ""
    if scope != "thread":
        select.append(model_rows.columns(Thread, "t"))
        joins = _THREAD_JOIN
    if payload:
        select.append(read_sql.PARTS_COLUMNS[vendor])
        joins += f" {read_sql.PARTS_OF_ROW[vendor]}"
    return (
        f"WITH c AS (SELECT {checkpoint_columns} FROM {CHECKPOINT} c{inner_join} WHERE {where} "  # nosec B608 # table and column names from the models; every value is bound
        f"ORDER BY {order} LIMIT %(limit)s) SELECT {', '.join(select)} FROM c{joins} ORDER BY {order}"
    )


# A column among the values of a list bound as `name` (on SQLite, the list's JSON text).
_AMONG = {
    "postgresql": "= ANY(%({name})s::{type}[])",
    "sqlite": "IN (SELECT value FROM json_each(%({name})s))",
}


@cache
def _pending_writes_sql(vendor: str) -> str:
    """The pending writes of a page's checkpoints, in LangGraph's order (task_path, task_id, idx): seeks on
    `pending_write_unique` for the page's threads, namespaces and checkpoint ids."""
    among = _AMONG[vendor]
    return (
        f"SELECT {model_rows.columns(PendingWrite, 'p')} FROM {model_rows.PENDING_WRITE} p "  # nosec B608 # names from the models; values bound
        f"WHERE p.thread_id {among.format(name='threads', type='bigint')} "
        f"AND p.namespace {among.format(name='namespaces', type='text')} "
        f"AND p.checkpoint_id {among.format(name='checkpoint_ids', type='text')} "
        "ORDER BY p.task_path, p.task_id, p.idx"
    )


def pending_writes_of(checkpoints: list[Checkpoint]) -> dict[tuple[int, str, str], list[PendingWrite]]:
    """The pending writes of these checkpoints in one statement, by (thread pk, namespace, checkpoint id),
    each list in LangGraph's order."""
    if not checkpoints:
        return {}
    wanted = {(c.thread_id, c.namespace, c.checkpoint_id) for c in checkpoints}
    lists = [sorted({key[index] for key in wanted}) for index in range(3)]
    postgres = connection.vendor == "postgresql"
    bound = [values if postgres else json.dumps(values) for values in lists]
    params = dict(zip(("threads", "namespaces", "checkpoint_ids"), bound, strict=True))
    with hot_cursor.cursor() as cursor:
        cursor.execute(_pending_writes_sql(connection.vendor), params)
        rows = cursor.fetchall()
    grouped: dict[tuple[int, str, str], list[PendingWrite]] = {key: [] for key in wanted}
    by_workspace: dict[int, list[PendingWrite]] = {}
    workspace_of = {c.thread_id: c.workspace_id for c in checkpoints}
    for row in rows:
        write = model_rows.load(PendingWrite, row)
        key = (write.thread_id, write.namespace, write.checkpoint_id)
        if key in grouped:
            grouped[key].append(write)
            by_workspace.setdefault(workspace_of[write.thread_id], []).append(write)
    for workspace_id, writes in by_workspace.items():
        unpack_writes(writes, workspace_id)
    return grouped
