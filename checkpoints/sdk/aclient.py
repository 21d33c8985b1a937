"""`AsyncClient`: the asyncio twin of `Client`, with the same methods as coroutines.

from checkpoints.sdk import AsyncClient

async with AsyncClient("http://127.0.0.1:8000", api_key) as cairn:
    saved = await cairn.checkpoint_save(thread_id="run-42", agent_id="planner", state={"step": 3})
    async for thread in cairn.paginate(cairn.threads_list, user_id="alice"):
        ...
"""

from __future__ import annotations

from checkpoints.sdk.async_api.base import AsyncBase
from checkpoints.sdk.closing import AsyncClosing
from checkpoints.sdk.endpoints.checkpoints import CheckpointEndpoints
from checkpoints.sdk.endpoints.medallions import MedallionEndpoints
from checkpoints.sdk.endpoints.saves import SaveEndpoints
from checkpoints.sdk.endpoints.threads import ThreadEndpoints


class AsyncClient(
    ThreadEndpoints, SaveEndpoints, CheckpointEndpoints, MedallionEndpoints, AsyncBase, AsyncClosing
):
    """Async client. Share one per event loop; its connection pool is reused across calls."""

    async def aclose(self) -> None:
        await self.transport.aclose()
