"""`AsyncClient`: the asyncio twin of `Client`, with the same methods as coroutines.

from checkpoints.sdk import AsyncClient

async with AsyncClient("http://127.0.0.1:8000", api_key) as cairn:
    saved = await cairn.checkpoint_save(thread_id="run-42", agent_id="planner", state={"step": 3})
    async for thread in cairn.paginate(cairn.threads_list, user_id="alice"):
        ...
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

import httpx

from checkpoints.sdk import flows
from checkpoints.sdk.async_api.base import AsyncBase
from checkpoints.sdk.endpoints.checkpoints import CheckpointEndpoints
from checkpoints.sdk.endpoints.medallions import MedallionEndpoints
from checkpoints.sdk.endpoints.threads import ThreadEndpoints
from checkpoints.sdk.transport import DEFAULT_LIMITS, DEFAULT_TIMEOUT, AsyncTransport, RetryPolicy


class AsyncClient(ThreadEndpoints, CheckpointEndpoints, MedallionEndpoints, AsyncBase):
    """Async client. Share one per event loop; its connection pool is reused across calls."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        limits: httpx.Limits = DEFAULT_LIMITS,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.transport = AsyncTransport(
            self.base_url, api_key, timeout=timeout, retry=retry, limits=limits, http_client=http_client
        )
        self.memory = flows.ClientMemory(self.transport.clock)

    @classmethod
    def from_env(cls, **options: Any) -> AsyncClient:
        """A client for `CAIRN_URL` (default http://127.0.0.1:8000) with the key in `CAIRN_API_KEY`."""
        return cls(
            os.environ.get("CAIRN_URL", "http://127.0.0.1:8000"), os.environ["CAIRN_API_KEY"], **options
        )

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
