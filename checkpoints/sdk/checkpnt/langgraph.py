"""checkpnt's `CheckpntSaver`: Cairn's LangGraph saver (`CairnSaver`, a complete `BaseCheckpointSaver`)
under checkpnt's name and constructors. Needs `langgraph`.

    from checkpoints.sdk.checkpnt.langgraph import CheckpntSaver   # was: from checkpnt.adapters.langgraph ...
    async with CheckpntSaver(Client.from_env()) as saver:          # was: CheckpntSaver.from_sqlite(...)
        app = graph.compile(checkpointer=saver)
"""

from __future__ import annotations

from typing import Any, NoReturn

from checkpoints.sdk.aclient import AsyncClient
from checkpoints.sdk.checkpnt.adapter import LangGraphAdapter
from checkpoints.sdk.checkpnt.client import AsyncCheckpnt, SyncCheckpnt
from checkpoints.sdk.checkpnt.errors import unsupported_backend
from checkpoints.sdk.client import Client as CairnClient
from checkpoints.sdk.langgraph import CairnSaver


class CheckpntSaver(CairnSaver):
    """`CheckpntSaver(client)` with a checkpnt `Client`/`SyncClient`, or `CheckpntSaver(base_url, api_key)`,
    or `CheckpntSaver.from_env()`. Pending writes, `filter`/`before`, parents and threads are LangGraph's."""

    def __init__(
        self,
        client: AsyncCheckpnt | SyncCheckpnt | CairnClient | str | None = None,
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        if isinstance(client, AsyncCheckpnt | SyncCheckpnt):
            base_url, api_key = client.credentials()
            super().__init__(base_url, api_key, **options)
        elif isinstance(client, str):
            super().__init__(client, api_key, **options)
        else:
            super().__init__(api_key=api_key, client=client, **options)

    @classmethod
    def from_env(cls, **options: Any) -> CheckpntSaver:
        return cls(client=CairnClient.from_env(), async_client=AsyncClient.from_env(), **options)

    @classmethod
    def from_sqlite(cls, path: str = "./checkpnt_local.db") -> NoReturn:
        raise unsupported_backend("SQLite", f"CheckpntSaver.from_sqlite({path!r})", "CheckpntSaver")

    @classmethod
    def from_redis(cls, url: str = "redis://localhost:6379") -> NoReturn:
        raise unsupported_backend("Redis", f"CheckpntSaver.from_redis({url!r})", "CheckpntSaver")


__all__ = ["CheckpntSaver", "LangGraphAdapter"]
