"""Per-thread storage accounting (a read: no lock, no audit)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, Sum
from django.db.models.functions import Coalesce

from checkpoints.models import Checkpoint, Message, PendingWrite, Thread
from checkpoints.models.thread import ByteLength


def thread_storage(*, thread: Thread) -> dict[str, Any]:
    """Bytes stored under a thread, by namespace and kind, and totals (three grouped queries).

    - state: checkpoint payloads (state + context + metadata, canonical UTF-8) still stored: tombstones
      have none, expired checkpoints not yet swept still do;
    - writes: pending write values;
    - messages: message text and JSON as sent (the search index is not counted).
    """
    stored_payload = Q(expired_at__isnull=True)
    namespaces: dict[str, dict[str, Any]] = {}

    def add(row: dict[str, Any]) -> None:
        empty = {"checkpoints": 0, "tombstones": 0, "pending_writes": 0, "state_bytes": 0, "writes_bytes": 0}
        namespaces.setdefault(row["namespace"], {"namespace": row["namespace"], **empty}).update(row)

    checkpoint_rows = (
        Checkpoint.objects.filter(thread=thread)
        .values("namespace")
        .annotate(
            checkpoints=Count("pk", filter=stored_payload),
            tombstones=Count("pk", filter=~stored_payload),
            state_bytes=Coalesce(Sum("size_bytes", filter=stored_payload), 0),
        )
        .order_by()
    )
    write_rows = (
        PendingWrite.objects.filter(thread=thread)
        .values("namespace")
        .annotate(pending_writes=Count("pk"), writes_bytes=Coalesce(Sum(ByteLength("value")), 0))
        .order_by()
    )
    for row in [*checkpoint_rows, *write_rows]:
        add(dict(row))
    messages = Message.objects.filter(thread=thread).aggregate(
        count=Count("pk"), bytes=Coalesce(Sum("size_bytes"), 0)
    )
    ordered = [namespaces[name] for name in sorted(namespaces)]
    state_bytes = sum(n["state_bytes"] for n in ordered)
    writes_bytes = sum(n["writes_bytes"] for n in ordered)
    return {
        "thread_id": thread.thread_id,
        "namespaces": ordered,
        "messages": {"count": messages["count"], "bytes": messages["bytes"]},
        "totals": {
            "state_bytes": state_bytes,
            "writes_bytes": writes_bytes,
            "messages_bytes": messages["bytes"],
            "bytes": state_bytes + writes_bytes + messages["bytes"],
        },
    }
