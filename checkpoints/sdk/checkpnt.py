"""checkpnt parity: the five operations — save, restore, handoff, timeline, expire — with checkpnt's argument
names, on Cairn. `session_id` is the Cairn thread, `execution_state` the state, `context` the agent context.

    from checkpoints.sdk.checkpnt import Client, Framework       # was: from checkpnt import Client, Framework

    async with Client.from_env() as client:                     # was: Client.sqlite()
        checkpoint_id = await client.save(
            agent_id="invoice-processor",
            framework=Framework.LANGGRAPH,
            execution_state=graph_state,
            context={"invoice_id": "INV-4821"},
        )
        checkpoint = await client.restore(checkpoint_id)         # checksum verified end to end

`Client` is the async client, as in checkpnt; `SyncClient` is its blocking twin. Unlike checkpnt, a
datetime or an int dict key in the state never makes a checkpoint unrestorable (one JSON normalisation:
datetimes become ISO strings, int keys strings), the checksum covers the whole record, handoff keeps the
metadata and gives the new checkpoint to the target agent, and the parent is validated.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any

from checkpoints.ids import new_id
from checkpoints.sdk import flows
from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.calls import checkpoints as cp_calls
from checkpoints.sdk.calls.base import UNSET
from checkpoints.sdk.client import Client as CairnClient
from checkpoints.sdk.models import Checkpoint as CairnCheckpoint
from checkpoints.sdk.models import Page

MAX_PAGE = 500


class Framework(enum.StrEnum):
    LANGGRAPH = "langgraph"
    CREWAI = "crewai"
    AUTOGEN = "autogen"
    CUSTOM = "custom"


@dataclass
class Checkpoint:
    """A checkpoint under checkpnt's field names. `execution_state` and `agent_context` are None in
    timelines fetched without state."""

    checkpoint_id: str
    agent_id: str
    session_id: str
    parent_id: str | None
    framework: Framework
    schema_version: str
    step_index: int
    step_name: str | None
    execution_state: Any
    agent_context: dict[str, Any] | None
    checksum: str
    created_at: datetime
    expires_at: datetime | None = None
    handoff_target: str | None = None
    handoff_from: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    verified: bool = False

    @property
    def ttl_seconds(self) -> int | None:
        """Seconds the checkpoint had to live when it was saved (None: no expiry)."""
        if self.expires_at is None:
            return None
        return max(0, round((self.expires_at - self.created_at).total_seconds()))

    @classmethod
    def from_cairn(cls, checkpoint: CairnCheckpoint) -> Checkpoint:
        return cls(
            checkpoint_id=checkpoint.checkpoint_id,
            agent_id=checkpoint.agent_id,
            session_id=checkpoint.thread_id,
            parent_id=checkpoint.parent_id,
            framework=Framework(checkpoint.framework),
            schema_version=checkpoint.schema_version,
            step_index=checkpoint.step_index,
            step_name=checkpoint.step_name,
            execution_state=checkpoint.state,
            agent_context=checkpoint.context,
            checksum=checkpoint.checksum,
            created_at=checkpoint.created_at,
            expires_at=checkpoint.expires_at,
            handoff_target=checkpoint.handoff_target,
            handoff_from=checkpoint.handoff_from,
            metadata=dict(checkpoint.metadata or {}),
            verified=checkpoint.verified,
        )


class _Operations:
    """The five operations as flows (one implementation for both clients) and the ids they have seen."""

    def __init__(self) -> None:
        self._where: dict[str, tuple[str, str]] = {}

    def _seen(self, checkpoint: CairnCheckpoint) -> Checkpoint:
        self._where[checkpoint.checkpoint_id] = (checkpoint.thread_id, checkpoint.namespace)
        return Checkpoint.from_cairn(checkpoint)

    def _locate(self, checkpoint_id: str) -> flows.Flow[tuple[str, str]]:
        """The thread and namespace of a checkpoint id (remembered, else restored by id: AmbiguousId if
        copies exist in several sessions)."""
        if checkpoint_id not in self._where:
            found: CairnCheckpoint = yield cp_calls.checkpoint_get_by_id(checkpoint_id)
            self._seen(found)
        return self._where[checkpoint_id]

    def save_flow(
        self,
        memory: flows.ClientMemory,
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
    ) -> flows.Flow[str]:
        saved = yield from flows.checkpoint_save(
            memory,
            thread_id=session_id or new_id(),
            agent_id=agent_id,
            state=execution_state,
            parent_id=UNSET if parent_id is None else parent_id,
            framework=Framework(framework).value,
            step_index=step_index,
            step_name=step_name,
            context=context,
            metadata=metadata,
            ttl_seconds=UNSET if ttl_seconds is None else ttl_seconds,
        )
        return self._seen(saved.checkpoint).checkpoint_id

    def restore_flow(self, checkpoint_id: str) -> flows.Flow[Checkpoint]:
        restored: CairnCheckpoint = yield cp_calls.checkpoint_get_by_id(checkpoint_id)
        return self._seen(restored)

    def handoff_flow(
        self,
        checkpoint_id: str,
        target_agent_id: str,
        context: dict[str, Any] | None,
        ttl_seconds: int | None,
    ) -> flows.Flow[str]:
        thread_id, namespace = yield from self._locate(checkpoint_id)
        handed: CairnCheckpoint = yield cp_calls.checkpoint_handoff(
            thread_id,
            checkpoint_id,
            target_agent_id=target_agent_id,
            context=UNSET if context is None else context,
            ttl_seconds=UNSET if ttl_seconds is None else ttl_seconds,
            namespace=namespace,
        )
        return self._seen(handed).checkpoint_id

    def timeline_flow(
        self, agent_id: str, session_id: str | None, limit: int, include_state: bool
    ) -> flows.Flow[list[Checkpoint]]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        found: list[Checkpoint] = []
        cursor: str | None = None
        while len(found) < limit:
            size = min(limit - len(found), MAX_PAGE)
            page: Page[CairnCheckpoint]
            if session_id is not None:
                page = yield cp_calls.checkpoints_list(
                    session_id, agent_id=agent_id, include_state=include_state, limit=size, cursor=cursor
                )
            else:
                page = yield cp_calls.checkpoints_timeline(
                    agent_id=agent_id, include_state=include_state, limit=size, cursor=cursor
                )
            found.extend(self._seen(checkpoint) for checkpoint in page.results)
            cursor = page.next_cursor
            if not cursor:
                break
        return found[:limit]

    def expire_flow(self, checkpoint_id: str) -> flows.Flow[None]:
        thread_id, namespace = yield from self._locate(checkpoint_id)
        yield cp_calls.checkpoint_expire(thread_id, checkpoint_id, namespace=namespace)


class AsyncCheckpnt(_Operations):
    """checkpnt's async `Client`, on Cairn."""

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, *, client: AsyncClient | None = None
    ):
        super().__init__()
        if client is None and (base_url is None or api_key is None):
            raise ValueError("pass base_url and api_key, or client")
        self.cairn = client or AsyncClient(base_url or "", api_key or "")

    @classmethod
    def from_env(cls) -> AsyncCheckpnt:
        return cls(client=AsyncClient.from_env())

    async def __aenter__(self) -> AsyncCheckpnt:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self.cairn.aclose()

    async def save(
        self,
        agent_id: str,
        framework: Framework | str,
        execution_state: Any,
        session_id: str | None = None,
        parent_id: str | None = None,
        context: dict[str, Any] | None = None,
        step_index: int | None = None,
        step_name: str | None = None,
        ttl_seconds: int | None = None,
        **metadata: Any,
    ) -> str:
        """Save state; returns the checkpoint id. `session_id` None starts a new session; `parent_id` None
        continues the session (parent = its latest checkpoint); `ttl_seconds` None takes the workspace's
        default TTL; extra keyword arguments become metadata."""
        return await self.cairn.run(
            self.save_flow(
                self.cairn.memory,
                agent_id,
                framework,
                execution_state,
                session_id,
                parent_id,
                context,
                step_index,
                step_name,
                ttl_seconds,
                metadata,
            )
        )

    async def restore(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint, re-hashed (ChecksumMismatch) — Gone if it expired."""
        return await self.cairn.run(self.restore_flow(checkpoint_id))

    async def handoff(
        self,
        checkpoint_id: str,
        target_agent_id: str,
        context: dict[str, Any] | None = None,
        ttl_seconds: int | None = None,
    ) -> str:
        """Give the state to another agent: a child checkpoint owned by `target_agent_id`; returns its id."""
        return await self.cairn.run(self.handoff_flow(checkpoint_id, target_agent_id, context, ttl_seconds))

    async def timeline(
        self, agent_id: str, session_id: str | None = None, limit: int = 50, *, include_state: bool = False
    ) -> list[Checkpoint]:
        """An agent's checkpoints, newest first (in one session, or across all of them)."""
        return await self.cairn.run(self.timeline_flow(agent_id, session_id, limit, include_state))

    async def expire(self, checkpoint_id: str) -> None:
        """Expire now: the checkpoint becomes a tombstone (its ids and checksum stay for the lineage)."""
        await self.cairn.run(self.expire_flow(checkpoint_id))


class SyncCheckpnt(_Operations):
    """The blocking twin of `AsyncCheckpnt`, with the same methods."""

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, *, client: CairnClient | None = None
    ) -> None:
        super().__init__()
        if client is None and (base_url is None or api_key is None):
            raise ValueError("pass base_url and api_key, or client")
        self.cairn = client or CairnClient(base_url or "", api_key or "")

    @classmethod
    def from_env(cls) -> SyncCheckpnt:
        return cls(client=CairnClient.from_env())

    def __enter__(self) -> SyncCheckpnt:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.cairn.close()

    def save(
        self,
        agent_id: str,
        framework: Framework | str,
        execution_state: Any,
        session_id: str | None = None,
        parent_id: str | None = None,
        context: dict[str, Any] | None = None,
        step_index: int | None = None,
        step_name: str | None = None,
        ttl_seconds: int | None = None,
        **metadata: Any,
    ) -> str:
        return self.cairn.run(
            self.save_flow(
                self.cairn.memory,
                agent_id,
                framework,
                execution_state,
                session_id,
                parent_id,
                context,
                step_index,
                step_name,
                ttl_seconds,
                metadata,
            )
        )

    def restore(self, checkpoint_id: str) -> Checkpoint:
        return self.cairn.run(self.restore_flow(checkpoint_id))

    def handoff(
        self,
        checkpoint_id: str,
        target_agent_id: str,
        context: dict[str, Any] | None = None,
        ttl_seconds: int | None = None,
    ) -> str:
        return self.cairn.run(self.handoff_flow(checkpoint_id, target_agent_id, context, ttl_seconds))

    def timeline(
        self, agent_id: str, session_id: str | None = None, limit: int = 50, *, include_state: bool = False
    ) -> list[Checkpoint]:
        return self.cairn.run(self.timeline_flow(agent_id, session_id, limit, include_state))

    def expire(self, checkpoint_id: str) -> None:
        self.cairn.run(self.expire_flow(checkpoint_id))


Client = AsyncCheckpnt
"""checkpnt's `Client` is async: `from checkpoints.sdk.checkpnt import Client` is the one-line switch."""
SyncClient = SyncCheckpnt

__all__ = ["AsyncCheckpnt", "Checkpoint", "Client", "Framework", "SyncCheckpnt", "SyncClient"]
