"""What ran at each step: the node(s) that wrote a checkpoint, how the step after it ended, the time since the
step before it and the tokens it used. One summary for the timeline, the tree and the checkpoint page
(docs/dashboard.md, "What ran").

LangGraph stores the writes of the tasks that run *after* a checkpoint under that checkpoint's id, so:

- the nodes that produced checkpoint C are the tasks of the writes stored under C's parent (a pull task's path
  is "~__pregel_pull, <node>"), or the keys of `metadata.writes` (older LangGraph), or C's `step_name` (any
  other framework);
- an `__error__` or `__interrupt__` write stored under C means the step after C failed or was interrupted;
- the tokens of C's step are the `usage_metadata` (or `response_metadata.token_usage`) of the messages its
  tasks wrote, plus `metadata.usage` (`{"input_tokens", "output_tokens", "total_tokens"}`) for other saves.

A page of checkpoints costs two queries whatever its length: the rows (metadata, and the creation time of the
parents, which may not be on the page) and the writes (values only of those that can hold an error, an
interrupt or usage).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Case, Q, TextField, Value, When

from checkpoints.dashboard.written_values import message_text, readable
from checkpoints.models import Checkpoint, PendingWrite
from checkpoints.models.value import whole_texts
from checkpoints.packing import MARK, is_packed
from checkpoints.templatetags.dashboard import duration

ERROR_CHANNEL = "__error__"
INTERRUPT_CHANNEL = "__interrupt__"
PULL_TASK_PREFIX = "~__pregel_pull, "
PUSH_TASK_PREFIX = "~__pregel_push"
USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")
# response_metadata.token_usage (OpenAI's names) mapped to usage_metadata's.
TOKEN_USAGE_FIELDS: dict[str, str] = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}
MAX_WALK_DEPTH = 24


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclass
class StepSummary:
    nodes: list[str] = field(default_factory=list)
    status: str = "ok"  # "ok", "error" or "interrupted": how the step after this checkpoint ended
    status_node: str = ""
    status_text: str = ""
    since_previous: timedelta | None = None
    usage: Usage | None = None

    @property
    def since_text(self) -> str:
        """The time since the previous step for people: "+350 ms", "+2.5 s", "+3 min 4 s"."""
        if self.since_previous is None:
            return ""
        seconds = self.since_previous.total_seconds()
        if seconds < 1:
            return f"+{max(seconds, 0) * 1000:.0f} ms"
        if seconds < 60:
            return f"+{seconds:.1f} s"
        return "+" + duration(int(seconds))


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


def usage_of(mapping: dict[str, Any]) -> Usage:
    """A `usage`-shaped mapping as Usage (total = input + output when it is not given)."""
    counts = {name: _count(mapping.get(name)) for name in USAGE_FIELDS}
    if not counts["total_tokens"]:
        counts["total_tokens"] = counts["input_tokens"] + counts["output_tokens"]
    return Usage(**counts)


def usage_in(value: Any, _depth: int = 0) -> Usage | None:
    """The tokens of every message in `value` (stored or unpacked form), None when none carries usage."""
    if _depth > MAX_WALK_DEPTH:
        return None
    if isinstance(value, list):
        found = [usage_in(item, _depth + 1) for item in value]
    elif isinstance(value, dict):
        if isinstance(value.get("usage_metadata"), dict):
            return usage_of(value["usage_metadata"])
        response = value.get("response_metadata")
        token_usage = response.get("token_usage") if isinstance(response, dict) else None
        if isinstance(token_usage, dict):
            return usage_of({TOKEN_USAGE_FIELDS.get(str(k), str(k)): v for k, v in token_usage.items()})
        found = [usage_in(item, _depth + 1) for item in value.values()]
    else:
        return None
    return total(found)


def total(usages: Sequence[Usage | None]) -> Usage | None:
    """The sum of the usages given, None when none is."""
    present = [usage for usage in usages if usage is not None]
    return sum(present[1:], present[0]) if present else None


def node_of(task_path: str) -> str | None:
    """The node a task ran, from LangGraph's task path ("~__pregel_pull, agent"); "send" for a pushed task."""
    if task_path.startswith(PULL_TASK_PREFIX):
        return task_path[len(PULL_TASK_PREFIX) :].partition(",")[0].strip() or None
    if task_path.startswith(PUSH_TASK_PREFIX):
        return "send"
    return None


def _rows(checkpoints: Sequence[Checkpoint]) -> tuple[dict[int, dict[str, Any]], dict[tuple[str, str], Any]]:
    """The metadata of each checkpoint (by pk) and the creation time of each checkpoint and parent (by
    namespace and id), in one query: the metadata may be deferred and the parents may not be on the page."""
    parents = {c.parent_checkpoint_id for c in checkpoints if c.parent_checkpoint_id}
    rows = Checkpoint.objects.filter(thread_id=checkpoints[0].thread_id).filter(
        Q(pk__in=[c.pk for c in checkpoints]) | Q(checkpoint_id__in=parents)
    )
    metadata: dict[int, dict[str, Any]] = {}
    times: dict[tuple[str, str], Any] = {}
    for pk, namespace, checkpoint_id, created_at, text in rows.values_list(
        "pk", "namespace", "checkpoint_id", "created_at", "metadata"
    ):
        document = json.loads(text) if text else None
        metadata[pk] = document if isinstance(document, dict) else {}
        times[(namespace, checkpoint_id)] = created_at
    return metadata, times


def _writes(checkpoints: Sequence[Checkpoint]) -> dict[tuple[str, str], list[PendingWrite]]:
    ids = {c.checkpoint_id for c in checkpoints} | {c.parent_checkpoint_id for c in checkpoints} - {None}
    # Only the values that can matter are read: a step's other writes may be whole documents.
    # A packed value (docs/storage.md) keeps its text in parts: it is read, and put back together, too.
    wanted = (
        Q(channel__in=(ERROR_CHANNEL, INTERRUPT_CHANNEL))
        | Q(value__contains="usage")
        | Q(value__contains='"serde"')
        | Q(value__startswith=MARK)
    )
    rows = list(
        PendingWrite.objects.filter(thread_id=checkpoints[0].thread_id, checkpoint_id__in=ids)
        .defer("value")
        .annotate(shown=Case(When(wanted, then="value"), default=Value(None), output_field=TextField()))
        .order_by("task_path", "task_id", "idx")
    )
    shown = whole_texts(checkpoints[0].workspace_id, [write.shown for write in rows])
    grouped: dict[tuple[str, str], list[PendingWrite]] = defaultdict(list)
    for write, text in zip(rows, shown, strict=True):
        write.shown = None if is_packed(text) else text  # None: a part it names is missing
        grouped[(write.namespace, write.checkpoint_id)].append(write)
    return grouped


def _shown(write: PendingWrite) -> Any:
    text = getattr(write, "shown", None)
    return json.loads(text) if text else None


def _summary(
    checkpoint: Checkpoint, metadata: dict[str, Any], own: list[PendingWrite], producing: list[PendingWrite]
) -> StepSummary:
    summary = StepSummary()
    legacy_writes = metadata.get("writes")
    if isinstance(legacy_writes, dict) and legacy_writes:
        summary.nodes = [str(name) for name in legacy_writes]
    else:
        nodes = (node_of(write.task_path) for write in producing)
        summary.nodes = list(dict.fromkeys(node for node in nodes if node))
    if not summary.nodes and checkpoint.step_name and checkpoint.framework != Checkpoint.Framework.LANGGRAPH:
        summary.nodes = [checkpoint.step_name]
    for write in own:
        if write.channel in (ERROR_CHANNEL, INTERRUPT_CHANNEL):
            summary.status = "error" if write.channel == ERROR_CHANNEL else "interrupted"
            summary.status_node = node_of(write.task_path) or ""
            summary.status_text = message_text(_shown(write))
            break
    found = [usage_in(readable(_shown(write))) for write in producing]
    if isinstance(metadata.get("usage"), dict):
        found.append(usage_of(metadata["usage"]))
    if isinstance(legacy_writes, dict):
        found.append(usage_in(legacy_writes))
    summary.usage = total(found)
    return summary


def step_summaries(checkpoints: Sequence[Checkpoint]) -> dict[int, StepSummary]:
    """The step summary of each checkpoint (all of one thread), by primary key."""
    if not checkpoints:
        return {}
    metadata, times = _rows(checkpoints)
    writes = _writes(checkpoints)
    summaries = {}
    for checkpoint in checkpoints:
        parent_key = (checkpoint.namespace, checkpoint.parent_checkpoint_id or "")
        summary = _summary(
            checkpoint,
            metadata.get(checkpoint.pk, {}),
            writes.get((checkpoint.namespace, checkpoint.checkpoint_id), []),
            writes.get(parent_key, []) if checkpoint.parent_checkpoint_id else [],
        )
        parent_time = times.get(parent_key)
        summary.since_previous = checkpoint.created_at - parent_time if parent_time is not None else None
        summaries[checkpoint.pk] = summary
    return summaries
