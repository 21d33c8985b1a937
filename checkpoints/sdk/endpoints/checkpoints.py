"""The API methods for checkpoints, pending writes and the workspace timeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from checkpoints.sdk import flows
from checkpoints.sdk.calls import checkpoints as cp
from checkpoints.sdk.calls.base import UNSET, Unset
from checkpoints.sdk.endpoints.base import Endpoints, endpoint
from checkpoints.sdk.models import Checkpoint, Diff, Page, PendingWrite, SaveResult
from checkpoints.sdk.transport import Call


class CheckpointEndpoints(Endpoints):
    # --- checkpoints -------------------------------------------------------------------------------------

    @endpoint
    def checkpoint_save(
        self,
        *,
        thread_id: str,
        agent_id: str,
        state: Any,
        namespace: str = "",
        checkpoint_id: str | None = None,
        parent_id: str | Unset | None = UNSET,
        framework: str = "custom",
        schema_version: str = "1.0",
        step_index: int | None = None,
        step_name: str | None = None,
        run_id: str | None = None,
        context: Any = None,
        metadata: Any = None,
        ttl_seconds: int | Unset | None = UNSET,
        pinned: bool = False,
    ) -> flows.Flow[SaveResult]:
        """Save a checkpoint (the thread is created if missing), checksummed here and verified by the server.

        `parent_id` omitted: the namespace head; None: a root; an id: that checkpoint. `ttl_seconds`
        omitted: the workspace default; None: never expires. Values go through one JSON normalisation
        (datetimes become ISO strings, tuples lists, int keys strings; NaN is refused).
        """
        return flows.checkpoint_save(
            self.memory,
            thread_id=thread_id,
            agent_id=agent_id,
            state=state,
            namespace=namespace,
            checkpoint_id=checkpoint_id,
            parent_id=parent_id,
            framework=framework,
            schema_version=schema_version,
            step_index=step_index,
            step_name=step_name,
            run_id=run_id,
            context=context,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
            pinned=pinned,
        )

    @endpoint
    def checkpoints_list(
        self,
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
        return cp.checkpoints_list(
            thread_id,
            namespace=namespace,
            agent_id=agent_id,
            step_name=step_name,
            run_id=run_id,
            before=before,
            metadata=metadata,
            include_state=include_state,
            include_tombstones=include_tombstones,
            limit=limit,
            cursor=cursor,
        )

    @endpoint
    def checkpoint_get(
        self, thread_id: str, checkpoint_id: str, *, namespace: str | None = None
    ) -> flows.Flow[Checkpoint]:
        """Restore a checkpoint, re-hashed here (ChecksumMismatch) — Gone (with `.tombstone`) if expired."""
        return flows.restore(cp.checkpoint_get(thread_id, checkpoint_id, namespace=namespace), self.memory)

    @endpoint
    def checkpoint_expire(
        self, thread_id: str, checkpoint_id: str, *, namespace: str | None = None
    ) -> Call[None]:
        """Expire now: the checkpoint becomes a tombstone."""
        return cp.checkpoint_expire(thread_id, checkpoint_id, namespace=namespace)

    @endpoint
    def checkpoint_set_ttl(
        self,
        thread_id: str,
        checkpoint_id: str,
        *,
        ttl_seconds: int | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
        namespace: str | None = None,
    ) -> Call[Checkpoint]:
        """Set (seconds from now), extend or clear (None) the expiry, and/or pin or unpin."""
        return cp.checkpoint_set_ttl(
            thread_id, checkpoint_id, ttl_seconds=ttl_seconds, pinned=pinned, namespace=namespace
        )

    @endpoint
    def checkpoint_handoff(
        self,
        thread_id: str,
        checkpoint_id: str,
        *,
        target_agent_id: str,
        context: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
        namespace: str | None = None,
    ) -> flows.Flow[Checkpoint]:
        """Hand the state to another agent: a child checkpoint owned by `target_agent_id`."""
        handed: Checkpoint = yield cp.checkpoint_handoff(
            thread_id,
            checkpoint_id,
            target_agent_id=target_agent_id,
            context=context,
            ttl_seconds=ttl_seconds,
            namespace=namespace,
        )
        self.memory.saw(handed, is_head=True)
        return handed

    @endpoint
    def checkpoint_diff(
        self,
        thread_id: str,
        checkpoint_id: str,
        *,
        against: str | None = None,
        namespace: str | None = None,
        against_thread_id: str | None = None,
        against_namespace: str | None = None,
    ) -> Call[Diff]:
        """RFC 6902 JSON Patch from `against` (default: the parent) to this checkpoint."""
        return cp.checkpoint_diff(
            thread_id,
            checkpoint_id,
            against=against,
            namespace=namespace,
            against_thread_id=against_thread_id,
            against_namespace=against_namespace,
        )

    @endpoint
    def checkpoint_lineage(
        self, thread_id: str, checkpoint_id: str, *, namespace: str | None = None, limit: int | None = None
    ) -> Call[Page[Checkpoint]]:
        """Ancestors up to the root, nearest first (tombstones included)."""
        return cp.checkpoint_lineage(thread_id, checkpoint_id, namespace=namespace, limit=limit)

    @endpoint
    def pending_writes_list(
        self, thread_id: str, checkpoint_id: str, *, namespace: str = ""
    ) -> Call[list[PendingWrite]]:
        return cp.pending_writes_list(thread_id, checkpoint_id, namespace=namespace)

    @endpoint
    def pending_writes_put(
        self,
        thread_id: str,
        checkpoint_id: str,
        *,
        task_id: str,
        writes: Sequence[Mapping[str, Any]],
        task_path: str = "",
        namespace: str = "",
    ) -> Call[list[PendingWrite]]:
        """Store LangGraph pending writes (`{channel, value, idx?, type?}`) for a checkpoint id."""
        return cp.pending_writes_put(
            thread_id,
            checkpoint_id,
            task_id=task_id,
            writes=writes,
            task_path=task_path,
            namespace=namespace,
        )

    @endpoint
    def checkpoints_timeline(
        self,
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
        return cp.checkpoints_timeline(
            agent_id=agent_id,
            thread_id=thread_id,
            handoff_target=handoff_target,
            framework=framework,
            run_id=run_id,
            namespace=namespace,
            created_after=created_after,
            created_before=created_before,
            metadata=metadata,
            include_state=include_state,
            limit=limit,
            cursor=cursor,
        )

    @endpoint
    def checkpoint_get_by_id(self, checkpoint_id: str) -> flows.Flow[Checkpoint]:
        """Restore by id alone (AmbiguousId if copies exist in several threads)."""
        return flows.restore(cp.checkpoint_get_by_id(checkpoint_id), self.memory)
