"""Server support for the SDK's LangGraph saver (`checkpoints.sdk.langgraph`).

Four things the REST contract lacks and a LangGraph checkpointer needs:

- **Saving without re-sending unchanged channels.** LangGraph hands `put()` every channel value but says in
  `new_versions` which changed. The saver sends only those, and names the unchanged ones with their versions
  and the checkpoint they come from (its parent). `langgraph_checkpoint_save` copies those values from the
  base checkpoint's stored state, *then* saves through `checkpoint_save`, so the stored checkpoint is whole:
  its checksum (computed by the client over the whole state it holds) covers every value, the dashboard
  shows every value, and no checkpoint depends on another one's row. TTLs, keep-latest-N retention, prune,
  tombstones, forks and copies can therefore never strand a value in a deleted ancestor. The price is
  storage (unchanged values are stored again per checkpoint); the wire carries only what changed.
- **Listing checkpoints with their pending writes** in one request (`langgraph_tuples`), ordered by
  checkpoint id as LangGraph orders them, across one thread or the whole workspace.
- **Several tasks' pending writes in one request** (`langgraph_writes_put`): the async saver sends a
  thread's writes one request at a time, and the tasks whose writes queued meanwhile go together in the
  next one (docs/performance.md).
- **Deleting by run** (`checkpoints_delete_for_runs`): the checkpoints of the given runs become tombstones
  (payload and pending writes deleted, ids and lineage kept), in one transaction, with an audit event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from checkpoints.exceptions import Conflict, NotFound, PreconditionFailed, ValidationFailed
from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.checkpoint_reads import checkpoint_get
from checkpoints.services.checkpoints import (
    SaveResult,
    checkpoint_save,
    checkpoints_tombstone,
    pending_writes_put,
    pending_writes_put_at_once,
    pending_writes_rows,
)
from checkpoints.services.optional import not_none
from checkpoints.storage.checkpoint_pages import CheckpointPages

FRAMEWORK = Checkpoint.Framework.LANGGRAPH


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", {"fields": {field: [message]}})


def _inherited_values(
    *, workspace: Workspace, thread_id: str, namespace: str, base_id: str, channels: dict[str, Any]
) -> dict[str, Any]:
    """The stored values of `channels` at the versions named, taken from the base checkpoint's state.

    PreconditionFailed (the SDK then sends the whole state) when the base is gone, not a LangGraph
    checkpoint, or holds another version of a channel.
    """
    try:
        base: Checkpoint | None = checkpoint_get(
            workspace=workspace, thread_id=thread_id, checkpoint_id=base_id, namespace=namespace
        )
    except NotFound:
        base = None
    stored = base.decoded("state") if base is not None and base.is_readable() else None
    if not isinstance(stored, dict) or not isinstance(stored.get("channel_values"), dict):
        raise PreconditionFailed(
            "The base checkpoint is gone or holds no channel values; send every value.",
            {"inherit": {"checkpoint_id": base_id, "missing_channels": sorted(channels)}},
        )
    values, versions = stored["channel_values"], stored.get("channel_versions") or {}
    missing = sorted(
        name for name, version in channels.items() if name not in values or versions.get(name) != version
    )
    if missing:
        raise PreconditionFailed(
            "The base checkpoint does not hold these channels at these versions; send their values.",
            {"inherit": {"checkpoint_id": base_id, "missing_channels": missing}},
        )
    return {name: values[name] for name in channels}


def langgraph_checkpoint_save(
    *, workspace: Workspace, thread_id: str, arguments: dict[str, Any], inherit: dict[str, Any] | None
) -> SaveResult:
    """Save a LangGraph checkpoint whose state may leave out channels unchanged since `inherit`'s base.

    `arguments` are checkpoint_save's keyword arguments (state = the LangGraph checkpoint with
    `channel_values` holding the changed channels). `inherit` = {"checkpoint_id": base, "channels":
    {name: version}}. The composed state must hash to the client's checksum; if it does not, the base held
    something else than the client believed, and PreconditionFailed tells the SDK to send everything.
    """
    state = arguments["state"]
    if inherit and inherit["channels"]:
        if not isinstance(state, dict) or not isinstance(state.get("channel_values"), dict):
            raise _invalid("state", "A LangGraph checkpoint with a channel_values object is expected.")
        overlap = sorted(set(state["channel_values"]) & set(inherit["channels"]))
        if overlap:
            raise _invalid("inherit", f"Channels both sent and inherited: {', '.join(overlap)}.")
        values = _inherited_values(
            workspace=workspace,
            thread_id=thread_id,
            namespace=arguments.get("namespace", ""),
            base_id=inherit["checkpoint_id"],
            channels=inherit["channels"],
        )
        state = {**state, "channel_values": {**state["channel_values"], **values}}
    try:
        return checkpoint_save(
            workspace=workspace, thread_id=thread_id, **{**arguments, "state": state, "framework": FRAMEWORK}
        )
    except ValidationFailed as exc:
        if inherit and "checksum" in exc.details.get("fields", {}):
            raise PreconditionFailed(
                "The state composed from the base does not hash to the checksum sent; send every value.",
                {"inherit": {"checkpoint_id": inherit["checkpoint_id"], "checksum": "mismatch"}},
            ) from exc
        raise


def langgraph_writes_put(
    *, workspace: Workspace, thread_id: str, tasks: Sequence[Mapping[str, Any]], user_id: str | None = None
) -> int:
    """Store several tasks' writes on one thread (each task: `checkpoint_id`, `task_id`, `writes`, and
    optionally `namespace` and `task_path`), as storing each in turn with `pending_writes_put` would; the
    number of tasks.

    Every value is checked before anything is stored. On PostgreSQL outside a transaction all the tasks are
    one round trip when the thread is the key's user's and no checkpoint they name has expired. Otherwise
    each task is stored on its own, in order, and the first refusal (another user's thread, an expired
    checkpoint) is raised with the tasks before it stored, as separate requests would have left them.
    Sending the batch again, or each task on its own, is safe: writes are idempotent."""
    if not tasks:
        raise _invalid("tasks", "Give at least one task.")
    rows = pending_writes_rows(tasks, timezone.now(), where="tasks[{}].")
    if not pending_writes_put_at_once(rows, workspace=workspace, thread_id=thread_id, user_id=user_id):
        for task in tasks:
            pending_writes_put(
                workspace=workspace,
                thread_id=thread_id,
                namespace=task.get("namespace", ""),
                checkpoint_id=task["checkpoint_id"],
                task_id=task["task_id"],
                task_path=task.get("task_path", ""),
                writes=task["writes"],
                user_id=user_id,
            )
    return len(tasks)


def langgraph_tuples(
    *,
    workspace: Workspace,
    thread_id: str | None,
    namespace: str | None,
    checkpoint_id: str | None,
    before: str | None,
) -> CheckpointPages:
    """Live LangGraph checkpoints with their documents, for a page ordered by checkpoint id, newest first
    (LangGraph's order: its ids grow with time). `before` keeps ids below it, whether or not that checkpoint
    exists, exactly as LangGraph's savers compare. Per thread+namespace the page seeks on the unique
    (thread, namespace, checkpoint_id) index; workspace-wide on `checkpoint_ws_public_id`."""
    conditions: dict[str, Any] = {
        "live": timezone.now(),
        "framework": FRAMEWORK,
        **not_none(namespace=namespace, checkpoint_id=checkpoint_id, below_checkpoint_id=before),
    }
    return CheckpointPages(workspace, conditions, payload=True, thread_id=thread_id)


@transaction.atomic
def checkpoints_delete_for_runs(*, workspace: Workspace, run_ids: Sequence[str], actor: Actor) -> int:
    """Tombstone every live checkpoint of the given runs (LangGraph `delete_for_runs`); returns how many.

    All or nothing: a pinned checkpoint among them is a Conflict (unpin it first), as for a single expire.
    """
    runs = Checkpoint.objects.for_workspace(workspace).live().filter(run_id__in=list(run_ids))
    # Threads first, in primary-key order, as every writer under a thread locks: no deadlock with a save
    # or an expire racing on the same threads.
    thread_pks = sorted(set(runs.values_list("thread_id", flat=True)))
    list(Thread.objects.select_for_update().filter(pk__in=thread_pks).order_by("pk").values_list("pk"))
    targets = list(runs.select_related("thread").without_payload())
    pinned = [c for c in targets if c.pinned]
    if pinned:
        raise Conflict(
            "Some checkpoints of these runs are pinned; unpin them first.",
            {"pinned": [{"thread_id": c.thread.thread_id, "checkpoint_id": c.checkpoint_id} for c in pinned]},
        )
    changed = checkpoints_tombstone(pks=[c.pk for c in targets], now=timezone.now())
    if changed:
        audit_record(
            workspace=workspace,
            actor=actor,
            action="checkpoint.delete_for_runs",
            target_type="run",
            target_id=json.dumps(sorted(set(run_ids)))[:512],
            details={
                "run_ids": sorted(set(run_ids)),
                "tombstoned": changed,
                "threads": sorted({c.thread.thread_id for c in targets}),
            },
        )
    return changed
