"""checkpnt's `Client` (async) and its blocking twin on Cairn: save, restore, handoff, timeline, expire."""

from __future__ import annotations

import os
from typing import Any, NoReturn

from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.checkpnt.backend import AsyncBackend, SyncBackend
from checkpoints.sdk.checkpnt.errors import checkpnt_errors, unsupported_backend
from checkpoints.sdk.checkpnt.operations import (
    expire_steps,
    handoff_steps,
    restore_steps,
    save_steps,
    timeline_steps,
)
from checkpoints.sdk.checkpnt.schema import Checkpoint, Framework, check_handoff_schema
from checkpoints.sdk.client import Client as CairnClient
from checkpoints.sdk.client_steps import arun, run
from checkpoints.sdk.closing import AsyncClosing, Closing
from checkpoints.sdk.endpoints.saves import arguments


class _Credentials:
    """Where a checkpnt client connects; `CheckpntSaver(client)` opens its own connections there."""

    def __init__(self, base_url: str | None, api_key: str | None, has_client: bool) -> None:
        if not has_client and (base_url is None or api_key is None):
            raise ValueError("pass base_url and api_key, or client")
        self.base_url, self.api_key = base_url, api_key

    def credentials(self) -> tuple[str, str]:
        if self.base_url is None or self.api_key is None:
            raise ValueError(
                "this client was built from a Cairn client: build it with base_url and api_key (or "
                "from_env()) to share it"
            )
        return self.base_url, self.api_key

    @classmethod
    def sqlite(cls, path: str = "./checkpnt_local.db") -> NoReturn:
        raise unsupported_backend("SQLite", f"Client.sqlite({path!r})")

    @classmethod
    def redis(cls, url: str = "redis://localhost:6379") -> NoReturn:
        raise unsupported_backend("Redis", f"Client.redis({url!r})")


class AsyncCheckpnt(_Credentials, AsyncClosing):
    """checkpnt's async `Client`, on Cairn."""

    _closer = "close"

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, *, client: AsyncClient | None = None
    ) -> None:
        super().__init__(base_url, api_key, client is not None)
        self.cairn = client or AsyncClient(base_url or "", api_key or "")
        self._backend = AsyncBackend(self)

    @classmethod
    def from_env(cls) -> AsyncCheckpnt:
        """A client for `CAIRN_URL` (default http://127.0.0.1:8000) with the key in `CAIRN_API_KEY`."""
        return cls(os.environ.get("CAIRN_URL", "http://127.0.0.1:8000"), os.environ["CAIRN_API_KEY"])

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
        continues the session (parent = its latest checkpoint); `step_index` None is the parent's + 1;
        `ttl_seconds` None takes the workspace's default TTL; extra keyword arguments become metadata."""
        with checkpnt_errors(parent_id):
            return await arun(self.cairn, save_steps(**arguments(locals())))

    async def restore(self, checkpoint_id: str, verify: bool = True) -> Checkpoint:
        """The checkpoint. CheckpointNotFoundError if unknown, CheckpointExpiredError (a not-found error)
        if expired, CheckpointIntegrityError if it does not hash to its checksum; Cairn verifies every
        restore, so `verify=False` skips nothing."""
        with checkpnt_errors(checkpoint_id):
            return await arun(self.cairn, restore_steps(checkpoint_id))

    async def handoff(
        self,
        checkpoint_id: str,
        target_agent_id: str,
        schema: str | None = None,
        *,
        context: dict[str, Any] | None = None,
        ttl_seconds: int | None = None,
    ) -> str:
        """Give the state to another agent: a child checkpoint owned by `target_agent_id` (metadata kept);
        returns its id. `schema`: see CheckpointBuilder.handoff."""
        check_handoff_schema(schema)
        with checkpnt_errors(checkpoint_id):
            return await arun(self.cairn, handoff_steps(checkpoint_id, target_agent_id, context, ttl_seconds))

    async def timeline(
        self, agent_id: str, session_id: str | None = None, limit: int = 50, *, include_state: bool = True
    ) -> list[Checkpoint]:
        """An agent's checkpoints, newest first (in one session, or across all of them)."""
        with checkpnt_errors():
            return await arun(self.cairn, timeline_steps(agent_id, session_id, limit, include_state))

    async def expire(self, checkpoint_id: str) -> bool:
        """Expire now (the checkpoint becomes a tombstone); False if it is unknown or already expired."""
        with checkpnt_errors(checkpoint_id):
            return await arun(self.cairn, expire_steps(checkpoint_id))


class SyncCheckpnt(_Credentials, Closing):
    """The blocking twin of `AsyncCheckpnt`, with the same methods."""

    def __init__(
        self, base_url: str | None = None, api_key: str | None = None, *, client: CairnClient | None = None
    ) -> None:
        super().__init__(base_url, api_key, client is not None)
        self.cairn = client or CairnClient(base_url or "", api_key or "")
        self._backend = SyncBackend(self)

    @classmethod
    def from_env(cls) -> SyncCheckpnt:
        return cls(os.environ.get("CAIRN_URL", "http://127.0.0.1:8000"), os.environ["CAIRN_API_KEY"])

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
        with checkpnt_errors(parent_id):
            return run(self.cairn, save_steps(**arguments(locals())))

    def restore(self, checkpoint_id: str, verify: bool = True) -> Checkpoint:
        with checkpnt_errors(checkpoint_id):
            return run(self.cairn, restore_steps(checkpoint_id))

    def handoff(
        self,
        checkpoint_id: str,
        target_agent_id: str,
        schema: str | None = None,
        *,
        context: dict[str, Any] | None = None,
        ttl_seconds: int | None = None,
    ) -> str:
        check_handoff_schema(schema)
        with checkpnt_errors(checkpoint_id):
            return run(self.cairn, handoff_steps(checkpoint_id, target_agent_id, context, ttl_seconds))

    def timeline(
        self, agent_id: str, session_id: str | None = None, limit: int = 50, *, include_state: bool = True
    ) -> list[Checkpoint]:
        with checkpnt_errors():
            return run(self.cairn, timeline_steps(agent_id, session_id, limit, include_state))

    def expire(self, checkpoint_id: str) -> bool:
        with checkpnt_errors(checkpoint_id):
            return run(self.cairn, expire_steps(checkpoint_id))
