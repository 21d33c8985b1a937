"""Read helpers behind the dashboard pages. Counts are capped (`COUNT` over `LIMIT cap+1`), so no page ever
counts a whole large table; the storage totals, which must scan, are cached for a minute."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.db.models import Count, IntegerField, OuterRef, Prefetch, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce, Length

from checkpoints.models import (
    AuditEvent,
    AuditEventAgent,
    Checkpoint,
    Job,
    Medallion,
    Message,
    Thread,
    Workspace,
)
from checkpoints.storage.stored_values import stored_bytes

COUNT_CAP = 10_000
STORAGE_CACHE_SECONDS = 60
EXPIRING_WINDOW = timedelta(hours=24)


def with_agents(events: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
    """Events with the agents each names (`event.agents.all()`, by agent id): one query per page of
    events, whatever its length (none when the page is empty); the acting API key joined, for its name."""
    agents = Prefetch("agents", queryset=AuditEventAgent.objects.order_by("agent_id"))
    return events.select_related("actor_api_key").prefetch_related(agents)


@dataclass(frozen=True)
class CappedCount:
    value: int
    capped: bool

    def __str__(self) -> str:
        return f"{self.value:,}+" if self.capped else f"{self.value:,}"


def capped_count(queryset: QuerySet[Any], cap: int = COUNT_CAP) -> CappedCount:
    """How many rows, counting at most `cap` of them (the database stops at cap + 1)."""
    found = queryset[: cap + 1].count()
    return CappedCount(min(found, cap), found > cap)


@dataclass(frozen=True)
class LogicalAndStored:
    """Bytes as the documents are whole (logical) and as stored, and what storing them packed saves."""

    logical: int
    stored: int

    @property
    def ratio(self) -> float | None:
        """How many times smaller the stored bytes are; None when storing saves nothing."""
        return self.logical / self.stored if 0 < self.stored < self.logical else None

    @property
    def saved_percent(self) -> int:
        """The share of the logical bytes that is not stored, in percent (0 when nothing is saved)."""
        return round(100 * (self.logical - self.stored) / self.logical) if self.ratio else 0


def workspace_storage(workspace: Workspace) -> dict[str, int]:
    """Bytes of live checkpoint payloads, whole (`checkpoints`) and as stored (`checkpoints_stored`: the
    rows' text plus every part the workspace stores), and characters of message text; cached for a minute."""
    key = f"dashboard:storage:v2:{workspace.pk}:{workspace.created_at.timestamp():.6f}"
    cached = cache.get(key)
    if isinstance(cached, dict):
        return cached
    payloads = stored_bytes(workspace_id=workspace.pk)
    messages = Message.objects.filter(thread__workspace=workspace)
    storage = {
        "checkpoints": payloads.logical_bytes,
        "checkpoints_stored": payloads.stored_bytes,
        "messages": messages.aggregate(total=Coalesce(Sum(Length("content")), 0))["total"],
    }
    cache.set(key, storage, STORAGE_CACHE_SECONDS)
    return storage


def workspace_overview(workspace: Workspace, now: datetime) -> dict[str, Any]:
    """Everything the overview page shows, each piece an indexed or capped query."""
    checkpoints = Checkpoint.objects.for_workspace(workspace)
    expiring = (
        checkpoints.live(now)
        .filter(pinned=False, expires_at__lte=now + EXPIRING_WINDOW)
        .select_related("thread")
        .without_payload()
    )
    jobs = Job.objects.for_workspace(workspace)
    storage = workspace_storage(workspace)
    return {
        "counts": {
            "Threads": capped_count(Thread.objects.for_workspace(workspace)),
            "Live checkpoints": capped_count(checkpoints.live(now)),
            "Tombstones": capped_count(checkpoints.tombstones()),
            "Messages": capped_count(Message.objects.for_workspace(workspace)),
            "Active medallions": capped_count(Medallion.objects.for_workspace(workspace).active()),
            "Usable API keys": capped_count(workspace.api_keys.usable(now)),
        },
        "storage": storage,
        "payloads": LogicalAndStored(storage["checkpoints"], storage["checkpoints_stored"]),
        "expiring": list(expiring.order_by("expires_at", "id")[:10]),
        "expiring_count": capped_count(expiring),
        "failed_jobs": list(jobs.filter(status=Job.Status.FAILED).newest_first()[:10]),
        "active_jobs": capped_count(jobs.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING])),
        "recent_events": list(with_agents(AuditEvent.objects.for_workspace(workspace).newest_first())[:8]),
    }


def threads_for_list(workspace: Workspace, now: datetime) -> QuerySet[Thread]:
    """The workspace's threads with, per row, the root-namespace head and the message count.

    Both are correlated subqueries evaluated only for the rows of the page (index seeks), so the list
    stays one query at any table size.
    """
    head = Checkpoint.objects.filter(thread=OuterRef("pk"), namespace="").live(now).order_by("-id")
    message_count = (
        Message.objects.filter(thread=OuterRef("pk"))
        .order_by()
        .values("thread")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        Thread.objects.for_workspace(workspace)
        .select_related("forked_from")
        .defer("metadata", "scope", "forked_from__metadata", "forked_from__scope")
        .annotate(
            head_checkpoint_id=Subquery(head.values("checkpoint_id")[:1]),
            head_step=Subquery(head.values("step_index")[:1]),
            head_agent=Subquery(head.values("agent_id")[:1]),
            message_count=Coalesce(Subquery(message_count, output_field=IntegerField()), 0),
        )
    )
