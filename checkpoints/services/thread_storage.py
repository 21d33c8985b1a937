"""Per-thread storage accounting (a read: no lock, no audit).

Checkpoint documents are measured two ways (docs/storage.md): *logical* bytes, what they are whole (the
rows' `size_bytes`), and *stored* bytes, what they occupy: the text the rows hold (skeletons for packed
documents, whole text otherwise) plus the distinct parts the thread's packed documents name, each part
counted once per thread. Pending writes and messages are stored as they are, so they count the same in both.
"""

from __future__ import annotations

from typing import Any

from django.db.models import BigIntegerField, Count, Exists, F, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from checkpoints.models import Checkpoint, Message, PendingWrite, Thread
from checkpoints.models.thread import write_bytes
from checkpoints.storage.stored_values import named_by, packed_rows, part_sizes, row_text_bytes


def thread_storage(*, thread: Thread) -> dict[str, Any]:
    """Bytes stored under a thread, by namespace and kind, and totals (three grouped queries, and two more
    when the thread has packed documents: their headers, then the parts they name).

    - state: checkpoint payloads (state + context + metadata, canonical UTF-8) still stored: tombstones
      have none, expired checkpoints not yet swept still do; `state_bytes` logical, `state_stored_bytes`
      as stored;
    - writes: pending write values;
    - messages: message text and JSON as sent (the search index is not counted);
    - parts: the distinct parts the thread's packed documents name.
    """
    stored_payload = Q(expired_at__isnull=True)
    namespaces: dict[str, dict[str, Any]] = {}

    def add(row: dict[str, Any]) -> None:
        empty = {"checkpoints": 0, "tombstones": 0, "pending_writes": 0, "state_bytes": 0, "writes_bytes": 0}
        namespaces.setdefault(row["namespace"], {"namespace": row["namespace"], **empty}).update(row)

    checkpoint_rows: list[dict[str, Any]] = [
        dict(row)
        for row in Checkpoint.objects.filter(thread=thread)
        .values("namespace")
        .annotate(
            checkpoints=Count("pk", filter=stored_payload),
            tombstones=Count("pk", filter=~stored_payload),
            state_bytes=Coalesce(Sum("size_bytes", filter=stored_payload), 0),
            row_bytes=Coalesce(Sum(row_text_bytes(), filter=stored_payload), 0),
            packed=Count("pk", filter=stored_payload & packed_rows()),
        )
        .order_by()
    ]
    row_bytes = sum(row.pop("row_bytes") for row in checkpoint_rows)
    packed = sum(row.pop("packed") for row in checkpoint_rows)
    write_rows = (
        PendingWrite.objects.filter(thread=thread)
        .values("namespace")
        .annotate(pending_writes=Count("pk"), writes_bytes=Coalesce(Sum(write_bytes()), 0))
        .order_by()
    )
    for row in [*checkpoint_rows, *map(dict, write_rows)]:
        add(row)
    messages = Message.objects.filter(thread=thread).aggregate(
        count=Count("pk"), bytes=Coalesce(Sum("size_bytes"), 0)
    )
    parts, part_bytes = thread_parts(thread) if packed else (0, 0)
    ordered = [namespaces[name] for name in sorted(namespaces)]
    state_bytes = sum(n["state_bytes"] for n in ordered)
    writes_bytes = sum(n["writes_bytes"] for n in ordered)
    state_stored_bytes = row_bytes + part_bytes
    return {
        "thread_id": thread.thread_id,
        "namespaces": ordered,
        "messages": {"count": messages["count"], "bytes": messages["bytes"]},
        "parts": {"count": parts, "bytes": part_bytes},
        "totals": {
            "state_bytes": state_bytes,
            "writes_bytes": writes_bytes,
            "messages_bytes": messages["bytes"],
            "bytes": state_bytes + writes_bytes + messages["bytes"],
            "state_stored_bytes": state_stored_bytes,
            "stored_bytes": state_stored_bytes + writes_bytes + messages["bytes"],
        },
    }


def thread_parts(thread: Thread) -> tuple[int, int]:
    """How many distinct parts the thread's live checkpoints name, and their bytes (two queries)."""
    live = Checkpoint.objects.filter(thread=thread, expired_at__isnull=True)
    return part_sizes(thread.workspace_id, named_by(live))


def with_stored_sizes(threads: QuerySet[Thread]) -> QuerySet[Thread]:
    """Annotate what `storage_summary` needs besides `with_stats`' storage_bytes, as correlated subqueries
    (the threads stay one query): `bytes_cut_out`, what packing cut out of the thread's live checkpoint rows
    (their size_bytes less the text they hold), and `has_packed`, whether any of those rows is packed."""
    live = Checkpoint.objects.filter(thread=OuterRef("pk"), expired_at__isnull=True).order_by()
    cut_out = live.values("thread").annotate(total=Sum(F("size_bytes") - row_text_bytes())).values("total")
    return threads.annotate(
        bytes_cut_out=Coalesce(Subquery(cut_out), Value(0), output_field=BigIntegerField()),
        has_packed=Exists(live.filter(packed_rows())),
    )


def storage_summary(thread: Thread) -> dict[str, int]:
    """The thread's logical and stored bytes, the totals of `thread_storage`, from a thread annotated by
    `with_stats` and `with_stored_sizes`: two more queries when it has packed documents, none otherwise."""
    logical: int = thread.storage_bytes  # type: ignore[attr-defined]
    cut_out: int = thread.bytes_cut_out  # type: ignore[attr-defined]
    part_bytes = thread_parts(thread)[1] if thread.has_packed else 0  # type: ignore[attr-defined]
    return {"logical_bytes": logical, "stored_bytes": logical - cut_out + part_bytes}
