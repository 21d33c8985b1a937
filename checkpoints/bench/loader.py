"""Bulk loading with COPY, for the benchmarks that need large tables.

Rows are dicts keyed by the model's attribute names; every concrete column the dict leaves out gets the
field's default, so the loader keeps working when a model gains a column with a default. Checkpoint rows get
real checksums (the read paths verify them, so a fake one would answer 409, not a latency).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.db import models
from psycopg import sql
from psycopg.types.json import Jsonb

from checkpoints.integrity import record_checksum_from_parts
from checkpoints.models import Checkpoint, Thread, Workspace


def copy_model(
    conn: psycopg.Connection[Any], model: type[models.Model], rows: Iterable[dict[str, Any]]
) -> int:
    """COPY `rows` into the model's table (every concrete column but the primary key); returns the count."""
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    columns = sql.SQL(", ").join([sql.Identifier(str(field.column)) for field in fields])
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(model._meta.db_table), columns)
    count = 0
    with conn.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            values = []
            for field in fields:
                value = row[field.attname] if field.attname in row else field.get_default()
                values.append(
                    Jsonb(value) if isinstance(field, models.JSONField) and value is not None else value
                )
            copy.write_row(values)
            count += 1
    return count


def workspace_pk(database_url: str, slug: str) -> int:
    """The primary key of the workspace `slug` (the benchmarks load rows into it by key)."""
    query = sql.SQL("SELECT id FROM {} WHERE slug = %s").format(sql.Identifier(Workspace._meta.db_table))
    with psycopg.connect(database_url) as conn:
        row = conn.execute(query, (slug,)).fetchone()
    if row is None:
        raise LookupError(f"no workspace {slug!r} in the benchmark database")
    return int(row[0])


def thread_rows(workspace_pk: int, thread_ids: Iterable[str], now: datetime) -> Iterator[dict[str, Any]]:
    for thread_id in thread_ids:
        yield {"workspace_id": workspace_pk, "thread_id": thread_id, "created_at": now, "updated_at": now}


def thread_pks(conn: psycopg.Connection[Any], workspace_pk: int, thread_ids: list[str]) -> dict[str, int]:
    table = sql.Identifier(Thread._meta.db_table)
    query = sql.SQL("SELECT thread_id, id FROM {} WHERE workspace_id = %s AND thread_id = ANY(%s)").format(
        table
    )
    return {thread_id: pk for thread_id, pk in conn.execute(query, (workspace_pk, thread_ids)).fetchall()}


def checkpoint_row(
    *,
    workspace_pk: int,
    thread_pk: int,
    thread_id: str,
    checkpoint_id: str,
    parent_id: str | None,
    step: int,
    state: str,
    created_at: datetime,
    expires_at: datetime | None = None,
    agent_id: str = "bench-agent",
) -> dict[str, Any]:
    """A checkpoint row as `checkpoint_save` would store it (canonical texts, real checksum)."""
    scalars = {
        "thread_id": thread_id,
        "namespace": "",
        "checkpoint_id": checkpoint_id,
        "parent_id": parent_id,
        "agent_id": agent_id,
        "framework": Checkpoint.Framework.CUSTOM.value,
        "schema_version": "1.0",
        "step_index": step,
        "step_name": None,
        "run_id": None,
        "handoff_target": None,
        "handoff_from": None,
        "created_at": created_at,
    }
    payloads = {"state": state, "context": "{}", "metadata": "{}"}
    return {
        "workspace_id": workspace_pk,
        "thread_id": thread_pk,
        "namespace": "",
        "checkpoint_id": checkpoint_id,
        "parent_checkpoint_id": parent_id,
        "agent_id": agent_id,
        "framework": scalars["framework"],
        "schema_version": "1.0",
        "step_index": step,
        "step_name": None,
        "run_id": None,
        "state": state,
        "context": "{}",
        "metadata": "{}",
        "handoff_target": None,
        "handoff_from": None,
        "message_seq": 0,
        "checksum": record_checksum_from_parts(scalars, payloads),
        "size_bytes": len(state.encode("utf-8")) + 4,
        "created_at": created_at,
        "expires_at": expires_at,
        "pinned": False,
        "expired_at": None,
    }


def chain(
    *,
    workspace_pk: int,
    thread_pk: int,
    thread_id: str,
    length: int,
    state: str,
    start: datetime,
    expires_at: datetime | None = None,
) -> Iterator[dict[str, Any]]:
    """`length` checkpoints of one thread, each the parent of the next, one millisecond apart."""
    parent = None
    for step in range(length):
        checkpoint_id = f"cp-{step:06d}"
        yield checkpoint_row(
            workspace_pk=workspace_pk,
            thread_pk=thread_pk,
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
            parent_id=parent,
            step=step,
            state=state,
            created_at=start + timedelta(milliseconds=step),
            expires_at=expires_at,
        )
        parent = checkpoint_id
