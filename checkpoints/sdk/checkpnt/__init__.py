"""checkpnt on Cairn: the five operations — save, restore, handoff, timeline, expire — with checkpnt's names,
`Checkpoint`, `CheckpointBuilder`, `Framework`, its exceptions, and its LangGraph integration.

    from checkpoints.sdk.checkpnt import Client, Framework       # was: from checkpnt import Client, Framework

    async with Client.from_env() as client:                     # was: Client.sqlite()
        checkpoint_id = await client.save(
            agent_id="invoice-processor",
            framework=Framework.LANGGRAPH,
            execution_state=graph_state,
            context={"invoice_id": "INV-4821"},
        )
        checkpoint = await client.restore(checkpoint_id)         # checksum verified end to end

`Client` is async, as in checkpnt; `SyncClient` is its blocking twin. `CheckpntSaver` and `LangGraphAdapter`
(also in `checkpoints.sdk.checkpnt.langgraph`) load LangGraph on first use. The table in
docs/integrations/checkpnt.md lists every difference from the seed.
"""

from __future__ import annotations

from typing import Any

from checkpoints.sdk.checkpnt.adapter import LangGraphAdapter
from checkpoints.sdk.checkpnt.client import AsyncCheckpnt, SyncCheckpnt
from checkpoints.sdk.checkpnt.errors import (
    AdapterError,
    BackendConnectionError,
    CheckpntError,
    CheckpointConflictError,
    CheckpointExpiredError,
    CheckpointIntegrityError,
    CheckpointNotFoundError,
    SchemaMigrationError,
)
from checkpoints.sdk.checkpnt.schema import CURRENT_SCHEMA_VERSION, Checkpoint, CheckpointBuilder, Framework

Client = AsyncCheckpnt
"""checkpnt's `Client` is async: `from checkpoints.sdk.checkpnt import Client` is the one-line switch."""
SyncClient = SyncCheckpnt


def __getattr__(name: str) -> Any:
    # CheckpntSaver subclasses LangGraph's BaseCheckpointSaver: import LangGraph only when it is asked for.
    if name == "CheckpntSaver":
        from checkpoints.sdk.checkpnt.langgraph import CheckpntSaver

        return CheckpntSaver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "AdapterError",
    "AsyncCheckpnt",
    "BackendConnectionError",
    "CheckpntError",
    "CheckpntSaver",
    "Checkpoint",
    "CheckpointBuilder",
    "CheckpointConflictError",
    "CheckpointExpiredError",
    "CheckpointIntegrityError",
    "CheckpointNotFoundError",
    "Client",
    "Framework",
    "LangGraphAdapter",
    "SchemaMigrationError",
    "SyncCheckpnt",
    "SyncClient",
]
