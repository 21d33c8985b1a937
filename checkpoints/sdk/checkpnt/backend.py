"""checkpnt's backend interface (`client._backend`) on Cairn, for code that stores `CheckpointBuilder` or
`LangGraphAdapter` checkpoints itself: save, load, latest, history, delete, close."""

from __future__ import annotations

from typing import TYPE_CHECKING

from checkpoints.sdk.checkpnt.errors import CheckpointNotFoundError, checkpnt_errors
from checkpoints.sdk.checkpnt.operations import (
    expire_steps,
    latest_steps,
    restore_steps,
    save_built_steps,
    timeline_steps,
)
from checkpoints.sdk.checkpnt.schema import Checkpoint
from checkpoints.sdk.client_steps import arun, run

if TYPE_CHECKING:
    from checkpoints.sdk.checkpnt.client import AsyncCheckpnt, SyncCheckpnt


class AsyncBackend:
    """The async backend of an `AsyncCheckpnt` client."""

    def __init__(self, owner: AsyncCheckpnt) -> None:
        self._owner = owner

    async def save(self, checkpoint: Checkpoint) -> str:
        """Store a built checkpoint under its id; returns the id."""
        with checkpnt_errors(checkpoint.checkpoint_id):
            return await arun(self._owner.cairn, save_built_steps(checkpoint))

    async def load(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint, or None if it is unknown or expired."""
        try:
            with checkpnt_errors(checkpoint_id):
                return await arun(self._owner.cairn, restore_steps(checkpoint_id))
        except CheckpointNotFoundError:
            return None

    async def latest(self, agent_id: str, session_id: str) -> Checkpoint | None:
        with checkpnt_errors():
            return await arun(self._owner.cairn, latest_steps(agent_id, session_id))

    async def history(self, agent_id: str, session_id: str, limit: int = 50) -> list[Checkpoint]:
        with checkpnt_errors():
            return await arun(self._owner.cairn, timeline_steps(agent_id, session_id, limit, True))

    async def delete(self, checkpoint_id: str) -> bool:
        with checkpnt_errors(checkpoint_id):
            return await arun(self._owner.cairn, expire_steps(checkpoint_id))

    async def close(self) -> None:
        await self._owner.close()


class SyncBackend:
    """The blocking backend of a `SyncCheckpnt` client."""

    def __init__(self, owner: SyncCheckpnt) -> None:
        self._owner = owner

    def save(self, checkpoint: Checkpoint) -> str:
        with checkpnt_errors(checkpoint.checkpoint_id):
            return run(self._owner.cairn, save_built_steps(checkpoint))

    def load(self, checkpoint_id: str) -> Checkpoint | None:
        try:
            with checkpnt_errors(checkpoint_id):
                return run(self._owner.cairn, restore_steps(checkpoint_id))
        except CheckpointNotFoundError:
            return None

    def latest(self, agent_id: str, session_id: str) -> Checkpoint | None:
        with checkpnt_errors():
            return run(self._owner.cairn, latest_steps(agent_id, session_id))

    def history(self, agent_id: str, session_id: str, limit: int = 50) -> list[Checkpoint]:
        with checkpnt_errors():
            return run(self._owner.cairn, timeline_steps(agent_id, session_id, limit, True))

    def delete(self, checkpoint_id: str) -> bool:
        with checkpnt_errors(checkpoint_id):
            return run(self._owner.cairn, expire_steps(checkpoint_id))

    def close(self) -> None:
        self._owner.close()
