"""`Client`: the blocking Python client of the Cairn REST API (SPEC section 5), one method per endpoint.

    from checkpoints.sdk import Client

    with Client("http://127.0.0.1:8000", api_key) as cairn:
        saved = cairn.checkpoint_save(thread_id="run-42", agent_id="planner", state={"step": 3})
        restored = cairn.checkpoint_get("run-42", saved.checkpoint.checkpoint_id)   # re-hashed here

`AsyncClient` (checkpoints.sdk.aclient) has the same methods as coroutines: both are made from one
description of each method (checkpoints.sdk.endpoints).
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

import httpx

from checkpoints.sdk import flows
from checkpoints.sdk.endpoints.checkpoints import CheckpointEndpoints
from checkpoints.sdk.endpoints.medallions import MedallionEndpoints
from checkpoints.sdk.endpoints.threads import ThreadEndpoints
from checkpoints.sdk.sync_api.base import SyncBase
from checkpoints.sdk.transport import DEFAULT_LIMITS, DEFAULT_TIMEOUT, RetryPolicy, SyncTransport


class Client(ThreadEndpoints, CheckpointEndpoints, MedallionEndpoints, SyncBase):
    """Blocking client. Thread-safe; keep one per process (its connection pool is reused across calls)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        limits: httpx.Limits = DEFAULT_LIMITS,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.transport = SyncTransport(
            self.base_url, api_key, timeout=timeout, retry=retry, limits=limits, http_client=http_client
        )
        self.memory = flows.ClientMemory(self.transport.clock)

    @classmethod
    def from_env(cls, **options: Any) -> Client:
        """A client for `CAIRN_URL` (default http://127.0.0.1:8000) with the key in `CAIRN_API_KEY`."""
        return cls(
            os.environ.get("CAIRN_URL", "http://127.0.0.1:8000"), os.environ["CAIRN_API_KEY"], **options
        )

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
