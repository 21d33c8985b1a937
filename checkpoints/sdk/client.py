"""`Client`: the blocking Python client of the Cairn REST API (docs/sdk.md), one method per endpoint.

    from checkpoints.sdk import Client

    with Client("http://127.0.0.1:8000", api_key) as cairn:
        saved = cairn.checkpoint_save(thread_id="run-42", agent_id="planner", state={"step": 3})
        restored = cairn.checkpoint_get("run-42", saved.checkpoint.checkpoint_id)   # re-hashed here

`AsyncClient` (checkpoints.sdk.aclient) has the same methods as coroutines: both are made from one
description of each method (checkpoints.sdk.endpoints), and constructed alike (`ClientSetup`: base_url,
api_key, timeout, retry, limits, http_client; `from_env()`).
"""

from __future__ import annotations

from checkpoints.sdk.closing import Closing
from checkpoints.sdk.endpoints.checkpoints import CheckpointEndpoints
from checkpoints.sdk.endpoints.medallions import MedallionEndpoints
from checkpoints.sdk.endpoints.saves import SaveEndpoints
from checkpoints.sdk.endpoints.threads import ThreadEndpoints
from checkpoints.sdk.sync_api.base import SyncBase


class Client(ThreadEndpoints, SaveEndpoints, CheckpointEndpoints, MedallionEndpoints, SyncBase, Closing):
    """Blocking client. Thread-safe; keep one per process (its connection pool is reused across calls)."""

    def close(self) -> None:
        self.transport.close()
