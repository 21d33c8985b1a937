"""What the agent page counts: an agent's threads, checkpoints, handoffs (checkpoints.services.handoffs'
rule), the API keys that wrote for it, and its checkpoints, errors and tokens per day (docs/dashboard.md,
"Agents").

- **Errors**: LangGraph's `__error__` pending writes on the agent's checkpoints, and the agent's checkpoints
  whose metadata flags one (`{"error": true}`).
- **Tokens**: the `usage` of the messages the agent sent (`name`) and the metadata `usage` of its saves, each
  `{input_tokens, output_tokens, total_tokens}` (`usage_tokens` reads one).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet
from django.db.models.functions import TruncDay
from django.utils.safestring import SafeString

from checkpoints.dashboard.activity import WINDOWS, Window, per_bucket, window_bars
from checkpoints.dashboard.charts import Series
from checkpoints.dashboard.queries import CappedCount, capped_count
from checkpoints.dashboard.steps import usage_of
from checkpoints.models import ApiKey, Checkpoint, Message, PendingWrite, Thread, Workspace
from checkpoints.services.handoffs import PENDING, TAKEN, handoffs_with_status

AGENT_WINDOW: Window = WINDOWS["30d"]
ERROR_CHANNEL = "__error__"  # LangGraph's channel for a task's exception
THREADS_SHOWN = 20
KEYS_SHOWN = 20


def usage_tokens(usage: Any) -> int:
    """The tokens one `usage` object counts, by the step summary's rule (`steps.usage_of`); 0 without one."""
    return usage_of(usage).total_tokens if isinstance(usage, dict) else 0


def agent_checkpoints(workspace: Workspace, agent_id: str) -> QuerySet[Checkpoint]:
    """The checkpoints the agent saved (on the `checkpoint_ws_agent` index)."""
    return Checkpoint.objects.for_workspace(workspace).filter(agent_id=agent_id)


def agent_threads(workspace: Workspace, agent_id: str) -> list[Thread]:
    """The threads the agent saved checkpoints in, the most recently written first."""
    wrote = Exists(agent_checkpoints(workspace, agent_id).filter(thread=OuterRef("pk")))
    threads = Thread.objects.for_workspace(workspace).filter(wrote).order_by("-updated_at", "-id")
    return list(threads[:THREADS_SHOWN])


def agent_handoffs(workspace: Workspace, agent_id: str) -> dict[str, CappedCount]:
    """Handoffs to the agent, taken and pending, and handoffs it made (four capped counts)."""
    to_agent = Checkpoint.objects.for_workspace(workspace).filter(handoff_target=agent_id)
    by_agent = Checkpoint.objects.for_workspace(workspace).filter(handoff_from=agent_id)
    return {
        "taken": capped_count(handoffs_with_status(to_agent, TAKEN)),
        "pending": capped_count(handoffs_with_status(to_agent, PENDING)),
        "made_taken": capped_count(handoffs_with_status(by_agent, TAKEN)),
        "made_pending": capped_count(handoffs_with_status(by_agent, PENDING)),
    }


def agent_key_names(workspace: Workspace, agent_id: str) -> list[ApiKey]:
    """The API keys that wrote the agent's checkpoints, by name (two queries: the writers, their keys)."""
    writers = (
        agent_checkpoints(workspace, agent_id)
        .filter(written_by__startswith="key:")
        .order_by()
        .values_list("written_by", flat=True)
        .distinct()[:KEYS_SHOWN]
    )
    prefixes = [writer.removeprefix("key:") for writer in writers]
    return list(ApiKey.objects.filter(workspace=workspace, prefix__in=prefixes).order_by("name"))


def _per_day(rows: Iterable[tuple[datetime, Any]], window: Window, now: datetime) -> list[int]:
    """Tokens per bucket of the window from (created_at, usage) rows, summed here (usage is JSON)."""
    found: dict[datetime, int] = {}
    for bucket, usage in rows:
        found[bucket] = found.get(bucket, 0) + usage_tokens(usage)
    return [found.get(bucket, 0) for bucket in window.buckets(now)]


def _day_rows(queryset: QuerySet[Any], window: Window, now: datetime) -> QuerySet[Any]:
    return queryset.filter(created_at__gte=window.first_bucket(now)).annotate(day=TruncDay("created_at"))


def _save_usages(
    checkpoints: QuerySet[Checkpoint], window: Window, now: datetime
) -> list[tuple[datetime, Any]]:
    """(day, metadata `usage`) of the saves in the window that name a usage. Metadata is canonical JSON text
    (docs/storage.md), decoded here; the text filter only narrows the rows read."""
    saves = _day_rows(checkpoints.filter(metadata__contains='"usage":'), window, now).only("metadata")
    return [(save.day, (save.decoded("metadata") or {}).get("usage")) for save in saves]


def agent_charts(workspace: Workspace, agent_id: str, now: datetime) -> dict[str, SafeString]:
    """Checkpoints and errors per day, tokens per day, over AGENT_WINDOW (five queries)."""
    window = AGENT_WINDOW
    checkpoints = agent_checkpoints(workspace, agent_id)
    saved = per_bucket(checkpoints, window, now)
    wrote_it = checkpoints.filter(
        thread=OuterRef("thread"), namespace=OuterRef("namespace"), checkpoint_id=OuterRef("checkpoint_id")
    )
    error_writes = PendingWrite.objects.filter(thread__workspace=workspace, channel=ERROR_CHANNEL).filter(
        Exists(wrote_it)
    )
    flagged = per_bucket(checkpoints.filter(metadata__json_contains={"error": True}), window, now)
    errors = [a + b for a, b in zip(per_bucket(error_writes, window, now), flagged, strict=True)]
    activity = [Series("checkpoints", "Checkpoints", saved), Series("errors", "Errors", errors)]
    activity_counted = (
        f"{sum(saved)} checkpoints saved, {sum(errors)} errors "
        "(__error__ pending writes and checkpoints whose metadata has an error)."
    )
    sent = Message.objects.filter(thread__workspace=workspace, name=agent_id)
    sent_usages = _day_rows(sent, window, now).values_list("day", "usage")
    message_tokens = _per_day(sent_usages, window, now)
    save_tokens = _per_day(_save_usages(checkpoints, window, now), window, now)
    tokens = [Series("messages", "Messages", message_tokens), Series("saves", "Saves", save_tokens)]
    tokens_counted = (
        f"{sum(message_tokens)} tokens in messages sent, {sum(save_tokens)} in the usage of its saves."
    )
    return {
        "activity": window_bars(
            window, now, "agent-activity-chart", "Checkpoints and errors", activity_counted, activity
        ),
        "tokens": window_bars(window, now, "agent-tokens-chart", "Tokens", tokens_counted, tokens),
    }
