"""checkpnt's operations as steps on Cairn's public client methods (one source for both clients)."""

from __future__ import annotations

from typing import Any

from checkpoints.ids import new_id
from checkpoints.sdk import UNSET
from checkpoints.sdk.checkpnt.schema import Checkpoint, Framework
from checkpoints.sdk.client_steps import Steps, call
from checkpoints.sdk.errors import Gone, NotFound
from checkpoints.sdk.models import Checkpoint as CairnCheckpoint
from checkpoints.sdk.models import Page, SaveResult

MAX_PAGE = 500


def save_steps(
    agent_id: str,
    framework: Framework | str,
    execution_state: Any,
    session_id: str | None,
    parent_id: str | None,
    context: dict[str, Any] | None,
    step_index: int | None,
    step_name: str | None,
    ttl_seconds: int | None,
    metadata: dict[str, Any],
    checkpoint_id: str | None = None,
) -> Steps[str]:
    saved: SaveResult = yield call(
        "checkpoint_save",
        thread_id=session_id or new_id(),
        agent_id=agent_id,
        state=execution_state,
        checkpoint_id=checkpoint_id,
        parent_id=UNSET if parent_id is None else parent_id,
        framework=Framework(framework).value,
        step_index=step_index,
        step_name=step_name,
        context=context,
        metadata=metadata,
        ttl_seconds=UNSET if ttl_seconds is None else ttl_seconds,
    )
    return saved.checkpoint.checkpoint_id


def save_built_steps(checkpoint: Checkpoint) -> Steps[str]:
    """Store a `CheckpointBuilder` checkpoint under its own id."""
    return (
        yield from save_steps(
            checkpoint.agent_id,
            checkpoint.framework,
            checkpoint.execution_state,
            checkpoint.session_id,
            checkpoint.parent_id,
            checkpoint.agent_context,
            checkpoint.step_index,
            checkpoint.step_name,
            checkpoint.ttl_seconds,
            checkpoint.metadata,
            checkpoint_id=checkpoint.checkpoint_id,
        )
    )


def restore_steps(checkpoint_id: str) -> Steps[Checkpoint]:
    restored: CairnCheckpoint = yield call("checkpoint_get_by_id", checkpoint_id)
    return Checkpoint.from_cairn(restored)


def handoff_steps(
    checkpoint_id: str, target_agent_id: str, context: dict[str, Any] | None, ttl_seconds: int | None
) -> Steps[str]:
    source: CairnCheckpoint = yield call("checkpoint_get_by_id", checkpoint_id)
    handed: CairnCheckpoint = yield call(
        "checkpoint_handoff",
        source.thread_id,
        checkpoint_id,
        target_agent_id=target_agent_id,
        context=UNSET if context is None else context,
        ttl_seconds=UNSET if ttl_seconds is None else ttl_seconds,
        namespace=source.namespace,
    )
    return handed.checkpoint_id


def timeline_steps(
    agent_id: str, session_id: str | None, limit: int, include_state: bool
) -> Steps[list[Checkpoint]]:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    found: list[Checkpoint] = []
    cursor: str | None = None
    while len(found) < limit:
        options = {"agent_id": agent_id, "include_state": include_state, "cursor": cursor}
        size = min(limit - len(found), MAX_PAGE)
        try:
            page: Page[CairnCheckpoint] = (
                yield call("checkpoints_list", session_id, limit=size, **options)
                if session_id is not None
                else call("checkpoints_timeline", limit=size, **options)
            )
        except NotFound:
            # A session never saved to (no such thread) has no history, as in checkpnt: [] and no latest.
            return found
        found.extend(Checkpoint.from_cairn(checkpoint) for checkpoint in page.results)
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def expire_steps(checkpoint_id: str) -> Steps[bool]:
    try:
        found: CairnCheckpoint = yield call("checkpoint_get_by_id", checkpoint_id)
        yield call("checkpoint_expire", found.thread_id, checkpoint_id, namespace=found.namespace)
    except (NotFound, Gone):
        return False
    return True


def latest_steps(agent_id: str, session_id: str) -> Steps[Checkpoint | None]:
    newest = yield from timeline_steps(agent_id, session_id, 1, True)
    return newest[0] if newest else None
