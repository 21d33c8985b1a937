"""The API calls of the LangGraph saver's server endpoints (checkpoints.api.views.langgraph), written once
for its sync and async methods (checkpoints.sdk.langgraph.saver)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checkpoints.sdk.endpoints.base import get_call, params, positive_limit, seg
from checkpoints.sdk.endpoints.saves import save_call
from checkpoints.sdk.models import CheckpointDraft, Page, SaveResult
from checkpoints.sdk.transport import Call

MAX_RUN_IDS = 1000
MAX_WRITE_TASKS = 100  # tasks in one request of `langgraph_writes` (the server refuses more)


def langgraph_save(draft: CheckpointDraft, *, inherit: Mapping[str, Any] | None) -> Call[SaveResult]:
    """Save a LangGraph checkpoint. With `inherit` = {channel: version}, those channels are left out of the
    body and taken by the server from the parent, which stores them at those versions; the checksum still
    covers the whole state. Idempotent (the id is LangGraph's)."""
    body = draft.body(with_parent=True)
    if inherit:
        state = dict(draft.state)
        state["channel_values"] = {
            name: value for name, value in state["channel_values"].items() if name not in inherit
        }
        body["state"] = state
        body["inherit"] = {"checkpoint_id": draft.parent_id, "channels": dict(inherit)}
    return save_call("POST", f"langgraph/threads/{seg(draft.thread_id)}/checkpoints/", draft, body)


def langgraph_tuples(
    *,
    thread_id: str | None = None,
    namespace: str | None = None,
    checkpoint_id: str | None = None,
    before: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[dict[str, Any]]]:
    """LangGraph checkpoints with state and pending writes, newest id first (rows are raw API JSON)."""
    query = params(
        thread_id=thread_id,
        namespace=namespace,
        checkpoint_id=checkpoint_id,
        before=before,
        metadata=dict(metadata) if metadata is not None else None,
        limit=positive_limit(limit),
        cursor=cursor,
    )
    return get_call("langgraph/checkpoints/", lambda r: Page.parse(r.body, dict), query)


def langgraph_writes(thread_id: str, tasks: Sequence[Mapping[str, Any]]) -> Call[int]:
    """Store up to MAX_WRITE_TASKS tasks' writes (each as `endpoints.checkpoints.pending_writes_task` gives
    it) on one thread, in order. Idempotent, like each task's writes. A refused batch may have stored the
    tasks before the one refused."""
    return Call(
        "POST",
        f"langgraph/threads/{seg(thread_id)}/writes/",
        lambda r: int(r.body["tasks"]),
        body={"tasks": list(tasks)},
        idempotent=True,
    )


def langgraph_delete_runs(run_ids: Sequence[str]) -> Call[int]:
    """Tombstone the checkpoints of up to MAX_RUN_IDS runs; idempotent (a second call finds none)."""
    return Call(
        "POST",
        "langgraph/runs/delete/",
        lambda r: int(r.body["deleted"]),
        body={"run_ids": list(run_ids)},
        idempotent=True,
    )
