"""The filtered audit log as a download: CSV or JSON, streamed in keyset batches and bounded.

CSV cells that a spreadsheet would run as a formula (=, +, -, @, tab, carriage return first) are prefixed
with a quote, so an actor label or thread id chosen by a client cannot become a formula. `agents` are the
agent ids the event names (the audit log's agent filter): a list in JSON, a compact JSON array in CSV (an
agent id may hold any character but surrounding whitespace, so no separator would be unambiguous).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from checkpoints.dashboard.queries import with_agents
from checkpoints.integrity import format_timestamp
from checkpoints.models import AuditEvent

EXPORT_MAX_ROWS = 50_000  # the newest events matching the filters; narrow the filters for older ones
EXPORT_BATCH = 500
COLUMNS = (
    "created_at",
    "actor_type",
    "actor_label",
    "action",
    "target_type",
    "target_id",
    "agents",
    "details",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def export_filename(slug: str, extension: str) -> str:
    return f"audit-{slug}-{timezone.now():%Y%m%d-%H%M%S}.{extension}"


def _newest_first(queryset: QuerySet[AuditEvent], limit: int) -> Iterator[AuditEvent]:
    """Up to `limit` events, newest first, read by keyset in batches (no cursor left open, no OFFSET), each
    batch with its events' agents (one more query per batch)."""
    queryset = with_agents(queryset.order_by("-id"))
    after: int | None = None
    while limit > 0:
        batch_query = queryset if after is None else queryset.filter(id__lt=after)
        batch = list(batch_query[: min(EXPORT_BATCH, limit)])
        yield from batch
        if len(batch) < EXPORT_BATCH:
            return
        limit -= len(batch)
        after = batch[-1].pk


def _row(event: AuditEvent) -> dict[str, Any]:
    return {
        "created_at": format_timestamp(event.created_at),
        "actor_type": event.actor_type,
        "actor_label": event.actor_label,
        "action": event.action,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "agents": [agent.agent_id for agent in event.agents.all()],
        "details": event.details,
    }


def csv_safe(value: str) -> str:
    """The cell text, defused if a spreadsheet would read it as a formula."""
    return f"'{value}" if value.startswith(_FORMULA_START) else value


def audit_csv(queryset: QuerySet[AuditEvent]) -> Iterator[str]:
    """The header, then one CSV line per event (details as compact JSON), EXPORT_MAX_ROWS at most."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(cells: list[str]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([csv_safe(cell) for cell in cells])
        return buffer.getvalue()

    yield line(list(COLUMNS))
    for event in _newest_first(queryset, EXPORT_MAX_ROWS):
        row = _row(event)
        for column in ("agents", "details"):
            row[column] = json.dumps(row[column], ensure_ascii=False, separators=(",", ":"), default=str)
        yield line([str(row[column]) for column in COLUMNS])


def audit_json(queryset: QuerySet[AuditEvent], filters: dict[str, Any]) -> Iterator[str]:
    """`{"filters", "limit", "events": [...], "truncated"}`, written event by event."""
    limit = EXPORT_MAX_ROWS
    yield '{"filters": ' + json.dumps(filters, default=str) + f', "limit": {limit}, "events": ['
    for count, event in enumerate(_newest_first(queryset, limit + 1)):
        if count == limit:  # the one event past the limit only says that there are more
            yield '], "truncated": true}\n'
            return
        yield ("," if count else "") + "\n" + json.dumps(_row(event), ensure_ascii=False, default=str)
    yield '], "truncated": false}\n'
