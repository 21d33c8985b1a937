"""The API calls for checkpoints, pending writes and the workspace timeline (saves: checkpoints.sdk.endpoints
.saves). Each builder is the one definition of its request; `CheckpointEndpoints` binds them as methods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from checkpoints.sdk.endpoints.base import (
    Endpoints,
    body_of,
    get_call,
    list_params,
    params,
    parse_checkpoint,
    parse_checkpoint_page,
    parse_none,
    positive_limit,
    request,
    seg,
)
from checkpoints.sdk.jsonvalue import to_json, to_json_object
from checkpoints.sdk.models import UNSET, Checkpoint, Diff, Page, PendingWrite, Unset
from checkpoints.sdk.transport import Call, Response


def checkpoints_list(
    thread_id: str,
    *,
    namespace: str | None = None,
    agent_id: str | None = None,
    step_name: str | None = None,
    run_id: str | None = None,
    before: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    include_state: bool = False,
    include_tombstones: bool = False,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[Checkpoint]]:
    """A thread's timeline, newest first; `metadata` matches by containment."""
    query = list_params(locals(), "thread_id")
    return get_call(f"threads/{seg(thread_id)}/checkpoints/", parse_checkpoint_page, query)


def _checkpoint_path(thread_id: str, checkpoint_id: str) -> str:
    return f"threads/{seg(thread_id)}/checkpoints/{seg(checkpoint_id)}/"


def checkpoint_get(thread_id: str, checkpoint_id: str, *, namespace: str | None = None) -> Call[Checkpoint]:
    """Restore a checkpoint, re-hashed here (ChecksumMismatch) — Gone (with `.tombstone`) if expired."""
    return get_call(_checkpoint_path(thread_id, checkpoint_id), parse_checkpoint, params(namespace=namespace))


def checkpoint_expire(thread_id: str, checkpoint_id: str, *, namespace: str | None = None) -> Call[None]:
    """Expire now: the checkpoint becomes a tombstone."""
    # A retry that finds a tombstone (410) means the first attempt did the work.
    return Call(
        "DELETE",
        _checkpoint_path(thread_id, checkpoint_id),
        parse_none,
        params=params(namespace=namespace),
        idempotent=True,
        done_on_retry=frozenset({410}),
    )


def checkpoint_set_ttl(
    thread_id: str,
    checkpoint_id: str,
    *,
    ttl_seconds: int | Unset | None = UNSET,
    pinned: bool | Unset = UNSET,
    namespace: str | None = None,
) -> Call[Checkpoint]:
    """Set (seconds from now), extend or clear (None) the expiry, and/or pin or unpin."""
    if ttl_seconds is UNSET and pinned is UNSET:
        raise ValueError("pass ttl_seconds (seconds from now, or None for no expiry) and/or pinned")
    return Call(
        "POST",
        _checkpoint_path(thread_id, checkpoint_id) + "ttl/",
        lambda r: Checkpoint.from_dict(r.body),
        params=params(namespace=namespace),
        body=body_of(ttl_seconds=ttl_seconds, pinned=pinned),
        idempotent=True,
    )


def checkpoint_handoff(
    thread_id: str,
    checkpoint_id: str,
    *,
    target_agent_id: str,
    context: Mapping[str, Any] | Unset = UNSET,
    ttl_seconds: int | Unset | None = UNSET,
    namespace: str | None = None,
) -> Call[Checkpoint]:
    """Hand the state to another agent: a child checkpoint owned by `target_agent_id`."""
    # Not idempotent: every handoff creates a new checkpoint with a server-chosen id.
    body = body_of(
        target_agent_id=target_agent_id,
        context=to_json_object(context, path="$.context") if not isinstance(context, Unset) else UNSET,
        ttl_seconds=ttl_seconds,
    )
    return Call(
        "POST",
        _checkpoint_path(thread_id, checkpoint_id) + "handoff/",
        parse_checkpoint,
        params=params(namespace=namespace),
        body=body,
    )


def checkpoint_diff(
    thread_id: str,
    checkpoint_id: str,
    *,
    against: str | None = None,
    namespace: str | None = None,
    against_thread_id: str | None = None,
    against_namespace: str | None = None,
) -> Call[Diff]:
    """RFC 6902 JSON Patch from `against` (default: the parent) to this checkpoint (DiffTooLarge when the
    two hold more JSON values than the server compares)."""
    query = params(
        namespace=namespace,
        against=against,
        against_thread_id=against_thread_id,
        against_namespace=against_namespace,
    )
    return get_call(
        _checkpoint_path(thread_id, checkpoint_id) + "diff/", lambda r: Diff.from_dict(r.body), query
    )


def checkpoint_lineage(
    thread_id: str, checkpoint_id: str, *, namespace: str | None = None, limit: int | None = None
) -> Call[Page[Checkpoint]]:
    """Ancestors up to the root, nearest first (tombstones included)."""
    query = params(namespace=namespace, limit=positive_limit(limit))
    return get_call(_checkpoint_path(thread_id, checkpoint_id) + "lineage/", parse_checkpoint_page, query)


def _writes(response: Response) -> list[PendingWrite]:
    return [PendingWrite.from_dict(row) for row in response.body["results"]]


def pending_writes_list(
    thread_id: str, checkpoint_id: str, *, namespace: str = ""
) -> Call[list[PendingWrite]]:
    return get_call(
        _checkpoint_path(thread_id, checkpoint_id) + "writes/", _writes, params(namespace=namespace)
    )


def pending_writes_task(
    checkpoint_id: str,
    *,
    task_id: str,
    writes: Sequence[Mapping[str, Any]],
    task_path: str = "",
    namespace: str = "",
) -> dict[str, Any]:
    """A task's LangGraph pending writes (`{channel, value, idx?, type?}`) for a checkpoint id, as the writes
    endpoints take them (`task_writes_put`, and a batch of tasks: `endpoints.langgraph.langgraph_writes`)."""
    items = []
    for position, write in enumerate(writes):
        item = {"channel": write["channel"], "value": to_json(write["value"], path=f"$.writes[{position}]")}
        if write.get("idx") is not None:
            item["idx"] = write["idx"]
        if write.get("type"):
            item["type"] = write["type"]
        items.append(item)
    return {
        "checkpoint_id": checkpoint_id,
        "namespace": namespace,
        "task_id": task_id,
        "task_path": task_path,
        "writes": items,
    }


def pending_writes_put(
    thread_id: str,
    checkpoint_id: str,
    *,
    task_id: str,
    writes: Sequence[Mapping[str, Any]],
    task_path: str = "",
    namespace: str = "",
) -> Call[list[PendingWrite]]:
    """Store LangGraph pending writes (`{channel, value, idx?, type?}`) for a checkpoint id."""
    task = pending_writes_task(
        checkpoint_id, task_id=task_id, writes=writes, task_path=task_path, namespace=namespace
    )
    return task_writes_put(thread_id, task)


def task_writes_put(thread_id: str, task: Mapping[str, Any]) -> Call[list[PendingWrite]]:
    """Store one task's writes (`pending_writes_task`) at its checkpoint's writes endpoint."""
    # Idempotent: a repeated write is a no-op (writes at a negative idx, LangGraph's special channels,
    # replace the earlier one with the same value).
    return Call(
        "POST",
        _checkpoint_path(thread_id, task["checkpoint_id"]) + "writes/",
        _writes,
        params=params(namespace=task["namespace"]),
        body={"task_id": task["task_id"], "task_path": task["task_path"], "writes": task["writes"]},
        idempotent=True,
    )


def checkpoints_timeline(
    *,
    agent_id: str | None = None,
    thread_id: str | None = None,
    handoff_target: str | None = None,
    framework: str | None = None,
    run_id: str | None = None,
    namespace: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    metadata: Mapping[str, Any] | None = None,
    include_state: bool = False,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[Checkpoint]]:
    """The workspace-wide timeline, newest first (`handoff_target` = an agent's inbox)."""
    return get_call("checkpoints/", parse_checkpoint_page, list_params(locals()))


def checkpoint_get_by_id(checkpoint_id: str) -> Call[Checkpoint]:
    """Restore by id alone (AmbiguousId if copies exist in several threads)."""
    return get_call(f"checkpoints/{seg(checkpoint_id)}/", parse_checkpoint)


class CheckpointEndpoints(Endpoints):
    checkpoints_list = request(checkpoints_list)
    checkpoint_get = request(checkpoint_get, remember="seen")
    checkpoint_expire = request(checkpoint_expire)
    checkpoint_set_ttl = request(checkpoint_set_ttl)
    checkpoint_handoff = request(checkpoint_handoff, remember="head")
    checkpoint_diff = request(checkpoint_diff)
    checkpoint_lineage = request(checkpoint_lineage)
    pending_writes_list = request(pending_writes_list)
    pending_writes_put = request(pending_writes_put)
    checkpoints_timeline = request(checkpoints_timeline)
    checkpoint_get_by_id = request(checkpoint_get_by_id, remember="seen")
